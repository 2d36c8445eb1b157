/* json.c - strict, single-pass JSON pull scanner.
 *
 * Conventions of this file:
 * - j->p only moves forward, and every value reader leaves it right after
 *   the value's last byte.
 * - igw_json_object_next/array_next tell the first member of a container
 *   from the later ones (which need a ',') by one bit per depth in j->first,
 *   set when the container is opened and cleared at its first member; a
 *   container is only ever read by the call that opened it and its callees,
 *   so the bit of the current depth always belongs to the open container.
 * - Once a failure is recorded every scanning call returns -1 at once: p may
 *   sit in the middle of a token and nothing sane can follow.
 * - A failure caused by running out of input is recorded at offset len
 *   (j->end); igw_json_value relies on that to tell "value too big for its
 *   byte window" from a genuine syntax error.
 * - Loops advance p at least one byte per iteration or return, so every scan
 *   is bounded by the input length; nesting is bounded by the depth limit.
 * - The input is not padded: block loads (8 or 16 bytes) are only made
 *   while the whole block lies before j->end; the bytes after it are done
 *   one at a time. */
#include "json.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SSE2 is part of the x86-64 baseline, so this needs no -march flag; other
 * targets use the portable SWAR and byte loops. ctz comes from the GNU
 * builtins, hence the compiler test (its result is cast to unsigned to
 * spare a sign extension). -DIGW_JSON_SSE2=0 forces the portable
 * code, to test it on x86-64. */
#ifndef IGW_JSON_SSE2
#if defined(__SSE2__) && defined(__GNUC__)
#define IGW_JSON_SSE2 1
#else
#define IGW_JSON_SSE2 0
#endif
#endif
#if IGW_JSON_SSE2
#include <emmintrin.h>
#endif

#if defined(__GNUC__)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NOINLINE __attribute__((noinline))
#define COLD __attribute__((cold))
#else
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#define NOINLINE
#define COLD
#endif

#define SEG_CAP (sizeof(((igw_json *)0)->seg) / sizeof(((igw_json *)0)->seg[0]))

static const uint8_t empty_input[1];

/* ---------------------------------------------------------------- errors */

const char *igw_json_errkind_name(igw_json_errkind kind)
{
    static const char *const names[] = {
        [IGW_JERR_NONE] = "none",
        [IGW_JERR_SYNTAX] = "syntax",
        [IGW_JERR_UTF8] = "utf8",
        [IGW_JERR_TRAILING] = "trailing",
        [IGW_JERR_DEPTH] = "depth",
        [IGW_JERR_SIZE] = "size",
        [IGW_JERR_NULL] = "null",
        [IGW_JERR_TYPE] = "type",
        [IGW_JERR_INTEGER] = "integer",
        [IGW_JERR_RANGE] = "range",
        [IGW_JERR_LENGTH] = "length",
        [IGW_JERR_FORMAT] = "format",
        [IGW_JERR_ENUM] = "enum",
        [IGW_JERR_DUPLICATE] = "duplicate",
        [IGW_JERR_UNKNOWN] = "unknown-field",
        [IGW_JERR_MISSING] = "missing-field",
        [IGW_JERR_FORBIDDEN] = "forbidden-field",
        [IGW_JERR_RULE] = "rule",
        [IGW_JERR_RESERVED] = "reserved-field",
        [IGW_JERR_NOMEM] = "nomem",
    };
    if ((unsigned)kind >= sizeof(names) / sizeof(names[0]) || names[kind] == NULL)
        return "invalid-kind";
    return names[kind];
}

/* Appends `c` to the path being built unless it would leave no room for NUL. */
static bool path_put(igw_json *j, size_t *n, char c)
{
    if (*n + 1 >= sizeof(j->path))
        return false;
    j->path[(*n)++] = c;
    return true;
}

/* Formats the segment stack as an RFC 6901 pointer. A segment that does not
 * fit (buffer full, segment beyond the stack capacity, or a key holding NUL,
 * which a C string cannot carry) ends the pointer at the previous segment:
 * the result then names an ancestor of the failing value, never a wrong
 * sibling. */
static void format_path(igw_json *j)
{
    size_t n = 0;
    unsigned cnt = j->nseg < SEG_CAP ? j->nseg : (unsigned)SEG_CAP;
    for (unsigned i = 0; i < cnt; i++) {
        const igw_json_seg *s = &j->seg[i];
        size_t mark = n;
        bool ok = path_put(j, &n, '/');
        if (ok && s->key == NULL) {
            char num[16];
            int len = snprintf(num, sizeof num, "%" PRIu32, s->index);
            for (int k = 0; ok && k < len; k++)
                ok = path_put(j, &n, num[k]);
        } else {
            for (uint32_t k = 0; ok && k < s->len; k++) {
                char c = s->key[k];
                if (c == '~')
                    ok = path_put(j, &n, '~') && path_put(j, &n, '0');
                else if (c == '/')
                    ok = path_put(j, &n, '~') && path_put(j, &n, '1');
                else if (c == '\0')
                    ok = false;
                else
                    ok = path_put(j, &n, c);
            }
        }
        if (!ok) {
            n = mark;
            break;
        }
    }
    j->path[n] = '\0';
}

int igw_json_fail(igw_json *j, igw_json_errkind kind, const char *reason)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    if (kind == IGW_JERR_NONE) /* a failure must be visible as one */
        kind = IGW_JERR_SYNTAX;
    j->err = kind;
    j->reason = reason != NULL ? reason : igw_json_errkind_name(kind);
    j->err_offset = (size_t)(j->p - j->start);
    format_path(j);
    return -1;
}

static COLD int fail_at(igw_json *j, const uint8_t *at, igw_json_errkind kind, const char *reason)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    j->p = at;
    return igw_json_fail(j, kind, reason);
}

static COLD int fail_eof(igw_json *j)
{
    return fail_at(j, j->end, IGW_JERR_SYNTAX, "unexpected end of input");
}

static COLD int fail_nomem(igw_json *j)
{
    return igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
}

/* ------------------------------------------------------------ path, init */

void igw_json_init(igw_json *j, const void *buf, size_t len, igw_arena *a, unsigned max_depth)
{
    if (buf == NULL) { /* pointer arithmetic on NULL is undefined, even + 0 */
        buf = empty_input;
        len = 0;
    }
    j->start = j->p = buf;
    j->end = j->start + len;
    j->arena = a;
    j->depth = 0;
    j->max_depth = max_depth < IGW_JSON_MAX_DEPTH ? max_depth : IGW_JSON_MAX_DEPTH;
    j->first = 0;
    j->nseg = 0;
    j->err = IGW_JERR_NONE;
    j->reason = "";
    j->path[0] = '\0';
    j->err_offset = 0;
    j->nul_ok = false;
}

/* Segments past the capacity are only counted, so pushes and pops stay
 * balanced; format_path() then stops at the last stored one. */
