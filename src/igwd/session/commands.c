/* commands.c - see commands.h: interaction.open, subscribe, mediaOffer,
 * mediaState, trackControl and end. Each checks against the live session
 * (or, for open, the target and camera) before anything is claimed; the
 * acceptance and the effect follow (op.h). */
#include "session/commands.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "clock.h"
#include "core/log.h"
#include "event/devicemsg.h"
#include "event/outbox.h"
#include "event/rights.h"
#include "paths.h"
#include "session/decide.h"
#include "session/leg.h"
#include "session/hooks.h"
#include "session/session.h"
#include "session/transfer.h"

#define ENDPOINT_LIVE(ep, ent, usr) IGW_SQL_ENDPOINT_LIVE(ep, ent, usr, IGW_SQL_NOW_MS)

/* The one read of an open (the command room reads nothing before it: the
 * method's `reads` trait): the endpoint, an earlier acceptance of the key,
 * the rights, the camera, whether it is online, its latest capability
 * report's params, and the node holding the camera's oldest shared leg
 * when it is another live node (docs/decisions.md "Several nodes"). */
enum { OR_ENT, OR_USER, OR_EP, OR_TOKEN, OR_PID, OR_DN, OR_CAM, OR_NODE, OR_LAPSE, OR__N };
enum {
    OR_COL_LIVE, OR_COL_PRIOR, OR_COL_RIGHTS, OR_COL_CAMERA, OR_COL_ONLINE, OR_COL_CAPABILITY, OR_COL_HOLDER,
    OR_COL_HOLDER_EPOCH
};
static const igw_db_stmt st_open_read = {
    "igw_session_open_read",
    "SELECT " ENDPOINT_LIVE("$3::text", "$1::bigint", "$2::bigint") ", "
    IGW_SQL_PRIOR_FP("$1::bigint", "$3::text", "$4::text") ", "
    IGW_SQL_DEVICE_RIGHTS("$5::text", "$6::text", "$1::bigint", "$2::bigint") ", "
    "EXISTS (SELECT 1 FROM cameras c WHERE c.product_id = $5::text AND c.device_name = $6::text "
    "        AND c.camera_id = $7::text), "
    "COALESCE((SELECT d.online FROM devices d WHERE d.product_id = $5::text AND d.device_name = $6::text), false), "
    "(SELECT (m.body->'params')::text FROM " IGW_SQL_CAPABILITY_REPORTS("m", "$5::text", "$6::text")
    "  ORDER BY m.received_at DESC, m.message_id DESC LIMIT 1), "
    "h.owner_node, h.owner_epoch "
    "FROM (SELECT 1) one LEFT JOIN LATERAL ("
    "  SELECT l.owner_node, l.owner_epoch FROM legs l "
    "  WHERE l.product_id = $5::text AND l.device_name = $6::text AND l.camera_id = $7::text AND l.shared "
    "    AND l.owner_node <> $8::text AND " LIVE_SQL_NODE_UP("l.owner_node", "l.owner_epoch", "$9")
    "  ORDER BY l.created_at, l.leg_id LIMIT 1) h ON true",
    OR__N};

/* A new session's acceptance (open's, or subscribe's on its parent; a
 * command accepted on another node already: that acceptance), the
 * session (invited, owned by this node's epoch) and its interaction.result
 * with the delivery and the NOTIFY: one statement, which claims nothing
 * unless the endpoint is live, the rights hold and the epoch is still this
 * node's. */
