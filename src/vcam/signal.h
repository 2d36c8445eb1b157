/*
 * signal.h - how igw-vcam exchanges SDP with its peer.
 *
 * The camera is always the offerer: it hands a complete offer (ICE
 * candidates inside, no trickle) to the transport and gets the answer back.
 * Transports run on the GLib main loop of the calling thread and call back
 * on it. No GStreamer types here.
 *
 * Two transports: stdio (tests; one implicit peer, leg "" revision 0) and
 * MQTT (a device on the broker, docs/device-protocol.md "Media"): the
 * platform invites legs, each leg gets a fresh peer and one offer.
 */
#ifndef IGW_VCAM_SIGNAL_H
#define IGW_VCAM_SIGNAL_H

#include <stddef.h>
#include <stdint.h>

#include "devauth.h"

/* The longest SDP a transport carries, and the longest stdio line. */
#define IGW_VCAM_SIGNAL_MAX (64 * 1024)
/* Bytes of a leg id (sessionId), msgToken, cameraId, trackId, bye reason. */
#define IGW_VCAM_LEG_MAX 128
#define IGW_VCAM_TOKEN_MAX 128
#define IGW_VCAM_ID_MAX 64
#define IGW_VCAM_REASON_MAX 128
/* Tracks an invite may list. */
#define IGW_VCAM_TRACKS_MAX 4
/* Bytes of a recordingId (an Ident), and the entries or removed ids one
 * recording report carries at most. */
#define IGW_VCAM_RECORDING_ID_MAX 64
#define IGW_VCAM_REPORT_MAX 64

/* One track an invite asks for, as the platform named it. */
typedef struct igw_vcam_track {
    const char *id;    /* trackId: "video-1", "mic", "speaker" (what the camera plays) */
    const char *kind;  /* "video" or "audio" */
    const char *codec; /* "H264", "opus" */
} igw_vcam_track;

/* An invite: the platform asks for a leg (device transports only). All
 * strings are valid during the callback only. */
typedef struct igw_vcam_invite {
    const char *leg;       /* sessionId: the platform's leg id */
    const char *token;     /* its msgToken: a redelivered invite has the same */
    const char *camera_id;
    uint32_t revision;     /* mediaRevision, >= 1 */
    unsigned ntracks;      /* 1..IGW_VCAM_TRACKS_MAX */
    igw_vcam_track tracks[IGW_VCAM_TRACKS_MAX];
    /* params.recording: a playback leg of that recording (NULL: live). */
    const char *recording_id;
    int64_t recording_version;
} igw_vcam_invite;

/* One closed segment as the catalog report carries it (cameraId, the
 * codecs' names and available: true are the transport's). */
typedef struct igw_vcam_recording {
    const char *id;
    int64_t start_ms, end_ms; /* Unix ms of the first frame and of the end of the last */
    int64_t duration_ms;      /* the media's, <= end_ms - start_ms */
    int version;
    int audio; /* has an Opus track */
} igw_vcam_recording;

/* A voice message to play (an application's messageSend, the `play`
 * downlink or an element of a getReply's data.messages;
 * docs/messages.md). Strings are valid during the callback only. */
#define IGW_VCAM_URL_MAX 4096
typedef struct igw_vcam_play {
    const char *token;       /* the downlink's msgToken: what playReply echoes, what dedupes */
    const char *delivery_id; /* the application's id of the message */
    const char *kind;        /* "voiceMessage" or "broadcast" */
    int64_t expires_at_ms;   /* not played after it (answered 410) */
    const char *url;         /* the signed download link */
} igw_vcam_play;

/* playbackControl operations. */
typedef enum igw_vcam_playback_op { IGW_VCAM_PLAY, IGW_VCAM_PAUSE, IGW_VCAM_SEEK } igw_vcam_playback_op;

/* What a playbackControl did, for its reply. */
typedef struct igw_vcam_playback_result {
    int playing;         /* the state after it */
    int64_t position_ms; /* from the recording's start */
    char msg[128];       /* why, when not IGW_VCAM_CODE_OK */
} igw_vcam_playback_result;

