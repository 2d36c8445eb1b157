/* stun.c - see stun.h. */
#include "stun.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "wire.h"

#define COOKIE 0x2112A442u
#define BINDING_REQUEST 0x0001
#define BINDING_SUCCESS 0x0101
#define BINDING_ERROR 0x0111
#define FP_XOR 0x5354554eu

enum {
    A_USERNAME = 0x0006,
    A_MESSAGE_INTEGRITY = 0x0008,
    A_ERROR_CODE = 0x0009,
    A_XOR_MAPPED_ADDRESS = 0x0020,
    A_PRIORITY = 0x0024,
    A_USE_CANDIDATE = 0x0025,
    A_SOFTWARE = 0x8022,
    A_FINGERPRINT = 0x8028,
    A_ICE_CONTROLLED = 0x8029,
    A_ICE_CONTROLLING = 0x802A
};

#define MI_LEN 20 /* HMAC-SHA1 */
/* What the integrity check copies to adjust the header's length: a check
 * is far shorter (Chrome's are about 100 bytes). */
#define INTEGRITY_SPAN_MAX 1500

/* CRC-32 (ISO-HDLC, zlib's) bit by bit: a check is ~100 bytes and arrives
 * every few seconds per peer, not worth a table. */
static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* The header is sound: the first two bits 0, the magic cookie, a length
 * that is a multiple of 4 and covers exactly the rest of n. */
static bool header_ok(const uint8_t *p, size_t n)
{
    return n >= IGW_STUN_HEADER && (p[0] & 0xC0) == 0 && igw_rd32(p + 4) == COOKIE && (igw_rd16(p + 2) & 3) == 0 &&
           (size_t)igw_rd16(p + 2) + IGW_STUN_HEADER == n;
}

/* Where MESSAGE-INTEGRITY and FINGERPRINT start (0: absent), after checking
 * that every attribute lies within n and that FINGERPRINT, if any, is last.
 * False when the message is malformed. */
static bool locate(const uint8_t *p, size_t n, size_t *mi, size_t *fp)
{
    *mi = *fp = 0;
    for (size_t at = IGW_STUN_HEADER; at < n;) {
        if (n - at < 4)
            return false;
        uint16_t type = igw_rd16(p + at), len = igw_rd16(p + at + 2);
        size_t next = at + 4 + (((size_t)len + 3) & ~(size_t)3);
        if (next > n)
            return false;
        if (*fp)
            return false; /* FINGERPRINT must be the last attribute */
        if (type == A_FINGERPRINT) {
            if (len != 4)
                return false;
            *fp = at;
        } else if (type == A_MESSAGE_INTEGRITY && !*mi) {
            if (len != MI_LEN)
                return false;
            *mi = at;
        }
        at = next;
    }
    return true;
}

bool igw_stun_check_fingerprint(const uint8_t *p, size_t n)
{
    size_t mi, fp;
    if (!header_ok(p, n) || !locate(p, n, &mi, &fp) || !fp)
        return false;
    return (crc32_of(p, fp) ^ FP_XOR) == igw_rd32(p + fp + 4);
}

