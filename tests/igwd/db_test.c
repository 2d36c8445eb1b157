/* db_test.c - igw_db against a real PostgreSQL (started by db_test.sh).
 *
 * usage: db_test DSN, with IGW_DBTEST_STOP / IGW_DBTEST_START holding shell
 * commands that stop and start that server (run with system(); the loop is
 * ours, so blocking here is fine). A second, plain blocking connection
 * checks the table and terminates igw_db's backend. The cases run in
 * order, each printing its name and outcome, then the number of checks;
 * exits 1 on any failure. */
#include "clock.h"
#include "core/db.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <h2o/socket.h>

#include "../check.h"

typedef struct outcome {
    int calls, order;
    bool ok;
    char err[256];
    char val[64]; /* first column of the first row, if any */
} outcome;
static int completed;

/* What main sets up for every case, and what a case leaves for later ones
 * (each case says which earlier ones it needs). */
typedef struct fixture {
    h2o_evloop_t *loop;
    PGconn *admin;                    /* blocking: checks the table, terminates backends */
    const char *stop_cmd, *start_cmd; /* IGW_DBTEST_STOP / _START */
    const char *freeze, *thaw;        /* IGW_DBTEST_FREEZE / _THAW */
    const char *dsn;
    igw_db *db;                       /* most cases' connection, until test_destroy_in_flight */
    outcome o_pid;                    /* its first backend's pid (test_queued_before_connected) */
} fixture;

static void record(void *arg, const PGresult *res, const char *err)
{
    outcome *o = arg;
    o->calls++;
    o->order = completed++;
    o->ok = res != NULL && err == NULL;
    snprintf(o->err, sizeof o->err, "%s", err ? err : "");
    if (res && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0 && PQnfields(res) > 0)
        snprintf(o->val, sizeof o->val, "%s", PQgetvalue(res, 0, 0));
}

static void never(void *arg, const PGresult *res, const char *err)
{
    (void)res, (void)err;
    ++*(int *)arg;
}

static void quiet(void *arg, const char *msg)
{
    (void)arg, (void)msg;
}

static bool all_called(const outcome *o, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (o[i].calls == 0)
            return false;
    return true;
}

/* Runs the loop until every outcome was called or the timeout. */
static bool run_until_called(fixture *f, const outcome *o, size_t n, int timeout_ms)
{
    int64_t end = igw_clock_ms() + timeout_ms;
    while (!all_called(o, n) && igw_clock_ms() < end)
        h2o_evloop_run(f->loop, 10);
    return all_called(o, n);
}

static void run_for(fixture *f, int ms)
{
    int64_t end = igw_clock_ms() + ms;
    while (igw_clock_ms() < end)
        h2o_evloop_run(f->loop, 10);
}

static bool run_until_connected(fixture *f, igw_db *db, bool want, int timeout_ms)
{
    int64_t end = igw_clock_ms() + timeout_ms;
    while (igw_db_connected(db) != want && igw_clock_ms() < end)
        h2o_evloop_run(f->loop, 10);
    return igw_db_connected(db) == want;
}

/* A blocking query on the admin connection; its first value as a long (-1 on error). */
static long admin_long(fixture *f, const char *sql)
{
    PGresult *r = PQexec(f->admin, sql);
    long v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    else if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fprintf(stderr, "db_test: admin: %s: %s", sql, PQerrorMessage(f->admin));
    PQclear(r);
    return v;
}

static const igw_db_stmt st_ins = {"t_ins", "INSERT INTO dbtest(id, v) VALUES ($1, $2)", 2};
static const igw_db_stmt st_ins2 = {"t_ins2", "INSERT INTO dbtest(id, v) VALUES ($1::int, $2)", 2};
static const igw_db_stmt st_bad = {"t_bad", "INSERT INTO no_such_table VALUES ($1)", 1};
static const igw_db_stmt st_pid = {"t_pid", "SELECT pg_backend_pid()", 0};
static const igw_db_stmt st_sync = {"t_sync", "SELECT current_setting('synchronous_commit')", 0};
static const igw_db_stmt st_plans = {"t_plans", "SELECT current_setting('plan_cache_mode')", 0};
static const igw_db_stmt st_nprep = {"t_nprep", "SELECT count(*) FROM pg_prepared_statements", 0};
static const igw_db_stmt st_sleep = {"t_sleep", "SELECT pg_sleep($1::float8)", 1};
static const igw_db_stmt st_plus1 = {"t_plus1", "SELECT $1::int4 + 1", 1};
static const igw_db_stmt st_notify = {"t_notify", "SELECT pg_notify('dbtest_chan', $1)", 1};
static const igw_db_stmt st_isnull = {"t_isnull", "SELECT $1::text IS NULL", 1};
static const igw_db_stmt st_array = {"t_array", "SELECT array_length($1::text[], 1) || '|' || ($1::text[])[2]", 1};

