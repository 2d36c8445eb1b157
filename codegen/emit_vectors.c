/* emit_vectors.c - conformance vectors: generated/conformance/<route>.jsonl.
 *
 * One JSONL file per route with a body (multipart routes are skipped). The
 * first line names the generator; every other line is one request and the
 * exact outcome the strict decoder must give it: HTTP status, envelope code
 * and the JSON Pointer of the offending value ("" for the whole body).
 *
 * Nothing is written per route by hand. For each route the generator
 *   1. builds valid "base" bodies from the schema: a minimal and a maximal
 *      body for every combination of the values rules depend on (switch
 *      discriminators, enum/bool/string fields named in conditions);
 *   2. walks the bases to find every object and value ("sites", keyed by
 *      JSON Pointer, field and type) and derives one-defect mutations per
 *      site: bounds, formats, JSON types, nulls, keys, rules, free-JSON limits;
 *   3. computes every expectation by simulating the decoder contract on the
 *      mutated tree (sim_* below), never by writing outcomes down.
 * Each mutation also names the outcome it aims at; it is applied to the
 * first base (in base order) where the simulation agrees, and otherwise to
 * the first base that admits it, with the simulated outcome (run with
 * IGW_GEN_VERBOSE=1 to list those cases).
 *
 * Decoder contract simulated (shared with generated/api.c):
 *   - the body cap is checked on raw bytes first; then one JSON object of
 *     the body type, whitespace (SP HT CR LF) around tokens, nothing after;
 *   - members in document order, each value decoded when met: unknown key,
 *     duplicate key (after unescaping), reserved field, null, wrong type and
 *     any error inside the value point at the member; a switch value whose
 *     discriminator has not been seen yet is decoded after the object;
 *   - after '}': missing required fields (declaration order), then deferred
 *     switch values, then the object's rules in order (require: first
 *     missing listed field; forbid: first present one; check: its first
 *     named field);
 *   - free JSON values: depth and size errors point at the field, strict
 *     profile errors (duplicate key, unsafe integer, bad number or string)
 *     at the offending value inside. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "util.h"

#define DOC_MAX_DEPTH 64 /* whole-document nesting limit of the decoder */
#define MAX_VARIANTS 256 /* bound on rule-value combinations per route */
#define FIX_ROUNDS 64    /* bound on rule fix-up rounds while building a body */

enum { MODE_MIN, MODE_MAX };

/* ---- data ---------------------------------------------------------------- */

typedef enum jv_kind { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ } jv_kind;

typedef struct jv jv;

/* Object member or array item (key NULL). */
typedef struct jv_mem {
    const char *key;  /* decoded key */
    const char *kraw; /* exact key text with quotes, or NULL to escape `key` */
    jv *val;
} jv_mem;

/* A JSON value as the body builder sees it. Strings keep their decoded bytes
 * and, when the test needs a particular spelling, the exact source text. */
struct jv {
    jv_kind kind;
    bool b;          /* JV_BOOL */
    bool bad;        /* JV_STR: refused by any string decoder (UTF-8, escape, raw control) */
    const char *s;   /* JV_STR: decoded bytes; JV_NUM: number text */
    size_t len;
    const char *raw; /* JV_STR: exact text with quotes, written instead of escaping `s` */
    jv_mem *m;       /* JV_OBJ members, JV_ARR items */
    int n, cap;
};

/* A forced value: the field at `path` takes `value` (enum, bool or string literal). */
typedef struct ovr {
    const char *path, *value;
} ovr;

/* A combination of forced values, from which a minimal and a maximal body are built. */
typedef struct variant {
    ovr **ovr; /* sorted by path */
    int n;
    const char *key;  /* canonical form, for de-duplication */
    const char *desc; /* "method=interaction.open,purpose=ipcTalk" */
} variant;

typedef struct base {
    jv *root;
    const variant *var;
    int mode;
} base;

typedef enum sitekind { SITE_VALUE, SITE_OBJECT } sitekind;

/* A place in the bodies that gets its own vectors. */
typedef struct site {
    sitekind kind;
    const char *path;       /* JSON Pointer */
    const char *label;      /* command.params[interaction.open].purpose; "body" for the root */
    const igw_field *field; /* NULL for array items and the root */
    igw_type *type;         /* resolved */
    const char *seed;       /* name sample strings are built from */
    unsigned depth;         /* containers open around the value */
    int *bases;             /* indexes into gen.bases that contain the site, ascending */
    int nbases, capbases;
    jv **mini;              /* per entry of bases: the base reduced around the site, lazily */
} site;

typedef struct body_rec {
    size_t len;
    uint64_t hash;
    const char *text;
} body_rec;

/* Outcome of a request: error class (the OK class for success) and pointer. */
typedef struct res {
    const igw_error *e;
    const char *path;
} res;

/* Generator state of one route; every allocation lives in `mem` until the route is written. */
typedef struct gen {
    const igw_schema *s;
    igw_route *r;
    igw_vec mem;
    const igw_error *ok, *decode, *reserved, *cap;
    const char *req_path;
    igw_out out;
    igw_vec bodies;   /* body_rec* */
    igw_vec ids;      /* const char* */
    igw_vec variants; /* variant* */
    igw_vec bases;    /* base* */
    igw_vec sites;    /* site* */
    igw_vec fmt_done; /* igw_type*: string types that got the full format battery */
    int mismatches;
    bool verbose;
} gen;

/* ---- allocation ------------------------------------------------------------ */

static void *galloc(gen *g, size_t n)
{
    void *p = igw_xcalloc(1, n);
    igw_vec_push(&g->mem, p);
    return p;
}

static char *gstrndup(gen *g, const char *s, size_t n)
{
    char *p = galloc(g, n + 1);
    if (n)
        memcpy(p, s, n);
    return p;
}

static char *gstrdup(gen *g, const char *s) { return gstrndup(g, s, strlen(s)); }

static char *gprintf(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *gprintf(gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *p = galloc(g, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* a (an bytes) followed by b (bn bytes), NUL-terminated. */
static char *gcat(gen *g, const char *a, size_t an, const char *b, size_t bn)
{
    char *p = galloc(g, an + bn + 1);
    if (an)
        memcpy(p, a, an);
    if (bn)
        memcpy(p + an, b, bn);
    return p;
}

static const char *out_str(const igw_out *o) { return o->buf ? o->buf : ""; }

static void out_trunc(igw_out *o, size_t len)
{
    o->len = len;
    if (o->buf)
        o->buf[len] = '\0';
}

/* Appends "/" and the RFC 6901 escaped key; returns the previous length. */
static size_t ptr_push_key(igw_out *o, const char *key)
{
    size_t old = o->len;
    igw_out_write(o, "/", 1);
    for (const char *p = key; *p; p++) {
        if (*p == '~')
            igw_out_puts(o, "~0");
        else if (*p == '/')
            igw_out_puts(o, "~1");
        else
            igw_out_write(o, p, 1);
    }
    return old;
}

static size_t ptr_push_index(igw_out *o, int i)
{
    size_t old = o->len;
    igw_out_printf(o, "/%d", i);
    return old;
}

/* parent + "/" + escaped key, as a new string. */
static const char *child_path(gen *g, const char *parent, const char *key)
{
    igw_out o;
    igw_out_init(&o);
    igw_out_puts(&o, parent);
    ptr_push_key(&o, key);
    const char *r = gstrdup(g, out_str(&o));
    igw_out_free(&o);
    return r;
}

/* ---- UTF-8 and base64 ---------------------------------------------------- */

/* Strict UTF-8: no overlongs, no encoded surrogates, at most U+10FFFF. */
static bool utf8_ok(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp, min;
        if (c >= 0xc2 && c <= 0xdf) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (n - i <= k)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

static void out_base64(igw_out *o, const char *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        char q[4] = {tab[v >> 18 & 63], tab[v >> 12 & 63], i + 1 < n ? tab[v >> 6 & 63] : '=',
                     i + 2 < n ? tab[v & 63] : '='};
        igw_out_write(o, q, 4);
    }
}

/* ---- JSON value tree -------------------------------------------------------- */

static jv *jv_new(gen *g, jv_kind k)
{
    jv *v = galloc(g, sizeof *v);
    v->kind = k;
    return v;
}

static jv *jv_null(gen *g) { return jv_new(g, JV_NULL); }

static jv *jv_bool(gen *g, bool b)
{
    jv *v = jv_new(g, JV_BOOL);
    v->b = b;
    return v;
}

static jv *jv_num(gen *g, const char *text)
{
    jv *v = jv_new(g, JV_NUM);
    v->len = strlen(text);
    v->s = gstrndup(g, text, v->len);
    return v;
}

static jv *jv_int(gen *g, int64_t x)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRId64, x);
    return jv_num(g, b);
}

static jv *jv_strn(gen *g, const char *s, size_t n)
{
    jv *v = jv_new(g, JV_STR);
    v->s = gstrndup(g, s, n);
    v->len = n;
    v->bad = !utf8_ok(s, n) || memchr(s, '\0', n) != NULL; /* the scanner refuses \u0000 */
    return v;
}

static jv *jv_str(gen *g, const char *s) { return jv_strn(g, s, strlen(s)); }

/* A string spelled exactly `raw` (quotes included) that decodes to s/n. */
static jv *jv_rawstr(gen *g, const char *raw, const char *s, size_t n, bool bad)
{
    jv *v = jv_strn(g, s, n);
    v->raw = gstrdup(g, raw);
    v->bad = bad;
    return v;
}

static void jv_push(gen *g, jv *c, const char *key, const char *kraw, jv *val)
{
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 4;
        jv_mem *m = galloc(g, (size_t)cap * sizeof *m);
        if (c->n)
            memcpy(m, c->m, (size_t)c->n * sizeof *m);
        c->m = m;
        c->cap = cap;
    }
    c->m[c->n++] = (jv_mem){key, kraw, val};
}

static void jv_insert(gen *g, jv *c, int at, jv_mem mem)
{
    jv_push(g, c, mem.key, mem.kraw, mem.val);
    memmove(c->m + at + 1, c->m + at, (size_t)(c->n - 1 - at) * sizeof *c->m);
    c->m[at] = mem;
}

static void jv_remove(jv *c, int i)
{
    memmove(c->m + i, c->m + i + 1, (size_t)(c->n - i - 1) * sizeof *c->m);
    c->n--;
}

/* Position of the first member named `key`, or -1. */
static int jv_index(const jv *obj, const char *key)
{
    for (int i = 0; i < obj->n; i++)
        if (strcmp(obj->m[i].key, key) == 0)
            return i;
    return -1;
}

static jv *jv_clone(gen *g, const jv *v)
{
    jv *c = jv_new(g, v->kind);
    *c = *v;
    if (v->kind == JV_OBJ || v->kind == JV_ARR) {
        c->m = NULL;
        c->n = c->cap = 0;
        for (int i = 0; i < v->n; i++)
            jv_push(g, c, v->m[i].key, v->m[i].kraw, jv_clone(g, v->m[i].val));
    }
    return c;
}

static bool jv_equal(const jv *a, const jv *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case JV_NULL: return true;
    case JV_BOOL: return a->b == b->b;
    case JV_NUM:
    case JV_STR: return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
    case JV_ARR:
    case JV_OBJ:
        if (a->n != b->n)
            return false;
        for (int i = 0; i < a->n; i++)
            if ((a->kind == JV_OBJ && strcmp(a->m[i].key, b->m[i].key) != 0) ||
                !jv_equal(a->m[i].val, b->m[i].val))
                return false;
        return true;
    }
    return false;
}

static void write_str(igw_out *o, const char *s, size_t n)
{
    igw_out_write(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': igw_out_puts(o, "\\\""); break;
        case '\\': igw_out_puts(o, "\\\\"); break;
        case '\n': igw_out_puts(o, "\\n"); break;
        case '\r': igw_out_puts(o, "\\r"); break;
        case '\t': igw_out_puts(o, "\\t"); break;
        case '\b': igw_out_puts(o, "\\b"); break;
        case '\f': igw_out_puts(o, "\\f"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                igw_out_printf(o, "\\u%04x", c);
            else
                igw_out_write(o, &c, 1);
        }
    }
    igw_out_write(o, "\"", 1);
}

/* Compact JSON text of v. */
static void jv_write(igw_out *o, const jv *v)
{
    switch (v->kind) {
    case JV_NULL: igw_out_puts(o, "null"); break;
    case JV_BOOL: igw_out_puts(o, v->b ? "true" : "false"); break;
    case JV_NUM: igw_out_write(o, v->s, v->len); break;
    case JV_STR:
        if (v->raw)
            igw_out_puts(o, v->raw);
        else
            write_str(o, v->s, v->len);
        break;
    case JV_ARR:
    case JV_OBJ:
        igw_out_write(o, v->kind == JV_OBJ ? "{" : "[", 1);
        for (int i = 0; i < v->n; i++) {
            if (i)
                igw_out_write(o, ",", 1);
            if (v->kind == JV_OBJ) {
                if (v->m[i].kraw)
                    igw_out_puts(o, v->m[i].kraw);
                else
                    write_str(o, v->m[i].key, strlen(v->m[i].key));
                igw_out_write(o, ":", 1);
            }
            jv_write(o, v->m[i].val);
        }
        igw_out_write(o, v->kind == JV_OBJ ? "}" : "]", 1);
        break;
    }
}

static char *jv_text(gen *g, const jv *v, size_t *len)
{
    igw_out o;
    igw_out_init(&o);
    jv_write(&o, v);
    *len = o.len;
    char *r = gstrndup(g, out_str(&o), o.len);
    igw_out_free(&o);
    return r;
}

/* Does the pointer segment [p, e) (RFC 6901 escaped) equal key? */
static bool seg_eq(const char *p, const char *e, const char *key)
{
    for (; p < e; p++, key++) {
        char c = *p;
        if (c == '~' && p + 1 < e) {
            c = p[1] == '1' ? '/' : '~';
            p++;
        }
        if (*key != c)
            return false;
    }
    return *key == '\0';
}

/* The slot holding the value at `ptr` under *root, or NULL; *parent and *idx
 * receive its container and position (NULL and -1 for the root). */
static jv **jv_find(jv **root, const char *ptr, jv **parent, int *idx)
{
    jv **slot = root, *par = NULL;
    int at = -1;
    const char *p = ptr;
    while (*p == '/') {
        p++;
        const char *e = strchr(p, '/');
        if (!e)
            e = p + strlen(p);
        jv *c = *slot;
        int k = -1;
        if (c->kind == JV_OBJ) {
            for (int i = 0; i < c->n && k < 0; i++)
                if (seg_eq(p, e, c->m[i].key))
                    k = i;
        } else if (c->kind == JV_ARR) {
            char *end;
            long i = strtol(p, &end, 10);
            if (end == e && i >= 0 && i < c->n)
                k = (int)i;
        }
        if (k < 0)
            return NULL;
        par = c;
        at = k;
        slot = &c->m[k].val;
        p = e;
    }
    if (parent)
        *parent = par;
    if (idx)
        *idx = at;
    return slot;
}

/* ---- strict scalar rules ---------------------------------------------------- */

/* Strict integer in [min, max]: -?(0|[1-9][0-9]*), "-0" only when min < 0, |x| <= 2^53-1. */
static bool int_ok(const char *t, size_t n, int64_t min, int64_t max, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && t[i] == '-') {
        neg = true;
        i++;
    }
    if (i >= n)
        return false;
    int64_t mag = 0;
    if (t[i] == '0') {
        if (i + 1 != n || (neg && min >= 0))
            return false;
    } else if (t[i] >= '1' && t[i] <= '9') {
        if (n - i > 16)
            return false;
        for (; i < n; i++) {
            if (t[i] < '0' || t[i] > '9')
                return false;
            mag = mag * 10 + (t[i] - '0');
        }
        if (mag > IGW_SAFE_MAX)
            return false;
    } else {
        return false;
    }
    int64_t v = neg ? -mag : mag;
    if (v < min || v > max)
        return false;
    if (out)
        *out = v;
    return true;
}

/* A number inside a free value (strict profile): integers within the safe
 * range, other numbers finite doubles that do not underflow to zero. */
