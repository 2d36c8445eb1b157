/* config.c - see config.h. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

extern char **environ;

typedef enum setting_kind {
    KIND_LISTEN,
    KIND_UINT,
    KIND_PORT,
    KIND_SIZE,
    KIND_STRING,
    KIND_BOOL,
    KIND_LOG_LEVEL,
    KIND_LOG_FORMAT
} setting_kind;

typedef struct setting {
    const char *key;
    setting_kind kind;
    size_t offset; /* of the member in igw_config */
    size_t size;   /* string buffer size (KIND_STRING) */
    uint64_t min, max;
    const char *def; /* default, in the text form igw_config_set parses */
    const char *help;
} setting;

#define OFF(m) offsetof(igw_config, m)
static const setting settings[] = {
    {"listen", KIND_LISTEN, OFF(listen_host), 0, 0, 0, "127.0.0.1:8080",
     "address:port to listen on ([v6]:port for IPv6; port 0 = a free port)"},
    {"threads", KIND_UINT, OFF(threads), 0, 0, IGW_CONFIG_MAX_THREADS, "0",
     "HTTP worker threads, each with its own event loop and socket (0 = online CPUs)"},
    {"max_body", KIND_SIZE, OFF(max_body), 0, 0, (uint64_t)1 << 30, "0",
     "global request body cap in bytes, suffix K/M/G allowed (0 = largest route cap, 64M)"},
    {"pg_dsn", KIND_STRING, OFF(pg_dsn), IGW_CONFIG_DSN_MAX, 0, 0, "",
     "PostgreSQL connection string (empty = not configured)"},
    {"redis_host", KIND_STRING, OFF(redis_host), IGW_CONFIG_HOST_MAX, 0, 0, "",
     "Redis host (empty = not configured)"},
    {"redis_port", KIND_PORT, OFF(redis_port), 0, 1, 65535, "6379", "Redis port"},
    {"mqtt_host", KIND_STRING, OFF(mqtt_host), IGW_CONFIG_HOST_MAX, 0, 0, "",
     "MQTT broker host (empty = not configured)"},
    {"mqtt_port", KIND_PORT, OFF(mqtt_port), 0, 1, 65535, "1883", "MQTT broker port"},
    {"mqtt_username", KIND_STRING, OFF(mqtt_username), IGW_CONFIG_HOST_MAX, 0, 0, "igwd",
     "igwd's own MQTT user (the broker's privileged client)"},
    {"mqtt_password_file", KIND_STRING, OFF(mqtt_password_file), IGW_CONFIG_PATH_MAX, 0, 0, "",
     "file holding igwd's MQTT password (empty = no password)"},
    {"mqtt_client_id", KIND_STRING, OFF(mqtt_client_id), IGW_CONFIG_HOST_MAX, 0, 0, "igwd-1",
     "MQTT client id; stable, so the broker keeps igwd's session and queues uplinks while it is down"},
    {"jwt_key_file", KIND_STRING, OFF(jwt_key_file), IGW_CONFIG_PATH_MAX, 0, 0, "",
     "file holding the HS256 key of login tokens (the igwctl token issue key; empty = application routes off)"},
    {"command_timeout_ms", KIND_UINT, OFF(command_timeout_ms), 0, 100, 3600000, "10000",
     "how long a device has to answer a device command before its result is a failure, milliseconds"},
    {"device_cache_ms", KIND_UINT, OFF(device_cache_ms), 0, 0, 600000, "5000",
     "how long a worker reuses a device's secret, binding and model, and a user's enterprise context, milliseconds"},
    {"db_connections", KIND_UINT, OFF(db_connections), 0, 1, 8, "1",
     "PostgreSQL connections per worker (pipelined); group-commit batches alternate between them"},
    {"batch_max", KIND_UINT, OFF(batch_max), 0, 1, 4096, "256",
     "device messages per group-commit transaction (at most)"},
    {"storage_root", KIND_STRING, OFF(storage_root), IGW_CONFIG_PATH_MAX, 0, 0, "",
     "directory of uploaded files; nothing outside it is read or written (empty = uploads off)"},
    {"upload_max", KIND_SIZE, OFF(upload_max), 0, 1, (uint64_t)1 << 30, "64M",
     "largest uploaded file in bytes, suffix K/M/G allowed"},
    {"url_key_file", KIND_STRING, OFF(url_key_file), IGW_CONFIG_PATH_MAX, 0, 0, "",
     "file holding the key that signs download URLs (empty = a random key per process)"},
    {"public_url", KIND_STRING, OFF(public_url), IGW_CONFIG_PATH_MAX, 0, 0, "",
     "scheme://host[:port] put in front of download URLs (empty = path-only URLs)"},
    {"url_ttl_s", KIND_UINT, OFF(url_ttl_s), 0, 1, 604800, "3600", "validity of a signed download URL, seconds"},
    {"bench_routes", KIND_BOOL, OFF(bench_routes), 0, 0, 0, "false",
     "serve POST /bench/bare (the send route's reply without a database write), for make bench-edge only"},
    {"metrics_public", KIND_BOOL, OFF(metrics_public), 0, 0, 0, "false",
     "serve GET /metrics to any peer (false: loopback peers only; others get not_found)"},
    {"console_dir", KIND_STRING, OFF(console_dir), IGW_CONFIG_PATH_MAX, 0, 0, "",
     "directory of the browser console, served read-only under GET /console/ (empty = off)"},
    {"signaling_enabled", KIND_BOOL, OFF(signaling_enabled), 0, 0, 0, "true",
     "Signaling switch; routes with `gate signaling` need it (true/false)"},
    {"db_timeout_ms", KIND_UINT, OFF(db_timeout_ms), 0, 100, 60000, "5000",
     "a database query unanswered this long fails (its connection is dropped and reconnected), milliseconds"},
    {"check_timeout_ms", KIND_UINT, OFF(check_timeout_ms), 0, 10, 10000, "500",
     "timeout of each Redis command and connect attempt, and of each probe, milliseconds"},
    {"probe_interval_ms", KIND_UINT, OFF(probe_interval_ms), 0, 0, 60000, "1000",
     "an idle PostgreSQL or Redis connection is probed after this long without an answer (0: never), milliseconds"},
    {"media_threads", KIND_UINT, OFF(media_threads), 0, 0, 16, "1",
     "media threads of the session engine's WebRTC core (0: no media; sessions are refused as unavailable)"},
    {"media_address", KIND_STRING, OFF(media_address), IGW_CONFIG_HOST_MAX, 0, 0, "127.0.0.1",
     "local IP address the media core gathers ICE candidates on and receives media at"},
    {"media_announced_address", KIND_STRING, OFF(media_announced_address), IGW_CONFIG_HOST_MAX, 0, 0, "",
     "address written in candidates instead of media_address (a 1:1 NAT); empty: media_address"},
    {"media_port_min", KIND_UINT, OFF(media_port_min), 0, 0, 65535, "0", "lowest UDP port of media (0: any)"},
    {"media_port_max", KIND_UINT, OFF(media_port_max), 0, 0, 65535, "0", "highest UDP port of media (0: any)"},
    {"media_shared_socket", KIND_BOOL, OFF(media_shared_socket), 0, 0, 0, "true",
     "ICE-lite peers share one UDP socket per media thread (false: a libnice agent and socket per peer)"},
    {"media_keyframe_interval_ms", KIND_UINT, OFF(media_keyframe_interval_ms), 0, 50, 10000, "250",
     "a camera is asked for a keyframe (PLI) at most this often, whichever viewers need one, milliseconds"},
    {"media_fault_barrier", KIND_BOOL, OFF(media_fault_barrier), 0, 0, 0, "false",
     "tests only: every track change and uplink gate the media core is asked to apply fails, as a failed media "
     "barrier (that viewer's session ends mediaFailed); never set in production"},
    {"shutdown_timeout_ms", KIND_UINT, OFF(shutdown_timeout_ms), 0, 0, 600000, "5000",
     "on SIGTERM/SIGINT, how long in-flight requests may take to finish, milliseconds"},
    {"access_log", KIND_BOOL, OFF(access_log), 0, 0, 0, "true", "one JSON line per request on stderr (true/false)"},
    {"log_level", KIND_LOG_LEVEL, OFF(log_level), 0, 0, 0, "info",
     "least severe diagnostic written on stderr: error, warn, info or debug"},
    {"log_format", KIND_LOG_FORMAT, OFF(log_format), 0, 0, 0, "text",
     "diagnostics on stderr as text lines or JSON lines (text/json)"},
    {"node_id", KIND_STRING, OFF(node_id), IGW_CONFIG_NODE_ID_MAX + 1, 0, 0, "",
     "this process's node id: owner of its sessions; a restart with the same id ends them "
     "(empty = the host name and the listening port, <host>:<port>)"},
    {"node_heartbeat_ms", KIND_UINT, OFF(node_heartbeat_ms), 0, 50, 60000, "1000",
     "how often the node's heartbeat is written, milliseconds"},
    {"node_lapse_ms", KIND_UINT, OFF(node_lapse_ms), 0, 1000, 3600000, "10000",
     "another node whose heartbeat is older than this is lost: its sessions are ended, milliseconds "
     "(at least twice node_heartbeat_ms)"},
    {"invite_timeout_ms", KIND_UINT, OFF(invite_timeout_ms), 0, 1000, 120000, "10000",
     "a camera invited to a leg that has not offered by then is given up: its sessions end (inviteTimeout), "
     "milliseconds"},
    {"leg_linger_ms", KIND_UINT, OFF(leg_linger_ms), 0, 0, 60000, "3000",
     "a shared camera leg whose last viewer left stays up this long: the next open of that camera joins it "
     "warm (no new invite), milliseconds; 0: it ends at once"},
    {"establish_timeout_ms", KIND_UINT, OFF(establish_timeout_ms), 0, 1000, 300000, "30000",
     "a session not established this long after its open ends (establishTimeout), milliseconds"},
    {"max_sessions", KIND_UINT, OFF(max_sessions), 0, 1, 100000, "1024",
     "live sessions this node holds at most; beyond, interaction.open is refused (capacity)"},
    {"max_sessions_per_enterprise", KIND_UINT, OFF(max_sessions_per_enterprise), 0, 0, 100000, "0",
     "live sessions of one enterprise this node holds at most (0: no cap but max_sessions); beyond, its "
     "opens are refused (capacity)"},
    {"max_sessions_per_user", KIND_UINT, OFF(max_sessions_per_user), 0, 0, 100000, "64",
     "live sessions of one user this node holds at most (0: no cap); beyond, its opens are refused (capacity), "
     "so one user cannot fill the node for everyone"},
    {"rights_recheck_ms", KIND_UINT, OFF(rights_recheck_ms), 0, 1000, 3600000, "10000",
     "every live session's holder rights are read again this often, the safety net of the igw_rights "
     "notifications that end a session at once when its user loses the device (rightsRevoked), milliseconds"},
    {"endpoint_ttl_ms", KIND_UINT, OFF(endpoint_ttl_ms), 0, 1000, 86400000, "3600000",
     "an application endpoint's life from its registration, milliseconds (the spec's one hour)"},
    {"endpoint_grace_ms", KIND_UINT, OFF(endpoint_grace_ms), 0, 1000, 3600000, "300000",
     "after its endpoint expired, how long a live session may still be transferred (interaction.control "
     "endpointControl) before it ends endpointExpired, milliseconds"},
    {"message_ttl_max_ms", KIND_UINT, OFF(message_ttl_max_ms), 0, 1000, 2592000000u, "86400000",
     "messageSend: how far ahead its expiresAt may be, milliseconds (a message waits for an offline device "
     "until then; the sending endpoint's expiry bounds it too)"},
    {"doorbell_ring_timeout_ms", KIND_UINT, OFF(doorbell_ring_timeout_ms), 0, 1000, 300000, "30000",
     "a door-bell ring nobody accepted by then ends (noAnswer) and the camera gets a bye, milliseconds"},
    {"doorbell_retention_ms", KIND_UINT, OFF(doorbell_retention_ms), 0, 1000, 86400000, "600000",
     "a door-bell decision (interaction.control accept or decline) retried with its token within this window "
     "returns its original result; after it, the retry is refused (replay rule 1), milliseconds"},
    {"ai_session_max_ms", KIND_UINT, OFF(ai_session_max_ms), 0, 60000, 86400000, "3600000",
     "an AI session (purpose aiVision) ends at this deadline after its open (reason deadline); no vision "
     "consent outlives it, milliseconds"},
    {"processor_bin", KIND_STRING, OFF(processor_bin), IGW_CONFIG_PATH_MAX, 0, 0, "",
     "the processor program AI sessions run (docs/ai.md, the processor protocol); empty: igw-proc beside igwd's "
     "own executable"},
    {"translation_grammar", KIND_STRING, OFF(translation_grammar), IGW_CONFIG_PATH_MAX, 0, 0, "",
     "a JSGF grammar the translation processor's recognizer is limited to (empty: pocketsphinx's general "
     "English model, best effort)"},
    {"im_standin", KIND_BOOL, OFF(im_standin), 0, 0, 0, "false",
     "wire igw's stand-in IM back end (groups in PostgreSQL, live calls in Redis) as the conference runtime, "
     "for demos and tests (make run turns it on); false, or no Redis: none is wired and the routes that need "
     "one answer unavailable"},
    {"im_max_groups_per_user", KIND_UINT, OFF(im_max_groups_per_user), 0, 1, 100000, "16",
     "stand-in IM: groups one user may create; beyond, groups/create is refused (capacity)"},
    {"im_max_calls_per_user", KIND_UINT, OFF(im_max_calls_per_user), 0, 1, 1000, "2",
     "stand-in IM: live calls one user may have started at once; beyond, calls/start is refused (capacity)"},
    {"im_max_calls_per_group", KIND_UINT, OFF(im_max_calls_per_group), 0, 1, 1000, "1",
     "stand-in IM: live calls of one group at once; beyond, calls/start is refused (capacity)"},
    {"im_heartbeat_ms", KIND_UINT, OFF(im_heartbeat_ms), 0, 1000, 600000, "30000",
     "a live call member without a join or heartbeat for this long is no longer live, milliseconds"},
    {"talk_enabled", KIND_BOOL, OFF(talk_enabled), 0, 0, 0, "false",
     "talk commands (interaction.open with purpose ipcTalk) reach the device (the spec's explicit talk switch)"},
    {"talk_members", KIND_BOOL, OFF(talk_members), 0, 0, 0, "false",
     "extra members may enter a talk (interaction.join); the spec's Signaling.IPC.Talk.Members "
     "(false keeps two-party talk)"},
};
#define NSETTINGS (sizeof settings / sizeof settings[0])

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const setting *find(const char *key, size_t len)
{
    for (size_t i = 0; i < NSETTINGS; i++)
        if (strlen(settings[i].key) == len && memcmp(settings[i].key, key, len) == 0)
            return &settings[i];
    return NULL;
}

