/* outbox.h - the event outbox in PostgreSQL, over igw_db.
 *
 * An event (an interaction.result or interaction.state envelope) is stored
 * once in `events` (its canonical JSON text in body_text, returned verbatim,
 * plus a jsonb copy for queries); each delivery of it to an application
 * endpoint is a `deliveries` row: deliveryId (16 random bytes, base64url),
 * endpoint, sessionId ('' without one), watermark, state (the names of the
 * generated machine igw_sm_delivery), expiresAt, ackedAt, and `replaces`
 * for a redelivery. Every operation is ONE statement (CTEs), so one
 * transaction and one round trip; "now" is the database's clock (now(), in
 * Unix ms) except for the sweeper, which is told.
 *
 * Watermark: a value of the events.event_id identity sequence - the event's
 * own id for its first delivery, a fresh nextval for a redelivery - so
 * watermarks are unique, grow with creation time and a redelivery sorts after
 * everything created before it (the retry advances the watermark, never the
 * business eventSeq). The event_id is the delivery sequence a redelivery
 * keeps, with the body, eventSeq and expiresAt.
 *
 * Deliverable: state pending and expires_at_ms > now. A delivery expires
 * with its endpoint (or earlier, see igw_outbox_event.expires_at_ms).
 *
 * Replay linkage: a command (commands: enterprise, endpoint, msgToken) is
 * answered by the interaction.result event whose msgToken is the command's,
 * delivered to the command's endpoint (body->>'method' tells a result from
 * a state notice carrying the same token; the earliest such event wins).
 * Its deliveries form a chain through `replaces`; the head is the one not
 * `redelivered`.
 *
 * Every committed new delivery (emit, or a replay that creates one) runs
 * pg_notify(IGW_OUTBOX_CHANNEL, payload) in its transaction. The payload is
 * the endpointId; a device command's result (igw_outbox_emit_result) whose
 * body fits carries the delivery itself, so a listener can push it without
 * reading it back: "<endpointId>\n<watermark>\n<deliveryId>\n<event body>".
 *
 * All functions run on the loop thread. 0: accepted, cb is called exactly
 * once, on the loop thread, never from inside the call; -1: refused (invalid
 * arguments, igw_db queue full, out of memory), cb is never called. Pointers
 * in the result are valid during the callback only. */
#ifndef IGW_OUTBOX_H
#define IGW_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/db.h"
#include "machines.h"

#define IGW_OUTBOX_CHANNEL "igw_delivery" /* NOTIFY channel; the payload starts with the endpointId */
/* /events limit and /events/ack ids, 1..this: the schema's bounds, one value. */
#define IGW_OUTBOX_BATCH_MAX IGW_EventsRequest_limit_MAX
_Static_assert(IGW_OUTBOX_BATCH_MAX == IGW_EventsData_list_MAX_ITEMS &&
                   IGW_OUTBOX_BATCH_MAX == IGW_AckRequest_deliveryIds_MAX_ITEMS,
               "one batch bound for /events and /events/ack");
/* Bytes of a deliveryId, endpointId or sessionId: the schema's, one value. */
#define IGW_OUTBOX_ID_MAX IGW_DeliveryId_MAX
_Static_assert(IGW_OUTBOX_ID_MAX == IGW_EndpointId_MAX && IGW_OUTBOX_ID_MAX == IGW_SessionId_MAX,
               "one id bound for the outbox");
#define IGW_OUTBOX_ID_LEN 22              /* a generated deliveryId: base64url of 16 random bytes */

/* Retention: how long an expired endpoint and expired deliveries (and what
 * only they hold) stay before the sweeper deletes them; until then an
 * expired delivery answers "expired" rather than "unknown". */
#define IGW_OUTBOX_RETENTION_MS (60 * 60 * 1000)
#define IGW_OUTBOX_SWEEP_BATCH 5000 /* rows per kind per sweep call */

