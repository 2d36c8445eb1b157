/* thingmodel.c - iThings-compatible thing model: load, look up, validate.
 * See thingmodel.h for the format and the decisions taken. Needs no libm
 * (every src/rt and src/lib C file is linked into binaries without -lm). */
#include "thingmodel.h"

#include <float.h>
#include <math.h> /* isfinite only (a macro) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#define SAFE IGW_JSON_SAFE_MAX
#define DEFAULT_STRING_MAX 2048u
#define DEFAULT_ARRAY_MAX 1024u
#define MAX_NUMBER_TEXT 128 /* bytes of one number (value or bound) */

/* ------------------------------------------------------------ helpers */

static bool key_is(igw_str k, const char *lit)
{
    size_t n = strlen(lit);
    return k.len == n && memcmp(k.ptr, lit, n) == 0;
}

static int id_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c != 0)
        return c;
    return al < bl ? -1 : al > bl ? 1 : 0;
}

/* Records a failure with a formatted reason allocated in the scanner's arena. */
static int failf(igw_json *j, igw_json_errkind kind, const char *fmt, ...)
{
    if (j->err != IGW_JERR_NONE)
        return -1;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof buf)
        n = (int)sizeof buf - 1;
    const char *r = j->arena != NULL ? igw_arena_strndup(j->arena, buf, (size_t)n) : NULL;
    return igw_json_fail(j, kind, r); /* NULL reason: the kind's name */
}

/* Fails at the member `key` of the current container (path only). */
static int fail_at_key(igw_json *j, const char *key, igw_json_errkind kind, const char *reason)
{
    igw_json_push_key(j, key, strlen(key));
    igw_json_fail(j, kind, reason);
    igw_json_pop(j);
    return -1;
}

static int skip_value(igw_json *j)
{
    return igw_json_value(j, IGW_JSON_STRICT, IGW_JSON_MAX_DEPTH, SIZE_MAX, NULL);
}

/* JSON number grammar; *integer tells whether it has no fraction/exponent. */
static bool number_syntax(const char *s, size_t n, bool *integer)
{
    size_t i = 0;
    *integer = true;
    if (i < n && s[i] == '-')
        i++;
    if (i >= n)
        return false;
    if (s[i] == '0') {
        i++;
    } else if (s[i] >= '1' && s[i] <= '9') {
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    } else {
        return false;
    }
    if (i < n && s[i] == '.') {
        *integer = false;
        i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        *integer = false;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    return i == n;
}

/* Parses canonical integer text (number_syntax said integer); false beyond the safe range. */
static bool int_of_text(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && s[i] == '-') {
        neg = true;
        i++;
    }
    if (i >= n || n - i > 16)
        return false;
    int64_t v = 0;
    for (; i < n; i++)
        v = v * 10 + (s[i] - '0');
    if (v > SAFE)
        return false;
    *out = neg ? -v : v;
    return true;
}

static bool double_of_text(const char *s, size_t n, double *out)
{
    char buf[MAX_NUMBER_TEXT + 1];
    if (n > MAX_NUMBER_TEXT)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + n || !isfinite(v))
        return false;
    *out = v;
    return true;
}

const char *igw_tm_type_name(igw_tm_type t)
{
    switch (t) {
    case IGW_TM_BOOL: return "bool";
    case IGW_TM_INT: return "int";
    case IGW_TM_FLOAT: return "float";
    case IGW_TM_STRING: return "string";
    case IGW_TM_ENUM: return "enum";
    case IGW_TM_TIMESTAMP: return "timestamp";
    case IGW_TM_STRUCT: return "struct";
    case IGW_TM_ARRAY: return "array";
    }
    return "?";
}

/* ------------------------------------------------------------ lookups */

