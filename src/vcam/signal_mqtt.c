/*
 * signal_mqtt.c - igw-vcam as an MQTT device (see signal.h and
 * docs/device-protocol.md, "Media (handle media)").
 *
 * Threads: libmosquitto runs its network loop on a thread of its own
 * (mosquitto_loop_start). Its callbacks only copy what they got into an
 * item, queue it and wake the main loop through an eventfd; everything else
 * (JSON, the protocol, the camera's callbacks, publishing) happens on the
 * main loop. mosquitto_publish and _subscribe are safe to call from there
 * while the network thread runs.
 */
#include "signal.h"
#include "log.h"

#include "await.h"

#include "arena.h"
#include "json.h"
#include "jw.h"

#include <errno.h>
#include <glib-unix.h>
#include <glib.h>
#include <mosquitto.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* A downlink is at most an SDP (escaped CR/LF grow it a little) plus the
 * envelope; anything bigger is dropped unread. */
#define PAYLOAD_MAX (IGW_VCAM_SIGNAL_MAX + 4096)
#define JSON_DEPTH 8
#define TOPIC_MAX (16 + 2 * IGW_DEVAUTH_NAME_MAX + 16)
#define CREDENTIAL_S (24 * 3600) /* the signed username's lifetime */
#define FLUSH_MS 1000            /* what destroy waits for PUBACKs */
/* Offers waiting for their mediaOfferReply: one per leg, a live leg and the
 * playback legs beside it (the oldest is forgotten when full). */
#define OFFERS_MAX 8
/* A client-id takeover loop (two cameras with one identity): this many
 * connections in a row, each lost within TAKEOVER_QUICK_MS of its CONNACK.
 * Mosquitto 2.0 closes the older connection without the MQTT 5 reason
 * (session taken over) reaching it, so the pattern is what tells. */
#define TAKEOVER_DROPS 3
#define TAKEOVER_QUICK_MS 5000
/* The most plays a getReply carries (igwd's edge.c sends at most 8): a
 * full reply means more may wait, asked for once these are answered. */
#define GET_MESSAGES_MAX 8

typedef struct item {
    enum { IT_CONNECT, IT_DISCONNECT, IT_MESSAGE } kind;
    int rc;
    char *topic;
    char *payload; /* NUL-terminated copy */
    size_t len;
} item;

typedef struct mqtt_signal {
    igw_vcam_signal base;
    igw_vcam_mqtt_config c;
    struct mosquitto *m;
    int loop_started;
    GAsyncQueue *q; /* item *, from the network thread */
    int efd;
    guint watch;
    gint inflight; /* QoS 1 publishes not yet acknowledged (atomic) */
    int connected; /* the main loop's view */
    gint64 connected_at_us; /* the last CONNACK (monotonic) */
    unsigned quick_drops;   /* connections in a row lost within TAKEOVER_QUICK_MS */
    char up_session[TOPIC_MAX], up_capability[TOPIC_MAX], up_recording[TOPIC_MAX], up_doorbell[TOPIC_MAX];
    char down_session[TOPIC_MAX], down_capability[TOPIC_MAX], down_recording[TOPIC_MAX], down_doorbell[TOPIC_MAX];
    char up_message[TOPIC_MAX], down_message[TOPIC_MAX];
    char token_prefix[16];
    unsigned token_seq;
    /* The offers waiting for their mediaOfferReply, the newest of each leg
     * (used: leg[0] != 0; seq orders them for eviction). */
    struct offer {
        char token[IGW_VCAM_TOKEN_MAX + 1];
        char leg[IGW_VCAM_LEG_MAX + 1];
        uint32_t rev;
        unsigned seq;
    } offers[OFFERS_MAX];
    unsigned offer_seq;
    /* The capability report, sent again until a reportReply answers one
     * (igwd may not have been subscribed when it went). */
    igw_vcam_await cap;
    /* The `get` of the messages waiting for the camera, likewise; the plays
     * of a full getReply still unanswered (asked again once none is). */
    igw_vcam_await get;
    char more[GET_MESSAGES_MAX][IGW_VCAM_TOKEN_MAX + 1];
    unsigned nmore;
    bool delivering; /* handing a getReply's plays over: no get in between */
    igw_arena arena;
    igw_jw w;
} mqtt_signal;

#define mlog(...) igw_vcam_log("mqtt: ", __VA_ARGS__)

/* ---- configuration ---- */

static int copy_field(char *dst, size_t cap, igw_str v)
{
    if (v.len == 0 || v.len >= cap)
        return -1;
    memcpy(dst, v.ptr, v.len);
    dst[v.len] = '\0';
    return 0;
}

/* Reads the members of one object at j, filling the fields named in keys
 * (a string each) into dst when dst is still empty; skips the rest. */
static int read_members(igw_json *j, const char *const *keys, char **dst, const size_t *caps, size_t n,
                        int64_t *port, char *err, size_t errlen, const char *obj)
{
    igw_str key, val;
    int more;

    if (igw_json_object_begin(j) != 0)
        return -1;
    while ((more = igw_json_object_next(j, &key)) > 0) {
        size_t i;
        for (i = 0; i < n; i++)
            if (key.len == strlen(keys[i]) && memcmp(key.ptr, keys[i], key.len) == 0)
                break;
        if (i < n) {
            if (igw_json_string(j, &val) != 0)
                return -1;
            if (dst[i][0] == '\0' && copy_field(dst[i], caps[i], val) != 0) {
                snprintf(err, errlen, "%s.%s is empty or longer than %zu bytes", obj, keys[i], caps[i] - 1);
                return -2;
            }
        } else if (port && key.len == 4 && memcmp(key.ptr, "port", 4) == 0) {
            if (igw_json_int(j, port, 1, 65535) != 0)
                return -1;
        } else {
            igw_str raw;
            if (igw_json_value(j, IGW_JSON_RFC8259, IGW_JSON_MAX_DEPTH - 2, SIZE_MAX, &raw) != 0)
                return -1;
        }
    }
    return more;
}

int igw_vcam_mqtt_config_read(const char *path, igw_vcam_mqtt_config *c, char *err, size_t errlen)
{
    gchar *text = NULL;
    gsize len = 0;
    GError *gerr = NULL;
    igw_arena a;
    igw_json j;
    igw_str key, raw;
    int more, rc = -1;

    if (!g_file_get_contents(path, &text, &len, &gerr)) {
        snprintf(err, errlen, "%s: %s", path, gerr ? gerr->message : "cannot read");
        g_clear_error(&gerr);
        return -1;
    }
    if (len > 1024 * 1024) {
        snprintf(err, errlen, "%s: over 1 MiB", path);
        g_free(text);
        return -1;
    }
    igw_arena_init(&a, 4 * len + 4096);
    igw_json_init(&j, text, len, &a, IGW_JSON_MAX_DEPTH);
    err[0] = '\0';
    if (igw_json_object_begin(&j) != 0)
        goto bad;
    while ((more = igw_json_object_next(&j, &key)) > 0) {
#define IS(k) (key.len == sizeof(k) - 1 && memcmp(key.ptr, k, key.len) == 0)
        int r;
        if (IS("device")) {
            static const char *const keys[] = {"productID", "deviceName", "secret"};
            char *dst[] = {c->product, c->device, c->secret};
            const size_t caps[] = {sizeof c->product, sizeof c->device, sizeof c->secret};
            r = read_members(&j, keys, dst, caps, 3, NULL, err, errlen, "device");
        } else if (IS("mqtt")) {
            static const char *const keys[] = {"host"};
            char *dst[] = {c->host};
            const size_t caps[] = {sizeof c->host};
            int64_t port = 0;
            r = read_members(&j, keys, dst, caps, 1, &port, err, errlen, "mqtt");
            if (r == 0 && c->port == 0)
                c->port = (int)port;
        } else if (IS("camera")) {
            static const char *const keys[] = {"cameraId"};
            char *dst[] = {c->camera_id};
            const size_t caps[] = {sizeof c->camera_id};
            r = read_members(&j, keys, dst, caps, 1, NULL, err, errlen, "camera");
        } else {
            r = igw_json_value(&j, IGW_JSON_RFC8259, IGW_JSON_MAX_DEPTH - 1, SIZE_MAX, &raw);
        }
#undef IS
        if (r != 0)
            goto bad;
    }
    if (more != 0 || igw_json_finish(&j) != 0)
        goto bad;
    if (!c->product[0] || !c->device[0] || !c->secret[0]) {
        snprintf(err, errlen, "%s: no device.productID, device.deviceName or device.secret", path);
        goto out;
    }
    rc = 0;
    goto out;
bad:
    if (!err[0])
        snprintf(err, errlen, "%s: not the expected JSON (%s at %s)", path,
                 j.reason ? j.reason : igw_json_errkind_name(j.err), j.path[0] ? j.path : "/");
out:
    igw_arena_free(&a);
    g_free(text);
    return rc;
}

