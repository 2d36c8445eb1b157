/* dtls_test.c - unit tests of DTLS-SRTP (dtls.c).
 *
 * Two transports, a client and a server, are wired back to back in memory:
 * each one's send callback queues datagrams for the other, and pump() delivers
 * them, firing the retransmission timers when nothing is in flight, until both
 * settle. Links can drop chosen datagrams to force retransmissions. Each link
 * also checks every datagram: at most 1200 bytes, made of whole records.
 *
 * Two transports of ours agree with each other even if both derive the SRTP
 * keys wrongly, so a reference peer built here from plain OpenSSL and libsrtp
 * (its own certificate, its own RFC 5764 key layout) checks interop too.
 * Outbound RTP is protected by dtls.c itself, not libsrtp: against the
 * reference peer every such packet is also protected by a libsrtp session
 * holding our write key, and the bytes must be the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <srtp2/srtp.h>

#include "dtls.h"

#include "../check.h"

static void die(const char *what)
{
    fprintf(stderr, "dtls_test: %s\n", what);
    exit(2);
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- a one-way in-memory link ---------------------------------------------------- */

#define QMAX 64

typedef struct wire {
    uint8_t *dg[QMAX];
    size_t len[QMAX];
    size_t head, tail;    /* queue: dg[head..tail) */
    unsigned sent;        /* datagrams the sender produced (dropped ones too) */
    unsigned drop_mask;   /* bit k set: the k-th datagram (from 0) is lost */
    size_t max_size;      /* largest datagram */
    unsigned bad_framing; /* datagrams that are not whole records */
    unsigned multi;       /* datagrams carrying more than one record */
    unsigned overflow;
} wire;

/* Number of whole DTLS records making up p[0..n), or -1. */
static int count_records(const uint8_t *p, size_t n)
{
    int recs = 0;
    size_t off = 0;
    while (off < n) {
        if (n - off < 13)
            return -1;
        size_t rec = 13 + ((size_t)p[off + 11] << 8 | p[off + 12]);
        if (rec > n - off)
            return -1;
        off += rec;
        recs++;
    }
    return recs;
}

static void on_send(void *ud, const uint8_t *p, size_t n)
{
    wire *l = ud;
    unsigned idx = l->sent++;
    if (n > l->max_size)
        l->max_size = n;
    int recs = count_records(p, n);
    if (recs < 1)
        l->bad_framing++;
    if (recs > 1)
        l->multi++;
    if (idx < 32 && (l->drop_mask >> idx & 1u))
        return;
    if (l->tail == QMAX) {
        l->overflow++;
        return;
    }
    uint8_t *copy = malloc(n);
    if (!copy)
        die("out of memory");
    memcpy(copy, p, n);
    l->dg[l->tail] = copy;
    l->len[l->tail] = n;
    l->tail++;
}

static void wire_clear(wire *l)
{
    for (size_t i = l->head; i < l->tail; i++)
        free(l->dg[i]);
    l->head = l->tail = 0;
}

/* Feeds every queued datagram to `to`; 1 if any was delivered. */
static int deliver(wire *l, igw_dtls *to)
{
    int any = 0;
    while (l->head < l->tail) {
        uint8_t *p = l->dg[l->head];
        size_t n = l->len[l->head];
        l->head++;
        igw_dtls_feed(to, p, n);
        free(p);
        any = 1;
    }
    if (l->head == l->tail)
        l->head = l->tail = 0;
    return any;
}

/* ---- a client and a server ---------------------------------------------------- */

typedef struct pair {
    igw_dtls_cert *ccert, *scert;
    igw_dtls *c, *s;
    wire c2s, s2c;
} pair;

static void pair_init(pair *p, igw_dtls_cert *ccert, igw_dtls_cert *scert, int wrong_at_client,
                      int wrong_at_server)
{
    memset(p, 0, sizeof *p);
    p->ccert = ccert;
    p->scert = scert;
    uint8_t sfp[32], cfp[32];
    memcpy(sfp, igw_dtls_cert_fp(scert), 32);
    memcpy(cfp, igw_dtls_cert_fp(ccert), 32);
    if (wrong_at_client)
        sfp[7] ^= 0x01;
    if (wrong_at_server)
        cfp[31] ^= 0x80;
    char err[128];
    p->c = igw_dtls_new(ccert, IGW_DTLS_CLIENT, sfp, on_send, &p->c2s, err, sizeof err);
    p->s = igw_dtls_new(scert, IGW_DTLS_SERVER, cfp, on_send, &p->s2c, err, sizeof err);
    if (!p->c || !p->s)
        die(err);
}

static void pair_free(pair *p)
{
    igw_dtls_free(p->c);
    igw_dtls_free(p->s);
    wire_clear(&p->c2s);
    wire_clear(&p->s2c);
}

static int settled(igw_dtls *d)
{
    igw_dtls_state st = igw_dtls_state_get(d);
    return st == IGW_DTLS_CONNECTED || st == IGW_DTLS_FAILED || st == IGW_DTLS_CLOSED;
}

/* Runs both sides until both settle, nothing is left to do, or budget_us of
 * waiting for timers is spent. Returns the microseconds spent waiting. */
static int64_t pump(pair *p, int64_t budget_us)
{
    int64_t waited = 0;
    for (int iter = 0; iter < 500; iter++) {
        int moved = deliver(&p->c2s, p->s);
        moved |= deliver(&p->s2c, p->c);
        if (moved)
            continue;
        if (settled(p->c) && settled(p->s))
            break;
        int64_t tc = igw_dtls_timeout_us(p->c), ts = igw_dtls_timeout_us(p->s);
        int64_t t = tc;
        if (t < 0 || (ts >= 0 && ts < t))
            t = ts;
        if (t < 0 || waited + t > budget_us)
            break;
        if (t > 0) {
            sleep_us(t);
            waited += t;
        }
        if (igw_dtls_timeout_us(p->c) == 0)
            igw_dtls_on_timer(p->c);
        if (igw_dtls_timeout_us(p->s) == 0)
            igw_dtls_on_timer(p->s);
    }
    return waited;
}

static int both_connected(const pair *p)
{
    return igw_dtls_state_get(p->c) == IGW_DTLS_CONNECTED &&
           igw_dtls_state_get(p->s) == IGW_DTLS_CONNECTED;
}

static void check_links(const pair *p)
{
    CHECK(p->c2s.max_size > 0 && p->c2s.max_size <= 1200);
    CHECK(p->s2c.max_size > 0 && p->s2c.max_size <= 1200);
    CHECK(p->c2s.bad_framing == 0 && p->s2c.bad_framing == 0);
    CHECK(p->c2s.overflow == 0 && p->s2c.overflow == 0);
}

