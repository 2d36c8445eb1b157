/* redis_test.c - igw_redis against a real redis-server (started by redis_test.sh).
 *
 * usage: redis_test PORT [UNIX_SOCKET], with IGW_REDISTEST_STOP /
 * IGW_REDISTEST_START holding shell commands that stop and start that
 * server (run with system(); the loop is ours, so blocking here is fine).
 * The server must allow DEBUG from local clients. A second, plain blocking
 * hiredis connection kills igw_redis's connections and checks values.
 * The cases run in order, each printing its name and outcome, then the
 * number of checks; exits 1 on any failure. */
#include "clock.h"
#include "core/redis.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <h2o/socket.h>

#include "../check.h"

typedef struct outcome {
    int calls, order;
    bool ok; /* a reply */
    int type;
    long long integer;
    size_t len;
    char str[1100]; /* string / error / status replies, binary-safe up to this size */
    char err[300];
} outcome;
static int completed;

/* A subscriber's callbacks, in order: payload copies, or NULL for "(re)subscribed". */
enum { SUBLOG_MAX = 512 };
typedef struct sublog {
    int n, resubs, msgs, bad;
    struct {
        char *data; /* NULL: (re)subscribed */
        size_t len;
    } ev[SUBLOG_MAX];
} sublog;

/* What main sets up for every case, and what a case leaves for later ones
 * (each case says which earlier ones it needs). */
typedef struct fixture {
    h2o_evloop_t *loop;
    redisContext *admin; /* blocking; admin_ok() connects it again after a restart */
    unsigned port;
    const char *unix_path;           /* NULL: no unix socket case */
    const char *stop_cmd, *start_cmd; /* IGW_REDISTEST_STOP / _START */
    int fds0;                        /* descriptors open before the first igw_redis */
    igw_redis *r;                    /* most cases' connection, until test_destroy_in_flight */
    igw_redis *rsub;                 /* the subscriber (test_subscribe_refusals_and_connect) */
    sublog sl;                       /* its callbacks */
    outcome o_x;                     /* the commands it refused: never called back */
} fixture;

/* Messages in test_subscribe_messages_in_order; later counts build on it. */
enum { NM = 200 };

static void record(void *arg, const redisReply *reply, const char *err)
{
    outcome *o = arg;
    o->calls++;
    o->order = completed++;
    o->ok = reply != NULL && err == NULL;
    o->type = reply ? reply->type : -1;
    snprintf(o->err, sizeof o->err, "%s", err ? err : "");
    if (reply && (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_ERROR ||
                  reply->type == REDIS_REPLY_STATUS)) {
        o->len = reply->len;
        memcpy(o->str, reply->str, reply->len < sizeof o->str - 1 ? reply->len : sizeof o->str - 1);
    }
    if (reply && reply->type == REDIS_REPLY_INTEGER)
        o->integer = reply->integer;
}

static void never(void *arg, const redisReply *reply, const char *err)
{
    (void)reply, (void)err;
    ++*(int *)arg;
}

static bool all_called(const outcome *o, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (o[i].calls == 0)
            return false;
    return true;
}

static bool run_until_called(fixture *f, const outcome *o, size_t n, int timeout_ms)
{
    int64_t end = igw_clock_ms() + timeout_ms;
    while (!all_called(o, n) && igw_clock_ms() < end)
        h2o_evloop_run(f->loop, 10);
    return all_called(o, n);
}

static void run_for(fixture *f, int ms)
{
    int64_t end = igw_clock_ms() + ms;
    while (igw_clock_ms() < end)
        h2o_evloop_run(f->loop, 10);
}

static bool run_until_connected(fixture *f, igw_redis *r, bool want, int timeout_ms)
{
    int64_t end = igw_clock_ms() + timeout_ms;
    while (igw_redis_connected(r) != want && igw_clock_ms() < end)
        h2o_evloop_run(f->loop, 10);
    return igw_redis_connected(r) == want;
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A text command: words separated by single spaces. */
static int cmd(igw_redis *r, outcome *o, const char *line)
{
    char buf[256];
    const char *argv[16];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && argc < 16; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    int rc = igw_redis_command(r, record, o, argc, argv, NULL);
    memset(buf, 'x', sizeof buf - 1); /* the arguments must have been copied */
    return rc;
}

static bool is_str(const outcome *o, const char *want)
{
    return o->ok && o->type == REDIS_REPLY_STRING && o->len == strlen(want) && memcmp(o->str, want, o->len) == 0;
}

static bool is_status(const outcome *o, const char *want)
{
    return o->ok && o->type == REDIS_REPLY_STATUS && strcmp(o->str, want) == 0;
}

static bool admin_ok(fixture *f)
{
    if (f->admin && !f->admin->err)
           return true;
    if (f->admin)
           redisFree(f->admin);
    f->admin = redisConnect("127.0.0.1", (int)f->port);
    return f->admin && !f->admin->err;
}

/* A blocking command on the admin connection; its integer reply (-1 otherwise). */
static long long admin_int(fixture *f, const char *fmt, ...)
{
    if (!admin_ok(f))
        return -1;
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(f->admin, fmt, ap);
    va_end(ap);
    long long v = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    if (rep && rep->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "redis_test: admin: %s\n", rep->str);
    freeReplyObject(rep);
    return v;
}

/* A callback submitting the next command of a chain from inside itself. */
typedef struct chain {
    igw_redis *r;
    int left, ok;
} chain;
static void chain_cb(void *arg, const redisReply *reply, const char *err)
{
    chain *c = arg;
    (void)err;
    c->ok += reply != NULL;
    const char *argv[] = {"INCR", "rt:chain"};
    if (--c->left > 0 && igw_redis_command(c->r, chain_cb, c, 2, argv, NULL) != 0)
        c->left = -1000;
}

/* Large values: checks length and content of GET replies. */
enum { BIGN = 32, BIG = 512 * 1024 };
static char *bigbuf;
static int big_ok, big_calls;
static void big_cb(void *arg, const redisReply *reply, const char *err)
{
    int i = (int)(intptr_t)arg;
    (void)err;
    big_calls++;
    if (!reply)
        return;
    if (i < 0) { /* a SET */
        big_ok += reply->type == REDIS_REPLY_STATUS;
        return;
    }
    memset(bigbuf, 'a' + i % 26, BIG);
    big_ok += reply->type == REDIS_REPLY_STRING && reply->len == BIG && memcmp(reply->str, bigbuf, BIG) == 0;
}

/* During destroy: the callback tries to submit again (must be refused). */
typedef struct resubmit {
    igw_redis *r;
    int calls, refused;
    char err[64];
} resubmit;
static void resubmit_cb(void *arg, const redisReply *reply, const char *err)
{
    resubmit *s = arg;
    (void)reply;
    s->calls++;
    snprintf(s->err, sizeof s->err, "%s", err ? err : "");
    const char *argv[] = {"PING"};
    int dummy = 0;
    s->refused += igw_redis_command(s->r, never, &dummy, 1, argv, NULL) == -1;
}

static void sub_cb(void *arg, const char *payload, size_t len)
{
    sublog *l = arg;
    if (l->n >= SUBLOG_MAX || (!payload && len != 0)) {
        l->bad++;
        return;
    }
    l->ev[l->n].len = len;
    l->ev[l->n].data = NULL;
    if (payload) {
        if (!(l->ev[l->n].data = malloc(len ? len : 1))) {
            l->bad++;
            return;
        }
        memcpy(l->ev[l->n].data, payload, len);
        l->msgs++;
    } else {
        l->resubs++;
    }
    l->n++;
}

static void sublog_free(sublog *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->ev[i].data);
}

