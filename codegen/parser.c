/* parser.c - recursive-descent parser of the schema language.
 *
 * One token of lookahead. Keywords are contextual identifiers, so `accept_kw`
 * compares identifier text. The grammar is in docs/schema-language.md. On the
 * first syntax error the file is abandoned: later errors would mostly be
 * echoes of the first, which is what ninja does too. */
#include "parser.h"

#include <setjmp.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lexer.h"
#include "util.h"

typedef struct parser {
    igw_lexer lx;
    igw_token tok;
    igw_schema *s;
    jmp_buf fail;
    int nesting; /* of type expressions and conditions; bounded */
} parser;

#define MAX_NESTING 32

/* Token texts are owned by the parser until a rule takes them (ident,
 * value, string): what is still here when the next token comes was a
 * keyword or punctuation and is released. */
static void next(parser *p)
{
    if (p->tok.kind == TOK_IDENT || p->tok.kind == TOK_STRING)
        free((char *)p->tok.text);
    p->tok = igw_lexer_next(&p->lx);
    if (p->tok.kind == TOK_ERROR) {
        igw_diag_error(p->tok.loc, "%s", p->tok.text);
        longjmp(p->fail, 1);
    }
}

static void __attribute__((noreturn, format(printf, 2, 3))) fail(parser *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    igw_diag_error(p->tok.loc, "%s", msg);
    longjmp(p->fail, 1);
}

static const char *found(const parser *p)
{
    static char buf[128];
    if (p->tok.kind == TOK_IDENT)
        snprintf(buf, sizeof buf, "'%s'", p->tok.text);
    else if (p->tok.kind == TOK_STRING)
        snprintf(buf, sizeof buf, "string \"%.60s\"", p->tok.text);
    else
        snprintf(buf, sizeof buf, "%s", igw_tok_name(p->tok.kind));
    return buf;
}

static bool is_kw(const parser *p, const char *kw)
{
    return p->tok.kind == TOK_IDENT && strcmp(p->tok.text, kw) == 0;
}

static bool accept_kw(parser *p, const char *kw)
{
    if (!is_kw(p, kw))
        return false;
    next(p);
    return true;
}

static void expect_kw(parser *p, const char *kw)
{
    if (!accept_kw(p, kw))
        fail(p, "expected '%s', found %s", kw, found(p));
}

static bool accept(parser *p, igw_tok kind)
{
    if (p->tok.kind != kind)
        return false;
    next(p);
    return true;
}

static void expect(parser *p, igw_tok kind)
{
    if (!accept(p, kind))
        fail(p, "expected %s, found %s", igw_tok_name(kind), found(p));
}

static const char *ident(parser *p, const char *what)
{
    if (p->tok.kind != TOK_IDENT)
        fail(p, "expected %s, found %s", what, found(p));
    const char *r = p->tok.text;
    p->tok.text = NULL; /* taken */
    next(p);
    return r;
}

static const char *opt_doc(parser *p)
{
    if (p->tok.kind != TOK_STRING)
        return NULL;
    const char *r = p->tok.text;
    p->tok.text = NULL;
    next(p);
    return r;
}

static const char *string(parser *p, const char *what)
{
    if (p->tok.kind != TOK_STRING)
        fail(p, "expected %s, found %s", what, found(p));
    return opt_doc(p);
}

/* An enum value or switch label: identifier or string (for dotted names). */
static const char *value(parser *p)
{
    if (p->tok.kind == TOK_STRING || p->tok.kind == TOK_IDENT) {
        const char *r = p->tok.text;
        p->tok.text = NULL;
        next(p);
        return r;
    }
    fail(p, "expected a value (identifier or string), found %s", found(p));
}

static int64_t integer(parser *p)
{
    bool neg = accept(p, TOK_MINUS);
    if (p->tok.kind != TOK_INT)
        fail(p, "expected an integer, found %s", found(p));
    int64_t v = p->tok.value;
    if (v > IGW_SAFE_MAX)
        fail(p, "integer beyond 9007199254740991 (2^53-1)");
    next(p);
    return neg ? -v : v;
}

/* A range bound: integer or `max` (2^53-1). */
static int64_t bound(parser *p)
{
    if (accept_kw(p, "max"))
        return IGW_SAFE_MAX;
    return integer(p);
}

static void range(parser *p, int64_t *lo, int64_t *hi)
{
    *lo = bound(p);
    expect(p, TOK_DOTDOT);
    *hi = bound(p);
}

/* A size with its mandatory unit: `4096 bytes`, `64 KiB`, `16 MiB`. */
static int64_t size(parser *p)
{
    igw_loc at = p->tok.loc;
    int64_t v = integer(p);
    int64_t mul;
    if (accept_kw(p, "bytes"))
        mul = 1;
    else if (accept_kw(p, "KiB"))
        mul = 1024;
    else if (accept_kw(p, "MiB"))
        mul = 1024 * 1024;
    else
        fail(p, "a size needs a unit (bytes, KiB or MiB), found %s", found(p));
    if (v < 0 || v > IGW_SAFE_MAX / mul) {
        igw_diag_error(at, "size out of range");
        longjmp(p->fail, 1);
    }
    return v * mul;
}

