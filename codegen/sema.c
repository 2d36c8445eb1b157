/* sema.c - resolution and checks; see sema.h.
 *
 * Errors are reported, not fatal, so one run shows every problem; emitters
 * only run when this returns 0. */
#include "sema.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

#define FOR(vec, T, x)                                                                     \
    for (int x##_i = 0; x##_i < (vec).n; x##_i++)                                          \
        for (T *x = IGW_VEC_AT(vec, T, x##_i); x; x = NULL)

igw_type *igw_type_resolve(igw_type *t)
{
    for (int hops = 0; t && t->kind == IGW_T_REF && hops < 64; hops++)
        t = t->target;
    return t;
}

igw_type *igw_schema_type(const igw_schema *s, const char *name)
{
    FOR(s->types, igw_type, t)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

igw_error *igw_schema_error(const igw_schema *s, const char *name)
{
    FOR(s->errors, igw_error, e)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

igw_error *igw_schema_error_role(const igw_schema *s, unsigned role)
{
    FOR(s->errors, igw_error, e)
        if (e->roles & role)
            return e;
    return NULL;
}

igw_machine *igw_schema_machine(const igw_schema *s, const char *name)
{
    FOR(s->machines, igw_machine, m)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

igw_table *igw_schema_table(const igw_schema *s, const char *name)
{
    FOR(s->tables, igw_table, t)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

igw_field *igw_object_field(const igw_type *obj, const char *name)
{
    FOR(obj->fields, igw_field, f)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

static bool in_list(const igw_vec *v, const char *s)
{
    for (int i = 0; i < v->n; i++)
        if (strcmp(IGW_VEC_AT(*v, const char, i), s) == 0)
            return true;
    return false;
}

/* Names that become C identifiers must not be keywords (or the `has`
 * member every generated struct carries). */
static bool c_reserved(const char *name)
{
    static const char *const words[] = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "_Bool", "_Complex", "_Imaginary", "_Alignas", "_Alignof", "_Atomic",
        "_Generic", "_Noreturn", "_Static_assert", "_Thread_local", "bool", "true", "false", "has",
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(name, words[i]) == 0)
            return true;
    return false;
}

/* ---- types ---- */

static void resolve_type(igw_schema *s, igw_type *t)
{
    if (!t)
        return;
    switch (t->kind) {
    case IGW_T_REF:
        if (!t->target) {
            t->target = igw_schema_type(s, t->ref);
            if (!t->target)
                igw_diag_error(t->loc, "unknown type '%s'", t->ref);
        }
        break;
    case IGW_T_ARRAY:
        resolve_type(s, t->item);
        break;
    default:
        break;
    }
}

static void mark_used(igw_type *t)
{
    for (int hops = 0; t && hops < 64; hops++) {
        if (t->kind == IGW_T_REF) {
            if (t->target && !t->target->used) {
                t->target->used = true;
                mark_used(t->target);
            }
            return;
        }
        if (t->kind == IGW_T_ARRAY) {
            t = t->item;
            continue;
        }
        if (t->kind == IGW_T_OBJECT) {
            t->used = true;
            FOR(t->fields, igw_field, f) {
                if (f->type)
                    mark_used(f->type);
                if (f->sw)
                    FOR(f->sw->cases, igw_case, c)
                        mark_used(c->type);
            }
        }
        return;
    }
}

static void check_scalar(igw_type *t)
{
    switch (t->kind) {
    case IGW_T_STRING:
        if (t->format == IGW_FMT_CANONICAL_ID && t->max_len < 0) {
            t->min_len = 1;
            t->max_len = 16; /* "9007199254740991" */
        }
        if (t->max_len < 0)
            igw_diag_error(t->loc, "string needs an explicit byte length range (bytes MIN..MAX)");
        else if (t->min_len < 0 || t->min_len > t->max_len)
            igw_diag_error(t->loc, "empty byte length range %lld..%lld", (long long)t->min_len,
                           (long long)t->max_len);
        break;
    case IGW_T_INT:
        if (t->min > t->max)
            igw_diag_error(t->loc, "empty integer range %lld..%lld", (long long)t->min, (long long)t->max);
        break;
    case IGW_T_ARRAY:
        if (t->max_items < 0)
            igw_diag_error(t->loc, "array needs an explicit item count range (items MIN..MAX)");
        else if (t->min_items < 0 || t->min_items > t->max_items)
            igw_diag_error(t->loc, "empty item count range");
        if (t->item)
            check_scalar(t->item);
        break;
    case IGW_T_JSON:
        if (t->max_depth < 1 || t->max_depth > 32)
            igw_diag_error(t->loc, "json depth must be 1..32");
        if (t->max_bytes < 2)
            igw_diag_error(t->loc, "json size must be at least 2 bytes");
        break;
    case IGW_T_ENUM:
        for (int i = 0; i < t->values.n; i++)
            for (int j = 0; j < i; j++) {
                const char *a = IGW_VEC_AT(t->values, char, i), *b = IGW_VEC_AT(t->values, char, j);
                if (strcmp(a, b) == 0)
                    igw_diag_error(t->loc, "duplicate enum value '%s'", a);
                else if (strcmp(igw_c_ident(a), igw_c_ident(b)) == 0)
                    igw_diag_error(t->loc, "enum values '%s' and '%s' have the same C name", b, a);
            }
        if (t->values.n == 0)
            igw_diag_error(t->loc, "empty enum");
        break;
    default:
        break;
    }
}

/* ---- rules ---- */

static igw_field *rule_field(igw_type *obj, const char *name, igw_loc loc)
{
    igw_field *f = igw_object_field(obj, name);
    if (!f)
        igw_diag_error(loc, "'%s' is not a field of %s", name, obj->name);
    return f;
}

static void resolve_cond(igw_type *obj, igw_cond *c)
{
    if (!c)
        return;
    if (c->op == IGW_C_AND || c->op == IGW_C_OR || c->op == IGW_C_NOT) {
        resolve_cond(obj, c->a);
        resolve_cond(obj, c->b);
        return;
    }
    c->fref = rule_field(obj, c->field, c->loc);
    if (!c->fref || c->op == IGW_C_PRESENT)
        return;
    igw_type *ft = igw_type_resolve(c->fref->type);
    if (!ft) {
        igw_diag_error(c->loc, "a condition cannot test the discriminated field '%s'", c->field);
        return;
    }
    for (int i = 0; i < c->values.n; i++) {
        const char *v = IGW_VEC_AT(c->values, char, i);
        if (ft->kind == IGW_T_ENUM && !in_list(&ft->values, v))
            igw_diag_error(c->loc, "'%s' is not a value of %s", v, c->field);
        else if (ft->kind == IGW_T_BOOL && strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            igw_diag_error(c->loc, "'%s' is not a boolean", v);
        else if (ft->kind != IGW_T_ENUM && ft->kind != IGW_T_BOOL && ft->kind != IGW_T_STRING)
            igw_diag_error(c->loc, "conditions compare enum, bool or string fields; '%s' is not one",
                           c->field);
    }
}

static void resolve_operand(igw_type *obj, igw_operand *o, igw_loc loc, const char **unit)
{
    if (o->is_const)
        return;
    const char *names[2] = {o->a, o->b};
    igw_field **refs[2] = {&o->fa, &o->fb};
    for (int i = 0; i < 2; i++) {
        if (!names[i])
            continue;
        igw_field *f = rule_field(obj, names[i], loc);
        *refs[i] = f;
        igw_type *ft = f ? igw_type_resolve(f->type) : NULL;
        if (f && (!ft || ft->kind != IGW_T_INT)) {
            igw_diag_error(loc, "check operand '%s' is not an integer field", names[i]);
            continue;
        }
        if (!ft)
            continue;
        if (*unit && ft->unit && strcmp(*unit, ft->unit) != 0)
            igw_diag_error(loc, "check mixes units %s and %s", *unit, ft->unit);
        if (ft->unit)
            *unit = ft->unit;
    }
}

/* Values one dimension of the contradiction search can take. */
typedef struct dim {
    igw_field *field;
    const char *vals[40]; /* NULL entry = absent */
    int n;
} dim;

static void add_dim(dim *dims, int *nd, igw_field *f, const igw_cond *c)
{
    int i;
    for (i = 0; i < *nd; i++)
        if (dims[i].field == f)
            break;
    if (i == *nd) {
        if (*nd >= 9)
            return; /* the caller reports more than 8 */
        dims[i].field = f;
        dims[i].n = 0;
        dims[i].vals[dims[i].n++] = NULL; /* absent */
        igw_type *ft = igw_type_resolve(f->type);
        if (ft && ft->kind == IGW_T_ENUM) {
            for (int k = 0; k < ft->values.n && dims[i].n < 39; k++)
                dims[i].vals[dims[i].n++] = IGW_VEC_AT(ft->values, char, k);
        } else if (ft && ft->kind == IGW_T_BOOL) {
            dims[i].vals[dims[i].n++] = "true";
            dims[i].vals[dims[i].n++] = "false";
        } else {
            dims[i].vals[dims[i].n++] = "\x01other"; /* present, matching no literal */
        }
        (*nd)++;
    }
    if (c && c->op != IGW_C_PRESENT) {
        igw_type *ft = igw_type_resolve(f->type);
        if (ft && ft->kind == IGW_T_STRING)
            for (int k = 0; k < c->values.n && dims[i].n < 39; k++)
                dims[i].vals[dims[i].n++] = IGW_VEC_AT(c->values, char, k);
    }
}

static void collect_dims(const igw_cond *c, dim *dims, int *nd)
{
    if (!c)
        return;
    if (c->op == IGW_C_AND || c->op == IGW_C_OR || c->op == IGW_C_NOT) {
        collect_dims(c->a, dims, nd);
        collect_dims(c->b, dims, nd);
    } else if (c->fref) {
        add_dim(dims, nd, c->fref, c);
    }
}

static const char *dim_value(const dim *dims, int nd, const int *pick, const igw_field *f)
{
    for (int i = 0; i < nd; i++)
        if (dims[i].field == f)
            return dims[i].vals[pick[i]];
    return NULL;
}

static bool eval(const igw_cond *c, const dim *dims, int nd, const int *pick)
{
    if (!c)
        return true;
    const char *v;
    switch (c->op) {
    case IGW_C_AND: return eval(c->a, dims, nd, pick) && eval(c->b, dims, nd, pick);
    case IGW_C_OR: return eval(c->a, dims, nd, pick) || eval(c->b, dims, nd, pick);
    case IGW_C_NOT: return !eval(c->a, dims, nd, pick);
    case IGW_C_PRESENT: return dim_value(dims, nd, pick, c->fref) != NULL;
    case IGW_C_EQ:
    case IGW_C_IN:
        v = dim_value(dims, nd, pick, c->fref);
        return v && in_list(&c->values, v);
    case IGW_C_NE:
        /* An absent field is "not equal": rules like `forbid x when m != a` must
         * also hold when m is missing (which its own rule rejects anyway). */
        v = dim_value(dims, nd, pick, c->fref);
        return !v || !in_list(&c->values, v);
    }
    return false;
}

static void check_contradictions(igw_type *obj)
{
    dim dims[9];
    int nd = 0;
    FOR(obj->rules, igw_rule, r)
        if (r->kind != IGW_R_CHECK)
            collect_dims(r->when, dims, &nd);
    if (nd == 0)
        return;
    /* The search is exhaustive or it says so: a schema past the limits is
     * refused rather than checked halfway. */
    long total = 1;
    for (int i = 0; i < nd; i++) {
        if (dims[i].n >= 39) {
            igw_diag_error(dims[i].field->loc, "conditions on '%s' test too many values for the rule check (max 37)",
                           dims[i].field->name);
            return;
        }
        total *= dims[i].n;
    }
    if (nd > 8 || total > 200000) {
        igw_diag_error(obj->loc, "rules of %s test too many field combinations to check (max 8 fields, 200000 cases)",
                       obj->name);
        return;
    }
    int pick[9] = {0};
    int nf = obj->fields.n;
    bool *ever_allowed = igw_xcalloc((size_t)nf, sizeof *ever_allowed);
    bool *reported = igw_xcalloc((size_t)nf, sizeof *reported);
    bool *req = igw_xcalloc((size_t)nf, sizeof *req), *forb = igw_xcalloc((size_t)nf, sizeof *forb);
    for (;;) {
        /* What the rules demand under this assignment of the tested fields. */
        FOR(obj->fields, igw_field, f) {
            req[f->index] = !f->optional;
            forb[f->index] = false;
        }
        FOR(obj->rules, igw_rule, r) {
            if (r->kind == IGW_R_CHECK || !eval(r->when, dims, nd, pick))
                continue;
            for (int k = 0; k < r->frefs.n; k++)
                (r->kind == IGW_R_REQUIRE ? req : forb)[IGW_VEC_AT(r->frefs, igw_field, k)->index] = true;
        }
        /* An assignment in which a tested field breaks the rules is an
         * invalid input, not a contradiction; `broken` counts such fields. */
        int broken = 0, broken_at = -1;
        for (int i = 0; i < nd; i++) {
            const igw_field *f = dims[i].field;
            const char *v = dims[i].vals[pick[i]];
            if ((!v && req[f->index]) || (v && forb[f->index])) {
                broken++;
                broken_at = f->index;
            }
        }
        FOR(obj->fields, igw_field, f) {
            bool alone = broken == 0 || (broken == 1 && broken_at == f->index);
            if (req[f->index] && forb[f->index] && alone && !reported[f->index]) {
                reported[f->index] = true;
                igw_diag_error(f->loc, "contradictory rules: field '%s' is both required and forbidden in some case",
                               f->name);
            }
            if (broken == 0 && !forb[f->index])
                ever_allowed[f->index] = true;
        }
        int i = 0;
        while (i < nd && ++pick[i] == dims[i].n)
            pick[i++] = 0;
        if (i == nd)
            break;
    }
    FOR(obj->fields, igw_field, f)
        if (!ever_allowed[f->index] && !f->reserved && !reported[f->index])
            igw_diag_error(f->loc, "field '%s' is forbidden in every case", f->name);
    free(ever_allowed);
    free(reported);
    free(req);
    free(forb);
}

static void check_object(igw_schema *s, igw_type *obj)
{
    FOR(obj->fields, igw_field, f) {
        for (int j = 0; j < f->index; j++)
            if (strcmp(IGW_VEC_AT(obj->fields, igw_field, j)->name, f->name) == 0)
                igw_diag_error(f->loc, "duplicate field '%s' in %s", f->name, obj->name);
        if (f->type) {
            resolve_type(s, f->type);
            check_scalar(f->type);
        }
        if (f->index >= 64)
            igw_diag_error(f->loc, "an object has at most 64 fields");
        if (c_reserved(f->name))
            igw_diag_error(f->loc, "field name '%s' is reserved in the generated C", f->name);
        if (f->type && igw_type_resolve(f->type) && igw_type_resolve(f->type)->kind == IGW_T_ARRAY) {
            igw_type *it = igw_type_resolve(igw_type_resolve(f->type)->item);
            if (it && it->kind == IGW_T_ARRAY)
                igw_diag_error(f->loc, "arrays of arrays are not supported; wrap the inner array in an object");
        }
        if (f->type && igw_type_resolve(f->type) && igw_type_resolve(f->type)->kind == IGW_T_ARRAY) {
            igw_type *at = igw_type_resolve(f->type);
            igw_type *it = igw_type_resolve(at->item);
            if (at->unique && it && it->kind != IGW_T_STRING && it->kind != IGW_T_INT && it->kind != IGW_T_ENUM)
                igw_diag_error(f->loc, "unique arrays hold strings, integers or enums");
        }
        if (f->reserved && !f->optional)
            igw_diag_error(f->loc, "a reserved field must be optional");
    }
    FOR(obj->fields, igw_field, f) {
        if (!f->sw)
            continue;
        igw_switch *sw = f->sw;
        sw->on_field = igw_object_field(obj, sw->on);
        igw_type *dt = sw->on_field ? igw_type_resolve(sw->on_field->type) : NULL;
        if (!sw->on_field || !dt || dt->kind != IGW_T_ENUM || sw->on_field->optional) {
            igw_diag_error(f->loc, "switch on '%s': the discriminator must be a required enum field of %s",
                           sw->on, obj->name);
            continue;
        }
        FOR(sw->cases, igw_case, c) {
            resolve_type(s, c->type);
            if (!in_list(&dt->values, c->value))
                igw_diag_error(c->loc, "'%s' is not a value of %s", c->value, sw->on);
            if (c_reserved(igw_c_ident(c->value)))
                igw_diag_error(c->loc, "case '%s' is reserved in the generated C", c->value);
            for (int j = 0; j < c_i; j++)
                if (strcmp(IGW_VEC_AT(sw->cases, igw_case, j)->value, c->value) == 0)
                    igw_diag_error(c->loc, "duplicate case '%s'", c->value);
            igw_type *ct = igw_type_resolve(c->type);
            if (ct && ct->kind != IGW_T_OBJECT)
                igw_diag_error(c->loc, "case '%s' must select an object type", c->value);
            /* Desugar `require x` / `forbid y` into ordinary rules. */
            for (int k = 0; k < 2; k++) {
                igw_vec *names = k ? &c->forbid : &c->require;
                if (!names->n)
                    continue;
                igw_rule *r = igw_xcalloc(1, sizeof *r);
                r->kind = k ? IGW_R_FORBID : IGW_R_REQUIRE;
                r->fields = *names;
                r->origin = "switch";
                r->loc = c->loc;
                r->when = igw_xcalloc(1, sizeof *r->when);
                r->when->op = IGW_C_EQ;
                r->when->field = sw->on;
                r->when->loc = c->loc;
                igw_vec_push(&r->when->values, (void *)c->value);
                igw_vec_push(&obj->rules, r);
            }
        }
        for (int k = 0; k < dt->values.n; k++) {
            const char *v = IGW_VEC_AT(dt->values, char, k);
            bool found = false;
            FOR(sw->cases, igw_case, c)
                if (strcmp(c->value, v) == 0)
                    found = true;
            if (!found)
                igw_diag_error(f->loc, "switch on '%s' has no case for '%s'", sw->on, v);
        }
    }
    FOR(obj->rules, igw_rule, r) {
        if (r->kind == IGW_R_CHECK) {
            const char *unit = NULL;
            resolve_operand(obj, &r->lhs, r->loc, &unit);
            resolve_operand(obj, &r->rhs, r->loc, &unit);
            /* Time constants were parsed in ms; bring them to the fields' unit. */
            igw_operand *ops[2] = {&r->lhs, &r->rhs};
            for (int k = 0; k < 2; k++) {
                if (!ops[k]->is_const || !ops[k]->time_unit)
                    continue;
                if (!unit || (strcmp(unit, "ms") != 0 && strcmp(unit, "s") != 0))
                    igw_diag_error(r->loc, "a time constant needs fields with unit ms or s");
                else if (strcmp(unit, "s") == 0 && ops[k]->value % 1000 != 0)
                    igw_diag_error(r->loc, "constant is not a whole number of seconds");
                else if (strcmp(unit, "s") == 0)
                    ops[k]->value /= 1000;
            }
            if (r->lhs.is_const && r->rhs.is_const)
                igw_diag_error(r->loc, "check compares two constants");
            continue;
        }
        resolve_cond(obj, r->when);
        for (int k = 0; k < r->fields.n; k++) {
            igw_field *f = rule_field(obj, IGW_VEC_AT(r->fields, char, k), r->loc);
            if (!f)
                continue;
            if (!f->optional)
                igw_diag_error(r->loc, "'%s' is required anyway; %s rules apply to optional fields", f->name,
                               r->kind == IGW_R_REQUIRE ? "require" : "forbid");
            igw_vec_push(&r->frefs, f);
        }
    }
    check_contradictions(obj);
}

/* ---- recursion ---- */

/* Depth-first walk over the objects a type holds by value (fields, items,
 * switch cases); color 1 = on the stack, 2 = done. A cycle means an
 * unbounded document shape, which the decoders and C structs cannot hold. */
static bool find_cycle(igw_type *t, char *color, igw_type **via)
{
    t = igw_type_resolve(t);
    while (t && t->kind == IGW_T_ARRAY)
        t = igw_type_resolve(t->item);
    if (!t || t->kind != IGW_T_OBJECT || t->index < 0)
        return false;
    if (color[t->index] == 1) {
        *via = t;
        return true;
    }
    if (color[t->index] == 2)
        return false;
    color[t->index] = 1;
    FOR(t->fields, igw_field, f) {
        if (f->type && find_cycle(f->type, color, via))
            return true;
        if (f->sw)
            FOR(f->sw->cases, igw_case, c)
                if (find_cycle(c->type, color, via))
                    return true;
    }
    color[t->index] = 2;
    return false;
}

/* ---- routes ---- */

/* The path with every {param} written as {}: two routes with one shape
 * would make the second unreachable. */
static char *path_shape(const char *path)
{
    char *r = igw_xstrdup(path), *w = r;
    for (const char *p = path; *p; p++) {
        *w++ = *p;
        if (*p == '{') {
            while (*p && *p != '}')
                p++;
            if (!*p)
                break;
            *w++ = '}';
        }
    }
    *w = '\0';
    return r;
}

static const igw_field *route_header(const igw_route *r, const char *name)
{
    FOR(r->headers, igw_field, h)
        if (strcmp(h->name, name) == 0)
            return h;
    return NULL;
}

/* A header rule's condition: presence of the route's headers, combined. */
static void check_header_cond(const igw_route *r, const igw_cond *c, igw_loc loc)
{
    switch (c->op) {
    case IGW_C_PRESENT:
        if (!route_header(r, c->field))
            igw_diag_error(loc, "'%s' is not a header of route '%s'", c->field, r->name);
        return;
    case IGW_C_AND:
    case IGW_C_OR:
        check_header_cond(r, c->a, loc);
        check_header_cond(r, c->b, loc);
        return;
    case IGW_C_NOT:
        check_header_cond(r, c->a, loc);
        return;
    default:
        igw_diag_error(loc, "a header rule tests presence only (`%s present`)", c->field ? c->field : "header");
        return;
    }
}

static void check_route(igw_schema *s, igw_route *r)
{
    if (!r->method || !r->path) {
        igw_diag_error(r->loc, "route '%s' needs a method and path (post \"/...\")", r->name);
        return;
    }
    if (r->body_limit < 0)
        igw_diag_error(r->loc, "route '%s' needs a body declaration", r->name);
    if (!r->has_auth)
        igw_diag_error(r->loc, "route '%s' needs `auth device|user|none;` (no silent default)", r->name);
    if (!r->has_reply)
        igw_diag_error(r->loc, "route '%s' needs `reply TYPE;` or `reply none;`", r->name);
    if (!r->has_errors)
        igw_diag_error(r->loc, "route '%s' needs `errors ...;`", r->name);
    if (r->params.n > 8)
        igw_diag_error(r->loc, "a route has at most 8 path parameters");
    if (r->headers.n > 16)
        igw_diag_error(r->loc, "a route reads at most 16 headers");
    /* Path syntax: '/'-separated non-empty segments of unreserved characters,
     * or a whole-segment {param}; so it is safe in C, SQL and OpenAPI alike. */
    if (r->path[0] != '/') {
        igw_diag_error(r->loc, "path must start with '/'");
    } else {
        for (const char *seg = r->path + 1;; ) {
            size_t n = strcspn(seg, "/");
            bool param = n >= 2 && seg[0] == '{' && seg[n - 1] == '}';
            const char *allowed = param ? "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
                                        : "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~";
            const char *body = param ? seg + 1 : seg;
            size_t bn = param ? n - 2 : n;
            if (bn == 0 || strspn(body, allowed) < bn) {
                igw_diag_error(r->loc,
                               "path segment '%.*s' must be unreserved characters (A-Z a-z 0-9 - . _ ~) or a whole {param}",
                               (int)n, seg);
                return;
            }
            if (!seg[n])
                break;
            seg += n + 1;
        }
    }
    /* Path parameters: every {x} declared, every declared one used, in order. */
    int np = 0;
    for (const char *p = r->path; (p = strchr(p, '{')) != NULL; np++) {
        const char *e = strchr(p, '}');
        if (!e) {
            igw_diag_error(r->loc, "unterminated '{' in path");
            return;
        }
        char *name = igw_xstrndup(p + 1, (size_t)(e - p - 1));
        if (np >= r->params.n || strcmp(IGW_VEC_AT(r->params, igw_field, np)->name, name) != 0)
            igw_diag_error(r->loc, "path parameter '{%s}' needs a matching `param %s` (in path order)", name, name);
        free(name);
        p = e;
    }
    if (np != r->params.n)
        igw_diag_error(r->loc, "route '%s' declares %d params but its path has %d", r->name, r->params.n, np);
    FOR(r->params, igw_field, f) {
        resolve_type(s, f->type);
        check_scalar(f->type);
        igw_type *t = igw_type_resolve(f->type);
        if (t && t->kind != IGW_T_STRING && t->kind != IGW_T_ENUM)
            igw_diag_error(f->loc, "path parameter '%s' must be a string or enum", f->name);
        mark_used(f->type);
    }
    FOR(r->headers, igw_field, f) {
        resolve_type(s, f->type);
        check_scalar(f->type);
        igw_type *t = igw_type_resolve(f->type);
        if (t && t->kind != IGW_T_STRING && t->kind != IGW_T_ENUM)
            igw_diag_error(f->loc, "header '%s' must be a string or enum", f->name);
        if (!*f->name || strspn(f->name, "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                                            "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(f->name))
            igw_diag_error(f->loc, "header name '%s' is not an HTTP token", f->name);
        for (int j = 0; j < f_i; j++)
            if (strcasecmp(IGW_VEC_AT(r->headers, igw_field, j)->name, f->name) == 0)
                igw_diag_error(f->loc, "duplicate header '%s'", f->name);
        mark_used(f->type);
    }
    /* Header rules: over the route's optional headers, on their presence
     * (a header's value is checked by its type; the rules relate headers). */
    FOR(r->rules, igw_rule, rule) {
        FOR(rule->fields, const char, name) {
            const igw_field *h = route_header(r, name);
            if (!h)
                igw_diag_error(rule->loc, "'%s' is not a header of route '%s'", name, r->name);
            else if (!h->optional)
                igw_diag_error(rule->loc, "header '%s' is required already; a rule applies to optional headers", name);
            else
                igw_vec_push(&rule->frefs, (void *)h);
        }
        if (!rule->when)
            igw_diag_error(rule->loc, "a header rule needs `when` (else declare the header required or drop it)");
        else
            check_header_cond(r, rule->when, rule->loc);
    }
    if (r->body == IGW_BODY_JSON) {
        resolve_type(s, r->body_type);
        igw_type *t = igw_type_resolve(r->body_type);
        if (t && t->kind != IGW_T_OBJECT)
            igw_diag_error(r->loc, "a JSON body must be an object type");
        mark_used(r->body_type);
    }
    if (r->body == IGW_BODY_MULTIPART && r->parts.n == 0)
        igw_diag_error(r->loc, "a multipart body needs at least one part");
    if (r->reply) {
        resolve_type(s, r->reply);
        igw_type *t = igw_type_resolve(r->reply);
        if (t && t->kind != IGW_T_OBJECT)
            igw_diag_error(r->loc, "reply must be an object type");
        mark_used(r->reply);
    }
    if (r->auth_subprotocol && strcmp(r->method, "GET") != 0)
        igw_diag_error(r->loc, "route '%s': `auth user subprotocol` is for a WebSocket route (get)", r->name);
    if (r->handler && c_reserved(r->handler))
        igw_diag_error(r->loc, "handler name '%s' is reserved in C", r->handler);
    FOR(r->errors, const char, name) {
        igw_error *e = igw_schema_error(s, name);
        if (!e)
            igw_diag_error(r->loc, "unknown error class '%s'", name);
        else
            igw_vec_push(&r->error_refs, e);
    }
    char *shape = path_shape(r->path);
    FOR(s->routes, igw_route, o) {
        if (o == r || o->index > r->index || !o->path)
            continue;
        if (strcmp(o->name, r->name) == 0)
            igw_diag_error(r->loc, "duplicate route name '%s'", r->name);
        char *other = path_shape(o->path);
        if (strcmp(other, shape) == 0)
            igw_diag_error(r->loc, "route '%s' has the same path shape as '%s'", r->name, o->name);
        free(other);
    }
    free(shape);
}

/* ---- machines ---- */

static int state_index(igw_machine *m, const char *name)
{
    FOR(m->states, igw_state, st)
        if (strcmp(st->name, name) == 0)
            return st->index;
    return -2;
}

static void check_machine(igw_schema *s, igw_machine *m)
{
    FOR(m->states, igw_state, st) {
        for (int j = 0; j < st->index; j++)
            if (strcmp(IGW_VEC_AT(m->states, igw_state, j)->name, st->name) == 0)
                igw_diag_error(st->loc, "duplicate state '%s'", st->name);
        if (strcmp(st->name, "none") == 0)
            igw_diag_error(st->loc, "'none' names the state before creation; pick another name");
    }
    if (m->guards.n > 32)
        igw_diag_error(m->loc, "a machine has at most 32 guards");
    FOR(m->guards, igw_guard, g)
        for (int j = 0; j < g->index; j++)
            if (strcmp(IGW_VEC_AT(m->guards, igw_guard, j)->name, g->name) == 0)
                igw_diag_error(g->loc, "duplicate guard '%s'", g->name);
    if (!m->illegal) {
        igw_diag_error(m->loc, "machine '%s' needs `illegal <error class>;`", m->name);
    } else if (!(m->illegal_ref = igw_schema_error(s, m->illegal))) {
        igw_diag_error(m->loc, "unknown error class '%s'", m->illegal);
    }
    FOR(m->transitions, igw_transition, t) {
        if (!in_list(&m->triggers, t->trigger))
            igw_vec_push(&m->triggers, (void *)t->trigger);
        FOR(t->from, const char, name) {
            if (strcmp(name, "*") == 0) {
                FOR(m->states, igw_state, st)
                    if (!st->terminal)
                        igw_vec_push(&t->from_idx, (void *)(intptr_t)st->index);
            } else if (strcmp(name, "none") == 0) {
                igw_vec_push(&t->from_idx, (void *)(intptr_t)-1);
            } else {
                int k = state_index(m, name);
                if (k < 0)
                    igw_diag_error(t->loc, "unknown state '%s'", name);
                else
                    igw_vec_push(&t->from_idx, (void *)(intptr_t)k);
            }
        }
        if (t->reject) {
            t->error_ref = igw_schema_error(s, t->error);
            if (!t->error_ref)
                igw_diag_error(t->loc, "unknown error class '%s'", t->error);
        } else {
            t->to_idx = state_index(m, t->to);
            if (t->to_idx < 0)
                igw_diag_error(t->loc, "unknown state '%s'", t->to);
            for (int k = 0; k < t->from_idx.n; k++) {
                intptr_t from = (intptr_t)t->from_idx.v[k];
                if (from >= 0 && t->to_idx >= 0 && from != t->to_idx &&
                    IGW_VEC_AT(m->states, igw_state, from)->terminal)
                    igw_diag_error(t->loc, "terminal state '%s' cannot move to '%s'",
                                   IGW_VEC_AT(m->states, igw_state, from)->name, t->to);
            }
        }
        if (t->guard) {
            FOR(m->guards, igw_guard, g)
                if (strcmp(g->name, t->guard) == 0) {
                    t->guard_idx = g->index;
                    g->used = true;
                }
            if (t->guard_idx < 0)
                igw_diag_error(t->loc, "undeclared guard '%s'", t->guard);
        }
    }
    FOR(m->guards, igw_guard, g)
        if (!g->used)
            igw_diag_error(g->loc, "guard '%s' is never used", g->name);
    /* A row after an unconditional row (or a reject) for the same state and
     * trigger can never fire: the first matching row wins. */
    FOR(m->transitions, igw_transition, t) {
        for (int k = 0; k < t->from_idx.n; k++) {
            intptr_t from = (intptr_t)t->from_idx.v[k];
            for (int e = 0; e < t_i; e++) {
                igw_transition *u = IGW_VEC_AT(m->transitions, igw_transition, e);
                if (strcmp(u->trigger, t->trigger) != 0 || (u->guard && !u->reject))
                    continue;
                bool same = false;
                for (int q = 0; q < u->from_idx.n; q++)
                    same |= (intptr_t)u->from_idx.v[q] == from;
                if (same) {
                    igw_diag_error(t->loc, "'%s' in state '%s' never reaches this row: an earlier row always applies",
                                   t->trigger, from < 0 ? "none" : IGW_VEC_AT(m->states, igw_state, from)->name);
                    e = t_i; /* one report per row and state */
                }
            }
        }
    }
    /* Reachability from creation. */
    int ns = m->states.n;
    bool *seen = igw_xcalloc((size_t)ns + 1, 1);
    bool grew = true;
    while (grew) {
        grew = false;
        FOR(m->transitions, igw_transition, t) {
            if (t->reject || t->to_idx < 0 || seen[t->to_idx])
                continue;
            for (int k = 0; k < t->from_idx.n; k++) {
                intptr_t from = (intptr_t)t->from_idx.v[k];
                if (from == -1 || (from >= 0 && seen[from])) {
                    seen[t->to_idx] = grew = true;
                    break;
                }
            }
        }
    }
    FOR(m->states, igw_state, st)
        if (!seen[st->index])
            igw_diag_error(st->loc, "state '%s' is unreachable from creation", st->name);
    free(seen);
}

/* ---- tables ---- */

/* t's column called name, or NULL. */
static const igw_column *table_column(const igw_table *t, const char *name)
{
    FOR(t->columns, igw_column, c)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

static void check_table(igw_schema *s, igw_table *t)
{
    bool has_pk = false;
    FOR(t->columns, igw_column, c) {
        for (int j = 0; j < c_i; j++)
            if (strcmp(IGW_VEC_AT(t->columns, igw_column, j)->name, c->name) == 0)
                igw_diag_error(c->loc, "duplicate column '%s'", c->name);
        if (c->identity && strcmp(c->sqltype, "bigint") != 0 && strcmp(c->sqltype, "integer") != 0)
            igw_diag_error(c->loc, "an identity column must be bigint or integer");
        if (c->identity && c->nullable)
            igw_diag_error(c->loc, "an identity column cannot be null");
        if (c->from_type) {
            igw_type *ft = NULL;
            igw_type *owner = igw_schema_type(s, c->from_type);
            igw_route *route = NULL;
            FOR(s->routes, igw_route, r)
                if (strcmp(r->name, c->from_type) == 0)
                    route = r;
            if (owner && igw_type_resolve(owner) && igw_type_resolve(owner)->kind == IGW_T_OBJECT) {
                igw_field *f = igw_object_field(igw_type_resolve(owner), c->from_field);
                if (f)
                    ft = f->type ? f->type : NULL;
                if (!f)
                    igw_diag_error(c->loc, "'%s' is not a field of %s", c->from_field, c->from_type);
                else if (!ft)
                    igw_diag_error(c->loc, "'%s.%s' is discriminated and cannot be a column", c->from_type,
                                   c->from_field);
            } else if (route) {
                FOR(route->params, igw_field, f)
                    if (strcmp(f->name, c->from_field) == 0)
                        ft = f->type;
                if (!ft)
                    igw_diag_error(c->loc, "route '%s' has no parameter '%s'", c->from_type, c->from_field);
            } else {
                igw_diag_error(c->loc, "unknown object type or route '%s'", c->from_type);
            }
            c->from = igw_type_resolve(ft);
            if (c->from) {
                const char *want = NULL;
                switch (c->from->kind) {
                case IGW_T_STRING:
                case IGW_T_ENUM: want = "text"; break;
                case IGW_T_INT: want = "bigint"; break;
                case IGW_T_BOOL: want = "boolean"; break;
                case IGW_T_JSON:
                case IGW_T_OBJECT:
                case IGW_T_ARRAY: want = "jsonb"; break;
                default: break;
                }
                if (want && strcmp(want, c->sqltype) != 0)
                    igw_diag_error(c->loc, "column '%s' derives from a field that needs SQL type %s, not %s",
                                   c->name, want, c->sqltype);
            }
        }
        if (c->machine) {
            c->machine_ref = igw_schema_machine(s, c->machine);
            if (!c->machine_ref)
                igw_diag_error(c->loc, "unknown machine '%s'", c->machine);
            else if (strcmp(c->sqltype, "text") != 0)
                igw_diag_error(c->loc, "a machine state column must be text");
        }
    }
    FOR(t->indexes, igw_index, ix) {
        has_pk |= ix->primary;
        FOR(ix->columns, const char, name)
            if (!table_column(t, name))
                igw_diag_error(ix->loc, "unknown column '%s' in %s", name, t->name);
        if (ix->where) {
            const igw_column *w = table_column(t, ix->where);
            if (!w)
                igw_diag_error(ix->loc, "unknown column '%s' in %s", ix->where, t->name);
            else if (ix->where_not_state || ix->where_state) {
                const char *state = ix->where_not_state ? ix->where_not_state : ix->where_state;
                bool known = false;
                if (!w->machine_ref)
                    igw_diag_error(ix->loc, "partial index on %s: column '%s' is not a machine state column",
                                   t->name, ix->where);
                else
                    FOR(w->machine_ref->states, igw_state, st)
                        known |= strcmp(st->name, state) == 0;
                if (w->machine_ref && !known)
                    igw_diag_error(ix->loc, "partial index on %s: '%s' is no state of machine %s", t->name,
                                   state, w->machine_ref->name);
            } else if (!w->nullable)
                igw_diag_error(ix->loc, "partial index on %s: column '%s' is never null", t->name, ix->where);
        }
    }
    if (!has_pk)
        igw_diag_error(t->loc, "table '%s' needs a primary key", t->name);
    FOR(t->notifies, igw_notify, n) {
        for (int j = 0; j < n_i; j++)
            if (strcmp(IGW_VEC_AT(t->notifies, igw_notify, j)->channel, n->channel) == 0)
                igw_diag_error(n->loc, "table '%s' notifies '%s' twice", t->name, n->channel);
        FOR(n->columns, const char, name)
            if (!table_column(t, name))
                igw_diag_error(n->loc, "unknown column '%s' in %s", name, t->name);
    }
}

static void check_references(igw_schema *s, igw_table *t)
{
    FOR(t->columns, igw_column, c) {
        if (!c->ref_table)
            continue;
        igw_table *rt = igw_schema_table(s, c->ref_table);
        if (!rt) {
            igw_diag_error(c->loc, "unknown table '%s'", c->ref_table);
            continue;
        }
        /* Only earlier tables, so schema.sql applies top to bottom. */
        int ri = -1, ti = -1;
        FOR(s->tables, igw_table, x) {
            if (x == rt)
                ri = x_i;
            if (x == t)
                ti = x_i;
        }
        if (ri >= ti)
            igw_diag_error(c->loc, "table '%s' must be declared before '%s' references it", rt->name, t->name);
        if (!table_column(rt, c->ref_column))
            igw_diag_error(c->loc, "table '%s' has no column '%s'", rt->name, c->ref_column);
    }
}

static bool in_set(const char *s, const char *const *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}

/* Rows are looked up by (handle, type, method); a `*` must not hide a
 * specific row, so a wildcard row is alone in its handle (type `*`) or in
 * its handle and type (method `*`). */
static void check_protocol(igw_schema *s, igw_protocol *pr)
{
    static const char *const checks[] = {IGW_PROTO_CHECKS};
    static const char *const returns[] = {IGW_PROTO_RETURNS};
    for (int i = 0; i < s->protocols.n && IGW_VEC_AT(s->protocols, igw_protocol, i) != pr; i++)
        if (strcmp(IGW_VEC_AT(s->protocols, igw_protocol, i)->name, pr->name) == 0) {
            igw_diag_error(pr->loc, "duplicate protocol '%s'", pr->name);
            break;
        }
    if (c_reserved(pr->name))
        igw_diag_error(pr->loc, "protocol name '%s' is reserved in C", pr->name);
    if (!pr->rows.n)
        igw_diag_error(pr->loc, "protocol '%s' has no rows", pr->name);
    FOR(pr->rows, igw_proto_row, r) {
        if (r->check && !in_set(r->check, checks, sizeof checks / sizeof checks[0]))
            igw_diag_error(r->loc, "unknown check '%s' (properties, pack, event, action, subdevices, session, recordings, ring)", r->check);
        if (r->returns && !in_set(r->returns, returns, sizeof returns / sizeof returns[0]))
            igw_diag_error(r->loc, "unknown returns '%s' (properties, config)", r->returns);
        /* A device's answer to a command's downlink ends the exchange: it
         * gets no reply message of its own, and it is one known method. */
        if (r->answers && r->reply)
            igw_diag_error(r->loc, "'%s' answers the downlink '%s' and cannot have a reply (-> %s)", r->method,
                           r->answers, r->reply);
        if (r->params) {
            resolve_type(s, r->params);
            const igw_type *t = igw_type_resolve(r->params);
            if (t && t->kind != IGW_T_OBJECT)
                igw_diag_error(r->loc, "a row's params type must be an object type");
            mark_used(r->params);
        }
        if (r->data) {
            resolve_type(s, r->data);
            const igw_type *t = igw_type_resolve(r->data);
            if (t && t->kind != IGW_T_OBJECT)
                igw_diag_error(r->loc, "a row's data type must be an object type");
            if (!r->reply)
                igw_diag_error(r->loc, "'%s' has reply data but no reply (-> METHOD)", r->method);
            if (r->returns)
                igw_diag_error(r->loc, "'%s' returns %s: its data is that, not a type", r->method, r->returns);
            mark_used(r->data);
        }
        if (r->answers && (!strcmp(r->type, "*") || !strcmp(r->method, "*")))
            igw_diag_error(r->loc, "a row that answers a downlink names its type and method (no *)");
        for (int j = 0; j < r_i; j++) {
            igw_proto_row *o = IGW_VEC_AT(pr->rows, igw_proto_row, j);
            if (strcmp(o->handle, r->handle) != 0)
                continue;
            if (!strcmp(o->type, "*") || !strcmp(r->type, "*")) {
                igw_diag_error(r->loc, "handle '%s' has a row for any type (*) and another row", r->handle);
                break;
            }
            if (strcmp(o->type, r->type) != 0)
                continue;
            if (!strcmp(o->method, "*") || !strcmp(r->method, "*")) {
                igw_diag_error(r->loc, "'%s %s' has a row for any method (*) and another row", r->handle, r->type);
                break;
            }
            if (!strcmp(o->method, r->method)) {
                igw_diag_error(r->loc, "duplicate row '%s %s %s'", r->handle, r->type, r->method);
                break;
            }
        }
    }
    /* Downlinks: named levels, one message type each, that carries the
     * `method` and `msgToken` the platform sets. */
    FOR(pr->downs, igw_proto_down, d) {
        for (int k = 0; k < d_i; k++) {
            const igw_proto_down *o = IGW_VEC_AT(pr->downs, igw_proto_down, k);
            if (!strcmp(o->handle, d->handle) && !strcmp(o->type, d->type) && !strcmp(o->method, d->method))
                igw_diag_error(d->loc, "duplicate downlink '%s %s %s'", d->handle, d->type, d->method);
        }
        resolve_type(s, d->message);
        const igw_type *t = igw_type_resolve(d->message);
        if (!t)
            continue;
        if (t->kind != IGW_T_OBJECT) {
            igw_diag_error(d->loc, "a downlink's message must be an object type");
            continue;
        }
        mark_used(d->message);
        bool method = false, token = false;
        FOR(t->fields, igw_field, f) {
            const igw_type *ft = f->type ? igw_type_resolve(f->type) : NULL;
            if (!strcmp(f->name, "method"))
                method = ft && ft->kind == IGW_T_STRING && !f->optional;
            if (!strcmp(f->name, "msgToken"))
                token = ft && ft->kind == IGW_T_STRING && !f->optional;
        }
        if (!method || !token)
            igw_diag_error(d->loc, "downlink message '%s' needs required string fields method and msgToken", t->name);
        FOR(s->protocols, igw_protocol, op)
            FOR(op->downs, igw_proto_down, o) {
                if (o == d)
                    goto next_down;
                if (igw_type_resolve(o->message) == t) {
                    igw_diag_error(d->loc, "message '%s' already names another downlink", t->name);
                    goto next_down;
                }
            }
    next_down:;
    }
}

/* ---- method bindings ---- */

static void check_methods(igw_schema *s, igw_methods *m)
{
    static const char *const traits[] = {IGW_METHOD_TRAITS};
    for (int j = 0; j < s->methods.n && IGW_VEC_AT(s->methods, igw_methods, j) != m; j++)
        if (strcmp(IGW_VEC_AT(s->methods, igw_methods, j)->on, m->on) == 0) {
            igw_diag_error(m->loc, "enum '%s' already has a methods block", m->on);
            break;
        }
    igw_type *named = igw_schema_type(s, m->on);
    igw_type *t = named ? igw_type_resolve(named) : NULL;
    if (!named) {
        igw_diag_error(m->loc, "unknown enum '%s'", m->on);
        return;
    }
    if (!t || t->kind != IGW_T_ENUM) {
        igw_diag_error(m->loc, "'%s' is not an enum: methods bind the values of an enum", m->on);
        return;
    }
    m->enum_t = t;
    named->used = t->used = true;
    if (!m->binds.n)
        igw_diag_error(m->loc, "methods of '%s' bind no value", m->on);
    FOR(m->binds, igw_method_bind, b) {
        if (!in_list(&t->values, b->value))
            igw_diag_error(b->loc, "unknown method '%s': not a value of enum '%s'", b->value, m->on);
        for (int j = 0; j < b_i; j++)
            if (strcmp(IGW_VEC_AT(m->binds, igw_method_bind, j)->value, b->value) == 0) {
                igw_diag_error(b->loc, "method '%s' is bound twice", b->value);
                break;
            }
        if (c_reserved(b->handler))
            igw_diag_error(b->loc, "handler name '%s' is reserved in C", b->handler);
        /* One name, one signature: a route handler and a method handler differ. */
        FOR(s->routes, igw_route, r)
            if (r->handler && strcmp(r->handler, b->handler) == 0) {
                igw_diag_error(b->loc, "handler '%s' is also the handler of route '%s' (their signatures differ)",
                               b->handler, r->name);
                break;
            }
        FOR(b->traits, const char, tr) {
            if (!in_set(tr, traits, sizeof traits / sizeof traits[0]))
                igw_diag_error(b->loc, "unknown trait '%s' (device, session, receipt, reads, retained)", tr);
            for (int j = 0; j < tr_i; j++)
                if (strcmp(IGW_VEC_AT(b->traits, const char, j), tr) == 0) {
                    igw_diag_error(b->loc, "trait '%s' given twice", tr);
                    break;
                }
        }
        /* A device command reaches its device by one declared downlink. */
        bool device = in_list(&b->traits, "device");
        if (b->downlink) {
            FOR(s->protocols, igw_protocol, pr)
                FOR(pr->downs, igw_proto_down, d) {
                    const igw_type *mt = igw_type_resolve(d->message);
                    if (mt && mt->name && strcmp(mt->name, b->downlink) == 0 && !b->down) {
                        b->down = d;
                        b->down_in = pr;
                    }
                }
            if (!b->down)
                igw_diag_error(b->loc, "no protocol declares a downlink with message '%s'", b->downlink);
        }
        if (device && !b->downlink)
            igw_diag_error(b->loc, "device method '%s' needs `downlink MESSAGE` (how it reaches the device)", b->value);
        if (!device && b->downlink)
            igw_diag_error(b->loc, "method '%s' has a downlink but not the device trait", b->value);
        if (in_list(&b->traits, "receipt") && !in_list(&b->traits, "session"))
            igw_diag_error(b->loc, "method '%s': a receipt is the session engine's (needs the session trait)", b->value);
        if (device && in_list(&b->traits, "session"))
            igw_diag_error(b->loc, "method '%s' is a device command or a session command, not both", b->value);
        if (in_list(&b->traits, "reads") && !in_list(&b->traits, "session"))
            igw_diag_error(b->loc, "method '%s': `reads` is the session engine's own read (needs the session trait)",
                           b->value);
        /* A session handler runs on the engine with another signature. */
        for (int j = 0; j < b_i; j++) {
            igw_method_bind *o = IGW_VEC_AT(m->binds, igw_method_bind, j);
            if (strcmp(o->handler, b->handler) == 0 &&
                in_list(&o->traits, "session") != in_list(&b->traits, "session")) {
                igw_diag_error(b->loc, "handler '%s' is bound with and without the session trait (two signatures)",
                               b->handler);
                break;
            }
        }
    }
}

/* ---- purposes ---- */

static const igw_guard *purpose_guard(const igw_purposes *ps, const char *name)
{
    FOR(ps->guards, igw_guard, g)
        if (strcmp(g->name, name) == 0)
            return g;
    return NULL;
}

static void check_purpose_when(const igw_purposes *ps, const char *when, igw_loc loc)
{
    igw_guard *g = when ? (igw_guard *)purpose_guard(ps, when) : NULL;
    if (when && !g)
        igw_diag_error(loc, "unknown guard '%s' of purposes '%s'", when, ps->on);
    if (g)
        g->used = true;
}

static void check_purposes(igw_schema *s, igw_purposes *ps)
{
    static const char *const access[] = {IGW_PURPOSE_ACCESS}, *const legs[] = {IGW_PURPOSE_LEGS},
                             *const dirs[] = {IGW_PURPOSE_DIRECTIONS};
    if (s->purposes.n > 1 && IGW_VEC_AT(s->purposes, igw_purposes, 0) != ps)
        igw_diag_error(ps->loc, "the schema has one purposes block");
    igw_type *named = igw_schema_type(s, ps->on), *t = named ? igw_type_resolve(named) : NULL;
    if (!t || t->kind != IGW_T_ENUM) {
        igw_diag_error(ps->loc, "'%s' is not an enum: purposes describe the values of an enum", ps->on);
        return;
    }
    ps->enum_t = t;
    named->used = t->used = true;
    igw_type *cn = igw_schema_type(s, ps->capability), *ct = cn ? igw_type_resolve(cn) : NULL;
    if (!ct || ct->kind != IGW_T_OBJECT) {
        igw_diag_error(ps->loc, "capability '%s' is not an object type", ps->capability);
        return;
    }
    ps->cap_t = ct;
    if (ps->processor) {
        igw_type *pn = igw_schema_type(s, ps->processor), *pt = pn ? igw_type_resolve(pn) : NULL;
        if (!pt || pt->kind != IGW_T_ENUM)
            igw_diag_error(ps->loc, "processors '%s' is not an enum type", ps->processor);
        else
            ps->proc_t = pt, pn->used = pt->used = true;
    }
    igw_type *kinds = igw_type_resolve(igw_schema_type(s, "TrackKind"));
    FOR(ps->guards, igw_guard, g) {
        if (c_reserved(g->name))
            igw_diag_error(g->loc, "guard name '%s' is reserved in C", g->name);
        for (int j = 0; j < g_i; j++)
            if (strcmp(IGW_VEC_AT(ps->guards, igw_guard, j)->name, g->name) == 0)
                igw_diag_error(g->loc, "duplicate guard '%s'", g->name);
    }
    FOR(ps->rows, igw_purpose_row, r) {
        if (!in_list(&t->values, r->value))
            igw_diag_error(r->loc, "unknown purpose '%s': not a value of enum '%s'", r->value, ps->on);
        for (int j = 0; j < r_i; j++)
            if (strcmp(IGW_VEC_AT(ps->rows, igw_purpose_row, j)->value, r->value) == 0)
                igw_diag_error(r->loc, "purpose '%s' is described twice", r->value);
        if (!r->hooks)
            igw_diag_error(r->loc, "purpose '%s' needs `hooks NAME` (its behaviour)", r->value);
        else if (c_reserved(r->hooks))
            igw_diag_error(r->loc, "hooks name '%s' is reserved in C", r->hooks);
        if (!r->leg || !in_set(r->leg, legs, sizeof legs / sizeof legs[0]))
            igw_diag_error(r->loc, "purpose '%s' needs `leg shared` or `leg own`", r->value);
        if (!r->access.n)
            igw_diag_error(r->loc, "purpose '%s' needs `access` (who may open it)", r->value);
        if (r->viewers && !in_list(&t->values, r->viewers))
            igw_diag_error(r->loc, "viewers '%s' is not a value of enum '%s'", r->viewers, ps->on);
        if (r->viewers && r->leg && strcmp(r->leg, "shared") != 0)
            igw_diag_error(r->loc, "purpose '%s': viewers join a shared leg (`leg shared`)", r->value);
        FOR(r->access, const char, a)
            if (!in_set(a, access, sizeof access / sizeof access[0]))
                igw_diag_error(r->loc, "unknown access '%s' (owner, grant, callMember)", a);
        FOR(r->machines, const char, m)
            if (!igw_schema_machine(s, m))
                igw_diag_error(r->loc, "unknown machine '%s'", m);
        if (!r->tracks.n)
            igw_diag_error(r->loc, "purpose '%s' asks the camera for no track", r->value);
        FOR(r->tracks, igw_purpose_track, tr) {
            if (kinds && kinds->kind == IGW_T_ENUM && !in_list(&kinds->values, tr->kind))
                igw_diag_error(tr->loc, "unknown track kind '%s' (a value of TrackKind)", tr->kind);
            if (!in_set(tr->direction, dirs, sizeof dirs / sizeof dirs[0]))
                igw_diag_error(tr->loc, "unknown direction '%s' (sendonly, recvonly)", tr->direction);
            for (int j = 0; j < tr_i; j++)
                if (strcmp(IGW_VEC_AT(r->tracks, igw_purpose_track, j)->id, tr->id) == 0)
                    igw_diag_error(tr->loc, "track '%s' is listed twice", tr->id);
            check_purpose_when(ps, tr->when, tr->loc);
        }
        /* A vision source is the camera's video; a side conversation's
         * audio is the application's and a processor's, so the camera plays
         * nothing of it. */
        bool video_sent = false, audio_played = false;
        FOR(r->tracks, igw_purpose_track, tr) {
            video_sent = video_sent || (strcmp(tr->kind, "video") == 0 && strcmp(tr->direction, "sendonly") == 0);
            audio_played = audio_played || (strcmp(tr->kind, "audio") == 0 && strcmp(tr->direction, "recvonly") == 0);
        }
        if (r->vision && !video_sent)
            igw_diag_error(r->loc, "purpose '%s' is a vision source without a video track the camera sends", r->value);
        if (r->side && audio_played)
            igw_diag_error(r->loc, "purpose '%s' has a side conversation and an audio track the camera plays", r->value);
        /* A processor hears the application's voice: its side conversation
         * or what it sends the camera's speaker. */
        if (r->processors.n && !ps->processor)
            igw_diag_error(r->loc, "purpose '%s' lists processors but the block names no `processors ENUM`", r->value);
        if (r->processors.n && !r->side && !audio_played)
            igw_diag_error(r->loc, "purpose '%s' runs processors but the application sends it no audio (side, or a track the camera plays)",
                           r->value);
        FOR(r->processors, const char, pr) {
            if (ps->proc_t && !in_list(&ps->proc_t->values, pr))
                igw_diag_error(r->loc, "unknown processor '%s': not a value of enum '%s'", pr, ps->processor);
            for (int j = 0; j < pr_i; j++)
                if (strcmp(IGW_VEC_AT(r->processors, const char, j), pr) == 0)
                    igw_diag_error(r->loc, "processor '%s' is listed twice", pr);
        }
        FOR(r->preflights, igw_purpose_preflight, f) {
            f->fref = igw_object_field(ct, f->field);
            igw_type *ft = f->fref && f->fref->type ? igw_type_resolve(f->fref->type) : NULL;
            if (!ft || ft->kind != IGW_T_BOOL)
                igw_diag_error(f->loc, "preflight '%s' is not a bool field of '%s'", f->field, ps->capability);
            check_purpose_when(ps, f->when, f->loc);
        }
    }
    FOR(ps->guards, igw_guard, g)
        if (!g->used)
            igw_diag_error(g->loc, "guard '%s' is never used", g->name);
}

int igw_sema(igw_schema *s)
{
    int before = igw_diag_count();
    unsigned roles = 0;
    FOR(s->errors, igw_error, e) {
        for (int j = 0; j < e->index; j++) {
            igw_error *o = IGW_VEC_AT(s->errors, igw_error, j);
            if (strcmp(o->name, e->name) == 0)
                igw_diag_error(e->loc, "duplicate error class '%s'", e->name);
            else if (o->code == e->code)
                igw_diag_error(e->loc, "error code %lld already used by '%s'", (long long)e->code, o->name);
        }
        if (e->roles & roles)
            igw_diag_error(e->loc, "a role of '%s' is already given to another class", e->name);
        roles |= e->roles;
        if (e->http < 100 || e->http > 599)
            igw_diag_error(e->loc, "HTTP status %d out of range", e->http);
    }
    static const struct { unsigned role; const char *name; } need[] = {
        {IGW_ROLE_OK, "ok"}, {IGW_ROLE_DECODE, "decode"}, {IGW_ROLE_RESERVED, "reserved"},
        {IGW_ROLE_BODY_CAP, "body_cap"}, {IGW_ROLE_NO_ROUTE, "no_route"}, {IGW_ROLE_METHOD, "method"},
        {IGW_ROLE_MEDIA, "media_type"}, {IGW_ROLE_INTERNAL, "internal"},
    };
    igw_loc roles_at = {IGW_VEC_AT(s->files, const char, 0), 1, 1};
    if (s->errors.n)
        roles_at = IGW_VEC_AT(s->errors, igw_error, 0)->loc;
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!(roles & need[i].role))
            igw_diag_error(roles_at, "no error class is `for %s`", need[i].name);
    /* The gate role is needed only where a route is gated. */
    FOR(s->routes, igw_route, r)
        if (r->gate_signaling && !(roles & IGW_ROLE_GATE)) {
            igw_diag_error(r->loc, "route '%s' is gated but no error class is `for gate`", r->name);
            break;
        }

    FOR(s->types, igw_type, t) {
        t->index = t_i;
        for (int j = 0; j < t_i; j++)
            if (strcmp(IGW_VEC_AT(s->types, igw_type, j)->name, t->name) == 0)
                igw_diag_error(t->loc, "duplicate type '%s'", t->name);
    }
    FOR(s->types, igw_type, t) {
        resolve_type(s, t);
        if (t->kind != IGW_T_OBJECT && t->kind != IGW_T_REF)
            check_scalar(t);
    }
    /* Reference cycles (type A = B; type B = A) would hang resolution. */
    FOR(s->types, igw_type, t) {
        igw_type *x = t;
        int hops = 0;
        while (x && x->kind == IGW_T_REF && hops < 64) {
            x = x->target;
            hops++;
        }
        if (hops >= 64)
            igw_diag_error(t->loc, "type '%s' is defined in terms of itself", t->name);
    }
    if (igw_diag_count() != before)
        return igw_diag_count() - before;
    FOR(s->types, igw_type, t)
        if (t->kind == IGW_T_OBJECT)
            check_object(s, t);
    if (igw_diag_count() == before) {
        char *color = igw_xcalloc((size_t)s->types.n + 1, 1);
        FOR(s->types, igw_type, t) {
            igw_type *via = NULL;
            if (t->kind == IGW_T_OBJECT && !color[t->index] && find_cycle(t, color, &via)) {
                igw_diag_error(via->loc, "type '%s' contains itself; recursive types are not supported", via->name);
                break;
            }
        }
        free(color);
    }
    FOR(s->routes, igw_route, r)
        check_route(s, r);
    FOR(s->events, igw_event, e) {
        resolve_type(s, e->type);
        igw_type *t = igw_type_resolve(e->type);
        if (t && t->kind != IGW_T_OBJECT)
            igw_diag_error(e->loc, "an event must be an object type");
        mark_used(e->type);
    }
    FOR(s->machines, igw_machine, m) {
        for (int j = 0; j < m_i; j++)
            if (strcmp(IGW_VEC_AT(s->machines, igw_machine, j)->name, m->name) == 0)
                igw_diag_error(m->loc, "duplicate machine '%s'", m->name);
        check_machine(s, m);
    }
    FOR(s->tables, igw_table, t) {
        for (int j = 0; j < t_i; j++)
            if (strcmp(IGW_VEC_AT(s->tables, igw_table, j)->name, t->name) == 0)
                igw_diag_error(t->loc, "duplicate table '%s'", t->name);
        check_table(s, t);
    }
    FOR(s->tables, igw_table, t)
        check_references(s, t);
    FOR(s->protocols, igw_protocol, pr)
        check_protocol(s, pr);
    FOR(s->methods, igw_methods, m)
        check_methods(s, m);
    FOR(s->purposes, igw_purposes, ps)
        check_purposes(s, ps);
    FOR(s->types, igw_type, t)
        if (!t->used && !t->synthesized)
            igw_diag_error(t->loc, "type '%s' is never used", t->name);
    return igw_diag_count() - before;
}
