/* jw.c - compact JSON writer.
 *
 * Comma placement: bit d-1 of `first` is set while the container open at
 * depth d has no member yet. A value directly after a key needs no comma;
 * output is compact, so "the last byte written is ':'" identifies that case
 * without more state.
 *
 * `oom` is the writer's single sticky failure flag: besides allocation
 * failures it is raised by misuse that would otherwise produce malformed
 * output (nesting past JW_MAX_DEPTH, an end or key with nothing open).
 * After it is set every call is a no-op and igw_jw_status() reports -1.
 *
 * The buffer is kept NUL-terminated (the NUL is not counted in len) so it
 * can be logged directly. */
#include "jw.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "json.h"

#define JW_MAX_DEPTH 64 /* one bit of `first` per level */
#define JW_MIN_CAP ((size_t)256)

void igw_jw_init(igw_jw *w)
{
    w->buf = NULL;
    w->len = 0;
    w->cap = 0;
    w->depth = 0;
    w->first = 0;
    w->oom = false;
}

void igw_jw_free(igw_jw *w)
{
    free(w->buf);
    igw_jw_init(w);
}

void igw_jw_reset(igw_jw *w)
{
    w->len = 0;
    if (w->buf != NULL)
        w->buf[0] = '\0';
    w->depth = 0;
    w->first = 0;
    w->oom = false;
}

int igw_jw_status(const igw_jw *w)
{
    return w->oom ? -1 : 0;
}

/* Makes room for `n` more bytes plus the NUL; false (and sticky oom) if not. */
static bool reserve(igw_jw *w, size_t n)
{
    if (w->oom)
        return false;
    if (n < w->cap - w->len) /* cap > len always holds once buf exists */
        return true;
    if (n > SIZE_MAX - 1 - w->len) {
        w->oom = true;
        return false;
    }
    size_t need = w->len + n + 1;
    size_t cap = w->cap != 0 ? w->cap : JW_MIN_CAP;
    while (cap < need)
        cap = cap <= SIZE_MAX / 2 ? cap * 2 : need;
    char *buf = realloc(w->buf, cap);
    if (buf == NULL) {
        w->oom = true;
        return false;
    }
    w->buf = buf;
    w->cap = cap;
    return true;
}

