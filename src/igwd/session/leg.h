/* leg.h - camera legs: one camera's upstream into the media core (live.h's
 * live_leg) and the device media protocol it speaks (docs/sessions.md, "The
 * device media protocol"): the invite, the camera's offer and its answer,
 * bye, and the core's facts about the source. A leg knows its viewers only
 * as a list; what happens to them is session.c's. On the engine's loop. */
#ifndef IGW_SESSION_LEG_H
#define IGW_SESSION_LEG_H

#include "protocol.h"
#include "session/live.h"

live_leg *live_leg_find(igw_engine *e, const char *id);

/* The camera's shared leg (of a purpose with `leg shared`), or NULL. */
live_leg *live_leg_of_camera(igw_engine *e, const char *product_id, const char *device_name, const char *camera_id);

/* A new leg for (product, device, camera) asking the tracks of (def,
 * guards), ldata (owned by the leg from here on, even on failure) what the
 * purpose adds to the invite; the camera is invited. id: the leg's id
 * (a door-bell's is its ring's), or NULL for a new one. NULL with *reason. */
live_leg *live_leg_open(igw_engine *e, const char *id, const char *product_id, const char *device_name,
                        const char *camera_id, const igw_purpose *def, uint32_t guards, void *ldata,
                        const char **reason);

/* The invite again (same token) while the camera has not offered. 0, or -1. */
int live_leg_invite(igw_engine *e, live_leg *l);

/* Publishes e->jw (a message of the down row d, encoded by the caller) to
 * the leg's camera. 0, or -1 (no broker, encoding failed). */
int live_leg_publish(igw_engine *e, const live_leg *l, const igw_proto_down *d);

/* Says bye to the camera. */
void live_leg_bye(igw_engine *e, live_leg *l, igw_ByeReason reason);

/* Says bye for leg `id` to camera (pid, dn), a leg this process may not
 * hold (another node's that died). 0, or -1 (no broker, out of memory). */
int live_leg_bye_to(igw_engine *e, const char *id, const char *pid, const char *dn, igw_ByeReason reason);

/* The camera's mediaOffer: the core's answer as the reply's data (in e->jw,
 * *data and *data_len set) and the leg OFFERED; or the class with *reason
 * (the leg stays invited: the camera may offer again). */
int live_leg_offer(igw_engine *e, live_leg *l, igw_str params, const char **reason, const char **data,
                   size_t *data_len);

/* What a source's media event did to the leg. */
typedef enum live_leg_fact {
    LIVE_LEG_SAME,    /* nothing that moves a session */
    LIVE_LEG_CHANGED, /* connected or flowing: its viewers may be negotiated now */
    LIVE_LEG_FAILED,  /* the source failed (its bye says cameraError) */
    LIVE_LEG_CLOSED,  /* the source closed */
} live_leg_fact;
live_leg_fact live_leg_media(live_leg *l, const igw_media_event *ev);

/* A viewer joins or leaves the leg's list; detach says whether any is left. */
void live_leg_attach(live_leg *leg, live_session *s);
bool live_leg_detach(live_leg *leg, live_session *s);

/* Unlinks and frees the leg (its source closed in the core unless `closed`). */
void live_leg_free(igw_engine *e, live_leg *leg, bool closed);

#endif
