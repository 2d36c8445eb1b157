/* results.c - see results.h. */
#include "command/results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "api.h"
#include "base64.h"
#include "clock.h"
#include "jw.h"
#include "core/log.h"
#include "event/outbox.h"

/* Exactly one result per command without a claim-then-emit window: the
 * result's deliveryId is derived from the command (enterprise, endpoint,
 * msgToken), so a second emit for the same command (the deadline racing the
 * reply, a retry after a lost connection) is refused by the outbox as a
 * duplicate, and the row is settled in the emit's own transaction
 * (igw_outbox_emit_result). Lookups and emits are batched statements: the
 * replies of one edge batch, or one overdue pass, cost one lookup and one
 * commit together; a reply to a command this process published skips the
 * lookup (pending.h). */

/* Parameters and columns by name: *_P_X is $(X + 1), *_C_X column X. The
 * command's columns come first in both, in emit()'s order of cmd[]; the
 * message's deliveryId last of them ("": the command carries none). */
enum { CMD_C_ENDPOINT, CMD_C_TOKEN, CMD_C_METHOD, CMD_C_ENTERPRISE, CMD_C_DELIVERY, CMD_NC };
#define MESSAGE_JOIN                                                                                             \
    "LEFT JOIN messages m ON m.product_id = c.product_id AND m.device_name = c.device_name "                      \
    "AND m.device_token = c.device_token "

/* Batched: $1 productID, $2 deviceName, $3 device token; the command of
 * each row and its outcome (NULL: still waiting), or NULLs. Matched on the
 * primary key alone: a condition on outcome would let the planner drive the
 * join from the partial index of waiting commands, whose row estimate is
 * near zero whenever the table was analyzed idle. */
enum { FIND_P_PID, FIND_P_DN, FIND_P_TOKEN, FIND_NP };
enum { FIND_C_OUTCOME = CMD_NC };
static const igw_db_stmt stmt_find = {
    "igw_results_find",
    "SELECT c.endpoint_id, c.msg_token, c.method, c.enterprise_id::text, coalesce(m.delivery_id, ''), c.outcome "
    "FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS i(pid, dn, tok, ord) "
    "LEFT JOIN device_commands c ON c.product_id = i.pid AND c.device_name = i.dn AND c.device_token = i.tok "
    MESSAGE_JOIN "ORDER BY i.ord",
    FIND_NP};

#define STR_(x) #x
#define STR(x) STR_(x)
/* $1 now, $2 the earliest deadline to look at. */
enum { OVERDUE_P_NOW, OVERDUE_P_FROM, OVERDUE_NP };
enum { OVERDUE_C_PID = CMD_NC, OVERDUE_C_DN, OVERDUE_C_DEVICE_TOKEN, OVERDUE_C_DEADLINE };
static const igw_db_stmt stmt_overdue = {
    "igw_results_overdue",
    "SELECT c.endpoint_id, c.msg_token, c.method, c.enterprise_id::text, coalesce(m.delivery_id, ''), "
    "       c.product_id, c.device_name, c.device_token, c.deadline_ms "
    "FROM device_commands c " MESSAGE_JOIN
    "WHERE c.outcome IS NULL AND c.deadline_ms < $1::bigint AND c.deadline_ms >= $2::bigint "
    "ORDER BY c.deadline_ms LIMIT " STR(IGW_RESULTS_PASS_MAX),
    OVERDUE_NP};

/* An overdue pass: done once its last emit has answered. */
typedef struct pass {
    int left;
    igw_results_pass r;
    void (*done)(void *arg, const igw_results_pass *r);
    void *arg;
} pass;

static void pass_release(pass *p)
{
    if (p && --p->left == 0) {
        p->done(p->arg, &p->r);
        free(p);
    }
}

/* What a command's result says. */
typedef struct outcome {
    igw_db *db;
    pass *pass;     /* an overdue pass; NULL for a device reply */
    int cls;        /* IGW_ERR_OK: success */
    char *reason;   /* failures */
    char *response; /* actionReply output, or NULL */
    size_t response_len;
    char *key[3]; /* a device reply: product_id, device_name, device_token */
    char log[160];
    /* A device reply as device_messages stores it (its msgToken is key[2]);
     * reply_body NULL: none (a deadline's result). */
    char *reply_handle, *reply_type, *reply_method, *reply_body;
    igw_results_reply_cb cb;
    void *cb_arg;
} outcome;

static void outcome_free(outcome *o)
{
    free(o->reason);
    free(o->response);
    for (int i = 0; i < 3; i++)
        free(o->key[i]);
    free(o->reply_handle);
    free(o->reply_type);
    free(o->reply_method);
    free(o->reply_body);
    free(o);
}

