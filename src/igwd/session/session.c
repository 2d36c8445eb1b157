/* session.c - see session.h: sessions on the engine's loop and the facts
 * that move them. */
#include "session/session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "core/log.h"
#include "event/outbox.h"
#include "session/decide.h"
#include "session/leg.h"
#include "igwd/state_sql.h"
#include "protocol.h"
#include "session/hooks.h"
#include "session/child.h"
#include "session/vision.h"

#define ANSWER_MAX (64 * 1024)

/* A state change ($2: the state, $3: the states it may come from, $4: the
 * reason or ''; $8: a phase of the purpose's machine and $9: a position, ''
 * to keep them; $10: the media generation of an established event, or '')
 * with event_seq + 1 and its interaction.state event {msgToken
 * "<sessionId>.<eventSeq>", method, sessionId, eventSeq, data} delivered to
 * the session's endpoint (none when it expired: the session still changes),
 * fenced by this node's epoch. An ended session's event has no phase. */
enum { TR_SID, TR_TO, TR_FROM, TR_REASON, TR_NODE, TR_EPOCH, TR_DID, TR_PHASE, TR_POS, TR_REV, TR__N };
static const igw_db_stmt st_transition = {
    "igw_session_transition",
    "WITH me AS (SELECT 1 FROM nodes WHERE node_id = $5::text AND epoch = $6::bigint FOR SHARE), "
    "upd AS (UPDATE sessions s SET state = $2::text, reason = NULLIF($4::text, ''), event_seq = s.event_seq + 1, "
    "        updated_at = now(), deadline_ms = NULL, playback = COALESCE(NULLIF($8::text, ''), s.playback), "
    "        position_ms = COALESCE(NULLIF($9::text, '')::bigint, s.position_ms), "
    "        media_revision = COALESCE(NULLIF($10::text, '')::bigint, s.media_revision) "
    "        WHERE s.session_id = $1::text AND s.state = ANY ($3::text[]) AND s.owner_node = $5::text "
    "          AND s.owner_epoch = $6::bigint AND EXISTS (SELECT 1 FROM me) "
    "        RETURNING s.session_id AS sid, s.endpoint_id AS ep, s.event_seq AS seq, s.state AS state, "
    "                  CASE WHEN s.state <> 'ended' THEN s.playback END AS playback, "
    "                  CASE WHEN s.state <> 'ended' THEN s.position_ms END AS pos, s.reason AS reason, "
    "                  NULL::text AS invite, NULL::text AS camera, NULL::text AS pid, NULL::text AS dn, "
    "                  NULLIF($10::text, '')::bigint AS rev), "
    IGW_SQL_STATE_EVENTS("$7::text")
    "SELECT (SELECT count(*) FROM upd), (SELECT count(*) FROM dl), (SELECT count(*) FROM ntf), "
    "       (SELECT count(*) FROM ev)",
    TR__N};

static const struct igw_purpose_hooks *hooks_of(const live_session *s)
{
    return s->def->hooks;
}

live_session *live_session_find(igw_engine *e, const char *id)
{
    for (live_session *s = e->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

live_session *live_session_new(igw_engine *e, const live_session_init *in)
{
    live_session *s = calloc(1, sizeof *s);
    if (!s) {
        free(in->pdata);
        return NULL;
    }
    snprintf(s->id, sizeof s->id, "%s", in->id);
    snprintf(s->endpoint, sizeof s->endpoint, "%s", in->endpoint);
    s->enterprise_id = in->enterprise_id;
    s->user_id = in->user_id;
    s->purpose = in->purpose;
    s->def = &igw_purposes[in->purpose];
    s->guards = in->guards;
    s->pdata = in->pdata;
    s->revision = 1;
    s->state = in->ringing ? IGW_SESSION_RINGING : IGW_SESSION_INVITED;
    if (in->only_track)
        snprintf(s->only_track, sizeof s->only_track, "%s", in->only_track);
    s->deadline_ms = igw_clock_ms() + e->cfg.establish_timeout_ms;
    if (s->def->vision && !(s->vision = live_vision_new(e))) {
        free(in->pdata);
        free(s);
        return NULL;
    }
    s->next = e->sessions;
    e->sessions = s;
    e->nsessions++;
    live_add(in->ringing ? &e->n_ringing : &e->n_invited, 1);
    live_add(&e->n_opened, 1);
    return s;
}

void live_session_count(igw_engine *e, igw_session_state st, int d)
{
    if (st == IGW_SESSION_RINGING)
        live_add(&e->n_ringing, d);
    else if (st == IGW_SESSION_INVITED)
        live_add(&e->n_invited, d);
    else if (st == IGW_SESSION_ESTABLISHED)
        live_add(&e->n_established, d);
}

static void session_unlink(igw_engine *e, live_session *s)
{
    for (live_session **p = &e->sessions; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            e->nsessions--;
            return;
        }
}

/* ---- events ------------------------------------------------------------------- */

typedef struct write_ctx {
    char what[48];
    char sid[LIVE_ID_MAX + 1];
} write_ctx;

static void on_transition(void *arg, const PGresult *res, const char *err)
{
    write_ctx *w = arg;
    if (!res)
        igw_log(IGW_LOG_ERROR, NULL, "session %s: %s not stored: %s", w->sid, w->what, err);
    else if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "1") != 0)
        igw_log(IGW_LOG_WARN, NULL, "session %s: %s: the row is not this node's any more (or ended)", w->sid,
                w->what);
    free(w);
}

