/* conn_test.c - the connection supervisor (core/conn.c) on a real h2o loop,
 * with an owner that only records what it is asked to do: attempts, their
 * deadline, the backoff steps, the reset by an answer, the counters and the
 * histogram, the last error, and stop. No server is needed. One function
 * per case, run in order; each prints its name and outcome. */
#include <h2o.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "core/conn.h"

#include "../check.h"

/* What every case uses: one h2o loop, made by main. */
typedef struct fixture {
    h2o_evloop_t *loop;
} fixture;

typedef struct owner {
    igw_conn *c;
    unsigned connects, timeouts;
    int64_t attempt_ms[16];
    bool fail_at_once; /* the attempt fails inside the connect hook */
    bool up_at_once;   /* the attempt succeeds inside the connect hook */
    unsigned probes;   /* probe hook calls */
    bool probe_refused; /* the probe hook cannot send */
} owner;

static int on_probe(void *arg)
{
    owner *o = arg;
    o->probes++;
    return o->probe_refused ? -1 : 0;
}

static void on_connect(void *arg)
{
    owner *o = arg;
    if (o->connects < 16)
        o->attempt_ms[o->connects] = igw_clock_ms();
    o->connects++;
    if (o->fail_at_once)
        igw_conn_down(o->c, "connect failed:\n\trefused");
    if (o->up_at_once)
        igw_conn_up(o->c);
}

static void on_timed_out(void *arg)
{
    owner *o = arg;
    o->timeouts++;
    igw_conn_down(o->c, "connect timed out");
}

/* Runs the loop until cond() or `ms` pass. */
static bool run_until(h2o_evloop_t *loop, owner *o, bool (*cond)(const owner *), uint64_t ms)
{
    int64_t end = igw_clock_ms() + (int64_t)ms;
    while (!cond(o) && igw_clock_ms() < end)
        h2o_evloop_run(loop, 10);
    return cond(o);
}

static bool four_attempts(const owner *o)
{
    return o->connects >= 4;
}

static bool one_timeout(const owner *o)
{
    return o->timeouts >= 1;
}

static bool one_probe(const owner *o)
{
    return o->probes >= 1;
}

static bool two_probes(const owner *o)
{
    return o->probes >= 2;
}

static bool unhealthy(const owner *o)
{
    igw_conn_stats st;
    igw_conn_stats_get(o->c, &st);
    return !st.healthy;
}

static bool never(const owner *o)
{
    (void)o;
    return false;
}

/* failed attempts back off 50, 100, 200 ms; the reason is kept on one line; none after stop */
static void test_failures_back_off(fixture *f)
{
    owner o = {.fail_at_once = true};
    o.c = igw_conn_create(f->loop, 1000, (igw_conn_hooks){on_connect, on_timed_out, NULL}, &o);
    CHECK(o.c != NULL);
    CHECK(igw_conn_get_state(o.c) == IGW_CONN_DOWN && strcmp(igw_conn_last_error(o.c), "") == 0);
    igw_conn_start(o.c);
    CHECK(o.connects == 1);
    CHECK(run_until(f->loop, &o, four_attempts, 2000));
    int64_t g1 = o.attempt_ms[1] - o.attempt_ms[0], g2 = o.attempt_ms[2] - o.attempt_ms[1],
            g3 = o.attempt_ms[3] - o.attempt_ms[2];
    CHECK(g1 >= 45 && g2 >= 95 && g3 >= 195, "gaps %lld %lld %lld ms", (long long)g1,
          (long long)g2, (long long)g3);
    CHECK(g2 > g1 && g3 > g2, "the backoff grows");
    CHECK(strcmp(igw_conn_last_error(o.c), "connect failed:  refused") == 0, "'%s'", igw_conn_last_error(o.c));
    igw_conn_stats s;
    igw_conn_stats_get(o.c, &s);
    CHECK(s.connect_failures == o.connects && s.connects == 0 && s.lost == 0 && !s.connected);
    /* Stopped: no attempt follows a failure. */
    igw_conn_stop(o.c);
    unsigned before = o.connects;
    igw_conn_down(o.c, "again");
    run_until(f->loop, &o, never, 300);
    CHECK(o.connects == before, "%u attempts after stop", o.connects - before);
    igw_conn_destroy(o.c);
}

/* an attempt that never ends times out, is counted as failed, and is retried */
static void test_attempt_times_out(fixture *f)
{
    owner o = {0};
    o.c = igw_conn_create(f->loop, 100, (igw_conn_hooks){on_connect, on_timed_out, NULL}, &o);
    int64_t t0 = igw_clock_ms();
    igw_conn_start(o.c);
    CHECK(igw_conn_get_state(o.c) == IGW_CONN_CONNECTING);
    CHECK(run_until(f->loop, &o, one_timeout, 2000));
    CHECK(igw_clock_ms() - t0 >= 95, "timed out after %lld ms", (long long)(igw_clock_ms() - t0));
    CHECK(igw_conn_get_state(o.c) == IGW_CONN_DOWN);
    CHECK(run_until(f->loop, &o, four_attempts, 3000), "retried after the timeout");
    igw_conn_stop(o.c);
    igw_conn_destroy(o.c);
}

