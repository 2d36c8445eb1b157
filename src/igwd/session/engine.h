/* engine.h - the session engine of this node: the one loop every session,
 * camera leg and media event lives on, and the WebRTC media core
 * (src/media/media.h) it drives (docs/sessions.md, "Threads and the owner
 * node").
 *
 * The engine runs its own thread (core/loop.h): HTTP workers and the MQTT
 * thread hand it work with igw_engine_post, and the media core's events
 * come to it through the core's event fd, wrapped in an h2o socket on that
 * loop. Packets never cross threads: the core forwards on its own.
 *
 * Built so far: the loop and the media core, their life and their
 * counters, and the devices' messages on legs (answered `unknown session`
 * until legs open, step 4). Sessions will be state of this loop.
 *
 * Threads: start and stop from the thread that owns the engine (app.c);
 * igw_engine_post, igw_engine_uplink_submit and igw_engine_stats_get from
 * any thread. */
#ifndef IGW_SESSION_ENGINE_H
#define IGW_SESSION_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "api.h"
#include "core/mqtt.h"
#include "json.h"
#include "media.h"
#include "session/node.h"

typedef struct igw_engine igw_engine;

/* Media events seen, by kind (igw_media_event_kind), and how many the
 * core's queue dropped before the engine read them. */
#define IGW_ENGINE_EVENT_KINDS (IGW_MEDIA_EV_CLOSED + 1)

typedef struct igw_engine_stats {
    unsigned media_threads; /* 0: no media core */
    uint64_t events[IGW_ENGINE_EVENT_KINDS];
    uint64_t invited, established; /* live sessions by state */
    uint64_t legs;                 /* camera legs open */
    uint64_t opened, ended;        /* sessions this process opened (open, subscribe) and ended */
} igw_engine_stats;

/* How the engine answers on a caller's thread: post(ctx, fn, arg) runs
 * fn(arg) there later and returns 0, or returns -1 (fn never runs). */
typedef struct igw_engine_back {
    int (*post)(void *ctx, void (*fn)(void *arg), void *arg);
    void *ctx;
} igw_engine_back;

/* A device's message on one of its legs (a protocol row `check session`:
 * mediaOffer, mediaState, bye, trackControlReply, byeReply,
 * playbackControlReply), already decoded, checked and stored by the edge. */
typedef struct igw_engine_uplink {
    const char *product_id, *device_name;
    igw_str method, msg_token, session_id;
    igw_str params; /* the JSON object, or ptr NULL */
    int64_t code;   /* a reply's code (0: none) */
    igw_str data;   /* a reply's data (JSON), or ptr NULL */
} igw_engine_uplink;

/* The engine's answer: the device's reply (its code from cls, msg the
 * reason, data a JSON object: mediaOfferReply's MediaAnswer). Valid during
 * the callback only. */
typedef struct igw_engine_answer {
    int cls;            /* igw_err */
    const char *reason; /* errors: specific and safe to send */
    const char *data;   /* NULL: none */
    size_t data_len;
} igw_engine_answer;

typedef void (*igw_engine_answer_cb)(void *arg, const igw_engine_answer *a);

/* Hands `u` (copied) to the engine's loop; done(arg, answer) then runs on
 * the caller's thread through `back` (copied). 0, or -1 when the engine
 * cannot take it (stopping, out of memory): done never runs. Any thread. */
int igw_engine_uplink_submit(igw_engine *e, const igw_engine_uplink *u, const igw_engine_back *back,
                             igw_engine_answer_cb done, void *arg);

/* What the engine needs from its node. Pointers must outlive the engine. */
typedef struct igw_engine_config {
    const igw_media_config *media; /* copied; NULL: no media core (sessions are refused) */
    const char *pg_dsn;            /* "" or NULL: no database (sessions are refused) */
    unsigned db_timeout_ms, probe_interval_ms, check_timeout_ms;
    const char *node_id;           /* this node's id (copied) */
    const igw_node_stats *node;    /* its epoch (0 until claimed) and whether it was fenced */
    _Atomic(igw_mqtt *) *mqtt;     /* the broker's client (NULL inside while there is none) */
    unsigned invite_timeout_ms, establish_timeout_ms, max_sessions;
    /* Talk (docs/talk.md): the conference runtime on the engine's own Redis
     * connection (redis_host "" or NULL, or im_standin false: none, and
     * ipcTalk is refused as unavailable). */
    const char *redis_host;
    unsigned redis_port;
    bool im_standin;
    unsigned im_heartbeat_ms;
    bool talk_enabled, talk_members;
    unsigned talk_recheck_ms; /* each talk session's member state read again at least this often */
} igw_engine_config;

/* The device's broker connection ended (a presence fact): its camera legs
 * end now, every session on them with the reason cameraOffline. 0, or -1
 * (stopping, out of memory). Any thread. */
int igw_engine_device_offline(igw_engine *e, const char *product_id, const char *device_name);

/* Starts the engine's loop and, with cfg->media, the media core (the
 * core's own reason in err when it refuses: an address it cannot use...).
 * NULL with err. */
igw_engine *igw_engine_start(const igw_engine_config *cfg, char *err, size_t errlen);

/* One /commands command of a `session` method (schema/commands.igw), after
 * the command room checked the endpoint and found no earlier acceptance of
 * its key. Every pointer stays valid until done runs; the engine copies
 * what it keeps. */
typedef struct igw_engine_cmd {
    const igw_Command *command;      /* decoded: method, sessionId, target, params */
    int64_t enterprise_id, user_id;  /* the caller */
    const char *endpoint_id, *msg_token, *method; /* method: the wire name */
    const char *fingerprint_hex;     /* the ledger's fingerprint of the canonical command */
    const char *canon;               /* the canonical command (stored as the acceptance) */
    const char *request_id;          /* for logs */
} igw_engine_cmd;

/* The engine's answer to a command: cls IGW_ERR_OK when accepted (durably:
 * the acceptance committed; the result follows as an event), or the
 * refusal; prior_fp non-NULL when the key was accepted before (the command
 * room answers the replay or the conflict). Valid during the callback. */
typedef struct igw_engine_cmd_answer {
    int cls;
    const char *reason, *path;
    const char *prior_fp;
} igw_engine_cmd_answer;

typedef void (*igw_engine_cmd_cb)(void *arg, const igw_engine_cmd_answer *a);

/* Hands a session command to the engine's loop; done(arg, answer) runs on
 * the caller's thread through `back`. 0, or -1 (stopping, out of memory):
 * done never runs. Any thread. */
int igw_engine_command_submit(igw_engine *e, const igw_engine_cmd *c, const igw_engine_back *back,
                              igw_engine_cmd_cb done, void *arg);

/* The media core's certificate fingerprint (SDP form), "" without media. */
const char *igw_engine_fingerprint(const igw_engine *e);

/* Runs fn(arg) on the engine's loop. 0, or -1 (stopping, out of memory:
 * fn never runs). */
int igw_engine_post(igw_engine *e, void (*fn)(void *arg), void *arg);

void igw_engine_stats_get(const igw_engine *e, igw_engine_stats *out);

/* The Prometheus families igw_media_up, igw_media_threads and
 * igw_media_events_total{kind} of `s`. */
void igw_engine_metrics_write(FILE *f, const igw_engine_stats *s);

/* Stops the media core (every peer closed, its events discarded) and the
 * loop, then frees. NULL is ignored. */
void igw_engine_stop(igw_engine *e);

#endif
