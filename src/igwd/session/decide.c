/* decide.c - see decide.h. */
#include "session/decide.h"

#include <stdio.h>
#include <string.h>

#include "decode.h"
#include "machines.h"
#include "paths.h"

static bool held(uint32_t when, uint32_t guards)
{
    return (when & guards) == when;
}

/* The JSON Pointer of what asked for a track or preflight: the open param a
 * guard is named after (listenAudio), else the camera. */
static const char *guard_path(uint32_t when, live_refusal *r)
{
    for (int g = 0; g < IGW_PURPOSE__GUARDS; g++)
        if (when & (1u << g)) {
            snprintf(r->path_buf, sizeof r->path_buf, IGW_PATH_command_params "/%s", igw_purpose_guards[g]);
            return r->path_buf;
        }
    return IGW_PATH_command_params_cameraId;
}

const igw_purpose_track *live_track_find(const igw_purpose *def, uint32_t guards, igw_str id)
{
    for (size_t i = 0; def && i < def->ntracks; i++) {
        const igw_purpose_track *t = &def->tracks[i];
        if (held(t->when, guards) && igw_str_eq(id, t->id.ptr, t->id.len))
            return t;
    }
    return NULL;
}

const igw_purpose_track *live_track_viewable(const igw_purpose *def, uint32_t guards, igw_str id)
{
    const igw_purpose_track *t = live_track_find(def, guards, id);
    return t && t->direction == IGW_PURPOSE_SENDONLY ? t : NULL;
}

const igw_purpose_track *live_leg_missing(const igw_purpose *leg_def, uint32_t leg_guards, const igw_purpose *def,
                                          uint32_t guards)
{
    for (size_t i = 0; i < def->ntracks; i++) {
        const igw_purpose_track *t = &def->tracks[i];
        const igw_purpose_track *on = held(t->when, guards) ? live_track_find(leg_def, leg_guards, t->id) : t;
        if (!on || on->kind != t->kind || on->direction != t->direction)
            return t;
    }
    return NULL;
}

bool live_leg_refuses(const igw_purpose *leg_def, uint32_t leg_guards, const igw_purpose *def, uint32_t guards,
                      live_refusal *r)
{
    const igw_purpose_track *t = live_leg_missing(leg_def, leg_guards, def, guards);
    if (!t)
        return false;
    /* Asking the camera again would replace the source under its viewers
     * (docs/decisions.md). */
    r->cls = IGW_ERR_CONFLICT;
    snprintf(r->buf, sizeof r->buf, "the camera is being viewed without its %.*s track; open when its viewers have left",
             (int)t->id.len, t->id.ptr);
    r->reason = r->buf;
    r->path = guard_path(t->when, r);
    return true;
}

uint32_t live_viewer_guards(const igw_purpose *def, const igw_purpose *leg_def, uint32_t leg_guards)
{
    uint32_t all = 0, missing = 0;
    for (size_t i = 0; i < def->ntracks; i++) {
        const igw_purpose_track *t = &def->tracks[i];
        all |= t->when;
        if (t->when && !live_track_find(leg_def, leg_guards, t->id))
            missing |= t->when;
    }
    return all & ~missing;
}

const igw_MediaCapability *live_capability_decode(const char *text, igw_arena *a, igw_MediaCapability *cap)
{
    if (!text)
        return NULL;
    igw_json j;
    igw_json_init(&j, text, strlen(text), a, 8);
    return igw_decode_MediaCapability(&j, cap) == 0 ? cap : NULL;
}

bool live_preflight_refuses(const igw_purpose *def, uint32_t guards, const igw_MediaCapability *cap,
                            live_refusal *r)
{
    for (size_t i = 0; i < def->npreflights; i++) {
        const igw_purpose_preflight *p = &def->preflights[i];
        if (!held(p->when, guards))
            continue;
        if (cap && (cap->has & p->has) && *(const bool *)((const char *)cap + p->offset))
            continue;
        r->cls = IGW_ERR_PARAMETER;
        snprintf(r->buf, sizeof r->buf, "the camera has no %.*s (its capability says so, or it reported none)",
                 (int)p->field.len, p->field.ptr);
        r->reason = r->buf;
        r->path = guard_path(p->when, r);
        return true;
    }
    return false;
}