static bool run_until_count(fixture *f, const int *v, int want, int timeout_ms)
{
    int64_t end = igw_clock_ms() + timeout_ms;
    while (*v < want && igw_clock_ms() < end)
        h2o_evloop_run(f->loop, 10);
    return *v >= want;
}

static bool ev_is(const sublog *l, int i, const char *data, size_t len)
{
    return i < l->n && l->ev[i].data && l->ev[i].len == len && memcmp(l->ev[i].data, data, len) == 0;
}

/* PUBLISH on the admin connection: the number of receivers, -1 on error. */
static long long admin_pub(fixture *f, const char *channel, const char *data, size_t len)
{
    if (!admin_ok(f))
        return -1;
    redisReply *rep = redisCommand(f->admin, "PUBLISH %s %b", channel, data, len);
    long long v = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    freeReplyObject(rep);
    return v;
}

/* The server's pid, from INFO (0 if unknown). */
static pid_t server_pid(fixture *f)
{
    if (!admin_ok(f))
        return 0;
    redisReply *rep = redisCommand(f->admin, "INFO server");
    const char *p = rep && rep->type == REDIS_REPLY_STRING ? strstr(rep->str, "process_id:") : NULL;
    pid_t pid = p ? (pid_t)atol(p + 11) : 0;
    freeReplyObject(rep);
    return pid;
}

/* no port, or no timeout: igw_redis_create refuses, with a reason */
static void test_create_refuses_bad_settings(fixture *f)
{
    char err[256] = "";
    CHECK(igw_redis_create(f->loop, "127.0.0.1", 0, 1000, err, sizeof err) == NULL && err[0]);
    CHECK(igw_redis_create(f->loop, "127.0.0.1", f->port, 0, err, sizeof err) == NULL);
}

/* a command submitted while connecting is buffered, then answered */
/* Needs main's f->r, new. */
static void test_buffered_while_connecting(fixture *f)
{
    outcome o_ping = {0};
    CHECK(!igw_redis_connected(f->r));
    CHECK(cmd(f->r, &o_ping, "PING") == 0);
    CHECK(run_until_called(f, &o_ping, 1, 5000), "%s", igw_redis_last_error(f->r));
    CHECK(is_status(&o_ping, "PONG"), "type %d '%s' err '%s'", o_ping.type, o_ping.str, o_ping.err);
    CHECK(igw_redis_connected(f->r));
}

/* 1000 SET + 1000 GET pipelined in one loop turn: all answered, in order, once; the stats */
/* Needs test_buffered_while_connecting (one connect so far). */
static void test_pipelined_set_get(fixture *f)
{
    enum { N = 1000 };
    static outcome o_set[N], o_get[N];
    igw_redis_stats s0, s1;
    igw_redis_stats_get(f->r, &s0);
    int base = completed, rejected = 0;
    for (int i = 0; i < N; i++) {
        char line[64];
        snprintf(line, sizeof line, "SET rt:k%d value-%d", i, i * 7);
        rejected += cmd(f->r, &o_set[i], line) != 0;
        snprintf(line, sizeof line, "GET rt:k%d", i);
        rejected += cmd(f->r, &o_get[i], line) != 0;
    }
    CHECK(rejected == 0);
    igw_redis_stats_get(f->r, &s1);
    CHECK(s1.pending == 2 * N, "pending %llu", (unsigned long long)s1.pending);
    int64_t t0 = igw_clock_ms();
    CHECK(run_until_called(f, o_get, N, 10000) && all_called(o_set, N));
    int64_t took = igw_clock_ms() - t0;
    int good = 0, in_order = 0, once = 0;
    for (int i = 0; i < N; i++) {
        char want[32];
        snprintf(want, sizeof want, "value-%d", i * 7);
        good += is_status(&o_set[i], "OK") && is_str(&o_get[i], want);
        in_order += o_set[i].order == base + 2 * i && o_get[i].order == base + 2 * i + 1;
        once += o_set[i].calls == 1 && o_get[i].calls == 1;
    }
    CHECK(good == N, "%d of %d good; first err '%s'", good, N, o_get[0].err);
    CHECK(in_order == N, "%d in order", in_order);
    CHECK(once == N);
    igw_redis_stats_get(f->r, &s1);
    CHECK(s1.commands_ok - s0.commands_ok == 2 * N && s1.conn.rtt_count - s0.conn.rtt_count == 2 * N);
    uint64_t bsum = 0;
    for (size_t i = 0; i <= IGW_CONN_RTT_NBOUNDS; i++)
        bsum += s1.conn.rtt_buckets[i];
    CHECK(bsum == s1.conn.rtt_count && s1.conn.rtt_sum_us > 0);
    CHECK(s1.pending == 0 && s1.conn.connected && s1.conn.connects == 1 && s1.commands_failed == 0);
    printf("redis_test: %d pipelined SET+GET in %lld ms (mean round trip %llu us)\n", N, (long long)took,
           (unsigned long long)((s1.conn.rtt_sum_us - s0.conn.rtt_sum_us) / (2 * N)));
}

