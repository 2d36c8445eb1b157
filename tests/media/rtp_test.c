/* rtp_test.c - unit tests of the RTP/RTCP module (rtp.c).
 *
 * Packets are built by hand byte by byte, so every expected value is known.
 * Truncations are parsed from exact-size heap copies: AddressSanitizer then
 * catches any read past the given length. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtp.h"

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint32_t rd24(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }

#include "../check.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A heap copy of exactly n bytes (at least one allocated so n = 0 works). */
static uint8_t *dup_exact(const uint8_t *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    if (!q) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    if (n)
        memcpy(q, p, n);
    return q;
}

static size_t put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return 2;
}

static size_t put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
    return 4;
}

/* ---- classify ------------------------------------------------------------------- */

static igw_pkt_kind classify2(uint8_t b0, uint8_t b1, size_t n)
{
    uint8_t p[16] = {0};
    p[0] = b0;
    p[1] = b1;
    return igw_pkt_classify(p, n);
}

static void test_classify(void)
{
    CHECK(classify2(0, 1, 20) == IGW_PKT_STUN);
    CHECK(classify2(1, 1, 20) == IGW_PKT_STUN);
    CHECK(classify2(3, 0, 2) == IGW_PKT_STUN);
    CHECK(classify2(4, 0, 16) == IGW_PKT_UNKNOWN);
    CHECK(classify2(19, 0, 16) == IGW_PKT_UNKNOWN); /* ZRTP */
    CHECK(classify2(20, 0xfe, 16) == IGW_PKT_DTLS);
    CHECK(classify2(22, 0xfe, 16) == IGW_PKT_DTLS);
    CHECK(classify2(63, 0, 16) == IGW_PKT_DTLS);
    CHECK(classify2(64, 0, 16) == IGW_PKT_UNKNOWN); /* TURN channel */
    CHECK(classify2(127, 0, 16) == IGW_PKT_UNKNOWN);
    CHECK(classify2(128, 96, 12) == IGW_PKT_RTP);
    CHECK(classify2(191, 96, 12) == IGW_PKT_RTP);
    CHECK(classify2(192, 96, 12) == IGW_PKT_UNKNOWN);
    CHECK(classify2(255, 96, 12) == IGW_PKT_UNKNOWN);
    /* Payload types with and without the marker bit. */
    CHECK(classify2(0x80, 96, 12) == IGW_PKT_RTP);
    CHECK(classify2(0x80, 0x80 | 96, 12) == IGW_PKT_RTP);
    CHECK(classify2(0x80, 111, 12) == IGW_PKT_RTP);
    CHECK(classify2(0x80, 127, 12) == IGW_PKT_RTP);
    CHECK(classify2(0x80, 0xff, 12) == IGW_PKT_RTP); /* PT 127 + marker */
    CHECK(classify2(0x80, 0, 12) == IGW_PKT_RTP);
    CHECK(classify2(0x80, 63, 12) == IGW_PKT_RTP);
    CHECK(classify2(0x80, 200, 8) == IGW_PKT_RTCP); /* SR */
    CHECK(classify2(0x81, 205, 8) == IGW_PKT_RTCP); /* NACK */
    CHECK(classify2(0x80, 192, 8) == IGW_PKT_RTCP); /* first RTCP type */
    CHECK(classify2(0x80, 223, 8) == IGW_PKT_RTCP); /* last RTCP type */
    CHECK(classify2(0x80, 64, 8) == IGW_PKT_RTCP);  /* same PT bits, no high bit */
    CHECK(classify2(0x80, 224, 12) == IGW_PKT_RTP); /* PT 96 + marker */
    CHECK(classify2(0x80, 191, 12) == IGW_PKT_RTP); /* PT 63 + marker */
    /* Too short for what the first bytes announce. */
    CHECK(classify2(0x80, 96, 11) == IGW_PKT_UNKNOWN);
    CHECK(classify2(0x80, 200, 7) == IGW_PKT_UNKNOWN);
    CHECK(classify2(0x80, 200, 12) == IGW_PKT_RTCP);
    CHECK(classify2(0, 1, 1) == IGW_PKT_UNKNOWN);
    CHECK(classify2(22, 0xfe, 1) == IGW_PKT_UNKNOWN);
    CHECK(classify2(22, 0xfe, 0) == IGW_PKT_UNKNOWN);
}

/* ---- RTP header ------------------------------------------------------------------- */

/* V=2 P X CC=2, M + PT 111, two CSRCs, a 2-word one-byte-header extension,
 * 7 payload bytes and 3 padding bytes. */
static size_t build_full(uint8_t *p)
{
    size_t n = 0;
    p[n++] = 0x80 | 0x20 | 0x10 | 2;
    p[n++] = 0x80 | 111;
    n += put16(p + n, 0x1234);
    n += put32(p + n, 0xdeadbeef);
    n += put32(p + n, 0x01020304);
    n += put32(p + n, 0xc5c5c5c1);
    n += put32(p + n, 0xc5c5c5c2);
    n += put16(p + n, 0xbede);
    n += put16(p + n, 2);
    for (int i = 0; i < 8; i++)
        p[n++] = (uint8_t)(0x10 + i);
    for (int i = 0; i < 7; i++)
        p[n++] = (uint8_t)(0xa0 + i);
    p[n++] = 0;
    p[n++] = 0;
    p[n++] = 3;
    return n;
}

static void test_parse(void)
{
    uint8_t p[64];
    igw_rtp_hdr h;

    /* Minimal: 12-byte header and 5 payload bytes. */
    uint8_t s[17] = {0x80, 96, 0xff, 0xfe, 0, 0, 0x10, 0x01, 0xca, 0xfe, 0xba, 0xbe, 1, 2, 3, 4, 5};
    memset(&h, 0xaa, sizeof h);
    CHECK(igw_rtp_parse(s, sizeof s, &h));
    CHECK(h.pt == 96 && !h.marker);
    CHECK(h.seq == 0xfffe && h.ts == 0x1001 && h.ssrc == 0xcafebabe);
    CHECK(h.hdr_len == 12 && h.payload_len == 5);
    CHECK(igw_rtp_parse(s, 12, &h) && h.payload_len == 0);

    /* CSRCs, extension and padding. */
    size_t n = build_full(p);
    CHECK(n == 42);
    memset(&h, 0, sizeof h);
    CHECK(igw_rtp_parse(p, n, &h));
    CHECK(h.pt == 111 && h.marker);
    CHECK(h.seq == 0x1234 && h.ts == 0xdeadbeef && h.ssrc == 0x01020304);
    CHECK(h.hdr_len == 32);
    CHECK(h.payload_len == 7);
    CHECK(p[h.hdr_len] == 0xa0 && p[h.hdr_len + h.payload_len - 1] == 0xa6);

    /* Every truncation: the header (32 bytes) never fits below 32; above, the
     * last byte read as a padding count must fit or the parse fails. */
    int bad = 0;
    for (size_t m = 0; m < n; m++) {
        uint8_t *q = dup_exact(p, m);
        igw_rtp_hdr t;
        bool ok = igw_rtp_parse(q, m, &t);
        if (m < 32 && ok)
            bad++;
        if (ok && (t.hdr_len != 32 || t.hdr_len + t.payload_len >= m)) /* padding >= 1 */
            bad++;
        if (m >= 32 && ok != (q[m - 1] >= 1 && q[m - 1] <= m - 32))
            bad++;
        free(q);
    }
    CHECK(bad == 0);

    /* Versions other than 2. */
    uint8_t v[42];
    memcpy(v, p, n);
    v[0] = (uint8_t)((v[0] & 0x3f) | 0x40);
    CHECK(!igw_rtp_parse(v, n, &h));
    v[0] = (uint8_t)(v[0] & 0x3f);
    CHECK(!igw_rtp_parse(v, n, &h));
    v[0] = (uint8_t)(v[0] | 0xc0);
    CHECK(!igw_rtp_parse(v, n, &h));

    /* Padding count 0, past the payload, and exactly the whole payload. */
    memcpy(v, p, n);
    v[n - 1] = 0;
    CHECK(!igw_rtp_parse(v, n, &h));
    v[n - 1] = 11;
    CHECK(!igw_rtp_parse(v, n, &h));
    v[n - 1] = 10;
    CHECK(igw_rtp_parse(v, n, &h) && h.hdr_len == 32 && h.payload_len == 0);
    v[n - 1] = 255;
    CHECK(!igw_rtp_parse(v, n, &h));

    /* Extension length past the end; exactly to the end. */
    memcpy(v, p, n);
    v[0] &= (uint8_t)~0x20; /* no padding: the extension may run to the end */
    put16(v + 22, 0xffff);
    CHECK(!igw_rtp_parse(v, n, &h));
    put16(v + 22, 5); /* 20 + 4 + 20 = 44 > 42 */
    CHECK(!igw_rtp_parse(v, n, &h));
    put16(v + 22, 4); /* 20 + 4 + 16 = 40 <= 42 */
    CHECK(igw_rtp_parse(v, n, &h) && h.hdr_len == 40 && h.payload_len == 2);

    /* CSRC count 15 needs 72 bytes. */
    memcpy(v, p, n);
    v[0] = 0x80 | 15;
    CHECK(!igw_rtp_parse(v, n, &h));
    v[0] = 0x80 | 7; /* 12 + 28 = 40 */
    CHECK(igw_rtp_parse(v, n, &h) && h.hdr_len == 40 && h.payload_len == 2);
}

