/* plugin.c - igw's Mosquitto 2 auth plugin (plugin API v5).
 *
 * Devices connect with the iThings credentials of src/lib/devauth.h:
 * clientID {productID}&{deviceName}, a signed username and an HMAC
 * password checked against the device's secret in PostgreSQL. A device may
 * publish only to $<handle>/up/<type>/{itself} and subscribe to / receive
 * only $<handle>/down/<type>/{itself}; a gateway also for the sub-devices
 * bound to it. One privileged user (the gateway server igwd) may do
 * everything. Every uplink is relayed to igw/<handle>/up/... for igwd's
 * shared subscription (topic.h). Device connections and disconnections are
 * published as presence facts on igw/presence/device/... (topic.h). See
 * src/mqttauth/README.md.
 *
 * Options (mosquitto.conf, after `plugin PATH`):
 *   plugin_opt_dsn                  libpq connection string (required; not
 *                                   plugin_opt_db: Mosquitto 2.0.11 rejects
 *                                   option names shorter than 3 characters)
 *   plugin_opt_admin_user           privileged user name (optional)
 *   plugin_opt_admin_password_file  file whose first line is its password
 *                                   (required with admin_user)
 *   plugin_opt_db_wait_ms           the most one callback waits for the
 *                                   database (default 250)
 *   plugin_opt_stale_s              how long a cached secret or binding may
 *                                   answer while the database is unavailable
 *                                   (default 600; 0: never)
 *
 * Mosquitto calls the plugin on its single main thread: no locking. That
 * thread is the whole broker, so the database is never waited on without a
 * bound (the deadline rule): libpq is used non-blocking only; a callback
 * waits at most db_wait_ms in all for a connection and its answers, and not
 * at all while the database is unhealthy (a query missed its deadline, a
 * connection failed); then callbacks answer from the caches or refuse.
 * Connections are opened and driven from MOSQ_EVT_TICK (every main-loop
 * turn, at least every 100 ms in Mosquitto 2.0), at most one attempt per
 * second. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>
#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "devauth.h"
#include "topic.h"

#define EXPORT __attribute__((visibility("default")))
#define PFX "igw-mqtt-auth: "

#define SECRET_TTL 30        /* seconds a found secret is reused */
#define MISS_TTL 5           /* seconds "no such device" is reused */
#define REFETCH_MIN_AGE 2    /* a mismatch against an older cached secret refetches once */
#define BIND_TTL 10          /* seconds a gateway/sub-device answer is reused */
#define SECRET_SLOTS 4096    /* found secrets: sets of SECRET_WAYS, least recently used evicted */
#define SECRET_WAYS 4
#define MISS_SLOTS 1024      /* "no such device": direct-mapped, a collision evicts */
#define BIND_SLOTS 1024      /* bindings: direct-mapped */
#define DB_RETRY_MS 1000     /* at most one connection attempt per second */
#define DB_CONNECT_MS 2000   /* a connection attempt that has not finished by then is abandoned */
#define DB_WAIT_MS 250       /* plugin_opt_db_wait_ms default */
#define STALE_S 600          /* plugin_opt_stale_s default */
#define SECRET_CHANNEL "igw_device_secret" /* schema/tables.igw: devices notify ... on (secret) */
#define DEV_KEY_MAX (2 * IGW_DEVAUTH_NAME_MAX + 2) /* "product&device" + NUL */
#define KEY_MAX (2 * DEV_KEY_MAX)
#define ADMIN_PASS_MAX 1024
#define LOG_PER_S 50         /* denial log lines per second, then silence */
#define CONN_BUCKETS 65536   /* presence: chains of the current device connections */
#define CONN_MAX (1 << 20)   /* presence: device connections tracked at most (about 180 bytes each) */
#define REPLAY_PER_TICK 2048 /* presence: a sync's online facts per main-loop turn */
#define FACT_MAX 160         /* a presence fact's JSON */

/* ---- state ------------------------------------------------------------- */

/* A cached answer is fresh while younger than its TTL and fetched on the
 * current connection (epoch): notifications sent while no connection
 * listened are lost, so every reconnect makes older answers refetch. A
 * stale answer is still used, up to stale_s, while the database is
 * unavailable. Times are CLOCK_MONOTONIC seconds. */
typedef struct secret_ent {
    char key[DEV_KEY_MAX]; /* "product&device", "" = empty slot */
    unsigned char secret[IGW_DEVAUTH_SECRET_MAX];
    size_t secret_len;
    int64_t fetched, used;
    uint64_t epoch;
} secret_ent;

typedef struct miss_ent {
    char key[DEV_KEY_MAX];
    int64_t fetched;
    uint64_t epoch;
} miss_ent;

typedef struct bind_ent {
    char key[KEY_MAX]; /* "gp&gd" "\n" "sp&sd" */
    bool bound;
    int64_t fetched;
    uint64_t epoch;
} bind_ent;

/* The current connection of one device (presence). client is the broker's
 * context: compared, never dereferenced (it may be freed once its
 * disconnect has been seen). */
typedef struct conn_ent {
    struct conn_ent *next;
    const struct mosquitto *client;
    int64_t since; /* wall ms of its authentication */
    char key[DEV_KEY_MAX]; /* the clientID, "product&device" */
} conn_ent;

/* A secret copied out of the cache for one verification (wiped after). */
typedef struct secret_copy {
    unsigned char secret[IGW_DEVAUTH_SECRET_MAX];
    size_t len;
    int64_t age;
    bool stale;
} secret_copy;

