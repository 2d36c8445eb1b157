/* login.c - see login.h. */
#include "auth/login.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>

#include "api.h"
#include "clock.h"
#include "core/log.h"
#include "jwt.h"

#define CACHE_BUCKETS 256
#define CACHE_MAX 4096 /* user records per worker; emptied when full */

typedef struct user {
    struct user *next;
    int64_t user_id, enterprise_id; /* enterprise_id 0: no such user */
    bool active;                    /* user and enterprise both */
    int64_t fetched_ms;
} user;

struct igw_login {
    igw_db *db;
    unsigned char key[IGW_JWT_KEY_MAX];
    size_t keylen;
    unsigned ttl_ms;
    user *buckets[CACHE_BUCKETS];
    unsigned n;
};

/* $1 the user; its enterprise and whether both are active. */
enum { USER_P_ID, USER_NP };
enum { USER_C_ENTERPRISE, USER_C_ACTIVE };
static const igw_db_stmt stmt_user = {
    "igw_login_user",
    "SELECT u.enterprise_id, u.active AND e.active FROM users u "
    "JOIN enterprises e ON e.enterprise_id = u.enterprise_id WHERE u.user_id = $1::bigint",
    USER_NP};

static void cache_clear(igw_login *l)
{
    for (unsigned i = 0; i < CACHE_BUCKETS; i++)
        while (l->buckets[i]) {
            user *n = l->buckets[i]->next;
            free(l->buckets[i]);
            l->buckets[i] = n;
        }
    l->n = 0;
}

static user **slot(igw_login *l, int64_t id)
{
    return &l->buckets[(uint64_t)id % CACHE_BUCKETS];
}

static const user *cache_get(igw_login *l, int64_t id)
{
    for (user **pp = slot(l, id), *u = *pp; u; pp = &u->next, u = u->next) {
        if (u->user_id != id)
            continue;
        if (igw_clock_ms() - u->fetched_ms < (int64_t)l->ttl_ms)
            return u;
        *pp = u->next; /* stale */
        free(u);
        l->n--;
        return NULL;
    }
    return NULL;
}

static const user *cache_put(igw_login *l, int64_t id, int64_t ent, bool active)
{
    for (user **pp = slot(l, id), *u = *pp; u; pp = &u->next, u = u->next)
        if (u->user_id == id) {
            *pp = u->next;
            free(u);
            l->n--;
            break;
        }
    if (l->n >= CACHE_MAX)
        cache_clear(l);
    user *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->user_id = id;
    u->enterprise_id = ent;
    u->active = active;
    u->fetched_ms = igw_clock_ms();
    user **pp = slot(l, id);
    u->next = *pp;
    *pp = u;
    l->n++;
    return u;
}

igw_login *igw_login_create(igw_db *db, const unsigned char *key, size_t keylen, unsigned ttl_ms)
{
    if (keylen < IGW_JWT_KEY_MIN || keylen > IGW_JWT_KEY_MAX)
        return NULL;
    igw_login *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->db = db;
    memcpy(l->key, key, keylen);
    l->keylen = keylen;
    l->ttl_ms = ttl_ms;
    return l;
}

void igw_login_destroy(igw_login *l)
{
    if (!l)
        return;
    cache_clear(l);
    OPENSSL_cleanse(l->key, sizeof l->key);
    free(l);
}

/* A request waiting for its user record. */
typedef struct pending {
    igw_login *l;
    igw_exchange *ex;
    igw_request *req;
    igw_login_next next;
    igw_principal who;
} pending;

/* The token's claims against the user's record. */
static void decide(igw_exchange *ex, const igw_request *req, igw_login_next next, const igw_principal *who,
                   const user *u)
{
    if (!u || u->enterprise_id != who->enterprise_id || !u->active) {
        igw_log(IGW_LOG_DEBUG, igw_http_request_id(ex), "login: user %lld refused: %s", (long long)who->user_id,
                !u || !u->enterprise_id ? "no such user" : !u->active ? "user or enterprise inactive"
                                                                        : "another enterprise");
        igw_http_reply_error(ex, IGW_ERR_PERMISSION, "the enterprise context is not valid for this user", "");
        return;
    }
    next(ex, req, who);
}

