/* doorbell.c - the door-bell (docs/doorbell.md): a camera's ring reaches
 * every endpoint that may answer it, the first accept wins, and the
 * winner's session is a two-way call with the camera: its picture and
 * microphone down, the application's microphone up to its speaker.
 *
 * The ring is the device anchor session: its row (rings) decides the first
 * accept, whatever the worker or node (one UPDATE ... WHERE state =
 * 'ringing'); its camera leg is invited at the ring with the row's whole
 * track set (video, microphone, speaker: a camera that must confirm
 * confirms all of it by its offer; the ring never stands in for that
 * offer) and is held by the ring, so that the call's media outlives its
 * controller's session; its ringing sessions, one per live endpoint of a
 * user who may answer (the device's owner, a user it is granted to), are
 * made with their ringing events in the statement that makes the row. A
 * second ring while it rings joins it. Everything here runs on the engine's
 * loop. */
#include "session/purpose.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "clock.h"
#include "core/log.h"
#include "decode.h"
#include "event/devicemsg.h"
#include "event/outbox.h"
#include "event/rights.h"
#include "igwd/state_sql.h"
#include "paths.h"

#define RING_ENDPOINTS_MAX "64"    /* endpoints one ring reaches at most (the newest: the apps in use) */
#define RING_STALE_MS "2000"       /* a ringing row this far past its deadline is a dead node's (ms) */

typedef struct ring ring;

/* A door-bell session's own state. */
typedef struct bell {
    char ring[LIVE_ID_MAX + 1];   /* its ring */
    char invite[LIVE_ID_MAX + 1]; /* its ringing event's inviteToken */
    bool ringing;                 /* still ringing (not accepted, not ended) */
    bool deciding;                /* an accept's decision in flight */
} bell;

/* The device anchor session. */
struct ring {
    ring *next;
    char id[LIVE_ID_MAX + 1];
    char pid[LIVE_ID_MAX + 1], dn[LIVE_ID_MAX + 1], cam[LIVE_ID_MAX + 1];
    igw_ring_state state;
    int64_t deadline_ms;  /* ringing: noAnswer at it (monotonic) */
    int64_t rang_ms;      /* when it rang (monotonic): the answer's latency */
    unsigned ringing;     /* its sessions still ringing */
    bool declined;        /* one of them declined */
    bool ending;
    char controller[LIVE_ID_MAX + 1]; /* the session in control once answered */
    /* A handover: the controller that asked (it keeps the call until its
     * target's session is established), and when its targets stop ringing. */
    char handing[LIVE_ID_MAX + 1];
    int64_t handover_deadline_ms; /* monotonic; 0: no target rings */
    live_leg *leg;        /* the camera's leg it holds, or NULL */
};

typedef struct bell_engine {
    ring *rings;
} bell_engine;

static bell *bell_of(const live_session *s)
{
    return s->purpose == IGW_Purpose_doorbell ? s->pdata : NULL;
}

static bell_engine *engine_state(igw_engine *e)
{
    if (!e->pstate[IGW_Purpose_doorbell])
        e->pstate[IGW_Purpose_doorbell] = calloc(1, sizeof(bell_engine));
    return e->pstate[IGW_Purpose_doorbell];
}

static ring *ring_find(igw_engine *e, const char *id)
{
    bell_engine *b = e->pstate[IGW_Purpose_doorbell];
    for (ring *r = b ? b->rings : NULL; r; r = r->next)
        if (!strcmp(r->id, id))
            return r;
    return NULL;
}

static ring *ring_of_camera(igw_engine *e, const char *pid, const char *dn, const char *cam)
{
    bell_engine *b = e->pstate[IGW_Purpose_doorbell];
    for (ring *r = b ? b->rings : NULL; r; r = r->next)
        if (r->state == IGW_RING_RINGING && !strcmp(r->pid, pid) && !strcmp(r->dn, dn) && !strcmp(r->cam, cam))
            return r;
    return NULL;
}

static void ring_unlink(igw_engine *e, ring *r)
{
    bell_engine *b = e->pstate[IGW_Purpose_doorbell];
    for (ring **p = b ? &b->rings : NULL; p && *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            return;
        }
}

/* ---- the ring's end ------------------------------------------------------------------ */

/* $1 ring, $2 reason, $3 node, $4 epoch. */
enum { RE_RING, RE_REASON, RE_NODE, RE_EPOCH, RE__N };
static const igw_db_stmt st_ring_end = {
    "igw_doorbell_ring_end",
    "UPDATE rings r SET state = 'ended', reason = $2::text, ended_at = now(), deadline_ms = NULL "
    "WHERE r.ring_id = $1::text AND r.state <> 'ended' AND r.owner_node = $3::text AND r.owner_epoch = $4::bigint "
    "  AND EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = $3::text AND n.epoch = $4::bigint)",
    RE__N};

static void on_ring_write(void *arg, const PGresult *res, const char *err)
{
    char *id = arg;
    if (!res)
        igw_log(IGW_LOG_ERROR, NULL, "doorbell: ring %s: its row not stored: %s", id, err);
    free(id);
}

static void epoch_text(igw_engine *e, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRId64, live_node_epoch(e));
}

/* The ring ends: its row, every session still on it (ringing ones and
 * the controller) with `reason`, and its leg with a bye. */