enum {
    OW_ENT, OW_USER, OW_EP, OW_TOKEN, OW_PID, OW_DN, OW_CAM, OW_PURPOSE, OW_FP, OW_CANON, OW_SID, OW_NODE, OW_EPOCH,
    OW_DEADLINE, OW_BODY, OW_DID, OW_METHOD, OW_PARENT, OW_CALL, OW_MEMBER, OW_RECORDING, OW_VERSION, OW_ACCEPTED,
    OW__N
};
enum { OW_COL_LIVE, OW_COL_RIGHTS, OW_COL_NODE, OW_COL_CLAIMED, OW_COL_SESSION, OW_COL_DL, OW_COL_NTF, OW_COL_PRIOR };
static const igw_db_stmt st_open_write = {
    "igw_session_open_write",
    "WITH ok AS MATERIALIZED (SELECT p.expires_at_ms AS exp FROM endpoints p "
    "    WHERE p.endpoint_id = $3::text AND p.enterprise_id = $1::bigint AND p.user_id = $2::bigint "
    "      AND p.expires_at_ms > " IGW_SQL_NOW_MS " AND " IGW_SQL_DEVICE_RIGHTS("$5::text", "$6::text", "$1::bigint", "$2::bigint")
    "      AND EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = $12::text AND n.epoch = $13::bigint)), "
    "cm0 AS (INSERT INTO commands (enterprise_id, endpoint_id, msg_token, user_id, method, session_id, fingerprint, "
    "                              command) "
    "        SELECT $1::bigint, $3::text, $4::text, $2::bigint, $17::text, NULLIF($18::text, ''), "
    "               decode($9::text, 'hex'), $10::jsonb FROM ok WHERE NOT $23::boolean "
    "        ON CONFLICT (enterprise_id, endpoint_id, msg_token) DO NOTHING RETURNING 1), "
    /* a command accepted on another node (forward.h): its own acceptance stands for it */
    "cm AS (SELECT 1 FROM cm0 UNION ALL "
    "       SELECT 1 FROM ok, commands c WHERE $23::boolean AND c.enterprise_id = $1::bigint "
    "         AND c.endpoint_id = $3::text AND c.msg_token = $4::text AND c.fingerprint = decode($9::text, 'hex')), "
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
    IGW_SQL_PRIOR_FP("$1::bigint", "$3::text", "$4::text"),
    OW__N};

static bool is_subscribe(const live_op *o)
{
    return o->parent[0] != '\0';
}

/* ---- a new session: the write ---------------------------------------------------------- */

static void on_open_write(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    igw_engine *e = o->e;
    if (!live_op_row(o, res, err, true))
        return;
    if (!o->c->accepted && !PQgetisnull(res, 0, OW_COL_PRIOR) && strcmp(PQgetvalue(res, 0, OW_COL_CLAIMED), "1") != 0) {
        live_op_answer(o, IGW_ERR_OK, NULL, NULL, PQgetvalue(res, 0, OW_COL_PRIOR)); /* a twin came first */
        live_op_free(o);
        return;
    }
    if (!igw_db_true(res, 0, OW_COL_LIVE)) {
        live_op_refuse(o, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", IGW_PATH_endpointId);
        return;
    }
    if (!igw_db_true(res, 0, OW_COL_RIGHTS)) {
        live_op_refuse(o, IGW_ERR_PERMISSION, "no rights on the target device", IGW_PATH_command_target);
        return;
    }
    if (!igw_db_true(res, 0, OW_COL_NODE) || strcmp(PQgetvalue(res, 0, OW_COL_SESSION), "1") != 0) {
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "this node is not serving sessions now, retry", "");
        return;
    }
    /* Accepted: the session exists, invited, with its result. */
    live_session_init in = {.id = o->sid, .endpoint = o->endpoint, .enterprise_id = o->enterprise_id,
                            .user_id = o->user_id, .purpose = o->purpose, .guards = o->guards, .pdata = o->pdata,
                            .only_track = o->only_track[0] ? o->only_track : NULL};
    o->pdata = NULL; /* the session's now, even when it cannot be made */
    live_session *s = live_session_new(e, &in);
    live_op_answer(o, IGW_ERR_OK, NULL, NULL, NULL);
    if (s) { /* else durable already: the node's restart sweep ends it */
        igw_log(IGW_LOG_INFO, NULL, "session %s: %s/%s camera %s opened (%s)", s->id, o->pid, o->dn, o->cam, o->token);
        void *ldata = o->ldata;
        o->ldata = NULL;
        live_session_join_leg(e, s, o->pid, o->dn, o->cam, ldata);
    }
    live_op_free(o);
}

/* The new session's write: open's, or subscribe's (an independent viewer
 * of its parent's camera with a playbackToken of its own). */
