/* redis.c - see redis.h.
 *
 * States: BACKOFF (no context, waiting to retry) -> CONNECTING (context
 * created, TCP connect in progress; a subscriber's SUBSCRIBE unanswered)
 * -> READY. hiredis owns the list of pending callbacks; each accepted
 * command is a `req` handed to hiredis as the privdata of one trampoline
 * (on_reply), which hiredis calls exactly once: with the reply, or with
 * NULL when the context is freed. So every failure path ends in freeing the
 * context, and on_reply alone completes requests (a subscriber's channel
 * callback, on_sub_reply, likewise sees NULL once).
 *
 * hiredis 0.14 semantics this relies on:
 * - A context is freed either by us (redisAsyncFree, never from inside a
 *   hiredis callback: there it would only be deferred) or by hiredis itself
 *   on a connect failure, read/write error or EOF, inside
 *   redisAsyncHandleRead/Write. Then it runs the pending callbacks with NULL
 *   and calls ev.cleanup (possibly twice); whichever of those (or the
 *   connect callback with REDIS_ERR) comes first detaches the context here
 *   (lost()). Nothing touches a context after redisAsyncHandleRead/Write
 *   returned, and reconnecting happens from a timer, never from inside
 *   hiredis.
 * - The connect callback is only noticed on a write event, which
 *   redisAsyncSetConnectCallback requests: the ev hooks must be set first.
 * - Commands written before the connection is up are buffered by hiredis.
 * - (P)UNSUBSCRIBE registers no callback and (P)SUBSCRIBE/MONITOR switch the
 *   context into modes where replies no longer match commands: refused.
 * - A subscriber's SUBSCRIBE registers its callback under the channel's
 *   name; every array reply naming the channel ("subscribe", "message") is
 *   routed there, and redisAsyncFree calls it once with NULL. A PING sent
 *   while subscribed is queued where only non-array replies are looked up,
 *   and its ["pong", ""] is routed by its first letter to the pattern
 *   callbacks, finds none and goes to no callback (or to the previous
 *   reply's): the PING's never runs. So the subscriber's probe is a
 *   second SUBSCRIBE of the same channel, which the server answers with
 *   one more "subscribe" reply and otherwise ignores.
 *
 * Socket: a dup() of hiredis's fd wrapped in an h2o socket with DONT_READ.
 * h2o_socket_notify_write is one-shot and asserts if armed twice, and it
 * cannot be cancelled: delWrite only clears `want_write`, a notification
 * arriving without it is ignored. */
#include "core/redis.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <h2o/socket.h>
#include <h2o/timeout.h>
#include <hiredis/async.h>

#include "clock.h"
#include "core/conn.h"
#include "core/log.h"


#define ADDR_MAX 108 /* an IPv6 address or a unix socket path (sun_path) */

typedef struct req {
    h2o_timeout_entry_t timer; /* the command's deadline */
    struct igw_redis *r;
    igw_redis_cb cb;
    void *arg;
    uint64_t start_us;
} req;

enum state { ST_BACKOFF, ST_CONNECTING, ST_READY };

struct igw_redis {
    h2o_evloop_t *loop;
    char addr[ADDR_MAX];
    bool unix_path;
    unsigned port, timeout_ms;
    redisAsyncContext *ac; /* NULL while in BACKOFF, or once hiredis or we started freeing it */
    h2o_socket_t *sock;
    enum state state;
    bool reading;     /* h2o_socket_read_start in effect */
    bool write_armed; /* h2o_socket_notify_write pending */
    bool want_write;  /* hiredis asked for write events (addWrite without delWrite) */
    bool closing;
    unsigned in_cb;
    igw_conn *sup; /* attempts, connect deadline, backoff, connection counters */
    size_t pending;
    const req *timed_out; /* the command whose deadline dropped the connection */
    h2o_timeout_t t_timeout; /* each command's deadline */
    char failbuf[300];  /* err handed to callbacks of a torn-down context */
    /* subscriber only (channel non-NULL) */
    char *channel;
    size_t channel_len;
    igw_redis_message_cb on_message;
    void *msg_arg;
    h2o_timeout_entry_t probe_timer; /* the outstanding probe's deadline, on t_timeout */
    uint64_t probe_start_us;
    struct {
        atomic_uint_fast64_t ok, errors, failed, rejected;
        atomic_uint_fast64_t pending, messages, dropped;
    } st;
};

/* ---- small helpers ----------------------------------------------------------- */

