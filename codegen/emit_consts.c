/* emit_consts.c - names for what handwritten code would otherwise restate:
 * the schema's bounds (a section of generated/api.h) and the JSON Pointer
 * paths of request body fields (generated/paths.h).
 *
 * A handler that sizes a buffer for an Ident or reports an error at
 * /command/params/callId names the schema's constant instead of writing 65
 * or the path again, so a schema change moves the handler with it (or
 * breaks its build), never silently diverges from the decoder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "util.h"

#define FOR(vec, T, x)                                                                     \
    for (int x##_i = 0; x##_i < (vec).n; x##_i++)                                          \
        for (T *x = IGW_VEC_AT(vec, T, x##_i); x; x = NULL)

/* ---- bounds (api.h) ---------------------------------------------------------- */

/* An integer constant: plain while it fits an int, else INT64_C. */
static void int_define(igw_out *h, const char *name, int64_t v)
{
    if (v >= -2147483647 && v <= 2147483647)
        igw_out_printf(h, "#define %s %lld\n", name, (long long)v);
    else
        igw_out_printf(h, "#define %s INT64_C(%lld)\n", name, (long long)v);
}

/* The bounds a type states itself (not through a named type), under `base`. */
static void own_bounds(igw_out *h, const char *base, const igw_type *t)
{
    switch (t->kind) {
    case IGW_T_STRING:
    case IGW_T_INT: {
        bool s = t->kind == IGW_T_STRING;
        int_define(h, igw_sprintf("%s_MIN", base), s ? t->min_len : t->min);
        int_define(h, igw_sprintf("%s_MAX", base), s ? t->max_len : t->max);
        break;
    }
    case IGW_T_ARRAY:
        int_define(h, igw_sprintf("%s_MIN_ITEMS", base), t->min_items);
        int_define(h, igw_sprintf("%s_MAX_ITEMS", base), t->max_items);
        if (t->item && t->item->kind != IGW_T_REF)
            own_bounds(h, igw_sprintf("%s_ITEM", base), t->item);
        break;
    case IGW_T_JSON:
        int_define(h, igw_sprintf("%s_MAX_BYTES", base), t->max_bytes);
        int_define(h, igw_sprintf("%s_MAX_DEPTH", base), t->max_depth);
        break;
    default:
        break;
    }
}

void igw_emit_bounds(const igw_schema *s, igw_out *h)
{
    igw_out_puts(h,
        "/* ---- bounds ---- */\n\n"
        "/* The schema's bounds by name, for handlers' buffers and checks (the\n"
        " * decoders enforce them; a handler never restates one):\n"
        " *   IGW_<Type>_MIN, _MAX          a named string type's bytes, a named int type's values\n"
        " *                                 (`type EndpointId = Ident` gives IGW_EndpointId_MAX IGW_Ident_MAX)\n"
        " *   IGW_<Object>_<field>_MIN, _MAX  a field whose own type states them (a field of a named\n"
        " *                                 type has its type's: IGW_Command_msgToken is IGW_Token_*)\n"
        " *   ..._MIN_ITEMS, _MAX_ITEMS     an array's item count; ..._ITEM_MIN, _ITEM_MAX its items' own\n"
        " *   ..._MAX_BYTES, _MAX_DEPTH     a free JSON value's size and depth\n"
        " *   IGW_<Enum>_NAME_MAX           the bytes of an enum's longest wire name\n"
        " * A NUL-terminated copy of an Ident: char id[IGW_Ident_MAX + 1]. */\n");
    FOR(s->types, igw_type, t) {
        switch (t->kind) {
        case IGW_T_STRING:
        case IGW_T_INT:
        case IGW_T_ARRAY:
        case IGW_T_JSON:
            own_bounds(h, igw_sprintf("IGW_%s", t->name), t);
            break;
        case IGW_T_REF: {
            /* An alias: the same bounds under its own name, by the referent's name. */
            igw_type *r = igw_type_resolve(t);
            static const char *const sfx[][2] = {{"_MIN", "_MAX"}, {"_MIN_ITEMS", "_MAX_ITEMS"},
                                                 {"_MAX_BYTES", "_MAX_DEPTH"}};
            int k = r->kind == IGW_T_STRING || r->kind == IGW_T_INT ? 0 : r->kind == IGW_T_ARRAY ? 1
                  : r->kind == IGW_T_JSON                          ? 2 : -1;
            for (int i = 0; k >= 0 && i < 2; i++)
                igw_out_printf(h, "#define IGW_%s%s IGW_%s%s\n", t->name, sfx[k][i], t->ref, sfx[k][i]);
            break;
        }
        case IGW_T_ENUM: {
            size_t max = 0;
            FOR(t->values, const char, v)
                if (strlen(v) > max)
                    max = strlen(v);
            int_define(h, igw_sprintf("IGW_%s_NAME_MAX", t->name), (int64_t)max);
            break;
        }
        case IGW_T_OBJECT:
            FOR(t->fields, igw_field, f)
                if (f->type && f->type->kind != IGW_T_REF)
                    own_bounds(h, igw_sprintf("IGW_%s_%s", t->name, f->name), f->type);
            break;
        default:
            break;
        }
    }
    igw_out_puts(h, "\n");
}

