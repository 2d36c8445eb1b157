/* emit_c.c - placeholder. */
#include "emit.h"
int igw_emit_c(const igw_schema *s, const char *g) { (void)s; (void)g; return 0; }
