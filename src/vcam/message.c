/*
 * message.c - see message.h.
 */
#include "message.h"
#include "log.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct msg {
    char token[IGW_VCAM_TOKEN_MAX + 1];
    char delivery[2 * IGW_VCAM_ID_MAX + 1];
    int64_t expires_at_ms;
    char url[IGW_VCAM_URL_MAX + 1];
} msg;

struct igw_vcam_messages {
    igw_vcam_messages_cbs cbs;
    void *user;
    msg queue[IGW_VCAM_MESSAGES_QUEUE]; /* a ring: head plays first */
    unsigned head, n;
    msg cur;           /* the one playing (pipe non-NULL) */
    GstElement *pipe;
    guint bus_watch;
    guint limit;       /* IGW_VCAM_MESSAGE_MAX_S of cur (0: none) */
    unsigned levels;   /* level messages of cur */
    double peak;       /* the loudest peak of cur, dB */
    /* Answered tokens and their codes, the oldest overwritten. */
    struct seen {
        char token[IGW_VCAM_TOKEN_MAX + 1];
        int code;
    } seen[IGW_VCAM_MESSAGES_SEEN];
    unsigned nseen, seen_next;
    bool overflow; /* a play was left unqueued: ask again when idle */
};

#define mlog(...) igw_vcam_log("", __VA_ARGS__)

static void next(igw_vcam_messages *m);

static void answer(igw_vcam_messages *m, const char *token, int code, const char *why)
{
    struct seen *s = &m->seen[m->seen_next];
    snprintf(s->token, sizeof s->token, "%s", token);
    s->code = code;
    m->seen_next = (m->seen_next + 1) % IGW_VCAM_MESSAGES_SEEN;
    if (m->nseen < IGW_VCAM_MESSAGES_SEEN)
        m->nseen++;
    m->cbs.on_reply(m->user, token, code, why);
}

static const struct seen *seen_of(const igw_vcam_messages *m, const char *token)
{
    for (unsigned i = 0; i < m->nseen; i++)
        if (strcmp(m->seen[i].token, token) == 0)
            return &m->seen[i];
    return NULL;
}

static bool waiting(const igw_vcam_messages *m, const char *token)
{
    if (m->pipe && strcmp(m->cur.token, token) == 0)
        return true;
    for (unsigned i = 0; i < m->n; i++)
        if (strcmp(m->queue[(m->head + i) % IGW_VCAM_MESSAGES_QUEUE].token, token) == 0)
            return true;
    return false;
}

static void stop_pipe(igw_vcam_messages *m)
{
    if (!m->pipe)
        return;
    if (m->bus_watch)
        g_source_remove(m->bus_watch);
    m->bus_watch = 0;
    if (m->limit)
        g_source_remove(m->limit);
    m->limit = 0;
    gst_element_set_state(m->pipe, GST_STATE_NULL);
    gst_object_unref(m->pipe);
    m->pipe = NULL;
}

/* The current play ends with code; the next one starts. */
static void finish(igw_vcam_messages *m, int code, const char *why)
{
    msg done = m->cur;
    stop_pipe(m);
    if (code == 200)
        mlog("message %s: played (%u level messages, peak %.1f dB)", done.delivery, m->levels, m->peak);
    else
        mlog("message %s: not played, %d (%s)", done.delivery, code, why ? why : "");
    answer(m, done.token, code, why);
    next(m);
}

/* A link the server refused (HTTP 403, 404, 410: souphttpsrc's error
 * details) is an expired one: the platform signs it until expiresAt. Any
 * other failure (a refused connection, a 500, DNS) is no proof of expiry. */
static bool link_refused(GstMessage *msg)
{
    const GstStructure *d = NULL;
    guint status = 0;
    gst_message_parse_error_details(msg, &d);
    if (!d || !gst_structure_get_uint(d, "http-status-code", &status))
        return false;
    return status == 403 || status == 404 || status == 410;
}

static gboolean on_bus(GstBus *bus, GstMessage *msg, gpointer data)
{
    igw_vcam_messages *m = data;
    (void)bus;

    switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ELEMENT: {
        const GstStructure *st = gst_message_get_structure(msg);
        if (st && gst_structure_has_name(st, "level")) {
            m->levels++;
            double peak = m->cbs.on_level(m->user, m->cur.delivery, st);
            if (peak > m->peak)
                m->peak = peak;
        }
        break;
    }
    case GST_MESSAGE_EOS:
        finish(m, 200, NULL);
        return G_SOURCE_REMOVE; /* finish removed the watch with the pipe */
    case GST_MESSAGE_ERROR: {
        GError *err = NULL;
        gchar *dbg = NULL;
        gst_message_parse_error(msg, &err, &dbg);
        bool refused = link_refused(msg);
        char why[200];
        snprintf(why, sizeof why, "%s", refused ? "the link was refused (expired)"
                                                : err && err->message ? err->message : "playback failed");
        if (!refused)
            mlog("message %s: %s (%s)", m->cur.delivery, err && err->message ? err->message : "?", dbg ? dbg : "");
        g_clear_error(&err);
        g_free(dbg);
        finish(m, refused ? 410 : 500, why);
        return G_SOURCE_REMOVE;
    }
    default:
        break;
    }
    return G_SOURCE_CONTINUE;
}

