/* mqtt.h - igwd's privileged MQTT client (libmosquitto): device uplinks in,
 * downlinks out.
 *
 * One connection per instance, run by a network thread of its own. MQTT
 * 3.1.1 (a refused CONNACK under MQTT 5 is a MOSQ_ERR_PROTOCOL in
 * libmosquitto 2.0, and its only connect taking CONNECT properties, such as
 * a session expiry, blocks; Mosquitto accepts $share under 3.1.1) with
 * clean_session=false and a stable client id, unique per igwd node (two
 * nodes with one id take the session from each other). On every connection
 * the client subscribes with QoS 1 to the shared subscription
 * IGW_TOPIC_RELAY_SUB ($share/igw/igw/+/up/#, topic.h): the auth plugin
 * relays each device uplink $<handle>/up/... to igw/<handle>/up/...
 * (Mosquitto 2.0 matches no '$' topic against a shared subscription), and
 * the broker hands each relayed uplink to one node of the group, round
 * robin. The broker keeps the subscription and queues a node's share while
 * that node is away (in memory with the local broker's `persistence
 * false`, at most its max_queued_messages): the group includes members
 * that are offline, so a stopped node's share waits for it; once a node
 * lapsed, a live node drains its session (igw_mqtt_config.drain; docs/
 * decisions.md "a lapsed node's broker session is drained"). Consecutive
 * uplinks of one device may reach different nodes.
 *
 * Presence (igw_mqtt_config.presence): the client also subscribes to
 * IGW_TOPIC_PRESENCE_SUB ($share/igw/igw/presence/#), the auth plugin's
 * facts about device connections, and, each time every subscription is
 * granted, publishes IGW_TOPIC_PRESENCE_SYNC: the plugin answers with its
 * broker fact (its boot) and an `online` fact per device connected now, so
 * a node that was away (a broker restart loses its session and what was
 * published meanwhile) learns the broker's state. A fact reaches the
 * callback as an igw_mqtt_uplink of kind IGW_MQTT_PRESENCE; its payload is
 * not read here.
 *
 * An uplink reaches the callback only when its topic is exactly
 * igw/<handle>/up/<type>/<productID>/<deviceName> (igw_topic_parse with
 * IGW_TOPIC_RELAY), its payload is at most IGW_MQTT_PAYLOAD_MAX bytes and
 * it is not a retained message replayed by a (re)subscription (the live
 * copy was delivered). Anything else is counted as dropped and logged on
 * stderr (the first and every 1000th of each kind). QoS 1 is at least
 * once: libmosquitto acknowledges a message before the callback runs (what
 * the callback does not make durable is lost if igwd dies then), and the
 * broker may deliver again what was in flight when a connection broke;
 * consumers deduplicate (msgToken).
 *
 * The network thread never gives up: after any failure (refused, broker
 * down, name resolution, protocol error) it reconnects with a backoff of
 * 0.25 s doubling to 8 s (reset by a connection that lasted 10 s). It polls
 * with poll(2) instead of mosquitto_loop_start/mosquitto_loop: their
 * select(2) fails on descriptors >= 1024, their loop quits for good on some
 * errors (MOSQ_ERR_EAI, ...) and its backoff sleep ignores a stop. No TLS
 * (the broker is local). mosquitto_lib_init runs once per process and
 * mosquitto_lib_cleanup never: its CONF_modules_unload would reset OpenSSL
 * under h2o and libpq. Nothing here needs a leak suppression. */
#ifndef IGW_MQTT_H
#define IGW_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IGW_MQTT_HANDLE_MAX 16       /* bytes of a handle, without the '$' */
#define IGW_MQTT_TYPE_MAX 64         /* bytes of a type (as the auth plugin) */
#define IGW_MQTT_NAME_MAX 64         /* bytes of a productID or deviceName */
#define IGW_MQTT_PAYLOAD_MAX 65536   /* largest payload accepted or published */

typedef struct igw_mqtt igw_mqtt;

/* Connection settings; the strings are copied by igw_mqtt_start. */
typedef struct igw_mqtt_config {
    const char *host;      /* broker host name or address (required) */
    uint16_t port;         /* broker port (required) */
    const char *username;  /* the privileged user, e.g. "igwd" (required) */
    const char *password;  /* its password (required) */
    const char *client_id; /* stable per igwd node, e.g. "igwd-<node>" (required, 1..128 bytes) */
    unsigned keepalive_s;  /* 0: 30; at least 5 */
    bool presence;         /* also the presence facts, and a sync at each connection (above) */
    /* A drain of another node's broker session (client_id: that node's, which
     * is gone): on connecting the session leaves its shared subscriptions
     * (the broker hands their messages to the live members only from then
     * on), the queue the broker kept for it is received, and once nothing
     * more comes the connection ends (igw_mqtt_done). It never reconnects
     * once connected (the node came back and took its session over) and
     * gives up when not connected within 10 s. The node, back, subscribes
     * again on its connection. */
    bool drain;
} igw_mqtt_config;

