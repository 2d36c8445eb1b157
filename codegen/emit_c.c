/* emit_c.c - C back end: types, strict single-pass decoders, encoders, error
 * classes, route table and dispatch (generated/api.h, generated/api.c).
 *
 * Decoders follow flatcc's generated JSON parsers in spirit: no DOM, one pass
 * over the bytes; each object keeps a `has` bitmask that serves both for
 * duplicate detection and required/conditional rules; keys are matched by
 * length first, then one compare (h2o's token table idea; igw_bytes_eq,
 * which unrolls where the C library's memcmp would be a call). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "ruletext.h"
#include "util.h"

#define FOR(vec, T, x)                                                                     \
    for (int x##_i = 0; x##_i < (vec).n; x##_i++)                                          \
        for (T *x = IGW_VEC_AT(vec, T, x##_i); x; x = NULL)

/* C type used to hold a value of schema type `t`. */
static const char *ctype(igw_type *t)
{
    igw_type *r = igw_type_resolve(t);
    switch (r->kind) {
    case IGW_T_STRING:
    case IGW_T_JSON: return "igw_str";
    case IGW_T_INT: return "int64_t";
    case IGW_T_BOOL: return "bool";
    case IGW_T_ENUM: return igw_sprintf("igw_%s", r->name);
    case IGW_T_OBJECT: return igw_sprintf("igw_%s", r->name);
    case IGW_T_ARRAY: {
        igw_type *it = igw_type_resolve(r->item);
        if (it->kind == IGW_T_STRING || it->kind == IGW_T_JSON)
            return "igw_str_list";
        if (it->kind == IGW_T_INT)
            return "igw_int_list";
        if (it->kind == IGW_T_BOOL)
            return "igw_bool_list";
        return igw_sprintf("igw_%s_list", it->name);
    }
    default: return "void";
    }
}

static const char *bit(const igw_type *obj, const igw_field *f)
{
    return igw_sprintf("IGW_%s_%s", obj->name, f->name);
}

/* The field's number in its object: the bit of `has`, the key matcher's answer. */
static const char *field_const(const igw_type *obj, const igw_field *f)
{
    return igw_sprintf("IGW_%s_F_%s", obj->name, f->name);
}

/* A string format as the runtime names it (decode.h). */
static const char *format_const(igw_format f)
{
    switch (f) {
    case IGW_FMT_CANONICAL_ID: return "IGW_FORMAT_CANONICAL_ID";
    case IGW_FMT_BCP47: return "IGW_FORMAT_BCP47";
    case IGW_FMT_IDENTIFIER: return "IGW_FORMAT_IDENTIFIER";
    default: return "IGW_FORMAT_NONE";
    }
}

static const char *enum_const(const igw_type *e, const char *value)
{
    return igw_sprintf("IGW_%s_%s", e->name, igw_c_ident(value));
}

/* ---- header ---------------------------------------------------------------- */

/* Emits object structs so that every by-value member is defined first. */
static void emit_struct(igw_out *h, igw_type *t, char *done, const igw_schema *s);

static void emit_deps(igw_out *h, igw_type *ft, char *done, const igw_schema *s)
{
    igw_type *r = igw_type_resolve(ft);
    if (r->kind == IGW_T_ARRAY)
        r = igw_type_resolve(r->item);
    if (r->kind == IGW_T_OBJECT)
        emit_struct(h, r, done, s);
}

static void emit_struct(igw_out *h, igw_type *t, char *done, const igw_schema *s)
{
    if (done[t->index])
        return;
    done[t->index] = 1;
    FOR(t->fields, igw_field, f) {
        if (f->type)
            emit_deps(h, f->type, done, s);
        if (f->sw)
            FOR(f->sw->cases, igw_case, c)
                emit_deps(h, c->type, done, s);
    }
    igw_out_printf(h, "/* %s */\n", t->doc ? t->doc : t->name);
    igw_out_printf(h, "typedef struct igw_%s {\n    uint64_t has; /* IGW_%s_<field> bits of the fields present */\n",
                   t->name, t->name);
    FOR(t->fields, igw_field, f) {
        if (f->sw) {
            igw_out_puts(h, "    union {\n");
            FOR(f->sw->cases, igw_case, c)
                igw_out_printf(h, "        %s %s;\n", ctype(c->type), igw_c_ident(c->value));
            igw_out_printf(h, "    } %s; /* selected by %s */\n", f->name, f->sw->on);
        } else {
            igw_out_printf(h, "    %s %s;\n", ctype(f->type), f->name);
        }
    }
    igw_out_printf(h, "} igw_%s;\n", t->name);
    /* Field numbers by name: a field inserted in the schema renumbers the
     * ones after it here, never in code that names them. */
    igw_out_printf(h, "enum igw_%s_field {\n", t->name);
    FOR(t->fields, igw_field, f)
        igw_out_printf(h, "    %s = %d,\n", field_const(t, f), f->index);
    igw_out_printf(h, "    IGW_%s__NFIELDS\n};\n", t->name);
    FOR(t->fields, igw_field, f)
        igw_out_printf(h, "#define %s (UINT64_C(1) << %s)\n", bit(t, f), field_const(t, f));
    bool any_required = false;
    igw_out_printf(h, "#define IGW_%s__REQUIRED (", t->name);
    FOR(t->fields, igw_field, f)
        if (!f->optional) {
            igw_out_printf(h, "%s%s", any_required ? " | " : "", bit(t, f));
            any_required = true;
        }
    igw_out_printf(h, "%s)\n", any_required ? "" : "UINT64_C(0)");
    igw_out_printf(h, "typedef struct igw_%s_list {\n    igw_%s *v;\n    uint32_t n;\n} igw_%s_list;\n\n", t->name,
                   t->name, t->name);
    (void)s;
}

