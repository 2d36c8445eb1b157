/* sema.h - semantic pass over a parsed schema. */
#ifndef IGW_GEN_SEMA_H
#define IGW_GEN_SEMA_H

#include "model.h"

/* Resolves every reference and checks the schema: duplicate names, unknown
 * types, fields, classes and states, contradictory rules, unreachable states,
 * unused types and guards, roles. Desugars switch cases into rules.
 * Returns the number of errors reported (0 on success). */
int igw_sema(igw_schema *s);

#endif
