/* login.c - see login.h. */
#include "auth/login.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

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

/* The token's claims against the user's record. */
static igw_login_status decide(const igw_principal *who, const user *u, const char *request_id)
{
    if (u->enterprise_id != who->enterprise_id || !u->active) {
        igw_log(IGW_LOG_DEBUG, request_id, "login: user %lld refused: %s", (long long)who->user_id,
                !u->enterprise_id ? "no such user" : !u->active ? "user or enterprise inactive" : "another enterprise");
        return IGW_LOGIN_REFUSED;
    }
    return IGW_LOGIN_OK;
}

igw_login_status igw_login_cached(igw_login *l, const igw_principal *who, const char *request_id)
{
    const user *u = cache_get(l, who->user_id);
    return u ? decide(who, u, request_id) : IGW_LOGIN_UNKNOWN;
}

static void on_user(void *arg, const PGresult *res, const char *err)
{
    igw_login_fetch_req *r = arg;
    if (!res) {
        igw_log(IGW_LOG_ERROR, r->request_id, "login: user lookup failed: %s", err);
        r->cb(r->arg, IGW_LOGIN_FAILED);
        return;
    }
    bool found = PQntuples(res) == 1;
    int64_t ent = found ? strtoll(PQgetvalue(res, 0, USER_C_ENTERPRISE), NULL, 10) : 0;
    bool active = found && PQgetvalue(res, 0, USER_C_ACTIVE)[0] == 't';
    const user *u = cache_put(r->l, r->who.user_id, ent, active);
    r->cb(r->arg, u ? decide(&r->who, u, r->request_id) : IGW_LOGIN_NOMEM);
}

int igw_login_fetch(igw_login *l, igw_login_fetch_req *r)
{
    r->l = l;
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)r->who.user_id);
    const char *values[USER_NP] = {[USER_P_ID] = id};
    return igw_db_exec(l->db, &stmt_user, values, NULL, NULL, on_user, r) ? -1 : 0;
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

int igw_login_token(igw_login *l, const char *tok, size_t len, const char *request_id, igw_principal *who)
{
    igw_jwt_claims c;
    int rc = tok ? igw_jwt_verify(tok, len, l->key, l->keylen, (int64_t)time(NULL), &c) : IGW_JWT_EFORMAT;
    if (rc != IGW_JWT_OK) {
        igw_log(IGW_LOG_DEBUG, request_id, "login: token refused: %s", tok ? jwt_reason(rc) : "none sent");
        return -1;
    }
    *who = (igw_principal){.enterprise_id = c.enterprise_id, .user_id = c.user_id};
    return 0;
}