static void ring_end(igw_engine *e, ring *r, const char *reason, igw_ByeReason bye)
{
    if (r->ending)
        return;
    r->ending = true;
    igw_log(IGW_LOG_INFO, NULL, "doorbell: ring %s ends: %s", r->id, reason);
    if (r->state == IGW_RING_RINGING)
        live_add(r->declined && !strcmp(reason, "declined") ? &e->n_rings_declined : &e->n_rings_unanswered, 1);
    char epoch[24];
    epoch_text(e, epoch, sizeof epoch);
    char *id = strdup(r->id);
    const char *v[RE__N] = {[RE_RING] = r->id, [RE_REASON] = reason, [RE_NODE] = e->node_id, [RE_EPOCH] = epoch};
    if (!id || igw_db_exec(e->db, &st_ring_end, v, NULL, NULL, on_ring_write, id) != 0) {
        igw_log(IGW_LOG_ERROR, NULL, "doorbell: ring %s: its end not stored (queue full)", r->id);
        free(id);
    }
    for (live_session *s = e->sessions, *n; s; s = n) {
        n = s->next;
        bell *b = bell_of(s);
        if (b && !strcmp(b->ring, r->id) && !s->leg)
            live_session_end(e, s, reason);
    }
    if (r->leg) { /* its viewers (the controller) end with it */
        live_leg *leg = r->leg;
        r->leg = NULL;
        leg->holder = NULL;
        leg->gone = NULL;
        live_leg_end(e, leg, reason, true, bye);
    }
    ring_unlink(e, r);
    free(r);
}

/* The camera's leg ended by itself (bye, failure, offline, invite timeout):
 * the ring with it. */
static void ring_leg_gone(igw_engine *e, live_leg *l, const char *reason)
{
    ring *r = l->holder;
    l->holder = NULL;
    if (!r)
        return;
    r->leg = NULL;
    ring_end(e, r, reason, IGW_ByeReason_cameraError);
}

/* ---- the ring: read, fan out ---------------------------------------------------------- */

/* A ring in flight until the device is answered. */
typedef struct ring_req {
    igw_engine *e;
    live_device_done done;
    void *ctx;
    char pid[LIVE_ID_MAX + 1], dn[LIVE_ID_MAX + 1], cam[LIVE_ID_MAX + 1];
    char token[LIVE_TOKEN_MAX + 1];
    char id[LIVE_ID_MAX + 1];
    bool again; /* the fan out found another ring first: read it */
} ring_req;

static void ring_answer(ring_req *q, int cls, const char *reason, const char *ring_id, bool joined)
{
    igw_engine *e = q->e;
    if (cls != IGW_ERR_OK) {
        q->done(q->ctx, cls, reason, NULL, 0);
        free(q);
        return;
    }
    igw_RingReplyData d = {.has = IGW_RingReplyData__REQUIRED, .sessionId = igw_str_of(ring_id), .joined = joined};
    igw_jw_reset(&e->jw);
    igw_encode_RingReplyData(&e->jw, &d);
    if (igw_jw_status(&e->jw))
        q->done(q->ctx, IGW_ERR_INTERNAL, "out of memory", NULL, 0);
    else
        q->done(q->ctx, IGW_ERR_OK, NULL, e->jw.buf, e->jw.len);
    free(q);
}

/* The ring's read: its device's latest capability report, and a ring of
 * the camera still ringing (a dead owner's, or one long past its deadline,
 * ended first: it would hold the camera's one ringing row for ever).
 * $1 pid, $2 dn, $3 camera. */
enum { RR_PID, RR_DN, RR_CAM, RR__N };
enum { RR_COL_CAPABILITY, RR_COL_RINGING };
static const igw_db_stmt st_ring_read = {
    "igw_doorbell_ring_read",
    "WITH st AS (UPDATE rings r SET state = 'ended', reason = 'noAnswer', ended_at = now(), deadline_ms = NULL "
    "            WHERE r.product_id = $1::text AND r.device_name = $2::text AND r.camera_id = $3::text "
    "              AND r.state = 'ringing' AND (r.deadline_ms < " IGW_SQL_NOW_MS " - " RING_STALE_MS " "
    "                   OR NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = r.owner_node "
    "                                  AND n.epoch = r.owner_epoch)) "
    "            RETURNING r.ring_id) "
    "SELECT (SELECT (m.body->'params')::text FROM " IGW_SQL_CAPABILITY_REPORTS("m", "$1::text", "$2::text")
    "        ORDER BY m.received_at DESC, m.message_id DESC LIMIT 1), "
    "       (SELECT r.ring_id FROM rings r WHERE r.product_id = $1::text AND r.device_name = $2::text "
    "          AND r.camera_id = $3::text AND r.state = 'ringing' AND r.ring_id NOT IN (SELECT ring_id FROM st))",
    RR__N};

/* The fan out: the ring's row, and a ringing session per live endpoint of
 * a user who may answer (active, of the device's active enterprise, its
 * owner or granted it), each with its ringing event (inviteToken, cameraId,
 * target) and delivery: one statement, fenced by the node's epoch. Ids and
 * tokens: base64url of a random UUID (122 random bits, the outbox's own
 * form). $1 pid, $2 dn, $3 camera, $4 ring id, $5 the device's msgToken,
 * $6 node, $7 epoch, $8 deadline (Unix ms). */
#define NEW_ID "rtrim(translate(encode(uuid_send(gen_random_uuid()), 'base64'), '+/', '-_'), '=')"
/* The live endpoints that may answer device ($1, $2): of an active user of
 * the device's active enterprise, its owner or granted it (the purpose's
 * access: owner, grant; the rules of event/rights.h), narrowed by EXTRA;
 * the newest first (the apps in use), bounded. */
#define RING_CANDIDATES(EXTRA)                                                                                      \
    "dev AS (SELECT d.product_id, d.device_name, d.enterprise_id, d.owner_user_id FROM devices d "                 \
    "        WHERE d.product_id = $1::text AND d.device_name = $2::text), "                                         \
    "cand AS (SELECT p.endpoint_id, p.user_id, p.enterprise_id FROM dev "                                           \
    "         JOIN endpoints p ON p.enterprise_id = dev.enterprise_id "                                             \
    "         WHERE p.expires_at_ms > " IGW_SQL_NOW_MS " " EXTRA                                                    \
    "           AND " IGW_SQL_HOLDER_ACTIVE("dev.enterprise_id", "p.user_id")                                       \
    "           AND " IGW_SQL_USER_MAY("dev", "p.user_id")                                                          \
    "         ORDER BY p.created_at DESC, p.endpoint_id LIMIT " RING_ENDPOINTS_MAX "), "