static void emit_header(const igw_schema *s, igw_out *h)
{
    igw_out_banner(h, s, "//");
    igw_out_puts(h, "/* api.h - types, strict decoders, encoders, error classes and routes of igw. */\n"
                    "#ifndef IGW_GENERATED_API_H\n#define IGW_GENERATED_API_H\n\n"
                    "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n"
                    "#include \"arena.h\"\n#include \"json.h\"\n#include \"jw.h\"\n#include \"request.h\"\n\n");

    igw_out_puts(h, "/* ---- error classes ---- */\n\ntypedef enum igw_err {\n");
    FOR(s->errors, igw_error, e)
        igw_out_printf(h, "    IGW_ERR_%s, /* %lld, HTTP %d */\n", igw_c_upper(e->name), (long long)e->code, e->http);
    igw_out_puts(h, "    IGW_ERR__COUNT\n} igw_err;\n\n");
    static const struct { unsigned role; const char *name; } roles[] = {
        {IGW_ROLE_OK, "OK_ROLE"}, {IGW_ROLE_DECODE, "DECODE"}, {IGW_ROLE_RESERVED, "RESERVED"},
        {IGW_ROLE_BODY_CAP, "BODY_CAP"}, {IGW_ROLE_NO_ROUTE, "NO_ROUTE"}, {IGW_ROLE_METHOD, "METHOD_ROLE"},
        {IGW_ROLE_MEDIA, "MEDIA_TYPE_ROLE"}, {IGW_ROLE_INTERNAL, "INTERNAL_ROLE"}, {IGW_ROLE_GATE, "GATE"},
    };
    igw_out_puts(h, "/* The class the runtime uses for each built-in situation. */\n");
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        igw_error *e = igw_schema_error_role(s, roles[i].role);
        if (e) /* optional roles (gate) exist only when the schema uses them */
            igw_out_printf(h, "#define IGW_ERR_FOR_%s IGW_ERR_%s\n", roles[i].name, igw_c_upper(e->name));
    }
    igw_out_puts(h, "\ntypedef struct igw_error_class {\n    const char *name;\n    int64_t code;\n    int http;\n"
                    "    const char *reason;\n} igw_error_class;\n\n"
                    "/* Indexed by igw_err. */\nextern const igw_error_class igw_error_classes[IGW_ERR__COUNT];\n\n");

    igw_out_puts(h, "/* ---- enums ---- */\n\n");
    FOR(s->types, igw_type, t) {
        if (t->kind != IGW_T_ENUM)
            continue;
        igw_out_printf(h, "typedef enum igw_%s {\n", t->name);
        FOR(t->values, const char, v)
            igw_out_printf(h, "    %s,\n", enum_const(t, v));
        igw_out_printf(h, "    IGW_%s__COUNT\n} igw_%s;\n", t->name, t->name);
        igw_out_printf(h, "typedef struct igw_%s_list {\n    igw_%s *v;\n    uint32_t n;\n} igw_%s_list;\n", t->name,
                       t->name, t->name);
        igw_out_printf(h, "/* Wire names, indexed by igw_%s. */\nextern const igw_str igw_%s_names[IGW_%s__COUNT];\n",
                       t->name, t->name, t->name);
        igw_out_printf(h, "/* The value a wire name names (length, then memcmp), or -1. */\nint igw_%s_of(igw_str s);\n\n",
                       t->name);
    }

    igw_out_puts(h, "/* ---- objects ---- */\n\n"
                    "typedef struct igw_str_list {\n    igw_str *v;\n    uint32_t n;\n} igw_str_list;\n"
                    "typedef struct igw_int_list {\n    int64_t *v;\n    uint32_t n;\n} igw_int_list;\n"
                    "typedef struct igw_bool_list {\n    bool *v;\n    uint32_t n;\n} igw_bool_list;\n\n");
    char *done = igw_xcalloc((size_t)s->types.n + 1, 1);
    FOR(s->types, igw_type, t)
        if (t->kind == IGW_T_OBJECT)
            emit_struct(h, t, done, s);
    free(done);
    igw_emit_bounds(s, h);

    igw_out_puts(h, "/* ---- decoders and encoders ---- */\n\n"
                    "/* Each decoder reads one object of its type at the scanner's position, strictly\n"
                    " * (see docs/schema-language.md); 0 or -1 with the failure in the scanner.\n"
                    " * Each encoder writes the object with fields in schema order. */\n");
    FOR(s->types, igw_type, t) {
        if (t->kind != IGW_T_OBJECT)
            continue;
        igw_out_printf(h, "int igw_decode_%s(igw_json *j, igw_%s *out);\n", t->name, t->name);
        igw_out_printf(h, "void igw_encode_%s(igw_jw *w, const igw_%s *in);\n", t->name, t->name);
    }

    igw_out_puts(h, "\n/* ---- routes ---- */\n\ntypedef enum igw_route_id {\n");
    FOR(s->routes, igw_route, r)
        igw_out_printf(h, "    IGW_ROUTE_%s,\n", igw_c_upper(r->name));
    igw_out_puts(h, "    IGW_ROUTE__COUNT\n} igw_route_id;\n\n");
    /* The places of a route's path parameters and headers in igw_request's
     * params[] and headers[], by name. */
    FOR(s->routes, igw_route, r) {
        if (!r->params.n && !r->headers.n)
            continue;
        const char *up = igw_c_upper(r->name);
        igw_out_printf(h, "enum igw_route_%s_slots {\n", r->name);
        FOR(r->params, igw_field, f)
            igw_out_printf(h, "    IGW_%s_P_%s = %d,\n", up, igw_c_ident(f->name), f_i);
        FOR(r->headers, igw_field, f)
            igw_out_printf(h, "    IGW_%s_H_%s = %d,\n", up, igw_c_ident(f->name), f_i);
        igw_out_puts(h, "};\n");
    }
    igw_out_puts(h, "\n");
    igw_out_puts(h,
        "/* Indexed by igw_route_id. */\nextern const igw_route_def igw_routes[IGW_ROUTE__COUNT];\n\n"
        "/* The route table, matcher and error classes for src/rt/request.h:\n"
        " * igw_request_decode(&igw_gen_api, ...) runs the strict stage. */\n"
        "extern const igw_api igw_gen_api;\n\n"
        "#endif\n");
}

/* ---- decoders ------------------------------------------------------------- */

static int tmp_counter;

static void indent(igw_out *o, int n)
{
    for (int i = 0; i < n; i++)
        igw_out_puts(o, "    ");
}

/* Ends an `if (...)` line at indent `in` with its failure branch:
 * `return <fail>;`, or, when `call` is given (the call recording the
 * failure), `{ call; return <fail>; }`. */
static void emit_fail(igw_out *o, int in, const char *call, const char *fail)
{
    if (!call || strcmp(fail, "-1") == 0) {
        igw_out_puts(o, "\n");
        indent(o, in + 1);
        igw_out_printf(o, "return %s;\n", call ? call : fail);
        return;
    }
    igw_out_puts(o, " {\n");
    indent(o, in + 1);
    igw_out_printf(o, "%s;\n", call);
    indent(o, in + 1);
    igw_out_printf(o, "return %s;\n", fail);
    indent(o, in);
    igw_out_puts(o, "}\n");
}

/* Emits code reading one value of type `t` into lvalue `lv`. Error paths are
 * built lazily (json.h): nothing is pushed on the way in; after a failure the
 * code returns `fail`, an expression that prepends the segments of the value
 * within the decoder (its key, its item index) and yields -1 ("-1" when the
 * caller prepends them itself). */