static igw_type *new_type(parser *p, igw_typekind kind)
{
    igw_type *t = igw_xcalloc(1, sizeof *t);
    t->kind = kind;
    t->loc = p->tok.loc;
    t->index = -1;
    return t;
}

static void members(parser *p, igw_type *obj);

static igw_type *type_expr_inner(parser *p, const char *owner, const char *field);

/* Types nest (array of array of ...); a bound keeps recursion finite. */
static igw_type *type_expr(parser *p, const char *owner, const char *field)
{
    if (++p->nesting > MAX_NESTING)
        fail(p, "type nested deeper than %d levels", MAX_NESTING);
    igw_type *t = type_expr_inner(p, owner, field);
    p->nesting--;
    return t;
}

static igw_type *type_expr_inner(parser *p, const char *owner, const char *field)
{
    igw_type *t;
    if (accept_kw(p, "string")) {
        t = new_type(p, IGW_T_STRING);
        t->min_len = 0;
        t->max_len = -1; /* sema requires an explicit bound unless a format implies one */
        if (accept_kw(p, "bytes"))
            range(p, &t->min_len, &t->max_len);
        if (accept_kw(p, "format")) {
            const char *f = ident(p, "format name");
            if (strcmp(f, "canonical_id") == 0)
                t->format = IGW_FMT_CANONICAL_ID;
            else if (strcmp(f, "bcp47") == 0)
                t->format = IGW_FMT_BCP47;
            else if (strcmp(f, "identifier") == 0)
                t->format = IGW_FMT_IDENTIFIER;
            else
                fail(p, "unknown format '%s' (canonical_id, bcp47, identifier)", f);
            free((char *)f);
        }
    } else if (accept_kw(p, "int")) {
        t = new_type(p, IGW_T_INT);
        t->min = -IGW_SAFE_MAX;
        t->max = IGW_SAFE_MAX;
        if (p->tok.kind == TOK_INT || p->tok.kind == TOK_MINUS || is_kw(p, "max"))
            range(p, &t->min, &t->max);
        if (accept_kw(p, "unit")) {
            const char *u = ident(p, "unit");
            if (strcmp(u, "ms") != 0 && strcmp(u, "s") != 0 && strcmp(u, "bytes") != 0)
                fail(p, "unknown unit '%s' (ms, s, bytes)", u);
            t->unit = u;
        }
    } else if (accept_kw(p, "bool")) {
        t = new_type(p, IGW_T_BOOL);
    } else if (accept_kw(p, "array")) {
        t = new_type(p, IGW_T_ARRAY);
        expect_kw(p, "of");
        t->item = type_expr(p, owner, field);
        t->min_items = 0;
        t->max_items = -1;
        if (accept_kw(p, "items"))
            range(p, &t->min_items, &t->max_items);
        t->unique = accept_kw(p, "unique");
    } else if (accept_kw(p, "json")) {
        t = new_type(p, IGW_T_JSON);
        if (accept_kw(p, "object"))
            t->json_kind = IGW_JSON_OBJECT;
        else if (accept_kw(p, "any"))
            t->json_kind = IGW_JSON_ANY;
        else
            fail(p, "expected 'object' or 'any' after 'json', found %s", found(p));
        expect_kw(p, "depth");
        t->max_depth = integer(p);
        expect_kw(p, "size");
        t->max_bytes = size(p);
    } else if (accept_kw(p, "enum")) {
        /* Inline enum: named like inline objects so C gets one enum type. */
        t = new_type(p, IGW_T_ENUM);
        expect(p, TOK_LBRACE);
        do {
            if (p->tok.kind == TOK_RBRACE)
                break;
            igw_vec_push(&t->values, (void *)value(p));
        } while (accept(p, TOK_COMMA));
        expect(p, TOK_RBRACE);
        t->name = igw_xprintf("%s_%s", owner ? owner : "Anon", field ? field : "value");
        t->synthesized = true;
        igw_vec_push(&p->s->types, t);
        igw_type *ref = new_type(p, IGW_T_REF);
        ref->ref = t->name;
        ref->loc = t->loc;
        return ref;
    } else if (is_kw(p, "object")) {
        /* Inline object: registered as a named type so every emitter sees one
         * kind of object; the name joins owner and field. */
        t = new_type(p, IGW_T_OBJECT);
        next(p);
        char *name = igw_xprintf("%s_%s", owner ? owner : "Anon", field ? field : "value");
        t->name = name;
        t->synthesized = true;
        expect(p, TOK_LBRACE);
        members(p, t);
        expect(p, TOK_RBRACE);
        igw_vec_push(&p->s->types, t);
        igw_type *ref = new_type(p, IGW_T_REF);
        ref->ref = name;
        ref->loc = t->loc;
        return ref;
    } else if (p->tok.kind == TOK_IDENT) {
        t = new_type(p, IGW_T_REF);
        t->ref = ident(p, "type name");
    } else {
        fail(p, "expected a type, found %s", found(p));
    }
    return t;
}

static void name_list(parser *p, igw_vec *out)
{
    do
        igw_vec_push(out, (void *)ident(p, "field name"));
    while (accept(p, TOK_COMMA));
}