static int exec_ins(igw_db *db, const igw_db_stmt *st, int id, outcome *o)
{
    char idbuf[16], vbuf[32];
    snprintf(idbuf, sizeof idbuf, "%d", id);
    snprintf(vbuf, sizeof vbuf, "row-%d", id);
    const char *vals[2] = {idbuf, vbuf};
    int rc = igw_db_exec(db, st, vals, NULL, NULL, record, o);
    memset(idbuf, 'x', sizeof idbuf - 1); /* the values must have been copied */
    memset(vbuf, 'x', sizeof vbuf - 1);
    return rc;
}

static int exec0(igw_db *db, const igw_db_stmt *st, outcome *o)
{
    return igw_db_exec(db, st, NULL, NULL, NULL, record, o);
}

static int exec1(igw_db *db, const igw_db_stmt *st, const char *v, outcome *o)
{
    const char *vals[1] = {v};
    return igw_db_exec(db, st, vals, NULL, NULL, record, o);
}

/* A callback that submits the next query of a chain from inside itself. */
typedef struct chain {
    igw_db *db;
    int left, ok;
} chain;
static void chain_cb(void *arg, const PGresult *res, const char *err)
{
    chain *c = arg;
    (void)err;
    c->ok += res != NULL;
    if (--c->left > 0 && igw_db_exec(c->db, &st_pid, NULL, NULL, NULL, chain_cb, c) != 0)
        c->left = -1000;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* a bad DSN is refused with libpq's reason, which never carries a password */
static void test_create_refuses_bad_dsn(fixture *f)
{
    char err[256] = "";
    CHECK(igw_db_create(f->loop, "no_such_option=1", err, sizeof err) == NULL);
    CHECK(strstr(err, "no_such_option") != NULL, "err '%s'", err);
    /* libpq quotes the DSN in its reasons; a password never comes back. */
    CHECK(igw_db_create(f->loop, "password=pw1 s3cr3t-fragment", err, sizeof err) == NULL);
    CHECK(strstr(err, "database DSN: missing ") && !strstr(err, "s3cr3t"), "err '%s'", err);
    CHECK(igw_db_create(f->loop, "postgresql://u:s3cr3t-pw@[::1", err, sizeof err) == NULL);
    CHECK(strstr(err, "database DSN: ") && !strstr(err, "s3cr3t"), "err '%s'", err);
}

/* queries submitted before the connection is up are queued, then answered in order; the session settings */
/* Needs main's f->db, new. */
static void test_queued_before_connected(fixture *f)
{
    f->o_pid = (outcome){0};
    outcome o_sync = {0}, o_plans = {0};
    CHECK(exec0(f->db, &st_pid, &f->o_pid) == 0);
    CHECK(exec0(f->db, &st_sync, &o_sync) == 0);
    CHECK(!igw_db_connected(f->db));
    CHECK(run_until_called(f, &f->o_pid, 1, 10000) && run_until_called(f, &o_sync, 1, 1000), "%s",
          igw_db_last_error(f->db));
    CHECK(f->o_pid.ok && atoi(f->o_pid.val) > 0, "pid '%s' err '%s'", f->o_pid.val, f->o_pid.err);
    CHECK(o_sync.ok && strcmp(o_sync.val, "on") == 0, "synchronous_commit '%s' (server default is off)", o_sync.val);
    CHECK(f->o_pid.order < o_sync.order);
    CHECK(exec0(f->db, &st_plans, &o_plans) == 0 && run_until_called(f, &o_plans, 1, 1000));
    CHECK(o_plans.ok && strcmp(o_plans.val, "force_generic_plan") == 0, "plan_cache_mode '%s'", o_plans.val);
    CHECK(igw_db_connected(f->db));
}

/* 1000 inserts submitted in one go are pipelined, answered in order, once; the stats */
/* Needs test_queued_before_connected (connected). */
static void test_pipelined_inserts(fixture *f)
{
    enum { N = 1000 };
    static outcome o_ins[N];
    igw_db_stats s0, s1;
    igw_db_stats_get(f->db, &s0);
    int base = completed;
    int rejected = 0;
    for (int i = 0; i < N; i++)
        rejected += exec_ins(f->db, &st_ins, i, &o_ins[i]) != 0;
    CHECK(rejected == 0);
    int64_t t0 = igw_clock_ms();
    uint64_t max_inflight = 0;
    while (!all_called(o_ins, N) && igw_clock_ms() - t0 < 30000) {
        h2o_evloop_run(f->loop, 10);
        igw_db_stats_get(f->db, &s1);
        if (s1.in_flight > max_inflight)
            max_inflight = s1.in_flight;
    }
    int64_t took = igw_clock_ms() - t0;
    int ok = 0, in_order = 0, once = 0;
    for (int i = 0; i < N; i++) {
        ok += o_ins[i].ok;
        in_order += o_ins[i].order == base + i;
        once += o_ins[i].calls == 1;
    }
    CHECK(ok == N, "%d of %d ok; first err '%s'", ok, N, o_ins[0].err);
    CHECK(in_order == N, "%d in order", in_order);
    CHECK(once == N);
    CHECK(max_inflight > 100, "at most %llu in flight: not pipelined", (unsigned long long)max_inflight);
    CHECK(admin_long(f, "SELECT count(*) FROM dbtest WHERE id < 1000") == N);
    CHECK(admin_long(f, "SELECT sum(id) FROM dbtest WHERE v = 'row-' || id") == (long)N * (N - 1) / 2);
    igw_db_stats_get(f->db, &s1);
    CHECK(s1.queries_ok - s0.queries_ok == N);
    CHECK(s1.conn.rtt_count - s0.conn.rtt_count == N);
    uint64_t bsum = 0;
    for (size_t i = 0; i <= IGW_CONN_RTT_NBOUNDS; i++)
        bsum += s1.conn.rtt_buckets[i];
    CHECK(bsum == s1.conn.rtt_count && s1.conn.rtt_sum_us > 0);
    CHECK(s1.queued == 0 && s1.in_flight == 0 && s1.conn.connected);
    printf("db_test: %d pipelined inserts in %lld ms (max %llu in flight, mean round trip %llu us)\n", N,
           (long long)took, (unsigned long long)max_inflight,
           (unsigned long long)((s1.conn.rtt_sum_us - s0.conn.rtt_sum_us) / N));
}

/* each statement was prepared once on this connection */
/* Needs exactly the statements of the cases before (pid, sync, plans, ins). */
static void test_prepared_once(fixture *f)
{
    outcome o_nprep = {0};
    CHECK(exec0(f->db, &st_nprep, &o_nprep) == 0);
    CHECK(run_until_called(f, &o_nprep, 1, 5000) && o_nprep.ok);
    CHECK(strcmp(o_nprep.val, "5") == 0, "prepared statements: %s", o_nprep.val); /* pid, sync, plans, ins, nprep */
}

/* a failing statement (duplicate key, no such table, at prepare or first use) fails only itself */
/* Needs test_pipelined_inserts (ids 0..999), test_queued_before_connected (the backend's pid). */
static void test_failing_statement_fails_alone(fixture *f)
{
    outcome o_mix[8] = {{0}};
    CHECK(exec_ins(f->db, &st_ins, 2000, &o_mix[0]) == 0);
    CHECK(exec_ins(f->db, &st_ins, 0, &o_mix[1]) == 0);     /* duplicate key */
    CHECK(exec_ins(f->db, &st_ins, 2001, &o_mix[2]) == 0);
    CHECK(exec1(f->db, &st_bad, "1", &o_mix[3]) == 0);     /* fails at prepare */
    CHECK(exec_ins(f->db, &st_ins2, 1, &o_mix[4]) == 0);    /* first use of a statement fails */
    CHECK(exec_ins(f->db, &st_ins2, 2002, &o_mix[5]) == 0); /* ... and it still works */
    CHECK(exec0(f->db, &st_pid, &o_mix[6]) == 0);
    CHECK(run_until_called(f, o_mix, 7, 5000));
    CHECK(exec1(f->db, &st_bad, "2", &o_mix[7]) == 0); /* prepared again, fails the same way */
    CHECK(run_until_called(f, o_mix, 8, 5000));
    CHECK(o_mix[0].ok && o_mix[2].ok && o_mix[5].ok && o_mix[6].ok, "'%s' '%s' '%s' '%s'", o_mix[0].err,
          o_mix[2].err, o_mix[5].err, o_mix[6].err);
    CHECK(!o_mix[1].ok && starts(o_mix[1].err, "23505 "), "'%s'", o_mix[1].err);
    CHECK(!o_mix[3].ok && starts(o_mix[3].err, "42P01 "), "'%s'", o_mix[3].err);
    CHECK(!o_mix[4].ok && starts(o_mix[4].err, "23505 "), "'%s'", o_mix[4].err);
    CHECK(!o_mix[7].ok && starts(o_mix[7].err, "42P01 "), "'%s'", o_mix[7].err);
    bool mix_order = true;
    for (int i = 1; i < 8; i++)
        mix_order &= o_mix[i].order == o_mix[i - 1].order + 1;
    CHECK(mix_order);
    CHECK(strcmp(o_mix[6].val, f->o_pid.val) == 0, "same connection");
    CHECK(admin_long(f, "SELECT count(*) FROM dbtest WHERE id IN (2000, 2001, 2002)") == 3);
}

/* binary and NULL parameters; a callback submitting the next query */
static void test_binary_null_params_and_chain(fixture *f)
{
    uint32_t be = htonl(41);
    const char *bv[1] = {(const char *)&be};
    int blen[1] = {4}, bfmt[1] = {1};
    outcome o_bin = {0}, o_null = {0};
    CHECK(igw_db_exec(f->db, &st_plus1, bv, blen, bfmt, record, &o_bin) == 0);
    be = htonl(1000);
    CHECK(exec1(f->db, &st_isnull, NULL, &o_null) == 0);
    chain ch = {f->db, 3, 0};
    CHECK(igw_db_exec(f->db, &st_pid, NULL, NULL, NULL, chain_cb, &ch) == 0);
    CHECK(run_until_called(f, &o_null, 1, 5000));
    run_for(f, 100);
    CHECK(o_bin.ok && strcmp(o_bin.val, "42") == 0, "'%s' '%s'", o_bin.val, o_bin.err);
    CHECK(o_null.ok && strcmp(o_null.val, "t") == 0, "'%s' '%s'", o_null.val, o_null.err);
    CHECK(ch.left == 0 && ch.ok == 3, "chain left %d ok %d", ch.left, ch.ok);
}

/* igw_db_text_array: PostgreSQL reads back every element as written,
 * quotes, backslashes, commas and braces included; too small a buffer
 * writes nothing usable. */
static void test_text_array(fixture *f)
{
    const char *items[3] = {"a", "b\"c\\d,{e}", "x y"};
    char lit[64];
    CHECK(igw_db_text_array(lit, sizeof lit, items, 3) == strlen(lit));
    CHECK(igw_db_text_array(lit, 10, items, 3) == 0);
    CHECK(igw_db_text_array(lit, sizeof lit, items, 3) > 0);
    outcome o = {0};
    CHECK(exec1(f->db, &st_array, lit, &o) == 0);
    CHECK(run_until_called(f, &o, 1, 5000));
    CHECK(o.ok && strcmp(o.val, "3|b\"c\\d,{e}") == 0, "'%s' '%s' from %s", o.val, o.err, lit);
}

/* more than the socket buffers hold: libpq pushes back, sending resumes */
static void test_large_values_push_back(fixture *f)
{
    enum { B = 64, BIG = 256 * 1024 };
    static outcome o_big[B];
    char *big = malloc(BIG + 1);
    CHECK(big != NULL);
    if (big) {
        for (int i = 0; i < B; i++) {
            char idbuf[16];
            snprintf(idbuf, sizeof idbuf, "%d", 6000 + i);
            memset(big, 'a' + i % 26, BIG);
            big[BIG] = '\0';
            const char *vals[2] = {idbuf, big};
            CHECK(igw_db_exec(f->db, &st_ins, vals, NULL, NULL, record, &o_big[i]) == 0);
        }
        free(big);
        CHECK(run_until_called(f, o_big, B, 30000));
        int big_ok = 0;
        for (int i = 0; i < B; i++)
            big_ok += o_big[i].ok && (i == 0 || o_big[i].order == o_big[i - 1].order + 1);
        CHECK(big_ok == B, "%d ok; '%s'", big_ok, o_big[0].err);
        CHECK(admin_long(f, "SELECT count(*) FROM dbtest WHERE id >= 6000 AND length(v) = 262144 "
                            "AND v = repeat(chr(97 + (id - 6000) % 26), 262144)") == B);
    }
}

/* A batched statement with a twin: a batch of one row runs the twin (its
 * values as scalars), a batch of several the array form; a statement keeps
 * the twin it was first queued with. */
static const igw_db_stmt st_rows = {
    "t_rows", "SELECT 'many:' || v FROM unnest($1::text[]) WITH ORDINALITY AS u(v, ord) ORDER BY ord", 1};
static const igw_db_stmt st_rows_one = {"t_rows_one", "SELECT 'one:' || $1::text", 1};
static const igw_db_stmt st_rows_two = {"t_rows_two", "SELECT $1::text, $2::text", 2};

static void record_row(void *arg, const PGresult *res, int row, const char *err)
{
    outcome *o = arg;
    o->calls++;
    o->ok = res != NULL && err == NULL;
    snprintf(o->err, sizeof o->err, "%s", err ? err : "");
    if (o->ok)
        snprintf(o->val, sizeof o->val, "%s", PQgetvalue(res, row, 0));
}

static void test_row_twin(fixture *f)
{
    outcome alone = {0}, three[3] = {{0}};
    const char *a[1] = {"a"};
    CHECK(igw_db_exec_row(f->db, &st_rows, &st_rows_one, a, record_row, &alone) == 0);
    CHECK(run_until_called(f, &alone, 1, 5000) && alone.ok, "%s", alone.err);
    CHECK(strcmp(alone.val, "one:a") == 0, "a batch of one: %s", alone.val);
    const char *v[3][1] = {{"x"}, {"y\"q\""}, {NULL}};
    for (int i = 0; i < 3; i++)
        CHECK(igw_db_exec_row(f->db, &st_rows, &st_rows_one, v[i], record_row, &three[i]) == 0);
    CHECK(run_until_called(f, three, 3, 5000));
    CHECK(three[0].ok && strcmp(three[0].val, "many:x") == 0, "%s %s", three[0].val, three[0].err);
    CHECK(three[1].ok && strcmp(three[1].val, "many:y\"q\"") == 0, "%s %s", three[1].val, three[1].err);
    CHECK(three[2].ok && strcmp(three[2].val, "") == 0, "NULL row: '%s' %s", three[2].val, three[2].err);
    outcome refused = {0};
    CHECK(igw_db_exec_row(f->db, &st_rows, NULL, a, record_row, &refused) == -1);           /* another twin */
    CHECK(igw_db_exec_row(f->db, &st_sleep, &st_rows_two, a, record_row, &refused) == -1); /* its arity */
    run_for(f, 50);
    CHECK(refused.calls == 0);
}


/* the backend is terminated: in-flight queries fail, are not retried; a new backend */
/* Needs test_queued_before_connected (the backend's pid), one connect so far. */
static void test_backend_terminated(fixture *f)
{
    igw_db_stats s0, s1;
    igw_db_stats_get(f->db, &s0);
    outcome o_term[3] = {{0}};
    CHECK(exec1(f->db, &st_sleep, "30", &o_term[0]) == 0);
    CHECK(exec_ins(f->db, &st_ins, 3000, &o_term[1]) == 0);
    CHECK(exec_ins(f->db, &st_ins, 3001, &o_term[2]) == 0);
    run_for(f, 300);
    igw_db_stats_get(f->db, &s1);
    CHECK(s1.in_flight == 3 && !all_called(o_term, 1), "in flight %llu", (unsigned long long)s1.in_flight);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%s)::int", f->o_pid.val);
    CHECK(admin_long(f, sql) == 1);
    CHECK(run_until_called(f, o_term, 3, 10000));
    CHECK(!o_term[0].ok && (starts(o_term[0].err, "57P01 ") || starts(o_term[0].err, "connection lost")), "'%s'",
          o_term[0].err);
    CHECK(!o_term[1].ok && starts(o_term[1].err, "connection lost"), "'%s'", o_term[1].err);
    CHECK(!o_term[2].ok && starts(o_term[2].err, "connection lost"), "'%s'", o_term[2].err);
    printf("db_test: after pg_terminate_backend: '%s' / '%s'\n", o_term[0].err, o_term[1].err);
    outcome o_after[2] = {{0}};
    CHECK(exec_ins(f->db, &st_ins, 3002, &o_after[0]) == 0);
    CHECK(exec0(f->db, &st_pid, &o_after[1]) == 0);
    CHECK(run_until_called(f, o_after, 2, 10000));
    CHECK(o_after[0].ok && o_after[1].ok, "'%s' '%s'", o_after[0].err, o_after[1].err);
    CHECK(strcmp(o_after[1].val, f->o_pid.val) != 0, "a new backend");
    CHECK(admin_long(f, "SELECT count(*) FROM dbtest WHERE id IN (3000, 3001)") == 0);
    CHECK(admin_long(f, "SELECT count(*) FROM dbtest WHERE id = 3002") == 1);
    igw_db_stats_get(f->db, &s1);
    CHECK(s1.conn.lost - s0.conn.lost == 1);
    CHECK(s1.conn.connects - s0.conn.connects == 1);
    CHECK(s1.conn.connects == 2);
}

