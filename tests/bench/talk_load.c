/* talk_load.c - igw-talkload: /talk/audio-access at a fixed rate, open loop,
 * where every set must be a real change (make bench-talk).
 *
 *   igw-talkload -m http  -u http://HOST:PORT/PATH [-H 'Name: value']...
 *   igw-talkload -m redis -R HOST:PORT -S SHA -E ENTERPRISE -I CALLER
 *                -t CALLID:USER [-t ...] [-o set|read] [-r RATE] [-s SECONDS] [-W WARMUP] [-l FILE]
 *
 * One lane per -t (a live call's member as the target), each with its own
 * connection and strictly sequential: a set names the target's current
 * audioRevision as expectedRevision and the opposite of its publishAllowed,
 * so each one raises the revision by one and the next one of the lane can
 * only be built when the answer is in. Request i is due at start + i / RATE
 * and belongs to lane i % lanes; it goes out when due and when its lane is
 * idle, and its latency counts from its due time (no coordinated omission:
 * time spent waiting behind the lane's previous request is charged).
 * Requests due in the first WARMUP seconds are sent but not counted.
 *
 * http: the route itself (the caller is the -H Authorization's user);
 * redis: call.lua's own operation by EVALSHA on that server, as igwd's
 * stand-in sends it (same four keys, same arguments: the enterprise, the
 * caller, the target, allowed, expectedRevision, memberEpoch, the callId),
 * on plain sockets with hiredis's formatter and reader: the transaction
 * without igw around it.
 * Before the clock, each lane reads its target (the same operation, read)
 * for the revision, permission and memberEpoch it starts from.
 *
 * An answer is ok when it is the operation's success: http 200 with the
 * record (a set's record with the revision one up and the new permission);
 * redis {"OK", allowed, revision, epoch, expiresAt[, changed=1]}. A set that
 * is not ok leaves its lane's revision unknown: the lane stops and its
 * remaining requests count as errors (the first bad answer goes to stderr).
 * One JSON line on stdout, as igw-loadgen's:
 *   {"sent":n,"ok":n,"errors":n,"per_s":n,"p50_ms":n,"p90_ms":n,
 *    "p99_ms":n,"max_ms":n,"cpu_s":n}
 * (counted requests only; per_s = ok / the counted span.) With -l FILE, one
 * line per counted answer: its due time and latency (ms).
 * Exit status 0 when every request was ok, 1 when any was not, 2 on bad
 * arguments or a connection that cannot be made. */
#define _GNU_SOURCE
#include "httpload.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#define MAX_LANES 256
#define ID_MAX 96 /* a callId's bytes (the route's cap) */
#define RBUF 16384

typedef struct lane {
    int fd;
    char call_id[ID_MAX + 1], target[24];
    int64_t revision, epoch; /* the target's, as last answered */
    bool allowed;
    bool busy, dead;         /* a request is out; a set failed (the revision is unknown) */
    uint64_t k;              /* requests of this lane sent so far */
    int64_t due;             /* the one out: its due time */
    char *wbuf;
    size_t wlen;
    char rbuf[RBUF];
    size_t rlen;
    redisReader *reader;     /* redis */
} lane;

static struct {
    bool redis, set;
    igw_httpload_target t;
    const char *sha, *ent, *caller, *log;
    double rate, seconds, warmup;
} opt = {.set = true, .rate = 1000, .seconds = 10, .warmup = 2};

static lane lanes[MAX_LANES];
static int nlanes, epfd;
static igw_httpload_stats st; /* counted requests: latencies, ok, not ok, sent */
static size_t nerr_warm;                /* warm-up requests not ok: they fail the run too */
static int64_t t0, t_count; /* the clock's start; the first counted due time */
static bool reported;       /* one bad answer printed */

static void die(const char *what)
{
    fprintf(stderr, "igw-talkload: %s\n", what);
    exit(2);
}