/* binary-safe keys and values (a NUL in the key, every byte value) */
static void test_binary_safe(fixture *f)
{
    char key[] = "rt:bin\0key";
    char val[1024];
    for (size_t i = 0; i < sizeof val; i++)
        val[i] = (char)(i % 256);
    const char *sargv[] = {"SET", key, val};
    size_t slen[] = {3, sizeof key - 1, sizeof val};
    const char *gargv[] = {"GET", key};
    size_t glen[] = {3, sizeof key - 1};
    outcome o_bs = {0}, o_bg = {0}, o_bother = {0};
    CHECK(igw_redis_command(f->r, record, &o_bs, 3, sargv, slen) == 0);
    memset(val, 'z', sizeof val); /* copied */
    CHECK(igw_redis_command(f->r, record, &o_bg, 2, gargv, glen) == 0);
    CHECK(cmd(f->r, &o_bother, "EXISTS rt:bin") == 0); /* the key is not cut at its NUL */
    CHECK(run_until_called(f, &o_bother, 1, 5000));
    for (size_t i = 0; i < sizeof val; i++)
        val[i] = (char)(i % 256);
    CHECK(is_status(&o_bs, "OK"));
    CHECK(o_bg.ok && o_bg.type == REDIS_REPLY_STRING && o_bg.len == sizeof val && memcmp(o_bg.str, val, sizeof val) == 0,
          "len %zu", o_bg.len);
    CHECK(o_bother.ok && o_bother.integer == 0);
}

/* an error reply reaches its own callback only; the error stats */
/* Needs no connection lost before. */
static void test_error_reply_own_callback(fixture *f)
{
    igw_redis_stats s0, s1;
    igw_redis_stats_get(f->r, &s0);
    outcome o_e[4] = {{0}};
    CHECK(cmd(f->r, &o_e[0], "SET rt:es abc") == 0);
    CHECK(cmd(f->r, &o_e[1], "INCR rt:es") == 0);
    CHECK(cmd(f->r, &o_e[2], "GET rt:es") == 0);
    CHECK(cmd(f->r, &o_e[3], "NOSUCHCOMMAND x") == 0);
    CHECK(run_until_called(f, o_e, 4, 5000));
    CHECK(is_status(&o_e[0], "OK"));
    CHECK(o_e[1].ok && o_e[1].type == REDIS_REPLY_ERROR && starts(o_e[1].str, "ERR ") && !o_e[1].err[0], "'%s'",
          o_e[1].str);
    CHECK(is_str(&o_e[2], "abc"));
    CHECK(o_e[3].ok && o_e[3].type == REDIS_REPLY_ERROR, "'%s'", o_e[3].str);
    CHECK(o_e[1].order == o_e[0].order + 1 && o_e[2].order == o_e[1].order + 1 && o_e[3].order == o_e[2].order + 1);
    igw_redis_stats_get(f->r, &s1);
    CHECK(s1.error_replies - s0.error_replies == 2 && s1.commands_ok - s0.commands_ok == 4);
    CHECK(s1.conn.connects == 1 && s1.conn.lost == 0);
}

/* refused commands (pub/sub, MONITOR, CLIENT REPLY, HELLO, NULL argument, none, no callback) never call back */
static void test_refused_commands_never_call_back(fixture *f)
{
    igw_redis_stats s0, s1;
    int calls = 0;
    igw_redis_stats_get(f->r, &s0);
    const char *sub[] = {"subscribe", "ch"}, *psub[] = {"PSUBSCRIBE", "c*"}, *unsub[] = {"UNSUBSCRIBE"},
               *mon[] = {"MONITOR"}, *crep[] = {"CLIENT", "REPLY", "OFF"}, *hello[] = {"HELLO", "3"},
               *nul[] = {"GET", NULL};
    CHECK(igw_redis_command(f->r, never, &calls, 2, sub, NULL) == -1);
    CHECK(igw_redis_command(f->r, never, &calls, 2, psub, NULL) == -1);
    CHECK(igw_redis_command(f->r, never, &calls, 1, unsub, NULL) == -1);
    CHECK(igw_redis_command(f->r, never, &calls, 1, mon, NULL) == -1);
    CHECK(igw_redis_command(f->r, never, &calls, 3, crep, NULL) == -1);
    CHECK(igw_redis_command(f->r, never, &calls, 2, hello, NULL) == -1);
    CHECK(igw_redis_command(f->r, never, &calls, 2, nul, NULL) == -1);
    CHECK(igw_redis_command(f->r, never, &calls, 0, sub, NULL) == -1);
    CHECK(igw_redis_command(f->r, NULL, &calls, 1, mon, NULL) == -1);
    run_for(f, 50);
    igw_redis_stats_get(f->r, &s1);
    CHECK(calls == 0 && s1.rejected - s0.rejected == 9 && s1.pending == 0);
}

/* a callback submitting the next command: the chain completes */
static void test_callback_submits_next(fixture *f)
{
    chain ch = {f->r, 5, 0};
    const char *a[] = {"INCR", "rt:chain"};
    CHECK(igw_redis_command(f->r, chain_cb, &ch, 2, a, NULL) == 0);
    int64_t end = igw_clock_ms() + 5000;
    while (ch.left > 0 && igw_clock_ms() < end)
        h2o_evloop_run(f->loop, 10);
    CHECK(ch.left == 0 && ch.ok == 5, "left %d ok %d", ch.left, ch.ok);
    redisReply *rep = admin_ok(f) ? redisCommand(f->admin, "GET rt:chain") : NULL;
    CHECK(rep && rep->type == REDIS_REPLY_STRING && strcmp(rep->str, "5") == 0);
    freeReplyObject(rep);
}