static void emit_read(igw_out *o, igw_type *t, const char *lv, int in, const char *fail)
{
    igw_type *r = igw_type_resolve(t);
    switch (r->kind) {
    case IGW_T_STRING:
        indent(o, in);
        igw_out_printf(o, "if (igw_json_string(j, &%s) || igw_decode_string_rules(j, %s, %lld, %lld, %s))", lv, lv,
                       (long long)r->min_len, (long long)r->max_len, format_const(r->format));
        emit_fail(o, in, NULL, fail);
        break;
    case IGW_T_INT:
        indent(o, in);
        igw_out_printf(o, "if (igw_json_int(j, &%s, INT64_C(%lld), INT64_C(%lld)))", lv, (long long)r->min,
                       (long long)r->max);
        emit_fail(o, in, NULL, fail);
        break;
    case IGW_T_BOOL:
        indent(o, in);
        igw_out_printf(o, "if (igw_json_bool(j, &%s))", lv);
        emit_fail(o, in, NULL, fail);
        break;
    case IGW_T_ENUM:
        indent(o, in);
        igw_out_printf(o, "if (enum_%s(j, &%s))", r->name, lv);
        emit_fail(o, in, NULL, fail);
        break;
    case IGW_T_OBJECT:
        indent(o, in);
        igw_out_printf(o, "if (igw_decode_%s(j, &%s))", r->name, lv);
        emit_fail(o, in, NULL, fail);
        break;
    case IGW_T_JSON:
        indent(o, in);
        igw_out_printf(o, "if (igw_decode_free(j, %s, %lld, %lld, &%s))",
                       r->json_kind == IGW_JSON_OBJECT ? "true" : "false", (long long)r->max_depth,
                       (long long)r->max_bytes, lv);
        emit_fail(o, in, NULL, fail);
        break;
    case IGW_T_ARRAY: {
        int k = tmp_counter++;
        igw_type *it = igw_type_resolve(r->item);
        /* An item's failure gets its index, then whatever `fail` adds. */
        char *ifail = strcmp(fail, "-1") == 0 ? igw_xprintf("igw_json_prefix_index(j, %s.n)", lv)
                                               : igw_xprintf("(igw_json_prefix_index(j, %s.n), %s)", lv, fail);
        indent(o, in);
        igw_out_puts(o, "{\n");
        indent(o, in + 1);
        igw_out_printf(o, "int more%d;\n", k);
        indent(o, in + 1);
        igw_out_printf(o, "if (igw_json_array_begin(j))");
        emit_fail(o, in + 1, NULL, fail);
        indent(o, in + 1);
        igw_out_printf(o, "uint32_t cap%d = 0;\n", k);
        if (r->unique && it->kind == IGW_T_STRING) {
            indent(o, in + 1);
            igw_out_printf(o, "igw_decode_set set%d = {0};\n", k);
        }
        indent(o, in + 1);
        igw_out_printf(o, "%s.n = 0;\n", lv);
        indent(o, in + 1);
        igw_out_printf(o, "%s.v = NULL;\n", lv);
        indent(o, in + 1);
        igw_out_printf(o, "while ((more%d = igw_json_array_next(j)) == 1) {\n", k);
        indent(o, in + 2);
        igw_out_printf(o, "if (%s.n == %lld)", lv, (long long)r->max_items);
        emit_fail(o, in + 2, igw_sprintf("igw_json_fail(j, IGW_JERR_LENGTH, \"more than %lld items\")",
                                         (long long)r->max_items), ifail);
        /* Room grows with the items actually sent, never to the bound up front. */
        indent(o, in + 2);
        igw_out_printf(o, "if (%s.n == cap%d && !(%s.v = igw_decode_grow(j, %s.v, %s.n, &cap%d, %lld, sizeof *%s.v)))",
                       lv, k, lv, lv, lv, k, (long long)r->max_items, lv);
        emit_fail(o, in + 2, NULL, ifail);
        char *item = igw_xprintf("%s.v[%s.n]", lv, lv);
        emit_read(o, r->item, item, in + 2, ifail);
        if (r->unique && it->kind == IGW_T_STRING) {
            /* A hash set past a few items: a long unique array stays linear. */
            indent(o, in + 2);
            igw_out_printf(o, "if (igw_decode_unique_str(j, &set%d, %s.v, %s.n))", k, lv, lv);
            emit_fail(o, in + 2, NULL, ifail);
        } else if (r->unique) {
            indent(o, in + 2);
            igw_out_printf(o, "for (uint32_t u = 0; u < %s.n; u++)\n", lv);
            indent(o, in + 3);
            igw_out_printf(o, "if (%s.v[u] == %s)", lv, item);
            emit_fail(o, in + 3, "igw_json_fail(j, IGW_JERR_DUPLICATE, \"duplicate item\")", ifail);
        }
        free(item);
        free(ifail);
        indent(o, in + 2);
        igw_out_printf(o, "%s.n++;\n", lv);
        indent(o, in + 1);
        igw_out_puts(o, "}\n");
        indent(o, in + 1);
        igw_out_printf(o, "if (more%d < 0)", k);
        emit_fail(o, in + 1, NULL, fail);
        if (r->min_items > 0) {
            indent(o, in + 1);
            igw_out_printf(o, "if (%s.n < %lld)", lv, (long long)r->min_items);
            emit_fail(o, in + 1, igw_sprintf("igw_json_fail(j, IGW_JERR_LENGTH, \"fewer than %lld items\")",
                                             (long long)r->min_items), fail);
        }
        indent(o, in);
        igw_out_puts(o, "}\n");
        break;
    }
    default:
        break;
    }
}

/* C expression: the condition `c` over decoded object `o`. */
static void emit_cond(igw_out *o, const igw_type *obj, const igw_cond *c)
{
    switch (c->op) {
    case IGW_C_AND:
    case IGW_C_OR:
        igw_out_puts(o, "(");
        emit_cond(o, obj, c->a);
        igw_out_puts(o, c->op == IGW_C_AND ? " && " : " || ");
        emit_cond(o, obj, c->b);
        igw_out_puts(o, ")");
        return;
    case IGW_C_NOT:
        igw_out_puts(o, "!");
        emit_cond(o, obj, c->a);
        return;
    case IGW_C_PRESENT:
        igw_out_printf(o, "(o->has & %s)", bit(obj, c->fref));
        return;
    default:
        break;
    }
    igw_type *ft = igw_type_resolve(c->fref->type);
    igw_out_printf(o, "%s((o->has & %s) && (", c->op == IGW_C_NE ? "!" : "", bit(obj, c->fref));
    for (int i = 0; i < c->values.n; i++) {
        const char *v = IGW_VEC_AT(c->values, char, i);
        if (i)
            igw_out_puts(o, " || ");
        if (ft->kind == IGW_T_ENUM)
            igw_out_printf(o, "o->%s == %s", c->fref->name, enum_const(ft, v));
        else if (ft->kind == IGW_T_BOOL)
            igw_out_printf(o, "o->%s == %s", c->fref->name, v);
        else {
            igw_out_printf(o, "igw_str_eq(o->%s, ", c->fref->name);
            igw_out_c_string(o, v);
            igw_out_printf(o, ", %zu)", strlen(v));
        }
    }
    igw_out_puts(o, "))");
}

static void operand_expr(igw_out *o, const igw_operand *op)
{
    if (op->is_const)
        igw_out_printf(o, "INT64_C(%lld)", (long long)op->value);
    else if (op->b)
        igw_out_printf(o, "(o->%s - o->%s)", op->a, op->b);
    else
        igw_out_printf(o, "o->%s", op->a);
}

/* ---- require/forbid rules on one enum field, as tables ----------------------
 * `require x when method = a` and `forbid y when purpose != b`: a condition
 * that reads one enum field alone has a value known here for each of the
 * field's values and for its absence. Such rules are summed into two tables
 * by that value (the fields required, the fields forbidden), so a valid
 * object pays one lookup for all of them instead of a test each; only when
 * the lookup finds a broken rule do the rules run one by one, in the
 * schema's order, to report the first as before. */

/* The enum field `c` reads alone, or NULL. */
static igw_field *cond_enum_field(const igw_cond *c)
{
    switch (c->op) {
    case IGW_C_AND:
    case IGW_C_OR: {
        igw_field *a = cond_enum_field(c->a), *b = cond_enum_field(c->b);
        return a == b ? a : NULL;
    }
    case IGW_C_NOT:
        return cond_enum_field(c->a);
    default:
        return igw_type_resolve(c->fref->type)->kind == IGW_T_ENUM ? c->fref : NULL;
    }
}

