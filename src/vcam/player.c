/*
 * player.c - a recording played into a playback leg (player.h).
 */
#include "player.h"

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <stdio.h>
#include <string.h>

#define STATE_WAIT (3 * GST_SECOND) /* a local file prerolls in milliseconds */

struct igw_vcam_player {
    GstElement *pipe, *vsink, *asink;
    GstElement *vsrc, *asrc; /* the leg's, set before the first play */
    guint bus_watch;
    int playing, audio;
    igw_vcam_player_cbs cbs;
    void *user;
};

/* s's buffer to src, its timestamps cleared (appsrc stamps it). */
static void push(GstElement *src, GstSample *s)
{
    GstBuffer *b = gst_sample_get_buffer(s);

    if (!b || !src)
        return;
    b = gst_buffer_copy(b); /* shares the memory; the metadata is ours */
    GST_BUFFER_PTS(b) = GST_BUFFER_DTS(b) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION(b) = GST_CLOCK_TIME_NONE;
    gst_app_src_push_buffer(GST_APP_SRC(src), b); /* takes b; a flushing leg refuses: nothing to do */
}

/* Streaming thread: a sample goes on to the leg, re-timed there. */
static GstFlowReturn on_sample(GstAppSink *sink, gpointer data)
{
    GstElement *src = data ? *(GstElement **)data : NULL;
    GstSample *s = gst_app_sink_pull_sample(sink);

    if (!s)
        return GST_FLOW_EOS;
    push(src, s);
    gst_sample_unref(s);
    return GST_FLOW_OK;
}

static gboolean on_bus(GstBus *bus, GstMessage *msg, gpointer data)
{
    igw_vcam_player *p = data;
    GError *err = NULL;
    gchar *dbg = NULL;
    char why[512];

    (void)bus;
    switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_EOS:
        if (p->cbs.on_eos)
            p->cbs.on_eos(p->user, p);
        break;
    case GST_MESSAGE_ERROR:
        gst_message_parse_error(msg, &err, &dbg);
        snprintf(why, sizeof why, "%s: %s", GST_OBJECT_NAME(msg->src), err->message);
        if (p->cbs.on_error)
            p->cbs.on_error(p->user, p, why);
        break;
    default:
        break;
    }
    g_clear_error(&err);
    g_free(dbg);
    return G_SOURCE_CONTINUE;
}

static int wait_state(igw_vcam_player *p)
{
    return gst_element_get_state(p->pipe, NULL, NULL, STATE_WAIT) == GST_STATE_CHANGE_SUCCESS ? 0 : -1;
}

static int seek_to(igw_vcam_player *p, int64_t ms)
{
    /* KEY_UNIT: the receiver's decoder starts on a keyframe, the nearest
     * (a keyframe a second: never more than half a second off). Positions
     * are stream time, from the file's first timestamp on (segments keep
     * the recorder's running time). */
    if (!gst_element_seek_simple(p->pipe, GST_FORMAT_TIME,
                                 GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_KEY_UNIT | GST_SEEK_FLAG_SNAP_NEAREST,
                                 (gint64)ms * GST_MSECOND))
        return -1;
    return wait_state(p);
}

