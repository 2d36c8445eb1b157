/* handle_interaction.c - the application transport routes (area B):
 * endpoints, commands, events. Rules are in schema/interaction.igw and were
 * applied by the strict stage; the caller is known (login.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "api.h"
#include "app.h"
#include "base64.h"
#include "handlers.h"

#define ENDPOINT_TTL_MS INT64_C(3600000) /* one hour, fixed; never renewed */
#define ENDPOINT_ID_BYTES 18             /* 144 random bits, 24 base64url characters */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- /endpoints/register ---------------------------------------------------------- */

static const igw_db_stmt stmt_endpoint = {
    "igw_endpoint_register",
    "INSERT INTO endpoints (endpoint_id, enterprise_id, user_id, expires_at_ms) "
    "VALUES ($1, $2::bigint, $3::bigint, $4::bigint)",
    4};

typedef struct registration {
    igw_exchange *ex;
    char id[40];
    int64_t expires_at;
} registration;

static void on_endpoint(void *arg, const PGresult *res, const char *err)
{
    registration *r = arg;
    if (!res) {
        fprintf(stderr, "igwd: register %s: %s\n", igw_http_request_id(r->ex), err);
        igw_http_reply_error(r->ex, IGW_ERR_INTERNAL, "could not register the endpoint", "");
    } else {
        igw_RegisterData d = {.endpointId = {r->id, strlen(r->id)}, .expiresAt = r->expires_at};
        igw_jw jw;
        igw_jw_init(&jw);
        igw_encode_RegisterData(&jw, &d);
        if (igw_jw_status(&jw))
            igw_http_reply_error(r->ex, IGW_ERR_INTERNAL, "out of memory", "");
        else
            igw_http_reply_ok(r->ex, jw.buf, jw.len);
        igw_jw_free(&jw);
    }
    free(r);
}

void igw_handle_endpoints_register(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    (void)req;
    igw_worker *w = igw_http_state(ex);
    registration *r = calloc(1, sizeof *r);
    unsigned char raw[ENDPOINT_ID_BYTES];
    if (!r || getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw ||
        igw_b64_encode(IGW_B64_URL, raw, sizeof raw, r->id, sizeof r->id) < 0) {
        free(r);
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "could not register the endpoint", "");
        return;
    }
    r->ex = ex;
    r->expires_at = wall_ms() + ENDPOINT_TTL_MS;
    char ent[24], user[24], exp[24];
    snprintf(ent, sizeof ent, "%lld", (long long)who->enterprise_id);
    snprintf(user, sizeof user, "%lld", (long long)who->user_id);
    snprintf(exp, sizeof exp, "%lld", (long long)r->expires_at);
    const char *values[4] = {r->id, ent, user, exp};
    if (igw_db_exec(w->db[0], &stmt_endpoint, values, NULL, NULL, on_endpoint, r)) {
        free(r);
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    }
}
