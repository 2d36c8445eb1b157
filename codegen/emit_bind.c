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

static bool in_vec(const igw_vec *v, const char *x)
{
    for (int i = 0; i < v->n; i++)
        if (strcmp(IGW_VEC_AT(*v, const char, i), x) == 0)
            return true;
    return false;
}

static bool in_traits(const igw_method_bind *b, const char *trait)
{
    return in_vec(&b->traits, trait);
}

static int emit_methods(const igw_schema *s, const char *gen_dir)
{
    if (!s->methods.n)
        return 0;
    igw_out h, c, sc;
    igw_out_init(&h);
    igw_out_init(&c);
    igw_out_init(&sc);
    igw_out_banner(&sc, s, "//");
    igw_out_puts(&sc, "#include \"methods.h\"\n");
    igw_out_banner(&h, s, "//");
    igw_out_puts(&h,
        "/* methods.h - who carries out each value of an enum (a `methods` block):\n"
        " * the handler and its traits, in a table indexed by the enum; a value\n"
        " * without a handler has a NULL entry, and its caller answers\n"
        " * not_implemented. The room that walks a table defines the call structure\n"
        " * its handlers take (struct igw_<Enum>_call) and implements them; a\n"
        " * `session` handler runs on the session engine's loop instead and takes\n"
        " * the engine's structure (struct igw_<Enum>_op). The functions are\n"
        " * igwd's, so this table is linked into igwd only. */\n"
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
        else if (strcmp(traits[i], "retained") == 0)
            igw_out_puts(&h, " /* a replay past the retention window (doorbell_retention_ms) is refused: expired */");
        else if (strcmp(traits[i], "reads") == 0)
            igw_out_puts(&h, " /* the engine reads the endpoint, an earlier acceptance and the rights itself: no read before */");
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
                       "struct igw_%s_op;\n"
                       "/* 0, or what the walking room's call structure says. */\n"
                       "typedef int (*igw_%s_fn)(struct igw_%s_call *call);\n"
                       "/* A session handler: on the engine's loop; it answers op exactly once. */\n"
                       "typedef void (*igw_%s_session_fn)(struct igw_%s_op *op);\n"
                       "typedef struct igw_%s_method {\n"
                       "    igw_%s_fn fn; /* NULL: no handler here (a session method's is in igw_%s_sessions) */\n"
                       "    unsigned traits; /* IGW_METHOD_*; 0 with fn NULL: not implemented */\n"
                       "    const igw_proto_down *downlink; /* device: how it reaches the device (schema: `downlink`) */\n"
                       "} igw_%s_method;\n"
                       "/* Indexed by igw_%s (methods.c: linked with the room that accepts them). */\n"
                       "extern const igw_%s_method igw_%s_methods[IGW_%s__COUNT];\n"
                       "/* The `session` handlers, indexed by igw_%s, NULL for the others\n"
                       " * (sessions.c: linked with the session engine, which runs them). */\n"
                       "extern const igw_%s_session_fn igw_%s_sessions[IGW_%s__COUNT];\n",
                       e, e, e, e, e, e, e, e, e, e, e, e, e, e, e, e, e, e);
        FOR(m->binds, igw_method_bind, b) {
            bool seen = false;
            for (int j = 0; j < b_i && !seen; j++)
                seen = strcmp(IGW_VEC_AT(m->binds, igw_method_bind, j)->handler, b->handler) == 0;
            if (seen)
                continue;
            if (in_traits(b, "session"))
                igw_out_printf(&h, "void %s(struct igw_%s_op *op);\n", b->handler, e);
            else
                igw_out_printf(&h, "int %s(struct igw_%s_call *call);\n", b->handler, e);
        }
        igw_out_printf(&sc, "\nconst igw_%s_session_fn igw_%s_sessions[IGW_%s__COUNT] = {\n", e, e, e);
        bool any = false;
        FOR(m->binds, igw_method_bind, b)
            if (in_traits(b, "session")) {
                igw_out_printf(&sc, "    [IGW_%s_%s] = %s,\n", e, igw_c_ident(b->value), b->handler);
                any = true;
            }
        if (!any) /* C11 has no empty initializer */
            igw_out_puts(&sc, "    NULL,\n");
        igw_out_puts(&sc, "};\n");
        igw_out_printf(&c, "\nconst igw_%s_method igw_%s_methods[IGW_%s__COUNT] = {\n", e, e, e);
        FOR(m->binds, igw_method_bind, b) {
            igw_out_printf(&c, "    [IGW_%s_%s] = {%s, ", e, igw_c_ident(b->value),
                           in_traits(b, "session") ? "NULL" : b->handler);
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
    int rc = igw_out_save(&h, gen_dir, "igwd/methods.h") || igw_out_save(&c, gen_dir, "igwd/methods.c") ||
             igw_out_save(&sc, gen_dir, "igwd/sessions.c");
    igw_out_free(&h);
    igw_out_free(&c);
    igw_out_free(&sc);
    return rc ? -1 : 0;
}

/* ---- purposes ----------------------------------------------------------------- */

static void guard_bits(igw_out *o, const char *when)
{
    if (!when)
        igw_out_puts(o, "0");
    else
        igw_out_printf(o, "IGW_PURPOSE_IF_%s", igw_c_upper(when));
}

static int emit_purposes(const igw_schema *s, const char *gen_dir)
{
    if (!s->purposes.n)
        return 0;
    const igw_purposes *ps = IGW_VEC_AT(s->purposes, igw_purposes, 0);
    const char *e = ps->enum_t->name, *cap = ps->capability;
    igw_out h, c;
    igw_out_init(&h);
    igw_out_init(&c);
    igw_out_banner(&h, s, "//");
    igw_out_printf(&h,
        "/* purposes.h - each value of %s once, as data (the schema's `purposes`\n"
        " * block): the tracks it asks of the camera, the capability fields checked\n"
        " * before anything is claimed, who may open it, how its camera leg is held,\n"
        " * the machines it runs and the hooks object of its own behaviour. The\n"
        " * session engine walks igw_purposes and names no purpose; the hooks are\n"
        " * igwd's (struct igw_purpose_hooks, session/purpose.h), so this table is\n"
        " * linked into igwd only. */\n"
        "#ifndef IGW_GENERATED_PURPOSES_H\n#define IGW_GENERATED_PURPOSES_H\n\n"
        "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n"
        "#include \"api.h\"\n#include \"sm.h\"\n\n", e);
    if (ps->doc)
        igw_out_printf(&h, "/* %s */\n\n", ps->doc);
    igw_out_puts(&h, "/* Guards: facts of one open that select tracks and preflights (bits of `when`). */\n"
                     "enum {\n");
    FOR(ps->guards, igw_guard, g) {
        igw_out_printf(&h, "    IGW_PURPOSE_IF_%s = 1u << %d,", igw_c_upper(g->name), g_i);
        if (g->doc) {
            igw_out_puts(&h, " ");
            comment(&h, g->doc);
        }
        igw_out_puts(&h, "\n");
    }
    igw_out_printf(&h, "};\n#define IGW_PURPOSE__GUARDS %d\n"
                       "/* The guards' names, by bit: a guard named after a param of the open is\n"
                       " * what a refusal of what it selected points at. */\n"
                       "extern const char *const igw_purpose_guards[IGW_PURPOSE__GUARDS];\n", ps->guards.n);
    igw_out_puts(&h, "\n/* Who may open it (bits of `access`). */\nenum {\n"
                     "    IGW_PURPOSE_ACCESS_OWNER = 1u << 0, /* the device's true owner */\n"
                     "    IGW_PURPOSE_ACCESS_GRANT = 1u << 1, /* a user the device is granted to */\n"
                     "    IGW_PURPOSE_ACCESS_CALLMEMBER = 1u << 2, /* a live member of the call, with audio permission */\n"
                     "};\n\n"
                     "typedef enum igw_purpose_direction {\n"
                     "    IGW_PURPOSE_SENDONLY, /* the camera sends it (the viewer receives) */\n"
                     "    IGW_PURPOSE_RECVONLY, /* the camera plays it */\n"
                     "} igw_purpose_direction;\n\n"
                     "/* A track of the camera's leg. */\n"
                     "typedef struct igw_purpose_track {\n"
                     "    igw_str id;\n"
                     "    igw_TrackKind kind;\n"
                     "    igw_purpose_direction direction;\n"
                     "    igw_str codec;\n"
                     "    uint32_t when; /* IGW_PURPOSE_IF_*: all must hold; 0: always */\n"
                     "} igw_purpose_track;\n\n");
    igw_out_printf(&h,
                     "/* A bool of the camera's capability report (igw_%s) that must be\n"
                     " * true before anything is claimed. */\n"
                     "typedef struct igw_purpose_preflight {\n"
                     "    igw_str field;   /* its name (what a refusal says) */\n"
                     "    size_t offset;   /* of the bool in igw_%s */\n"
                     "    uint64_t has;    /* its presence bit */\n"
                     "    uint32_t when;   /* IGW_PURPOSE_IF_*; 0: always */\n"
                     "} igw_purpose_preflight;\n\n", cap, cap);
    igw_out_printf(&h,
                     "struct igw_purpose_hooks;\n\n"
                     "typedef struct igw_purpose {\n"
                     "    const struct igw_purpose_hooks *hooks; /* NULL: not described (not implemented) */\n"
                     "    bool shared_leg;  /* one leg per camera for every viewer (else the session's own) */\n"
                     "    bool has_viewers; /* interaction.subscribe on it opens a viewer of purpose `viewers` */\n"
                     "    bool vision;      /* its camera video is an AI's vision source: the viewer's video starts\n"
                     "                       * paused (track trigger startVision), advanced by the owner only */\n"
                     "    bool side;        /* the application's audio is a side conversation with a processor\n"
                     "                       * (its microphone to it, its voice back), never the camera's */\n"
                     "    unsigned processors; /* 1u << each value of the processors enum its sessions run (0: none) */\n"
                     "    int viewers;      /* an igw_%s */\n"
                     "    unsigned access;  /* IGW_PURPOSE_ACCESS_* */\n"
                     "    const igw_sm *const *machines; /* what it runs besides the session machine */\n"
                     "    size_t nmachines;\n"
                     "    const igw_purpose_track *tracks;\n"
                     "    size_t ntracks;\n"
                     "    const igw_purpose_preflight *preflights;\n"
                     "    size_t npreflights;\n"
                     "} igw_purpose;\n\n"
                     "/* Indexed by igw_%s. */\n"
                     "extern const igw_purpose igw_purposes[IGW_%s__COUNT];\n\n"
                     "/* The hooks the rows name. */\n", e, e, e);
    FOR(ps->rows, igw_purpose_row, r)
        igw_out_printf(&h, "extern const struct igw_purpose_hooks %s;\n", r->hooks);
    igw_out_puts(&h, "\n#endif\n");

    igw_out_banner(&c, s, "//");
    igw_out_puts(&c, "#include \"purposes.h\"\n\n#include \"machines.h\"\n\n"
                     "const char *const igw_purpose_guards[IGW_PURPOSE__GUARDS] = {");
    FOR(ps->guards, igw_guard, g)
        igw_out_printf(&c, "%s\"%s\"", g_i ? ", " : "", g->name);
    igw_out_puts(&c, "};\n");
    FOR(ps->rows, igw_purpose_row, r) {
        const char *v = igw_c_ident(r->value);
        igw_out_printf(&c, "\n/* %s */\n", r->value);
        igw_out_printf(&c, "static const igw_purpose_track %s_tracks[] = {\n", v);
        FOR(r->tracks, igw_purpose_track, t) {
            igw_out_printf(&c, "    {{\"%s\", %zu}, IGW_TrackKind_%s, IGW_PURPOSE_%s, {\"%s\", %zu}, ", t->id,
                           strlen(t->id), igw_c_ident(t->kind), strcmp(t->direction, "sendonly") ? "RECVONLY" : "SENDONLY",
                           t->codec, strlen(t->codec));
            guard_bits(&c, t->when);
            igw_out_puts(&c, "},\n");
        }
        igw_out_puts(&c, "};\n");
        if (r->preflights.n) {
            igw_out_printf(&c, "static const igw_purpose_preflight %s_preflights[] = {\n", v);
            FOR(r->preflights, igw_purpose_preflight, f) {
                igw_out_printf(&c, "    {{\"%s\", %zu}, offsetof(igw_%s, %s), IGW_%s_%s, ", f->field, strlen(f->field), cap,
                               igw_c_ident(f->field), cap, igw_c_ident(f->field));
                guard_bits(&c, f->when);
                igw_out_puts(&c, "},\n");
            }
            igw_out_puts(&c, "};\n");
        }
        if (r->machines.n) {
            igw_out_printf(&c, "static const igw_sm *const %s_machines[] = {", v);
            FOR(r->machines, const char, m)
                igw_out_printf(&c, "%s&igw_sm_%s", m_i ? ", " : "", igw_c_ident(m));
            igw_out_puts(&c, "};\n");
        }
    }
    igw_out_printf(&c, "\nconst igw_purpose igw_purposes[IGW_%s__COUNT] = {\n", e);
    FOR(ps->rows, igw_purpose_row, r) {
        const char *v = igw_c_ident(r->value);
        igw_out_printf(&c, "    [IGW_%s_%s] = {\n        .hooks = &%s,\n        .shared_leg = %s,\n        .access = ", e, v,
                       r->hooks, strcmp(r->leg, "shared") == 0 ? "true" : "false");
        static const char *const acc[] = {IGW_PURPOSE_ACCESS};
        bool any = false;
        for (size_t i = 0; i < sizeof acc / sizeof acc[0]; i++)
            if (in_vec(&r->access, acc[i])) {
                igw_out_printf(&c, "%sIGW_PURPOSE_ACCESS_%s", any ? " | " : "", igw_c_upper(acc[i]));
                any = true;
            }
        igw_out_puts(&c, ",\n");
        if (r->viewers)
            igw_out_printf(&c, "        .has_viewers = true,\n        .viewers = IGW_%s_%s,\n", e, igw_c_ident(r->viewers));
        if (r->vision)
            igw_out_puts(&c, "        .vision = true,\n");
        if (r->side)
            igw_out_puts(&c, "        .side = true,\n");
        if (r->processors.n) {
            igw_out_puts(&c, "        .processors = ");
            FOR(r->processors, const char, pr)
                igw_out_printf(&c, "%s(1u << IGW_%s_%s)", pr_i ? " | " : "", ps->processor, igw_c_ident(pr));
            igw_out_puts(&c, ",\n");
        }
        if (r->machines.n)
            igw_out_printf(&c, "        .machines = %s_machines,\n        .nmachines = %d,\n", v, r->machines.n);
        igw_out_printf(&c, "        .tracks = %s_tracks,\n        .ntracks = %d,\n", v, r->tracks.n);
        if (r->preflights.n)
            igw_out_printf(&c, "        .preflights = %s_preflights,\n        .npreflights = %d,\n", v, r->preflights.n);
        igw_out_puts(&c, "    },\n");
    }
    igw_out_puts(&c, "};\n");
    int rc = igw_out_save(&h, gen_dir, "igwd/purposes.h") || igw_out_save(&c, gen_dir, "igwd/purposes.c");
    igw_out_free(&h);
    igw_out_free(&c);
    return rc ? -1 : 0;
}

int igw_emit_bind(const igw_schema *s, const char *gen_dir)
{
    return emit_handlers(s, gen_dir) || emit_methods(s, gen_dir) || emit_purposes(s, gen_dir) ? -1 : 0;
}
