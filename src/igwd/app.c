/* app.c - see app.h. */
#include "app.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <h2o.h>

#include "api.h"
#include "clock.h"
#include "event/outbox.h"
#include "core/log.h"
#include "core/ready.h"
#include "command/results.h"
#include "ops/console.h"
#include "ops/download.h"
#include "ops/ops.h"
#include "routes/routes.h"
#include "session/node.h"
#include "topic.h"

/* ---- periodic chores (worker 0) -------------------------------------------------------
 * Command deadlines are settled every CHORE_MS; the outbox is swept every
 * SWEEP_EVERY chores. Every igwd process runs them: the statements claim
 * rows with SKIP LOCKED / once-only updates, so several can share a database. */
/* Small, frequent passes: at 1000 commands/s timing out, passes every 100 ms
 * wrote ~100 results at once, a burst that set the acceptances' p99 (9 ms
 * with it, 4 ms without, make bench-app); every 20 ms the bursts are ~20. */
#define CHORE_MS 20
#define SWEEP_EVERY 3000 /* 60 s */

/* A pass reads the index of waiting commands from `from` on, not from its
 * start: a settled command stays in that partial index as a dead entry
 * until vacuum (at 1000 commands/s, tens of thousands of them), and a pass
 * from the start walked them all every CHORE_MS. `from` moves on only past
 * what a pass settled completely, and never closer than LOOKBACK_MS to the
 * clock, for commands that commit after their deadline (a stalled commit,
 * another igwd's clock; a clock stepped back pulls it back too). The first
 * pass, and one every FULL_MS, reads from the start: whatever was missed is
 * settled within about a minute. */
#define LOOKBACK_MS 10000
#define FULL_MS 60000

struct igw_chores {
    h2o_loop_t *loop;
    igw_db *db;
    h2o_timeout_t timeout;
    h2o_timeout_entry_t entry;
    unsigned n;
    int64_t from;      /* the next pass reads deadlines from here */
    int64_t pass_now;  /* the running pass's clock (wall: deadlines are) */
    int64_t last_full; /* igw_clock_ms of the last pass from the start (FULL_MS ago before the first) */
    bool passing; /* an overdue pass has not finished: the next one waits */
    bool stopping;
};

static void on_swept(void *arg, const igw_outbox_result *r)
{
    (void)arg;
    if (r->status != IGW_OUTBOX_OK)
        igw_log(IGW_LOG_ERROR, NULL, "outbox: sweep failed: %s", r->err ? r->err : "?");
}

static void start_pass(struct igw_chores *c);

static void on_pass_done(void *arg, const igw_results_pass *r)
{
    struct igw_chores *c = arg;
    c->passing = false;
    if (c->stopping) {
        free(c);
        return;
    }
    int64_t to = c->pass_now - LOOKBACK_MS; /* all settled up to the pass's clock */
    if (!r->looked)
        to = c->from;
    else if (r->settled < r->overdue) /* some still wait: read from the first again */
        to = r->first_deadline_ms;
    else if (r->overdue == IGW_RESULTS_PASS_MAX) /* all settled, more behind them */
        to = r->last_deadline_ms;
    if (to > c->pass_now - LOOKBACK_MS)
        to = c->pass_now - LOOKBACK_MS;
    if (to > c->from)
        c->from = to;
    if (r->overdue == IGW_RESULTS_PASS_MAX && r->settled) /* a backlog: on at once */
        start_pass(c);
}

static void start_pass(struct igw_chores *c)
{
    if (c->passing)
        return;
    int64_t mono = igw_clock_ms();
    bool full = mono - c->last_full >= FULL_MS;
    c->pass_now = igw_wall_ms();
    if (full)
        c->from = 0;
    else if (c->from > c->pass_now - LOOKBACK_MS) /* the clock was stepped back */
        c->from = c->pass_now - LOOKBACK_MS;
    c->passing = igw_results_sweep_timeouts(c->db, c->pass_now, c->from, on_pass_done, c) == 0;
    if (c->passing && full)
        c->last_full = mono;
}

static void on_chore(h2o_timeout_entry_t *entry)
{
    struct igw_chores *c = H2O_STRUCT_FROM_MEMBER(struct igw_chores, entry, entry);
    int64_t now = igw_wall_ms();
    start_pass(c);
    if (++c->n % SWEEP_EVERY == 0)
        (void)igw_outbox_sweep(c->db, now, IGW_OUTBOX_RETENTION_MS, on_swept, NULL);
    h2o_timeout_link(c->loop, &c->timeout, &c->entry);
}

static struct igw_chores *chores_start(h2o_loop_t *loop, igw_db *db)
{
    struct igw_chores *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->loop = loop;
    c->db = db;
    c->last_full = igw_clock_ms() - FULL_MS; /* the first pass reads from the start */
    h2o_timeout_init(loop, &c->timeout, CHORE_MS);
    c->entry.cb = on_chore;
    h2o_timeout_link(loop, &c->timeout, &c->entry);
    return c;
}

