/* routes.c - see routes.h. */
#include "routes/routes.h"

#include <string.h>

#include "igwd/handlers.h"
#include "routes/context.h"

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
    /* The schema's binding (generated/igwd/handlers.c): the handler, and
     * whether the login token may come as the WebSocket subprotocol. */
    const igw_route_binding *h = &igw_route_bindings[req->route->id];
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
    if (h->auth_subprotocol)
        igw_login_run_ws(w->login, ex, req, fn);
    else
        igw_login_run(w->login, ex, req, fn);
}

bool igw_routes_bench(void *arg, igw_exchange *ex, unsigned slot)
{
    igw_app *app = arg;
    igw_str p = igw_http_path(ex), m = igw_http_method(ex);
    if (!app->cfg.bench_routes || p.len != 11 || memcmp(p.ptr, "/bench/bare", 11) != 0 || m.len != 4 ||
        memcmp(m.ptr, "POST", 4) != 0)
        return false;
    igw_http_set_route(ex, slot);
    igw_route_bench_bare(ex, NULL, NULL);
    return true;
}