/* the server stops: queries queue, and go through once it is back */
static void test_server_stop_queues(fixture *f)
{
    igw_db_stats s0, s1;
    if (!f->stop_cmd || !f->start_cmd) {
        check(false, __FILE__, __LINE__, "IGW_DBTEST_STOP and IGW_DBTEST_START are set", NULL);
    } else {
        igw_db_stats_get(f->db, &s0);
        CHECK(system(f->stop_cmd) == 0, "%s", f->stop_cmd);
        CHECK(run_until_connected(f, f->db, false, 10000));
        enum { M = 10 };
        outcome o_down[M] = {{0}};
        for (int i = 0; i < M; i++)
            CHECK(exec_ins(f->db, &st_ins, 4000 + i, &o_down[i]) == 0);
        run_for(f, 500);
        int early = 0;
        for (int i = 0; i < M; i++)
            early += o_down[i].calls;
        CHECK(early == 0, "%d answered while the server is down", early);
        igw_db_stats_get(f->db, &s1);
        CHECK(s1.queued == M && s1.conn.connect_failures > s0.conn.connect_failures && !s1.conn.connected);
        printf("db_test: while stopped: %s\n", igw_db_last_error(f->db));
        CHECK(system(f->start_cmd) == 0, "%s", f->start_cmd);
        CHECK(run_until_called(f, o_down, M, 20000), "%s", igw_db_last_error(f->db));
        int down_ok = 0, down_order = 0;
        for (int i = 0; i < M; i++) {
            down_ok += o_down[i].ok;
            down_order += i == 0 || o_down[i].order == o_down[i - 1].order + 1;
        }
        CHECK(down_ok == M, "%d ok; '%s'", down_ok, o_down[0].err);
        CHECK(down_order == M);
        PQreset(f->admin);
        CHECK(PQstatus(f->admin) == CONNECTION_OK);
        CHECK(admin_long(f, "SELECT count(*) FROM dbtest WHERE id BETWEEN 4000 AND 4009") == M);
        outcome o_sync2 = {0};
        CHECK(exec0(f->db, &st_sync, &o_sync2) == 0);
        CHECK(run_until_called(f, &o_sync2, 1, 5000) && strcmp(o_sync2.val, "on") == 0, "'%s'", o_sync2.val);
    }
}

