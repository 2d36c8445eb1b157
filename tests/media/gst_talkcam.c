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
 * The offer and answer, and the main loop around them: gstpeer.h.
 *
 * Threads: the RTP probe runs on a streaming thread (its counters under a
 * mutex); signaling, level messages and stdout on the GLib main loop.
 */
/* webrtcbin's library is "unstable API" in 1.22; we accept that knowingly. */
#define GST_USE_UNSTABLE_API 1

/* By path: under -Isrc/vcam, src/vcam/signal.h would shadow <signal.h>. */
#include "../../src/vcam/webrtcbin.h"
#include "gstpeer.h"

#include <gst/gst.h>
#include <gst/webrtc/webrtc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define STATS_MS 100

typedef struct cam {
    igw_gstpeer peer; /* signaling, the pipeline and the main loop (gstpeer.h) */
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
} cam;

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
    if (!gst_bin_add(GST_BIN(c->peer.pipe), bin) || !gst_element_sync_state_with_parent(bin)) {
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
    igw_gstpeer_log(&c->peer, "receiving %s", GST_PAD_NAME(pad));
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

/* A level measurement of what the speaker plays (main loop). */
static void on_message(GstMessage *msg, void *data)
{
    cam *c = data;
    const GstStructure *s = gst_message_get_structure(msg);
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ELEMENT && s && gst_structure_has_name(s, "level")) {
        c->levels++;
        c->rms = level_rms(s);
    }
}

static gboolean on_stats(gpointer data)
{
    cam *c = data;
    char line[320];
    GstWebRTCPeerConnectionState st;
    if (c->peer.stopping)
        return G_SOURCE_CONTINUE;
    g_object_get(c->peer.webrtc, "connection-state", &st, NULL);
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
        igw_gstpeer_emit(&c->peer, line, (size_t)len);
    return G_SOURCE_CONTINUE;
}

/* Video sendonly, audio sendrecv: the speaker. Each transceiver is found
 * from the sink pad it sends from, its kind from the caps linked there. */
static int set_directions(cam *c)
{
    int audio = 0, video = 0;
    GstIterator *it = gst_element_iterate_sink_pads(c->peer.webrtc);
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
        igw_gstpeer_log(&c->peer, "error: expected one audio and one video transceiver, got %d and %d", audio, video);
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
    c->peer.pipe = gst_parse_launch_full(
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
    if (!c->peer.pipe) {
        igw_gstpeer_log(&c->peer, "error: cannot build the pipeline: %s", err ? err->message : "?");
        g_clear_error(&err);
        return -1;
    }
    c->peer.webrtc = gst_bin_get_by_name(GST_BIN(c->peer.pipe), "webrtc");
    char why[160];
    if (!c->peer.webrtc || igw_webrtcbin_restrict_ice(c->peer.webrtc, c->peer.address, why, sizeof why) < 0) {
        igw_gstpeer_log(&c->peer, "error: %s", c->peer.webrtc ? why : "no webrtcbin");
        return -1;
    }
    if (set_directions(c) < 0)
        return -1;
    igw_gstpeer_offer_on_demand(&c->peer);
    g_signal_connect(c->peer.webrtc, "pad-added", G_CALLBACK(on_pad_added), c);
    if (igw_gstpeer_watch_bus(&c->peer, on_message, c) < 0)
        return -1;
    if (gst_element_set_state(c->peer.pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        igw_gstpeer_log(&c->peer, "error: the pipeline does not start");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cam *c = g_new0(cam, 1); /* two line buffers: not for the stack */
    const char *address = "127.0.0.1";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--address") == 0 && i + 1 < argc) {
            address = argv[++i];
        } else {
            fprintf(stderr, "usage: gst_talkcam [--address IP]\n");
            g_free(c);
            return 2;
        }
    }
    c->rms = -200;
    g_mutex_init(&c->mu);
    igw_gstpeer_init(&c->peer, "gst_talkcam", address);
    if (build(c) < 0) {
        c->peer.exit_code = 1;
    } else {
        c->peer.stats_timer = g_timeout_add(STATS_MS, on_stats, c);
        igw_gstpeer_run(&c->peer);
    }
    int code = igw_gstpeer_finish(&c->peer);
    g_mutex_clear(&c->mu);
    g_free(c);
    return code;
}