int igw_vcam_mqtt_config_check(const igw_vcam_mqtt_config *c, char *err, size_t errlen)
{
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    unsigned char key[IGW_DEVAUTH_SECRET_MAX];
    size_t klen;

    if (!c->host[0] || c->port < 1 || c->port > 65535) {
        snprintf(err, errlen, "no broker: give --mqtt HOST:PORT (or mqtt.host/port in --device-file)");
        return -1;
    }
    if (!igw_devauth_name_ok(c->product, strlen(c->product)) ||
        !igw_devauth_name_ok(c->device, strlen(c->device))) {
        snprintf(err, errlen, "--product and --device want 1..%d printable bytes without & ; : + # /",
                 IGW_DEVAUTH_NAME_MAX);
        return -1;
    }
    if (igw_devauth_secret_decode(c->secret, key, sizeof key, &klen) != 0) {
        snprintf(err, errlen, "--secret is not the base64 of %d..%d bytes", IGW_DEVAUTH_SECRET_MIN,
                 IGW_DEVAUTH_SECRET_MAX);
        return -1;
    }
    memset(key, 0, sizeof key);
    if (igw_devauth_sign(c->product, c->device, c->secret, (int64_t)time(NULL) + CREDENTIAL_S, 0, user,
                         sizeof user, pass, sizeof pass) != 0) {
        snprintf(err, errlen, "cannot sign a username with this device and secret");
        return -1;
    }
    if (!igw_devauth_name_ok(c->camera_id, strlen(c->camera_id))) {
        snprintf(err, errlen, "--camera-id wants 1..%d printable bytes", IGW_VCAM_ID_MAX);
        return -1;
    }
    return 0;
}

/* Signs a fresh username (random connid, expiry a day from now) and hands
 * it to libmosquitto for the next connection attempt. Any thread. */
static int set_credentials(mqtt_signal *s)
{
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    int rc;

    if (igw_devauth_sign(s->c.product, s->c.device, s->c.secret, (int64_t)time(NULL) + CREDENTIAL_S, 0, user,
                         sizeof user, pass, sizeof pass) != 0) {
        mlog("error: cannot sign the credentials");
        return -1;
    }
    rc = mosquitto_username_pw_set(s->m, user, pass);
    memset(pass, 0, sizeof pass);
    if (rc != MOSQ_ERR_SUCCESS) {
        mlog("error: username_pw_set: %s", mosquitto_strerror(rc));
        return -1;
    }
    return 0;
}

/* ---- the network thread: copy, queue, wake ---- */

static void item_free(gpointer p)
{
    item *it = p;

    if (!it)
        return;
    free(it->topic);
    free(it->payload);
    free(it);
}

static void post(mqtt_signal *s, item *it)
{
    uint64_t one = 1;

    g_async_queue_push(s->q, it);
    /* A full counter (never in practice) still leaves the fd readable. */
    if (write(s->efd, &one, sizeof one) < 0 && errno != EAGAIN)
        mlog("error: eventfd write: %s", strerror(errno));
}

static void post_kind(mqtt_signal *s, int kind, int rc)
{
    item *it = calloc(1, sizeof *it);

    if (!it) {
        mlog("error: out of memory, a %s is lost", kind == IT_CONNECT ? "connect" : "disconnect");
        return;
    }
    it->kind = kind;
    it->rc = rc;
    post(s, it);
}

static void net_connect(struct mosquitto *m, void *obj, int rc)
{
    (void)m;
    post_kind(obj, IT_CONNECT, rc);
}

static void net_disconnect(struct mosquitto *m, void *obj, int rc)
{
    mqtt_signal *s = obj;

    (void)m;
    /* This thread reconnects next: sign afresh so that a long-running camera
     * never presents an expired username. */
    if (rc != 0)
        set_credentials(s);
    post_kind(s, IT_DISCONNECT, rc);
}

static void net_publish(struct mosquitto *m, void *obj, int mid)
{
    mqtt_signal *s = obj;

    (void)m;
    (void)mid;
    if (g_atomic_int_get(&s->inflight) > 0)
        g_atomic_int_add(&s->inflight, -1);
}

/* A refused subscription (0x80: the broker's ACL) means no invite will
 * ever arrive: say so. */
static void net_subscribe(struct mosquitto *m, void *obj, int mid, int n, const int *granted)
{
    (void)m;
    (void)obj;
    (void)mid;
    for (int i = 0; i < n; i++)
        if (granted[i] > 2)
            mlog("error: the broker refused a subscription (granted 0x%02x): no downlinks will arrive", granted[i]);
}

static void net_message(struct mosquitto *m, void *obj, const struct mosquitto_message *msg)
{
    mqtt_signal *s = obj;
    item *it;

    (void)m;
    if (!msg->topic || msg->payloadlen < 0)
        return;
    if ((size_t)msg->payloadlen > PAYLOAD_MAX) {
        mlog("dropped a message of %d bytes on %s (over %d)", msg->payloadlen, msg->topic, PAYLOAD_MAX);
        return;
    }
    it = calloc(1, sizeof *it);
    if (!it || !(it->topic = strdup(msg->topic)) || !(it->payload = malloc((size_t)msg->payloadlen + 1))) {
        mlog("error: out of memory, a message on %s is lost", msg->topic);
        item_free(it);
        return;
    }
    it->kind = IT_MESSAGE;
    it->len = (size_t)msg->payloadlen;
    if (it->len)
        memcpy(it->payload, msg->payload, it->len);
    it->payload[it->len] = '\0';
    post(s, it);
}

/* ---- publishing (main loop) ---- */

static const char *fresh_token(mqtt_signal *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s-%u", s->token_prefix, ++s->token_seq);
    return buf;
}

static void kv_str(igw_jw *w, const char *k, const char *v)
{
    igw_jw_key(w, k, strlen(k));
    igw_jw_string(w, v, strlen(v));
}

static void kv_int(igw_jw *w, const char *k, int64_t v)
{
    igw_jw_key(w, k, strlen(k));
    igw_jw_int(w, v);
}

/* Publishes what s->w holds (QoS 1) on topic and empties the writer. */
static int publish(mqtt_signal *s, const char *topic, const char *what)
{
    int rc;

    if (igw_jw_status(&s->w) != 0) {
        mlog("error: out of memory writing a %s", what);
        igw_jw_reset(&s->w);
        return -1;
    }
    if (s->w.len > PAYLOAD_MAX) {
        mlog("error: a %s of %zu bytes is over %d", what, s->w.len, PAYLOAD_MAX);
        igw_jw_reset(&s->w);
        return -1;
    }
    g_atomic_int_inc(&s->inflight);
    rc = mosquitto_publish(s->m, NULL, topic, (int)s->w.len, s->w.buf, 1, false);
    igw_jw_reset(&s->w);
    if (rc != MOSQ_ERR_SUCCESS) {
        g_atomic_int_add(&s->inflight, -1);
        mlog("error: cannot publish a %s: %s", what, mosquitto_strerror(rc));
        return -1;
    }
    return 0;
}