static void put(igw_jw *w, const void *s, size_t n)
{
    if (n == 0 || !reserve(w, n))
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void put1(igw_jw *w, char c)
{
    put(w, &c, 1);
}

static uint64_t level_bit(unsigned depth)
{
    return UINT64_C(1) << (depth - 1);
}

/* Writes the separator owed before a member of the innermost container. */
static void separate(igw_jw *w)
{
    uint64_t bit = level_bit(w->depth);
    if (w->first & bit)
        w->first &= ~bit;
    else
        put1(w, ',');
}

static void before_value(igw_jw *w)
{
    if (w->depth == 0 || (w->len > 0 && w->buf[w->len - 1] == ':'))
        return;
    separate(w);
}

/* 0: byte copied as is; otherwise the letter of its escape ('u': \u00XX). */
static const char escape_of[256] = {
    ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
    [0x00] = 'u', [0x01] = 'u', [0x02] = 'u', [0x03] = 'u', [0x04] = 'u', [0x05] = 'u',
    [0x06] = 'u', [0x07] = 'u', [0x0B] = 'u', [0x0E] = 'u', [0x0F] = 'u', [0x10] = 'u',
    [0x11] = 'u', [0x12] = 'u', [0x13] = 'u', [0x14] = 'u', [0x15] = 'u', [0x16] = 'u',
    [0x17] = 'u', [0x18] = 'u', [0x19] = 'u', [0x1A] = 'u', [0x1B] = 'u', [0x1C] = 'u',
    [0x1D] = 'u', [0x1E] = 'u', [0x1F] = 'u', ['"'] = '"', ['\\'] = '\\',
};

/* Writes s as a quoted JSON string, escaping only what JSON requires. */
static void put_string(igw_jw *w, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    put1(w, '"');
    size_t i = 0;
    while (i < len && !w->oom) {
        size_t run = i;
        while (run < len && escape_of[(unsigned char)s[run]] == 0)
            run++;
        put(w, s + i, run - i);
        if (run == len)
            break;
        unsigned char c = (unsigned char)s[run];
        char e = escape_of[c];
        if (e == 'u') {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(w, u, sizeof u);
        } else {
            char x[2] = {'\\', e};
            put(w, x, sizeof x);
        }
        i = run + 1;
    }
    put1(w, '"');
}

static void open_container(igw_jw *w, char c)
{
    if (w->oom)
        return;
    if (w->depth >= JW_MAX_DEPTH) {
        w->oom = true;
        return;
    }
    before_value(w);
    put1(w, c);
    w->depth++;
    w->first |= level_bit(w->depth);
}

static void close_container(igw_jw *w, char c)
{
    if (w->oom)
        return;
    if (w->depth == 0) {
        w->oom = true;
        return;
    }
    w->first &= ~level_bit(w->depth);
    w->depth--;
    put1(w, c);
}

void igw_jw_object_begin(igw_jw *w)
{
    open_container(w, '{');
}

void igw_jw_object_end(igw_jw *w)
{
    close_container(w, '}');
}

void igw_jw_array_begin(igw_jw *w)
{
    open_container(w, '[');
}

void igw_jw_array_end(igw_jw *w)
{
    close_container(w, ']');
}

void igw_jw_key(igw_jw *w, const char *key, size_t len)
{
    if (w->oom)
        return;
    if (w->depth == 0) {
        w->oom = true;
        return;
    }
    separate(w);
    put_string(w, key, len);
    put1(w, ':');
}

void igw_jw_string(igw_jw *w, const char *s, size_t len)
{
    if (w->oom)
        return;
    before_value(w);
    put_string(w, s, len);
}

void igw_jw_int(igw_jw *w, int64_t v)
{
    static const char pairs[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    if (w->oom)
        return;
    char tmp[20]; /* "-9223372036854775808" */
    char *q = tmp + sizeof tmp;
    /* the magnitude in unsigned arithmetic, so INT64_MIN needs no special case */
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned i = (unsigned)(u % 100) * 2;
        u /= 100;
        q -= 2;
        memcpy(q, pairs + i, 2);
    }
    if (u >= 10) {
        q -= 2;
        memcpy(q, pairs + u * 2, 2);
    } else {
        *--q = (char)('0' + u);
    }
    if (v < 0)
        *--q = '-';
    before_value(w);
    put(w, q, (size_t)(tmp + sizeof tmp - q));
}

void igw_jw_bool(igw_jw *w, bool v)
{
    if (w->oom)
        return;
    before_value(w);
    if (v)
        put(w, "true", 4);
    else
        put(w, "false", 5);
}

void igw_jw_null(igw_jw *w)
{
    if (w->oom)
        return;
    before_value(w);
    put(w, "null", 4);
}

void igw_jw_raw(igw_jw *w, const char *json, size_t len)
{
    if (w->oom)
        return;
    before_value(w);
    put(w, json, len);
}

/* ------------------------------------------------------------- canonical */

/* Decodes the UTF-8 sequence at s[*i] (valid: the scanner checked it). */
static uint32_t utf8_next(const unsigned char *s, size_t len, size_t *i)
{
    uint32_t c = s[*i];
    int n = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    if (n > 0)
        c &= 0x3Fu >> n;
    (*i)++;
    for (int k = 0; k < n && *i < len; k++)
        c = c << 6 | (s[(*i)++] & 0x3Fu);
    return c;
}

/* Maps a code point to a key that orders like its first UTF-16 code unit
 * and then the rest: supplementary characters (high surrogate D800..DBFF)
 * sort after U+D7FF but before U+E000..U+FFFF. */
static uint32_t utf16_rank(uint32_t cp)
{
    if (cp >= 0x10000)
        return 0xD800 + (cp - 0x10000);   /* 0xD800 .. 0x10D7FF */
    if (cp >= 0xE000)
        return cp + 0x100000;             /* 0x10E000 .. 0x10FFFF */
    return cp;
}

/* RFC 8785 key order: UTF-16 code units, compared on UTF-8 keys. UTF-8
 * byte order equals code point order, which differs from UTF-16 order only
 * between supplementary and U+E000..U+FFFF characters, so the first
 * differing character decides after mapping through utf16_rank(). */
static int utf16_cmp(const char *a, size_t la, const char *b, size_t lb)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t n = la < lb ? la : lb, i = 0;
    while (i < n && x[i] == y[i])
        i++;
    if (i == n)
        return la < lb ? -1 : la > lb;
    /* back to the start of the character both strings differ in */
    while (i > 0 && ((x[i] & 0xC0) == 0x80 || (y[i] & 0xC0) == 0x80))
        i--;
    size_t ia = i, ib = i;
    uint32_t ra = utf16_rank(utf8_next(x, la, &ia));
    uint32_t rb = utf16_rank(utf8_next(y, lb, &ib));
    return ra < rb ? -1 : ra > rb;
}

/* A member of an object being canonicalized: its key and where its
 * "key":value text sits in the output. */
typedef struct cmember {
    const char *key;
    size_t klen;
    size_t start, end;
} cmember;

typedef struct canon {
    igw_jw *w;
    igw_json *j;
    cmember *m; /* members of all open objects, innermost last */
    size_t nm, cap;
    char *tmp; /* scratch copy of an object's members while reordering */
    size_t tmpcap;
} canon;

