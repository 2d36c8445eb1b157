/* emit_apidoc.c - docs/api.md, the API reference, written from the schema.
 *
 * Sections follow the schema's declaration order so the file is
 * byte-identical on every run: conventions and envelope, error classes,
 * routes, types, command methods (switch cases), events, state machines,
 * tables. Anchors are explicit (<a id="type-X">) so links do not depend on a
 * renderer's heading slug rules. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "ruletext.h"
#include "util.h"

/* Types nest through arrays and alias chains; conditions through and/or/not.
 * The schema is trusted, but recursion still gets a bound. */
#define MAX_TYPE_DEPTH 16
#define MAX_COND_DEPTH 24
#define MAX_INLINE_ENUM 8 /* enums with more values are named, not listed, in a cell */

typedef struct doc {
    igw_out *o;
    const igw_schema *s;
    int failed;
} doc;

/* ---- text helpers -------------------------------------------------------- */

/* Schema text as Markdown: '|' would end a table cell and '<' could start
 * HTML; a newline would end a table row. */
static void md(igw_out *o, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            igw_out_puts(o, "\\|");
        else if (*s == '<')
            igw_out_puts(o, "&lt;");
        else if (*s == '\n' || *s == '\r')
            igw_out_puts(o, " ");
        else
            igw_out_write(o, s, 1);
    }
}

static void code(igw_out *o, const char *s)
{
    igw_out_puts(o, "`");
    md(o, s);
    igw_out_puts(o, "`");
}

/* "65536 bytes (64 KiB)": exact number first, the friendly unit when exact. */
static void size_words(igw_out *o, int64_t n)
{
    igw_out_printf(o, "%" PRId64 " byte%s", n, n == 1 ? "" : "s");
    if (n >= (INT64_C(1) << 20) && n % (INT64_C(1) << 20) == 0)
        igw_out_printf(o, " (%" PRId64 " MiB)", n >> 20);
    else if (n >= 1024 && n % 1024 == 0)
        igw_out_printf(o, " (%" PRId64 " KiB)", n >> 10);
}

