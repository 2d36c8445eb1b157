/* loadgen.c - igw-loadgen: an HTTP/1.1 load generator light enough to share
 * a 2-core machine with the server it measures (the Node.js client it
 * replaces took a third of a core at 1000 requests/s and alone added ~3.5 ms
 * at p99 against a route that does nothing).
 *
 *   igw-loadgen -u http://HOST:PORT/PATH [-H 'Name: value']... -b BODY
 *               [-r RATE] [-s SECONDS] [-c CONNS] [-e SUBSTRING] [-w PATH] [-l FILE]
 *
 * Open loop (-r RATE > 0): request i is due at start + i / RATE; it goes
 * out on an idle keep-alive connection, a new one (up to -c), or waits for
 * one; its latency counts from its due time, so a server that stalls is
 * charged for every request it held back (no coordinated omission).
 * Closed loop (-r 0): -c connections each send the next request as soon as
 * the previous answer is in, for -s seconds: throughput.
 * Every "{seq}" in BODY becomes the request's sequence number (unique
 * msgTokens). An answer counts as ok when its status is 200 and, with -e,
 * its body contains SUBSTRING.
 * With -w PATH (a WebSocket on the same host, opened with the same -H
 * headers before the clock starts) a request is done when a text frame
 * carries "msgToken":"...<seq>" (its sequence number as the token's last
 * digits: the push of its result, so the body's token must end in {seq}
 * after a non-digit); latency runs to that frame, and the requests whose
 * frame has not come 10 s after the last send are errors. Limits, enough
 * for igwd: answers need a Content-Length (chunked ones count as errors),
 * fragmented WebSocket messages are not reassembled.
 * With -l FILE, one line per answered request: its due time (ms since the
 * start; closed loop: when it was sent) and its latency (ms), to see whether
 * slow requests come together.
 * One JSON line on stdout:
 *   {"sent":n,"ok":n,"errors":n,"per_s":n,"p50_ms":n,"p90_ms":n,
 *    "p99_ms":n,"max_ms":n,"cpu_s":n}
 * Exit status 0, or 2 on bad arguments or a connection that cannot be made. */
#define _GNU_SOURCE
#include "httpload.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define RBUF 65536

typedef struct conn {
    int fd;
    bool busy;     /* a request is out */
    int64_t due;   /* its due time (ns) */
    uint64_t seq;  /* its number */
    size_t rlen;   /* bytes of the answer so far */
    size_t wdone;  /* bytes of the request written */
    size_t wlen;
    char *wbuf;
    char rbuf[RBUF];
} conn;

static struct {
    igw_httpload_target t;
    const char *body, *expect, *ws_path, *log;
    double rate, seconds;
    int conns;
} opt = {.rate = 1000, .seconds = 5, .conns = 64};

/* The watched WebSocket (-w): due times by sequence number, frames seen. */
static struct {
    int fd;
    int64_t *due;
    unsigned char *seen;
    uint64_t cap, waiting;
    size_t rlen;
    unsigned char rbuf[1 << 20];
} ws = {.fd = -1};

static conn *pool[MAX_CONNS];
static int npool, epfd;
static igw_httpload_stats st; /* per answered request: latency, due time (ms since the start; -l only) */
static FILE *log_f;           /* -l */
static int64_t t0;            /* the clock's start */

static void die(const char *what)
{
    fprintf(stderr, "igw-loadgen: %s\n", what);
    exit(2);
}

/* The request with sequence number seq, in c->wbuf. */
static void build(conn *c, uint64_t seq)
{
    char num[24];
    int nl = snprintf(num, sizeof num, "%llu", (unsigned long long)seq);
    size_t blen = 0;
    for (const char *b = opt.body; *b;)
        if (!strncmp(b, "{seq}", 5)) {
            blen += (size_t)nl;
            b += 5;
        } else {
            blen++;
            b++;
        }
    char *body = malloc(blen + 1), *w = body;
    if (!body)
        die("out of memory");
    for (const char *b = opt.body; *b;)
        if (!strncmp(b, "{seq}", 5)) {
            memcpy(w, num, (size_t)nl);
            w += nl;
            b += 5;
        } else {
            *w++ = *b++;
        }
    free(c->wbuf);
    if (!(c->wbuf = igw_httpload_post(&opt.t, NULL, body, blen, &c->wlen)))
        die("out of memory");
    free(body);
    c->wdone = 0;
}

