/* ears.c - see ears.h. */
#include "ears.h"

#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <pocketsphinx.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#define RATE 16000
#define FRAME (RATE / 50)             /* 20 ms of samples: the energy detector's step */
#define MAX_UTTERANCE (RATE * 10)     /* longer speech is cut: bounded memory */
#define SPEECH_RMS 600                /* about -35 dBFS: louder is speech */
#define HANG_FRAMES 25                /* 500 ms of quiet ends an utterance */
#define MIN_SPEECH_FRAMES 10          /* shorter bursts are noise */

struct igw_ears {
    GstElement *pipe;
    ps_decoder_t *ps;
    cmd_ln_t *config;
    igw_ears_heard heard;
    void *arg;
    uint16_t port;
    int16_t *buf;          /* the utterance so far */
    size_t n;
    int16_t frame[FRAME];  /* a partial 20 ms frame */
    size_t nframe;
    int quiet, loud;       /* frames since the last loud one; loud frames in the utterance */
    int64_t last_loud_ms;  /* wall clock of the last loud frame: where the speech ended */
};

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void recognize(igw_ears *e)
{
    if (e->loud >= MIN_SPEECH_FRAMES && ps_start_utt(e->ps) == 0) {
        ps_process_raw(e->ps, e->buf, e->n, FALSE, TRUE);
        ps_end_utt(e->ps);
        int32 score;
        const char *hyp = ps_get_hyp(e->ps, &score);
        if (hyp && hyp[0])
            e->heard(e->arg, hyp, e->last_loud_ms);
    }
    e->n = 0;
    e->loud = 0;
    e->quiet = 0;
}

/* One 20 ms frame: kept while speech goes on, recognized after the hang. */
static void step(igw_ears *e, const int16_t *f)
{
    int64_t sum = 0;
    for (int i = 0; i < FRAME; i++)
        sum += (int64_t)f[i] * f[i];
    bool loud = sum / FRAME > (int64_t)SPEECH_RMS * SPEECH_RMS;
    if (!loud && e->n == 0)
        return; /* silence before speech: nothing kept */
    if (e->n + FRAME <= MAX_UTTERANCE) {
        memcpy(e->buf + e->n, f, sizeof(int16_t) * FRAME);
        e->n += FRAME;
    }
    if (loud) {
        e->loud++;
        e->quiet = 0;
        e->last_loud_ms = wall_ms();
    } else {
        e->quiet++;
    }
    if (e->quiet >= HANG_FRAMES || e->n + FRAME > MAX_UTTERANCE)
        recognize(e);
}

static GstFlowReturn on_sample(GstAppSink *sink, gpointer ud)
{
    igw_ears *e = ud;
    GstSample *s = gst_app_sink_pull_sample(sink);
    if (!s)
        return GST_FLOW_OK;
    GstBuffer *b = gst_sample_get_buffer(s);
    GstMapInfo mi;
    if (b && gst_buffer_map(b, &mi, GST_MAP_READ)) {
        const int16_t *p = (const int16_t *)mi.data;
        size_t n = mi.size / sizeof(int16_t);
        for (size_t i = 0; i < n; i++) {
            e->frame[e->nframe++] = p[i];
            if (e->nframe == FRAME) {
                step(e, e->frame);
                e->nframe = 0;
            }
        }
        gst_buffer_unmap(b, &mi);
    }
    gst_sample_unref(s);
    return GST_FLOW_OK;
}

igw_ears *igw_ears_start(const char *model_dir, const char *grammar, igw_ears_heard heard, void *arg, char *err,
                         size_t errlen)
{
    igw_ears *e = g_new0(igw_ears, 1);
    e->heard = heard;
    e->arg = arg;
    e->buf = g_new(int16_t, MAX_UTTERANCE);
    char hmm[512], dict[512], lm[512];
    snprintf(hmm, sizeof hmm, "%s/en-us", model_dir);
    snprintf(dict, sizeof dict, "%s/cmudict-en-us.dict", model_dir);
    snprintf(lm, sizeof lm, "%s/en-us.lm.bin", model_dir);
    e->config = grammar ? cmd_ln_init(NULL, ps_args(), TRUE, "-hmm", hmm, "-dict", dict, "-jsgf", grammar, "-samprate",
                                      "16000", "-logfn", "/dev/null", NULL)
                        : cmd_ln_init(NULL, ps_args(), TRUE, "-hmm", hmm, "-dict", dict, "-lm", lm, "-samprate",
                                      "16000", "-logfn", "/dev/null", NULL);
    if (!e->config || !(e->ps = ps_init(e->config))) {
        snprintf(err, errlen, "pocketsphinx: cannot load the model under %s%s%s", model_dir,
                 grammar ? " with the grammar " : "", grammar ? grammar : "");
        igw_ears_stop(e);
        return NULL;
    }
    GError *ge = NULL;
    e->pipe = gst_parse_launch(
        "udpsrc name=src address=127.0.0.1 port=0 "
        "caps=\"application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000\" "
        "! rtpopusdepay ! opusdec plc=true ! audioconvert ! audioresample "
        "! audio/x-raw,format=S16LE,rate=16000,channels=1 ! appsink name=sink emit-signals=true sync=false",
        &ge);
    if (!e->pipe) {
        snprintf(err, errlen, "ears: %s", ge ? ge->message : "no pipeline");
        g_clear_error(&ge);
        igw_ears_stop(e);
        return NULL;
    }
    GstElement *sink = gst_bin_get_by_name(GST_BIN(e->pipe), "sink");
    g_signal_connect(sink, "new-sample", G_CALLBACK(on_sample), e);
    gst_object_unref(sink);
    if (gst_element_set_state(e->pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        snprintf(err, errlen, "ears: the pipeline does not start");
        igw_ears_stop(e);
        return NULL;
    }
    GstElement *src = gst_bin_get_by_name(GST_BIN(e->pipe), "src");
    int port = 0;
    g_object_get(src, "port", &port, NULL);
    gst_object_unref(src);
    e->port = (uint16_t)port;
    if (!e->port) {
        snprintf(err, errlen, "ears: no port bound");
        igw_ears_stop(e);
        return NULL;
    }
    return e;
}

uint16_t igw_ears_port(const igw_ears *e)
{
    return e->port;
}

void igw_ears_stop(igw_ears *e)
{
    if (!e)
        return;
    if (e->pipe) {
        gst_element_set_state(e->pipe, GST_STATE_NULL);
        gst_object_unref(e->pipe);
    }
    if (e->ps)
        ps_free(e->ps); /* its reference to the config */
    if (e->config)
        cmd_ln_free_r(e->config);
    g_free(e->buf);
    g_free(e);
}
