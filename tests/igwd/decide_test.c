/* decide_test.c - the session engine's decisions without services
 * (session/decide.h on the schema's purposes table, generated/igwd/
 * purposes.c, and the generated machines): each purpose's track set and
 * preflights, the refusal reasons and paths, a viewer on a shared leg,
 * negotiated, and the machines' transitions the engine relies on. */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "machines.h"
#include "session/decide.h"

static const igw_purpose *row(igw_Purpose p)
{
    return &igw_purposes[p];
}

static bool has_track(igw_Purpose p, uint32_t guards, const char *id)
{
    return live_track_find(row(p), guards, igw_str_of(id)) != NULL;
}

/* Live view: video-1 always; the microphone only when listenAudio asked. */
static void test_live_tracks(void)
{
    CHECK(has_track(IGW_Purpose_ipcLiveView, 0, "video-1"));
    CHECK(!has_track(IGW_Purpose_ipcLiveView, 0, "mic"));
    CHECK(has_track(IGW_Purpose_ipcLiveView, IGW_PURPOSE_IF_LISTENAUDIO, "mic"));
    CHECK(!has_track(IGW_Purpose_ipcLiveView, IGW_PURPOSE_IF_LISTENAUDIO, "speaker"));
    CHECK(row(IGW_Purpose_ipcLiveView)->shared_leg && row(IGW_Purpose_ipcLiveView)->has_viewers);
}

/* Talk: picture, microphone and speaker; the speaker is played, not viewed. */
static void test_talk_tracks(void)
{
    const igw_purpose *t = row(IGW_Purpose_ipcTalk);
    CHECK(has_track(IGW_Purpose_ipcTalk, 0, "mic") && has_track(IGW_Purpose_ipcTalk, 0, "speaker"));
    CHECK(live_track_viewable(t, 0, igw_str_of("mic")) != NULL);
    CHECK(live_track_viewable(t, 0, igw_str_of("video-1")) != NULL);
    CHECK(live_track_viewable(t, 0, igw_str_of("speaker")) == NULL);
    CHECK(live_track_find(t, 0, igw_str_of("speaker"))->direction == IGW_PURPOSE_RECVONLY);
    CHECK(t->access & IGW_PURPOSE_ACCESS_CALLMEMBER);
    CHECK(!(row(IGW_Purpose_ipcLiveView)->access & IGW_PURPOSE_ACCESS_CALLMEMBER));
}

/* Playback: its own leg, no viewers, the recording's sound only when it has one. */
static void test_playback_tracks(void)
{
    const igw_purpose *p = row(IGW_Purpose_recordPlayback);
    CHECK(!p->shared_leg && !p->has_viewers);
    CHECK(!has_track(IGW_Purpose_recordPlayback, 0, "audio-1"));
    CHECK(has_track(IGW_Purpose_recordPlayback, IGW_PURPOSE_IF_RECORDINGAUDIO, "audio-1"));
    CHECK(!has_track(IGW_Purpose_recordPlayback, IGW_PURPOSE_IF_RECORDINGAUDIO, "mic"));
    CHECK(p->nmachines == 1 && p->machines[0] == &igw_sm_playback);
    CHECK(p->npreflights == 0);
}

/* Track ids compare by length too: a prefix or an extension is another track. */
static void test_track_ids_exact(void)
{
    CHECK(live_track_find(row(IGW_Purpose_ipcLiveView), 0, (igw_str){"video-1x", 7}) != NULL);
    CHECK(live_track_find(row(IGW_Purpose_ipcLiveView), 0, (igw_str){"video-", 6}) == NULL);
    CHECK(live_track_find(row(IGW_Purpose_ipcLiveView), 0, igw_str_of("video-12")) == NULL);
}

static igw_MediaCapability cap(bool mic, bool speaker)
{
    return (igw_MediaCapability){.has = IGW_MediaCapability_microphone | IGW_MediaCapability_speaker,
                                 .microphone = mic, .speaker = speaker};
}