const igw_tm_member *igw_tm_list_find(const igw_tm_list *l, const char *id, size_t len)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = id_cmp(id, len, l->items[mid].id.ptr, l->items[mid].id.len);
        if (c == 0)
            return &l->items[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const igw_tm_member *igw_thingmodel_property(const igw_thingmodel *m, const char *id, size_t len)
{
    return igw_tm_list_find(&m->properties, id, len);
}

const igw_tm_event *igw_thingmodel_event(const igw_thingmodel *m, const char *id, size_t len)
{
    size_t lo = 0, hi = m->nevents;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = id_cmp(id, len, m->events[mid].id.ptr, m->events[mid].id.len);
        if (c == 0)
            return &m->events[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const igw_tm_action *igw_thingmodel_action(const igw_thingmodel *m, const char *id, size_t len)
{
    size_t lo = 0, hi = m->nactions;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = id_cmp(id, len, m->actions[mid].id.ptr, m->actions[mid].id.len);
        if (c == 0)
            return &m->actions[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* ------------------------------------------------------------ loading */

/* Grows an arena array of `size`-byte elements to hold one more. */
static void *grow(igw_arena *a, void *arr, uint32_t n, uint32_t *cap, size_t size)
{
    if (n < *cap)
        return arr;
    uint32_t nc = *cap ? *cap * 2 : 8;
    void *na = igw_arena_alloc(a, (size_t)nc * size);
    if (na == NULL)
        return NULL;
    if (n > 0)
        memcpy(na, arr, (size_t)n * size);
    *cap = nc;
    return na;
}

static int read_identifier(igw_json *j, igw_str *out)
{
    igw_str s;
    if (igw_json_string(j, &s) < 0)
        return -1;
    if (s.len == 0 || s.len > IGW_TM_MAX_ID)
        return igw_json_fail(j, IGW_JERR_LENGTH, "identifier must be 1..64 bytes");
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return igw_json_fail(j, IGW_JERR_FORMAT, "identifier must be [A-Za-z0-9_]");
    }
    char *copy = igw_arena_strndup(j->arena, s.ptr, s.len);
    if (copy == NULL)
        return igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
    out->ptr = copy;
    out->len = s.len;
    return 0;
}

static int read_text(igw_json *j, igw_str *out)
{
    igw_str s;
    if (igw_json_string(j, &s) < 0)
        return -1;
    char *copy = igw_arena_strndup(j->arena, s.ptr, s.len);
    if (copy == NULL)
        return igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
    out->ptr = copy;
    out->len = s.len;
    return 0;
}

/* A bound (min, max, step): a JSON number or a string holding one. *text
 * receives the number's text (arena copy). */
static int read_bound(igw_json *j, igw_str *text, bool *integer)
{
    int c = igw_json_peek(j);
    igw_str s;
    if (c == '"') {
        if (igw_json_string(j, &s) < 0)
            return -1;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        if (igw_json_value(j, IGW_JSON_STRICT, 0, MAX_NUMBER_TEXT, &s) < 0)
            return -1;
    } else if (c < 0) {
        return skip_value(j); /* end of input: the scanner's own error */
    } else {
        return igw_json_fail(j, IGW_JERR_TYPE, "expected a number or a decimal string");
    }
    if (s.len > MAX_NUMBER_TEXT || !number_syntax(s.ptr, s.len, integer))
        return igw_json_fail(j, IGW_JERR_FORMAT, "expected a decimal number");
    char *copy = igw_arena_strndup(j->arena, s.ptr, s.len);
    if (copy == NULL)
        return igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
    text->ptr = copy;
    text->len = s.len;
    return 0;
}

static int read_int_bound(igw_json *j, igw_str *text, int64_t *v)
{
    bool integer;
    if (read_bound(j, text, &integer) < 0)
        return -1;
    if (!integer)
        return igw_json_fail(j, IGW_JERR_INTEGER, "expected an integer");
    if (!int_of_text(text->ptr, text->len, v))
        return igw_json_fail(j, IGW_JERR_RANGE, "beyond the safe integer range");
    return 0;
}

static int read_float_bound(igw_json *j, igw_str *text, double *v)
{
    bool integer;
    if (read_bound(j, text, &integer) < 0)
        return -1;
    if (!double_of_text(text->ptr, text->len, v))
        return igw_json_fail(j, IGW_JERR_RANGE, "not a finite number");
    return 0;
}

/* A count bound (string max, array max) in [lo, hi]. */
static int read_count_bound(igw_json *j, uint32_t *out, int64_t lo, int64_t hi)
{
    igw_str t;
    int64_t v;
    if (read_int_bound(j, &t, &v) < 0)
        return -1;
    if (v < lo || v > hi)
        return failf(j, IGW_JERR_RANGE, "must be within %lld..%lld", (long long)lo,
                     (long long)hi);
    *out = (uint32_t)v;
    return 0;
}

static int mapping_cmp(const void *a, const void *b)
{
    int64_t x = ((const igw_tm_mapping *)a)->key, y = ((const igw_tm_mapping *)b)->key;
    return x < y ? -1 : x > y;
}

static int read_mapping(igw_json *j, igw_tm_define *d)
{
    uint32_t cap = 0, n = 0;
    igw_tm_mapping *arr = NULL;
    igw_str k;
    int r;
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        bool integer;
        int64_t key;
        if (!number_syntax(k.ptr, k.len, &integer) || !integer ||
            !int_of_text(k.ptr, k.len, &key) || (key == 0 && k.ptr[0] == '-')) {
            igw_json_fail(j, IGW_JERR_FORMAT, "mapping key must be an integer");
            goto out;
        }
        if (d->type == IGW_TM_BOOL && key != 0 && key != 1) {
            igw_json_fail(j, IGW_JERR_RANGE, "bool mapping key must be 0 or 1");
            goto out;
        }
        if (n >= IGW_TM_MAX_MAPPING) {
            igw_json_fail(j, IGW_JERR_SIZE, "too many mapping entries (at most 256)");
            goto out;
        }
        for (uint32_t i = 0; i < n; i++) {
            if (arr[i].key == key) {
                igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate mapping key");
                goto out;
            }
        }
        if ((arr = grow(j->arena, arr, n, &cap, sizeof *arr)) == NULL) {
            igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
            goto out;
        }
        arr[n].key = key;
        if (read_text(j, &arr[n].label) < 0)
            goto out;
        n++;
        igw_json_pop(j);
    }
    if (r < 0)
        return -1;
    if (n > 1)
        qsort(arr, n, sizeof *arr, mapping_cmp);
    d->mapping = arr;
    d->nmapping = n;
    return 0;
out:
    igw_json_pop(j);
    return -1;
}

static int parse_define(igw_json *j, igw_tm_define **out, unsigned nest);

enum member_kind { MK_PROPERTY, MK_PARAM, MK_SPEC };

/* Members, events and actions all start with their identifier: one
 * comparator orders any of them. */
_Static_assert(offsetof(igw_tm_member, id) == 0, "members start with their id");
_Static_assert(offsetof(igw_tm_event, id) == 0, "events start with their id");
_Static_assert(offsetof(igw_tm_action, id) == 0, "actions start with their id");
static int first_id_cmp(const void *a, const void *b)
{
    const igw_str *x = a, *y = b;
    return id_cmp(x->ptr, x->len, y->ptr, y->len);
}

/* Fails at /<index>/identifier of the current list. */
static int fail_dup_id(igw_json *j, uint32_t index)
{
    igw_json_push_index(j, index);
    fail_at_key(j, "identifier", IGW_JERR_DUPLICATE, "duplicate identifier");
    igw_json_pop(j);
    return -1;
}

static int parse_member(igw_json *j, igw_tm_member *m, enum member_kind kind, unsigned nest)
{
    const char *defkey = kind == MK_SPEC ? "dataType" : "define";
    bool have_id = false, have_def = false, have_name = false, have_mode = false;
    igw_str k;
    int r;
    memset(m, 0, sizeof *m);
    m->name.ptr = "";
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        int rc = 0;
        bool *seen = NULL;
        if (key_is(k, "identifier")) {
            seen = &have_id;
        } else if (key_is(k, "name")) {
            seen = &have_name;
        } else if (key_is(k, defkey)) {
            seen = &have_def;
        } else if (kind == MK_PROPERTY && key_is(k, "mode")) {
            seen = &have_mode;
        }
        if (seen != NULL && *seen) {
            rc = igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        } else if (seen == &have_id) {
            rc = read_identifier(j, &m->id);
        } else if (seen == &have_name) {
            rc = read_text(j, &m->name);
        } else if (seen == &have_def) {
            rc = parse_define(j, &m->def, nest);
        } else if (seen == &have_mode) {
            igw_str mode;
            rc = igw_json_string(j, &mode);
            if (rc == 0) {
                if (key_is(mode, "rw"))
                    m->writable = true;
                else if (!key_is(mode, "r"))
                    rc = igw_json_fail(j, IGW_JERR_ENUM, "mode must be \"rw\" or \"r\"");
            }
        } else {
            rc = skip_value(j);
        }
        if (seen != NULL)
            *seen = true;
        igw_json_pop(j);
        if (rc < 0)
            return -1;
    }
    if (r < 0)
        return -1;
    if (!have_id)
        return igw_json_fail(j, IGW_JERR_MISSING, "missing \"identifier\"");
    if (!have_def)
        return kind == MK_SPEC ? igw_json_fail(j, IGW_JERR_MISSING, "missing \"dataType\"")
                               : igw_json_fail(j, IGW_JERR_MISSING, "missing \"define\"");
    return 0;
}

/* Reads one list item into `item`; `ctx` carries what the item parser needs. */
typedef int (*item_parser)(igw_json *j, void *item, const void *ctx);

/* An array of items that start with their identifier (igw_str id) and keep
 * their declaration position at `index_off`: at most `max` of them, sorted
 * by id, duplicate-free (reported at the later one). */
static int parse_list(igw_json *j, size_t size, size_t index_off, uint32_t max, const char *what,
                      item_parser parse, const void *ctx, void **out, uint32_t *nout)
{
    uint32_t cap = 0, n = 0;
    char *arr = NULL;
    int r;
    if (igw_json_array_begin(j) < 0)
        return -1;
    while ((r = igw_json_array_next(j)) == 1) {
        igw_json_push_index(j, n);
        int rc;
        if (n >= max)
            rc = failf(j, IGW_JERR_SIZE, "too many %s (at most %u)", what, (unsigned)max);
        else if ((arr = grow(j->arena, arr, n, &cap, size)) == NULL)
            rc = igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
        else
            rc = parse(j, arr + (size_t)n * size, ctx);
        igw_json_pop(j);
        if (rc < 0)
            return -1;
        memcpy(arr + (size_t)n * size + index_off, &n, sizeof n);
        n++;
    }
    if (r < 0)
        return -1;
    if (n > 1)
        qsort(arr, n, size, first_id_cmp);
    for (uint32_t i = 1; i < n; i++) {
        const char *x = arr + (size_t)(i - 1) * size, *y = arr + (size_t)i * size;
        if (first_id_cmp(x, y) == 0) {
            uint32_t xi, yi;
            memcpy(&xi, x + index_off, sizeof xi);
            memcpy(&yi, y + index_off, sizeof yi);
            return fail_dup_id(j, xi > yi ? xi : yi);
        }
    }
    *out = arr;
    *nout = n;
    return 0;
}

struct member_ctx {
    enum member_kind kind;
    unsigned nest;
};

static int parse_member_item(igw_json *j, void *item, const void *ctx)
{
    const struct member_ctx *c = ctx;
    return parse_member(j, item, c->kind, c->nest);
}

/* An array of members (properties, params, specs): sorted, duplicate-free. */
static int parse_member_list(igw_json *j, igw_tm_list *out, enum member_kind kind, uint32_t max, unsigned nest)
{
    struct member_ctx c = {kind, nest};
    void *items;
    if (parse_list(j, sizeof(igw_tm_member), offsetof(igw_tm_member, index), max, "entries", parse_member_item, &c,
                   &items, &out->n))
        return -1;
    out->items = items;
    return 0;
}

static int type_of_name(igw_str s, igw_tm_type *t)
{
    static const struct { const char *name; igw_tm_type t; } names[] = {
        {"bool", IGW_TM_BOOL},     {"int", IGW_TM_INT},
        {"float", IGW_TM_FLOAT},   {"string", IGW_TM_STRING},
        {"enum", IGW_TM_ENUM},     {"timestamp", IGW_TM_TIMESTAMP},
        {"struct", IGW_TM_STRUCT}, {"array", IGW_TM_ARRAY},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (key_is(s, names[i].name)) {
            *t = names[i].t;
            return 0;
        }
    }
    return -1;
}

/* Define keys tracked for duplicates. */
enum { DK_TYPE, DK_MIN, DK_MAX, DK_STEP, DK_UNIT, DK_MAPPING, DK_SPECS, DK_ARRAYINFO, DK_N };
static const char *const define_keys[DK_N] = {"type",  "min",     "max",   "step",
                                              "unit",  "mapping", "specs", "arrayInfo"};

static int define_key(igw_str k)
{
    for (int i = 0; i < DK_N; i++)
        if (key_is(k, define_keys[i]))
            return i;
    return -1;
}

/* Reads one define object. The object is read twice: first for its "type"
 * (keys come in any order), then for the members that type uses. */
static int parse_define(igw_json *j, igw_tm_define **out, unsigned nest)
{
    if (nest >= IGW_TM_MAX_NEST)
        return igw_json_fail(j, IGW_JERR_DEPTH, "struct/array nesting deeper than 8");
    igw_tm_define *d = igw_arena_alloc(j->arena, sizeof *d);
    if (d == NULL)
        return igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
    memset(d, 0, sizeof *d);

    igw_json saved = *j;
    igw_str k, tname = {NULL, 0};
    bool seen[DK_N] = {false};
    int r;
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        int dk = define_key(k), rc;
        if (dk >= 0 && seen[dk])
            rc = igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        else if (dk == DK_TYPE)
            rc = igw_json_string(j, &tname);
        else
            rc = skip_value(j);
        if (dk >= 0)
            seen[dk] = true;
        if (rc == 0 && dk == DK_TYPE && type_of_name(tname, &d->type) < 0)
            rc = failf(j, IGW_JERR_ENUM, "unknown data type \"%.*s\"",
                       (int)(tname.len > 32 ? 32 : tname.len), tname.ptr);
        igw_json_pop(j);
        if (rc < 0)
            return -1;
    }
    if (r < 0)
        return -1;
    if (!seen[DK_TYPE])
        return igw_json_fail(j, IGW_JERR_MISSING, "missing \"type\"");

    /* defaults */
    d->imin = -SAFE;
    d->imax = SAFE;
    d->istep = 1;
    d->fmin = -DBL_MAX;
    d->fmax = DBL_MAX;
    d->fstep = 0;
    d->max = d->type == IGW_TM_STRING ? DEFAULT_STRING_MAX : DEFAULT_ARRAY_MAX;
    if (d->type == IGW_TM_TIMESTAMP)
        d->imin = 0;

    *j = saved;
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        int dk = define_key(k), rc = 0;
        igw_tm_type t = d->type;
        bool numeric = t == IGW_TM_INT || t == IGW_TM_FLOAT;
        if ((dk == DK_MIN || dk == DK_MAX || dk == DK_STEP) && numeric) {
            igw_str *text = dk == DK_MIN ? &d->min_text : dk == DK_MAX ? &d->max_text
                                                                       : &d->step_text;
            if (t == IGW_TM_INT)
                rc = read_int_bound(j, text, dk == DK_MIN ? &d->imin
                                             : dk == DK_MAX ? &d->imax : &d->istep);
            else
                rc = read_float_bound(j, text, dk == DK_MIN ? &d->fmin
                                               : dk == DK_MAX ? &d->fmax : &d->fstep);
            if (rc == 0 && dk == DK_STEP &&
                (t == IGW_TM_INT ? d->istep <= 0 : !(d->fstep > 0)))
                rc = igw_json_fail(j, IGW_JERR_RANGE, "step must be greater than 0");
        } else if (dk == DK_MAX && t == IGW_TM_STRING) {
            rc = read_count_bound(j, &d->max, 0, IGW_TM_MAX_STRING);
        } else if (dk == DK_MAX && t == IGW_TM_ARRAY) {
            rc = read_count_bound(j, &d->max, 1, IGW_TM_MAX_ARRAY);
        } else if (dk == DK_UNIT) {
            rc = igw_json_peek(j) == '"' ? read_text(j, &d->unit) : skip_value(j);
        } else if (dk == DK_MAPPING && (t == IGW_TM_ENUM || t == IGW_TM_BOOL)) {
            rc = read_mapping(j, d);
        } else if (dk == DK_SPECS && t == IGW_TM_STRUCT) {
            rc = parse_member_list(j, &d->specs, MK_SPEC, IGW_TM_MAX_PARAMS, nest + 1);
        } else if (dk == DK_ARRAYINFO && t == IGW_TM_ARRAY) {
            rc = parse_define(j, &d->item, nest + 1);
        } else {
            rc = skip_value(j);
        }
        igw_json_pop(j);
        if (rc < 0)
            return -1;
    }
    if (r < 0)
        return -1;

    switch (d->type) {
    case IGW_TM_INT:
        if (d->imin > d->imax)
            return fail_at_key(j, "max", IGW_JERR_RULE, "max is below min");
        break;
    case IGW_TM_FLOAT:
        if (d->fmin > d->fmax)
            return fail_at_key(j, "max", IGW_JERR_RULE, "max is below min");
        break;
    case IGW_TM_ENUM:
        if (d->nmapping == 0)
            return igw_json_fail(j, IGW_JERR_MISSING, "enum needs a non-empty \"mapping\"");
        break;
    case IGW_TM_STRUCT:
        if (!seen[DK_SPECS] || d->specs.n == 0)
            return igw_json_fail(j, IGW_JERR_MISSING, "struct needs a non-empty \"specs\"");
        break;
    case IGW_TM_ARRAY:
        if (d->item == NULL)
            return igw_json_fail(j, IGW_JERR_MISSING, "array needs \"arrayInfo\"");
        break;
    default:
        break;
    }
    *out = d;
    return 0;
}