static void report_capability(mqtt_signal *s)
{
    char tok[64];
    igw_jw *w = &s->w;

    igw_jw_object_begin(w);
    kv_str(w, "method", "report");
    kv_str(w, "msgToken", fresh_token(s, tok, sizeof tok));
    igw_jw_key(w, "params", 6);
    igw_jw_object_begin(w);
    igw_jw_key(w, "cameras", 7);
    igw_jw_array_begin(w);
    igw_jw_object_begin(w);
    kv_str(w, "cameraId", s->c.camera_id);
    igw_jw_key(w, "video", 5);
    igw_jw_array_begin(w);
    igw_jw_string(w, "H264", 4);
    igw_jw_array_end(w);
    igw_jw_key(w, "audio", 5);
    igw_jw_array_begin(w);
    igw_jw_string(w, "opus", 4);
    igw_jw_array_end(w);
    igw_jw_object_end(w);
    igw_jw_array_end(w);
    igw_jw_key(w, "microphone", 10);
    igw_jw_bool(w, s->c.microphone != 0);
    igw_jw_key(w, "speaker", 7);
    igw_jw_bool(w, s->c.speaker != 0);
    kv_int(w, "maxUpstreams", s->c.max_upstreams > 0 ? s->c.max_upstreams : 1);
    kv_str(w, "confirmPolicy", "auto");
    igw_jw_key(w, "doorbell", 8);
    igw_jw_bool(w, s->c.doorbell != 0);
    igw_jw_object_end(w);
    igw_jw_object_end(w);
    if (publish(s, s->up_capability, "capability report") == 0) {
        mlog("capability reported (%s, microphone %s, speaker %s)", tok, s->c.microphone ? "yes" : "no",
             s->c.speaker ? "yes" : "no");
        igw_vcam_await_sent(&s->cap, tok);
    }
}

static void cap_resend(void *user, unsigned after_ms)
{
    mqtt_signal *s = user;
    if (!s->connected) /* the next CONNACK reports again */
        return;
    mlog("capability report unanswered after %u ms: sent again", after_ms);
    report_capability(s);
}

/* The capability report, then again with backoff until a reportReply
 * answers one (at every connection, and when the platform asks for it). */
static void report_capability_until_answered(mqtt_signal *s)
{
    igw_vcam_await_reset(&s->cap);
    report_capability(s);
}

/* ---- voice messages (docs/messages.md) ---- */

/* {"method":"get","msgToken"} on the message topic: igwd answers with the
 * plays waiting for this camera. Sent after the subscriptions of a
 * connection (the broker handles them first), so the answer finds one. */
static void ask_messages(mqtt_signal *s)
{
    char tok[64];
    igw_jw *w = &s->w;

    igw_jw_object_begin(w);
    kv_str(w, "method", "get");
    kv_str(w, "msgToken", fresh_token(s, tok, sizeof tok));
    igw_jw_object_end(w);
    if (publish(s, s->up_message, "message get") == 0)
        igw_vcam_await_sent(&s->get, tok);
}

static void get_resend(void *user, unsigned after_ms)
{
    mqtt_signal *s = user;
    if (!s->connected)
        return;
    mlog("message get unanswered after %u ms: sent again", after_ms);
    ask_messages(s);
}

static void ask_messages_until_answered(mqtt_signal *s)
{
    igw_vcam_await_reset(&s->get);
    s->nmore = 0;
    ask_messages(s);
}

static void mqtt_ask_messages(igw_vcam_signal *sig)
{
    mqtt_signal *s = (mqtt_signal *)sig;
    if (s->connected) /* else the next CONNACK asks */
        ask_messages_until_answered(s);
}

static int mqtt_send_play_reply(igw_vcam_signal *sig, const char *token, int code, const char *msg)
{
    mqtt_signal *s = (mqtt_signal *)sig;
    igw_jw *w = &s->w;

    if (!s->connected)
        return -1;
    igw_jw_object_begin(w);
    kv_str(w, "method", "playReply");
    kv_str(w, "msgToken", token);
    kv_int(w, "code", code);
    if (msg && msg[0])
        kv_str(w, "msg", msg);
    igw_jw_object_end(w);
    int rc = publish(s, s->up_message, "playReply");
    /* The last answer to a full getReply: more may wait. */
    for (unsigned i = 0; i < s->nmore; i++)
        if (strcmp(s->more[i], token) == 0) {
            memmove(&s->more[i], &s->more[i + 1], (s->nmore - i - 1) * sizeof s->more[0]);
            if (--s->nmore == 0 && rc == 0 && !s->delivering)
                ask_messages_until_answered(s);
            break;
        }
    return rc;
}

/* {"code":code,"method":method,"msgToken":token[,"sessionId":leg][,"msg":msg]} on the session topic. */
static void reply(mqtt_signal *s, int code, const char *method, const char *token, const char *leg,
                  const char *msg)
{
    igw_jw *w = &s->w;

    igw_jw_object_begin(w);
    kv_int(w, "code", code);
    kv_str(w, "method", method);
    kv_str(w, "msgToken", token);
    if (leg)
        kv_str(w, "sessionId", leg);
    if (msg)
        kv_str(w, "msg", msg);
    igw_jw_object_end(w);
    publish(s, s->up_session, method);
}

/* Opens the camera's message on a leg: {"method","msgToken" (fresh, into
 * tok),"sessionId","params":{ ; the caller writes the params and closes
 * both objects. */
static void leg_message(mqtt_signal *s, const char *method, const char *leg, char *tok, size_t cap)
{
    igw_jw *w = &s->w;
    igw_jw_object_begin(w);
    kv_str(w, "method", method);
    kv_str(w, "msgToken", fresh_token(s, tok, cap));
    kv_str(w, "sessionId", leg);
    igw_jw_key(w, "params", 6);
    igw_jw_object_begin(w);
}

/* The slot of leg's outstanding offer, else a free one, else the oldest. */
static struct offer *offer_slot(mqtt_signal *s, const char *leg)
{
    struct offer *free_slot = NULL, *oldest = &s->offers[0];

    for (int i = 0; i < OFFERS_MAX; i++) {
        struct offer *o = &s->offers[i];
        if (o->leg[0] && strcmp(o->leg, leg) == 0)
            return o;
        if (!o->leg[0] && !free_slot)
            free_slot = o;
        if (o->seq < oldest->seq)
            oldest = o;
    }
    return free_slot ? free_slot : oldest;
}

/* Forgets leg's outstanding offer, if any. */
static void offer_forget(mqtt_signal *s, const char *leg)
{
    for (int i = 0; i < OFFERS_MAX; i++)
        if (s->offers[i].leg[0] && strcmp(s->offers[i].leg, leg) == 0)
            s->offers[i].leg[0] = '\0';
}

static int mqtt_send_offer(igw_vcam_signal *sig, const char *leg, uint32_t revision, const char *sdp)
{
    mqtt_signal *s = (mqtt_signal *)sig;
    igw_jw *w = &s->w;
    struct offer *o;
    char tok[64];

    leg_message(s, "mediaOffer", leg, tok, sizeof tok);
    kv_int(w, "mediaRevision", revision);
    igw_jw_key(w, "webrtc", 6);
    igw_jw_object_begin(w);
    kv_str(w, "iceMode", "full");
    kv_str(w, "sdp", sdp);
    igw_jw_object_end(w);
    igw_jw_object_end(w);
    igw_jw_object_end(w);
    if (publish(s, s->up_session, "mediaOffer") < 0)
        return -1;
    /* Only the newest offer of a leg has its reply counted. */
    o = offer_slot(s, leg);
    g_strlcpy(o->token, tok, sizeof o->token);
    g_strlcpy(o->leg, leg, sizeof o->leg);
    o->rev = revision;
    o->seq = ++s->offer_seq;
    return 0;
}

static int mqtt_send_state(igw_vcam_signal *sig, const char *leg, uint32_t revision, const char *state)
{
    mqtt_signal *s = (mqtt_signal *)sig;
    igw_jw *w = &s->w;
    char tok[64];

    leg_message(s, "mediaState", leg, tok, sizeof tok);
    kv_int(w, "mediaRevision", revision);
    kv_str(w, "state", state);
    igw_jw_object_end(w);
    igw_jw_object_end(w);
    return publish(s, s->up_session, "mediaState");
}