static void chores_stop(struct igw_chores *c)
{
    if (!c)
        return;
    if (h2o_timeout_is_linked(&c->entry))
        h2o_timeout_unlink(&c->entry);
    h2o_timeout_dispose(c->loop, &c->timeout);
    if (c->passing)
        c->stopping = true; /* freed by the pass's end: the database fails what is in flight */
    else
        free(c);
}

/* Published device commands remembered until their reply (pending.h):
 * beyond this many live ones, replies are looked up (about 200 bytes each). */
#define PENDING_MAX 65536

/* Reads a small secret file, trailing newline dropped. 0 or -1 with err. */
static int read_secret(const char *path, char *out, size_t cap, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    ssize_t n = read(fd, out, cap);
    int e = errno;
    close(fd);
    if (n < 0 || (size_t)n >= cap) {
        snprintf(err, errlen, "%s: %s", path, n < 0 ? strerror(e) : "too long");
        return -1;
    }
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        n--;
    out[n] = '\0';
    if (n == 0) {
        snprintf(err, errlen, "%s: empty", path);
        return -1;
    }
    *len = (size_t)n;
    return 0;
}

/* The session engine, with the media core unless media_threads is 0. Its
 * addresses point into app->cfg, which outlives it. */
int igw_app_start_engine(igw_app *app, igw_server *srv, char *err, size_t errlen)
{
    app->srv = srv; /* before any worker serves: the engine answers through it */
    const igw_config *c = &app->cfg;
    igw_media_config mc;
    igw_media_config_defaults(&mc);
    mc.threads = c->media_threads;
    mc.addresses[0] = c->media_address;
    mc.naddresses = 1;
    mc.announced_address = c->media_announced_address[0] ? c->media_announced_address : NULL;
    mc.port_min = (uint16_t)c->media_port_min;
    mc.port_max = (uint16_t)c->media_port_max;
    mc.keyframe_min_interval_ms = c->media_keyframe_interval_ms;
    mc.shared_socket = c->media_shared_socket;
    mc.fault_barrier = c->media_fault_barrier;
    if ((mc.port_min == 0) != (mc.port_max == 0) || mc.port_min > mc.port_max) {
        snprintf(err, errlen, "media_port_min and media_port_max: both 0, or a range min <= max");
        return -1;
    }
    char why[256];
    igw_engine_config ec = {.media = c->media_threads ? &mc : NULL, .pg_dsn = c->pg_dsn,
                            .db_timeout_ms = c->db_timeout_ms, .probe_interval_ms = c->probe_interval_ms,
                            .check_timeout_ms = c->check_timeout_ms, .node_id = app->node_id, .node = &app->node,
                            .node_lapse_ms = c->node_lapse_ms,
                            .mqtt = &app->mqtt, .invite_timeout_ms = c->invite_timeout_ms,
                            .leg_linger_ms = c->leg_linger_ms,
                            .establish_timeout_ms = c->establish_timeout_ms, .max_sessions = c->max_sessions,
                            .max_sessions_per_enterprise = c->max_sessions_per_enterprise,
                            .max_sessions_per_user = c->max_sessions_per_user,
                            .rights_recheck_ms = c->rights_recheck_ms,
                            .doorbell_ring_timeout_ms = c->doorbell_ring_timeout_ms,
                            .endpoint_grace_ms = c->endpoint_grace_ms, .ai_session_max_ms = c->ai_session_max_ms,
                            .processor_bin = c->processor_bin, .translation_grammar = c->translation_grammar,
                            .redis_host = c->redis_host, .redis_port = c->redis_port, .im_standin = c->im_standin,
                            .standin = app->standin, .talk_enabled = c->talk_enabled,
                            .talk_members = c->talk_members};
    if (!(app->engine = igw_engine_start(&ec, why, sizeof why))) {
        snprintf(err, errlen, "session engine: %s", why);
        return -1;
    }
    if (c->media_threads)
        igw_log(IGW_LOG_INFO, NULL, "session: media core up: %u thread%s on %s%s%s, certificate %s", c->media_threads,
                c->media_threads == 1 ? "" : "s", c->media_address, mc.announced_address ? " announced as " : "",
                mc.announced_address ? mc.announced_address : "", igw_engine_fingerprint(app->engine));
    else
        igw_log(IGW_LOG_INFO, NULL, "session: no media core (media_threads 0): sessions are refused");
    return 0;
}

/* /metrics and /readyz from the live connections (below). */
static void app_metrics(void *arg, FILE *f);
static unsigned app_ready(void *arg, unsigned *known);

