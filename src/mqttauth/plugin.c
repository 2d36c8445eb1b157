/* plugin.c - igw's Mosquitto 2 auth plugin (plugin API v5).
 *
 * Devices connect with the iThings credentials of src/lib/devauth.h:
 * clientID {productID}&{deviceName}, a signed username and an HMAC
 * password checked against the device's secret in PostgreSQL. A device may
 * publish only to $<handle>/up/<type>/{itself} and subscribe to / receive
 * only $<handle>/down/<type>/{itself}; a gateway also for the sub-devices
 * bound to it. One privileged user (the gateway server igwd) may do
 * everything. Every uplink is relayed to igw/<handle>/up/... for igwd's
 * shared subscription (topic.h). See src/mqttauth/README.md.
 *
 * Options (mosquitto.conf, after `plugin PATH`):
 *   plugin_opt_dsn                  libpq connection string (required; not
 *                                   plugin_opt_db: Mosquitto 2.0.11 rejects
 *                                   option names shorter than 3 characters)
 *   plugin_opt_admin_user           privileged user name (optional)
 *   plugin_opt_admin_password_file  file whose first line is its password
 *                                   (required with admin_user)
 *
 * Mosquitto calls the plugin on its single main thread: no locking. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
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

#define SECRET_TTL 30       /* seconds a found secret is reused */
#define MISS_TTL 5          /* seconds "no such device" is reused */
#define REFETCH_MIN_AGE 2   /* a mismatch against an older cached secret refetches once */
#define BIND_TTL 10         /* seconds a gateway/sub-device answer is reused */
#define CACHE_SLOTS 1024    /* per cache; direct-mapped, a collision evicts */
#define DB_RETRY_S 1        /* at most one connection attempt per second */
#define KEY_MAX (2 * (2 * IGW_DEVAUTH_NAME_MAX + 1) + 2)
#define ADMIN_PASS_MAX 1024
#define LOG_PER_S 50        /* denial log lines per second, then silence */

/* ---- state ------------------------------------------------------------- */

typedef struct secret_ent {
    char key[2 * IGW_DEVAUTH_NAME_MAX + 2]; /* "product&device", "" = empty slot */
    unsigned char secret[IGW_DEVAUTH_SECRET_MAX];
    size_t secret_len;
    bool found;
    time_t fetched;
} secret_ent;

typedef struct bind_ent {
    char key[KEY_MAX]; /* "gp&gd" "\n" "sp&sd" */
    bool bound;
    time_t fetched;
} bind_ent;

static struct {
    mosquitto_plugin_id_t *id;
    char *dsn;
    char *admin_user;
    unsigned char admin_digest[SHA256_DIGEST_LENGTH];
    bool admin_on;
    PGconn *db;
    time_t db_next_try;
    secret_ent *secrets;
    bind_ent *binds;
    time_t log_sec;
    int log_n;
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

/* ---- PostgreSQL ------------------------------------------------------------ */

static PGconn *db_conn(void)
{
    static const char *const keys[] = {"connect_timeout", "options", "application_name",
                                       "dbname", NULL};
    const char *vals[] = {"2", "-c statement_timeout=2000", "igw-mqtt-auth", g.dsn, NULL};
    time_t now;

    if (g.db && PQstatus(g.db) == CONNECTION_OK) return g.db;
    if (g.db) {
        PQfinish(g.db);
        g.db = NULL;
    }
    now = time(NULL);
    if (now < g.db_next_try) return NULL;
    g.db_next_try = now + DB_RETRY_S;
    /* Defaults first: the DSN (expanded from dbname) overrides them. */
    g.db = PQconnectdbParams(keys, vals, 1);
    if (!g.db || PQstatus(g.db) != CONNECTION_OK) {
        char msg[200];
        printable(g.db ? PQerrorMessage(g.db) : "out of memory", msg, sizeof msg);
        mosquitto_log_printf(MOSQ_LOG_WARNING, PFX "database connection failed: %s", msg);
        PQfinish(g.db);
        g.db = NULL;
        return NULL;
    }
    mosquitto_log_printf(MOSQ_LOG_INFO, PFX "connected to the database");
    return g.db;
}

/* Runs a parameterized query returning rows; one reconnect-and-retry when the
 * connection broke. Returns the result (caller PQclear) or NULL. */
static PGresult *db_query(const char *sql, int n, const char *const *params)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        PGconn *c = db_conn();
        PGresult *r;
        if (!c) return NULL;
        r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
        if (r && PQresultStatus(r) == PGRES_TUPLES_OK) return r;
        {
            char msg[200];
            printable(PQerrorMessage(c), msg, sizeof msg);
            mosquitto_log_printf(MOSQ_LOG_WARNING, PFX "query failed: %s", msg);
        }
        PQclear(r);
        if (PQstatus(c) == CONNECTION_OK) return NULL; /* a query error, not the link */
        PQfinish(g.db);
        g.db = NULL;
        g.db_next_try = 0; /* reconnect right away, once */
    }
    return NULL;
}

