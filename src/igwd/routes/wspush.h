/* wspush.h - events_push's WebSocket: the handshake of an endpoint of the
 * caller (unknown, foreign or expired: not_found), the upgrade (selecting
 * subprotocol igw.v1 when offered), then the endpoint's deliveries as text
 * frames (event/push.h). One per worker, on its loop thread. */
#ifndef IGW_ROUTES_WSPUSH_H
#define IGW_ROUTES_WSPUSH_H

#include <stdbool.h>

#include "auth/login.h"
#include "event/push.h"
#include "http/http.h"
#include "request.h"

struct st_h2o_evloop_t;

typedef struct igw_wspush igw_wspush;

/* The worker's WebSockets on `loop`, streaming `push`'s deliveries (not
 * owned: destroyed after this). NULL when out of memory. */
igw_wspush *igw_wspush_create(struct st_h2o_evloop_t *loop, igw_push *push);

/* The events_push handler: a WebSocket handshake for an endpoint of the
 * caller, then the upgrade. */
void igw_wspush_attach(igw_wspush *w, igw_exchange *ex, const igw_request *req, const igw_principal *who);

/* Stop: closes every connection (1001 going away) once, and refuses new
 * ones; true when no socket is left (the drain can end). */
bool igw_wspush_drained(igw_wspush *w);

/* Drops the connections left (their subscribers ended) and frees it. NULL
 * is a no-op. */
void igw_wspush_destroy(igw_wspush *w);

#endif