int igw_app_init(igw_app *app, const igw_config *cfg, char *err, size_t errlen)
{
    memset(app, 0, sizeof *app);
    pthread_mutex_init(&app->drains_mu, NULL);
    app->cfg = *cfg;
    app->standin = (igw_call_standin_config){.heartbeat_ms = cfg->im_heartbeat_ms,
                                             .max_groups_per_user = cfg->im_max_groups_per_user,
                                             .max_calls_per_user = cfg->im_max_calls_per_user,
                                             .max_calls_per_group = cfg->im_max_calls_per_group};
    app->storage_fd = -1;
    /* A live node must not look lapsed between two of its heartbeats. */
    if (cfg->node_lapse_ms < 2 * cfg->node_heartbeat_ms) {
        snprintf(err, errlen, "node_lapse_ms (%u) must be at least twice node_heartbeat_ms (%u)", cfg->node_lapse_ms,
                 cfg->node_heartbeat_ms);
        return -1;
    }
    if (cfg->url_key_file[0]) {
        char buf[256];
        size_t n;
        if (read_secret(cfg->url_key_file, buf, sizeof buf, &n, err, errlen))
            return -1;
        if (n < 16) {
            snprintf(err, errlen, "%s: the URL key needs at least 16 bytes", cfg->url_key_file);
            return -1;
        }
        /* Any length in, a fixed-size HMAC key out. */
        memset(app->url_key, 0, sizeof app->url_key);
        for (size_t i = 0; i < n; i++)
            app->url_key[i % sizeof app->url_key] ^= (unsigned char)buf[i];
    } else if (getrandom(app->url_key, sizeof app->url_key, 0) != (ssize_t)sizeof app->url_key) {
        snprintf(err, errlen, "getrandom: %s", strerror(errno));
        return -1;
    }
    app->site = (igw_command_site){.url_key = app->url_key, .url_keylen = sizeof app->url_key,
                                   .public_url = app->cfg.public_url, .message_ttl_max_ms = cfg->message_ttl_max_ms};
    if (cfg->jwt_key_file[0]) {
        char buf[sizeof app->jwt_key + 2];
        size_t n;
        if (read_secret(cfg->jwt_key_file, buf, sizeof buf, &n, err, errlen))
            return -1;
        if (n < 32 || n > sizeof app->jwt_key) {
            snprintf(err, errlen, "%s: the login key must hold 32..1024 bytes", cfg->jwt_key_file);
            return -1;
        }
        memcpy(app->jwt_key, buf, n);
        app->jwt_key_len = n;
        memset(buf, 0, sizeof buf);
    }
    if (cfg->storage_root[0]) {
        if (mkdir(cfg->storage_root, 0750) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "storage_root %s: %s", cfg->storage_root, strerror(errno));
            return -1;
        }
        app->storage_fd = open(cfg->storage_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (app->storage_fd < 0) {
            snprintf(err, errlen, "storage_root %s: %s", cfg->storage_root, strerror(errno));
            return -1;
        }
    }
    if (!(app->pending = igw_pending_create(PENDING_MAX))) {
        snprintf(err, errlen, "out of memory");
        igw_app_free(app);
        return -1;
    }
    igw_ops_hooks oh = {.metrics = app_metrics, .ready = app_ready, .arg = app};
    if (!(app->ops = igw_ops_create(&app->cfg, &oh)) ||
        !(app->download = igw_download_create(app->storage_fd, app->url_key, sizeof app->url_key))) {
        snprintf(err, errlen, "out of memory");
        igw_app_free(app);
        return -1;
    }
    if (cfg->console_dir[0] && !(app->console = igw_console_create(cfg->console_dir, err, errlen))) {
        igw_app_free(app);
        return -1;
    }
    return 0;
}

/* ---- workers ---------------------------------------------------------------- */

#define WORKER_MAX_DBS (IGW_EDGE_MAX_DB + 2)

/* Every database connection of worker w: the request ones, then the
 * listener's and the chores'. Their number. */
static unsigned worker_dbs(const igw_worker *w, igw_db *out[WORKER_MAX_DBS])
{
    unsigned n = 0;
    for (unsigned k = 0; k < w->ndb; k++)
        out[n++] = w->db[k];
    if (w->listen_db)
        out[n++] = w->listen_db;
    if (w->chore_db)
        out[n++] = w->chore_db;
    return n;
}

static void worker_dbs_destroy(igw_worker *w)
{
    igw_db *dbs[WORKER_MAX_DBS];
    unsigned n = worker_dbs(w, dbs);
    for (unsigned k = 0; k < n; k++)
        igw_db_destroy(dbs[k]);
    w->ndb = 0;
    w->listen_db = w->chore_db = NULL;
}

/* A database connection of a worker: every query under the deadline, probed
 * while idle (readiness). */
static igw_db *db_open(igw_app *app, struct st_h2o_evloop_t *loop, char *err, size_t errlen)
{
    igw_db *db = igw_db_create(loop, app->cfg.pg_dsn, err, errlen);
    if (db) {
        igw_db_set_deadline(db, app->cfg.db_timeout_ms);
        igw_db_set_probe(db, app->cfg.probe_interval_ms, app->cfg.check_timeout_ms);
    }
    return db;
}

_Static_assert(IGW_CONFIG_NODE_ID_MAX == IGW_NODE_ID_MAX, "node_id: the setting's bound is the node's");

/* The configured node id, else <host name>:<listening port>: stable across
 * restarts of the same service (so a restart ends its sessions at once) and
 * different for two igwd on one machine. 0, or -1 with err. */
