/* interaction.c - the application transport routes (area B):
 * endpoints, commands, events. Rules are in schema/interaction.igw and were
 * applied by the strict stage; the caller is known (login.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/sha.h>

#include "api.h"
#include "routes/context.h"
#include "base64.h"
#include "clock.h"
#include "devauth.h"
#include "routes/routes.h"
#include "command/modelcache.h"
#include "core/log.h"
#include "event/outbox.h"
#include "thingmodel.h"

#define ENDPOINT_TTL_MS INT64_C(3600000) /* one hour, fixed; never renewed */
#define ENDPOINT_ID_BYTES 18             /* 144 random bits, 24 base64url characters */

/* ---- /endpoints/register ---------------------------------------------------------- */

static const igw_db_stmt stmt_endpoint = {
    "igw_endpoint_register",
    "INSERT INTO endpoints (endpoint_id, enterprise_id, user_id, expires_at_ms) "
    "VALUES ($1, $2::bigint, $3::bigint, $4::bigint)",
    4};

typedef struct registration {
    igw_exchange *ex;
    char id[40];
    int64_t expires_at;
} registration;

static void on_endpoint(void *arg, const PGresult *res, const char *err)
{
    registration *r = arg;
    if (!res) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(r->ex), "register: %s", err);
        igw_http_reply_error(r->ex, IGW_ERR_INTERNAL, "could not register the endpoint", "");
    } else {
        igw_RegisterData d = {.endpointId = {r->id, strlen(r->id)}, .expiresAt = r->expires_at};
        igw_encode_RegisterData(igw_http_data(r->ex), &d);
        igw_http_reply_data(r->ex);
    }
    free(r);
}

void igw_route_endpoints_register(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    (void)req;
    igw_worker *w = igw_http_state(ex);
    registration *r = calloc(1, sizeof *r);
    unsigned char raw[ENDPOINT_ID_BYTES];
    if (!r || getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw ||
        igw_b64_encode(IGW_B64_URL, raw, sizeof raw, r->id, sizeof r->id) < 0) {
        free(r);
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "could not register the endpoint", "");
        return;
    }
    r->ex = ex;
    r->expires_at = igw_wall_ms() + ENDPOINT_TTL_MS;
    char ent[24], user[24], exp[24];
    snprintf(ent, sizeof ent, "%lld", (long long)who->enterprise_id);
    snprintf(user, sizeof user, "%lld", (long long)who->user_id);
    snprintf(exp, sizeof exp, "%lld", (long long)r->expires_at);
    const char *values[4] = {r->id, ent, user, exp};
    if (igw_db_exec(w->db[0], &stmt_endpoint, values, NULL, NULL, on_endpoint, r)) {
        free(r);
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    }
}

/* ---- /commands ---------------------------------------------------------------------
 * In order (spec): endpoint authentication, method known and implemented,
 * persistent idempotency by (enterprise, endpoint, msgToken) with the
 * SHA-256 of the canonical command; then, for a first acceptance, the
 * target's rights and the thing model; the acceptance row (and the
 * downlink's row) commit before the reply, and the downlink is published
 * after it. Every accepted command gets exactly one interaction.result,
 * from the device's reply or the deadline (see edge.c and the sweeper).
 *
 * Two batched statements (igw_db_exec_row: the commands of a worker that
 * arrive together share one execution): a read (endpoint, stored
 * fingerprint, rights and the product's model), then, for those the model
 * accepts, the write, which checks endpoint, idempotency, rights and the
 * model's version again and inserts in the same statement, so its answer is
 * exact even if something changed since the read. One commit per batch.
 *
 * Fast path: each worker keeps parsed models by product with the product
 * row's version (modelcache.h). When the cached model accepts the command,
 * only the write is sent, with that version; the write refuses (inserts
 * nothing, says so) when the product's row is no longer that version, and
 * the command takes the slow path. The write's checks come in the read's
 * order (endpoint, idempotency, rights, then the version), so every answer
 * it gives is the one the slow path would give; a command the cached model
 * rejects takes the slow path too, whose earlier checks (replay, conflict,
 * rights) come first. The read ships the model only when its version is not
 * the one the worker has. */