/* listenAudio on a camera without microphone: refused on listenAudio's path. */
static void test_preflight_listen(void)
{
    live_refusal r;
    igw_MediaCapability c = cap(false, true);
    CHECK(!live_preflight_refuses(row(IGW_Purpose_ipcLiveView), 0, &c, &r));
    CHECK(live_preflight_refuses(row(IGW_Purpose_ipcLiveView), IGW_PURPOSE_IF_LISTENAUDIO, &c, &r));
    CHECK(r.cls == IGW_ERR_PARAMETER);
    CHECK(strcmp(r.path, "/command/params/listenAudio") == 0, "%s", r.path);
    CHECK(strstr(r.reason, "microphone") != NULL, "%s", r.reason);
    c = cap(true, false);
    CHECK(!live_preflight_refuses(row(IGW_Purpose_ipcLiveView), IGW_PURPOSE_IF_LISTENAUDIO, &c, &r));
}

/* Talk needs both; a camera that reported nothing is refused too. */
static void test_preflight_talk(void)
{
    live_refusal r;
    igw_MediaCapability c = cap(true, false);
    CHECK(live_preflight_refuses(row(IGW_Purpose_ipcTalk), 0, &c, &r));
    CHECK(strstr(r.reason, "speaker") != NULL && strcmp(r.path, "/command/params/cameraId") == 0, "%s %s",
          r.reason, r.path);
    CHECK(live_preflight_refuses(row(IGW_Purpose_ipcTalk), 0, NULL, &r));
    CHECK(strstr(r.reason, "microphone") != NULL, "%s", r.reason);
    c = cap(true, true);
    CHECK(!live_preflight_refuses(row(IGW_Purpose_ipcTalk), 0, &c, &r));
    c.has = IGW_MediaCapability_microphone; /* speaker absent: not reported is not true */
    CHECK(live_preflight_refuses(row(IGW_Purpose_ipcTalk), 0, &c, &r));
}

/* A ring: the capability must list its camera (not_found), then the
 * door-bell's preflights (parameter: the door-bell, microphone, speaker). */
static void test_ring_refusals(void)
{
    live_refusal r = {0};
    igw_MediaCamera cam = {.has = IGW_MediaCamera__REQUIRED, .cameraId = igw_str_of("cam-1")};
    igw_MediaCapability c = cap(true, true);
    c.has |= IGW_MediaCapability_cameras;
    c.cameras = (igw_MediaCamera_list){&cam, 1};
    const igw_purpose *d = row(IGW_Purpose_doorbell);
    CHECK(live_ring_refuses(d, NULL, igw_str_of("cam-1"), &r) && r.cls == IGW_ERR_NOT_FOUND, "%s", r.reason);
    CHECK(live_ring_refuses(d, &c, igw_str_of("cam-2"), &r) && r.cls == IGW_ERR_NOT_FOUND &&
              strcmp(r.path, "/params/cameraId") == 0, "%s %s", r.reason, r.path);
    CHECK(live_ring_refuses(d, &c, igw_str_of("cam-1"), &r) && r.cls == IGW_ERR_PARAMETER &&
              strstr(r.reason, "doorbell") != NULL && strcmp(r.path, "/params/cameraId") == 0,
          "%s %s", r.reason, r.path); /* no door-bell reported: absent is not true */
    c.has |= IGW_MediaCapability_doorbell;
    c.doorbell = true;
    CHECK(!live_ring_refuses(d, &c, igw_str_of("cam-1"), &r));
    c.speaker = false;
    CHECK(live_ring_refuses(d, &c, igw_str_of("cam-1"), &r) && strstr(r.reason, "speaker") != NULL, "%s", r.reason);
}

/* The door-bell's session: ringing only from none; accept needs the first
 * accept's guard; an accept on a session past ringing is refused. */
