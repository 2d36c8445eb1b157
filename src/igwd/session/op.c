/* op.c - see op.h: a command on the engine's loop until it is answered. */
#include "session/op.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "event/rights.h"
#include "paths.h"
#include "session/session.h"


/* The acceptance of a command on an existing session: cm, its row when the
 * key is new and the endpoint live; the answer's columns: the endpoint
 * live, claimed (1 when cm wrote, plus `extra`), the key's earlier
 * fingerprint. */
enum { AC_ENT, AC_USER, AC_EP, AC_TOKEN, AC_METHOD, AC_SID, AC_FP, AC_CANON, AC__N };
enum { AC_COL_LIVE, AC_COL_CLAIMED, AC_COL_PRIOR };
#define ACCEPT_CM                                                                                                    \
    "cm AS (INSERT INTO commands (enterprise_id, endpoint_id, msg_token, user_id, method, session_id, "               \
    "                             fingerprint, command) "                                                            \
    "       SELECT $1::bigint, $3::text, $4::text, $2::bigint, $5::text, NULLIF($6::text, ''), "                    \
    "              decode($7::text, 'hex'), $8::jsonb WHERE " IGW_SQL_ENDPOINT_LIVE("$3::text", "$1::bigint", "$2::bigint", IGW_SQL_NOW_MS)    \
    "       ON CONFLICT (enterprise_id, endpoint_id, msg_token) DO NOTHING RETURNING 1) "
#define ACCEPT_ANSWER(extra)                                                                                         \
    "SELECT " IGW_SQL_ENDPOINT_LIVE("$3::text", "$1::bigint", "$2::bigint", IGW_SQL_NOW_MS) ", "                     \
    "       (SELECT count(*) FROM cm)" extra ", " IGW_SQL_PRIOR_FP("$1::bigint", "$3::text", "$4::text")
static const igw_db_stmt st_accept = {"igw_session_accept", "WITH " ACCEPT_CM ACCEPT_ANSWER(""), AC__N};

/* A session this node does not hold: whose it is, whether it lives, and
 * this command's earlier acceptance (its key's fingerprint), if any. */
enum { SR_SID, SR_ENT, SR_USER, SR_EP, SR_TOKEN, SR__N };
enum { SR_COL_STATE, SR_COL_NODE, SR_COL_EPOCH, SR_COL_REASON, SR_COL_PRIOR, SR_COL_OWNER_UP };
static const igw_db_stmt st_session_row = {
    "igw_session_row",
    "SELECT s.state, COALESCE(s.owner_node, ''), COALESCE(s.owner_epoch, 0), COALESCE(s.reason, ''), "
    IGW_SQL_PRIOR_FP("$2::bigint", "$4::text", "$5::text") ", "
    "       EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = s.owner_node AND n.epoch = s.owner_epoch) "
    "FROM sessions s "
    "WHERE s.session_id = $1::text AND s.enterprise_id = $2::bigint AND s.user_id = $3::bigint "
    "  AND s.endpoint_id = $4::text",
    SR__N};

void live_op_answer(live_op *o, int cls, const char *reason, const char *path, const char *prior)
{
    igw_engine_cmd_answer a = {.cls = cls, .reason = reason ? reason : "", .path = path ? path : "",
                               .prior_fp = prior};
    o->answer(o->ctx, &a);
    o->c = NULL;
    o->k = NULL;
}

static void seats_count(const igw_engine *e, int64_t ent, int64_t user, live_seats *n)
{
    *n = (live_seats){.node = e->nsessions + e->nseated};
    for (const live_session *s = e->sessions; s; s = s->next) {
        n->enterprise += s->enterprise_id == ent;
        n->user += s->enterprise_id == ent && s->user_id == user;
    }
    for (const live_op *o = e->seated; o; o = o->seat_next) {
        n->enterprise += o->enterprise_id == ent;
        n->user += o->enterprise_id == ent && o->user_id == user;
    }
}

bool live_op_seat(live_op *o)
{
    igw_engine *e = o->e;
    live_seats caps = {.node = e->cfg.max_sessions, .enterprise = e->cfg.max_sessions_per_enterprise,
                       .user = e->cfg.max_sessions_per_user},
               held;
    live_refusal r;
    seats_count(e, o->enterprise_id, o->user_id, &held);
    if (live_capacity_refuses(&caps, &held, &r)) {
        live_op_refuse_with(o, &r);
        return false;
    }
    o->seated = true;
    o->seat_prev = NULL;
    o->seat_next = e->seated;
    if (e->seated)
        e->seated->seat_prev = o;
    e->seated = o;
    e->nseated++;
    return true;
}

