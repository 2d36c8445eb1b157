/* decide.c - see decide.h. */
#include "edge/decide.h"

#include <stdio.h>
#include <string.h>

#include "command/results.h"
#include "decode.h"
#include "devauth.h"
#include "json.h"
#include "paths.h"

static bool refuse(igw_edge_refusal *r, int cls, const char *reason, const char *path)
{
    *r = (igw_edge_refusal){.cls = cls, .reason = reason, .path = path ? path : "", .log = NULL};
    return true;
}

/* ---- the uplink's device ---- */

bool igw_edge_name_copy(char *dst, size_t cap, igw_str s)
{
    if (!s.ptr || s.len == 0 || s.len >= cap || memchr(s.ptr, '\0', s.len))
        return false;
    memcpy(dst, s.ptr, s.len);
    dst[s.len] = '\0';
    return true;
}

bool igw_edge_topic_refuses(igw_str handle, igw_str type, char *h, size_t hcap, char *t, size_t tcap,
                            igw_edge_refusal *r)
{
    if (handle.len && handle.ptr[0] == '$') {
        handle.ptr++;
        handle.len--;
    }
    /* The route's parameter rules already bound these; an MQTT topic level
     * that does not fit is simply an unknown handle or type. One '$' is
     * tolerated, as by igw_proto_find. */
    if (!igw_edge_name_copy(h, hcap, handle) || !igw_edge_name_copy(t, tcap, type) || h[0] == '$')
        return refuse(r, IGW_ERR_PARAMETER, "unknown handle or message type", "");
    return false;
}

bool igw_edge_target_refuses(igw_str product_id, igw_str device_name, const char *auth_pid, const char *auth_dn,
                             char *pid, char *dn, size_t cap, igw_edge_refusal *r)
{
    if (!auth_pid) /* MQTT: the topic names the device */
        return !igw_edge_name_copy(pid, cap, product_id) || !igw_edge_name_copy(dn, cap, device_name)
                   ? refuse(r, IGW_ERR_PARAMETER, "unknown device", "")
                   : false;
    if (!product_id.ptr) {
        snprintf(pid, cap, "%s", auth_pid);
        snprintf(dn, cap, "%s", auth_dn);
        return false;
    }
    if (!igw_edge_name_copy(pid, cap, product_id) || !igw_edge_name_copy(dn, cap, device_name))
        return refuse(r, IGW_ERR_PARAMETER, "productID and deviceName go together", "");
    return false;
}

const char *igw_edge_devauth_reason(int rc)
{
    switch (rc) {
    case IGW_DEVAUTH_EUSERNAME: return "malformed username";
    case IGW_DEVAUTH_EPASSWORD: return "malformed password";
    case IGW_DEVAUTH_ESECRET: return "unusable secret";
    case IGW_DEVAUTH_EUNKNOWN: return "unknown device";
    case IGW_DEVAUTH_EMISMATCH: return "signature does not match";
    case IGW_DEVAUTH_EEXPIRED: return "expired";
    default: return "internal error";
    }
}

bool igw_edge_credentials_refuse(int rc, bool found, size_t secret_len, igw_edge_refusal *r)
{
    if (rc == IGW_DEVAUTH_OK && found && secret_len)
        return false;
    /* Unknown device and wrong credentials get the same answer; the
     * operator may learn which part failed, the device may not. */
    refuse(r, IGW_ERR_UNAUTHENTICATED, "invalid device credentials", "");
    r->log = !found ? "unknown device" : !secret_len ? "unusable secret" : igw_edge_devauth_reason(rc);
    return true;
}

igw_edge_actor igw_edge_decide_actor(const char *auth_pid, const char *auth_dn, const char *pid, const char *dn,
                                     bool is_gateway, igw_edge_refusal *r)
{
    if (strcmp(pid, auth_pid) == 0 && strcmp(dn, auth_dn) == 0)
        return IGW_EDGE_ACTOR_SELF;
    if (!is_gateway) {
        refuse(r, IGW_ERR_PERMISSION, "only a gateway may act for another device", "");
        return IGW_EDGE_ACTOR_REFUSED;
    }
    return IGW_EDGE_ACTOR_SUBDEVICE;
}

