/* emit_machines.c - placeholder. */
#include "emit.h"
int igw_emit_machines(const igw_schema *s, const char *g, const char *d) { (void)s; (void)g; (void)d; return 0; }