/* values larger than the socket buffers hold, both ways, arrive intact */
static void test_large_values_both_ways(fixture *f)
{
    int64_t t0;
    bigbuf = malloc(BIG);
    CHECK(bigbuf != NULL);
    if (bigbuf) {
        for (int i = 0; i < BIGN; i++) {
            char key[32];
            snprintf(key, sizeof key, "rt:big%d", i);
            memset(bigbuf, 'a' + i % 26, BIG);
            const char *a[] = {"SET", key, bigbuf};
            size_t l[] = {3, strlen(key), BIG};
            CHECK(igw_redis_command(f->r, big_cb, (void *)(intptr_t)-1, 3, a, l) == 0);
        }
        for (int i = 0; i < BIGN; i++) {
            char key[32];
            snprintf(key, sizeof key, "rt:big%d", i);
            const char *a[] = {"GET", key};
            CHECK(igw_redis_command(f->r, big_cb, (void *)(intptr_t)i, 2, a, NULL) == 0);
        }
        int64_t end = igw_clock_ms() + 15000;
        t0 = igw_clock_ms();
        while (big_calls < 2 * BIGN && igw_clock_ms() < end)
            h2o_evloop_run(f->loop, 10);
        CHECK(big_ok == 2 * BIGN, "%d of %d ok (%d called)", big_ok, 2 * BIGN, big_calls);
        printf("redis_test: %d x %d KiB SET then GET in %lld ms\n", BIGN, BIG / 1024, (long long)(igw_clock_ms() - t0));
        free(bigbuf);
        admin_int(f, "DEL rt:big0 rt:big1 rt:big2 rt:big3"); /* keep the server small */
    }
}

/* CLIENT KILL: the commands in flight fail with "connection lost", later ones work after reconnecting */
/* Needs no connection lost before. */
static void test_client_kill_fails_in_flight(fixture *f)
{
    igw_redis_stats s0, s1;
    igw_redis_stats_get(f->r, &s0);
    outcome o_k[3] = {{0}};
    CHECK(cmd(f->r, &o_k[0], "BLPOP rt:nolist 3") == 0);
    CHECK(cmd(f->r, &o_k[1], "SET rt:killed 1") == 0);
    CHECK(cmd(f->r, &o_k[2], "GET rt:killed") == 0);
    run_for(f, 200);
    CHECK(!all_called(o_k, 1));
    CHECK(admin_int(f, "CLIENT KILL TYPE normal") >= 1);
    CHECK(run_until_called(f, o_k, 3, 2000));
    int lostc = 0;
    for (int i = 0; i < 3; i++)
        lostc += o_k[i].calls == 1 && !o_k[i].ok && starts(o_k[i].err, "connection lost: ");
    CHECK(lostc == 3, "'%s' '%s' '%s'", o_k[0].err, o_k[1].err, o_k[2].err);
    CHECK(o_k[1].order == o_k[0].order + 1 && o_k[2].order == o_k[1].order + 1);
    printf("redis_test: after CLIENT KILL: '%s'\n", o_k[0].err);
    CHECK(run_until_connected(f, f->r, true, 3000), "%s", igw_redis_last_error(f->r));
    outcome o_a[2] = {{0}};
    CHECK(cmd(f->r, &o_a[0], "SET rt:after yes") == 0);
    CHECK(cmd(f->r, &o_a[1], "GET rt:after") == 0);
    CHECK(run_until_called(f, o_a, 2, 5000));
    CHECK(is_status(&o_a[0], "OK") && is_str(&o_a[1], "yes"), "'%s' '%s'", o_a[0].err, o_a[1].err);
    igw_redis_stats_get(f->r, &s1);
    CHECK(s1.conn.lost - s0.conn.lost == 1 && s1.conn.connects - s0.conn.connects == 1);
    CHECK(s1.commands_failed - s0.commands_failed == 3);
    CHECK(admin_int(f, "EXISTS rt:killed") == 0); /* queued behind BLPOP on the server, never run */
}

/* the server stops: commands refused or failed, reconnects backing off; works again once it is back */
static void test_server_stop_and_back(fixture *f)
{
    igw_redis_stats s0, s1;
    if (!f->stop_cmd || !f->start_cmd) {
        check(false, __FILE__, __LINE__, "IGW_REDISTEST_STOP and IGW_REDISTEST_START are set", NULL);
    } else {
        igw_redis_stats_get(f->r, &s0);
        CHECK(system(f->stop_cmd) == 0, "%s", f->stop_cmd);
        CHECK(run_until_connected(f, f->r, false, 5000));
        run_for(f, 300);
        int refused = 0, failed = 0;
        for (int i = 0; i < 5; i++) {
            outcome o_d = {0};
            if (cmd(f->r, &o_d, "PING") != 0)
                refused++;
            else if (run_until_called(f, &o_d, 1, 3000) && o_d.calls == 1 && !o_d.ok && o_d.err[0])
                failed++;
            run_for(f, 60);
        }
        CHECK(refused + failed == 5, "%d refused, %d failed", refused, failed);
        igw_redis_stats_get(f->r, &s1);
        CHECK(!s1.conn.connected && s1.conn.connect_failures > s0.conn.connect_failures);
        CHECK(s1.conn.connect_failures - s0.conn.connect_failures < 20, "%llu attempts: no backoff?",
              (unsigned long long)(s1.conn.connect_failures - s0.conn.connect_failures));
        printf("redis_test: while stopped: %d refused, %d failed; %s\n", refused, failed, igw_redis_last_error(f->r));
        CHECK(system(f->start_cmd) == 0, "%s", f->start_cmd);
        CHECK(run_until_connected(f, f->r, true, 5000), "%s", igw_redis_last_error(f->r));
        outcome o_up = {0};
        CHECK(cmd(f->r, &o_up, "PING") == 0);
        CHECK(run_until_called(f, &o_up, 1, 5000) && is_status(&o_up, "PONG"), "'%s'", o_up.err);
        redisFree(f->admin);
        f->admin = NULL;
    }
}

/* a connection over the unix socket */
static void test_unix_socket(fixture *f)
{
    char err[256] = "";
    if (f->unix_path) {
        igw_redis *ru = igw_redis_create(f->loop, f->unix_path, 0, 2000, err, sizeof err);
        CHECK(ru != NULL, "%s", err);
        if (ru) {
            outcome o_u = {0};
            CHECK(cmd(ru, &o_u, "ECHO unix") == 0);
            CHECK(run_until_called(f, &o_u, 1, 3000) && is_str(&o_u, "unix"), "'%s'", o_u.err);
            igw_redis_destroy(ru);
        }
    }
}

