/* push.h - events_push: the WebSocket of an application endpoint. Each
 * delivery of the endpoint is sent as a PushFrame {method:
 * "interaction.event", deliveryId, event} once it is committed: the outbox
 * NOTIFYs igw_delivery in the same transaction, every worker LISTENs on its
 * database connection (so it works across igwd processes). A command
 * result's notification carries the delivery itself (up to ~7.6 KB of
 * body), which is sent at once; otherwise a woken connection reads the
 * endpoint's pending deliveries (oldest first, at most 256) and sends those
 * it has not sent yet. Pull and push show the same deliveryIds and bodies;
 * acknowledgement stays /events/ack (an acknowledged delivery is not sent
 * again; a redelivery after a replay is). One per worker. */
#ifndef IGW_PUSH_H
#define IGW_PUSH_H

#include <stdbool.h>

#include "core/db.h"
#include "http/http.h"
#include "auth/login.h"
#include "request.h"

typedef struct igw_push igw_push;

/* The worker's push state on `loop`, listening on `db` (call right after
 * igw_db_create). NULL when out of memory. */
igw_push *igw_push_create(struct st_h2o_evloop_t *loop, igw_db *db);

/* The events_push handler: a WebSocket handshake for an endpoint of the
 * caller (unknown, foreign or expired: not_found), then the upgrade. */
void igw_push_attach(igw_push *p, igw_exchange *ex, const igw_request *req, const igw_principal *who);

/* Stop: closes every connection (1001 going away) once; true when none is
 * left (the drain can end). */
bool igw_push_drained(igw_push *p);

void igw_push_destroy(igw_push *p);

#endif