/* Single writer (the loop thread): a relaxed load + store is enough. */
static void bump(atomic_uint_fast64_t *a, uint64_t by)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + by, memory_order_relaxed);
}

static void set(atomic_uint_fast64_t *a, uint64_t v)
{
    atomic_store_explicit(a, v, memory_order_relaxed);
}


static void unlink_entry(h2o_timeout_entry_t *e)
{
    if (h2o_timeout_is_linked(e))
        h2o_timeout_unlink(e);
}

/* ---- socket plumbing (the hiredis event hooks) ----------------------------------- */

static void on_sock_read(h2o_socket_t *sock, const char *err)
{
    igw_redis *r = sock->data;
    (void)err; /* hiredis finds the error itself when it reads */
    if (r->ac)
        redisAsyncHandleRead(r->ac); /* may free the context: nothing after this */
}

static void on_sock_write(h2o_socket_t *sock, const char *err)
{
    igw_redis *r = sock->data;
    (void)err;
    r->write_armed = false;
    if (r->ac && r->want_write)
        redisAsyncHandleWrite(r->ac); /* may free the context: nothing after this */
}

static void close_socket(igw_redis *r)
{
    if (r->sock) {
        h2o_socket_close(r->sock); /* closes our dup only; a pending notify dies with it */
        r->sock = NULL;
    }
    r->reading = r->write_armed = r->want_write = false;
}

static void ev_add_read(void *p)
{
    igw_redis *r = p;
    if (r->sock && !r->reading) {
        r->reading = true;
        h2o_socket_read_start(r->sock, on_sock_read);
    }
}

static void ev_del_read(void *p)
{
    igw_redis *r = p;
    if (r->sock && r->reading) {
        r->reading = false;
        h2o_socket_read_stop(r->sock);
    }
}

static void ev_add_write(void *p)
{
    igw_redis *r = p;
    r->want_write = true;
    if (r->sock && !r->write_armed) {
        r->write_armed = true;
        h2o_socket_notify_write(r->sock, on_sock_write);
    }
}

static void ev_del_write(void *p)
{
    ((igw_redis *)p)->want_write = false;
}

static void lost(igw_redis *r, const redisAsyncContext *ac);

/* hiredis is freeing the context (possibly called twice). */
static void ev_cleanup(void *p)
{
    igw_redis *r = p;
    if (r->ac)
        lost(r, r->ac);
    close_socket(r);
}

/* ---- connection lifecycle ---------------------------------------------------- */

/* The context is already detached (r->ac NULL): counts, records why and
 * schedules the next attempt. Callbacks still to come fail with failbuf. */
static void gone(igw_redis *r, const char *why, const char *fail)
{
    snprintf(r->failbuf, sizeof r->failbuf, "%s", fail);
    r->state = ST_BACKOFF;
    unlink_entry(&r->probe_timer);
    igw_conn_down(r->sup, why);
}

/* hiredis tears `ac` down on its own (error, EOF, failed connect). */
static void lost(igw_redis *r, const redisAsyncContext *ac)
{
    if (ac != r->ac)
        return;
    char why[300];
    snprintf(why, sizeof why, "%s: %s", r->state == ST_READY ? "connection lost" : "connect failed",
             ac->c.err && ac->c.errstr[0] ? ac->c.errstr : "connection closed");
    r->ac = NULL;
    r->timed_out = NULL;
    gone(r, why, why);
}

/* We tear the context down (deadline): pending callbacks run from here. */
static void drop(igw_redis *r, const char *why, const req *timed_out)
{
    redisAsyncContext *ac = r->ac;
    char fail[sizeof r->failbuf];
    snprintf(fail, sizeof fail, "connection lost: %s", why);
    r->ac = NULL;
    gone(r, why, fail);
    r->timed_out = timed_out;
    if (ac)
        redisAsyncFree(ac);
    r->timed_out = NULL;
    close_socket(r);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    igw_redis *r = ac->data;
    if (status != REDIS_OK) {
        lost(r, ac); /* hiredis frees the context right after */
        return;
    }
    if (r->channel)
        return; /* up once the SUBSCRIBE is confirmed */
    r->state = ST_READY;
    igw_conn_up(r->sup);
}

static void on_sub_reply(redisAsyncContext *ac, void *reply, void *privdata);

