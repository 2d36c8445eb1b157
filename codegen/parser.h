/* parser.h - recursive-descent parser of schema files into igw_schema. */
#ifndef IGW_GEN_PARSER_H
#define IGW_GEN_PARSER_H

#include "model.h"

/* Parses one schema file (NUL-terminated text of `len` bytes) into `s`.
 * Returns 0, or -1 after reporting a diagnostic. */
int igw_parse(igw_schema *s, const char *file, const char *text, size_t len);

#endif