/* `c` (over cond_enum_field(c) alone) when that field holds value v of enum
 * e, or is absent (v == e->values.n): as emit_cond's expression evaluates. */
static bool cond_at(const igw_cond *c, const igw_type *e, int v)
{
    switch (c->op) {
    case IGW_C_AND:
        return cond_at(c->a, e, v) && cond_at(c->b, e, v);
    case IGW_C_OR:
        return cond_at(c->a, e, v) || cond_at(c->b, e, v);
    case IGW_C_NOT:
        return !cond_at(c->a, e, v);
    case IGW_C_PRESENT:
        return v < e->values.n;
    default:
        break;
    }
    bool eq = false;
    for (int i = 0; v < e->values.n && i < c->values.n; i++)
        eq = eq || strcmp(IGW_VEC_AT(c->values, char, i), IGW_VEC_AT(e->values, char, v)) == 0;
    return c->op == IGW_C_NE ? !eq : eq;
}

/* The enum field r's condition reads alone, when r is a require/forbid rule
 * that can go in the tables; else NULL. */
static igw_field *table_rule_field(const igw_rule *r)
{
    if ((r->kind != IGW_R_REQUIRE && r->kind != IGW_R_FORBID) || !r->when)
        return NULL;
    return cond_enum_field(r->when);
}

/* Fields with at least two table rules in t: a table pays from two up. */
static bool table_field(const igw_type *t, const igw_field *f)
{
    int n = 0;
    FOR(t->rules, igw_rule, r)
        n += table_rule_field(r) == f;
    return n >= 2;
}

/* The two tables of each such field, before the decoder. */
static void emit_rule_tables(igw_out *o, const igw_type *t)
{
    FOR(t->fields, igw_field, f) {
        if (!table_field(t, f))
            continue;
        const igw_type *e = igw_type_resolve(f->type);
        for (int req = 1; req >= 0; req--) {
            igw_out_printf(o, "/* The fields %s's `%s ... when %s ...` rules %s, by %s (the last row: %s absent). */\n"
                              "static const uint64_t %s_%s_%s[IGW_%s__COUNT + 1] = {\n",
                           t->name, req ? "require" : "forbid", f->name, req ? "require" : "forbid", f->name,
                           f->name, req ? "need" : "ban", t->name, f->name, e->name);
            for (int v = 0; v <= e->values.n; v++) {
                igw_out t2;
                igw_out_init(&t2);
                FOR(t->rules, igw_rule, r) {
                    if (table_rule_field(r) != f || (r->kind == IGW_R_REQUIRE) != req || !cond_at(r->when, e, v))
                        continue;
                    FOR(r->frefs, igw_field, x)
                        igw_out_printf(&t2, "%s%s", t2.len ? " | " : "", bit(t, x));
                }
                if (v < e->values.n)
                    igw_out_printf(o, "    [%s] = %s,\n", enum_const(e, IGW_VEC_AT(e->values, char, v)),
                                   t2.len ? t2.buf : "0");
                else
                    igw_out_printf(o, "    [IGW_%s__COUNT] = %s,\n", e->name, t2.len ? t2.buf : "0");
                igw_out_free(&t2);
            }
            igw_out_puts(o, "};\n");
        }
        igw_out_puts(o, "\n");
    }
}

/* In the decoder, before the rules: whether a table rule on f is broken. */
static void emit_rule_lookup(igw_out *o, const igw_type *t)
{
    FOR(t->fields, igw_field, f) {
        if (!table_field(t, f))
            continue;
        const igw_type *e = igw_type_resolve(f->type);
        igw_out_printf(o, "    unsigned at_%s = (o->has & %s) ? (unsigned)o->%s : IGW_%s__COUNT;\n"
                          "    bool broken_%s = (o->has & need_%s_%s[at_%s]) != need_%s_%s[at_%s] ||\n"
                          "        (o->has & ban_%s_%s[at_%s]) != 0;\n",
                       f->name, bit(t, f), f->name, e->name, f->name, t->name, f->name, f->name, t->name, f->name,
                       f->name, t->name, f->name, f->name);
    }
}

static void emit_rule(igw_out *o, const igw_type *obj, const igw_rule *r)
{
    static const char *const cmp[] = {"<", "<=", ">", ">="};
    if (r->kind == IGW_R_CHECK) {
        igw_field *fs[4] = {r->lhs.fa, r->lhs.fb, r->rhs.fa, r->rhs.fb};
        igw_out_puts(o, "    if (");
        int n = 0;
        for (int i = 0; i < 4; i++)
            if (fs[i])
                igw_out_printf(o, "%s(o->has & %s)", n++ ? " && " : "", bit(obj, fs[i]));
        igw_out_puts(o, " && !(");
        operand_expr(o, &r->lhs);
        igw_out_printf(o, " %s ", cmp[r->cmp]);
        operand_expr(o, &r->rhs);
        igw_field *first = r->lhs.fa ? r->lhs.fa : r->rhs.fa;
        igw_out_puts(o, ")) {\n        igw_json_fail(j, IGW_JERR_RULE, ");
        igw_out t;
        igw_out_init(&t);
        igw_out_puts(&t, "rule ");
        igw_check_text(&t, r);
        igw_out_puts(&t, " does not hold");
        igw_out_c_string(o, t.buf);
        igw_out_free(&t);
        igw_out_printf(o, ");\n        return igw_json_prefix_key(j, \"%s\", %zu);\n    }\n", first->name,
                       strlen(first->name));
        return;
    }
    bool req = r->kind == IGW_R_REQUIRE;
    igw_out t;
    igw_out_init(&t);
    if (r->when) {
        igw_out_puts(&t, " when ");
        igw_cond_text(&t, r->when);
    }
    igw_field *tf = table_rule_field(r);
    bool tabled = tf && table_field(obj, tf);
    for (int k = 0; k < r->frefs.n; k++) {
        igw_field *f = IGW_VEC_AT(r->frefs, igw_field, k);
        igw_out_printf(o, "    if (%s%s%s%s(o->has & %s)", tabled ? "broken_" : "", tabled ? tf->name : "",
                       tabled ? " && " : "", req ? "!" : "", bit(obj, f));
        if (r->when) {
            igw_out_puts(o, " && ");
            emit_cond(o, obj, r->when);
        }
        igw_out_printf(o, ") {\n        igw_json_fail(j, %s, ", req ? "IGW_JERR_MISSING" : "IGW_JERR_FORBIDDEN");
        char *reason = igw_xprintf("%s%s", req ? "field is required" : "field is not allowed", t.buf ? t.buf : "");
        igw_out_c_string(o, reason);
        free(reason);
        igw_out_printf(o, ");\n        return igw_json_prefix_key(j, \"%s\", %zu);\n    }\n", f->name, strlen(f->name));
    }
    igw_out_free(&t);
}

