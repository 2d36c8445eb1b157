/*
 * vcam.c - igw-vcam, a virtual WebRTC camera for tests: GStreamer webrtcbin
 * publishing H264 (test pattern with a wall clock) and Opus (440 Hz sine) as
 * two sendonly transceivers on one bundled transport. It offers (complete,
 * non-trickle: candidates inside the SDP), takes the answer back through a
 * signaling transport (signal.h) and answers PLI/FIR with a keyframe.
 *
 * Threads: GStreamer and libnice call back on their own threads; those
 * callbacks only queue work onto the main loop, where all state lives.
 * The promise waits below block the main loop for the few milliseconds
 * webrtcbin's own thread needs to reply.
 */
/* webrtcbin's library is "unstable API" in 1.22; we accept that knowingly. */
#define GST_USE_UNSTABLE_API 1

#include "signal.h"

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

#define GATHER_TIMEOUT_S 10

typedef struct vcam_opts {
    int width, height, fps, bitrate_kbps, key_int_s;
    const char *address;
    const char *pattern;
    const char *signal;
} vcam_opts;

typedef struct vcam {
    vcam_opts o;
    GMainLoop *loop;
    GstElement *pipe, *webrtc, *venc;
    igw_vcam_signal *sig;
    int exit_code;
    int stopping;
    int offered_once;       /* the first offer was made */
    int offer_pending;      /* local offer set, waiting for ICE gathering */
    int awaiting_answer;    /* offer sent, no answer yet */
    unsigned generation;    /* offers made so far */
    guint gather_timer;
    /* The first offer's ICE candidates: webrtcbin leaves them out of later
     * offers on the same transport, so they are put back from here. */
    GPtrArray *cands;       /* "candidate" attribute values */
    guint cand_mline;
    char *ufrag;
    int ice_state, pc_state; /* last states printed, -1 before any */
    gint keyframes_requested, keyframes_encoded; /* atomics: streaming threads count */
} vcam;

static int verbose;

