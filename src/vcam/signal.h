/*
 * signal.h - how igw-vcam exchanges SDP with its peer.
 *
 * The camera is always the offerer: it hands a complete offer (ICE
 * candidates inside, no trickle) to the transport and gets the answer back.
 * Transports run on the GLib main loop of the calling thread and call back
 * on it. No GStreamer types here: a later transport speaks MQTT (invites and
 * mediaOffer uplinks) and should not need to know about pipelines.
 */
#ifndef IGW_VCAM_SIGNAL_H
#define IGW_VCAM_SIGNAL_H

#include <stddef.h>

/* The longest SDP a transport carries, and the longest stdio line. */
#define IGW_VCAM_SIGNAL_MAX (64 * 1024)

/* What the transport tells the camera, on the main loop. on_answer and
 * on_close are required. ops->destroy must not be called from inside one of
 * these callbacks (stop the loop, destroy after). */
typedef struct igw_vcam_signal_cbs {
    /* The peer's answer to the last offer (NUL-terminated SDP text). */
    void (*on_answer)(void *user, const char *sdp);
    /* The peer asks for a fresh offer (renegotiation). May be NULL. */
    void (*on_renegotiate)(void *user);
    /* The transport is gone: error is 0 for an orderly end (stdin EOF),
     * non-zero when it failed. The camera stops; nothing is sent after. */
    void (*on_close)(void *user, int error);
} igw_vcam_signal_cbs;

typedef struct igw_vcam_signal igw_vcam_signal;

/* What the camera asks of the transport. */
typedef struct igw_vcam_signal_ops {
    /* Sends an offer. Returns 0, or -1 when it could not be sent. */
    int (*send_offer)(igw_vcam_signal *sig, const char *sdp);
    /* Stops delivering callbacks and frees the transport. */
    void (*destroy)(igw_vcam_signal *sig);
} igw_vcam_signal_ops;

/* The base every transport embeds first. */
struct igw_vcam_signal {
    const igw_vcam_signal_ops *ops;
    igw_vcam_signal_cbs cbs;
    void *user;
};

/* The test transport: JSON lines on stdin/stdout.
 * Out: {"type":"offer","sdp":"..."}. In: {"type":"answer","sdp":"..."} and
 * {"type":"renegotiate"}; unknown types are logged and ignored, malformed
 * or over-long (> IGW_VCAM_SIGNAL_MAX) lines close the transport with an
 * error. Returns NULL (and logs why) if stdin cannot be watched. */
igw_vcam_signal *igw_vcam_signal_stdio_new(const igw_vcam_signal_cbs *cbs, void *user);

#endif
