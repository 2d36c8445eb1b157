/* jwt_test.c - unit tests of the HS256 login tokens (jwt.c).
 *
 * The known answers were computed with the openssl CLI and coreutils,
 * independently of jwt.c:
 *   b64u() { basenc --base64url | tr -d '=\n'; }
 *   h=$(printf '{"alg":"HS256","typ":"JWT"}' | b64u); p=$(printf '%s' "$CLAIMS" | b64u)
 *   s=$(printf '%s.%s' "$h" "$p" | openssl dgst -sha256 -mac HMAC -macopt "key:$KEY" -binary | b64u)
 *   echo "$h.$p.$s"
 * (the refused-header and refused-claims vectors the same way, with the
 * header or claims shown beside each). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jwt.h"

#include "../check.h"

#define K1 "0123456789abcdef0123456789abcdef"
#define K2 "igw-test-key-with-more-than-32-bytes!"
#define NOW 1800000000

static int verify(const char *tok, const char *key, long long now, igw_jwt_claims *c)
{
    return igw_jwt_verify(tok, strlen(tok), (const unsigned char *)key, strlen(key), now, c);
}

typedef struct kat {
    const char *key;
    long long sub, ent, iat, exp;
    const char *token;
} kat;

static const kat kats[] = {
    {K1, 1001, 1, 1700000000, 1700086400,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMDAxIiwiZW50IjoiMSIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwMDg2NDAwfQ.UcpFb0lurWSaKK7VT4V7zyVKe4ZkormrkrqhvY0tO7g"},
    {K2, 9007199254740991LL, 42, 0, 9007199254740991LL,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI5MDA3MTk5MjU0NzQwOTkxIiwiZW50IjoiNDIiLCJpYXQiOjAsImV4cCI6OTAwNzE5OTI1NDc0MDk5MX0.GqsruB_9xZJzagd74jnDdnicpvIre3t51prTRkZpcnI"},
};

typedef struct bad {
    const char *what; /* the header or claims that were signed */
    int want;
    const char *token; /* signed with K1 */
} bad;

