/* devauth_test.c - unit tests of device credentials (devauth.c).
 *
 * The known-answer vectors were computed with the openssl CLI, independently
 * of devauth.c, by tests/lib/devauth_vectors.sh. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base64.h"
#include "devauth.h"

#include "../check.h"

/* ---- known answers (tests/lib/devauth_vectors.sh) ---------------------------------- */

typedef struct kat {
    const char *secret_b64, *username, *pw256, *pw1;
} kat;

static const kat kats[] = {
    {"MDEyMzQ1Njc4OWFiY2RlZmdoaWo=",
     "254pwnKQsvK&dev01;12010126;abc12;2000000000",
     "66dbc99be04bf7a5e96252fcc30ab7fc80f540fdcea4077ea0d15802b33c2f79;hmacsha256",
     "a4ef21da75b29278b05beec99cde35d49b948843;hmacsha1"},
    {"q83vASNFZ4mrze8BI0VniavN7wE=",
     "ProductA&camera-7;12010126;Zz9Aa;1767225600",
     "4426b8d7a44d0da10ded490240304301ae32c147be6962b8485b877f0f46bfa5;hmacsha256",
     "695a1a764ed5afb0b196ade23443b8a4ecc86364;hmacsha1"},
    {"//////////////////////////8=",
     "P&D;12010126;00000;9007199254740991",
     "c7b6f2c2a8c9660d742659711b9e91841bc2bc07e9972d49be724669030483fd;hmacsha256",
     "84ecdaffe03b5f5c86893a8771905d1f9f42d185;hmacsha1"},
    {"AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
     "x.y_z-1&n@m!e*~;12010126;QWERT;1",
     "5b60572d67bddbf02f2f689b11054b3a8a78c2d2ddeb4ea599e89a7238114682;hmacsha256",
     "8a7441d379b07a8aa41ca49f5157db89e4b5ed24;hmacsha1"},
    {"VI04Eh4N8VgM29U/dnu9cQ==",
     "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp&"
     "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd;12010126;a1B2c;4102444800",
     "0d39580f03371ced0856921190968f2736730c7363203f746fdf85fe00285ba6;hmacsha256",
     "8679a604f02fd52441039129194e020f741ecc60;hmacsha1"},
};
#define NKAT (sizeof kats / sizeof kats[0])

/* The Authorization value of kats[0] with its sha256 password. */
static const char KAT_BASIC[] =
    "Basic MjU0cHduS1FzdksmZGV2MDE7MTIwMTAxMjY7YWJjMTI7MjAwMDAwMDAwMDo2NmRiYzk5YmUwNGJmN2E1ZTk2"
    "MjUyZmNjMzBhYjdmYzgwZjU0MGZkY2VhNDA3N2VhMGQxNTgwMmIzM2MyZjc5O2htYWNzaGEyNTY=";

static size_t key_of(const char *b64, unsigned char *key)
{
    size_t n = 0;
    if (igw_devauth_secret_decode(b64, key, IGW_DEVAUTH_SECRET_MAX, &n) != 0)
        return 0;
    return n;
}

static int verify_b64(const char *user, const char *pw, const char *secret_b64, int64_t now,
                      igw_devauth_identity *id)
{
    unsigned char key[IGW_DEVAUTH_SECRET_MAX];
    size_t n = key_of(secret_b64, key);
    if (n == 0)
        return 99;
    return igw_devauth_verify(user, pw, key, n, now, id);
}

