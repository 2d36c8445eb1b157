/* sdp.c - WebRTC session descriptions: a bounded line parser and a writer.
 *
 * The parser reads the text once, line by line, into the fixed arrays of
 * igw_sdp. Every value it keeps is checked against the same predicates the
 * writer applies before printing, so what one produces the other reads back
 * unchanged. Nothing of the input is ever echoed into an error message. */
#include "sdp.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- spans and character classes ------------------------------------------- */

/* A view into the input: nothing is copied until a value is kept. */
typedef struct span {
    const char *p;
    size_t n;
} span;

/* strnlen without needing POSIX: the length of s, at most cap. */
static size_t bounded_len(const char *s, size_t cap)
{
    const char *z = memchr(s, '\0', cap);
    return z ? (size_t)(z - s) : cap;
}

static span span_of(const char *s)
{
    return (span){s, strlen(s)};
}

/* A char-array field as a span, never reading past the field. */
#define FIELD(f) ((span){(f), bounded_len((f), sizeof(f))})

static bool span_eq(span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static bool span_ieq(span s, const char *lit)
{
    size_t n = strlen(lit);
    if (s.n != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)s.p[i]) != lower((unsigned char)lit[i]))
            return false;
    return true;
}

static bool span_has(span s, const char *lit)
{
    size_t n = strlen(lit);
    for (size_t i = 0; i + n <= s.n; i++)
        if (memcmp(s.p + i, lit, n) == 0)
            return true;
    return false;
}

static bool is_ws(int c)
{
    return c == ' ' || c == '\t';
}