static int mqtt_send_bye(igw_vcam_signal *sig, const char *leg, const char *reason)
{
    mqtt_signal *s = (mqtt_signal *)sig;
    igw_jw *w = &s->w;
    char tok[64];

    leg_message(s, "bye", leg, tok, sizeof tok);
    kv_str(w, "reason", reason);
    igw_jw_object_end(w);
    igw_jw_object_end(w);
    offer_forget(s, leg);
    return publish(s, s->up_session, "bye");
}

static int mqtt_send_ring(igw_vcam_signal *sig, char *token, size_t cap)
{
    mqtt_signal *s = (mqtt_signal *)sig;
    igw_jw *w = &s->w;

    if (!s->connected || !s->c.doorbell)
        return -1;
    snprintf(token, cap, "%s-%u", s->token_prefix, ++s->token_seq);
    igw_jw_object_begin(w);
    kv_str(w, "method", "ring");
    kv_str(w, "msgToken", token);
    igw_jw_key(w, "params", 6);
    igw_jw_object_begin(w);
    kv_str(w, "cameraId", s->c.camera_id);
    igw_jw_object_end(w);
    igw_jw_object_end(w);
    return publish(s, s->up_doorbell, "ring");
}

static void recording_entry(mqtt_signal *s, const igw_vcam_recording *r)
{
    igw_jw *w = &s->w;

    igw_jw_object_begin(w);
    kv_str(w, "recordingId", r->id);
    kv_str(w, "cameraId", s->c.camera_id);
    kv_int(w, "startTimeMs", r->start_ms);
    kv_int(w, "endTimeMs", r->end_ms);
    kv_int(w, "durationMs", r->duration_ms);
    igw_jw_key(w, "available", 9);
    igw_jw_bool(w, true);
    kv_str(w, "videoCodec", "H264");
    if (r->audio)
        kv_str(w, "audioCodec", "opus");
    kv_int(w, "recordingVersion", r->version);
    igw_jw_object_end(w);
}

static int mqtt_send_recordings(igw_vcam_signal *sig, const igw_vcam_recording *recs, unsigned n,
                                const char *const *removed, unsigned nremoved, char *token, size_t cap)
{
    mqtt_signal *s = (mqtt_signal *)sig;
    igw_jw *w = &s->w;

    if ((n == 0 && nremoved == 0) || n > IGW_VCAM_REPORT_MAX || nremoved > IGW_VCAM_REPORT_MAX)
        return -1;
    /* Offline, the report would only queue in libmosquitto: the whole list
     * goes up at the next connection anyway. */
    if (!s->connected)
        return -1;
    igw_jw_object_begin(w);
    kv_str(w, "method", "report");
    kv_str(w, "msgToken", fresh_token(s, token, cap));
    igw_jw_key(w, "params", 6);
    igw_jw_object_begin(w);
    if (n) {
        igw_jw_key(w, "recordings", 10);
        igw_jw_array_begin(w);
        for (unsigned i = 0; i < n; i++)
            recording_entry(s, &recs[i]);
        igw_jw_array_end(w);
    }
    if (nremoved) {
        igw_jw_key(w, "removed", 7);
        igw_jw_array_begin(w);
        for (unsigned i = 0; i < nremoved; i++)
            igw_jw_string(w, removed[i], strlen(removed[i]));
        igw_jw_array_end(w);
    }
    igw_jw_object_end(w);
    igw_jw_object_end(w);
    return publish(s, s->up_recording, "recording report");
}

/* ---- downlinks (main loop) ---- */

/* One downlink, as read: strings point into the payload or the arena. */
typedef struct down {
    igw_str method, token, session, camera_id, track_id, operation, reason, data_session, ice_mode, sdp;
    igw_str msg, recording_id;
    int64_t code, revision, position_ms, recording_version;
    bool has_code, has_revision, has_tracks, has_position, has_recording, has_recording_version;
    unsigned ntracks;
    igw_str track[IGW_VCAM_TRACKS_MAX][3]; /* id, kind, codec */
} down;

/* Key matching with a duplicate check: bit i of *seen is key i. */
static int key_is(igw_str key, const char *name, unsigned bit, unsigned *seen, int *dup)
{
    if (key.len != strlen(name) || memcmp(key.ptr, name, key.len) != 0)
        return 0;
    if (*seen & (1u << bit))
        *dup = 1;
    *seen |= 1u << bit;
    return 1;
}

static int skip_value(igw_json *j)
{
    igw_str raw;

    return igw_json_value(j, IGW_JSON_RFC8259, JSON_DEPTH, PAYLOAD_MAX, &raw);
}

static int parse_track(igw_json *j, igw_str out[3])
{
    static const char *const names[] = {"trackId", "kind", "codec"};
    unsigned seen = 0;
    int dup = 0, more;
    igw_str key;

    if (igw_json_object_begin(j) != 0)
        return -1;
    while ((more = igw_json_object_next(j, &key)) > 0) {
        unsigned i;
        for (i = 0; i < 3; i++)
            if (key_is(key, names[i], i, &seen, &dup))
                break;
        if (dup)
            return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        if ((i < 3 ? igw_json_string(j, &out[i]) : skip_value(j)) != 0)
            return -1;
    }
    return more;
}

/* The members of params or data. */
static int parse_body(igw_json *j, down *d)
{
    enum { K_CAM, K_REV, K_TRACKS, K_TRACK, K_OP, K_REASON, K_SESSION, K_WEBRTC, K_POS, K_REC };
    unsigned seen = 0;
    int dup = 0, more, rc;
    igw_str key;

    if (igw_json_object_begin(j) != 0)
        return -1;
    while ((more = igw_json_object_next(j, &key)) > 0) {
        if (key_is(key, "cameraId", K_CAM, &seen, &dup))
            rc = igw_json_string(j, &d->camera_id);
        else if (key_is(key, "mediaRevision", K_REV, &seen, &dup)) {
            rc = igw_json_int(j, &d->revision, 1, UINT32_MAX);
            d->has_revision = true;
        }
        else if (key_is(key, "trackId", K_TRACK, &seen, &dup))
            rc = igw_json_string(j, &d->track_id);
        else if (key_is(key, "operation", K_OP, &seen, &dup))
            rc = igw_json_string(j, &d->operation);
        else if (key_is(key, "reason", K_REASON, &seen, &dup))
            rc = igw_json_string(j, &d->reason);
        else if (key_is(key, "sessionId", K_SESSION, &seen, &dup))
            rc = igw_json_string(j, &d->data_session);
        else if (key_is(key, "tracks", K_TRACKS, &seen, &dup)) {
            d->has_tracks = true;
            rc = igw_json_array_begin(j);
            while (rc == 0 && (rc = igw_json_array_next(j)) > 0) {
                if (d->ntracks == IGW_VCAM_TRACKS_MAX)
                    return igw_json_fail(j, IGW_JERR_LENGTH, "too many tracks");
                rc = parse_track(j, d->track[d->ntracks++]);
            }
        } else if (key_is(key, "positionMs", K_POS, &seen, &dup)) {
            /* Any integer: a negative one is answered 100400, not dropped. */
            rc = igw_json_int(j, &d->position_ms, -IGW_JSON_SAFE_MAX, IGW_JSON_SAFE_MAX);
            d->has_position = true;
        } else if (key_is(key, "recording", K_REC, &seen, &dup)) {
            unsigned rseen = 0;
            int rdup = 0, rmore;
            igw_str rkey;
            d->has_recording = true;
            if (igw_json_object_begin(j) != 0)
                return -1;
            while ((rmore = igw_json_object_next(j, &rkey)) > 0) {
                if (key_is(rkey, "recordingId", 0, &rseen, &rdup))
                    rc = igw_json_string(j, &d->recording_id);
                else if (key_is(rkey, "recordingVersion", 1, &rseen, &rdup)) {
                    rc = igw_json_int(j, &d->recording_version, 0, IGW_JSON_SAFE_MAX);
                    d->has_recording_version = true;
                } else
                    rc = skip_value(j);
                if (rdup)
                    return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
                if (rc != 0)
                    return -1;
            }
            rc = rmore;
        } else if (key_is(key, "webrtc", K_WEBRTC, &seen, &dup)) {
            unsigned wseen = 0;
            int wdup = 0, wmore;
            igw_str wkey;
            if (igw_json_object_begin(j) != 0)
                return -1;
            while ((wmore = igw_json_object_next(j, &wkey)) > 0) {
                if (key_is(wkey, "iceMode", 0, &wseen, &wdup))
                    rc = igw_json_string(j, &d->ice_mode);
                else if (key_is(wkey, "sdp", 1, &wseen, &wdup))
                    rc = igw_json_string(j, &d->sdp);
                else
                    rc = skip_value(j);
                if (wdup)
                    return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
                if (rc != 0)
                    return -1;
            }
            rc = wmore;
        } else {
            rc = skip_value(j);
        }
        if (dup)
            return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        if (rc != 0)
            return -1;
    }
    return more;
}

