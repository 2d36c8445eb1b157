/*
 * message.h - igw-vcam's voice messages (docs/messages.md): each play the
 * platform sends is fetched from its signed link and played on the
 * camera's speaker output, one at a time, in arrival order:
 *   souphttpsrc ! decodebin ! audioconvert ! audioresample ! level ! fakesink sync=true
 * (Ogg/Opus, WAV and MP3 alike; the level messages go to on_level, the
 * speaker log's lines). Each play is answered once through on_reply: 200
 * at its end, 410 when it expired before it started (never fetched then)
 * or its link was refused (404/403/410 from the server: the link expired),
 * 500 on any other failure or after IGW_VCAM_MESSAGE_MAX_S. A play that
 * finds the queue full is not answered (an answer would settle it):
 * on_drained asks for the waiting messages again once all are played. A
 * play whose
 * token came before is not played again: answered again with the same code
 * when it is done, ignored while it waits or plays.
 *
 * Threads: everything on the GLib main loop (a bus watch); the callbacks
 * come there too.
 */
#ifndef IGW_VCAM_MESSAGE_H
#define IGW_VCAM_MESSAGE_H

#include <gst/gst.h>

#include "signal.h"

/* Plays waiting behind the one playing, and the answered tokens kept. */
#define IGW_VCAM_MESSAGES_QUEUE 16
#define IGW_VCAM_MESSAGES_SEEN 64
/* The longest a message plays (the upload's 16 MiB of Opus would last
 * hours): stopped and answered 500 after it. */
#define IGW_VCAM_MESSAGE_MAX_S 600

typedef struct igw_vcam_messages igw_vcam_messages;

typedef struct igw_vcam_messages_cbs {
    /* The play of token is answered: code, msg (NULL: none). */
    void (*on_reply)(void *user, const char *token, int code, const char *msg);
    /* One level message (GstStructure "level") while delivery_id plays;
     * returns its peak in dB (the camera reads levels in one place). */
    double (*on_level)(void *user, const char *delivery_id, const GstStructure *level);
    /* The queue is empty after plays were left unqueued: ask the platform
     * for the waiting messages again. May be NULL. */
    void (*on_drained)(void *user);
} igw_vcam_messages_cbs;

/* An idle player; NULL when out of memory. cbs is copied. */
igw_vcam_messages *igw_vcam_messages_new(const igw_vcam_messages_cbs *cbs, void *user);

/* Queues p (copied), or answers it at once (a repeated token, expired,
 * the queue full). */
void igw_vcam_messages_play(igw_vcam_messages *m, const igw_vcam_play *p);

/* Stops what plays (unanswered: the platform sends it again at the next
 * connection's get) and frees everything. NULL is fine. */
void igw_vcam_messages_free(igw_vcam_messages *m);

#endif
