/* results.c - see results.h. */
#include "results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "api.h"
#include "base64.h"
#include "jw.h"
#include "outbox.h"

/* Exactly one result per command without a claim-then-emit window: the
 * result's deliveryId is derived from the command (enterprise, endpoint,
 * msgToken), so a second emit for the same command (the deadline racing the
 * reply, a retry after a crash between the emit and the settling update) is
 * refused by the outbox as a duplicate. The row is settled after the emit. */
static const igw_db_stmt stmt_find = {
    "igw_results_find",
    "SELECT endpoint_id, msg_token, method, enterprise_id::text, product_id, device_name, device_token "
    "FROM device_commands WHERE product_id = $1 AND device_name = $2 AND device_token = $3 AND outcome IS NULL",
    3};

static const igw_db_stmt stmt_overdue = {
    "igw_results_overdue",
    "SELECT endpoint_id, msg_token, method, enterprise_id::text, product_id, device_name, device_token "
    "FROM device_commands WHERE outcome IS NULL AND deadline_ms < $1::bigint ORDER BY deadline_ms LIMIT 256",
    1};

static const igw_db_stmt stmt_settle = {
    "igw_results_settle",
    "UPDATE device_commands SET outcome = $4 WHERE product_id = $1 AND device_name = $2 AND device_token = $3 "
    "AND outcome IS NULL",
    4};

/* What a claimed command's result says. */
typedef struct outcome {
    igw_db *db;
    int cls;        /* IGW_ERR_OK: success */
    char *reason;   /* failures */
    char *response; /* actionReply output, or NULL */
    size_t response_len;
    char log[160];
} outcome;

static void outcome_free(outcome *o)
{
    free(o->reason);
    free(o->response);
    free(o);
}

/* One command being settled. */
typedef struct settle {
    igw_db *db;
    char *key[3];      /* product_id, device_name, device_token */
    const char *outcome;
} settle;

static void settle_free(settle *st)
{
    for (int i = 0; i < 3; i++)
        free(st->key[i]);
    free(st);
}

static void on_settled(void *arg, const PGresult *res, const char *err)
{
    settle *st = arg;
    if (!res) /* the next overdue pass finds it and its emit is a duplicate */
        fprintf(stderr, "igwd: results: settling %s failed: %s\n", st->key[2], err);
    settle_free(st);
}

