/* edge.c - see edge.h.
 *
 * A job walks: decode -> [authenticate] -> resolve target -> protocol row ->
 * model check -> (query | batch). Device records (secret, gateway binding,
 * parsed thing model) are cached per worker for cache_ttl_ms, so a busy
 * device costs no lookup; the cache is bounded and simply emptied when full.
 * Durable methods join the worker's pending batch; one batch is in flight
 * at a time, and the next one collects meanwhile (group commit): a single
 * statement inserts the batch's messages and merges reported properties, so
 * one WAL flush acknowledges them all. */
#include "edge/edge.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <h2o.h>

#include "api.h"
#include "arena.h"
#include "clock.h"
#include "decode.h"
#include "devauth.h"
#include "jw.h"
#include "paths.h"
#include "protocol.h"
#include "request.h"
#include "catalog/recordings.h"
#include "command/results.h"
#include "core/log.h"
#include "edge/decide.h"
#include "thingmodel.h"

#define NAME_CAP (IGW_DEVAUTH_NAME_MAX + 1)
#define CACHE_BUCKETS 1024
#define REFUSED_LOG_SLOTS 256     /* devices whose last refusal log time is kept */
#define REFUSED_LOG_MS INT64_C(60000) /* a device's refused uplinks: one log line a minute */
#define CACHE_MAX 8192           /* device records per worker */
#define MODEL_ARENA (4u << 20)   /* bytes a parsed model may take */
#define JOB_ARENA (1u << 20)     /* bytes a job's decoding and checks may take */
#define PENDING_MAX 16384        /* uplinks waiting for a batch, per worker: beyond, "busy" */

/* ---- statements ------------------------------------------------------------ */

/* Each statement's parameters and result columns by name: *_P_X is $(X + 1)
 * in its SQL and X in the values array, *_C_X the column's number. */

/* The device (target): $1 productID, $2 deviceName. The device queries
 * below (properties, config, subdevices) take the same two first. */
enum { DEV_P_PID, DEV_P_DN, DEV_NP };
enum { DEVICE_C_SECRET, DEVICE_C_IS_GATEWAY, DEVICE_C_GW_PID, DEVICE_C_GW_DN, DEVICE_C_MODEL };
static const igw_db_stmt stmt_device = {
    "igw_edge_device",
    "SELECT d.secret, d.is_gateway, coalesce(d.gateway_product_id, ''), coalesce(d.gateway_device_name, ''), "
    "p.model::text FROM devices d JOIN products p ON p.product_id = d.product_id "
    "WHERE d.product_id = $1 AND d.device_name = $2",
    DEV_NP};

/* One column: the reply's data (the stored properties, the latest config). */
enum { DATA_C_JSON };
static const igw_db_stmt stmt_properties = {
    "igw_edge_properties",
    "SELECT properties::text FROM devices WHERE product_id = $1 AND device_name = $2", DEV_NP};

static const igw_db_stmt stmt_config = {
    "igw_edge_config",
    "SELECT coalesce((SELECT body->'params' FROM device_messages WHERE product_id = $1 AND device_name = $2 "
    "AND handle = 'config' AND method = 'report' AND body ? 'params' ORDER BY received_at DESC, message_id DESC "
    "LIMIT 1), '{}'::jsonb)::text",
    DEV_NP};

/* The messages waiting for the device (docs/messages.md): their play
 * downlinks as published, oldest first, while unsettled and unexpired; at
 * most MESSAGES_GET_MAX, so that the reply's data stays in its bound (a
 * device that got that many asks again once it answered them). */
#define MESSAGES_GET_MAX 8
#define STR_(x) #x
#define STR(x) STR_(x)
static const igw_db_stmt stmt_messages = {
    "igw_edge_messages",
    "SELECT jsonb_build_object('messages', coalesce(jsonb_agg(w.downlink ORDER BY w.created_at, w.device_token), "
    "'[]'::jsonb))::text FROM (SELECT m.downlink, m.created_at, m.device_token FROM messages m "
    "JOIN device_commands c ON c.product_id = m.product_id AND c.device_name = m.device_name "
    "AND c.device_token = m.device_token "
    "WHERE m.product_id = $1 AND m.device_name = $2 AND c.outcome IS NULL "
    "AND m.expires_at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint "
    "ORDER BY m.created_at, m.device_token LIMIT " STR(MESSAGES_GET_MAX) ") w",
    DEV_NP};
_Static_assert(MESSAGES_GET_MAX * (IGW_MessagePlayParams_url_MAX + 512) <= IGW_DeviceReply_data_MAX_BYTES,
               "the longest downlinks fit the reply's data");

/* The first item (1-based) of the list that is not bound to the gateway, or
 * no row: the gateway ($1, $2), the sub-devices as two text arrays. */
enum { SUB_P_PID = DEV_P_PID, SUB_P_DN = DEV_P_DN, SUB_P_PIDS, SUB_P_DNS, SUB_NP };
enum { SUB_C_ITEM };
static const igw_db_stmt stmt_subdevices = {
    "igw_edge_subdevices",
    "SELECT u.i FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS u(p, d, i) WHERE NOT EXISTS ("
    "SELECT 1 FROM devices x WHERE x.product_id = u.p AND x.device_name = u.d "
    "AND x.gateway_product_id = $1 AND x.gateway_device_name = $2) ORDER BY u.i LIMIT 1",
    SUB_NP};

/* One statement, one transaction: the batch's messages, then the reported
 * properties merged per device in arrival order (jsonb keeps the last of
 * duplicate keys, so a later report wins). Every parameter is a text array
 * literal: per message its device, handle, type, method, msgToken and body;
 * then per message that reports properties its device and the values. */
enum {
    BATCH_P_PID, BATCH_P_DN, BATCH_P_HANDLE, BATCH_P_TYPE, BATCH_P_METHOD, BATCH_P_TOKEN, BATCH_P_BODY,
    BATCH_P_PROPS_PID, BATCH_P_PROPS_DN, BATCH_P_PROPS, BATCH_NP
};
static const igw_db_stmt stmt_batch = {
    "igw_edge_batch",
    "WITH m AS (INSERT INTO device_messages (product_id, device_name, handle, msg_type, method, msg_token, body) "
    "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[]) "
    "RETURNING 1), "
    "p AS (SELECT r.pid, r.dn, jsonb_object_agg(e.key, e.value ORDER BY r.ord) AS props "
    "FROM unnest($8::text[], $9::text[], $10::jsonb[]) WITH ORDINALITY AS r(pid, dn, props, ord) "
    "CROSS JOIN LATERAL jsonb_each(r.props) AS e GROUP BY r.pid, r.dn), "
    "u AS (UPDATE devices d SET properties = d.properties || p.props FROM p "
    "WHERE d.product_id = p.pid AND d.device_name = p.dn RETURNING 1) "
    "SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM u)",
    BATCH_NP};

