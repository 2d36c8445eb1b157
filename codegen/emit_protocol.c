/* emit_protocol.c - device protocols: generated/protocol.h, generated/protocol.c
 * (one row table per protocol and the lookup) and
 * generated/conformance/protocol.jsonl (lookup vectors).
 *
 * The lookup is emitted, not handwritten, so that the table and the rule for
 * `*` and the tolerated leading `$` live in one place: here. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "util.h"

#define FOR(vec, T, x)                                                                     \
    for (int x##_i = 0; x##_i < (vec).n; x##_i++)                                          \
        for (T *x = IGW_VEC_AT(vec, T, x##_i); x; x = NULL)

static const char *const checks[] = {IGW_PROTO_CHECKS};
static const char *const returns[] = {IGW_PROTO_RETURNS};

static void upper(igw_out *o, const char *s)
{
    for (; *s; s++)
        igw_out_printf(o, "%c", toupper((unsigned char)*s));
}

static void enum_value(igw_out *o, const char *prefix, const char *name)
{
    igw_out_puts(o, prefix);
    if (name)
        upper(o, name);
    else
        igw_out_puts(o, "NONE");
}

/* ---- method and type names ---- */

/* The names the protocols use for methods (uplinks, their replies, the
 * downlinks they answer, downlinks) or for message types: each once, in
 * the order the schema first writes it. */
static void names_add(igw_vec *v, const char *name)
{
    if (!name || !strcmp(name, "*"))
        return;
    FOR(*v, const char, n)
        if (!strcmp(n, name))
            return;
    igw_vec_push(v, (void *)name);
}

static igw_vec method_names(const igw_schema *s)
{
    igw_vec v = {0};
    FOR(s->protocols, igw_protocol, pr) {
        FOR(pr->rows, igw_proto_row, r) {
            names_add(&v, r->method);
            names_add(&v, r->reply);
            names_add(&v, r->answers);
        }
        FOR(pr->downs, igw_proto_down, d)
            names_add(&v, d->method);
    }
    return v;
}

static igw_vec type_names(const igw_schema *s)
{
    igw_vec v = {0};
    FOR(s->protocols, igw_protocol, pr) {
        FOR(pr->rows, igw_proto_row, r)
            names_add(&v, r->type);
        FOR(pr->downs, igw_proto_down, d)
            names_add(&v, d->type);
    }
    return v;
}

/* The enum constant of a name ("*" and none: __NONE). */
static const char *name_const(const char *kind, const char *name)
{
    if (!name || !strcmp(name, "*"))
        return igw_sprintf("IGW_PROTO_%s__NONE", kind);
    return igw_sprintf("IGW_PROTO_%s_%s", kind, igw_c_ident(name));
}

/* The index constant of a protocol's downlink in its downs table. */
static const char *down_const(const igw_protocol *pr, const igw_proto_down *d)
{
    return igw_sprintf("IGW_PROTO_%s_DOWN_%s_%s_%s", igw_c_upper(pr->name), igw_c_ident(d->handle),
                       igw_c_ident(d->type), igw_c_ident(d->method));
}

static void emit_name_enum(igw_out *h, const igw_vec *names, const char *kind, const char *type, const char *what)
{
    igw_out_printf(h, "typedef enum %s {\n    IGW_PROTO_%s__NONE, /* no %s a protocol names */\n", type, kind, what);
    FOR(*names, const char, n)
        igw_out_printf(h, "    %s,\n", name_const(kind, n));
    igw_out_printf(h, "    IGW_PROTO_%s__COUNT\n} %s;\n", kind, type);
    igw_out_printf(h, "/* Wire names by value (\"\" for __NONE). */\nextern const igw_str %s_names[IGW_PROTO_%s__COUNT];\n",
                   type, kind);
    igw_out_printf(h, "/* The value named by s (length, then memcmp); IGW_PROTO_%s__NONE for any other. */\n"
                      "%s %s_of(igw_str s);\n\n",
                   kind, type, type);
}