static void emit_key_matcher(igw_out *o, const igw_type *t)
{
    igw_out_printf(o, "/* Field index of a key of %s, or -1: length first, then one compare. */\n", t->name);
    igw_out_printf(o, "static int key_%s(const char *k, size_t n)\n{\n    switch (n) {\n", t->name);
    size_t maxlen = 0;
    FOR(t->fields, igw_field, f)
        if (strlen(f->name) > maxlen)
            maxlen = strlen(f->name);
    for (size_t len = 1; len <= maxlen; len++) {
        bool any = false;
        FOR(t->fields, igw_field, f) {
            if (strlen(f->name) != len)
                continue;
            if (!any)
                igw_out_printf(o, "    case %zu:\n", len);
            any = true;
            igw_out_printf(o, "        if (igw_bytes_eq(k, \"%s\", %zu))\n            return %s;\n", f->name, len,
                           field_const(t, f));
        }
        if (any)
            igw_out_puts(o, "        break;\n");
    }
    igw_out_puts(o, "    default:\n        break;\n    }\n    return -1;\n}\n\n");
}

static void emit_switch_decoder(igw_out *o, const igw_type *t, const igw_field *f)
{
    igw_type *dt = igw_type_resolve(f->sw->on_field->type);
    igw_out_printf(o, "/* %s.%s: the case selected by %s. */\n", t->name, f->name, f->sw->on);
    igw_out_printf(o, "static int switch_%s_%s(igw_json *j, void *arg)\n{\n    igw_%s *o = arg;\n    switch (o->%s) {\n",
                   t->name, f->name, t->name, f->sw->on);
    FOR(f->sw->cases, igw_case, c) {
        igw_out_printf(o, "    case %s:\n", enum_const(dt, c->value));
        char *lv = igw_xprintf("o->%s.%s", f->name, igw_c_ident(c->value));
        emit_read(o, c->type, lv, 2, "-1"); /* the caller prepends the field's key */
        free(lv);
        igw_out_puts(o, "        return 0;\n");
    }
    igw_out_printf(o, "    default:\n        break;\n    }\n    return igw_json_fail(j, IGW_JERR_ENUM, \"unknown %s\");\n}\n\n",
                   f->sw->on);
}

static void emit_decoder(igw_out *o, const igw_type *t)
{
    emit_key_matcher(o, t);
    emit_rule_tables(o, t);
    const igw_field *sw = NULL;
    FOR(t->fields, igw_field, f)
        if (f->sw) {
            sw = f;
            emit_switch_decoder(o, t, f);
        }
    unsigned long long required = 0;
    FOR(t->fields, igw_field, f)
        if (!f->optional)
            required |= 1ULL << f->index;
    igw_out_printf(o, "int igw_decode_%s(igw_json *j, igw_%s *o)\n{\n", t->name, t->name);
    igw_out_puts(o, "    igw_str k;\n    int more;\n");
    if (sw)
        igw_out_puts(o, "    igw_str held = {NULL, 0};\n    unsigned held_depth = 0;\n");
    igw_out_puts(o, "    memset(o, 0, sizeof *o);\n    if (igw_json_object_begin(j))\n        return -1;\n");
    igw_out_puts(o, "    while ((more = igw_json_object_next(j, &k)) == 1) {\n");
    igw_out_printf(o, "        int f = key_%s(k.ptr, k.len);\n", t->name);
    /* Nothing goes on the error path per member: a failure is reported with
     * the member's key prepended as it leaves this level (json.h). */
    igw_out_puts(o, "        if (f < 0) {\n            igw_json_fail(j, IGW_JERR_UNKNOWN, \"unknown field\");\n"
                    "            return igw_json_prefix_key(j, k.ptr, k.len);\n        }\n"
                    "        if (o->has & (UINT64_C(1) << f)) {\n"
                    "            igw_json_fail(j, IGW_JERR_DUPLICATE, \"duplicate key\");\n"
                    "            return igw_json_prefix_key(j, k.ptr, k.len);\n        }\n"
                    "        o->has |= UINT64_C(1) << f;\n        switch (f) {\n");
    FOR(t->fields, igw_field, f) {
        igw_out_printf(o, "        case %s:\n", field_const(t, f));
        if (f->reserved) {
            igw_out_puts(o, "            igw_json_fail(j, IGW_JERR_RESERVED, \"field is not open in this version\");\n"
                            "            return igw_json_prefix_key(j, k.ptr, k.len);\n");
            continue;
        }
        if (f->sw) {
            igw_out_printf(o, "            if (o->has & %s) {\n", bit(t, f->sw->on_field));
            igw_out_printf(o, "                if (switch_%s_%s(j, o))\n                    return igw_json_prefix_key(j, k.ptr, k.len);\n",
                           t->name, f->name);
            igw_out_puts(o, "            } else {\n"
                            "                /* Discriminator not seen yet: hold the bytes, decode at the end. */\n"
                            "                held_depth = j->depth;\n"
                            "                if (igw_decode_hold(j, &held))\n"
                            "                    return igw_json_prefix_key(j, k.ptr, k.len);\n"
                            "            }\n            break;\n");
            continue;
        }
        char *lv = igw_xprintf("o->%s", f->name);
        emit_read(o, f->type, lv, 3, "igw_json_prefix_key(j, k.ptr, k.len)");
        free(lv);
        igw_out_puts(o, "            break;\n");
    }
    igw_out_puts(o, "        default:\n            break;\n        }\n    }\n"
                    "    if (more < 0)\n        return -1;\n");
    if (required) {
        igw_out_printf(o, "    if ((o->has & IGW_%s__REQUIRED) != IGW_%s__REQUIRED) {\n", t->name, t->name);
        FOR(t->fields, igw_field, f) {
            if (f->optional)
                continue;
            igw_out_printf(o, "        if (!(o->has & %s)) {\n"
                              "            igw_json_fail(j, IGW_JERR_MISSING, \"required field is missing\");\n"
                              "            return igw_json_prefix_key(j, \"%s\", %zu);\n        }\n",
                           bit(t, f), f->name, strlen(f->name));
        }
        igw_out_puts(o, "    }\n");
    }
    if (sw)
        igw_out_printf(o, "    if (held.ptr && igw_decode_held(j, held, \"%s\", %zu, held_depth, switch_%s_%s, o))\n"
                          "        return -1;\n",
                       sw->name, strlen(sw->name), t->name, sw->name);
    emit_rule_lookup(o, t);
    FOR(t->rules, igw_rule, r)
        emit_rule(o, t, r);
    igw_out_puts(o, "    return 0;\n}\n\n");
}

/* ---- encoders -------------------------------------------------------------- */

