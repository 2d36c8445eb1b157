/* request.h - the strict stage of every request, driven by generated tables.
 *
 * Before any handler, authentication or database work, a request passes:
 * route (path, then method), body presence, body cap, Content-Type, path
 * parameters, the headers the route reads, then the strict body decoder.
 * The generated code (generated/api.c) supplies the route table, the path
 * matcher and the error classes as an igw_api; everything here is the same
 * for every schema. */
#ifndef IGW_REQUEST_H
#define IGW_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "json.h"
#include "jw.h"

#define IGW_MAX_PATH_PARAMS 8   /* sema enforces these bounds per route */
#define IGW_MAX_ROUTE_HEADERS 16

typedef enum igw_auth_kind { IGW_AUTH_KIND_NONE, IGW_AUTH_KIND_DEVICE, IGW_AUTH_KIND_USER } igw_auth_kind;
typedef enum igw_body_kind { IGW_BODY_KIND_NONE, IGW_BODY_KIND_JSON, IGW_BODY_KIND_MULTIPART } igw_body_kind;

/* Checks one path parameter or header value; 0, or -1 with the scanner's
 * error. Writes to j only when it fails (the strict stage reuses one j). */
typedef int (*igw_text_check_fn)(igw_json *j, igw_str value);

/* One route, as generated from the schema. */
typedef struct igw_route_def {
    int id;
    const char *name;
    const char *method;
    const char *path;
    igw_auth_kind auth;
    bool gate_signaling;
    igw_body_kind body;
    size_t body_limit; /* bytes, checked before decoding */
    size_t body_size;  /* sizeof the decoded request struct (JSON bodies) */
    int (*decode)(igw_json *j, void *out);
    void (*encode)(igw_jw *w, const void *in);
    const char *const *params; /* path parameter names, in path order */
    const igw_text_check_fn *param_checks;
    const char *const *param_reasons;
    uint32_t nparams;
    const char *const *headers; /* headers the route reads, lower case */
    const igw_text_check_fn *header_checks;
    const char *const *header_reasons, *const *header_missing;
    uint32_t nheaders;
    uint64_t required_headers; /* bit i: headers[i] must be present */
    /* The schema's require/forbid among the headers (NULL: none): 0, or -1
     * with the reason and the header it names. */
    int (*header_rules)(const igw_str *headers, const char **reason, const char **name);
    const char *const *parts;  /* multipart part names; required ones first */
    uint32_t nparts, nrequired_parts;
    bool reject_other_parts;
    const int *errors; /* error classes (igw_err) the route may answer with */
    uint32_t nerrors;
} igw_route_def;

/* What the generated code provides to the strict stage. */
typedef struct igw_api {
    const igw_route_def *routes;
    uint32_t nroutes;
    /* The route whose path matches (method not considered), or NULL;
     * path parameters land in params. */
    const igw_route_def *(*match)(const char *path, size_t plen, igw_str params[IGW_MAX_PATH_PARAMS]);
    /* Error classes (igw_err values) of the built-in situations. */
    int cls_decode, cls_reserved, cls_body_cap, cls_no_route, cls_method, cls_media_type, cls_internal;
} igw_api;

/* One request header as received. */
typedef struct igw_header {
    igw_str name, value;
} igw_header;

/* A request as the transport saw it. */
typedef struct igw_http_request {
    igw_str method;
    igw_str path; /* without the query string */
    const igw_header *headers;
    size_t nheaders;
    igw_str body;
} igw_http_request;

/* Why the strict stage refused a request. */
typedef struct igw_decode_error {
    int cls;               /* igw_err */
    igw_json_errkind kind; /* IGW_JERR_NONE for route-level failures */
    const char *reason;    /* specific, static, safe to send */
    char path[512];        /* JSON Pointer into the body, "" for the whole request */
} igw_decode_error;

/* A request that passed the strict stage. */
typedef struct igw_request {
    const igw_route_def *route;
    igw_str params[IGW_MAX_PATH_PARAMS];
    igw_str headers[IGW_MAX_ROUTE_HEADERS]; /* route->headers order; ptr NULL when absent */
    void *body; /* decoded struct for JSON bodies (in the arena), else NULL */
} igw_request;

/* Runs the strict stage on `in`. 0 with *req filled, or -1 with *err. */
int igw_request_decode(const igw_api *api, igw_request *req, const igw_http_request *in, igw_arena *a,
                       igw_decode_error *err);

/* The body stage alone, for a payload that arrived by another transport
 * (an MQTT uplink carries the send route's body): cap, then the route's
 * strict decoder. 0 with *out set (in the arena), or -1 with *err. */
int igw_request_decode_body(const igw_api *api, const igw_route_def *r, igw_str body, igw_arena *a, void **out,
                            igw_decode_error *err);

/* A route handler; receives a request that passed the strict stage. */
typedef int (*igw_handler_fn)(void *ctx, const igw_request *req);

/* Runs the strict stage and calls handlers[route id]. Returns the handler's
 * result, or -1 with *err when the stage refused the request (or the route
 * has no handler: internal class). */
int igw_dispatch(const igw_api *api, const igw_handler_fn *handlers, void *ctx, const igw_http_request *in,
                 igw_arena *a, igw_decode_error *err);

/* The value of header `name` (case-insensitive; pass it lower case) in
 * `in`, or ptr NULL. */
igw_str igw_http_header(const igw_http_request *in, const char *name, size_t len);

#endif