static void vlog(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void vlog(const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One call per line: streaming threads log too. */
    fprintf(stderr, "vcam: %s\n", line);
}

#define DBG(...)                                                                                   \
    do {                                                                                           \
        if (verbose)                                                                               \
            vlog(__VA_ARGS__);                                                                     \
    } while (0)

/* Logs and ends the run with exit status 1 (the first failure wins). */
static void vcam_fail(vcam *v, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void vcam_fail(vcam *v, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    vlog("error: %s", line);
    if (!v->stopping) {
        v->stopping = 1;
        v->exit_code = 1;
        g_main_loop_quit(v->loop);
    }
}

static void vcam_stop(vcam *v, const char *why)
{
    if (v->stopping)
        return;
    vlog("stopping: %s", why);
    v->stopping = 1;
    g_main_loop_quit(v->loop);
}

/* ---- keyframes: what the encoder is asked for and what it produces ---- */

static GstPadProbeReturn on_venc_upstream(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
    vcam *v = data;
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT(info);
    const GstStructure *s;

    (void)pad;
    /* rtpsession turns a received PLI/FIR into this upstream event; the
     * payloader and webrtcbin's funnel pass it on to x264enc, which honours
     * it. Only watched here, never dropped. */
    if (GST_EVENT_TYPE(ev) == GST_EVENT_CUSTOM_UPSTREAM && (s = gst_event_get_structure(ev)) &&
        gst_structure_has_name(s, "GstForceKeyUnit")) {
        int n = g_atomic_int_add(&v->keyframes_requested, 1) + 1;
        DBG("keyframe requested (%d so far)", n);
    }
    return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn on_venc_buffer(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
    vcam *v = data;
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);

    (void)pad;
    if (buf && !GST_BUFFER_FLAG_IS_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT)) {
        int n = g_atomic_int_add(&v->keyframes_encoded, 1) + 1;
        DBG("keyframe encoded (%d so far)", n);
    }
    return GST_PAD_PROBE_OK;
}

/* ---- offer / answer ---- */

/* Waits for webrtcbin's reply to a promise. Returns 0 with *reply set (owned
 * by p, NULL when webrtcbin replied with nothing, as it does for the
 * set-*-description calls), or -1 after logging the error it carries. */
static int promise_wait(vcam *v, GstPromise *p, const char *what, const GstStructure **reply)
{
    GstPromiseResult res = gst_promise_wait(p);
    const GstStructure *r;
    GError *err = NULL;

    *reply = NULL;
    if (res != GST_PROMISE_RESULT_REPLIED) {
        vcam_fail(v, "%s: no reply from webrtcbin (promise result %d)", what, (int)res);
        return -1;
    }
    r = gst_promise_get_reply(p);
    if (r && gst_structure_has_field(r, "error")) {
        gst_structure_get(r, "error", G_TYPE_ERROR, &err, NULL);
        vcam_fail(v, "%s: %s", what, err ? err->message : "unknown error");
        g_clear_error(&err);
        return -1;
    }
    *reply = r;
    return 0;
}

static guint count_candidates(const GstSDPMessage *sdp, guint *mline)
{
    guint n = 0;

    for (guint i = 0; i < gst_sdp_message_medias_len(sdp); i++) {
        const GstSDPMedia *m = gst_sdp_message_get_media(sdp, i);
        for (guint k = 0; k < gst_sdp_media_attributes_len(m); k++)
            if (g_strcmp0(gst_sdp_media_get_attribute(m, k)->key, "candidate") == 0 && n++ == 0 && mline)
                *mline = i;
    }
    return n;
}

/* Remembers the candidates of the first offer (all in one m-section: the
 * transport is bundled). */
static void remember_candidates(vcam *v, const GstSDPMessage *sdp)
{
    const GstSDPMedia *m;

    if (v->cands || count_candidates(sdp, &v->cand_mline) == 0)
        return;
    m = gst_sdp_message_get_media(sdp, v->cand_mline);
    v->cands = g_ptr_array_new_with_free_func(g_free);
    for (guint k = 0; k < gst_sdp_media_attributes_len(m); k++) {
        const GstSDPAttribute *a = gst_sdp_media_get_attribute(m, k);
        if (g_strcmp0(a->key, "candidate") == 0 && a->value)
            g_ptr_array_add(v->cands, g_strdup(a->value));
    }
    v->ufrag = g_strdup(gst_sdp_media_get_attribute_val(m, "ice-ufrag"));
}

/* The offer text to send: the local description, with the first offer's
 * candidates put back when webrtcbin left them out (renegotiation on the
 * same ICE transport). NULL (logged) if there is no usable offer. */
static gchar *offer_text(vcam *v, const GstSDPMessage *sdp)
{
    GstSDPMessage *copy = NULL;
    GstSDPMedia *m;
    const char *ufrag;
    gchar *text;

    if (count_candidates(sdp, NULL) > 0) {
        remember_candidates(v, sdp);
        return gst_sdp_message_as_text(sdp);
    }
    if (!v->cands) {
        vcam_fail(v, "the offer has no ICE candidate (is %s an address of this host?)", v->o.address);
        return NULL;
    }
    if (v->cand_mline >= gst_sdp_message_medias_len(sdp)) {
        vcam_fail(v, "the new offer has fewer m-sections than the first");
        return NULL;
    }
    ufrag = gst_sdp_media_get_attribute_val(gst_sdp_message_get_media(sdp, v->cand_mline), "ice-ufrag");
    if (g_strcmp0(ufrag, v->ufrag) != 0) {
        vcam_fail(v, "ICE restarted (ufrag %s, was %s) but no new candidates", ufrag ? ufrag : "none", v->ufrag);
        return NULL;
    }
    if (gst_sdp_message_copy(sdp, &copy) != GST_SDP_OK) {
        vcam_fail(v, "cannot copy the local description");
        return NULL;
    }
    /* The copy is ours: writing through the getter's pointer is fine. */
    m = (GstSDPMedia *)gst_sdp_message_get_media(copy, v->cand_mline);
    for (guint i = 0; i < v->cands->len; i++)
        gst_sdp_media_add_attribute(m, "candidate", g_ptr_array_index(v->cands, i));
    text = gst_sdp_message_as_text(copy);
    gst_sdp_message_free(copy);
    return text;
}

static void send_offer_if_gathered(vcam *v)
{
    GstWebRTCICEGatheringState gs;
    GstWebRTCSessionDescription *desc = NULL;
    gchar *text;

    if (!v->offer_pending || v->stopping)
        return;
    g_object_get(v->webrtc, "ice-gathering-state", &gs, NULL);
    if (gs != GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE)
        return;
    g_object_get(v->webrtc, "local-description", &desc, NULL);
    if (!desc) {
        vcam_fail(v, "no local description after gathering");
        return;
    }
    text = offer_text(v, desc->sdp);
    gst_webrtc_session_description_free(desc);
    if (!text)
        return;
    v->offer_pending = 0;
    if (v->gather_timer) {
        g_source_remove(v->gather_timer);
        v->gather_timer = 0;
    }
    if (v->sig->ops->send_offer(v->sig, text) < 0) {
        vcam_fail(v, "cannot send the offer");
    } else {
        v->awaiting_answer = 1;
        vlog("offer %u sent (%zu bytes)", v->generation, strlen(text));
    }
    g_free(text);
}

static gboolean on_gather_timeout(gpointer data)
{
    vcam *v = data;

    v->gather_timer = 0;
    vcam_fail(v, "ICE gathering did not complete within %d s", GATHER_TIMEOUT_S);
    return G_SOURCE_REMOVE;
}

static void make_offer(vcam *v)
{
    GstWebRTCSessionDescription *offer = NULL;
    const GstStructure *reply;
    GstPromise *p;
    int rc;

    if (v->stopping)
        return;
    p = gst_promise_new();
    g_signal_emit_by_name(v->webrtc, "create-offer", NULL, p);
    rc = promise_wait(v, p, "create-offer", &reply);
    if (rc == 0 && reply)
        gst_structure_get(reply, "offer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &offer, NULL);
    gst_promise_unref(p);
    if (!offer) {
        if (rc == 0)
            vcam_fail(v, "create-offer: no offer in the reply");
        return;
    }
    p = gst_promise_new();
    g_signal_emit_by_name(v->webrtc, "set-local-description", offer, p);
    rc = promise_wait(v, p, "set-local-description", &reply);
    gst_promise_unref(p);
    gst_webrtc_session_description_free(offer);
    if (rc < 0)
        return;
    v->generation++;
    v->offer_pending = 1;
    v->awaiting_answer = 0;
    if (!v->gather_timer)
        v->gather_timer = g_timeout_add_seconds(GATHER_TIMEOUT_S, on_gather_timeout, v);
    /* On a renegotiation gathering is already complete: no notify follows. */
    send_offer_if_gathered(v);
}

static void on_answer(void *user, const char *sdp)
{
    vcam *v = user;
    GstSDPMessage *msg = NULL;
    GstWebRTCSessionDescription *answer;
    const GstStructure *reply;
    GstPromise *p;

    if (v->stopping)
        return;
    if (!v->awaiting_answer) {
        vcam_fail(v, "an answer came with no offer outstanding");
        return;
    }
    if (gst_sdp_message_new_from_text(sdp, &msg) != GST_SDP_OK || gst_sdp_message_medias_len(msg) == 0) {
        if (msg)
            gst_sdp_message_free(msg);
        vcam_fail(v, "remote description rejected: not an SDP with media");
        return;
    }
    answer = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_ANSWER, msg); /* owns msg */
    p = gst_promise_new();
    g_signal_emit_by_name(v->webrtc, "set-remote-description", answer, p);
    if (promise_wait(v, p, "remote description rejected", &reply) == 0) {
        v->awaiting_answer = 0;
        vlog("answer %u applied", v->generation);
    }
    gst_promise_unref(p);
    gst_webrtc_session_description_free(answer);
}

static void on_renegotiate(void *user)
{
    vcam *v = user;
    GstWebRTCSignalingState ss;

    g_object_get(v->webrtc, "signaling-state", &ss, NULL);
    if (ss != GST_WEBRTC_SIGNALING_STATE_STABLE || v->offer_pending) {
        vlog("renegotiation asked while an offer is outstanding, ignored");
        return;
    }
    vlog("renegotiating");
    make_offer(v);
}

static void on_close(void *user, int error)
{
    vcam *v = user;

    if (error)
        vcam_fail(v, "signaling failed (%s)", g_strerror(error));
    else
        vcam_stop(v, "signaling closed");
}

/* ---- webrtcbin notifications (any thread) -> main loop ---- */

static gboolean main_negotiation_needed(gpointer data)
{
    vcam *v = data;

    if (v->offered_once) {
        DBG("negotiation needed again, ignored (renegotiate on request)");
        return G_SOURCE_REMOVE;
    }
    v->offered_once = 1;
    make_offer(v);
    return G_SOURCE_REMOVE;
}

static void on_negotiation_needed(GstElement *webrtc, gpointer data)
{
    (void)webrtc;
    g_idle_add(main_negotiation_needed, data);
}

static const char *enum_nick(GType type, int value)
{
    GEnumClass *c = g_type_class_ref(type);
    GEnumValue *ev = g_enum_get_value(c, value);
    const char *nick = ev ? ev->value_nick : "unknown";

    g_type_class_unref(c); /* the class is static: nick stays valid */
    return nick;
}

/* One state change, carried to the main loop with the value it had when
 * notified: reading the property later would skip short-lived states. */
typedef struct state_change {
    vcam *v;
    enum { CH_GATHERING, CH_ICE, CH_PC } what;
    int value;
} state_change;

static gboolean main_state_changed(gpointer data)
{
    state_change *ch = data;
    vcam *v = ch->v;

    if (v->stopping)
        return G_SOURCE_REMOVE;
    switch (ch->what) {
    case CH_ICE:
        if (ch->value != v->ice_state) {
            v->ice_state = ch->value;
            vlog("ice state %s", enum_nick(GST_TYPE_WEBRTC_ICE_CONNECTION_STATE, ch->value));
        }
        break;
    case CH_PC:
        if (ch->value != v->pc_state) {
            v->pc_state = ch->value;
            vlog("peer connection state %s", enum_nick(GST_TYPE_WEBRTC_PEER_CONNECTION_STATE, ch->value));
            if (ch->value == GST_WEBRTC_PEER_CONNECTION_STATE_FAILED)
                vcam_fail(v, "the peer connection failed");
        }
        break;
    case CH_GATHERING:
        DBG("ice gathering %s", enum_nick(GST_TYPE_WEBRTC_ICE_GATHERING_STATE, ch->value));
        send_offer_if_gathered(v);
        break;
    }
    return G_SOURCE_REMOVE;
}

static void on_notify(GObject *obj, GParamSpec *pspec, gpointer data)
{
    state_change *ch = g_new0(state_change, 1);
    int value = 0;

    ch->v = data;
    if (strcmp(pspec->name, "ice-connection-state") == 0)
        ch->what = CH_ICE;
    else if (strcmp(pspec->name, "connection-state") == 0)
        ch->what = CH_PC;
    else
        ch->what = CH_GATHERING;
    g_object_get(obj, pspec->name, &value, NULL);
    ch->value = value;
    g_idle_add_full(G_PRIORITY_DEFAULT_IDLE, main_state_changed, ch, g_free);
}

static gboolean on_bus(GstBus *bus, GstMessage *msg, gpointer data)
{
    vcam *v = data;
    GError *err = NULL;
    gchar *dbg = NULL;

    (void)bus;
    switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR:
        gst_message_parse_error(msg, &err, &dbg);
        vcam_fail(v, "%s: %s (%s)", GST_OBJECT_NAME(msg->src), err->message, dbg ? dbg : "");
        break;
    case GST_MESSAGE_WARNING:
        gst_message_parse_warning(msg, &err, &dbg);
        vlog("warning: %s: %s", GST_OBJECT_NAME(msg->src), err->message);
        break;
    case GST_MESSAGE_EOS:
        vcam_fail(v, "unexpected end of stream");
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
    vcam_stop(data, "signal received");
    return G_SOURCE_CONTINUE;
}

/* ---- setup ---- */

/* Every element the pipeline (and webrtcbin inside) needs, with where it
 * comes from on Debian, so that a missing plugin is named up front. */
static int check_elements(void)
{
    static const char *const need[][2] = {
        {"webrtcbin", "gstreamer1.0-plugins-bad"},  {"dtlssrtpenc", "gstreamer1.0-plugins-bad"},
        {"srtpenc", "gstreamer1.0-plugins-bad"},    {"nicesink", "gstreamer1.0-nice"},
        {"rtpbin", "gstreamer1.0-plugins-good"},    {"rtph264pay", "gstreamer1.0-plugins-good"},
        {"rtpopuspay", "gstreamer1.0-plugins-good"}, {"x264enc", "gstreamer1.0-plugins-ugly"},
        {"opusenc", "gstreamer1.0-plugins-base"},   {"videotestsrc", "gstreamer1.0-plugins-base"},
        {"audiotestsrc", "gstreamer1.0-plugins-base"}, {"clockoverlay", "gstreamer1.0-plugins-base"},
        {"timeoverlay", "gstreamer1.0-plugins-base"}, {"videoconvert", "gstreamer1.0-plugins-base"},
        {"audioconvert", "gstreamer1.0-plugins-base"}, {"audioresample", "gstreamer1.0-plugins-base"},
    };
    int missing = 0;

    for (size_t i = 0; i < G_N_ELEMENTS(need); i++) {
        GstElementFactory *f = gst_element_factory_find(need[i][0]);
        if (!f) {
            vlog("error: GStreamer element %s is missing (Debian package %s)", need[i][0], need[i][1]);
            missing++;
        } else {
            gst_object_unref(f);
        }
    }
    return missing ? -1 : 0;
}

/* Confines webrtcbin's libnice agent to one local address (loopback by
 * default): without it libnice gathers every non-loopback interface. Must
 * run before the first offer starts gathering. */
static int restrict_ice(vcam *v)
{
    GstWebRTCICE *ice = NULL;
    NiceAgent *agent = NULL;
    NiceAddress addr;
    int rc = -1;

    g_object_get(v->webrtc, "ice-agent", &ice, NULL);
    if (!ice || !g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "agent")) {
        vlog("error: webrtcbin's ICE agent is not libnice's: cannot restrict it to %s", v->o.address);
        goto out;
    }
    g_object_get(ice, "agent", &agent, NULL);
    if (!agent || !NICE_IS_AGENT(agent)) {
        vlog("error: no NiceAgent behind webrtcbin");
        goto out;
    }
    nice_address_init(&addr);
    if (!nice_address_set_from_string(&addr, v->o.address)) {
        vlog("error: --address %s is not an IP address", v->o.address);
        goto out;
    }
    if (!nice_agent_add_local_address(agent, &addr)) {
        vlog("error: libnice refused local address %s", v->o.address);
        goto out;
    }
    /* UDP only: a WebRTC media server offers no ICE-TCP worth pairing with. */
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "ice-tcp"))
        g_object_set(ice, "ice-tcp", FALSE, NULL);
    rc = 0;
