/* procline.h - the lines of the processor protocol (docs/ai.md): one flat
 * JSON object per line, both ways between igwd and a processor process.
 * Reading picks the named members of one object (strings, integers,
 * booleans), skipping the others; writing goes through igw_jw. Shared by
 * igwd's processor supervisor and igw-proc so both read one grammar. */
#ifndef IGW_LIB_PROCLINE_H
#define IGW_LIB_PROCLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IGW_PROCLINE_MAX 8192 /* the longest line either side accepts */

typedef enum { IGW_PROCLINE_STR, IGW_PROCLINE_INT, IGW_PROCLINE_BOOL } igw_procline_kind;

/* A member to read: its name and kind; str (cap bytes, NUL-terminated),
 * num or flag receive it, and `present` says whether it was there. */
typedef struct igw_procfield {
    const char *name;
    igw_procline_kind kind;
    char *str;
    size_t cap;
    int64_t num;
    bool flag;
    bool present;
} igw_procfield;

/* Reads the one object of line[0..len) into the n fields. 0; -1 when the
 * line is not one strict JSON object, longer than IGW_PROCLINE_MAX, nests,
 * or a named member has another kind or does not fit its buffer. */
int igw_procline_read(const char *line, size_t len, igw_procfield *fields, size_t n);

/* The field named `name` of the n (NULL if none). */
igw_procfield *igw_procline_field(igw_procfield *fields, size_t n, const char *name);

#endif