static igw_cond *cond(parser *p);

static igw_cond *unary(parser *p)
{
    if (p->nesting + 1 > MAX_NESTING)
        fail(p, "condition nested deeper than %d levels", MAX_NESTING);
    igw_cond *c = igw_xcalloc(1, sizeof *c);
    c->loc = p->tok.loc;
    if (accept_kw(p, "not")) {
        c->op = IGW_C_NOT;
        p->nesting++;
        c->a = unary(p);
        p->nesting--;
        return c;
    }
    if (accept(p, TOK_LPAREN)) {
        free(c);
        p->nesting++;
        igw_cond *r = cond(p);
        p->nesting--;
        expect(p, TOK_RPAREN);
        return r;
    }
    c->field = ident(p, "field name");
    if (accept(p, TOK_EQ)) {
        c->op = IGW_C_EQ;
        igw_vec_push(&c->values, (void *)value(p));
    } else if (accept(p, TOK_NE)) {
        c->op = IGW_C_NE;
        igw_vec_push(&c->values, (void *)value(p));
    } else if (accept_kw(p, "in")) {
        c->op = IGW_C_IN;
        expect(p, TOK_LPAREN);
        do
            igw_vec_push(&c->values, (void *)value(p));
        while (accept(p, TOK_COMMA));
        expect(p, TOK_RPAREN);
    } else if (accept_kw(p, "present")) {
        c->op = IGW_C_PRESENT;
    } else {
        fail(p, "expected '=', '!=', 'in' or 'present' after a field, found %s", found(p));
    }
    return c;
}

static igw_cond *binary(parser *p, igw_cond *a, igw_condop op, igw_cond *b)
{
    igw_cond *c = igw_xcalloc(1, sizeof *c);
    c->op = op;
    c->a = a;
    c->b = b;
    c->loc = a->loc;
    (void)p;
    return c;
}

/* and/or chains build left-deep trees: a bound on their terms keeps every
 * recursive walk over a condition (sema, emitters) shallow. */
#define MAX_TERMS 32

static igw_cond *conjunction(parser *p)
{
    igw_cond *c = unary(p);
    for (int n = 1; accept_kw(p, "and"); n++) {
        if (n >= MAX_TERMS)
            fail(p, "a condition has at most %d terms", MAX_TERMS);
        c = binary(p, c, IGW_C_AND, unary(p));
    }
    return c;
}

static igw_cond *cond(parser *p)
{
    igw_cond *c = conjunction(p);
    for (int n = 1; accept_kw(p, "or"); n++) {
        if (n >= MAX_TERMS)
            fail(p, "a condition has at most %d terms", MAX_TERMS);
        c = binary(p, c, IGW_C_OR, conjunction(p));
    }
    return c;
}

/* Check operand: `field`, `field - field`, or a constant with optional unit. */
static void operand(parser *p, igw_operand *o)
{
    memset(o, 0, sizeof *o);
    if (p->tok.kind == TOK_INT || p->tok.kind == TOK_MINUS || is_kw(p, "max")) {
        o->is_const = true;
        o->value = bound(p);
        static const struct { const char *unit; int64_t mul; } units[] = {
            {"ms", 1}, {"s", 1000}, {"min", 60000}, {"h", 3600000}, {"d", 86400000},
        };
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
            if (accept_kw(p, units[i].unit)) {
                if (o->value > IGW_SAFE_MAX / units[i].mul)
                    fail(p, "constant out of range");
                o->value *= units[i].mul;
                o->time_unit = true;
                break;
            }
        }
        return;
    }
    o->a = ident(p, "field name or constant");
    if (accept(p, TOK_MINUS))
        o->b = ident(p, "field name");
}

static igw_rule *new_rule(parser *p, igw_rulekind kind)
{
    igw_rule *r = igw_xcalloc(1, sizeof *r);
    r->kind = kind;
    r->loc = p->tok.loc;
    return r;
}

