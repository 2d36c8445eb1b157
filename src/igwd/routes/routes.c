/* routes.c - see routes.h. */
#include "routes/routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decode.h"
#include "igwd/handlers.h"
#include "routes/context.h"
#include "routes/decide.h"

/* ---- the login of `auth user` routes (auth/login.h) ------------------------------- */

/* A request waiting for its caller's user record. */
typedef struct login_wait {
    igw_login_fetch_req fetch;
    igw_exchange *ex;  /* held */
    igw_request *req;  /* in the held exchange's arena */
    igw_route_fn next;
} login_wait;

/* The user's record said `st` of who: the handler, or the refusal. */
static void login_decided(igw_exchange *ex, const igw_request *req, igw_route_fn next, const igw_principal *who,
                          igw_login_status st)
{
    if (st == IGW_LOGIN_OK)
        next(ex, req, who);
    else if (st == IGW_LOGIN_REFUSED)
        igw_http_reply_error(ex, IGW_ERR_PERMISSION, "the enterprise context is not valid for this user", "");
    else
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
}

static void on_user_fetched(void *arg, igw_login_status st)
{
    login_wait *lw = arg;
    if (st == IGW_LOGIN_FAILED)
        igw_http_reply_error(lw->ex, IGW_ERR_UNAVAILABLE, "try again later", "");
    else if (igw_http_cancelled(lw->ex))
        igw_http_reply_error(lw->ex, IGW_ERR_UNAVAILABLE, "client went away", ""); /* only releases it */
    else
        login_decided(lw->ex, lw->req, lw->next, &lw->fetch.who, st);
    free(lw);
}

/* The login with the token `tok` (len bytes; NULL: none was sent), wherever
 * it came from: every source answers the same. The exchange is held from
 * here on: `next` gets the held one, and `req` copied into its arena. */
static void login_token(igw_login *l, igw_exchange *ex, const igw_request *req, igw_route_fn next, const char *tok,
                        size_t len)
{
    igw_principal who;
    if (igw_login_token(l, tok, len, igw_http_request_id(ex), &who)) {
        igw_http_reply_error(ex, IGW_ERR_UNAUTHENTICATED, "a valid login token is required", "");
        return;
    }
    igw_exchange *held = igw_http_hold(ex);
    igw_request *copy = held ? igw_arena_alloc(igw_http_arena(held), sizeof *copy) : NULL;
    if (!copy) {
        if (held)
            igw_http_reply_error(held, IGW_ERR_INTERNAL, "out of memory", "");
        else
            igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    *copy = *req;
    igw_login_status st = igw_login_cached(l, &who, igw_http_request_id(held));
    if (st != IGW_LOGIN_UNKNOWN) {
        login_decided(held, copy, next, &who, st);
        return;
    }
    login_wait *lw = malloc(sizeof *lw);
    if (!lw) {
        igw_http_reply_error(held, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    *lw = (login_wait){.fetch = {.who = who, .cb = on_user_fetched, .arg = lw}, .ex = held, .req = copy, .next = next};
    snprintf(lw->fetch.request_id, sizeof lw->fetch.request_id, "%s", igw_http_request_id(held));
    if (igw_login_fetch(l, &lw->fetch)) {
        free(lw);
        igw_http_reply_error(held, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    }
}

/* The token from Authorization: Bearer. */
static void login_run(igw_login *l, igw_exchange *ex, const igw_request *req, igw_route_fn next)
{
    igw_str h = igw_http_header_value(ex, "authorization");
    if (!h.ptr || h.len < 8 || strncasecmp(h.ptr, "Bearer ", 7) != 0)
        login_token(l, ex, req, next, NULL, 0);
    else
        login_token(l, ex, req, next, h.ptr + 7, h.len - 7);
}

/* The schema's `auth user subprotocol`: the token comes from Authorization,
 * or from a subprotocol "igw.bearer.<token>" offered along with "igw.v1"
 * (which the upgrade must then select: a browser fails a handshake that
 * selects none of its offers), verified and refused exactly as from the
 * header. Refused as parameter, before the token is looked at: more than
 * one igw.bearer entry, an igw.bearer entry and an Authorization header
 * (ambiguous), an igw.bearer entry without igw.v1. The token is never
 * logged nor echoed. */
static void login_run_ws(igw_login *l, igw_exchange *ex, const igw_request *req, igw_route_fn next)
{
    static const char v1[] = IGW_LOGIN_WS_PROTOCOL, prefix[] = IGW_LOGIN_WS_BEARER;
    igw_http_list it = {0};
    igw_str e, bearer = {NULL, 0};
    bool has_v1 = false;
    unsigned bearers = 0;
    /* Subprotocol names compare exactly (RFC 6455 4.1: tokens, case-sensitive). */
    while ((e = igw_http_list_next(ex, "sec-websocket-protocol", &it)).ptr) {
        if (igw_str_eq(e, v1, sizeof v1 - 1)) {
            has_v1 = true;
        } else if (e.len >= sizeof prefix - 1 && memcmp(e.ptr, prefix, sizeof prefix - 1) == 0) {
            if (bearers++ == 0)
                bearer = (igw_str){e.ptr + sizeof prefix - 1, e.len - (sizeof prefix - 1)};
        }
    }
    if (bearers == 0) {
        login_run(l, ex, req, next);
        return;
    }
    /* The reasons name the rule, never the offered value: it holds a token. */
    if (bearers > 1) {
        igw_http_reply_error(ex, IGW_ERR_PARAMETER, "offer one igw.bearer.<token> subprotocol, not several", "");
        return;
    }
    if (igw_http_header_value(ex, "authorization").ptr) {
        igw_http_reply_error(ex, IGW_ERR_PARAMETER,
                             "send the login token in Authorization or in the igw.bearer subprotocol, not both", "");
        return;
    }
    if (!has_v1) {
        igw_http_reply_error(ex, IGW_ERR_PARAMETER, "the igw.bearer subprotocol must be offered along with igw.v1",
                             "");
        return;
    }
    login_token(l, ex, req, next, bearer.ptr, bearer.len);
}

/* ---- dispatch ------------------------------------------------------------------------ */

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
    igw_worker *w = req->route->auth == IGW_AUTH_KIND_USER ? igw_http_state(ex) : NULL;
    switch (igw_routes_decide_way(req->route->auth, h->auth_subprotocol, w && w->login)) {
    case IGW_ROUTES_DIRECT:
        fn(ex, req, NULL);
        return;
    case IGW_ROUTES_NO_LOGIN:
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "login is not configured", "");
        return;
    case IGW_ROUTES_LOGIN_WS:
        login_run_ws(w->login, ex, req, fn);
        return;
    case IGW_ROUTES_LOGIN:
        login_run(w->login, ex, req, fn);
        return;
    }
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
