/* live.h - the engine's live state, shared by engine.c (the loop, the media
 * core's events, the devices' messages), leg.c (camera legs) and session.c
 * (application sessions and their commands). Private to the session room.
 *
 * Everything here lives on the engine's loop thread and is touched only
 * there (docs/sessions.md, "Threads and the owner node"). Counts are
 * bounded: at most max_sessions sessions, and a leg exists only while a
 * session holds it, so lists are walked linearly. */
#ifndef IGW_SESSION_LIVE_H
#define IGW_SESSION_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

#include "api.h"
#include "call/call.h"
#include "core/config.h"
#include "core/db.h"
#include "core/loop.h"
#include "jw.h"
#include "machines.h"
#include "session/engine.h"

#define LIVE_ID_MAX 64   /* bytes of a session or leg id (Ident) */
#define LIVE_NAME_MAX 64 /* productID, deviceName, cameraId (Ident) */
#define LIVE_EP_MAX 64   /* an endpointId */

typedef struct live_leg live_leg;
typedef struct live_session live_session;

/* Where a camera leg is (facts of the media core and the camera). */
typedef enum leg_phase {
    LEG_INVITED,   /* invite published, no offer yet */
    LEG_OFFERED,   /* the camera's offer answered: the core has the source */
    LEG_CONNECTED, /* the source's DTLS is up */
    LEG_FLOWING,   /* the source received its first packet */
} leg_phase;

/* An application participant's session: a viewer of one leg. */
struct live_session {
    live_session *next;     /* the engine's sessions */
    live_session *leg_next; /* the leg's viewers */
    live_leg *leg;
    char id[LIVE_ID_MAX + 1]; /* also the viewer's id in the media core */
    char endpoint[LIVE_EP_MAX + 1];
    int64_t enterprise_id, user_id;
    uint32_t revision;        /* mediaRevision */
    igw_session_state state;
    bool listen_audio;
    /* ipcTalk: the call the leg is bound to, the caller's join instance, and
     * the publish permission the media core enforces (its gate) */
    bool talk;
    char call_id[IGW_CALL_ID_MAX + 1];
    int64_t member_epoch;
    bool publish_allowed;
    bool checking;            /* a member read for it is in flight */
    int64_t checked_ms;       /* when its member state was last applied (monotonic) */
    char only_track[LIVE_ID_MAX + 1]; /* subscribe: the one track it receives ("" : every track) */
    /* recordPlayback: the recording (the catalog's facts at the open), the
     * `playback` machine's state and the camera's last position, and the
     * one playbackControl the camera has not answered yet */
    bool playback;
    char recording_id[LIVE_NAME_MAX + 1];
    int64_t recording_version, duration_ms;
    igw_playback_state pb_state;
    int64_t position_ms;
    char pb_token[130];       /* its command's msgToken ("": none in flight) */
    char pb_down[32];         /* the downlink's own token, which the camera's reply echoes */
    int pb_trigger;           /* igw_playback_trigger of that command */
    int64_t pb_deadline_ms;   /* the camera's reply is due (monotonic) */
    bool offered;             /* the application's offer reached the core */
    char *offer;              /* an offer waiting for the camera's source (owned), or NULL */
    char offer_token[130];    /* its command's msgToken (Token: 1..128 bytes) */
    bool viewer_dtls, viewer_flowing, app_connected; /* the facts of `established` */
    int64_t deadline_ms;      /* establish deadline while invited (monotonic) */
};

/* One camera's upstream into the media core, shared by its viewers. */
struct live_leg {
    live_leg *next;
    char id[LIVE_ID_MAX + 1]; /* also the source's id in the media core */
    char product_id[LIVE_NAME_MAX + 1], device_name[LIVE_NAME_MAX + 1], camera_id[LIVE_NAME_MAX + 1];
    uint32_t revision;
    leg_phase phase;
    bool audio;               /* the camera's microphone was asked for */
    bool speaker;             /* and its speaker (talk) */
    /* A playback leg: one viewer's own, never shared (its player is that
     * viewer's to play, pause and seek) */
    bool playback;
    char recording_id[LIVE_NAME_MAX + 1];
    int64_t recording_version;
    live_session *viewers;
    int64_t deadline_ms;      /* invite deadline while LEG_INVITED (monotonic) */
    char invite_token[32];    /* the invite's msgToken: sent again with it until the offer */
    int64_t resend_ms;        /* when it is sent again (monotonic) */
};