static void members(parser *p, igw_type *obj)
{
    while (p->tok.kind == TOK_IDENT) {
        if (is_kw(p, "require") || is_kw(p, "forbid")) {
            igw_rule *r = new_rule(p, is_kw(p, "require") ? IGW_R_REQUIRE : IGW_R_FORBID);
            next(p);
            name_list(p, &r->fields);
            if (accept_kw(p, "when"))
                r->when = cond(p);
            expect(p, TOK_SEMI);
            igw_vec_push(&obj->rules, r);
            continue;
        }
        if (is_kw(p, "check")) {
            igw_rule *r = new_rule(p, IGW_R_CHECK);
            next(p);
            operand(p, &r->lhs);
            if (accept(p, TOK_LT))
                r->cmp = IGW_CMP_LT;
            else if (accept(p, TOK_LE))
                r->cmp = IGW_CMP_LE;
            else if (accept(p, TOK_GT))
                r->cmp = IGW_CMP_GT;
            else if (accept(p, TOK_GE))
                r->cmp = IGW_CMP_GE;
            else
                fail(p, "expected a comparison (<, <=, >, >=), found %s", found(p));
            operand(p, &r->rhs);
            expect(p, TOK_SEMI);
            igw_vec_push(&obj->rules, r);
            continue;
        }
        igw_field *f = igw_xcalloc(1, sizeof *f);
        f->loc = p->tok.loc;
        f->name = ident(p, "field name");
        f->index = obj->fields.n;
        for (;;) {
            if (accept_kw(p, "optional"))
                f->optional = true;
            else if (accept_kw(p, "reserved"))
                f->reserved = true;
            else
                break;
        }
        if (accept_kw(p, "switch")) {
            igw_switch *sw = igw_xcalloc(1, sizeof *sw);
            sw->on = ident(p, "discriminator field");
            expect(p, TOK_LBRACE);
            while (p->tok.kind != TOK_RBRACE) {
                igw_case *c = igw_xcalloc(1, sizeof *c);
                c->loc = p->tok.loc;
                c->value = value(p);
                expect(p, TOK_COLON);
                /* Inline case types are named per case so two cases never collide. */
                char *cname = igw_xprintf("%s_%s", f->name, igw_c_ident(c->value));
                c->type = type_expr(p, obj->name, cname);
                free(cname);
                for (;;) {
                    if (accept_kw(p, "require"))
                        name_list(p, &c->require);
                    else if (accept_kw(p, "forbid"))
                        name_list(p, &c->forbid);
                    else
                        break;
                }
                expect(p, TOK_SEMI);
                igw_vec_push(&sw->cases, c);
            }
            expect(p, TOK_RBRACE);
            f->sw = sw;
        } else {
            f->type = type_expr(p, obj->name, f->name);
        }
        f->doc = opt_doc(p);
        expect(p, TOK_SEMI);
        igw_vec_push(&obj->fields, f);
    }
}

static void error_decl(parser *p)
{
    igw_error *e = igw_xcalloc(1, sizeof *e);
    e->loc = p->tok.loc;
    e->name = ident(p, "error class name");
    expect_kw(p, "code");
    e->code = integer(p);
    expect_kw(p, "http");
    e->http = (int)integer(p);
    expect_kw(p, "reason");
    e->reason = string(p, "reason string");
    if (accept_kw(p, "for")) {
        static const struct { const char *name; unsigned role; } roles[] = {
            {"decode", IGW_ROLE_DECODE}, {"reserved", IGW_ROLE_RESERVED},
            {"body_cap", IGW_ROLE_BODY_CAP}, {"no_route", IGW_ROLE_NO_ROUTE},
            {"method", IGW_ROLE_METHOD}, {"media_type", IGW_ROLE_MEDIA},
            {"internal", IGW_ROLE_INTERNAL}, {"ok", IGW_ROLE_OK}, {"gate", IGW_ROLE_GATE},
        };
        do {
            const char *r = ident(p, "role");
            unsigned bit = 0;
            for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
                if (strcmp(r, roles[i].name) == 0)
                    bit = roles[i].role;
            if (!bit)
                fail(p, "unknown role '%s'", r);
            free((char *)r);
            e->roles |= bit;
        } while (accept(p, TOK_COMMA));
    }
    e->doc = opt_doc(p);
    expect(p, TOK_SEMI);
    e->index = p->s->errors.n;
    igw_vec_push(&p->s->errors, e);
}

static void type_decl(parser *p)
{
    igw_loc at = p->tok.loc;
    const char *name = ident(p, "type name");
    const char *doc = opt_doc(p);
    expect(p, TOK_EQ);
    igw_type *t = type_expr(p, name, "value");
    expect(p, TOK_SEMI);
    if (t->kind == IGW_T_REF && !t->synthesized) {
        /* `type A = B;` stays a reference so A shares B's rules. */
    }
    t->name = name;
    t->doc = doc;
    t->loc = at;
    igw_vec_push(&p->s->types, t);
}

static void enum_decl(parser *p)
{
    igw_loc at = p->tok.loc;
    const char *name = ident(p, "enum name");
    const char *doc = opt_doc(p);
    igw_type *t = new_type(p, IGW_T_ENUM);
    t->name = name;
    t->doc = doc;
    t->loc = at;
    expect(p, TOK_LBRACE);
    do {
        if (p->tok.kind == TOK_RBRACE)
            break;
        igw_vec_push(&t->values, (void *)value(p));
    } while (accept(p, TOK_COMMA));
    expect(p, TOK_RBRACE);
    igw_vec_push(&p->s->types, t);
}

static void object_decl(parser *p)
{
    igw_loc at = p->tok.loc;
    igw_type *t = new_type(p, IGW_T_OBJECT);
    t->name = ident(p, "object name");
    t->doc = opt_doc(p);
    t->loc = at;
    /* Registered before its members so inline children follow their parent. */
    igw_vec_push(&p->s->types, t);
    expect(p, TOK_LBRACE);
    members(p, t);
    expect(p, TOK_RBRACE);
}

