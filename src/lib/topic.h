/* topic.h - the device MQTT topic grammar, parsed and built in one place.
 *
 *   $<handle>/<up|down>/<type>/<productID>/<deviceName>
 *
 * handle one of the device protocol's handles (IGW_PROTO_DEVICE_HANDLES,
 * generated from schema/device.igw: thing, ota, config, log, gateway, media, ext),
 * type [A-Za-z0-9_-]{1,IGW_TOPIC_TYPE_MAX}, productID and deviceName valid
 * device names (igw_devauth_name_ok: no '/', '+', '#'), exactly five
 * levels. Devices publish "up" and receive "down"; the auth plugin enforces
 * it, igwd reads the uplinks and publishes the replies and commands.
 *
 * The relay form igw/<handle>/<up|down>/<type>/<productID>/<deviceName>
 * (IGW_TOPIC_RELAY) carries the same five parts without the '$': the auth
 * plugin republishes each device uplink there, because Mosquitto 2.0
 * matches no '$' topic against a shared subscription ($share/...), and
 * igwd's nodes share IGW_TOPIC_RELAY_SUB so that each uplink reaches one
 * node (docs/decisions.md). Devices can neither publish nor read it.
 *
 * Presence: the auth plugin publishes what the broker knows of device
 * connections (src/mqttauth/README.md, docs/device-protocol.md):
 *
 *   igw/presence/device/<productID>/<deviceName>   online / offline of one device
 *   igw/presence/broker                            the broker's boot announcement
 *
 * and igwd publishes igw/presence-sync to ask the plugin for the broker
 * fact and an `online` fact per device connected now. The fixed third
 * level ("device", "broker") keeps every presence topic out of
 * IGW_TOPIC_RELAY_SUB (igw/+/up/#), whatever the productID (a product named
 * "up" included); devices can neither publish nor read igw/... topics, and
 * "presence" is no handle, so $presence/... is refused too: a device cannot
 * forge a presence fact.
 *
 * Pure functions, any thread, no allocation. */
#ifndef IGW_TOPIC_H
#define IGW_TOPIC_H

#include <stdbool.h>
#include <stddef.h>

#include "devauth.h"

#define IGW_TOPIC_HANDLE_MAX 16                  /* bytes of a handle, without the '$' */
#define IGW_TOPIC_TYPE_MAX 64                    /* bytes of a type */
#define IGW_TOPIC_NAME_MAX IGW_DEVAUTH_NAME_MAX  /* bytes of a productID or deviceName */
/* The longest topic of either form (the relay form: "igw/" for "$"), without NUL. */
#define IGW_TOPIC_MAX (4 + IGW_TOPIC_HANDLE_MAX + 1 + 4 + 1 + IGW_TOPIC_TYPE_MAX + 1 + 2 * IGW_TOPIC_NAME_MAX + 1)

#define IGW_TOPIC_SHARE_GROUP "igw"
/* What igwd subscribes to: every relayed uplink, one node of the group each. */
#define IGW_TOPIC_RELAY_SUB "$share/" IGW_TOPIC_SHARE_GROUP "/igw/+/up/#"

/* What igwd subscribes to for presence: every fact, one node of the group each. */
#define IGW_TOPIC_PRESENCE_SUB "$share/" IGW_TOPIC_SHARE_GROUP "/igw/presence/#"
#define IGW_TOPIC_PRESENCE_BROKER "igw/presence/broker"
#define IGW_TOPIC_PRESENCE_SYNC "igw/presence-sync"
/* The longest presence topic, without NUL. */
#define IGW_TOPIC_PRESENCE_MAX (sizeof "igw/presence/device/" - 1 + 2 * IGW_TOPIC_NAME_MAX + 1)

/* Flags of igw_topic_parse and igw_topic_build. */
#define IGW_TOPIC_RELAY 1u     /* the relay form igw/<handle>/... instead of $<handle>/... */
#define IGW_TOPIC_PLUS_TYPE 2u /* parse: the type may be exactly "+" (a subscription filter) */

typedef enum { IGW_TOPIC_UP, IGW_TOPIC_DOWN } igw_topic_dir;

typedef struct igw_topic {
    igw_topic_dir dir;
    char handle[IGW_TOPIC_HANDLE_MAX + 1]; /* without the '$' */
    char type[IGW_TOPIC_TYPE_MAX + 1];     /* "+" only with IGW_TOPIC_PLUS_TYPE */
    char product_id[IGW_TOPIC_NAME_MAX + 1];
    char device_name[IGW_TOPIC_NAME_MAX + 1];
} igw_topic;

/* Splits topic (NUL-terminated; NULL is refused) into *out. 0, or -1 when
 * it is not exactly the grammar above (in the form flags select); *out is
 * then unspecified. */
int igw_topic_parse(const char *topic, unsigned flags, igw_topic *out);

/* Writes the topic of the parts (handle without '$') into buf (cap bytes,
 * NUL-terminated). Its length, or -1 when a part breaks the grammar (so no
 * wildcard or extra level can be built) or it does not fit; buf is then
 * "" when cap > 0. Only IGW_TOPIC_RELAY is meaningful in flags. */
int igw_topic_build(char *buf, size_t cap, unsigned flags, igw_topic_dir dir, const char *handle, const char *type,
                    const char *product_id, const char *device_name);

/* A presence topic: a device's (igw/presence/device/<p>/<d>) or the broker's. */
typedef struct igw_topic_presence {
    bool broker; /* igw/presence/broker; the names are then "" */
    char product_id[IGW_TOPIC_NAME_MAX + 1];
    char device_name[IGW_TOPIC_NAME_MAX + 1];
} igw_topic_presence;

/* Splits a presence topic (NUL-terminated; NULL is refused) into *out. 0, or
 * -1 when it is neither form exactly (no wildcard, extra level or bad name);
 * *out is then unspecified. */
int igw_topic_presence_parse(const char *topic, igw_topic_presence *out);

/* Writes igw/presence/device/<productID>/<deviceName> into buf (cap bytes,
 * NUL-terminated). Its length, or -1 when a name breaks the grammar or it
 * does not fit; buf is then "" when cap > 0. */
int igw_topic_presence_build(char *buf, size_t cap, const char *product_id, const char *device_name);

/* The rules of one level, over s[0..n). */
bool igw_topic_handle_ok(const char *s, size_t n);
bool igw_topic_type_ok(const char *s, size_t n);

#endif
