/* live.h - the engine's live state: the engine, its application sessions and
 * its camera legs. Private to the session room; each file that works on
 * them has its own header (session.h, leg.h, op.h, purpose.h).
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
#include "event/outbox.h"
#include "igwd/purposes.h"
#include "jw.h"
#include "machines.h"
#include "session/types.h"

/* Bytes of the ids the engine keeps (the schema's bounds). */
#define LIVE_ID_MAX IGW_Ident_MAX    /* a session or leg id, productID, deviceName, cameraId */
#define LIVE_TOKEN_MAX IGW_Token_MAX /* a command's msgToken */
/* The wake-up of a node's forwarded commands (forward.h), one channel for
 * every node, the payload the owner's node id (a node id is not a channel
 * name; a node ignores the others'). */
#define LIVE_FORWARD_CHANNEL "igw_forwards"
/* SQL: node `node` at epoch `epoch` is alive: that epoch is its current one
 * and its heartbeat is younger than `lapse` ms (node_lapse_ms). */
#define LIVE_SQL_NODE_UP(node, epoch, lapse)                                                                         \
    "EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = " node " AND n.epoch = " epoch                                  \
    " AND n.heartbeat_at >= now() - " lapse "::bigint * interval '1 millisecond')"

typedef struct live_leg live_leg;
typedef struct live_session live_session;
typedef struct live_vision live_vision; /* a vision source's state (vision.c) */
typedef struct igw_CommandMethod_op live_op;

/* What a file above the engine's core hangs on a session (its processors,
 * processor.h), reached from below through these: the session ends (it
 * releases what it holds, frees itself and clears the pointer); its vision
 * source lost its last covering consent (what looks through the camera
 * stops now). */
typedef struct live_attached {
    void (*end)(igw_engine *e, live_session *s);
    void (*vision_lost)(igw_engine *e, live_session *s);
} live_attached;

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
    igw_Purpose purpose;
    const igw_purpose *def;   /* its purpose's row (igw_purposes) */
    uint32_t guards;          /* IGW_PURPOSE_IF_* that held at the open: its tracks */
    void *pdata;              /* the purpose's own state (its hooks own it), or NULL */
    char id[LIVE_ID_MAX + 1]; /* also the viewer's id in the media core */
    char endpoint[LIVE_ID_MAX + 1];
    int64_t enterprise_id, user_id;
    uint32_t revision;        /* mediaRevision: its media generation */
    uint32_t prior_revision;  /* while a renegotiation's offer is not answered: the generation it replaces, else 0 */
    bool renegotiated;        /* a new generation answered: established again once its media flows */
    igw_session_state state;
    char only_track[LIVE_ID_MAX + 1]; /* subscribe: the one track it receives ("" : every track) */
    bool offered;             /* the application's offer reached the core */
    char *offer;              /* an offer waiting for the camera's source (owned), or NULL */
    char offer_token[LIVE_TOKEN_MAX + 1]; /* its command's msgToken */
    bool viewer_dtls, viewer_flowing, app_connected; /* the facts of `established` */
    igw_uplink_state uplink;  /* its own uplink (machine uplink): NONE when its purpose does not publish */
    bool gate_open;           /* what the core's gate on its uplink was last set to */
    int64_t deadline_ms;      /* establish deadline while invited (monotonic) */
    live_vision *vision;      /* its purpose says `vision`: the source's state (vision.h), else NULL */
    live_attached *processors; /* its processors (processor.h), or NULL */
};

/* One camera's upstream into the media core: shared by every viewer of the
 * camera (a purpose with `leg shared`), or one session's own. */
