/* mqtt.c - igwd's privileged MQTT client; see mqtt.h.
 *
 * Threads: the network thread owns the connection (connect, reconnect,
 * reads, writes, keepalive, callbacks); igw_mqtt_publish may run on any
 * thread (libmosquitto queues the packet under its own locks, with
 * mosquitto_threaded_set) and wakes the network thread through an eventfd.
 * The loop is ours, with poll(2), rather than mosquitto_loop(): that one uses
 * select(2), which cannot watch a descriptor >= FD_SETSIZE (1024), a number
 * a busy igwd reaches when it reconnects. */
#include "core/mqtt.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mosquitto.h>

#include "clock.h"
#include "core/log.h"
#include "lock.h"
#include "proto.h"
#include "topic.h"

_Static_assert(IGW_MQTT_NAME_MAX == IGW_TOPIC_NAME_MAX && IGW_MQTT_TYPE_MAX == IGW_TOPIC_TYPE_MAX &&
                   IGW_MQTT_HANDLE_MAX == IGW_TOPIC_HANDLE_MAX,
               "an uplink's fields as in topic.h");
_Static_assert(IGW_MQTT_PAYLOAD_MAX <= INT_MAX, "libmosquitto lengths are int");

#define PFX "mqtt: "
#define CLIENT_ID_MAX 128
#define KEEPALIVE_DEFAULT 30
#define KEEPALIVE_MIN 5
#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 8000
#define STABLE_MS 10000     /* a connection that lasted this long resets the backoff */
#define DROP_LOG_EVERY 1000 /* drops of one kind: the first and every 1000th are logged */
#define ERR_LOG_REPEAT_MS 30000
#define STOP_DRAIN_MS 1000  /* bound on sending DISCONNECT at stop */
#define POLL_MS 1000        /* keepalive checks at least this often */
#define DRAIN_IDLE_MS 500   /* drain: nothing received this long after the subscriptions: the queue is empty */
#define DRAIN_CONNECT_MS 10000 /* drain: not connected within this: given up */
/* Shared subscriptions (topic.h): one node of the group gets each relayed
 * uplink, and each presence fact when presence is on (the second). */
static char *const sub_topics[] = {IGW_TOPIC_RELAY_SUB, IGW_TOPIC_PRESENCE_SUB};
#define NSUBS_ALL (sizeof sub_topics / sizeof sub_topics[0])

struct igw_mqtt {
    struct mosquitto *mosq;
    char *host, *username, *password, *client_id;
    uint16_t port;
    int keepalive;
    int nsubs; /* of sub_topics: 1, or 2 with presence */
    bool drain; /* igw_mqtt_config.drain */
    igw_mqtt_uplink_fn fn;
    void *fn_arg;
    int wake_fd; /* eventfd: publishers and stop wake the network thread */
    pthread_t thread;
    pthread_mutex_t mu; /* with cv: igw_mqtt_wait_connected */
    pthread_cond_t cv;

    atomic_bool stop;
    atomic_bool paused;  /* igw_mqtt_pause: nothing more is read */
    atomic_bool link_up; /* CONNACK accepted, not yet disconnected */
    atomic_bool ready;   /* link_up and every subscription granted at QoS 1 */
    atomic_bool done;    /* drain: the session left its groups (or the drain ended otherwise) */
    atomic_uint_fast64_t in, presence, syncs, out, out_failed, dropped, d_topic, d_size, d_retained, connects, reconnects;

    /* network thread only */
    int sub_mid, unsub_mid;
    int64_t last_in_ms;   /* drain: the start, the UNSUBACK or the last message */
    bool unsubscribed;
    int64_t up_since_ms;
    unsigned backoff_ms;
    char last_err[160];
    int64_t last_err_ms;
};

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_rc = MOSQ_ERR_UNKNOWN;

static void lib_init(void)
{
    lib_rc = mosquitto_lib_init();
}

__attribute__((format(printf, 3, 4))) static void errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Copies s into out (cap bytes) with anything outside printable ASCII as
 * '?', truncated with "..." when longer. */
static const char *printable(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    out[i] = 0;
    if (s[i] && cap >= 4)
        memcpy(out + cap - 4, "...", 4);
    return out;
}