/* ---- RTP / RTCP packets ---------------------------------------------------------- */

#define BUFCAP (IGW_SRTP_MAX_PACKET + IGW_SRTP_MAX_TRAILER)

static size_t rtp_packet(uint8_t *b, uint16_t seq, uint32_t ssrc, size_t payload)
{
    uint32_t ts = (uint32_t)seq * 3000u;
    b[0] = 0x80;
    b[1] = 96;
    b[2] = (uint8_t)(seq >> 8);
    b[3] = (uint8_t)seq;
    for (int i = 0; i < 4; i++) {
        b[4 + i] = (uint8_t)(ts >> (24 - 8 * i));
        b[8 + i] = (uint8_t)(ssrc >> (24 - 8 * i));
    }
    for (size_t i = 0; i < payload; i++)
        b[12 + i] = (uint8_t)(i * 7 + seq);
    return 12 + payload;
}

/* A sender report: 28 bytes. */
static size_t rtcp_packet(uint8_t *b, uint32_t ssrc, uint32_t packets)
{
    memset(b, 0, 28);
    b[0] = 0x80;
    b[1] = 200;
    b[3] = 6; /* length in words - 1 */
    for (int i = 0; i < 4; i++) {
        b[4 + i] = (uint8_t)(ssrc >> (24 - 8 * i));
        b[20 + i] = (uint8_t)(packets >> (24 - 8 * i));
    }
    b[8] = 0xe9; /* some NTP time */
    return 28;
}

/* SRTP from `a` to `b` (a protects, b unprotects), tag is the RTP auth tag
 * length the profile must add. */
static void check_srtp_direction(igw_srtp *a, igw_srtp *b, uint32_t ssrc, size_t tag)
{
    uint8_t plain[BUFCAP], buf[BUFCAP], first[BUFCAP], again[BUFCAP];
    size_t plen = rtp_packet(plain, 1000, ssrc, 200);

    /* protect, unprotect: same packet back */
    memcpy(buf, plain, plen);
    size_t len = plen;
    CHECK(igw_srtp_protect(a, buf, &len, sizeof buf) == 0);
    CHECK(len == plen + tag);
    CHECK(memcmp(buf + 12, plain + 12, 200) != 0); /* payload encrypted */
    CHECK(memcmp(buf, plain, 12) == 0);            /* header in the clear */
    memcpy(first, buf, len);
    size_t flen = len;
    CHECK(igw_srtp_unprotect(b, buf, &len) == 0);
    CHECK(len == plen && memcmp(buf, plain, plen) == 0);

    /* replay of the same protected packet */
    memcpy(buf, first, flen);
    len = flen;
    CHECK(igw_srtp_unprotect(b, buf, &len) == -1);

    /* the sender's own inbound key is not its outbound one */
    memcpy(buf, first, flen);
    len = flen;
    CHECK(igw_srtp_unprotect(a, buf, &len) == -1);

    /* re-protecting the same packet (a retransmission) is allowed and gives
     * the same bytes (same index, same key) */
    memcpy(again, plain, plen);
    len = plen;
    CHECK(igw_srtp_protect(a, again, &len, sizeof again) == 0);
    CHECK(len == flen && memcmp(again, first, flen) == 0);

    /* a tampered packet fails; the untouched one still passes afterwards */
    plen = rtp_packet(plain, 1001, ssrc, 100);
    memcpy(buf, plain, plen);
    len = plen;
    CHECK(igw_srtp_protect(a, buf, &len, sizeof buf) == 0);
    memcpy(first, buf, len);
    flen = len;
    buf[40] ^= 0x01;
    CHECK(igw_srtp_unprotect(b, buf, &len) == -1);
    memcpy(buf, first, flen);
    len = flen;
    buf[flen - 1] ^= 0x80; /* the tag */
    CHECK(igw_srtp_unprotect(b, buf, &len) == -1);
    memcpy(buf, first, flen);
    len = flen;
    CHECK(igw_srtp_unprotect(b, buf, &len) == 0);
    CHECK(len == plen && memcmp(buf, plain, plen) == 0);

    /* an older packet within the window is fine (reordering) */
    plen = rtp_packet(plain, 999, ssrc, 50);
    memcpy(buf, plain, plen);
    len = plen;
    CHECK(igw_srtp_protect(a, buf, &len, sizeof buf) == 0);
    CHECK(igw_srtp_unprotect(b, buf, &len) == 0);
    CHECK(len == plen && memcmp(buf, plain, plen) == 0);

    /* bounds: capacity one byte short, oversize, undersize */
    plen = rtp_packet(plain, 1002, ssrc, 100);
    memcpy(buf, plain, plen);
    len = plen;
    CHECK(igw_srtp_protect(a, buf, &len, plen + IGW_SRTP_MAX_TRAILER - 1) == -1);
    CHECK(len == plen && memcmp(buf, plain, plen) == 0); /* refused before touching */
    CHECK(igw_srtp_protect(a, buf, &len, plen + IGW_SRTP_MAX_TRAILER) == 0);
    len = IGW_SRTP_MAX_PACKET + 1;
    CHECK(igw_srtp_protect(a, buf, &len, sizeof buf) == -1);
    len = 11;
    CHECK(igw_srtp_protect(a, buf, &len, sizeof buf) == -1);
    len = 11;
    CHECK(igw_srtp_unprotect(b, buf, &len) == -1);
    len = IGW_SRTP_MAX_PACKET + IGW_SRTP_MAX_TRAILER + 1;
    CHECK(igw_srtp_unprotect(b, buf, &len) == -1);

    /* RTCP: protect adds tag + 4-byte SRTCP index */
    uint8_t rplain[64];
    size_t rlen = rtcp_packet(rplain, ssrc, 7);
    memcpy(buf, rplain, rlen);
    len = rlen;
    CHECK(igw_srtp_protect_rtcp(a, buf, &len, sizeof buf) == 0);
    CHECK(len == rlen + tag + 4);
    memcpy(first, buf, len);
    flen = len;
    CHECK(igw_srtp_unprotect_rtcp(b, buf, &len) == 0);
    CHECK(len == rlen && memcmp(buf, rplain, rlen) == 0);
    memcpy(buf, first, flen);
    len = flen;
    CHECK(igw_srtp_unprotect_rtcp(b, buf, &len) == -1); /* replay */
    rlen = rtcp_packet(rplain, ssrc, 8);
    memcpy(buf, rplain, rlen);
    len = rlen;
    CHECK(igw_srtp_protect_rtcp(a, buf, &len, sizeof buf) == 0);
    buf[10] ^= 0x04;
    CHECK(igw_srtp_unprotect_rtcp(b, buf, &len) == -1); /* tampered */
    memcpy(buf, rplain, rlen);
    len = rlen;
    CHECK(igw_srtp_protect_rtcp(a, buf, &len, rlen + IGW_SRTP_MAX_TRAILER - 1) == -1);
    len = 7;
    CHECK(igw_srtp_protect_rtcp(a, buf, &len, sizeof buf) == -1);
    CHECK(igw_srtp_unprotect_rtcp(b, buf, &len) == -1);
}

