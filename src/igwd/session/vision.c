/* vision.c - see vision.h: the owner's side of vision sources. */
#include "session/vision.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "core/log.h"
#include "event/devicemsg.h"
#include "event/outbox.h"
#include "event/rights.h"
#include "media.h"
#include "session/hooks.h"

#define ST_GRANTED LIVE_CONSENT_GRANTED

struct live_vision {
    int64_t deadline_ms;          /* wall clock: the session ends then */
    int64_t capability_revision;  /* the selection's report (0 until the row is written) */
    char model_resource[LIVE_ID_MAX + 1];
    uint32_t connection_epoch;    /* the application's DTLS associations so far */
    bool row_live;                /* the source row says live (written and not ended) */
    bool consented;               /* a consent of this generation covers the track now */
    int64_t consent_until_ms;     /* wall clock: the latest expiry of those */
    bool active;                  /* what the gate last set the viewer's video to */
    uint64_t consent_gen;         /* notifications of its consents so far: a ticket holds one */
    bool reading, read_again;     /* a consent read in flight; another asked meanwhile */
};

static int64_t node_epoch(const igw_engine *e)
{
    return atomic_load(&e->cfg.node->fenced) ? 0 : atomic_load(&e->cfg.node->epoch);
}

/* The purpose's vision track: its video the camera sends (the schema
 * refuses a `vision` row without one). */
static const igw_purpose_track *vision_track(const live_session *s)
{
    for (size_t i = 0; i < s->def->ntracks; i++) {
        const igw_purpose_track *t = &s->def->tracks[i];
        if (t->kind == IGW_TrackKind_video && t->direction == IGW_PURPOSE_SENDONLY)
            return t;
    }
    return NULL;
}

static void track_id(const live_session *s, char *out, size_t cap)
{
    const igw_purpose_track *t = vision_track(s);
    snprintf(out, cap, "%.*s", t ? (int)t->id.len : 0, t ? t->id.ptr : "");
}

live_vision *live_vision_new(igw_engine *e)
{
    live_vision *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->deadline_ms = igw_wall_ms() + (int64_t)e->cfg.ai_session_max_ms;
    /* The reference assistant serves every AI session of this process:
     * the model resource names it and this node's epoch (a restarted node
     * serves with another). */
    snprintf(v->model_resource, sizeof v->model_resource, "reference-assistant@%.32s/%" PRId64, e->node_id,
             node_epoch(e));
    return v;
}

void live_vision_connected(live_session *s)
{
    if (s->vision)
        s->vision->connection_epoch++;
}

bool live_vision_sharing(const live_session *s)
{
    const live_vision *v = s->vision;
    return v && v->consented && v->row_live && s->state == IGW_SESSION_ESTABLISHED && s->viewer_dtls && s->leg &&
           s->leg->phase == LEG_FLOWING;
}

uint64_t live_vision_consent_gen(const live_session *s)
{
    return s->vision ? s->vision->consent_gen : 0;
}

int64_t live_vision_deadline_ms(const live_session *s)
{
    return s->vision ? s->vision->deadline_ms : 0;
}

bool live_vision_overdue(const live_session *s, int64_t now_ms)
{
    return s->vision && now_ms >= s->vision->deadline_ms;
}

/* ---- the gate ------------------------------------------------------------------ */

/* The viewer's video follows the consents: active only while one covers
 * this generation, the session is established on a connected peer and the
 * camera's media flows; paused otherwise, at once. */
static void gate(igw_engine *e, live_session *s)
{
    live_vision *v = s->vision;
    bool want = v->consented && s->state == IGW_SESSION_ESTABLISHED && s->offered && s->leg &&
                s->leg->phase == LEG_FLOWING;
    if (want == v->active || !e->media)
        return;
    char err[160] = "";
    igw_media_rc rc = igw_media_viewer_track(e->media, s->id, s->revision, IGW_MEDIA_VIDEO,
                                             want ? IGW_TRACK_ON_RESUME : IGW_TRACK_ON_PAUSE, NULL, err, sizeof err);
    if (rc != IGW_MEDIA_OK && rc != IGW_MEDIA_ECONFLICT) { /* conflict: already so, or stopped by its viewer */
        igw_log(IGW_LOG_WARN, NULL, "session %s: its vision track not %s: %s", s->id, want ? "resumed" : "paused", err);
        if (want)
            return; /* the next consent read or tick tries again */
    }
    v->active = want;
    igw_log(IGW_LOG_INFO, NULL, "session %s: vision track %s", s->id, want ? "active (a consent covers it)" : "paused");
}