void igw_json_push_key(igw_json *j, const char *key, size_t len)
{
    if (j->nseg < SEG_CAP) {
        j->seg[j->nseg].key = key != NULL ? key : "";
        j->seg[j->nseg].len = len < UINT32_MAX ? (uint32_t)len : UINT32_MAX;
        j->seg[j->nseg].index = 0;
    }
    if (j->nseg < UINT_MAX)
        j->nseg++;
}

void igw_json_push_index(igw_json *j, uint32_t index)
{
    if (j->nseg < SEG_CAP) {
        j->seg[j->nseg].key = NULL;
        j->seg[j->nseg].len = 0;
        j->seg[j->nseg].index = index;
    }
    if (j->nseg < UINT_MAX)
        j->nseg++;
}

void igw_json_pop(igw_json *j)
{
    if (j->nseg > 0)
        j->nseg--;
}

/* Prepends "/" + the escaped segment `seg` (already escaped, `n` bytes,
 * 1 + n <= sizeof j->path - 1 checked by the callers) to j->path, dropping
 * trailing segments of the old path until the result fits. */
static void path_prepend(igw_json *j, const char *seg, size_t n)
{
    size_t cap = sizeof(j->path) - 1; /* room for characters, NUL excluded */
    size_t old = strlen(j->path);
    size_t keep = old;
    if (n + 1 + keep > cap) {
        /* Segments start with '/', which never occurs escaped inside one:
         * cut at the last boundary that leaves room. */
        keep = cap - (n + 1);
        while (keep > 0 && j->path[keep] != '/')
            keep--;
    }
    memmove(j->path + n + 1, j->path, keep);
    j->path[0] = '/';
    memcpy(j->path + 1, seg, n);
    j->path[n + 1 + keep] = '\0';
}

int igw_json_prefix_key(igw_json *j, const char *key, size_t len)
{
    if (j->err == IGW_JERR_NONE)
        return -1;
    char seg[sizeof(j->path)];
    size_t n = 0;
    for (size_t k = 0; k < len; k++) {
        char c = key[k];
        size_t need = c == '~' || c == '/' ? 2 : 1;
        if (c == '\0' || 1 + n + need > sizeof(j->path) - 1) {
            /* Holds NUL, or cannot fit even alone: the pointer ends before
             * this segment, so nothing below it is kept either. */
            j->path[0] = '\0';
            return -1;
        }
        if (c == '~') {
            seg[n++] = '~';
            seg[n++] = '0';
        } else if (c == '/') {
            seg[n++] = '~';
            seg[n++] = '1';
        } else {
            seg[n++] = c;
        }
    }
    path_prepend(j, seg, n);
    return -1;
}

int igw_json_prefix_index(igw_json *j, uint32_t index)
{
    if (j->err == IGW_JERR_NONE)
        return -1;
    char seg[16];
    int n = snprintf(seg, sizeof seg, "%" PRIu32, index);
    path_prepend(j, seg, (size_t)n);
    return -1;
}

/* ------------------------------------------------------------- lexing */

static inline bool is_ws(uint8_t c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline bool is_digit(uint8_t c)
{
    return c >= '0' && c <= '9';
}

#if IGW_JSON_SSE2
static inline __m128i load16(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* Bit i set when byte i of x is not JSON whitespace. */
static inline unsigned non_ws_mask(__m128i x)
{
    __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')),
                                           _mm_cmpeq_epi8(x, _mm_set1_epi8('\n'))),
                              _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\r')),
                                           _mm_cmpeq_epi8(x, _mm_set1_epi8('\t'))));
    return (unsigned)_mm_movemask_epi8(ws) ^ 0xFFFFu;
}

/* True when the 64 bytes at p are all spaces: long whitespace runs
 * (padding, deep indentation) are spaces in practice, and testing one byte
 * value instead of four makes such runs about three times cheaper. */
static inline bool spaces64(const uint8_t *p)
{
    const __m128i sp = _mm_set1_epi8(' ');
    __m128i a = _mm_and_si128(_mm_cmpeq_epi8(load16(p), sp), _mm_cmpeq_epi8(load16(p + 16), sp));
    __m128i b = _mm_and_si128(_mm_cmpeq_epi8(load16(p + 32), sp), _mm_cmpeq_epi8(load16(p + 48), sp));
    return _mm_movemask_epi8(_mm_and_si128(a, b)) == 0xFFFF;
}
#endif

/* The first byte at or after p that is not whitespace, or end. Called when
 * *p is (or may be) whitespace; one separating byte is the common case, so
 * it is taken before any block work. */
static NOINLINE const uint8_t *skip_ws_run(const uint8_t *p, const uint8_t *end)
{
    if (p < end && is_ws(*p)) {
        p++;
        if (p < end && *p > ' ')
            return p;
    }
#if IGW_JSON_SSE2
    while (end - p >= 16) {
        unsigned m = non_ws_mask(load16(p));
        if (m != 0)
            return p + (unsigned)__builtin_ctz(m);
        p += 16;
        while (end - p >= 64 && spaces64(p))
            p += 64;
    }
#endif
    while (p < end && is_ws(*p))
        p++;
    return p;
}

/* Skips whitespace. Inline test first: tokens are mostly packed, and every
 * byte above ' ' ends a whitespace run. */
static inline void skip_ws(igw_json *j)
{
    if (LIKELY(j->p < j->end && *j->p > ' '))
        return;
    j->p = skip_ws_run(j->p, j->end);
}

int igw_json_peek(igw_json *j)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    skip_ws(j);
    return j->p < j->end ? *j->p : -1;
}

/* Length (2..4) of the valid UTF-8 sequence at p; 0 if invalid; -1 if end
 * cuts a sequence that is valid so far. Bounds follow RFC 3629 table 3-7:
 * they exclude overlongs (C0, C1, E0 80..9F, F0 80..8F), surrogates
 * (ED A0..BF) and code points past U+10FFFF (F4 90.., F5..FF). */
static int utf8_seq(const uint8_t *p, const uint8_t *end)
{
    uint8_t c = p[0], lo = 0x80, hi = 0xBF;
    size_t avail = (size_t)(end - p);
    int n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (avail < 2)
        return -1;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++) {
        if (avail <= (size_t)i)
            return -1;
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    }
    return n;
}

bool igw_json_utf8_valid(const char *s, size_t len)
{
    if (len == 0)
        return true;
    if (s == NULL)
        return false;
    const uint8_t *p = (const uint8_t *)s, *end = p + len;
    while (p < end) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        int n = utf8_seq(p, end);
        if (n <= 0)
            return false;
        p += n;
    }
    return true;
}

