/* log_test.c - igwd's logger (src/igwd/core/log.c): the text and JSON
 * lines byte for byte, escaping of what a client could inject (newlines,
 * terminal escapes, quotes, bytes that are not UTF-8), bounds on message
 * and line, the level filter, errno kept, and lines from several threads
 * arriving whole through a pipe (one write(2) each). JSON lines are checked
 * with the project's strict JSON scanner. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "arena.h"
#include "core/log.h"
#include "json.h"

#define T0 INT64_C(1717243200123) /* 2024-06-01T12:00:00.123Z */

static size_t line(char *out, igw_log_format f, igw_log_level lv, const char *id, const char *msg, size_t len,
                   bool cut)
{
    size_t n = igw_log_format_line(out, IGW_LOG_LINE_MAX, f, lv, T0, id, msg, len, cut);
    out[n] = 0; /* out has one byte more than the line can take */
    return n;
}

/* The JSON line is one strict JSON object; its "msg" decoded into msg_out. */
static bool json_ok(const char *l, size_t n, char *msg_out, size_t cap)
{
    igw_arena a;
    igw_arena_init(&a, 1 << 16);
    igw_json j;
    bool ok = n > 0 && l[n - 1] == '\n' && memchr(l, '\n', n - 1) == NULL;
    /* RFC 8259, not the strict profile: that one refuses "\u0000", a valid escape. */
    ok = ok && igw_json_validate(l, n - 1, IGW_JSON_RFC8259, 2, &a, &j) == 0;
    if (ok && msg_out) {
        igw_json_init(&j, l, n - 1, &a, 2);
        igw_str k, v;
        ok = false;
        if (igw_json_object_begin(&j) == 0)
            while (igw_json_object_next(&j, &k) == 1) {
                if (igw_json_string(&j, &v))
                    break;
                if (k.len == 3 && memcmp(k.ptr, "msg", 3) == 0 && v.len < cap) {
                    memcpy(msg_out, v.ptr, v.len);
                    msg_out[v.len] = 0;
                    ok = true;
                }
            }
    }
    igw_arena_free(&a);
    return ok;
}

static void test_names(void)
{
    igw_log_level lv = IGW_LOG_INFO;
    igw_log_format f = IGW_LOG_TEXT;
    CHECK(igw_log_level_parse("debug", &lv) == 0 && lv == IGW_LOG_DEBUG);
    CHECK(igw_log_level_parse("error", &lv) == 0 && lv == IGW_LOG_ERROR);
    CHECK(igw_log_level_parse("warn", &lv) == 0 && lv == IGW_LOG_WARN);
    CHECK(igw_log_level_parse("info", &lv) == 0 && lv == IGW_LOG_INFO);
    CHECK(igw_log_level_parse("INFO", &lv) < 0 && igw_log_level_parse("warning", &lv) < 0 &&
          igw_log_level_parse("", &lv) < 0);
    CHECK(igw_log_format_parse("json", &f) == 0 && f == IGW_LOG_JSON);
    CHECK(igw_log_format_parse("text", &f) == 0 && f == IGW_LOG_TEXT);
    CHECK(igw_log_format_parse("JSON", &f) < 0 && igw_log_format_parse("auto", &f) < 0);
    CHECK(!strcmp(igw_log_level_name(IGW_LOG_WARN), "warn") && !strcmp(igw_log_level_name(IGW_LOG_DEBUG), "debug"));
}

static void test_timestamp(void)
{
    char ts[IGW_LOG_TS_LEN];
    igw_log_timestamp(0, ts);
    CHECK(!strcmp(ts, "1970-01-01T00:00:00.000Z"), "%s", ts);
    igw_log_timestamp(T0, ts);
    CHECK(!strcmp(ts, "2024-06-01T12:00:00.123Z"), "%s", ts);
    igw_log_timestamp(-1, ts);
    CHECK(!strcmp(ts, "1969-12-31T23:59:59.999Z"), "%s", ts);
    igw_log_timestamp(INT64_C(951782400007), ts); /* a leap day */
    CHECK(!strcmp(ts, "2000-02-29T00:00:00.007Z"), "%s", ts);
}

