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

typedef enum igw_consent_status {
    IGW_CONSENT_OK,
    IGW_CONSENT_NOT_FOUND, /* none of the caller's has that id */
    IGW_CONSENT_CONFLICT,  /* revoke: expectedRevision is not the consent's (the row says which is) */
    IGW_CONSENT_FAILED,    /* the database: err says why (logs only, never a reply) */
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

/* Fills the schema's Consent from c (strings borrowed from c). */
void igw_consent_to_api(const igw_consent *c, igw_Consent *out);

/* NULL when every consent state the ledger's SQL names is a state of
 * igw_sm_consent (the column's CHECK), else the first that is not. */
const char *igw_consent_check_states(void);

#endif