static int parse_down(const char *buf, size_t len, igw_arena *a, down *d, igw_json *j)
{
    enum { K_METHOD, K_TOKEN, K_SESSION, K_CODE, K_BODY, K_MSG };
    unsigned seen = 0;
    int dup = 0, more, rc;
    igw_str key;

    memset(d, 0, sizeof *d);
    igw_json_init(j, buf, len, a, JSON_DEPTH);
    if (igw_json_object_begin(j) != 0)
        return -1;
    while ((more = igw_json_object_next(j, &key)) > 0) {
        if (key_is(key, "method", K_METHOD, &seen, &dup))
            rc = igw_json_string(j, &d->method);
        else if (key_is(key, "msgToken", K_TOKEN, &seen, &dup))
            rc = igw_json_string(j, &d->token);
        else if (key_is(key, "sessionId", K_SESSION, &seen, &dup))
            rc = igw_json_string(j, &d->session);
        else if (key_is(key, "code", K_CODE, &seen, &dup)) {
            rc = igw_json_int(j, &d->code, INT32_MIN, INT32_MAX);
            d->has_code = true;
        }
        else if (key_is(key, "params", K_BODY, &seen, &dup) || key_is(key, "data", K_BODY, &seen, &dup))
            rc = parse_body(j, d);
        else if (key_is(key, "msg", K_MSG, &seen, &dup))
            rc = igw_json_string(j, &d->msg);
        else
            rc = skip_value(j);
        if (dup)
            return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        if (rc != 0)
            return -1;
    }
    if (more != 0 || igw_json_finish(j) != 0)
        return -1;
    return 0;
}

/* A play downlink as read (the `play` message, or an element of a
 * getReply's data.messages): strings point into the payload or the arena. */
typedef struct playmsg {
    igw_str method, token, delivery, kind, url;
    int64_t expires;
    bool has_expires;
} playmsg;

/* A downlink of the message topic. */
typedef struct msgdown {
    igw_str method, token, msg;
    int64_t code;
    bool has_code;
    playmsg play;                      /* a play's own fields */
    playmsg list[GET_MESSAGES_MAX];    /* a getReply's data.messages */
    unsigned n;
} msgdown;

static int parse_play_params(igw_json *j, playmsg *p)
{
    unsigned seen = 0;
    int dup = 0, more, rc;
    igw_str key;

    if (igw_json_object_begin(j) != 0)
        return -1;
    while ((more = igw_json_object_next(j, &key)) > 0) {
        if (key_is(key, "deliveryId", 0, &seen, &dup))
            rc = igw_json_string(j, &p->delivery);
        else if (key_is(key, "kind", 1, &seen, &dup))
            rc = igw_json_string(j, &p->kind);
        else if (key_is(key, "url", 2, &seen, &dup))
            rc = igw_json_string(j, &p->url);
        else if (key_is(key, "expiresAt", 3, &seen, &dup)) {
            rc = igw_json_int(j, &p->expires, 0, IGW_JSON_SAFE_MAX);
            p->has_expires = true;
        } else
            rc = skip_value(j);
        if (dup)
            return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        if (rc != 0)
            return -1;
    }
    return more;
}

/* One object: a play ({method, msgToken, params}) or, top, the envelope of
 * a getReply ({method, msgToken, code, msg, data: {messages: [plays]}}). */
static int parse_msg_object(igw_json *j, msgdown *d, playmsg *p, bool top)
{
    unsigned seen = 0;
    int dup = 0, more, rc;
    igw_str key;

    if (igw_json_object_begin(j) != 0)
        return -1;
    while ((more = igw_json_object_next(j, &key)) > 0) {
        if (key_is(key, "method", 0, &seen, &dup))
            rc = igw_json_string(j, &p->method);
        else if (key_is(key, "msgToken", 1, &seen, &dup))
            rc = igw_json_string(j, &p->token);
        else if (key_is(key, "params", 2, &seen, &dup))
            rc = parse_play_params(j, p);
        else if (top && key_is(key, "code", 3, &seen, &dup)) {
            rc = igw_json_int(j, &d->code, INT32_MIN, INT32_MAX);
            d->has_code = true;
        } else if (top && key_is(key, "msg", 4, &seen, &dup))
            rc = igw_json_string(j, &d->msg);
        else if (top && key_is(key, "data", 5, &seen, &dup)) {
            unsigned dseen = 0;
            int ddup = 0, dmore;
            igw_str dkey;
            if (igw_json_object_begin(j) != 0)
                return -1;
            while ((dmore = igw_json_object_next(j, &dkey)) > 0) {
                if (key_is(dkey, "messages", 0, &dseen, &ddup)) {
                    rc = igw_json_array_begin(j);
                    while (rc == 0 && (rc = igw_json_array_next(j)) > 0) {
                        if (d->n == GET_MESSAGES_MAX)
                            return igw_json_fail(j, IGW_JERR_LENGTH, "too many messages");
                        rc = parse_msg_object(j, d, &d->list[d->n++], false);
                    }
                } else
                    rc = skip_value(j);
                if (ddup)
                    return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
                if (rc != 0)
                    return -1;
            }
            rc = dmore;
        } else
            rc = skip_value(j);
        if (dup)
            return igw_json_fail(j, IGW_JERR_DUPLICATE, "duplicate key");
        if (rc != 0)
            return -1;
    }
    return more;
}

static int parse_msg_down(const char *buf, size_t len, igw_arena *a, msgdown *d, igw_json *j)
{
    memset(d, 0, sizeof *d);
    igw_json_init(j, buf, len, a, JSON_DEPTH);
    if (parse_msg_object(j, d, &d->play, true) != 0 || igw_json_finish(j) != 0)
        return -1;
    d->method = d->play.method;
    d->token = d->play.token;
    return 0;
}

/* A bounded NUL-terminated copy of v; -1 when empty or longer than cap - 1. */
static int cstr(char *dst, size_t cap, igw_str v)
{
    return copy_field(dst, cap, v);
}

static bool str_is(igw_str v, const char *s)
{
    return v.len == strlen(s) && v.len > 0 && memcmp(v.ptr, s, v.len) == 0;
}

static void on_capability(mqtt_signal *s, const down *d)
{
    if (str_is(d->method, "get")) { /* the platform has no capability of ours stored */
        mlog("capability asked for (%.*s)", (int)(d->token.len > 64 ? 64 : d->token.len), d->token.ptr ? d->token.ptr : "");
        report_capability_until_answered(s);
        return;
    }
    if (!str_is(d->method, "reportReply")) {
        mlog("unexpected \"%.*s\" on the capability topic, dropped", (int)(d->method.len > 64 ? 64 : d->method.len),
             d->method.ptr ? d->method.ptr : "");
        return;
    }
    char token[IGW_VCAM_TOKEN_MAX + 1];
    if (cstr(token, sizeof token, d->token) != 0 || !igw_vcam_await_answered(&s->cap, token)) {
        mlog("capability reportReply answers no report of ours (%.*s), dropped",
             (int)(d->token.len > 64 ? 64 : d->token.len), d->token.ptr ? d->token.ptr : "");
        return;
    }
    /* answered, a refusal too: sending it again would be refused again */
    if (!d->has_code || d->code != 200)
        mlog("capability report refused: code %lld", d->has_code ? (long long)d->code : -1LL);
    else
        mlog("capability accepted (%.*s)", (int)(d->token.len > 64 ? 64 : d->token.len), d->token.ptr ? d->token.ptr : "");
}