bool live_ring_refuses(const igw_purpose *def, const igw_MediaCapability *cap, igw_str camera_id, live_refusal *r)
{
    bool listed = false;
    for (uint32_t i = 0; cap && i < cap->cameras.n && !listed; i++)
        listed = igw_str_eq(cap->cameras.v[i].cameraId, camera_id.ptr, camera_id.len);
    if (!listed) {
        *r = (live_refusal){.cls = IGW_ERR_NOT_FOUND,
                            .reason = cap ? "the capability report lists no such camera"
                                          : "the device has reported no media capability",
                            .path = "/params/cameraId"};
        return true;
    }
    if (!live_preflight_refuses(def, 0, cap, r))
        return false;
    r->path = "/params/cameraId"; /* the ring's, not an open's */
    return true;
}

bool live_open_refuses(const live_open_facts *f, live_refusal *r)
{
    if (!f->endpoint_live)
        *r = (live_refusal){.cls = IGW_ERR_NOT_FOUND, .reason = "unknown or expired endpoint", .path = IGW_PATH_endpointId};
    else if (!f->rights)
        *r = (live_refusal){.cls = IGW_ERR_PERMISSION, .reason = "no rights on the target device",
                            .path = IGW_PATH_command_target};
    else if (!f->camera)
        *r = (live_refusal){.cls = IGW_ERR_NOT_FOUND, .reason = "unknown camera of the target device",
                            .path = IGW_PATH_command_params_cameraId};
    else
        return false;
    return true;
}

bool live_may_publish(const igw_purpose *def, uint32_t guards)
{
    if (def->side) /* the user's microphone, to the session's processors */
        return true;
    for (size_t i = 0; i < def->ntracks; i++) {
        const igw_purpose_track *t = &def->tracks[i];
        if (held(t->when, guards) && t->kind == IGW_TrackKind_audio && t->direction == IGW_PURPOSE_RECVONLY)
            return true;
    }
    return false;
}

const char *live_offer_refusal(const igw_purpose *def, uint32_t guards)
{
    return live_may_publish(def, guards) ? "the offer cannot be used (H264 recvonly and Opus sendrecv expected)"
                                         : "the offer cannot be used: this session only receives (recvonly H264/Opus "
                                           "expected)";
}

bool live_rights_hold(unsigned access, const live_holder_facts *f)
{
    if (!f->active)
        return false;
    if ((access & IGW_PURPOSE_ACCESS_OWNER) && f->owner)
        return true;
    return (access & IGW_PURPOSE_ACCESS_GRANT) && (f->owner || f->granted);
}

bool live_capacity_refuses(const live_seats *caps, const live_seats *held, live_refusal *r)
{
    const char *who, *setting;
    unsigned cap;
    if (caps->node && held->node >= caps->node)
        who = "this node holds", setting = "max_sessions", cap = caps->node;
    else if (caps->enterprise && held->enterprise >= caps->enterprise)
        who = "the enterprise holds", setting = "max_sessions_per_enterprise", cap = caps->enterprise;
    else if (caps->user && held->user >= caps->user)
        who = "the user holds", setting = "max_sessions_per_user", cap = caps->user;
    else
        return false;
    snprintf(r->buf, sizeof r->buf, "%s as many sessions on this node as it may (%s %u)", who, setting, cap);
    r->cls = IGW_ERR_CAPACITY; /* not a compound literal: it would clear buf */
    r->reason = r->buf;
    r->path = "";
    return true;
}

bool live_negotiated(const live_media_facts *f, bool flowing)
{
    bool transports = f->leg_connected && f->viewer_dtls && f->app_connected && f->purpose_ready;
    return transports && (!flowing || (f->leg_flowing && f->viewer_flowing));
}

bool live_sm_refused_everywhere(const igw_sm *m, int trigger, igw_sm_result *r)
{
    for (int st = m->nstates - 1; st >= 1; st--) { /* [0] is none, before creation */
        igw_sm_result x = igw_sm_fire(m, st, trigger, UINT32_MAX);
        if (x.ok)
            return false;
        *r = x;
    }
    return true;
}

bool live_transfer_names(const igw_Command *k, int64_t enterprise_id, int64_t user_id, int64_t s_enterprise,
                         int64_t s_user, const char *s_endpoint)
{
    if (k->method != IGW_CommandMethod_interaction_control)
        return false;
    const igw_ControlParams *p = &k->params.interaction_control;
    return p->operation == IGW_ControlOperation_endpointControl && (p->has & IGW_ControlParams_args) &&
           s_enterprise == enterprise_id && s_user == user_id &&
           igw_str_eq(p->args.endpointControl.transferFrom, s_endpoint, strlen(s_endpoint));
}

igw_str live_track_state_name(int state)
{
    return igw_str_of(state >= 0 && state < igw_sm_track.nstates ? igw_sm_track.states[state] : "stopped");
}