typedef enum db_state {
    DB_NONE,       /* no connection; the next attempt at db_next_try */
    DB_CONNECTING, /* PQconnectPoll in progress, wants db_want */
    DB_LISTENING,  /* connected, LISTEN sent, its answer pending */
    DB_READY       /* idle, listening */
} db_state;

static struct {
    mosquitto_plugin_id_t *id;
    char *dsn;
    char *admin_user;
    unsigned char admin_digest[SHA256_DIGEST_LENGTH];
    bool admin_on;
    int wait_ms;
    int64_t stale_s;
    PGconn *db;
    db_state state;
    PostgresPollingStatusType db_want;
    int64_t db_started;  /* ms: the connection attempt's start */
    int64_t db_next_try; /* ms */
    bool healthy;        /* callbacks may wait (bounded) for the database */
    uint64_t epoch;      /* connections made so far */
    secret_ent *secrets;
    miss_ent *misses;
    bind_ent *binds;
    time_t log_sec;
    int log_n;
    /* presence */
    conn_ent **conns;      /* CONN_BUCKETS chains, by clientID */
    size_t nconns;
    int64_t boot;          /* wall ms at load: this broker process's boot id */
    uint64_t seq;          /* facts published by this process */
    size_t replay;         /* a sync's replay: the next bucket; CONN_BUCKETS: none */
} g;

/* ---- logging ------------------------------------------------------------- */

/* Copies s into out (cap bytes): whitespace controls become ' ', anything
 * else outside printable ASCII '?'; truncated to fit. */
static const char *printable(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    if (!s) s = "(none)";
    for (; s[i] && i + 1 < cap; i++)
        out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : (s[i] == '\n' || s[i] == '\t') ? ' ' : '?';
    out[i] = 0;
    return out;
}

__attribute__((format(printf, 2, 3))) static void logf_limited(int level, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    time_t now = time(NULL);
    if (now != g.log_sec) {
        if (g.log_n > LOG_PER_S)
            mosquitto_log_printf(MOSQ_LOG_NOTICE, PFX "%d log lines suppressed", g.log_n - LOG_PER_S);
        g.log_sec = now;
        g.log_n = 0;
    }
    if (++g.log_n > LOG_PER_S) return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    mosquitto_log_printf(level, PFX "%s", buf);
}

/* ---- time ------------------------------------------------------------------ */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_s(void) { return now_ms() / 1000; }

/* ---- PostgreSQL: non-blocking, every wait bounded ----------------------------- */

static void cache_evict(const char *key);
static void presence_online(const struct mosquitto *client, const char *key);
static void presence_replay_step(void);

/* The database's health changes are logged once each. */
static void set_healthy(bool ok, const char *why)
{
    if (ok == g.healthy) return;
    g.healthy = ok;
    if (ok)
        mosquitto_log_printf(MOSQ_LOG_NOTICE, PFX "database available again");
    else
        mosquitto_log_printf(MOSQ_LOG_WARNING,
                             PFX "database unavailable (%s): answering from the cache (up to %llds stale), "
                                 "refusing uncached devices at once, reconnecting at most once a second",
                             why, (long long)g.stale_s);
}

/* Closes the connection. unhealthy: the database failed (a missed
 * deadline, a failed connection), so callbacks stop waiting and the next
 * attempt is a second away; else (an idle link closed under us) the next
 * attempt may be right away. */
static void db_drop(const char *why, bool unhealthy)
{
    if (g.db) PQfinish(g.db);
    g.db = NULL;
    g.state = DB_NONE;
    g.db_next_try = unhealthy ? now_ms() + DB_RETRY_MS : 0;
    if (unhealthy) set_healthy(false, why);
}

static void db_fail(const char *what, bool unhealthy)
{
    char msg[200], why[260];
    printable(g.db ? PQerrorMessage(g.db) : "out of memory", msg, sizeof msg);
    snprintf(why, sizeof why, "%s: %s", what, msg);
    /* Once: an unhealthy drop logs the change of state with its reason. */
    if (g.healthy && !unhealthy) mosquitto_log_printf(MOSQ_LOG_WARNING, PFX "%s", why);
    db_drop(why, unhealthy);
}

/* Hands the queued notifications to the caches: each names a device whose
 * secret changed (or that was added, removed or renamed). Reads nothing
 * from the socket: db_consume does. */
static void db_notifies(void)
{
    PGnotify *n;
    while (g.db && (n = PQnotifies(g.db)) != NULL) {
        if (strcmp(n->relname, SECRET_CHANNEL) == 0) cache_evict(n->extra);
        PQfreemem(n);
    }
}

/* Reads what the server sent, without waiting. Returns 0, or -1 when the
 * link broke (dropped). */
static int db_consume(void)
{
    if (!g.db || g.state < DB_LISTENING) return 0;
    if (!PQconsumeInput(g.db)) {
        db_fail("database connection lost", false);
        return -1;
    }
    return 0;
}

/* Waits until fd is ready for events or deadline (ms) passes. 1 ready, 0
 * timed out. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int64_t left = deadline - now_ms();
        int rc = poll(&p, 1, left > 0 ? (int)(left > 60000 ? 60000 : left) : 0);
        if (rc > 0) return 1;
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0 || left <= 0) return 0;
    }
}

static void db_start(void)
{
    /* Defaults first: the DSN (expanded from dbname) overrides them. */
    static const char *const keys[] = {"options", "application_name", "dbname", NULL};
    const char *vals[] = {"-c statement_timeout=2000", "igw-mqtt-auth", g.dsn, NULL};
    int64_t now = now_ms();

    if (now < g.db_next_try) return;
    g.db_next_try = now + DB_RETRY_MS;
    /* Non-blocking but for a host name's lookup (libpq resolves it before
     * returning): give host an address or a socket directory, or hostaddr. */
    g.db = PQconnectStartParams(keys, vals, 1);
    if (!g.db || PQstatus(g.db) == CONNECTION_BAD) {
        db_fail("database connection failed", true);
        return;
    }
    g.state = DB_CONNECTING;
    g.db_want = PGRES_POLLING_WRITING;
    g.db_started = now;
}

