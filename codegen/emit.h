/* emit.h - the generator's back ends; each writes files under an output root.
 *
 * All emitters are deterministic: output depends only on the schema model
 * (declaration order, names, values), never on time, paths or addresses.
 * Each returns 0 or -1 (I/O failure, already reported). */
#ifndef IGW_GEN_EMIT_H
#define IGW_GEN_EMIT_H

#include "model.h"

/* generated/api.h, generated/api.c: C types, strict decoders, encoders,
 * error classes, route table and dispatch. */
int igw_emit_c(const igw_schema *s, const char *gen_dir);
/* The bounds section of generated/api.h (IGW_<Type>_MAX, ...): emit_c.c
 * calls it while writing the header. */
struct igw_out;
void igw_emit_bounds(const igw_schema *s, struct igw_out *h);
/* generated/paths.h: the JSON Pointer paths of request body fields. */
int igw_emit_paths(const igw_schema *s, const char *gen_dir);
/* generated/igwd/state_sql.h: IGW_SQL_STATE_EVENTS, the interaction.state
 * events of a session statement built in SQL (only when the schema has it). */
int igw_emit_state_sql(const igw_schema *s, const char *gen_dir);
/* generated/machines.h, generated/machines.c and docs/machines/<name>.dot. */
int igw_emit_machines(const igw_schema *s, const char *gen_dir, const char *docs_dir);
/* generated/sql/schema.sql. */
int igw_emit_sql(const igw_schema *s, const char *gen_dir);
/* generated/conformance/<route>.jsonl and machines.jsonl. */
int igw_emit_vectors(const igw_schema *s, const char *gen_dir);
/* generated/openapi.json (OpenAPI 3.1). */
int igw_emit_openapi(const igw_schema *s, const char *gen_dir);
/* generated/protocol.h, generated/protocol.c, generated/conformance/protocol.jsonl. */
int igw_emit_protocol(const igw_schema *s, const char *gen_dir);
/* generated/igwd/handlers.{h,c} (routes' handlers) and generated/igwd/methods.{h,c}
 * (`methods` blocks), each only when the schema binds something of its kind. */
int igw_emit_bind(const igw_schema *s, const char *gen_dir);
/* docs/api.md, the API reference. */
int igw_emit_apidoc(const igw_schema *s, const char *docs_dir);

#endif
