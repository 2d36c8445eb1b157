/* log.c - see log.h. */
#include "core/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* Set once by igw_log_setup before other threads start, read-only after. */
static igw_log_level min_level = IGW_LOG_INFO;
static igw_log_format log_format = IGW_LOG_TEXT;
static int log_fd = 2;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *igw_log_level_name(igw_log_level level)
{
    return (unsigned)level < sizeof level_names / sizeof level_names[0] ? level_names[level] : "?";
}

int igw_log_level_parse(const char *s, igw_log_level *out)
{
    for (unsigned i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (strcmp(s, level_names[i]) == 0) {
            *out = (igw_log_level)i;
            return 0;
        }
    return -1;
}

int igw_log_format_parse(const char *s, igw_log_format *out)
{
    if (strcmp(s, "text") == 0)
        *out = IGW_LOG_TEXT;
    else if (strcmp(s, "json") == 0)
        *out = IGW_LOG_JSON;
    else
        return -1;
    return 0;
}

void igw_log_setup(igw_log_level min, igw_log_format format, int fd)
{
    min_level = min;
    log_format = format;
    log_fd = fd;
}

bool igw_log_enabled(igw_log_level level)
{
    return level <= min_level;
}

/* n as `width` decimal digits (n >= 0 and fits). */
static char *digits(char *p, int n, int width)
{
    for (int i = width - 1; i >= 0; i--, n /= 10)
        p[i] = (char)('0' + n % 10);
    return p + width;
}

void igw_log_timestamp(int64_t wall_ms, char out[IGW_LOG_TS_LEN])
{
    time_t s = (time_t)(wall_ms / 1000);
    int ms = (int)(wall_ms % 1000);
    if (ms < 0) {
        ms += 1000;
        s--;
    }
    struct tm tm;
    if (!gmtime_r(&s, &tm) || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900) {
        memcpy(out, "0000-00-00T00:00:00.000Z", IGW_LOG_TS_LEN);
        return;
    }
    /* By hand: snprintf's truncation warning cannot see the bounds of tm. */
    char *p = digits(out, tm.tm_year + 1900, 4);
    *p++ = '-';
    p = digits(p, tm.tm_mon + 1, 2);
    *p++ = '-';
    p = digits(p, tm.tm_mday, 2);
    *p++ = 'T';
    p = digits(p, tm.tm_hour, 2);
    *p++ = ':';
    p = digits(p, tm.tm_min, 2);
    *p++ = ':';
    p = digits(p, tm.tm_sec, 2);
    *p++ = '.';
    p = digits(p, ms, 3);
    *p++ = 'Z';
    *p = '\0';
}

/* The line being built; every put checks its room. */
typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static bool put(buf *b, const char *s, size_t n)
{
    if (n > b->cap - b->n)
        return false;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return true;
}

static bool puts_(buf *b, const char *s)
{
    return put(b, s, strlen(s));
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs,
 * surrogates or code points past U+10FFFF) with its code point, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, v = c & 0x1fu, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        len = 3, v = c & 0x0fu, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, v = c & 0x07u, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3fu);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* Appends s[0..n) escaped (log.h: the same escapes in both formats, but
 * only JSON escapes '"', and JSON writes the backslash of \xHH as \\),
 * keeping `reserve` bytes free. false when it stopped short (at a whole
 * character or escape). */
static bool put_escaped(buf *b, const char *s, size_t n, bool json, size_t reserve)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    if (reserve > b->cap - b->n)
        return n == 0;
    size_t room = b->cap - b->n - reserve;
    for (size_t i = 0; i < n;) {
        char e[8];
        size_t elen = 0;
        uint32_t cp;
        size_t len = utf8_seq(u + i, n - i, &cp);
        if (len == 0) { /* not UTF-8: the byte's value as text */
            if (json)
                e[elen++] = '\\';
            e[elen++] = '\\', e[elen++] = 'x', e[elen++] = hex[u[i] >> 4], e[elen++] = hex[u[i] & 15];
            len = 1;
        } else if (cp == '\\' || (json && cp == '"')) {
            e[elen++] = '\\', e[elen++] = (char)cp;
        } else if (cp == '\n' || cp == '\r' || cp == '\t') {
            e[elen++] = '\\', e[elen++] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't';
        } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || cp == 0x2028 || cp == 0x2029) {
            e[elen++] = '\\', e[elen++] = 'u';
            for (int sh = 12; sh >= 0; sh -= 4)
                e[elen++] = hex[(cp >> sh) & 15];
        }
        const char *w = elen ? e : s + i;
        size_t wlen = elen ? elen : len;
        if (wlen > room)
            return false;
        memcpy(b->p + b->n, w, wlen);
        b->n += wlen;
        room -= wlen;
        i += len;
    }
    return true;
}

size_t igw_log_format_line(char *out, size_t cap, igw_log_format format, igw_log_level level, int64_t wall_ms,
                           const char *id, const char *msg, size_t len, bool truncated)
{
    buf b = {out, 0, cap < IGW_LOG_LINE_MAX ? cap : IGW_LOG_LINE_MAX};
    bool json = format == IGW_LOG_JSON;
    char ts[IGW_LOG_TS_LEN];
    igw_log_timestamp(wall_ms, ts);
    size_t idlen = id ? strnlen(id, IGW_LOG_ID_MAX) : 0;
    const char *tail = json ? "\"}\n" : "\n";
    size_t reserve = strlen(tail) + 3; /* "..." */
    /* The head fits any cap of IGW_LOG_LINE_MAX: ts, level, an id of at
     * most IGW_LOG_ID_MAX bytes escaped (6 bytes each) and the keys. */
    if (json) {
        puts_(&b, "{\"ts\":\"");
        puts_(&b, ts);
        puts_(&b, "\",\"level\":\"");
        puts_(&b, igw_log_level_name(level));
        if (idlen) {
            puts_(&b, "\",\"id\":\"");
            put_escaped(&b, id, idlen, true, reserve);
        }
        puts_(&b, "\",\"msg\":\"");
    } else {
        puts_(&b, ts);
        puts_(&b, " ");
        puts_(&b, igw_log_level_name(level));
        puts_(&b, " ");
        if (idlen) {
            puts_(&b, "[");
            put_escaped(&b, id, idlen, false, reserve);
            puts_(&b, "] ");
        }
    }
    if (!put_escaped(&b, msg, len, json, reserve) || truncated)
        puts_(&b, "...");
    puts_(&b, tail);
    return b.n;
}

int igw_log_write(const char *line, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t k = write(log_fd, line + off, len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        off += (size_t)k;
    }
    return 0;
}

void igw_vlog(igw_log_level level, const char *id, const char *fmt, va_list ap)
{
    if (!igw_log_enabled(level))
        return;
    int saved = errno;
    char msg[IGW_LOG_MSG_MAX + 1];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    size_t len;
    bool cut = false;
    if (n < 0) {
        len = (size_t)snprintf(msg, sizeof msg, "(message not formatted: %s)", fmt);
        if (len > IGW_LOG_MSG_MAX)
            len = IGW_LOG_MSG_MAX, cut = true;
    } else if ((size_t)n > IGW_LOG_MSG_MAX) {
        len = IGW_LOG_MSG_MAX;
        cut = true;
    } else {
        len = (size_t)n;
    }
    char line[IGW_LOG_LINE_MAX];
    size_t ll = igw_log_format_line(line, sizeof line, log_format, level, igw_wall_ms(), id, msg, len, cut);
    (void)igw_log_write(line, ll);
    errno = saved;
}

void igw_log(igw_log_level level, const char *id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    igw_vlog(level, id, fmt, ap);
    va_end(ap);
}