/* ---- the device cache ------------------------------------------------------- */

typedef struct device {
    struct device *next;
    char pid[NAME_CAP], dn[NAME_CAP];
    bool found;
    unsigned char secret[IGW_DEVAUTH_SECRET_MAX];
    size_t secret_len;
    bool is_gateway;
    char gw_pid[NAME_CAP], gw_dn[NAME_CAP]; /* "" when not bound */
    igw_arena model_arena;
    igw_thingmodel *model; /* NULL when the product's model does not load */
    int64_t fetched_ms;
} device;

typedef struct job job;

/* A batch being committed on connection `slot`. */
typedef struct batch {
    igw_edge *e;
    unsigned slot;
    job *jobs;
} batch;

struct igw_edge {
    h2o_loop_t *loop;
    igw_db *db[IGW_EDGE_MAX_DB]; /* batches alternate between them */
    bool busy[IGW_EDGE_MAX_DB];   /* a batch is being committed on it */
    unsigned ndb, next_db;
    igw_edge_settings set;
    device *buckets[CACHE_BUCKETS];
    unsigned ncached;
    job *pending, **pending_tail; /* the next batch */
    unsigned npending;
    h2o_timeout_t flush_timeout;
    h2o_timeout_entry_t flush_entry;
    igw_jw jw; /* replies and batch arrays */
    bool closing; /* destroy began: nothing new reaches the database */
    unsigned njobs; /* uplinks not yet answered */
    atomic_uint_fast64_t refused_mqtt; /* MQTT uplinks the strict decoder refused (single writer) */
    igw_edge_logslot refused_log[REFUSED_LOG_SLOTS];
};

/* ---- jobs ------------------------------------------------------------------- */

struct job {
    igw_edge *e;
    igw_edge_done done;
    void *arg;
    job *next;                 /* in the batch */
    igw_arena arena;
    bool http;
    char handle[IGW_Handle_MAX + 1], type[IGW_MsgType_MAX + 1]; /* handle without '$' */
    char pid[NAME_CAP], dn[NAME_CAP];           /* target */
    char auth_pid[NAME_CAP], auth_dn[NAME_CAP]; /* HTTP: the authenticated device */
    char *username, *password;
    char log_id[IGW_LOG_ID_MAX + 1]; /* the request's, for the log; "" for MQTT */
    char *payload;
    size_t len;
    igw_DeviceMessage *msg;
    bool auth_only;            /* igw_edge_authorize: stop once the target is known */
    bool dry_run;              /* the bench's reference: no database write */
    const igw_proto_row *row;
    igw_str props; /* properties to merge into the device's record, or ptr NULL */
    bool solo;     /* committed alone: its batch failed on a value (SQLSTATE 22, 23) */
    unsigned retries;
    igw_str sub_p, sub_d; /* subdevices: text arrays */
    unsigned nsub;
    const void *params; /* the row's params type decoded (decode_params), or NULL */
    bool settling; /* a command reply went to results.c (stored with its result, or back as a plain uplink) */
};