static bool free_num_ok(const char *t, size_t n)
{
    size_t i = 0;
    if (i < n && t[i] == '-')
        i++;
    size_t d0 = i;
    if (i < n && t[i] == '0')
        i++;
    else if (i < n && t[i] >= '1' && t[i] <= '9')
        while (i < n && t[i] >= '0' && t[i] <= '9')
            i++;
    else
        return false;
    bool integral = true, nonzero = false;
    for (size_t k = d0; k < i; k++)
        nonzero |= t[k] != '0';
    if (i < n && t[i] == '.') {
        integral = false;
        size_t f0 = ++i;
        while (i < n && t[i] >= '0' && t[i] <= '9')
            nonzero |= t[i++] != '0';
        if (i == f0)
            return false;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        integral = false;
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        size_t e0 = i;
        while (i < n && t[i] >= '0' && t[i] <= '9')
            i++;
        if (i == e0)
            return false;
    }
    if (i != n)
        return false;
    if (integral)
        return int_ok(t, n, -IGW_SAFE_MAX, IGW_SAFE_MAX, NULL) || (n == 2 && t[0] == '-' && t[1] == '0');
    char buf[128];
    if (n >= sizeof buf)
        return false;
    memcpy(buf, t, n);
    buf[n] = '\0';
    double d = strtod(buf, NULL);
    return isfinite(d) && !(d == 0 && nonzero);
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_alnum(char c) { return is_alpha(c) || (c >= '0' && c <= '9'); }

/* ^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$ */
static bool bcp47_ok(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_alpha(s[i]))
        i++;
    if (i < 2 || i > 8)
        return false;
    while (i < n) {
        if (s[i++] != '-')
            return false;
        size_t k = i;
        while (i < n && is_alnum(s[i]))
            i++;
        if (i - k < 1 || i - k > 8)
            return false;
    }
    return true;
}

/* Unicode White_Space encoded as UTF-8 at s[0..n) start (lead) or end. */
static const char *const unicode_spaces[] = {
    " ", "\t", "\n", "\v", "\f", "\r", "\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x81",
    "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\x84", "\xe2\x80\x85", "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88",
    "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80",
    "\xef\xbb\xbf",
};

static bool edge_space(const char *s, size_t n, bool lead)
{
    for (size_t i = 0; i < sizeof unicode_spaces / sizeof unicode_spaces[0]; i++) {
        size_t k = strlen(unicode_spaces[i]);
        if (k <= n && memcmp(lead ? s : s + n - k, unicode_spaces[i], k) == 0)
            return true;
    }
    return false;
}

static bool format_ok(igw_format f, const char *s, size_t n)
{
    switch (f) {
    case IGW_FMT_NONE: return true;
    case IGW_FMT_CANONICAL_ID:
        if (n == 0 || n > 16 || s[0] < '1' || s[0] > '9')
            return false;
        return int_ok(s, n, 1, IGW_SAFE_MAX, NULL);
    case IGW_FMT_BCP47: return bcp47_ok(s, n);
    case IGW_FMT_IDENTIFIER:
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c < 0x20 || c == 0x7f || strchr("*?%+#", c) != NULL)
                return false;
            if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 && (unsigned char)s[i + 1] <= 0x9f)
                return false; /* C1 controls */
        }
        return n == 0 || (!edge_space(s, n, true) && !edge_space(s, n, false));
    }
    return false;
}

/* ---- rules ----------------------------------------------------------------- */

static bool lit_match(const jv *v, const char *lit)
{
    if (v->kind == JV_STR)
        return v->len == strlen(lit) && memcmp(v->s, lit, v->len) == 0;
    if (v->kind == JV_BOOL)
        return strcmp(lit, v->b ? "true" : "false") == 0;
    return false;
}

static bool any_match(const jv *v, const igw_vec *lits)
{
    for (int i = 0; i < lits->n; i++)
        if (lit_match(v, IGW_VEC_AT(*lits, const char, i)))
            return true;
    return false;
}

/* vals: a field's value by field index, NULL when absent. */
static bool cond_eval(const igw_cond *c, jv **vals)
{
    switch (c->op) {
    case IGW_C_AND: return cond_eval(c->a, vals) && cond_eval(c->b, vals);
    case IGW_C_OR: return cond_eval(c->a, vals) || cond_eval(c->b, vals);
    case IGW_C_NOT: return !cond_eval(c->a, vals);
    case IGW_C_PRESENT: return vals[c->fref->index] != NULL;
    case IGW_C_EQ:
    case IGW_C_IN: return vals[c->fref->index] && any_match(vals[c->fref->index], &c->values);
    case IGW_C_NE: return !vals[c->fref->index] || !any_match(vals[c->fref->index], &c->values);
    }
    return false;
}

static int64_t num_of(const jv *v) { return strtoll(v->s, NULL, 10); }

static bool operand_present(const igw_operand *o, jv **vals)
{
    return o->is_const || (vals[o->fa->index] && (!o->fb || vals[o->fb->index]));
}

static int64_t operand_value(const igw_operand *o, jv **vals)
{
    if (o->is_const)
        return o->value;
    int64_t v = num_of(vals[o->fa->index]);
    return o->fb ? v - num_of(vals[o->fb->index]) : v;
}

static int64_t check_diff(const igw_rule *r, jv **vals)
{
    return operand_value(&r->lhs, vals) - operand_value(&r->rhs, vals);
}

static bool cmp_holds(igw_cmp c, int64_t d)
{
    switch (c) {
    case IGW_CMP_LT: return d < 0;
    case IGW_CMP_LE: return d <= 0;
    case IGW_CMP_GT: return d > 0;
    case IGW_CMP_GE: return d >= 0;
    }
    return false;
}

/* The field a failing check points at. */
static const igw_field *check_target(const igw_rule *r) { return r->lhs.is_const ? r->rhs.fa : r->lhs.fa; }

/* Index of the first rule of t that fails, *at = the field it points at; -1 when all hold. */
static int first_failing_rule(const igw_type *t, jv **vals, const igw_field **at)
{
    for (int k = 0; k < t->rules.n; k++) {
        const igw_rule *r = IGW_VEC_AT(t->rules, igw_rule, k);
        if (r->kind == IGW_R_CHECK) {
            if (operand_present(&r->lhs, vals) && operand_present(&r->rhs, vals) &&
                !cmp_holds(r->cmp, check_diff(r, vals))) {
                *at = check_target(r);
                return k;
            }
            continue;
        }
        if (r->when && !cond_eval(r->when, vals))
            continue;
        for (int i = 0; i < r->frefs.n; i++) {
            const igw_field *f = IGW_VEC_AT(r->frefs, igw_field, i);
            bool present = vals[f->index] != NULL;
            if (r->kind == IGW_R_REQUIRE ? !present : present) {
                *at = f;
                return k;
            }
        }
    }
    return -1;
}

/* Coefficient of f in lhs - rhs. */
static int coef_of(const igw_rule *r, const igw_field *f)
{
    int k = 0;
    if (!r->lhs.is_const)
        k += (r->lhs.fa == f) - (r->lhs.fb == f);
    if (!r->rhs.is_const)
        k += (r->rhs.fb == f) - (r->rhs.fa == f);
    return k;
}

/* Fields named by a check, later operand first (the natural one to move). */
static int check_fields(const igw_rule *r, const igw_field **out)
{
    const igw_field *c[4] = {r->rhs.is_const ? NULL : r->rhs.fa, r->rhs.is_const ? NULL : r->rhs.fb,
                             r->lhs.is_const ? NULL : r->lhs.fa, r->lhs.is_const ? NULL : r->lhs.fb};
    int n = 0;
    for (int i = 0; i < 4; i++) {
        bool dup = !c[i];
        for (int j = 0; j < n && !dup; j++)
            dup = out[j] == c[i];
        if (!dup)
            out[n++] = c[i];
    }
    return n;
}

/* Sets f so that lhs - rhs == target; false when no in-range value does it. */
static bool set_diff(gen *g, const igw_rule *r, jv **vals, const igw_field *f, int64_t target)
{
    int k = coef_of(r, f);
    if (k == 0 || !vals[f->index])
        return false;
    int64_t rest = check_diff(r, vals) - k * num_of(vals[f->index]);
    if ((target - rest) % k != 0)
        return false;
    int64_t x = (target - rest) / k;
    igw_type *ft = igw_type_resolve(f->type);
    if (x < ft->min || x > ft->max)
        return false;
    vals[f->index] = jv_int(g, x);
    return true;
}

/* lhs - rhs at the edge of a check: `inside` = last value that holds, else first that fails. */
static int64_t check_edge(igw_cmp c, bool inside)
{
    switch (c) {
    case IGW_CMP_LT: return inside ? -1 : 0;
    case IGW_CMP_LE: return inside ? 0 : 1;
    case IGW_CMP_GT: return inside ? 1 : 0;
    case IGW_CMP_GE: return inside ? 0 : -1;
    }
    return 0;
}

static igw_case *switch_case(const igw_switch *sw, const jv *disc)
{
    if (!disc || disc->kind != JV_STR)
        return NULL;
    for (int i = 0; i < sw->cases.n; i++) {
        igw_case *c = IGW_VEC_AT(sw->cases, igw_case, i);
        if (lit_match(disc, c->value))
            return c;
    }
    return NULL;
}

/* Values of t's fields in obj, by field index (first occurrence; NULL when absent). */
static jv **obj_vals(gen *g, const igw_type *t, const jv *obj)
{
    jv **vals = galloc(g, ((size_t)t->fields.n + 1) * sizeof *vals);
    for (int i = 0; i < obj->n; i++) {
        igw_field *f = igw_object_field(t, obj->m[i].key);
        if (f && !vals[f->index])
            vals[f->index] = obj->m[i].val;
    }
    return vals;
}

/* ---- decoder simulation ---------------------------------------------------- */

typedef struct sim {
    gen *g;
    igw_out path;
    res r;
} sim;

static bool sim_fail(sim *m, const igw_error *e)
{
    if (!m->r.e) {
        m->r.e = e;
        m->r.path = gstrdup(m->g, out_str(&m->path));
    }
    return false;
}

static bool sim_value(sim *m, igw_type *decl, jv *v, unsigned depth);

/* Free value walk; `level` is the nesting of v counting itself, `field_len`
 * the path length of the free field (where depth errors point). */
static bool sim_free_walk(sim *m, const igw_type *t, jv *v, unsigned level, unsigned depth0, size_t field_len)
{
    switch (v->kind) {
    case JV_STR:
        return v->bad ? sim_fail(m, m->g->decode) : true;
    case JV_NUM:
        return free_num_ok(v->s, v->len) ? true : sim_fail(m, m->g->decode);
    case JV_OBJ:
    case JV_ARR:
        if ((int64_t)level > t->max_depth || depth0 + level > DOC_MAX_DEPTH) {
            out_trunc(&m->path, field_len);
            return sim_fail(m, m->g->decode);
        }
        for (int i = 0; i < v->n; i++) {
            size_t mark = v->kind == JV_OBJ ? ptr_push_key(&m->path, v->m[i].key) : ptr_push_index(&m->path, i);
            if (!sim_free_walk(m, t, v->m[i].val, level + 1, depth0, field_len))
                return false;
            out_trunc(&m->path, mark);
        }
        if (v->kind == JV_OBJ)
            for (int i = 1; i < v->n; i++)
                for (int j = 0; j < i; j++)
                    if (strcmp(v->m[i].key, v->m[j].key) == 0) {
                        ptr_push_key(&m->path, v->m[i].key);
                        return sim_fail(m, m->g->decode);
                    }
        return true;
    default:
        return true;
    }
}

static bool sim_free(sim *m, const igw_type *t, jv *v, unsigned depth)
{
    if (t->json_kind == IGW_JSON_OBJECT && v->kind != JV_OBJ)
        return sim_fail(m, m->g->decode);
    if (!sim_free_walk(m, t, v, 1, depth, m->path.len))
        return false;
    size_t len;
    jv_text(m->g, v, &len);
    if ((int64_t)len > t->max_bytes)
        return sim_fail(m, m->g->decode);
    return true;
}

static bool sim_object(sim *m, igw_type *t, jv *v, unsigned depth)
{
    gen *g = m->g;
    if (v->kind != JV_OBJ)
        return sim_fail(m, g->decode);
    int nf = t->fields.n;
    jv **vals = galloc(g, ((size_t)nf + 1) * sizeof *vals);
    bool *deferred = galloc(g, (size_t)nf + 1);
    for (int i = 0; i < v->n; i++) {
        jv_mem *mb = &v->m[i];
        size_t mark = ptr_push_key(&m->path, mb->key);
        igw_field *f = igw_object_field(t, mb->key);
        if (!f || vals[f->index])
            return sim_fail(m, g->decode); /* unknown or duplicate key */
        vals[f->index] = mb->val;
        if (f->reserved)
            return sim_fail(m, g->reserved);
        if (mb->val->kind == JV_NULL)
            return sim_fail(m, g->decode);
        if (f->sw) {
            jv *d = vals[f->sw->on_field->index];
            if (!d) {
                deferred[f->index] = true;
            } else {
                igw_case *c = switch_case(f->sw, d);
                if (!c)
                    return sim_fail(m, g->decode);
                if (!sim_value(m, c->type, mb->val, depth))
                    return false;
            }
        } else if (!sim_value(m, f->type, mb->val, depth)) {
            return false;
        }
        out_trunc(&m->path, mark);
    }
    for (int i = 0; i < nf; i++) {
        igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
        if (!f->optional && !vals[i]) {
            ptr_push_key(&m->path, f->name);
            return sim_fail(m, g->decode);
        }
    }
    for (int i = 0; i < nf; i++) {
        igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
        if (!deferred[i])
            continue;
        size_t mark = ptr_push_key(&m->path, f->name);
        igw_case *c = switch_case(f->sw, vals[f->sw->on_field->index]);
        if (!c)
            return sim_fail(m, g->decode);
        if (!sim_value(m, c->type, vals[i], depth))
            return false;
        out_trunc(&m->path, mark);
    }
    const igw_field *at;
    if (first_failing_rule(t, vals, &at) >= 0) {
        ptr_push_key(&m->path, at->name);
        return sim_fail(m, g->decode);
    }
    return true;
}

/* depth: containers open around v. */
static bool sim_value(sim *m, igw_type *decl, jv *v, unsigned depth)
{
    gen *g = m->g;
    igw_type *t = igw_type_resolve(decl);
    if (v->kind == JV_NULL)
        return sim_fail(m, g->decode);
    switch (t->kind) {
    case IGW_T_STRING:
        if (v->kind != JV_STR || v->bad || (int64_t)v->len < t->min_len || (int64_t)v->len > t->max_len ||
            !format_ok(t->format, v->s, v->len))
            return sim_fail(m, g->decode);
        return true;
    case IGW_T_ENUM:
        if (v->kind != JV_STR || v->bad || !any_match(v, &t->values))
            return sim_fail(m, g->decode);
        return true;
    case IGW_T_INT:
        if (v->kind != JV_NUM || !int_ok(v->s, v->len, t->min, t->max, NULL))
            return sim_fail(m, g->decode);
        return true;
    case IGW_T_BOOL:
        return v->kind == JV_BOOL ? true : sim_fail(m, g->decode);
    case IGW_T_ARRAY:
        if (v->kind != JV_ARR)
            return sim_fail(m, g->decode);
        for (int i = 0; i < v->n; i++) {
            size_t mark = ptr_push_index(&m->path, i);
            if (i >= t->max_items)
                return sim_fail(m, g->decode);
            if (!sim_value(m, t->item, v->m[i].val, depth + 1))
                return false;
            if (t->unique)
                for (int j = 0; j < i; j++)
                    if (jv_equal(v->m[i].val, v->m[j].val))
                        return sim_fail(m, g->decode);
            out_trunc(&m->path, mark);
        }
        if (v->n < t->min_items)
            return sim_fail(m, g->decode);
        return true;
    case IGW_T_JSON:
        return sim_free(m, t, v, depth);
    case IGW_T_OBJECT:
        return sim_object(m, t, v, depth + 1);
    case IGW_T_REF:
        break;
    }
    return sim_fail(m, g->decode);
}

/* Outcome of a body of `len` bytes whose JSON value is root (NULL: no JSON
 * value at all); junk: non-whitespace bytes follow the value. */
static res sim_body(gen *g, jv *root, size_t len, bool junk)
{
    res r = {g->ok, ""};
    if (g->r->body == IGW_BODY_NONE) {
        if (len)
            r.e = g->decode;
        return r;
    }
    if ((int64_t)len > g->r->body_limit) {
        r.e = g->cap;
        return r;
    }
    if (!root) {
        r.e = g->decode;
        return r;
    }
    sim m = {.g = g};
    igw_out_init(&m.path);
    if (!sim_value(&m, g->r->body_type, root, 0))
        r = m.r;
    else if (junk)
        r.e = g->decode;
    igw_out_free(&m.path);
    return r;
}

static bool res_eq(res a, res b) { return a.e == b.e && strcmp(a.path, b.path) == 0; }

/* ---- sample values ------------------------------------------------------- */

static const char *const LANGS[] = {"en", "fr", "de", "es", "it", "ja", "ko", "zh"};

/* A string of exactly len bytes for t built from seed; valid for t's format
 * whenever the format admits that length. index varies it (array items). */
