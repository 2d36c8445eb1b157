/* outbox_test.c - the event outbox (src/igwd/outbox.c) against a real
 * PostgreSQL with the migrations applied (started by outbox_test.sh).
 *
 * usage: outbox_test DSN. The outbox runs on igw_db in an h2o loop; a plain
 * blocking connection seeds rows, inspects and back-dates them, and a third
 * one LISTENs on the delivery channel. The cases run in order on the rows
 * the ones before them left; each prints its name and outcome, then the
 * number of checks; exits 1 on any failure. */
#include "event/outbox.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <h2o/socket.h>

#include "../check.h"

/* An event a case emitted: what it sent, and what the outbox answered. */
typedef struct emitted {
    const char *token, *session;
    int64_t seq;
    const char *body;
    char id[72];
    int64_t event_id, watermark, expires;
} emitted;

/* The connections main opens for every case, and what a case leaves for
 * later ones (each case says which earlier ones it needs). */
typedef struct fixture {
    h2o_evloop_t *loop;
    igw_db *db, *db2;   /* the outbox's; db2 races db in test_replay_race_one_redelivery */
    PGconn *admin;      /* blocking: seeds, inspects and back-dates rows */
    PGconn *listener;   /* blocking: LISTENs on IGW_OUTBOX_CHANNEL */
    int64_t expA;       /* the live endpoints' expiry (test_seed) */
    emitted e1, e2, e3, e4, e5, e6; /* to epA (test_emit_six_events) */
    emitted e7;                     /* to epA2 (test_pull_ties_by_delivery_id) */
    emitted dB, dC, dExp;           /* to epB, epC, epA, dExp back-dated (test_ack_refuses_whole_batch) */
    emitted r10, r11;               /* results of t10, t11 (test_emit_expiry_cap_and_replay_expired) */
    char new4[72], new4b[72];       /* e4's first and second redeliveries (test_replay_*) */
    int64_t new4_wm;                /* the first one's watermark */
    int64_t sweep_now;              /* the sweeper's "now" (test_sweep_marks_and_deletes) */
} fixture;

/* One hour in ms: endpoint lifetimes and back-dating. */
static const int64_t hour = 3600 * 1000;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the admin connection ---- */

static void quiet(void *arg, const char *msg)
{
    (void)arg, (void)msg;
}

static bool admin_exec(fixture *f, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(f->admin, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "outbox_test: admin: %s: %s", sql, PQerrorMessage(f->admin));
    PQclear(r);
    return ok;
}

/* The first value of a one-row query as a long long (-1 on error or NULL). */
static long long admin_ll(fixture *f, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(f->admin, sql);
    long long v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    else if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fprintf(stderr, "outbox_test: admin: %s: %s", sql, PQerrorMessage(f->admin));
    PQclear(r);
    return v;
}

/* The first value of a one-row query as text into out ("" on error or NULL). */
static const char *admin_str(fixture *f, char *out, size_t cap, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(f->admin, sql);
    out[0] = '\0';
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    else if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fprintf(stderr, "outbox_test: admin: %s: %s", sql, PQerrorMessage(f->admin));
    PQclear(r);
    return out;
}

/* ---- notifications ---- */

typedef struct notes {
    int n;
    char payload[64][256]; /* a result's carries its delivery: longer ones are cut */
    bool other_channel;
} notes;

/* Collects notifications for up to wait_ms, returning early `settle_ms`
 * after the count reached `want` (0: wait the whole time). */
static notes collect_notes(fixture *f, int want, int wait_ms)
{
    notes ns = {0};
    int64_t end = mono_ms() + wait_ms, reached = 0;
    for (;;) {
        PQconsumeInput(f->listener);
        PGnotify *nf;
        while ((nf = PQnotifies(f->listener)) != NULL) {
            if (strcmp(nf->relname, IGW_OUTBOX_CHANNEL) != 0)
                ns.other_channel = true;
            if (ns.n < 64)
                snprintf(ns.payload[ns.n], sizeof ns.payload[ns.n], "%s", nf->extra);
            ns.n++;
            PQfreemem(nf);
        }
        int64_t now = mono_ms();
        if (want > 0 && ns.n >= want && !reached)
            reached = now;
        if (now >= end || (reached && now - reached >= 100))
            break;
        usleep(5000);
    }
    return ns;
}

/* Every payload is exactly the endpointId (no delivery carried). */
static bool all_payloads(const notes *ns, const char *ep)
{
    for (int i = 0; i < ns->n && i < 64; i++)
        if (strcmp(ns->payload[i], ep) != 0)
            return false;
    return !ns->other_channel;
}

/* ---- running outbox operations to completion ---- */

typedef struct got {
    int calls;
    igw_outbox_result r; /* pointers in it are cleared; copies below */
    char delivery_id[72], replaced[72], refused_id[72], err[256];
    size_t nitems;
    char ids[IGW_OUTBOX_BATCH_MAX][72];
    char *bodies[IGW_OUTBOX_BATCH_MAX];
    size_t lens[IGW_OUTBOX_BATCH_MAX];
} got;

static void copy_str(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
}

static void on_got(void *arg, const igw_outbox_result *r)
{
    got *g = arg;
    g->calls++;
    g->r = *r;
    copy_str(g->delivery_id, sizeof g->delivery_id, r->delivery_id);
    copy_str(g->replaced, sizeof g->replaced, r->replaced);
    copy_str(g->refused_id, sizeof g->refused_id, r->refused_id);
    copy_str(g->err, sizeof g->err, r->err);
    g->nitems = r->nitems;
    for (size_t i = 0; i < r->nitems && i < IGW_OUTBOX_BATCH_MAX; i++) {
        copy_str(g->ids[i], sizeof g->ids[i], r->items[i].delivery_id);
        g->bodies[i] = malloc(r->items[i].event_len + 1);
        memcpy(g->bodies[i], r->items[i].event, r->items[i].event_len);
        g->bodies[i][r->items[i].event_len] = '\0';
        g->lens[i] = r->items[i].event_len;
    }
    g->r.delivery_id = g->r.replaced = g->r.refused_id = g->r.err = NULL;
    g->r.items = NULL;
}

static void got_free(got *g)
{
    for (size_t i = 0; i < g->nitems && i < IGW_OUTBOX_BATCH_MAX; i++)
        free(g->bodies[i]);
    g->nitems = 0;
}

static void wait_for(fixture *f, got *g)
{
    int64_t end = mono_ms() + 10000;
    while (g->calls == 0 && mono_ms() < end)
        h2o_evloop_run(f->loop, 10);
    if (g->calls == 0)
        fprintf(stderr, "outbox_test: no callback within 10 s (%s)\n", igw_db_last_error(f->db));
}

static void wait_for2(fixture *f, got *a, got *b)
{
    int64_t end = mono_ms() + 10000;
    while ((a->calls == 0 || b->calls == 0) && mono_ms() < end)
        h2o_evloop_run(f->loop, 10);
}

static got g_emit(fixture *f, const igw_outbox_event *ev, int *rc)
{
    got g = {0};
    *rc = igw_outbox_emit(f->db, ev, on_got, &g);
    if (*rc == 0)
        wait_for(f, &g);
    return g;
}

static got g_emit_result(fixture *f, const igw_outbox_result_event *ev)
{
    got g = {0};
    if (igw_outbox_emit_result(f->db, ev, on_got, &g) == 0)
        wait_for(f, &g);
    return g;
}

static got g_pull(fixture *f, int64_t ent, int64_t user, const char *ep, int limit)
{
    got g = {0};
    if (igw_outbox_pull(f->db, ent, user, ep, limit, on_got, &g) == 0)
        wait_for(f, &g);
    return g;
}

static got g_ack(fixture *f, int64_t ent, int64_t user, const char *ep, const char *const *ids, size_t n)
{
    got g = {0};
    if (igw_outbox_ack(f->db, ent, user, ep, ids, n, on_got, &g) == 0)
        wait_for(f, &g);
    return g;
}

