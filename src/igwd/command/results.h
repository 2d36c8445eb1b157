/* results.h - the interaction.result of device commands (device.action,
 * device.propertyControl, messageSend): from the device's actionReply /
 * controlReply / playReply,
 * whichever way it arrives (MQTT or the HTTP edge: both end in edge.c), or
 * from the deadline. Exactly one per accepted command: the event's
 * deliveryId is derived from the command, and its device_commands row is
 * settled (outcome set, once) in the emit's own transaction; a reply for an
 * unknown, foreign or already settled token is dropped and logged. Replies
 * (and overdue commands) handled together share one lookup and one commit. */
#ifndef IGW_RESULTS_H
#define IGW_RESULTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/db.h"
#include "json.h"
#include "command/pending.h"

/* A device's answer to the downlink `device_token`: `code` (200: success),
 * its `msg`, and (actionReply) its `response` (ptr NULL: none), and the
 * uplink as device_messages stores it (handle, type, method, the raw JSON
 * body). Strings are copied. */
typedef struct igw_results_reply_in {
    const char *product_id, *device_name;
    igw_str device_token;
    int64_t code;
    igw_str msg, response;
    const char *handle, *type;
    igw_str method;
    const char *body;
    size_t body_len;
    igw_pending *pending; /* the commands this process published (NULL: look every reply up) */
} igw_results_reply_in;

enum {
    IGW_RESULTS_STORED,  /* the reply is durable, in the same transaction as its command's result */
    IGW_RESULTS_NOTHING, /* it settles no pending command (logged): store it as any uplink */
    IGW_RESULTS_FAILED,  /* the lookup or the transaction failed (err: igw_db's, SQLSTATE first when the server
                          * refused): nothing stored, the device should send it again */
};
typedef void (*igw_results_reply_cb)(void *arg, int status, const char *err);

/* Settles the command a device reply answers: takes it from in->pending
 * or else looks it up, then stores the reply and the command's result in
 * one statement and one commit (one commit less between the device and the
 * application's push than storing the reply first). cb is called once. 0,
 * or -1 when nothing was started (out of memory, or the database's queue
 * is full; cb is not called). */
int igw_results_reply(igw_db *db, const igw_results_reply_in *in, igw_results_reply_cb cb, void *arg);

/* What an overdue pass found and did. */
typedef struct igw_results_pass {
    bool looked;     /* the lookup answered (false: nothing is known) */
    int overdue;     /* commands found overdue, at most IGW_RESULTS_PASS_MAX */
    int settled;     /* of which the command is settled (its result stored, or by another igwd) */
    int64_t first_deadline_ms, last_deadline_ms; /* of those found, when overdue > 0 */
} igw_results_pass;

/* Settles up to IGW_RESULTS_PASS_MAX commands whose deadline passed without
 * a reply, earliest first, from_ms <= deadline < now_ms (a failure result
 * each; from_ms 0: every one). done(arg, r) is called once every result of
 * the pass is stored or given up, so the caller can keep passes from
 * overlapping (a command stays overdue until its result commits, and a pass
 * started before that would emit it again) and move from_ms on. Safe from
 * several igwd processes at once. 0, or -1 when nothing was started (done
 * is not called). */
#define IGW_RESULTS_PASS_MAX 256
int igw_results_sweep_timeouts(igw_db *db, int64_t now_ms, int64_t from_ms,
                               void (*done)(void *arg, const igw_results_pass *r), void *arg);

#endif