/* A new keep-alive connection in the pool, or NULL when the pool is full;
 * dies when it cannot connect. */
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

/* A request due at `due` is done now. */
static void done(int64_t due)
{
    igw_httpload_stats_add(&st, (double)(due - t0) / 1e6, (double)(igw_httpload_now_ns() - due) / 1e6);
}

static void record(conn *c, bool ok)
{
    c->busy = false;
    c->rlen = 0;
    if (!ok)
        st.nerr++;
    if (opt.ws_path) { /* done when its frame comes; a refused one never will */
        if (!ok && c->seq < ws.cap && !ws.seen[c->seq] && ws.due[c->seq]) {
            ws.seen[c->seq] = 1;
            ws.waiting--;
        }
        return;
    }
    if (ok)
        done(c->due);
}

/* Writes what is left of the request (blocking writes are not expected:
 * requests are small and the socket buffer empty). -1 on a broken link. */
static int send_req(conn *c, int64_t due, uint64_t seq)
{
    if (opt.ws_path && seq < ws.cap) {
        ws.due[seq] = due;
        ws.waiting++;
    }
    c->seq = seq;
    build(c, seq);
    c->busy = true;
    c->due = due;
    c->rlen = 0;
    st.nsent++;
    if (igw_httpload_write_all(c->fd, c->wbuf, c->wlen) != 0)
        return -1;
    c->wdone = c->wlen;
    return 0;
}

/* Reads what the socket has; when an answer is complete, records it.
 * -1 when the connection is gone. */
static int on_readable(conn *c)
{
    size_t head, clen;
    int rc = igw_httpload_read(c->fd, c->rbuf, RBUF, &c->rlen, &head, &clen, false);
    if (rc <= 0)
        return rc; /* a chunked answer: the connection is dropped, the request an error */
    bool ok = !strncmp(c->rbuf, "HTTP/1.1 200 ", 13) &&
              (!opt.expect || memmem(c->rbuf + head, clen, opt.expect, strlen(opt.expect)));
    if (!c->busy)
        return -1; /* an answer nobody asked for */
    record(c, ok);
    return 0;
}

static void close_conn(conn *c)
{
    if (c->busy)
        record(c, false);
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    for (int i = 0; i < npool; i++)
        if (pool[i] == c) {
            pool[i] = pool[--npool];
            break;
        }
    free(c->wbuf);
    free(c);
}

/* Opens the WebSocket -w names, with the -H headers; dies on refusal. */
static void ws_open(void)
{
    const char *why;
    int fd = igw_httpload_dial(&opt.t, &why);
    if (fd < 0)
        die(why);
    char req[4096];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: aWd3LWxvYWRnZW4tYmVuY2g=\r\nSec-WebSocket-Version: 13\r\n",
                     opt.ws_path, opt.t.host);
    for (int i = 0; i < opt.t.nheaders && n > 0 && (size_t)n < sizeof req; i++)
        n += snprintf(req + n, sizeof req - (size_t)n, "%s\r\n", opt.t.headers[i]);
    if (n <= 0 || (size_t)n + 3 > sizeof req)
        die("WebSocket request too long");
    memcpy(req + n, "\r\n", 3);
    if (write(fd, req, (size_t)n + 2) != n + 2)
        die("WebSocket write");
    /* The 101 and its headers, byte by byte: no frame read with them. */
    char head[4096];
    size_t h = 0;
    while (h < sizeof head - 1 && (h < 4 || memcmp(head + h - 4, "\r\n\r\n", 4)))
        if (read(fd, head + h, 1) != 1)
            die("WebSocket handshake: connection closed");
        else
            h++;
    head[h] = '\0';
    if (strncmp(head, "HTTP/1.1 101", 12) != 0)
        die("WebSocket handshake refused");
    ws.fd = fd;
    ws.cap = opt.rate > 0 ? (uint64_t)(opt.rate * opt.seconds) : 0;
    if (!ws.cap || !(ws.due = calloc(ws.cap, sizeof *ws.due)) || !(ws.seen = calloc(ws.cap, 1)))
        die("-w needs -r RATE > 0 (and memory)");
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ws};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        die("epoll_ctl");
}

