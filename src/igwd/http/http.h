/* http.h - igwd's HTTP transport: worker threads on h2o.
 *
 * N worker threads, each with its own h2o event loop and its own listening
 * socket on the same address (SO_REUSEPORT: the kernel spreads
 * connections). One catch-all handler per request: the app's routes
 * outside the schema (igw_http_route, in the order given), else the strict
 * stage (igw_request_decode) then the app's `handle`. The transport knows
 * no route of its own. Every reply is JSON (igw_http_reply_body, a file
 * and the app's files excepted) with Content-Length and an x-request-id
 * header, and is counted in the metrics and written to the access log. Before all of it, a request with
 * ambiguous framing (two Content-Length, Content-Length with
 * Transfer-Encoding, no Host in HTTP/1.1, a repeated singleton header) is
 * refused 400 and its connection closed; h2o's own refusals (an unreadable
 * Content-Length, a body over max_body) get the envelope too
 * (docs/configuration.md, "Request framing").
 * An app's directory of files (igw_http_files) is served read-only with
 * h2o's file handler under its path, ahead of the catch-all; any other
 * path under it is routed as before.
 *
 * h2o's headers are included by http.c only. */
#ifndef IGW_HTTP_H
#define IGW_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/config.h"
#include "arena.h"
#include "json.h"
#include "jw.h"

typedef struct igw_server igw_server;

/* One request being answered; belongs to its worker thread. */
typedef struct igw_exchange igw_exchange;

struct st_h2o_evloop_t;

struct igw_request;

/* A route outside the schema (ops pages, signed downloads, a benchmark's
 * reference), offered each request before the strict stage, in the order
 * the app lists them. `serve` returns false when the request is not its
 * own; else it answers it (now, or later: igw_http_hold) and returns true.
 * `slot` is its slot in /metrics and the access log, labelled `name`: it
 * gives the request that slot (igw_http_set_route) once it counts as its
 * own. Runs on the worker's thread; `name` and `arg` outlive the server. */
typedef struct igw_http_route {
    const char *name;
    bool (*serve)(void *arg, igw_exchange *ex, unsigned slot);
    void *arg;
} igw_http_route;

/* A directory served read-only under `path` by h2o's file handler, on a
 * path of its own registered ahead of "/" (so no other path changes its
 * routing). GET and HEAD of a path `serves` accepts (the raw path without
 * its query: it must refuse anything that is not a plain file directly in
 * the directory) answer the file, or `index` for `path` itself, with the
 * media type of its extension (`types`, else application/octet-stream),
 * no ETag and no listing; another method is the method_not_allowed
 * envelope with data.reason `refused`, a missing file the not_found one
 * with `missing`. Every answer of h2o's own (the file, 304, a redirect,
 * its refusals, which become the envelope of their class when one has
 * their status) gets a request id and `headers`; all are counted and
 * logged under `name`. Any other path under `path` (one h2o's normalization
 * brought here, or one `serves` refuses) goes to the usual routing by its
 * raw path. Everything but `dir` (copied) must outlive the server. */
typedef struct igw_http_files {
    const char *name;
    const char *path;            /* the mount point, ending in '/' */
    const char *dir;             /* absolute */
    const char *index;           /* the file that answers `path` itself */
    bool (*serves)(igw_str path);
    const char *const *types;    /* "extension", "media type" pairs, then NULL */
    const char *const *headers;  /* "name" (lower case), "value" pairs, then NULL */
    const char *refused, *missing;
} igw_http_files;

#define IGW_HTTP_ROUTES_MAX 8 /* routes outside the schema, a directory of files included */

/* The application: its routes and per-worker state (database connection,
 * caches, ...). `handle` answers every request that passed the strict
 * stage (igw_request_decode against the generated table) and its route's
 * gate; `routes` (nroutes of them, copied) are offered each request before
 * the strict stage, and `files` (NULL: none; copied) is served under its
 * path; their slots follow the generated routes' in /metrics, in that
 * order. `handle` runs on the worker's thread and must answer the
 * exchange, now or later (igw_http_hold).
 * start runs once per worker, on that worker's own thread (during
 * igw_http_create, one worker at a time), before the worker serves (so it
 * may register sockets with the loop), with the bound listening port (the
 * one chosen when the configured port is 0); stop runs on the same thread
 * during igw_http_destroy, after the worker drained and ran the tasks
 * posted to it. Everything made on a worker's loop lives and dies on its
 * thread. Any hook may be NULL. */
