/* main.c - igw-proc, the reference processor (docs/ai.md): a process of
 * its own that igwd starts for a session's processor and talks to by the
 * processor protocol, one JSON object per line on its stdin and stdout.
 *
 *   --kind aiAssist     the reference assistant: hears the user's
 *                       questions ("what do you see", "how many people",
 *                       "is it dark", "stop looking"), looks through the
 *                       camera only through consented frame takes, and
 *                       answers by voice and by an answer line;
 *   --kind translation  hears the user's English, translates it to Spanish
 *                       (Apertium eng-spa), speaks it (espeak-ng) and says
 *                       both texts in a caption line.
 *
 * Its media is plain RTP on loopback: it listens for the user's audio (and
 * frames) on ports of its own, announced in its ready line; its voice goes
 * to the port igwd configures. Everything it learns leaves as lines; it
 * keeps nothing after it exits. The main thread runs the protocol, the
 * voice and the looking; GStreamer's threads decode and recognize. */
#define _GNU_SOURCE
#include <gio/gio.h>
#include <glib-unix.h>
#include <gst/gst.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ears.h"
#include "eyes.h"
#include "jw.h"
#include "procline.h"
#include "voice.h"

#define MODEL_DIR "/usr/share/pocketsphinx/model/en-us"
#define CASCADE "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml"
#define DARK_BELOW 50 /* mean brightness (0..255) under which a picture is dark */

typedef enum { KIND_ASSIST, KIND_TRANSLATION } proc_kind;

typedef enum { ASK_NONE, ASK_COUNT, ASK_DESCRIBE, ASK_DARK } ask_kind;

static struct {
    proc_kind kind;
    GMainLoop *loop;
    igw_ears *ears;
    igw_eyes *eyes;
    igw_voice *voice;
    char target[16];          /* the translation's target language (primary subtag) */
    int64_t config_revision;
    bool stopped_looking;     /* the user said "stop looking": no more takes */
    ask_kind pending;         /* a question waiting for its frame */
    char question[128];
    char ticket[96];          /* the ticket igwd issued for it ("" : none) */
    uint32_t ticket_frame;
    bool consuming;           /* asked igwd to consume it */
    GString *in;              /* stdin's partial line */
} P;

static void emit(igw_jw *w)
{
    if (igw_jw_status(w) == 0) {
        fwrite(w->buf, 1, w->len, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    igw_jw_free(w);
}

static void emit_simple(const char *op, const char *key, const char *value)
{
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "op", 2);
    igw_jw_string(&w, op, strlen(op));
    if (key) {
        igw_jw_key(&w, key, strlen(key));
        igw_jw_string(&w, value, strlen(value));
    }
    igw_jw_object_end(&w);
    emit(&w);
}

/* ---- speaking and answering --------------------------------------------------- */

static void say(const char *lang, const char *text)
{
    if (!igw_voice_say(P.voice, lang, text))
        emit_simple("error", "message", "the voice could not say it");
}

static void answer(const char *text, int faces, int brightness)
{
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "op", 2);
    igw_jw_string(&w, "answer", 6);
    igw_jw_key(&w, "question", 8);
    igw_jw_string(&w, P.question, strlen(P.question));
    igw_jw_key(&w, "text", 4);
    igw_jw_string(&w, text, strlen(text));
    if (faces >= 0) {
        igw_jw_key(&w, "faces", 5);
        igw_jw_int(&w, faces);
        igw_jw_key(&w, "brightness", 10);
        igw_jw_int(&w, brightness);
    }
    igw_jw_object_end(&w);
    emit(&w);
    say("en-us", text);
}

static void finish_pending(void)
{
    P.pending = ASK_NONE;
    P.ticket[0] = '\0';
    P.consuming = false;
}

/* The consented frame was looked at: the answer the question asked for. */
static void answer_with(int faces, int brightness)
{
    char text[160];
    const char *light = brightness < DARK_BELOW ? "dark" : "bright";
    switch (P.pending) {
    case ASK_COUNT:
        if (faces == 1)
            snprintf(text, sizeof text, "I see 1 person.");
        else
            snprintf(text, sizeof text, "I see %d people.", faces);
        break;
    case ASK_DARK:
        snprintf(text, sizeof text, brightness < DARK_BELOW ? "Yes, it is dark." : "No, it is not dark.");
        break;
    default:
        snprintf(text, sizeof text, "I see %d %s, and it is %s.", faces, faces == 1 ? "person" : "people", light);
        break;
    }
    answer(text, faces, brightness);
    finish_pending();
}

static void cannot_see(const char *why)
{
    char text[300];
    snprintf(text, sizeof text, "I cannot see: %.256s.", why);
    answer(text, -1, 0);
    finish_pending();
}

/* ---- the frame take ------------------------------------------------------------ */