static void test_kat(void)
{
    for (size_t i = 0; i < NKAT; i++) {
        const kat *k = &kats[i];
        igw_devauth_username u;
        CHECK(igw_devauth_parse_username(k->username, strlen(k->username), &u) == 0);
        int64_t exp = u.expiry;
        igw_devauth_identity id;

        /* good sha256 and sha1, one second before expiry */
        CHECK(verify_b64(k->username, k->pw256, k->secret_b64, exp - 1, &id) == IGW_DEVAUTH_OK);
        CHECK(strcmp(id.product_id, u.product_id) == 0 && strcmp(id.device_name, u.device_name) == 0 &&
              id.expiry == exp);
        CHECK(verify_b64(k->username, k->pw1, k->secret_b64, exp - 1, &id) == IGW_DEVAUTH_OK);
        CHECK(strcmp(id.product_id, u.product_id) == 0);
        CHECK(verify_b64(k->username, k->pw256, k->secret_b64, 0, NULL) == IGW_DEVAUTH_OK);

        /* expired: expiry == now and expiry < now; identity zeroed */
        CHECK(verify_b64(k->username, k->pw256, k->secret_b64, exp, &id) == IGW_DEVAUTH_EEXPIRED);
        CHECK(id.product_id[0] == '\0' && id.device_name[0] == '\0' && id.expiry == 0);
        CHECK(verify_b64(k->username, k->pw1, k->secret_b64, exp + 1, &id) == IGW_DEVAUTH_EEXPIRED);
        CHECK(verify_b64(k->username, k->pw256, k->secret_b64, INT64_MAX, &id) == IGW_DEVAUTH_EEXPIRED);

        /* wrong secret (the next vector's) */
        const char *other = kats[(i + 1) % NKAT].secret_b64;
        CHECK(verify_b64(k->username, k->pw256, other, 0, &id) == IGW_DEVAUTH_EMISMATCH);
        CHECK(verify_b64(k->username, k->pw1, other, 0, &id) == IGW_DEVAUTH_EMISMATCH);
        CHECK(id.product_id[0] == '\0');

        /* unknown device: no secret */
        CHECK(igw_devauth_verify(k->username, k->pw256, NULL, 0, 0, &id) == IGW_DEVAUTH_EUNKNOWN);
        CHECK(igw_devauth_verify(k->username, k->pw1, NULL, 0, 0, &id) == IGW_DEVAUTH_EUNKNOWN);

        /* one flipped hex digit, first and last */
        char pw[IGW_DEVAUTH_PASS_MAX + 1];
        strcpy(pw, k->pw256);
        pw[0] = pw[0] == '0' ? '1' : '0';
        CHECK(verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EMISMATCH);
        strcpy(pw, k->pw1);
        pw[39] = pw[39] == '0' ? '1' : '0';
        CHECK(verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EMISMATCH);

        /* upper-case hex refused (devices send lower case) */
        strcpy(pw, k->pw256);
        int has_letter = 0;
        for (int j = 0; j < 64; j++)
            if (pw[j] >= 'a' && pw[j] <= 'f') {
                pw[j] = (char)(pw[j] - 32);
                has_letter = 1;
            }
        CHECK(has_letter && verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);

        /* algorithm suffix swapped; suffix case; truncated; extended */
        snprintf(pw, sizeof pw, "%.64s;hmacsha1", k->pw256);
        CHECK(verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);
        snprintf(pw, sizeof pw, "%.40s;hmacsha256", k->pw1);
        CHECK(verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);
        snprintf(pw, sizeof pw, "%.64s;HMACSHA256", k->pw256);
        CHECK(verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);
        snprintf(pw, sizeof pw, "%.64s", k->pw256);
        CHECK(verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);
        snprintf(pw, sizeof pw, "%.62s;hmacsha256", k->pw256);
        CHECK(verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);
        snprintf(pw, sizeof pw, "%s ", k->pw1);
        CHECK(verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);
        snprintf(pw, sizeof pw, "0%s", k->pw1);
        CHECK(verify_b64(k->username, pw, k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);
        CHECK(verify_b64(k->username, "", k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);
        CHECK(verify_b64(k->username, NULL, k->secret_b64, 0, &id) == IGW_DEVAUTH_EPASSWORD);
    }

    /* tampered usernames with the old password */
    const kat *k = &kats[0];
    static const char *tampered[] = {
        "254pwnKQsvK&dev02;12010126;abc12;2000000000", /* other device */
        "254pwnKQsvL&dev01;12010126;abc12;2000000000", /* other product */
        "254pwnKQsvK&dev01;12010126;abc13;2000000000", /* other connid */
        "254pwnKQsvK&dev01;12010126;abc12;2000000001", /* extended expiry */
        "254pwnKQsvK&dev01;12010126;abc12;200000000",  /* shortened expiry */
    };
    for (size_t i = 0; i < sizeof tampered / sizeof tampered[0]; i++) {
        CHECK(verify_b64(tampered[i], k->pw256, k->secret_b64, 0, NULL) == IGW_DEVAUTH_EMISMATCH);
        CHECK(verify_b64(tampered[i], k->pw1, k->secret_b64, 0, NULL) == IGW_DEVAUTH_EMISMATCH);
    }
    /* a mismatching expired credential reports the mismatch, not the expiry */
    CHECK(verify_b64(tampered[3], k->pw256, k->secret_b64, INT64_MAX, NULL) == IGW_DEVAUTH_EMISMATCH);

    /* bad secret arguments */
    unsigned char key[IGW_DEVAUTH_SECRET_MAX + 1] = {0};
    CHECK(igw_devauth_verify(k->username, k->pw256, key, 0, 0, NULL) == IGW_DEVAUTH_ESECRET);
    CHECK(igw_devauth_verify(k->username, k->pw256, key, sizeof key, 0, NULL) == IGW_DEVAUTH_ESECRET);
    CHECK(igw_devauth_verify(NULL, k->pw256, key, 20, 0, NULL) == IGW_DEVAUTH_EUSERNAME);

    /* every code has a log name, distinct */
    for (int a = -7; a <= 0; a++)
        for (int b = a + 1; b <= 0; b++)
            CHECK(strcmp(igw_devauth_strerror(a), igw_devauth_strerror(b)) != 0);
}

/* ---- usernames ------------------------------------------------------------------ */

static void test_usernames(void)
{
    igw_devauth_username u;
    static const char *good[] = {
        "P&D;12010126;abcde;1",
        "P&D;12010126;ABCDE;9007199254740991",
        "P&D;12010126;01234;1000000000",
        "a.b-c_d@e!f*g~h%i&j$k(l)m=n'o\"p;12010126;Zz0Zz;42",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(igw_devauth_parse_username(good[i], strlen(good[i]), &u) == 0);
    CHECK(igw_devauth_parse_username(good[1], strlen(good[1]), &u) == 0 &&
          strcmp(u.product_id, "P") == 0 && strcmp(u.device_name, "D") == 0 &&
          strcmp(u.connid, "ABCDE") == 0 && u.expiry == INT64_C(9007199254740991));
    CHECK(igw_devauth_parse_username(kats[4].username, strlen(kats[4].username), &u) == 0 &&
          strlen(u.product_id) == 64 && strlen(u.device_name) == 64 && u.expiry == 4102444800);

    char n65[66], lng[300];
    memset(n65, 'n', 65);
    n65[65] = '\0';
    static const char *bad[] = {
        "",
        "P&D",
        "&D;12010126;abcde;1",          /* empty productID */
        "P&;12010126;abcde;1",          /* empty deviceName */
        "PD;12010126;abcde;1",          /* no '&' */
        "P&D&E;12010126;abcde;1",       /* '&' in deviceName */
        "P;X&D;12010126;abcde;1",       /* ';' in productID */
        "P+&D;12010126;abcde;1",        /* MQTT wildcards and separator */
        "P&D#;12010126;abcde;1",
        "P&a/b;12010126;abcde;1",
        "P/&D;12010126;abcde;1",
        "P&D+;12010126;abcde;1",
        "P:x&D;12010126;abcde;1",       /* ':' (HTTP Basic separator) */
        "P&D:x;12010126;abcde;1",
        "P &D;12010126;abcde;1",        /* space */
        "P&D\t;12010126;abcde;1",       /* control chars */
        "P&D\x7f;12010126;abcde;1",
        "P\x01&D;12010126;abcde;1",
        "P&\xc3\xa9;12010126;abcde;1",  /* non-ASCII */
        "P&D;12010127;abcde;1",         /* other sdkappid */
        "P&D;1201012;abcde;1",
        "P&D;120101266;abcde;1",
        "P&D;;abcde;1",
        "P&D;12010126;abcd;1",          /* connid length */
        "P&D;12010126;abcdef;1",
        "P&D;12010126;;1",
        "P&D;12010126;ab-de;1",         /* connid alphabet */
        "P&D;12010126;ab_de;1",
        "P&D;12010126;ab de;1",
        "P&D;12010126;abcde;",          /* expiry */
        "P&D;12010126;abcde;0",
        "P&D;12010126;abcde;01",
        "P&D;12010126;abcde;+1",
        "P&D;12010126;abcde;-1",
        "P&D;12010126;abcde; 1",
        "P&D;12010126;abcde;1 ",
        "P&D;12010126;abcde;1.5",
        "P&D;12010126;abcde;1e9",
        "P&D;12010126;abcde;0x10",
        "P&D;12010126;abcde;9007199254740992",  /* 2^53 */
        "P&D;12010126;abcde;99999999999999999", /* 17 digits */
        "P&D;12010126;abcde;1;x",       /* extra field */
        "P&D;12010126;abcde",           /* missing field */
        "P&D;12010126;abcde;1\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int ok = igw_devauth_parse_username(bad[i], strlen(bad[i]), &u) == -1 &&
                 u.product_id[0] == '\0' && u.expiry == 0;
        if (!ok)
            printf("  accepted bad username #%zu \"%s\"\n", i, bad[i]);
        CHECK(ok);
        CHECK(igw_devauth_verify(bad[i], kats[0].pw256, (const unsigned char *)"k", 1, 0, NULL) ==
              IGW_DEVAUTH_EUSERNAME);
    }
    /* 65-byte names; over-long whole username; embedded NUL */
    snprintf(lng, sizeof lng, "%s&D;12010126;abcde;1", n65);
    CHECK(igw_devauth_parse_username(lng, strlen(lng), &u) == -1);
    snprintf(lng, sizeof lng, "P&%s;12010126;abcde;1", n65);
    CHECK(igw_devauth_parse_username(lng, strlen(lng), &u) == -1);
    CHECK(igw_devauth_verify(lng, kats[0].pw256, (const unsigned char *)"k", 1, 0, NULL) ==
          IGW_DEVAUTH_EUSERNAME);
    static const char nul[] = "P&D;12010126;abcde;1\0";
    CHECK(igw_devauth_parse_username(nul, sizeof nul - 1, &u) == -1);
    static const char nul2[] = "P&D\0;12010126;abcde;1";
    CHECK(igw_devauth_parse_username(nul2, sizeof nul2 - 1, &u) == -1);

    CHECK(igw_devauth_name_ok("abc", 3) == 1);
    CHECK(igw_devauth_name_ok("", 0) == 0);
    CHECK(igw_devauth_name_ok(n65, 64) == 1);
    CHECK(igw_devauth_name_ok(n65, 65) == 0);
}

/* ---- HTTP Basic ------------------------------------------------------------------- */

static int basic(const char *h, char *u, size_t ucap, char *p, size_t pcap)
{
    return igw_devauth_parse_basic(h, strlen(h), u, ucap, p, pcap);
}

static void test_basic(void)
{
    char u[IGW_DEVAUTH_USER_MAX + 1], p[IGW_DEVAUTH_PASS_MAX + 1], h[2 * IGW_DEVAUTH_BASIC_MAX];

    /* the openssl/base64 CLI vector */
    CHECK(basic(KAT_BASIC, u, sizeof u, p, sizeof p) == 0 && strcmp(u, kats[0].username) == 0 &&
          strcmp(p, kats[0].pw256) == 0);
    CHECK(verify_b64(u, p, kats[0].secret_b64, 0, NULL) == IGW_DEVAUTH_OK);
    CHECK(igw_devauth_basic(kats[0].username, kats[0].pw256, h, sizeof h) == 0 &&
          strcmp(h, KAT_BASIC) == 0);

    /* scheme case-insensitive */
    static const char *schemes[] = {"basic", "BASIC", "bAsIc"};
    for (int i = 0; i < 3; i++) {
        snprintf(h, sizeof h, "%s%s", schemes[i], KAT_BASIC + 5);
        CHECK(basic(h, u, sizeof u, p, sizeof p) == 0 && strcmp(u, kats[0].username) == 0);
    }
    /* RFC 7617's example; split at the first ':'; empty parts */
    CHECK(basic("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", u, sizeof u, p, sizeof p) == 0 &&
          strcmp(u, "Aladdin") == 0 && strcmp(p, "open sesame") == 0);
    CHECK(basic("Basic YTpiOmM=", u, sizeof u, p, sizeof p) == 0 && strcmp(u, "a") == 0 &&
          strcmp(p, "b:c") == 0);                                       /* a:b:c */
    CHECK(basic("Basic Og==", u, sizeof u, p, sizeof p) == 0 && u[0] == 0 && p[0] == 0); /* ":" */

    static const char *bad[] = {
        "",
        "Basic",
        "Basic ",                                  /* empty credentials: no ':' */
        "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",            /* no scheme */
        " Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",     /* leading space */
        "Basic  QWxhZGRpbjpvcGVuIHNlc2FtZQ==",     /* two spaces */
        "Basic\tQWxhZGRpbjpvcGVuIHNlc2FtZQ==",     /* tab */
        "BasicQWxhZGRpbjpvcGVuIHNlc2FtZQ==",       /* no space */
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ== ",     /* trailing space */
        "Basix QWxhZGRpbjpvcGVuIHNlc2FtZQ==",      /* other scheme */
        "Bearer QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
        "Digest QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ",        /* padding missing */
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=",
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ===",     /* too much padding */
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZR==",      /* non-zero trailing bits */
        "Basic YTpiOmN=",
        "Basic YTpi=mM=",                          /* '=' inside */
        "Basic YTpi====",
        "Basic QWxhZGRpbjpvcGVu IHNlc2FtZQ==",     /* inner space */
        "Basic QWxhZGRpbjpvcGVuIHNlc2Ft\nZQ==",    /* line break */
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r",
        "Basic YT-i",                              /* URL-safe alphabet */
        "Basic YT_i",
        "Basic YT*i",                              /* outside alphabet */
        "Basic QWxhZGRpbg==",                      /* "Aladdin": no ':' */
        "Basic YQph",                              /* "a\nb"... no ':' and CTL */
        "Basic YTpiCg==",                          /* "a:b\n": control char */
        "Basic YQA6Yg==",                          /* "a\0:b": NUL */
        "Basic YTpifw==",                          /* "a:b\x7f" */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        strcpy(u, "x");
        strcpy(p, "x");
        int ok = basic(bad[i], u, sizeof u, p, sizeof p) == -1 && u[0] == 0 && p[0] == 0;
        if (!ok)
            printf("  accepted bad header #%zu \"%s\"\n", i, bad[i]);
        CHECK(ok);
    }
    /* embedded NUL in the header (length-delimited) */
    static const char nulh[] = "Basic YTpi\0\0\0\0";
    CHECK(igw_devauth_parse_basic(nulh, sizeof nulh - 1, u, sizeof u, p, sizeof p) == -1);
    CHECK(igw_devauth_parse_basic(nulh, 10, u, sizeof u, p, sizeof p) == 0 && strcmp(u, "a") == 0 &&
          strcmp(p, "b") == 0); /* only len bytes are read */

    /* the largest credential fits exactly; one byte more is refused */
    const kat *k = &kats[4];
    char user[IGW_DEVAUTH_USER_MAX + 1];
    snprintf(user, sizeof user, "%.129s;12010126;a1B2c;9007199254740991", k->username);
    CHECK(strlen(user) == IGW_DEVAUTH_USER_MAX);
    CHECK(igw_devauth_basic(user, k->pw256, h, sizeof h) == 0 && strlen(h) == IGW_DEVAUTH_BASIC_MAX);
    CHECK(basic(h, u, sizeof u, p, sizeof p) == 0 && strcmp(u, user) == 0 && strcmp(p, k->pw256) == 0);
    CHECK(igw_devauth_parse_basic(h, strlen(h) + 1, u, sizeof u, p, sizeof p) == -1);
    CHECK(basic(h, u, sizeof u - 1, p, sizeof p) == -1);   /* user does not fit */
    CHECK(basic(h, u, sizeof u, p, sizeof p - 1) == -1);   /* pass does not fit */
    CHECK(igw_devauth_basic(user, k->pw256, h, IGW_DEVAUTH_BASIC_MAX) == -1 && h[0] == 0);
    /* an over-long but well-formed header, even with room to hold it */
    char big[2 * IGW_DEVAUTH_BASIC_MAX], bu[200], bp[200];
    memset(bu, 'u', 170);
    bu[170] = '\0';
    CHECK(igw_devauth_basic(bu, k->pw256, big, sizeof big) == 0 && strlen(big) > IGW_DEVAUTH_BASIC_MAX);
    CHECK(basic(big, bu, sizeof bu, bp, sizeof bp) == -1);

    /* igw_devauth_basic refuses what could not be parsed back */
    CHECK(igw_devauth_basic("a:b", "c", h, sizeof h) == -1);
    CHECK(igw_devauth_basic("a", "c\n", h, sizeof h) == -1);
    CHECK(igw_devauth_basic("a", "b:c", h, sizeof h) == 0 && strcmp(h, "Basic YTpiOmM=") == 0);
    CHECK(igw_devauth_basic("a", "b:c", h, 14) == -1 && igw_devauth_basic("a", "b:c", h, 15) == 0);
}

/* ---- secrets ----------------------------------------------------------------------- */

static void test_secrets(void)
{
    unsigned char key[IGW_DEVAUTH_SECRET_MAX];
    size_t n = 99;
    CHECK(igw_devauth_secret_decode("MDEyMzQ1Njc4OWFiY2RlZmdoaWo=", key, sizeof key, &n) == 0 &&
          n == 20 && memcmp(key, "0123456789abcdefghij", 20) == 0);
    CHECK(igw_devauth_secret_decode("VI04Eh4N8VgM29U/dnu9cQ==", key, sizeof key, &n) == 0 && n == 16);
    CHECK(igw_devauth_secret_decode("MDEyMzQ1Njc4OWFiY2RlZmdoaWo=", key, 19, &n) == -1 && n == 0);
    static const char *bad[] = {
        "",
        "MDEyMzQ1Njc4OWFiY2RlZmdoaWo",   /* unpadded */
        "MDEyMzQ1Njc4OWFiY2RlZmdoaWp=",  /* non-zero trailing bits */
        "MDEyMzQ1Njc4OWFiY2RlZmdoaWo= ",
        " MDEyMzQ1Njc4OWFiY2RlZmdoaWo=",
        "MDEyMzQ1Njc4OWFiY2RlZmdoa-o=",
        "MDEyMzQ1Njc4OWFiY2RlZmdoaWo=\n",
        "MDEyMzQ1Njc4OWFiY2Rl",          /* 15 bytes: too short */
        "MDEyMzQ1Njc4OWFiY2RlZg==",      /* 16 bytes is fine, see below */
    };
    for (size_t i = 0; i + 1 < sizeof bad / sizeof bad[0]; i++)
        CHECK(igw_devauth_secret_decode(bad[i], key, sizeof key, &n) == -1);
    CHECK(igw_devauth_secret_decode(bad[8], key, sizeof key, &n) == 0 && n == 16);

    /* 64 bytes accepted, 65 refused */
    unsigned char raw[66];
    char b64[128];
    memset(raw, 0xa5, sizeof raw);
    EVP_EncodeBlock((unsigned char *)b64, raw, 64);
    CHECK(igw_devauth_secret_decode(b64, key, sizeof key, &n) == 0 && n == 64);
    EVP_EncodeBlock((unsigned char *)b64, raw, 65);
    CHECK(igw_devauth_secret_decode(b64, key, sizeof key, &n) == -1);

    /* against libcrypto's encoder, random lengths and contents */
    int agree = 1;
    for (int t = 0; t < 2000; t++) {
        size_t len = IGW_DEVAUTH_SECRET_MIN + (size_t)(t % (IGW_DEVAUTH_SECRET_MAX - IGW_DEVAUTH_SECRET_MIN + 1));
        RAND_bytes(raw, (int)len);
        EVP_EncodeBlock((unsigned char *)b64, raw, (int)len);
        if (igw_devauth_secret_decode(b64, key, sizeof key, &n) != 0 || n != len ||
            memcmp(key, raw, len) != 0)
            agree = 0;
    }
    CHECK(agree);

    /* every byte value in every position of a quad: only the alphabet decodes */
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int alphabet_ok = 1;
    for (int pos = 0; pos < 4; pos++)
        for (int c = 1; c < 256; c++) {
            char s[] = "AAAAAAAAAAAAAAAAAAAAAAAA"; /* 18 zero bytes */
            s[4 + pos] = (char)c;
            const char *at = memchr(A, c, 64);
            int rc = igw_devauth_secret_decode(s, key, sizeof key, &n);
            if (at) {
                unsigned v = (unsigned)(at - A);
                unsigned got = (unsigned)key[3] << 16 | (unsigned)key[4] << 8 | key[5];
                if (rc != 0 || got != v << (6 * (3 - pos)))
                    alphabet_ok = 0;
            } else if (rc != -1) {
                alphabet_ok = 0;
            }
        }
    CHECK(alphabet_ok);

    /* new secrets: 28 chars, 20 bytes, distinct; cap checked */
    char s1[64], s2[64];
    CHECK(igw_devauth_secret_new(s1, sizeof s1) == 0 && strlen(s1) == 28 && s1[27] == '=');
    CHECK(igw_devauth_secret_new(s2, 29) == 0 && strcmp(s1, s2) != 0);
    CHECK(igw_devauth_secret_decode(s1, key, sizeof key, &n) == 0 && n == IGW_DEVAUTH_SECRET_LEN);
    CHECK(igw_devauth_secret_new(s2, 28) == -1);
}

/* ---- signing ------------------------------------------------------------------------ */

static void test_sign(void)
{
    char secret[64], user[IGW_DEVAUTH_USER_MAX + 1], pw[IGW_DEVAUTH_PASS_MAX + 1];
    char user2[IGW_DEVAUTH_USER_MAX + 1], pw2[IGW_DEVAUTH_PASS_MAX + 1];
    char hdr[IGW_DEVAUTH_BASIC_MAX + 1], u[IGW_DEVAUTH_USER_MAX + 1], p[IGW_DEVAUTH_PASS_MAX + 1];
    igw_devauth_identity id;
    igw_devauth_username pu;
    CHECK(igw_devauth_secret_new(secret, sizeof secret) == 0);

    for (int sha1 = 0; sha1 <= 1; sha1++) {
        CHECK(igw_devauth_sign("prod1", "cam-01", secret, 1700000000, sha1, user, sizeof user, pw,
                               sizeof pw) == 0);
        CHECK(strlen(pw) == (sha1 ? 49u : 75u));
        CHECK(igw_devauth_parse_username(user, strlen(user), &pu) == 0 && pu.expiry == 1700000000 &&
              strlen(pu.connid) == 5);
        CHECK(verify_b64(user, pw, secret, 1699999999, &id) == IGW_DEVAUTH_OK &&
              strcmp(id.product_id, "prod1") == 0 && strcmp(id.device_name, "cam-01") == 0 &&
              id.expiry == 1700000000);
        CHECK(verify_b64(user, pw, secret, 1700000000, &id) == IGW_DEVAUTH_EEXPIRED);
        /* signed with one secret, checked against another: refused */
        CHECK(verify_b64(user, pw, kats[0].secret_b64, 0, &id) == IGW_DEVAUTH_EMISMATCH &&
              id.product_id[0] == '\0');
        /* through HTTP Basic */
        CHECK(igw_devauth_basic(user, pw, hdr, sizeof hdr) == 0);
        CHECK(igw_devauth_parse_basic(hdr, strlen(hdr), u, sizeof u, p, sizeof p) == 0 &&
              verify_b64(u, p, secret, 0, NULL) == IGW_DEVAUTH_OK);
        /* connids are random */
        CHECK(igw_devauth_sign("prod1", "cam-01", secret, 1700000000, sha1, user2, sizeof user2, pw2,
                               sizeof pw2) == 0 &&
              strcmp(user, user2) != 0 && strcmp(pw, pw2) != 0);
    }
    /* sign with the known answers' devices, secrets and expiries */
    for (size_t i = 0; i < NKAT; i++) {
        igw_devauth_username ku;
        CHECK(igw_devauth_parse_username(kats[i].username, strlen(kats[i].username), &ku) == 0);
        CHECK(igw_devauth_sign(ku.product_id, ku.device_name, kats[i].secret_b64, ku.expiry, 0, user,
                               sizeof user, pw, sizeof pw) == 0);
        CHECK(verify_b64(user, pw, kats[i].secret_b64, 0, NULL) == IGW_DEVAUTH_OK);
    }

    /* refused inputs */
    CHECK(igw_devauth_sign("", "d", secret, 1, 0, user, sizeof user, pw, sizeof pw) == -1);
    CHECK(igw_devauth_sign("p", "a/b", secret, 1, 0, user, sizeof user, pw, sizeof pw) == -1);
    CHECK(igw_devauth_sign("p&", "d", secret, 1, 0, user, sizeof user, pw, sizeof pw) == -1);
    CHECK(igw_devauth_sign("p", "d", secret, 0, 0, user, sizeof user, pw, sizeof pw) == -1);
    CHECK(igw_devauth_sign("p", "d", secret, INT64_C(9007199254740992), 0, user, sizeof user, pw,
                           sizeof pw) == -1);
    CHECK(igw_devauth_sign("p", "d", "not base64", 1, 0, user, sizeof user, pw, sizeof pw) == -1);
    CHECK(igw_devauth_sign("p", "d", secret, 1, 0, user, 20, pw, sizeof pw) == -1 && user[0] == 0);
    CHECK(igw_devauth_sign("p", "d", secret, 1, 0, user, 21, pw, sizeof pw) == 0 && strlen(user) == 20);
    CHECK(igw_devauth_sign("p", "d", secret, 1, 0, user, sizeof user, pw, 75) == -1);
    CHECK(igw_devauth_sign("p", "d", secret, 1, 1, user, sizeof user, pw, 50) == 0);
    CHECK(igw_devauth_sign("p", "d", secret, 1, 1, user, sizeof user, pw, 49) == -1);
}

/* The hex the passwords (and igwd's digests) are written in. */
static void test_hex(void)
{
    const unsigned char in[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    char out[2 * sizeof in + 1];
    memset(out, 'x', sizeof out);
    igw_hex_encode(in, sizeof in, out);
    CHECK(strcmp(out, "00017f80abff") == 0);
    igw_hex_encode(in, 0, out);
    CHECK(out[0] == '\0');
}

int main(void)
{
    test_hex();
    test_kat();
    test_usernames();
    test_basic();
    test_secrets();
    test_sign();
    return check_summary("devauth_test");
}