/* Keys both ways for a connected pair, checked with `tag` bytes of RTP tag. */
static void check_srtp(pair *p, size_t tag)
{
    char err[128] = "";
    igw_srtp *sc = igw_dtls_srtp_new(p->c, err, sizeof err);
    igw_srtp *ss = igw_dtls_srtp_new(p->s, err, sizeof err);
    CHECK(sc != NULL && ss != NULL);
    if (!sc || !ss) {
        printf("  srtp_new: %s\n", err);
        igw_srtp_free(sc);
        igw_srtp_free(ss);
        return;
    }
    check_srtp_direction(sc, ss, 0x11223344u, tag);
    check_srtp_direction(ss, sc, 0x55667788u, tag);
    igw_srtp_free(sc);
    igw_srtp_free(ss);
}

/* srtp_new must refuse d; a context made anyway is freed (no leak on failure). */
static int srtp_refused(const igw_dtls *d)
{
    char err[128] = "";
    igw_srtp *s = igw_dtls_srtp_new(d, err, sizeof err);
    igw_srtp_free(s);
    return s == NULL && err[0] != '\0';
}

/* ---- the tests --------------------------------------------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1; /* lower case is not the SDP form we emit */
}

static void check_fp_text(const igw_dtls_cert *c)
{
    const char *t = igw_dtls_cert_fp_text(c);
    const uint8_t *fp = igw_dtls_cert_fp(c);
    CHECK(strlen(t) == 95);
    int bad = 0;
    for (size_t i = 0; i < 32; i++) {
        int hi = hexval(t[i * 3]), lo = hexval(t[i * 3 + 1]);
        if (hi < 0 || lo < 0 || (uint8_t)(hi << 4 | lo) != fp[i])
            bad++;
        if (i < 31 && t[i * 3 + 2] != ':')
            bad++;
    }
    CHECK(bad == 0);
}

static void test_cert(igw_dtls_cert *a, igw_dtls_cert *b)
{
    check_fp_text(a);
    check_fp_text(b);
    CHECK(memcmp(igw_dtls_cert_fp(a), igw_dtls_cert_fp(b), 32) != 0);
    CHECK(strcmp(igw_dtls_cert_fp_text(a), igw_dtls_cert_fp_text(b)) != 0);
}

static void test_handshake_gcm(igw_dtls_cert *ca, igw_dtls_cert *cb)
{
    pair p;
    pair_init(&p, ca, cb, 0, 0);
    CHECK(igw_dtls_state_get(p.c) == IGW_DTLS_NEW);
    CHECK(igw_dtls_timeout_us(p.c) == -1);
    CHECK(igw_dtls_start(p.c) == IGW_DTLS_HANDSHAKING);
    CHECK(p.c2s.tail == 1); /* the ClientHello */
    int64_t t = igw_dtls_timeout_us(p.c);
    CHECK(t > 0 && t <= 30 * 1000000LL);
    /* the server is not started: the ClientHello starts it */
    pump(&p, 2000000);
    CHECK(both_connected(&p));
    CHECK(strcmp(igw_dtls_reason(p.c), "") == 0 && strcmp(igw_dtls_reason(p.s), "") == 0);
    CHECK(igw_dtls_srtp_profile(p.c) == IGW_SRTP_AEAD_AES_128_GCM);
    CHECK(igw_dtls_srtp_profile(p.s) == IGW_SRTP_AEAD_AES_128_GCM);
    check_links(&p);
    CHECK(p.s2c.multi > 0); /* the server's flight shares a datagram */
    CHECK(p.c2s.sent == 2 && p.s2c.sent == 2); /* no retransmission was needed */
    CHECK(igw_dtls_timeout_us(p.c) == -1);     /* the client's timer stopped */
    check_srtp(&p, 16);
    /* start again is a no-op */
    CHECK(igw_dtls_start(p.c) == IGW_DTLS_CONNECTED);

    /* close_notify: both end CLOSED without a reason */
    igw_dtls_close(p.c);
    CHECK(igw_dtls_state_get(p.c) == IGW_DTLS_CLOSED);
    CHECK(p.c2s.tail - p.c2s.head == 1);
    pump(&p, 0);
    CHECK(igw_dtls_state_get(p.s) == IGW_DTLS_CLOSED);
    CHECK(strcmp(igw_dtls_reason(p.s), "") == 0);
    CHECK(srtp_refused(p.s));
    CHECK(igw_dtls_timeout_us(p.s) == -1);
    pair_free(&p);
}

static void test_wrong_fp_at_client(igw_dtls_cert *ca, igw_dtls_cert *cb)
{
    pair p;
    pair_init(&p, ca, cb, 1, 0);
    igw_dtls_start(p.s);
    igw_dtls_start(p.c);
    pump(&p, 2000000);
    CHECK(igw_dtls_state_get(p.c) == IGW_DTLS_FAILED);
    CHECK(strcmp(igw_dtls_reason(p.c), "fingerprint mismatch") == 0);
    /* the client refused the server's certificate before sending its own
     * flight: the server got the alert instead */
    CHECK(igw_dtls_state_get(p.s) == IGW_DTLS_FAILED);
    CHECK(strncmp(igw_dtls_reason(p.s), "alert: ", 7) == 0);
    CHECK(p.c2s.sent == 2); /* ClientHello, alert */
    CHECK(srtp_refused(p.c));
    CHECK(srtp_refused(p.s));
    CHECK(igw_dtls_timeout_us(p.c) == -1 && igw_dtls_timeout_us(p.s) == -1);
    /* a failed transport ignores further input and stays failed */
    uint8_t junk[40] = {22, 0xfe, 0xfd};
    CHECK(igw_dtls_feed(p.c, junk, sizeof junk) == IGW_DTLS_FAILED);
    igw_dtls_close(p.c);
    CHECK(igw_dtls_state_get(p.c) == IGW_DTLS_FAILED);
    check_links(&p);
    pair_free(&p);
}