static void route_decl(parser *p)
{
    igw_route *r = igw_xcalloc(1, sizeof *r);
    r->loc = p->tok.loc;
    r->name = ident(p, "route name");
    r->doc = opt_doc(p);
    r->body_limit = -1;
    expect(p, TOK_LBRACE);
    while (!accept(p, TOK_RBRACE)) {
        if (is_kw(p, "post") || is_kw(p, "get")) {
            if (r->method)
                fail(p, "route '%s' already has a method and path", r->name);
            r->method = is_kw(p, "post") ? "POST" : "GET";
            next(p);
            r->path = string(p, "path");
        } else if (accept_kw(p, "param")) {
            igw_field *f = igw_xcalloc(1, sizeof *f);
            f->loc = p->tok.loc;
            f->name = ident(p, "parameter name");
            f->index = r->params.n;
            f->type = type_expr(p, r->name, f->name);
            f->doc = opt_doc(p);
            igw_vec_push(&r->params, f);
        } else if (accept_kw(p, "header")) {
            igw_field *f = igw_xcalloc(1, sizeof *f);
            f->loc = p->tok.loc;
            f->name = value(p); /* a string allows names like "X-Request-Id" */
            f->index = r->headers.n;
            f->optional = accept_kw(p, "optional");
            f->type = type_expr(p, r->name, f->name);
            f->doc = opt_doc(p);
            igw_vec_push(&r->headers, f);
        } else if (is_kw(p, "require") || is_kw(p, "forbid")) {
            igw_rule *rule = new_rule(p, is_kw(p, "require") ? IGW_R_REQUIRE : IGW_R_FORBID);
            next(p);
            name_list(p, &rule->fields);
            if (accept_kw(p, "when"))
                rule->when = cond(p);
            igw_vec_push(&r->rules, rule);
        } else if (accept_kw(p, "auth")) {
            if (r->has_auth)
                fail(p, "route '%s' already has an auth item", r->name);
            r->has_auth = true;
            if (accept_kw(p, "device"))
                r->auth = IGW_AUTH_DEVICE;
            else if (accept_kw(p, "user")) {
                r->auth = IGW_AUTH_USER;
                r->auth_subprotocol = accept_kw(p, "subprotocol");
            }
            else if (accept_kw(p, "none"))
                r->auth = IGW_AUTH_NONE;
            else
                fail(p, "expected 'device', 'user' or 'none', found %s", found(p));
        } else if (accept_kw(p, "gate")) {
            expect_kw(p, "signaling");
            r->gate_signaling = true;
        } else if (accept_kw(p, "body")) {
            if (r->body_limit >= 0)
                fail(p, "route '%s' already has a body item", r->name);
            if (accept_kw(p, "none")) {
                r->body = IGW_BODY_NONE;
                r->body_limit = 0;
            } else if (accept_kw(p, "json")) {
                r->body = IGW_BODY_JSON;
                r->body_type = type_expr(p, r->name, "body");
                expect_kw(p, "limit");
                r->body_limit = size(p);
            } else if (accept_kw(p, "multipart")) {
                r->body = IGW_BODY_MULTIPART;
                expect_kw(p, "limit");
                r->body_limit = size(p);
                expect(p, TOK_LBRACE);
                while (!accept(p, TOK_RBRACE)) {
                    if (accept_kw(p, "part")) {
                        igw_part *pt = igw_xcalloc(1, sizeof *pt);
                        pt->name = ident(p, "part name");
                        pt->required = !accept_kw(p, "optional");
                        pt->doc = opt_doc(p);
                        igw_vec_push(&r->parts, pt);
                    } else if (accept_kw(p, "others")) {
                        if (accept_kw(p, "ignored"))
                            r->extra_parts = "ignore";
                        else if (accept_kw(p, "rejected"))
                            r->extra_parts = "reject";
                        else
                            fail(p, "expected 'ignored' or 'rejected', found %s", found(p));
                    } else {
                        fail(p, "expected 'part' or 'others', found %s", found(p));
                    }
                    expect(p, TOK_SEMI);
                }
                accept(p, TOK_SEMI); /* the block ends the item; ';' optional */
                continue;
            } else {
                fail(p, "expected 'none', 'json' or 'multipart', found %s", found(p));
            }
        } else if (accept_kw(p, "reply")) {
            if (r->has_reply)
                fail(p, "route '%s' already has a reply item", r->name);
            r->has_reply = true;
            if (!accept_kw(p, "none"))
                r->reply = type_expr(p, r->name, "reply");
        } else if (accept_kw(p, "handler")) {
            if (r->handler)
                fail(p, "route '%s' already has a handler", r->name);
            r->handler = ident(p, "handler function name");
        } else if (accept_kw(p, "errors")) {
            if (r->has_errors)
                fail(p, "route '%s' already has an errors item", r->name);
            r->has_errors = true;
            do
                igw_vec_push(&r->errors, (void *)ident(p, "error class"));
            while (accept(p, TOK_COMMA));
        } else {
            fail(p, "unknown route item %s", found(p));
        }
        expect(p, TOK_SEMI);
    }
    r->index = p->s->routes.n;
    igw_vec_push(&p->s->routes, r);
}

