/* state_sql_test.c - the interaction.state event PostgreSQL builds
 * (IGW_SQL_STATE_EVENTS, generated/igwd/state_sql.h) is the bytes the
 * generated C encoder writes for the same values: strings with quotes,
 * backslashes, control characters and non-ASCII, the optional fields absent
 * and present (a ringing event's inviteToken, cameraId and target object),
 * integers at their bounds; an expired endpoint gets none.
 *
 * usage: state_sql_test DSN (a throwaway server with the migrations
 * applied: outbox_test.sh). A plain blocking connection; every statement
 * inserts its event and delivery as igwd's would. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "event/outbox.h" /* IGW_OUTBOX_CHANNEL, for the macro */
#include "igwd/state_sql.h"
#include "jw.h"

#include "../check.h"

static PGconn *pg;

static const char *const stmt =
    "WITH upd AS (SELECT $1::text AS sid, $2::text AS ep, $3::bigint AS seq, $4::text AS state, "
    "                    $5::text AS playback, $6::bigint AS pos, $7::text AS reason, $9::text AS invite, "
    "                    $10::text AS camera, $11::text AS pid, $12::text AS dn, $13::bigint AS rev), "
    IGW_SQL_STATE_EVENTS("$8::text")
    "SELECT b.body, (SELECT count(*) FROM ev), (SELECT count(*) FROM dl), "
    "       (SELECT count(*) FROM ntf) FROM b";

typedef struct state {
    const char *sid, *ep;
    int64_t seq;
    const char *state, *playback; /* playback NULL: none */
    bool has_pos;
    int64_t pos;
    const char *reason; /* NULL: none */
    const char *invite, *camera, *pid, *dn; /* ringing; NULL: none */
    int64_t rev;                            /* established: the media generation; 0: none */
} state;

/* What the generated encoder writes for s. */
static char *encoded(const state *s, size_t *len)
{
    char token[256];
    snprintf(token, sizeof token, "%s.%" PRId64, s->sid, s->seq);
    int st = igw_SessionState_of(igw_str_of(s->state));
    igw_StateEvent ev = {.has = IGW_StateEvent__REQUIRED,
                         .msgToken = igw_str_of(token),
                         .method = IGW_StateMethod_interaction_state,
                         .sessionId = igw_str_of(s->sid),
                         .eventSeq = s->seq,
                         .data = {.has = IGW_StateData__REQUIRED, .state = (igw_SessionState)(st < 0 ? 0 : st)}};
    CHECK(st >= 0, "state %s", s->state);
    if (s->playback) {
        int pb = igw_PlaybackState_of(igw_str_of(s->playback));
        CHECK(pb >= 0, "playback %s", s->playback);
        ev.data.has |= IGW_StateData_playback;
        ev.data.playback = (igw_PlaybackState)(pb < 0 ? 0 : pb);
    }
    if (s->has_pos) {
        ev.data.has |= IGW_StateData_positionMs;
        ev.data.positionMs = s->pos;
    }
    if (s->reason) {
        ev.data.has |= IGW_StateData_reason;
        ev.data.reason = igw_str_of(s->reason);
    }
    if (s->invite) {
        ev.data.has |= IGW_StateData_inviteToken;
        ev.data.inviteToken = igw_str_of(s->invite);
    }
    if (s->camera) {
        ev.data.has |= IGW_StateData_cameraId;
        ev.data.cameraId = igw_str_of(s->camera);
    }
    if (s->rev) {
        ev.data.has |= IGW_StateData_mediaRevision;
        ev.data.mediaRevision = s->rev;
    }
    if (s->pid) {
        ev.data.has |= IGW_StateData_target;
        ev.data.target = (igw_Target){.has = IGW_Target__REQUIRED, .productID = igw_str_of(s->pid),
                                      .deviceName = igw_str_of(s->dn)};
    }
    igw_jw w;
    igw_jw_init(&w);
    igw_encode_StateEvent(&w, &ev);
    CHECK(!igw_jw_status(&w));
    char *out = strndup(w.buf, w.len);
    *len = w.len;
    igw_jw_free(&w);
    return out;
}

/* Runs the statement for s; the body PostgreSQL built (NULL: no event) and
 * how many events, deliveries and notifications it made. */
static char *built(const state *s, int n[3])
{
    static unsigned did_n;
    char seq[24], pos[24], did[32], rev[24];
    snprintf(seq, sizeof seq, "%" PRId64, s->seq);
    snprintf(pos, sizeof pos, "%" PRId64, s->pos);
    snprintf(did, sizeof did, "did-%u", ++did_n);
    snprintf(rev, sizeof rev, "%" PRId64, s->rev);
    const char *v[13] = {s->sid,    s->ep, seq,       s->state, s->playback, s->has_pos ? pos : NULL,
                         s->reason, did,   s->invite, s->camera, s->pid,     s->dn, s->rev ? rev : NULL};
    PGresult *r = PQexecParams(pg, stmt, 13, NULL, v, NULL, NULL, 0);
    char *body = NULL;
    n[0] = n[1] = n[2] = -1;
    if (!CHECK(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQerrorMessage(pg))) {
        PQclear(r);
        return NULL;
    }
    if (PQntuples(r) == 1) {
        body = strdup(PQgetvalue(r, 0, 0));
        for (int i = 0; i < 3; i++)
            n[i] = atoi(PQgetvalue(r, 0, i + 1));
    } else {
        n[0] = n[1] = n[2] = 0;
    }
    PQclear(r);
    return body;
}