/* The names table and the lookup: length first, then memcmp (h2o's token table). */
static void emit_name_lookup(igw_out *c, const igw_vec *names, const char *kind, const char *type)
{
    igw_out_printf(c, "const igw_str %s_names[IGW_PROTO_%s__COUNT] = {\n    {\"\", 0},\n", type, kind);
    FOR(*names, const char, n) {
        igw_out_puts(c, "    {");
        igw_out_c_string(c, n);
        igw_out_printf(c, ", %zu},\n", strlen(n));
    }
    igw_out_printf(c, "};\n\n%s %s_of(igw_str s)\n{\n    switch (s.len) {\n", type, type);
    size_t maxlen = 0;
    FOR(*names, const char, n)
        if (strlen(n) > maxlen)
            maxlen = strlen(n);
    for (size_t len = 1; len <= maxlen; len++) {
        bool any = false;
        FOR(*names, const char, n) {
            if (strlen(n) != len)
                continue;
            if (!any)
                igw_out_printf(c, "    case %zu:\n", len);
            any = true;
            igw_out_puts(c, "        if (memcmp(s.ptr, ");
            igw_out_c_string(c, n);
            igw_out_printf(c, ", %zu) == 0)\n            return %s;\n", len, name_const(kind, n));
        }
        if (any)
            igw_out_puts(c, "        break;\n");
    }
    igw_out_printf(c, "    default:\n        break;\n    }\n    return IGW_PROTO_%s__NONE;\n}\n\n", kind);
}

static void emit_header(const igw_schema *s, igw_out *h)
{
    igw_out_banner(h, s, "//");
    igw_out_puts(h,
        "/* protocol.h - device protocols: which method a device may send on which\n"
        " * handle and message type, the method of the reply, and the check the\n"
        " * handler applies to the message. One table per `protocol` declaration;\n"
        " * the walker is src/rt/proto.c. */\n"
        "#ifndef IGW_GENERATED_PROTOCOL_H\n#define IGW_GENERATED_PROTOCOL_H\n\n"
        "#include <stddef.h>\n\n#include \"json.h\"\n#include \"proto.h\"\n\n"
        "/* What the handler checks the message against (schema: `check`). */\n"
        "typedef enum igw_proto_check {\n    IGW_PROTO_CHECK_NONE, /* free parameters, bounded by the decoder */\n");
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        igw_out_puts(h, "    ");
        enum_value(h, "IGW_PROTO_CHECK_", checks[i]);
        igw_out_puts(h, ",\n");
    }
    igw_out_puts(h, "} igw_proto_check;\n\n"
                    "/* What the reply's data carries (schema: `returns`). */\n"
                    "typedef enum igw_proto_returns {\n    IGW_PROTO_RETURNS_NONE,\n");
    for (size_t i = 0; i < sizeof returns / sizeof returns[0]; i++) {
        igw_out_puts(h, "    ");
        enum_value(h, "IGW_PROTO_RETURNS_", returns[i]);
        igw_out_puts(h, ",\n");
    }
    igw_out_puts(h,
        "} igw_proto_returns;\n\n"
        "/* Every method name the protocols write (an uplink's, its reply's, a\n"
        " * downlink's) and every message type, as enums: code that acts on a method\n"
        " * compares values, never strings, and a method the schema drops breaks its\n"
        " * build. The tables carry them: a row's method_id, reply_id and type_id, a\n"
        " * downlink's method_id and type_id (__NONE for `*`). An uplink's method:\n"
        " *     switch (igw_proto_method_of(m->method)) { case IGW_PROTO_M_mediaOffer: ... }\n"
        " * or, once its row is found, (igw_proto_method)row->method_id. */\n");
    igw_vec mn = method_names(s), tn = type_names(s);
    emit_name_enum(h, &mn, "M", "igw_proto_method", "method");
    emit_name_enum(h, &tn, "T", "igw_proto_type", "message type");
    free(mn.v);
    free(tn.v);
    FOR(s->protocols, igw_protocol, pr) {
        if (pr->doc)
            igw_out_printf(h, "/* %s */\n", pr->doc);
        igw_out_printf(h, "extern const igw_protocol igw_proto_%s;\n", pr->name);
        /* Its handles, once each in row order, for code that checks a topic
         * without the tables (the broker's plugin, src/lib/topic.c). */
        igw_out_puts(h, "#define IGW_PROTO_");
        for (const char *q = pr->name; *q; q++)
            igw_out_printf(h, "%c", toupper((unsigned char)*q));
        igw_out_puts(h, "_HANDLES");
        const char *sep = " ";
        FOR(pr->rows, igw_proto_row, r) {
            bool seen = false;
            for (int k = 0; k < r_i && !seen; k++)
                seen = !strcmp(IGW_VEC_AT(pr->rows, igw_proto_row, k)->handle, r->handle);
            if (seen)
                continue;
            igw_out_printf(h, "%s\"%s\"", sep, r->handle);
            sep = ", ";
        }
        igw_out_puts(h, "\n");
        if (pr->downs.n) {
            const igw_proto_down *d0 = IGW_VEC_AT(pr->downs, igw_proto_down, 0);
            igw_out_printf(h, "/* Its downlinks (also igw_proto_%s.downs), for tables that name one, and\n"
                              " * their places in it by handle, type and method:\n"
                              " *     &igw_proto_%s_downs[%s] */\n"
                              "extern const igw_proto_down igw_proto_%s_downs[%d];\n",
                           pr->name, pr->name, down_const(pr, d0), pr->name, pr->downs.n);
            igw_out_printf(h, "enum igw_proto_%s_down {\n", pr->name);
            FOR(pr->downs, igw_proto_down, d)
                igw_out_printf(h, "    %s,\n", down_const(pr, d));
            igw_out_printf(h, "};\n/* Its downlink of method m (the first declared), or NULL:\n"
                              " *     igw_proto_%s_down_of(IGW_PROTO_M_%s) */\n"
                              "const igw_proto_down *igw_proto_%s_down_of(igw_proto_method m);\n",
                           pr->name, igw_c_ident(d0->method), pr->name);
        }
    }
    igw_out_puts(h,
        "\n/* Schema names of the enums, by value (\"none\" first). */\n"
        "extern const char *const igw_proto_check_names[];\n"
        "extern const char *const igw_proto_returns_names[];\n");
    igw_out_puts(h, "\n#endif\n");
}