/* Drives the connection towards DB_READY until it is there or deadline (ms)
 * passes; deadline <= now never waits. Returns true when ready. */
static bool db_advance(int64_t deadline)
{
    for (;;) {
        switch (g.state) {
        case DB_NONE:
            db_start();
            if (g.state == DB_NONE) return false;
            break;
        case DB_CONNECTING: {
            int64_t give_up = g.db_started + DB_CONNECT_MS;
            PostgresPollingStatusType r;
            if (now_ms() >= give_up) {
                db_drop("connection attempt timed out", true);
                return false;
            }
            if (!wait_fd(PQsocket(g.db), g.db_want == PGRES_POLLING_READING ? POLLIN : POLLOUT,
                         deadline < give_up ? deadline : give_up)) {
                if (now_ms() < deadline) continue; /* give_up came first */
                return false;
            }
            r = PQconnectPoll(g.db);
            if (r == PGRES_POLLING_FAILED) {
                db_fail("database connection failed", true);
                return false;
            }
            if (r != PGRES_POLLING_OK) {
                g.db_want = r;
                break;
            }
            if (PQsetnonblocking(g.db, 1) != 0 || !PQsendQuery(g.db, "LISTEN " SECRET_CHANNEL)) {
                db_fail("LISTEN failed", true);
                return false;
            }
            g.state = DB_LISTENING;
            /* Notifications sent while no connection listened are lost:
             * every cached answer refetches (usable as stale meanwhile). */
            g.epoch++;
            break;
        }
        case DB_LISTENING: {
            bool idle = false;
            int f = PQflush(g.db);
            if (f < 0) {
                db_fail("LISTEN failed", true);
                return false;
            }
            if (db_consume() < 0) return false;
            /* PQgetResult waits while PQisBusy: ask before each call. */
            while (f == 0 && !PQisBusy(g.db)) {
                PGresult *r = PQgetResult(g.db);
                bool ok;
                if (!r) {
                    idle = true;
                    break;
                }
                ok = PQresultStatus(r) == PGRES_COMMAND_OK;
                PQclear(r);
                if (!ok) {
                    db_fail("LISTEN failed", true);
                    return false;
                }
            }
            if (!idle) {
                if (!wait_fd(PQsocket(g.db), f == 1 ? POLLIN | POLLOUT : POLLIN, deadline)) return false;
                break;
            }
            g.state = DB_READY;
            mosquitto_log_printf(MOSQ_LOG_INFO, PFX "connected to the database");
            set_healthy(true, NULL);
            break;
        }
        case DB_READY: return true;
        }
    }
}

/* Runs a parameterized query returning rows, waiting until deadline (ms)
 * at most, and not at all while the database is unhealthy. A query that
 * misses its deadline drops the connection (its outcome is unknowable) and
 * makes the database unhealthy. Returns the result (caller PQclear) or
 * NULL. Notifications that arrive meanwhile stay queued (db_notifies),
 * so that the caller drops what it cached after storing this answer. */
static PGresult *db_query(const char *sql, int n, const char *const *params, int64_t deadline)
{
    PGresult *r, *res = NULL;
    char msg[200];

    if (!db_advance(g.healthy ? deadline : 0)) {
        /* The attempt goes on in the background (DB_CONNECT_MS); callbacks
         * stop waiting for it meanwhile. */
        if (g.healthy) set_healthy(false, "no connection within plugin_opt_db_wait_ms");
        return NULL;
    }
    if (!PQsendQueryParams(g.db, sql, n, NULL, params, NULL, NULL, 0)) {
        db_fail("query not sent", true);
        return NULL;
    }
    for (;;) {
        int f = PQflush(g.db);
        if (f < 0) goto lost;
        if (f == 0) break;
        if (!wait_fd(PQsocket(g.db), POLLIN | POLLOUT, deadline)) goto late;
        if (!PQconsumeInput(g.db)) goto lost;
    }
    for (;;) {
        if (!PQconsumeInput(g.db)) goto lost;
        while (!PQisBusy(g.db)) {
            r = PQgetResult(g.db);
            if (!r) goto done;
            if (!res)
                res = r;
            else
                PQclear(r);
        }
        if (!wait_fd(PQsocket(g.db), POLLIN, deadline)) goto late;
    }
done:
    if (res && PQresultStatus(res) == PGRES_TUPLES_OK) return res;
    PQclear(res);
    res = NULL;
    if (PQstatus(g.db) != CONNECTION_OK) goto lost;
    printable(PQerrorMessage(g.db), msg, sizeof msg);
    logf_limited(MOSQ_LOG_WARNING, "query failed: %s", msg);
    return NULL;
late:
    PQclear(res);
    db_drop("a query missed its plugin_opt_db_wait_ms deadline; connection dropped", true);
    return NULL;
lost:
    PQclear(res);
    db_fail("database connection lost during a query", true);
    return NULL;
}

/* The timer: opens and drives the connection, reads notifications. Never
 * waits. */