/* Its ringing sessions on ring r (a CTE with ring_id) with $1 pid, $2 dn,
 * $3 camera, node NODE, epoch EPOCH, deadline DEADLINE, and their events;
 * then the rows of the new sessions (FO_COL_*). */
#define RING_SESSIONS(NODE, EPOCH, DEADLINE)                                                                               \
    "upd AS (INSERT INTO sessions (session_id, enterprise_id, user_id, endpoint_id, state, event_seq, media_revision, "    \
    "                              product_id, device_name, purpose, camera_id, owner_node, owner_epoch, "                 \
    "                              deadline_ms, ring_id, invite_token) "                                                   \
    "        SELECT " NEW_ID ", c.enterprise_id, c.user_id, c.endpoint_id, 'ringing', 1, 1, $1::text, $2::text, "          \
    "               'doorbell', $3::text, " NODE ", " EPOCH ", " DEADLINE ", r.ring_id, " NEW_ID " FROM cand c, r "        \
    "        RETURNING session_id AS sid, endpoint_id AS ep, event_seq AS seq, state, NULL::text AS playback, "            \
    "                  NULL::bigint AS pos, NULL::text AS reason, invite_token AS invite, camera_id AS camera, "           \
    "                  product_id AS pid, device_name AS dn, NULL::bigint AS rev, enterprise_id AS ent, user_id AS usr), " \
    IGW_SQL_STATE_EVENTS(NEW_ID)                                                                                           \
    "SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM me), u.sid, u.ep, u.ent, u.usr, u.invite, "                    \
    "       (SELECT count(*) FROM ntf) " /* ntf is no data-modifying CTE: it runs only when read */                        \
    "FROM (SELECT 1) one LEFT JOIN upd u ON true"
enum { FO_PID, FO_DN, FO_CAM, FO_RING, FO_TOKEN, FO_NODE, FO_EPOCH, FO_DEADLINE, FO__N };
enum { FO_COL_RING, FO_COL_ME, FO_COL_SID, FO_COL_EP, FO_COL_ENT, FO_COL_USER, FO_COL_INVITE };
static const igw_db_stmt st_fan_out = {
    "igw_doorbell_fan_out",
    "WITH me AS (SELECT 1 FROM nodes n WHERE n.node_id = $6::text AND n.epoch = $7::bigint FOR SHARE), "
    RING_CANDIDATES("")
    "r AS (INSERT INTO rings (ring_id, enterprise_id, product_id, device_name, camera_id, msg_token, state, "
    "                         owner_node, owner_epoch, deadline_ms, endpoints) "
    "      SELECT $4::text, dev.enterprise_id, $1::text, $2::text, $3::text, $5::text, 'ringing', $6::text, "
    "             $7::bigint, $8::bigint, (SELECT count(*) FROM cand) FROM dev WHERE EXISTS (SELECT 1 FROM me) "
    "      ON CONFLICT (product_id, device_name, camera_id) WHERE state = 'ringing' DO NOTHING RETURNING ring_id), "
    RING_SESSIONS("$6::text", "$7::bigint", "$8::bigint"),
    FO__N};

/* The ringing sessions of a statement's rows (FO_COL_*) on ring r. */
static void ring_sessions_add(igw_engine *e, ring *r, const PGresult *res)
{
    for (int i = 0; i < PQntuples(res); i++) {
        if (PQgetisnull(res, i, FO_COL_SID))
            continue; /* nobody may answer */
        bell *b = calloc(1, sizeof *b);
        if (!b)
            continue; /* its row: the ring's end or the restart sweep ends it */
        snprintf(b->ring, sizeof b->ring, "%s", r->id);
        snprintf(b->invite, sizeof b->invite, "%s", PQgetvalue(res, i, FO_COL_INVITE));
        b->ringing = true;
        live_session_init in = {.id = PQgetvalue(res, i, FO_COL_SID), .endpoint = PQgetvalue(res, i, FO_COL_EP),
                                .enterprise_id = strtoll(PQgetvalue(res, i, FO_COL_ENT), NULL, 10),
                                .user_id = strtoll(PQgetvalue(res, i, FO_COL_USER), NULL, 10),
                                .purpose = IGW_Purpose_doorbell, .pdata = b, .ringing = true};
        if (live_session_new(e, &in))
            r->ringing++;
    }
}

static void ring_read(ring_req *q);