uint64_t igw_edge_device_hash(const char *pid, const char *dn)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const char *p = pid; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
    for (const char *p = dn; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

static void device_free(device *d)
{
    igw_arena_free(&d->model_arena);
    free(d);
}

static void cache_clear(igw_edge *e)
{
    for (unsigned i = 0; i < CACHE_BUCKETS; i++) {
        device *d = e->buckets[i];
        while (d) {
            device *n = d->next;
            device_free(d);
            d = n;
        }
        e->buckets[i] = NULL;
    }
    e->ncached = 0;
}

static device *cache_get(igw_edge *e, const char *pid, const char *dn)
{
    device **pp = &e->buckets[igw_edge_device_hash(pid, dn) % CACHE_BUCKETS];
    for (device *d = *pp; d; pp = &d->next, d = d->next) {
        if (strcmp(d->pid, pid) || strcmp(d->dn, dn))
            continue;
        if (igw_clock_ms() - d->fetched_ms < (int64_t)e->set.cache_ttl_ms)
            return d;
        *pp = d->next; /* stale */
        device_free(d);
        e->ncached--;
        return NULL;
    }
    return NULL;
}

static void cache_put(igw_edge *e, device *nd)
{
    device **pp = &e->buckets[igw_edge_device_hash(nd->pid, nd->dn) % CACHE_BUCKETS];
    for (device *d = *pp; d; pp = &d->next, d = d->next)
        if (!strcmp(d->pid, nd->pid) && !strcmp(d->dn, nd->dn)) {
            *pp = d->next;
            device_free(d);
            e->ncached--;
            break;
        }
    if (e->ncached >= CACHE_MAX)
        cache_clear(e);
    pp = &e->buckets[igw_edge_device_hash(nd->pid, nd->dn) % CACHE_BUCKETS];
    nd->next = *pp;
    *pp = nd;
    e->ncached++;
}

/* A device record from a lookup row (or a negative record). NULL: out of memory. */
static device *device_from_row(const char *pid, const char *dn, const PGresult *res)
{
    device *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    snprintf(d->pid, sizeof d->pid, "%s", pid);
    snprintf(d->dn, sizeof d->dn, "%s", dn);
    d->fetched_ms = igw_clock_ms();
    igw_arena_init(&d->model_arena, MODEL_ARENA);
    if (PQntuples(res) != 1)
        return d;
    d->found = true;
    if (igw_devauth_secret_decode(PQgetvalue(res, 0, DEVICE_C_SECRET), d->secret, sizeof d->secret, &d->secret_len))
        d->secret_len = 0; /* an unusable secret: every credential fails */
    d->is_gateway = PQgetvalue(res, 0, DEVICE_C_IS_GATEWAY)[0] == 't';
    snprintf(d->gw_pid, sizeof d->gw_pid, "%s", PQgetvalue(res, 0, DEVICE_C_GW_PID));
    snprintf(d->gw_dn, sizeof d->gw_dn, "%s", PQgetvalue(res, 0, DEVICE_C_GW_DN));
    igw_json err;
    const char *model = PQgetvalue(res, 0, DEVICE_C_MODEL);
    if (igw_thingmodel_load(model, (size_t)PQgetlength(res, 0, DEVICE_C_MODEL), &d->model_arena, &d->model, &err)) {
        igw_log(IGW_LOG_WARN, NULL, "edge: product %s: thing model does not load: %s at %s", pid, err.reason,
                err.path);
        d->model = NULL;
    }
    return d;
}

/* ---- finishing -------------------------------------------------------------- */

static void job_free(job *j)
{
    j->e->njobs--;
    igw_arena_free(&j->arena);
    free(j->payload);
    free(j->username);
    free(j->password);
    free(j);
}

/* Answers and frees the job. data: raw JSON for the reply's data, or NULL. */
static void finish(job *j, int cls, const char *reason, const char *path, const char *data, size_t dlen)
{
    igw_edge *e = j->e;
    igw_edge_result r = {
        .cls = cls,
        .reason = reason ? reason : "",
        .path = path ? path : "",
        .reply_topic = igw_edge_reply_topic(j->row),
        .handle = j->handle,
        .type = j->type,
        .product_id = j->pid,
        .device_name = j->dn,
    };
    if (j->msg) {
        igw_DeviceReply rep = {0};
        rep.has = IGW_DeviceReply_code | IGW_DeviceReply_method | IGW_DeviceReply_msgToken;
        rep.code = igw_error_classes[cls].code;
        rep.method = igw_edge_reply_method(j->row, j->msg->method);
        rep.msgToken = j->msg->msgToken;
        if (cls != IGW_ERR_OK) {
            rep.has |= IGW_DeviceReply_msg;
            rep.msg = (igw_str){r.reason, strlen(r.reason)};
        }
        if (data) {
            rep.has |= IGW_DeviceReply_data;
            rep.data = (igw_str){data, dlen};
        }
        igw_jw_reset(&e->jw);
        igw_encode_DeviceReply(&e->jw, &rep);
        if (!igw_jw_status(&e->jw)) {
            r.reply = e->jw.buf;
            r.reply_len = e->jw.len;
        }
    }
    j->done(j->arg, &r);
    job_free(j);
}

static void fail_internal(job *j, const char *what, const char *err)
{
    igw_log(IGW_LOG_ERROR, j->log_id, "edge: %s: %s", what, err ? err : "unknown");
    finish(j, IGW_ERR_INTERNAL, "internal error", "", NULL, 0);
}

/* A failed query of `what`, answered by its class (igw_db_error_class):
 * a message write that may have committed is an unknown outcome. One that
 * was sent and never answered is logged; a full queue is not (as before). */
static void fail_db(job *j, const char *what, const char *err, bool write)
{
    igw_err cls = igw_db_error_class(err, write);
    if (cls == IGW_ERR_INTERNAL) {
        fail_internal(j, what, err);
        return;
    }
    if (!igw_db_not_sent(err))
        igw_log(IGW_LOG_WARN, j->log_id, "edge: %s: %s", what, err);
    finish(j, cls, igw_edge_db_reason(cls), "", NULL, 0);
}

/* ---- the batch (group commit) ------------------------------------------------ */

/* Appends one element of a PostgreSQL text array literal. */
static void array_elem(igw_jw *w, bool first, const char *s, size_t n, bool null)
{
    if (!first)
        igw_jw_raw(w, ",", 1);
    if (null) {
        igw_jw_raw(w, "NULL", 4);
        return;
    }
    igw_jw_raw(w, "\"", 1);
    size_t from = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '"' || s[i] == '\\') {
            igw_jw_raw(w, s + from, i - from);
            igw_jw_raw(w, "\\", 1);
            from = i;
        }
    igw_jw_raw(w, s + from, n - from);
    igw_jw_raw(w, "\"", 1);
}

static void flush(igw_edge *e);

static void arm_flush(igw_edge *e);

/* The device's answer to a downlink of an application's command: the
 * protocol row says so (schema: `answers`). */
static bool is_command_reply(const job *j)
{
    return j->row && j->row->answers;
}

/* Puts jobs (a list) back at the head of the pending batch, in order. */
static void requeue(igw_edge *e, job *jobs)
{
    job *last = jobs;
    unsigned n = 1;
    while (last->next) {
        last = last->next;
        n++;
    }
    last->next = e->pending;
    if (!e->pending)
        e->pending_tail = &last->next;
    e->pending = jobs;
    e->npending += n;
}

/* The engine's answer to a message on a leg, on this worker's thread. */
static void on_engine_answer(void *arg, const igw_engine_answer *a)
{
    job *j = arg;
    finish(j, a->cls, a->reason, "", a->data, a->data ? a->data_len : 0);
}

/* A stored message on a leg: the engine that owns legs answers it. */
static void to_engine(job *j)
{
    igw_engine *en = j->e->set.engine ? *j->e->set.engine : NULL;
    igw_DeviceMessage *m = j->msg;
    igw_engine_uplink u = {
        .product_id = j->pid, .device_name = j->dn, .method = m->method, .msg_token = m->msgToken,
        .session_id = m->sessionId, /* required by the schema for these methods */
        .params = m->has & IGW_DeviceMessage_params ? m->params : (igw_str){NULL, 0},
        .code = m->has & IGW_DeviceMessage_code ? m->code : 0,
        .data = m->has & IGW_DeviceMessage_data ? m->data : (igw_str){NULL, 0}};
    if (!en || !j->e->set.back.post || igw_engine_uplink_submit(en, &u, &j->e->set.back, on_engine_answer, j) != 0)
        finish(j, IGW_ERR_UNAVAILABLE, "sessions are not available on this node", "", NULL, 0);
}

/* A failed batch is rolled back as a whole. One bad value (SQLSTATE class
 * 22 data exception, 23 constraint) must not fail the other devices'
 * messages: each is retried alone. A lost deadlock or serialization race
 * (class 40) is retried as it was. Anything else fails the batch
 * (igw_edge_decide_batch). */