/* a command unanswered for timeout_ms fails, with the ones behind it, and drops the connection; then back */
static void test_command_timeout_drops_connection(fixture *f)
{
    char err[256] = "";
    igw_redis_stats s1;
    int64_t t0;
    igw_redis *rt = igw_redis_create(f->loop, "127.0.0.1", f->port, 500, err, sizeof err);
    CHECK(rt != NULL, "%s", err);
    if (rt) {
        outcome o_t0 = {0}, o_t[2] = {{0}};
        CHECK(cmd(rt, &o_t0, "PING") == 0);
        CHECK(run_until_called(f, &o_t0, 1, 3000) && is_status(&o_t0, "PONG"), "'%s'", o_t0.err);
        h2o_evloop_run(f->loop, 0); /* fresh loop time for the deadlines */
        CHECK(cmd(rt, &o_t[0], "DEBUG SLEEP 2") == 0);
        CHECK(cmd(rt, &o_t[1], "PING") == 0);
        t0 = igw_clock_ms();
        CHECK(run_until_called(f, o_t, 2, 3000));
        int64_t waited = igw_clock_ms() - t0;
        CHECK(waited >= 450 && waited < 1200, "failed after %lld ms", (long long)waited);
        CHECK(!o_t[0].ok && strcmp(o_t[0].err, "timed out after 500 ms") == 0, "'%s' '%s'", o_t[0].err, o_t[0].str);
        CHECK(!o_t[1].ok && strstr(o_t[1].err, "timed out") != NULL, "'%s'", o_t[1].err);
        printf("redis_test: DEBUG SLEEP 2: '%s' after %lld ms, then '%s'\n", o_t[0].err, (long long)waited,
               o_t[1].err);
        igw_redis_stats_get(rt, &s1);
        CHECK(s1.conn.lost == 1 && !s1.conn.connected && s1.commands_failed == 2);
        CHECK(strstr(igw_redis_last_error(rt), "timed out") != NULL, "'%s'", igw_redis_last_error(rt));
        /* Once the server wakes up, commands go through again. */
        bool back = false;
        int64_t end = igw_clock_ms() + 6000;
        while (!back && igw_clock_ms() < end) {
            outcome o_b = {0};
            if (cmd(rt, &o_b, "PING") == 0)
                run_until_called(f, &o_b, 1, 1000);
            back = is_status(&o_b, "PONG");
            if (!back)
                run_for(f, 100);
        }
        CHECK(back, "%s", igw_redis_last_error(rt));
        igw_redis_destroy(rt);
    }
}

/* destroy with commands in flight and unsent: each fails "shutting down", in order; a resubmission refused */
/* Needs f->r, connected; destroys it. */
static void test_destroy_in_flight(fixture *f)
{
    igw_redis_stats s1;
    outcome o_end[5] = {{0}};
    resubmit rs = {f->r, 0, 0, ""};
    CHECK(cmd(f->r, &o_end[0], "BLPOP rt:nolist 2") == 0);
    CHECK(cmd(f->r, &o_end[1], "PING") == 0);
    run_for(f, 100);
    igw_redis_stats_get(f->r, &s1);
    CHECK(s1.pending == 2);
    CHECK(cmd(f->r, &o_end[2], "SET rt:end 1") == 0);
    const char *p[] = {"PING"};
    CHECK(igw_redis_command(f->r, resubmit_cb, &rs, 1, p, NULL) == 0);
    CHECK(cmd(f->r, &o_end[3], "PING") == 0);
    CHECK(cmd(f->r, &o_end[4], "PING") == 0);
    igw_redis_destroy(f->r);
    int shut = 0, order = 0;
    for (int i = 0; i < 5; i++) {
        shut += o_end[i].calls == 1 && !o_end[i].ok && strcmp(o_end[i].err, "shutting down") == 0;
        order += i == 0 || o_end[i].order == o_end[i - 1].order + 1;
    }
    CHECK(shut == 5, "%d of 5 shut down; '%s'", shut, o_end[0].err);
    CHECK(order == 5);
    CHECK(rs.calls == 1 && rs.refused == 1 && strcmp(rs.err, "shutting down") == 0);
    run_for(f, 50);
    CHECK(o_end[0].calls == 1 && o_end[4].calls == 1);
    CHECK(admin_int(f, "EXISTS rt:end") == 0);
    f->r = NULL;
}

/* nothing listening: connects back off; destroy while waiting calls back once */
static void test_nothing_listening_backoff(fixture *f)
{
    char err[256] = "";
    igw_redis_stats s1;
    igw_redis *rn = igw_redis_create(f->loop, "127.0.0.1", 1, 1000, err, sizeof err);
    CHECK(rn != NULL, "%s", err);
    if (rn) {
        int calls = 0, accepted = 0;
        const char *p[] = {"PING"};
        for (int i = 0; i < 3; i++)
            accepted += igw_redis_command(rn, never, &calls, 1, p, NULL) == 0;
        run_for(f, 300);
        igw_redis_stats_get(rn, &s1);
        CHECK(calls == accepted, "%d calls for %d accepted", calls, accepted);
        CHECK(s1.conn.connect_failures >= 2 && s1.conn.connect_failures <= 5, "%llu connect failures in 300 ms",
              (unsigned long long)s1.conn.connect_failures);
        CHECK(strstr(igw_redis_last_error(rn), "connect failed") != NULL, "'%s'", igw_redis_last_error(rn));
        printf("redis_test: nothing listening: %s\n", igw_redis_last_error(rn));
        igw_redis_destroy(rn);
        CHECK(calls == accepted);
    }
    igw_redis_destroy(NULL);
}