/* -t CALLID:USER: the user id is what follows the last colon. */
static int add_lane(const char *arg)
{
    const char *colon = strrchr(arg, ':');
    if (nlanes == MAX_LANES || !colon || colon == arg || (size_t)(colon - arg) > ID_MAX || !colon[1] ||
        strlen(colon + 1) >= sizeof lanes[0].target || strspn(colon + 1, "0123456789") != strlen(colon + 1))
        return -1;
    lane *l = &lanes[nlanes++];
    snprintf(l->call_id, sizeof l->call_id, "%.*s", (int)(colon - arg), arg);
    snprintf(l->target, sizeof l->target, "%s", colon + 1);
    l->fd = -1;
    return 0;
}

/* ---- requests ------------------------------------------------------------------------ */

/* The lane's next request (set or read, as `set` says) in l->wbuf. */
static void build(lane *l, bool set)
{
    free(l->wbuf);
    l->wbuf = NULL;
    if (opt.redis) {
        char keys[4][ID_MAX + 32], allowed[2], rev[24], epoch[24];
        static const char *const suffix[4] = {"meta", "live", "mem", "rcpt"};
        for (int i = 0; i < 4; i++)
            snprintf(keys[i], sizeof keys[i], "igw:{call:%s}:%s", l->call_id, suffix[i]);
        snprintf(allowed, sizeof allowed, "%d", l->allowed ? 0 : 1);
        snprintf(rev, sizeof rev, "%" PRId64, l->revision);
        snprintf(epoch, sizeof epoch, "%" PRId64, l->epoch);
        const char *set_argv[] = {"EVALSHA", opt.sha, "4", keys[0], keys[1], keys[2], keys[3], "audio_set",
                                  opt.ent, opt.caller, l->target, allowed, rev, epoch, l->call_id};
        const char *read_argv[] = {"EVALSHA", opt.sha, "4", keys[0], keys[1], keys[2], keys[3], "audio_read",
                                   opt.ent, opt.caller, l->target, l->call_id};
        int n = set ? redisFormatCommandArgv(&l->wbuf, 15, set_argv, NULL)
                    : redisFormatCommandArgv(&l->wbuf, 12, read_argv, NULL);
        if (n < 0)
            die("out of memory");
        l->wlen = (size_t)n;
        return;
    }
    char body[512];
    int bl = set ? snprintf(body, sizeof body,
                            "{\"operation\":\"set\",\"callId\":\"%s\",\"targetUserID\":\"%s\",\"allowed\":%s,"
                            "\"expectedRevision\":%" PRId64 "}",
                            l->call_id, l->target, l->allowed ? "false" : "true", l->revision)
                 : snprintf(body, sizeof body, "{\"operation\":\"read\",\"callId\":\"%s\",\"targetUserID\":\"%s\"}",
                            l->call_id, l->target);
    if (bl < 0 || (size_t)bl >= sizeof body)
        die("a callId or target too long for the body");
    if (!(l->wbuf = igw_httpload_post(&opt.t, "application/json", body, (size_t)bl, &l->wlen)))
        die("out of memory");
}

/* Writes the whole request (small; the socket's buffer is empty). */
static int send_req(lane *l)
{
    return igw_httpload_write_all(l->fd, l->wbuf, l->wlen);
}

/* A request of l (due at `due`) was not ok. */
static void bad(const lane *l, int64_t due, const char *what, const char *answer, size_t len)
{
    if (due >= t_count)
        st.nerr++;
    else
        nerr_warm++;
    if (reported)
        return;
    reported = true;
    fprintf(stderr, "igw-talkload: call %s target %s: %s: %.*s\n", l->call_id, l->target, what,
            (int)(len > 400 ? 400 : len), answer ? answer : "");
}