void live_session_write(igw_engine *e, const live_session *s, igw_session_state to, unsigned from,
                        const char *reason)
{
    write_ctx *w = calloc(1, sizeof *w);
    char did[32], epoch[24], pos[24] = "", rev[24] = "", states[64] = "{";
    const char *to_name = igw_sm_session.states[to];
    if (!w || live_new_id(did, sizeof did)) {
        free(w);
        igw_log(IGW_LOG_ERROR, NULL, "session %s: %s not stored: out of memory", s->id, to_name);
        return;
    }
    /* The states it may come from, as an SQL array literal of the machine's names. */
    for (int st = 0; st < igw_sm_session.nstates; st++)
        if (from & LIVE_FROM(st))
            snprintf(states + strlen(states), sizeof states - strlen(states), "%s%s", states[1] ? "," : "",
                     igw_sm_session.states[st]);
    snprintf(states + strlen(states), sizeof states - strlen(states), "}");
    const char *phase = NULL;
    int64_t position_ms = -1;
    if (to != IGW_SESSION_ENDED && hooks_of(s)->state_extra)
        hooks_of(s)->state_extra(s, &phase, &position_ms);
    snprintf(w->what, sizeof w->what, "%s", to_name);
    snprintf(w->sid, sizeof w->sid, "%s", s->id);
    snprintf(epoch, sizeof epoch, "%" PRId64, atomic_load(&e->cfg.node->epoch));
    if (position_ms >= 0)
        snprintf(pos, sizeof pos, "%" PRId64, position_ms);
    if (to == IGW_SESSION_ESTABLISHED)
        snprintf(rev, sizeof rev, "%" PRIu32, s->revision);
    const char *v[TR__N] = {[TR_SID] = s->id, [TR_TO] = to_name, [TR_FROM] = states,
                            [TR_REASON] = reason ? reason : "", [TR_NODE] = e->node_id, [TR_EPOCH] = epoch,
                            [TR_DID] = did, [TR_PHASE] = phase ? phase : "", [TR_POS] = pos, [TR_REV] = rev};
    if (igw_db_exec(e->db, &st_transition, v, NULL, NULL, on_transition, w) != 0) {
        igw_log(IGW_LOG_ERROR, NULL, "session %s: %s not stored: the database queue is full", s->id, to_name);
        free(w);
    }
}

typedef struct emit_ctx {
    char sid[LIVE_ID_MAX + 1];
    char token[LIVE_TOKEN_MAX + 1];
} emit_ctx;

static void on_emitted(void *arg, const igw_outbox_result *r)
{
    emit_ctx *x = arg;
    if (r->status != IGW_OUTBOX_OK && r->status != IGW_OUTBOX_DUPLICATE)
        igw_log(r->status == IGW_OUTBOX_ERROR ? IGW_LOG_ERROR : IGW_LOG_INFO, NULL,
                "session %s: the result of %s not delivered: %s", x->sid, x->token,
                r->status == IGW_OUTBOX_ERROR ? (r->err ? r->err : "database error") : "the endpoint is gone");
    free(x);
}

