/* transfer.c - see transfer.h: a live session moves to another endpoint. */
#include "session/transfer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "event/outbox.h"
#include "event/rights.h"
#include "jw.h"
#include "paths.h"
#include "session/node.h"
#include "session/session.h"

/* Before the acceptance: the session's endpoint (the caller's user's and
 * enterprise's) is valid, or expired less than the grace ago. */
enum { TC_ENT, TC_USER, TC_OLD, TC_GRACE, TC__N };
enum { TC_COL_OK };
static const igw_db_stmt st_window = {
    "igw_session_transfer_window",
    "SELECT EXISTS (SELECT 1 FROM endpoints p WHERE p.endpoint_id = $3::text AND p.enterprise_id = $1::bigint "
    "               AND p.user_id = $2::bigint AND p.expires_at_ms + $4::bigint > " IGW_SQL_NOW_MS ")",
    TC__N};

/* The move, fenced by this node's epoch: the session's row names the new
 * endpoint; the old one's unacknowledged deliveries of it become the new
 * one's (their expiry the new endpoint's), and the new one hears of them. */
enum { TM_SID, TM_OLD, TM_NEW, TM_NODE, TM_EPOCH, TM__N };
enum { TM_COL_MOVED, TM_COL_REDELIVERED, TM_COL_NOTIFIED };

/* After a move whose outcome is unknown (the statement failed, its commit
 * may have happened): the endpoint the row names. */
enum { TW_SID, TW__N };
static const igw_db_stmt st_where = {
    "igw_session_transfer_where", "SELECT endpoint_id FROM sessions WHERE session_id = $1::text", TW__N};
static const igw_db_stmt st_move = {
    "igw_session_transfer",
    "WITH me AS (SELECT 1 FROM nodes WHERE node_id = $4::text AND epoch = $5::bigint FOR SHARE), "
    "np AS (SELECT expires_at_ms FROM endpoints WHERE endpoint_id = $3::text), "
    "s AS (UPDATE sessions SET endpoint_id = $3::text, updated_at = now() "
    "      WHERE session_id = $1::text AND endpoint_id = $2::text AND state <> '" IGW_SQL_ST_ENDED "' "
    "        AND owner_node = $4::text AND owner_epoch = $5::bigint AND EXISTS (SELECT 1 FROM me) "
    "      RETURNING session_id), "
    "d AS (UPDATE deliveries d SET endpoint_id = $3::text, expires_at_ms = (SELECT expires_at_ms FROM np) "
    "      WHERE d.session_id = $1::text AND d.endpoint_id = $2::text AND d.state = '" IGW_SQL_ST_PENDING "' "
    "        AND d.acked_at IS NULL AND EXISTS (SELECT 1 FROM s) RETURNING 1), "
    "n AS (SELECT pg_notify('" IGW_OUTBOX_CHANNEL "', $3::text) WHERE EXISTS (SELECT 1 FROM d)) "
    "SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM d), (SELECT count(*) FROM n)",
    TM__N};

/* A move in flight: what its result needs once the statement answers. */
typedef struct move {
    igw_engine *e;
    char sid[LIVE_ID_MAX + 1], from[LIVE_ID_MAX + 1], to[LIVE_ID_MAX + 1], token[LIVE_TOKEN_MAX + 1];
} move;

static void result(igw_engine *e, live_session *s, const move *m, int cls, const char *reason, long redelivered)
{
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "operation", 9);
    igw_jw_string(&w, "endpointControl", 15);
    igw_jw_key(&w, "transferFrom", 12);
    igw_jw_string(&w, m->from, strlen(m->from));
    igw_jw_key(&w, "endpointId", 10);
    igw_jw_string(&w, m->to, strlen(m->to));
    igw_jw_key(&w, "redelivered", 11);
    igw_jw_int(&w, redelivered);
    igw_jw_object_end(&w);
    live_session_control_result(e, s, m->to, m->token, cls, reason, igw_sm_session.states[s->state], &w);
    igw_jw_free(&w);
}

/* The row after an unknown outcome: the session's results follow it. */
static void on_where(void *arg, const PGresult *res, const char *err)
{
    move *m = arg;
    live_session *s = live_session_find(m->e, m->sid);
    bool known = res && PQntuples(res) == 1;
    if (s && known && strcmp(s->endpoint, m->to) == 0) /* no later move since */
        snprintf(s->endpoint, sizeof s->endpoint, "%s", PQgetvalue(res, 0, 0));
    if (s)
        result(m->e, s, m, known && strcmp(PQgetvalue(res, 0, 0), m->to) == 0 ? IGW_ERR_OK : IGW_ERR_UNKNOWN_OUTCOME,
               "the transfer's outcome is unknown; the session's endpoint was read again", 0);
    else
        igw_log(IGW_LOG_WARN, NULL, "session %s: transfer to %s: %s", m->sid, m->to, err ? err : "ended meanwhile");
    free(m);
}

