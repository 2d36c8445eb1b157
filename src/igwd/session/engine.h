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
 * Every application session, camera leg and purpose's state is state of
 * this loop (live.h); the files of the room below it are the engine's own.
 *
 * Threads: start and stop from the thread that owns the engine (app.c);
 * igw_engine_post, igw_engine_uplink_submit and igw_engine_stats_get from
 * any thread. */
#ifndef IGW_SESSION_ENGINE_H
#define IGW_SESSION_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "api.h"
#include "core/mqtt.h"
#include "json.h"
#include "media.h"
#include "session/node.h"
#include "session/types.h"

/* Hands `u` (copied) to the engine's loop; done(arg, answer) then runs on
 * the caller's thread through `back` (copied). 0, or -1 when the engine
 * cannot take it (stopping, out of memory): done never runs. Any thread. */
int igw_engine_uplink_submit(igw_engine *e, const igw_engine_uplink *u, const igw_engine_back *back,
                             igw_engine_answer_cb done, void *arg);

/* The device's broker connection ended (a presence fact): its camera legs
 * end now, every session on them with the reason cameraOffline. 0, or -1
 * (stopping, out of memory). Any thread. */
int igw_engine_device_offline(igw_engine *e, const char *product_id, const char *device_name);

/* Starts the engine's loop and, with cfg->media, the media core (the
 * core's own reason in err when it refuses: an address it cannot use...).
 * NULL with err. */
igw_engine *igw_engine_start(const igw_engine_config *cfg, char *err, size_t errlen);

/* Hands a session command to the engine's loop; done(arg, answer) runs on
 * the caller's thread through `back`. 0, or -1 (stopping, out of memory):
 * done never runs. Any thread. */
int igw_engine_command_submit(igw_engine *e, const igw_engine_cmd *c, const igw_engine_back *back,
                              igw_engine_cmd_cb done, void *arg);

/* The media core's certificate fingerprint (SDP form), "" without media. */
const char *igw_engine_fingerprint(const igw_engine *e);

/* Runs fn(arg) on the engine's loop. 0, or -1 (stopping, out of memory:
 * fn never runs). */
int igw_engine_post(igw_engine *e, void (*fn)(void *arg), void *arg);

void igw_engine_stats_get(const igw_engine *e, igw_engine_stats *out);

/* The Prometheus families igw_media_up, igw_media_threads,
 * igw_media_events_total{kind} and igw_media_socket_* of `s`. */
void igw_engine_metrics_write(FILE *f, const igw_engine_stats *s);

/* Stops the media core (every peer closed, its events discarded) and the
 * loop, then frees. NULL is ignored. */
void igw_engine_stop(igw_engine *e);

#endif
