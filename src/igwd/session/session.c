/* session.c - application sessions on the engine's loop: the `session`
 * commands of /commands (open, mediaOffer, mediaState, trackControl, end),
 * the generated `session` machine driven by facts, and the events each
 * change emits (docs/sessions.md, "Session life").
 *
 * Durability: an acceptance is a `commands` row; open's acceptance, its
 * session row and its interaction.result are one statement; every state
 * change of a session and its interaction.state event are one statement,
 * fenced by this node's epoch. The other commands' results are emitted
 * through the outbox once their effect happened. */
#include "session/live.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "api.h"
#include "base64.h"
#include "event/rights.h"
#include "clock.h"
#include "core/log.h"
#include "event/outbox.h"
#include "session/state_sql.h"

#define ANSWER_MAX (64 * 1024)
#define NOW_MS "floor(extract(epoch FROM now()) * 1000)::bigint"
#define ENDPOINT_LIVE(ep, ent, usr) IGW_SQL_ENDPOINT_LIVE(ep, ent, usr, NOW_MS)
#define PRIOR_FP(ent, ep, token)                                                                                      \
    "(SELECT encode(k.fingerprint, 'hex') FROM commands k WHERE k.enterprise_id = " ent " AND k.endpoint_id = " ep    \
    " AND k.msg_token = " token ")"

/* What open needs to know before it claims anything (a playback: the
 * recording of that camera, $9, as the catalog has it). */
static const igw_db_stmt st_open_read = {
    "igw_session_open_read",
    "SELECT " ENDPOINT_LIVE("$3::text", "$1::bigint", "$2::bigint") ", "
    PRIOR_FP("$1::bigint", "$3::text", "$4::text") ", "
    IGW_SQL_DEVICE_RIGHTS("$5::text", "$6::text", "$1::bigint", "$2::bigint") ", "
    "EXISTS (SELECT 1 FROM cameras c WHERE c.product_id = $5::text AND c.device_name = $6::text "
    "        AND c.camera_id = $7::text), "
    "COALESCE((SELECT d.online FROM devices d WHERE d.product_id = $5::text AND d.device_name = $6::text), false), "
    "(SELECT (m.body->'params'->>'microphone')::boolean FROM device_messages m WHERE m.product_id = $5::text "
    "  AND m.device_name = $6::text AND m.handle = 'media' AND m.msg_type = 'capability' AND m.method = 'report' "
    "  ORDER BY m.received_at DESC, m.message_id DESC LIMIT 1), "
    "(SELECT (m.body->'params'->>'speaker')::boolean FROM device_messages m WHERE m.product_id = $5::text "
    "  AND m.device_name = $6::text AND m.handle = 'media' AND m.msg_type = 'capability' AND m.method = 'report' "
    "  ORDER BY m.received_at DESC, m.message_id DESC LIMIT 1), "
    "(SELECT count(*) FROM sessions x WHERE x.call_id = NULLIF($8::text, '') AND x.state <> 'ended'), "
    "r.recording_version, r.duration_ms, r.audio_codec IS NOT NULL, r.available "
    "FROM (SELECT 1) one LEFT JOIN recordings r ON r.product_id = $5::text AND r.device_name = $6::text "
    "    AND r.camera_id = $7::text AND r.recording_id = NULLIF($9::text, '')",
    9};

/* A new session's acceptance (open's, or subscribe's on its parent $18),
 * the session (invited, owned by this node's epoch) and its
 * interaction.result with the delivery and the NOTIFY: one statement, which
 * claims nothing unless the endpoint is live, the rights hold and the epoch
 * is still this node's. */
static const igw_db_stmt st_open_write = {
    "igw_session_open_write",
    "WITH ok AS MATERIALIZED (SELECT p.expires_at_ms AS exp FROM endpoints p "
    "    WHERE p.endpoint_id = $3::text AND p.enterprise_id = $1::bigint AND p.user_id = $2::bigint "
    "      AND p.expires_at_ms > " NOW_MS " AND " IGW_SQL_DEVICE_RIGHTS("$5::text", "$6::text", "$1::bigint", "$2::bigint")
    "      AND EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = $12::text AND n.epoch = $13::bigint)), "
    "cm AS (INSERT INTO commands (enterprise_id, endpoint_id, msg_token, user_id, method, session_id, fingerprint, "
    "                             command) "
    "       SELECT $1::bigint, $3::text, $4::text, $2::bigint, $17::text, NULLIF($18::text, ''), "
    "              decode($9::text, 'hex'), $10::jsonb FROM ok "
    "       ON CONFLICT (enterprise_id, endpoint_id, msg_token) DO NOTHING RETURNING 1), "
    "s AS (INSERT INTO sessions (session_id, enterprise_id, user_id, endpoint_id, state, event_seq, media_revision, "
    "                            product_id, device_name, purpose, camera_id, owner_node, owner_epoch, deadline_ms, "
    "                            call_id, member_epoch, recording_id, recording_version) "
    "      SELECT $11::text, $1::bigint, $2::bigint, $3::text, 'invited', 0, 1, $5::text, $6::text, $8::text, "
    "             $7::text, $12::text, $13::bigint, $14::bigint, NULLIF($19::text, ''), "
    "             NULLIF($20::text, '')::bigint, NULLIF($21::text, ''), NULLIF($22::text, '')::bigint "
    "      FROM cm RETURNING 1), "
    "ev AS (INSERT INTO events (session_id, msg_token, event_seq, body, body_text) "
    "       SELECT COALESCE(NULLIF($18::text, ''), $11::text), $4::text, NULL, $15::text::jsonb, $15::text FROM s "
    "       RETURNING event_id), "
    "dl AS (INSERT INTO deliveries (delivery_id, event_id, endpoint_id, session_id, watermark, state, expires_at_ms) "
    "       SELECT $16::text, ev.event_id, $3::text, COALESCE(NULLIF($18::text, ''), $11::text), ev.event_id, "
    "              'pending', ok.exp FROM ev, ok "
    "       RETURNING endpoint_id), "
    "ntf AS (SELECT pg_notify('" IGW_OUTBOX_CHANNEL "', dl.endpoint_id) FROM dl) "
    "SELECT " ENDPOINT_LIVE("$3::text", "$1::bigint", "$2::bigint") ", "
    IGW_SQL_DEVICE_RIGHTS("$5::text", "$6::text", "$1::bigint", "$2::bigint") ", "
    "EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = $12::text AND n.epoch = $13::bigint), "
    "(SELECT count(*) FROM cm), (SELECT count(*) FROM s), (SELECT count(*) FROM dl), (SELECT count(*) FROM ntf), "
    PRIOR_FP("$1::bigint", "$3::text", "$4::text"),
    22};

/* The acceptance of a command on an existing session. */
static const igw_db_stmt st_accept = {
    "igw_session_accept",
    "WITH cm AS (INSERT INTO commands (enterprise_id, endpoint_id, msg_token, user_id, method, session_id, "
    "                                  fingerprint, command) "
    "            SELECT $1::bigint, $3::text, $4::text, $2::bigint, $5::text, $6::text, decode($7::text, 'hex'), "
    "                   $8::jsonb WHERE " ENDPOINT_LIVE("$3::text", "$1::bigint", "$2::bigint")
    "            ON CONFLICT (enterprise_id, endpoint_id, msg_token) DO NOTHING RETURNING 1) "
    "SELECT " ENDPOINT_LIVE("$3::text", "$1::bigint", "$2::bigint") ", (SELECT count(*) FROM cm), "
    PRIOR_FP("$1::bigint", "$3::text", "$4::text"),
    8};

/* interaction.join: the participant is logged in (a live endpoint of its
 * own in the caller's enterprise). */
