/* http.c - see http.h. The only file that includes h2o. */
#include "http/http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <h2o.h>

#include "http/accesslog.h"
#include "api.h"
#include "arena.h"
#include "clock.h"
#include "lock.h"
#include "http/ws.h"
#include "jw.h"
#include "http/metrics.h"
#include "core/log.h"
#include "request.h"

#define LISTEN_BACKLOG 1024
/* Bytes the strict stage and a handler may take from a request's arena. */
#define ARENA_LIMIT ((size_t)16 << 20)

/* A worker's life, told to the controlling thread under server.mu. */
typedef enum {
    W_SETUP,   /* the thread makes its loop, context and app state */
    W_READY,   /* set up; waits for igw_http_start (or for the end) */
    W_FAILED,  /* the set-up failed (start_err says why) */
    W_SERVING, /* accepting, until igw_http_stop */
    W_DRAINED, /* stopped serving (drained says whether cleanly); waits for the end */
    W_GONE,    /* freed what it made on its loop (or abandoned it); the thread ends */
} worker_phase;

typedef struct worker {
    igw_server *server;
    unsigned index;
    pthread_t tid;
    bool thread;   /* tid runs (to be joined) */
    worker_phase phase;
    bool go, end;  /* the controller's orders, under server.mu */
    bool drained;
    bool disposed; /* the loop and context were freed (not abandoned) */
    char start_err[256];
    int listen_fd; /* owned until the worker wraps it in an h2o socket */
    h2o_evloop_t *loop;
    h2o_context_t ctx;
    bool ctx_ready;
    h2o_accept_ctx_t accept_ctx;
    h2o_multithread_receiver_t wake;
    h2o_multithread_message_t wake_msg;
    size_t nconns;
    igw_arena arena;      /* per request, reset at its start */
    igw_jw body, log;     /* reply body and access-log line, reused */
    igw_jw data;          /* a success reply's data (igw_http_data), reused */
    igw_metrics_shard *metrics;
    uint64_t id_seed, id_counter;
    struct timespec files_start; /* the app's files request being answered (see on_files_req) */
    void *app_state;
} worker;

struct igw_server {
    igw_config cfg;
    h2o_globalconf_t globalconf;
    igw_metrics *metrics;
    igw_http_app app;
    igw_http_route routes[IGW_HTTP_ROUTES_MAX]; /* app.routes points here */
    igw_http_files files;                       /* app.files points here when set */
    const char *files_index[2];                 /* h2o's index list of them: files.index, NULL */
    unsigned files_slot, none_slot;             /* metrics slots */
    worker *workers;
    unsigned nworkers;
    uint16_t port;
    atomic_bool stopping;
    pthread_mutex_t mu; /* the workers' phases and orders */
    pthread_cond_t cv;
    bool sync_ready;
};

struct igw_exchange {
    worker *w;
    h2o_req_t *req; /* NULL once a held exchange's request was disposed */
    igw_str path;
    unsigned route; /* metrics route slot */
    char id[17];
    struct timespec start;
    bool replied;
    bool contract; /* in its route's handler: answers only the classes the route declares */
    bool held;              /* the handler's exchange: a copy took over */
    bool heap;              /* the copy (igw_http_hold): freed by its reply */
    igw_arena arena;        /* the copy's: the request's decoded data, taken from the worker */
    struct hold_guard *guard; /* a held exchange's link to its request pool */
};

/* Lives in the request's pool: when h2o disposes the request (the reply
 * was sent, or the client went away), it detaches the held exchange. */
typedef struct hold_guard {
    igw_exchange *ex;
} hold_guard;

/* A task for a worker (igw_http_post). */
typedef struct task {
    h2o_multithread_message_t super;
    void (*fn)(void *state, void *arg);
    void *arg;
} task;

/* ---- replies ------------------------------------------------------------ */

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
    }
}

static uint64_t elapsed_us(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t us = (int64_t)(now.tv_sec - start->tv_sec) * 1000000 + (now.tv_nsec - start->tv_nsec) / 1000;
    return us < 0 ? 0 : (uint64_t)us;
}

static void on_guard_dispose(void *p)
{
    hold_guard *g = p;
    if (g->ex) {
        g->ex->req = NULL;
        g->ex->guard = NULL;
    }
}

igw_exchange *igw_http_hold(igw_exchange *ex)
{
    igw_exchange *h = malloc(sizeof *h);
    if (!h)
        return NULL;
    hold_guard *g = h2o_mem_alloc_shared(&ex->req->pool, sizeof *g, on_guard_dispose);
    *h = *ex;
    h->heap = true;
    /* The decoded request lives in the worker's arena, which the next
     * request resets: the held exchange takes its chunks along. */
    h->arena = ex->w->arena;
    igw_arena_init(&ex->w->arena, ARENA_LIMIT);
    g->ex = h;
    h->guard = g;
    ex->held = true;
    return h;
}

bool igw_http_cancelled(const igw_exchange *ex)
{
    return ex->req == NULL;
}

igw_str igw_http_header_value(igw_exchange *ex, const char *name)
{
    size_t n = strlen(name);
    ssize_t i = h2o_find_header_by_str(&ex->req->headers, name, n, -1);
    if (i < 0)
        return (igw_str){NULL, 0};
    const h2o_header_t *h = &ex->req->headers.entries[i];
    return (igw_str){h->value.base, h->value.len};
}

igw_str igw_http_list_next(igw_exchange *ex, const char *name, igw_http_list *it)
{
    if (!ex->req)
        return (igw_str){NULL, 0};
    const h2o_headers_t *hs = &ex->req->headers;
    size_t n = strlen(name);
    /* Each turn consumes one element or one occurrence: bounded by the
     * request's header bytes. */
    for (;;) {
        if (it->header == 0 || it->pos > hs->entries[it->header - 1].value.len) {
            ssize_t i = h2o_find_header_by_str(hs, name, n, (ssize_t)it->header - 1);
            if (i < 0)
                return (igw_str){NULL, 0};
            it->header = (size_t)i + 1;
            it->pos = 0;
        }
        const h2o_iovec_t *v = &hs->entries[it->header - 1].value;
        size_t start = it->pos, end = start;
        while (end < v->len && v->base[end] != ',')
            end++;
        it->pos = end + 1; /* past the comma, or past the end */
        while (start < end && (v->base[start] == ' ' || v->base[start] == '\t'))
            start++;
        while (end > start && (v->base[end - 1] == ' ' || v->base[end - 1] == '\t'))
            end--;
        if (end > start)
            return (igw_str){v->base + start, end - start};
    }
}

igw_str igw_http_body(igw_exchange *ex)
{
    if (!ex->req->entity.base)
        return (igw_str){"", 0};
    return (igw_str){ex->req->entity.base, ex->req->entity.len};
}