/* The ringReply: the ring's session (every endpoint that may answer
 * rings; its leg's invite follows with that id), or why not. */
static void on_doorbell(mqtt_signal *s, const down *d)
{
    (void)s;
    int tl = (int)(d->token.len > 64 ? 64 : d->token.len);
    if (!str_is(d->method, "ringReply")) {
        mlog("unexpected \"%.*s\" on the doorbell topic, dropped", (int)(d->method.len > 64 ? 64 : d->method.len),
             d->method.ptr ? d->method.ptr : "");
        return;
    }
    if (!d->has_code || d->code != 200)
        mlog("ring %.*s refused: code %lld (%.*s)", tl, d->token.ptr ? d->token.ptr : "",
             d->has_code ? (long long)d->code : -1LL, (int)(d->msg.len > 200 ? 200 : d->msg.len),
             d->msg.ptr ? d->msg.ptr : "");
    else
        mlog("ring %.*s answered: session %.*s", tl, d->token.ptr ? d->token.ptr : "",
             (int)(d->data_session.len > 64 ? 64 : d->data_session.len),
             d->data_session.ptr ? d->data_session.ptr : "?");
}

static void on_invite(mqtt_signal *s, const down *d, const char *token, const char *leg)
{
    char cam[IGW_VCAM_ID_MAX + 1], ids[IGW_VCAM_TRACKS_MAX][3][IGW_VCAM_ID_MAX + 1];
    char rec[IGW_VCAM_RECORDING_ID_MAX + 1];
    igw_vcam_invite inv = {.leg = leg, .token = token, .camera_id = cam};

    if (cstr(cam, sizeof cam, d->camera_id) != 0 || !d->has_revision || !d->has_tracks || d->ntracks == 0) {
        mlog("invite %s without a usable cameraId, mediaRevision or tracks, dropped", leg);
        return;
    }
    for (unsigned i = 0; i < d->ntracks; i++)
        for (int k = 0; k < 3; k++)
            if (cstr(ids[i][k], sizeof ids[i][k], d->track[i][k]) != 0) {
                mlog("invite %s: track %u lacks trackId, kind or codec (or one is too long), dropped", leg, i);
                return;
            }
    for (unsigned i = 0; i < d->ntracks; i++)
        inv.tracks[i] = (igw_vcam_track){ids[i][0], ids[i][1], ids[i][2]};
    inv.ntracks = d->ntracks;
    inv.revision = (uint32_t)d->revision;
    if (d->has_recording) {
        if (cstr(rec, sizeof rec, d->recording_id) != 0 || !d->has_recording_version) {
            mlog("invite %s: recording without a usable recordingId or recordingVersion, dropped", leg);
            return;
        }
        inv.recording_id = rec;
        inv.recording_version = d->recording_version;
    }
    s->base.cbs.on_invite(s->base.user, &inv);
}

static void on_offer_reply(mqtt_signal *s, const down *d, const char *token)
{
    char dleg[IGW_VCAM_LEG_MAX + 1], leg[IGW_VCAM_LEG_MAX + 1], *sdp;
    struct offer *o = NULL;
    uint32_t rev;

    for (int i = 0; i < OFFERS_MAX && !o; i++)
        if (s->offers[i].leg[0] && strcmp(token, s->offers[i].token) == 0)
            o = &s->offers[i];
    if (!o) {
        mlog("mediaOfferReply %s answers no outstanding offer, dropped", token);
        return;
    }
    g_strlcpy(leg, o->leg, sizeof leg);
    rev = o->rev;
    o->leg[0] = '\0';
    if (!d->has_code || d->code != 200) {
        char why[64];
        snprintf(why, sizeof why, "code %lld", d->has_code ? (long long)d->code : -1LL);
        s->base.cbs.on_offer_failed(s->base.user, leg, rev, why);
        return;
    }
    if (cstr(dleg, sizeof dleg, d->data_session) != 0 || strcmp(dleg, leg) != 0 || !d->has_revision ||
        d->revision != rev) {
        s->base.cbs.on_offer_failed(s->base.user, leg, rev, "answer for another sessionId or mediaRevision");
        return;
    }
    if (d->sdp.len == 0 || d->sdp.len > IGW_VCAM_SIGNAL_MAX || !(sdp = igw_arena_strndup(&s->arena, d->sdp.ptr, d->sdp.len))) {
        s->base.cbs.on_offer_failed(s->base.user, leg, rev, "no usable webrtc.sdp");
        return;
    }
    mlog("answer for %s revision %u (iceMode %.*s)", leg, rev, (int)(d->ice_mode.len > 8 ? 8 : d->ice_mode.len),
         d->ice_mode.ptr ? d->ice_mode.ptr : "?");
    s->base.cbs.on_answer(s->base.user, leg, rev, sdp);
}

static void on_playback_control(mqtt_signal *s, const down *d, const char *token, const char *leg)
{
    igw_vcam_playback_result r = {0};
    igw_vcam_playback_op op;
    igw_jw *w = &s->w;
    int code;

    if (str_is(d->operation, "play"))
        op = IGW_VCAM_PLAY;
    else if (str_is(d->operation, "pause"))
        op = IGW_VCAM_PAUSE;
    else if (str_is(d->operation, "seek"))
        op = IGW_VCAM_SEEK;
    else {
        reply(s, IGW_VCAM_CODE_BAD, "playbackControlReply", token, leg, "operation is play, pause or seek");
        return;
    }
    if (op == IGW_VCAM_SEEK && (!d->has_position || d->position_ms < 0)) {
        reply(s, IGW_VCAM_CODE_BAD, "playbackControlReply", token, leg, "seek wants positionMs >= 0");
        return;
    }
    if (!s->base.cbs.on_playback)
        code = IGW_VCAM_CODE_NOTFOUND;
    else
        code = s->base.cbs.on_playback(s->base.user, leg, d->has_revision ? (uint32_t)d->revision : 0, op,
                                       d->has_position ? d->position_ms : 0, &r);
    if (code != IGW_VCAM_CODE_OK) {
        reply(s, code, "playbackControlReply", token, leg,
              r.msg[0] ? r.msg : code == IGW_VCAM_CODE_NOTFOUND ? "no such playback leg or revision" : "refused");
        return;
    }
    igw_jw_object_begin(w);
    kv_int(w, "code", code);
    kv_str(w, "method", "playbackControlReply");
    kv_str(w, "msgToken", token);
    kv_str(w, "sessionId", leg);
    igw_jw_key(w, "data", 4);
    igw_jw_object_begin(w);
    kv_str(w, "state", r.playing ? "playing" : "paused");
    kv_int(w, "positionMs", r.position_ms);
    igw_jw_object_end(w);
    igw_jw_object_end(w);
    publish(s, s->up_session, "playbackControlReply");
}

static void on_recording_down(mqtt_signal *s, const down *d)
{
    char token[IGW_VCAM_TOKEN_MAX + 1], msg[256] = "";

    if (!str_is(d->method, "reportReply") || cstr(token, sizeof token, d->token) != 0) {
        mlog("unexpected message on the recording topic (no reportReply with a msgToken), dropped");
        return;
    }
    if (d->msg.len) {
        size_t n = d->msg.len < sizeof msg - 1 ? d->msg.len : sizeof msg - 1;
        memcpy(msg, d->msg.ptr, n);
        msg[n] = '\0';
    }
    if (s->base.cbs.on_recording_reply)
        s->base.cbs.on_recording_reply(s->base.user, token, d->has_code ? d->code : -1, msg);
}

