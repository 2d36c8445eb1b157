/* fuzz_devauth.c - libFuzzer harness of the device credential parsers: the
 * HTTP Basic value, the username, the password check and the secret.
 *
 * Input: the first byte picks what the rest is:
 *   0: an Authorization value; when it parses, its user and password go on
 *      through the username parser and igw_devauth_verify against a fixed
 *      secret, as the edge does;
 *   1: a username and a password separated by a NUL (the MQTT CONNECT path:
 *      the broker plugin hands them over as they came);
 *   2: a deviceSecret in base64;
 *   3: productID \0 deviceName \0 expiry digits: a credential signed for
 *      them (when the names are valid) must verify, and its Basic value
 *      must parse back to the same user and password.
 *
 * Invariants, each an abort() when broken:
 * - a parsed Basic value gives a user without ':' and neither part holds a
 *   control byte; encoding them again gives a value that parses the same;
 * - a parsed username has valid names, a 5-character connid and an expiry in
 *   1..2^53-1, and verify never says OK for a username that does not parse;
 * - verify with the secret a credential was signed with says OK (or expired),
 *   with one byte of the password changed never OK;
 * - a decoded secret is SECRET_MIN..SECRET_MAX bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devauth.h"
#include "fuzz.h"

static const char SECRET_B64[] = "c2VjcmV0LXNlY3JldC1zZWNyZXQ="; /* 20 bytes */
#define NOW INT64_C(1800000000)