static void test_ringing_machine(void)
{
    igw_err err = IGW_ERR_OK;
    CHECK(igw_session_next(IGW_SESSION_NONE, IGW_SESSION_ON_RING, 0, &err) == IGW_SESSION_RINGING);
    CHECK(igw_session_next(IGW_SESSION_RINGING, IGW_SESSION_ON_ACCEPT, IGW_SESSION_IF_FIRSTACCEPT, &err) ==
          IGW_SESSION_INVITED);
    err = IGW_ERR_OK;
    CHECK(igw_session_next(IGW_SESSION_RINGING, IGW_SESSION_ON_ACCEPT, 0, &err) == IGW_SESSION_RINGING);
    CHECK(err == IGW_ERR_CONFLICT);
    CHECK(igw_session_next(IGW_SESSION_RINGING, IGW_SESSION_ON_DECLINE, 0, &err) == IGW_SESSION_ENDED);
    err = IGW_ERR_OK;
    igw_sm_result m = igw_sm_fire(&igw_sm_session, IGW_SESSION_ESTABLISHED, IGW_SESSION_ON_ACCEPT,
                                  IGW_SESSION_IF_FIRSTACCEPT);
    CHECK(!m.ok && m.err == IGW_ERR_CONFLICT && m.reason && strstr(m.reason, "not ringing") != NULL);
    CHECK(igw_ring_next(IGW_RING_RINGING, IGW_RING_ON_ACCEPT, IGW_RING_IF_FIRSTACCEPT, &err) == IGW_RING_ESTABLISHED);
    err = IGW_ERR_OK;
    CHECK(igw_ring_next(IGW_RING_ESTABLISHED, IGW_RING_ON_ACCEPT, IGW_RING_IF_FIRSTACCEPT, &err) ==
          IGW_RING_ESTABLISHED);
    CHECK(err == IGW_ERR_CONFLICT); /* answered: no second winner */
}

/* The read's refusals in their order: endpoint, rights, camera. */
static void test_open_refusals(void)
{
    live_refusal r;
    live_open_facts f = {.endpoint_live = false, .rights = false, .camera = false};
    CHECK(live_open_refuses(&f, &r) && r.cls == IGW_ERR_NOT_FOUND && strcmp(r.path, "/endpointId") == 0);
    f.endpoint_live = true;
    CHECK(live_open_refuses(&f, &r) && r.cls == IGW_ERR_PERMISSION && strcmp(r.path, "/command/target") == 0);
    f.rights = true;
    CHECK(live_open_refuses(&f, &r) && r.cls == IGW_ERR_NOT_FOUND && strcmp(r.path, "/command/params/cameraId") == 0);
    f.camera = true;
    CHECK(!live_open_refuses(&f, &r));
}

/* A shared leg serves a viewer only with every track it needs. */
static void test_leg_fits(void)
{
    live_refusal r;
    const igw_purpose *live = row(IGW_Purpose_ipcLiveView), *talk = row(IGW_Purpose_ipcTalk);
    CHECK(!live_leg_refuses(live, 0, live, 0, &r));
    CHECK(live_leg_refuses(live, 0, live, IGW_PURPOSE_IF_LISTENAUDIO, &r));
    CHECK(r.cls == IGW_ERR_CONFLICT && strcmp(r.path, "/command/params/listenAudio") == 0, "%s", r.path);
    CHECK(strstr(r.reason, "mic") != NULL, "%s", r.reason);
    CHECK(live_leg_refuses(live, IGW_PURPOSE_IF_LISTENAUDIO, talk, 0, &r)); /* no speaker on it */
    CHECK(strstr(r.reason, "speaker") != NULL && strcmp(r.path, "/command/params/cameraId") == 0, "%s", r.reason);
    CHECK(!live_leg_refuses(talk, 0, live, IGW_PURPOSE_IF_LISTENAUDIO, &r)); /* a viewer of a talk leg */
    CHECK(!live_leg_refuses(talk, 0, talk, 0, &r));
}

/* A subscribe's viewer may have what the leg carries, no more. */
static void test_viewer_guards(void)
{
    const igw_purpose *live = row(IGW_Purpose_ipcLiveView), *talk = row(IGW_Purpose_ipcTalk);
    CHECK(live_viewer_guards(live, talk, 0) == IGW_PURPOSE_IF_LISTENAUDIO);
    CHECK(live_viewer_guards(live, live, 0) == 0);
    CHECK(live_viewer_guards(live, live, IGW_PURPOSE_IF_LISTENAUDIO) == IGW_PURPOSE_IF_LISTENAUDIO);
    CHECK(talk->viewers == IGW_Purpose_ipcLiveView);
}