static int hex_digit(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Reads 4 hex digits at h: 1 and *cu set, 0 if one is not hex, -1 if cut by end. */
static int hex4(const uint8_t *h, const uint8_t *end, unsigned *cu)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        if (h + i >= end)
            return -1;
        int d = hex_digit(h[i]);
        if (d < 0)
            return 0;
        v = v << 4 | (unsigned)d;
    }
    *cu = v;
    return 1;
}

/* Validates the escape at *pp (a backslash) and moves *pp past it; a high
 * surrogate escape is only accepted together with its low partner. */
static int scan_escape(igw_json *j, const uint8_t **pp)
{
    const uint8_t *p = *pp, *end = j->end;
    if (end - p < 2)
        return fail_eof(j);
    switch (p[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        *pp = p + 2;
        return 0;
    case 'u':
        break;
    default:
        return fail_at(j, p, IGW_JERR_SYNTAX, "invalid escape in string");
    }
    unsigned cu, lo;
    int r = hex4(p + 2, end, &cu);
    if (r < 0)
        return fail_eof(j);
    if (r == 0)
        return fail_at(j, p, IGW_JERR_SYNTAX, "invalid \\u escape in string");
    if (cu >= 0xDC00 && cu <= 0xDFFF)
        return fail_at(j, p, IGW_JERR_UTF8, "lone low surrogate escape in string");
    if (cu == 0 && !j->nul_ok) /* no C string, SQL text or jsonb can hold it */
        return fail_at(j, p, IGW_JERR_FORMAT, "\\u0000 in string");
    if (cu >= 0xD800 && cu <= 0xDBFF) {
        const uint8_t *q = p + 6;
        if (q >= end || (q[0] == '\\' && end - q < 2))
            return fail_eof(j);
        if (q[0] != '\\' || q[1] != 'u')
            return fail_at(j, p, IGW_JERR_UTF8, "high surrogate escape not followed by a low one");
        r = hex4(q + 2, end, &lo);
        if (r < 0)
            return fail_eof(j);
        if (r == 0)
            return fail_at(j, q, IGW_JERR_SYNTAX, "invalid \\u escape in string");
        if (lo < 0xDC00 || lo > 0xDFFF)
            return fail_at(j, p, IGW_JERR_UTF8, "high surrogate escape not followed by a low one");
        *pp = q + 6;
        return 0;
    }
    *pp = p + 6;
    return 0;
}

/* True for the bytes a string scan must stop at: the closing quote, an
 * escape, a control character (refused) or the start of a multi-byte UTF-8
 * sequence (validated). */
static inline bool str_special(uint8_t c)
{
    return c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
}

#if IGW_JSON_SSE2
/* 0xFF in each byte of the 16 at p that is not str_special(), 0 in the
 * others. x ^ 0x02 keeps 0x00..0x1F below 0x20 and the sign of 0x80..0xFF,
 * turns '"' into 0x20 and every other printable ASCII byte into 0x21..0x7F,
 * so one signed compare with 0x20 leaves only the backslash to exclude.
 * Ordinary bytes rather than special ones are computed because SSE2 has
 * only a greater-than compare; the other polarity costs an inversion. */
static inline __m128i ordinary16(const uint8_t *p)
{
    __m128i x = load16(p);
    __m128i gt = _mm_cmpgt_epi8(_mm_xor_si128(x, _mm_set1_epi8(0x02)), _mm_set1_epi8(0x20));
    return _mm_andnot_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\\')), gt);
}

/* Bit i set when byte i of the 16 at p is str_special(). */
static inline unsigned special_mask16(const uint8_t *p)
{
    return (unsigned)_mm_movemask_epi8(ordinary16(p)) ^ 0xFFFFu;
}
#else
/* Nonzero when one of the 8 bytes is < 0x20, '"', '\\' or >= 0x80. Each
 * term is the exact "has byte less than n" test, free of false positives. */
static inline uint64_t swar_special(uint64_t v)
{
    const uint64_t ones = UINT64_C(0x0101010101010101);
    const uint64_t high = UINT64_C(0x8080808080808080);
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
    return (((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b) | v) & high;
}
#endif

/* The first byte at or after p for which str_special() holds, or end. */
static inline const uint8_t *find_special(const uint8_t *p, const uint8_t *end)
{
#if IGW_JSON_SSE2
    /* One block first: most strings (keys, short values) end inside it, and
     * the 64-byte loop would only load bytes past their end. */
    if (end - p >= 16) {
        unsigned m = special_mask16(p);
        if (m != 0)
            return p + (unsigned)__builtin_ctz(m);
        p += 16;
        while (end - p >= 64) {
            __m128i o0 = ordinary16(p), o1 = ordinary16(p + 16);
            __m128i o2 = ordinary16(p + 32), o3 = ordinary16(p + 48);
            if (_mm_movemask_epi8(_mm_and_si128(_mm_and_si128(o0, o1), _mm_and_si128(o2, o3))) !=
                0xFFFF) {
                uint64_t m64 = (uint64_t)(unsigned)_mm_movemask_epi8(o0) |
                               (uint64_t)(unsigned)_mm_movemask_epi8(o1) << 16 |
                               (uint64_t)(unsigned)_mm_movemask_epi8(o2) << 32 |
                               (uint64_t)(unsigned)_mm_movemask_epi8(o3) << 48;
                return p + (unsigned)__builtin_ctzll(~m64);
            }
            p += 64;
        }
        while (end - p >= 16) {
            m = special_mask16(p);
            if (m != 0)
                return p + (unsigned)__builtin_ctz(m);
            p += 16;
        }
    }
#else
    while (end - p >= 8) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        if (swar_special(v) != 0)
            break; /* the byte loop below finds which one */
        p += 8;
    }
#endif
    while (p < end && !str_special(*p))
        p++;
    return p;
}

/* What scan_string() found: the closing quote (NULL after a failure) and
 * whether an escape came before it. Returned by value, in two registers:
 * results written through pointers to locals make those locals live in
 * memory, and reading such a 16-byte pair back as one vector right after
 * two 8-byte stores stalls store forwarding (about 10 cycles a string). */
typedef struct strscan {
    const uint8_t *close;
    bool escaped;
} strscan;

/* scan_string() from p, any byte of the string at or after the opening
 * quote at j->p: finds the closing quote, validating escapes and UTF-8 on
 * the way. */
static NOINLINE strscan scan_string_from(igw_json *j, const uint8_t *p)
{
    const uint8_t *end = j->end;
    strscan r = {NULL, false};
    for (;;) {
        p = find_special(p, end);
        if (UNLIKELY(p >= end)) {
            fail_eof(j);
            return r;
        }
        uint8_t c = *p;
        if (LIKELY(c == '"'))
            break;
        if (c == '\\') {
            r.escaped = true;
            if (scan_escape(j, &p) < 0)
                return (strscan){NULL, false};
        } else if (c < 0x20) {
            fail_at(j, p, IGW_JERR_SYNTAX, "control character in string");
            return (strscan){NULL, false};
        } else {
            int n = utf8_seq(p, end);
            if (n <= 0) {
                if (n < 0)
                    fail_eof(j);
                else
                    fail_at(j, p, IGW_JERR_UTF8, "invalid UTF-8 in string");
                return (strscan){NULL, false};
            }
            p += n;
        }
    }
    r.close = p;
    return r;
}

/* Validates the string whose opening quote is at j->p and, unless it fails,
 * moves j->p past its closing quote; its content runs from the old j->p + 1
 * to the returned closing quote. Inline part: keys and most values are plain
 * ASCII that ends within 16 bytes, settled by one block test; anything else
 * continues out of line. */
static inline strscan scan_string(igw_json *j)
{
    const uint8_t *p = j->p + 1;
    strscan r;
#if IGW_JSON_SSE2
    if (LIKELY(j->end - p >= 16)) {
        unsigned m = special_mask16(p);
        if (m == 0) {
            r = scan_string_from(j, p + 16);
        } else {
            p += (unsigned)__builtin_ctz(m);
            r = LIKELY(*p == '"') ? (strscan){p, false} : scan_string_from(j, p);
        }
    } else
#endif
    {
        r = scan_string_from(j, p);
    }
    if (r.close != NULL)
        j->p = r.close + 1;
    return r;
}

static size_t utf8_put(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static uint32_t hex4_trusted(const char *h)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 4 | (uint32_t)hex_digit((uint8_t)h[i]);
    return v;
}

/* Decodes string content already checked by scan_string(). Every escape is
 * at least as long as its UTF-8 form, so out needs at most n bytes. */
static size_t decode_string(const char *s, size_t n, char *out)
{
    size_t i = 0, o = 0;
    while (i < n) {
        if (s[i] != '\\') {
            const char *bs = memchr(s + i, '\\', n - i);
            size_t run = bs != NULL ? (size_t)(bs - (s + i)) : n - i;
            memcpy(out + o, s + i, run);
            i += run;
            o += run;
            continue;
        }
        char e = s[i + 1];
        i += 2;
        switch (e) {
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            uint32_t cp = hex4_trusted(s + i);
            i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* validated: "\uDCxx" follows */
                cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4_trusted(s + i + 2) - 0xDC00);
                i += 6;
            }
            o += utf8_put(out + o, cp);
            break;
        }
        default: out[o++] = e; break; /* '"', '\\', '/' */
        }
    }
    return o;
}