static got g_replay(fixture *f, const igw_outbox_command *cmd)
{
    got g = {0};
    if (igw_outbox_replay(f->db, cmd, on_got, &g) == 0)
        wait_for(f, &g);
    return g;
}

static got g_sweep(fixture *f, int64_t now, int64_t retention)
{
    got g = {0};
    if (igw_outbox_sweep(f->db, now, retention, on_got, &g) == 0)
        wait_for(f, &g);
    return g;
}

/* ---- fixtures ---- */

static bool emit_ok(fixture *f, const char *ep, emitted *e, int64_t expires_cap)
{
    igw_outbox_event ev = {.endpoint_id = ep,
                           .msg_token = e->token,
                           .session_id = e->session,
                           .event_seq = e->seq,
                           .body = e->body,
                           .body_len = strlen(e->body),
                           .expires_at_ms = expires_cap};
    int rc;
    got g = g_emit(f, &ev, &rc);
    bool ok = rc == 0 && g.calls == 1 && g.r.status == IGW_OUTBOX_OK;
    if (!ok)
        fprintf(stderr, "outbox_test: emit %s to %s: rc %d calls %d status %d err '%s'\n", e->token, ep, rc,
                g.calls, g.r.status, g.err);
    snprintf(e->id, sizeof e->id, "%s", g.delivery_id);
    e->event_id = g.r.event_id;
    e->watermark = g.r.watermark;
    e->expires = g.r.expires_at_ms;
    return ok;
}

static bool b64url_id(const char *s)
{
    if (strlen(s) != IGW_OUTBOX_ID_LEN)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_'))
            return false;
    return true;
}

/* The pulled ids equal `want` in order, with the matching bodies byte for byte. */
static bool pulled_as(const got *g, emitted *const *want, size_t n)
{
    if (g->calls != 1 || g->r.status != IGW_OUTBOX_OK || g->nitems != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(g->ids[i], want[i]->id) != 0 || g->lens[i] != strlen(want[i]->body) ||
            memcmp(g->bodies[i], want[i]->body, g->lens[i]) != 0)
            return false;
    return true;
}

static void print_pull(const char *what, const got *g)
{
    fprintf(stderr, "outbox_test: %s: status %d, %zu items:", what, g->r.status, g->nitems);
    for (size_t i = 0; i < g->nitems; i++)
        fprintf(stderr, " %s", g->ids[i]);
    fputc('\n', stderr);
}

static bool contains(const got *g, const char *id)
{
    for (size_t i = 0; i < g->nitems; i++)
        if (strcmp(g->ids[i], id) == 0)
            return true;
    return false;
}

static const unsigned char FP1[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                      17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const char FP1_HEX[] = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20";

static long long pending_or_acked(fixture *f, const char *id)
{
    return admin_ll(f, "SELECT count(*) FROM deliveries WHERE delivery_id = '%s' AND acked_at IS NOT NULL", id);
}

/* The stored commands the replays name (rows inserted by test_replay_pending_same). */
static const igw_outbox_command c1 = {1, 11, "epA", NULL, "interaction.open", "t1", FP1, sizeof FP1, 0};
static const igw_outbox_command c4 = {1, 11, "epA", "s1", "interaction.end", "t4", FP1, sizeof FP1, 0};
static const igw_outbox_command c10 = {1, 11, "epA", "s1", "interaction.end", "t10", FP1, sizeof FP1, 0};
static const igw_outbox_command c11 = {1, 11, "epA", "s1", "interaction.end", "t11", FP1, sizeof FP1, 0};

/* every delivery state is the schema's; new ids: base64url of IGW_OUTBOX_ID_LEN, distinct; a small buffer refused */
static void test_ids_and_states(fixture *f)
{
    (void)f;
    const char *bad_state = igw_outbox_check_states();
    CHECK(bad_state == NULL, "'%s' is not a delivery state", bad_state);
    enum { NID = 1000 };
    static char ids[NID][32];
    int shaped = 0, distinct = 1;
    for (int i = 0; i < NID; i++) {
        shaped += igw_outbox_new_id(ids[i], sizeof ids[i]) == 0 && b64url_id(ids[i]);
        for (int j = 0; j < i && distinct; j++)
            distinct = strcmp(ids[i], ids[j]) != 0;
    }
    CHECK(shaped == NID && distinct);
    char small[IGW_OUTBOX_ID_LEN];
    CHECK(igw_outbox_new_id(small, sizeof small) == -1);
}

/* the seed rows: two enterprises, three users, endpoints (epX expired 10 min ago, epOld 2 h ago) */
static void test_seed(fixture *f)
{
    int64_t now = wall_ms();
    f->expA = now + hour;
    CHECK(admin_exec(f, "INSERT INTO enterprises (enterprise_id, name) VALUES (1, 'one'), (2, 'two')"));
    CHECK(admin_exec(f, "INSERT INTO users (user_id, enterprise_id, name) VALUES (11, 1, 'u11'), (12, 1, 'u12'), "
                        "(21, 2, 'u21')"));
    CHECK(admin_exec(f, "INSERT INTO endpoints (endpoint_id, enterprise_id, user_id, expires_at_ms) VALUES "
                        "('epA', 1, 11, %lld), ('epA2', 1, 11, %lld), ('epB', 1, 12, %lld), ('epC', 2, 21, %lld), "
                        "('epX', 1, 11, %lld), ('epOld', 1, 11, %lld)",
                        (long long)f->expA, (long long)f->expA, (long long)f->expA, (long long)f->expA,
                        (long long)(now - 10 * 60 * 1000), (long long)(now - 2 * hour)));
}

/* refused emits (endpoint, token/session/seq not the body's, body, arguments) store nothing, notify nobody */
/* Needs test_seed; the event tables still empty. */
static void test_emit_refusals_store_nothing(fixture *f)
{
    const char *body = "{\"msgToken\":\"r1\",\"method\":\"interaction.result\",\"code\":200,"
                       "\"data\":{\"operation\":\"interaction.open\",\"state\":\"invited\"}}";
    igw_outbox_event ev = {.endpoint_id = "nope", .msg_token = "r1", .body = body, .body_len = strlen(body)};
    int rc;
    got g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.calls == 1 && g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT, "status %d '%s'", g.r.status,
          g.err);
    ev.endpoint_id = "epX";
    g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.calls == 1 && g.r.status == IGW_OUTBOX_ENDPOINT_EXPIRED, "status %d", g.r.status);
    ev.endpoint_id = "epA";
    ev.msg_token = "r2"; /* differs from the body's */
    g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.r.status == IGW_OUTBOX_BAD_EVENT, "status %d", g.r.status);
    ev.msg_token = "r1";
    ev.session_id = "s1"; /* the body has none */
    g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.r.status == IGW_OUTBOX_BAD_EVENT, "status %d", g.r.status);
    ev.session_id = NULL;
    ev.event_seq = 3; /* the body has none */
    g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.r.status == IGW_OUTBOX_BAD_EVENT, "status %d", g.r.status);
    ev.event_seq = 0;
    ev.body = "[1,2]";
    ev.body_len = 5;
    g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.r.status == IGW_OUTBOX_BAD_EVENT, "status %d", g.r.status);
    ev.body = "{\"x\":";
    ev.body_len = 5;
    g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.r.status == IGW_OUTBOX_ERROR && strncmp(g.err, "22P02 ", 6) == 0, "'%s'", g.err);
    ev.body_len = 0;
    CHECK(igw_outbox_emit(f->db, &ev, on_got, &g) == -1);
    ev.body = body;
    ev.body_len = strlen(body);
    ev.endpoint_id = "0123456789012345678901234567890123456789012345678901234567890123456789";
    CHECK(igw_outbox_emit(f->db, &ev, on_got, &g) == -1);
    ev.endpoint_id = NULL;
    CHECK(igw_outbox_emit(f->db, &ev, on_got, &g) == -1);
    ev.endpoint_id = "epA";
    CHECK(igw_outbox_emit(f->db, &ev, NULL, NULL) == -1);
    CHECK(admin_ll(f, "SELECT count(*) FROM events") == 0);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries") == 0);
    notes ns = collect_notes(f, 0, 200);
    CHECK(ns.n == 0, "%d notifications", ns.n);
}

