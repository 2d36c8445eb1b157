/* routes.h - igwd's route handlers: one file per schema group (device.c,
 * interaction.c), all with one signature, bound to the generated route ids
 * in routes.c.
 *
 * igw_routes_handle is the transport's `handle` hook (http.h): it runs once
 * the request passed the strict stage and its gate. Routes with `auth user`
 * in the schema get the login first (auth/login.h), then their handler with
 * the caller; the device routes authenticate devices themselves and get
 * who == NULL. A handler answers through igw_http_reply_* (now, or later on
 * a held exchange); a route without a handler answers not_implemented.
 * Routes read the decoded request, call their domain (edge/, command/,
 * event/, auth/) and encode the reply: no SQL and no rule the schema can
 * say lives here. */
#ifndef IGW_ROUTES_H
#define IGW_ROUTES_H

#include <stdbool.h>

#include "api.h"
#include "auth/login.h"
#include "http/http.h"
#include "request.h"

/* The one handler signature (the same as igw_login_next). */
typedef void (*igw_route_fn)(igw_exchange *ex, const igw_request *req, const igw_principal *who);

/* The transport's hooks (arg: the igw_app). */
void igw_routes_handle(void *arg, igw_exchange *ex, const igw_request *req);
/* Routes outside the schema, before the strict stage: POST /bench/bare
 * when the setting bench_routes is on. */
bool igw_routes_raw(void *arg, igw_exchange *ex);

/* device.c: the device routes. */
void igw_route_device_send(igw_exchange *ex, const igw_request *req, const igw_principal *who);
void igw_route_device_upload(igw_exchange *ex, const igw_request *req, const igw_principal *who);
/* POST /bench/bare: send/thing/property doing all the same work
 * (credentials, decoding, model check, reply) except the database write:
 * the reference of make bench-edge. */
void igw_route_bench_bare(igw_exchange *ex, const igw_request *req, const igw_principal *who);

/* interaction.c: the application transport routes (area B). */
void igw_route_endpoints_register(igw_exchange *ex, const igw_request *req, const igw_principal *who);
void igw_route_commands(igw_exchange *ex, const igw_request *req, const igw_principal *who);
void igw_route_events_pull(igw_exchange *ex, const igw_request *req, const igw_principal *who);
void igw_route_events_ack(igw_exchange *ex, const igw_request *req, const igw_principal *who);
void igw_route_events_push(igw_exchange *ex, const igw_request *req, const igw_principal *who);

#endif