static void machine_decl(parser *p)
{
    igw_machine *m = igw_xcalloc(1, sizeof *m);
    m->loc = p->tok.loc;
    m->name = ident(p, "machine name");
    m->doc = opt_doc(p);
    expect(p, TOK_LBRACE);
    while (!accept(p, TOK_RBRACE)) {
        if (accept_kw(p, "state")) {
            igw_state *st = igw_xcalloc(1, sizeof *st);
            st->loc = p->tok.loc;
            st->name = ident(p, "state name");
            st->terminal = accept_kw(p, "terminal");
            if (accept_kw(p, "requires"))
                name_list(p, &st->requires);
            st->doc = opt_doc(p);
            st->index = m->states.n;
            igw_vec_push(&m->states, st);
        } else if (accept_kw(p, "guard")) {
            igw_guard *g = igw_xcalloc(1, sizeof *g);
            g->loc = p->tok.loc;
            g->name = ident(p, "guard name");
            g->doc = opt_doc(p);
            g->index = m->guards.n;
            igw_vec_push(&m->guards, g);
        } else if (accept_kw(p, "illegal")) {
            m->illegal = ident(p, "error class");
        } else if (is_kw(p, "on") || is_kw(p, "reject")) {
            igw_transition *t = igw_xcalloc(1, sizeof *t);
            t->reject = is_kw(p, "reject");
            next(p);
            t->loc = p->tok.loc;
            t->trigger = ident(p, "trigger name");
            t->guard_idx = -1;
            t->to_idx = -1;
            expect(p, TOK_COLON);
            do {
                if (accept(p, TOK_STAR))
                    igw_vec_push(&t->from, "*");
                else
                    igw_vec_push(&t->from, (void *)ident(p, "state name"));
            } while (accept(p, TOK_COMMA));
            if (t->reject) {
                expect_kw(p, "error");
                t->error = ident(p, "error class");
                t->reason = string(p, "reason string");
            } else {
                expect(p, TOK_ARROW);
                t->to = ident(p, "state name");
                if (accept_kw(p, "when"))
                    t->guard = ident(p, "guard name");
                if (accept_kw(p, "also"))
                    t->reason = string(p, "effect text");
            }
            igw_vec_push(&m->transitions, t);
        } else {
            fail(p, "expected 'state', 'guard', 'illegal', 'on' or 'reject', found %s", found(p));
        }
        expect(p, TOK_SEMI);
    }
    igw_vec_push(&p->s->machines, m);
}

static void table_decl(parser *p)
{
    static const char *const sqltypes[] = {"text", "bigint", "integer", "boolean",
                                           "bytea", "jsonb", "timestamptz"};
    igw_table *t = igw_xcalloc(1, sizeof *t);
    t->loc = p->tok.loc;
    t->name = ident(p, "table name");
    t->doc = opt_doc(p);
    expect(p, TOK_LBRACE);
    while (!accept(p, TOK_RBRACE)) {
        igw_loc at = p->tok.loc;
        if (is_kw(p, "primary") || is_kw(p, "unique") || is_kw(p, "index")) {
            igw_index *ix = igw_xcalloc(1, sizeof *ix);
            ix->loc = at;
            if (accept_kw(p, "primary")) {
                expect_kw(p, "key");
                ix->primary = ix->unique = true;
            } else {
                ix->unique = accept_kw(p, "unique");
                if (!ix->unique)
                    expect_kw(p, "index");
            }
            expect(p, TOK_LPAREN);
            do
                igw_vec_push(&ix->columns, (void *)ident(p, "column name"));
            while (accept(p, TOK_COMMA));
            expect(p, TOK_RPAREN);
            if (ix->unique && !ix->primary && accept_kw(p, "where")) { /* where <machine column> = <state> */
                ix->where = ident(p, "column name");
                expect(p, TOK_EQ);
                ix->where_state = ident(p, "state name");
            } else if (!ix->unique && accept_kw(p, "where")) {
                ix->where = ident(p, "column name");
                ix->where_not_null = accept_kw(p, "not");
                if (ix->where_not_null && !is_kw(p, "null")) { /* where <machine column> not <state> */
                    ix->where_not_null = false;
                    ix->where_not_state = ident(p, "state name or null");
                } else {
                    expect_kw(p, "null");
                }
            }
            igw_vec_push(&t->indexes, ix);
        } else if (accept_kw(p, "notify")) {
            igw_notify *n = igw_xcalloc(1, sizeof *n);
            n->loc = at;
            n->channel = ident(p, "channel name");
            expect_kw(p, "on");
            expect(p, TOK_LPAREN);
            do
                igw_vec_push(&n->columns, (void *)ident(p, "column name"));
            while (accept(p, TOK_COMMA));
            expect(p, TOK_RPAREN);
            n->doc = opt_doc(p);
            igw_vec_push(&t->notifies, n);
        } else {
            igw_column *c = igw_xcalloc(1, sizeof *c);
            c->loc = at;
            c->name = ident(p, "column name");
            const char *ty = ident(p, "SQL type");
            for (size_t i = 0; i < sizeof sqltypes / sizeof sqltypes[0]; i++)
                if (strcmp(ty, sqltypes[i]) == 0)
                    c->sqltype = sqltypes[i];
            if (!c->sqltype)
                fail(p, "unknown SQL type '%s' (text, bigint, integer, boolean, bytea, jsonb, timestamptz)", ty);
            free((char *)ty);
            for (;;) {
                if (accept_kw(p, "null")) {
                    c->nullable = true;
                } else if (accept_kw(p, "default")) {
                    if (p->tok.kind == TOK_INT || p->tok.kind == TOK_MINUS)
                        c->deflt = igw_xprintf("%lld", (long long)integer(p));
                    else if (accept_kw(p, "now"))
                        c->deflt = "now()";
                    else if (accept_kw(p, "identity"))
                        c->identity = true;
                    else if (accept_kw(p, "true"))
                        c->deflt = "true";
                    else if (accept_kw(p, "false"))
                        c->deflt = "false";
                    else if (p->tok.kind == TOK_STRING) {
                        char *text = (char *)string(p, "default");
                        c->deflt = igw_xprintf("'%s'", text);
                        free(text);
                    }
                    else
                        fail(p, "expected a default value, found %s", found(p));
                } else if (accept_kw(p, "from")) {
                    c->from_type = ident(p, "type name");
                    expect(p, TOK_DOT);
                    c->from_field = ident(p, "field name");
                } else if (accept_kw(p, "machine")) {
                    c->machine = ident(p, "machine name");
                } else if (accept_kw(p, "references")) {
                    c->ref_table = ident(p, "table name");
                    expect(p, TOK_LPAREN);
                    c->ref_column = ident(p, "column name");
                    expect(p, TOK_RPAREN);
                } else {
                    break;
                }
            }
            c->doc = opt_doc(p);
            igw_vec_push(&t->columns, c);
        }
        expect(p, TOK_SEMI);
    }
    igw_vec_push(&p->s->tables, t);
}

