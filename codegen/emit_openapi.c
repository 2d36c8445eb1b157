/* emit_openapi.c - placeholder until the OpenAPI back end lands. */
#include "emit.h"
int igw_emit_openapi(const igw_schema *s, const char *gen_dir) { (void)s; (void)gen_dir; return 0; }
