/*
 * signal_stdio.c - the test signaling transport: JSON lines on stdin/stdout
 * (see signal.h). Stdin is watched with a GIOChannel on the default main
 * context; each wake-up does one read(2), so stdin need not be non-blocking.
 */
#include "signal.h"
#include "flatjson.h"

#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A line holds the SDP escaped (at most 6 bytes per byte is the worst case,
 * but real SDP escapes only CR/LF) plus the envelope: cap the line, not the
 * SDP, at IGW_VCAM_SIGNAL_MAX, as promised in signal.h. */
#define LINE_MAX_BYTES IGW_VCAM_SIGNAL_MAX

typedef struct stdio_signal {
    igw_vcam_signal base;
    GIOChannel *ch;
    guint watch;
    int closed;
    size_t used;
    char line[LINE_MAX_BYTES + 1]; /* one extra byte: an over-long line is detected, not cut */
    char value[LINE_MAX_BYTES + 1];
} stdio_signal;

static void stdio_close(stdio_signal *s, int error)
{
    if (s->closed)
        return;
    s->closed = 1;
    s->base.cbs.on_close(s->base.user, error);
}

/* Handles one complete line (no newline). Returns 0, or -1 if the transport
 * must close with an error. */
static int stdio_line(stdio_signal *s, const char *line, size_t len)
{
    char type[32];
    long n;

    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return 0;
    n = igw_vcam_json_get_string(line, len, "type", type, sizeof type);
    if (n < 0) {
        fprintf(stderr, "vcam: signaling: %s line (%zu bytes)\n",
                n == -1 ? "no \"type\" in a" : "malformed JSON", len);
        return -1;
    }
    if (strcmp(type, "answer") == 0) {
        n = igw_vcam_json_get_string(line, len, "sdp", s->value, sizeof s->value);
        if (n <= 0) {
            fprintf(stderr, "vcam: signaling: answer without a usable \"sdp\" string\n");
            return -1;
        }
        if (strlen(s->value) != (size_t)n) {
            fprintf(stderr, "vcam: signaling: NUL inside the answer's sdp\n");
            return -1;
        }
        s->base.cbs.on_answer(s->base.user, "", 0, s->value);
    } else if (strcmp(type, "renegotiate") == 0) {
        if (s->base.cbs.on_renegotiate)
            s->base.cbs.on_renegotiate(s->base.user);
        else
            fprintf(stderr, "vcam: signaling: renegotiation is not supported, ignored\n");
    } else {
        fprintf(stderr, "vcam: signaling: unknown message type \"%s\", ignored\n", type);
    }
    return 0;
}

static gboolean stdio_readable(GIOChannel *ch, GIOCondition cond, gpointer data)
{
    stdio_signal *s = data;
    ssize_t r;

    (void)ch;
    (void)cond;
    if (s->closed) {
        s->watch = 0;
        return G_SOURCE_REMOVE;
    }
    r = read(STDIN_FILENO, s->line + s->used, sizeof s->line - s->used);
    if (r < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return G_SOURCE_CONTINUE;
        fprintf(stderr, "vcam: signaling: read stdin: %s\n", strerror(errno));
        s->watch = 0;
        stdio_close(s, errno);
        return G_SOURCE_REMOVE;
    }
    if (r == 0) {
        int err = 0;
        /* A last line without its newline still counts. */
        if (s->used > 0 && stdio_line(s, s->line, s->used) < 0)
            err = EPROTO;
        s->used = 0;
        s->watch = 0;
        stdio_close(s, err);
        return G_SOURCE_REMOVE;
    }
    s->used += (size_t)r;

    size_t start = 0;
    for (;;) {
        char *nl = memchr(s->line + start, '\n', s->used - start);
        if (!nl)
            break;
        size_t len = (size_t)(nl - (s->line + start));
        if (stdio_line(s, s->line + start, len) < 0) {
            s->watch = 0;
            stdio_close(s, EPROTO);
            return G_SOURCE_REMOVE;
        }
        start += len + 1;
        if (s->closed) { /* defensive: nothing is read once closed */
            s->watch = 0;
            return G_SOURCE_REMOVE;
        }
    }
    if (start > 0) {
        memmove(s->line, s->line + start, s->used - start);
        s->used -= start;
    }
    if (s->used == sizeof s->line) {
        fprintf(stderr, "vcam: signaling: line longer than %d bytes\n", LINE_MAX_BYTES);
        s->watch = 0;
        stdio_close(s, EMSGSIZE);
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

static int stdio_send_offer(igw_vcam_signal *sig, const char *leg, uint32_t revision, const char *sdp)
{
    static const char head[] = "{\"type\":\"offer\",\"sdp\":";
    size_t len = strlen(sdp), cap = sizeof head + 6 * len + 4, n;
    char *buf;
    int rc = 0;

    if (len > IGW_VCAM_SIGNAL_MAX) {
        fprintf(stderr, "vcam: signaling: offer of %zu bytes is over the limit\n", len);
        return -1;
    }
    buf = malloc(cap);
    if (!buf) {
        fprintf(stderr, "vcam: signaling: out of memory\n");
        return -1;
    }
    memcpy(buf, head, sizeof head); /* with its NUL */
    n = igw_vcam_json_escape(buf, cap, sizeof head - 1, sdp, len);
    if (n == (size_t)-1 || n + 2 >= cap) {
        free(buf);
        return -1;
    }
    buf[n++] = '}';
    buf[n++] = '\n';
    if (n - 1 > LINE_MAX_BYTES) {
        fprintf(stderr, "vcam: signaling: offer line of %zu bytes is over the limit\n", n - 1);
        rc = -1;
    } else if (fwrite(buf, 1, n, stdout) != n || fflush(stdout) != 0) {
        fprintf(stderr, "vcam: signaling: write stdout: %s\n", strerror(errno));
        rc = -1;
    }
    free(buf);
    (void)sig;
    (void)leg;
    (void)revision;
    return rc;
}

static void stdio_destroy(igw_vcam_signal *sig)
{
    stdio_signal *s = (stdio_signal *)sig;

    if (!s)
        return;
    if (s->watch)
        g_source_remove(s->watch);
    if (s->ch)
        g_io_channel_unref(s->ch);
    free(s);
}

static const igw_vcam_signal_ops stdio_ops = {
    .send_offer = stdio_send_offer,
    .destroy = stdio_destroy,
};

igw_vcam_signal *igw_vcam_signal_stdio_new(const igw_vcam_signal_cbs *cbs, void *user)
{
    stdio_signal *s = calloc(1, sizeof *s);

    if (!s) {
        fprintf(stderr, "vcam: signaling: out of memory\n");
        return NULL;
    }
    s->base.ops = &stdio_ops;
    s->base.cbs = *cbs;
    s->base.user = user;
    s->ch = g_io_channel_unix_new(STDIN_FILENO);
    if (!s->ch) {
        fprintf(stderr, "vcam: signaling: cannot watch stdin\n");
        free(s);
        return NULL;
    }
    s->watch = g_io_add_watch(s->ch, G_IO_IN | G_IO_HUP | G_IO_ERR, stdio_readable, s);
    return &s->base;
}
