/* emit_openapi.c - generated/openapi.json, an OpenAPI 3.1 description of the routes.
 *
 * Output is pretty-printed JSON (2-space indent, the layout of
 * JSON.stringify(doc, null, 2)) written by a small streaming writer, so the
 * file is byte-identical on every run and easy to diff. Everything follows
 * the schema's declaration order; nothing depends on time or paths.
 *
 * JSON Schema cannot say everything the strict decoder checks (byte lengths,
 * duplicate keys, integer comparisons between fields), so each such fact is
 * also kept in an `x-igw-*` extension; the decoder stays authoritative. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "ruletext.h"
#include "util.h"

#define API_VERSION "1.0.0"
#define COMPONENT_SCHEMAS "#/components/schemas/"

/* Nesting bounds. The schema is trusted, but recursion still needs a bound:
 * types nest through arrays, conditions through and/or/not. */
#define MAX_TYPE_DEPTH 16
#define MAX_COND_DEPTH 24
#define JW_MAX_DEPTH 128 /* > 20 fixed levels + 2 per condition level + 1 per type level */

/* ---- a tiny pretty-printing JSON writer ---------------------------------- */

typedef struct jw {
    igw_out *o;
    int depth;
    char kind[JW_MAX_DEPTH];  /* '{' or '[' per open container */
    bool empty[JW_MAX_DEPTH]; /* no member written yet: closes as {} or [] */
} jw;

static void jw_indent(jw *w, int depth)
{
    for (int i = 0; i < depth; i++)
        igw_out_puts(w->o, "  ");
}

/* Starts a value: separator, newline, indent and `"key": ` inside objects.
 * A key inside an array or a missing key inside an object is an emitter bug. */
static void jw_member(jw *w, const char *key)
{
    if (w->depth == 0)
        return;
    int top = w->depth - 1;
    if ((w->kind[top] == '{') != (key != NULL)) {
        fprintf(stderr, "igw-gen: openapi writer misuse near key %s\n", key ? key : "(none)");
        abort();
    }
    igw_out_puts(w->o, w->empty[top] ? "\n" : ",\n");
    w->empty[top] = false;
    jw_indent(w, w->depth);
    if (key) {
        igw_out_json_string(w->o, key);
        igw_out_puts(w->o, ": ");
    }
}

static void jw_open(jw *w, const char *key, char kind)
{
    jw_member(w, key);
    if (w->depth >= JW_MAX_DEPTH) {
        /* The depth bounds above keep the document far below this. */
        fputs("igw-gen: openapi document nested too deeply\n", stderr);
        abort();
    }
    igw_out_write(w->o, &kind, 1);
    w->kind[w->depth] = kind;
    w->empty[w->depth] = true;
    w->depth++;
}

static void jw_obj(jw *w, const char *key) { jw_open(w, key, '{'); }
static void jw_arr(jw *w, const char *key) { jw_open(w, key, '['); }

static void jw_close(jw *w)
{
    int top = --w->depth;
    if (!w->empty[top]) {
        igw_out_puts(w->o, "\n");
        jw_indent(w, top);
    }
    igw_out_puts(w->o, w->kind[top] == '{' ? "}" : "]");
    if (top == 0)
        igw_out_puts(w->o, "\n");
}

static void jw_str(jw *w, const char *key, const char *v)
{
    jw_member(w, key);
    igw_out_json_string(w->o, v);
}

static void jw_int(jw *w, const char *key, int64_t v)
{
    jw_member(w, key);
    igw_out_printf(w->o, "%" PRId64, v);
}

static void jw_bool(jw *w, const char *key, bool v)
{
    jw_member(w, key);
    igw_out_puts(w->o, v ? "true" : "false");
}

/* Writes the string held in `tmp` and empties it. */
static void jw_take(jw *w, const char *key, igw_out *tmp)
{
    jw_str(w, key, tmp->buf ? tmp->buf : "");
    igw_out_free(tmp);
}

/* ---- emitter state ------------------------------------------------------- */

typedef struct ctx {
    const igw_schema *s;
    jw w;
    int failed;
} ctx;

/* The mark of what the schema binds to no handler: a route without
 * `handler` (answered not_implemented after the strict stage and the
 * login), a value of an enum whose `methods` block leaves it out. */
#define NOT_IMPLEMENTED "not-implemented"

/* The methods block of the enum that selects switch `sw`, or NULL. */
static const igw_methods *methods_of(const igw_schema *s, const igw_switch *sw)
{
    const igw_type *e = igw_type_resolve(sw->on_field->type);
    for (int i = 0; i < s->methods.n; i++) {
        const igw_methods *m = IGW_VEC_AT(s->methods, igw_methods, i);
        if (m->enum_t == e)
            return m;
    }
    return NULL;
}

static bool bound(const igw_methods *m, const char *value)
{
    for (int i = 0; i < m->binds.n; i++)
        if (!strcmp(IGW_VEC_AT(m->binds, igw_method_bind, i)->value, value))
            return true;
    return false;
}

static const char *auth_name(igw_auth a)
{
    switch (a) {
    case IGW_AUTH_DEVICE: return "device";
    case IGW_AUTH_USER: return "user";
    case IGW_AUTH_NONE: break;
    }
    return "none";
}

static const char *format_name(igw_format f)
{
    switch (f) {
    case IGW_FMT_CANONICAL_ID: return "canonical_id";
    case IGW_FMT_BCP47: return "bcp47";
    case IGW_FMT_IDENTIFIER: return "identifier";
    case IGW_FMT_NONE: break;
    }
    return NULL;
}

