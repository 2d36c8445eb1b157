/*
 * vcam.c - igw-vcam, a virtual WebRTC camera for tests: GStreamer webrtcbin
 * publishing H264 (test pattern with a wall clock) and Opus (440 Hz sine) as
 * sendonly transceivers on one bundled transport. It offers (complete,
 * non-trickle: candidates inside the SDP), takes the answer back through a
 * signaling transport (signal.h) and answers PLI/FIR with a keyframe.
 * With a speaker (talk) its audio transceiver also receives (sendrecv, or
 * recvonly without the mic): what arrives is decoded into a level meter,
 * there being no sound device, and its levels may go to --speaker-log.
 *
 * Two modes. stdio (the default): one peer with video and audio, built at
 * start, signaling as JSON lines. Device (--mqtt / --device-file): igw-vcam
 * is a device on the broker; each leg the platform invites gets a fresh
 * peer (pipeline + webrtcbin) with exactly the tracks asked, one live leg at
 * a time, torn down on bye, on a newer invite or when it fails. With
 * --record-dir it also records (recorder.h), reports the catalog, and plays
 * recordings in playback legs beside the live one (player.h).
 *
 * Threads: GStreamer, libnice and libmosquitto call back on their own
 * threads; those callbacks only queue work onto the main loop, where all
 * state lives (the speaker's branch is built on webrtcbin's pad-added, in
 * the streaming thread, as GStreamer wants; it shares only atomics). Work
 * queued for a peer carries the peer's serial and is dropped when that peer
 * is gone. The promise waits below block the main loop for the few
 * milliseconds webrtcbin's own thread needs to reply.
 */
/* webrtcbin's library is "unstable API" in 1.22; we accept that knowingly. */
#define GST_USE_UNSTABLE_API 1

#include "await.h"
#include "log.h"
#include "message.h"
#include "player.h"
#include "recorder.h"
#include "signal.h"
#include "webrtcbin.h"

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
#include <sys/prctl.h>
#include <unistd.h>

#define GATHER_TIMEOUT_S 10
/* Playback legs at once, beside the one live leg: the capability's
 * maxUpstreams is 1 + this when the camera records. */
#define PLAYBACK_MAX 3
/* Removals kept for the platform until acknowledged (the oldest go first). */
#define REMOVALS_MAX 4096

typedef struct vcam_opts {
    int width, height, fps, bitrate_kbps, key_int_s;
    const char *address;
    const char *pattern;
    const char *image;        /* --image: a still picture instead of the pattern (NULL: the pattern) */
    const char *signal;
    int device; /* --mqtt or --device-file given */
    int speaker; /* stdio: --speaker; device: mqtt.speaker (--no-speaker clears it) */
    const char *speaker_log; /* --speaker-log: one JSON line per level message */
    const char *record_dir;  /* --record-dir: record, report, play back */
    int segment_ms, retain_s;
    int die_with_parent; /* --die-with-parent: SIGTERM when the parent process dies */
    int ring_every_s;    /* --ring-every: the door-bell rings this often (0: on SIGUSR1 only) */
    igw_vcam_mqtt_config mqtt;
} vcam_opts;

typedef struct vcam vcam;

/* What the streaming threads of a speaker peer share with the main loop
 * (atomics only). Owned by the peer, freed after its pipeline is NULL, when
 * no streaming thread runs any more. */
typedef struct speaker_rx {
    gint packets; /* RTP buffers seen on webrtcbin's audio src pad */
    gint linked;  /* the playing branch is built (once per peer) */
    gint paused;  /* trackControl: the valve drops */
} speaker_rx;

/* One WebRTC peer: a pipeline with its webrtcbin. stdio has one for the
 * whole run; a device has one per leg. */
typedef struct peer {
    vcam *v;
    unsigned serial;
    char leg[IGW_VCAM_LEG_MAX + 1]; /* "" for stdio */
    char token[IGW_VCAM_TOKEN_MAX + 1]; /* the invite's msgToken */
    uint32_t revision;
    int video, audio; /* audio: the mic, sending */
    int speaker;      /* receiving audio: what the platform sends is played */
    char video_track[IGW_VCAM_ID_MAX + 1], audio_track[IGW_VCAM_ID_MAX + 1];
    speaker_rx *spk;     /* when speaker */
    guint spk_timer;     /* 1 s: packets stopping is logged */
    int spk_count;       /* packets at the last tick */
    int spk_flowing;     /* packets came during the last second */
    int spk_loud;        /* -1 unknown, 0 silent, 1 sound: level transitions logged */
    gint64 spk_dbg_us;   /* the last debug line about levels */
    GstElement *pipe, *webrtc, *venc, *vvalve, *avalve;
    guint bus_watch, gather_timer;
    int failed;          /* torn down soon; nothing more is done with it */
    int offered_once;    /* the first offer was made */
    int offer_pending;   /* local offer set, waiting for ICE gathering */
    int awaiting_answer; /* offer sent, no answer yet */
    unsigned generation; /* offers made so far */
    /* The first offer's ICE candidates: webrtcbin leaves them out of later
     * offers on the same transport, so they are put back from here. */
    GPtrArray *cands; /* "candidate" attribute values */
    guint cand_mline;
    char *ufrag;
    int ice_state, pc_state; /* last states seen, -1 before any */
    /* A playback leg: the recording it plays, loaded before the offer, and
     * the appsrcs it feeds (in place of the test sources and encoders). */
    int playback;
    igw_vcam_player *player;
    GstElement *vsrc, *asrc;
    int64_t rec_duration_ms;
    int gates_open; /* played once */
} peer;

/* A removal not yet acknowledged, and the report it went in last. */
typedef struct removal {
    char id[IGW_VCAM_RECORDING_ID_MAX + 1];
    char token[64]; /* "" when not sent since the last connection */
} removal;

struct vcam {
    vcam_opts o;
    GMainLoop *loop;
    igw_vcam_signal *sig;
    peer *peer; /* the live peer, or NULL (device mode between legs) */
    peer *pb[PLAYBACK_MAX]; /* playback legs (device mode with --record-dir) */
    igw_vcam_recorder *rec; /* --record-dir */
    GArray *removals;       /* removal, oldest first */
    /* The catalog reports without their reply: while any is, the whole
     * catalog goes again with backoff (igwd may not have listened when
     * they went: a fresh start, a broker restart). */
    igw_vcam_await cat;
    unsigned serials;
    FILE *spk_log;      /* --speaker-log, or NULL */
    int spk_log_failed; /* a write failed: logged once, nothing written after */
    igw_vcam_messages *msgs; /* device mode: the voice messages it plays */
    int exit_code;
    int stopping;
    gint keyframes_requested, keyframes_encoded; /* atomics: streaming threads count */
};

/* What a callback on another thread carries: the camera and which peer. */
typedef struct peer_tag {
    vcam *v;
    unsigned serial;
} peer_tag;

static int verbose;

#define vlog(...) igw_vcam_log("", __VA_ARGS__)

#define DBG(...)                                                                                   \
    do {                                                                                           \
        if (verbose)                                                                               \
            vlog(__VA_ARGS__);                                                                     \
    } while (0)

static void vcam_stop(vcam *v, const char *why)
{
    if (v->stopping)
        return;
    vlog("stopping: %s", why);
    v->stopping = 1;
    g_main_loop_quit(v->loop);
}

/* The leg with serial, live or playback, or NULL. */
static peer *peer_by_serial(vcam *v, unsigned serial)
{
    if (v->peer && v->peer->serial == serial)
        return v->peer;
    for (int i = 0; i < PLAYBACK_MAX; i++)
        if (v->pb[i] && v->pb[i]->serial == serial)
            return v->pb[i];
    return NULL;
}

/* The leg with id leg, live or playback, or NULL. */
static peer *peer_by_leg(vcam *v, const char *leg)
{
    if (v->peer && strcmp(v->peer->leg, leg) == 0)
        return v->peer;
    for (int i = 0; i < PLAYBACK_MAX; i++)
        if (v->pb[i] && strcmp(v->pb[i]->leg, leg) == 0)
            return v->pb[i];
    return NULL;
}

/* The peer a tag names, if it is still an active one. */
static peer *peer_of(const peer_tag *t)
{
    peer *p = peer_by_serial(t->v, t->serial);

    return p && !p->failed && !t->v->stopping ? p : NULL;
}

static peer_tag *tag_new(peer *p)
{
    peer_tag *t = g_new(peer_tag, 1);

    t->v = p->v;
    t->serial = p->serial;
    return t;
}

static void peer_free(peer *p)
{
    if (!p)
        return;
    if (p->gather_timer)
        g_source_remove(p->gather_timer);
    if (p->spk_timer)
        g_source_remove(p->spk_timer);
    if (p->bus_watch)
        g_source_remove(p->bus_watch);
    /* The player first: it pushes into this pipeline's appsrcs. */
    igw_vcam_player_free(p->player);
    if (p->vsrc)
        gst_object_unref(p->vsrc);
    if (p->asrc)
        gst_object_unref(p->asrc);
    if (p->pipe)
        gst_element_set_state(p->pipe, GST_STATE_NULL);
    if (p->avalve)
        gst_object_unref(p->avalve);
    if (p->vvalve)
        gst_object_unref(p->vvalve);
    if (p->venc)
        gst_object_unref(p->venc);
    if (p->webrtc)
        gst_object_unref(p->webrtc);
    if (p->pipe)
        gst_object_unref(p->pipe);
    if (p->cands)
        g_ptr_array_unref(p->cands);
    /* After the pipeline is NULL: no streaming thread touches it now. */
    g_free(p->spk);
    g_free(p->ufrag);
    g_free(p);
}

/* Ends leg p on the camera's side (device mode). */
static void leg_end(vcam *v, peer *p, const char *why)
{
    if (!p)
        return;
    vlog("%sleg %s revision %u ended: %s", p->playback ? "playback " : "", p->leg, p->revision, why);
    if (v->peer == p)
        v->peer = NULL;
    for (int i = 0; i < PLAYBACK_MAX; i++)
        if (v->pb[i] == p)
            v->pb[i] = NULL;
    peer_free(p);
}

static gboolean main_reap(gpointer data)
{
    peer_tag *t = data;
    peer *p = peer_by_serial(t->v, t->serial);

    if (p)
        leg_end(t->v, p, "failed");
    return G_SOURCE_REMOVE;
}

/* A peer failed. stdio: the run ends with exit status 1 (the first failure
 * wins). Device: the leg ends with a bye "cameraError" and the camera
 * stays; the peer is freed from an idle callback, since the caller may
 * still be using it: callers check p->failed after anything that can fail. */