/* Unsigned decimal, no sign or spaces; -1 on overflow or junk. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int set_listen(igw_config *c, const char *v, char *err, size_t errlen)
{
    const char *colon = strrchr(v, ':');
    const char *host = v;
    size_t hlen;
    if (!colon) {
        fail(err, errlen, "listen: expected address:port, got \"%s\"", v);
        return -1;
    }
    hlen = (size_t)(colon - v);
    if (v[0] == '[') { /* [v6]:port */
        if (hlen < 2 || v[hlen - 1] != ']') {
            fail(err, errlen, "listen: expected [address]:port for IPv6, got \"%s\"", v);
            return -1;
        }
        host = v + 1;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof c->listen_host) {
        fail(err, errlen, "listen: the address must be 1..%zu bytes", sizeof c->listen_host - 1);
        return -1;
    }
    uint64_t port;
    if (parse_u64(colon + 1, strlen(colon + 1), &port) || port > 65535) {
        fail(err, errlen, "listen: the port must be 0..65535, got \"%s\"", colon + 1);
        return -1;
    }
    memcpy(c->listen_host, host, hlen);
    c->listen_host[hlen] = '\0';
    c->listen_port = (uint16_t)port;
    return 0;
}

int igw_config_set(igw_config *c, const char *key, const char *value, char *err, size_t errlen)
{
    const setting *s = find(key, strlen(key));
    if (!s) {
        fail(err, errlen, "unknown setting \"%s\"", key);
        return -1;
    }
    char *base = (char *)c + s->offset;
    size_t n = strlen(value);
    uint64_t v;
    switch (s->kind) {
    case KIND_LISTEN:
        return set_listen(c, value, err, errlen);
    case KIND_UINT:
    case KIND_PORT:
        if (parse_u64(value, n, &v) || v < s->min || v > s->max) {
            fail(err, errlen, "%s: expected an integer %llu..%llu, got \"%s\"", s->key, (unsigned long long)s->min,
                 (unsigned long long)s->max, value);
            return -1;
        }
        if (s->kind == KIND_PORT)
            *(uint16_t *)(void *)base = (uint16_t)v;
        else
            *(unsigned *)(void *)base = (unsigned)v;
        return 0;
    case KIND_SIZE: {
        uint64_t mult = 1;
        if (n > 0) {
            switch (value[n - 1]) {
            case 'k': case 'K': mult = 1024; break;
            case 'm': case 'M': mult = 1024 * 1024; break;
            case 'g': case 'G': mult = 1024 * 1024 * 1024; break;
            default: break;
            }
        }
        size_t digits = mult == 1 ? n : n - 1;
        if (parse_u64(value, digits, &v) || v > s->max / mult || v * mult < s->min) {
            fail(err, errlen, "%s: expected bytes 0..%llu (suffix K, M or G allowed), got \"%s\"", s->key,
                 (unsigned long long)s->max, value);
            return -1;
        }
        *(size_t *)(void *)base = (size_t)(v * mult);
        return 0;
    }
    case KIND_STRING:
        if (n >= s->size) {
            fail(err, errlen, "%s: longer than %zu bytes", s->key, s->size - 1);
            return -1;
        }
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)value[i] < 0x20 || value[i] == 0x7f) {
                fail(err, errlen, "%s: control character in the value", s->key);
                return -1;
            }
        memcpy(base, value, n + 1);
        return 0;
    case KIND_BOOL:
        if (strcmp(value, "true") == 0)
            *(bool *)(void *)base = true;
        else if (strcmp(value, "false") == 0)
            *(bool *)(void *)base = false;
        else {
            fail(err, errlen, "%s: expected true or false, got \"%s\"", s->key, value);
            return -1;
        }
        return 0;
    case KIND_LOG_LEVEL:
        if (igw_log_level_parse(value, (igw_log_level *)(void *)base)) {
            fail(err, errlen, "%s: expected error, warn, info or debug, got \"%s\"", s->key, value);
            return -1;
        }
        return 0;
    case KIND_LOG_FORMAT:
        if (igw_log_format_parse(value, (igw_log_format *)(void *)base)) {
            fail(err, errlen, "%s: expected text or json, got \"%s\"", s->key, value);
            return -1;
        }
        return 0;
    }
    return -1;
}