/* The latest expiry of the granted, unexpired consents of the session's
 * user on its selection and current generation (NULL: none). */
enum { CR_SID, CR_ENT, CR_USER, CR_CAM, CR_TRACK, CR_REV, CR__N };
static const igw_db_stmt st_consents = {
    "igw_vision_consents",
    "SELECT max(c.expires_at_ms) FROM consents c "
    "WHERE c.source_session_id = $1::text AND c.enterprise_id = $2::bigint AND c.user_id = $3::bigint "
    "  AND c.state = '" ST_GRANTED "' AND c.expires_at_ms > " IGW_SQL_NOW_MS " AND c.camera_id = $4::text "
    "  AND c.track_id = $5::text AND c.media_revision = $6::bigint",
    CR__N};

typedef struct consent_read {
    igw_engine *e;
    char sid[LIVE_ID_MAX + 1];
    uint32_t revision;
} consent_read;

static void read_consents(igw_engine *e, live_session *s);

/* Whether a consent covers the session; losing it stops every processor's
 * sharing at once (its processors' vision_lost), before the gate. */
static void set_consented(igw_engine *e, live_session *s, bool yes)
{
    live_vision *v = s->vision;
    bool lost = v->consented && !yes;
    v->consented = yes;
    if (lost && s->processors)
        s->processors->vision_lost(e, s);
}

static live_session *find(igw_engine *e, const char *sid)
{
    for (live_session *s = e->sessions; s; s = s->next)
        if (strcmp(s->id, sid) == 0)
            return s;
    return NULL;
}

static void on_consents(void *arg, const PGresult *res, const char *err)
{
    consent_read *q = arg;
    live_session *s = find(q->e, q->sid);
    if (s && s->vision) {
        live_vision *v = s->vision;
        v->reading = false;
        if (!res) {
            /* Unknown is never active: the gate closes until a read says. */
            igw_log(IGW_LOG_WARN, NULL, "session %s: its consents not read: %s", s->id, err);
            set_consented(q->e, s, false);
        } else if (q->revision == s->revision) {
            set_consented(q->e, s, !PQgetisnull(res, 0, 0));
            v->consent_until_ms = v->consented ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
        }
        gate(q->e, s);
        if (v->read_again || q->revision != s->revision) {
            v->read_again = false;
            read_consents(q->e, s);
        }
    }
    free(q);
}

static void read_consents(igw_engine *e, live_session *s)
{
    live_vision *v = s->vision;
    if (v->reading) {
        v->read_again = true;
        return;
    }
    consent_read *q = calloc(1, sizeof *q);
    char ent[24], user[24], rev[16], track[LIVE_ID_MAX + 1];
    if (!q || !e->db || !s->leg) {
        free(q);
        set_consented(e, s, false);
        gate(e, s);
        return;
    }
    q->e = e;
    snprintf(q->sid, sizeof q->sid, "%s", s->id);
    q->revision = s->revision;
    snprintf(ent, sizeof ent, "%" PRId64, s->enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, s->user_id);
    snprintf(rev, sizeof rev, "%" PRIu32, s->revision);
    track_id(s, track, sizeof track);
    const char *p[CR__N] = {[CR_SID] = s->id, [CR_ENT] = ent, [CR_USER] = user, [CR_CAM] = s->leg->camera_id,
                            [CR_TRACK] = track, [CR_REV] = rev};
    if (igw_db_exec(e->db, &st_consents, p, NULL, NULL, on_consents, q) != 0) {
        free(q);
        set_consented(e, s, false); /* busy: closed until the next notification or tick */
        v->read_again = true;
        gate(e, s);
        return;
    }
    v->reading = true;
}

static void on_notify(void *arg, const char *channel, const char *payload)
{
    igw_engine *e = arg;
    for (live_session *s = e->sessions; s; s = s->next) {
        /* (NULL, NULL): the connection came back: every vision session reads */
        if (s->vision && (!channel || strcmp(s->id, payload) == 0)) {
            s->vision->consent_gen++; /* a ticket issued before this one is void */
            read_consents(e, s);
        }
    }
}

