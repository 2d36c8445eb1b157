/* leg.c - camera legs: one camera's upstream into the media core, shared
 * by every viewer of that camera (docs/sessions.md, "The device media
 * protocol"). The platform invites, the camera offers, the media core
 * answers; facts of the core move the leg; the last viewer out says bye.
 * On the engine's loop only (live.h). */
#include "session/live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "arena.h"
#include "clock.h"
#include "core/log.h"
#include "protocol.h"
#include "topic.h"

#define ANSWER_MAX (64 * 1024)
#define PARAMS_ARENA (256u << 10) /* a leg message's decoded params (the edge bounds them to 48 KiB) */

live_leg *live_leg_find(igw_engine *e, const char *id)
{
    for (live_leg *l = e->legs; l; l = l->next)
        if (strcmp(l->id, id) == 0)
            return l;
    return NULL;
}

/* The camera's shared (live) leg; playback legs are their viewer's own. */
static live_leg *leg_of_camera(igw_engine *e, const char *pid, const char *dn, const char *cam)
{
    for (live_leg *l = e->legs; l; l = l->next)
        if (!l->playback && !strcmp(l->product_id, pid) && !strcmp(l->device_name, dn) && !strcmp(l->camera_id, cam))
            return l;
    return NULL;
}

/* The schema's downlink row of the media handle named `method`. */
static const igw_proto_down *media_down(const char *method)
{
    for (size_t i = 0; i < igw_proto_device.ndowns; i++) {
        const igw_proto_down *d = &igw_proto_device.downs[i];
        if (!strcmp(d->handle, "media") && !strcmp(d->method, method))
            return d;
    }
    return NULL;
}

/* Publishes what e->jw holds on the down row's topic of the leg's camera. */
static int publish(igw_engine *e, const live_leg *l, const igw_proto_down *d)
{
    char topic[IGW_TOPIC_MAX + 1];
    igw_mqtt *m = e->cfg.mqtt ? atomic_load(e->cfg.mqtt) : NULL;
    if (!d || igw_jw_status(&e->jw) ||
        igw_topic_build(topic, sizeof topic, 0, IGW_TOPIC_DOWN, d->handle, d->type, l->product_id,
                        l->device_name) < 0)
        return -1;
    return m ? igw_mqtt_publish(m, topic, e->jw.buf, e->jw.len, 1) : -1;
}

/* The invite, again with the same token while no offer came: a camera that
 * was online (its broker connection authenticated) but not subscribed yet
 * missed the first one, and takes a redelivery it already has as nothing
 * (docs/device-protocol.md). */
#define INVITE_RESEND_MS 2000

static int send_invite(igw_engine *e, live_leg *l)
{
    const igw_proto_down *d = media_down("invite");
    if (!l->invite_token[0] && live_new_id(l->invite_token, sizeof l->invite_token))
        return -1;
    const char *token = l->invite_token;
    l->resend_ms = igw_clock_ms() + INVITE_RESEND_MS;
    igw_MediaTrack tracks[3] = {
        {.has = IGW_MediaTrack__REQUIRED, .trackId = igw_str_of("video-1"), .kind = IGW_TrackKind_video,
         .codec = igw_str_of("H264")},
    };
    uint32_t n = 1;
    if (l->audio) /* a recording's sound, or the camera's microphone */
        tracks[n++] = (igw_MediaTrack){.has = IGW_MediaTrack__REQUIRED, .trackId = igw_str_of(l->playback ? "audio-1" : "mic"),
                                       .kind = IGW_TrackKind_audio, .codec = igw_str_of("opus")};
    if (l->speaker) /* what the talk's members say, played by the camera */
        tracks[n++] = (igw_MediaTrack){.has = IGW_MediaTrack__REQUIRED, .trackId = igw_str_of("speaker"),
                                       .kind = IGW_TrackKind_audio, .codec = igw_str_of("opus")};
    igw_MediaInvite inv = {
        .has = IGW_MediaInvite__REQUIRED,
        .method = igw_str_of("invite"),
        .msgToken = igw_str_of(token),
        .sessionId = igw_str_of(l->id),
        .params = {.has = IGW_MediaInviteParams__REQUIRED,
                   .cameraId = igw_str_of(l->camera_id),
                   .mediaRevision = l->revision,
                   .tracks = {tracks, n}},
    };
    if (l->playback) {
        inv.params.has |= IGW_MediaInviteParams_recording;
        inv.params.recording = (igw_PlaybackSource){.has = IGW_PlaybackSource__REQUIRED,
                                                    .recordingId = igw_str_of(l->recording_id),
                                                    .recordingVersion = l->recording_version};
    }
    igw_jw_reset(&e->jw);
    igw_encode_MediaInvite(&e->jw, &inv);
    return publish(e, l, d);
}