static uint64_t ld(const atomic_uint_fast64_t *c)
{
    return atomic_load_explicit((atomic_uint_fast64_t *)c, memory_order_relaxed);
}

static uint64_t inc(atomic_uint_fast64_t *c)
{
    return atomic_fetch_add_explicit(c, 1, memory_order_relaxed) + 1;
}

static void wake(igw_mqtt *m)
{
    uint64_t one = 1;
    /* EAGAIN (counter saturated) still leaves the fd readable. */
    if (write(m->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        igw_log(IGW_LOG_ERROR, NULL, PFX "eventfd write: %s", strerror(errno));
}

static void set_ready(igw_mqtt *m, bool v)
{
    igw_lock(&m->mu);
    atomic_store(&m->ready, v);
    pthread_cond_broadcast(&m->cv);
    igw_unlock(&m->mu);
}

/* Logs a connection problem; the same message at most every 30 s. */
static void conn_error(igw_mqtt *m, const char *what)
{
    int64_t t = igw_clock_ms();
    if (strcmp(what, m->last_err) == 0 && t - m->last_err_ms < ERR_LOG_REPEAT_MS)
        return;
    snprintf(m->last_err, sizeof m->last_err, "%s", what);
    m->last_err_ms = t;
    igw_log(IGW_LOG_WARN, NULL, PFX "%s:%u: %s (retrying)", m->host, (unsigned)m->port, what);
}

static void conn_error_rc(igw_mqtt *m, const char *op, int rc)
{
    char buf[160];
    if (rc == MOSQ_ERR_ERRNO)
        snprintf(buf, sizeof buf, "%s: %s", op, strerror(errno));
    else
        snprintf(buf, sizeof buf, "%s: %s", op, mosquitto_strerror(rc));
    conn_error(m, buf);
}

/* ---- topics ------------------------------------------------------------------- */

/* Fills u's kind and names from a relayed uplink
 * igw/<handle>/up/<type>/<product>/<device>, or (with presence) a presence
 * fact's topic. 0, or -1 when the topic is anything else. */
static int topic_parse(const igw_mqtt *m, const char *topic, igw_mqtt_uplink *u)
{
    igw_topic t;
    igw_topic_presence pt;
    if (m->nsubs > 1 && igw_topic_presence_parse(topic, &pt) == 0) {
        u->kind = IGW_MQTT_PRESENCE;
        u->handle[0] = u->type[0] = 0;
        memcpy(u->product_id, pt.product_id, sizeof u->product_id);
        memcpy(u->device_name, pt.device_name, sizeof u->device_name);
        return 0;
    }
    if (igw_topic_parse(topic, IGW_TOPIC_RELAY, &t) != 0 || t.dir != IGW_TOPIC_UP)
        return -1;
    u->kind = IGW_MQTT_UPLINK;
    memcpy(u->handle, t.handle, sizeof u->handle);
    memcpy(u->type, t.type, sizeof u->type);
    memcpy(u->product_id, t.product_id, sizeof u->product_id);
    memcpy(u->device_name, t.device_name, sizeof u->device_name);
    return 0;
}

/* ---- libmosquitto callbacks (network thread) ---------------------------------------- */

/* Counts a discarded message (in `counter` too, unless NULL) and logs the
 * first and every DROP_LOG_EVERY-th of its kind. */
static void drop(igw_mqtt *m, atomic_uint_fast64_t *counter, const char *why, const char *topic,
                 int len)
{
    uint64_t n = inc(&m->dropped);
    if (counter)
        n = inc(counter);
    if (n == 1 || n % DROP_LOG_EVERY == 0) {
        char t[96];
        igw_log(IGW_LOG_WARN, NULL, PFX "dropped a message on \"%s\" (%d bytes): %s (%llu such so far)",
                printable(topic ? topic : "", t, sizeof t), len, why, (unsigned long long)n);
    }
}

static void on_message(struct mosquitto *mosq, void *obj, const struct mosquitto_message *msg)
{
    igw_mqtt *m = obj;
    igw_mqtt_uplink hdr, *u;
    size_t len;
    (void)mosq;

    if (msg->payloadlen < 0 || msg->payloadlen > IGW_MQTT_PAYLOAD_MAX) {
        drop(m, &m->d_size, "payload too large", msg->topic, msg->payloadlen);
        return;
    }
    if (topic_parse(m, msg->topic, &hdr) != 0) {
        drop(m, &m->d_topic, "neither igw/<handle>/up/<type>/<productID>/<deviceName> nor presence", msg->topic,
             msg->payloadlen);
        return;
    }
    if (msg->retain) {
        /* Replayed from the retained store by a (re)subscription: old. */
        drop(m, &m->d_retained, "retained message replayed", msg->topic, msg->payloadlen);
        return;
    }
    len = (size_t)msg->payloadlen;
    u = malloc(sizeof *u + len + 1);
    if (!u) {
        /* Already acknowledged: it is lost. */
        drop(m, NULL, "out of memory", msg->topic, msg->payloadlen);
        return;
    }
    memcpy(u, &hdr, sizeof hdr);
    if (m->drain) /* its queue still coming */
        m->last_in_ms = igw_clock_ms();
    u->len = len;
    if (len)
        memcpy(u->payload, msg->payload, len);
    u->payload[len] = 0;
    inc(u->kind == IGW_MQTT_PRESENCE ? &m->presence : &m->in);
    m->fn(m->fn_arg, u);
}

static void on_connect(struct mosquitto *mosq, void *obj, int rc, int flags)
{
    igw_mqtt *m = obj;
    int src;
    if (rc != 0) {
        char buf[160];
        snprintf(buf, sizeof buf, "connection refused: %s", mosquitto_connack_string(rc));
        conn_error(m, buf);
        return;
    }
    atomic_store(&m->link_up, true);
    m->up_since_ms = igw_clock_ms();
    if (inc(&m->connects) > 1)
        inc(&m->reconnects);
    igw_log(IGW_LOG_INFO, NULL, PFX "connected to %s:%u as %s (session %s)", m->host, (unsigned)m->port,
            m->client_id, (flags & 1) ? "resumed" : "new");
    m->last_err[0] = 0;
    if (m->drain) { /* out of the groups first: what the session holds already comes all the same */
        m->last_in_ms = igw_clock_ms();
        src = mosquitto_unsubscribe_multiple(mosq, &m->unsub_mid, m->nsubs, sub_topics, NULL);
        if (src != MOSQ_ERR_SUCCESS) {
            conn_error_rc(m, "drain: unsubscribe", src);
            mosquitto_disconnect(mosq); /* and the drain ends */
        }
        return;
    }
    /* Every time: a session the broker lost (restart, takeover) has none. */
    src = mosquitto_subscribe_multiple(mosq, &m->sub_mid, m->nsubs, sub_topics, 1, 0, NULL);
    if (src != MOSQ_ERR_SUCCESS) {
        conn_error_rc(m, "subscribe", src);
        mosquitto_disconnect(mosq); /* and reconnect, to try again */
    }
}

static void on_subscribe(struct mosquitto *mosq, void *obj, int mid, int n, const int *granted)
{
    igw_mqtt *m = obj;
    bool all = n == m->nsubs;
    if (mid != m->sub_mid)
        return;
    for (int i = 0; i < n && i < m->nsubs; i++) {
        if (granted[i] != 1) {
            igw_log(IGW_LOG_ERROR, NULL, PFX "subscription to %s %s (granted %d): uplinks on it are lost",
                    sub_topics[i], granted[i] == 0x80 ? "refused" : "not at QoS 1", granted[i]);
            all = false;
        }
    }
    if (!all)
        return;
    /* Subscribed: what the broker published before is unknown to this
     * session (a broker restart lost it, or a fresh session), so ask. */
    if (m->nsubs > 1) {
        int prc = mosquitto_publish(mosq, NULL, IGW_TOPIC_PRESENCE_SYNC, 0, NULL, 1, false);
        if (prc == MOSQ_ERR_SUCCESS)
            inc(&m->syncs);
        else
            conn_error_rc(m, "presence sync", prc);
    }
    set_ready(m, true);
}

static void on_unsubscribe(struct mosquitto *mosq, void *obj, int mid)
{
    igw_mqtt *m = obj;
    (void)mosq;
    if (mid == m->unsub_mid) {
        m->unsubscribed = true;
        m->last_in_ms = igw_clock_ms();
    }
}

static void on_disconnect(struct mosquitto *mosq, void *obj, int rc)
{
    igw_mqtt *m = obj;
    (void)mosq;
    bool was_up = atomic_exchange(&m->link_up, false);
    set_ready(m, false);
    if (rc != 0 && was_up && !atomic_load(&m->stop))
        conn_error_rc(m, "connection lost", rc);
}

/* ---- the network thread ------------------------------------------------------------ */

/* Waits ms, or less when woken; true when stop is set. */
static bool pause_ms(igw_mqtt *m, unsigned ms)
{
    int64_t end = igw_clock_ms() + ms;
    while (!atomic_load(&m->stop)) {
        int64_t left = end - igw_clock_ms();
        struct pollfd p = {.fd = m->wake_fd, .events = POLLIN};
        uint64_t v;
        if (left <= 0)
            return false;
        if (poll(&p, 1, (int)left) > 0 && read(m->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
            igw_log(IGW_LOG_ERROR, NULL, PFX "eventfd read: %s", strerror(errno));
    }
    return true;
}

static void backoff_next(igw_mqtt *m)
{
    if (m->up_since_ms && igw_clock_ms() - m->up_since_ms >= STABLE_MS)
        m->backoff_ms = BACKOFF_MIN_MS;
    else if (m->backoff_ms < BACKOFF_MIN_MS)
        m->backoff_ms = BACKOFF_MIN_MS;
    else
        m->backoff_ms = m->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : m->backoff_ms * 2;
    m->up_since_ms = 0;
}

/* One round of I/O on the connected socket: 0, or the libmosquitto error
 * that closed it. */
static int io_round(igw_mqtt *m, int fd, int timeout_ms)
{
    bool reading = !atomic_load(&m->paused);
    struct pollfd p[2] = {
        {.fd = fd, .events = (short)((reading ? POLLIN : 0) | (mosquitto_want_write(m->mosq) ? POLLOUT : 0))},
        {.fd = m->wake_fd, .events = POLLIN},
    };
    int rc = MOSQ_ERR_SUCCESS, n;
    bool woken = false;

    n = poll(p, 2, timeout_ms);
    if (n < 0) {
        if (errno != EINTR)
            igw_log(IGW_LOG_ERROR, NULL, PFX "poll: %s", strerror(errno));
        return MOSQ_ERR_SUCCESS;
    }
    if (p[1].revents & POLLIN) {
        uint64_t v;
        if (read(m->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
            igw_log(IGW_LOG_ERROR, NULL, PFX "eventfd read: %s", strerror(errno));
        woken = true;
    }
    if (reading && (p[0].revents & (POLLIN | POLLERR | POLLHUP)))
        rc = mosquitto_loop_read(m->mosq, 1);
    if (rc == MOSQ_ERR_SUCCESS && mosquitto_socket(m->mosq) >= 0 &&
        ((p[0].revents & POLLOUT) || (woken && mosquitto_want_write(m->mosq))))
        rc = mosquitto_loop_write(m->mosq, 1);
    if (rc == MOSQ_ERR_SUCCESS && mosquitto_socket(m->mosq) >= 0)
        rc = mosquitto_loop_misc(m->mosq);
    return rc;
}

/* Sends the queued packets (PUBACKs of uplinks already handed over) and a
 * DISCONNECT, so that the broker keeps the session and does not deliver
 * those uplinks again. Two libmosquitto 2.0 traps: once disconnecting it
 * treats any packet it reads as a protocol error and closes the socket
 * unsent, so this only writes; and it closes the socket right after the
 * DISCONNECT, which with unread input in the kernel buffer sends an RST that
 * can make the broker discard what it has not read yet (the PUBACKs and the
 * DISCONNECT). A dup of the socket keeps it open: after libmosquitto's
 * close we half-close it and read until the broker's EOF (input dropped: it
 * was never acknowledged, the broker sends it again). */
static void disconnect_cleanly(igw_mqtt *m)
{
    int fd = mosquitto_socket(m->mosq), keep = fd >= 0 ? dup(fd) : -1;
    int64_t end = igw_clock_ms() + STOP_DRAIN_MS;

    if (mosquitto_disconnect(m->mosq) == MOSQ_ERR_SUCCESS) {
        while ((fd = mosquitto_socket(m->mosq)) >= 0 && mosquitto_want_write(m->mosq) &&
               igw_clock_ms() < end) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (poll(&p, 1, 50) > 0 && mosquitto_loop_write(m->mosq, 1) != MOSQ_ERR_SUCCESS)
                break;
        }
    }
    if (keep < 0)
        return;
    if (mosquitto_socket(m->mosq) < 0 && shutdown(keep, SHUT_WR) == 0) {
        char buf[4096];
        for (;;) {
            struct pollfd p = {.fd = keep, .events = POLLIN};
            int64_t left = end - igw_clock_ms();
            ssize_t r;
            if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                break;
            r = read(keep, buf, sizeof buf);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                break;
        }
    }
    close(keep);
}

/* A drain's progress, before each round: true when it is over. Its
 * session left the shared subscriptions as soon as it connected (the
 * broker hands their messages to the live members only from then on); what
 * the broker had queued for it keeps coming, and once nothing came for
 * DRAIN_IDLE_MS after the UNSUBACK it has all come. */
static bool drain_step(igw_mqtt *m)
{
    int64_t now = igw_clock_ms();
    if (m->unsubscribed && now - m->last_in_ms >= DRAIN_IDLE_MS) {
        igw_log(IGW_LOG_INFO, NULL, PFX "drain of %s: %" PRIu64 " message(s) received, its subscriptions left",
                m->client_id, ld(&m->in) + ld(&m->presence));
        return true;
    }
    if (!atomic_load(&m->link_up) && now - m->last_in_ms > DRAIN_CONNECT_MS) {
        igw_log(IGW_LOG_WARN, NULL, PFX "drain of %s: not connected in %d ms: given up", m->client_id,
                DRAIN_CONNECT_MS);
        return true;
    }
    return false;
}

static void *net_main(void *arg)
{
    igw_mqtt *m = arg;
    sigset_t all;
    bool tried = false;

    /* Signals belong to igwd's main thread; a broken pipe is an error return. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);

    while (!atomic_load(&m->stop)) {
        int fd = mosquitto_socket(m->mosq), rc;
        if (m->drain && drain_step(m))
            break;
        if (fd < 0) {
            if (tried && pause_ms(m, m->backoff_ms))
                break;
            if (!tried) /* the user name only: the password never reaches the log */
                igw_log(IGW_LOG_DEBUG, NULL, PFX "connecting to %s:%u as client %s, user %s", m->host,
                        (unsigned)m->port, m->client_id, m->username);
            rc = tried ? mosquitto_reconnect_async(m->mosq)
                       : mosquitto_connect_async(m->mosq, m->host, m->port, m->keepalive);
            tried = true;
            if (rc != MOSQ_ERR_SUCCESS) {
                conn_error_rc(m, "connect", rc);
                backoff_next(m);
            }
            continue;
        }
        bool was_up = atomic_load(&m->link_up);
        rc = io_round(m, fd, m->drain ? 100 : POLL_MS);
        if (rc != MOSQ_ERR_SUCCESS || mosquitto_socket(m->mosq) < 0) {
            /* libmosquitto closed the socket and called on_disconnect, which
             * logged the loss of an established link; refusals are logged
             * by on_connect. */
            if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_CONN_REFUSED && !was_up && !atomic_load(&m->stop))
                conn_error_rc(m, "connection", rc);
            if (m->drain && was_up) { /* taken over (the node is back) or cut: never again */
                igw_log(IGW_LOG_INFO, NULL, PFX "drain of %s: the connection ended before the drain did", m->client_id);
                break;
            }
            backoff_next(m);
        }
    }

    if (atomic_load(&m->link_up))
        disconnect_cleanly(m);
    atomic_store(&m->link_up, false);
    set_ready(m, false);
    atomic_store(&m->done, true);
    return NULL;
}

/* ---- API ------------------------------------------------------------------------ */

static bool id_ok(const char *s)
{
    size_t n = strnlen(s, CLIENT_ID_MAX + 1);
    if (n < 1 || n > CLIENT_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '&') /* '&': a device's {productID}&{deviceName} */
            return false;
    return true;
}

static void destroy(igw_mqtt *m)
{
    if (m->mosq)
        mosquitto_destroy(m->mosq);
    if (m->wake_fd >= 0)
        close(m->wake_fd);
    if (m->password) {
        explicit_bzero(m->password, strlen(m->password));
        free(m->password);
    }
    free(m->host);
    free(m->username);
    free(m->client_id);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

igw_mqtt *igw_mqtt_start(const igw_mqtt_config *cfg, igw_mqtt_uplink_fn fn, void *arg, char *err,
                         size_t errlen)
{
    igw_mqtt *m;
    int rc, e;

    if (!cfg || !fn) {
        errf(err, errlen, "mqtt: no settings or no uplink callback");
        return NULL;
    }
    if (!cfg->host || !*cfg->host || cfg->port == 0) {
        errf(err, errlen, "mqtt: broker host and port are required");
        return NULL;
    }
    if (!cfg->username || !*cfg->username || !cfg->password || !*cfg->password) {
        errf(err, errlen, "mqtt: username and password are required");
        return NULL;
    }
    if (!cfg->client_id || !id_ok(cfg->client_id)) {
        errf(err, errlen, "mqtt: client id must be 1..%d printable ASCII bytes without '&' or spaces",
             CLIENT_ID_MAX);
        return NULL;
    }
    if (cfg->keepalive_s != 0 && (cfg->keepalive_s < KEEPALIVE_MIN || cfg->keepalive_s > 65535)) {
        errf(err, errlen, "mqtt: keepalive must be %d..65535 seconds (or 0: %d)", KEEPALIVE_MIN,
             KEEPALIVE_DEFAULT);
        return NULL;
    }
    pthread_once(&lib_once, lib_init);
    if (lib_rc != MOSQ_ERR_SUCCESS) {
        errf(err, errlen, "mqtt: mosquitto_lib_init: %s", mosquitto_strerror(lib_rc));
        return NULL;
    }

    m = calloc(1, sizeof *m);
    if (!m) {
        errf(err, errlen, "mqtt: out of memory");
        return NULL;
    }
    m->wake_fd = -1;
    if ((e = pthread_mutex_init(&m->mu, NULL)) != 0) {
        free(m);
        errf(err, errlen, "mqtt: pthread_mutex_init: %s", strerror(e));
        return NULL;
    }
    pthread_condattr_t ca;
    if ((e = pthread_condattr_init(&ca)) == 0) {
        e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if (e == 0)
            e = pthread_cond_init(&m->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (e != 0) {
        pthread_mutex_destroy(&m->mu);
        free(m);
        errf(err, errlen, "mqtt: pthread_cond_init: %s", strerror(e));
        return NULL;
    }
    m->fn = fn;
    m->fn_arg = arg;
    m->port = cfg->port;
    m->keepalive = cfg->keepalive_s ? (int)cfg->keepalive_s : KEEPALIVE_DEFAULT;
    m->nsubs = cfg->presence ? (int)NSUBS_ALL : 1;
    m->drain = cfg->drain;
    m->last_in_ms = igw_clock_ms(); /* a drain's connect deadline counts from here */
    m->host = strdup(cfg->host);
    m->username = strdup(cfg->username);
    m->password = strdup(cfg->password);
    m->client_id = strdup(cfg->client_id);
    if (!m->host || !m->username || !m->password || !m->client_id) {
        errf(err, errlen, "mqtt: out of memory");
        goto fail;
    }
    m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m->wake_fd < 0) {
        errf(err, errlen, "mqtt: eventfd: %s", strerror(errno));
        goto fail;
    }
    /* clean_session=false: the broker keeps the subscriptions and queues
     * QoS 1 uplinks while igwd is away. */
    m->mosq = mosquitto_new(m->client_id, false, m);
    if (!m->mosq) {
        errf(err, errlen, "mqtt: mosquitto_new: %s", strerror(errno));
        goto fail;
    }
    /* TCP_NODELAY: a downlink is one small packet; Nagle held each ~40 ms
     * waiting for the broker's ack of the previous one. */
    if ((rc = mosquitto_threaded_set(m->mosq, true)) != MOSQ_ERR_SUCCESS ||
        (rc = mosquitto_int_option(m->mosq, MOSQ_OPT_TCP_NODELAY, 1)) != MOSQ_ERR_SUCCESS ||
        (rc = mosquitto_int_option(m->mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)) !=
            MOSQ_ERR_SUCCESS ||
        (rc = mosquitto_username_pw_set(m->mosq, m->username, m->password)) != MOSQ_ERR_SUCCESS) {
        errf(err, errlen, "mqtt: client setup: %s", mosquitto_strerror(rc));
        goto fail;
    }
    mosquitto_connect_with_flags_callback_set(m->mosq, on_connect);
    mosquitto_disconnect_callback_set(m->mosq, on_disconnect);
    mosquitto_subscribe_callback_set(m->mosq, on_subscribe);
    mosquitto_unsubscribe_callback_set(m->mosq, on_unsubscribe);
    mosquitto_message_callback_set(m->mosq, on_message);
    if ((e = pthread_create(&m->thread, NULL, net_main, m)) != 0) {
        errf(err, errlen, "mqtt: pthread_create: %s", strerror(e));
        goto fail;
    }
    return m;
fail:
    destroy(m);
    return NULL;
}

int igw_mqtt_publish(igw_mqtt *m, const char *topic, const void *payload, size_t len, int qos)
{
    int rc;
    if (!m)
        return -1;
    if (!topic || (len && !payload) || len > IGW_MQTT_PAYLOAD_MAX || qos < 0 || qos > 2 ||
        !atomic_load(&m->link_up)) {
        inc(&m->out_failed);
        return -1;
    }
    rc = mosquitto_publish(m->mosq, NULL, topic, (int)len, payload, qos, false);
    if (rc != MOSQ_ERR_SUCCESS) {
        inc(&m->out_failed);
        return -1;
    }
    inc(&m->out);
    wake(m);
    return 0;
}

int igw_mqtt_publish_down(igw_mqtt *m, const igw_proto_down *d, const char *product_id, const char *device_name,
                          const void *payload, size_t len)
{
    char topic[IGW_TOPIC_MAX + 1];
    if (!m || !d ||
        igw_topic_build(topic, sizeof topic, 0, IGW_TOPIC_DOWN, d->handle, d->type, product_id, device_name) < 0)
        return -1;
    return igw_mqtt_publish(m, topic, payload, len, 1);
}

bool igw_mqtt_connected(const igw_mqtt *m)
{
    return m && atomic_load(&((igw_mqtt *)m)->ready);
}

int igw_mqtt_wait_connected(igw_mqtt *m, unsigned timeout_ms)
{
    struct timespec dl;
    int rc = 0;
    if (!m)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    igw_lock(&m->mu);
    while (!atomic_load(&m->ready) && rc == 0)
        rc = pthread_cond_timedwait(&m->cv, &m->mu, &dl);
    bool ok = atomic_load(&m->ready);
    igw_unlock(&m->mu);
    return ok ? 0 : -1;
}

void igw_mqtt_stats_get(const igw_mqtt *m, igw_mqtt_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!m)
        return;
    out->in = ld(&m->in);
    out->presence = ld(&m->presence);
    out->syncs = ld(&m->syncs);
    out->out = ld(&m->out);
    out->out_failed = ld(&m->out_failed);
    out->dropped_topic = ld(&m->d_topic);
    out->dropped_size = ld(&m->d_size);
    out->dropped_retained = ld(&m->d_retained);
    out->dropped = ld(&m->dropped);
    out->reconnects = ld(&m->reconnects);
}

bool igw_mqtt_done(const igw_mqtt *m)
{
    return m && atomic_load(&m->done);
}

void igw_mqtt_uplink_free(igw_mqtt_uplink *u)
{
    free(u);
}

void igw_mqtt_pause(igw_mqtt *m)
{
    if (!m)
        return;
    atomic_store(&m->paused, true);
    wake(m);
}

void igw_mqtt_stop(igw_mqtt *m)
{
    int e;
    if (!m)
        return;
    atomic_store(&m->stop, true);
    wake(m);
    if ((e = pthread_join(m->thread, NULL)) != 0)
        igw_log(IGW_LOG_ERROR, NULL, PFX "pthread_join: %s", strerror(e));
    destroy(m);
}