/* six events to epA: one notification each (the endpointId), ids, rising watermarks, rows, the text kept */
/* Needs test_seed; no event emitted before. */
static void test_emit_six_events(fixture *f)
{
    f->e1 = (emitted){"t1", "s2", 0,
                      "{\"msgToken\":\"t1\",\"method\":\"interaction.result\",\"sessionId\":\"s2\",\"code\":200,"
                      "\"data\":{\"operation\":\"interaction.open\",\"state\":\"invited\"}}",
                      "", 0, 0, 0};
    f->e2 = (emitted){"t2", "s1", 1,
                      "{\"msgToken\":\"t2\",\"method\":\"interaction.state\",\"sessionId\":\"s1\",\"eventSeq\":1,"
                      "\"data\":{\"state\":\"invited\"}}",
                      "", 0, 0, 0};
    /* jsonb would reorder these keys, drop the exponent and the -0 and add
     * spaces: the stored text comes back as it went in. */
    f->e3 = (emitted){"t3", NULL, 0,
                      "{\"msgToken\":\"t3\",\"method\":\"interaction.result\",\"code\":200,"
                      "\"data\":{\"operation\":\"interaction.control\",\"state\":\"done\",\"result\":"
                      "{\"zz\":\"caf\xc3\xa9 \\\"q\\\" \\\\ \\u001f\",\"n\":1.5e+300,\"a\":-0,\"e\":[]}}}",
                      "", 0, 0, 0};
    f->e4 = (emitted){"t4", "s1", 0,
                      "{\"msgToken\":\"t4\",\"method\":\"interaction.result\",\"sessionId\":\"s1\",\"code\":200,"
                      "\"data\":{\"operation\":\"interaction.end\",\"state\":\"ended\"}}",
                      "", 0, 0, 0};
    f->e5 = (emitted){"t5", "s2", 2,
                      "{\"msgToken\":\"t5\",\"method\":\"interaction.state\",\"sessionId\":\"s2\",\"eventSeq\":2,"
                      "\"data\":{\"state\":\"ended\",\"reason\":\"userHangup\"}}",
                      "", 0, 0, 0};
    f->e6 = (emitted){"t6", "S0", 0,
                      "{\"msgToken\":\"t6\",\"method\":\"interaction.result\",\"sessionId\":\"S0\",\"code\":200,"
                      "\"data\":{\"operation\":\"interaction.subscribe\",\"state\":\"active\"}}",
                      "", 0, 0, 0};
    emitted *in_order[] = {&f->e1, &f->e2, &f->e3, &f->e4, &f->e5, &f->e6};
    int emitted_ok = 0;
    for (size_t i = 0; i < 6; i++)
        emitted_ok += emit_ok(f, "epA", in_order[i], 0);
    CHECK(emitted_ok == 6);
    notes ns = collect_notes(f, 6, 2000);
    CHECK(ns.n == 6 && all_payloads(&ns, "epA"), "%d notifications, first '%s'", ns.n, ns.payload[0]);
    int shaped = 0, rising = 0, same_exp = 0;
    for (size_t i = 0; i < 6; i++) {
        shaped += b64url_id(in_order[i]->id);
        rising += i == 0 || in_order[i]->watermark > in_order[i - 1]->watermark;
        same_exp += in_order[i]->expires == f->expA && in_order[i]->watermark == in_order[i]->event_id;
    }
    CHECK(shaped == 6 && rising == 6 && same_exp == 6);
    CHECK(admin_ll(f, "SELECT count(*) FROM events") == 6);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE state = 'pending' AND acked_at IS NULL") == 6);
    CHECK(admin_ll(f, "SELECT count(*) FROM events WHERE event_id = %lld AND event_seq = 2 AND session_id = 's2' "
                      "AND msg_token = 't5' AND body->'data'->>'reason' = 'userHangup'",
                      (long long)f->e5.event_id) == 1);
    CHECK(admin_ll(f, "SELECT count(*) FROM events WHERE event_id = %lld AND event_seq IS NULL "
                      "AND session_id IS NULL",
                      (long long)f->e3.event_id) == 1);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE delivery_id = '%s' AND session_id = ''", f->e3.id) == 1);
    char jb[512];
    admin_str(f, jb, sizeof jb, "SELECT body::text FROM events WHERE event_id = %lld", (long long)f->e3.event_id);
    CHECK(strcmp(jb, f->e3.body) != 0, "jsonb kept the text?");
}

/* pull returns e1..e6 by (sessionId, watermark), identical twice, limited, without changing any state */
/* Needs test_emit_six_events (and nothing else pending). */
static void test_pull_orders_by_session_and_watermark(fixture *f)
{
    /* '' < "S0" < "s1" < "s2" in bytes; by watermark within a session */
    emitted *want[] = {&f->e3, &f->e6, &f->e2, &f->e4, &f->e1, &f->e5};
    got p1 = g_pull(f, 1, 11, "epA", 32);
    CHECK(pulled_as(&p1, want, 6));
    if (!pulled_as(&p1, want, 6))
        print_pull("first pull", &p1);
    got p2 = g_pull(f, 1, 11, "epA", 32);
    CHECK(pulled_as(&p2, want, 6));
    int identical = 0;
    for (size_t i = 0; i < p1.nitems && i < p2.nitems; i++)
        identical += strcmp(p1.ids[i], p2.ids[i]) == 0 && p1.lens[i] == p2.lens[i] &&
                     memcmp(p1.bodies[i], p2.bodies[i], p1.lens[i]) == 0;
    CHECK(identical == 6);
    got_free(&p1);
    got_free(&p2);
    got p3 = g_pull(f, 1, 11, "epA", 2);
    CHECK(pulled_as(&p3, want, 2));
    got_free(&p3);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE state = 'pending' AND acked_at IS NULL") == 6,
          "pulling changed state");
}

/* a tie of (sessionId, watermark) is broken by deliveryId in byte order */
/* Needs test_seed. */
static void test_pull_ties_by_delivery_id(fixture *f)
{
    f->e7 = (emitted){"t7", NULL, 0,
                      "{\"msgToken\":\"t7\",\"method\":\"interaction.result\",\"code\":200,"
                      "\"data\":{\"operation\":\"device.action\",\"state\":\"accepted\"}}",
                      "", 0, 0, 0};
    CHECK(emit_ok(f, "epA2", &f->e7, 0));
    CHECK(admin_exec(f, "INSERT INTO deliveries (delivery_id, event_id, endpoint_id, session_id, watermark, state, "
                        "expires_at_ms) VALUES ('zz_tie', %lld, 'epA2', 'q', 5, 'pending', %lld), "
                        "('AA_tie', %lld, 'epA2', 'q', 5, 'pending', %lld), "
                        "('b_tie', %lld, 'epA2', 'q', 4, 'pending', %lld)",
                        (long long)f->e7.event_id, (long long)f->expA, (long long)f->e7.event_id, (long long)f->expA,
                        (long long)f->e7.event_id, (long long)f->expA));
    got g = g_pull(f, 1, 11, "epA2", 32);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.nitems == 4 && strcmp(g.ids[0], f->e7.id) == 0 &&
          strcmp(g.ids[1], "b_tie") == 0 && strcmp(g.ids[2], "AA_tie") == 0 && strcmp(g.ids[3], "zz_tie") == 0 &&
          g.lens[3] == strlen(f->e7.body) && memcmp(g.bodies[3], f->e7.body, g.lens[3]) == 0);
    if (g.nitems != 4)
        print_pull("epA2", &g);
    got_free(&g);
    (void)collect_notes(f, 1, 1000);
}

