/* jw.h - JSON writer into a growing buffer.
 *
 * Commas and quoting are handled here so encoders only say what to write.
 * Output is compact (no whitespace); strings are escaped minimally (", \,
 * control characters as \u00XX or the short forms), other UTF-8 kept. */
#ifndef IGW_JW_H
#define IGW_JW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct igw_jw {
    char *buf;
    size_t len, cap;
    unsigned depth;
    uint64_t first; /* bit d set: no member written yet at depth d */
    bool oom;       /* sticky: an allocation failed */
} igw_jw;

/* Prepares an empty writer. */
void igw_jw_init(igw_jw *w);
/* Frees the buffer. */
void igw_jw_free(igw_jw *w);
/* Empties the writer, keeping its buffer. */
void igw_jw_reset(igw_jw *w);

void igw_jw_object_begin(igw_jw *w);
void igw_jw_object_end(igw_jw *w);
void igw_jw_array_begin(igw_jw *w);
void igw_jw_array_end(igw_jw *w);
/* Writes a member key (inside an object); the value call follows. */
void igw_jw_key(igw_jw *w, const char *key, size_t len);
void igw_jw_string(igw_jw *w, const char *s, size_t len);
void igw_jw_int(igw_jw *w, int64_t v);
void igw_jw_bool(igw_jw *w, bool v);
void igw_jw_null(igw_jw *w);
/* Writes `len` bytes of already valid JSON as one value. */
void igw_jw_raw(igw_jw *w, const char *json, size_t len);
/* Writes a validated free JSON value canonically: no whitespace, object keys
 * sorted by their UTF-16 code units (RFC 8785 order), strings re-escaped
 * minimally, numbers kept as written. Returns 0, or -1 if `json` is invalid. */
int igw_jw_canonical(igw_jw *w, const char *json, size_t len);

/* Returns 0 when every write succeeded, -1 after an allocation failure. */
int igw_jw_status(const igw_jw *w);

#endif
