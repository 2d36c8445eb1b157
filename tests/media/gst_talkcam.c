/*
 * gst_talkcam.c - a camera with a speaker for the talk test
 * (tests/media/talk_test.mjs): GStreamer's webrtcbin publishing H264 video
 * (sendonly) and Opus audio on a sendrecv transceiver, so that the media
 * core's talkback reaches it. What it receives on that audio is decoded and
 * measured (`level`), and the RTP headers are checked for one continuous
 * stream.
 *
 * Signaling is JSON lines on stdin/stdout (tests/media/lib.mjs spawnLines):
 *   out {"type":"offer","sdp":"..."}   once, complete (ICE gathering done)
 *   in  {"type":"answer","sdp":"..."}  the remote answer, applied once
 *   out {"type":"stats","state":S,"rtp":N,"ssrcs":K,"gaps":G,"ts_back":B,
 *        "levels":L,"rms":X}           every 100 ms: RTP packets received on
 *        the audio (N), distinct SSRCs seen (K), packets whose sequence
 *        number is not the previous one + 1 (G), whose timestamp is not after
 *        the previous one (B), level measurements so far (L) and the last
 *        one's RMS in dBFS, loudest channel (X, -200 before any)
 * Exits 0 on stdin EOF or SIGTERM/SIGINT, 1 on an error, 2 on bad options.
 *
 * Threads: the RTP probe runs on a streaming thread (its counters under a
 * mutex); signaling, level messages and stdout on the GLib main loop.
 */
/* webrtcbin's library is "unstable API" in 1.22; we accept that knowingly. */
#define GST_USE_UNSTABLE_API 1

/* By path: under -Isrc/vcam, src/vcam/signal.h would shadow <signal.h>. */
#include "../../src/vcam/flatjson.h"
#include "../../src/vcam/webrtcbin.h"

#include <errno.h>
#include <glib-unix.h>
#include <gst/gst.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATS_MS 100
#define GATHER_TIMEOUT_S 10
#define LINE_MAX_BYTES (256 * 1024)

typedef struct cam {
    const char *address;
    GMainLoop *loop;
    GstElement *pipe, *webrtc;
    guint bus_watch, stdin_watch, stats_timer, gather_timer, sig_term, sig_int;
    int stopping, exit_code, offered, sent, answered, linked;
    int pc_state;
    /* RTP received on the talkback: streaming thread, under mu */
    GMutex mu;
    guint64 rtp, gaps, ts_back;
    guint ssrcs;
    guint32 ssrc, last_ts;
    guint16 last_seq;
    int have_last;
    /* level: main loop */
    guint64 levels;
    double rms;
    size_t used;
    char line[LINE_MAX_BYTES + 1];
    char sdp[LINE_MAX_BYTES + 1];
} cam;