/* up: answers in the histogram; lost; failures grow the backoff, an answer resets it */
static void test_answers_and_backoff_reset(fixture *f)
{
    owner o = {0};
    o.c = igw_conn_create(f->loop, 1000, (igw_conn_hooks){on_connect, on_timed_out, NULL}, &o);
    igw_conn_start(o.c);
    igw_conn_up(o.c);
    CHECK(igw_conn_get_state(o.c) == IGW_CONN_UP);
    igw_conn_answered(o.c, 80);        /* first bucket (<= 100 us) */
    igw_conn_answered(o.c, 3000);      /* <= 5000 us */
    igw_conn_answered(o.c, 20000000);  /* above the largest bound */
    igw_conn_answered(o.c, UINT64_MAX); /* an answer without a round trip */
    igw_conn_stats s;
    igw_conn_stats_get(o.c, &s);
    CHECK(s.connects == 1 && s.connected && s.rtt_count == 3 && s.rtt_sum_us == 80 + 3000 + 20000000);
    CHECK(s.rtt_buckets[0] == 1 && s.rtt_buckets[5] == 1 && s.rtt_buckets[IGW_CONN_RTT_NBOUNDS] == 1);
    /* Lost, then failures grow the backoff; an answer brings it back to 50 ms. */
    o.fail_at_once = true;
    igw_conn_down(o.c, "connection lost");
    igw_conn_stats_get(o.c, &s);
    CHECK(s.lost == 1 && s.connect_failures == 0 && !s.connected);
    CHECK(run_until(f->loop, &o, four_attempts, 2000));
    o.fail_at_once = false;
    unsigned n = o.connects;
    while (o.connects == n)
        h2o_evloop_run(f->loop, 10);
    igw_conn_up(o.c);
    igw_conn_answered(o.c, UINT64_MAX);
    o.fail_at_once = true;
    int64_t t0 = igw_clock_ms();
    n = o.connects;
    igw_conn_down(o.c, "connection lost");
    while (o.connects == n && igw_clock_ms() - t0 < 2000)
        h2o_evloop_run(f->loop, 10);
    int64_t gap = igw_clock_ms() - t0;
    CHECK(o.connects == n + 1 && gap < 150, "first retry after an answer came after %lld ms", (long long)gap);
    igw_conn_stop(o.c);
    igw_conn_destroy(o.c);
}

/* probes: none while busy, one when idle; answered, unanswered, late, lost with the connection */
static void test_probes(fixture *f)
{
    /* Probes: none while answers come; one after an idle interval; answered
     * in time (ok, healthy), not answered (timeout, unhealthy, no second
     * probe while it is out), answered late (healthy again, not counted ok),
     * lost with the connection (failed); a hook that cannot send (failed,
     * unhealthy). The connection itself is never dropped by a probe. */
    owner o = {.up_at_once = true};
    o.c = igw_conn_create(f->loop, 1000, (igw_conn_hooks){on_connect, on_timed_out, on_probe}, &o);
    CHECK(o.c != NULL && igw_conn_set_probe(o.c, 100, 60) == 0);
    igw_conn_start(o.c);
    igw_conn_stats st;
    igw_conn_stats_get(o.c, &st);
    CHECK(st.connected && st.healthy, "up is healthy");
    int64_t until = igw_clock_ms() + 300;
    while (igw_clock_ms() < until) { /* busy: an answer every 20 ms */
        h2o_evloop_run(f->loop, 20);
        igw_conn_answered(o.c, 100);
    }
    CHECK(o.probes == 0, "%u probes of a busy connection", o.probes);
    int64_t t0 = igw_clock_ms();
    CHECK(run_until(f->loop, &o, one_probe, 1000));
    int64_t idle = igw_clock_ms() - t0;
    CHECK(idle >= 80 && idle < 400, "probed after %lld ms idle", (long long)idle);
    igw_conn_answered(o.c, 100);
    igw_conn_stats_get(o.c, &st);
    CHECK(st.probes_ok == 1 && st.probes_timeout == 0 && st.healthy);

    CHECK(run_until(f->loop, &o, two_probes, 1000), "idle again: probed again");
    t0 = igw_clock_ms();
    CHECK(run_until(f->loop, &o, unhealthy, 1000), "an unanswered probe makes it unhealthy");
    int64_t late = igw_clock_ms() - t0;
    CHECK(late >= 40 && late < 300, "unhealthy %lld ms after the probe", (long long)late);
    igw_conn_stats_get(o.c, &st);
    CHECK(st.connected && st.probes_timeout == 1 && st.probes_ok == 1, "still up: the owner's deadline drops it");
    run_until(f->loop, &o, never, 300);
    CHECK(o.probes == 2, "no second probe while one is out (%u)", o.probes);
    igw_conn_answered(o.c, 100);
    igw_conn_stats_get(o.c, &st);
    CHECK(st.healthy && st.probes_ok == 1, "a late answer: healthy again, not counted ok");

    /* a probe out when the connection breaks: failed, not ok */
    o.probes = 0;
    o.up_at_once = false;
    CHECK(run_until(f->loop, &o, one_probe, 1000));
    igw_conn_down(o.c, "connection lost");
    igw_conn_stats_get(o.c, &st);
    CHECK(!st.connected && !st.healthy && st.probes_failed == 1);
    igw_conn_stop(o.c);
    igw_conn_destroy(o.c);
}