static int node_id(const igw_config *cfg, uint16_t port, char *out, size_t cap, char *err, size_t errlen)
{
    if (cfg->node_id[0]) {
        snprintf(out, cap, "%s", cfg->node_id);
        return 0;
    }
    char host[256];
    if (gethostname(host, sizeof host) != 0) {
        snprintf(err, errlen, "gethostname: %s", strerror(errno));
        return -1;
    }
    host[sizeof host - 1] = '\0';
    int n = snprintf(out, cap, "%s:%u", host, (unsigned)port);
    if (n < 0 || (size_t)n >= cap) {
        snprintf(err, errlen, "node id %s:%u: longer than %zu bytes (set node_id)", host, (unsigned)port, cap - 1);
        return -1;
    }
    return 0;
}

/* The engine's answers come back to the worker that asked (igw_engine_back). */
typedef struct back_call {
    void (*fn)(void *arg);
    void *arg;
} back_call;

static void run_back(void *state, void *arg)
{
    (void)state;
    back_call *c = arg;
    c->fn(c->arg);
    free(c);
}

static int back_to_worker(void *ctx, void (*fn)(void *arg), void *arg)
{
    igw_worker *w = ctx;
    back_call *c = malloc(sizeof *c);
    if (!c)
        return -1;
    c->fn = fn;
    c->arg = arg;
    if (igw_http_post(w->app->srv, w->index, run_back, c) != 0) {
        free(c);
        return -1;
    }
    return 0;
}

static void drain_node(void *arg, const char *node_id, const char *client_id);