/* trackControl results (the device protocol's codes). */
#define IGW_VCAM_CODE_OK 200
#define IGW_VCAM_CODE_BAD 100400      /* an operation other than pause/resume */
#define IGW_VCAM_CODE_NOTFOUND 100404 /* no such leg (or revision) or track */

/* What the transport tells the camera, on the main loop. on_answer and
 * on_close are required; the device callbacks are required by the MQTT
 * transport and never called by stdio. ops->destroy must not be called from
 * inside one of these callbacks (stop the loop, destroy after). */
typedef struct igw_vcam_signal_cbs {
    /* The peer's answer to the last offer of leg/revision (NUL-terminated SDP
     * text; stdio: leg "" and revision 0). The MQTT transport calls it only
     * for the reply to its outstanding offer with a matching sessionId and
     * mediaRevision. */
    void (*on_answer)(void *user, const char *leg, uint32_t revision, const char *sdp);
    /* The peer asks for a fresh offer (renegotiation). May be NULL. */
    void (*on_renegotiate)(void *user);
    /* The transport is gone: error is 0 for an orderly end (stdin EOF),
     * non-zero when it failed. The camera stops; nothing is sent after. */
    void (*on_close)(void *user, int error);

    /* ---- device transports ---- */
    /* The platform invites a leg. The camera answers with send_offer, or
     * send_bye (e.g. "cameraDeclined"). */
    void (*on_invite)(void *user, const igw_vcam_invite *inv);
    /* The platform refused the offer of leg/revision (non-200), or answered
     * it for another sessionId or mediaRevision; why says which. The leg
     * must go; no bye is owed. */
    void (*on_offer_failed)(void *user, const char *leg, uint32_t revision, const char *why);
    /* trackControl: pause (1) or resume (0) track of leg; revision is 0 when
     * the message had none. Returns IGW_VCAM_CODE_OK or _NOTFOUND; the
     * transport answers _BAD itself for other operations. */
    int (*on_track)(void *user, const char *leg, uint32_t revision, const char *track, int pause);
    /* The platform ends leg (maybe not the active one, or none). The
     * transport has answered byeReply already. */
    void (*on_bye)(void *user, const char *leg, const char *reason);
    /* Connected (the first time and after every reconnection), after the
     * capability went up. May be NULL. */
    void (*on_connected)(void *user);
    /* playbackControl on leg: op (position_ms for a seek, >= 0), revision 0
     * when the message had none. Fills r and returns IGW_VCAM_CODE_OK,
     * _NOTFOUND (no such playback leg or revision) or _BAD (r->msg says why);
     * the transport answers playbackControlReply with it. Required when
     * max_upstreams > 1 (a camera that records). */
    int (*on_playback)(void *user, const char *leg, uint32_t revision, igw_vcam_playback_op op,
                       int64_t position_ms, igw_vcam_playback_result *r);
    /* The reply to the recording report sent with token: code (200 or the
     * platform's refusal, msg then set or ""). May be NULL. */
    void (*on_recording_reply)(void *user, const char *token, int64_t code, const char *msg);
    /* A voice message to play, as often as the platform sends it (its
     * publish, then the `get` of a later connection): the camera dedupes by
     * token and answers with send_play_reply. May be NULL (messages are
     * then answered 501). */
    void (*on_play)(void *user, const igw_vcam_play *play);
} igw_vcam_signal_cbs;

typedef struct igw_vcam_signal igw_vcam_signal;

