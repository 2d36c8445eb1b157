/* routes.h - igwd's route handlers: one file per schema group (device.c,
 * interaction.c), all with one signature (igw_route_fn), bound to their
 * routes by the schema (`handler`, generated/igwd/handlers.c).
 *
 * igw_routes_handle is the transport's `handle` hook (http.h): it runs once
 * the request passed the strict stage and its gate. Routes with `auth user`
 * in the schema get the login first (routes.c reads the token from
 * Authorization, or for `auth user subprotocol` from the WebSocket
 * subprotocol, and answers refusals; auth/login.h checks it), then their
 * handler with the caller; the device routes authenticate devices
 * themselves and get who == NULL. A handler answers through
 * igw_http_reply_* (now, or later on a held exchange); a route without a
 * handler answers not_implemented.
 * Routes read the decoded request, call their domain (edge/, command/,
 * event/, auth/) and encode the reply: no SQL and no rule the schema can
 * say lives here. */
#ifndef IGW_ROUTES_H
#define IGW_ROUTES_H

#include <stdbool.h>

#include "api.h"
#include "auth/login.h"
#include "http/http.h"
#include "igwd/handlers.h" /* igw_route_fn, the one handler signature */
#include "request.h"

/* The transport's hooks (arg: the igw_app): `handle`, and the route
 * outside the schema POST /bench/bare when the setting bench_routes is on
 * (an igw_http_route). */
void igw_routes_handle(void *arg, igw_exchange *ex, const igw_request *req);
bool igw_routes_bench(void *arg, igw_exchange *ex, unsigned slot);

/* The handlers the schema binds are declared in generated/igwd/handlers.h:
 * device.c has device_send and device_upload; interaction.c the
 * application transport routes (area B). */

/* device.c: POST /bench/bare: send/thing/property doing all the same work
 * (credentials, decoding, model check, reply) except the database write:
 * the reference of make bench-edge. Outside the schema. */
void igw_route_bench_bare(igw_exchange *ex, const igw_request *req, const igw_principal *who);

#endif
