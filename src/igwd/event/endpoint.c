/* endpoint.c - see endpoint.h. */
#include "event/endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

#include "base64.h"
#include "clock.h"

#define ENDPOINT_ID_BYTES 18 /* 144 random bits, 24 base64url characters */

/* Parameters by name: REG_P_X is $(X + 1). */
enum { REG_P_ID, REG_P_ENTERPRISE, REG_P_USER, REG_P_EXPIRES, REG_NP };
static const igw_db_stmt stmt_register = {
    "igw_endpoint_register",
    "INSERT INTO endpoints (endpoint_id, enterprise_id, user_id, expires_at_ms) "
    "VALUES ($1, $2::bigint, $3::bigint, $4::bigint)",
    REG_NP};

typedef struct registration {
    igw_endpoint_cb cb;
    void *arg;
    char id[IGW_ENDPOINT_ID_MAX];
    int64_t expires_at;
} registration;

static void on_row(void *arg, const PGresult *res, const char *err)
{
    registration *r = arg;
    igw_endpoint_result out = {.id = r->id, .expires_at_ms = r->expires_at, .err = res ? NULL : err};
    r->cb(r->arg, &out);
    free(r);
}

int igw_endpoint_register(igw_db *db, int64_t enterprise_id, int64_t user_id, int64_t ttl_ms, igw_endpoint_cb cb,
                          void *arg)
{
    registration *r = calloc(1, sizeof *r);
    unsigned char raw[ENDPOINT_ID_BYTES];
    if (!r || getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw ||
        igw_b64_encode(IGW_B64_URL, raw, sizeof raw, r->id, sizeof r->id) < 0) {
        free(r);
        return -1;
    }
    r->cb = cb;
    r->arg = arg;
    r->expires_at = igw_wall_ms() + ttl_ms;
    char ent[24], user[24], exp[24];
    snprintf(ent, sizeof ent, "%lld", (long long)enterprise_id);
    snprintf(user, sizeof user, "%lld", (long long)user_id);
    snprintf(exp, sizeof exp, "%lld", (long long)r->expires_at);
    const char *values[REG_NP] = {[REG_P_ID] = r->id, [REG_P_ENTERPRISE] = ent, [REG_P_USER] = user,
                                  [REG_P_EXPIRES] = exp};
    if (igw_db_exec(db, &stmt_register, values, NULL, NULL, on_row, r)) {
        free(r);
        return -1;
    }
    return 0;
}
