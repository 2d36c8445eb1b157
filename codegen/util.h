/* util.h - generator plumbing: allocation, diagnostics, output buffers.
 *
 * The generator is a short-lived batch program, so allocation failure aborts
 * with a message instead of threading errors through every emitter. */
#ifndef IGW_GEN_UTIL_H
#define IGW_GEN_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* malloc/calloc/strdup that abort on exhaustion. */
void *igw_xmalloc(size_t n);
void *igw_xcalloc(size_t n, size_t size);
char *igw_xstrdup(const char *s);
char *igw_xstrndup(const char *s, size_t n);
char *igw_xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Registers a source text so diagnostics can quote its lines. */
void igw_diag_source(const char *file, const char *text, size_t len);
/* Prints `file:line:col: error: message`, the source line and a caret (ninja style). */
void igw_diag_error(igw_loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Number of errors reported so far. */
int igw_diag_count(void);

/* Output buffer; emitters write into one and igw_out_save() stores it. */
typedef struct igw_out {
    char *buf;
    size_t len, cap;
} igw_out;

void igw_out_init(igw_out *o);
void igw_out_free(igw_out *o);
void igw_out_write(igw_out *o, const void *p, size_t n);
void igw_out_puts(igw_out *o, const char *s);
void igw_out_printf(igw_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes `s` as a JSON string literal (quoted, escaped). */
void igw_out_json_string(igw_out *o, const char *s);
/* Writes `s` as a C string literal (quoted, escaped, non-ASCII as octal). */
void igw_out_c_string(igw_out *o, const char *s);
/* Writes `n` bytes as a C string literal. */
void igw_out_c_bytes(igw_out *o, const char *s, size_t n);
/* Writes the buffer to dir/rel (creating directories); returns 0 or -1. */
int igw_out_save(const igw_out *o, const char *dir, const char *rel);

/* "do not edit" header line for a generated file, in the given comment style
 * ("//", "#", "--" or "" for none); names the schema files, never paths. */
void igw_out_banner(igw_out *o, const igw_schema *s, const char *comment);

/* Scratch strings for emitters: valid until igw_scratch_release(); never
 * freed by the caller. They keep inline temporaries out of every printf. */
const char *igw_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Releases every scratch string (main calls it once the emitters are done). */
void igw_scratch_release(void);

/* Builds an identifier from a schema name: "interaction.open" -> "interaction_open" (scratch). */
const char *igw_c_ident(const char *name);
/* Same, upper-cased: "INTERACTION_OPEN" (scratch). */
const char *igw_c_upper(const char *name);

#endif