static void peer_fail(peer *p, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void peer_fail(peer *p, const char *fmt, ...)
{
    vcam *v = p->v;
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    vlog("error: %s", line);
    if (!v->o.device) {
        if (!v->stopping) {
            v->stopping = 1;
            v->exit_code = 1;
            g_main_loop_quit(v->loop);
        }
        p->failed = 1;
        return;
    }
    if (p->failed)
        return;
    p->failed = 1;
    if (!v->stopping && v->sig->ops->send_bye(v->sig, p->leg, "cameraError") == 0)
        vlog("bye sent for leg %s (cameraError)", p->leg);
    g_idle_add_full(G_PRIORITY_DEFAULT, main_reap, tag_new(p), g_free);
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

/* Asks the encoder for a keyframe now, as a PLI would. */
static void request_keyframe(peer *p)
{
    GstStructure *st;
    GstPad *pad;

    if (!p->venc)
        return;
    st = gst_structure_new("GstForceKeyUnit", "all-headers", G_TYPE_BOOLEAN, TRUE, NULL);
    pad = gst_element_get_static_pad(p->venc, "src");
    if (pad) {
        if (!gst_pad_send_event(pad, gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM, st)))
            vlog("warning: the encoder refused a keyframe request");
        gst_object_unref(pad);
    } else {
        gst_structure_free(st);
    }
}

/* ---- the speaker: what the platform sends is played ---- */

/* The playing branch of a speaker: no sound device here, so the level
 * element is what "hears" it (50 ms windows, posted on the bus). */
#define SPEAKER_BRANCH                                                                             \
    "valve name=spkvalve drop=false ! rtpopusdepay ! opusdec ! audioconvert "                      \
    "! level name=spklevel interval=50000000 post-messages=true ! fakesink sync=false async=false"
/* What -inf dB (digital silence) becomes in the speaker log: JSON has no
 * infinity. */
#define SPEAKER_FLOOR_DB -120.0
/* Level transitions logged, with hysteresis so that a tone's ripple does
 * not flap: sound above -50 dB, silent below -60 dB. */
#define SPEAKER_SOUND_DB -50.0
#define SPEAKER_SILENT_DB -60.0

/* Streaming thread: counts the speaker's RTP, logs the first packet. */
static GstPadProbeReturn on_speaker_rtp(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
    speaker_rx *s = data;
    guint n = 1;

    (void)pad;
    if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER_LIST)
        n = gst_buffer_list_length(GST_PAD_PROBE_INFO_BUFFER_LIST(info));
    if (n && g_atomic_int_add(&s->packets, (gint)n) == 0)
        vlog("speaker: first packet");
    return GST_PAD_PROBE_OK;
}

/* Links a fresh element (or bin with a ghost sink pad) to pad inside
 * webrtc's pipeline, playing. -1 (logged) when it cannot. */
static int speaker_attach(GstElement *webrtc, GstPad *pad, GstElement *e)
{
    GstObject *parent = gst_element_get_parent(webrtc);
    GstPad *sink = NULL;
    int rc = -1;

    if (!parent) {
        vlog("error: speaker: webrtcbin has no pipeline");
        gst_object_unref(gst_object_ref_sink(e));
        return -1;
    }
    /* gst_bin_add takes the floating e even when it fails: e is gone then. */
    if (!gst_bin_add(GST_BIN(parent), e)) {
        vlog("error: speaker: cannot add a branch to the pipeline");
        gst_object_unref(parent);
        return -1;
    }
    /* Playing before linked: the first buffer finds it ready. */
    if (!gst_element_sync_state_with_parent(e))
        vlog("error: speaker: %s does not start", GST_OBJECT_NAME(e));
    else if (!(sink = gst_element_get_static_pad(e, "sink")) || gst_pad_link(pad, sink) != GST_PAD_LINK_OK)
        vlog("error: speaker: cannot link %s", GST_OBJECT_NAME(e));
    else
        rc = 0;
    if (sink)
        gst_object_unref(sink);
    gst_object_unref(parent);
    return rc;
}

/* Streaming thread (webrtcbin's pad-added): the remote audio of the
 * speaker's transceiver appears; the playing branch goes behind it. Any
 * other stream (none is negotiated) is sunk, so that it cannot stall the
 * transport with not-linked. Failures are logged; that stream then goes
 * unplayed. */
static void on_pad_added(GstElement *webrtc, GstPad *pad, gpointer data)
{
    speaker_rx *s = data;
    GstCaps *caps;
    const GstStructure *st;
    const char *enc;
    GstElement *e;
    GError *err = NULL;
    int opus = 0;

    if (GST_PAD_DIRECTION(pad) != GST_PAD_SRC)
        return;
    caps = gst_pad_get_current_caps(pad);
    if (!caps)
        caps = gst_pad_query_caps(pad, NULL);
    st = caps && gst_caps_get_size(caps) > 0 ? gst_caps_get_structure(caps, 0) : NULL;
    enc = st ? gst_structure_get_string(st, "encoding-name") : NULL;
    opus = st && g_strcmp0(gst_structure_get_string(st, "media"), "audio") == 0 && enc &&
           g_ascii_strcasecmp(enc, "OPUS") == 0;
    if (caps)
        gst_caps_unref(caps);
    if (!opus || !g_atomic_int_compare_and_exchange(&s->linked, 0, 1)) {
        vlog("speaker: %s stream on %s, not the speaker's: dropped", opus ? "a second Opus" : "a non-Opus",
             GST_PAD_NAME(pad));
        if (!(e = gst_element_factory_make("fakesink", NULL)))
            return;
        g_object_set(e, "sync", FALSE, "async", FALSE, NULL);
        speaker_attach(webrtc, pad, e);
        return;
    }
    e = gst_parse_bin_from_description(SPEAKER_BRANCH, TRUE, &err);
    if (!e) {
        vlog("error: speaker: cannot build the branch: %s", err ? err->message : "unknown error");
        g_clear_error(&err);
        return;
    }
    gst_object_set_name(GST_OBJECT(e), "speaker");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, on_speaker_rtp, s, NULL);
    if (speaker_attach(webrtc, pad, e) == 0) {
        /* A pause that came while the branch was being built holds too. */
        GstElement *valve = gst_bin_get_by_name(GST_BIN(e), "spkvalve");
        if (valve) {
            g_object_set(valve, "drop", g_atomic_int_get(&s->paused) ? TRUE : FALSE, NULL);
            gst_object_unref(valve);
        }
        vlog("speaker: playing %s (rtpopusdepay, opusdec, level)", GST_PAD_NAME(pad));
    }
}

/* The loudest channel's value of a level field in dB; -inf (and anything
 * below) becomes SPEAKER_FLOOR_DB, NaN too. */
static double level_db(const GstStructure *st, const char *field)
{
    const GValue *v = gst_structure_get_value(st, field);
    double best = SPEAKER_FLOOR_DB;

    /* level posts GValueArray, deprecated in GLib (not in GStreamer 1.22);
     * its type macro warns even when deprecations are silenced, hence the
     * name. */
    if (!v || !G_VALUE_HOLDS_BOXED(v) || strcmp(G_VALUE_TYPE_NAME(v), "GValueArray") != 0)
        return best;
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    const GValueArray *a = g_value_get_boxed(v);
    for (guint i = 0; a && i < a->n_values && i < 64; i++) {
        const GValue *c = &a->values[i];
        double db = c && G_VALUE_HOLDS_DOUBLE(c) ? g_value_get_double(c) : SPEAKER_FLOOR_DB;
        if (db == db && db > best) /* db == db: not NaN */
            best = db;
    }
    G_GNUC_END_IGNORE_DEPRECATIONS
    return best > 0.0 ? 0.0 : best;
}

/* s as the inside of a JSON string: quotes, backslashes and control
 * characters escaped (\u00XX), UTF-8 kept. g_free it. */
static gchar *json_escape(const char *s)
{
    GString *o = g_string_sized_new(strlen(s) + 8);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_printf(o, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            g_string_append_printf(o, "\\u%04x", *p);
        else
            g_string_append_c(o, (gchar)*p);
    }
    return g_string_free(o, FALSE);
}

/* One line of --speaker-log, flushed (a test tails the file); message:
 * the voice message that played it (NULL: what a leg's speaker played). */
static void speaker_log_line(vcam *v, gint64 now_us, double rms, double peak, const char *message)
{
    if (!v->spk_log || v->spk_log_failed)
        return;
    gchar *m = message ? json_escape(message) : NULL;
    if (fprintf(v->spk_log, "{\"at_ms\":%lld,\"rms_db\":%.2f,\"peak_db\":%.2f%s%s%s}\n", (long long)(now_us / 1000),
                rms, peak, m ? ",\"message\":\"" : "", m ? m : "", m ? "\"" : "") < 0 ||
        fflush(v->spk_log) != 0) {
        vlog("error: --speaker-log: %s; nothing more is written", g_strerror(errno));
        v->spk_log_failed = 1;
    }
    g_free(m);
}

/* Main loop: one level message of the speaker's branch. */
static void speaker_level(peer *p, const GstStructure *st)
{
    vcam *v = p->v;
    double rms = level_db(st, "rms"), peak = level_db(st, "peak");
    gint64 now = g_get_real_time();

    speaker_log_line(v, now, rms, peak, NULL);
    if (now - p->spk_dbg_us >= G_USEC_PER_SEC) {
        p->spk_dbg_us = now;
        DBG("speaker: rms %.1f dB, peak %.1f dB", rms, peak);
    }
    if (p->spk_loud != 1 && rms > SPEAKER_SOUND_DB) {
        p->spk_loud = 1;
        vlog("speaker: sound (rms %.1f dB)", rms);
    } else if (p->spk_loud != 0 && rms < SPEAKER_SILENT_DB) {
        p->spk_loud = 0;
        vlog("speaker: silent (rms %.1f dB)", rms);
    }
}

/* Main loop, every second of a speaker peer: packets that stop (the
 * sender removed its track, or the path broke) are logged once. */
static gboolean on_speaker_tick(gpointer data)
{
    peer *p = data;
    int n = g_atomic_int_get(&p->spk->packets);

    if (n != p->spk_count) {
        p->spk_flowing = 1;
    } else if (p->spk_flowing) {
        p->spk_flowing = 0;
        vlog("speaker: silent (no packets for 1 s, %d so far)", n);
    }
    p->spk_count = n;
    return G_SOURCE_CONTINUE;
}

/* ---- offer / answer ---- */

/* Waits for webrtcbin's reply to a promise. Returns 0 with *reply set (owned
 * by pr, NULL when webrtcbin replied with nothing, as it does for the
 * set-*-description calls), or -1 after failing the peer with the error it
 * carries. */
