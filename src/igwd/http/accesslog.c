/* accesslog.c - see accesslog.h. */
#include "http/accesslog.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TEXT_MAX 1024

/* Client text as a JSON string: printable ASCII kept, other bytes %XX,
 * at most TEXT_MAX input bytes (then "..."). */
static void safe_string(igw_jw *w, igw_str s)
{
    static const char hex[] = "0123456789ABCDEF";
    char buf[TEXT_MAX * 3 + 4];
    size_t n = 0, len = s.len < TEXT_MAX ? s.len : TEXT_MAX;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c >= 0x20 && c < 0x7f) {
            buf[n++] = (char)c;
        } else {
            buf[n++] = '%';
            buf[n++] = hex[c >> 4];
            buf[n++] = hex[c & 15];
        }
    }
    if (s.len > TEXT_MAX) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    igw_jw_string(w, buf, n);
}

static void key(igw_jw *w, const char *k)
{
    igw_jw_key(w, k, strlen(k));
}

int igw_accesslog_write(igw_jw *w, const igw_accesslog_entry *e)
{
    struct timespec ts;
    struct tm tm;
    char when[32];
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || !gmtime_r(&ts.tv_sec, &tm))
        return -1;
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    if (n == 0)
        return -1;
    snprintf(when + n, sizeof when - n, ".%03ldZ", ts.tv_nsec / 1000000);

    igw_jw_reset(w);
    igw_jw_object_begin(w);
    key(w, "ts");
    igw_jw_string(w, when, strlen(when));
    key(w, "id");
    igw_jw_string(w, e->id, strlen(e->id));
    key(w, "method");
    safe_string(w, e->method);
    key(w, "path");
    safe_string(w, e->path);
    key(w, "route");
    igw_jw_string(w, e->route, strlen(e->route));
    key(w, "status");
    igw_jw_int(w, e->status);
    key(w, "code");
    igw_jw_int(w, e->code);
    key(w, "bytes_in");
    igw_jw_int(w, (int64_t)e->bytes_in);
    key(w, "bytes_out");
    igw_jw_int(w, (int64_t)e->bytes_out);
    key(w, "duration_us");
    igw_jw_int(w, (int64_t)e->duration_us);
    igw_jw_object_end(w);
    if (igw_jw_status(w))
        return -1;
    /* The newline: append by hand (the writer only writes JSON values). */
    char line[TEXT_MAX * 8]; /* two escaped texts of TEXT_MAX * 3 + 3 and the rest */
    if (w->len + 1 > sizeof line)
        return -1;
    memcpy(line, w->buf, w->len);
    line[w->len] = '\n';
    size_t len = w->len + 1, off = 0;
    while (off < len) {
        ssize_t k = write(2, line + off, len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        off += (size_t)k;
    }
    return 0;
}