static void send_bye(igw_engine *e, live_leg *l, igw_ByeReason reason)
{
    char token[32];
    if (live_new_id(token, sizeof token))
        return;
    igw_MediaBye bye = {.has = IGW_MediaBye__REQUIRED,
                        .method = igw_str_of("bye"),
                        .msgToken = igw_str_of(token),
                        .sessionId = igw_str_of(l->id),
                        .params = {.has = IGW_ByeParams__REQUIRED, .reason = reason}};
    igw_jw_reset(&e->jw);
    igw_encode_MediaBye(&e->jw, &bye);
    if (publish(e, l, media_down("bye")) != 0)
        igw_log(IGW_LOG_WARN, NULL, "session: leg %s: bye not published (broker unreachable)", l->id);
}

bool live_leg_lacks(igw_engine *e, const char *pid, const char *dn, const char *cam, bool audio, bool speaker)
{
    const live_leg *l = leg_of_camera(e, pid, dn, cam);
    return l && ((audio && !l->audio) || (speaker && !l->speaker));
}

live_leg *live_leg_get(igw_engine *e, const char *pid, const char *dn, const char *cam, bool audio, bool speaker,
                       const live_recording *rec, const char **reason)
{
    live_leg *l = rec ? NULL : leg_of_camera(e, pid, dn, cam);
    if (l) {
        if ((audio && !l->audio) || (speaker && !l->speaker)) {
            /* Asking the camera again would replace the source under its
             * viewers: docs/decisions.md. */
            *reason = speaker ? "the camera is being viewed without talk; talk when its viewers have left"
                              : "the camera is being viewed without its microphone; open without listenAudio";
            return NULL;
        }
        return l;
    }
    if (!(l = calloc(1, sizeof *l)) || live_new_id(l->id, sizeof l->id)) {
        free(l);
        *reason = "out of memory";
        return NULL;
    }
    snprintf(l->product_id, sizeof l->product_id, "%s", pid);
    snprintf(l->device_name, sizeof l->device_name, "%s", dn);
    snprintf(l->camera_id, sizeof l->camera_id, "%s", cam);
    l->revision = 1;
    l->audio = audio;
    l->speaker = speaker;
    if (rec) {
        l->playback = true;
        snprintf(l->recording_id, sizeof l->recording_id, "%s", rec->recording_id);
        l->recording_version = rec->version;
    }
    l->phase = LEG_INVITED;
    l->deadline_ms = igw_clock_ms() + e->cfg.invite_timeout_ms;
    if (send_invite(e, l) != 0) {
        free(l);
        *reason = "the camera cannot be reached (the broker is unreachable)";
        return NULL;
    }
    l->next = e->legs;
    e->legs = l;
    live_add(&e->n_legs, 1);
    igw_log(IGW_LOG_INFO, NULL, "session: leg %s: %s/%s camera %s invited%s%s", l->id, pid, dn, cam,
            rec ? " to play back " : speaker ? " with its microphone and speaker" : audio ? " with its microphone" : "",
            rec ? rec->recording_id : "");
    return l;
}

int live_leg_playback(igw_engine *e, live_leg *l, igw_PlaybackOperation op, int64_t position_ms, char *down_token,
                      size_t cap)
{
    if (live_new_id(down_token, cap))
        return -1;
    igw_MediaPlaybackControl c = {.has = IGW_MediaPlaybackControl__REQUIRED,
                                  .method = igw_str_of("playbackControl"),
                                  .msgToken = igw_str_of(down_token),
                                  .sessionId = igw_str_of(l->id),
                                  .params = {.has = IGW_PlaybackControlParams__REQUIRED,
                                             .operation = op,
                                             .mediaRevision = l->revision}};
    if (op == IGW_PlaybackOperation_seek) {
        c.params.has |= IGW_PlaybackControlParams_positionMs;
        c.params.positionMs = position_ms;
    }
    igw_jw_reset(&e->jw);
    igw_encode_MediaPlaybackControl(&e->jw, &c);
    return publish(e, l, media_down("playbackControl"));
}

void live_leg_attach(live_leg *leg, live_session *s)
{
    s->leg = leg;
    s->leg_next = leg->viewers;
    leg->viewers = s;
}