static void test_wrong_fp_at_server(igw_dtls_cert *ca, igw_dtls_cert *cb)
{
    pair p;
    pair_init(&p, ca, cb, 0, 1);
    igw_dtls_start(p.s);
    igw_dtls_start(p.c);
    pump(&p, 2000000);
    CHECK(igw_dtls_state_get(p.s) == IGW_DTLS_FAILED);
    CHECK(strcmp(igw_dtls_reason(p.s), "fingerprint mismatch") == 0);
    CHECK(igw_dtls_state_get(p.c) == IGW_DTLS_FAILED);
    CHECK(strncmp(igw_dtls_reason(p.c), "alert: ", 7) == 0);
    check_links(&p);
    pair_free(&p);
}

/* Drops the `which`-th datagram (from 0) of one side; the handshake must
 * complete through timer-driven retransmissions. */
static void test_loss(igw_dtls_cert *ca, igw_dtls_cert *cb, int server_side, unsigned which)
{
    pair p;
    pair_init(&p, ca, cb, 0, 0);
    wire *l = server_side ? &p.s2c : &p.c2s;
    l->drop_mask = 1u << which;
    igw_dtls_start(p.s);
    igw_dtls_start(p.c);
    int64_t t0 = mono_us();
    int64_t waited = pump(&p, 3000000);
    int64_t took = mono_us() - t0;
    CHECK(both_connected(&p));
    CHECK(l->sent > which + 1); /* the lost datagram was sent again */
    CHECK(waited > 0 && took >= 200000 && took < 3000000);
    check_links(&p);
    if (both_connected(&p))
        check_srtp(&p, 16);
    pair_free(&p);
}

static void test_cm_profile(void)
{
    char err[128];
    igw_dtls_cert *ca = igw_dtls_cert_new(err, sizeof err);
    igw_dtls_cert *cb = igw_dtls_cert_new(err, sizeof err);
    if (!ca || !cb)
        die(err);
    CHECK(igw_dtls_cert_set_profiles(ca, "SRTP_NO_SUCH_PROFILE") == -1);
    CHECK(igw_dtls_cert_set_profiles(ca, "SRTP_AES128_CM_SHA1_80") == 0);

    /* client offering only AES-CM, server both: AES-CM */
    pair p;
    pair_init(&p, ca, cb, 0, 0);
    igw_dtls_start(p.s);
    igw_dtls_start(p.c);
    pump(&p, 2000000);
    CHECK(both_connected(&p));
    CHECK(igw_dtls_srtp_profile(p.c) == IGW_SRTP_AES128_CM_SHA1_80);
    CHECK(igw_dtls_srtp_profile(p.s) == IGW_SRTP_AES128_CM_SHA1_80);
    check_links(&p);
    if (both_connected(&p))
        check_srtp(&p, 10);
    pair_free(&p);

    /* the roles the other way round: the server restricted */
    pair_init(&p, cb, ca, 0, 0);
    igw_dtls_start(p.s);
    igw_dtls_start(p.c);
    pump(&p, 2000000);
    CHECK(both_connected(&p));
    CHECK(igw_dtls_srtp_profile(p.c) == IGW_SRTP_AES128_CM_SHA1_80);
    pair_free(&p);

    /* nothing in common: both refuse the session */
    CHECK(igw_dtls_cert_set_profiles(cb, "SRTP_AEAD_AES_128_GCM") == 0);
    pair_init(&p, ca, cb, 0, 0);
    igw_dtls_start(p.s);
    igw_dtls_start(p.c);
    pump(&p, 2000000);
    CHECK(igw_dtls_state_get(p.s) == IGW_DTLS_FAILED);
    CHECK(strcmp(igw_dtls_reason(p.s), "no SRTP profile") == 0);
    CHECK(igw_dtls_state_get(p.c) == IGW_DTLS_FAILED);
    CHECK(strcmp(igw_dtls_reason(p.c), "no SRTP profile") == 0);
    pair_free(&p);

    igw_dtls_cert_free(ca);
    igw_dtls_cert_free(cb);
}

static uint32_t rng = 2463534242u;

static uint8_t rnd8(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (uint8_t)rng;
}

static void test_garbage(igw_dtls_cert *ca, igw_dtls_cert *cb)
{
    pair p;
    pair_init(&p, ca, cb, 0, 0);
    uint8_t junk[600];

    /* a waiting server: random bytes, short and empty datagrams, an oversize
     * one, a record header promising more than there is */
    igw_dtls_start(p.s);
    int still = 0;
    for (int round = 0; round < 50; round++) {
        size_t n = 1 + rnd8() % 2 * 250 + rnd8();
        for (size_t i = 0; i < n; i++)
            junk[i] = rnd8();
        if (round % 2)
            junk[0] = 22; /* looks like a handshake record */
        still += igw_dtls_feed(p.s, junk, n) == IGW_DTLS_HANDSHAKING;
    }
    CHECK(still == 50);
    CHECK(igw_dtls_feed(p.s, junk, 0) == IGW_DTLS_HANDSHAKING);
    CHECK(igw_dtls_feed(p.s, NULL, 10) == IGW_DTLS_HANDSHAKING);
    uint8_t *big = calloc(1, 70000);
    if (!big)
        die("out of memory");
    big[0] = 22;
    CHECK(igw_dtls_feed(p.s, big, 70000) == IGW_DTLS_HANDSHAKING);
    free(big);
    CHECK(p.s2c.sent == 0); /* the server never answered garbage */

    /* the real ClientHello, first truncated, then whole */
    igw_dtls_start(p.c);
    CHECK(p.c2s.tail == 1);
    uint8_t *hello = p.c2s.dg[0];
    size_t hlen = p.c2s.len[0];
    CHECK(igw_dtls_feed(p.s, hello, 40) == IGW_DTLS_HANDSHAKING);
    CHECK(igw_dtls_feed(p.s, hello, hlen - 1) == IGW_DTLS_HANDSHAKING);
    CHECK(p.s2c.sent == 0);

    /* garbage to the client while it waits for the server's flight */
    for (size_t i = 0; i < 100; i++)
        junk[i] = rnd8();
    CHECK(igw_dtls_feed(p.c, junk, 100) == IGW_DTLS_HANDSHAKING);

    pump(&p, 2000000);
    CHECK(both_connected(&p));
    check_links(&p);

    /* garbage once connected: random bytes and a forged application-data
     * record in the current epoch are dropped */
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = rnd8();
    CHECK(igw_dtls_feed(p.s, junk, sizeof junk) == IGW_DTLS_CONNECTED);
    junk[0] = 23;
    junk[1] = 0xfe;
    junk[2] = 0xfd;
    junk[3] = 0;
    junk[4] = 1; /* epoch 1 */
    junk[11] = 0;
    junk[12] = 100;
    CHECK(igw_dtls_feed(p.c, junk, 113) == IGW_DTLS_CONNECTED);
    CHECK(igw_dtls_feed(p.s, junk, 113) == IGW_DTLS_CONNECTED);
    check_srtp(&p, 16);
    pair_free(&p);
}

