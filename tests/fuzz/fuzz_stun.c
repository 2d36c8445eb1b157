/* fuzz_stun.c - libFuzzer harness of the ICE-lite STUN codec
 * (src/media/stun.c): what a media socket receives from anyone.
 *
 * The input is one datagram, verbatim. Invariants, each an abort() when
 * broken:
 * - nothing outside the datagram is read (ASan);
 * - an accepted request's USERNAME lies inside the datagram, and it came
 *   with a MESSAGE-INTEGRITY and a sound header (the length field is the
 *   datagram's);
 * - an accepted request's answers (a success to an IPv4 and an IPv6 source,
 *   an error) fit IGW_STUN_REPLY_MAX, are no request, and check out with
 *   the password they were sealed with and fail with another;
 * - a datagram whose first byte is 4 or more is never a request. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "fuzz.h"
#include "stun.h"

static const char PWD[] = "fuzz-password-0123456789";

static void answers_check_out(const igw_stun_request *r)
{
    uint8_t out[IGW_STUN_REPLY_MAX];
    igw_stun_request again;
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(40000), .sin_addr.s_addr = htonl(0x7f000001)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(40001)};
    a6.sin6_addr.s6_addr[15] = 1;
    const struct sockaddr *from[2] = {(const struct sockaddr *)&a4, (const struct sockaddr *)&a6};
    for (int i = 0; i < 2; i++) {
        size_t n = igw_stun_success(out, sizeof out, r->tid, from[i], "igw", PWD, strlen(PWD));
        REQUIRE(n > 0 && n <= sizeof out && memcmp(out + 8, r->tid, IGW_STUN_TID) == 0);
        REQUIRE(igw_stun_check_fingerprint(out, n) && igw_stun_check_integrity(out, n, PWD, strlen(PWD)));
        REQUIRE(!igw_stun_check_integrity(out, n, "another", 7));
        REQUIRE(igw_stun_parse_request(out, n, &again) == IGW_STUN_NOT_REQUEST);
    }
    size_t n = igw_stun_error(out, sizeof out, r->tid, 401, "Unauthorized", NULL, 0);
    REQUIRE(n > 0 && igw_stun_check_fingerprint(out, n) && !igw_stun_check_integrity(out, n, PWD, strlen(PWD)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes: ASan sees any read past it. */
    uint8_t *p = malloc(size ? size : 1);
    if (!p)
        return 0;
    memcpy(p, data, size);
    igw_stun_request r;
    igw_stun_status st = igw_stun_parse_request(p, size, &r);
    (void)igw_stun_check_fingerprint(p, size);
    (void)igw_stun_check_integrity(p, size, PWD, strlen(PWD));
    if (size > 0 && p[0] >= 4)
        REQUIRE(st != IGW_STUN_OK);
    if (st == IGW_STUN_OK) {
        REQUIRE(igw_stun_maybe(p, size) && r.integrity);
        REQUIRE(r.username >= p + IGW_STUN_HEADER && r.username + r.username_len <= p + size);
        REQUIRE(size == IGW_STUN_HEADER + (size_t)(p[2] << 8 | p[3]));
        REQUIRE(memcmp(r.tid, p + 8, IGW_STUN_TID) == 0);
        answers_check_out(&r);
    }
    free(p);
    return 0;
}
