/* handlers.h - the route handler table of igwd.
 *
 * igw_handlers[route id] is called with an igw_exchange (see http.h) as
 * ctx, once the request passed the strict stage. A handler answers through
 * igw_http_reply_* and returns 0; a non-zero return without a reply makes
 * the transport answer the internal class. Every slot is filled; routes
 * whose handler has not been written yet answer the not_implemented class. */
#ifndef IGW_HANDLERS_H
#define IGW_HANDLERS_H

#include "api.h"
#include "request.h"

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

/* Indexed by igw_route_id. */
extern const igw_handler_fn igw_handlers[IGW_ROUTE__COUNT];

#endif