static void test_format(void)
{
    char l[IGW_LOG_LINE_MAX + 1];
    const char *m = "results: reply t1 comes after its command was settled";
    line(l, IGW_LOG_TEXT, IGW_LOG_WARN, "3f2a9c0b1d4e5f60", m, strlen(m), false);
    CHECK(!strcmp(l, "2024-06-01T12:00:00.123Z warn [3f2a9c0b1d4e5f60] results: reply t1 comes after its command "
                     "was settled\n"),
          "%s", l);
    line(l, IGW_LOG_TEXT, IGW_LOG_ERROR, NULL, "x", 1, false);
    CHECK(!strcmp(l, "2024-06-01T12:00:00.123Z error x\n"), "%s", l);
    line(l, IGW_LOG_TEXT, IGW_LOG_INFO, "", "x", 1, false);
    CHECK(!strcmp(l, "2024-06-01T12:00:00.123Z info x\n"), "empty id: %s", l);

    size_t n = line(l, IGW_LOG_JSON, IGW_LOG_DEBUG, "3f2a9c0b1d4e5f60", m, strlen(m), false);
    CHECK(!strcmp(l, "{\"ts\":\"2024-06-01T12:00:00.123Z\",\"level\":\"debug\",\"id\":\"3f2a9c0b1d4e5f60\","
                     "\"msg\":\"results: reply t1 comes after its command was settled\"}\n"),
          "%s", l);
    CHECK(json_ok(l, n, NULL, 0));
    n = line(l, IGW_LOG_JSON, IGW_LOG_INFO, NULL, "", 0, false);
    CHECK(!strcmp(l, "{\"ts\":\"2024-06-01T12:00:00.123Z\",\"level\":\"info\",\"msg\":\"\"}\n"), "%s", l);
    CHECK(json_ok(l, n, NULL, 0));
}

static void test_escaping(void)
{
    char l[IGW_LOG_LINE_MAX + 1], back[IGW_LOG_LINE_MAX];
    /* A forged second line, a terminal escape, DEL, a C1 CSI, U+2028. */
    static const char evil[] = "a\nb\r\tc\\d\"e\x1b[31mf\x7fg\xc2\x9bh\xe2\x80\xa8i\0j";
    size_t elen = sizeof evil - 1;
    line(l, IGW_LOG_TEXT, IGW_LOG_INFO, NULL, evil, elen, false);
    CHECK(!strcmp(l, "2024-06-01T12:00:00.123Z info a\\nb\\r\\tc\\\\d\"e\\u001b[31mf\\u007fg\\u009bh\\u2028i\\u0000j\n"),
          "%s", l);
    size_t n = line(l, IGW_LOG_JSON, IGW_LOG_INFO, NULL, evil, elen, false);
    CHECK(strstr(l, "\"msg\":\"a\\nb\\r\\tc\\\\d\\\"e\\u001b[31mf\\u007fg\\u009bh\\u2028i\\u0000j\"}\n") != NULL, "%s",
          l);
    CHECK(json_ok(l, n, NULL, 0), "%s", l);

    /* Not UTF-8 (a stray byte, an overlong, a surrogate, a cut sequence):
     * the bytes' values as text; valid UTF-8 kept as it is. */
    static const char bad[] = "\xff|\xc0\x80|\xed\xa0\x80|\xe2\x82|caf\xc3\xa9|\xf0\x9f\x98\x80";
    line(l, IGW_LOG_TEXT, IGW_LOG_INFO, NULL, bad, sizeof bad - 1, false);
    CHECK(!strcmp(l, "2024-06-01T12:00:00.123Z info \\xff|\\xc0\\x80|\\xed\\xa0\\x80|\\xe2\\x82|caf\xc3\xa9|"
                     "\xf0\x9f\x98\x80\n"),
          "%s", l);
    n = line(l, IGW_LOG_JSON, IGW_LOG_INFO, NULL, bad, sizeof bad - 1, false);
    CHECK(json_ok(l, n, back, sizeof back), "%s", l);
    CHECK(!strcmp(back, "\\xff|\\xc0\\x80|\\xed\\xa0\\x80|\\xe2\\x82|caf\xc3\xa9|\xf0\x9f\x98\x80"), "%s", back);

    /* A plain message comes back from the JSON unchanged. */
    static const char plain[] = "mqtt: connected to 127.0.0.1:1883 as igwd-1 (session \"new\") \xc3\xa9";
    n = line(l, IGW_LOG_JSON, IGW_LOG_INFO, NULL, plain, sizeof plain - 1, false);
    CHECK(json_ok(l, n, back, sizeof back) && !strcmp(back, plain), "%s", l);

    /* The id is escaped as well, and bounded. */
    line(l, IGW_LOG_TEXT, IGW_LOG_INFO, "id\n2024-01-01T00:00:00.000Z error forged", "m", 1, false);
    CHECK(strchr(l, '\n') == l + strlen(l) - 1, "%s", l);
    char longid[200];
    memset(longid, 'k', sizeof longid - 1);
    longid[sizeof longid - 1] = 0;
    line(l, IGW_LOG_TEXT, IGW_LOG_INFO, longid, "m", 1, false);
    CHECK(strlen(l) == strlen("2024-06-01T12:00:00.123Z info [] m\n") + IGW_LOG_ID_MAX, "%zu", strlen(l));
}