/* an emit with the caller's deliveryId: its retry, or another endpoint's use of a taken id, is a duplicate */
/* Needs test_emit_six_events (e1's id). */
static void test_emit_delivery_id_duplicate(fixture *f)
{
    const char *body = "{\"msgToken\":\"m1\",\"method\":\"interaction.result\",\"code\":200,"
                       "\"data\":{\"operation\":\"device.action\",\"state\":\"accepted\"}}";
    igw_outbox_event ev = {
        .endpoint_id = "epC", .msg_token = "m1", .body = body, .body_len = strlen(body), .delivery_id = "mine_1"};
    long long events0 = admin_ll(f, "SELECT count(*) FROM events");
    int rc;
    got g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.r.status == IGW_OUTBOX_OK && strcmp(g.delivery_id, "mine_1") == 0);
    g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.r.status == IGW_OUTBOX_DUPLICATE && strcmp(g.delivery_id, "mine_1") == 0,
          "status %d", g.r.status);
    ev.endpoint_id = "epA";
    ev.delivery_id = f->e1.id; /* whatever the endpoint, the id is taken */
    g = g_emit(f, &ev, &rc);
    CHECK(rc == 0 && g.r.status == IGW_OUTBOX_DUPLICATE && strcmp(g.delivery_id, f->e1.id) == 0);
    CHECK(admin_ll(f, "SELECT count(*) FROM events") == events0 + 1);
    notes ns = collect_notes(f, 1, 1000);
    CHECK(ns.n == 1 && all_payloads(&ns, "epC"), "%d notifications", ns.n);
    ev.delivery_id = "";
    CHECK(igw_outbox_emit(f->db, &ev, on_got, &g) == -1);
}

/* pull: foreign, unknown and expired endpoints refused; an empty list; limits and arguments refused */
/* Needs test_seed; nothing emitted to epB yet. */
static void test_pull_refusals_and_limits(fixture *f)
{
    got g = g_pull(f, 1, 12, "epA", 32); /* another user of the enterprise */
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT && g.nitems == 0, "status %d", g.r.status);
    g = g_pull(f, 2, 11, "epA", 32); /* another enterprise */
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT && g.nitems == 0);
    g = g_pull(f, 2, 21, "epA", 32);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT && g.nitems == 0);
    g = g_pull(f, 1, 11, "nope", 32);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT);
    g = g_pull(f, 1, 11, "epX", 32); /* own, expired */
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_ENDPOINT_EXPIRED, "status %d", g.r.status);
    g = g_pull(f, 1, 12, "epX", 32); /* someone else's expired one: unknown */
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT);
    g = g_pull(f, 1, 12, "epB", 32);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.nitems == 0, "status %d n %zu", g.r.status, g.nitems);
    got x = {0};
    CHECK(igw_outbox_pull(f->db, 1, 11, "epA", 0, on_got, &x) == -1);
    CHECK(igw_outbox_pull(f->db, 1, 11, "epA", 33, on_got, &x) == -1);
    CHECK(igw_outbox_pull(f->db, 1, 11, "", 1, on_got, &x) == -1);
    CHECK(igw_outbox_pull(f->db, 1, 11, NULL, 1, on_got, &x) == -1);
    h2o_evloop_run(f->loop, 0);
    CHECK(x.calls == 0);
}

/* an ack batch with any foreign delivery is refused whole, naming the first offender; nothing changes */
/* Needs test_emit_six_events, test_pull_ties_by_delivery_id (e7); nothing acknowledged yet. */
static void test_ack_refuses_whole_batch(fixture *f)
{
    f->dB = (emitted){"tb", NULL, 0,
                      "{\"msgToken\":\"tb\",\"method\":\"interaction.result\",\"code\":200,"
                      "\"data\":{\"operation\":\"device.action\",\"state\":\"accepted\"}}",
                      "", 0, 0, 0};
    f->dC = f->dB;
    f->dExp = f->dB;
    f->dC.token = "tc";
    f->dC.body = "{\"msgToken\":\"tc\",\"method\":\"interaction.result\",\"code\":200,"
                 "\"data\":{\"operation\":\"device.action\",\"state\":\"accepted\"}}";
    f->dExp.token = "tx";
    f->dExp.session = "x";
    f->dExp.body = "{\"msgToken\":\"tx\",\"method\":\"interaction.result\",\"sessionId\":\"x\",\"code\":200,"
                   "\"data\":{\"operation\":\"device.action\",\"state\":\"accepted\"}}";
    CHECK(emit_ok(f, "epB", &f->dB, 0) && emit_ok(f, "epC", &f->dC, 0) && emit_ok(f, "epA", &f->dExp, 0));
    CHECK(admin_exec(f, "UPDATE deliveries SET expires_at_ms = %lld WHERE delivery_id = '%s'",
                        (long long)(wall_ms() - 1000), f->dExp.id));
    CHECK(admin_exec(f, "INSERT INTO deliveries (delivery_id, event_id, endpoint_id, session_id, watermark, state, "
                        "expires_at_ms) VALUES ('dev_delivery', %lld, 'device:prod1/dev1', '', 1, 'pending', %lld)",
                        (long long)f->e1.event_id, (long long)f->expA));
    (void)collect_notes(f, 3, 1000);
    struct {
        const char *id;
        igw_outbox_refusal why;
        size_t at;
    } cases[] = {
        {f->dB.id, IGW_OUTBOX_REFUSAL_USER, 2},
        {f->dC.id, IGW_OUTBOX_REFUSAL_ENTERPRISE, 0},
        {f->e7.id, IGW_OUTBOX_REFUSAL_ENDPOINT, 1}, /* the same user's other endpoint */
        {"no_such_delivery", IGW_OUTBOX_REFUSAL_UNKNOWN, 2},
        {f->dExp.id, IGW_OUTBOX_REFUSAL_EXPIRED, 2},
        {"dev_delivery", IGW_OUTBOX_REFUSAL_DEVICE, 1},
    };
    int refused = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *ids[3] = {f->e3.id, f->e4.id, f->e1.id};
        ids[cases[i].at] = cases[i].id;
        got g = g_ack(f, 1, 11, "epA", ids, 3);
        bool ok = g.calls == 1 && g.r.status == IGW_OUTBOX_REFUSED && g.r.refusal == cases[i].why &&
                  g.r.refused_index == cases[i].at && strcmp(g.refused_id, cases[i].id) == 0;
        if (!ok)
            fprintf(stderr, "outbox_test: ack case %zu: status %d refusal %d at %zu id '%s' err '%s'\n", i,
                    g.r.status, g.r.refusal, g.r.refused_index, g.refused_id, g.err);
        refused += ok;
    }
    CHECK(refused == 6);
    /* the first offender in request order is reported */
    const char *two[4] = {f->e3.id, "no_such_delivery", f->dB.id, f->e4.id};
    got g = g_ack(f, 1, 11, "epA", two, 4);
    CHECK(g.r.status == IGW_OUTBOX_REFUSED && g.r.refusal == IGW_OUTBOX_REFUSAL_UNKNOWN && g.r.refused_index == 1);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE acked_at IS NOT NULL OR state <> 'pending'") == 0,
          "a refused batch changed something");
}

/* ack checks the caller's endpoint first; a delivery's owner acknowledges it on its own endpoint */
/* Needs test_ack_refuses_whole_batch (dB). */
static void test_ack_endpoint_first(fixture *f)
{
    got g;
    /* the caller's endpoint first */
    const char *own[1] = {f->e3.id};
    g = g_ack(f, 1, 12, "epA", own, 1);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT);
    g = g_ack(f, 2, 11, "epA", own, 1);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT);
    g = g_ack(f, 1, 11, "epX", own, 1);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_ENDPOINT_EXPIRED);
    /* the owner of dB acknowledges it; epA's acks are not touched */
    const char *b1[1] = {f->dB.id};
    g = g_ack(f, 1, 12, "epB", b1, 1);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.acknowledged == 1, "status %d ack %lld",
          g.r.status, (long long)g.r.acknowledged);
}

