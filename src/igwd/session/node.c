/* node.c - see node.h. */
#include "session/node.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <h2o.h>

#include "core/log.h"
#include "event/outbox.h"
#include "machines.h"
#include "igwd/state_sql.h" /* IGW_SQL_STATE_EVENTS: from the schema's StateEvent */


#define REASON_RESTARTED "nodeRestarted"
#define REASON_LOST "nodeLost"

/* $1 node id. The first start gets epoch 1; every later one, one more. */
static const igw_db_stmt st_claim = {
    "igw_node_claim",
    "INSERT INTO nodes (node_id, epoch, mqtt_client_id) VALUES ($1::text, 1, NULLIF($2::text, '')) "
    "ON CONFLICT (node_id) DO UPDATE SET epoch = nodes.epoch + 1, started_at = now(), heartbeat_at = now(), "
    "                                    mqtt_client_id = EXCLUDED.mqtt_client_id "
    "RETURNING epoch",
    2};

/* $1 node id, $2 epoch: one row while the epoch is still ours. */
static const igw_db_stmt st_beat = {
    "igw_node_beat",
    "UPDATE nodes SET heartbeat_at = now() WHERE node_id = $1::text AND epoch = $2::bigint RETURNING 1",
    2};

/* The fence of every sweep: this node's row at this epoch, FOR SHARE so a
 * newer process's claim (an UPDATE of the row) waits for the sweep's commit
 * and a sweep after that claim finds no row and writes nothing. */
#define ME_CTE "me AS (SELECT n.node_id FROM nodes n WHERE n.node_id = $1::text AND n.epoch = $2::bigint FOR SHARE)"

/* After `pick` (the session ids to end, locked): ends them (once: a
 * session already ended by another sweeper is left alone), raises their
 * event_seq, and their interaction.state events (generated/igwd/state_sql.h).
 * A deliveryId: base64url of a random UUID (122 random bits), 22
 * characters as the outbox's own. */
#define SWEEP_TAIL(REASON)                                                                                               \
    "upd AS (UPDATE sessions s SET state = '" IGW_SQL_ST_ENDED "', reason = '" REASON "', event_seq = s.event_seq + 1, " \
    "        updated_at = now() FROM pick WHERE s.session_id = pick.session_id AND s.state <> '" IGW_SQL_ST_ENDED "' "   \
    "        RETURNING s.session_id::text AS sid, s.endpoint_id::text AS ep, s.event_seq AS seq, s.state AS state, "     \
    "                  s.reason AS reason, NULL::text AS playback, NULL::bigint AS pos, NULL::text AS invite, "          \
    "                  NULL::text AS camera, NULL::text AS pid, NULL::text AS dn, "                                      \
    "                  NULL::bigint AS rev), "                                                                           \
    IGW_SQL_STATE_EVENTS("rtrim(translate(encode(uuid_send(gen_random_uuid()), 'base64'), '+/', '-_'), '=')")            \
    "SELECT (SELECT count(*) FROM me), (SELECT count(*) FROM pick), (SELECT count(*) FROM upd), "                        \
    "       (SELECT count(*) FROM dl), (SELECT count(*) FROM ntf), (SELECT count(*) FROM ev)"

/* The sweeps' parameters ($1 node id, $2 epoch, $3 batch, $4 lapse in ms)
 * and result columns. */
enum { SW_NODE, SW_EPOCH, SW_BATCH, SW_LAPSE, SW__N };
enum { SW_COL_ME, SW_COL_PICKED, SW_COL_ENDED, SW_COL_DELIVERED, SW_COL_NOTIFIED, SW_COL_EVENTS, SW_COL__N };

