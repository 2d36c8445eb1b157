/* types.h - what the session engine and its callers exchange (engine.h
 * has the functions and their contracts): its configuration, the device
 * messages and commands handed to it, its answers and counters. Types
 * only, so that the engine's own files can share them without the engine's
 * functions. */
#ifndef IGW_SESSION_TYPES_H
#define IGW_SESSION_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "call/call.h"
#include "core/mqtt.h"
#include "json.h"
#include "media.h"
#include "session/node.h"

typedef struct igw_engine igw_engine;

/* Media events seen, by kind (igw_media_event_kind), and how many the
 * core's queue dropped before the engine read them. */
#define IGW_ENGINE_EVENT_KINDS (IGW_MEDIA_EV_FRAME + 1)

typedef struct igw_engine_stats {
    unsigned media_threads; /* 0: no media core */
    uint64_t events[IGW_ENGINE_EVENT_KINDS];
    uint64_t invited, established; /* live sessions by state */
    uint64_t legs;                 /* camera legs open */
    uint64_t opened, ended;        /* sessions this process opened (open, subscribe) and ended */
    uint64_t revoked;              /* of those ended, because the user lost the device (rightsRevoked) */
    uint64_t ringing;              /* live door-bell sessions still ringing */
    uint64_t rings, rings_answered, rings_declined, rings_unanswered; /* door-bell rings; how their ringing ended */
    uint64_t answer_ms_sum;        /* ring to winning accept, summed over the answered rings (ms) */
    igw_media_socket_stats sockets; /* the media threads' shared sockets */
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

/* What the engine needs from its node. Pointers must outlive the engine. */
typedef struct igw_engine_config {
    const igw_media_config *media; /* copied; NULL: no media core (sessions are refused) */
    const char *pg_dsn;            /* "" or NULL: no database (sessions are refused) */
    unsigned db_timeout_ms, probe_interval_ms, check_timeout_ms;
    const char *node_id;           /* this node's id (copied) */
    const igw_node_stats *node;    /* its epoch (0 until claimed) and whether it was fenced */
    unsigned node_lapse_ms;        /* another node's heartbeat older than this: it is lost (forward.h) */
    _Atomic(igw_mqtt *) *mqtt;     /* the broker's client (NULL inside while there is none) */
    unsigned invite_timeout_ms, establish_timeout_ms, max_sessions;
    unsigned leg_linger_ms; /* a shared leg whose last viewer left stays up this long for the next open (0: none) */
    unsigned max_sessions_per_enterprise, max_sessions_per_user; /* 0: none */
    unsigned rights_recheck_ms; /* the safety net of the rights notifications (session/rights.h); 0: none */
    unsigned doorbell_ring_timeout_ms; /* a ring nobody accepted ends noAnswer (purposes/doorbell.c) */
    unsigned endpoint_grace_ms; /* a session's endpoint expired this long ago: no transfer, it ends endpointExpired */
    unsigned ai_session_max_ms; /* an AI session's deadline after its open (purposes/ai.c) */
    const char *processor_bin;  /* the processor program (copied; "" : igw-proc beside igwd) */
    const char *translation_grammar; /* its JSGF for translation (copied; "" : none) */
    /* Talk (docs/talk.md): the conference runtime on the engine's own Redis
     * connection (redis_host "" or NULL, or im_standin false: none, and
     * ipcTalk is refused as unavailable). */
    const char *redis_host;
    unsigned redis_port;
    bool im_standin;
    igw_call_standin_config standin; /* its settings (copied with the config) */
    bool talk_enabled, talk_members;
    unsigned talk_recheck_ms; /* each talk session's member state read again at least this often */
} igw_engine_config;

/* One /commands command of a `session` method (schema/commands.igw), after
 * the command room checked the endpoint and found no earlier acceptance of
 * its key, or at once for a method that `reads` them in the engine's own
 * read. Every pointer stays valid until done runs; the engine copies what
 * it keeps. */
typedef struct igw_engine_cmd {
    const igw_Command *command;      /* decoded: method, sessionId, target, params */
    int64_t enterprise_id, user_id;  /* the caller */
    const char *endpoint_id, *msg_token, *method; /* method: the wire name */
    const char *fingerprint_hex;     /* the ledger's fingerprint of the canonical command */
    const char *canon;               /* the canonical command (stored as the acceptance) */
    const char *request_id;          /* for logs */
    bool accepted;                   /* accepted already (on another node, forward.h): run it; a refusal
                                        becomes its result event */
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

#endif