static int parse_event(igw_json *j, igw_tm_event *e)
{
    bool have_id = false, have_name = false, have_type = false, have_params = false;
    igw_str k;
    int r;
    memset(e, 0, sizeof *e);
    e->name.ptr = "";
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        bool *seen = key_is(k, "identifier") ? &have_id
                   : key_is(k, "name")       ? &have_name
                   : key_is(k, "type")       ? &have_type
                   : key_is(k, "params")     ? &have_params
                                             : NULL;
        int rc;
        if (seen != NULL && *seen) {
            rc = igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        } else if (seen == &have_id) {
            rc = read_identifier(j, &e->id);
        } else if (seen == &have_name) {
            rc = read_text(j, &e->name);
        } else if (seen == &have_type) {
            igw_str t;
            rc = igw_json_string(j, &t);
            if (rc == 0) {
                if (key_is(t, "info"))
                    e->type = IGW_TM_EV_INFO;
                else if (key_is(t, "alert"))
                    e->type = IGW_TM_EV_ALERT;
                else if (key_is(t, "fault"))
                    e->type = IGW_TM_EV_FAULT;
                else
                    rc = igw_json_fail(j, IGW_JERR_ENUM,
                                       "event type must be \"info\", \"alert\" or \"fault\"");
            }
        } else if (seen == &have_params) {
            rc = parse_member_list(j, &e->params, MK_PARAM, IGW_TM_MAX_PARAMS, 0);
        } else {
            rc = skip_value(j);
        }
        if (seen != NULL)
            *seen = true;
        igw_json_pop(j);
        if (rc < 0)
            return -1;
    }
    if (r < 0)
        return -1;
    if (!have_id)
        return igw_json_fail(j, IGW_JERR_MISSING, "missing \"identifier\"");
    return 0;
}