static int on_tick(int event, void *event_data, void *userdata)
{
    (void)event;
    (void)event_data;
    (void)userdata;
    (void)db_advance(0);
    if (db_consume() == 0) db_notifies();
    if (g.replay < CONN_BUCKETS) presence_replay_step();
    return MOSQ_ERR_SUCCESS;
}

/* ---- caches ---------------------------------------------------------------- */

static uint64_t hash_of(const char *key)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (; *key; key++) h = (h ^ (unsigned char)*key) * UINT64_C(1099511628211);
    return h;
}

static secret_ent *secret_set(const char *key)
{
    return &g.secrets[(hash_of(key) % (SECRET_SLOTS / SECRET_WAYS)) * SECRET_WAYS];
}

static secret_ent *secret_find(const char *key)
{
    secret_ent *set = secret_set(key);
    for (int i = 0; i < SECRET_WAYS; i++)
        if (set[i].key[0] && strcmp(set[i].key, key) == 0) return &set[i];
    return NULL;
}

/* The way for key: its own, else an empty one, else the least recently used. */
static secret_ent *secret_slot(const char *key)
{
    secret_ent *set = secret_set(key), *e = secret_find(key);
    if (e) return e;
    e = &set[0];
    for (int i = 0; i < SECRET_WAYS; i++) {
        if (!set[i].key[0]) return &set[i];
        if (set[i].used < e->used) e = &set[i];
    }
    return e;
}

static miss_ent *miss_slot(const char *key) { return &g.misses[hash_of(key) % MISS_SLOTS]; }

static void cache_evict(const char *key)
{
    secret_ent *e = secret_find(key);
    miss_ent *m = miss_slot(key);
    if (e) OPENSSL_cleanse(e, sizeof *e);
    if (strcmp(m->key, key) == 0) memset(m, 0, sizeof *m);
}

static bool fresh(int64_t fetched, uint64_t epoch, int64_t ttl, int64_t now)
{
    return epoch == g.epoch && now >= fetched && now - fetched < ttl;
}

/* The device's raw secret, copied into *out: cached or fetched (waiting at
 * most until deadline, ms). Returns 1 found, 0 no such device (or an
 * undecodable secret), -1 database unavailable and nothing usable cached.
 * force skips the fresh cache (a mismatch refetch). While the database is
 * unavailable a cached secret up to stale_s old answers (out->stale). */
static int secret_get(const char *product, const char *device, bool force, int64_t deadline,
                      secret_copy *out)
{
    char key[DEV_KEY_MAX];
    secret_ent *e;
    miss_ent *m;
    int64_t now = now_s();
    const char *params[2] = {product, device};
    unsigned char raw[IGW_DEVAUTH_SECRET_MAX];
    size_t raw_len = 0;
    bool found = false;
    PGresult *r;

    memset(out, 0, sizeof *out);
    snprintf(key, sizeof key, "%s&%s", product, device);
    if (db_consume() == 0) db_notifies(); /* a change already announced applies now */
    e = secret_find(key);
    m = miss_slot(key);
    if (e && !force && fresh(e->fetched, e->epoch, SECRET_TTL, now)) goto hit;
    if (!e && !force && strcmp(m->key, key) == 0 && fresh(m->fetched, m->epoch, MISS_TTL, now)) return 0;
    r = db_query("SELECT secret FROM devices WHERE product_id = $1 AND device_name = $2", 2, params,
                 deadline);
    if (!r) {
        if (e && g.stale_s > 0 && now >= e->fetched && now - e->fetched < g.stale_s) {
            out->stale = true;
            goto hit;
        }
        return -1;
    }
    if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
        if (igw_devauth_secret_decode(PQgetvalue(r, 0, 0), raw, sizeof raw, &raw_len) == 0)
            found = true;
        else
            logf_limited(MOSQ_LOG_WARNING, "device %s has an undecodable secret in the database", key);
    }
    PQclear(r);
    if (found) {
        e = secret_slot(key);
        OPENSSL_cleanse(e, sizeof *e);
        memcpy(e->key, key, sizeof key);
        memcpy(e->secret, raw, raw_len);
        e->secret_len = raw_len;
        e->fetched = now;
        e->epoch = g.epoch;
        if (strcmp(m->key, key) == 0) memset(m, 0, sizeof *m);
    } else {
        if (e) OPENSSL_cleanse(e, sizeof *e);
        memcpy(m->key, key, sizeof key);
        m->fetched = now;
        m->epoch = g.epoch;
    }
    OPENSSL_cleanse(raw, sizeof raw);
    /* Answered from a snapshot: a change committed since then is notified
     * after this answer, so it must drop what was just stored. */
    db_notifies();
    e = found ? secret_find(key) : NULL;
    if (!e) return 0; /* dropped at once: refused this time, refetched next */
hit:
    e->used = now;
    memcpy(out->secret, e->secret, e->secret_len);
    out->len = e->secret_len;
    out->age = now >= e->fetched ? now - e->fetched : 0;
    return 1;
}

/* Is sub-device (sp, sd) bound to gateway (gp, gd), and is that a gateway?
 * 1 yes, 0 no, -1 database unavailable and nothing usable cached. Waits
 * until deadline (ms) at most; a cached answer up to stale_s old answers
 * while the database is unavailable. */