const char *igw_http_request_id(const igw_exchange *ex)
{
    return ex->id;
}

void *igw_http_state(igw_exchange *ex)
{
    return ex->w->app_state;
}

/* A held exchange is freed by its reply; the guard must not touch it then. */
static void release_held(igw_exchange *ex)
{
    if (ex->guard)
        ex->guard->ex = NULL;
    igw_arena_free(&ex->arena);
    free(ex);
}

igw_arena *igw_http_arena(igw_exchange *ex)
{
    return ex->heap ? &ex->arena : &ex->w->arena;
}

/* The access-log line of ex's answer (read from the request: build it
 * before h2o may dispose of the request). */
static igw_accesslog_entry log_entry(igw_exchange *ex, int status, int cls, size_t bytes_in, size_t bytes_out)
{
    h2o_req_t *req = ex->req;
    return (igw_accesslog_entry){
        .id = ex->id,
        .method = {req->input.method.base, req->input.method.len},
        .path = ex->path,
        .route = igw_metrics_route_name(ex->w->server->metrics, ex->route),
        .status = status,
        .code = igw_error_classes[cls].code,
        .bytes_in = bytes_in,
        .bytes_out = bytes_out,
        .duration_us = elapsed_us(&ex->start),
    };
}

/* Counts the answer `e` of class `cls` and writes its log line. */
static void account(igw_exchange *ex, int cls, const igw_accesslog_entry *e)
{
    worker *w = ex->w;
    igw_metrics_observe(w->metrics, ex->route, (unsigned)cls, e->duration_us);
    if (w->server->cfg.access_log)
        (void)igw_accesslog_write(&w->log, e); /* a lost log line must not fail the request */
}

/* Every answer carries the request id. */
static void add_request_id(igw_exchange *ex)
{
    h2o_req_t *req = ex->req;
    char *id = h2o_mem_alloc_pool(&req->pool, sizeof ex->id - 1);
    memcpy(id, ex->id, sizeof ex->id - 1);
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL, id, sizeof ex->id - 1);
}

/* Sends `body` with class `cls`'s status; counts and logs the request. */
static void send_reply(igw_exchange *ex, int cls, const char *ctype, const char *body, size_t len)
{
    h2o_req_t *req = ex->req;
    if (ex->replied || ex->held) {
        igw_log(IGW_LOG_ERROR, ex->id, "bug: second reply to the request ignored");
        return;
    }
    ex->replied = true;
    if (cls < 0 || cls >= IGW_ERR__COUNT)
        cls = IGW_ERR_INTERNAL;
    if (!req) { /* the client went away while the work was pending: counted, not logged */
        igw_metrics_observe(ex->w->metrics, ex->route, (unsigned)cls, elapsed_us(&ex->start));
        release_held(ex);
        return;
    }
    const igw_error_class *ec = &igw_error_classes[cls];
    req->res.status = ec->http;
    req->res.reason = reason_phrase(ec->http);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype, strlen(ctype));
    add_request_id(ex);
    req->res.content_length = len;

    /* Counted and logged before sending: h2o may dispose the request once
     * it is sent, and the log reads from it. */
    igw_accesslog_entry e = log_entry(ex, ec->http, cls, req->entity.base ? req->entity.len : 0, len);
    account(ex, cls, &e);
    bool heap = ex->heap;
    h2o_send_inline(req, body, len);
    if (heap)
        release_held(ex);
}

static const char internal_body[] =
    "{\"code\":100500,\"msg\":\"internal error\",\"data\":{\"reason\":\"out of memory\",\"path\":\"\"}}";

/* Sends the JSON in w->body, or the internal class if writing it failed. */
static void send_json(igw_exchange *ex, int cls)
{
    igw_jw *jw = &ex->w->body;
    if (igw_jw_status(jw))
        send_reply(ex, IGW_ERR_INTERNAL, "application/json", internal_body, sizeof internal_body - 1);
    else
        send_reply(ex, cls, "application/json", jw->buf, jw->len);
}

static void envelope_begin(igw_jw *jw, int cls)
{
    igw_jw_reset(jw);
    igw_jw_object_begin(jw);
    igw_jw_key(jw, "code", 4);
    igw_jw_int(jw, igw_error_classes[cls].code);
    igw_jw_key(jw, "msg", 3);
    const char *msg = igw_error_classes[cls].reason;
    igw_jw_string(jw, msg, strlen(msg));
    igw_jw_key(jw, "data", 4);
}

/* The schema's `errors` of a route are its contract with clients (OpenAPI
 * and docs/api.md list them): a handler answering another class is a bug.
 * Logged always; fatal in test builds (IGW_STRICT_CONTRACTS), so a test
 * that reaches it fails. */
static void check_contract(const igw_exchange *ex, int cls)
{
    if (!ex->contract || ex->route >= IGW_ROUTE__COUNT || cls == IGW_ERR_INTERNAL)
        return;
    const igw_route_def *r = &igw_routes[ex->route];
    for (uint32_t i = 0; i < r->nerrors; i++)
        if (r->errors[i] == cls)
            return;
    igw_log(IGW_LOG_ERROR, ex->id, "bug: route %s answered with class %s, which its schema does not declare", r->name,
            igw_error_classes[cls].name);
#ifdef IGW_STRICT_CONTRACTS
    abort();
#endif
}

/* The error envelope of class cls into jw. */
static void write_error(igw_jw *jw, int cls, const char *reason, size_t rlen, const char *path)
{
    envelope_begin(jw, cls);
    igw_jw_object_begin(jw);
    igw_jw_key(jw, "reason", 6);
    igw_jw_string(jw, reason ? reason : "", reason ? rlen : 0);
    igw_jw_key(jw, "path", 4);
    igw_jw_string(jw, path ? path : "", path ? strlen(path) : 0);
    igw_jw_object_end(jw);
    igw_jw_object_end(jw);
}

void igw_http_reply_error(igw_exchange *ex, int cls, const char *reason, const char *path)
{
    if (cls < 0 || cls >= IGW_ERR__COUNT)
        cls = IGW_ERR_INTERNAL;
    check_contract(ex, cls);
    write_error(&ex->w->body, cls, reason, reason ? strlen(reason) : 0, path);
    send_json(ex, cls);
}

void igw_http_reply_envelope(igw_exchange *ex, int cls, const char *data, size_t len)
{
    if (cls < 0 || cls >= IGW_ERR__COUNT)
        cls = IGW_ERR_INTERNAL;
    if (cls != IGW_ERR_OK)
        check_contract(ex, cls);
    igw_jw *jw = &ex->w->body;
    envelope_begin(jw, cls);
    igw_jw_raw(jw, data, len);
    igw_jw_object_end(jw);
    send_json(ex, cls);
}