void live_session_result(igw_engine *e, const char *sid, const char *endpoint, const char *token,
                         igw_CommandMethod op, int cls, const char *reason, igw_ResultData *d)
{
    /* sid "": an open refused after its acceptance (on the node it was
     * forwarded to) has no session */
    igw_ResultEvent ev = {.has = IGW_ResultEvent__REQUIRED | (sid[0] ? IGW_ResultEvent_sessionId : 0),
                          .msgToken = igw_str_of(token),
                          .method = IGW_ResultMethod_interaction_result,
                          .sessionId = igw_str_of(sid),
                          .code = igw_error_classes[cls].code,
                          .data = *d};
    ev.data.has |= IGW_ResultData_operation;
    ev.data.operation = op;
    if (cls != IGW_ERR_OK) {
        ev.data.has = IGW_ResultData_operation | IGW_ResultData_reason;
        ev.data.reason = igw_str_of(reason);
    }
    igw_jw_reset(&e->jw);
    igw_encode_ResultEvent(&e->jw, &ev);
    emit_ctx *x = calloc(1, sizeof *x);
    if (igw_jw_status(&e->jw) || !x) {
        free(x);
        igw_log(IGW_LOG_ERROR, NULL, "session %s: the result of %s not emitted: out of memory", sid, token);
        return;
    }
    snprintf(x->sid, sizeof x->sid, "%s", sid);
    snprintf(x->token, sizeof x->token, "%s", token);
    igw_outbox_event oe = {.endpoint_id = endpoint, .msg_token = token, .session_id = sid,
                           .body = e->jw.buf, .body_len = e->jw.len};
    if (igw_outbox_emit(e->db, &oe, on_emitted, x) != 0) {
        igw_log(IGW_LOG_ERROR, NULL, "session %s: the result of %s not emitted: the database queue is full", sid,
                token);
        free(x);
    }
}

/* ---- the machine ----------------------------------------------------------------- */

/* The leg goes with its last viewer: a bye (noViewers) and the source closed. */
static void leg_release(igw_engine *e, live_session *s)
{
    live_leg *leg = s->leg;
    if (!leg || live_leg_detach(leg, s) || leg->holder)
        return;
    if (leg->shared && e->cfg.leg_linger_ms) { /* up a while for the next open of the camera: it joins warm */
        leg->linger_until_ms = igw_clock_ms() + e->cfg.leg_linger_ms;
        igw_log(IGW_LOG_INFO, NULL, "session: leg %s: no viewer left, lingering %u ms", leg->id, e->cfg.leg_linger_ms);
        return;
    }
    igw_log(IGW_LOG_INFO, NULL, "session: leg %s: no viewer left, bye", leg->id);
    live_leg_bye(e, leg, IGW_ByeReason_noViewers);
    live_leg_free(e, leg, false);
}

void live_session_end(igw_engine *e, live_session *s, const char *reason)
{
    if (s->state == IGW_SESSION_ENDED)
        return;
    igw_err err;
    igw_session_state next = igw_session_next(s->state, IGW_SESSION_ON_FAIL, 0, &err);
    if (next != IGW_SESSION_ENDED)
        return; /* the machine forbids it: never happens for `fail` */
    live_session_count(e, s->state, -1);
    live_add(&e->n_ended, 1);
    s->state = next;
    live_session_write(e, s, IGW_SESSION_ENDED,
                       LIVE_FROM(IGW_SESSION_RINGING) | LIVE_FROM(IGW_SESSION_INVITED) |
                           LIVE_FROM(IGW_SESSION_ESTABLISHED),
                       reason);
    if (s->offer) { /* an accepted mediaOffer still waiting for the camera: its result, a failure */
        char why[96];
        snprintf(why, sizeof why, "the session ended before the camera's media (%s)", reason);
        igw_ResultData d = {0};
        live_session_result(e, s->id, s->endpoint, s->offer_token, IGW_CommandMethod_interaction_mediaOffer,
                            IGW_ERR_CONFLICT, why, &d);
    }
    if (hooks_of(s)->end)
        hooks_of(s)->end(e, s, reason);
    if (s->processors)
        s->processors->end(e, s);
    live_vision_ended(e, s);
    igw_log(IGW_LOG_INFO, NULL, "session %s ended: %s", s->id, reason);
    if (s->offered && e->media)
        (void)igw_media_close(e->media, s->id, reason);
    session_unlink(e, s);
    leg_release(e, s);
    free(s->offer);
    free(s->pdata);
    free(s->vision);
    free(s);
}