bool igw_edge_bound_refuses(bool found, const char *gw_pid, const char *gw_dn, const char *auth_pid,
                            const char *auth_dn, igw_edge_refusal *r)
{
    bool http = auth_pid != NULL;
    if (!found)
        return http ? refuse(r, IGW_ERR_PERMISSION, "not a sub-device bound to this gateway", "")
                    : refuse(r, IGW_ERR_NOT_FOUND, "unknown device", "");
    if (http && (strcmp(gw_pid, auth_pid) || strcmp(gw_dn, auth_dn)))
        return refuse(r, IGW_ERR_PERMISSION, "not a sub-device bound to this gateway", "");
    return false;
}

/* ---- the message ---- */

bool igw_edge_row_refuses(igw_proto_status st, igw_edge_refusal *r)
{
    if (st == IGW_PROTO_FOUND)
        return false;
    return refuse(r, IGW_ERR_PARAMETER, igw_proto_status_text(st), st == IGW_PROTO_NO_METHOD ? IGW_PATH_method : "");
}

igw_str igw_edge_reply_method(const igw_proto_row *row, igw_str method)
{
    if (row && row->reply)
        return (igw_str){row->reply, strlen(row->reply)};
    return method;
}

bool igw_edge_reply_topic(const igw_proto_row *row)
{
    return row && row->reply;
}

bool igw_edge_needs_model(int check)
{
    return check != IGW_PROTO_CHECK_NONE && check != IGW_PROTO_CHECK_SUBDEVICES && check != IGW_PROTO_CHECK_SESSION &&
           check != IGW_PROTO_CHECK_RING && check != IGW_PROTO_CHECK_RECORDINGS;
}

igw_edge_store igw_edge_decide_store(const igw_proto_row *row, bool is_gateway, igw_edge_refusal *r)
{
    if (row->returns == IGW_PROTO_RETURNS_PROPERTIES)
        return IGW_EDGE_STORE_PROPERTIES;
    if (row->returns == IGW_PROTO_RETURNS_CONFIG)
        return IGW_EDGE_STORE_CONFIG;
    if (row->returns == IGW_PROTO_RETURNS_MESSAGES)
        return IGW_EDGE_STORE_MESSAGES;
    if (row->check == IGW_PROTO_CHECK_RECORDINGS)
        return IGW_EDGE_STORE_CATALOG; /* the catalog is the message's store */
    if (row->check == IGW_PROTO_CHECK_SUBDEVICES) {
        if (!is_gateway) {
            refuse(r, IGW_ERR_PERMISSION, "only a gateway reports sub-devices", "");
            return IGW_EDGE_STORE_REFUSED;
        }
        return IGW_EDGE_STORE_SUBDEVICES;
    }
    return IGW_EDGE_STORE_BATCH;
}

void igw_edge_subdevice_refusal(long item, igw_edge_refusal *r)
{
    refuse(r, IGW_ERR_PERMISSION, "not a sub-device bound to this gateway", "");
    snprintf(r->path_buf, sizeof r->path_buf, IGW_PATH_params_devices_ITEM, (unsigned)(item - 1));
    r->path = r->path_buf;
}

bool igw_edge_catalog_refuses(const igw_recordings_report_result *res, igw_edge_refusal *r)
{
    if (res->status != IGW_RECORDINGS_REPORT_UNKNOWN_CAMERA)
        return false;
    refuse(r, IGW_ERR_PARAMETER, "not a camera of this device: nothing of the report was stored", "");
    snprintf(r->path_buf, sizeof r->path_buf, IGW_PATH_params_recordings_ITEM_cameraId, res->bad);
    r->path = r->path_buf;
    return true;
}