static void leg_free(igw_engine *e, live_leg *leg)
{
    for (live_leg **p = &e->legs; *p; p = &(*p)->next)
        if (*p == leg) {
            *p = leg->next;
            break;
        }
    if (leg->phase != LEG_INVITED && e->media)
        (void)igw_media_close(e->media, leg->id, "leg closed");
    live_add(&e->n_legs, -1);
    free(leg);
}

void live_leg_detach(igw_engine *e, live_leg *leg, live_session *s)
{
    for (live_session **p = &leg->viewers; *p; p = &(*p)->leg_next)
        if (*p == s) {
            *p = s->leg_next;
            break;
        }
    s->leg = NULL;
    s->leg_next = NULL;
    if (!leg->viewers) {
        igw_log(IGW_LOG_INFO, NULL, "session: leg %s: no viewer left, bye", leg->id);
        send_bye(e, leg, IGW_ByeReason_noViewers);
        leg_free(e, leg);
    }
}

/* The leg is gone (the camera's bye, a failure, a timeout): every session
 * on it ends with `reason`; the last one's detach frees the leg. */
static void leg_end(igw_engine *e, live_leg *leg, const char *reason, bool say_bye, igw_ByeReason bye)
{
    igw_log(IGW_LOG_INFO, NULL, "session: leg %s ends: %s", leg->id, reason);
    if (say_bye)
        send_bye(e, leg, bye);
    if (leg->phase != LEG_INVITED && e->media)
        (void)igw_media_close(e->media, leg->id, reason);
    leg->phase = LEG_INVITED; /* closed already: leg_free must not close it again */
    /* live_session_end detaches; the leg goes with its last viewer, so the
     * bye above is the only one (a noViewers bye would follow otherwise). */
    while (leg->viewers) {
        live_session *s = leg->viewers;
        leg->viewers = s->leg_next;
        s->leg = NULL;
        s->leg_next = NULL;
        live_session_end(e, s, reason);
    }
    leg_free(e, leg);
}

/* The answer's ICE mode: the core's agent says so in the SDP. */
static const char *ice_mode(const char *sdp)
{
    return strstr(sdp, "a=ice-lite") ? "lite" : "full";
}

static int offer_answer(igw_engine *e, live_leg *l, const igw_MediaOfferParams *pp, const char **reason,
                        const char **data, size_t *data_len);

static int on_offer(igw_engine *e, live_leg *l, const igw_engine_uplink *u, const char **reason, const char **data,
                    size_t *data_len)
{
    igw_json j;
    igw_MediaOfferParams p;
    igw_arena arena;
    igw_arena_init(&arena, PARAMS_ARENA);
    igw_json_init(&j, u->params.ptr, u->params.len, &arena, 8);
    if (!u->params.ptr || igw_decode_MediaOfferParams(&j, &p) != 0) { /* the edge decoded it already */
        igw_arena_free(&arena);
        *reason = "params: not a media offer";
        return IGW_ERR_PARAMETER;
    }
    int cls = offer_answer(e, l, &p, reason, data, data_len);
    igw_arena_free(&arena);
    return cls;
}

