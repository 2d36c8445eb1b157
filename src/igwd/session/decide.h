/* decide.h - the session engine's decisions as pure functions: what a
 * purpose's row (generated/igwd/purposes.h) asks of the camera, what a
 * preflight refuses, when a session is negotiated, whether a viewer fits a
 * shared leg. No I/O, no engine state: the engine's files call them, and
 * tests/igwd/decide_test.c checks them without services. Any thread. */
#ifndef IGW_SESSION_DECIDE_H
#define IGW_SESSION_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "igwd/purposes.h"
#include "sm.h"

/* A refusal: the error class, a reason safe to send and the JSON Pointer
 * of the request field it is about ("" when none). Strings are static or
 * point into the refusal's own buffer. */
typedef struct live_refusal {
    int cls; /* igw_err */
    const char *reason, *path;
    char buf[160], path_buf[96];
} live_refusal;

/* The track `id` of a session of purpose `def` whose guards were `guards`,
 * or NULL when it has none. */
const igw_purpose_track *live_track_find(const igw_purpose *def, uint32_t guards, igw_str id);

/* The track a viewer may pause, resume or subscribe to: one the camera
 * sends (sendonly) in its set. NULL: none of that id. */
const igw_purpose_track *live_track_viewable(const igw_purpose *def, uint32_t guards, igw_str id);

/* A shared leg opened for (leg_def, leg_guards) serves a viewer wanting
 * (def, guards) only when it carries every track the viewer needs (asking
 * the camera again would replace the source of the leg's viewers). NULL:
 * it fits; else the first missing track. */
const igw_purpose_track *live_leg_missing(const igw_purpose *leg_def, uint32_t leg_guards, const igw_purpose *def,
                                          uint32_t guards);

/* The open's refusal when a shared leg lacks a track it needs: false
 * when the leg fits. */
bool live_leg_refuses(const igw_purpose *leg_def, uint32_t leg_guards, const igw_purpose *def, uint32_t guards,
                      live_refusal *r);

/* The guards of a viewer of purpose `def` subscribed to a leg opened for
 * (leg_def, leg_guards): a guard holds when every track of `def` it selects
 * is on the leg. */
uint32_t live_viewer_guards(const igw_purpose *def, const igw_purpose *leg_def, uint32_t leg_guards);

/* What a decoded capability report needs of an arena (the edge bounds the
 * report it stores). */
#define LIVE_CAPABILITY_ARENA (64u << 10)

/* A stored capability report's params (text; NULL: none reported) decoded
 * into *cap with arena a: cap, or NULL when there is none or it cannot be
 * used (the preflights then refuse as for none). */
const igw_MediaCapability *live_capability_decode(const char *text, igw_arena *a, igw_MediaCapability *cap);

/* The preflights of (def, guards) against the camera's capability report
 * (cap NULL: none reported, or unusable): false, or true with *r filled
 * (parameter: the camera lacks it; path the guard's open param when a
 * guard selected the preflight, else cameraId). */
bool live_preflight_refuses(const igw_purpose *def, uint32_t guards, const igw_MediaCapability *cap,
                            live_refusal *r);

/* A camera's ring (media doorbell ring) against its device's capability
 * report (cap NULL: none reported, or unusable): refused when the report
 * does not list the camera (not_found) or a preflight of the door-bell's
 * row `def` fails (parameter: no door-bell, microphone or speaker). false,
 * or true with *r filled (path: the ring's params/cameraId). */
bool live_ring_refuses(const igw_purpose *def, const igw_MediaCapability *cap, igw_str camera_id, live_refusal *r);

/* What the one read of an open found, in its order of checks. */
typedef struct live_open_facts {
    bool endpoint_live, rights, camera;
} live_open_facts;

/* The open's refusal by the read's facts (endpoint, rights, camera): false
 * when they all hold. */
bool live_open_refuses(const live_open_facts *f, live_refusal *r);

/* Whether a viewer of (def, guards) may send audio: the set has a track
 * the camera plays (recvonly audio, talk's speaker). Any other viewer's
 * offer must only receive, whatever the leg it rides carries. */
bool live_may_publish(const igw_purpose *def, uint32_t guards);

/* Whether command k of (enterprise_id, user_id) names a transfer of a
 * session of (s_enterprise, s_user) on endpoint s_endpoint to the caller's
 * endpoint (interaction.control endpointControl, transferFrom the session's
 * endpoint): the one command another endpoint of the same user may send on
 * a session (session/transfer.h). */
bool live_transfer_names(const igw_Command *k, int64_t enterprise_id, int64_t user_id, int64_t s_enterprise,
                         int64_t s_user, const char *s_endpoint);

/* The reason of a viewer's offer the media core cannot use, by what its
 * purpose lets it send. A static string. */
const char *live_offer_refusal(const igw_purpose *def, uint32_t guards);

/* What the database says of a live session's holder now (session/rights.c). */
typedef struct live_holder_facts {
    bool active;  /* the user and its enterprise are active, the user still of that enterprise */
    bool owner;   /* the user owns the device, the device still of that enterprise */
    bool granted; /* the device, still of that enterprise, is granted to the user */
} live_holder_facts;

/* Whether the holder keeps a session of a purpose whose `access` is
 * IGW_PURPOSE_ACCESS_*: an active holder with one of the device rights the
 * purpose accepts (grant: the owner or a grantee). callMember adds the
 * call's own condition, which the purpose's hooks enforce on the call's
 * facts; it never stands for device rights. */
bool live_rights_hold(unsigned access, const live_holder_facts *f);

/* Live sessions on this node now, of the whole node, of the opener's
 * enterprise and of the opener (claims in flight included), and the caps
 * (0: none). */
typedef struct live_seats {
    unsigned node, enterprise, user;
} live_seats;

/* A new session's refusal when a cap is reached: capacity, with a reason
 * naming the cap and its setting. false: a seat is free. */
bool live_capacity_refuses(const live_seats *caps, const live_seats *held, live_refusal *r);

/* The facts of `established` (the session machine's `negotiated` guard). */
typedef struct live_media_facts {
    bool leg_connected; /* the camera's DTLS is up */
    bool leg_flowing;   /* its first packet arrived */
    bool viewer_dtls, viewer_flowing, app_connected;
    bool purpose_ready; /* the purpose's own condition (its `ready` hook; true without one) */
} live_media_facts;

/* Negotiated: both transports up and the application's report; with
 * `flowing`, media must flow both ways too (a live camera sends at once; a
 * player sends nothing until told to play). */
bool live_negotiated(const live_media_facts *f, bool flowing);

/* A trigger that fires in no state of machine m (publish and stop of
 * `track`): true with the machine's refusal (of its first state) in *r. */
bool live_sm_refused_everywhere(const igw_sm *m, int trigger, igw_sm_result *r);

/* The state of the `track` machine as the result's `state` says it. */
igw_str live_track_state_name(int state);

#endif