/* a frozen server: the deadline fails the query in flight (outcome unknown) and one waiting (not sent); then back */
static void test_frozen_server_deadline(fixture *f)
{
    if (!f->freeze || !f->thaw) {
        check(false, __FILE__, __LINE__, "IGW_DBTEST_FREEZE and IGW_DBTEST_THAW are set", NULL);
    } else {
        igw_db_set_deadline(f->db, 1000);
        outcome o_warm = {0};
        CHECK(exec0(f->db, &st_pid, &o_warm) == 0);
        CHECK(run_until_called(f, &o_warm, 1, 5000) && o_warm.ok, "'%s'", o_warm.err);
        CHECK(system(f->freeze) == 0, "%s", f->freeze);
        outcome o_frozen = {0}, o_later = {0};
        int64_t tf = igw_clock_ms();
        CHECK(exec_ins(f->db, &st_ins, 4100, &o_frozen) == 0);
        CHECK(run_until_called(f, &o_frozen, 1, 5000), "a frozen server's query got no answer at all");
        int64_t took = igw_clock_ms() - tf;
        CHECK(!o_frozen.ok && starts(o_frozen.err, "connection lost") && strstr(o_frozen.err, "no answer within 1000 ms") &&
                  igw_db_outcome_unknown(o_frozen.err),
              "'%s'", o_frozen.err);
        CHECK(took >= 900 && took < 2500, "failed after %lld ms (deadline 1000 ms)", (long long)took);
        /* Reconnecting to a frozen server: a new query waits, then fails as not sent. */
        tf = igw_clock_ms();
        CHECK(exec_ins(f->db, &st_ins, 4101, &o_later) == 0);
        CHECK(run_until_called(f, &o_later, 1, 5000), "a query waiting for a frozen server got no answer at all");
        took = igw_clock_ms() - tf;
        CHECK(!o_later.ok && igw_db_not_sent(o_later.err) && strstr(o_later.err, "did not answer within 1000 ms"),
              "'%s'", o_later.err);
        CHECK(took >= 900 && took < 2500, "failed after %lld ms (deadline 1000 ms)", (long long)took);
        printf("db_test: frozen server: '%s' / '%s'\n", o_frozen.err, o_later.err);
        CHECK(system(f->thaw) == 0, "%s", f->thaw);
        outcome o_thawed = {0};
        CHECK(exec0(f->db, &st_pid, &o_thawed) == 0);
        CHECK(run_until_called(f, &o_thawed, 1, 15000) && o_thawed.ok, "after the thaw: '%s'", o_thawed.err);
        igw_db_set_deadline(f->db, 0);
    }
}

