/* results.c - see results.h. */
#include "results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "jw.h"
#include "outbox.h"

static const igw_db_stmt stmt_claim = {
    "igw_results_claim",
    "UPDATE device_commands SET outcome = 'replied' WHERE product_id = $1 AND device_name = $2 "
    "AND device_token = $3 AND outcome IS NULL RETURNING endpoint_id, msg_token, method",
    3};

static const igw_db_stmt stmt_timeouts = {
    "igw_results_timeouts",
    "UPDATE device_commands SET outcome = 'timeout' WHERE (product_id, device_name, device_token) IN ("
    "SELECT product_id, device_name, device_token FROM device_commands WHERE outcome IS NULL "
    "AND deadline_ms < $1::bigint ORDER BY deadline_ms LIMIT 256 FOR UPDATE SKIP LOCKED) "
    "RETURNING endpoint_id, msg_token, method",
    1};

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

static void on_emitted(void *arg, const igw_outbox_result *r)
{
    char *what = arg;
    if (r->status != IGW_OUTBOX_OK)
        fprintf(stderr, "igwd: result %s not delivered: %s\n", what,
                r->status == IGW_OUTBOX_ENDPOINT_EXPIRED || r->status == IGW_OUTBOX_UNKNOWN_ENDPOINT
                    ? "the endpoint expired"
                    : r->err ? r->err : "outbox refused it");
    free(what);
}

/* Builds and emits the result of one claimed row. */
static void emit(const outcome *o, const char *endpoint, const char *msg_token, const char *method)
{
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
    char *what = malloc(strlen(msg_token) + 16);
    if (what)
        snprintf(what, strlen(msg_token) + 16, "of %s", msg_token);
    igw_outbox_event oe = {.endpoint_id = endpoint, .msg_token = msg_token, .body = jw.buf, .body_len = jw.len};
    if (igw_jw_status(&jw) || !what || igw_outbox_emit(o->db, &oe, on_emitted, what)) {
        fprintf(stderr, "igwd: result of %s could not be queued\n", msg_token);
        free(what);
    }
    igw_jw_free(&jw);
}

static void on_claimed(void *arg, const PGresult *res, const char *err)
{
    outcome *o = arg;
    if (!res)
        fprintf(stderr, "igwd: results: claim failed (%s): %s\n", o->log, err);
    else if (PQntuples(res) == 0 && o->log[0])
        fprintf(stderr, "igwd: results: reply %s matches no pending command; dropped\n", o->log);
    for (int i = 0; res && i < PQntuples(res); i++)
        emit(o, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
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
    if (igw_db_exec(db, &stmt_claim, values, NULL, NULL, on_claimed, o) == 0) {
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
    if (igw_db_exec(db, &stmt_timeouts, values, NULL, NULL, on_claimed, o))
        outcome_free(o);
}
