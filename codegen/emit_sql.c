/* emit_sql.c - placeholder until the SQL back end lands. */
#include "emit.h"
int igw_emit_sql(const igw_schema *s, const char *gen_dir) { (void)s; (void)gen_dir; return 0; }