/* The version of a product row `pr`: its xmin (the transaction that wrote
 * this row version; every UPDATE writes a new one) and its place. A stale
 * match would need a later version of the row at the same place written by
 * a transaction id equal modulo 2^32 to the cached one. */
#define MODEL_VERSION "(pr.xmin::text || '/' || pr.ctid::text)"

/* $1 endpoint, $2 enterprise, $3 user, $4 msgToken, $5 productID, $6
 * deviceName, $7 now (ms), $8 the model version the worker has (NULL: none).
 * Per row: endpoint live, stored fingerprint (hex) or NULL, rights (NULL:
 * none; an unknown device looks the same), the model's version, the model
 * (NULL when its version is $8). */
static const igw_db_stmt stmt_cmd_read = {
    "igw_cmd_read",
    "SELECT EXISTS (SELECT 1 FROM endpoints p WHERE p.endpoint_id = i.ep AND p.enterprise_id = i.ent "
    "               AND p.user_id = i.usr AND p.expires_at_ms > i.now_ms), "
    "       (SELECT encode(k.fingerprint, 'hex') FROM commands k "
    "        WHERE k.enterprise_id = i.ent AND k.endpoint_id = i.ep AND k.msg_token = i.token), "
    "       t.ok, t.ver, CASE WHEN t.ver = i.known THEN NULL ELSE t.model::text END "
    "FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], "
    "            $8::text[]) WITH ORDINALITY AS i(ep, ent, usr, token, pid, dn, now_ms, known, ord) "
    "LEFT JOIN LATERAL (SELECT true AS ok, " MODEL_VERSION " AS ver, pr.model AS model FROM devices d "
    "                   JOIN products pr ON pr.product_id = d.product_id "
    "                   WHERE d.product_id = i.pid AND d.device_name = i.dn AND d.enterprise_id = i.ent "
    "                     AND (d.owner_user_id = i.usr OR EXISTS (SELECT 1 FROM device_grants g "
    "                          WHERE g.product_id = d.product_id AND g.device_name = d.device_name "
    "                            AND g.user_id = i.usr))) t ON true "
    "ORDER BY i.ord",
    8};

/* $1 endpoint, $2 enterprise, $3 user, $4 msgToken, $5 method, $6
 * fingerprint (hex), $7 command, $8 productID, $9 deviceName, $10 device
 * token, $11 deadline (ms), $12 now (ms), $13 the version of the model the
 * command was checked against. Of the rows that pass (endpoint live, no
 * stored command, rights, the product's model still at that version), the
 * first of each key in the batch inserts (ON CONFLICT DO NOTHING: a
 * concurrent twin elsewhere wins or loses on the unique key); a later row
 * of the same key sees the winner's fingerprint as if it had come after it.
 * Per row: endpoint live, rights, accepted, fingerprint stored before it
 * (NULL: none), model current. Accepted false with the rest passing: a twin
 * in another transaction won, not yet visible to this snapshot; the caller
 * asks again. */
