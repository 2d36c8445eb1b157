/* message.c - see message.h. */
#include "command/message.h"

#include <stdio.h>
#include <string.h>

#include "paths.h"
#include "signedurl.h"

static bool b64url(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int igw_message_file_path(const char *id, size_t len, char *out, size_t cap)
{
    if (len != IGW_MESSAGE_FILE_ID_LEN)
        return -1;
    for (size_t i = 0; i < len; i++)
        if (!b64url(id[i]))
            return -1;
    int n = snprintf(out, cap, IGW_MESSAGE_FILE_DIR "/%.2s/%.*s", id, (int)len, id);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static int refuse(igw_json *e, const char *reason, const char *path)
{
    igw_json_fail(e, IGW_JERR_UNKNOWN, reason);
    snprintf(e->path, sizeof e->path, "%s", path);
    return -1;
}

int igw_message_send(igw_command_call *call)
{
    const igw_MessageSendParams *p = &call->command->params.messageSend;
    const igw_command_site *site = call->site;
    if (!site)
        return -2; /* the walk lends one always (app.c) */
    if (p->expiresAt <= call->now_ms)
        return refuse(call->err, "expiresAt has passed", IGW_PATH_command_params_expiresAt);
    if ((uint64_t)(p->expiresAt - call->now_ms) > site->message_ttl_max_ms)
        return refuse(call->err, "expiresAt is further ahead than message_ttl_max_ms", IGW_PATH_command_params_expiresAt);
    char path[sizeof IGW_MESSAGE_FILE_DIR + 4 + IGW_MESSAGE_FILE_ID_LEN];
    if (igw_message_file_path(p->contentRef.ptr, p->contentRef.len, path, sizeof path))
        return refuse(call->err, "contentRef is no upload's id (POST /api/v1/im/interaction/uploads gives one)",
                      IGW_PATH_command_params_contentRef);
    /* The link stops working in the second after the message expires (the
     * device checks expiresAt itself first): a device that fetches it later
     * cannot play it. */
    size_t base = strlen(site->public_url);
    size_t cap = base + IGW_SIGNEDURL_MAX + 1;
    char *url = igw_arena_alloc(call->arena, cap);
    igw_MessagePlay *d = igw_arena_alloc(call->arena, sizeof *d);
    if (!url || !d)
        return -2;
    memcpy(url, site->public_url, base);
    long n = igw_signedurl_make(site->url_key, site->url_keylen, path, strlen(path), (p->expiresAt + 999) / 1000,
                                url + base, cap - base);
    if (n < 0)
        return -2;
    *d = (igw_MessagePlay){.has = IGW_MessagePlay__REQUIRED,
                           .method = {call->down->method, strlen(call->down->method)},
                           .msgToken = call->device_token,
                           .params = {.has = IGW_MessagePlayParams__REQUIRED,
                                      .deliveryId = p->deliveryId,
                                      .kind = p->kind,
                                      .expiresAt = p->expiresAt,
                                      .url = {url, base + (size_t)n}}};
    call->message = d;
    call->deadline_ms = p->expiresAt;
    call->delivery_id = p->deliveryId;
    call->file_id = p->contentRef;
    call->expires_at_ms = p->expiresAt;
    return 0;
}
