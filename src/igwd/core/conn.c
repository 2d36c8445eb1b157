/* conn.c - see conn.h. */
#include "core/conn.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <h2o/timeout.h>

static const uint64_t backoff_ms[] = {50, 100, 200, 400, 800, 1600, 2000};
#define NBACKOFF (sizeof backoff_ms / sizeof backoff_ms[0])

const uint64_t igw_conn_rtt_bounds_us[IGW_CONN_RTT_NBOUNDS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000};

struct igw_conn {
    h2o_evloop_t *loop;
    igw_conn_hooks hooks;
    void *arg;
    igw_conn_state state;
    bool stopped;
    unsigned backoff; /* the next step of backoff_ms */
    h2o_timeout_t t_deadline, t_backoff[NBACKOFF];
    h2o_timeout_entry_t deadline, retry;
    /* probes: the interval's timer runs while up; the wait's while one is out */
    uint64_t probe_interval_ms, probe_timeout_ms, last_answer_ms, probe_sent_ms;
    bool probing, probe_out, probe_late;
    h2o_timeout_t t_probe, t_probe_wait;
    h2o_timeout_entry_t probe, probe_wait;
    char last_err[300];
    struct {
        atomic_uint_fast64_t connects, connect_failures, lost, connected, healthy;
        atomic_uint_fast64_t rtt_count, rtt_sum_us, rtt_buckets[IGW_CONN_RTT_NBOUNDS + 1];
        atomic_uint_fast64_t probes_ok, probes_timeout, probes_failed;
    } st;
};

/* Single writer (the loop thread): a relaxed load + store is enough. */
static void bump(atomic_uint_fast64_t *a, uint64_t by)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + by, memory_order_relaxed);
}

static void unlink_entry(h2o_timeout_entry_t *e)
{
    if (h2o_timeout_is_linked(e))
        h2o_timeout_unlink(e);
}

static void set_healthy(igw_conn *c, bool on)
{
    atomic_store_explicit(&c->st.healthy, on, memory_order_relaxed);
}

static void on_probe(h2o_timeout_entry_t *e)
{
    igw_conn *c = H2O_STRUCT_FROM_MEMBER(igw_conn, probe, e);
    if (c->state != IGW_CONN_UP)
        return;
    uint64_t now = h2o_now(c->loop);
    /* Anything answered within the interval is as good as a probe; one
     * probe out at a time (a late one stays out until answered or down). */
    if (!c->probe_out && now - c->last_answer_ms >= c->probe_interval_ms) {
        if (c->hooks.probe(c->arg) == 0) {
            c->probe_out = true;
            c->probe_late = false;
            c->probe_sent_ms = now;
            h2o_timeout_link(c->loop, &c->t_probe_wait, &c->probe_wait);
        } else {
            bump(&c->st.probes_failed, 1);
            set_healthy(c, false);
        }
    }
    h2o_timeout_link(c->loop, &c->t_probe, &c->probe);
}

static void on_probe_wait(h2o_timeout_entry_t *e)
{
    igw_conn *c = H2O_STRUCT_FROM_MEMBER(igw_conn, probe_wait, e);
    c->probe_late = true;
    bump(&c->st.probes_timeout, 1);
    set_healthy(c, false);
}

static void attempt(igw_conn *c)
{
    c->state = IGW_CONN_CONNECTING;
    h2o_timeout_link(c->loop, &c->t_deadline, &c->deadline);
    c->hooks.connect(c->arg);
}

static void on_retry(h2o_timeout_entry_t *e)
{
    igw_conn *c = H2O_STRUCT_FROM_MEMBER(igw_conn, retry, e);
    if (!c->stopped)
        attempt(c);
}

static void on_deadline(h2o_timeout_entry_t *e)
{
    igw_conn *c = H2O_STRUCT_FROM_MEMBER(igw_conn, deadline, e);
    if (c->state == IGW_CONN_CONNECTING)
        c->hooks.timed_out(c->arg);
}

igw_conn *igw_conn_create(h2o_evloop_t *loop, uint64_t connect_timeout_ms, igw_conn_hooks hooks, void *arg)
{
    igw_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->loop = loop;
    c->hooks = hooks;
    c->arg = arg;
    c->state = IGW_CONN_DOWN;
    h2o_timeout_init(loop, &c->t_deadline, connect_timeout_ms);
    for (size_t i = 0; i < NBACKOFF; i++)
        h2o_timeout_init(loop, &c->t_backoff[i], backoff_ms[i]);
    c->deadline.cb = on_deadline;
    c->retry.cb = on_retry;
    c->probe.cb = on_probe;
    c->probe_wait.cb = on_probe_wait;
    return c;
}

