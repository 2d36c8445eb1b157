/* stun_test.c - unit tests of the ICE-lite STUN Binding codec (stun.c),
 * on the test vectors of RFC 5769 ("Test Vectors for Session Traversal
 * Utilities for NAT (STUN)", IETF, April 2010: sections 2.1-2.3). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stun.h"

#include "../check.h"

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; *s && n < cap;) {
        while (*s == ' ' || *s == '\n')
            s++;
        if (!*s)
            break;
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

/* 2.1: a Binding request with SOFTWARE, PRIORITY, ICE-CONTROLLED, USERNAME
 * "evtj:h6vY", MESSAGE-INTEGRITY and FINGERPRINT (the RFC pads SOFTWARE and
 * USERNAME with spaces). */
static const char REQUEST[] = "00 01 00 58 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae"
                              "80 22 00 10 53 54 55 4e 20 74 65 73 74 20 63 6c 69 65 6e 74"
                              "00 24 00 04 6e 00 01 ff 80 29 00 08 93 2f f9 b1 51 26 3b 36"
                              "00 06 00 09 65 76 74 6a 3a 68 36 76 59 20 20 20"
                              "00 08 00 14 9a ea a7 0c bf d8 cb 56 78 1e f2 b5 b2 d3 f2 49 c1 b5 71 a2"
                              "80 28 00 04 e5 7a 3b cf";
/* 2.2: its success response, XOR-MAPPED-ADDRESS 192.0.2.1:32853. */
static const char RESPONSE4[] = "01 01 00 3c 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae"
                                "80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20"
                                "00 20 00 08 00 01 a1 47 e1 12 a6 43"
                                "00 08 00 14 2b 91 f5 99 fd 9e 90 c3 8c 74 89 f9 2a f9 ba 53 f0 6b e7 d7"
                                "80 28 00 04 c0 7d 4c 96";
/* 2.3: the same over IPv6, [2001:db8:1234:5678:11:2233:4455:6677]:32853. */
static const char RESPONSE6[] = "01 01 00 48 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae"
                                "80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20"
                                "00 20 00 14 00 02 a1 47 01 13 a9 fa a5 d3 f1 79 bc 25 f4 b5 be d2 b9 d9"
                                "00 08 00 14 a3 82 95 4e 4b e6 7b f1 17 84 c9 7c 82 92 c2 75 bf e3 ed 41"
                                "80 28 00 04 c8 fb 0b 4c";
static const char PWD[] = "VOkJxbRl1RmTxUk/WvJxBt";

static void test_rfc5769_request(void)
{
    uint8_t m[256];
    size_t n = unhex(REQUEST, m, sizeof m);
    CHECK(n == 108);
    igw_stun_request r;
    CHECK(igw_stun_maybe(m, n));
    CHECK(igw_stun_parse_request(m, n, &r) == IGW_STUN_OK);
    CHECK(r.username_len == 9 && memcmp(r.username, "evtj:h6vY", 9) == 0);
    CHECK(r.priority == 0x6e0001ff && r.controlled && !r.controlling && !r.use_candidate && r.integrity);
    CHECK(memcmp(r.tid, m + 8, IGW_STUN_TID) == 0);
    CHECK(igw_stun_check_fingerprint(m, n));
    CHECK(igw_stun_check_integrity(m, n, PWD, strlen(PWD)));
    CHECK(!igw_stun_check_integrity(m, n, "VOkJxbRl1RmTxUk/WvJxBu", strlen(PWD)));
    CHECK(!igw_stun_check_integrity(m, n, PWD, strlen(PWD) - 1));
}

/* The RFC's responses check out: the same HMAC and CRC igw writes with. */
static void test_rfc5769_responses(void)
{
    uint8_t m[256];
    size_t n = unhex(RESPONSE4, m, sizeof m);
    igw_stun_request r;
    CHECK(n == 80 && igw_stun_check_fingerprint(m, n) && igw_stun_check_integrity(m, n, PWD, strlen(PWD)));
    CHECK(igw_stun_parse_request(m, n, &r) == IGW_STUN_NOT_REQUEST);
    n = unhex(RESPONSE6, m, sizeof m);
    CHECK(n == 92 && igw_stun_check_fingerprint(m, n) && igw_stun_check_integrity(m, n, PWD, strlen(PWD)));
}

