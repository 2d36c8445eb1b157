/* app.h - what igwd's handlers share: the process-wide parts (settings, MQTT
 * client, upload key) and each worker's own (database connection, device
 * edge). The HTTP transport creates a worker's state through the hooks of
 * igw_app_http_hooks; handlers reach it with igw_http_state(). */
#ifndef IGW_APP_H
#define IGW_APP_H

#include <stdatomic.h>
#include <stddef.h>

#include "config.h"
#include "db.h"
#include "edge.h"
#include "http.h"
#include "mqtt.h"
#include "login.h"
#include "modelcache.h"
#include "pending.h"
#include "push.h"
#include "redis.h"

#define IGW_APP_URL_KEY_LEN 32

typedef struct igw_app {
    igw_config cfg;
    igw_server *srv;   /* set by igw_app_start_mqtt */
    _Atomic(igw_mqtt *) mqtt; /* NULL when no broker is configured; read by workers */
    struct igw_worker *workers[IGW_CONFIG_MAX_THREADS]; /* set before the workers run */
    unsigned char url_key[IGW_APP_URL_KEY_LEN]; /* signs download URLs */
    unsigned char jwt_key[1024];                /* verifies login tokens */
    size_t jwt_key_len;                         /* 0: no login configured */
    int storage_fd;    /* the storage root, opened once */
    igw_pending *pending; /* device commands published by this process, until their reply (results.c) */
} igw_app;

/* One worker's state (igw_http_state). */
typedef struct igw_worker {
    igw_app *app;
    unsigned index;
    atomic_uint tasks; /* MQTT uplinks posted to this worker, not yet taken */
    igw_db *db[IGW_EDGE_MAX_DB]; /* db_connections of them; none when no database is configured */
    unsigned ndb;
    /* Connections of their own, so requests never queue behind them: the
     * push's LISTEN (a notification waits while its connection is busy) and,
     * on worker 0, the chores' batches of overdue results. */
    igw_db *listen_db, *chore_db;
    igw_redis *redis; /* NULL when no Redis is configured (live state of later issues) */
    igw_login *login; /* NULL without a database or a login key */
    struct igw_chores *chores; /* worker 0: command deadlines and the outbox sweep */
    igw_push *push;   /* events_push: WebSockets woken by LISTEN/NOTIFY; NULL without a database */
    igw_edge *edge;  /* NULL without a database */
    igw_modelcache *models; /* /commands: parsed thing models by product */
} igw_worker;

/* Fills *app from the resolved settings: reads the MQTT password and URL
 * key files, opens (creating) the storage root. 0, or -1 with err. */
int igw_app_init(igw_app *app, const igw_config *cfg, char *err, size_t errlen);

/* The worker hooks for igw_http_create. */
igw_http_app igw_app_http_hooks(igw_app *app);

/* Connects to the broker (when configured) and feeds its uplinks to the
 * workers of srv, each device always to the same worker (its order kept).
 * 0, or -1 with err. */
int igw_app_start_mqtt(igw_app *app, igw_server *srv, char *err, size_t errlen);

/* The stop, in order: igw_app_pause_mqtt (no more uplinks are read; those
 * not read stay with the broker), then the HTTP stop and join (the workers
 * drain their connections and uplinks, replies still go out), then
 * igw_app_stop_mqtt, then igw_http_destroy and igw_app_free. */
void igw_app_pause_mqtt(igw_app *app);
void igw_app_stop_mqtt(igw_app *app);
void igw_app_free(igw_app *app);

#endif