static void on_batch(void *arg, const PGresult *res, const char *err)
{
    batch *b = arg;
    igw_edge *e = b->e;
    job *jobs = b->jobs;
    e->busy[b->slot] = false;
    free(b);
    igw_edge_batch_facts f = {.committed = res != NULL, .value = !res && igw_db_value_error(err),
                              .race = !res && igw_db_lost_race(err), .several = jobs->next != NULL,
                              .retries = jobs->retries, .closing = e->closing};
    igw_edge_batch next = igw_edge_decide_batch(&f);
    if (next == IGW_EDGE_BATCH_RETRY_ALONE || next == IGW_EDGE_BATCH_RETRY) {
        for (job *j = jobs; j; j = j->next) {
            j->solo = j->solo || next == IGW_EDGE_BATCH_RETRY_ALONE;
            j->retries++;
        }
        igw_log(IGW_LOG_WARN, NULL, "edge: batch failed (%s), retrying %s", err,
                next == IGW_EDGE_BATCH_RETRY_ALONE ? "each message alone" : "it");
        requeue(e, jobs);
    } else {
        for (job *j = jobs, *n; j; j = n) {
            n = j->next;
            if (next == IGW_EDGE_BATCH_STORED && j->row &&
                (j->row->check == IGW_PROTO_CHECK_SESSION || j->row->check == IGW_PROTO_CHECK_RING))
                to_engine(j);
            else if (next == IGW_EDGE_BATCH_STORED)
                finish(j, IGW_ERR_OK, NULL, NULL, NULL, 0);
            else if (next == IGW_EDGE_BATCH_BAD_VALUE)
                finish(j, IGW_ERR_PARAMETER, "the message cannot be stored", "", NULL, 0);
            else
                fail_db(j, "batch commit failed", err, true);
        }
    }
    if (e->npending)
        arm_flush(e); /* after this turn: no recursion through a failing send */
}

/* A connection for other queries: round robin. */
static igw_db *query_db(igw_edge *e)
{
    return e->db[e->next_db++ % e->ndb];
}

static void flush_one(igw_edge *e, unsigned slot);

/* Sends batches while there are pending uplinks and idle connections. */
static void flush(igw_edge *e)
{
    for (unsigned i = 0; i < e->ndb && e->npending && !e->closing; i++)
        if (!e->busy[i])
            flush_one(e, i);
}

static void flush_one(igw_edge *e, unsigned slot)
{
    batch *b = malloc(sizeof *b);
    if (!b) {
        arm_flush(e); /* try again next turn */
        return;
    }
    b->e = e;
    b->slot = slot;
    job *batch = e->pending;
    unsigned n = 0, max = batch->solo ? 1 : e->set.batch_max;
    job **tail = &e->pending;
    while (*tail && n < max && !(n && (*tail)->solo)) {
        tail = &(*tail)->next;
        n++;
    }
    e->pending = *tail;
    *tail = NULL;
    e->npending -= n;
    if (!e->pending)
        e->pending_tail = &e->pending;

    /* The text arrays, one after the other in one buffer. */
    igw_jw *w = &e->jw;
    igw_jw_reset(w);
    size_t start[BATCH_NP];
    for (int col = 0; col < BATCH_NP; col++) {
        start[col] = w->len;
        igw_jw_raw(w, "{", 1);
        bool first = true;
        for (job *j = batch; j; j = j->next) {
            if (col >= BATCH_P_PROPS_PID && !j->props.ptr)
                continue;
            const char *s = NULL;
            size_t len = 0;
            switch (col) {
            case BATCH_P_PID: case BATCH_P_PROPS_PID: s = j->pid; len = strlen(s); break;
            case BATCH_P_DN: case BATCH_P_PROPS_DN: s = j->dn; len = strlen(s); break;
            case BATCH_P_HANDLE: s = j->handle; len = strlen(s); break;
            case BATCH_P_TYPE: s = j->type; len = strlen(s); break;
            case BATCH_P_METHOD: s = j->msg->method.ptr; len = j->msg->method.len; break;
            case BATCH_P_TOKEN: s = j->msg->msgToken.ptr; len = j->msg->msgToken.len; break;
            case BATCH_P_BODY: s = j->payload; len = j->len; break;
            case BATCH_P_PROPS: s = j->props.ptr; len = j->props.len; break;
            }
            array_elem(w, first, s, len, false);
            first = false;
        }
        igw_jw_raw(w, "}", 1);
        igw_jw_raw(w, "", 1); /* NUL: each array is a C string */
    }
    b->jobs = batch;
    e->busy[slot] = true;
    if (igw_jw_status(w)) {
        on_batch(b, NULL, IGW_DB_NOT_SENT "out of memory building the batch");
        return;
    }
    const char *values[BATCH_NP];
    for (int col = 0; col < BATCH_NP; col++)
        values[col] = w->buf + start[col];
    if (igw_db_exec(e->db[slot], &stmt_batch, values, NULL, NULL, on_batch, b))
        on_batch(b, NULL, IGW_DB_NOT_SENT "database queue full");
}

static void on_flush_timeout(h2o_timeout_entry_t *entry)
{
    igw_edge *e = H2O_STRUCT_FROM_MEMBER(igw_edge, flush_entry, entry);
    flush(e);
}

static void enqueue(job *j);

/* results.c's answer for a command reply (igw_results_reply). */
static void on_settled(void *arg, int status, const char *err)
{
    job *j = arg;
    switch (igw_edge_decide_settled(status, status == IGW_RESULTS_FAILED && igw_db_value_error(err))) {
    case IGW_EDGE_SETTLED_OK:
        finish(j, IGW_ERR_OK, NULL, NULL, NULL, 0);
        break;
    case IGW_EDGE_SETTLED_UPLINK:
        enqueue(j); /* stored as any uplink */
        break;
    case IGW_EDGE_SETTLED_FAILED:
        fail_db(j, "reply and result commit failed", err, true);
        break;
    }
}

