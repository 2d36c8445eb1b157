/* eyes.c - see eyes.h. */
#include "eyes.h"

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/rtp/gstrtpbuffer.h>
#include <stdio.h>
#include <string.h>

#define KEPT 4 /* frames kept for their tickets; older ones go */

typedef struct kept {
    uint32_t ts;
    GstSample *sample; /* NULL: empty slot */
} kept;

struct igw_eyes {
    GstElement *decode, *model;     /* RTP in → RGB frames; RGB frame → faces, brightness */
    GstElement *model_src, *model_sink;
    igw_eyes_frame frame;
    void *arg;
    uint16_t port;
    GMutex mu;                      /* the kept frames and last_ts: streaming thread vs main */
    kept frames[KEPT];
    unsigned next;
    uint32_t last_ts;               /* the RTP timestamp of the last packet in */
    int faces;                      /* the detector's count for the frame it looked at last */
};

static GstPadProbeReturn on_rtp(GstPad *pad, GstPadProbeInfo *info, gpointer ud)
{
    (void)pad;
    igw_eyes *e = ud;
    GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER(info);
    GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
    if (b && gst_rtp_buffer_map(b, GST_MAP_READ, &rtp)) {
        g_mutex_lock(&e->mu);
        e->last_ts = gst_rtp_buffer_get_timestamp(&rtp);
        g_mutex_unlock(&e->mu);
        gst_rtp_buffer_unmap(&rtp);
    }
    return GST_PAD_PROBE_OK;
}

/* A decoded frame: one take delivers one frame, so it is the frame of the
 * last packet's timestamp. */
static GstFlowReturn on_decoded(GstAppSink *sink, gpointer ud)
{
    igw_eyes *e = ud;
    GstSample *s = gst_app_sink_pull_sample(sink);
    if (!s)
        return GST_FLOW_OK;
    g_mutex_lock(&e->mu);
    uint32_t ts = e->last_ts;
    kept *k = &e->frames[e->next++ % KEPT];
    if (k->sample)
        gst_sample_unref(k->sample);
    k->ts = ts;
    k->sample = s;
    g_mutex_unlock(&e->mu);
    e->frame(e->arg, ts);
    return GST_FLOW_OK;
}

static GstBusSyncReply on_model_bus(GstBus *bus, GstMessage *m, gpointer ud)
{
    (void)bus;
    igw_eyes *e = ud;
    const GstStructure *st = gst_message_get_structure(m);
    if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ELEMENT && st && gst_structure_has_name(st, "facedetect")) {
        const GValue *faces = gst_structure_get_value(st, "faces");
        e->faces = faces && GST_VALUE_HOLDS_LIST(faces) ? (int)gst_value_list_get_size(faces) : 0;
    }
    return GST_BUS_PASS;
}