static int parse_action(igw_json *j, igw_tm_action *ac)
{
    bool have_id = false, have_name = false, have_in = false, have_out = false;
    igw_str k;
    int r;
    memset(ac, 0, sizeof *ac);
    ac->name.ptr = "";
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        bool *seen = key_is(k, "identifier") ? &have_id
                   : key_is(k, "name")       ? &have_name
                   : key_is(k, "input")      ? &have_in
                   : key_is(k, "output")     ? &have_out
                                             : NULL;
        int rc;
        if (seen != NULL && *seen)
            rc = igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        else if (seen == &have_id)
            rc = read_identifier(j, &ac->id);
        else if (seen == &have_name)
            rc = read_text(j, &ac->name);
        else if (seen == &have_in)
            rc = parse_member_list(j, &ac->input, MK_PARAM, IGW_TM_MAX_PARAMS, 0);
        else if (seen == &have_out)
            rc = parse_member_list(j, &ac->output, MK_PARAM, IGW_TM_MAX_PARAMS, 0);
        else
            rc = skip_value(j);
        if (seen != NULL)
            *seen = true;
        igw_json_pop(j);
        if (rc < 0)
            return -1;
    }
    if (r < 0)
        return -1;
    if (!have_id)
        return igw_json_fail(j, IGW_JERR_MISSING, "missing \"identifier\"");
    return 0;
}