/* Ticket and frame both here: ask igwd whether it may still be consumed. */
static void try_consume(void)
{
    if (!P.ticket[0] || P.consuming || !igw_eyes_has(P.eyes, P.ticket_frame))
        return;
    P.consuming = true;
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "op", 2);
    igw_jw_string(&w, "consume", 7);
    igw_jw_key(&w, "ticket", 6);
    igw_jw_string(&w, P.ticket, strlen(P.ticket));
    igw_jw_key(&w, "frame", 5);
    igw_jw_int(&w, P.ticket_frame);
    igw_jw_object_end(&w);
    emit(&w);
}

static gboolean frame_arrived(gpointer ud)
{
    (void)ud;
    try_consume();
    return G_SOURCE_REMOVE;
}

static void on_frame(void *arg, uint32_t rtp_ts)
{
    (void)arg;
    (void)rtp_ts;
    g_idle_add(frame_arrived, NULL); /* the main thread decides */
}

/* ---- what was heard ------------------------------------------------------------ */

typedef struct heard_msg {
    char *text, *translated;
    int64_t end_ms;
} heard_msg;

static ask_kind classify(const char *text)
{
    if (strstr(text, "how many people"))
        return ASK_COUNT;
    if (strstr(text, "is it dark"))
        return ASK_DARK;
    if (strstr(text, "what do you see"))
        return ASK_DESCRIBE;
    return ASK_NONE;
}

static gboolean heard_main(gpointer ud)
{
    heard_msg *m = ud;
    /* A question about the picture asks for its frame first, before the
     * heard line: the frame nearest the question is the one to answer from,
     * and the heard line's event would otherwise go to igwd's database
     * just ahead of the take's lock. */
    ask_kind k = !m->translated && P.kind == KIND_ASSIST && !strstr(m->text, "stop looking") ? classify(m->text)
                                                                                              : ASK_NONE;
    bool take = k != ASK_NONE && P.pending == ASK_NONE && !P.stopped_looking;
    if (take)
        emit_simple("take", NULL, NULL);
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "op", 2);
    if (m->translated) {
        igw_jw_string(&w, "caption", 7);
        igw_jw_key(&w, "text", 4);
        igw_jw_string(&w, m->text, strlen(m->text));
        igw_jw_key(&w, "translated", 10);
        igw_jw_string(&w, m->translated, strlen(m->translated));
        igw_jw_key(&w, "targetLanguage", 14);
        igw_jw_string(&w, P.target, strlen(P.target));
        igw_jw_key(&w, "configRevision", 14);
        igw_jw_int(&w, P.config_revision);
    } else {
        igw_jw_string(&w, "heard", 5);
        igw_jw_key(&w, "text", 4);
        igw_jw_string(&w, m->text, strlen(m->text));
    }
    igw_jw_key(&w, "endMs", 5);
    igw_jw_int(&w, m->end_ms);
    igw_jw_object_end(&w);
    emit(&w);
    if (m->translated) {
        say(P.target, m->translated);
    } else if (P.kind == KIND_ASSIST) {
        if (strstr(m->text, "stop looking")) {
            snprintf(P.question, sizeof P.question, "%s", m->text);
            P.stopped_looking = true;
            igw_eyes_forget(P.eyes);
            answer("All right, I stopped looking.", -1, 0);
            finish_pending();
        } else if (k != ASK_NONE && P.pending == ASK_NONE) {
            snprintf(P.question, sizeof P.question, "%s", m->text);
            P.pending = k;
            if (!take)
                cannot_see("you asked me to stop looking");
        }
    }
    g_free(m->text);
    g_free(m->translated);
    g_free(m);
    return G_SOURCE_REMOVE;
}

/* Apertium's translation of text (its mode, e.g. eng-spa), or NULL. */
static char *translate(const char *mode, const char *text)
{
    GError *ge = NULL;
    GSubprocess *p = g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                          G_SUBPROCESS_FLAGS_STDERR_SILENCE,
                                      &ge, "apertium", "-u", mode, NULL);
    if (!p) {
        g_clear_error(&ge);
        return NULL;
    }
    char *out = NULL;
    if (!g_subprocess_communicate_utf8(p, text, NULL, &out, NULL, &ge) || !g_subprocess_get_successful(p)) {
        g_clear_error(&ge);
        g_free(out);
        out = NULL;
    }
    g_object_unref(p);
    if (out)
        g_strstrip(out);
    return out;
}

static gboolean translate_failed(gpointer ud)
{
    (void)ud;
    emit_simple("error", "message", "apertium did not translate it");
    return G_SOURCE_REMOVE;
}

/* On the ears' streaming thread: the translation runs here, off the main
 * loop, then the main thread speaks and reports. */