/* ack refuses duplicate, no, too many and too long ids before sending anything */
/* Needs test_emit_six_events (e3). */
static void test_ack_argument_refusals(fixture *f)
{
    const char *own[1] = {f->e3.id};
    /* arguments */
    got x = {0};
    const char *dup[2] = {f->e3.id, f->e3.id};
    const char *toolong[1] = {"0123456789012345678901234567890123456789012345678901234567890123456789"};
    const char *many[33];
    for (int i = 0; i < 33; i++)
        many[i] = f->e3.id;
    CHECK(igw_outbox_ack(f->db, 1, 11, "epA", dup, 2, on_got, &x) == -1);
    CHECK(igw_outbox_ack(f->db, 1, 11, "epA", own, 0, on_got, &x) == -1);
    CHECK(igw_outbox_ack(f->db, 1, 11, "epA", many, 33, on_got, &x) == -1);
    CHECK(igw_outbox_ack(f->db, 1, 11, "epA", toolong, 1, on_got, &x) == -1);
    h2o_evloop_run(f->loop, 0);
    CHECK(x.calls == 0);
}

/* ack succeeds, is idempotent, and counts the endpoint's acknowledged deliveries */
/* Needs the pull and ack cases before (epA: e1..e6 pending, none acknowledged). */
static void test_ack_success_idempotent(fixture *f)
{
    const char *ids[2] = {f->e3.id, f->e4.id};
    got g = g_ack(f, 1, 11, "epA", ids, 2);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.acknowledged == 2, "status %d ack %lld '%s'",
          g.r.status, (long long)g.r.acknowledged, g.err);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE delivery_id IN ('%s', '%s') AND state = 'acknowledged' "
                      "AND acked_at IS NOT NULL",
                      f->e3.id, f->e4.id) == 2);
    emitted *rest[] = {&f->e6, &f->e2, &f->e1, &f->e5};
    got p = g_pull(f, 1, 11, "epA", 32);
    CHECK(pulled_as(&p, rest, 4));
    got_free(&p);
    const char *again[1] = {f->e3.id};
    g = g_ack(f, 1, 11, "epA", again, 1);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.acknowledged == 2);
    const char *mixed[3] = {f->e4.id, f->e6.id, f->e3.id};
    g = g_ack(f, 1, 11, "epA", mixed, 3);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.acknowledged == 3, "ack %lld",
          (long long)g.r.acknowledged);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE endpoint_id = 'epA' AND acked_at IS NOT NULL") == 3);
    CHECK(pending_or_acked(f, f->e2.id) == 0 && pending_or_acked(f, f->e1.id) == 0);
}

/* ---- replay (rule 2) ---- */

/* a replay of a command whose result is pending: the same delivery, nothing new, no notification */
/* Needs test_ack_success_idempotent (e1 pending); inserts the commands later replays name. */
static void test_replay_pending_same(fixture *f)
{
    CHECK(admin_exec(f, "INSERT INTO commands (enterprise_id, endpoint_id, msg_token, user_id, method, session_id, "
                        "fingerprint, command) VALUES "
                        "(1, 'epA', 't1', 11, 'interaction.open', NULL, '\\x%s', '{}'), "
                        "(1, 'epA', 't4', 11, 'interaction.end', 's1', '\\x%s', '{}'), "
                        "(1, 'epA', 't9', 11, 'interaction.end', 's1', '\\x%s', '{}'), "
                        "(1, 'epA', 't10', 11, 'interaction.end', 's1', '\\x%s', '{}'), "
                        "(1, 'epA', 't11', 11, 'interaction.end', 's1', '\\x%s', '{}'), "
                        "(1, 'epOld', 'old1', 11, 'interaction.end', 's1', '\\x%s', '{}')",
                        FP1_HEX, FP1_HEX, FP1_HEX, FP1_HEX, FP1_HEX, FP1_HEX));
    long long before = admin_ll(f, "SELECT count(*) FROM deliveries");
    got g = g_replay(f, &c1); /* pending: the same delivery */
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.replay == IGW_OUTBOX_REPLAY_SAME &&
              strcmp(g.delivery_id, f->e1.id) == 0 && g.r.head_state == IGW_DELIVERY_PENDING &&
              g.r.event_id == f->e1.event_id && g.r.watermark == f->e1.watermark,
          "status %d replay %d id '%s' err '%s'", g.r.status, g.r.replay, g.delivery_id, g.err);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries") == before);
    notes ns = collect_notes(f, 0, 200);
    CHECK(ns.n == 0);
}

/* a replay differing in any field of the command's identity: no command, or an unknown endpoint */
/* Needs test_replay_pending_same (the commands). */
static void test_replay_identity_mismatch(fixture *f)
{
    got g;
    /* any field of the identity differs: no command */
    unsigned char fp2[32];
    memcpy(fp2, FP1, sizeof fp2);
    fp2[31] ^= 1;
    igw_outbox_command c = c1;
    c.fingerprint = fp2;
    g = g_replay(f, &c);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_NO_COMMAND, "status %d", g.r.status);
    c = c1;
    c.method = "interaction.end";
    g = g_replay(f, &c);
    CHECK(g.r.status == IGW_OUTBOX_NO_COMMAND);
    c = c1;
    c.session_id = "s2";
    g = g_replay(f, &c);
    CHECK(g.r.status == IGW_OUTBOX_NO_COMMAND);
    c = c1;
    c.msg_token = "t2";
    g = g_replay(f, &c);
    CHECK(g.r.status == IGW_OUTBOX_NO_COMMAND);
    c = c1;
    c.endpoint_id = "epA2"; /* the same user's other endpoint */
    g = g_replay(f, &c);
    CHECK(g.r.status == IGW_OUTBOX_NO_COMMAND);
    c = c1;
    c.user_id = 12; /* the endpoint is not this user's */
    g = g_replay(f, &c);
    CHECK(g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT);
    c = c1;
    c.enterprise_id = 2;
    g = g_replay(f, &c);
    CHECK(g.r.status == IGW_OUTBOX_UNKNOWN_ENDPOINT);
    c = c1;
    c.fingerprint_len = 0;
    CHECK(igw_outbox_replay(f->db, &c, on_got, &g) == -1);
}

/* a replay of an acknowledged result: a new delivery of the same event, notified, pulled in its place */
/* Needs test_ack_success_idempotent (e4 acknowledged), test_replay_pending_same. */
static void test_replay_acknowledged_redelivers(fixture *f)
{
    got g;
    notes ns;
    g = g_replay(f, &c4);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.replay == IGW_OUTBOX_REPLAY_NEW &&
              g.r.head_state == IGW_DELIVERY_ACKNOWLEDGED && strcmp(g.replaced, f->e4.id) == 0 &&
              strcmp(g.delivery_id, f->e4.id) != 0 && b64url_id(g.delivery_id) && g.r.event_id == f->e4.event_id &&
              g.r.expires_at_ms == f->e4.expires && g.r.watermark > f->dExp.watermark,
          "status %d replay %d '%s' err '%s'", g.r.status, g.r.replay, g.delivery_id, g.err);
    snprintf(f->new4, sizeof f->new4, "%s", g.delivery_id);
    f->new4_wm = g.r.watermark;
    ns = collect_notes(f, 1, 2000);
    CHECK(ns.n == 1 && all_payloads(&ns, "epA"), "%d notifications", ns.n);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE delivery_id = '%s' AND state = 'redelivered' "
                      "AND acked_at IS NOT NULL",
                      f->e4.id) == 1);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE delivery_id = '%s' AND state = 'pending' "
                      "AND acked_at IS NULL AND replaces = '%s' AND event_id = %lld AND session_id = 's1' "
                      "AND expires_at_ms = %lld AND watermark = %lld",
                      f->new4, f->e4.id, (long long)f->e4.event_id, (long long)f->e4.expires,
                      (long long)f->new4_wm) == 1);
    CHECK(admin_ll(f, "SELECT count(*) FROM events WHERE event_id = %lld", (long long)f->e4.event_id) == 1);
    emitted n4 = f->e4;
    snprintf(n4.id, sizeof n4.id, "%s", f->new4);
    emitted *now_pending[] = {&f->e2, &n4, &f->e1, &f->e5}; /* s1: e2 then the redelivery (higher watermark) */
    got p = g_pull(f, 1, 11, "epA", 32);
    CHECK(pulled_as(&p, now_pending, 4)); /* same body bytes under the new id */
    if (!pulled_as(&p, now_pending, 4))
        print_pull("after replay", &p);
    got_free(&p);
}