igw_eyes *igw_eyes_start(const char *cascade, igw_eyes_frame frame, void *arg, char *err, size_t errlen)
{
    igw_eyes *e = g_new0(igw_eyes, 1);
    g_mutex_init(&e->mu);
    e->frame = frame;
    e->arg = arg;
    GError *ge = NULL;
    e->decode = gst_parse_launch(
        "udpsrc name=src address=127.0.0.1 port=0 buffer-size=2097152 "
        "caps=\"application/x-rtp,media=video,encoding-name=H264,clock-rate=90000\" "
        "! rtph264depay ! h264parse ! video/x-h264,alignment=au ! openh264dec max-errors=-1 ! videoconvert "
        "! video/x-raw,format=RGB "
        "! appsink name=sink emit-signals=true sync=false max-buffers=4 drop=true",
        &ge);
    if (!e->decode) {
        snprintf(err, errlen, "eyes: %s", ge ? ge->message : "no pipeline");
        g_clear_error(&ge);
        igw_eyes_stop(e);
        return NULL;
    }
    /* The element insists on feature cascades too (its defaults are not in
     * opencv-data): the eye and smile ones beside the face cascade, named
     * at creation so it never tries its own. Only the faces are read. */
    char *dir = g_path_get_dirname(cascade);
    char desc[2048];
    snprintf(desc, sizeof desc,
             "appsrc name=src format=time "
             "! videoconvert ! facedetect name=fd display=false updates=every_frame profile=\"%s\" "
             "eyes-profile=\"%s/haarcascade_eye.xml\" nose-profile=\"%s/haarcascade_eye.xml\" "
             "mouth-profile=\"%s/haarcascade_smile.xml\" min-size-width=24 min-size-height=24 "
             "! videoconvert ! video/x-raw,format=GRAY8 ! appsink name=sink sync=false",
             cascade, dir, dir, dir);
    g_free(dir);
    e->model = gst_parse_launch(desc, &ge);
    if (!e->model) {
        snprintf(err, errlen, "eyes: %s (gstreamer1.0-opencv?)", ge ? ge->message : "no detector");
        g_clear_error(&ge);
        igw_eyes_stop(e);
        return NULL;
    }
    e->model_src = gst_bin_get_by_name(GST_BIN(e->model), "src");
    e->model_sink = gst_bin_get_by_name(GST_BIN(e->model), "sink");
    GstBus *bus = gst_element_get_bus(e->model);
    gst_bus_set_sync_handler(bus, on_model_bus, e, NULL);
    gst_object_unref(bus);
    GstElement *sink = gst_bin_get_by_name(GST_BIN(e->decode), "sink");
    g_signal_connect(sink, "new-sample", G_CALLBACK(on_decoded), e);
    gst_object_unref(sink);
    GstElement *src = gst_bin_get_by_name(GST_BIN(e->decode), "src");
    GstPad *pad = gst_element_get_static_pad(src, "src");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_rtp, e, NULL);
    gst_object_unref(pad);
    if (gst_element_set_state(e->decode, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE ||
        gst_element_set_state(e->model, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        gst_object_unref(src);
        snprintf(err, errlen, "eyes: the pipelines do not start");
        igw_eyes_stop(e);
        return NULL;
    }
    int port = 0;
    g_object_get(src, "port", &port, NULL);
    gst_object_unref(src);
    e->port = (uint16_t)port;
    if (!e->port) {
        snprintf(err, errlen, "eyes: no port bound");
        igw_eyes_stop(e);
        return NULL;
    }
    return e;
}

uint16_t igw_eyes_port(const igw_eyes *e)
{
    return e->port;
}

/* The kept frame rtp_ts, taken out of the ring (the caller's now), or NULL. */
static GstSample *take(igw_eyes *e, uint32_t rtp_ts, bool remove)
{
    GstSample *s = NULL;
    g_mutex_lock(&e->mu);
    for (unsigned i = 0; i < KEPT; i++)
        if (e->frames[i].sample && e->frames[i].ts == rtp_ts) {
            s = e->frames[i].sample;
            if (remove)
                e->frames[i].sample = NULL;
            break;
        }
    g_mutex_unlock(&e->mu);
    return s;
}

bool igw_eyes_has(igw_eyes *e, uint32_t rtp_ts)
{
    return take(e, rtp_ts, false) != NULL;
}

bool igw_eyes_look(igw_eyes *e, uint32_t rtp_ts, int *faces, int *brightness)
{
    GstSample *s = take(e, rtp_ts, true);
    if (!s)
        return false;
    GstCaps *caps = gst_sample_get_caps(s);
    GstBuffer *b = gst_sample_get_buffer(s);
    bool ok = false;
    if (caps && b) {
        gst_app_src_set_caps(GST_APP_SRC(e->model_src), caps);
        e->faces = -1;
        if (gst_app_src_push_buffer(GST_APP_SRC(e->model_src), gst_buffer_ref(b)) == GST_FLOW_OK) {
            GstSample *out = gst_app_sink_try_pull_sample(GST_APP_SINK(e->model_sink), 3 * GST_SECOND);
            GstMapInfo mi;
            GstBuffer *ob = out ? gst_sample_get_buffer(out) : NULL;
            if (ob && gst_buffer_map(ob, &mi, GST_MAP_READ)) {
                uint64_t sum = 0;
                for (gsize i = 0; i < mi.size; i++)
                    sum += mi.data[i];
                *brightness = mi.size ? (int)(sum / mi.size) : 0;
                gst_buffer_unmap(ob, &mi);
                *faces = e->faces < 0 ? 0 : e->faces;
                ok = e->faces >= 0; /* the detector said, not a guess */
            }
            if (out)
                gst_sample_unref(out);
        }
    }
    gst_sample_unref(s);
    return ok;
}

void igw_eyes_forget(igw_eyes *e)
{
    g_mutex_lock(&e->mu);
    for (unsigned i = 0; i < KEPT; i++)
        if (e->frames[i].sample) {
            gst_sample_unref(e->frames[i].sample);
            e->frames[i].sample = NULL;
        }
    g_mutex_unlock(&e->mu);
}

void igw_eyes_stop(igw_eyes *e)
{
    if (!e)
        return;
    if (e->decode) {
        gst_element_set_state(e->decode, GST_STATE_NULL);
        gst_object_unref(e->decode);
    }
    if (e->model) {
        gst_element_set_state(e->model, GST_STATE_NULL);
        gst_object_unref(e->model);
    }
    if (e->model_src)
        gst_object_unref(e->model_src);
    if (e->model_sink)
        gst_object_unref(e->model_sink);
    igw_eyes_forget(e);
    g_mutex_clear(&e->mu);
    g_free(e);
}