static jv *sample_string(gen *g, const igw_type *t, const char *seed, int index, int64_t len)
{
    if (len <= 0)
        return jv_strn(g, "", 0);
    size_t n = (size_t)len;
    char *b = galloc(g, n + 1);
    if (t->format == IGW_FMT_CANONICAL_ID) {
        if (n <= 16) {
            /* n digits: 10^(n-1) + index, or the safe maximum - index for 16 */
            int64_t p = 1;
            for (size_t i = 1; i < n; i++)
                p *= 10;
            char d[32];
            snprintf(d, sizeof d, "%" PRId64, n == 16 ? IGW_SAFE_MAX - index : p + index % (9 * p));
            memcpy(b, d, n);
        } else {
            b[0] = '1';
            memset(b + 1, '0', n - 1);
        }
    } else if (t->format == IGW_FMT_BCP47) {
        const char *pri = LANGS[index % 8];
        if (n <= 8) {
            for (size_t i = 0; i < n; i++)
                b[i] = i < 2 ? pri[i] : 'x';
        } else {
            size_t p = 0, rem = n - 2;
            b[p++] = pri[0];
            b[p++] = pri[1];
            while (rem > 0) {
                size_t seg = rem - 1 > 8 ? 8 : rem - 1;
                if (rem - 1 - seg == 1)
                    seg--;
                b[p++] = '-';
                for (size_t k = 0; k < seg; k++)
                    b[p++] = (char)('1' + k);
                rem -= seg + 1;
            }
        }
    } else {
        const char *text = index ? gprintf(g, "%s-%d", seed, index) : seed;
        size_t tl = strlen(text);
        if (n <= tl && index) {
            /* Too short for the suffix: the seed's head, then the index in
             * base 36 (digits, upper case), distinct from index 0's head. */
            static const char b36[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
            char d[16];
            size_t nd = 0;
            for (unsigned x = (unsigned)index; x; x /= 36)
                d[nd++] = b36[x % 36];
            size_t keep = n > nd ? n - nd : 0, sl = strlen(seed);
            memcpy(b, seed, keep < sl ? keep : sl);
            if (keep > sl)
                memset(b + sl, 'x', keep - sl);
            for (size_t i = keep; i < n; i++)
                b[i] = d[n - 1 - i]; /* most significant digit first */
        } else if (n <= tl) {
            memcpy(b, text, n);
        } else {
            memcpy(b, text, tl);
            memset(b + tl, 'x', n - tl);
        }
    }
    return jv_strn(g, b, n);
}

/* A small free value for maximal bodies. */
static jv *free_sample(gen *g, const igw_type *t)
{
    jv *o = jv_new(g, JV_OBJ);
    if (t->max_depth < 2)
        return o;
    jv *list = jv_new(g, JV_ARR);
    jv_push(g, list, NULL, NULL, jv_int(g, 1));
    jv_push(g, list, NULL, NULL, jv_int(g, 2));
    jv_push(g, o, "key", NULL, jv_str(g, "value"));
    jv_push(g, o, "n", NULL, jv_int(g, 1));
    jv_push(g, o, "flag", NULL, jv_bool(g, true));
    jv_push(g, o, "list", NULL, list);
    size_t len;
    jv_text(g, o, &len);
    return (int64_t)len <= t->max_bytes ? o : jv_new(g, JV_OBJ);
}

static const char *ovr_get(const variant *var, const char *path)
{
    for (int i = 0; var && i < var->n; i++)
        if (strcmp(var->ovr[i]->path, path) == 0)
            return var->ovr[i]->value;
    return NULL;
}

static jv *literal(gen *g, igw_type *decl, const char *text)
{
    igw_type *t = igw_type_resolve(decl);
    if (t->kind == IGW_T_BOOL)
        return jv_bool(g, strcmp(text, "true") == 0);
    return jv_str(g, text);
}

static jv *gen_value(gen *g, igw_type *decl, int mode, const variant *var, igw_out *path, const char *seed,
                     int index);

/* Makes the failing check rule r hold by moving one of its fields. */
static bool fix_check(gen *g, const igw_rule *r, jv **vals)
{
    const igw_field *fs[4];
    int n = check_fields(r, fs);
    for (int i = 0; i < n; i++)
        if (set_diff(g, r, vals, fs[i], check_edge(r->cmp, true)))
            return true;
    return false;
}

/* An object of t: required fields (MIN) or every open field (MAX), then
 * fixed up until its rules hold (require adds, forbid removes, checks move
 * an integer). May still break a rule when no fix exists; callers verify. */
static jv *gen_object(gen *g, igw_type *t, int mode, const variant *var, igw_out *path, int index)
{
    int nf = t->fields.n;
    jv **vals = galloc(g, ((size_t)nf + 1) * sizeof *vals);
    jv **view = galloc(g, ((size_t)nf + 1) * sizeof *view);
    bool *present = galloc(g, (size_t)nf + 1);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nf; i++) {
            igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
            if ((f->sw != NULL) != (pass == 1))
                continue;
            size_t mark = ptr_push_key(path, f->name);
            const char *ov = ovr_get(var, out_str(path));
            if (f->sw) {
                igw_case *c = switch_case(f->sw, vals[f->sw->on_field->index]);
                vals[i] = c ? gen_value(g, c->type, mode, var, path, f->name, index) : jv_new(g, JV_OBJ);
            } else {
                vals[i] = ov ? literal(g, f->type, ov) : gen_value(g, f->type, mode, var, path, f->name, index);
            }
            present[i] = !f->reserved && (mode == MODE_MAX || !f->optional);
            out_trunc(path, mark);
        }
    }
    for (int round = 0; round < FIX_ROUNDS; round++) {
        for (int i = 0; i < nf; i++)
            view[i] = present[i] ? vals[i] : NULL;
        const igw_field *at;
        int k = first_failing_rule(t, view, &at);
        if (k < 0)
            break;
        const igw_rule *r = IGW_VEC_AT(t->rules, igw_rule, k);
        bool changed = false;
        if (r->kind == IGW_R_CHECK) {
            changed = fix_check(g, r, view);
            for (int i = 0; i < nf; i++)
                if (present[i])
                    vals[i] = view[i];
        } else {
            for (int i = 0; i < r->frefs.n; i++) {
                const igw_field *f = IGW_VEC_AT(r->frefs, igw_field, i);
                bool want = r->kind == IGW_R_REQUIRE && !f->reserved;
                if (present[f->index] != want) {
                    present[f->index] = want;
                    changed = true;
                }
            }
        }
        if (!changed)
            break;
    }
    jv *o = jv_new(g, JV_OBJ);
    for (int i = 0; i < nf; i++)
        if (present[i])
            jv_push(g, o, IGW_VEC_AT(t->fields, igw_field, i)->name, NULL, vals[i]);
    return o;
}

/* A value of decl: least (MODE_MIN) or greatest (MODE_MAX) sizes and numbers. */
static jv *gen_value(gen *g, igw_type *decl, int mode, const variant *var, igw_out *path, const char *seed,
                     int index)
{
    igw_type *t = igw_type_resolve(decl);
    switch (t->kind) {
    case IGW_T_STRING:
        return sample_string(g, t, seed, index, mode == MODE_MIN ? t->min_len : t->max_len);
    case IGW_T_INT:
        return jv_int(g, mode == MODE_MIN ? t->min : t->max);
    case IGW_T_BOOL:
        return jv_bool(g, mode == MODE_MAX);
    case IGW_T_ENUM:
        return jv_str(g, IGW_VEC_AT(t->values, const char, 0));
    case IGW_T_ARRAY: {
        jv *a = jv_new(g, JV_ARR);
        int64_t n = mode == MODE_MIN ? t->min_items : t->max_items;
        for (int i = 0; i < n; i++) {
            size_t mark = ptr_push_index(path, i);
            jv_push(g, a, NULL, NULL, gen_value(g, t->item, mode, var, path, seed, i));
            out_trunc(path, mark);
        }
        return a;
    }
    case IGW_T_JSON:
        return mode == MODE_MAX ? free_sample(g, t) : jv_new(g, JV_OBJ);
    case IGW_T_OBJECT:
        return gen_object(g, t, mode, var, path, index);
    case IGW_T_REF:
        break;
    }
    return jv_null(g);
}

static jv *gen_root(gen *g, const variant *var, int mode)
{
    igw_out path;
    igw_out_init(&path);
    jv *v = gen_value(g, g->r->body_type, mode, var, &path, "body", 0);
    igw_out_free(&path);
    return v;
}

/* ---- variants: combinations of rule-relevant values ---------------------- */

static void push_unique(igw_vec *v, void *item)
{
    for (int i = 0; i < v->n; i++)
        if (v->v[i] == item)
            return;
    igw_vec_push(v, item);
}

static void cond_fields(const igw_cond *c, igw_vec *out)
{
    if (!c)
        return;
    if (c->op == IGW_C_AND || c->op == IGW_C_OR || c->op == IGW_C_NOT) {
        cond_fields(c->a, out);
        cond_fields(c->b, out);
    } else if (c->op != IGW_C_PRESENT && c->fref) {
        push_unique(out, c->fref);
    }
}

static void cond_literals(const igw_cond *c, const igw_field *f, igw_vec *out)
{
    if (!c)
        return;
    if (c->op == IGW_C_AND || c->op == IGW_C_OR || c->op == IGW_C_NOT) {
        cond_literals(c->a, f, out);
        cond_literals(c->b, f, out);
        return;
    }
    if (c->fref != f)
        return;
    for (int i = 0; i < c->values.n; i++) {
        const char *v = IGW_VEC_AT(c->values, const char, i);
        bool dup = false;
        for (int k = 0; k < out->n && !dup; k++)
            dup = strcmp(IGW_VEC_AT(*out, const char, k), v) == 0;
        if (!dup)
            igw_vec_push(out, (void *)v);
    }
}

/* Fields whose value rules depend on: condition fields, then switch discriminators. */
static void dims_of(const igw_type *t, igw_vec *out)
{
    for (int k = 0; k < t->rules.n; k++) {
        const igw_rule *r = IGW_VEC_AT(t->rules, igw_rule, k);
        if (r->kind != IGW_R_CHECK)
            cond_fields(r->when, out);
    }
    for (int i = 0; i < t->fields.n; i++) {
        igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
        if (f->sw)
            push_unique(out, f->sw->on_field);
    }
}

/* Values worth forcing for a dimension: every enum value, both booleans, or
 * the literals conditions compare a string with. */
static void dim_values(const igw_type *obj, const igw_field *f, igw_vec *out)
{
    igw_type *t = igw_type_resolve(f->type);
    if (t->kind == IGW_T_ENUM) {
        for (int i = 0; i < t->values.n; i++)
            igw_vec_push(out, t->values.v[i]);
    } else if (t->kind == IGW_T_BOOL) {
        igw_vec_push(out, (void *)"true");
        igw_vec_push(out, (void *)"false");
    } else {
        for (int k = 0; k < obj->rules.n; k++)
            cond_literals(IGW_VEC_AT(obj->rules, igw_rule, k)->when, f, out);
    }
}

static const char *last_segment(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void add_variant(gen *g, const variant *from, const char *path, const char *value)
{
    if (g->variants.n >= MAX_VARIANTS)
        return;
    variant *v = galloc(g, sizeof *v);
    v->ovr = galloc(g, ((size_t)from->n + 1) * sizeof *v->ovr);
    ovr *o = galloc(g, sizeof *o);
    o->path = gstrdup(g, path);
    o->value = value;
    bool placed = false;
    for (int i = 0; i < from->n; i++) {
        if (!placed && strcmp(path, from->ovr[i]->path) < 0) {
            v->ovr[v->n++] = o;
            placed = true;
        }
        v->ovr[v->n++] = from->ovr[i];
    }
    if (!placed)
        v->ovr[v->n++] = o;
    igw_out key, desc;
    igw_out_init(&key);
    igw_out_init(&desc);
    for (int i = 0; i < v->n; i++) {
        igw_out_printf(&key, "%s=%s\n", v->ovr[i]->path, v->ovr[i]->value);
        igw_out_printf(&desc, "%s%s=%s", i ? "," : "", last_segment(v->ovr[i]->path), v->ovr[i]->value);
    }
    v->key = gstrdup(g, out_str(&key));
    v->desc = gstrdup(g, out_str(&desc));
    igw_out_free(&key);
    igw_out_free(&desc);
    for (int i = 0; i < g->variants.n; i++)
        if (strcmp(IGW_VEC_AT(g->variants, variant, i)->key, v->key) == 0)
            return;
    igw_vec_push(&g->variants, v);
}

/* Adds a variant for every dimension value of every object in v not forced yet. */
static void find_dims(gen *g, const variant *var, igw_type *decl, jv *v, igw_out *path)
{
    igw_type *t = igw_type_resolve(decl);
    if (t->kind == IGW_T_ARRAY && v->kind == JV_ARR && v->n > 0) {
        size_t mark = ptr_push_index(path, 0);
        find_dims(g, var, t->item, v->m[0].val, path);
        out_trunc(path, mark);
        return;
    }
    if (t->kind != IGW_T_OBJECT || v->kind != JV_OBJ)
        return;
    igw_vec dims = {0};
    dims_of(t, &dims);
    for (int d = 0; d < dims.n; d++) {
        igw_field *f = IGW_VEC_AT(dims, igw_field, d);
        size_t mark = ptr_push_key(path, f->name);
        if (!ovr_get(var, out_str(path))) {
            igw_vec vals = {0};
            dim_values(t, f, &vals);
            for (int i = 0; i < vals.n; i++)
                add_variant(g, var, out_str(path), IGW_VEC_AT(vals, const char, i));
            free(vals.v);
        }
        out_trunc(path, mark);
    }
    free(dims.v);
    jv **vals = obj_vals(g, t, v);
    for (int i = 0; i < t->fields.n; i++) {
        igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
        if (!vals[i])
            continue;
        igw_case *c = f->sw ? switch_case(f->sw, vals[f->sw->on_field->index]) : NULL;
        if (f->sw && !c)
            continue;
        size_t mark = ptr_push_key(path, f->name);
        find_dims(g, var, f->sw ? c->type : f->type, vals[i], path);
        out_trunc(path, mark);
    }
}

/* ---- sites ---------------------------------------------------------------- */

static void site_note(gen *g, sitekind kind, const char *path, const char *label, const igw_field *f,
                      igw_type *t, const char *seed, unsigned depth, int bi)
{
    site *s = NULL;
    for (int i = 0; i < g->sites.n && !s; i++) {
        site *x = IGW_VEC_AT(g->sites, site, i);
        if (x->kind == kind && x->field == f && x->type == t && strcmp(x->path, path) == 0)
            s = x;
    }
    if (!s) {
        s = galloc(g, sizeof *s);
        s->kind = kind;
        s->path = gstrdup(g, path);
        s->label = gstrdup(g, label);
        s->field = f;
        s->type = t;
        s->seed = seed;
        s->depth = depth;
        igw_vec_push(&g->sites, s);
    }
    if (s->nbases && s->bases[s->nbases - 1] == bi)
        return;
    if (s->nbases == s->capbases) {
        int cap = s->capbases ? s->capbases * 2 : 8;
        int *b = galloc(g, (size_t)cap * sizeof *b);
        if (s->nbases)
            memcpy(b, s->bases, (size_t)s->nbases * sizeof *b);
        s->bases = b;
        s->capbases = cap;
    }
    s->bases[s->nbases++] = bi;
}

static void walk_sites(gen *g, int bi, igw_type *decl, jv *v, igw_out *path, igw_out *label,
                       const igw_field *f, const char *seed, unsigned depth)
{
    igw_type *t = igw_type_resolve(decl);
    const char *lab = label->len ? out_str(label) : "body";
    if (path->len)
        site_note(g, SITE_VALUE, out_str(path), lab, f, t, seed, depth, bi);
    if (t->kind == IGW_T_OBJECT && v->kind == JV_OBJ) {
        site_note(g, SITE_OBJECT, out_str(path), lab, f, t, seed, depth, bi);
        jv **vals = obj_vals(g, t, v);
        for (int i = 0; i < t->fields.n; i++) {
            igw_field *fld = IGW_VEC_AT(t->fields, igw_field, i);
            if (!vals[i])
                continue;
            igw_case *c = fld->sw ? switch_case(fld->sw, vals[fld->sw->on_field->index]) : NULL;
            if (fld->sw && !c)
                continue;
            size_t pm = ptr_push_key(path, fld->name), lm = label->len;
            igw_out_printf(label, "%s%s", lm ? "." : "", fld->name);
            if (c)
                igw_out_printf(label, "[%s]", c->value);
            walk_sites(g, bi, c ? c->type : fld->type, vals[i], path, label, fld, fld->name, depth + 1);
            out_trunc(path, pm);
            out_trunc(label, lm);
        }
    } else if (t->kind == IGW_T_ARRAY && v->kind == JV_ARR && v->n > 0) {
        size_t pm = ptr_push_index(path, 0), lm = label->len;
        igw_out_puts(label, ".0");
        walk_sites(g, bi, t->item, v->m[0].val, path, label, NULL, seed, depth + 1);
        out_trunc(path, pm);
        out_trunc(label, lm);
    }
}

/* ---- output -------------------------------------------------------------------- */

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * UINT64_C(1099511628211);
    return h;
}

