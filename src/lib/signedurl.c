/* signedurl.c - expiring HMAC-signed download URLs (see signedurl.h). */
#include "signedurl.h"

#include "base64.h"

#include <limits.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define MAC_LEN 32
#define EXPIRES_DIGITS 16

static const char HEX[] = "0123456789ABCDEF";
static const size_t PREFIX_LEN = sizeof IGW_SIGNEDURL_PREFIX - 1;

/* Bytes written literally in the path: RFC 3986 unreserved and '/'. */
static int literal(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-' ||
           c == '.' || c == '_' || c == '~' || c == '/';
}

int igw_signedurl_path_ok(const char *path, size_t len)
{
    if (!path || len == 0 || len > IGW_SIGNEDURL_PATH_MAX || path[0] == '/' || path[len - 1] == '/')
        return 0;
    size_t start = 0; /* of the current component */
    for (size_t i = 0; i <= len; i++) {
        if (i < len) {
            unsigned char c = (unsigned char)path[i];
            if (c < 0x20 || c == 0x7f)
                return 0;
            if (c != '/')
                continue;
        }
        size_t n = i - start;
        if (n == 0 || (n == 1 && path[start] == '.') ||
            (n == 2 && path[start] == '.' && path[start + 1] == '.'))
            return 0;
        start = i + 1;
    }
    return 1;
}

static size_t put_digits(char *out, int64_t v)
{
    char tmp[EXPIRES_DIGITS + 4];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && n < sizeof tmp);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* HMAC-SHA256(key, path "\n" expires). Returns 0 or -1. */
static int mac(const unsigned char *key, size_t keylen, const char *path, size_t len, int64_t expires,
               unsigned char out[MAC_LEN])
{
    unsigned char msg[IGW_SIGNEDURL_PATH_MAX + 1 + EXPIRES_DIGITS];
    if (len > IGW_SIGNEDURL_PATH_MAX || keylen == 0 || keylen > INT_MAX)
        return -1;
    memcpy(msg, path, len);
    msg[len] = '\n';
    size_t n = len + 1 + put_digits((char *)msg + len + 1, expires);
    unsigned int ml = 0;
    if (!HMAC(EVP_sha256(), key, (int)keylen, msg, n, out, &ml) || ml != MAC_LEN)
        return -1;
    return 0;
}

long igw_signedurl_make(const unsigned char *key, size_t keylen, const char *path, size_t len,
                        int64_t expires, char *out, size_t cap)
{
    if (out && cap)
        out[0] = '\0';
    if (!key || !out || !igw_signedurl_path_ok(path, len) || expires < 1 ||
        expires > IGW_SIGNEDURL_EXPIRES_MAX)
        return -1;
    char digits[EXPIRES_DIGITS + 4];
    size_t nd = put_digits(digits, expires);
    size_t need = PREFIX_LEN + 9 + nd + 5 + IGW_SIGNEDURL_SIG_LEN + 1;
    for (size_t i = 0; i < len; i++)
        need += literal((unsigned char)path[i]) ? 1 : 3;
    unsigned char m[MAC_LEN];
    if (need > cap || mac(key, keylen, path, len, expires, m))
        return -1;
    size_t o = 0;
    memcpy(out, IGW_SIGNEDURL_PREFIX, PREFIX_LEN);
    o += PREFIX_LEN;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)path[i];
        if (literal(c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = HEX[c >> 4];
            out[o++] = HEX[c & 15];
        }
    }
    memcpy(out + o, "?expires=", 9);
    o += 9;
    memcpy(out + o, digits, nd);
    o += nd;
    memcpy(out + o, "&sig=", 5);
    o += 5;
    long sl = igw_b64_encode(IGW_B64_URL, m, MAC_LEN, out + o, cap - o);
    if (sl != IGW_SIGNEDURL_SIG_LEN) {
        out[0] = '\0';
        return -1;
    }
    return (long)(o + (size_t)sl);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1; /* lower case is not canonical */
}

/* Strictly decodes the canonical encoding of a path. Returns its length or -1. */
static long decode_path(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o == IGW_SIGNEDURL_PATH_MAX)
            return -1;
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (n - i < 3)
                return -1;
            int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0 || literal((unsigned char)(h << 4 | l)))
                return -1;
            out[o++] = (char)(h << 4 | l);
            i += 2;
        } else if (literal(c)) {
            out[o++] = (char)c;
        } else {
            return -1;
        }
    }
    return (long)o;
}

