/* ledger.h - the vision-consent ledger (area C, docs/ai.md): the consents
 * a user signs for an AI to look through a camera, read and revoked by that
 * user only. Every call names the authenticated caller (enterprise, user)
 * and reaches only that caller's rows: another user's consent, another
 * enterprise's and an unknown id read the same (not found). get and revoke
 * need no Signaling, no live owner and no model: they read and write the
 * ledger alone.
 *
 * Calls run on the caller's loop (its database connection); each queues
 * one statement and calls back once on that loop. Strings are copied at
 * the call; what a result points to lives during the callback only. */
#ifndef IGW_CONSENT_LEDGER_H
#define IGW_CONSENT_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "core/db.h"
#include "session/engine.h"
#include "session/vision.h"

typedef enum igw_consent_status {
    IGW_CONSENT_OK,
    IGW_CONSENT_NOT_FOUND, /* none of the caller's has that id */
    IGW_CONSENT_CONFLICT,  /* revoke: expectedRevision is not the consent's (the row says which is) */
    IGW_CONSENT_FAILED,    /* the database: err says why (logs only, never a reply) */
    /* create */
    IGW_CONSENT_SECONDS,        /* expiresAt looks like Unix seconds: never guessed as milliseconds */
    IGW_CONSENT_PAST,           /* expiresAt is not later than now */
    IGW_CONSENT_BEYOND,         /* expiresAt is beyond the session's deadline */
    IGW_CONSENT_TOKEN_TAKEN,    /* msgToken signed another source or deadline (the replay rule) */
    IGW_CONSENT_NO_SOURCE,      /* no live session of the caller with that id on its owner */
    IGW_CONSENT_NOT_VISION,     /* the session has no vision source (audio-only, viewing) */
    IGW_CONSENT_NOT_LIVE,       /* the session's media or connection is not up */
    IGW_CONSENT_SELECTION,      /* cameraId or trackId is not the platform's selection */
    IGW_CONSENT_GENERATION,     /* expectedMediaRevision is not the current one, or it changed meanwhile */
    IGW_CONSENT_CAPABILITY,     /* the camera no longer reports the selected camera */
    IGW_CONSENT_PRIVACY,        /* the device reports privacy on */
    IGW_CONSENT_NO_OWNER,       /* no live owner answered within the window: nothing built from old rows */
} igw_consent_status;

/* One consent as the user sees it (the schema's Consent). */
typedef struct igw_consent {
    const char *consent_id, *source_session_id, *camera_id, *track_id;
    int64_t media_revision, expires_at, granted_at, revision, revoked_at; /* revoked_at 0: not revoked */
} igw_consent;

typedef struct igw_consent_result {
    igw_consent_status status;
    const char *err;
    igw_consent consent; /* OK, and CONFLICT (the consent as it is) */
    bool replay;         /* create, OK: the token's consent as first signed, nothing issued */
} igw_consent_result;

typedef void (*igw_consent_cb)(void *arg, const igw_consent_result *r);

/* The caller's consent `consent_id`. 0, and cb once later; -1 (queue
 * full, out of memory): cb never runs. */
int igw_consent_get(igw_db *db, int64_t enterprise_id, int64_t user_id, const char *consent_id, igw_consent_cb cb,
                    void *arg);

/* Revokes the caller's consent: a compare-and-set on its revision (the
 * generated `consent` machine, trigger revoke). A granted consent whose
 * revision is expected_revision becomes revoked with the next revision and
 * revokedAt now, kept forever; a revoked one asked again with the
 * expected_revision that revoked it answers that first result, changing
 * nothing; anything else is CONFLICT. 0, and cb once later; -1: cb never
 * runs. */
int igw_consent_revoke(igw_db *db, int64_t enterprise_id, int64_t user_id, const char *consent_id,
                       int64_t expected_revision, igw_consent_cb cb, void *arg);

/* A consent to sign: the caller, its token, the source it names and the
 * explicit expiry (Unix ms). */
typedef struct igw_consent_new {
    int64_t enterprise_id, user_id;
    const char *msg_token, *source_session_id, *camera_id, *track_id;
    int64_t expected_media_revision, expires_at;
} igw_consent_new;

/* Where create asks the live owner (the seam of session/vision.h). */
typedef struct igw_consent_owner {
    igw_engine *engine;        /* NULL: no owner here (NO_OWNER) */
    igw_engine_back back;      /* its answer comes back to the caller's loop */
} igw_consent_owner;

/* Signs a vision consent (spec area C, docs/ai.md):
 *   1. the token's earlier consent, if any: the same source and deadline
 *      answer it again (replay, nothing reissued or renewed), anything
 *      else conflicts;
 *   2. the live-owner authority of the source (valid
 *      IGW_VISION_AUTHORITY_MS): the session, its selection, connection,
 *      capability and privacy as the owner holds them;
 *   3. the source row read again: another generation than the authority's
 *      refuses;
 *   4. one transaction (one statement): the source row locked FOR UPDATE
 *      and verified against the authority (owner node and epoch,
 *      connection epoch, model resource, deadline, selection, generation,
 *      the authority unexpired, expiresAt within the deadline), the consent
 *      created unique for user + token, the owner notified. Nothing else is
 *      read or asked inside it.
 * expiresAt is checked first: explicit Unix ms later than now (a value
 * below 10^11 reads as seconds and is refused, never converted). 0, and
 * cb once later on db's loop; -1 (out of memory, queue full): cb never
 * runs. Strings copied. */
int igw_consent_create(igw_db *db, const igw_consent_owner *owner, const igw_consent_new *q, igw_consent_cb cb,
                       void *arg);

/* Fills the schema's Consent from c (strings borrowed from c). */
void igw_consent_to_api(const igw_consent *c, igw_Consent *out);

/* NULL when every consent state the ledger's SQL names is a state of
 * igw_sm_consent (the column's CHECK), else the first that is not. */
const char *igw_consent_check_states(void);

#endif