/* Records the body; false when the same body was emitted before. */
static bool body_new(gen *g, const char *text, size_t len)
{
    uint64_t h = fnv1a(text, len);
    for (int i = 0; i < g->bodies.n; i++) {
        body_rec *b = IGW_VEC_AT(g->bodies, body_rec, i);
        if (b->hash == h && b->len == len && memcmp(b->text, text, len) == 0)
            return false;
    }
    body_rec *b = galloc(g, sizeof *b);
    *b = (body_rec){len, h, gstrndup(g, text, len)};
    igw_vec_push(&g->bodies, b);
    return true;
}

static const char *unique_id(gen *g, const char *id)
{
    const char *cand = id;
    for (int k = 2;; k++) {
        bool taken = false;
        for (int i = 0; i < g->ids.n && !taken; i++)
            taken = strcmp(IGW_VEC_AT(g->ids, const char, i), cand) == 0;
        if (!taken)
            break;
        cand = gprintf(g, "%s~%d", id, k);
    }
    igw_vec_push(&g->ids, (void *)cand);
    return cand;
}

/* Writes one vector line unless the same body was emitted already.
 * tags: space-separated; "valid" is added to every vector that must succeed. */
static void emit_vec(gen *g, const char *label, const char *test, const char *what, const char *tags,
                     const char *body, size_t len, res r)
{
    if (!body_new(g, body, len))
        return;
    igw_out *o = &g->out;
    const char *id = unique_id(g, gprintf(g, "%s/%s/%s", g->r->name, label, test));
    igw_out_puts(o, "{\"id\":");
    igw_out_json_string(o, id);
    igw_out_puts(o, ",\"doc\":");
    igw_out_json_string(o, gprintf(g, "%s: %s", label, what));
    igw_out_puts(o, ",\"tags\":[");
    bool first = true;
    if (r.e == g->ok && strncmp(tags, "valid", 5) != 0) {
        igw_out_puts(o, "\"valid\"");
        first = false;
    }
    for (const char *p = tags; *p;) {
        const char *e = strchr(p, ' ');
        if (!e)
            e = p + strlen(p);
        if (e > p) {
            if (!first)
                igw_out_puts(o, ",");
            igw_out_json_string(o, gstrndup(g, p, (size_t)(e - p)));
            first = false;
        }
        p = *e ? e + 1 : e;
    }
    igw_out_puts(o, "],\"request\":{\"method\":");
    igw_out_json_string(o, g->r->method);
    igw_out_puts(o, ",\"path\":");
    igw_out_json_string(o, g->req_path);
    igw_out_puts(o, ",\"headers\":{");
    if (g->r->body != IGW_BODY_NONE || len)
        igw_out_puts(o, "\"content-type\":\"application/json\"");
    igw_out_puts(o, "},");
    if (utf8_ok(body, len) && memchr(body, '\0', len) == NULL) {
        igw_out_puts(o, "\"body\":");
        igw_out_json_string(o, gstrndup(g, body, len));
    } else {
        igw_out_puts(o, "\"body_b64\":\"");
        out_base64(o, body, len);
        igw_out_puts(o, "\"");
    }
    igw_out_printf(o, "},\"expect\":{\"status\":%d,\"code\":%" PRId64 ",\"path\":", r.e->http, r.e->code);
    igw_out_json_string(o, r.path);
    igw_out_puts(o, "}}\n");
}

/* A body given as text; root is its JSON value as the decoder would see it. */
static void emit_text(gen *g, const char *label, const char *test, const char *what, const char *tags,
                      const char *text, size_t len, jv *root, bool junk)
{
    emit_vec(g, label, test, what, tags, text, len, sim_body(g, root, len, junk));
}

static const char *res_str(gen *g, res r) { return gprintf(g, "%s at \"%s\"", r.e->name, r.path); }

/* ---- minimal context ------------------------------------------------------------ */

static bool body_valid(gen *g, jv *root)
{
    size_t len;
    jv_text(g, root, &len);
    return sim_body(g, root, len, false).e == g->ok;
}

/* Shrinks root around the value at `keep`: members off that path are
 * dropped when optional, else replaced by their minimal value, as long as
 * the body stays valid. The value at `keep` and its ancestors stay. */
static void minimize(gen *g, jv *root, igw_type *decl, jv *node, igw_out *path, const char *keep)
{
    igw_type *t = igw_type_resolve(decl);
    if (t->kind == IGW_T_ARRAY && node->kind == JV_ARR) {
        for (int i = 0; i < node->n; i++) {
            size_t mark = ptr_push_index(path, i);
            size_t n = path->len;
            if (strncmp(keep, out_str(path), n) == 0 && keep[n] == '/')
                minimize(g, root, t->item, node->m[i].val, path, keep);
            out_trunc(path, mark);
        }
        return;
    }
    if (t->kind != IGW_T_OBJECT || node->kind != JV_OBJ)
        return;
    for (int i = 0; i < node->n; i++) {
        igw_field *f = igw_object_field(t, node->m[i].key);
        if (!f)
            continue;
        igw_type *ft = f->type;
        if (f->sw) {
            jv **vals = obj_vals(g, t, node);
            igw_case *c = switch_case(f->sw, vals[f->sw->on_field->index]);
            if (!c)
                continue;
            ft = c->type;
        }
        size_t mark = ptr_push_key(path, f->name);
        size_t n = path->len;
        bool on_path = strncmp(keep, out_str(path), n) == 0 && (keep[n] == '/' || keep[n] == '\0');
        if (on_path) {
            if (keep[n] == '/')
                minimize(g, root, ft, node->m[i].val, path, keep);
        } else {
            jv_mem saved = node->m[i];
            bool removed = false;
            if (f->optional) {
                jv_remove(node, i);
                removed = body_valid(g, root);
                if (removed)
                    i--;
                else
                    jv_insert(g, node, i, saved);
            }
            if (!removed) {
                jv *least = gen_value(g, ft, MODE_MIN, NULL, path, f->name, 0);
                if (!jv_equal(least, saved.val)) {
                    node->m[i].val = least;
                    if (!body_valid(g, root))
                        node->m[i].val = saved.val;
                }
            }
        }
        out_trunc(path, mark);
    }
}

/* Base i of the site, reduced around the site (cached). */
static jv *site_base(gen *g, site *s, int i)
{
    if (!s->mini)
        s->mini = galloc(g, (size_t)s->nbases * sizeof *s->mini);
    if (!s->mini[i]) {
        jv *root = jv_clone(g, IGW_VEC_AT(g->bases, base, s->bases[i])->root);
        if (s->path[0]) {
            igw_out path;
            igw_out_init(&path);
            minimize(g, root, g->r->body_type, root, &path, s->path);
            igw_out_free(&path);
        }
        s->mini[i] = root;
    }
    return s->mini[i];
}

/* ---- mutations ---------------------------------------------------------------- */

/* Changes a clone of a base in place; false when the base does not admit it. */
typedef bool (*mut_fn)(gen *g, jv **root, site *s, void *arg);

/* Applies fn to the site's bases in order and emits the first result equal
 * to *want (any result when want is NULL); failing that, the first result. */
static void attempt(gen *g, site *s, mut_fn fn, void *arg, const res *want, const char *test,
                    const char *what, const char *tags)
{
    jv *fb = NULL;
    res fbr = {0};
    for (int i = 0; i < s->nbases; i++) {
        jv *root = jv_clone(g, site_base(g, s, i));
        if (!fn(g, &root, s, arg))
            continue;
        size_t len;
        char *text = jv_text(g, root, &len);
        res r = sim_body(g, root, len, false);
        if (!want || res_eq(r, *want)) {
            emit_vec(g, s->label, test, what, tags, text, len, r);
            return;
        }
        if (!fb) {
            fb = root;
            fbr = r;
        }
    }
    if (!fb) {
        if (g->verbose)
            fprintf(stderr, "igw-gen: vectors: %s/%s/%s: no base admits it\n", g->r->name, s->label, test);
        return;
    }
    g->mismatches++;
    if (g->verbose)
        fprintf(stderr, "igw-gen: vectors: %s/%s/%s: aimed at %s, simulated %s\n", g->r->name, s->label, test,
                res_str(g, *want), res_str(g, fbr));
    size_t len;
    char *text = jv_text(g, fb, &len);
    emit_vec(g, s->label, test, gprintf(g, "%s; refused here: %s", what, res_str(g, fbr)), tags, text, len, fbr);
}

static bool mut_set(gen *g, jv **root, site *s, void *arg)
{
    (void)g;
    jv **slot = jv_find(root, s->path, NULL, NULL);
    if (!slot)
        return false;
    *slot = arg;
    return true;
}

/* mut_set, then moves the value's integer siblings until the parent's check
 * rules hold again (the set field itself stays): "max is valid" must not
 * trip over `a < b`. */
static bool mut_set_repair(gen *g, jv **root, site *s, void *arg)
{
    jv *parent;
    int idx;
    jv **slot = jv_find(root, s->path, &parent, &idx);
    if (!slot)
        return false;
    *slot = arg;
    igw_type *pt = NULL;
    if (s->field && parent && parent->kind == JV_OBJ)
        for (int i = 0; i < g->sites.n && !pt; i++) {
            const site *o = IGW_VEC_AT(g->sites, site, i);
            if (o->kind == SITE_OBJECT && igw_object_field(o->type, s->field->name) == s->field)
                pt = o->type;
        }
    if (!pt)
        return true;
    for (int round = 0; round < FIX_ROUNDS; round++) {
        jv **vals = obj_vals(g, pt, parent);
        const igw_field *at;
        int k = first_failing_rule(pt, vals, &at);
        if (k < 0)
            break;
        const igw_rule *r = IGW_VEC_AT(pt->rules, igw_rule, k);
        if (r->kind != IGW_R_CHECK)
            break;
        const igw_field *fs[4];
        int n = check_fields(r, fs);
        bool moved = false;
        for (int i = 0; i < n && !moved; i++) {
            if (fs[i] == s->field || !set_diff(g, r, vals, fs[i], check_edge(r->cmp, true)))
                continue;
            parent->m[jv_index(parent, fs[i]->name)].val = vals[fs[i]->index];
            moved = true;
        }
        if (!moved)
            break;
    }
    return true;
}

static res want_dec(gen *g, const char *path) { return (res){g->decode, path}; }
static res want_ok(gen *g) { return (res){g->ok, ""}; }

static void set_test(gen *g, site *s, jv *v, const res *want, const char *test, const char *what,
                     const char *tags)
{
    attempt(g, s, mut_set, v, want, test, what, tags);
}

/* ---- value sites --------------------------------------------------------------- */

static jv *str_len(gen *g, site *s, int64_t len) { return sample_string(g, s->type, s->seed, 0, len); }

/* prefix bytes of a sample of `k` bytes followed by suffix bytes. */
static jv *str_plus(gen *g, site *s, int64_t k, const char *suffix)
{
    jv *a = str_len(g, s, k);
    return jv_strn(g, gcat(g, a->s, a->len, suffix, strlen(suffix)), a->len + strlen(suffix));
}

/* Strings longer than this get only the 2-byte straddle (bodies stay small). */
#define MULTIBYTE_FULL_MAX 4096

static void multibyte_tests(gen *g, site *s)
{
    const igw_type *t = s->type;
    int64_t hi = t->max_len;
    bool full = hi <= MULTIBYTE_FULL_MAX;
    res dec = want_dec(g, s->path), ok = want_ok(g);
    static const struct {
        const char *ch;
        int bytes;
        const char *name;
    } chars[] = {{"\xc3\xa9", 2, "2byte"}, {"\xe2\x82\xac", 3, "3byte"}, {"\xf0\x9f\x98\x80", 4, "4byte"}};
    for (size_t i = 0; i < sizeof chars / sizeof chars[0]; i++) {
        int b = chars[i].bytes;
        if (hi < b || (!full && b != 2))
            continue;
        if (hi - b >= t->min_len)
            set_test(g, s, str_plus(g, s, hi - b, chars[i].ch), &ok, gprintf(g, "utf8-%s-at-max", chars[i].name),
                     gprintf(g, "%" PRId64 " ASCII bytes and a %d-byte character: exactly %" PRId64 " bytes",
                             hi - b, b, hi),
                     gprintf(g, "string length utf8 max %s", chars[i].name));
        set_test(g, s, str_plus(g, s, hi - b + 1, chars[i].ch), &dec, gprintf(g, "utf8-%s-over-max", chars[i].name),
                 gprintf(g, "%" PRId64 " ASCII bytes and a %d-byte character: %" PRId64 " bytes, one too many",
                         hi - b + 1, b, hi + 1),
                 gprintf(g, "string length utf8 max+1 %s", chars[i].name));
    }
    /* Escapes count as the bytes they decode to. */
    if (!full)
        return;
    if (hi >= 4 && hi - 4 >= t->min_len) {
        jv *a = str_len(g, s, hi - 4);
        jv *v = jv_rawstr(g, gprintf(g, "\"%.*s\\ud83d\\ude00\"", (int)a->len, a->s),
                          gcat(g, a->s, a->len, "\xf0\x9f\x98\x80", 4), a->len + 4, false);
        set_test(g, s, v, &ok, "escaped-pair-at-max",
                 "a \\u surrogate pair decoding to 4 bytes completes exactly max bytes",
                 "string length escape max");
    }
    if (hi >= 1 && hi >= t->min_len) {
        jv *a = str_len(g, s, hi);
        jv *v = jv_rawstr(g, gprintf(g, "\"\\u%04x%.*s\"", (unsigned char)a->s[0], (int)a->len - 1, a->s + 1), a->s,
                          a->len, false);
        set_test(g, s, v, &ok, "escaped-at-max", "max bytes with the first character written as a \\u escape",
                 "string length escape max");
        jv *b = str_plus(g, s, hi - 1, "\xc3\xa9");
        jv *w = jv_rawstr(g, gprintf(g, "\"%.*s\\u00e9\"", (int)hi - 1, b->s), b->s, b->len, false);
        set_test(g, s, w, &dec, "escaped-over-max", "max-1 bytes and \\u00e9 (2 bytes once decoded): max+1 bytes",
                 "string length escape max+1");
    }
}

/* A test string: prefix, then the first byte of core, mid, the rest of core, then suffix. */
static jv *str_shape(gen *g, site *s, const char *pre, const char *mid, const char *suf)
{
    int64_t lo = s->type->min_len;
    jv *core = str_len(g, s, lo > 2 ? lo : 2);
    igw_out o;
    igw_out_init(&o);
    igw_out_puts(&o, pre ? pre : "");
    igw_out_write(&o, core->s, 1);
    igw_out_puts(&o, mid ? mid : "");
    igw_out_write(&o, core->s + 1, core->len - 1);
    igw_out_puts(&o, suf ? suf : "");
    jv *v = jv_strn(g, out_str(&o), o.len);
    igw_out_free(&o);
    return v;
}

static void identifier_tests(gen *g, site *s)
{
    static const struct {
        const char *pre, *mid, *suf;
        bool ok, full;
        const char *test, *what;
    } cases[] = {
        {" ", NULL, NULL, false, false, "ident-lead-space", "leading space"},
        {NULL, "*", NULL, false, false, "ident-star", "wildcard '*' inside"},
        {NULL, NULL, " ", false, true, "ident-trail-space", "trailing space"},
        {"\t", NULL, NULL, false, true, "ident-lead-tab", "leading tab"},
        {NULL, NULL, "\n", false, true, "ident-trail-lf", "trailing line feed"},
        {"\r", NULL, NULL, false, true, "ident-lead-cr", "leading carriage return"},
        {NULL, NULL, "\f", false, true, "ident-trail-ff", "trailing form feed"},
        {"\v", NULL, NULL, false, true, "ident-lead-vt", "leading vertical tab"},
        {NULL, "\t", NULL, false, true, "ident-inner-tab", "tab inside (control character)"},
        {NULL, "\x01", NULL, false, true, "ident-inner-ctl", "U+0001 inside"},
        {NULL, "\x7f", NULL, false, true, "ident-inner-del", "U+007F inside"},
        {NULL, "?", NULL, false, true, "ident-question", "wildcard '?' inside"},
        {NULL, "%", NULL, false, true, "ident-percent", "wildcard '%' inside"},
        {NULL, "+", NULL, false, true, "ident-plus", "wildcard '+' inside"},
        {NULL, "#", NULL, false, true, "ident-hash", "wildcard '#' inside"},
        {NULL, " ", NULL, true, true, "ident-inner-space", "a space inside is printable"},
        {NULL, "\xc3\xa9", NULL, true, true, "ident-non-ascii", "non-ASCII letter inside"},
        {"\xc2\xa0", NULL, NULL, false, true, "ident-lead-nbsp", "leading U+00A0 (Unicode whitespace)"},
        {NULL, NULL, "\xe3\x80\x80", false, true, "ident-trail-ideographic-space",
         "trailing U+3000 (Unicode whitespace)"},
        {NULL, "\xc2\x85", NULL, false, true, "ident-inner-c1", "U+0085 inside (C1 control character)"},
        {NULL, "\xc2\xa0", NULL, true, true, "ident-inner-nbsp", "U+00A0 inside (whitespace only matters at the edges)"},
        {NULL, "/", NULL, true, true, "ident-slash", "'/' inside"},
    };
    bool full = true;
    for (int i = 0; i < g->fmt_done.n; i++)
        if (g->fmt_done.v[i] == s->type)
            full = false;
    if (full)
        igw_vec_push(&g->fmt_done, s->type);
    res dec = want_dec(g, s->path), ok = want_ok(g);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].full && !full)
            continue;
        jv *v = str_shape(g, s, cases[i].pre, cases[i].mid, cases[i].suf);
        if ((int64_t)v->len < s->type->min_len || (int64_t)v->len > s->type->max_len)
            continue;
        set_test(g, s, v, cases[i].ok ? &ok : &dec, cases[i].test, gprintf(g, "identifier with %s", cases[i].what),
                 cases[i].ok ? "string format identifier" : "string format identifier invalid");
    }
    if (full) {
        jv *core = str_shape(g, s, NULL, "/", NULL);
        if ((int64_t)core->len <= s->type->max_len) {
            jv *v = jv_rawstr(g, gprintf(g, "\"%c\\/%.*s\"", core->s[0], (int)core->len - 2, core->s + 2), core->s,
                              core->len, false);
            set_test(g, s, v, &ok, "ident-escaped-slash", "identifier with '/' written as the escape \\/",
                     "string format identifier escape");
        }
    }
}