static int parse_event_item(igw_json *j, void *item, const void *ctx)
{
    (void)ctx;
    return parse_event(j, item);
}

static int parse_action_item(igw_json *j, void *item, const void *ctx)
{
    (void)ctx;
    return parse_action(j, item);
}

static int parse_events(igw_json *j, igw_thingmodel *m)
{
    void *items;
    if (parse_list(j, sizeof(igw_tm_event), offsetof(igw_tm_event, index), IGW_TM_MAX_EVENTS, "events",
                   parse_event_item, NULL, &items, &m->nevents))
        return -1;
    m->events = items;
    return 0;
}

static int parse_actions(igw_json *j, igw_thingmodel *m)
{
    void *items;
    if (parse_list(j, sizeof(igw_tm_action), offsetof(igw_tm_action, index), IGW_TM_MAX_ACTIONS, "actions",
                   parse_action_item, NULL, &items, &m->nactions))
        return -1;
    m->actions = items;
    return 0;
}

int igw_thingmodel_load(const char *json, size_t len, igw_arena *a, igw_thingmodel **out,
                        igw_json *err)
{
    igw_json *j = err;
    *out = NULL;
    igw_json_init(j, json, len, a, IGW_JSON_MAX_DEPTH);
    igw_thingmodel *m = igw_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return igw_json_fail(j, IGW_JERR_NOMEM, "out of memory");
    memset(m, 0, sizeof *m);
    bool have_p = false, have_e = false, have_a = false;
    igw_str k;
    int r;
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        bool *seen = key_is(k, "properties") ? &have_p
                   : key_is(k, "events")     ? &have_e
                   : key_is(k, "actions")    ? &have_a
                                             : NULL;
        int rc;
        if (seen != NULL && *seen)
            rc = igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        else if (seen == &have_p)
            rc = parse_member_list(j, &m->properties, MK_PROPERTY, IGW_TM_MAX_PROPERTIES, 0);
        else if (seen == &have_e)
            rc = parse_events(j, m);
        else if (seen == &have_a)
            rc = parse_actions(j, m);
        else
            rc = skip_value(j);
        if (seen != NULL)
            *seen = true;
        igw_json_pop(j);
        if (rc < 0)
            return -1;
    }
    if (r < 0 || igw_json_finish(j) < 0)
        return -1;
    *out = m;
    return 0;
}