/* Negotiated: transports and the application's report; a live camera's flow. */
static void test_negotiated(void)
{
    live_media_facts f = {.leg_connected = true, .viewer_dtls = true, .app_connected = true, .purpose_ready = true};
    CHECK(live_negotiated(&f, false));
    CHECK(!live_negotiated(&f, true));
    f.leg_flowing = f.viewer_flowing = true;
    CHECK(live_negotiated(&f, true));
    f.app_connected = false; /* never the application's say-so alone, never without it */
    CHECK(!live_negotiated(&f, true) && !live_negotiated(&f, false));
    f.app_connected = true;
    f.purpose_ready = false;
    CHECK(!live_negotiated(&f, false));
}

/* The session machine as the engine drives it. */
static void test_session_machine(void)
{
    igw_err err = IGW_ERR_OK;
    CHECK(igw_session_next(IGW_SESSION_NONE, IGW_SESSION_ON_OPEN, 0, &err) == IGW_SESSION_INVITED);
    CHECK(igw_session_next(IGW_SESSION_INVITED, IGW_SESSION_ON_ESTABLISH, 0, &err) == IGW_SESSION_INVITED);
    CHECK(igw_session_next(IGW_SESSION_INVITED, IGW_SESSION_ON_ESTABLISH, IGW_SESSION_IF_NEGOTIATED, &err) ==
          IGW_SESSION_ESTABLISHED);
    CHECK(igw_session_next(IGW_SESSION_ESTABLISHED, IGW_SESSION_ON_FAIL, 0, &err) == IGW_SESSION_ENDED);
    CHECK(igw_session_next(IGW_SESSION_INVITED, IGW_SESSION_ON_FAIL, 0, &err) == IGW_SESSION_ENDED);
    err = IGW_ERR_OK;
    CHECK(igw_session_next(IGW_SESSION_ENDED, IGW_SESSION_ON_FAIL, 0, &err) == IGW_SESSION_ENDED);
    CHECK(err == IGW_ERR_CONFLICT); /* terminal: never revived */
    CHECK(strcmp(igw_sm_session.states[IGW_SESSION_ENDED], "ended") == 0);
}

/* The track machine (a camera track): publish and stop are the uplink's,
 * refused everywhere; pause needs a subscription. */
static void test_track_machine(void)
{
    igw_sm_result r = igw_sm_fire(&igw_sm_track, IGW_TRACK_ACTIVE, IGW_TRACK_ON_PUBLISH, 0);
    CHECK(!r.ok && r.err == IGW_ERR_PARAMETER);
    r = igw_sm_fire(&igw_sm_track, IGW_TRACK_STOPPED, IGW_TRACK_ON_PAUSE, 0);
    CHECK(!r.ok && r.err == IGW_ERR_CONFLICT && r.reason && strstr(r.reason, "subscribe first"));
    CHECK(live_sm_refused_everywhere(&igw_sm_track, IGW_TRACK_ON_STOP, &r) && r.err == IGW_ERR_PARAMETER);
    CHECK(r.reason && strstr(r.reason, "uplink"), "%s", r.reason ? r.reason : "");
    CHECK(!live_sm_refused_everywhere(&igw_sm_track, IGW_TRACK_ON_RESUME, &r)); /* from paused */
    CHECK(!live_sm_refused_everywhere(&igw_sm_track, IGW_TRACK_ON_SUBSCRIBE, &r)); /* from stopped, same track */
    CHECK(strcmp(live_track_state_name(IGW_TRACK_PAUSED).ptr, "paused") == 0);
    CHECK(strcmp(live_track_state_name(IGW_TRACK_ACTIVE).ptr, "active") == 0);
    CHECK(strcmp(live_track_state_name(-1).ptr, "stopped") == 0);
}

/* The uplink machine (the application's own track): stop and publish,
 * each idempotent; the subscription operations refused everywhere. */
