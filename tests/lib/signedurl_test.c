/* signedurl_test.c - unit tests of signed download URLs (signedurl.c).
 *
 * The known answer was computed with the openssl CLI, independently of
 * signedurl.c:
 *   printf 'edge/prod1/cam-01/250101/120000/caf\xc3\xa9 1.txt\n1767225600' |
 *     openssl dgst -sha256 -mac HMAC -macopt key:igw-test-key -binary |
 *     openssl base64 -A | tr '+/' '-_' | tr -d '=' */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "signedurl.h"

#include "../check.h"

static const unsigned char KEY[] = "igw-test-key";
#define KEYLEN (sizeof KEY - 1)
static const char KAT_PATH[] = "edge/prod1/cam-01/250101/120000/caf\xc3\xa9 1.txt";
static const int64_t KAT_EXP = 1767225600;
static const char KAT_URL[] = "/api/v1/things/device/edge/files/edge/prod1/cam-01/250101/120000/"
                              "caf%C3%A9%201.txt?expires=1767225600&sig=7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx_3o";

/* Verifies a whole URL (split at '?'); out gets the decoded path. */
static int verify_url(const char *url, int64_t now, char *out, size_t cap)
{
    const char *q = strchr(url, '?');
    if (!q)
        return igw_signedurl_verify(KEY, KEYLEN, url, strlen(url), "", 0, now, out, cap);
    return igw_signedurl_verify(KEY, KEYLEN, url, (size_t)(q - url), q + 1, strlen(q + 1), now, out, cap);
}

static int verify_parts(const char *path, const char *query, int64_t now)
{
    char out[IGW_SIGNEDURL_PATH_MAX + 1];
    return igw_signedurl_verify(KEY, KEYLEN, path, strlen(path), query, strlen(query), now, out,
                                sizeof out);
}

static void test_kat(void)
{
    char url[IGW_SIGNEDURL_MAX + 1], out[IGW_SIGNEDURL_PATH_MAX + 1];
    long n = igw_signedurl_make(KEY, KEYLEN, KAT_PATH, strlen(KAT_PATH), KAT_EXP, url, sizeof url);
    CHECK(n == (long)strlen(KAT_URL) && strcmp(url, KAT_URL) == 0);
    CHECK(verify_url(KAT_URL, KAT_EXP - 1, out, sizeof out) == IGW_SIGNEDURL_OK &&
          strcmp(out, KAT_PATH) == 0);
    CHECK(verify_url(KAT_URL, 0, out, sizeof out) == IGW_SIGNEDURL_OK);
    CHECK(verify_url(KAT_URL, INT64_MIN, out, sizeof out) == IGW_SIGNEDURL_OK);
    /* the expiry boundary: valid while now < expires */
    CHECK(verify_url(KAT_URL, KAT_EXP, out, sizeof out) == IGW_SIGNEDURL_EEXPIRED && out[0] == '\0');
    CHECK(verify_url(KAT_URL, KAT_EXP + 1, out, sizeof out) == IGW_SIGNEDURL_EEXPIRED);
    CHECK(verify_url(KAT_URL, INT64_MAX, out, sizeof out) == IGW_SIGNEDURL_EEXPIRED);
    /* another key */
    CHECK(igw_signedurl_verify((const unsigned char *)"igw-test-kez", KEYLEN, KAT_URL,
                               strchr(KAT_URL, '?') - KAT_URL, strchr(KAT_URL, '?') + 1,
                               strlen(strchr(KAT_URL, '?') + 1), 0, out, sizeof out) == IGW_SIGNEDURL_EBADSIG);
    /* the exact buffer size, one short */
    CHECK(igw_signedurl_make(KEY, KEYLEN, KAT_PATH, strlen(KAT_PATH), KAT_EXP, url, (size_t)n + 1) == n);
    CHECK(igw_signedurl_make(KEY, KEYLEN, KAT_PATH, strlen(KAT_PATH), KAT_EXP, url, (size_t)n) == -1 &&
          url[0] == '\0');
    /* out of verify: exact fit, one short */
    CHECK(verify_url(KAT_URL, 0, out, strlen(KAT_PATH) + 1) == IGW_SIGNEDURL_OK);
    CHECK(verify_url(KAT_URL, 0, out, strlen(KAT_PATH)) == IGW_SIGNEDURL_EINTERNAL && out[0] == '\0');
}