igw_stun_status igw_stun_parse_request(const uint8_t *p, size_t n, igw_stun_request *out)
{
    if (!header_ok(p, n))
        return IGW_STUN_NOT_STUN;
    size_t mi, fp;
    if (!locate(p, n, &mi, &fp))
        return IGW_STUN_MALFORMED;
    if (fp && (crc32_of(p, fp) ^ FP_XOR) != igw_rd32(p + fp + 4))
        return IGW_STUN_BAD_FINGERPRINT;
    if (igw_rd16(p) != BINDING_REQUEST)
        return IGW_STUN_NOT_REQUEST;
    memset(out, 0, sizeof *out);
    memcpy(out->tid, p + 8, IGW_STUN_TID);
    out->integrity = mi != 0;
    /* Attributes after MESSAGE-INTEGRITY (but FINGERPRINT) are ignored
     * (RFC 8489 14.5): they are not covered by it. */
    size_t end = mi ? mi : (fp ? fp : n);
    for (size_t at = IGW_STUN_HEADER; at < end;) {
        uint16_t type = igw_rd16(p + at), len = igw_rd16(p + at + 2);
        const uint8_t *v = p + at + 4;
        switch (type) {
        case A_USERNAME:
            if (!out->username) {
                out->username = v;
                out->username_len = len;
            }
            break;
        case A_PRIORITY:
            if (len != 4)
                return IGW_STUN_MALFORMED;
            out->priority = igw_rd32(v);
            break;
        case A_USE_CANDIDATE:
            out->use_candidate = true;
            break;
        case A_ICE_CONTROLLING:
            out->controlling = true;
            break;
        case A_ICE_CONTROLLED:
            out->controlled = true;
            break;
        default:
            /* 0x0000-0x7FFF must be understood (RFC 8489 14): igw knows
             * none but those above in a Binding request. */
            if (type < 0x8000)
                return IGW_STUN_UNKNOWN_REQUIRED;
            break;
        }
        at += 4 + (((size_t)len + 3) & ~(size_t)3);
    }
    if (!out->username || !out->integrity)
        return IGW_STUN_NO_USERNAME;
    return IGW_STUN_OK;
}

/* HMAC-SHA1 of p[0, mi) with the header's length set as if the message
 * ended with the MESSAGE-INTEGRITY attribute at mi (RFC 8489 14.5). */
static bool integrity_of(const uint8_t *p, size_t mi, const char *pwd, size_t pwd_len, uint8_t md[MI_LEN])
{
    uint8_t span[INTEGRITY_SPAN_MAX];
    if (mi > sizeof span || pwd_len > INT32_MAX)
        return false;
    memcpy(span, p, mi);
    igw_wr16(span + 2, (uint16_t)(mi + 4 + MI_LEN - IGW_STUN_HEADER));
    unsigned len = 0;
    return HMAC(EVP_sha1(), pwd, (int)pwd_len, span, mi, md, &len) != NULL && len == MI_LEN;
}

bool igw_stun_check_integrity(const uint8_t *p, size_t n, const char *pwd, size_t pwd_len)
{
    size_t mi, fp;
    uint8_t md[MI_LEN];
    if (!header_ok(p, n) || !locate(p, n, &mi, &fp) || !mi || !integrity_of(p, mi, pwd, pwd_len, md))
        return false;
    return CRYPTO_memcmp(md, p + mi + 4, MI_LEN) == 0;
}

/* Appends an attribute (zero padding); false when it does not fit. */
static bool put_attr(uint8_t *out, size_t cap, size_t *at, uint16_t type, const void *v, size_t len)
{
    size_t padded = (len + 3) & ~(size_t)3;
    if (len > 0xFFFF || *at + 4 + padded > cap)
        return false;
    igw_wr16(out + *at, type);
    igw_wr16(out + *at + 2, (uint16_t)len);
    if (len)
        memcpy(out + *at + 4, v, len);
    memset(out + *at + 4 + len, 0, padded - len);
    *at += 4 + padded;
    return true;
}

/* MESSAGE-INTEGRITY (when pwd) and FINGERPRINT after the attributes so far;
 * the header's length is kept right at each step. Returns the length. */
static size_t seal(uint8_t *out, size_t cap, size_t at, const char *pwd, size_t pwd_len)
{
    if (pwd) {
        uint8_t md[MI_LEN];
        if (!integrity_of(out, at, pwd, pwd_len, md) || !put_attr(out, cap, &at, A_MESSAGE_INTEGRITY, md, MI_LEN))
            return 0;
    }
    uint8_t crc[4] = {0};
    size_t fp = at;
    if (!put_attr(out, cap, &at, A_FINGERPRINT, crc, sizeof crc))
        return 0;
    igw_wr16(out + 2, (uint16_t)(at - IGW_STUN_HEADER));
    igw_wr32(out + fp + 4, crc32_of(out, fp) ^ FP_XOR);
    return at;
}

