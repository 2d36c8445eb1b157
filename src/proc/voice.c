/* voice.c - see voice.h. */
#include "voice.h"

#include <espeak-ng/espeak_ng.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <stdio.h>
#include <string.h>

#define MAX_SAMPLES (22050 * 30) /* one utterance: at most 30 s at espeak-ng's rate */

struct igw_voice {
    GstElement *pipe, *src, *sink;
    int rate;
    GArray *pcm;               /* the utterance being synthesized */
    GstClockTime next;         /* running time its next utterance may start at */
};

static igw_voice *current;     /* espeak-ng's callback has no user pointer of ours */

static int on_synth(short *wav, int n, espeak_EVENT *ev)
{
    (void)ev;
    if (wav && n > 0 && current && current->pcm->len + (guint)n <= MAX_SAMPLES)
        g_array_append_vals(current->pcm, wav, (guint)n);
    return 0;
}

igw_voice *igw_voice_start(char *err, size_t errlen)
{
    igw_voice *v = g_new0(igw_voice, 1);
    espeak_ng_InitializePath(NULL);
    if (espeak_ng_Initialize(NULL) != ENS_OK || espeak_ng_InitializeOutput(ENOUTPUT_MODE_SYNCHRONOUS, 0, NULL) != ENS_OK) {
        snprintf(err, errlen, "espeak-ng: cannot initialize (its data under /usr/lib/x86_64-linux-gnu/espeak-ng-data?)");
        g_free(v);
        return NULL;
    }
    espeak_SetSynthCallback(on_synth);
    v->rate = espeak_ng_GetSampleRate();
    v->pcm = g_array_new(FALSE, FALSE, sizeof(short));
    char desc[640];
    snprintf(desc, sizeof desc,
             "appsrc name=src format=time is-live=true "
             "caps=audio/x-raw,format=S16LE,rate=%d,channels=1,layout=interleaved "
             "! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=1 "
             "! opusenc frame-size=20 ! rtpopuspay pt=111 "
             "! udpsink name=sink host=127.0.0.1 port=9 sync=true async=false",
             v->rate);
    GError *ge = NULL;
    v->pipe = gst_parse_launch(desc, &ge);
    if (!v->pipe) {
        snprintf(err, errlen, "voice: %s", ge ? ge->message : "no pipeline");
        g_clear_error(&ge);
        igw_voice_stop(v);
        return NULL;
    }
    v->src = gst_bin_get_by_name(GST_BIN(v->pipe), "src");
    v->sink = gst_bin_get_by_name(GST_BIN(v->pipe), "sink");
    if (gst_element_set_state(v->pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        snprintf(err, errlen, "voice: the pipeline does not start");
        igw_voice_stop(v);
        return NULL;
    }
    igw_voice_target(v, 0);
    return v;
}

void igw_voice_target(igw_voice *v, uint16_t port)
{
    /* Port 0 (none): the discard port on loopback, where nothing listens. */
    g_object_set(v->sink, "port", port ? (int)port : 9, NULL);
}

static GstClockTime running_time(igw_voice *v)
{
    GstClock *clock = gst_element_get_clock(v->pipe);
    if (!clock)
        return 0;
    GstClockTime now = gst_clock_get_time(clock);
    gst_object_unref(clock);
    GstClockTime base = gst_element_get_base_time(v->pipe);
    return now > base ? now - base : 0;
}

bool igw_voice_say(igw_voice *v, const char *lang, const char *text)
{
    if (espeak_ng_SetVoiceByName(lang) != ENS_OK)
        return false;
    g_array_set_size(v->pcm, 0);
    current = v;
    espeak_ng_STATUS st = espeak_ng_Synthesize(text, strlen(text) + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL, NULL);
    if (st == ENS_OK)
        st = espeak_ng_Synchronize();
    current = NULL;
    if (st != ENS_OK || v->pcm->len == 0)
        return false;
    /* Played from now, or after what is still being said; timestamped so
     * the sink sends at the pace it plays. */
    GstClockTime now = running_time(v) + 20 * GST_MSECOND;
    GstClockTime at = v->next > now ? v->next : now;
    gsize bytes = v->pcm->len * sizeof(short);
    GstBuffer *b = gst_buffer_new_allocate(NULL, bytes, NULL);
    gst_buffer_fill(b, 0, v->pcm->data, bytes);
    GST_BUFFER_PTS(b) = at;
    GST_BUFFER_DURATION(b) = gst_util_uint64_scale(v->pcm->len, GST_SECOND, (guint64)v->rate);
    v->next = at + GST_BUFFER_DURATION(b);
    return gst_app_src_push_buffer(GST_APP_SRC(v->src), b) == GST_FLOW_OK;
}

void igw_voice_hush(igw_voice *v)
{
    /* A flush drops what is queued; the next utterance starts from now. */
    gst_element_send_event(v->pipe, gst_event_new_flush_start());
    gst_element_send_event(v->pipe, gst_event_new_flush_stop(FALSE));
    v->next = 0;
}

void igw_voice_stop(igw_voice *v)
{
    if (!v)
        return;
    if (v->pipe) {
        gst_element_set_state(v->pipe, GST_STATE_NULL);
        gst_object_unref(v->pipe);
    }
    if (v->src)
        gst_object_unref(v->src);
    if (v->sink)
        gst_object_unref(v->sink);
    if (v->pcm)
        g_array_free(v->pcm, TRUE);
    espeak_ng_Terminate();
    g_free(v);
}