static int promise_wait(peer *p, GstPromise *pr, const char *what, const GstStructure **reply)
{
    GstPromiseResult res = gst_promise_wait(pr);
    const GstStructure *r;
    GError *err = NULL;

    *reply = NULL;
    if (res != GST_PROMISE_RESULT_REPLIED) {
        peer_fail(p, "%s: no reply from webrtcbin (promise result %d)", what, (int)res);
        return -1;
    }
    r = gst_promise_get_reply(pr);
    if (r && gst_structure_has_field(r, "error")) {
        gst_structure_get(r, "error", G_TYPE_ERROR, &err, NULL);
        peer_fail(p, "%s: %s", what, err ? err->message : "unknown error");
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
static void remember_candidates(peer *p, const GstSDPMessage *sdp)
{
    const GstSDPMedia *m;

    if (p->cands || count_candidates(sdp, &p->cand_mline) == 0)
        return;
    m = gst_sdp_message_get_media(sdp, p->cand_mline);
    p->cands = g_ptr_array_new_with_free_func(g_free);
    for (guint k = 0; k < gst_sdp_media_attributes_len(m); k++) {
        const GstSDPAttribute *a = gst_sdp_media_get_attribute(m, k);
        if (g_strcmp0(a->key, "candidate") == 0 && a->value)
            g_ptr_array_add(p->cands, g_strdup(a->value));
    }
    p->ufrag = g_strdup(gst_sdp_media_get_attribute_val(m, "ice-ufrag"));
}

/* The offer text to send: the local description, with the first offer's
 * candidates put back when webrtcbin left them out (renegotiation on the
 * same ICE transport). NULL (peer failed) if there is no usable offer. */
static gchar *offer_text(peer *p, const GstSDPMessage *sdp)
{
    GstSDPMessage *copy = NULL;
    GstSDPMedia *m;
    const char *ufrag;
    gchar *text;

    if (count_candidates(sdp, NULL) > 0) {
        remember_candidates(p, sdp);
        return gst_sdp_message_as_text(sdp);
    }
    if (!p->cands) {
        peer_fail(p, "the offer has no ICE candidate (is %s an address of this host?)", p->v->o.address);
        return NULL;
    }
    if (p->cand_mline >= gst_sdp_message_medias_len(sdp)) {
        peer_fail(p, "the new offer has fewer m-sections than the first");
        return NULL;
    }
    ufrag = gst_sdp_media_get_attribute_val(gst_sdp_message_get_media(sdp, p->cand_mline), "ice-ufrag");
    if (g_strcmp0(ufrag, p->ufrag) != 0) {
        peer_fail(p, "ICE restarted (ufrag %s, was %s) but no new candidates", ufrag ? ufrag : "none", p->ufrag);
        return NULL;
    }
    if (gst_sdp_message_copy(sdp, &copy) != GST_SDP_OK) {
        peer_fail(p, "cannot copy the local description");
        return NULL;
    }
    /* The copy is ours: writing through the getter's pointer is fine. */
    m = (GstSDPMedia *)gst_sdp_message_get_media(copy, p->cand_mline);
    for (guint i = 0; i < p->cands->len; i++)
        gst_sdp_media_add_attribute(m, "candidate", g_ptr_array_index(p->cands, i));
    text = gst_sdp_message_as_text(copy);
    gst_sdp_message_free(copy);
    return text;
}

static void send_offer_if_gathered(peer *p)
{
    vcam *v = p->v;
    GstWebRTCICEGatheringState gs;
    GstWebRTCSessionDescription *desc = NULL;
    gchar *text;

    if (!p->offer_pending || p->failed || v->stopping)
        return;
    g_object_get(p->webrtc, "ice-gathering-state", &gs, NULL);
    if (gs != GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE)
        return;
    g_object_get(p->webrtc, "local-description", &desc, NULL);
    if (!desc) {
        peer_fail(p, "no local description after gathering");
        return;
    }
    text = offer_text(p, desc->sdp);
    gst_webrtc_session_description_free(desc);
    if (!text)
        return;
    p->offer_pending = 0;
    if (p->gather_timer) {
        g_source_remove(p->gather_timer);
        p->gather_timer = 0;
    }
    if (v->sig->ops->send_offer(v->sig, p->leg, p->revision, text) < 0) {
        peer_fail(p, "cannot send the offer");
    } else {
        p->awaiting_answer = 1;
        if (v->o.device)
            vlog("offer for leg %s revision %u sent (%zu bytes)", p->leg, p->revision, strlen(text));
        else
            vlog("offer %u sent (%zu bytes)", p->generation, strlen(text));
    }
    g_free(text);
}

static gboolean on_gather_timeout(gpointer data)
{
    peer *p = data;

    p->gather_timer = 0;
    peer_fail(p, "ICE gathering did not complete within %d s", GATHER_TIMEOUT_S);
    return G_SOURCE_REMOVE;
}

static void make_offer(peer *p)
{
    GstWebRTCSessionDescription *offer = NULL;
    const GstStructure *reply;
    GstPromise *pr;
    int rc;

    if (p->failed || p->v->stopping)
        return;
    pr = gst_promise_new();
    g_signal_emit_by_name(p->webrtc, "create-offer", NULL, pr);
    rc = promise_wait(p, pr, "create-offer", &reply);
    if (rc == 0 && reply)
        gst_structure_get(reply, "offer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &offer, NULL);
    gst_promise_unref(pr);
    if (!offer) {
        if (rc == 0)
            peer_fail(p, "create-offer: no offer in the reply");
        return;
    }
    pr = gst_promise_new();
    g_signal_emit_by_name(p->webrtc, "set-local-description", offer, pr);
    rc = promise_wait(p, pr, "set-local-description", &reply);
    gst_promise_unref(pr);
    gst_webrtc_session_description_free(offer);
    if (rc < 0)
        return;
    p->generation++;
    p->offer_pending = 1;
    p->awaiting_answer = 0;
    if (!p->gather_timer)
        p->gather_timer = g_timeout_add_seconds(GATHER_TIMEOUT_S, on_gather_timeout, p);
    /* On a renegotiation gathering is already complete: no notify follows. */
    send_offer_if_gathered(p);
}

static void on_answer(void *user, const char *leg, uint32_t revision, const char *sdp)
{
    vcam *v = user;
    peer *p = peer_by_leg(v, leg);
    GstSDPMessage *msg = NULL;
    GstWebRTCSessionDescription *answer;
    const GstStructure *reply;
    GstPromise *pr;

    if (v->stopping || !p || p->failed) {
        if (v->o.device && !v->stopping)
            vlog("answer for leg %s, which is not active, ignored", leg);
        return;
    }
    if (strcmp(leg, p->leg) != 0 || revision != p->revision) {
        vlog("answer for leg %s revision %u, the active one is %s revision %u: ignored", leg, revision, p->leg,
             p->revision);
        return;
    }
    if (!p->awaiting_answer) {
        peer_fail(p, "an answer came with no offer outstanding");
        return;
    }
    if (gst_sdp_message_new_from_text(sdp, &msg) != GST_SDP_OK || gst_sdp_message_medias_len(msg) == 0) {
        if (msg)
            gst_sdp_message_free(msg);
        peer_fail(p, "remote description rejected: not an SDP with media");
        return;
    }
    answer = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_ANSWER, msg); /* owns msg */
    pr = gst_promise_new();
    g_signal_emit_by_name(p->webrtc, "set-remote-description", answer, pr);
    if (promise_wait(p, pr, "remote description rejected", &reply) == 0) {
        p->awaiting_answer = 0;
        if (v->o.device)
            vlog("answer for leg %s revision %u applied", p->leg, p->revision);
        else
            vlog("answer %u applied", p->generation);
    }
    gst_promise_unref(pr);
    gst_webrtc_session_description_free(answer);
}

static void on_renegotiate(void *user)
{
    vcam *v = user;
    peer *p = v->peer;
    GstWebRTCSignalingState ss;

    if (!p || p->failed)
        return;
    g_object_get(p->webrtc, "signaling-state", &ss, NULL);
    if (ss != GST_WEBRTC_SIGNALING_STATE_STABLE || p->offer_pending) {
        vlog("renegotiation asked while an offer is outstanding, ignored");
        return;
    }
    vlog("renegotiating");
    make_offer(p);
}

static void on_close(void *user, int error)
{
    vcam *v = user;

    if (error) {
        vlog("error: signaling failed (%s)", g_strerror(error));
        if (!v->stopping) {
            v->stopping = 1;
            v->exit_code = 1;
            g_main_loop_quit(v->loop);
        }
    } else {
        vcam_stop(v, "signaling closed");
    }
}

/* ---- webrtcbin notifications (any thread) -> main loop ---- */

static gboolean main_negotiation_needed(gpointer data)
{
    peer *p = peer_of(data);

    if (!p)
        return G_SOURCE_REMOVE;
    if (p->offered_once) {
        DBG("negotiation needed again, ignored (renegotiate on request)");
        return G_SOURCE_REMOVE;
    }
    p->offered_once = 1;
    make_offer(p);
    return G_SOURCE_REMOVE;
}

static void on_negotiation_needed(GstElement *webrtc, gpointer data)
{
    peer_tag *t = data;

    (void)webrtc;
    g_idle_add_full(G_PRIORITY_DEFAULT_IDLE, main_negotiation_needed, g_memdup2(t, sizeof *t), g_free);
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
    peer_tag t;
    enum { CH_GATHERING, CH_ICE, CH_PC } what;
    int value;
} state_change;

static void pc_state_changed(peer *p, int value)
{
    vcam *v = p->v;
    const char *nick = enum_nick(GST_TYPE_WEBRTC_PEER_CONNECTION_STATE, value);

    vlog("peer connection state %s", nick);
    if (!v->o.device) {
        if (value == GST_WEBRTC_PEER_CONNECTION_STATE_FAILED)
            peer_fail(p, "the peer connection failed");
        return;
    }
    /* "new" is where every peer starts: nothing to report. A failed peer
     * is reported and kept: the platform decides (bye or a new invite). */
    if (value != GST_WEBRTC_PEER_CONNECTION_STATE_NEW &&
        v->sig->ops->send_state(v->sig, p->leg, p->revision, nick) < 0)
        vlog("error: cannot report state %s of leg %s", nick, p->leg);
}

static gboolean main_state_changed(gpointer data)
{
    state_change *ch = data;
    peer *p = peer_of(&ch->t);

    if (!p)
        return G_SOURCE_REMOVE;
    switch (ch->what) {
    case CH_ICE:
        if (ch->value != p->ice_state) {
            p->ice_state = ch->value;
            vlog("ice state %s", enum_nick(GST_TYPE_WEBRTC_ICE_CONNECTION_STATE, ch->value));
        }
        break;
    case CH_PC:
        if (ch->value != p->pc_state) {
            p->pc_state = ch->value;
            pc_state_changed(p, ch->value);
        }
        break;
    case CH_GATHERING:
        DBG("ice gathering %s", enum_nick(GST_TYPE_WEBRTC_ICE_GATHERING_STATE, ch->value));
        send_offer_if_gathered(p);
        break;
    }
    return G_SOURCE_REMOVE;
}

static void on_notify(GObject *obj, GParamSpec *pspec, gpointer data)
{
    state_change *ch = g_new0(state_change, 1);
    int value = 0;

    ch->t = *(peer_tag *)data;
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
    peer *p = peer_of(data);
    GError *err = NULL;
    gchar *dbg = NULL;

    (void)bus;
    if (!p)
        return G_SOURCE_CONTINUE;
    switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR:
        gst_message_parse_error(msg, &err, &dbg);
        peer_fail(p, "%s: %s (%s)", GST_OBJECT_NAME(msg->src), err->message, dbg ? dbg : "");
        break;
    case GST_MESSAGE_WARNING:
        gst_message_parse_warning(msg, &err, &dbg);
        vlog("warning: %s: %s", GST_OBJECT_NAME(msg->src), err->message);
        break;
    case GST_MESSAGE_EOS:
        peer_fail(p, "unexpected end of stream");
        break;
    case GST_MESSAGE_ELEMENT:
        if (p->speaker && gst_message_has_name(msg, "level"))
            speaker_level(p, gst_message_get_structure(msg));
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

/* The door-bell button (SIGUSR1, --ring-every): a ring goes up; the
 * platform's ringReply and its leg's invite follow. */
static gboolean on_ring(gpointer data)
{
    vcam *v = data;
    char tok[64];

    if (v->stopping)
        return G_SOURCE_CONTINUE;
    if (!v->sig->ops->send_ring || v->sig->ops->send_ring(v->sig, tok, sizeof tok) < 0)
        vlog("ring: not sent (not connected, or no door-bell)");
    else
        vlog("ring %s sent (camera %s)", tok, v->o.mqtt.camera_id);
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
        {"valve", "gstreamer1.0-plugins-base (coreelements: libgstreamer1.0-0)"},
        {"rtpopusdepay", "gstreamer1.0-plugins-good"}, {"opusdec", "gstreamer1.0-plugins-base"},
        {"level", "gstreamer1.0-plugins-good"}, {"fakesink", "libgstreamer1.0-0 (coreelements)"},
    };
    return igw_webrtcbin_check_elements("vcam", need, G_N_ELEMENTS(need));
}

/* ICE on the one address asked for (webrtcbin.h). */
static int restrict_ice(peer *p)
{
    char err[160];
    if (igw_webrtcbin_restrict_ice(p->webrtc, p->v->o.address, err, sizeof err) == 0)
        return 0;
    vlog("error: %s", err);
    return -1;
}

/* The mic's transceiver: the one behind the webrtcbin sink pad that the
 * named capsfilter "acaps" feeds. A new reference, or NULL. */
static GstWebRTCRTPTransceiver *mic_transceiver(peer *p)
{
    GstElement *caps = gst_bin_get_by_name(GST_BIN(p->pipe), "acaps");
    GstPad *src = caps ? gst_element_get_static_pad(caps, "src") : NULL;
    GstPad *sink = src ? gst_pad_get_peer(src) : NULL;
    GstWebRTCRTPTransceiver *t = NULL;

    /* webrtcbin's sink pads carry their transceiver as a property. */
    if (sink && g_object_class_find_property(G_OBJECT_GET_CLASS(sink), "transceiver"))
        g_object_get(sink, "transceiver", &t, NULL);
    if (sink)
        gst_object_unref(sink);
    if (src)
        gst_object_unref(src);
    if (caps)
        gst_object_unref(caps);
    return t;
}

/* The speaker's transceiver, a new reference (NULL: logged). With the mic
 * it is the mic's (one audio m-line, to be sendrecv); alone a recvonly one
 * of its own, Opus offered through its codec preferences. */
static GstWebRTCRTPTransceiver *speaker_transceiver(peer *p)
{
    GstWebRTCRTPTransceiver *t = NULL;
    GstCaps *caps;

    if (p->audio) {
        if (!(t = mic_transceiver(p)))
            vlog("error: speaker: the mic's transceiver is not found");
        return t;
    }
    caps = gst_caps_from_string("application/x-rtp,media=audio,encoding-name=OPUS,payload=111,"
                                "clock-rate=48000,encoding-params=(string)2");
    if (!caps) {
        vlog("error: speaker: bad caps");
        return NULL;
    }
    g_signal_emit_by_name(p->webrtc, "add-transceiver", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY, caps, &t);
    gst_caps_unref(caps);
    if (!t)
        vlog("error: speaker: webrtcbin did not add a transceiver");
    return t;
}

/* Every transceiver sends only, except the speaker's (spk, may be NULL):
 * sendrecv when it is the mic's too, recvonly alone. */
static int set_directions(peer *p, GstWebRTCRTPTransceiver *spk)
{
    GArray *ts = NULL;
    guint want = (guint)(p->video + (p->audio || p->speaker));
    int rc = 0;

    g_signal_emit_by_name(p->webrtc, "get-transceivers", &ts);
    if (!ts || ts->len != want) {
        vlog("error: expected %u transceivers, webrtcbin has %u", want, ts ? ts->len : 0);
        rc = -1;
    } else {
        for (guint i = 0; i < ts->len; i++) {
            GstWebRTCRTPTransceiver *t = g_array_index(ts, GstWebRTCRTPTransceiver *, i);
            GstWebRTCRTPTransceiverDirection d = GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY;
            if (t == spk)
                d = p->audio ? GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDRECV
                             : GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY;
            g_object_set(t, "direction", d, NULL);
        }
    }
    if (ts)
        g_array_unref(ts);
    return rc;
}

/* A playback leg's appsrcs take the caps the player puts out; the player
 * feeds them from its first play on. 0 or -1 (logged). */
static int playback_caps(peer *p)
{
    GstElement *src[2] = {p->vsrc, p->asrc};

    for (int i = 0; i < 2; i++) {
        GstCaps *caps;
        if (!src[i])
            continue;
        if (!(caps = igw_vcam_player_caps(p->player, i == 0))) {
            vlog("error: the recording's %s has no caps", i == 0 ? "video" : "audio");
            return -1;
        }
        g_object_set(src[i], "caps", caps, NULL);
        gst_caps_unref(caps);
    }
    igw_vcam_player_attach(p->player, p->vsrc, p->asrc);
    igw_vcam_player_prime(p->player);
    return 0;
}

/* The first play opens a playback leg's gates for good (pausing is the
 * player's). */
static void playback_open(peer *p)
{
    static const char *const names[] = {"vgate", "agate"};

    if (p->gates_open)
        return;
    for (int i = 0; i < 2; i++) {
        GstElement *g = gst_bin_get_by_name(GST_BIN(p->pipe), names[i]);
        if (g) {
            g_object_set(g, "drop", FALSE, NULL);
            gst_object_unref(g);
        }
    }
    p->gates_open = 1;
}

/* Builds p's pipeline with the tracks it has. Returns 0 or -1 (logged);
 * on failure the caller frees p. */
static int build_pipeline(peer *p)
{
    const vcam_opts *o = &p->v->o;
    GError *err = NULL;
    GString *desc = g_string_new("webrtcbin name=webrtc bundle-policy=max-bundle ");
    GstBus *bus;
    GstPad *pad;
    GstWebRTCRTPTransceiver *spk = NULL;
    int rc;

    /* Video: the wall clock top left (latency by eye), running time bottom
     * right. x264enc's keyframe interval is long on purpose: keyframes
     * come when a receiver asks (PLI/FIR). The rtcp-fb fields end up as
     * a=rtcp-fb lines, without which a browser never sends PLI. The valves
     * (open unless a trackControl paused the track) stop RTP before the
     * payloader; sticky events still pass, so a resume needs no
     * renegotiation, only a keyframe. */
    if (p->playback) {
        /* A recording: the player feeds the appsrcs (do-timestamp: the RTP
         * clock runs on across pauses and seeks); no encoder, so keyframe
         * requests go unanswered (the recording has one a second). The
         * gates after the payloaders stay closed until the first play: the
         * prerolled samples pushed at load bring the caps webrtcbin needs
         * to offer, and their packets are dropped there. */
        if (p->video)
            g_string_append(desc, "appsrc name=vsrc is-live=true do-timestamp=true format=time max-bytes=4000000 "
                                  "! valve name=vvalve drop=false drop-mode=forward-sticky-events "
                                  "! rtph264pay config-interval=-1 aggregate-mode=zero-latency pt=96 "
                                  "! valve name=vgate drop=true drop-mode=forward-sticky-events "
                                  "! application/x-rtp,media=video,encoding-name=H264,payload=96,"
                                  "rtcp-fb-nack-pli=(boolean)true,rtcp-fb-ccm-fir=(boolean)true "
                                  "! webrtc. ");
        if (p->audio)
            g_string_append(desc, "appsrc name=asrc is-live=true do-timestamp=true format=time max-bytes=1000000 "
                                  "! valve name=avalve drop=false drop-mode=forward-sticky-events "
                                  "! rtpopuspay pt=111 "
                                  "! valve name=agate drop=true drop-mode=forward-sticky-events "
                                  "! capsfilter name=acaps "
                                  "caps=\"application/x-rtp,media=audio,encoding-name=OPUS,payload=111\" "
                                  "! webrtc. ");
    } else if (p->video) {
        /* The picture: a still one (what an AI looks at in the tests: no
         * clock over it, so nothing covers a face; the running time stays
         * in a corner), or the pattern with the clocks. */
        if (o->image) {
            gchar *loc = g_strescape(o->image, NULL);
            g_string_append_printf(desc,
                                   "filesrc location=\"%s\" ! decodebin ! videoconvert ! videoscale "
                                   "! imagefreeze is-live=true ! video/x-raw,width=%d,height=%d,framerate=%d/1 "
                                   "! timeoverlay halignment=right valignment=bottom font-desc=\"Sans 10\" ",
                                   loc, o->width, o->height, o->fps);
            g_free(loc);
        } else {
            g_string_append_printf(desc,
                                   "videotestsrc is-live=true pattern=%s "
                                   "! video/x-raw,width=%d,height=%d,framerate=%d/1 "
                                   "! clockoverlay time-format=\"%%H:%%M:%%S\" halignment=left valignment=top "
                                   "font-desc=\"Sans 28\" shaded-background=true "
                                   "! timeoverlay halignment=right valignment=bottom font-desc=\"Sans 16\" ",
                                   o->pattern, o->width, o->height, o->fps);
        }
        g_string_append_printf(
            desc,
            "! videoconvert ! queue max-size-buffers=2 max-size-bytes=0 max-size-time=0 "
            "! x264enc name=venc tune=zerolatency speed-preset=ultrafast bitrate=%d key-int-max=%d "
            "sliced-threads=false threads=1 "
            "! video/x-h264,profile=constrained-baseline "
            "! valve name=vvalve drop=false drop-mode=forward-sticky-events "
            "! rtph264pay config-interval=-1 aggregate-mode=zero-latency pt=96 "
            "! application/x-rtp,media=video,encoding-name=H264,payload=96,"
            "rtcp-fb-nack-pli=(boolean)true,rtcp-fb-ccm-fir=(boolean)true "
            "! webrtc. ",
            o->bitrate_kbps, o->key_int_s * o->fps);
    }
    if (p->audio && !p->playback)
        g_string_append(desc, "audiotestsrc is-live=true wave=sine freq=440 volume=0.3 "
                              "! audioconvert ! audioresample ! queue max-size-time=100000000 "
                              "! opusenc ! valve name=avalve drop=false drop-mode=forward-sticky-events "
                              "! rtpopuspay pt=111 "
                              "! capsfilter name=acaps "
                              "caps=\"application/x-rtp,media=audio,encoding-name=OPUS,payload=111\" "
                              "! webrtc. ");
    p->pipe = gst_parse_launch_full(desc->str, NULL, GST_PARSE_FLAG_FATAL_ERRORS, &err);
    g_string_free(desc, TRUE);
    if (!p->pipe) {
        vlog("error: cannot build the pipeline: %s", err ? err->message : "unknown error");
        g_clear_error(&err);
        return -1;
    }
    /* A speaker alone is webrtcbin alone, which the parser returns bare. */
    if (!GST_IS_PIPELINE(p->pipe)) {
        GstElement *pl = gst_pipeline_new(NULL);
        if (!pl || !gst_bin_add(GST_BIN(pl), p->pipe)) {
            vlog("error: cannot make a pipeline");
            if (pl)
                gst_object_unref(pl);
            gst_object_unref(p->pipe);
            p->pipe = NULL;
            return -1;
        }
        p->pipe = pl;
    }
    p->webrtc = gst_bin_get_by_name(GST_BIN(p->pipe), "webrtc");
    if (p->video) {
        p->venc = p->playback ? NULL : gst_bin_get_by_name(GST_BIN(p->pipe), "venc");
        p->vvalve = gst_bin_get_by_name(GST_BIN(p->pipe), "vvalve");
    }
    if (p->audio)
        p->avalve = gst_bin_get_by_name(GST_BIN(p->pipe), "avalve");
    if (p->playback) {
        p->vsrc = p->video ? gst_bin_get_by_name(GST_BIN(p->pipe), "vsrc") : NULL;
        p->asrc = p->audio ? gst_bin_get_by_name(GST_BIN(p->pipe), "asrc") : NULL;
    }
    if (!p->webrtc || (p->video && ((!p->playback && !p->venc) || !p->vvalve)) || (p->audio && !p->avalve) ||
        (p->playback && ((p->video && !p->vsrc) || (p->audio && !p->asrc)))) {
        vlog("error: pipeline without webrtcbin, encoder, source or valve");
        return -1;
    }
    if (p->playback && playback_caps(p) < 0)
        return -1;
    if (p->venc) {
        pad = gst_element_get_static_pad(p->venc, "src");
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, on_venc_upstream, p->v, NULL);
        gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_venc_buffer, p->v, NULL);
        gst_object_unref(pad);
    }
    if (restrict_ice(p) < 0)
        return -1;
    if (p->speaker && !(spk = speaker_transceiver(p)))
        return -1;
    rc = set_directions(p, spk);
    if (spk)
        gst_object_unref(spk);
    if (rc < 0)
        return -1;
    if (p->speaker) {
        /* p->spk outlives every pad-added: it is freed after the pipeline
         * is NULL. */
        p->spk = g_new0(speaker_rx, 1);
        g_signal_connect(p->webrtc, "pad-added", G_CALLBACK(on_pad_added), p->spk);
        p->spk_timer = g_timeout_add_seconds(1, on_speaker_tick, p);
    }
    /* The tags live as long as the handlers, i.e. as webrtcbin: a
     * notification running while the peer is torn down still finds one. */
    g_signal_connect_data(p->webrtc, "on-negotiation-needed", G_CALLBACK(on_negotiation_needed), tag_new(p),
                          (GClosureNotify)(void (*)(void))g_free, 0);
    g_signal_connect_data(p->webrtc, "notify::ice-gathering-state", G_CALLBACK(on_notify), tag_new(p),
                          (GClosureNotify)(void (*)(void))g_free, 0);
    g_signal_connect_data(p->webrtc, "notify::ice-connection-state", G_CALLBACK(on_notify), tag_new(p),
                          (GClosureNotify)(void (*)(void))g_free, 0);
    g_signal_connect_data(p->webrtc, "notify::connection-state", G_CALLBACK(on_notify), tag_new(p),
                          (GClosureNotify)(void (*)(void))g_free, 0);
    bus = gst_element_get_bus(p->pipe);
    p->bus_watch = gst_bus_add_watch_full(bus, G_PRIORITY_DEFAULT, on_bus, tag_new(p), g_free);
    gst_object_unref(bus);
    return 0;
}