static void on_moved(void *arg, const PGresult *res, const char *err)
{
    move *m = arg;
    live_session *s = live_session_find(m->e, m->sid);
    bool moved = res && PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, TM_COL_MOVED), "1") == 0;
    if (!res && s) { /* failed: committed or not, the row says */
        igw_log(IGW_LOG_WARN, NULL, "session %s: transfer to %s: %s", m->sid, m->to, err);
        const char *v[TW__N] = {[TW_SID] = m->sid};
        if (igw_db_exec(m->e->db, &st_where, v, NULL, NULL, on_where, m) != 0)
            on_where(m, NULL, "the database queue is full");
        return;
    }
    if (!s) { /* ended meanwhile: the accepted command still gets its result */
        igw_ResultData d = {0};
        live_session_result(m->e, m->sid, m->to, m->token, IGW_CommandMethod_interaction_control, IGW_ERR_CONFLICT,
                            "the session ended while it was being moved", &d);
    } else if (!moved) {
        /* Ended meanwhile, or this node's epoch is over: it stays where it was. */
        igw_log(IGW_LOG_WARN, NULL, "session %s: not moved to endpoint %s: the row is not this node's live session any more",
                m->sid, m->to);
        if (strcmp(s->endpoint, m->to) == 0) /* no later move since */
            snprintf(s->endpoint, sizeof s->endpoint, "%s", m->from);
        result(m->e, s, m, IGW_ERR_CONFLICT, "the session could not be moved", 0);
    } else {
        long redelivered = strtol(PQgetvalue(res, 0, TM_COL_REDELIVERED), NULL, 10);
        igw_log(IGW_LOG_INFO, NULL, "session %s: moved from endpoint %s to %s (%ld deliveries)", s->id, m->from, m->to,
                redelivered);
        result(m->e, s, m, IGW_ERR_OK, NULL, redelivered);
    }
    free(m);
}

static void transfer_done(live_op *o, live_session *s)
{
    if (strcmp(s->endpoint, o->text) != 0) { /* another transfer moved it meanwhile */
        igw_ResultData d = {0};
        live_session_result(o->e, s->id, o->endpoint, o->token, o->method, IGW_ERR_CONFLICT,
                            "the session moved to another endpoint meanwhile", &d);
        return;
    }
    char epoch[24];
    snprintf(epoch, sizeof epoch, "%" PRId64, live_node_epoch(o->e));
    move *m = calloc(1, sizeof *m);
    if (!m) {
        igw_ResultData d = {0};
        live_session_result(o->e, s->id, s->endpoint, o->token, o->method, IGW_ERR_INTERNAL, "out of memory", &d);
        return;
    }
    m->e = o->e;
    snprintf(m->sid, sizeof m->sid, "%s", s->id);
    snprintf(m->from, sizeof m->from, "%s", s->endpoint);
    snprintf(m->to, sizeof m->to, "%s", o->endpoint);
    snprintf(m->token, sizeof m->token, "%s", o->token);
    /* From now on the session's results and events name the new endpoint:
     * the statements queued after this one run after it. */
    snprintf(s->endpoint, sizeof s->endpoint, "%s", o->endpoint);
    const char *v[TM__N] = {[TM_SID] = m->sid, [TM_OLD] = m->from, [TM_NEW] = m->to, [TM_NODE] = o->e->node_id,
                            [TM_EPOCH] = epoch};
    if (igw_db_exec(o->e->db, &st_move, v, NULL, NULL, on_moved, m) != 0)
        on_moved(m, NULL, "the database queue is full");
}

static void on_window(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    if (!live_op_row(o, res, err, false))
        return;
    live_session *s = live_session_find(o->e, o->sid);
    if (!s) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "the session has ended", IGW_PATH_command_sessionId);
        return;
    }
    if (!igw_db_true(res, 0, TC_COL_OK)) {
        live_op_refuse(o, IGW_ERR_EXPIRED,
                       "the session's endpoint expired longer than endpoint_grace_ms ago: it can no longer be moved",
                       IGW_PATH_command_params_args_transferFrom);
        return;
    }
    live_op_accept(o, transfer_done);
}

void live_transfer(live_op *o, live_session *s)
{
    if (strcmp(s->endpoint, o->endpoint) == 0) {
        live_op_refuse(o, IGW_ERR_PARAMETER, "the session is on this endpoint already",
                       IGW_PATH_command_params_args_transferFrom);
        return;
    }
    snprintf(o->text, sizeof o->text, "%s", s->endpoint); /* what transferFrom named: checked again when accepted */
    char grace[24];
    snprintf(grace, sizeof grace, "%u", o->e->cfg.endpoint_grace_ms);
    const char *v[TC__N] = {[TC_ENT] = o->ent, [TC_USER] = o->user, [TC_OLD] = s->endpoint, [TC_GRACE] = grace};
    if (igw_db_exec(o->e->db, &st_window, v, NULL, NULL, on_window, o) != 0)
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}