static void open_write(live_op *o)
{
    igw_engine *e = o->e;
    int64_t epoch = live_node_epoch(e);
    if (!epoch) {
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "this node is not serving sessions now, retry", "");
        return;
    }
    bool sub = is_subscribe(o);
    if (live_new_id(o->sid, sizeof o->sid) || (sub && live_new_id(o->playback_token, sizeof o->playback_token))) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "internal error", "");
        return;
    }
    /* The result of the open (subscribe), emitted with it. */
    igw_ResultEvent ev = {.has = IGW_ResultEvent__REQUIRED | IGW_ResultEvent_sessionId,
                          .msgToken = igw_str_of(o->token),
                          .method = IGW_ResultMethod_interaction_result,
                          .sessionId = igw_str_of(sub ? o->parent : o->sid),
                          .code = igw_error_classes[IGW_ERR_OK].code,
                          .data = {.has = IGW_ResultData_operation | IGW_ResultData_state | IGW_ResultData_sessionId |
                                          IGW_ResultData_mediaRevision,
                                   .operation = o->method,
                                   .state = igw_str_of(igw_sm_session.states[IGW_SESSION_INVITED]),
                                   .sessionId = igw_str_of(o->sid),
                                   .mediaRevision = 1}};
    if (sub) {
        ev.data.has |= IGW_ResultData_playbackToken | IGW_ResultData_trackId;
        ev.data.playbackToken = igw_str_of(o->playback_token);
        ev.data.trackId = igw_str_of(o->only_track);
    }
    igw_jw_reset(&e->jw);
    igw_encode_ResultEvent(&e->jw, &ev);
    igw_jw_raw(&e->jw, "", 1); /* NUL: a C string parameter */
    char did[32], ep[24], deadline[24];
    if (igw_jw_status(&e->jw) || live_new_id(did, sizeof did)) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    snprintf(ep, sizeof ep, "%" PRId64, epoch);
    snprintf(deadline, sizeof deadline, "%" PRId64, igw_wall_ms() + (int64_t)e->cfg.establish_timeout_ms);
    const char *v[OW__N] = {
        [OW_ENT] = o->ent, [OW_USER] = o->user, [OW_EP] = o->endpoint, [OW_TOKEN] = o->token, [OW_PID] = o->pid,
        [OW_DN] = o->dn, [OW_CAM] = o->cam, [OW_PURPOSE] = igw_Purpose_names[o->purpose].ptr,
        [OW_FP] = o->c->fingerprint_hex, [OW_CANON] = o->c->canon, [OW_SID] = o->sid, [OW_NODE] = e->node_id,
        [OW_EPOCH] = ep, [OW_DEADLINE] = deadline, [OW_BODY] = e->jw.buf, [OW_DID] = did,
        [OW_METHOD] = o->c->method, [OW_PARENT] = o->parent, [OW_CALL] = o->cols.call_id,
        [OW_MEMBER] = o->cols.member_epoch, [OW_RECORDING] = o->cols.recording_id,
        [OW_VERSION] = o->cols.recording_version, [OW_ACCEPTED] = o->c->accepted ? "t" : "f"};
    if (igw_db_exec(e->db, &st_open_write, v, NULL, NULL, on_open_write, o) != 0)
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- interaction.open ----------------------------------------------------------------- */

/* The purpose's preflights on the camera's capability report. */
static bool open_preflight(live_op *o, live_refusal *r)
{
    igw_arena a;
    igw_arena_init(&a, LIVE_CAPABILITY_ARENA);
    igw_MediaCapability cap;
    bool refused = live_preflight_refuses(o->def, o->guards, live_capability_decode(o->capability, &a, &cap), r);
    igw_arena_free(&a);
    return refused;
}