out:
    if (agent)
        g_object_unref(agent);
    if (ice)
        gst_object_unref(ice);
    return rc;
}

static int set_sendonly(vcam *v)
{
    GArray *ts = NULL;
    int rc = 0;

    g_signal_emit_by_name(v->webrtc, "get-transceivers", &ts);
    if (!ts || ts->len != 2) {
        vlog("error: expected 2 transceivers, webrtcbin has %u", ts ? ts->len : 0);
        rc = -1;
    } else {
        for (guint i = 0; i < ts->len; i++) {
            GstWebRTCRTPTransceiver *t = g_array_index(ts, GstWebRTCRTPTransceiver *, i);
            g_object_set(t, "direction", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY, NULL);
        }
    }
    if (ts)
        g_array_unref(ts);
    return rc;
}

static int build_pipeline(vcam *v)
{
    GError *err = NULL;
    GstPad *pad;
    gchar *desc;

    /* Video: the wall clock top left (latency by eye), running time bottom
     * right. x264enc's keyframe interval is long on purpose: keyframes
     * come when a receiver asks (PLI/FIR). The rtcp-fb fields end up as
     * a=rtcp-fb lines, without which a browser never sends PLI. */
    desc = g_strdup_printf(
        "webrtcbin name=webrtc bundle-policy=max-bundle "
        "videotestsrc is-live=true pattern=%s "
        "! video/x-raw,width=%d,height=%d,framerate=%d/1 "
        "! clockoverlay time-format=\"%%H:%%M:%%S\" halignment=left valignment=top "
        "font-desc=\"Sans 28\" shaded-background=true "
        "! timeoverlay halignment=right valignment=bottom font-desc=\"Sans 16\" "
        "! videoconvert ! queue max-size-buffers=2 max-size-bytes=0 max-size-time=0 "
        "! x264enc name=venc tune=zerolatency speed-preset=ultrafast bitrate=%d key-int-max=%d "
        "! video/x-h264,profile=constrained-baseline "
        "! rtph264pay config-interval=-1 aggregate-mode=zero-latency pt=96 "
        "! application/x-rtp,media=video,encoding-name=H264,payload=96,"
        "rtcp-fb-nack-pli=(boolean)true,rtcp-fb-ccm-fir=(boolean)true "
        "! webrtc. "
        "audiotestsrc is-live=true wave=sine freq=440 volume=0.3 "
        "! audioconvert ! audioresample ! queue max-size-time=100000000 "
        "! opusenc ! rtpopuspay pt=111 "
        "! application/x-rtp,media=audio,encoding-name=OPUS,payload=111 "
        "! webrtc. ",
        v->o.pattern, v->o.width, v->o.height, v->o.fps, v->o.bitrate_kbps,
        v->o.key_int_s * v->o.fps);
    v->pipe = gst_parse_launch_full(desc, NULL, GST_PARSE_FLAG_FATAL_ERRORS, &err);
    g_free(desc);
    if (!v->pipe) {
        vlog("error: cannot build the pipeline: %s", err ? err->message : "unknown error");
        g_clear_error(&err);
        return -1;
    }
    v->webrtc = gst_bin_get_by_name(GST_BIN(v->pipe), "webrtc");
    v->venc = gst_bin_get_by_name(GST_BIN(v->pipe), "venc");
    if (!v->webrtc || !v->venc) {
        vlog("error: pipeline without webrtcbin or encoder");
        return -1;
    }
    pad = gst_element_get_static_pad(v->venc, "src");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, on_venc_upstream, v, NULL);
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_venc_buffer, v, NULL);
    gst_object_unref(pad);

    if (restrict_ice(v) < 0 || set_sendonly(v) < 0)
        return -1;
    g_signal_connect(v->webrtc, "on-negotiation-needed", G_CALLBACK(on_negotiation_needed), v);
    g_signal_connect(v->webrtc, "notify::ice-gathering-state", G_CALLBACK(on_notify), v);
    g_signal_connect(v->webrtc, "notify::ice-connection-state", G_CALLBACK(on_notify), v);
    g_signal_connect(v->webrtc, "notify::connection-state", G_CALLBACK(on_notify), v);
    return 0;
}