static void event_decl(parser *p)
{
    igw_event *e = igw_xcalloc(1, sizeof *e);
    e->loc = p->tok.loc;
    e->name = value(p);
    e->type = type_expr(p, "Event", "body");
    e->doc = opt_doc(p);
    expect(p, TOK_SEMI);
    igw_vec_push(&p->s->events, e);
}

/* A protocol row's handle, type or method: an identifier, or `*` (any). */
static const char *proto_name(parser *p, const char *what)
{
    if (accept(p, TOK_STAR))
        return "*";
    return ident(p, what);
}

static void protocol_decl(parser *p)
{
    igw_protocol *pr = igw_xcalloc(1, sizeof *pr);
    pr->loc = p->tok.loc;
    pr->name = ident(p, "protocol name");
    pr->doc = opt_doc(p);
    expect(p, TOK_LBRACE);
    while (!accept(p, TOK_RBRACE)) {
        if (is_kw(p, "down")) {
            igw_proto_down *d = igw_xcalloc(1, sizeof *d);
            d->loc = p->tok.loc;
            next(p);
            d->handle = ident(p, "handle");
            d->type = ident(p, "message type");
            d->method = ident(p, "downlink method");
            expect_kw(p, "message");
            d->message = type_expr(p, pr->name, "message");
            d->doc = opt_doc(p);
            expect(p, TOK_SEMI);
            d->index = pr->downs.n;
            igw_vec_push(&pr->downs, d);
            continue;
        }
        igw_proto_row *r = igw_xcalloc(1, sizeof *r);
        r->loc = p->tok.loc;
        r->handle = ident(p, "handle");
        r->type = proto_name(p, "message type or *");
        r->method = proto_name(p, "method or *");
        if (accept(p, TOK_ARROW))
            r->reply = ident(p, "reply method");
        for (;;) {
            if (accept_kw(p, "check")) {
                if (r->check)
                    fail(p, "a row has one check");
                r->check = ident(p, "check kind");
            } else if (accept_kw(p, "returns")) {
                if (r->returns)
                    fail(p, "a row returns one thing");
                r->returns = ident(p, "what the reply returns");
            } else if (accept_kw(p, "params")) {
                if (r->params)
                    fail(p, "a row has one params type");
                r->params = type_expr(p, pr->name, "params");
            } else if (accept_kw(p, "data")) {
                if (r->data)
                    fail(p, "a row has one data type");
                r->data = type_expr(p, pr->name, "data");
            } else if (accept_kw(p, "answers")) {
                if (r->answers)
                    fail(p, "a row answers one downlink");
                r->answers = ident(p, "downlink method");
            } else {
                break;
            }
        }
        r->doc = opt_doc(p);
        expect(p, TOK_SEMI);
        igw_vec_push(&pr->rows, r);
    }
    igw_vec_push(&p->s->protocols, pr);
}

static void methods_decl(parser *p)
{
    igw_methods *m = igw_xcalloc(1, sizeof *m);
    m->loc = p->tok.loc;
    m->on = ident(p, "enum name");
    m->doc = opt_doc(p);
    expect(p, TOK_LBRACE);
    while (!accept(p, TOK_RBRACE)) {
        igw_method_bind *b = igw_xcalloc(1, sizeof *b);
        b->loc = p->tok.loc;
        b->value = value(p);
        expect(p, TOK_COLON);
        expect_kw(p, "handler");
        b->handler = ident(p, "handler function name");
        while (p->tok.kind == TOK_IDENT) {
            if (accept_kw(p, "downlink")) {
                if (b->downlink)
                    fail(p, "a method has one downlink");
                b->downlink = ident(p, "downlink message type");
                continue;
            }
            igw_vec_push(&b->traits, (void *)ident(p, "trait"));
        }
        b->doc = opt_doc(p);
        expect(p, TOK_SEMI);
        igw_vec_push(&m->binds, b);
    }
    igw_vec_push(&p->s->methods, m);
}