/* destroy with queries in flight (outcome unknown) and queued (not sent): each fails "shutting down", in order */
/* Needs f->db, connected; destroys it. */
static void test_destroy_in_flight(fixture *f)
{
    igw_db_stats s1;
    outcome o_end[6] = {{0}};
    CHECK(exec1(f->db, &st_sleep, "0.5", &o_end[0]) == 0);
    CHECK(exec_ins(f->db, &st_ins, 5000, &o_end[1]) == 0);
    CHECK(exec_ins(f->db, &st_ins, 5001, &o_end[2]) == 0);
    run_for(f, 100);
    igw_db_stats_get(f->db, &s1);
    CHECK(s1.in_flight == 3, "in flight %llu", (unsigned long long)s1.in_flight);
    CHECK(exec_ins(f->db, &st_ins, 5002, &o_end[3]) == 0);
    CHECK(exec_ins(f->db, &st_ins, 5003, &o_end[4]) == 0);
    CHECK(exec0(f->db, &st_pid, &o_end[5]) == 0);
    igw_db_destroy(f->db);
    int shut = 0, end_order = 0;
    for (int i = 0; i < 6; i++) {
        /* 0-2 were sent (their outcome is unknown), 3-5 never left the queue */
        const char *want = i < 3 ? "shutting down" : IGW_DB_NOT_SENT "shutting down";
        shut += o_end[i].calls == 1 && !o_end[i].ok && strcmp(o_end[i].err, want) == 0 &&
                igw_db_outcome_unknown(o_end[i].err) == (i < 3) && igw_db_not_sent(o_end[i].err) == (i >= 3);
        end_order += i == 0 || o_end[i].order == o_end[i - 1].order + 1;
    }
    CHECK(shut == 6, "%d of 6 shut down", shut);
    CHECK(end_order == 6);
    f->db = NULL;
}