/* The body stored for the delivery just made (events.body_text), or "". */
static void stored(char *out, size_t cap)
{
    PGresult *r = PQexec(pg, "SELECT e.body_text FROM deliveries d JOIN events e ON e.event_id = d.event_id "
                             "ORDER BY d.watermark DESC LIMIT 1");
    out[0] = '\0';
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static void same(const state *s, const char *what)
{
    size_t len = 0;
    char *want = encoded(s, &len);
    int n[3];
    char *got = built(s, n);
    CHECK(got && strlen(got) == len && memcmp(got, want, len) == 0, "%s:\n  sql %s\n  C   %s", what,
          got ? got : "(none)", want);
    CHECK(n[0] == 1 && n[1] == 1 && n[2] == 1, "%s: events %d deliveries %d notifications %d", what, n[0], n[1],
          n[2]);
    char text[4096];
    stored(text, sizeof text);
    CHECK(strcmp(text, want) == 0, "%s: stored %s", what, text);
    free(want);
    free(got);
}

static PGresult *exec_ok(const char *sql)
{
    PGresult *r = PQexec(pg, sql);
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", sql,
          PQerrorMessage(pg));
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: state_sql_test DSN\n");
        return 2;
    }
    pg = PQconnectdb(argv[1]);
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "state_sql_test: %s", PQerrorMessage(pg));
        return 1;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, hour = 3600 * 1000;
    char sql[512];
    PQclear(exec_ok("INSERT INTO enterprises (enterprise_id, name) VALUES (1, 'one')"));
    PQclear(exec_ok("INSERT INTO users (user_id, enterprise_id, name) VALUES (11, 1, 'u11')"));
    snprintf(sql, sizeof sql,
             "INSERT INTO endpoints (endpoint_id, enterprise_id, user_id, expires_at_ms) VALUES "
             "('ep1', 1, 11, %lld), ('epOld', 1, 11, %lld)",
             now + hour, now - hour);
    PQclear(exec_ok(sql));

    /* Identifiers (the session id, hence the token) admit quotes,
     * backslashes and non-ASCII; a reason anything but NUL. */
    const char *odd_sid = "s\"1\\\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    const char *odd_reason = "a \"quoted\" \\ reason/\b\f\n\r\t\x01\x1f\x7f \xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80";
    state cases[] = {
        {.sid = "s1", .ep = "ep1", .seq = 1, .state = "invited"},
        {.sid = "s1", .ep = "ep1", .seq = 2, .state = "established", .rev = 1},
        {.sid = "s1", .ep = "ep1", .seq = 3, .state = "established", .rev = INT64_C(9007199254740991)},
        {.sid = "s2", .ep = "ep1", .seq = 3, .state = "established", .playback = "loaded"},
        {.sid = "s2", .ep = "ep1", .seq = 4, .state = "established", .playback = "playing", .has_pos = true, .pos = 0},
        {.sid = "s2", .ep = "ep1", .seq = 5, .state = "established", .playback = "paused", .has_pos = true,
         .pos = INT64_C(9007199254740991)},
        {.sid = "s2", .ep = "ep1", .seq = 6, .state = "established", .has_pos = true, .pos = 12345},
        {.sid = "s3", .ep = "ep1", .seq = INT64_C(9007199254740991), .state = "ended", .reason = "userHangup"},
        {.sid = "s3", .ep = "ep1", .seq = 7, .state = "ended", .reason = odd_reason},
        {.sid = odd_sid, .ep = "ep1", .seq = 8, .state = "ended", .reason = odd_reason},
        {.sid = odd_sid, .ep = "ep1", .seq = 9, .state = "established", .playback = "ready", .has_pos = true,
         .pos = 1},
        {.sid = "s4", .ep = "ep1", .seq = 1, .state = "ringing", .invite = "tok-1", .camera = "cam-1",
         .pid = "camlamp01", .dn = "demo-cam-1"},
        {.sid = odd_sid, .ep = "ep1", .seq = 10, .state = "ringing", .invite = odd_sid, .camera = odd_sid,
         .pid = odd_sid, .dn = odd_sid},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[32];
        snprintf(what, sizeof what, "case %zu", i);
        same(&cases[i], what);
    }

    /* An expired endpoint: no event, no delivery, nobody notified. */
    state old = {.sid = "s9", .ep = "epOld", .seq = 1, .state = "invited"};
    int n[3];
    char *got = built(&old, n);
    CHECK(!got && n[0] == 0 && n[1] == 0 && n[2] == 0);
    free(got);

    PQfinish(pg);
    return check_summary("state_sql_test");
}
