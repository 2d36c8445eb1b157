/*
 * gst_viewer.c - a non-browser WebRTC viewer for the live-view tests
 * (tests/igwd/live_gst.mjs): GStreamer's webrtcbin as an application's
 * recvonly peer, to show that igw's session engine serves any standards
 * WebRTC stack, not only Chromium's.
 *
 * Signaling is JSON lines on stdin/stdout (tests/media/lib.mjs spawnLines):
 *   out {"type":"offer","sdp":"..."}   once, complete (ICE gathering done,
 *                                      candidates inside, no trickle):
 *                                      recvonly H264 video (+ recvonly Opus
 *                                      audio with --audio), bundled
 *   in  {"type":"answer","sdp":"..."}  the remote answer, applied once
 *   out {"type":"state","state":S}     each peer connection state change
 *   out {"type":"stats","frames":N,"width":W,"height":H,"state":S}
 *                                      every 250 ms; frames is the number of
 *                                      decoded video frames so far, W x H
 *                                      their size (0 before the first);
 *                                      "audio": decoded Opus buffers, with
 *                                      --audio
 * Received video goes rtph264depay ! h264parse ! openh264dec ! fakesink
 * (openh264dec: gstreamer1.0-plugins-bad; the depayloader asks for a
 * keyframe when it needs one), audio rtpopusdepay ! opusdec ! fakesink.
 * The decoder takes the stream as H.264 says it: a sender that puts
 * parameter sets between the slices of one picture (x264's sliced threads
 * with rtph264pay config-interval=-1: igw-vcam did) decodes nothing here,
 * though browsers, which assemble pictures by the RTP marker, hide it.
 *
 * Exits 0 on stdin EOF, SIGTERM or SIGINT (the pipeline torn down first);
 * 1 on an error (bad signaling, a refused answer, a pipeline error, no ICE
 * candidate), with the reason on stderr; 2 on bad options. A failed peer
 * connection is a state line, not an exit.
 *
 * Threads: webrtcbin and the streaming threads call back on their own
 * threads; counters are atomics, and everything else (state, stdout) is
 * handed to the GLib main loop. The promise waits block the main loop for
 * the few milliseconds webrtcbin's own thread needs to reply (as igw-vcam
 * does, src/vcam/vcam.c).
 */
/* webrtcbin's library is "unstable API" in 1.22; we accept that knowingly. */
#define GST_USE_UNSTABLE_API 1

/* By path: under -Isrc/vcam, src/vcam/signal.h would shadow <signal.h>. */
#include "../../src/vcam/flatjson.h"
#include "../../src/vcam/webrtcbin.h"

#include <errno.h>
#include <getopt.h>
#include <glib-unix.h>
#include <gst/gst.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include <nice/agent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GATHER_TIMEOUT_S 10
#define STATS_MS 250
/* One signaling line: an answer's SDP escaped, plus its envelope. */
#define LINE_MAX_BYTES (256 * 1024)

typedef struct viewer {
    const char *address;
    int audio;
    GMainLoop *loop;
    GstElement *pipe, *webrtc;
    guint bus_watch, stdin_watch, stats_timer, gather_timer, sig_term, sig_int;
    GIOChannel *in;
    int stopping, exit_code;
    int offered;   /* create-offer made */
    int sent;      /* the offer is out */
    int answered;  /* the answer is applied */
    int pc_state;  /* main loop only; -1 before any notification */
    gint frames, width, height, audio_bufs; /* atomics: streaming threads write */
    size_t used;
    char line[LINE_MAX_BYTES + 1]; /* one byte more: an over-long line is seen, not cut */
    char sdp[LINE_MAX_BYTES + 1];
} viewer;