static bool header(uint8_t *out, size_t cap, uint16_t type, const uint8_t tid[IGW_STUN_TID])
{
    if (cap < IGW_STUN_HEADER)
        return false;
    igw_wr16(out, type);
    igw_wr16(out + 2, 0);
    igw_wr32(out + 4, COOKIE);
    memcpy(out + 8, tid, IGW_STUN_TID);
    return true;
}

size_t igw_stun_success(uint8_t *out, size_t cap, const uint8_t tid[IGW_STUN_TID], const struct sockaddr *from,
                        const char *software, const char *pwd, size_t pwd_len)
{
    uint8_t xa[20];
    size_t xlen;
    xa[0] = 0;
    if (from->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)from;
        xa[1] = 1;
        igw_wr16(xa + 2, (uint16_t)(ntohs(a->sin_port) ^ (COOKIE >> 16)));
        igw_wr32(xa + 4, ntohl(a->sin_addr.s_addr) ^ COOKIE);
        xlen = 8;
    } else if (from->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)from;
        uint8_t mask[16];
        igw_wr32(mask, COOKIE);
        memcpy(mask + 4, tid, IGW_STUN_TID);
        xa[1] = 2;
        igw_wr16(xa + 2, (uint16_t)(ntohs(a->sin6_port) ^ (COOKIE >> 16)));
        for (int i = 0; i < 16; i++)
            xa[4 + i] = a->sin6_addr.s6_addr[i] ^ mask[i];
        xlen = 20;
    } else {
        return 0;
    }
    size_t at = IGW_STUN_HEADER;
    if (!header(out, cap, BINDING_SUCCESS, tid) ||
        (software && !put_attr(out, cap, &at, A_SOFTWARE, software, strlen(software))) ||
        !put_attr(out, cap, &at, A_XOR_MAPPED_ADDRESS, xa, xlen))
        return 0;
    return seal(out, cap, at, pwd, pwd_len);
}

size_t igw_stun_error(uint8_t *out, size_t cap, const uint8_t tid[IGW_STUN_TID], int code, const char *reason,
                      const char *pwd, size_t pwd_len)
{
    uint8_t ec[4 + 128];
    size_t rlen = reason ? strnlen(reason, 128) : 0;
    if (code < 300 || code > 699)
        return 0;
    ec[0] = ec[1] = 0;
    ec[2] = (uint8_t)(code / 100);
    ec[3] = (uint8_t)(code % 100);
    if (rlen)
        memcpy(ec + 4, reason, rlen);
    size_t at = IGW_STUN_HEADER;
    if (!header(out, cap, BINDING_ERROR, tid) || !put_attr(out, cap, &at, A_ERROR_CODE, ec, 4 + rlen))
        return 0;
    return seal(out, cap, at, pwd, pwd_len);
}

size_t igw_stun_request_write(uint8_t *out, size_t cap, const uint8_t tid[IGW_STUN_TID], const char *username,
                              uint32_t priority, bool controlling, uint64_t tiebreaker, bool nominate, const char *pwd,
                              size_t pwd_len)
{
    uint8_t pr[4], tb[8];
    igw_wr32(pr, priority);
    igw_wr32(tb, (uint32_t)(tiebreaker >> 32));
    igw_wr32(tb + 4, (uint32_t)tiebreaker);
    size_t at = IGW_STUN_HEADER;
    if (!header(out, cap, BINDING_REQUEST, tid) ||
        !put_attr(out, cap, &at, A_USERNAME, username, strlen(username)) ||
        !put_attr(out, cap, &at, A_PRIORITY, pr, sizeof pr) ||
        !put_attr(out, cap, &at, controlling ? A_ICE_CONTROLLING : A_ICE_CONTROLLED, tb, sizeof tb) ||
        (nominate && !put_attr(out, cap, &at, A_USE_CANDIDATE, NULL, 0)))
        return 0;
    return seal(out, cap, at, pwd, pwd_len);
}