/* Every byte value in a name round-trips; the encoding is canonical. */
static void test_roundtrip(void)
{
    char url[IGW_SIGNEDURL_MAX + 1], out[IGW_SIGNEDURL_PATH_MAX + 1], path[512];
    int all = 1;
    for (int c = 0x20; c < 0x100; c++) {
        if (c == '/' || c == 0x7f)
            continue;
        int n = snprintf(path, sizeof path, "edge/p/d/250101/000000/x%cy", c);
        long l = igw_signedurl_make(KEY, KEYLEN, path, (size_t)n, 2, url, sizeof url);
        all &= l > 0 && verify_url(url, 1, out, sizeof out) == IGW_SIGNEDURL_OK && strcmp(out, path) == 0;
        /* literal exactly for unreserved characters */
        int unreserved = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         c == '-' || c == '.' || c == '_' || c == '~';
        char enc[8];
        snprintf(enc, sizeof enc, "x%%%02X", c);
        all &= unreserved ? strstr(url, enc) == NULL : strstr(url, enc) != NULL;
    }
    CHECK(all);
    /* the largest path and expires */
    char big[IGW_SIGNEDURL_PATH_MAX + 1];
    memset(big, '%', sizeof big);
    memcpy(big, "a/", 2);
    big[IGW_SIGNEDURL_PATH_MAX] = '\0';
    static char bigurl[IGW_SIGNEDURL_MAX + 1];
    long l = igw_signedurl_make(KEY, KEYLEN, big, IGW_SIGNEDURL_PATH_MAX, IGW_SIGNEDURL_EXPIRES_MAX,
                                bigurl, sizeof bigurl);
    CHECK(l == (long)(sizeof IGW_SIGNEDURL_PREFIX - 1 + 2 + 3 * (IGW_SIGNEDURL_PATH_MAX - 2) + 9 + 16 + 5 + 43));
    CHECK(l <= (long)IGW_SIGNEDURL_MAX);
    CHECK(verify_url(bigurl, 0, out, sizeof out) == IGW_SIGNEDURL_OK && strcmp(out, big) == 0);
    CHECK(igw_signedurl_make(KEY, KEYLEN, big, IGW_SIGNEDURL_PATH_MAX + 1, 5, bigurl, sizeof bigurl) == -1);
    CHECK(igw_signedurl_make(KEY, KEYLEN, "a", 1, 1, url, sizeof url) > 0 &&
          strstr(url, "?expires=1&sig=") != NULL);
    CHECK(igw_signedurl_make(KEY, KEYLEN, "a", 1, 0, url, sizeof url) == -1);
    CHECK(igw_signedurl_make(KEY, KEYLEN, "a", 1, -5, url, sizeof url) == -1);
    CHECK(igw_signedurl_make(KEY, KEYLEN, "a", 1, IGW_SIGNEDURL_EXPIRES_MAX + 1, url, sizeof url) == -1);
    CHECK(igw_signedurl_make(KEY, 0, "a", 1, 5, url, sizeof url) == -1);
    CHECK(igw_signedurl_make(NULL, 3, "a", 1, 5, url, sizeof url) == -1);
    /* different paths, expiries, keys: different signatures */
    char u1[256], u2[256];
    CHECK(igw_signedurl_make(KEY, KEYLEN, "a/b", 3, 100, u1, sizeof u1) > 0);
    CHECK(igw_signedurl_make(KEY, KEYLEN, "a/c", 3, 100, u2, sizeof u2) > 0 &&
          strcmp(strstr(u1, "sig="), strstr(u2, "sig=")) != 0);
    CHECK(igw_signedurl_make(KEY, KEYLEN, "a/b", 3, 101, u2, sizeof u2) > 0 &&
          strcmp(strstr(u1, "sig="), strstr(u2, "sig=")) != 0);
    CHECK(igw_signedurl_make(KEY, KEYLEN - 1, "a/b", 3, 100, u2, sizeof u2) > 0 &&
          strcmp(strstr(u1, "sig="), strstr(u2, "sig=")) != 0);
}

