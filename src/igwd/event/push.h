/* push.h - events_push's deliveries: each delivery of an application
 * endpoint, as it commits, handed to the endpoint's subscribers as a
 * PushFrame {method: "interaction.event", deliveryId, event} text. The
 * outbox NOTIFYs igw_delivery in the same transaction, and every worker
 * LISTENs on its database connection (so it works across igwd processes).
 * A command result's notification carries the delivery itself (up to
 * ~7.6 KB of body), which is sent at once; otherwise a woken subscriber
 * reads the endpoint's pending deliveries (oldest first, at most 256) and
 * sends those it has not sent yet. Pull and push show the same deliveryIds
 * and bodies; acknowledgement stays /events/ack (an acknowledged delivery
 * is not sent again; a redelivery after a replay is).
 *
 * Where the frames go is the subscriber's sink: the events_push WebSocket
 * (routes/wspush.c); nothing here knows HTTP. One per worker, on its loop
 * thread. */
#ifndef IGW_PUSH_H
#define IGW_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/db.h"
#include "json.h"

typedef struct igw_push igw_push;
typedef struct igw_push_sub igw_push_sub; /* one endpoint's stream to one connection */

/* Where a subscriber's frames go: send gets one frame (valid during the
 * call) and returns 0, or -1 when the connection is closing or over (it
 * then ends the subscriber itself, never from inside send). */
typedef struct igw_push_sink {
    int (*send)(void *arg, const char *text, size_t len);
    void *arg;
} igw_push_sink;

/* The worker's push state, listening on `db` (call right after
 * igw_db_create). NULL when out of memory. */
igw_push *igw_push_create(igw_db *db);

/* After every subscriber ended (those still reading are freed when their
 * read fails). NULL is a no-op. */
void igw_push_destroy(igw_push *p);

/* A subscriber for `endpoint` of (enterprise, user), not streaming yet.
 * NULL when out of memory. */
igw_push_sub *igw_push_sub_new(igw_push *p, igw_str endpoint, int64_t enterprise_id, int64_t user_id);

/* Whether the endpoint is the caller's and unexpired. 0: cb(arg, found,
 * err) follows once, on the loop thread: found 1 or 0, or -1 when the
 * database failed (err says why, for logs). -1: not queued (busy), cb
 * never runs. */
int igw_push_sub_check(igw_push_sub *s, void (*cb)(void *arg, int found, const char *err), void *arg);

/* Streams to `sink` (copied): what is pending now, then each delivery as
 * it commits. */
void igw_push_sub_start(igw_push_sub *s, const igw_push_sink *sink);

/* Ends the subscriber (its connection is over, or never opened): nothing
 * more is sent; freed now, or when its read ends. */
void igw_push_sub_end(igw_push_sub *s);

#endif