typedef enum igw_outbox_status {
    IGW_OUTBOX_OK,
    IGW_OUTBOX_UNKNOWN_ENDPOINT, /* no such endpoint, or not (enterprise, user)'s: the same answer */
    IGW_OUTBOX_ENDPOINT_EXPIRED, /* the caller's own endpoint (emit: the endpoint) has expired */
    IGW_OUTBOX_REFUSED,          /* ack: one id refused the whole batch; nothing was changed */
    IGW_OUTBOX_BAD_EVENT,        /* emit: body not a JSON object, or its msgToken/sessionId/eventSeq differ */
    IGW_OUTBOX_DUPLICATE,        /* emit: a delivery with the given delivery_id exists (a retry that had committed) */
    IGW_OUTBOX_NO_COMMAND,       /* replay: no command with exactly this identity */
    IGW_OUTBOX_WINDOW_PASSED,    /* replay: its window_ms passed since the acceptance; nothing redelivered */
    IGW_OUTBOX_ERROR             /* database failure; err says why (logs only) */
} igw_outbox_status;

/* Why an ack batch was refused (the first offending id in request order). */
typedef enum igw_outbox_refusal {
    IGW_OUTBOX_REFUSAL_NONE,
    IGW_OUTBOX_REFUSAL_UNKNOWN,    /* no such delivery (never was, or swept) */
    IGW_OUTBOX_REFUSAL_DEVICE,     /* a device delivery: its endpoint_id names no application endpoint */
    IGW_OUTBOX_REFUSAL_ENTERPRISE, /* another enterprise's */
    IGW_OUTBOX_REFUSAL_USER,       /* another user's, same enterprise */
    IGW_OUTBOX_REFUSAL_ENDPOINT,   /* another endpoint of the same user */
    IGW_OUTBOX_REFUSAL_EXPIRED     /* expired (by time, or marked by the sweeper) */
} igw_outbox_refusal;

typedef enum igw_outbox_replay_kind {
    IGW_OUTBOX_REPLAY_SAME,       /* head pending: the same deliveryId, nothing changes */
    IGW_OUTBOX_REPLAY_NEW,        /* head acknowledged: now redelivered, a new pending delivery */
    IGW_OUTBOX_REPLAY_EXPIRED,    /* head expired: no new delivery */
    IGW_OUTBOX_REPLAY_NONE,       /* no result delivery (not emitted yet, or swept): no new delivery */
    IGW_OUTBOX_REPLAY_CONCURRENT  /* a concurrent replay redelivered the head first: nothing here */
} igw_outbox_replay_kind;

typedef struct igw_outbox_event {
    const char *endpoint_id;
    const char *msg_token;  /* must equal the body's msgToken */
    const char *session_id; /* NULL or "" when none; must equal the body's sessionId */
    int64_t event_seq;      /* 0 when none; must equal the body's eventSeq */
    const char *body;       /* the canonical JSON object text, stored and delivered verbatim */
    size_t body_len;
    int64_t expires_at_ms;   /* 0: the endpoint's expiresAt; else the earlier of this and it */
    const char *delivery_id; /* NULL: a fresh random one; else this one (retrying an emit whose outcome is unknown) */
} igw_outbox_event;

typedef struct igw_outbox_item {
    const char *delivery_id;
    const char *event; /* the stored body, byte for byte as emitted */
    size_t event_len;
} igw_outbox_item;

/* The identity of a replayed command: all must equal the stored command. */
typedef struct igw_outbox_command {
    int64_t enterprise_id, user_id;
    const char *endpoint_id;
    const char *session_id; /* NULL or "" when the command has none */
    const char *method;
    const char *msg_token;
    const unsigned char *fingerprint; /* SHA-256 of the canonical command */
    size_t fingerprint_len;
    int64_t window_ms; /* replay: refused (WINDOW_PASSED) this long after the acceptance; 0: never */
} igw_outbox_command;