/* The live sessions of this node id's older epochs. */
static const igw_db_stmt st_sweep_restarted = {
    "igw_node_sweep_restarted",
    "WITH " ME_CTE ", "
    "pick AS MATERIALIZED (SELECT s.session_id FROM sessions s JOIN me ON s.owner_node = me.node_id "
    "        WHERE s.owner_epoch < $2::bigint AND s.state <> '" IGW_SQL_ST_ENDED "' "
    "        LIMIT $3::int FOR UPDATE OF s SKIP LOCKED), "
    /* its door-bell rings (their anchors) with them: a dead epoch's ringing
     * row would hold its camera's one ringing place */
    "rg AS (UPDATE rings r SET state = '" IGW_SQL_ST_ENDED "', reason = '" REASON_RESTARTED "', ended_at = now(), "
    "       deadline_ms = NULL FROM me WHERE r.owner_node = me.node_id AND r.owner_epoch < $2::bigint "
    "         AND r.state <> '" IGW_SQL_ST_ENDED "'), " SWEEP_TAIL(REASON_RESTARTED),
    SW_LAPSE}; /* the first three */

/* The live sessions of the other nodes whose heartbeat is older than the lapse (the nodes table is
 * small; each lapsed node's sessions come from the partial index of live
 * sessions, never from the ended history). */
static const igw_db_stmt st_sweep_lost = {
    "igw_node_sweep_lost",
    "WITH " ME_CTE ", "
    "pick AS MATERIALIZED (SELECT s.session_id FROM me, nodes n JOIN sessions s ON s.owner_node = n.node_id "
    "        WHERE n.node_id <> me.node_id AND n.heartbeat_at < now() - $4::bigint * interval '1 millisecond' "
    "          AND s.state <> '" IGW_SQL_ST_ENDED "' "
    "        LIMIT $3::int FOR UPDATE OF s SKIP LOCKED), "
    "rg AS (UPDATE rings r SET state = '" IGW_SQL_ST_ENDED "', reason = '" REASON_LOST "', ended_at = now(), "
    "       deadline_ms = NULL FROM me, nodes n WHERE r.owner_node = n.node_id AND n.node_id <> me.node_id "
    "         AND n.heartbeat_at < now() - $4::bigint * interval '1 millisecond' AND r.state <> '" IGW_SQL_ST_ENDED "'), "
    SWEEP_TAIL(REASON_LOST),
    SW__N};

/* The broker sessions of lapsed nodes to drain, each epoch's once: the row
 * taken by one live node (the UPDATE's row lock; a second sweeper finds
 * it drained), while this node's epoch is still its own. */
enum { DR_NODE, DR_EPOCH, DR_LAPSE, DR__N };
enum { DR_COL_NODE, DR_COL_CLIENT };
static const igw_db_stmt st_drain = {
    "igw_node_drain",
    "WITH " ME_CTE " "
    "UPDATE nodes d SET drained_epoch = d.epoch FROM me "
    "WHERE d.node_id <> me.node_id AND d.heartbeat_at < now() - $3::bigint * interval '1 millisecond' "
    "  AND d.mqtt_client_id IS NOT NULL AND d.drained_epoch IS DISTINCT FROM d.epoch "
    "RETURNING d.node_id, d.mqtt_client_id",
    DR__N};

typedef enum phase { CLAIMING, LIVE, FENCED } phase;

struct igw_node {
    h2o_loop_t *loop;
    igw_db *db;
    igw_node_stats *stats;
    h2o_timeout_t timeout;
    h2o_timeout_entry_t entry;
    char id[IGW_NODE_ID_MAX + 1];
    unsigned lapse_ms;
    phase phase;
    int64_t epoch;
    unsigned beats;       /* heartbeats sent */
    unsigned inflight;    /* queries not answered yet */
    bool claiming, beating, sweeping, draining;
    char mqtt_client_id[IGW_NODE_CLIENT_ID_MAX + 1];
    void (*drain)(void *arg, const char *node_id, const char *client_id);
    void *drain_arg;
    bool restarted_done;  /* the older epochs are swept completely */
    bool stopping;        /* igw_node_stop came: free with the last answer */
};

const char *igw_node_reason_name(igw_node_reason r)
{
    return r == IGW_NODE_RESTARTED ? REASON_RESTARTED : r == IGW_NODE_LOST ? REASON_LOST : "?";
}

