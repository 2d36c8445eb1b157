/* decide.c - see decide.h. */
#include "routes/decide.h"

#include <stdio.h>
#include <string.h>

#include "core/db.h"
#include "filename.h"
#include "paths.h"

static bool error(igw_routes_error *e, int cls, const char *reason, const char *path)
{
    e->cls = cls;
    e->reason = reason ? reason : "";
    e->path = path ? path : "";
    return true;
}

/* ---- dispatch ---- */

igw_routes_way igw_routes_decide_way(igw_auth_kind auth, bool auth_subprotocol, bool login_configured)
{
    if (auth != IGW_AUTH_KIND_USER)
        return IGW_ROUTES_DIRECT;
    /* The schema's `auth user`: the login comes first, for every such
     * route, implemented or not. */
    if (!login_configured)
        return IGW_ROUTES_NO_LOGIN;
    return auth_subprotocol ? IGW_ROUTES_LOGIN_WS : IGW_ROUTES_LOGIN;
}

/* ---- results as replies ---- */

bool igw_routes_register_error(const char *err, igw_routes_error *e)
{
    if (!err)
        return false;
    igw_err cls = igw_db_error_class(err, false);
    return error(e, cls, cls == IGW_ERR_INTERNAL ? "could not register the endpoint" : "try again later", "");
}

