/* rec_load.c - igw-recload: /recordings/query at a fixed rate, open loop,
 * each request a random camera and window, each answer checked
 * (make bench-recordings).
 *
 *   igw-recload -u http://HOST:PORT/PATH [-H 'Name: value']... -e ENDPOINT -f TARGETS
 *               [-S SEED] [-N NARROW%] [-L LIMIT] [-r RATE] [-s SECONDS] [-W WARMUP] [-c CONNS] [-l FILE]
 *   igw-recload -f TARGETS -p COUNT [-S SEED] [-N NARROW%] [-L LIMIT]
 *
 * TARGETS: one camera a line, "productID deviceName cameraId first last"
 * (its catalog's first and last start times, ms). Request i takes the
 * i-th draw of a PRNG seeded with SEED: a camera, then a window of 24 h
 * starting anywhere from 12 h before its first recording to its last one
 * (full windows, and some half empty), or, NARROW% of the time, a window
 * of 1 to 15 minutes inside its history. -p COUNT prints the first COUNT
 * draws ("productID deviceName cameraId startMs endMs limit") and exits:
 * the SQL reference replays the very parameters the load sends.
 *
 * Open loop: request i is due at start + i / RATE; it goes out on an idle
 * keep-alive connection, a new one (up to CONNS), or waits for one; its
 * latency counts from its due time. Requests due in the first WARMUP
 * seconds are sent but not counted.
 *
 * An answer is ok when it is HTTP 200 with igwd's envelope (code 200) and
 * data {list, hasMore} where list has at most LIMIT entries, each with
 * exactly the RecordingEntry fields, the requested camera, a start time in
 * the window and in order, and hasMore only with a full list. The first bad
 * answer goes to stderr.
 * One JSON line on stdout, igw-loadgen's with the answers' shape added:
 *   {"sent":n,"ok":n,"errors":n,"per_s":n,"p50_ms":n,"p90_ms":n,"p99_ms":n,
 *    "max_ms":n,"cpu_s":n,"rows":n,"empty":n,"has_more":n}
 * (counted requests only). Exit status 0 when every request (warm-up
 * included) was ok, 1 when any was not, 2 on bad arguments or a
 * connection that cannot be made. */
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

#include "arena.h"
#include "json.h"

#define MAX_CONNS 1024
#define MAX_TARGETS 100000
#define ID_MAX 128 /* productID, deviceName, cameraId: longer than the schema allows */
#define RBUF 65536 /* 32 entries are about 8 KiB */
#define DAY_MS INT64_C(86400000)

typedef struct target {
    char product[ID_MAX + 1], device[ID_MAX + 1], camera[ID_MAX + 1];
    int64_t first, last;
} target;

typedef struct params {
    const target *t;
    int64_t start, end;
} params;

typedef struct conn {
    int fd;
    bool busy;
    int64_t due;
    params q; /* the request out */
    size_t rlen;
    char rbuf[RBUF];
} conn;

static struct {
    igw_httpload_target t;
    const char *endpoint, *targets, *log;
    uint64_t seed;
    int narrow, limit, conns;
    long print;
    double rate, seconds, warmup;
} opt = {.seed = 1, .narrow = 20, .limit = 32, .conns = 64, .rate = 1000, .seconds = 10, .warmup = 2};

static target *tg;
static size_t ntg;
static uint64_t rng;
static conn *pool[MAX_CONNS];
static int npool, epfd;
static igw_httpload_stats st;
static size_t nerr_warm, rows, empty, has_more;
static int64_t t_count;
static bool reported;

static void die(const char *what)
{
    fprintf(stderr, "igw-recload: %s\n", what);
    exit(2);
}

/* splitmix64: small, seedable, the same sequence everywhere. */
static uint64_t next_u64(void)
{
    uint64_t z = (rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (hi - lo far below 2^63: the modulo bias is nil). */
static int64_t uniform(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1));
}

