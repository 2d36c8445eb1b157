/* json.h - strict, single-pass JSON pull scanner (no DOM).
 *
 * Generated decoders drive it token by token: they ask for exactly the kind
 * of value the schema expects at each point, so a type mismatch, a null, a
 * fraction where an integer belongs or a duplicate key is found in the same
 * pass that reads the bytes. Every failure records a kind, a reason and the
 * JSON Pointer of the offending value; the first failure sticks.
 *
 * Strings are validated UTF-8 (no overlongs, no encoded surrogates, at most
 * U+10FFFF); escapes are decoded, \u surrogate pairs must be complete and
 * lone surrogates are refused. A string without escapes points into the
 * input buffer; one with escapes is decoded into the arena. */
#ifndef IGW_JSON_H
#define IGW_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"

#define IGW_JSON_SAFE_MAX INT64_C(9007199254740991) /* 2^53 - 1 */
#define IGW_JSON_MAX_DEPTH 64                        /* hard ceiling of any document */

/* Why a document was refused. Generated code maps each kind to an error class. */
typedef enum igw_json_errkind {
    IGW_JERR_NONE = 0,
    IGW_JERR_SYNTAX,   /* not JSON at all: bad token, missing comma, EOF */
    IGW_JERR_UTF8,     /* invalid UTF-8 or lone surrogate */
    IGW_JERR_TRAILING, /* bytes after the top-level value */
    IGW_JERR_DEPTH,    /* nesting deeper than allowed */
    IGW_JERR_SIZE,     /* a bounded value (free object, body) is too big */
    IGW_JERR_NULL,     /* null where a value is required */
    IGW_JERR_TYPE,     /* wrong JSON type (string where an object belongs, ...) */
    IGW_JERR_INTEGER,  /* fraction, exponent, -0 or leading zero where an integer belongs */
    IGW_JERR_RANGE,    /* number out of its range, or beyond the safe range */
    IGW_JERR_LENGTH,   /* string byte length or array item count out of range */
    IGW_JERR_FORMAT,   /* string breaks its format (canonical id, BCP 47, ...) */
    IGW_JERR_ENUM,     /* value not in the enumeration */
    IGW_JERR_DUPLICATE,/* duplicate object key (after unescaping) or array item */
    IGW_JERR_UNKNOWN,  /* field the type does not declare */
    IGW_JERR_MISSING,  /* required field absent */
    IGW_JERR_FORBIDDEN,/* field present where a rule forbids it */
    IGW_JERR_RULE,     /* a cross-field rule (a < b, window) does not hold */
    IGW_JERR_RESERVED, /* field known to the schema but not open in this version */
    IGW_JERR_NOMEM     /* arena exhausted */
} igw_json_errkind;

/* A byte string; not NUL-terminated. */
typedef struct igw_str {
    const char *ptr;
    size_t len;
} igw_str;

/* A C string as an igw_str (no copy: s must outlive it). */
static inline igw_str igw_str_of(const char *s)
{
    return (igw_str){s, __builtin_strlen(s)};
}

/* One JSON Pointer segment: an object key, or an array index when key is NULL. */
typedef struct igw_json_seg {
    const char *key;
    uint32_t len;
    uint32_t index;
} igw_json_seg;

typedef struct igw_json {
    const uint8_t *start, *p, *end;
    igw_arena *arena;
    unsigned depth, max_depth;
    uint64_t first;     /* bit d-1: the container at depth d has no member yet
                           (igw_json_init clears it; a container's open sets it) */
    unsigned nseg;
    igw_json_seg seg[IGW_JSON_MAX_DEPTH + 2];
    igw_json_errkind err;
    const char *reason; /* static string describing the failure */
    char path[512];     /* JSON Pointer of the failure, RFC 6901 escaped */
    size_t err_offset;  /* byte offset of the failure */
    bool nul_ok;        /* "\u0000" is accepted (RFC8259 free values only; never in
                           decoded strings: nothing downstream can hold a NUL) */
} igw_json;

/* Starts scanning `len` bytes; `max_depth` (<= IGW_JSON_MAX_DEPTH) bounds nesting. */
void igw_json_init(igw_json *j, const void *buf, size_t len, igw_arena *a, unsigned max_depth);

/* Records a failure of `kind` at the current path (first failure wins); returns -1.
 * Once a failure is recorded every scanning call returns -1 without reading. */