/* The banner line of util.c without comment marker or newline. */
static char *banner_text(const igw_schema *s)
{
    igw_out b;
    igw_out_init(&b);
    igw_out_banner(&b, s, "");
    size_t n = b.len;
    while (n && (b.buf[n - 1] == '\n' || b.buf[n - 1] == ' '))
        n--;
    size_t start = 0;
    while (start < n && b.buf[start] == ' ')
        start++;
    char *r = igw_xstrndup(b.buf + start, n - start);
    igw_out_free(&b);
    return r;
}

/* Name a reference points at: the named type itself, not its final target,
 * so aliases such as `type ConsentId = Ident` keep their own component. */
static const char *ref_name(const igw_type *t) { return t->target ? t->target->name : t->ref; }

static void jw_ref(jw *w, const char *key, const char *name)
{
    char *ref = igw_xprintf(COMPONENT_SCHEMAS "%s", name);
    jw_str(w, key, ref);
    free(ref);
}

/* ---- string patterns ----------------------------------------------------- */

/* Canonical decimal 1..IGW_SAFE_MAX exactly: up to 15 digits freely, and
 * 16-digit values digit by digit below the bound (no leading zero). */
static void canonical_id_pattern(igw_out *o)
{
    char max[32];
    snprintf(max, sizeof max, "%" PRId64, IGW_SAFE_MAX);
    int len = (int)strlen(max);
    igw_out_printf(o, "^(?:[1-9][0-9]{0,%d}", len - 2);
    for (int i = 0; i < len; i++) {
        int lo = i == 0 ? 1 : 0, hi = max[i] - '0' - 1;
        if (hi < lo)
            continue;
        igw_out_printf(o, "|%.*s", i, max);
        if (lo == hi)
            igw_out_printf(o, "%d", lo);
        else
            igw_out_printf(o, "[%d-%d]", lo, hi);
        if (len - i - 1 > 0)
            igw_out_printf(o, "[0-9]{%d}", len - i - 1);
    }
    igw_out_printf(o, "|%s)$", max);
}

/* Characters an identifier never contains: controls (C0, DEL, C1) and the
 * wildcards * ? % + #. Its first and last character are also not whitespace. */
#define IDENT_BAD "\\u0000-\\u001f\\u007f-\\u009f*?%+#"

static void string_keywords(jw *w, const igw_type *t)
{
    jw_str(w, "type", "string");
    /* JSON Schema counts characters, the decoder bytes. A UTF-8 character is
     * 1..4 bytes, so max bytes bounds the characters from above; min bytes
     * only guarantees one character. ASCII-only formats count the same. */
    bool ascii = t->format == IGW_FMT_CANONICAL_ID || t->format == IGW_FMT_BCP47;
    if (ascii && t->min_len > 0)
        jw_int(w, "minLength", t->min_len);
    else if (t->min_len >= 1)
        jw_int(w, "minLength", 1);
    jw_int(w, "maxLength", t->max_len);
    igw_out p;
    igw_out_init(&p);
    switch (t->format) {
    case IGW_FMT_CANONICAL_ID:
        canonical_id_pattern(&p);
        break;
    case IGW_FMT_BCP47:
        /* Every RFC 5646 tag is alphanumeric subtags of 1..8 characters, the
         * first alphabetic; the decoder checks the full grammar. */
        igw_out_puts(&p, "^[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*$");
        break;
    case IGW_FMT_IDENTIFIER:
        igw_out_puts(&p, "^(?:[^\\s" IDENT_BAD "](?:[^" IDENT_BAD "]*[^\\s" IDENT_BAD "])?)?$");
        break;
    case IGW_FMT_NONE:
        break;
    }
    if (p.len)
        jw_take(w, "pattern", &p);
    igw_out_free(&p);
    jw_obj(w, "x-igw-bytes");
    jw_int(w, "min", t->min_len);
    jw_int(w, "max", t->max_len);
    jw_close(w);
    if (format_name(t->format))
        jw_str(w, "x-igw-format", format_name(t->format));
}

/* ---- rules as text ------------------------------------------------------- */

/* x-igw-rules text of one rule (the schema's own syntax). */
static void rule_text(igw_out *o, const igw_rule *r)
{
    igw_rule_text(o, r);
    if (r->kind == IGW_R_CHECK)
        igw_out_puts(o, " (when every operand is present)");
}

/* ---- rules as JSON Schema ------------------------------------------------ */

/* A condition literal typed like its field: booleans are JSON booleans. */
static void cond_value(jw *w, const char *key, const igw_cond *k, const char *v)
{
    const igw_type *ft = k->fref ? igw_type_resolve(k->fref->type) : NULL;
    if (ft && ft->kind == IGW_T_BOOL)
        jw_bool(w, key, strcmp(v, "true") == 0);
    else
        jw_str(w, key, v);
}

static void required_list(jw *w, const char *key, const igw_vec *names)
{
    jw_arr(w, key);
    for (int i = 0; i < names->n; i++)
        jw_str(w, NULL, IGW_VEC_AT(*names, const char, i));
    jw_close(w);
}

static void required_one(jw *w, const char *key, const char *name)
{
    jw_arr(w, key);
    jw_str(w, NULL, name);
    jw_close(w);
}

/* Keywords of "field present and equal to one of the values". */
static void eq_keywords(jw *w, const igw_cond *k)
{
    jw_obj(w, "properties");
    jw_obj(w, k->field);
    if (k->values.n == 1) {
        cond_value(w, "const", k, IGW_VEC_AT(k->values, const char, 0));
    } else {
        jw_arr(w, "enum");
        for (int i = 0; i < k->values.n; i++)
            cond_value(w, NULL, k, IGW_VEC_AT(k->values, const char, i));
        jw_close(w);
    }
    jw_close(w);
    jw_close(w);
    required_one(w, "required", k->field);
}