static void test_uplink_machine(void)
{
    igw_sm_result r = igw_sm_fire(&igw_sm_uplink, IGW_UPLINK_NONE, IGW_UPLINK_ON_START, 0);
    CHECK(r.ok && r.next == IGW_UPLINK_ACTIVE);
    r = igw_sm_fire(&igw_sm_uplink, IGW_UPLINK_ACTIVE, IGW_UPLINK_ON_STOP, 0);
    CHECK(r.ok && r.next == IGW_UPLINK_STOPPED);
    r = igw_sm_fire(&igw_sm_uplink, IGW_UPLINK_STOPPED, IGW_UPLINK_ON_STOP, 0);
    CHECK(r.ok && r.next == IGW_UPLINK_STOPPED);
    r = igw_sm_fire(&igw_sm_uplink, IGW_UPLINK_STOPPED, IGW_UPLINK_ON_PUBLISH, 0);
    CHECK(r.ok && r.next == IGW_UPLINK_ACTIVE);
    r = igw_sm_fire(&igw_sm_uplink, IGW_UPLINK_ACTIVE, IGW_UPLINK_ON_PUBLISH, 0);
    CHECK(r.ok && r.next == IGW_UPLINK_ACTIVE);
    r = igw_sm_fire(&igw_sm_uplink, IGW_UPLINK_NONE, IGW_UPLINK_ON_STOP, 0);
    CHECK(!r.ok, "no uplink before the answer");
    CHECK(live_sm_refused_everywhere(&igw_sm_uplink, IGW_UPLINK_ON_PAUSE, &r) && r.err == IGW_ERR_PARAMETER);
    CHECK(live_sm_refused_everywhere(&igw_sm_uplink, IGW_UPLINK_ON_SUBSCRIBE, &r) && r.err == IGW_ERR_PARAMETER);
    CHECK(r.reason && strstr(r.reason, "camera tracks"), "%s", r.reason ? r.reason : "");
    CHECK(!live_sm_refused_everywhere(&igw_sm_uplink, IGW_UPLINK_ON_STOP, &r));
}

/* The playback machine: nothing plays before ready; pause keeps paused. */
static void test_playback_machine(void)
{
    igw_sm_result r = igw_sm_fire(&igw_sm_playback, IGW_PLAYBACK_LOADED, IGW_PLAYBACK_ON_PLAY, 0);
    CHECK(!r.ok && r.err == IGW_ERR_CONFLICT);
    CHECK(igw_playback_next(IGW_PLAYBACK_NONE, IGW_PLAYBACK_ON_LOAD, 0, NULL) == IGW_PLAYBACK_LOADED);
    CHECK(igw_playback_next(IGW_PLAYBACK_LOADED, IGW_PLAYBACK_ON_READY, 0, NULL) == IGW_PLAYBACK_READY);
    CHECK(igw_playback_next(IGW_PLAYBACK_READY, IGW_PLAYBACK_ON_PLAY, 0, NULL) == IGW_PLAYBACK_PLAYING);
    CHECK(igw_playback_next(IGW_PLAYBACK_PAUSED, IGW_PLAYBACK_ON_PAUSE, 0, NULL) == IGW_PLAYBACK_PAUSED);
    CHECK(igw_playback_next(IGW_PLAYBACK_PLAYING, IGW_PLAYBACK_ON_SEEK, 0, NULL) == IGW_PLAYBACK_PLAYING);
}

/* Only a set with a track the camera plays lets the viewer send audio:
 * talk's; a live view never, whatever leg it rides. */
static void test_may_publish(void)
{
    CHECK(live_may_publish(row(IGW_Purpose_ipcTalk), 0));
    CHECK(!live_may_publish(row(IGW_Purpose_ipcLiveView), 0));
    CHECK(!live_may_publish(row(IGW_Purpose_ipcLiveView), IGW_PURPOSE_IF_LISTENAUDIO));
    CHECK(!live_may_publish(row(IGW_Purpose_recordPlayback), IGW_PURPOSE_IF_RECORDINGAUDIO));
    CHECK(strstr(live_offer_refusal(row(IGW_Purpose_ipcLiveView), 0), "only receives") != NULL);
    CHECK(strstr(live_offer_refusal(row(IGW_Purpose_ipcTalk), 0), "Opus sendrecv") != NULL);
}

