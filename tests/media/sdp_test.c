/* sdp_test.c - unit tests of the WebRTC SDP module (sdp.c).
 *
 * The corpus in tests/media/sdp_corpus holds real descriptions: offers and an
 * answer captured from Chromium 156 (headless) and an offer from GStreamer
 * 1.22 webrtcbin (x264enc + opusenc, max-bundle, sendonly), plus a hand-written
 * Firefox-style offer (session-level fingerprint and direction, fmtp before
 * rtpmap, mDNS candidates). Fields are checked with their exact values; every
 * parse error class and every check_webrtc reason has a negative test; the
 * writer is checked for round trips, exact caps and what it refuses.
 *
 * Run from the repository root (IGW_SDP_CORPUS overrides the corpus path). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdp.h"

#include "../check.h"

/* String equality that shows both sides when it fails. */
#define CHECK_STR(got, want)                                                                   \
    do {                                                                                       \
        const char *g_ = (got), *w_ = (want);                                                  \
        check(strcmp(g_, w_) == 0, __FILE__, __LINE__, #got, "\"%s\", want \"%s\"", g_, w_); \
    } while (0)

#define CHECK_INT(got, want)                                                 \
    do {                                                                     \
        long long g_ = (long long)(got), w_ = (long long)(want);             \
        check(g_ == w_, __FILE__, __LINE__, #got, "%lld, want %lld", g_, w_); \
    } while (0)

static void *xcalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* igw_sdp is large: the tests share a few heap copies. */
static igw_sdp *S, *T, *U;
static char *WBUF, *WBUF2;
#define WCAP (1u << 20)

/* ---- helpers ---------------------------------------------------------------------- */

typedef struct text {
    char *p;
    size_t n;
} text;

static text load(const char *name)
{
    const char *dir = getenv("IGW_SDP_CORPUS");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/media/sdp_corpus", name);
    text t = {NULL, 0};
    FILE *f = fopen(path, "rb");
    if (!check(f != NULL, __FILE__, __LINE__, path, "cannot open (run from the repository root)"))
        return t;
    t.p = xcalloc(IGW_SDP_MAX_TEXT + 2);
    t.n = fread(t.p, 1, IGW_SDP_MAX_TEXT + 1, f);
    fclose(f);
    return t;
}

static int parse(const char *s, size_t n, igw_sdp *out, char *err, size_t errlen)
{
    return igw_sdp_parse(s, n, out, err, errlen);
}

static int parse_str(const char *s, igw_sdp *out)
{
    char err[128];
    int rc = parse(s, strlen(s), out, err, sizeof err);
    if (rc != 0)
        printf("  (parse error: %s)\n", err);
    return rc;
}

static char *fp_hex(const igw_sdp *s)
{
    static char buf[3 * IGW_SDP_MAX_FP];
    igw_sdp_fp_format(s->fp, s->fp_len, buf, sizeof buf);
    return buf;
}

static int codec_index(const igw_sdp_media *m, unsigned pt)
{
    for (size_t i = 0; i < m->ncodecs; i++)
        if (m->codecs[i].pt == pt)
            return (int)i;
    return -1;
}

static const igw_sdp_codec *codec_pt(const igw_sdp_media *m, unsigned pt)
{
    static const igw_sdp_codec none;
    int i = codec_index(m, pt);
    return i < 0 ? &none : &m->codecs[i];
}

/* "nprft": which of nack, pli, fir, remb, twcc are set. */
static const char *fb(const igw_sdp_codec *c)
{
    static char s[6];
    s[0] = c->fb_nack ? 'n' : '-';
    s[1] = c->fb_pli ? 'p' : '-';
    s[2] = c->fb_fir ? 'f' : '-';
    s[3] = c->fb_remb ? 'r' : '-';
    s[4] = c->fb_twcc ? 't' : '-';
    s[5] = '\0';
    return s;
}

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* Field-by-field comparison of what the writer emits; a rejected section only
 * keeps its kind, port, proto and mid. Returns the number of differences. */
static int diff_sdp(const igw_sdp *a, const igw_sdp *b)
{
    int d = 0;
#define DIFF(c)                                                                      \
    do {                                                                             \
        if (!(c)) {                                                                  \
            if (d++ < 5)                                                             \
                printf("  roundtrip differs: %s\n", #c);                             \
        }                                                                            \
    } while (0)
    DIFF(a->sess_id == b->sess_id && a->sess_version == b->sess_version);
    DIFF(a->bundle == b->bundle && a->nbundle == b->nbundle);
    for (size_t i = 0; i < a->nbundle && i < b->nbundle; i++)
        DIFF(strcmp(a->bundle_mids[i], b->bundle_mids[i]) == 0);
    DIFF(a->ice_lite == b->ice_lite);
    DIFF(strcmp(a->ice_ufrag, b->ice_ufrag) == 0 && strcmp(a->ice_pwd, b->ice_pwd) == 0);
    DIFF(strcmp(a->fp_alg, b->fp_alg) == 0 && a->fp_len == b->fp_len &&
         memcmp(a->fp, b->fp, a->fp_len) == 0);
    DIFF(a->setup == b->setup);
    DIFF(a->nmedia == b->nmedia);
    for (size_t i = 0; i < a->nmedia && i < b->nmedia; i++) {
        const igw_sdp_media *x = &a->media[i], *y = &b->media[i];
        DIFF(x->kind == y->kind && x->port == y->port && strcmp(x->proto, y->proto) == 0 &&
             strcmp(x->mid, y->mid) == 0);
        if (x->port == 0)
            continue;
        DIFF(x->dir == y->dir && x->rtcp_mux == y->rtcp_mux && x->rtcp_rsize == y->rtcp_rsize);
        DIFF(x->ncodecs == y->ncodecs);
        for (size_t j = 0; j < x->ncodecs && j < y->ncodecs; j++) {
            const igw_sdp_codec *p = &x->codecs[j], *q = &y->codecs[j];
            DIFF(p->pt == q->pt && strcmp(p->name, q->name) == 0 && p->clock == q->clock &&
                 p->channels == q->channels && strcmp(p->fmtp, q->fmtp) == 0);
            DIFF(p->fb_nack == q->fb_nack && p->fb_pli == q->fb_pli && p->fb_fir == q->fb_fir &&
                 p->fb_remb == q->fb_remb && p->fb_twcc == q->fb_twcc);
        }
        DIFF(x->nssrc == y->nssrc && memcmp(x->ssrc, y->ssrc, x->nssrc * sizeof x->ssrc[0]) == 0);
        DIFF(strcmp(x->cname, y->cname) == 0 && strcmp(x->msid, y->msid) == 0);
        DIFF(x->audio_level_ext == y->audio_level_ext);
        DIFF(x->ncands == y->ncands);
        for (size_t j = 0; j < x->ncands && j < y->ncands; j++)
            DIFF(strcmp(x->cands[j], y->cands[j]) == 0);
        DIFF(x->end_of_candidates == y->end_of_candidates);
    }
#undef DIFF
    return d;
}

/* write(a) parses back to a, and writing that again gives the same bytes. */
static void check_roundtrip(const igw_sdp *a, const char *what)
{
    size_t n = igw_sdp_write(a, WBUF, WCAP);
    CHECK(n > 0);
    if (n == 0) {
        printf("  (%s: write failed)\n", what);
        return;
    }
    CHECK_INT(strlen(WBUF), n);
    char err[128];
    int rc = parse(WBUF, n, U, err, sizeof err);
    CHECK_INT(rc, 0);
    if (rc != 0) {
        printf("  (%s: reparse failed: %s)\n", what, err);
        return;
    }
    int d = diff_sdp(a, U);
    CHECK_INT(d, 0);
    if (d)
        printf("  (%s)\n", what);
    size_t n2 = igw_sdp_write(U, WBUF2, WCAP);
    CHECK(n2 == n && memcmp(WBUF, WBUF2, n) == 0);
    /* Only CRLF line ends, no other control byte, nothing after the last CRLF. */
    bool clean = n >= 2 && WBUF[n - 2] == '\r' && WBUF[n - 1] == '\n';
    for (size_t i = 0; i < n && clean; i++) {
        unsigned char c = (unsigned char)WBUF[i];
        if (c == '\n')
            clean = i > 0 && WBUF[i - 1] == '\r';
        else if (c == '\r')
            clean = i + 1 < n && WBUF[i + 1] == '\n';
        else
            clean = c >= 0x20 && c < 0x7f;
    }
    CHECK(clean);
}

/* ---- the real Chrome offers and answer ---------------------------------------------- */

static void test_chrome_recvonly(void)
{
    text t = load("chrome156_recvonly_offer.sdp");
    if (!t.p)
        return;
    char err[128] = "unset";
    CHECK_INT(parse(t.p, t.n, S, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK(S->sess_id == 8560353630532341224ull);
    CHECK(S->sess_version == 2);
    CHECK(S->bundle);
    CHECK_INT(S->nbundle, 2);
    CHECK_STR(S->bundle_mids[0], "0");
    CHECK_STR(S->bundle_mids[1], "1");
    CHECK(!S->ice_lite);
    CHECK_STR(S->ice_ufrag, "mFWi");
    CHECK_STR(S->ice_pwd, "BdVb7oKrjjEBNIYagSU6qDqF");
    CHECK_STR(S->fp_alg, "sha-256");
    CHECK_INT(S->fp_len, 32);
    CHECK_STR(fp_hex(S), "9F:56:17:5F:5E:61:5B:2F:64:51:BF:0A:D8:59:3A:D9:FC:66:F6:F8:34:CE:1F:8E:"
                         "C7:45:0B:04:19:53:71:7E");
    CHECK_INT(S->setup, IGW_SDP_SETUP_ACTPASS);
    CHECK_INT(S->nmedia, 2);

    const igw_sdp_media *a = &S->media[0], *v = &S->media[1];
    CHECK_INT(a->kind, IGW_SDP_AUDIO);
    CHECK_INT(a->port, 9);
    CHECK_STR(a->proto, "UDP/TLS/RTP/SAVPF");
    CHECK_STR(a->mid, "0");
    CHECK_INT(a->dir, IGW_SDP_RECVONLY);
    CHECK(a->rtcp_mux && a->rtcp_rsize);
    static const unsigned apts[] = {111, 63, 9, 0, 8, 13, 110, 126};
    CHECK_INT(a->ncodecs, 8);
    for (size_t i = 0; i < 8 && i < a->ncodecs; i++)
        CHECK_INT(a->codecs[i].pt, apts[i]);
    const igw_sdp_codec *c = codec_pt(a, 111);
    CHECK_STR(c->name, "opus");
    CHECK_INT(c->clock, 48000);
    CHECK_INT(c->channels, 2);
    CHECK_STR(c->fmtp, "minptime=10;useinbandfec=1");
    CHECK_STR(fb(c), "----t");
    CHECK_STR(codec_pt(a, 63)->name, "red");
    CHECK_STR(codec_pt(a, 63)->fmtp, "111/111");
    CHECK_STR(codec_pt(a, 0)->name, "PCMU");
    CHECK_INT(codec_pt(a, 0)->channels, 0);
    CHECK_STR(codec_pt(a, 110)->name, "telephone-event");
    CHECK_INT(codec_pt(a, 110)->clock, 48000);
    CHECK_INT(codec_pt(a, 126)->clock, 8000);
    CHECK_INT(a->nssrc, 0);
    CHECK_STR(a->cname, "");
    CHECK_STR(a->msid, "");
    CHECK_INT(a->ncands, 0);
    CHECK(!a->end_of_candidates);

    CHECK_INT(v->kind, IGW_SDP_VIDEO);
    CHECK_STR(v->mid, "1");
    CHECK_INT(v->dir, IGW_SDP_RECVONLY);
    static const unsigned vpts[] = {96,  97,  98,  99,  100, 101, 35,  36,  37, 38, 102, 103,
                                    104, 107, 108, 109, 114, 115, 116, 117, 39, 40, 41,  42,
                                    43,  44,  45,  46,  47,  48,  118, 119, 120, 49};
    CHECK_INT(v->ncodecs, 34); /* more than the original cap of 24 */
    for (size_t i = 0; i < 34 && i < v->ncodecs; i++)
        CHECK_INT(v->codecs[i].pt, vpts[i]);
    CHECK_STR(codec_pt(v, 96)->name, "VP8");
    CHECK_STR(fb(codec_pt(v, 96)), "npfrt");
    CHECK_STR(codec_pt(v, 97)->name, "rtx");
    CHECK_STR(codec_pt(v, 97)->fmtp, "apt=96");
    CHECK_STR(fb(codec_pt(v, 97)), "-----");
    CHECK_STR(codec_pt(v, 100)->fmtp, "profile-id=2");
    CHECK_STR(codec_pt(v, 102)->fmtp, "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f");
    CHECK_STR(codec_pt(v, 45)->name, "AV1");
    CHECK_STR(codec_pt(v, 45)->fmtp, "level-idx=5;profile=0;tier=0");
    CHECK_STR(codec_pt(v, 49)->name, "flexfec-03");
    CHECK_STR(fb(codec_pt(v, 49)), "---rt");
    CHECK_STR(codec_pt(v, 49)->fmtp, "repair-window=10000000");

    /* H264 classes of each offered profile. */
    CHECK_INT(igw_sdp_h264_profile(codec_pt(v, 102)->fmtp), IGW_H264_BASELINE);
    CHECK_INT(igw_sdp_h264_profile(codec_pt(v, 108)->fmtp), IGW_H264_CONSTRAINED_BASELINE);
    CHECK_INT(igw_sdp_h264_profile(codec_pt(v, 116)->fmtp), IGW_H264_MAIN);
    CHECK_INT(igw_sdp_h264_profile(codec_pt(v, 41)->fmtp), IGW_H264_UNKNOWN); /* f4001f */
    CHECK(igw_sdp_h264_mode1(codec_pt(v, 108)->fmtp));
    CHECK(!igw_sdp_h264_mode1(codec_pt(v, 114)->fmtp));

    /* Picks: constrained baseline with mode 1 is 108, not the earlier 102. */
    CHECK_INT(igw_sdp_pick_h264(v, IGW_H264_UNKNOWN), codec_index(v, 108));
    CHECK_INT(igw_sdp_pick_h264(v, IGW_H264_CONSTRAINED_BASELINE), codec_index(v, 108));
    CHECK_INT(igw_sdp_pick_h264(v, IGW_H264_BASELINE), codec_index(v, 102));
    CHECK_INT(igw_sdp_pick_h264(v, IGW_H264_MAIN), codec_index(v, 116));
    CHECK_INT(igw_sdp_pick_h264(v, IGW_H264_HIGH), -1);
    CHECK_INT(igw_sdp_pick_h264(a, IGW_H264_UNKNOWN), -1);
    CHECK_INT(igw_sdp_rtx_for(v, 108), 109);
    CHECK_INT(igw_sdp_rtx_for(v, 96), 97);
    CHECK_INT(igw_sdp_rtx_for(v, 35), 36);
    CHECK_INT(igw_sdp_rtx_for(v, 118), 119);
    CHECK_INT(igw_sdp_rtx_for(v, 120), -1);
    CHECK_INT(igw_sdp_rtx_for(a, 111), -1);
    CHECK_INT(igw_sdp_pick_opus(a), codec_index(a, 111));
    CHECK_INT(igw_sdp_pick_opus(v), -1);
    CHECK_INT(igw_sdp_find_codec(v, "vp9", 90000, 0), codec_index(v, 98));
    CHECK_INT(igw_sdp_find_codec(a, "TELEPHONE-EVENT", 8000, 0), codec_index(a, 126));
    CHECK_INT(igw_sdp_find_codec(a, "opus", 48000, 1), -1);
    CHECK_INT(igw_sdp_find_codec(a, "opus", 44100, 0), -1);
    CHECK_INT(igw_sdp_find_codec(a, "PCMA", 8000, 0), codec_index(a, 8));

    CHECK_INT(igw_sdp_check_webrtc(S, err, sizeof err), 0);
    check_roundtrip(S, "chrome recvonly");

    /* The same text with LF line ends parses to the same bytes. */
    char *lf = xcalloc(t.n + 1);
    size_t k = 0;
    for (size_t i = 0; i < t.n; i++)
        if (t.p[i] != '\r')
            lf[k++] = t.p[i];
    CHECK(k < t.n);
    CHECK_INT(parse(lf, k, T, err, sizeof err), 0);
    CHECK(memcmp(S, T, sizeof *S) == 0);
    /* ...and so does a final line without its line end. */
    CHECK_INT(parse(lf, k - 1, T, err, sizeof err), 0);
    CHECK(memcmp(S, T, sizeof *S) == 0);
    free(lf);
    free(t.p);
}

static void test_chrome_sendrecv(void)
{
    text t = load("chrome156_sendrecv_offer.sdp");
    if (!t.p)
        return;
    char err[128];
    CHECK_INT(parse(t.p, t.n, S, err, sizeof err), 0);
    CHECK(S->sess_id == 8269741673801366390ull);
    CHECK_STR(S->ice_ufrag, "Fv6w");
    const igw_sdp_media *a = &S->media[0], *v = &S->media[1];
    CHECK_INT(a->dir, IGW_SDP_SENDRECV);
    CHECK_INT(v->dir, IGW_SDP_SENDRECV);
    CHECK_INT(a->nssrc, 1);
    CHECK(a->ssrc[0] == 229262304u);
    CHECK_STR(a->cname, "t3U3hVXubsXBO8CS");
    CHECK_STR(a->msid, "f30a768d-1bac-4f28-9307-aa98f014a65d f55ab5e8-9791-4cf5-875e-446d7a0b2e54");
    CHECK_INT(v->nssrc, 2);
    CHECK(v->ssrc[0] == 3158800434u && v->ssrc[1] == 2857742282u);
    CHECK_STR(v->cname, "t3U3hVXubsXBO8CS");
    CHECK_STR(v->msid, "f30a768d-1bac-4f28-9307-aa98f014a65d 81d16d5d-ba9e-46d4-be46-8ac89b2f50c1");
    CHECK_INT(v->ncodecs, 23);
    CHECK_INT(igw_sdp_pick_h264(v, IGW_H264_UNKNOWN), codec_index(v, 108));
    CHECK_INT(igw_sdp_rtx_for(v, 108), 109);
    CHECK_INT(igw_sdp_check_webrtc(S, err, sizeof err), 0);
    check_roundtrip(S, "chrome sendrecv");
    /* Two ssrcs and an rtx codec: the writer groups them for Chrome. */
    size_t n = igw_sdp_write(S, WBUF, WCAP);
    CHECK(n > 0 && strstr(WBUF, "a=ssrc-group:FID 3158800434 2857742282\r\n") != NULL);
    free(t.p);
}

static void test_chrome_answer_and_datachannel(void)
{
    char err[128];
    text t = load("chrome156_answer.sdp");
    if (t.p) {
        CHECK_INT(parse(t.p, t.n, S, err, sizeof err), 0);
        CHECK_INT(S->setup, IGW_SDP_SETUP_ACTIVE);
        CHECK_STR(S->ice_ufrag, "D2f/");
        CHECK_STR(S->ice_pwd, "enp3Jqp8s1ozfK0oGx/+HLdD");
        CHECK_INT(S->nbundle, 3);
        CHECK_INT(S->nmedia, 3);
        CHECK_INT(S->media[0].dir, IGW_SDP_RECVONLY);
        const igw_sdp_media *d = &S->media[2];
        CHECK_INT(d->kind, IGW_SDP_APPLICATION);
        CHECK_STR(d->proto, "UDP/DTLS/SCTP");
        CHECK_STR(d->mid, "2");
        CHECK_INT(d->ncodecs, 0);
        CHECK(!d->rtcp_mux);
        /* SCTP has no RTCP: rtcp-mux is only asked of RTP sections. */
        CHECK_INT(igw_sdp_check_webrtc(S, err, sizeof err), 0);
        free(t.p);
    }
    t = load("chrome156_datachannel_offer.sdp");
    if (!t.p)
        return;
    CHECK_INT(parse(t.p, t.n, S, err, sizeof err), 0);
    CHECK_INT(S->nmedia, 3);
    CHECK_INT(S->media[0].dir, IGW_SDP_SENDONLY);
    CHECK_STR(S->media[0].msid, "- 698bf9df-c044-45f1-a31c-905c481c3390");
    CHECK_INT(S->media[2].kind, IGW_SDP_APPLICATION);
    CHECK_INT(igw_sdp_check_webrtc(S, err, sizeof err), 0);
    /* A live datachannel is not ours to write; rejected, it is. */
    CHECK_INT(igw_sdp_write(S, WBUF, WCAP), 0);
    S->media[2].port = 0;
    S->nbundle = 2;
    check_roundtrip(S, "chrome datachannel rejected");
    size_t n = igw_sdp_write(S, WBUF, WCAP);
    static const char want[] = "m=application 0 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\n"
                               "a=mid:2\r\na=ice-ufrag:vrzP\r\na=ice-pwd:DXsAk+0nINe3hsYvUEhSc9cP\r\n"
                               "a=fingerprint:sha-256 EC:F6:";
    const char *rej = n ? strstr(WBUF, "m=application") : NULL;
    CHECK(rej != NULL && strncmp(rej, want, sizeof want - 1) == 0);
    free(t.p);
}

/* ---- webrtcbin and Firefox ------------------------------------------------------------- */

static void test_webrtcbin(void)
{
    text t = load("webrtcbin122_sendonly_offer.sdp");
    if (!t.p)
        return;
    char err[128];
    CHECK_INT(parse(t.p, t.n, S, err, sizeof err), 0);
    CHECK(S->sess_id == 3487359623431375421ull);
    CHECK(S->sess_version == 0);
    CHECK_INT(S->nbundle, 2);
    CHECK_STR(S->bundle_mids[0], "video0");
    CHECK_STR(S->bundle_mids[1], "audio1");
    CHECK_STR(S->ice_ufrag, "fbjF59rkdI/1ckmLLzDWFZikGclJWgXI");
    CHECK_STR(S->ice_pwd, "Bu7L66sBY16gsr6vyPKSYn3vSX94XrYQ");
    CHECK_STR(fp_hex(S), "80:AE:EF:D0:5C:0D:A8:C1:FC:26:6B:51:CA:E0:81:7A:B1:69:E0:14:CB:75:EF:C8:"
                         "D3:AE:0E:E4:A2:66:D5:6B");
    CHECK_INT(S->setup, IGW_SDP_SETUP_ACTPASS);
    const igw_sdp_media *v = &S->media[0], *a = &S->media[1];
    CHECK_INT(v->kind, IGW_SDP_VIDEO);
    CHECK_STR(v->mid, "video0");
    CHECK_INT(v->dir, IGW_SDP_SENDONLY);
    CHECK_INT(v->ncodecs, 1);
    CHECK_INT(v->codecs[0].pt, 96);
    CHECK_STR(v->codecs[0].name, "H264");
    CHECK_STR(v->codecs[0].fmtp, "packetization-mode=1;sprop-parameter-sets=Z0LAFdkBQfsBagwMDUoAAAMAAgAAAwB5"
                                 "HixckA==,aMuMsg==;profile-level-id=42c015;level-asymmetry-allowed=1");
    CHECK_STR(fb(&v->codecs[0]), "-pf-t");
    CHECK_INT(igw_sdp_h264_profile(v->codecs[0].fmtp), IGW_H264_CONSTRAINED_BASELINE);
    CHECK_INT(igw_sdp_pick_h264(v, IGW_H264_UNKNOWN), 0);
    CHECK_INT(v->nssrc, 1);
    CHECK(v->ssrc[0] == 3058790840u);
    CHECK_STR(v->cname, "user118688597@host-7ce741cb");
    /* No a=msid: the a=ssrc msid: value stands in. */
    CHECK_STR(v->msid, "user118688597@host-7ce741cb webrtctransceiver0");
    CHECK_INT(v->ncands, 9);
    CHECK_STR(v->cands[0], "candidate:1 1 UDP 2015363327 192.0.2.2 38946 typ host");
    CHECK_STR(v->cands[8], "candidate:9 1 TCP 1010828031 fe80::fc:ff:fe00:1 59407 typ host tcptype passive");
    CHECK(!v->end_of_candidates);
    /* m=audio 0 + a=bundle-only inside the BUNDLE group: live, not rejected. */
    CHECK_INT(a->port, 9);
    CHECK_STR(a->mid, "audio1");
    CHECK_INT(a->ncands, 0);
    CHECK_STR(a->codecs[0].name, "OPUS");
    CHECK_INT(igw_sdp_pick_opus(a), 0);
    CHECK_STR(a->msid, "user118688597@host-7ce741cb webrtctransceiver1");
    CHECK_INT(igw_sdp_check_webrtc(S, err, sizeof err), 0);
    check_roundtrip(S, "webrtcbin");

    /* Outside the group, bundle-only means nothing: the section stays rejected. */
    char *s = xcalloc(t.n + 1);
    memcpy(s, t.p, t.n);
    char *g = strstr(s, "a=group:BUNDLE video0 audio1");
    CHECK(g != NULL);
    if (g) {
        memset(g + strlen("a=group:BUNDLE video0"), ' ', strlen(" audio1")); /* trailing blanks are trimmed */
        CHECK_INT(parse(s, t.n, T, err, sizeof err), 0);
        CHECK_INT(T->nbundle, 1);
        CHECK_INT(T->media[1].port, 0);
        CHECK_INT(igw_sdp_check_webrtc(T, err, sizeof err), 0);
    }
    free(s);
    free(t.p);
}

static void test_firefox(void)
{
    text t = load("firefox_style_offer.sdp");
    if (!t.p)
        return;
    char err[128];
    CHECK_INT(parse(t.p, t.n, S, err, sizeof err), 0);
    CHECK(S->sess_id == 5107829417305036573ull);
    /* The only fingerprint is at session level. */
    CHECK_STR(S->fp_alg, "sha-256");
    CHECK_STR(fp_hex(S), "0B:30:55:7A:9F:C4:E9:0E:33:58:7D:A2:C7:EC:11:36:5B:80:A5:CA:EF:14:39:5E:"
                         "83:A8:CD:F2:17:3C:61:86");
    CHECK_STR(S->ice_ufrag, "7f3a9c21");
    CHECK_STR(S->ice_pwd, "e3b2f6c1a2d94c6b8f1e07a9d35c4b21");
    const igw_sdp_media *a = &S->media[0], *v = &S->media[1];
    /* a=sendrecv at session level, a=recvonly in each section. */
    CHECK_INT(a->dir, IGW_SDP_RECVONLY);
    CHECK_INT(v->dir, IGW_SDP_RECVONLY);
    CHECK(!a->rtcp_rsize && v->rtcp_rsize);
    CHECK_STR(codec_pt(a, 9)->name, "G722");
    CHECK_INT(codec_pt(a, 9)->channels, 1);
    CHECK_STR(codec_pt(a, 101)->fmtp, "0-15");
    CHECK_STR(codec_pt(a, 109)->fmtp, "maxplaybackrate=48000;stereo=1;useinbandfec=1");
    CHECK_INT(igw_sdp_pick_opus(a), 0);
    CHECK_STR(a->cname, "{6b3d9f0e-2c71-4a85-b1d4-93e0f5a7c268}");
    CHECK_STR(a->msid, "");
    CHECK_INT(a->ncands, 3);
    CHECK_STR(a->cands[0], "candidate:0 1 UDP 2122252543 5d1c8a2e-7f43-4b9a-a0c6-1e2f3d4c5b6a.local 51234 typ host");
    CHECK_STR(a->cands[2], "candidate:1 1 UDP 1686052863 198.51.100.7 51234 typ srflx raddr 0.0.0.0 rport 0");
    CHECK(a->end_of_candidates);
    CHECK(!v->end_of_candidates);
    CHECK_INT(v->ncands, 0);
    /* fmtp lines came before their rtpmap. */
    CHECK_STR(codec_pt(v, 126)->name, "H264");
    CHECK_STR(codec_pt(v, 126)->fmtp, "profile-level-id=42e01f;level-asymmetry-allowed=1;packetization-mode=1");
    CHECK_STR(fb(codec_pt(v, 126)), "npfrt");
    CHECK_STR(fb(codec_pt(v, 122)), "-----");
    CHECK_INT(igw_sdp_pick_h264(v, IGW_H264_UNKNOWN), codec_index(v, 126));
    CHECK_INT(igw_sdp_h264_mode1(codec_pt(v, 97)->fmtp), 0);
    CHECK_INT(igw_sdp_rtx_for(v, 126), 127);
    CHECK_INT(igw_sdp_rtx_for(v, 122), 119);
    CHECK_INT(v->nssrc, 2);
    CHECK(v->ssrc[0] == 2218573410u && v->ssrc[1] == 3980256914u);
    CHECK_INT(igw_sdp_check_webrtc(S, err, sizeof err), 0);
    check_roundtrip(S, "firefox");
    free(t.p);
}

/* ---- synthetic descriptions ---------------------------------------------------------------- */

#define HDR "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
#define FPHEX                                                                        \
    "AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:" \
    "44:55:66:77:88:99"
#define PWD "abcdefghijklmnopqrstuv" /* 22 characters */
/* A minimal description that meets every WebRTC rule; 14 lines. */
#define MIN                                                                          \
    HDR "a=group:BUNDLE 0\r\n"                                                       \
        "m=audio 9 UDP/TLS/RTP/SAVPF 111 96\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n"      \
        "a=ice-ufrag:abcd\r\na=ice-pwd:" PWD "\r\n"                                  \
        "a=fingerprint:sha-256 " FPHEX "\r\na=setup:actpass\r\na=rtcp-mux\r\n"       \
        "a=rtpmap:111 opus/48000/2\r\n"

static void test_minimal_and_defaults(void)
{
    char err[128];
    CHECK_INT(parse_str(MIN, S), 0);
    CHECK_INT(igw_sdp_check_webrtc(S, err, sizeof err), 0);
    CHECK_INT(S->media[0].dir, IGW_SDP_SENDRECV); /* the default */
    CHECK_STR(S->media[0].codecs[1].name, "");   /* 96 without rtpmap: kept, nameless */
    CHECK_INT(S->media[0].codecs[1].clock, 0);

    /* Session-level values reach every section that has none of its own. */
    const char *sess = HDR "a=ice-ufrag:sessU\r\na=ice-pwd:" PWD "\r\na=setup:active\r\n"
                           "a=sendonly\r\na=end-of-candidates\r\na=fingerprint:sha-256 " FPHEX "\r\n"
                           "a=group:BUNDLE a v\r\n"
                           "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:a\r\na=rtcp-mux\r\n"
                           "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:v\r\na=recvonly\r\na=rtcp-mux\r\n"
                           "a=rtpmap:96 VP8/90000\r\n";
    CHECK_INT(parse_str(sess, S), 0);
    CHECK_STR(S->ice_ufrag, "sessU");
    CHECK_INT(S->setup, IGW_SDP_SETUP_ACTIVE);
    CHECK_INT(S->media[0].dir, IGW_SDP_SENDONLY);
    CHECK_INT(S->media[1].dir, IGW_SDP_RECVONLY);
    CHECK(S->media[0].end_of_candidates && S->media[1].end_of_candidates);
    CHECK_INT(igw_sdp_check_webrtc(S, err, sizeof err), 0);

    /* The effective values come from the first BUNDLE member when it has its
     * own: here the second section in text order. */
    const char *own = HDR "a=ice-ufrag:sessU\r\na=ice-pwd:" PWD "\r\na=setup:actpass\r\n"
                          "a=group:BUNDLE v a\r\n"
                          "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:a\r\na=ice-ufrag:audU\r\n"
                          "a=setup:passive\r\na=rtcp-mux\r\n"
                          "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:v\r\na=ice-ufrag:vidU\r\na=rtcp-mux\r\n"
                          "a=fingerprint:sha-1 " "00:11:22:33:44:55:66:77:88:99:00:11:22:33:44:55:66:77:88:99\r\n";
    CHECK_INT(parse_str(own, S), 0);
    CHECK_STR(S->ice_ufrag, "vidU");
    CHECK_STR(S->ice_pwd, PWD);               /* v has none: the session's */
    CHECK_INT(S->setup, IGW_SDP_SETUP_ACTPASS); /* v has none: the session's, not a's */
    CHECK_STR(S->fp_alg, "sha-1");
    CHECK_INT(S->fp_len, 20);
    CHECK_INT(igw_sdp_check_webrtc(S, err, sizeof err), -1);
    CHECK_STR(err, "no sha-256 fingerprint");

    /* Without BUNDLE, the first section decides. */
    const char *nob = HDR "a=ice-ufrag:sessU\r\n"
                          "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:a\r\na=ice-ufrag:audU\r\n"
                          "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:v\r\na=ice-ufrag:vidU\r\n";
    CHECK_INT(parse_str(nob, S), 0);
    CHECK_STR(S->ice_ufrag, "audU");
    CHECK(!S->bundle);

    /* Static payload types: 0 and 8 get their names, 9 does not; an explicit
     * rtpmap for 0 overrides the default without being a duplicate. */
    const char *st = HDR "m=audio 9 RTP/AVP 0 8 9\r\na=rtpmap:0 pcmu/8000/1\r\n";
    CHECK_INT(parse_str(st, S), 0);
    CHECK_STR(S->media[0].codecs[0].name, "pcmu");
    CHECK_INT(S->media[0].codecs[0].channels, 1);
    CHECK_STR(S->media[0].codecs[1].name, "PCMA");
    CHECK_INT(S->media[0].codecs[1].clock, 8000);
    CHECK_STR(S->media[0].codecs[2].name, "");
    CHECK_INT(S->media[0].codecs[2].clock, 0);
    CHECK_INT(igw_sdp_find_codec(&S->media[0], "pcma", 8000, 0), 1);

    /* Kinds, ports with a count, blank lines, tabs at line ends. */
    const char *k = HDR "\r\nm=text 5004/2 RTP/AVP 98 \t\r\n\r\nm=application 0 UDP/DTLS/SCTP webrtc-datachannel\r\n";
    CHECK_INT(parse_str(k, S), 0);
    CHECK_INT(S->nmedia, 2);
    CHECK_INT(S->media[0].kind, IGW_SDP_OTHER);
    CHECK_INT(S->media[0].port, 5004);
    CHECK_INT(S->media[0].ncodecs, 1);
    CHECK_INT(S->media[1].kind, IGW_SDP_APPLICATION);
    CHECK_INT(S->media[1].ncodecs, 0);
    CHECK_INT(igw_sdp_write(S, WBUF, WCAP), 0); /* "text" is not a kind we can name */

    /* Session id and version span the whole uint64 range. */
    CHECK_INT(parse_str("v=0\r\no=- 18446744073709551615 0 IN IP4 0.0.0.0\r\n", S), 0);
    CHECK(S->sess_id == UINT64_MAX && S->sess_version == 0);
}

static void test_attributes(void)
{
    /* rtcp-fb: "*" applies to every codec of the section, wherever it stands;
     * feedback types we do not track set nothing. */
    const char *w = HDR "m=video 9 UDP/TLS/RTP/SAVPF 96 97 98\r\n"
                        "a=rtcp-fb:* nack\r\na=rtcp-fb:* transport-cc\r\n"
                        "a=rtpmap:96 VP8/90000\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n"
                        "a=rtcp-fb:96 nack pli\r\na=rtcp-fb:96 ccm fir\r\na=rtcp-fb:98 goog-remb\r\n"
                        "a=rtcp-fb:98 ccm tmmbr\r\na=rtcp-fb:98 nack sli\r\n"
                        "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n";
    CHECK_INT(parse_str(w, S), 0);
    CHECK_STR(fb(&S->media[0].codecs[0]), "npf-t");
    CHECK_STR(fb(&S->media[0].codecs[1]), "n---t");
    CHECK_STR(fb(&S->media[0].codecs[2]), "n--rt");
    CHECK_STR(fb(&S->media[1].codecs[0]), "-----"); /* the wildcard stays in its section */

    /* ssrc: distinct ids in order; the cname of the first ssrc whatever the
     * line order; a=msid beats the ssrc msid fallback even when it comes later. */
    const char *s = HDR "m=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
                        "a=ssrc:7 msid:fallback track\r\na=ssrc:9 cname:second\r\n"
                        "a=ssrc:7 cname:first\r\na=ssrc:9 msid:other t\r\na=ssrc:7 cname:again\r\n"
                        "a=ssrc:7 mslabel:x\r\na=ssrc:4294967295 label:y\r\n"
                        "a=msid:stream track\r\na=msid:ignored second\r\n";
    CHECK_INT(parse_str(s, S), 0);
    const igw_sdp_media *m = &S->media[0];
    CHECK_INT(m->nssrc, 3);
    CHECK(m->ssrc[0] == 7 && m->ssrc[1] == 9 && m->ssrc[2] == UINT32_MAX);
    CHECK_STR(m->cname, "first");
    CHECK_STR(m->msid, "stream track");
    const char *f = HDR "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=ssrc:7 msid:fallback track\r\n"
                        "a=ssrc:9 msid:other t\r\n";
    CHECK_INT(parse_str(f, S), 0);
    CHECK_STR(S->media[0].msid, "fallback track");
    CHECK_STR(S->media[0].cname, "");

    /* Fingerprints: lower-case hex, upper-case algorithm names, sha-256
     * preferred over others in the same scope in either order. */
    const char *sha1 = "00:11:22:33:44:55:66:77:88:99:00:11:22:33:44:55:66:77:88:99";
    char buf[1024];
    snprintf(buf, sizeof buf, HDR "a=fingerprint:SHA-256 %s\r\n",
             "aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99");
    CHECK_INT(parse_str(buf, S), 0);
    CHECK_STR(S->fp_alg, "sha-256");
    CHECK_STR(fp_hex(S), FPHEX);
    snprintf(buf, sizeof buf, HDR "a=fingerprint:sha-1 %s\r\na=fingerprint:sha-256 %s\r\n", sha1, FPHEX);
    CHECK_INT(parse_str(buf, S), 0);
    CHECK_STR(S->fp_alg, "sha-256");
    CHECK_INT(S->fp_len, 32);
    snprintf(buf, sizeof buf, HDR "a=fingerprint:sha-256 %s\r\na=fingerprint:sha-1 %s\r\n", FPHEX, sha1);
    CHECK_INT(parse_str(buf, S), 0);
    CHECK_STR(S->fp_alg, "sha-256");
    snprintf(buf, sizeof buf, HDR "a=fingerprint:sha-512 %s:%s\r\n", FPHEX, FPHEX);
    CHECK_INT(parse_str(buf, S), 0);
    CHECK_STR(S->fp_alg, "sha-512");
    CHECK_INT(S->fp_len, 64);
    CHECK(S->fp[0] == 0xAA && S->fp[63] == 0x99);

    /* Skipped attributes and lines of other kinds leave no trace. */
    const char *skip = HDR "i=info\r\nb=AS:30\r\nk=clear:x\r\na=ice-options:trickle renomination\r\n"
                           "a=extmap-allow-mixed\r\na=msid-semantic: WMS *\r\na=x-unknown\r\n"
                           "m=video 9 UDP/TLS/RTP/SAVPF 96\r\nb=TIAS:100\r\n"
                           "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid\r\na=rid:h send\r\n"
                           "a=simulcast:send h;l\r\na=ssrc-group:FID 1 2\r\na=rtcp:9 IN IP4 0.0.0.0\r\n"
                           "a=sctp-port:5000\r\na=rtcp-mux-only\r\n";
    CHECK_INT(parse_str(skip, S), 0);
    CHECK_INT(S->media[0].nssrc, 0);
    CHECK_INT(S->media[0].ncodecs, 1);
    CHECK(!S->media[0].rtcp_mux);
}

/* ---- parse errors ------------------------------------------------------------------------------ */

/* No 41-byte run of the input appears in err. */
static bool echoes(const char *err, const char *in, size_t inlen)
{
    size_t n = strlen(err);
    for (size_t i = 0; i + 41 <= n; i++)
        for (size_t j = 0; j + 41 <= inlen; j++)
            if (memcmp(err + i, in + j, 41) == 0)
                return true;
    return false;
}

static void expect_err_n(const char *in, size_t len, const char *want, int line)
{
    char err[128];
    memset(err, 'x', sizeof err);
    memset(S, 0x5a, sizeof *S);
    int rc = parse(in, len, S, err, sizeof err);
    if (!check(rc == -1 && strcmp(err, want) == 0, __FILE__, line, "parse refuses",
               "rc=%d err \"%s\", want \"%s\"", rc, rc ? err : "", want))
        return;
    bool clean = strlen(err) < 64;
    for (const char *p = err; *p; p++)
        clean = clean && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f;
    CHECK(clean);
    CHECK(!echoes(err, in, len));
    CHECK(all_zero(S, sizeof *S)); /* nothing half-parsed is left behind */
}

#define EXPECT_ERR(in, want) expect_err_n((in), strlen(in), (want), __LINE__)

/* MIN plus one more line: the error names line 15. */
#define EXPECT_LINE15(extra, what) EXPECT_ERR(MIN extra "\r\n", "line 15: " what)

static char *repeat(char c, size_t n)
{
    char *s = xcalloc(n + 1);
    memset(s, c, n);
    return s;
}

/* ---- parse errors: every class refused with its reason, nothing half-parsed left ---- */

/* the version line: missing, misplaced, unsupported, duplicate; o= missing or duplicate */
static void test_parse_errors_version(void)
{
    EXPECT_ERR("", "missing v=");
    EXPECT_ERR("\r\n\r\n", "missing v=");
    EXPECT_ERR("o=- 1 1 IN IP4 0.0.0.0\r\nv=0\r\n", "line 1: missing v=");
    EXPECT_ERR("hello\r\n", "line 1: missing v=");
    EXPECT_ERR("v=1\r\no=- 1 1 IN IP4 0.0.0.0\r\n", "line 1: unsupported v= version");
    EXPECT_ERR(HDR "v=0\r\n", "line 5: duplicate v= line");
    EXPECT_ERR("v=0\r\ns=-\r\n", "missing o= line");
    EXPECT_ERR(HDR "o=- 1 1 IN IP4 127.0.0.1\r\n", "line 5: duplicate o= line");
}

/* truncated lines of every kind: their "bad ..." reason */
static void test_parse_errors_truncated(void)
{
    EXPECT_ERR("v=0\r\no=- 1 2 IN IP4\r\n", "line 2: bad o= line");
    EXPECT_ERR("v=0\r\no=- 1 IN IP4 0.0.0.0\r\n", "line 2: bad o= line");
    EXPECT_ERR("v=0\r\no=- 18446744073709551616 1 IN IP4 0.0.0.0\r\n", "line 2: bad o= line");
    EXPECT_ERR("v=0\r\no=- -1 1 IN IP4 0.0.0.0\r\n", "line 2: bad o= line");
    EXPECT_ERR(HDR "t=0\r\n", "line 5: bad t= line");
    EXPECT_ERR(HDR "c=IN IP4\r\n", "line 5: bad c= line");
    EXPECT_ERR(HDR "m=audio 9\r\n", "line 5: bad m= line");
    EXPECT_ERR(HDR "m=audio 9 UDP/TLS/RTP/SAVPF\r\n", "line 5: bad m= line");
    EXPECT_LINE15("a=rtpmap:96 VP8", "bad rtpmap");
    EXPECT_LINE15("a=rtpmap:96 VP8/", "bad rtpmap");
    EXPECT_LINE15("a=rtpmap:96", "bad rtpmap");
    EXPECT_LINE15("a=rtpmap:96 VP8/90000/", "bad rtpmap");
    EXPECT_LINE15("a=rtpmap:96 VP8/0", "bad rtpmap");
    EXPECT_LINE15("a=rtpmap:96 VP8/90000/0", "bad rtpmap");
    EXPECT_LINE15("a=rtpmap:96 VP8/90000/256", "bad rtpmap");
    EXPECT_LINE15("a=rtpmap:96 VP8/90000 extra", "bad rtpmap");
    EXPECT_LINE15("a=rtpmap:x VP8/90000", "bad rtpmap");
    EXPECT_LINE15("a=fmtp:x a=1", "bad fmtp");
    EXPECT_ERR(MIN "a=fingerprint:sha-256 9F:56:1\r\n", "line 15: bad fingerprint");
    EXPECT_ERR(MIN "a=ice-pwd:\r\n", "line 15: duplicate ice-pwd");
    EXPECT_ERR(HDR "a=ice-pwd:\r\n", "line 5: bad ice-pwd");
    EXPECT_ERR(HDR "a=ice-ufrag\r\n", "line 5: bad ice-ufrag");
    EXPECT_LINE15("a=ssrc:1", "bad ssrc");
    EXPECT_LINE15("a=ssrc:1 cname:", "bad ssrc cname");
    EXPECT_LINE15("a=ssrc:1 msid:", "bad ssrc msid");
    EXPECT_LINE15("a=msid:", "bad msid");
    EXPECT_LINE15("a=rtcp-fb:96", "bad rtcp-fb");
    EXPECT_LINE15("a=candidate:1 1 UDP 2015363327 192.0.2.2 38946 host", "bad candidate");
    EXPECT_LINE15("a=candidate:1 1 UDP 2015363327 192.0.2.2 38946", "bad candidate");
    EXPECT_LINE15("a=candidate:1 1 UDP 2015363327 192.0.2.2 65536 typ host", "bad candidate");
    EXPECT_LINE15("a=candidate:1 0 UDP 2015363327 192.0.2.2 1 typ host", "bad candidate");
}

/* malformed lines and attributes; lines out of place */
static void test_parse_errors_malformed(void)
{
    EXPECT_ERR(HDR "x\r\n", "line 5: malformed line");
    EXPECT_ERR(HDR "A=b\r\n", "line 5: malformed line");
    EXPECT_ERR(HDR "a =b\r\n", "line 5: malformed line");
    EXPECT_ERR(HDR "a=\r\n", "line 5: bad attribute");
    EXPECT_ERR(HDR "a=:x\r\n", "line 5: bad attribute");
    EXPECT_ERR(MIN "t=0 0\r\n", "line 15: t= line inside media section");
    EXPECT_ERR(MIN "o=- 1 1 IN IP4 127.0.0.1\r\n", "line 15: duplicate o= line");
}

/* bad fingerprints, each broken differently */
static void test_parse_errors_fingerprint(void)
{
    EXPECT_ERR(HDR "a=fingerprint:sha-256 9G:" FPHEX "\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-256 " FPHEX ":\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-256 :" FPHEX "\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-256 AABB:CC\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-256 AA::BB\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-256 A:BB\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-256 AA-BB\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-256 AA:BB\r\n", "line 5: bad fingerprint"); /* 2 of 32 bytes */
    EXPECT_ERR(HDR "a=fingerprint:sha-256\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-256 " FPHEX " x\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-256-with-a-long-name AA\r\n", "line 5: bad fingerprint");
    EXPECT_ERR(HDR "a=fingerprint:sha-512 " FPHEX ":" FPHEX ":00\r\n", "line 5: bad fingerprint");
}

/* too many entries for an array: an error, never a silent truncation; the cap itself parses */
static void test_parse_errors_too_many(void)
{
    char buf[8192];
    size_t n = (size_t)snprintf(buf, sizeof buf, "%s", HDR);
    for (int i = 0; i < IGW_SDP_MAX_MEDIA + 1; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "m=audio 9 RTP/AVP 0\r\n");
    EXPECT_ERR(buf, "line 13: too many media sections");
    n = (size_t)snprintf(buf, sizeof buf, "%sm=video 9 RTP/AVP", HDR);
    for (int i = 0; i <= IGW_SDP_MAX_CODECS; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, " %d", i);
    snprintf(buf + n, sizeof buf - n, "\r\n");
    EXPECT_ERR(buf, "line 5: too many payload types");
    /* exactly IGW_SDP_MAX_CODECS is fine */
    n = (size_t)snprintf(buf, sizeof buf, "%sm=video 9 RTP/AVP", HDR);
    for (int i = 0; i < IGW_SDP_MAX_CODECS; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, " %d", i);
    snprintf(buf + n, sizeof buf - n, "\r\n");
    CHECK_INT(parse_str(buf, S), 0);
    CHECK_INT(S->media[0].ncodecs, IGW_SDP_MAX_CODECS);
    n = (size_t)snprintf(buf, sizeof buf, "%s", MIN);
    for (int i = 0; i <= IGW_SDP_MAX_SSRC; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "a=ssrc:%d cname:c\r\n", i + 1);
    EXPECT_ERR(buf, "line 19: too many ssrcs");
    n = (size_t)snprintf(buf, sizeof buf, "%s", MIN);
    for (int i = 0; i <= IGW_SDP_MAX_CANDS; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "a=candidate:%d 1 udp 2130706431 192.0.2.1 %d typ host\r\n", i, 4000 + i);
    {
        char want[64]; /* MIN has 14 lines; the cap + 1st candidate is the offending one */
        snprintf(want, sizeof want, "line %d: too many candidates", 15 + IGW_SDP_MAX_CANDS);
        EXPECT_ERR(buf, want);
    }
    n = (size_t)snprintf(buf, sizeof buf, "%sa=group:BUNDLE", HDR);
    for (int i = 0; i <= IGW_SDP_MAX_MEDIA; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, " m%d", i);
    snprintf(buf + n, sizeof buf - n, "\r\n");
    EXPECT_ERR(buf, "line 5: too many BUNDLE mids");
}

/* overlong values: an error naming the value; the longest allowed parses */
static void test_parse_errors_overlong(void)
{
    char buf[8192];
    char *z = repeat('Z', 600);
    snprintf(buf, sizeof buf, HDR "a=ice-ufrag:%.257s\r\n", z);
    EXPECT_ERR(buf, "line 5: ice-ufrag too long");
    snprintf(buf, sizeof buf, HDR "a=ice-ufrag:%.256s\r\n", z);
    CHECK_INT(parse_str(buf, S), 0);
    CHECK_INT(strlen(S->ice_ufrag), 256);
    snprintf(buf, sizeof buf, HDR "a=ice-pwd:%.257s\r\n", z);
    EXPECT_ERR(buf, "line 5: ice-pwd too long");
    snprintf(buf, sizeof buf, MIN "a=mid:%.33s\r\n", z);
    EXPECT_ERR(buf, "line 15: duplicate mid");
    snprintf(buf, sizeof buf, HDR "m=audio 9 RTP/AVP 0\r\na=mid:%.33s\r\n", z);
    EXPECT_ERR(buf, "line 6: mid too long");
    snprintf(buf, sizeof buf, HDR "m=audio 9 RTP/AVP 0\r\na=mid:%.32s\r\n", z);
    CHECK_INT(parse_str(buf, S), 0);
    snprintf(buf, sizeof buf, HDR "a=group:BUNDLE %.33s\r\n", z);
    EXPECT_ERR(buf, "line 5: BUNDLE mid too long");
    snprintf(buf, sizeof buf, MIN "a=fmtp:111 %.512s\r\n", z);
    EXPECT_ERR(buf, "line 15: fmtp too long");
    snprintf(buf, sizeof buf, MIN "a=fmtp:111 %.511s\r\n", z);
    CHECK_INT(parse_str(buf, S), 0);
    CHECK_INT(strlen(S->media[0].codecs[0].fmtp), 511);
    snprintf(buf, sizeof buf, MIN "a=rtpmap:96 %.32s/90000\r\n", z);
    EXPECT_ERR(buf, "line 15: rtpmap name too long");
    snprintf(buf, sizeof buf, MIN "a=ssrc:1 cname:%.65s\r\n", z);
    EXPECT_ERR(buf, "line 15: ssrc cname too long");
    snprintf(buf, sizeof buf, MIN "a=msid:%.130s\r\n", z);
    EXPECT_ERR(buf, "line 15: msid too long");
    snprintf(buf, sizeof buf, MIN "a=ssrc:1 msid:%.130s\r\n", z);
    EXPECT_ERR(buf, "line 15: ssrc msid too long");
    snprintf(buf, sizeof buf, MIN "a=candidate:1 1 udp 1 192.0.2.1 1 typ host %.220s\r\n", z);
    EXPECT_ERR(buf, "line 15: candidate too long");
    snprintf(buf, sizeof buf, HDR "m=audio 9 %.32s 0\r\n", z);
    EXPECT_ERR(buf, "line 5: m= proto too long");
    free(z);
}

/* bad ports and payload types; attributes for unknown or duplicate ones */
static void test_parse_errors_payload_types_and_ports(void)
{
    EXPECT_ERR(HDR "m=audio x RTP/AVP 0\r\n", "line 5: bad m= port");
    EXPECT_ERR(HDR "m=audio 65536 RTP/AVP 0\r\n", "line 5: bad m= port");
    EXPECT_ERR(HDR "m=audio -9 RTP/AVP 0\r\n", "line 5: bad m= port");
    EXPECT_ERR(HDR "m=audio 9/x RTP/AVP 0\r\n", "line 5: bad m= port");
    EXPECT_ERR(HDR "m=audio 9 RTP/AVP 128\r\n", "line 5: bad payload type");
    EXPECT_ERR(HDR "m=audio 9 RTP/AVP opus\r\n", "line 5: bad payload type");
    EXPECT_ERR(HDR "m=audio 9 RTP/AVP 0 8 0\r\n", "line 5: duplicate payload type");
    EXPECT_LINE15("a=rtpmap:97 VP8/90000", "rtpmap for unknown payload type");
    EXPECT_LINE15("a=rtpmap:111 opus/48000/2", "duplicate rtpmap");
    EXPECT_LINE15("a=fmtp:97 apt=96", "fmtp for unknown payload type");
    EXPECT_LINE15("a=rtcp-fb:97 nack", "rtcp-fb for unknown payload type");
    EXPECT_ERR(MIN "a=fmtp:111 a=1\r\na=fmtp:111 b=2\r\n", "line 16: duplicate fmtp");
}

/* attributes in conflict: duplicates, bad values, BUNDLE naming no section */
static void test_parse_errors_conflicts(void)
{
    EXPECT_LINE15("a=setup:holdconn", "duplicate setup");
    EXPECT_ERR(HDR "a=setup:holdconn\r\n", "line 5: bad setup");
    EXPECT_ERR(HDR "a=sendonly\r\na=recvonly\r\n", "line 6: duplicate direction");
    EXPECT_LINE15("a=mid:1", "duplicate mid");
    EXPECT_LINE15("a=ice-ufrag:efgh", "duplicate ice-ufrag");
    EXPECT_LINE15("a=ice-ufrag:ef gh", "duplicate ice-ufrag");
    EXPECT_ERR(HDR "a=ice-ufrag:ef gh\r\n", "line 5: bad ice-ufrag");
    EXPECT_ERR(MIN "m=video 9 RTP/AVP 96\r\na=mid:0\r\n", "line 16: duplicate mid");
    EXPECT_ERR(MIN "m=video 9 RTP/AVP 96\r\na=mid:b/c\r\n", "line 16: bad mid");
    EXPECT_ERR(HDR "a=group:BUNDLE a a\r\n", "line 5: duplicate BUNDLE mid");
    EXPECT_ERR(HDR "a=group:BUNDLE a\r\na=group:BUNDLE b\r\n", "line 6: duplicate BUNDLE group");
    EXPECT_ERR(HDR "a=group:BUNDLE 0 1\r\nm=audio 9 RTP/AVP 0\r\na=mid:0\r\n",
               "BUNDLE names a mid with no section");
}

/* control bytes, NUL included, anywhere */
static void test_parse_errors_control_bytes(void)
{
    static const char nul[] = HDR "a=ice-ufrag:ab\0cd\r\n";
    expect_err_n(nul, sizeof nul - 1, "line 5: control character", __LINE__);
    EXPECT_ERR(HDR "a=ice-ufrag:ab\rcd\r\n", "line 5: control character");
    EXPECT_ERR(HDR "s=\x1b[31m\r\n", "line 5: control character");
    EXPECT_ERR(HDR "s=\x7f\r\n", "line 5: control character");
    EXPECT_ERR(MIN "a=fmtp:111 a=1\x01\r\n", "line 15: control character");
}

/* the size limit: 65536 bytes parse, 65537 do not */
static void test_parse_errors_size_limit(void)
{
    char *big = xcalloc(IGW_SDP_MAX_TEXT + 2);
    size_t base = strlen(MIN);
    memcpy(big, MIN, base);
    size_t pos = base;
    while (pos < IGW_SDP_MAX_TEXT) {
        /* padding lines "a=x-pad:AAAA\r\n", the last one sized to fit exactly */
        size_t room = IGW_SDP_MAX_TEXT - pos, line = room > 1000 ? 1000 : room;
        if (room - line < 12 && room > 1000)
            line = room - 12;
        if (line < 12) {
            memset(big + pos, '\n', room); /* blank lines make up the rest */
            pos += room;
            break;
        }
        memcpy(big + pos, "a=x-pad:", 8);
        memset(big + pos + 8, 'A', line - 10);
        memcpy(big + pos + line - 2, "\r\n", 2);
        pos += line;
    }
    CHECK_INT(pos, IGW_SDP_MAX_TEXT);
    char err[128];
    CHECK_INT(parse(big, IGW_SDP_MAX_TEXT, S, err, sizeof err), 0);
    CHECK_INT(S->media[0].ncodecs, 2);
    big[IGW_SDP_MAX_TEXT] = '\n';
    expect_err_n(big, IGW_SDP_MAX_TEXT + 1, "description longer than 65536 bytes", __LINE__);
    free(big);
}

/* err handling: NULL, zero length, a short buffer truncates safely */
static void test_parse_errors_err_buffer(void)
{
    char err[128];
    CHECK_INT(parse(HDR "x\r\n", strlen(HDR "x\r\n"), S, NULL, 0), -1);
    char tiny[8];
    memset(tiny, 'q', sizeof tiny);
    CHECK_INT(parse(HDR "x\r\n", strlen(HDR "x\r\n"), S, tiny, sizeof tiny), -1);
    CHECK_STR(tiny, "line 5:");
    CHECK_INT(parse(NULL, 0, S, err, sizeof err), -1);
    CHECK_STR(err, "missing v=");
    CHECK_INT(parse(NULL, 5, S, err, sizeof err), -1);
    CHECK_INT(parse(MIN, strlen(MIN), NULL, err, sizeof err), -1);
}

/* ---- check_webrtc ------------------------------------------------------------------------------- */

static void expect_check(const igw_sdp *s, const char *want, int line)
{
    char err[128] = "unset";
    int rc = igw_sdp_check_webrtc(s, err, sizeof err);
    check(want ? rc == -1 && strcmp(err, want) == 0 : rc == 0, __FILE__, line, "check_webrtc",
          "rc=%d err \"%s\", want \"%s\"", rc, err, want ? want : "(ok)");
}

#define EXPECT_CHECK(want) expect_check(T, (want), __LINE__)

static void test_check_webrtc(void)
{
    text t = load("chrome156_recvonly_offer.sdp");
    if (!t.p)
        return;
    char err[128];
    CHECK_INT(parse(t.p, t.n, S, err, sizeof err), 0);
    free(t.p);
#define RESET() memcpy(T, S, sizeof *S)
    RESET();
    EXPECT_CHECK(NULL);

    RESET();
    T->bundle = false;
    EXPECT_CHECK("no BUNDLE group");
    RESET();
    T->nbundle = 1;
    EXPECT_CHECK("section 1 not in BUNDLE");
    T->media[1].port = 0; /* rejected: may stay out */
    EXPECT_CHECK(NULL);
    RESET();
    T->media[1].mid[0] = '\0';
    EXPECT_CHECK("section #1 not in BUNDLE");
    RESET();
    strcpy(T->media[0].mid, "a\x01");
    strcpy(T->bundle_mids[0], "a\x01");
    T->media[0].rtcp_mux = false;
    EXPECT_CHECK("no rtcp-mux in section a?"); /* never a control byte in a reason */
    RESET();
    T->media[1].rtcp_mux = false;
    EXPECT_CHECK("no rtcp-mux in section 1");
    T->media[1].port = 0;
    EXPECT_CHECK(NULL);
    RESET();
    strcpy(T->media[1].proto, "UDP/DTLS/SCTP");
    T->media[1].rtcp_mux = false;
    EXPECT_CHECK(NULL);

    RESET();
    T->ice_ufrag[0] = '\0';
    EXPECT_CHECK("missing ice-ufrag");
    strcpy(T->ice_ufrag, "abc");
    EXPECT_CHECK("ice-ufrag shorter than 4");
    memset(T->ice_ufrag, 'u', sizeof T->ice_ufrag); /* unterminated */
    EXPECT_CHECK("ice-ufrag too long");
    RESET();
    T->ice_pwd[0] = '\0';
    EXPECT_CHECK("missing ice-pwd");
    strcpy(T->ice_pwd, "abcdefghijklmnopqrstu");
    EXPECT_CHECK("ice-pwd shorter than 22");
    strcpy(T->ice_pwd, PWD);
    EXPECT_CHECK(NULL);

    RESET();
    strcpy(T->fp_alg, "sha-1");
    EXPECT_CHECK("no sha-256 fingerprint");
    RESET();
    T->fp_len = 20;
    EXPECT_CHECK("no sha-256 fingerprint");
    RESET();
    T->fp_len = 0;
    T->fp_alg[0] = '\0';
    EXPECT_CHECK("no sha-256 fingerprint");

    RESET();
    T->setup = IGW_SDP_SETUP_NONE;
    EXPECT_CHECK("no setup attribute");
    RESET();
    T->setup = IGW_SDP_SETUP_PASSIVE;
    EXPECT_CHECK(NULL);

    RESET();
    for (size_t i = 0; i < T->nmedia; i++) {
        T->media[i].kind = IGW_SDP_APPLICATION;
        strcpy(T->media[i].proto, "UDP/DTLS/SCTP");
    }
    EXPECT_CHECK("no audio or video section");
    RESET();
    T->media[0].port = 0;
    T->media[1].port = 0;
    EXPECT_CHECK("no audio or video section");
    RESET();
    T->nmedia = 0;
    EXPECT_CHECK("no audio or video section");

    /* The same reasons from text. */
    CHECK_INT(parse_str(HDR "m=audio 9 RTP/AVP 0\r\n", T), 0);
    EXPECT_CHECK("no BUNDLE group");
    CHECK_INT(parse_str(MIN, T), 0);
    EXPECT_CHECK(NULL);
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", MIN);
    char *mux = strstr(buf, "a=rtcp-mux\r\n");
    memcpy(mux, "a=x-nomuxx\r\n", 12); /* same length, not rtcp-mux */
    CHECK_INT(parse_str(buf, T), 0);
    EXPECT_CHECK("no rtcp-mux in section 0");
    CHECK_INT(parse_str(MIN "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:v\r\na=rtcp-mux\r\n", T), 0);
    EXPECT_CHECK("section v not in BUNDLE");
    CHECK_INT(parse_str(MIN "m=video 0 UDP/TLS/RTP/SAVPF 96\r\na=mid:v\r\n", T), 0);
    EXPECT_CHECK(NULL);

    CHECK_INT(igw_sdp_check_webrtc(NULL, err, sizeof err), -1);
    CHECK_INT(igw_sdp_check_webrtc(S, NULL, 0), 0);
#undef RESET
}

/* ---- the writer ---------------------------------------------------------------------------------- */

/* Our answer as the media core would build it. */
static void build_answer(igw_sdp *s)
{
    memset(s, 0, sizeof *s);
    s->sess_id = 4611686018427387904ull;
    s->sess_version = 3;
    s->bundle = true;
    s->ice_lite = true;
    strcpy(s->ice_ufrag, "igwU");
    strcpy(s->ice_pwd, "abcdefghijklmnopqrstuvwx");
    strcpy(s->fp_alg, "sha-256");
    s->fp_len = 32;
    for (int i = 0; i < 32; i++)
        s->fp[i] = (uint8_t)(i * 7 + 1);
    s->setup = IGW_SDP_SETUP_PASSIVE;
    s->nmedia = 4;
    s->nbundle = 2;
    strcpy(s->bundle_mids[0], "0");
    strcpy(s->bundle_mids[1], "1");

    igw_sdp_media *a = &s->media[0];
    a->kind = IGW_SDP_AUDIO;
    a->port = 9;
    strcpy(a->proto, "UDP/TLS/RTP/SAVPF");
    strcpy(a->mid, "0");
    a->dir = IGW_SDP_SENDONLY;
    a->rtcp_mux = a->rtcp_rsize = true;
    a->ncodecs = 1;
    a->codecs[0] = (igw_sdp_codec){.pt = 111, .name = "opus", .clock = 48000, .channels = 2,
                                   .fmtp = "minptime=10;useinbandfec=1", .fb_twcc = true};
    a->nssrc = 1;
    a->ssrc[0] = 1111;
    strcpy(a->cname, "igwcam");
    strcpy(a->msid, "cam0 audio0");
    a->ncands = 2;
    strcpy(a->cands[0], "candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host");
    strcpy(a->cands[1], "candidate:2 1 tcp 1518280447 127.0.0.1 40001 typ host tcptype passive");
    a->end_of_candidates = true;

    igw_sdp_media *v = &s->media[1];
    v->kind = IGW_SDP_VIDEO;
    v->port = 9;
    strcpy(v->proto, "UDP/TLS/RTP/SAVPF");
    strcpy(v->mid, "1");
    v->dir = IGW_SDP_SENDONLY;
    v->rtcp_mux = true;
    v->ncodecs = 2;
    v->codecs[0] = (igw_sdp_codec){.pt = 108, .name = "H264", .clock = 90000,
                                   .fmtp = "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
                                   .fb_nack = true, .fb_pli = true, .fb_fir = true, .fb_remb = true, .fb_twcc = true};
    v->codecs[1] = (igw_sdp_codec){.pt = 109, .name = "rtx", .clock = 90000, .fmtp = "apt=108"};
    v->nssrc = 2;
    v->ssrc[0] = 2222;
    v->ssrc[1] = 3333;
    strcpy(v->cname, "igwcam");
    strcpy(v->msid, "cam0 video0");
    v->ncands = 1;
    strcpy(v->cands[0], "candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host");

    igw_sdp_media *r = &s->media[2]; /* a rejected second video */
    r->kind = IGW_SDP_VIDEO;
    strcpy(r->proto, "UDP/TLS/RTP/SAVPF");
    strcpy(r->mid, "2");
    r->ncodecs = 2;
    r->codecs[0].pt = 96;
    r->codecs[1].pt = 97;
    igw_sdp_media *d = &s->media[3]; /* a rejected datachannel */
    d->kind = IGW_SDP_APPLICATION;
    strcpy(d->proto, "UDP/DTLS/SCTP");
    strcpy(d->mid, "3");
}

static void test_write(void)
{
    build_answer(S);
    size_t n = igw_sdp_write(S, WBUF, WCAP);
    CHECK(n > 0);
    static const char head[] = "v=0\r\no=- 4611686018427387904 3 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
                               "a=group:BUNDLE 0 1\r\na=ice-lite\r\na=msid-semantic: WMS *\r\n"
                               "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n"
                               "a=ice-ufrag:igwU\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
                               "a=fingerprint:sha-256 01:08:0F:16:1D:24:2B:32:39:40:47:4E:55:5C:63:"
                               "6A:71:78:7F:86:8D:94:9B:A2:A9:B0:B7:BE:C5:CC:D3:DA\r\n"
                               "a=setup:passive\r\na=sendonly\r\na=rtcp-mux\r\na=rtcp-rsize\r\n"
                               "a=rtpmap:111 opus/48000/2\r\na=fmtp:111 minptime=10;useinbandfec=1\r\n"
                               "a=rtcp-fb:111 transport-cc\r\na=msid:cam0 audio0\r\n"
                               "a=ssrc:1111 cname:igwcam\r\na=ssrc:1111 msid:cam0 audio0\r\n"
                               "a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n"
                               "a=candidate:2 1 tcp 1518280447 127.0.0.1 40001 typ host tcptype passive\r\n"
                               "a=end-of-candidates\r\nm=video 9 UDP/TLS/RTP/SAVPF 108 109\r\n";
    CHECK(n >= sizeof head - 1 && memcmp(WBUF, head, sizeof head - 1) == 0);
    CHECK(strstr(WBUF, "a=ice-options") == NULL); /* lite: no trickle */
    CHECK(strstr(WBUF, "a=rtcp-fb:108 goog-remb\r\na=rtcp-fb:108 transport-cc\r\na=rtcp-fb:108 ccm fir\r\n"
                       "a=rtcp-fb:108 nack\r\na=rtcp-fb:108 nack pli\r\na=rtpmap:109 rtx/90000\r\n"
                       "a=fmtp:109 apt=108\r\na=msid:cam0 video0\r\na=ssrc-group:FID 2222 3333\r\n"
                       "a=ssrc:2222 cname:igwcam\r\na=ssrc:2222 msid:cam0 video0\r\n"
                       "a=ssrc:3333 cname:igwcam\r\na=ssrc:3333 msid:cam0 video0\r\n") != NULL);
    CHECK(strstr(WBUF, "m=video 0 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:2\r\n"
                       "a=ice-ufrag:igwU\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=fingerprint:sha-256 ") != NULL);
    CHECK(strstr(WBUF, "a=setup:passive\r\nm=application 0 UDP/DTLS/SCTP webrtc-datachannel\r\n") != NULL);
    CHECK(n > 20 && strcmp(WBUF + n - 17, "a=setup:passive\r\n") == 0);
    check_roundtrip(S, "built answer");
    CHECK_INT(igw_sdp_check_webrtc(S, NULL, 0), 0);
    CHECK_INT(parse(WBUF, n, T, NULL, 0), 0);
    CHECK_INT(T->media[2].port, 0);
    CHECK_INT(T->media[2].ncodecs, 1);
    CHECK_INT(T->media[3].kind, IGW_SDP_APPLICATION);
    /* An empty proto is written as the WebRTC one. */
    S->media[1].proto[0] = '\0';
    n = igw_sdp_write(S, WBUF, WCAP);
    CHECK_INT(parse(WBUF, n, T, NULL, 0), 0);
    CHECK_STR(T->media[1].proto, "UDP/TLS/RTP/SAVPF");

    /* Full ICE: trickle advertised in live sections only. */
    S->ice_lite = false;
    S->setup = IGW_SDP_SETUP_ACTPASS;
    strcpy(S->media[1].proto, "UDP/TLS/RTP/SAVPF");
    n = igw_sdp_write(S, WBUF, WCAP);
    CHECK(n > 0 && strstr(WBUF, "a=ice-lite") == NULL && strstr(WBUF, "a=setup:actpass\r\n"));
    CHECK(strstr(WBUF, "a=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=ice-options:trickle\r\na=fingerprint") != NULL);
    const char *rej = strstr(WBUF, "m=video 0");
    CHECK(rej && strstr(rej, "a=ice-options") == NULL);
    check_roundtrip(S, "full ice offer");

    /* Exact caps: nothing fits below n + 1, and nothing is written past cap. */
    build_answer(S);
    n = igw_sdp_write(S, WBUF, WCAP);
    CHECK(n > 0);
    char *canary = xcalloc(n + 64);
    size_t bad = 0, overrun = 0;
    for (size_t cap = 0; cap <= n; cap++) {
        memset(canary, '#', n + 64);
        if (igw_sdp_write(S, canary, cap) != 0 || (cap > 0 && canary[0] != '\0'))
            bad++;
        for (size_t i = cap; i < n + 64; i++)
            if (canary[i] != '#')
                overrun++;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(overrun, 0);
    memset(canary, '#', n + 64);
    CHECK_INT(igw_sdp_write(S, canary, n + 1), n);
    CHECK(memcmp(canary, WBUF, n + 1) == 0 && canary[n + 1] == '#');
    free(canary);
    CHECK_INT(igw_sdp_write(S, NULL, 100), 0);
    CHECK_INT(igw_sdp_write(NULL, WBUF, WCAP), 0);

    /* What the parser would not read back is refused: each from a valid base. */
#define REFUSE(mutation)                                                                 \
    do {                                                                                 \
        build_answer(T);                                                                 \
        mutation;                                                                        \
        check(igw_sdp_write(T, WBUF, WCAP) == 0, __FILE__, __LINE__, "wrote despite " #mutation, NULL); \
    } while (0)
    build_answer(T);
    CHECK(igw_sdp_write(T, WBUF, WCAP) > 0);
    REFUSE(strcpy(T->ice_ufrag, "ab\r\na=x"));
    REFUSE(strcpy(T->ice_pwd, "has space inside it ok"));
    REFUSE(memset(T->media[0].mid, 'm', sizeof T->media[0].mid));
    REFUSE(strcpy(T->media[0].mid, "a b"));
    REFUSE(strcpy(T->bundle_mids[1], ""));
    REFUSE(T->media[0].kind = IGW_SDP_OTHER);
    REFUSE(T->media[0].kind = (igw_sdp_kind)7);
    REFUSE(T->media[0].dir = (igw_sdp_dir)9);
    REFUSE(T->setup = (igw_sdp_setup)9);
    REFUSE(T->media[0].ncodecs = 0);
    REFUSE(T->media[0].ncodecs = IGW_SDP_MAX_CODECS + 1);
    REFUSE(T->nmedia = IGW_SDP_MAX_MEDIA + 1);
    REFUSE(T->nmedia = 0);
    REFUSE(T->nbundle = IGW_SDP_MAX_MEDIA + 1);
    REFUSE(T->fp_len = IGW_SDP_MAX_FP + 1);
    REFUSE(T->media[1].codecs[1].pt = 108);
    REFUSE(T->media[1].codecs[1].pt = 128);
    REFUSE(strcpy(T->media[1].codecs[0].name, "H/264"));
    REFUSE(T->media[1].codecs[0].clock = 0);
    REFUSE(strcpy(T->media[1].codecs[0].fmtp, "apt=1 "));
    REFUSE(strcpy(T->media[1].codecs[0].fmtp, "a=1\nb=2"));
    REFUSE((T->media[0].cname[0] = '\0', T->media[0].msid[0] = '\0'));
    REFUSE(T->media[1].ssrc[1] = 2222);
    REFUSE(T->media[0].nssrc = IGW_SDP_MAX_SSRC + 1);
    REFUSE(strcpy(T->media[0].cands[0], "1 1 udp 2130706431 127.0.0.1 40000 typ host"));
    REFUSE(strcpy(T->media[0].cands[1], "candidate:2 1 tcp"));
    REFUSE(T->media[0].ncands = IGW_SDP_MAX_CANDS + 1);
    REFUSE(strcpy(T->media[0].msid, " lead"));
    REFUSE(strcpy(T->fp_alg, "sha 256"));
    REFUSE(strcpy(T->media[0].proto, "RTP AVP"));
    REFUSE(memset(T->media[1].codecs[0].fmtp, 'f', sizeof T->media[1].codecs[0].fmtp));
#undef REFUSE
    /* A rejected section needs nothing but its kind and mid. */
    build_answer(T);
    memset(&T->media[0].codecs, 0xff, sizeof T->media[0].codecs);
    T->media[0].ncodecs = 0;
    T->media[0].port = 0;
    T->nbundle = 1;
    strcpy(T->bundle_mids[0], "1");
    CHECK(igw_sdp_write(T, WBUF, WCAP) > 0);
    CHECK(strstr(WBUF, "m=audio 0 UDP/TLS/RTP/SAVPF 0\r\n") != NULL);
    check_roundtrip(T, "rejected audio");
}

/* ---- H264 profiles and picks ------------------------------------------------------------------------ */

static void test_h264(void)
{
    static const struct {
        const char *fmtp;
        igw_h264_profile want;
        bool mode1;
    } cases[] = {
        {"profile-level-id=42e01f", IGW_H264_CONSTRAINED_BASELINE, false},
        {"profile-level-id=42c01f;packetization-mode=1", IGW_H264_CONSTRAINED_BASELINE, true},
        {"profile-level-id=42401f", IGW_H264_CONSTRAINED_BASELINE, false},
        {"profile-level-id=42f00b", IGW_H264_CONSTRAINED_BASELINE, false},
        {"profile-level-id=42001f", IGW_H264_BASELINE, false},
        {"profile-level-id=42100b", IGW_H264_BASELINE, false},
        {"profile-level-id=42800a", IGW_H264_BASELINE, false},
        {"profile-level-id=4d001f", IGW_H264_MAIN, false},
        {"profile-level-id=4d4033", IGW_H264_MAIN, false},
        {"profile-level-id=4d801f", IGW_H264_CONSTRAINED_BASELINE, false}, /* as Chrome */
        {"profile-level-id=64001f", IGW_H264_HIGH, false},
        {"profile-level-id=640034", IGW_H264_HIGH, false},
        {"profile-level-id=640c1f", IGW_H264_CONSTRAINED_HIGH, false},
        {"profile-level-id=640C34;packetization-mode=1", IGW_H264_CONSTRAINED_HIGH, true},
        {"profile-level-id=58c01f", IGW_H264_CONSTRAINED_BASELINE, false},
        {"profile-level-id=58001f", IGW_H264_UNKNOWN, false}, /* extended */
        {"profile-level-id=f4001f", IGW_H264_UNKNOWN, false},
        {"profile-level-id=64081f", IGW_H264_UNKNOWN, false},
        {"profile-level-id=42e11f", IGW_H264_UNKNOWN, false}, /* reserved bits set */
        {"profile-level-id=42e0ff", IGW_H264_UNKNOWN, false}, /* no such level */
        {"profile-level-id=42e000", IGW_H264_UNKNOWN, false},
        {"profile-level-id=42e01", IGW_H264_UNKNOWN, false},
        {"profile-level-id=42e01f0", IGW_H264_UNKNOWN, false},
        {"profile-level-id=42e01g", IGW_H264_UNKNOWN, false},
        {"profile-level-id=0x42e0", IGW_H264_UNKNOWN, false},
        {"profile-level-id=", IGW_H264_UNKNOWN, false},
        {"profile-level-id", IGW_H264_BASELINE, false}, /* no '=': not that key */
        {"", IGW_H264_BASELINE, false},
        {"packetization-mode=1", IGW_H264_BASELINE, true},
        {" profile-level-id = 42E01F ; packetization-mode = 1 ", IGW_H264_CONSTRAINED_BASELINE, true},
        {"\tPROFILE-LEVEL-ID=42e01f;Packetization-Mode=1", IGW_H264_CONSTRAINED_BASELINE, true},
        {"x=1;;packetization-mode=1;", IGW_H264_BASELINE, true},
        {"packetization-mode=10", IGW_H264_BASELINE, false},
        {"packetization-mode=0", IGW_H264_BASELINE, false},
        {"packetization-mode= 1 ;profile-level-id=4d001f", IGW_H264_MAIN, true},
        {"level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
         IGW_H264_CONSTRAINED_BASELINE, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        igw_h264_profile p = igw_sdp_h264_profile(cases[i].fmtp);
        bool m1 = igw_sdp_h264_mode1(cases[i].fmtp);
        check(p == cases[i].want && m1 == cases[i].mode1, __FILE__, __LINE__, cases[i].fmtp,
              "profile %d mode1 %d, want %d %d", p, m1, cases[i].want, cases[i].mode1);
    }
    CHECK_INT(igw_sdp_h264_profile(NULL), IGW_H264_BASELINE);
    CHECK(!igw_sdp_h264_mode1(NULL));

    /* Picks over a crafted section: constrained baseline with mode 1 first,
     * else any mode-1 H264; 90 kHz only; names case-insensitive. */
    const char *sec = HDR "m=video 9 UDP/TLS/RTP/SAVPF 100 101 102 103 104 105 106\r\n"
                          "a=rtpmap:100 H264/90000\r\na=fmtp:100 profile-level-id=640c1f;packetization-mode=1\r\n"
                          "a=rtpmap:101 H264/90000\r\na=fmtp:101 profile-level-id=42e01f\r\n"
                          "a=rtpmap:102 H264/8000\r\na=fmtp:102 profile-level-id=42e01f;packetization-mode=1\r\n"
                          "a=rtpmap:103 h264/90000\r\na=fmtp:103 profile-level-id=42e01f;packetization-mode=1\r\n"
                          "a=rtpmap:104 rtx/90000\r\na=fmtp:104 apt=103\r\n"
                          "a=rtpmap:105 H264/90000\r\na=fmtp:105 profile-level-id=640034;packetization-mode=1\r\n"
                          "a=rtpmap:106 RTX/90000\r\na=fmtp:106 apt = 105\r\n";
    CHECK_INT(parse_str(sec, S), 0);
    const igw_sdp_media *m = &S->media[0];
    CHECK_INT(igw_sdp_pick_h264(m, IGW_H264_UNKNOWN), 3);
    CHECK_INT(igw_sdp_pick_h264(m, IGW_H264_CONSTRAINED_HIGH), 0);
    CHECK_INT(igw_sdp_pick_h264(m, IGW_H264_HIGH), 5);
    CHECK_INT(igw_sdp_pick_h264(m, IGW_H264_MAIN), -1);
    CHECK_INT(igw_sdp_rtx_for(m, 103), 104);
    CHECK_INT(igw_sdp_rtx_for(m, 105), 106);
    CHECK_INT(igw_sdp_rtx_for(m, 100), -1);
    S->media[0].codecs[3].fmtp[0] = '\0'; /* 103 loses mode 1: any mode-1 H264 */
    CHECK_INT(igw_sdp_pick_h264(m, IGW_H264_UNKNOWN), 0);
    CHECK_INT(igw_sdp_pick_h264(NULL, IGW_H264_UNKNOWN), -1);
    CHECK_INT(igw_sdp_pick_opus(NULL), -1);
    CHECK_INT(igw_sdp_rtx_for(NULL, 1), -1);
    CHECK_INT(igw_sdp_find_codec(m, NULL, 90000, 0), -1);
}

static void test_fp_format(void)
{
    static const uint8_t fp[] = {0x01, 0xab, 0xff};
    char out[16];
    igw_sdp_fp_format(fp, 3, out, sizeof out);
    CHECK_STR(out, "01:AB:FF");
    igw_sdp_fp_format(fp, 3, out, 9);
    CHECK_STR(out, "01:AB:FF");
    memset(out, '#', sizeof out);
    igw_sdp_fp_format(fp, 3, out, 8);
    CHECK_STR(out, "");
    CHECK(out[1] == '#');
    igw_sdp_fp_format(fp, 0, out, sizeof out);
    CHECK_STR(out, "");
    memset(out, '#', sizeof out);
    igw_sdp_fp_format(fp, 3, out, 0);
    CHECK(out[0] == '#');
    igw_sdp_fp_format(NULL, 3, out, sizeof out);
    CHECK_STR(out, "");
}

/* ---- every prefix and random damage of a real offer ----------------------------------------------- */

static uint32_t rng = 2463534242u;

static uint32_t xorshift(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* Whatever parses must be written (when writable) and read back the same. */
static void robust_one(const char *s, size_t n, size_t *ok, size_t *bad)
{
    char err[128];
    if (parse(s, n, T, err, sizeof err) != 0) {
        if (err[0] == '\0' || strlen(err) >= 64)
            (*bad)++;
        return;
    }
    (*ok)++;
    igw_sdp_check_webrtc(T, err, sizeof err);
    size_t w = igw_sdp_write(T, WBUF, WCAP);
    if (w && (parse(WBUF, w, U, err, sizeof err) != 0 || diff_sdp(T, U) != 0))
        (*bad)++;
}

static void test_robustness(void)
{
    text t = load("chrome156_sendrecv_offer.sdp");
    if (!t.p)
        return;
    size_t ok = 0, bad = 0;
    for (size_t cut = 0; cut <= t.n; cut++)
        robust_one(t.p, cut, &ok, &bad);
    CHECK_INT(bad, 0);
    CHECK(ok > t.n / 2); /* most prefixes are complete descriptions */
    char *m = xcalloc(t.n + 1);
    ok = bad = 0;
    for (int round = 0; round < 3000; round++) {
        memcpy(m, t.p, t.n);
        int edits = 1 + (int)(xorshift() % 4);
        for (int e = 0; e < edits; e++) {
            static const char alphabet[] = "0123456789 :/=*-\r\nafmsv;";
            size_t at = xorshift() % t.n;
            m[at] = (xorshift() & 1) ? alphabet[xorshift() % (sizeof alphabet - 1)] : (char)xorshift();
        }
        robust_one(m, t.n, &ok, &bad);
    }
    CHECK_INT(bad, 0);
    CHECK(ok > 0);
    free(m);
    free(t.p);
}

/* ---- talk: the audio-level extension and answer directions ------------------------------ */

static void test_talk(void)
{
    char err[128];
    /* Chromium offers the audio level on id 1; the other extensions are skipped. */
    text t = load("chrome156_sendrecv_offer.sdp");
    if (t.p) {
        CHECK_INT(parse(t.p, t.n, S, err, sizeof err), 0);
        CHECK_INT(S->media[0].audio_level_ext, 1);
        CHECK_INT(S->media[1].audio_level_ext, 0);
        free(t.p);
    }
    const char *ok = HDR "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n"
                         "a=extmap:999 http://example.com/any-id-of-another-extension\r\n"
                         "a=extmap:3/sendrecv urn:ietf:params:rtp-hdrext:ssrc-audio-level vad=on\r\n";
    CHECK_INT(parse_str(ok, S), 0);
    CHECK_INT(S->media[0].audio_level_ext, 3);
    const char *two = HDR "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n"
                          "a=extmap:200 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n";
    CHECK_INT(parse_str(two, S), 0);
    CHECK_INT(S->media[0].audio_level_ext, 200); /* two-byte header form */
    static const char *const bad[] = {"0", "15", "256", "x", "1/", "1/both", "-1"};
    int refused = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char b[512];
        snprintf(b, sizeof b, HDR "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=extmap:%s "
                                  "urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n", bad[i]);
        refused += parse(b, strlen(b), S, err, sizeof err) != 0 && strstr(err, "bad extmap") != NULL;
    }
    CHECK_INT(refused, 7);
    const char *dup = HDR "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"
                          "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n"
                          "a=extmap:2 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n";
    CHECK(parse(dup, strlen(dup), S, err, sizeof err) != 0 && strstr(err, "duplicate audio level") != NULL);

    /* Written back in the answer, read back the same; 15 is not writable. */
    build_answer(S);
    S->media[0].audio_level_ext = 5;
    size_t n = igw_sdp_write(S, WBUF, WCAP);
    CHECK(n > 0 && strstr(WBUF, "a=rtcp-rsize\r\na=extmap:5 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n"
                                "a=rtpmap:111 ") != NULL);
    check_roundtrip(S, "answer with the audio level");
    S->media[0].audio_level_ext = 15;
    CHECK_INT(igw_sdp_write(S, WBUF, WCAP), 0);
    S->media[0].audio_level_ext = 0;
    n = igw_sdp_write(S, WBUF, WCAP);
    CHECK(n > 0 && strstr(WBUF, "a=extmap") == NULL);

    /* Answer directions: each side only where the offer lets it. */
    static const struct {
        igw_sdp_dir offered;
        bool send, recv;
        igw_sdp_dir want;
    } dirs[] = {
        {IGW_SDP_SENDRECV, true, true, IGW_SDP_SENDRECV},   {IGW_SDP_SENDRECV, true, false, IGW_SDP_SENDONLY},
        {IGW_SDP_SENDRECV, false, true, IGW_SDP_RECVONLY},  {IGW_SDP_SENDRECV, false, false, IGW_SDP_INACTIVE},
        {IGW_SDP_SENDONLY, true, true, IGW_SDP_RECVONLY},   {IGW_SDP_SENDONLY, true, false, IGW_SDP_INACTIVE},
        {IGW_SDP_SENDONLY, false, true, IGW_SDP_RECVONLY},  {IGW_SDP_SENDONLY, false, false, IGW_SDP_INACTIVE},
        {IGW_SDP_RECVONLY, true, true, IGW_SDP_SENDONLY},   {IGW_SDP_RECVONLY, true, false, IGW_SDP_SENDONLY},
        {IGW_SDP_RECVONLY, false, true, IGW_SDP_INACTIVE},  {IGW_SDP_RECVONLY, false, false, IGW_SDP_INACTIVE},
        {IGW_SDP_INACTIVE, true, true, IGW_SDP_INACTIVE},   {IGW_SDP_INACTIVE, false, false, IGW_SDP_INACTIVE},
    };
    int wrong = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (igw_sdp_answer_dir(dirs[i].offered, dirs[i].send, dirs[i].recv) != dirs[i].want) {
            wrong++;
            printf("  (answer_dir case %zu)\n", i);
        }
    CHECK_INT(wrong, 0);
}

/* In this order (each case parses into the shared S, T, U and writes into WBUF, WBUF2). */
static const check_case cases[] = {
    CHECK_CASE(test_chrome_recvonly),
    CHECK_CASE(test_chrome_sendrecv),
    CHECK_CASE(test_chrome_answer_and_datachannel),
    CHECK_CASE(test_webrtcbin),
    CHECK_CASE(test_firefox),
    CHECK_CASE(test_minimal_and_defaults),
    CHECK_CASE(test_attributes),
    CHECK_CASE(test_parse_errors_version),
    CHECK_CASE(test_parse_errors_truncated),
    CHECK_CASE(test_parse_errors_malformed),
    CHECK_CASE(test_parse_errors_fingerprint),
    CHECK_CASE(test_parse_errors_too_many),
    CHECK_CASE(test_parse_errors_overlong),
    CHECK_CASE(test_parse_errors_payload_types_and_ports),
    CHECK_CASE(test_parse_errors_conflicts),
    CHECK_CASE(test_parse_errors_control_bytes),
    CHECK_CASE(test_parse_errors_size_limit),
    CHECK_CASE(test_parse_errors_err_buffer),
    CHECK_CASE(test_check_webrtc),
    CHECK_CASE(test_write),
    CHECK_CASE(test_h264),
    CHECK_CASE(test_fp_format),
    CHECK_CASE(test_robustness),
    CHECK_CASE(test_talk),
};

int main(void)
{
    S = xcalloc(sizeof *S);
    T = xcalloc(sizeof *T);
    U = xcalloc(sizeof *U);
    WBUF = xcalloc(WCAP);
    WBUF2 = xcalloc(WCAP);
    CHECK_RUN_ALL(cases);
    free(S);
    free(T);
    free(U);
    free(WBUF);
    free(WBUF2);
    return check_summary("sdp_test");
}
