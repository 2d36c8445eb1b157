/* forward.c - see forward.h: session commands between nodes. */
#include "session/forward.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "clock.h"
#include "core/log.h"
#include "json.h"
#include "session/op.h"
#include "session/session.h"

/* Rows one claim takes at most (the statement's LIMIT): a longer inbox is
 * claimed again at once. */
#define CLAIM_MAX 64
#define CLAIM_MAX_SQL "64"
/* The tick's claim, for a notification lost with a connection. */
#define CLAIM_EVERY_MS 1000
/* An acceptance's canonical command is bounded by the request's. */
#define ARENA_LIMIT (1u << 20)

/* ---- the owner ------------------------------------------------------------------------- */

/* This node's epoch's rows, oldest first, deleted as they are read: each
 * runs once. Its commit skips the WAL flush: lost in a crash, the claim
 * dies with this epoch, whose rows nobody claims again. */
enum { CL_NODE, CL_EPOCH, CL__N };
enum { CL_COL_ENT, CL_COL_USER, CL_COL_EP, CL_COL_TOKEN, CL_COL_METHOD, CL_COL_FP, CL_COL_COMMAND, CL_COL_SID };
static const igw_db_stmt st_claim = {
    "igw_session_forwards_claim",
    "WITH f AS (DELETE FROM forwards WHERE forward_id IN ("
    "             SELECT forward_id FROM forwards WHERE owner_node = $1::text AND owner_epoch = $2::bigint "
    "             ORDER BY forward_id LIMIT " CLAIM_MAX_SQL " FOR UPDATE SKIP LOCKED) "
    "           RETURNING forward_id, enterprise_id, endpoint_id, msg_token, session_id) "
    "SELECT c.enterprise_id, c.user_id, c.endpoint_id, c.msg_token, c.method, encode(c.fingerprint, 'hex'), "
    "       c.command::text, f.session_id, set_config('synchronous_commit', 'off', true) "
    "FROM f JOIN commands c USING (enterprise_id, endpoint_id, msg_token) ORDER BY f.forward_id",
    CL__N};

/* One claimed command while it runs: its decoded form and strings. */
typedef struct fwd_msg {
    igw_engine *e;
    igw_arena arena;
    igw_Command k;
    igw_engine_cmd c;
    char ent_endpoint[LIVE_ID_MAX + 1], token[LIVE_TOKEN_MAX + 1], method[64], sid[LIVE_ID_MAX + 1];
    char fp[80];
} fwd_msg;

static void fwd_free(fwd_msg *m)
{
    igw_arena_free(&m->arena);
    free(m);
}

/* The owner's answer: accepted, it ran; refused, the refusal is the
 * command's result (the receiving node said accepted long ago). */
static void fwd_answer(void *ctx, const igw_engine_cmd_answer *a)
{
    fwd_msg *m = ctx;
    igw_ResultData d = {0};
    if (a->prior_fp) { /* a handler took its own acceptance for a replay: a bug, yet answered */
        igw_log(IGW_LOG_ERROR, NULL, "session %s: forwarded command %s seen as a replay: not run", m->sid, m->token);
        live_session_result(m->e, m->sid, m->ent_endpoint, m->token, m->k.method, IGW_ERR_INTERNAL, "internal error",
                            &d);
    } else if (a->cls != IGW_ERR_OK) {
        live_session_result(m->e, m->sid, m->ent_endpoint, m->token, m->k.method, a->cls, a->reason, &d);
    }
    fwd_free(m);
}