static span trim(span s)
{
    while (s.n && is_ws((unsigned char)s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n && is_ws((unsigned char)s.p[s.n - 1]))
        s.n--;
    return s;
}

/* The next space-separated token of *rest (empty at the end); runs of
 * spaces are tolerated. */
static span next_tok(span *rest)
{
    while (rest->n && rest->p[0] == ' ') {
        rest->p++;
        rest->n--;
    }
    size_t i = 0;
    while (i < rest->n && rest->p[i] != ' ')
        i++;
    span t = {rest->p, i};
    rest->p += i;
    rest->n -= i;
    return t;
}

/* Everything after the leading spaces of *rest. */
static span rest_of(span rest)
{
    while (rest.n && rest.p[0] == ' ') {
        rest.p++;
        rest.n--;
    }
    return rest;
}

/* Splits s at the first `c`: *head gets what precedes it, the result what
 * follows; false when there is no `c` (then *head = s). */
static bool split_at(span s, char c, span *head, span *tail)
{
    const char *q = s.n ? memchr(s.p, c, s.n) : NULL;
    if (!q) {
        *head = s;
        *tail = (span){s.p + s.n, 0};
        return false;
    }
    *head = (span){s.p, (size_t)(q - s.p)};
    *tail = (span){q + 1, s.n - (size_t)(q - s.p) - 1};
    return true;
}

/* Decimal digits only (no sign, no space), at most `max`. */
static bool parse_uint(span s, uint64_t max, uint64_t *out)
{
    if (s.n == 0 || s.n > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < s.n; i++) {
        unsigned d = (unsigned char)s.p[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = lower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* RFC 4566 token characters: what mids, encoding names and the like use. */
static bool is_token_char(int c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`{|}~", c) != NULL;
}

static bool is_token(span s)
{
    if (s.n == 0)
        return false;
    for (size_t i = 0; i < s.n; i++)
        if (!is_token_char((unsigned char)s.p[i]))
            return false;
    return true;
}

/* Visible ASCII, no space: ICE credentials, protos. */
static bool is_visible(span s)
{
    if (s.n == 0)
        return false;
    for (size_t i = 0; i < s.n; i++)
        if ((unsigned char)s.p[i] <= 0x20 || (unsigned char)s.p[i] >= 0x7f)
            return false;
    return true;
}

/* Printable ASCII with inner spaces (and tabs when allowed), no whitespace at
 * either end (the parser trims lines, so the writer may not emit any). */
static bool is_text(span s, bool tabs)
{
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (!((c >= 0x20 && c < 0x7f) || (tabs && c == '\t')))
            return false;
    }
    return s.n == 0 || (!is_ws((unsigned char)s.p[0]) && !is_ws((unsigned char)s.p[s.n - 1]));
}

/* A candidate value after "candidate:": foundation component transport
 * priority address port "typ" type [extensions]. Checked enough that libnice
 * gets something shaped like a candidate; libnice does the rest. */
static bool is_candidate(span v)
{
    if (!is_text(v, false))
        return false;
    span t[8];
    for (size_t i = 0; i < 8; i++) {
        t[i] = next_tok(&v);
        if (t[i].n == 0)
            return false;
    }
    uint64_t num;
    return t[0].n <= 32 && is_visible(t[0]) && parse_uint(t[1], 256, &num) && num >= 1 &&
           is_token(t[2]) && parse_uint(t[3], UINT32_MAX, &num) && is_visible(t[4]) &&
           parse_uint(t[5], 65535, &num) && span_eq(t[6], "typ") && is_token(t[7]);
}

/* Copies a checked span into a field known to be larger. */
static void keep(char *dst, span s)
{
    memcpy(dst, s.p, s.n);
    dst[s.n] = '\0';
}

#if defined(__GNUC__)
#define PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF(f, a)
#endif

PRINTF(3, 4) static void errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (n < 0)
        err[0] = '\0';
}

/* ---- fingerprints ------------------------------------------------------------ */

/* Digest sizes of the hash names RFC 8122 registers; 0 = any length. */
static size_t fp_size(const char *alg)
{
    static const struct {
        const char *name;
        size_t len;
    } algs[] = {{"sha-1", 20},   {"sha-224", 28}, {"sha-256", 32}, {"sha-384", 48},
                {"sha-512", 64}, {"md5", 16},     {"md2", 16}};
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++)
        if (strcmp(alg, algs[i].name) == 0)
            return algs[i].len;
    return 0;
}

/* "AB:CD:..." strictly: pairs of hex digits joined by single colons. */
static bool parse_fp_hex(span s, uint8_t *out, size_t *len)
{
    size_t n = 0;
    if (s.n < 2 || (s.n + 1) % 3 != 0)
        return false;
    for (size_t i = 0; i < s.n; i += 3) {
        int hi = hexval((unsigned char)s.p[i]), lo = hexval((unsigned char)s.p[i + 1]);
        if (hi < 0 || lo < 0 || (i + 2 < s.n && s.p[i + 2] != ':') || n == IGW_SDP_MAX_FP)
            return false;
        out[n++] = (uint8_t)(hi << 4 | lo);
    }
    *len = n;
    return true;
}

void igw_sdp_fp_format(const uint8_t *fp, size_t len, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    if (!out || cap == 0)
        return;
    out[0] = '\0';
    if (len == 0 || !fp || len > SIZE_MAX / 3 || cap < 3 * len)
        return;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (i)
            out[o++] = ':';
        out[o++] = hex[fp[i] >> 4];
        out[o++] = hex[fp[i] & 15];
    }
    out[o] = '\0';
}

/* ---- the parser -------------------------------------------------------------- */

/* The transport attributes of one scope: the session, or one section. The
 * sections' own are kept here because igw_sdp only holds the effective ones. */
typedef struct scope {
    char ufrag[257], pwd[257];
    char fp_alg[16];
    uint8_t fp[IGW_SDP_MAX_FP];
    size_t fp_len;
    igw_sdp_setup setup;
    bool has_dir, eoc, bundle_only;
    igw_sdp_dir dir;
} scope;

typedef struct parser {
    igw_sdp *out;
    char *err;
    size_t errlen;
    unsigned line;
    bool seen_o;
    scope sess;
    scope med[IGW_SDP_MAX_MEDIA];
    igw_sdp_media *m; /* the current section, NULL at session level */
    scope *ms;
    uint8_t pt_idx[128]; /* payload type -> codec index + 1; 0 = not in m= */
    bool has_rtpmap[IGW_SDP_MAX_CODECS], has_fmtp[IGW_SDP_MAX_CODECS];
    bool msid_attr; /* a=msid seen: it wins over a=ssrc:<id> msid: */
} parser;

static int fail(parser *ps, const char *what)
{
    errf(ps->err, ps->errlen, "line %u: %s", ps->line, what);
    return -1;
}

static int on_o(parser *ps, span v)
{
    if (ps->seen_o || ps->m)
        return fail(ps, ps->seen_o ? "duplicate o= line" : "o= line inside media section");
    span user = next_tok(&v), id = next_tok(&v), ver = next_tok(&v);
    span net = next_tok(&v), addrtype = next_tok(&v), addr = next_tok(&v);
    if (!user.n || !net.n || !addrtype.n || !addr.n || next_tok(&v).n ||
        !parse_uint(id, UINT64_MAX, &ps->out->sess_id) ||
        !parse_uint(ver, UINT64_MAX, &ps->out->sess_version))
        return fail(ps, "bad o= line");
    ps->seen_o = true;
    return 0;
}

static int on_c(parser *ps, span v)
{
    span net = next_tok(&v), addrtype = next_tok(&v), addr = next_tok(&v);
    if (!net.n || !addrtype.n || !addr.n || next_tok(&v).n)
        return fail(ps, "bad c= line");
    return 0;
}

static int on_t(parser *ps, span v)
{
    uint64_t a, b;
    if (!parse_uint(next_tok(&v), UINT64_MAX, &a) || !parse_uint(next_tok(&v), UINT64_MAX, &b) ||
        next_tok(&v).n)
        return fail(ps, "bad t= line");
    return 0;
}

/* Closes the current section: session-level defaults fill what it left out. */
static void end_section(parser *ps)
{
    if (!ps->m)
        return;
    ps->m->dir = ps->ms->has_dir ? ps->ms->dir : ps->sess.has_dir ? ps->sess.dir : IGW_SDP_SENDRECV;
    ps->m->end_of_candidates = ps->ms->eoc || ps->sess.eoc;
}

static int on_m(parser *ps, span v)
{
    igw_sdp *out = ps->out;
    if (out->nmedia == IGW_SDP_MAX_MEDIA)
        return fail(ps, "too many media sections");
    end_section(ps);
    ps->ms = &ps->med[out->nmedia];
    ps->m = &out->media[out->nmedia++];
    memset(ps->pt_idx, 0, sizeof ps->pt_idx);
    memset(ps->has_rtpmap, 0, sizeof ps->has_rtpmap);
    memset(ps->has_fmtp, 0, sizeof ps->has_fmtp);
    ps->msid_attr = false;
    igw_sdp_media *m = ps->m;

    span kind = next_tok(&v), port = next_tok(&v), proto = next_tok(&v);
    if (!is_token(kind) || !port.n || !proto.n)
        return fail(ps, "bad m= line");
    m->kind = span_eq(kind, "audio")         ? IGW_SDP_AUDIO
              : span_eq(kind, "video")       ? IGW_SDP_VIDEO
              : span_eq(kind, "application") ? IGW_SDP_APPLICATION
                                             : IGW_SDP_OTHER;
    span pnum, pcount;
    uint64_t n, count;
    bool has_count = split_at(port, '/', &pnum, &pcount);
    if (!parse_uint(pnum, 65535, &n) || (has_count && !parse_uint(pcount, 65535, &count)))
        return fail(ps, "bad m= port");
    m->port = (uint16_t)n;
    if (!is_visible(proto))
        return fail(ps, "bad m= proto");
    if (proto.n >= sizeof m->proto)
        return fail(ps, "m= proto too long");
    keep(m->proto, proto);

    bool rtp = span_has(proto, "RTP/");
    size_t nfmt = 0;
    for (span f = next_tok(&v); f.n; f = next_tok(&v), nfmt++) {
        if (!rtp)
            continue; /* "webrtc-datachannel" and the like: nothing to keep */
        uint64_t pt;
        if (!parse_uint(f, 127, &pt))
            return fail(ps, "bad payload type");
        if (ps->pt_idx[pt])
            return fail(ps, "duplicate payload type");
        if (m->ncodecs == IGW_SDP_MAX_CODECS)
            return fail(ps, "too many payload types");
        igw_sdp_codec *c = &m->codecs[m->ncodecs++];
        c->pt = (uint8_t)pt;
        ps->pt_idx[pt] = (uint8_t)m->ncodecs;
        /* The two static types WebRTC peers list without an rtpmap. */
        if (pt == 0 || pt == 8) {
            snprintf(c->name, sizeof c->name, "%s", pt == 0 ? "PCMU" : "PCMA");
            c->clock = 8000;
        }
    }
    if (nfmt == 0)
        return fail(ps, "bad m= line");
    return 0;
}

/* The codec a payload-type field names, or NULL. */
static igw_sdp_codec *codec_of(parser *ps, span f, size_t *idx)
{
    uint64_t pt;
    if (!ps->m || !parse_uint(f, 127, &pt) || !ps->pt_idx[pt])
        return NULL;
    *idx = ps->pt_idx[pt] - 1u;
    return &ps->m->codecs[*idx];
}

static int on_rtpmap(parser *ps, span v)
{
    span ptf = next_tok(&v), enc = next_tok(&v), name, rate, rest, chans;
    uint64_t pt, clock, ch = 0;
    if (!parse_uint(ptf, 127, &pt) || !enc.n || next_tok(&v).n)
        return fail(ps, "bad rtpmap");
    size_t i;
    igw_sdp_codec *c = codec_of(ps, ptf, &i);
    if (!c)
        return fail(ps, "rtpmap for unknown payload type");
    if (ps->has_rtpmap[i])
        return fail(ps, "duplicate rtpmap");
    if (!split_at(enc, '/', &name, &rest) || !is_token(name))
        return fail(ps, "bad rtpmap");
    if (name.n >= sizeof c->name)
        return fail(ps, "rtpmap name too long");
    bool has_ch = split_at(rest, '/', &rate, &chans);
    if (!parse_uint(rate, UINT32_MAX, &clock) || clock == 0 ||
        (has_ch && (!parse_uint(chans, 255, &ch) || ch == 0)))
        return fail(ps, "bad rtpmap");
    keep(c->name, name);
    c->clock = (uint32_t)clock;
    c->channels = (uint8_t)ch;
    ps->has_rtpmap[i] = true;
    return 0;
}

static int on_fmtp(parser *ps, span v)
{
    span ptf = next_tok(&v), params = rest_of(v);
    uint64_t pt;
    if (!parse_uint(ptf, 127, &pt))
        return fail(ps, "bad fmtp");
    size_t i;
    igw_sdp_codec *c = codec_of(ps, ptf, &i);
    if (!c)
        return fail(ps, "fmtp for unknown payload type");
    if (ps->has_fmtp[i])
        return fail(ps, "duplicate fmtp");
    if (params.n >= sizeof c->fmtp)
        return fail(ps, "fmtp too long");
    if (!is_text(params, true))
        return fail(ps, "bad fmtp");
    keep(c->fmtp, params);
    ps->has_fmtp[i] = true;
    return 0;
}

static int on_rtcp_fb(parser *ps, span v)
{
    span ptf = next_tok(&v), type = next_tok(&v), sub = next_tok(&v);
    uint64_t pt;
    if (!type.n || (!span_eq(ptf, "*") && !parse_uint(ptf, 127, &pt)))
        return fail(ps, "bad rtcp-fb");
    size_t first = 0, end = ps->m->ncodecs, i;
    if (!span_eq(ptf, "*")) {
        if (!codec_of(ps, ptf, &i))
            return fail(ps, "rtcp-fb for unknown payload type");
        first = i;
        end = i + 1;
    }
    for (i = first; i < end; i++) {
        igw_sdp_codec *c = &ps->m->codecs[i];
        if (span_eq(type, "nack") && !sub.n)
            c->fb_nack = true;
        else if (span_eq(type, "nack") && span_eq(sub, "pli"))
            c->fb_pli = true;
        else if (span_eq(type, "ccm") && span_eq(sub, "fir"))
            c->fb_fir = true;
        else if (span_eq(type, "goog-remb"))
            c->fb_remb = true;
        else if (span_eq(type, "transport-cc"))
            c->fb_twcc = true;
    }
    return 0;
}

static int on_ssrc(parser *ps, span v)
{
    igw_sdp_media *m = ps->m;
    span idf = next_tok(&v), attr = rest_of(v), key, val;
    uint64_t id;
    if (!parse_uint(idf, UINT32_MAX, &id) || !attr.n)
        return fail(ps, "bad ssrc");
    size_t i = 0;
    while (i < m->nssrc && m->ssrc[i] != id)
        i++;
    if (i == m->nssrc) {
        if (m->nssrc == IGW_SDP_MAX_SSRC)
            return fail(ps, "too many ssrcs");
        m->ssrc[m->nssrc++] = (uint32_t)id;
    }
    bool has_val = split_at(attr, ':', &key, &val);
    if (span_eq(key, "cname")) {
        if (!has_val || !val.n || !is_text(val, false))
            return fail(ps, "bad ssrc cname");
        if (val.n >= sizeof m->cname)
            return fail(ps, "ssrc cname too long");
        if (i == 0 && !m->cname[0])
            keep(m->cname, val);
    } else if (span_eq(key, "msid")) {
        if (!has_val || !val.n || !is_text(val, false))
            return fail(ps, "bad ssrc msid");
        if (val.n >= sizeof m->msid)
            return fail(ps, "ssrc msid too long");
        if (!ps->msid_attr && !m->msid[0])
            keep(m->msid, val); /* webrtcbin's only msid */
    }
    return 0;
}

static int on_msid(parser *ps, span v)
{
    if (!v.n || !is_text(v, false))
        return fail(ps, "bad msid");
    if (v.n >= sizeof ps->m->msid)
        return fail(ps, "msid too long");
    if (!ps->msid_attr)
        keep(ps->m->msid, v);
    ps->msid_attr = true;
    return 0;
}

#define AUDIO_LEVEL_URI "urn:ietf:params:rtp-hdrext:ssrc-audio-level"

/* a=extmap:<id>[/<direction>] <uri> [<attributes>]: only the audio level is
 * kept (talk's floor reads it); any other extension is skipped unread. */
static int on_extmap(parser *ps, span v)
{
    span idf = next_tok(&v), uri = next_tok(&v), id, dir;
    uint64_t n;
    if (!span_eq(uri, AUDIO_LEVEL_URI))
        return 0;
    bool has_dir = split_at(idf, '/', &id, &dir);
    if (!parse_uint(id, 255, &n) || n == 0 || n == 15 || /* 15: reserved (RFC 8285) */
        (has_dir && !span_eq(dir, "sendrecv") && !span_eq(dir, "sendonly") && !span_eq(dir, "recvonly") &&
         !span_eq(dir, "inactive")))
        return fail(ps, "bad extmap");
    if (ps->m->audio_level_ext)
        return fail(ps, "duplicate audio level extmap");
    ps->m->audio_level_ext = (uint8_t)n;
    return 0;
}

static int on_candidate(parser *ps, span v)
{
    igw_sdp_media *m = ps->m;
    if (m->ncands == IGW_SDP_MAX_CANDS)
        return fail(ps, "too many candidates");
    if (v.n + strlen("candidate:") >= sizeof m->cands[0])
        return fail(ps, "candidate too long");
    if (!is_candidate(v))
        return fail(ps, "bad candidate");
    snprintf(m->cands[m->ncands++], sizeof m->cands[0], "candidate:%.*s", (int)v.n, v.p);
    return 0;
}

static int on_fingerprint(parser *ps, scope *sc, span v)
{
    span alg = next_tok(&v), hex = next_tok(&v);
    char name[sizeof sc->fp_alg];
    uint8_t fp[IGW_SDP_MAX_FP];
    size_t len;
    if (!is_token(alg) || alg.n >= sizeof name || next_tok(&v).n || !parse_fp_hex(hex, fp, &len))
        return fail(ps, "bad fingerprint");
    for (size_t i = 0; i < alg.n; i++)
        name[i] = (char)lower((unsigned char)alg.p[i]);
    name[alg.n] = '\0';
    if (fp_size(name) && fp_size(name) != len)
        return fail(ps, "bad fingerprint");
    /* Several may be offered (RFC 8122); keep the first, or the first sha-256. */
    if (sc->fp_len == 0 || (strcmp(name, "sha-256") == 0 && strcmp(sc->fp_alg, "sha-256") != 0)) {
        memcpy(sc->fp_alg, name, alg.n + 1);
        memcpy(sc->fp, fp, len);
        sc->fp_len = len;
    }
    return 0;
}

static int on_cred(parser *ps, char *dst, size_t cap, span v, const char *what)
{
    char msg[32];
    if (dst[0]) {
        snprintf(msg, sizeof msg, "duplicate %s", what);
        return fail(ps, msg);
    }
    if (v.n >= cap) {
        snprintf(msg, sizeof msg, "%s too long", what);
        return fail(ps, msg);
    }
    if (!is_visible(v)) {
        snprintf(msg, sizeof msg, "bad %s", what);
        return fail(ps, msg);
    }
    keep(dst, v);
    return 0;
}

static int on_bundle(parser *ps, span v)
{
    igw_sdp *out = ps->out;
    if (out->bundle)
        return fail(ps, "duplicate BUNDLE group");
    out->bundle = true;
    for (span mid = next_tok(&v); mid.n; mid = next_tok(&v)) {
        if (out->nbundle == IGW_SDP_MAX_MEDIA)
            return fail(ps, "too many BUNDLE mids");
        if (mid.n >= sizeof out->bundle_mids[0])
            return fail(ps, "BUNDLE mid too long");
        if (!is_token(mid))
            return fail(ps, "bad BUNDLE mid");
        for (size_t i = 0; i < out->nbundle; i++)
            if (span_eq(mid, out->bundle_mids[i]))
                return fail(ps, "duplicate BUNDLE mid");
        keep(out->bundle_mids[out->nbundle++], mid);
    }
    return 0;
}

static int on_mid(parser *ps, span v)
{
    igw_sdp_media *m = ps->m;
    if (m->mid[0])
        return fail(ps, "duplicate mid");
    if (v.n >= sizeof m->mid)
        return fail(ps, "mid too long");
    if (!is_token(v))
        return fail(ps, "bad mid");
    for (igw_sdp_media *o = ps->out->media; o < m; o++)
        if (span_eq(v, o->mid))
            return fail(ps, "duplicate mid");
    keep(m->mid, v);
    return 0;
}

static int on_a(parser *ps, span v)
{
    span name, val;
    split_at(v, ':', &name, &val);
    if (!is_token(name))
        return fail(ps, "bad attribute");
    scope *sc = ps->m ? ps->ms : &ps->sess;
    bool media = ps->m != NULL;

    if (span_eq(name, "group")) {
        span sem = next_tok(&val);
        if (!media && span_eq(sem, "BUNDLE"))
            return on_bundle(ps, val);
    } else if (span_eq(name, "ice-lite")) {
        ps->out->ice_lite = true;
    } else if (span_eq(name, "ice-ufrag")) {
        return on_cred(ps, sc->ufrag, sizeof sc->ufrag, val, "ice-ufrag");
    } else if (span_eq(name, "ice-pwd")) {
        return on_cred(ps, sc->pwd, sizeof sc->pwd, val, "ice-pwd");
    } else if (span_eq(name, "fingerprint")) {
        return on_fingerprint(ps, sc, val);
    } else if (span_eq(name, "setup")) {
        if (sc->setup != IGW_SDP_SETUP_NONE)
            return fail(ps, "duplicate setup");
        sc->setup = span_eq(val, "actpass")   ? IGW_SDP_SETUP_ACTPASS
                    : span_eq(val, "active")  ? IGW_SDP_SETUP_ACTIVE
                    : span_eq(val, "passive") ? IGW_SDP_SETUP_PASSIVE
                                              : IGW_SDP_SETUP_NONE;
        if (sc->setup == IGW_SDP_SETUP_NONE)
            return fail(ps, "bad setup");
    } else if (span_eq(name, "sendrecv") || span_eq(name, "sendonly") ||
               span_eq(name, "recvonly") || span_eq(name, "inactive")) {
        if (sc->has_dir)
            return fail(ps, "duplicate direction");
        sc->has_dir = true;
        sc->dir = span_eq(name, "sendrecv")   ? IGW_SDP_SENDRECV
                  : span_eq(name, "sendonly") ? IGW_SDP_SENDONLY
                  : span_eq(name, "recvonly") ? IGW_SDP_RECVONLY
                                              : IGW_SDP_INACTIVE;
    } else if (span_eq(name, "end-of-candidates")) {
        sc->eoc = true;
    } else if (!media) {
        return 0; /* the rest is media-level only: nothing to apply */
    } else if (span_eq(name, "mid")) {
        return on_mid(ps, val);
    } else if (span_eq(name, "bundle-only")) {
        sc->bundle_only = true;
    } else if (span_eq(name, "rtcp-mux")) {
        ps->m->rtcp_mux = true;
    } else if (span_eq(name, "rtcp-rsize")) {
        ps->m->rtcp_rsize = true;
    } else if (span_eq(name, "rtpmap")) {
        return on_rtpmap(ps, val);
    } else if (span_eq(name, "fmtp")) {
        return on_fmtp(ps, val);
    } else if (span_eq(name, "rtcp-fb")) {
        return on_rtcp_fb(ps, val);
    } else if (span_eq(name, "ssrc")) {
        return on_ssrc(ps, val);
    } else if (span_eq(name, "msid")) {
        return on_msid(ps, val);
    } else if (span_eq(name, "candidate")) {
        return on_candidate(ps, val);
    } else if (span_eq(name, "extmap")) {
        return on_extmap(ps, val);
    }
    /* ice-options, other extmaps, ssrc-group, rid, simulcast, sctp-port, ...: skipped */
    return 0;
}

static bool in_bundle(const igw_sdp *s, const char *mid)
{
    for (size_t i = 0; mid[0] && i < s->nbundle; i++)
        if (strcmp(s->bundle_mids[i], mid) == 0)
            return true;
    return false;
}

/* After the last line: BUNDLE names real sections, bundle-only sections are
 * live, and the top level gets the effective transport attributes. */
static int finish(parser *ps)
{
    igw_sdp *out = ps->out;
    end_section(ps);
    if (!ps->seen_o) {
        errf(ps->err, ps->errlen, "missing o= line");
        return -1;
    }
    const scope *src = out->nmedia ? &ps->med[0] : NULL;
    for (size_t i = 0; i < out->nbundle; i++) {
        size_t j = 0;
        while (j < out->nmedia && strcmp(out->media[j].mid, out->bundle_mids[i]) != 0)
            j++;
        if (j == out->nmedia) {
            errf(ps->err, ps->errlen, "BUNDLE names a mid with no section");
            return -1;
        }
        if (i == 0)
            src = &ps->med[j];
    }
    for (size_t j = 0; j < out->nmedia; j++)
        if (ps->med[j].bundle_only && out->media[j].port == 0 && in_bundle(out, out->media[j].mid))
            out->media[j].port = 9;

    const scope *ss = &ps->sess;
    const scope *u = src && src->ufrag[0] ? src : ss;
    const scope *p = src && src->pwd[0] ? src : ss;
    const scope *f = src && src->fp_len ? src : ss;
    const scope *st = src && src->setup != IGW_SDP_SETUP_NONE ? src : ss;
    memcpy(out->ice_ufrag, u->ufrag, sizeof out->ice_ufrag);
    memcpy(out->ice_pwd, p->pwd, sizeof out->ice_pwd);
    memcpy(out->fp_alg, f->fp_alg, sizeof out->fp_alg);
    memcpy(out->fp, f->fp, sizeof out->fp);
    out->fp_len = f->fp_len;
    out->setup = st->setup;
    return 0;
}

static int parse_line(parser *ps, char type, span v)
{
    switch (type) {
    case 'v':
        return fail(ps, "duplicate v= line");
    case 'o':
        return on_o(ps, v);
    case 'c':
        return on_c(ps, v);
    case 't':
        return ps->m ? fail(ps, "t= line inside media section") : on_t(ps, v);
    case 'm':
        return on_m(ps, v);
    case 'a':
        return on_a(ps, v);
    default:
        return 0; /* s=, i=, b=, k=, ...: nothing of ours */
    }
}

int igw_sdp_parse(const char *text, size_t len, igw_sdp *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!out) {
        errf(err, errlen, "no output");
        return -1;
    }
    memset(out, 0, sizeof *out);
    if (!text && len) {
        errf(err, errlen, "no text");
        return -1;
    }
    if (len > IGW_SDP_MAX_TEXT) {
        errf(err, errlen, "description longer than %d bytes", IGW_SDP_MAX_TEXT);
        return -1;
    }
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.out = out;
    ps.err = err;
    ps.errlen = errlen;
    bool seen_v = false;
    int rc = 0;
    for (size_t pos = 0; pos < len && rc == 0;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        span ln = {text + pos, end - pos};
        pos = nl ? end + 1 : len;
        ps.line++;
        if (ln.n && ln.p[ln.n - 1] == '\r')
            ln.n--;
        for (size_t i = 0; i < ln.n; i++) {
            unsigned char c = (unsigned char)ln.p[i];
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                rc = fail(&ps, "control character");
                break;
            }
        }
        if (rc)
            break;
        while (ln.n && is_ws((unsigned char)ln.p[ln.n - 1]))
            ln.n--;
        if (ln.n == 0)
            continue; /* a blank line, as some signalling layers append */
        if (ln.n < 2 || ln.p[1] != '=' || ln.p[0] < 'a' || ln.p[0] > 'z') {
            rc = fail(&ps, seen_v ? "malformed line" : "missing v=");
            break;
        }
        span v = {ln.p + 2, ln.n - 2};
        if (!seen_v) {
            if (ln.p[0] != 'v')
                rc = fail(&ps, "missing v=");
            else if (!span_eq(v, "0"))
                rc = fail(&ps, "unsupported v= version");
            seen_v = true;
            continue;
        }
        rc = parse_line(&ps, ln.p[0], v);
    }
    if (rc == 0 && !seen_v) {
        errf(err, errlen, "missing v=");
        rc = -1;
    }
    if (rc == 0)
        rc = finish(&ps);
    if (rc != 0)
        memset(out, 0, sizeof *out);
    return rc;
}

/* ---- the WebRTC rules ---------------------------------------------------------- */

/* How a section is named in a reason: its mid, printable and short. */
static void section_name(const igw_sdp_media *m, size_t idx, char out[40])
{
    size_t n = bounded_len(m->mid, sizeof m->mid - 1);
    if (n == 0) {
        snprintf(out, 40, "#%zu", idx);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)m->mid[i];
        out[i] = c > 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[n] = '\0';
}

int igw_sdp_check_webrtc(const igw_sdp *sdp, char *err, size_t errlen)
{
    char name[40];
    if (err && errlen)
        err[0] = '\0';
    if (!sdp) {
        errf(err, errlen, "no description");
        return -1;
    }
    if (!sdp->bundle) {
        errf(err, errlen, "no BUNDLE group");
        return -1;
    }
    size_t nmedia = sdp->nmedia < IGW_SDP_MAX_MEDIA ? sdp->nmedia : IGW_SDP_MAX_MEDIA;
    size_t nbundle = sdp->nbundle < IGW_SDP_MAX_MEDIA ? sdp->nbundle : IGW_SDP_MAX_MEDIA;
    bool av = false;
    for (size_t i = 0; i < nmedia; i++) {
        const igw_sdp_media *m = &sdp->media[i];
        if (m->port == 0)
            continue;
        section_name(m, i, name);
        bool member = false;
        for (size_t j = 0; j < nbundle && !member; j++)
            member = m->mid[0] && strncmp(sdp->bundle_mids[j], m->mid, sizeof m->mid) == 0;
        if (!member) {
            errf(err, errlen, "section %s not in BUNDLE", name);
            return -1;
        }
        /* SCTP (datachannel) sections have no RTCP to multiplex. */
        if (!m->rtcp_mux && span_has(FIELD(m->proto), "RTP/")) {
            errf(err, errlen, "no rtcp-mux in section %s", name);
            return -1;
        }
        av = av || m->kind == IGW_SDP_AUDIO || m->kind == IGW_SDP_VIDEO;
    }
    size_t ulen = bounded_len(sdp->ice_ufrag, sizeof sdp->ice_ufrag);
    size_t plen = bounded_len(sdp->ice_pwd, sizeof sdp->ice_pwd);
    const char *why = ulen == 0                      ? "missing ice-ufrag"
                      : ulen < 4                     ? "ice-ufrag shorter than 4"
                      : ulen >= sizeof sdp->ice_ufrag ? "ice-ufrag too long"
                      : plen == 0                    ? "missing ice-pwd"
                      : plen < 22                    ? "ice-pwd shorter than 22"
                      : plen >= sizeof sdp->ice_pwd  ? "ice-pwd too long"
                      : strncmp(sdp->fp_alg, "sha-256", sizeof sdp->fp_alg) != 0 || sdp->fp_len != 32
                          ? "no sha-256 fingerprint"
                      : sdp->setup != IGW_SDP_SETUP_ACTPASS && sdp->setup != IGW_SDP_SETUP_ACTIVE &&
                              sdp->setup != IGW_SDP_SETUP_PASSIVE
                          ? "no setup attribute"
                      : !av ? "no audio or video section"
                            : NULL;
    if (why) {
        errf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

/* ---- the writer ------------------------------------------------------------------ */

typedef struct wbuf {
    char *p;
    size_t cap, len;
    bool bad;
} wbuf;

PRINTF(2, 3) static void w_fmt(wbuf *w, const char *fmt, ...)
{
    if (w->bad)
        return;
    size_t room = w->cap - w->len; /* > 0: a failed write never advances len */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->p + w->len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room)
        w->bad = true;
    else
        w->len += (size_t)n;
}

/* A string field the parser would read back: terminated inside its field and
 * passing `ok` (empty allowed when `empty`). */
static bool field_ok(const char *s, size_t cap, bool empty, bool (*ok)(span))
{
    size_t n = bounded_len(s, cap);
    if (n == cap)
        return false;
    return n == 0 ? empty : ok((span){s, n});
}

static bool text_ok(span s)
{
    return is_text(s, false);
}

static bool fmtp_ok(span s)
{
    return is_text(s, true);
}

/* An encoding name: a token without '/'. */
static bool enc_ok(span s)
{
    return is_token(s) && !memchr(s.p, '/', s.n);
}

static bool cand_ok(span s)
{
    static const char pre[] = "candidate:";
    return s.n > sizeof pre - 1 && memcmp(s.p, pre, sizeof pre - 1) == 0 &&
           is_candidate((span){s.p + sizeof pre - 1, s.n - (sizeof pre - 1)});
}

static bool has_rtx(const igw_sdp_media *m)
{
    for (size_t i = 0; i < m->ncodecs; i++)
        if (span_ieq(span_of(m->codecs[i].name), "rtx"))
            return true;
    return false;
}

static bool media_ok(const igw_sdp_media *m)
{
    if (m->kind != IGW_SDP_AUDIO && m->kind != IGW_SDP_VIDEO && m->kind != IGW_SDP_APPLICATION)
        return false;
    if (!field_ok(m->proto, sizeof m->proto, true, is_visible) ||
        !field_ok(m->mid, sizeof m->mid, true, is_token) || (unsigned)m->dir > IGW_SDP_INACTIVE ||
        m->ncodecs > IGW_SDP_MAX_CODECS || m->nssrc > IGW_SDP_MAX_SSRC ||
        m->ncands > IGW_SDP_MAX_CANDS)
        return false;
    if (m->port == 0)
        return m->ncodecs == 0 || m->codecs[0].pt <= 127;
    if (m->audio_level_ext == 15)
        return false;
    if (m->ncodecs == 0)
        return false; /* an m= line needs a format; datachannels are not ours */
    bool seen[128] = {false};
    for (size_t i = 0; i < m->ncodecs; i++) {
        const igw_sdp_codec *c = &m->codecs[i];
        if (c->pt > 127 || seen[c->pt] || !field_ok(c->name, sizeof c->name, true, enc_ok) ||
            (c->name[0] && c->clock == 0) || !field_ok(c->fmtp, sizeof c->fmtp, true, fmtp_ok))
            return false;
        seen[c->pt] = true;
    }
    for (size_t i = 0; i < m->nssrc; i++)
        for (size_t j = 0; j < i; j++)
            if (m->ssrc[i] == m->ssrc[j])
                return false;
    if (!field_ok(m->cname, sizeof m->cname, true, text_ok) ||
        !field_ok(m->msid, sizeof m->msid, true, text_ok) ||
        (m->nssrc && !m->cname[0] && !m->msid[0]))
        return false;
    for (size_t i = 0; i < m->ncands; i++)
        if (!field_ok(m->cands[i], sizeof m->cands[i], false, cand_ok))
            return false;
    return true;
}

static bool sdp_ok(const igw_sdp *s)
{
    /* Without a section the ICE and DTLS lines would have nowhere to go. */
    if (s->nmedia == 0 || s->nmedia > IGW_SDP_MAX_MEDIA || s->nbundle > IGW_SDP_MAX_MEDIA ||
        s->fp_len > IGW_SDP_MAX_FP || (unsigned)s->setup > IGW_SDP_SETUP_PASSIVE ||
        !field_ok(s->ice_ufrag, sizeof s->ice_ufrag, true, is_visible) ||
        !field_ok(s->ice_pwd, sizeof s->ice_pwd, true, is_visible) ||
        !field_ok(s->fp_alg, sizeof s->fp_alg, true, is_token))
        return false;
    for (size_t i = 0; i < s->nbundle; i++)
        if (!field_ok(s->bundle_mids[i], sizeof s->bundle_mids[i], false, is_token))
            return false;
    for (size_t i = 0; i < s->nmedia; i++)
        if (!media_ok(&s->media[i]))
            return false;
    return true;
}

static const char *kind_name(igw_sdp_kind k)
{
    return k == IGW_SDP_AUDIO ? "audio" : k == IGW_SDP_VIDEO ? "video" : "application";
}

static const char *dir_name(igw_sdp_dir d)
{
    static const char *names[] = {"sendrecv", "sendonly", "recvonly", "inactive"};
    return names[d];
}

static const char *setup_name(igw_sdp_setup s)
{
    static const char *names[] = {"", "actpass", "active", "passive"};
    return names[s];
}

/* The ICE and DTLS lines every section repeats (BUNDLE peers want them in
 * each; webrtcbin even in rejected ones). */
static void w_transport(wbuf *w, const igw_sdp *s, bool trickle)
{
    if (s->ice_ufrag[0])
        w_fmt(w, "a=ice-ufrag:%s\r\n", s->ice_ufrag);
    if (s->ice_pwd[0])
        w_fmt(w, "a=ice-pwd:%s\r\n", s->ice_pwd);
    if (trickle && !s->ice_lite)
        w_fmt(w, "a=ice-options:trickle\r\n");
    if (s->fp_len) {
        char hex[3 * IGW_SDP_MAX_FP];
        igw_sdp_fp_format(s->fp, s->fp_len, hex, sizeof hex);
        w_fmt(w, "a=fingerprint:%s %s\r\n", s->fp_alg[0] ? s->fp_alg : "sha-256", hex);
    }
    if (s->setup != IGW_SDP_SETUP_NONE)
        w_fmt(w, "a=setup:%s\r\n", setup_name(s->setup));
}

static void w_codec(wbuf *w, const igw_sdp_codec *c)
{
    if (c->name[0]) {
        if (c->channels)
            w_fmt(w, "a=rtpmap:%u %s/%" PRIu32 "/%u\r\n", c->pt, c->name, c->clock, c->channels);
        else
            w_fmt(w, "a=rtpmap:%u %s/%" PRIu32 "\r\n", c->pt, c->name, c->clock);
    }
    if (c->fmtp[0])
        w_fmt(w, "a=fmtp:%u %s\r\n", c->pt, c->fmtp);
    if (c->fb_remb)
        w_fmt(w, "a=rtcp-fb:%u goog-remb\r\n", c->pt);
    if (c->fb_twcc)
        w_fmt(w, "a=rtcp-fb:%u transport-cc\r\n", c->pt);
    if (c->fb_fir)
        w_fmt(w, "a=rtcp-fb:%u ccm fir\r\n", c->pt);
    if (c->fb_nack)
        w_fmt(w, "a=rtcp-fb:%u nack\r\n", c->pt);
    if (c->fb_pli)
        w_fmt(w, "a=rtcp-fb:%u nack pli\r\n", c->pt);
}

static void w_media(wbuf *w, const igw_sdp *s, const igw_sdp_media *m)
{
    const char *proto = m->proto[0] ? m->proto : "UDP/TLS/RTP/SAVPF";
    if (m->port == 0) {
        if (m->ncodecs)
            w_fmt(w, "m=%s 0 %s %u\r\n", kind_name(m->kind), proto, m->codecs[0].pt);
        else /* the parser keeps no formats for non-RTP protos */
            w_fmt(w, "m=%s 0 %s %s\r\n", kind_name(m->kind), proto,
                  span_has(span_of(proto), "RTP/") ? "0" : "webrtc-datachannel");
        w_fmt(w, "c=IN IP4 0.0.0.0\r\n");
        if (m->mid[0])
            w_fmt(w, "a=mid:%s\r\n", m->mid);
        w_transport(w, s, false);
        return;
    }
    w_fmt(w, "m=%s %u %s", kind_name(m->kind), m->port, proto);
    for (size_t i = 0; i < m->ncodecs; i++)
        w_fmt(w, " %u", m->codecs[i].pt);
    w_fmt(w, "\r\nc=IN IP4 0.0.0.0\r\n");
    if (m->mid[0])
        w_fmt(w, "a=mid:%s\r\n", m->mid);
    w_transport(w, s, true);
    w_fmt(w, "a=%s\r\n", dir_name(m->dir));
    if (m->rtcp_mux)
        w_fmt(w, "a=rtcp-mux\r\n");
    if (m->rtcp_rsize)
        w_fmt(w, "a=rtcp-rsize\r\n");
    if (m->audio_level_ext)
        w_fmt(w, "a=extmap:%u " AUDIO_LEVEL_URI "\r\n", m->audio_level_ext);
    for (size_t i = 0; i < m->ncodecs; i++)
        w_codec(w, &m->codecs[i]);
    if (m->msid[0])
        w_fmt(w, "a=msid:%s\r\n", m->msid);
    /* Without the group Chrome takes an rtx ssrc for a second track. */
    if (m->nssrc == 2 && has_rtx(m))
        w_fmt(w, "a=ssrc-group:FID %" PRIu32 " %" PRIu32 "\r\n", m->ssrc[0], m->ssrc[1]);
    for (size_t i = 0; i < m->nssrc; i++) {
        if (m->cname[0])
            w_fmt(w, "a=ssrc:%" PRIu32 " cname:%s\r\n", m->ssrc[i], m->cname);
        if (m->msid[0])
            w_fmt(w, "a=ssrc:%" PRIu32 " msid:%s\r\n", m->ssrc[i], m->msid);
    }
    for (size_t i = 0; i < m->ncands; i++)
        w_fmt(w, "a=%s\r\n", m->cands[i]);
    if (m->end_of_candidates)
        w_fmt(w, "a=end-of-candidates\r\n");
}

size_t igw_sdp_write(const igw_sdp *sdp, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return 0;
    buf[0] = '\0';
    if (!sdp || !sdp_ok(sdp))
        return 0;
    wbuf w = {buf, cap, 0, false};
    w_fmt(&w, "v=0\r\no=- %" PRIu64 " %" PRIu64 " IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n",
          sdp->sess_id, sdp->sess_version);
    if (sdp->bundle) {
        w_fmt(&w, "a=group:BUNDLE");
        for (size_t i = 0; i < sdp->nbundle; i++)
            w_fmt(&w, " %s", sdp->bundle_mids[i]);
        w_fmt(&w, "\r\n");
    }
    if (sdp->ice_lite)
        w_fmt(&w, "a=ice-lite\r\n");
    w_fmt(&w, "a=msid-semantic: WMS *\r\n");
    for (size_t i = 0; i < sdp->nmedia; i++)
        w_media(&w, sdp, &sdp->media[i]);
    if (w.bad) {
        buf[0] = '\0';
        return 0;
    }
    return w.len;
}

/* ---- codec choice ------------------------------------------------------------------ */

igw_sdp_dir igw_sdp_answer_dir(igw_sdp_dir offered, bool we_send, bool we_recv)
{
    bool send = we_send && (offered == IGW_SDP_SENDRECV || offered == IGW_SDP_RECVONLY);
    bool recv = we_recv && (offered == IGW_SDP_SENDRECV || offered == IGW_SDP_SENDONLY);
    return send && recv ? IGW_SDP_SENDRECV : send ? IGW_SDP_SENDONLY : recv ? IGW_SDP_RECVONLY : IGW_SDP_INACTIVE;
}

int igw_sdp_find_codec(const igw_sdp_media *m, const char *name, uint32_t clock, uint8_t channels)
{
    if (!m || !name)
        return -1;
    size_t n = m->ncodecs < IGW_SDP_MAX_CODECS ? m->ncodecs : IGW_SDP_MAX_CODECS;
    for (size_t i = 0; i < n; i++) {
        const igw_sdp_codec *c = &m->codecs[i];
        if (c->clock == clock && (channels == 0 || c->channels == channels) &&
            span_ieq(FIELD(c->name), name))
            return (int)i;
    }
    return -1;
}

/* The value of `key` in a "k1=v1;k2=v2" fmtp (keys case-insensitive, blanks
 * around items ignored). */
static bool fmtp_get(span rest, const char *key, span *val)
{
    span item, k;
    while (rest.n) {
        split_at(rest, ';', &item, &rest);
        if (split_at(trim(item), '=', &k, val) && span_ieq(trim(k), key)) {
            *val = trim(*val);
            return true;
        }
    }
    return false;
}

/* Chrome's profile table (RFC 6184 section 8.1): profile_idc and a bit
 * pattern of profile-iop, 'x' = either. Profiles we have no class for
 * (extended, predictive high 4:4:4) fall through to UNKNOWN. */
static const struct {
    uint8_t idc;
    const char *iop;
    igw_h264_profile profile;
} h264_patterns[] = {
    {0x42, "x1xx0000", IGW_H264_CONSTRAINED_BASELINE},
    {0x4d, "1xxx0000", IGW_H264_CONSTRAINED_BASELINE},
    {0x58, "11xx0000", IGW_H264_CONSTRAINED_BASELINE},
    {0x42, "x0xx0000", IGW_H264_BASELINE},
    {0x58, "10xx0000", IGW_H264_BASELINE},
    {0x4d, "0x0x0000", IGW_H264_MAIN},
    {0x64, "00000000", IGW_H264_HIGH},
    {0x64, "00001100", IGW_H264_CONSTRAINED_HIGH},
};

static bool iop_match(const char *pat, uint8_t iop)
{
    for (int bit = 0; bit < 8; bit++) {
        int v = (iop >> (7 - bit)) & 1;
        if (pat[bit] != 'x' && pat[bit] - '0' != v)
            return false;
    }
    return true;
}

static span cstr(const char *s)
{
    return s ? span_of(s) : (span){"", 0};
}

static igw_h264_profile h264_profile(span fmtp)
{
    span v;
    if (!fmtp_get(fmtp, "profile-level-id", &v))
        return IGW_H264_BASELINE; /* RFC 6184 default 42000a */
    if (v.n != 6)
        return IGW_H264_UNKNOWN;
    uint8_t b[3];
    for (size_t i = 0; i < 3; i++) {
        int hi = hexval((unsigned char)v.p[2 * i]), lo = hexval((unsigned char)v.p[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return IGW_H264_UNKNOWN;
        b[i] = (uint8_t)(hi << 4 | lo);
    }
    /* Levels H.264 Table A-1 defines (level 1b is 11 with constraint_set3). */
    static const uint8_t levels[] = {10, 11, 12, 13, 20, 21, 22, 30, 31,
                                     32, 40, 41, 42, 50, 51, 52, 60, 61, 62};
    if (!memchr(levels, b[2], sizeof levels))
        return IGW_H264_UNKNOWN;
    for (size_t i = 0; i < sizeof h264_patterns / sizeof h264_patterns[0]; i++)
        if (h264_patterns[i].idc == b[0] && iop_match(h264_patterns[i].iop, b[1]))
            return h264_patterns[i].profile;
    return IGW_H264_UNKNOWN;
}

static bool h264_mode1(span fmtp)
{
    span v;
    return fmtp_get(fmtp, "packetization-mode", &v) && span_eq(v, "1");
}

igw_h264_profile igw_sdp_h264_profile(const char *fmtp)
{
    return h264_profile(cstr(fmtp));
}

bool igw_sdp_h264_mode1(const char *fmtp)
{
    return h264_mode1(cstr(fmtp));
}

int igw_sdp_pick_h264(const igw_sdp_media *m, igw_h264_profile want)
{
    if (!m)
        return -1;
    size_t n = m->ncodecs < IGW_SDP_MAX_CODECS ? m->ncodecs : IGW_SDP_MAX_CODECS;
    int any = -1;
    for (size_t i = 0; i < n; i++) {
        const igw_sdp_codec *c = &m->codecs[i];
        if (c->clock != 90000 || !span_ieq(FIELD(c->name), "H264") || !h264_mode1(FIELD(c->fmtp)))
            continue;
        igw_h264_profile p = h264_profile(FIELD(c->fmtp));
        if (want == IGW_H264_UNKNOWN ? p == IGW_H264_CONSTRAINED_BASELINE : p == want)
            return (int)i;
        if (any < 0)
            any = (int)i;
    }
    return want == IGW_H264_UNKNOWN ? any : -1;
}

int igw_sdp_pick_opus(const igw_sdp_media *m)
{
    return igw_sdp_find_codec(m, "opus", 48000, 2);
}

int igw_sdp_rtx_for(const igw_sdp_media *m, uint8_t pt)
{
    if (!m)
        return -1;
    size_t n = m->ncodecs < IGW_SDP_MAX_CODECS ? m->ncodecs : IGW_SDP_MAX_CODECS;
    for (size_t i = 0; i < n; i++) {
        const igw_sdp_codec *c = &m->codecs[i];
        span v;
        uint64_t apt;
        if (span_ieq(FIELD(c->name), "rtx") && fmtp_get(FIELD(c->fmtp), "apt", &v) &&
            parse_uint(v, 127, &apt) && apt == pt)
            return c->pt;
    }
    return -1;
}