void igw_http_reply_ok(igw_exchange *ex, const char *data, size_t len)
{
    igw_http_reply_envelope(ex, IGW_ERR_OK, data, len);
}

void igw_http_reply_body(igw_exchange *ex, int cls, const char *content_type, const char *body, size_t len)
{
    send_reply(ex, cls, content_type, body, len);
}

/* ---- files ----------------------------------------------------------------- */

#define FILE_SLICE 65536

/* Streams a file: one slice per proceed, read with pread on the worker
 * (files are local; a slice costs microseconds). */
typedef struct file_gen {
    h2o_generator_t super;
    int fd;
    uint64_t off, size;
    char *buf;
} file_gen;

static void file_gen_close(file_gen *g)
{
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
}

static void file_gen_dispose(void *p)
{
    file_gen_close(p);
}

static void file_gen_proceed(h2o_generator_t *self, h2o_req_t *req)
{
    file_gen *g = (file_gen *)self;
    uint64_t left = g->size - g->off;
    size_t want = left < FILE_SLICE ? (size_t)left : FILE_SLICE;
    ssize_t n = 0;
    while (want && (n = pread(g->fd, g->buf, want, (off_t)g->off)) < 0 && errno == EINTR)
        ;
    if (want && n <= 0) { /* truncated under us or an I/O error: cut the response */
        file_gen_close(g);
        h2o_send(req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    }
    g->off += (uint64_t)n;
    bool last = g->off >= g->size;
    if (last)
        file_gen_close(g);
    h2o_iovec_t v = h2o_iovec_init(g->buf, (size_t)n);
    h2o_send(req, &v, 1, last ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

static void file_gen_stop(h2o_generator_t *self, h2o_req_t *req)
{
    (void)req;
    file_gen_close((file_gen *)self);
}

/* One byte range of a file of `size` bytes (RFC 9110 14.1.2): "bytes=F-L",
 * "bytes=F-" or "bytes=-N", F within the file; sets [*first, *last]. false
 * for anything else (several ranges, a malformed or unsatisfiable one):
 * the whole file then, as the RFC allows (a player seeking in an Ogg file
 * asks for one range at a time). */
static bool one_range(const char *h, size_t len, uint64_t size, uint64_t *first, uint64_t *last)
{
    static const char unit[] = "bytes=";
    if (len <= sizeof unit - 1 || memcmp(h, unit, sizeof unit - 1) != 0 || size == 0)
        return false;
    size_t i = sizeof unit - 1;
    uint64_t a = 0, b = 0;
    bool has_a = false, has_b = false;
    for (; i < len && h[i] >= '0' && h[i] <= '9'; i++, has_a = true)
        if (a > (UINT64_MAX - 9) / 10 || (a = a * 10 + (uint64_t)(h[i] - '0')) > size * 2)
            return false;
    if (i == len || h[i++] != '-')
        return false;
    for (; i < len && h[i] >= '0' && h[i] <= '9'; i++, has_b = true)
        if (b > (UINT64_MAX - 9) / 10 || (b = b * 10 + (uint64_t)(h[i] - '0')) > UINT64_MAX / 4)
            return false;
    if (i != len || (!has_a && !has_b))
        return false;
    if (!has_a) { /* the last b bytes */
        if (b == 0)
            return false;
        *first = b >= size ? 0 : size - b;
        *last = size - 1;
        return true;
    }
    if (a >= size || (has_b && b < a))
        return false;
    *first = a;
    *last = has_b && b < size ? b : size - 1;
    return true;
}

void igw_http_reply_file(igw_exchange *ex, int fd, uint64_t size, const char *name)
{
    h2o_req_t *req = ex->req;
    /* Range is for GET only (RFC 9110 14.2); no validators are sent, so an
     * If-Range never matches: the whole file. */
    bool get = h2o_memis(req->input.method.base, req->input.method.len, H2O_STRLIT("GET"));
    ssize_t ri = get && h2o_find_header(&req->headers, H2O_TOKEN_IF_RANGE, -1) < 0
                     ? h2o_find_header(&req->headers, H2O_TOKEN_RANGE, -1)
                     : -1;
    uint64_t first = 0, last = 0;
    bool partial = ri >= 0 && one_range(req->headers.entries[ri].value.base, req->headers.entries[ri].value.len, size,
                                        &first, &last);
    file_gen *g = h2o_mem_alloc_shared(&req->pool, sizeof *g, file_gen_dispose);
    uint64_t total = size;
    g->fd = fd;
    g->off = partial ? first : 0;
    g->size = partial ? last + 1 : size;
    size = g->size - g->off; /* what is sent */
    g->buf = h2o_mem_alloc_pool(&req->pool, FILE_SLICE);
    g->super.proceed = file_gen_proceed;
    g->super.stop = file_gen_stop;
    ex->replied = true;
    req->res.status = partial ? 206 : 200;
    req->res.reason = partial ? "Partial Content" : "OK";
    req->res.content_length = size;
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("accept-ranges"), 0, NULL, H2O_STRLIT("bytes"));
    if (partial) {
        char cr[80];
        int n = snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", (unsigned long long)first, (unsigned long long)last,
                         (unsigned long long)total);
        h2o_iovec_t v = h2o_strdup(&req->pool, cr, (size_t)n);
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_RANGE, NULL, v.base, v.len);
    }
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/octet-stream"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-content-type-options"), 0, NULL,
                          H2O_STRLIT("nosniff"));
    /* The name passed igw_filename_check: no quote, backslash or control character. */
    h2o_iovec_t disp = h2o_concat(&req->pool, h2o_iovec_init(H2O_STRLIT("attachment; filename=\"")),
                                  h2o_iovec_init(name, strlen(name)), h2o_iovec_init(H2O_STRLIT("\"")));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_DISPOSITION, NULL, disp.base, disp.len);
    add_request_id(ex);
    igw_accesslog_entry e = log_entry(ex, partial ? 206 : 200, IGW_ERR_OK, 0, (size_t)size);
    account(ex, IGW_ERR_OK, &e);
    bool heap = ex->heap;
    h2o_start_response(req, &g->super);
    if (h2o_memis(req->input.method.base, req->input.method.len, H2O_STRLIT("HEAD")) || size == 0) {
        file_gen_close(g);
        h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
    } else {
        file_gen_proceed(&g->super, req);
    }
    if (heap)
        release_held(ex);
}

bool igw_http_is_ws_handshake(igw_exchange *ex)
{
    return ex->req && igw_ws_is_handshake(ex->req);
}