/* A new peer with the tracks asked, playing: its offer follows on the main
 * loop. With player (taken, freed on failure too) it is a playback leg
 * fed by it. NULL (logged) on failure. */
static peer *peer_start(vcam *v, const char *leg, const char *token, uint32_t revision, const char *video_track,
                        const char *audio_track, int speaker, igw_vcam_player *player)
{
    peer *p = g_new0(peer, 1);

    p->player = player;
    p->playback = player != NULL;
    p->v = v;
    p->serial = ++v->serials;
    p->ice_state = p->pc_state = -1;
    p->spk_loud = -1;
    g_strlcpy(p->leg, leg, sizeof p->leg);
    g_strlcpy(p->token, token, sizeof p->token);
    p->revision = revision;
    p->video = video_track != NULL;
    p->audio = audio_track != NULL;
    p->speaker = speaker != 0;
    if (video_track)
        g_strlcpy(p->video_track, video_track, sizeof p->video_track);
    if (audio_track)
        g_strlcpy(p->audio_track, audio_track, sizeof p->audio_track);
    if (build_pipeline(p) < 0)
        goto fail;
    if (gst_element_set_state(p->pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        vlog("error: the pipeline does not start");
        goto fail;
    }
    return p;
fail:
    peer_free(p);
    return NULL;
}

/* ---- the device side: legs ---- */

static void decline(vcam *v, const char *leg, const char *why)
{
    vlog("invite for leg %s declined: %s", leg, why);
    if (v->sig->ops->send_bye(v->sig, leg, "cameraDeclined") < 0)
        vlog("error: cannot send the bye for leg %s", leg);
}

static void leg_bye(vcam *v, const char *leg, const char *reason)
{
    if (v->sig->ops->send_bye(v->sig, leg, reason) == 0)
        vlog("bye sent for leg %s (%s)", leg, reason);
    else
        vlog("error: cannot send the bye for leg %s", leg);
}

static void on_player_eos(void *user, igw_vcam_player *pl)
{
    vcam *v = user;

    for (int i = 0; i < PLAYBACK_MAX; i++)
        if (v->pb[i] && v->pb[i]->player == pl && !v->pb[i]->failed) {
            peer *p = v->pb[i];
            leg_bye(v, p->leg, "recordingEnded");
            leg_end(v, p, "the recording ended");
            return;
        }
}

static void on_player_error(void *user, igw_vcam_player *pl, const char *why)
{
    vcam *v = user;

    for (int i = 0; i < PLAYBACK_MAX; i++)
        if (v->pb[i] && v->pb[i]->player == pl) {
            peer_fail(v->pb[i], "player: %s", why);
            return;
        }
}

/* An invite with params.recording: a playback leg, beside the live one. */
static void invite_playback(vcam *v, const igw_vcam_invite *inv)
{
    static const igw_vcam_player_cbs pcbs = {.on_eos = on_player_eos, .on_error = on_player_error};
    const char *video = NULL, *audio = NULL, *path = NULL;
    const igw_vcam_recording *r = NULL;
    igw_vcam_player *pl;
    char err[256];
    int slot = -1;
    peer *p;

    for (unsigned i = 0; i < inv->ntracks; i++) {
        const igw_vcam_track *t = &inv->tracks[i];
        if (strcmp(t->kind, "video") == 0 && g_ascii_strcasecmp(t->codec, "H264") == 0 && !video) {
            video = t->id;
        } else if (strcmp(t->kind, "audio") == 0 && g_ascii_strcasecmp(t->codec, "opus") == 0 && !audio &&
                   strcmp(t->id, "speaker") != 0) {
            audio = t->id;
        } else {
            char why[256];
            snprintf(why, sizeof why, "track %s (%s %s) is not one a recording has", t->id, t->kind, t->codec);
            decline(v, inv->leg, why);
            return;
        }
    }
    if (!video || (audio && strcmp(video, audio) == 0)) {
        decline(v, inv->leg, "a playback leg has one video track (and one audio track)");
        return;
    }
    if (v->rec)
        r = igw_vcam_recorder_find(v->rec, inv->recording_id, &path);
    if (!r || !g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        vlog("invite for leg %s: recording %s is unknown or gone", inv->leg, inv->recording_id);
        leg_bye(v, inv->leg, "recordingUnavailable");
        return;
    }
    if (r->version != inv->recording_version) {
        vlog("invite for leg %s: recording %s is version %d, not %lld", inv->leg, inv->recording_id, r->version,
             (long long)inv->recording_version);
        leg_bye(v, inv->leg, "recordingChanged");
        return;
    }
    if (audio && !r->audio) {
        decline(v, inv->leg, "an audio track, and the recording has none");
        return;
    }
    for (int i = 0; i < PLAYBACK_MAX && slot < 0; i++)
        if (!v->pb[i])
            slot = i;
    if (slot < 0) {
        decline(v, inv->leg, "as many playback legs as it can feed already");
        return;
    }
    pl = igw_vcam_player_new(path, audio != NULL, &pcbs, v, err, sizeof err);
    if (!pl) {
        vlog("error: invite for leg %s: %s", inv->leg, err);
        leg_bye(v, inv->leg, "cameraError");
        return;
    }
    vlog("invite for leg %s revision %u: playback of %s (%lld ms) loaded, paused at 0: %s%s%s", inv->leg,
         inv->revision, r->id, (long long)r->duration_ms, video, audio ? " + " : "", audio ? audio : "");
    p = peer_start(v, inv->leg, inv->token, inv->revision, video, audio, 0, pl);
    if (!p) {
        leg_bye(v, inv->leg, "cameraError");
        return;
    }
    p->rec_duration_ms = r->duration_ms;
    v->pb[slot] = p;
}

static void on_invite(void *user, const igw_vcam_invite *inv)
{
    vcam *v = user;
    const char *video = NULL, *audio = NULL, *speaker = NULL;
    peer *p = peer_by_leg(v, inv->leg);

    if (v->stopping)
        return;
    /* A redelivered invite (QoS 1 may repeat) is the same leg, revision and
     * token: the leg it made goes on. */
    if (p && !p->failed && p->revision == inv->revision && strcmp(p->token, inv->token) == 0) {
        vlog("invite %s for leg %s again, ignored", inv->token, inv->leg);
        return;
    }
    if (strcmp(inv->camera_id, v->o.mqtt.camera_id) != 0) {
        decline(v, inv->leg, "unknown cameraId");
        return;
    }
    /* The platform is authoritative: a new invite for a leg replaces it. */
    if (p && p != v->peer)
        leg_end(v, p, "replaced by a new invite");
    if (inv->recording_id) {
        if (p && p == v->peer)
            leg_end(v, p, "replaced by a new invite");
        invite_playback(v, inv);
        return;
    }
    for (unsigned i = 0; i < inv->ntracks; i++) {
        const igw_vcam_track *t = &inv->tracks[i];
        int opus = strcmp(t->kind, "audio") == 0 && g_ascii_strcasecmp(t->codec, "opus") == 0;
        if (strcmp(t->kind, "video") == 0 && g_ascii_strcasecmp(t->codec, "H264") == 0 && !video) {
            video = t->id;
        } else if (opus && strcmp(t->id, "speaker") == 0) {
            /* The one audio track the camera receives: it plays it. */
            if (!v->o.mqtt.speaker) {
                decline(v, inv->leg, "a speaker track, and this camera has no speaker (--no-speaker)");
                return;
            }
            if (speaker) {
                decline(v, inv->leg, "two speaker tracks");
                return;
            }
            speaker = t->id;
        } else if (opus) {
            /* Any other audio track is one the camera sends: its mic. */
            if (!v->o.mqtt.microphone) {
                decline(v, inv->leg, "an audio track, and this camera has no microphone (--no-mic)");
                return;
            }
            if (audio) {
                decline(v, inv->leg, "two sending audio tracks (one microphone)");
                return;
            }
            audio = t->id;
        } else {
            char why[256];
            snprintf(why, sizeof why, "track %s (%s %s) is not one this camera has", t->id, t->kind, t->codec);
            decline(v, inv->leg, why);
            return;
        }
    }
    if ((video && audio && strcmp(video, audio) == 0) || (video && speaker && strcmp(video, speaker) == 0)) {
        decline(v, inv->leg, "two tracks with one trackId");
        return;
    }
    /* One live leg at a time, and the platform is authoritative: the new
     * invite replaces whatever live leg there was. */
    if (v->peer)
        leg_end(v, v->peer, "replaced by a new invite");
    vlog("invite for leg %s revision %u: %s%s%s%s%s", inv->leg, inv->revision, video ? video : "",
         video && audio ? " + " : "", audio ? audio : "", (video || audio) && speaker ? " + " : "",
         speaker ? speaker : "");
    v->peer = peer_start(v, inv->leg, inv->token, inv->revision, video, audio, speaker != NULL, NULL);
    if (!v->peer && v->sig->ops->send_bye(v->sig, inv->leg, "cameraError") == 0)
        vlog("bye sent for leg %s (cameraError)", inv->leg);
}

static void on_offer_failed(void *user, const char *leg, uint32_t revision, const char *why)
{
    vcam *v = user;
    peer *p = peer_by_leg(v, leg);

    vlog("offer for leg %s revision %u refused: %s", leg, revision, why);
    if (p && p->revision == revision)
        leg_end(v, p, "its offer was refused");
}

static int on_track(void *user, const char *leg, uint32_t revision, const char *track, int pause)
{
    vcam *v = user;
    peer *p = peer_by_leg(v, leg);
    GstElement *valve;

    if (!p || p->failed || (revision && revision != p->revision)) {
        vlog("trackControl for leg %s revision %u, which is not active", leg, revision);
        return IGW_VCAM_CODE_NOTFOUND;
    }
    if (p->video && strcmp(track, p->video_track) == 0)
        valve = p->vvalve;
    else if (p->audio && strcmp(track, p->audio_track) == 0)
        valve = p->avalve;
    else if (p->speaker && strcmp(track, "speaker") == 0) {
        /* The branch may not exist yet (no packet so far): it reads the
         * flag when it is built. */
        g_atomic_int_set(&p->spk->paused, pause);
        if ((valve = gst_bin_get_by_name(GST_BIN(p->pipe), "spkvalve"))) {
            g_object_set(valve, "drop", pause ? TRUE : FALSE, NULL);
            gst_object_unref(valve);
        }
        vlog("track %s of leg %s %s", track, leg, pause ? "paused" : "resumed");
        return IGW_VCAM_CODE_OK;
    } else {
        vlog("trackControl for track %s, which leg %s does not have", track, leg);
        return IGW_VCAM_CODE_NOTFOUND;
    }
    g_object_set(valve, "drop", pause ? TRUE : FALSE, NULL);
    /* The receiver's decoder needs a keyframe to start again. */
    if (!pause && valve == p->vvalve)
        request_keyframe(p);
    vlog("track %s of leg %s %s", track, leg, pause ? "paused" : "resumed");
    return IGW_VCAM_CODE_OK;
}

static void on_bye(void *user, const char *leg, const char *reason)
{
    vcam *v = user;
    peer *p = peer_by_leg(v, leg);

    if (p) {
        char why[IGW_VCAM_REASON_MAX + 32];
        snprintf(why, sizeof why, "bye from the platform (%s)", reason[0] ? reason : "no reason");
        leg_end(v, p, why);
    } else {
        vlog("bye for leg %s, which is not active (%s)", leg, reason[0] ? reason : "no reason");
    }
}

static int on_playback(void *user, const char *leg, uint32_t revision, igw_vcam_playback_op op, int64_t position_ms,
                       igw_vcam_playback_result *r)
{
    static const char *const names[] = {"play", "pause", "seek"};
    vcam *v = user;
    peer *p = peer_by_leg(v, leg);
    int rc = 0;

    if (!p || !p->playback || p->failed || (revision && revision != p->revision)) {
        vlog("playbackControl for leg %s revision %u, which is not an active playback leg", leg, revision);
        return IGW_VCAM_CODE_NOTFOUND;
    }
    switch (op) {
    case IGW_VCAM_PLAY:
        playback_open(p);
        rc = igw_vcam_player_set_playing(p->player, 1);
        break;
    case IGW_VCAM_PAUSE:
        rc = igw_vcam_player_set_playing(p->player, 0);
        break;
    case IGW_VCAM_SEEK:
        if (position_ms > p->rec_duration_ms) {
            snprintf(r->msg, sizeof r->msg, "positionMs %lld is beyond the duration (%lld ms)",
                     (long long)position_ms, (long long)p->rec_duration_ms);
            return IGW_VCAM_CODE_BAD;
        }
        rc = igw_vcam_player_seek(p->player, position_ms);
        break;
    }
    if (rc < 0) {
        snprintf(r->msg, sizeof r->msg, "the player could not %s", names[op]);
        peer_fail(p, "playbackControl %s: the player did not follow", names[op]);
        return IGW_VCAM_CODE_BAD;
    }
    r->playing = igw_vcam_player_playing(p->player);
    r->position_ms = igw_vcam_player_position(p->player);
    if (r->position_ms > p->rec_duration_ms)
        r->position_ms = p->rec_duration_ms;
    vlog("playback leg %s: %s -> %s at %lld ms", leg, names[op], r->playing ? "playing" : "paused",
         (long long)r->position_ms);
    return IGW_VCAM_CODE_OK;
}

/* ---- the recording catalog, reported (device mode with --record-dir) ---- */

/* Sends the removals not sent since the last connection, in reports of at
 * most IGW_VCAM_REPORT_MAX; they stay queued until answered. */
static void removals_flush(vcam *v)
{
    const char *ids[IGW_VCAM_REPORT_MAX];
    guint idx[IGW_VCAM_REPORT_MAX];
    guint i = 0;

    while (i < v->removals->len) {
        unsigned n = 0;
        char tok[64];
        for (; i < v->removals->len && n < IGW_VCAM_REPORT_MAX; i++) {
            removal *r = &g_array_index(v->removals, removal, i);
            if (!r->token[0]) {
                idx[n] = i;
                ids[n++] = r->id;
            }
        }
        if (n == 0)
            break;
        if (v->sig->ops->send_recordings(v->sig, NULL, 0, ids, n, tok, sizeof tok) < 0) {
            vlog("%u removal(s) not reported now (offline): they go at the next connection", n);
            return;
        }
        for (unsigned k = 0; k < n; k++)
            g_strlcpy(g_array_index(v->removals, removal, idx[k]).token, tok, sizeof tok);
        vlog("recording report %s sent: 0 recording(s), %u removed", tok, n);
        igw_vcam_await_sent(&v->cat, tok);
    }
}

static void rec_on_closed(void *user, const igw_vcam_recording *r)
{
    vcam *v = user;
    char tok[64];

    if (v->sig->ops->send_recordings(v->sig, r, 1, NULL, 0, tok, sizeof tok) == 0) {
        vlog("recording report %s sent: 1 recording(s) (%s), 0 removed", tok, r->id);
        igw_vcam_await_sent(&v->cat, tok);
    } else
        vlog("recording %s not reported now (offline): it goes with the list at the next connection", r->id);
}

static void rec_on_removed(void *user, const char *const *ids, unsigned n)
{
    vcam *v = user;

    for (unsigned i = 0; i < n; i++) {
        removal r = {.token = ""};
        if (v->removals->len >= REMOVALS_MAX) {
            vlog("warning: over %d removals unacknowledged: the oldest (%s) is forgotten", REMOVALS_MAX,
                 g_array_index(v->removals, removal, 0).id);
            g_array_remove_index(v->removals, 0);
        }
        g_strlcpy(r.id, ids[i], sizeof r.id);
        g_array_append_val(v->removals, r);
    }
    removals_flush(v);
}

/* Every connection: the whole catalog (idempotent upserts) and the
 * removals not acknowledged yet; also what goes again while a report
 * waits for its reply. 0: not all sent (offline: the next connection
 * sends it). */
static int catalog_send(vcam *v)
{
    const igw_vcam_recording *list;
    unsigned n = 0;

    list = igw_vcam_recorder_list(v->rec, &n);
    for (unsigned i = 0; i < n; i += IGW_VCAM_REPORT_MAX) {
        unsigned k = n - i < IGW_VCAM_REPORT_MAX ? n - i : IGW_VCAM_REPORT_MAX;
        char tok[64];
        if (v->sig->ops->send_recordings(v->sig, list + i, k, NULL, 0, tok, sizeof tok) < 0) {
            vlog("error: the recording list could not be sent");
            return 0;
        }
        vlog("recording report %s sent: %u recording(s), 0 removed (the list, %u..%u of %u)", tok, k, i + 1, i + k,
             n);
        igw_vcam_await_sent(&v->cat, tok);
    }
    for (guint i = 0; i < v->removals->len; i++)
        g_array_index(v->removals, removal, i).token[0] = '\0';
    removals_flush(v);
    return 1;
}

/* The await's resend: the whole catalog stands for every unanswered report. */
static void cat_resend(void *user, unsigned after_ms)
{
    vcam *v = user;
    vlog("recording report(s) unanswered after %u ms: the catalog goes again", after_ms);
    (void)catalog_send(v);
}

/* ---- voice messages (message.h) ---- */

static void on_play(void *user, const igw_vcam_play *p)
{
    vcam *v = user;
    if (!v->o.mqtt.speaker) { /* --no-speaker: nothing to play it on */
        (void)v->sig->ops->send_play_reply(v->sig, p->token, 500, "the camera has no speaker");
        return;
    }
    if (!v->msgs) {
        (void)v->sig->ops->send_play_reply(v->sig, p->token, 503, "out of memory");
        return;
    }
    igw_vcam_messages_play(v->msgs, p);
}

static void on_message_reply(void *user, const char *token, int code, const char *msg)
{
    vcam *v = user;
    if (v->sig && v->sig->ops->send_play_reply && v->sig->ops->send_play_reply(v->sig, token, code, msg) != 0)
        vlog("message: the answer to %s (%d) was not sent (the next connection's get brings it again)", token, code);
}

static void on_messages_drained(void *user)
{
    vcam *v = user;
    if (v->sig && v->sig->ops->ask_messages)
        v->sig->ops->ask_messages(v->sig);
}

static double on_message_level(void *user, const char *delivery_id, const GstStructure *st)
{
    vcam *v = user;
    double peak = level_db(st, "peak");
    speaker_log_line(v, g_get_real_time(), level_db(st, "rms"), peak, delivery_id);
    return peak;
}

static void on_connected(void *user)
{
    vcam *v = user;

    if (!v->rec)
        return;
    igw_vcam_await_reset(&v->cat);
    (void)catalog_send(v);
}

static void on_recording_reply(void *user, const char *token, int64_t code, const char *msg)
{
    vcam *v = user;
    guint acked = 0;

    (void)igw_vcam_await_answered(&v->cat, token); /* every report answered: no resend */
    /* 200: its removals are acknowledged. Anything else: logged, and that
     * report is not retried (its removals go too). */
    for (guint i = v->removals->len; i-- > 0;)
        if (strcmp(g_array_index(v->removals, removal, i).token, token) == 0) {
            g_array_remove_index(v->removals, i);
            acked++;
        }
    if (code == 200)
        vlog("recording report %s: code 200%s", token, acked ? " (its removals acknowledged)" : "");
    else
        vlog("recording report %s refused: code %lld (%s), not retried", token, (long long)code,
             msg[0] ? msg : "no msg");
}

/* ---- options ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: igw-vcam [options]\n"
            "       igw-vcam --mqtt HOST:PORT --product P --device D --secret BASE64 [options]\n"
            "       igw-vcam --device-file var/demo.json [options]\n"
            "A virtual WebRTC camera: offers H264 (test pattern, wall clock) and Opus\n"
            "(440 Hz) on one bundled transport and streams once answered.\n"
            "  --width N          video width (default 640)\n"
            "  --height N         video height (default 360)\n"
            "  --fps N            frames per second (default 30)\n"
            "  --bitrate-kbps N   H264 bitrate (default 1000)\n"
            "  --key-int S        seconds between unrequested keyframes (default 10)\n"
            "  --address IP       the only local address ICE uses (default 127.0.0.1)\n"
            "  --pattern P        videotestsrc pattern: smpte or ball (default smpte)\n"
            "  --image FILE       live legs show this still picture (PNG, JPEG) instead of the\n"
            "                     pattern, scaled, without the clock over it\n"
            "  --signal stdio     signaling: JSON lines on stdin/stdout (the default)\n"
            "  --speaker          stdio: the audio is sendrecv and what the peer sends is\n"
            "                     played (a device has a speaker unless --no-speaker)\n"
            "  --speaker-log F    one JSON line per 50 ms of played audio, flushed:\n"
            "                     {\"at_ms\":UNIX_MS,\"rms_db\":DB,\"peak_db\":DB} (the loudest\n"
            "                     channel; silence is -120)\n"
            "  -v, --verbose      debug logs (keyframe requests, ...)\n"
            "  -h, --help         this text\n"
            "As a device on the MQTT broker (docs/device-protocol.md, \"Media\"): the\n"
            "platform invites legs on $media/down/session/P/D, the camera answers each\n"
            "with a fresh peer offering exactly the tracks asked (one live leg at a time).\n"
            "  --mqtt HOST:PORT   the broker (clientID P&D, a signed username/password)\n"
            "  --product P        productID\n"
            "  --device D         deviceName\n"
            "  --secret BASE64    the device secret (igwctl device add prints it)\n"
            "  --device-file F    reads device.productID, device.deviceName, device.secret\n"
            "                     and, when present, mqtt.host, mqtt.port and\n"
            "                     camera.cameraId from F (var/demo.json as make run's\n"
            "                     provisioning writes it); options given win\n"
            "  --camera-id ID     the camera's id in the capability (default cam-1)\n"
            "  --no-mic           no microphone: invites with a mic track are declined\n"
            "  --die-with-parent  stop (SIGTERM) when the process that started this one\n"
            "                     dies, even by SIGKILL: the camera never outlives it\n"
            "                     (make run: igwd)\n"
            "  --no-speaker       no speaker (capability speaker: false): invites with a\n"
            "                     speaker track are declined\n"
            "  --no-doorbell      no door-bell button (capability doorbell: false)\n"
            "  --ring-every S     the door-bell rings every S seconds (demos); it also\n"
            "                     rings on SIGUSR1 (kill -USR1 PID): every endpoint of a\n"
            "                     user who may answer the camera rings (docs/doorbell.md)\n"
            "  --record-dir DIR   record for the whole run into DIR (320x240@15 H264 + Opus,\n"
            "                     Matroska segments, <id>.mkv + <id>.json each), report the\n"
            "                     recordings on $media/up/recording/P/D and play them back\n"
            "                     in playback legs (capability maxUpstreams 4: one live leg\n"
            "                     and up to 3 playback legs)\n"
            "  --segment-ms N     length of a recording (default 60000)\n"
            "  --retain-s S       recordings whose end is older are deleted (default 3600;\n"
            "                     at most 1000 kept whatever their age)\n"
            "More cameras: one igw-vcam process per device; register each device first\n"
            "(build/igwctl device add --product P --device D2 ..., then camera add) and\n"
            "start another igw-vcam with its --device and --secret; all may share --address.\n"
            "Exits 0 on stdin EOF (stdio), SIGTERM or SIGINT (device: a bye for an active\n"
            "leg first, then a clean disconnect).\n");
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

/* Copies an option's value into a fixed field. */
static int opt_copy(const char *name, const char *s, char *dst, size_t cap)
{
    if (!s[0] || strlen(s) >= cap) {
        fprintf(stderr, "vcam: error: --%s wants 1..%zu bytes\n", name, cap - 1);
        return -1;
    }
    g_strlcpy(dst, s, cap);
    return 0;
}

/* HOST:PORT; the host may be [IPv6]. */
static int parse_hostport(const char *s, igw_vcam_mqtt_config *c)
{
    const char *colon = strrchr(s, ':');
    const char *h = s;
    size_t hl;

    if (!colon || colon == s)
        goto bad;
    hl = (size_t)(colon - s);
    if (h[0] == '[' && hl > 2 && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl >= sizeof c->host)
        goto bad;
    memcpy(c->host, h, hl);
    c->host[hl] = '\0';
    return parse_int("mqtt port", colon + 1, 1, 65535, &c->port);
bad:
    fprintf(stderr, "vcam: error: --mqtt wants HOST:PORT, not \"%s\"\n", s);
    return -1;
}

static int parse_opts(int argc, char **argv, vcam_opts *o)
{
    enum {
        O_WIDTH = 256, O_HEIGHT, O_FPS, O_BITRATE, O_KEYINT, O_ADDRESS, O_PATTERN, O_SIGNAL,
        O_MQTT, O_PRODUCT, O_DEVICE, O_SECRET, O_DEVFILE, O_CAMERA, O_NOMIC, O_NOSPEAKER, O_SPEAKER,
        O_SPEAKER_LOG, O_RECDIR, O_SEGMENT, O_RETAIN, O_DIE_WITH_PARENT, O_RING_EVERY, O_NODOORBELL, O_IMAGE
    };
    static const struct option longopts[] = {
        {"width", required_argument, NULL, O_WIDTH},
        {"height", required_argument, NULL, O_HEIGHT},
        {"fps", required_argument, NULL, O_FPS},
        {"bitrate-kbps", required_argument, NULL, O_BITRATE},
        {"key-int", required_argument, NULL, O_KEYINT},
        {"address", required_argument, NULL, O_ADDRESS},
        {"pattern", required_argument, NULL, O_PATTERN},
        {"image", required_argument, NULL, O_IMAGE},
        {"signal", required_argument, NULL, O_SIGNAL},
        {"mqtt", required_argument, NULL, O_MQTT},
        {"product", required_argument, NULL, O_PRODUCT},
        {"device", required_argument, NULL, O_DEVICE},
        {"secret", required_argument, NULL, O_SECRET},
        {"device-file", required_argument, NULL, O_DEVFILE},
        {"camera-id", required_argument, NULL, O_CAMERA},
        {"no-mic", no_argument, NULL, O_NOMIC},
        {"no-speaker", no_argument, NULL, O_NOSPEAKER},
        {"speaker", no_argument, NULL, O_SPEAKER},
        {"speaker-log", required_argument, NULL, O_SPEAKER_LOG},
        {"record-dir", required_argument, NULL, O_RECDIR},
        {"segment-ms", required_argument, NULL, O_SEGMENT},
        {"retain-s", required_argument, NULL, O_RETAIN},
        {"die-with-parent", no_argument, NULL, O_DIE_WITH_PARENT},
        {"ring-every", required_argument, NULL, O_RING_EVERY},
        {"no-doorbell", no_argument, NULL, O_NODOORBELL},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    igw_vcam_mqtt_config *mc = &o->mqtt;
    const char *devfile = NULL;
    int c, rc = 0, device_opts = 0;
    char err[512];

    *o = (vcam_opts){.width = 640, .height = 360, .fps = 30, .bitrate_kbps = 1000, .key_int_s = 10,
                     .address = "127.0.0.1", .pattern = "smpte", .signal = "stdio",
                     .segment_ms = 60000, .retain_s = 3600,
                     .mqtt = {.microphone = 1, .speaker = 1, .doorbell = 1}};
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
        case O_IMAGE: o->image = optarg; break;
        case O_SIGNAL: o->signal = optarg; break;
        case O_MQTT: o->device = 1; rc |= parse_hostport(optarg, mc); break;
        case O_PRODUCT: device_opts = 1; rc |= opt_copy("product", optarg, mc->product, sizeof mc->product); break;
        case O_DEVICE: device_opts = 1; rc |= opt_copy("device", optarg, mc->device, sizeof mc->device); break;
        case O_SECRET: device_opts = 1; rc |= opt_copy("secret", optarg, mc->secret, sizeof mc->secret); break;
        case O_CAMERA: device_opts = 1; rc |= opt_copy("camera-id", optarg, mc->camera_id, sizeof mc->camera_id); break;
        case O_NOMIC: device_opts = 1; mc->microphone = 0; break;
        case O_NOSPEAKER: device_opts = 1; mc->speaker = 0; break;
        case O_DIE_WITH_PARENT: o->die_with_parent = 1; break;
        case O_RING_EVERY: device_opts = 1; rc |= parse_int("ring-every", optarg, 1, 86400, &o->ring_every_s); break;
        case O_NODOORBELL: device_opts = 1; mc->doorbell = 0; break;
        case O_SPEAKER: o->speaker = 1; break;
        case O_SPEAKER_LOG: o->speaker_log = optarg; break;
        case O_RECDIR: device_opts = 1; o->record_dir = optarg; break;
        case O_SEGMENT: device_opts = 1; rc |= parse_int("segment-ms", optarg, 1000, 3600000, &o->segment_ms); break;
        case O_RETAIN: device_opts = 1; rc |= parse_int("retain-s", optarg, 1, 10 * 365 * 24 * 3600, &o->retain_s); break;
        case O_DEVFILE: o->device = 1; devfile = optarg; break;
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
        fprintf(stderr, "vcam: error: --signal %s: only stdio exists (the broker: --mqtt)\n", o->signal);
        return -1;
    }
    /* Checked again by libnice; early here for a clear message. */
    NiceAddress a;
    nice_address_init(&a);
    if (!nice_address_set_from_string(&a, o->address)) {
        fprintf(stderr, "vcam: error: --address %s is not an IP address\n", o->address);
        return -1;
    }
    if (o->speaker_log && !o->speaker_log[0]) {
        fprintf(stderr, "vcam: error: --speaker-log wants a file name\n");
        return -1;
    }
    if (!o->device) {
        if (device_opts) {
            fprintf(stderr, "vcam: error: --product, --device, --secret, --camera-id, --no-mic, "
                            "--no-speaker, --no-doorbell, --ring-every, --record-dir, --segment-ms and --retain-s "
                            "need --mqtt or --device-file\n");
            return -1;
        }
        return 0;
    }
    if (o->speaker) {
        fprintf(stderr, "vcam: error: --speaker is for stdio; a device has a speaker unless --no-speaker\n");
        return -1;
    }
    if (devfile && igw_vcam_mqtt_config_read(devfile, mc, err, sizeof err) < 0) {
        fprintf(stderr, "vcam: error: --device-file: %s\n", err);
        return -1;
    }
    if (!mc->camera_id[0])
        g_strlcpy(mc->camera_id, "cam-1", sizeof mc->camera_id);
    if (o->ring_every_s && !mc->doorbell) {
        fprintf(stderr, "vcam: error: --ring-every needs the door-bell (drop --no-doorbell)\n");
        return -1;
    }
    o->speaker = mc->speaker;
    if (igw_vcam_mqtt_config_check(mc, err, sizeof err) < 0) {
        fprintf(stderr, "vcam: error: %s\n", err);
        return -1;
    }
    if (o->record_dir && (!o->record_dir[0] || igw_vcam_recorder_id_ok(mc->camera_id, err, sizeof err) < 0)) {
        fprintf(stderr, "vcam: error: %s\n", o->record_dir[0] ? err : "--record-dir wants a directory");
        return -1;
    }
    mc->max_upstreams = o->record_dir ? 1 + PLAYBACK_MAX : 1;
    mc->recordings = o->record_dir != NULL;
    return 0;
}

int main(int argc, char **argv)
{
    static const igw_vcam_signal_cbs cbs = {
        .on_answer = on_answer,
        .on_renegotiate = on_renegotiate,
        .on_close = on_close,
        .on_invite = on_invite,
        .on_offer_failed = on_offer_failed,
        .on_track = on_track,
        .on_bye = on_bye,
        .on_connected = on_connected,
        .on_playback = on_playback,
        .on_recording_reply = on_recording_reply,
        .on_play = on_play,
    };
    static const igw_vcam_messages_cbs msg_cbs = {.on_reply = on_message_reply, .on_level = on_message_level,
                                                  .on_drained = on_messages_drained};
    vcam v = {.exit_code = 0};

    v.removals = g_array_new(FALSE, FALSE, sizeof(removal));
    igw_vcam_await_init(&v.cat, IGW_VCAM_AWAIT_ALL, cat_resend, &v);
    guint sig_term = 0, sig_int = 0;

    /* The parent's pid before anything: if it is gone by the time the
     * death signal is armed, the signal will never come. */
    pid_t parent = getppid();
    if (parse_opts(argc, argv, &v.o) < 0)
        return 2;
    if (v.o.die_with_parent && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)) {
        fprintf(stderr, "vcam: error: --die-with-parent: %s\n",
                getppid() != parent ? "the parent is gone already" : g_strerror(errno));
        return 1;
    }
    /* A reader that went away must not kill us silently: writes fail instead. */
    signal(SIGPIPE, SIG_IGN);
    gst_init(NULL, NULL);

    if (check_elements() < 0) {
        gst_deinit();
        return 1;
    }
    if (v.o.speaker_log && !(v.spk_log = fopen(v.o.speaker_log, "w"))) {
        fprintf(stderr, "vcam: error: --speaker-log %s: %s\n", v.o.speaker_log, g_strerror(errno));
        gst_deinit();
        return 2;
    }
    v.loop = g_main_loop_new(NULL, FALSE);
    if (v.o.device) {
        /* Before the transport: a play may come with the first connection. */
        if (!(v.msgs = igw_vcam_messages_new(&msg_cbs, &v)))
            vlog("error: out of memory: voice messages are refused");
        v.sig = igw_vcam_signal_mqtt_new(&v.o.mqtt, &cbs, &v);
        if (!v.sig) {
            v.exit_code = 1;
            goto out;
        }
        vlog("device %s&%s camera %s on %s:%d: %dx%d@%d H264 %d kbit/s%s%s, ICE on %s", v.o.mqtt.product,
             v.o.mqtt.device, v.o.mqtt.camera_id, v.o.mqtt.host, v.o.mqtt.port, v.o.width, v.o.height, v.o.fps,
             v.o.bitrate_kbps, v.o.mqtt.microphone ? " + Opus" : ", no microphone",
             v.o.mqtt.speaker ? ", a speaker" : ", no speaker", v.o.address);
        /* After the transport: what retention removes at start is queued
         * for the first connection, which the main loop delivers. */
        if (v.o.record_dir) {
            static const igw_vcam_recorder_cbs rcbs = {.on_closed = rec_on_closed, .on_removed = rec_on_removed};
            igw_vcam_recorder_config rc = {.dir = v.o.record_dir, .camera_id = v.o.mqtt.camera_id,
                                           .pattern = v.o.pattern, .segment_ms = v.o.segment_ms,
                                           .retain_s = v.o.retain_s, .audio = v.o.mqtt.microphone};
            char err[512];
            if (!(v.rec = igw_vcam_recorder_new(&rc, &rcbs, &v, err, sizeof err))) {
                vlog("error: %s", err);
                v.exit_code = 1;
                goto out;
            }
        }
    } else {
        /* The peer first: its offer waits for the main loop, and the
         * transport's callbacks expect it. */
        v.peer = peer_start(&v, "", "", 0, "video", "audio", v.o.speaker, NULL);
        if (!v.peer) {
            v.exit_code = 1;
            goto out;
        }
        v.sig = igw_vcam_signal_stdio_new(&cbs, &v);
        if (!v.sig) {
            v.exit_code = 1;
            goto out;
        }
        vlog("%dx%d@%d H264 %d kbit/s (keyframe every %d s or on request) + Opus%s, ICE on %s", v.o.width,
             v.o.height, v.o.fps, v.o.bitrate_kbps, v.o.key_int_s, v.o.speaker ? " sendrecv (a speaker)" : "",
             v.o.address);
    }
    sig_term = g_unix_signal_add(SIGTERM, on_unix_signal, &v);
    sig_int = g_unix_signal_add(SIGINT, on_unix_signal, &v);
    guint sig_usr1 = v.o.device ? g_unix_signal_add(SIGUSR1, on_ring, &v) : 0;
    guint ring_timer = v.o.ring_every_s ? g_timeout_add_seconds((guint)v.o.ring_every_s, on_ring, &v) : 0;
    g_main_loop_run(v.loop);
    g_source_remove(sig_term);
    g_source_remove(sig_int);
    if (sig_usr1)
        g_source_remove(sig_usr1);
    if (ring_timer)
        g_source_remove(ring_timer);
    vlog("keyframes: %d requested, %d encoded", g_atomic_int_get(&v.keyframes_requested),
         g_atomic_int_get(&v.keyframes_encoded));
    /* A device says goodbye for its legs; the transport's destroy waits a
     * moment for the broker to take it. */
    if (v.o.device && v.peer && !v.peer->failed && v.sig->ops->send_bye(v.sig, v.peer->leg, "cameraShutdown") == 0)
        vlog("bye sent for leg %s (cameraShutdown)", v.peer->leg);
    for (int i = 0; i < PLAYBACK_MAX; i++)
        if (v.pb[i] && !v.pb[i]->failed && v.sig->ops->send_bye(v.sig, v.pb[i]->leg, "cameraShutdown") == 0)
            vlog("bye sent for leg %s (cameraShutdown)", v.pb[i]->leg);
out:
    v.stopping = 1;
    peer_free(v.peer);
    v.peer = NULL;
    for (int i = 0; i < PLAYBACK_MAX; i++) {
        peer_free(v.pb[i]);
        v.pb[i] = NULL;
    }
    /* The segment being written is closed and reported while the transport
     * is still there. */
    igw_vcam_recorder_free(v.rec);
    v.rec = NULL;
    igw_vcam_await_reset(&v.cat); /* after the last segment's report: nothing goes again */
    igw_vcam_messages_free(v.msgs); /* what plays stays unanswered: the next connection's get brings it again */
    v.msgs = NULL;
    if (v.sig)
        v.sig->ops->destroy(v.sig);
    /* Idle callbacks queued by late notifications point at v: drop them. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_main_loop_unref(v.loop);
    if (v.spk_log && fclose(v.spk_log) != 0 && !v.spk_log_failed)
        vlog("error: --speaker-log: %s", g_strerror(errno));
    g_array_free(v.removals, TRUE);
    gst_deinit();
    return v.exit_code;
}
