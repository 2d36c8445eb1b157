/* hooks.h - the hooks of a purpose's own behaviour (purpose.h tells the
 * whole contract): the engine calls them through its row of igw_purposes.
 * Every hook runs on the engine's loop; a NULL hook does nothing. */
#ifndef IGW_SESSION_HOOKS_H
#define IGW_SESSION_HOOKS_H

#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "session/decide.h"
#include "session/live.h"

typedef struct igw_CommandMethod_op live_op;

/* A fact from outside every session (the engine's sources of truth). */
typedef enum live_fact_kind {
    LIVE_FACT_CALL_CHANGED, /* the conference runtime says a call changed (arg: its callId, NULL: every call) */
} live_fact_kind;

struct igw_purpose_hooks {
    /* interaction.open, before anything is read: a refusal of what the
     * purpose does not open (a param it does not serve, a switch off):
     * true with *r filled. Sets the open's guards (IGW_PURPOSE_IF_*) the
     * params select in *guards. */
    bool (*check)(igw_engine *e, const igw_OpenParams *p, uint32_t *guards, live_refusal *r);
    /* The read found the endpoint, the rights and the camera: the purpose
     * admits the open with its own reads (the call's member, the catalog's
     * recording), filling o->open's session columns, pdata and ldata, then
     * calls live_op_admitted(o); or refuses (live_op_refuse). NULL: admitted. */
    void (*admit)(live_op *o);
    /* The camera is offline: what the refusal says (NULL: "the camera is offline"). */
    const char *offline_reason;
    /* A live camera sends at once: established waits for media to flow.
     * False: both transports up is enough (a player sends on play only). */
    bool establish_on_flow;
    /* The purpose's own condition of `established` (NULL: none). */
    bool (*ready)(const live_session *s);
    /* What its interaction.state events carry besides the state: a phase
     * of its own machine and a position (NULL and -1: none). */
    void (*state_extra)(const live_session *s, const char **phase, int64_t *position_ms);
    /* The leg's invite: what the purpose adds (ldata: the leg's). */
    void (*invite)(const void *ldata, igw_MediaInviteParams *p);
    /* The camera's offer of the session's leg was answered (the source exists). */
    void (*loaded)(igw_engine *e, live_session *s);
    /* The session moved to established (before its state is written). */
    void (*established)(igw_engine *e, live_session *s);
    /* Whether the purpose lets the viewer's uplink reach the camera now
     * (talk: the call's audio access). NULL: always, for a purpose that may
     * publish. The engine's gate also needs the uplink not stopped by the
     * application (machine uplink): live_session_gate. */
    bool (*permitted)(const live_session *s);
    /* interaction.control's operations of the purpose (the door-bell's
     * accept, decline, handover) on s; endpointControl is the engine's. The
     * hook answers o (live_op_accept or a refusal). NULL: refused. */
    void (*control)(live_op *o, live_session *s);
    /* A device message on the session's leg the engine does not take itself
     * (a reply to the purpose's own downlinks). */
    void (*uplink)(igw_engine *e, live_session *s, const igw_engine_uplink *u);
    /* A fact from outside. */
    void (*fact)(igw_engine *e, live_fact_kind kind, const char *arg);
    /* Every tick (deadlines, rechecks). */
    void (*tick)(igw_engine *e, int64_t now_ms);
    /* The session ends (its state is written already): work of the purpose
     * still pending for it fails. pdata is freed with the session after. */
    void (*end)(igw_engine *e, live_session *s, const char *reason);
    /* A device's message that names no leg (a protocol row `check ring`):
     * false when it is not the purpose's; else it answers through done
     * exactly once, now or later (live_device_uplink). */
    bool (*device)(igw_engine *e, const igw_engine_uplink *u, live_device_done done, void *ctx);
    /* The engine stops: its engine-wide state (e->pstate) goes. */
    void (*stop)(igw_engine *e);
};

#endif