/* expires: 1..16 digits, no leading zero, at most EXPIRES_MAX. */
static int parse_expires(const char *s, size_t n, int64_t *v)
{
    if (n == 0 || n > EXPIRES_DIGITS || s[0] == '0')
        return -1;
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (s[i] - '0'); /* 16 digits fit */
    }
    if (x > IGW_SIGNEDURL_EXPIRES_MAX)
        return -1;
    *v = x;
    return 0;
}

/* Exactly "expires=..." and "sig=..." joined by '&', either order. */
static int parse_query(const char *q, size_t n, int64_t *expires, unsigned char sig[MAC_LEN])
{
    int have_exp = 0, have_sig = 0;
    const char *end = q + n;
    for (int k = 0; k < 2; k++) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        if ((k == 0) != (amp != NULL))
            return -1; /* not exactly two parameters */
        const char *pend = amp ? amp : end;
        const char *eq = memchr(q, '=', (size_t)(pend - q));
        if (!eq)
            return -1;
        size_t nl = (size_t)(eq - q), vl = (size_t)(pend - eq - 1);
        if (nl == 7 && memcmp(q, "expires", 7) == 0 && !have_exp) {
            if (parse_expires(eq + 1, vl, expires))
                return -1;
            have_exp = 1;
        } else if (nl == 3 && memcmp(q, "sig", 3) == 0 && !have_sig) {
            if (vl != IGW_SIGNEDURL_SIG_LEN || igw_b64_decode(IGW_B64_URL, eq + 1, vl, sig, MAC_LEN) != MAC_LEN)
                return -1;
            have_sig = 1;
        } else {
            return -1; /* unknown or repeated */
        }
        q = pend + (amp ? 1 : 0);
    }
    return have_exp && have_sig ? 0 : -1;
}

int igw_signedurl_verify(const unsigned char *key, size_t keylen, const char *path, size_t plen,
                         const char *query, size_t qlen, int64_t now, char *out, size_t cap)
{
    if (out && cap)
        out[0] = '\0';
    if (!key || keylen == 0 || !out || cap == 0)
        return IGW_SIGNEDURL_EINTERNAL;
    if (!path || !query || plen <= PREFIX_LEN || memcmp(path, IGW_SIGNEDURL_PREFIX, PREFIX_LEN) != 0 ||
        plen - PREFIX_LEN > 3 * IGW_SIGNEDURL_PATH_MAX)
        return IGW_SIGNEDURL_EMALFORMED;
    char dec[IGW_SIGNEDURL_PATH_MAX];
    long dl = decode_path(path + PREFIX_LEN, plen - PREFIX_LEN, dec);
    if (dl < 0 || !igw_signedurl_path_ok(dec, (size_t)dl))
        return IGW_SIGNEDURL_EMALFORMED;
    int64_t expires = 0;
    unsigned char got[MAC_LEN], want[MAC_LEN];
    if (parse_query(query, qlen, &expires, got))
        return IGW_SIGNEDURL_EMALFORMED;
    if (mac(key, keylen, dec, (size_t)dl, expires, want))
        return IGW_SIGNEDURL_EINTERNAL;
    if (CRYPTO_memcmp(want, got, MAC_LEN) != 0)
        return IGW_SIGNEDURL_EBADSIG;
    if (expires <= now)
        return IGW_SIGNEDURL_EEXPIRED;
    if ((size_t)dl + 1 > cap)
        return IGW_SIGNEDURL_EINTERNAL;
    memcpy(out, dec, (size_t)dl);
    out[dl] = '\0';
    return IGW_SIGNEDURL_OK;
}

const char *igw_signedurl_strerror(int code)
{
    switch (code) {
    case IGW_SIGNEDURL_OK:
        return "ok";
    case IGW_SIGNEDURL_EMALFORMED:
        return "malformed";
    case IGW_SIGNEDURL_EBADSIG:
        return "bad signature";
    case IGW_SIGNEDURL_EEXPIRED:
        return "expired";
    case IGW_SIGNEDURL_EINTERNAL:
        return "internal";
    default:
        return "unknown";
    }
}
