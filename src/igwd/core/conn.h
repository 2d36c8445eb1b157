/* conn.h - the supervision of one connection to a dependency, the same for
 * PostgreSQL (db.c) and Redis (redis.c): its state (down, connecting, up),
 * the deadline of a connection attempt, reconnection with backoff (50 ms
 * doubling to 2 s; reset once the server answers something, so a server
 * that accepts and then hangs up keeps backing off), the last failure, and
 * the counters and round-trip histogram that /metrics shows.
 *
 * The owner speaks the protocol: the `connect` hook starts an attempt (the
 * deadline is already armed), the owner reports igw_conn_up when the
 * connection is usable and igw_conn_down whenever it is torn down (from any
 * state, including a failed attempt); the `timed_out` hook asks it to tear
 * down an attempt that missed its deadline (it then calls igw_conn_down).
 * Hooks never run from inside an igw_conn_* call but from the loop's
 * timers, so they may call anything here.
 *
 * Probes (igw_conn_set_probe): an up connection that has answered nothing
 * for an interval is sent one cheap round trip by the `probe` hook
 * (PostgreSQL SELECT 1, Redis PING), because an idle connection to a frozen
 * server looks healthy forever: the kernel keeps the socket open. Any answer
 * counts; none within the probe's timeout marks the connection unhealthy
 * (readiness says down) until something is answered. The owner's own
 * deadline on the round trip, not the probe, drops the connection.
 *
 * Threads: everything runs on the loop's thread, except
 * igw_conn_stats_get (any thread: single writer, relaxed atomics). */
#ifndef IGW_CONN_H
#define IGW_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct st_h2o_evloop_t; /* h2o_evloop_t, without pulling h2o into every user */

typedef struct igw_conn igw_conn;

typedef enum igw_conn_state {
    IGW_CONN_DOWN,       /* no connection; an attempt is scheduled (unless stopped) */
    IGW_CONN_CONNECTING, /* an attempt runs, under its deadline */
    IGW_CONN_UP          /* usable */
} igw_conn_state;

typedef struct igw_conn_hooks {
    void (*connect)(void *arg);   /* start an attempt now */
    void (*timed_out)(void *arg); /* the attempt missed its deadline: tear it down */
    /* Optional: send one round trip whose answer the owner reports with
     * igw_conn_answered like any other. 0 sent, -1 could not be sent. */
    int (*probe)(void *arg);
} igw_conn_hooks;

/* Round-trip histogram bounds in microseconds (the request metrics' too). */
#define IGW_CONN_RTT_NBOUNDS 16
extern const uint64_t igw_conn_rtt_bounds_us[IGW_CONN_RTT_NBOUNDS];

/* Counters since creation. */
typedef struct igw_conn_stats {
    uint64_t connects;         /* connections that came up (the first included) */
    uint64_t connect_failures; /* attempts that failed or timed out */
    uint64_t lost;             /* connections that were up and broke */
    uint64_t rtt_count, rtt_sum_us;
    uint64_t rtt_buckets[IGW_CONN_RTT_NBOUNDS + 1]; /* per bucket, not cumulative; last: above the largest bound */
    uint64_t probes_ok;      /* probes followed by an answer within their timeout */
    uint64_t probes_timeout; /* probes that saw no answer within it */
    uint64_t probes_failed;  /* probes not sent, or lost with the connection before their timeout */
    bool connected;
    bool healthy; /* connected, and the last probe (if any) did not time out */
} igw_conn_stats;

/* A supervisor on `loop` whose attempts get `connect_timeout_ms`; nothing
 * starts before igw_conn_start. NULL when out of memory. */
igw_conn *igw_conn_create(struct st_h2o_evloop_t *loop, uint64_t connect_timeout_ms, igw_conn_hooks hooks, void *arg);

/* Probes the connection while it is up: after `interval_ms` without an
 * answer the `probe` hook runs (it must be set); an answer within
 * `timeout_ms` keeps it healthy. 0 interval: no probes (the default). Once
 * per supervisor (later calls are ignored); -1 when the hook is missing. */
int igw_conn_set_probe(igw_conn *c, uint64_t interval_ms, uint64_t timeout_ms);

/* Starts the first attempt now (the `connect` hook runs from here, the only
 * hook that does: the owner is not inside a callback of its own yet). */
void igw_conn_start(igw_conn *c);

/* The attempt succeeded: the connection is usable. */
void igw_conn_up(igw_conn *c);

/* The server answered: the next failure starts the backoff from its
 * shortest step, an outstanding probe is answered and the connection is
 * healthy. `rtt_us` (UINT64_MAX: none) is observed in the histogram. */
void igw_conn_answered(igw_conn *c, uint64_t rtt_us);

/* The connection (or the attempt) is gone because of `why` (copied, kept as
 * the last error): counted as lost when it was up, else as a failed
 * attempt; the next attempt is scheduled after the current backoff step
 * unless the supervisor is stopped. */
void igw_conn_down(igw_conn *c, const char *why);

/* No more attempts (shutting down): pending timers are cancelled. */
void igw_conn_stop(igw_conn *c);

igw_conn_state igw_conn_get_state(const igw_conn *c);

/* The last reason given to igw_conn_down ("" before any). Loop thread. */
const char *igw_conn_last_error(const igw_conn *c);

void igw_conn_stats_get(const igw_conn *c, igw_conn_stats *out);

/* Adds `s` to `total` (*nup counts one more when s is connected, *nhealthy
 * when it is healthy; either may be NULL). */
void igw_conn_stats_add(igw_conn_stats *total, unsigned *nup, unsigned *nhealthy, const igw_conn_stats *s);

/* Writes the Prometheus families `<prefix>_connection_events_total` (lost,
 * connect_failed), `<prefix>_probes_total` (ok, timeout, failed) and
 * `<prefix>_round_trip_seconds` (histogram, `rtt_help` as its help text)
 * of `s`. */
void igw_conn_metrics_write(FILE *f, const char *prefix, const char *rtt_help, const igw_conn_stats *s);

/* Releases it (timers cancelled). The owner's connection must be gone. */
void igw_conn_destroy(igw_conn *c);

#endif
