/* node.h - this igwd process as a node: a node id, an epoch, a heartbeat,
 * and the sweep that ends the sessions of dead owners (docs/sessions.md,
 * "Threads and the owner node").
 *
 * At start the node claims its `nodes` row: the first process with a node
 * id gets epoch 1, each later start one more (INSERT ... ON CONFLICT DO
 * UPDATE ... RETURNING epoch). Then every heartbeat_ms it raises
 * heartbeat_at only while (node id, epoch) is still its own; no row means a
 * newer process with the same node id took over, and this one is fenced:
 * it logs one error and from then on neither heartbeats nor ends or writes
 * any session. Every session write of the sweep also checks the epoch in
 * its own statement (the node row FOR SHARE), so a superseded process
 * writes nothing even before its next heartbeat notices.
 *
 * The sweep ends sessions (state `ended` of the generated `session`
 * machine, its `fail` transition) with a reason:
 *   - IGW_NODE_RESTARTED ("nodeRestarted"): right after the claim, every
 *     live session owned by this node id with an older epoch;
 *   - IGW_NODE_LOST ("nodeLost"): every IGW_NODE_LOST_EVERY heartbeats,
 *     every live session owned by another node whose heartbeat_at is older
 *     than lapse_ms (any live node does it; rows are taken FOR UPDATE SKIP
 *     LOCKED and updated only while not ended, so two sweepers end each
 *     session once).
 * Each ended session gets event_seq + 1 and, in the same statement, its
 * interaction.state event {msgToken: "<sessionId>.<eventSeq>", method,
 * sessionId, eventSeq, data: {state: "ended", reason}} with a delivery to
 * the session's endpoint (none when the endpoint is gone or expired: the
 * session still ends) and the outbox NOTIFY (event/outbox.h). At most
 * IGW_NODE_SWEEP_BATCH sessions per statement; a full batch is followed by
 * the next at once.
 *
 * Everything but igw_node_stats' atomics runs on the loop thread of the
 * database connection given (worker 0's chore connection). */
#ifndef IGW_SESSION_NODE_H
#define IGW_SESSION_NODE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/db.h"

struct st_h2o_evloop_t;

typedef struct igw_node igw_node;

#define IGW_NODE_ID_MAX 128       /* bytes of a node id */

/* The state names the engine's SQL uses: igw_node_check_states() proves
 * them against the generated machines at start (session: the terminal
 * state `fail` reaches from every live state; delivery: a new delivery's
 * state). */
#define IGW_SQL_ST_ENDED "ended"
#define IGW_SQL_ST_PENDING "pending"
#define IGW_NODE_SWEEP_BATCH 256  /* sessions ended per statement at most */
#define IGW_NODE_LOST_EVERY 3     /* heartbeats between two sweeps of lapsed nodes */

/* Why the sweep ended a session (data.reason of its interaction.state). */
typedef enum igw_node_reason { IGW_NODE_RESTARTED, IGW_NODE_LOST, IGW_NODE__REASONS } igw_node_reason;

/* "nodeRestarted", "nodeLost". */
const char *igw_node_reason_name(igw_node_reason r);

/* The node's view for other threads (metrics, later the session engine):
 * zero-initialised by the owner (igw_app), written by the node on its loop
 * thread, read from any thread. Outlives the node. */
typedef struct igw_node_stats {
    _Atomic int64_t epoch;                      /* 0 until claimed */
    atomic_bool fenced;                         /* the epoch was taken over: no more session writes */
    _Atomic uint64_t swept[IGW_NODE__REASONS];  /* sessions this process ended, by reason */
} igw_node_stats;

#define IGW_NODE_CLIENT_ID_MAX 128 /* bytes of a broker client id */

typedef struct igw_node_config {
    const char *node_id;   /* 1..IGW_NODE_ID_MAX bytes; copied */
    unsigned heartbeat_ms; /* >= 1 */
    unsigned lapse_ms;     /* another node's heartbeat older than this: its sessions are lost */
    igw_node_stats *stats; /* required; must outlive the node */
    /* This node's broker client id, kept in its row (copied; NULL or "":
     * no broker). After each sweep of lapsed nodes, drain(drain_arg, its
     * node id, its client id) is called on this loop for each lapsed node
     * whose current epoch's broker session no live node drained yet: the
     * caller receives what the broker queued for it and takes it out of the
     * shared subscriptions (mqtt.h, drain). NULL: this node drains none. */
    const char *mqtt_client_id;
    void (*drain)(void *arg, const char *node_id, const char *client_id);
    void *drain_arg;
} igw_node_config;

/* The SQL's state names against the generated machines: NULL when "ended"
 * is the terminal state every live session state reaches by `fail`, and
 * "pending" a delivery state; else the name that is not. Any thread. */
const char *igw_node_check_states(void);

/* Starts the node on `loop` with `db` (both must outlive it): the claim is
 * sent at once and retried every heartbeat until it succeeds. NULL when the
 * configuration is invalid (err says why) or memory runs out. */
igw_node *igw_node_start(struct st_h2o_evloop_t *loop, igw_db *db, const igw_node_config *cfg, char *err,
                         size_t errlen);

/* Stops the timer; a query in flight still completes (the database fails it
 * when destroyed) and frees the node then. Call before destroying db, on the
 * loop thread. NULL is ignored. */
void igw_node_stop(igw_node *n);

/* Appends the node's metric families (igw_node_epoch, igw_node_fenced,
 * igw_sessions_swept_total{reason}) to a /metrics body. Any thread. */
void igw_node_metrics_write(FILE *f, const igw_node_stats *s);

#endif