const char *igw_edge_db_reason(int cls)
{
    return cls == IGW_ERR_UNKNOWN_OUTCOME ? "the database did not answer: the message may or may not be stored"
                                          : "busy, retry later";
}

/* ---- the batch ---- */

igw_edge_queue igw_edge_decide_queue(const igw_edge_queue_facts *f, igw_edge_refusal *r)
{
    if (f->closing) {
        refuse(r, IGW_ERR_UNAVAILABLE, "shutting down", "");
        return IGW_EDGE_QUEUE_REFUSED;
    }
    if (f->npending >= f->pending_max) { /* the database is not keeping up */
        refuse(r, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return IGW_EDGE_QUEUE_REFUSED;
    }
    if (f->dry_run)
        return IGW_EDGE_QUEUE_DRY_RUN;
    /* A reply to a pending command is stored with the command's result,
     * in one commit; otherwise, or once it settles nothing, it joins the
     * batch like any uplink. */
    if (f->command_reply && !f->props && !f->settling)
        return IGW_EDGE_QUEUE_SETTLE;
    return IGW_EDGE_QUEUE_BATCH;
}

igw_edge_settled igw_edge_decide_settled(int status, bool value_error)
{
    if (status == IGW_RESULTS_STORED)
        return IGW_EDGE_SETTLED_OK;
    if (status == IGW_RESULTS_NOTHING || value_error) /* the reply alone, as any uplink */
        return IGW_EDGE_SETTLED_UPLINK;
    return IGW_EDGE_SETTLED_FAILED;
}

igw_edge_batch igw_edge_decide_batch(const igw_edge_batch_facts *f)
{
    /* A failed batch is rolled back as a whole: one bad value must not
     * fail the other devices' messages, a lost race is worth another try. */
    bool value = !f->committed && f->value, race = !f->committed && f->race;
    if (!f->closing && value && f->several)
        return IGW_EDGE_BATCH_RETRY_ALONE;
    if (!f->closing && race && f->retries < IGW_EDGE_RETRIES_MAX)
        return IGW_EDGE_BATCH_RETRY;
    if (f->committed)
        return IGW_EDGE_BATCH_STORED;
    return value ? IGW_EDGE_BATCH_BAD_VALUE : IGW_EDGE_BATCH_FAILED;
}

/* ---- an MQTT uplink the strict decoder refused ---- */

bool igw_edge_recover_identity(const char *payload, size_t len, igw_arena *a, igw_str *method_out,
                               igw_str *token_out)
{
    igw_json s;
    igw_json_init(&s, payload, len, a, 16);
    igw_str k, method = {NULL, 0}, token = {NULL, 0}, skip;
    int more;
    if (igw_json_object_begin(&s))
        return false;
    while ((more = igw_json_object_next(&s, &k)) == 1) {
        igw_str *want = k.len == 6 && !memcmp(k.ptr, "method", 6)     ? &method
                      : k.len == 8 && !memcmp(k.ptr, "msgToken", 8)   ? &token
                                                                       : NULL;
        if (want && !want->ptr) {
            if (igw_json_peek(&s) != '"' || igw_json_string(&s, want))
                return false;
        } else if (igw_json_value(&s, IGW_JSON_RFC8259, 16, SIZE_MAX, &skip)) {
            break; /* what came before may still name the message */
        }
    }
    if (!method.ptr || !token.ptr || method.len > IGW_DeviceMessage_method_MAX || token.len > IGW_Token_MAX ||
        !igw_format_identifier(method.ptr, method.len) || !igw_format_identifier(token.ptr, token.len))
        return false;
    *method_out = method;
    *token_out = token;
    return true;
}

bool igw_edge_log_due(igw_edge_logslot *slots, unsigned n, uint64_t device, int64_t now_ms, int64_t every_ms)
{
    uint64_t h = device | 1; /* never 0, the free mark */
    igw_edge_logslot *s = &slots[h % n];
    if (s->device == h && now_ms - s->at_ms < every_ms)
        return false;
    s->device = h;
    s->at_ms = now_ms;
    return true;
}

/* ---- presence facts ---- */

static const char *const state_names[IGW_PRESENCE__STATES] = {"online", "offline", "boot"};

int igw_presence_parse(const char *payload, size_t len, igw_presence_fact *out)
{
    igw_arena a;
    igw_json j;
    igw_str k, v;
    unsigned seen = 0;
    int rc = -1, more;

    if (!payload || !out || len > IGW_PRESENCE_PAYLOAD_MAX)
        return -1;
    igw_arena_init(&a, 4096);
    igw_json_init(&j, payload, len, &a, 4);
    if (igw_json_object_begin(&j) != 0)
        goto done;
    while ((more = igw_json_object_next(&j, &k)) == 1) {
        unsigned bit;
        int r;
        if (k.len == 5 && memcmp(k.ptr, "state", 5) == 0) {
            bit = 1;
            r = igw_json_string(&j, &v);
            if (r == 0) {
                r = -1;
                for (int s = 0; s < IGW_PRESENCE__STATES; s++)
                    if (v.len == strlen(state_names[s]) && memcmp(v.ptr, state_names[s], v.len) == 0) {
                        out->state = (igw_presence_state)s;
                        r = 0;
                    }
            }
        } else if (k.len == 4 && memcmp(k.ptr, "boot", 4) == 0) {
            bit = 2;
            r = igw_json_int(&j, &out->boot, 1, IGW_JSON_SAFE_MAX);
        } else if (k.len == 3 && memcmp(k.ptr, "seq", 3) == 0) {
            bit = 4;
            r = igw_json_int(&j, &out->seq, 0, IGW_JSON_SAFE_MAX);
        } else if (k.len == 2 && memcmp(k.ptr, "at", 2) == 0) {
            bit = 8;
            r = igw_json_int(&j, &out->at_ms, 0, IGW_JSON_SAFE_MAX);
        } else {
            bit = 0;
            r = igw_json_value(&j, IGW_JSON_STRICT, 2, IGW_PRESENCE_PAYLOAD_MAX, &v);
        }
        if (r != 0 || (seen & bit))
            goto done;
        seen |= bit;
    }
    if (more == 0 && seen == 15 && igw_json_finish(&j) == 0)
        rc = 0;
done:
    igw_arena_free(&a);
    return rc;
}

int igw_presence_plan_of(const char *product_id, const char *device_name, const igw_presence_fact *f,
                         igw_presence_plan *plan)
{
    bool broker = !product_id[0] && !device_name[0];
    if ((!product_id[0] != !device_name[0]) || (broker != (f->state == IGW_PRESENCE_BOOT)))
        return -1;
    /* The broker saw the device's current connection end (a takeover's
     * old connection says nothing): its camera legs cannot go on. */
    *plan = (igw_presence_plan){.device = !broker, .online = f->state == IGW_PRESENCE_ONLINE,
                                .end_legs = f->state == IGW_PRESENCE_OFFLINE};
    return 0;
}

bool igw_presence_boot_claim(_Atomic int64_t *newest, int64_t boot)
{
    int64_t cur = atomic_load(newest);
    while (boot > cur)
        if (atomic_compare_exchange_weak(newest, &cur, boot))
            return true;
    return false;
}

bool igw_presence_sweep_begin(int64_t *sweep_boot, int64_t boot)
{
    bool running = *sweep_boot != 0;
    *sweep_boot = boot; /* a running sweep goes on with the newer boot */
    return !running;
}

bool igw_presence_sweep_more(long long swept, unsigned batch, int64_t sweep_boot, int64_t sweep_sent)
{
    return swept >= (long long)batch || sweep_boot != sweep_sent;
}