igw_ws *igw_http_upgrade_ws(igw_exchange *ex, igw_ws_hub *hub, const igw_ws_handlers *h)
{
    if (!ex->req || ex->replied)
        return NULL;
    igw_accesslog_entry e = log_entry(ex, 101, IGW_ERR_OK, 0, 0); /* before h2o takes the request over */
    igw_ws *ws = igw_ws_upgrade(hub, ex->req, h);
    if (!ws)
        return NULL;
    ex->replied = true;
    account(ex, IGW_ERR_OK, &e);
    if (ex->heap)
        release_held(ex);
    return ws;
}

igw_str igw_http_path(igw_exchange *ex)
{
    return ex->path;
}

igw_str igw_http_query(igw_exchange *ex)
{
    h2o_req_t *req = ex->req;
    if (req->input.query_at == SIZE_MAX)
        return (igw_str){NULL, 0};
    size_t at = req->input.query_at + 1;
    return (igw_str){req->input.path.base + at, req->input.path.len - at};
}

igw_jw *igw_http_data(igw_exchange *ex)
{
    igw_jw_reset(&ex->w->data);
    return &ex->w->data;
}

void igw_http_reply_data(igw_exchange *ex)
{
    igw_jw *d = &ex->w->data;
    if (igw_jw_status(d))
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
    else
        igw_http_reply_ok(ex, d->buf, d->len);
}

/* ---- what the app's routes read ------------------------------------------- */

int igw_http_metrics(igw_exchange *ex, void (*extra)(void *arg, FILE *f), void *arg, char **out, size_t *len)
{
    return igw_metrics_render_with(ex->w->server->metrics, extra, arg, out, len);
}

bool igw_http_peer_loopback(igw_exchange *ex)
{
    struct sockaddr_storage ss;
    if (!ex->req || !ex->req->conn->callbacks->get_peername ||
        ex->req->conn->callbacks->get_peername(ex->req->conn, (struct sockaddr *)&ss) == 0)
        return false;
    if (ss.ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss.ss_family == AF_INET6) {
        const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}

/* ---- framing ------------------------------------------------------------------ */

/* Header fields a request may carry once. h2o 2.2.5 resolves a repeat
 * silently, each its own way (the first Content-Length frames the body and
 * the rest of it is read as the next request; Transfer-Encoding overrides
 * Content-Length; the last Host wins; a route reads the first Authorization
 * or Content-Type), and a proxy in front may resolve it another way: the
 * classic request smuggling. So a repeat, a Content-Length beside a
 * Transfer-Encoding, or an HTTP/1.1 request without Host (RFC 9112 §3.2) is
 * refused, for every request, before any route and the strict stage. */
enum { F_HOST, F_CONTENT_LENGTH, F_TRANSFER_ENCODING, F_AUTHORIZATION, F_CONTENT_TYPE, F__COUNT };
static const struct {
    const char *name;
    size_t len;
    const char *dup;
} singletons[F__COUNT] = {
    [F_HOST] = {"host", 4, "duplicate Host header"},
    [F_CONTENT_LENGTH] = {"content-length", 14, "duplicate Content-Length header"},
    [F_TRANSFER_ENCODING] = {"transfer-encoding", 17, "duplicate Transfer-Encoding header"},
    [F_AUTHORIZATION] = {"authorization", 13, "duplicate Authorization header"},
    [F_CONTENT_TYPE] = {"content-type", 12, "duplicate Content-Type header"},
};

static int singleton_of(const char *name, size_t len)
{
    for (int i = 0; i < F__COUNT; i++)
        if (len == singletons[i].len && h2o_lcstris(name, len, singletons[i].name, len))
            return i;
    return -1;
}

/* Counts the singletons in an HTTP/1 request's header block. h2o consumes
 * Host, Content-Length and Transfer-Encoding while framing (they are not in
 * req->headers), so this reads the block itself: lib/http1.c keeps it at
 * the start of the socket's input until the response is sent, and
 * picohttpparser already accepted it (so it ends with an empty line within
 * H2O_MAX_REQLEN). Lines that start with a space continue the previous
 * field (obs-fold) and count for nothing. */
static void count_http1(h2o_req_t *req, unsigned n[F__COUNT])
{
    h2o_socket_t *sock = req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (!sock || !sock->input)
        return;
    const char *p = sock->input->bytes;
    const char *end = p + (sock->input->size < H2O_MAX_REQLEN ? sock->input->size : H2O_MAX_REQLEN);
    const char *eol = memchr(p, '\n', (size_t)(end - p)); /* the request line */
    while (eol) {
        p = eol + 1;
        if (!(eol = memchr(p, '\n', (size_t)(end - p))))
            break;
        size_t len = (size_t)(eol - p);
        if (len && p[len - 1] == '\r')
            len--;
        if (len == 0)
            break; /* the end of the block */
        if (p[0] == ' ' || p[0] == '\t')
            continue;
        const char *colon = memchr(p, ':', len);
        int i = colon ? singleton_of(p, (size_t)(colon - p)) : -1;
        if (i >= 0)
            n[i]++;
    }
}

/* Why the request's framing is refused, or NULL. */
static const char *framing_error(h2o_req_t *req)
{
    unsigned n[F__COUNT] = {0};
    if (req->version < 0x200) {
        count_http1(req, n);
    } else { /* HTTP/2 frames its own messages; its fields are all in req->headers */
        for (size_t i = 0; i < req->headers.size; i++) {
            const h2o_iovec_t *name = req->headers.entries[i].name;
            int k = singleton_of(name->base, name->len);
            if (k >= 0)
                n[k]++;
        }
        n[F_HOST] = 1; /* :authority, which h2o requires */
    }
    for (int i = 0; i < F__COUNT; i++)
        if (n[i] > 1)
            return singletons[i].dup;
    if (n[F_CONTENT_LENGTH] && n[F_TRANSFER_ENCODING])
        return "Content-Length with Transfer-Encoding";
    if (req->version == 0x101 && n[F_HOST] == 0)
        return "missing Host header";
    return NULL;
}

/* ---- the request handler --------------------------------------------------- */

static uint64_t splitmix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* 16 hex characters: a bijection of the per-thread counter offset by a
 * random per-thread seed, so ids never repeat within a thread and are not
 * guessable across restarts. */
static void make_request_id(worker *w, char out[17])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t v = splitmix64(w->id_seed + ++w->id_counter);
    for (int i = 15; i >= 0; i--, v >>= 4)
        out[i] = hex[v & 15];
    out[16] = '\0';
}

/* ---- h2o's own refusals ------------------------------------------------------ */

