/* playback.c - recordPlayback's player (docs/recordings.md): the camera
 * loads the recording and offers (loaded), both transports come up (ready,
 * with the session's establish), and it plays, pauses and seeks only when
 * the application says so (interaction.playbackControl). Each phase is the
 * generated `playback` machine's, stored on the session with its
 * interaction.state event.
 *
 * The catalog is the platform's word on the recording: the open reads it
 * (the version and duration; the camera offline refused), the version
 * travels in the invite (the camera plays that version or declines), and
 * every second the recordings being played are read again; a session whose
 * recording changed or is gone ends. On the engine's loop only. */
#include "session/purpose.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "clock.h"
#include "core/log.h"
#include "decode.h"
#include "json.h"
#include "paths.h"
#include "session/commands.h"

#define PB_REPLY_MS 5000    /* the camera answers a control within this */
#define PB_RECHECK_MS 1000  /* the catalog is read again this often */

/* A playback session's own state. */
typedef struct pb_session {
    char recording_id[LIVE_ID_MAX + 1];
    int64_t version, duration_ms; /* the catalog's at the open */
    igw_playback_state state;
    int64_t position_ms;          /* the camera's last */
    char token[LIVE_TOKEN_MAX + 1]; /* the playbackControl the camera has not answered ("": none) */
    char down[32];                /* the downlink's own token, which the camera's reply echoes */
    int trigger;                  /* igw_playback_trigger of that command */
    int64_t deadline_ms;          /* the camera's reply is due (monotonic) */
} pb_session;

/* What the leg's invite adds: the recording at the catalog's version. */
typedef struct pb_leg {
    char recording_id[LIVE_ID_MAX + 1];
    int64_t version;
} pb_leg;

/* The engine-wide state: the catalog recheck. */
typedef struct pb_engine {
    int64_t checked_ms; /* last sent (monotonic) */
    bool checking;      /* one in flight */
} pb_engine;

static pb_session *pb_of(const live_session *s)
{
    return s->purpose == IGW_Purpose_recordPlayback ? s->pdata : NULL;
}

/* ---- the open ---------------------------------------------------------------------- */

/* The recording of that camera, as the catalog has it. */
enum { RC_PID, RC_DN, RC_CAM, RC_REC, RC__N };
enum { RC_COL_VERSION, RC_COL_DURATION, RC_COL_AUDIO, RC_COL_AVAILABLE };
static const igw_db_stmt st_recording = {
    "igw_playback_recording",
    "SELECT r.recording_version, r.duration_ms, r.audio_codec IS NOT NULL, r.available FROM recordings r "
    "WHERE r.product_id = $1::text AND r.device_name = $2::text AND r.camera_id = $3::text "
    "  AND r.recording_id = $4::text",
    RC__N};

static bool pb_check(igw_engine *e, const igw_OpenParams *p, uint32_t *guards, live_refusal *r)
{
    (void)e;
    (void)guards;
    if (!(p->has & IGW_OpenParams_clip))
        return false;
    /* Valid or not, a part is not what the first driver plays (spec). */
    *r = (live_refusal){.cls = IGW_ERR_NOT_IMPLEMENTED,
                        .reason = "a partial clip is not supported: the whole recording is played (omit clip, seek "
                                  "instead)",
                        .path = IGW_PATH_command_params_clip};
    return true;
}