void live_op_admitted(live_op *o)
{
    igw_engine *e = o->e;
    live_refusal r;
    if (!o->online) {
        const char *why = o->def->hooks->offline_reason;
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, why ? why : "the camera is offline", IGW_PATH_command_target);
        return;
    }
    if (open_preflight(o, &r)) {
        live_op_refuse_with(o, &r);
        return;
    }
    live_leg *leg = o->def->shared_leg ? live_leg_of_camera(e, o->pid, o->dn, o->cam) : NULL;
    if (leg && live_leg_refuses(leg->def, leg->guards, o->def, o->guards, &r)) {
        if (leg->viewers || leg->holder) {
            live_op_refuse_with(o, &r);
            return;
        }
        /* Lingering without viewers, and not what this open needs: it goes,
         * the open invites the camera anew. */
        live_leg_end(e, leg, "replaced", true, IGW_ByeReason_replaced);
    }
    open_write(o);
}

static void on_open_read(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    if (!live_op_row(o, res, err, false))
        return;
    live_refusal r;
    live_open_facts f = {.endpoint_live = igw_db_true(res, 0, OR_COL_LIVE),
                         .rights = igw_db_true(res, 0, OR_COL_RIGHTS),
                         .camera = igw_db_true(res, 0, OR_COL_CAMERA)};
    if (!f.endpoint_live) {
        live_open_refuses(&f, &r);
        live_op_refuse_with(o, &r);
        return;
    }
    if (!o->c->accepted && !PQgetisnull(res, 0, OR_COL_PRIOR)) { /* the key was accepted before: replay or conflict */
        live_op_answer(o, IGW_ERR_OK, NULL, NULL, PQgetvalue(res, 0, OR_COL_PRIOR));
        live_op_free(o);
        return;
    }
    if (live_open_refuses(&f, &r)) {
        live_op_refuse_with(o, &r);
        return;
    }
    /* The camera's shared leg is another live node's: the open joins it
     * there (one upstream per camera across the nodes), unless this node
     * has one too (two opens raced to make one each). A forwarded open is
     * never forwarded again: its owner makes the leg. */
    if (o->def->shared_leg && !o->c->accepted && !PQgetisnull(res, 0, OR_COL_HOLDER) &&
        !live_leg_of_camera(o->e, o->pid, o->dn, o->cam)) {
        live_op_forward(o, PQgetvalue(res, 0, OR_COL_HOLDER), strtoll(PQgetvalue(res, 0, OR_COL_HOLDER_EPOCH), NULL, 10));
        return;
    }
    o->online = igw_db_true(res, 0, OR_COL_ONLINE);
    if (!PQgetisnull(res, 0, OR_COL_CAPABILITY) &&
        !(o->capability = strdup(PQgetvalue(res, 0, OR_COL_CAPABILITY)))) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    if (o->def->hooks->admit)
        o->def->hooks->admit(o);
    else
        live_op_admitted(o);
}

void igw_session_open(live_op *o)
{
    igw_engine *e = o->e;
    const igw_OpenParams *p = &o->k->params.interaction_open;
    o->purpose = p->purpose;
    o->def = &igw_purposes[p->purpose];
    live_refusal r;
    if (!o->def->hooks) {
        live_op_refuse(o, IGW_ERR_NOT_IMPLEMENTED, "this purpose is not implemented yet", IGW_PATH_command_params_purpose);
        return;
    }
    if (o->def->hooks->check && o->def->hooks->check(e, p, &o->guards, &r)) {
        live_op_refuse_with(o, &r);
        return;
    }
    if (!e->media) {
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "this node serves no media sessions", "");
        return;
    }
    if (!live_op_seat(o))
        return;
    const igw_Target *t = &o->k->target;
    snprintf(o->pid, sizeof o->pid, "%.*s", (int)t->productID.len, t->productID.ptr);
    snprintf(o->dn, sizeof o->dn, "%.*s", (int)t->deviceName.len, t->deviceName.ptr);
    snprintf(o->cam, sizeof o->cam, "%.*s", (int)p->cameraId.len, p->cameraId.ptr);
    char lapse[16];
    snprintf(lapse, sizeof lapse, "%u", e->cfg.node_lapse_ms);
    const char *v[OR__N] = {[OR_ENT] = o->ent, [OR_USER] = o->user, [OR_EP] = o->endpoint, [OR_TOKEN] = o->token,
                            [OR_PID] = o->pid, [OR_DN] = o->dn,     [OR_CAM] = o->cam,     [OR_NODE] = e->node_id,
                            [OR_LAPSE] = lapse};
    if (igw_db_exec(e->db, &st_open_read, v, NULL, NULL, on_open_read, o) != 0)
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- interaction.subscribe ------------------------------------------------------------ */