igw_vcam_player *igw_vcam_player_new(const char *path, int audio,
                                     const igw_vcam_player_cbs *cbs, void *user, char *err, size_t errlen)
{
    igw_vcam_player *p = g_new0(igw_vcam_player, 1);
    GError *gerr = NULL;
    GstElement *src;
    GstBus *bus;
    char *desc;

    p->cbs = *cbs;
    p->user = user;
    p->audio = audio != 0;
    /* Both appsinks sync: the recording plays at its own pace, audio and
     * video together. Audio is asked for only when the leg has it: a
     * demuxer pad left unlinked would stop the pipeline. H264 goes on as
     * avc: its caps carry the SPS/PPS (codec_data), so rtph264pay has its
     * complete caps (sprop-parameter-sets, packetization-mode) from the
     * caps alone, before the offer; with byte-stream it would have them
     * only after its first buffer, and an offer made before would lack
     * them. */
    desc = g_strdup_printf("filesrc name=src ! matroskademux name=demux "
                           "demux.video_0 ! queue ! h264parse config-interval=-1 "
                           "! video/x-h264,stream-format=avc,alignment=au "
                           "! appsink name=vsink sync=true max-buffers=8 "
                           "%s",
                           p->audio ? "demux.audio_0 ! queue ! appsink name=asink sync=true max-buffers=32 "
                                    : "");
    p->pipe = gst_parse_launch_full(desc, NULL, GST_PARSE_FLAG_FATAL_ERRORS, &gerr);
    g_free(desc);
    if (!p->pipe) {
        snprintf(err, errlen, "cannot build the player: %s", gerr ? gerr->message : "unknown error");
        g_clear_error(&gerr);
        goto fail;
    }
    src = gst_bin_get_by_name(GST_BIN(p->pipe), "src");
    p->vsink = gst_bin_get_by_name(GST_BIN(p->pipe), "vsink");
    p->asink = p->audio ? gst_bin_get_by_name(GST_BIN(p->pipe), "asink") : NULL;
    if (!src || !p->vsink || (p->audio && !p->asink)) {
        if (src)
            gst_object_unref(src);
        snprintf(err, errlen, "the player lacks an element");
        goto fail;
    }
    g_object_set(src, "location", path, NULL);
    gst_object_unref(src);
    {
        GstAppSinkCallbacks vcb = {.new_sample = on_sample};
        gst_app_sink_set_callbacks(GST_APP_SINK(p->vsink), &vcb, &p->vsrc, NULL);
        if (p->asink)
            gst_app_sink_set_callbacks(GST_APP_SINK(p->asink), &vcb, &p->asrc, NULL);
    }
    bus = gst_element_get_bus(p->pipe);
    p->bus_watch = gst_bus_add_watch(bus, on_bus, p);
    gst_object_unref(bus);
    if (gst_element_set_state(p->pipe, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE || wait_state(p) < 0) {
        snprintf(err, errlen, "%s does not preroll", path);
        goto fail;
    }
    return p;
fail:
    igw_vcam_player_free(p);
    return NULL;
}

GstCaps *igw_vcam_player_caps(igw_vcam_player *p, int video)
{
    GstElement *sink = video ? p->vsink : p->asink;
    GstPad *pad = sink ? gst_element_get_static_pad(sink, "sink") : NULL;
    GstCaps *caps = pad ? gst_pad_get_current_caps(pad) : NULL;

    if (pad)
        gst_object_unref(pad);
    return caps;
}

void igw_vcam_player_attach(igw_vcam_player *p, GstElement *vsrc, GstElement *asrc)
{
    /* Before the first play: no streaming thread reads these yet (paused,
     * the appsinks only preroll, which is not a sample). */
    p->vsrc = vsrc ? gst_object_ref(vsrc) : NULL;
    p->asrc = asrc && p->asink ? gst_object_ref(asrc) : NULL;
}

void igw_vcam_player_prime(igw_vcam_player *p)
{
    GstElement *sinks[2] = {p->vsink, p->asink}, *srcs[2] = {p->vsrc, p->asrc};

    for (int i = 0; i < 2; i++) {
        GstSample *s = sinks[i] && srcs[i] ? gst_app_sink_try_pull_preroll(GST_APP_SINK(sinks[i]), 0) : NULL;
        if (s) {
            push(srcs[i], s);
            gst_sample_unref(s);
        }
    }
}

int igw_vcam_player_set_playing(igw_vcam_player *p, int playing)
{
    if (gst_element_set_state(p->pipe, playing ? GST_STATE_PLAYING : GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE)
        return -1;
    p->playing = playing != 0;
    /* Going to PAUSED waits for a preroll, which the queued data gives. */
    return wait_state(p);
}

int igw_vcam_player_seek(igw_vcam_player *p, int64_t ms)
{
    return seek_to(p, ms);
}

int64_t igw_vcam_player_position(igw_vcam_player *p)
{
    gint64 pos = 0;

    if (!gst_element_query_position(p->pipe, GST_FORMAT_TIME, &pos) || pos < 0)
        return 0;
    /* Stream time: matroskademux counts from the file's first timestamp. */
    return pos / (gint64)GST_MSECOND;
}

int igw_vcam_player_playing(const igw_vcam_player *p)
{
    return p->playing;
}

void igw_vcam_player_free(igw_vcam_player *p)
{
    if (!p)
        return;
    if (p->bus_watch)
        g_source_remove(p->bus_watch);
    /* NULL first: after it no streaming thread pushes into the appsrcs. */
    if (p->pipe)
        gst_element_set_state(p->pipe, GST_STATE_NULL);
    if (p->vsink)
        gst_object_unref(p->vsink);
    if (p->asink)
        gst_object_unref(p->asink);
    if (p->pipe)
        gst_object_unref(p->pipe);
    if (p->vsrc)
        gst_object_unref(p->vsrc);
    if (p->asrc)
        gst_object_unref(p->asrc);
    g_free(p);
}
