/* ledger.c - see ledger.h. */
#include "consent/ledger.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/rights.h"
#include "machines.h"
#include "session/vision.h"

/* The consent states the SQL below names: states of igw_sm_consent (the
 * consent_state domain of consents.state); igw_consent_check_states()
 * proves it. */
#define ST_GRANTED "granted"
#define ST_REVOKED "revoked"

static const char *const used_states[] = {ST_GRANTED, ST_REVOKED};

const char *igw_consent_check_states(void)
{
    for (size_t i = 0; i < sizeof used_states / sizeof used_states[0]; i++)
        if (igw_sm_state(&igw_sm_consent, used_states[i]) <= 0) /* 0 is the pseudo-state none */
            return used_states[i];
    return NULL;
}

/* The user's columns of a consent, in this order after each statement's
 * own (CONSENT_COLS). */
#define CONSENT_COLS(X)                                                                                  \
    X ".consent_id, " X ".source_session_id, " X ".camera_id, " X ".track_id, " X ".media_revision, " X \
    ".expires_at_ms, " X ".granted_at_ms, " X ".revision, " X ".revoked_at_ms"
enum { C_ID, C_SOURCE, C_CAMERA, C_TRACK, C_MEDIA_REV, C_EXPIRES, C_GRANTED, C_REVISION, C_REVOKED, C__N };

/* Parameters by name: *_P_X is $(X + 1). */
enum { GET_P_ENTERPRISE, GET_P_USER, GET_P_ID, GET_NP };
static const igw_db_stmt st_get = {
    "igw_consent_get",
    "SELECT " CONSENT_COLS("c") " FROM consents c "
    "WHERE c.consent_id = $3::text AND c.enterprise_id = $1::bigint AND c.user_id = $2::bigint",
    GET_NP};

/* The row locked, then moved by revoke only when it is granted at the
 * expected revision (the machine's revisionMatches), its source's owner
 * notified in the same transaction; the prior state and revision come
 * first so the machine decides what the answer is, and the row as it is
 * now (updated, or as it was) after them. */
enum { REV_P_ENTERPRISE, REV_P_USER, REV_P_ID, REV_P_EXPECTED, REV_NP };
enum { REV_C_STATE, REV_C_REVISION, REV_C_UPDATED, REV_C__FIRST };
static const igw_db_stmt st_revoke = {
    "igw_consent_revoke",
    "WITH c AS MATERIALIZED (SELECT x.* FROM consents x "
    "    WHERE x.consent_id = $3::text AND x.enterprise_id = $1::bigint AND x.user_id = $2::bigint FOR UPDATE), "
    "u AS (UPDATE consents x SET state = '" ST_REVOKED "', revision = c.revision + 1, "
    "          revoked_at_ms = " IGW_SQL_NOW_MS " "
    "      FROM c WHERE x.consent_id = c.consent_id AND c.state = '" ST_GRANTED "' AND c.revision = $4::bigint "
    "      RETURNING x.*), "
    /* The source's owner stops sharing at once (session/vision.h). */
    "ntf AS (SELECT pg_notify('" IGW_VISION_CHANNEL "', u.source_session_id) FROM u) "
    "SELECT c.state, c.revision, (SELECT count(*) FROM u) + 0 * (SELECT count(*) FROM ntf), " CONSENT_COLS("r") " "
    "FROM c, LATERAL (SELECT * FROM u UNION ALL SELECT * FROM c WHERE NOT EXISTS (SELECT 1 FROM u)) r",
    REV_NP};

typedef struct cq {
    igw_consent_cb cb;
    void *arg;
    int64_t expected; /* revoke */
} cq;

static int64_t i64(const PGresult *res, int c)
{
    return strtoll(PQgetvalue(res, 0, c), NULL, 10);
}

static void row_consent(const PGresult *res, int first, igw_consent *c)
{
    *c = (igw_consent){.consent_id = PQgetvalue(res, 0, first + C_ID),
                       .source_session_id = PQgetvalue(res, 0, first + C_SOURCE),
                       .camera_id = PQgetvalue(res, 0, first + C_CAMERA),
                       .track_id = PQgetvalue(res, 0, first + C_TRACK),
                       .media_revision = i64(res, first + C_MEDIA_REV),
                       .expires_at = i64(res, first + C_EXPIRES),
                       .granted_at = i64(res, first + C_GRANTED),
                       .revision = i64(res, first + C_REVISION),
                       .revoked_at = i64(res, first + C_REVOKED)};
}

static cq *cq_new(igw_consent_cb cb, void *arg)
{
    cq *q = calloc(1, sizeof *q);
    if (q) {
        q->cb = cb;
        q->arg = arg;
    }
    return q;
}