int live_vision_listen(igw_engine *e)
{
    if (igw_sm_state(&igw_sm_consent, ST_GRANTED) <= 0) {
        igw_log(IGW_LOG_ERROR, NULL, "session: the consent machine has no state %s", ST_GRANTED);
        return -1;
    }
    return igw_db_listen(e->db, IGW_VISION_CHANNEL, on_notify, e);
}

void live_vision_tick(igw_engine *e, int64_t now_ms)
{
    for (live_session *s = e->sessions; s; s = s->next) {
        live_vision *v = s->vision;
        if (!v)
            continue;
        if ((v->consented && now_ms >= v->consent_until_ms) || (v->read_again && !v->reading)) {
            v->read_again = false;
            if (v->consented && now_ms >= v->consent_until_ms) {
                v->consent_gen++;
                set_consented(e, s, false); /* expired: closed before the read */
            }
            gate(e, s);
            read_consents(e, s);
        }
    }
}

void live_vision_flowing(igw_engine *e, live_session *s)
{
    if (s->vision)
        gate(e, s);
}

/* ---- the source row ------------------------------------------------------------- */

/* Written by the owner while its epoch is the node's: the first write
 * selects the capability report (the camera's latest); later ones move
 * the generation and the connection. */
enum { SR_SID, SR_ENT, SR_USER, SR_NODE, SR_EPOCH, SR_CONN, SR_MODEL, SR_DEADLINE, SR_PID, SR_DN, SR_CAM, SR_TRACK,
       SR_REV, SR__N };
static const igw_db_stmt st_source = {
    "igw_vision_source",
    "WITH cap AS (SELECT max(m.message_id) AS rev FROM " IGW_SQL_CAPABILITY_REPORTS("m", "$9::text", "$10::text") "), "
    "up AS (INSERT INTO vision_sources AS v (session_id, enterprise_id, user_id, owner_node, owner_epoch, "
    "           connection_epoch, model_resource, deadline_ms, camera_id, track_id, capability_revision, "
    "           media_revision, live) "
    "       SELECT $1::text, $2::bigint, $3::bigint, $4::text, $5::bigint, $6::bigint, $7::text, $8::bigint, "
    "              $11::text, $12::text, cap.rev, $13::bigint, true FROM cap "
    "       WHERE cap.rev IS NOT NULL AND EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = $4::text "
    "                                             AND n.epoch = $5::bigint) "
    "       ON CONFLICT (session_id) DO UPDATE SET connection_epoch = excluded.connection_epoch, "
    "           media_revision = excluded.media_revision, updated_at = now() "
    "       WHERE v.live AND v.owner_node = excluded.owner_node AND v.owner_epoch = excluded.owner_epoch "
    "       RETURNING v.capability_revision) "
    "SELECT (SELECT capability_revision FROM up)",
    SR__N};

static const igw_db_stmt st_source_end = {
    "igw_vision_source_end",
    "UPDATE vision_sources SET live = false, updated_at = now() WHERE session_id = $1::text AND live",
    1};

typedef struct source_write {
    igw_engine *e;
    char sid[LIVE_ID_MAX + 1];
} source_write;

static void on_source(void *arg, const PGresult *res, const char *err)
{
    source_write *w = arg;
    live_session *s = find(w->e, w->sid);
    if (s && s->vision) {
        if (!res || PQgetisnull(res, 0, 0)) {
            /* Not written: no consent can be signed against it (the
             * creation's transaction finds no live row that matches). */
            igw_log(IGW_LOG_WARN, NULL, "session %s: its vision source not written: %s", s->id,
                    res ? "no capability report, or this node's epoch is over" : err);
        } else {
            s->vision->capability_revision = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
            s->vision->row_live = true;
        }
    }
    free(w);
}