static void test_rewrite(void)
{
    uint8_t p[42];
    size_t n = build_full(p);
    uint8_t orig[42];
    memcpy(orig, p, n);
    igw_rtp_rewrite(p, 96, 0xabcd, 0x01234567, 0x89abcdef);
    igw_rtp_hdr h;
    CHECK(igw_rtp_parse(p, n, &h));
    CHECK(h.pt == 96 && h.marker);
    CHECK(h.seq == 0xabcd && h.ts == 0x01234567 && h.ssrc == 0x89abcdef);
    CHECK(p[0] == orig[0]);
    CHECK(memcmp(p + 12, orig + 12, n - 12) == 0);

    p[1] = 100; /* marker off stays off; PT bits above 127 are dropped */
    igw_rtp_rewrite(p, 0xff, 1, 2, 3);
    CHECK(p[1] == 127);
    CHECK(igw_rtp_parse(p, n, &h) && !h.marker && h.pt == 127 && h.seq == 1 && h.ts == 2 &&
          h.ssrc == 3);
}

/* ---- H264 ---------------------------------------------------------------------------- */

static void test_h264(void)
{
    uint8_t nal[4] = {0x65, 0x88, 0x80, 0x40};
    CHECK(igw_rtp_h264_keyframe(nal, sizeof nal)); /* IDR */
    nal[0] = 0x67;
    CHECK(igw_rtp_h264_keyframe(nal, 1)); /* SPS */
    nal[0] = 0x27; /* SPS with nal_ref_idc 1 */
    CHECK(igw_rtp_h264_keyframe(nal, 1));
    nal[0] = 0x41;
    CHECK(!igw_rtp_h264_keyframe(nal, sizeof nal)); /* non-IDR slice */
    nal[0] = 0x68;
    CHECK(!igw_rtp_h264_keyframe(nal, sizeof nal)); /* PPS */
    nal[0] = 0x06;
    CHECK(!igw_rtp_h264_keyframe(nal, sizeof nal)); /* SEI */
    nal[0] = 0x00;
    CHECK(!igw_rtp_h264_keyframe(nal, sizeof nal));
    nal[0] = 0x65;
    CHECK(!igw_rtp_h264_keyframe(nal, 0));
    CHECK(!igw_rtp_h264_keyframe(NULL, 0));

    /* STAP-A: SEI, PPS, then SPS last. */
    uint8_t stap[] = {0x78, 0, 2, 0x06, 0x05, 0, 1, 0x68, 0, 3, 0x67, 0x42, 0xc0};
    CHECK(igw_rtp_h264_keyframe(stap, sizeof stap));
    int bad = 0;
    for (size_t m = 0; m < sizeof stap; m++) {
        uint8_t *q = dup_exact(stap, m);
        if (igw_rtp_h264_keyframe(q, m))
            bad++; /* the SPS is only whole at full length */
        free(q);
    }
    CHECK(bad == 0);
    stap[10] = 0x65; /* IDR last */
    CHECK(igw_rtp_h264_keyframe(stap, sizeof stap));
    stap[10] = 0x41; /* no key NAL at all */
    CHECK(!igw_rtp_h264_keyframe(stap, sizeof stap));
    /* A key NAL after a size past the end is not trusted. */
    uint8_t stap2[] = {0x78, 0, 1, 0x68, 0, 9, 0x65, 0x88};
    CHECK(!igw_rtp_h264_keyframe(stap2, sizeof stap2));
    stap2[5] = 2;
    CHECK(igw_rtp_h264_keyframe(stap2, sizeof stap2));
    uint8_t stap0[] = {0x78, 0, 0, 0, 1, 0x65}; /* zero-size NAL: malformed */
    CHECK(!igw_rtp_h264_keyframe(stap0, sizeof stap0));
    uint8_t stap_first[] = {0x18, 0, 1, 0x67, 0, 1, 0x68}; /* SPS first, F/NRI 0 */
    CHECK(igw_rtp_h264_keyframe(stap_first, sizeof stap_first));

    /* FU-A: only the start fragment of an IDR or SPS. */
    uint8_t fu[] = {0x7c, 0x85, 0x88, 0x80};
    CHECK(igw_rtp_h264_keyframe(fu, sizeof fu));
    CHECK(igw_rtp_h264_keyframe(fu, 2));
    CHECK(!igw_rtp_h264_keyframe(fu, 1));
    fu[1] = 0x05; /* middle */
    CHECK(!igw_rtp_h264_keyframe(fu, sizeof fu));
    fu[1] = 0x45; /* end */
    CHECK(!igw_rtp_h264_keyframe(fu, sizeof fu));
    fu[1] = 0x81; /* start of a non-IDR slice */
    CHECK(!igw_rtp_h264_keyframe(fu, sizeof fu));
    fu[1] = 0x87;
    CHECK(igw_rtp_h264_keyframe(fu, sizeof fu));

    /* STAP-B (25), MTAP16 (26), MTAP24 (27), FU-B (29), reserved 30/31. */
    uint8_t other[] = {0x79, 0x85, 0, 1, 0x65, 0x65};
    const uint8_t types[] = {25, 26, 27, 29, 30, 31};
    bad = 0;
    for (size_t i = 0; i < LEN(types); i++) {
        other[0] = (uint8_t)(0x60 | types[i]);
        if (igw_rtp_h264_keyframe(other, sizeof other))
            bad++;
    }
    CHECK(bad == 0);
}

/* ---- RTCP walk -------------------------------------------------------------------------- */

typedef struct rec {
    igw_rtcp_item it[300];
    int n;
} rec;

static void visit(void *ud, const igw_rtcp_item *item)
{
    rec *r = ud;
    if (r->n < (int)LEN(r->it))
        r->it[r->n] = *item;
    r->n++;
}

