/* core.h - the media core's internal types, shared by media.c (threads, the
 * public calls), registry.c (the peers by id, the event queue) and forward.c
 * (sources, viewers, the packet path). Types only: each of those files
 * declares its functions in its own header. Not installed; nothing outside
 * src/media includes it. */
#ifndef IGW_MEDIA_CORE_H
#define IGW_MEDIA_CORE_H

#include <gio/gio.h>
#include <glib.h>

#include "dtls.h"
#include "machines.h"
#include "mediatypes.h"
#include "peer.h"
#include "rtp.h"
#include "sdp.h"

enum { TRACK_AUDIO = 0, TRACK_VIDEO = 1, TRACK_KINDS = 2 };

/* A media thread: its main context runs every peer placed on it. */
typedef struct igw_mthread {
    igw_media    *m;
    unsigned      index;
    GMainContext *ctx;
    GMainLoop    *loop;
    GThread      *thread;
    GSource      *tick;
    GQueue        nodes; /* every node on this thread, for the tick */
    struct igw_mux *mux[IGW_MEDIA_MAX_ADDRS]; /* cfg.shared_socket: one per address */
    unsigned      nmux;
} igw_mthread;

struct igw_media {
    igw_media_config cfg;
    char           **addresses;    /* owned copies of cfg.addresses */
    char            *announced;
    igw_dtls_cert   *cert;
    igw_mthread     *threads;
    unsigned         nthreads;
    unsigned         next_thread;
    GMutex           lock;         /* registry, event queue (registry.c) and next_thread */
    GHashTable      *registry;     /* id -> igw_node*, freed only on its thread */
    GQueue           events;
    uint64_t         events_dropped;
    int              efd;
};

/* What a source receives, per kind. */
typedef struct src_track {
    bool             present;
    uint8_t          pt;
    uint32_t         clock;
    igw_h264_profile profile;
    char             fmtp[256];
    uint32_t         ssrc;
    bool             have_ssrc;
    uint32_t         epoch;          /* bumped when the source's SSRC changes */
    igw_rtp_history *history;        /* video: answers every viewer's NACKs */
    uint64_t         last_pli_us;
    bool             pli_pending;
    bool             keyframe_wanted; /* a PLI went out: report the next keyframe */
    uint32_t         ext_max;        /* extended highest sequence number (this SSRC) */
    /* Reception statistics for our receiver reports (RFC 3550 6.4.1, A.3, A.8). */
    uint32_t         ext_base;       /* extended seq of the first packet of this SSRC */
    uint64_t         received, expected_prior, received_prior;
    uint32_t         jitter_q4;      /* interarrival jitter x 16 */
    uint32_t         transit;        /* arrival - timestamp of the previous packet */
    bool             have_transit;
    uint32_t         lsr;            /* middle 32 bits of the source's last SR, 0 = none */
    uint64_t         lsr_at_us;
} src_track;

/* What a viewer is sent, per kind. */
typedef struct view_track {
    bool             present;
    int              state;          /* igw_track_state (generated machine `track`) */
    uint8_t          pt;             /* the viewer's payload type */
    uint32_t         ssrc;           /* our SSRC toward this viewer */
    char             mid[33];
    igw_rtp_rewriter rw;
    uint32_t         epoch;          /* source epoch the mapping follows */
    bool             waiting_keyframe;
    uint32_t         packets, octets;
} view_track;

/* Source: the talkback, our one stream toward the camera's speaker. */
typedef struct talkback {
    bool             present;
    uint8_t          pt;             /* the camera's Opus payload type */
    uint32_t         ssrc;           /* ours */
    igw_rtp_floor    floor;          /* who is heard, and the continuous numbering */
} talkback;

/* Viewer: the audio it publishes toward its source's talkback. */
typedef struct view_pub {
    bool             present;        /* negotiated: we receive its Opus */
    bool             allowed;        /* the gate (igw_media_viewer_publish), closed by default */
    uint8_t          pt;             /* the viewer's Opus payload type */
    uint8_t          level_ext;      /* its audio-level extension id, 0 = not negotiated */
} view_pub;

/* Viewer: its side conversation (IGW_MEDIA_VIEWER_SIDE: the AI session's
 * assistant). The audio it publishes goes to the tap while its gate is
 * open; the audio it receives is the feed's. Or a publishing viewer's
 * interpreter (`interpret`, opened by its first tap): while a tap is set
 * its published audio goes to the taps instead of the talkback, and the
 * feed goes to the talkback in its place. Both are plain RTP on one
 * loopback socket of its own, handed to its next generation. */
typedef struct view_side {
    bool             present;
    bool             interpret;      /* an interpreter of its talk, not a side conversation */
    GSocket         *sock;           /* bound on 127.0.0.1: the feed arrives, the tap leaves */
    GSource         *sock_src;
    uint16_t         port;           /* its bound port (the feed's destination) */
    GSocketAddress  *taps[IGW_MEDIA_TAPS_MAX]; /* where the published audio goes (NULL slots: none) */
    src_track        feed;           /* the feed's stream (Opus): SSRC and epoch */
} view_side;

typedef struct igw_node {
    char             id[IGW_MEDIA_ID_MAX + 1];
    uint32_t         revision;
    bool             is_source;
    igw_media       *m;
    igw_mthread     *t;
    GList            link;           /* in t->nodes */
    igw_peer        *peer;           /* NULL for a plain RTP source */
    GSocket         *sock;           /* plain RTP source */
    GSource         *sock_src;
    bool             closing;
    GSource         *close_src;
    char             close_reason[96];
    bool             first_packet;
    igw_media_stats  st;
    uint32_t         rtcp_ssrc;      /* our SSRC in RTCP toward this peer */
    uint64_t         last_sr_us;     /* last sender (viewer) or receiver (source) report */
    uint32_t         rtx_budget;     /* viewer: retransmissions left until the next tick */
    /* source */
    src_track        src[TRACK_KINDS];
    talkback         talk;
    struct igw_node **viewers;
    size_t           nviewers, capviewers;
    /* viewer */
    struct igw_node *source;
    view_track       view[TRACK_KINDS];
    view_pub         pub;
    view_side        side;
    bool             offered;        /* we made the offer, waiting for the answer */
    /* plain-RTP viewer (igw_media_viewer_rtp): no peer, its video to dest */
    GSocketAddress  *dest;
    bool             take;           /* a frame take waits for its keyframe's frame */
} igw_node;

#endif
