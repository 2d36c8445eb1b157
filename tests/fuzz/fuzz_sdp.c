/* fuzz_sdp.c - libFuzzer harness of the WebRTC SDP module (src/media/sdp.c).
 *
 *   clang -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 \
 *         -fsanitize=fuzzer,address,undefined -Isrc/media \
 *         tests/fuzz/fuzz_sdp.c src/media/sdp.c -o fuzz_sdp
 *   ./fuzz_sdp -max_total_time=60 corpus/   (seed it from tests/media/sdp_corpus)
 *
 * With -DIGW_FUZZ_STANDALONE it builds without libFuzzer and replays the
 * files named on the command line.
 *
 * The input is the description text, verbatim. Invariants, each an abort()
 * when broken:
 * - a failed parse leaves a short, printable reason whose text after
 *   "line N: " is at most 40 bytes, and a zeroed structure;
 * - check_webrtc answers 0, or -1 with a printable reason;
 * - the picks return -1 or an index of the section (rtx_for: a listed pt);
 * - whatever the writer accepts is NUL-terminated, fits only with its NUL,
 *   parses back to the same fields and writes again to the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sdp.h"

#define WCAP (1u << 20) /* far above what IGW_SDP_MAX_* allow to be written */

static igw_sdp a, b, zero; /* zero: a byte loop over 320 KB would dominate */
static char w1[WCAP], w2[WCAP];

/* A short printable reason. For parse errors the text after "line N: " is at
 * most 40 bytes, so it cannot echo more of the input than that. (Searching the
 * input for it instead would teach libFuzzer our own reason texts.) */
static void require_reason(const char *err, bool parse_err)
{
    size_t len = strlen(err);
    REQUIRE(len > 0 && len < 64);
    for (size_t i = 0; i < len; i++)
        REQUIRE((unsigned char)err[i] >= 0x20 && (unsigned char)err[i] < 0x7f);
    if (!parse_err)
        return;
    const char *reason = err;
    if (strncmp(err, "line ", 5) == 0) {
        reason = strstr(err, ": ");
        REQUIRE(reason != NULL);
        reason += 2;
    }
    REQUIRE(strlen(reason) <= 40);
}

/* The fields the writer emits; rejected sections keep kind, port, proto, mid. */
static bool same(const igw_sdp *x, const igw_sdp *y)
{
    if (x->sess_id != y->sess_id || x->sess_version != y->sess_version || x->bundle != y->bundle ||
        x->nbundle != y->nbundle || x->ice_lite != y->ice_lite || x->setup != y->setup ||
        strcmp(x->ice_ufrag, y->ice_ufrag) || strcmp(x->ice_pwd, y->ice_pwd) ||
        strcmp(x->fp_alg, y->fp_alg) || x->fp_len != y->fp_len ||
        memcmp(x->fp, y->fp, x->fp_len) || x->nmedia != y->nmedia)
        return false;
    for (size_t i = 0; i < x->nbundle; i++)
        if (strcmp(x->bundle_mids[i], y->bundle_mids[i]))
            return false;
    for (size_t i = 0; i < x->nmedia; i++) {
        const igw_sdp_media *p = &x->media[i], *q = &y->media[i];
        if (p->kind != q->kind || p->port != q->port || strcmp(p->proto, q->proto) ||
            strcmp(p->mid, q->mid))
            return false;
        if (p->port == 0)
            continue;
        if (p->dir != q->dir || p->rtcp_mux != q->rtcp_mux || p->rtcp_rsize != q->rtcp_rsize ||
            p->ncodecs != q->ncodecs || p->nssrc != q->nssrc ||
            memcmp(p->ssrc, q->ssrc, p->nssrc * sizeof p->ssrc[0]) || strcmp(p->cname, q->cname) ||
            strcmp(p->msid, q->msid) || p->ncands != q->ncands ||
            p->end_of_candidates != q->end_of_candidates)
            return false;
        for (size_t j = 0; j < p->ncodecs; j++) {
            const igw_sdp_codec *c = &p->codecs[j], *d = &q->codecs[j];
            if (c->pt != d->pt || strcmp(c->name, d->name) || c->clock != d->clock ||
                c->channels != d->channels || strcmp(c->fmtp, d->fmtp) || c->fb_nack != d->fb_nack ||
                c->fb_pli != d->fb_pli || c->fb_fir != d->fb_fir || c->fb_remb != d->fb_remb ||
                c->fb_twcc != d->fb_twcc)
                return false;
        }
        for (size_t j = 0; j < p->ncands; j++)
            if (strcmp(p->cands[j], q->cands[j]))
                return false;
    }
    return true;
}

static void check_picks(const igw_sdp_media *m)
{
    int n = (int)m->ncodecs;
    for (int want = IGW_H264_UNKNOWN; want <= IGW_H264_HIGH; want++) {
        int i = igw_sdp_pick_h264(m, (igw_h264_profile)want);
        REQUIRE(i >= -1 && i < n);
        if (i >= 0) {
            REQUIRE(igw_sdp_h264_mode1(m->codecs[i].fmtp));
            REQUIRE(want == IGW_H264_UNKNOWN || (int)igw_sdp_h264_profile(m->codecs[i].fmtp) == want);
        }
    }
    int o = igw_sdp_pick_opus(m);
    REQUIRE(o >= -1 && o < n);
    for (int i = 0; i < n; i++) {
        int r = igw_sdp_rtx_for(m, m->codecs[i].pt);
        bool listed = r < 0;
        for (int j = 0; j < n && !listed; j++)
            listed = m->codecs[j].pt == r;
        REQUIRE(r >= -1 && r <= 127 && listed);
        REQUIRE(igw_sdp_find_codec(m, m->codecs[i].name, m->codecs[i].clock, 0) <= i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[128];
    memset(err, 'x', sizeof err);
    if (igw_sdp_parse((const char *)data, size, &a, err, sizeof err) != 0) {
        require_reason(err, true);
        REQUIRE(memcmp(&a, &zero, sizeof a) == 0);
        return 0;
    }
    if (igw_sdp_check_webrtc(&a, err, sizeof err) != 0)
        require_reason(err, false);
    for (size_t i = 0; i < a.nmedia; i++)
        check_picks(&a.media[i]);
    char hex[3 * IGW_SDP_MAX_FP];
    igw_sdp_fp_format(a.fp, a.fp_len, hex, sizeof hex);
    REQUIRE(strlen(hex) == (a.fp_len ? 3 * a.fp_len - 1 : 0));

    size_t n = igw_sdp_write(&a, w1, WCAP);
    if (n == 0)
        return 0; /* an OTHER kind, a live datachannel, ssrcs without cname or msid */
    REQUIRE(n < WCAP && strlen(w1) == n);
    REQUIRE(igw_sdp_parse(w1, n, &b, err, sizeof err) == 0);
    REQUIRE(same(&a, &b));
    REQUIRE(igw_sdp_write(&b, w2, WCAP) == n && memcmp(w1, w2, n) == 0);
    REQUIRE(igw_sdp_write(&a, w2, n) == 0 && w2[0] == '\0');
    return 0;
}

#ifdef IGW_FUZZ_STANDALONE
int main(int argc, char **argv)
{
    static uint8_t buf[IGW_SDP_MAX_TEXT + 4096];
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 2;
        }
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_sdp: %d inputs replayed\n", argc - 1);
    return 0;
}
#endif
