/* ledger.c - see ledger.h. */
#include "consent/ledger.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "event/outbox.h"
#include "event/rights.h"
#include "machines.h"
#include "session/vision.h"

/* The consent states the SQL below names: states of igw_sm_consent (the
 * consent_state domain of consents.state); igw_consent_check_states()
 * proves it. */
#define ST_GRANTED "granted"
#define ST_REVOKED "revoked"

static const char *const used_states[] = {ST_GRANTED, ST_REVOKED};
/* The session state create's transaction names (a state of igw_sm_session). */
#define ST_ESTABLISHED "established"

const char *igw_consent_check_states(void)
{
    for (size_t i = 0; i < sizeof used_states / sizeof used_states[0]; i++)
        if (igw_sm_state(&igw_sm_consent, used_states[i]) <= 0) /* 0 is the pseudo-state none */
            return used_states[i];
    if (igw_sm_state(&igw_sm_session, ST_ESTABLISHED) <= 0)
        return ST_ESTABLISHED;
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

/* ---- create ------------------------------------------------------------------------ */

/* Below this an expiresAt reads as Unix seconds (10^11 ms is March 1973;
 * 10^11 s is the year 5138): refused, never converted. */
#define SECONDS_LIKE INT64_C(100000000000)

/* The token's consent, if the caller signed one with it. */
enum { PRIOR_P_ENTERPRISE, PRIOR_P_USER, PRIOR_P_TOKEN, PRIOR_NP };
static const igw_db_stmt st_prior = {
    "igw_consent_prior",
    "SELECT " CONSENT_COLS("c") " FROM consents c "
    "WHERE c.enterprise_id = $1::bigint AND c.user_id = $2::bigint AND c.msg_token = $3::text",
    PRIOR_NP};

/* The source row as it is now (the generation change isolated before the
 * transaction). */
enum { SRC_P_SESSION, SRC_P_ENTERPRISE, SRC_P_USER, SRC_NP };
enum { SRC_C_NODE, SRC_C_EPOCH, SRC_C_CONN, SRC_C_MODEL, SRC_C_DEADLINE, SRC_C_CAMERA, SRC_C_TRACK, SRC_C_CAP,
       SRC_C_REV, SRC_C_LIVE, SRC_C__N };
static const igw_db_stmt st_source = {
    "igw_consent_source",
    "SELECT v.owner_node, v.owner_epoch, v.connection_epoch, v.model_resource, v.deadline_ms, v.camera_id, "
    "       v.track_id, v.capability_revision, v.media_revision, v.live FROM vision_sources v "
    "WHERE v.session_id = $1::text AND v.enterprise_id = $2::bigint AND v.user_id = $3::bigint",
    SRC_NP};

/* The transaction: the aiVision source row locked and verified against the
 * authority, the session still established by that owner's epoch, then the
 * consent, unique for user + token, and the owner's notification. */
enum { NEW_P_ENTERPRISE, NEW_P_USER, NEW_P_TOKEN, NEW_P_ID, NEW_P_SESSION, NEW_P_CAMERA, NEW_P_TRACK, NEW_P_REV,
       NEW_P_NODE, NEW_P_EPOCH, NEW_P_CONN, NEW_P_MODEL, NEW_P_DEADLINE, NEW_P_CAP, NEW_P_AUTH_EXP, NEW_P_EXPIRES,
       NEW_NP };
enum { NEW_C_SOURCE, NEW_C_OK, NEW_C_NOTIFIED, NEW_C__FIRST };
static const igw_db_stmt st_create = {
    "igw_consent_create",
    "WITH src AS MATERIALIZED (SELECT v.* FROM vision_sources v WHERE v.session_id = $5::text "
    "    AND v.enterprise_id = $1::bigint AND v.user_id = $2::bigint FOR UPDATE), "
    "ok AS MATERIALIZED (SELECT 1 FROM src JOIN sessions s ON s.session_id = src.session_id "
    "    WHERE src.live AND src.owner_node = $9::text AND src.owner_epoch = $10::bigint "
    "      AND src.connection_epoch = $11::bigint AND src.model_resource = $12::text "
    "      AND src.deadline_ms = $13::bigint AND src.camera_id = $6::text AND src.track_id = $7::text "
    "      AND src.capability_revision = $14::bigint AND src.media_revision = $8::bigint "
    "      AND s.state = '" ST_ESTABLISHED "' AND s.owner_node = src.owner_node AND s.owner_epoch = src.owner_epoch "
    "      AND EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = src.owner_node AND n.epoch = src.owner_epoch) "
    "      AND $15::bigint > " IGW_SQL_NOW_MS " AND $16::bigint > " IGW_SQL_NOW_MS " "
    "      AND $16::bigint <= src.deadline_ms), "
    "ins AS (INSERT INTO consents (consent_id, enterprise_id, user_id, msg_token, scope, source_session_id, "
    "                              camera_id, track_id, media_revision, expires_at_ms, granted_at_ms, revision, "
    "                              revoked_at_ms, state) "
    "        SELECT $4::text, $1::bigint, $2::bigint, $3::text, 'cameraAI', $5::text, $6::text, $7::text, "
    "               $8::bigint, $16::bigint, " IGW_SQL_NOW_MS ", 1, 0, '" ST_GRANTED "' FROM ok "
    "        ON CONFLICT (enterprise_id, user_id, msg_token) DO NOTHING RETURNING *), "
    "ntf AS (SELECT pg_notify('" IGW_VISION_CHANNEL "', ins.source_session_id) FROM ins) "
    "SELECT (SELECT count(*) FROM src), (SELECT count(*) FROM ok), (SELECT count(*) FROM ntf), "
    CONSENT_COLS("ins") " FROM (SELECT 1) one LEFT JOIN ins ON true",
    NEW_NP};

typedef struct cnew {
    igw_db *db;
    igw_consent_owner owner;
    igw_consent_cb cb;
    void *arg;
    int64_t enterprise_id, user_id, media_revision, expires_at;
    char token[IGW_Token_MAX + 1];
    char session[IGW_SessionId_MAX + 1], camera[IGW_Ident_MAX + 1], track[IGW_Ident_MAX + 1];
    char consent_id[IGW_OUTBOX_ID_MAX + 1];
    igw_vision_authority a;
    bool raced; /* the transaction met a twin of the token: its consent is read once more */
} cnew;

static void create_done(cnew *q, igw_consent_status st, const char *err, const PGresult *res, int first, bool replay)
{
    igw_consent_result r = {.status = st, .err = err, .replay = replay};
    if (res)
        row_consent(res, first, &r.consent);
    q->cb(q->arg, &r);
    free(q);
}

static void on_authority(void *arg, const igw_vision_authority *a);

/* The same token answers only the same source and deadline. */
static void on_prior(void *arg, const PGresult *res, const char *err)
{
    cnew *q = arg;
    if (!res || PQnfields(res) != C__N) {
        create_done(q, IGW_CONSENT_FAILED, err ? err : "unexpected result", NULL, 0, false);
        return;
    }
    if (q->expires_at < SECONDS_LIKE) { /* whatever the token signed: never read as milliseconds */
        create_done(q, IGW_CONSENT_SECONDS, NULL, NULL, 0, false);
        return;
    }
    if (PQntuples(res) == 1) {
        igw_consent c;
        row_consent(res, 0, &c);
        bool same = strcmp(c.source_session_id, q->session) == 0 && strcmp(c.camera_id, q->camera) == 0 &&
                    strcmp(c.track_id, q->track) == 0 && c.media_revision == q->media_revision &&
                    c.expires_at == q->expires_at;
        create_done(q, same ? IGW_CONSENT_OK : IGW_CONSENT_TOKEN_TAKEN, NULL, same ? res : NULL, 0, same);
        return;
    }
    if (q->raced) { /* the twin's row cannot be gone: consents are never deleted */
        create_done(q, IGW_CONSENT_FAILED, "the token's consent vanished", NULL, 0, false);
        return;
    }
    if (q->expires_at <= igw_wall_ms()) {
        create_done(q, IGW_CONSENT_PAST, NULL, NULL, 0, false);
        return;
    }
    /* None: the live owner's authority first. */
    igw_vision_ask ask = {.enterprise_id = q->enterprise_id, .user_id = q->user_id, .session_id = q->session,
                          .camera_id = q->camera, .track_id = q->track, .media_revision = q->media_revision};
    if (!q->owner.engine || igw_engine_vision_authority(q->owner.engine, &ask, &q->owner.back, on_authority, q) != 0)
        create_done(q, IGW_CONSENT_NO_OWNER, NULL, NULL, 0, false);
}

static int prior_read(cnew *q)
{
    char ent[24], user[24];
    snprintf(ent, sizeof ent, "%" PRId64, q->enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, q->user_id);
    const char *v[PRIOR_NP] = {[PRIOR_P_ENTERPRISE] = ent, [PRIOR_P_USER] = user, [PRIOR_P_TOKEN] = q->token};
    return igw_db_exec(q->db, &st_prior, v, NULL, NULL, on_prior, q);
}

static igw_consent_status authority_refusal(igw_vision_status st)
{
    switch (st) {
    case IGW_VISION_OK: return IGW_CONSENT_OK;
    case IGW_VISION_UNKNOWN: return IGW_CONSENT_NO_SOURCE;
    case IGW_VISION_NOT_VISION: return IGW_CONSENT_NOT_VISION;
    case IGW_VISION_NOT_LIVE: return IGW_CONSENT_NOT_LIVE;
    case IGW_VISION_SELECTION: return IGW_CONSENT_SELECTION;
    case IGW_VISION_GENERATION: return IGW_CONSENT_GENERATION;
    case IGW_VISION_CAPABILITY: return IGW_CONSENT_CAPABILITY;
    case IGW_VISION_PRIVACY: return IGW_CONSENT_PRIVACY;
    case IGW_VISION_FAILED: break;
    }
    return IGW_CONSENT_NO_OWNER; /* the owner could not tell: never a success */
}

static void on_source(void *arg, const PGresult *res, const char *err);

static void on_authority(void *arg, const igw_vision_authority *a)
{
    cnew *q = arg;
    igw_consent_status st = authority_refusal(a->status);
    if (st != IGW_CONSENT_OK) {
        create_done(q, st, NULL, NULL, 0, false);
        return;
    }
    q->a = *a;
    if (q->expires_at > a->deadline_ms) {
        create_done(q, IGW_CONSENT_BEYOND, NULL, NULL, 0, false);
        return;
    }
    char ent[24], user[24];
    snprintf(ent, sizeof ent, "%" PRId64, q->enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, q->user_id);
    const char *v[SRC_NP] = {[SRC_P_SESSION] = q->session, [SRC_P_ENTERPRISE] = ent, [SRC_P_USER] = user};
    if (igw_db_exec(q->db, &st_source, v, NULL, NULL, on_source, q) != 0)
        create_done(q, IGW_CONSENT_FAILED, "busy", NULL, 0, false);
}

static int64_t col64(const PGresult *res, int c)
{
    return strtoll(PQgetvalue(res, 0, c), NULL, 10);
}

static void on_created(void *arg, const PGresult *res, const char *err);

/* The source row again, against the authority: a generation that moved in
 * between is refused here, before anything is locked. */
static void on_source(void *arg, const PGresult *res, const char *err)
{
    cnew *q = arg;
    if (!res || PQnfields(res) != SRC_C__N) {
        create_done(q, IGW_CONSENT_FAILED, err ? err : "unexpected result", NULL, 0, false);
        return;
    }
    const igw_vision_authority *a = &q->a;
    if (PQntuples(res) != 1 || !igw_db_true(res, 0, SRC_C_LIVE) ||
        strcmp(PQgetvalue(res, 0, SRC_C_NODE), a->owner_node) != 0 || col64(res, SRC_C_EPOCH) != a->owner_epoch ||
        col64(res, SRC_C_CONN) != a->connection_epoch || strcmp(PQgetvalue(res, 0, SRC_C_MODEL), a->model_resource) != 0 ||
        col64(res, SRC_C_DEADLINE) != a->deadline_ms || strcmp(PQgetvalue(res, 0, SRC_C_CAMERA), a->camera_id) != 0 ||
        strcmp(PQgetvalue(res, 0, SRC_C_TRACK), a->track_id) != 0 || col64(res, SRC_C_CAP) != a->capability_revision ||
        col64(res, SRC_C_REV) != a->media_revision) {
        create_done(q, IGW_CONSENT_GENERATION, NULL, NULL, 0, false);
        return;
    }
    if (igw_outbox_new_id(q->consent_id, sizeof q->consent_id) != 0) {
        create_done(q, IGW_CONSENT_FAILED, "no random id", NULL, 0, false);
        return;
    }
    char ent[24], user[24], rev[24], epoch[24], conn[24], deadline[24], cap[24], aexp[24], exp[24];
    snprintf(ent, sizeof ent, "%" PRId64, q->enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, q->user_id);
    snprintf(rev, sizeof rev, "%" PRId64, a->media_revision);
    snprintf(epoch, sizeof epoch, "%" PRId64, a->owner_epoch);
    snprintf(conn, sizeof conn, "%" PRId64, a->connection_epoch);
    snprintf(deadline, sizeof deadline, "%" PRId64, a->deadline_ms);
    snprintf(cap, sizeof cap, "%" PRId64, a->capability_revision);
    snprintf(aexp, sizeof aexp, "%" PRId64, a->expires_ms);
    snprintf(exp, sizeof exp, "%" PRId64, q->expires_at);
    const char *v[NEW_NP] = {[NEW_P_ENTERPRISE] = ent,  [NEW_P_USER] = user,
                             [NEW_P_TOKEN] = q->token,  [NEW_P_ID] = q->consent_id,
                             [NEW_P_SESSION] = a->session_id, [NEW_P_CAMERA] = a->camera_id,
                             [NEW_P_TRACK] = a->track_id, [NEW_P_REV] = rev,
                             [NEW_P_NODE] = a->owner_node, [NEW_P_EPOCH] = epoch,
                             [NEW_P_CONN] = conn,       [NEW_P_MODEL] = a->model_resource,
                             [NEW_P_DEADLINE] = deadline, [NEW_P_CAP] = cap,
                             [NEW_P_AUTH_EXP] = aexp,   [NEW_P_EXPIRES] = exp};
    if (igw_db_exec(q->db, &st_create, v, NULL, NULL, on_created, q) != 0)
        create_done(q, IGW_CONSENT_FAILED, "busy", NULL, 0, false);
}

static void on_created(void *arg, const PGresult *res, const char *err)
{
    cnew *q = arg;
    if (!res || PQnfields(res) != NEW_C__FIRST + C__N || PQntuples(res) != 1) {
        create_done(q, IGW_CONSENT_FAILED, err ? err : "unexpected result", NULL, 0, false);
        return;
    }
    if (!PQgetisnull(res, 0, NEW_C__FIRST + C_ID)) {
        create_done(q, IGW_CONSENT_OK, NULL, res, NEW_C__FIRST, false);
        return;
    }
    if (col64(res, NEW_C_OK) == 1) {
        /* Verified, not inserted: a twin with the token committed first. */
        q->raced = true;
        if (prior_read(q) != 0)
            create_done(q, IGW_CONSENT_FAILED, "busy", NULL, 0, false);
        return;
    }
    /* The row or the session moved since the authority, or the authority's
     * window closed before the lock: no success from old facts. */
    create_done(q, igw_wall_ms() >= q->a.expires_ms ? IGW_CONSENT_NO_OWNER : IGW_CONSENT_GENERATION, NULL, NULL, 0,
                false);
}

int igw_consent_create(igw_db *db, const igw_consent_owner *owner, const igw_consent_new *in, igw_consent_cb cb,
                       void *arg)
{
    cnew *q = calloc(1, sizeof *q);
    if (!q)
        return -1;
    *q = (cnew){.db = db, .owner = *owner, .cb = cb, .arg = arg, .enterprise_id = in->enterprise_id,
                .user_id = in->user_id, .media_revision = in->expected_media_revision, .expires_at = in->expires_at};
    snprintf(q->token, sizeof q->token, "%s", in->msg_token);
    snprintf(q->session, sizeof q->session, "%s", in->source_session_id);
    snprintf(q->camera, sizeof q->camera, "%s", in->camera_id);
    snprintf(q->track, sizeof q->track, "%s", in->track_id);
    /* The replay read comes first: a repeat of a signed consent needs no
     * owner, and its expiry may have passed since (on_prior). */
    if (prior_read(q) != 0) {
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