void live_session_check(igw_engine *e, live_session *s)
{
    live_vision_flowing(e, s); /* the vision track follows the camera's media */
    if (s->state == IGW_SESSION_ESTABLISHED && s->renegotiated && s->viewer_dtls &&
        (s->viewer_flowing || !hooks_of(s)->establish_on_flow)) {
        /* The new generation's media flows (or, for a purpose that sends
         * nothing until asked, its transport is up): established again. */
        s->renegotiated = false;
        if (igw_session_next(s->state, IGW_SESSION_ON_RENEGOTIATE, 0, NULL) == IGW_SESSION_ESTABLISHED) {
            live_vision_established(e, s);
            live_session_write(e, s, IGW_SESSION_ESTABLISHED, LIVE_FROM(IGW_SESSION_ESTABLISHED), NULL);
            igw_log(IGW_LOG_INFO, NULL, "session %s: media generation %" PRIu32 " flows", s->id, s->revision);
        }
        return;
    }
    if (s->state != IGW_SESSION_INVITED || !s->leg)
        return;
    const struct igw_purpose_hooks *h = hooks_of(s);
    live_media_facts f = {.leg_connected = s->leg->phase >= LEG_CONNECTED,
                          .leg_flowing = s->leg->phase == LEG_FLOWING,
                          .viewer_dtls = s->viewer_dtls,
                          .viewer_flowing = s->viewer_flowing,
                          .app_connected = s->app_connected,
                          .purpose_ready = !h->ready || h->ready(s)};
    if (!live_negotiated(&f, h->establish_on_flow))
        return;
    igw_err err;
    igw_session_state next = igw_session_next(s->state, IGW_SESSION_ON_ESTABLISH, IGW_SESSION_IF_NEGOTIATED, &err);
    if (next != IGW_SESSION_ESTABLISHED)
        return;
    s->state = next;
    live_add(&e->n_invited, -1);
    live_add(&e->n_established, 1);
    if (h->established)
        h->established(e, s);
    live_vision_established(e, s);
    live_session_write(e, s, IGW_SESSION_ESTABLISHED, LIVE_FROM(IGW_SESSION_INVITED), NULL);
    igw_log(IGW_LOG_INFO, NULL, "session %s established", s->id);
}

static void leg_check(igw_engine *e, live_leg *leg)
{
    for (live_session *s = leg->viewers, *n; s; s = n) {
        n = s->leg_next;
        live_session_check(e, s);
    }
}

void live_session_media(igw_engine *e, live_session *s, const igw_media_event *ev)
{
    if (ev->revision != s->revision)
        return;
    switch (ev->kind) {
    case IGW_MEDIA_EV_DTLS_CONNECTED:
        igw_log(IGW_LOG_DEBUG, NULL, "session %s: its peer (generation %" PRIu32 ") connected", s->id, ev->revision);
        s->viewer_dtls = true;
        live_vision_connected(s);
        live_session_check(e, s);
        break;
    case IGW_MEDIA_EV_FIRST_PACKET:
        igw_log(IGW_LOG_DEBUG, NULL, "session %s: its first packet sent (%s)", s->id, ev->reason);
        s->viewer_flowing = true;
        live_session_check(e, s);
        break;
    case IGW_MEDIA_EV_ICE_FAILED:
    case IGW_MEDIA_EV_DTLS_FAILED:
    case IGW_MEDIA_EV_CLOSED:
        igw_log(IGW_LOG_INFO, NULL, "session %s: its peer (generation %" PRIu32 ") failed: %s", s->id, ev->revision,
                ev->reason);
        live_session_end(e, s, "viewerFailed");
        break;
    case IGW_MEDIA_EV_ICE_CONNECTED:
    case IGW_MEDIA_EV_KEYFRAME:
    case IGW_MEDIA_EV_FRAME:
        break;
    }
}

void live_session_control_result(igw_engine *e, const live_session *s, const char *endpoint, const char *token,
                                 int cls, const char *reason, const char *state, const igw_jw *w)
{
    igw_ResultData d = {0};
    if (cls == IGW_ERR_OK && !igw_jw_status(w)) {
        d.has = IGW_ResultData_state | IGW_ResultData_result | IGW_ResultData_sessionId | IGW_ResultData_mediaRevision;
        d.state = igw_str_of(state);
        d.result = (igw_str){w->buf, w->len};
        d.sessionId = igw_str_of(s->id);
        d.mediaRevision = s->revision;
    } else if (cls == IGW_ERR_OK) {
        cls = IGW_ERR_INTERNAL;
        reason = "out of memory";
    }
    live_session_result(e, s->id, endpoint, token, IGW_CommandMethod_interaction_control, cls, reason, &d);
}