/* ---- caches ---------------------------------------------------------------- */

static size_t slot_of(const char *key)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (; *key; key++) h = (h ^ (unsigned char)*key) * UINT64_C(1099511628211);
    return (size_t)(h % CACHE_SLOTS);
}

/* The device's raw secret: cached or fetched. Returns 1 found, 0 no such
 * device (or an undecodable secret), -1 database unavailable. force skips
 * the cache. *age is the cache entry's age in seconds. */
static int secret_get(const char *product, const char *device, bool force, const secret_ent **out,
                      time_t *age)
{
    char key[sizeof g.secrets[0].key];
    secret_ent *e;
    time_t now = time(NULL);
    const char *params[2] = {product, device};
    PGresult *r;

    snprintf(key, sizeof key, "%s&%s", product, device);
    e = &g.secrets[slot_of(key)];
    if (!force && strcmp(e->key, key) == 0 && now >= e->fetched &&
        now - e->fetched < (e->found ? SECRET_TTL : MISS_TTL)) {
        *out = e;
        *age = now - e->fetched;
        return e->found ? 1 : 0;
    }
    r = db_query("SELECT secret FROM devices WHERE product_id = $1 AND device_name = $2", 2,
                 params);
    if (!r) return -1;
    OPENSSL_cleanse(e, sizeof *e);
    memcpy(e->key, key, sizeof key);
    e->fetched = now;
    if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
        if (igw_devauth_secret_decode(PQgetvalue(r, 0, 0), e->secret, sizeof e->secret,
                                      &e->secret_len) == 0)
            e->found = true;
        else
            logf_limited(MOSQ_LOG_WARNING, "device %s has an undecodable secret in the database",
                         key);
    }
    PQclear(r);
    *out = e;
    *age = 0;
    return e->found ? 1 : 0;
}

/* Is sub-device (sp, sd) bound to gateway (gp, gd), and is that a gateway?
 * 1 yes, 0 no, -1 database unavailable. */