static void canonical_tests(gen *g, site *s)
{
    static const struct {
        const char *v;
        bool ok;
        const char *test;
    } cases[] = {
        {"1", true, "canon-one"},
        {"9007199254740991", true, "canon-safe-max"},
        {"9007199254740992", false, "canon-safe-max+1"},
        {"9999999999999999", false, "canon-16-digits-unsafe"},
        {"12345678901234567", false, "canon-17-digits"},
        {"0", false, "canon-zero"},
        {"01", false, "canon-leading-zero"},
        {"+1", false, "canon-plus"},
        {"-1", false, "canon-negative"},
        {" 1", false, "canon-lead-space"},
        {"1 ", false, "canon-trail-space"},
        {"1.0", false, "canon-fraction"},
        {"1e3", false, "canon-exponent"},
        {"0x1", false, "canon-hex"},
        {"\xef\xbc\x91", false, "canon-fullwidth-digit"},
        {"a1", false, "canon-letter"},
    };
    res dec = want_dec(g, s->path), ok = want_ok(g);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        set_test(g, s, jv_str(g, cases[i].v), cases[i].ok ? &ok : &dec, cases[i].test,
                 gprintf(g, "canonical id \"%s\"", cases[i].v),
                 cases[i].ok ? "string format canonical_id" : "string format canonical_id invalid");
}

static void bcp47_tests(gen *g, site *s)
{
    static const struct {
        const char *v;
        bool ok;
        const char *test;
    } cases[] = {
        {"en", true, "bcp47-en"},
        {"EN", true, "bcp47-upper"},
        {"en-US", true, "bcp47-region"},
        {"zh-Hans-CN", true, "bcp47-script-region"},
        {"de-1996", true, "bcp47-digits"},
        {"en_US", false, "bcp47-underscore"},
        {"en-", false, "bcp47-trailing-hyphen"},
        {"-en", false, "bcp47-leading-hyphen"},
        {"e1", false, "bcp47-digit-in-primary"},
        {"en--US", false, "bcp47-empty-subtag"},
        {"abcdefghi", false, "bcp47-primary-9"},
        {"en-abcdefghi", false, "bcp47-subtag-9"},
        {"en US", false, "bcp47-space"},
        {"\xc3\xa9n", false, "bcp47-non-ascii"},
        {"12", false, "bcp47-digits-only"},
    };
    res dec = want_dec(g, s->path), ok = want_ok(g);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t n = (int64_t)strlen(cases[i].v);
        if (cases[i].ok && (n < s->type->min_len || n > s->type->max_len))
            continue;
        set_test(g, s, jv_str(g, cases[i].v), cases[i].ok ? &ok : &dec, cases[i].test,
                 gprintf(g, "language tag \"%s\"", cases[i].v),
                 cases[i].ok ? "string format bcp47" : "string format bcp47 invalid");
    }
}

static void string_tests(gen *g, site *s)
{
    const igw_type *t = s->type;
    int64_t lo = t->min_len, hi = t->max_len;
    res dec = want_dec(g, s->path), ok = want_ok(g);
    set_test(g, s, jv_int(g, 1), &dec, "type-number", "a number where a string belongs", "string type");
    set_test(g, s, jv_bool(g, true), &dec, "type-bool", "true where a string belongs", "string type");
    if (lo > 0) {
        jv *a = str_len(g, s, lo);
        set_test(g, s, jv_strn(g, a->s, a->len - 1), &dec, "len-min-1", gprintf(g, "%" PRId64 " bytes", lo - 1),
                 "string length min-1");
    }
    set_test(g, s, str_len(g, s, lo), &ok, "len-min", gprintf(g, "%" PRId64 " bytes (min)", lo),
             "string length min");
    set_test(g, s, str_len(g, s, hi), &ok, "len-max", gprintf(g, "%" PRId64 " bytes (max)", hi),
             "string length max");
    set_test(g, s, str_len(g, s, hi + 1), &dec, "len-max+1", gprintf(g, "%" PRId64 " bytes (max+1)", hi + 1),
             "string length max+1");
    switch (t->format) {
    case IGW_FMT_NONE:
        if (hi >= 2)
            multibyte_tests(g, s);
        if (hi >= 3 && lo <= 3) {
            set_test(g, s, jv_strn(g, "a\x01z", 3), &ok, "control-escaped",
                     "U+0001 (escaped) is allowed in a string without format", "string control");
            set_test(g, s, jv_strn(g, "a\0z", 3), &dec, "nul-escaped",
                     "U+0000 (escaped) is refused: no C string, SQL text or jsonb holds it", "string control nul");
        }
        break;
    case IGW_FMT_IDENTIFIER:
        if (hi >= 2)
            multibyte_tests(g, s);
        identifier_tests(g, s);
        break;
    case IGW_FMT_CANONICAL_ID: canonical_tests(g, s); break;
    case IGW_FMT_BCP47: bcp47_tests(g, s); break;
    }
}

static void int_tests(gen *g, site *s)
{
    const igw_type *t = s->type;
    res dec = want_dec(g, s->path), ok = want_ok(g);
    int64_t v = t->min > 1 ? t->min : t->max < 1 ? t->max : 1;
    set_test(g, s, jv_str(g, gprintf(g, "%" PRId64, v)), &dec, "type-string",
             gprintf(g, "the string \"%" PRId64 "\" where an integer belongs", v), "int type");
    set_test(g, s, jv_bool(g, true), &dec, "type-bool", "true where an integer belongs", "int type");
    if (t->min > -IGW_SAFE_MAX)
        set_test(g, s, jv_int(g, t->min - 1), &dec, "min-1", gprintf(g, "%" PRId64 " (min-1)", t->min - 1),
                 "int range min-1");
    else
        set_test(g, s, jv_num(g, "-9007199254740992"), &dec, "unsafe-min", "-9007199254740992 (beyond -(2^53-1))",
                 "int range min-1 unsafe");
    attempt(g, s, mut_set_repair, jv_int(g, t->min), &ok, "min", gprintf(g, "%" PRId64 " (min)", t->min),
            "int range min");
    attempt(g, s, mut_set_repair, jv_int(g, t->max), &ok, "max", gprintf(g, "%" PRId64 " (max)", t->max),
            "int range max");
    if (t->max < IGW_SAFE_MAX)
        set_test(g, s, jv_int(g, t->max + 1), &dec, "max+1", gprintf(g, "%" PRId64 " (max+1)", t->max + 1),
                 "int range max+1");
    else
        set_test(g, s, jv_num(g, "9007199254740992"), &dec, "unsafe-max",
                 "9007199254740992 (2^53, beyond the safe range)", "int range max+1 unsafe");
    set_test(g, s, jv_num(g, "99999999999999999999"), &dec, "overflow", "20 digits, beyond 64 bits",
             "int range overflow");
    static const struct {
        const char *suffix, *test, *what;
    } spell[] = {
        {".0", "fraction", "fraction syntax"},
        {"e0", "exponent", "exponent syntax"},
        {"E0", "exponent-upper", "upper-case exponent syntax"},
    };
    for (size_t i = 0; i < sizeof spell / sizeof spell[0]; i++)
        set_test(g, s, jv_num(g, gprintf(g, "%" PRId64 "%s", v, spell[i].suffix)), &dec, spell[i].test,
                 gprintf(g, "%s of %" PRId64, spell[i].what, v), "int syntax");
    if (v > 0) {
        set_test(g, s, jv_num(g, gprintf(g, "0%" PRId64, v)), &dec, "leading-zero",
                 gprintf(g, "0%" PRId64 " (leading zero)", v), "int syntax");
        set_test(g, s, jv_num(g, gprintf(g, "+%" PRId64, v)), &dec, "plus", gprintf(g, "+%" PRId64, v),
                 "int syntax");
    }
    bool zero_ok = t->min < 0 && t->max >= 0;
    set_test(g, s, jv_num(g, "-0"), zero_ok ? &ok : &dec, "minus-zero",
             zero_ok ? "-0 where negative values are allowed" : "-0 where min >= 0", "int syntax minus-zero");
}

static void bool_tests(gen *g, site *s)
{
    res dec = want_dec(g, s->path), ok = want_ok(g);
    set_test(g, s, jv_bool(g, true), &ok, "true", "true", "bool");
    set_test(g, s, jv_bool(g, false), &ok, "false", "false (not the same as absent)", "bool");
    set_test(g, s, jv_str(g, "true"), &dec, "type-string", "the string \"true\"", "bool type");
    set_test(g, s, jv_int(g, 1), &dec, "type-one", "1 where a boolean belongs", "bool type");
    set_test(g, s, jv_int(g, 0), &dec, "type-zero", "0 where a boolean belongs", "bool type");
}

static void enum_tests(gen *g, site *s)
{
    const igw_type *t = s->type;
    res dec = want_dec(g, s->path), ok = want_ok(g);
    for (int i = 0; i < t->values.n; i++) {
        const char *v = IGW_VEC_AT(t->values, const char, i);
        set_test(g, s, jv_str(g, v), &ok, gprintf(g, "value-%s", v), gprintf(g, "\"%s\"", v), "enum");
    }
    const char *first = IGW_VEC_AT(t->values, const char, 0);
    char *flip = gstrdup(g, first);
    for (char *p = flip; *p; p++)
        if (is_alpha(*p)) {
            *p = (char)(*p ^ 0x20);
            break;
        }
    bool taken = false;
    for (int i = 0; i < t->values.n; i++)
        taken |= strcmp(flip, IGW_VEC_AT(t->values, const char, i)) == 0;
    if (!taken)
        set_test(g, s, jv_str(g, flip), &dec, "case", gprintf(g, "\"%s\" (case differs)", flip), "enum invalid");
    set_test(g, s, jv_str(g, gprintf(g, "%s ", first)), &dec, "trailing-space",
             gprintf(g, "\"%s \" (trailing space)", first), "enum invalid");
    set_test(g, s, jv_str(g, ""), &dec, "empty", "empty string", "enum invalid");
    set_test(g, s, jv_int(g, 0), &dec, "type-number", "0 where an enum string belongs", "enum type");
}

/* n items of the array site's type, distinct where the item type allows. */
static jv *array_of(gen *g, site *s, int64_t n)
{
    jv *a = jv_new(g, JV_ARR);
    igw_out path;
    igw_out_init(&path);
    for (int i = 0; i < n; i++)
        jv_push(g, a, NULL, NULL, gen_value(g, s->type->item, MODE_MIN, NULL, &path, s->seed, i));
    igw_out_free(&path);
    return a;
}

static void array_tests(gen *g, site *s)
{
    const igw_type *t = s->type;
    res dec = want_dec(g, s->path), ok = want_ok(g);
    set_test(g, s, jv_new(g, JV_OBJ), &dec, "type-object", "an object where an array belongs", "array type");
    jv *one = array_of(g, s, 1);
    set_test(g, s, one->m[0].val, &dec, "type-item", "a single item instead of an array", "array type");
    if (t->min_items > 0)
        set_test(g, s, array_of(g, s, t->min_items - 1), &dec, "items-min-1",
                 gprintf(g, "%" PRId64 " items (min-1)", t->min_items - 1), "array items min-1");
    set_test(g, s, array_of(g, s, t->min_items), &ok, "items-min", gprintf(g, "%" PRId64 " items (min)", t->min_items),
             "array items min");
    set_test(g, s, array_of(g, s, t->max_items), &ok, "items-max", gprintf(g, "%" PRId64 " items (max)", t->max_items),
             "array items max");
    res over = want_dec(g, gprintf(g, "%s/%" PRId64, s->path, t->max_items));
    set_test(g, s, array_of(g, s, t->max_items + 1), &over, "items-max+1",
             gprintf(g, "%" PRId64 " items (max+1); points at the first excess item", t->max_items + 1),
             "array items max+1");
    if (t->unique && t->max_items >= 2) {
        int64_t n = t->min_items > 2 ? t->min_items : 2;
        jv *a = array_of(g, s, n - 1);
        jv_push(g, a, NULL, NULL, a->m[0].val);
        res dup = want_dec(g, gprintf(g, "%s/%" PRId64, s->path, n - 1));
        set_test(g, s, a, &dup, "duplicate", "the first item repeated; points at the repetition", "array unique");
        jv *first = a->m[0].val;
        if (first->kind == JV_STR && first->len > 0 && !first->raw) {
            jv *b = array_of(g, s, n - 1);
            jv *esc = jv_rawstr(g, gprintf(g, "\"\\u%04x%.*s\"", (unsigned char)first->s[0], (int)first->len - 1,
                                           first->s + 1),
                                first->s, first->len, false);
            jv_push(g, b, NULL, NULL, esc);
            set_test(g, s, b, &dup, "duplicate-escaped",
                     "the first item repeated with its first character \\u-escaped", "array unique escape");
        }
    }
}

/* {"a":{"a":...{}}}: `depth` nested objects. */
static jv *nest_objects(gen *g, int64_t depth)
{
    jv *v = jv_new(g, JV_OBJ);
    for (int64_t i = 1; i < depth; i++) {
        jv *o = jv_new(g, JV_OBJ);
        jv_push(g, o, "a", NULL, v);
        v = o;
    }
    return v;
}

static jv *nest_arrays(gen *g, int64_t depth)
{
    jv *v = jv_new(g, JV_ARR);
    for (int64_t i = 1; i < depth; i++) {
        jv *o = jv_new(g, JV_ARR);
        jv_push(g, o, NULL, NULL, v);
        v = o;
    }
    return v;
}

/* {"pad":"xxx..."} of exactly `bytes` bytes (>= 10). */
static jv *padded_object(gen *g, int64_t bytes)
{
    size_t n = (size_t)(bytes - 10);
    char *x = galloc(g, n + 1);
    memset(x, 'x', n);
    jv *o = jv_new(g, JV_OBJ);
    jv_push(g, o, "pad", NULL, jv_strn(g, x, n));
    return o;
}

static jv *obj1(gen *g, const char *k, jv *v)
{
    jv *o = jv_new(g, JV_OBJ);
    jv_push(g, o, k, NULL, v);
    return o;
}