static const igw_db_stmt stmt_cmd_write = {
    "igw_cmd_write",
    "WITH c AS MATERIALIZED (SELECT i.*, "
    "    EXISTS (SELECT 1 FROM endpoints p WHERE p.endpoint_id = i.ep AND p.enterprise_id = i.ent "
    "            AND p.user_id = i.usr AND p.expires_at_ms > i.now_ms) AS ep_ok, "
    "    (SELECT encode(k.fingerprint, 'hex') FROM commands k "
    "     WHERE k.enterprise_id = i.ent AND k.endpoint_id = i.ep AND k.msg_token = i.token) AS prior, "
    "    EXISTS (SELECT 1 FROM devices d WHERE d.product_id = i.pid AND d.device_name = i.dn "
    "            AND d.enterprise_id = i.ent AND (d.owner_user_id = i.usr OR EXISTS (SELECT 1 FROM device_grants g "
    "            WHERE g.product_id = d.product_id AND g.device_name = d.device_name AND g.user_id = i.usr))) "
    "      AS rights, "
    "    EXISTS (SELECT 1 FROM products pr WHERE pr.product_id = i.pid AND " MODEL_VERSION " = i.ver) AS model_ok "
    "  FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::jsonb[], "
    "              $8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::text[]) "
    "       WITH ORDINALITY AS i(ep, ent, usr, token, method, fp, command, pid, dn, dtoken, deadline, now_ms, ver, "
    "                            ord)), "
    "w AS (SELECT DISTINCT ON (ent, ep, token) ord FROM c WHERE ep_ok AND prior IS NULL AND rights AND model_ok "
    "      ORDER BY ent, ep, token, ord), "
    "ins AS (INSERT INTO commands (enterprise_id, endpoint_id, msg_token, user_id, method, session_id, "
    "                              fingerprint, command) "
    "        SELECT c.ent, c.ep, c.token, c.usr, c.method, NULL, decode(c.fp, 'hex'), c.command "
    "        FROM c JOIN w USING (ord) ORDER BY c.ent, c.ep, c.token "
    "        ON CONFLICT (enterprise_id, endpoint_id, msg_token) DO NOTHING "
    "        RETURNING enterprise_id, endpoint_id, msg_token), "
    "dc AS (INSERT INTO device_commands (product_id, device_name, device_token, enterprise_id, endpoint_id, "
    "                                    msg_token, method, deadline_ms) "
    "       SELECT c.pid, c.dn, c.dtoken, c.ent, c.ep, c.token, c.method, c.deadline "
    "       FROM c JOIN w USING (ord) "
    "       JOIN ins ON ins.enterprise_id = c.ent AND ins.endpoint_id = c.ep AND ins.msg_token = c.token "
    "       RETURNING enterprise_id, endpoint_id, msg_token), "
    "acc AS (SELECT c.ord, c.ent, c.ep, c.token, c.fp FROM c JOIN w USING (ord) "
    "        JOIN dc ON dc.enterprise_id = c.ent AND dc.endpoint_id = c.ep AND dc.msg_token = c.token) "
    "SELECT c.ep_ok, c.rights, a.ord IS NOT NULL, "
    "       COALESCE(c.prior, (SELECT x.fp FROM acc x WHERE x.ent = c.ent AND x.ep = c.ep AND x.token = c.token "
    "                          AND x.ord < c.ord)), "
    "       c.model_ok "
    "FROM c LEFT JOIN acc a ON a.ord = c.ord ORDER BY c.ord",
    13};

#define CMD_WRITE_RETRIES 3 /* a twin committed elsewhere, not yet visible: ask again */
#define CMD_STALE_RETRIES 3 /* the model changed under the command: check it again */

typedef struct cmd {
    igw_exchange *ex;
    igw_worker *w;
    const igw_CommandsRequest *rq;
    igw_principal who;
    unsigned char md[32]; /* SHA-256 of the canonical command */
    char fp[65];          /* the same, hex, as SQL compares it */
    char *canon; /* canonical command, NUL-terminated */
    char ent[24], user[24], now[24];
    char endpoint[72]; /* EndpointId: an Ident of at most 64 bytes */
    char pid[IGW_DEVAUTH_NAME_MAX + 1], dn[IGW_DEVAUTH_NAME_MAX + 1];
    char *msg_token; /* the command's, NUL-terminated */
    char token[40]; /* the downlink's msgToken */
    int64_t deadline_ms;
    char deadline[24]; /* the same, as the write's parameter */
    char *downlink;  /* the MQTT payload */
    size_t downlink_len;
    unsigned retries, stale, rereads;
    char known[IGW_MODELCACHE_VERSION_MAX + 1]; /* the cached version sent with the read; "" none */
    char ver[IGW_MODELCACHE_VERSION_MAX + 1];   /* the version the write expects */
    igw_arena arena; /* check reasons (and a model that could not be cached) */
} cmd;

static void cmd_free(cmd *c)
{
    free(c->canon);
    free(c->msg_token);
    free(c->downlink);
    igw_arena_free(&c->arena);
    free(c);
}