int igw_conn_set_probe(igw_conn *c, uint64_t interval_ms, uint64_t timeout_ms)
{
    if (!c->hooks.probe)
        return -1;
    if (c->probing || !interval_ms)
        return 0;
    c->probing = true;
    c->probe_interval_ms = interval_ms;
    c->probe_timeout_ms = timeout_ms;
    h2o_timeout_init(c->loop, &c->t_probe, interval_ms);
    h2o_timeout_init(c->loop, &c->t_probe_wait, timeout_ms);
    if (c->state == IGW_CONN_UP) {
        c->last_answer_ms = h2o_now(c->loop);
        h2o_timeout_link(c->loop, &c->t_probe, &c->probe);
    }
    return 0;
}

void igw_conn_start(igw_conn *c)
{
    if (!c->stopped && c->state == IGW_CONN_DOWN && !h2o_timeout_is_linked(&c->retry))
        attempt(c);
}

void igw_conn_up(igw_conn *c)
{
    unlink_entry(&c->deadline);
    c->state = IGW_CONN_UP;
    bump(&c->st.connects, 1);
    atomic_store_explicit(&c->st.connected, 1, memory_order_relaxed);
    set_healthy(c, true); /* the session's setup was just answered */
    if (c->probing) {
        c->last_answer_ms = h2o_now(c->loop);
        h2o_timeout_link(c->loop, &c->t_probe, &c->probe);
    }
}

void igw_conn_answered(igw_conn *c, uint64_t rtt_us)
{
    c->backoff = 0;
    if (c->probing && c->state == IGW_CONN_UP) {
        c->last_answer_ms = h2o_now(c->loop);
        if (c->probe_out) {
            if (!c->probe_late)
                bump(&c->st.probes_ok, 1);
            c->probe_out = false;
            unlink_entry(&c->probe_wait);
        }
        set_healthy(c, true);
    }
    if (rtt_us == UINT64_MAX)
        return;
    size_t b = 0;
    while (b < IGW_CONN_RTT_NBOUNDS && rtt_us > igw_conn_rtt_bounds_us[b])
        b++;
    bump(&c->st.rtt_buckets[b], 1);
    bump(&c->st.rtt_count, 1);
    bump(&c->st.rtt_sum_us, rtt_us);
}

void igw_conn_down(igw_conn *c, const char *why)
{
    /* Flattened: the reason goes into logs and /readyz text on one line. */
    size_t n = 0;
    for (; why[n] && n + 1 < sizeof c->last_err; n++)
        c->last_err[n] = (why[n] == '\n' || why[n] == '\r' || why[n] == '\t') ? ' ' : why[n];
    while (n > 0 && c->last_err[n - 1] == ' ')
        n--;
    c->last_err[n] = '\0';
    bump(c->state == IGW_CONN_UP ? &c->st.lost : &c->st.connect_failures, 1);
    c->state = IGW_CONN_DOWN;
    atomic_store_explicit(&c->st.connected, 0, memory_order_relaxed);
    set_healthy(c, false);
    if (c->probe_out && !c->probe_late) /* the owner's deadline may fire just before the probe's */
        bump(h2o_now(c->loop) - c->probe_sent_ms >= c->probe_timeout_ms ? &c->st.probes_timeout : &c->st.probes_failed,
             1);
    c->probe_out = false;
    unlink_entry(&c->probe);
    unlink_entry(&c->probe_wait);
    unlink_entry(&c->deadline);
    unlink_entry(&c->retry);
    if (c->stopped)
        return;
    h2o_timeout_link(c->loop, &c->t_backoff[c->backoff], &c->retry);
    if (c->backoff + 1 < NBACKOFF)
        c->backoff++;
}

void igw_conn_stop(igw_conn *c)
{
    c->stopped = true;
    unlink_entry(&c->deadline);
    unlink_entry(&c->retry);
    unlink_entry(&c->probe);
    unlink_entry(&c->probe_wait);
}

igw_conn_state igw_conn_get_state(const igw_conn *c)
{
    return c->state;
}