/* a late ack of the replaced id; a replay while pending gives that one; acknowledged again, a chained one */
/* Needs test_replay_acknowledged_redelivers (new4). */
static void test_replay_late_ack_and_chain(fixture *f)
{
    got g;
    const char *old[1] = {f->e4.id};
    g = g_ack(f, 1, 11, "epA", old, 1);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.acknowledged == 3);
    CHECK(pending_or_acked(f, f->new4) == 0);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE delivery_id = '%s' AND state = 'redelivered'", f->e4.id) ==
          1);

    /* replay again while the redelivery is pending: that one */
    g = g_replay(f, &c4);
    CHECK(g.r.status == IGW_OUTBOX_OK && g.r.replay == IGW_OUTBOX_REPLAY_SAME && strcmp(g.delivery_id, f->new4) == 0,
          "replay %d '%s'", g.r.replay, g.delivery_id);
    /* acknowledged again: another redelivery, chained */
    const char *n4ids[1] = {f->new4};
    g = g_ack(f, 1, 11, "epA", n4ids, 1);
    CHECK(g.r.status == IGW_OUTBOX_OK && g.r.acknowledged == 4, "ack %lld", (long long)g.r.acknowledged);
    g = g_replay(f, &c4);
    CHECK(g.r.status == IGW_OUTBOX_OK && g.r.replay == IGW_OUTBOX_REPLAY_NEW && strcmp(g.replaced, f->new4) == 0 &&
          strcmp(g.delivery_id, f->new4) != 0 && g.r.watermark > f->new4_wm && g.r.expires_at_ms == f->e4.expires);
    snprintf(f->new4b, sizeof f->new4b, "%s", g.delivery_id);
    (void)collect_notes(f, 1, 1000);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE event_id = %lld", (long long)f->e4.event_id) == 3);
}

/* two replays racing on two connections make exactly one redelivery */
/* Needs test_replay_late_ack_and_chain (new4b). */
static void test_replay_race_one_redelivery(fixture *f)
{
    got g;
    const char *nb[1] = {f->new4b};
    g = g_ack(f, 1, 11, "epA", nb, 1);
    CHECK(g.r.status == IGW_OUTBOX_OK && g.r.acknowledged == 5);
    got ra = {0}, rb = {0};
    CHECK(igw_outbox_replay(f->db, &c4, on_got, &ra) == 0 && igw_outbox_replay(f->db2, &c4, on_got, &rb) == 0);
    wait_for2(f, &ra, &rb);
    int news = (ra.r.replay == IGW_OUTBOX_REPLAY_NEW) + (rb.r.replay == IGW_OUTBOX_REPLAY_NEW);
    int others = (ra.r.replay == IGW_OUTBOX_REPLAY_SAME || ra.r.replay == IGW_OUTBOX_REPLAY_CONCURRENT) +
                 (rb.r.replay == IGW_OUTBOX_REPLAY_SAME || rb.r.replay == IGW_OUTBOX_REPLAY_CONCURRENT);
    CHECK(ra.calls == 1 && rb.calls == 1 && ra.r.status == IGW_OUTBOX_OK && rb.r.status == IGW_OUTBOX_OK &&
              news == 1 && others == 1,
          "replays %d/%d", ra.r.replay, rb.r.replay);
    printf("outbox_test: racing replays: %s and %s\n",
           ra.r.replay == IGW_OUTBOX_REPLAY_NEW ? "new" : ra.r.replay == IGW_OUTBOX_REPLAY_SAME ? "same" : "concurrent",
           rb.r.replay == IGW_OUTBOX_REPLAY_NEW ? "new" : rb.r.replay == IGW_OUTBOX_REPLAY_SAME ? "same" : "concurrent");
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE event_id = %lld", (long long)f->e4.event_id) == 4);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE event_id = %lld AND state = 'pending'",
                      (long long)f->e4.event_id) == 1);
    notes n2 = collect_notes(f, 1, 1000);
    CHECK(n2.n == 1, "%d notifications", n2.n);
}

/* a replay of a command without a result yet, or with only a state notice carrying its token: nothing */
/* Needs test_replay_pending_same (the commands). */
static void test_replay_no_result(fixture *f)
{
    /* no result yet: nothing */
    igw_outbox_command c9 = {1, 11, "epA", "s1", "interaction.end", "t9", FP1, sizeof FP1, 0};
    long long before = admin_ll(f, "SELECT count(*) FROM deliveries");
    got g = g_replay(f, &c9);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.replay == IGW_OUTBOX_REPLAY_NONE &&
          g.r.head_state == IGW_DELIVERY_NONE && g.delivery_id[0] == '\0');
    /* a state notice carrying the token is not the command's result */
    emitted s9 = {"t9", "s1", 7,
                  "{\"msgToken\":\"t9\",\"method\":\"interaction.state\",\"sessionId\":\"s1\",\"eventSeq\":7,"
                  "\"data\":{\"state\":\"established\"}}",
                  "", 0, 0, 0};
    CHECK(emit_ok(f, "epA", &s9, 0));
    g = g_replay(f, &c9);
    CHECK(g.r.status == IGW_OUTBOX_OK && g.r.replay == IGW_OUTBOX_REPLAY_NONE);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries") == before + 1);
    (void)collect_notes(f, 1, 1000);
}

/* a window (replay rule 1): within it the replay goes as always; once it
 * passed since the acceptance, WINDOW_PASSED and nothing redelivered. */
/* Needs test_replay_late_ack_and_chain (c4 accepted, its result delivered). */
static void test_replay_window(fixture *f)
{
    igw_outbox_command w = c4;
    w.window_ms = 3600000;
    got g = g_replay(f, &w);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK, "status %d", (int)g.r.status);
    long long before = admin_ll(f, "SELECT count(*) FROM deliveries");
    CHECK(admin_exec(f, "UPDATE commands SET accepted_at = now() - interval '2 seconds' WHERE msg_token = 't4'"));
    w.window_ms = 1000;
    g = g_replay(f, &w);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_WINDOW_PASSED, "status %d", (int)g.r.status);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries") == before);
    (void)collect_notes(f, 0, 200);
}