/* ---- legs ------------------------------------------------------------------------ */

void live_session_join_leg(igw_engine *e, live_session *s, const char *pid, const char *dn, const char *cam,
                           void *ldata)
{
    const char *why = NULL;
    live_leg *leg = s->def->shared_leg ? live_leg_of_camera(e, pid, dn, cam) : NULL;
    if (leg) {
        free(ldata);
        if (live_leg_missing(leg->def, leg->guards, s->def, s->guards)) {
            /* Opened without a track it needs since the open's check: asking
             * the camera again would replace the source under its viewers. */
            live_session_end(e, s, "cameraUnreachable");
            return;
        }
    } else if (!(leg = live_leg_open(e, NULL, pid, dn, cam, s->def, s->guards, ldata, &why))) {
        igw_log(IGW_LOG_INFO, NULL, "session %s: no leg: %s", s->id, why);
        live_session_end(e, s, "cameraUnreachable");
        return;
    }
    live_leg_attach(leg, s);
}

/* The leg is gone (the camera's bye, a failure, a timeout): every session
 * on it ends with `reason`; then the leg goes (one bye at most: a noViewers
 * bye must not follow). */
void live_leg_end(igw_engine *e, live_leg *leg, const char *reason, bool say_bye, igw_ByeReason bye)
{
    igw_log(IGW_LOG_INFO, NULL, "session: leg %s ends: %s", leg->id, reason);
    if (say_bye)
        live_leg_bye(e, leg, bye);
    if (leg->phase != LEG_INVITED && e->media)
        (void)igw_media_close(e->media, leg->id, reason);
    /* The holder first, and once: it lets go of the leg before its viewers'
     * ends reach it (a viewer's end must not end this leg again). */
    void (*gone)(igw_engine *, live_leg *, const char *) = leg->gone;
    leg->gone = NULL;
    if (gone)
        gone(e, leg, reason);
    leg->holder = NULL;
    while (leg->viewers) {
        live_session *s = leg->viewers;
        (void)live_leg_detach(leg, s);
        live_session_end(e, s, reason);
    }
    live_leg_free(e, leg, true);
}

bool live_device_uplink(igw_engine *e, const igw_engine_uplink *u, live_device_done done, void *ctx)
{
    for (int p = 0; p < IGW_Purpose__COUNT; p++)
        if (igw_purposes[p].hooks && igw_purposes[p].hooks->device &&
            igw_purposes[p].hooks->device(e, u, done, ctx))
            return true;
    return false;
}

void live_leg_media_event(igw_engine *e, live_leg *leg, const igw_media_event *ev)
{
    switch (live_leg_media(leg, ev)) {
    case LIVE_LEG_CHANGED:
        leg_check(e, leg);
        break;
    case LIVE_LEG_FAILED:
        live_leg_end(e, leg, "cameraGone", true, IGW_ByeReason_cameraError);
        break;
    case LIVE_LEG_CLOSED:
        live_leg_end(e, leg, "cameraGone", false, IGW_ByeReason_cameraError);
        break;
    case LIVE_LEG_SAME:
        break;
    }
}

void live_legs_source_ready(igw_engine *e, live_leg *leg)
{
    for (live_session *s = leg->viewers, *n; s; s = n) {
        n = s->leg_next;
        if (hooks_of(s)->loaded)
            hooks_of(s)->loaded(e, s);
    }
    for (live_session *s = leg->viewers; s; s = s->leg_next)
        if (s->offer)
            live_session_offer(e, s);
    leg_check(e, leg);
}

/* The camera's bye: the leg's viewers end with its reason as they see it. */
static void on_bye(igw_engine *e, live_leg *l, igw_str params)
{
    igw_json j;
    igw_ByeParams p;
    igw_arena arena;
    igw_arena_init(&arena, 4096);
    igw_json_init(&j, params.ptr, params.len, &arena, 8);
    const char *why = "cameraGone";
    if (params.ptr && igw_decode_ByeParams(&j, &p) == 0) {
        if (p.reason == IGW_ByeReason_cameraDeclined || p.reason == IGW_ByeReason_cameraBusy)
            why = "cameraDeclined";
        else if (!l->shared && (p.reason == IGW_ByeReason_recordingEnded ||
                                p.reason == IGW_ByeReason_recordingUnavailable ||
                                p.reason == IGW_ByeReason_recordingChanged))
            why = igw_ByeReason_names[p.reason].ptr; /* a player's own reason about its recording */
    }
    igw_arena_free(&arena);
    live_leg_end(e, l, why, false, IGW_ByeReason_cameraShutdown);
}