typedef enum igw_mqtt_kind {
    IGW_MQTT_UPLINK,   /* a device uplink */
    IGW_MQTT_PRESENCE, /* a presence fact: handle and type "", the names "" for the broker's */
} igw_mqtt_kind;

/* One uplink from $<handle>/up/<type>/<productID>/<deviceName> (received on
 * its relay topic); the handle without its '$' ("thing", "ota", "config", "log", "gateway", "ext"). Or,
 * kind IGW_MQTT_PRESENCE, one presence fact: igw/presence/device/<productID>/<deviceName>, or
 * igw/presence/broker with both names "". The
 * payload has len bytes followed by a NUL that len does not count. Owned by
 * the receiver; free it with igw_mqtt_uplink_free. */
typedef struct igw_mqtt_uplink {
    igw_mqtt_kind kind;
    char handle[IGW_MQTT_HANDLE_MAX + 1];
    char type[IGW_MQTT_TYPE_MAX + 1];
    char product_id[IGW_MQTT_NAME_MAX + 1];
    char device_name[IGW_MQTT_NAME_MAX + 1];
    size_t len;
    char payload[];
} igw_mqtt_uplink;

/* Receives each accepted uplink on the network thread; must not block (hand
 * it to a queue; igw_mqtt_publish is fine); takes ownership of u. */
typedef void (*igw_mqtt_uplink_fn)(void *arg, igw_mqtt_uplink *u);

/* Counters since igw_mqtt_start (each read atomically, not as a set). */
typedef struct igw_mqtt_stats {
    uint64_t in;               /* uplinks handed to the callback */
    uint64_t presence;         /* presence facts handed to the callback */
    uint64_t syncs;            /* presence syncs asked for (one per connection with presence) */
    uint64_t out;              /* messages accepted by igw_mqtt_publish */
    uint64_t out_failed;       /* igw_mqtt_publish calls that returned -1 */
    uint64_t dropped;          /* messages received and discarded: the three below, or out of memory */
    uint64_t dropped_topic;    /* topic neither a relayed uplink's nor (with presence) a presence fact's */
    uint64_t dropped_size;     /* payload over IGW_MQTT_PAYLOAD_MAX */
    uint64_t dropped_retained; /* retained message replayed by a subscription */
    uint64_t reconnects;       /* successful connections after the first */
} igw_mqtt_stats;

/* Validates cfg, creates the client and starts its network thread, which
 * connects (and keeps reconnecting) in the background: a broker that is down
 * or refuses is not an error here (see igw_mqtt_wait_connected). fn (with
 * arg) receives the uplinks. NULL with a message in err on invalid settings
 * or when out of resources. */
igw_mqtt *igw_mqtt_start(const igw_mqtt_config *cfg, igw_mqtt_uplink_fn fn, void *arg, char *err,
                         size_t errlen);

/* Publishes a downlink (never retained) with QoS 0, 1 or 2; callable from any
 * thread. 0 when queued for sending, -1 when not connected, on invalid
 * arguments (topic with wildcards, not UTF-8, payload over
 * IGW_MQTT_PAYLOAD_MAX) or when libmosquitto fails. */
int igw_mqtt_publish(igw_mqtt *m, const char *topic, const void *payload, size_t len, int qos);

struct igw_proto_down;

/* Publishes payload as the protocol downlink d (its topic
 * $<handle>/down/<type>/{product_id}/{device_name}) with QoS 1; as
 * igw_mqtt_publish, and -1 too when m is NULL or the names make no topic. */
int igw_mqtt_publish_down(igw_mqtt *m, const struct igw_proto_down *d, const char *product_id,
                          const char *device_name, const void *payload, size_t len);

/* True while connected with every uplink subscription granted at QoS 1. */
bool igw_mqtt_connected(const igw_mqtt *m);

/* Waits up to timeout_ms for igw_mqtt_connected to hold. 0 if it does, -1 on
 * timeout. */
int igw_mqtt_wait_connected(igw_mqtt *m, unsigned timeout_ms);

/* Copies the counters into *out. */
void igw_mqtt_stats_get(const igw_mqtt *m, igw_mqtt_stats *out);

/* A drain (igw_mqtt_config.drain) is over: igw_mqtt_stop frees it. Any
 * thread. */
bool igw_mqtt_done(const igw_mqtt *m);

/* Frees an uplink (NULL is fine). */
void igw_mqtt_uplink_free(igw_mqtt_uplink *u);

/* Disconnects cleanly (the broker keeps the session), joins the network
 * thread and frees everything; no callback runs after it returns. No
 * igw_mqtt_publish may be running or start once it is called. NULL is
 * fine. */
void igw_mqtt_stop(igw_mqtt *m);

/* Stops reading from the broker (publishing goes on): uplinks not read yet
 * stay unacknowledged and are delivered again on the next session, so a
 * drain before igw_mqtt_stop loses none. Any thread; NULL is fine. */
void igw_mqtt_pause(igw_mqtt *m);

#endif
