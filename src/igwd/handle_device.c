/* handle_device.c - the device routes (area A): send and upload-file.
 *
 * Rules (route, parameters, headers, body) are in schema/device.igw and were
 * applied by the strict stage; the method table is the schema's `protocol
 * device`. What is left here: the credentials, the gateway header rule, and
 * handing the message to the edge (edge.c), which MQTT uplinks share. */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "app.h"
#include "devauth.h"
#include "handlers.h"
#include "http.h"

/* Authorization: Basic base64(username:password), the device's MQTT pair.
 * Missing or malformed: unauthenticated, without saying which part. */
static int basic_credentials(igw_exchange *ex, char *user, size_t ucap, char *pass, size_t pcap)
{
    igw_str h = igw_http_header_value(ex, "authorization");
    if (!h.ptr || igw_devauth_parse_basic(h.ptr, h.len, user, ucap, pass, pcap) != IGW_DEVAUTH_OK) {
        igw_http_reply_error(ex, IGW_ERR_UNAUTHENTICATED, "invalid device credentials", "");
        return -1;
    }
    return 0;
}

/* productID and deviceName headers name a sub-device together, or neither. */
static int target_headers(igw_exchange *ex, const igw_request *req, igw_str *pid, igw_str *dn)
{
    *pid = req->headers[0];
    *dn = req->headers[1];
    if (!pid->ptr != !dn->ptr) {
        igw_http_reply_error(ex, IGW_ERR_PARAMETER, "the productID and deviceName headers go together",
                             pid->ptr ? "deviceName" : "productID");
        return -1;
    }
    return 0;
}

static void on_send_done(void *arg, const igw_edge_result *r)
{
    igw_exchange *ex = arg;
    if (r->cls == IGW_ERR_OK && r->reply)
        igw_http_reply_ok(ex, r->reply, r->reply_len);
    else
        igw_http_reply_error(ex, r->cls == IGW_ERR_OK ? IGW_ERR_INTERNAL : r->cls, r->reason, r->path);
}

int igw_handle_device_send(void *ctx, const igw_request *req)
{
    igw_exchange *ex = ctx;
    igw_worker *w = igw_http_state(ex);
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    igw_uplink up = {.handle = req->params[0], .type = req->params[1]};
    if (basic_credentials(ex, user, sizeof user, pass, sizeof pass) ||
        target_headers(ex, req, &up.product_id, &up.device_name))
        return 0;
    if (!w || !w->edge) {
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "no database configured", "");
        return 0;
    }
    up.username = (igw_str){user, strlen(user)};
    up.password = (igw_str){pass, strlen(pass)};
    up.payload = igw_http_body(ex);
    igw_exchange *held = igw_http_hold(ex);
    if (!held) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return 0;
    }
    igw_edge_submit(w->edge, &up, on_send_done, held); /* copies what it keeps */
    return 0;
}

int igw_handle_bench_bare(void *ctx, const igw_request *req)
{
    /* The send route's answer for a report, with the same strict decoding
     * and reply encoding, but no credentials check and no database. */
    igw_exchange *ex = ctx;
    (void)req;
    igw_str body = igw_http_body(ex);
    igw_arena a;
    igw_arena_init(&a, 1u << 20);
    igw_decode_error derr;
    void *out = NULL;
    if (igw_request_decode_body(&igw_gen_api, &igw_routes[IGW_ROUTE_DEVICE_SEND], body, &a, &out, &derr)) {
        igw_http_reply_error(ex, derr.cls, derr.reason, derr.path);
    } else {
        igw_DeviceMessage *m = out;
        igw_DeviceReply rep = {.has = IGW_DeviceReply_code | IGW_DeviceReply_method | IGW_DeviceReply_msgToken,
                               .code = 200,
                               .method = {"reportReply", 11},
                               .msgToken = m->msgToken};
        igw_jw jw;
        igw_jw_init(&jw);
        igw_encode_DeviceReply(&jw, &rep);
        if (igw_jw_status(&jw))
            igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        else
            igw_http_reply_ok(ex, jw.buf, jw.len);
        igw_jw_free(&jw);
    }
    igw_arena_free(&a);
    return 0;
}