static int bound_get(const char *gp, const char *gd, const char *sp, const char *sd, int64_t deadline)
{
    char key[KEY_MAX];
    bind_ent *e;
    int64_t now = now_s();
    const char *params[4] = {sp, sd, gp, gd};
    PGresult *r;

    snprintf(key, sizeof key, "%s&%s\n%s&%s", gp, gd, sp, sd);
    e = &g.binds[hash_of(key) % BIND_SLOTS];
    if (strcmp(e->key, key) == 0 && fresh(e->fetched, e->epoch, BIND_TTL, now)) return e->bound;
    r = db_query("SELECT 1 FROM devices s JOIN devices gw"
                 " ON gw.product_id = s.gateway_product_id"
                 " AND gw.device_name = s.gateway_device_name"
                 " WHERE s.product_id = $1 AND s.device_name = $2"
                 " AND gw.product_id = $3 AND gw.device_name = $4 AND gw.is_gateway",
                 4, params, deadline);
    if (!r) {
        if (strcmp(e->key, key) == 0 && g.stale_s > 0 && now >= e->fetched && now - e->fetched < g.stale_s)
            return e->bound;
        return -1;
    }
    memcpy(e->key, key, sizeof key);
    e->bound = PQntuples(r) == 1;
    e->fetched = now;
    e->epoch = g.epoch;
    PQclear(r);
    db_notifies();
    return e->bound;
}

/* ---- the privileged user ----------------------------------------------------- */

static bool is_admin_name(const char *user)
{
    return g.admin_on && user && strcmp(user, g.admin_user) == 0;
}

static bool admin_password_ok(const char *pass)
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    size_t len = strnlen(pass, ADMIN_PASS_MAX + 1);
    if (len > ADMIN_PASS_MAX) return false;
    SHA256((const unsigned char *)pass, len, d);
    return CRYPTO_memcmp(d, g.admin_digest, sizeof d) == 0;
}

/* ---- basic auth ---------------------------------------------------------------- */

static int on_basic_auth(int event, void *event_data, void *userdata)
{
    struct mosquitto_evt_basic_auth *ed = event_data;
    const char *user = ed->username, *pass = ed->password;
    const char *cid = mosquitto_client_id(ed->client);
    char cidlog[80], want[2 * IGW_DEVAUTH_NAME_MAX + 2];
    igw_devauth_username u;
    secret_copy sc;
    int64_t deadline = now_ms() + g.wait_ms;
    int found, rc;
    (void)event;
    (void)userdata;

    printable(cid, cidlog, sizeof cidlog);
    if (!user || !pass) {
        logf_limited(MOSQ_LOG_NOTICE, "client %s denied: no username or password", cidlog);
        return MOSQ_ERR_AUTH;
    }
    if (is_admin_name(user)) {
        if (admin_password_ok(pass)) return MOSQ_ERR_SUCCESS;
        logf_limited(MOSQ_LOG_NOTICE, "client %s denied: wrong password for the privileged user",
                     cidlog);
        return MOSQ_ERR_AUTH;
    }
    if (igw_devauth_parse_username(user, strnlen(user, IGW_DEVAUTH_USER_MAX + 1), &u) != 0) {
        logf_limited(MOSQ_LOG_NOTICE, "client %s denied: username malformed", cidlog);
        return MOSQ_ERR_AUTH;
    }
    snprintf(want, sizeof want, "%s&%s", u.product_id, u.device_name);
    if (!cid || strcmp(cid, want) != 0) {
        logf_limited(MOSQ_LOG_NOTICE, "client %s denied: clientID does not name the username's device",
                     cidlog);
        return MOSQ_ERR_AUTH;
    }
    /* Database unavailable: "not authorised" too. Mosquitto 2.0 sends a
     * CONNACK only for MOSQ_ERR_AUTH; any other code closes the socket
     * without one (no "server unavailable" from a plugin). */
    found = secret_get(u.product_id, u.device_name, false, deadline, &sc);
    if (found < 0) goto unavailable;
    rc = igw_devauth_verify(user, pass, found ? sc.secret : NULL, found ? sc.len : 0, (int64_t)time(NULL),
                            NULL);
    if (rc == IGW_DEVAUTH_EMISMATCH && !sc.stale && sc.age >= REFETCH_MIN_AGE) {
        /* The secret may have been rotated since it was cached (and the
         * notification lost). */
        OPENSSL_cleanse(&sc, sizeof sc);
        found = secret_get(u.product_id, u.device_name, true, deadline, &sc);
        if (found < 0) goto unavailable;
        rc = igw_devauth_verify(user, pass, found ? sc.secret : NULL, found ? sc.len : 0,
                                (int64_t)time(NULL), NULL);
    }
    OPENSSL_cleanse(&sc.secret, sizeof sc.secret);
    if (rc != IGW_DEVAUTH_OK) {
        logf_limited(MOSQ_LOG_NOTICE, "client %s denied: %s", cidlog, igw_devauth_strerror(rc));
        return MOSQ_ERR_AUTH;
    }
    if (sc.stale)
        logf_limited(MOSQ_LOG_NOTICE, "client %s admitted on a cached secret %llds old: database unavailable",
                     cidlog, (long long)sc.age);
    presence_online(ed->client, want);
    return MOSQ_ERR_SUCCESS;
unavailable:
    logf_limited(MOSQ_LOG_WARNING, "client %s denied: database unavailable", cidlog);
    return MOSQ_ERR_AUTH;
}

/* ---- ACL ------------------------------------------------------------------------ */

static const char *access_name(int a)
{
    switch (a) {
    case MOSQ_ACL_READ: return "read";
    case MOSQ_ACL_WRITE: return "publish";
    case MOSQ_ACL_SUBSCRIBE: return "subscribe";
    default: return "access";
    }
}

