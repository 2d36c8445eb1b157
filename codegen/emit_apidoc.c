/* emit_apidoc.c - placeholder until the API reference back end lands. */
#include "emit.h"
int igw_emit_apidoc(const igw_schema *s, const char *docs_dir) { (void)s; (void)docs_dir; return 0; }
