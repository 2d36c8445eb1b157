/* decode.h - support for generated strict decoders.
 *
 * The generated code stays small by calling these for every check whose
 * logic does not depend on the schema: string formats and byte lengths,
 * enum lookup failures, free JSON fields, and re-scanning a discriminated
 * value that arrived before its discriminator. */
#ifndef IGW_DECODE_H
#define IGW_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

/* String formats of the schema language (codegen/model.h igw_format). */
enum {
    IGW_FORMAT_NONE = 0,
    IGW_FORMAT_CANONICAL_ID = 1,
    IGW_FORMAT_BCP47 = 2,
    IGW_FORMAT_IDENTIFIER = 3
};

/* Decimal 1..9007199254740991: digits only, no sign, no leading zero, no space. */
bool igw_format_canonical_id(const char *s, size_t n);
/* BCP 47 tag syntax: ALPHA{2,8} ("-" ALNUM{1,8})*. */
bool igw_format_bcp47(const char *s, size_t n);
/* No control characters (C0, DEL, C1), none of * ? % + #, no leading or
 * trailing Unicode whitespace. Input must be valid UTF-8. */
bool igw_format_identifier(const char *s, size_t n);

/* Checks a value that arrived outside JSON (a path segment, a header):
 * valid UTF-8 and no control characters. 0, or -1 (UTF8 / FORMAT). */
int igw_decode_text(igw_json *j, igw_str v);

/* Checks a decoded string's format; on failure records a FORMAT error at
 * the current path and returns -1. */
int igw_decode_string_format(igw_json *j, igw_str s, int format);

/* Checks a decoded string's byte length and format; on failure records a
 * LENGTH or FORMAT error at the current path and returns -1. Inline: it
 * runs for every string field and the length test is two compares. */
static inline int igw_decode_string_rules(igw_json *j, igw_str s, int64_t min, int64_t max, int format)
{
    if ((int64_t)s.len < min)
        return igw_json_fail(j, IGW_JERR_LENGTH, "string is shorter than its minimum byte length");
    if ((int64_t)s.len > max)
        return igw_json_fail(j, IGW_JERR_LENGTH, "string is longer than its maximum byte length");
    return format == IGW_FORMAT_NONE ? 0 : igw_decode_string_format(j, s, format);
}

/* Reads a free JSON field: any value but null (null inside it is fine), an
 * object when `object` is set, nesting at most `max_depth` levels, at most
 * `max_bytes` long, strict profile. Depth and size failures point at the
 * field itself. */
int igw_decode_free(igw_json *j, bool object, unsigned max_depth, size_t max_bytes, igw_str *raw);

/* Makes room for item n (== *cap) of an array in the arena: the capacity
 * doubles from 8 up to `max`, copying the items so far. Returns the array,
 * or NULL after recording NOMEM. */
void *igw_decode_grow(igw_json *j, void *v, uint32_t n, uint32_t *cap, uint32_t max, size_t size);

/* The items of a `unique` string array seen so far: pairwise compares
 * while the array is short, a hash set of item indices from the arena once
 * it reaches IGW_DECODE_SET_MIN items (a 255-item array pairwise is 32 000
 * compares). Zero-initialize one per array; nothing to free (arena). */
#define IGW_DECODE_SET_MIN 8
typedef struct {
    uint32_t *slot; /* 0: empty; else item index + 1 */
    uint32_t  mask; /* slots - 1; 0 while pairwise */
    uint32_t  n;    /* items in the set */
} igw_decode_set;

/* Checks that item v[n] differs from v[0..n-1] (every earlier item was
 * checked by the same call, in order) and adds it. Returns 0, or -1 after
 * recording DUPLICATE ("duplicate item") or NOMEM at the current path. */
int igw_decode_unique_str(igw_json *j, igw_decode_set *set, const igw_str *v, uint32_t n);

/* Skips an object, validating only its grammar, and returns its bytes; used
 * to hold a discriminated value (every case is an object: the schema's
 * rule) until its discriminator is known. Anything but an object fails here,
 * in document order (null: NULL, another value: TYPE), as its decode would. */
int igw_decode_hold(igw_json *j, igw_str *raw);

/* Decodes a held value with `fn` as if it were met at the current position:
 * same depth and arena; a failure is copied back into `j` with a path that
 * starts at `key` (the caller's callers prepend the rest, see json.h). */
int igw_decode_held(igw_json *j, igw_str raw, const char *key, size_t klen, unsigned depth,
                    int (*fn)(igw_json *, void *), void *arg);

/* True when `s` equals the `n` bytes at `lit`. */
static inline bool igw_str_eq(igw_str s, const char *lit, size_t n)
{
    return s.len == n && (n == 0 || __builtin_memcmp(s.ptr, lit, n) == 0);
}

#endif
