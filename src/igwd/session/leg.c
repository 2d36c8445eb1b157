/* leg.c - see leg.h: the platform invites, the camera offers, the media
 * core answers; the core's facts move the leg. */
#include "session/leg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "arena.h"
#include "clock.h"
#include "core/log.h"
#include "protocol.h"
#include "session/hooks.h"

#define ANSWER_MAX (64 * 1024)
#define PARAMS_ARENA (256u << 10) /* a leg message's decoded params (the edge bounds them to 48 KiB) */
#define TRACKS_MAX 4              /* MediaInviteParams.tracks: items 1..4 */

/* The invite, again with the same token while no offer came: a camera that
 * was online (its broker connection authenticated) but not subscribed yet
 * missed the first one, and takes a redelivery it already has as nothing
 * (docs/device-protocol.md). */
#define INVITE_RESEND_MS 2000

/* Not invited yet: its row is being written (resend_ms while so). */
#define NOT_INVITED INT64_MAX

/* The leg's row (legs), written before its invite: the camera's answer,
 * which the broker may hand to any node, finds its holder there
 * (forward.h). Rows only say where a live leg is: their commits skip the
 * WAL flush, and a crash's lost row dies with the epoch that held it. A
 * dead epoch's rows are deleted, and their cameras told bye, by any node
 * (forward.h). */
enum { LR_LEG, LR_PID, LR_DN, LR_CAM, LR_SHARED, LR_NODE, LR_EPOCH, LR__N };
static const igw_db_stmt st_leg_row = {
    "igw_session_leg_row",
    "INSERT INTO legs (leg_id, product_id, device_name, camera_id, shared, owner_node, owner_epoch) "
    "SELECT $1::text, $2::text, $3::text, $4::text, $5::boolean, $6::text, $7::bigint "
    "WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL "
    "ON CONFLICT (leg_id) DO UPDATE SET owner_node = EXCLUDED.owner_node, owner_epoch = EXCLUDED.owner_epoch",
    LR__N};
static const igw_db_stmt st_leg_gone = {
    "igw_session_leg_gone",
    "DELETE FROM legs WHERE leg_id = $1::text AND owner_node = $2::text "
    "  AND set_config('synchronous_commit', 'off', true) IS NOT NULL",
    2};

/* A statement's context: the leg by its id (it may be gone by the answer). */
typedef struct leg_ref {
    igw_engine *e;
    char id[LIVE_ID_MAX + 1];
} leg_ref;

static leg_ref *leg_ref_new(igw_engine *e, const live_leg *l)
{
    leg_ref *x = malloc(sizeof *x);
    if (x) {
        x->e = e;
        snprintf(x->id, sizeof x->id, "%s", l->id);
    }
    return x;
}

live_leg *live_leg_find(igw_engine *e, const char *id)
{
    for (live_leg *l = e->legs; l; l = l->next)
        if (strcmp(l->id, id) == 0)
            return l;
    return NULL;
}

live_leg *live_leg_of_camera(igw_engine *e, const char *pid, const char *dn, const char *cam)
{
    for (live_leg *l = e->legs; l; l = l->next)
        if (l->shared && !strcmp(l->product_id, pid) && !strcmp(l->device_name, dn) && !strcmp(l->camera_id, cam))
            return l;
    return NULL;
}

/* Publishes e->jw to camera (pid, dn) as the down row d. 0, or -1. */
static int publish_to(igw_engine *e, const char *pid, const char *dn, const igw_proto_down *d)
{
    igw_mqtt *m = e->cfg.mqtt ? atomic_load(e->cfg.mqtt) : NULL;
    if (igw_jw_status(&e->jw))
        return -1;
    return igw_mqtt_publish_down(m, d, pid, dn, e->jw.buf, e->jw.len);
}

int live_leg_publish(igw_engine *e, const live_leg *l, const igw_proto_down *d)
{
    return publish_to(e, l->product_id, l->device_name, d);
}