static void on_recording(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    if (!res) {
        live_op_refuse_db(o, err, false);
        return;
    }
    if (PQntuples(res) != 1) {
        live_op_refuse(o, IGW_ERR_NOT_FOUND, "unknown recording of this camera", IGW_PATH_command_params_recordingId);
        return;
    }
    if (!igw_db_true(res, 0, RC_COL_AVAILABLE)) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "the catalog says the recording is not available",
                       IGW_PATH_command_params_recordingId);
        return;
    }
    pb_session *p = calloc(1, sizeof *p);
    pb_leg *l = calloc(1, sizeof *l);
    if (!p || !l) {
        free(p);
        free(l);
        live_op_refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    snprintf(p->recording_id, sizeof p->recording_id, "%s", o->cols.recording_id);
    p->version = strtoll(PQgetvalue(res, 0, RC_COL_VERSION), NULL, 10);
    p->duration_ms = strtoll(PQgetvalue(res, 0, RC_COL_DURATION), NULL, 10);
    p->state = IGW_PLAYBACK_NONE; /* until the camera loads it */
    snprintf(l->recording_id, sizeof l->recording_id, "%s", p->recording_id);
    l->version = p->version;
    if (igw_db_true(res, 0, RC_COL_AUDIO))
        o->guards |= IGW_PURPOSE_IF_RECORDINGAUDIO;
    snprintf(o->cols.recording_version, sizeof o->cols.recording_version, "%" PRId64, p->version);
    o->pdata = p;
    o->ldata = l;
    live_op_admitted(o);
}

