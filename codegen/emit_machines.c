/* emit_machines.c - state machines: transition tables with can_fire/next
 * (generated/machines.h, generated/machines.c), one Graphviz file per machine
 * (docs/machines/<name>.dot) and trigger-sequence vectors
 * (generated/conformance/machines.jsonl).
 *
 * State 0 of every machine is the pseudo-state `none` (before creation), so
 * a creation trigger is an ordinary transition out of state 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "util.h"

#define FOR(vec, T, x)                                                                     \
    for (int x##_i = 0; x##_i < (vec).n; x##_i++)                                          \
        for (T *x = IGW_VEC_AT(vec, T, x##_i); x; x = NULL)

static const char *state_name(const igw_machine *m, int idx)
{
    return idx < 0 ? "none" : IGW_VEC_AT(m->states, igw_state, idx)->name;
}

/* ---- C ---- */

static void emit_header(const igw_schema *s, igw_out *h)
{
    igw_out_banner(h, s, "//");
    igw_out_puts(h,
        "/* machines.h - state machines of the schema as transition tables. */\n"
        "#ifndef IGW_GENERATED_MACHINES_H\n#define IGW_GENERATED_MACHINES_H\n\n"
        "#include <stdbool.h>\n#include <stdint.h>\n\n#include \"api.h\"\n#include \"sm.h\"\n\n"
        "/* The tables of the schema's machines; the walker is src/rt/sm.c. */\n\n");
    FOR(s->machines, igw_machine, m) {
        const char *up = igw_c_upper(m->name);
        igw_out_printf(h, "/* ---- %s: %s ---- */\n\n", m->name, m->doc ? m->doc : "");
        igw_out_printf(h, "typedef enum igw_%s_state {\n    IGW_%s_NONE,\n", m->name, up);
        FOR(m->states, igw_state, st)
            igw_out_printf(h, "    IGW_%s_%s,\n", up, igw_c_upper(st->name));
        igw_out_printf(h, "    IGW_%s__STATES\n} igw_%s_state;\n\n", up, m->name);
        igw_out_printf(h, "typedef enum igw_%s_trigger {\n", m->name);
        FOR(m->triggers, const char, tr)
            igw_out_printf(h, "    IGW_%s_ON_%s,\n", up, igw_c_upper(tr));
        igw_out_printf(h, "    IGW_%s__TRIGGERS\n} igw_%s_trigger;\n\n", up, m->name);
        if (m->guards.n) {
            igw_out_printf(h, "enum igw_%s_guard {\n", m->name);
            FOR(m->guards, igw_guard, g)
                igw_out_printf(h, "    IGW_%s_GUARD_%s = %d, /* %s */\n", up, igw_c_upper(g->name), g->index,
                               g->doc ? g->doc : "");
            igw_out_printf(h, "    IGW_%s__GUARDS\n};\n", up);
        }
        FOR(m->guards, igw_guard, g)
            igw_out_printf(h, "#define IGW_%s_IF_%s (UINT32_C(1) << IGW_%s_GUARD_%s)\n", up, igw_c_upper(g->name), up,
                           igw_c_upper(g->name));
        igw_out_printf(h, "\nextern const igw_sm igw_sm_%s;\n\n", m->name);
        igw_out_printf(h, "/* True when `trigger` may fire in `state` given the holding guards. */\n"
                          "static inline bool igw_%s_can_fire(igw_%s_state state, igw_%s_trigger trigger, uint32_t guards)\n"
                          "{\n    return igw_sm_fire(&igw_sm_%s, (int)state, (int)trigger, guards).ok;\n}\n\n",
                       m->name, m->name, m->name, m->name);
        igw_out_printf(h, "/* The state after `trigger`, or the same state with *err set when refused. */\n"
                          "static inline igw_%s_state igw_%s_next(igw_%s_state state, igw_%s_trigger trigger, uint32_t guards,\n"
                          "                                       igw_err *err)\n{\n"
                          "    igw_sm_result r = igw_sm_fire(&igw_sm_%s, (int)state, (int)trigger, guards);\n"
                          "    if (!r.ok && err)\n        *err = (igw_err)r.err;\n    return (igw_%s_state)r.next;\n}\n\n",
                       m->name, m->name, m->name, m->name, m->name, m->name);
    }
    if (s->machines.n) /* no zero-length array in C */
        igw_out_printf(h, "/* Every machine of the schema, in schema order (what a conformance runner\n"
                          " * looks a vector's machine up in). */\n"
                          "#define IGW_SM_COUNT %u\n"
                          "extern const igw_sm *const igw_sm_all[IGW_SM_COUNT];\n\n",
                       (unsigned)s->machines.n);
    igw_out_puts(h, "#endif\n");
}

