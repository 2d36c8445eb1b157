/* ops.h - the operator's pages, outside the schema: GET|HEAD /healthz
 * (alive), /readyz (ready, or unavailable naming what is down) and
 * /metrics (Prometheus text; loopback peers only unless metrics_public).
 * Each is a route of the transport (igw_http_route), listed by the
 * composition; another method on their paths is method_not_allowed,
 * counted under "none". Any worker thread. */
#ifndef IGW_OPS_H
#define IGW_OPS_H

#include <stdbool.h>
#include <stdio.h>

#include "core/config.h"
#include "http/http.h"

typedef struct igw_ops igw_ops;

/* What the pages read from the app. */
typedef struct igw_ops_hooks {
    /* /metrics: appends the app's families after the transport's request
     * metrics. NULL: none. */
    void (*metrics)(void *arg, FILE *f);
    /* /readyz: the IGW_READY_* bits (core/ready.h) the app judges from its
     * live connections (*known) and which of those are down (returned);
     * the others are probed. NULL: all are probed. */
    unsigned (*ready)(void *arg, unsigned *known);
    void *arg;
} igw_ops_hooks;

/* The pages over the settings `cfg` (not copied: it outlives them) and the
 * app's hooks (copied). NULL when out of memory. */
igw_ops *igw_ops_create(const igw_config *cfg, const igw_ops_hooks *hooks);
void igw_ops_destroy(igw_ops *o);

/* The routes (igw_http_route.serve, arg: the igw_ops). */
bool igw_ops_healthz(void *o, igw_exchange *ex, unsigned slot);
bool igw_ops_readyz(void *o, igw_exchange *ex, unsigned slot);
bool igw_ops_metrics(void *o, igw_exchange *ex, unsigned slot);

#endif
