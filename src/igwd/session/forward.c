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
#include "session/leg.h"
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
/* A camera's message forwarded and not answered within this: the camera
 * is told to retry (its leg's node is busy or dying; its sweep follows). */
#define FORWARD_WAIT_MS 5000
/* The kinds of rows (schema/tables.igw forwards.kind). */
#define KIND_COMMAND "command"
#define KIND_UPLINK "uplink"
#define KIND_ANSWER "answer"

/* ---- the owner ------------------------------------------------------------------------- */

/* This node's epoch's rows, oldest first, deleted as they are read: each
 * runs once. Its commit skips the WAL flush: lost in a crash, the claim
 * dies with this epoch, whose rows nobody claims again. A command's row
 * comes with its acceptance. */
enum { CL_NODE, CL_EPOCH, CL__N };
enum {
    CL_COL_KIND, CL_COL_ENT, CL_COL_USER, CL_COL_EP, CL_COL_TOKEN, CL_COL_METHOD, CL_COL_FP, CL_COL_COMMAND,
    CL_COL_SID, CL_COL_ID, CL_COL_ORIGIN, CL_COL_ORIGIN_EPOCH, CL_COL_PID, CL_COL_DN, CL_COL_BODY, CL_COL_REPLY_TO,
    CL_COL_CODE, CL_COL_REASON
};
static const igw_db_stmt st_claim = {
    "igw_session_forwards_claim",
    "WITH f AS (DELETE FROM forwards WHERE forward_id IN ("
    "             SELECT forward_id FROM forwards WHERE owner_node = $1::text AND owner_epoch = $2::bigint "
    "             ORDER BY forward_id LIMIT " CLAIM_MAX_SQL " FOR UPDATE SKIP LOCKED) "
    "           RETURNING *) "
    "SELECT f.kind, c.enterprise_id, c.user_id, c.endpoint_id, c.msg_token, c.method, encode(c.fingerprint, 'hex'), "
    "       c.command::text, COALESCE(f.session_id, ''), f.forward_id, f.origin_node, f.origin_epoch, f.product_id, "
    "       f.device_name, f.body, f.reply_to, f.code, COALESCE(f.reason, ''), "
    "       set_config('synchronous_commit', 'off', true) "
    "FROM f LEFT JOIN commands c ON f.kind = '" KIND_COMMAND "' AND c.enterprise_id = f.enterprise_id "
    "       AND c.endpoint_id = f.endpoint_id AND c.msg_token = f.msg_token "
    "ORDER BY f.forward_id",
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

static void run_command(igw_engine *e, const PGresult *res, int i)
{
    if (PQgetisnull(res, i, CL_COL_COMMAND)) { /* written with its acceptance: cannot be */
        igw_log(IGW_LOG_ERROR, NULL, "session: forward %s has no acceptance: dropped", PQgetvalue(res, i, CL_COL_ID));
        return;
    }
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

/* ---- camera messages on another node's leg ------------------------------------------ */

/* A message handed to its leg's node, waiting for the answer. */
typedef struct live_fwd_wait {
    struct live_fwd_wait *next;
    int64_t forward_id;
    int64_t deadline_ms; /* igw_clock_ms */
    live_device_done done;
    void *ctx;
} live_fwd_wait;

/* The holder (another live node at its epoch) and the message in its
 * inbox, with the wake-up: no row when no other node holds the leg. */
enum { UP_LEG, UP_PID, UP_DN, UP_NODE, UP_EPOCH, UP_BODY, UP__N };
enum { UP_COL_ID };
static const igw_db_stmt st_uplink = {
    "igw_session_forward_uplink",
    "WITH l AS (SELECT l.owner_node, l.owner_epoch FROM legs l JOIN nodes n ON n.node_id = l.owner_node "
    "             AND n.epoch = l.owner_epoch "
    "           WHERE l.leg_id = $1::text AND l.product_id = $2::text AND l.device_name = $3::text "
    "             AND l.owner_node <> $4::text AND set_config('synchronous_commit', 'off', true) IS NOT NULL), "
    "f AS (INSERT INTO forwards (kind, owner_node, owner_epoch, session_id, origin_node, origin_epoch, product_id, "
    "                            device_name, body) "
    "      SELECT '" KIND_UPLINK "', l.owner_node, l.owner_epoch, $1::text, $4::text, $5::bigint, $2::text, "
    "             $3::text, $6::text FROM l RETURNING forward_id, owner_node), "
    "w AS (SELECT pg_notify('" LIVE_FORWARD_CHANNEL "', f.owner_node) FROM f) "
    "SELECT f.forward_id, (SELECT count(*) FROM w) FROM f",
    UP__N};

/* The holder's answer, in the inbox of the node the message reached. */
enum { AN_NODE, AN_EPOCH, AN_REPLY_TO, AN_CODE, AN_REASON, AN_BODY, AN__N };
static const igw_db_stmt st_answer = {
    "igw_session_forward_answer",
    "WITH f AS (INSERT INTO forwards (kind, owner_node, owner_epoch, reply_to, code, reason, body) "
    "           SELECT '" KIND_ANSWER "', $1::text, $2::bigint, $3::bigint, $4::bigint, $5::text, $6::text "
    "           WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL RETURNING owner_node) "
    "SELECT pg_notify('" LIVE_FORWARD_CHANNEL "', f.owner_node) FROM f",
    AN__N};

/* A message being handed over: answered here when nobody else holds its
 * leg, so its copy is kept until the statement's answer. */
typedef struct uplink_out {
    igw_engine *e;
    live_device_done done;
    void *ctx;
    igw_engine_uplink u; /* its strings point into buf */
    char buf[];
} uplink_out;

/* Answers u here as its leg's holder (live_uplink), through done. */
static void run_here(igw_engine *e, const igw_engine_uplink *u, live_device_done done, void *ctx)
{
    const char *reason = "", *data = NULL;
    size_t len = 0;
    live_leg *ready = NULL;
    int cls = live_uplink(e, u, &reason, &data, &len, &ready);
    done(ctx, cls, reason, data, len); /* copies data: the viewers' answers below reuse e->jw */
    if (ready)
        live_legs_source_ready(e, ready);
}

static void on_uplink_sent(void *arg, const PGresult *res, const char *err)
{
    uplink_out *x = arg;
    igw_engine *e = x->e;
    live_fwd_wait *w = NULL;
    if (!res) {
        igw_log(IGW_LOG_WARN, NULL, "session: %s/%s's %.*s on leg %.*s not handed over: %s", x->u.product_id,
                x->u.device_name, (int)x->u.method.len, x->u.method.ptr, (int)x->u.session_id.len,
                x->u.session_id.ptr, err);
        x->done(x->ctx, IGW_ERR_UNAVAILABLE, "busy, retry later", NULL, 0);
    } else if (PQntuples(res) != 1) {
        run_here(e, &x->u, x->done, x->ctx); /* no other node holds it: unknown here too */
    } else if (!(w = calloc(1, sizeof *w))) {
        x->done(x->ctx, IGW_ERR_INTERNAL, "out of memory", NULL, 0); /* its answer finds nobody waiting */
    } else {
        *w = (live_fwd_wait){.next = e->fwd_waits, .forward_id = strtoll(PQgetvalue(res, 0, UP_COL_ID), NULL, 10),
                             .deadline_ms = igw_clock_ms() + FORWARD_WAIT_MS, .done = x->done, .ctx = x->ctx};
        e->fwd_waits = w;
    }
    free(x);
}

void live_forward_uplink(igw_engine *e, const igw_engine_uplink *u, live_device_done done, void *ctx)
{
    int64_t epoch = live_node_epoch(e);
    if (!e->db || epoch <= 0) { /* without an epoch no answer could reach this node */
        run_here(e, u, done, ctx);
        return;
    }
    uplink_out *x = malloc(sizeof *x + live_uplink_size(u));
    if (!x) {
        done(ctx, IGW_ERR_INTERNAL, "out of memory", NULL, 0);
        return;
    }
    *x = (uplink_out){.e = e, .done = done, .ctx = ctx};
    live_uplink_copy(&x->u, x->buf, u);
    /* The message as the device sent it (the edge's strict decoder passed
     * it): the holder decodes it again. */
    igw_DeviceMessage dm = {.has = IGW_DeviceMessage__REQUIRED | IGW_DeviceMessage_sessionId,
                            .method = x->u.method, .msgToken = x->u.msg_token, .sessionId = x->u.session_id,
                            .params = x->u.params, .code = x->u.code, .data = x->u.data};
    dm.has |= (x->u.params.ptr ? IGW_DeviceMessage_params : 0) | (x->u.code ? IGW_DeviceMessage_code : 0) |
              (x->u.data.ptr ? IGW_DeviceMessage_data : 0);
    igw_jw_reset(&e->jw);
    igw_encode_DeviceMessage(&e->jw, &dm);
    igw_jw_raw(&e->jw, "", 1); /* NUL: a C string parameter */
    char sid[LIVE_ID_MAX + 1], ep[24];
    snprintf(sid, sizeof sid, "%s", x->u.session_id.ptr);
    snprintf(ep, sizeof ep, "%" PRId64, epoch);
    const char *v[UP__N] = {[UP_LEG] = sid,        [UP_PID] = x->u.product_id, [UP_DN] = x->u.device_name,
                            [UP_NODE] = e->node_id, [UP_EPOCH] = ep,            [UP_BODY] = e->jw.buf};
    if (igw_jw_status(&e->jw) || igw_db_exec(e->db, &st_uplink, v, NULL, NULL, on_uplink_sent, x) != 0) {
        done(ctx, IGW_ERR_UNAVAILABLE, "busy, retry later", NULL, 0);
        free(x);
    }
}

/* The holder's answer, written back to the node the message reached. */
typedef struct answer_out {
    igw_engine *e;
    char origin[IGW_NODE_ID_MAX + 1], epoch[24], reply_to[24];
} answer_out;

static void on_answered(void *arg, const PGresult *res, const char *err)
{
    answer_out *x = arg;
    if (!res) /* that node's wait ends with unavailable: the camera retries */
        igw_log(IGW_LOG_WARN, NULL, "session: answer to forward %s for node %s not written: %s", x->reply_to,
                x->origin, err);
    free(x);
}

static void answer_back(void *ctx, int cls, const char *reason, const char *data, size_t len)
{
    answer_out *x = ctx;
    igw_engine *e = x->e;
    char code[16];
    snprintf(code, sizeof code, "%d", cls);
    char *body = data ? strndup(data, len) : NULL;
    const char *v[AN__N] = {[AN_NODE] = x->origin, [AN_EPOCH] = x->epoch, [AN_REPLY_TO] = x->reply_to,
                            [AN_CODE] = code, [AN_REASON] = reason ? reason : "", [AN_BODY] = body};
    if ((data && !body) || igw_db_exec(e->db, &st_answer, v, NULL, NULL, on_answered, x) != 0) {
        igw_log(IGW_LOG_WARN, NULL, "session: answer to forward %s for node %s not sent", x->reply_to, x->origin);
        free(x);
    }
    free(body);
}

/* A camera's message on a leg of this node, received by another. */
static void run_uplink(igw_engine *e, const PGresult *res, int i)
{
    answer_out *x = calloc(1, sizeof *x);
    if (!x) {
        igw_log(IGW_LOG_ERROR, NULL, "session: forward %s dropped: out of memory", PQgetvalue(res, i, CL_COL_ID));
        return;
    }
    x->e = e;
    snprintf(x->origin, sizeof x->origin, "%s", PQgetvalue(res, i, CL_COL_ORIGIN));
    snprintf(x->epoch, sizeof x->epoch, "%s", PQgetvalue(res, i, CL_COL_ORIGIN_EPOCH));
    snprintf(x->reply_to, sizeof x->reply_to, "%s", PQgetvalue(res, i, CL_COL_ID));
    const char *got = PQgetvalue(res, i, CL_COL_BODY);
    igw_arena arena;
    igw_arena_init(&arena, ARENA_LIMIT);
    igw_json j;
    igw_DeviceMessage dm;
    igw_json_init(&j, got, strlen(got), &arena, IGW_JSON_MAX_DEPTH);
    if (igw_decode_DeviceMessage(&j, &dm) != 0 || igw_json_finish(&j) != 0 || !(dm.has & IGW_DeviceMessage_sessionId)) {
        igw_log(IGW_LOG_ERROR, NULL, "session: forward %s does not decode (%s at %s)", x->reply_to,
                j.reason ? j.reason : "?", j.path);
        answer_back(x, IGW_ERR_INTERNAL, "internal error", NULL, 0);
    } else {
        igw_engine_uplink u = {
            .product_id = PQgetvalue(res, i, CL_COL_PID), .device_name = PQgetvalue(res, i, CL_COL_DN),
            .method = dm.method, .msg_token = dm.msgToken, .session_id = dm.sessionId,
            .params = dm.has & IGW_DeviceMessage_params ? dm.params : (igw_str){NULL, 0},
            .code = dm.has & IGW_DeviceMessage_code ? dm.code : 0,
            .data = dm.has & IGW_DeviceMessage_data ? dm.data : (igw_str){NULL, 0}};
        run_here(e, &u, answer_back, x); /* never handed on again: the leg left meanwhile is unknown */
    }
    igw_arena_free(&arena);
}

/* The holder's answer to a message this node handed over. */
static void run_answer(igw_engine *e, const PGresult *res, int i)
{
    int64_t id = strtoll(PQgetvalue(res, i, CL_COL_REPLY_TO), NULL, 10);
    for (live_fwd_wait **p = &e->fwd_waits; *p; p = &(*p)->next) {
        live_fwd_wait *w = *p;
        if (w->forward_id != id)
            continue;
        *p = w->next;
        const char *data = PQgetisnull(res, i, CL_COL_BODY) ? NULL : PQgetvalue(res, i, CL_COL_BODY);
        int cls = (int)strtol(PQgetvalue(res, i, CL_COL_CODE), NULL, 10);
        if (cls < 0 || cls >= IGW_ERR__COUNT)
            cls = IGW_ERR_INTERNAL;
        w->done(w->ctx, cls, PQgetvalue(res, i, CL_COL_REASON), data, data ? strlen(data) : 0);
        free(w);
        return;
    }
    /* overdue: the camera was told to retry already */
}

static void run_one(igw_engine *e, const PGresult *res, int i)
{
    const char *kind = PQgetvalue(res, i, CL_COL_KIND);
    if (!strcmp(kind, KIND_COMMAND))
        run_command(e, res, i);
    else if (!strcmp(kind, KIND_UPLINK))
        run_uplink(e, res, i);
    else if (!strcmp(kind, KIND_ANSWER))
        run_answer(e, res, i);
    else
        igw_log(IGW_LOG_ERROR, NULL, "session: forward %s of unknown kind %s dropped", PQgetvalue(res, i, CL_COL_ID),
                kind);
}

static void expire_waits(igw_engine *e, int64_t now_ms)
{
    for (live_fwd_wait **p = &e->fwd_waits; *p;) {
        live_fwd_wait *w = *p;
        if (now_ms < w->deadline_ms) {
            p = &w->next;
            continue;
        }
        *p = w->next;
        w->done(w->ctx, IGW_ERR_UNAVAILABLE, "the leg's node did not answer, retry", NULL, 0);
        free(w);
    }
}

void live_forward_stop(igw_engine *e)
{
    while (e->fwd_waits) {
        live_fwd_wait *w = e->fwd_waits;
        e->fwd_waits = w->next;
        w->done(w->ctx, IGW_ERR_UNAVAILABLE, "this node is stopping, retry", NULL, 0);
        free(w);
    }
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

/* Forwards nobody will claim: their node's epoch is not a live node's.
 * A command's is answered once its session has ended (its owner's epoch
 * was swept: nodeRestarted, nodeLost), an open's (no session yet) at once:
 * each gets its result, never hangs. A camera's message and an answer are
 * dropped: the node waiting for the answer tells the camera to retry.
 * Deleted as read: any node answers each once. */
enum { OR_LAPSE, OR__N };
enum { OR_COL_KIND, OR_COL_SID, OR_COL_EP, OR_COL_TOKEN, OR_COL_METHOD, OR_COL_REASON };
static const igw_db_stmt st_orphans = {
    "igw_session_forwards_orphans",
    "WITH f AS (DELETE FROM forwards WHERE forward_id IN ("
    "             SELECT f.forward_id FROM forwards f LEFT JOIN sessions s ON s.session_id = f.session_id "
    "             WHERE NOT " LIVE_SQL_NODE_UP("f.owner_node", "f.owner_epoch", "$1") " "
    "               AND (f.kind <> '" KIND_COMMAND "' OR f.session_id IS NULL "
    "                    OR s.state = '" IGW_SQL_ST_ENDED "') "
    "             ORDER BY f.forward_id LIMIT " CLAIM_MAX_SQL " FOR UPDATE OF f SKIP LOCKED) "
    "           RETURNING forward_id, kind, enterprise_id, endpoint_id, msg_token, session_id) "
    "SELECT f.kind, COALESCE(f.session_id, ''), f.endpoint_id, f.msg_token, c.method, COALESCE(s.reason, '') "
    "FROM f LEFT JOIN commands c ON f.kind = '" KIND_COMMAND "' AND c.enterprise_id = f.enterprise_id "
    "       AND c.endpoint_id = f.endpoint_id AND c.msg_token = f.msg_token "
    "       LEFT JOIN sessions s ON s.session_id = f.session_id ORDER BY f.forward_id",
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
        if (strcmp(PQgetvalue(res, i, OR_COL_KIND), KIND_COMMAND) != 0 || PQgetisnull(res, i, OR_COL_METHOD))
            continue;
        const char *method = PQgetvalue(res, i, OR_COL_METHOD), *reason = PQgetvalue(res, i, OR_COL_REASON);
        const char *sid = PQgetvalue(res, i, OR_COL_SID);
        int op = igw_CommandMethod_of((igw_str){method, strlen(method)});
        char why[96];
        igw_ResultData d = {0};
        if (op >= 0 && sid[0])
            live_session_result(e, sid, PQgetvalue(res, i, OR_COL_EP), PQgetvalue(res, i, OR_COL_TOKEN),
                                (igw_CommandMethod)op, IGW_ERR_CONFLICT, live_op_ended_why(why, sizeof why, reason),
                                &d);
        else if (op >= 0) /* an open whose camera's node died before it ran: opened again, it finds none */
            live_session_result(e, "", PQgetvalue(res, i, OR_COL_EP), PQgetvalue(res, i, OR_COL_TOKEN),
                                (igw_CommandMethod)op, IGW_ERR_UNAVAILABLE,
                                "the node holding the camera's leg was lost, open again", &d);
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

/* The legs of an epoch that is not a live node's (lapsed, or this node
 * restarted), but this node's own: their rows deleted, each camera told
 * bye (the process that held the leg cannot), so it lets its peer go and
 * offers afresh to whichever node invites it next. Deleted as read: one
 * bye per leg, whichever node runs it. */
enum { OL_LAPSE, OL_NODE, OL_EPOCH, OL__N };
enum { OL_COL_LEG, OL_COL_PID, OL_COL_DN, OL_COL_OWNER };
static const igw_db_stmt st_orphan_legs = {
    "igw_session_legs_orphans",
    "DELETE FROM legs l WHERE NOT " LIVE_SQL_NODE_UP("l.owner_node", "l.owner_epoch", "$1") " "
    "  AND NOT (l.owner_node = $2::text AND l.owner_epoch = $3::bigint) "
    "RETURNING l.leg_id, l.product_id, l.device_name, l.owner_node",
    OL__N};

static void on_orphan_legs(void *arg, const PGresult *res, const char *err)
{
    igw_engine *e = arg;
    e->fwd_legs_busy = false;
    if (!res) {
        igw_log(IGW_LOG_WARN, NULL, "session: the legs of lost nodes not let go: %s", err);
        return;
    }
    for (int i = 0, n = PQntuples(res); i < n; i++) {
        const char *leg = PQgetvalue(res, i, OL_COL_LEG);
        int rc = live_leg_bye_to(e, leg, PQgetvalue(res, i, OL_COL_PID), PQgetvalue(res, i, OL_COL_DN),
                                 IGW_ByeReason_shutdown);
        igw_log(rc == 0 ? IGW_LOG_INFO : IGW_LOG_WARN, NULL, "session: leg %s of lost node %s: bye %s", leg,
                PQgetvalue(res, i, OL_COL_OWNER), rc == 0 ? "sent" : "not published (broker unreachable)");
    }
}

static void let_go_legs(igw_engine *e)
{
    int64_t epoch = live_node_epoch(e);
    if (!e->db || e->fwd_legs_busy || epoch <= 0)
        return;
    char lapse[16], ep[24];
    snprintf(lapse, sizeof lapse, "%u", e->cfg.node_lapse_ms);
    snprintf(ep, sizeof ep, "%" PRId64, epoch);
    const char *v[OL__N] = {[OL_LAPSE] = lapse, [OL_NODE] = e->node_id, [OL_EPOCH] = ep};
    e->fwd_legs_busy = igw_db_exec(e->db, &st_orphan_legs, v, NULL, NULL, on_orphan_legs, e) == 0;
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
    expire_waits(e, now_ms);
    if (igw_clock_ms() - e->fwd_claimed_ms >= CLAIM_EVERY_MS) {
        claim(e);
        answer_orphans(e);
        let_go_legs(e);
    }
}