void igw_session_subscribe(live_op *o)
{
    igw_engine *e = o->e;
    live_session *s = live_session_find(e, o->sid);
    const igw_SubscribeParams *p = &o->k->params.interaction_subscribe;
    if (!s->def->has_viewers) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "this session's camera leg is its own: open another session",
                       IGW_PATH_command_sessionId);
        return;
    }
    /* The viewer's purpose is its row's `viewers` (its guards: what the leg carries). */
    o->purpose = s->def->viewers;
    o->def = &igw_purposes[o->purpose];
    if (!s->leg) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "the session has no camera upstream", IGW_PATH_command_sessionId);
        return;
    }
    o->guards = live_viewer_guards(o->def, s->leg->def, s->leg->guards);
    if (!live_track_viewable(o->def, o->guards, p->trackId)) {
        live_op_refuse(o, IGW_ERR_NOT_FOUND, "unknown track of this session", IGW_PATH_command_params_trackId);
        return;
    }
    if (!live_op_seat(o))
        return;
    snprintf(o->only_track, sizeof o->only_track, "%.*s", (int)p->trackId.len, p->trackId.ptr);
    snprintf(o->parent, sizeof o->parent, "%s", s->id);
    snprintf(o->pid, sizeof o->pid, "%s", s->leg->product_id);
    snprintf(o->dn, sizeof o->dn, "%s", s->leg->device_name);
    snprintf(o->cam, sizeof o->cam, "%s", s->leg->camera_id);
    open_write(o); /* the rights are checked again there */
}

/* ---- interaction.mediaOffer ----------------------------------------------------------- */

static void media_offer_done(live_op *o, live_session *s)
{
    /* Checked again: another offer may have been accepted meanwhile. */
    bool busy = s->offer || s->prior_revision;
    if (o->iarg ? busy || (int64_t)o->iarg != (int64_t)s->revision + 1 : busy || s->offered) {
        igw_ResultData d = {0};
        live_session_result(o->e, s->id, s->endpoint, o->token, o->method, IGW_ERR_CONFLICT,
                            busy ? "the previous offer is not answered yet" : "this mediaRevision has its offer already", &d);
        free(o->offer);
        o->offer = NULL;
        return;
    }
    if (o->iarg) { /* a new generation: the old one's commands and events are stale from now */
        s->prior_revision = s->revision;
        s->revision = (uint32_t)o->iarg;
    }
    s->offer = o->offer;
    o->offer = NULL;
    snprintf(s->offer_token, sizeof s->offer_token, "%s", o->token);
    if (s->leg && s->leg->phase >= LEG_OFFERED)
        live_session_offer(o->e, s);
    /* else the camera's offer brings the source, then the answer */
}

void igw_session_media_offer(live_op *o)
{
    live_session *s = live_session_find(o->e, o->sid);
    const igw_MediaOfferParams *p = &o->k->params.interaction_mediaOffer;
    bool has_media = s->offered || s->offer;
    if (has_media && p->mediaRevision == (int64_t)s->revision + 1) {
        /* Renegotiation: a new media generation of the application's leg
         * (an ICE restart, a new network); the camera leg and the other
         * viewers are not touched, the track states carry over. */
        if (s->offer || s->prior_revision) {
            live_op_refuse(o, IGW_ERR_CONFLICT, "the previous offer is not answered yet",
                           IGW_PATH_command_params_mediaRevision);
            return;
        }
        o->iarg = p->mediaRevision;
    } else if (p->mediaRevision == (int64_t)s->revision && has_media) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "this mediaRevision has its offer already", IGW_PATH_command_params_mediaRevision);
        return;
    } else if (p->mediaRevision > (int64_t)s->revision) {
        live_op_refuse(o, IGW_ERR_CONFLICT,
                       has_media ? "mediaRevision skips ahead: a renegotiation names the current one + 1"
                                 : "the first offer names the session's mediaRevision",
                       IGW_PATH_command_params_mediaRevision);
        return;
    } else if (!live_op_revision(o, s, p->mediaRevision)) {
        return;
    }
    if (!(o->offer = strndup(p->webrtc.sdp.ptr, p->webrtc.sdp.len))) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    live_op_accept(o, media_offer_done);
}