/* a listener whose accept queue is full: the connect deadline applies; once closed, "connect failed" */
static void test_connect_deadline_full_backlog(fixture *f)
{
    char err[256] = "";
    igw_redis_stats s1;
    int64_t t0;
    int lfd = socket(AF_INET, SOCK_STREAM, 0), filler[4];
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof sin;
    CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sin, sizeof sin) == 0 && listen(lfd, 0) == 0 &&
          getsockname(lfd, (struct sockaddr *)&sin, &slen) == 0);
    for (int i = 0; i < 4; i++) { /* the queue holds backlog + 1; the rest wait in SYN_SENT */
        filler[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        int rc = connect(filler[i], (struct sockaddr *)&sin, sizeof sin);
        CHECK(rc == 0 || errno == EINPROGRESS);
    }
    run_for(f, 50);
    unsigned lport = ntohs(sin.sin_port);
    igw_redis *rs = igw_redis_create(f->loop, "127.0.0.1", lport, 300, err, sizeof err);
    CHECK(rs != NULL, "%s", err);
    if (rs) {
        outcome o_s = {0};
        CHECK(cmd(rs, &o_s, "PING") == 0); /* connecting: accepted */
        t0 = igw_clock_ms();
        CHECK(run_until_called(f, &o_s, 1, 3000));
        int64_t waited = igw_clock_ms() - t0;
        CHECK(!o_s.ok && strcmp(o_s.err, "connection lost: connect timed out after 300 ms") == 0, "'%s'", o_s.err);
        CHECK(waited >= 250 && waited < 1000, "after %lld ms", (long long)waited);
        igw_redis_stats_get(rs, &s1);
        CHECK(s1.conn.connect_failures == 1 && s1.conn.lost == 0 && s1.conn.connects == 0);
        igw_redis_destroy(rs);
    }
    igw_redis *rf = igw_redis_create(f->loop, "127.0.0.1", lport, 5000, err, sizeof err);
    CHECK(rf != NULL, "%s", err);
    if (rf) {
        outcome o_f[2] = {{0}};
        CHECK(cmd(rf, &o_f[0], "PING") == 0);
        CHECK(cmd(rf, &o_f[1], "PING") == 0);
        run_for(f, 200);
        CHECK(!all_called(o_f, 1));
        close(lfd);
        lfd = -1;
        CHECK(run_until_called(f, o_f, 2, 4000));
        CHECK(!o_f[0].ok && starts(o_f[0].err, "connect failed: "), "'%s'", o_f[0].err);
        CHECK(!o_f[1].ok && strcmp(o_f[1].err, o_f[0].err) == 0, "'%s'", o_f[1].err);
        printf("redis_test: refused while connecting: '%s'\n", o_f[0].err);
        igw_redis_stats_get(rf, &s1);
        CHECK(s1.conn.connect_failures >= 1 && s1.commands_failed == 2 && s1.pending == 0);
        igw_redis_destroy(rf);
    }
    if (lfd >= 0)
        close(lfd);
    for (int i = 0; i < 4; i++)
        close(filler[i]);
}

/* ---- a subscriber: messages in order, resubscribed after CLIENT KILL, a
 * restart and a frozen server; oversize dropped; no commands ---- */

/* subscribe: bad settings refused; the subscriber refuses commands, connects and reports "subscribed" first */
static void test_subscribe_refusals_and_connect(fixture *f)
{
    if (!f->stop_cmd || !f->start_cmd)
        return; /* test_server_stop_and_back failed already */
    char err[256] = "";
    CHECK(igw_redis_subscribe_create(f->loop, "127.0.0.1", f->port, 500, "", sub_cb, &f->sl, err, sizeof err) == NULL &&
          err[0]);
    CHECK(igw_redis_subscribe_create(f->loop, "127.0.0.1", f->port, 500, "igw:t", NULL, &f->sl, err, sizeof err) ==
          NULL);
    CHECK(igw_redis_subscribe_create(f->loop, "127.0.0.1", 0, 500, "igw:t", sub_cb, &f->sl, err, sizeof err) == NULL);
    f->rsub = igw_redis_subscribe_create(f->loop, "localhost", f->port, 500, "igw:t", sub_cb, &f->sl, err, sizeof err);
    CHECK(f->rsub != NULL, "%s", err);
    if (!f->rsub)
        return;
    igw_redis_set_probe(f->rsub, 200);
    f->o_x = (outcome){0};
    CHECK(cmd(f->rsub, &f->o_x, "PING") == -1); /* connecting */
    CHECK(!igw_redis_connected(f->rsub));
    CHECK(run_until_count(f, &f->sl.resubs, 1, 3000), "%s", igw_redis_last_error(f->rsub));
    CHECK(igw_redis_connected(f->rsub) && f->sl.n == 1 && !f->sl.ev[0].data);
    CHECK(cmd(f->rsub, &f->o_x, "PING") == -1 && cmd(f->rsub, &f->o_x, "GET rt:x") == -1 &&
          cmd(f->rsub, &f->o_x, "SUBSCRIBE igw:t") == -1);
}

/* binary payloads of many sizes (empty, NULs) arrive in order; another channel's do not */
/* Needs test_subscribe_refusals_and_connect. */
static void test_subscribe_messages_in_order(fixture *f)
{
    if (!f->rsub)
        return;
    igw_redis_stats s1;
    char pay[400];
    int receivers = 0;
    for (int i = 0; i < NM; i++) {
        size_t len = (size_t)(i * 37) % sizeof pay;
        for (size_t j = 0; j < len; j++)
            pay[j] = (char)((i + j) % 256);
        receivers += admin_pub(f, "igw:t", pay, len) == 1;
    }
    CHECK(receivers == NM, "%d", receivers);
    CHECK(admin_pub(f, "igw:other", "x", 1) == 0);
    CHECK(run_until_count(f, &f->sl.msgs, NM, 5000), "%d of %d", f->sl.msgs, NM);
    run_for(f, 50);
    int good = 0;
    for (int i = 0; i < NM; i++) {
        size_t len = (size_t)(i * 37) % sizeof pay;
        for (size_t j = 0; j < len; j++)
            pay[j] = (char)((i + j) % 256);
        good += ev_is(&f->sl, 1 + i, pay, len);
    }
    CHECK(good == NM, "%d of %d in order and intact", good, NM);
    CHECK(f->sl.n == 1 + NM && f->sl.bad == 0 && f->o_x.calls == 0);
    igw_redis_stats_get(f->rsub, &s1);
    CHECK(s1.messages == NM && s1.messages_dropped == 0 && s1.rejected == 4 && s1.commands_ok == 0 &&
              s1.pending == 0,
          "%llu messages, %llu rejected", (unsigned long long)s1.messages, (unsigned long long)s1.rejected);
}

