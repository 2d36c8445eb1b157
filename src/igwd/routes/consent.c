/* consent.c - area C: the vision-consent routes (schema/consent.igw,
 * docs/ai.md). The ledger is consent/ledger.h's; the caller is the login's
 * principal, never a field of the body. */
#include <string.h>

#include "api.h"
#include "consent/ledger.h"
#include "core/log.h"
#include "routes/context.h"
#include "routes/decide.h"
#include "routes/routes.h"

/* A refused or failed result answered (its fixed class; the failure's text
 * only in the log): true when it was one. */
static bool reply_refusal(igw_exchange *ex, const igw_consent_result *r)
{
    igw_routes_error e;
    if (!igw_routes_consent_error(r, &e))
        return false;
    if (r->status == IGW_CONSENT_FAILED)
        igw_log(IGW_LOG_ERROR, igw_http_request_id(ex), "consents: %s", r->err);
    igw_http_reply_error(ex, e.cls, e.reason, e.path);
    return true;
}

static void on_consent(void *arg, const igw_consent_result *r)
{
    igw_exchange *ex = arg;
    if (reply_refusal(ex, r))
        return;
    igw_ConsentData d = {.has = IGW_ConsentData__REQUIRED};
    igw_consent_to_api(&r->consent, &d.consent);
    igw_encode_ConsentData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

/* The body's id as a C string (the strict stage bounded it). */
static const char *consent_id(igw_exchange *ex, igw_str id)
{
    return igw_arena_strndup(igw_http_arena(ex), id.ptr, id.len);
}

static void on_created(void *arg, const igw_consent_result *r)
{
    igw_exchange *ex = arg;
    if (reply_refusal(ex, r))
        return;
    igw_ConsentCreateData d = {.has = IGW_ConsentCreateData__REQUIRED, .replay = r->replay};
    igw_consent_to_api(&r->consent, &d.consent);
    igw_encode_ConsentCreateData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_consent_create(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    const igw_ConsentCreate *b = req->body;
    igw_arena *a = igw_http_arena(ex);
    igw_consent_new q = {.enterprise_id = who->enterprise_id, .user_id = who->user_id,
                         .msg_token = igw_arena_strndup(a, b->msgToken.ptr, b->msgToken.len),
                         .source_session_id = igw_arena_strndup(a, b->sourceSessionId.ptr, b->sourceSessionId.len),
                         .camera_id = igw_arena_strndup(a, b->cameraId.ptr, b->cameraId.len),
                         .track_id = igw_arena_strndup(a, b->trackId.ptr, b->trackId.len),
                         .expected_media_revision = b->expectedMediaRevision,
                         .expires_at = b->expiresAt};
    if (!q.msg_token || !q.source_session_id || !q.camera_id || !q.track_id) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    igw_consent_owner owner = {.engine = w->commands.engine ? *w->commands.engine : NULL, .back = w->commands.back};
    if (!w->ndb || igw_consent_create(w->db[0], &owner, &q, on_created, ex))
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

void igw_route_consent_get_one(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    const igw_ConsentGetOne *b = req->body;
    const char *id = consent_id(ex, b->consentId);
    if (!id) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    if (!w->ndb || igw_consent_get(w->db[0], who->enterprise_id, who->user_id, id, on_consent, ex))
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

void igw_route_consent_revoke(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    const igw_ConsentRevoke *b = req->body;
    const char *id = consent_id(ex, b->consentId);
    if (!id) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    if (!w->ndb ||
        igw_consent_revoke(w->db[0], who->enterprise_id, who->user_id, id, b->expectedRevision, on_consent, ex))
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}