static void emit_source(const igw_schema *s, igw_out *c)
{
    igw_out_banner(c, s, "//");
    igw_out_puts(c, "/* protocol.c - see protocol.h: tables and name lookups. */\n#include \"protocol.h\"\n\n"
                    "#include <string.h>\n\n#include \"api.h\"\n\n");
    igw_vec mn = method_names(s), tn = type_names(s);
    emit_name_lookup(c, &mn, "M", "igw_proto_method");
    emit_name_lookup(c, &tn, "T", "igw_proto_type");
    free(mn.v);
    free(tn.v);
    /* One adapter per params type, to the decoder's exact signature. */
    int adapters = 0;
    FOR(s->protocols, igw_protocol, pr) {
        FOR(pr->rows, igw_proto_row, r) {
            if (!r->params)
                continue;
            const igw_type *t = igw_type_resolve(r->params);
            bool seen = false;
            for (int q = 0; q < pr_i && !seen; q++) {
                const igw_protocol *op = IGW_VEC_AT(s->protocols, igw_protocol, q);
                for (int k = 0; k < op->rows.n && !seen; k++) {
                    const igw_proto_row *x = IGW_VEC_AT(op->rows, igw_proto_row, k);
                    seen = x->params && igw_type_resolve(x->params) == t;
                }
            }
            for (int k = 0; k < r_i && !seen; k++) {
                const igw_proto_row *x = IGW_VEC_AT(pr->rows, igw_proto_row, k);
                seen = x->params && igw_type_resolve(x->params) == t;
            }
            if (!seen) {
                igw_out_printf(c, "static int params_%s(igw_json *j, void *out) { return igw_decode_%s(j, out); }\n",
                               t->name, t->name);
                adapters++;
            }
        }
    }
    FOR(s->protocols, igw_protocol, pr)
        FOR(pr->downs, igw_proto_down, d) {
            const igw_type *t = igw_type_resolve(d->message);
            igw_out_printf(c, "static void down_%s(igw_jw *w, const void *in) { igw_encode_%s(w, in); }\n", t->name,
                           t->name);
            adapters++;
        }
    if (adapters)
        igw_out_puts(c, "\n");
    FOR(s->protocols, igw_protocol, pr) {
        igw_out_printf(c, "static const igw_proto_row %s_rows[] = {\n", pr->name);
        FOR(pr->rows, igw_proto_row, r) {
            igw_out_puts(c, "    {.handle = ");
            igw_out_c_string(c, r->handle);
            igw_out_puts(c, ", .type = ");
            igw_out_c_string(c, r->type);
            igw_out_puts(c, ", .method = ");
            igw_out_c_string(c, r->method);
            if (r->reply) {
                igw_out_puts(c, ", .reply = ");
                igw_out_c_string(c, r->reply);
            }
            if (r->answers) {
                igw_out_puts(c, ", .answers = ");
                igw_out_c_string(c, r->answers);
            }
            igw_out_printf(c, ",\n     .method_id = %s, .type_id = %s", name_const("M", r->method), name_const("T", r->type));
            if (r->reply)
                igw_out_printf(c, ", .reply_id = %s", name_const("M", r->reply));
            igw_out_puts(c, ",\n     .check = ");
            enum_value(c, "IGW_PROTO_CHECK_", r->check);
            igw_out_puts(c, ", .returns = ");
            enum_value(c, "IGW_PROTO_RETURNS_", r->returns);
            if (r->params) {
                const igw_type *t = igw_type_resolve(r->params);
                igw_out_printf(c, ",\n     .params = {.decode = params_%s, .size = sizeof(igw_%s), .type = \"%s\"}", t->name,
                               t->name, t->name);
            }
            igw_out_puts(c, "},\n");
        }
        igw_out_puts(c, "};\n\n");
        if (pr->downs.n) {
            igw_out_printf(c, "const igw_proto_down igw_proto_%s_downs[%d] = {\n", pr->name, pr->downs.n);
            FOR(pr->downs, igw_proto_down, d) {
                const igw_type *t = igw_type_resolve(d->message);
                igw_out_puts(c, "    {.handle = ");
                igw_out_c_string(c, d->handle);
                igw_out_puts(c, ", .type = ");
                igw_out_c_string(c, d->type);
                igw_out_puts(c, ", .method = ");
                igw_out_c_string(c, d->method);
                igw_out_printf(c, ",\n     .method_id = %s, .type_id = %s", name_const("M", d->method),
                               name_const("T", d->type));
                igw_out_printf(c, ",\n     .encode = down_%s, .size = sizeof(igw_%s), .message = \"%s\"},\n", t->name,
                               t->name, t->name);
            }
            igw_out_puts(c, "};\n\n");
            igw_out_printf(c, "const igw_proto_down *igw_proto_%s_down_of(igw_proto_method m)\n{\n    switch (m) {\n",
                           pr->name);
            FOR(pr->downs, igw_proto_down, d) {
                bool first = true;
                for (int k = 0; k < d_i && first; k++)
                    first = strcmp(IGW_VEC_AT(pr->downs, igw_proto_down, k)->method, d->method) != 0;
                if (first)
                    igw_out_printf(c, "    case %s:\n        return &igw_proto_%s_downs[%s];\n",
                                   name_const("M", d->method), pr->name, down_const(pr, d));
            }
            igw_out_puts(c, "    default:\n        return NULL;\n    }\n}\n\n");
        }
        igw_out_printf(c, "const igw_protocol igw_proto_%s = {\n    .name = \"%s\",\n    .rows = %s_rows,\n"
                          "    .nrows = sizeof %s_rows / sizeof %s_rows[0],\n",
                       pr->name, pr->name, pr->name, pr->name, pr->name);
        if (pr->downs.n)
            igw_out_printf(c, "    .downs = igw_proto_%s_downs,\n    .ndowns = %d,\n", pr->name, pr->downs.n);
        igw_out_puts(c, "};\n\n");
    }
    igw_out_puts(c, "const char *const igw_proto_check_names[] = {\"none\"");
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        igw_out_printf(c, ", \"%s\"", checks[i]);
    igw_out_puts(c, "};\nconst char *const igw_proto_returns_names[] = {\"none\"");
    for (size_t i = 0; i < sizeof returns / sizeof returns[0]; i++)
        igw_out_printf(c, ", \"%s\"", returns[i]);
    igw_out_puts(c, "};\n\n");
}