const char *igw_node_check_states(void)
{
    int ended = igw_sm_state(&igw_sm_session, IGW_SQL_ST_ENDED);
    if (ended <= 0 || !igw_sm_session.terminal[ended])
        return IGW_SQL_ST_ENDED;
    /* The sweep's UPDATE takes every state but "ended" to "ended": the
     * machine's `fail`, unguarded, from each of them. */
    for (int s = 1; s < (int)igw_sm_session.nstates; s++) {
        if (s == ended)
            continue;
        igw_sm_result r = igw_sm_fire(&igw_sm_session, s, IGW_SESSION_ON_FAIL, 0);
        if (!r.ok || r.next != ended)
            return igw_sm_session.states[s];
    }
    if (igw_sm_state(&igw_sm_delivery, IGW_SQL_ST_PENDING) <= 0)
        return IGW_SQL_ST_PENDING;
    /* The rings' sweep ends them too: the ring machine's terminal state. */
    int rended = igw_sm_state(&igw_sm_ring, IGW_SQL_ST_ENDED);
    if (rended <= 0 || !igw_sm_ring.terminal[rended])
        return IGW_SQL_ST_ENDED;
    return NULL;
}

static void release(igw_node *n)
{
    n->inflight--;
    if (n->stopping && n->inflight == 0)
        free(n);
}

static int64_t num(const PGresult *res, int col)
{
    return PQntuples(res) > 0 && !PQgetisnull(res, 0, col) ? strtoll(PQgetvalue(res, 0, col), NULL, 10) : -1;
}

static bool shaped(const PGresult *res, const char *err, int cols)
{
    return res && !err && PQresultStatus(res) == PGRES_TUPLES_OK && PQnfields(res) >= cols;
}

static int submit(igw_node *n, const igw_db_stmt *st, const char *const *v, igw_db_cb cb)
{
    if (igw_db_exec(n->db, st, v, NULL, NULL, cb, n) != 0)
        return -1;
    n->inflight++;
    return 0;
}

static void sweep(igw_node *n, igw_node_reason why);

static void fence(igw_node *n)
{
    if (n->phase == FENCED)
        return;
    n->phase = FENCED;
    atomic_store(&n->stats->fenced, true);
    igw_log(IGW_LOG_ERROR, NULL,
            "node %s: epoch %" PRId64 " was taken over by another process with the same node id: "
            "heartbeat stopped, this process ends and writes no session any more",
            n->id, n->epoch);
}

static void on_swept(void *arg, const PGresult *res, const char *err, igw_node_reason why)
{
    igw_node *n = arg;
    n->sweeping = false;
    if (!n->stopping) {
        if (!shaped(res, err, SW_COL__N) || num(res, SW_COL_ME) < 0) {
            igw_log(IGW_LOG_WARN, NULL, "node %s: sweep (%s) failed: %s", n->id, igw_node_reason_name(why),
                    err ? err : "unexpected result shape");
        } else if (num(res, SW_COL_ME) == 0) {
            fence(n); /* our row is at a newer epoch: nothing was written */
        } else {
            int64_t picked = num(res, SW_COL_PICKED), ended = num(res, SW_COL_ENDED);
            if (ended > 0) {
                atomic_fetch_add(&n->stats->swept[why], (uint64_t)ended);
                igw_log(IGW_LOG_INFO, NULL, "node %s: ended %" PRId64 " session(s): %s (%" PRId64 " delivered)",
                        n->id, ended, igw_node_reason_name(why), num(res, SW_COL_DELIVERED));
            }
            if (picked >= IGW_NODE_SWEEP_BATCH) /* more behind them: on at once */
                sweep(n, why);
            else if (why == IGW_NODE_RESTARTED)
                n->restarted_done = true;
        }
    }
    release(n);
}