typedef struct igw_http_app {
    void (*handle)(void *arg, igw_exchange *ex, const struct igw_request *req);
    const igw_http_route *routes;
    unsigned nroutes;
    const igw_http_files *files;
    void *(*start)(void *arg, unsigned worker, uint16_t port, struct st_h2o_evloop_t *loop, char *err,
                   size_t errlen);
    void (*stop)(void *arg, void *state);
    /* During a stop: true when the worker's state has nothing in flight
     * (the drain waits for it, like for open connections). */
    bool (*idle)(void *arg, void *state);
    void *arg;
} igw_http_app;

/* Prepares the server: h2o configuration, metrics, one bound listening
 * socket, one thread with its loop and one app state per worker (so an
 * address in use or an app failure fails here); the workers wait for
 * igw_http_start. The config is copied and must be resolved (threads,
 * max_body set); app may be NULL (nroutes plus its files at most
 * IGW_HTTP_ROUTES_MAX). NULL with err. */
igw_server *igw_http_create(const igw_config *cfg, const igw_http_app *app, char *err, size_t errlen);

/* The number of workers. */
unsigned igw_http_workers(const igw_server *s);

/* Runs fn(state, arg) on worker `worker`'s thread, state being that
 * worker's app state. Any thread. 0, or -1 when out of memory (fn is not
 * run). Tasks still queued when the worker stops run during destroy. */
int igw_http_post(igw_server *s, unsigned worker, void (*fn)(void *state, void *arg), void *arg);

/* The app state of the worker answering `ex`. */
void *igw_http_state(igw_exchange *ex);

/* Keeps the exchange past the handler's return, for a reply that comes
 * later on this worker's thread (a database result). Returns the exchange
 * to use from now on (the handler's one is not). If the client goes away
 * first, the exchange is cancelled: the reply then only releases it.
 * A held exchange must be answered exactly once. */
igw_exchange *igw_http_hold(igw_exchange *ex);

/* The arena holding the request's decoded data (it moves with a held
 * exchange); handlers may allocate from it until their reply. */
igw_arena *igw_http_arena(igw_exchange *ex);

/* True when a held exchange's client went away (its reply is dropped). */
bool igw_http_cancelled(const igw_exchange *ex);

/* The worker's buffer for a success reply's data, emptied: encode the
 * reply into it, then igw_http_reply_data. Valid until that call. */
igw_jw *igw_http_data(igw_exchange *ex);

/* Answers 200 with the data written into igw_http_data's buffer, or the
 * internal class if writing it failed. */
void igw_http_reply_data(igw_exchange *ex);

/* A request header by lower-case name (first occurrence), ptr NULL when
 * absent. Only while the handler runs (before igw_http_hold's return is used). */
igw_str igw_http_header_value(igw_exchange *ex, const char *name);

/* Walks the elements of a list header (RFC 7230 #rule) over all its
 * occurrences, in order: comma-separated, blanks around an element trimmed,
 * empty elements skipped, elements returned as sent (not checked as
 * tokens). `name` is lower case; start with `*it` zeroed. Returns the next
 * element, ptr NULL after the last one or once the client went away. Valid
 * while the request is (a held exchange's too, until its reply). */
typedef struct igw_http_list {
    size_t header; /* 1 + the index of the occurrence being read; 0 before the first */
    size_t pos;    /* where the next element starts in it; past its end when read */
} igw_http_list;
igw_str igw_http_list_next(igw_exchange *ex, const char *name, igw_http_list *it);

/* The request body as received; same lifetime as igw_http_header_value. */
igw_str igw_http_body(igw_exchange *ex);

/* Answers 200 with the `size` bytes of the open regular file `fd` (taken
 * over: closed when done) as an attachment named `name`, streamed in
 * slices; HEAD gets the headers only. A request for one satisfiable byte
 * range (Range: bytes=F-L, F-, -N) gets 206 with that range (players seek
 * in Ogg files); any other Range header, the whole file. */