/* ------------------------------------------------------------ checking */

typedef struct checker {
    igw_json *j;
    bool strict; /* action input/output: structs must be complete */
} checker;

static const char *bound_text(igw_str t, int64_t v, char *buf, size_t n)
{
    if (t.len > 0)
        return t.ptr;
    snprintf(buf, n, "%lld", (long long)v);
    return buf;
}

static int check_list(checker *c, const igw_tm_list *l, bool require_all, int flags,
                      const char *unknown_reason);

static int check_value(checker *c, const igw_tm_define *d)
{
    igw_json *j = c->j;
    int64_t v;
    char b1[32];
    switch (d->type) {
    case IGW_TM_BOOL: {
        int ch = igw_json_peek(j);
        if (ch == 't' || ch == 'f' || ch == 'n' || ch < 0) {
            bool b;
            return igw_json_bool(j, &b);
        }
        if (ch == '-' || (ch >= '0' && ch <= '9')) {
            if (igw_json_int(j, &v, -SAFE, SAFE) < 0)
                return -1;
            if (v != 0 && v != 1)
                return igw_json_fail(j, IGW_JERR_RANGE, "bool must be true, false, 0 or 1");
            return 0;
        }
        return igw_json_fail(j, IGW_JERR_TYPE, "expected a bool (true, false, 0 or 1)");
    }
    case IGW_TM_INT:
        if (igw_json_int(j, &v, -SAFE, SAFE) < 0)
            return -1;
        if (v < d->imin)
            return failf(j, IGW_JERR_RANGE, "below minimum %s",
                         bound_text(d->min_text, d->imin, b1, sizeof b1));
        if (v > d->imax)
            return failf(j, IGW_JERR_RANGE, "above maximum %s",
                         bound_text(d->max_text, d->imax, b1, sizeof b1));
        if (d->istep > 1 && (v - d->imin) % d->istep != 0) {
            char b2[32];
            if (d->imin == 0 || d->imin == -SAFE)
                return failf(j, IGW_JERR_RANGE, "not a multiple of step %s",
                             bound_text(d->step_text, d->istep, b1, sizeof b1));
            return failf(j, IGW_JERR_RANGE, "not minimum %s plus a multiple of step %s",
                         bound_text(d->min_text, d->imin, b2, sizeof b2),
                         bound_text(d->step_text, d->istep, b1, sizeof b1));
        }
        return 0;
    case IGW_TM_FLOAT: {
        int ch = igw_json_peek(j);
        igw_str raw;
        double f;
        if (ch == 'n')
            return igw_json_fail(j, IGW_JERR_NULL, "null is not accepted");
        if (ch >= 0 && ch != '-' && !(ch >= '0' && ch <= '9'))
            return igw_json_fail(j, IGW_JERR_TYPE, "expected a number");
        if (igw_json_value(j, IGW_JSON_STRICT, 0, MAX_NUMBER_TEXT, &raw) < 0)
            return -1;
        if (!double_of_text(raw.ptr, raw.len, &f))
            return igw_json_fail(j, IGW_JERR_RANGE, "not a finite number");
        if (f < d->fmin)
            return failf(j, IGW_JERR_RANGE, "below minimum %s", d->min_text.ptr);
        if (f > d->fmax)
            return failf(j, IGW_JERR_RANGE, "above maximum %s", d->max_text.ptr);
        if (d->fstep > 0) {
            double base = d->fmin > -DBL_MAX ? d->fmin : 0.0;
            double q = (f - base) / d->fstep;
            double aq = q < 0 ? -q : q;
            double tol = aq * 1e-12 > 1e-9 ? aq * 1e-12 : 1e-9;
            /* beyond 2^52 every double is an integer; below, round to nearest */
            double off = 0;
            if (aq < 4503599627370496.0) {
                double rq = (double)(int64_t)(aq + 0.5);
                off = aq > rq ? aq - rq : rq - aq;
            }
            if (!isfinite(q) || off > tol)
                return failf(j, IGW_JERR_RANGE, "not a multiple of step %s", d->step_text.ptr);
        }
        return 0;
    }
    case IGW_TM_STRING: {
        igw_str s;
        if (igw_json_string(j, &s) < 0)
            return -1;
        if (s.len > d->max)
            return failf(j, IGW_JERR_LENGTH, "longer than %u bytes", (unsigned)d->max);
        return 0;
    }
    case IGW_TM_ENUM: {
        if (igw_json_int(j, &v, -SAFE, SAFE) < 0)
            return -1;
        size_t lo = 0, hi = d->nmapping;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (d->mapping[mid].key == v)
                return 0;
            if (d->mapping[mid].key < v)
                lo = mid + 1;
            else
                hi = mid;
        }
        char list[160];
        size_t n = 0;
        for (uint32_t i = 0; i < d->nmapping && n < sizeof list - 24; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%lld", i ? ", " : "",
                                  (long long)d->mapping[i].key);
        if (n >= sizeof list - 24 && d->nmapping > 0)
            snprintf(list + n, sizeof list - n, ", ...");
        return failf(j, IGW_JERR_ENUM, "not a value of the enumeration (%s)", list);
    }
    case IGW_TM_TIMESTAMP:
        if (igw_json_int(j, &v, -SAFE, SAFE) < 0)
            return -1;
        if (v < 0)
            return igw_json_fail(j, IGW_JERR_RANGE, "timestamp must be Unix milliseconds >= 0");
        return 0;
    case IGW_TM_STRUCT:
        return check_list(c, &d->specs, c->strict, 0, "unknown struct field");
    case IGW_TM_ARRAY: {
        int r;
        uint32_t i = 0;
        if (igw_json_array_begin(j) < 0)
            return -1;
        while ((r = igw_json_array_next(j)) == 1) {
            igw_json_push_index(j, i);
            int rc = i >= d->max ? failf(j, IGW_JERR_LENGTH, "more than %u items",
                                         (unsigned)d->max)
                                 : check_value(c, d->item);
            igw_json_pop(j);
            if (rc < 0)
                return -1;
            i++;
        }
        return r < 0 ? -1 : 0;
    }
    }
    return igw_json_fail(j, IGW_JERR_RULE, "bad define");
}

