/*
 * httpload.h - what the benchmarks' open-loop HTTP drivers share
 * (igw-loadgen, tests/bench/loadgen.c; igw-talkload, tests/bench/talk_load.c;
 * igw-recload, tests/bench/rec_load.c):
 * the target and its connections, the POST they send, reading one answer,
 * the pacing clock, and the latencies with the one JSON line they print.
 *
 * Single-threaded: each driver runs one epoll loop; no state of its own
 * beyond what the caller passes in.
 */
#ifndef IGW_BENCH_HTTPLOAD_H
#define IGW_BENCH_HTTPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define IGW_HTTPLOAD_MAX_HEADERS 16
#define IGW_HTTPLOAD_MAX_REQUESTS 10000000 /* latencies kept: 80 MB at most (160 with due times) */

/* Where requests go and with which extra headers. headers[] point into
 * argv: the caller keeps them alive. */
typedef struct igw_httpload_target {
    struct sockaddr_storage addr;
    socklen_t addrlen; /* 0 until resolved */
    char host[256];    /* HOST[:PORT] as given: the Host header */
    char path[1024];
    const char *headers[IGW_HTTPLOAD_MAX_HEADERS];
    int nheaders;
} igw_httpload_target;

/* The latencies of answered requests, in completion order until
 * igw_httpload_report sorts them. */
typedef struct igw_httpload_stats {
    double *lat;     /* ms from the due time to the answer */
    double *lat_due; /* ms from the start to the due time; NULL: not kept */
    size_t nlat, nerr, nsent;
} igw_httpload_stats;

/* Monotonic clock, ns. */
int64_t igw_httpload_now_ns(void);

/* HOST:PORT into t->host and t->addr; without a colon the port is
 * default_port, or the call fails when that is NULL. 0, or -1 (too long,
 * no port, not resolved). */
int igw_httpload_resolve(igw_httpload_target *t, const char *hostport, const char *default_port);

/* http://HOST[:PORT][/PATH] (port 80, path "/" by default) into t. 0, or -1
 * on a malformed or too long URL or an unknown host. */
int igw_httpload_parse_url(igw_httpload_target *t, const char *url);

/* The target's options as both drivers spell them: -u URL
 * (igw_httpload_parse_url) and -H 'Name: value' (kept by pointer). NULL, or
 * what is wrong with the option, to print. */
const char *igw_httpload_option(igw_httpload_target *t, int opt, const char *arg);

/* A connected TCP socket to t without Nagle (blocking), or -1 with *why
 * set to a static reason. */
int igw_httpload_dial(const igw_httpload_target *t, const char **why);

/* A POST of body (blen bytes) to t->path with Host, content_type (when
 * not NULL), Content-Length and t's headers, in a malloc'd buffer of *len
 * bytes the caller frees; NULL when out of memory. */
char *igw_httpload_post(const igw_httpload_target *t, const char *content_type, const char *body, size_t blen,
                        size_t *len);

/* Writes all of buf (requests are small and the socket's buffer empty: no
 * blocking expected). 0, or -1 on a broken link. */
int igw_httpload_write_all(int fd, const char *buf, size_t len);

/* Reads what fd has into buf (cap bytes; *len so far, NUL-terminated) and
 * looks for one answer whose body has a Content-Length. 1: complete, the
 * body at buf + *head, *clen bytes; 0: not yet (or EINTR); -1: the
 * connection is gone, or the answer cannot be read here (a chunked one,
 * one larger than the buffer, or without Content-Length when need_len). */
int igw_httpload_read(int fd, char *buf, size_t cap, size_t *len, size_t *head, size_t *clen, bool need_len);

/* Request i of an open loop at rate per second from start: its due time. */
int64_t igw_httpload_due(int64_t start, uint64_t i, double rate);

/* A non-blocking timerfd added to epfd with a NULL data.ptr, or -1. */
int igw_httpload_timer_open(int epfd);

/* Arms tfd to fire at wake (absolute, ns; at once when not after now). 0 or -1. */
int igw_httpload_timer_arm(int tfd, int64_t wake, int64_t now);

/* Consumes tfd's expirations. 0, or -1 on a read error. */
int igw_httpload_timer_drain(int tfd);

/* What a run needs before its clock: *log created at log_path (when not
 * NULL), room in s for IGW_HTTPLOAD_MAX_REQUESTS latencies (and their due
 * times with a log), an epoll set *epfd and a timerfd *tfd in it
 * (igw_httpload_timer_open). NULL, or the reason it failed, to print. */
const char *igw_httpload_open(igw_httpload_stats *s, const char *log_path, FILE **log, int *epfd, int *tfd);

/* Frees s's latencies (after igw_httpload_open; again is harmless). */
void igw_httpload_stats_free(igw_httpload_stats *s);

/* One answered request: due_ms since the start (kept when lat_due is),
 * lat_ms its latency. Past the capacity it is not kept. */
void igw_httpload_stats_add(igw_httpload_stats *s, double due_ms, double lat_ms);

/* The requests of an open loop at rate from start (total of them) whose due
 * time is at or after count_from and that neither got an answer nor were
 * counted as errors (never sent, or unanswered at the end): added to
 * s->nerr. */
void igw_httpload_count_unanswered(igw_httpload_stats *s, int64_t start, int64_t count_from, uint64_t total,
                                   double rate);

/* User + system CPU seconds between two getrusage samples. */
double igw_httpload_cpu_s(const struct rusage *from, const struct rusage *to);

/* Writes "DUE LATENCY" lines to log (when not NULL, then closed), sorts the
 * latencies and prints the JSON line on stdout:
 *   {"sent":n,"ok":n,"errors":n,"per_s":n,"p50_ms":n,"p90_ms":n,
 *    "p99_ms":n,"max_ms":n,"cpu_s":n<extra>}
 * with per_s = ok / span_s and extra (e.g. ",\"lanes\":4", or "") inside the
 * braces. 0, or -1 when the log could not be written (nothing printed). */
int igw_httpload_report(igw_httpload_stats *s, FILE *log, double span_s, double cpu_s, const char *extra);

#endif