/* One result being stored: the device token, for logs. */
typedef struct emitting {
    char token[IGW_OUTBOX_ID_MAX + 1];
    pass *pass;
    igw_results_reply_cb cb; /* a device reply's, stored with the result */
    void *cb_arg;
} emitting;

static void on_emitted(void *arg, const igw_outbox_result *r)
{
    emitting *em = arg;
    if (r->status == IGW_OUTBOX_ENDPOINT_EXPIRED || r->status == IGW_OUTBOX_UNKNOWN_ENDPOINT)
        igw_log(IGW_LOG_WARN, NULL, "results: result of %s dropped: its endpoint expired", em->token);
    else if (r->status == IGW_OUTBOX_DUPLICATE && em->cb) /* a reply taken from the pending map: nothing checked it */
        igw_log(IGW_LOG_INFO, NULL, "results: reply %s comes after its command was settled (stored, no new result)",
                em->token);
    else if (r->status != IGW_OUTBOX_OK && r->status != IGW_OUTBOX_DUPLICATE) /* still unsettled: the overdue pass retries */
        igw_log(IGW_LOG_WARN, NULL, "results: result of %s not stored: %s", em->token, r->err ? r->err : "refused");
    if (em->cb) /* a statement that committed stored the reply with it */
        em->cb(em->cb_arg, r->committed ? IGW_RESULTS_STORED : IGW_RESULTS_FAILED,
               r->committed ? NULL : (r->err ? r->err : "no result"));
    if (em->pass && igw_outbox_result_settled(r))
        em->pass->r.settled++;
    pass_release(em->pass);
    free(em);
}

/* The result's deliveryId: 16 bytes of SHA-256 over the command's identity. */
static int result_id(const char *ent, const char *endpoint, const char *msg_token, char *out, size_t cap)
{
    unsigned char md[32];
    char buf[512]; /* NUL-separated: no two identities give the same bytes */
    int n = snprintf(buf, sizeof buf, "igw-result%c%s%c%s%c%s", 0, ent, 0, endpoint, 0, msg_token);
    if (n < 0 || (size_t)n >= sizeof buf)
        return -1;
    SHA256((const unsigned char *)buf, (size_t)n, md);
    return igw_b64_encode(IGW_B64_URL, md, 16, out, cap) < 0 ? -1 : 0;
}

/* Builds and emits the result of the command cmd (endpoint, msgToken,
 * method, enterprise) of the device command `key`, settling it (and storing
 * a device reply) in the same transaction. 0, or -1 when it could not be
 * queued (logged). */