static void enqueue(job *j)
{
    igw_edge *e = j->e;
    igw_edge_queue_facts f = {.closing = e->closing, .npending = e->npending, .pending_max = PENDING_MAX,
                              .dry_run = j->dry_run, .command_reply = is_command_reply(j),
                              .props = j->props.ptr != NULL, .settling = j->settling};
    igw_edge_refusal r;
    igw_edge_queue q = igw_edge_decide_queue(&f, &r);
    if (q == IGW_EDGE_QUEUE_REFUSED) {
        finish(j, r.cls, r.reason, r.path, NULL, 0);
        return;
    }
    if (q == IGW_EDGE_QUEUE_DRY_RUN) {
        finish(j, IGW_ERR_OK, NULL, NULL, NULL, 0);
        return;
    }
    /* A reply to a pending command is stored with the command's result,
     * in one commit (results.c); otherwise, or once it settles nothing, it
     * joins the batch like any uplink. */
    if (q == IGW_EDGE_QUEUE_SETTLE) {
        j->settling = true;
        igw_results_reply_in in = {
            .product_id = j->pid, .device_name = j->dn, .device_token = j->msg->msgToken, .code = j->msg->code,
            .msg = j->msg->has & IGW_DeviceMessage_msg ? j->msg->msg : (igw_str){NULL, 0},
            .response = j->msg->has & IGW_DeviceMessage_response ? j->msg->response : (igw_str){NULL, 0},
            .handle = j->handle, .type = j->type, .method = j->msg->method, .body = j->payload, .body_len = j->len,
            .pending = e->set.pending};
        if (igw_results_reply(query_db(e), &in, on_settled, j) != 0)
            finish(j, IGW_ERR_UNAVAILABLE, "busy, retry later", "", NULL, 0); /* stored nowhere: sent again */
        return;
    }
    j->next = NULL;
    *e->pending_tail = j;
    e->pending_tail = &j->next;
    e->npending++;
    arm_flush(e);
}

/* Flushes after this loop turn, so the uplinks that arrived together share
 * a transaction; while one is in flight, the next one grows. */
static void arm_flush(igw_edge *e)
{
    if (!e->closing && !h2o_timeout_is_linked(&e->flush_entry))
        h2o_timeout_link(e->loop, &e->flush_timeout, &e->flush_entry);
}

/* ---- checks ----------------------------------------------------------------- */

static void set_json_error(job *j, igw_json *err, int *cls, const char **reason, const char **path)
{
    *cls = err->err == IGW_JERR_NOMEM ? IGW_ERR_INTERNAL : IGW_ERR_PARAMETER;
    *reason = err->reason ? err->reason : "invalid message";
    *path = igw_arena_strndup(&j->arena, err->path, strlen(err->path));
    if (!*path)
        *path = "";
}

/* A row's params type (schema: `params`): the message's params, {} when
 * omitted, through its type's strict decoder; error paths under /params. */
static int decode_params(job *j, igw_json *err)
{
    const igw_proto_params *pt = &j->row->params;
    igw_str raw = j->msg->has & IGW_DeviceMessage_params ? j->msg->params : (igw_str){"{}", 2};
    igw_json s;
    igw_json_init(&s, raw.ptr, raw.len, &j->arena, 10);
    void *out = igw_arena_alloc(&j->arena, pt->size);
    if (!out)
        igw_json_fail(&s, IGW_JERR_NOMEM, "out of memory");
    else if (pt->decode(&s, out) == 0 && igw_json_finish(&s) == 0) {
        j->params = out;
        return 0;
    }
    igw_json_prefix_key(&s, "params", 6);
    *err = s;
    return -1;
}

/* packReport (PackReportParams): the properties and each event against the model. */
static int check_pack(job *j, const igw_thingmodel *m, igw_json *err)
{
    const igw_PackReportParams *p = j->params;
    if (p->has & IGW_PackReportParams_properties) {
        if (igw_thingmodel_check_properties(m, p->properties.ptr, p->properties.len, 0,
                                            IGW_PATH_params_properties, &j->arena, err))
            return -1;
        j->props = p->properties;
    }
    for (uint32_t i = 0; i < p->events.n; i++) {
        const igw_PackEvent *ev = &p->events.v[i];
        bool has = ev->has & IGW_PackEvent_params;
        char prefix[64];
        snprintf(prefix, sizeof prefix, IGW_PATH_params_events_ITEM_params, i);
        if (igw_thingmodel_check_event(m, ev->eventID.ptr, ev->eventID.len, has ? ev->params.ptr : "{}",
                                       has ? ev->params.len : 2, prefix, &j->arena, err))
            return -1;
    }
    return 0;
}

/* A sub-device name the schema's Ident admits but a device cannot have
 * (devauth's rule): the path /params/devices/<i>/<field>. */
static int bad_subdevice(igw_json *err, uint32_t i, const char *field)
{
    igw_json_init(err, "", 0, NULL, 1);
    igw_json_fail(err, IGW_JERR_FORMAT, "not a valid device identifier");
    igw_json_prefix_key(err, field, strlen(field));
    igw_json_prefix_index(err, i);
    igw_json_prefix_key(err, "devices", 7);
    return igw_json_prefix_key(err, "params", 6);
}

/* gateway topo/online/offline (TopologyParams): the sub-devices as two
 * text arrays for the binding query. */
static int read_subdevices(job *j, igw_json *err)
{
    const igw_TopologyParams *tp = j->params;
    igw_jw p, d;
    igw_jw_init(&p);
    igw_jw_init(&d);
    igw_jw_raw(&p, "{", 1);
    igw_jw_raw(&d, "{", 1);
    int rc = -1;
    for (uint32_t i = 0; i < tp->devices.n; i++) {
        const igw_Target *t = &tp->devices.v[i];
        if (!igw_devauth_name_ok(t->productID.ptr, t->productID.len)) {
            bad_subdevice(err, i, "productID");
            goto out;
        }
        if (!igw_devauth_name_ok(t->deviceName.ptr, t->deviceName.len)) {
            bad_subdevice(err, i, "deviceName");
            goto out;
        }
        array_elem(&p, i == 0, t->productID.ptr, t->productID.len, false);
        array_elem(&d, i == 0, t->deviceName.ptr, t->deviceName.len, false);
    }
    j->nsub = tp->devices.n;
    igw_jw_raw(&p, "}", 1);
    igw_jw_raw(&d, "}", 1);
    if (igw_jw_status(&p) || igw_jw_status(&d) || !(j->sub_p.ptr = igw_arena_strndup(&j->arena, p.buf, p.len)) ||
        !(j->sub_d.ptr = igw_arena_strndup(&j->arena, d.buf, d.len))) {
        igw_json_init(err, "", 0, NULL, 1);
        igw_json_fail(err, IGW_JERR_NOMEM, "out of memory");
        goto out;
    }
    rc = 0;
out:
    igw_jw_free(&p);
    igw_jw_free(&d);
    return rc;
}

/* ---- the steps ---------------------------------------------------------------- */

