/* engine.h - the session engine of this node: the one loop every session,
 * camera leg and media event lives on, and the WebRTC media core
 * (src/media/media.h) it drives (docs/sessions.md, "Threads and the owner
 * node").
 *
 * The engine runs its own thread (core/loop.h): HTTP workers and the MQTT
 * thread hand it work with igw_engine_post, and the media core's events
 * come to it through the core's event fd, wrapped in an h2o socket on that
 * loop. Packets never cross threads: the core forwards on its own.
 *
 * Build step 2: the loop and the media core, their life and their
 * counters. Sessions (step 4) will be state of this loop.
 *
 * Threads: start and stop from the thread that owns the engine (app.c);
 * igw_engine_post and igw_engine_stats_get from any thread. */
#ifndef IGW_SESSION_ENGINE_H
#define IGW_SESSION_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "media.h"

typedef struct igw_engine igw_engine;

/* Media events seen, by kind (igw_media_event_kind), and how many the
 * core's queue dropped before the engine read them. */
#define IGW_ENGINE_EVENT_KINDS (IGW_MEDIA_EV_CLOSED + 1)

typedef struct igw_engine_stats {
    unsigned media_threads; /* 0: no media core */
    uint64_t events[IGW_ENGINE_EVENT_KINDS];
} igw_engine_stats;

/* Starts the engine's loop and, when media is not NULL, the media core with
 * that configuration (copied). NULL with err (the core's own reason: an
 * address it cannot use, ...). */
igw_engine *igw_engine_start(const igw_media_config *media, char *err, size_t errlen);

/* The media core's certificate fingerprint (SDP form), "" without media. */
const char *igw_engine_fingerprint(const igw_engine *e);

/* Runs fn(arg) on the engine's loop. 0, or -1 (stopping, out of memory:
 * fn never runs). */
int igw_engine_post(igw_engine *e, void (*fn)(void *arg), void *arg);

void igw_engine_stats_get(const igw_engine *e, igw_engine_stats *out);

/* The Prometheus families igw_media_up, igw_media_threads and
 * igw_media_events_total{kind} of `s`. */
void igw_engine_metrics_write(FILE *f, const igw_engine_stats *s);

/* Stops the media core (every peer closed, its events discarded) and the
 * loop, then frees. NULL is ignored. */
void igw_engine_stop(igw_engine *e);

#endif