static void on_heard(void *arg, const char *text, int64_t end_ms)
{
    (void)arg;
    heard_msg *m = g_new0(heard_msg, 1);
    m->text = g_strdup(text);
    m->end_ms = end_ms;
    if (P.kind == KIND_TRANSLATION) {
        m->translated = translate("eng-spa", text);
        if (!m->translated) {
            g_free(m->text);
            g_free(m);
            g_idle_add(translate_failed, NULL);
            return;
        }
    }
    g_idle_add(heard_main, m);
}

/* ---- igwd's lines -------------------------------------------------------------- */

static void on_line(const char *line, size_t len)
{
    char op[32], ticket[96], reason[256], src[40], dst[40];
    igw_procfield f[] = {
        {.name = "op", .kind = IGW_PROCLINE_STR, .str = op, .cap = sizeof op},
        {.name = "ticket", .kind = IGW_PROCLINE_STR, .str = ticket, .cap = sizeof ticket},
        {.name = "frame", .kind = IGW_PROCLINE_INT},
        {.name = "ok", .kind = IGW_PROCLINE_BOOL},
        {.name = "reason", .kind = IGW_PROCLINE_STR, .str = reason, .cap = sizeof reason},
        {.name = "feedPort", .kind = IGW_PROCLINE_INT},
        {.name = "sourceLanguage", .kind = IGW_PROCLINE_STR, .str = src, .cap = sizeof src},
        {.name = "targetLanguage", .kind = IGW_PROCLINE_STR, .str = dst, .cap = sizeof dst},
        {.name = "configRevision", .kind = IGW_PROCLINE_INT},
    };
    size_t n = sizeof f / sizeof f[0];
    if (igw_procline_read(line, len, f, n) != 0 || !f[0].present) {
        emit_simple("error", "message", "a line igw-proc cannot read");
        return;
    }
    if (strcmp(op, "configure") == 0) {
        igw_procfield *port = igw_procline_field(f, n, "feedPort"), *rev = igw_procline_field(f, n, "configRevision");
        if (port->present && port->num >= 0 && port->num <= 65535)
            igw_voice_target(P.voice, (uint16_t)port->num);
        if (dst[0])
            snprintf(P.target, sizeof P.target, "%.2s", dst); /* the voice by its primary subtag */
        if (rev->present)
            P.config_revision = rev->num;
        emit_simple("configured", NULL, NULL);
    } else if (strcmp(op, "ticket") == 0) {
        igw_procfield *fr = igw_procline_field(f, n, "frame");
        if (P.pending == ASK_NONE || !ticket[0] || !fr->present)
            return; /* nothing asked: the frame stays unlooked at */
        snprintf(P.ticket, sizeof P.ticket, "%s", ticket);
        P.ticket_frame = (uint32_t)fr->num;
        try_consume();
    } else if (strcmp(op, "refused") == 0) {
        if (P.pending != ASK_NONE)
            cannot_see(reason[0] ? reason : "the camera is not shared with me");
    } else if (strcmp(op, "consumed") == 0) {
        if (!P.ticket[0] || strcmp(ticket, P.ticket) != 0)
            return;
        if (!igw_procline_field(f, n, "ok")->flag) {
            igw_eyes_forget(P.eyes); /* refused: dropped unlooked at */
            cannot_see(reason[0] ? reason : "the frame may no longer be used");
            return;
        }
        int faces = 0, brightness = 0;
        if (!igw_eyes_look(P.eyes, P.ticket_frame, &faces, &brightness)) {
            cannot_see("the detector failed");
            return;
        }
        answer_with(faces, brightness);
    } else if (strcmp(op, "revoked") == 0) {
        /* The consent is gone: nothing kept is looked at, no ticket stands. */
        igw_eyes_forget(P.eyes);
        if (P.pending != ASK_NONE)
            cannot_see("the consent was revoked");
        finish_pending();
    } else if (strcmp(op, "stop") == 0) {
        g_main_loop_quit(P.loop);
    }
}

static gboolean on_stdin(GIOChannel *ch, GIOCondition cond, gpointer ud)
{
    (void)ud;
    char buf[4096];
    gsize got = 0;
    GIOStatus st = (cond & G_IO_IN) ? g_io_channel_read_chars(ch, buf, sizeof buf, &got, NULL) : G_IO_STATUS_EOF;
    if (st == G_IO_STATUS_EOF || st == G_IO_STATUS_ERROR) {
        g_main_loop_quit(P.loop); /* igwd is gone or let go: so are we */
        return G_SOURCE_REMOVE;
    }
    g_string_append_len(P.in, buf, (gssize)got);
    char *nl;
    while ((nl = memchr(P.in->str, '\n', P.in->len)) != NULL) {
        size_t len = (size_t)(nl - P.in->str);
        on_line(P.in->str, len);
        g_string_erase(P.in, 0, (gssize)len + 1);
    }
    if (P.in->len > IGW_PROCLINE_MAX) { /* a line longer than the protocol's: drop it */
        emit_simple("error", "message", "a line longer than the protocol allows");
        g_string_truncate(P.in, 0);
    }
    return G_SOURCE_CONTINUE;
}

