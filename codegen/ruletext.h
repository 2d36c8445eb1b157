/* ruletext.h - rules and conditions written back in the schema's syntax.
 *
 * One rendering for every back end that shows a rule to people: decoder
 * reasons (emit_c), OpenAPI's x-igw-rules (emit_openapi). */
#ifndef IGW_GEN_RULETEXT_H
#define IGW_GEN_RULETEXT_H

#include "model.h"
#include "util.h"

/* `operation = set and (processor != translation or x present)`: values
 * quoted unless plain identifiers, parentheses only where needed. */
void igw_cond_text(igw_out *o, const igw_cond *k);

/* `endTimeMs - startTimeMs <= 86400000 ms` (a check's comparison). */
void igw_check_text(igw_out *o, const igw_rule *r);

/* `require a, b when ...`, `forbid ...`, or `check ...`. */
void igw_rule_text(igw_out *o, const igw_rule *r);

#endif
