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
 * Everything but igw_redis_stats_get runs on the loop's thread.
 *
 * A subscriber (igw_redis_subscribe_create) is the same connection that
 * only listens to one channel: it runs no commands, is up once its
 * SUBSCRIBE is confirmed, and reconnects and resubscribes with the same
 * backoff. */
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

/* Largest pub/sub message payload a subscriber delivers; larger ones are
 * dropped and counted (the server's pubsub output-buffer limit, 32 MiB by
 * default, bounds what hiredis reads before that). */
#define IGW_REDIS_MESSAGE_MAX 65536

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
    uint64_t messages;         /* subscriber: messages delivered */
    uint64_t messages_dropped; /* subscriber: messages above IGW_REDIS_MESSAGE_MAX */
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

/* A subscriber's callback, on the loop thread: payload[0..len-1] of each
 * message published on its channel, in order (valid during the call; not
 * NUL-terminated); or payload NULL, len 0 each time the subscription is
 * (re)established, the first time included, before any message of that
 * connection: what was published while it was down is lost, so the caller
 * re-reads the state it follows. Must not call igw_redis_destroy on the
 * subscriber. */
typedef void (*igw_redis_message_cb)(void *arg, const char *payload, size_t len);

/* A connection that only listens: SUBSCRIBE `channel` (copied; 1..255
 * bytes) on every (re)connect, on_message as above. host, port, timeout_ms
 * and the result as igw_redis_create; timeout_ms also bounds connect +
 * SUBSCRIBE and each probe. It is connected (igw_redis_connected, stats
 * conn.connected) once subscribed; probes (igw_redis_set_probe, which a
 * subscriber needs: a frozen server sends nothing) re-SUBSCRIBE the same
 * channel, a no-op on the server, and an answer not back within timeout_ms
 * drops the connection. Any message counts as an answer. Its stats:
 * messages, messages_dropped, rejected, conn (probe round trips); the
 * command counters stay 0. igw_redis_command on it returns -1. Destroy with
 * igw_redis_destroy (on_message is not called from there). */
igw_redis *igw_redis_subscribe_create(struct st_h2o_evloop_t *loop, const char *host, unsigned port,
                                      unsigned timeout_ms, const char *channel, igw_redis_message_cb on_message,
                                      void *arg, char *err, size_t errlen);

/* Sends the command argv[0..argc-1] (argvlen NULL: NUL-terminated strings;
 * otherwise binary-safe lengths; copied during the call) once the current
 * loop turn's callbacks have returned, in one write with the others. 0 accepted (cb will be called exactly once), or -1 when
 * not connected nor connecting, the queue is full (IGW_REDIS_QUEUE_MAX), the
 * command is refused (see above), memory runs out, r is a subscriber or r
 * is being destroyed: cb is then never called. */
int igw_redis_command(igw_redis *r, igw_redis_cb cb, void *arg, int argc, const char **argv, const size_t *argvlen);

/* Probes the connection while it is idle (conn.h): PING after
 * `interval_ms` without a reply; none within the command timeout makes the
 * stats' conn.healthy false (readiness) until the timeout drops the
 * connection. 0: none. Once, after create. */
void igw_redis_set_probe(igw_redis *r, unsigned interval_ms);

/* True when the connection is established (a subscriber: subscribed). */
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