static int emit(const outcome *o, const char *const cmd[CMD_NC], const char *const key[3])
{
    const char *endpoint = cmd[CMD_C_ENDPOINT], *msg_token = cmd[CMD_C_TOKEN], *method = cmd[CMD_C_METHOD],
               *ent = cmd[CMD_C_ENTERPRISE], *delivery = cmd[CMD_C_DELIVERY];
    int cls = o->cls;
    const char *reason = o->reason, *outcome = cls == IGW_ERR_UNKNOWN_OUTCOME ? "timeout" : "replied";
    if (delivery && delivery[0] && o->pass) { /* a message's deadline is its expiry */
        cls = IGW_ERR_EXPIRED;
        reason = "the message expired before the device played it";
        outcome = "messageExpired"; /* not "expired": that one says the endpoint had */
    }
    igw_ResultEvent ev = {0};
    ev.has = IGW_ResultEvent_msgToken | IGW_ResultEvent_method | IGW_ResultEvent_code | IGW_ResultEvent_data;
    ev.msgToken = (igw_str){msg_token, strlen(msg_token)};
    ev.method = IGW_ResultMethod_interaction_result;
    ev.code = igw_error_classes[cls].code;
    ev.data.has = IGW_ResultData_operation;
    int m = igw_CommandMethod_of(igw_str_of(method)); /* the ledger stored its wire name */
    if (m >= 0)
        ev.data.operation = (igw_CommandMethod)m;
    if (cls == IGW_ERR_OK) {
        ev.data.has |= IGW_ResultData_state;
        ev.data.state = (igw_str){"succeeded", 9};
        if (o->response) { /* only an actionReply carries one (schema: DeviceMessage) */
            ev.data.has |= IGW_ResultData_output;
            ev.data.output = (igw_str){o->response, o->response_len};
        }
    } else {
        ev.data.has |= IGW_ResultData_reason;
        ev.data.reason = (igw_str){reason, strlen(reason)};
    }
    if (delivery && delivery[0]) { /* a message: which one, and what the device did with it */
        const char *st = cls == IGW_ERR_OK ? "played" : cls == IGW_ERR_EXPIRED ? "expired" : "failed";
        ev.data.has |= IGW_ResultData_deliveryId | IGW_ResultData_state;
        ev.data.deliveryId = igw_str_of(delivery);
        ev.data.state = igw_str_of(st);
    }
    igw_jw jw;
    igw_jw_init(&jw);
    igw_encode_ResultEvent(&jw, &ev);
    igw_jw_raw(&jw, "", 1); /* NUL: the body is passed as a C string */
    char id[40];
    emitting *em = calloc(1, sizeof *em);
    bool ok = em && !igw_jw_status(&jw) && result_id(ent, endpoint, msg_token, id, sizeof id) == 0;
    if (ok) {
        snprintf(em->token, sizeof em->token, "%s", key[2]);
        em->pass = o->pass;
        em->cb = o->cb;
        em->cb_arg = o->cb_arg;
        if (o->pass)
            o->pass->left++;
        igw_outbox_result_event oe = {.endpoint_id = endpoint, .msg_token = msg_token, .body = jw.buf,
                                      .delivery_id = id, .product_id = key[0], .device_name = key[1],
                                      .device_token = key[2],
                                      .outcome = outcome,
                                      .reply_handle = o->reply_handle, .reply_type = o->reply_type,
                                      .reply_method = o->reply_method,
                                      .reply_token = o->reply_body ? key[2] : NULL, .reply_body = o->reply_body};
        ok = igw_outbox_emit_result(o->db, &oe, on_emitted, em) == 0;
        if (!ok && o->pass)
            o->pass->left--; /* never zero here: on_overdue holds one */
    }
    if (!ok) {
        igw_log(IGW_LOG_WARN, NULL, "results: result of %s could not be queued (the overdue pass retries)", msg_token);
        free(em);
    }
    igw_jw_free(&jw);
    return ok ? 0 : -1;
}

static void on_found(void *arg, const PGresult *res, int row, const char *err)
{
    outcome *o = arg;
    if (!res) { /* the device is told, and sends its reply again */
        igw_log(IGW_LOG_ERROR, NULL, "results: lookup failed (%s): %s", o->log, err);
        o->cb(o->cb_arg, IGW_RESULTS_FAILED, err ? err : "no result");
        outcome_free(o);
        return;
    }
    if (PQgetisnull(res, row, CMD_C_ENDPOINT))
        igw_log(IGW_LOG_INFO, NULL, "results: reply %s matches no pending command", o->log);
    else if (!PQgetisnull(res, row, FIND_C_OUTCOME))
        igw_log(IGW_LOG_INFO, NULL, "results: reply %s comes after its command was settled (%s)", o->log,
                PQgetvalue(res, row, FIND_C_OUTCOME));
    else { /* pending: stored with its result */
        const char *cmd[CMD_NC];
        for (int c = 0; c < CMD_NC; c++)
            cmd[c] = PQgetvalue(res, row, c);
        if (emit(o, cmd, (const char *const *)o->key) != 0)
            o->cb(o->cb_arg, IGW_RESULTS_FAILED, IGW_DB_NOT_SENT "the result could not be queued");
        outcome_free(o);
        return;
    }
    o->cb(o->cb_arg, IGW_RESULTS_NOTHING, NULL); /* the caller stores the reply as any uplink */
    outcome_free(o);
}

static void on_overdue(void *arg, const PGresult *res, const char *err)
{
    outcome *o = arg;
    pass *p = o->pass;
    if (!res)
        igw_log(IGW_LOG_ERROR, NULL, "results: overdue lookup failed: %s", err);
    p->r.looked = res != NULL;
    p->r.overdue = res ? PQntuples(res) : 0;
    if (p->r.overdue) { /* ordered by deadline */
        p->r.first_deadline_ms = strtoll(PQgetvalue(res, 0, OVERDUE_C_DEADLINE), NULL, 10);
        p->r.last_deadline_ms = strtoll(PQgetvalue(res, p->r.overdue - 1, OVERDUE_C_DEADLINE), NULL, 10);
    }
    for (int i = 0; i < p->r.overdue; i++) {
        const char *cmd[CMD_NC];
        for (int c = 0; c < CMD_NC; c++)
            cmd[c] = PQgetvalue(res, i, c);
        const char *key[3] = {PQgetvalue(res, i, OVERDUE_C_PID), PQgetvalue(res, i, OVERDUE_C_DN),
                              PQgetvalue(res, i, OVERDUE_C_DEVICE_TOKEN)};
        emit(o, cmd, key);
    }
    outcome_free(o);
    pass_release(p); /* the lookup's own hold */
}

