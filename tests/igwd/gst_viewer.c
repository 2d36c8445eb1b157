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
 * connection is a state line, not an exit. The offer and answer, and the
 * main loop around them: tests/media/gstpeer.h (shared with gst_talkcam).
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
#include "../../src/vcam/webrtcbin.h"
#include "../media/gstpeer.h"

#include <getopt.h>
#include <gst/gst.h>
#include <gst/webrtc/webrtc.h>
#include <nice/agent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATS_MS 250

typedef struct viewer {
    igw_gstpeer peer; /* signaling, the pipeline and the main loop (gstpeer.h) */
    int audio;
    int pc_state; /* main loop only; -1 before any notification */
    gint frames, width, height, audio_bufs; /* atomics: streaming threads write */
} viewer;

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
    if (!gst_bin_add(GST_BIN(v->peer.pipe), bin)) { /* takes the floating ref */
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
        igw_gstpeer_log(&v->peer, "receiving %s (%s)", media, GST_PAD_NAME(pad));
    if (sinkpad)
        gst_object_unref(sinkpad);
}

/* ---- webrtcbin's connection state (any thread) -> main loop ---- */

typedef struct note {
    viewer *v;
    int value;
} note;

static gboolean main_note(gpointer data)
{
    note *n = data;
    viewer *v = n->v;
    char line[128];
    int len;

    if (v->peer.stopping)
        return G_SOURCE_REMOVE;
    if (n->value == v->pc_state)
        return G_SOURCE_REMOVE;
    v->pc_state = n->value;
    len = snprintf(line, sizeof line, "{\"type\":\"state\",\"state\":\"%s\"}", pc_nick(v));
    if (len > 0 && (size_t)len < sizeof line)
        igw_gstpeer_emit(&v->peer, line, (size_t)len);
    /* "failed" is reported, not fatal: the far end hanging up may fail the
     * connection, and the test, not the viewer, knows whether that is due. */
    igw_gstpeer_log(&v->peer, "peer connection state %s", pc_nick(v));
    return G_SOURCE_REMOVE;
}

/* Carries the value as notified: reading the property later on the main
 * loop would skip short-lived states. */
static void on_notify(GObject *obj, GParamSpec *pspec, gpointer data)
{
    note *n = g_new0(note, 1);
    int value = 0;

    n->v = data;
    g_object_get(obj, pspec->name, &value, NULL);
    n->value = value;
    g_idle_add_full(G_PRIORITY_DEFAULT_IDLE, main_note, n, g_free);
}

/* ---- main loop sources ---- */

static gboolean on_stats(gpointer data)
{
    viewer *v = data;
    char line[256];
    int len;

    if (v->peer.stopping)
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
        igw_gstpeer_emit(&v->peer, line, (size_t)len);
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
    if (igw_webrtcbin_restrict_ice(v->peer.webrtc, v->peer.address, err, sizeof err) == 0)
        return 0;
    igw_gstpeer_log(&v->peer, "error: %s", err);
    return -1;
}

/* A recvonly transceiver offering exactly caps. */
static int add_recvonly(viewer *v, const char *caps_text)
{
    GstCaps *caps = gst_caps_from_string(caps_text);
    GstWebRTCRTPTransceiver *t = NULL;

    if (!caps) {
        igw_gstpeer_log(&v->peer, "error: bad caps %s", caps_text);
        return -1;
    }
    g_signal_emit_by_name(v->peer.webrtc, "add-transceiver", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY, caps, &t);
    gst_caps_unref(caps);
    if (!t) {
        igw_gstpeer_log(&v->peer, "error: webrtcbin refused a transceiver for %s", caps_text);
        return -1;
    }
    gst_object_unref(t);
    return 0;
}

static int build(viewer *v)
{
    v->peer.pipe = gst_pipeline_new("viewer");
    v->peer.webrtc = gst_element_factory_make("webrtcbin", "webrtc");
    if (!v->peer.pipe || !v->peer.webrtc) {
        igw_gstpeer_log(&v->peer, "error: cannot make the pipeline or webrtcbin");
        return -1;
    }
    gst_object_ref_sink(v->peer.webrtc); /* ours as well as the bin's, until teardown */
    g_object_set(v->peer.webrtc, "bundle-policy", GST_WEBRTC_BUNDLE_POLICY_MAX_BUNDLE, NULL);
    if (!gst_bin_add(GST_BIN(v->peer.pipe), v->peer.webrtc)) {
        igw_gstpeer_log(&v->peer, "error: cannot add webrtcbin to the pipeline");
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
    igw_gstpeer_offer_on_demand(&v->peer);
    g_signal_connect(v->peer.webrtc, "pad-added", G_CALLBACK(on_pad_added), v);
    g_signal_connect(v->peer.webrtc, "notify::connection-state", G_CALLBACK(on_notify), v);
    if (igw_gstpeer_watch_bus(&v->peer, NULL, NULL) < 0)
        return -1;
    if (gst_element_set_state(v->peer.pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        igw_gstpeer_log(&v->peer, "error: the pipeline does not start");
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

    v->peer.address = "127.0.0.1";
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_AUDIO: v->audio = 1; break;
        case O_ADDRESS: v->peer.address = optarg; break;
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
    if (!nice_address_set_from_string(&a, v->peer.address)) {
        fprintf(stderr, "gst_viewer: error: --address %s is not an IP address\n", v->peer.address);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    viewer *v = g_new0(viewer, 1); /* aborts on OOM; two line buffers: not for the stack */

    v->pc_state = -1;
    if (parse_opts(argc, argv, v) < 0) {
        g_free(v);
        return 2;
    }
    igw_gstpeer_init(&v->peer, "gst_viewer", v->peer.address);
    if (check_elements() < 0 || build(v) < 0) {
        v->peer.exit_code = 1;
    } else {
        v->peer.stats_timer = g_timeout_add(STATS_MS, on_stats, v);
        igw_gstpeer_log(&v->peer, "recvonly H264%s, ICE on %s", v->audio ? " + Opus" : "", v->peer.address);
        igw_gstpeer_run(&v->peer);
    }
    int code = igw_gstpeer_finish(&v->peer);
    g_free(v);
    return code;
}