/* ---- interop with a reference peer ------------------------------------------------ */

typedef struct ref {
    EVP_PKEY *key;
    X509 *x509;
    SSL_CTX *ctx;
    SSL *ssl;
    BIO *rb, *wb;
    uint8_t fp[32];
    srtp_t out, in;
    srtp_t mirror; /* libsrtp with OUR write key, as dtls.c sets up a sender */
} ref;

static int accept_any(int ok, X509_STORE_CTX *xs)
{
    (void)ok;
    (void)xs;
    return 1;
}

static void ref_send(void *ud, const uint8_t *p, size_t n)
{
    ref *r = ud;
    if (BIO_write(r->rb, p, (int)n) != (int)n)
        die("BIO_write");
}

static void ref_init(ref *r, int client, const char *profiles)
{
    memset(r, 0, sizeof *r);
    unsigned int n = 0;
    r->key = EVP_EC_gen("P-256");
    r->x509 = X509_new();
    if (!r->key || !r->x509 || !X509_set_version(r->x509, X509_VERSION_3) ||
        !ASN1_INTEGER_set(X509_get_serialNumber(r->x509), 7) ||
        !X509_NAME_add_entry_by_txt(X509_get_subject_name(r->x509), "CN", MBSTRING_ASC,
                                    (const unsigned char *)"ref", -1, -1, 0) ||
        !X509_set_issuer_name(r->x509, X509_get_subject_name(r->x509)) ||
        !X509_gmtime_adj(X509_getm_notBefore(r->x509), 0) ||
        !X509_gmtime_adj(X509_getm_notAfter(r->x509), 3600) ||
        !X509_set_pubkey(r->x509, r->key) || !X509_sign(r->x509, r->key, EVP_sha256()) ||
        !X509_digest(r->x509, EVP_sha256(), r->fp, &n) || n != 32)
        die("reference certificate");
    r->ctx = SSL_CTX_new(DTLS_method());
    if (!r->ctx || SSL_CTX_use_certificate(r->ctx, r->x509) != 1 ||
        SSL_CTX_use_PrivateKey(r->ctx, r->key) != 1 ||
        SSL_CTX_set_tlsext_use_srtp(r->ctx, profiles) != 0)
        die("reference SSL_CTX");
    SSL_CTX_set_verify(r->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
    r->ssl = SSL_new(r->ctx);
    r->rb = BIO_new(BIO_s_mem());
    r->wb = BIO_new(BIO_s_mem());
    if (!r->ssl || !r->rb || !r->wb)
        die("reference SSL");
    BIO_set_mem_eof_return(r->rb, -1);
    SSL_set_bio(r->ssl, r->rb, r->wb);
    SSL_set_options(r->ssl, SSL_OP_NO_QUERY_MTU);
    if (SSL_set_mtu(r->ssl, 1200) <= 0)
        die("reference MTU");
    if (client)
        SSL_set_connect_state(r->ssl);
    else
        SSL_set_accept_state(r->ssl);
}

static void ref_free(ref *r)
{
    if (r->out)
        srtp_dealloc(r->out);
    if (r->in)
        srtp_dealloc(r->in);
    if (r->mirror)
        srtp_dealloc(r->mirror);
    SSL_free(r->ssl);
    SSL_CTX_free(r->ctx);
    X509_free(r->x509);
    EVP_PKEY_free(r->key);
    ERR_clear_error();
}

/* RFC 5764 4.2 written out independently of dtls.c. */
static int ref_keys(ref *r, int client, int gcm)
{
    size_t kl = 16, sl = gcm ? 12 : 14;
    uint8_t km[60], mine[30], theirs[30];
    if (SSL_export_keying_material(r->ssl, km, 2 * (kl + sl), "EXTRACTOR-dtls_srtp", 19, NULL, 0,
                                   0) != 1)
        return -1;
    const uint8_t *client_key = km, *server_key = km + kl;
    const uint8_t *client_salt = km + 2 * kl, *server_salt = km + 2 * kl + sl;
    memcpy(mine, client ? client_key : server_key, kl);
    memcpy(mine + kl, client ? client_salt : server_salt, sl);
    memcpy(theirs, client ? server_key : client_key, kl);
    memcpy(theirs + kl, client ? server_salt : client_salt, sl);
    srtp_policy_t po;
    memset(&po, 0, sizeof po);
    if (gcm) {
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&po.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&po.rtcp);
    } else {
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&po.rtp);
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&po.rtcp);
    }
    po.window_size = 128;
    srtp_policy_t pm = po, pi = po;
    po.ssrc.type = ssrc_any_outbound;
    po.key = mine;
    pi.ssrc.type = ssrc_any_inbound;
    pi.key = theirs;
    /* the sender dtls.c documents: retransmissions allowed, window 1024 */
    pm.ssrc.type = ssrc_any_outbound;
    pm.key = theirs;
    pm.allow_repeat_tx = 1;
    pm.window_size = 1024;
    if (srtp_create(&r->out, &po) != srtp_err_status_ok ||
        srtp_create(&r->in, &pi) != srtp_err_status_ok ||
        srtp_create(&r->mirror, &pm) != srtp_err_status_ok)
        return -1;
    return 0;
}

/* ---- outbound RTP: ours against libsrtp ---------------------------------------- */

/* An RTP packet: cc CSRCs, a one-byte-header extension (RFC 8285) of
 * ext_words words when ext_words >= 0, `payload` bytes, then `pad` bytes of
 * RTP padding (P bit, the last byte the count). */