static void emit_write(igw_out *o, igw_type *t, const char *rv, int in)
{
    igw_type *r = igw_type_resolve(t);
    indent(o, in);
    switch (r->kind) {
    case IGW_T_STRING:
        igw_out_printf(o, "igw_jw_string(w, %s.ptr, %s.len);\n", rv, rv);
        break;
    case IGW_T_INT:
        igw_out_printf(o, "igw_jw_int(w, %s);\n", rv);
        break;
    case IGW_T_BOOL:
        igw_out_printf(o, "igw_jw_bool(w, %s);\n", rv);
        break;
    case IGW_T_ENUM:
        igw_out_printf(o, "enc_%s(w, %s);\n", r->name, rv);
        break;
    case IGW_T_OBJECT:
        igw_out_printf(o, "igw_encode_%s(w, &%s);\n", r->name, rv);
        break;
    case IGW_T_JSON:
        /* Canonical form: the same value always encodes to the same bytes. */
        igw_out_printf(o, "if (igw_jw_canonical(w, %s.ptr, %s.len) != 0)\n", rv, rv);
        indent(o, in + 1);
        igw_out_puts(o, "w->oom = true; /* not valid JSON: mark the output unusable */\n");
        break;
    case IGW_T_ARRAY: {
        int k = tmp_counter++;
        igw_out_printf(o, "igw_jw_array_begin(w);\n");
        indent(o, in);
        igw_out_printf(o, "for (uint32_t i%d = 0; i%d < %s.n; i%d++) {\n", k, k, rv, k);
        char *item = igw_xprintf("%s.v[i%d]", rv, k);
        emit_write(o, r->item, item, in + 1);
        free(item);
        indent(o, in);
        igw_out_puts(o, "}\n");
        indent(o, in);
        igw_out_puts(o, "igw_jw_array_end(w);\n");
        break;
    }
    default:
        break;
    }
}

static void emit_encoder(igw_out *o, const igw_type *t)
{
    igw_out_printf(o, "void igw_encode_%s(igw_jw *w, const igw_%s *o)\n{\n    igw_jw_object_begin(w);\n", t->name,
                   t->name);
    FOR(t->fields, igw_field, f) {
        int in = 1;
        if (f->optional) {
            igw_out_printf(o, "    if (o->has & %s) {\n", bit(t, f));
            in = 2;
        }
        indent(o, in);
        igw_out_printf(o, "igw_jw_key(w, \"%s\", %zu);\n", f->name, strlen(f->name));
        if (f->sw) {
            igw_type *dt = igw_type_resolve(f->sw->on_field->type);
            indent(o, in);
            igw_out_printf(o, "switch (o->%s) {\n", f->sw->on);
            FOR(f->sw->cases, igw_case, c) {
                indent(o, in);
                igw_out_printf(o, "case %s:\n", enum_const(dt, c->value));
                char *rv = igw_xprintf("o->%s.%s", f->name, igw_c_ident(c->value));
                emit_write(o, c->type, rv, in + 1);
                free(rv);
                indent(o, in + 1);
                igw_out_puts(o, "break;\n");
            }
            indent(o, in);
            igw_out_puts(o, "default:\n");
            indent(o, in + 1);
            igw_out_puts(o, "igw_jw_null(w); /* unreachable for a decoded value */\n");
            indent(o, in + 1);
            igw_out_puts(o, "break;\n");
            indent(o, in);
            igw_out_puts(o, "}\n");
        } else {
            char *rv = igw_xprintf("o->%s", f->name);
            emit_write(o, f->type, rv, in);
            free(rv);
        }
        if (f->optional)
            igw_out_puts(o, "    }\n");
    }
    igw_out_puts(o, "    igw_jw_object_end(w);\n}\n\n");
}

/* ---- enums ------------------------------------------------------------------- */

static void emit_enum(igw_out *o, const igw_type *t)
{
    igw_out_printf(o, "const igw_str igw_%s_names[IGW_%s__COUNT] = {\n", t->name, t->name);
    FOR(t->values, const char, v) {
        igw_out_puts(o, "    {");
        igw_out_c_string(o, v);
        igw_out_printf(o, ", %zu},\n", strlen(v));
    }
    igw_out_puts(o, "};\n\n");
    /* Lookup like the key matcher: length first, then one compare. It also
     * serves path parameters and headers of enum type. */
    igw_out_printf(o, "int igw_%s_of(igw_str s)\n{\n    switch (s.len) {\n", t->name);
    size_t maxlen = 0;
    FOR(t->values, const char, v)
        if (strlen(v) > maxlen)
            maxlen = strlen(v);
    for (size_t len = 0; len <= maxlen; len++) {
        bool any = false;
        FOR(t->values, const char, v) {
            if (strlen(v) != len)
                continue;
            if (!any)
                igw_out_printf(o, "    case %zu:\n", len);
            any = true;
            igw_out_printf(o, "        if (igw_bytes_eq(s.ptr, ");
            igw_out_c_string(o, v);
            igw_out_printf(o, ", %zu))\n            return %s;\n", len, enum_const(t, v));
        }
        if (any)
            igw_out_puts(o, "        break;\n");
    }
    igw_out_puts(o, "    default:\n        break;\n    }\n    return -1;\n}\n\n");
    igw_out_printf(o, "static int __attribute__((unused)) enum_%s(igw_json *j, igw_%s *out)\n{\n    igw_str s;\n"
                      "    if (igw_json_string(j, &s))\n        return -1;\n    int v = igw_%s_of(s);\n"
                      "    if (v >= 0) {\n        *out = (igw_%s)v;\n        return 0;\n    }\n",
                   t->name, t->name, t->name, t->name);
    igw_out t2;
    igw_out_init(&t2);
    igw_out_puts(&t2, "value is not one of:");
    FOR(t->values, const char, v)
        igw_out_printf(&t2, " %s", v);
    igw_out_puts(o, "    return igw_json_fail(j, IGW_JERR_ENUM, ");
    igw_out_c_string(o, t2.buf);
    igw_out_puts(o, ");\n}\n\n");
    igw_out_free(&t2);
    igw_out_printf(o, "static void __attribute__((unused)) enc_%s(igw_jw *w, igw_%s v)\n{\n"
                      "    if ((unsigned)v < IGW_%s__COUNT)\n"
                      "        igw_jw_string(w, igw_%s_names[v].ptr, igw_%s_names[v].len);\n"
                      "    else\n        w->oom = true; /* not a value of the enum: output unusable */\n}\n\n",
                   t->name, t->name, t->name, t->name, t->name);
}

/* ---- routes ------------------------------------------------------------------ */

static void emit_matcher(const igw_schema *s, igw_out *o);

/* Checkers of the values that come from outside JSON (path segments and
 * headers): UTF-8 and control characters first, then the same string or
 * enum rule a body field gets. One function per value, a table per route. */