int live_leg_invite(igw_engine *e, live_leg *l)
{
    if (!l->invite_token[0] && live_new_id(l->invite_token, sizeof l->invite_token))
        return -1;
    l->resend_ms = igw_clock_ms() + INVITE_RESEND_MS;
    /* What the purpose's row asks of the camera: the tracks it sends or plays. */
    igw_MediaTrack tracks[TRACKS_MAX];
    uint32_t n = 0;
    for (size_t i = 0; i < l->def->ntracks && n < TRACKS_MAX; i++) {
        const igw_purpose_track *t = &l->def->tracks[i];
        if ((t->when & l->guards) == t->when)
            tracks[n++] = (igw_MediaTrack){.has = IGW_MediaTrack__REQUIRED, .trackId = t->id, .kind = t->kind,
                                           .codec = t->codec};
    }
    igw_MediaInvite inv = {
        .has = IGW_MediaInvite__REQUIRED,
        .method = igw_str_of(igw_proto_device_downs[IGW_PROTO_DEVICE_DOWN_media_session_invite].method),
        .msgToken = igw_str_of(l->invite_token),
        .sessionId = igw_str_of(l->id),
        .params = {.has = IGW_MediaInviteParams__REQUIRED,
                   .cameraId = igw_str_of(l->camera_id),
                   .mediaRevision = l->revision,
                   .tracks = {tracks, n}},
    };
    if (l->def->hooks->invite)
        l->def->hooks->invite(l->ldata, &inv.params);
    igw_jw_reset(&e->jw);
    igw_encode_MediaInvite(&e->jw, &inv);
    return live_leg_publish(e, l, &igw_proto_device_downs[IGW_PROTO_DEVICE_DOWN_media_session_invite]);
}

int live_leg_bye_to(igw_engine *e, const char *id, const char *pid, const char *dn, igw_ByeReason reason)
{
    char token[32];
    if (live_new_id(token, sizeof token))
        return -1;
    igw_MediaBye bye = {.has = IGW_MediaBye__REQUIRED,
                        .method = igw_str_of(igw_proto_device_downs[IGW_PROTO_DEVICE_DOWN_media_session_bye].method),
                        .msgToken = igw_str_of(token),
                        .sessionId = igw_str_of(id),
                        .params = {.has = IGW_ByeParams__REQUIRED, .reason = reason}};
    igw_jw_reset(&e->jw);
    igw_encode_MediaBye(&e->jw, &bye);
    return publish_to(e, pid, dn, &igw_proto_device_downs[IGW_PROTO_DEVICE_DOWN_media_session_bye]);
}

void live_leg_bye(igw_engine *e, live_leg *l, igw_ByeReason reason)
{
    if (live_leg_bye_to(e, l->id, l->product_id, l->device_name, reason) != 0)
        igw_log(IGW_LOG_WARN, NULL, "session: leg %s: bye not published (broker unreachable)", l->id);
}

/* The row is written (or could not be: one node still serves the leg):
 * the camera is invited, unless the leg went meanwhile (its row's DELETE
 * follows this INSERT on the same connection). */
static void on_leg_row(void *arg, const PGresult *res, const char *err)
{
    leg_ref *x = arg;
    live_leg *l = live_leg_find(x->e, x->id);
    if (!res)
        igw_log(IGW_LOG_WARN, NULL, "session: leg %s: its row not written (%s): only this node answers its camera",
                x->id, err);
    if (l && l->phase == LEG_INVITED && l->resend_ms == NOT_INVITED && live_leg_invite(x->e, l) != 0)
        igw_log(IGW_LOG_WARN, NULL, "session: leg %s: invite not published (broker unreachable), retrying", l->id);
    free(x);
}

static void on_leg_gone(void *arg, const PGresult *res, const char *err)
{
    leg_ref *x = arg;
    if (!res)
        igw_log(IGW_LOG_WARN, NULL, "session: leg %s: its row not deleted (%s)", x->id, err);
    free(x);
}

/* Writes the leg's row; its answer invites. -1: not sent. */
static int leg_row(igw_engine *e, const live_leg *l)
{
    int64_t epoch = live_node_epoch(e);
    leg_ref *x = e->db && epoch > 0 ? leg_ref_new(e, l) : NULL;
    if (!x)
        return -1;
    char ep[24];
    snprintf(ep, sizeof ep, "%" PRId64, epoch);
    const char *v[LR__N] = {[LR_LEG] = l->id,       [LR_PID] = l->product_id, [LR_DN] = l->device_name,
                            [LR_CAM] = l->camera_id, [LR_SHARED] = l->shared ? "t" : "f",
                            [LR_NODE] = e->node_id, [LR_EPOCH] = ep};
    if (igw_db_exec(e->db, &st_leg_row, v, NULL, NULL, on_leg_row, x) != 0) {
        free(x);
        return -1;
    }
    return 0;
}

