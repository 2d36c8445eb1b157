/* httpload.c - see httpload.h. */
#define _GNU_SOURCE
#include "httpload.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int64_t igw_httpload_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int igw_httpload_resolve(igw_httpload_target *t, const char *hostport, const char *default_port)
{
    char host[sizeof t->host];
    const char *port = default_port;
    if (strlen(hostport) >= sizeof t->host)
        return -1;
    snprintf(t->host, sizeof t->host, "%s", hostport);
    snprintf(host, sizeof host, "%s", hostport);
    char *colon = strrchr(host, ':');
    if (colon) {
        *colon = '\0';
        port = colon + 1;
    }
    if (!port)
        return -1;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return -1;
    memcpy(&t->addr, ai->ai_addr, ai->ai_addrlen);
    t->addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

int igw_httpload_parse_url(igw_httpload_target *t, const char *url)
{
    if (strncmp(url, "http://", 7) != 0)
        return -1;
    const char *p = url + 7, *slash = strchr(p, '/');
    size_t hl = slash ? (size_t)(slash - p) : strlen(p);
    char hp[sizeof t->host];
    if (hl == 0 || hl >= sizeof hp || (slash && strlen(slash) >= sizeof t->path))
        return -1;
    memcpy(hp, p, hl);
    hp[hl] = '\0';
    snprintf(t->path, sizeof t->path, "%s", slash ? slash : "/");
    return igw_httpload_resolve(t, hp, "80");
}

const char *igw_httpload_option(igw_httpload_target *t, int opt, const char *arg)
{
    if (opt == 'u')
        return igw_httpload_parse_url(t, arg) ? "bad -u (http://host:port/path)" : NULL;
    if (t->nheaders == IGW_HTTPLOAD_MAX_HEADERS)
        return "too many -H";
    t->headers[t->nheaders++] = arg;
    return NULL;
}

int igw_httpload_dial(const igw_httpload_target *t, const char **why)
{
    int fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || connect(fd, (const struct sockaddr *)&t->addr, t->addrlen) != 0) {
        *why = "cannot connect";
        goto fail;
    }
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        *why = "TCP_NODELAY";
        goto fail;
    }
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    return -1;
}

char *igw_httpload_post(const igw_httpload_target *t, const char *content_type, const char *body, size_t blen,
                        size_t *len)
{
    size_t cap = 1024 + strlen(t->path) + strlen(t->host) + (content_type ? strlen(content_type) : 0) + blen;
    for (int i = 0; i < t->nheaders; i++)
        cap += strlen(t->headers[i]) + 2;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    int n = snprintf(buf, cap, "POST %s HTTP/1.1\r\nHost: %s\r\n%s%s%sContent-Length: %zu\r\n", t->path, t->host,
                     content_type ? "Content-Type: " : "", content_type ? content_type : "", content_type ? "\r\n" : "",
                     blen);
    for (int i = 0; i < t->nheaders; i++)
        n += snprintf(buf + n, cap - (size_t)n, "%s\r\n", t->headers[i]);
    n += snprintf(buf + n, cap - (size_t)n, "\r\n");
    memcpy(buf + n, body, blen); /* cap: the head's fixed part is far below 1024 */
    *len = (size_t)n + blen;
    return buf;
}

int igw_httpload_write_all(int fd, const char *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

int igw_httpload_read(int fd, char *buf, size_t cap, size_t *len, size_t *head, size_t *clen, bool need_len)
{
    ssize_t n = read(fd, buf + *len, cap - 1 - *len);
    if (n <= 0)
        return n < 0 && errno == EINTR ? 0 : -1;
    *len += (size_t)n;
    buf[*len] = '\0';
    char *end = strstr(buf, "\r\n\r\n");
    if (!end)
        return *len >= cap - 1 ? -1 : 0;
    bool has_len = false;
    *head = (size_t)(end - buf) + 4;
    *clen = 0;
    for (char *l = strstr(buf, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n")) {
        if (!strncasecmp(l + 2, "content-length:", 15)) {
            *clen = strtoull(l + 17, NULL, 10);
            has_len = true;
        } else if (!strncasecmp(l + 2, "transfer-encoding:", 18)) {
            return -1; /* chunked answers are not read: the connection is dropped */
        }
    }
    if ((need_len && !has_len) || *clen > cap - 1 - *head)
        return -1;
    return *len < *head + *clen ? 0 : 1;
}

int64_t igw_httpload_due(int64_t start, uint64_t i, double rate)
{
    return start + (int64_t)((double)i * 1e9 / rate);
}

int igw_httpload_timer_open(int epfd)
{
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (tfd < 0)
        return -1;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev) != 0) {
        close(tfd);
        return -1;
    }
    return tfd;
}