/* an emit's expiry cap shortens, never extends; an acknowledged, expired result: no redelivery, ack refused */
/* Needs test_replay_pending_same (the commands). */
static void test_emit_expiry_cap_and_replay_expired(fixture *f)
{
    f->r10 = (emitted){"t10", "s1", 0,
                       "{\"msgToken\":\"t10\",\"method\":\"interaction.result\",\"sessionId\":\"s1\",\"code\":200,"
                       "\"data\":{\"operation\":\"interaction.end\",\"state\":\"ended\"}}",
                       "", 0, 0, 0};
    f->r11 = (emitted){"t11", "s1", 0,
                       "{\"msgToken\":\"t11\",\"method\":\"interaction.result\",\"sessionId\":\"s1\",\"code\":200,"
                       "\"data\":{\"operation\":\"interaction.end\",\"state\":\"ended\"}}",
                       "", 0, 0, 0};
    /* an expiry cap earlier than the endpoint's; a later one does not extend it */
    int64_t cap = wall_ms() + 60 * 1000;
    CHECK(emit_ok(f, "epA", &f->r10, cap) && f->r10.expires == cap);
    CHECK(emit_ok(f, "epA", &f->r11, f->expA + hour) && f->r11.expires == f->expA);
    (void)collect_notes(f, 2, 1000);
    /* acknowledged, then expired (not yet swept): no new delivery */
    const char *ids[2] = {f->r10.id, f->r11.id};
    got g = g_ack(f, 1, 11, "epA", ids, 2);
    CHECK(g.r.status == IGW_OUTBOX_OK);
    CHECK(admin_exec(f, "UPDATE deliveries SET expires_at_ms = %lld WHERE delivery_id = '%s'",
                        (long long)(wall_ms() - 1000), f->r10.id));
    long long before = admin_ll(f, "SELECT count(*) FROM deliveries");
    g = g_replay(f, &c10);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.replay == IGW_OUTBOX_REPLAY_EXPIRED &&
              g.r.head_state == IGW_DELIVERY_ACKNOWLEDGED,
          "replay %d", g.r.replay);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries") == before);
    notes ns = collect_notes(f, 0, 200);
    CHECK(ns.n == 0);
    /* acking an expired delivery, even an acknowledged one, refuses */
    const char *x[1] = {f->r10.id};
    g = g_ack(f, 1, 11, "epA", x, 1);
    CHECK(g.r.status == IGW_OUTBOX_REFUSED && g.r.refusal == IGW_OUTBOX_REFUSAL_EXPIRED);
}

/* ---- the sweeper ---- */

/* the sweeper marks expired deliveries and deletes what is past retention (endpoints with their rows) */
/* Needs every case before: the counts are of the rows they left. */
static void test_sweep_marks_and_deletes(fixture *f)
{
    f->sweep_now = wall_ms();
    int64_t N = f->sweep_now, R = IGW_OUTBOX_RETENTION_MS;
    /* past retention: epOld (with two deliveries and a command), r11's
     * delivery (its event has no other), the device delivery (its event
     * e1 keeps e1's own delivery) */
    CHECK(admin_exec(f, "INSERT INTO events (msg_token, body, body_text) VALUES "
                        "('old1', '{\"a\":1}', '{\"a\":1}'), ('old2', '{\"a\":2}', '{\"a\":2}')"));
    CHECK(admin_exec(f, "INSERT INTO deliveries (delivery_id, event_id, endpoint_id, watermark, state, expires_at_ms, "
                        "acked_at) SELECT 'old_' || msg_token, event_id, 'epOld', event_id, "
                        "CASE msg_token WHEN 'old1' THEN 'acknowledged' ELSE 'pending' END, %lld, "
                        "CASE msg_token WHEN 'old1' THEN now() END FROM events WHERE msg_token LIKE 'old_'",
                        (long long)(N - 2 * hour)));
    CHECK(admin_exec(f, "UPDATE deliveries SET expires_at_ms = %lld WHERE delivery_id IN ('%s', 'dev_delivery')",
                        (long long)(N - 2 * hour), f->r11.id));
    /* epOld's device command goes with it; epA's stays */
    CHECK(admin_exec(f, "INSERT INTO device_commands (product_id, device_name, device_token, enterprise_id, "
                        "endpoint_id, msg_token, method, deadline_ms, outcome) VALUES "
                        "('p1', 'd1', 'sweep-old', 1, 'epOld', 'old1', 'device.action', 1, 'timeout'), "
                        "('p1', 'd1', 'sweep-live', 1, 'epA', 't1', 'device.action', 1, 'timeout')"));
    /* within retention: epX's delivery (to be marked expired), dExp, r10 */
    CHECK(admin_exec(f, "INSERT INTO deliveries (delivery_id, event_id, endpoint_id, watermark, state, expires_at_ms) "
                        "VALUES ('x_pending', %lld, 'epX', 1, 'pending', %lld)",
                        (long long)f->e1.event_id, (long long)(N - 10 * 60 * 1000)));
    long long events0 = admin_ll(f, "SELECT count(*) FROM events");
    long long live0 = admin_ll(f, "SELECT count(*) FROM deliveries WHERE expires_at_ms > %lld", (long long)N);

    got g = g_sweep(f, N, R);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK, "status %d '%s'", g.r.status, g.err);
    CHECK(g.r.marked_expired == 3 && g.r.deliveries_deleted == 4 && g.r.events_deleted == 3 &&
              g.r.endpoints_deleted == 1 && g.r.commands_deleted == 1 && !g.r.more,
          "marked %lld, deleted %lld deliveries %lld events %lld endpoints %lld commands",
          (long long)g.r.marked_expired, (long long)g.r.deliveries_deleted, (long long)g.r.events_deleted,
          (long long)g.r.endpoints_deleted, (long long)g.r.commands_deleted);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE state = 'expired'") == 3);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE state = 'expired' AND delivery_id IN "
                      "('x_pending', '%s', '%s')",
                      f->dExp.id, f->r10.id) == 3);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE delivery_id = '%s' AND acked_at IS NOT NULL", f->r10.id) ==
          1);
    CHECK(admin_ll(f, "SELECT count(*) FROM events") == events0 - 3);
    CHECK(admin_ll(f, "SELECT count(*) FROM events WHERE event_id = %lld", (long long)f->e1.event_id) == 1);
    CHECK(admin_ll(f, "SELECT count(*) FROM endpoints WHERE endpoint_id IN ('epOld', 'epX')") == 1);
    CHECK(admin_ll(f, "SELECT count(*) FROM commands WHERE endpoint_id = 'epOld'") == 0);
    CHECK(admin_ll(f, "SELECT count(*) FROM device_commands WHERE device_token = 'sweep-live'") == 1 &&
          admin_ll(f, "SELECT count(*) FROM device_commands WHERE device_token = 'sweep-old'") == 0);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries WHERE expires_at_ms > %lld", (long long)N) == live0);
    g = g_sweep(f, N, R); /* nothing left to do */
    CHECK(g.r.status == IGW_OUTBOX_OK && g.r.marked_expired == 0 && g.r.deliveries_deleted == 0 &&
          g.r.events_deleted == 0 && g.r.endpoints_deleted == 0 && g.r.commands_deleted == 0);
    got x = {0};
    CHECK(igw_outbox_sweep(f->db, N, -1, on_got, &x) == -1);
}

/* after the sweep: expired stays expired, swept is gone (replay and ack), the rest pulls; no notification */
/* Needs test_sweep_marks_and_deletes. */
static void test_after_sweep(fixture *f)
{
    got g;
    g = g_replay(f, &c10);
    CHECK(g.r.status == IGW_OUTBOX_OK && g.r.replay == IGW_OUTBOX_REPLAY_EXPIRED &&
          g.r.head_state == IGW_DELIVERY_EXPIRED);
    long long before = admin_ll(f, "SELECT count(*) FROM deliveries");
    g = g_replay(f, &c11);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK && g.r.replay == IGW_OUTBOX_REPLAY_NONE, "replay %d",
          g.r.replay);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries") == before);
    const char *ids[1] = {f->dExp.id};
    g = g_ack(f, 1, 11, "epA", ids, 1);
    CHECK(g.r.status == IGW_OUTBOX_REFUSED && g.r.refusal == IGW_OUTBOX_REFUSAL_EXPIRED);
    ids[0] = f->r11.id;
    g = g_ack(f, 1, 11, "epA", ids, 1);
    CHECK(g.r.status == IGW_OUTBOX_REFUSED && g.r.refusal == IGW_OUTBOX_REFUSAL_UNKNOWN);
    ids[0] = f->e1.id;
    g = g_ack(f, 1, 11, "epA", ids, 1); /* 7 before (r11 was acked, then swept: it still counts) + e1 */
    CHECK(g.r.status == IGW_OUTBOX_OK && g.r.acknowledged == 8, "ack %lld", (long long)g.r.acknowledged);
    got p = g_pull(f, 1, 11, "epA", 32);
    CHECK(p.r.status == IGW_OUTBOX_OK && p.nitems == 4 && !contains(&p, f->e1.id) && contains(&p, f->e2.id) &&
          contains(&p, f->e5.id));
    got_free(&p);
    notes ns = collect_notes(f, 0, 200);
    CHECK(ns.n == 0, "the sweeper notified");
}