static void on_query_data(void *arg, const PGresult *res, const char *err)
{
    job *j = arg;
    if (!res) {
        fail_db(j, "query failed", err, false);
        return;
    }
    if (PQntuples(res) != 1) {
        finish(j, IGW_ERR_NOT_FOUND, "unknown device", "", NULL, 0);
        return;
    }
    finish(j, IGW_ERR_OK, NULL, NULL, PQgetvalue(res, 0, DATA_C_JSON), (size_t)PQgetlength(res, 0, DATA_C_JSON));
}

static void on_subdevices(void *arg, const PGresult *res, const char *err)
{
    job *j = arg;
    if (!res) {
        fail_db(j, "subdevice query failed", err, false);
        return;
    }
    if (PQntuples(res) == 1) {
        igw_edge_refusal r;
        igw_edge_subdevice_refusal(strtol(PQgetvalue(res, 0, SUB_C_ITEM), NULL, 10), &r);
        finish(j, r.cls, r.reason, r.path, NULL, 0);
        return;
    }
    enqueue(j);
}

/* A camera's catalog report, written (or not at all). */
static void on_catalog(void *arg, const igw_recordings_report_result *r)
{
    job *j = arg;
    if (r->status == IGW_RECORDINGS_REPORT_FAILED) {
        fail_db(j, "catalog report", r->err, true);
        return;
    }
    igw_edge_refusal no;
    if (igw_edge_catalog_refuses(r, &no)) {
        finish(j, no.cls, no.reason, no.path, NULL, 0);
        return;
    }
    igw_RecordingReportData d = {.has = IGW_RecordingReportData__REQUIRED,
                                 .stored = r->stored, .stale = r->stale, .removed = r->removed};
    igw_jw w;
    igw_jw_init(&w);
    igw_encode_RecordingReportData(&w, &d);
    if (igw_jw_status(&w))
        finish(j, IGW_ERR_OK, NULL, NULL, NULL, 0);
    else
        finish(j, IGW_ERR_OK, NULL, NULL, w.buf, w.len);
    igw_jw_free(&w);
}

/* The target device is known: protocol row, model check, then the outcome. */
static void process(job *j, const device *target)
{
    if (j->auth_only) {
        (void)target;
        finish(j, IGW_ERR_OK, NULL, NULL, NULL, 0);
        return;
    }
    igw_DeviceMessage *m = j->msg;
    igw_proto_status st = igw_proto_find(&igw_proto_device, j->handle, strlen(j->handle), j->type,
                                         strlen(j->type), m->method.ptr, m->method.len, &j->row);
    igw_edge_refusal no;
    if (igw_edge_row_refuses(st, &no)) {
        finish(j, no.cls, no.reason, no.path, NULL, 0);
        return;
    }
    igw_json err;
    igw_json_init(&err, "", 0, NULL, 1);
    const igw_thingmodel *model = target->model;
    bool has_params = m->has & IGW_DeviceMessage_params;
    int rc = j->row->params.decode ? decode_params(j, &err) : 0;
    if (igw_edge_needs_model(j->row->check) && !model) {
        finish(j, IGW_ERR_INTERNAL, "the product's thing model is not usable", "", NULL, 0);
        return;
    }
    switch (rc ? IGW_PROTO_CHECK_NONE : j->row->check) {
    case IGW_PROTO_CHECK_NONE:
        break;
    case IGW_PROTO_CHECK_PROPERTIES:
        if (has_params) {
            rc = igw_thingmodel_check_properties(model, m->params.ptr, m->params.len, 0, IGW_PATH_params, &j->arena, &err);
            j->props = m->params;
        }
        break;
    case IGW_PROTO_CHECK_PACK: /* the row's params type: PackReportParams */
        rc = check_pack(j, model, &err);
        break;
    case IGW_PROTO_CHECK_EVENT:
        if (!igw_thingmodel_event(model, m->eventID.ptr, m->eventID.len)) {
            finish(j, IGW_ERR_PARAMETER, "unknown event", IGW_PATH_eventID, NULL, 0);
            return;
        }
        rc = igw_thingmodel_check_event(model, m->eventID.ptr, m->eventID.len, has_params ? m->params.ptr : "{}",
                                        has_params ? m->params.len : 2, IGW_PATH_params, &j->arena, &err);
        break;
    case IGW_PROTO_CHECK_ACTION: /* actionID: required by the schema (DeviceMessage) */
        if (!igw_thingmodel_action(model, m->actionID.ptr, m->actionID.len)) {
            finish(j, IGW_ERR_PARAMETER, "unknown action", IGW_PATH_actionID, NULL, 0);
            return;
        }
        if (m->has & IGW_DeviceMessage_response)
            rc = igw_thingmodel_check_action_output(model, m->actionID.ptr, m->actionID.len, m->response.ptr,
                                                    m->response.len, IGW_PATH_response, &j->arena, &err);
        break;
    case IGW_PROTO_CHECK_SUBDEVICES: /* the row's params type: TopologyParams */
        rc = read_subdevices(j, &err);
        break;
    case IGW_PROTO_CHECK_SESSION: /* the leg's engine checks it, once stored (to_engine) */
    case IGW_PROTO_CHECK_RING:    /* the door-bell's engine, likewise */
        break;
    case IGW_PROTO_CHECK_RECORDINGS: { /* the row's params type: RecordingReport */
        char *path = igw_arena_alloc(&j->arena, 96);
        const char *why = path ? igw_recordings_report_check(j->params, path, 96) : "out of memory";
        if (why) {
            finish(j, path ? IGW_ERR_PARAMETER : IGW_ERR_INTERNAL, why, path ? path : "", NULL, 0);
            return;
        }
        break;
    }
    }
    if (rc) {
        int cls;
        const char *reason, *path;
        set_json_error(j, &err, &cls, &reason, &path);
        finish(j, cls, reason, path, NULL, 0);
        return;
    }
    const char *values[SUB_NP] = {[SUB_P_PID] = j->pid, [SUB_P_DN] = j->dn, [SUB_P_PIDS] = j->sub_p.ptr,
                                  [SUB_P_DNS] = j->sub_d.ptr}; /* the device queries take the first two */
    int sent = 0;
    switch (igw_edge_decide_store(j->row, target->is_gateway, &no)) {
    case IGW_EDGE_STORE_PROPERTIES:
        sent = igw_db_exec(query_db(j->e), &stmt_properties, values, NULL, NULL, on_query_data, j);
        break;
    case IGW_EDGE_STORE_CONFIG:
        sent = igw_db_exec(query_db(j->e), &stmt_config, values, NULL, NULL, on_query_data, j);
        break;
    case IGW_EDGE_STORE_MESSAGES:
        sent = igw_db_exec(query_db(j->e), &stmt_messages, values, NULL, NULL, on_query_data, j);
        break;
    case IGW_EDGE_STORE_CATALOG: /* written or refused as a whole */
        sent = igw_recordings_report(query_db(j->e), j->pid, j->dn, j->params, m->params, on_catalog, j);
        break;
    case IGW_EDGE_STORE_SUBDEVICES:
        sent = igw_db_exec(query_db(j->e), &stmt_subdevices, values, NULL, NULL, on_subdevices, j);
        break;
    case IGW_EDGE_STORE_REFUSED:
        finish(j, no.cls, no.reason, no.path, NULL, 0);
        return;
    case IGW_EDGE_STORE_BATCH:
        enqueue(j);
        return;
    }
    if (sent)
        finish(j, IGW_ERR_UNAVAILABLE, "busy, retry later", "", NULL, 0);
}