static void test_bounds(void)
{
    static char big[IGW_LOG_LINE_MAX * 2], l[IGW_LOG_LINE_MAX + 1];
    /* Cut by the caller (vsnprintf's bound): "..." before the newline. */
    memset(big, 'x', IGW_LOG_MSG_MAX);
    size_t n = line(l, IGW_LOG_TEXT, IGW_LOG_INFO, NULL, big, IGW_LOG_MSG_MAX, true);
    CHECK(n < IGW_LOG_LINE_MAX && n > IGW_LOG_MSG_MAX && !memcmp(l + n - 5, "x...\n", 5), "%zu", n);

    /* Escapes that would overflow the line: cut at a whole escape. */
    memset(big, 1, sizeof big);
    for (int f = IGW_LOG_TEXT; f <= IGW_LOG_JSON; f++) {
        n = line(l, (igw_log_format)f, IGW_LOG_INFO, "0123456789abcdef", big, sizeof big, false);
        const char *end = f == IGW_LOG_JSON ? "\\u0001...\"}\n" : "\\u0001...\n";
        CHECK(n <= IGW_LOG_LINE_MAX && n > IGW_LOG_LINE_MAX - 12, "%zu", n);
        CHECK(n > strlen(end) && !strcmp(l + n - strlen(end), end), "%s", l + n - 20);
        if (f == IGW_LOG_JSON)
            CHECK(json_ok(l, n, NULL, 0));
    }

    /* A line never grows past the cap, whatever the message. */
    for (size_t len = IGW_LOG_LINE_MAX - 80; len < IGW_LOG_LINE_MAX + 8; len++) {
        memset(big, 'y', len);
        n = line(l, IGW_LOG_JSON, IGW_LOG_INFO, NULL, big, len, false);
        if (!check(n <= IGW_LOG_LINE_MAX && l[n - 1] == '\n' && json_ok(l, n, NULL, 0), __FILE__, __LINE__,
                   "json line within the cap", "len %zu: %zu bytes", len, n))
            break;
    }
}

/* Reads everything from fd into buf (NUL-terminated); the length. */
static size_t slurp(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = 0;
    return n;
}

static void test_log_to_fd(void)
{
    int p[2];
    if (!CHECK(pipe(p) == 0))
        return;
    static char got[IGW_LOG_LINE_MAX * 8];
    igw_log_setup(IGW_LOG_WARN, IGW_LOG_TEXT, p[1]);
    CHECK(igw_log_enabled(IGW_LOG_ERROR) && igw_log_enabled(IGW_LOG_WARN) && !igw_log_enabled(IGW_LOG_INFO));
    igw_log(IGW_LOG_INFO, NULL, "not %s", "written");
    igw_log(IGW_LOG_DEBUG, NULL, "nor %s", "this");
    errno = ENOENT;
    igw_log(IGW_LOG_WARN, "rid1", "n=%d s=%s", 42, "a\nb");
    CHECK(errno == ENOENT, "errno %d", errno);
    static char huge[IGW_LOG_MSG_MAX * 3];
    memset(huge, 'z', sizeof huge - 1);
    igw_log(IGW_LOG_ERROR, NULL, "%s", huge);
    igw_log_setup(IGW_LOG_DEBUG, IGW_LOG_JSON, p[1]);
    igw_log(IGW_LOG_DEBUG, "rid2", "q=\"%s\"", "v");
    close(p[1]);
    slurp(p[0], got, sizeof got);
    close(p[0]);
    igw_log_setup(IGW_LOG_INFO, IGW_LOG_TEXT, 2);

    char *l1 = got, *l2 = strchr(l1, '\n'), *l3 = l2 ? strchr(l2 + 1, '\n') : NULL;
    if (!CHECK(l2 && l3, "%s", got))
        return;
    *l2++ = 0;
    *l3++ = 0;
    CHECK(strlen(l1) == 24 + strlen(" warn [rid1] n=42 s=a\\nb") && !strcmp(l1 + 24, " warn [rid1] n=42 s=a\\nb"),
          "%s", l1);
    CHECK(!strstr(got, "written") && !strstr(l2, "this"));
    size_t n2 = strlen(l2);
    CHECK(n2 == 24 + strlen(" error ") + IGW_LOG_MSG_MAX + 3 && !strcmp(l2 + n2 - 4, "z..."), "%zu", n2);
    char *end = strchr(l3, '\n');
    CHECK(end && end[1] == 0 && !strncmp(l3, "{\"ts\":\"", 7) &&
              strstr(l3, "\",\"level\":\"debug\",\"id\":\"rid2\",\"msg\":\"q=\\\"v\\\"\"}\n") != NULL,
          "%s", l3);
    if (end)
        CHECK(json_ok(l3, (size_t)(end - l3) + 1, NULL, 0), "%s", l3);
}