/* A schema that holds exactly when the condition holds, with sema's
 * semantics: `f != v` also holds when f is absent (it is `not (f = v)`). */
static void cond_schema(ctx *c, const char *key, const igw_cond *k, int depth)
{
    jw *w = &c->w;
    jw_obj(w, key);
    if (depth > MAX_COND_DEPTH) {
        igw_diag_error(k->loc, "condition nested too deeply for the OpenAPI emitter");
        c->failed = 1;
        jw_close(w);
        return;
    }
    switch (k->op) {
    case IGW_C_EQ:
    case IGW_C_IN:
        eq_keywords(w, k);
        break;
    case IGW_C_NE:
        jw_obj(w, "not");
        eq_keywords(w, k);
        jw_close(w);
        break;
    case IGW_C_PRESENT:
        required_one(w, "required", k->field);
        break;
    case IGW_C_NOT:
        cond_schema(c, "not", k->a, depth + 1);
        break;
    case IGW_C_AND:
    case IGW_C_OR: {
        /* The parser builds `a and b and c` left-deep; flatten that spine so
         * the output reads allOf [a, b, c] instead of nesting. */
        const igw_cond *items[MAX_COND_DEPTH + 2];
        int n = 0;
        const igw_cond *x = k;
        while (x->op == k->op && n < MAX_COND_DEPTH) {
            items[n++] = x->b;
            x = x->a;
        }
        items[n++] = x;
        jw_arr(w, k->op == IGW_C_AND ? "allOf" : "anyOf");
        for (int i = n - 1; i >= 0; i--)
            cond_schema(c, NULL, items[i], depth + 1);
        jw_close(w);
        break;
    }
    }
    jw_close(w);
}

/* `then` keywords making every listed field absent. */
static void forbid_keywords(jw *w, const igw_vec *names)
{
    if (names->n == 1) {
        jw_obj(w, "not");
        required_list(w, "required", names);
        jw_close(w);
        return;
    }
    jw_obj(w, "not");
    jw_arr(w, "anyOf");
    for (int i = 0; i < names->n; i++) {
        jw_obj(w, NULL);
        required_one(w, "required", IGW_VEC_AT(*names, const char, i));
        jw_close(w);
    }
    jw_close(w);
    jw_close(w);
}

/* ---- types --------------------------------------------------------------- */

static void type_keywords(ctx *c, const igw_type *t, int depth);

/* Writes `"key": schema` for a field or item type. */
static void type_schema(ctx *c, const char *key, const igw_type *t, int depth)
{
    jw_obj(&c->w, key);
    type_keywords(c, t, depth);
    jw_close(&c->w);
}

static void object_keywords(ctx *c, const igw_type *t, int depth);

static void type_keywords(ctx *c, const igw_type *t, int depth)
{
    jw *w = &c->w;
    if (depth > MAX_TYPE_DEPTH) {
        igw_diag_error(t->loc, "type nested too deeply for the OpenAPI emitter");
        c->failed = 1;
        return;
    }
    switch (t->kind) {
    case IGW_T_REF:
        jw_ref(w, "$ref", ref_name(t));
        break;
    case IGW_T_STRING:
        string_keywords(w, t);
        break;
    case IGW_T_INT:
        jw_str(w, "type", "integer");
        jw_str(w, "format", "int64");
        jw_int(w, "minimum", t->min);
        jw_int(w, "maximum", t->max);
        /* The decoder refuses integers outside +-(2^53-1) even where the
         * range would allow them, and any fraction or exponent. */
        jw_bool(w, "x-igw-safe-integer", true);
        if (t->unit)
            jw_str(w, "x-igw-unit", t->unit);
        break;
    case IGW_T_BOOL:
        jw_str(w, "type", "boolean");
        break;
    case IGW_T_ENUM:
        jw_str(w, "type", "string");
        jw_arr(w, "enum");
        for (int i = 0; i < t->values.n; i++)
            jw_str(w, NULL, IGW_VEC_AT(t->values, const char, i));
        jw_close(w);
        break;
    case IGW_T_ARRAY:
        jw_str(w, "type", "array");
        type_schema(c, "items", t->item, depth + 1);
        jw_int(w, "minItems", t->min_items);
        jw_int(w, "maxItems", t->max_items);
        if (t->unique)
            jw_bool(w, "uniqueItems", true);
        break;
    case IGW_T_JSON:
        /* Free JSON: its shape is checked elsewhere (thing model, handler);
         * the decoder only bounds nesting depth and encoded size. */
        if (t->json_kind == IGW_JSON_OBJECT)
            jw_str(w, "type", "object");
        jw_int(w, "x-igw-max-depth", t->max_depth);
        jw_int(w, "x-igw-max-bytes", t->max_bytes);
        break;
    case IGW_T_OBJECT:
        object_keywords(c, t, depth);
        break;
    }
}

static void field_schema(ctx *c, const igw_field *f, int depth);