/* an oversize message is dropped and counted; the bound itself and what follows arrive */
/* Needs test_subscribe_messages_in_order (NM messages). */
static void test_subscribe_oversize_dropped(fixture *f)
{
    if (!f->rsub)
        return;
    igw_redis_stats s1;
    char *huge = malloc(IGW_REDIS_MESSAGE_MAX + 1);
    CHECK(huge != NULL);
    if (huge) {
        memset(huge, 'h', IGW_REDIS_MESSAGE_MAX + 1);
        CHECK(admin_pub(f, "igw:t", huge, IGW_REDIS_MESSAGE_MAX + 1) == 1);
        CHECK(admin_pub(f, "igw:t", huge, IGW_REDIS_MESSAGE_MAX) == 1);
        CHECK(admin_pub(f, "igw:t", "after", 5) == 1);
        CHECK(run_until_count(f, &f->sl.msgs, NM + 2, 3000));
        CHECK(ev_is(&f->sl, 1 + NM, huge, IGW_REDIS_MESSAGE_MAX) && ev_is(&f->sl, 2 + NM, "after", 5));
        igw_redis_stats_get(f->rsub, &s1);
        CHECK(s1.messages == NM + 2 && s1.messages_dropped == 1 && s1.conn.lost == 0);
        free(huge);
    }
}

/* idle: the probes are answered and deliver nothing; one subscription */
/* Needs test_subscribe_oversize_dropped (NM + 2 messages). */
static void test_subscribe_idle_probes(fixture *f)
{
    if (!f->rsub)
        return;
    igw_redis_stats s1;
    int n0 = f->sl.n;
    run_for(f, 900);
    igw_redis_stats_get(f->rsub, &s1);
    CHECK(s1.conn.probes_ok >= 2 && s1.conn.probes_timeout == 0 && s1.conn.rtt_count >= 2 && s1.conn.healthy &&
              s1.conn.connects == 1 && f->sl.n == n0,
          "%llu probes ok, %llu timed out", (unsigned long long)s1.conn.probes_ok,
          (unsigned long long)s1.conn.probes_timeout);
    CHECK(admin_pub(f, "igw:t", "one", 3) == 1); /* still one subscription: delivered once */
    CHECK(run_until_count(f, &f->sl.msgs, NM + 3, 3000) && ev_is(&f->sl, n0, "one", 3));
    run_for(f, 50);
    CHECK(f->sl.n == n0 + 1);
}

/* CLIENT KILL TYPE pubsub: resubscribed, and that is reported first */
/* Needs test_subscribe_idle_probes (NM + 3 messages, one connect). */
static void test_subscribe_client_kill(fixture *f)
{
    if (!f->rsub)
        return;
    igw_redis_stats s1;
    int n0 = f->sl.n;
    CHECK(admin_int(f, "CLIENT KILL TYPE pubsub") == 1);
    CHECK(run_until_count(f, &f->sl.resubs, 2, 3000), "%s", igw_redis_last_error(f->rsub));
    CHECK(f->sl.n == n0 + 1 && !f->sl.ev[n0].data);
    CHECK(admin_pub(f, "igw:t", "killed", 6) == 1);
    CHECK(run_until_count(f, &f->sl.msgs, NM + 4, 3000) && ev_is(&f->sl, n0 + 1, "killed", 6));
    igw_redis_stats_get(f->rsub, &s1);
    CHECK(s1.conn.lost == 1 && s1.conn.connects == 2);
    printf("redis_test: subscriber after CLIENT KILL: %s\n", igw_redis_last_error(f->rsub));
}

/* the server restarts on the same port: resubscribed, messages again */
/* Needs test_subscribe_client_kill (NM + 4 messages, 2 resubscriptions). */
static void test_subscribe_server_restart(fixture *f)
{
    if (!f->rsub)
        return;
    igw_redis_stats s1;
    int n0 = f->sl.n;
    CHECK(system(f->stop_cmd) == 0, "%s", f->stop_cmd);
    CHECK(run_until_connected(f, f->rsub, false, 3000));
    igw_redis_stats_get(f->rsub, &s1);
    CHECK(!s1.conn.connected && !s1.conn.healthy);
    CHECK(system(f->start_cmd) == 0, "%s", f->start_cmd);
    redisFree(f->admin);
    f->admin = NULL;
    CHECK(run_until_count(f, &f->sl.resubs, 3, 5000), "%s", igw_redis_last_error(f->rsub));
    CHECK(f->sl.n == n0 + 1 && !f->sl.ev[n0].data);
    CHECK(admin_pub(f, "igw:t", "restarted", 9) == 1);
    CHECK(run_until_count(f, &f->sl.msgs, NM + 5, 3000) && ev_is(&f->sl, n0 + 1, "restarted", 9));
}

/* a frozen server (SIGSTOP) is noticed within the probe interval + timeout; back after SIGCONT */
/* Needs test_subscribe_server_restart (NM + 5 messages, 3 resubscriptions). */
static void test_subscribe_frozen_server(fixture *f)
{
    if (!f->rsub)
        return;
    char err[256] = "";
    igw_redis_stats s0, s1;
    int64_t t0;
    int n0;
    pid_t pid = server_pid(f);
    CHECK(pid > 0);
    if (pid > 0) {
        n0 = f->sl.n;
        igw_redis_stats_get(f->rsub, &s0);
        h2o_evloop_run(f->loop, 0);
        CHECK(kill(pid, SIGSTOP) == 0);
        t0 = igw_clock_ms();
        bool noticed = run_until_connected(f, f->rsub, false, 3000);
        int64_t waited = igw_clock_ms() - t0;
        igw_redis_stats_get(f->rsub, &s1);
        bool healthy = s1.conn.healthy;
        char why[300];
        snprintf(why, sizeof why, "%s", igw_redis_last_error(f->rsub));
        /* Attempts now: TCP accepted by the kernel, SUBSCRIBE never
         * answered. One more subscriber is destroyed in that state. */
        static sublog sl3;
        igw_redis *rz = igw_redis_subscribe_create(f->loop, "127.0.0.1", f->port, 500, "igw:t", sub_cb, &sl3, err,
                                                      sizeof err);
        CHECK(rz != NULL, "%s", err);
        run_for(f, 200);
        igw_redis_stats s2 = {0};
        if (rz) {
            igw_redis_stats_get(rz, &s2);
            igw_redis_destroy(rz);
        }
        run_for(f, 400);
        bool still_down = !igw_redis_connected(f->rsub);
        igw_redis_stats_get(f->rsub, &s1);
        CHECK(kill(pid, SIGCONT) == 0);
        CHECK(noticed && waited >= 450 && waited < 1300, "after %lld ms", (long long)waited);
        CHECK(!healthy && still_down && strcmp(why, "a probe timed out after 500 ms") == 0, "'%s'", why);
        CHECK(s2.conn.connects == 0 && s2.conn.connect_failures == 0 && sl3.n == 0 && sl3.bad == 0);
        CHECK(s1.conn.lost == s0.conn.lost + 1 && s1.conn.probes_timeout >= s0.conn.probes_timeout + 1 &&
                  s1.conn.connect_failures > s0.conn.connect_failures,
              "lost %llu, probe timeouts %llu, connect failures %llu", (unsigned long long)s1.conn.lost,
              (unsigned long long)s1.conn.probes_timeout, (unsigned long long)s1.conn.connect_failures);
        CHECK(f->sl.n == n0);
        printf("redis_test: subscriber, server frozen: noticed after %lld ms (%s), then %s\n",
               (long long)waited, why, igw_redis_last_error(f->rsub));
        CHECK(run_until_count(f, &f->sl.resubs, 4, 5000), "%s", igw_redis_last_error(f->rsub));
        CHECK(f->sl.n == n0 + 1 && !f->sl.ev[n0].data);
        CHECK(admin_pub(f, "igw:t", "thawed", 6) == 1);
        CHECK(run_until_count(f, &f->sl.msgs, NM + 6, 3000) && ev_is(&f->sl, n0 + 1, "thawed", 6));
    }
}