int igw_httpload_timer_arm(int tfd, int64_t wake, int64_t now)
{
    struct itimerspec its = {.it_value = {.tv_sec = wake / 1000000000, .tv_nsec = wake % 1000000000}};
    if (wake <= now)
        its.it_value = (struct timespec){0, 1};
    return timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0 ? 0 : -1;
}

int igw_httpload_timer_drain(int tfd)
{
    uint64_t x;
    return read(tfd, &x, sizeof x) < 0 && errno != EAGAIN ? -1 : 0;
}

const char *igw_httpload_open(igw_httpload_stats *s, const char *log_path, FILE **log, int *epfd, int *tfd)
{
    memset(s, 0, sizeof *s);
    *log = NULL;
    *epfd = *tfd = -1;
    if (log_path && !(*log = fopen(log_path, "w")))
        return "-l: cannot create the file";
    s->lat = malloc(sizeof *s->lat * IGW_HTTPLOAD_MAX_REQUESTS);
    if (*log)
        s->lat_due = malloc(sizeof *s->lat_due * IGW_HTTPLOAD_MAX_REQUESTS);
    if (!s->lat || (*log && !s->lat_due) || (*epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return "out of memory"; /* the caller exits: nothing to unwind */
    if ((*tfd = igw_httpload_timer_open(*epfd)) < 0)
        return "timerfd";
    return NULL;
}

void igw_httpload_stats_free(igw_httpload_stats *s)
{
    free(s->lat);
    free(s->lat_due);
    s->lat = s->lat_due = NULL;
}

void igw_httpload_stats_add(igw_httpload_stats *s, double due_ms, double lat_ms)
{
    if (s->nlat >= IGW_HTTPLOAD_MAX_REQUESTS)
        return;
    if (s->lat_due)
        s->lat_due[s->nlat] = due_ms;
    s->lat[s->nlat++] = lat_ms;
}

void igw_httpload_count_unanswered(igw_httpload_stats *s, int64_t start, int64_t count_from, uint64_t total,
                                   double rate)
{
    size_t counted = 0;
    for (uint64_t i = 0; i < total; i++)
        counted += igw_httpload_due(start, i, rate) >= count_from;
    if (counted > s->nlat + s->nerr)
        s->nerr = counted - s->nlat;
}

double igw_httpload_cpu_s(const struct rusage *from, const struct rusage *to)
{
    return (double)(to->ru_utime.tv_sec - from->ru_utime.tv_sec + to->ru_stime.tv_sec - from->ru_stime.tv_sec) +
           (double)(to->ru_utime.tv_usec - from->ru_utime.tv_usec + to->ru_stime.tv_usec - from->ru_stime.tv_usec) /
               1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const igw_httpload_stats *s, double p)
{
    if (!s->nlat)
        return 0;
    size_t i = (size_t)((double)s->nlat * p);
    return s->lat[i < s->nlat ? i : s->nlat - 1];
}

int igw_httpload_report(igw_httpload_stats *s, FILE *log, double span_s, double cpu_s, const char *extra)
{
    if (log) { /* before the sort: request by request, in completion order */
        bool ok = s->lat_due != NULL;
        for (size_t i = 0; i < s->nlat && ok; i++)
            ok = fprintf(log, "%.3f %.3f\n", s->lat_due[i], s->lat[i]) > 0;
        if (fclose(log) != 0 || !ok)
            return -1;
    }
    double max = 0;
    for (size_t i = 0; i < s->nlat; i++)
        max = s->lat[i] > max ? s->lat[i] : max;
    qsort(s->lat, s->nlat, sizeof *s->lat, cmp);
    printf("{\"sent\":%zu,\"ok\":%zu,\"errors\":%zu,\"per_s\":%.1f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,\"p99_ms\":%.3f,"
           "\"max_ms\":%.3f,\"cpu_s\":%.3f%s}\n",
           s->nsent, s->nlat, s->nerr, (double)s->nlat / span_s, pct(s, 0.5), pct(s, 0.9), pct(s, 0.99), max, cpu_s,
           extra);
    return 0;
}