/* ---- options ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: igw-vcam [options]\n"
            "A virtual WebRTC camera: offers H264 (test pattern, wall clock) and Opus\n"
            "(440 Hz) on one bundled transport and streams once answered.\n"
            "  --width N          video width (default 640)\n"
            "  --height N         video height (default 360)\n"
            "  --fps N            frames per second (default 30)\n"
            "  --bitrate-kbps N   H264 bitrate (default 1000)\n"
            "  --key-int S        seconds between unrequested keyframes (default 10)\n"
            "  --address IP       the only local address ICE uses (default 127.0.0.1)\n"
            "  --pattern P        videotestsrc pattern: smpte or ball (default smpte)\n"
            "  --signal stdio     signaling: JSON lines on stdin/stdout (the default)\n"
            "  -v, --verbose      debug logs (keyframe requests, ...)\n"
            "  -h, --help         this text\n"
            "Exits 0 on stdin EOF, SIGTERM or SIGINT.\n");
}

static int parse_int(const char *name, const char *s, int lo, int hi, int *out)
{
    char *end;
    long n;

    errno = 0;
    n = strtol(s, &end, 10);
    if (errno || end == s || *end || n < lo || n > hi) {
        fprintf(stderr, "vcam: error: --%s wants an integer in %d..%d, not \"%s\"\n", name, lo, hi, s);
        return -1;
    }
    *out = (int)n;
    return 0;
}

static int parse_opts(int argc, char **argv, vcam_opts *o)
{
    enum { O_WIDTH = 256, O_HEIGHT, O_FPS, O_BITRATE, O_KEYINT, O_ADDRESS, O_PATTERN, O_SIGNAL };
    static const struct option longopts[] = {
        {"width", required_argument, NULL, O_WIDTH},
        {"height", required_argument, NULL, O_HEIGHT},
        {"fps", required_argument, NULL, O_FPS},
        {"bitrate-kbps", required_argument, NULL, O_BITRATE},
        {"key-int", required_argument, NULL, O_KEYINT},
        {"address", required_argument, NULL, O_ADDRESS},
        {"pattern", required_argument, NULL, O_PATTERN},
        {"signal", required_argument, NULL, O_SIGNAL},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc = 0;

    *o = (vcam_opts){640, 360, 30, 1000, 10, "127.0.0.1", "smpte", "stdio"};
    opterr = 0;
    while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        switch (c) {
        case O_WIDTH: rc |= parse_int("width", optarg, 16, 3840, &o->width); break;
        case O_HEIGHT: rc |= parse_int("height", optarg, 16, 2160, &o->height); break;
        case O_FPS: rc |= parse_int("fps", optarg, 1, 120, &o->fps); break;
        case O_BITRATE: rc |= parse_int("bitrate-kbps", optarg, 16, 100000, &o->bitrate_kbps); break;
        case O_KEYINT: rc |= parse_int("key-int", optarg, 1, 3600, &o->key_int_s); break;
        case O_ADDRESS: o->address = optarg; break;
        case O_PATTERN: o->pattern = optarg; break;
        case O_SIGNAL: o->signal = optarg; break;
        case 'v': verbose = 1; break;
        case 'h': usage(stdout); exit(0);
        default:
            fprintf(stderr, "vcam: error: unknown option or missing value: %s (see --help)\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (rc)
        return -1;
    if (optind < argc) {
        fprintf(stderr, "vcam: error: unexpected argument \"%s\" (see --help)\n", argv[optind]);
        return -1;
    }
    /* 4:2:0 needs even sizes. */
    if (o->width % 2 || o->height % 2) {
        fprintf(stderr, "vcam: error: --width and --height must be even\n");
        return -1;
    }
    if (strcmp(o->pattern, "smpte") != 0 && strcmp(o->pattern, "ball") != 0) {
        fprintf(stderr, "vcam: error: --pattern is smpte or ball, not \"%s\"\n", o->pattern);
        return -1;
    }
    if (strcmp(o->signal, "stdio") != 0) {
        fprintf(stderr, "vcam: error: --signal %s: only stdio exists\n", o->signal);
        return -1;
    }
    /* Checked again by libnice; early here for a clear message. */
    NiceAddress a;
    nice_address_init(&a);
    if (!nice_address_set_from_string(&a, o->address)) {
        fprintf(stderr, "vcam: error: --address %s is not an IP address\n", o->address);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const igw_vcam_signal_cbs cbs = {on_answer, on_renegotiate, on_close};
    vcam v = {.exit_code = 0, .ice_state = -1, .pc_state = -1};
    GstBus *bus;
    guint bus_watch = 0, sig_term, sig_int;

    if (parse_opts(argc, argv, &v.o) < 0)
        return 2;
    /* A reader that went away must not kill us silently: writes fail instead. */
    signal(SIGPIPE, SIG_IGN);
    gst_init(NULL, NULL);

    if (check_elements() < 0) {
        gst_deinit();
        return 1;
    }
    v.loop = g_main_loop_new(NULL, FALSE);
    if (build_pipeline(&v) < 0) {
        v.exit_code = 1;
        goto out;
    }
    v.sig = igw_vcam_signal_stdio_new(&cbs, &v);
    if (!v.sig) {
        v.exit_code = 1;
        goto out;
    }
    bus = gst_element_get_bus(v.pipe);
    bus_watch = gst_bus_add_watch(bus, on_bus, &v);
    gst_object_unref(bus);
    sig_term = g_unix_signal_add(SIGTERM, on_unix_signal, &v);
    sig_int = g_unix_signal_add(SIGINT, on_unix_signal, &v);

    vlog("%dx%d@%d H264 %d kbit/s (keyframe every %d s or on request) + Opus, ICE on %s", v.o.width,
         v.o.height, v.o.fps, v.o.bitrate_kbps, v.o.key_int_s, v.o.address);
    if (gst_element_set_state(v.pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        vlog("error: the pipeline does not start");
        v.exit_code = 1;
    } else {
        g_main_loop_run(v.loop);
    }
    g_source_remove(sig_term);
    g_source_remove(sig_int);
    vlog("keyframes: %d requested, %d encoded", g_atomic_int_get(&v.keyframes_requested),
         g_atomic_int_get(&v.keyframes_encoded));
out:
    v.stopping = 1;
    if (v.gather_timer)
        g_source_remove(v.gather_timer);
    if (bus_watch)
        g_source_remove(bus_watch);
    if (v.pipe)
        gst_element_set_state(v.pipe, GST_STATE_NULL);
    if (v.sig)
        v.sig->ops->destroy(v.sig);
    if (v.venc)
        gst_object_unref(v.venc);
    if (v.webrtc)
        gst_object_unref(v.webrtc);
    if (v.pipe)
        gst_object_unref(v.pipe);
    if (v.cands)
        g_ptr_array_unref(v.cands);
    g_free(v.ufrag);
    /* Idle callbacks queued by late notifications point at v: drop them. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_main_loop_unref(v.loop);
    gst_deinit();
    return v.exit_code;
}