void live_vision_established(igw_engine *e, live_session *s)
{
    live_vision *v = s->vision;
    if (!v || !e->db || !s->leg)
        return;
    source_write *w = calloc(1, sizeof *w);
    if (!w)
        return;
    w->e = e;
    snprintf(w->sid, sizeof w->sid, "%s", s->id);
    char ent[24], user[24], epoch[24], conn[16], deadline[24], rev[16], track[LIVE_ID_MAX + 1];
    snprintf(ent, sizeof ent, "%" PRId64, s->enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, s->user_id);
    snprintf(epoch, sizeof epoch, "%" PRId64, node_epoch(e));
    snprintf(conn, sizeof conn, "%" PRIu32, v->connection_epoch);
    snprintf(deadline, sizeof deadline, "%" PRId64, v->deadline_ms);
    snprintf(rev, sizeof rev, "%" PRIu32, s->revision);
    track_id(s, track, sizeof track);
    const char *p[SR__N] = {[SR_SID] = s->id,        [SR_ENT] = ent,
                            [SR_USER] = user,        [SR_NODE] = e->node_id,
                            [SR_EPOCH] = epoch,      [SR_CONN] = conn,
                            [SR_MODEL] = v->model_resource, [SR_DEADLINE] = deadline,
                            [SR_PID] = s->leg->product_id,  [SR_DN] = s->leg->device_name,
                            [SR_CAM] = s->leg->camera_id,   [SR_TRACK] = track,
                            [SR_REV] = rev};
    if (igw_db_exec(e->db, &st_source, p, NULL, NULL, on_source, w) != 0) {
        igw_log(IGW_LOG_WARN, NULL, "session %s: its vision source not written: busy", s->id);
        free(w);
    }
    /* A new generation: what covered the old one does not cover it. */
    v->consent_gen++;
    set_consented(e, s, false);
    gate(e, s);
    read_consents(e, s);
}

static void on_source_end(void *arg, const PGresult *res, const char *err)
{
    char *sid = arg;
    if (!res)
        igw_log(IGW_LOG_WARN, NULL, "session %s: its vision source not marked ended: %s", sid, err);
    free(sid);
}

void live_vision_ended(igw_engine *e, live_session *s)
{
    if (!s->vision || !e->db)
        return;
    s->vision->consent_gen++;
    set_consented(e, s, false);
    char *sid = strdup(s->id);
    const char *p[1] = {s->id};
    if (!sid || igw_db_exec(e->db, &st_source_end, p, NULL, NULL, on_source_end, sid) != 0) {
        /* The row stays live with a session that is not: the creation's
         * authority comes from the owner, which no longer has it. */
        igw_log(IGW_LOG_WARN, NULL, "session %s: its vision source not marked ended: busy", s->id);
        free(sid);
    }
}

/* ---- the authority --------------------------------------------------------------- */

typedef struct ask_msg {
    igw_engine *e;
    igw_engine_back back;
    igw_vision_cb cb;
    void *arg;
    int64_t enterprise_id, user_id, media_revision;
    char sid[LIVE_ID_MAX + 1], camera[LIVE_ID_MAX + 1], track[LIVE_ID_MAX + 1];
    char pid[LIVE_ID_MAX + 1], dn[LIVE_ID_MAX + 1];
    igw_vision_authority a;
} ask_msg;

static void ask_deliver(void *arg)
{
    ask_msg *m = arg;
    m->cb(m->arg, &m->a);
    free(m);
}

static void ask_answer(ask_msg *m, igw_vision_status st)
{
    m->a.status = st;
    if (m->back.post(m->back.ctx, ask_deliver, m) != 0) {
        igw_log(IGW_LOG_ERROR, NULL, "session %s: cannot answer the vision authority", m->sid);
        free(m);
    }
}

/* What only the database has: the device's privacy switch and whether its
 * latest capability report still lists the selected camera with H264. */
enum { AR_PID, AR_DN, AR_CAM, AR__N };
enum { AR_COL_PRIVACY, AR_COL_CAMERA };
static const igw_db_stmt st_authority = {
    "igw_vision_authority",
    "SELECT COALESCE((SELECT d.properties->'privacy' = 'true'::jsonb FROM devices d "
    "                 WHERE d.product_id = $1::text AND d.device_name = $2::text), false), "
    "       COALESCE((SELECT EXISTS (SELECT 1 FROM jsonb_array_elements(m.body->'params'->'cameras') c "
    "                                WHERE c->>'cameraId' = $3::text AND c->'video' ? 'H264') "
    "                 FROM " IGW_SQL_CAPABILITY_REPORTS("m", "$1::text", "$2::text")
    "                 ORDER BY m.received_at DESC, m.message_id DESC LIMIT 1), false)",
    AR__N};

/* The session as its owner holds it now: the authority's fields, or why
 * there is none. */
