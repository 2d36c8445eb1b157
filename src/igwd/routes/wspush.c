/* wspush.c - see wspush.h. */
#include "routes/wspush.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "core/log.h"
#include "http/ws.h"

struct igw_wspush {
    igw_push *push;
    igw_ws_hub *hub;
    bool stopping;
};

/* A handshake waiting for its endpoint's check. */
typedef struct attach {
    igw_wspush *w;
    igw_exchange *ex;
    igw_push_sub *sub;
    bool v1; /* the client offered subprotocol igw.v1: the upgrade selects it */
} attach;

static bool offers_v1(igw_exchange *ex)
{
    static const char v1[] = IGW_LOGIN_WS_PROTOCOL;
    igw_http_list it = {0};
    igw_str e;
    while ((e = igw_http_list_next(ex, "sec-websocket-protocol", &it)).ptr)
        if (e.len == sizeof v1 - 1 && memcmp(e.ptr, v1, sizeof v1 - 1) == 0)
            return true;
    return false;
}

/* The sink of a subscriber: its connection (ws.h: never closes from inside
 * a send, as the sink's contract asks). */
static int send_frame(void *arg, const char *text, size_t len)
{
    return igw_ws_send_text(arg, text, len) != 0 ? -1 : 0;
}

static void on_ws_close(void *arg, igw_ws *ws, uint16_t code, const char *why)
{
    (void)ws;
    (void)code;
    (void)why;
    igw_push_sub_end(arg);
}

static void on_checked(void *arg, int found, const char *err)
{
    attach *a = arg;
    igw_push_sub *s = a->sub;
    if (found != 1 || igw_http_cancelled(a->ex)) {
        if (found < 0)
            igw_log(IGW_LOG_ERROR, igw_http_request_id(a->ex), "push: %s", err);
        igw_http_reply_error(a->ex, found < 0 ? IGW_ERR_UNAVAILABLE : IGW_ERR_NOT_FOUND,
                             found < 0 ? "try again later" : "unknown or expired endpoint",
                             found < 0 ? "" : "/endpointId");
        igw_push_sub_end(s);
        free(a);
        return;
    }
    /* Never the client's whole offer: it may carry the login token. */
    igw_ws_handlers h = {.on_close = on_ws_close, .arg = s, .protocol = a->v1 ? IGW_LOGIN_WS_PROTOCOL : NULL};
    igw_ws *ws = a->w->stopping ? NULL : igw_http_upgrade_ws(a->ex, a->w->hub, &h);
    if (!ws) {
        igw_http_reply_error(a->ex, IGW_ERR_UNAVAILABLE, "cannot open the WebSocket now", "");
        igw_push_sub_end(s);
        free(a);
        return;
    }
    free(a);
    igw_push_sub_start(s, &(igw_push_sink){.send = send_frame, .arg = ws});
}

void igw_wspush_attach(igw_wspush *w, igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    if (!igw_http_is_ws_handshake(ex)) {
        igw_http_reply_error(ex, IGW_ERR_PARAMETER, "a WebSocket handshake (Upgrade: websocket) is required", "");
        return;
    }
    attach *a = calloc(1, sizeof *a);
    igw_push_sub *s = igw_push_sub_new(w->push, req->params[IGW_EVENTS_PUSH_P_endpointId], who->enterprise_id,
                                       who->user_id);
    if (!a || !s) {
        free(a);
        if (s)
            igw_push_sub_end(s);
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    *a = (attach){.w = w, .ex = ex, .sub = s, .v1 = offers_v1(ex)};
    if (igw_push_sub_check(s, on_checked, a)) {
        free(a);
        igw_push_sub_end(s);
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    }
}

igw_wspush *igw_wspush_create(struct st_h2o_evloop_t *loop, igw_push *push)
{
    igw_wspush *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->push = push;
    if (!(w->hub = igw_ws_hub_create(loop, NULL))) {
        free(w);
        return NULL;
    }
    return w;
}

bool igw_wspush_drained(igw_wspush *w)
{
    if (!w->stopping) {
        w->stopping = true;
        igw_ws_hub_close_all(w->hub, 1001, "going away");
    }
    return igw_ws_hub_sockets(w->hub) == 0;
}

void igw_wspush_destroy(igw_wspush *w)
{
    if (!w)
        return;
    igw_ws_hub_destroy(w->hub); /* on_close of each: its subscriber ends (freed now or when its read ends) */
    free(w);
}