static void on_drain(void *arg, const PGresult *res, const char *err)
{
    igw_node *n = arg;
    n->draining = false;
    if (!n->stopping) {
        if (!shaped(res, err, 2))
            igw_log(IGW_LOG_WARN, NULL, "node %s: drain claim failed: %s", n->id, err ? err : "unexpected result shape");
        else
            for (int i = 0, k = PQntuples(res); i < k; i++) {
                igw_log(IGW_LOG_INFO, NULL, "node %s: draining lost node %s's broker session (%s)", n->id,
                        PQgetvalue(res, i, DR_COL_NODE), PQgetvalue(res, i, DR_COL_CLIENT));
                n->drain(n->drain_arg, PQgetvalue(res, i, DR_COL_NODE), PQgetvalue(res, i, DR_COL_CLIENT));
            }
    }
    release(n);
}

/* After a sweep of lapsed nodes: their broker sessions, when someone drains them. */
static void drain_lost(igw_node *n)
{
    if (!n->drain || n->draining || n->phase != LIVE)
        return;
    char epoch[24], lapse[24];
    snprintf(epoch, sizeof epoch, "%" PRId64, n->epoch);
    snprintf(lapse, sizeof lapse, "%u", n->lapse_ms);
    const char *v[DR__N] = {[DR_NODE] = n->id, [DR_EPOCH] = epoch, [DR_LAPSE] = lapse};
    n->draining = submit(n, &st_drain, v, on_drain) == 0;
}

static void on_swept_restarted(void *arg, const PGresult *res, const char *err)
{
    on_swept(arg, res, err, IGW_NODE_RESTARTED);
}

static void on_swept_lost(void *arg, const PGresult *res, const char *err)
{
    igw_node *n = arg;
    if (!n->stopping)
        drain_lost(n); /* before the release: n lives while a query is in flight */
    on_swept(arg, res, err, IGW_NODE_LOST);
}

static void sweep(igw_node *n, igw_node_reason why)
{
    if (n->phase != LIVE || n->sweeping || n->stopping)
        return;
    char epoch[24], batch[12], lapse[24];
    snprintf(epoch, sizeof epoch, "%" PRId64, n->epoch);
    snprintf(batch, sizeof batch, "%d", IGW_NODE_SWEEP_BATCH);
    snprintf(lapse, sizeof lapse, "%u", n->lapse_ms);
    const char *v[SW__N] = {[SW_NODE] = n->id, [SW_EPOCH] = epoch, [SW_BATCH] = batch, [SW_LAPSE] = lapse};
    if (why == IGW_NODE_RESTARTED)
        n->sweeping = submit(n, &st_sweep_restarted, v, on_swept_restarted) == 0;
    else
        n->sweeping = submit(n, &st_sweep_lost, v, on_swept_lost) == 0;
}

static void on_claimed(void *arg, const PGresult *res, const char *err)
{
    igw_node *n = arg;
    n->claiming = false;
    if (!n->stopping) {
        int64_t epoch = shaped(res, err, 1) ? num(res, 0) : -1;
        if (epoch < 1) {
            igw_log(IGW_LOG_WARN, NULL, "node %s: claim failed (retrying): %s", n->id,
                    err ? err : "unexpected result shape");
        } else {
            n->epoch = epoch;
            n->phase = LIVE;
            atomic_store(&n->stats->epoch, epoch);
            igw_log(IGW_LOG_INFO, NULL, "node %s: epoch %" PRId64, n->id, epoch);
            sweep(n, IGW_NODE_RESTARTED);
        }
    }
    release(n);
}

static void on_beat(void *arg, const PGresult *res, const char *err)
{
    igw_node *n = arg;
    n->beating = false;
    if (!n->stopping && n->phase == LIVE) {
        if (!shaped(res, err, 1))
            igw_log(IGW_LOG_WARN, NULL, "node %s: heartbeat failed: %s", n->id, err ? err : "unexpected result shape");
        else if (PQntuples(res) == 0)
            fence(n);
    }
    release(n);
}

static void claim(igw_node *n)
{
    const char *v[2] = {n->id, n->mqtt_client_id};
    n->claiming = submit(n, &st_claim, v, on_claimed) == 0;
}

static void beat(igw_node *n)
{
    char epoch[24];
    snprintf(epoch, sizeof epoch, "%" PRId64, n->epoch);
    const char *v[2] = {n->id, epoch};
    n->beating = submit(n, &st_beat, v, on_beat) == 0;
}

