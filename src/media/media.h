/* media.h - the media core: a WebRTC forwarding unit.
 *
 * A source (a camera publishing H264 video and Opus audio over WebRTC) fans
 * out to viewers, each in its own WebRTC session (ICE by libnice, DTLS 1.2 by
 * OpenSSL, SRTP by libsrtp2). Every source and its viewers live on one media
 * thread (a GLib main context), and packets are forwarded on the thread that
 * received them: no per-packet cross-thread queue. See docs/media.md.
 *
 * Peers are named by the caller (ids of at most IGW_MEDIA_ID_MAX bytes) and
 * carry a mediaRevision: an offer must name a newer revision than the peer
 * it replaces (it then replaces it: a new generation), an answer or a track
 * operation the peer's current one; anything else is refused and changes
 * nothing.
 *
 * The functions below may be called from any thread except a media thread;
 * each runs its work on the owning media thread and waits for it (no network
 * wait: host candidates are gathered locally), so it returns in well under a
 * millisecond. Outcomes that happen later (ICE, DTLS, first packet, failure)
 * arrive as events on a queue with a pollable file descriptor. */
#ifndef IGW_MEDIA_H
#define IGW_MEDIA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IGW_MEDIA_ID_MAX     63
#define IGW_MEDIA_SDP_MAX    16384 /* longest description written */
#define IGW_MEDIA_MAX_ADDRS  8

typedef struct igw_media igw_media;

typedef struct igw_media_config {
    unsigned    threads;                 /* media threads (1..16) */
    const char *addresses[IGW_MEDIA_MAX_ADDRS]; /* local addresses to gather on */
    unsigned    naddresses;              /* 0 = 127.0.0.1 */
    const char *announced_address;       /* written in candidates instead (1:1 NAT), NULL = none */
    uint16_t    port_min, port_max;      /* UDP port range, 0/0 = any */
    bool        ice_full;                /* full ICE instead of ICE-lite */
    unsigned    consent_timeout_ms;      /* silence after which a connected peer fails */
    unsigned    connect_timeout_ms;      /* ICE + DTLS must complete within this */
    unsigned    keyframe_min_interval_ms; /* PLI/FIR toward a source at most this often */
} igw_media_config;

/* The defaults: 1 thread, loopback, ICE-lite, consent 10 s, connect 20 s, PLI 1 s. */
void igw_media_config_defaults(igw_media_config *c);

/* Starts the media threads and makes the process certificate. NULL + err. */
igw_media *igw_media_new(const igw_media_config *cfg, char *err, size_t errlen);

/* Closes every peer (their events are discarded) and stops the threads. No
 * other call may run during or after it. */
void igw_media_free(igw_media *m);

/* SHA-256 fingerprint of the process certificate, SDP form. */
const char *igw_media_fingerprint(const igw_media *m);

/* ---- results ---- */

typedef enum igw_media_rc {
    IGW_MEDIA_OK = 0,
    IGW_MEDIA_EINVAL = -1,   /* bad argument or unusable SDP (err says why) */
    IGW_MEDIA_ESTALE = -2,   /* mediaRevision older than (or equal to, for offers) the peer's */
    IGW_MEDIA_ENOENT = -3,   /* no such peer */
    IGW_MEDIA_ECONFLICT = -4, /* refused by the track-subscription machine */
    IGW_MEDIA_EFAIL = -5,    /* internal failure (sockets, crypto) */
} igw_media_rc;

/* ---- sources ---- */

/* A source from a camera's offer (sendonly or sendrecv H264 and/or Opus).
 * Writes our answer into answer[0..cap). A newer revision for an existing id
 * replaces the source and closes its viewers. */
igw_media_rc igw_media_source_offer(igw_media *m, const char *source_id, uint32_t revision, const char *offer,
                                    size_t len, char *answer, size_t cap, char *err, size_t errlen);

/* A source fed plain RTP over UDP (no ICE/DTLS/SRTP): binds addr:port (port 0
 * = any; the bound port is returned in *bound). Payload types: H264 `video_pt`
 * (0 = none) with profile-level-id `h264_profile` (NULL = 42e01f), Opus
 * `audio_pt` (0 = none). Used for benchmarks and RTSP-style feeds. */
igw_media_rc igw_media_source_rtp(igw_media *m, const char *source_id, const char *addr, uint16_t port,
                                  uint8_t video_pt, const char *h264_profile, uint8_t audio_pt,
                                  uint16_t *bound, char *err, size_t errlen);

/* ---- viewers ---- */

/* A viewer of source_id from the viewer's offer (recvonly audio/video). Every
 * offered track the source can serve starts `active` (machine trigger start),
 * or `paused` when start_paused (trigger startVision). Writes the answer. */
igw_media_rc igw_media_viewer_offer(igw_media *m, const char *source_id, const char *viewer_id, uint32_t revision,
                                    bool start_paused, const char *offer, size_t len, char *answer, size_t cap,
                                    char *err, size_t errlen);

/* The platform offers first: writes an offer (sendonly tracks of the source)
 * for a new viewer; the viewer's answer goes to igw_media_viewer_answer. */
igw_media_rc igw_media_viewer_make_offer(igw_media *m, const char *source_id, const char *viewer_id,
                                         uint32_t revision, bool start_paused, char *offer, size_t cap,
                                         char *err, size_t errlen);