/* ---- interaction.mediaState ----------------------------------------------------------- */

static void media_state_done(live_op *o, live_session *s)
{
    igw_ResultData d = {0};
    s->app_connected = o->iarg == IGW_MediaPeerState_connected;
    d.has = IGW_ResultData_state | IGW_ResultData_mediaRevision;
    d.state = igw_MediaPeerState_names[o->iarg];
    d.mediaRevision = s->revision;
    live_session_result(o->e, s->id, s->endpoint, o->token, o->method, IGW_ERR_OK, NULL, &d);
    live_session_check(o->e, s);
}

void igw_session_media_state(live_op *o)
{
    live_session *s = live_session_find(o->e, o->sid);
    const igw_MediaStateParams *p = &o->k->params.interaction_mediaState;
    if (!live_op_revision(o, s, p->mediaRevision))
        return;
    o->iarg = p->state;
    live_op_accept(o, media_state_done);
}

/* ---- interaction.trackControl --------------------------------------------------------- */

/* A track of the session is the camera's (machine track: the viewer's
 * subscription of it) or the application's own uplink, a track the camera
 * receives (machine uplink: stopped and published again). */
static const struct {
    int track, uplink; /* the operation's trigger of each machine */
} triggers[] = {
    [IGW_TrackOperation_subscribe] = {IGW_TRACK_ON_SUBSCRIBE, IGW_UPLINK_ON_SUBSCRIBE},
    [IGW_TrackOperation_unsubscribe] = {IGW_TRACK_ON_UNSUBSCRIBE, IGW_UPLINK_ON_UNSUBSCRIBE},
    [IGW_TrackOperation_pause] = {IGW_TRACK_ON_PAUSE, IGW_UPLINK_ON_PAUSE},
    [IGW_TrackOperation_resume] = {IGW_TRACK_ON_RESUME, IGW_UPLINK_ON_RESUME},
    [IGW_TrackOperation_publish] = {IGW_TRACK_ON_PUBLISH, IGW_UPLINK_ON_PUBLISH},
    [IGW_TrackOperation_stop] = {IGW_TRACK_ON_STOP, IGW_UPLINK_ON_STOP},
};

static bool is_uplink(const igw_purpose_track *t)
{
    return t->direction != IGW_PURPOSE_SENDONLY;
}

/* The core could not carry the change out: that viewer's session ends
 * (mediaFailed), its media released; no success; the others untouched. */
static void barrier_failed(live_op *o, live_session *s, const char *err)
{
    igw_ResultData d = {0};
    igw_log(IGW_LOG_WARN, NULL, "session %s: track change failed in the media core (%s): the session ends", s->id, err);
    live_session_result(o->e, s->id, s->endpoint, o->token, o->method, IGW_ERR_INTERNAL,
                        "the media core could not apply the change: the session ends", &d);
    live_session_end(o->e, s, "mediaFailed");
}