static int walk(const uint8_t *p, size_t n, rec *r)
{
    memset(r, 0, sizeof *r);
    uint8_t *q = dup_exact(p, n);
    int rc = igw_rtcp_walk(q, n, visit, r);
    free(q);
    return rc;
}

static size_t hdr(uint8_t *p, int padding, uint8_t count, uint8_t pt, size_t len)
{
    p[0] = (uint8_t)(0x80 | (padding ? 0x20 : 0) | count);
    p[1] = pt;
    put16(p + 2, (uint16_t)(len / 4 - 1));
    return 4;
}

/* SR with one report block (52 bytes). */
static size_t build_sr(uint8_t *p)
{
    size_t n = hdr(p, 0, 1, 200, 52);
    n += put32(p + n, 0x11111111);
    n += put32(p + n, 0xe0000001); /* NTP seconds */
    n += put32(p + n, 0x80000000); /* NTP fraction */
    n += put32(p + n, 0x00abcdef);
    n += put32(p + n, 1000);
    n += put32(p + n, 123456);
    memset(p + n, 0x5a, 24); /* the report block, skipped */
    return n + 24;
}

/* SDES with one chunk: CNAME "abc" then the end item, padded to 12 bytes. */
static size_t build_sdes(uint8_t *p)
{
    size_t n = hdr(p, 0, 1, 202, 16);
    n += put32(p + n, 0x11111111);
    const uint8_t items[] = {1, 3, 'a', 'b', 'c', 0, 0, 0};
    memcpy(p + n, items, sizeof items);
    return n + sizeof items; /* 4 header + 4 ssrc + 8 items = 16 */
}

static size_t build_rr(uint8_t *p, uint32_t ssrc)
{
    size_t n = hdr(p, 0, 0, 201, 8);
    return n + put32(p + n, ssrc);
}

static size_t build_fb(uint8_t *p, uint8_t pt, uint8_t fmt, uint32_t s, uint32_t m, size_t fci_len)
{
    size_t n = hdr(p, 0, fmt, pt, 12 + fci_len);
    n += put32(p + n, s);
    return n + put32(p + n, m);
}

static void test_walk_valid(void)
{
    uint8_t p[256];
    rec r;

    /* SR + SDES. */
    size_t n = build_sr(p);
    CHECK(n == 52);
    n += build_sdes(p + n);
    CHECK(n == 68);
    CHECK(walk(p, n, &r) == 2 && r.n == 2);
    CHECK(r.it[0].kind == IGW_RTCP_SR && r.it[0].sender_ssrc == 0x11111111);
    CHECK(r.it[0].ntp == 0xe000000180000000ull);
    CHECK(r.it[0].rtp_ts == 0x00abcdef && r.it[0].packets == 1000 && r.it[0].octets == 123456);
    CHECK(r.it[1].kind == IGW_RTCP_SDES && r.it[1].sender_ssrc == 0x11111111);

    /* RR + PLI (reduced-size feedback works alone too). */
    n = build_rr(p, 0x22222222);
    n += build_fb(p + n, 206, 1, 0x22222222, 0x33333333, 0);
    CHECK(n == 20);
    CHECK(walk(p, n, &r) == 2);
    CHECK(r.it[0].kind == IGW_RTCP_RR && r.it[0].sender_ssrc == 0x22222222);
    CHECK(r.it[1].kind == IGW_RTCP_PLI && r.it[1].sender_ssrc == 0x22222222 &&
          r.it[1].media_ssrc == 0x33333333);
    CHECK(walk(p + 8, 12, &r) == 1 && r.it[0].kind == IGW_RTCP_PLI);

    /* NACK: pid 100 with bits 0, 2, 15; pid 65535 with bit 0 (wraps to 0). */
    n = build_fb(p, 205, 1, 0x44, 0x55, 8);
    n += put16(p + n, 100);
    n += put16(p + n, 0x8005);
    n += put16(p + n, 65535);
    n += put16(p + n, 0x0001);
    const uint16_t want[] = {100, 101, 103, 116, 65535, 0};
    CHECK(walk(p, n, &r) == (int)LEN(want) && r.n == (int)LEN(want));
    int bad = 0;
    for (size_t i = 0; i < LEN(want); i++)
        if (r.it[i].kind != IGW_RTCP_NACK || r.it[i].seq != want[i] || r.it[i].sender_ssrc != 0x44 ||
            r.it[i].media_ssrc != 0x55)
            bad++;
    CHECK(bad == 0);
    /* All 16 bits: 17 items. */
    put16(p + 14, 0xffff);
    put16(p + 2, 3); /* only the first FCI */
    CHECK(walk(p, 16, &r) == 17 && r.it[16].seq == 116 && r.it[1].seq == 101);

    /* FIR with two entries. */
    n = build_fb(p, 206, 4, 0x66, 0, 16);
    n += put32(p + n, 0xaaaa0001);
    p[n++] = 7;
    p[n++] = 0;
    p[n++] = 0;
    p[n++] = 0;
    n += put32(p + n, 0xaaaa0002);
    p[n++] = 200;
    p[n++] = 0;
    p[n++] = 0;
    p[n++] = 0;
    CHECK(walk(p, n, &r) == 2);
    CHECK(r.it[0].kind == IGW_RTCP_FIR && r.it[0].media_ssrc == 0xaaaa0001 && r.it[0].fir_seq == 7 &&
          r.it[0].sender_ssrc == 0x66);
    CHECK(r.it[1].kind == IGW_RTCP_FIR && r.it[1].media_ssrc == 0xaaaa0002 && r.it[1].fir_seq == 200);

    /* REMB for two SSRCs; the same AFB without the identifier is OTHER. */
    n = build_fb(p, 206, 15, 0x77, 0, 16);
    memcpy(p + n, "REMB", 4);
    n += 4;
    p[n++] = 2;
    p[n++] = 0x0b; /* exp 2, mantissa 0x30d40 */
    p[n++] = 0x0d;
    p[n++] = 0x40;
    n += put32(p + n, 0xbbbb0001);
    n += put32(p + n, 0xbbbb0002);
    CHECK(n == 28);
    CHECK(walk(p, n, &r) == 1 && r.it[0].kind == IGW_RTCP_REMB && r.it[0].sender_ssrc == 0x77 &&
          r.it[0].media_ssrc == 0xbbbb0001);
    p[16] = 3; /* three SSRCs announced, two present */
    CHECK(walk(p, n, &r) == -1);
    p[16] = 2;
    memcpy(p + 12, "RRMB", 4);
    CHECK(walk(p, n, &r) == 1 && r.it[0].kind == IGW_RTCP_OTHER);

    /* BYE with two SSRCs, APP and transport-cc as OTHER. */
    n = hdr(p, 0, 2, 203, 12);
    n += put32(p + n, 0x01);
    n += put32(p + n, 0x02);
    n += hdr(p + n, 0, 0, 204, 12);
    n += put32(p + n, 0x03);
    memcpy(p + n, "name", 4);
    n += 4;
    n += build_fb(p + n, 205, 15, 0x04, 0x05, 4);
    n += put32(p + n, 0);
    CHECK(walk(p, n, &r) == 4);
    CHECK(r.it[0].kind == IGW_RTCP_BYE && r.it[0].sender_ssrc == 0x01);
    CHECK(r.it[1].kind == IGW_RTCP_BYE && r.it[1].sender_ssrc == 0x02);
    CHECK(r.it[2].kind == IGW_RTCP_OTHER && r.it[2].sender_ssrc == 0x03);
    CHECK(r.it[3].kind == IGW_RTCP_OTHER && r.it[3].sender_ssrc == 0x04 && r.it[3].media_ssrc == 0x05);

    /* Padding in the last packet: an RR padded by 4 bytes. */
    n = hdr(p, 1, 0, 201, 12);
    n += put32(p + n, 0x88);
    n += put32(p + n, 0x00000004);
    CHECK(walk(p, n, &r) == 1 && r.it[0].kind == IGW_RTCP_RR && r.it[0].sender_ssrc == 0x88);
    p[11] = 9; /* pads into the header */
    CHECK(walk(p, n, &r) == -1);
    p[11] = 0;
    CHECK(walk(p, n, &r) == -1);
    p[11] = 5; /* cuts the RR's SSRC */
    CHECK(walk(p, n, &r) == -1);

    /* A NULL visitor still counts. */
    n = build_rr(p, 1);
    CHECK(igw_rtcp_walk(p, n, NULL, NULL) == 1);
}