void igw_http_reply_file(igw_exchange *ex, int fd, uint64_t size, const char *name);

struct igw_ws;
struct igw_ws_hub;
struct igw_ws_handlers;

/* True when the request is a WebSocket handshake (ws.h's rules). */
bool igw_http_is_ws_handshake(igw_exchange *ex);

/* Upgrades the request to a WebSocket on hub (the 101 is its answer:
 * counted, logged, and the exchange released). NULL when it cannot be
 * upgraded; the exchange then still needs its answer. */
struct igw_ws *igw_http_upgrade_ws(igw_exchange *ex, struct igw_ws_hub *hub, const struct igw_ws_handlers *h);

/* The request path without the query string, as sent (not decoded). */
igw_str igw_http_path(igw_exchange *ex);

/* The request method as sent; only while the handler runs. */
igw_str igw_http_method(igw_exchange *ex);

/* The query string after '?', or ptr NULL when there is none. */
igw_str igw_http_query(igw_exchange *ex);

/* The request id (16 hex characters), for logs. */
const char *igw_http_request_id(const igw_exchange *ex);

/* The route slot of the request in /metrics and the access log: for a
 * route outside the schema, the slot its igw_http_route was given. */
void igw_http_set_route(igw_exchange *ex, unsigned route);

/* The port actually listened on (differs from the config when it said 0). */
uint16_t igw_http_port(const igw_server *s);

/* Lets the workers (whose threads igw_http_create started and set up)
 * accept and serve. 0; err is kept for callers of an earlier contract. */
int igw_http_start(igw_server *s, char *err, size_t errlen);

/* Asks every worker to stop: close its listener, let in-flight requests
 * finish within cfg.shutdown_timeout_ms. Returns at once; a second call
 * does nothing. */
void igw_http_stop(igw_server *s);

/* Waits for the workers. 0 when every connection drained, -1 when some
 * were still open at the deadline (they are abandoned). */
int igw_http_join(igw_server *s);

/* Ends the workers' threads, each freeing what it made on its loop (the
 * app's stop hook runs there), then releases the rest. After igw_http_join,
 * or when never started (then it stops them itself). */
void igw_http_destroy(igw_server *s);

/* Answers with the error envelope of class `cls` (igw_err):
 * {"code","msg","data":{"reason","path"}}, HTTP status from the class. */
void igw_http_reply_error(igw_exchange *ex, int cls, const char *reason, const char *path);

/* Answers not_implemented for a route that has no handler yet: the one
 * class a route may answer without declaring it in the schema. Every other
 * reply_error of a handler is checked against the route's `errors` (logged
 * as a bug, and fatal in test builds, when the class is not there). */
void igw_http_reply_unbound(igw_exchange *ex);

/* Answers 200 with {"code":200,"msg":"success","data":<data>}; `data` must
 * be one valid JSON value. */
void igw_http_reply_ok(igw_exchange *ex, const char *data, size_t len);

/* Answers with class `cls`'s status and {"code","msg","data":<data>}: an
 * error whose data says more than reason and path (checked against the
 * route's contract like igw_http_reply_error). `data` must be one valid
 * JSON value. */
void igw_http_reply_envelope(igw_exchange *ex, int cls, const char *data, size_t len);

/* Answers with class `cls`'s status and the `len` bytes of `body` (copied)
 * as `content_type`: a reply that is not JSON. */
void igw_http_reply_body(igw_exchange *ex, int cls, const char *content_type, const char *body, size_t len);

/* True when the connection's peer is on this host (127.0.0.0/8, ::1, or
 * ::ffff:127.x). */
bool igw_http_peer_loopback(igw_exchange *ex);

/* The Prometheus text (version 0.0.4) of the requests the server answering
 * `ex` counted (http/metrics.h), then the families extra(arg, f) appends
 * (extra may be NULL), in a malloc'd buffer: *out and *len set, 0, or -1
 * when out of memory. free() it. */
int igw_http_metrics(igw_exchange *ex, void (*extra)(void *arg, FILE *f), void *arg, char **out, size_t *len);

#endif