/* The slow part of read_string(): decodes the n bytes at s, content with
 * escapes, into the arena, NUL-terminated there. .ptr is NULL on failure. */
static NOINLINE igw_str decode_into_arena(igw_json *j, const uint8_t *s, size_t n)
{
    char *buf = j->arena != NULL ? igw_arena_alloc(j->arena, n + 1) : NULL;
    if (buf == NULL) {
        fail_nomem(j);
        return (igw_str){NULL, 0};
    }
    size_t len = decode_string((const char *)s, n, buf);
    buf[len] = '\0';
    return (igw_str){buf, len};
}

/* Reads the string at j->p. With `decode`, escapes are resolved into the
 * arena (NUL-terminated there); otherwise *out is the raw content. *out is
 * written only on success. */
static inline int read_string(igw_json *j, igw_str *out, bool decode)
{
    const uint8_t *s = j->p + 1;
    strscan r = scan_string(j);
    if (r.close == NULL)
        return -1;
    size_t n = (size_t)(r.close - s);
    if (LIKELY(!r.escaped || !decode)) {
        out->ptr = (const char *)s;
        out->len = n;
        return 0;
    }
    igw_str d = decode_into_arena(j, s, n);
    if (d.ptr == NULL)
        return -1;
    *out = d;
    return 0;
}

/* A number token, split by the RFC 8259 grammar. */
typedef struct numtok {
    const uint8_t *s, *end;  /* whole token */
    const uint8_t *ip, *fp, *ep;
    size_t nint, nfrac, nexp; /* digit counts of integer, fraction, exponent */
    bool neg, has_exp, exp_neg;
} numtok;

/* Lexes the number at j->p (a '-' or digit) without consuming it. A leading
 * zero ends the integer part; callers decide how to report a digit after it. */
static int lex_number(igw_json *j, numtok *t)
{
    const uint8_t *q = j->p, *end = j->end;
    memset(t, 0, sizeof *t);
    t->s = q;
    if (*q == '-') {
        t->neg = true;
        q++;
    }
    if (q >= end)
        return fail_eof(j);
    if (!is_digit(*q))
        return fail_at(j, q, IGW_JERR_SYNTAX, "expected a digit in number");
    t->ip = q;
    if (*q == '0')
        q++;
    else
        while (q < end && is_digit(*q))
            q++;
    t->nint = (size_t)(q - t->ip);
    if (q < end && *q == '.') {
        t->fp = ++q;
        while (q < end && is_digit(*q))
            q++;
        t->nfrac = (size_t)(q - t->fp);
        if (t->nfrac == 0)
            return q >= end ? fail_eof(j)
                            : fail_at(j, q, IGW_JERR_SYNTAX, "expected a digit after '.'");
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        t->has_exp = true;
        q++;
        if (q < end && (*q == '+' || *q == '-'))
            t->exp_neg = *q++ == '-';
        t->ep = q;
        while (q < end && is_digit(*q))
            q++;
        t->nexp = (size_t)(q - t->ep);
        if (t->nexp == 0)
            return q >= end ? fail_eof(j)
                            : fail_at(j, q, IGW_JERR_SYNTAX, "expected a digit in exponent");
    }
    t->end = q;
    return 0;
}

/* True when an integer part "0" is directly followed by another digit. */
static bool leading_zero(const igw_json *j, const numtok *t)
{
    return t->nint == 1 && t->ip[0] == '0' && t->nfrac == 0 && !t->has_exp &&
           t->end < j->end && is_digit(*t->end);
}

/* Magnitude of an integer token if it is within 2^53-1. The digit count is
 * checked first, so the accumulation cannot overflow. */
static bool safe_magnitude(const numtok *t, uint64_t *out)
{
    if (t->nint > 16)
        return false;
    uint64_t m = 0;
    for (size_t i = 0; i < t->nint; i++)
        m = m * 10 + (uint64_t)(t->ip[i] - '0');
    *out = m;
    return m <= (uint64_t)IGW_JSON_SAFE_MAX;
}

/* --------------------------------------------------------- typed readers */

enum vtype { VT_BAD, VT_EOF, VT_OBJECT, VT_ARRAY, VT_STRING, VT_NUMBER, VT_BOOL, VT_NULL };
enum expect { EX_OBJECT, EX_ARRAY, EX_STRING, EX_INTEGER, EX_BOOLEAN };

static bool literal_at(const igw_json *j, const char *lit, size_t n)
{
    return (size_t)(j->end - j->p) >= n && memcmp(j->p, lit, n) == 0;
}

