/* jwt.h - login tokens: JSON Web Tokens (RFC 7519) signed with HS256 only.
 *
 * A token is base64url(header) "." base64url(claims) "." base64url(HMAC),
 * base64url without padding (RFC 7515), where
 *   header  {"alg":"HS256","typ":"JWT"}                      (exactly)
 *   claims  {"sub":"<userId>","ent":"<enterpriseId>","iat":N,"exp":N}
 *   HMAC    HMAC-SHA256(key, header_b64 "." claims_b64), 32 bytes
 * sub and ent are canonical decimal ids (1..2^53-1) as strings; iat and exp
 * are Unix seconds (integers 0..2^53-1, iat <= exp).
 *
 * Verification is strict, in this order: size (at most IGW_JWT_MAX bytes),
 * shape (three parts, canonical unpadded base64url, a 32-byte signature),
 * signature (HMAC recomputed, compared in constant time) - nothing decoded
 * from the token is parsed before that - then the header (valid strict JSON,
 * alg exactly "HS256", typ "JWT" if present, no other member, so "none",
 * "HS512", "kid", "crit" are all refused), the claims (strict JSON, the four
 * members above and no other, no duplicates), and exp > now.
 * The key is raw bytes, IGW_JWT_KEY_MIN..IGW_JWT_KEY_MAX of them. */
#ifndef IGW_JWT_H
#define IGW_JWT_H

#include <stddef.h>
#include <stdint.h>

#define IGW_JWT_MAX 1024     /* longest token accepted or produced */
#define IGW_JWT_KEY_MIN 32   /* bytes; RFC 7518 3.2: at least the hash size */
#define IGW_JWT_KEY_MAX 1024

enum {
    IGW_JWT_OK = 0,
    IGW_JWT_EFORMAT = -1,    /* size, parts, base64url, signature length */
    IGW_JWT_ESIGNATURE = -2, /* HMAC does not match */
    IGW_JWT_EHEADER = -3,    /* header not {"alg":"HS256"[,"typ":"JWT"]} */
    IGW_JWT_ECLAIMS = -4,    /* claims malformed, missing, unknown or out of range */
    IGW_JWT_EEXPIRED = -5,   /* exp <= now */
    IGW_JWT_EKEY = -6,       /* key length out of range */
    IGW_JWT_EINTERNAL = -7   /* libcrypto or allocation failure, buffer too small */
};

typedef struct igw_jwt_claims {
    int64_t user_id;       /* "sub" */
    int64_t enterprise_id; /* "ent" */
    int64_t iat, exp;      /* Unix seconds */
} igw_jwt_claims;

/* Writes the NUL-terminated token for `c` into out (cap >= IGW_JWT_MAX + 1
 * always suffices). Returns IGW_JWT_OK or a negative code (EKEY, ECLAIMS for
 * ids or times out of range, EINTERNAL). */
int igw_jwt_sign(const unsigned char *key, size_t keylen, const igw_jwt_claims *c, char *out,
                 size_t cap);

/* Verifies `tok` (len bytes, no surrounding whitespace) at time now_s.
 * Returns IGW_JWT_OK with *out filled (may be NULL) or a negative code with
 * *out zeroed. Report every failure to clients as one "unauthenticated". */
int igw_jwt_verify(const char *tok, size_t len, const unsigned char *key, size_t keylen,
                   int64_t now_s, igw_jwt_claims *out);

/* Short name of a result code ("signature", "expired", ...), for logs. */
const char *igw_jwt_strerror(int code);

#endif