/* ---- vectors ---- */

static bool has_row(const igw_protocol *pr, const char *h, const char *t, const char *m)
{
    FOR(pr->rows, igw_proto_row, r)
        if (!strcmp(r->handle, h) && (!t || !strcmp(r->type, t) || !strcmp(r->type, "*")) &&
            (!m || !strcmp(r->method, m) || !strcmp(r->method, "*")))
            return true;
    return false;
}

static void vector(igw_out *o, const igw_protocol *pr, const char *id, const char *h, const char *t,
                   const char *m, const char *status, const igw_proto_row *r)
{
    igw_out_puts(o, "{\"id\":");
    igw_out_json_string(o, igw_sprintf("protocol/%s/%s", pr->name, id));
    igw_out_puts(o, ",\"protocol\":");
    igw_out_json_string(o, pr->name);
    igw_out_puts(o, ",\"handle\":");
    igw_out_json_string(o, h);
    igw_out_puts(o, ",\"type\":");
    igw_out_json_string(o, t);
    igw_out_puts(o, ",\"method\":");
    igw_out_json_string(o, m);
    igw_out_puts(o, ",\"expect\":{\"status\":");
    igw_out_json_string(o, status);
    if (r) {
        igw_out_puts(o, ",\"reply\":");
        igw_out_json_string(o, r->reply ? r->reply : "");
        igw_out_puts(o, ",\"check\":");
        igw_out_json_string(o, r->check ? r->check : "none");
        igw_out_puts(o, ",\"returns\":");
        igw_out_json_string(o, r->returns ? r->returns : "none");
    }
    igw_out_puts(o, "}}\n");
}