/* igw's success answer to the request: its XOR-MAPPED-ADDRESS is the RFC's
 * byte for byte, and it verifies (the RFC's own pads SOFTWARE with a space
 * where igw pads with zero, so the MACs differ). */
static void test_success(void)
{
    uint8_t req[256], want[256], out[IGW_STUN_REPLY_MAX];
    unhex(REQUEST, req, sizeof req);
    size_t wn = unhex(RESPONSE4, want, sizeof want);
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(32853)};
    inet_pton(AF_INET, "192.0.2.1", &a4.sin_addr);
    size_t n = igw_stun_success(out, sizeof out, req + 8, (struct sockaddr *)&a4, "test vector", PWD, strlen(PWD));
    CHECK(n == wn, "%zu bytes, want %zu", n, wn);
    CHECK(memcmp(out, want, 20) == 0); /* type, length, cookie, transaction */
    CHECK(memcmp(out + 36, want + 36, 12) == 0, "XOR-MAPPED-ADDRESS (IPv4)");
    CHECK(igw_stun_check_fingerprint(out, n) && igw_stun_check_integrity(out, n, PWD, strlen(PWD)));

    wn = unhex(RESPONSE6, want, sizeof want);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(32853)};
    inet_pton(AF_INET6, "2001:db8:1234:5678:11:2233:4455:6677", &a6.sin6_addr);
    n = igw_stun_success(out, sizeof out, req + 8, (struct sockaddr *)&a6, "test vector", PWD, strlen(PWD));
    CHECK(n == wn && memcmp(out + 36, want + 36, 24) == 0, "XOR-MAPPED-ADDRESS (IPv6)");
    CHECK(igw_stun_check_fingerprint(out, n) && igw_stun_check_integrity(out, n, PWD, strlen(PWD)));

    /* No room, no answer; an unknown family, none either. */
    CHECK(igw_stun_success(out, 40, req + 8, (struct sockaddr *)&a4, NULL, PWD, strlen(PWD)) == 0);
    struct sockaddr un = {.sa_family = AF_UNIX};
    CHECK(igw_stun_success(out, sizeof out, req + 8, &un, NULL, PWD, strlen(PWD)) == 0);
}

static void test_error(void)
{
    uint8_t req[256], out[IGW_STUN_REPLY_MAX];
    unhex(REQUEST, req, sizeof req);
    size_t n = igw_stun_error(out, sizeof out, req + 8, 401, "Unauthorized", NULL, 0);
    CHECK(n == 20 + 4 + 16 + 8, "%zu", n);
    CHECK(out[0] == 0x01 && out[1] == 0x11 && out[26] == 4 && out[27] == 1 && memcmp(out + 28, "Unauthorized", 12) == 0);
    CHECK(igw_stun_check_fingerprint(out, n) && !igw_stun_check_integrity(out, n, PWD, strlen(PWD)));
    n = igw_stun_error(out, sizeof out, req + 8, 487, "Role Conflict", PWD, strlen(PWD));
    CHECK(n > 0 && igw_stun_check_integrity(out, n, PWD, strlen(PWD)));
    CHECK(igw_stun_error(out, sizeof out, req + 8, 200, "", NULL, 0) == 0);
}

/* Every way a request can be wrong is refused by its class, and no byte
 * outside the message is read (ASan): truncations, a flipped bit anywhere,
 * a missing USERNAME, an unknown comprehension-required attribute, media. */
