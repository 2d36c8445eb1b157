/* sdp.h - WebRTC session descriptions: parse a peer's offer or answer, write ours.
 *
 * One structure describes both sides: igw_sdp_parse fills it from a peer's text,
 * the media core fills one for itself and igw_sdp_write prints it. Only what a
 * BUNDLE + rtcp-mux WebRTC peer needs is kept; everything else is skipped.
 * All arrays are bounded: more entries than the caps below is a parse error,
 * never a truncation that changes meaning. Strings are NUL-terminated. */
#ifndef IGW_SDP_H
#define IGW_SDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IGW_SDP_MAX_TEXT   65536 /* longest description accepted */
#define IGW_SDP_MAX_MEDIA  8
#define IGW_SDP_MAX_CODECS 64    /* Chrome 156 offers 34 video payload types */
#define IGW_SDP_MAX_CANDS  32    /* per media section */
#define IGW_SDP_MAX_SSRC   4     /* per media section */
#define IGW_SDP_MAX_FP     64    /* fingerprint bytes (sha-512 fits) */

typedef enum { IGW_SDP_AUDIO, IGW_SDP_VIDEO, IGW_SDP_APPLICATION, IGW_SDP_OTHER } igw_sdp_kind;
typedef enum { IGW_SDP_SENDRECV, IGW_SDP_SENDONLY, IGW_SDP_RECVONLY, IGW_SDP_INACTIVE } igw_sdp_dir;
typedef enum { IGW_SDP_SETUP_NONE, IGW_SDP_SETUP_ACTPASS, IGW_SDP_SETUP_ACTIVE, IGW_SDP_SETUP_PASSIVE } igw_sdp_setup;

/* One payload type: a=rtpmap, a=fmtp, a=rtcp-fb. */
typedef struct igw_sdp_codec {
    uint8_t  pt;
    char     name[32];      /* encoding name as written ("H264", "opus", "rtx") */
    uint32_t clock;         /* clock rate */
    uint8_t  channels;      /* 0 when absent */
    char     fmtp[512];     /* a=fmtp parameters verbatim, "" when absent */
    bool     fb_nack, fb_pli, fb_fir, fb_remb, fb_twcc;
} igw_sdp_codec;

/* One m= section with its attributes (media level overrides session level). */
typedef struct igw_sdp_media {
    igw_sdp_kind  kind;
    char          proto[32];    /* "UDP/TLS/RTP/SAVPF" */
    /* 0 = rejected / disabled section. An offered "port 0 + a=bundle-only"
     * section that is in the BUNDLE group (webrtcbin's max-bundle) is live:
     * it reads as 9, the JSEP placeholder. */
    uint16_t      port;
    char          mid[33];
    igw_sdp_dir   dir;
    bool          rtcp_mux;
    bool          rtcp_rsize;
    igw_sdp_codec codecs[IGW_SDP_MAX_CODECS];
    size_t        ncodecs;
    uint32_t      ssrc[IGW_SDP_MAX_SSRC]; /* distinct a=ssrc ids, in order of appearance */
    size_t        nssrc;
    char          cname[65];    /* a=ssrc:<id> cname: of the first ssrc, "" if none */
    char          msid[130];    /* a=msid value ("stream track"), "" if none */
    /* a=extmap id of urn:ietf:params:rtp-hdrext:ssrc-audio-level (RFC 6464),
     * 1..255, 0 = not offered. Other header extensions are skipped. */
    uint8_t       audio_level_ext;
    /* a=candidate lines without the "a=" prefix ("candidate:..."), as libnice parses them */
    char          cands[IGW_SDP_MAX_CANDS][256];
    size_t        ncands;
    bool          end_of_candidates;
} igw_sdp_media;

/* A whole description. After igw_sdp_parse the ICE credentials, fingerprint and
 * setup fields hold the effective values: those of the first BUNDLE member
 * section if it has its own, else the session-level ones. */
typedef struct igw_sdp {
    uint64_t      sess_id, sess_version;
    bool          bundle;                       /* a=group:BUNDLE present */
    char          bundle_mids[IGW_SDP_MAX_MEDIA][33];
    size_t        nbundle;
    bool          ice_lite;
    char          ice_ufrag[257], ice_pwd[257];
    char          fp_alg[16];                   /* "sha-256" (lower case) */
    uint8_t       fp[IGW_SDP_MAX_FP];
    size_t        fp_len;
    igw_sdp_setup setup;
    igw_sdp_media media[IGW_SDP_MAX_MEDIA];
    size_t        nmedia;
} igw_sdp;