/* An integer after `"key":` in a JSON text, or -1. */
static int64_t json_int(const char *s, size_t n, const char *key)
{
    char k[64];
    int kl = snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = memmem(s, n, k, (size_t)kl);
    if (!p)
        return -1;
    p += kl;
    if (p >= s + n || *p < '0' || *p > '9')
        return -1;
    int64_t v = 0;
    for (; p < s + n && *p >= '0' && *p <= '9' && v < INT64_MAX / 10 - 9; p++)
        v = v * 10 + (*p - '0');
    return v;
}

/* The record in an http answer's body: 0 and the lane updated, or -1. */
static int take_http(lane *l, bool set, const char *body, size_t n)
{
    int64_t rev = json_int(body, n, "audioRevision"), epoch = json_int(body, n, "memberEpoch");
    bool t = memmem(body, n, "\"publishAllowed\":true", 21) != NULL;
    bool f = memmem(body, n, "\"publishAllowed\":false", 22) != NULL;
    if (rev < 1 || epoch < 1 || t == f)
        return -1;
    if (set && (rev != l->revision + 1 || t == l->allowed))
        return -1; /* not the change it asked for */
    l->revision = rev;
    l->epoch = epoch;
    l->allowed = t;
    return 0;
}

/* call.lua's answer {"OK", allowed, revision, epoch, expiresAt[, changed]}. */
static int take_redis(lane *l, bool set, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < (set ? 6u : 5u) || r->element[0]->type != REDIS_REPLY_STRING ||
        strcmp(r->element[0]->str, "OK") != 0)
        return -1;
    for (size_t i = 1; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
    int64_t allowed = r->element[1]->integer, rev = r->element[2]->integer, epoch = r->element[3]->integer;
    if (rev < 1 || epoch < 1 || (allowed != 0 && allowed != 1))
        return -1;
    if (set && (rev != l->revision + 1 || (allowed == 1) == l->allowed || r->element[5]->integer != 1))
        return -1;
    l->revision = rev;
    l->epoch = epoch;
    l->allowed = allowed == 1;
    return 0;
}

/* Reads what the lane's socket has. 1: an answer is complete (*ok says
 * whether it was the success it should be); 0: not yet; -1: the
 * connection is gone or the answer unreadable. */
static int on_readable(lane *l, bool set, bool *ok)
{
    if (opt.redis) {
        void *rep = NULL;
        if (redisReaderGetReply(l->reader, &rep) != REDIS_OK)
            return -1;
        if (!rep) {
            char buf[RBUF];
            ssize_t n = read(l->fd, buf, sizeof buf);
            if (n <= 0)
                return n < 0 && errno == EINTR ? 0 : -1;
            if (redisReaderFeed(l->reader, buf, (size_t)n) != REDIS_OK ||
                redisReaderGetReply(l->reader, &rep) != REDIS_OK)
                return -1;
            if (!rep)
                return 0;
        }
        redisReply *r = rep;
        *ok = take_redis(l, set, r) == 0;
        if (!*ok) {
            char what[256] = "";
            if (r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
                snprintf(what, sizeof what, "%s", r->str);
            else if (r->type == REDIS_REPLY_ARRAY && r->elements && r->element[0]->type == REDIS_REPLY_STRING)
                snprintf(what, sizeof what, "%s (%zu elements)", r->element[0]->str, r->elements);
            bad(l, l->due, "redis answered", what, strlen(what));
        }
        freeReplyObject(r);
        return 1;
    }
    size_t head, clen;
    int rc = igw_httpload_read(l->fd, l->rbuf, RBUF, &l->rlen, &head, &clen, true); /* igwd always sends a Content-Length */
    if (rc <= 0)
        return rc;
    if (l->rlen > head + clen)
        return -1; /* an answer nobody asked for */
    *ok = !strncmp(l->rbuf, "HTTP/1.1 200 ", 13) && take_http(l, set, l->rbuf + head, clen) == 0;
    if (!*ok)
        bad(l, l->due, "igwd answered", l->rbuf, l->rlen);
    l->rlen = 0;
    return 1;
}

/* Before the clock: each lane's connection and its target's record. */
static void lane_open(lane *l)
{
    const char *why;
    if ((l->fd = igw_httpload_dial(&opt.t, &why)) < 0)
        die(why);
    if (opt.redis && !(l->reader = redisReaderCreate()))
        die("out of memory");
    build(l, false);
    if (send_req(l) != 0)
        die("cannot send the first read");
    bool ok = false;
    int rc;
    while ((rc = on_readable(l, false, &ok)) == 0)
        ;
    if (rc < 0 || !ok) {
        fprintf(stderr, "igw-talkload: call %s target %s: the first read failed\n", l->call_id, l->target);
        exit(2);
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, l->fd, &ev) != 0)
        die("epoll_ctl");
}