/* Kind of the value starting at j->p (whitespace already skipped). */
static enum vtype classify(const igw_json *j)
{
    if (j->p >= j->end)
        return VT_EOF;
    switch (*j->p) {
    case '{': return VT_OBJECT;
    case '[': return VT_ARRAY;
    case '"': return VT_STRING;
    case '-': return j->end - j->p >= 2 && is_digit(j->p[1]) ? VT_NUMBER : VT_BAD;
    case 't': return literal_at(j, "true", 4) ? VT_BOOL : VT_BAD;
    case 'f': return literal_at(j, "false", 5) ? VT_BOOL : VT_BAD;
    case 'n': return literal_at(j, "null", 4) ? VT_NULL : VT_BAD;
    default: return is_digit(*j->p) ? VT_NUMBER : VT_BAD;
    }
}

/* Reports the bytes at j->p that start no JSON value. */
static COLD int fail_bad(igw_json *j)
{
    const uint8_t *p = j->p;
    if (p >= j->end)
        return fail_eof(j);
    const char *lit = *p == 't' ? "true" : *p == 'f' ? "false" : *p == 'n' ? "null" : NULL;
    if (lit != NULL) {
        size_t n = strlen(lit), avail = (size_t)(j->end - p);
        if (avail < n && memcmp(p, lit, avail) == 0)
            return fail_eof(j);
        return fail_at(j, p, IGW_JERR_SYNTAX, "invalid literal");
    }
    if (*p == '-')
        return j->end - p < 2 ? fail_eof(j)
                              : fail_at(j, p + 1, IGW_JERR_SYNTAX, "expected a digit in number");
    return fail_at(j, p, IGW_JERR_SYNTAX, "unexpected character");
}

#define MISMATCH(e)                                                                       \
    { NULL, NULL, "expected " e ", found object", "expected " e ", found array",         \
      "expected " e ", found string", "expected " e ", found number",                    \
      "expected " e ", found boolean" }

/* Reports a value of the wrong kind: NULL for null, TYPE for another JSON
 * type, SYNTAX for anything that is no value at all. */
static COLD int fail_type(igw_json *j, enum expect ex, enum vtype found)
{
    static const char *const reasons[][VT_NULL] = {
        [EX_OBJECT] = MISMATCH("object"),   [EX_ARRAY] = MISMATCH("array"),
        [EX_STRING] = MISMATCH("string"),   [EX_INTEGER] = MISMATCH("integer"),
        [EX_BOOLEAN] = MISMATCH("boolean"),
    };
    switch (found) {
    case VT_EOF: return fail_eof(j);
    case VT_BAD: return fail_bad(j);
    case VT_NULL: return igw_json_fail(j, IGW_JERR_NULL, "null is not accepted");
    default: return igw_json_fail(j, IGW_JERR_TYPE, reasons[ex][found]);
    }
}

/* The j->first bit of the container at `depth` (1..IGW_JSON_MAX_DEPTH, as
 * max_depth is clamped to it). Depth 0, where no container is open, has no
 * bit: a member read there always needs a ',' and is refused without one. */
_Static_assert(IGW_JSON_MAX_DEPTH <= 64, "j->first has one bit per depth");

static inline uint64_t first_bit(unsigned depth)
{
    return depth - 1u < 64u ? UINT64_C(1) << (depth - 1u) : 0;
}

static int open_container(igw_json *j, uint8_t c, enum expect ex)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    skip_ws(j);
    if (j->p < j->end && *j->p == c) {
        if (j->depth >= j->max_depth)
            return igw_json_fail(j, IGW_JERR_DEPTH, "nesting too deep");
        j->p++;
        j->depth++;
        j->first |= first_bit(j->depth);
        return 0;
    }
    return fail_type(j, ex, classify(j));
}

int igw_json_object_begin(igw_json *j)
{
    return open_container(j, '{', EX_OBJECT);
}

int igw_json_array_begin(igw_json *j)
{
    return open_container(j, '[', EX_ARRAY);
}

static void close_container(igw_json *j)
{
    j->p++;
    if (j->depth > 0)
        j->depth--;
}

/* Positions at the next member of the open object or array (1), or closes it
 * at `close` (0): the separator rules both containers share, for any layout
 * and every error. */
static int next_member(igw_json *j, char close, const char *no_sep, const char *trailing)
{
    uint64_t bit = first_bit(j->depth);
    bool first = (j->first & bit) != 0;
    skip_ws(j);
    if (j->p >= j->end)
        return fail_eof(j);
    if (*j->p == close) {
        close_container(j);
        return 0;
    }
    if (first) {
        j->first &= ~bit;
    } else {
        if (*j->p != ',')
            return igw_json_fail(j, IGW_JERR_SYNTAX, no_sep);
        j->p++;
        skip_ws(j);
        if (j->p >= j->end)
            return fail_eof(j);
        if (*j->p == close)
            return igw_json_fail(j, IGW_JERR_SYNTAX, trailing);
    }
    return 1;
}

/* igw_json_object_next() for any layout: whitespace, escaped or non-ASCII
 * keys, keys near the end of input, and every error. */
static NOINLINE int object_next_any(igw_json *j, igw_str *key)
{
    int more = next_member(j, '}', "expected ',' or '}' after object member", "trailing comma in object");
    if (more <= 0)
        return more;
    if (*j->p != '"')
        return igw_json_fail(j, IGW_JERR_SYNTAX, "expected an object key");
    igw_str k;
    if (read_string(j, &k, true) < 0)
        return -1;
    skip_ws(j);
    if (j->p >= j->end)
        return fail_eof(j);
    if (*j->p != ':')
        return igw_json_fail(j, IGW_JERR_SYNTAX, "expected ':' after object key");
    j->p++;
    if (key != NULL)
        *key = k;
    return 1;
}

/* igw_json_array_next() for any layout and every error. */
static NOINLINE int array_next_any(igw_json *j)
{
    return next_member(j, ']', "expected ',' or ']' after array item", "trailing comma in array");
}

/* The fast path of object_next_any() for packed JSON, the common case of
 * machine-written bodies: '}' right at p, or [','] '"' key '"' ':' with no
 * whitespace and a plain ASCII key ending within one 16-byte block. It
 * reads the same bytes and reaches the same result the general code would;
 * anything else, errors included, is left to that code, from the same p,
 * before anything has changed. Being a leaf, it also saves the register
 * spills the general code pays for its calls. */