static void test_walk_malformed(void)
{
    uint8_t p[1400] = {0};
    rec r;

    CHECK(walk(p, 0, &r) == -1);

    /* Length past the end, alone and as the second packet. */
    size_t n = build_rr(p, 0x10);
    put16(p + 2, 2);
    CHECK(walk(p, n, &r) == -1 && r.n == 0);
    put16(p + 2, 1);
    n += build_rr(p + n, 0x20);
    put16(p + 10, 0xffff);
    CHECK(walk(p, n, &r) == -1 && r.n == 1 && r.it[0].sender_ssrc == 0x10);

    /* Version 1 and 3, first or second. */
    n = build_rr(p, 0x10);
    n += build_rr(p + n, 0x20);
    p[8] = 0x40;
    CHECK(walk(p, n, &r) == -1 && r.n == 1);
    p[0] = 0xc0;
    CHECK(walk(p, n, &r) == -1 && r.n == 0);

    /* Trailing bytes too few for a header. */
    n = build_rr(p, 0x10);
    p[n++] = 0x80;
    p[n++] = 201;
    CHECK(walk(p, n, &r) == -1 && r.n == 1);

    /* Zero-length packets: an RR with no room for its SSRC is malformed;
     * empty unknown packets advance 4 bytes each, capped at 256 items. */
    hdr(p, 0, 0, 201, 4);
    CHECK(walk(p, 4, &r) == -1);
    for (size_t i = 0; i < 300; i++)
        hdr(p + 4 * i, 0, 0, 204, 4);
    CHECK(walk(p, 4 * 300, &r) == 256 && r.n == 256 && r.it[255].kind == IGW_RTCP_OTHER);
    CHECK(walk(p, 4 * 10, &r) == 10);
    hdr(p, 0, 0, 203, 4); /* BYE with no SSRC: fine, no item */
    CHECK(walk(p, 4, &r) == 0 && r.n == 0);

    /* Counts that do not fit the length. */
    n = build_sr(p);
    p[0] = 0x82; /* two report blocks in room for one */
    CHECK(walk(p, n, &r) == -1);
    p[0] = 0x80; /* zero report blocks but 24 bytes left over: tolerated */
    CHECK(walk(p, n, &r) == 1);
    hdr(p, 0, 0, 200, 24); /* SR cut inside the sender info */
    CHECK(walk(p, 24, &r) == -1);
    n = build_rr(p, 1);
    p[0] = 0x81; /* RR announcing a report block */
    CHECK(walk(p, n, &r) == -1);
    hdr(p, 0, 3, 203, 12); /* BYE with 3 SSRCs in room for 2 */
    CHECK(walk(p, 12, &r) == -1);
    build_fb(p, 206, 1, 1, 2, 0);
    hdr(p, 0, 1, 206, 8); /* PLI without a media SSRC */
    CHECK(walk(p, 8, &r) == -1);
    build_fb(p, 206, 4, 1, 0, 4); /* FIR with half an entry */
    CHECK(walk(p, 16, &r) == -1);
    build_fb(p, 205, 1, 1, 2, 4); /* NACK whose padding splits an FCI */
    put16(p + 12, 1);
    p[0] |= 0x20;
    p[15] = 2;
    CHECK(walk(p, 16, &r) == -1);
    p[15] = 4; /* padding eats the whole FCI: no items */
    CHECK(walk(p, 16, &r) == 0);
}

/* A compound as a browser sends it, cut at every length. */
static void test_walk_truncations(void)
{
    uint8_t p[256];
    size_t n = build_sr(p);
    n += build_sdes(p + n);
    n += build_fb(p + n, 206, 1, 0x11111111, 0x99, 0);
    n += build_fb(p + n, 205, 1, 0x11111111, 0x99, 4);
    n += put16(p + n, 500);
    n += put16(p + n, 0x0003);
    rec r;
    int full = walk(p, n, &r);
    CHECK(full == 6 && r.n == 6);
    CHECK(r.it[5].kind == IGW_RTCP_NACK && r.it[5].seq == 502);
    const size_t ends[] = {52, 68, 80}; /* packet boundaries: valid, fewer items */
    const int items_at[] = {1, 2, 3};
    int bad = 0;
    for (size_t m = 0; m < n; m++) {
        int rc = walk(p, m, &r);
        int expect = -1;
        for (size_t i = 0; i < LEN(ends); i++)
            if (m == ends[i])
                expect = items_at[i];
        if (rc != expect || (rc >= 0 && r.n != rc) || r.n >= full)
            bad++;
    }
    CHECK(bad == 0);
}

/* ---- builders -------------------------------------------------------------------------- */