static void json_tests(gen *g, site *s)
{
    const igw_type *t = s->type;
    const char *P = s->path;
    res dec = want_dec(g, P), ok = want_ok(g);
    bool any = t->json_kind == IGW_JSON_ANY;
    if (any) {
        set_test(g, s, jv_new(g, JV_ARR), &ok, "any-array", "an array is a JSON value", "json any");
        set_test(g, s, jv_str(g, "text"), &ok, "any-string", "a string is a JSON value", "json any");
        set_test(g, s, jv_int(g, 1), &ok, "any-number", "a number is a JSON value", "json any");
        set_test(g, s, jv_bool(g, false), &ok, "any-bool", "a boolean is a JSON value", "json any");
        set_test(g, s, nest_arrays(g, t->max_depth), &ok, "depth-max-arrays",
                 gprintf(g, "arrays nested %" PRId64 " deep (max)", t->max_depth), "json depth max");
        set_test(g, s, nest_arrays(g, t->max_depth + 1), &dec, "depth-max+1-arrays",
                 gprintf(g, "arrays nested %" PRId64 " deep (max+1); points at the field", t->max_depth + 1),
                 "json depth max+1");
    } else {
        set_test(g, s, jv_new(g, JV_ARR), &dec, "type-array", "an array where a JSON object belongs", "json type");
        set_test(g, s, jv_str(g, "{}"), &dec, "type-string", "the string \"{}\" where a JSON object belongs",
                 "json type");
        set_test(g, s, jv_int(g, 1), &dec, "type-number", "a number where a JSON object belongs", "json type");
    }
    set_test(g, s, jv_new(g, JV_OBJ), &ok, "empty", "{}", "json");
    set_test(g, s, nest_objects(g, t->max_depth), &ok, "depth-max",
             gprintf(g, "objects nested %" PRId64 " deep (max; the value itself is level 1)", t->max_depth),
             "json depth max");
    set_test(g, s, nest_objects(g, t->max_depth + 1), &dec, "depth-max+1",
             gprintf(g, "objects nested %" PRId64 " deep (max+1); points at the field", t->max_depth + 1),
             "json depth max+1");
    if (t->max_bytes >= 10) {
        set_test(g, s, padded_object(g, t->max_bytes), &ok, "size-max",
                 gprintf(g, "%" PRId64 " bytes (max)", t->max_bytes), "json size max");
        set_test(g, s, padded_object(g, t->max_bytes + 1), &dec, "size-max+1",
                 gprintf(g, "%" PRId64 " bytes (max+1); points at the field", t->max_bytes + 1), "json size max+1");
    }
    jv *d = obj1(g, "k", jv_int(g, 1));
    jv_push(g, d, "k", NULL, jv_int(g, 2));
    res dk = want_dec(g, gprintf(g, "%s/k", P));
    set_test(g, s, d, &dk, "duplicate-key", "{\"k\":1,\"k\":2}; points at the second key", "json duplicate-key");
    jv *e = obj1(g, "k", jv_int(g, 1));
    jv_push(g, e, "k", "\"\\u006b\"", jv_int(g, 2));
    set_test(g, s, e, &dk, "duplicate-key-escaped", "{\"k\":1,\"\\u006b\":2}", "json duplicate-key escape");
    if (t->max_depth >= 2) {
        jv *in = obj1(g, "k", jv_int(g, 1));
        jv_push(g, in, "k", NULL, jv_int(g, 2));
        res dn = want_dec(g, gprintf(g, "%s/o/k", P));
        set_test(g, s, obj1(g, "o", in), &dn, "duplicate-key-nested", "{\"o\":{\"k\":1,\"k\":2}}",
                 "json duplicate-key");
        jv *same = obj1(g, "k", jv_int(g, 1));
        jv_push(g, same, "o", NULL, obj1(g, "k", jv_int(g, 2)));
        set_test(g, s, same, &ok, "same-key-other-level", "{\"k\":1,\"o\":{\"k\":2}}: not a duplicate", "json");
    }
    res dn = want_dec(g, gprintf(g, "%s/n", P));
    set_test(g, s, obj1(g, "n", jv_num(g, "9007199254740991")), &ok, "int-safe-max", "{\"n\":9007199254740991}",
             "json number");
    set_test(g, s, obj1(g, "n", jv_num(g, "9007199254740992")), &dn, "int-unsafe", "{\"n\":9007199254740992}",
             "json number unsafe");
    set_test(g, s, obj1(g, "n", jv_num(g, "-9007199254740992")), &dn, "int-unsafe-negative",
             "{\"n\":-9007199254740992}", "json number unsafe");
    set_test(g, s, obj1(g, "n", jv_num(g, "1.5")), &ok, "fraction", "{\"n\":1.5}", "json number");
    set_test(g, s, obj1(g, "n", jv_num(g, "1e400")), &dn, "double-overflow", "{\"n\":1e400}", "json number");
    set_test(g, s, obj1(g, "n", jv_null(g)), &ok, "member-null", "{\"n\":null}: null is fine inside a free value",
             "json null");
    set_test(g, s, obj1(g, "n", jv_rawstr(g, "\"\\ud800\"", "?", 1, true)), &dn, "lone-surrogate",
             "{\"n\":\"\\ud800\"}", "json utf8");
}

static void object_value_tests(gen *g, site *s)
{
    res dec = want_dec(g, s->path);
    jv *root = site_base(g, s, 0);
    jv **slot = jv_find(&root, s->path, NULL, NULL);
    if (!slot)
        return;
    size_t len;
    char *text = jv_text(g, *slot, &len);
    set_test(g, s, jv_strn(g, text, len), &dec, "type-string", "the object's JSON text as a string",
             "object type");
    jv *a = jv_new(g, JV_ARR);
    jv_push(g, a, NULL, NULL, *slot);
    set_test(g, s, a, &dec, "type-array", "the object wrapped in an array", "object type");
}

static void value_tests(gen *g, site *s)
{
    res dec = want_dec(g, s->path);
    set_test(g, s, jv_null(g), &dec, "null", "null", "null");
    switch (s->type->kind) {
    case IGW_T_STRING: string_tests(g, s); break;
    case IGW_T_INT: int_tests(g, s); break;
    case IGW_T_BOOL: bool_tests(g, s); break;
    case IGW_T_ENUM: enum_tests(g, s); break;
    case IGW_T_ARRAY: array_tests(g, s); break;
    case IGW_T_JSON: json_tests(g, s); break;
    case IGW_T_OBJECT: object_value_tests(g, s); break;
    case IGW_T_REF: break;
    }
}

/* ---- object sites ----------------------------------------------------------- */

/* The object of the site in a clone, or NULL. */
static jv *site_obj(jv **root, site *s)
{
    jv **slot = jv_find(root, s->path, NULL, NULL);
    return slot && (*slot)->kind == JV_OBJ ? *slot : NULL;
}

typedef struct member_arg {
    const char *key, *kraw;
    jv *val;
    int at; /* -1: append */
} member_arg;

static bool mut_add(gen *g, jv **root, site *s, void *arg)
{
    member_arg *a = arg;
    jv *o = site_obj(root, s);
    if (!o)
        return false;
    if (a->at < 0)
        jv_push(g, o, a->key, a->kraw, a->val);
    else
        jv_insert(g, o, a->at, (jv_mem){a->key, a->kraw, a->val});
    return true;
}

static bool mut_remove(gen *g, jv **root, site *s, void *arg)
{
    (void)g;
    jv *o = site_obj(root, s);
    int i = o ? jv_index(o, arg) : -1;
    if (i < 0)
        return false;
    jv_remove(o, i);
    return true;
}

/* Appends a second occurrence of the member named arg; escaped when the name starts with '\\'. */
static bool mut_dup(gen *g, jv **root, site *s, void *arg)
{
    const char *name = arg;
    bool escape = name[0] == '\\';
    if (escape)
        name++;
    jv *o = site_obj(root, s);
    int i = o ? jv_index(o, name) : -1;
    if (i < 0)
        return false;
    const char *kraw = escape ? gprintf(g, "\"\\u%04x%s\"", (unsigned char)name[0], name + 1) : NULL;
    jv_push(g, o, o->m[i].key, kraw, o->m[i].val);
    return true;
}

static bool mut_empty(gen *g, jv **root, site *s, void *arg)
{
    (void)arg;
    jv **slot = jv_find(root, s->path, NULL, NULL);
    if (!slot)
        return false;
    *slot = jv_new(g, JV_OBJ);
    return true;
}

/* Nulls the first two members and swaps them: the one now first must be reported. */
static bool mut_null_swap(gen *g, jv **root, site *s, void *arg)
{
    (void)arg;
    jv *o = site_obj(root, s);
    if (!o || o->n < 2)
        return false;
    jv_mem a = o->m[0], b = o->m[1];
    a.val = b.val = jv_null(g);
    o->m[0] = b;
    o->m[1] = a;
    return true;
}

static bool mut_reverse(gen *g, jv **root, site *s, void *arg)
{
    (void)g, (void)arg;
    jv *o = site_obj(root, s);
    if (!o || o->n < 2)
        return false;
    for (int i = 0, j = o->n - 1; i < j; i++, j--) {
        jv_mem t = o->m[i];
        o->m[i] = o->m[j];
        o->m[j] = t;
    }
    return true;
}

/* Puts an unknown key first and drops the last required field. */
static bool mut_unknown_then_missing(gen *g, jv **root, site *s, void *arg)
{
    jv *o = site_obj(root, s);
    if (!o)
        return false;
    int drop = -1;
    for (int i = 0; i < o->n; i++) {
        igw_field *f = igw_object_field(s->type, o->m[i].key);
        if (f && !f->optional)
            drop = i;
    }
    if (drop < 0)
        return false;
    jv_remove(o, drop);
    jv_insert(g, o, 0, (jv_mem){arg, NULL, jv_int(g, 1)});
    return true;
}

/* A key the object does not declare. */
static const char *unknown_key(gen *g, const igw_type *t, const char *stem)
{
    const char *k = stem;
    while (igw_object_field(t, k))
        k = gprintf(g, "%s_", k);
    return k;
}

typedef struct switch_arg {
    const igw_field *f;  /* the switch field */
    const char *value;   /* discriminator value the base must have (NULL: any) */
    jv *params;          /* replacement value (cross-case) */
    const char *inner;   /* required field to drop inside the value */
    const char *outer;   /* required sibling to drop */
    const char *disc;    /* replacement discriminator value */
} switch_arg;

/* Per switch_arg: moves the switch member first, then applies the extra defects. */
static bool mut_switch(gen *g, jv **root, site *s, void *arg)
{
    switch_arg *a = arg;
    jv *o = site_obj(root, s);
    if (!o)
        return false;
    int di = jv_index(o, a->f->sw->on), si = jv_index(o, a->f->name);
    if (di < 0 || si < 0)
        return false;
    if (a->value && !lit_match(o->m[di].val, a->value))
        return false;
    if (a->params) {
        o->m[si].val = jv_clone(g, a->params);
        return true;
    }
    jv_mem m = o->m[si];
    if (a->inner) {
        m.val = jv_clone(g, m.val);
        int k = m.val->kind == JV_OBJ ? jv_index(m.val, a->inner) : -1;
        if (k < 0)
            return false;
        jv_remove(m.val, k);
    }
    jv_remove(o, si);
    jv_insert(g, o, 0, m);
    if (a->disc) {
        di = jv_index(o, a->f->sw->on);
        o->m[di].val = jv_str(g, a->disc);
    }
    if (a->outer) {
        int k = jv_index(o, a->outer);
        if (k < 0)
            return false;
        jv_remove(o, k);
    }
    return true;
}

static igw_field *first_required(const igw_type *t, const igw_field *skip1, const igw_field *skip2)
{
    for (int i = 0; i < t->fields.n; i++) {
        igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
        if (!f->optional && !f->reserved && f != skip1 && f != skip2 && !f->sw)
            return f;
    }
    return NULL;
}

/* The value of the switch field in the first base of the site whose discriminator is `value`. */
static jv *case_value(gen *g, site *s, const igw_field *f, const char *value)
{
    for (int i = 0; i < s->nbases; i++) {
        jv *root = IGW_VEC_AT(g->bases, base, s->bases[i])->root;
        jv *o = site_obj(&root, s);
        int di = o ? jv_index(o, f->sw->on) : -1, si = o ? jv_index(o, f->name) : -1;
        if (di >= 0 && si >= 0 && lit_match(o->m[di].val, value))
            return o->m[si].val;
    }
    return NULL;
}

static void switch_tests(gen *g, site *s, const igw_field *f)
{
    const igw_switch *sw = f->sw;
    const char *P = s->path;
    res ok = want_ok(g);
    res bad_disc = want_dec(g, child_path(g, P, sw->on));
    const char *unknown = "unknown.value";
    {
        switch_arg a = {.f = f, .disc = unknown};
        attempt(g, s, mut_switch, &a, &bad_disc, "switch-unknown-discriminator",
                gprintf(g, "%s \"%s\" with %s first: the unknown value is reported, not %s", sw->on, unknown, f->name,
                        f->name),
                "switch discriminator deferred");
    }
    for (int i = 0; i < sw->cases.n; i++) {
        igw_case *c = IGW_VEC_AT(sw->cases, igw_case, i);
        switch_arg a = {.f = f, .value = c->value};
        attempt(g, s, mut_switch, &a, &ok, gprintf(g, "switch-deferred/%s", c->value),
                gprintf(g, "%s before %s=%s: decoded after the object", f->name, sw->on, c->value),
                "switch deferred");
        /* The next case whose value has another type. */
        igw_case *other = NULL;
        for (int k = 1; k < sw->cases.n && !other; k++) {
            igw_case *o = IGW_VEC_AT(sw->cases, igw_case, (i + k) % sw->cases.n);
            if (igw_type_resolve(o->type) != igw_type_resolve(c->type))
                other = o;
        }
        jv *pv = other ? case_value(g, s, f, other->value) : NULL;
        if (pv) {
            switch_arg x = {.f = f, .value = c->value, .params = pv};
            attempt(g, s, mut_switch, &x, NULL, gprintf(g, "switch-cross-case/%s", c->value),
                    gprintf(g, "%s=%s with the %s of %s", sw->on, c->value, f->name, other->value),
                    "switch cross-case");
        }
    }
    /* Deferred value with an error inside; then the same with a missing sibling, which wins. */
    for (int i = 0; i < s->nbases; i++) {
        jv *root = site_base(g, s, i);
        jv *o = site_obj(&root, s);
        int di = o ? jv_index(o, sw->on) : -1;
        igw_case *c = di >= 0 ? switch_case(sw, o->m[di].val) : NULL;
        igw_field *inner = c ? first_required(igw_type_resolve(c->type), NULL, NULL) : NULL;
        if (!inner)
            continue;
        switch_arg a = {.f = f, .value = c->value, .inner = inner->name};
        res w = want_dec(g, child_path(g, child_path(g, P, f->name), inner->name));
        attempt(g, s, mut_switch, &a, &w, "switch-deferred-inner-missing",
                gprintf(g, "%s first, its %s missing: reported after the object", f->name, inner->name),
                "switch deferred");
        igw_field *outer = first_required(s->type, sw->on_field, NULL);
        if (outer) {
            a.outer = outer->name;
            res w2 = want_dec(g, child_path(g, P, outer->name));
            attempt(g, s, mut_switch, &a, &w2, "switch-deferred-after-missing",
                    gprintf(g, "%s first with %s missing inside, and %s missing: missing fields come first",
                            f->name, inner->name, outer->name),
                    "switch deferred order");
        }
        break;
    }
}

typedef struct rule_arg {
    const igw_type *t;
    const igw_rule *r;
    int only;             /* require/forbid: -1 all listed fields, else that one */
    const igw_field *move; /* check: the field to move */
    int64_t target;       /* check: lhs - rhs */
} rule_arg;

static bool mut_rule(gen *g, jv **root, site *s, void *arg)
{
    rule_arg *a = arg;
    const igw_rule *r = a->r;
    jv *o = site_obj(root, s);
    if (!o)
        return false;
    jv **vals = obj_vals(g, a->t, o);
    if (r->kind == IGW_R_CHECK) {
        if (!operand_present(&r->lhs, vals) || !operand_present(&r->rhs, vals))
            return false;
        if (!set_diff(g, r, vals, a->move, a->target))
            return false;
        o->m[jv_index(o, a->move->name)].val = vals[a->move->index];
        return true;
    }
    if (r->when && !cond_eval(r->when, vals))
        return false;
    for (int i = 0; i < r->frefs.n; i++) {
        const igw_field *f = IGW_VEC_AT(r->frefs, igw_field, i);
        if (a->only >= 0 && i != a->only)
            continue;
        int k = jv_index(o, f->name);
        if (r->kind == IGW_R_REQUIRE) {
            if (k < 0)
                return false;
            jv_remove(o, k);
        } else {
            if (k >= 0)
                return false;
            igw_out path;
            igw_out_init(&path);
            jv_push(g, o, f->name, NULL, gen_value(g, f->type, MODE_MIN, NULL, &path, f->name, 0));
            igw_out_free(&path);
        }
    }
    return true;
}

static const char *rule_text(gen *g, const igw_rule *r)
{
    igw_out o;
    igw_out_init(&o);
    if (r->kind == IGW_R_CHECK) {
        static const char *const ops[] = {"<", "<=", ">", ">="};
        const igw_operand *x[2] = {&r->lhs, &r->rhs};
        for (int i = 0; i < 2; i++) {
            if (i)
                igw_out_printf(&o, " %s ", ops[r->cmp]);
            if (x[i]->is_const)
                igw_out_printf(&o, "%" PRId64, x[i]->value);
            else
                igw_out_printf(&o, "%s%s%s", x[i]->a, x[i]->b ? " - " : "", x[i]->b ? x[i]->b : "");
        }
    } else {
        igw_out_puts(&o, r->kind == IGW_R_REQUIRE ? "require " : "forbid ");
        for (int i = 0; i < r->fields.n; i++)
            igw_out_printf(&o, "%s%s", i ? ", " : "", IGW_VEC_AT(r->fields, const char, i));
        if (r->origin)
            igw_out_printf(&o, " (%s case %s)", r->origin, IGW_VEC_AT(r->when->values, const char, 0));
    }
    const char *t = gstrdup(g, out_str(&o));
    igw_out_free(&o);
    return t;
}

