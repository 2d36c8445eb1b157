/* mediatypes.h - the media core's public types: what media.h's calls take
 * and return. Apart from media.h so that the core's internals (core.h,
 * peer.h), which media.c includes, can use them without including media.c's
 * own header back (tests/layers.sh: no circle between files). Include
 * media.h, not this, from outside src/media. */
#ifndef IGW_MEDIATYPES_H
#define IGW_MEDIATYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IGW_MEDIA_ID_MAX     63
#define IGW_MEDIA_SDP_MAX    16384 /* longest description written */
#define IGW_MEDIA_MAX_ADDRS  8
#define IGW_MEDIA_TAPS_MAX   4     /* destinations of one viewer's side audio */

typedef struct igw_media igw_media; /* one media core: its threads, peers and events */

/* igw_media_new's settings (igw_media_config_defaults fills them). */
typedef struct igw_media_config {
    unsigned    threads;                 /* media threads (1..16) */
    const char *addresses[IGW_MEDIA_MAX_ADDRS]; /* local addresses to gather on */
    unsigned    naddresses;              /* 0 = 127.0.0.1 */
    const char *announced_address;       /* written in candidates instead (1:1 NAT), NULL = none */
    uint16_t    port_min, port_max;      /* UDP port range, 0/0 = any */
    bool        ice_full;                /* full ICE instead of ICE-lite */
    bool        shared_socket;           /* ICE-lite peers share one UDP socket per thread and address (mux.h); default on */
    unsigned    consent_timeout_ms;      /* silence after which a connected peer fails */
    unsigned    connect_timeout_ms;      /* ICE + DTLS must complete within this */
    unsigned    keyframe_min_interval_ms; /* PLI/FIR toward a source at most this often */
    bool        fault_barrier;           /* tests: every viewer track change and gate fails (EFAIL) */
} igw_media_config;

/* What every call onto a media thread answers. */
typedef enum igw_media_rc {
    IGW_MEDIA_OK = 0,
    IGW_MEDIA_EINVAL = -1,   /* bad argument or unusable SDP (err says why) */
    IGW_MEDIA_ESTALE = -2,   /* mediaRevision older than (or equal to, for offers) the peer's */
    IGW_MEDIA_ENOENT = -3,   /* no such peer */
    IGW_MEDIA_ECONFLICT = -4, /* refused by the track-subscription machine */
    IGW_MEDIA_EFAIL = -5,    /* internal failure (sockets, crypto) */
} igw_media_rc;

/* What a viewer may do (igw_media_viewer_offer's flags). */
enum {
    IGW_MEDIA_VIEWER_PAUSED = 1u << 0,  /* its tracks start paused (trigger startVision) */
    IGW_MEDIA_VIEWER_PUBLISH = 1u << 1, /* it may send audio (talk: igw_media_viewer_publish) */
    IGW_MEDIA_VIEWER_SIDE = 1u << 2,    /* its audio is a side conversation (igw_media_viewer_tap) */
};

/* The kinds of a viewer's tracks a track operation names. */
typedef enum { IGW_MEDIA_AUDIO = 1, IGW_MEDIA_VIDEO = 2, IGW_MEDIA_BOTH = 3 } igw_media_kinds;

/* One peer's counters (igw_media_get_stats). */
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
    /* side conversation (IGW_MEDIA_VIEWER_SIDE): its published audio is
     * counted in talk_in / talk_gated / talk_forwarded (sent to the tap) */
    uint16_t side_port;          /* viewer: the loopback UDP port its feed is sent to, 0 = none */
    uint64_t feed_in;            /* viewer: feed packets received */
    uint64_t frames_taken;       /* plain-RTP viewer: frames its takes delivered */
} igw_media_stats;

/* The shared sockets of every media thread (media_shared_socket), summed. */
typedef struct igw_media_socket_stats {
    uint64_t checks, checks_refused; /* ICE checks received; of those, refused (wrong password, role) */
    uint64_t data, data_unknown;     /* other datagrams: a peer's, or from no peer's address */
    uint64_t sent, send_batches;     /* datagrams sent, in so many sendmmsg rounds */
    uint64_t send_dropped;           /* not sent: a full socket buffer, an unreachable address */
} igw_media_socket_stats;

/* What happened to a peer, later than the call that made it. */
typedef enum igw_media_event_kind {
    IGW_MEDIA_EV_ICE_CONNECTED,
    IGW_MEDIA_EV_ICE_FAILED,
    IGW_MEDIA_EV_DTLS_CONNECTED,
    IGW_MEDIA_EV_DTLS_FAILED,
    IGW_MEDIA_EV_FIRST_PACKET, /* source: first RTP in; viewer: first RTP out */
    IGW_MEDIA_EV_KEYFRAME,     /* source: keyframe in; viewer: video (re)started at a keyframe */
    IGW_MEDIA_EV_CLOSED,       /* the peer is gone; reason says why */
    IGW_MEDIA_EV_FRAME,        /* a plain-RTP viewer's frame take delivered its frame (rtp_ts) */
} igw_media_event_kind;

/* One queued event (igw_media_event_next). */
typedef struct igw_media_event {
    igw_media_event_kind kind;
    char     id[IGW_MEDIA_ID_MAX + 1];
    uint32_t revision;
    bool     is_source;
    char     reason[96];
    uint64_t at_us;              /* monotonic clock */
    uint32_t rtp_ts;             /* FRAME: the frame's RTP timestamp as the viewer received it */
} igw_media_event;

#endif
