/* request.c - see request.h. */
#include "request.h"

#include "bytes.h"
#include "field.h"

#include <string.h>
#include <strings.h>

static void set_error(igw_decode_error *err, int cls, igw_json_errkind kind, const char *reason, const char *path)
{
    err->cls = cls;
    err->kind = kind;
    err->reason = reason;
    size_t n = strlen(path);
    if (n >= sizeof err->path)
        n = sizeof err->path - 1;
    memcpy(err->path, path, n);
    err->path[n] = '\0';
}

/* s[0..n) equals the lower-case w[0..n), ASCII case ignored. Clients and
 * transports mostly send the lower-case bytes (h2o lower-cases header
 * names): the exact bytes are tried before the case-insensitive compare.
 * Inline, so that a constant n unrolls igw_bytes_eq. */
static inline bool lower_eq(const char *s, const char *w, size_t n)
{
    return igw_bytes_eq(s, w, n) || strncasecmp(s, w, n) == 0;
}

igw_str igw_http_header(const igw_http_request *in, const char *name, size_t len)
{
    for (size_t i = 0; i < in->nheaders; i++) {
        igw_str n = in->headers[i].name;
        if (n.len == len && lower_eq(n.ptr, name, len))
            return in->headers[i].value;
    }
    return (igw_str){NULL, 0};
}

#define MEDIA_JSON "application/json"
#define MEDIA_MULTIPART "multipart/form-data"

/* RFC 9110 media type: type/subtype (case-insensitive), then optional
 * whitespace and either the end or ';' parameters (see charset_ok). */
static bool media_is(igw_str ct, const char *want, size_t w)
{
    if (ct.len < w || !lower_eq(ct.ptr, want, w))
        return false;
    while (w < ct.len && (ct.ptr[w] == ' ' || ct.ptr[w] == '\t'))
        w++;
    return w == ct.len || ct.ptr[w] == ';';
}

/* The request's method is the route's (a NUL-terminated token): no strlen
 * and no call for four bytes. */
static bool method_is(const char *want, igw_str got)
{
    for (size_t i = 0; i < got.len; i++)
        if (want[i] == '\0' || want[i] != got.ptr[i])
            return false;
    return want[got.len] == '\0';
}

/* The media type's parameters (igw_field_param_next): false when a charset
 * names anything but UTF-8. JSON is UTF-8 (RFC 8259 §8.1) and is decoded as
 * such whatever a client says, so a client that says otherwise is refused
 * rather than misread; so is a charset parameter that does not parse. Other
 * parameters, malformed or not, are not this check's business (a malformed
 * one is skipped to the next ';'). */
static bool charset_ok(igw_str ct)
{
    const char *s = memchr(ct.ptr, ';', ct.len), *end = ct.ptr + ct.len, *name;
    char val[8]; /* "utf-8" and its NUL; a longer value is not UTF-8 */
    size_t nlen, vlen;
    while (s) {
        int rc = igw_field_param_next(&s, end, &name, &nlen, val, sizeof val, &vlen);
        if (rc == 0)
            break;
        if (rc < 0) {
            /* A charset that does not parse cannot be shown to be UTF-8. */
            const char *n = igw_field_skip_ows(s, end);
            n = igw_field_skip_ows(n + (n < end && *n == ';'), end);
            if (igw_field_ieq(n, (size_t)(igw_field_skip_token(n, end) - n), "charset"))
                return false;
            s = memchr(s + 1, ';', (size_t)(end - s - 1));
            continue;
        }
        if (igw_field_ieq(name, nlen, "charset") && !igw_field_ieq(val, vlen, "utf-8"))
            return false;
    }
    return true;
}

/* Collects the route's headers into req->headers and checks them: each
 * declared header at most once, required ones present, values by rule
 * (checked with j, fresh: a check writes to it only when it fails). */
static int check_headers(const igw_api *api, igw_request *req, const igw_http_request *in, igw_json *j,
                         igw_decode_error *err)
{
    const igw_route_def *r = req->route;
    for (uint32_t i = 0; i < r->nheaders; i++)
        req->headers[i] = (igw_str){NULL, 0};
    for (uint32_t i = 0; i < r->nheaders; i++) {
        for (size_t k = 0; k < in->nheaders; k++) {
            const igw_header *h = &in->headers[k];
            if (!igw_field_ieq(h->name.ptr, h->name.len, r->headers[i])) /* the table's names are lower case */
                continue;
            if (req->headers[i].ptr) {
                set_error(err, api->cls_decode, IGW_JERR_DUPLICATE, r->header_reasons[i], "");
                return -1;
            }
            /* An empty value is still present: keep a non-NULL pointer. */
            req->headers[i] = (igw_str){h->value.ptr ? h->value.ptr : "", h->value.len};
        }
        if (!req->headers[i].ptr) {
            if (r->required_headers & (UINT64_C(1) << i)) {
                set_error(err, api->cls_decode, IGW_JERR_MISSING, r->header_missing[i], "");
                return -1;
            }
            continue;
        }
        if (r->header_checks[i](j, req->headers[i])) {
            set_error(err, api->cls_decode, j->err, r->header_reasons[i], "");
            return -1;
        }
    }
    const char *reason, *name;
    if (r->header_rules && r->header_rules(req->headers, &reason, &name)) {
        /* The path names the header the rule is about (headers have no JSON Pointer). */
        set_error(err, api->cls_decode, IGW_JERR_MISSING, reason, name);
        return -1;
    }
    return 0;
}

