/* base64.h - strict base64 (RFC 4648) for secrets, Basic credentials and
 * JWTs, and lowercase hex for digests.
 *
 * Strict means one accepted spelling per byte string: the alphabet only,
 * padding exactly as the variant says, unused trailing bits zero. Decoding
 * has no data-dependent branches or table lookups, since device secrets pass
 * through it. */
#ifndef IGW_BASE64_H
#define IGW_BASE64_H

#include <stddef.h>

typedef enum igw_b64_variant {
    IGW_B64_STD, /* '+' '/', '=' padding to a multiple of 4 (secrets, HTTP Basic) */
    IGW_B64_URL  /* '-' '_', no padding (JWT parts, RFC 7515) */
} igw_b64_variant;

/* Decodes n characters into out (at most cap bytes). Returns the decoded
 * length, or -1 when the input is not strict base64 of the variant or does
 * not fit; on -1 the bytes written to out are wiped. */
long igw_b64_decode(igw_b64_variant v, const char *in, size_t n, unsigned char *out, size_t cap);

/* Encodes n bytes into out with a terminating NUL. Returns the length
 * (without the NUL), or -1 when cap is too small. */
long igw_b64_encode(igw_b64_variant v, const unsigned char *in, size_t n, char *out, size_t cap);

/* Writes n bytes as 2n lowercase hex digits and a terminating NUL: out
 * holds at least 2n + 1 bytes. */
void igw_hex_encode(const unsigned char *in, size_t n, char *out);

#endif
