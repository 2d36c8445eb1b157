/* app.h - composition: builds igwd's rooms from the settings, wires them
 * (routes into the HTTP transport, MQTT uplinks into the workers' edges)
 * and starts and stops them in order. The state it builds is
 * routes/context.h's. */
#ifndef IGW_APP_H
#define IGW_APP_H

#include "routes/context.h"

/* Fills *app from the resolved settings: reads the MQTT password and URL
 * key files, opens (creating) the storage root. 0, or -1 with err. */
int igw_app_init(igw_app *app, const igw_config *cfg, char *err, size_t errlen);

/* The worker hooks for igw_http_create. */
igw_http_app igw_app_http_hooks(igw_app *app);

/* Starts the session engine and its media core (session/engine.h), after
 * igw_http_create has checked the configuration and before igw_http_start
 * lets a worker post to it (the engine answers the workers of srv);
 * igw_app_free stops it. 0, or -1 with err. */
int igw_app_start_engine(igw_app *app, igw_server *srv, char *err, size_t errlen);

/* Connects to the broker (when configured) and feeds its uplinks to the
 * workers of srv, each device always to the same worker (its order kept).
 * 0, or -1 with err. */
int igw_app_start_mqtt(igw_app *app, igw_server *srv, char *err, size_t errlen);

/* The stop, in order: igw_app_pause_mqtt (no more uplinks are read; those
 * not read stay with the broker), then the HTTP stop and join (the workers
 * drain their connections and uplinks, replies still go out, the engine
 * still answering), then igw_app_stop_mqtt, then igw_app_stop_engine (its
 * last answers are posted to workers that still exist: they run them as
 * they end), then igw_http_destroy and igw_app_free. */
void igw_app_pause_mqtt(igw_app *app);
void igw_app_stop_mqtt(igw_app *app);
void igw_app_stop_engine(igw_app *app);
void igw_app_free(igw_app *app);

#endif