/* The ring exists: its sessions in memory, the camera invited. */
static void on_fan_out(void *arg, const PGresult *res, const char *err)
{
    ring_req *q = arg;
    igw_engine *e = q->e;
    if (!res) {
        igw_log(IGW_LOG_WARN, NULL, "doorbell: %s/%s camera %s: the ring not stored: %s", q->pid, q->dn, q->cam, err);
        ring_answer(q, igw_db_error_class(err, true), "the ring cannot be stored now, ring again", NULL, false);
        return;
    }
    if (PQntuples(res) < 1 || strcmp(PQgetvalue(res, 0, FO_COL_ME), "1") != 0) {
        ring_answer(q, IGW_ERR_UNAVAILABLE, "this node is not serving sessions now, ring again", NULL, false);
        return;
    }
    if (strcmp(PQgetvalue(res, 0, FO_COL_RING), "1") != 0) { /* another ring of the camera came first */
        if (q->again) {
            ring_answer(q, IGW_ERR_UNAVAILABLE, "the camera's ring is changing, ring again", NULL, false);
            return;
        }
        q->again = true;
        ring_read(q);
        return;
    }
    ring *r = calloc(1, sizeof *r);
    bell_engine *be = engine_state(e);
    if (!r || !be) {
        free(r);
        ring_answer(q, IGW_ERR_INTERNAL, "out of memory", NULL, false); /* its sessions: the restart sweep's */
        return;
    }
    snprintf(r->id, sizeof r->id, "%s", q->id);
    snprintf(r->pid, sizeof r->pid, "%s", q->pid);
    snprintf(r->dn, sizeof r->dn, "%s", q->dn);
    snprintf(r->cam, sizeof r->cam, "%s", q->cam);
    r->state = IGW_RING_RINGING;
    r->rang_ms = igw_clock_ms();
    r->deadline_ms = r->rang_ms + e->cfg.doorbell_ring_timeout_ms;
    r->next = be->rings;
    be->rings = r;
    live_add(&e->n_rings, 1);
    ring_sessions_add(e, r, res);
    igw_log(IGW_LOG_INFO, NULL, "doorbell: ring %s: %s/%s camera %s rings %u endpoints", r->id, r->pid, r->dn, r->cam,
            r->ringing);
    ring_answer(q, IGW_ERR_OK, NULL, r->id, false);
    if (!r->ringing) {
        /* Nobody may answer: the camera hears it at once. */
        live_leg stub = {0};
        snprintf(stub.id, sizeof stub.id, "%s", r->id);
        snprintf(stub.product_id, sizeof stub.product_id, "%s", r->pid);
        snprintf(stub.device_name, sizeof stub.device_name, "%s", r->dn);
        live_leg_bye(e, &stub, IGW_ByeReason_noAnswer);
        ring_end(e, r, "noAnswer", IGW_ByeReason_noAnswer);
        return;
    }
    /* The camera's leg now, with every track the call needs: the answer
     * then finds its media flowing. */
    const char *why = NULL;
    live_leg *leg = live_leg_open(e, r->id, r->pid, r->dn, r->cam, &igw_purposes[IGW_Purpose_doorbell], 0, NULL, &why);
    if (!leg) {
        igw_log(IGW_LOG_INFO, NULL, "doorbell: ring %s: no leg: %s", r->id, why);
        ring_end(e, r, "cameraUnreachable", IGW_ByeReason_cameraError);
        return;
    }
    leg->holder = r;
    leg->gone = ring_leg_gone;
    r->leg = leg;
}

static void fan_out(ring_req *q)
{
    igw_engine *e = q->e;
    char epoch[24], deadline[24];
    int64_t ep = live_node_epoch(e);
    if (!ep) {
        ring_answer(q, IGW_ERR_UNAVAILABLE, "this node is not serving sessions now, ring again", NULL, false);
        return;
    }
    if (live_new_id(q->id, sizeof q->id)) {
        ring_answer(q, IGW_ERR_INTERNAL, "internal error", NULL, false);
        return;
    }
    snprintf(epoch, sizeof epoch, "%" PRId64, ep);
    snprintf(deadline, sizeof deadline, "%" PRId64, igw_wall_ms() + (int64_t)e->cfg.doorbell_ring_timeout_ms);
    const char *v[FO__N] = {[FO_PID] = q->pid, [FO_DN] = q->dn,         [FO_CAM] = q->cam,
                            [FO_RING] = q->id, [FO_TOKEN] = q->token,   [FO_NODE] = e->node_id,
                            [FO_EPOCH] = epoch, [FO_DEADLINE] = deadline};
    if (igw_db_exec(e->db, &st_fan_out, v, NULL, NULL, on_fan_out, q) != 0)
        ring_answer(q, IGW_ERR_UNAVAILABLE, "busy, ring again", NULL, false);
}

static void on_ring_read(void *arg, const PGresult *res, const char *err)
{
    ring_req *q = arg;
    if (!res || PQntuples(res) != 1) {
        igw_log(IGW_LOG_WARN, NULL, "doorbell: %s/%s: the ring's read failed: %s", q->pid, q->dn, err ? err : "no row");
        ring_answer(q, IGW_ERR_UNAVAILABLE, "busy, ring again", NULL, false);
        return;
    }
    if (!PQgetisnull(res, 0, RR_COL_RINGING)) { /* it rings already: this ring joins it */
        ring_answer(q, IGW_ERR_OK, NULL, PQgetvalue(res, 0, RR_COL_RINGING), true);
        return;
    }
    if (q->again) {
        ring_answer(q, IGW_ERR_UNAVAILABLE, "the camera's ring is changing, ring again", NULL, false);
        return;
    }
    igw_arena a;
    igw_arena_init(&a, LIVE_CAPABILITY_ARENA);
    igw_MediaCapability cap;
    const char *report = PQgetisnull(res, 0, RR_COL_CAPABILITY) ? NULL : PQgetvalue(res, 0, RR_COL_CAPABILITY);
    live_refusal rf;
    bool refused = live_ring_refuses(&igw_purposes[IGW_Purpose_doorbell], live_capability_decode(report, &a, &cap),
                                     igw_str_of(q->cam), &rf);
    igw_arena_free(&a);
    if (refused) {
        igw_log(IGW_LOG_INFO, NULL, "doorbell: %s/%s camera %s: ring refused: %s", q->pid, q->dn, q->cam, rf.reason);
        ring_answer(q, rf.cls, rf.reason, NULL, false);
        return;
    }
    fan_out(q);
}

static void ring_read(ring_req *q)
{
    const char *v[RR__N] = {[RR_PID] = q->pid, [RR_DN] = q->dn, [RR_CAM] = q->cam};
    if (igw_db_exec(q->e->db, &st_ring_read, v, NULL, NULL, on_ring_read, q) != 0)
        ring_answer(q, IGW_ERR_UNAVAILABLE, "busy, ring again", NULL, false);
}