static int offer_answer(igw_engine *e, live_leg *l, const igw_MediaOfferParams *pp, const char **reason,
                        const char **data, size_t *data_len)
{
    const igw_MediaOfferParams p = *pp;
    if ((uint64_t)p.mediaRevision != l->revision) {
        *reason = "stale mediaRevision";
        return IGW_ERR_CONFLICT;
    }
    if (l->phase != LEG_INVITED) {
        *reason = "the leg already has the camera's offer";
        return IGW_ERR_CONFLICT;
    }
    if (!e->media) {
        *reason = "no media core on this node";
        return IGW_ERR_UNAVAILABLE;
    }
    char *sdp = strndup(p.webrtc.sdp.ptr, p.webrtc.sdp.len), *answer = malloc(ANSWER_MAX);
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
                                    .iceMode = strcmp(ice_mode(answer), "lite") ? IGW_IceMode_full : IGW_IceMode_lite,
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

int live_leg_uplink(igw_engine *e, const igw_engine_uplink *u, const char **reason, const char **data,
                    size_t *data_len, live_leg **ready)
{
    *ready = NULL;
    igw_str m = u->method;
#define IS(s) (m.len == sizeof(s) - 1 && memcmp(m.ptr, s, m.len) == 0)
    /* The camera's answers to our downlinks need nothing of the leg: a
     * byeReply comes after the leg is gone. Stored, acknowledged. */
    if (IS("byeReply") || IS("trackControlReply"))
        return IGW_ERR_OK;
    bool pb_reply = IS("playbackControlReply");
    char id[LIVE_ID_MAX + 1];
    snprintf(id, sizeof id, "%.*s", (int)u->session_id.len, u->session_id.ptr);
    live_leg *l = live_leg_find(e, id);
    /* Another device's leg is as unknown as no leg. */
    if (!l || strcmp(l->product_id, u->product_id) || strcmp(l->device_name, u->device_name)) {
        if (pb_reply)
            return IGW_ERR_OK; /* the leg ended meanwhile: nothing waits for it */
        *reason = "unknown session";
        return IGW_ERR_NOT_FOUND;
    }
    if (pb_reply) {
        live_playback_reply(e, l, u);
        return IGW_ERR_OK;
    }
    if (IS("mediaOffer")) {
        int cls = on_offer(e, l, u, reason, data, data_len);
        if (cls == IGW_ERR_OK)
            *ready = l; /* the caller takes *data first: the viewers' answers reuse e->jw */
        return cls;
    }
    if (IS("bye")) {
        igw_json j;
        igw_ByeParams p;
        igw_arena arena;
        igw_arena_init(&arena, PARAMS_ARENA);
        igw_json_init(&j, u->params.ptr, u->params.len, &arena, 8);
        const char *why = "cameraGone";
        if (u->params.ptr && igw_decode_ByeParams(&j, &p) == 0) {
            if (p.reason == IGW_ByeReason_cameraDeclined || p.reason == IGW_ByeReason_cameraBusy)
                why = "cameraDeclined";
            else if (l->playback && (p.reason == IGW_ByeReason_recordingEnded ||
                                     p.reason == IGW_ByeReason_recordingUnavailable ||
                                     p.reason == IGW_ByeReason_recordingChanged))
                why = igw_ByeReason_names[p.reason].ptr; /* the camera's player: the recording's own reason */
        }
        igw_arena_free(&arena);
        leg_end(e, l, why, false, IGW_ByeReason_cameraShutdown);
        return IGW_ERR_OK;
    }
    /* mediaState: the camera's view, recorded in device_messages; the
     * core's facts decide. */
#undef IS
    return IGW_ERR_OK;
}

void live_leg_media(igw_engine *e, live_leg *l, const igw_media_event *ev)
{
    if (ev->revision != l->revision)
        return; /* an older source's */
    switch (ev->kind) {
    case IGW_MEDIA_EV_DTLS_CONNECTED:
        if (l->phase < LEG_CONNECTED)
            l->phase = LEG_CONNECTED;
        live_sessions_check(e, l); /* a playback is ready without media */
        break;
    case IGW_MEDIA_EV_FIRST_PACKET:
        l->phase = LEG_FLOWING;
        live_sessions_check(e, l);
        break;
    case IGW_MEDIA_EV_ICE_FAILED:
    case IGW_MEDIA_EV_DTLS_FAILED:
    case IGW_MEDIA_EV_CLOSED:
        leg_end(e, l, "cameraGone", ev->kind != IGW_MEDIA_EV_CLOSED, IGW_ByeReason_cameraError);
        break;
    case IGW_MEDIA_EV_ICE_CONNECTED:
    case IGW_MEDIA_EV_KEYFRAME:
        break;
    }
}

void live_legs_tick(igw_engine *e, int64_t now_ms)
{
    for (live_leg *l = e->legs, *n; l; l = n) {
        n = l->next;
        if (l->phase == LEG_INVITED && now_ms >= l->deadline_ms)
            leg_end(e, l, "inviteTimeout", true, IGW_ByeReason_timeout);
        else if (l->phase == LEG_INVITED && now_ms >= l->resend_ms && send_invite(e, l) != 0)
            igw_log(IGW_LOG_WARN, NULL, "session: leg %s: invite not published again (broker unreachable)", l->id);
    }
}

void live_legs_offline(igw_engine *e, const char *pid, const char *dn)
{
    for (live_leg *l = e->legs, *n; l; l = n) {
        n = l->next;
        if (!strcmp(l->product_id, pid) && !strcmp(l->device_name, dn))
            leg_end(e, l, "cameraOffline", false, IGW_ByeReason_shutdown);
    }
}

void live_free_all(igw_engine *e)
{
    while (e->sessions) {
        live_session *s = e->sessions;
        e->sessions = s->next;
        free(s->offer);
        free(s);
    }
    e->nsessions = 0;
    while (e->legs) {
        live_leg *l = e->legs;
        e->legs = l->next;
        free(l);
    }
}