static int cmember_cmp(const void *pa, const void *pb)
{
    const cmember *a = pa, *b = pb;
    int c = utf16_cmp(a->key, a->klen, b->key, b->klen);
    if (c != 0)
        return c;
    /* duplicate keys (RFC 8259 allows them) keep document order */
    return a->start < b->start ? -1 : a->start > b->start;
}

static int push_member(canon *c, const igw_str *key, size_t start, size_t end)
{
    if (c->nm == c->cap) {
        size_t cap = c->cap != 0 ? c->cap * 2 : 16;
        cmember *m = NULL;
        if (cap <= SIZE_MAX / sizeof(cmember))
            m = realloc(c->m, cap * sizeof(cmember));
        if (m == NULL) {
            c->w->oom = true;
            return -1;
        }
        c->m = m;
        c->cap = cap;
    }
    c->m[c->nm++] = (cmember){key->ptr, key->len, start, end};
    return 0;
}

/* Rewrites members [base, nm), written in document order, in key order.
 * Already sorted objects (the common case) cost one pass of comparisons. */
static int reorder(canon *c, size_t base)
{
    size_t n = c->nm - base, i;
    if (n < 2)
        return 0; /* also keeps c->m, NULL before the first member, out of arithmetic */
    cmember *m = c->m + base;
    for (i = 1; i < n; i++)
        if (cmember_cmp(&m[i - 1], &m[i]) > 0)
            break;
    if (i >= n)
        return 0;
    size_t from = m[0].start, span = m[n - 1].end - from;
    if (span > c->tmpcap) {
        char *t = realloc(c->tmp, span);
        if (t == NULL) {
            c->w->oom = true;
            return -1;
        }
        c->tmp = t;
        c->tmpcap = span;
    }
    memcpy(c->tmp, c->w->buf + from, span);
    qsort(m, n, sizeof(cmember), cmember_cmp);
    char *out = c->w->buf + from;
    for (i = 0; i < n; i++) {
        if (i > 0)
            *out++ = ',';
        memcpy(out, c->tmp + (m[i].start - from), m[i].end - m[i].start);
        out += m[i].end - m[i].start;
    }
    return 0;
}

/* Writes one value canonically. Recursion is bounded by the scanner, whose
 * object_begin/array_begin refuse nesting past IGW_JSON_MAX_DEPTH. */
static int canon_value(canon *c)
{
    igw_jw *w = c->w;
    igw_json *j = c->j;
    igw_str s;
    int r;
    switch (igw_json_peek(j)) {
    case '{': {
        if (igw_json_object_begin(j) < 0)
            return -1;
        put1(w, '{');
        size_t base = c->nm;
        while ((r = igw_json_object_next(j, &s)) == 1) {
            if (c->nm > base)
                put1(w, ',');
            size_t start = w->len;
            put_string(w, s.ptr, s.len);
            put1(w, ':');
            if (canon_value(c) < 0 || w->oom || push_member(c, &s, start, w->len) < 0)
                return -1;
        }
        if (r < 0 || reorder(c, base) < 0)
            return -1;
        c->nm = base;
        put1(w, '}');
        break;
    }
    case '[': {
        if (igw_json_array_begin(j) < 0)
            return -1;
        put1(w, '[');
        bool first = true;
        while ((r = igw_json_array_next(j)) == 1) {
            if (!first)
                put1(w, ',');
            first = false;
            if (canon_value(c) < 0)
                return -1;
        }
        if (r < 0)
            return -1;
        put1(w, ']');
        break;
    }
    case '"':
        if (igw_json_string(j, &s) < 0)
            return -1;
        put_string(w, s.ptr, s.len);
        break;
    default: /* number or literal, kept as written; containers refused */
        if (igw_json_value(j, IGW_JSON_RFC8259, 0, SIZE_MAX, &s) < 0)
            return -1;
        put(w, s.ptr, s.len);
        break;
    }
    return w->oom ? -1 : 0;
}

int igw_jw_canonical(igw_jw *w, const char *json, size_t len)
{
    if (w->oom)
        return -1;
    /* on failure the writer is rolled back to where it was */
    size_t len0 = w->len;
    uint64_t first0 = w->first;
    before_value(w);

    igw_arena a; /* decoded strings and keys; keys must live until their object closes */
    igw_arena_init(&a, 0);
    igw_json j;
    igw_json_init(&j, json, len, &a, IGW_JSON_MAX_DEPTH);
    canon c = {.w = w, .j = &j};
    int rc = canon_value(&c);
    if (rc == 0)
        rc = igw_json_finish(&j);
    free(c.m);
    free(c.tmp);
    igw_arena_free(&a);
    if (rc < 0 && !w->oom) {
        w->len = len0;
        if (w->buf != NULL)
            w->buf[len0] = '\0';
        w->first = first0;
    }
    return rc < 0 ? -1 : 0;
}
