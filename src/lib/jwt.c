/* jwt.c - HS256 JSON Web Tokens for user logins (see jwt.h). */
#include "jwt.h"

#include "base64.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "arena.h"
#include "decode.h"
#include "json.h"

#define SIG_LEN 32
#define SIG_B64_LEN 43 /* unpadded base64url of 32 bytes */
#define HEADER_B64 "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" /* {"alg":"HS256","typ":"JWT"} */
#define PART_MAX 512   /* decoded header or claims bytes */

static int mac(const unsigned char *key, size_t keylen, const char *msg, size_t len,
               unsigned char out[SIG_LEN])
{
    unsigned int ml = 0;
    if (!HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, len, out, &ml) ||
        ml != SIG_LEN)
        return -1;
    return 0;
}

static bool id_ok(int64_t v) { return v >= 1 && v <= IGW_JSON_SAFE_MAX; }
static bool time_ok(int64_t v) { return v >= 0 && v <= IGW_JSON_SAFE_MAX; }

int igw_jwt_sign(const unsigned char *key, size_t keylen, const igw_jwt_claims *c, char *out,
                 size_t cap)
{
    if (cap)
        out[0] = '\0';
    if (!key || keylen < IGW_JWT_KEY_MIN || keylen > IGW_JWT_KEY_MAX)
        return IGW_JWT_EKEY;
    if (!c || !id_ok(c->user_id) || !id_ok(c->enterprise_id) || !time_ok(c->iat) ||
        !time_ok(c->exp) || c->iat > c->exp)
        return IGW_JWT_ECLAIMS;
    char claims[160];
    int n = snprintf(claims, sizeof claims, "{\"sub\":\"%lld\",\"ent\":\"%lld\",\"iat\":%lld,\"exp\":%lld}",
                     (long long)c->user_id, (long long)c->enterprise_id, (long long)c->iat,
                     (long long)c->exp);
    if (n < 0 || (size_t)n >= sizeof claims)
        return IGW_JWT_EINTERNAL;
    char tok[IGW_JWT_MAX + 1];
    size_t hl = sizeof HEADER_B64 - 1;
    memcpy(tok, HEADER_B64, hl);
    tok[hl] = '.';
    long cl = igw_b64_encode(IGW_B64_URL, (const unsigned char *)claims, (size_t)n, tok + hl + 1,
                             sizeof tok - hl - 1);
    if (cl < 0)
        return IGW_JWT_EINTERNAL;
    size_t len = hl + 1 + (size_t)cl;
    unsigned char sig[SIG_LEN];
    if (mac(key, keylen, tok, len, sig) != 0)
        return IGW_JWT_EINTERNAL;
    tok[len++] = '.';
    long sl = igw_b64_encode(IGW_B64_URL, sig, SIG_LEN, tok + len, sizeof tok - len);
    OPENSSL_cleanse(sig, sizeof sig);
    if (sl < 0)
        return IGW_JWT_EINTERNAL;
    len += (size_t)sl;
    if (len + 1 > cap)
        return IGW_JWT_EINTERNAL;
    memcpy(out, tok, len + 1);
    return IGW_JWT_OK;
}

/* Header: {"alg":"HS256"} with an optional "typ":"JWT"; nothing else. */
static int check_header(const unsigned char *h, size_t n, igw_arena *a)
{
    igw_json j;
    igw_str k, v;
    bool alg = false, typ = false;
    igw_json_init(&j, h, n, a, 1);
    if (igw_json_object_begin(&j) != 0)
        return -1;
    int r;
    while ((r = igw_json_object_next(&j, &k)) == 1) {
        if (igw_str_eq(k, "alg", 3) && !alg) {
            if (igw_json_string(&j, &v) != 0 || !igw_str_eq(v, "HS256", 5))
                return -1;
            alg = true;
        } else if (igw_str_eq(k, "typ", 3) && !typ) {
            if (igw_json_string(&j, &v) != 0 || !igw_str_eq(v, "JWT", 3))
                return -1;
            typ = true;
        } else {
            return -1; /* unknown or duplicate member */
        }
    }
    if (r != 0 || igw_json_finish(&j) != 0 || !alg)
        return -1;
    return 0;
}

static int id_string(igw_json *j, int64_t *out)
{
    igw_str v;
    if (igw_json_string(j, &v) != 0 || !igw_format_canonical_id(v.ptr, v.len))
        return -1;
    int64_t x = 0;
    for (size_t i = 0; i < v.len; i++)
        x = x * 10 + (v.ptr[i] - '0');
    *out = x;
    return 0;
}