static params draw(void)
{
    params q = {.t = &tg[next_u64() % ntg]};
    if ((int)(next_u64() % 100) < opt.narrow) {
        int64_t len = uniform(60000, 15 * 60000);
        q.start = uniform(q.t->first, q.t->last);
        q.end = q.start + len;
    } else {
        q.start = uniform(q.t->first - DAY_MS / 2 > 0 ? q.t->first - DAY_MS / 2 : 0, q.t->last);
        q.end = q.start + DAY_MS;
    }
    return q;
}

static void load_targets(void)
{
    FILE *f = fopen(opt.targets, "r");
    if (!f)
        die("-f: cannot open the file");
    if (!(tg = calloc(MAX_TARGETS, sizeof *tg)))
        die("out of memory");
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (ntg == MAX_TARGETS)
            die("-f: more than 100000 cameras");
        target *t = &tg[ntg];
        /* %128s: ID_MAX */
        if (sscanf(line, "%128s %128s %128s %" SCNd64 " %" SCNd64, t->product, t->device, t->camera, &t->first,
                   &t->last) != 5 ||
            t->first < 0 || t->last < t->first || t->last > INT64_C(9007199254740991) - DAY_MS)
            die("-f: a line is not \"productID deviceName cameraId first last\"");
        ntg++;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad || !ntg)
        die("-f: unreadable or empty");
}

/* ---- checking an answer --------------------------------------------------------------- */

static bool key_is(igw_str k, const char *s)
{
    return k.len == strlen(s) && !memcmp(k.ptr, s, k.len);
}

static bool str_is(igw_str v, const char *s)
{
    return v.len == strlen(s) && !memcmp(v.ptr, s, v.len);
}

/* One RecordingEntry: exactly its fields, the camera asked for, a start in
 * the window not before *prev. NULL, or what is wrong. */
static const char *check_entry(igw_json *j, const params *q, int64_t *prev)
{
    enum { ID = 1, CAM = 2, START = 4, END = 8, DUR = 16, AVAIL = 32, VIDEO = 64, AUDIO = 128, VER = 256 };
    unsigned seen = 0, bit;
    int64_t start = 0, end = 0, dur, ver;
    igw_str k, s;
    bool b;
    if (igw_json_object_begin(j))
        return "an entry is not an object";
    int rc;
    while ((rc = igw_json_object_next(j, &k)) == 1) {
        if (key_is(k, "recordingId")) {
            bit = ID;
            if (igw_json_string(j, &s) || !s.len)
                return "recordingId";
        } else if (key_is(k, "cameraId")) {
            bit = CAM;
            if (igw_json_string(j, &s) || !str_is(s, q->t->camera))
                return "cameraId is not the camera asked for";
        } else if (key_is(k, "startTimeMs")) {
            bit = START;
            if (igw_json_int(j, &start, q->start, q->end - 1))
                return "startTimeMs outside the window";
        } else if (key_is(k, "endTimeMs")) {
            bit = END;
            if (igw_json_int(j, &end, 0, IGW_JSON_SAFE_MAX))
                return "endTimeMs";
        } else if (key_is(k, "durationMs")) {
            bit = DUR;
            if (igw_json_int(j, &dur, 0, IGW_JSON_SAFE_MAX))
                return "durationMs";
        } else if (key_is(k, "available")) {
            bit = AVAIL;
            if (igw_json_bool(j, &b))
                return "available";
        } else if (key_is(k, "videoCodec") || key_is(k, "audioCodec")) {
            bit = k.ptr[0] == 'v' ? VIDEO : AUDIO;
            if (igw_json_string(j, &s) || !s.len)
                return "a codec";
        } else if (key_is(k, "recordingVersion")) {
            bit = VER;
            if (igw_json_int(j, &ver, 1, IGW_JSON_SAFE_MAX))
                return "recordingVersion";
        } else {
            return "an entry has a field RecordingEntry does not";
        }
        if (seen & bit)
            return "a duplicate field";
        seen |= bit;
    }
    if (rc < 0 || (seen | AUDIO) != 511u)
        return "an entry lacks a field";
    if (end < start)
        return "endTimeMs before startTimeMs";
    if (start < *prev)
        return "entries out of start order";
    *prev = start;
    return NULL;
}