static void emit_text_checks(const igw_route *r, const igw_vec *vals, const char *kind, igw_out *o)
{
    bool header = strcmp(kind, "header") == 0;
    FOR(*vals, igw_field, f) {
        igw_type *ft = igw_type_resolve(f->type);
        igw_out_printf(o, "static int text_%s_%s_%d(igw_json *j, igw_str v)\n{\n"
                          "    if (igw_decode_text(j, v))\n        return -1;\n",
                       r->name, kind, f_i);
        if (ft->kind == IGW_T_STRING)
            igw_out_printf(o, "    return igw_decode_string_rules(j, v, %lld, %lld, %s);\n", (long long)ft->min_len,
                           (long long)ft->max_len, format_const(ft->format));
        else
            igw_out_printf(o, "    if (igw_%s_of(v) < 0)\n"
                              "        return igw_json_fail(j, IGW_JERR_ENUM, \"value is not one of the enumeration\");\n"
                              "    return 0;\n",
                           ft->name);
        igw_out_puts(o, "}\n\n");
    }
    if (!vals->n)
        return;
    igw_out_printf(o, "static const char *const %ss_%s[] = {", kind, r->name);
    FOR(*vals, igw_field, f) {
        /* Header names are matched case-insensitively: lower case here. */
        char *name = igw_xstrdup(f->name);
        for (char *q = name; header && *q; q++)
            if (*q >= 'A' && *q <= 'Z')
                *q = (char)(*q - 'A' + 'a');
        igw_out_printf(o, "%s\"%s\"", f_i ? ", " : "", name);
        free(name);
    }
    igw_out_printf(o, "};\nstatic const igw_text_check_fn %s_checks_%s[] = {", kind, r->name);
    FOR(*vals, igw_field, f)
        igw_out_printf(o, "%stext_%s_%s_%d", f_i ? ", " : "", r->name, kind, f_i);
    igw_out_printf(o, "};\nstatic const char *const %s_reasons_%s[] = {", kind, r->name);
    FOR(*vals, igw_field, f) {
        igw_out_puts(o, f_i ? ", " : "");
        igw_out_c_string(o, igw_sprintf(header ? "invalid value of header %s" : "invalid path parameter %s", f->name));
    }
    igw_out_puts(o, "};\n");
    if (header) {
        igw_out_printf(o, "static const char *const header_missing_%s[] = {", r->name);
        FOR(*vals, igw_field, f) {
            igw_out_puts(o, f_i ? ", " : "");
            igw_out_c_string(o, igw_sprintf("missing header %s", f->name));
        }
        igw_out_puts(o, "};\n");
    }
    igw_out_puts(o, "\n");
}

/* A header rule's condition as C over the route's collected headers. */
static void emit_header_cond(igw_out *o, const igw_route *r, const igw_cond *c)
{
    switch (c->op) {
    case IGW_C_PRESENT:
        igw_out_printf(o, "h[IGW_%s_H_%s].ptr != NULL", igw_c_upper(r->name), igw_c_ident(c->field));
        return;
    case IGW_C_NOT:
        igw_out_puts(o, "!(");
        emit_header_cond(o, r, c->a);
        igw_out_puts(o, ")");
        return;
    case IGW_C_AND:
    case IGW_C_OR:
        igw_out_puts(o, "(");
        emit_header_cond(o, r, c->a);
        igw_out_puts(o, c->op == IGW_C_AND ? ") && (" : ") || (");
        emit_header_cond(o, r, c->b);
        igw_out_puts(o, ")");
        return;
    default: /* sema allows presence only */
        igw_out_puts(o, "0");
        return;
    }
}

/* The route's require/forbid among its headers, in schema order: the
 * first broken one names the header and the rule. */
static void emit_header_rules(igw_out *o, const igw_route *r)
{
    igw_out_printf(o, "static int header_rules_%s(const igw_str *h, const char **reason, const char **name)\n{\n",
                   r->name);
    FOR(r->rules, igw_rule, rule) {
        igw_out t;
        igw_out_init(&t);
        igw_cond_text(&t, rule->when);
        FOR(rule->frefs, igw_field, f) {
            igw_out_printf(o, "    if (%sh[IGW_%s_H_%s].ptr && (", rule->kind == IGW_R_REQUIRE ? "!" : "",
                           igw_c_upper(r->name), igw_c_ident(f->name));
            emit_header_cond(o, r, rule->when);
            igw_out_puts(o, ")) {\n        *reason = ");
            igw_out_c_string(o, igw_sprintf("header %s is %s when %s", f->name,
                                            rule->kind == IGW_R_REQUIRE ? "required" : "not allowed", t.buf));
            igw_out_printf(o, ";\n        *name = \"%s\";\n        return -1;\n    }\n", f->name);
        }
        igw_out_free(&t);
    }
    igw_out_puts(o, "    return 0;\n}\n\n");
}

static void emit_routes(const igw_schema *s, igw_out *o)
{
    static const char *const auth[] = {"IGW_AUTH_KIND_NONE", "IGW_AUTH_KIND_DEVICE", "IGW_AUTH_KIND_USER"};
    static const char *const body[] = {"IGW_BODY_KIND_NONE", "IGW_BODY_KIND_JSON", "IGW_BODY_KIND_MULTIPART"};
    igw_out_puts(o, "/* ---- routes ---- */\n\n");
    FOR(s->routes, igw_route, r) {
        igw_type *bt = r->body == IGW_BODY_JSON ? igw_type_resolve(r->body_type) : NULL;
        if (bt) {
            igw_out_printf(o, "static int route_decode_%s(igw_json *j, void *out) { return igw_decode_%s(j, out); }\n",
                           r->name, bt->name);
            igw_out_printf(o, "static void route_encode_%s(igw_jw *w, const void *in) { igw_encode_%s(w, in); }\n\n",
                           r->name, bt->name);
        }
        emit_text_checks(r, &r->params, "param", o);
        emit_text_checks(r, &r->headers, "header", o);
        if (r->rules.n)
            emit_header_rules(o, r);
        if (r->parts.n) {
            igw_out_printf(o, "static const char *const parts_%s[] = {", r->name);
            int k = 0;
            for (int pass = 0; pass < 2; pass++)
                FOR(r->parts, igw_part, p)
                    if (p->required == !pass)
                        igw_out_printf(o, "%s\"%s\"", k++ ? ", " : "", p->name);
            igw_out_puts(o, "};\n");
        }
        igw_out_printf(o, "static const int errors_%s[] = {", r->name);
        FOR(r->error_refs, igw_error, e)
            igw_out_printf(o, "%sIGW_ERR_%s", e_i ? ", " : "", igw_c_upper(e->name));
        igw_out_puts(o, "};\n\n");
    }
    igw_out_puts(o, "const igw_route_def igw_routes[IGW_ROUTE__COUNT] = {\n");
    FOR(s->routes, igw_route, r) {
        igw_type *bt = r->body == IGW_BODY_JSON ? igw_type_resolve(r->body_type) : NULL;
        igw_out_printf(o, "    [IGW_ROUTE_%s] = {\n        .id = IGW_ROUTE_%s,\n        .name = \"%s\",\n"
                          "        .method = \"%s\",\n        .path = ",
                       igw_c_upper(r->name), igw_c_upper(r->name), r->name, r->method);
        igw_out_c_string(o, r->path);
        igw_out_printf(o, ",\n        .auth = %s,\n        .gate_signaling = %s,\n        .body = %s,\n"
                          "        .body_limit = %lld,\n",
                       auth[r->auth], r->gate_signaling ? "true" : "false", body[r->body], (long long)r->body_limit);
        if (bt)
            igw_out_printf(o, "        .body_size = sizeof(igw_%s),\n        .decode = route_decode_%s,\n"
                              "        .encode = route_encode_%s,\n",
                           bt->name, r->name, r->name);
        if (r->params.n)
            igw_out_printf(o, "        .params = params_%s,\n        .param_checks = param_checks_%s,\n"
                              "        .param_reasons = param_reasons_%s,\n        .nparams = %d,\n",
                           r->name, r->name, r->name, r->params.n);
        if (r->headers.n) {
            igw_out_printf(o, "        .headers = headers_%s,\n        .header_checks = header_checks_%s,\n"
                              "        .header_reasons = header_reasons_%s,\n        .header_missing = header_missing_%s,\n"
                              "        .nheaders = %d,\n        .required_headers = ",
                           r->name, r->name, r->name, r->name, r->headers.n);
            int nreq = 0;
            FOR(r->headers, igw_field, f)
                if (!f->optional)
                    igw_out_printf(o, "%s(UINT64_C(1) << IGW_%s_H_%s)", nreq++ ? " | " : "", igw_c_upper(r->name),
                                   igw_c_ident(f->name));
            igw_out_printf(o, "%s,\n", nreq ? "" : "UINT64_C(0)");
            if (r->rules.n)
                igw_out_printf(o, "        .header_rules = header_rules_%s,\n", r->name);
        }
        if (r->parts.n) {
            int nreq = 0;
            FOR(r->parts, igw_part, p)
                nreq += p->required;
            igw_out_printf(o, "        .parts = parts_%s,\n        .nparts = %d,\n        .nrequired_parts = %d,\n"
                              "        .reject_other_parts = %s,\n",
                           r->name, r->parts.n, nreq,
                           r->extra_parts && strcmp(r->extra_parts, "reject") == 0 ? "true" : "false");
        }
        igw_out_printf(o, "        .errors = errors_%s,\n        .nerrors = %d,\n    },\n", r->name, r->error_refs.n);
    }
    igw_out_puts(o, "};\n\n");
    emit_matcher(s, o);
}