int igw_request_decode(const igw_api *api, igw_request *req, const igw_http_request *in, igw_arena *a,
                       igw_decode_error *err)
{
    /* Only what the route uses is set: params by the matcher, headers by
     * check_headers; the struct is too big to clear on every request. */
    req->route = NULL;
    req->body = NULL;
    const igw_route_def *r = api->match(in->path.ptr, in->path.len, req->params);
    if (!r) {
        set_error(err, api->cls_no_route, IGW_JERR_NONE, "no such route", "");
        return -1;
    }
    if (!method_is(r->method, in->method)) {
        set_error(err, api->cls_method, IGW_JERR_NONE, "method not allowed on this route", "");
        return -1;
    }
    req->route = r;
    size_t len = in->body.len;
    if (r->body == IGW_BODY_KIND_NONE && len != 0) {
        set_error(err, api->cls_decode, IGW_JERR_TRAILING, "this route takes no body", "");
        return -1;
    }
    if (len > r->body_limit) {
        set_error(err, api->cls_body_cap, IGW_JERR_SIZE, "body exceeds the route's cap", "");
        return -1;
    }
    if (r->body != IGW_BODY_KIND_NONE) {
        bool json = r->body == IGW_BODY_KIND_JSON;
        igw_str ct = igw_http_header(in, "content-type", 12);
        if (!ct.ptr || !(json ? media_is(ct, MEDIA_JSON, sizeof MEDIA_JSON - 1)
                              : media_is(ct, MEDIA_MULTIPART, sizeof MEDIA_MULTIPART - 1))) {
            set_error(err, api->cls_media_type, IGW_JERR_NONE,
                      json ? "expected Content-Type application/json" : "expected Content-Type multipart/form-data",
                      "");
            return -1;
        }
        if (json && ct.len > sizeof MEDIA_JSON - 1 && !charset_ok(ct)) { /* parameters follow the type */
            set_error(err, api->cls_media_type, IGW_JERR_NONE,
                      "a JSON body is UTF-8: charset, when given, must be utf-8", "");
            return -1;
        }
    }
    /* One scanner state for every text check: a check writes to it only
     * when it fails, and the first failure ends the request. */
    igw_json j;
    if (r->nparams || r->nheaders)
        igw_json_init(&j, "", 0, NULL, 1);
    for (uint32_t i = 0; i < r->nparams; i++) {
        if (r->param_checks[i](&j, req->params[i])) {
            set_error(err, api->cls_decode, j.err, r->param_reasons[i], "");
            return -1;
        }
    }
    if (r->nheaders && check_headers(api, req, in, &j, err))
        return -1;
    if (r->body != IGW_BODY_KIND_JSON)
        return 0; /* no body, or multipart, which the handler streams */
    return igw_request_decode_body(api, r, in->body, a, &req->body, err);
}

int igw_request_decode_body(const igw_api *api, const igw_route_def *r, igw_str body, igw_arena *a, void **out,
                            igw_decode_error *err)
{
    if (body.len > r->body_limit) {
        set_error(err, api->cls_body_cap, IGW_JERR_SIZE, "body exceeds the route's cap", "");
        return -1;
    }
    void *v = igw_arena_alloc(a, r->body_size);
    if (!v) {
        set_error(err, api->cls_internal, IGW_JERR_NOMEM, "out of memory", "");
        return -1;
    }
    igw_json j;
    igw_json_init(&j, body.ptr, body.len, a, IGW_JSON_MAX_DEPTH);
    if (r->decode(&j, v) == 0 && igw_json_finish(&j) == 0) {
        *out = v;
        return 0;
    }
    int cls = j.err == IGW_JERR_RESERVED ? api->cls_reserved
            : j.err == IGW_JERR_NOMEM    ? api->cls_internal
                                         : api->cls_decode;
    set_error(err, cls, j.err, j.reason, j.path);
    return -1;
}

int igw_dispatch(const igw_api *api, const igw_handler_fn *handlers, void *ctx, const igw_http_request *in,
                 igw_arena *a, igw_decode_error *err)
{
    igw_request req;
    if (igw_request_decode(api, &req, in, a, err))
        return -1;
    if (!handlers[req.route->id]) {
        set_error(err, api->cls_internal, IGW_JERR_NONE, "route has no handler", "");
        return -1;
    }
    return handlers[req.route->id](ctx, &req);
}