int igw_json_object_next(igw_json *j, igw_str *key)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
#if IGW_JSON_SSE2
    const uint8_t *p = j->p, *end = j->end;
    uint64_t bit = first_bit(j->depth);
    if (p < end && *p == '}') { /* the closing brackets of a body lie near its end */
        close_container(j);
        return 0;
    }
    /* ',' '"' and a 16-byte block after the quote lie before end */
    if (LIKELY(end - p >= 18)) {
        const uint8_t *q = p;
        if ((j->first & bit) == 0) {
            if (*q != ',')
                return object_next_any(j, key);
            q++;
        }
        unsigned m = *q == '"' ? special_mask16(q + 1) : 0;
        if (m != 0) {
            const uint8_t *close = q + 1 + (unsigned)__builtin_ctz(m);
            if (*close == '"' && end - close >= 2 && close[1] == ':') {
                j->first &= ~bit;
                j->p = close + 2;
                if (key != NULL) {
                    key->ptr = (const char *)q + 1;
                    key->len = (size_t)(close - (q + 1));
                }
                return 1;
            }
        }
    }
#endif
    return object_next_any(j, key);
}

/* The fast path of array_next_any() for packed JSON: ']' at p, or an item
 * (after ',' unless it is the first) that starts with a byte that is
 * neither whitespace nor ']'. The same contract as igw_json_object_next. */
int igw_json_array_next(igw_json *j)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    const uint8_t *p = j->p, *end = j->end;
    uint64_t bit = first_bit(j->depth);
    if (p < end && *p == ']') {
        close_container(j);
        return 0;
    }
    if (LIKELY(end - p >= 2)) {
        if (j->first & bit) {
            if (*p > ' ') {
                j->first &= ~bit;
                return 1;
            }
        } else if (*p == ',' && p[1] > ' ' && p[1] != ']') {
            j->p = p + 1;
            return 1;
        }
    }
    return array_next_any(j);
}

int igw_json_string(igw_json *j, igw_str *out)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    skip_ws(j);
    if (UNLIKELY(j->p >= j->end || *j->p != '"')) /* classify() only to name the mismatch */
        return fail_type(j, EX_STRING, classify(j));
    igw_str s;
    if (read_string(j, &s, true) < 0)
        return -1;
    if (out != NULL)
        *out = s;
    return 0;
}

int igw_json_int(igw_json *j, int64_t *out, int64_t min, int64_t max)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    skip_ws(j);
    /* a digit starts a number: classify() is for '-' and the failures */
    if (j->p >= j->end || !is_digit(*j->p)) {
        if (j->end - j->p >= 2 && j->p[0] == '+' && is_digit(j->p[1]))
            return igw_json_fail(j, IGW_JERR_INTEGER, "leading '+' is not allowed in an integer");
        enum vtype t = classify(j);
        if (t != VT_NUMBER)
            return fail_type(j, EX_INTEGER, t);
    }
    /* Fast path: at most 16 digits, no leading zero, and no '.', exponent
     * or further digit after them: a plain integer, accumulated as it is
     * read. Anything else goes through the full lexer, which decides the
     * exact error. 16 digits stay below 10^17, far from overflowing. */
    const uint8_t *q = j->p, *end = j->end;
    bool neg = *q == '-';
    q += neg;
    const uint8_t *digits = q;
    uint64_t m = 0;
    while (q < end && is_digit(*q) && q - digits < 17)
        m = m * 10 + (uint64_t)(*q++ - '0');
    size_t nd = (size_t)(q - digits);
    if (nd == 0 || nd > 16 || (nd > 1 && *digits == '0') ||
        (q < end && (*q == '.' || *q == 'e' || *q == 'E' || is_digit(*q)))) {
        numtok tok;
        if (lex_number(j, &tok) < 0)
            return -1;
        if (leading_zero(j, &tok))
            return igw_json_fail(j, IGW_JERR_INTEGER, "leading zero is not allowed in an integer");
        if (tok.nfrac != 0 || tok.has_exp)
            return igw_json_fail(j, IGW_JERR_INTEGER,
                                 "fraction or exponent where an integer is required");
        if (!safe_magnitude(&tok, &m))
            return igw_json_fail(j, IGW_JERR_RANGE, "integer beyond the safe integer range");
        q = tok.end;
    } else if (m > (uint64_t)IGW_JSON_SAFE_MAX) {
        return igw_json_fail(j, IGW_JERR_RANGE, "integer beyond the safe integer range");
    }
    if (neg && m == 0) {
        if (min >= 0)
            return igw_json_fail(j, IGW_JERR_INTEGER, "-0 is not accepted as an integer here");
        neg = false; /* -0 is plainly 0 where negatives are allowed */
    }
    int64_t v = neg ? -(int64_t)m : (int64_t)m;
    if (v < min)
        return igw_json_fail(j, IGW_JERR_RANGE, "integer below the allowed minimum");
    if (v > max)
        return igw_json_fail(j, IGW_JERR_RANGE, "integer above the allowed maximum");
    j->p = q;
    if (out != NULL)
        *out = v;
    return 0;
}

int igw_json_bool(igw_json *j, bool *out)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    skip_ws(j);
    enum vtype t = classify(j);
    if (t != VT_BOOL)
        return fail_type(j, EX_BOOLEAN, t);
    bool v = *j->p == 't';
    j->p += v ? 4 : 5;
    if (out != NULL)
        *out = v;
    return 0;
}

int igw_json_finish(igw_json *j)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    skip_ws(j);
    if (j->p < j->end)
        return igw_json_fail(j, IGW_JERR_TRAILING, "unexpected data after the value");
    return 0;
}

/* ------------------------------------------------------------ free values */

/* Significant digits handed to strtod. Midpoints between adjacent doubles
 * have at most 767 significant digits, so 800 digits plus a sticky nonzero
 * digit standing for the dropped tail round exactly like the full token. */
#define SIG_DIGITS 800
/* Exponents are accumulated up to this; past it the verdict cannot change. */
#define EXP_SATURATE INT64_C(1000000000000000)
#define STRICT_EXP_MAX 100000  /* |exponent| as written */
#define STRICT_SCALE_MAX 16383 /* digits after the point, exponent applied (PostgreSQL's NUMERIC_DSCALE_MAX) */

static uint8_t num_digit(const numtok *t, size_t i)
{
    return i < t->nint ? t->ip[i] : t->fp[i - t->nint];
}

/* STRICT check of a number with fraction or exponent: it must round to a
 * finite double and, unless it is zero, to a nonzero one. The token is
 * normalized to "<digits>e<exp>" (no '.', so the locale cannot interfere)
 * in a bounded buffer; all but the two boundary decades are decided from
 * the decimal magnitude alone, without strtod. */