static char *dupn(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

int igw_results_reply(igw_db *db, const igw_results_reply_in *in, igw_results_reply_cb cb, void *arg)
{
    if (!cb || !in->body)
        return -1;
    outcome *o = calloc(1, sizeof *o);
    if (!o || !(o->key[0] = strdup(in->product_id)) || !(o->key[1] = strdup(in->device_name)) ||
        !(o->key[2] = dupn(in->device_token.ptr, in->device_token.len)) ||
        !(o->reply_handle = strdup(in->handle)) || !(o->reply_type = strdup(in->type)) ||
        !(o->reply_method = dupn(in->method.ptr, in->method.len)) || !(o->reply_body = dupn(in->body, in->body_len)))
        goto fail;
    o->db = db;
    o->cb = cb;
    o->cb_arg = arg;
    snprintf(o->log, sizeof o->log, "%s/%s token %s", in->product_id, in->device_name, o->key[2]);
    if (in->code == 200) {
        o->cls = IGW_ERR_OK;
        if (in->response.ptr && !(o->response = dupn(in->response.ptr, in->response.len)))
            goto fail;
        o->response_len = in->response.len;
    } else {
        /* The device refused or failed: its own words when it gave some,
         * cut to fit the result's reason (ResultData.reason). 410: what it
         * was asked for had expired (a message: never played). */
        o->cls = in->code == 410 ? IGW_ERR_EXPIRED : IGW_ERR_UNAVAILABLE;
        enum { DEVICE_MSG_MAX = 240 };
        _Static_assert(sizeof "device: " - 1 + DEVICE_MSG_MAX <= IGW_ResultData_reason_MAX, "fits a reason");
        char buf[300];
        if (in->msg.ptr && in->msg.len)
            snprintf(buf, sizeof buf, "device: %.*s", (int)(in->msg.len > DEVICE_MSG_MAX ? DEVICE_MSG_MAX : in->msg.len),
                     in->msg.ptr);
        else
            snprintf(buf, sizeof buf, "device answered code %lld", (long long)in->code);
        if (!(o->reason = dupn(buf, strlen(buf))))
            goto fail;
    }
    igw_pending_cmd *known = in->pending ? igw_pending_take(in->pending, in->product_id, in->device_name,
                                                             in->device_token.ptr, in->device_token.len, igw_wall_ms())
                                         : NULL;
    if (known) { /* published by this process: no need to read it back */
        /* (no message is in the map: command.c) */
        const char *cmd[CMD_NC] = {[CMD_C_ENDPOINT] = known->endpoint_id, [CMD_C_TOKEN] = known->msg_token,
                                   [CMD_C_METHOD] = known->method, [CMD_C_ENTERPRISE] = known->enterprise_id,
                                   [CMD_C_DELIVERY] = ""};
        int rc = emit(o, cmd, (const char *const *)o->key);
        igw_pending_release(known);
        outcome_free(o);
        return rc;
    }
    const char *values[FIND_NP] = {[FIND_P_PID] = o->key[0], [FIND_P_DN] = o->key[1], [FIND_P_TOKEN] = o->key[2]};
    if (igw_db_exec_row(db, &stmt_find, NULL, values, on_found, o) == 0)
        return 0;
fail:
    if (o)
        outcome_free(o);
    return -1;
}

int igw_results_sweep_timeouts(igw_db *db, int64_t now_ms, int64_t from_ms,
                               void (*done)(void *arg, const igw_results_pass *r), void *arg)
{
    outcome *o = calloc(1, sizeof *o);
    pass *p = calloc(1, sizeof *p);
    if (!o || !p || !(o->reason = dupn("the device did not answer in time", 33))) {
        free(o);
        free(p);
        return -1;
    }
    *p = (pass){.left = 1, .done = done, .arg = arg};
    o->db = db;
    o->pass = p;
    o->cls = IGW_ERR_UNKNOWN_OUTCOME;
    char now[24], from[24];
    snprintf(now, sizeof now, "%lld", (long long)now_ms);
    snprintf(from, sizeof from, "%lld", (long long)from_ms);
    const char *values[OVERDUE_NP] = {[OVERDUE_P_NOW] = now, [OVERDUE_P_FROM] = from};
    if (igw_db_exec(db, &stmt_overdue, values, NULL, NULL, on_overdue, o)) {
        outcome_free(o);
        free(p);
        return -1;
    }
    return 0;
}