/* ---- lines from several threads arrive whole --------------------------------- */

#define THREADS 4
#define LINES 300
#define BODY 2000 /* under IGW_LOG_MSG_MAX; a line under PIPE_BUF: a pipe write is atomic */

static void *writer(void *arg)
{
    char body[BODY + 1];
    memset(body, 'a' + (int)(intptr_t)arg, BODY);
    body[BODY] = 0;
    for (int i = 0; i < LINES; i++)
        igw_log(IGW_LOG_INFO, "t", "%s", body);
    return NULL;
}

typedef struct sink {
    int fd;
    char *buf;
    size_t len, cap;
} sink;

static void *reader(void *arg)
{
    sink *s = arg;
    s->len = slurp(s->fd, s->buf, s->cap);
    return NULL;
}

static void test_threads(void)
{
    int p[2];
    if (!CHECK(pipe(p) == 0))
        return;
    sink s = {p[0], NULL, 0, (size_t)THREADS * LINES * (BODY + 64) + 1};
    s.buf = malloc(s.cap);
    if (!CHECK(s.buf != NULL)) {
        close(p[0]);
        close(p[1]);
        return;
    }
    igw_log_setup(IGW_LOG_INFO, IGW_LOG_TEXT, p[1]);
    pthread_t rd, w[THREADS];
    bool started = pthread_create(&rd, NULL, reader, &s) == 0;
    CHECK(started);
    unsigned nw = 0;
    for (; started && nw < THREADS; nw++)
        if (pthread_create(&w[nw], NULL, writer, (void *)(intptr_t)nw) != 0)
            break;
    CHECK(nw == THREADS);
    for (unsigned i = 0; i < nw; i++)
        pthread_join(w[i], NULL);
    close(p[1]);
    if (started)
        pthread_join(rd, NULL);
    close(p[0]);
    igw_log_setup(IGW_LOG_INFO, IGW_LOG_TEXT, 2);

    /* Every line: the head, then BODY copies of one thread's letter. */
    unsigned lines = 0, whole = 0, per[THREADS] = {0};
    for (char *l = s.buf, *nl; (nl = strchr(l, '\n')); l = nl + 1) {
        lines++;
        static const char head[] = " info [t] ";
        size_t n = (size_t)(nl - l);
        if (n != 24 + sizeof head - 1 + BODY || memcmp(l + 24, head, sizeof head - 1))
            continue;
        const char *b = l + 24 + sizeof head - 1;
        size_t k = 1;
        while (k < BODY && b[k] == b[0])
            k++;
        if (k == BODY && b[0] >= 'a' && b[0] < 'a' + THREADS) {
            whole++;
            per[b[0] - 'a']++;
        }
    }
    CHECK(lines == THREADS * LINES && whole == lines, "%u lines, %u whole: %.60s", lines, whole, s.buf);
    for (unsigned t = 0; t < THREADS; t++)
        CHECK(per[t] == LINES, "thread %u: %u", t, per[t]);
    free(s.buf);
}

int main(void)
{
    test_names();
    test_timestamp();
    test_format();
    test_escaping();
    test_bounds();
    test_log_to_fd();
    test_threads();
    return check_summary("log_test");
}