static int on_acl_check(int event, void *event_data, void *userdata)
{
    struct mosquitto_evt_acl_check *ed = event_data;
    const char *user = mosquitto_client_username(ed->client);
    igw_topic t;
    const char *product, *device;
    char cidlog[80], topiclog[96];
    igw_devauth_username u;
    const char *why;
    int rc;
    (void)event;
    (void)userdata;

    if (is_admin_name(user)) return MOSQ_ERR_SUCCESS;
    if (ed->access == MOSQ_ACL_UNSUBSCRIBE) return MOSQ_ERR_SUCCESS; /* harmless */
    if (!user || igw_devauth_parse_username(user, strnlen(user, IGW_DEVAUTH_USER_MAX + 1), &u) != 0) {
        why = "not a device";
        goto deny;
    }
    switch (ed->access) {
    case MOSQ_ACL_WRITE: rc = igw_topic_parse(ed->topic, 0, &t) == 0 && t.dir == IGW_TOPIC_UP ? 0 : -1; break;
    case MOSQ_ACL_READ: rc = igw_topic_parse(ed->topic, 0, &t) == 0 && t.dir == IGW_TOPIC_DOWN ? 0 : -1; break;
    case MOSQ_ACL_SUBSCRIBE:
        rc = igw_topic_parse(ed->topic, IGW_TOPIC_PLUS_TYPE, &t) == 0 && t.dir == IGW_TOPIC_DOWN ? 0 : -1;
        break;
    default: rc = -1; break;
    }
    if (rc != 0) {
        why = "topic not allowed";
        goto deny;
    }
    product = t.product_id;
    device = t.device_name;
    if (strcmp(product, u.product_id) == 0 && strcmp(device, u.device_name) == 0)
        return MOSQ_ERR_SUCCESS;
    rc = bound_get(u.product_id, u.device_name, product, device, now_ms() + g.wait_ms);
    if (rc == 1) return MOSQ_ERR_SUCCESS;
    why = rc < 0 ? "database unavailable" : "another device, not a sub-device bound to this client";
deny:
    logf_limited(MOSQ_LOG_NOTICE, "client %s: %s %s denied: %s",
                 printable(mosquitto_client_id(ed->client), cidlog, sizeof cidlog),
                 access_name(ed->access), printable(ed->topic, topiclog, sizeof topiclog), why);
    return MOSQ_ERR_ACL_DENIED;
}

/* ---- presence ------------------------------------------------------------------------ */

/* What the broker knows of device connections, published for igwd (topic.h,
 * docs/device-protocol.md): `online` when a device's authentication succeeds
 * (Mosquitto 2.0 has no connect event for plugins; the connection is
 * established right after, in the same call of the broker), `offline` when
 * that same connection ends (MOSQ_EVT_DISCONNECT: a DISCONNECT, a socket
 * error, a keepalive expiry, a takeover). The privileged user is no device
 * and gets none.
 *
 * Takeover: a device that connects again with its clientID while connected
 * is authenticated first; then the broker closes the old connection, whose
 * disconnect comes after the new connection's `online`. So each clientID
 * remembers its current connection, and only that one's disconnect is
 * `offline`. A failed authentication clears the clientID before the
 * disconnect (handle_connect.c): nothing to match.
 *
 * Every fact carries this process's boot id (its start, wall ms) and a
 * sequence number, so igwd keeps the newest fact per device whatever the
 * order its nodes handle them in, and knows a restarted broker (a new boot)
 * dropped every older connection. QoS 1, never retained: a fact is for the
 * igwd nodes subscribed now; one that connects later asks (sync). */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fact_publish(const char *topic, const char *state, int64_t at)
{
    char payload[FACT_MAX], topiclog[96];
    int n = snprintf(payload, sizeof payload, "{\"state\":\"%s\",\"boot\":%lld,\"seq\":%llu,\"at\":%lld}", state,
                     (long long)g.boot, (unsigned long long)++g.seq, (long long)at);
    int rc;
    if (n < 0 || (size_t)n >= sizeof payload) return; /* cannot happen: bounded numbers */
    rc = mosquitto_broker_publish_copy(NULL, topic, n, payload, 1, false, NULL);
    if (rc != MOSQ_ERR_SUCCESS)
        logf_limited(MOSQ_LOG_WARNING, "presence %s on %s not published: %s", state,
                     printable(topic, topiclog, sizeof topiclog), mosquitto_strerror(rc));
}

/* key is "product&device" (a device's clientID, checked at its CONNECT). */
static void device_fact(const char *key, const char *state, int64_t at)
{
    char topic[IGW_TOPIC_PRESENCE_MAX + 1], p[IGW_DEVAUTH_NAME_MAX + 1];
    const char *amp = strchr(key, '&');
    size_t pn = amp ? (size_t)(amp - key) : 0;
    if (!amp || pn > IGW_DEVAUTH_NAME_MAX) return;
    memcpy(p, key, pn);
    p[pn] = 0;
    if (igw_topic_presence_build(topic, sizeof topic, p, amp + 1) < 0) return;
    fact_publish(topic, state, at);
}

static conn_ent **conn_link(const char *key)
{
    conn_ent **l = &g.conns[hash_of(key) % CONN_BUCKETS];
    while (*l && strcmp((*l)->key, key) != 0) l = &(*l)->next;
    return l;
}

/* A device authenticated on client (its clientID is key): it is the
 * device's current connection, and online. */