/* ---- request paths (paths.h) ----------------------------------------------- */

typedef struct pathset {
    igw_vec names, paths; /* char*, parallel: one entry per distinct path */
    igw_vec locs;         /* igw_loc* of the field that first gave the name */
    int clashes;
} pathset;

static void path_add(pathset *ps, const char *name, const char *path, const igw_loc *loc)
{
    FOR(ps->names, char, n) {
        if (strcmp(n, name) != 0)
            continue;
        if (strcmp(IGW_VEC_AT(ps->paths, char, n_i), path) != 0) {
            igw_diag_error(*loc, "paths %s and %s both make the C name %s", IGW_VEC_AT(ps->paths, char, n_i), path,
                           name);
            ps->clashes++;
        }
        return;
    }
    igw_vec_push(&ps->names, igw_xstrdup(name));
    igw_vec_push(&ps->paths, igw_xstrdup(path));
    igw_vec_push(&ps->locs, (void *)loc);
}

/* Every path below a value of type t at `path` (C name `name`): an object's
 * fields (a discriminated field: every case's), an array's items. */
static void path_walk(pathset *ps, const igw_type *t, const char *path, const char *name, const igw_loc *loc)
{
    const igw_type *r = igw_type_resolve((igw_type *)t);
    if (r->kind == IGW_T_ARRAY) {
        char *ip = igw_xprintf("%s/%%u", path), *in = igw_xprintf("%s_ITEM", name);
        path_add(ps, in, ip, loc);
        path_walk(ps, r->item, ip, in, loc);
        free(ip);
        free(in);
        return;
    }
    if (r->kind != IGW_T_OBJECT)
        return;
    FOR(r->fields, igw_field, f) {
        char *fp = igw_xprintf("%s/%s", path, f->name), *fn = igw_xprintf("%s_%s", name, f->name);
        path_add(ps, fn, fp, &f->loc);
        if (f->sw)
            FOR(f->sw->cases, igw_case, c)
                path_walk(ps, c->type, fp, fn, &c->loc);
        else
            path_walk(ps, f->type, fp, fn, &f->loc);
        free(fp);
        free(fn);
    }
}

int igw_emit_paths(const igw_schema *s, const char *gen_dir)
{
    pathset ps = {0};
    FOR(s->routes, igw_route, r)
        if (r->body == IGW_BODY_JSON)
            path_walk(&ps, r->body_type, "", "IGW_PATH", &r->loc);
    /* A device message's params, decoded by its protocol row's type: under
     * /params of the message (device_send's body, an MQTT uplink). */
    FOR(s->protocols, igw_protocol, pr)
        FOR(pr->rows, igw_proto_row, row)
            if (row->params)
                path_walk(&ps, row->params, "/params", "IGW_PATH_params", &row->loc);
    if (ps.clashes)
        return -1;
    igw_out h;
    igw_out_init(&h);
    igw_out_banner(&h, s, "//");
    igw_out_puts(&h,
        "/* paths.h - the JSON Pointer (RFC 6901) of every request body field, for\n"
        " * handlers that report an error at a field: every route's JSON body, through\n"
        " * objects, arrays and every case of a discriminated field, and each device\n"
        " * protocol row's params type under /params of the device's message.\n"
        " *\n"
        " * IGW_PATH_ then the path's keys joined by '_': /command/params/callId is\n"
        " * IGW_PATH_command_params_callId. An array's item is _ITEM and its path a\n"
        " * printf format taking the item's index as unsigned:\n"
        " *   snprintf(buf, sizeof buf, IGW_PATH_deliveryIds_ITEM, (unsigned)i);\n"
        " * A path reached from several routes or cases is listed once; igw-gen refuses\n"
        " * a schema in which two paths would make one name. */\n"
        "#ifndef IGW_GENERATED_PATHS_H\n#define IGW_GENERATED_PATHS_H\n\n");
    FOR(ps.names, char, n) {
        igw_out_printf(&h, "#define %s ", n);
        igw_out_c_string(&h, IGW_VEC_AT(ps.paths, char, n_i));
        igw_out_puts(&h, "\n");
    }
    igw_out_puts(&h, "\n#endif\n");
    int rc = igw_out_save(&h, gen_dir, "paths.h");
    igw_out_free(&h);
    FOR(ps.names, char, n) {
        free(n);
        free(IGW_VEC_AT(ps.paths, char, n_i));
    }
    free(ps.names.v);
    free(ps.paths.v);
    free(ps.locs.v);
    return rc ? -1 : 0;
}
