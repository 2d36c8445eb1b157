/* emit_bind.c - what igwd binds to the schema: generated/igwd/handlers.{h,c}
 * (each route's `handler`, and its `auth user subprotocol`) and
 * generated/igwd/methods.{h,c} (each `methods` block: the handler and the
 * traits of each value of an enum).
 *
 * These tables name igwd's functions, so they live apart from api.c (which
 * igwctl and the tests link too): igwd links each into the room that
 * dispatches through it. A file is written only when the schema binds
 * something of its kind. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "emit.h"
#include "util.h"

#define FOR(vec, T, x)                                                                     \
    for (int x##_i = 0; x##_i < (vec).n; x##_i++)                                          \
        for (T *x = IGW_VEC_AT(vec, T, x##_i); x; x = NULL)

static const char *const traits[] = {IGW_METHOD_TRAITS};

/* ---- route handlers ------------------------------------------------------- */

#define ROUTE_SIG "(struct igw_exchange *ex, const igw_request *req, const struct igw_principal *who)"

static int emit_handlers(const igw_schema *s, const char *gen_dir)
{
    bool any = false;
    FOR(s->routes, igw_route, r)
        any |= r->handler != NULL;
    if (!any)
        return 0;
    igw_out h, c;
    igw_out_init(&h);
    igw_out_init(&c);
    igw_out_banner(&h, s, "//");
    igw_out_puts(&h,
        "/* handlers.h - the handler the schema binds to each route (`handler`) and\n"
        " * how its caller may authenticate. igwd's routes room dispatches through\n"
        " * igw_route_bindings; the functions are igwd's, so this table is linked\n"
        " * into igwd only. */\n"
        "#ifndef IGW_GENERATED_HANDLERS_H\n#define IGW_GENERATED_HANDLERS_H\n\n"
        "#include <stdbool.h>\n\n"
        "#include \"api.h\"\n"
        "#include \"request.h\"\n\n"
        "struct igw_exchange;\n"
        "struct igw_principal;\n\n"
        "/* The one route handler signature: the exchange to answer on, the request\n"
        " * that passed the strict stage, the caller (NULL unless `auth user`). */\n"
        "typedef void (*igw_route_fn)" ROUTE_SIG ";\n\n"
        "typedef struct igw_route_binding {\n"
        "    igw_route_fn fn; /* NULL: the route has no handler yet (not implemented) */\n"
        "    bool auth_subprotocol; /* `auth user subprotocol`: the login token may also come as the\n"
        "                            * WebSocket subprotocol igw.bearer.<token> */\n"
        "} igw_route_binding;\n\n"
        "/* Indexed by igw_route_id. */\n"
        "extern const igw_route_binding igw_route_bindings[IGW_ROUTE__COUNT];\n\n"
        "/* The handlers the schema names. */\n");
    FOR(s->routes, igw_route, r) {
        if (!r->handler)
            continue;
        bool seen = false;
        for (int j = 0; j < r_i && !seen; j++) {
            const char *o = IGW_VEC_AT(s->routes, igw_route, j)->handler;
            seen = o && strcmp(o, r->handler) == 0;
        }
        if (!seen)
            igw_out_printf(&h, "void %s" ROUTE_SIG ";\n", r->handler);
    }
    igw_out_puts(&h, "\n#endif\n");

    igw_out_banner(&c, s, "//");
    igw_out_puts(&c, "#include \"handlers.h\"\n\n"
                     "const igw_route_binding igw_route_bindings[IGW_ROUTE__COUNT] = {\n");
    FOR(s->routes, igw_route, r) {
        if (!r->handler && !r->auth_subprotocol)
            continue;
        igw_out_printf(&c, "    [IGW_ROUTE_%s] = {", igw_c_upper(r->name));
        igw_out_printf(&c, ".fn = %s", r->handler ? r->handler : "NULL");
        if (r->auth_subprotocol)
            igw_out_puts(&c, ", .auth_subprotocol = true");
        igw_out_puts(&c, "},\n");
    }
    igw_out_puts(&c, "};\n");
    int rc = igw_out_save(&h, gen_dir, "igwd/handlers.h") || igw_out_save(&c, gen_dir, "igwd/handlers.c");
    igw_out_free(&h);
    igw_out_free(&c);
    return rc ? -1 : 0;
}

/* ---- method tables ---------------------------------------------------------- */

/* A schema doc string as a C comment: a "*" "/" in it must not end it. */
static void comment(igw_out *o, const char *text)
{
    igw_out_puts(o, "/* ");
    for (; *text; text++)
        igw_out_puts(o, text[0] == '*' && text[1] == '/' ? "* " : (char[]){*text, 0});
    igw_out_puts(o, " */");
}

static void trait_const(igw_out *o, const char *trait)
{
    igw_out_puts(o, "IGW_METHOD_");
    for (; *trait; trait++)
        igw_out_printf(o, "%c", toupper((unsigned char)*trait));
}

