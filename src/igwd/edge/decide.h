/* decide.h - the edge room's decisions as pure functions: which device an
 * uplink is for (the gateway rule), what its credentials' refusal says,
 * its reply's method, where a checked message goes and what a batch's
 * outcome does (edge.c); what a broker's presence fact is and does
 * (presence.c). No I/O, no room state: edge.c and presence.c call them,
 * and tests/igwd/edge_decide_test.c checks them without services. Any
 * thread. */
#ifndef IGW_EDGE_DECIDE_H
#define IGW_EDGE_DECIDE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "arena.h"
#include "catalog/recordings.h"
#include "protocol.h"

/* A refusal: the error class, a reason safe to send, the JSON pointer of
 * the field it is about ("" when none), and for the operator's log only
 * (never sent) why, when the reason sent hides it. Strings are static or
 * point into the refusal's own path_buf. */
typedef struct igw_edge_refusal {
    int cls; /* igw_err */
    const char *reason, *path, *log;
    char path_buf[64];
} igw_edge_refusal;

/* ---- the uplink's device ---- */

/* Copies a name (handle, type, productID, deviceName) of 1..cap-1 bytes
 * without NUL into dst as a C string: false (dst unchanged) for anything
 * else, a missing one (ptr NULL) included. */
bool igw_edge_name_copy(char *dst, size_t cap, igw_str s);

/* The uplink's handle (one leading '$' dropped, as MQTT topics carry it)
 * and message type into h and t: false, or true with *r (parameter) when
 * either is no name or the handle still starts with '$'. */
bool igw_edge_topic_refuses(igw_str handle, igw_str type, char *h, size_t hcap, char *t, size_t tcap,
                            igw_edge_refusal *r);

/* The device an uplink is for, before any lookup, into pid and dn (cap
 * bytes each). HTTP (auth_pid and auth_dn, the authenticated device):
 * the productID and deviceName headers' pair, or the authenticated device
 * when productID is absent; a productID without a usable deviceName (or
 * the reverse) is refused (parameter). MQTT (auth_pid NULL): the topic's
 * pair, refused as an unknown device (parameter) when it names none.
 * false, or true with *r. */
bool igw_edge_target_refuses(igw_str product_id, igw_str device_name, const char *auth_pid, const char *auth_dn,
                             char *pid, char *dn, size_t cap, igw_edge_refusal *r);

/* Why igw_devauth_verify refused (its result code), for the log. */
const char *igw_edge_devauth_reason(int rc);

/* HTTP credentials checked (rc: igw_devauth_verify's against the
 * authenticated device's secret; found: the device exists; secret_len its
 * usable secret's bytes, 0 when unusable): false when accepted, else true
 * with *r: unauthenticated with one reason whatever failed (the device may
 * not learn which part), and the part in r->log. */
bool igw_edge_credentials_refuse(int rc, bool found, size_t secret_len, igw_edge_refusal *r);

/* Who a credentialed uplink acts for (the gateway rule). */
typedef enum igw_edge_actor {
    IGW_EDGE_ACTOR_SELF,      /* the authenticated device's own message */
    IGW_EDGE_ACTOR_SUBDEVICE, /* a gateway's for another device: look it up, then igw_edge_bound_refuses */
    IGW_EDGE_ACTOR_REFUSED    /* *r: only a gateway acts for another device (permission) */
} igw_edge_actor;

/* The authenticated device (auth_pid, auth_dn; is_gateway from its record)
 * against the target (pid, dn) the uplink named. */
igw_edge_actor igw_edge_decide_actor(const char *auth_pid, const char *auth_dn, const char *pid, const char *dn,
                                     bool is_gateway, igw_edge_refusal *r);

/* The looked-up target: found, and bound to gateway (gw_pid, gw_dn; ""
 * when bound to none). HTTP (auth_pid non-NULL, the gateway that acts for
 * it): refused (permission, the same reason whether unknown or bound
 * elsewhere) unless found and bound to that gateway. MQTT (auth_pid NULL:
 * the broker's ACL bound the topic to its publisher): refused only when
 * unknown (not_found). false, or true with *r. */
bool igw_edge_bound_refuses(bool found, const char *gw_pid, const char *gw_dn, const char *auth_pid,
                            const char *auth_dn, igw_edge_refusal *r);

/* ---- the message ---- */

/* The protocol lookup's status as a refusal (parameter; the path /method
 * when only the method is unknown): false when FOUND. */