static const igw_db_stmt st_participant_live = {
    "igw_session_participant_live",
    "SELECT EXISTS (SELECT 1 FROM endpoints p JOIN users u ON u.user_id = p.user_id AND u.active "
    "               WHERE p.user_id = $2::bigint AND p.enterprise_id = $1::bigint AND p.expires_at_ms > " NOW_MS ")",
    2};

/* A session this node does not hold: whose it is, and whether it lives. */
static const igw_db_stmt st_session_row = {
    "igw_session_row",
    "SELECT s.state, COALESCE(s.owner_node, ''), COALESCE(s.owner_epoch, 0) FROM sessions s "
    "WHERE s.session_id = $1::text AND s.enterprise_id = $2::bigint AND s.user_id = $3::bigint "
    "  AND s.endpoint_id = $4::text",
    4};

/* A state change ($2: the state, $3: the states it may come from, $4: the
 * reason or ''; a playback's $8: phase and $9: position, '' to keep them)
 * with event_seq + 1 and its interaction.state event {msgToken
 * "<sessionId>.<eventSeq>", method, sessionId, eventSeq, data} delivered to
 * the session's endpoint (none when it expired: the session still changes),
 * fenced by this node's epoch. An ended session's event has no phase. */
static const igw_db_stmt st_transition = {
    "igw_session_transition",
    "WITH me AS (SELECT 1 FROM nodes WHERE node_id = $5::text AND epoch = $6::bigint FOR SHARE), "
    "upd AS (UPDATE sessions s SET state = $2::text, reason = NULLIF($4::text, ''), event_seq = s.event_seq + 1, "
    "        updated_at = now(), deadline_ms = NULL, playback = COALESCE(NULLIF($8::text, ''), s.playback), "
    "        position_ms = COALESCE(NULLIF($9::text, '')::bigint, s.position_ms) "
    "        WHERE s.session_id = $1::text AND s.state = ANY ($3::text[]) AND s.owner_node = $5::text "
    "          AND s.owner_epoch = $6::bigint AND EXISTS (SELECT 1 FROM me) "
    "        RETURNING s.session_id AS sid, s.endpoint_id AS ep, s.event_seq AS seq, s.state AS state, "
    "                  CASE WHEN s.state <> 'ended' THEN s.playback END AS playback, "
    "                  CASE WHEN s.state <> 'ended' THEN s.position_ms END AS pos, s.reason AS reason), "
    IGW_SESSION_STATE_EVENTS("$7::text")
    "SELECT (SELECT count(*) FROM upd), (SELECT count(*) FROM dl), (SELECT count(*) FROM ntf), "
    "       (SELECT count(*) FROM ev)",
    9};

int live_new_id(char *out, size_t cap)
{
    return igw_outbox_new_id(out, cap);
}