/* nothing bad was delivered to the subscriber; destroyed connected */
/* Needs the subscriber cases before. */
static void test_subscribe_destroy_connected(fixture *f)
{
    if (!f->rsub)
        return;
    CHECK(f->sl.bad == 0);
    igw_redis_destroy(f->rsub); /* connected */
    f->rsub = NULL;
    sublog_free(&f->sl);
}

/* a subscriber destroyed while connecting, or while backing off: no callback */
static void test_subscribe_destroy_connecting(fixture *f)
{
    if (!f->stop_cmd || !f->start_cmd)
        return;
    char err[256] = "";
    igw_redis_stats s1;
    static sublog sl2;
    igw_redis *rc =
        igw_redis_subscribe_create(f->loop, "127.0.0.1", f->port, 500, "igw:t", sub_cb, &sl2, err, sizeof err);
    CHECK(rc != NULL, "%s", err);
    igw_redis_destroy(rc);
    igw_redis *rb = igw_redis_subscribe_create(f->loop, "127.0.0.1", 1, 500, "igw:t", sub_cb, &sl2, err, sizeof err);
    CHECK(rb != NULL, "%s", err);
    if (rb) {
        run_for(f, 100);
        igw_redis_stats_get(rb, &s1);
        CHECK(s1.conn.connect_failures >= 1 && !igw_redis_connected(rb));
        igw_redis_destroy(rb);
    }
    run_for(f, 50);
    CHECK(sl2.n == 0 && sl2.bad == 0);
}

/* every descriptor opened since the start is closed */
static void test_no_descriptor_leaked(fixture *f)
{
    h2o_evloop_run(f->loop, 0); /* h2o frees closed sockets on the next turn */
    admin_ok(f);
    CHECK(count_fds() == f->fds0, "%d descriptors open, %d at the start", count_fds(), f->fds0);
}

/* In this order: a case needs what the ones before it left (it says which). */
static const struct {
    const char *name;
    void (*fn)(fixture *);
} cases[] = {
    CHECK_CASE(test_create_refuses_bad_settings),
    CHECK_CASE(test_buffered_while_connecting),
    CHECK_CASE(test_pipelined_set_get),
    CHECK_CASE(test_binary_safe),
    CHECK_CASE(test_error_reply_own_callback),
    CHECK_CASE(test_refused_commands_never_call_back),
    CHECK_CASE(test_callback_submits_next),
    CHECK_CASE(test_large_values_both_ways),
    CHECK_CASE(test_client_kill_fails_in_flight),
    CHECK_CASE(test_server_stop_and_back),
    CHECK_CASE(test_unix_socket),
    CHECK_CASE(test_command_timeout_drops_connection),
    CHECK_CASE(test_destroy_in_flight),
    CHECK_CASE(test_nothing_listening_backoff),
    CHECK_CASE(test_connect_deadline_full_backlog),
    CHECK_CASE(test_subscribe_refusals_and_connect),
    CHECK_CASE(test_subscribe_messages_in_order),
    CHECK_CASE(test_subscribe_oversize_dropped),
    CHECK_CASE(test_subscribe_idle_probes),
    CHECK_CASE(test_subscribe_client_kill),
    CHECK_CASE(test_subscribe_server_restart),
    CHECK_CASE(test_subscribe_frozen_server),
    CHECK_CASE(test_subscribe_destroy_connected),
    CHECK_CASE(test_subscribe_destroy_connecting),
    CHECK_CASE(test_no_descriptor_leaked),
};

int main(int argc, char **argv)
{
    fixture f = {0};
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: redis_test PORT [UNIX_SOCKET]\n");
        return 2;
    }
    f.port = (unsigned)atoi(argv[1]);
    f.unix_path = argc > 2 ? argv[2] : NULL;
    f.stop_cmd = getenv("IGW_REDISTEST_STOP"), f.start_cmd = getenv("IGW_REDISTEST_START");
    signal(SIGPIPE, SIG_IGN);
    f.loop = h2o_evloop_create();
    if (!admin_ok(&f)) {
        fprintf(stderr, "redis_test: admin connection: %s\n", f.admin ? f.admin->errstr : "out of memory");
        return 1;
    }
    admin_int(&f, "DEL rt:chain rt:es");
    f.fds0 = count_fds();

    char err[256] = "";
    f.r = igw_redis_create(f.loop, "localhost", f.port, 5000, err, sizeof err);
    CHECK(f.r != NULL, "%s", err);
    if (!f.r)
        return 1;

    CHECK_RUN(cases, &f);

    h2o_evloop_destroy(f.loop);
    if (f.admin)
        redisFree(f.admin);
    return check_summary("redis_test");
}