/* "86400000 ms (24 h)" for millisecond constants that are whole units. */
static void value_with_unit(igw_out *o, int64_t v, const char *unit)
{
    igw_out_printf(o, "%" PRId64, v);
    if (!unit)
        return;
    igw_out_printf(o, " %s", unit);
    if (strcmp(unit, "ms") != 0 || v <= 0)
        return;
    static const struct { int64_t ms; const char *name; } units[] = {
        {3600000, "h"}, {60000, "min"}, {1000, "s"},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (v % units[i].ms == 0) {
            igw_out_printf(o, " (%" PRId64 " %s)", v / units[i].ms, units[i].name);
            return;
        }
}

static char *banner_comment(const igw_schema *s)
{
    igw_out b;
    igw_out_init(&b);
    igw_out_banner(&b, s, "");
    size_t n = b.len, start = 0;
    while (n && (b.buf[n - 1] == '\n' || b.buf[n - 1] == ' '))
        n--;
    while (start < n && b.buf[start] == ' ')
        start++;
    char *text = igw_xstrndup(b.buf + start, n - start);
    igw_out_free(&b);
    /* "--" may not appear inside an HTML comment (a file name could hold it). */
    for (char *p = strstr(text, "--"); p; p = strstr(p, "--"))
        p[1] = '=';
    char *r = igw_xprintf("<!-- %s -->\n", text);
    free(text);
    return r;
}

static void type_link(igw_out *o, const char *name) { igw_out_printf(o, "[`%s`](#type-%s)", name, name); }

static void list_values(igw_out *o, const igw_vec *v, const char *last_sep)
{
    for (int i = 0; i < v->n; i++) {
        if (i)
            igw_out_puts(o, i == v->n - 1 ? last_sep : ", ");
        code(o, IGW_VEC_AT(*v, const char, i));
    }
}

static const igw_error *role_class(const doc *d, unsigned role) { return igw_schema_error_role(d->s, role); }

static void class_ref(igw_out *o, const igw_error *e)
{
    if (e)
        igw_out_printf(o, "[`%s`](#error-%s)", e->name, e->name);
    else
        igw_out_puts(o, "an error");
}

/* ---- types in words ------------------------------------------------------ */

static void type_words(doc *d, igw_out *o, const igw_type *t, int depth);

static void string_words(igw_out *o, const igw_type *t)
{
    if (t->format == IGW_FMT_CANONICAL_ID) {
        igw_out_printf(o, "string: canonical decimal id 1 to %" PRId64, IGW_SAFE_MAX);
        return;
    }
    if (t->max_len == 0) {
        igw_out_puts(o, "empty string");
        return;
    }
    igw_out_puts(o, "string of ");
    if (t->min_len == t->max_len)
        igw_out_printf(o, "exactly %" PRId64, t->max_len);
    else if (t->min_len == 0)
        igw_out_printf(o, "at most %" PRId64, t->max_len);
    else
        igw_out_printf(o, "%" PRId64 " to %" PRId64, t->min_len, t->max_len);
    igw_out_puts(o, " bytes");
    if (t->format == IGW_FMT_IDENTIFIER)
        igw_out_puts(o, ", [identifier](#conventions)");
    else if (t->format == IGW_FMT_BCP47)
        igw_out_puts(o, ", BCP 47 language tag");
}

static void int_words(igw_out *o, const igw_type *t)
{
    if (t->min == -IGW_SAFE_MAX && t->max == IGW_SAFE_MAX)
        igw_out_puts(o, "safe integer");
    else
        igw_out_printf(o, "integer %" PRId64 " to %" PRId64, t->min, t->max);
    if (t->unit)
        igw_out_printf(o, ", in %s", t->unit);
}

static void type_words(doc *d, igw_out *o, const igw_type *t, int depth)
{
    if (depth > MAX_TYPE_DEPTH) {
        igw_diag_error(t->loc, "type nested too deeply for the API reference");
        d->failed = 1;
        return;
    }
    switch (t->kind) {
    case IGW_T_REF: {
        const igw_type *nt = t->target;
        const char *name = nt ? nt->name : t->ref;
        type_link(o, name);
        if (!nt || nt->kind == IGW_T_OBJECT)
            return;
        if (nt->kind == IGW_T_ENUM && nt->values.n > MAX_INLINE_ENUM) {
            igw_out_printf(o, " (one of %d values)", nt->values.n);
            return;
        }
        igw_out_puts(o, nt->kind == IGW_T_REF ? " = " : ": ");
        type_words(d, o, nt, depth + 1);
        return;
    }
    case IGW_T_STRING:
        string_words(o, t);
        return;
    case IGW_T_INT:
        int_words(o, t);
        return;
    case IGW_T_BOOL:
        igw_out_puts(o, "boolean");
        return;
    case IGW_T_ENUM:
        igw_out_puts(o, "one of ");
        list_values(o, &t->values, ", ");
        return;
    case IGW_T_ARRAY:
        igw_out_puts(o, "array of ");
        if (t->min_items == t->max_items)
            igw_out_printf(o, "exactly %" PRId64, t->max_items);
        else if (t->min_items == 0)
            igw_out_printf(o, "at most %" PRId64, t->max_items);
        else
            igw_out_printf(o, "%" PRId64 " to %" PRId64, t->min_items, t->max_items);
        igw_out_puts(o, t->unique ? " distinct items, each " : " items, each ");
        type_words(d, o, t->item, depth + 1);
        return;
    case IGW_T_JSON:
        igw_out_printf(o, "%s, depth at most %" PRId64 ", at most ",
                       t->json_kind == IGW_JSON_OBJECT ? "JSON object" : "any JSON value", t->max_depth);
        size_words(o, t->max_bytes);
        return;
    case IGW_T_OBJECT:
        /* Objects are always named (inline ones are synthesized), so they
         * are reached through references; this is the named type itself. */
        igw_out_puts(o, "object");
        return;
    }
}

/* ---- rules in words ------------------------------------------------------ */

static void cond_words(doc *d, igw_out *o, const igw_cond *k, int depth)
{
    if (depth > MAX_COND_DEPTH) {
        igw_diag_error(k->loc, "condition nested too deeply for the API reference");
        d->failed = 1;
        return;
    }
    switch (k->op) {
    case IGW_C_EQ:
    case IGW_C_NE:
        code(o, k->field);
        igw_out_puts(o, k->op == IGW_C_EQ ? " is " : " is not ");
        code(o, IGW_VEC_AT(k->values, const char, 0));
        return;
    case IGW_C_IN:
        code(o, k->field);
        igw_out_puts(o, k->values.n == 1 ? " is " : " is one of ");
        list_values(o, &k->values, " or ");
        return;
    case IGW_C_PRESENT:
        code(o, k->field);
        igw_out_puts(o, " is present");
        return;
    case IGW_C_NOT:
        if (k->a->op == IGW_C_PRESENT) {
            code(o, k->a->field);
            igw_out_puts(o, " is absent");
            return;
        }
        igw_out_puts(o, "not (");
        cond_words(d, o, k->a, depth + 1);
        igw_out_puts(o, ")");
        return;
    case IGW_C_AND:
    case IGW_C_OR:
        for (int side = 0; side < 2; side++) {
            const igw_cond *x = side ? k->b : k->a;
            bool paren = k->op == IGW_C_AND && x->op == IGW_C_OR;
            if (side)
                igw_out_puts(o, k->op == IGW_C_AND ? " and " : " or ");
            if (paren)
                igw_out_puts(o, "(");
            cond_words(d, o, x, depth + 1);
            if (paren)
                igw_out_puts(o, ")");
        }
        return;
    }
}

static const char *cmp_words(igw_cmp c)
{
    switch (c) {
    case IGW_CMP_LT: return "less than";
    case IGW_CMP_LE: return "at most";
    case IGW_CMP_GT: return "greater than";
    case IGW_CMP_GE: return "at least";
    }
    return "?";
}

static void operand_words(igw_out *o, const igw_operand *op, const char *unit)
{
    if (op->is_const) {
        value_with_unit(o, op->value, unit);
        return;
    }
    code(o, op->a);
    if (op->b) {
        igw_out_puts(o, " minus ");
        code(o, op->b);
    }
}

static const char *check_unit(const igw_rule *r)
{
    const igw_field *fs[4] = {r->lhs.fa, r->lhs.fb, r->rhs.fa, r->rhs.fb};
    for (int i = 0; i < 4; i++) {
        const igw_type *t = fs[i] ? igw_type_resolve(fs[i]->type) : NULL;
        if (t && t->unit)
            return t->unit;
    }
    return NULL;
}

static void rule_words(doc *d, igw_out *o, const igw_rule *r)
{
    if (r->kind == IGW_R_CHECK) {
        const char *unit = check_unit(r);
        operand_words(o, &r->lhs, unit);
        igw_out_printf(o, " must be %s ", cmp_words(r->cmp));
        operand_words(o, &r->rhs, unit);
        igw_out_puts(o, " (checked when the fields are present).");
        return;
    }
    list_values(o, &r->fields, " and ");
    igw_out_printf(o, " %s %s", r->fields.n == 1 ? "is" : "are", r->kind == IGW_R_REQUIRE ? "required" : "forbidden");
    if (r->when) {
        igw_out_puts(o, " when ");
        cond_words(d, o, r->when, 0);
    }
    igw_out_puts(o, ".");
}

/* ---- objects --------------------------------------------------------------- */

/* Whether a require/forbid rule names the field (its presence is conditional). */
static bool conditional(const igw_type *obj, const igw_field *f)
{
    for (int i = 0; i < obj->rules.n; i++) {
        const igw_rule *r = IGW_VEC_AT(obj->rules, igw_rule, i);
        for (int k = 0; r->kind != IGW_R_CHECK && k < r->fields.n; k++)
            if (strcmp(IGW_VEC_AT(r->fields, const char, k), f->name) == 0)
                return true;
    }
    return false;
}

/* A field's own doc, else the doc of the named type it names directly:
 * `msgToken Token;` is described by Token. Not through aliases, whose base
 * types (Ident) are too generic to describe a field. */
static const char *field_doc(const igw_field *f)
{
    if (f->doc)
        return f->doc;
    if (f->type && f->type->kind == IGW_T_REF && f->type->target)
        return f->type->target->doc;
    return NULL;
}

static void field_table(doc *d, const igw_type *obj)
{
    igw_out *o = d->o;
    if (obj->fields.n == 0) {
        igw_out_puts(o, "No fields: an empty object.\n\n");
        return;
    }
    igw_out_puts(o, "| Field | Type | Presence | Description |\n|---|---|---|---|\n");
    for (int i = 0; i < obj->fields.n; i++) {
        const igw_field *f = IGW_VEC_AT(obj->fields, igw_field, i);
        igw_out_puts(o, "| ");
        code(o, f->name);
        igw_out_puts(o, " | ");
        if (f->sw) {
            igw_out_puts(o, "object chosen by ");
            code(o, f->sw->on);
            igw_out_printf(o, ", see [%s.%s by %s](#switch-%s-%s)", obj->name, f->name, f->sw->on, obj->name,
                           f->name);
        } else {
            type_words(d, o, f->type, 0);
        }
        igw_out_puts(o, " | ");
        if (f->reserved) {
            igw_out_puts(o, "reserved: not open in this version, refused with ");
            class_ref(o, role_class(d, IGW_ROLE_RESERVED));
        } else if (!f->optional) {
            igw_out_puts(o, "required");
        } else {
            igw_out_puts(o, conditional(obj, f) ? "conditional (see rules)" : "optional");
        }
        igw_out_puts(o, " | ");
        md(o, field_doc(f));
        igw_out_puts(o, " |\n");
    }
    igw_out_puts(o, "\n");
}

static void rules_list(doc *d, const igw_type *obj)
{
    igw_out *o = d->o;
    int n = 0;
    bool from_switch = false;
    for (int i = 0; i < obj->rules.n; i++) {
        const igw_rule *r = IGW_VEC_AT(obj->rules, igw_rule, i);
        if (r->origin) {
            from_switch = true; /* shown with the switch cases */
            continue;
        }
        igw_out_puts(o, n++ ? "- " : "Rules:\n\n- ");
        rule_words(d, o, r);
        igw_out_puts(o, "\n");
    }
    if (n)
        igw_out_puts(o, "\n");
    for (int i = 0; from_switch && i < obj->fields.n; i++) {
        const igw_field *f = IGW_VEC_AT(obj->fields, igw_field, i);
        if (f->sw)
            igw_out_printf(o, "Which fields each `%s` requires or forbids: [%s.%s by %s](#switch-%s-%s).\n\n",
                           f->sw->on, obj->name, f->name, f->sw->on, obj->name, f->name);
    }
}

/* Field table and rules of an object type reached from `t` (a reference). */
static void object_detail(doc *d, const igw_type *t)
{
    const igw_type *obj = igw_type_resolve((igw_type *)t);
    if (!obj || obj->kind != IGW_T_OBJECT)
        return;
    field_table(d, obj);
    rules_list(d, obj);
}

/* ---- sections ------------------------------------------------------------ */

static const char *role_words(unsigned roles)
{
    static const struct { unsigned role; const char *words; } r[] = {
        {IGW_ROLE_OK, "Success."},
        {IGW_ROLE_DECODE, "The strict decoder refused the body."},
        {IGW_ROLE_RESERVED, "A field known but not open in this version."},
        {IGW_ROLE_BODY_CAP, "Body larger than the route's cap."},
        {IGW_ROLE_NO_ROUTE, "Unknown path."},
        {IGW_ROLE_METHOD, "Known path, wrong HTTP method."},
        {IGW_ROLE_MEDIA, "Wrong Content-Type."},
        {IGW_ROLE_INTERNAL, "Unexpected internal failure."},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (roles & r[i].role)
            return r[i].words;
    return NULL;
}

/* The methods block of the enum that selects switch `sw`, or NULL; and
 * whether it binds `value` (a value it leaves out answers not_implemented). */
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

static void intro(doc *d)
{
    igw_out *o = d->o;
    const igw_error *decode = role_class(d, IGW_ROLE_DECODE), *cap = role_class(d, IGW_ROLE_BODY_CAP),
                    *reserved = role_class(d, IGW_ROLE_RESERVED), *media = role_class(d, IGW_ROLE_MEDIA);
    igw_out_puts(o, "# igw API reference\n\n"
                    "Generated by igw-gen from `schema/*.igw`, the single source of the strict decoders, "
                    "the OpenAPI document (`generated/openapi.json`), the SQL schema and the conformance "
                    "vectors. To change anything here, change the schema.\n\n");
    igw_out_puts(o, "- [Conventions](#conventions)\n- [Envelope](#envelope)\n- [Error classes](#error-classes)\n"
                    "- [Routes](#routes)\n");
    for (int i = 0; i < d->s->routes.n; i++) {
        const igw_route *r = IGW_VEC_AT(d->s->routes, igw_route, i);
        igw_out_printf(o, "  - [`%s %s`](#route-%s)%s\n", r->method, r->path, r->name,
                       r->handler ? "" : " (not implemented)");
    }
    igw_out_puts(o, "- [Types](#types)\n- [Command methods](#command-methods)\n- [Events](#events)\n"
                    "- [Device protocols](#protocols)\n- [State machines](#state-machines)\n- [Tables](#tables)\n\n");

    igw_out_puts(o, "<a id=\"conventions\"></a>\n## Conventions\n\n");
    igw_out_puts(o, "- Every route is a POST with a JSON reply (the [envelope](#envelope)). JSON bodies are "
                    "decoded strictly before any authorization: duplicate keys, `null`, unknown fields and "
                    "integers outside the safe range are refused with ");
    class_ref(o, decode);
    igw_out_puts(o, "; a known but unopened (reserved) field with ");
    class_ref(o, reserved);
    igw_out_puts(o, "; a wrong Content-Type with ");
    class_ref(o, media);
    igw_out_puts(o, ".\n- Each route has a body cap in bytes, checked on the raw body before decoding; a larger "
                    "body is refused with ");
    class_ref(o, cap);
    igw_out_printf(o, ".\n- String lengths are counted in UTF-8 bytes, not characters. Integers are JSON integers "
                      "in the safe range -%" PRId64 " to %" PRId64 " unless narrower.\n",
                   IGW_SAFE_MAX, IGW_SAFE_MAX);
    igw_out_puts(o, "- An *identifier* is printable text with no wildcard (`*` `?` `%` `+` `#`), no control "
                    "character and no leading or trailing whitespace. A *canonical decimal id* has no sign, "
                    "no leading zero and no spaces. A *BCP 47 language tag* follows RFC 5646.\n"
                    "- In rules, \"`x` is not `v`\" also holds when `x` is absent.\n\n");
}

static void envelope(doc *d)
{
    igw_out *o = d->o;
    const igw_error *ok = role_class(d, IGW_ROLE_OK);
    igw_out_puts(o, "<a id=\"envelope\"></a>\n## Envelope\n\nEvery reply, success or error, is one JSON object:\n\n"
                    "| Field | Type | Meaning |\n|---|---|---|\n");
    igw_out_printf(o, "| `code` | integer | `%" PRId64 "` on success, otherwise the code of an [error class](#error-classes) |\n",
                   ok ? ok->code : 200);
    igw_out_puts(o, "| `msg` | string | Description of the code |\n"
                    "| `data` | object | Success: the route's reply (an empty object when it has none). "
                    "Error: `reason` (string, the public reason) and, when the failure has a place in the "
                    "body, `path` (JSON Pointer, RFC 6901) |\n\n");
}

static void error_classes(doc *d)
{
    igw_out *o = d->o;
    igw_out_puts(o, "<a id=\"error-classes\"></a>\n## Error classes\n\nThe HTTP status and envelope code of "
                    "every reply come from this table and nowhere else.\n\n"
                    "| Class | Code | HTTP | Reason | When |\n|---|---|---|---|---|\n");
    for (int i = 0; i < d->s->errors.n; i++) {
        const igw_error *e = IGW_VEC_AT(d->s->errors, igw_error, i);
        igw_out_printf(o, "| <a id=\"error-%s\"></a>`%s` | %" PRId64 " | %d | ", e->name, e->name, e->code, e->http);
        md(o, e->reason);
        igw_out_puts(o, " | ");
        /* The class's own text when it has one; else what the role means. */
        md(o, e->doc ? e->doc : role_words(e->roles));
        igw_out_puts(o, " |\n");
    }
    igw_out_puts(o, "\n");
}

static void route(doc *d, const igw_route *r)
{
    igw_out *o = d->o;
    igw_out_printf(o, "<a id=\"route-%s\"></a>\n### `%s %s`\n\n", r->name, r->method, r->path);
    if (r->doc) {
        md(o, r->doc);
        igw_out_puts(o, "\n\n");
    }
    igw_out_printf(o, "- **Operation:** `%s`\n", r->name);
    if (!r->handler) {
        const igw_error *later = role_class(d, IGW_ROLE_RESERVED);
        igw_out_puts(o, "- **Status: not implemented.** The schema binds no handler to this route: a request that "
                        "passes the strict stage");
        if (r->gate_signaling)
            igw_out_puts(o, r->auth == IGW_AUTH_NONE ? " and the signaling gate" : ", the signaling gate");
        if (r->auth != IGW_AUTH_NONE)
            igw_out_puts(o, " and authentication");
        igw_out_puts(o, " is answered ");
        class_ref(o, later);
        igw_out_printf(o, " %d\n", later ? later->http : 501);
    }
    igw_out_puts(o, "- **Auth:** ");
    switch (r->auth) {
    case IGW_AUTH_DEVICE:
        igw_out_puts(o, "device: HTTP Basic with the device's MQTT userName and password");
        break;
    case IGW_AUTH_USER:
        igw_out_puts(o, "user: the login token (bearer) with its enterprise context; identity never comes "
                        "from the body");
        if (r->auth_subprotocol)
            igw_out_puts(o, "; the token may also come as the WebSocket subprotocol `igw.bearer.<token>`, "
                            "offered with `igw.v1` (a browser can set no Authorization header)");
        break;
    case IGW_AUTH_NONE:
        igw_out_puts(o, "none");
        break;
    }
    igw_out_puts(o, r->gate_signaling ? "\n- **Signaling:** must be enabled\n" : "\n- **Signaling:** not required\n");
    igw_out_puts(o, "- **Body:** ");
    switch (r->body) {
    case IGW_BODY_NONE:
        igw_out_puts(o, "none (cap 0 bytes: any body is refused)");
        break;
    case IGW_BODY_JSON:
        igw_out_puts(o, "JSON ");
        type_words(d, o, r->body_type, 0);
        igw_out_puts(o, ", at most ");
        size_words(o, r->body_limit);
        break;
    case IGW_BODY_MULTIPART:
        igw_out_puts(o, "`multipart/form-data`, at most ");
        size_words(o, r->body_limit);
        if (r->extra_parts)
            igw_out_printf(o, "; parts not listed below are %s",
                           strcmp(r->extra_parts, "reject") == 0 ? "refused" : "ignored");
        break;
    }
    igw_out_puts(o, "\n- **Reply data:** ");
    if (r->reply)
        type_words(d, o, r->reply, 0);
    else
        igw_out_puts(o, "empty object");
    igw_out_puts(o, "\n- **Errors:** ");
    for (int i = 0; i < r->error_refs.n; i++) {
        const igw_error *e = IGW_VEC_AT(r->error_refs, igw_error, i);
        igw_out_puts(o, i ? ", " : "");
        class_ref(o, e);
        igw_out_printf(o, " %d", e->http);
    }
    igw_out_puts(o, "\n\n");
    if (r->params.n) {
        igw_out_puts(o, "Path parameters:\n\n| Parameter | Type | Description |\n|---|---|---|\n");
        for (int i = 0; i < r->params.n; i++) {
            const igw_field *f = IGW_VEC_AT(r->params, igw_field, i);
            igw_out_puts(o, "| ");
            code(o, f->name);
            igw_out_puts(o, " | ");
            type_words(d, o, f->type, 0);
            igw_out_puts(o, " | ");
            const igw_type *pt = f->type->kind == IGW_T_REF ? f->type->target : NULL;
            md(o, f->doc ? f->doc : pt ? pt->doc : NULL);
            igw_out_puts(o, " |\n");
        }
        igw_out_puts(o, "\n");
    }
    if (r->headers.n) {
        igw_out_puts(o, "Headers:\n\n| Header | Presence | Type | Description |\n|---|---|---|---|\n");
        for (int i = 0; i < r->headers.n; i++) {
            const igw_field *f = IGW_VEC_AT(r->headers, igw_field, i);
            igw_out_puts(o, "| ");
            code(o, f->name);
            igw_out_puts(o, f->optional ? " | optional | " : " | required | ");
            type_words(d, o, f->type, 0);
            igw_out_puts(o, " | ");
            const igw_type *pt = f->type->kind == IGW_T_REF ? f->type->target : NULL;
            md(o, f->doc ? f->doc : pt ? pt->doc : NULL);
            igw_out_puts(o, " |\n");
        }
        igw_out_puts(o, "\n");
        if (r->rules.n) {
            igw_out_puts(o, "Header rules (checked by the strict stage, before authentication):\n\n");
            for (int i = 0; i < r->rules.n; i++) {
                igw_out_puts(o, "- `");
                igw_rule_text(o, IGW_VEC_AT(r->rules, igw_rule, i));
                igw_out_puts(o, "`\n");
            }
            igw_out_puts(o, "\n");
        }
    }
    if (r->body == IGW_BODY_MULTIPART) {
        igw_out_puts(o, "Parts:\n\n| Part | Presence | Description |\n|---|---|---|\n");
        for (int i = 0; i < r->parts.n; i++) {
            const igw_part *p = IGW_VEC_AT(r->parts, igw_part, i);
            igw_out_puts(o, "| ");
            code(o, p->name);
            igw_out_puts(o, p->required ? " | required | " : " | optional | ");
            md(o, p->doc);
            igw_out_puts(o, " |\n");
        }
        igw_out_puts(o, "\n");
    }
    if (r->body == IGW_BODY_JSON) {
        igw_out_puts(o, "Request fields:\n\n");
        object_detail(d, r->body_type);
    }
    if (r->reply) {
        igw_out_puts(o, "Reply fields:\n\n");
        object_detail(d, r->reply);
    }
}

static void types(doc *d)
{
    igw_out *o = d->o;
    igw_out_puts(o, "<a id=\"types\"></a>\n## Types\n\nEvery named type, in schema order. Inline objects are "
                    "named after their owner and field.\n\n");
    for (int i = 0; i < d->s->types.n; i++) {
        const igw_type *t = IGW_VEC_AT(d->s->types, igw_type, i);
        if (!t->used && !t->synthesized)
            continue;
        igw_out_printf(o, "<a id=\"type-%s\"></a>\n### `%s`\n\n", t->name, t->name);
        if (t->doc) {
            md(o, t->doc);
            igw_out_puts(o, "\n\n");
        }
        switch (t->kind) {
        case IGW_T_OBJECT:
            field_table(d, t);
            rules_list(d, t);
            break;
        case IGW_T_ENUM:
            igw_out_puts(o, "Enum, one of: ");
            list_values(o, &t->values, ", ");
            igw_out_puts(o, ".\n\n");
            break;
        case IGW_T_REF:
            igw_out_puts(o, "Same as ");
            type_words(d, o, t, 0);
            igw_out_puts(o, ".\n\n");
            break;
        default:
            type_words(d, o, t, 0);
            igw_out_puts(o, ".\n\n");
            break;
        }
    }
}

static void command_methods(doc *d)
{
    igw_out *o = d->o;
    igw_out_puts(o, "<a id=\"command-methods\"></a>\n## Command methods\n\nFields whose type is chosen by a "
                    "sibling enum field, with the sibling fields each choice requires or forbids.\n\n");
    int n = 0;
    for (int i = 0; i < d->s->types.n; i++) {
        const igw_type *t = IGW_VEC_AT(d->s->types, igw_type, i);
        if (t->kind != IGW_T_OBJECT)
            continue;
        for (int k = 0; k < t->fields.n; k++) {
            const igw_field *f = IGW_VEC_AT(t->fields, igw_field, k);
            if (!f->sw)
                continue;
            n++;
            igw_out_printf(o, "<a id=\"switch-%s-%s\"></a>\n### `%s.%s` by `%s`\n\n", t->name, f->name, t->name,
                           f->name, f->sw->on);
            /* A value its enum's methods block leaves out has no handler. */
            const igw_methods *mb = methods_of(d->s, f->sw);
            if (mb) {
                const igw_error *later = role_class(d, IGW_ROLE_RESERVED);
                igw_out_printf(o, "Status: whether the `methods %s` table binds a handler; a value it leaves out is "
                                  "answered ", mb->on);
                class_ref(o, later);
                igw_out_printf(o, " %d.\n\n", later ? later->http : 501);
            }
            igw_out_printf(o, "| `%s` | `%s` type | Requires | Forbids |%s Summary |\n|---|---|---|---|%s---|\n",
                           f->sw->on, f->name, mb ? " Status |" : "", mb ? "---|" : "");
            for (int c = 0; c < f->sw->cases.n; c++) {
                const igw_case *cs = IGW_VEC_AT(f->sw->cases, igw_case, c);
                igw_out_puts(o, "| ");
                code(o, cs->value);
                igw_out_puts(o, " | ");
                type_words(d, o, cs->type, 0);
                igw_out_puts(o, " | ");
                list_values(o, &cs->require, ", ");
                igw_out_puts(o, " | ");
                list_values(o, &cs->forbid, ", ");
                igw_out_puts(o, " | ");
                if (mb)
                    igw_out_puts(o, bound(mb, cs->value) ? "implemented | " : "**not implemented** | ");
                const igw_type *ct = igw_type_resolve(cs->type);
                md(o, ct ? ct->doc : NULL);
                igw_out_puts(o, " |\n");
            }
            igw_out_puts(o, "\n");
        }
    }
    if (n == 0)
        igw_out_puts(o, "None.\n\n");
}

static void events(doc *d)
{
    igw_out *o = d->o;
    igw_out_puts(o, "<a id=\"events\"></a>\n## Events\n\nEnvelopes the platform sends to applications; pulled "
                    "with `/events` and acknowledged with `/events/ack`.\n\n"
                    "| Event | Envelope | Description |\n|---|---|---|\n");
    for (int i = 0; i < d->s->events.n; i++) {
        const igw_event *e = IGW_VEC_AT(d->s->events, igw_event, i);
        igw_out_puts(o, "| ");
        code(o, e->name);
        igw_out_puts(o, " | ");
        type_words(d, o, e->type, 0);
        igw_out_puts(o, " | ");
        md(o, e->doc);
        igw_out_puts(o, " |\n");
    }
    igw_out_puts(o, "\n");
}

static void protocols(doc *d)
{
    igw_out *o = d->o;
    igw_out_puts(o, "<a id=\"protocols\"></a>\n## Device protocols\n\nMethods a device may send, by handle and "
                    "message type (topic `$<handle>/up/<type>/{productID}/{deviceName}`, or the path of the HTTP "
                    "send route). `*` is any identifier; a leading `$` on the handle is tolerated. Anything not "
                    "listed is refused.\n\n");
    for (int i = 0; i < d->s->protocols.n; i++) {
        const igw_protocol *p = IGW_VEC_AT(d->s->protocols, igw_protocol, i);
        igw_out_printf(o, "<a id=\"protocol-%s\"></a>\n### `%s`\n\n", p->name, p->name);
        if (p->doc) {
            md(o, p->doc);
            igw_out_puts(o, "\n\n");
        }
        igw_out_puts(o, "| Handle | Type | Method | Reply | Check | Returns | Description |\n"
                        "|---|---|---|---|---|---|---|\n");
        for (int k = 0; k < p->rows.n; k++) {
            const igw_proto_row *r = IGW_VEC_AT(p->rows, igw_proto_row, k);
            igw_out_puts(o, "| ");
            code(o, r->handle);
            igw_out_puts(o, " | ");
            code(o, r->type);
            igw_out_puts(o, " | ");
            code(o, r->method);
            igw_out_puts(o, " | ");
            if (r->reply) {
                code(o, r->reply);
            } else if (r->answers) {
                igw_out_puts(o, "none: answers the ");
                code(o, r->answers);
                igw_out_puts(o, " downlink");
            } else {
                igw_out_puts(o, "none");
            }
            igw_out_printf(o, " | %s | ", r->check ? r->check : "none");
            if (r->data) {
                const igw_type *dt = igw_type_resolve(r->data);
                igw_out_printf(o, "[`%s`](#type-%s)", dt->name, dt->name);
            } else {
                igw_out_puts(o, r->returns ? r->returns : "none");
            }
            igw_out_puts(o, " | ");
            if (r->params) {
                const igw_type *pt = igw_type_resolve(r->params);
                igw_out_printf(o, "params: [`%s`](#type-%s). ", pt->name, pt->name);
            }
            md(o, r->doc);
            igw_out_puts(o, " |\n");
        }
        igw_out_puts(o, "\n");
        if (p->downs.n) {
            igw_out_puts(o, "Downlinks the platform publishes (topic `$<handle>/down/<type>/{productID}/{deviceName}`):\n\n"
                            "| Handle | Type | Method | Message | Description |\n|---|---|---|---|---|\n");
            for (int k = 0; k < p->downs.n; k++) {
                const igw_proto_down *dn = IGW_VEC_AT(p->downs, igw_proto_down, k);
                const igw_type *mt = igw_type_resolve(dn->message);
                igw_out_puts(o, "| ");
                code(o, dn->handle);
                igw_out_puts(o, " | ");
                code(o, dn->type);
                igw_out_puts(o, " | ");
                code(o, dn->method);
                igw_out_printf(o, " | [`%s`](#type-%s) | ", mt->name, mt->name);
                md(o, dn->doc);
                igw_out_puts(o, " |\n");
            }
            igw_out_puts(o, "\n");
        }
    }
    if (!d->s->protocols.n)
        igw_out_puts(o, "None.\n\n");
}

static void machine(doc *d, const igw_machine *m)
{
    igw_out *o = d->o;
    igw_out_printf(o, "<a id=\"machine-%s\"></a>\n### `%s`\n\n", m->name, m->name);
    if (m->doc) {
        md(o, m->doc);
        igw_out_puts(o, "\n\n");
    }
    igw_out_printf(o, "Graph: [machines/%s.dot](machines/%s.dot). A trigger not listed for a state is refused "
                      "with ",
                   m->name, m->name);
    class_ref(o, m->illegal_ref);
    igw_out_puts(o, ".\n\n| State | Terminal | Entered with | Description |\n|---|---|---|---|\n");
    for (int i = 0; i < m->states.n; i++) {
        const igw_state *st = IGW_VEC_AT(m->states, igw_state, i);
        igw_out_puts(o, "| ");
        code(o, st->name);
        igw_out_puts(o, st->terminal ? " | yes | " : " | no | ");
        list_values(o, &st->requires, ", ");
        igw_out_puts(o, " | ");
        md(o, st->doc);
        igw_out_puts(o, " |\n");
    }
    igw_out_puts(o, "\n");
    if (m->guards.n) {
        igw_out_puts(o, "| Guard | Holds when |\n|---|---|\n");
        for (int i = 0; i < m->guards.n; i++) {
            const igw_guard *g = IGW_VEC_AT(m->guards, igw_guard, i);
            igw_out_puts(o, "| ");
            code(o, g->name);
            igw_out_puts(o, " | ");
            md(o, g->doc);
            igw_out_puts(o, " |\n");
        }
        igw_out_puts(o, "\n");
    }
    igw_out_puts(o, "| State | Trigger | Guard | Next | Also |\n|---|---|---|---|---|\n");
    for (int i = 0; i < m->transitions.n; i++) {
        const igw_transition *t = IGW_VEC_AT(m->transitions, igw_transition, i);
        igw_out_puts(o, "| ");
        for (int k = 0; k < t->from.n; k++) {
            const char *f = IGW_VEC_AT(t->from, const char, k);
            igw_out_puts(o, k ? ", " : "");
            if (strcmp(f, "none") == 0)
                igw_out_puts(o, "(none)");
            else if (strcmp(f, "*") == 0)
                igw_out_puts(o, "any non-terminal");
            else
                code(o, f);
        }
        igw_out_puts(o, " | ");
        code(o, t->trigger);
        igw_out_puts(o, " | ");
        if (t->guard)
            code(o, t->guard);
        igw_out_puts(o, " | ");
        if (t->reject) {
            igw_out_puts(o, "refused: ");
            class_ref(o, t->error_ref);
            igw_out_puts(o, " | ");
            md(o, t->reason);
        } else {
            code(o, t->to);
            igw_out_puts(o, " | ");
            md(o, t->reason);
        }
        igw_out_puts(o, " |\n");
    }
    igw_out_puts(o, "\n");
}

static void tables(doc *d)
{
    igw_out *o = d->o;
    igw_out_puts(o, "<a id=\"tables\"></a>\n## Tables\n\nThe PostgreSQL ledger (`generated/sql/schema.sql`). "
                    "Columns are NOT NULL unless marked null.\n\n"
                    "| Table | Columns | Keys | Description |\n|---|---|---|---|\n");
    for (int i = 0; i < d->s->tables.n; i++) {
        const igw_table *t = IGW_VEC_AT(d->s->tables, igw_table, i);
        igw_out_puts(o, "| ");
        code(o, t->name);
        igw_out_puts(o, " | ");
        for (int k = 0; k < t->columns.n; k++) {
            const igw_column *c = IGW_VEC_AT(t->columns, igw_column, k);
            igw_out_puts(o, k ? ", " : "");
            code(o, c->name);
            igw_out_printf(o, " %s%s", c->sqltype, c->nullable ? " null" : "");
            if (c->machine)
                igw_out_printf(o, " (a [`%s`](#machine-%s) state)", c->machine, c->machine);
            if (c->ref_table)
                igw_out_printf(o, " → `%s.%s`", c->ref_table, c->ref_column);
        }
        igw_out_puts(o, " | ");
        for (int k = 0; k < t->indexes.n; k++) {
            const igw_index *ix = IGW_VEC_AT(t->indexes, igw_index, k);
            igw_out_puts(o, k ? "; " : "");
            igw_out_puts(o, ix->primary ? "primary key (" : ix->unique ? "unique (" : "index (");
            for (int c = 0; c < ix->columns.n; c++)
                igw_out_printf(o, "%s%s", c ? ", " : "", IGW_VEC_AT(ix->columns, const char, c));
            igw_out_puts(o, ")");
            if (ix->where_not_state)
                igw_out_printf(o, " where %s not %s", ix->where, ix->where_not_state);
            else if (ix->where_state)
                igw_out_printf(o, " where %s = %s", ix->where, ix->where_state);
            else if (ix->where)
                igw_out_printf(o, " where %s %snull", ix->where, ix->where_not_null ? "not " : "");
        }
        for (int k = 0; k < t->notifies.n; k++) {
            const igw_notify *n = IGW_VEC_AT(t->notifies, igw_notify, k);
            igw_out_printf(o, "; notify `%s` on (", n->channel);
            for (int c = 0; c < n->columns.n; c++)
                igw_out_printf(o, "%s%s", c ? ", " : "", IGW_VEC_AT(n->columns, const char, c));
            igw_out_puts(o, ")");
        }
        igw_out_puts(o, " | ");
        md(o, t->doc);
        igw_out_puts(o, " |\n");
    }
}

int igw_emit_apidoc(const igw_schema *s, const char *docs_dir)
{
    igw_out o;
    igw_out_init(&o);
    doc d = {.o = &o, .s = s};
    char *banner = banner_comment(s);
    igw_out_puts(&o, banner);
    free(banner);
    igw_out_puts(&o, "\n");
    intro(&d);
    envelope(&d);
    error_classes(&d);
    igw_out_puts(&o, "<a id=\"routes\"></a>\n## Routes\n\n");
    for (int i = 0; i < s->routes.n; i++)
        route(&d, IGW_VEC_AT(s->routes, igw_route, i));
    types(&d);
    command_methods(&d);
    events(&d);
    protocols(&d);
    igw_out_puts(&o, "<a id=\"state-machines\"></a>\n## State machines\n\n");
    for (int i = 0; i < s->machines.n; i++)
        machine(&d, IGW_VEC_AT(s->machines, igw_machine, i));
    tables(&d);
    int rc = d.failed ? -1 : igw_out_save(&o, docs_dir, "api.md");
    igw_out_free(&o);
    return rc;
}
