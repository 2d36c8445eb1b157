/* ruletext.c - see ruletext.h. Conditions are bounded in depth by the
 * parser (nesting and terms per condition), so recursion here is too. */
#include "ruletext.h"

#include <inttypes.h>
#include <stdbool.h>

static void value_text(igw_out *o, const char *v)
{
    bool plain = *v != '\0';
    for (const char *p = v; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            plain = false;
    if (plain)
        igw_out_puts(o, v);
    else
        igw_out_printf(o, "\"%s\"", v);
}

/* Precedence is not > and > or; parentheses only where it would mislead. */
void igw_cond_text(igw_out *o, const igw_cond *k)
{
    switch (k->op) {
    case IGW_C_EQ:
    case IGW_C_NE:
        igw_out_printf(o, "%s %s ", k->field, k->op == IGW_C_EQ ? "=" : "!=");
        value_text(o, IGW_VEC_AT(k->values, const char, 0));
        return;
    case IGW_C_IN:
        igw_out_printf(o, "%s in (", k->field);
        for (int i = 0; i < k->values.n; i++) {
            if (i)
                igw_out_puts(o, ", ");
            value_text(o, IGW_VEC_AT(k->values, const char, i));
        }
        igw_out_puts(o, ")");
        return;
    case IGW_C_PRESENT:
        igw_out_printf(o, "%s present", k->field);
        return;
    case IGW_C_NOT: {
        bool paren = k->a->op == IGW_C_AND || k->a->op == IGW_C_OR;
        igw_out_puts(o, paren ? "not (" : "not ");
        igw_cond_text(o, k->a);
        if (paren)
            igw_out_puts(o, ")");
        return;
    }
    case IGW_C_AND:
    case IGW_C_OR:
        for (int side = 0; side < 2; side++) {
            const igw_cond *x = side ? k->b : k->a;
            bool paren = k->op == IGW_C_AND && x->op == IGW_C_OR;
            if (side)
                igw_out_puts(o, k->op == IGW_C_AND ? " and " : " or ");
            if (paren)
                igw_out_puts(o, "(");
            igw_cond_text(o, x);
            if (paren)
                igw_out_puts(o, ")");
        }
        return;
    }
}

static const char *cmp_text(igw_cmp cmp)
{
    switch (cmp) {
    case IGW_CMP_LT: return "<";
    case IGW_CMP_LE: return "<=";
    case IGW_CMP_GT: return ">";
    case IGW_CMP_GE: return ">=";
    }
    return "?";
}

static void operand_text(igw_out *o, const igw_operand *op, const char *unit)
{
    if (op->is_const)
        igw_out_printf(o, "%" PRId64 "%s%s", op->value, unit ? " " : "", unit ? unit : "");
    else if (op->b)
        igw_out_printf(o, "%s - %s", op->a, op->b);
    else
        igw_out_puts(o, op->a);
}

/* Unit of the integer fields a check compares (sema made them agree). */
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

void igw_check_text(igw_out *o, const igw_rule *r)
{
    const char *unit = check_unit(r);
    operand_text(o, &r->lhs, unit);
    igw_out_printf(o, " %s ", cmp_text(r->cmp));
    operand_text(o, &r->rhs, unit);
}

void igw_rule_text(igw_out *o, const igw_rule *r)
{
    if (r->kind == IGW_R_CHECK) {
        igw_out_puts(o, "check ");
        igw_check_text(o, r);
        return;
    }
    igw_out_puts(o, r->kind == IGW_R_REQUIRE ? "require " : "forbid ");
    for (int i = 0; i < r->fields.n; i++)
        igw_out_printf(o, "%s%s", i ? ", " : "", IGW_VEC_AT(r->fields, const char, i));
    if (r->when) {
        igw_out_puts(o, " when ");
        igw_cond_text(o, r->when);
    }
}
