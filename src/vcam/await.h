/*
 * await.h - igw-vcam's uplinks that want their reply (the capability
 * report, the recording catalog's reports): sent again with backoff
 * (IGW_VCAM_AWAIT_FIRST_MS doubling to IGW_VCAM_AWAIT_MAX_MS) until
 * answered. igwd may not have been subscribed when one went (igwd started
 * after the camera, a broker without persistence restarted): a device's
 * report must not depend on who listened (docs/decisions.md). One
 * mechanism for every such uplink; runs on the GLib main loop.
 */
#ifndef IGW_VCAM_AWAIT_H
#define IGW_VCAM_AWAIT_H

#include <glib.h>

#include "signal.h"

#define IGW_VCAM_AWAIT_FIRST_MS 1000
#define IGW_VCAM_AWAIT_MAX_MS 30000
/* Tokens remembered (ANY: the newest; ALL: more mean "send again anyway"). */
#define IGW_VCAM_AWAIT_TOKENS 32

typedef enum igw_vcam_await_mode {
    /* Every uplink sent is the same report again: a reply to any of them
     * (since the last reset) ends the wait. The capability report. */
    IGW_VCAM_AWAIT_ANY,
    /* Each uplink wants its own reply; a resend stands for all those
     * unanswered (it sends everything again, with fresh tokens). The
     * recording catalog. */
    IGW_VCAM_AWAIT_ALL,
} igw_vcam_await_mode;

typedef struct igw_vcam_await {
    igw_vcam_await_mode mode;
    /* Sends again what stands for the unanswered uplinks, giving each
     * token sent to igw_vcam_await_sent; after_ms: how long they waited
     * (for the log). Sending nothing (offline) ends the resends until
     * the next igw_vcam_await_sent. */
    void (*resend)(void *user, unsigned after_ms);
    void *user;
    char tokens[IGW_VCAM_AWAIT_TOKENS][IGW_VCAM_TOKEN_MAX + 1];
    unsigned ntokens;
    int overflow;      /* ALL: more were unanswered than remembered */
    guint timer;       /* the next resend (0: none) */
    unsigned delay_ms; /* the wait before it */
} igw_vcam_await;

/* Sets a up, nothing awaited. */
void igw_vcam_await_init(igw_vcam_await *a, igw_vcam_await_mode mode, void (*resend)(void *user, unsigned after_ms),
                         void *user);

/* token (NUL-terminated, at most IGW_VCAM_TOKEN_MAX bytes) went and wants
 * its reply: the resend is armed unless it is already. */
void igw_vcam_await_sent(igw_vcam_await *a, const char *token);

/* A reply came for token: 1 when it was awaited (then forgotten; nothing
 * left awaited stops the resends and resets the backoff), 0 when it
 * answers nothing awaited (a stale or foreign reply). */
int igw_vcam_await_answered(igw_vcam_await *a, const char *token);

/* Whether anything is awaited. */
int igw_vcam_await_pending(const igw_vcam_await *a);

/* Forgets everything awaited, stops the resends and resets the backoff
 * (a new connection sends afresh; disconnected; torn down). */
void igw_vcam_await_reset(igw_vcam_await *a);

#endif