static void rule_tests(gen *g, site *s)
{
    const igw_type *t = s->type;
    for (int k = 0; k < t->rules.n; k++) {
        const igw_rule *r = IGW_VEC_AT(t->rules, igw_rule, k);
        const char *text = rule_text(g, r);
        const char *tag = r->origin ? gprintf(g, "rule %s", r->origin) : "rule";
        if (r->kind == IGW_R_CHECK) {
            const igw_field *fs[4];
            int n = check_fields(r, fs);
            res viol = want_dec(g, child_path(g, s->path, check_target(r)->name)), ok = want_ok(g);
            for (int edge = 0; edge < 2; edge++) {
                for (int i = 0; i < n; i++) {
                    rule_arg a = {t, r, -1, fs[i], check_edge(r->cmp, edge == 0)};
                    attempt(g, s, mut_rule, &a, edge == 0 ? &ok : &viol,
                            gprintf(g, "rule%d-check-%s/%s", k + 1, edge == 0 ? "edge" : "broken", fs[i]->name),
                            gprintf(g, "check %s %s by moving %s (lhs - rhs = %" PRId64 ")", text,
                                    edge == 0 ? "holds at its edge" : "broken just past its edge", fs[i]->name,
                                    a.target),
                            gprintf(g, "%s check %s", tag, edge == 0 ? "edge" : "broken"));
                }
            }
            continue;
        }
        bool req = r->kind == IGW_R_REQUIRE;
        for (int j = -1; j < r->frefs.n; j++) {
            if (j >= 0 && r->frefs.n < 2)
                break;
            const igw_field *at = IGW_VEC_AT(r->frefs, igw_field, j < 0 ? 0 : j);
            res want = want_dec(g, child_path(g, s->path, at->name));
            rule_arg a = {t, r, j, NULL, 0};
            const char *which = j < 0 ? (r->frefs.n > 1 ? "all" : at->name) : at->name;
            const char *when = r->origin ? gprintf(g, "[%s]", IGW_VEC_AT(r->when->values, const char, 0)) : "";
            attempt(g, s, mut_rule, &a, &want,
                    gprintf(g, "rule%d-%s%s/%s", k + 1, req ? "require" : "forbid", when, which),
                    gprintf(g, "breaks `%s`: %s %s", text, j < 0 && r->frefs.n > 1 ? "every listed field" : at->name,
                            req ? "absent" : "present"),
                    gprintf(g, "%s %s", tag, req ? "require" : "forbid"));
        }
    }
}

static void object_tests(gen *g, site *s)
{
    const igw_type *t = s->type;
    const char *P = s->path;
    res ok = want_ok(g);
    jv *root0 = site_base(g, s, 0);
    jv *o0 = site_obj(&root0, s);
    if (!o0)
        return;

    const char *uk = unknown_key(g, t, "unknownField");
    res wu = want_dec(g, child_path(g, P, uk));
    member_arg add = {uk, NULL, jv_int(g, 1), -1};
    attempt(g, s, mut_add, &add, &wu, "unknown-field", gprintf(g, "undeclared member \"%s\"", uk),
            "object unknown-field");
    if (!P[0]) {
        const char *odd = unknown_key(g, t, "a/b~c");
        res wo = want_dec(g, child_path(g, P, odd));
        member_arg a2 = {odd, NULL, jv_int(g, 1), -1};
        attempt(g, s, mut_add, &a2, &wo, "unknown-field-escaped-pointer",
                "undeclared member \"a/b~c\": the pointer escapes '/' and '~'", "object unknown-field pointer");
    }
    if (t->fields.n) {
        const char *name = IGW_VEC_AT(t->fields, igw_field, 0)->name;
        char *flip = gstrdup(g, name);
        flip[0] = (char)(is_alpha(flip[0]) ? flip[0] ^ 0x20 : flip[0]);
        if (!igw_object_field(t, flip)) {
            res wf = want_dec(g, child_path(g, P, flip));
            member_arg a3 = {flip, NULL, jv_int(g, 1), -1};
            attempt(g, s, mut_add, &a3, &wf, "unknown-field-case",
                    gprintf(g, "\"%s\": keys are case-sensitive", flip), "object unknown-field");
        }
    }
    attempt(g, s, mut_unknown_then_missing, (void *)uk, &wu, "unknown-before-missing",
            "an undeclared member first and a required field missing: the member is reported",
            "object unknown-field order");

    /* Duplicates: the first member plainly, the first required one escaped. */
    if (o0->n) {
        res wd = want_dec(g, child_path(g, P, o0->m[0].key));
        attempt(g, s, mut_dup, (void *)o0->m[0].key, &wd, "duplicate-key",
                gprintf(g, "\"%s\" twice; points at the second", o0->m[0].key), "object duplicate-key");
    }
    igw_field *req = first_required(t, NULL, NULL);
    if (req) {
        res wd = want_dec(g, child_path(g, P, req->name));
        attempt(g, s, mut_dup, gprintf(g, "\\%s", req->name), &wd, "duplicate-key-escaped",
                gprintf(g, "\"%s\" and again with its first character \\u-escaped", req->name),
                "object duplicate-key escape");
    }

    /* Missing required fields, one at a time, and all of them. */
    for (int i = 0; i < t->fields.n; i++) {
        igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
        if (f->optional)
            continue;
        res wm = want_dec(g, child_path(g, P, f->name));
        attempt(g, s, mut_remove, (void *)f->name, &wm, gprintf(g, "missing/%s", f->name),
                gprintf(g, "required %s absent", f->name), "object missing");
    }
    if (req || (t->fields.n && !IGW_VEC_AT(t->fields, igw_field, 0)->optional))
        attempt(g, s, mut_empty, NULL, NULL, "empty-object", "{}: the first required field is reported",
                "object missing");
    else
        attempt(g, s, mut_empty, NULL, &ok, "empty-object", "{}: nothing is required", "object");

    /* Document order decides between two offending members. */
    if (o0->n >= 2) {
        res wn = want_dec(g, child_path(g, P, o0->m[1].key));
        attempt(g, s, mut_null_swap, NULL, &wn, "first-error-wins",
                gprintf(g, "%s and %s null, %s first: the first in document order is reported", o0->m[1].key,
                        o0->m[0].key, o0->m[1].key),
                "object order");
        attempt(g, s, mut_reverse, NULL, &ok, "members-reversed", "members in reverse declaration order",
                "object order");
    }

    /* Reserved fields: known, refused. */
    for (int i = 0; i < t->fields.n; i++) {
        igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
        if (!f->reserved)
            continue;
        igw_out path;
        igw_out_init(&path);
        jv *v = gen_value(g, f->type, MODE_MIN, NULL, &path, f->name, 0);
        igw_out_free(&path);
        res wr = {g->reserved, child_path(g, P, f->name)};
        member_arg a = {f->name, NULL, v, -1};
        attempt(g, s, mut_add, &a, &wr, gprintf(g, "reserved/%s", f->name),
                gprintf(g, "%s is known but not open in this version", f->name), "reserved");
        member_arg first = {f->name, NULL, v, 0};
        attempt(g, s, mut_add, &first, &wr, gprintf(g, "reserved-first/%s", f->name),
                gprintf(g, "%s first, so it is reported before anything later", f->name), "reserved order");
    }

    for (int i = 0; i < t->fields.n; i++) {
        igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
        if (f->sw)
            switch_tests(g, s, f);
    }
    rule_tests(g, s);
}

/* ---- body-level vectors ---------------------------------------------------------- */

static void string_site_tests(gen *g, site *s)
{
    res dec = want_dec(g, s->path);
    static const struct {
        const char *bytes, *test, *what;
    } utf8[] = {
        {"\xff", "utf8-byte-ff", "byte 0xFF"},
        {"\x80", "utf8-lone-continuation", "a lone continuation byte"},
        {"\xc3", "utf8-truncated-2", "a 2-byte sequence cut short"},
        {"\xe2\x82", "utf8-truncated-3", "a 3-byte sequence cut short"},
        {"\xc0\xaf", "utf8-overlong", "an overlong encoding of '/'"},
        {"\xed\xa0\x80", "utf8-surrogate", "an encoded surrogate (U+D800)"},
        {"\xf4\x90\x80\x80", "utf8-above-max", "a code point above U+10FFFF"},
    };
    for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++) {
        char *t = gprintf(g, "a%sb", utf8[i].bytes);
        set_test(g, s, jv_strn(g, t, strlen(t)), &dec, utf8[i].test,
                 gprintf(g, "invalid UTF-8 in a string: %s", utf8[i].what), "body utf8");
    }
    static const struct {
        const char *raw, *test, *what;
    } esc[] = {
        {"\"a\\ud800b\"", "escape-lone-high", "lone high surrogate escape \\ud800"},
        {"\"a\\udc00b\"", "escape-lone-low", "lone low surrogate escape \\udc00"},
        {"\"a\\ud800\\u0041\"", "escape-high-then-ascii", "\\ud800 followed by \\u0041"},
        {"\"a\\ud800\"", "escape-high-at-end", "\\ud800 at the end of the string"},
        {"\"\\udfff\\ud800\"", "escape-pair-reversed", "low then high surrogate"},
        {"\"a\\qb\"", "escape-unknown", "unknown escape \\q"},
        {"\"a\\u12\"", "escape-short-u", "\\u with two hex digits"},
        {"\"a\tb\"", "raw-tab", "a raw tab byte inside a string"},
        {"\"a\x01z\"", "raw-control", "a raw U+0001 byte inside a string"},
    };
    for (size_t i = 0; i < sizeof esc / sizeof esc[0]; i++)
        set_test(g, s, jv_rawstr(g, esc[i].raw, "?", 1, true), &dec, esc[i].test, esc[i].what, "body string");
}

static void body_tests(gen *g, site *root_site)
{
    const base *b0 = IGW_VEC_AT(g->bases, base, root_site->bases[0]);
    size_t len;
    const char *text = jv_text(g, b0->root, &len);
    const char *L = "body";
#define TXT(test, what, tags, a, an, b, bn, root, junk)                                                          \
    do {                                                                                                           \
        char *t_ = gcat(g, a, an, b, bn);                                                                          \
        emit_text(g, L, test, what, tags, t_, (an) + (bn), root, junk);                                            \
    } while (0)
    TXT("empty", "empty body", "body empty", "", 0, "", 0, NULL, false);
    TXT("whitespace-only", "only whitespace", "body empty", " \r\n\t", 4, "", 0, NULL, false);
    TXT("open-brace", "a lone '{'", "body syntax", "{", 1, "", 0, NULL, false);
    TXT("bom", "a UTF-8 byte order mark before the object", "body syntax", "\xef\xbb\xbf", 3, text, len, NULL, false);
    TXT("leading-whitespace", "SP HT CR LF before the object", "body whitespace", " \t\r\n", 4, text, len, b0->root,
        false);
    TXT("trailing-whitespace", "SP HT CR LF after the object", "body whitespace", text, len, " \t\r\n", 4, b0->root,
        false);
    TXT("trailing-bytes", "\" x\" after the object", "body trailing", text, len, " x", 2, b0->root, true);
    TXT("trailing-value", "a second object after the first", "body trailing", text, len, "{}", 2, b0->root, true);
    TXT("trailing-comma", "',' after the object", "body trailing", text, len, ",", 1, b0->root, true);
    {
        jv *a = jv_new(g, JV_ARR);
        jv_push(g, a, NULL, NULL, b0->root);
        char *t = gprintf(g, "[%s]", text);
        emit_text(g, L, "top-level-array", "the valid object inside an array", "body type", t, len + 2, a, false);
        jv *sv = jv_strn(g, text, len);
        size_t sl;
        char *st = jv_text(g, sv, &sl);
        emit_text(g, L, "top-level-string", "the valid object's text as a JSON string", "body type", st, sl, sv,
                  false);
        emit_text(g, L, "top-level-null", "null", "body type", "null", 4, jv_null(g), false);
        emit_text(g, L, "top-level-number", "1", "body type", "1", 1, jv_int(g, 1), false);
        emit_text(g, L, "top-level-true", "true", "body type", "true", 4, jv_bool(g, true), false);
    }
    int64_t cap = g->r->body_limit;
    if ((int64_t)len <= cap) {
        size_t pad = (size_t)cap - len;
        char *sp = galloc(g, pad + 2);
        memset(sp, ' ', pad + 1);
        TXT("cap-exact", gprintf(g, "minimal body padded with spaces to exactly %" PRId64 " bytes", cap),
            "body cap exact", text, len, sp, pad, b0->root, false);
        TXT("cap+1", gprintf(g, "minimal body padded with spaces to %" PRId64 " bytes (cap+1)", cap + 1),
            "body cap over", text, len, sp, pad + 1, b0->root, false);
        char *junk = galloc(g, (size_t)cap + 2);
        memset(junk, ' ', (size_t)cap + 1);
        junk[0] = '[';
        emit_text(g, L, "cap+1-not-json", gprintf(g, "%" PRId64 " bytes that are not an object: the cap comes first",
                                                  cap + 1),
                  "body cap over", junk, (size_t)cap + 1, NULL, false);
    }
#undef TXT
    /* Encoding defects, on the first string of the minimal body. */
    for (int i = 0; i < g->sites.n; i++) {
        site *s = IGW_VEC_AT(g->sites, site, i);
        if (s->kind == SITE_VALUE && s->type->kind == IGW_T_STRING) {
            string_site_tests(g, s);
            break;
        }
    }
}

/* ---- routes ------------------------------------------------------------------ */

/* Concrete request path: conventional examples where they fit the parameter, else a sample. */
static const char *request_path(gen *g)
{
    static const struct {
        const char *name, *value;
    } examples[] = {{"handle", "thing"}, {"type", "property"}};
    igw_out o;
    igw_out_init(&o);
    int k = 0;
    for (const char *p = g->r->path; *p; p++) {
        if (*p != '{') {
            igw_out_write(&o, p, 1);
            continue;
        }
        const char *e = strchr(p, '}');
        igw_field *f = k < g->r->params.n ? IGW_VEC_AT(g->r->params, igw_field, k++) : NULL;
        const char *v = NULL;
        igw_type *t = f ? igw_type_resolve(f->type) : NULL;
        for (size_t i = 0; t && i < sizeof examples / sizeof examples[0] && !v; i++)
            if (strcmp(examples[i].name, f->name) == 0 && t->kind == IGW_T_STRING &&
                (int64_t)strlen(examples[i].value) >= t->min_len && (int64_t)strlen(examples[i].value) <= t->max_len &&
                format_ok(t->format, examples[i].value, strlen(examples[i].value)))
                v = examples[i].value;
        if (!v && t && t->kind == IGW_T_ENUM)
            v = IGW_VEC_AT(t->values, const char, 0);
        if (!v && t) {
            int64_t n = (int64_t)strlen(f->name);
            n = n < t->min_len ? t->min_len : n > t->max_len ? t->max_len : n;
            v = sample_string(g, t, f->name, 0, n)->s;
        }
        igw_out_puts(&o, v ? v : "x");
        p = e ? e : p + strlen(p) - 1;
    }
    const char *r = gstrdup(g, out_str(&o));
    igw_out_free(&o);
    return r;
}

static void build_bases(gen *g)
{
    variant *v0 = galloc(g, sizeof *v0);
    v0->key = v0->desc = "";
    igw_vec_push(&g->variants, v0);
    for (int i = 0; i < g->variants.n; i++) {
        variant *v = IGW_VEC_AT(g->variants, variant, i);
        for (int mode = MODE_MIN; mode <= MODE_MAX; mode++) {
            igw_out path;
            igw_out_init(&path);
            find_dims(g, v, g->r->body_type, gen_root(g, v, mode), &path);
            igw_out_free(&path);
        }
    }
    igw_vec texts = {0};
    for (int mode = MODE_MIN; mode <= MODE_MAX; mode++) {
        for (int i = 0; i < g->variants.n; i++) {
            variant *v = IGW_VEC_AT(g->variants, variant, i);
            jv *root = gen_root(g, v, mode);
            size_t len;
            char *text = jv_text(g, root, &len);
            res r = sim_body(g, root, len, false);
            if (r.e != g->ok) {
                if (g->verbose)
                    fprintf(stderr, "igw-gen: vectors: %s: no valid %s body for {%s}: %s\n", g->r->name,
                            mode == MODE_MIN ? "minimal" : "maximal", v->desc, res_str(g, r));
                continue;
            }
            bool dup = false;
            for (int k = 0; k < texts.n && !dup; k++)
                dup = strcmp(IGW_VEC_AT(texts, const char, k), text) == 0;
            if (dup)
                continue;
            igw_vec_push(&texts, text);
            base *b = galloc(g, sizeof *b);
            *b = (base){root, v, mode};
            igw_vec_push(&g->bases, b);
        }
    }
    free(texts.v);
}