static void on_session(mqtt_signal *s, const down *d)
{
    char token[IGW_VCAM_TOKEN_MAX + 1], leg[IGW_VCAM_LEG_MAX + 1];
    char method[32];

    if (cstr(method, sizeof method, d->method) != 0 || cstr(token, sizeof token, d->token) != 0) {
        mlog("session message without a usable method or msgToken, dropped");
        return;
    }
    if (strcmp(method, "mediaStateReply") == 0 || strcmp(method, "byeReply") == 0) {
        if (!d->has_code || d->code != 200)
            mlog("%s %s: code %lld", method, token, d->has_code ? (long long)d->code : -1LL);
        return;
    }
    if (strcmp(method, "mediaOfferReply") == 0) {
        on_offer_reply(s, d, token);
        return;
    }
    if (cstr(leg, sizeof leg, d->session) != 0) {
        mlog("%s %s without a usable sessionId, dropped", method, token);
        return;
    }
    if (strcmp(method, "invite") == 0) {
        on_invite(s, d, token, leg);
    } else if (strcmp(method, "trackControl") == 0) {
        char track[IGW_VCAM_ID_MAX + 1];
        int code;
        if (str_is(d->operation, "pause") || str_is(d->operation, "resume")) {
            if (cstr(track, sizeof track, d->track_id) != 0)
                code = IGW_VCAM_CODE_NOTFOUND;
            else
                code = s->base.cbs.on_track(s->base.user, leg, d->has_revision ? (uint32_t)d->revision : 0, track,
                                            str_is(d->operation, "pause"));
        } else {
            code = IGW_VCAM_CODE_BAD;
        }
        reply(s, code, "trackControlReply", token, leg,
              code == IGW_VCAM_CODE_OK         ? NULL
              : code == IGW_VCAM_CODE_BAD      ? "operation is pause or resume"
                                               : "no such leg or track");
    } else if (strcmp(method, "bye") == 0) {
        char reason[IGW_VCAM_REASON_MAX + 1] = "";
        if (d->reason.len && cstr(reason, sizeof reason, d->reason) != 0)
            g_strlcpy(reason, "(too long)", sizeof reason);
        /* Idempotent: a bye for a leg that is not active is answered too. */
        reply(s, IGW_VCAM_CODE_OK, "byeReply", token, leg, NULL);
        offer_forget(s, leg);
        s->base.cbs.on_bye(s->base.user, leg, reason);
    } else if (strcmp(method, "playbackControl") == 0) {
        on_playback_control(s, d, token, leg);
    } else {
        mlog("unknown method \"%s\" (%s), dropped", method, token);
    }
}

/* One play to the camera: checked, copied, handed over; a malformed one
 * is logged and dropped (no token to answer), one the camera cannot play
 * is answered. */
static void deliver_play(mqtt_signal *s, const playmsg *p, bool track)
{
    char token[IGW_VCAM_TOKEN_MAX + 1], delivery[IGW_VCAM_ID_MAX * 2 + 1], kind[32], url[IGW_VCAM_URL_MAX + 1];

    if (!str_is(p->method, "play") || cstr(token, sizeof token, p->token) != 0) {
        mlog("a message that is no play with a msgToken, dropped");
        return;
    }
    if (cstr(delivery, sizeof delivery, p->delivery) != 0 || cstr(kind, sizeof kind, p->kind) != 0 ||
        cstr(url, sizeof url, p->url) != 0 || !p->has_expires) {
        mlog("play %s lacks deliveryId, kind, url or expiresAt: answered 400", token);
        (void)mqtt_send_play_reply(&s->base, token, 400, "malformed play");
        return;
    }
    if (!s->base.cbs.on_play) {
        (void)mqtt_send_play_reply(&s->base, token, 501, "this camera plays no messages");
        return;
    }
    if (track && s->nmore < GET_MESSAGES_MAX) /* of a full getReply: its answer counts down */
        memcpy(s->more[s->nmore++], token, sizeof token);
    igw_vcam_play play = {.token = token, .delivery_id = delivery, .kind = kind, .expires_at_ms = p->expires,
                          .url = url};
    s->base.cbs.on_play(s->base.user, &play);
}

static void on_message_down(mqtt_signal *s, const item *it)
{
    igw_json j;
    msgdown *d = igw_arena_alloc(&s->arena, sizeof *d);
    char token[IGW_VCAM_TOKEN_MAX + 1];

    if (!d) {
        mlog("error: out of memory, a message downlink is lost");
        return;
    }
    if (parse_msg_down(it->payload, it->len, &s->arena, d, &j) != 0) {
        mlog("malformed message on %s (%zu bytes: %s at %s), dropped", it->topic, it->len,
             j.reason ? j.reason : igw_json_errkind_name(j.err), j.path[0] ? j.path : "/");
        return;
    }
    if (str_is(d->method, "play")) {
        deliver_play(s, &d->play, false);
        return;
    }
    if (!str_is(d->method, "getReply") || cstr(token, sizeof token, d->token) != 0 ||
        !igw_vcam_await_answered(&s->get, token)) {
        mlog("unexpected \"%.*s\" on the message topic (or a getReply of no get of ours), dropped",
             (int)(d->method.len > 64 ? 64 : d->method.len), d->method.ptr ? d->method.ptr : "");
        return;
    }
    if (!d->has_code || d->code != 200) {
        mlog("message get refused: code %lld (%.*s)", d->has_code ? (long long)d->code : -1LL,
             (int)(d->msg.len > 200 ? 200 : d->msg.len), d->msg.ptr ? d->msg.ptr : "");
        return;
    }
    mlog("message get answered: %u waiting", d->n);
    s->nmore = 0;
    bool full = d->n == GET_MESSAGES_MAX;
    s->delivering = true;
    for (unsigned i = 0; i < d->n; i++)
        deliver_play(s, &d->list[i], full);
    s->delivering = false;
    if (full && s->nmore == 0) /* all answered at once (played before, expired): ask on */
        ask_messages_until_answered(s);
}

static void handle_message(mqtt_signal *s, const item *it)
{
    igw_json j;
    down d;
    int session;

    if (strcmp(it->topic, s->down_message) == 0) {
        igw_arena_reset(&s->arena);
        on_message_down(s, it);
        return;
    }
    if (strcmp(it->topic, s->down_doorbell) == 0)
        session = 3;
    else if (strcmp(it->topic, s->down_session) == 0)
        session = 1;
    else if (strcmp(it->topic, s->down_capability) == 0)
        session = 0;
    else if (strcmp(it->topic, s->down_recording) == 0)
        session = 2;
    else {
        mlog("message on unexpected topic %.200s, dropped", it->topic);
        return;
    }
    igw_arena_reset(&s->arena);
    if (parse_down(it->payload, it->len, &s->arena, &d, &j) != 0) {
        mlog("malformed message on %s (%zu bytes: %s at %s), dropped", it->topic, it->len,
             j.reason ? j.reason : igw_json_errkind_name(j.err), j.path[0] ? j.path : "/");
        return;
    }
    if (session == 1)
        on_session(s, &d);
    else if (session == 3)
        on_doorbell(s, &d);
    else if (session == 2)
        on_recording_down(s, &d);
    else
        on_capability(s, &d);
}

static void handle_item(mqtt_signal *s, const item *it)
{
    switch (it->kind) {
    case IT_CONNECT:
        if (it->rc != 0) {
            mlog("connection refused: %s", mosquitto_connack_string(it->rc));
            /* A refusal is no takeover and breaks the row: the disconnect that
             * follows must not count as a connection lost within seconds. */
            s->connected_at_us = 0;
            s->quick_drops = 0;
            return;
        }
        s->connected = 1;
        s->connected_at_us = g_get_monotonic_time();
        mlog("connected to %s:%d as %s&%s", s->c.host, s->c.port, s->c.product, s->c.device);
        /* Clean session: subscriptions are made again on every CONNACK. */
        for (int i = 0; i < 5; i++) {
            const char *t = i == 0 ? s->down_session : i == 1 ? s->down_capability : i == 2 ? s->down_doorbell
                          : i == 3 ? s->down_recording : s->down_message;
            if ((i == 2 && !s->c.doorbell) || (i == 3 && !s->c.recordings))
                continue;
            int rc = mosquitto_subscribe(s->m, NULL, t, 1);
            if (rc != MOSQ_ERR_SUCCESS)
                mlog("error: subscribe %s: %s", t, mosquitto_strerror(rc));
        }
        report_capability_until_answered(s);
        ask_messages_until_answered(s);
        if (s->base.cbs.on_connected)
            s->base.cbs.on_connected(s->base.user);
        break;
    case IT_DISCONNECT:
        s->connected = 0;
        igw_vcam_await_reset(&s->cap); /* the next CONNACK reports again */
        igw_vcam_await_reset(&s->get); /* and asks again */
        if (it->rc != 0 && s->connected_at_us &&
            g_get_monotonic_time() - s->connected_at_us < (gint64)TAKEOVER_QUICK_MS * 1000)
            s->quick_drops++;
        else
            s->quick_drops = 0;
        s->connected_at_us = 0; /* only a disconnect that ends an accepted connection counts */
        if (s->quick_drops >= TAKEOVER_DROPS) {
            /* Another client holds our client id (a second igw-vcam for this
             * device): reconnecting would take it back, and so on, each
             * dropping the other's legs. The newer one keeps it. */
            mlog("another client connected as %s&%s and the broker gave it this device's session (each connection "
                 "lost within seconds): stopping instead of taking it back (is another igw-vcam running for this "
                 "device?)", s->c.product, s->c.device);
            mosquitto_disconnect(s->m); /* no reconnection */
            if (s->base.cbs.on_close)
                s->base.cbs.on_close(s->base.user, EADDRINUSE);
            break;
        }
        if (it->rc != 0)
            mlog("connection lost (%s), reconnecting", mosquitto_strerror(it->rc));
        break;
    case IT_MESSAGE:
        handle_message(s, it);
        break;
    }
}