bool igw_edge_row_refuses(igw_proto_status st, igw_edge_refusal *r);

/* The reply's method: the row's reply method, else (no row, or a row
 * without a reply message) the message's own. */
igw_str igw_edge_reply_method(const igw_proto_row *row, igw_str method);

/* The method has a reply message on the device's down topic. */
bool igw_edge_reply_topic(const igw_proto_row *row);

/* A row's check needs the product's thing model (properties, pack,
 * event, action); the others do without. */
bool igw_edge_needs_model(int check);

/* Where a checked message goes. */
typedef enum igw_edge_store {
    IGW_EDGE_STORE_BATCH,      /* made durable with the next batch (group commit) */
    IGW_EDGE_STORE_PROPERTIES, /* answered with the device's stored properties */
    IGW_EDGE_STORE_CONFIG,     /* answered with its latest config report */
    IGW_EDGE_STORE_MESSAGES,   /* the reply's data: the device's waiting messages (a `get` returns messages) */
    IGW_EDGE_STORE_CATALOG,    /* written to the recordings catalog, all or nothing */
    IGW_EDGE_STORE_SUBDEVICES, /* its sub-devices' binding checked, then the batch */
    IGW_EDGE_STORE_REFUSED     /* *r: sub-devices reported by a device that is no gateway */
} igw_edge_store;

/* The row's `returns` first, then its check; is_gateway: the target's
 * record. */
igw_edge_store igw_edge_decide_store(const igw_proto_row *row, bool is_gateway, igw_edge_refusal *r);

/* A sub-device query's answer: the first item (1-based) not bound to the
 * gateway, as the permission refusal at its /params/devices/<i - 1>. */
void igw_edge_subdevice_refusal(long item, igw_edge_refusal *r);

/* A catalog report the catalog refused for a camera the device does not
 * have (parameter at that entry's cameraId): false for the other statuses
 * (OK, and FAILED, which is the database's). */
bool igw_edge_catalog_refuses(const igw_recordings_report_result *res, igw_edge_refusal *r);

/* The reason sent for a database failure of class cls
 * (igw_db_error_class): the unknown outcome of a write says so. */
const char *igw_edge_db_reason(int cls);

/* ---- the batch ---- */

#define IGW_EDGE_RETRIES_MAX 3 /* a batch that lost a deadlock or serialization race */

/* What an uplink that passed its checks does next, in this order. */
typedef enum igw_edge_queue {
    IGW_EDGE_QUEUE_REFUSED, /* *r: shutting down, or the pending batch is full (unavailable) */
    IGW_EDGE_QUEUE_DRY_RUN, /* the bench's reference: answered OK, nothing written */
    IGW_EDGE_QUEUE_SETTLE,  /* a reply to a command: stored with the command's result (results.c) */
    IGW_EDGE_QUEUE_BATCH    /* joins the pending batch */
} igw_edge_queue;

typedef struct igw_edge_queue_facts {
    bool closing;
    unsigned npending, pending_max; /* uplinks in the pending batch, and its bound */
    bool dry_run;
    bool command_reply; /* its row answers a command's downlink */
    bool props;         /* it reports properties: stored as any uplink */
    bool settling;      /* it was handed to results.c already */
} igw_edge_queue_facts;

igw_edge_queue igw_edge_decide_queue(const igw_edge_queue_facts *f, igw_edge_refusal *r);

/* What a command reply does once results.c answered (status an
 * igw_results_status; value_error: its error is a value the statement
 * refused, igw_db_value_error). */
typedef enum igw_edge_settled {
    IGW_EDGE_SETTLED_OK,     /* stored with its command's result: answered */
    IGW_EDGE_SETTLED_UPLINK, /* settles nothing, or its value was refused: stored as any uplink */
    IGW_EDGE_SETTLED_FAILED  /* the database failed: by its error class */
} igw_edge_settled;

igw_edge_settled igw_edge_decide_settled(int status, bool value_error);

/* What a batch's outcome does. */
typedef enum igw_edge_batch {
    IGW_EDGE_BATCH_RETRY_ALONE, /* a bad value among several messages: each again, alone */
    IGW_EDGE_BATCH_RETRY,       /* a lost race: the batch again, as it was */
    IGW_EDGE_BATCH_STORED,      /* committed: each answered (a leg's message handed to the engine) */
    IGW_EDGE_BATCH_BAD_VALUE,   /* refused for a value, alone (or while closing): parameter */
    IGW_EDGE_BATCH_FAILED       /* anything else: by the database's error class */
} igw_edge_batch;

