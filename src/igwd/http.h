/* http.h - igwd's HTTP transport: worker threads on h2o.
 *
 * N worker threads, each with its own h2o event loop and its own listening
 * socket on the same address (SO_REUSEPORT: the kernel spreads
 * connections). One catch-all handler per request: the ops routes
 * (GET /healthz, /readyz, /metrics), else the strict stage
 * (igw_request_decode) then igw_handlers[route]. Every reply is JSON
 * (/metrics excepted) with Content-Length and an x-request-id header, and
 * is counted in the metrics and written to the access log.
 *
 * h2o's headers are included by http.c only. */
#ifndef IGW_HTTP_H
#define IGW_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct igw_server igw_server;

/* One request being answered; belongs to its worker thread. */
typedef struct igw_exchange igw_exchange;

/* Prepares the server: h2o configuration, metrics, and one bound listening
 * socket per worker (so an address in use fails here). The config is
 * copied and must be resolved (threads, max_body set). NULL with err. */
igw_server *igw_http_create(const igw_config *cfg, char *err, size_t errlen);

/* The port actually listened on (differs from the config when it said 0). */
uint16_t igw_http_port(const igw_server *s);

/* Starts the worker threads. 0, or -1 with err (threads already started are
 * stopped by igw_http_stop + igw_http_join as usual). */
int igw_http_start(igw_server *s, char *err, size_t errlen);

/* Asks every worker to stop: close its listener, let in-flight requests
 * finish within cfg.shutdown_timeout_ms, then return. Call once. */
void igw_http_stop(igw_server *s);

/* Waits for the workers. 0 when every connection drained, -1 when some
 * were still open at the deadline (they are abandoned). */
int igw_http_join(igw_server *s);

/* Releases everything (after igw_http_join, or when never started). */
void igw_http_destroy(igw_server *s);

/* Answers with the error envelope of class `cls` (igw_err):
 * {"code","msg","data":{"reason","path"}}, HTTP status from the class. */
void igw_http_reply_error(igw_exchange *ex, int cls, const char *reason, const char *path);

/* Answers 200 with {"code":200,"msg":"success","data":<data>}; `data` must
 * be one valid JSON value. */
void igw_http_reply_ok(igw_exchange *ex, const char *data, size_t len);

#endif