static int bound_get(const char *gp, const char *gd, const char *sp, const char *sd)
{
    char key[KEY_MAX];
    bind_ent *e;
    time_t now = time(NULL);
    const char *params[4] = {sp, sd, gp, gd};
    PGresult *r;

    snprintf(key, sizeof key, "%s&%s\n%s&%s", gp, gd, sp, sd);
    e = &g.binds[slot_of(key)];
    if (strcmp(e->key, key) == 0 && now >= e->fetched && now - e->fetched < BIND_TTL)
        return e->bound;
    r = db_query("SELECT 1 FROM devices s JOIN devices gw"
                 " ON gw.product_id = s.gateway_product_id"
                 " AND gw.device_name = s.gateway_device_name"
                 " WHERE s.product_id = $1 AND s.device_name = $2"
                 " AND gw.product_id = $3 AND gw.device_name = $4 AND gw.is_gateway",
                 4, params);
    if (!r) return -1;
    memcpy(e->key, key, sizeof key);
    e->bound = PQntuples(r) == 1;
    e->fetched = now;
    PQclear(r);
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
    const secret_ent *e = NULL;
    time_t age = 0;
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
    found = secret_get(u.product_id, u.device_name, false, &e, &age);
    if (found < 0) {
        logf_limited(MOSQ_LOG_WARNING, "client %s denied: database unavailable", cidlog);
        return MOSQ_ERR_AUTH;
    }
    rc = igw_devauth_verify(user, pass, found ? e->secret : NULL, found ? e->secret_len : 0,
                            (int64_t)time(NULL), NULL);
    if (rc == IGW_DEVAUTH_EMISMATCH && age >= REFETCH_MIN_AGE) {
        /* The secret may have been rotated since it was cached. */
        found = secret_get(u.product_id, u.device_name, true, &e, &age);
        if (found < 0) {
            logf_limited(MOSQ_LOG_WARNING, "client %s denied: database unavailable", cidlog);
            return MOSQ_ERR_AUTH;
        }
        rc = igw_devauth_verify(user, pass, found ? e->secret : NULL, found ? e->secret_len : 0,
                                (int64_t)time(NULL), NULL);
    }
    if (rc != IGW_DEVAUTH_OK) {
        logf_limited(MOSQ_LOG_NOTICE, "client %s denied: %s", cidlog, igw_devauth_strerror(rc));
        return MOSQ_ERR_AUTH;
    }
    return MOSQ_ERR_SUCCESS;
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
    rc = bound_get(u.product_id, u.device_name, product, device);
    if (rc == 1) return MOSQ_ERR_SUCCESS;
    why = rc < 0 ? "database unavailable" : "another device, not a sub-device bound to this client";
deny:
    logf_limited(MOSQ_LOG_NOTICE, "client %s: %s %s denied: %s",
                 printable(mosquitto_client_id(ed->client), cidlog, sizeof cidlog),
                 access_name(ed->access), printable(ed->topic, topiclog, sizeof topiclog), why);
    return MOSQ_ERR_ACL_DENIED;
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
    if (g.db) PQfinish(g.db);
    if (g.secrets) {
        OPENSSL_cleanse(g.secrets, CACHE_SLOTS * sizeof *g.secrets);
        free(g.secrets);
    }
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

EXPORT int mosquitto_plugin_init(mosquitto_plugin_id_t *identifier, void **userdata,
                                 struct mosquitto_opt *options, int option_count)
{
    const char *pwfile = NULL;
    *userdata = NULL;
    memset(&g, 0, sizeof g);
    for (int i = 0; i < option_count; i++) {
        const char *k = options[i].key, *v = options[i].value ? options[i].value : "";
        if (strcmp(k, "dsn") == 0) {
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
    g.secrets = calloc(CACHE_SLOTS, sizeof *g.secrets);
    g.binds = calloc(CACHE_SLOTS, sizeof *g.binds);
    if (!g.secrets || !g.binds) goto fail;
    g.id = identifier;
    if (mosquitto_callback_register(identifier, MOSQ_EVT_BASIC_AUTH, on_basic_auth, NULL, NULL) !=
        MOSQ_ERR_SUCCESS)
        goto fail;
    if (mosquitto_callback_register(identifier, MOSQ_EVT_ACL_CHECK, on_acl_check, NULL, NULL) !=
        MOSQ_ERR_SUCCESS) {
        mosquitto_callback_unregister(identifier, MOSQ_EVT_BASIC_AUTH, on_basic_auth, NULL);
        goto fail;
    }
    if (mosquitto_callback_register(identifier, MOSQ_EVT_MESSAGE, on_message, NULL, NULL) != MOSQ_ERR_SUCCESS) {
        mosquitto_callback_unregister(identifier, MOSQ_EVT_BASIC_AUTH, on_basic_auth, NULL);
        mosquitto_callback_unregister(identifier, MOSQ_EVT_ACL_CHECK, on_acl_check, NULL);
        goto fail;
    }
    mosquitto_log_printf(MOSQ_LOG_INFO, PFX "loaded (privileged user %s)",
                         g.admin_on ? "enabled" : "disabled");
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
    if (g.id) {
        mosquitto_callback_unregister(g.id, MOSQ_EVT_BASIC_AUTH, on_basic_auth, NULL);
        mosquitto_callback_unregister(g.id, MOSQ_EVT_ACL_CHECK, on_acl_check, NULL);
        mosquitto_callback_unregister(g.id, MOSQ_EVT_MESSAGE, on_message, NULL);
    }
    state_free();
    return MOSQ_ERR_SUCCESS;
}