int igw_config_defaults(igw_config *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NSETTINGS; i++)
        if (igw_config_set(c, settings[i].key, settings[i].def, err, errlen))
            return -1;
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

int igw_config_load_file(igw_config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fail(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    bool seen[NSETTINGS] = {0};
    char line[2048];
    unsigned lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n' && !feof(f)) {
            fail(err, errlen, "%s:%u: line longer than %zu bytes", path, lineno, sizeof line - 2);
            rc = -1;
            break;
        }
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            fail(err, errlen, "%s:%u: expected key = value", path, lineno);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        const setting *st = find(key, strlen(key));
        if (!st) {
            fail(err, errlen, "%s:%u: unknown setting \"%s\"", path, lineno, key);
            rc = -1;
            break;
        }
        if (seen[st - settings]) {
            fail(err, errlen, "%s:%u: \"%s\" set twice", path, lineno, key);
            rc = -1;
            break;
        }
        seen[st - settings] = true;
        char why[512];
        if (igw_config_set(c, key, value, why, sizeof why)) {
            fail(err, errlen, "%s:%u: %s", path, lineno, why);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        fail(err, errlen, "%s: read error", path);
        rc = -1;
    }
    fclose(f);
    return rc;
}

int igw_config_load_env(igw_config *c, char *err, size_t errlen)
{
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "IGW_", 4) != 0)
            continue;
        const char *name = *e + 4, *eq = strchr(name, '=');
        if (!eq)
            continue;
        char key[64];
        size_t n = (size_t)(eq - name);
        const setting *st = NULL;
        if (n < sizeof key) {
            for (size_t i = 0; i < n; i++)
                key[i] = (char)tolower((unsigned char)name[i]);
            key[n] = '\0';
            /* Only the upper-case spelling names a setting. */
            st = find(key, n);
            for (size_t i = 0; st && i < n; i++)
                if (islower((unsigned char)name[i]))
                    st = NULL;
        }
        if (!st) {
            fail(err, errlen, "environment: IGW_%.*s names no setting (see igwd --help)", (int)(n < 64 ? n : 64),
                 name);
            return -1;
        }
        char why[512];
        if (igw_config_set(c, key, eq + 1, why, sizeof why)) {
            fail(err, errlen, "environment IGW_%.*s: %s", (int)n, name, why);
            return -1;
        }
    }
    return 0;
}

void igw_config_resolve(igw_config *c, size_t largest_route_cap)
{
    if (c->threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c->threads = n < 1 ? 1 : n > IGW_CONFIG_MAX_THREADS ? IGW_CONFIG_MAX_THREADS : (unsigned)n;
    }
    if (c->max_body == 0)
        c->max_body = largest_route_cap;
}

void igw_config_print_help(FILE *out)
{
    fprintf(out, "Settings (file key, environment variable, default):\n");
    for (size_t i = 0; i < NSETTINGS; i++) {
        char env[64];
        size_t n = strlen(settings[i].key);
        if (n > sizeof env - 5)
            n = sizeof env - 5;
        memcpy(env, "IGW_", 4);
        for (size_t k = 0; k < n; k++)
            env[4 + k] = (char)toupper((unsigned char)settings[i].key[k]);
        env[4 + n] = '\0';
        fprintf(out, "  %-20s %-24s default \"%s\"\n      %s\n", settings[i].key, env, settings[i].def,
                settings[i].help);
    }
}