/* Every heartbeat_ms: the claim until it is taken, then the heartbeat (one
 * in flight at most: a slow database skips beats rather than queueing them),
 * the sweep of older epochs until done, and every few beats that of lapsed
 * nodes. A fenced node stops here. */
static void on_tick(h2o_timeout_entry_t *entry)
{
    igw_node *n = H2O_STRUCT_FROM_MEMBER(igw_node, entry, entry);
    if (n->phase == FENCED)
        return;
    if (n->phase == CLAIMING) {
        if (!n->claiming)
            claim(n);
    } else {
        if (!n->beating)
            beat(n);
        if (!n->restarted_done)
            sweep(n, IGW_NODE_RESTARTED);
        else if (++n->beats % IGW_NODE_LOST_EVERY == 0)
            sweep(n, IGW_NODE_LOST);
    }
    h2o_timeout_link(n->loop, &n->timeout, &n->entry);
}

igw_node *igw_node_start(struct st_h2o_evloop_t *loop, igw_db *db, const igw_node_config *cfg, char *err,
                         size_t errlen)
{
    const char *bad = igw_node_check_states();
    if (bad) {
        snprintf(err, errlen, "node: state \"%s\" does not match the generated machines", bad);
        return NULL;
    }
    size_t len = cfg && cfg->node_id ? strnlen(cfg->node_id, IGW_NODE_ID_MAX + 1) : 0;
    if (!loop || !db || !cfg || !cfg->stats || len < 1 || len > IGW_NODE_ID_MAX || cfg->heartbeat_ms < 1) {
        snprintf(err, errlen, "node: the node id must be 1..%d bytes and the heartbeat at least 1 ms",
                 IGW_NODE_ID_MAX);
        return NULL;
    }
    igw_node *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    n->loop = loop;
    n->db = db;
    n->stats = cfg->stats;
    memcpy(n->id, cfg->node_id, len);
    n->lapse_ms = cfg->lapse_ms;
    snprintf(n->mqtt_client_id, sizeof n->mqtt_client_id, "%s", cfg->mqtt_client_id ? cfg->mqtt_client_id : "");
    n->drain = cfg->drain;
    n->drain_arg = cfg->drain_arg;
    h2o_timeout_init(loop, &n->timeout, cfg->heartbeat_ms);
    n->entry.cb = on_tick;
    claim(n); /* sent at the end of this loop turn; a refusal is retried by the tick */
    h2o_timeout_link(loop, &n->timeout, &n->entry);
    return n;
}

void igw_node_stop(igw_node *n)
{
    if (!n)
        return;
    if (h2o_timeout_is_linked(&n->entry))
        h2o_timeout_unlink(&n->entry);
    h2o_timeout_dispose(n->loop, &n->timeout);
    if (n->inflight) {
        n->stopping = true; /* freed by the last answer: the database fails what is in flight */
        return;
    }
    free(n);
}

void igw_node_metrics_write(FILE *f, const igw_node_stats *s)
{
    fprintf(f,
            "# HELP igw_node_epoch This process's epoch of its node id (0 until claimed).\n"
            "# TYPE igw_node_epoch gauge\nigw_node_epoch %" PRId64 "\n"
            "# HELP igw_node_fenced 1 once another process took over this node id's epoch.\n"
            "# TYPE igw_node_fenced gauge\nigw_node_fenced %d\n"
            "# HELP igw_sessions_swept_total Sessions this process ended because their owner node restarted or "
            "lapsed.\n"
            "# TYPE igw_sessions_swept_total counter\n"
            "igw_sessions_swept_total{reason=\"" REASON_RESTARTED "\"} %" PRIu64 "\n"
            "igw_sessions_swept_total{reason=\"" REASON_LOST "\"} %" PRIu64 "\n",
            atomic_load(&s->epoch), atomic_load(&s->fenced) ? 1 : 0, atomic_load(&s->swept[IGW_NODE_RESTARTED]),
            atomic_load(&s->swept[IGW_NODE_LOST]));
}