live_leg *live_leg_open(igw_engine *e, const char *id, const char *pid, const char *dn, const char *cam,
                        const igw_purpose *def, uint32_t guards, void *ldata, const char **reason)
{
    live_leg *l = calloc(1, sizeof *l);
    if (l && id)
        snprintf(l->id, sizeof l->id, "%s", id);
    if (!l || (!id && live_new_id(l->id, sizeof l->id))) {
        free(l);
        free(ldata);
        *reason = "out of memory";
        return NULL;
    }
    snprintf(l->product_id, sizeof l->product_id, "%s", pid);
    snprintf(l->device_name, sizeof l->device_name, "%s", dn);
    snprintf(l->camera_id, sizeof l->camera_id, "%s", cam);
    l->revision = 1;
    l->shared = def->shared_leg;
    l->def = def;
    l->guards = guards;
    l->ldata = ldata;
    l->phase = LEG_INVITED;
    l->deadline_ms = igw_clock_ms() + e->cfg.invite_timeout_ms;
    l->resend_ms = NOT_INVITED;
    igw_mqtt *m = e->cfg.mqtt ? atomic_load(e->cfg.mqtt) : NULL;
    if (!m || (leg_row(e, l) != 0 && live_leg_invite(e, l) != 0)) {
        free(l->ldata);
        free(l);
        *reason = "the camera cannot be reached (the broker is unreachable)";
        return NULL;
    }
    l->next = e->legs;
    e->legs = l;
    live_add(&e->n_legs, 1);
    igw_log(IGW_LOG_INFO, NULL, "session: leg %s: %s/%s camera %s invited (%u tracks, %s)", l->id, pid, dn, cam,
            (unsigned)def->ntracks, l->shared ? "shared" : "its viewer's own");
    return l;
}

void live_leg_attach(live_leg *leg, live_session *s)
{
    leg->linger_until_ms = 0;
    s->leg = leg;
    s->leg_next = leg->viewers;
    leg->viewers = s;
}

bool live_leg_detach(live_leg *leg, live_session *s)
{
    for (live_session **p = &leg->viewers; *p; p = &(*p)->leg_next)
        if (*p == s) {
            *p = s->leg_next;
            break;
        }
    s->leg = NULL;
    s->leg_next = NULL;
    return leg->viewers != NULL;
}

void live_leg_free(igw_engine *e, live_leg *leg, bool closed)
{
    for (live_leg **p = &e->legs; *p; p = &(*p)->next)
        if (*p == leg) {
            *p = leg->next;
            break;
        }
    if (!closed && leg->phase != LEG_INVITED && e->media)
        (void)igw_media_close(e->media, leg->id, "leg closed");
    leg_ref *x = e->db ? leg_ref_new(e, leg) : NULL;
    if (x) {
        const char *v[2] = {leg->id, e->node_id};
        if (igw_db_exec(e->db, &st_leg_gone, v, NULL, NULL, on_leg_gone, x) != 0) {
            igw_log(IGW_LOG_WARN, NULL, "session: leg %s: its row not deleted (queue full)", leg->id);
            free(x); /* a dead epoch's rows go with it (the node sweeps) */
        }
    }
    live_add(&e->n_legs, -1);
    free(leg->ldata);
    free(leg);
}

