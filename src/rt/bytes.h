/* bytes.h - equality of byte strings for the generated matchers.
 *
 * Routes, keys and enum values are found by length, then one compare
 * against a constant. The C library's memcmp is a call (through the PLT)
 * once the constant is longer than what the compiler expands itself
 * (route paths are 29-41 bytes): a third of the strict stage's time around
 * a small body went there. igw_bytes_eq with a constant n unrolls into
 * 8-byte loads and one test. Header only; no state. */
#ifndef IGW_BYTES_H
#define IGW_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t igw_bytes_ld64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* True when the n bytes at a and at b are the same; both must be readable
 * for n bytes. Below 8 bytes the compiler's own memcmp expansion is used. */
static inline bool igw_bytes_eq(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    if (n < 8)
        return memcmp(x, y, n) == 0;
    uint64_t d = 0;
    size_t i = 0;
    for (; i + 8 < n; i += 8)
        d |= igw_bytes_ld64(x + i) ^ igw_bytes_ld64(y + i);
    d |= igw_bytes_ld64(x + n - 8) ^ igw_bytes_ld64(y + n - 8); /* the last word may overlap the one before */
    return d == 0;
}

#endif