/* The device's `media doorbell ring`, stored already by the edge. */
static bool bell_device(igw_engine *e, const igw_engine_uplink *u, live_device_done done, void *ctx)
{
    if (igw_proto_method_of(u->method) != IGW_PROTO_M_ring)
        return false;
    igw_arena a;
    igw_arena_init(&a, 4096);
    igw_json j;
    igw_DoorbellRing p;
    igw_json_init(&j, u->params.ptr, u->params.len, &a, 8);
    ring_req *q = calloc(1, sizeof *q);
    if (!u->params.ptr || igw_decode_DoorbellRing(&j, &p) != 0 || !q) {
        igw_arena_free(&a);
        free(q);
        done(ctx, q ? IGW_ERR_PARAMETER : IGW_ERR_INTERNAL, q ? "params: not a ring" : "out of memory", NULL, 0);
        return true;
    }
    *q = (ring_req){.e = e, .done = done, .ctx = ctx};
    snprintf(q->pid, sizeof q->pid, "%s", u->product_id);
    snprintf(q->dn, sizeof q->dn, "%s", u->device_name);
    snprintf(q->cam, sizeof q->cam, "%.*s", (int)p.cameraId.len, p.cameraId.ptr);
    snprintf(q->token, sizeof q->token, "%.*s", (int)u->msg_token.len, u->msg_token.ptr);
    igw_arena_free(&a);
    if (!e->db || !e->media) {
        ring_answer(q, IGW_ERR_UNAVAILABLE, "this node serves no media sessions", NULL, false);
        return true;
    }
    ring *r = ring_of_camera(e, q->pid, q->dn, q->cam);
    if (r) { /* it rings on this node: no read needed */
        ring_answer(q, IGW_ERR_OK, NULL, r->id, true);
        return true;
    }
    ring_read(q);
    return true;
}

/* ---- the controller's row ---------------------------------------------------------------- */

/* $1 ring, $2 controller, $3 node, $4 epoch. */
enum { RC_RING, RC_CONTROLLER, RC_NODE, RC_EPOCH, RC__N };
static const igw_db_stmt st_ring_controller = {
    "igw_doorbell_ring_controller",
    "UPDATE rings r SET controller = $2::text WHERE r.ring_id = $1::text AND r.state = 'established' "
    "  AND r.owner_node = $3::text AND r.owner_epoch = $4::bigint "
    "  AND EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = $3::text AND n.epoch = $4::bigint)",
    RC__N};

static void ring_controller_write(igw_engine *e, ring *r)
{
    char epoch[24];
    epoch_text(e, epoch, sizeof epoch);
    char *id = strdup(r->id);
    const char *v[RC__N] = {[RC_RING] = r->id, [RC_CONTROLLER] = r->controller, [RC_NODE] = e->node_id,
                            [RC_EPOCH] = epoch};
    if (!id || igw_db_exec(e->db, &st_ring_controller, v, NULL, NULL, on_ring_write, id) != 0) {
        igw_log(IGW_LOG_ERROR, NULL, "doorbell: ring %s: its controller not stored (queue full)", r->id);
        free(id);
    }
}

/* ---- interaction.control: accept, decline ---------------------------------------------- */

/* The decision: the ring's row moves to established only from ringing (the
 * first accept, whatever the worker or node), or, for a handover's target,
 * changes its controller only from the one that handed over (the first
 * target's accept); with it the winner's session from ringing to invited
 * with its state event. $1 ring, $2 session, $3 node, $4 epoch, $5
 * deliveryId, $6 the controller handing over ('' for a ring). */
enum { DC_RING, DC_SID, DC_NODE, DC_EPOCH, DC_DID, DC_HANDING, DC__N };
enum { DC_COL_WON, DC_COL_MOVED };
static const igw_db_stmt st_decide = {
    "igw_doorbell_decide",
    "WITH me AS (SELECT 1 FROM nodes n WHERE n.node_id = $3::text AND n.epoch = $4::bigint FOR SHARE), "
    "r AS (UPDATE rings r SET state = 'established', controller = $2::text, "
    "             answered_at = COALESCE(r.answered_at, now()), deadline_ms = NULL "
    "      WHERE r.ring_id = $1::text AND EXISTS (SELECT 1 FROM me) "
    "        AND (r.state = 'ringing' OR ($6::text <> '' AND r.state = 'established' AND r.controller = $6::text)) "
    "      RETURNING r.ring_id), "
    "upd AS (UPDATE sessions s SET state = 'invited', event_seq = s.event_seq + 1, updated_at = now() "
    "        WHERE s.session_id = $2::text AND s.ring_id = $1::text AND s.state = 'ringing' "
    "          AND s.owner_node = $3::text AND s.owner_epoch = $4::bigint AND EXISTS (SELECT 1 FROM r) "
    "        RETURNING s.session_id AS sid, s.endpoint_id AS ep, s.event_seq AS seq, s.state AS state, "
    "                  NULL::text AS playback, NULL::bigint AS pos, NULL::text AS reason, NULL::text AS invite, "
    "                  NULL::text AS camera, NULL::text AS pid, NULL::text AS dn, NULL::bigint AS rev), "
    IGW_SQL_STATE_EVENTS("$5::text")
    "SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM upd), (SELECT count(*) FROM ntf)",
    DC__N};

/* The control's result: its `result` object says what the decision did to
 * the ring ({operation, ringId}: docs/decisions.md). */
static void control_result(igw_engine *e, live_session *s, const char *token, int cls, const char *reason,
                           const char *op, const char *ring_id, const char *state)
{
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "operation", 9);
    igw_jw_string(&w, op, strlen(op));
    igw_jw_key(&w, "ringId", 6);
    igw_jw_string(&w, ring_id, strlen(ring_id));
    igw_jw_object_end(&w);
    live_session_control_result(e, s, s->endpoint, token, cls, reason, state, &w);
    igw_jw_free(&w);
}

/* A decision or a handover in flight: its command and session. */
typedef struct bell_cmd {
    igw_engine *e;
    char sid[LIVE_ID_MAX + 1], ring[LIVE_ID_MAX + 1], token[LIVE_TOKEN_MAX + 1], endpoint[LIVE_ID_MAX + 1];
} bell_cmd;

/* The command of op o on session s of ring `ring`, or NULL (out of memory). */
static bell_cmd *bell_cmd_new(live_op *o, const live_session *s, const char *ring)
{
    bell_cmd *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->e = o->e;
    snprintf(x->sid, sizeof x->sid, "%s", s->id);
    snprintf(x->ring, sizeof x->ring, "%s", ring);
    snprintf(x->token, sizeof x->token, "%s", o->token);
    snprintf(x->endpoint, sizeof x->endpoint, "%s", s->endpoint);
    return x;
}

