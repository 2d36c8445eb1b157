/* handlers.c - see handlers.h. */
#include "handlers.h"

#include <stdbool.h>

#include "app.h"
#include "http.h"
#include "login.h"

/* A route's behaviour: `plain` for routes without a user login (the device
 * routes authenticate devices themselves), `user` for `auth user` routes,
 * which run once the caller is known. `ws_bearer`: an `auth user` WebSocket
 * route that browsers open, whose login token may also come as the
 * subprotocol igw.bearer.<token> (igw_login_run_ws); a browser can set no
 * Authorization header. Only events_push: every other route ignores
 * Sec-WebSocket-Protocol. (A rule here, not in the schema: the schema
 * language's `auth` has no such variant yet.) */
typedef struct route_handler {
    igw_handler_fn plain;
    igw_login_next user;
    bool ws_bearer;
} route_handler;

static void handle_events_push(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_worker *w = igw_http_state(ex);
    igw_push_attach(w->push, ex, req, who);
}

static const route_handler handlers[IGW_ROUTE__COUNT] = {
    [IGW_ROUTE_DEVICE_SEND] = {.plain = igw_handle_device_send},
    [IGW_ROUTE_DEVICE_UPLOAD] = {.plain = igw_handle_device_upload},
    [IGW_ROUTE_ENDPOINTS_REGISTER] = {.user = igw_handle_endpoints_register},
    [IGW_ROUTE_COMMANDS] = {.user = igw_handle_commands},
    [IGW_ROUTE_EVENTS_PULL] = {.user = igw_handle_events_pull},
    [IGW_ROUTE_EVENTS_ACK] = {.user = igw_handle_events_ack},
    [IGW_ROUTE_EVENTS_PUSH] = {.user = handle_events_push, .ws_bearer = true},
};

/* The placeholder of every route until its issue lands. */
static void user_not_implemented(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    (void)req;
    (void)who;
    igw_http_reply_error(ex, IGW_ERR_NOT_IMPLEMENTED, "handler not implemented yet", "");
}

int igw_handle(void *ctx, const igw_request *req)
{
    igw_exchange *ex = ctx;
    const route_handler *h = &handlers[req->route->id];
    if (req->route->auth == IGW_AUTH_KIND_USER) {
        /* The schema's `auth user`: the login comes first, for every such
         * route, implemented or not. */
        igw_worker *w = igw_http_state(ex);
        if (!w || !w->login) {
            igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "login is not configured", "");
            return 0;
        }
        igw_login_next next = h->user ? h->user : user_not_implemented;
        if (h->ws_bearer)
            igw_login_run_ws(w->login, ex, req, next);
        else
            igw_login_run(w->login, ex, req, next);
        return 0;
    }
    if (h->plain)
        return h->plain(ctx, req);
    igw_http_reply_error(ex, IGW_ERR_NOT_IMPLEMENTED, "handler not implemented yet", "");
    return 0;
}