igw_media_rc igw_media_viewer_answer(igw_media *m, const char *viewer_id, uint32_t revision, const char *answer,
                                     size_t len, char *err, size_t errlen);

typedef enum { IGW_MEDIA_AUDIO = 1, IGW_MEDIA_VIDEO = 2, IGW_MEDIA_BOTH = 3 } igw_media_kinds;

/* Fires a track-subscription trigger (generated machine `track`: pause,
 * resume, unsubscribe, subscribe) on the viewer's tracks of the given kinds.
 * All named tracks move or none does. Subscribe and resume ask the source for
 * a keyframe and restart the viewer's video at one. Pause and unsubscribe
 * return after the media thread applied them: nothing of those kinds is sent
 * to the viewer after the return, retransmissions of earlier packets included
 * (its NACKs are counted in dropped). *state (optional) gets the resulting
 * igw_track_state of the first named track. */
igw_media_rc igw_media_viewer_track(igw_media *m, const char *viewer_id, uint32_t revision, igw_media_kinds kinds,
                                    int trigger, int *state, char *err, size_t errlen);

/* Talk: the gate on a viewer's audio toward its source's speaker. A source
 * whose camera offered audio sendrecv or recvonly has a talkback (one Opus
 * stream from us to the camera); a viewer whose offer sends audio to such a
 * source publishes. Every viewer starts not allowed. While allowed, its audio
 * is forwarded to the talkback when it holds the floor (one talker at a time:
 * docs/media.md); set to false, forwarding stops from its next packet: the
 * call returns after the media thread applied it, so no packet received after
 * the return is forwarded. What the viewer receives never changes with the
 * gate. Allowed on a viewer that does not publish is kept and does nothing.
 * revision must be the viewer's current one. */
igw_media_rc igw_media_viewer_publish(igw_media *m, const char *viewer_id, uint32_t revision, bool allowed, char *err,
                                      size_t errlen);

/* Closes a source (and its viewers) or a viewer. */
igw_media_rc igw_media_close(igw_media *m, const char *id, const char *reason);

/* ---- observation ---- */

typedef struct igw_media_stats {
    bool     is_source;
    bool     connected;          /* DTLS connected (or an RTP source bound) */
    int      audio_state, video_state; /* igw_track_state of a viewer's tracks, 0 = none */
    uint64_t rtp_in, rtp_out;    /* RTP packets received / sent */
    uint64_t bytes_in, bytes_out;
    uint64_t keyframes_in;       /* source: keyframes seen */
    uint64_t pli_in, pli_out;    /* keyframe requests received / sent */
    uint64_t nack_in, rtx_out;   /* NACKed packets / retransmissions sent */
    uint64_t video_out;          /* viewer: video RTP packets sent, retransmissions included */
    uint64_t sr_out;             /* sender reports sent */
    uint64_t dropped;            /* packets not forwarded (paused, waiting keyframe, send errors) */
    uint64_t rtp_expected;       /* source: packets the senders' sequence numbers span (RFC 3550 A.3) */
    uint32_t viewers;            /* source: viewers attached */
    /* talk */
    bool     publish_allowed;    /* viewer: its gate (igw_media_viewer_publish) */
    uint64_t talk_in;            /* viewer: audio packets received from it (its Opus payload type) */
    uint64_t talk_forwarded;     /* viewer: of those, sent to the source's talkback */
    uint64_t talk_gated;         /* viewer: of those, dropped because its gate was closed */
    uint64_t talk_no_floor;      /* viewer: of those, dropped: another held the floor, or silence on a free one */
    uint64_t talk_last_us;       /* viewer: monotonic clock (µs) of its last forwarded packet, 0 = none */
    uint64_t talkback_out;       /* source: packets sent on its talkback (also in rtp_out) */
} igw_media_stats;

igw_media_rc igw_media_get_stats(igw_media *m, const char *id, igw_media_stats *out);

typedef enum igw_media_event_kind {
    IGW_MEDIA_EV_ICE_CONNECTED,
    IGW_MEDIA_EV_ICE_FAILED,
    IGW_MEDIA_EV_DTLS_CONNECTED,
    IGW_MEDIA_EV_DTLS_FAILED,
    IGW_MEDIA_EV_FIRST_PACKET, /* source: first RTP in; viewer: first RTP out */
    IGW_MEDIA_EV_KEYFRAME,     /* source: keyframe in; viewer: video (re)started at a keyframe */
    IGW_MEDIA_EV_CLOSED,       /* the peer is gone; reason says why */
} igw_media_event_kind;

typedef struct igw_media_event {
    igw_media_event_kind kind;
    char     id[IGW_MEDIA_ID_MAX + 1];
    uint32_t revision;
    bool     is_source;
    char     reason[96];
    uint64_t at_us;              /* monotonic clock */
} igw_media_event;

/* Readable (an eventfd) while events are queued: wrap it in the caller's loop. */
int igw_media_event_fd(igw_media *m);

/* Takes the oldest event; false when none. The queue keeps at most 65536
 * events; beyond that the oldest are dropped and counted. */
bool igw_media_event_next(igw_media *m, igw_media_event *ev);

/* Name of an event kind ("ice-connected", ...). */
const char *igw_media_event_name(igw_media_event_kind kind);

#endif