live_session *live_session_find(igw_engine *e, const char *id)
{
    for (live_session *s = e->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
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

void live_session_write(igw_engine *e, const live_session *s, const char *to, const char *from, const char *reason,
                        const char *playback, int64_t position_ms)
{
    write_ctx *w = calloc(1, sizeof *w);
    char did[32], epoch[24];
    if (!w || live_new_id(did, sizeof did)) {
        free(w);
        igw_log(IGW_LOG_ERROR, NULL, "session %s: %s not stored: out of memory", s->id, to);
        return;
    }
    snprintf(w->what, sizeof w->what, "%s", to);
    snprintf(w->sid, sizeof w->sid, "%s", s->id);
    snprintf(epoch, sizeof epoch, "%" PRId64, atomic_load(&e->cfg.node->epoch));
    char pos[24] = "";
    if (position_ms >= 0)
        snprintf(pos, sizeof pos, "%" PRId64, position_ms);
    const char *v[9] = {s->id, to, from, reason ? reason : "", e->node_id, epoch, did, playback ? playback : "", pos};
    if (igw_db_exec(e->db, &st_transition, v, NULL, NULL, on_transition, w) != 0) {
        igw_log(IGW_LOG_ERROR, NULL, "session %s: %s not stored: the database queue is full", s->id, to);
        free(w);
    }
}

static void write_state(igw_engine *e, const live_session *s, const char *to, const char *from, const char *reason)
{
    live_session_write(e, s, to, from, reason, NULL, -1);
}

typedef struct emit_ctx {
    char sid[LIVE_ID_MAX + 1];
    char token[130];
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
    igw_ResultEvent ev = {.has = IGW_ResultEvent__REQUIRED | IGW_ResultEvent_sessionId,
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

static void emit_result(igw_engine *e, const live_session *s, const char *token, igw_CommandMethod op, int cls,
                        const char *reason, igw_ResultData *d)
{
    live_session_result(e, s->id, s->endpoint, token, op, cls, reason, d);
}

/* ---- the machine ----------------------------------------------------------------- */

void live_session_end(igw_engine *e, live_session *s, const char *reason)
{
    if (s->state == IGW_SESSION_ENDED)
        return;
    igw_err err;
    igw_session_state next = igw_session_next(s->state, IGW_SESSION_ON_FAIL, 0, &err);
    if (next != IGW_SESSION_ENDED)
        return; /* the machine forbids it: never happens for `fail` */
    live_add(s->state == IGW_SESSION_INVITED ? &e->n_invited : &e->n_established, -1);
    live_add(&e->n_ended, 1);
    s->state = next;
    write_state(e, s, "ended", "{invited,established}", reason);
    if (s->offer) { /* an accepted mediaOffer still waiting for the camera: its result, a failure */
        char why[96];
        snprintf(why, sizeof why, "the session ended before the camera's media (%s)", reason);
        igw_ResultData d = {0};
        emit_result(e, s, s->offer_token, IGW_CommandMethod_interaction_mediaOffer, IGW_ERR_CONFLICT, why, &d);
    }
    if (s->playback)
        live_playback_end(e, s, reason);
    igw_log(IGW_LOG_INFO, NULL, "session %s ended: %s", s->id, reason);
    if (s->offered && e->media)
        (void)igw_media_close(e->media, s->id, reason);
    session_unlink(e, s);
    if (s->leg)
        live_leg_detach(e, s->leg, s); /* the last viewer out closes the leg */
    free(s->offer);
    free(s);
}

static void check_established(igw_engine *e, live_session *s)
{
    /* A playback is ready before anything flows: its camera sends nothing
     * until play. Both transports are up, and the camera loaded it. */
    bool negotiated = s->playback ? s->leg && s->leg->phase >= LEG_CONNECTED && s->viewer_dtls && s->app_connected &&
                                        s->pb_state == IGW_PLAYBACK_LOADED
                                  : s->leg && s->leg->phase == LEG_FLOWING && s->viewer_dtls && s->viewer_flowing &&
                                        s->app_connected;
    if (s->state != IGW_SESSION_INVITED || !negotiated)
        return;
    igw_err err;
    igw_session_state next = igw_session_next(s->state, IGW_SESSION_ON_ESTABLISH, IGW_SESSION_IF_NEGOTIATED, &err);
    if (next != IGW_SESSION_ESTABLISHED)
        return;
    s->state = next;
    live_add(&e->n_invited, -1);
    live_add(&e->n_established, 1);
    if (s->playback) {
        s->pb_state = igw_playback_next(s->pb_state, IGW_PLAYBACK_ON_READY, 0, NULL);
        live_session_write(e, s, "established", "{invited}", NULL, igw_sm_playback.states[s->pb_state],
                           s->position_ms);
    } else {
        write_state(e, s, "established", "{invited}", NULL);
    }
    igw_log(IGW_LOG_INFO, NULL, "session %s established", s->id);
}

void live_sessions_check(igw_engine *e, live_leg *leg)
{
    for (live_session *s = leg->viewers; s; s = s->leg_next)
        check_established(e, s);
}

void live_session_media(igw_engine *e, live_session *s, const igw_media_event *ev)
{
    if (ev->revision != s->revision)
        return;
    switch (ev->kind) {
    case IGW_MEDIA_EV_DTLS_CONNECTED:
        s->viewer_dtls = true;
        check_established(e, s);
        break;
    case IGW_MEDIA_EV_FIRST_PACKET:
        s->viewer_flowing = true;
        check_established(e, s);
        break;
    case IGW_MEDIA_EV_ICE_FAILED:
    case IGW_MEDIA_EV_DTLS_FAILED:
    case IGW_MEDIA_EV_CLOSED:
        live_session_end(e, s, "viewerFailed");
        break;
    case IGW_MEDIA_EV_ICE_CONNECTED:
    case IGW_MEDIA_EV_KEYFRAME:
        break;
    }
}

void live_sessions_tick(igw_engine *e, int64_t now_ms)
{
    live_playback_tick(e, now_ms);
    for (live_session *s = e->sessions, *n; s; s = n) {
        n = s->next;
        if (s->state == IGW_SESSION_INVITED && now_ms >= s->deadline_ms)
            live_session_end(e, s, "establishTimeout");
    }
}

/* The viewer's offer to the core; the result carries the answer. */
static void viewer_offer(igw_engine *e, live_session *s, const char *token)
{
    char *answer = malloc(ANSWER_MAX);
    char err[160] = "";
    igw_media_rc rc = answer ? igw_media_viewer_offer(e->media, s->leg->id, s->id, s->revision, false, s->offer,
                                                      strlen(s->offer), answer, ANSWER_MAX, err, sizeof err)
                             : IGW_MEDIA_EFAIL;
    free(s->offer);
    s->offer = NULL;
    igw_ResultData d = {0};
    if (rc != IGW_MEDIA_OK) {
        free(answer);
        igw_log(IGW_LOG_INFO, NULL, "session %s: the application's offer refused: %s", s->id, err);
        emit_result(e, s, token, IGW_CommandMethod_interaction_mediaOffer,
                    rc == IGW_MEDIA_EINVAL ? IGW_ERR_PARAMETER : IGW_ERR_INTERNAL,
                    rc == IGW_MEDIA_EINVAL ? "the offer cannot be used (recvonly H264/Opus expected)"
                                           : "the media core failed",
                    &d);
        return;
    }
    s->offered = true;
    if (s->talk)
        live_talk_gate(e, s);
    if (s->only_track[0]) {
        /* A subscribe's viewer receives its one track: the other kind's
         * subscription stops (the track machine's unsubscribe). */
        igw_media_kinds other = strcmp(s->only_track, "mic") == 0 ? IGW_MEDIA_VIDEO : IGW_MEDIA_AUDIO;
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
        emit_result(e, s, token, IGW_CommandMethod_interaction_mediaOffer, IGW_ERR_INTERNAL, "out of memory", &d);
        return;
    }
    d.has = IGW_ResultData_state | IGW_ResultData_webrtc | IGW_ResultData_mediaRevision | IGW_ResultData_sessionId;
    d.state = igw_str_of("answered");
    d.webrtc = (igw_str){w.buf, w.len};
    d.mediaRevision = s->revision;
    d.sessionId = igw_str_of(s->id);
    emit_result(e, s, token, IGW_CommandMethod_interaction_mediaOffer, IGW_ERR_OK, NULL, &d);
    igw_jw_free(&w);
}

void live_sessions_source_ready(igw_engine *e, live_leg *leg)
{
    if (leg->playback)
        live_playback_loaded(e, leg);
    for (live_session *s = leg->viewers; s; s = s->leg_next)
        if (s->offer)
            viewer_offer(e, s, s->offer_token);
}

/* ---- commands ------------------------------------------------------------------------ */

typedef struct op {
    igw_engine *e;
    void (*answer)(void *ctx, const igw_engine_cmd_answer *a);
    void *ctx;
    const igw_engine_cmd *c; /* valid until answered */
    igw_CommandMethod method;
    char sid[LIVE_ID_MAX + 1];
    char pid[LIVE_NAME_MAX + 1], dn[LIVE_NAME_MAX + 1], cam[LIVE_NAME_MAX + 1];
    char ent[24], user[24];
    bool listen_audio;
    igw_Purpose purpose;                     /* open: the params'; subscribe: ipcLiveView (0) */
    char call_id[IGW_CALL_ID_MAX + 1];       /* ipcTalk: its call */
    int64_t member_epoch;                    /* ipcTalk: the caller's join instance */
    int64_t target, expected;                /* join, leave: participantId; leave: expectedMemberEpoch */
    char recording_id[LIVE_NAME_MAX + 1];    /* recordPlayback: its recording */
    int64_t rec_version, rec_duration;       /* as the catalog had it at the open */
    bool rec_audio;
    igw_PlaybackOperation pb_op;             /* playbackControl */
    int64_t pb_position;                     /* playbackControl seek */
    /* kept past the answer */
    char endpoint[LIVE_EP_MAX + 1];
    char token[130];
    char *offer;
    int64_t enterprise_id, user_id;
    igw_TrackOperation track_op;
    char track_id[LIVE_ID_MAX + 1];
    char parent[LIVE_ID_MAX + 1]; /* subscribe: the session it was asked on */
    char playback[32];            /* subscribe: the new viewer's playbackToken */
    char state[16];
    igw_EndReason end_reason;
} op;

static void answer(op *o, int cls, const char *reason, const char *path, const char *prior)
{
    igw_engine_cmd_answer a = {.cls = cls, .reason = reason ? reason : "", .path = path ? path : "",
                               .prior_fp = prior};
    o->answer(o->ctx, &a);
    o->c = NULL;
}

static void op_free(op *o)
{
    free(o->offer);
    free(o);
}

static void refuse(op *o, int cls, const char *reason, const char *path)
{
    answer(o, cls, reason, path, NULL);
    op_free(o);
}

static void refuse_db(op *o, const char *err, bool write)
{
    igw_err cls = igw_db_error_class(err, write);
    igw_log(IGW_LOG_WARN, NULL, "session: %s: %s", o->token, err);
    refuse(o, cls,
           cls == IGW_ERR_UNKNOWN_OUTCOME ? "outcome unknown; retry with the same msgToken"
           : cls == IGW_ERR_INTERNAL      ? "internal error"
                                          : "busy, retry later",
           "");
}

/* A statement's one result row, or the command refused by its failure's
 * class (false: answered and freed). */
static bool one_row(op *o, const PGresult *res, const char *err, bool write)
{
    if (!res) {
        refuse_db(o, err, write);
        return false;
    }
    if (PQntuples(res) != 1) {
        refuse(o, IGW_ERR_INTERNAL, "internal error", "");
        return false;
    }
    return true;
}

static bool col_true(const PGresult *res, int c)
{
    return !PQgetisnull(res, 0, c) && PQgetvalue(res, 0, c)[0] == 't';
}

static int64_t node_epoch(const igw_engine *e)
{
    return atomic_load(&e->cfg.node->fenced) ? 0 : atomic_load(&e->cfg.node->epoch);
}

/* -- open -- */

static void on_open_write(void *arg, const PGresult *res, const char *err)
{
    op *o = arg;
    igw_engine *e = o->e;
    if (!one_row(o, res, err, true))
        return;
    if (!PQgetisnull(res, 0, 7) && strcmp(PQgetvalue(res, 0, 3), "1") != 0) {
        answer(o, IGW_ERR_OK, NULL, NULL, PQgetvalue(res, 0, 7)); /* a twin came first */
        op_free(o);
        return;
    }
    if (!col_true(res, 0)) {
        refuse(o, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", "/endpointId");
        return;
    }
    if (!col_true(res, 1)) {
        refuse(o, IGW_ERR_PERMISSION, "no rights on the target device", "/command/target");
        return;
    }
    if (!col_true(res, 2) || strcmp(PQgetvalue(res, 0, 4), "1") != 0) {
        refuse(o, IGW_ERR_UNAVAILABLE, "this node is not serving sessions now, retry", "");
        return;
    }
    /* Accepted: the session exists, invited, with its result. */
    live_session *s = calloc(1, sizeof *s);
    if (!s) { /* durable already: the node's restart sweep ends it */
        answer(o, IGW_ERR_OK, NULL, NULL, NULL);
        op_free(o);
        return;
    }
    snprintf(s->id, sizeof s->id, "%s", o->sid);
    snprintf(s->endpoint, sizeof s->endpoint, "%s", o->endpoint);
    s->enterprise_id = o->enterprise_id;
    s->user_id = o->user_id;
    s->revision = 1;
    s->state = IGW_SESSION_INVITED;
    s->listen_audio = o->listen_audio;
    if (o->purpose == IGW_Purpose_ipcTalk) {
        s->talk = true;
        snprintf(s->call_id, sizeof s->call_id, "%s", o->call_id);
        s->member_epoch = o->member_epoch;
        s->publish_allowed = true; /* checked at the open; the recheck keeps it true */
        s->checked_ms = igw_clock_ms();
    }
    if (o->purpose == IGW_Purpose_recordPlayback) {
        s->playback = true;
        snprintf(s->recording_id, sizeof s->recording_id, "%s", o->recording_id);
        s->recording_version = o->rec_version;
        s->duration_ms = o->rec_duration;
        s->pb_state = IGW_PLAYBACK_NONE; /* until the camera loads it */
    }
    if (o->method == IGW_CommandMethod_interaction_subscribe)
        snprintf(s->only_track, sizeof s->only_track, "%s", o->track_id);
    s->deadline_ms = igw_clock_ms() + e->cfg.establish_timeout_ms;
    s->next = e->sessions;
    e->sessions = s;
    e->nsessions++;
    live_add(&e->n_invited, 1);
    live_add(&e->n_opened, 1);
    answer(o, IGW_ERR_OK, NULL, NULL, NULL);
    igw_log(IGW_LOG_INFO, NULL, "session %s: %s/%s camera %s opened (%s)", s->id, o->pid, o->dn, o->cam, o->token);
    const char *why = NULL;
    live_recording rec = {.recording_id = o->recording_id, .version = o->rec_version, .audio = o->rec_audio};
    bool record = o->purpose == IGW_Purpose_recordPlayback;
    live_leg *leg = live_leg_get(e, o->pid, o->dn, o->cam, o->listen_audio || (record && o->rec_audio),
                                 o->purpose == IGW_Purpose_ipcTalk, record ? &rec : NULL, &why);
    op_free(o);
    if (!leg) {
        live_session_end(e, s, "cameraUnreachable");
        return;
    }
    live_leg_attach(leg, s);
}

static void open_write(op *o);

static void on_open_read(void *arg, const PGresult *res, const char *err)
{
    op *o = arg;
    igw_engine *e = o->e;
    if (!one_row(o, res, err, false))
        return;
    if (!col_true(res, 0)) {
        refuse(o, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", "/endpointId");
        return;
    }
    if (!PQgetisnull(res, 0, 1)) {
        answer(o, IGW_ERR_OK, NULL, NULL, PQgetvalue(res, 0, 1));
        op_free(o);
        return;
    }
    if (!col_true(res, 2)) {
        refuse(o, IGW_ERR_PERMISSION, "no rights on the target device", "/command/target");
        return;
    }
    if (!col_true(res, 3)) {
        refuse(o, IGW_ERR_NOT_FOUND, "unknown camera of the target device", "/command/params/cameraId");
        return;
    }
    if (o->purpose == IGW_Purpose_recordPlayback) {
        if (PQgetisnull(res, 0, 8)) {
            refuse(o, IGW_ERR_NOT_FOUND, "unknown recording of this camera", "/command/params/recordingId");
            return;
        }
        if (!col_true(res, 11)) {
            refuse(o, IGW_ERR_CONFLICT, "the catalog says the recording is not available",
                   "/command/params/recordingId");
            return;
        }
        o->rec_version = strtoll(PQgetvalue(res, 0, 8), NULL, 10);
        o->rec_duration = strtoll(PQgetvalue(res, 0, 9), NULL, 10);
        o->rec_audio = col_true(res, 10);
    }
    if (!col_true(res, 4)) {
        refuse(o, IGW_ERR_UNAVAILABLE,
               o->purpose == IGW_Purpose_recordPlayback
                   ? "the camera is offline: recordings play from the camera only (there is no cloud playback)"
                   : "the camera is offline",
               "/command/target");
        return;
    }
    if (o->listen_audio && !col_true(res, 5)) {
        refuse(o, IGW_ERR_PARAMETER, "the camera has no microphone (its capability says so, or it reported none)",
               "/command/params/listenAudio");
        return;
    }
    bool talk = o->purpose == IGW_Purpose_ipcTalk;
    if (talk && !col_true(res, 6)) {
        refuse(o, IGW_ERR_PARAMETER, "the camera has no speaker (its capability says so, or it reported none)",
               "/command/params/cameraId");
        return;
    }
    if (talk && !e->cfg.talk_members && strcmp(PQgetvalue(res, 0, 7), "0") != 0) {
        refuse(o, IGW_ERR_CONFLICT, "the call has its talk session already (two-party talk: talk_members is off)",
               "/command/params/callId");
        return;
    }
    if (talk && live_leg_lacks(e, o->pid, o->dn, o->cam, true, true)) {
        refuse(o, IGW_ERR_CONFLICT, "the camera is being viewed without talk; talk when its viewers have left",
               "/command/params/cameraId");
        return;
    }
    if (!talk && o->listen_audio && live_leg_lacks(e, o->pid, o->dn, o->cam, true, false)) {
        refuse(o, IGW_ERR_CONFLICT, "the camera is being viewed without its microphone; open without listenAudio",
               "/command/params/listenAudio");
        return;
    }
    open_write(o);
}

/* The new session's write: open's, or subscribe's (an independent viewer
 * of its parent's camera with a playbackToken of its own). */
static void open_write(op *o)
{
    igw_engine *e = o->e;
    int64_t epoch = node_epoch(e);
    if (!epoch) {
        refuse(o, IGW_ERR_UNAVAILABLE, "this node is not serving sessions now, retry", "");
        return;
    }
    bool sub = o->method == IGW_CommandMethod_interaction_subscribe;
    if (live_new_id(o->sid, sizeof o->sid) || (sub && live_new_id(o->playback, sizeof o->playback))) {
        refuse(o, IGW_ERR_INTERNAL, "internal error", "");
        return;
    }
    /* The result of the open (subscribe), emitted with it. */
    igw_ResultEvent ev = {.has = IGW_ResultEvent__REQUIRED | IGW_ResultEvent_sessionId,
                          .msgToken = igw_str_of(o->token),
                          .method = IGW_ResultMethod_interaction_result,
                          .sessionId = igw_str_of(sub ? o->parent : o->sid),
                          .code = 200,
                          .data = {.has = IGW_ResultData_operation | IGW_ResultData_state | IGW_ResultData_sessionId |
                                          IGW_ResultData_mediaRevision,
                                   .operation = o->method,
                                   .state = igw_str_of("invited"),
                                   .sessionId = igw_str_of(o->sid),
                                   .mediaRevision = 1}};
    if (sub) {
        ev.data.has |= IGW_ResultData_playbackToken | IGW_ResultData_trackId;
        ev.data.playbackToken = igw_str_of(o->playback);
        ev.data.trackId = igw_str_of(o->track_id);
    }
    igw_jw_reset(&e->jw);
    igw_encode_ResultEvent(&e->jw, &ev);
    igw_jw_raw(&e->jw, "", 1); /* NUL: a C string parameter */
    char did[32], ep[24], deadline[24];
    if (igw_jw_status(&e->jw) || live_new_id(did, sizeof did)) {
        refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    snprintf(ep, sizeof ep, "%" PRId64, epoch);
    snprintf(deadline, sizeof deadline, "%" PRId64, igw_wall_ms() + (int64_t)e->cfg.establish_timeout_ms);
    bool talk = o->purpose == IGW_Purpose_ipcTalk, record = o->purpose == IGW_Purpose_recordPlayback;
    char member[24] = "", version[24] = "";
    if (talk)
        snprintf(member, sizeof member, "%" PRId64, o->member_epoch);
    if (record)
        snprintf(version, sizeof version, "%" PRId64, o->rec_version);
    const char *purpose = igw_Purpose_names[o->purpose].ptr; /* a subscribe's viewer: ipcLiveView */
    const char *v[22] = {o->ent, o->user, o->endpoint, o->token, o->pid, o->dn, o->cam, purpose,
                         o->c->fingerprint_hex, o->c->canon, o->sid, e->node_id, ep, deadline, e->jw.buf, did,
                         o->c->method, o->parent, talk ? o->call_id : "", member, record ? o->recording_id : "",
                         version};
    if (igw_db_exec(e->db, &st_open_write, v, NULL, NULL, on_open_write, o) != 0)
        refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

static void open_read(op *o)
{
    const char *call = o->purpose == IGW_Purpose_ipcTalk ? o->call_id : "";
    const char *rec = o->purpose == IGW_Purpose_recordPlayback ? o->recording_id : "";
    const char *v[9] = {o->ent, o->user, o->endpoint, o->token, o->pid, o->dn, o->cam, call, rec};
    if (igw_db_exec(o->e->db, &st_open_read, v, NULL, NULL, on_open_read, o) != 0)
        refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ipcTalk: the caller's own member record in its call. */
static void on_talk_member(void *arg, const igw_call_result *r)
{
    op *o = arg;
    if (r->cls != IGW_ERR_OK) {
        /* The runtime's reasons, on the command's paths. */
        bool call = r->cls == IGW_ERR_NOT_FOUND || r->cls == IGW_ERR_PERMISSION;
        refuse(o, r->cls == IGW_ERR_NOT_FOUND ? IGW_ERR_NOT_FOUND : r->cls,
               r->cls == IGW_ERR_PERMISSION ? "you are not a live member of the call (join it first)" : r->reason,
               call ? "/command/params/callId" : "");
        return;
    }
    if (!r->allowed) {
        refuse(o, IGW_ERR_PERMISSION, "you have no audio permission in the call", "/command/params/callId");
        return;
    }
    o->member_epoch = r->epoch;
    open_read(o);
}

static void cmd_open(op *o)
{
    igw_engine *e = o->e;
    const igw_Command *k = o->c->command;
    const igw_OpenParams *p = &k->params.interaction_open;
    if (p->purpose == IGW_Purpose_recordPlayback && (p->has & IGW_OpenParams_clip)) {
        /* Valid or not, a part is not what the first driver plays (spec). */
        refuse(o, IGW_ERR_NOT_IMPLEMENTED,
               "a partial clip is not supported: the whole recording is played (omit clip, seek instead)",
               "/command/params/clip");
        return;
    }
    if (p->purpose == IGW_Purpose_ipcTalk && !e->cfg.talk_enabled) {
        refuse(o, IGW_ERR_NOT_IMPLEMENTED, "talk is not enabled on this server", "/command/params/purpose");
        return;
    }
    if (!e->media || !e->db) {
        refuse(o, IGW_ERR_UNAVAILABLE, "this node serves no media sessions", "");
        return;
    }
    if (e->nsessions >= e->cfg.max_sessions) {
        refuse(o, IGW_ERR_CAPACITY, "this node holds as many sessions as it may", "");
        return;
    }
    snprintf(o->pid, sizeof o->pid, "%.*s", (int)k->target.productID.len, k->target.productID.ptr);
    snprintf(o->dn, sizeof o->dn, "%.*s", (int)k->target.deviceName.len, k->target.deviceName.ptr);
    snprintf(o->cam, sizeof o->cam, "%.*s", (int)p->cameraId.len, p->cameraId.ptr);
    o->listen_audio = (p->has & IGW_OpenParams_listenAudio) && p->listenAudio;
    o->purpose = p->purpose;
    if (p->purpose == IGW_Purpose_recordPlayback) /* recordingId: required by the schema */
        snprintf(o->recording_id, sizeof o->recording_id, "%.*s", (int)p->recordingId.len, p->recordingId.ptr);
    if (p->purpose == IGW_Purpose_ipcTalk) {
        if (!e->call) {
            refuse(o, IGW_ERR_UNAVAILABLE, "no conference runtime is wired", "");
            return;
        }
        o->listen_audio = true; /* two-way: the camera's microphone too */
        snprintf(o->call_id, sizeof o->call_id, "%.*s", (int)p->callId.len, p->callId.ptr);
        /* The caller must be a live member with audio permission now; no
         * auto-join. Checked before anything is claimed. */
        if (igw_call_audio_read(e->call, o->enterprise_id, o->user_id, o->call_id, o->user_id, on_talk_member, o))
            refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    open_read(o);
}

/* -- commands on a session -- */

static igw_str track_state_name(int st)
{
    return igw_str_of(st == IGW_TRACK_ACTIVE ? "active" : st == IGW_TRACK_PAUSED ? "paused" : "stopped");
}

/* -- join and leave: the conference runtime's operations on the session's call -- */

/* An accepted join or leave, until the runtime answers (the op is freed
 * once accepted). */
typedef struct talk_cmd {
    struct talk_cmd *next; /* the engine's talk_cmds */
    igw_engine *e;
    igw_CommandMethod method;
    char sid[LIVE_ID_MAX + 1], endpoint[LIVE_EP_MAX + 1], token[130];
    char call_id[IGW_CALL_ID_MAX + 1];
    int64_t target;
} talk_cmd;

/* The result goes to the session's endpoint even when the session ended
 * meanwhile (a leave ends the leaver's own). */
static void talk_result(talk_cmd *t, int cls, const char *reason, igw_ResultData *d)
{
    live_session_result(t->e, t->sid, t->endpoint, t->token, t->method, cls, reason, d);
}

static void talk_unlink(talk_cmd *t)
{
    for (talk_cmd **p = &t->e->talk_cmds; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            return;
        }
}

static bool talk_in_flight(const igw_engine *e, const char *endpoint, const char *token)
{
    for (const talk_cmd *t = e->talk_cmds; t; t = t->next)
        if (!strcmp(t->endpoint, endpoint) && !strcmp(t->token, token))
            return true;
    return false;
}

static void on_talk_done(void *arg, const igw_call_result *r)
{
    talk_cmd *t = arg;
    talk_unlink(t);
    igw_ResultData d = {0};
    if (r->cls == IGW_ERR_UNKNOWN_OUTCOME && t->method == IGW_CommandMethod_interaction_leave) {
        /* Sent, unanswered: it may have run. No result now; a retry with
         * the original token reads the receipt (spec: never a new token). */
        igw_log(IGW_LOG_WARN, NULL, "session %s: leave %s: outcome unknown, left to the receipt", t->sid, t->token);
    } else if (r->cls != IGW_ERR_OK) {
        talk_result(t, r->cls, r->reason, &d);
    } else if (t->method == IGW_CommandMethod_interaction_join) {
        d.has = IGW_ResultData_state;
        d.state = igw_str_of("joined");
        talk_result(t, IGW_ERR_OK, NULL, &d);
    } else {
        /* exactly operation, callId, participantId, memberEpoch, remaining, ended */
        char who[24], ids[IGW_CALL_MEMBERS_MAX][24];
        igw_str rest[IGW_CALL_MEMBERS_MAX];
        size_t n = r->nremaining < IGW_CALL_MEMBERS_MAX ? r->nremaining : IGW_CALL_MEMBERS_MAX;
        for (size_t i = 0; i < n; i++)
            rest[i] = (igw_str){ids[i], (size_t)snprintf(ids[i], sizeof ids[i], "%" PRId64, r->remaining[i])};
        d.has = IGW_ResultData_callId | IGW_ResultData_participantId | IGW_ResultData_memberEpoch |
                IGW_ResultData_remaining | IGW_ResultData_ended;
        d.callId = igw_str_of(t->call_id);
        d.participantId = (igw_str){who, (size_t)snprintf(who, sizeof who, "%" PRId64, t->target)};
        d.memberEpoch = r->epoch;
        d.remaining = (igw_str_list){rest, (uint32_t)n};
        d.ended = r->ended;
        talk_result(t, IGW_ERR_OK, NULL, &d);
    }
    live_talk_recheck(t->e, t->call_id); /* the owner revokes the leg of who left, at once */
    free(t);
}

/* A leave accepted before and still without its result (an interruption
 * after the claim): its receipt is the result; none means the outcome is
 * unknown, and nothing is run again. */
static void on_receipt(void *arg, const igw_call_result *r)
{
    talk_cmd *t = arg;
    if (r->cls == IGW_ERR_OK) { /* the result as the leave's own */
        on_talk_done(t, r);
        return;
    }
    talk_unlink(t);
    igw_ResultData d = {0};
    if (r->cls == IGW_ERR_NOT_FOUND)
        talk_result(t, IGW_ERR_UNKNOWN_OUTCOME, "no receipt of this leave: its outcome is unknown; nothing was run again",
                    &d);
    /* else the runtime cannot be read now: a later retry reads it */
    free(t);
}

/* A leave's receipt key: unique per enterprise, endpoint and msgToken
 * (the ledger's key), short and opaque in Redis. */
static void receipt_key(const op *o, char out[33])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    char in[24 + LIVE_EP_MAX + 130 + 3];
    int n = snprintf(in, sizeof in, "%s\n%s\n%s", o->ent, o->endpoint, o->token);
    SHA256((const unsigned char *)in, (size_t)n, d);
    igw_hex_encode(d, 16, out);
}

/* The accepted command o on call_id, until the runtime answers: linked in
 * the engine's talk_cmds (unlinked by whoever ends it). NULL: out of memory. */
static talk_cmd *talk_cmd_new(op *o, const char *call_id)
{
    talk_cmd *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->e = o->e;
    t->method = o->method;
    t->target = o->target;
    snprintf(t->sid, sizeof t->sid, "%s", o->sid);
    snprintf(t->endpoint, sizeof t->endpoint, "%s", o->endpoint);
    snprintf(t->token, sizeof t->token, "%s", o->token);
    snprintf(t->call_id, sizeof t->call_id, "%s", call_id);
    t->next = o->e->talk_cmds;
    o->e->talk_cmds = t;
    return t;
}

static void talk_carry_out(op *o, live_session *s)
{
    igw_engine *e = o->e;
    talk_cmd *t = talk_cmd_new(o, s->call_id);
    int rc = -1;
    if (t) {
        if (o->method == IGW_CommandMethod_interaction_join) {
            rc = igw_call_join(e->call, o->enterprise_id, o->target, s->call_id, on_talk_done, t);
        } else {
            char key[33];
            receipt_key(o, key);
            rc = igw_call_leave(e->call, o->enterprise_id, o->user_id, s->call_id, o->target, o->expected, key,
                                on_talk_done, t);
        }
    }
    if (rc != 0) {
        igw_ResultData d = {0};
        emit_result(e, s, o->token, o->method, IGW_ERR_UNAVAILABLE, "the conference runtime is busy; retry", &d);
        if (t)
            talk_unlink(t);
        free(t);
    }
}

static void on_talk_precheck(void *arg, const igw_call_result *r);

/* join and leave: an earlier acceptance of the key, and whether its result exists. */
static const igw_db_stmt st_talk_prior = {
    "igw_session_talk_prior",
    "SELECT " PRIOR_FP("$1::bigint", "$2::text", "$3::text") ", "
    "EXISTS (SELECT 1 FROM events ev WHERE ev.session_id = $4::text AND ev.msg_token = $3::text "
    "        AND ev.event_seq IS NULL)",
    4};

static void on_talk_prior(void *arg, const PGresult *res, const char *err)
{
    op *o = arg;
    igw_engine *e = o->e;
    if (!one_row(o, res, err, false))
        return;
    if (PQgetisnull(res, 0, 0)) { /* first time: the checks, then the claim */
        live_session *s = live_session_find(e, o->sid);
        if (!s) {
            refuse(o, IGW_ERR_CONFLICT, "the session has ended", "/command/sessionId");
            return;
        }
        if (igw_call_roster(e->call, o->enterprise_id, o->user_id, s->call_id, on_talk_precheck, o) != 0)
            refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    const char *prior = PQgetvalue(res, 0, 0);
    if (o->method == IGW_CommandMethod_interaction_leave && !col_true(res, 1) &&
        strcmp(prior, o->c->fingerprint_hex) == 0 && !talk_in_flight(e, o->endpoint, o->token)) {
        /* The same leave, pending without a result: its receipt answers. */
        live_session *s = live_session_find(e, o->sid);
        talk_cmd *t = talk_cmd_new(o, s ? s->call_id : "");
        if (t) {
            char key[33];
            receipt_key(o, key);
            if (!t->call_id[0] || igw_call_receipt(e->call, o->enterprise_id, t->call_id, key, on_receipt, t) != 0) {
                talk_unlink(t);
                free(t);
            }
        }
    }
    answer(o, IGW_ERR_OK, NULL, NULL, prior); /* the command room answers the replay or the conflict */
    op_free(o);
}

/* Before join or leave claims anything: the caller is still the live
 * member of its session's join instance; leave's target, its instance,
 * the initiator rule and the receipts' room; join's participant logged in. */
static void accept_cmd(op *o);

static void on_participant_live(void *arg, const PGresult *res, const char *err)
{
    op *o = arg;
    if (!one_row(o, res, err, false))
        return;
    if (!col_true(res, 0)) {
        refuse(o, IGW_ERR_PERMISSION, "the participant is not logged in (no live endpoint)",
               "/command/params/participantId");
        return;
    }
    accept_cmd(o);
}

static void on_talk_precheck(void *arg, const igw_call_result *r)
{
    op *o = arg;
    live_session *s = live_session_find(o->e, o->sid);
    if (!s) {
        refuse(o, IGW_ERR_CONFLICT, "the session has ended", "/command/sessionId");
        return;
    }
    if (r->cls != IGW_ERR_OK) {
        refuse(o, r->cls, r->cls == IGW_ERR_NOT_FOUND ? "the call has ended" : r->reason,
               r->cls == IGW_ERR_NOT_FOUND ? "/command/params/callId" : "");
        return;
    }
    const igw_call_member *me = NULL, *target = NULL;
    for (size_t i = 0; i < r->nmembers; i++) {
        if (r->members[i].user_id == o->user_id)
            me = &r->members[i];
        if (r->members[i].user_id == o->target)
            target = &r->members[i];
    }
    if (!me || me->epoch != s->member_epoch) {
        refuse(o, IGW_ERR_PERMISSION, "you are no longer a live member of the call in this session's join instance",
               "/command/sessionId");
        return;
    }
    if (o->method == IGW_CommandMethod_interaction_join) {
        char who[24];
        snprintf(who, sizeof who, "%" PRId64, o->target);
        const char *v[2] = {o->ent, who};
        if (igw_db_exec(o->e->db, &st_participant_live, v, NULL, NULL, on_participant_live, o) != 0)
            refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    if (o->target != o->user_id && r->initiator != o->user_id) {
        refuse(o, IGW_ERR_PERMISSION, "only the call's original initiator may remove another member",
               "/command/params/participantId");
        return;
    }
    if (!target) {
        refuse(o, IGW_ERR_NOT_FOUND, "the participant is not a live member of the call", "/command/params/participantId");
        return;
    }
    if (target->epoch != o->expected) {
        refuse(o, IGW_ERR_PARAMETER, "stale expectedMemberEpoch: the member re-entered the call",
               "/command/params/expectedMemberEpoch");
        return;
    }
    if (r->receipts >= IGW_CALL_RECEIPTS_MAX) {
        refuse(o, IGW_ERR_CAPACITY, "the call's leave receipts are full", "");
        return;
    }
    accept_cmd(o);
}

/* The accepted command's effect, and its result. */
static void carry_out(op *o, live_session *s)
{
    igw_engine *e = o->e;
    igw_ResultData d = {0};
    switch (o->method) {
    case IGW_CommandMethod_interaction_mediaOffer:
        s->offer = o->offer;
        o->offer = NULL;
        snprintf(s->offer_token, sizeof s->offer_token, "%s", o->token);
        if (s->leg && s->leg->phase >= LEG_OFFERED)
            viewer_offer(e, s, s->offer_token);
        /* else the camera's offer brings the source, then the answer */
        return;
    case IGW_CommandMethod_interaction_mediaState:
        s->app_connected = strcmp(o->state, "connected") == 0;
        d.has = IGW_ResultData_state | IGW_ResultData_mediaRevision;
        d.state = igw_str_of(o->state);
        d.mediaRevision = s->revision;
        emit_result(e, s, o->token, o->method, IGW_ERR_OK, NULL, &d);
        check_established(e, s);
        return;
    case IGW_CommandMethod_interaction_trackControl: {
        static const int triggers[] = {[IGW_TrackOperation_subscribe] = IGW_TRACK_ON_SUBSCRIBE,
                                       [IGW_TrackOperation_unsubscribe] = IGW_TRACK_ON_UNSUBSCRIBE,
                                       [IGW_TrackOperation_pause] = IGW_TRACK_ON_PAUSE,
                                       [IGW_TrackOperation_resume] = IGW_TRACK_ON_RESUME,
                                       [IGW_TrackOperation_publish] = IGW_TRACK_ON_PUBLISH,
                                       [IGW_TrackOperation_stop] = IGW_TRACK_ON_STOP};
        igw_media_kinds kinds = strcmp(o->track_id, "mic") == 0 ? IGW_MEDIA_AUDIO : IGW_MEDIA_VIDEO;
        int state = 0;
        char err[160] = "";
        igw_media_rc rc = igw_media_viewer_track(e->media, s->id, s->revision, kinds, triggers[o->track_op], &state,
                                                 err, sizeof err);
        if (rc != IGW_MEDIA_OK) {
            emit_result(e, s, o->token, o->method, rc == IGW_MEDIA_ECONFLICT ? IGW_ERR_CONFLICT : IGW_ERR_INTERNAL,
                        rc == IGW_MEDIA_ECONFLICT ? err : "the media core failed", &d);
            return;
        }
        d.has = IGW_ResultData_state | IGW_ResultData_mediaRevision | IGW_ResultData_trackId;
        d.state = track_state_name(state);
        d.trackId = igw_str_of(o->track_id);
        d.mediaRevision = s->revision;
        emit_result(e, s, o->token, o->method, IGW_ERR_OK, NULL, &d);
        return;
    }
    case IGW_CommandMethod_interaction_join:
    case IGW_CommandMethod_interaction_leave:
        talk_carry_out(o, s);
        return;
    case IGW_CommandMethod_interaction_playbackControl:
        live_playback_control(e, s, o->token, o->pb_op, o->pb_position);
        return;
    case IGW_CommandMethod_interaction_end: {
        d.has = IGW_ResultData_state;
        d.state = igw_str_of("ended");
        emit_result(e, s, o->token, o->method, IGW_ERR_OK, NULL, &d);
        live_session_end(e, s, igw_EndReason_names[o->end_reason].ptr);
        return;
    }
    default:
        return;
    }
}

static void on_accept(void *arg, const PGresult *res, const char *err)
{
    op *o = arg;
    igw_engine *e = o->e;
    if (!one_row(o, res, err, true))
        return;
    if (strcmp(PQgetvalue(res, 0, 1), "1") != 0) {
        if (!PQgetisnull(res, 0, 2)) {
            answer(o, IGW_ERR_OK, NULL, NULL, PQgetvalue(res, 0, 2));
            op_free(o);
        } else {
            refuse(o, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", "/endpointId");
        }
        return;
    }
    answer(o, IGW_ERR_OK, NULL, NULL, NULL);
    live_session *s = live_session_find(e, o->sid);
    if (!s) { /* ended while the acceptance was written */
        igw_ResultData d = {0};
        live_session_result(e, o->sid, o->endpoint, o->token, o->method, IGW_ERR_CONFLICT, "the session has ended", &d);
    } else {
        carry_out(o, s);
    }
    op_free(o);
}

static void accept_cmd(op *o)
{
    const char *v[8] = {o->ent, o->user, o->endpoint, o->token, o->c->method, o->sid, o->c->fingerprint_hex,
                        o->c->canon};
    if (igw_db_exec(o->e->db, &st_accept, v, NULL, NULL, on_accept, o) != 0)
        refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* The session is not held here: the row says why. */
static void on_session_row(void *arg, const PGresult *res, const char *err)
{
    op *o = arg;
    if (!res) {
        refuse_db(o, err, false);
        return;
    }
    if (PQntuples(res) != 1) {
        refuse(o, IGW_ERR_NOT_FOUND, "unknown session", "/command/sessionId");
        return;
    }
    if (strcmp(PQgetvalue(res, 0, 0), "ended") == 0 || strcmp(PQgetvalue(res, 0, 1), o->e->node_id) == 0) {
        /* Ended, or this node's from an earlier epoch (its sweep ends it). */
        refuse(o, IGW_ERR_CONFLICT, "the session has ended", "/command/sessionId");
        return;
    }
    /* The seam of several nodes: forwarding to the owner comes here. */
    refuse(o, IGW_ERR_UNAVAILABLE, "the session is held by another node", "/command/sessionId");
}

/* Checks against the live session before anything is claimed. */
static void cmd_on_session(op *o)
{
    igw_engine *e = o->e;
    const igw_Command *k = o->c->command;
    live_session *s = live_session_find(e, o->sid);
    if (!s || s->enterprise_id != o->enterprise_id || s->user_id != o->user_id || strcmp(s->endpoint, o->endpoint)) {
        if (s || !e->db) { /* someone else's: as unknown as none */
            refuse(o, IGW_ERR_NOT_FOUND, "unknown session", "/command/sessionId");
            return;
        }
        const char *v[4] = {o->sid, o->ent, o->user, o->endpoint};
        if (igw_db_exec(e->db, &st_session_row, v, NULL, NULL, on_session_row, o) != 0)
            refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    int64_t rev = 0;
    switch (o->method) {
    case IGW_CommandMethod_interaction_mediaOffer: {
        const igw_MediaOfferParams *p = &k->params.interaction_mediaOffer;
        rev = p->mediaRevision;
        if (rev == (int64_t)s->revision && (s->offered || s->offer)) {
            refuse(o, IGW_ERR_CONFLICT, "this mediaRevision has its offer already", "/command/params/mediaRevision");
            return;
        }
        if (!(o->offer = strndup(p->webrtc.sdp.ptr, p->webrtc.sdp.len))) {
            refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
            return;
        }
        break;
    }
    case IGW_CommandMethod_interaction_mediaState: {
        const igw_MediaStateParams *p = &k->params.interaction_mediaState;
        rev = p->mediaRevision;
        snprintf(o->state, sizeof o->state, "%.*s", (int)igw_MediaPeerState_names[p->state].len,
                 igw_MediaPeerState_names[p->state].ptr);
        break;
    }
    case IGW_CommandMethod_interaction_trackControl: {
        const igw_TrackControlParams *p = &k->params.interaction_trackControl;
        rev = p->mediaRevision;
        o->track_op = p->operation;
        snprintf(o->track_id, sizeof o->track_id, "%.*s", (int)p->trackId.len, p->trackId.ptr);
        if (p->operation == IGW_TrackOperation_publish || p->operation == IGW_TrackOperation_stop) {
            /* The machine's own refusal (schema: reject publish/stop). */
            igw_sm_result r = igw_sm_fire(&igw_sm_track, IGW_TRACK_ACTIVE,
                                          p->operation == IGW_TrackOperation_publish ? IGW_TRACK_ON_PUBLISH
                                                                                     : IGW_TRACK_ON_STOP,
                                          0);
            refuse(o, r.err, r.reason, "/command/params/operation");
            return;
        }
        if (strcmp(o->track_id, "video-1") != 0 && !(s->listen_audio && strcmp(o->track_id, "mic") == 0)) {
            refuse(o, IGW_ERR_NOT_FOUND, "unknown track of this session", "/command/params/trackId");
            return;
        }
        if (!s->offered) {
            refuse(o, IGW_ERR_CONFLICT, "no media yet: interaction.mediaOffer first", "/command/params/trackId");
            return;
        }
        break;
    }
    case IGW_CommandMethod_interaction_end:
        o->end_reason = k->params.interaction_end.reason;
        rev = s->revision;
        break;
    case IGW_CommandMethod_interaction_join:
    case IGW_CommandMethod_interaction_leave: {
        bool join = o->method == IGW_CommandMethod_interaction_join;
        if (!s->talk) {
            refuse(o, IGW_ERR_CONFLICT, "not an ipcTalk session", "/command/sessionId");
            return;
        }
        if (join && !e->cfg.talk_members) {
            refuse(o, IGW_ERR_NOT_IMPLEMENTED, "extra members are off on this server (two-party talk)",
                   "/command/method");
            return;
        }
        if (!e->call) {
            refuse(o, IGW_ERR_UNAVAILABLE, "no conference runtime is wired", "");
            return;
        }
        igw_str who = join ? k->params.interaction_join.participantId : k->params.interaction_leave.participantId;
        o->target = strtoll(who.ptr, NULL, 10); /* canonical_id: digits, in range */
        if (!join) {
            const igw_LeaveParams *p = &k->params.interaction_leave;
            if (p->callId.len != strlen(s->call_id) || memcmp(p->callId.ptr, s->call_id, p->callId.len) != 0) {
                refuse(o, IGW_ERR_PARAMETER, "not the call this session is bound to", "/command/params/callId");
                return;
            }
            o->expected = p->expectedMemberEpoch;
        }
        /* A replay first: its checks were made when it was accepted, and
         * what it changed (who is live) would refuse it now. */
        const char *v[4] = {o->ent, o->endpoint, o->token, o->sid};
        if (igw_db_exec(e->db, &st_talk_prior, v, NULL, NULL, on_talk_prior, o) != 0)
            refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    case IGW_CommandMethod_interaction_playbackControl: {
        const igw_PlaybackControlParams *p = &k->params.interaction_playbackControl;
        rev = p->mediaRevision;
        if (!s->playback) {
            refuse(o, IGW_ERR_CONFLICT, "not a recordPlayback session", "/command/sessionId");
            return;
        }
        if (s->pb_token[0]) {
            refuse(o, IGW_ERR_CONFLICT, "a playback control is in flight: wait for its result",
                   "/command/params/operation");
            return;
        }
        static const int triggers[] = {[IGW_PlaybackOperation_play] = IGW_PLAYBACK_ON_PLAY,
                                       [IGW_PlaybackOperation_pause] = IGW_PLAYBACK_ON_PAUSE,
                                       [IGW_PlaybackOperation_seek] = IGW_PLAYBACK_ON_SEEK};
        igw_sm_result r = igw_sm_fire(&igw_sm_playback, s->pb_state, triggers[p->operation], 0);
        if (!r.ok) {
            refuse(o, r.err,
                   s->pb_state == IGW_PLAYBACK_NONE ? "not loaded yet: wait for the loaded and ready events"
                   : r.reason                       ? r.reason
                                                    : "not allowed in this playback state",
                   "/command/params/operation");
            return;
        }
        if (p->operation == IGW_PlaybackOperation_seek && p->positionMs >= s->duration_ms) {
            refuse(o, IGW_ERR_PARAMETER, "positionMs is not inside the recording (0 <= positionMs < durationMs)",
                   "/command/params/positionMs");
            return;
        }
        o->pb_op = p->operation;
        o->pb_position = p->operation == IGW_PlaybackOperation_seek ? p->positionMs : -1;
        break;
    }
    case IGW_CommandMethod_interaction_subscribe: {
        const igw_SubscribeParams *p = &k->params.interaction_subscribe;
        if (s->playback) {
            refuse(o, IGW_ERR_CONFLICT, "a playback has one viewer: open another recordPlayback",
                   "/command/sessionId");
            return;
        }
        snprintf(o->track_id, sizeof o->track_id, "%.*s", (int)p->trackId.len, p->trackId.ptr);
        if (strcmp(o->track_id, "video-1") != 0 && !(s->listen_audio && strcmp(o->track_id, "mic") == 0)) {
            refuse(o, IGW_ERR_NOT_FOUND, "unknown track of this session", "/command/params/trackId");
            return;
        }
        if (!s->leg) {
            refuse(o, IGW_ERR_CONFLICT, "the session has no camera upstream", "/command/sessionId");
            return;
        }
        if (e->nsessions >= e->cfg.max_sessions) {
            refuse(o, IGW_ERR_CAPACITY, "this node holds as many sessions as it may", "");
            return;
        }
        snprintf(o->parent, sizeof o->parent, "%s", s->id);
        snprintf(o->pid, sizeof o->pid, "%s", s->leg->product_id);
        snprintf(o->dn, sizeof o->dn, "%s", s->leg->device_name);
        snprintf(o->cam, sizeof o->cam, "%s", s->leg->camera_id);
        o->listen_audio = s->listen_audio;
        open_write(o); /* the rights are checked again there */
        return;
    }
    default:
        refuse(o, IGW_ERR_NOT_IMPLEMENTED, "this command method is not implemented yet", "/command/method");
        return;
    }
    if (rev != (int64_t)s->revision) {
        refuse(o, IGW_ERR_CONFLICT, "stale mediaRevision", "/command/params/mediaRevision");
        return;
    }
    accept_cmd(o);
}

void live_command(igw_engine *e, const igw_engine_cmd *c, void (*ans)(void *ctx, const igw_engine_cmd_answer *a),
                  void *ctx)
{
    op *o = calloc(1, sizeof *o);
    if (!o) {
        igw_engine_cmd_answer a = {.cls = IGW_ERR_INTERNAL, .reason = "out of memory", .path = ""};
        ans(ctx, &a);
        return;
    }
    o->e = e;
    o->answer = ans;
    o->ctx = ctx;
    o->c = c;
    o->method = c->command->method;
    o->enterprise_id = c->enterprise_id;
    o->user_id = c->user_id;
    snprintf(o->ent, sizeof o->ent, "%" PRId64, c->enterprise_id);
    snprintf(o->user, sizeof o->user, "%" PRId64, c->user_id);
    snprintf(o->endpoint, sizeof o->endpoint, "%s", c->endpoint_id);
    snprintf(o->token, sizeof o->token, "%s", c->msg_token);
    if (c->command->has & IGW_Command_sessionId)
        snprintf(o->sid, sizeof o->sid, "%.*s", (int)c->command->sessionId.len, c->command->sessionId.ptr);
    if (!e->db) {
        refuse(o, IGW_ERR_UNAVAILABLE, "this node serves no sessions", "");
        return;
    }
    if (o->method == IGW_CommandMethod_interaction_open)
        cmd_open(o);
    else
        cmd_on_session(o);
}
