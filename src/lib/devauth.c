/* devauth.c - device credentials compatible with iThings devices (see devauth.h). */
#include "devauth.h"

#include "base64.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define SHA256_LEN 32
#define SHA1_LEN 20

/* ---- names and usernames ---------------------------------------------------- */

int igw_devauth_name_ok(const char *s, size_t len)
{
    if (!s || len == 0 || len > IGW_DEVAUTH_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e || c == '&' || c == ';' || c == ':' || c == '+' || c == '#' ||
            c == '/')
            return 0;
    }
    return 1;
}

static int is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

int igw_devauth_parse_username(const char *s, size_t len, igw_devauth_username *out)
{
    igw_devauth_username u;
    memset(&u, 0, sizeof u);
    if (out)
        memset(out, 0, sizeof *out);
    if (!s || !out || len > IGW_DEVAUTH_USER_MAX)
        return -1;
    const char *end = s + len;
    /* productID up to '&' */
    const char *amp = memchr(s, '&', len);
    if (!amp || !igw_devauth_name_ok(s, (size_t)(amp - s)))
        return -1;
    const char *dev = amp + 1;
    const char *semi = memchr(dev, ';', (size_t)(end - dev));
    if (!semi || !igw_devauth_name_ok(dev, (size_t)(semi - dev)))
        return -1;
    memcpy(u.product_id, s, (size_t)(amp - s));
    memcpy(u.device_name, dev, (size_t)(semi - dev));
    const char *p = semi + 1;
    if ((size_t)(end - p) < 8 + 1 || memcmp(p, IGW_DEVAUTH_SDKAPPID ";", 9) != 0)
        return -1;
    p += 9;
    if ((size_t)(end - p) < IGW_DEVAUTH_CONNID_LEN + 1)
        return -1;
    for (int i = 0; i < IGW_DEVAUTH_CONNID_LEN; i++)
        if (!is_alnum((unsigned char)p[i]))
            return -1;
    memcpy(u.connid, p, IGW_DEVAUTH_CONNID_LEN);
    p += IGW_DEVAUTH_CONNID_LEN;
    if (*p++ != ';')
        return -1;
    size_t nd = (size_t)(end - p);
    if (nd == 0 || nd > 16 || p[0] == '0')
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < nd; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0'); /* 16 digits fit in int64 */
    }
    if (v > IGW_DEVAUTH_EXPIRY_MAX)
        return -1;
    u.expiry = v;
    *out = u;
    return 0;
}

/* ---- verification ------------------------------------------------------------- */

static int hex_nibble(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* upper case refused: devices produce lower case */
}

/* Parses "<hex>;hmacsha256" or "<hex>;hmacsha1"; returns the digest length
 * (32 or 20) with the digest in d, or -1. */