static int check_double(igw_json *j, const numtok *t)
{
    size_t nd = t->nint + t->nfrac, first = 0, last = nd;
    while (first < nd && num_digit(t, first) == '0')
        first++;
    if (first == nd)
        return 0; /* zero, whatever the exponent */
    while (num_digit(t, last - 1) == '0')
        last--;
    int64_t e = 0;
    for (size_t i = 0; i < t->nexp && e < EXP_SATURATE; i++)
        e = e * 10 + (t->ep[i] - '0');
    if (t->exp_neg)
        e = -e;
    size_t n = last - first;
    /* value = digits[first, last) * 10^e10, and 10^(mag-1) <= value < 10^mag */
    int64_t e10 = e - (int64_t)t->nfrac + (int64_t)(nd - last);
    int64_t mag = (int64_t)n + e10;
    if (mag > 309) /* >= 1e309 > DBL_MAX */
        return igw_json_fail(j, IGW_JERR_RANGE, "number overflows a double");
    if (mag < -323) /* < 1e-324, below half the smallest subnormal */
        return igw_json_fail(j, IGW_JERR_RANGE, "nonzero number underflows to zero");
    if (mag > -323 && mag < 309) /* within [1e-323, 1e308): finite and nonzero */
        return 0;
    /* only the two boundary decades need correct rounding */
    char buf[SIG_DIGITS + 32];
    size_t k = n < SIG_DIGITS ? n : SIG_DIGITS;
    for (size_t i = 0; i < k; i++)
        buf[i] = (char)num_digit(t, first + i);
    int64_t be = e10 + (int64_t)(n - k);
    if (n > k) {
        buf[k++] = '1';
        be--;
    }
    snprintf(buf + k, sizeof buf - k, "e%" PRId64, be);
    double v = strtod(buf, NULL);
    if (isinf(v))
        return igw_json_fail(j, IGW_JERR_RANGE, "number overflows a double");
    if (v == 0)
        return igw_json_fail(j, IGW_JERR_RANGE, "nonzero number underflows to zero");
    return 0;
}

static int free_number(igw_json *j, igw_json_profile profile)
{
    numtok t;
    if (lex_number(j, &t) < 0)
        return -1;
    if (leading_zero(j, &t))
        return fail_at(j, t.end, IGW_JERR_SYNTAX, "leading zero in number");
    if (profile == IGW_JSON_STRICT) {
        uint64_t m;
        /* The bounds of PostgreSQL's numeric (and so jsonb), which
         * zero and long fractions would otherwise reach: a value accepted
         * here must be storable as it was sent. */
        int64_t ex = 0;
        for (size_t i = 0; i < t.nexp && ex <= STRICT_EXP_MAX; i++)
            ex = ex * 10 + (t.ep[i] - '0');
        if (ex > STRICT_EXP_MAX)
            return igw_json_fail(j, IGW_JERR_RANGE, "exponent beyond +-100000");
        if ((int64_t)t.nfrac + (t.exp_neg ? ex : -ex) > STRICT_SCALE_MAX)
            return igw_json_fail(j, IGW_JERR_RANGE, "more than 16383 digits after the decimal point");
        if (t.nfrac == 0 && !t.has_exp) {
            if (!safe_magnitude(&t, &m))
                return igw_json_fail(j, IGW_JERR_RANGE, "integer beyond the safe integer range");
        } else if (check_double(j, &t) < 0) {
            return -1;
        }
    }
    j->p = t.end;
    return 0;
}

/* A key seen in an open object, for the STRICT duplicate check. */
typedef struct vkey {
    const char *ptr;
    size_t len;
    size_t off; /* offset of the key's opening quote */
} vkey;

/* One open container of a free value. Key arrays are kept per level and
 * reused by later objects at the same level, so sibling objects don't
 * allocate again. */
typedef struct vlevel {
    vkey *keys;
    size_t nkeys, cap;
    uint32_t index;
    bool is_obj;
} vlevel;

/* Total order on keys: bytes, then length, then position. The position
 * makes equal keys sort in document order, so the sort needs no stability
 * and a duplicate's later occurrence always directly follows an earlier one. */
static int vkey_cmp(const vkey *x, const vkey *y)
{
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n != 0 ? memcmp(x->ptr, y->ptr, n) : 0;
    if (c != 0)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Moves k[i] down the max-heap k[0, n) to its place. */
static void vkey_sift(vkey *k, size_t i, size_t n)
{
    vkey v = k[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && vkey_cmp(&k[c], &k[c + 1]) < 0)
            c++;
        if (vkey_cmp(&v, &k[c]) >= 0)
            break;
        k[i] = k[c];
        i = c;
    }
    k[i] = v;
}

/* Heapsort: O(n log n) whatever the keys, in place. qsort would do, but
 * glibc's allocates a merge buffer for arrays over 1 KiB (43 keys here),
 * and a request must not reach malloc; an arena buffer could fail where
 * the check itself cannot. */
static void vkey_sort(vkey *k, size_t n)
{
    if (n < 2)
        return;
    for (size_t i = n / 2; i-- > 0;)
        vkey_sift(k, i, n);
    for (size_t end = n - 1; end > 0; end--) {
        vkey t = k[0];
        k[0] = k[end];
        k[end] = t;
        vkey_sift(k, 0, end);
    }
}

/* Objects up to this many keys are checked pairwise, cheaper than sorting. */
#define SMALL_OBJECT 16

static bool vkey_equal(const vkey *a, const vkey *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->ptr, b->ptr, a->len) == 0);
}

/* Reports the earliest key of a closing object that repeats a previous one.
 * Big objects are sorted (O(n log n), immune to crafted hash collisions). */
static int check_duplicates(igw_json *j, vlevel *L)
{
    const vkey *dup = NULL;
    if (L->nkeys <= SMALL_OBJECT) {
        /* keys are in document order: the first one equal to an earlier one */
        for (size_t b = 1; b < L->nkeys && dup == NULL; b++)
            for (size_t a = 0; a < b; a++)
                if (vkey_equal(&L->keys[a], &L->keys[b])) {
                    dup = &L->keys[b];
                    break;
                }
    } else {
        vkey_sort(L->keys, L->nkeys);
        for (size_t i = 1; i < L->nkeys; i++) {
            const vkey *b = &L->keys[i];
            if (vkey_equal(&L->keys[i - 1], b) && (dup == NULL || b->off < dup->off))
                dup = b;
        }
    }
    if (dup == NULL)
        return 0;
    igw_json_push_key(j, dup->ptr, dup->len);
    return fail_at(j, j->start + dup->off, IGW_JERR_DUPLICATE, "duplicate object key");
}

/* Reads a member key and its ':' inside a free value; the key goes on the
 * error path and, in STRICT, into the level's key list. */