/* What a LISTEN callback got. */
typedef struct heard {
    int ready, n;
    char last[32];
} heard;

static void on_heard(void *arg, const char *channel, const char *payload)
{
    heard *h = arg;
    if (!channel) {
        h->ready++;
        return;
    }
    h->n++;
    snprintf(h->last, sizeof h->last, "%s", payload);
}

/* A notification that arrives behind a query's result (the backend sends
 * its own session's after ReadyForQuery) is handed over at once, not at
 * the socket's next read: 200 in a row, each awaited with nothing else on
 * the connection. Needs nothing (a connection of its own). */
static void test_notify_behind_result(fixture *f)
{
    char err[256] = "";
    heard h = {0};
    igw_db *db = igw_db_create(f->loop, f->dsn, err, sizeof err);
    CHECK(db != NULL, "%s", err);
    if (!db)
        return;
    CHECK(igw_db_listen(db, "dbtest_chan", on_heard, &h) == 0);
    CHECK(run_until_connected(f, db, true, 5000));
    int late = 0;
    for (int i = 0; i < 200; i++) {
        char payload[16];
        snprintf(payload, sizeof payload, "n%d", i);
        outcome o = {0};
        CHECK(exec1(db, &st_notify, payload, &o) == 0);
        CHECK(run_until_called(f, &o, 1, 2000) && o.ok, "%s", o.err);
        int64_t end = igw_clock_ms() + 500;
        while (h.n < i + 1 && igw_clock_ms() < end)
            h2o_evloop_run(f->loop, 10);
        late += h.n < i + 1 || strcmp(h.last, payload) != 0;
        h.n = i + 1; /* a late one counts once */
    }
    CHECK(late == 0, "%d of 200 notifications not handed over within 500 ms of their query's result", late);
    CHECK(h.ready == 1, "ready %d", h.ready);
    igw_db_destroy(db);
    run_for(f, 20);
}