static void on_decide(void *arg, const PGresult *res, const char *err)
{
    bell_cmd *x = arg;
    igw_engine *e = x->e;
    live_session *s = live_session_find(e, x->sid);
    bell *b = s ? bell_of(s) : NULL;
    ring *r = ring_find(e, x->ring);
    if (b)
        b->deciding = false;
    bool won = res && PQntuples(res) == 1 && !strcmp(PQgetvalue(res, 0, DC_COL_WON), "1") &&
               !strcmp(PQgetvalue(res, 0, DC_COL_MOVED), "1");
    if (!res)
        igw_log(IGW_LOG_WARN, NULL, "doorbell: session %s: the decision failed: %s", x->sid, err);
    if (!s || !b) {
        /* Ended meanwhile (its row moves only from ringing: nothing won),
         * most often by the winner's decision just before this one. */
        igw_ResultData d = {0};
        live_session_result(e, x->sid, x->endpoint, x->token, IGW_CommandMethod_interaction_control, IGW_ERR_CONFLICT,
                            r && r->state == IGW_RING_ESTABLISHED ? "answered elsewhere: another endpoint accepted first"
                                                                  : "the session has ended",
                            &d);
        free(x);
        return;
    }
    if (!won) {
        if (!res) {
            control_result(e, s, x->token, IGW_ERR_UNAVAILABLE, "the decision could not be stored: accept again",
                           "accept", x->ring, NULL);
        } else {
            control_result(e, s, x->token, IGW_ERR_CONFLICT, "answered elsewhere: another endpoint accepted first",
                           "accept", x->ring, NULL);
            if (s->state == IGW_SESSION_RINGING)
                live_session_end(e, s, "answeredElsewhere");
        }
        free(x);
        return;
    }
    /* The winner: invited, on the ring's leg; the others answered elsewhere. */
    live_session_count(e, s->state, -1);
    s->state = IGW_SESSION_INVITED;
    live_session_count(e, s->state, 1);
    b->ringing = false;
    s->deadline_ms = igw_clock_ms() + e->cfg.establish_timeout_ms;
    if (r) {
        r->ringing--;
        if (r->state == IGW_RING_RINGING) {
            live_add(&e->n_rings_answered, 1);
            live_add(&e->answer_ms_sum, igw_clock_ms() - r->rang_ms);
            igw_log(IGW_LOG_INFO, NULL, "doorbell: ring %s answered by session %s (%s)", r->id, s->id, x->token);
        } else { /* a handover's target: the old controller keeps the call until this one is established */
            r->handover_deadline_ms = 0;
            igw_log(IGW_LOG_INFO, NULL, "doorbell: ring %s handed over from session %s to %s (%s)", r->id, r->handing,
                    s->id, x->token);
        }
        r->state = IGW_RING_ESTABLISHED;
        snprintf(r->controller, sizeof r->controller, "%s", s->id);
    }
    control_result(e, s, x->token, IGW_ERR_OK, NULL, "accept", x->ring,
                   igw_sm_session.states[IGW_SESSION_INVITED]);
    if (r && r->leg) {
        live_leg_attach(r->leg, s);
    } else {
        live_session_end(e, s, r ? "cameraUnreachable" : "ringEnded");
        free(x);
        return;
    }
    for (live_session *o = e->sessions, *n; o; o = n) {
        n = o->next;
        bell *ob = bell_of(o);
        if (ob && o != s && ob->ringing && !strcmp(ob->ring, x->ring))
            live_session_end(e, o, "answeredElsewhere");
    }
    free(x);
}

static void accept_done(live_op *o, live_session *s)
{
    igw_engine *e = o->e;
    bell *b = bell_of(s);
    if (s->state != IGW_SESSION_RINGING || b->deciding) {
        control_result(e, s, o->token, IGW_ERR_CONFLICT,
                       b->deciding ? "this session's accept is being decided" : "this session is not ringing",
                       "accept", b->ring, NULL);
        return;
    }
    bell_cmd *x = bell_cmd_new(o, s, b->ring);
    char epoch[24], did[32];
    if (!x || live_new_id(did, sizeof did)) {
        free(x);
        control_result(e, s, o->token, IGW_ERR_INTERNAL, "out of memory", "accept", b->ring, NULL);
        return;
    }
    epoch_text(e, epoch, sizeof epoch);
    ring *r = ring_find(e, b->ring);
    const char *v[DC__N] = {[DC_RING] = b->ring, [DC_SID] = s->id,  [DC_NODE] = e->node_id, [DC_EPOCH] = epoch,
                            [DC_DID] = did,      [DC_HANDING] = r ? r->handing : ""};
    b->deciding = true;
    if (igw_db_exec(e->db, &st_decide, v, NULL, NULL, on_decide, x) != 0) {
        b->deciding = false;
        free(x);
        control_result(e, s, o->token, IGW_ERR_UNAVAILABLE, "busy: accept again", "accept", b->ring, NULL);
    }
}

static void decline_done(live_op *o, live_session *s)
{
    bell *b = bell_of(s);
    if (s->state != IGW_SESSION_RINGING) {
        control_result(o->e, s, o->token, IGW_ERR_CONFLICT, "this session is not ringing", "decline", b->ring, NULL);
        return;
    }
    char ring_id[LIVE_ID_MAX + 1];
    snprintf(ring_id, sizeof ring_id, "%s", b->ring);
    control_result(o->e, s, o->token, IGW_ERR_OK, NULL, "decline", ring_id, igw_sm_session.states[IGW_SESSION_ENDED]);
    live_session_end(o->e, s, "declined");
}

/* ---- interaction.control: handover ------------------------------------------------------- */

/* The handover's targets ring: their sessions on the ring, while its row
 * is established and still controlled by the caller. $1 pid, $2 dn, $3
 * camera, $4 ring, $5 node, $6 epoch, $7 deadline (Unix ms), $8 the
 * caller's session, $9 the target user, $10 one endpoint of theirs or '',
 * $11 the caller's endpoint (never a target). */