/* Paths make refuses (and so verify never sees signed). */
static void test_paths(void)
{
    static const char *bad[] = {"",     "/a",   "a/",      "a//b",  ".",     "..",
                                "../a", "a/..", "a/../b",  "a/./b", "./a",   "edge/p/../../etc/passwd",
                                "a\nb", "a\tb", ("a\x7f" "b"), "/"};
    char url[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!igw_signedurl_path_ok(bad[i], strlen(bad[i])));
        CHECK(igw_signedurl_make(KEY, KEYLEN, bad[i], strlen(bad[i]), 5, url, sizeof url) == -1 &&
              url[0] == '\0');
    }
    CHECK(!igw_signedurl_path_ok("a\0b", 3));
    static const char *good[] = {"a", "a/b", "a..b", "...", "a/.../b", ".a/b.", "a/..b/c", "\xff"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(igw_signedurl_path_ok(good[i], strlen(good[i])));
}

/* Replaces the first occurrence of from in s by to (into out). */
static void subst(char *out, size_t cap, const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    if (!p) {
        snprintf(out, cap, "%s", "<no match>");
        return;
    }
    snprintf(out, cap, "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
}

static void test_tamper(void)
{
    char u[IGW_SIGNEDURL_MAX + 1], out[IGW_SIGNEDURL_PATH_MAX + 1];
    const char *q = strchr(KAT_URL, '?');
    size_t plen = (size_t)(q - KAT_URL);

    /* every single byte of the URL changed: never OK */
    int all = 1;
    for (size_t i = 0; KAT_URL[i]; i++) {
        static const char repl[] = "aZ0%-_.~/?&=";
        for (size_t r = 0; repl[r]; r++) {
            if (KAT_URL[i] == repl[r])
                continue;
            strcpy(u, KAT_URL);
            u[i] = repl[r];
            int v = verify_url(u, 0, out, sizeof out);
            if (v == IGW_SIGNEDURL_OK) {
                printf("  tampered URL accepted: %s\n", u);
                all = 0;
            }
        }
    }
    CHECK(all);
    /* the path: a name changed is a bad signature; the signature covers the decoded path */
    subst(u, sizeof u, KAT_URL, "cam-01", "cam-02");
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EBADSIG && out[0] == '\0');
    subst(u, sizeof u, KAT_URL, "1.txt", "1.php");
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EBADSIG);
    /* the expiry moved later: bad signature, not extended */
    subst(u, sizeof u, KAT_URL, "expires=1767225600", "expires=1767225601");
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EBADSIG);
    subst(u, sizeof u, KAT_URL, "expires=1767225600", "expires=9767225600");
    CHECK(verify_url(u, 1767225600, out, sizeof out) == IGW_SIGNEDURL_EBADSIG);
    /* a bad signature on an expired URL says bad signature (signature first) */
    subst(u, sizeof u, KAT_URL, "sig=7k5", "sig=7k6");
    CHECK(verify_url(u, INT64_MAX, out, sizeof out) == IGW_SIGNEDURL_EBADSIG);
    /* The last of 43 characters carries 4 bits and 2 zero bits: 'o' is 1010|00. */
    subst(u, sizeof u, KAT_URL, "Tx_3o", "Tx_3p"); /* 1010|01: not canonical */
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    subst(u, sizeof u, KAT_URL, "Tx_3o", "Tx_3k"); /* 1001|00: other bits */
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EBADSIG);

    /* the path's encoding must be the canonical one */
    subst(u, sizeof u, KAT_URL, "%C3%A9", "%c3%a9"); /* lower-case hex */
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    subst(u, sizeof u, KAT_URL, "cam-01", "cam%2D01"); /* unreserved encoded */
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    subst(u, sizeof u, KAT_URL, "120000/", "120000%2F"); /* separator encoded */
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    subst(u, sizeof u, KAT_URL, "%201", " 1"); /* a raw space */
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    subst(u, sizeof u, KAT_URL, "%201", "+1"); /* '+' is not a space here */
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    subst(u, sizeof u, KAT_URL, "%201", "%2"); /* truncated escape */
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    subst(u, sizeof u, KAT_URL, "%201", "%G01");
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    subst(u, sizeof u, KAT_URL, ".txt?", ".txt%?");
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    /* the prefix */
    subst(u, sizeof u, KAT_URL, "/files/", "/file/");
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    subst(u, sizeof u, KAT_URL, "/api/", "/API/");
    CHECK(verify_url(u, 0, out, sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    CHECK(verify_parts(IGW_SIGNEDURL_PREFIX, "expires=1&sig=x", 0) == IGW_SIGNEDURL_EMALFORMED);
    CHECK(verify_parts("/api/v1", "", 0) == IGW_SIGNEDURL_EMALFORMED);
    /* the path given with its query is not a path */
    CHECK(igw_signedurl_verify(KEY, KEYLEN, KAT_URL, strlen(KAT_URL), q + 1, strlen(q + 1), 0, out,
                               sizeof out) == IGW_SIGNEDURL_EMALFORMED);
    CHECK(igw_signedurl_verify(KEY, KEYLEN, KAT_URL, plen, q + 1, strlen(q + 1), 0, out, sizeof out) ==
          IGW_SIGNEDURL_OK);
}

/* Traversal in the path: refused as malformed even when correctly signed
 * (the signature is checked after the syntax, so these never reach it). */
static void test_traversal(void)
{
    static const char *enc[] = {"edge/../etc/passwd", "edge/%2E%2E/x", "%2E%2E/x", "edge/./x",
                                "/etc/passwd",        "%2Fetc/passwd", "edge//x",  "edge/x/",
                                "edge/%00/x",         "edge/a%00b",    "edge/a%0Ab", "..",
                                "edge/..",            "edge\\..\\x",   "edge/%5C..%5Cx/.."};
    char path[256];
    int all = 1;
    for (size_t i = 0; i < sizeof enc / sizeof enc[0]; i++) {
        snprintf(path, sizeof path, "%s%s", IGW_SIGNEDURL_PREFIX, enc[i]);
        int v = verify_parts(path, "expires=5&sig=7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx_3o", 0);
        if (v != IGW_SIGNEDURL_EMALFORMED) {
            printf("  traversal %s: %s\n", enc[i], igw_signedurl_strerror(v));
            all = 0;
        }
    }
    CHECK(all);
    /* "%2E" for '.' is refused (not canonical), so ".." can only be literal */
    CHECK(verify_parts(IGW_SIGNEDURL_PREFIX "a%2Eb", "expires=5&sig=7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx_3o", 0) ==
          IGW_SIGNEDURL_EMALFORMED);
    /* an inner ".." is a name, not a step: well-formed, here a bad signature */
    CHECK(verify_parts(IGW_SIGNEDURL_PREFIX "edge/a..b", "expires=5&sig=7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx_3o", 0) ==
          IGW_SIGNEDURL_EBADSIG);
    /* a path longer than the maximum */
    static char longp[sizeof IGW_SIGNEDURL_PREFIX + 4 * IGW_SIGNEDURL_PATH_MAX];
    memcpy(longp, IGW_SIGNEDURL_PREFIX, sizeof IGW_SIGNEDURL_PREFIX - 1);
    memset(longp + sizeof IGW_SIGNEDURL_PREFIX - 1, 'a', IGW_SIGNEDURL_PATH_MAX + 1);
    CHECK(verify_parts(longp, "expires=5&sig=7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx_3o", 0) ==
          IGW_SIGNEDURL_EMALFORMED);
}

static void test_queries(void)
{
    char path[256];
    const char *q = strchr(KAT_URL, '?');
    snprintf(path, sizeof path, "%.*s", (int)(q - KAT_URL), KAT_URL);
    const char *sig = "7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx_3o";
    char qs[512];

    snprintf(qs, sizeof qs, "expires=1767225600&sig=%s", sig);
    CHECK(verify_parts(path, qs, 0) == IGW_SIGNEDURL_OK);
    snprintf(qs, sizeof qs, "sig=%s&expires=1767225600", sig); /* either order */
    CHECK(verify_parts(path, qs, 0) == IGW_SIGNEDURL_OK);

    static const char *bad[] = {
        "",
        "expires=1767225600",
        "sig=%s",
        "expires=1767225600&sig=%s&",
        "&expires=1767225600&sig=%s",
        "expires=1767225600&&sig=%s",
        "expires=1767225600&sig=%s&x=1",
        "x=1&expires=1767225600&sig=%s",
        "expires=1767225600&expires=1767225600",
        "sig=%s&sig=%s",
        "expires=1767225600&sig=%s&expires=1767225600",
        "expires=1767225600&sig=%s&sig=%s",
        "Expires=1767225600&sig=%s",
        "expires=1767225600&SIG=%s",
        "expires=01767225600&sig=%s",
        "expires=+1767225600&sig=%s",
        "expires=-1767225600&sig=%s",
        "expires= 1767225600&sig=%s",
        "expires=1767225600 &sig=%s",
        "expires=1767225600.0&sig=%s",
        "expires=0x69&sig=%s",
        "expires=&sig=%s",
        "expires=0&sig=%s",
        "expires=9007199254740992&sig=%s",
        "expires=99999999999999999&sig=%s",
        "expires&sig=%s",
        "expires=1767225600&sig",
        "expires=1767225600&sig=",
        "expires=1767225600&sig=%s=",
        "expires=1767225600&sig=%s%%3D",
        "expires=1767225600&sig=%sA",
        "expires=1767225600&sig=7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx_3",
        "expires=1767225600&sig=7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx/3o",
        "expires=1767225600&sig=7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx+3o",
        "expires=1767225600&sig=7k5WljjgjtvNDBWScUdhp3iu7K5CeZsyCykrG5Tx_3p", /* nonzero trailing bits */
        "expires=1767225600;sig=%s",
        "expires%%3D1767225600&sig=%s",
    };
    int all = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(qs, sizeof qs, bad[i], sig, sig);
        int v = verify_parts(path, qs, 0);
        if (v != IGW_SIGNEDURL_EMALFORMED) {
            printf("  query \"%s\": %s\n", qs, igw_signedurl_strerror(v));
            all = 0;
        }
    }
    CHECK(all);
    /* the largest expires is well-formed (here a bad signature) */
    snprintf(qs, sizeof qs, "expires=9007199254740991&sig=%s", sig);
    CHECK(verify_parts(path, qs, 0) == IGW_SIGNEDURL_EBADSIG);

    /* bad arguments */
    char out[8];
    CHECK(igw_signedurl_verify(KEY, 0, path, strlen(path), qs, strlen(qs), 0, out, sizeof out) ==
          IGW_SIGNEDURL_EINTERNAL);
    CHECK(igw_signedurl_verify(KEY, KEYLEN, path, strlen(path), qs, strlen(qs), 0, NULL, 0) ==
          IGW_SIGNEDURL_EINTERNAL);
    CHECK(igw_signedurl_verify(KEY, KEYLEN, NULL, 0, qs, strlen(qs), 0, out, sizeof out) ==
          IGW_SIGNEDURL_EMALFORMED);
    CHECK(strcmp(igw_signedurl_strerror(IGW_SIGNEDURL_EBADSIG), "bad signature") == 0);
    CHECK(strcmp(igw_signedurl_strerror(42), "unknown") == 0);
}

int main(void)
{
    test_kat();
    test_roundtrip();
    test_paths();
    test_tamper();
    test_traversal();
    test_queries();
    return check_summary("signedurl_test");
}