/* Rights: an inactive holder loses everything; a grantee keeps a purpose
 * that accepts grants, the owner one that accepts owners. */
static void test_rights_hold(void)
{
    unsigned both = IGW_PURPOSE_ACCESS_OWNER | IGW_PURPOSE_ACCESS_GRANT;
    CHECK(live_rights_hold(both, &(live_holder_facts){.active = true, .owner = true}));
    CHECK(live_rights_hold(both, &(live_holder_facts){.active = true, .granted = true}));
    CHECK(!live_rights_hold(both, &(live_holder_facts){.active = true}));
    CHECK(!live_rights_hold(both, &(live_holder_facts){.active = false, .owner = true, .granted = true}));
    CHECK(!live_rights_hold(IGW_PURPOSE_ACCESS_OWNER, &(live_holder_facts){.active = true, .granted = true}));
    CHECK(live_rights_hold(IGW_PURPOSE_ACCESS_GRANT, &(live_holder_facts){.active = true, .owner = true}));
    CHECK(!live_rights_hold(IGW_PURPOSE_ACCESS_CALLMEMBER, &(live_holder_facts){.active = true, .owner = true}));
    for (int p = 0; p < IGW_Purpose__COUNT; p++) /* every purpose today: owner and grantee alike */
        CHECK(live_rights_hold(igw_purposes[p].access, &(live_holder_facts){.active = true, .granted = true}), "%s",
              igw_Purpose_names[p].ptr);
}

/* Caps: the first one reached refuses, naming its setting; 0 is none. */
static void test_capacity(void)
{
    live_refusal r;
    live_seats caps = {.node = 16, .enterprise = 8, .user = 4};
    CHECK(!live_capacity_refuses(&caps, &(live_seats){15, 7, 3}, &r));
    CHECK(live_capacity_refuses(&caps, &(live_seats){16, 0, 0}, &r) && r.cls == IGW_ERR_CAPACITY &&
          strstr(r.reason, "max_sessions 16") && !strstr(r.reason, "per_"), "%s", r.reason);
    CHECK(live_capacity_refuses(&caps, &(live_seats){9, 8, 1}, &r) && strstr(r.reason, "max_sessions_per_enterprise 8"),
          "%s", r.reason);
    CHECK(live_capacity_refuses(&caps, &(live_seats){9, 5, 4}, &r) && strstr(r.reason, "max_sessions_per_user 4") &&
          *r.path == '\0', "%s", r.reason);
    CHECK(!live_capacity_refuses(&(live_seats){0, 0, 0}, &(live_seats){100000, 100000, 100000}, &r));
}

/* Every purpose of the enum is described, and its hooks are linked. */
static void test_every_purpose(void)
{
    for (int p = 0; p < IGW_Purpose__COUNT; p++) {
        CHECK(igw_purposes[p].hooks != NULL, "%s", igw_Purpose_names[p].ptr);
        CHECK(igw_purposes[p].ntracks >= 1 && igw_purposes[p].tracks[0].kind == IGW_TrackKind_video);
    }
}

int main(void)
{
    static const check_case cases[] = {
        CHECK_CASE(test_live_tracks),     CHECK_CASE(test_talk_tracks),     CHECK_CASE(test_playback_tracks),
        CHECK_CASE(test_track_ids_exact), CHECK_CASE(test_preflight_listen), CHECK_CASE(test_preflight_talk),
        CHECK_CASE(test_open_refusals),   CHECK_CASE(test_leg_fits),        CHECK_CASE(test_viewer_guards),
        CHECK_CASE(test_negotiated),      CHECK_CASE(test_session_machine), CHECK_CASE(test_track_machine),
        CHECK_CASE(test_uplink_machine),
        CHECK_CASE(test_playback_machine), CHECK_CASE(test_every_purpose),
        CHECK_CASE(test_may_publish),     CHECK_CASE(test_rights_hold),     CHECK_CASE(test_capacity),
        CHECK_CASE(test_ring_refusals),   CHECK_CASE(test_ringing_machine),
    };
    CHECK_RUN_ALL(cases);
    return check_summary("decide_test");
}
