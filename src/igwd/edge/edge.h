/* edge.h - device uplinks (area A): the one processing path of the HTTP send
 * route and of MQTT uplinks.
 *
 * An uplink is authenticated (HTTP: the Basic credentials against the
 * device's secret; MQTT: the broker's plugin already did, and its ACL bound
 * the topic to the publisher), its target resolved (a gateway may act for a
 * bound sub-device only), its body decoded by the schema's strict decoder,
 * its (handle, type, method) looked up in the schema's device protocol, its
 * parameters checked against the product's thing model, and then either
 * answered from the database (getStatus, config get) or made durable with
 * group commit (one transaction per batch of uplinks; the reply waits for
 * the commit). A message on a media leg is then handed to the session
 * engine, whose answer is the reply. One igw_edge per worker thread; everything runs on it. */
#ifndef IGW_EDGE_H
#define IGW_EDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/db.h"
#include "json.h"
#include "command/pending.h"
#include "session/engine.h"

typedef struct igw_edge igw_edge;

typedef struct igw_edge_settings {
    unsigned cache_ttl_ms; /* how long a device's secret, binding and model are reused */
    unsigned batch_max;    /* uplinks per group-commit transaction */
    igw_pending *pending;  /* device commands this process published, for their replies (not owned; may be NULL) */
    /* Where messages on legs go once stored (protocol rows `check session`):
     * the node's engine, read at each use (it starts after the workers;
     * NULL: such a message is answered unavailable), and how its answer
     * comes back to this worker's thread. */
    igw_engine *const *engine;
    igw_engine_back back;
} igw_edge_settings;

/* One uplink. Strings are copied by igw_edge_submit. */
typedef struct igw_uplink {
    igw_str handle, type;           /* handle may carry its leading '$' */
    igw_str product_id, device_name; /* the target; ptr NULL: the authenticated device */
    igw_str username, password;     /* HTTP Basic; ptr NULL for MQTT (broker-authenticated) */
    igw_str payload;                /* the JSON message */
    bool dry_run;                   /* bench only: everything but the database write */
    const char *log_id;             /* the request id for the log (HTTP), or NULL */
} igw_uplink;

/* The outcome of one uplink. */
typedef struct igw_edge_result {
    int cls;                /* igw_err; IGW_ERR_OK on success */
    const char *reason;     /* errors: specific and safe to send */
    const char *path;       /* errors: JSON Pointer into the message, or "" */
    const char *reply;      /* DeviceReply JSON (code, method, msgToken[, msg][, data]) or NULL when
                               the message could not be decoded */
    size_t reply_len;
    bool reply_topic;       /* the method has a reply message on the down topic */
    const char *handle;     /* without '$'; with type, product and device: the down topic */
    const char *type, *product_id, *device_name;
} igw_edge_result;

/* Called once per submitted uplink, possibly before igw_edge_submit
 * returns; `r` and its strings are valid during the call only. */
typedef void (*igw_edge_done)(void *arg, const igw_edge_result *r);

#define IGW_EDGE_MAX_DB 8

/* Creates the worker's edge on `loop` with its `ndb` (1..IGW_EDGE_MAX_DB)
 * database connections (not owned). One batch is committed per connection
 * at a time: a single connection serializes commit latency (its backend
 * waits for each WAL flush), several let PostgreSQL overlap the flushes of
 * concurrent batches. NULL when out of memory or ndb is out of range. */
igw_edge *igw_edge_create(struct st_h2o_evloop_t *loop, igw_db *const *db, unsigned ndb,
                          const igw_edge_settings *s);

/* Processes one uplink; `done` is called exactly once. */
void igw_edge_submit(igw_edge *e, const igw_uplink *u, igw_edge_done done, void *arg);

/* Only the credentials and the gateway rule of an HTTP uplink (username,
 * password, optional product_id/device_name; the rest is ignored): done
 * gets IGW_ERR_OK with the target in product_id/device_name, or the
 * unauthenticated / permission / parameter error a send would get. */
void igw_edge_authorize(igw_edge *e, const igw_uplink *u, igw_edge_done done, void *arg);

/* FNV-1a of a device's (productID, deviceName): the device cache's key,
 * and how MQTT uplinks pick their worker (one device, one worker, so its
 * messages keep their order). */
uint64_t igw_edge_device_hash(const char *product_id, const char *device_name);

/* MQTT uplinks the strict decoder refused since creation (any thread). */
uint64_t igw_edge_refused_mqtt(const igw_edge *e);

/* True when no uplink is waiting for its answer (a drain can end). */
bool igw_edge_idle(const igw_edge *e);

/* Shutdown, in this order: igw_edge_close (nothing new is sent to the
 * database; uplinks that would be get "shutting down"), then destroy the
 * database (its pending callbacks fail their uplinks), then
 * igw_edge_destroy, which fails the uplinks still batched and frees. */
void igw_edge_close(igw_edge *e);
void igw_edge_destroy(igw_edge *e);

#endif