/* The body of a 200: {"code":200, ..., "data":{"list":[...],"hasMore":b}}.
 * NULL, or what is wrong; *n and *more as the answer says. */
static const char *check_body(const char *body, size_t len, const params *q, unsigned *n, bool *more)
{
    igw_arena a;
    igw_arena_init(&a, 1 << 20);
    igw_json j;
    igw_json_init(&j, body, len, &a, 8);
    const char *why = NULL;
    igw_str k, raw;
    int64_t code = 0;
    bool has_data = false, has_list = false, has_more_key = false;
    int rc = 0;
    *n = 0;
    *more = false;
    if (igw_json_object_begin(&j)) {
        why = "not a JSON object";
        goto out;
    }
    while (!why && (rc = igw_json_object_next(&j, &k)) == 1) {
        if (key_is(k, "code")) {
            if (igw_json_int(&j, &code, 0, IGW_JSON_SAFE_MAX) || code != 200)
                why = "code is not 200";
        } else if (key_is(k, "data")) {
            has_data = true;
            if (igw_json_object_begin(&j)) {
                why = "data is not an object";
                break;
            }
            while (!why && (rc = igw_json_object_next(&j, &k)) == 1) {
                if (key_is(k, "list") && !has_list) {
                    has_list = true;
                    int64_t prev = 0;
                    if (igw_json_array_begin(&j)) {
                        why = "list is not an array";
                        break;
                    }
                    while (!why && (rc = igw_json_array_next(&j)) == 1)
                        if (++*n > (unsigned)opt.limit)
                            why = "more entries than the limit";
                        else
                            why = check_entry(&j, q, &prev);
                    if (!why && rc < 0)
                        why = "list";
                } else if (key_is(k, "hasMore") && !has_more_key) {
                    has_more_key = true;
                    if (igw_json_bool(&j, more))
                        why = "hasMore is not a boolean";
                } else {
                    why = "data has a field RecordingsData does not";
                }
            }
            if (!why && rc < 0)
                why = "data";
        } else if (igw_json_value(&j, IGW_JSON_STRICT, 4, len, &raw)) {
            why = "the envelope";
        }
    }
    if (!why && (rc < 0 || igw_json_finish(&j)))
        why = "not well-formed JSON";
    if (!why && (!code || !has_data || !has_list || !has_more_key))
        why = "code, data, list or hasMore missing";
    if (!why && *more && *n != (unsigned)opt.limit)
        why = "hasMore with a list shorter than the limit";
out:
    igw_arena_free(&a);
    return why;
}

/* ---- connections ---------------------------------------------------------------------- */

static conn *open_conn(void)
{
    if (npool == MAX_CONNS || npool >= opt.conns)
        return NULL;
    const char *why;
    int fd = igw_httpload_dial(&opt.t, &why);
    if (fd < 0)
        die(why);
    conn *c = calloc(1, sizeof *c);
    if (!c)
        die("out of memory");
    c->fd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        die("epoll_ctl");
    pool[npool++] = c;
    return c;
}

static void bad(int64_t due, const char *what, const char *answer, size_t len)
{
    if (due >= t_count)
        st.nerr++;
    else
        nerr_warm++;
    if (reported)
        return;
    reported = true;
    fprintf(stderr, "igw-recload: %s: %.*s\n", what, (int)(len > 600 ? 600 : len), answer ? answer : "");
}

