/* interaction.c - the application transport routes (area B):
 * endpoints, commands, events, uploads. Rules are in schema/interaction.igw and were
 * applied by the strict stage; the caller is known (login.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "call/call.h"
#include "catalog/recordings.h"
#include "command/command.h"
#include "command/message.h"
#include "core/db.h"
#include "core/log.h"
#include "event/endpoint.h"
#include "event/outbox.h"
#include "paths.h"
#include "routes/context.h"
#include "routes/decide.h"
#include "routes/routes.h"
#include "routes/upload.h"
#include "routes/wspush.h"

/* ---- /endpoints/register (event/endpoint.h) ------------------------------------------ */

static void on_registered(void *arg, const igw_endpoint_result *r)
{
    igw_exchange *ex = arg;
    igw_routes_error e;
    if (igw_routes_register_error(r->err, &e)) {
        igw_log(e.cls == IGW_ERR_INTERNAL ? IGW_LOG_ERROR : IGW_LOG_WARN, igw_http_request_id(ex), "register: %s", r->err);
        igw_http_reply_error(ex, e.cls, e.reason, e.path);
        return;
    }
    igw_RegisterData d = {.endpointId = {r->id, strlen(r->id)}, .expiresAt = r->expires_at_ms};
    igw_encode_RegisterData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_endpoints_register(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    (void)req;
    igw_worker *w = igw_http_state(ex);
    if (igw_endpoint_register(w->db[0], who->enterprise_id, who->user_id, w->app->cfg.endpoint_ttl_ms, on_registered, ex))
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- /commands (command/command.h) ------------------------------------------------ */

static void on_command(void *arg, const igw_command_result *r)
{
    igw_exchange *ex = arg;
    if (r->cls != IGW_ERR_OK) {
        igw_http_reply_error(ex, r->cls, r->reason, r->path);
        return;
    }
    /* The acceptance only (durable); the result comes as an event. */
    igw_CommandsData d = {.accepted = true, .msgToken = r->msg_token, .replay = r->replay};
    igw_encode_CommandsData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_commands(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    igw_command_in in = {.rq = req->body, .enterprise_id = who->enterprise_id, .user_id = who->user_id,
                         .request_id = igw_http_request_id(ex)};
    igw_command_submit(&w->commands, &in, on_command, ex);
}

/* ---- /events and /events/ack (outbox.h) -------------------------------------------- */

static void on_pull(void *arg, const igw_outbox_result *r)
{
    igw_exchange *ex = arg;
    igw_routes_error e;
    if (igw_routes_outbox_error(r, false, &e)) {
        if (e.cls == IGW_ERR_UNAVAILABLE)
            igw_log(IGW_LOG_ERROR, igw_http_request_id(ex), "events: %s", r->err ? r->err : "pull failed");
        igw_http_reply_error(ex, e.cls, e.reason, e.path);
        return;
    }
    igw_EventItem items[IGW_EventsData_list_MAX_ITEMS];
    size_t n = r->nitems < IGW_EventsData_list_MAX_ITEMS ? r->nitems : IGW_EventsData_list_MAX_ITEMS;
    for (size_t i = 0; i < n; i++)
        items[i] = (igw_EventItem){.has = IGW_EventItem_deliveryId | IGW_EventItem_event,
                                   .deliveryId = {r->items[i].delivery_id, strlen(r->items[i].delivery_id)},
                                   .event = {r->items[i].event, r->items[i].event_len}};
    igw_EventsData d = {.has = IGW_EventsData_list, .list = {items, (uint32_t)n}};
    igw_encode_EventsData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_events_pull(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    const igw_EventsRequest *rq = req->body;
    char ep[IGW_EndpointId_MAX + 1];
    snprintf(ep, sizeof ep, "%.*s", (int)rq->endpointId.len, rq->endpointId.ptr);
    if (igw_outbox_pull(w->db[0], who->enterprise_id, who->user_id, ep, (int)rq->limit, on_pull, ex))
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

static void on_ack(void *arg, const igw_outbox_result *r)
{
    igw_exchange *ex = arg;
    igw_routes_error e;
    if (igw_routes_outbox_error(r, true, &e)) {
        if (e.cls == IGW_ERR_UNAVAILABLE)
            igw_log(IGW_LOG_ERROR, igw_http_request_id(ex), "events/ack: %s", r->err ? r->err : "ack failed");
        igw_http_reply_error(ex, e.cls, e.reason, e.path);
        return;
    }
    igw_AckData d = {.has = IGW_AckData_acknowledged, .acknowledged = r->acknowledged};
    igw_encode_AckData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_events_ack(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    const igw_AckRequest *rq = req->body;
    char ep[IGW_EndpointId_MAX + 1];
    snprintf(ep, sizeof ep, "%.*s", (int)rq->endpointId.len, rq->endpointId.ptr);
    const char *ids[IGW_AckRequest_deliveryIds_MAX_ITEMS];
    uint32_t n = rq->deliveryIds.n < IGW_AckRequest_deliveryIds_MAX_ITEMS ? rq->deliveryIds.n
                                                                         : IGW_AckRequest_deliveryIds_MAX_ITEMS;
    igw_arena *a = igw_http_arena(ex);
    for (uint32_t i = 0; i < n; i++)
        if (!(ids[i] = igw_arena_strndup(a, rq->deliveryIds.v[i].ptr, rq->deliveryIds.v[i].len))) {
            igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
            return;
        }
    if (igw_outbox_ack(w->db[0], who->enterprise_id, who->user_id, ep, ids, n, on_ack, ex))
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- events_push: the endpoint's WebSocket (wspush.c) -------------------------------- */

void igw_route_events_push(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    igw_wspush_attach(w->wspush, ex, req, who);
}

/* ---- /talk/audio-access (call/call.h) ------------------------------------------------ */

typedef struct audio_ctx {
    igw_exchange *ex;
    char target[IGW_UserId_MAX + 1];
} audio_ctx;

static void on_audio(void *arg, const igw_call_result *r)
{
    audio_ctx *a = arg;
    igw_exchange *ex = a->ex;
    if (r->cls != IGW_ERR_OK) {
        igw_http_reply_error(ex, (igw_err)r->cls, r->reason, r->path);
        return;
    }
    igw_AudioAccessRecord d = {.callId = {r->call_id, strlen(r->call_id)},
                               .targetUserID = {a->target, strlen(a->target)},
                               .publishAllowed = r->allowed, .audioRevision = r->revision,
                               .memberEpoch = r->epoch, .expiresAt = r->expires_ms};
    igw_encode_AudioAccessRecord(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_talk_audio_access(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    if (!w->call) {
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "no conference runtime is wired", "");
        return;
    }
    const igw_AudioAccessRequest *rq = req->body;
    igw_arena *ar = igw_http_arena(ex);
    audio_ctx *a = igw_arena_alloc(ar, sizeof *a);
    char *call_id = igw_arena_strndup(ar, rq->callId.ptr, rq->callId.len);
    if (!a || !call_id) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    a->ex = ex;
    snprintf(a->target, sizeof a->target, "%.*s", (int)rq->targetUserID.len, rq->targetUserID.ptr);
    int64_t target = igw_routes_id_of(rq->targetUserID); /* canonical_id: the decoder checked it */
    int rc = rq->operation == IGW_AudioOperation_set
                 ? igw_call_audio_set(w->call, who->enterprise_id, who->user_id, call_id, target, rq->allowed,
                                      rq->expectedRevision, on_audio, a)
                 : igw_call_audio_read(w->call, who->enterprise_id, who->user_id, call_id, target, on_audio, a);
    if (rc)
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- /recordings/query (catalog/recordings.h) ---------------------------------------- */

static void on_recordings(void *arg, const igw_recordings_result *r)
{
    igw_exchange *ex = arg;
    igw_routes_error e;
    if (igw_routes_recordings_error(r, &e)) {
        if (r->status == IGW_RECORDINGS_FAILED)
            igw_log(IGW_LOG_ERROR, igw_http_request_id(ex), "recordings: %s", r->err);
        igw_http_reply_error(ex, e.cls, e.reason, e.path);
        return;
    }
    igw_RecordingEntry items[IGW_RecordingsData_list_MAX_ITEMS];
    for (unsigned i = 0; i < r->n; i++) {
        const igw_recording *x = &r->list[i];
        items[i] = (igw_RecordingEntry){.recordingId = {x->recording_id, strlen(x->recording_id)},
                                        .cameraId = {x->camera_id, strlen(x->camera_id)},
                                        .startTimeMs = x->start_ms,
                                        .endTimeMs = x->end_ms,
                                        .durationMs = x->duration_ms,
                                        .available = x->available,
                                        .videoCodec = {x->video_codec, strlen(x->video_codec)},
                                        .recordingVersion = x->version};
        if (x->audio_codec) {
            items[i].has |= IGW_RecordingEntry_audioCodec;
            items[i].audioCodec = (igw_str){x->audio_codec, strlen(x->audio_codec)};
        }
    }
    igw_RecordingsData d = {.has = IGW_RecordingsData_list, .list = {items, r->n}, .hasMore = r->has_more};
    igw_encode_RecordingsData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_recordings_query(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    igw_recordings_query q;
    if (igw_routes_recordings_query(req->body, who->enterprise_id, who->user_id, igw_http_arena(ex), &q)) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    if (!w->ndb || igw_recordings_read(w->db[0], &q, on_recordings, ex))
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- /uploads: an application's audio file (docs/messages.md) ------------------------ */

/* The file's row, committed before the reply: its uploader is the only
 * one who may send it (messageSend's contentRef). */
enum { AFILE_P_ID, AFILE_P_ENTERPRISE, AFILE_P_USER, AFILE_P_TYPE, AFILE_P_SIZE, AFILE_P_SHA256, AFILE_NP };
static const igw_db_stmt stmt_app_file = {
    "igw_app_file",
    "INSERT INTO app_files (file_id, enterprise_id, user_id, content_type, size_bytes, sha256) "
    "VALUES ($1, $2::bigint, $3::bigint, $4, $5::bigint, decode($6, 'hex'))",
    AFILE_NP};

_Static_assert(IGW_OUTBOX_ID_LEN == IGW_MESSAGE_FILE_ID_LEN, "an upload's id is a fresh outbox id");

typedef struct app_upload {
    igw_exchange *ex;
    char id[IGW_OUTBOX_ID_MAX + 1];
    char shard[3];
    igw_upload file;
} app_upload;

static void app_upload_free(app_upload *u, bool remove_file)
{
    igw_upload_release(&u->file, remove_file);
    free(u);
}

static void on_app_file(void *arg, const PGresult *res, const char *err)
{
    app_upload *u = arg;
    if (!res) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(u->ex), "uploads: row not written: %s", err);
        igw_http_reply_error(u->ex, IGW_ERR_INTERNAL, "cannot store the file", "");
        /* A server-reported error rolled the row back; a lost answer may
         * have committed it: keep the file then. */
        app_upload_free(u, !igw_db_outcome_unknown(err));
        return;
    }
    igw_AppUploadResult r = {.has = IGW_AppUploadResult__REQUIRED,
                             .contentRef = {u->id, strlen(u->id)},
                             .contentType = (igw_AudioType)u->file.audio_type,
                             .size = (int64_t)u->file.size};
    igw_encode_AppUploadResult(igw_http_data(u->ex), &r);
    igw_http_reply_data(u->ex);
    app_upload_free(u, false);
}

void igw_route_app_upload(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    (void)req;
    igw_worker *w = igw_http_state(ex);
    if (!w || w->app->storage_fd < 0) {
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "uploads are not configured", "");
        return;
    }
    /* (The login held the exchange already: answered later, as every
     * `auth user` route's.) */
    app_upload *u = calloc(1, sizeof *u);
    if (!u || igw_outbox_new_id(u->id, sizeof u->id) != 0) {
        free(u);
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    u->ex = ex;
    /* Random ids spread over 64 * 64 directories: none grows without bound. */
    memcpy(u->shard, u->id, 2);
    igw_upload_init(&u->file, ex, w->app->storage_fd, w->app->cfg.upload_max);
    u->file.dirs[0] = IGW_MESSAGE_FILE_DIR;
    u->file.dirs[1] = u->shard;
    u->file.ndirs = 2;
    u->file.name = u->id;
    u->file.audio = true;
    char want[sizeof IGW_MESSAGE_FILE_DIR + 4 + IGW_MESSAGE_FILE_ID_LEN];
    if (igw_upload_store(&u->file)) {
        igw_http_reply_error(ex, u->file.err.cls, u->file.err.reason, u->file.err.path);
        app_upload_free(u, true);
        return;
    }
    /* The name is the id: a file already there (kept after a lost answer)
     * made storage pick another name, which the id would not find. */
    if (igw_message_file_path(u->id, strlen(u->id), want, sizeof want) || strcmp(want, u->file.relpath) != 0 ||
        u->file.audio_type < 0) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(ex), "uploads: stored as %s, not at its id", u->file.relpath);
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "cannot store the file", "");
        app_upload_free(u, true);
        return;
    }
    char ent[24], usr[24], size[24];
    snprintf(ent, sizeof ent, "%lld", (long long)who->enterprise_id);
    snprintf(usr, sizeof usr, "%lld", (long long)who->user_id);
    snprintf(size, sizeof size, "%llu", (unsigned long long)u->file.size);
    const igw_str *type = &igw_AudioType_names[u->file.audio_type];
    char tname[32];
    snprintf(tname, sizeof tname, "%.*s", (int)type->len, type->ptr);
    const char *values[AFILE_NP] = {[AFILE_P_ID] = u->id, [AFILE_P_ENTERPRISE] = ent, [AFILE_P_USER] = usr,
                                    [AFILE_P_TYPE] = tname, [AFILE_P_SIZE] = size,
                                    [AFILE_P_SHA256] = u->file.sha256_hex};
    if (igw_db_exec(w->db[0], &stmt_app_file, values, NULL, NULL, on_app_file, u)) {
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        app_upload_free(u, true);
    }
}