static const bad bads[] = {
    {"{\"alg\":\"none\",\"typ\":\"JWT\"}", IGW_JWT_EHEADER,
     "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MSwiZXhwIjoyMDAwMDAwMDAwfQ.PetFYfCp62FFiLanWdCEX9E26n98GwBTvNm8-XhnMgg"},
    {"{\"alg\":\"HS512\",\"typ\":\"JWT\"}", IGW_JWT_EHEADER,
     "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MSwiZXhwIjoyMDAwMDAwMDAwfQ.ywThEE1ppumRZoje8eTkLUec7TWEDmbduC-NNmDGkPs"},
    {"{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"x\"}", IGW_JWT_EHEADER,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6IngifQ.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MSwiZXhwIjoyMDAwMDAwMDAwfQ.ndV-sbT15o3gOyTHB1jmQabGsDc0w3zZakAk5cPqqtQ"},
    {"{\"alg\":\"HS256\",\"alg\":\"HS256\"}", IGW_JWT_EHEADER,
     "eyJhbGciOiJIUzI1NiIsImFsZyI6IkhTMjU2In0.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MSwiZXhwIjoyMDAwMDAwMDAwfQ.2BVK9XFoSXAg2llRa8RSBzMTqnas8jf1_DWSyow9MG4"},
    {"{\"alg\":\"hs256\"}", IGW_JWT_EHEADER,
     "eyJhbGciOiJoczI1NiJ9.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MSwiZXhwIjoyMDAwMDAwMDAwfQ.oM9QzEskNLDY9LcWwiyqncNSEge6WLs_fmVxB3pdlaU"},
    {"exp 1000 (expired)", IGW_JWT_EEXPIRED,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MSwiZXhwIjoxMDAwfQ.3AGYkOnwh5SkDIOSAMX8xPUPmfILBTtCCwaeU00Ee3Y"},
    {"\"sub\":1 (a number)", IGW_JWT_ECLAIMS,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOjEsImVudCI6IjEiLCJpYXQiOjEsImV4cCI6MjAwMDAwMDAwMH0.sHDPPxphkL1L2MFewabjmVUIAdec4o2TZHwRQcVgM-8"},
    {"\"sub\":\"01\"", IGW_JWT_ECLAIMS,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIwMSIsImVudCI6IjEiLCJpYXQiOjEsImV4cCI6MjAwMDAwMDAwMH0.Tg32WuGec2s3Psz26O-4FPrdZageTCQOBpBcjNqNFOM"},
    {"unknown claim adm", IGW_JWT_ECLAIMS,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MSwiZXhwIjoyMDAwMDAwMDAwLCJhZG0iOnRydWV9.-BbqHV2Dq3GB2IR5U2Y29XoD3EZLT17lT6o5bp0bTjs"},
    {"no exp", IGW_JWT_ECLAIMS,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MX0.TORwRNumnUS7b79J6TCBudIukqPeDJjWD2wmLo-JF1s"},
    {"duplicate sub", IGW_JWT_ECLAIMS,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwic3ViIjoiMiIsImVudCI6IjEiLCJpYXQiOjEsImV4cCI6MjAwMDAwMDAwMH0.fBVpU2ZGZSCUj0rSTKeliftthI1D3rY7y2tYZzggXB0"},
    {"\"exp\":2e9", IGW_JWT_ECLAIMS,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MSwiZXhwIjoyZTl9.5vBiT2KpV0CWMK8b-Y6BIlZ6qhoFFb1oPWUkXQf4lQQ"},
    {"iat > exp", IGW_JWT_ECLAIMS,
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MzAwMDAwMDAwMCwiZXhwIjoyMDAwMDAwMDAwfQ.91HunfJnmDeg0v0Olt0p466Old02JqAs6-Hpa-oVi0w"},
};

/* Signed with K1: header members in the other order, claims reordered. */
static const char reordered[] =
    "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJleHAiOjIwMDAwMDAwMDAsImlhdCI6MSwiZW50IjoiNyIsInN1YiI6IjUifQ.GsD7DIoHFUfHcJj_V3l4QBseye6rCYJbxNItgqytY6Y";

static void test_kats(void)
{
    for (size_t i = 0; i < sizeof kats / sizeof kats[0]; i++) {
        const kat *k = &kats[i];
        igw_jwt_claims c = {k->sub, k->ent, k->iat, k->exp};
        char tok[IGW_JWT_MAX + 1];
        CHECK(igw_jwt_sign((const unsigned char *)k->key, strlen(k->key), &c, tok, sizeof tok) ==
              IGW_JWT_OK);
        CHECK(strcmp(tok, k->token) == 0);
        igw_jwt_claims got;
        CHECK(verify(k->token, k->key, k->exp - 1, &got) == IGW_JWT_OK);
        CHECK(got.user_id == k->sub && got.enterprise_id == k->ent && got.iat == k->iat &&
              got.exp == k->exp);
        CHECK(verify(k->token, k->key, k->exp, &got) == IGW_JWT_EEXPIRED);
        CHECK(got.user_id == 0 && got.exp == 0);
    }
    igw_jwt_claims got;
    CHECK(verify(reordered, K1, NOW, &got) == IGW_JWT_OK);
    CHECK(got.user_id == 5 && got.enterprise_id == 7 && got.iat == 1 && got.exp == 2000000000);
}

static void test_refused(void)
{
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        int rc = verify(bads[i].token, K1, NOW, NULL);
        if (rc != bads[i].want)
            printf("  %s: got %s\n", bads[i].what, igw_jwt_strerror(rc));
        CHECK(rc == bads[i].want);
        /* the same token under another key fails on the signature first */
        CHECK(verify(bads[i].token, K2, NOW, NULL) == IGW_JWT_ESIGNATURE);
    }
}

static void test_tamper(void)
{
    const char *good = kats[0].token;
    long long now = 1700000001;
    char t[IGW_JWT_MAX + 64];
    size_t n = strlen(good);
    CHECK(verify(good, K1, now, NULL) == IGW_JWT_OK);
    CHECK(verify(good, K2, now, NULL) == IGW_JWT_ESIGNATURE);
    /* every single-character change is refused */
    unsigned refused = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(t, good, n + 1);
        if (t[i] == '.')
            continue;
        t[i] = t[i] == 'A' ? 'B' : 'A';
        refused += verify(t, K1, now, NULL) != IGW_JWT_OK;
    }
    CHECK(refused == n - 2);
    /* the last signature character holds 2 unused bits: setting one is not canonical */
    memcpy(t, good, n + 1);
    t[n - 1] = 'h'; /* 'g' = 32, 'h' = 33 */
    CHECK(verify(t, K1, now, NULL) == IGW_JWT_EFORMAT);
    /* padding, whitespace, extra parts, missing parts, standard base64 */
    snprintf(t, sizeof t, "%s=", good);
    CHECK(verify(t, K1, now, NULL) == IGW_JWT_EFORMAT);
    snprintf(t, sizeof t, "%s ", good);
    CHECK(verify(t, K1, now, NULL) == IGW_JWT_EFORMAT);
    snprintf(t, sizeof t, " %s", good);
    CHECK(verify(t, K1, now, NULL) == IGW_JWT_EFORMAT);
    snprintf(t, sizeof t, "%s.", good);
    CHECK(verify(t, K1, now, NULL) == IGW_JWT_EFORMAT);
    snprintf(t, sizeof t, "%s.e30", good);
    CHECK(verify(t, K1, now, NULL) == IGW_JWT_EFORMAT);
    const char *d2 = strrchr(good, '.');
    snprintf(t, sizeof t, "%.*s.", (int)(d2 - good), good); /* empty signature */
    CHECK(verify(t, K1, now, NULL) == IGW_JWT_EFORMAT);
    snprintf(t, sizeof t, "%.*s", (int)(d2 - good), good); /* two parts */
    CHECK(verify(t, K1, now, NULL) == IGW_JWT_EFORMAT);
    CHECK(verify(".x.UcpFb0lurWSaKK7VT4V7zyVKe4ZkormrkrqhvY0tO7g", K1, now, NULL) ==
          IGW_JWT_EFORMAT);
    /* a standard-base64 character */
    CHECK(verify("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMDAxIiwiZW50IjoiMSIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwMDg2NDAwfQ.UcpFb0lurWSaKK7VT4V7zyVKe4ZkormrkrqhvY0tO7g+",
                 K1, now, NULL) == IGW_JWT_EFORMAT);
    /* "alg":"none" with an empty signature (the classic downgrade) */
    CHECK(verify("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiIxIiwiZW50IjoiMSIsImlhdCI6MSwiZXhwIjoyMDAwMDAwMDAwfQ.",
                 K1, now, NULL) == IGW_JWT_EFORMAT);
    /* bounded size */
    char *big = malloc(IGW_JWT_MAX + 2);
    memset(big, 'A', IGW_JWT_MAX + 1);
    big[IGW_JWT_MAX + 1] = '\0';
    CHECK(verify(big, K1, now, NULL) == IGW_JWT_EFORMAT);
    free(big);
    CHECK(igw_jwt_verify(NULL, 0, (const unsigned char *)K1, 32, now, NULL) == IGW_JWT_EFORMAT);
    /* an embedded NUL */
    memcpy(t, good, n + 1);
    t[10] = '\0';
    CHECK(igw_jwt_verify(t, n, (const unsigned char *)K1, 32, now, NULL) == IGW_JWT_EFORMAT);
}

static void test_sign_limits(void)
{
    char tok[IGW_JWT_MAX + 1];
    igw_jwt_claims c = {1, 1, 10, 20};
    const unsigned char *k = (const unsigned char *)K1;
    CHECK(igw_jwt_sign(k, 31, &c, tok, sizeof tok) == IGW_JWT_EKEY);
    CHECK(igw_jwt_verify(kats[0].token, strlen(kats[0].token), k, 31, 0, NULL) == IGW_JWT_EKEY);
    CHECK(igw_jwt_sign(k, 32, &c, tok, 10) == IGW_JWT_EINTERNAL);
    igw_jwt_claims bad[] = {{0, 1, 1, 2}, {1, 0, 1, 2}, {1, 1, 3, 2}, {1, 1, -1, 2},
                            {9007199254740992LL, 1, 1, 2}, {1, 1, 1, 9007199254740992LL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(igw_jwt_sign(k, 32, &bad[i], tok, sizeof tok) == IGW_JWT_ECLAIMS);
    /* round trip */
    c = (igw_jwt_claims){77, 3, 100, 200};
    CHECK(igw_jwt_sign(k, 32, &c, tok, sizeof tok) == IGW_JWT_OK);
    igw_jwt_claims got;
    CHECK(verify(tok, K1, 199, &got) == IGW_JWT_OK && got.user_id == 77 && got.enterprise_id == 3);
    CHECK(verify(tok, K1, 200, &got) == IGW_JWT_EEXPIRED);
    CHECK(strcmp(igw_jwt_strerror(IGW_JWT_ESIGNATURE), "signature") == 0);
}

int main(void)
{
    test_kats();
    test_refused();
    test_tamper();
    test_sign_limits();
    return check_summary("jwt_test");
}