static void presence_online(const struct mosquitto *client, const char *key)
{
    conn_ent **l = conn_link(key), *e = *l;
    if (e && e->client == client) return; /* re-authenticated (a reload): nothing new */
    if (!e) {
        if (g.nconns >= CONN_MAX || !(e = calloc(1, sizeof *e))) {
            /* Neither fact then, so none is left without its pair. */
            logf_limited(MOSQ_LOG_WARNING, "presence of %s not tracked: %s", key,
                         g.nconns >= CONN_MAX ? "too many device connections" : "out of memory");
            return;
        }
        snprintf(e->key, sizeof e->key, "%s", key);
        *l = e;
        g.nconns++;
    }
    e->client = client;
    e->since = wall_ms();
    device_fact(key, "online", e->since);
}

static int on_disconnect(int event, void *event_data, void *userdata)
{
    struct mosquitto_evt_disconnect *ed = event_data;
    const char *cid = mosquitto_client_id(ed->client);
    conn_ent **l, *e;
    (void)event;
    (void)userdata;

    if (!cid || strnlen(cid, DEV_KEY_MAX) >= DEV_KEY_MAX) return MOSQ_ERR_SUCCESS;
    l = conn_link(cid);
    e = *l;
    if (!e || e->client != ed->client) return MOSQ_ERR_SUCCESS; /* not a device's current connection */
    *l = e->next;
    g.nconns--;
    device_fact(e->key, "offline", wall_ms());
    free(e);
    return MOSQ_ERR_SUCCESS;
}

/* igwd asked (IGW_TOPIC_PRESENCE_SYNC): the broker fact now, then, over the
 * next ticks, an `online` fact for every device connected. */
static void presence_sync(void)
{
    fact_publish(IGW_TOPIC_PRESENCE_BROKER, "boot", wall_ms());
    g.replay = 0;
}

static void presence_replay_step(void)
{
    int n = 0;
    for (; g.replay < CONN_BUCKETS && n < REPLAY_PER_TICK; g.replay++)
        for (conn_ent *e = g.conns[g.replay]; e; e = e->next, n++) device_fact(e->key, "online", e->since);
}

static void presence_free(void)
{
    if (!g.conns) return;
    for (size_t i = 0; i < CONN_BUCKETS; i++)
        while (g.conns[i]) {
            conn_ent *e = g.conns[i];
            g.conns[i] = e->next;
            free(e);
        }
    free(g.conns);
    g.conns = NULL;
}

/* ---- the relay of uplinks ------------------------------------------------------------ */

/* Each device uplink $<handle>/up/<type>/<p>/<d> is published again on its
 * relay topic igw/<handle>/up/<type>/<p>/<d>: Mosquitto 2.0 matches no '$'
 * topic against a shared subscription, and igwd's nodes share the relay
 * topics (IGW_TOPIC_RELAY_SUB) so that each uplink reaches one of them.
 * Runs after the publish passed the ACL (the broker checks before this
 * event); the copy is queued by the broker and sent from its main loop, in
 * the order of the originals. Never retained: the relay carries live
 * uplinks only. The original is left as it is. */
static int on_message(int event, void *event_data, void *userdata)
{
    struct mosquitto_evt_message *ed = event_data;
    char relay[IGW_TOPIC_MAX + 1], topiclog[96];
    igw_topic t;
    int rc;
    (void)event;
    (void)userdata;

    if (ed->topic && strcmp(ed->topic, IGW_TOPIC_PRESENCE_SYNC) == 0) {
        /* Only igwd may publish igw/...: the ACL refuses it to devices. */
        if (is_admin_name(mosquitto_client_username(ed->client))) presence_sync();
        return MOSQ_ERR_SUCCESS;
    }
    if (igw_topic_parse(ed->topic, 0, &t) != 0 || t.dir != IGW_TOPIC_UP)
        return MOSQ_ERR_SUCCESS;
    if (igw_topic_build(relay, sizeof relay, IGW_TOPIC_RELAY, IGW_TOPIC_UP, t.handle, t.type, t.product_id,
                        t.device_name) < 0)
        return MOSQ_ERR_SUCCESS; /* cannot happen: the parts parsed */
    rc = mosquitto_broker_publish_copy(NULL, relay, (int)ed->payloadlen, ed->payload, ed->qos, false, NULL);
    if (rc != MOSQ_ERR_SUCCESS)
        logf_limited(MOSQ_LOG_WARNING, "uplink on %s not relayed: %s",
                     printable(ed->topic, topiclog, sizeof topiclog), mosquitto_strerror(rc));
    return MOSQ_ERR_SUCCESS;
}

/* ---- plugin entry points ------------------------------------------------------------ */

static void state_free(void)
{
    presence_free();
    if (g.db) PQfinish(g.db);
    if (g.secrets) {
        OPENSSL_cleanse(g.secrets, SECRET_SLOTS * sizeof *g.secrets);
        free(g.secrets);
    }
    free(g.misses);
    free(g.binds);
    free(g.dsn);
    free(g.admin_user);
    OPENSSL_cleanse(g.admin_digest, sizeof g.admin_digest);
    memset(&g, 0, sizeof g);
}

/* Reads the first line of path (without its newline) and keeps its digest. */
static int admin_password_load(const char *path)
{
    char buf[ADMIN_PASS_MAX + 2];
    size_t n;
    FILE *f = fopen(path, "r");
    if (!f) {
        mosquitto_log_printf(MOSQ_LOG_ERR, PFX "cannot open plugin_opt_admin_password_file: %s",
                             strerror(errno));
        return -1;
    }
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    n = strcspn(buf, "\r\n");
    buf[n] = 0;
    if (n == 0 || n > ADMIN_PASS_MAX) {
        OPENSSL_cleanse(buf, sizeof buf);
        mosquitto_log_printf(MOSQ_LOG_ERR, PFX "plugin_opt_admin_password_file: the first line "
                                               "must hold a password of 1..%d bytes",
                             ADMIN_PASS_MAX);
        return -1;
    }
    SHA256((unsigned char *)buf, n, g.admin_digest);
    OPENSSL_cleanse(buf, sizeof buf);
    return 0;
}