static void test_builders(void)
{
    uint8_t b[64];
    rec r;

    memset(b, 0xee, sizeof b);
    CHECK(igw_rtcp_write_pli(b, 11, 1, 2) == 0);
    CHECK(igw_rtcp_write_pli(b, 12, 0x01020304, 0x05060708) == 12);
    const uint8_t pli[12] = {0x81, 206, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(memcmp(b, pli, 12) == 0);
    CHECK(b[12] == 0xee);
    CHECK(igw_pkt_classify(b, 12) == IGW_PKT_RTCP);
    CHECK(walk(b, 12, &r) == 1 && r.it[0].kind == IGW_RTCP_PLI && r.it[0].sender_ssrc == 0x01020304 &&
          r.it[0].media_ssrc == 0x05060708);

    CHECK(igw_rtcp_write_fir(b, 19, 1, 2, 3) == 0);
    CHECK(igw_rtcp_write_fir(b, sizeof b, 0xa, 0xb, 42) == 20);
    CHECK(b[0] == 0x84 && b[1] == 206 && b[2] == 0 && b[3] == 4);
    CHECK(b[8] == 0 && b[9] == 0 && b[10] == 0 && b[11] == 0); /* header media SSRC is 0 */
    CHECK(walk(b, 20, &r) == 1 && r.it[0].kind == IGW_RTCP_FIR && r.it[0].sender_ssrc == 0xa &&
          r.it[0].media_ssrc == 0xb && r.it[0].fir_seq == 42);

    CHECK(igw_rtcp_write_sr(b, 27, 1, 2, 3, 4, 5) == 0);
    CHECK(igw_rtcp_write_sr(b, 28, 0xc, 0x0102030405060708ull, 0xfffffffe, 77, 88888) == 28);
    CHECK(b[0] == 0x80 && b[1] == 200 && b[3] == 6);
    CHECK(walk(b, 28, &r) == 1 && r.it[0].kind == IGW_RTCP_SR && r.it[0].sender_ssrc == 0xc &&
          r.it[0].ntp == 0x0102030405060708ull && r.it[0].rtp_ts == 0xfffffffe &&
          r.it[0].packets == 77 && r.it[0].octets == 88888);

    CHECK(igw_rtcp_write_rr(b, 7, 1, NULL, 0) == 0);
    CHECK(igw_rtcp_write_rr(b, 8, 0xd, NULL, 0) == 8);
    CHECK(b[0] == 0x80 && b[1] == 201 && b[2] == 0 && b[3] == 1);
    CHECK(walk(b, 8, &r) == 1 && r.it[0].kind == IGW_RTCP_RR && r.it[0].sender_ssrc == 0xd);
    {
        /* Two report blocks, exact bytes; lost clamps to 24-bit signed both ways. */
        igw_rtcp_report rb[2] = {{0x11223344, 25, -3, 0x00010005, 77, 0xa1b2c3d4, 0x00018000},
                                 {0x55667788, 255, 0x1234567, 9, 0, 0, 0}};
        CHECK(igw_rtcp_write_rr(b, 55, 0xd, rb, 2) == 0);
        CHECK(igw_rtcp_write_rr(b, 56, 0xd, rb, 32) == 0);
        CHECK(igw_rtcp_write_rr(b, 56, 0xd, rb, 2) == 56);
        CHECK(b[0] == 0x82 && b[1] == 201 && b[2] == 0 && b[3] == 13);
        CHECK(rd32(b + 8) == 0x11223344 && b[12] == 25 && rd24(b + 13) == 0xfffffd && rd32(b + 16) == 0x00010005 &&
              rd32(b + 20) == 77 && rd32(b + 24) == 0xa1b2c3d4 && rd32(b + 28) == 0x00018000);
        CHECK(rd32(b + 32) == 0x55667788 && b[36] == 255 && rd24(b + 37) == 0x7fffff && rd32(b + 40) == 9);
        rb[0].cumulative_lost = -0x1000000;
        CHECK(igw_rtcp_write_rr(b, 56, 0xd, rb, 1) == 32 && rd24(b + 13) == 0x800000);
        CHECK(walk(b, 32, &r) == 1 && r.it[0].kind == IGW_RTCP_RR && r.it[0].sender_ssrc == 0xd);
    }

    /* A compound of all four builders. */
    size_t n = igw_rtcp_write_sr(b, sizeof b, 1, 2, 3, 4, 5);
    n += igw_rtcp_write_pli(b + n, sizeof b - n, 1, 9);
    n += igw_rtcp_write_fir(b + n, sizeof b - n, 1, 9, 1);
    CHECK(n == 60);
    CHECK(walk(b, n, &r) == 3 && r.it[0].kind == IGW_RTCP_SR && r.it[1].kind == IGW_RTCP_PLI &&
          r.it[2].kind == IGW_RTCP_FIR);
}

/* The FCIs of a NACK built into b (n bytes): pid/blp pairs. */
static size_t fcis(const uint8_t *b, size_t n, uint16_t *pid, uint16_t *blp, size_t max)
{
    size_t k = 0;
    for (size_t off = 12; off + 4 <= n && k < max; off += 4, k++) {
        pid[k] = (uint16_t)(b[off] << 8 | b[off + 1]);
        blp[k] = (uint16_t)(b[off + 2] << 8 | b[off + 3]);
    }
    return k;
}

static uint32_t rnd_state = 12345;
static uint32_t next_rand(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

static void test_nack_builder(void)
{
    uint8_t b[1500];
    uint16_t pid[400], blp[400];
    rec r;

    const uint16_t s1[] = {100, 101, 103, 116};
    CHECK(igw_rtcp_write_nack(b, sizeof b, 0x1, 0x2, s1, LEN(s1)) == 16);
    CHECK(b[0] == 0x81 && b[1] == 205 && b[2] == 0 && b[3] == 3);
    CHECK(fcis(b, 16, pid, blp, 400) == 1 && pid[0] == 100 && blp[0] == 0x8005);
    CHECK(walk(b, 16, &r) == 4 && r.it[0].seq == 100 && r.it[1].seq == 101 && r.it[2].seq == 103 &&
          r.it[3].seq == 116 && r.it[3].sender_ssrc == 0x1 && r.it[3].media_ssrc == 0x2);

    /* Unsorted with a duplicate: the same bytes. */
    uint8_t b2[64];
    const uint16_t s2[] = {116, 103, 101, 100, 101};
    CHECK(igw_rtcp_write_nack(b2, sizeof b2, 0x1, 0x2, s2, LEN(s2)) == 16);
    CHECK(memcmp(b, b2, 16) == 0);

    /* Wrap: 65530..5 in one FCI. */
    uint16_t s3[12];
    for (int i = 0; i < 12; i++)
        s3[i] = (uint16_t)(65530 + i);
    CHECK(s3[11] == 5);
    CHECK(igw_rtcp_write_nack(b, sizeof b, 1, 2, s3, LEN(s3)) == 16);
    CHECK(fcis(b, 16, pid, blp, 400) == 1 && pid[0] == 65530 && blp[0] == 0x07ff);
    CHECK(walk(b, 16, &r) == 12 && r.it[0].seq == 65530 && r.it[5].seq == 65535 && r.it[6].seq == 0 &&
          r.it[11].seq == 5);
    const uint16_t s4[] = {3, 65533, 5, 65530};
    CHECK(igw_rtcp_write_nack(b, sizeof b, 1, 2, s4, LEN(s4)) == 16);
    CHECK(fcis(b, 16, pid, blp, 400) == 1 && pid[0] == 65530 &&
          blp[0] == ((1u << 2) | (1u << 8) | (1u << 10)));

    /* Spans over 17: one FCI per window, greedy from the earliest. */
    const uint16_t s5[] = {44, 27, 26, 10};
    CHECK(igw_rtcp_write_nack(b, sizeof b, 1, 2, s5, LEN(s5)) == 24);
    CHECK(fcis(b, 24, pid, blp, 400) == 3);
    CHECK(pid[0] == 10 && blp[0] == 0x8000 && pid[1] == 27 && blp[1] == 0 && pid[2] == 44 && blp[2] == 0);
    /* Only two FCIs fit: the earliest two. */
    CHECK(igw_rtcp_write_nack(b, 23, 1, 2, s5, LEN(s5)) == 20);
    CHECK(b[3] == 4 && fcis(b, 20, pid, blp, 400) == 2 && pid[0] == 10 && pid[1] == 27);
    CHECK(igw_rtcp_write_nack(b, 15, 1, 2, s5, LEN(s5)) == 0);
    CHECK(igw_rtcp_write_nack(b, 16, 1, 2, s5, LEN(s5)) == 16);
    CHECK(igw_rtcp_write_nack(b, sizeof b, 1, 2, s5, 0) == 0);

    /* Random sets round-trip exactly through the walk (as sets). */
    int bad = 0;
    static uint8_t want[65536], got[65536];
    uint16_t seqs[200];
    for (int t = 0; t < 200; t++) {
        uint16_t base = (uint16_t)next_rand();
        size_t k = 1 + next_rand() % LEN(seqs);
        unsigned span = 1 + next_rand() % 600;
        memset(want, 0, sizeof want);
        memset(got, 0, sizeof got);
        size_t distinct = 0;
        for (size_t i = 0; i < k; i++) {
            seqs[i] = (uint16_t)(base + next_rand() % span);
            distinct += !want[seqs[i]];
            want[seqs[i]] = 1;
        }
        size_t len = igw_rtcp_write_nack(b, sizeof b, 7, 8, seqs, k);
        memset(&r, 0, sizeof r);
        int rc = igw_rtcp_walk(b, len, visit, &r);
        if (len < 16 || rc != (int)distinct || rc > 256)
            bad++;
        for (int i = 0; i < rc && i < (int)LEN(r.it); i++) {
            if (r.it[i].kind != IGW_RTCP_NACK || !want[r.it[i].seq] || got[r.it[i].seq])
                bad++;
            got[r.it[i].seq] = 1;
        }
    }
    CHECK(bad == 0);
}

/* Random bytes through every parser: no out-of-bounds read (ASan) and results
 * within bounds. Half the inputs are chains of version 2 RTCP headers whose
 * lengths end exactly at n, so the walk's accepting paths are reached too. */
static void test_random_bytes(void)
{
    int bad = 0, parsed = 0, walked = 0;
    uint8_t buf[96];
    rec r;
    for (int t = 0; t < 20000; t++) {
        size_t n = next_rand() % sizeof buf;
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)next_rand();
        if (next_rand() % 2) {
            size_t off = 0, words = 1 + next_rand() % 6;
            while (off + 4 * words <= n) {
                buf[off] = (uint8_t)(0x80 | (buf[off] & 0x1f)); /* no padding */
                buf[off + 1] = (uint8_t)(200 + next_rand() % 8);
                buf[off + 2] = 0;
                buf[off + 3] = (uint8_t)(words - 1);
                off += 4 * words;
                words = 1 + next_rand() % 6;
            }
            if (next_rand() % 4)
                n = off;
        }
        uint8_t *q = dup_exact(buf, n);
        igw_rtp_hdr h;
        if (igw_rtp_parse(q, n, &h)) {
            parsed++;
            if (h.hdr_len < 12 || h.hdr_len + h.payload_len > n)
                bad++;
        }
        (void)igw_rtp_h264_keyframe(q, n);
        (void)igw_pkt_classify(q, n);
        memset(&r, 0, sizeof r);
        int rc = igw_rtcp_walk(q, n, visit, &r);
        if (rc < -1 || rc > 256 || (rc >= 0 && rc != r.n))
            bad++;
        walked += rc > 0;
        free(q);
    }
    CHECK(bad == 0);
    CHECK(parsed > 100 && walked > 100); /* the inputs reach the accepting paths */
}

static void test_ntp(void)
{
    CHECK(igw_rtp_ntp_from_unix_us(0) == 2208988800ull << 32);
    CHECK(igw_rtp_ntp_from_unix_us(1500000) == (2208988801ull << 32 | 0x80000000u));
    CHECK(igw_rtp_ntp_from_unix_us(1) == (2208988800ull << 32 | 4294u));
    CHECK(igw_rtp_ntp_from_unix_us(999999) == (2208988800ull << 32 | 4294963001u));
    CHECK(igw_rtp_ntp_from_unix_us(1700000000250000ull) == (3908988800ull << 32 | 0x40000000u));
    /* Era 1 (2036-02-07): the seconds wrap to 0. */
    CHECK(igw_rtp_ntp_from_unix_us(2085978496ull * 1000000 + 750000) == 0xc0000000u);
}

/* ---- the rewriter ----------------------------------------------------------------------- */

static void test_rewriter(void)
{
    igw_rtp_rewriter r;
    uint16_t os, is;
    uint32_t ot;
    uint64_t now = 1000000;

    igw_rtp_rewriter_init(&r, 90000, 1000, 5000000);
    CHECK(!r.started);
    CHECK(!igw_rtp_rewriter_unmap(&r, 1000, &is));
    igw_rtp_rewriter_map(&r, 40000, 123456, now, &os, &ot);
    CHECK(os == 1000 && ot == 5000000 && r.started);
    CHECK(r.base_seq == 1000 && r.last_seq == 1000 && r.last_ts == 5000000 && r.last_us == now);

    igw_rtp_rewriter_map(&r, 40001, 123456 + 3000, now + 33333, &os, &ot);
    CHECK(os == 1001 && ot == 5003000);

    /* Reordering survives: 40003 then 40002. */
    igw_rtp_rewriter_map(&r, 40003, 123456 + 9000, now + 100000, &os, &ot);
    CHECK(os == 1003 && ot == 5009000);
    igw_rtp_rewriter_map(&r, 40002, 123456 + 6000, now + 110000, &os, &ot);
    CHECK(os == 1002 && ot == 5006000);
    CHECK(r.last_seq == 1003 && r.last_ts == 5009000 && r.last_us == now + 100000);
    CHECK(igw_rtp_rewriter_unmap(&r, 1000, &is) && is == 40000);
    CHECK(igw_rtp_rewriter_unmap(&r, 1003, &is) && is == 40003);
    CHECK(!igw_rtp_rewriter_unmap(&r, 1004, &is));
    CHECK(!igw_rtp_rewriter_unmap(&r, 999, &is));

    /* Rebase to a new source after half a second: seq last+1, ts + 45000. */
    igw_rtp_rewriter_rebase(&r);
    igw_rtp_rewriter_map(&r, 7, 999, now + 600000, &os, &ot);
    CHECK(os == 1004 && ot == 5009000 + 45000);
    CHECK(r.base_seq == 1004);
    igw_rtp_rewriter_map(&r, 8, 999 + 3000, now + 633333, &os, &ot);
    CHECK(os == 1005 && ot == 5054000 + 3000);
    CHECK(igw_rtp_rewriter_unmap(&r, 1004, &is) && is == 7);
    CHECK(igw_rtp_rewriter_unmap(&r, 1005, &is) && is == 8);
    CHECK(!igw_rtp_rewriter_unmap(&r, 1003, &is)); /* the previous mapping */
    CHECK(!igw_rtp_rewriter_unmap(&r, 1006, &is));
    /* A packet from before the rebase comes out before base_seq: unmap tells. */
    igw_rtp_rewriter_map(&r, 6, 999 - 3000, now + 640000, &os, &ot);
    CHECK(os == 1003 && ot == 5054000 - 3000);
    CHECK(!igw_rtp_rewriter_unmap(&r, os, &is));
    CHECK(r.last_seq == 1005);

    /* Rebase with no time elapsed (or the clock going back): ts + 1. */
    igw_rtp_rewriter_rebase(&r);
    igw_rtp_rewriter_map(&r, 30000, 0, now + 633333, &os, &ot);
    CHECK(os == 1006 && ot == 5057000 + 1);
    igw_rtp_rewriter_rebase(&r);
    igw_rtp_rewriter_map(&r, 30000, 0, now, &os, &ot);
    CHECK(os == 1007 && ot == 5057002);
    /* Rebase after 2^40 us at 90 kHz: 98956046499 ticks, modulo 2^32. */
    uint64_t t0 = r.last_us;
    igw_rtp_rewriter_rebase(&r);
    igw_rtp_rewriter_map(&r, 1, 1, t0 + (1ull << 40), &os, &ot);
    CHECK(os == 1008 && ot == (uint32_t)(5057002u + 171798691u));
    /* A sub-tick elapsed time still advances by one. */
    igw_rtp_rewriter_rebase(&r);
    igw_rtp_rewriter_map(&r, 1, 1, r.last_us + 5, &os, &ot);
    CHECK(os == 1009 && ot == (uint32_t)(5057002u + 171798691u + 1));

    /* Wrap of the 16-bit seq and the 32-bit ts. */
    igw_rtp_rewriter_init(&r, 48000, 65534, 0xffffff00u);
    igw_rtp_rewriter_map(&r, 10, 0, now, &os, &ot);
    CHECK(os == 65534 && ot == 0xffffff00u);
    igw_rtp_rewriter_map(&r, 11, 960, now + 20000, &os, &ot);
    CHECK(os == 65535 && ot == 0x000002c0u);
    igw_rtp_rewriter_map(&r, 12, 1920, now + 40000, &os, &ot);
    CHECK(os == 0 && ot == 0x00000680u);
    CHECK(r.last_seq == 0 && r.last_ts == 0x680u);
    CHECK(igw_rtp_rewriter_unmap(&r, 65534, &is) && is == 10);
    CHECK(igw_rtp_rewriter_unmap(&r, 0, &is) && is == 12);
    CHECK(!igw_rtp_rewriter_unmap(&r, 1, &is));
    CHECK(!igw_rtp_rewriter_unmap(&r, 65533, &is));
    /* Input seq wrapping too. */
    igw_rtp_rewriter_rebase(&r);
    igw_rtp_rewriter_map(&r, 65535, 0xfffffc40u, now + 60000, &os, &ot);
    CHECK(os == 1 && ot == 0x680u + 960u);
    igw_rtp_rewriter_map(&r, 0, 0, now + 80000, &os, &ot);
    CHECK(os == 2 && ot == 0x680u + 960u + 960u);
    CHECK(igw_rtp_rewriter_unmap(&r, 2, &is) && is == 0);
    CHECK(igw_rtp_rewriter_unmap(&r, 1, &is) && is == 65535);

    /* A long mapping: the unmap window stays within half the seq space. */
    igw_rtp_rewriter_init(&r, 90000, 0, 0);
    int bad = 0;
    for (uint32_t i = 0; i < 70000; i++) {
        igw_rtp_rewriter_map(&r, (uint16_t)(i + 7), i * 3000, now + i, &os, &ot);
        if (os != (uint16_t)i || ot != i * 3000)
            bad++;
    }
    CHECK(bad == 0);
    uint16_t last = (uint16_t)69999;
    CHECK(r.last_seq == last);
    CHECK(igw_rtp_rewriter_unmap(&r, last, &is) && is == (uint16_t)(last + 7));
    CHECK(igw_rtp_rewriter_unmap(&r, (uint16_t)(last - 32767), &is) && is == (uint16_t)(last - 32760));
    CHECK(!igw_rtp_rewriter_unmap(&r, (uint16_t)(last - 32768), &is));
    CHECK(!igw_rtp_rewriter_unmap(&r, (uint16_t)(last + 1), &is));
}

/* ---- talk: audio level, stripping, the floor ------------------------------------------- */

/* An Opus-like packet: pt 111, seq, ts, ssrc, `ext` (whole extension block
 * with its 4-byte header, may be NULL), a 3-byte payload. */
static size_t build_talk(uint8_t *p, uint16_t seq, uint32_t ts, uint32_t ssrc, const uint8_t *ext, size_t extlen)
{
    size_t n = 0;
    p[n++] = ext ? 0x90 : 0x80;
    p[n++] = 111;
    n += put16(p + n, seq);
    n += put32(p + n, ts);
    n += put32(p + n, ssrc);
    if (ext) {
        memcpy(p + n, ext, extlen);
        n += extlen;
    }
    p[n++] = 0xfc;
    p[n++] = 0xff;
    p[n++] = 0xfe;
    return n;
}

static void test_talk_level_strip(void)
{
    uint8_t p[64];
    igw_rtp_hdr h;
    /* One-byte form: a padding byte, id 3 (2 bytes), id 1 len 1: V + level 30. */
    const uint8_t one[] = {0xbe, 0xde, 0x00, 0x02, 0x00, 0x31, 0xaa, 0xbb, 0x10, 0x80 | 30, 0x00, 0x00};
    size_t n = build_talk(p, 1, 2, 3, one, sizeof one);
    uint8_t *q = dup_exact(p, n);
    CHECK(igw_rtp_parse(q, n, &h));
    CHECK((igw_rtp_audio_level(q, n, &h, 1)) == 30);
    CHECK((igw_rtp_audio_level(q, n, &h, 2)) == -1);
    CHECK((igw_rtp_audio_level(q, n, &h, 0)) == -1);
    free(q);
    /* Two-byte form (appbits 0), id 200 len 1. */
    const uint8_t two[] = {0x10, 0x00, 0x00, 0x01, 200, 1, 0x7f, 0x00};
    n = build_talk(p, 1, 2, 3, two, sizeof two);
    CHECK(igw_rtp_parse(p, n, &h));
    CHECK((igw_rtp_audio_level(p, n, &h, 200)) == 127);
    /* An element running past its block, id 15 (stop), an unknown profile, no extension. */
    const uint8_t past[] = {0xbe, 0xde, 0x00, 0x01, 0x00, 0x00, 0x00, 0x1f};
    n = build_talk(p, 1, 2, 3, past, sizeof past);
    CHECK(igw_rtp_parse(p, n, &h) && igw_rtp_audio_level(p, n, &h, 1) == -1);
    const uint8_t stop[] = {0xbe, 0xde, 0x00, 0x01, 0xf0, 0x10, 0x05, 0x00};
    n = build_talk(p, 1, 2, 3, stop, sizeof stop);
    CHECK(igw_rtp_parse(p, n, &h) && igw_rtp_audio_level(p, n, &h, 1) == -1);
    const uint8_t prof[] = {0x12, 0x34, 0x00, 0x01, 0x10, 0x05, 0x00, 0x00};
    n = build_talk(p, 1, 2, 3, prof, sizeof prof);
    CHECK(igw_rtp_parse(p, n, &h) && igw_rtp_audio_level(p, n, &h, 1) == -1);
    n = build_talk(p, 1, 2, 3, NULL, 0);
    CHECK(igw_rtp_parse(p, n, &h) && igw_rtp_audio_level(p, n, &h, 1) == -1);

    /* Strip: CSRCs, extension and padding go; marker, PT, seq, ts, SSRC stay. */
    uint8_t f[64], out[64];
    size_t m = 0;
    f[m++] = 0x80 | 0x20 | 0x10 | 2; /* padding, extension, 2 CSRCs */
    f[m++] = 0x80 | 111;
    m += put16(f + m, 0x1234);
    m += put32(f + m, 0x01020304);
    m += put32(f + m, 0xcafef00d);
    m += put32(f + m, 11);
    m += put32(f + m, 22);
    memcpy(f + m, one, sizeof one);
    m += sizeof one;
    f[m++] = 0xfc;
    f[m++] = 0xaa;
    f[m++] = 0x00;
    f[m++] = 0x02; /* two bytes of padding */
    CHECK(igw_rtp_parse(f, m, &h) && h.payload_len == 2);
    size_t o = igw_rtp_strip(f, &h, out, sizeof out);
    CHECK(o == 14);
    igw_rtp_hdr g;
    CHECK(igw_rtp_parse(out, o, &g) && g.hdr_len == 12 && g.payload_len == 2 && g.marker && g.pt == 111 &&
          g.seq == 0x1234 && g.ts == 0x01020304 && g.ssrc == 0xcafef00d);
    CHECK(out[0] == 0x80 && out[12] == 0xfc && out[13] == 0xaa);
    CHECK((igw_rtp_strip(f, &h, out, 13)) == 0);
}

static void test_floor(void)
{
    igw_rtp_floor f;
    igw_rtp_hdr a = {.pt = 111, .seq = 500, .ts = 96000, .ssrc = 0xa}, b = {.pt = 111, .seq = 9000, .ts = 7, .ssrc = 0xb};
    uint16_t os;
    uint32_t ot;
    uint64_t now = 5000000;
    const uintptr_t A = 1, B = 2;
    igw_rtp_floor_init(&f, 48000, 100, 1000, 300000);

    /* A free floor is taken by activity only. */
    CHECK((igw_rtp_floor_map(&f, A, false, &a, now, &os, &ot)) == IGW_FLOOR_IDLE);
    CHECK(f.holder == 0);
    CHECK((igw_rtp_floor_map(&f, A, true, &a, now, &os, &ot)) == IGW_FLOOR_FORWARD);
    CHECK(f.holder == A && os == 100 && ot == 1000);
    a.seq++, a.ts += 960;
    CHECK((igw_rtp_floor_map(&f, A, true, &a, now + 20000, &os, &ot)) == IGW_FLOOR_FORWARD);
    CHECK(os == 101 && ot == 1960);
    /* B waits while A holds it, even when A goes quiet for a while. */
    CHECK((igw_rtp_floor_map(&f, B, true, &b, now + 30000, &os, &ot)) == IGW_FLOOR_BUSY);
    a.seq++, a.ts += 960;
    CHECK((igw_rtp_floor_map(&f, A, false, &a, now + 40000, &os, &ot)) == IGW_FLOOR_FORWARD);
    CHECK(os == 102 && ot == 2920);
    CHECK((igw_rtp_floor_map(&f, B, true, &b, now + 320000, &os, &ot)) == IGW_FLOOR_BUSY); /* 300 ms since A's activity */
    /* More than 300 ms without activity: B takes it, numbering continues, the
     * timestamp advanced by the wall time since A's last packet (281 ms). */
    CHECK((igw_rtp_floor_map(&f, B, true, &b, now + 321000, &os, &ot)) == IGW_FLOOR_FORWARD);
    CHECK(f.holder == B && os == 103 && ot == 2920 + 281 * 48);
    b.seq++, b.ts += 960;
    CHECK((igw_rtp_floor_map(&f, B, true, &b, now + 341000, &os, &ot)) == IGW_FLOOR_FORWARD);
    CHECK(os == 104 && ot == 2920 + 281 * 48 + 960);
    uint32_t last_ts = ot;
    /* A's late quiet packet after losing the floor is not forwarded. */
    a.seq++, a.ts += 960;
    CHECK((igw_rtp_floor_map(&f, A, false, &a, now + 345000, &os, &ot)) == IGW_FLOOR_BUSY);
    /* Released (its gate closed): A is heard on its next active packet. */
    igw_rtp_floor_release(&f, A); /* not the holder: nothing */
    CHECK(f.holder == B);
    igw_rtp_floor_release(&f, B);
    CHECK(f.holder == 0);
    a.seq++, a.ts += 960;
    CHECK((igw_rtp_floor_map(&f, A, true, &a, now + 361000, &os, &ot)) == IGW_FLOOR_FORWARD);
    CHECK(os == 105 && ot == last_ts + 20 * 48);
    /* The holder's packet from before its current mapping is dropped, not renumbered. */
    igw_rtp_hdr old = a;
    old.seq -= 3;
    CHECK((igw_rtp_floor_map(&f, A, true, &old, now + 362000, &os, &ot)) == IGW_FLOOR_LATE);
    /* The holder restarts its stream (new SSRC): one stream still. */
    a.ssrc = 0xaa, a.seq = 1, a.ts = 5;
    CHECK((igw_rtp_floor_map(&f, A, true, &a, now + 381000, &os, &ot)) == IGW_FLOOR_FORWARD);
    CHECK(os == 106 && ot == last_ts + 40 * 48);
}

/* ---- the history ---------------------------------------------------------------------- */

static void test_history(void)
{
    const size_t badn[] = {0, 1, 8, 15, 17, 24, 100, 5000, 8192, 65536};
    int bad = 0;
    for (size_t i = 0; i < LEN(badn); i++) {
        igw_rtp_history *h = igw_rtp_history_new(badn[i]);
        if (h) {
            bad++;
            igw_rtp_history_free(h);
        }
    }
    CHECK(bad == 0);
    igw_rtp_history *big = igw_rtp_history_new(4096);
    CHECK(big != NULL);
    igw_rtp_history_free(big);
    igw_rtp_history_free(NULL);

    igw_rtp_history *h = igw_rtp_history_new(16);
    CHECK(h != NULL);
    if (!h)
        return;
    static uint8_t pkt[IGW_RTP_MTU + 1];
    for (size_t i = 0; i < sizeof pkt; i++)
        pkt[i] = (uint8_t)(i * 7 + 1);
    size_t n = 0;
    CHECK(igw_rtp_history_get(h, 0, &n) == NULL); /* empty slot, seq 0 */
    igw_rtp_history_put(h, 5, pkt, 100);
    const uint8_t *g = igw_rtp_history_get(h, 5, &n);
    CHECK(g != NULL && n == 100 && memcmp(g, pkt, 100) == 0);
    CHECK(g != pkt);
    CHECK(igw_rtp_history_get(h, 6, &n) == NULL);
    CHECK(igw_rtp_history_get(h, 5 + 16, &n) == NULL);

    /* Same slot, newer seq: the older one is gone. */
    igw_rtp_history_put(h, 5 + 16, pkt + 1, 200);
    CHECK(igw_rtp_history_get(h, 5, &n) == NULL);
    g = igw_rtp_history_get(h, 21, &n);
    CHECK(g != NULL && n == 200 && memcmp(g, pkt + 1, 200) == 0);

    /* Same seq again: the latest copy. */
    igw_rtp_history_put(h, 21, pkt + 2, 12);
    g = igw_rtp_history_get(h, 21, &n);
    CHECK(g != NULL && n == 12 && memcmp(g, pkt + 2, 12) == 0);

    /* Sizes: 0 and MTU+1 store nothing; MTU fits. */
    igw_rtp_history_put(h, 7, pkt, 0);
    CHECK(igw_rtp_history_get(h, 7, &n) == NULL);
    igw_rtp_history_put(h, 7, pkt, IGW_RTP_MTU + 1);
    CHECK(igw_rtp_history_get(h, 7, &n) == NULL);
    igw_rtp_history_put(h, 7, pkt, IGW_RTP_MTU);
    g = igw_rtp_history_get(h, 7, &n);
    CHECK(g != NULL && n == IGW_RTP_MTU && memcmp(g, pkt, IGW_RTP_MTU) == 0);

    /* Across the seq wrap, and a full ring of consecutive packets. */
    for (uint32_t s = 65530; s < 65536 + 10; s++) {
        pkt[0] = (uint8_t)s;
        igw_rtp_history_put(h, (uint16_t)s, pkt, 1 + s % 50);
    }
    bad = 0;
    for (uint32_t s = 65530; s < 65536 + 10; s++) {
        g = igw_rtp_history_get(h, (uint16_t)s, &n);
        if (!g || n != 1 + s % 50 || g[0] != (uint8_t)s)
            bad++;
    }
    CHECK(bad == 0);
    CHECK(igw_rtp_history_get(h, 65529, &n) == NULL);
    CHECK(igw_rtp_history_get(h, 10, &n) == NULL);
    igw_rtp_history_free(h);
}

int main(void)
{
    test_classify();
    test_parse();
    test_rewrite();
    test_h264();
    test_walk_valid();
    test_walk_malformed();
    test_walk_truncations();
    test_builders();
    test_nack_builder();
    test_random_bytes();
    test_ntp();
    test_rewriter();
    test_history();
    test_talk_level_strip();
    test_floor();
    return check_summary("rtp_test");
}