typedef struct igw_outbox_result {
    igw_outbox_status status;
    const char *err; /* IGW_OUTBOX_ERROR: for logs, never for clients */
    bool committed;  /* the statement ran and committed (an ERROR can still say it found the rows inconsistent) */

    /* emit (OK, DUPLICATE) and replay (SAME, NEW): the delivery carrying the
     * event now; event_id, watermark and expires_at_ms are set for emit OK
     * and replay SAME/NEW */
    const char *delivery_id;
    int64_t event_id, watermark, expires_at_ms;

    /* pull (OK): in order, at most the limit; nitems 0 is success */
    const igw_outbox_item *items;
    size_t nitems;

    /* ack (OK): deliveries of this endpoint that carry an acknowledgement
     * (acked_at set: acknowledged, later redelivered or expired), each
     * deliveryId once, this batch included; a redelivery acknowledged again
     * counts again. Only swept rows leave the count. */
    int64_t acknowledged;
    /* ack (REFUSED) */
    igw_outbox_refusal refusal;
    size_t refused_index; /* into the ids given */
    const char *refused_id;

    /* replay (OK) */
    igw_outbox_replay_kind replay;
    igw_delivery_state head_state; /* the head before the replay (IGW_DELIVERY_NONE: none) */
    const char *replaced;          /* NEW: the old head's deliveryId */

    /* sweep (OK) */
    int64_t marked_expired, deliveries_deleted, events_deleted, endpoints_deleted, commands_deleted;
    bool more; /* a batch limit was reached: sweep again */
} igw_outbox_result;

typedef void (*igw_outbox_cb)(void *arg, const igw_outbox_result *r);

/* Stores the event once and its pending delivery to ev->endpoint_id (which
 * must exist and be unexpired: UNKNOWN_ENDPOINT / ENDPOINT_EXPIRED), with
 * expiresAt as described at expires_at_ms; NOTIFY. A body that is not JSON
 * at all fails (ERROR, "22P02 ..."). A caller that must survive a lost
 * connection passes its own delivery_id (igw_outbox_new_id) and, after an
 * ERROR for which igw_db_outcome_unknown() holds, emits again with it:
 * DUPLICATE then means the first attempt committed. -1 also when the body is empty or
 * an id is longer than IGW_OUTBOX_ID_MAX. */
int igw_outbox_emit(igw_db *db, const igw_outbox_event *ev, igw_outbox_cb cb, void *arg);

/* The interaction.result of a device command (results.c). */
typedef struct igw_outbox_result_event {
    const char *endpoint_id, *msg_token; /* the command's */
    const char *body;        /* the canonical JSON object text, NUL-terminated; no sessionId, no eventSeq */
    const char *delivery_id; /* derived from the command: a second emit is a DUPLICATE */
    const char *product_id, *device_name, *device_token; /* its device_commands row */
    const char *outcome;     /* what the row's outcome becomes when the result is stored */
    /* The device's reply the result comes from, stored as its device_messages
     * row (product_id, device_name above) in the same transaction whatever
     * becomes of the result; reply_body NULL: none (a deadline's result). */
    const char *reply_handle, *reply_type, *reply_method, *reply_token, *reply_body;
} igw_outbox_result_event;

/* igw_outbox_emit for a command's result (no session, no eventSeq, the
 * endpoint's expiresAt), and in the SAME transaction the command's
 * device_commands row settled if still unsettled: to ev->outcome when the
 * delivery is stored now or was before (OK, DUPLICATE), to "expired" when
 * the endpoint is unknown or expired; untouched otherwise (BAD_EVENT,
 * ERROR). Results emitted together (one loop turn, or while the previous
 * batch commits) share one statement and one commit (igw_db_exec_row); a
 * repeated delivery_id in one batch is a DUPLICATE of its first. Whenever
 * the statement commits (r->committed), the device's reply (ev->reply_*) is
 * stored too. */