static int parse_password(const char *pw, unsigned char d[SHA256_LEN])
{
    size_t n = strnlen(pw, IGW_DEVAUTH_PASS_MAX + 1);
    size_t dl;
    if (n == 64 + 11 && memcmp(pw + 64, ";hmacsha256", 11) == 0)
        dl = SHA256_LEN;
    else if (n == 40 + 9 && memcmp(pw + 40, ";hmacsha1", 9) == 0)
        dl = SHA1_LEN;
    else
        return -1;
    for (size_t i = 0; i < dl; i++) {
        int hi = hex_nibble((unsigned char)pw[2 * i]), lo = hex_nibble((unsigned char)pw[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        d[i] = (unsigned char)(hi << 4 | lo);
    }
    return (int)dl;
}

static int hmac(int sha1, const unsigned char *key, size_t klen, const char *msg, size_t mlen,
                unsigned char mac[SHA256_LEN])
{
    unsigned int outl = 0;
    if (!HMAC(sha1 ? EVP_sha1() : EVP_sha256(), key, (int)klen, (const unsigned char *)msg, mlen,
              mac, &outl))
        return -1;
    return outl == (sha1 ? SHA1_LEN : SHA256_LEN) ? 0 : -1;
}

int igw_devauth_verify(const char *username, const char *password, const unsigned char *secret,
                       size_t secret_len, int64_t now_s, igw_devauth_identity *out)
{
    static const unsigned char dummy[IGW_DEVAUTH_SECRET_LEN] = {0x5a};
    if (out)
        memset(out, 0, sizeof *out);
    igw_devauth_username u;
    if (!username)
        return IGW_DEVAUTH_EUSERNAME;
    size_t ulen = strnlen(username, IGW_DEVAUTH_USER_MAX + 1);
    if (igw_devauth_parse_username(username, ulen, &u) != 0)
        return IGW_DEVAUTH_EUSERNAME;
    unsigned char want[SHA256_LEN], got[SHA256_LEN];
    int dl = password ? parse_password(password, got) : -1;
    if (dl < 0)
        return IGW_DEVAUTH_EPASSWORD;
    int unknown = secret == NULL;
    if (unknown) {
        secret = dummy;
        secret_len = sizeof dummy;
    } else if (secret_len == 0 || secret_len > IGW_DEVAUTH_SECRET_MAX) {
        return IGW_DEVAUTH_ESECRET;
    }
    if (hmac(dl == SHA1_LEN, secret, secret_len, username, ulen, want) != 0)
        return IGW_DEVAUTH_EINTERNAL;
    int diff = CRYPTO_memcmp(want, got, (size_t)dl);
    OPENSSL_cleanse(want, sizeof want);
    if (unknown)
        return IGW_DEVAUTH_EUNKNOWN;
    if (diff != 0)
        return IGW_DEVAUTH_EMISMATCH;
    if (u.expiry <= now_s)
        return IGW_DEVAUTH_EEXPIRED;
    if (out) {
        memcpy(out->product_id, u.product_id, sizeof out->product_id);
        memcpy(out->device_name, u.device_name, sizeof out->device_name);
        out->expiry = u.expiry;
    }
    return IGW_DEVAUTH_OK;
}

const char *igw_devauth_strerror(int code)
{
    switch (code) {
    case IGW_DEVAUTH_OK: return "ok";
    case IGW_DEVAUTH_EUSERNAME: return "username";
    case IGW_DEVAUTH_EPASSWORD: return "password";
    case IGW_DEVAUTH_ESECRET: return "secret";
    case IGW_DEVAUTH_EUNKNOWN: return "unknown-device";
    case IGW_DEVAUTH_EMISMATCH: return "mismatch";
    case IGW_DEVAUTH_EEXPIRED: return "expired";
    case IGW_DEVAUTH_EINTERNAL: return "internal";
    default: return "?";
    }
}

/* ---- HTTP Basic ------------------------------------------------------------------ */

static int has_ctl(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] == 0x7f)
            return 1;
    return 0;
}

int igw_devauth_parse_basic(const char *hdr, size_t len, char *user, size_t ucap, char *pass,
                            size_t pcap)
{
    unsigned char buf[IGW_DEVAUTH_BASIC_MAX]; /* decoded is always shorter */
    int rc = -1;
    long n = -1;
    if (user && ucap)
        user[0] = '\0';
    if (pass && pcap)
        pass[0] = '\0';
    if (!hdr || !user || !pass || len < 6 || len > IGW_DEVAUTH_BASIC_MAX)
        return -1;
    for (int i = 0; i < 5; i++) /* ASCII case-insensitive, whatever the locale */
        if ((hdr[i] | 0x20) != "basic"[i])
            return -1;
    if (hdr[5] != ' ')
        return -1;
    n = igw_b64_decode(IGW_B64_STD, hdr + 6, len - 6, buf, sizeof buf);
    const unsigned char *colon = n < 0 ? NULL : memchr(buf, ':', (size_t)n);
    if (colon && !has_ctl(buf, (size_t)n)) {
        size_t ul = (size_t)(colon - buf), pl = (size_t)n - ul - 1;
        if (ul < ucap && pl < pcap) {
            memcpy(user, buf, ul);
            user[ul] = '\0';
            memcpy(pass, colon + 1, pl);
            pass[pl] = '\0';
            rc = 0;
        }
    }
    OPENSSL_cleanse(buf, sizeof buf);
    return rc;
}

int igw_devauth_basic(const char *user, const char *pass, char *out, size_t cap)
{
    unsigned char buf[IGW_DEVAUTH_BASIC_MAX];
    if (!user || !pass || !out || cap < 7)
        return -1;
    size_t ul = strlen(user), pl = strlen(pass);
    if (ul + 1 + pl > sizeof buf || strchr(user, ':') || has_ctl((const unsigned char *)user, ul) ||
        has_ctl((const unsigned char *)pass, pl))
        return -1;
    memcpy(buf, user, ul);
    buf[ul] = ':';
    memcpy(buf + ul + 1, pass, pl);
    memcpy(out, "Basic ", 6);
    int rc = igw_b64_encode(IGW_B64_STD, buf, ul + 1 + pl, out + 6, cap - 6) < 0 ? -1 : 0;
    OPENSSL_cleanse(buf, sizeof buf);
    if (rc != 0)
        out[0] = '\0';
    return rc;
}