bool igw_routes_outbox_error(const igw_outbox_result *r, bool ack, igw_routes_error *e)
{
    if (r->status == IGW_OUTBOX_UNKNOWN_ENDPOINT || r->status == IGW_OUTBOX_ENDPOINT_EXPIRED)
        return error(e, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", IGW_PATH_endpointId);
    if (ack && r->status == IGW_OUTBOX_REFUSED) {
        snprintf(e->path_buf, sizeof e->path_buf, IGW_PATH_deliveryIds_ITEM, (unsigned)r->refused_index);
        return error(e, IGW_ERR_NOT_FOUND, "unknown, foreign or expired delivery; nothing was acknowledged",
                     e->path_buf);
    }
    if (r->status != IGW_OUTBOX_OK)
        return error(e, IGW_ERR_UNAVAILABLE, "try again later", "");
    return false;
}

bool igw_routes_recordings_error(const igw_recordings_result *r, igw_routes_error *e)
{
    switch (r->status) {
    case IGW_RECORDINGS_UNKNOWN_ENDPOINT:
        return error(e, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", IGW_PATH_endpointId);
    case IGW_RECORDINGS_NO_RIGHTS: /* an unknown device looks the same: no existence leak */
        return error(e, IGW_ERR_PERMISSION, "no rights on the target device", IGW_PATH_target);
    case IGW_RECORDINGS_UNKNOWN_CAMERA:
        return error(e, IGW_ERR_NOT_FOUND, "unknown camera of the target device", IGW_PATH_cameraId);
    case IGW_RECORDINGS_FAILED:
        return error(e, igw_db_error_class(r->err, false), "try again later", "");
    case IGW_RECORDINGS_OK:
        break;
    }
    return false;
}

bool igw_routes_consent_error(const igw_consent_result *r, igw_routes_error *e)
{
    switch (r->status) {
    case IGW_CONSENT_NOT_FOUND: /* another user's or enterprise's looks the same: no existence leak */
        return error(e, IGW_ERR_NOT_FOUND, "unknown consent", IGW_PATH_consentId);
    case IGW_CONSENT_CONFLICT:
        return error(e, IGW_ERR_CONFLICT, "expectedRevision is not the consent's revision: read it again",
                     IGW_PATH_expectedRevision);
    case IGW_CONSENT_FAILED:
        return error(e, igw_db_error_class(r->err, false), "try again later", "");
    case IGW_CONSENT_SECONDS:
        return error(e, IGW_ERR_PARAMETER, "expiresAt looks like Unix seconds: it is Unix milliseconds, never converted",
                     IGW_PATH_expiresAt);
    case IGW_CONSENT_PAST:
        return error(e, IGW_ERR_PARAMETER, "expiresAt must be later than now", IGW_PATH_expiresAt);
    case IGW_CONSENT_BEYOND:
        return error(e, IGW_ERR_PARAMETER, "expiresAt is beyond the session's deadline", IGW_PATH_expiresAt);
    case IGW_CONSENT_TOKEN_TAKEN:
        return error(e, IGW_ERR_CONFLICT, "msgToken signed another source or expiry: a new consent needs a new token",
                     IGW_PATH_msgToken);
    case IGW_CONSENT_NO_SOURCE: /* another user's session looks the same */
        return error(e, IGW_ERR_NOT_FOUND, "no live session of yours with that id", IGW_PATH_sourceSessionId);
    case IGW_CONSENT_NOT_VISION:
        return error(e, IGW_ERR_CONFLICT, "the session has no vision source (open purpose aiVision)",
                     IGW_PATH_sourceSessionId);
    case IGW_CONSENT_NOT_LIVE:
        return error(e, IGW_ERR_CONFLICT, "the session's media is not live: wait for established",
                     IGW_PATH_sourceSessionId);
    case IGW_CONSENT_SELECTION:
        return error(e, IGW_ERR_CONFLICT, "cameraId and trackId must be the session's vision selection",
                     IGW_PATH_trackId);
    case IGW_CONSENT_GENERATION:
        return error(e, IGW_ERR_CONFLICT, "the session's media generation is not expectedMediaRevision (or changed)",
                     IGW_PATH_expectedMediaRevision);
    case IGW_CONSENT_CAPABILITY:
        return error(e, IGW_ERR_CONFLICT, "the camera no longer reports the selected camera", IGW_PATH_cameraId);
    case IGW_CONSENT_PRIVACY:
        return error(e, IGW_ERR_PERMISSION, "the camera is in privacy mode", IGW_PATH_cameraId);
    case IGW_CONSENT_NO_OWNER:
        return error(e, IGW_ERR_UNAVAILABLE, "the session's owner did not vouch for it in time: retry with the same token",
                     "");
    case IGW_CONSENT_OK:
        break;
    }
    return false;
}

bool igw_routes_uplink_error(const igw_edge_result *r, bool need_reply, igw_routes_error *e)
{
    error(e, r->cls == IGW_ERR_OK ? IGW_ERR_INTERNAL : r->cls, r->reason, r->path);
    return r->cls != IGW_ERR_OK || (need_reply && !r->reply);
}

/* ---- upload-file ---- */

igw_routes_part igw_routes_upload_part(const igw_multipart_part *p, bool have_file, igw_routes_error *e)
{
    if (strcmp(p->name, "file") != 0)
        return IGW_ROUTES_PART_SKIP;
    const char *why = NULL;
    if (have_file)
        error(e, IGW_ERR_PARAMETER, "the part file appears twice", "file");
    else if (!p->has_filename || p->filename_len == 0)
        error(e, IGW_ERR_PARAMETER, "the part file needs a filename", "file");
    else if (igw_filename_check(p->filename, p->filename_len, &why))
        error(e, IGW_ERR_PARAMETER, why, "file");
    else
        return IGW_ROUTES_PART_FILE;
    return IGW_ROUTES_PART_REFUSED;
}

bool igw_routes_upload_too_large(uint64_t size, uint64_t max, igw_routes_error *e)
{
    return size > max && error(e, IGW_ERR_TOO_LARGE, "the file exceeds the upload cap", "file");
}

bool igw_routes_upload_end_error(int rc, bool have_file, const char *mp_error, igw_routes_error *e)
{
    if (rc != 0)
        return error(e, IGW_ERR_PARAMETER, mp_error ? mp_error : "invalid multipart body", "");
    if (!have_file)
        return error(e, IGW_ERR_PARAMETER, "the part file is required", "file");
    return false;
}

int igw_routes_audio_type(const unsigned char *h, size_t n, igw_routes_error *e)
{
    if (n < IGW_ROUTES_AUDIO_HEAD) /* shorter than any header: no audio */
        n = 0;
    if (n >= 4 && memcmp(h, "OggS", 4) == 0)
        return IGW_AudioType_audio_ogg;
    if (n >= 12 && memcmp(h, "RIFF", 4) == 0 && memcmp(h + 8, "WAVE", 4) == 0)
        return IGW_AudioType_audio_wav;
    if (n >= 3 && memcmp(h, "ID3", 3) == 0)
        return IGW_AudioType_audio_mpeg;
    /* An MPEG audio frame: 11 sync bits, a version that is not the
     * reserved 01, layer III (01), then a bitrate index that is neither
     * "free" (0000) nor the invalid 1111, and a known sample rate. */
    if (n >= 3 && h[0] == 0xFF && (h[1] & 0xE0) == 0xE0 && ((h[1] >> 3) & 3) != 1 && ((h[1] >> 1) & 3) == 1 &&
        (h[2] >> 4) != 0 && (h[2] >> 4) != 15 && ((h[2] >> 2) & 3) != 3)
        return IGW_AudioType_audio_mpeg;
    error(e, IGW_ERR_MEDIA_TYPE, "the file is not Ogg, WAV or MP3 audio (told by its first bytes, not its name)",
          "file");
    return -1;
}

/* ---- requests into domain inputs ---- */

int64_t igw_routes_id_of(igw_str s)
{
    int64_t v = 0;
    for (size_t i = 0; i < s.len && s.ptr[i] >= '0' && s.ptr[i] <= '9'; i++)
        v = v * 10 + (s.ptr[i] - '0');
    return v;
}

int igw_routes_recordings_query(const igw_RecordingsQuery *rq, int64_t enterprise_id, int64_t user_id, igw_arena *a,
                                igw_recordings_query *q)
{
    *q = (igw_recordings_query){
        .enterprise_id = enterprise_id, .user_id = user_id,
        .endpoint_id = igw_arena_strndup(a, rq->endpointId.ptr, rq->endpointId.len),
        .product_id = igw_arena_strndup(a, rq->target.productID.ptr, rq->target.productID.len),
        .device_name = igw_arena_strndup(a, rq->target.deviceName.ptr, rq->target.deviceName.len),
        .camera_id = igw_arena_strndup(a, rq->cameraId.ptr, rq->cameraId.len),
        .start_ms = rq->startTimeMs, .end_ms = rq->endTimeMs, .limit = (unsigned)rq->limit};
    return q->endpoint_id && q->product_id && q->device_name && q->camera_id ? 0 : -1;
}

uint32_t igw_routes_group_members(const igw_GroupCreate *rq, int64_t *out)
{
    uint32_t n = rq->members.n < IGW_GroupCreate_members_MAX_ITEMS ? rq->members.n : IGW_GroupCreate_members_MAX_ITEMS;
    for (uint32_t i = 0; i < n; i++)
        out[i] = igw_routes_id_of(rq->members.v[i]);
    return n;
}