int igw_outbox_emit_result(igw_db *db, const igw_outbox_result_event *ev, igw_outbox_cb cb, void *arg);

/* Whether igw_outbox_emit_result's answer `r` says the command's row is
 * settled, as above: a committed OK, DUPLICATE, UNKNOWN_ENDPOINT or
 * ENDPOINT_EXPIRED. */
static inline bool igw_outbox_result_settled(const igw_outbox_result *r)
{
    return r->committed && (r->status == IGW_OUTBOX_OK || r->status == IGW_OUTBOX_DUPLICATE ||
                            r->status == IGW_OUTBOX_UNKNOWN_ENDPOINT || r->status == IGW_OUTBOX_ENDPOINT_EXPIRED);
}

/* Up to limit (1..32) deliverable deliveries of the endpoint, ordered by
 * sessionId (bytes), watermark, deliveryId (bytes). The endpoint must be
 * (enterprise, user)'s and unexpired. Pulling changes nothing. */
int igw_outbox_pull(igw_db *db, int64_t enterprise_id, int64_t user_id, const char *endpoint_id, int limit,
                    igw_outbox_cb cb, void *arg);

/* Acknowledges n (1..32, distinct, each 1..64 bytes; else -1) deliveries of
 * the endpoint, all or nothing: an id that is unknown, a device delivery,
 * another enterprise's, user's or endpoint's, or expired refuses the batch
 * (REFUSED with the first such id) and nothing changes. Pending ones become
 * acknowledged; acknowledged and redelivered ones stay as they are (a late
 * ack of a replaced id never touches its redelivery). */
int igw_outbox_ack(igw_db *db, int64_t enterprise_id, int64_t user_id, const char *endpoint_id,
                   const char *const *ids, size_t n, igw_outbox_cb cb, void *arg);

/* Replay rule 2 for a command re-sent with the same identity: the endpoint
 * must be (enterprise, user)'s and unexpired, the command must match in
 * every field (NO_COMMAND), then by the head of its result's delivery chain:
 * pending -> SAME; acknowledged -> NEW (the head becomes redelivered, keeps
 * acked_at; the new delivery keeps event (body, eventSeq) and expiresAt,
 * gets a new deliveryId and watermark; NOTIFY); expired -> EXPIRED; none ->
 * NONE. */
int igw_outbox_replay(igw_db *db, const igw_outbox_command *cmd, igw_outbox_cb cb, void *arg);

/* The sweeper, to run periodically (e.g. every minute, again at once while
 * `more`). With cut = now_ms - retention_ms: marks pending and acknowledged
 * deliveries with cut < expires_at_ms <= now_ms `expired`; deletes
 * deliveries with expires_at_ms <= cut, then the events no delivery holds
 * any more, the endpoints with expires_at_ms <= cut that have no delivery
 * left, and the commands of those endpoints. At most IGW_OUTBOX_SWEEP_BATCH
 * rows of each kind per call. What a sweep leaves: nothing of a swept
 * delivery; since a delivery expires no later than its endpoint, a replay
 * reaching a swept delivery through a live endpoint finds no delivery
 * (REPLAY_NONE), and once the endpoint is swept too the request fails
 * endpoint authentication. device_commands rows are not touched.
 * retention_ms >= 0. Sends no NOTIFY. */
int igw_outbox_sweep(igw_db *db, int64_t now_ms, int64_t retention_ms, igw_outbox_cb cb, void *arg);

/* A fresh deliveryId: IGW_OUTBOX_ID_LEN base64url characters of 16 bytes
 * from getrandom(2), NUL-terminated; cap > IGW_OUTBOX_ID_LEN. 0 or -1. */
int igw_outbox_new_id(char *out, size_t cap);

/* NULL when every state name the outbox's SQL uses is a state of
 * igw_sm_delivery (the column's CHECK), else the first that is not. */
const char *igw_outbox_check_states(void);

#endif