/* the queue is bounded; nothing listening: backoff, then shutdown */
static void test_queue_bounded_nothing_listening(fixture *f)
{
    char err[256] = "";
    igw_db_stats s1;
    char dsn2[256];
    snprintf(dsn2, sizeof dsn2, "host=127.0.0.1 port=1 dbname=postgres connect_timeout=1");
    igw_db *db2 = igw_db_create(f->loop, dsn2, err, sizeof err);
    CHECK(db2 != NULL, "%s", err);
    if (db2) {
        int *calls = calloc(IGW_DB_QUEUE_MAX + 1, sizeof *calls);
        int accepted = 0, extra = 0;
        for (int i = 0; i < IGW_DB_QUEUE_MAX; i++)
            accepted += igw_db_exec(db2, &st_pid, NULL, NULL, NULL, never, &calls[i]) == 0;
        CHECK(accepted == IGW_DB_QUEUE_MAX);
        CHECK(igw_db_exec(db2, &st_pid, NULL, NULL, NULL, never, &extra) == -1);
        run_for(f, 300);
        igw_db_stats_get(db2, &s1);
        CHECK(s1.rejected == 1 && s1.queued == IGW_DB_QUEUE_MAX && !s1.conn.connected);
        CHECK(s1.conn.connect_failures >= 2, "%llu connect failures in 300 ms", (unsigned long long)s1.conn.connect_failures);
        CHECK(s1.conn.connect_failures <= 5, "%llu connect failures in 300 ms: no backoff?",
              (unsigned long long)s1.conn.connect_failures);
        CHECK(strstr(igw_db_last_error(db2), "connect") != NULL, "'%s'", igw_db_last_error(db2));
        int called = 0;
        for (int i = 0; i < IGW_DB_QUEUE_MAX; i++)
            called += calls[i];
        CHECK(called == 0);
        igw_db_destroy(db2);
        called = 0;
        for (int i = 0; i < IGW_DB_QUEUE_MAX; i++)
            called += calls[i] == 1;
        CHECK(called == IGW_DB_QUEUE_MAX && extra == 0);
        free(calls);
    }
}