static void reply_commands(igw_exchange *ex, igw_str token, bool replay)
{
    igw_CommandsData d = {.accepted = true, .msgToken = token, .replay = replay};
    igw_encode_CommandsData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

typedef struct replay_call {
    igw_exchange *ex;
    igw_str token; /* in the exchange's arena */
} replay_call;

static void on_replayed(void *arg, const igw_outbox_result *r)
{
    replay_call *rc = arg;
    if (r->status != IGW_OUTBOX_OK)
        igw_log(IGW_LOG_WARN, igw_http_request_id(rc->ex), "commands: replay: %s", r->err ? r->err : "no such command");
    /* The HTTP answer is the acceptance only; the result comes as an event
     * (the same delivery, a new one after an ack, or none once expired). */
    reply_commands(rc->ex, rc->token, true);
    free(rc);
}

/* The same token again: a replay of the same command (spec replay rule 2:
 * the result is delivered again per the outbox's rules), or a conflict. */
static void idempotent(cmd *c, const char *stored_fp)
{
    if (strcmp(stored_fp, c->fp) != 0) {
        igw_http_reply_error(c->ex, IGW_ERR_CONFLICT, "this msgToken was used for a different command",
                             "/command/msgToken");
        return;
    }
    const igw_Command *k = &c->rq->command;
    igw_arena *a = igw_http_arena(c->ex);
    replay_call *rc = malloc(sizeof *rc);
    char *method = igw_arena_strndup(a, igw_CommandMethod_names[k->method].ptr, igw_CommandMethod_names[k->method].len);
    char *session = k->has & IGW_Command_sessionId ? igw_arena_strndup(a, k->sessionId.ptr, k->sessionId.len) : NULL;
    igw_outbox_command oc = {.enterprise_id = c->who.enterprise_id, .user_id = c->who.user_id,
                             .endpoint_id = c->endpoint, .session_id = session, .method = method,
                             .msg_token = c->msg_token, .fingerprint = c->md, .fingerprint_len = sizeof c->md};
    if (!rc || !method || (k->has & IGW_Command_sessionId && !session)) {
        free(rc);
        igw_http_reply_error(c->ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    rc->ex = c->ex;
    rc->token = k->msgToken;
    if (igw_outbox_replay(c->w->db[0], &oc, on_replayed, rc)) {
        free(rc);
        igw_http_reply_error(c->ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    }
}

static int submit_write(cmd *c);
static int submit_read(cmd *c);

/* The command takes the slow path (again): 0, or -1 with the reply given. */
static int slow_path(cmd *c)
{
    const char *v = NULL;
    c->known[0] = '\0';
    if (c->rq->command.has & IGW_Command_target && igw_modelcache_get(c->w->models, c->pid, &v))
        snprintf(c->known, sizeof c->known, "%s", v);
    if (submit_read(c) == 0)
        return 0;
    igw_http_reply_error(c->ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    return -1;
}

/* The method's name, as device_commands stores it. */
static void method_name(const cmd *c, char out[64])
{
    const igw_str *me = &igw_CommandMethod_names[c->rq->command.method];
    snprintf(out, 64, "%.*s", (int)me->len, me->ptr);
}

/* Tells results.c, through the process's pending map, which command the
 * device's reply will answer, so it need not read it back. Best effort: a
 * command not remembered is looked up. */
static void remember(const cmd *c)
{
    char method[64];
    method_name(c, method);
    igw_pending_cmd pc = {.product_id = c->pid, .device_name = c->dn, .device_token = c->token,
                          .endpoint_id = c->endpoint, .msg_token = c->msg_token, .method = method,
                          .enterprise_id = c->ent, .deadline_ms = c->deadline_ms};
    (void)igw_pending_put(c->w->app->pending, &pc, igw_wall_ms());
}

static void on_cmd_write(void *arg, const PGresult *res, int row, const char *err)
{
    cmd *c = arg;
    if (!res) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(c->ex), "commands: acceptance failed: %s", err);
        /* A lost connection may have committed it: the client retries with
         * the same token and learns the outcome. */
        if (igw_db_not_sent(err)) /* nothing written: the client may simply retry */
            igw_http_reply_error(c->ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        else if (igw_db_outcome_unknown(err))
            igw_http_reply_error(c->ex, IGW_ERR_UNKNOWN_OUTCOME, "outcome unknown; retry with the same msgToken", "");
        else
            igw_http_reply_error(c->ex, IGW_ERR_INTERNAL, "the command could not be recorded", "");
    } else if (PQgetvalue(res, row, 0)[0] != 't') { /* expired since the read (or unknown: fast path) */
        igw_http_reply_error(c->ex, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", "/endpointId");
    } else if (!PQgetisnull(res, row, 3)) {
        idempotent(c, PQgetvalue(res, row, 3)); /* a twin came first */
    } else if (PQgetvalue(res, row, 1)[0] != 't') { /* revoked since the read (or none: fast path) */
        igw_http_reply_error(c->ex, IGW_ERR_PERMISSION, "no rights on the target device", "/command/target");
    } else if (PQgetvalue(res, row, 4)[0] != 't') { /* the model changed since it was checked */
        if (c->stale++ < CMD_STALE_RETRIES) {
            if (slow_path(c) == 0)
                return;
        } else {
            igw_http_reply_error(c->ex, IGW_ERR_UNAVAILABLE, "try again later", "");
        }
    } else if (PQgetvalue(res, row, 2)[0] == 't') {
        igw_mqtt *m = atomic_load(&c->w->app->mqtt);
        const igw_Command *k = &c->rq->command;
        remember(c); /* before the publish: the reply may come at once */
        char topic[256];
        snprintf(topic, sizeof topic, "$thing/down/%s/%s/%s",
                 k->method == IGW_CommandMethod_device_action ? "action" : "property", c->pid, c->dn);
        /* Not published (broker away): the deadline turns it into a failure result. */
        if (!m || igw_mqtt_publish(m, topic, c->downlink, c->downlink_len, 1) != 0)
            igw_log(IGW_LOG_WARN, igw_http_request_id(c->ex), "commands: downlink not published (broker unreachable)");
        reply_commands(c->ex, k->msgToken, false);
    } else if (c->retries++ < CMD_WRITE_RETRIES) { /* a twin elsewhere won, not visible yet */
        if (submit_write(c) == 0)
            return;
        igw_http_reply_error(c->ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    } else {
        igw_http_reply_error(c->ex, IGW_ERR_UNAVAILABLE, "try again later", "");
    }
    cmd_free(c);
}

static int submit_write(cmd *c)
{
    char method[64];
    method_name(c, method);
    const char *values[13] = {c->endpoint, c->ent,   c->user,  c->msg_token, method, c->fp,  c->canon,
                              c->pid,      c->dn,    c->token, c->deadline,  c->now, c->ver};
    return igw_db_exec_row(c->w->db[0], &stmt_cmd_write, values, on_cmd_write, c);
}

/* The thing model's verdict on a first acceptance and the downlink it
 * sends: 0; -1, the model refuses the command (*err_j says why); -2, out of
 * memory. Nothing is replied here: the fast path drops a refusal. */
static int check_and_build(cmd *c, const igw_thingmodel *model, igw_json *err_j)
{
    const igw_Command *k = &c->rq->command;
    free(c->downlink); /* from an earlier check whose model went stale */
    c->downlink = NULL;
    igw_json_init(err_j, "", 0, NULL, 1);
    /* Checked against the model; the downlink is {"method","msgToken"[,"actionID"],"params"}. */
    int rc;
    const char *down_method;
    igw_str action_id = {NULL, 0}, params;
    if (k->method == IGW_CommandMethod_device_action) {
        const igw_DeviceActionParams *p = &k->params.device_action;
        if (!igw_thingmodel_action(model, p->actionID.ptr, p->actionID.len)) {
            igw_json_fail(err_j, IGW_JERR_UNKNOWN, "unknown action");
            snprintf(err_j->path, sizeof err_j->path, "/command/params/actionID");
            return -1;
        }
        down_method = "action";
        action_id = p->actionID;
        params = p->has & IGW_DeviceActionParams_input ? p->input : (igw_str){"{}", 2};
        rc = igw_thingmodel_check_action_input(model, p->actionID.ptr, p->actionID.len, params.ptr, params.len,
                                               "/command/params/input", &c->arena, err_j);
    } else {
        down_method = "control";
        params = k->params.device_propertyControl.properties;
        rc = igw_thingmodel_check_properties(model, params.ptr, params.len, IGW_TM_WRITABLE_ONLY,
                                             "/command/params/properties", &c->arena, err_j);
    }
    if (rc)
        return err_j->err == IGW_JERR_NOMEM ? -2 : -1;
    igw_jw jw;
    igw_jw_init(&jw);
    igw_jw_object_begin(&jw);
    igw_jw_key(&jw, "method", 6);
    igw_jw_string(&jw, down_method, strlen(down_method));
    igw_jw_key(&jw, "msgToken", 8);
    igw_jw_string(&jw, c->token, strlen(c->token));
    if (action_id.ptr) {
        igw_jw_key(&jw, "actionID", 8);
        igw_jw_string(&jw, action_id.ptr, action_id.len);
    }
    igw_jw_key(&jw, "params", 6);
    igw_jw_raw(&jw, params.ptr, params.len);
    igw_jw_object_end(&jw);
    if (igw_jw_status(&jw) || !(c->downlink = malloc(jw.len))) {
        igw_jw_free(&jw);
        return -2;
    }
    memcpy(c->downlink, jw.buf, jw.len);
    c->downlink_len = jw.len;
    igw_jw_free(&jw);
    c->deadline_ms = igw_wall_ms() + (int64_t)c->w->app->cfg.command_timeout_ms;
    snprintf(c->deadline, sizeof c->deadline, "%lld", (long long)c->deadline_ms);
    return 0;
}

/* The model for a first acceptance, from the read's row: the cached one when
 * the read confirmed its version, else the shipped text, parsed and cached.
 * NULL with *reread set when the cache lost the confirmed version meanwhile;
 * NULL with the reply given when the model does not load. */
static const igw_thingmodel *read_model(cmd *c, const PGresult *res, int row, bool *reread)
{
    const char *ver = PQgetvalue(res, row, 3), *cv = NULL;
    const igw_thingmodel *model = NULL;
    igw_json e;
    *reread = false;
    snprintf(c->ver, sizeof c->ver, "%s", ver); /* MODEL_VERSION is far shorter than c->ver */
    if (PQgetisnull(res, row, 4)) { /* ver is the version that was known when the read was sent */
        model = igw_modelcache_get(c->w->models, c->pid, &cv);
        if (!model || strcmp(cv, ver) != 0) {
            *reread = true; /* replaced or evicted since: ask for the text */
            return NULL;
        }
        return model;
    }
    const char *text = PQgetvalue(res, row, 4);
    size_t len = (size_t)PQgetlength(res, row, 4);
    if (igw_modelcache_put(c->w->models, c->pid, ver, text, len, &model, &e) == 0)
        return model;
    /* Not cacheable (too long a key or version, out of memory): as before the cache. */
    igw_thingmodel *m = NULL;
    if (igw_thingmodel_load(text, len, &c->arena, &m, &e) == 0)
        return m;
    igw_http_reply_error(c->ex, IGW_ERR_INTERNAL, "the product's thing model is not usable", "");
    return NULL;
}

#define CMD_REREADS 2 /* the cached model went away between the read and its answer */

static void on_cmd_read(void *arg, const PGresult *res, int row, const char *err)
{
    cmd *c = arg;
    const igw_Command *k = &c->rq->command;
    if (!res) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(c->ex), "commands: lookup failed: %s", err);
        igw_http_reply_error(c->ex, IGW_ERR_UNAVAILABLE, "try again later", "");
    } else if (PQgetvalue(res, row, 0)[0] != 't') {
        /* Unknown, expired, or another user's or enterprise's: all the same. */
        igw_http_reply_error(c->ex, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", "/endpointId");
    } else if (k->method != IGW_CommandMethod_device_action && k->method != IGW_CommandMethod_device_propertyControl) {
        igw_http_reply_error(c->ex, IGW_ERR_NOT_IMPLEMENTED, "this command method is not implemented yet",
                             "/command/method");
    } else if (!PQgetisnull(res, row, 1)) {
        idempotent(c, PQgetvalue(res, row, 1));
    } else if (PQgetisnull(res, row, 2)) {
        /* The caller's rights on the target: its true owner or a grant,
         * within the caller's enterprise; an unknown device looks the same
         * (no existence leak). */
        igw_http_reply_error(c->ex, IGW_ERR_PERMISSION, "no rights on the target device", "/command/target");
    } else {
        bool reread;
        igw_json e;
        igw_arena_reset(&c->arena);
        const igw_thingmodel *model = read_model(c, res, row, &reread);
        if (reread) {
            c->known[0] = '\0';
            if (c->rereads++ < CMD_REREADS && submit_read(c) == 0)
                return;
            igw_http_reply_error(c->ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        } else if (model) {
            int rc = check_and_build(c, model, &e);
            if (rc == -1) {
                igw_http_reply_error(c->ex, IGW_ERR_PARAMETER, e.reason, e.path);
            } else if (rc) {
                igw_http_reply_error(c->ex, IGW_ERR_INTERNAL, "out of memory", "");
            } else {
                snprintf(c->now, sizeof c->now, "%lld", (long long)igw_wall_ms());
                if (submit_write(c) == 0)
                    return;
                igw_http_reply_error(c->ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
            }
        }
    }
    cmd_free(c);
}

static int submit_read(cmd *c)
{
    bool target = c->rq->command.has & IGW_Command_target;
    const char *values[8] = {c->endpoint, c->ent, c->user, c->msg_token, target ? c->pid : NULL,
                             target ? c->dn : NULL, c->now, c->known[0] ? c->known : NULL};
    return igw_db_exec_row(c->w->db[0], &stmt_cmd_read, values, on_cmd_read, c);
}

void igw_route_commands(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    const igw_CommandsRequest *rq = req->body;
    const igw_Command *k = &rq->command;
    cmd *c = calloc(1, sizeof *c);
    unsigned char raw[18];
    igw_jw jw;
    igw_jw_init(&jw);
    igw_encode_Command(&jw, k);
    if (!c || igw_jw_status(&jw) || getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw ||
        igw_b64_encode(IGW_B64_URL, raw, sizeof raw, c->token, sizeof c->token) < 0 ||
        !(c->canon = strndup(jw.buf, jw.len)) || !(c->msg_token = strndup(k->msgToken.ptr, k->msgToken.len))) {
        igw_jw_free(&jw);
        if (c) {
            free(c->canon);
            free(c->msg_token);
        }
        free(c);
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    SHA256((const unsigned char *)jw.buf, jw.len, c->md);
    igw_jw_free(&jw);
    for (int i = 0; i < 32; i++)
        snprintf(c->fp + 2 * i, 3, "%02x", c->md[i]);
    c->ex = ex;
    c->w = w;
    c->rq = rq;
    c->who = *who;
    igw_arena_init(&c->arena, 4u << 20);
    snprintf(c->ent, sizeof c->ent, "%lld", (long long)who->enterprise_id);
    snprintf(c->user, sizeof c->user, "%lld", (long long)who->user_id);
    snprintf(c->endpoint, sizeof c->endpoint, "%.*s", (int)rq->endpointId.len, rq->endpointId.ptr);
    bool target = k->has & IGW_Command_target;
    if (target) {
        snprintf(c->pid, sizeof c->pid, "%.*s", (int)k->target.productID.len, k->target.productID.ptr);
        snprintf(c->dn, sizeof c->dn, "%.*s", (int)k->target.deviceName.len, k->target.deviceName.ptr);
    }
    snprintf(c->now, sizeof c->now, "%lld", (long long)igw_wall_ms());
    /* Fast path: the cached model accepts it; the write alone confirms the
     * model's version with everything else (see above). */
    const char *v = NULL;
    const igw_thingmodel *model;
    igw_json e;
    if (target &&
        (k->method == IGW_CommandMethod_device_action || k->method == IGW_CommandMethod_device_propertyControl) &&
        (model = igw_modelcache_get(w->models, c->pid, &v)) && check_and_build(c, model, &e) == 0) {
        snprintf(c->ver, sizeof c->ver, "%s", v);
        if (submit_write(c) == 0)
            return;
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        cmd_free(c);
        return;
    }
    if (slow_path(c))
        cmd_free(c);
}

/* ---- /events and /events/ack (outbox.h) -------------------------------------------- */

static void on_pull(void *arg, const igw_outbox_result *r)
{
    igw_exchange *ex = arg;
    if (r->status == IGW_OUTBOX_UNKNOWN_ENDPOINT || r->status == IGW_OUTBOX_ENDPOINT_EXPIRED) {
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", "/endpointId");
        return;
    }
    if (r->status != IGW_OUTBOX_OK) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(ex), "events: %s", r->err ? r->err : "pull failed");
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "try again later", "");
        return;
    }
    igw_EventItem items[IGW_OUTBOX_BATCH_MAX];
    size_t n = r->nitems < IGW_OUTBOX_BATCH_MAX ? r->nitems : IGW_OUTBOX_BATCH_MAX;
    for (size_t i = 0; i < n; i++)
        items[i] = (igw_EventItem){.has = IGW_EventItem_deliveryId | IGW_EventItem_event,
                                   .deliveryId = {r->items[i].delivery_id, strlen(r->items[i].delivery_id)},
                                   .event = {r->items[i].event, r->items[i].event_len}};
    igw_EventsData d = {.has = IGW_EventsData_list, .list = {items, (uint32_t)n}};
    igw_encode_EventsData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_events_pull(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    const igw_EventsRequest *rq = req->body;
    char ep[IGW_OUTBOX_ID_MAX + 1];
    snprintf(ep, sizeof ep, "%.*s", (int)rq->endpointId.len, rq->endpointId.ptr);
    if (igw_outbox_pull(w->db[0], who->enterprise_id, who->user_id, ep, (int)rq->limit, on_pull, ex))
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

static void on_ack(void *arg, const igw_outbox_result *r)
{
    igw_exchange *ex = arg;
    if (r->status == IGW_OUTBOX_UNKNOWN_ENDPOINT || r->status == IGW_OUTBOX_ENDPOINT_EXPIRED) {
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", "/endpointId");
        return;
    }
    if (r->status == IGW_OUTBOX_REFUSED) {
        /* One reason for every kind (foreign, device, unknown, expired): a
         * caller learns nothing about deliveries that are not its own. */
        char path[48];
        snprintf(path, sizeof path, "/deliveryIds/%zu", r->refused_index);
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "unknown, foreign or expired delivery; nothing was acknowledged",
                             path);
        return;
    }
    if (r->status != IGW_OUTBOX_OK) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(ex), "events/ack: %s", r->err ? r->err : "ack failed");
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "try again later", "");
        return;
    }
    igw_AckData d = {.has = IGW_AckData_acknowledged, .acknowledged = r->acknowledged};
    igw_encode_AckData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_events_ack(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    const igw_AckRequest *rq = req->body;
    char ep[IGW_OUTBOX_ID_MAX + 1];
    snprintf(ep, sizeof ep, "%.*s", (int)rq->endpointId.len, rq->endpointId.ptr);
    const char *ids[IGW_OUTBOX_BATCH_MAX];
    uint32_t n = rq->deliveryIds.n < IGW_OUTBOX_BATCH_MAX ? rq->deliveryIds.n : IGW_OUTBOX_BATCH_MAX;
    igw_arena *a = igw_http_arena(ex);
    for (uint32_t i = 0; i < n; i++)
        if (!(ids[i] = igw_arena_strndup(a, rq->deliveryIds.v[i].ptr, rq->deliveryIds.v[i].len))) {
            igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
            return;
        }
    if (igw_outbox_ack(w->db[0], who->enterprise_id, who->user_id, ep, ids, n, on_ack, ex))
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- events_push: the endpoint's WebSocket (event/push.c) --------------------------- */

void igw_route_events_push(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    igw_push_attach(w->push, ex, req, who);
}
