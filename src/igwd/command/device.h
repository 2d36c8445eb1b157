/* device.h - device commands (the `device` trait of schema/commands.igw's
 * methods): the methods' handlers (checks against the product's thing
 * model), the model a ledger read names, the downlink message and its
 * topic, and its publication after the acceptance commits (remembered in
 * the pending map first, so the device's reply finds its command without a
 * lookup). Everything but igw_device_publish's MQTT client runs on the
 * calling worker; none of it touches the database. */
#ifndef IGW_DEVICE_H
#define IGW_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "command/method.h"
#include "command/modelcache.h"
#include "command/pending.h"
#include "core/mqtt.h"
#include "thingmodel.h"

/* The methods' handlers (generated/igwd/methods.h declares them):
 * device.action checks actionID and its input against the model and fills
 * the ActionDownlink; device.propertyControl checks the properties
 * (writable ones only) and fills the ControlDownlink. */
int igw_device_action(igw_command_call *call);
int igw_device_property_control(igw_command_call *call);

/* The downlink message of a call its handler accepted, written by its
 * type's generated encoder into *out (malloc'd, NUL-terminated, the caller
 * frees) and *len.
 * 0, or -1 when out of memory. */
int igw_device_downlink(const igw_command_call *call, char **out, size_t *len);

/* The model a ledger read names for product_id at `version`: the cached
 * one when the read confirmed that version (text NULL), else `text`
 * parsed and cached (not cacheable, too long a key or version or out of
 * memory: parsed into arena). NULL with *reread when the cache lost the
 * confirmed version since the read was sent (ask for the text); NULL
 * otherwise when the model does not load. */
const igw_thingmodel *igw_device_model(igw_modelcache *mc, const char *product_id, const char *version,
                                       const char *text, size_t len, igw_arena *arena, bool *reread);

/* An accepted device command, as igw_device_publish needs it. */
typedef struct igw_device_accepted {
    const char *product_id, *device_name, *device_token;
    const char *endpoint_id, *msg_token, *method, *enterprise_id; /* the command (pending.h) */
    int64_t deadline_ms;
    const igw_proto_down *down; /* the method's downlink: its topic's handle and type */
    const char *payload;        /* igw_device_downlink's */
    size_t len;
} igw_device_accepted;

/* Remembers a in `pending` (may be NULL; best effort: a command not
 * remembered is looked up when its reply comes), then publishes its
 * downlink on $<handle>/down/<type>/<productID>/<deviceName> with QoS 1 (m
 * NULL: no broker). 0, or -1 when it was not published: the deadline turns
 * the command into a failure result. */
int igw_device_publish(igw_pending *pending, igw_mqtt *m, const igw_device_accepted *a);

#endif