static int send_req(conn *c, int64_t due, params q)
{
    char body[1024];
    int bl = snprintf(body, sizeof body,
                      "{\"endpointId\":\"%s\",\"target\":{\"productID\":\"%s\",\"deviceName\":\"%s\"},"
                      "\"cameraId\":\"%s\",\"startTimeMs\":%" PRId64 ",\"endTimeMs\":%" PRId64 ",\"limit\":%d}",
                      opt.endpoint, q.t->product, q.t->device, q.t->camera, q.start, q.end, opt.limit);
    if (bl < 0 || (size_t)bl >= sizeof body)
        die("a request body too long");
    size_t wlen;
    char *w = igw_httpload_post(&opt.t, "application/json", body, (size_t)bl, &wlen);
    if (!w)
        die("out of memory");
    c->busy = true;
    c->due = due;
    c->q = q;
    c->rlen = 0;
    st.nsent += due >= t_count;
    int rc = igw_httpload_write_all(c->fd, w, wlen);
    free(w);
    return rc;
}

/* -1 when the connection is gone or out of step. */
static int on_readable(conn *c)
{
    size_t head, clen;
    int rc = igw_httpload_read(c->fd, c->rbuf, RBUF, &c->rlen, &head, &clen, true);
    if (rc <= 0)
        return rc;
    if (!c->busy || c->rlen != head + clen)
        return -1; /* an answer nobody asked for */
    c->busy = false;
    unsigned n;
    bool more;
    const char *why = strncmp(c->rbuf, "HTTP/1.1 200 ", 13) ? "not a 200"
                                                             : check_body(c->rbuf + head, clen, &c->q, &n, &more);
    if (why) {
        bad(c->due, why, c->rbuf, c->rlen);
    } else if (c->due >= t_count) {
        igw_httpload_stats_add(&st, (double)(c->due - t_count) / 1e6,
                               (double)(igw_httpload_now_ns() - c->due) / 1e6);
        rows += n;
        empty += n == 0;
        has_more += more;
    }
    c->rlen = 0;
    return 0;
}

static void close_conn(conn *c)
{
    if (c->busy)
        bad(c->due, "the connection broke", NULL, 0);
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    for (int i = 0; i < npool; i++)
        if (pool[i] == c) {
            pool[i] = pool[--npool];
            break;
        }
    free(c);
}