void live_op_free(live_op *o)
{
    if (o->seated) {
        igw_engine *e = o->e;
        if (o->seat_prev)
            o->seat_prev->seat_next = o->seat_next;
        else
            e->seated = o->seat_next;
        if (o->seat_next)
            o->seat_next->seat_prev = o->seat_prev;
        e->nseated--;
    }
    free(o->offer);
    free(o->capability);
    if (o->pdata)
        (o->pdata_free ? o->pdata_free : free)(o->pdata);
    free(o->ldata);
    free(o);
}

void live_op_refuse(live_op *o, int cls, const char *reason, const char *path)
{
    live_op_answer(o, cls, reason, path, NULL);
    live_op_free(o);
}

void live_op_refuse_with(live_op *o, const live_refusal *r)
{
    live_op_refuse(o, r->cls, r->reason, r->path);
}

void live_op_refuse_db(live_op *o, const char *err, bool write)
{
    igw_err cls = igw_db_error_class(err, write);
    igw_log(IGW_LOG_WARN, NULL, "session: %s: %s", o->token, err);
    live_op_refuse(o, cls,
                   cls == IGW_ERR_UNKNOWN_OUTCOME ? "outcome unknown; retry with the same msgToken"
                   : cls == IGW_ERR_INTERNAL      ? "internal error"
                                                  : "busy, retry later",
                   "");
}

bool live_op_row(live_op *o, const PGresult *res, const char *err, bool write)
{
    if (!res) {
        live_op_refuse_db(o, err, write);
        return false;
    }
    if (PQntuples(res) != 1) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "internal error", "");
        return false;
    }
    return true;
}


bool live_op_revision(live_op *o, const live_session *s, int64_t revision)
{
    if (revision == (int64_t)s->revision)
        return true;
    live_op_refuse(o, IGW_ERR_CONFLICT, "stale mediaRevision", IGW_PATH_command_params_mediaRevision);
    return false;
}

/* ---- the acceptance ---------------------------------------------------------------- */

const char *live_op_ended_why(char *buf, size_t n, const char *reason)
{
    snprintf(buf, n, "the session has ended%s%s%s", reason[0] ? " (" : "", reason, reason[0] ? ")" : "");
    return buf;
}

/* The session ended while the acceptance was written: the result says why. */
static void on_ended_row(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    (void)err;
    char why[96];
    live_op_ended_why(why, sizeof why, res && PQntuples(res) == 1 ? PQgetvalue(res, 0, SR_COL_REASON) : "");
    igw_ResultData d = {0};
    live_session_result(o->e, o->sid, o->endpoint, o->token, o->method, IGW_ERR_CONFLICT, why, &d);
    live_op_free(o);
}

static void run_accepted(live_op *o);