/* long after everything expired, the sweeper empties the ledger (foreign keys hold) */
/* Needs test_after_sweep (five endpoints left, all expired by then). */
static void test_sweep_empties_ledger(fixture *f)
{
    int64_t N = f->sweep_now, R = IGW_OUTBOX_RETENTION_MS;
    got g;
    g = g_sweep(f, N + 3 * hour, R);
    CHECK(g.r.status == IGW_OUTBOX_OK && g.r.endpoints_deleted == 5, "status %d '%s' endpoints %lld", g.r.status,
          g.err, (long long)g.r.endpoints_deleted);
    CHECK(admin_ll(f, "SELECT count(*) FROM deliveries") == 0 && admin_ll(f, "SELECT count(*) FROM events") == 0 &&
          admin_ll(f, "SELECT count(*) FROM endpoints") == 0 && admin_ll(f, "SELECT count(*) FROM commands") == 0);
}

/* ---- a command's result ---- */

/* a command's result: its notification carries endpointId, watermark, deliveryId and the body */
/* Needs test_seed (the user of epR). */
static void test_result_notify_carries_delivery(fixture *f)
{
    CHECK(admin_exec(f, "INSERT INTO endpoints (endpoint_id, enterprise_id, user_id, expires_at_ms) VALUES "
                        "('epR', 1, 11, %lld)",
                        (long long)(wall_ms() + hour)));
    const char *body = "{\"msgToken\":\"c1\",\"method\":\"interaction.result\",\"code\":200,"
                       "\"data\":{\"operation\":\"device.propertyControl\",\"state\":\"succeeded\"}}";
    igw_outbox_result_event ev = {.endpoint_id = "epR", .msg_token = "c1", .body = body, .delivery_id = "resC1",
                                  .product_id = "P1", .device_name = "d1", .device_token = "k1",
                                  .outcome = "replied"};
    got g = g_emit_result(f, &ev);
    CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK, "status %d '%s'", g.r.status, g.err);
    long long wm = admin_ll(f, "SELECT watermark FROM deliveries WHERE delivery_id = 'resC1'");
    char want[256];
    snprintf(want, sizeof want, "epR\n%lld\nresC1\n%s", wm, body);
    notes ns = collect_notes(f, 1, 2000);
    CHECK(wm > 0 && ns.n == 1 && strcmp(ns.payload[0], want) == 0, "%d notifications, '%s'", ns.n,
          ns.payload[0]);
}

/* a result too large for a NOTIFY: the notification is the endpointId alone */
/* Needs test_result_notify_carries_delivery (epR). */
static void test_result_large_body_notifies_endpoint(fixture *f)
{
    igw_outbox_result_event ev;
    got g;
    notes ns;
    size_t big = 7700;
    char *large = malloc(big + 256);
    CHECK(large != NULL);
    if (large) {
        int n = snprintf(large, big + 256,
                         "{\"msgToken\":\"c2\",\"method\":\"interaction.result\",\"code\":200,\"data\":"
                         "{\"operation\":\"device.action\",\"state\":\"succeeded\",\"output\":\"");
        memset(large + n, 'x', big);
        snprintf(large + n + big, 256 - (size_t)n, "\"}}");
        ev = (igw_outbox_result_event){.endpoint_id = "epR", .msg_token = "c2", .body = large,
                                       .delivery_id = "resC2", .product_id = "P1", .device_name = "d1",
                                       .device_token = "k2", .outcome = "replied"};
        g = g_emit_result(f, &ev);
        CHECK(g.calls == 1 && g.r.status == IGW_OUTBOX_OK, "status %d '%s'", g.r.status, g.err);
        ns = collect_notes(f, 1, 2000);
        CHECK(ns.n == 1 && all_payloads(&ns, "epR"), "%d notifications, '%.40s'", ns.n, ns.payload[0]);
        free(large);
    }
}

/* In this order: each case works on the rows the cases before it left. */
static const struct {
    const char *name;
    void (*fn)(fixture *);
} cases[] = {
    CHECK_CASE(test_ids_and_states),
    CHECK_CASE(test_seed),
    CHECK_CASE(test_emit_refusals_store_nothing),
    CHECK_CASE(test_emit_six_events),
    CHECK_CASE(test_pull_orders_by_session_and_watermark),
    CHECK_CASE(test_pull_ties_by_delivery_id),
    CHECK_CASE(test_emit_delivery_id_duplicate),
    CHECK_CASE(test_pull_refusals_and_limits),
    CHECK_CASE(test_ack_refuses_whole_batch),
    CHECK_CASE(test_ack_endpoint_first),
    CHECK_CASE(test_ack_argument_refusals),
    CHECK_CASE(test_ack_success_idempotent),
    CHECK_CASE(test_replay_pending_same),
    CHECK_CASE(test_replay_identity_mismatch),
    CHECK_CASE(test_replay_acknowledged_redelivers),
    CHECK_CASE(test_replay_late_ack_and_chain),
    CHECK_CASE(test_replay_race_one_redelivery),
    CHECK_CASE(test_replay_no_result),
    CHECK_CASE(test_replay_window),
    CHECK_CASE(test_emit_expiry_cap_and_replay_expired),
    CHECK_CASE(test_sweep_marks_and_deletes),
    CHECK_CASE(test_after_sweep),
    CHECK_CASE(test_sweep_empties_ledger),
    CHECK_CASE(test_result_notify_carries_delivery),
    CHECK_CASE(test_result_large_body_notifies_endpoint),
};

int main(int argc, char **argv)
{
    fixture f = {0};
    if (argc != 2) {
        fprintf(stderr, "usage: outbox_test DSN\n");
        return 2;
    }
    const char *dsn = argv[1];
    f.loop = h2o_evloop_create();
    f.admin = PQconnectdb(dsn);
    f.listener = PQconnectdb(dsn);
    if (PQstatus(f.admin) != CONNECTION_OK || PQstatus(f.listener) != CONNECTION_OK) {
        fprintf(stderr, "outbox_test: connections: %s%s", PQerrorMessage(f.admin), PQerrorMessage(f.listener));
        return 1;
    }
    PQsetNoticeProcessor(f.admin, quiet, NULL);
    PGresult *lr = PQexec(f.listener, "LISTEN " IGW_OUTBOX_CHANNEL);
    CHECK(PQresultStatus(lr) == PGRES_COMMAND_OK);
    PQclear(lr);
    char err[256] = "";
    f.db = igw_db_create(f.loop, dsn, err, sizeof err);
    f.db2 = igw_db_create(f.loop, dsn, err, sizeof err);
    CHECK(f.db != NULL && f.db2 != NULL, "%s", err);
    if (!f.db || !f.db2)
        return 1;

    CHECK_RUN(cases, &f);

    igw_db_destroy(f.db);
    igw_db_destroy(f.db2);
    h2o_evloop_run(f.loop, 0); /* h2o frees closed sockets on the next turn */
    h2o_evloop_destroy(f.loop);
    PQfinish(f.admin);
    PQfinish(f.listener);
    return check_summary("outbox_test");
}
