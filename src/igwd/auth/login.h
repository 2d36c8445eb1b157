/* login.h - who calls a route with `auth user`: the login token
 * (Authorization: Bearer, or for the push WebSocket a subprotocol; JWT
 * HS256 with the algorithm pinned and the expiry enforced, as
 * `igwctl token issue` makes) and the enterprise
 * context, checked against PostgreSQL (the user belongs to the token's
 * enterprise; both active). Identity never comes from a body.
 *
 * One per worker; user records are cached for `ttl_ms` (a deactivated user
 * or enterprise is refused within that time). */
#ifndef IGW_LOGIN_H
#define IGW_LOGIN_H

#include <stddef.h>
#include <stdint.h>

#include "core/db.h"
#include "http/http.h"
#include "request.h"

typedef struct igw_login igw_login;

/* The authenticated caller. */
typedef struct igw_principal {
    int64_t enterprise_id, user_id;
} igw_principal;

/* Continues a request once its caller is known. `ex` is held (reply on
 * it, now or later); `req` and its decoded body live in igw_http_arena(ex)
 * until that reply. */
typedef void (*igw_login_next)(igw_exchange *ex, const igw_request *req, const igw_principal *who);

/* The worker's login state over `db` (not owned) with the token key
 * (copied). NULL when out of memory or the key length is out of range. */
igw_login *igw_login_create(igw_db *db, const unsigned char *key, size_t keylen, unsigned ttl_ms);
void igw_login_destroy(igw_login *l);

/* Authenticates the caller of `req`, then runs next. Refusals are answered
 * here: a missing, malformed, badly signed or expired token is
 * unauthenticated (one reason for all); a user not in the token's
 * enterprise, or an inactive user or enterprise, is permission. */
void igw_login_run(igw_login *l, igw_exchange *ex, const igw_request *req, igw_login_next next);

/* The subprotocols of a WebSocket route a browser opens (a browser can set
 * no request header but Sec-WebSocket-Protocol): the one the upgrade
 * selects, and the prefix of the one carrying the login token. */
#define IGW_LOGIN_WS_PROTOCOL "igw.v1"
#define IGW_LOGIN_WS_BEARER "igw.bearer."

/* igw_login_run for such a route: the token comes from Authorization, or
 * from a subprotocol "igw.bearer.<token>" offered along with "igw.v1"
 * (which the upgrade must then select: a browser fails a handshake that
 * selects none of its offers). Verified and refused exactly as from the
 * header. Refused as parameter, before the token is looked at: more than
 * one igw.bearer entry, an igw.bearer entry and an Authorization header
 * (ambiguous), an igw.bearer entry without igw.v1. The token is never
 * logged nor echoed. */
void igw_login_run_ws(igw_login *l, igw_exchange *ex, const igw_request *req, igw_login_next next);

#endif