/* h2o answers some requests before on_req sees them (lib/http1.c through
 * h2o_send_error_generic, plain text, connection closed): a Content-Length
 * it cannot read (negative, not a number), a Transfer-Encoding other than
 * chunked, a broken chunk, a body over max_body, an unknown Expect. It binds
 * them to the host's fallback path, which no request on_req answers takes
 * (every path matches "/"), so a filter there rewrites them to the envelope
 * of the class with the same status, h2o's text as data.reason, and counts
 * and logs them like every answer; the connection still closes. A status
 * no class has (417) goes out as h2o wrote it. A request line h2o cannot
 * parse gets a fixed 400 written straight to the socket: no hook sees it. */
typedef struct refusal_ostream {
    h2o_ostream_t super;
    int cls;
    unsigned route; /* metrics route slot */
    bool sent;
} refusal_ostream;

static int class_of_status(int status)
{
    for (int i = 0; i < IGW_ERR__COUNT; i++)
        if (i != IGW_ERR_OK && igw_error_classes[i].http == status)
            return i;
    return -1;
}

static void refusal_do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t nbufs,
                            h2o_send_state_t state)
{
    refusal_ostream *o = (refusal_ostream *)self;
    if (o->sent) { /* h2o_send_inline sends once; anything after adds nothing */
        h2o_ostream_send_next(&o->super, req, NULL, 0, state);
        return;
    }
    o->sent = true;
    char reason[128]; /* h2o's texts are short and fixed; bounded anyway */
    size_t rlen = 0;
    for (size_t i = 0; i < nbufs && rlen < sizeof reason; i++) {
        size_t n = bufs[i].len < sizeof reason - rlen ? bufs[i].len : sizeof reason - rlen;
        memcpy(reason + rlen, bufs[i].base, n);
        rlen += n;
    }
    worker *w = H2O_STRUCT_FROM_MEMBER(worker, ctx, req->conn->ctx);
    igw_exchange ex = {.w = w, .req = req, .route = o->route};
    clock_gettime(CLOCK_MONOTONIC, &ex.start);
    make_request_id(w, ex.id);
    const char *q = memchr(req->input.path.base, '?', req->input.path.len);
    ex.path = (igw_str){req->input.path.base, q ? (size_t)(q - req->input.path.base) : req->input.path.len};

    /* A jw of its own: this runs from h2o's read callback, and must not
     * depend on what the worker's buffers hold. The body lives in the
     * request's pool until h2o wrote it. */
    igw_jw jw;
    igw_jw_init(&jw);
    write_error(&jw, o->cls, reason, rlen, "");
    int cls = o->cls;
    h2o_iovec_t body;
    if (igw_jw_status(&jw)) {
        cls = IGW_ERR_INTERNAL;
        body = h2o_iovec_init(internal_body, sizeof internal_body - 1);
    } else {
        body = h2o_strdup(&req->pool, jw.buf, jw.len);
    }
    igw_jw_free(&jw);
    int status = igw_error_classes[cls].http;
    req->res.status = status;
    req->res.reason = reason_phrase(status);
    req->res.content_length = body.len;
    memset(&req->res.headers, 0, sizeof req->res.headers); /* h2o's text/plain */
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    add_request_id(&ex);
    igw_accesslog_entry e = log_entry(&ex, status, cls, 0, body.len);
    account(&ex, cls, &e);
    h2o_ostream_send_next(&o->super, req, &body, 1, state);
}

/* Puts the envelope rewrite of an h2o refusal of class cls in the chain;
 * returns the slot for the next stream. */
static h2o_ostream_t **add_refusal(h2o_req_t *req, h2o_ostream_t **slot, int cls, unsigned route)
{
    refusal_ostream *o = (refusal_ostream *)h2o_add_ostream(req, sizeof *o, slot);
    o->super.do_send = refusal_do_send;
    o->cls = cls;
    o->route = route;
    o->sent = false;
    return &o->super.next;
}

static void on_refusal_setup(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    (void)self;
    worker *w = H2O_STRUCT_FROM_MEMBER(worker, ctx, req->conn->ctx);
    int cls = req->res.status >= 400 ? class_of_status(req->res.status) : -1;
    if (cls >= 0)
        slot = add_refusal(req, slot, cls, w->server->none_slot);
    h2o_setup_next_ostream(req, slot);
}

static void exchange_init(igw_exchange *ex, worker *w, h2o_req_t *req)
{
    *ex = (igw_exchange){.w = w, .req = req, .route = w->server->none_slot};
    clock_gettime(CLOCK_MONOTONIC, &ex->start);
    make_request_id(w, ex->id);
    size_t plen = req->input.query_at != SIZE_MAX ? req->input.query_at : req->input.path.len;
    ex->path = (igw_str){req->input.path.base, plen};
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    worker *w = H2O_STRUCT_FROM_MEMBER(worker, ctx, req->conn->ctx);
    igw_exchange ex;
    exchange_init(&ex, w, req);
    igw_str method = {req->input.method.base, req->input.method.len};
    igw_arena_reset(&w->arena);

    const char *bad = framing_error(req);
    if (bad) {
        /* What follows on the connection was framed by a rule a proxy in
         * front may not share: answer, then close. */
        req->http1_is_persistent = 0;
        igw_http_reply_error(&ex, IGW_ERR_PARAMETER, bad, "");
        return 0;
    }
    const igw_server *s = w->server;
    for (unsigned i = 0; i < s->app.nroutes; i++) {
        const igw_http_route *rt = &s->routes[i];
        if (rt->serve(rt->arg, &ex, IGW_ROUTE__COUNT + i)) {
            if (!ex.replied && !ex.held)
                igw_http_reply_error(&ex, IGW_ERR_INTERNAL, "handler did not reply", "");
            return 0;
        }
    }

    igw_http_request in = {.method = method, .path = ex.path};
    if (req->entity.base)
        in.body = (igw_str){req->entity.base, req->entity.len};
    else
        in.body = (igw_str){"", 0};
    size_t nh = req->headers.size;
    igw_header *hs = nh ? igw_arena_alloc(&w->arena, nh * sizeof *hs) : NULL;
    if (nh && !hs) {
        igw_http_reply_error(&ex, IGW_ERR_INTERNAL, "out of memory", "");
        return 0;
    }
    for (size_t i = 0; i < nh; i++) {
        const h2o_header_t *h = &req->headers.entries[i];
        hs[i].name = (igw_str){h->name->base, h->name->len};
        hs[i].value = (igw_str){h->value.base, h->value.len};
    }
    in.headers = hs;
    in.nheaders = nh;

    igw_request r;
    igw_decode_error err;
    if (igw_request_decode(&igw_gen_api, &r, &in, &w->arena, &err)) {
        if (r.route)
            ex.route = (unsigned)r.route->id;
        igw_http_reply_error(&ex, err.cls, err.reason, err.path);
        return 0;
    }
    ex.route = (unsigned)r.route->id;
    /* The schema's `gate signaling`: after the strict stage (bad input is
     * refused first, as everywhere), before any handler or authentication. */
    if (r.route->gate_signaling && !s->cfg.signaling_enabled) {
        igw_http_reply_error(&ex, IGW_ERR_FOR_GATE, "signaling is disabled", "");
        return 0;
    }
    if (!s->app.handle) {
        igw_http_reply_error(&ex, IGW_ERR_NOT_IMPLEMENTED, "handler not implemented yet", "");
        return 0;
    }
    ex.contract = true;
    s->app.handle(s->app.arg, &ex, &r);
    if (!ex.replied && !ex.held)
        igw_http_reply_error(&ex, IGW_ERR_INTERNAL, "handler did not reply", "");
    return 0;
}

