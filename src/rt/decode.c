/* decode.c - see decode.h. */
#include "decode.h"

#include <string.h>

#if defined(__SSE2__) && !defined(IGW_DECODE_SSE2)
#define IGW_DECODE_SSE2 1 /* baseline on x86-64; the table loop is the portable path */
#endif
#if IGW_DECODE_SSE2
#include <emmintrin.h>
#endif

bool igw_format_canonical_id(const char *s, size_t n)
{
    static const char max[] = "9007199254740991";
    if (n == 0 || n > sizeof max - 1 || s[0] < '1' || s[0] > '9')
        return false;
    for (size_t i = 1; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    /* Same length as the bound: digit strings compare like numbers. */
    return n < sizeof max - 1 || memcmp(s, max, n) <= 0;
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_alnum(char c) { return is_alpha(c) || (c >= '0' && c <= '9'); }

bool igw_format_bcp47(const char *s, size_t n)
{
    size_t i = 0, run = 0;
    while (i < n && is_alpha(s[i]))
        i++;
    if (i < 2 || i > 8)
        return false;
    while (i < n) {
        if (s[i++] != '-')
            return false;
        for (run = 0; i < n && is_alnum(s[i]); i++)
            run++;
        if (run < 1 || run > 8)
            return false;
    }
    return true;
}

/* Decodes the code point at s[i]. Callers pass valid UTF-8; a sequence cut
 * short by the end `n` still yields a value instead of reading past it. */
static uint32_t code_point(const unsigned char *s, size_t i, size_t n)
{
    size_t len = s[i] < 0x80 ? 1 : s[i] < 0xE0 ? 2 : s[i] < 0xF0 ? 3 : 4;
    if (i + len > n)
        return 0xFFFD;
    if (len == 1)
        return s[i];
    if (len == 2)
        return ((uint32_t)(s[i] & 0x1F) << 6) | (s[i + 1] & 0x3F);
    if (len == 3)
        return ((uint32_t)(s[i] & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    return ((uint32_t)(s[i] & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
           ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
}

/* Unicode White_Space (the set ECMAScript's \s matches, plus U+0085). */
static bool is_space(uint32_t c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000 || c == 0xFEFF;
}

/* Byte classes of the identifier rule: 1 refused anywhere (C0, DEL,
 * wildcards), 2 lead byte 0xC2 (C1 controls follow it), 4 ASCII whitespace
 * (refused at the edges only, and already refused as C0 except space). */
static const unsigned char ident_class[256] = {
    [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1, [0x07] = 1, [0x08] = 1,
    [0x09] = 5, [0x0a] = 5, [0x0b] = 5, [0x0c] = 5, [0x0d] = 5, [0x0e] = 1, [0x0f] = 1, [0x10] = 1,
    [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1, [0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1,
    [0x19] = 1, [0x1a] = 1, [0x1b] = 1, [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1, [0x00] = 1,
    [' '] = 4, ['*'] = 1, ['?'] = 1, ['%'] = 1, ['+'] = 1, ['#'] = 1, [0x7f] = 1, [0xc2] = 2,
};

static bool identifier_edges(const unsigned char *s, size_t n);

/* The rule byte at a time: the portable path, and short strings. */
static bool identifier_portable(const unsigned char *s, size_t n)
{
    unsigned seen = 0, any = 0;
    for (size_t i = 0; i < n; i++) {
        seen |= ident_class[s[i]];
        any |= s[i];
    }
    if (seen & 1)
        return false;
    if (!(any & 0x80)) /* ASCII: no C1, and the only whitespace left is the space */
        return s[0] != ' ' && s[n - 1] != ' ';
    if (seen & 2) /* rare: look for C1 controls U+0080..U+009F (C2 80..C2 9F) */
        for (size_t i = 0; i + 1 < n; i++)
            if (s[i] == 0xC2 && s[i + 1] >= 0x80 && s[i + 1] <= 0x9F)
                return false;
    return identifier_edges(s, n);
}

/* No whitespace at the edges (n > 0): ASCII is decided by the table; only
 * non-ASCII needs decoding. */
static bool identifier_edges(const unsigned char *s, size_t n)
{
    size_t last = n - 1;
    while (last > 0 && (s[last] & 0xC0) == 0x80)
        last--;
    if ((s[0] < 0x80 ? ident_class[s[0]] & 4 : is_space(code_point(s, 0, n))) ||
        (s[last] < 0x80 ? ident_class[s[last]] & 4 : is_space(code_point(s, last, n))))
        return false;
    return true;
}

#if IGW_DECODE_SSE2
/* Lanes flagged over the blocks of a string; turned into bit masks once. */
typedef struct ident_masks {
    __m128i bad; /* refused bytes: C0, DEL, * ? % + # */
    __m128i c2;  /* the C1 lead byte 0xC2 */
} ident_masks;

static inline void ident_block(ident_masks *m, __m128i x)
{
    const __m128i c20 = _mm_set1_epi8(0x1F), del = _mm_set1_epi8(0x7F), qm = _mm_set1_epi8('?');
    const __m128i pct = _mm_set1_epi8('%'), hash = _mm_set1_epi8('#'), c2 = _mm_set1_epi8((char)0xC2);
    const __m128i fe = _mm_set1_epi8((char)0xFE), star = _mm_set1_epi8('*'); /* '*' 0x2A, '+' 0x2B */
    __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(x, c20), x); /* x <= 0x1F */
    __m128i bad = _mm_or_si128(_mm_or_si128(ctl, _mm_cmpeq_epi8(x, del)),
                               _mm_or_si128(_mm_cmpeq_epi8(_mm_and_si128(x, fe), star),
                                            _mm_or_si128(_mm_cmpeq_epi8(x, qm), _mm_cmpeq_epi8(x, pct))));
    m->bad = _mm_or_si128(m->bad, _mm_or_si128(bad, _mm_cmpeq_epi8(x, hash)));
    m->c2 = _mm_or_si128(m->c2, _mm_cmpeq_epi8(x, c2));
}
#endif

bool igw_format_identifier(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (n == 0)
        return true; /* emptiness is the length rule's business */
#if IGW_DECODE_SSE2
    if (n >= 4) {
        /* Every byte is tested once or twice, never outside [0, n): short
         * strings are covered by two overlapping loads, long ones by 16-byte
         * blocks and a last block that overlaps the one before. Each test is
         * "some byte is ...", so testing a byte twice changes nothing. */
        ident_masks m = {_mm_setzero_si128(), _mm_setzero_si128()};
        if (n < 8) {
            uint32_t a, b;
            memcpy(&a, s, 4);
            memcpy(&b, s + n - 4, 4);
            ident_block(&m, _mm_set_epi32((int)a, (int)b, (int)a, (int)b));
        } else if (n < 16) {
            ident_block(&m, _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)s),
                                               _mm_loadl_epi64((const __m128i *)(s + n - 8))));
        } else {
            size_t i = 0;
            for (; i + 16 <= n; i += 16)
                ident_block(&m, _mm_loadu_si128((const __m128i *)(s + i)));
            if (i < n)
                ident_block(&m, _mm_loadu_si128((const __m128i *)(s + n - 16)));
        }
        if (_mm_movemask_epi8(m.bad))
            return false;
        /* Without the C1 lead byte no C1 control can occur: only the edges
         * are left. An ASCII edge can only be the space (the other ASCII
         * whitespace is C0, refused above); non-ASCII ones need decoding. */
        if (!_mm_movemask_epi8(m.c2)) {
            if (s[0] < 0x80 && s[n - 1] < 0x80)
                return s[0] != ' ' && s[n - 1] != ' ';
            return identifier_edges(s, n);
        }
    }
#endif
    return identifier_portable(s, n);
}

int igw_decode_text(igw_json *j, igw_str v)
{
    /* Printable ASCII, what path segments and these headers carry, in one
     * pass; anything else takes the two checks below, the control check
     * from the first byte that was not printable. */
    size_t i = 0;
    while (i < v.len && (unsigned char)v.ptr[i] - 0x20u < 0x5Fu) /* 0x20..0x7E */
        i++;
    if (i == v.len)
        return 0;
    if (!igw_json_utf8_valid(v.ptr, v.len))
        return igw_json_fail(j, IGW_JERR_UTF8, "not valid UTF-8");
    for (; i < v.len; i++) {
        unsigned char c = (unsigned char)v.ptr[i];
        if (c < 0x20 || c == 0x7f)
            return igw_json_fail(j, IGW_JERR_FORMAT, "control character");
    }
    return 0;
}

int igw_decode_string_format(igw_json *j, igw_str s, int format)
{
    switch (format) {
    case IGW_FORMAT_CANONICAL_ID:
        if (!igw_format_canonical_id(s.ptr, s.len))
            return igw_json_fail(j, IGW_JERR_FORMAT,
                                 "expected a canonical decimal id 1..9007199254740991 (no sign, leading zero or space)");
        break;
    case IGW_FORMAT_BCP47:
        if (!igw_format_bcp47(s.ptr, s.len))
            return igw_json_fail(j, IGW_JERR_FORMAT, "expected a BCP 47 language tag");
        break;
    case IGW_FORMAT_IDENTIFIER:
        if (!igw_format_identifier(s.ptr, s.len))
            return igw_json_fail(j, IGW_JERR_FORMAT,
                                 "identifier has a wildcard, a control character or surrounding whitespace");
        break;
    default:
        break;
    }
    return 0;
}

int igw_decode_free(igw_json *j, bool object, unsigned max_depth, size_t max_bytes, igw_str *raw)
{
    int c = igw_json_peek(j);
    if (c == 'n' || (object && c != '{'))
        return igw_json_object_begin(j); /* the field's own null (never accepted) or wrong type */
    unsigned nseg = j->nseg;
    if (igw_json_value(j, IGW_JSON_STRICT, max_depth, max_bytes, raw) == 0)
        return 0;
    if (j->err == IGW_JERR_DEPTH || j->err == IGW_JERR_SIZE) {
        /* A bound of the field as a whole: point at the field, not inside it
         * (back to the segments of entry, none in generated decoders, whose
         * callers prepend the field's own path as the failure propagates). */
        igw_json_errkind kind = j->err;
        const char *reason = j->reason;
        j->nseg = nseg;
        j->err = IGW_JERR_NONE;
        igw_json_fail(j, kind, reason);
    }
    return -1;
}

void *igw_decode_grow(igw_json *j, void *v, uint32_t n, uint32_t *cap, uint32_t max, size_t size)
{
    uint32_t want = *cap ? (*cap > max / 2 ? max : *cap * 2) : (max < 8 ? max : 8);
    if (want <= n) /* callers stop at max first; keep the arithmetic honest anyway */
        want = n + 1;
    void *nv = igw_arena_alloc(j->arena, (size_t)want * size);
    if (!nv) {
        igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
        return NULL;
    }
    if (n)
        memcpy(nv, v, (size_t)n * size);
    *cap = want;
    return nv;
}

static uint32_t str_hash(igw_str s)
{
    /* Multiply-xor over 8-byte words: the items are short ids, not
     * adversarial keys of a long-lived table (a flood of collisions costs
     * at most the pairwise compares of one bounded array). */
    uint64_t h = 0x9e3779b97f4a7c15u ^ s.len;
    size_t i = 0;
    for (; i + 8 <= s.len; i += 8) {
        uint64_t w;
        memcpy(&w, s.ptr + i, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9u;
        h ^= h >> 31;
    }
    if (i < s.len) {
        uint64_t w = 0;
        memcpy(&w, s.ptr + i, s.len - i);
        h = (h ^ w) * 0xbf58476d1ce4e5b9u;
        h ^= h >> 31;
    }
    h ^= h >> 33; /* the last word's high bytes reach the low bits (the mask) */
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    return (uint32_t)h;
}

/* Finds v[i] in the set: true when an equal item is there; else *at is
 * its empty slot. */
static bool set_find(const igw_decode_set *set, const igw_str *v, uint32_t i, uint32_t *at)
{
    for (uint32_t k = str_hash(v[i]) & set->mask;; k = (k + 1) & set->mask) {
        uint32_t s = set->slot[k];
        if (!s) {
            *at = k;
            return false;
        }
        if (igw_str_eq(v[s - 1], v[i].ptr, v[i].len))
            return true;
    }
}

/* Makes room for at least `want` items (load at most 1/2): a new table,
 * the earlier items re-added (they are known distinct). */
static int set_grow(igw_json *j, igw_decode_set *set, const igw_str *v, uint32_t want)
{
    uint32_t slots = 32;
    while (slots < 2 * want)
        slots *= 2;
    uint32_t *t = igw_arena_alloc(j->arena, (size_t)slots * sizeof *t);
    if (!t)
        return igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
    memset(t, 0, (size_t)slots * sizeof *t);
    set->slot = t;
    set->mask = slots - 1;
    for (uint32_t i = 0; i < set->n; i++) {
        uint32_t at;
        (void)set_find(set, v, i, &at);
        t[at] = i + 1;
    }
    return 0;
}

int igw_decode_unique_str(igw_json *j, igw_decode_set *set, const igw_str *v, uint32_t n)
{
    if (n < IGW_DECODE_SET_MIN) {
        for (uint32_t u = 0; u < n; u++)
            if (igw_str_eq(v[u], v[n].ptr, v[n].len))
                return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate item");
        set->n = n + 1;
        return 0;
    }
    if (2 * (n + 1) > set->mask + 1 && set_grow(j, set, v, n + 1))
        return -1;
    uint32_t at;
    if (set_find(set, v, n, &at))
        return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate item");
    set->slot[at] = n + 1;
    set->n = n + 1;
    return 0;
}

int igw_decode_hold(igw_json *j, igw_str *raw)
{
    if (igw_json_peek(j) != '{') {
        igw_json probe = *j; /* the object's own refusal, without moving j */
        (void)igw_json_object_begin(&probe);
        j->err = probe.err;
        j->reason = probe.reason;
        j->err_offset = probe.err_offset;
        memcpy(j->path, probe.path, sizeof j->path);
        return -1;
    }
    size_t left = (size_t)(j->end - j->p);
    unsigned depth = j->max_depth > j->depth ? j->max_depth - j->depth : 0;
    return igw_json_value(j, IGW_JSON_RFC8259, depth, left, raw);
}

int igw_decode_held(igw_json *j, igw_str raw, const char *key, size_t klen, unsigned depth,
                    int (*fn)(igw_json *, void *), void *arg)
{
    igw_json sub;
    igw_json_init(&sub, raw.ptr, raw.len, j->arena, j->max_depth);
    sub.start = j->start; /* offsets stay relative to the whole body */
    sub.depth = depth;
    /* Paths are built lazily (json.h): the held value's own failure path
     * starts empty, gets the field's key here, and the callers up the
     * chain prepend theirs as the failure propagates out of them. */
    if (fn(&sub, arg) == 0 && igw_json_finish(&sub) == 0)
        return 0;
    igw_json_prefix_key(&sub, key, klen);
    j->err = sub.err;
    j->reason = sub.reason;
    j->err_offset = sub.err_offset;
    memcpy(j->path, sub.path, sizeof j->path);
    return -1;
}