static void switch_schema(ctx *c, const igw_field *f)
{
    jw *w = &c->w;
    const igw_switch *sw = f->sw;
    jw_obj(w, f->name);
    /* anyOf, not oneOf: two methods may share a params type or have
     * overlapping shapes, which oneOf would turn into a rejection. The exact
     * per-method type is enforced by the object's if/then entries. */
    jw_arr(w, "anyOf");
    for (int i = 0; i < sw->cases.n; i++) {
        const igw_case *cs = IGW_VEC_AT(sw->cases, igw_case, i);
        bool seen = false;
        for (int j = 0; j < i && cs->type->kind == IGW_T_REF; j++) {
            const igw_case *o = IGW_VEC_AT(sw->cases, igw_case, j);
            seen |= o->type->kind == IGW_T_REF && strcmp(ref_name(o->type), ref_name(cs->type)) == 0;
        }
        if (!seen)
            type_schema(c, NULL, cs->type, 1);
    }
    jw_close(w);
    if (f->doc)
        jw_str(w, "description", f->doc);
    /* OpenAPI's discriminator names a property inside the alternatives; here
     * the selector is a sibling field, hence an extension with the same shape. */
    jw_obj(w, "x-igw-discriminator");
    jw_str(w, "field", sw->on);
    jw_obj(w, "mapping");
    for (int i = 0; i < sw->cases.n; i++) {
        const igw_case *cs = IGW_VEC_AT(sw->cases, igw_case, i);
        if (cs->type->kind == IGW_T_REF)
            jw_ref(w, cs->value, ref_name(cs->type));
    }
    jw_close(w);
    jw_close(w);
    jw_close(w);
}

static void field_schema(ctx *c, const igw_field *f, int depth)
{
    jw *w = &c->w;
    if (f->sw) {
        switch_schema(c, f);
        return;
    }
    jw_obj(w, f->name);
    type_keywords(c, f->type, depth + 1);
    if (f->reserved) {
        const igw_error *e = igw_schema_error_role(c->s, IGW_ROLE_RESERVED);
        char *d = igw_xprintf("not open in this version (refused with %s)%s%s", e ? e->name : "an error",
                              f->doc ? ": " : "", f->doc ? f->doc : "");
        jw_str(w, "description", d);
        free(d);
        jw_bool(w, "x-igw-reserved", true);
    } else if (f->doc) {
        jw_str(w, "description", f->doc);
    }
    jw_close(w);
}

/* One if/then per switch case: the params type and the case's require/forbid. */
static void case_rule(ctx *c, const igw_field *f, const igw_case *cs)
{
    jw *w = &c->w;
    jw_obj(w, NULL);
    const igw_methods *m = methods_of(c->s, f->sw);
    if (m && !bound(m, cs->value)) {
        const igw_error *e = igw_schema_error_role(c->s, IGW_ROLE_RESERVED);
        char *d = igw_xprintf("%s %s is not implemented: the schema's methods table binds no handler to it, and "
                              "it is answered %s (HTTP %d)", f->sw->on, cs->value, e ? e->name : "not implemented",
                              e ? e->http : 501);
        jw_str(w, "description", d);
        free(d);
        jw_str(w, "x-igw-status", NOT_IMPLEMENTED);
    }
    jw_obj(w, "if");
    jw_obj(w, "properties");
    jw_obj(w, f->sw->on);
    jw_str(w, "const", cs->value);
    jw_close(w);
    jw_close(w);
    required_one(w, "required", f->sw->on);
    jw_close(w);
    jw_obj(w, "then");
    jw_obj(w, "properties");
    type_schema(c, f->name, cs->type, 1);
    jw_close(w);
    if (cs->require.n)
        required_list(w, "required", &cs->require);
    if (cs->forbid.n)
        forbid_keywords(w, &cs->forbid);
    jw_close(w);
    jw_close(w);
}

static void object_keywords(ctx *c, const igw_type *t, int depth)
{
    jw *w = &c->w;
    jw_str(w, "type", "object");
    jw_obj(w, "properties");
    for (int i = 0; i < t->fields.n; i++)
        field_schema(c, IGW_VEC_AT(t->fields, igw_field, i), depth);
    jw_close(w);
    int nreq = 0;
    for (int i = 0; i < t->fields.n; i++)
        nreq += !IGW_VEC_AT(t->fields, igw_field, i)->optional;
    if (nreq) {
        jw_arr(w, "required");
        for (int i = 0; i < t->fields.n; i++) {
            const igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
            if (!f->optional)
                jw_str(w, NULL, f->name);
        }
        jw_close(w);
    }
    jw_bool(w, "additionalProperties", false);

    /* Switch cases become one if/then each (their desugared rules are the
     * same facts, so they are skipped below); other require/forbid rules one
     * if/then each; checks compare fields, which JSON Schema cannot. */
    int nall = 0;
    for (int i = 0; i < t->fields.n; i++) {
        const igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
        nall += f->sw ? f->sw->cases.n : 0;
    }
    for (int i = 0; i < t->rules.n; i++) {
        const igw_rule *r = IGW_VEC_AT(t->rules, igw_rule, i);
        nall += r->kind != IGW_R_CHECK && !r->origin;
    }
    if (nall) {
        jw_arr(w, "allOf");
        for (int i = 0; i < t->fields.n; i++) {
            const igw_field *f = IGW_VEC_AT(t->fields, igw_field, i);
            for (int k = 0; f->sw && k < f->sw->cases.n; k++)
                case_rule(c, f, IGW_VEC_AT(f->sw->cases, igw_case, k));
        }
        for (int i = 0; i < t->rules.n; i++) {
            const igw_rule *r = IGW_VEC_AT(t->rules, igw_rule, i);
            if (r->kind == IGW_R_CHECK || r->origin)
                continue;
            jw_obj(w, NULL);
            if (r->when) {
                cond_schema(c, "if", r->when, 0);
                jw_obj(w, "then");
            }
            if (r->kind == IGW_R_REQUIRE)
                required_list(w, "required", &r->fields);
            else
                forbid_keywords(w, &r->fields);
            if (r->when)
                jw_close(w);
            jw_close(w);
        }
        jw_close(w);
    }
    if (t->rules.n) {
        jw_arr(w, "x-igw-rules");
        for (int i = 0; i < t->rules.n; i++) {
            igw_out o;
            igw_out_init(&o);
            rule_text(&o, IGW_VEC_AT(t->rules, igw_rule, i));
            jw_take(w, NULL, &o);
        }
        jw_close(w);
    }
}

