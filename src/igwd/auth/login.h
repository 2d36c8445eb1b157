/* login.h - who calls a route with `auth user`: the login token (JWT
 * HS256 with the algorithm pinned and the expiry enforced, as `igwctl token
 * issue` makes) and the enterprise context, checked against PostgreSQL
 * (the user belongs to the token's enterprise; both active). Identity never
 * comes from a body. Where the token comes from (Authorization: Bearer, or
 * for the push WebSocket a subprotocol) and how a refusal is answered is
 * routes/routes.c's: nothing here knows HTTP.
 *
 * One per worker, on its loop thread; user records are cached for
 * `ttl_ms` (a deactivated user or enterprise is refused within that
 * time). */
#ifndef IGW_LOGIN_H
#define IGW_LOGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/db.h"

typedef struct igw_login igw_login;

/* The authenticated caller. */
typedef struct igw_principal {
    int64_t enterprise_id, user_id;
} igw_principal;

/* The subprotocols of a WebSocket route a browser opens (a browser can set
 * no request header but Sec-WebSocket-Protocol): the one the upgrade
 * selects, and the prefix of the one carrying the login token. */
#define IGW_LOGIN_WS_PROTOCOL "igw.v1"
#define IGW_LOGIN_WS_BEARER "igw.bearer."

/* The worker's login state over `db` (not owned) with the token key
 * (copied). NULL when out of memory or the key length is out of range. */
igw_login *igw_login_create(igw_db *db, const unsigned char *key, size_t keylen, unsigned ttl_ms);
void igw_login_destroy(igw_login *l);

/* Verifies a login token (`len` bytes; tok NULL: none was sent): 0 with
 * *who set from its claims; -1 when it is missing, malformed, badly
 * signed or expired (why is logged at debug under request_id, never the
 * token). */
int igw_login_token(igw_login *l, const char *tok, size_t len, const char *request_id, igw_principal *who);

/* What the user's record says of a verified principal. */
typedef enum igw_login_status {
    IGW_LOGIN_OK,      /* the user belongs to the token's enterprise, both active */
    IGW_LOGIN_REFUSED, /* no such user, another enterprise, or inactive (logged at debug) */
    IGW_LOGIN_UNKNOWN, /* igw_login_cached: not in the cache, read it (igw_login_fetch) */
    IGW_LOGIN_FAILED,  /* igw_login_fetch: the read failed (logged) */
    IGW_LOGIN_NOMEM    /* igw_login_fetch: the record read could not be kept */
} igw_login_status;

/* The cached record's answer for who: OK, REFUSED, or UNKNOWN (none, or
 * older than ttl_ms). request_id: for the log of a refusal. */
igw_login_status igw_login_cached(igw_login *l, const igw_principal *who, const char *request_id);

/* A read of a user's record, in the caller's memory until its cb: the
 * caller sets `who`, `request_id` (for logs), `cb` and `arg`; the rest is
 * the login's. */
typedef struct igw_login_fetch_req {
    igw_principal who;
    char request_id[24];
    void (*cb)(void *arg, igw_login_status st); /* OK, REFUSED, FAILED or NOMEM */
    void *arg;
    igw_login *l;
} igw_login_fetch_req;

/* Reads the record of r->who and caches it. 0: r->cb runs once, later, on
 * the loop thread; -1: not queued (busy), it never runs. */
int igw_login_fetch(igw_login *l, igw_login_fetch_req *r);

#endif
