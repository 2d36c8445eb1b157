/* routes.c - see routes.h. */
#include "routes/routes.h"

#include <string.h>

#include "routes/context.h"
#include "http/metrics.h"

/* A route's handler and how the caller is authenticated before it:
 * `ws_bearer` is an `auth user` WebSocket route that browsers open, whose
 * login token may also come as the subprotocol igw.bearer.<token>
 * (igw_login_run_ws); a browser can set no Authorization header. Only
 * events_push: every other route ignores Sec-WebSocket-Protocol. (A rule
 * here, not in the schema: the schema language's `auth` has no such variant
 * yet.) */
typedef struct route_handler {
    igw_route_fn fn;
    bool ws_bearer;
} route_handler;

static const route_handler handlers[IGW_ROUTE__COUNT] = {
    [IGW_ROUTE_DEVICE_SEND] = {.fn = igw_route_device_send},
    [IGW_ROUTE_DEVICE_UPLOAD] = {.fn = igw_route_device_upload},
    [IGW_ROUTE_ENDPOINTS_REGISTER] = {.fn = igw_route_endpoints_register},
    [IGW_ROUTE_COMMANDS] = {.fn = igw_route_commands},
    [IGW_ROUTE_EVENTS_PULL] = {.fn = igw_route_events_pull},
    [IGW_ROUTE_EVENTS_ACK] = {.fn = igw_route_events_ack},
    [IGW_ROUTE_EVENTS_PUSH] = {.fn = igw_route_events_push, .ws_bearer = true},
};

/* The answer of every route whose handler is not written yet. */
static void not_implemented(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    (void)req;
    (void)who;
    igw_http_reply_unbound(ex);
}

void igw_routes_handle(void *arg, igw_exchange *ex, const igw_request *req)
{
    (void)arg;
    const route_handler *h = &handlers[req->route->id];
    igw_route_fn fn = h->fn ? h->fn : not_implemented;
    if (req->route->auth != IGW_AUTH_KIND_USER) {
        fn(ex, req, NULL);
        return;
    }
    /* The schema's `auth user`: the login comes first, for every such
     * route, implemented or not. */
    igw_worker *w = igw_http_state(ex);
    if (!w || !w->login) {
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "login is not configured", "");
        return;
    }
    if (h->ws_bearer)
        igw_login_run_ws(w->login, ex, req, fn);
    else
        igw_login_run(w->login, ex, req, fn);
}

bool igw_routes_raw(void *arg, igw_exchange *ex)
{
    igw_app *app = arg;
    igw_str p = igw_http_path(ex), m = igw_http_method(ex);
    if (!app->cfg.bench_routes || p.len != 11 || memcmp(p.ptr, "/bench/bare", 11) != 0 || m.len != 4 ||
        memcmp(m.ptr, "POST", 4) != 0)
        return false;
    igw_http_set_route(ex, IGW_METRICS_ROUTE_BENCH);
    igw_route_bench_bare(ex, NULL, NULL);
    return true;
}