typedef struct igw_edge_batch_facts {
    bool committed;   /* the statement answered */
    bool value;       /* it failed on a value (SQLSTATE class 22 or 23) */
    bool race;        /* it lost a deadlock or serialization race (class 40) */
    bool several;     /* the batch had more than one message */
    unsigned retries; /* times its first message was sent again already */
    bool closing;     /* shutting down: nothing is sent again */
} igw_edge_batch_facts;

igw_edge_batch igw_edge_decide_batch(const igw_edge_batch_facts *f);

/* ---- an MQTT uplink the strict decoder refused ---- */

/* The top-level "method" and "msgToken" of a payload the strict decoder
 * refused, when both are strings that pass their own rules
 * (DeviceMessage): enough to answer the device on its reply topic. true
 * with *method and *token (into payload, or the arena for escaped ones),
 * else false. The scan stops at the first malformed byte, as the decoder
 * did; a repeated key keeps its first value. */
bool igw_edge_recover_identity(const char *payload, size_t len, igw_arena *a, igw_str *method, igw_str *token);

/* A device's last refusal log line (0: a free slot). */
typedef struct igw_edge_logslot {
    uint64_t device; /* igw_edge_device_hash | 1 */
    int64_t at_ms;   /* monotonic */
} igw_edge_logslot;

/* One log line per device per every_ms: true (and the device's slot
 * taken, at now_ms) when device (igw_edge_device_hash) has no line logged
 * within every_ms in its slot of slots[0..n); a device sharing a slot
 * with another may log sooner, never later. */
bool igw_edge_log_due(igw_edge_logslot *slots, unsigned n, uint64_t device, int64_t now_ms, int64_t every_ms);

/* ---- presence facts (presence.c) ---- */

#define IGW_PRESENCE_PAYLOAD_MAX 512 /* a fact's JSON at most */

typedef enum igw_presence_state {
    IGW_PRESENCE_ONLINE,
    IGW_PRESENCE_OFFLINE,
    IGW_PRESENCE_BOOT,
    IGW_PRESENCE__STATES
} igw_presence_state;

/* A fact's payload, parsed. */
typedef struct igw_presence_fact {
    igw_presence_state state;
    int64_t boot, seq, at_ms;
} igw_presence_fact;

/* Parses a fact's JSON (len bytes, at most IGW_PRESENCE_PAYLOAD_MAX): an
 * object with the members state, boot (>= 1), seq (>= 0) and at (>= 0),
 * each exactly once, integers within 2^53; other members are skipped (a
 * newer plugin may add some). 0, or -1. */
int igw_presence_parse(const char *payload, size_t len, igw_presence_fact *out);

/* What a parsed fact does. */
typedef struct igw_presence_plan {
    bool device;   /* a device's fact, stored; else the broker's, whose boot alone counts */
    bool online;   /* the device's online as stored */
    bool end_legs; /* it went offline: the session engine ends its legs */
} igw_presence_plan;

/* The fact f by where it came from: product_id and device_name both ""
 * for the broker's topic, both set for a device's. 0 and *plan, or -1
 * when it is no fact from there (half a name, a boot fact of a device, a
 * device state from the broker's topic). */
int igw_presence_plan_of(const char *product_id, const char *device_name, const igw_presence_fact *f,
                         igw_presence_plan *plan);

/* A fact's boot against the newest one the process saw (*newest, shared
 * by the workers): true, with *newest raised to boot, for the one caller
 * that sees it first newer; false for one not newer (or raised first by
 * another caller). */
bool igw_presence_boot_claim(_Atomic int64_t *newest, int64_t boot);

/* A worker claimed a newer boot: its sweep (*sweep_boot, 0 when none
 * runs) now sweeps for it. true when the first batch must be sent now;
 * false when a sweep in flight goes on with the newer boot. */
bool igw_presence_sweep_begin(int64_t *sweep_boot, int64_t boot);

/* A sweep batch answered (swept devices set offline; batch its bound):
 * true when another batch goes at once, because the batch was full or a
 * newer boot (sweep_boot) arrived since the batch's (sweep_sent). */
bool igw_presence_sweep_more(long long swept, unsigned batch, int64_t sweep_boot, int64_t sweep_sent);

#endif
