/* redis.h - one Redis connection per worker thread, on its h2o loop.
 *
 * hiredis 0.14 async, driven by the loop through a dup() of hiredis's
 * socket wrapped in an h2o socket with DONT_READ (h2o reports readiness,
 * hiredis reads and writes). Commands are pipelined: everything submitted
 * in one loop turn goes out in one write, replies come back in submission
 * order. Commands are accepted while connected or connecting (hiredis
 * buffers them until the connection is up) and refused while waiting to
 * reconnect: live state is not worth queueing. A command unanswered after
 * the timeout (blocking commands included) drops the connection and fails
 * everything pending; so does a connection loss. Nothing is retried (a
 * failed command may have run). The connection is re-established with
 * backoff (50 ms doubling to 2 s, reset by a reply). Pub/sub, MONITOR and
 * commands that change the reply stream (HELLO, RESET, CLIENT REPLY) are
 * refused. hiredis writes with write(2): the process must ignore SIGPIPE.
 * Everything but igw_redis_stats_get runs on the loop's thread. */
#ifndef IGW_REDIS_H
#define IGW_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "core/conn.h"

struct st_h2o_evloop_t; /* h2o_evloop_t, without pulling h2o into every user */

typedef struct igw_redis igw_redis;

/* Commands accepted but not yet answered, per connection. */
#define IGW_REDIS_QUEUE_MAX 65536

/* Called exactly once per accepted command, on the loop thread. Success:
 * reply is the server's answer (an error reply arrives as a reply of type
 * REDIS_REPLY_ERROR), err NULL; both freed when the callback returns.
 * Failure: reply NULL and err a short text for logs only, valid during the
 * callback: "timed out after N ms", "connection lost: ...", "connect
 * failed: ..." or "shutting down". May submit commands; must not call
 * igw_redis_destroy. */
typedef void (*igw_redis_cb)(void *arg, const redisReply *reply, const char *err);


/* Counters since creation, for Prometheus. Round trip: from
 * igw_redis_command until the reply (commands that failed are not observed). */
typedef struct igw_redis_stats {
    uint64_t commands_ok;      /* callbacks with a reply (error replies included) */
    uint64_t error_replies;    /* of which REDIS_REPLY_ERROR */
    uint64_t commands_failed;  /* callbacks without a reply */
    uint64_t rejected;         /* igw_redis_command returned -1 */
    uint64_t pending;          /* gauge: accepted, unanswered */
    igw_conn_stats conn;       /* connects: connections established; round trips */
} igw_redis_stats;

/* Starts connecting to host:port in the background and returns at once.
 * host is an address or a name resolved here, once, with getaddrinfo
 * (blocking: create at startup; IPv4 preferred; reconnects reuse the
 * address), or the path
 * of a unix socket if it starts with '/' (port ignored). timeout_ms (> 0)
 * bounds each command and each connection attempt. NULL with err when the
 * name does not resolve, an argument is invalid or memory runs out. */
igw_redis *igw_redis_create(struct st_h2o_evloop_t *loop, const char *host, unsigned port, unsigned timeout_ms,
                            char *err, size_t errlen);

/* Sends the command argv[0..argc-1] (argvlen NULL: NUL-terminated strings;
 * otherwise binary-safe lengths; copied during the call) once the current
 * loop turn's callbacks have returned, in one write with the others. 0 accepted (cb will be called exactly once), or -1 when
 * not connected nor connecting, the queue is full (IGW_REDIS_QUEUE_MAX), the
 * command is refused (see above), memory runs out or r is being destroyed:
 * cb is then never called. */
int igw_redis_command(igw_redis *r, igw_redis_cb cb, void *arg, int argc, const char **argv, const size_t *argvlen);

/* Probes the connection while it is idle (conn.h): PING after
 * `interval_ms` without a reply; none within the command timeout makes the
 * stats' conn.healthy false (readiness) until the timeout drops the
 * connection. 0: none. Once, after create. */
void igw_redis_set_probe(igw_redis *r, unsigned interval_ms);

/* True when the connection is established. */
bool igw_redis_connected(const igw_redis *r);

/* The reason of the last connection failure or loss ("" if none), for logs. */
const char *igw_redis_last_error(const igw_redis *r);

/* A consistent-enough snapshot of the counters; safe from any thread. */
void igw_redis_stats_get(const igw_redis *r, igw_redis_stats *out);

/* Fails every pending command with "shutting down" (in order), closes the
 * connection and frees. On the loop thread, not from inside an igw_redis
 * callback. The loop must run once more afterwards (or be destroyed) for
 * h2o to free its socket. NULL is ignored. */
void igw_redis_destroy(igw_redis *r);

#endif