static void on_user(void *arg, const PGresult *res, const char *err)
{
    pending *p = arg;
    const user *u = NULL;
    if (!res) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(p->ex), "login: user lookup failed: %s", err);
        igw_http_reply_error(p->ex, IGW_ERR_UNAVAILABLE, "try again later", "");
    } else if (igw_http_cancelled(p->ex)) {
        igw_http_reply_error(p->ex, IGW_ERR_UNAVAILABLE, "client went away", ""); /* only releases it */
    } else {
        bool found = PQntuples(res) == 1;
        int64_t ent = found ? strtoll(PQgetvalue(res, 0, USER_C_ENTERPRISE), NULL, 10) : 0;
        bool active = found && PQgetvalue(res, 0, USER_C_ACTIVE)[0] == 't';
        u = cache_put(p->l, p->who.user_id, ent, active);
        if (!u)
            igw_http_reply_error(p->ex, IGW_ERR_INTERNAL, "out of memory", "");
        else
            decide(p->ex, p->req, p->next, &p->who, u);
    }
    free(p);
}

/* Why a token was refused, for the debug log (never the token). */
static const char *jwt_reason(int rc)
{
    switch (rc) {
    case IGW_JWT_EFORMAT: return "malformed";
    case IGW_JWT_ESIGNATURE: return "signature does not match";
    case IGW_JWT_EHEADER: return "unsupported header";
    case IGW_JWT_ECLAIMS: return "bad claims";
    case IGW_JWT_EEXPIRED: return "expired";
    default: return "internal error";
    }
}

/* The login with the token `tok` (len bytes; NULL: none was sent), wherever
 * it came from: every source answers the same. */
static void run_token(igw_login *l, igw_exchange *ex, const igw_request *req, igw_login_next next, const char *tok,
                      size_t len)
{
    igw_jwt_claims c;
    int rc = tok ? igw_jwt_verify(tok, len, l->key, l->keylen, (int64_t)time(NULL), &c) : IGW_JWT_EFORMAT;
    if (rc != IGW_JWT_OK) {
        igw_log(IGW_LOG_DEBUG, igw_http_request_id(ex), "login: token refused: %s", tok ? jwt_reason(rc) : "none sent");
        igw_http_reply_error(ex, IGW_ERR_UNAUTHENTICATED, "a valid login token is required", "");
        return;
    }
    igw_principal who = {.enterprise_id = c.enterprise_id, .user_id = c.user_id};
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
    const user *u = cache_get(l, who.user_id);
    if (u) {
        decide(held, copy, next, &who, u);
        return;
    }
    pending *p = malloc(sizeof *p);
    if (!p) {
        igw_http_reply_error(held, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    *p = (pending){.l = l, .ex = held, .req = copy, .next = next, .who = who};
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)who.user_id);
    const char *values[USER_NP] = {[USER_P_ID] = id};
    if (igw_db_exec(l->db, &stmt_user, values, NULL, NULL, on_user, p)) {
        free(p);
        igw_http_reply_error(held, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    }
}

void igw_login_run(igw_login *l, igw_exchange *ex, const igw_request *req, igw_login_next next)
{
    igw_str h = igw_http_header_value(ex, "authorization");
    if (!h.ptr || h.len < 8 || strncasecmp(h.ptr, "Bearer ", 7) != 0)
        run_token(l, ex, req, next, NULL, 0);
    else
        run_token(l, ex, req, next, h.ptr + 7, h.len - 7);
}

static bool str_is(igw_str s, const char *lit, size_t n)
{
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

void igw_login_run_ws(igw_login *l, igw_exchange *ex, const igw_request *req, igw_login_next next)
{
    static const char v1[] = IGW_LOGIN_WS_PROTOCOL, prefix[] = IGW_LOGIN_WS_BEARER;
    igw_http_list it = {0};
    igw_str e, bearer = {NULL, 0};
    bool has_v1 = false;
    unsigned bearers = 0;
    /* Subprotocol names compare exactly (RFC 6455 4.1: tokens, case-sensitive). */
    while ((e = igw_http_list_next(ex, "sec-websocket-protocol", &it)).ptr) {
        if (str_is(e, v1, sizeof v1 - 1)) {
            has_v1 = true;
        } else if (e.len >= sizeof prefix - 1 && memcmp(e.ptr, prefix, sizeof prefix - 1) == 0) {
            if (bearers++ == 0)
                bearer = (igw_str){e.ptr + sizeof prefix - 1, e.len - (sizeof prefix - 1)};
        }
    }
    if (bearers == 0) {
        igw_login_run(l, ex, req, next);
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
    run_token(l, ex, req, next, bearer.ptr, bearer.len);
}