/* One object whose keys are the members of `l`. */
static int check_list(checker *c, const igw_tm_list *l, bool require_all, int flags,
                      const char *unknown_reason)
{
    igw_json *j = c->j;
    uint64_t seen[(IGW_TM_MAX_PROPERTIES + 63) / 64] = {0};
    igw_str k;
    int r;
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        const igw_tm_member *m = igw_tm_list_find(l, k.ptr, k.len);
        int rc;
        if (m == NULL) {
            rc = igw_json_fail(j, IGW_JERR_UNKNOWN, unknown_reason);
        } else {
            size_t at = (size_t)(m - l->items);
            if (seen[at / 64] & (UINT64_C(1) << (at % 64)))
                rc = igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
            else if ((flags & IGW_TM_WRITABLE_ONLY) && !m->writable)
                rc = igw_json_fail(j, IGW_JERR_FORBIDDEN, "read-only property");
            else
                rc = check_value(c, m->def);
            seen[at / 64] |= UINT64_C(1) << (at % 64);
        }
        igw_json_pop(j);
        if (rc < 0)
            return -1;
    }
    if (r < 0)
        return -1;
    if (require_all) {
        /* report the first missing one in declaration order */
        const igw_tm_member *first = NULL;
        for (uint32_t i = 0; i < l->n; i++)
            if (!(seen[i / 64] & (UINT64_C(1) << (i % 64))) &&
                (first == NULL || l->items[i].index < first->index))
                first = &l->items[i];
        if (first != NULL)
            return fail_at_key(j, first->id.ptr, IGW_JERR_MISSING, "missing parameter");
    }
    return 0;
}