static igw_vision_status judge(igw_engine *e, ask_msg *m)
{
    live_session *s = find(e, m->sid);
    if (!s || s->enterprise_id != m->enterprise_id || s->user_id != m->user_id || s->state == IGW_SESSION_ENDED)
        return IGW_VISION_UNKNOWN;
    if (!s->vision)
        return IGW_VISION_NOT_VISION;
    live_vision *v = s->vision;
    if (s->state != IGW_SESSION_ESTABLISHED || !s->viewer_dtls || !s->leg || s->leg->phase != LEG_FLOWING ||
        !v->row_live || !node_epoch(e))
        return IGW_VISION_NOT_LIVE;
    igw_vision_authority *a = &m->a;
    track_id(s, a->track_id, sizeof a->track_id);
    if (strcmp(s->leg->camera_id, m->camera) != 0 || strcmp(a->track_id, m->track) != 0)
        return IGW_VISION_SELECTION;
    if (m->media_revision != (int64_t)s->revision)
        return IGW_VISION_GENERATION;
    snprintf(a->session_id, sizeof a->session_id, "%s", s->id);
    snprintf(a->owner_node, sizeof a->owner_node, "%s", e->node_id);
    snprintf(a->model_resource, sizeof a->model_resource, "%s", v->model_resource);
    snprintf(a->camera_id, sizeof a->camera_id, "%s", s->leg->camera_id);
    snprintf(m->pid, sizeof m->pid, "%s", s->leg->product_id);
    snprintf(m->dn, sizeof m->dn, "%s", s->leg->device_name);
    a->owner_epoch = node_epoch(e);
    a->connection_epoch = v->connection_epoch;
    a->deadline_ms = v->deadline_ms;
    a->capability_revision = v->capability_revision;
    a->media_revision = s->revision;
    return IGW_VISION_OK;
}

static void on_authority(void *arg, const PGresult *res, const char *err)
{
    ask_msg *m = arg;
    if (!res) {
        igw_log(IGW_LOG_WARN, NULL, "session %s: the vision authority's read failed: %s", m->sid, err);
        ask_answer(m, IGW_VISION_FAILED);
        return;
    }
    if (igw_db_true(res, 0, AR_COL_PRIVACY)) {
        ask_answer(m, IGW_VISION_PRIVACY);
        return;
    }
    if (!igw_db_true(res, 0, AR_COL_CAMERA)) {
        ask_answer(m, IGW_VISION_CAPABILITY);
        return;
    }
    /* The session again, after the read: it may have changed meanwhile. */
    igw_vision_authority was = m->a;
    igw_vision_status st = judge(m->e, m);
    if (st == IGW_VISION_OK && (was.connection_epoch != m->a.connection_epoch ||
                                was.media_revision != m->a.media_revision || was.owner_epoch != m->a.owner_epoch))
        st = IGW_VISION_GENERATION;
    if (st == IGW_VISION_OK) {
        m->a.issued_ms = igw_wall_ms();
        m->a.expires_ms = m->a.issued_ms + IGW_VISION_AUTHORITY_MS;
    }
    ask_answer(m, st);
}

static void on_ask(void *arg)
{
    ask_msg *m = arg;
    igw_vision_status st = judge(m->e, m);
    if (st != IGW_VISION_OK) {
        ask_answer(m, st);
        return;
    }
    if (!m->e->db) {
        ask_answer(m, IGW_VISION_FAILED);
        return;
    }
    const char *p[AR__N] = {[AR_PID] = m->pid, [AR_DN] = m->dn, [AR_CAM] = m->camera};
    if (igw_db_exec(m->e->db, &st_authority, p, NULL, NULL, on_authority, m) != 0)
        ask_answer(m, IGW_VISION_FAILED);
}

int igw_engine_vision_authority(igw_engine *e, const igw_vision_ask *q, const igw_engine_back *back,
                                igw_vision_cb cb, void *arg)
{
    ask_msg *m = calloc(1, sizeof *m);
    if (!m)
        return -1;
    *m = (ask_msg){.e = e, .back = *back, .cb = cb, .arg = arg, .enterprise_id = q->enterprise_id,
                   .user_id = q->user_id, .media_revision = q->media_revision};
    snprintf(m->sid, sizeof m->sid, "%s", q->session_id);
    snprintf(m->camera, sizeof m->camera, "%s", q->camera_id);
    snprintf(m->track, sizeof m->track, "%s", q->track_id);
    if (igw_loop_post(e->loop, on_ask, m) != 0) {
        free(m);
        return -1;
    }
    return 0;
}
