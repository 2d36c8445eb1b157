/* accesslog.c - see accesslog.h. */
#include "http/accesslog.h"

#include <string.h>

#include "clock.h"
#include "core/log.h"

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
    char when[IGW_LOG_TS_LEN];
    igw_log_timestamp(igw_wall_ms(), when);

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
    return igw_log_write(line, w->len + 1); /* the stream the diagnostics share */
}