static void lookup(job *j, const char *pid, const char *dn, void (*next)(job *j, const device *d));

static void step_target(job *j, const device *d)
{
    igw_edge_refusal no;
    if (igw_edge_bound_refuses(d->found, d->gw_pid, d->gw_dn, j->http ? j->auth_pid : NULL, j->auth_dn, &no)) {
        finish(j, no.cls, no.reason, no.path, NULL, 0);
        return;
    }
    process(j, d);
}

static void step_auth(job *j, const device *d)
{
    /* Unknown device and wrong credentials do the same work and give the
     * same answer: nothing tells which part failed. */
    int rc = igw_devauth_verify(j->username, j->password, d->found ? d->secret : NULL,
                                d->found ? d->secret_len : 0, (int64_t)time(NULL), NULL);
    igw_edge_refusal no;
    if (igw_edge_credentials_refuse(rc, d->found, d->secret_len, &no)) {
        igw_log(IGW_LOG_DEBUG, j->log_id, "edge: device %s/%s: credentials refused: %s", j->auth_pid, j->auth_dn,
                no.log);
        finish(j, no.cls, no.reason, no.path, NULL, 0);
        return;
    }
    switch (igw_edge_decide_actor(j->auth_pid, j->auth_dn, j->pid, j->dn, d->is_gateway, &no)) {
    case IGW_EDGE_ACTOR_SELF:
        process(j, d);
        return;
    case IGW_EDGE_ACTOR_REFUSED:
        finish(j, no.cls, no.reason, no.path, NULL, 0);
        return;
    case IGW_EDGE_ACTOR_SUBDEVICE:
        lookup(j, j->pid, j->dn, step_target);
        return;
    }
}

typedef struct lookup_ctx {
    job *j;
    void (*next)(job *j, const device *d);
    char pid[NAME_CAP], dn[NAME_CAP];
} lookup_ctx;

static void on_device(void *arg, const PGresult *res, const char *err)
{
    lookup_ctx *c = arg;
    job *j = c->j;
    void (*next)(job *, const device *) = c->next;
    if (!res) {
        free(c);
        fail_db(j, "device lookup failed", err, false);
        return;
    }
    device *d = device_from_row(c->pid, c->dn, res);
    free(c);
    if (!d) {
        fail_internal(j, "device lookup", "out of memory");
        return;
    }
    cache_put(j->e, d);
    next(j, d);
}

static void lookup(job *j, const char *pid, const char *dn, void (*next)(job *j, const device *d))
{
    const device *d = cache_get(j->e, pid, dn);
    if (d) {
        next(j, d);
        return;
    }
    lookup_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        fail_internal(j, "device lookup", "out of memory");
        return;
    }
    c->j = j;
    c->next = next;
    snprintf(c->pid, sizeof c->pid, "%s", pid);
    snprintf(c->dn, sizeof c->dn, "%s", dn);
    const char *values[DEV_NP] = {[DEV_P_PID] = c->pid, [DEV_P_DN] = c->dn};
    if (igw_db_exec(query_db(j->e), &stmt_device, values, NULL, NULL, on_device, c)) {
        free(c);
        finish(j, IGW_ERR_UNAVAILABLE, "busy, retry later", "", NULL, 0);
    }
}

/* ---- the public side ----------------------------------------------------------- */

static void start(job *j, const igw_uplink *u);

static char *dup_str(igw_str s)
{
    char *p = malloc(s.len + 1);
    if (p) {
        memcpy(p, s.ptr, s.len);
        p[s.len] = '\0';
    }
    return p;
}

/* A message of the refused payload's method and msgToken
 * (igw_edge_recover_identity), or NULL. */
static igw_DeviceMessage *recover_identity(job *j)
{
    igw_str method, token;
    if (!igw_edge_recover_identity(j->payload, j->len, &j->arena, &method, &token))
        return NULL;
    igw_DeviceMessage *m = igw_arena_alloc(&j->arena, sizeof *m);
    if (!m)
        return NULL;
    memset(m, 0, sizeof *m);
    m->has = IGW_DeviceMessage_method | IGW_DeviceMessage_msgToken;
    m->method = method;
    m->msgToken = token;
    return m;
}

/* An MQTT uplink the strict decoder refused: counted (/metrics), logged once
 * per device a minute (a device stuck on a bad payload must not flood the
 * log), and answered on the device's reply topic like any other refusal
 * when its method and msgToken can still be read. */