/* One text frame: the request whose number ends its msgToken is done. */
static void ws_frame(const unsigned char *p, size_t n)
{
    const char *key = "\"msgToken\":\"";
    const unsigned char *k = memmem(p, n, key, strlen(key));
    if (!k)
        return;
    const unsigned char *v = k + strlen(key), *end = memchr(v, '"', n - (size_t)(v - p));
    if (!end)
        return;
    const unsigned char *d = end;
    while (d > v && d[-1] >= '0' && d[-1] <= '9')
        d--;
    if (d == end)
        return;
    uint64_t seq = 0;
    for (; d < end; d++)
        seq = seq * 10 + (uint64_t)(*d - '0');
    if (seq >= ws.cap || ws.seen[seq] || !ws.due[seq])
        return;
    ws.seen[seq] = 1;
    ws.waiting--;
    done(ws.due[seq]);
}

/* Reads the WebSocket: frames from the server are unmasked; a ping gets
 * its pong (masked, as a client must). -1 when it closed. */
static int ws_readable(void)
{
    ssize_t r = read(ws.fd, ws.rbuf + ws.rlen, sizeof ws.rbuf - ws.rlen);
    if (r <= 0)
        return r < 0 && errno == EINTR ? 0 : -1;
    ws.rlen += (size_t)r;
    for (;;) {
        unsigned char *b = ws.rbuf;
        if (ws.rlen < 2)
            return 0;
        size_t hl = 2, len = b[1] & 127;
        if (len == 126) {
            hl = 4;
            if (ws.rlen < hl)
                return 0;
            len = (size_t)b[2] << 8 | b[3];
        } else if (len == 127) {
            hl = 10;
            if (ws.rlen < hl)
                return 0;
            len = 0;
            for (int i = 2; i < 10; i++)
                len = len << 8 | b[i];
        }
        if ((b[1] & 128) || len > sizeof ws.rbuf - hl)
            return -1; /* masked by a server, or bigger than the buffer */
        if (ws.rlen < hl + len)
            return 0;
        int op = b[0] & 15;
        if (op == 1)
            ws_frame(b + hl, len);
        else if (op == 8)
            return -1;
        else if (op == 9 && len <= 125) {
            unsigned char pong[2 + 4 + 125] = {0x8a, (unsigned char)(0x80 | len)}; /* mask key 0 */
            memcpy(pong + 6, b + hl, len);
            if (write(ws.fd, pong, 6 + len) != (ssize_t)(6 + len))
                return -1;
        }
        memmove(ws.rbuf, ws.rbuf + hl + len, ws.rlen - hl - len);
        ws.rlen -= hl + len;
    }
}