/* conn.c's `connect` hook. */
static void start_connect(void *arg)
{
    igw_redis *r = arg;
    r->state = ST_CONNECTING;
    redisAsyncContext *ac = r->unix_path ? redisAsyncConnectUnix(r->addr) : redisAsyncConnect(r->addr, (int)r->port);
    char why[300];
    int dupfd = -1;
    if (!ac || ac->err || (dupfd = fcntl(ac->c.fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        snprintf(why, sizeof why, "connect failed: %s",
                 !ac ? "out of memory" : ac->err ? ac->errstr : "dup failed");
        if (ac)
            redisAsyncFree(ac); /* no hooks, no callbacks yet */
        gone(r, why, why);
        return;
    }
    r->sock = h2o_evloop_socket_create(r->loop, dupfd, H2O_SOCKET_FLAG_DONT_READ);
    r->sock->data = r;
    r->ac = ac;
    ac->data = r;
    ac->ev.data = r;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    redisAsyncSetConnectCallback(ac, on_connect); /* asks for a write event: connect completion */
    if (r->channel) {
        /* Buffered until connected; the attempt's deadline covers its answer. */
        const char *argv[] = {"SUBSCRIBE", r->channel};
        size_t len[] = {9, r->channel_len};
        if (redisAsyncCommandArgv(ac, on_sub_reply, r, 2, argv, len) != REDIS_OK)
            drop(r, "connect failed: out of memory", NULL);
    }
}

/* conn.c's `timed_out` hook. */
static void on_deadline(void *arg)
{
    igw_redis *r = arg;
    char why[64];
    snprintf(why, sizeof why, "connect timed out after %u ms", r->timeout_ms);
    drop(r, why, NULL);
}

static void on_cmd_timeout(h2o_timeout_entry_t *e)
{
    req *q = H2O_STRUCT_FROM_MEMBER(req, timer, e);
    char why[64];
    snprintf(why, sizeof why, "a command timed out after %u ms", q->r->timeout_ms);
    drop(q->r, why, q);
}

/* ---- completion -------------------------------------------------------------- */

/* hiredis's callback for every command: exactly once, with the reply or
 * with NULL when the context goes away. */
static void on_reply(redisAsyncContext *ac, void *reply_, void *privdata)
{
    req *q = privdata;
    igw_redis *r = q->r;
    const redisReply *reply = reply_;
    if (!reply)
        lost(r, ac); /* no-op unless hiredis is freeing the current context itself */
    unlink_entry(&q->timer);
    r->pending--;
    set(&r->st.pending, r->pending);
    char tbuf[64];
    const char *err = NULL;
    if (reply) {
        /* A server that answers (one that accepts, then hangs up, keeps backing off). */
        igw_conn_answered(r->sup, igw_clock_us() - q->start_us);
        bump(&r->st.ok, 1);
        if (reply->type == REDIS_REPLY_ERROR)
            bump(&r->st.errors, 1);
    } else {
        bump(&r->st.failed, 1);
        err = r->failbuf;
        if (q == r->timed_out) {
            snprintf(tbuf, sizeof tbuf, "timed out after %u ms", r->timeout_ms);
            err = tbuf;
        }
    }
    r->in_cb++;
    q->cb(q->arg, reply, err);
    r->in_cb--;
    free(q);
}

/* ---- subscriber ------------------------------------------------------------------ */

static bool is_word(const redisReply *e, const char *w)
{
    size_t n = strlen(w);
    return e->type == REDIS_REPLY_STRING && e->len == n && strncasecmp(e->str, w, n) == 0;
}

static void deliver(igw_redis *r, const char *payload, size_t len)
{
    r->in_cb++;
    r->on_message(r->msg_arg, payload, len);
    r->in_cb--;
}

/* hiredis's callback for the channel: every "subscribe" and "message"
 * reply, and NULL once when the context goes away. */
static void on_sub_reply(redisAsyncContext *ac, void *reply_, void *privdata)
{
    igw_redis *r = privdata;
    const redisReply *reply = reply_;
    if (!reply) {
        lost(r, ac); /* no-op unless hiredis is freeing the current context itself */
        return;
    }
    if (ac != r->ac || reply->type != REDIS_REPLY_ARRAY || reply->elements < 3)
        return;
    if (is_word(reply->element[0], "message")) {
        igw_conn_answered(r->sup, UINT64_MAX); /* a live server; no round trip to observe */
        const redisReply *p = reply->element[2];
        if (p->type != REDIS_REPLY_STRING)
            return;
        if (p->len > IGW_REDIS_MESSAGE_MAX) {
            bump(&r->st.dropped, 1);
            return;
        }
        bump(&r->st.messages, 1);
        deliver(r, p->str, p->len);
    } else if (is_word(reply->element[0], "subscribe")) {
        if (r->state != ST_READY) { /* the connection's own SUBSCRIBE */
            r->state = ST_READY;
            igw_conn_up(r->sup);
            deliver(r, NULL, 0);
        } else if (h2o_timeout_is_linked(&r->probe_timer)) { /* a probe's */
            h2o_timeout_unlink(&r->probe_timer);
            igw_conn_answered(r->sup, igw_clock_us() - r->probe_start_us);
        }
    }
}

static void on_sub_probe_timeout(h2o_timeout_entry_t *e)
{
    igw_redis *r = H2O_STRUCT_FROM_MEMBER(igw_redis, probe_timer, e);
    char why[64];
    snprintf(why, sizeof why, "a probe timed out after %u ms", r->timeout_ms);
    drop(r, why, NULL);
}

/* conn.c's `probe` hook for a subscriber (one out at a time). */
static int send_sub_probe(void *arg)
{
    igw_redis *r = arg;
    const char *argv[] = {"SUBSCRIBE", r->channel};
    size_t len[] = {9, r->channel_len};
    if (!r->ac || r->state != ST_READY || h2o_timeout_is_linked(&r->probe_timer) ||
        redisAsyncCommandArgv(r->ac, on_sub_reply, r, 2, argv, len) != REDIS_OK)
        return -1;
    r->probe_start_us = igw_clock_us();
    h2o_timeout_link(r->loop, &r->t_timeout, &r->probe_timer);
    return 0;
}

/* Commands that would make replies stop matching callbacks one to one. */
static bool refused_command(int argc, const char **argv, const size_t *argvlen)
{
    static const char *const names[] = {"subscribe", "psubscribe",   "ssubscribe", "unsubscribe", "punsubscribe",
                                        "sunsubscribe", "monitor", "pmonitor",   "hello",       "reset"};
    size_t len = argvlen ? argvlen[0] : strlen(argv[0]);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (len == strlen(names[i]) && strncasecmp(argv[0], names[i], len) == 0)
            return true;
    if (argc >= 2 && len == 6 && strncasecmp(argv[0], "client", 6) == 0) {
        size_t l1 = argvlen ? argvlen[1] : strlen(argv[1]);
        return l1 == 5 && strncasecmp(argv[1], "reply", 5) == 0;
    }
    return false;
}

/* ---- public -------------------------------------------------------------------- */

/* The probe of an idle connection (conn.h): PING, answered by anything. */
static void on_probe_answer(void *arg, const redisReply *reply, const char *err)
{
    (void)arg, (void)reply, (void)err; /* the supervisor saw the answer, or the loss */
}

static int send_probe(void *arg)
{
    const char *argv[] = {"PING"};
    return igw_redis_command(arg, on_probe_answer, NULL, 1, argv, NULL);
}

void igw_redis_set_probe(igw_redis *r, unsigned interval_ms)
{
    igw_conn_set_probe(r->sup, interval_ms, r->timeout_ms); /* the hook is set: cannot fail */
}

static igw_redis *create(h2o_evloop_t *loop, const char *host, unsigned port, unsigned timeout_ms, const char *channel,
                         igw_redis_message_cb on_message, void *msg_arg, char *err, size_t errlen)
{
    if (!loop || !host || !*host || timeout_ms == 0 || (host[0] != '/' && (port == 0 || port > 65535))) {
        snprintf(err, errlen, "redis: invalid host, port or timeout");
        return NULL;
    }
    igw_redis *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (host[0] == '/') {
        if (strlen(host) >= sizeof r->addr) {
            free(r);
            snprintf(err, errlen, "redis: unix socket path too long");
            return NULL;
        }
        strcpy(r->addr, host);
        r->unix_path = true;
    } else {
        /* IPv4 first, as hiredis itself and redis-server's default bind do. */
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
        int gai = getaddrinfo(host, NULL, &hints, &res);
        if (gai != 0) {
            hints.ai_family = AF_INET6;
            gai = getaddrinfo(host, NULL, &hints, &res);
        }
        const void *a = NULL;
        if (gai == 0 && res->ai_family == AF_INET)
            a = &((const struct sockaddr_in *)(const void *)res->ai_addr)->sin_addr;
        else if (gai == 0 && res->ai_family == AF_INET6)
            a = &((const struct sockaddr_in6 *)(const void *)res->ai_addr)->sin6_addr;
        if (!a || !inet_ntop(res->ai_family, a, r->addr, sizeof r->addr)) {
            snprintf(err, errlen, "redis: cannot resolve '%s': %s", host, gai ? gai_strerror(gai) : "no address");
            if (gai == 0)
                freeaddrinfo(res);
            free(r);
            return NULL;
        }
        freeaddrinfo(res);
    }
    r->loop = loop;
    r->port = port;
    r->timeout_ms = timeout_ms;
    if (channel) {
        r->channel_len = strlen(channel);
        r->on_message = on_message;
        r->msg_arg = msg_arg;
        r->probe_timer.cb = on_sub_probe_timeout;
        if (!(r->channel = strdup(channel))) {
            free(r);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
    }
    r->sup = igw_conn_create(loop, timeout_ms,
                             (igw_conn_hooks){.connect = start_connect,
                                              .timed_out = on_deadline,
                                              .probe = channel ? send_sub_probe : send_probe},
                             r);
    if (!r->sup) {
        free(r->channel);
        free(r);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h2o_timeout_init(loop, &r->t_timeout, timeout_ms);
    igw_conn_start(r->sup);
    return r;
}

igw_redis *igw_redis_create(h2o_evloop_t *loop, const char *host, unsigned port, unsigned timeout_ms, char *err,
                            size_t errlen)
{
    return create(loop, host, port, timeout_ms, NULL, NULL, NULL, err, errlen);
}

igw_redis *igw_redis_subscribe_create(h2o_evloop_t *loop, const char *host, unsigned port, unsigned timeout_ms,
                                      const char *channel, igw_redis_message_cb on_message, void *arg, char *err,
                                      size_t errlen)
{
    if (!channel || !*channel || strlen(channel) > 255 || !on_message) {
        snprintf(err, errlen, "redis: invalid channel or callback");
        return NULL;
    }
    return create(loop, host, port, timeout_ms, channel, on_message, arg, err, errlen);
}

int igw_redis_command(igw_redis *r, igw_redis_cb cb, void *arg, int argc, const char **argv, const size_t *argvlen)
{
    if (r->closing || r->channel || !r->ac || !cb || argc < 1 || !argv || r->pending >= IGW_REDIS_QUEUE_MAX)
        goto reject;
    for (int i = 0; i < argc; i++)
        if (!argv[i])
            goto reject;
    if (refused_command(argc, argv, argvlen))
        goto reject;
    req *q = calloc(1, sizeof *q);
    if (!q)
        goto reject;
    q->r = r;
    q->cb = cb;
    q->arg = arg;
    q->start_us = igw_clock_us();
    q->timer.cb = on_cmd_timeout;
    if (redisAsyncCommandArgv(r->ac, on_reply, q, argc, argv, argvlen) != REDIS_OK) {
        free(q);
        goto reject;
    }
    h2o_timeout_link(r->loop, &r->t_timeout, &q->timer);
    r->pending++;
    set(&r->st.pending, r->pending);
    return 0;
reject:
    bump(&r->st.rejected, 1);
    return -1;
}

bool igw_redis_connected(const igw_redis *r)
{
    return r->state == ST_READY;
}

const char *igw_redis_last_error(const igw_redis *r)
{
    return igw_conn_last_error(r->sup);
}

void igw_redis_stats_get(const igw_redis *r, igw_redis_stats *out)
{
#define L(x) atomic_load_explicit(&r->st.x, memory_order_relaxed)
    memset(out, 0, sizeof *out);
    out->commands_ok = L(ok);
    out->error_replies = L(errors);
    out->commands_failed = L(failed);
    out->rejected = L(rejected);
    out->pending = L(pending);
    out->messages = L(messages);
    out->messages_dropped = L(dropped);
    igw_conn_stats_get(r->sup, &out->conn);
#undef L
}

void igw_redis_destroy(igw_redis *r)
{
    if (!r)
        return;
    if (r->in_cb) {
        igw_log(IGW_LOG_ERROR, NULL, "bug: igw_redis_destroy called from an igw_redis callback");
        abort();
    }
    r->closing = true;
    igw_conn_stop(r->sup);
    redisAsyncContext *ac = r->ac;
    r->ac = NULL;
    snprintf(r->failbuf, sizeof r->failbuf, "shutting down");
    r->timed_out = NULL;
    if (ac)
        redisAsyncFree(ac); /* every pending callback, in order, with NULL */
    close_socket(r);
    unlink_entry(&r->probe_timer);
    h2o_timeout_dispose(r->loop, &r->t_timeout);
    igw_conn_destroy(r->sup);
    free(r->channel);
    free(r);
}