static void track_control_done(live_op *o, live_session *s)
{
    igw_engine *e = o->e;
    igw_ResultData d = {0};
    const igw_purpose_track *t = live_track_find(s->def, s->guards, igw_str_of(o->text));
    char err[160] = "";
    igw_str state;
    if (t && is_uplink(t)) {
        igw_sm_result r = igw_sm_fire(&igw_sm_uplink, s->uplink, triggers[o->iarg].uplink, 0);
        if (!r.ok) {
            live_session_result(e, s->id, s->endpoint, o->token, o->method, r.err, r.reason, &d);
            return;
        }
        igw_uplink_state before = s->uplink;
        s->uplink = (igw_uplink_state)r.next;
        if (!live_session_gate(e, s, err, sizeof err)) {
            s->uplink = before;
            barrier_failed(o, s, err);
            return;
        }
        if (s->uplink != before && s->uplink == IGW_UPLINK_STOPPED)
            igw_log(IGW_LOG_INFO, NULL, "session %s: its uplink stopped by the application (%s; its last packet forwarded at %" PRId64 ")",
                    s->id, o->token, live_session_last_uplink_ms(e, s));
        else if (s->uplink != before)
            igw_log(IGW_LOG_INFO, NULL, "session %s: its uplink published by the application (%s)", s->id, o->token);
        state = igw_str_of(igw_sm_uplink.states[s->uplink]);
    } else {
        igw_media_kinds kinds = t && t->kind == IGW_TrackKind_audio ? IGW_MEDIA_AUDIO : IGW_MEDIA_VIDEO;
        int st = 0;
        igw_media_rc rc = igw_media_viewer_track(e->media, s->id, s->revision, kinds, triggers[o->iarg].track, &st, err,
                                                 sizeof err);
        if (rc == IGW_MEDIA_ECONFLICT) { /* the machine's refusal: nothing changed */
            live_session_result(e, s->id, s->endpoint, o->token, o->method, IGW_ERR_CONFLICT, err, &d);
            return;
        }
        if (rc != IGW_MEDIA_OK) {
            barrier_failed(o, s, err);
            return;
        }
        state = live_track_state_name(st);
    }
    d.has = IGW_ResultData_state | IGW_ResultData_mediaRevision | IGW_ResultData_trackId;
    d.state = state;
    d.trackId = igw_str_of(o->text);
    d.mediaRevision = s->revision;
    live_session_result(e, s->id, s->endpoint, o->token, o->method, IGW_ERR_OK, NULL, &d);
}

void igw_session_track_control(live_op *o)
{
    live_session *s = live_session_find(o->e, o->sid);
    const igw_TrackControlParams *p = &o->k->params.interaction_trackControl;
    const igw_purpose_track *t = live_track_find(s->def, s->guards, p->trackId);
    if (!t) {
        live_op_refuse(o, IGW_ERR_NOT_FOUND, "unknown track of this session", IGW_PATH_command_params_trackId);
        return;
    }
    igw_sm_result r;
    if (is_uplink(t) ? live_sm_refused_everywhere(&igw_sm_uplink, triggers[p->operation].uplink, &r)
                     : live_sm_refused_everywhere(&igw_sm_track, triggers[p->operation].track, &r)) {
        /* the machine's own refusal (schema: publish and stop are the uplink's) */
        live_op_refuse(o, r.err, r.reason, IGW_PATH_command_params_operation);
        return;
    }
    if (!s->offered) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "no media yet: interaction.mediaOffer first", IGW_PATH_command_params_trackId);
        return;
    }
    if (!live_op_revision(o, s, p->mediaRevision))
        return;
    o->iarg = p->operation;
    snprintf(o->text, sizeof o->text, "%.*s", (int)p->trackId.len, p->trackId.ptr);
    live_op_accept(o, track_control_done);
}

/* ---- interaction.control ---------------------------------------------------------------- */

void igw_session_control(live_op *o)
{
    live_session *s = live_session_find(o->e, o->sid);
    const igw_ControlParams *p = &o->k->params.interaction_control;
    if (p->operation == IGW_ControlOperation_endpointControl) {
        live_transfer(o, s); /* live_command let it through: it names s's endpoint */
        return;
    }
    const struct igw_purpose_hooks *h = s->def->hooks;
    if (!h || !h->control) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "this session has no door-bell to control", IGW_PATH_command_sessionId);
        return;
    }
    h->control(o, s);
}

/* ---- interaction.end ------------------------------------------------------------------ */

static void end_done(live_op *o, live_session *s)
{
    igw_ResultData d = {.has = IGW_ResultData_state, .state = igw_str_of(igw_sm_session.states[IGW_SESSION_ENDED])};
    live_session_result(o->e, s->id, s->endpoint, o->token, o->method, IGW_ERR_OK, NULL, &d);
    live_session_end(o->e, s, igw_EndReason_names[o->iarg].ptr);
}

void igw_session_end(live_op *o)
{
    o->iarg = o->k->params.interaction_end.reason;
    live_op_accept(o, end_done);
}