static void emit_source(const igw_schema *s, igw_out *c)
{
    igw_out_banner(c, s, "//");
    igw_out_puts(c, "/* machines.c - see machines.h: tables only. */\n#include \"machines.h\"\n\n");
    FOR(s->machines, igw_machine, m) {
        igw_out_printf(c, "static const char *const %s_states[] = {\"none\"", m->name);
        FOR(m->states, igw_state, st)
            igw_out_printf(c, ", \"%s\"", st->name);
        igw_out_printf(c, "};\nstatic const bool %s_terminal[] = {false", m->name);
        FOR(m->states, igw_state, st)
            igw_out_printf(c, ", %s", st->terminal ? "true" : "false");
        igw_out_printf(c, "};\nstatic const char *const %s_triggers[] = {", m->name);
        FOR(m->triggers, const char, tr)
            igw_out_printf(c, "%s\"%s\"", tr_i ? ", " : "", tr);
        igw_out_printf(c, "};\n");
        if (m->guards.n) {
            igw_out_printf(c, "static const char *const %s_guards[] = {", m->name);
            FOR(m->guards, igw_guard, g)
                igw_out_printf(c, "%s\"%s\"", g_i ? ", " : "", g->name);
            igw_out_puts(c, "};\n");
        }
        const char *up = igw_c_upper(m->name);
        igw_out_printf(c, "static const igw_sm_row %s_rows[] = {\n", m->name);
        FOR(m->transitions, igw_transition, t) {
            for (int k = 0; k < t->from_idx.n; k++) {
                int from = (int)(intptr_t)t->from_idx.v[k] + 1;
                const char *fromc = igw_sprintf("IGW_%s_%s", up, igw_c_upper(state_name(m, from - 1)));
                const char *trc = igw_sprintf("IGW_%s_ON_%s", up, igw_c_upper(t->trigger));
                if (t->reject) {
                    igw_out_printf(c, "    {.from = %s, .trigger = %s, .guard = IGW_SM_NO_GUARD, .to = IGW_SM_REFUSE,\n"
                                      "     .err = IGW_ERR_%s, .reason = ",
                                   fromc, trc, igw_c_upper(t->error_ref->name));
                    igw_out_c_string(c, t->reason);
                    igw_out_puts(c, "},\n");
                } else {
                    const char *guard = t->guard_idx < 0
                                            ? "IGW_SM_NO_GUARD"
                                            : igw_sprintf("IGW_%s_GUARD_%s", up,
                                                          igw_c_upper(IGW_VEC_AT(m->guards, igw_guard, t->guard_idx)->name));
                    igw_out_printf(c, "    {.from = %s, .trigger = %s, .guard = %s, .to = IGW_%s_%s},\n", fromc, trc,
                                   guard, up, igw_c_upper(t->to));
                }
            }
        }
        igw_out_puts(c, "};\n");
        igw_out_printf(c, "const igw_sm igw_sm_%s = {\n    .name = \"%s\",\n    .states = %s_states,\n"
                          "    .triggers = %s_triggers,\n    .guards = %s,\n    .terminal = %s_terminal,\n"
                          "    .nstates = IGW_%s__STATES,\n    .ntriggers = IGW_%s__TRIGGERS,\n    .nguards = %s,\n"
                          "    .nrows = sizeof %s_rows / sizeof %s_rows[0],\n    .rows = %s_rows,\n"
                          "    .illegal = IGW_ERR_%s,\n};\n\n",
                       m->name, m->name, m->name, m->name, m->guards.n ? igw_sprintf("%s_guards", m->name) : "NULL",
                       m->name, up, up, m->guards.n ? igw_sprintf("IGW_%s__GUARDS", up) : "0", m->name, m->name,
                       m->name, igw_c_upper(m->illegal_ref->name));
    }
    if (!s->machines.n)
        return;
    igw_out_puts(c, "const igw_sm *const igw_sm_all[IGW_SM_COUNT] = {");
    FOR(s->machines, igw_machine, m)
        igw_out_printf(c, "%s&igw_sm_%s", m_i ? ", " : "", m->name);
    igw_out_puts(c, "};\n");
}

/* ---- Graphviz ---- */

