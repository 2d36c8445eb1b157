/* context.h - what the route handlers read: the process-wide parts
 * (settings, MQTT client, keys, storage) and each worker's own (database
 * connections, device edge, login, push, caches). app.c builds and wires
 * them; the HTTP transport creates a worker's state through the hooks of
 * igw_app_http_hooks, and handlers reach it with igw_http_state(). Rooms
 * below routes/ never see these structures: they get what they need as
 * arguments. */
#ifndef IGW_ROUTES_CONTEXT_H
#define IGW_ROUTES_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "auth/login.h"
#include "call/call.h"
#include "command/command.h"
#include "command/modelcache.h"
#include "command/pending.h"
#include "core/config.h"
#include "core/db.h"
#include "core/mqtt.h"
#include "core/redis.h"
#include "edge/edge.h"
#include "edge/presence.h"
#include "command/method.h"
#include "event/push.h"
#include "http/http.h"
#include "routes/wspush.h"
#include "session/engine.h"
#include "session/node.h"

#define IGW_APP_URL_KEY_LEN 32

typedef struct igw_app {
    igw_config cfg;
    igw_call_standin_config standin; /* cfg's stand-in IM settings, as the runtime takes them */
    igw_server *srv;   /* set by igw_app_start_mqtt */
    _Atomic(igw_mqtt *) mqtt; /* NULL when no broker is configured; read by workers */
    /* Drains of lapsed nodes' broker sessions (node.h, mqtt.h), started by
     * worker 0's node, stopped with the broker client; under drains_mu. */
    pthread_mutex_t drains_mu;
    struct igw_app_drain *drains;
    bool drains_closed;                /* igw_app_stop_mqtt came: no new one */
    char mqtt_password[256];           /* the broker password, for the drains */
    struct igw_worker *workers[IGW_CONFIG_MAX_THREADS]; /* set before the workers run */
    unsigned char url_key[IGW_APP_URL_KEY_LEN]; /* signs download URLs */
    unsigned char jwt_key[1024];                /* verifies login tokens */
    size_t jwt_key_len;                         /* 0: no login configured */
    int storage_fd;    /* the storage root, opened once */
    igw_pending *pending; /* device commands published by this process, until their reply (results.c) */
    igw_node_stats node; /* this process as a node (worker 0's igw_node writes it; metrics read it) */
    char node_id[IGW_NODE_ID_MAX + 1]; /* set by worker 0's start (igw_http_create), before the engine starts */
    igw_engine *engine;  /* the session engine and its media core; stopped after the workers */
    igw_presence_stats presence; /* device presence facts (the workers' igw_presence write it; metrics read it) */
    /* The routes outside the schema (ops/), listed for the transport by
     * igw_app_http_hooks into `routes`. */
    struct igw_ops *ops;           /* /healthz, /readyz, /metrics */
    struct igw_download *download; /* signed download URLs */
    struct igw_console *console;   /* the browser console's files; NULL without console_dir */
    igw_http_route routes[IGW_HTTP_ROUTES_MAX];
    igw_command_site site; /* what the command handlers are lent: cfg's and url_key */
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
    igw_redis *redis; /* NULL when no Redis is configured */
    igw_call *call;   /* the conference runtime (call.h) on db[0] and redis; NULL: none wired */
    igw_login *login; /* NULL without a database or a login key */
    struct igw_chores *chores; /* worker 0: command deadlines and the outbox sweep */
    igw_node *node;   /* worker 0: the nodes row, heartbeat and session sweep, on chore_db */
    igw_push *push;   /* events_push's deliveries, woken by LISTEN/NOTIFY; NULL without a database */
    igw_wspush *wspush; /* events_push's WebSockets, streaming push's deliveries; NULL without a database */
    igw_edge *edge;  /* NULL without a database */
    igw_presence *presence; /* device presence facts, on db[0]; NULL without a database */
    igw_modelcache *models; /* /commands: parsed thing models by product */
    igw_command_env commands; /* /commands' domain: db[0], models, the app's pending map and MQTT client */
} igw_worker;

#endif
