/* playback.c - recordPlayback's player: the camera loads the recording and
 * offers (loaded), both transports come up (ready, with the session's
 * establish), and it plays, pauses and seeks only when the application
 * says so (docs/recordings.md). Each phase is the generated `playback`
 * machine's, stored on the session with its interaction.state event.
 *
 * The catalog is the platform's word on the recording: the version read
 * at the open travels in the invite (the camera plays that version or
 * declines), and every second the recordings being played are read again;
 * a session whose recording changed or is gone ends. On the engine's loop
 * only (live.h). */
#include "session/live.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "clock.h"
#include "core/log.h"
#include "decode.h"
#include "json.h"

#define PB_REPLY_MS 5000    /* the camera answers a control within this */
#define PB_RECHECK_MS 1000  /* the catalog is read again this often */

/* The sessions' recordings ($1: [{s, p, d, r, v}]) that the catalog no
 * longer holds at that version: the session and why. */
static const igw_db_stmt st_recheck = {
    "igw_playback_recheck",
    "SELECT x.s, CASE WHEN r.recording_id IS NULL THEN 'recordingRemoved' ELSE 'recordingChanged' END "
    "FROM jsonb_to_recordset($1::jsonb) AS x(s text, p text, d text, r text, v bigint) "
    "LEFT JOIN recordings r ON r.product_id = x.p AND r.device_name = x.d AND r.recording_id = x.r "
    "WHERE r.recording_id IS NULL OR r.recording_version <> x.v",
    1};

void live_playback_loaded(igw_engine *e, live_leg *leg)
{
    for (live_session *s = leg->viewers; s; s = s->leg_next) {
        if (!s->playback || s->pb_state != IGW_PLAYBACK_NONE)
            continue;
        s->pb_state = igw_playback_next(s->pb_state, IGW_PLAYBACK_ON_LOAD, 0, NULL);
        s->position_ms = 0;
        live_session_write(e, s, "invited", "{invited}", NULL, igw_sm_playback.states[s->pb_state], 0);
        igw_log(IGW_LOG_INFO, NULL, "session %s: recording %s loaded by the camera", s->id, s->recording_id);
    }
    live_sessions_check(e, leg);
}

static void control_result(igw_engine *e, live_session *s, const char *token, int cls, const char *reason)
{
    igw_ResultData d = {0};
    if (cls == IGW_ERR_OK) {
        d.has = IGW_ResultData_state | IGW_ResultData_positionMs | IGW_ResultData_mediaRevision;
        d.state = igw_str_of(igw_sm_playback.states[s->pb_state]);
        d.positionMs = s->position_ms;
        d.mediaRevision = s->revision;
    }
    live_session_result(e, s->id, s->endpoint, token, IGW_CommandMethod_interaction_playbackControl, cls, reason, &d);
}

