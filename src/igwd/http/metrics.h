/* metrics.h - request counters and latency histograms in Prometheus form.
 *
 * Each worker thread owns one shard and is its only writer (relaxed atomic
 * load + store, no lock, no shared cache line); a scrape sums the shards.
 * Route slots are the generated routes, then the ops routes and "none" for
 * requests that matched no route (or no method of it); codes are the error
 * classes (igw_err), labelled with the class's envelope code. */
#ifndef IGW_METRICS_H
#define IGW_METRICS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "api.h"

enum {
    IGW_METRICS_ROUTE_HEALTHZ = IGW_ROUTE__COUNT,
    IGW_METRICS_ROUTE_READYZ,
    IGW_METRICS_ROUTE_METRICS,
    IGW_METRICS_ROUTE_DOWNLOAD, /* GET of a signed upload URL */
    IGW_METRICS_ROUTE_BENCH,    /* POST /bench/bare */
    IGW_METRICS_ROUTE_CONSOLE,  /* GET of a browser console file (console_dir) */
    IGW_METRICS_ROUTE_NONE,
    IGW_METRICS_ROUTE__COUNT
};

typedef struct igw_metrics igw_metrics;
typedef struct igw_metrics_shard igw_metrics_shard;

/* Creates the registry with `nshards` shards (one per worker); NULL when out
 * of memory. Records the process start time. */
igw_metrics *igw_metrics_create(unsigned nshards);
void igw_metrics_destroy(igw_metrics *m);

/* Shard `i` (< nshards), to be written by one thread only. */
igw_metrics_shard *igw_metrics_shard_get(igw_metrics *m, unsigned i);

/* Counts one request of route slot `route` answered with class `cls`
 * that took `duration_us`. Out-of-range slots or classes are ignored. */
void igw_metrics_observe(igw_metrics_shard *s, unsigned route, unsigned cls, uint64_t duration_us);

/* Name of a route slot, as used in labels and the access log. */
const char *igw_metrics_route_name(unsigned route);

/* Renders the Prometheus text exposition (version 0.0.4) into a malloc'd
 * buffer; *out and *len set, 0, or -1 when out of memory. free() it. */
int igw_metrics_render(igw_metrics *m, char **out, size_t *len);

/* The same, with `extra` (may be NULL) appending more families to f. */
int igw_metrics_render_with(igw_metrics *m, void (*extra)(void *arg, FILE *f), void *arg, char **out, size_t *len);

#endif