static gboolean on_wake(gint fd, GIOCondition cond, gpointer data)
{
    mqtt_signal *s = data;
    uint64_t n;
    item *it;

    (void)cond;
    if (read(fd, &n, sizeof n) < 0 && errno != EAGAIN)
        mlog("error: eventfd read: %s", strerror(errno));
    while ((it = g_async_queue_try_pop(s->q))) {
        handle_item(s, it);
        item_free(it);
    }
    return G_SOURCE_CONTINUE;
}

/* ---- life ---- */

static void mqtt_destroy(igw_vcam_signal *sig)
{
    mqtt_signal *s = (mqtt_signal *)sig;
    item *it;

    if (!s)
        return;
    if (s->loop_started) {
        /* Best effort: what was published last (a bye) gets its PUBACK. */
        for (int waited = 0; waited < FLUSH_MS && s->connected && g_atomic_int_get(&s->inflight) > 0; waited += 10)
            g_usleep(10 * 1000);
        if (g_atomic_int_get(&s->inflight) > 0)
            mlog("%d message(s) unacknowledged at exit", g_atomic_int_get(&s->inflight));
        mosquitto_disconnect(s->m);
        mosquitto_loop_stop(s->m, false);
    }
    if (s->watch)
        g_source_remove(s->watch);
    igw_vcam_await_reset(&s->cap);
    igw_vcam_await_reset(&s->get);
    if (s->q) {
        while ((it = g_async_queue_try_pop(s->q)))
            item_free(it);
        g_async_queue_unref(s->q);
    }
    if (s->efd >= 0)
        close(s->efd);
    if (s->m)
        mosquitto_destroy(s->m);
    mosquitto_lib_cleanup();
    igw_arena_free(&s->arena);
    igw_jw_free(&s->w);
    memset(s->c.secret, 0, sizeof s->c.secret);
    free(s);
}

static const igw_vcam_signal_ops mqtt_ops = {
    .send_offer = mqtt_send_offer,
    .send_state = mqtt_send_state,
    .send_bye = mqtt_send_bye,
    .send_recordings = mqtt_send_recordings,
    .send_ring = mqtt_send_ring,
    .send_play_reply = mqtt_send_play_reply,
    .ask_messages = mqtt_ask_messages,
    .destroy = mqtt_destroy,
};

igw_vcam_signal *igw_vcam_signal_mqtt_new(const igw_vcam_mqtt_config *c, const igw_vcam_signal_cbs *cbs, void *user)
{
    mqtt_signal *s = calloc(1, sizeof *s);
    char client_id[2 * IGW_DEVAUTH_NAME_MAX + 2];
    int rc;

    if (!s) {
        mlog("error: out of memory");
        return NULL;
    }
    if (!cbs->on_invite || !cbs->on_offer_failed || !cbs->on_track || !cbs->on_bye) {
        mlog("error: the camera lacks a device callback");
        free(s);
        return NULL;
    }
    s->base.ops = &mqtt_ops;
    s->base.cbs = *cbs;
    s->base.user = user;
    s->c = *c;
    s->efd = -1;
    igw_vcam_await_init(&s->cap, IGW_VCAM_AWAIT_ANY, cap_resend, s);
    igw_vcam_await_init(&s->get, IGW_VCAM_AWAIT_ANY, get_resend, s);
    igw_arena_init(&s->arena, 4 * PAYLOAD_MAX);
    igw_jw_init(&s->w);
    snprintf(s->token_prefix, sizeof s->token_prefix, "vc%08x", g_random_int());
    snprintf(s->up_session, sizeof s->up_session, "$media/up/session/%s/%s", c->product, c->device);
    snprintf(s->up_capability, sizeof s->up_capability, "$media/up/capability/%s/%s", c->product, c->device);
    snprintf(s->down_session, sizeof s->down_session, "$media/down/session/%s/%s", c->product, c->device);
    snprintf(s->down_capability, sizeof s->down_capability, "$media/down/capability/%s/%s", c->product, c->device);
    snprintf(s->up_recording, sizeof s->up_recording, "$media/up/recording/%s/%s", c->product, c->device);
    snprintf(s->down_recording, sizeof s->down_recording, "$media/down/recording/%s/%s", c->product, c->device);
    snprintf(s->up_doorbell, sizeof s->up_doorbell, "$media/up/doorbell/%s/%s", c->product, c->device);
    snprintf(s->down_doorbell, sizeof s->down_doorbell, "$media/down/doorbell/%s/%s", c->product, c->device);
    snprintf(s->up_message, sizeof s->up_message, "$media/up/message/%s/%s", c->product, c->device);
    snprintf(s->down_message, sizeof s->down_message, "$media/down/message/%s/%s", c->product, c->device);
    snprintf(client_id, sizeof client_id, "%s&%s", c->product, c->device);
    mosquitto_lib_init();
    s->q = g_async_queue_new();
    s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->efd < 0) {
        mlog("error: eventfd: %s", strerror(errno));
        goto fail;
    }
    s->watch = g_unix_fd_add(s->efd, G_IO_IN, on_wake, s);
    s->m = mosquitto_new(client_id, true, s);
    if (!s->m) {
        mlog("error: mosquitto_new: %s", strerror(errno));
        goto fail;
    }
    /* MQTT 3.1.1, not 5: libmosquitto 2.0.11 treats an MQTT 5 refusal
     * (CONNACK reason >= 0x80) as a protocol error and its network thread
     * stops for good: a refused camera would never connect again. 3.1.1
     * refusals are retried. (Mosquitto 2.0.11 does not deliver the MQTT 5
     * "session taken over" either: the takeover pattern decides.) */
    mosquitto_int_option(s->m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
    mosquitto_connect_callback_set(s->m, net_connect);
    mosquitto_disconnect_callback_set(s->m, net_disconnect);
    mosquitto_message_callback_set(s->m, net_message);
    mosquitto_publish_callback_set(s->m, net_publish);
    mosquitto_subscribe_callback_set(s->m, net_subscribe);
    /* libmosquitto waits 1 s, 4 s, then 5 s between attempts: back soon after
     * a broker restart, without hammering one that stays down. */
    mosquitto_reconnect_delay_set(s->m, 1, 5, true);
    if (set_credentials(s) < 0)
        goto fail;
    rc = mosquitto_connect_async(s->m, s->c.host, s->c.port, s->c.keepalive_s > 0 ? s->c.keepalive_s : 30);
    if (rc != MOSQ_ERR_SUCCESS)
        mlog("connect to %s:%d: %s (retrying)", s->c.host, s->c.port,
             rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc));
    rc = mosquitto_loop_start(s->m);
    if (rc != MOSQ_ERR_SUCCESS) {
        mlog("error: loop_start: %s", mosquitto_strerror(rc));
        goto fail;
    }
    s->loop_started = 1;
    return &s->base;
fail:
    mqtt_destroy(&s->base);
    return NULL;
}
