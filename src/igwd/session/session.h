/* session.h - the engine's core: application sessions and the legs they
 * hold, moved by the generated `session` machine on facts (the media
 * core's, the camera's, the application's report), each change stored
 * with its interaction.state event (docs/sessions.md, "Session life").
 * Names no purpose: what differs is the purpose's row and hooks
 * (purpose.h). On the engine's loop.
 *
 * Durability: every state change of a session and its interaction.state
 * event are one statement, fenced by this node's epoch; a result is
 * emitted through the outbox once its effect happened. */
#ifndef IGW_SESSION_SESSION_H
#define IGW_SESSION_SESSION_H

#include "session/live.h"

live_session *live_session_find(igw_engine *e, const char *id);

/* What a new session starts with (its row is written already). */
typedef struct live_session_init {
    const char *id, *endpoint;
    int64_t enterprise_id, user_id;
    igw_Purpose purpose;
    uint32_t guards;
    void *pdata;               /* the purpose's state, owned by the session from here on */
    const char *only_track;    /* subscribe's viewer: its one track, or NULL */
    bool ringing;              /* a door-bell's: ringing (its ring's deadline is its own), else invited */
} live_session_init;

/* A new invited (or ringing) session, linked and counted. NULL: out of
 * memory (pdata freed). */
live_session *live_session_new(igw_engine *e, const live_session_init *in);

/* The session joins the camera's shared leg, or a new leg (its own, or the
 * shared one the first viewer opens); ldata (owned) goes to a new leg. A
 * session that cannot have one ends (cameraUnreachable). */
void live_session_join_leg(igw_engine *e, live_session *s, const char *product_id, const char *device_name,
                           const char *camera_id, void *ldata);

/* The engine's gauge of sessions in state st moves by d. */
void live_session_count(igw_engine *e, igw_session_state st, int d);

/* Ends the session: its state event with the reason, the purpose's end,
 * the viewer closed, the leg released (the last viewer out says bye). */
void live_session_end(igw_engine *e, live_session *s, const char *reason);

/* The session's state (and its purpose's state_extra) to `to` from the
 * states in `from` (IGW_SESSION_* bits), with a reason (ended) or NULL. */
void live_session_write(igw_engine *e, const live_session *s, igw_session_state to, unsigned from,
                        const char *reason);
#define LIVE_FROM(st) (1u << (st))

/* An interaction.result for the command `token` of session sid, to its
 * endpoint: success (cls IGW_ERR_OK, data filled by the caller in *d) or
 * failure (reason). The session need not be live any more; sid "": an
 * open's, which has none. */
void live_session_result(igw_engine *e, const char *sid, const char *endpoint, const char *token,
                         igw_CommandMethod op, int cls, const char *reason, igw_ResultData *d);

/* interaction.control's result on s to endpoint: on success data state
 * (its name), result (the object written in w: what the operation did),
 * sessionId and mediaRevision; w failed to build is an internal error. */
void live_session_control_result(igw_engine *e, const live_session *s, const char *endpoint, const char *token,
                                 int cls, const char *reason, const char *state, const igw_jw *w);

/* The session holds every fact of `established` now: it moves there. */
void live_session_check(igw_engine *e, live_session *s);

/* Sets the core's gate on the viewer's uplink: open when its purpose may
 * publish, the purpose permits it (hook permitted) and the application has
 * not stopped it (s->uplink). Once its offer is answered; a no-op before.
 * When the call returns, no packet of a closed gate is forwarded any more.
 * false: the core could not set it (err says why). */
bool live_session_gate(igw_engine *e, live_session *s, char *err, size_t errlen);

/* When the viewer's last uplink packet was forwarded to the camera (Unix
 * ms, the media core's clock), 0 when none was: what a closed gate's log
 * line says (make bench-talk and bench-live read it). */
int64_t live_session_last_uplink_ms(igw_engine *e, const live_session *s);

/* The application's offer (s->offer, token offer_token) to the core; the
 * result carries the answer. Needs the leg's source. */
void live_session_offer(igw_engine *e, live_session *s);

/* The facts of the engine's sources, on the loop (engine.c): */
/* a viewer's media event (its DTLS, first packet, end) */
void live_session_media(igw_engine *e, live_session *s, const igw_media_event *ev);
/* a source's media event */
void live_leg_media_event(igw_engine *e, live_leg *leg, const igw_media_event *ev);

/* The leg ends: the camera gets a bye (when say_bye), the source closes, its
 * holder's gone() runs first (unless the holder cleared it: the holder
 * ending it itself), then every session on it ends with `reason`, and the
 * leg goes. */
void live_leg_end(igw_engine *e, live_leg *leg, const char *reason, bool say_bye, igw_ByeReason bye);

/* A device's message that names no leg (a protocol row `check ring`): the
 * purposes' `device` hooks are asked in turn; the one that takes it
 * answers through done exactly once, now or later. false: none took it. */
bool live_device_uplink(igw_engine *e, const igw_engine_uplink *u, live_device_done done, void *ctx);
/* Bytes a copy of u's strings takes (live_uplink_copy's buf), NULs
 * included. */
size_t live_uplink_size(const igw_engine_uplink *u);
/* *dst: u with its strings copied into buf (live_uplink_size(u) bytes),
 * each NUL-terminated; a NULL params or data stays NULL. */
void live_uplink_copy(igw_engine_uplink *dst, char *buf, const igw_engine_uplink *u);

/* Whether a device's message naming a leg (u->session_id) is this
 * node's to answer: the leg is here, or the method needs none (a byeReply,
 * a trackControlReply). false: another node may hold it (forward.h). */
bool live_uplink_here(igw_engine *e, const igw_engine_uplink *u);
/* a device's message on a leg: the reply's class, reason and data (in
 * e->jw, data_len set); *ready: a leg whose source now exists, for
 * live_legs_source_ready once the caller took the data */
int live_uplink(igw_engine *e, const igw_engine_uplink *u, const char **reason, const char **data, size_t *data_len,
                live_leg **ready);
void live_legs_source_ready(igw_engine *e, live_leg *leg);
/* the device went offline: its legs end (cameraOffline), no bye */
void live_legs_offline(igw_engine *e, const char *product_id, const char *device_name);
/* a fact from outside, for every purpose (purpose.h's live_fact_kind) */
void live_fact(igw_engine *e, int kind, const char *arg);
/* deadlines: invites, establishes, and every purpose's tick */
void live_tick(igw_engine *e, int64_t now_ms);

/* Closes every leg and session and each purpose's state (the engine
 * stops): nothing is written. */
void live_free_all(igw_engine *e);

#endif