static void on_accept(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    if (!live_op_row(o, res, err, true))
        return;
    if (strcmp(PQgetvalue(res, 0, AC_COL_CLAIMED), "1") != 0) {
        if (!PQgetisnull(res, 0, AC_COL_PRIOR)) {
            live_op_answer(o, IGW_ERR_OK, NULL, NULL, PQgetvalue(res, 0, AC_COL_PRIOR));
            live_op_free(o);
        } else {
            live_op_refuse(o, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", IGW_PATH_endpointId);
        }
        return;
    }
    run_accepted(o);
}

/* Accepted: answered so, then its effect on the session (still live). */
static void run_accepted(live_op *o)
{
    live_op_answer(o, IGW_ERR_OK, NULL, NULL, NULL);
    live_session *s = live_session_find(o->e, o->sid);
    if (!s) { /* ended while the acceptance was written: its row says why */
        const char *v[SR__N] = {[SR_SID] = o->sid, [SR_ENT] = o->ent, [SR_USER] = o->user, [SR_EP] = o->endpoint,
                                [SR_TOKEN] = o->token};
        if (igw_db_exec(o->e->db, &st_session_row, v, NULL, NULL, on_ended_row, o) != 0)
            on_ended_row(o, NULL, "the database queue is full");
        return;
    }
    o->then(o, s);
    live_op_free(o);
}

void live_op_accept(live_op *o, live_op_then then)
{
    o->then = then;
    if (o->c->accepted) { /* on the node that received it (forward.h) */
        run_accepted(o);
        return;
    }
    const char *v[AC__N] = {[AC_ENT] = o->ent,     [AC_USER] = o->user,           [AC_EP] = o->endpoint,
                            [AC_TOKEN] = o->token, [AC_METHOD] = o->c->method,    [AC_SID] = o->sid,
                            [AC_FP] = o->c->fingerprint_hex, [AC_CANON] = o->c->canon};
    if (igw_db_exec(o->e->db, &st_accept, v, NULL, NULL, on_accept, o) != 0)
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- to the owner ---------------------------------------------------------------------- */

/* The acceptance (as st_accept), the owner's inbox row and its wake-up, in
 * one statement: all three commit together or none does. */
enum { FW_NODE = AC__N, FW_EPOCH, FW__N };
static const igw_db_stmt st_forward = {
    "igw_session_forward",
    "WITH " ACCEPT_CM ", "
    "fw AS (INSERT INTO forwards (owner_node, owner_epoch, enterprise_id, endpoint_id, msg_token, session_id) "
    "       SELECT $9::text, $10::bigint, $1::bigint, $3::text, $4::text, NULLIF($6::text, '') FROM cm RETURNING 1), "
    "wake AS (SELECT pg_notify('" LIVE_FORWARD_CHANNEL "', $9::text) FROM fw) "
    ACCEPT_ANSWER(" + 0 * (SELECT count(*) FROM wake)"),
    FW__N};

static void on_forwarded(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    if (!live_op_row(o, res, err, true))
        return;
    if (strcmp(PQgetvalue(res, 0, AC_COL_CLAIMED), "1") == 0) {
        live_op_answer(o, IGW_ERR_OK, NULL, NULL, NULL); /* accepted: the owner's result follows */
        live_op_free(o);
    } else if (!PQgetisnull(res, 0, AC_COL_PRIOR)) {
        live_op_answer(o, IGW_ERR_OK, NULL, NULL, PQgetvalue(res, 0, AC_COL_PRIOR)); /* the command room's replay */
        live_op_free(o);
    } else
        live_op_refuse(o, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", IGW_PATH_endpointId);
}

void live_op_forward(live_op *o, const char *owner_node, int64_t owner_epoch)
{
    char epoch[24];
    snprintf(epoch, sizeof epoch, "%" PRId64, owner_epoch);
    const char *v[FW__N] = {[AC_ENT] = o->ent,     [AC_USER] = o->user,
                            [AC_EP] = o->endpoint, [AC_TOKEN] = o->token,
                            [AC_METHOD] = o->c->method, [AC_SID] = o->sid,
                            [AC_FP] = o->c->fingerprint_hex, [AC_CANON] = o->c->canon,
                            [FW_NODE] = owner_node, [FW_EPOCH] = epoch};
    if (igw_db_exec(o->e->db, &st_forward, v, NULL, NULL, on_forwarded, o) != 0)
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- dispatch ------------------------------------------------------------------------ */

/* The session is not held here: the row says why. */
static void on_session_row(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    if (!res) {
        live_op_refuse_db(o, err, false);
        return;
    }
    if (PQntuples(res) != 1) {
        live_op_refuse(o, IGW_ERR_NOT_FOUND, "unknown session", IGW_PATH_command_sessionId);
        return;
    }
    bool ended = strcmp(PQgetvalue(res, 0, SR_COL_STATE), igw_sm_session.states[IGW_SESSION_ENDED]) == 0;
    const char *owner = PQgetvalue(res, 0, SR_COL_NODE);
    char why[96];
    if (o->c->accepted) { /* forwarded here and not held here (any more): never forwarded again */
        if (ended || strcmp(owner, o->e->node_id) == 0)
            live_op_refuse(o, IGW_ERR_CONFLICT, live_op_ended_why(why, sizeof why, PQgetvalue(res, 0, SR_COL_REASON)),
                           IGW_PATH_command_sessionId);
        else
            live_op_refuse(o, IGW_ERR_UNAVAILABLE, "the session is held by another node", IGW_PATH_command_sessionId);
        return;
    }
    if (ended && !PQgetisnull(res, 0, SR_COL_PRIOR)) {
        /* Accepted before the session ended (a receipt method's replay, a
         * leave that ended the leaver's own session): the replay rule holds
         * whatever the session became; the command room answers the replay
         * (its result redelivered when there is one) or the conflict. */
        live_op_answer(o, IGW_ERR_OK, NULL, NULL, PQgetvalue(res, 0, SR_COL_PRIOR));
        live_op_free(o);
        return;
    }
    if (ended || strcmp(owner, o->e->node_id) == 0) {
        /* Ended (its reason said: answeredElsewhere...), or this node's
         * from an earlier epoch (its sweep ends it). */
        live_op_refuse(o, IGW_ERR_CONFLICT, live_op_ended_why(why, sizeof why, PQgetvalue(res, 0, SR_COL_REASON)),
                       IGW_PATH_command_sessionId);
        return;
    }
    if (!igw_db_true(res, 0, SR_COL_OWNER_UP)) { /* its node restarted since: the sweep ends it */
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "the session is held by another node", IGW_PATH_command_sessionId);
        return;
    }
    live_op_forward(o, owner, strtoll(PQgetvalue(res, 0, SR_COL_EPOCH), NULL, 10));
}

void live_command(igw_engine *e, const igw_engine_cmd *c, void (*ans)(void *ctx, const igw_engine_cmd_answer *a),
                  void *ctx)
{
    live_op *o = calloc(1, sizeof *o);
    if (!o) {
        igw_engine_cmd_answer a = {.cls = IGW_ERR_INTERNAL, .reason = "out of memory", .path = ""};
        ans(ctx, &a);
        return;
    }
    o->e = e;
    o->answer = ans;
    o->ctx = ctx;
    o->c = c;
    o->k = c->command;
    o->method = c->command->method;
    o->enterprise_id = c->enterprise_id;
    o->user_id = c->user_id;
    snprintf(o->ent, sizeof o->ent, "%" PRId64, c->enterprise_id);
    snprintf(o->user, sizeof o->user, "%" PRId64, c->user_id);
    snprintf(o->endpoint, sizeof o->endpoint, "%s", c->endpoint_id);
    snprintf(o->token, sizeof o->token, "%s", c->msg_token);
    igw_CommandMethod_session_fn handler = igw_CommandMethod_sessions[o->method];
    if (!handler) {
        live_op_refuse(o, IGW_ERR_NOT_IMPLEMENTED, "this command method is not implemented yet", IGW_PATH_command_method);
        return;
    }
    if (!e->db) {
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "this node serves no sessions", "");
        return;
    }
    if (!(o->k->has & IGW_Command_sessionId)) { /* open: its handler finds the target */
        handler(o);
        return;
    }
    snprintf(o->sid, sizeof o->sid, "%.*s", (int)o->k->sessionId.len, o->k->sessionId.ptr);
    live_session *s = live_session_find(e, o->sid);
    if (!s) { /* not held here: the row says why */
        const char *v[SR__N] = {[SR_SID] = o->sid, [SR_ENT] = o->ent, [SR_USER] = o->user, [SR_EP] = o->endpoint,
                                [SR_TOKEN] = o->token};
        if (igw_db_exec(e->db, &st_session_row, v, NULL, NULL, on_session_row, o) != 0)
            live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    if ((s->enterprise_id != o->enterprise_id || s->user_id != o->user_id || strcmp(s->endpoint, o->endpoint)) &&
        !live_transfer_names(o->k, o->enterprise_id, o->user_id, s->enterprise_id, s->user_id, s->endpoint)) {
        live_op_refuse(o, IGW_ERR_NOT_FOUND, "unknown session", IGW_PATH_command_sessionId); /* someone else's */
        return;
    }
    if (s->state == IGW_SESSION_RINGING && o->method != IGW_CommandMethod_interaction_control &&
        o->method != IGW_CommandMethod_interaction_end) {
        /* Nothing of it exists but its ring: the decision comes first. */
        live_op_refuse(o, IGW_ERR_CONFLICT, "the session is ringing: accept it first (interaction.control)",
                       IGW_PATH_command_sessionId);
        return;
    }
    handler(o);
}