void live_playback_control(igw_engine *e, live_session *s, const char *token, igw_PlaybackOperation op,
                           int64_t position_ms)
{
    if (s->pb_token[0]) { /* two accepted at once: the first one goes */
        control_result(e, s, token, IGW_ERR_CONFLICT, "a playback control is in flight: wait for its result");
        return;
    }
    if (!s->leg || live_leg_playback(e, s->leg, op, position_ms, s->pb_down, sizeof s->pb_down) != 0) {
        control_result(e, s, token, IGW_ERR_UNAVAILABLE, "the camera cannot be reached, retry");
        return;
    }
    static const int triggers[] = {[IGW_PlaybackOperation_play] = IGW_PLAYBACK_ON_PLAY,
                                   [IGW_PlaybackOperation_pause] = IGW_PLAYBACK_ON_PAUSE,
                                   [IGW_PlaybackOperation_seek] = IGW_PLAYBACK_ON_SEEK};
    snprintf(s->pb_token, sizeof s->pb_token, "%s", token);
    s->pb_trigger = triggers[op];
    s->pb_deadline_ms = igw_clock_ms() + PB_REPLY_MS;
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

void live_playback_reply(igw_engine *e, live_leg *leg, const igw_engine_uplink *u)
{
    live_session *s = leg->viewers; /* a playback leg has one */
    if (!s || !s->playback || !s->pb_token[0] || !igw_str_eq(u->msg_token, s->pb_down, strlen(s->pb_down)))
        return; /* late: its command failed by its deadline already */
    char token[sizeof s->pb_token];
    memcpy(token, s->pb_token, sizeof token);
    s->pb_token[0] = '\0';
    bool playing = false;
    int64_t pos = 0;
    if (u->code != 200) {
        igw_log(IGW_LOG_INFO, NULL, "session %s: the camera refused a playback control (code %" PRId64 ")", s->id,
                u->code);
        control_result(e, s, token, IGW_ERR_CONFLICT, "the camera refused the playback control");
        return;
    }
    if (reply_data(u->data, &playing, &pos) != 0 || pos > s->duration_ms) {
        igw_log(IGW_LOG_WARN, NULL, "session %s: the camera's playbackControlReply has no usable data", s->id);
        control_result(e, s, token, IGW_ERR_INTERNAL, "the camera's answer cannot be used");
        return;
    }
    igw_playback_state next = igw_playback_next(s->pb_state, s->pb_trigger, 0, NULL);
    if ((next == IGW_PLAYBACK_PLAYING) != playing)
        igw_log(IGW_LOG_WARN, NULL, "session %s: the camera says %s after %s", s->id, playing ? "playing" : "paused",
                igw_sm_playback.triggers[s->pb_trigger]);
    s->pb_state = next;
    s->position_ms = pos;
    live_session_write(e, s, "established", "{established}", NULL, igw_sm_playback.states[next], pos);
    control_result(e, s, token, IGW_ERR_OK, NULL);
}

void live_playback_end(igw_engine *e, live_session *s, const char *reason)
{
    if (!s->pb_token[0])
        return;
    char why[96];
    snprintf(why, sizeof why, "the session ended before the camera answered (%s)", reason);
    control_result(e, s, s->pb_token, IGW_ERR_CONFLICT, why);
    s->pb_token[0] = '\0';
}

static void on_recheck(void *arg, const PGresult *res, const char *err)
{
    igw_engine *e = arg;
    e->pb_checking = false;
    if (!res) {
        igw_log(IGW_LOG_WARN, NULL, "session: the playbacks' catalog recheck failed: %s", err);
        return;
    }
    for (int i = 0; i < PQntuples(res); i++) {
        live_session *s = live_session_find(e, PQgetvalue(res, i, 0));
        if (s && s->playback)
            live_session_end(e, s, PQgetvalue(res, i, 1));
    }
}

static void recheck(igw_engine *e)
{
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_array_begin(&w);
    unsigned n = 0;
    /* Every playback in one statement: at most max_sessions (1024 by
     * default) entries of about 150 bytes. */
    for (const live_session *s = e->sessions; s; s = s->next) {
        if (!s->playback || !s->leg)
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
        igw_jw_string(&w, s->recording_id, strlen(s->recording_id));
        igw_jw_key(&w, "v", 1);
        igw_jw_int(&w, s->recording_version);
        igw_jw_object_end(&w);
    }
    igw_jw_array_end(&w);
    igw_jw_raw(&w, "", 1); /* NUL: a C string parameter */
    const char *v[1] = {w.buf};
    if (n && !igw_jw_status(&w) && igw_db_exec(e->db, &st_recheck, v, NULL, NULL, on_recheck, e) == 0)
        e->pb_checking = true;
    igw_jw_free(&w);
}

void live_playback_tick(igw_engine *e, int64_t now_ms)
{
    for (live_session *s = e->sessions; s; s = s->next)
        if (s->playback && s->pb_token[0] && now_ms >= s->pb_deadline_ms) {
            char token[sizeof s->pb_token];
            memcpy(token, s->pb_token, sizeof token);
            s->pb_token[0] = '\0';
            igw_log(IGW_LOG_INFO, NULL, "session %s: the camera did not answer a playback control", s->id);
            control_result(e, s, token, IGW_ERR_UNAVAILABLE, "the camera did not answer the playback control");
        }
    if (e->db && !e->pb_checking && now_ms - e->pb_checked_ms >= PB_RECHECK_MS) {
        e->pb_checked_ms = now_ms;
        recheck(e);
    }
}