static int member_key(igw_json *j, vlevel *L, igw_json_profile profile)
{
    skip_ws(j);
    if (j->p >= j->end)
        return fail_eof(j);
    if (*j->p == '}')
        return igw_json_fail(j, IGW_JERR_SYNTAX, "trailing comma in object");
    if (*j->p != '"')
        return igw_json_fail(j, IGW_JERR_SYNTAX, "expected an object key");
    size_t off = (size_t)(j->p - j->start);
    igw_str k;
    if (read_string(j, &k, true) < 0)
        return -1;
    if (profile == IGW_JSON_STRICT) {
        if (L->nkeys == L->cap) {
            size_t cap = L->cap != 0 ? L->cap * 2 : 8;
            vkey *keys = NULL;
            if (cap <= SIZE_MAX / sizeof(vkey) && j->arena != NULL)
                keys = igw_arena_alloc(j->arena, cap * sizeof(vkey));
            if (keys == NULL)
                return fail_nomem(j);
            if (L->nkeys != 0)
                memcpy(keys, L->keys, L->nkeys * sizeof(vkey));
            L->keys = keys;
            L->cap = cap;
        }
        L->keys[L->nkeys++] = (vkey){k.ptr, k.len, off};
    }
    igw_json_push_key(j, k.ptr, k.len);
    skip_ws(j);
    if (j->p >= j->end)
        return fail_eof(j);
    if (*j->p != ':')
        return igw_json_fail(j, IGW_JERR_SYNTAX, "expected ':' after object key");
    j->p++;
    return 0;
}

/* Validates one value iteratively; containers open at most up to `limit`.
 * Each open container has one segment on the error path once its first
 * member has started. */
static int walk_value(igw_json *j, igw_json_profile profile, unsigned limit, vlevel *lv)
{
    unsigned level = 0, ready = 0; /* lv[0, ready) have initialized key arrays */
    for (;;) {
        /* a value starts here */
        skip_ws(j);
        if (j->p >= j->end)
            return fail_eof(j);
        uint8_t c = *j->p;
        if (c == '{' || c == '[') {
            if (j->depth >= limit)
                return igw_json_fail(j, IGW_JERR_DEPTH, "nesting too deep");
            j->depth++;
            j->p++;
            if (level == ready) {
                lv[level].keys = NULL;
                lv[level].cap = 0;
                ready++;
            }
            vlevel *L = &lv[level++];
            L->is_obj = c == '{';
            L->index = 0;
            L->nkeys = 0;
            skip_ws(j);
            if (j->p >= j->end)
                return fail_eof(j);
            if (*j->p != (L->is_obj ? '}' : ']')) {
                if (L->is_obj) {
                    if (member_key(j, L, profile) < 0)
                        return -1;
                } else {
                    igw_json_push_index(j, 0);
                }
                continue;
            }
            close_container(j); /* empty */
            level--;
        } else if (c == '"') {
            if (scan_string(j).close == NULL)
                return -1;
        } else if (c == '-' || is_digit(c)) {
            if (free_number(j, profile) < 0)
                return -1;
        } else if (literal_at(j, "true", 4) || literal_at(j, "null", 4)) {
            j->p += 4;
        } else if (literal_at(j, "false", 5)) {
            j->p += 5;
        } else {
            return fail_bad(j);
        }

        /* a value ended: close containers until one has another member */
        for (;;) {
            if (level == 0)
                return 0;
            vlevel *L = &lv[level - 1];
            skip_ws(j);
            if (j->p >= j->end)
                return fail_eof(j);
            c = *j->p;
            if (c == ',') {
                j->p++;
                igw_json_pop(j);
                if (L->is_obj) {
                    if (member_key(j, L, profile) < 0)
                        return -1;
                } else {
                    if (L->index == UINT32_MAX)
                        return igw_json_fail(j, IGW_JERR_SIZE, "too many array items");
                    skip_ws(j);
                    if (j->p < j->end && *j->p == ']')
                        return igw_json_fail(j, IGW_JERR_SYNTAX, "trailing comma in array");
                    igw_json_push_index(j, ++L->index);
                }
                break;
            }
            if (c != (L->is_obj ? '}' : ']'))
                return igw_json_fail(j, IGW_JERR_SYNTAX,
                                     L->is_obj ? "expected ',' or '}' after object member"
                                               : "expected ',' or ']' after array item");
            igw_json_pop(j);
            if (L->is_obj && profile == IGW_JSON_STRICT && check_duplicates(j, L) < 0)
                return -1;
            close_container(j);
            level--;
        }
    }
}

/* Replaces a failure caused by the byte window of igw_json_value with SIZE,
 * reported at the value itself. */
static int fail_size(igw_json *j, const uint8_t *vstart, unsigned nseg0)
{
    j->err = IGW_JERR_SIZE;
    j->reason = "value larger than allowed";
    j->err_offset = (size_t)(vstart - j->start);
    j->nseg = nseg0;
    format_path(j);
    return -1;
}

/* Depth: the value's own container counts as level 1, so max_depth 0 admits
 * scalars only and max_depth 1 admits {"a":1} but not {"a":{}}; the scanner's
 * own max_depth still applies on top.
 * Size: scanning is confined to a window of max_bytes + 1 bytes (one more to
 * see where a number at the limit ends). A failure at or past the limit means
 * the value could not have fitted, so it is reported as SIZE. */
int igw_json_value(igw_json *j, igw_json_profile profile, unsigned max_depth,
                   size_t max_bytes, igw_str *raw)
{
    if (raw != NULL) {
        raw->ptr = NULL;
        raw->len = 0;
    }
    if (j->err != IGW_JERR_NONE)
        return -1;
    skip_ws(j);
    const uint8_t *vstart = j->p, *real_end = j->end;
    unsigned depth0 = j->depth, nseg0 = j->nseg;
    unsigned limit = depth0 >= j->max_depth ? j->max_depth
                     : max_depth > j->max_depth - depth0 ? j->max_depth
                                                         : depth0 + max_depth;
    bool windowed = (size_t)(real_end - vstart) > max_bytes;
    if (windowed)
        j->end = vstart + max_bytes + 1;

    vlevel lv[IGW_JSON_MAX_DEPTH];
    bool nul_ok = j->nul_ok;
    j->nul_ok = profile == IGW_JSON_RFC8259;
    int rc = walk_value(j, profile, limit, lv);
    j->nul_ok = nul_ok;
    j->end = real_end;
    if (rc < 0) {
        if (windowed && j->err_offset >= (size_t)(vstart - j->start) + max_bytes)
            fail_size(j, vstart, nseg0);
        j->depth = depth0;
        j->nseg = nseg0;
        return -1;
    }
    if ((size_t)(j->p - vstart) > max_bytes) {
        j->nseg = nseg0;
        return fail_at(j, vstart, IGW_JERR_SIZE, "value larger than allowed");
    }
    if (raw != NULL) {
        raw->ptr = (const char *)vstart;
        raw->len = (size_t)(j->p - vstart);
    }
    return 0;
}

int igw_json_validate(const void *buf, size_t len, igw_json_profile profile,
                      unsigned max_depth, igw_arena *a, igw_json *j)
{
    igw_json_init(j, buf, len, a, max_depth);
    if (igw_json_value(j, profile, max_depth, SIZE_MAX, NULL) < 0)
        return -1;
    return igw_json_finish(j);
}