/* What the camera asks of the transport. */
typedef struct igw_vcam_signal_ops {
    /* Sends the offer of leg/revision (stdio ignores both). Returns 0, or -1
     * when it could not be sent. */
    int (*send_offer)(igw_vcam_signal *sig, const char *leg, uint32_t revision, const char *sdp);
    /* Reports leg's peer connection state ("connecting", "connected",
     * "disconnected", "failed", "closed"). NULL for stdio. 0 or -1. */
    int (*send_state)(igw_vcam_signal *sig, const char *leg, uint32_t revision, const char *state);
    /* Ends leg from the camera's side with reason. NULL for stdio. 0 or -1. */
    int (*send_bye)(igw_vcam_signal *sig, const char *leg, const char *reason);
    /* One recording report: recs (n <= IGW_VCAM_REPORT_MAX new or changed
     * entries) and removed (nremoved <= IGW_VCAM_REPORT_MAX ids), at least
     * one of them non-empty. The fresh msgToken goes to token (cap bytes).
     * NULL for stdio. 0, or -1 when not sent (not connected, too big). */
    int (*send_recordings)(igw_vcam_signal *sig, const igw_vcam_recording *recs, unsigned n,
                           const char *const *removed, unsigned nremoved, char *token, size_t cap);
    /* The door-bell button: {method ring, params {cameraId}} on
     * $media/up/doorbell/P/D; its ringReply is logged (the ring's
     * sessionId, or the refusal). The fresh msgToken goes to token (cap
     * bytes). NULL for stdio. 0, or -1 when not sent (not connected). */
    int (*send_ring)(igw_vcam_signal *sig, char *token, size_t cap);
    /* A play's answer: {method playReply, msgToken token, code[, msg]} on
     * $media/up/message/P/D (200 played, 410 expired, another code
     * failed; msg NULL or "" for none). NULL for stdio. 0 or -1. */
    int (*send_play_reply)(igw_vcam_signal *sig, const char *token, int code, const char *msg);
    /* Asks for the messages waiting for the camera (`get`, sent again
     * until answered), e.g. after it left plays unqueued. NULL for stdio. */
    void (*ask_messages)(igw_vcam_signal *sig);
    /* Stops delivering callbacks and frees the transport (MQTT: waits up to
     * a second for what was sent to be acknowledged, then disconnects). */
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

/* ---- MQTT: igw-vcam as a device ---- */

/* Who the camera is and where the broker is. Filled by the options and/or
 * igw_vcam_mqtt_config_read; checked by igw_vcam_mqtt_config_check. */
typedef struct igw_vcam_mqtt_config {
    char host[256];
    int port; /* 0: not set */
    char product[IGW_DEVAUTH_NAME_MAX + 1];
    char device[IGW_DEVAUTH_NAME_MAX + 1];
    char secret[IGW_DEVAUTH_SECRET_B64_MAX + 1]; /* base64 deviceSecret */
    char camera_id[IGW_VCAM_ID_MAX + 1];
    int microphone; /* the capability's microphone; also: "mic" tracks are offered */
    int speaker;    /* the capability's speaker; also: "speaker" tracks are played */
    int max_upstreams; /* the capability's maxUpstreams (0: 1) */
    int doorbell;      /* the capability's doorbell: it rings (send_ring) */
    int recordings;    /* the camera records: $media/down/recording is subscribed too */
    int keepalive_s;
} igw_vcam_mqtt_config;

/* Reads device.productID, device.deviceName, device.secret and, when
 * present, mqtt.host, mqtt.port and camera.cameraId from the JSON file at
 * path (var/demo.json as src/ops/provision.sh writes it; at most 1 MiB).
 * Only fields still empty in c are filled: options given before win.
 * Returns 0, or -1 with a message in err. */
int igw_vcam_mqtt_config_read(const char *path, igw_vcam_mqtt_config *c, char *err, size_t errlen);

/* Checks a complete configuration (names, a decodable secret that signs,
 * host and port, camera id). Returns 0, or -1 with a message in err. */
int igw_vcam_mqtt_config_check(const igw_vcam_mqtt_config *c, char *err, size_t errlen);

/* The device transport: libmosquitto with its own network thread; every
 * connect, disconnect and message is handed to the default main context and
 * handled there. Connects (clientID {P}&{D}, a fresh signed username and
 * password before every connection attempt) and keeps reconnecting with
 * backoff; on every CONNACK subscribes $media/down/{session,capability,message}/P/D
 * (QoS 1; with c->recordings $media/down/recording/P/D too), reports the
 * capability, asks for the messages waiting for it (`get`, sent again
 * until answered) and calls on_connected. Messages over IGW_VCAM_SIGNAL_MAX + 4
 * KiB, malformed JSON and unknown methods are logged and dropped. c is
 * copied. Returns NULL (logged) when libmosquitto cannot be set up; an
 * unreachable broker is not an error (it is retried). */
igw_vcam_signal *igw_vcam_signal_mqtt_new(const igw_vcam_mqtt_config *c, const igw_vcam_signal_cbs *cbs,
                                          void *user);

#endif