static int check_claims(const unsigned char *p, size_t n, igw_arena *a, igw_jwt_claims *c)
{
    igw_json j;
    igw_str k;
    unsigned seen = 0, bit;
    igw_json_init(&j, p, n, a, 1);
    if (igw_json_object_begin(&j) != 0)
        return -1;
    int r;
    while ((r = igw_json_object_next(&j, &k)) == 1) {
        int rc;
        if (igw_str_eq(k, "sub", 3)) {
            bit = 1;
            rc = id_string(&j, &c->user_id);
        } else if (igw_str_eq(k, "ent", 3)) {
            bit = 2;
            rc = id_string(&j, &c->enterprise_id);
        } else if (igw_str_eq(k, "iat", 3)) {
            bit = 4;
            rc = igw_json_int(&j, &c->iat, 0, IGW_JSON_SAFE_MAX);
        } else if (igw_str_eq(k, "exp", 3)) {
            bit = 8;
            rc = igw_json_int(&j, &c->exp, 0, IGW_JSON_SAFE_MAX);
        } else {
            return -1;
        }
        if (rc != 0 || (seen & bit))
            return -1;
        seen |= bit;
    }
    if (r != 0 || igw_json_finish(&j) != 0 || seen != 15 || c->iat > c->exp)
        return -1;
    return 0;
}

int igw_jwt_verify(const char *tok, size_t len, const unsigned char *key, size_t keylen,
                   int64_t now_s, igw_jwt_claims *out)
{
    igw_jwt_claims c;
    memset(&c, 0, sizeof c);
    if (out)
        memset(out, 0, sizeof *out);
    if (!key || keylen < IGW_JWT_KEY_MIN || keylen > IGW_JWT_KEY_MAX)
        return IGW_JWT_EKEY;
    if (!tok || len == 0 || len > IGW_JWT_MAX)
        return IGW_JWT_EFORMAT;
    const char *d1 = memchr(tok, '.', len);
    if (!d1)
        return IGW_JWT_EFORMAT;
    const char *d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok));
    if (!d2)
        return IGW_JWT_EFORMAT;
    const char *sig_b64 = d2 + 1;
    size_t hlen = (size_t)(d1 - tok), plen = (size_t)(d2 - d1 - 1);
    size_t slen = len - (size_t)(sig_b64 - tok);
    if (hlen == 0 || plen == 0 || slen != SIG_B64_LEN)
        return IGW_JWT_EFORMAT; /* also refuses a fourth part: '.' is not base64url */
    unsigned char h[PART_MAX], p[PART_MAX], sig[SIG_LEN + 2], want[SIG_LEN];
    long hn = igw_b64_decode(IGW_B64_URL, tok, hlen, h, sizeof h);
    long pn = igw_b64_decode(IGW_B64_URL, d1 + 1, plen, p, sizeof p);
    long sn = igw_b64_decode(IGW_B64_URL, sig_b64, slen, sig, sizeof sig);
    if (hn <= 0 || pn <= 0 || sn != SIG_LEN)
        return IGW_JWT_EFORMAT;
    if (mac(key, keylen, tok, (size_t)(d2 - tok), want) != 0)
        return IGW_JWT_EINTERNAL;
    int diff = CRYPTO_memcmp(want, sig, SIG_LEN);
    OPENSSL_cleanse(want, sizeof want);
    if (diff != 0)
        return IGW_JWT_ESIGNATURE;
    igw_arena a;
    igw_arena_init(&a, 4096);
    int rc = IGW_JWT_OK;
    if (check_header(h, (size_t)hn, &a) != 0)
        rc = IGW_JWT_EHEADER;
    else if (check_claims(p, (size_t)pn, &a, &c) != 0)
        rc = IGW_JWT_ECLAIMS;
    else if (c.exp <= now_s)
        rc = IGW_JWT_EEXPIRED;
    igw_arena_free(&a);
    if (rc == IGW_JWT_OK && out)
        *out = c;
    return rc;
}

const char *igw_jwt_strerror(int code)
{
    switch (code) {
    case IGW_JWT_OK: return "ok";
    case IGW_JWT_EFORMAT: return "format";
    case IGW_JWT_ESIGNATURE: return "signature";
    case IGW_JWT_EHEADER: return "header";
    case IGW_JWT_ECLAIMS: return "claims";
    case IGW_JWT_EEXPIRED: return "expired";
    case IGW_JWT_EKEY: return "key";
    case IGW_JWT_EINTERNAL: return "internal";
    }
    return "unknown";
}