/* A concrete name for a `*` position, and one that no row names. */
static const char *concrete(const char *name) { return strcmp(name, "*") ? name : "anyName1"; }

static void emit_vectors(const igw_schema *s, igw_out *o)
{
    igw_out banner;
    igw_out_init(&banner);
    igw_out_banner(&banner, s, "");
    /* The vector files' header line: {"generated_by":"igw-gen from ...; do not edit"}. */
    const char *bt = banner.buf ? banner.buf : "";
    const char *from = strstr(bt, "igw-gen");
    char *by = igw_xstrndup(from ? from : bt, strcspn(from ? from : bt, "\n"));
    igw_out_puts(o, "{\"generated_by\":");
    igw_out_json_string(o, by);
    igw_out_puts(o, "}\n");
    free(by);
    igw_out_free(&banner);
    FOR(s->protocols, igw_protocol, pr) {
        FOR(pr->rows, igw_proto_row, r) {
            const char *t = concrete(r->type), *m = concrete(r->method);
            const char *base = igw_sprintf("%s/%s/%s", r->handle, t, m);
            vector(o, pr, igw_sprintf("found/%s", base), r->handle, t, m, "found", r);
            vector(o, pr, igw_sprintf("found/$%s", base), igw_sprintf("$%s", r->handle), t, m, "found", r);
            if (!has_row(pr, r->handle, t, "zzNoSuchMethod"))
                vector(o, pr, igw_sprintf("no_method/%s", base), r->handle, t, "zzNoSuchMethod", "no_method", NULL);
            if (!has_row(pr, r->handle, "zzNoSuchType", NULL))
                vector(o, pr, igw_sprintf("no_type/%s", base), r->handle, "zzNoSuchType", m, "no_type", NULL);
            /* The `$` is tolerated once, and only in front. */
            vector(o, pr, igw_sprintf("no_handle/$$%s", base), igw_sprintf("$$%s", r->handle), t, m, "no_handle",
                   NULL);
            vector(o, pr, igw_sprintf("no_handle/%s$", base), igw_sprintf("%s$", r->handle), t, m, "no_handle",
                   NULL);
            /* Names compare exactly: no case folding. */
            char *caps = igw_xstrdup(r->handle);
            caps[0] = (char)toupper((unsigned char)caps[0]);
            if (strcmp(caps, r->handle) && !has_row(pr, caps, NULL, NULL))
                vector(o, pr, igw_sprintf("no_handle/%s/%s/%s", caps, t, m), caps, t, m, "no_handle", NULL);
            free(caps);
        }
        vector(o, pr, "no_handle/empty", "", "property", "report", "no_handle", NULL);
        vector(o, pr, "no_handle/dollar", "$", "property", "report", "no_handle", NULL);
    }
}

int igw_emit_protocol(const igw_schema *s, const char *gen_dir)
{
    igw_out h, c, v;
    igw_out_init(&h);
    igw_out_init(&c);
    igw_out_init(&v);
    emit_header(s, &h);
    emit_source(s, &c);
    emit_vectors(s, &v);
    int rc = igw_out_save(&h, gen_dir, "protocol.h") || igw_out_save(&c, gen_dir, "protocol.c") ||
             (s->protocols.n && igw_out_save(&v, gen_dir, "conformance/protocol.jsonl"));
    igw_out_free(&h);
    igw_out_free(&c);
    igw_out_free(&v);
    return rc ? -1 : 0;
}
