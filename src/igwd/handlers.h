/* handlers.h - igwd's route handlers.
 *
 * igw_handle is called with an igw_exchange (see http.h) as ctx once the
 * request passed the strict stage (and the signaling gate). Routes with
 * `auth user` in the schema get the login first (login.h), then their
 * handler with the caller; the device routes authenticate devices
 * themselves. A handler answers through igw_http_reply_* (now, or later on
 * a held exchange); routes whose handler is not written yet answer the
 * not_implemented class. */
#ifndef IGW_HANDLERS_H
#define IGW_HANDLERS_H

#include "api.h"
#include "http.h"
#include "login.h"
#include "request.h"

/* Runs the route's handler; 0, or non-zero without a reply (the transport
 * then answers the internal class). */
int igw_handle(void *ctx, const igw_request *req);

/* handle_device.c: the device routes. */
int igw_handle_device_send(void *ctx, const igw_request *req);
int igw_handle_device_upload(void *ctx, const igw_request *req);
/* GET|HEAD of a signed download URL (IGW_SIGNEDURL_PREFIX...), before the
 * strict stage: the signature and expiry are the authorization. */
void igw_handle_device_download(void *ctx);
/* POST /bench/bare (setting bench_routes): send/thing/property doing all
 * the same work (credentials, decoding, model check, reply) except the
 * database write: the reference of make bench-edge. */
int igw_handle_bench_bare(void *ctx, const igw_request *req);

/* handle_interaction.c: the application transport routes (area B). */
void igw_handle_endpoints_register(igw_exchange *ex, const igw_request *req, const igw_principal *who);
void igw_handle_commands(igw_exchange *ex, const igw_request *req, const igw_principal *who);
void igw_handle_events_pull(igw_exchange *ex, const igw_request *req, const igw_principal *who);
void igw_handle_events_ack(igw_exchange *ex, const igw_request *req, const igw_principal *who);

#endif
