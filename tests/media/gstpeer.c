/* gstpeer.c - see gstpeer.h. */
/* webrtcbin's library is "unstable API" in 1.22; we accept that knowingly. */
#define GST_USE_UNSTABLE_API 1

#include "gstpeer.h"

/* By path: under -Isrc/vcam, src/vcam/signal.h would shadow <signal.h>. */
#include "../../src/vcam/flatjson.h"

#include <errno.h>
#include <glib-unix.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GATHER_TIMEOUT_S 10

void igw_gstpeer_init(igw_gstpeer *p, const char *prog, const char *address)
{
    p->prog = prog;
    p->address = address;
    /* A reader that went away must not kill us silently: writes fail instead. */
    signal(SIGPIPE, SIG_IGN);
    gst_init(NULL, NULL);
    p->loop = g_main_loop_new(NULL, FALSE);
}

void igw_gstpeer_log(const igw_gstpeer *p, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One call per line: streaming threads log too. */
    fprintf(stderr, "%s: %s\n", p->prog, line);
}

void igw_gstpeer_stop(igw_gstpeer *p, int code, const char *fmt, ...)
{
    char why[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (p->stopping)
        return;
    igw_gstpeer_log(p, "%s%s", code ? "error: " : "stopping: ", why);
    p->stopping = 1;
    p->exit_code = code;
    g_main_loop_quit(p->loop);
}

void igw_gstpeer_emit(igw_gstpeer *p, const char *line, size_t len)
{
    if (fwrite(line, 1, len, stdout) != len || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
        igw_gstpeer_stop(p, 1, "write stdout: %s", strerror(errno));
}

/* Waits for webrtcbin's reply to a promise. 0 with *reply (owned by pr,
 * NULL for the set-*-description calls), or -1 after stopping with the
 * error it carries. */
static int promise_wait(igw_gstpeer *p, GstPromise *pr, const char *what, const GstStructure **reply)
{
    GstPromiseResult res = gst_promise_wait(pr);
    const GstStructure *r;
    GError *err = NULL;

    *reply = NULL;
    if (res != GST_PROMISE_RESULT_REPLIED) {
        igw_gstpeer_stop(p, 1, "%s: no reply from webrtcbin (promise result %d)", what, (int)res);
        return -1;
    }
    r = gst_promise_get_reply(pr);
    if (r && gst_structure_has_field(r, "error")) {
        gst_structure_get(r, "error", G_TYPE_ERROR, &err, NULL);
        igw_gstpeer_stop(p, 1, "%s: %s", what, err ? err->message : "unknown error");
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
static void send_offer_if_gathered(igw_gstpeer *p)
{
    GstWebRTCICEGatheringState gs;
    GstWebRTCSessionDescription *desc = NULL;
    static const char head[] = "{\"type\":\"offer\",\"sdp\":";
    gchar *text;
    size_t len, cap, n;
    char *buf;

    if (!p->offered || p->sent || p->stopping)
        return;
    g_object_get(p->webrtc, "ice-gathering-state", &gs, NULL);
    if (gs != GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE)
        return;
    g_object_get(p->webrtc, "local-description", &desc, NULL);
    if (!desc) {
        igw_gstpeer_stop(p, 1, "no local description after ICE gathering");
        return;
    }
    if (!has_candidate(desc->sdp)) {
        gst_webrtc_session_description_free(desc);
        igw_gstpeer_stop(p, 1, "the offer has no ICE candidate (is %s an address of this host?)", p->address);
        return;
    }
    text = gst_sdp_message_as_text(desc->sdp);
    gst_webrtc_session_description_free(desc);
    len = strlen(text);
    cap = sizeof head + 6 * len + 2; /* worst case: every byte \u00XX */
    buf = malloc(cap);
    if (!buf) {
        g_free(text);
        igw_gstpeer_stop(p, 1, "out of memory");
        return;
    }
    memcpy(buf, head, sizeof head); /* with its NUL */
    n = igw_vcam_json_escape(buf, cap, sizeof head - 1, text, len);
    g_free(text);
    if (n == (size_t)-1 || n + 1 >= cap) {
        free(buf);
        igw_gstpeer_stop(p, 1, "cannot encode the offer");
        return;
    }
    buf[n++] = '}';
    p->sent = 1;
    if (p->gather_timer) {
        g_source_remove(p->gather_timer);
        p->gather_timer = 0;
    }
    igw_gstpeer_emit(p, buf, n);
    free(buf);
    igw_gstpeer_log(p, "offer sent (%zu bytes of SDP)", len);
}

static gboolean on_gather_timeout(gpointer data)
{
    igw_gstpeer *p = data;

    p->gather_timer = 0;
    igw_gstpeer_stop(p, 1, "ICE gathering did not complete within %d s", GATHER_TIMEOUT_S);
    return G_SOURCE_REMOVE;
}

static gboolean make_offer(gpointer data)
{
    igw_gstpeer *p = data;
    GstWebRTCSessionDescription *offer = NULL;
    const GstStructure *reply;
    GstPromise *pr;
    int rc;

    if (p->offered || p->stopping)
        return G_SOURCE_REMOVE;
    p->offered = 1;
    pr = gst_promise_new();
    g_signal_emit_by_name(p->webrtc, "create-offer", NULL, pr);
    rc = promise_wait(p, pr, "create-offer", &reply);
    if (rc == 0 && reply)
        gst_structure_get(reply, "offer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &offer, NULL);
    gst_promise_unref(pr);
    if (!offer) {
        if (rc == 0)
            igw_gstpeer_stop(p, 1, "create-offer: no offer in the reply");
        return G_SOURCE_REMOVE;
    }
    pr = gst_promise_new();
    g_signal_emit_by_name(p->webrtc, "set-local-description", offer, pr);
    rc = promise_wait(p, pr, "set-local-description", &reply);
    gst_promise_unref(pr);
    gst_webrtc_session_description_free(offer);
    if (rc < 0)
        return G_SOURCE_REMOVE;
    p->gather_timer = g_timeout_add_seconds(GATHER_TIMEOUT_S, on_gather_timeout, p);
    send_offer_if_gathered(p); /* gathering may be complete already */
    return G_SOURCE_REMOVE;
}

/* webrtcbin's signals come on its own threads: the work goes to the main loop. */
static void on_negotiation_needed(GstElement *webrtc, gpointer data)
{
    (void)webrtc;
    g_idle_add(make_offer, data);
}

static gboolean main_gathering(gpointer data)
{
    send_offer_if_gathered(data);
    return G_SOURCE_REMOVE;
}

static void on_notify_gathering(GObject *obj, GParamSpec *pspec, gpointer data)
{
    (void)obj, (void)pspec;
    g_idle_add(main_gathering, data);
}

void igw_gstpeer_offer_on_demand(igw_gstpeer *p)
{
    g_signal_connect(p->webrtc, "on-negotiation-needed", G_CALLBACK(on_negotiation_needed), p);
    g_signal_connect(p->webrtc, "notify::ice-gathering-state", G_CALLBACK(on_notify_gathering), p);
}

/* ---- the answer ---- */

static void apply_answer(igw_gstpeer *p, const char *sdp)
{
    GstSDPMessage *msg = NULL;
    GstWebRTCSessionDescription *answer;
    const GstStructure *reply;
    GstPromise *pr;

    if (!p->sent || p->answered) {
        igw_gstpeer_stop(p, 1, "an answer came with %s", p->answered ? "one applied already" : "no offer out yet");
        return;
    }
    if (gst_sdp_message_new_from_text(sdp, &msg) != GST_SDP_OK || gst_sdp_message_medias_len(msg) == 0) {
        if (msg)
            gst_sdp_message_free(msg);
        igw_gstpeer_stop(p, 1, "the answer is not an SDP with media");
        return;
    }
    answer = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_ANSWER, msg); /* owns msg */
    pr = gst_promise_new();
    g_signal_emit_by_name(p->webrtc, "set-remote-description", answer, pr);
    if (promise_wait(p, pr, "the answer was refused", &reply) == 0) {
        p->answered = 1;
        igw_gstpeer_log(p, "answer applied");
    }
    gst_promise_unref(pr);
    gst_webrtc_session_description_free(answer);
}

/* One complete line (no newline). */
static void handle_line(igw_gstpeer *p, const char *line, size_t len)
{
    char type[32];
    long n;

    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return;
    n = igw_vcam_json_get_string(line, len, "type", type, sizeof type);
    if (n < 0) {
        igw_gstpeer_stop(p, 1, "signaling: %s line (%zu bytes)", n == -1 ? "no \"type\" string in a" : "malformed JSON",
                         len);
        return;
    }
    if (strcmp(type, "answer") != 0) {
        igw_gstpeer_log(p, "signaling: unknown message type \"%s\", ignored", type);
        return;
    }
    n = igw_vcam_json_get_string(line, len, "sdp", p->sdp, sizeof p->sdp);
    if (n <= 0 || strlen(p->sdp) != (size_t)n) {
        igw_gstpeer_stop(p, 1, "signaling: an answer without a usable \"sdp\" string");
        return;
    }
    apply_answer(p, p->sdp);
}

static gboolean on_stdin(GIOChannel *ch, GIOCondition cond, gpointer data)
{
    igw_gstpeer *p = data;
    size_t start = 0;
    ssize_t r;

    (void)ch;
    (void)cond;
    r = read(STDIN_FILENO, p->line + p->used, sizeof p->line - p->used);
    if (r < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return G_SOURCE_CONTINUE;
        p->stdin_watch = 0;
        igw_gstpeer_stop(p, 1, "read stdin: %s", strerror(errno));
        return G_SOURCE_REMOVE;
    }
    if (r == 0) {
        /* A last line without its newline still counts. */
        if (p->used > 0)
            handle_line(p, p->line, p->used);
        p->used = 0;
        p->stdin_watch = 0;
        igw_gstpeer_stop(p, 0, "stdin closed");
        return G_SOURCE_REMOVE;
    }
    p->used += (size_t)r;
    for (;;) {
        char *nl = memchr(p->line + start, '\n', p->used - start);
        size_t len;

        if (!nl || p->stopping)
            break;
        len = (size_t)(nl - (p->line + start));
        handle_line(p, p->line + start, len);
        start += len + 1;
    }
    if (p->stopping) {
        p->stdin_watch = 0;
        return G_SOURCE_REMOVE;
    }
    memmove(p->line, p->line + start, p->used - start);
    p->used -= start;
    if (p->used == sizeof p->line) {
        p->stdin_watch = 0;
        igw_gstpeer_stop(p, 1, "signaling: a line longer than %d bytes", IGW_GSTPEER_LINE_MAX);
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

/* ---- the main loop ---- */

static gboolean on_bus(GstBus *bus, GstMessage *msg, gpointer data)
{
    igw_gstpeer *p = data;
    GError *err = NULL;
    gchar *dbg = NULL;

    (void)bus;
    switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR:
        gst_message_parse_error(msg, &err, &dbg);
        igw_gstpeer_stop(p, 1, "%s: %s (%s)", GST_OBJECT_NAME(msg->src), err ? err->message : "error", dbg ? dbg : "");
        break;
    case GST_MESSAGE_WARNING:
        gst_message_parse_warning(msg, &err, &dbg);
        igw_gstpeer_log(p, "warning: %s: %s", GST_OBJECT_NAME(msg->src), err ? err->message : "warning");
        break;
    case GST_MESSAGE_EOS:
        igw_gstpeer_stop(p, 1, "unexpected end of stream");
        break;
    default:
        if (p->on_message)
            p->on_message(msg, p->message_data);
        break;
    }
    g_clear_error(&err);
    g_free(dbg);
    return G_SOURCE_CONTINUE;
}

int igw_gstpeer_watch_bus(igw_gstpeer *p, void (*on_message)(GstMessage *msg, void *data), void *data)
{
    GstBus *bus = gst_element_get_bus(p->pipe);

    p->on_message = on_message;
    p->message_data = data;
    p->bus_watch = bus ? gst_bus_add_watch(bus, on_bus, p) : 0;
    if (bus)
        gst_object_unref(bus);
    if (!p->bus_watch) {
        igw_gstpeer_log(p, "error: cannot watch the pipeline's bus");
        return -1;
    }
    return 0;
}

static gboolean on_unix_signal(gpointer data)
{
    igw_gstpeer_stop(data, 0, "signal received");
    return G_SOURCE_CONTINUE;
}

void igw_gstpeer_run(igw_gstpeer *p)
{
    p->in = g_io_channel_unix_new(STDIN_FILENO);
    p->stdin_watch = g_io_add_watch(p->in, G_IO_IN | G_IO_HUP | G_IO_ERR, on_stdin, p);
    p->sig_term = g_unix_signal_add(SIGTERM, on_unix_signal, p);
    p->sig_int = g_unix_signal_add(SIGINT, on_unix_signal, p);
    g_main_loop_run(p->loop);
}

int igw_gstpeer_finish(igw_gstpeer *p)
{
    guint *srcs[] = {&p->stats_timer, &p->gather_timer, &p->stdin_watch, &p->sig_term, &p->sig_int, &p->bus_watch};

    p->stopping = 1;
    if (p->pipe && gst_element_set_state(p->pipe, GST_STATE_NULL) == GST_STATE_CHANGE_FAILURE && !p->exit_code) {
        igw_gstpeer_log(p, "error: the pipeline does not stop");
        p->exit_code = 1;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(srcs); i++)
        if (*srcs[i])
            g_source_remove(*srcs[i]);
    if (p->in)
        g_io_channel_unref(p->in);
    if (p->webrtc)
        gst_object_unref(p->webrtc);
    if (p->pipe)
        gst_object_unref(p->pipe);
    /* Idle callbacks queued by late notifications point at p: run them out
     * (they see p->stopping) before p goes. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_main_loop_unref(p->loop);
    gst_deinit();
    return p->exit_code;
}