/* Parses `text` (LF or CRLF lines). Returns 0, or -1 with a short reason that
 * names the offending line kind (never echoes more than 40 bytes of input) in
 * err; `out` is then zeroed. Checks syntax only; igw_sdp_check_webrtc states
 * what a peer must offer. The structure is large (~320 KB): allocate it. */
int igw_sdp_parse(const char *text, size_t len, igw_sdp *out, char *err, size_t errlen);

/* The rules a WebRTC peer of ours must meet: BUNDLE grouping every non-rejected
 * section, rtcp-mux on each RTP one, ICE ufrag (4..256) and pwd (22..256), a sha-256
 * fingerprint, a setup attribute (actpass/active/passive), at least one audio or
 * video section. 0, or -1 and a reason such as "no BUNDLE group". */
int igw_sdp_check_webrtc(const igw_sdp *sdp, char *err, size_t errlen);

/* Writes `sdp` as text (CRLF lines) into buf: v=, o=, s=, t=, a=group:BUNDLE,
 * a=ice-lite when set, a=msid-semantic, then per section m=, c=, a=mid,
 * a=ice-ufrag/pwd, a=ice-options:trickle (full ICE only), a=fingerprint,
 * a=setup, direction, a=rtcp-mux, the audio-level extmap, rtpmap, fmtp, rtcp-fb, msid, ssrc cname/msid
 * (with a=ssrc-group:FID when there are two ssrcs and an rtx codec: ssrc[1]
 * is then the rtx of ssrc[0]), candidates, end-of-candidates. A rejected
 * section (port 0) carries its first payload type, a=mid and the ICE/DTLS
 * lines only (webrtcbin insists on ufrag, pwd and setup in every section).
 * Returns the length written (a NUL follows, so cap must exceed it), or 0 if
 * it does not fit or the structure holds what the parser would not read back:
 * a value with control characters or out of its field, no section at all, a
 * live section without codecs (datachannels are not written), ssrcs with
 * neither cname nor msid, an IGW_SDP_OTHER kind. buf then holds nothing
 * useful. igw_sdp_parse reads back every field written. */
size_t igw_sdp_write(const igw_sdp *sdp, char *buf, size_t cap);

/* The direction of our answer to a section offered as `offered` when we would
 * send (we_send) and receive (we_recv): each only where the offer allows it
 * (RFC 3264 6.1: a sendonly offer lets us receive only, recvonly send only). */
igw_sdp_dir igw_sdp_answer_dir(igw_sdp_dir offered, bool we_send, bool we_recv);

/* Index of the first codec in m named `name` (case-insensitive) with that clock
 * rate (and channels when channels > 0), or -1. */
int igw_sdp_find_codec(const igw_sdp_media *m, const char *name, uint32_t clock, uint8_t channels);

/* H264 profile classes from profile-level-id (RFC 6184 / Chrome's mapping). */
typedef enum {
    IGW_H264_UNKNOWN = 0,
    IGW_H264_CONSTRAINED_BASELINE,
    IGW_H264_BASELINE,
    IGW_H264_MAIN,
    IGW_H264_CONSTRAINED_HIGH,
    IGW_H264_HIGH,
} igw_h264_profile;

/* The profile of an H264 fmtp line, and whether packetization-mode=1 is
 * present. fmtp is "key=value;..." (keys case-insensitive, blanks ignored).
 * profile-level-id absent = baseline, the RFC 6184 default 42000a (Chrome
 * assumes constrained baseline instead). Otherwise Chrome's table: 42 with
 * constraint_set1 (iop x1xx0000) constrained baseline, 42 x0xx0000 baseline,
 * 4d 0x0x0000 main (4d 1xxx0000 constrained baseline), 64 00 high, 64 0c
 * constrained high; anything else, a bad level or not 6 hex digits UNKNOWN. */
igw_h264_profile igw_sdp_h264_profile(const char *fmtp);
bool igw_sdp_h264_mode1(const char *fmtp);

/* Index of the H264 codec of m with packetization-mode=1 and the given profile
 * (IGW_H264_UNKNOWN = prefer constrained baseline, then any), or -1. */
int igw_sdp_pick_h264(const igw_sdp_media *m, igw_h264_profile want);

/* Index of opus/48000/2 in m, or -1. */
int igw_sdp_pick_opus(const igw_sdp_media *m);

/* Payload type of the rtx codec whose apt= is `pt`, or -1. */
int igw_sdp_rtx_for(const igw_sdp_media *m, uint8_t pt);

/* Formats a fingerprint as "AB:CD:..." (upper-case hex) into out (cap >= 3*len;
 * with less room out becomes "" rather than a truncated fingerprint). */
void igw_sdp_fp_format(const uint8_t *fp, size_t len, char *out, size_t cap);

#endif