int live_leg_offer(igw_engine *e, live_leg *l, igw_str params, const char **reason, const char **data,
                   size_t *data_len)
{
    igw_json j;
    igw_MediaOfferParams p;
    igw_arena arena;
    igw_arena_init(&arena, PARAMS_ARENA);
    igw_json_init(&j, params.ptr, params.len, &arena, 8);
    int cls = IGW_ERR_OK;
    char *sdp = NULL, *answer = NULL;
    if (!params.ptr || igw_decode_MediaOfferParams(&j, &p) != 0) { /* the edge decoded it already */
        *reason = "params: not a media offer";
        cls = IGW_ERR_PARAMETER;
    } else if ((uint64_t)p.mediaRevision != l->revision) {
        *reason = "stale mediaRevision";
        cls = IGW_ERR_CONFLICT;
    } else if (l->phase != LEG_INVITED) {
        *reason = "the leg already has the camera's offer";
        cls = IGW_ERR_CONFLICT;
    } else if (!e->media) {
        *reason = "no media core on this node";
        cls = IGW_ERR_UNAVAILABLE;
    }
    if (cls != IGW_ERR_OK) {
        igw_arena_free(&arena);
        return cls;
    }
    sdp = strndup(p.webrtc.sdp.ptr, p.webrtc.sdp.len);
    answer = malloc(ANSWER_MAX);
    igw_arena_free(&arena);
    char err[160] = "";
    igw_media_rc rc = sdp && answer ? igw_media_source_offer(e->media, l->id, l->revision, sdp, strlen(sdp), answer,
                                                             ANSWER_MAX, err, sizeof err)
                                    : IGW_MEDIA_EFAIL;
    free(sdp);
    if (rc != IGW_MEDIA_OK) {
        free(answer);
        igw_log(IGW_LOG_WARN, NULL, "session: leg %s: the camera's offer refused: %s", l->id, err);
        *reason = rc == IGW_MEDIA_EINVAL ? "the offer cannot be used" : "the media core failed";
        /* The leg stays invited: the camera may offer again; else the
         * invite deadline ends it and its sessions (inviteTimeout). */
        return rc == IGW_MEDIA_EINVAL ? IGW_ERR_PARAMETER : IGW_ERR_INTERNAL;
    }
    l->phase = LEG_OFFERED;
    igw_MediaAnswer a = {.has = IGW_MediaAnswer__REQUIRED,
                         .sessionId = igw_str_of(l->id),
                         .mediaRevision = l->revision,
                         .webrtc = {.has = IGW_WebrtcAnswer__REQUIRED,
                                    /* the core's agent says its ICE mode in the SDP */
                                    .iceMode = strstr(answer, "a=ice-lite") ? IGW_IceMode_lite : IGW_IceMode_full,
                                    .sdp = igw_str_of(answer)}};
    igw_jw_reset(&e->jw);
    igw_encode_MediaAnswer(&e->jw, &a);
    free(answer);
    if (igw_jw_status(&e->jw)) {
        *reason = "out of memory";
        return IGW_ERR_INTERNAL;
    }
    *data = e->jw.buf;
    *data_len = e->jw.len;
    igw_log(IGW_LOG_INFO, NULL, "session: leg %s: the camera's offer answered", l->id);
    return IGW_ERR_OK;
}

live_leg_fact live_leg_media(live_leg *l, const igw_media_event *ev)
{
    if (ev->revision != l->revision)
        return LIVE_LEG_SAME; /* an older source's */
    switch (ev->kind) {
    case IGW_MEDIA_EV_DTLS_CONNECTED:
        igw_log(IGW_LOG_DEBUG, NULL, "session: leg %s: connected", l->id);
        if (l->phase < LEG_CONNECTED)
            l->phase = LEG_CONNECTED;
        return LIVE_LEG_CHANGED; /* a player is ready without media */
    case IGW_MEDIA_EV_FIRST_PACKET:
        if (l->phase != LEG_FLOWING)
            igw_log(IGW_LOG_DEBUG, NULL, "session: leg %s: its first packet (%s)", l->id, ev->reason);
        l->phase = LEG_FLOWING;
        return LIVE_LEG_CHANGED;
    case IGW_MEDIA_EV_ICE_FAILED:
    case IGW_MEDIA_EV_DTLS_FAILED:
        return LIVE_LEG_FAILED;
    case IGW_MEDIA_EV_CLOSED:
        return LIVE_LEG_CLOSED;
    case IGW_MEDIA_EV_ICE_CONNECTED:
    case IGW_MEDIA_EV_KEYFRAME:
    case IGW_MEDIA_EV_FRAME:
        break;
    }
    return LIVE_LEG_SAME;
}