int main(int argc, char **argv)
{
    int o, tfd;
    const char *why;
    while ((o = getopt(argc, argv, "u:H:b:r:s:c:e:w:l:")) != -1) {
        switch (o) {
        case 'u':
        case 'H':
            if ((why = igw_httpload_option(&opt.t, o, optarg)))
                die(why);
            break;
        case 'b': opt.body = optarg; break;
        case 'r': opt.rate = atof(optarg); break;
        case 's': opt.seconds = atof(optarg); break;
        case 'c': opt.conns = atoi(optarg); break;
        case 'e': opt.expect = optarg; break;
        case 'w': opt.ws_path = optarg; break;
        case 'l': opt.log = optarg; break;
        default: die("usage: igw-loadgen -u URL [-H header]... -b BODY [-r RATE] [-s SECONDS] [-c CONNS] [-e TEXT] [-w PATH] [-l FILE]");
        }
    }
    if (!opt.t.addrlen || !opt.body || opt.rate < 0 || opt.seconds <= 0 || opt.conns < 1 || opt.conns > MAX_CONNS ||
        opt.rate * opt.seconds > IGW_HTTPLOAD_MAX_REQUESTS)
        die("need -u and -b; 0 <= RATE, 0 < SECONDS, 1 <= CONNS <= 1024, RATE x SECONDS <= 10^7");
    if ((why = igw_httpload_open(&st, opt.log, &log_f, &epfd, &tfd)))
        die(why);
    /* Connections up front: a handshake is not the server's latency. */
    int warm = opt.rate > 0 ? (opt.conns < 16 ? opt.conns : 16) : opt.conns;
    for (int i = 0; i < warm; i++)
        open_conn();
    if (opt.ws_path)
        ws_open();

    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    const int64_t start = t0 = igw_httpload_now_ns(), stop = start + (int64_t)(opt.seconds * 1e9);
    const uint64_t total = opt.rate > 0 ? (uint64_t)(opt.rate * opt.seconds) : UINT64_MAX;
    uint64_t next = 0; /* the next request to send */
    bool closed_loop = opt.rate == 0;
    for (;;) {
        int64_t t = igw_httpload_now_ns();
        bool starved = false; /* due requests wait for a connection */
        /* Send everything due (open loop) or keep every connection busy
         * until the end (closed loop). */
        for (int i = 0; i < npool || (!closed_loop && next < total); i++) {
            int64_t due = closed_loop ? t : igw_httpload_due(start, next, opt.rate);
            if (closed_loop ? (t >= stop || i >= npool) : (next >= total || due > t))
                break;
            conn *c = NULL;
            for (int k = 0; k < npool && !c; k++)
                if (!pool[k]->busy)
                    c = pool[k];
            if (!c && !(c = open_conn())) {
                starved = true; /* it waits; its latency still counts from due */
                break;
            }
            if (send_req(c, due, next) != 0)
                close_conn(c);
            next++;
        }
        bool busy = ws.fd >= 0 && ws.waiting > 0 && t < stop + (int64_t)10e9;
        for (int k = 0; k < npool; k++)
            busy |= pool[k]->busy;
        if (!busy && (closed_loop ? t >= stop : next >= total))
            break;
        if (t > stop + (int64_t)30e9)
            break; /* answers 30 s overdue: counted as errors below */
        int64_t wake = closed_loop || next >= total || starved ? t + 100000000
                                                               : igw_httpload_due(start, next, opt.rate);
        if (igw_httpload_timer_arm(tfd, wake, t) != 0)
            die("timerfd_settime");
        struct epoll_event evs[64];
        int n = epoll_wait(epfd, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (c == (void *)&ws) {
                if (ws_readable() != 0) {
                    epoll_ctl(epfd, EPOLL_CTL_DEL, ws.fd, NULL);
                    close(ws.fd);
                    ws.fd = -2; /* closed: its missing frames are errors */
                }
                continue;
            }
            if (!c) {
                if (igw_httpload_timer_drain(tfd) != 0)
                    die("timerfd read");
                continue;
            }
            if (on_readable(c) != 0)
                close_conn(c);
        }
    }
    double elapsed = (double)(igw_httpload_now_ns() - start) / 1e9;
    getrusage(RUSAGE_SELF, &ru1);
    for (int k = npool - 1; k >= 0; k--)
        close_conn(pool[k]); /* unanswered: errors (and no longer waited for) */
    if (opt.ws_path) {
        st.nerr += ws.waiting; /* accepted, never pushed */
        elapsed = opt.seconds;
    }
    if (igw_httpload_report(&st, log_f, elapsed, igw_httpload_cpu_s(&ru0, &ru1), "") != 0)
        die("-l: write failed");
    igw_httpload_stats_free(&st);
    free(ws.due);
    free(ws.seen);
    if (ws.fd >= 0)
        close(ws.fd);
    close(tfd);
    close(epfd);
    return 0;
}