enum { HO_PID, HO_DN, HO_CAM, HO_RING, HO_NODE, HO_EPOCH, HO_DEADLINE, HO_CALLER, HO_USER, HO_EP, HO_SELF, HO__N };
static const igw_db_stmt st_handover = {
    "igw_doorbell_handover",
    "WITH me AS (SELECT 1 FROM nodes n WHERE n.node_id = $5::text AND n.epoch = $6::bigint FOR SHARE), "
    RING_CANDIDATES("AND p.user_id = $9::bigint AND ($10::text = '' OR p.endpoint_id = $10::text) "
                    "AND p.endpoint_id <> $11::text")
    "r AS (SELECT r.ring_id FROM rings r WHERE r.ring_id = $4::text AND r.state = 'established' "
    "      AND r.controller = $8::text AND EXISTS (SELECT 1 FROM me) FOR UPDATE), "
    RING_SESSIONS("$5::text", "$6::bigint", "$7::bigint"),
    HO__N};

static void on_handover(void *arg, const PGresult *res, const char *err)
{
    bell_cmd *x = arg;
    igw_engine *e = x->e;
    live_session *s = live_session_find(e, x->sid);
    ring *r = ring_find(e, x->ring);
    int cls = IGW_ERR_OK;
    const char *why = NULL;
    if (!res) {
        igw_log(IGW_LOG_WARN, NULL, "doorbell: session %s: the handover failed: %s", x->sid, err);
        cls = IGW_ERR_UNAVAILABLE;
        why = "the handover could not be stored: hand over again";
    } else if (PQntuples(res) < 1 || strcmp(PQgetvalue(res, 0, FO_COL_RING), "1") != 0 || !s || !r ||
               strcmp(r->controller, x->sid) != 0) {
        cls = IGW_ERR_CONFLICT;
        why = "this session no longer controls the call";
    } else if (PQgetisnull(res, 0, FO_COL_SID)) {
        cls = IGW_ERR_NOT_FOUND;
        why = "no live endpoint of the target may answer the camera";
    }
    if (cls != IGW_ERR_OK) {
        if (r && !strcmp(r->handing, x->sid) && !r->ringing)
            r->handing[0] = '\0';
        igw_ResultData d = {0};
        live_session_result(e, x->sid, x->endpoint, x->token, IGW_CommandMethod_interaction_control, cls, why, &d);
        free(x);
        return;
    }
    ring_sessions_add(e, r, res);
    r->handover_deadline_ms = igw_clock_ms() + e->cfg.doorbell_ring_timeout_ms;
    igw_log(IGW_LOG_INFO, NULL, "doorbell: ring %s: session %s hands over, %u endpoint(s) ring", r->id, s->id, r->ringing);
    control_result(e, s, x->token, IGW_ERR_OK, NULL, "handover", r->id, igw_sm_session.states[s->state]);
    free(x);
}

static void handover_done(live_op *o, live_session *s)
{
    igw_engine *e = o->e;
    bell *b = bell_of(s);
    ring *r = ring_find(e, b->ring);
    if (!r || strcmp(r->controller, s->id) != 0 || r->handing[0]) {
        control_result(e, s, o->token, IGW_ERR_CONFLICT,
                       r && r->handing[0] ? "a handover of this call is ringing already"
                                          : "only the session that controls the call hands it over",
                       "handover", b->ring, NULL);
        return;
    }
    bell_cmd *x = bell_cmd_new(o, s, r->id);
    char epoch[24], deadline[24], user[24];
    if (!x) {
        control_result(e, s, o->token, IGW_ERR_INTERNAL, "out of memory", "handover", b->ring, NULL);
        return;
    }
    epoch_text(e, epoch, sizeof epoch);
    snprintf(deadline, sizeof deadline, "%" PRId64, igw_wall_ms() + (int64_t)e->cfg.doorbell_ring_timeout_ms);
    snprintf(user, sizeof user, "%" PRId64, o->arg1);
    const char *v[HO__N] = {[HO_PID] = r->pid,       [HO_DN] = r->dn,        [HO_CAM] = r->cam,
                            [HO_RING] = r->id,       [HO_NODE] = e->node_id, [HO_EPOCH] = epoch,
                            [HO_DEADLINE] = deadline, [HO_CALLER] = s->id,   [HO_USER] = user,
                            [HO_EP] = o->text,       [HO_SELF] = s->endpoint};
    snprintf(r->handing, sizeof r->handing, "%s", s->id); /* no second handover meanwhile */
    if (igw_db_exec(e->db, &st_handover, v, NULL, NULL, on_handover, x) != 0) {
        r->handing[0] = '\0';
        free(x);
        control_result(e, s, o->token, IGW_ERR_UNAVAILABLE, "busy: hand over again", "handover", b->ring, NULL);
    }
}

/* args: userId (another user with rights on the device: every live
 * endpoint of theirs rings) and/or endpointId (one endpoint: the caller's
 * own user's unless userId names another); never the caller's endpoint. */
static void handover(live_op *o, live_session *s, const igw_HandoverArgs *a)
{
    bell *b = bell_of(s);
    ring *r = ring_find(o->e, b->ring);
    if (s->state == IGW_SESSION_RINGING || !r || strcmp(r->controller, s->id) != 0) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "only the session that controls the call hands it over",
                       IGW_PATH_command_params_operation);
        return;
    }
    o->arg1 = o->user_id;
    if (a->has & IGW_HandoverArgs_userId) {
        char buf[24];
        snprintf(buf, sizeof buf, "%.*s", (int)a->userId.len, a->userId.ptr);
        o->arg1 = strtoll(buf, NULL, 10); /* UserId: a canonical safe integer (the decoder's) */
    }
    o->text[0] = '\0';
    if (a->has & IGW_HandoverArgs_endpointId)
        snprintf(o->text, sizeof o->text, "%.*s", (int)a->endpointId.len, a->endpointId.ptr);
    if (o->arg1 == o->user_id && (!o->text[0] || !strcmp(o->text, s->endpoint))) {
        live_op_refuse(o, IGW_ERR_PARAMETER, "the target is this endpoint: name another endpoint or another user",
                       o->text[0] ? IGW_PATH_command_params_args_endpointId : IGW_PATH_command_params_args_userId);
        return;
    }
    live_op_accept(o, handover_done);
}