struct igw_engine {
    igw_loop *loop;
    h2o_evloop_t *evloop;
    igw_media *media;         /* NULL: no media */
    igw_media_config media_cfg;
    h2o_socket_t *events;     /* a dup of the core's event fd, DONT_READ: the core reads it */
    char fingerprint[160];
    char start_err[256];      /* the loop's init failure, for the caller */
    _Atomic uint64_t counts[IGW_ENGINE_EVENT_KINDS];
    /* gauges and counters for /metrics (written on the loop only) */
    _Atomic uint64_t n_invited, n_established, n_legs, n_opened, n_ended;
    /* sessions */
    igw_engine_config cfg;    /* its strings point into the copies below */
    char node_id[IGW_NODE_ID_MAX + 1];
    char pg_dsn[IGW_CONFIG_DSN_MAX];
    igw_db *db;               /* on the loop; NULL: no database */
    char redis_host[IGW_CONFIG_HOST_MAX];
    igw_redis *redis;         /* on the loop; NULL: no Redis */
    igw_call *call;           /* the conference runtime on db and redis; NULL: none wired (no talk) */
    igw_redis *notices;       /* the runtime's change notices (a subscriber on IGW_CALL_CHANNEL) */
    live_session *sessions;
    unsigned nsessions;
    live_leg *legs;
    int64_t pb_checked_ms;    /* the playbacks' catalog recheck: last sent (monotonic) */
    bool pb_checking;         /* one in flight */
    struct talk_cmd *talk_cmds; /* accepted joins and leaves the runtime has not answered yet (session.c) */
    h2o_timeout_t tick;       /* deadlines, checked every LIVE_TICK_MS */
    h2o_timeout_entry_t tick_entry;
    igw_jw jw;                /* bodies and downlinks, reused */
};

#define LIVE_TICK_MS 250

/* A gauge or counter of the engine: one writer (the loop). */
static inline void live_add(_Atomic uint64_t *a, int64_t d)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + (uint64_t)d, memory_order_relaxed);
}

/* ---- session.c ---- */
/* A command of a session method, on the loop (engine.c posts it). */
void live_command(igw_engine *e, const igw_engine_cmd *c, void (*answer)(void *ctx, const igw_engine_cmd_answer *a),
                  void *ctx);
live_session *live_session_find(igw_engine *e, const char *id);
/* The leg's facts changed: sessions that now hold every fact of
 * `established` move there. */
void live_sessions_check(igw_engine *e, live_leg *leg);
/* A viewer's media event (its DTLS, first packet, end). */
void live_session_media(igw_engine *e, live_session *s, const igw_media_event *ev);
/* Ends the session (state event with reason, viewer closed, leg released). */
void live_session_end(igw_engine *e, live_session *s, const char *reason);
/* The leg's source exists now: offers that waited for it are answered. */
void live_sessions_source_ready(igw_engine *e, live_leg *leg);
/* Deadlines of sessions, at each tick. */
void live_sessions_tick(igw_engine *e, int64_t now_ms);

/* The session's state change and its interaction.state event: to `to`
 * from the states `from` (an SQL array literal), with a reason (ended) or
 * NULL, a playback phase (recordPlayback) or NULL, a position or -1. */
void live_session_write(igw_engine *e, const live_session *s, const char *to, const char *from, const char *reason,
                        const char *playback, int64_t position_ms);
/* An interaction.result for the command `token` of session sid, to its
 * endpoint: success (cls IGW_ERR_OK, data filled by the caller in *d) or
 * failure (reason). The session need not be live any more. */