/* ---- the app's files (igw_http_files) ------------------------------------------ */

static bool str_is(igw_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

/* First handler of the files' path: refuses what is not a read of one of
 * its files, then lets h2o's file handler (next) serve it. h2o calls that
 * handler as soon as this one returns, and it opens the file and starts
 * its response (on_files_setup) before returning in turn: the worker can
 * keep the request's start time for them. */
static int on_files_req(h2o_handler_t *self, h2o_req_t *req)
{
    worker *w = H2O_STRUCT_FROM_MEMBER(worker, ctx, req->conn->ctx);
    const igw_server *s = w->server;
    size_t plen = req->input.query_at != SIZE_MAX ? req->input.query_at : req->input.path.len;
    if (framing_error(req) || !s->files.serves((igw_str){req->input.path.base, plen}))
        return on_req(self, req);
    igw_str method = {req->input.method.base, req->input.method.len};
    if (!str_is(method, "GET") && !str_is(method, "HEAD")) {
        igw_exchange ex;
        exchange_init(&ex, w, req);
        ex.route = s->files_slot;
        igw_http_reply_error(&ex, IGW_ERR_METHOD, s->files.refused, "");
        return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &w->files_start);
    return -1;
}

/* Last handler of the files' path: the file handler found no such file. */
static int on_files_missing(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    worker *w = H2O_STRUCT_FROM_MEMBER(worker, ctx, req->conn->ctx);
    igw_exchange ex;
    exchange_init(&ex, w, req);
    ex.route = w->server->files_slot;
    ex.start = w->files_start;
    igw_http_reply_error(&ex, IGW_ERR_NOT_FOUND, w->server->files.missing, "");
    return 0;
}

/* The filter of the files' path: h2o's own answers there (the file, 304, a
 * redirect, its 403/503 refusals) get a request id, the app's headers,
 * and are counted and logged; an error with a class becomes its envelope.
 * igw's envelopes (they carry their id already) pass as they are. */
static void on_files_setup(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    (void)self;
    if (h2o_find_header_by_str(&req->res.headers, H2O_STRLIT("x-request-id"), -1) >= 0) {
        h2o_setup_next_ostream(req, slot);
        return;
    }
    worker *w = H2O_STRUCT_FROM_MEMBER(worker, ctx, req->conn->ctx);
    const igw_server *s = w->server;
    int status = req->res.status, cls = IGW_ERR_OK;
    if (status >= 400) {
        cls = class_of_status(status);
        if (cls >= 0) {
            h2o_setup_next_ostream(req, add_refusal(req, slot, cls, s->files_slot));
            return;
        }
        cls = status < 500 ? IGW_ERR_PARAMETER : IGW_ERR_INTERNAL; /* 416: as h2o wrote it, counted */
    }
    igw_exchange ex;
    exchange_init(&ex, w, req);
    ex.route = s->files_slot;
    ex.start = w->files_start;
    add_request_id(&ex);
    for (const char *const *h = s->files.headers; h && h[0]; h += 2)
        h2o_add_header_by_str(&req->pool, &req->res.headers, h[0], strlen(h[0]), 1, NULL, h[1], strlen(h[1]));
    size_t out = req->res.content_length != SIZE_MAX ? req->res.content_length : 0;
    igw_accesslog_entry e = log_entry(&ex, status, cls, 0, out);
    account(&ex, cls, &e);
    h2o_setup_next_ostream(req, slot);
}

/* Registers the files' path on host, ahead of any other path: the guard,
 * h2o's file handler over their directory with a mime map of their types
 * only, and the not-found handler. */
static void files_register(igw_server *s, h2o_hostconf_t *host)
{
    const igw_http_files *f = &s->files;
    h2o_pathconf_t *path = h2o_config_register_path(host, f->path, 0);
    h2o_create_handler(path, sizeof(h2o_handler_t))->on_req = on_files_req;
    h2o_mimemap_t *types = h2o_mimemap_create();
    h2o_mimemap_clear_types(types);
    h2o_mimemap_set_default_type(types, "application/octet-stream", NULL);
    for (const char *const *t = f->types; t && t[0]; t += 2)
        h2o_mimemap_define_mimetype(types, t[0], t[1], NULL);
    s->files_index[0] = f->index; /* kept with the server: h2o may keep the list */
    s->files_index[1] = NULL;
    /* No ETag (caching is what the app's headers say); no listing flag. */
    h2o_file_register(path, f->dir, s->files_index, types, H2O_FILE_FLAG_NO_ETAG);
    h2o_mem_release_shared(types); /* the handler holds its reference */
    h2o_create_handler(path, sizeof(h2o_handler_t))->on_req = on_files_missing;
    h2o_create_filter(path, sizeof(h2o_filter_t))->on_setup_ostream = on_files_setup;
}

/* ---- workers ---------------------------------------------------------------- */

static void on_conn_close(void *data)
{
    worker *w = data;
    w->nconns--;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    worker *w = listener->data;
    if (err)
        return;
    h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
    if (!sock)
        return;
    w->nconns++;
    sock->on_close.cb = on_conn_close;
    sock->on_close.data = w;
    h2o_accept(&w->accept_ctx, sock);
}

static void on_wake(h2o_multithread_receiver_t *r, h2o_linklist_t *messages)
{
    worker *w = H2O_STRUCT_FROM_MEMBER(worker, wake, r);
    while (!h2o_linklist_is_empty(messages)) {
        h2o_multithread_message_t *m = H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
        h2o_linklist_unlink(&m->link);
        if (m == &w->wake_msg)
            continue; /* the stop signal */
        task *t = (task *)m;
        t->fn(w->app_state, t->arg);
        free(t);
    }
}

unsigned igw_http_workers(const igw_server *s)
{
    return s->nworkers;
}

int igw_http_post(igw_server *s, unsigned index, void (*fn)(void *state, void *arg), void *arg)
{
    task *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    t->fn = fn;
    t->arg = arg;
    h2o_multithread_send_message(&s->workers[index % s->nworkers].wake, &t->super);
    return 0;
}

/* The worker's loop, its context (and queue) and the app state are made,
 * run and freed on the worker's own thread: h2o 2.2 ties each socket's
 * input buffer to the creating thread's buffer prototype (thread-local),
 * whose recycling list is neither shared safely between threads nor valid
 * once that thread ended. So the thread lives from set-up to the end. */
static int worker_setup(worker *w)
{
    igw_server *s = w->server;
    w->loop = h2o_evloop_create();
    h2o_context_init(&w->ctx, w->loop, &s->globalconf);
    w->ctx_ready = true;
    w->accept_ctx.ctx = &w->ctx;
    w->accept_ctx.hosts = s->globalconf.hosts;
    h2o_multithread_register_receiver(w->ctx.queue, &w->wake, on_wake);
    if (s->app.start &&
        !(w->app_state = s->app.start(s->app.arg, w->index, s->port, w->loop, w->start_err, sizeof w->start_err)))
        return -1;
    return 0;
}

static void worker_serve(worker *w)
{
    igw_server *s = w->server;
    h2o_socket_t *listener = h2o_evloop_socket_create(w->loop, w->listen_fd, H2O_SOCKET_FLAG_DONT_READ);
    w->listen_fd = -1; /* the h2o socket owns it now */
    listener->data = w;
    h2o_socket_read_start(listener, on_accept);

    while (!atomic_load(&s->stopping))
        h2o_evloop_run(w->loop, INT32_MAX);

    /* Stop accepting, ask the protocols to close idle connections, and let
     * the others finish their requests, within the bound. */
    h2o_socket_read_stop(listener);
    h2o_socket_close(listener);
    h2o_context_request_shutdown(&w->ctx);
    /* h2o 2.2.5 closes HTTP/1 connections only after a response: an idle
     * keep-alive connection would hold the drain until the deadline. Its
     * request timeout also covers idle keep-alive, so expire it now;
     * replies being written are not affected (on_req runs only once the
     * whole request arrived, so a request still arriving is cut). */
    w->ctx.http1.req_timeout.timeout = 0;
    int64_t deadline = igw_clock_ms() + s->cfg.shutdown_timeout_ms;
    for (;;) {
        int64_t left = deadline - igw_clock_ms();
        bool app_idle = !s->app.idle || !w->app_state || s->app.idle(s->app.arg, w->app_state);
        if ((w->nconns == 0 && app_idle) || left <= 0)
            break;
        h2o_evloop_run(w->loop, (int32_t)(left > 100 ? 100 : left));
    }
    w->drained = w->nconns == 0;
}

/* Frees what the worker made, unless connections abandoned at the
 * deadline still point at its context (then all of it is left). */
static void worker_teardown(worker *w)
{
    igw_server *s = w->server;
    if (w->nconns != 0)
        return;
    h2o_evloop_run(w->loop, 0); /* tasks posted after the worker stopped */
    if (w->app_state && s->app.stop)
        s->app.stop(s->app.arg, w->app_state);
    w->app_state = NULL;
    /* h2o_context_request_shutdown arms HTTP/2's GOAWAY resend timer
     * (one second) even with no connection; it is ours to cancel. */
    if (h2o_timeout_is_linked(&w->ctx.http2._graceful_shutdown_timeout))
        h2o_timeout_unlink(&w->ctx.http2._graceful_shutdown_timeout);
    h2o_multithread_unregister_receiver(w->ctx.queue, &w->wake);
    h2o_context_dispose(&w->ctx);
    h2o_evloop_run(w->loop, 0); /* frees the sockets closed by the dispose */
    h2o_evloop_destroy(w->loop);
    w->ctx_ready = false;
    w->disposed = true;
}

static void worker_tell(worker *w, worker_phase phase)
{
    igw_server *s = w->server;
    igw_lock(&s->mu);
    w->phase = phase;
    pthread_cond_broadcast(&s->cv);
    igw_unlock(&s->mu);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    igw_server *s = w->server;
    int rc = worker_setup(w);
    igw_lock(&s->mu);
    w->phase = rc == 0 ? W_READY : W_FAILED;
    pthread_cond_broadcast(&s->cv);
    while (!w->go && !w->end)
        pthread_cond_wait(&s->cv, &s->mu);
    bool serve = rc == 0 && w->go;
    if (serve)
        w->phase = W_SERVING;
    igw_unlock(&s->mu);
    if (serve) {
        worker_serve(w);
        igw_lock(&s->mu);
        w->phase = W_DRAINED;
        pthread_cond_broadcast(&s->cv);
        while (!w->end)
            pthread_cond_wait(&s->cv, &s->mu);
        igw_unlock(&s->mu);
    }
    worker_teardown(w);
    worker_tell(w, W_GONE);
    return NULL;
}

static int open_listener(const igw_config *c, uint16_t port, int *fd_out, uint16_t *bound_port, char *err,
                         size_t errlen)
{
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(c->listen_host, service, &hints, &res);
    if (gai) {
        snprintf(err, errlen, "listen %s: %s", c->listen_host, gai_strerror(gai));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    const char *what = "socket";
    if (fd >= 0) {
        what = "setsockopt";
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) == 0) {
            what = "bind";
            if (bind(fd, res->ai_addr, res->ai_addrlen) == 0) {
                what = "listen";
                if (listen(fd, LISTEN_BACKLOG) == 0)
                    what = NULL;
            }
        }
    }
    freeaddrinfo(res);
    if (what) {
        snprintf(err, errlen, "listen %s:%u: %s: %s", c->listen_host, (unsigned)port, what, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        snprintf(err, errlen, "getsockname: %s", strerror(errno));
        close(fd);
        return -1;
    }
    *bound_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                           : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    *fd_out = fd;
    return 0;
}

igw_server *igw_http_create(const igw_config *cfg, const igw_http_app *app, char *err, size_t errlen)
{
    if (cfg->threads == 0 || cfg->max_body == 0) {
        snprintf(err, errlen, "configuration not resolved");
        return NULL;
    }
    unsigned nroutes = app ? app->nroutes : 0, nfiles = app && app->files ? 1 : 0;
    if (nroutes + nfiles > IGW_HTTP_ROUTES_MAX) {
        snprintf(err, errlen, "more than %d routes outside the schema", IGW_HTTP_ROUTES_MAX);
        return NULL;
    }
    igw_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    /* Slots: the generated routes, the app's routes, its files, "none". */
    const char *names[IGW_HTTP_ROUTES_MAX];
    if (app) {
        s->app = *app;
        for (unsigned i = 0; i < nroutes; i++)
            names[i] = (s->routes[i] = app->routes[i]).name;
        s->app.routes = s->routes;
        if (nfiles) {
            s->files = *app->files;
            s->app.files = &s->files;
            names[nroutes] = s->files.name;
        }
    }
    s->files_slot = IGW_ROUTE__COUNT + nroutes;
    s->none_slot = IGW_ROUTE__COUNT + nroutes + nfiles;
    atomic_init(&s->stopping, false);
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        snprintf(err, errlen, "cannot make a mutex");
        free(s);
        return NULL;
    }
    if (pthread_cond_init(&s->cv, NULL) != 0) {
        snprintf(err, errlen, "cannot make a condition variable");
        pthread_mutex_destroy(&s->mu);
        free(s);
        return NULL;
    }
    s->sync_ready = true;
    h2o_config_init(&s->globalconf);
    s->globalconf.max_request_entity_size = cfg->max_body;
    s->globalconf.server_name = h2o_iovec_init(H2O_STRLIT("igwd"));
    h2o_hostconf_t *host = h2o_config_register_host(&s->globalconf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    if (s->app.files) /* first: h2o takes the first path that matches */
        files_register(s, host);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(path, sizeof *handler);
    handler->on_req = on_req;
    h2o_filter_t *refusals = h2o_create_filter(&host->fallback_path, sizeof *refusals);
    refusals->on_setup_ostream = on_refusal_setup;

    s->metrics = igw_metrics_create(cfg->threads, names, nroutes + nfiles);
    _Static_assert(IGW_HTTP_ROUTES_MAX <= IGW_METRICS_EXTRA_MAX, "a metrics slot per route outside the schema");
    s->workers = calloc(cfg->threads, sizeof *s->workers);
    if (!s->metrics || !s->workers) {
        snprintf(err, errlen, "out of memory");
        igw_http_destroy(s);
        return NULL;
    }
    s->nworkers = cfg->threads;
    for (unsigned i = 0; i < s->nworkers; i++)
        s->workers[i].listen_fd = -1;
    s->port = cfg->listen_port;
    for (unsigned i = 0; i < s->nworkers; i++) {
        worker *w = &s->workers[i];
        w->server = s;
        w->index = i;
        uint16_t bound;
        if (open_listener(cfg, s->port, &w->listen_fd, &bound, err, errlen)) {
            igw_http_destroy(s);
            return NULL;
        }
        s->port = bound; /* port 0: the later workers share the first one's port */
        if (getrandom(&w->id_seed, sizeof w->id_seed, 0) != (ssize_t)sizeof w->id_seed) {
            snprintf(err, errlen, "getrandom: %s", strerror(errno));
            igw_http_destroy(s);
            return NULL;
        }
        w->metrics = igw_metrics_shard_get(s->metrics, i);
        igw_arena_init(&w->arena, ARENA_LIMIT);
        igw_jw_init(&w->body);
        igw_jw_init(&w->log);
        igw_jw_init(&w->data);
        /* One worker at a time: the app's start hooks never run concurrently. */
        int rc = pthread_create(&w->tid, NULL, worker_main, w);
        if (rc) {
            snprintf(err, errlen, "pthread_create: %s", strerror(rc));
            igw_http_destroy(s);
            return NULL;
        }
        w->thread = true;
        igw_lock(&s->mu);
        while (w->phase == W_SETUP)
            pthread_cond_wait(&s->cv, &s->mu);
        bool failed = w->phase == W_FAILED;
        igw_unlock(&s->mu);
        if (failed) {
            snprintf(err, errlen, "%s", w->start_err);
            igw_http_destroy(s);
            return NULL;
        }
    }
    return s;
}

igw_str igw_http_method(igw_exchange *ex)
{
    if (!ex->req)
        return (igw_str){NULL, 0};
    return (igw_str){ex->req->input.method.base, ex->req->input.method.len};
}

void igw_http_reply_unbound(igw_exchange *ex)
{
    ex->contract = false;
    igw_http_reply_error(ex, IGW_ERR_NOT_IMPLEMENTED, "handler not implemented yet", "");
}

void igw_http_set_route(igw_exchange *ex, unsigned route)
{
    ex->route = route;
}

uint16_t igw_http_port(const igw_server *s)
{
    return s->port;
}

int igw_http_start(igw_server *s, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    igw_lock(&s->mu);
    for (unsigned i = 0; i < s->nworkers; i++)
        s->workers[i].go = true;
    pthread_cond_broadcast(&s->cv);
    igw_unlock(&s->mu);
    return 0;
}

void igw_http_stop(igw_server *s)
{
    if (atomic_exchange(&s->stopping, true))
        return; /* the wake message is sent once */
    for (unsigned i = 0; i < s->nworkers; i++)
        if (s->workers[i].thread)
            h2o_multithread_send_message(&s->workers[i].wake, &s->workers[i].wake_msg);
}

int igw_http_join(igw_server *s)
{
    int rc = 0;
    igw_lock(&s->mu);
    for (unsigned i = 0; i < s->nworkers; i++) {
        worker *w = &s->workers[i];
        if (!w->thread || !w->go)
            continue;
        while (w->phase == W_SERVING || w->phase == W_READY)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!w->drained)
            rc = -1;
    }
    igw_unlock(&s->mu);
    return rc;
}

