/* vision.h - vision sources: the sessions of a purpose whose row says
 * `vision` (aiVision, docs/ai.md). Their camera video is what an AI may
 * look at, and only under a vision consent of the session's user
 * (consent/ledger.h). The engine, as the session's owner:
 *
 *   - keeps the session's source row (vision_sources) true: written when
 *     the session is established and at each new media generation (owner
 *     node and epoch, the application's connection epoch, the model
 *     resource, the deadline, the selection {cameraId, trackId,
 *     capabilityRevision}, mediaRevision), marked not live when it ends;
 *   - answers the live-owner authority a consent's creation asks for
 *     (igw_engine_vision_authority): from the session as the owner holds
 *     it, valid IGW_VISION_AUTHORITY_MS;
 *   - listens for consent changes (NOTIFY IGW_VISION_CHANNEL, payload the
 *     source session's id, sent by the ledger's writes in their
 *     transaction) and gates the camera track on them: the viewer's video
 *     starts paused (machine track, startVision) and is resumed only
 *     while a granted, unexpired consent of this media generation covers
 *     it and the camera's media flows; paused again at once when none
 *     does (revoked, expired, another generation);
 *   - ends the session at its deadline (ai_session_max_ms after the
 *     open; reason LIVE_VISION_DEADLINE).
 *
 * Everything below runs on the engine's loop, except
 * igw_engine_vision_authority (any thread). */
#ifndef IGW_SESSION_VISION_H
#define IGW_SESSION_VISION_H

#include <stdbool.h>
#include <stdint.h>

#include "session/live.h"
#include "session/node.h"
#include "session/types.h"

/* How long a live-owner authority is good for, at most (spec: the short
 * authority window of a consent's creation and of each frame take). */
#define IGW_VISION_AUTHORITY_MS 2000
/* The ledger's writes notify it (payload: the source session's id). */
#define IGW_VISION_CHANNEL "igw_vision"
/* The consent state the engine's SQL names (vision.c, purposes/ai.c): a
 * state of igw_sm_consent, proven by live_vision_listen at start. */
#define LIVE_CONSENT_GRANTED "granted"
/* The reason of a session ended at its deadline. */
#define LIVE_VISION_DEADLINE "deadline"

/* ---- the live-owner authority (the seam a second node will call) ---- */

typedef struct igw_vision_ask {
    int64_t enterprise_id, user_id;   /* the caller: only its own session answers */
    const char *session_id, *camera_id, *track_id;
    int64_t media_revision;           /* the generation the caller means */
} igw_vision_ask;

typedef enum igw_vision_status {
    IGW_VISION_OK,
    IGW_VISION_UNKNOWN,      /* no live session of the caller with that id on this owner */
    IGW_VISION_NOT_VISION,   /* its purpose has no vision source (an audio-only or viewing session) */
    IGW_VISION_NOT_LIVE,     /* not established, its connection or the camera's media not up */
    IGW_VISION_SELECTION,    /* cameraId or trackId is not the platform's selection */
    IGW_VISION_GENERATION,   /* mediaRevision is not the session's current one */
    IGW_VISION_CAPABILITY,   /* the camera's capability no longer lists the selected camera with H264 */
    IGW_VISION_PRIVACY,      /* the device reports privacy on */
    IGW_VISION_FAILED,       /* the owner could not tell (its reads failed): never a success */
} igw_vision_status;

/* The authority: what the owner vouches for until expires_ms. */
typedef struct igw_vision_authority {
    igw_vision_status status;
    char session_id[LIVE_ID_MAX + 1];
    char owner_node[IGW_NODE_ID_MAX + 1];
    int64_t owner_epoch, connection_epoch, deadline_ms, capability_revision, media_revision;
    char model_resource[LIVE_ID_MAX + 1];
    char camera_id[LIVE_ID_MAX + 1], track_id[LIVE_ID_MAX + 1];
    int64_t issued_ms, expires_ms; /* wall clock, Unix ms */
} igw_vision_authority;

typedef void (*igw_vision_cb)(void *arg, const igw_vision_authority *a);

/* Asks the session's owner (this node's engine) for the authority of q
 * (strings copied). cb(arg, authority) runs once on the caller's thread
 * through back. 0, or -1 (stopping, out of memory): cb never runs. Any
 * thread. */
int igw_engine_vision_authority(igw_engine *e, const igw_vision_ask *q, const igw_engine_back *back,
                                igw_vision_cb cb, void *arg);

/* ---- the owner's side (the engine's loop) ---- */

/* The vision state of a new session whose purpose says `vision`: its
 * deadline from now and its model resource. NULL when out of memory. */
live_vision *live_vision_new(igw_engine *e);

/* The application's peer connected (a new DTLS association). */
void live_vision_connected(live_session *s);

/* Established, or established again on a new media generation: the source
 * row written (the selection made at the first), and the track gated on
 * the consents of this generation. */
void live_vision_established(igw_engine *e, live_session *s);

/* The camera's media started flowing on the session's leg: the gate again. */
void live_vision_flowing(igw_engine *e, live_session *s);

/* The session ended: its source row no longer live. */
void live_vision_ended(igw_engine *e, live_session *s);

/* Whether the owner may share the source now: a consent of this generation
 * covers it, its row is live, the session is established on a connected
 * peer and the camera's media flows (a frame take re-reads this). */
bool live_vision_sharing(const live_session *s);

/* The count of consent notifications of the session so far: a frame
 * ticket issued under one is void once it moved. */
uint64_t live_vision_consent_gen(const live_session *s);

/* The session's deadline (wall clock, Unix ms); 0 without vision. */
int64_t live_vision_deadline_ms(const live_session *s);

/* Whether the session's deadline passed (wall clock now_ms). */
bool live_vision_overdue(const live_session *s, int64_t now_ms);

/* The consents' expiries (every tick). */
void live_vision_tick(igw_engine *e, int64_t now_ms);

/* Listens on the engine's database (right after igw_db_create). 0, or -1. */
int live_vision_listen(igw_engine *e);

#endif