void live_session_result(igw_engine *e, const char *sid, const char *endpoint, const char *token,
                         igw_CommandMethod op, int cls, const char *reason, igw_ResultData *d);

/* ---- leg.c ---- */
/* The recording a playback leg plays. */
typedef struct live_recording {
    const char *recording_id;
    int64_t version;
    bool audio; /* it has sound */
} live_recording;
/* The camera's leg for (product, device, camera), opened (and the camera
 * invited) when there is none; with `rec`, always a new leg of its own that
 * plays it. NULL with *reason when it cannot be. */
live_leg *live_leg_get(igw_engine *e, const char *product_id, const char *device_name, const char *camera_id,
                       bool audio, bool speaker, const live_recording *rec, const char **reason);
/* Asks the camera's player of a playback leg to play, pause or seek
 * (positionMs); down_token gets the downlink's token. 0, or -1 when it
 * cannot be published. */
int live_leg_playback(igw_engine *e, live_leg *leg, igw_PlaybackOperation op, int64_t position_ms, char *down_token,
                      size_t cap);
/* The camera's leg is open without its microphone (audio) or its speaker
 * (speaker) when asked: a viewer that needs them cannot join it (asking
 * again would replace the source of its viewers). */
bool live_leg_lacks(igw_engine *e, const char *product_id, const char *device_name, const char *camera_id, bool audio,
                    bool speaker);
/* A viewer joins or leaves; the last one out closes the leg (bye to the camera). */
void live_leg_attach(live_leg *leg, live_session *s);
void live_leg_detach(igw_engine *e, live_leg *leg, live_session *s);
/* A device's message on a leg: the reply's class, reason and data (in
 * e->jw, data_len set). *ready: a leg whose source now exists; the caller
 * takes the data, then calls live_sessions_source_ready. */
int live_leg_uplink(igw_engine *e, const igw_engine_uplink *u, const char **reason, const char **data,
                    size_t *data_len, live_leg **ready);
/* A source's media event. */
void live_leg_media(igw_engine *e, live_leg *leg, const igw_media_event *ev);
live_leg *live_leg_find(igw_engine *e, const char *id);
void live_legs_tick(igw_engine *e, int64_t now_ms);
/* The device went offline: its legs end (cameraOffline), no bye. */
void live_legs_offline(igw_engine *e, const char *product_id, const char *device_name);
/* Closes every leg and session (the engine stops): nothing is written. */
void live_free_all(igw_engine *e);

/* ---- playback.c ---- */
/* The camera has loaded the recording of the playback leg (its offer). */
void live_playback_loaded(igw_engine *e, live_leg *leg);
/* The accepted playbackControl of session s goes to the camera. */
void live_playback_control(igw_engine *e, live_session *s, const char *token, igw_PlaybackOperation op,
                           int64_t position_ms);
/* The camera's playbackControlReply on a playback leg. */
void live_playback_reply(igw_engine *e, live_leg *leg, const igw_engine_uplink *u);
/* The session ends: a control still waiting for the camera fails. */
void live_playback_end(igw_engine *e, live_session *s, const char *reason);
/* Controls the camera did not answer in time fail; every second the
 * recordings being played are read again from the catalog, and a session
 * whose recording changed version or is gone ends (recordingChanged,
 * recordingRemoved). */
void live_playback_tick(igw_engine *e, int64_t now_ms);

/* ---- talk.c ---- */
/* The talk sessions' member state is read again (every talk_recheck_ms,
 * and at once for a call the runtime says changed: call_id, or NULL for
 * every call): a member no longer live in the join instance it opened in
 * ends its session (memberLeft; callEnded when the call ended), a changed
 * permission moves the media core's gate. */
void live_talk_recheck(igw_engine *e, const char *call_id);
void live_talk_tick(igw_engine *e, int64_t now_ms);
/* The session's offer was answered: its gate as its permission says. */
void live_talk_gate(igw_engine *e, live_session *s);

/* A fresh random id (base64url, 22 bytes). 0, or -1. */
int live_new_id(char *out, size_t cap);

#endif