struct live_leg {
    live_leg *next;
    char id[LIVE_ID_MAX + 1]; /* also the source's id in the media core */
    char product_id[LIVE_ID_MAX + 1], device_name[LIVE_ID_MAX + 1], camera_id[LIVE_ID_MAX + 1];
    uint32_t revision;
    leg_phase phase;
    bool shared;
    /* The tracks asked of the camera: the purpose's rows whose guards held */
    const igw_purpose *def;
    uint32_t guards;
    void *ldata;              /* what the purpose adds to the invite (owned, free()d), or NULL */
    live_session *viewers;
    /* Held besides its viewers (a door-bell's anchor: the leg outlives a
     * handover's gap without viewers): it stays until its holder lets it
     * go (live_leg_end); when it ends otherwise (bye, failure, offline,
     * timeout), gone() tells the holder, before its viewers end. */
    void *holder;
    void (*gone)(igw_engine *e, live_leg *l, const char *reason);
    int64_t deadline_ms;      /* invite deadline while LEG_INVITED (monotonic) */
    int64_t linger_until_ms;  /* no viewer left: it ends then unless one joins (monotonic); 0: not lingering */
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
    _Atomic uint64_t n_ringing, n_invited, n_established, n_legs, n_opened, n_ended, n_revoked;
    /* door-bells: rings, and how each ended; the answers' latency (ms) summed */
    _Atomic uint64_t n_rings, n_rings_answered, n_rings_declined, n_rings_unanswered, answer_ms_sum;
    /* sessions */
    igw_engine_config cfg;    /* its strings point into the copies below */
    char node_id[IGW_NODE_ID_MAX + 1];
    char pg_dsn[IGW_CONFIG_DSN_MAX];
    igw_db *db;               /* on the loop; NULL: no database */
    igw_db *takes;            /* frame takes' locks (processor.c), opened on first need; NULL: none yet */
    char redis_host[IGW_CONFIG_HOST_MAX];
    char processor_bin[IGW_CONFIG_PATH_MAX];       /* the processor program, resolved (processor.c) */
    char translation_grammar[IGW_CONFIG_PATH_MAX];
    igw_redis *redis;         /* on the loop; NULL: no Redis */
    igw_call *call;           /* the conference runtime on db and redis; NULL: none wired */
    igw_redis *notices;       /* the runtime's change notices (a subscriber on IGW_CALL_CHANNEL) */
    live_session *sessions;
    unsigned nsessions;
    live_op *seated;          /* opens and subscribes holding a seat until their session exists (op.h) */
    unsigned nseated;
    bool rights_busy, rights_again; /* a rights check in flight; another one asked meanwhile (rights.h) */
    bool fwd_busy, fwd_again;       /* a claim of forwards in flight; another one asked meanwhile (forward.h) */
    bool fwd_orphans_busy;          /* the dead's forwards being answered (forward.h) */
    bool fwd_legs_busy;             /* the dead's legs being let go (forward.h) */
    struct live_fwd_wait *fwd_waits; /* camera messages handed to their leg's node, waiting for its answer */
    int64_t fwd_claimed_ms;         /* the last claim sent (igw_clock_ms) */
    int64_t rights_next_ms;   /* the periodic one (monotonic) */
    live_leg *legs;
    struct live_proc *procs;  /* processor processes, running and dying (child.h) */
    void *pstate[IGW_Purpose__COUNT]; /* each purpose's engine-wide state (its hooks own it) */
    h2o_timeout_t tick;       /* deadlines, checked every LIVE_TICK_MS */
    h2o_timeout_entry_t tick_entry;
    igw_jw jw;                /* bodies and downlinks, reused */
};

#define LIVE_TICK_MS 250

/* How a purpose answers a device's message that names no leg (hooks.h
 * `device`): the reply's class, reason and data (a JSON object, or NULL). */
typedef void (*live_device_done)(void *ctx, int cls, const char *reason, const char *data, size_t len);

/* A gauge or counter of the engine: one writer (the loop). */
static inline void live_add(_Atomic uint64_t *a, int64_t d)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + (uint64_t)d, memory_order_relaxed);
}

/* This node's epoch, 0 while it has none or was fenced. */
static inline int64_t live_node_epoch(const igw_engine *e)
{
    return atomic_load(&e->cfg.node->fenced) ? 0 : atomic_load(&e->cfg.node->epoch);
}

/* A fresh random id (base64url, 22 bytes). 0, or -1. */
static inline int live_new_id(char *out, size_t cap)
{
    return igw_outbox_new_id(out, cap);
}

#endif