int main(int argc, char **argv)
{
    int o, tfd;
    const char *why;
    while ((o = getopt(argc, argv, "u:H:e:f:S:N:L:p:r:s:W:c:l:")) != -1) {
        switch (o) {
        case 'u':
        case 'H':
            if ((why = igw_httpload_option(&opt.t, o, optarg)))
                die(why);
            break;
        case 'e': opt.endpoint = optarg; break;
        case 'f': opt.targets = optarg; break;
        case 'S': opt.seed = strtoull(optarg, NULL, 10); break;
        case 'N': opt.narrow = atoi(optarg); break;
        case 'L': opt.limit = atoi(optarg); break;
        case 'p': opt.print = atol(optarg); break;
        case 'r': opt.rate = atof(optarg); break;
        case 's': opt.seconds = atof(optarg); break;
        case 'W': opt.warmup = atof(optarg); break;
        case 'c': opt.conns = atoi(optarg); break;
        case 'l': opt.log = optarg; break;
        default:
            die("usage: igw-recload -u URL [-H header]... -e ENDPOINT -f TARGETS [-S SEED] [-N NARROW%] [-L LIMIT] "
                "[-r RATE] [-s SECONDS] [-W WARMUP] [-c CONNS] [-l FILE] | -f TARGETS -p COUNT [-S SEED] [-N NARROW%] [-L LIMIT]");
        }
    }
    if (!opt.targets || opt.narrow < 0 || opt.narrow > 100 || opt.limit < 1 || opt.limit > 32 || opt.print < 0)
        die("need -f; 0 <= NARROW <= 100, 1 <= LIMIT <= 32");
    load_targets();
    rng = opt.seed;
    if (opt.print) {
        for (long i = 0; i < opt.print; i++) {
            params q = draw();
            printf("%s %s %s %" PRId64 " %" PRId64 " %d\n", q.t->product, q.t->device, q.t->camera, q.start, q.end,
                   opt.limit);
        }
        free(tg);
        return fflush(stdout) == 0 ? 0 : 2;
    }
    if (!opt.t.addrlen || !opt.endpoint || strlen(opt.endpoint) > ID_MAX || strpbrk(opt.endpoint, "\"\\"))
        die("need -u and -e (a plain endpoint id)");
    if (!(opt.rate > 0) || !(opt.seconds > 0) || opt.warmup < 0 || opt.conns < 1 || opt.conns > MAX_CONNS ||
        opt.rate * (opt.seconds + opt.warmup) > IGW_HTTPLOAD_MAX_REQUESTS)
        die("0 < RATE, 0 < SECONDS, 0 <= WARMUP, 1 <= CONNS <= 1024, RATE x (SECONDS + WARMUP) <= 10^7");
    FILE *log_f;
    if ((why = igw_httpload_open(&st, opt.log, &log_f, &epfd, &tfd)))
        die(why);
    /* Connections up front: a handshake is not the server's latency. */
    for (int i = 0; i < (opt.conns < 16 ? opt.conns : 16); i++)
        open_conn();

    struct rusage ru0, ru1;
    const int64_t t0 = igw_httpload_now_ns();
    t_count = t0 + (int64_t)(opt.warmup * 1e9);
    const int64_t stop = t0 + (int64_t)((opt.seconds + opt.warmup) * 1e9);
    const uint64_t total = (uint64_t)(opt.rate * (opt.seconds + opt.warmup));
    uint64_t next = 0;
    bool counting = false;
    for (;;) {
        int64_t t = igw_httpload_now_ns();
        if (!counting && t >= t_count) {
            getrusage(RUSAGE_SELF, &ru0);
            counting = true;
        }
        bool starved = false;
        while (next < total) {
            int64_t due = igw_httpload_due(t0, next, opt.rate);
            if (due > t)
                break;
            conn *c = NULL;
            for (int k = 0; k < npool && !c; k++)
                if (!pool[k]->busy)
                    c = pool[k];
            if (!c && !(c = open_conn())) {
                starved = true; /* it waits; its latency still counts from due */
                break;
            }
            if (send_req(c, due, draw()) != 0)
                close_conn(c);
            next++;
        }
        bool busy = false;
        for (int k = 0; k < npool; k++)
            busy |= pool[k]->busy;
        if (!busy && next >= total)
            break;
        if (t > stop + (int64_t)30e9)
            break; /* answers 30 s overdue: errors below */
        int64_t wake = next >= total || starved ? t + 100000000 : igw_httpload_due(t0, next, opt.rate);
        if (igw_httpload_timer_arm(tfd, wake, t) != 0)
            die("timerfd_settime");
        struct epoll_event evs[64];
        int n = epoll_wait(epfd, evs, 64, -1);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (!c) {
                if (igw_httpload_timer_drain(tfd) != 0)
                    die("timerfd read");
                continue;
            }
            if (on_readable(c) != 0)
                close_conn(c);
        }
    }
    getrusage(RUSAGE_SELF, &ru1);
    if (!counting)
        ru0 = ru1;
    for (int k = npool - 1; k >= 0; k--)
        close_conn(pool[k]); /* unanswered: errors */
    /* Counted requests never sent or never answered: errors too. */
    igw_httpload_count_unanswered(&st, t0, t_count, total, opt.rate);
    char extra[96];
    snprintf(extra, sizeof extra, ",\"rows\":%zu,\"empty\":%zu,\"has_more\":%zu", rows, empty, has_more);
    if (igw_httpload_report(&st, log_f, opt.seconds, igw_httpload_cpu_s(&ru0, &ru1), extra) != 0)
        die("-l: write failed");
    igw_httpload_stats_free(&st);
    free(tg);
    close(tfd);
    close(epfd);
    if (nerr_warm)
        fprintf(stderr, "igw-recload: %zu warm-up requests were not ok\n", nerr_warm);
    return st.nerr || nerr_warm ? 1 : 0;
}