static int has_ctl(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

static void check_username(const char *user)
{
    igw_devauth_username u;
    if (igw_devauth_parse_username(user, strlen(user), &u) != 0) {
        REQUIRE(u.product_id[0] == 0 && u.device_name[0] == 0 && u.expiry == 0);
        return;
    }
    REQUIRE(igw_devauth_name_ok(u.product_id, strlen(u.product_id)));
    REQUIRE(igw_devauth_name_ok(u.device_name, strlen(u.device_name)));
    REQUIRE(strlen(u.connid) == IGW_DEVAUTH_CONNID_LEN);
    REQUIRE(u.expiry >= 1 && u.expiry <= IGW_DEVAUTH_EXPIRY_MAX);
}

static void verify(const char *user, const char *pass)
{
    unsigned char key[IGW_DEVAUTH_SECRET_MAX];
    size_t keylen;
    REQUIRE(igw_devauth_secret_decode(SECRET_B64, key, sizeof key, &keylen) == 0);
    igw_devauth_username u;
    int parses = igw_devauth_parse_username(user, strlen(user), &u) == 0;
    igw_devauth_identity id;
    int rc = igw_devauth_verify(user, pass, key, keylen, NOW, &id);
    REQUIRE(rc <= 0 && rc >= IGW_DEVAUTH_EINTERNAL);
    REQUIRE(igw_devauth_strerror(rc) != NULL);
    if (rc == IGW_DEVAUTH_OK) {
        REQUIRE(parses);
        REQUIRE(strcmp(id.product_id, u.product_id) == 0 && strcmp(id.device_name, u.device_name) == 0);
        REQUIRE(id.expiry == u.expiry && u.expiry > NOW);
    } else {
        REQUIRE(id.product_id[0] == 0 && id.device_name[0] == 0);
    }
    /* An unknown device does the same work and never passes. */
    REQUIRE(igw_devauth_verify(user, pass, NULL, 0, NOW, NULL) != IGW_DEVAUTH_OK);
}

static void basic(const char *hdr, size_t len)
{
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    if (igw_devauth_parse_basic(hdr, len, user, sizeof user, pass, sizeof pass) != 0) {
        REQUIRE(user[0] == 0 && pass[0] == 0);
        return;
    }
    REQUIRE(len <= IGW_DEVAUTH_BASIC_MAX);
    REQUIRE(!strchr(user, ':') && !has_ctl(user) && !has_ctl(pass));
    char again[IGW_DEVAUTH_BASIC_MAX + 1];
    REQUIRE(igw_devauth_basic(user, pass, again, sizeof again) == 0);
    char u2[sizeof user], p2[sizeof pass];
    REQUIRE(igw_devauth_parse_basic(again, strlen(again), u2, sizeof u2, p2, sizeof p2) == 0);
    REQUIRE(strcmp(u2, user) == 0 && strcmp(p2, pass) == 0);
    check_username(user);
    verify(user, pass);
}

static void signed_round_trip(const char *p, const char *end)
{
    char product[IGW_DEVAUTH_NAME_MAX + 2], device[IGW_DEVAUTH_NAME_MAX + 2], digits[24];
    char *out[3] = {product, device, digits};
    size_t cap[3] = {sizeof product, sizeof device, sizeof digits};
    for (int i = 0; i < 3; i++) {
        const char *nul = memchr(p, 0, (size_t)(end - p));
        size_t n = (size_t)((nul ? nul : end) - p);
        if (n >= cap[i])
            return;
        memcpy(out[i], p, n);
        out[i][n] = 0;
        p = nul ? nul + 1 : end;
    }
    int64_t expiry = strtoll(digits, NULL, 10);
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    int sha1 = (unsigned char)digits[0] & 1;
    int names_ok = igw_devauth_name_ok(product, strlen(product)) && igw_devauth_name_ok(device, strlen(device));
    int rc = igw_devauth_sign(product, device, SECRET_B64, expiry, sha1, user, sizeof user, pass, sizeof pass);
    if (!names_ok || expiry < 1 || expiry > IGW_DEVAUTH_EXPIRY_MAX) {
        REQUIRE(rc != 0);
        return;
    }
    REQUIRE(rc == 0);
    unsigned char key[IGW_DEVAUTH_SECRET_MAX];
    size_t keylen;
    REQUIRE(igw_devauth_secret_decode(SECRET_B64, key, sizeof key, &keylen) == 0);
    igw_devauth_identity id;
    int v = igw_devauth_verify(user, pass, key, keylen, NOW, &id);
    REQUIRE(v == (expiry > NOW ? IGW_DEVAUTH_OK : IGW_DEVAUTH_EEXPIRED));
    if (v == IGW_DEVAUTH_OK)
        REQUIRE(strcmp(id.product_id, product) == 0 && strcmp(id.device_name, device) == 0);
    char tampered[sizeof pass];
    memcpy(tampered, pass, sizeof pass);
    tampered[(size_t)expiry % strlen(pass)] ^= 1; /* within the password */
    REQUIRE(igw_devauth_verify(user, tampered, key, keylen, NOW, NULL) != IGW_DEVAUTH_OK);
    char hdr[IGW_DEVAUTH_BASIC_MAX + 1];
    REQUIRE(igw_devauth_basic(user, pass, hdr, sizeof hdr) == 0);
    basic(hdr, strlen(hdr));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 4096)
        return 0;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    switch (data[0] % 4) {
    case 0:
        basic(p, (size_t)(end - p));
        break;
    case 1: {
        char user[512], pass[512];
        const char *nul = memchr(p, 0, (size_t)(end - p));
        size_t un = (size_t)((nul ? nul : end) - p), pn = nul ? (size_t)(end - nul - 1) : 0;
        if (un >= sizeof user || pn >= sizeof pass || (nul && memchr(nul + 1, 0, pn)))
            return 0;
        memcpy(user, p, un);
        user[un] = 0;
        if (pn)
            memcpy(pass, nul + 1, pn);
        pass[pn] = 0;
        check_username(user);
        verify(user, pass);
        break;
    }
    case 2: {
        char b64[256];
        size_t n = (size_t)(end - p);
        if (n >= sizeof b64 || memchr(p, 0, n))
            return 0;
        memcpy(b64, p, n);
        b64[n] = 0;
        unsigned char key[IGW_DEVAUTH_SECRET_MAX];
        size_t keylen = 0;
        if (igw_devauth_secret_decode(b64, key, sizeof key, &keylen) == 0)
            REQUIRE(keylen >= IGW_DEVAUTH_SECRET_MIN && keylen <= IGW_DEVAUTH_SECRET_MAX);
        break;
    }
    default:
        signed_round_trip(p, end);
        break;
    }
    return 0;
}