static void emit_dot(const igw_schema *s, const igw_machine *m, igw_out *o)
{
    igw_out_banner(o, s, "//");
    igw_out_printf(o, "digraph %s {\n    rankdir=LR;\n    label=", m->name);
    igw_out_json_string(o, m->doc ? m->doc : m->name);
    igw_out_puts(o, ";\n    node [shape=box, style=rounded];\n    none [shape=point];\n");
    FOR(m->states, igw_state, st)
        igw_out_printf(o, "    %s%s;\n", st->name, st->terminal ? " [peripheries=2]" : "");
    FOR(m->transitions, igw_transition, t) {
        for (int k = 0; k < t->from_idx.n; k++) {
            const char *from = state_name(m, (int)(intptr_t)t->from_idx.v[k]);
            if (t->reject) {
                igw_out_printf(o, "    %s -> %s [style=dashed, color=red, label=", from, from);
                char *label = igw_xprintf("%s: %s", t->trigger, t->error);
                igw_out_json_string(o, label);
                free(label);
            } else {
                igw_out_printf(o, "    %s -> %s [label=", from, t->to);
                char *label = t->guard ? igw_xprintf("%s [%s]", t->trigger, t->guard) : igw_xstrdup(t->trigger);
                igw_out_json_string(o, label);
                free(label);
            }
            igw_out_puts(o, "];\n");
        }
    }
    igw_out_puts(o, "}\n");
}

/* ---- vectors ---- */

/* Shortest unguarded-or-guard-satisfied path from none to every state. */
typedef struct step {
    const igw_transition *t;
    int prev;
} step;

static void reach(const igw_machine *m, step *via)
{
    int ns = m->states.n;
    for (int i = 0; i <= ns; i++)
        via[i] = (step){NULL, -2};
    via[0].prev = -1; /* none */
    bool grew = true;
    while (grew) {
        grew = false;
        FOR(m->transitions, igw_transition, t) {
            if (t->reject || via[t->to_idx + 1].prev != -2)
                continue;
            for (int k = 0; k < t->from_idx.n; k++) {
                int from = (int)(intptr_t)t->from_idx.v[k] + 1;
                if (via[from].prev != -2 || from == 0) {
                    via[t->to_idx + 1] = (step){t, from};
                    grew = true;
                    break;
                }
            }
        }
    }
}

static void step_json(igw_out *o, const igw_machine *m, const igw_transition *t, bool guard_true, const char *state,
                      const igw_error *err, int *first)
{
    igw_out_printf(o, "%s{\"trigger\":", (*first)++ ? "," : "");
    igw_out_json_string(o, t->trigger);
    igw_out_puts(o, ",\"guards\":[");
    if (t->guard && guard_true)
        igw_out_json_string(o, t->guard);
    igw_out_puts(o, "],\"expect\":{\"state\":");
    igw_out_json_string(o, state);
    if (err) {
        igw_out_puts(o, ",\"error\":");
        igw_out_json_string(o, err->name);
        igw_out_printf(o, ",\"code\":%lld", (long long)err->code);
    }
    igw_out_puts(o, "}}");
    (void)m;
}

/* Writes the steps that lead from none to state index `target` (1-based). */
static void path_to(igw_out *o, const igw_machine *m, const step *via, int target, int *first)
{
    int chain[64], n = 0;
    for (int at = target; at > 0 && n < 64; at = via[at].prev)
        chain[n++] = at;
    while (n-- > 0) {
        const igw_transition *t = via[chain[n]].t;
        step_json(o, m, t, true, state_name(m, chain[n] - 1), NULL, first);
    }
}

static void vector_head(igw_out *o, const igw_machine *m, const char *id, const char *doc, const char *tag)
{
    igw_out_puts(o, "{\"id\":");
    char *full = igw_xprintf("%s/%s", m->name, id);
    igw_out_json_string(o, full);
    free(full);
    igw_out_puts(o, ",\"doc\":");
    igw_out_json_string(o, doc);
    igw_out_printf(o, ",\"tags\":[\"machine\",\"%s\"],\"machine\":", tag);
    igw_out_json_string(o, m->name);
    igw_out_puts(o, ",\"steps\":[");
}

