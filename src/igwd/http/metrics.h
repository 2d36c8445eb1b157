/* metrics.h - request counters and latency histograms in Prometheus form.
 *
 * Each worker thread owns one shard and is its only writer (relaxed atomic
 * load + store, no lock, no shared cache line); a scrape sums the shards.
 * Route slots are the generated routes, then the ones the registry is
 * created with (the app's routes outside the schema), then "none" for
 * requests that matched no route (or no method of it); codes are the
 * error classes (igw_err), labelled with the class's envelope code. */
#ifndef IGW_METRICS_H
#define IGW_METRICS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "api.h"

#define IGW_METRICS_EXTRA_MAX 8 /* slots between the generated routes and "none" */

typedef struct igw_metrics igw_metrics;
typedef struct igw_metrics_shard igw_metrics_shard;

/* Creates the registry with `nshards` shards (one per worker) and slots
 * for the generated routes, then `nextra` (at most IGW_METRICS_EXTRA_MAX)
 * named `extra[i]` (not copied: they outlive the registry), then "none".
 * NULL when out of memory or nextra is too large. Records the process
 * start time. */
igw_metrics *igw_metrics_create(unsigned nshards, const char *const *extra, unsigned nextra);
void igw_metrics_destroy(igw_metrics *m);

/* Shard `i` (< nshards), to be written by one thread only. */
igw_metrics_shard *igw_metrics_shard_get(igw_metrics *m, unsigned i);

/* Counts one request of route slot `route` answered with class `cls`
 * that took `duration_us`. Out-of-range slots or classes are ignored. */
void igw_metrics_observe(igw_metrics_shard *s, unsigned route, unsigned cls, uint64_t duration_us);

/* The slot of requests that matched no route. */
unsigned igw_metrics_none(const igw_metrics *m);

/* Name of a route slot, as used in labels and the access log ("none" for
 * one out of range). */
const char *igw_metrics_route_name(const igw_metrics *m, unsigned route);

/* Renders the Prometheus text exposition (version 0.0.4) into a malloc'd
 * buffer; *out and *len set, 0, or -1 when out of memory. free() it. */
int igw_metrics_render(igw_metrics *m, char **out, size_t *len);

/* The same, with `extra` (may be NULL) appending more families to f. */
int igw_metrics_render_with(igw_metrics *m, void (*extra)(void *arg, FILE *f), void *arg, char **out, size_t *len);

#endif