static void emit_bases(gen *g)
{
    for (int i = 0; i < g->bases.n; i++) {
        base *b = IGW_VEC_AT(g->bases, base, i);
        bool min = b->mode == MODE_MIN;
        size_t len;
        char *text = jv_text(g, b->root, &len);
        const char *what = min ? "minimal body: required fields only, least values, rules satisfied"
                               : "maximal body: every open field, greatest values and sizes, rules satisfied";
        if (b->var->n)
            what = gprintf(g, "%s; with %s", what, b->var->desc);
        emit_vec(g, "valid", gprintf(g, "%s%s%s", min ? "min" : "max", b->var->n ? "/" : "", b->var->desc), what,
                 gprintf(g, "valid %s%s", min ? "minimal" : "maximal", b->var->n ? " variant" : ""), text, len,
                 sim_body(g, b->root, len, false));
    }
}

static void json_route(gen *g)
{
    build_bases(g);
    if (g->bases.n == 0) {
        fprintf(stderr, "igw-gen: vectors: route %s: no valid body could be built\n", g->r->name);
        return;
    }
    for (int i = 0; i < g->bases.n; i++) {
        igw_out path, label;
        igw_out_init(&path);
        igw_out_init(&label);
        walk_sites(g, i, g->r->body_type, IGW_VEC_AT(g->bases, base, i)->root, &path, &label, NULL, "body", 0);
        igw_out_free(&path);
        igw_out_free(&label);
    }
    emit_bases(g);
    site *root = NULL;
    for (int i = 0; i < g->sites.n && !root; i++) {
        site *s = IGW_VEC_AT(g->sites, site, i);
        if (s->kind == SITE_OBJECT && !s->path[0])
            root = s;
    }
    if (root)
        body_tests(g, root);
    for (int i = 0; i < g->sites.n; i++) {
        site *s = IGW_VEC_AT(g->sites, site, i);
        if (s->kind == SITE_OBJECT)
            object_tests(g, s);
        else
            value_tests(g, s);
    }
}

static void none_route(gen *g)
{
    emit_text(g, "body", "empty", "no body: the route takes none", "valid body empty", "", 0, NULL, false);
    emit_text(g, "body", "empty-object", "{} where the route takes no body", "body none", "{}", 2, jv_new(g, JV_OBJ),
              false);
}

static void gen_free(gen *g)
{
    for (int i = 0; i < g->mem.n; i++)
        free(g->mem.v[i]);
    free(g->mem.v);
    free(g->bodies.v);
    free(g->ids.v);
    free(g->variants.v);
    free(g->bases.v);
    free(g->sites.v);
    free(g->fmt_done.v);
    igw_out_free(&g->out);
}

/* Route-level vectors: the route table refuses a wrong method (405 class)
 * and a path that only looks like the route (404 class) before any body. */
static void header_rule_vectors(gen *g);

/* A JSON route's Content-Type: missing, another media type, a charset that
 * is not UTF-8 (refused: JSON is UTF-8), and UTF-8 spelled as clients do
 * (accepted), each with the first valid body. */
static void content_type_vectors(gen *g)
{
    if (g->r->body != IGW_BODY_JSON || !g->bases.n)
        return;
    static const struct {
        const char *test, *what, *ct; /* ct NULL: no header */
        bool ok;
    } cases[] = {
        {"missing", "no Content-Type", NULL, false},
        {"text-plain", "Content-Type text/plain", "text/plain", false},
        {"charset-latin1", "a charset that is not UTF-8", "application/json; charset=iso-8859-1", false},
        {"charset-quoted-utf8", "charset \"UTF-8\", quoted, upper case", "Application/JSON;charset=\"UTF-8\"", true},
    };
    const igw_error *mt = igw_schema_error_role(g->s, IGW_ROLE_MEDIA);
    size_t len;
    const char *body = jv_text(g, IGW_VEC_AT(g->bases, base, 0)->root, &len);
    igw_out *o = &g->out;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        igw_out_puts(o, "{\"id\":");
        igw_out_json_string(o, unique_id(g, gprintf(g, "%s/content-type/%s", g->r->name, cases[i].test)));
        igw_out_puts(o, ",\"doc\":");
        igw_out_json_string(o, gprintf(g, "content type: %s", cases[i].what));
        igw_out_puts(o, ",\"tags\":[\"content-type\"],\"request\":{\"method\":");
        igw_out_json_string(o, g->r->method);
        igw_out_puts(o, ",\"path\":");
        igw_out_json_string(o, g->req_path);
        igw_out_puts(o, ",\"headers\":{");
        if (cases[i].ct) {
            igw_out_puts(o, "\"content-type\":");
            igw_out_json_string(o, cases[i].ct);
        }
        igw_out_puts(o, "},\"body\":");
        igw_out_json_string(o, gstrndup(g, body, len));
        if (cases[i].ok)
            igw_out_puts(o, "},\"expect\":{\"status\":200,\"code\":200,\"path\":\"\"}}\n");
        else
            igw_out_printf(o, "},\"expect\":{\"status\":%d,\"code\":%" PRId64 ",\"path\":\"\"}}\n", mt->http, mt->code);
    }
}

static void route_vectors(gen *g)
{
    static const struct {
        const char *test, *what;
        unsigned role;
        bool wrong_method;
        const char *prefix, *suffix;
    } cases[] = {
        {"wrong-method", "the route's path with another HTTP method", IGW_ROLE_METHOD, true, "", ""},
        {"trailing-slash", "the route's path with a trailing '/'", IGW_ROLE_NO_ROUTE, false, "", "/"},
        {"prefixed", "the route's path below another first segment", IGW_ROLE_NO_ROUTE, false, "/x", ""},
    };
    igw_out *o = &g->out;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const igw_error *e = igw_schema_error_role(g->s, cases[i].role);
        const char *id = unique_id(g, gprintf(g, "%s/route/%s", g->r->name, cases[i].test));
        igw_out_puts(o, "{\"id\":");
        igw_out_json_string(o, id);
        igw_out_puts(o, ",\"doc\":");
        igw_out_json_string(o, gprintf(g, "route: %s", cases[i].what));
        igw_out_puts(o, ",\"tags\":[\"route\"],\"request\":{\"method\":");
        igw_out_json_string(o, cases[i].wrong_method ? (strcmp(g->r->method, "GET") == 0 ? "POST" : "GET")
                                                     : g->r->method);
        igw_out_puts(o, ",\"path\":");
        igw_out_json_string(o, gprintf(g, "%s%s%s", cases[i].prefix, g->req_path, cases[i].suffix));
        igw_out_printf(o, ",\"headers\":{},\"body\":\"\"},\"expect\":{\"status\":%d,\"code\":%" PRId64
                          ",\"path\":\"\"}}\n",
                       e->http, e->code);
    }
    /* Path parameters and headers are text from outside JSON: a control
     * character is refused by the strict stage whatever the value's rule,
     * before the body is read. */
    const igw_error *dec = igw_schema_error_role(g->s, IGW_ROLE_DECODE);
    size_t len;
    const char *body = g->bases.n ? jv_text(g, IGW_VEC_AT(g->bases, base, 0)->root, &len) : "";
    for (int i = 0; i < g->r->params.n + g->r->headers.n; i++) {
        bool header = i >= g->r->params.n;
        const igw_field *f = header ? IGW_VEC_AT(g->r->headers, igw_field, i - g->r->params.n)
                                    : IGW_VEC_AT(g->r->params, igw_field, i);
        const char *id = unique_id(g, gprintf(g, "%s/%s/%s/control-character", g->r->name,
                                              header ? "header" : "param", f->name));
        igw_out_puts(o, "{\"id\":");
        igw_out_json_string(o, id);
        igw_out_puts(o, ",\"doc\":");
        igw_out_json_string(o, gprintf(g, "%s %s carries a control character", header ? "header" : "path parameter",
                                       f->name));
        igw_out_printf(o, ",\"tags\":[\"%s\",\"text\"],\"request\":{\"method\":", header ? "header" : "param");
        igw_out_json_string(o, g->r->method);
        igw_out_puts(o, ",\"path\":");
        const char *path = g->req_path;
        if (!header) {
            /* Replace the i-th parameter segment of the concrete path. */
            igw_out seg;
            igw_out_init(&seg);
            int n = -1;
            for (const char *t = g->r->path, *q = g->req_path; *t;) {
                if (*t == '{') {
                    n++;
                    size_t k = strcspn(q, "/");
                    if (n == i)
                        igw_out_puts(&seg, "a\001b"); /* octal: a hex escape would swallow the b */
                    else
                        igw_out_write(&seg, q, k);
                    q += k;
                    const char *close = strchr(t, '}'); /* sema checked the braces */
                    t = close ? close + 1 : t + strlen(t);
                } else {
                    igw_out_write(&seg, t, 1);
                    t++;
                    q++;
                }
            }
            path = gprintf(g, "%s", out_str(&seg));
            igw_out_free(&seg);
        }
        igw_out_json_string(o, path);
        igw_out_puts(o, ",\"headers\":{");
        if (g->r->body != IGW_BODY_NONE)
            igw_out_puts(o, "\"content-type\":\"application/json\"");
        if (header) {
            igw_out_puts(o, g->r->body != IGW_BODY_NONE ? "," : "");
            igw_out_json_string(o, f->name);
            igw_out_puts(o, ":\"a\\u0001b\"");
        }
        igw_out_puts(o, "},\"body\":");
        igw_out_json_string(o, gstrndup(g, body, g->r->body == IGW_BODY_NONE ? 0 : len));
        igw_out_printf(o, "},\"expect\":{\"status\":%d,\"code\":%" PRId64 ",\"path\":\"\"}}\n", dec->http,
                       dec->code);
    }
    header_rule_vectors(g);
    content_type_vectors(g);
}

/* A valid value of header f: its enum's first value, else a sample of its
 * string type from its name. */
static const char *header_sample(gen *g, const igw_field *f)
{
    igw_type *t = igw_type_resolve(f->type);
    if (t->kind == IGW_T_ENUM)
        return IGW_VEC_AT(t->values, const char, 0);
    int64_t n = (int64_t)strlen(f->name);
    n = n < t->min_len ? t->min_len : n > t->max_len ? t->max_len : n;
    return sample_string(g, t, f->name, 0, n)->s;
}

/* The headers a condition needs present, when it is presence joined by
 * `and` (the shape header rules take); false for any other shape. */
static bool present_set(const igw_cond *c, const char **names, int *n, int max)
{
    if (c->op == IGW_C_PRESENT) {
        if (*n >= max)
            return false;
        names[(*n)++] = c->field;
        return true;
    }
    return c->op == IGW_C_AND && present_set(c->a, names, n, max) && present_set(c->b, names, n, max);
}

static void header_request(gen *g, const char *const *names, const char *const *values, int n)
{
    igw_out *o = &g->out;
    size_t len;
    const char *body = g->bases.n ? jv_text(g, IGW_VEC_AT(g->bases, base, 0)->root, &len) : "";
    igw_out_puts(o, ",\"request\":{\"method\":");
    igw_out_json_string(o, g->r->method);
    igw_out_puts(o, ",\"path\":");
    igw_out_json_string(o, g->req_path);
    igw_out_puts(o, ",\"headers\":{");
    bool comma = false;
    if (g->r->body != IGW_BODY_NONE) {
        igw_out_puts(o, "\"content-type\":\"application/json\"");
        comma = true;
    }
    for (int i = 0; i < n; i++) {
        igw_out_puts(o, comma ? "," : "");
        comma = true;
        igw_out_json_string(o, names[i]);
        igw_out_puts(o, ":");
        igw_out_json_string(o, values[i]);
    }
    igw_out_puts(o, "},\"body\":");
    igw_out_json_string(o, gstrndup(g, body, g->r->body == IGW_BODY_NONE ? 0 : len));
    igw_out_puts(o, "}");
}

/* The route's header rules: each broken alone (its condition's headers
 * present, its target absent for require, present for forbid), and, when
 * every rule is a require, all the optional headers together (valid). */
static void header_rule_vectors(gen *g)
{
    if (!g->r->rules.n)
        return;
    igw_out *o = &g->out;
    const igw_error *dec = igw_schema_error_role(g->s, IGW_ROLE_DECODE);
    bool all_require = true;
    for (int ri = 0; ri < g->r->rules.n; ri++) {
        const igw_rule *rule = IGW_VEC_AT(g->r->rules, igw_rule, ri);
        all_require = all_require && rule->kind == IGW_R_REQUIRE;
        const char *names[16];
        int n = 0;
        if (!present_set(rule->when, names, &n, 15))
            continue;
        for (int fi = 0; fi < rule->frefs.n; fi++) {
            const igw_field *f = IGW_VEC_AT(rule->frefs, igw_field, fi);
            const char *hn[16], *hv[16];
            int k = 0;
            for (int i = 0; i < n; i++) {
                const igw_field *h = NULL;
                for (int xi = 0; xi < g->r->headers.n; xi++)
                    if (strcmp(IGW_VEC_AT(g->r->headers, igw_field, xi)->name, names[i]) == 0)
                        h = IGW_VEC_AT(g->r->headers, igw_field, xi);
                if (!h || (rule->kind == IGW_R_REQUIRE && h == f))
                    continue;
                hn[k] = h->name;
                hv[k++] = header_sample(g, h);
            }
            if (rule->kind == IGW_R_FORBID && k < 16) {
                hn[k] = f->name;
                hv[k++] = header_sample(g, f);
            }
            igw_out_puts(o, "{\"id\":");
            igw_out_json_string(o, unique_id(g, gprintf(g, "%s/header/rule%d-%s/%s", g->r->name, ri + 1,
                                                        rule->kind == IGW_R_REQUIRE ? "require" : "forbid", f->name)));
            igw_out_puts(o, ",\"doc\":");
            igw_out_json_string(o, gprintf(g, "headers: breaks `%s`", rule_text(g, rule)));
            igw_out_puts(o, ",\"tags\":[\"header\",\"rule\"]");
            header_request(g, hn, hv, k);
            igw_out_printf(o, ",\"expect\":{\"status\":%d,\"code\":%" PRId64 ",\"path\":", dec->http, dec->code);
            igw_out_json_string(o, f->name);
            igw_out_puts(o, "}}\n");
        }
    }
    if (!all_require)
        return;
    const char *hn[16], *hv[16];
    int k = 0;
    for (int hi = 0; hi < g->r->headers.n; hi++) {
        const igw_field *h = IGW_VEC_AT(g->r->headers, igw_field, hi);
        if (h->optional && k < 16) {
            hn[k] = h->name;
            hv[k++] = header_sample(g, h);
        }
    }
    igw_out_puts(o, "{\"id\":");
    igw_out_json_string(o, unique_id(g, gprintf(g, "%s/header/rules-hold", g->r->name)));
    igw_out_puts(o, ",\"doc\":\"headers: every optional header present, every header rule holds\"");
    igw_out_puts(o, ",\"tags\":[\"header\",\"rule\",\"valid\"]");
    header_request(g, hn, hv, k);
    igw_out_puts(o, ",\"expect\":{\"status\":200,\"code\":200,\"path\":\"\"}}\n");
}

int igw_emit_vectors(const igw_schema *s, const char *gen_dir)
{
    const char *verbose = getenv("IGW_GEN_VERBOSE");
    igw_out banner;
    igw_out_init(&banner);
    igw_out_banner(&banner, s, "");
    /* " generated by igw-gen from a.igw b.igw; do not edit\n" -> "igw-gen from ...; do not edit" */
    const char *bt = out_str(&banner);
    const char *from = strstr(bt, "igw-gen");
    char *by = igw_xstrndup(from ? from : bt, strcspn(from ? from : bt, "\n"));
    igw_out_free(&banner);
    int rc = 0;
    for (int i = 0; i < s->routes.n && rc == 0; i++) {
        igw_route *r = IGW_VEC_AT(s->routes, igw_route, i);
        if (r->body == IGW_BODY_MULTIPART)
            continue;
        gen g;
        memset(&g, 0, sizeof g);
        g.s = s;
        g.r = r;
        g.verbose = verbose && *verbose && strcmp(verbose, "0") != 0;
        g.ok = igw_schema_error_role(s, IGW_ROLE_OK);
        g.decode = igw_schema_error_role(s, IGW_ROLE_DECODE);
        g.reserved = igw_schema_error_role(s, IGW_ROLE_RESERVED);
        g.cap = igw_schema_error_role(s, IGW_ROLE_BODY_CAP);
        g.req_path = request_path(&g);
        igw_out_puts(&g.out, "{\"generated_by\":");
        igw_out_json_string(&g.out, by);
        igw_out_puts(&g.out, "}\n");
        if (r->body == IGW_BODY_NONE)
            none_route(&g);
        else
            json_route(&g);
        route_vectors(&g);
        if (g.verbose && g.mismatches)
            fprintf(stderr, "igw-gen: vectors: %s: %d vectors carry a simulated outcome other than aimed\n", r->name,
                    g.mismatches);
        char *rel = igw_xprintf("conformance/%s.jsonl", r->name);
        rc = igw_out_save(&g.out, gen_dir, rel);
        free(rel);
        gen_free(&g);
    }
    free(by);
    return rc;
}