/* interaction.control's door-bell operations (the hook `control`). */
static void bell_control(live_op *o, live_session *s)
{
    const igw_ControlParams *p = &o->k->params.interaction_control;
    bell *b = bell_of(s);
    if (!b) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "this session has no door-bell to control", IGW_PATH_command_sessionId);
        return;
    }
    if (p->operation == IGW_ControlOperation_handover) {
        handover(o, s, &p->args.handover);
        return;
    }
    bool accept = p->operation == IGW_ControlOperation_accept;
    /* The session machine's refusal (schema: reject accept when not ringing). */
    igw_sm_result m = igw_sm_fire(&igw_sm_session, (int)s->state, accept ? IGW_SESSION_ON_ACCEPT : IGW_SESSION_ON_DECLINE,
                                  IGW_SESSION_IF_FIRSTACCEPT);
    if (!m.ok) {
        live_op_refuse(o, m.err, m.reason ? m.reason : "this session is not ringing", IGW_PATH_command_params_operation);
        return;
    }
    igw_str tok = accept ? p->args.accept.inviteToken : p->args.decline.inviteToken;
    if (!igw_str_eq(tok, b->invite, strlen(b->invite))) {
        live_op_refuse(o, IGW_ERR_PARAMETER, "args.inviteToken is not this session's ring",
                       IGW_PATH_command_params_args_inviteToken);
        return;
    }
    live_op_accept(o, accept ? accept_done : decline_done);
}

/* ---- hooks ------------------------------------------------------------------------- */

static bool bell_check(igw_engine *e, const igw_OpenParams *p, uint32_t *guards, live_refusal *r)
{
    (void)e;
    (void)p;
    (void)guards;
    *r = (live_refusal){.cls = IGW_ERR_PARAMETER,
                        .reason = "a door-bell session is opened by the camera's ring, never by interaction.open",
                        .path = IGW_PATH_command_params_purpose};
    return true;
}

/* A handover's target is established: the old controller's session ends,
 * once (handedOver); the anchor and its leg go on untouched. */
static void bell_established(igw_engine *e, live_session *s)
{
    bell *b = bell_of(s);
    ring *r = b ? ring_find(e, b->ring) : NULL;
    if (!r || !r->handing[0] || strcmp(r->controller, s->id) != 0)
        return;
    live_session *old = live_session_find(e, r->handing);
    r->handing[0] = '\0';
    if (old)
        live_session_end(e, old, "handedOver");
}

static void bell_end(igw_engine *e, live_session *s, const char *reason)
{
    bell *b = bell_of(s);
    ring *r = b ? ring_find(e, b->ring) : NULL;
    if (!r || r->ending)
        return;
    if (b->ringing) {
        b->ringing = false;
        r->ringing--;
        r->declined |= !strcmp(reason, "declined");
        if (r->state == IGW_RING_RINGING && !r->ringing)
            ring_end(e, r, r->declined ? "declined" : "noAnswer",
                     r->declined ? IGW_ByeReason_declined : IGW_ByeReason_noAnswer);
        else if (r->state == IGW_RING_ESTABLISHED && !r->ringing && !strcmp(r->controller, r->handing))
            r->handing[0] = '\0'; /* nobody took the handover: the controller keeps the call */
        return;
    }
    if (r->handing[0] && !strcmp(r->handing, s->id)) {
        /* The controller that handed over left: its target's session has
         * the call already, or nobody took it and the call ends. */
        r->handing[0] = '\0';
        if (!strcmp(r->controller, s->id))
            ring_end(e, r, reason, IGW_ByeReason_hungUp);
        return;
    }
    if (strcmp(r->controller, s->id) != 0)
        return;
    if (r->handing[0] && live_session_find(e, r->handing)) {
        /* A handover's target failed before it was established: the old
         * controller keeps the call (the row says so again). */
        snprintf(r->controller, sizeof r->controller, "%s", r->handing);
        r->handing[0] = '\0';
        ring_controller_write(e, r);
        return;
    }
    ring_end(e, r, reason, IGW_ByeReason_hungUp); /* the call's controller left: the call ends */
}

static void bell_tick(igw_engine *e, int64_t now_ms)
{
    bell_engine *b = e->pstate[IGW_Purpose_doorbell];
    for (ring *r = b ? b->rings : NULL, *n; r; r = n) {
        n = r->next;
        if (r->state == IGW_RING_RINGING && now_ms >= r->deadline_ms) {
            ring_end(e, r, "noAnswer", IGW_ByeReason_noAnswer);
        } else if (r->handover_deadline_ms && now_ms >= r->handover_deadline_ms) {
            /* Nobody took the handover: its targets stop ringing. */
            r->handover_deadline_ms = 0;
            for (live_session *s = e->sessions, *sn; s; s = sn) {
                sn = s->next;
                bell *sb = bell_of(s);
                if (sb && sb->ringing && !strcmp(sb->ring, r->id))
                    live_session_end(e, s, "noAnswer");
            }
        }
    }
}

static void bell_stop(igw_engine *e)
{
    bell_engine *b = e->pstate[IGW_Purpose_doorbell];
    while (b && b->rings) {
        ring *r = b->rings;
        b->rings = r->next;
        free(r);
    }
    free(b);
    e->pstate[IGW_Purpose_doorbell] = NULL;
}

const struct igw_purpose_hooks igw_purpose_doorbell = {
    .check = bell_check,
    .control = bell_control,
    .establish_on_flow = true,
    .established = bell_established,
    .end = bell_end,
    .tick = bell_tick,
    .device = bell_device,
    .stop = bell_stop,
};