static void on_emitted(void *arg, const igw_outbox_result *r)
{
    settle *st = arg;
    bool settled = r->status == IGW_OUTBOX_OK || r->status == IGW_OUTBOX_DUPLICATE;
    if (!settled && r->status != IGW_OUTBOX_ENDPOINT_EXPIRED && r->status != IGW_OUTBOX_UNKNOWN_ENDPOINT) {
        fprintf(stderr, "igwd: results: result of %s not stored: %s\n", st->key[2], r->err ? r->err : "refused");
        settle_free(st); /* still unsettled: the overdue pass retries */
        return;
    }
    if (!settled)
        fprintf(stderr, "igwd: results: result of %s dropped: its endpoint expired\n", st->key[2]);
    const char *values[4] = {st->key[0], st->key[1], st->key[2], settled ? st->outcome : "expired"};
    if (igw_db_exec(st->db, &stmt_settle, values, NULL, NULL, on_settled, st))
        settle_free(st);
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

/* Builds and emits the result of one row (then settles it). */
static void emit(const outcome *o, const PGresult *res, int row)
{
    const char *endpoint = PQgetvalue(res, row, 0), *msg_token = PQgetvalue(res, row, 1);
    const char *method = PQgetvalue(res, row, 2), *ent = PQgetvalue(res, row, 3);
    igw_ResultEvent ev = {0};
    ev.has = IGW_ResultEvent_msgToken | IGW_ResultEvent_method | IGW_ResultEvent_code | IGW_ResultEvent_data;
    ev.msgToken = (igw_str){msg_token, strlen(msg_token)};
    ev.method = IGW_ResultMethod_interaction_result;
    ev.code = igw_error_classes[o->cls].code;
    ev.data.has = IGW_ResultData_operation;
    for (int m = 0; m < IGW_CommandMethod__COUNT; m++)
        if (igw_CommandMethod_names[m].len == strlen(method) && !memcmp(igw_CommandMethod_names[m].ptr, method, strlen(method)))
            ev.data.operation = (igw_CommandMethod)m;
    if (o->cls == IGW_ERR_OK) {
        ev.data.has |= IGW_ResultData_state;
        ev.data.state = (igw_str){"succeeded", 9};
        if (o->response && ev.data.operation == IGW_CommandMethod_device_action) {
            ev.data.has |= IGW_ResultData_output;
            ev.data.output = (igw_str){o->response, o->response_len};
        }
    } else {
        ev.data.has |= IGW_ResultData_reason;
        ev.data.reason = (igw_str){o->reason, strlen(o->reason)};
    }
    igw_jw jw;
    igw_jw_init(&jw);
    igw_encode_ResultEvent(&jw, &ev);
    char id[40];
    settle *st = calloc(1, sizeof *st);
    bool ok = st && !igw_jw_status(&jw) && result_id(ent, endpoint, msg_token, id, sizeof id) == 0;
    for (int i = 0; ok && i < 3; i++)
        ok = (st->key[i] = strdup(PQgetvalue(res, row, 4 + i))) != NULL;
    if (ok) {
        st->db = o->db;
        st->outcome = o->cls == IGW_ERR_UNKNOWN_OUTCOME ? "timeout" : "replied";
        igw_outbox_event oe = {.endpoint_id = endpoint, .msg_token = msg_token, .body = jw.buf, .body_len = jw.len,
                               .delivery_id = id};
        ok = igw_outbox_emit(o->db, &oe, on_emitted, st) == 0;
    }
    if (!ok) {
        fprintf(stderr, "igwd: results: result of %s could not be queued (the overdue pass retries)\n", msg_token);
        if (st)
            settle_free(st);
    }
    igw_jw_free(&jw);
}

static void on_found(void *arg, const PGresult *res, const char *err)
{
    outcome *o = arg;
    if (!res)
        fprintf(stderr, "igwd: results: lookup failed (%s): %s\n", o->log, err);
    else if (PQntuples(res) == 0 && o->log[0])
        fprintf(stderr, "igwd: results: reply %s matches no pending command; dropped\n", o->log);
    for (int i = 0; res && i < PQntuples(res); i++)
        emit(o, res, i);
    outcome_free(o);
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

void igw_results_device_reply(igw_db *db, const char *product_id, const char *device_name, igw_str device_token,
                              int64_t code, igw_str msg, igw_str response)
{
    outcome *o = calloc(1, sizeof *o);
    char *token = dupn(device_token.ptr, device_token.len);
    if (!o || !token) {
        free(o);
        free(token);
        fprintf(stderr, "igwd: results: out of memory, a device reply is dropped\n");
        return;
    }
    o->db = db;
    snprintf(o->log, sizeof o->log, "%s/%s token %s", product_id, device_name, token);
    if (code == 200) {
        o->cls = IGW_ERR_OK;
        if (response.ptr && !(o->response = dupn(response.ptr, response.len)))
            goto oom;
        o->response_len = response.len;
    } else {
        /* The device refused or failed: its own words when it gave some. */
        o->cls = IGW_ERR_UNAVAILABLE;
        char buf[300];
        if (msg.ptr && msg.len)
            snprintf(buf, sizeof buf, "device: %.*s", (int)(msg.len > 240 ? 240 : msg.len), msg.ptr);
        else
            snprintf(buf, sizeof buf, "device answered code %lld", (long long)code);
        if (!(o->reason = dupn(buf, strlen(buf))))
            goto oom;
    }
    const char *values[3] = {product_id, device_name, token};
    if (igw_db_exec(db, &stmt_find, values, NULL, NULL, on_found, o) == 0) {
        free(token);
        return;
    }
oom:
    fprintf(stderr, "igwd: results: a device reply could not be settled (%s)\n", o->log);
    free(token);
    outcome_free(o);
}

void igw_results_sweep_timeouts(igw_db *db, int64_t now_ms)
{
    outcome *o = calloc(1, sizeof *o);
    if (!o || !(o->reason = dupn("the device did not answer in time", 33))) {
        free(o);
        return;
    }
    o->db = db;
    o->cls = IGW_ERR_UNKNOWN_OUTCOME;
    char now[24];
    snprintf(now, sizeof now, "%lld", (long long)now_ms);
    const char *values[1] = {now};
    if (igw_db_exec(db, &stmt_overdue, values, NULL, NULL, on_found, o))
        outcome_free(o);
}