static int emit_methods(const igw_schema *s, const char *gen_dir)
{
    if (!s->methods.n)
        return 0;
    igw_out h, c;
    igw_out_init(&h);
    igw_out_init(&c);
    igw_out_banner(&h, s, "//");
    igw_out_puts(&h,
        "/* methods.h - who carries out each value of an enum (a `methods` block):\n"
        " * the handler and its traits, in a table indexed by the enum; a value\n"
        " * without a handler has a NULL entry, and its caller answers\n"
        " * not_implemented. The room that walks a table defines the call structure\n"
        " * its handlers take (struct igw_<Enum>_call) and implements them; the\n"
        " * functions are igwd's, so this table is linked into igwd only. */\n"
        "#ifndef IGW_GENERATED_METHODS_H\n#define IGW_GENERATED_METHODS_H\n\n"
        "#include \"api.h\"\n#include \"protocol.h\"\n\n"
        "/* Traits of a binding (bits of `traits`). */\n"
        "enum {\n");
    for (size_t i = 0; i < sizeof traits / sizeof traits[0]; i++) {
        igw_out_puts(&h, "    ");
        trait_const(&h, traits[i]);
        igw_out_printf(&h, " = 1u << %zu,", i);
        if (strcmp(traits[i], "device") == 0)
            igw_out_puts(&h, " /* a device command: rights on its target, the product's thing model, a downlink */");
        else if (strcmp(traits[i], "session") == 0)
            igw_out_puts(&h, " /* a session command: carried out by the session engine that owns the session */");
        else if (strcmp(traits[i], "receipt") == 0)
            igw_out_puts(&h, " /* its replays go to the engine too: a pending one is answered from the runtime's receipt */");
        igw_out_puts(&h, "\n");
    }
    igw_out_puts(&h, "};\n");
    igw_out_banner(&c, s, "//");
    igw_out_puts(&c, "#include \"methods.h\"\n");
    FOR(s->methods, igw_methods, m) {
        const char *e = m->enum_t->name;
        igw_out_puts(&h, "\n");
        if (m->doc) {
            comment(&h, m->doc);
            igw_out_puts(&h, "\n");
        }
        igw_out_printf(&h,
                       "struct igw_%s_call;\n"
                       "/* 0, or what the walking room's call structure says. */\n"
                       "typedef int (*igw_%s_fn)(struct igw_%s_call *call);\n"
                       "typedef struct igw_%s_method {\n"
                       "    igw_%s_fn fn; /* NULL: no handler (not implemented) */\n"
                       "    unsigned traits; /* IGW_METHOD_* */\n"
                       "    const igw_proto_down *downlink; /* device: how it reaches the device (schema: `downlink`) */\n"
                       "} igw_%s_method;\n"
                       "/* Indexed by igw_%s. */\n"
                       "extern const igw_%s_method igw_%s_methods[IGW_%s__COUNT];\n",
                       e, e, e, e, e, e, e, e, e, e);
        FOR(m->binds, igw_method_bind, b) {
            bool seen = false;
            for (int j = 0; j < b_i && !seen; j++)
                seen = strcmp(IGW_VEC_AT(m->binds, igw_method_bind, j)->handler, b->handler) == 0;
            if (!seen)
                igw_out_printf(&h, "int %s(struct igw_%s_call *call);\n", b->handler, e);
        }
        igw_out_printf(&c, "\nconst igw_%s_method igw_%s_methods[IGW_%s__COUNT] = {\n", e, e, e);
        FOR(m->binds, igw_method_bind, b) {
            igw_out_printf(&c, "    [IGW_%s_%s] = {%s, ", e, igw_c_ident(b->value), b->handler);
            if (!b->traits.n)
                igw_out_puts(&c, "0");
            FOR(b->traits, const char, t) {
                if (t_i)
                    igw_out_puts(&c, " | ");
                trait_const(&c, t);
            }
            if (b->down)
                igw_out_printf(&c, ", &igw_proto_%s_downs[%d]", b->down_in->name, b->down->index);
            igw_out_puts(&c, "},");
            if (b->doc) {
                igw_out_puts(&c, " ");
                comment(&c, b->doc);
            }
            igw_out_puts(&c, "\n");
        }
        igw_out_puts(&c, "};\n");
    }
    igw_out_puts(&h, "\n#endif\n");
    int rc = igw_out_save(&h, gen_dir, "igwd/methods.h") || igw_out_save(&c, gen_dir, "igwd/methods.c");
    igw_out_free(&h);
    igw_out_free(&c);
    return rc ? -1 : 0;
}

int igw_emit_bind(const igw_schema *s, const char *gen_dir)
{
    return emit_handlers(s, gen_dir) || emit_methods(s, gen_dir) ? -1 : 0;
}