/* ---- routes -------------------------------------------------------------- */

/* Area tag: the segment after /api/<version>/<side>/, e.g. "interaction";
 * shorter paths use their first segment. Parameters are never tags. */
static char *route_tag(const char *path)
{
    const char *seg[4] = {NULL, NULL, NULL, NULL};
    int n = 0;
    for (const char *p = path; *p && n < 4; p++)
        if (*p != '/' && (p == path || p[-1] == '/'))
            seg[n++] = p;
    const char *pick = n == 4 ? seg[3] : seg[0];
    size_t len = pick ? strcspn(pick, "/") : 0;
    if (!len || *pick == '{')
        return igw_xstrdup("default");
    return igw_xstrndup(pick, len);
}

/* Presentation only: tag descriptions of the spec's three areas. */
static const char *tag_doc(const char *tag)
{
    static const struct { const char *tag, *doc; } docs[] = {
        {"device", "A. Device HTTP ingestion and file upload (HTTP Basic, device credentials)."},
        {"interaction", "B. Application interaction interface: endpoints, commands, events, recordings, "
                        "conference audio access (logged-in user)."},
        {"vision-consents", "C. Vision consents, signed by the logged-in user only."},
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
        if (strcmp(docs[i].tag, tag) == 0)
            return docs[i].doc;
    return NULL;
}

static void error_envelope(jw *w, const char *key, const igw_error **cls, int n)
{
    jw_obj(w, key);
    jw_str(w, "type", "object");
    jw_obj(w, "properties");
    jw_obj(w, "code");
    jw_str(w, "type", "integer");
    if (n == 1) {
        jw_int(w, "const", cls[0]->code);
    } else {
        jw_arr(w, "enum");
        for (int i = 0; i < n; i++)
            jw_int(w, NULL, cls[i]->code);
        jw_close(w);
    }
    jw_close(w);
    jw_obj(w, "msg");
    jw_str(w, "type", "string");
    jw_close(w);
    jw_obj(w, "data");
    jw_ref(w, "$ref", "igw.ErrorData");
    jw_close(w);
    jw_close(w);
    jw_arr(w, "required");
    jw_str(w, NULL, "code");
    jw_str(w, NULL, "msg");
    jw_str(w, NULL, "data");
    jw_close(w);
    jw_bool(w, "additionalProperties", false);
    jw_close(w);
}

static char *error_description(const igw_error *e)
{
    return igw_xprintf("%s (class %s, code %" PRId64 ")%s%s", e->reason, e->name, e->code, e->doc ? ": " : "",
                       e->doc ? e->doc : "");
}

/* Response for one HTTP status: the shared component when a single class has
 * that status, else an inline union of the classes. */
static void status_response(ctx *c, const igw_error **cls, int n)
{
    jw *w = &c->w;
    char status[16];
    snprintf(status, sizeof status, "%d", cls[0]->http);
    jw_obj(w, status);
    if (n == 1) {
        char *ref = igw_xprintf("#/components/responses/%s", cls[0]->name);
        jw_str(w, "$ref", ref);
        free(ref);
        jw_close(w);
        return;
    }
    igw_out d;
    igw_out_init(&d);
    for (int i = 0; i < n; i++) {
        char *one = error_description(cls[i]);
        igw_out_printf(&d, "%s%s", i ? "; or " : "", one);
        free(one);
    }
    jw_take(w, "description", &d);
    jw_obj(w, "content");
    jw_obj(w, "application/json");
    error_envelope(w, "schema", cls, n);
    jw_close(w);
    jw_close(w);
    jw_close(w);
}

static void responses(ctx *c, const igw_route *r)
{
    jw *w = &c->w;
    const igw_error *ok = igw_schema_error_role(c->s, IGW_ROLE_OK);
    jw_obj(w, "responses");
    jw_obj(w, "200");
    jw_str(w, "description", r->reply ? "Success: the envelope carries the reply in data."
                                      : "Success: the envelope carries an empty object in data.");
    jw_obj(w, "content");
    jw_obj(w, "application/json");
    jw_obj(w, "schema");
    jw_str(w, "type", "object");
    jw_obj(w, "properties");
    jw_obj(w, "code");
    jw_str(w, "type", "integer");
    jw_int(w, "const", ok ? ok->code : 200);
    jw_close(w);
    jw_obj(w, "msg");
    jw_str(w, "type", "string");
    jw_close(w);
    jw_obj(w, "data");
    if (r->reply) {
        type_keywords(c, r->reply, 1);
    } else {
        jw_str(w, "type", "object");
        jw_bool(w, "additionalProperties", false);
    }
    jw_close(w);
    jw_close(w);
    jw_arr(w, "required");
    jw_str(w, NULL, "code");
    jw_str(w, NULL, "msg");
    jw_str(w, NULL, "data");
    jw_close(w);
    jw_bool(w, "additionalProperties", false);
    jw_close(w);
    jw_close(w);
    jw_close(w);
    jw_close(w);

    /* Error statuses ascending; classes sharing a status stay in route order.
     * A route without a handler also answers the reserved role's class. */
    int n = r->error_refs.n;
    const igw_error *later = r->handler ? NULL : igw_schema_error_role(c->s, IGW_ROLE_RESERVED);
    for (int i = 0; later && i < n; i++)
        if (IGW_VEC_AT(r->error_refs, igw_error, i) == later)
            later = NULL;
    const igw_error **sorted = igw_xcalloc((size_t)n + 1, sizeof *sorted);
    for (int i = 0; i < n + (later != NULL); i++) {
        const igw_error *e = i < n ? IGW_VEC_AT(r->error_refs, igw_error, i) : later;
        int j = i;
        while (j > 0 && sorted[j - 1]->http > e->http) {
            sorted[j] = sorted[j - 1];
            j--;
        }
        sorted[j] = e;
    }
    n += later != NULL;
    for (int i = 0; i < n;) {
        int k = i + 1;
        while (k < n && sorted[k]->http == sorted[i]->http)
            k++;
        status_response(c, sorted + i, k - i);
        i = k;
    }
    free(sorted);
    jw_close(w);
}

static void request_body(ctx *c, const igw_route *r)
{
    jw *w = &c->w;
    if (r->body == IGW_BODY_NONE)
        return;
    jw_obj(w, "requestBody");
    jw_bool(w, "required", true);
    jw_obj(w, "content");
    if (r->body == IGW_BODY_JSON) {
        jw_obj(w, "application/json");
        type_schema(c, "schema", r->body_type, 1);
        jw_close(w);
    } else {
        jw_obj(w, "multipart/form-data");
        jw_obj(w, "schema");
        jw_str(w, "type", "object");
        jw_obj(w, "properties");
        for (int i = 0; i < r->parts.n; i++) {
            const igw_part *p = IGW_VEC_AT(r->parts, igw_part, i);
            jw_obj(w, p->name);
            jw_str(w, "type", "string");
            /* format binary for OpenAPI 3.0 tools, contentMediaType for 3.1. */
            jw_str(w, "format", "binary");
            jw_str(w, "contentMediaType", "application/octet-stream");
            if (p->doc)
                jw_str(w, "description", p->doc);
            jw_close(w);
        }
        jw_close(w);
        int nreq = 0;
        for (int i = 0; i < r->parts.n; i++)
            nreq += IGW_VEC_AT(r->parts, igw_part, i)->required;
        if (nreq) {
            jw_arr(w, "required");
            for (int i = 0; i < r->parts.n; i++)
                if (IGW_VEC_AT(r->parts, igw_part, i)->required)
                    jw_str(w, NULL, IGW_VEC_AT(r->parts, igw_part, i)->name);
            jw_close(w);
        }
        if (r->extra_parts && strcmp(r->extra_parts, "reject") == 0)
            jw_bool(w, "additionalProperties", false);
        jw_close(w);
        jw_close(w);
    }
    jw_close(w);
    jw_close(w);
}

static void operation(ctx *c, const igw_route *r)
{
    jw *w = &c->w;
    char *method = igw_xstrdup(r->method);
    for (char *p = method; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    jw_obj(w, method);
    free(method);
    jw_str(w, "operationId", r->name);
    if (r->doc)
        jw_str(w, "summary", r->doc);
    const igw_error *later = igw_schema_error_role(c->s, IGW_ROLE_RESERVED);
    if (!r->handler) {
        char *d = igw_xprintf("Not implemented: the schema binds no handler to this route; a request that passes "
                              "the strict stage%s%s is answered %s (HTTP %d).",
                              r->gate_signaling ? (r->auth == IGW_AUTH_NONE ? " and the signaling gate"
                                                                            : ", the signaling gate")
                                                : "",
                              r->auth == IGW_AUTH_NONE ? "" : " and authentication",
                              later ? later->name : "not implemented", later ? later->http : 501);
        jw_str(w, "description", d);
        free(d);
    }
    char *tag = route_tag(r->path);
    jw_arr(w, "tags");
    jw_str(w, NULL, tag);
    jw_close(w);
    free(tag);
    if (r->params.n || r->headers.n) {
        jw_arr(w, "parameters");
        for (int i = 0; i < r->params.n; i++) {
            const igw_field *f = IGW_VEC_AT(r->params, igw_field, i);
            jw_obj(w, NULL);
            jw_str(w, "name", f->name);
            jw_str(w, "in", "path");
            jw_bool(w, "required", true);
            if (f->doc)
                jw_str(w, "description", f->doc);
            type_schema(c, "schema", f->type, 1);
            jw_close(w);
        }
        for (int i = 0; i < r->headers.n; i++) {
            const igw_field *f = IGW_VEC_AT(r->headers, igw_field, i);
            jw_obj(w, NULL);
            jw_str(w, "name", f->name);
            jw_str(w, "in", "header");
            jw_bool(w, "required", !f->optional);
            if (f->doc)
                jw_str(w, "description", f->doc);
            type_schema(c, "schema", f->type, 1);
            jw_close(w);
        }
        jw_close(w);
    }
    jw_arr(w, "security");
    if (r->auth != IGW_AUTH_NONE) {
        jw_obj(w, NULL);
        jw_arr(w, r->auth == IGW_AUTH_DEVICE ? "deviceBasic" : "userBearer");
        jw_close(w);
        jw_close(w);
    }
    jw_close(w);
    request_body(c, r);
    responses(c, r);
    jw_str(w, "x-igw-auth", auth_name(r->auth));
    if (!r->handler)
        jw_str(w, "x-igw-status", NOT_IMPLEMENTED);
    if (r->gate_signaling)
        jw_str(w, "x-igw-gate", "signaling");
    if (r->rules.n) { /* require/forbid among the headers, on their presence (strict stage) */
        jw_arr(w, "x-igw-header-rules");
        for (int i = 0; i < r->rules.n; i++) {
            igw_out o;
            igw_out_init(&o);
            rule_text(&o, IGW_VEC_AT(r->rules, igw_rule, i));
            jw_take(w, NULL, &o);
        }
        jw_close(w);
    }
    jw_str(w, "x-igw-body", r->body == IGW_BODY_JSON ? "json" : r->body == IGW_BODY_MULTIPART ? "multipart" : "none");
    /* Checked on the raw byte count before decoding; 0 = no body accepted. */
    jw_int(w, "x-igw-body-cap-bytes", r->body_limit);
    if (r->body == IGW_BODY_MULTIPART && r->extra_parts)
        jw_str(w, "x-igw-extra-parts", r->extra_parts);
    if (r->body == IGW_BODY_JSON) {
        jw_obj(w, "x-igw-strict");
        jw_str(w, "duplicateKeys", "rejected");
        jw_str(w, "null", "rejected");
        jw_str(w, "unknownFields", "rejected");
        jw_bool(w, "safeIntegers", true);
        jw_close(w);
    }
    jw_close(w);
}

static void paths(ctx *c)
{
    jw *w = &c->w;
    const igw_vec *routes = &c->s->routes;
    jw_obj(w, "paths");
    for (int i = 0; i < routes->n; i++) {
        const igw_route *r = IGW_VEC_AT(*routes, igw_route, i);
        /* One path item holds every method of its path, at the first route. */
        bool later = false;
        for (int j = 0; j < i; j++)
            later |= strcmp(IGW_VEC_AT(*routes, igw_route, j)->path, r->path) == 0;
        if (later)
            continue;
        jw_obj(w, r->path);
        for (int j = i; j < routes->n; j++)
            if (strcmp(IGW_VEC_AT(*routes, igw_route, j)->path, r->path) == 0)
                operation(c, IGW_VEC_AT(*routes, igw_route, j));
        jw_close(w);
    }
    jw_close(w);
}

static void tags(ctx *c)
{
    jw *w = &c->w;
    jw_arr(w, "tags");
    for (int i = 0; i < c->s->routes.n; i++) {
        char *tag = route_tag(IGW_VEC_AT(c->s->routes, igw_route, i)->path);
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) {
            char *o = route_tag(IGW_VEC_AT(c->s->routes, igw_route, j)->path);
            seen = strcmp(o, tag) == 0;
            free(o);
        }
        if (!seen) {
            jw_obj(w, NULL);
            jw_str(w, "name", tag);
            if (tag_doc(tag))
                jw_str(w, "description", tag_doc(tag));
            jw_close(w);
        }
        free(tag);
    }
    jw_close(w);
}

/* ---- components ---------------------------------------------------------- */

static void components(ctx *c)
{
    jw *w = &c->w;
    const igw_schema *s = c->s;
    jw_obj(w, "components");

    jw_obj(w, "schemas");
    for (int i = 0; i < s->types.n; i++) {
        const igw_type *t = IGW_VEC_AT(s->types, igw_type, i);
        if (!t->used && !t->synthesized)
            continue;
        jw_obj(w, t->name);
        type_keywords(c, t, 0);
        if (t->doc)
            jw_str(w, "description", t->doc);
        jw_close(w);
    }
    /* Built-in names carry a dot, which no schema identifier can. */
    jw_obj(w, "igw.ErrorData");
    jw_str(w, "type", "object");
    jw_obj(w, "properties");
    jw_obj(w, "reason");
    jw_str(w, "type", "string");
    jw_str(w, "description", "Public reason of the failure; never internal detail.");
    jw_close(w);
    jw_obj(w, "path");
    jw_str(w, "type", "string");
    jw_str(w, "description", "JSON Pointer (RFC 6901) of the offending value in the request body, when there is one.");
    jw_close(w);
    jw_close(w);
    jw_arr(w, "required");
    jw_str(w, NULL, "reason");
    jw_close(w);
    jw_str(w, "description", "data of every error envelope.");
    jw_close(w);
    jw_close(w);

    jw_obj(w, "responses");
    for (int i = 0; i < s->errors.n; i++) {
        const igw_error *e = IGW_VEC_AT(s->errors, igw_error, i);
        if (e->roles & IGW_ROLE_OK)
            continue;
        jw_obj(w, e->name);
        char *d = error_description(e);
        jw_str(w, "description", d);
        free(d);
        jw_obj(w, "content");
        jw_obj(w, "application/json");
        error_envelope(w, "schema", &e, 1);
        jw_close(w);
        jw_close(w);
        jw_close(w);
    }
    jw_close(w);

    bool device = false, user = false;
    for (int i = 0; i < s->routes.n; i++) {
        igw_auth a = IGW_VEC_AT(s->routes, igw_route, i)->auth;
        device |= a == IGW_AUTH_DEVICE;
        user |= a == IGW_AUTH_USER;
    }
    jw_obj(w, "securitySchemes");
    if (device) {
        jw_obj(w, "deviceBasic");
        jw_str(w, "type", "http");
        jw_str(w, "scheme", "basic");
        jw_str(w, "description", "Device credentials: the userName and password of the MQTT connection.");
        jw_close(w);
    }
    if (user) {
        jw_obj(w, "userBearer");
        jw_str(w, "type", "http");
        jw_str(w, "scheme", "bearer");
        jw_str(w, "bearerFormat", "JWT");
        jw_str(w, "description", "Login token of the user; enterprise and user come from it, never from the body.");
        jw_close(w);
    }
    jw_close(w);
    jw_close(w);
}

/* ---- extensions: errors, events, machines ------------------------------- */

static void x_errors(ctx *c)
{
    static const struct { unsigned role; const char *name; } roles[] = {
        {IGW_ROLE_OK, "ok"}, {IGW_ROLE_DECODE, "decode"}, {IGW_ROLE_RESERVED, "reserved"},
        {IGW_ROLE_BODY_CAP, "body_cap"}, {IGW_ROLE_NO_ROUTE, "no_route"}, {IGW_ROLE_METHOD, "method"},
        {IGW_ROLE_MEDIA, "media_type"}, {IGW_ROLE_INTERNAL, "internal"},
    };
    jw *w = &c->w;
    jw_arr(w, "x-igw-errors");
    for (int i = 0; i < c->s->errors.n; i++) {
        const igw_error *e = IGW_VEC_AT(c->s->errors, igw_error, i);
        jw_obj(w, NULL);
        jw_str(w, "name", e->name);
        jw_int(w, "code", e->code);
        jw_int(w, "http", e->http);
        jw_str(w, "reason", e->reason);
        if (e->doc)
            jw_str(w, "description", e->doc);
        if (e->roles) {
            jw_arr(w, "roles");
            for (size_t k = 0; k < sizeof roles / sizeof roles[0]; k++)
                if (e->roles & roles[k].role)
                    jw_str(w, NULL, roles[k].name);
            jw_close(w);
        }
        jw_close(w);
    }
    jw_close(w);
}

/* Events go in an extension, not `webhooks`: OpenAPI webhooks are requests
 * the server sends to a client URL, while igw's events are pulled with
 * /events (and later pushed over a WebSocket), so webhooks would mislead. */
static void x_events(ctx *c)
{
    jw *w = &c->w;
    jw_arr(w, "x-igw-events");
    for (int i = 0; i < c->s->events.n; i++) {
        const igw_event *e = IGW_VEC_AT(c->s->events, igw_event, i);
        jw_obj(w, NULL);
        jw_str(w, "name", e->name);
        if (e->doc)
            jw_str(w, "description", e->doc);
        type_schema(c, "schema", e->type, 1);
        jw_close(w);
    }
    jw_close(w);
}

static void x_machines(ctx *c)
{
    jw *w = &c->w;
    jw_obj(w, "x-igw-machines");
    for (int i = 0; i < c->s->machines.n; i++) {
        const igw_machine *m = IGW_VEC_AT(c->s->machines, igw_machine, i);
        jw_obj(w, m->name);
        if (m->doc)
            jw_str(w, "description", m->doc);
        jw_arr(w, "states");
        for (int k = 0; k < m->states.n; k++) {
            const igw_state *st = IGW_VEC_AT(m->states, igw_state, k);
            jw_obj(w, NULL);
            jw_str(w, "name", st->name);
            jw_bool(w, "terminal", st->terminal);
            if (st->requires.n)
                required_list(w, "requires", &st->requires);
            if (st->doc)
                jw_str(w, "description", st->doc);
            jw_close(w);
        }
        jw_close(w);
        if (m->guards.n) {
            jw_arr(w, "guards");
            for (int k = 0; k < m->guards.n; k++) {
                const igw_guard *g = IGW_VEC_AT(m->guards, igw_guard, k);
                jw_obj(w, NULL);
                jw_str(w, "name", g->name);
                if (g->doc)
                    jw_str(w, "description", g->doc);
                jw_close(w);
            }
            jw_close(w);
        }
        jw_arr(w, "transitions");
        for (int k = 0; k < m->transitions.n; k++) {
            const igw_transition *t = IGW_VEC_AT(m->transitions, igw_transition, k);
            jw_obj(w, NULL);
            jw_str(w, "trigger", t->trigger);
            required_list(w, "from", &t->from);
            if (t->reject) {
                jw_str(w, "error", t->error);
                if (t->reason)
                    jw_str(w, "reason", t->reason);
            } else {
                jw_str(w, "to", t->to);
                if (t->guard)
                    jw_str(w, "guard", t->guard);
                if (t->reason)
                    jw_str(w, "also", t->reason);
            }
            jw_close(w);
        }
        jw_close(w);
        if (m->illegal)
            jw_str(w, "illegal", m->illegal);
        jw_close(w);
    }
    jw_close(w);
}

/* ---- document ------------------------------------------------------------ */

int igw_emit_openapi(const igw_schema *s, const char *gen_dir)
{
    igw_out o;
    igw_out_init(&o);
    ctx c = {.s = s, .w = {.o = &o}};
    jw *w = &c.w;
    char *banner = banner_text(s);

    jw_obj(w, NULL);
    /* JSON has no comments: the do-not-edit line is the first member. */
    jw_str(w, "x-generated-by", banner);
    jw_str(w, "openapi", "3.1.0");
    jw_obj(w, "info");
    jw_str(w, "title", "igw");
    jw_str(w, "version", API_VERSION);
    jw_str(w, "summary", "IoT interaction gateway: device HTTP ingestion and the application interaction interface.");
    jw_str(w, "description",
           "Generated from the igw schema (see x-generated-by); do not edit.\n\n"
           "Every reply is the envelope {code, msg, data}; errors carry data.reason. "
           "The strict decoder is authoritative: duplicate keys, null, unknown fields, unsafe "
           "integers and bodies over the route's cap (x-igw-body-cap-bytes, checked before "
           "decoding) are rejected. String bounds are in bytes (x-igw-bytes); maxLength is the "
           "character bound they imply. Comparisons between fields are listed in x-igw-rules.");
    jw_close(w);
    jw_arr(w, "servers");
    jw_obj(w, NULL);
    jw_str(w, "url", "/");
    jw_str(w, "description", "{base_url}: the gateway's HTTP listener.");
    jw_close(w);
    jw_close(w);
    tags(&c);
    paths(&c);
    components(&c);
    x_errors(&c);
    x_events(&c);
    x_machines(&c);
    jw_close(w);

    free(banner);
    int rc = c.failed ? -1 : igw_out_save(&o, gen_dir, "openapi.json");
    igw_out_free(&o);
    return rc;
}