static void run_one(igw_engine *e, const PGresult *res, int i)
{
    fwd_msg *m = calloc(1, sizeof *m);
    if (!m) {
        igw_log(IGW_LOG_ERROR, NULL, "session: forwarded command %s dropped: out of memory",
                PQgetvalue(res, i, CL_COL_TOKEN));
        return;
    }
    m->e = e;
    igw_arena_init(&m->arena, ARENA_LIMIT);
    snprintf(m->ent_endpoint, sizeof m->ent_endpoint, "%s", PQgetvalue(res, i, CL_COL_EP));
    snprintf(m->token, sizeof m->token, "%s", PQgetvalue(res, i, CL_COL_TOKEN));
    snprintf(m->method, sizeof m->method, "%s", PQgetvalue(res, i, CL_COL_METHOD));
    snprintf(m->sid, sizeof m->sid, "%s", PQgetvalue(res, i, CL_COL_SID));
    snprintf(m->fp, sizeof m->fp, "%s", PQgetvalue(res, i, CL_COL_FP));
    /* The acceptance as the receiving node's strict decoder passed it:
     * decoded again, it cannot fail but for memory. Copied first: the
     * decoded strings point into it, and a handler may read them after
     * this result is gone (an asynchronous check before its acceptance). */
    const char *got = PQgetvalue(res, i, CL_COL_COMMAND);
    size_t len = strlen(got);
    char *text = igw_arena_strndup(&m->arena, got, len);
    igw_json j;
    if (text)
        igw_json_init(&j, text, len, &m->arena, IGW_JSON_MAX_DEPTH);
    if (!text || igw_decode_Command(&j, &m->k) != 0 || igw_json_finish(&j) != 0) {
        igw_log(IGW_LOG_ERROR, NULL, "session %s: forwarded command %s does not decode (%s at %s)", m->sid, m->token,
                !text ? "out of memory" : j.reason ? j.reason : "?", text ? j.path : "");
        int op = igw_CommandMethod_of((igw_str){m->method, strlen(m->method)});
        igw_ResultData d = {0};
        if (op >= 0)
            live_session_result(e, m->sid, m->ent_endpoint, m->token, (igw_CommandMethod)op, IGW_ERR_INTERNAL,
                                "internal error", &d);
        fwd_free(m);
        return;
    }
    m->c = (igw_engine_cmd){.command = &m->k,
                            .enterprise_id = strtoll(PQgetvalue(res, i, CL_COL_ENT), NULL, 10),
                            .user_id = strtoll(PQgetvalue(res, i, CL_COL_USER), NULL, 10),
                            .endpoint_id = m->ent_endpoint,
                            .msg_token = m->token,
                            .method = m->method,
                            .fingerprint_hex = m->fp,
                            .canon = text, /* never written again: it is accepted */
                            .request_id = m->token,
                            .accepted = true};
    live_command(e, &m->c, fwd_answer, m);
}

static void claim(igw_engine *e);

static void on_claimed(void *arg, const PGresult *res, const char *err)
{
    igw_engine *e = arg;
    e->fwd_busy = false;
    if (!res) { /* still in the table: the next wake-up or tick claims them */
        igw_log(IGW_LOG_WARN, NULL, "session: forwards not claimed: %s", err);
        return;
    }
    int n = PQntuples(res);
    for (int i = 0; i < n; i++)
        run_one(e, res, i);
    if (n == CLAIM_MAX || e->fwd_again)
        claim(e);
}

static void claim(igw_engine *e)
{
    int64_t epoch = live_node_epoch(e);
    if (!e->db || epoch <= 0) /* no epoch (yet, or fenced): nothing of ours to run */
        return;
    if (e->fwd_busy) {
        e->fwd_again = true;
        return;
    }
    char ep[24];
    snprintf(ep, sizeof ep, "%" PRId64, epoch);
    const char *v[CL__N] = {[CL_NODE] = e->node_id, [CL_EPOCH] = ep};
    e->fwd_again = false;
    if (igw_db_exec(e->db, &st_claim, v, NULL, NULL, on_claimed, e) == 0) {
        e->fwd_busy = true;
        e->fwd_claimed_ms = igw_clock_ms();
    }
}

/* ---- the dead's ---------------------------------------------------------------------- */