static void on_get(void *arg, const PGresult *res, const char *err)
{
    cq *q = arg;
    igw_consent_result r = {.status = IGW_CONSENT_OK};
    if (!res || PQnfields(res) != C__N) {
        r.status = IGW_CONSENT_FAILED;
        r.err = err ? err : "unexpected result";
    } else if (PQntuples(res) == 0) {
        r.status = IGW_CONSENT_NOT_FOUND;
    } else {
        row_consent(res, 0, &r.consent);
    }
    q->cb(q->arg, &r);
    free(q);
}

int igw_consent_get(igw_db *db, int64_t enterprise_id, int64_t user_id, const char *consent_id, igw_consent_cb cb,
                    void *arg)
{
    cq *q = cq_new(cb, arg);
    if (!q)
        return -1;
    char ent[24], user[24];
    snprintf(ent, sizeof ent, "%" PRId64, enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, user_id);
    const char *v[GET_NP] = {[GET_P_ENTERPRISE] = ent, [GET_P_USER] = user, [GET_P_ID] = consent_id};
    if (igw_db_exec(db, &st_get, v, NULL, NULL, on_get, q) != 0) {
        free(q);
        return -1;
    }
    return 0;
}

/* The machine's guards of a revoke from the row it saw: its prior state
 * and revision (0 when the state is not the machine's). */
static uint32_t revoke_guards(int st, int64_t prior_revision, int64_t expected)
{
    uint32_t guards = 0;
    if (st == IGW_CONSENT_GRANTED && prior_revision == expected)
        guards |= IGW_CONSENT_IF_REVISIONMATCHES;
    if (st == IGW_CONSENT_REVOKED && prior_revision == expected + 1)
        guards |= IGW_CONSENT_IF_SAMEREVOKE;
    return guards;
}

static void on_revoke(void *arg, const PGresult *res, const char *err)
{
    cq *q = arg;
    igw_consent_result r = {.status = IGW_CONSENT_OK};
    if (!res || PQnfields(res) != REV_C__FIRST + C__N) {
        r.status = IGW_CONSENT_FAILED;
        r.err = err ? err : "unexpected result";
    } else if (PQntuples(res) == 0) {
        r.status = IGW_CONSENT_NOT_FOUND;
    } else {
        int st = igw_sm_state(&igw_sm_consent, PQgetvalue(res, 0, REV_C_STATE));
        uint32_t guards = st > 0 ? revoke_guards(st, i64(res, REV_C_REVISION), q->expected) : 0;
        bool stands = st > 0 && igw_consent_can_fire((igw_consent_state)st, IGW_CONSENT_ON_REVOKE, guards);
        bool updated = i64(res, REV_C_UPDATED) == 1;
        row_consent(res, REV_C__FIRST, &r.consent);
        if (!stands)
            r.status = IGW_CONSENT_CONFLICT;
        if (st <= 0 || updated != ((guards & IGW_CONSENT_IF_REVISIONMATCHES) != 0)) {
            /* The statement and the machine disagree: answer neither. */
            r.status = IGW_CONSENT_FAILED;
            r.err = "the revoke's statement and the consent machine disagree";
        }
    }
    q->cb(q->arg, &r);
    free(q);
}

int igw_consent_revoke(igw_db *db, int64_t enterprise_id, int64_t user_id, const char *consent_id,
                       int64_t expected_revision, igw_consent_cb cb, void *arg)
{
    cq *q = cq_new(cb, arg);
    if (!q)
        return -1;
    q->expected = expected_revision;
    char ent[24], user[24], exp[24];
    snprintf(ent, sizeof ent, "%" PRId64, enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, user_id);
    snprintf(exp, sizeof exp, "%" PRId64, expected_revision);
    const char *v[REV_NP] = {[REV_P_ENTERPRISE] = ent, [REV_P_USER] = user, [REV_P_ID] = consent_id,
                             [REV_P_EXPECTED] = exp};
    if (igw_db_exec(db, &st_revoke, v, NULL, NULL, on_revoke, q) != 0) {
        free(q);
        return -1;
    }
    return 0;
}

void igw_consent_to_api(const igw_consent *c, igw_Consent *out)
{
    *out = (igw_Consent){.has = IGW_Consent__REQUIRED,
                         .consentId = {c->consent_id, strlen(c->consent_id)},
                         .scope = IGW_ConsentScope_cameraAI,
                         .sourceSessionId = {c->source_session_id, strlen(c->source_session_id)},
                         .cameraId = {c->camera_id, strlen(c->camera_id)},
                         .trackId = {c->track_id, strlen(c->track_id)},
                         .mediaRevision = c->media_revision,
                         .expiresAt = c->expires_at,
                         .grantedAt = c->granted_at,
                         .revision = c->revision,
                         .revokedAt = c->revoked_at};
}