static void pb_admit(live_op *o)
{
    const igw_OpenParams *p = &o->k->params.interaction_open;
    snprintf(o->cols.recording_id, sizeof o->cols.recording_id, "%.*s", (int)p->recordingId.len, p->recordingId.ptr);
    const char *v[RC__N] = {[RC_PID] = o->pid, [RC_DN] = o->dn, [RC_CAM] = o->cam, [RC_REC] = o->cols.recording_id};
    if (igw_db_exec(o->e->db, &st_recording, v, NULL, NULL, on_recording, o) != 0)
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

static void pb_invite(const void *ldata, igw_MediaInviteParams *p)
{
    const pb_leg *l = ldata;
    p->has |= IGW_MediaInviteParams_recording;
    p->recording = (igw_PlaybackSource){.has = IGW_PlaybackSource__REQUIRED,
                                        .recordingId = igw_str_of(l->recording_id),
                                        .recordingVersion = l->version};
}

/* ---- the player's phases ------------------------------------------------------------ */

static bool pb_ready(const live_session *s)
{
    return pb_of(s)->state == IGW_PLAYBACK_LOADED; /* the camera loaded it */
}

static void pb_state_extra(const live_session *s, const char **phase, int64_t *position_ms)
{
    const pb_session *p = pb_of(s);
    if (p->state == IGW_PLAYBACK_NONE)
        return;
    *phase = igw_sm_playback.states[p->state];
    *position_ms = p->position_ms;
}

static void pb_loaded(igw_engine *e, live_session *s)
{
    pb_session *p = pb_of(s);
    if (p->state != IGW_PLAYBACK_NONE)
        return;
    p->state = igw_playback_next(p->state, IGW_PLAYBACK_ON_LOAD, 0, NULL);
    p->position_ms = 0;
    live_session_write(e, s, IGW_SESSION_INVITED, LIVE_FROM(IGW_SESSION_INVITED), NULL);
    igw_log(IGW_LOG_INFO, NULL, "session %s: recording %s loaded by the camera", s->id, p->recording_id);
}

static void pb_established(igw_engine *e, live_session *s)
{
    (void)e;
    pb_session *p = pb_of(s);
    p->state = igw_playback_next(p->state, IGW_PLAYBACK_ON_READY, 0, NULL);
}

static void control_result(igw_engine *e, live_session *s, const char *token, int cls, const char *reason)
{
    const pb_session *p = pb_of(s);
    igw_ResultData d = {0};
    if (cls == IGW_ERR_OK) {
        d.has = IGW_ResultData_state | IGW_ResultData_positionMs | IGW_ResultData_mediaRevision;
        d.state = igw_str_of(igw_sm_playback.states[p->state]);
        d.positionMs = p->position_ms;
        d.mediaRevision = s->revision;
    }
    live_session_result(e, s->id, s->endpoint, token, IGW_CommandMethod_interaction_playbackControl, cls, reason, &d);
}

/* The reply's data: {state: playing|paused, positionMs}. */
static int reply_data(igw_str data, bool *playing, int64_t *pos)
{
    igw_arena a;
    igw_arena_init(&a, 4096);
    igw_json j;
    igw_json_init(&j, data.ptr, data.len, &a, 2);
    igw_str key, st = {NULL, 0};
    int have = 0, r;
    if (!data.ptr || igw_json_object_begin(&j) != 0) {
        igw_arena_free(&a);
        return -1;
    }
    while ((r = igw_json_object_next(&j, &key)) == 1) {
        if (igw_str_eq(key, "state", 5) && igw_json_string(&j, &st) == 0)
            have |= 1;
        else if (igw_str_eq(key, "positionMs", 10) && igw_json_int(&j, pos, 0, INT64_MAX) == 0)
            have |= 2;
        else if (igw_json_value(&j, IGW_JSON_STRICT, 8, data.len, &key) != 0)
            break;
    }
    *playing = igw_str_eq(st, "playing", 7);
    bool ok = r == 0 && have == 3 && (*playing || igw_str_eq(st, "paused", 6));
    igw_arena_free(&a);
    return ok ? 0 : -1;
}

/* The camera's playbackControlReply. */
static void pb_uplink(igw_engine *e, live_session *s, const igw_engine_uplink *u)
{
    pb_session *p = pb_of(s);
    if (igw_proto_method_of(u->method) != IGW_PROTO_M_playbackControlReply || !p->token[0] ||
        !igw_str_eq(u->msg_token, p->down, strlen(p->down)))
        return; /* late: its command failed by its deadline already */
    char token[sizeof p->token];
    memcpy(token, p->token, sizeof token);
    p->token[0] = '\0';
    bool playing = false;
    int64_t pos = 0;
    if (u->code != 200) {
        igw_log(IGW_LOG_INFO, NULL, "session %s: the camera refused a playback control (code %" PRId64 ")", s->id,
                u->code);
        control_result(e, s, token, IGW_ERR_CONFLICT, "the camera refused the playback control");
        return;
    }
    if (reply_data(u->data, &playing, &pos) != 0 || pos > p->duration_ms) {
        igw_log(IGW_LOG_WARN, NULL, "session %s: the camera's playbackControlReply has no usable data", s->id);
        control_result(e, s, token, IGW_ERR_INTERNAL, "the camera's answer cannot be used");
        return;
    }
    igw_playback_state next = igw_playback_next(p->state, p->trigger, 0, NULL);
    if ((next == IGW_PLAYBACK_PLAYING) != playing)
        igw_log(IGW_LOG_WARN, NULL, "session %s: the camera says %s after %s", s->id, playing ? "playing" : "paused",
                igw_sm_playback.triggers[p->trigger]);
    p->state = next;
    p->position_ms = pos;
    live_session_write(e, s, IGW_SESSION_ESTABLISHED, LIVE_FROM(IGW_SESSION_ESTABLISHED), NULL);
    control_result(e, s, token, IGW_ERR_OK, NULL);
}

static void pb_end(igw_engine *e, live_session *s, const char *reason)
{
    pb_session *p = pb_of(s);
    if (!p->token[0])
        return;
    char why[96];
    snprintf(why, sizeof why, "the session ended before the camera answered (%s)", reason);
    control_result(e, s, p->token, IGW_ERR_CONFLICT, why);
    p->token[0] = '\0';
}

/* ---- the catalog recheck ------------------------------------------------------------ */

/* The sessions' recordings ($1: [{s, p, d, r, v}]) that the catalog no
 * longer holds at that version: the session and why. */
enum { RK_LIST, RK__N };
enum { RK_COL_SESSION, RK_COL_WHY };
static const igw_db_stmt st_recheck = {
    "igw_playback_recheck",
    "SELECT x.s, CASE WHEN r.recording_id IS NULL THEN 'recordingRemoved' ELSE 'recordingChanged' END "
    "FROM jsonb_to_recordset($1::jsonb) AS x(s text, p text, d text, r text, v bigint) "
    "LEFT JOIN recordings r ON r.product_id = x.p AND r.device_name = x.d AND r.recording_id = x.r "
    "WHERE r.recording_id IS NULL OR r.recording_version <> x.v",
    RK__N};

static void on_recheck(void *arg, const PGresult *res, const char *err)
{
    igw_engine *e = arg;
    pb_engine *pe = e->pstate[IGW_Purpose_recordPlayback];
    if (pe)
        pe->checking = false;
    if (!res) {
        igw_log(IGW_LOG_WARN, NULL, "session: the playbacks' catalog recheck failed: %s", err);
        return;
    }
    for (int i = 0; i < PQntuples(res); i++) {
        live_session *s = live_session_find(e, PQgetvalue(res, i, RK_COL_SESSION));
        if (s && pb_of(s))
            live_session_end(e, s, PQgetvalue(res, i, RK_COL_WHY));
    }
}

static void recheck(igw_engine *e, pb_engine *pe)
{
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_array_begin(&w);
    unsigned n = 0;
    /* Every playback in one statement: at most max_sessions (1024 by
     * default) entries of about 150 bytes. */
    for (const live_session *s = e->sessions; s; s = s->next) {
        const pb_session *p = pb_of(s);
        if (!p || !s->leg)
            continue;
        n++;
        igw_jw_object_begin(&w);
        igw_jw_key(&w, "s", 1);
        igw_jw_string(&w, s->id, strlen(s->id));
        igw_jw_key(&w, "p", 1);
        igw_jw_string(&w, s->leg->product_id, strlen(s->leg->product_id));
        igw_jw_key(&w, "d", 1);
        igw_jw_string(&w, s->leg->device_name, strlen(s->leg->device_name));
        igw_jw_key(&w, "r", 1);
        igw_jw_string(&w, p->recording_id, strlen(p->recording_id));
        igw_jw_key(&w, "v", 1);
        igw_jw_int(&w, p->version);
        igw_jw_object_end(&w);
    }
    igw_jw_array_end(&w);
    igw_jw_raw(&w, "", 1); /* NUL: a C string parameter */
    const char *v[RK__N] = {[RK_LIST] = w.buf};
    if (n && !igw_jw_status(&w) && igw_db_exec(e->db, &st_recheck, v, NULL, NULL, on_recheck, e) == 0)
        pe->checking = true;
    igw_jw_free(&w);
}

/* Controls the camera did not answer in time fail; the catalog is read again. */
static void pb_tick(igw_engine *e, int64_t now_ms)
{
    for (live_session *s = e->sessions; s; s = s->next) {
        pb_session *p = pb_of(s);
        if (p && p->token[0] && now_ms >= p->deadline_ms) {
            char token[sizeof p->token];
            memcpy(token, p->token, sizeof token);
            p->token[0] = '\0';
            igw_log(IGW_LOG_INFO, NULL, "session %s: the camera did not answer a playback control", s->id);
            control_result(e, s, token, IGW_ERR_UNAVAILABLE, "the camera did not answer the playback control");
        }
    }
    pb_engine *pe = e->pstate[IGW_Purpose_recordPlayback];
    if (!pe && !(pe = e->pstate[IGW_Purpose_recordPlayback] = calloc(1, sizeof *pe)))
        return;
    if (e->db && !pe->checking && now_ms - pe->checked_ms >= PB_RECHECK_MS) {
        pe->checked_ms = now_ms;
        recheck(e, pe);
    }
}

static void pb_stop(igw_engine *e)
{
    free(e->pstate[IGW_Purpose_recordPlayback]);
    e->pstate[IGW_Purpose_recordPlayback] = NULL;
}

const struct igw_purpose_hooks igw_purpose_playback = {
    .check = pb_check,
    .admit = pb_admit,
    .offline_reason = "the camera is offline: recordings play from the camera only (there is no cloud playback)",
    .establish_on_flow = false, /* a player sends nothing until play */
    .ready = pb_ready,
    .state_extra = pb_state_extra,
    .invite = pb_invite,
    .loaded = pb_loaded,
    .established = pb_established,
    .uplink = pb_uplink,
    .end = pb_end,
    .tick = pb_tick,
    .stop = pb_stop,
};

/* ---- interaction.playbackControl ------------------------------------------------------ */

static const int pb_triggers[] = {[IGW_PlaybackOperation_play] = IGW_PLAYBACK_ON_PLAY,
                                  [IGW_PlaybackOperation_pause] = IGW_PLAYBACK_ON_PAUSE,
                                  [IGW_PlaybackOperation_seek] = IGW_PLAYBACK_ON_SEEK};

/* The downlink row of the camera's player control. */
static const igw_proto_down *pb_down(void)
{
    return &igw_proto_device_downs[IGW_PROTO_DEVICE_DOWN_media_session_playbackControl];
}

/* The accepted control goes to the camera. */
static void control_done(live_op *o, live_session *s)
{
    igw_engine *e = o->e;
    pb_session *p = pb_of(s);
    if (p->token[0]) { /* two accepted at once: the first one goes */
        control_result(e, s, o->token, IGW_ERR_CONFLICT, "a playback control is in flight: wait for its result");
        return;
    }
    if (!s->leg || live_new_id(p->down, sizeof p->down)) {
        control_result(e, s, o->token, IGW_ERR_UNAVAILABLE, "the camera cannot be reached, retry");
        return;
    }
    igw_MediaPlaybackControl c = {.has = IGW_MediaPlaybackControl__REQUIRED,
                                  .method = igw_str_of(pb_down()->method),
                                  .msgToken = igw_str_of(p->down),
                                  .sessionId = igw_str_of(s->leg->id),
                                  .params = {.has = IGW_PlaybackControlParams__REQUIRED,
                                             .operation = (igw_PlaybackOperation)o->iarg,
                                             .mediaRevision = s->leg->revision}};
    if (o->iarg == IGW_PlaybackOperation_seek) {
        c.params.has |= IGW_PlaybackControlParams_positionMs;
        c.params.positionMs = o->arg1;
    }
    igw_jw_reset(&e->jw);
    igw_encode_MediaPlaybackControl(&e->jw, &c);
    if (live_leg_publish(e, s->leg, pb_down()) != 0) {
        control_result(e, s, o->token, IGW_ERR_UNAVAILABLE, "the camera cannot be reached, retry");
        return;
    }
    snprintf(p->token, sizeof p->token, "%s", o->token);
    p->trigger = pb_triggers[o->iarg];
    p->deadline_ms = igw_clock_ms() + PB_REPLY_MS;
}

void igw_playback_control(live_op *o)
{
    live_session *s = live_session_find(o->e, o->sid);
    const igw_PlaybackControlParams *pp = &o->k->params.interaction_playbackControl;
    pb_session *p = pb_of(s);
    if (!p) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "not a recordPlayback session", IGW_PATH_command_sessionId);
        return;
    }
    if (p->token[0]) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "a playback control is in flight: wait for its result",
                       IGW_PATH_command_params_operation);
        return;
    }
    igw_sm_result r = igw_sm_fire(&igw_sm_playback, p->state, pb_triggers[pp->operation], 0);
    if (!r.ok) {
        live_op_refuse(o, r.err,
                       p->state == IGW_PLAYBACK_NONE ? "not loaded yet: wait for the loaded and ready events"
                       : r.reason                    ? r.reason
                                                     : "not allowed in this playback state",
                       IGW_PATH_command_params_operation);
        return;
    }
    if (pp->operation == IGW_PlaybackOperation_seek && pp->positionMs >= p->duration_ms) {
        live_op_refuse(o, IGW_ERR_PARAMETER, "positionMs is not inside the recording (0 <= positionMs < durationMs)",
                       IGW_PATH_command_params_positionMs);
        return;
    }
    if (!live_op_revision(o, s, pp->mediaRevision))
        return;
    o->iarg = pp->operation;
    o->arg1 = pp->operation == IGW_PlaybackOperation_seek ? pp->positionMs : -1;
    live_op_accept(o, control_done);
}