static size_t rtp_packet_ex(uint8_t *b, uint16_t seq, uint32_t ssrc, unsigned cc, int ext_words,
                            size_t payload, uint8_t pad)
{
    size_t n = rtp_packet(b, seq, ssrc, 0);
    b[0] = (uint8_t)(0x80 | (pad ? 0x20 : 0) | (ext_words >= 0 ? 0x10 : 0) | cc);
    for (unsigned i = 0; i < cc; i++, n += 4) {
        uint32_t csrc = 0xc0000000u + i;
        for (int k = 0; k < 4; k++)
            b[n + (size_t)k] = (uint8_t)(csrc >> (24 - 8 * k));
    }
    if (ext_words >= 0) {
        b[n] = 0xbe;
        b[n + 1] = 0xde;
        b[n + 2] = 0;
        b[n + 3] = (uint8_t)ext_words;
        n += 4;
        for (int i = 0; i < 4 * ext_words; i++)
            b[n++] = (uint8_t)(0x10 + i);
    }
    for (size_t i = 0; i < payload; i++)
        b[n++] = (uint8_t)(i * 13 + seq);
    for (unsigned i = 1; i <= pad; i++)
        b[n++] = i == pad ? pad : 0;
    return n;
}

typedef struct parity {
    igw_srtp *ours;
    srtp_t lib;  /* libsrtp sender with our write key */
    srtp_t peer; /* the reference peer's receiver */
    unsigned disagree; /* one refused, the other did not, or different bytes */
} parity;

/* Protects plain[0..plen) with ours into out and with libsrtp into a copy:
 * 1 when both accepted with the same bytes, 0 when both refused, -1 (and
 * counted) otherwise. */
static int protect_both(parity *p, const uint8_t *plain, size_t plen, uint8_t *out, size_t *olen)
{
    uint8_t lib[BUFCAP];
    memcpy(out, plain, plen);
    memcpy(lib, plain, plen);
    *olen = plen;
    int n = (int)plen;
    int a = igw_srtp_protect(p->ours, out, olen, BUFCAP);
    srtp_err_status_t b = srtp_protect(p->lib, lib, &n);
    int r = -1;
    if (a == 0 && b == srtp_err_status_ok)
        r = (size_t)n == *olen && memcmp(out, lib, *olen) == 0 ? 1 : -1;
    else if (a != 0 && b != srtp_err_status_ok)
        r = 0;
    if (r < 0)
        p->disagree++;
    return r;
}

/* The peer's libsrtp unprotects prot[0..n) back to plain[0..plen). */
static int peer_accepts(parity *p, const uint8_t *prot, size_t n, const uint8_t *plain, size_t plen)
{
    uint8_t buf[BUFCAP];
    memcpy(buf, prot, n);
    int len = (int)n;
    return srtp_unprotect(p->peer, buf, &len) == srtp_err_status_ok && (size_t)len == plen &&
           memcmp(buf, plain, plen) == 0;
}

/* Both protect it the same way and the peer takes it: 1. */
static int send_ok(parity *p, const uint8_t *plain, size_t plen, uint8_t *out, size_t *olen)
{
    return protect_both(p, plain, plen, out, olen) == 1 && peer_accepts(p, out, *olen, plain, plen);
}