static void refused_mqtt(job *j, const igw_uplink *u, const igw_decode_error *derr)
{
    igw_edge *e = j->e;
    atomic_store_explicit(&e->refused_mqtt, atomic_load_explicit(&e->refused_mqtt, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    char pid[NAME_CAP] = "?", dn[NAME_CAP] = "?"; /* the MQTT client checked the topic's names: they fit */
    (void)(igw_edge_name_copy(pid, sizeof pid, u->product_id) && igw_edge_name_copy(dn, sizeof dn, u->device_name));
    if (igw_edge_log_due(e->refused_log, REFUSED_LOG_SLOTS, igw_edge_device_hash(pid, dn), igw_clock_ms(),
                         REFUSED_LOG_MS))
        igw_log(IGW_LOG_WARN, NULL, "edge: mqtt uplink from %s/%s on %s/%s refused: %s%s%s (its next refusals within a "
                "minute are counted, not logged)", pid, dn, j->handle, j->type, derr->reason, derr->path[0] ? " at " : "",
                derr->path);
    igw_DeviceMessage *m = recover_identity(j);
    if (!m)
        return;
    j->msg = m;
    const igw_proto_row *row = NULL;
    if (igw_proto_find(&igw_proto_device, j->handle, strlen(j->handle), j->type, strlen(j->type), m->method.ptr,
                       m->method.len, &row) == IGW_PROTO_FOUND)
        j->row = row; /* its reply method, as for an uplink refused later */
}

void igw_edge_submit(igw_edge *e, const igw_uplink *u, igw_edge_done done, void *arg)
{
    job *j = calloc(1, sizeof *j);
    if (!j) {
        igw_edge_result r = {.cls = IGW_ERR_INTERNAL, .reason = "out of memory", .path = ""};
        done(arg, &r);
        return;
    }
    e->njobs++;
    j->e = e;
    j->done = done;
    j->arg = arg;
    igw_arena_init(&j->arena, JOB_ARENA);
    j->http = u->username.ptr != NULL;
    j->dry_run = u->dry_run;
    snprintf(j->log_id, sizeof j->log_id, "%s", u->log_id ? u->log_id : "");
    j->payload = dup_str(u->payload);
    j->len = u->payload.len;
    if (!j->payload || (j->http && (!(j->username = dup_str(u->username)) || !(j->password = dup_str(u->password))))) {
        fail_internal(j, "submit", "out of memory");
        return;
    }
    igw_edge_refusal no;
    if (igw_edge_topic_refuses(u->handle, u->type, j->handle, sizeof j->handle, j->type, sizeof j->type, &no)) {
        finish(j, no.cls, no.reason, no.path, NULL, 0);
        return;
    }

    /* The strict decoder first, as on every route. */
    igw_decode_error derr;
    void *body = NULL;
    if (igw_request_decode_body(&igw_gen_api, &igw_routes[IGW_ROUTE_DEVICE_SEND], (igw_str){j->payload, j->len},
                                &j->arena, &body, &derr)) {
        char *path = igw_arena_strndup(&j->arena, derr.path, strlen(derr.path));
        if (!j->http) /* HTTP answers in its envelope; an MQTT device only on its reply topic */
            refused_mqtt(j, u, &derr);
        finish(j, derr.cls, derr.reason, path ? path : "", NULL, 0);
        return;
    }
    j->msg = body;
    start(j, u);
}

/* From the credentials (HTTP) or the topic (MQTT) to the target device. */
static void start(job *j, const igw_uplink *u)
{
    if (j->http) {
        igw_devauth_username un;
        if (igw_devauth_parse_username(j->username, strlen(j->username), &un)) {
            igw_log(IGW_LOG_DEBUG, j->log_id, "edge: credentials refused: malformed username");
            finish(j, IGW_ERR_UNAUTHENTICATED, "invalid device credentials", "", NULL, 0);
            return;
        }
        memcpy(j->auth_pid, un.product_id, sizeof j->auth_pid);
        memcpy(j->auth_dn, un.device_name, sizeof j->auth_dn);
    }
    _Static_assert(sizeof j->pid == sizeof j->dn, "one name bound");
    igw_edge_refusal no;
    if (igw_edge_target_refuses(u->product_id, u->device_name, j->http ? j->auth_pid : NULL, j->auth_dn, j->pid,
                                j->dn, sizeof j->pid, &no)) {
        finish(j, no.cls, no.reason, no.path, NULL, 0);
        return;
    }
    if (j->http)
        lookup(j, j->auth_pid, j->auth_dn, step_auth);
    else
        lookup(j, j->pid, j->dn, step_target);
}

void igw_edge_authorize(igw_edge *e, const igw_uplink *u, igw_edge_done done, void *arg)
{
    job *j = calloc(1, sizeof *j);
    if (!j || !u->username.ptr) {
        free(j);
        igw_edge_result r = {.cls = IGW_ERR_INTERNAL, .reason = "out of memory", .path = ""};
        done(arg, &r);
        return;
    }
    e->njobs++;
    j->e = e;
    j->done = done;
    j->arg = arg;
    j->auth_only = true;
    j->http = true;
    snprintf(j->log_id, sizeof j->log_id, "%s", u->log_id ? u->log_id : "");
    igw_arena_init(&j->arena, JOB_ARENA);
    if (!(j->username = dup_str(u->username)) || !(j->password = dup_str(u->password))) {
        fail_internal(j, "authorize", "out of memory");
        return;
    }
    start(j, u);
}

igw_edge *igw_edge_create(h2o_loop_t *loop, igw_db *const *db, unsigned ndb, const igw_edge_settings *s)
{
    if (ndb == 0 || ndb > IGW_EDGE_MAX_DB)
        return NULL;
    igw_edge *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->loop = loop;
    memcpy(e->db, db, ndb * sizeof *db);
    e->ndb = ndb;
    e->set = *s;
    if (!e->set.batch_max)
        e->set.batch_max = 1;
    e->pending_tail = &e->pending;
    h2o_timeout_init(loop, &e->flush_timeout, 0);
    e->flush_entry.cb = on_flush_timeout;
    igw_jw_init(&e->jw);
    return e;
}

uint64_t igw_edge_refused_mqtt(const igw_edge *e)
{
    return atomic_load_explicit(&e->refused_mqtt, memory_order_relaxed);
}

bool igw_edge_idle(const igw_edge *e)
{
    return e->njobs == 0;
}

void igw_edge_close(igw_edge *e)
{
    e->closing = true;
    if (h2o_timeout_is_linked(&e->flush_entry))
        h2o_timeout_unlink(&e->flush_entry);
}

void igw_edge_destroy(igw_edge *e)
{
    if (!e)
        return;
    igw_edge_close(e);
    /* Jobs in the pending batch; jobs that waited on the database were
     * failed by its destroy, which ran after igw_edge_close. */
    for (job *j = e->pending, *n; j; j = n) {
        n = j->next;
        finish(j, IGW_ERR_UNAVAILABLE, "shutting down", "", NULL, 0);
    }
    e->pending = NULL;
    h2o_timeout_dispose(e->loop, &e->flush_timeout);
    cache_clear(e);
    igw_jw_free(&e->jw);
    free(e);
}