/* Route lookup: fixed paths by length then one compare (h2o's token table
 * idea), the first match returned; paths with parameters by literal pieces
 * and '/'-free segments. */
static void emit_matcher(const igw_schema *s, igw_out *o)
{
    FOR(s->routes, igw_route, r) {
        if (!r->params.n)
            continue;
        igw_out_printf(o, "static bool match_%s(const char *path, size_t plen, igw_str *params)\n{\n"
                          "    size_t at = 0, start;\n", r->name);
        int np = 0;
        for (const char *p = r->path; *p;) {
            if (*p == '{') {
                igw_out_printf(o, "    start = at;\n    while (at < plen && path[at] != '/')\n        at++;\n"
                                  "    if (at == start)\n        return false;\n"
                                  "    params[%d] = (igw_str){path + start, at - start};\n", np++);
                const char *close = strchr(p, '}'); /* sema checked the braces pair up */
                p = close ? close + 1 : p + strlen(p);
                continue;
            }
            size_t n = strcspn(p, "{");
            igw_out_printf(o, "    if (plen - at < %zu || !igw_bytes_eq(path + at, ", n);
            igw_out_c_bytes(o, p, n);
            igw_out_printf(o, ", %zu))\n        return false;\n    at += %zu;\n", n, n);
            p += n;
        }
        igw_out_puts(o, "    return at == plen;\n}\n\n");
    }
    igw_out_puts(o, "static const igw_route_def *route_match(const char *path, size_t plen,\n"
                    "                                        igw_str params[IGW_MAX_PATH_PARAMS])\n{\n"
                    "    switch (plen) {\n");
    size_t maxlen = 0;
    FOR(s->routes, igw_route, r)
        if (!r->params.n && strlen(r->path) > maxlen)
            maxlen = strlen(r->path);
    for (size_t len = 1; len <= maxlen; len++) {
        bool any = false;
        FOR(s->routes, igw_route, r) {
            if (r->params.n || strlen(r->path) != len)
                continue;
            if (!any)
                igw_out_printf(o, "    case %zu:\n", len);
            any = true;
            igw_out_puts(o, "        if (igw_bytes_eq(path, ");
            igw_out_c_string(o, r->path);
            igw_out_printf(o, ", %zu))\n            return &igw_routes[IGW_ROUTE_%s];\n", len, igw_c_upper(r->name));
        }
        if (any)
            igw_out_puts(o, "        break;\n");
    }
    igw_out_puts(o, "    default:\n        break;\n    }\n");
    FOR(s->routes, igw_route, r)
        if (r->params.n)
            igw_out_printf(o, "    if (match_%s(path, plen, params))\n        return &igw_routes[IGW_ROUTE_%s];\n", r->name,
                           igw_c_upper(r->name));
    igw_out_puts(o, "    (void)params; /* unused when no route has path parameters */\n    (void)path;\n"
                    "    return NULL;\n}\n\n");
    igw_error *role[7] = {
        igw_schema_error_role(s, IGW_ROLE_DECODE), igw_schema_error_role(s, IGW_ROLE_RESERVED),
        igw_schema_error_role(s, IGW_ROLE_BODY_CAP), igw_schema_error_role(s, IGW_ROLE_NO_ROUTE),
        igw_schema_error_role(s, IGW_ROLE_METHOD), igw_schema_error_role(s, IGW_ROLE_MEDIA),
        igw_schema_error_role(s, IGW_ROLE_INTERNAL),
    };
    igw_out_printf(o, "const igw_api igw_gen_api = {\n    .routes = igw_routes,\n    .nroutes = IGW_ROUTE__COUNT,\n"
                      "    .match = route_match,\n    .cls_decode = IGW_ERR_%s,\n    .cls_reserved = IGW_ERR_%s,\n"
                      "    .cls_body_cap = IGW_ERR_%s,\n    .cls_no_route = IGW_ERR_%s,\n    .cls_method = IGW_ERR_%s,\n"
                      "    .cls_media_type = IGW_ERR_%s,\n    .cls_internal = IGW_ERR_%s,\n};\n",
                   igw_c_upper(role[0]->name), igw_c_upper(role[1]->name), igw_c_upper(role[2]->name),
                   igw_c_upper(role[3]->name), igw_c_upper(role[4]->name), igw_c_upper(role[5]->name),
                   igw_c_upper(role[6]->name));
}

int igw_emit_c(const igw_schema *s, const char *gen_dir)
{
    igw_out h, c;
    igw_out_init(&h);
    igw_out_init(&c);
    tmp_counter = 0;
    emit_header(s, &h);

    igw_out_banner(&c, s, "//");
    igw_out_puts(&c, "/* api.c - see api.h. */\n#include \"api.h\"\n\n#include <string.h>\n\n"
                     "#include \"bytes.h\"\n#include \"decode.h\"\n\n");
    igw_out_puts(&c, "const igw_error_class igw_error_classes[IGW_ERR__COUNT] = {\n");
    FOR(s->errors, igw_error, e) {
        igw_out_printf(&c, "    [IGW_ERR_%s] = {\"%s\", %lld, %d, ", igw_c_upper(e->name), e->name, (long long)e->code,
                       e->http);
        igw_out_c_string(&c, e->reason);
        igw_out_puts(&c, "},\n");
    }
    igw_out_puts(&c, "};\n\n");
    FOR(s->types, igw_type, t)
        if (t->kind == IGW_T_ENUM)
            emit_enum(&c, t);
    FOR(s->types, igw_type, t)
        if (t->kind == IGW_T_OBJECT)
            emit_decoder(&c, t);
    FOR(s->types, igw_type, t)
        if (t->kind == IGW_T_OBJECT)
            emit_encoder(&c, t);
    emit_routes(s, &c);

    int rc = igw_out_save(&h, gen_dir, "api.h") | igw_out_save(&c, gen_dir, "api.c");
    igw_out_free(&h);
    igw_out_free(&c);
    return rc ? -1 : 0;
}