/* a probe hook that cannot send: unhealthy, still up; no probe hook: probes refused */
static void test_probe_cannot_send(fixture *f)
{
    owner o = {.up_at_once = true, .probe_refused = true};
    o.c = igw_conn_create(f->loop, 1000, (igw_conn_hooks){on_connect, on_timed_out, on_probe}, &o);
    CHECK(o.c != NULL && igw_conn_set_probe(o.c, 50, 60) == 0);
    igw_conn_start(o.c);
    CHECK(run_until(f->loop, &o, unhealthy, 1000), "a probe that cannot be sent: unhealthy");
    igw_conn_stats st;
    igw_conn_stats_get(o.c, &st);
    CHECK(st.probes_failed >= 1 && st.connected);
    igw_conn_stop(o.c);
    igw_conn_destroy(o.c);
    owner p = {0};
    p.c = igw_conn_create(f->loop, 1000, (igw_conn_hooks){on_connect, on_timed_out, NULL}, &p);
    CHECK(p.c != NULL && igw_conn_set_probe(p.c, 50, 60) == -1, "no probe hook: refused");
    igw_conn_destroy(p.c);
}

/* the metrics text: both families, cumulative buckets */
static void test_metrics_text(fixture *fx)
{
    (void)fx; /* f is the memory stream here */
    igw_conn_stats a = {.lost = 2, .connect_failures = 3, .rtt_count = 2, .rtt_sum_us = 1500, .connected = true,
                        .healthy = true, .probes_ok = 4, .probes_timeout = 1},
                   b = {.lost = 1, .rtt_count = 1, .rtt_sum_us = 500, .connected = true, .probes_failed = 2};
    a.rtt_buckets[0] = 1;
    a.rtt_buckets[3] = 1;
    b.rtt_buckets[3] = 1;
    igw_conn_stats t = {0};
    unsigned up = 0, healthy = 0;
    igw_conn_stats_add(&t, &up, &healthy, &a);
    igw_conn_stats_add(&t, &up, &healthy, &b);
    CHECK(up == 2 && healthy == 1 && t.lost == 3 && t.connect_failures == 3 && t.rtt_count == 3 && t.rtt_sum_us == 2000);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    igw_conn_metrics_write(f, "igw_x", "Round trips.", &t);
    fclose(f);
    CHECK(strstr(text, "igw_x_connection_events_total{event=\"lost\"} 3\n") != NULL);
    CHECK(strstr(text, "igw_x_connection_events_total{event=\"connect_failed\"} 3\n") != NULL);
    CHECK(strstr(text, "igw_x_probes_total{result=\"ok\"} 4\n") != NULL);
    CHECK(strstr(text, "igw_x_probes_total{result=\"timeout\"} 1\n") != NULL);
    CHECK(strstr(text, "igw_x_probes_total{result=\"failed\"} 2\n") != NULL);
    CHECK(strstr(text, "# HELP igw_x_round_trip_seconds Round trips.\n") != NULL);
    CHECK(strstr(text, "igw_x_round_trip_seconds_bucket{le=\"0.0001\"} 1\n") != NULL);
    CHECK(strstr(text, "igw_x_round_trip_seconds_bucket{le=\"0.001\"} 3\n") != NULL);
    CHECK(strstr(text, "igw_x_round_trip_seconds_bucket{le=\"+Inf\"} 3\n") != NULL);
    CHECK(strstr(text, "igw_x_round_trip_seconds_sum 0.002000\n") != NULL);
    free(text);
}

/* Each case on its own owner and connection; only the loop is shared. */
static const struct {
    const char *name;
    void (*fn)(fixture *);
} cases[] = {
    CHECK_CASE(test_failures_back_off),
    CHECK_CASE(test_attempt_times_out),
    CHECK_CASE(test_answers_and_backoff_reset),
    CHECK_CASE(test_probes),
    CHECK_CASE(test_probe_cannot_send),
    CHECK_CASE(test_metrics_text),
};

int main(void)
{
    fixture f = {.loop = h2o_evloop_create()};
    CHECK_RUN(cases, &f);
    h2o_evloop_destroy(f.loop);
    return check_summary("conn_test");
}