/* decodebin's pad: the audio chain after it. */
static void on_pad(GstElement *dec, GstPad *pad, gpointer data)
{
    GstElement *conv = data;
    GstPad *sink = gst_element_get_static_pad(conv, "sink");
    GstCaps *caps = gst_pad_get_current_caps(pad);
    const GstStructure *st = caps ? gst_caps_get_structure(caps, 0) : NULL;
    (void)dec;
    if (st && g_str_has_prefix(gst_structure_get_name(st), "audio/") && sink && !gst_pad_is_linked(sink))
        (void)gst_pad_link(pad, sink);
    if (caps)
        gst_caps_unref(caps);
    if (sink)
        gst_object_unref(sink);
}

static gboolean on_limit(gpointer data)
{
    igw_vcam_messages *m = data;
    m->limit = 0; /* this source ends here */
    finish(m, 500, "longer than the camera plays a message: stopped");
    return G_SOURCE_REMOVE;
}

static int start(igw_vcam_messages *m)
{
    GstElement *pipe = gst_pipeline_new("message");
    GstElement *src = gst_element_factory_make("souphttpsrc", NULL), *dec = gst_element_factory_make("decodebin", NULL),
               *conv = gst_element_factory_make("audioconvert", NULL),
               *res = gst_element_factory_make("audioresample", NULL), *lvl = gst_element_factory_make("level", NULL),
               *sink = gst_element_factory_make("fakesink", NULL);
    if (!pipe || !src || !dec || !conv || !res || !lvl || !sink) {
        mlog("message %s: a GStreamer element is missing (souphttpsrc, decodebin, level)", m->cur.delivery);
        if (pipe)
            gst_object_unref(pipe);
        GstElement *e[] = {src, dec, conv, res, lvl, sink};
        for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
            if (e[i])
                gst_object_unref(e[i]);
        return -1;
    }
    g_object_set(src, "location", m->cur.url, "timeout", 10u, NULL);
    g_object_set(lvl, "interval", (guint64)50 * GST_MSECOND, "post-messages", TRUE, NULL);
    g_object_set(sink, "sync", TRUE, NULL); /* played in real time, as a speaker would */
    gst_bin_add_many(GST_BIN(pipe), src, dec, conv, res, lvl, sink, NULL);
    if (!gst_element_link(src, dec) || !gst_element_link_many(conv, res, lvl, sink, NULL)) {
        gst_object_unref(pipe);
        return -1;
    }
    g_signal_connect(dec, "pad-added", G_CALLBACK(on_pad), conv);
    m->pipe = pipe;
    m->levels = 0;
    m->peak = -200.0;
    GstBus *bus = gst_pipeline_get_bus(GST_PIPELINE(pipe));
    m->bus_watch = gst_bus_add_watch(bus, on_bus, m);
    gst_object_unref(bus);
    if (gst_element_set_state(pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        stop_pipe(m);
        return -1;
    }
    m->limit = g_timeout_add_seconds(IGW_VCAM_MESSAGE_MAX_S, on_limit, m);
    mlog("message %s: playing", m->cur.delivery);
    return 0;
}

/* Starts the next play, if nothing plays; expired ones are answered on the way. */
static void next(igw_vcam_messages *m)
{
    while (!m->pipe && m->n) {
        m->cur = m->queue[m->head];
        m->head = (m->head + 1) % IGW_VCAM_MESSAGES_QUEUE;
        m->n--;
        if (g_get_real_time() / 1000 >= m->cur.expires_at_ms) {
            mlog("message %s: expired before it played, not fetched", m->cur.delivery);
            answer(m, m->cur.token, 410, "expired before it played");
            continue;
        }
        if (start(m) != 0) {
            answer(m, m->cur.token, 500, "cannot start the player");
            continue;
        }
    }
    if (!m->pipe && !m->n && m->overflow) {
        m->overflow = false;
        if (m->cbs.on_drained)
            m->cbs.on_drained(m->user);
    }
}

igw_vcam_messages *igw_vcam_messages_new(const igw_vcam_messages_cbs *cbs, void *user)
{
    igw_vcam_messages *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->cbs = *cbs;
    m->user = user;
    return m;
}

void igw_vcam_messages_play(igw_vcam_messages *m, const igw_vcam_play *p)
{
    const struct seen *s = seen_of(m, p->token);
    if (s) { /* the platform did not get our answer: the same again */
        m->cbs.on_reply(m->user, p->token, s->code, s->code == 200 ? NULL : "answered before");
        return;
    }
    if (waiting(m, p->token))
        return;
    if (g_get_real_time() / 1000 >= p->expires_at_ms) {
        mlog("message %s: expired, not fetched", p->delivery_id);
        answer(m, p->token, 410, "expired before it played");
        return;
    }
    if (m->n == IGW_VCAM_MESSAGES_QUEUE) {
        /* Not answered: a 503 would settle it as failed. The platform still
         * holds it; asked for again once the queue drained. */
        mlog("message %s: %d waiting already, left for a later get", p->delivery_id, m->n);
        m->overflow = true;
        return;
    }
    msg *q = &m->queue[(m->head + m->n) % IGW_VCAM_MESSAGES_QUEUE];
    if (snprintf(q->token, sizeof q->token, "%s", p->token) >= (int)sizeof q->token ||
        snprintf(q->delivery, sizeof q->delivery, "%s", p->delivery_id) >= (int)sizeof q->delivery ||
        snprintf(q->url, sizeof q->url, "%s", p->url) >= (int)sizeof q->url) {
        m->cbs.on_reply(m->user, p->token, 400, "a field is too long");
        return;
    }
    q->expires_at_ms = p->expires_at_ms;
    m->n++;
    mlog("message %s (%s): queued", q->delivery, p->kind);
    next(m);
}

void igw_vcam_messages_free(igw_vcam_messages *m)
{
    if (!m)
        return;
    stop_pipe(m);
    free(m);
}