static void clog_(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void clog_(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gst_talkcam: %s\n", line);
}

static void stop(cam *c, int code, const char *why)
{
    if (c->stopping)
        return;
    clog_("%s%s", code ? "error: " : "stopping: ", why);
    c->stopping = 1;
    c->exit_code = code;
    g_main_loop_quit(c->loop);
}

static void emit(cam *c, const char *line, size_t len)
{
    if (fwrite(line, 1, len, stdout) != len || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
        stop(c, 1, "write stdout failed");
}

/* Waits for webrtcbin's reply; 0 with *reply (owned by pr), or -1 after stopping. */
static int promise_wait(cam *c, GstPromise *pr, const char *what, const GstStructure **reply)
{
    *reply = NULL;
    if (gst_promise_wait(pr) != GST_PROMISE_RESULT_REPLIED) {
        stop(c, 1, what);
        return -1;
    }
    const GstStructure *r = gst_promise_get_reply(pr);
    if (r && gst_structure_has_field(r, "error")) {
        GError *err = NULL;
        gst_structure_get(r, "error", G_TYPE_ERROR, &err, NULL);
        clog_("%s: %s", what, err ? err->message : "unknown error");
        g_clear_error(&err);
        stop(c, 1, what);
        return -1;
    }
    *reply = r;
    return 0;
}

/* ---- the offer ---- */

static void send_offer_if_gathered(cam *c)
{
    GstWebRTCICEGatheringState gs;
    GstWebRTCSessionDescription *desc = NULL;
    static const char head[] = "{\"type\":\"offer\",\"sdp\":";

    if (!c->offered || c->sent || c->stopping)
        return;
    g_object_get(c->webrtc, "ice-gathering-state", &gs, NULL);
    if (gs != GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE)
        return;
    g_object_get(c->webrtc, "local-description", &desc, NULL);
    if (!desc) {
        stop(c, 1, "no local description after ICE gathering");
        return;
    }
    gchar *text = gst_sdp_message_as_text(desc->sdp);
    gst_webrtc_session_description_free(desc);
    size_t len = strlen(text), cap = sizeof head + 6 * len + 2;
    char *buf = malloc(cap);
    if (!buf) {
        g_free(text);
        stop(c, 1, "out of memory");
        return;
    }
    memcpy(buf, head, sizeof head);
    size_t n = igw_vcam_json_escape(buf, cap, sizeof head - 1, text, len);
    g_free(text);
    if (n == (size_t)-1 || n + 1 >= cap) {
        free(buf);
        stop(c, 1, "cannot encode the offer");
        return;
    }
    buf[n++] = '}';
    c->sent = 1;
    if (c->gather_timer) {
        g_source_remove(c->gather_timer);
        c->gather_timer = 0;
    }
    emit(c, buf, n);
    free(buf);
}

static gboolean on_gather_timeout(gpointer data)
{
    cam *c = data;
    c->gather_timer = 0;
    stop(c, 1, "ICE gathering did not complete");
    return G_SOURCE_REMOVE;
}

static gboolean make_offer(gpointer data)
{
    cam *c = data;
    GstWebRTCSessionDescription *offer = NULL;
    const GstStructure *reply;

    if (c->offered || c->stopping)
        return G_SOURCE_REMOVE;
    c->offered = 1;
    GstPromise *pr = gst_promise_new();
    g_signal_emit_by_name(c->webrtc, "create-offer", NULL, pr);
    if (promise_wait(c, pr, "create-offer", &reply) == 0 && reply)
        gst_structure_get(reply, "offer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &offer, NULL);
    gst_promise_unref(pr);
    if (!offer) {
        stop(c, 1, "create-offer: no offer");
        return G_SOURCE_REMOVE;
    }
    pr = gst_promise_new();
    g_signal_emit_by_name(c->webrtc, "set-local-description", offer, pr);
    int rc = promise_wait(c, pr, "set-local-description", &reply);
    gst_promise_unref(pr);
    gst_webrtc_session_description_free(offer);
    if (rc == 0) {
        c->gather_timer = g_timeout_add_seconds(GATHER_TIMEOUT_S, on_gather_timeout, c);
        send_offer_if_gathered(c);
    }
    return G_SOURCE_REMOVE;
}

static void on_negotiation_needed(GstElement *webrtc, gpointer data)
{
    (void)webrtc;
    g_idle_add(make_offer, data);
}

/* ---- the answer ---- */

static void handle_line(cam *c, const char *line, size_t len)
{
    char type[32];
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--;
    if (len == 0)
        return;
    if (igw_vcam_json_get_string(line, len, "type", type, sizeof type) < 0) {
        stop(c, 1, "signaling: a line without a type");
        return;
    }
    if (strcmp(type, "answer") != 0)
        return;
    long n = igw_vcam_json_get_string(line, len, "sdp", c->sdp, sizeof c->sdp);
    if (n <= 0 || strlen(c->sdp) != (size_t)n || !c->sent || c->answered) {
        stop(c, 1, "signaling: an unusable answer");
        return;
    }
    GstSDPMessage *msg = NULL;
    if (gst_sdp_message_new_from_text(c->sdp, &msg) != GST_SDP_OK) {
        if (msg)
            gst_sdp_message_free(msg);
        stop(c, 1, "the answer is not SDP");
        return;
    }
    GstWebRTCSessionDescription *answer = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_ANSWER, msg);
    GstPromise *pr = gst_promise_new();
    const GstStructure *reply;
    g_signal_emit_by_name(c->webrtc, "set-remote-description", answer, pr);
    if (promise_wait(c, pr, "the answer was refused", &reply) == 0) {
        c->answered = 1;
        clog_("answer applied");
    }
    gst_promise_unref(pr);
    gst_webrtc_session_description_free(answer);
}

static gboolean on_stdin(GIOChannel *ch, GIOCondition cond, gpointer data)
{
    cam *c = data;
    (void)ch, (void)cond;
    ssize_t r = read(STDIN_FILENO, c->line + c->used, sizeof c->line - c->used);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return G_SOURCE_CONTINUE;
    if (r <= 0) {
        c->stdin_watch = 0;
        stop(c, r < 0, r < 0 ? "read stdin failed" : "stdin closed");
        return G_SOURCE_REMOVE;
    }
    c->used += (size_t)r;
    size_t start = 0;
    char *nl;
    while (!c->stopping && (nl = memchr(c->line + start, '\n', c->used - start))) {
        size_t len = (size_t)(nl - (c->line + start));
        handle_line(c, c->line + start, len);
        start += len + 1;
    }
    memmove(c->line, c->line + start, c->used - start);
    c->used -= start;
    if (c->used == sizeof c->line)
        stop(c, 1, "signaling: a line too long");
    if (c->stopping) {
        c->stdin_watch = 0;
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

/* ---- what the talkback brings (streaming thread) ---- */

static GstPadProbeReturn on_rtp(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
    cam *c = data;
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
    guint8 h[12];
    (void)pad;
    if (!buf || gst_buffer_extract(buf, 0, h, sizeof h) != sizeof h || h[0] >> 6 != 2)
        return GST_PAD_PROBE_OK;
    guint16 seq = (guint16)(h[2] << 8 | h[3]);
    guint32 ts = (guint32)h[4] << 24 | (guint32)h[5] << 16 | (guint32)h[6] << 8 | h[7];
    guint32 ssrc = (guint32)h[8] << 24 | (guint32)h[9] << 16 | (guint32)h[10] << 8 | h[11];
    g_mutex_lock(&c->mu);
    c->rtp++;
    if (!c->have_last || ssrc != c->ssrc) {
        c->ssrcs++;
        c->ssrc = ssrc;
    } else {
        if (seq != (guint16)(c->last_seq + 1))
            c->gaps++;
        if ((gint32)(ts - c->last_ts) <= 0)
            c->ts_back++;
    }
    c->have_last = 1;
    c->last_seq = seq;
    c->last_ts = ts;
    g_mutex_unlock(&c->mu);
    return GST_PAD_PROBE_OK;
}

/* webrtcbin has a received stream: the talkback. Decoded into `level`. */
static void on_pad_added(GstElement *webrtc, GstPad *pad, gpointer data)
{
    cam *c = data;
    GError *err = NULL;
    if (GST_PAD_DIRECTION(pad) != GST_PAD_SRC)
        return;
    GstElement *bin = gst_parse_bin_from_description(
        "queue ! rtpopusdepay ! opusdec ! audioconvert ! level interval=50000000 post-messages=true "
        "! fakesink sync=false",
        TRUE, &err);
    if (!bin) {
        GST_ELEMENT_ERROR(webrtc, CORE, PAD, ("cannot build the decoder"), ("%s", err ? err->message : "?"));
        g_clear_error(&err);
        return;
    }
    if (!gst_bin_add(GST_BIN(c->pipe), bin) || !gst_element_sync_state_with_parent(bin)) {
        GST_ELEMENT_ERROR(webrtc, CORE, PAD, ("cannot start the decoder"), (NULL));
        return;
    }
    GstPad *sinkpad = gst_element_get_static_pad(bin, "sink");
    if (!sinkpad || gst_pad_link(pad, sinkpad) != GST_PAD_LINK_OK)
        GST_ELEMENT_ERROR(webrtc, CORE, PAD, ("cannot link the received stream"), (NULL));
    else
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_rtp, c, NULL);
    if (sinkpad)
        gst_object_unref(sinkpad);
    clog_("receiving %s", GST_PAD_NAME(pad));
}

/* ---- main loop ---- */

static double level_rms(const GstStructure *s)
{
    const GValue *v = gst_structure_get_value(s, "rms");
    double best = -200;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    GValueArray *a = v && G_VALUE_HOLDS_BOXED(v) ? g_value_get_boxed(v) : NULL; /* level: a GValueArray */
    for (guint i = 0; a && i < a->n_values; i++) {
        double d = g_value_get_double(g_value_array_get_nth(a, i));
        if (d > best)
            best = d;
    }
    G_GNUC_END_IGNORE_DEPRECATIONS
    return best;
}

static gboolean on_bus(GstBus *bus, GstMessage *msg, gpointer data)
{
    cam *c = data;
    GError *err = NULL;
    gchar *dbg = NULL;
    (void)bus;
    switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR:
        gst_message_parse_error(msg, &err, &dbg);
        clog_("%s: %s (%s)", GST_OBJECT_NAME(msg->src), err ? err->message : "error", dbg ? dbg : "");
        stop(c, 1, "pipeline error");
        break;
    case GST_MESSAGE_ELEMENT: {
        const GstStructure *s = gst_message_get_structure(msg);
        if (s && gst_structure_has_name(s, "level")) {
            c->levels++;
            c->rms = level_rms(s);
        }
        break;
    }
    default:
        break;
    }
    g_clear_error(&err);
    g_free(dbg);
    return G_SOURCE_CONTINUE;
}

static gboolean on_stats(gpointer data)
{
    cam *c = data;
    char line[320];
    GstWebRTCPeerConnectionState st;
    if (c->stopping)
        return G_SOURCE_CONTINUE;
    g_object_get(c->webrtc, "connection-state", &st, NULL);
    GEnumClass *ec = g_type_class_ref(GST_TYPE_WEBRTC_PEER_CONNECTION_STATE);
    GEnumValue *ev = g_enum_get_value(ec, (int)st);
    g_mutex_lock(&c->mu);
    int len = snprintf(line, sizeof line,
                       "{\"type\":\"stats\",\"state\":\"%s\",\"rtp\":%" G_GUINT64_FORMAT ",\"ssrcs\":%u,"
                       "\"gaps\":%" G_GUINT64_FORMAT ",\"ts_back\":%" G_GUINT64_FORMAT ",\"levels\":%" G_GUINT64_FORMAT
                       ",\"rms\":%.1f}",
                       ev ? ev->value_nick : "unknown", c->rtp, c->ssrcs, c->gaps, c->ts_back, c->levels, c->rms);
    g_mutex_unlock(&c->mu);
    g_type_class_unref(ec);
    if (len > 0 && (size_t)len < sizeof line)
        emit(c, line, (size_t)len);
    return G_SOURCE_CONTINUE;
}

static gboolean on_gathering(gpointer data)
{
    send_offer_if_gathered(data);
    return G_SOURCE_REMOVE;
}

static void on_notify_gathering(GObject *obj, GParamSpec *pspec, gpointer data)
{
    (void)obj, (void)pspec;
    g_idle_add(on_gathering, data);
}

static gboolean on_unix_signal(gpointer data)
{
    stop(data, 0, "signal received");
    return G_SOURCE_CONTINUE;
}

/* Video sendonly, audio sendrecv: the speaker. Each transceiver is found
 * from the sink pad it sends from, its kind from the caps linked there. */
static int set_directions(cam *c)
{
    int audio = 0, video = 0;
    GstIterator *it = gst_element_iterate_sink_pads(c->webrtc);
    GValue item = G_VALUE_INIT;
    while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
        GstPad *pad = g_value_get_object(&item);
        GstCaps *caps = gst_pad_peer_query_caps(pad, NULL);
        const GstStructure *st = caps && !gst_caps_is_empty(caps) ? gst_caps_get_structure(caps, 0) : NULL;
        const char *media = st ? gst_structure_get_string(st, "media") : NULL;
        GstWebRTCRTPTransceiver *t = NULL;
        if (g_object_class_find_property(G_OBJECT_GET_CLASS(pad), "transceiver"))
            g_object_get(pad, "transceiver", &t, NULL);
        if (t && media) {
            bool is_audio = strcmp(media, "audio") == 0;
            audio += is_audio;
            video += !is_audio;
            g_object_set(t, "direction",
                         is_audio ? GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDRECV
                                  : GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY,
                         NULL);
        }
        if (t)
            gst_object_unref(t);
        if (caps)
            gst_caps_unref(caps);
        g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
    if (audio != 1 || video != 1) {
        clog_("error: expected one audio and one video transceiver, got %d and %d", audio, video);
        return -1;
    }
    return 0;
}

static int build(cam *c)
{
    static const char *const need[][2] = {
        {"webrtcbin", "gstreamer1.0-plugins-bad"}, {"x264enc", "gstreamer1.0-plugins-ugly"},
        {"opusenc", "gstreamer1.0-plugins-base"},  {"opusdec", "gstreamer1.0-plugins-base"},
        {"level", "gstreamer1.0-plugins-good"},    {"rtpopusdepay", "gstreamer1.0-plugins-good"},
    };
    if (igw_webrtcbin_check_elements("gst_talkcam", need, G_N_ELEMENTS(need)) < 0)
        return -1;
    GError *err = NULL;
    c->pipe = gst_parse_launch_full(
        "webrtcbin name=webrtc bundle-policy=max-bundle "
        "videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=15/1 "
        "! videoconvert ! queue max-size-buffers=2 max-size-bytes=0 max-size-time=0 "
        "! x264enc tune=zerolatency speed-preset=ultrafast bitrate=300 key-int-max=30 sliced-threads=false threads=1 "
        "! video/x-h264,profile=constrained-baseline ! rtph264pay config-interval=-1 aggregate-mode=zero-latency pt=96 "
        "! application/x-rtp,media=video,encoding-name=H264,payload=96,"
        "rtcp-fb-nack-pli=(boolean)true,rtcp-fb-ccm-fir=(boolean)true ! webrtc. "
        "audiotestsrc is-live=true wave=silence ! audioconvert ! audioresample ! queue max-size-time=100000000 "
        "! opusenc ! rtpopuspay pt=111 ! application/x-rtp,media=audio,encoding-name=OPUS,payload=111 ! webrtc. ",
        NULL, GST_PARSE_FLAG_FATAL_ERRORS, &err);
    if (!c->pipe) {
        clog_("error: cannot build the pipeline: %s", err ? err->message : "?");
        g_clear_error(&err);
        return -1;
    }
    c->webrtc = gst_bin_get_by_name(GST_BIN(c->pipe), "webrtc");
    char why[160];
    if (!c->webrtc || igw_webrtcbin_restrict_ice(c->webrtc, c->address, why, sizeof why) < 0) {
        clog_("error: %s", c->webrtc ? why : "no webrtcbin");
        return -1;
    }
    if (set_directions(c) < 0)
        return -1;
    g_signal_connect(c->webrtc, "on-negotiation-needed", G_CALLBACK(on_negotiation_needed), c);
    g_signal_connect(c->webrtc, "pad-added", G_CALLBACK(on_pad_added), c);
    g_signal_connect(c->webrtc, "notify::ice-gathering-state", G_CALLBACK(on_notify_gathering), c);
    GstBus *bus = gst_element_get_bus(c->pipe);
    c->bus_watch = gst_bus_add_watch(bus, on_bus, c);
    gst_object_unref(bus);
    if (gst_element_set_state(c->pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        clog_("error: the pipeline does not start");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cam *c = g_new0(cam, 1);
    c->address = "127.0.0.1";
    c->rms = -200;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--address") == 0 && i + 1 < argc) {
            c->address = argv[++i];
        } else {
            fprintf(stderr, "usage: gst_talkcam [--address IP]\n");
            g_free(c);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    g_mutex_init(&c->mu);
    gst_init(NULL, NULL);
    c->loop = g_main_loop_new(NULL, FALSE);
    GIOChannel *in = NULL;
    if (build(c) < 0) {
        c->exit_code = 1;
        goto out;
    }
    in = g_io_channel_unix_new(STDIN_FILENO);
    c->stdin_watch = g_io_add_watch(in, G_IO_IN | G_IO_HUP | G_IO_ERR, on_stdin, c);
    c->stats_timer = g_timeout_add(STATS_MS, on_stats, c);
    c->sig_term = g_unix_signal_add(SIGTERM, on_unix_signal, c);
    c->sig_int = g_unix_signal_add(SIGINT, on_unix_signal, c);
    g_main_loop_run(c->loop);
out:
    c->stopping = 1;
    if (c->pipe)
        gst_element_set_state(c->pipe, GST_STATE_NULL);
    guint *srcs[] = {&c->stats_timer, &c->gather_timer, &c->stdin_watch, &c->sig_term, &c->sig_int, &c->bus_watch};
    for (size_t i = 0; i < G_N_ELEMENTS(srcs); i++)
        if (*srcs[i])
            g_source_remove(*srcs[i]);
    if (in)
        g_io_channel_unref(in);
    if (c->webrtc)
        gst_object_unref(c->webrtc);
    if (c->pipe)
        gst_object_unref(c->pipe);
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_main_loop_unref(c->loop);
    gst_deinit();
    g_mutex_clear(&c->mu);
    int code = c->exit_code;
    g_free(c);
    return code;
}