/* Puts `prefix` in front of err->path (dropping trailing segments if needed). */
static void apply_prefix(igw_json *j, const char *prefix)
{
    if (j->err == IGW_JERR_NONE || prefix == NULL || prefix[0] == '\0')
        return;
    size_t cap = sizeof j->path - 1;
    size_t n = strlen(prefix);
    if (n > cap) {
        n = cap;
        while (n > 0 && prefix[n] != '/')
            n--;
    }
    size_t old = strlen(j->path), keep = old;
    if (n + keep > cap) {
        keep = cap - n;
        while (keep > 0 && j->path[keep] != '/')
            keep--;
    }
    memmove(j->path + n, j->path, keep);
    memcpy(j->path, prefix, n);
    j->path[n + keep] = '\0';
}

static int check_doc(const igw_tm_list *l, const char *json, size_t len, int flags,
                     bool require_all, bool strict, const char *unknown_reason,
                     const char *prefix, igw_arena *a, igw_json *err)
{
    checker c = {err, strict};
    igw_json_init(err, json, len, a, IGW_JSON_MAX_DEPTH);
    if (check_list(&c, l, require_all, flags, unknown_reason) < 0 || igw_json_finish(err) < 0) {
        apply_prefix(err, prefix);
        return -1;
    }
    return 0;
}

int igw_thingmodel_check_properties(const igw_thingmodel *m, const char *json, size_t len,
                                    int flags, const char *prefix, igw_arena *a, igw_json *err)
{
    return check_doc(&m->properties, json, len, flags, false, false, "unknown property",
                     prefix, a, err);
}

static int fail_unknown(const char *json, size_t len, const char *reason, const char *prefix,
                        igw_arena *a, igw_json *err)
{
    igw_json_init(err, json, len, a, IGW_JSON_MAX_DEPTH);
    igw_json_fail(err, IGW_JERR_UNKNOWN, reason);
    apply_prefix(err, prefix);
    return -1;
}

int igw_thingmodel_check_event(const igw_thingmodel *m, const char *event_id, size_t id_len,
                               const char *json, size_t len, const char *prefix,
                               igw_arena *a, igw_json *err)
{
    const igw_tm_event *e = igw_thingmodel_event(m, event_id, id_len);
    if (e == NULL)
        return fail_unknown(json, len, "unknown event", prefix, a, err);
    return check_doc(&e->params, json, len, 0, false, false, "unknown event parameter", prefix,
                     a, err);
}

int igw_thingmodel_check_action_input(const igw_thingmodel *m, const char *action_id,
                                      size_t id_len, const char *json, size_t len,
                                      const char *prefix, igw_arena *a, igw_json *err)
{
    const igw_tm_action *ac = igw_thingmodel_action(m, action_id, id_len);
    if (ac == NULL)
        return fail_unknown(json, len, "unknown action", prefix, a, err);
    return check_doc(&ac->input, json, len, 0, true, true, "unknown action input", prefix, a,
                     err);
}

int igw_thingmodel_check_action_output(const igw_thingmodel *m, const char *action_id,
                                       size_t id_len, const char *json, size_t len,
                                       const char *prefix, igw_arena *a, igw_json *err)
{
    const igw_tm_action *ac = igw_thingmodel_action(m, action_id, id_len);
    if (ac == NULL)
        return fail_unknown(json, len, "unknown action", prefix, a, err);
    return check_doc(&ac->output, json, len, 0, true, true, "unknown action output", prefix, a,
                     err);
}