static void *worker_start(void *arg, unsigned index, uint16_t port, struct st_h2o_evloop_t *loop, char *err,
                          size_t errlen)
{
    igw_app *app = arg;
    igw_worker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->app = app;
    w->index = index;
    atomic_init(&w->tasks, 0);
    app->workers[index] = w;
    if (!(w->models = igw_modelcache_create())) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (app->cfg.pg_dsn[0]) {
        for (; w->ndb < app->cfg.db_connections && w->ndb < IGW_EDGE_MAX_DB; w->ndb++) {
            if (!(w->db[w->ndb] = db_open(app, loop, err, errlen)))
                goto fail;
        }
        if (!(w->listen_db = db_open(app, loop, err, errlen)))
            goto fail;
        if (!(w->push = igw_push_create(w->listen_db)) || /* LISTENs: right after the create */
            !(w->wspush = igw_wspush_create(loop, w->push))) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        igw_edge_settings es = {.cache_ttl_ms = app->cfg.device_cache_ms, .batch_max = app->cfg.batch_max,
                                .pending = app->pending, .engine = &app->engine,
                                .back = {.post = back_to_worker, .ctx = w}};
        w->edge = igw_edge_create(loop, w->db, w->ndb, &es);
        w->presence = igw_presence_create(w->db[0], &app->presence, &app->engine, &app->mqtt);
        if (!w->edge || !w->presence) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    if (index == 0 && w->ndb) {
        if (!(w->chore_db = db_open(app, loop, err, errlen)))
            goto fail;
        if (!(w->chores = chores_start(loop, w->chore_db))) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        char id[IGW_NODE_ID_MAX + 1];
        if (node_id(&app->cfg, port, id, sizeof id, err, errlen))
            goto fail;
        snprintf(app->node_id, sizeof app->node_id, "%s", id);
        igw_node_config nc = {.node_id = id, .heartbeat_ms = app->cfg.node_heartbeat_ms,
                              .lapse_ms = app->cfg.node_lapse_ms, .stats = &app->node};
        if (app->cfg.mqtt_host[0]) { /* its broker session, and those of lapsed nodes to drain */
            nc.mqtt_client_id = app->cfg.mqtt_client_id;
            nc.drain = drain_node;
            nc.drain_arg = app;
        }
        if (!(w->node = igw_node_start(loop, w->chore_db, &nc, err, errlen)))
            goto fail;
    }
    if (w->ndb && app->jwt_key_len &&
        !(w->login = igw_login_create(w->db[0], app->jwt_key, app->jwt_key_len, app->cfg.device_cache_ms))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (app->cfg.redis_host[0]) {
        if (!(w->redis = igw_redis_create(loop, app->cfg.redis_host, app->cfg.redis_port, app->cfg.check_timeout_ms,
                                          err, errlen)))
            goto fail;
        igw_redis_set_probe(w->redis, app->cfg.probe_interval_ms);
    }
    /* The conference runtime: the stand-in IM on this worker's connections
     * (none without both: its routes then answer unavailable). */
    if (app->cfg.im_standin && w->ndb && w->redis &&
        !(w->call = igw_call_standin_create(w->db[0], w->redis, &app->standin))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    /* /commands' domain; no database, no login: the route is never reached. */
    w->commands = (igw_command_env){.db = w->ndb ? w->db[0] : NULL, .models = w->models, .pending = app->pending,
                                    .mqtt = &app->mqtt, .timeout_ms = app->cfg.command_timeout_ms,
                                    .retention_ms = app->cfg.doorbell_retention_ms,
                                    .engine = &app->engine, .back = {.post = back_to_worker, .ctx = w},
                                    .site = &app->site};
    return w;
fail:
    igw_wspush_destroy(w->wspush); /* before the push: its connections end their subscribers */
    igw_push_destroy(w->push);
    igw_node_stop(w->node);
    chores_stop(w->chores);
    igw_login_destroy(w->login);
    igw_edge_destroy(w->edge);
    worker_dbs_destroy(w);
    igw_presence_destroy(w->presence); /* after its database: the failed statements reach it */
    igw_redis_destroy(w->redis);
    igw_call_destroy(w->call); /* after its connections: their failed commands reach it */
    igw_modelcache_destroy(w->models);
    app->workers[index] = NULL;
    free(w);
    return NULL;
}

static bool worker_idle(void *arg, void *state)
{
    (void)arg;
    igw_worker *w = state;
    bool ws_done = !w->wspush || igw_wspush_drained(w->wspush); /* closes the WebSockets (1001) first */
    return ws_done && atomic_load(&w->tasks) == 0 && (!w->edge || igw_edge_idle(w->edge)) &&
           igw_presence_idle(w->presence);
}

static void worker_stop(void *arg, void *state)
{
    igw_app *app = arg;
    igw_worker *w = state;
    app->workers[w->index] = NULL;
    igw_node_stop(w->node); /* before the database: they use it */
    chores_stop(w->chores);
    igw_wspush_destroy(w->wspush); /* before the push: its connections end their subscribers */
    igw_push_destroy(w->push);
    if (w->edge)
        igw_edge_close(w->edge);
    worker_dbs_destroy(w);
    igw_edge_destroy(w->edge);
    igw_presence_destroy(w->presence); /* after its database: the failed statements reach it */
    igw_login_destroy(w->login);
    igw_redis_destroy(w->redis);
    igw_call_destroy(w->call); /* after its connections: their failed commands reach it */
    igw_modelcache_destroy(w->models); /* after the databases: no command is in flight */
    free(w);
}

/* ---- /metrics and /readyz from the live connections ------------------------------ */

static void app_metrics(void *arg, FILE *f)
{
    igw_app *app = arg;
    igw_db_stats t = {0};
    unsigned nconn = 0, nup = 0, nhealthy = 0;
    for (unsigned i = 0; i < IGW_CONFIG_MAX_THREADS; i++) {
        igw_worker *w = app->workers[i];
        igw_db *dbs[WORKER_MAX_DBS];
        unsigned n = w ? worker_dbs(w, dbs) : 0;
        for (unsigned k = 0; k < n; k++) {
            igw_db_stats s;
            igw_db_stats_get(dbs[k], &s);
            t.queries_ok += s.queries_ok;
            t.queries_failed += s.queries_failed;
            t.rejected += s.rejected;
            igw_conn_stats_add(&t.conn, &nup, &nhealthy, &s.conn);
            nconn++;
        }
    }
    fprintf(f, "# HELP igw_db_queries_total Database queries by outcome (rejected: queue full).\n"
               "# TYPE igw_db_queries_total counter\n"
               "igw_db_queries_total{result=\"ok\"} %llu\nigw_db_queries_total{result=\"failed\"} %llu\n"
               "igw_db_queries_total{result=\"rejected\"} %llu\n"
               "# HELP igw_db_connections Database connections, how many are ready, and how many of those answer "
               "their probes.\n"
               "# TYPE igw_db_connections gauge\n"
               "igw_db_connections{state=\"configured\"} %u\nigw_db_connections{state=\"ready\"} %u\n"
               "igw_db_connections{state=\"healthy\"} %u\n",
            (unsigned long long)t.queries_ok, (unsigned long long)t.queries_failed, (unsigned long long)t.rejected,
            nconn, nup, nhealthy);
    igw_conn_metrics_write(f, "igw_db", "From sending a query to its commit's answer.", &t.conn);
    igw_redis_stats rt = {0};
    unsigned rconn = 0, rup = 0, rhealthy = 0;
    for (unsigned i = 0; i < IGW_CONFIG_MAX_THREADS; i++) {
        igw_worker *w = app->workers[i];
        if (!w || !w->redis)
            continue;
        igw_redis_stats s;
        igw_redis_stats_get(w->redis, &s);
        rt.commands_ok += s.commands_ok;
        rt.error_replies += s.error_replies;
        rt.commands_failed += s.commands_failed;
        igw_conn_stats_add(&rt.conn, &rup, &rhealthy, &s.conn);
        rconn++;
    }
    fprintf(f, "# HELP igw_redis_commands_total Redis commands by outcome.\n"
               "# TYPE igw_redis_commands_total counter\n"
               "igw_redis_commands_total{result=\"ok\"} %llu\nigw_redis_commands_total{result=\"error_reply\"} %llu\n"
               "igw_redis_commands_total{result=\"failed\"} %llu\n"
               "# HELP igw_redis_connections Redis connections, how many are up, and how many of those answer "
               "their probes.\n"
               "# TYPE igw_redis_connections gauge\n"
               "igw_redis_connections{state=\"configured\"} %u\nigw_redis_connections{state=\"ready\"} %u\n"
               "igw_redis_connections{state=\"healthy\"} %u\n",
            (unsigned long long)rt.commands_ok, (unsigned long long)rt.error_replies,
            (unsigned long long)rt.commands_failed, rconn, rup, rhealthy);
    igw_conn_metrics_write(f, "igw_redis", "From sending a command to its reply.", &rt.conn);
    igw_mqtt *m = atomic_load(&app->mqtt);
    igw_mqtt_stats ms = {0};
    uint64_t refused = 0; /* uplinks the strict decoder refused (the edge's, per worker) */
    for (unsigned i = 0; i < IGW_CONFIG_MAX_THREADS; i++)
        if (app->workers[i] && app->workers[i]->edge)
            refused += igw_edge_refused_mqtt(app->workers[i]->edge);
    if (m)
        igw_mqtt_stats_get(m, &ms);
    fprintf(f, "# HELP igw_mqtt_messages_total MQTT messages: uplinks in, publishes out, refused publishes.\n"
               "# TYPE igw_mqtt_messages_total counter\n"
               "igw_mqtt_messages_total{direction=\"in\"} %llu\nigw_mqtt_messages_total{direction=\"out\"} %llu\n"
               "igw_mqtt_messages_total{direction=\"out_failed\"} %llu\n"
               "# HELP igw_mqtt_dropped_total Received MQTT messages dropped, by reason.\n"
               "# TYPE igw_mqtt_dropped_total counter\n"
               "igw_mqtt_dropped_total{reason=\"topic\"} %llu\nigw_mqtt_dropped_total{reason=\"size\"} %llu\n"
               "igw_mqtt_dropped_total{reason=\"retained\"} %llu\n"
               "igw_mqtt_dropped_total{reason=\"decode\"} %llu\n"
               "# HELP igw_mqtt_connected 1 while connected to the broker with every subscription granted.\n"
               "# TYPE igw_mqtt_connected gauge\nigw_mqtt_connected %d\n",
            (unsigned long long)ms.in, (unsigned long long)ms.out, (unsigned long long)ms.out_failed,
            (unsigned long long)ms.dropped_topic, (unsigned long long)ms.dropped_size,
            (unsigned long long)ms.dropped_retained, (unsigned long long)refused, m && igw_mqtt_connected(m));
    igw_pending_stats ps = {0};
    if (app->pending)
        igw_pending_stats_get(app->pending, igw_wall_ms(), &ps);
    fprintf(f, "# HELP igw_pending_commands Device commands published by this process, awaiting their reply "
               "before their deadline.\n"
               "# TYPE igw_pending_commands gauge\nigw_pending_commands %llu\n"
               "# HELP igw_pending_replies_total Device command replies: their command known here (no lookup), "
               "or looked up.\n"
               "# TYPE igw_pending_replies_total counter\n"
               "igw_pending_replies_total{result=\"hit\"} %llu\nigw_pending_replies_total{result=\"miss\"} %llu\n"
               "# HELP igw_pending_refused_total Published device commands not remembered (map full, out of memory): "
               "their replies are looked up.\n"
               "# TYPE igw_pending_refused_total counter\nigw_pending_refused_total %llu\n",
            (unsigned long long)ps.entries, (unsigned long long)ps.hits, (unsigned long long)ps.misses,
            (unsigned long long)ps.refused);
    if (app->cfg.pg_dsn[0]) {
        igw_node_metrics_write(f, &app->node);
        igw_presence_metrics_write(f, &app->presence);
    }
    if (app->engine) {
        igw_engine_stats es;
        igw_engine_stats_get(app->engine, &es);
        igw_engine_metrics_write(f, &es);
    }
}

/* Every dependency is judged from the workers' live connections, which
 * probe themselves while idle (conn.h): a connection is ready when it is up
 * and its last probe was answered in time. Nothing blocks a worker. */
static unsigned app_ready(void *arg, unsigned *known)
{
    igw_app *app = arg;
    unsigned down = 0;
    *known = 0;
    if (app->cfg.pg_dsn[0]) {
        *known |= IGW_READY_POSTGRES;
        for (unsigned i = 0; i < IGW_CONFIG_MAX_THREADS; i++) {
            igw_worker *w = app->workers[i];
            igw_db *dbs[WORKER_MAX_DBS];
            unsigned n = w ? worker_dbs(w, dbs) : 0;
            for (unsigned k = 0; k < n; k++) {
                igw_db_stats st; /* the thread-safe view of another worker's connection */
                igw_db_stats_get(dbs[k], &st);
                if (!st.conn.healthy)
                    down |= IGW_READY_POSTGRES;
            }
        }
    }
    if (app->cfg.redis_host[0]) {
        *known |= IGW_READY_REDIS;
        for (unsigned i = 0; i < IGW_CONFIG_MAX_THREADS; i++) {
            igw_worker *w = app->workers[i];
            igw_redis_stats st;
            if (w && w->redis) {
                igw_redis_stats_get(w->redis, &st);
                if (!st.conn.healthy)
                    down |= IGW_READY_REDIS;
            }
        }
    }
    igw_mqtt *m = atomic_load(&app->mqtt);
    if (m) {
        *known |= IGW_READY_MQTT;
        if (!igw_mqtt_connected(m))
            down |= IGW_READY_MQTT;
    }
    return down;
}

igw_http_app igw_app_http_hooks(igw_app *app)
{
    /* Offered in this order before the strict stage; their slots in
     * /metrics follow it, then the console's. */
    unsigned n = 0;
    app->routes[n++] = (igw_http_route){"healthz", igw_ops_healthz, app->ops};
    app->routes[n++] = (igw_http_route){"readyz", igw_ops_readyz, app->ops};
    app->routes[n++] = (igw_http_route){"metrics", igw_ops_metrics, app->ops};
    app->routes[n++] = (igw_http_route){"device_download", igw_download_serve, app->download};
    app->routes[n++] = (igw_http_route){"bench_bare", igw_routes_bench, app};
    return (igw_http_app){.handle = igw_routes_handle,
                          .routes = app->routes,
                          .nroutes = n,
                          .files = app->console ? igw_console_files(app->console) : NULL,
                          .start = worker_start,
                          .stop = worker_stop,
                          .idle = worker_idle,
                          .arg = app};
}

/* ---- MQTT uplinks ------------------------------------------------------------- */

typedef struct mqtt_job {
    igw_app *app;
    igw_mqtt_uplink *u;
} mqtt_job;

/* Replies go to $<handle>/down/<type>/<productID>/<deviceName>: the reply
 * method's message on success, and an error reply whenever the message
 * could be decoded (so a device learns why it was refused). */
static void on_mqtt_done(void *arg, const igw_edge_result *r)
{
    mqtt_job *mj = arg;
    igw_mqtt *mqtt = atomic_load(&mj->app->mqtt);
    if (r->reply && (r->reply_topic || r->cls != IGW_ERR_OK) && mqtt) {
        char topic[IGW_TOPIC_MAX + 1];
        if (igw_topic_build(topic, sizeof topic, 0, IGW_TOPIC_DOWN, mj->u->handle, mj->u->type, mj->u->product_id,
                            mj->u->device_name) > 0)
            (void)igw_mqtt_publish(mqtt, topic, r->reply, r->reply_len, 1); /* counted in its stats */
    }
    igw_mqtt_uplink_free(mj->u);
    free(mj);
}

static void run_uplink(void *state, void *arg)
{
    igw_worker *w = state;
    mqtt_job *mj = arg;
    igw_mqtt_uplink *u = mj->u;
    atomic_fetch_sub(&w->tasks, 1);
    if (!w->edge) {
        igw_edge_result r = {.cls = IGW_ERR_UNAVAILABLE, .reason = "no database configured", .path = ""};
        on_mqtt_done(mj, &r);
        return;
    }
    igw_uplink up = {
        .handle = {u->handle, strlen(u->handle)},
        .type = {u->type, strlen(u->type)},
        .product_id = {u->product_id, strlen(u->product_id)},
        .device_name = {u->device_name, strlen(u->device_name)},
        .payload = {u->payload, u->len},
    };
    igw_edge_submit(w->edge, &up, on_mqtt_done, mj);
}

/* A presence fact, on the worker of its device (the broker's: worker 0). */
static void run_presence(void *state, void *arg)
{
    igw_worker *w = state;
    igw_mqtt_uplink *u = arg;
    atomic_fetch_sub(&w->tasks, 1);
    if (w->presence)
        igw_presence_submit(w->presence, u->product_id, u->device_name, u->payload, u->len);
    igw_mqtt_uplink_free(u);
}

/* On the MQTT network thread: hand over, never block. */
static void on_uplink(void *arg, igw_mqtt_uplink *u)
{
    igw_app *app = arg;
    if (u->kind == IGW_MQTT_PRESENCE) {
        unsigned n = igw_http_workers(app->srv),
                 i = u->product_id[0] ? (unsigned)(igw_edge_device_hash(u->product_id, u->device_name) % n) : 0;
        atomic_fetch_add(&app->workers[i]->tasks, 1);
        if (igw_http_post(app->srv, i, run_presence, u)) {
            atomic_fetch_sub(&app->workers[i]->tasks, 1);
            igw_log(IGW_LOG_ERROR, NULL, "mqtt: out of memory, a presence fact of %s/%s dropped", u->product_id,
                    u->device_name);
            igw_mqtt_uplink_free(u);
        }
        return;
    }
    mqtt_job *mj = malloc(sizeof *mj);
    if (!mj) {
        igw_mqtt_uplink_free(u);
        return;
    }
    mj->app = app;
    mj->u = u;
    unsigned n = igw_http_workers(app->srv), i = (unsigned)(igw_edge_device_hash(u->product_id, u->device_name) % n);
    atomic_fetch_add(&app->workers[i]->tasks, 1); /* before the post: the drain must see it */
    if (igw_http_post(app->srv, i, run_uplink, mj)) {
        atomic_fetch_sub(&app->workers[i]->tasks, 1);
        /* Already acknowledged to the broker: the device gets no reply and
         * retries on its own (its reply never came). Say so in the log. */
        igw_log(IGW_LOG_ERROR, NULL, "mqtt: out of memory, uplink from %s/%s dropped", u->product_id, u->device_name);
        igw_mqtt_uplink_free(u);
        free(mj);
    }
}

/* A broker client with this node's settings under client_id: this node's
 * own, or (drain) a lapsed node's (mqtt.h). */
static igw_mqtt *mqtt_client(igw_app *app, const char *client_id, bool drain, char *err, size_t errlen)
{
    igw_mqtt_config mc = {
        .host = app->cfg.mqtt_host,
        .port = app->cfg.mqtt_port,
        .username = app->cfg.mqtt_username,
        .password = app->mqtt_password,
        .client_id = client_id,
        .presence = app->cfg.pg_dsn[0] != 0, /* stored in the database: nothing to do without one */
        .drain = drain,
    };
    return igw_mqtt_start(&mc, on_uplink, app, err, errlen);
}

/* ---- drains of lapsed nodes' broker sessions ------------------------------------ */

typedef struct igw_app_drain {
    struct igw_app_drain *next;
    igw_mqtt *m;
} igw_app_drain;

/* Frees the drains that are over (all with `all`). Under drains_mu. */
static void drains_reap(igw_app *app, bool all)
{
    for (igw_app_drain **p = &app->drains; *p;) {
        igw_app_drain *d = *p;
        if (!all && !igw_mqtt_done(d->m)) {
            p = &d->next;
            continue;
        }
        *p = d->next;
        igw_mqtt_stop(d->m);
        free(d);
    }
}

/* Worker 0's node found a lapsed node whose broker session nobody drained:
 * a client with its id receives what the broker queued for it (through the
 * same path as this node's uplinks) and takes it out of the groups. */
static void drain_node(void *arg, const char *node_id, const char *client_id)
{
    igw_app *app = arg;
    char err[256];
    pthread_mutex_lock(&app->drains_mu);
    drains_reap(app, false);
    igw_app_drain *d = NULL;
    if (app->drains_closed || !atomic_load(&app->mqtt))
        snprintf(err, sizeof err, "no broker client now");
    else if (!(d = calloc(1, sizeof *d)))
        snprintf(err, sizeof err, "out of memory");
    else if (!(d->m = mqtt_client(app, client_id, true, err, sizeof err))) {
        free(d);
        d = NULL;
    } else {
        d->next = app->drains;
        app->drains = d;
    }
    pthread_mutex_unlock(&app->drains_mu);
    if (!d)
        igw_log(IGW_LOG_WARN, NULL, "mqtt: lost node %s's broker session (%s) not drained: %s", node_id, client_id, err);
}

int igw_app_start_mqtt(igw_app *app, igw_server *srv, char *err, size_t errlen)
{
    app->srv = srv;
    if (!app->cfg.mqtt_host[0])
        return 0;
    size_t n = 0;
    /* kept (until igw_app_stop_mqtt) for the drains of lapsed nodes' sessions */
    if (app->cfg.mqtt_password_file[0] &&
        read_secret(app->cfg.mqtt_password_file, app->mqtt_password, sizeof app->mqtt_password, &n, err, errlen))
        return -1;
    igw_mqtt *m = mqtt_client(app, app->cfg.mqtt_client_id, false, err, errlen);
    atomic_store(&app->mqtt, m); /* an uplink may already run: on_mqtt_done loads it */
    return m ? 0 : -1;
}

void igw_app_pause_mqtt(igw_app *app)
{
    igw_mqtt_pause(atomic_load(&app->mqtt));
    pthread_mutex_lock(&app->drains_mu);
    for (igw_app_drain *d = app->drains; d; d = d->next)
        igw_mqtt_pause(d->m);
    pthread_mutex_unlock(&app->drains_mu);
}

void igw_app_stop_mqtt(igw_app *app)
{
    pthread_mutex_lock(&app->drains_mu);
    app->drains_closed = true;
    drains_reap(app, true); /* a drain cut here leaves the rest queued in that session */
    pthread_mutex_unlock(&app->drains_mu);
    igw_mqtt *m = atomic_exchange(&app->mqtt, NULL);
    igw_mqtt_stop(m);
    memset(app->mqtt_password, 0, sizeof app->mqtt_password);
}

void igw_app_stop_engine(igw_app *app)
{
    igw_engine_stop(app->engine); /* the workers drained: nothing new posts to it */
    app->engine = NULL;
}

void igw_app_free(igw_app *app)
{
    igw_app_stop_engine(app); /* when the start failed before the workers: none of them waits */
    if (app->storage_fd >= 0)
        close(app->storage_fd);
    app->storage_fd = -1;
    igw_pending_destroy(app->pending);
    app->pending = NULL;
    igw_console_destroy(app->console);
    igw_download_destroy(app->download);
    igw_ops_destroy(app->ops);
    app->console = NULL;
    app->download = NULL;
    app->ops = NULL;
}