/* a server that accepts and never answers: connect_timeout applies */
static void test_connect_timeout_silent_server(fixture *f)
{
    char err[256] = "";
    igw_db_stats s1;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof sin;
    CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sin, sizeof sin) == 0 && listen(lfd, 4) == 0 &&
          getsockname(lfd, (struct sockaddr *)&sin, &slen) == 0);
    char dsn3[128];
    snprintf(dsn3, sizeof dsn3, "host=127.0.0.1 port=%d dbname=postgres connect_timeout=2", ntohs(sin.sin_port));
    igw_db *db3 = igw_db_create(f->loop, dsn3, err, sizeof err);
    CHECK(db3 != NULL, "%s", err);
    if (db3) {
        outcome o_silent = {0};
        CHECK(exec0(db3, &st_pid, &o_silent) == 0);
        int64_t t3 = igw_clock_ms();
        igw_db_stats_get(db3, &s1);
        while (s1.conn.connect_failures == 0 && igw_clock_ms() - t3 < 5000) {
            h2o_evloop_run(f->loop, 10);
            igw_db_stats_get(db3, &s1);
        }
        int64_t waited = igw_clock_ms() - t3;
        CHECK(s1.conn.connect_failures == 1 && waited >= 1900 && waited < 3000, "%llu failures after %lld ms",
              (unsigned long long)s1.conn.connect_failures, (long long)waited);
        CHECK(strstr(igw_db_last_error(db3), "timed out") != NULL, "'%s'", igw_db_last_error(db3));
        CHECK(o_silent.calls == 0);
        igw_db_destroy(db3);
        CHECK(o_silent.calls == 1 && strcmp(o_silent.err, IGW_DB_NOT_SENT "shutting down") == 0);
    }
    if (lfd >= 0)
        close(lfd);
}

/* In this order: a case needs what the ones before it left (it says which). */
static const struct {
    const char *name;
    void (*fn)(fixture *);
} cases[] = {
    CHECK_CASE(test_create_refuses_bad_dsn),
    CHECK_CASE(test_queued_before_connected),
    CHECK_CASE(test_pipelined_inserts),
    CHECK_CASE(test_prepared_once),
    CHECK_CASE(test_failing_statement_fails_alone),
    CHECK_CASE(test_binary_null_params_and_chain),
    CHECK_CASE(test_text_array),
    CHECK_CASE(test_large_values_push_back),
    CHECK_CASE(test_row_twin),
    CHECK_CASE(test_backend_terminated),
    CHECK_CASE(test_server_stop_queues),
    CHECK_CASE(test_frozen_server_deadline),
    CHECK_CASE(test_destroy_in_flight),
    CHECK_CASE(test_notify_behind_result),
    CHECK_CASE(test_queue_bounded_nothing_listening),
    CHECK_CASE(test_connect_timeout_silent_server),
};

int main(int argc, char **argv)
{
    fixture f = {0};
    if (argc != 2) {
        fprintf(stderr, "usage: db_test DSN\n");
        return 2;
    }
    const char *dsn = argv[1];
    f.dsn = dsn;
    f.stop_cmd = getenv("IGW_DBTEST_STOP"), f.start_cmd = getenv("IGW_DBTEST_START");
    f.freeze = getenv("IGW_DBTEST_FREEZE"), f.thaw = getenv("IGW_DBTEST_THAW");
    f.loop = h2o_evloop_create();
    f.admin = PQconnectdb(dsn);
    if (PQstatus(f.admin) != CONNECTION_OK) {
        fprintf(stderr, "db_test: admin connection: %s", PQerrorMessage(f.admin));
        return 1;
    }
    PQsetNoticeProcessor(f.admin, quiet, NULL);
    admin_long(&f, "DROP TABLE IF EXISTS dbtest");
    admin_long(&f, "CREATE TABLE dbtest (id int PRIMARY KEY, v text NOT NULL)");

    char err[256] = "";
    f.db = igw_db_create(f.loop, dsn, err, sizeof err);
    CHECK(f.db != NULL, "%s", err);
    if (!f.db)
        return 1;

    CHECK_RUN(cases, &f);

    h2o_evloop_run(f.loop, 0); /* h2o frees closed sockets on the next turn */
    h2o_evloop_destroy(f.loop);
    PQfinish(f.admin);
    return check_summary("db_test");
}