EXPORT int mosquitto_plugin_version(int supported_version_count, const int *supported_versions)
{
    for (int i = 0; i < supported_version_count; i++)
        if (supported_versions[i] == 5) return 5;
    return -1;
}

/* A decimal integer in [lo, hi], the whole of s. */
static int parse_int(const char *k, const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        mosquitto_log_printf(MOSQ_LOG_ERR, PFX "plugin_opt_%s must be an integer in %ld..%ld", k, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static const struct {
    int event;
    MOSQ_FUNC_generic_callback cb;
} callbacks[] = {
    {MOSQ_EVT_BASIC_AUTH, on_basic_auth},
    {MOSQ_EVT_ACL_CHECK, on_acl_check},
    {MOSQ_EVT_MESSAGE, on_message},
    {MOSQ_EVT_TICK, on_tick},
    {MOSQ_EVT_DISCONNECT, on_disconnect},
};
#define NCALLBACKS (int)(sizeof callbacks / sizeof callbacks[0])

static void callbacks_unregister(int n)
{
    while (n-- > 0) mosquitto_callback_unregister(g.id, callbacks[n].event, callbacks[n].cb, NULL);
}

EXPORT int mosquitto_plugin_init(mosquitto_plugin_id_t *identifier, void **userdata,
                                 struct mosquitto_opt *options, int option_count)
{
    const char *pwfile = NULL;
    long num;
    int n;
    *userdata = NULL;
    memset(&g, 0, sizeof g);
    g.wait_ms = DB_WAIT_MS;
    g.stale_s = STALE_S;
    g.healthy = true; /* until a wait fails: the first callbacks may wait */
    for (int i = 0; i < option_count; i++) {
        const char *k = options[i].key, *v = options[i].value ? options[i].value : "";
        if (strcmp(k, "db_wait_ms") == 0) {
            if (parse_int(k, v, 1, DB_CONNECT_MS, &num) != 0) goto fail;
            g.wait_ms = (int)num;
        } else if (strcmp(k, "stale_s") == 0) {
            if (parse_int(k, v, 0, 86400, &num) != 0) goto fail;
            g.stale_s = num;
        } else if (strcmp(k, "dsn") == 0) {
            free(g.dsn);
            g.dsn = strdup(v);
        } else if (strcmp(k, "admin_user") == 0) {
            free(g.admin_user);
            g.admin_user = strdup(v);
        } else if (strcmp(k, "admin_password_file") == 0) {
            pwfile = v;
        } else {
            char kl[64];
            mosquitto_log_printf(MOSQ_LOG_ERR, PFX "unknown option plugin_opt_%s",
                                 printable(k, kl, sizeof kl));
            goto fail;
        }
    }
    if (!g.dsn || !*g.dsn) {
        mosquitto_log_printf(MOSQ_LOG_ERR, PFX "plugin_opt_dsn (a libpq connection string) is required");
        goto fail;
    }
    if (g.admin_user && *g.admin_user) {
        if (strchr(g.admin_user, ';')) {
            mosquitto_log_printf(MOSQ_LOG_ERR, PFX "plugin_opt_admin_user must not contain ';'");
            goto fail;
        }
        if (!pwfile || !*pwfile) {
            mosquitto_log_printf(MOSQ_LOG_ERR, PFX "plugin_opt_admin_user needs plugin_opt_admin_password_file");
            goto fail;
        }
        if (admin_password_load(pwfile) != 0) goto fail;
        g.admin_on = true;
    } else if (pwfile) {
        mosquitto_log_printf(MOSQ_LOG_ERR, PFX "plugin_opt_admin_password_file needs plugin_opt_admin_user");
        goto fail;
    }
    g.secrets = calloc(SECRET_SLOTS, sizeof *g.secrets);
    g.misses = calloc(MISS_SLOTS, sizeof *g.misses);
    g.binds = calloc(BIND_SLOTS, sizeof *g.binds);
    g.conns = calloc(CONN_BUCKETS, sizeof *g.conns);
    if (!g.secrets || !g.misses || !g.binds || !g.conns) goto fail;
    g.boot = wall_ms();
    g.replay = CONN_BUCKETS;
    g.id = identifier;
    for (n = 0; n < NCALLBACKS; n++)
        if (mosquitto_callback_register(identifier, callbacks[n].event, callbacks[n].cb, NULL, NULL) !=
            MOSQ_ERR_SUCCESS) {
            callbacks_unregister(n);
            goto fail;
        }
    /* The first connection is opened by the first tick, not the first
     * device: Mosquitto has dropped privileges by then. */
    mosquitto_log_printf(MOSQ_LOG_INFO, PFX "loaded (privileged user %s, db_wait_ms %d, stale_s %lld)",
                         g.admin_on ? "enabled" : "disabled", g.wait_ms, (long long)g.stale_s);
    return MOSQ_ERR_SUCCESS;
fail:
    state_free();
    return MOSQ_ERR_UNKNOWN;
}

EXPORT int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *options, int option_count)
{
    (void)userdata;
    (void)options;
    (void)option_count;
    if (g.id) callbacks_unregister(NCALLBACKS);
    state_free();
    return MOSQ_ERR_SUCCESS;
}