const char *igw_conn_last_error(const igw_conn *c)
{
    return c->last_err;
}

void igw_conn_stats_get(const igw_conn *c, igw_conn_stats *out)
{
#define L(x) atomic_load_explicit(&c->st.x, memory_order_relaxed)
    memset(out, 0, sizeof *out);
    out->connects = L(connects);
    out->connect_failures = L(connect_failures);
    out->lost = L(lost);
    out->rtt_count = L(rtt_count);
    out->rtt_sum_us = L(rtt_sum_us);
    for (size_t i = 0; i <= IGW_CONN_RTT_NBOUNDS; i++)
        out->rtt_buckets[i] = L(rtt_buckets[i]);
    out->probes_ok = L(probes_ok);
    out->probes_timeout = L(probes_timeout);
    out->probes_failed = L(probes_failed);
    out->connected = L(connected) != 0;
    out->healthy = L(healthy) != 0;
#undef L
}

void igw_conn_stats_add(igw_conn_stats *total, unsigned *nup, unsigned *nhealthy, const igw_conn_stats *s)
{
    total->probes_ok += s->probes_ok;
    total->probes_timeout += s->probes_timeout;
    total->probes_failed += s->probes_failed;
    if (nhealthy)
        *nhealthy += s->healthy;
    total->connects += s->connects;
    total->connect_failures += s->connect_failures;
    total->lost += s->lost;
    total->rtt_count += s->rtt_count;
    total->rtt_sum_us += s->rtt_sum_us;
    for (size_t b = 0; b <= IGW_CONN_RTT_NBOUNDS; b++)
        total->rtt_buckets[b] += s->rtt_buckets[b];
    if (nup)
        *nup += s->connected;
}

void igw_conn_metrics_write(FILE *f, const char *prefix, const char *rtt_help, const igw_conn_stats *s)
{
    fprintf(f,
            "# HELP %s_connection_events_total Connections lost and connection attempts that failed.\n"
            "# TYPE %s_connection_events_total counter\n"
            "%s_connection_events_total{event=\"lost\"} %llu\n"
            "%s_connection_events_total{event=\"connect_failed\"} %llu\n"
            "# HELP %s_probes_total Probes of idle connections: answered in time, not in time, not sent or lost.\n"
            "# TYPE %s_probes_total counter\n"
            "%s_probes_total{result=\"ok\"} %llu\n%s_probes_total{result=\"timeout\"} %llu\n"
            "%s_probes_total{result=\"failed\"} %llu\n"
            "# HELP %s_round_trip_seconds %s\n"
            "# TYPE %s_round_trip_seconds histogram\n",
            prefix, prefix, prefix, (unsigned long long)s->lost, prefix, (unsigned long long)s->connect_failures, prefix,
            prefix, prefix, (unsigned long long)s->probes_ok, prefix, (unsigned long long)s->probes_timeout, prefix,
            (unsigned long long)s->probes_failed, prefix, rtt_help, prefix);
    uint64_t cum = 0;
    for (unsigned b = 0; b < IGW_CONN_RTT_NBOUNDS; b++) {
        cum += s->rtt_buckets[b];
        fprintf(f, "%s_round_trip_seconds_bucket{le=\"%g\"} %llu\n", prefix, (double)igw_conn_rtt_bounds_us[b] / 1e6,
                (unsigned long long)cum);
    }
    fprintf(f, "%s_round_trip_seconds_bucket{le=\"+Inf\"} %llu\n%s_round_trip_seconds_sum %.6f\n"
               "%s_round_trip_seconds_count %llu\n",
            prefix, (unsigned long long)s->rtt_count, prefix, (double)s->rtt_sum_us / 1e6, prefix,
            (unsigned long long)s->rtt_count);
}

void igw_conn_destroy(igw_conn *c)
{
    if (!c)
        return;
    unlink_entry(&c->deadline);
    unlink_entry(&c->retry);
    unlink_entry(&c->probe);
    unlink_entry(&c->probe_wait);
    if (c->probing) {
        h2o_timeout_dispose(c->loop, &c->t_probe);
        h2o_timeout_dispose(c->loop, &c->t_probe_wait);
    }
    h2o_timeout_dispose(c->loop, &c->t_deadline);
    for (size_t i = 0; i < NBACKOFF; i++)
        h2o_timeout_dispose(c->loop, &c->t_backoff[i]);
    free(c);
}