static void test_refusals(void)
{
    uint8_t m[256], t[256];
    size_t n = unhex(REQUEST, m, sizeof m);
    igw_stun_request r;
    for (size_t k = 0; k < n; k++) { /* every truncation */
        uint8_t *cut = malloc(k ? k : 1);
        memcpy(cut, m, k);
        CHECK(igw_stun_parse_request(cut, k, &r) != IGW_STUN_OK, "cut at %zu", k);
        CHECK(!igw_stun_check_integrity(cut, k, PWD, strlen(PWD)));
        free(cut);
    }
    /* Every single flipped bit is caught, but those of FINGERPRINT's own
     * type: it is then an unknown attribute after MESSAGE-INTEGRITY, which
     * is ignored (RFC 8489 14.5), and what the integrity covers is intact. */
    unsigned caught = 0, fp_type = 0;
    for (size_t bit = 0; bit < n * 8; bit++) {
        memcpy(t, m, n);
        t[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        bool refused =
            igw_stun_parse_request(t, n, &r) != IGW_STUN_OK || !igw_stun_check_integrity(t, n, PWD, strlen(PWD));
        if (bit / 8 == n - 8 || bit / 8 == n - 7)
            fp_type += !refused && !igw_stun_check_fingerprint(t, n);
        else
            caught += refused;
    }
    CHECK(caught == n * 8 - 16, "%u of %zu flips caught", caught, n * 8 - 16);
    CHECK(fp_type == 16, "%u", fp_type);

    uint8_t rq[64] = {0x00, 0x01, 0x00, 0x08, 0x21, 0x12, 0xa4, 0x42};
    rq[20] = 0x00, rq[21] = 0x07, rq[22] = 0x00, rq[23] = 0x04; /* 0x0007: required, unknown */
    CHECK(igw_stun_parse_request(rq, 32, &r) == IGW_STUN_NOT_STUN); /* length says 28 */
    CHECK(igw_stun_parse_request(rq, 28, &r) == IGW_STUN_UNKNOWN_REQUIRED);
    rq[21] = 0x06; /* a USERNAME, no MESSAGE-INTEGRITY */
    CHECK(igw_stun_parse_request(rq, 28, &r) == IGW_STUN_NO_USERNAME);
    uint8_t rtp[28] = {0x80, 0x60};
    CHECK(!igw_stun_maybe(rtp, sizeof rtp) && igw_stun_parse_request(rtp, sizeof rtp, &r) == IGW_STUN_NOT_STUN);
}

/* A request igw writes parses back to what it was written with. */
static void test_request_round_trip(void)
{
    uint8_t out[IGW_STUN_REPLY_MAX], tid[IGW_STUN_TID] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    igw_stun_request r;
    size_t n = igw_stun_request_write(out, sizeof out, tid, "abcd:wxyz", 0x6e0001ff, true, 42, true, PWD, strlen(PWD));
    CHECK(n > 0 && igw_stun_parse_request(out, n, &r) == IGW_STUN_OK);
    CHECK(r.username_len == 9 && memcmp(r.username, "abcd:wxyz", 9) == 0 && r.priority == 0x6e0001ff);
    CHECK(r.controlling && !r.controlled && r.use_candidate && memcmp(r.tid, tid, sizeof tid) == 0);
    CHECK(igw_stun_check_integrity(out, n, PWD, strlen(PWD)) && igw_stun_check_fingerprint(out, n));
    n = igw_stun_request_write(out, sizeof out, tid, "abcd:wxyz", 1, false, 0, false, PWD, strlen(PWD));
    CHECK(n > 0 && igw_stun_parse_request(out, n, &r) == IGW_STUN_OK && r.controlled && !r.use_candidate);
    CHECK(igw_stun_request_write(out, 48, tid, "abcd:wxyz", 1, false, 0, false, PWD, strlen(PWD)) == 0);
}

static const check_case cases[] = {
    CHECK_CASE(test_request_round_trip),
    CHECK_CASE(test_rfc5769_request), CHECK_CASE(test_rfc5769_responses), CHECK_CASE(test_success),
    CHECK_CASE(test_error), CHECK_CASE(test_refusals),
};

int main(void)
{
    CHECK_RUN_ALL(cases);
    return check_summary("stun");
}