void igw_http_destroy(igw_server *s)
{
    if (!s)
        return;
    if (s->workers && s->sync_ready) {
        igw_http_stop(s); /* a no-op after igw_http_stop */
        igw_lock(&s->mu);
        for (unsigned i = 0; i < s->nworkers; i++)
            s->workers[i].end = true;
        pthread_cond_broadcast(&s->cv);
        igw_unlock(&s->mu);
    }
    bool all_disposed = true;
    for (unsigned i = 0; s->workers && i < s->nworkers; i++) {
        worker *w = &s->workers[i];
        if (w->thread) {
            int e = pthread_join(w->tid, NULL);
            if (e)
                igw_log(IGW_LOG_ERROR, NULL, "pthread_join: %s", strerror(e));
            w->thread = false;
            if (!w->disposed)
                all_disposed = false; /* connections abandoned at the deadline still point at it */
        }
        if (w->listen_fd >= 0)
            close(w->listen_fd);
        igw_arena_free(&w->arena);
        igw_jw_free(&w->body);
        igw_jw_free(&w->log);
        igw_jw_free(&w->data);
    }
    if (all_disposed)
        h2o_config_dispose(&s->globalconf);
    free(s->workers);
    igw_metrics_destroy(s->metrics);
    if (s->sync_ready) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
    }
    free(s);
}