static gboolean on_term(gpointer ud)
{
    (void)ud;
    g_main_loop_quit(P.loop);
    return G_SOURCE_REMOVE;
}

/* The assistant's grammar: what it can hear (pocketsphinx loads JSGF). */
static const char assistant_grammar[] =
    "#JSGF V1.0;\ngrammar assistant;\n"
    "public <q> = what do you see | how many people [are there] | is it dark | stop looking | hello;\n";

int main(int argc, char **argv)
{
    const char *kind = NULL, *grammar = NULL, *model = MODEL_DIR, *cascade = CASCADE;
    static const struct option opts[] = {{"kind", required_argument, NULL, 'k'},
                                         {"grammar", required_argument, NULL, 'g'},
                                         {"model", required_argument, NULL, 'm'},
                                         {"cascade", required_argument, NULL, 'c'},
                                         {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'k': kind = optarg; break;
        case 'g': grammar = optarg; break;
        case 'm': model = optarg; break;
        case 'c': cascade = optarg; break;
        default:
            fprintf(stderr, "usage: igw-proc --kind aiAssist|translation [--grammar JSGF] [--model DIR] "
                            "[--cascade XML]\n");
            return 2;
        }
    }
    if (!kind || (strcmp(kind, "aiAssist") != 0 && strcmp(kind, "translation") != 0)) {
        fprintf(stderr, "igw-proc: --kind aiAssist or translation\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a write to a gone igwd fails; it does not kill */
    /* facedetect loads its default feature cascades (not in opencv-data)
     * before ours are set: OpenCV's complaints about those are noise. */
    setenv("OPENCV_LOG_LEVEL", "FATAL", 0);
    gst_init(&argc, &argv);
    P.kind = strcmp(kind, "aiAssist") == 0 ? KIND_ASSIST : KIND_TRANSLATION;
    snprintf(P.target, sizeof P.target, "es");
    P.in = g_string_new(NULL);
    char err[512] = "";
    char gpath[] = "/tmp/igw-proc-XXXXXX.gram";
    if (P.kind == KIND_ASSIST && !grammar) {
        int fd = mkstemps(gpath, 5);
        if (fd < 0 || write(fd, assistant_grammar, sizeof assistant_grammar - 1) !=
                          (ssize_t)(sizeof assistant_grammar - 1)) {
            fprintf(stderr, "igw-proc: cannot write its grammar\n");
            return 1;
        }
        close(fd);
        grammar = gpath;
    }
    P.voice = igw_voice_start(err, sizeof err);
    if (P.voice)
        P.ears = igw_ears_start(model, grammar, on_heard, NULL, err, sizeof err);
    if (grammar == gpath)
        unlink(gpath); /* loaded: the file is not needed */
    if (P.ears && P.kind == KIND_ASSIST)
        P.eyes = igw_eyes_start(cascade, on_frame, NULL, err, sizeof err);
    if (!P.voice || !P.ears || (P.kind == KIND_ASSIST && !P.eyes)) {
        fprintf(stderr, "igw-proc: %s\n", err);
        emit_simple("error", "message", err);
        return 1;
    }
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "op", 2);
    igw_jw_string(&w, "ready", 5);
    igw_jw_key(&w, "audioPort", 9);
    igw_jw_int(&w, igw_ears_port(P.ears));
    if (P.eyes) {
        igw_jw_key(&w, "videoPort", 9);
        igw_jw_int(&w, igw_eyes_port(P.eyes));
    }
    /* What it can translate: source>target primary subtags. */
    igw_jw_key(&w, "pairs", 5);
    igw_jw_string(&w, P.kind == KIND_TRANSLATION ? "en>es" : "", P.kind == KIND_TRANSLATION ? 5 : 0);
    igw_jw_object_end(&w);
    emit(&w);
    P.loop = g_main_loop_new(NULL, FALSE);
    GIOChannel *ch = g_io_channel_unix_new(STDIN_FILENO);
    g_io_channel_set_encoding(ch, NULL, NULL);
    g_io_channel_set_buffered(ch, FALSE);
    g_io_add_watch(ch, G_IO_IN | G_IO_HUP | G_IO_ERR, on_stdin, NULL);
    g_unix_signal_add(SIGTERM, on_term, NULL);
    g_unix_signal_add(SIGINT, on_term, NULL);
    g_main_loop_run(P.loop);
    g_io_channel_unref(ch);
    igw_ears_stop(P.ears);
    igw_eyes_stop(P.eyes);
    igw_voice_stop(P.voice);
    g_main_loop_unref(P.loop);
    g_string_free(P.in, TRUE);
    return 0;
}
