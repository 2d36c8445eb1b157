/* ops.c - see ops.h. */
#include "ops/ops.h"

#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "core/ready.h"
#include "decode.h"
#include "jw.h"

struct igw_ops {
    const igw_config *cfg;
    igw_ops_hooks hooks;
};

igw_ops *igw_ops_create(const igw_config *cfg, const igw_ops_hooks *hooks)
{
    igw_ops *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->cfg = cfg;
    if (hooks)
        o->hooks = *hooks;
    return o;
}

void igw_ops_destroy(igw_ops *o)
{
    free(o);
}

/* The request is one of `path`: false when it is not; else true, with
 * another method than GET and HEAD answered (under "none"), or the slot
 * given and *serve set. */
static bool route_of(igw_exchange *ex, const char *path, unsigned slot, bool *serve)
{
    *serve = false;
    if (!igw_str_eq(igw_http_path(ex), path, strlen(path)))
        return false;
    igw_str m = igw_http_method(ex);
    if (!igw_str_eq(m, "GET", 3) && !igw_str_eq(m, "HEAD", 4)) {
        igw_http_reply_error(ex, IGW_ERR_METHOD, "method not allowed on this route", "");
        return true;
    }
    igw_http_set_route(ex, slot);
    *serve = true;
    return true;
}

bool igw_ops_healthz(void *arg, igw_exchange *ex, unsigned slot)
{
    (void)arg;
    bool serve;
    if (!route_of(ex, "/healthz", slot, &serve))
        return false;
    if (serve)
        igw_http_reply_ok(ex, "{\"status\":\"alive\"}", 18);
    return true;
}

bool igw_ops_readyz(void *arg, igw_exchange *ex, unsigned slot)
{
    igw_ops *o = arg;
    bool serve;
    if (!route_of(ex, "/readyz", slot, &serve))
        return false;
    if (!serve)
        return true;
    unsigned known = 0, down = o->hooks.ready ? o->hooks.ready(o->hooks.arg, &known) : 0;
    down = (down & known) | igw_ready_check(o->cfg, known);
    if (!down) {
        igw_http_reply_ok(ex, "{\"status\":\"ready\"}", 18);
        return true;
    }
    /* The unavailable envelope, its data naming what is down. */
    igw_jw *jw = igw_http_data(ex);
    igw_jw_object_begin(jw);
    igw_jw_key(jw, "reason", 6);
    igw_jw_string(jw, "dependencies unreachable", 24);
    igw_jw_key(jw, "path", 4);
    igw_jw_string(jw, "", 0);
    igw_jw_key(jw, "down", 4);
    igw_jw_array_begin(jw);
    for (unsigned bit = 1; bit & IGW_READY__ALL; bit <<= 1)
        if (down & bit)
            igw_jw_string(jw, igw_ready_name(bit), strlen(igw_ready_name(bit)));
    igw_jw_array_end(jw);
    igw_jw_object_end(jw);
    if (igw_jw_status(jw))
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
    else
        igw_http_reply_envelope(ex, IGW_ERR_UNAVAILABLE, jw->buf, jw->len);
    return true;
}

bool igw_ops_metrics(void *arg, igw_exchange *ex, unsigned slot)
{
    igw_ops *o = arg;
    bool serve;
    if (!route_of(ex, "/metrics", slot, &serve))
        return false;
    if (!serve)
        return true;
    /* The counters say how the server is used: not for the public listener unless told. */
    if (!o->cfg->metrics_public && !igw_http_peer_loopback(ex)) {
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "no such route", "");
        return true;
    }
    char *text = NULL;
    size_t len = 0;
    if (igw_http_metrics(ex, o->hooks.metrics, o->hooks.arg, &text, &len)) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return true;
    }
    igw_http_reply_body(ex, IGW_ERR_OK, "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text); /* the reply copied it */
    return true;
}