size_t live_uplink_size(const igw_engine_uplink *u)
{
    return strlen(u->product_id) + strlen(u->device_name) + u->method.len + u->msg_token.len + u->session_id.len +
           u->params.len + u->data.len + 7;
}

static char *put(char **at, const char *s, size_t n)
{
    char *p = *at;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    *at += n + 1;
    return p;
}

void live_uplink_copy(igw_engine_uplink *dst, char *buf, const igw_engine_uplink *u)
{
    char *at = buf;
    dst->product_id = put(&at, u->product_id, strlen(u->product_id));
    dst->device_name = put(&at, u->device_name, strlen(u->device_name));
    dst->method = (igw_str){put(&at, u->method.ptr, u->method.len), u->method.len};
    dst->msg_token = (igw_str){put(&at, u->msg_token.ptr, u->msg_token.len), u->msg_token.len};
    dst->session_id = (igw_str){put(&at, u->session_id.ptr, u->session_id.len), u->session_id.len};
    dst->params = u->params.ptr ? (igw_str){put(&at, u->params.ptr, u->params.len), u->params.len} : (igw_str){NULL, 0};
    dst->data = u->data.ptr ? (igw_str){put(&at, u->data.ptr, u->data.len), u->data.len} : (igw_str){NULL, 0};
    dst->code = u->code;
}

/* The camera's answers to our downlinks that need nothing of the leg: a
 * byeReply comes after the leg is gone. Stored, acknowledged. */
static bool needs_no_leg(igw_proto_method m)
{
    return m == IGW_PROTO_M_byeReply || m == IGW_PROTO_M_trackControlReply;
}

bool live_uplink_here(igw_engine *e, const igw_engine_uplink *u)
{
    char id[LIVE_ID_MAX + 1];
    snprintf(id, sizeof id, "%.*s", (int)u->session_id.len, u->session_id.ptr);
    return needs_no_leg(igw_proto_method_of(u->method)) || live_leg_find(e, id);
}

int live_uplink(igw_engine *e, const igw_engine_uplink *u, const char **reason, const char **data, size_t *data_len,
                live_leg **ready)
{
    *ready = NULL;
    igw_proto_method m = igw_proto_method_of(u->method);
    if (needs_no_leg(m))
        return IGW_ERR_OK;
    bool ours = m == IGW_PROTO_M_mediaOffer || m == IGW_PROTO_M_bye || m == IGW_PROTO_M_mediaState;
    char id[LIVE_ID_MAX + 1];
    snprintf(id, sizeof id, "%.*s", (int)u->session_id.len, u->session_id.ptr);
    live_leg *l = live_leg_find(e, id);
    /* Another device's leg is as unknown as no leg. */
    if (!l || strcmp(l->product_id, u->product_id) || strcmp(l->device_name, u->device_name)) {
        if (!ours)
            return IGW_ERR_OK; /* a reply for a purpose whose leg ended meanwhile: nothing waits for it */
        *reason = "unknown session";
        return IGW_ERR_NOT_FOUND;
    }
    switch (m) {
    case IGW_PROTO_M_mediaOffer: {
        int cls = live_leg_offer(e, l, u->params, reason, data, data_len);
        if (cls == IGW_ERR_OK)
            *ready = l; /* the caller takes *data first: the viewers' answers reuse e->jw */
        return cls;
    }
    case IGW_PROTO_M_bye:
        on_bye(e, l, u->params);
        return IGW_ERR_OK;
    case IGW_PROTO_M_mediaState:
        return IGW_ERR_OK; /* the camera's view, recorded in device_messages; the core's facts decide */
    default:
        break;
    }
    /* A reply to a purpose's own downlink: its sessions on the leg take it. */
    for (live_session *s = l->viewers, *n; s; s = n) {
        n = s->leg_next;
        if (hooks_of(s)->uplink)
            hooks_of(s)->uplink(e, s, u);
    }
    return IGW_ERR_OK;
}