/* ---- secrets and signing ----------------------------------------------------------- */

int igw_devauth_secret_decode(const char *b64, unsigned char *out, size_t cap, size_t *len)
{
    if (len)
        *len = 0;
    if (!b64 || !out || !len)
        return -1;
    size_t n = strnlen(b64, IGW_DEVAUTH_SECRET_B64_MAX + 1);
    if (n > IGW_DEVAUTH_SECRET_B64_MAX)
        return -1;
    unsigned char tmp[IGW_DEVAUTH_SECRET_MAX + 2];
    long got = igw_b64_decode(IGW_B64_STD, b64, n, tmp, sizeof tmp);
    int rc = -1;
    if (got >= IGW_DEVAUTH_SECRET_MIN && got <= IGW_DEVAUTH_SECRET_MAX && (size_t)got <= cap) {
        memcpy(out, tmp, (size_t)got);
        *len = (size_t)got;
        rc = 0;
    }
    OPENSSL_cleanse(tmp, sizeof tmp);
    return rc;
}

int igw_devauth_secret_new(char *b64, size_t cap)
{
    unsigned char raw[IGW_DEVAUTH_SECRET_LEN];
    if (!b64 || cap < 4 * ((IGW_DEVAUTH_SECRET_LEN + 2) / 3) + 1)
        return -1;
    if (RAND_bytes(raw, sizeof raw) != 1) {
        b64[0] = '\0';
        return -1;
    }
    int rc = igw_b64_encode(IGW_B64_STD, raw, sizeof raw, b64, cap) < 0 ? -1 : 0;
    OPENSSL_cleanse(raw, sizeof raw);
    return rc;
}

/* Five uniformly random [A-Za-z0-9] (rejection sampling over RAND_bytes). */
static int random_connid(char c[IGW_DEVAUTH_CONNID_LEN + 1])
{
    static const char ALNUM[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    int i = 0;
    while (i < IGW_DEVAUTH_CONNID_LEN) {
        unsigned char r[16];
        if (RAND_bytes(r, sizeof r) != 1)
            return -1;
        for (size_t k = 0; k < sizeof r && i < IGW_DEVAUTH_CONNID_LEN; k++)
            if (r[k] < 248) /* 4 * 62 */
                c[i++] = ALNUM[r[k] % 62];
    }
    c[i] = '\0';
    return 0;
}

int igw_devauth_sign(const char *product, const char *device, const char *secret_b64,
                     int64_t expiry, int sha1, char *username, size_t ucap, char *password,
                     size_t pcap)
{
    unsigned char key[IGW_DEVAUTH_SECRET_MAX], mac[SHA256_LEN];
    size_t klen = 0;
    char connid[IGW_DEVAUTH_CONNID_LEN + 1];
    int rc = -1;
    if (username && ucap)
        username[0] = '\0';
    if (password && pcap)
        password[0] = '\0';
    if (!product || !device || !username || !password ||
        !igw_devauth_name_ok(product, strlen(product)) ||
        !igw_devauth_name_ok(device, strlen(device)) || expiry < 1 ||
        expiry > IGW_DEVAUTH_EXPIRY_MAX)
        return -1;
    size_t dl = sha1 ? SHA1_LEN : SHA256_LEN;
    const char *suffix = sha1 ? ";hmacsha1" : ";hmacsha256";
    if (pcap < 2 * dl + strlen(suffix) + 1)
        return -1;
    if (igw_devauth_secret_decode(secret_b64, key, sizeof key, &klen) != 0)
        return -1;
    if (random_connid(connid) != 0)
        goto out;
    int n = snprintf(username, ucap, "%s&%s;" IGW_DEVAUTH_SDKAPPID ";%s;%lld", product, device,
                     connid, (long long)expiry);
    if (n < 0 || (size_t)n >= ucap)
        goto out;
    if (hmac(sha1, key, klen, username, (size_t)n, mac) != 0)
        goto out;
    igw_hex_encode(mac, dl, password);
    strcpy(password + 2 * dl, suffix);
    rc = 0;
out:
    OPENSSL_cleanse(key, sizeof key);
    OPENSSL_cleanse(mac, sizeof mac);
    if (rc != 0) {
        if (ucap)
            username[0] = '\0';
        password[0] = '\0';
    }
    return rc;
}