/* prior_ssrcs: outbound SSRCs `ours` has already used. */
static void check_protect_parity(parity *p, size_t tag, unsigned prior_ssrcs)
{
    uint8_t plain[BUFCAP], out[BUFCAP], keep[BUFCAP];
    size_t plen, olen, klen;

    /* plain packets, up to the largest accepted */
    plen = rtp_packet_ex(plain, 100, 0x1001, 0, -1, 160, 0);
    CHECK(send_ok(p, plain, plen, out, &olen));
    CHECK(olen == plen + tag);
    CHECK(memcmp(out, plain, 12) == 0 && memcmp(out + 12, plain + 12, 160) != 0);
    memcpy(keep, out, olen);
    klen = olen;
    CHECK(!peer_accepts(p, keep, klen, plain, plen)); /* the peer refuses a replay */
    plen = rtp_packet_ex(plain, 101, 0x1001, 0, -1, 1188, 0); /* 1200 bytes */
    CHECK(send_ok(p, plain, plen, out, &olen));
    plen = rtp_packet_ex(plain, 102, 0x1001, 0, -1, IGW_SRTP_MAX_PACKET - 12, 0);
    CHECK(send_ok(p, plain, plen, out, &olen));
    CHECK(olen == IGW_SRTP_MAX_PACKET + tag);

    /* CSRCs and a header extension: all of it stays in the clear (and, with
     * GCM, authenticated as AAD) */
    plen = rtp_packet_ex(plain, 7, 0x1002, 3, 2, 300, 0);
    size_t hlen = 12 + 3 * 4 + 4 + 2 * 4;
    CHECK(send_ok(p, plain, plen, out, &olen));
    CHECK(memcmp(out, plain, hlen) == 0 && memcmp(out + hlen, plain + hlen, 300) != 0);
    plen = rtp_packet_ex(plain, 8, 0x1002, 15, 0, 40, 0); /* most CSRCs, empty extension */
    CHECK(send_ok(p, plain, plen, out, &olen));
    plen = rtp_packet_ex(plain, 9, 0x1002, 0, 255, 1, 0);
    CHECK(send_ok(p, plain, plen, out, &olen));

    /* RTP padding is part of the payload, encrypted (RFC 3711 3.1; RFC 7714 alike) */
    plen = rtp_packet_ex(plain, 1, 0x1003, 0, -1, 100, 7);
    CHECK(send_ok(p, plain, plen, out, &olen));
    CHECK(memcmp(out + plen - 7, plain + plen - 7, 7) != 0);
    plen = rtp_packet_ex(plain, 2, 0x1003, 0, -1, 0, 4); /* padding only */
    CHECK(send_ok(p, plain, plen, out, &olen));
    plen = rtp_packet_ex(plain, 3, 0x1003, 2, 1, 33, 255); /* everything at once */
    CHECK(send_ok(p, plain, plen, out, &olen));
    plen = rtp_packet_ex(plain, 4, 0x1003, 0, -1, 0, 0); /* no payload at all */
    CHECK(send_ok(p, plain, plen, out, &olen));
    CHECK(olen == 12 + tag);

    /* Two SSRCs interleaved, 400 packets each, both wrapping 65535 -> 0 at
     * different times (so a shared ROC would show). Some are held back and
     * sent late: A's 65530 once A is at 40 (ROC 1), B's 65535 once B is at
     * 20, B's 3 once B is at 50. Copies of A's 65500 and 10 are kept. */
    const uint32_t A = 0x2000a, B = 0x2000b;
    uint8_t keep_a0[BUFCAP], keep_a1[BUFCAP];
    size_t ka0 = 0, ka1 = 0;
    unsigned sent = 0, bad = 0;
    for (unsigned i = 0; i < 400; i++) {
        for (int w = 0; w < 2; w++) {
            uint16_t seq = (uint16_t)((w ? 65300u : 65400u) + i);
            uint32_t ssrc = w ? B : A;
            if ((!w && seq == 65530) || (w && (seq == 65535 || seq == 3)))
                continue;
            plen = rtp_packet_ex(plain, seq, ssrc, (unsigned)(i % 3), i % 5 ? -1 : 1, 100 + i % 7,
                                 (uint8_t)(i % 11 == 0 ? 3 : 0));
            sent++;
            bad += !send_ok(p, plain, plen, out, &olen);
            if (!w && seq == 65500) {
                memcpy(keep_a0, out, olen);
                ka0 = olen;
            }
            if (!w && seq == 10) {
                memcpy(keep_a1, out, olen);
                ka1 = olen;
            }
            uint16_t late = 0;
            uint32_t late_ssrc = ssrc;
            if (!w && seq == 40)
                late = 65530;
            else if (w && seq == 20)
                late = 65535;
            else if (w && seq == 50)
                late = 3;
            if (late) {
                plen = rtp_packet_ex(plain, late, late_ssrc, 0, -1, 77, 0);
                sent++;
                bad += !send_ok(p, plain, plen, out, &olen);
            }
        }
    }
    CHECK(sent == 800 && bad == 0);
    CHECK(ka0 > 0 && ka1 > 0);

    /* retransmissions after the wrap: A's 65500 with its ROC 0, A's 10 with
     * ROC 1, byte for byte what was sent; the peer refuses both as replays */
    uint16_t rseq[2] = {65500, 10};
    for (int k = 0; k < 2; k++) {
        unsigned i = (uint16_t)(rseq[k] - 65400u);
        plen = rtp_packet_ex(plain, rseq[k], A, i % 3, i % 5 ? -1 : 1, 100 + i % 7,
                             (uint8_t)(i % 11 == 0 ? 3 : 0));
        CHECK(protect_both(p, plain, plen, out, &olen) == 1);
        CHECK(k == 0 ? olen == ka0 && memcmp(out, keep_a0, olen) == 0
                     : olen == ka1 && memcmp(out, keep_a1, olen) == 0);
        CHECK(!peer_accepts(p, out, olen, plain, plen));
    }

    /* A's newest is ROC 1, seq 263: 1023 behind (ROC 0, 64776) still goes,
     * 1024 behind is refused by both, as is anything older */
    plen = rtp_packet_ex(plain, 64776, A, 0, -1, 20, 0);
    CHECK(protect_both(p, plain, plen, out, &olen) == 1);
    plen = rtp_packet_ex(plain, 64775, A, 0, -1, 20, 0);
    CHECK(protect_both(p, plain, plen, out, &olen) == 0);
    plen = rtp_packet_ex(plain, 40000, A, 0, -1, 20, 0);
    CHECK(protect_both(p, plain, plen, out, &olen) == 0);
    /* a jump ahead of almost 2^15 keeps ROC 1; the peer follows */
    plen = rtp_packet_ex(plain, 263 + 32767, A, 0, -1, 20, 0);
    CHECK(send_ok(p, plain, plen, out, &olen));
    plen = rtp_packet_ex(plain, 263 + 32768, A, 0, -1, 20, 0);
    CHECK(send_ok(p, plain, plen, out, &olen));

    /* a stream that starts past 2^15: seq 0 right after 32769 is the next
     * ROC (libsrtp guesses ROC 0 only while the newest index is <= 2^15) */
    plen = rtp_packet_ex(plain, 32769, 0x1005, 0, -1, 20, 0);
    CHECK(send_ok(p, plain, plen, out, &olen));
    plen = rtp_packet_ex(plain, 0, 0x1005, 0, -1, 20, 0);
    CHECK(send_ok(p, plain, plen, out, &olen));

    /* malformed headers: both refuse */
    plen = rtp_packet_ex(plain, 5, 0x1004, 0, 3, 0, 0);
    plen -= 4; /* the extension claims a word more than there is */
    CHECK(protect_both(p, plain, plen, out, &olen) == 0);
    plen = rtp_packet_ex(plain, 5, 0x1004, 15, -1, 0, 0);
    CHECK(protect_both(p, plain, plen - 1, out, &olen) == 0); /* a CSRC cut short */
    plen = rtp_packet_ex(plain, 5, 0x1004, 0, 0, 0, 0);
    CHECK(protect_both(p, plain, plen - 1, out, &olen) == 0); /* extension head cut short */
    CHECK(p->disagree == 0);

    /* the SSRC bound (libsrtp has none): new SSRCs until ours refuses */
    unsigned used = prior_ssrcs + 6; /* 0x1001-0x1003, A, B, 0x1005 */
    unsigned took = 0;
    for (uint32_t k = 0; k < IGW_SRTP_MAX_OUT_SSRC + 2; k++) {
        plen = rtp_packet_ex(plain, 1, 0x3000 + k, 0, -1, 10, 0);
        memcpy(out, plain, plen);
        olen = plen;
        took += igw_srtp_protect(p->ours, out, &olen, sizeof out) == 0;
    }
    CHECK(took == IGW_SRTP_MAX_OUT_SSRC - used);
    plen = rtp_packet_ex(plain, 300, 0x1001, 0, -1, 10, 0); /* a known one still goes */
    CHECK(send_ok(p, plain, plen, out, &olen));
}

/* Our transport in `role` against the reference peer; checks SRTP and SRTCP
 * both ways with the reference's own keys. */
