/* signedurl.h - expiring HMAC-signed download URLs of uploaded files.
 *
 * A URL is
 *   /api/v1/things/device/edge/files/<path>?expires=<unix>&sig=<sig>
 * where <path> is the file's path under the storage root
 * ("edge/p/d/250101/120000/a.txt"), percent-encoded with every byte but
 * ALPHA DIGIT - . _ ~ and the '/' separators as %XX (upper-case hex);
 * <unix> is the first second at which the URL no longer works (decimal,
 * no leading zero, 1..2^53-1); and
 *   <sig> = base64url(HMAC-SHA256(key, <decoded path> "\n" <unix>)), no padding.
 * The key should be one used for nothing else.
 *
 * Verification is strict: one spelling per URL. The path must be exactly
 * the canonical encoding (what make produces), the query exactly the two
 * parameters, each once, in either order. A path is refused (by make and
 * verify) when empty, longer than IGW_SIGNEDURL_PATH_MAX, starting or
 * ending with '/', containing "//", a NUL or any control byte, or a "." or
 * ".." component. Names like "a..b" are fine: only whole components can
 * climb, and the filename rules allow inner dots. */
#ifndef IGW_SIGNEDURL_H
#define IGW_SIGNEDURL_H

#include <stddef.h>
#include <stdint.h>

#define IGW_SIGNEDURL_PREFIX "/api/v1/things/device/edge/files/"
#define IGW_SIGNEDURL_PATH_MAX 1024                         /* bytes of a decoded path */
#define IGW_SIGNEDURL_EXPIRES_MAX INT64_C(9007199254740991) /* 2^53 - 1 */
#define IGW_SIGNEDURL_SIG_LEN 43                            /* base64url of 32 bytes */
/* Longest URL: prefix, the path fully encoded, "?expires=" 16 digits "&sig=" 43. */
#define IGW_SIGNEDURL_MAX                                                                  \
    (sizeof IGW_SIGNEDURL_PREFIX - 1 + 3 * IGW_SIGNEDURL_PATH_MAX + 9 + 16 + 5 +           \
     IGW_SIGNEDURL_SIG_LEN)

/* Results of igw_signedurl_verify. */
enum {
    IGW_SIGNEDURL_OK = 0,
    IGW_SIGNEDURL_EMALFORMED = -1, /* not a URL make could have produced */
    IGW_SIGNEDURL_EBADSIG = -2,    /* well-formed, signature does not match */
    IGW_SIGNEDURL_EEXPIRED = -3,   /* signature matches but expires <= now */
    IGW_SIGNEDURL_EINTERNAL = -4   /* libcrypto failure, bad key or buffer */
};

/* Writes the URL of path[0..len) (see the top of this file), valid while
 * now < expires, NUL-terminated into out. key must be non-empty. Returns
 * the URL's length, or -1 (bad path or expires, buffer too small, libcrypto
 * failure; out emptied). */
long igw_signedurl_make(const unsigned char *key, size_t keylen, const char *path, size_t len,
                        int64_t expires, char *out, size_t cap);

/* Verifies a request: path[0..plen) is the request path without the query
 * (starting with IGW_SIGNEDURL_PREFIX), query[0..qlen) what follows '?'
 * (without it). Order: syntax, signature (constant-time compare), then
 * expires > now. On OK writes the decoded path NUL-terminated to out
 * (cap >= IGW_SIGNEDURL_PATH_MAX + 1 always suffices); otherwise out is
 * emptied. Returns IGW_SIGNEDURL_OK or a negative IGW_SIGNEDURL_E* code. */
int igw_signedurl_verify(const unsigned char *key, size_t keylen, const char *path, size_t plen,
                         const char *query, size_t qlen, int64_t now, char *out, size_t cap);

/* 1 if path[0..len) is a path make accepts, else 0. */
int igw_signedurl_path_ok(const char *path, size_t len);

/* A short name of a result code, for logs. */
const char *igw_signedurl_strerror(int code);

#endif