void live_legs_offline(igw_engine *e, const char *pid, const char *dn)
{
    for (live_leg *l = e->legs, *n; l; l = n) {
        n = l->next;
        if (!strcmp(l->product_id, pid) && !strcmp(l->device_name, dn))
            live_leg_end(e, l, "cameraOffline", false, IGW_ByeReason_shutdown);
    }
}

/* ---- the viewer's offer ------------------------------------------------------------ */

int64_t live_session_last_uplink_ms(igw_engine *e, const live_session *s)
{
    igw_media_stats st;
    if (!s->offered || !e->media || igw_media_get_stats(e->media, s->id, &st) != IGW_MEDIA_OK || !st.talk_last_us)
        return 0;
    return igw_wall_ms() - (int64_t)((igw_clock_us() - st.talk_last_us) / 1000);
}

bool live_session_gate(igw_engine *e, live_session *s, char *err, size_t errlen)
{
    if (!s->offered || !e->media || s->uplink == IGW_UPLINK_NONE)
        return true; /* the offer's answer sets it */
    bool open = s->uplink == IGW_UPLINK_ACTIVE && (!hooks_of(s)->permitted || hooks_of(s)->permitted(s));
    if (open == s->gate_open)
        return true;
    if (igw_media_viewer_publish(e->media, s->id, s->revision, open, err, errlen) != IGW_MEDIA_OK)
        return false;
    s->gate_open = open;
    return true;
}

void live_session_offer(igw_engine *e, live_session *s)
{
    char *answer = malloc(ANSWER_MAX);
    char err[160] = "";
    /* What the viewer may send is its purpose's (a live view never talks,
     * even on a leg that carries a talk), never the leg's. */
    unsigned flags = live_may_publish(s->def, s->guards) ? IGW_MEDIA_VIEWER_PUBLISH : 0;
    if (s->def->side) /* its audio is the processor's conversation, never the camera's */
        flags |= IGW_MEDIA_VIEWER_SIDE;
    if (s->def->vision) /* its video starts paused: only a consent and the owner advance it */
        flags |= IGW_MEDIA_VIEWER_PAUSED;
    igw_media_rc rc = answer ? igw_media_viewer_offer(e->media, s->leg->id, s->id, s->revision, flags, s->offer,
                                                      strlen(s->offer), answer, ANSWER_MAX, err, sizeof err)
                             : IGW_MEDIA_EFAIL;
    free(s->offer);
    s->offer = NULL;
    igw_ResultData d = {0};
    if (rc != IGW_MEDIA_OK) {
        free(answer);
        igw_log(IGW_LOG_INFO, NULL, "session %s: the application's offer refused: %s", s->id, err);
        if (s->prior_revision) { /* the generation it meant to replace goes on */
            s->revision = s->prior_revision;
            s->prior_revision = 0;
        }
        live_session_result(e, s->id, s->endpoint, s->offer_token, IGW_CommandMethod_interaction_mediaOffer,
                            rc == IGW_MEDIA_EINVAL ? IGW_ERR_PARAMETER : IGW_ERR_INTERNAL,
                            rc == IGW_MEDIA_EINVAL ? live_offer_refusal(s->def, s->guards) : "the media core failed",
                            &d);
        return;
    }
    s->offered = true;
    if (s->prior_revision) { /* the new generation's facts start now (its core events come after) */
        s->prior_revision = 0;
        s->viewer_dtls = s->viewer_flowing = false;
        s->renegotiated = s->state == IGW_SESSION_ESTABLISHED; /* invited: establishing announces it */
        igw_log(IGW_LOG_INFO, NULL, "session %s: media generation %" PRIu32 " answered", s->id, s->revision);
    }
    if (s->uplink == IGW_UPLINK_NONE && live_may_publish(s->def, s->guards))
        s->uplink = (igw_uplink_state)igw_sm_fire(&igw_sm_uplink, IGW_UPLINK_NONE, IGW_UPLINK_ON_START, 0).next;
    s->gate_open = false; /* a new peer's gate starts closed */
    if (!live_session_gate(e, s, err, sizeof err))
        igw_log(IGW_LOG_WARN, NULL, "session %s: its uplink's gate not set: %s", s->id, err);
    if (s->only_track[0]) {
        /* A subscribe's viewer receives its one track: the other kind's
         * subscription stops (the track machine's unsubscribe). */
        const igw_purpose_track *t = live_track_find(s->def, s->guards, igw_str_of(s->only_track));
        igw_media_kinds other = t && t->kind == IGW_TrackKind_audio ? IGW_MEDIA_VIDEO : IGW_MEDIA_AUDIO;
        char terr[160];
        (void)igw_media_viewer_track(e->media, s->id, s->revision, other, IGW_TRACK_ON_UNSUBSCRIBE, NULL, terr,
                                     sizeof terr); /* no such track (a camera without microphone): nothing to stop */
    }
    igw_jw w;
    igw_jw_init(&w);
    igw_WebrtcAnswer wa = {.has = IGW_WebrtcAnswer__REQUIRED,
                           .iceMode = strstr(answer, "a=ice-lite") ? IGW_IceMode_lite : IGW_IceMode_full,
                           .sdp = igw_str_of(answer)};
    igw_encode_WebrtcAnswer(&w, &wa);
    free(answer);
    if (igw_jw_status(&w)) {
        igw_jw_free(&w);
        live_session_result(e, s->id, s->endpoint, s->offer_token, IGW_CommandMethod_interaction_mediaOffer,
                            IGW_ERR_INTERNAL, "out of memory", &d);
        return;
    }
    d.has = IGW_ResultData_state | IGW_ResultData_webrtc | IGW_ResultData_mediaRevision | IGW_ResultData_sessionId;
    d.state = igw_str_of("answered");
    d.webrtc = (igw_str){w.buf, w.len};
    d.mediaRevision = s->revision;
    d.sessionId = igw_str_of(s->id);
    live_session_result(e, s->id, s->endpoint, s->offer_token, IGW_CommandMethod_interaction_mediaOffer, IGW_ERR_OK,
                        NULL, &d);
    igw_jw_free(&w);
}