static void vlog(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void vlog(const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One call per line: streaming threads log too. */
    fprintf(stderr, "gst_viewer: %s\n", line);
}

static void stop(viewer *v, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void stop(viewer *v, int code, const char *fmt, ...)
{
    char why[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (v->stopping)
        return;
    vlog("%s%s", code ? "error: " : "stopping: ", why);
    v->stopping = 1;
    v->exit_code = code;
    g_main_loop_quit(v->loop);
}

/* Writes one line to stdout (main loop only). A reader that went away is an
 * error: nobody hears us any more. */
static void emit(viewer *v, const char *line, size_t len)
{
    if (fwrite(line, 1, len, stdout) != len || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
        stop(v, 1, "write stdout: %s", strerror(errno));
}

static const char *enum_nick(GType type, int value)
{
    GEnumClass *c = g_type_class_ref(type);
    GEnumValue *ev = g_enum_get_value(c, value);
    const char *nick = ev ? ev->value_nick : "unknown";

    g_type_class_unref(c); /* the class is static: nick stays valid */
    return nick;
}

static const char *pc_nick(const viewer *v)
{
    return v->pc_state < 0 ? "new" : enum_nick(GST_TYPE_WEBRTC_PEER_CONNECTION_STATE, v->pc_state);
}

/* Waits for webrtcbin's reply to a promise. 0 with *reply (owned by pr,
 * NULL for the set-*-description calls), or -1 after stopping with the
 * error it carries. */
static int promise_wait(viewer *v, GstPromise *pr, const char *what, const GstStructure **reply)
{
    GstPromiseResult res = gst_promise_wait(pr);
    const GstStructure *r;
    GError *err = NULL;

    *reply = NULL;
    if (res != GST_PROMISE_RESULT_REPLIED) {
        stop(v, 1, "%s: no reply from webrtcbin (promise result %d)", what, (int)res);
        return -1;
    }
    r = gst_promise_get_reply(pr);
    if (r && gst_structure_has_field(r, "error")) {
        gst_structure_get(r, "error", G_TYPE_ERROR, &err, NULL);
        stop(v, 1, "%s: %s", what, err ? err->message : "unknown error");
        g_clear_error(&err);
        return -1;
    }
    *reply = r;
    return 0;
}

/* ---- the offer ---- */

static int has_candidate(const GstSDPMessage *sdp)
{
    for (guint i = 0; i < gst_sdp_message_medias_len(sdp); i++)
        if (gst_sdp_media_get_attribute_val(gst_sdp_message_get_media(sdp, i), "candidate"))
            return 1;
    return 0;
}

/* Sends the local description once ICE gathering is complete. */
static void send_offer_if_gathered(viewer *v)
{
    GstWebRTCICEGatheringState gs;
    GstWebRTCSessionDescription *desc = NULL;
    static const char head[] = "{\"type\":\"offer\",\"sdp\":";
    gchar *text;
    size_t len, cap, n;
    char *buf;

    if (!v->offered || v->sent || v->stopping)
        return;
    g_object_get(v->webrtc, "ice-gathering-state", &gs, NULL);
    if (gs != GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE)
        return;
    g_object_get(v->webrtc, "local-description", &desc, NULL);
    if (!desc) {
        stop(v, 1, "no local description after ICE gathering");
        return;
    }
    if (!has_candidate(desc->sdp)) {
        gst_webrtc_session_description_free(desc);
        stop(v, 1, "the offer has no ICE candidate (is %s an address of this host?)", v->address);
        return;
    }
    text = gst_sdp_message_as_text(desc->sdp);
    gst_webrtc_session_description_free(desc);
    len = strlen(text);
    cap = sizeof head + 6 * len + 2; /* worst case: every byte \u00XX */
    buf = malloc(cap);
    if (!buf) {
        g_free(text);
        stop(v, 1, "out of memory");
        return;
    }
    memcpy(buf, head, sizeof head); /* with its NUL */
    n = igw_vcam_json_escape(buf, cap, sizeof head - 1, text, len);
    g_free(text);
    if (n == (size_t)-1 || n + 1 >= cap) {
        free(buf);
        stop(v, 1, "cannot encode the offer");
        return;
    }
    buf[n++] = '}';
    v->sent = 1;
    if (v->gather_timer) {
        g_source_remove(v->gather_timer);
        v->gather_timer = 0;
    }
    emit(v, buf, n);
    free(buf);
    vlog("offer sent (%zu bytes of SDP)", len);
}

static gboolean on_gather_timeout(gpointer data)
{
    viewer *v = data;

    v->gather_timer = 0;
    stop(v, 1, "ICE gathering did not complete within %d s", GATHER_TIMEOUT_S);
    return G_SOURCE_REMOVE;
}

static void make_offer(viewer *v)
{
    GstWebRTCSessionDescription *offer = NULL;
    const GstStructure *reply;
    GstPromise *pr;
    int rc;

    if (v->offered || v->stopping)
        return;
    v->offered = 1;
    pr = gst_promise_new();
    g_signal_emit_by_name(v->webrtc, "create-offer", NULL, pr);
    rc = promise_wait(v, pr, "create-offer", &reply);
    if (rc == 0 && reply)
        gst_structure_get(reply, "offer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &offer, NULL);
    gst_promise_unref(pr);
    if (!offer) {
        if (rc == 0)
            stop(v, 1, "create-offer: no offer in the reply");
        return;
    }
    pr = gst_promise_new();
    g_signal_emit_by_name(v->webrtc, "set-local-description", offer, pr);
    rc = promise_wait(v, pr, "set-local-description", &reply);
    gst_promise_unref(pr);
    gst_webrtc_session_description_free(offer);
    if (rc < 0)
        return;
    v->gather_timer = g_timeout_add_seconds(GATHER_TIMEOUT_S, on_gather_timeout, v);
    send_offer_if_gathered(v); /* gathering may be complete already */
}

/* ---- the answer ---- */

static void apply_answer(viewer *v, const char *sdp)
{
    GstSDPMessage *msg = NULL;
    GstWebRTCSessionDescription *answer;
    const GstStructure *reply;
    GstPromise *pr;

    if (!v->sent || v->answered) {
        stop(v, 1, "an answer came with %s", v->answered ? "one applied already" : "no offer out yet");
        return;
    }
    if (gst_sdp_message_new_from_text(sdp, &msg) != GST_SDP_OK || gst_sdp_message_medias_len(msg) == 0) {
        if (msg)
            gst_sdp_message_free(msg);
        stop(v, 1, "the answer is not an SDP with media");
        return;
    }
    answer = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_ANSWER, msg); /* owns msg */
    pr = gst_promise_new();
    g_signal_emit_by_name(v->webrtc, "set-remote-description", answer, pr);
    if (promise_wait(v, pr, "the answer was refused", &reply) == 0) {
        v->answered = 1;
        vlog("answer applied");
    }
    gst_promise_unref(pr);
    gst_webrtc_session_description_free(answer);
}

/* One complete line (no newline). */
static void handle_line(viewer *v, const char *line, size_t len)
{
    char type[32];
    long n;

    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return;
    n = igw_vcam_json_get_string(line, len, "type", type, sizeof type);
    if (n < 0) {
        stop(v, 1, "signaling: %s line (%zu bytes)", n == -1 ? "no \"type\" string in a" : "malformed JSON", len);
        return;
    }
    if (strcmp(type, "answer") != 0) {
        vlog("signaling: unknown message type \"%s\", ignored", type);
        return;
    }
    n = igw_vcam_json_get_string(line, len, "sdp", v->sdp, sizeof v->sdp);
    if (n <= 0 || strlen(v->sdp) != (size_t)n) {
        stop(v, 1, "signaling: an answer without a usable \"sdp\" string");
        return;
    }
    apply_answer(v, v->sdp);
}

static gboolean on_stdin(GIOChannel *ch, GIOCondition cond, gpointer data)
{
    viewer *v = data;
    size_t start = 0;
    ssize_t r;

    (void)ch;
    (void)cond;
    r = read(STDIN_FILENO, v->line + v->used, sizeof v->line - v->used);
    if (r < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return G_SOURCE_CONTINUE;
        v->stdin_watch = 0;
        stop(v, 1, "read stdin: %s", strerror(errno));
        return G_SOURCE_REMOVE;
    }
    if (r == 0) {
        /* A last line without its newline still counts. */
        if (v->used > 0)
            handle_line(v, v->line, v->used);
        v->used = 0;
        v->stdin_watch = 0;
        stop(v, 0, "stdin closed");
        return G_SOURCE_REMOVE;
    }
    v->used += (size_t)r;
    for (;;) {
        char *nl = memchr(v->line + start, '\n', v->used - start);
        size_t len;

        if (!nl || v->stopping)
            break;
        len = (size_t)(nl - (v->line + start));
        handle_line(v, v->line + start, len);
        start += len + 1;
    }
    if (v->stopping) {
        v->stdin_watch = 0;
        return G_SOURCE_REMOVE;
    }
    memmove(v->line, v->line + start, v->used - start);
    v->used -= start;
    if (v->used == sizeof v->line) {
        v->stdin_watch = 0;
        stop(v, 1, "signaling: a line longer than %d bytes", LINE_MAX_BYTES);
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

/* ---- received media (streaming threads) ---- */

static void on_video_frame(GstElement *sink, GstBuffer *buf, GstPad *pad, gpointer data)
{
    viewer *v = data;
    GstCaps *caps = gst_pad_get_current_caps(pad);
    gint w = 0, h = 0;

    (void)sink;
    (void)buf;
    if (caps) {
        const GstStructure *s = gst_caps_get_structure(caps, 0);
        if (s && gst_structure_get_int(s, "width", &w) && gst_structure_get_int(s, "height", &h)) {
            g_atomic_int_set(&v->width, w);
            g_atomic_int_set(&v->height, h);
        }
        gst_caps_unref(caps);
    }
    g_atomic_int_inc(&v->frames);
}

static void on_audio_buffer(GstElement *sink, GstBuffer *buf, GstPad *pad, gpointer data)
{
    viewer *v = data;

    (void)sink;
    (void)buf;
    (void)pad;
    g_atomic_int_inc(&v->audio_bufs);
}


/* webrtcbin has a new stream: decode it into a counting fakesink. Runs on a
 * streaming thread; a failure is posted on the bus as an error, where the
 * main loop sees it. */
static void on_pad_added(GstElement *webrtc, GstPad *pad, gpointer data)
{
    viewer *v = data;
    GstCaps *caps;
    const GstStructure *s;
    const char *media = NULL, *desc;
    GstElement *bin, *sink;
    GstPad *sinkpad;
    GError *err = NULL;
    int video;

    if (GST_PAD_DIRECTION(pad) != GST_PAD_SRC)
        return;
    caps = gst_pad_get_current_caps(pad);
    if (!caps)
        caps = gst_pad_query_caps(pad, NULL);
    s = caps ? gst_caps_get_structure(caps, 0) : NULL;
    if (s)
        media = gst_structure_get_string(s, "media");
    video = media && strcmp(media, "video") == 0;
    if (!media || (!video && strcmp(media, "audio") != 0)) {
        GST_ELEMENT_ERROR(webrtc, STREAM, FORMAT, ("a stream that is neither audio nor video"),
                          ("pad %s", GST_PAD_NAME(pad)));
        if (caps)
            gst_caps_unref(caps);
        return;
    }
    gst_caps_unref(caps);
    /* max-errors=-1: a frame lost to the network (or a pause) is not
     * fatal; the depayloader asks for the keyframe that repairs it. */
    desc = video ? "queue ! rtph264depay request-keyframe=true wait-for-keyframe=true "
                   "! video/x-h264,stream-format=byte-stream ! h264parse "
                   "! video/x-h264,alignment=au ! openh264dec max-errors=-1 "
                   "! fakesink name=sink sync=false signal-handoffs=true"
                 : "queue ! rtpopusdepay ! opusdec ! fakesink name=sink sync=false signal-handoffs=true";
    bin = gst_parse_bin_from_description(desc, TRUE, &err);
    if (!bin) {
        GST_ELEMENT_ERROR(webrtc, CORE, PAD, ("cannot build the %s decoder", media),
                          ("%s", err ? err->message : "unknown error"));
        g_clear_error(&err);
        return;
    }
    sink = gst_bin_get_by_name(GST_BIN(bin), "sink");
    if (sink) {
        g_signal_connect(sink, "handoff", video ? G_CALLBACK(on_video_frame) : G_CALLBACK(on_audio_buffer), v);
        gst_object_unref(sink);
    }
    if (!gst_bin_add(GST_BIN(v->pipe), bin)) { /* takes the floating ref */
        GST_ELEMENT_ERROR(webrtc, CORE, PAD, ("cannot add the %s decoder", media), (NULL));
        return;
    }
    if (!gst_element_sync_state_with_parent(bin)) {
        GST_ELEMENT_ERROR(webrtc, CORE, STATE_CHANGE, ("the %s decoder does not start", media), (NULL));
        return;
    }
    sinkpad = gst_element_get_static_pad(bin, "sink");
    if (!sinkpad || gst_pad_link(pad, sinkpad) != GST_PAD_LINK_OK)
        GST_ELEMENT_ERROR(webrtc, CORE, PAD, ("cannot link the %s stream", media), (NULL));
    else
        vlog("receiving %s (%s)", media, GST_PAD_NAME(pad));
    if (sinkpad)
        gst_object_unref(sinkpad);
}

/* ---- webrtcbin notifications (any thread) -> main loop ---- */

typedef struct note {
    viewer *v;
    int gathering; /* 1: ice-gathering-state, 0: connection-state */
    int value;
} note;

static gboolean main_note(gpointer data)
{
    note *n = data;
    viewer *v = n->v;
    char line[128];
    int len;

    if (v->stopping)
        return G_SOURCE_REMOVE;
    if (n->gathering) {
        send_offer_if_gathered(v);
        return G_SOURCE_REMOVE;
    }
    if (n->value == v->pc_state)
        return G_SOURCE_REMOVE;
    v->pc_state = n->value;
    len = snprintf(line, sizeof line, "{\"type\":\"state\",\"state\":\"%s\"}", pc_nick(v));
    if (len > 0 && (size_t)len < sizeof line)
        emit(v, line, (size_t)len);
    /* "failed" is reported, not fatal: the far end hanging up may fail the
     * connection, and the test, not the viewer, knows whether that is due. */
    vlog("peer connection state %s", pc_nick(v));
    return G_SOURCE_REMOVE;
}

/* Carries the value as notified: reading the property later on the main
 * loop would skip short-lived states. */
static void on_notify(GObject *obj, GParamSpec *pspec, gpointer data)
{
    note *n = g_new0(note, 1);
    int value = 0;

    n->v = data;
    n->gathering = strcmp(pspec->name, "ice-gathering-state") == 0;
    g_object_get(obj, pspec->name, &value, NULL);
    n->value = value;
    g_idle_add_full(G_PRIORITY_DEFAULT_IDLE, main_note, n, g_free);
}

static gboolean main_negotiation_needed(gpointer data)
{
    make_offer(data);
    return G_SOURCE_REMOVE;
}

static void on_negotiation_needed(GstElement *webrtc, gpointer data)
{
    (void)webrtc;
    g_idle_add(main_negotiation_needed, data);
}

/* ---- main loop sources ---- */

static gboolean on_stats(gpointer data)
{
    viewer *v = data;
    char line[256];
    int len;

    if (v->stopping)
        return G_SOURCE_CONTINUE;
    if (v->audio)
        len = snprintf(line, sizeof line,
                       "{\"type\":\"stats\",\"frames\":%d,\"width\":%d,\"height\":%d,\"state\":\"%s\",\"audio\":%d}",
                       g_atomic_int_get(&v->frames), g_atomic_int_get(&v->width), g_atomic_int_get(&v->height),
                       pc_nick(v), g_atomic_int_get(&v->audio_bufs));
    else
        len = snprintf(line, sizeof line,
                       "{\"type\":\"stats\",\"frames\":%d,\"width\":%d,\"height\":%d,\"state\":\"%s\"}",
                       g_atomic_int_get(&v->frames), g_atomic_int_get(&v->width), g_atomic_int_get(&v->height),
                       pc_nick(v));
    if (len > 0 && (size_t)len < sizeof line)
        emit(v, line, (size_t)len);
    return G_SOURCE_CONTINUE;
}

static gboolean on_bus(GstBus *bus, GstMessage *msg, gpointer data)
{
    viewer *v = data;
    GError *err = NULL;
    gchar *dbg = NULL;

    (void)bus;
    switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR:
        gst_message_parse_error(msg, &err, &dbg);
        stop(v, 1, "%s: %s (%s)", GST_OBJECT_NAME(msg->src), err ? err->message : "error", dbg ? dbg : "");
        break;
    case GST_MESSAGE_WARNING:
        gst_message_parse_warning(msg, &err, &dbg);
        vlog("warning: %s: %s", GST_OBJECT_NAME(msg->src), err ? err->message : "warning");
        break;
    case GST_MESSAGE_EOS:
        stop(v, 1, "unexpected end of stream");
        break;
    default:
        break;
    }
    g_clear_error(&err);
    g_free(dbg);
    return G_SOURCE_CONTINUE;
}

static gboolean on_unix_signal(gpointer data)
{
    stop(data, 0, "signal received");
    return G_SOURCE_CONTINUE;
}

/* ---- setup ---- */

/* Every element used, with its Debian package, so that a missing plugin is
 * named up front rather than as a failed link mid-call. */
static int check_elements(void)
{
    static const char *const need[][2] = {
        {"webrtcbin", "gstreamer1.0-plugins-bad"},      {"dtlssrtpdec", "gstreamer1.0-plugins-bad"},
        {"srtpdec", "gstreamer1.0-plugins-bad"},        {"nicesrc", "gstreamer1.0-nice"},
        {"rtpbin", "gstreamer1.0-plugins-good"},        {"rtph264depay", "gstreamer1.0-plugins-good"},
        {"rtpopusdepay", "gstreamer1.0-plugins-good"},  {"h264parse", "gstreamer1.0-plugins-bad"},
        {"openh264dec", "gstreamer1.0-plugins-bad"},    {"opusdec", "gstreamer1.0-plugins-base"},
        {"queue", "libgstreamer1.0-0"},                 {"fakesink", "libgstreamer1.0-0"},
    };
    return igw_webrtcbin_check_elements("gst_viewer", need, G_N_ELEMENTS(need));
}

/* ICE on the one address asked for (webrtcbin.h). */
static int restrict_ice(viewer *v)
{
    char err[160];
    if (igw_webrtcbin_restrict_ice(v->webrtc, v->address, err, sizeof err) == 0)
        return 0;
    vlog("error: %s", err);
    return -1;
}

/* A recvonly transceiver offering exactly caps. */
static int add_recvonly(viewer *v, const char *caps_text)
{
    GstCaps *caps = gst_caps_from_string(caps_text);
    GstWebRTCRTPTransceiver *t = NULL;

    if (!caps) {
        vlog("error: bad caps %s", caps_text);
        return -1;
    }
    g_signal_emit_by_name(v->webrtc, "add-transceiver", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY, caps, &t);
    gst_caps_unref(caps);
    if (!t) {
        vlog("error: webrtcbin refused a transceiver for %s", caps_text);
        return -1;
    }
    gst_object_unref(t);
    return 0;
}

static int build(viewer *v)
{
    GstBus *bus;

    v->pipe = gst_pipeline_new("viewer");
    v->webrtc = gst_element_factory_make("webrtcbin", "webrtc");
    if (!v->pipe || !v->webrtc) {
        vlog("error: cannot make the pipeline or webrtcbin");
        return -1;
    }
    gst_object_ref_sink(v->webrtc); /* ours as well as the bin's, until teardown */
    g_object_set(v->webrtc, "bundle-policy", GST_WEBRTC_BUNDLE_POLICY_MAX_BUNDLE, NULL);
    if (!gst_bin_add(GST_BIN(v->pipe), v->webrtc)) {
        vlog("error: cannot add webrtcbin to the pipeline");
        return -1;
    }
    /* Constrained baseline, packetization-mode 1: what a camera sends and
     * what igw's media core forwards; PLI/FIR so that a lost or paused
     * picture can be asked for again. */
    if (add_recvonly(v, "application/x-rtp,media=video,encoding-name=H264,payload=96,clock-rate=90000,"
                        "packetization-mode=(string)1,profile-level-id=(string)42e01f,"
                        "level-asymmetry-allowed=(string)1,"
                        "rtcp-fb-nack=(boolean)true,rtcp-fb-nack-pli=(boolean)true,"
                        "rtcp-fb-ccm-fir=(boolean)true") < 0)
        return -1;
    if (v->audio && add_recvonly(v, "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,"
                                    "clock-rate=48000,encoding-params=(string)2") < 0)
        return -1;
    if (restrict_ice(v) < 0)
        return -1;
    g_signal_connect(v->webrtc, "on-negotiation-needed", G_CALLBACK(on_negotiation_needed), v);
    g_signal_connect(v->webrtc, "pad-added", G_CALLBACK(on_pad_added), v);
    g_signal_connect(v->webrtc, "notify::ice-gathering-state", G_CALLBACK(on_notify), v);
    g_signal_connect(v->webrtc, "notify::connection-state", G_CALLBACK(on_notify), v);
    bus = gst_element_get_bus(v->pipe);
    v->bus_watch = gst_bus_add_watch(bus, on_bus, v);
    gst_object_unref(bus);
    if (!v->bus_watch) {
        vlog("error: cannot watch the pipeline's bus");
        return -1;
    }
    if (gst_element_set_state(v->pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        vlog("error: the pipeline does not start");
        return -1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gst_viewer [--audio] [--address IP]\n"
               "A recvonly WebRTC viewer (GStreamer webrtcbin) signaling JSON lines on\n"
               "stdin/stdout: prints a complete offer, reads the answer, decodes what it\n"
               "receives and prints stats every %d ms.\n"
               "  --audio        also a recvonly Opus audio section\n"
               "  --address IP   the only local address ICE uses (default 127.0.0.1)\n"
               "Exits 0 on stdin EOF, SIGTERM or SIGINT; 1 on an error.\n",
            STATS_MS);
}

static int parse_opts(int argc, char **argv, viewer *v)
{
    enum { O_AUDIO = 256, O_ADDRESS };
    static const struct option longopts[] = {
        {"audio", no_argument, NULL, O_AUDIO},
        {"address", required_argument, NULL, O_ADDRESS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    NiceAddress a;
    int c;

    v->address = "127.0.0.1";
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_AUDIO: v->audio = 1; break;
        case O_ADDRESS: v->address = optarg; break;
        case 'h': usage(stdout); exit(0);
        default:
            fprintf(stderr, "gst_viewer: error: unknown option or missing value: %s\n", argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gst_viewer: error: unexpected argument \"%s\"\n", argv[optind]);
        return -1;
    }
    nice_address_init(&a);
    if (!nice_address_set_from_string(&a, v->address)) {
        fprintf(stderr, "gst_viewer: error: --address %s is not an IP address\n", v->address);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    viewer *v = g_new0(viewer, 1); /* aborts on OOM; two line buffers: not for the stack */
    int code;

    v->pc_state = -1;
    if (parse_opts(argc, argv, v) < 0) {
        g_free(v);
        return 2;
    }
    /* A reader that went away must not kill us silently: writes fail instead. */
    signal(SIGPIPE, SIG_IGN);
    gst_init(NULL, NULL);
    v->loop = g_main_loop_new(NULL, FALSE);
    if (check_elements() < 0 || build(v) < 0) {
        v->exit_code = 1;
        goto out;
    }
    v->in = g_io_channel_unix_new(STDIN_FILENO);
    v->stdin_watch = g_io_add_watch(v->in, G_IO_IN | G_IO_HUP | G_IO_ERR, on_stdin, v);
    v->stats_timer = g_timeout_add(STATS_MS, on_stats, v);
    v->sig_term = g_unix_signal_add(SIGTERM, on_unix_signal, v);
    v->sig_int = g_unix_signal_add(SIGINT, on_unix_signal, v);
    vlog("recvonly H264%s, ICE on %s", v->audio ? " + Opus" : "", v->address);
    g_main_loop_run(v->loop);
out:
    v->stopping = 1;
    if (v->pipe && gst_element_set_state(v->pipe, GST_STATE_NULL) == GST_STATE_CHANGE_FAILURE && !v->exit_code) {
        vlog("error: the pipeline does not stop");
        v->exit_code = 1;
    }
    if (v->stats_timer)
        g_source_remove(v->stats_timer);
    if (v->gather_timer)
        g_source_remove(v->gather_timer);
    if (v->stdin_watch)
        g_source_remove(v->stdin_watch);
    if (v->sig_term)
        g_source_remove(v->sig_term);
    if (v->sig_int)
        g_source_remove(v->sig_int);
    if (v->bus_watch)
        g_source_remove(v->bus_watch);
    if (v->in)
        g_io_channel_unref(v->in);
    if (v->webrtc)
        gst_object_unref(v->webrtc);
    if (v->pipe)
        gst_object_unref(v->pipe);
    /* Idle callbacks queued by late notifications point at v: run them out
     * (they see v->stopping) before v goes. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_main_loop_unref(v->loop);
    gst_deinit();
    code = v->exit_code;
    g_free(v);
    return code;
}