/* `purposes ENUM capability TYPE ["doc"] { guard NAME ["doc"]; VALUE: ...; }` */
static void purposes_decl(parser *p)
{
    igw_purposes *ps = igw_xcalloc(1, sizeof *ps);
    ps->loc = p->tok.loc;
    ps->on = ident(p, "enum name");
    expect_kw(p, "capability");
    ps->capability = ident(p, "capability object name");
    if (accept_kw(p, "processors"))
        ps->processor = ident(p, "processor enum name");
    ps->doc = opt_doc(p);
    expect(p, TOK_LBRACE);
    while (!accept(p, TOK_RBRACE)) {
        if (is_kw(p, "guard")) {
            igw_guard *g = igw_xcalloc(1, sizeof *g);
            g->loc = p->tok.loc;
            next(p);
            g->name = ident(p, "guard name");
            g->doc = opt_doc(p);
            expect(p, TOK_SEMI);
            g->index = ps->guards.n;
            igw_vec_push(&ps->guards, g);
            continue;
        }
        igw_purpose_row *r = igw_xcalloc(1, sizeof *r);
        r->loc = p->tok.loc;
        r->value = value(p);
        expect(p, TOK_COLON);
        for (;;) {
            igw_loc at = p->tok.loc;
            if (accept_kw(p, "hooks")) {
                if (r->hooks)
                    fail(p, "a purpose has one hooks object");
                r->hooks = ident(p, "hooks object name");
            } else if (accept_kw(p, "leg")) {
                if (r->leg)
                    fail(p, "a purpose has one leg kind");
                r->leg = ident(p, "leg kind (shared, own)");
            } else if (accept_kw(p, "viewers")) {
                if (r->viewers)
                    fail(p, "a purpose has one viewers purpose");
                r->viewers = value(p);
            } else if (accept_kw(p, "access")) {
                do
                    igw_vec_push(&r->access, (void *)ident(p, "who may open it"));
                while (accept(p, TOK_COMMA));
            } else if (accept_kw(p, "machine")) {
                igw_vec_push(&r->machines, (void *)ident(p, "machine name"));
            } else if (accept_kw(p, "track")) {
                igw_purpose_track *t = igw_xcalloc(1, sizeof *t);
                t->loc = at;
                t->id = value(p);
                t->kind = ident(p, "track kind");
                t->direction = ident(p, "track direction (sendonly, recvonly)");
                t->codec = value(p);
                if (accept_kw(p, "when"))
                    t->when = ident(p, "guard name");
                igw_vec_push(&r->tracks, t);
            } else if (accept_kw(p, "vision")) {
                r->vision = true;
            } else if (accept_kw(p, "side")) {
                r->side = true;
            } else if (accept_kw(p, "processors")) {
                do
                    igw_vec_push(&r->processors, (void *)ident(p, "processor"));
                while (accept(p, TOK_COMMA));
            } else if (accept_kw(p, "preflight")) {
                igw_purpose_preflight *f = igw_xcalloc(1, sizeof *f);
                f->loc = at;
                f->field = ident(p, "capability field");
                if (accept_kw(p, "when"))
                    f->when = ident(p, "guard name");
                igw_vec_push(&r->preflights, f);
            } else {
                break;
            }
        }
        r->doc = opt_doc(p);
        expect(p, TOK_SEMI);
        igw_vec_push(&ps->rows, r);
    }
    igw_vec_push(&p->s->purposes, ps);
}

int igw_parse(igw_schema *s, const char *file, const char *text, size_t len)
{
    parser p;
    memset(&p, 0, sizeof p);
    p.s = s;
    igw_lexer_init(&p.lx, file, text, len);
    if (setjmp(p.fail)) {
        if (p.tok.kind == TOK_IDENT || p.tok.kind == TOK_STRING)
            free((char *)p.tok.text);
        return -1;
    }
    next(&p);
    while (p.tok.kind != TOK_EOF) {
        if (accept_kw(&p, "error"))
            error_decl(&p);
        else if (accept_kw(&p, "type"))
            type_decl(&p);
        else if (accept_kw(&p, "enum"))
            enum_decl(&p);
        else if (accept_kw(&p, "object"))
            object_decl(&p);
        else if (accept_kw(&p, "route"))
            route_decl(&p);
        else if (accept_kw(&p, "machine"))
            machine_decl(&p);
        else if (accept_kw(&p, "table"))
            table_decl(&p);
        else if (accept_kw(&p, "event"))
            event_decl(&p);
        else if (accept_kw(&p, "protocol"))
            protocol_decl(&p);
        else if (accept_kw(&p, "methods"))
            methods_decl(&p);
        else if (accept_kw(&p, "purposes"))
            purposes_decl(&p);
        else
            fail(&p,
                 "expected a declaration (error, type, enum, object, route, event, machine, table, protocol, methods, "
                 "purposes), "
                 "found %s",
                 found(&p));
    }
    return 0;
}