static void emit_vectors(const igw_schema *s, igw_out *o)
{
    igw_out_puts(o, "{\"generated_by\":");
    igw_out b;
    igw_out_init(&b);
    igw_out_banner(&b, s, "");
    b.buf[b.len - 1] = '\0'; /* drop the newline */
    igw_out_json_string(o, b.buf + 1);
    igw_out_free(&b);
    igw_out_puts(o, "}\n");
    FOR(s->machines, igw_machine, m) {
        step *via = igw_xcalloc((size_t)m->states.n + 1, sizeof *via);
        reach(m, via);
        int seq = 0;
        FOR(m->transitions, igw_transition, t) {
            for (int k = 0; k < t->from_idx.n; k++) {
                int from = (int)(intptr_t)t->from_idx.v[k] + 1;
                const char *fname = state_name(m, from - 1);
                int first = 0;
                char *id, *doc;
                if (t->reject) {
                    id = igw_xprintf("%d-reject-%s-in-%s", seq++, t->trigger, fname);
                    doc = igw_xprintf("%s in %s is refused with %s: %s", t->trigger, fname, t->error, t->reason);
                    vector_head(o, m, id, doc, "reject");
                    path_to(o, m, via, from, &first);
                    step_json(o, m, t, true, fname, t->error_ref, &first);
                } else {
                    id = igw_xprintf("%d-%s-%s-to-%s", seq++, t->trigger, fname, t->to);
                    doc = igw_xprintf("%s moves %s to %s%s%s", t->trigger, fname, t->to, t->guard ? " when " : "",
                                      t->guard ? t->guard : "");
                    vector_head(o, m, id, doc, "transition");
                    path_to(o, m, via, from, &first);
                    step_json(o, m, t, true, t->to, NULL, &first);
                }
                igw_out_puts(o, "]}\n");
                free(id);
                free(doc);
                if (!t->reject && t->guard) {
                    first = 0;
                    id = igw_xprintf("%d-%s-in-%s-without-%s", seq++, t->trigger, fname, t->guard);
                    doc = igw_xprintf("%s in %s without %s is refused", t->trigger, fname, t->guard);
                    vector_head(o, m, id, doc, "guard");
                    path_to(o, m, via, from, &first);
                    /* Another row for the same trigger and state may still apply
                     * without the guard; then the vector expects that row. */
                    const igw_transition *alt = NULL;
                    bool after = false;
                    FOR(m->transitions, igw_transition, u) {
                        if (u == t) {
                            after = true;
                            continue;
                        }
                        if (!after || strcmp(u->trigger, t->trigger) != 0 || (u->guard && !u->reject))
                            continue;
                        for (int q = 0; q < u->from_idx.n; q++)
                            if ((int)(intptr_t)u->from_idx.v[q] + 1 == from && !alt)
                                alt = u;
                    }
                    if (alt && !alt->reject)
                        step_json(o, m, t, false, alt->to, NULL, &first);
                    else
                        step_json(o, m, t, false, fname, alt ? alt->error_ref : m->illegal_ref, &first);
                    igw_out_puts(o, "]}\n");
                    free(id);
                    free(doc);
                }
            }
        }
        /* Every (reachable state, trigger) pair without a row is illegal. */
        for (int st = 0; st <= m->states.n; st++) {
            if (st > 0 && via[st].prev == -2)
                continue;
            FOR(m->triggers, const char, tr) {
                bool has = false;
                FOR(m->transitions, igw_transition, t)
                    if (strcmp(t->trigger, tr) == 0)
                        for (int k = 0; k < t->from_idx.n; k++)
                            if ((int)(intptr_t)t->from_idx.v[k] + 1 == st)
                                has = true;
                if (has)
                    continue;
                const igw_transition *any = NULL;
                FOR(m->transitions, igw_transition, t)
                    if (!any && strcmp(t->trigger, tr) == 0)
                        any = t;
                int first = 0;
                char *id = igw_xprintf("%d-illegal-%s-in-%s", seq++, tr, state_name(m, st - 1));
                char *doc = igw_xprintf("%s is illegal in %s", tr, state_name(m, st - 1));
                vector_head(o, m, id, doc, "illegal");
                path_to(o, m, via, st, &first);
                igw_transition probe = *any;
                probe.guard = NULL;
                step_json(o, m, &probe, true, state_name(m, st - 1), m->illegal_ref, &first);
                igw_out_puts(o, "]}\n");
                free(id);
                free(doc);
            }
        }
        free(via);
    }
}

int igw_emit_machines(const igw_schema *s, const char *gen_dir, const char *docs_dir)
{
    igw_out h, c, v;
    igw_out_init(&h);
    igw_out_init(&c);
    igw_out_init(&v);
    emit_header(s, &h);
    emit_source(s, &c);
    emit_vectors(s, &v);
    int rc = igw_out_save(&h, gen_dir, "machines.h") | igw_out_save(&c, gen_dir, "machines.c") |
             igw_out_save(&v, gen_dir, "conformance/machines.jsonl");
    FOR(s->machines, igw_machine, m) {
        igw_out d;
        igw_out_init(&d);
        emit_dot(s, m, &d);
        char *rel = igw_xprintf("machines/%s.dot", m->name);
        rc |= igw_out_save(&d, docs_dir, rel);
        free(rel);
        igw_out_free(&d);
    }
    igw_out_free(&h);
    igw_out_free(&c);
    igw_out_free(&v);
    return rc ? -1 : 0;
}