/* ---- facts from outside, deadlines, the end ---------------------------------------- */

void live_fact(igw_engine *e, int kind, const char *arg)
{
    for (int p = 0; p < IGW_Purpose__COUNT; p++)
        if (igw_purposes[p].hooks && igw_purposes[p].hooks->fact)
            igw_purposes[p].hooks->fact(e, (live_fact_kind)kind, arg);
}

void live_tick(igw_engine *e, int64_t now_ms)
{
    for (live_leg *l = e->legs, *n; l; l = n) {
        n = l->next;
        if (l->phase == LEG_INVITED && now_ms >= l->deadline_ms)
            live_leg_end(e, l, "inviteTimeout", true, IGW_ByeReason_timeout);
        else if (l->linger_until_ms && !l->viewers && !l->holder && now_ms >= l->linger_until_ms)
            live_leg_end(e, l, "noViewers", true, IGW_ByeReason_noViewers); /* its linger passed, nobody came */
        else if (l->phase == LEG_INVITED && now_ms >= l->resend_ms && live_leg_invite(e, l) != 0)
            igw_log(IGW_LOG_WARN, NULL, "session: leg %s: invite not published again (broker unreachable)", l->id);
    }
    for (int p = 0; p < IGW_Purpose__COUNT; p++)
        if (igw_purposes[p].hooks && igw_purposes[p].hooks->tick)
            igw_purposes[p].hooks->tick(e, now_ms);
    for (live_session *s = e->sessions, *n; s; s = n) {
        n = s->next;
        if (s->state == IGW_SESSION_INVITED && now_ms >= s->deadline_ms)
            live_session_end(e, s, "establishTimeout");
        else if (live_vision_overdue(s, igw_wall_ms()))
            live_session_end(e, s, LIVE_VISION_DEADLINE);
    }
    live_vision_tick(e, igw_wall_ms());
    live_proc_tick(e);
}

void live_free_all(igw_engine *e)
{
    live_proc_stop_all(e);
    while (e->sessions) {
        live_session *s = e->sessions;
        e->sessions = s->next;
        free(s->offer);
        free(s->pdata);
        free(s->vision);
        free(s);
    }
    e->nsessions = 0;
    while (e->legs) {
        live_leg *l = e->legs;
        e->legs = l->next;
        free(l->ldata);
        free(l);
    }
    for (int p = 0; p < IGW_Purpose__COUNT; p++)
        if (igw_purposes[p].hooks && igw_purposes[p].hooks->stop)
            igw_purposes[p].hooks->stop(e);
}
