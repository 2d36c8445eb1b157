/*
 * gstpeer.h - the test peers' WebRTC offerer around GStreamer's webrtcbin
 * (tests/igwd/gst_viewer.c, tests/media/gst_talkcam.c): one offer, complete
 * (ICE gathered, no trickle), and one answer, as JSON lines on stdout and
 * stdin (tests/media/lib.mjs spawnLines):
 *   out {"type":"offer","sdp":"..."}   once ICE gathering is complete
 *   in  {"type":"answer","sdp":"..."}  applied once; other types ignored
 * plus the main loop around it: stdin EOF, SIGTERM and SIGINT stop it
 * (exit 0), an error stops it with 1 and the reason on stderr.
 *
 * Threads: every function runs on the GLib main loop's thread, except
 * igw_gstpeer_log (any thread). The promise waits block the main loop for
 * the few milliseconds webrtcbin's own thread needs to reply.
 */
#ifndef IGW_TESTS_GSTPEER_H
#define IGW_TESTS_GSTPEER_H

#include <gst/gst.h>
#include <stddef.h>

/* One signaling line: an answer's SDP escaped, plus its envelope. */
#define IGW_GSTPEER_LINE_MAX (256 * 1024)

typedef struct igw_gstpeer {
    const char *prog;    /* the stderr prefix */
    const char *address; /* the only local address ICE uses */
    GMainLoop *loop;
    GstElement *pipe, *webrtc; /* the program builds them; one ref each, dropped by igw_gstpeer_finish */
    guint bus_watch, stats_timer; /* the program's sources, removed by igw_gstpeer_finish */
    guint stdin_watch, gather_timer, sig_term, sig_int;
    void (*on_message)(GstMessage *msg, void *data); /* igw_gstpeer_watch_bus */
    void *message_data;
    GIOChannel *in;
    int stopping, exit_code;
    int offered;  /* create-offer made */
    int sent;     /* the offer is out */
    int answered; /* the answer is applied */
    size_t used;
    char line[IGW_GSTPEER_LINE_MAX + 1]; /* one byte more: an over-long line is seen, not cut */
    char sdp[IGW_GSTPEER_LINE_MAX + 1];
} igw_gstpeer;

/* Ignores SIGPIPE (a reader gone makes writes fail), initializes GStreamer
 * and makes the main loop. p comes zeroed (g_new0: it is large, not for
 * the stack). */
void igw_gstpeer_init(igw_gstpeer *p, const char *prog, const char *address);

/* One line "<prog>: <text>" on stderr, in one call (any thread). */
void igw_gstpeer_log(const igw_gstpeer *p, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Stops the main loop once: logs "error: " (code != 0) or "stopping: "
 * and the reason; later calls do nothing. */
void igw_gstpeer_stop(igw_gstpeer *p, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Writes one line to stdout; a failed write stops with 1. */
void igw_gstpeer_emit(igw_gstpeer *p, const char *line, size_t len);

/* Offers when p->webrtc needs negotiation and sends the offer once ICE
 * gathering is complete (an offer without a candidate stops with 1, as
 * does gathering that takes over 10 s). Call once p->webrtc exists, before
 * the pipeline plays. */
void igw_gstpeer_offer_on_demand(igw_gstpeer *p);

/* Watches p->pipe's bus on the main loop: an error or the end of the
 * stream stops with 1, a warning is logged, and every other message goes
 * to on_message (when not NULL) with data. 0, or -1 (logged). */
int igw_gstpeer_watch_bus(igw_gstpeer *p, void (*on_message)(GstMessage *msg, void *data), void *data);

/* Reads stdin for the answer, stops on SIGTERM/SIGINT, and runs the main
 * loop until stopped. */
void igw_gstpeer_run(igw_gstpeer *p);

/* Tears everything down (pipeline to NULL first: a refusal is an error),
 * runs out the idle callbacks that still point at p, and deinitializes
 * GStreamer. The exit code. */
int igw_gstpeer_finish(igw_gstpeer *p);

#endif