static void test_reference(igw_dtls_cert *cert, igw_dtls_role role, const char *profiles, int gcm)
{
    ref r;
    int ref_client = role == IGW_DTLS_SERVER;
    ref_init(&r, ref_client, profiles);
    char err[128];
    igw_dtls *d = igw_dtls_new(cert, role, r.fp, ref_send, &r, err, sizeof err);
    if (!d)
        die(err);
    igw_dtls_start(d);
    int ref_done = 0, ref_failed = 0;
    for (int i = 0; i < 50 && !ref_failed; i++) {
        if (!ref_done) {
            int rc = SSL_do_handshake(r.ssl);
            if (rc == 1)
                ref_done = 1;
            else if (SSL_get_error(r.ssl, rc) != SSL_ERROR_WANT_READ)
                ref_failed = 1;
        }
        char *data = NULL;
        long n = BIO_get_mem_data(r.wb, &data);
        if (n > 0) {
            igw_dtls_feed(d, (const uint8_t *)data, (size_t)n);
            if (BIO_reset(r.wb) != 1)
                die("BIO_reset");
        } else if (ref_done && BIO_ctrl_pending(r.rb) == 0) {
            break;
        }
    }
    ERR_clear_error();
    CHECK(ref_done && !ref_failed);
    CHECK(igw_dtls_state_get(d) == IGW_DTLS_CONNECTED);
    igw_srtp_profile want = gcm ? IGW_SRTP_AEAD_AES_128_GCM : IGW_SRTP_AES128_CM_SHA1_80;
    CHECK(igw_dtls_srtp_profile(d) == want);
    /* our fingerprint is the SHA-256 of the certificate the peer was shown */
    uint8_t md[32];
    unsigned int mdlen = 0;
    X509 *shown = SSL_get0_peer_certificate(r.ssl);
    CHECK(shown && X509_digest(shown, EVP_sha256(), md, &mdlen) && mdlen == 32 &&
          memcmp(md, igw_dtls_cert_fp(cert), 32) == 0);

    igw_srtp *s = NULL;
    if (igw_dtls_state_get(d) == IGW_DTLS_CONNECTED)
        s = igw_dtls_srtp_new(d, err, sizeof err);
    CHECK(s != NULL);
    if (s && ref_done && ref_keys(&r, ref_client, gcm) == 0) {
        uint8_t plain[BUFCAP], buf[BUFCAP];
        size_t plen = rtp_packet(plain, 5, 0xabcdef01u, 160), len;
        int n;
        /* reference -> ours */
        memcpy(buf, plain, plen);
        n = (int)plen;
        CHECK(srtp_protect(r.out, buf, &n) == srtp_err_status_ok);
        len = (size_t)n;
        CHECK(igw_srtp_unprotect(s, buf, &len) == 0);
        CHECK(len == plen && memcmp(buf, plain, plen) == 0);
        /* ours -> reference */
        plen = rtp_packet(plain, 77, 0x01020304u, 300);
        memcpy(buf, plain, plen);
        len = plen;
        CHECK(igw_srtp_protect(s, buf, &len, sizeof buf) == 0);
        n = (int)len;
        CHECK(srtp_unprotect(r.in, buf, &n) == srtp_err_status_ok);
        CHECK((size_t)n == plen && memcmp(buf, plain, plen) == 0);
        /* SRTCP both ways */
        plen = rtcp_packet(plain, 0x01020304u, 1);
        memcpy(buf, plain, plen);
        len = plen;
        CHECK(igw_srtp_protect_rtcp(s, buf, &len, sizeof buf) == 0);
        n = (int)len;
        CHECK(srtp_unprotect_rtcp(r.in, buf, &n) == srtp_err_status_ok);
        CHECK((size_t)n == plen && memcmp(buf, plain, plen) == 0);
        plen = rtcp_packet(plain, 0xabcdef01u, 2);
        memcpy(buf, plain, plen);
        n = (int)plen;
        CHECK(srtp_protect_rtcp(r.out, buf, &n) == srtp_err_status_ok);
        len = (size_t)n;
        CHECK(igw_srtp_unprotect_rtcp(s, buf, &len) == 0);
        CHECK(len == plen && memcmp(buf, plain, plen) == 0);
        /* outbound RTP byte for byte against libsrtp, one SSRC used above */
        parity par = {s, r.mirror, r.in, 0};
        check_protect_parity(&par, gcm ? 16 : 10, 1);
    } else {
        CHECK(0); /* no keys to compare */
    }
    igw_srtp_free(s);
    igw_dtls_free(d);
    ref_free(&r);
}

static void test_edges(igw_dtls_cert *ca)
{
    char err[128] = "";
    uint8_t fp[32] = {0};
    wire l = {0};
    CHECK(igw_dtls_new(ca, IGW_DTLS_CLIENT, fp, NULL, &l, err, sizeof err) == NULL);
    CHECK(err[0] != '\0');
    CHECK(igw_dtls_new(NULL, IGW_DTLS_CLIENT, fp, on_send, &l, err, sizeof err) == NULL);

    /* a transport freed mid-handshake, its timer before that */
    igw_dtls *d = igw_dtls_new(ca, IGW_DTLS_CLIENT, fp, on_send, &l, err, sizeof err);
    CHECK(d != NULL);
    if (d) {
        CHECK(igw_dtls_on_timer(d) == IGW_DTLS_NEW); /* not started: nothing */
        CHECK(l.sent == 0);
        igw_dtls_start(d);
        CHECK(l.sent == 1);
        int64_t t = igw_dtls_timeout_us(d);
        CHECK(t > 0 && t <= 1000000); /* the first retransmission comes quickly */
        CHECK(igw_dtls_on_timer(d) == IGW_DTLS_HANDSHAKING);
        CHECK(l.sent == 1); /* not due yet: nothing resent */
        CHECK(srtp_refused(d));
        igw_dtls_close(d);
        CHECK(igw_dtls_state_get(d) == IGW_DTLS_CLOSED);
        CHECK(l.sent == 1); /* nothing to close_notify before connecting */
        igw_dtls_free(d);
    }
    wire_clear(&l);
    igw_dtls_free(NULL);
    igw_dtls_cert_free(NULL);
    igw_srtp_free(NULL);
}

int main(void)
{
    /* LeakSanitizer ends the process without flushing stdio */
    setvbuf(stdout, NULL, _IOLBF, 0);
    char err[128];
    igw_dtls_cert *ca = igw_dtls_cert_new(err, sizeof err);
    igw_dtls_cert *cb = igw_dtls_cert_new(err, sizeof err);
    if (!ca || !cb)
        die(err);
    int64_t t0 = mono_us();
    test_cert(ca, cb);
    test_handshake_gcm(ca, cb);
    test_wrong_fp_at_client(ca, cb);
    test_wrong_fp_at_server(ca, cb);
    test_loss(ca, cb, 1, 0); /* the server's first flight */
    test_loss(ca, cb, 0, 1); /* the client's second flight */
    test_loss(ca, cb, 1, 1); /* the server's final flight (it is connected) */
    test_cm_profile();
    test_garbage(ca, cb);
    test_reference(ca, IGW_DTLS_SERVER, "SRTP_AEAD_AES_128_GCM", 1);
    test_reference(ca, IGW_DTLS_CLIENT, "SRTP_AEAD_AES_128_GCM", 1);
    test_reference(cb, IGW_DTLS_SERVER, "SRTP_AES128_CM_SHA1_80", 0);
    test_reference(cb, IGW_DTLS_CLIENT, "SRTP_AES128_CM_SHA1_80", 0);
    test_edges(ca);
    CHECK(mono_us() - t0 < 5000000);
    igw_dtls_cert_free(ca);
    igw_dtls_cert_free(cb);
    return check_summary("dtls_test");
}