int igw_json_fail(igw_json *j, igw_json_errkind kind, const char *reason);

/* Pushes an object key / array index onto the error path; pop removes the last.
 * igw_json_fail formats the segments pushed at that moment. Free values
 * (igw_json_value) use them for their inner path; generated decoders push
 * nothing and build the path lazily with the prefix calls below. */
void igw_json_push_key(igw_json *j, const char *key, size_t len);
void igw_json_push_index(igw_json *j, uint32_t index);
void igw_json_pop(igw_json *j);

/* Lazy error paths: while a recorded failure propagates out of nested
 * values, each level prepends its own segment (RFC 6901 escaped) to
 * j->path exactly once, so the happy path pays nothing for paths. No-ops
 * when no failure is recorded; both return -1 to be used as
 * `return igw_json_prefix_key(j, k.ptr, k.len);`.
 * Overflow policy (the same result as formatting the whole pointer at
 * once): when the pointer would not fit in j->path, trailing segments are
 * dropped until it does, and a key holding NUL (which a C string cannot
 * carry) drops itself and everything after it; the result therefore always
 * names the failing value or one of its ancestors, never a wrong sibling. */
int igw_json_prefix_key(igw_json *j, const char *key, size_t len);
int igw_json_prefix_index(igw_json *j, uint32_t index);

/* Skips whitespace and returns the next byte without consuming it, or -1 at EOF. */
int igw_json_peek(igw_json *j);

/* Consumes '{' (TYPE/NULL error otherwise). Returns 0 or -1. Counts depth. */
int igw_json_object_begin(igw_json *j);

/* Reads the next key of the open object and its ':'. Returns 1 with *key set
 * (unescaped, UTF-8 validated), 0 at '}' (depth restored), -1 on error. */
int igw_json_object_next(igw_json *j, igw_str *key);

/* Consumes '['. Returns 0 or -1. Counts depth. */
int igw_json_array_begin(igw_json *j);

/* Returns 1 when another item follows (positioned at it), 0 at ']', -1 on error. */
int igw_json_array_next(igw_json *j);

/* Reads a string value into *out (unescaped, validated). 0 or -1. */
int igw_json_string(igw_json *j, igw_str *out);

/* Reads a strict integer in [min, max]: no fraction, exponent, leading zero or
 * '+'; "-0" is refused when min >= 0; beyond +-(2^53-1) is a RANGE error. */
int igw_json_int(igw_json *j, int64_t *out, int64_t min, int64_t max);

/* Reads `true` or `false` and nothing else. 0 or -1. */
int igw_json_bool(igw_json *j, bool *out);

/* Validation profile of a free (schema-less) value. */
typedef enum igw_json_profile {
    IGW_JSON_RFC8259 = 0, /* any RFC 8259 value: duplicates and big numbers allowed */
    IGW_JSON_STRICT = 1   /* no duplicate keys; integers within the safe range;
                             other numbers must be finite doubles */
} igw_json_profile;

/* Validates one free value of any type (object, array, ...) that nests at most
 * `max_depth` levels below the current depth and spans at most `max_bytes`;
 * *raw receives the exact bytes of the value. 0 or -1.
 * Depth: an object or array value is itself level 1, so max_depth 0 admits
 * scalars only and max_depth 1 admits {"a":1} but not {"a":{}}; the limit
 * given to igw_json_init applies as well. Size: the value's bytes, from its
 * first to its last (surrounding whitespace excluded); scanning never reads
 * past max_bytes + 1 bytes, and a value that cannot end within max_bytes is a
 * SIZE failure reported at the value itself. Errors inside the value carry
 * its inner path (/key/index...). On return depth and the error path are as
 * on entry. */
int igw_json_value(igw_json *j, igw_json_profile profile, unsigned max_depth,
                   size_t max_bytes, igw_str *raw);

/* Requires only whitespace up to the end of input. 0 or -1 (TRAILING). */
int igw_json_finish(igw_json *j);

/* Whole-document check of a free value: init, igw_json_value, finish. */
int igw_json_validate(const void *buf, size_t len, igw_json_profile profile,
                      unsigned max_depth, igw_arena *a, igw_json *j);

/* Short stable name of an error kind ("duplicate", "unknown-field", ...). */
const char *igw_json_errkind_name(igw_json_errkind kind);

/* Validates that `s` is UTF-8 as igw_json_string would accept it. */
bool igw_json_utf8_valid(const char *s, size_t len);

#endif