/* ---- the schedule -------------------------------------------------------------------- */

static int64_t due_of(const lane *l, uint64_t k)
{
    return igw_httpload_due(t0, k * (uint64_t)nlanes + (uint64_t)(l - lanes), opt.rate);
}

static void answered(lane *l, bool ok)
{
    l->busy = false;
    if (!ok && opt.set)
        l->dead = true;
    if (!ok || l->due < t_count)
        return; /* not ok: counted by bad(); warm-up: not counted */
    igw_httpload_stats_add(&st, (double)(l->due - t_count) / 1e6, (double)(igw_httpload_now_ns() - l->due) / 1e6);
}

int main(int argc, char **argv)
{
    int o, tfd;
    const char *mode = NULL, *why;
    while ((o = getopt(argc, argv, "m:u:H:R:S:E:I:t:o:r:s:W:l:")) != -1) {
        switch (o) {
        case 'm': mode = optarg; break;
        case 'u':
        case 'H':
            if ((why = igw_httpload_option(&opt.t, o, optarg)))
                die(why);
            break;
        case 'R':
            if (igw_httpload_resolve(&opt.t, optarg, NULL))
                die("bad -R (host:port)");
            break;
        case 'S': opt.sha = optarg; break;
        case 'E': opt.ent = optarg; break;
        case 'I': opt.caller = optarg; break;
        case 't':
            if (add_lane(optarg))
                die("bad -t (CALLID:USER; at most 256)");
            break;
        case 'o':
            if (strcmp(optarg, "set") && strcmp(optarg, "read"))
                die("-o set|read");
            opt.set = !strcmp(optarg, "set");
            break;
        case 'r': opt.rate = atof(optarg); break;
        case 's': opt.seconds = atof(optarg); break;
        case 'W': opt.warmup = atof(optarg); break;
        case 'l': opt.log = optarg; break;
        default:
            die("usage: igw-talkload -m http -u URL [-H header]... | -m redis -R HOST:PORT -S SHA -E ENT -I CALLER; "
                "-t CALLID:USER... [-o set|read] [-r RATE] [-s SECONDS] [-W WARMUP] [-l FILE]");
        }
    }
    opt.redis = mode && !strcmp(mode, "redis");
    if (!mode || (!opt.redis && strcmp(mode, "http")) || !opt.t.addrlen || !nlanes ||
        (opt.redis && (!opt.sha || !opt.ent || !opt.caller)) || (!opt.redis && opt.sha))
        die("need -m http with -u, or -m redis with -R -S -E -I; and at least one -t");
    if (!(opt.rate > 0) || !(opt.seconds > 0) || opt.warmup < 0 || opt.rate * (opt.seconds + opt.warmup) > IGW_HTTPLOAD_MAX_REQUESTS)
        die("0 < RATE, 0 < SECONDS, 0 <= WARMUP, RATE x (SECONDS + WARMUP) <= 10^7");
    FILE *log_f;
    if ((why = igw_httpload_open(&st, opt.log, &log_f, &epfd, &tfd)))
        die(why);
    for (int i = 0; i < nlanes; i++)
        lane_open(&lanes[i]);

    struct rusage ru0, ru1;
    const uint64_t total = (uint64_t)(opt.rate * (opt.seconds + opt.warmup));
    const uint64_t per_lane = (total + (uint64_t)nlanes - 1) / (uint64_t)nlanes;
    t0 = igw_httpload_now_ns();
    t_count = t0 + (int64_t)(opt.warmup * 1e9);
    const int64_t stop = t0 + (int64_t)((opt.seconds + opt.warmup) * 1e9);
    bool counting = false;
    int64_t last = t_count; /* the last counted answer */
    for (;;) {
        int64_t t = igw_httpload_now_ns(), wake = INT64_MAX;
        if (!counting && t >= t_count) {
            getrusage(RUSAGE_SELF, &ru0);
            counting = true;
        }
        bool busy = false;
        for (int i = 0; i < nlanes; i++) {
            lane *l = &lanes[i];
            /* A lane's requests past the total (the last round) are not its. */
            while (!l->dead && !l->busy && l->k < per_lane && l->k * (uint64_t)nlanes + (uint64_t)i < total) {
                int64_t due = due_of(l, l->k);
                if (due > t) {
                    wake = due < wake ? due : wake;
                    break;
                }
                build(l, opt.set);
                l->due = due;
                l->busy = true;
                l->k++;
                st.nsent += due >= t_count;
                if (send_req(l) != 0) {
                    bad(l, due, "the connection broke", NULL, 0);
                    l->busy = false;
                    l->dead = true;
                }
            }
            busy |= l->busy;
        }
        if (!busy && wake == INT64_MAX)
            break; /* every lane done or dead */
        if (t > stop + (int64_t)30e9)
            break; /* answers 30 s overdue: errors below */
        if (wake == INT64_MAX)
            wake = t + 100000000;
        if (igw_httpload_timer_arm(tfd, wake, t) != 0)
            die("timerfd_settime");
        struct epoll_event evs[64];
        int n = epoll_wait(epfd, evs, 64, -1);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            lane *l = evs[i].data.ptr;
            if (!l) {
                if (igw_httpload_timer_drain(tfd) != 0)
                    die("timerfd read");
                continue;
            }
            bool ok = false;
            int rc = on_readable(l, opt.set, &ok);
            if (rc == 0)
                continue;
            if (rc < 0) {
                if (l->busy)
                    bad(l, l->due, "the connection broke", NULL, 0);
                epoll_ctl(epfd, EPOLL_CTL_DEL, l->fd, NULL);
                l->busy = false;
                l->dead = true;
                continue;
            }
            if (!l->busy) {
                bad(l, t_count, "an answer nobody asked for", NULL, 0);
                l->dead = true;
                continue;
            }
            answered(l, ok);
            if (ok && l->due >= t_count)
                last = igw_httpload_now_ns();
        }
    }
    getrusage(RUSAGE_SELF, &ru1);
    if (!counting)
        ru0 = ru1;
    /* Counted requests never sent (a dead lane) or never answered: errors. */
    igw_httpload_count_unanswered(&st, t0, t_count, total, opt.rate);
    double span = (double)(last - t_count) / 1e9;
    if (span < opt.seconds)
        span = opt.seconds;
    char extra[32];
    snprintf(extra, sizeof extra, ",\"lanes\":%d", nlanes);
    if (igw_httpload_report(&st, log_f, span, igw_httpload_cpu_s(&ru0, &ru1), extra) != 0)
        die("-l: write failed");
    for (int i = 0; i < nlanes; i++) {
        if (lanes[i].fd >= 0)
            close(lanes[i].fd);
        free(lanes[i].wbuf);
        if (lanes[i].reader)
            redisReaderFree(lanes[i].reader);
    }
    igw_httpload_stats_free(&st);
    close(tfd);
    close(epfd);
    if (nerr_warm)
        fprintf(stderr, "igw-talkload: %zu warm-up requests were not ok\n", nerr_warm);
    return st.nerr || nerr_warm ? 1 : 0;
}