/* Forwards nobody will claim: their session has ended (its owner's epoch
 * was swept: nodeRestarted, nodeLost) and that epoch is not a live node's.
 * Any node answers them, each once (deleted as read), so a command accepted
 * for a session whose owner died gets its result, never hangs. */
enum { OR_LAPSE, OR__N };
enum { OR_COL_SID, OR_COL_EP, OR_COL_TOKEN, OR_COL_METHOD, OR_COL_REASON };
static const igw_db_stmt st_orphans = {
    "igw_session_forwards_orphans",
    "WITH f AS (DELETE FROM forwards WHERE forward_id IN ("
    "             SELECT f.forward_id FROM forwards f JOIN sessions s ON s.session_id = f.session_id "
    "             WHERE s.state = '" IGW_SQL_ST_ENDED "' AND NOT EXISTS (SELECT 1 FROM nodes n "
    "                 WHERE n.node_id = f.owner_node AND n.epoch = f.owner_epoch "
    "                   AND n.heartbeat_at >= now() - $1::bigint * interval '1 millisecond') "
    "             ORDER BY f.forward_id LIMIT " CLAIM_MAX_SQL " FOR UPDATE OF f SKIP LOCKED) "
    "           RETURNING forward_id, enterprise_id, endpoint_id, msg_token, session_id) "
    "SELECT f.session_id, f.endpoint_id, f.msg_token, c.method, COALESCE(s.reason, '') "
    "FROM f JOIN commands c USING (enterprise_id, endpoint_id, msg_token) "
    "       JOIN sessions s ON s.session_id = f.session_id ORDER BY f.forward_id",
    OR__N};

static void on_orphans(void *arg, const PGresult *res, const char *err)
{
    igw_engine *e = arg;
    e->fwd_orphans_busy = false;
    if (!res) {
        igw_log(IGW_LOG_WARN, NULL, "session: orphaned forwards not answered: %s", err);
        return;
    }
    for (int i = 0, n = PQntuples(res); i < n; i++) {
        const char *method = PQgetvalue(res, i, OR_COL_METHOD), *reason = PQgetvalue(res, i, OR_COL_REASON);
        int op = igw_CommandMethod_of((igw_str){method, strlen(method)});
        char why[96];
        igw_ResultData d = {0};
        if (op >= 0)
            live_session_result(e, PQgetvalue(res, i, OR_COL_SID), PQgetvalue(res, i, OR_COL_EP),
                                PQgetvalue(res, i, OR_COL_TOKEN), (igw_CommandMethod)op, IGW_ERR_CONFLICT,
                                live_op_ended_why(why, sizeof why, reason), &d);
    }
}

static void answer_orphans(igw_engine *e)
{
    if (!e->db || e->fwd_orphans_busy || live_node_epoch(e) <= 0)
        return;
    char lapse[16];
    snprintf(lapse, sizeof lapse, "%u", e->cfg.node_lapse_ms);
    const char *v[OR__N] = {[OR_LAPSE] = lapse};
    e->fwd_orphans_busy = igw_db_exec(e->db, &st_orphans, v, NULL, NULL, on_orphans, e) == 0;
}

/* ---- wake-ups ------------------------------------------------------------------------ */

static void on_notify(void *arg, const char *channel, const char *payload)
{
    igw_engine *e = arg;
    /* NULL: the connection became ready, notifications may have been
     * missed; else only ours. */
    if (!channel || (payload && strcmp(payload, e->node_id) == 0))
        claim(e);
}

int live_forward_listen(igw_engine *e)
{
    return igw_db_listen(e->db, LIVE_FORWARD_CHANNEL, on_notify, e);
}

void live_forward_tick(igw_engine *e, int64_t now_ms)
{
    (void)now_ms;
    if (igw_clock_ms() - e->fwd_claimed_ms >= CLAIM_EVERY_MS) {
        claim(e);
        answer_orphans(e);
    }
}
