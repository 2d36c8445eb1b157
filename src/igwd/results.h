/* results.h - the interaction.result of device commands (device.action,
 * device.propertyControl): from the device's actionReply / controlReply,
 * whichever way it arrives (MQTT or the HTTP edge: both end in edge.c), or
 * from the deadline. Exactly one per accepted command: the event's
 * deliveryId is derived from the command, and its device_commands row is
 * settled (outcome set, once) in the emit's own transaction; a reply for an
 * unknown, foreign or already settled token is dropped and logged. Replies
 * (and overdue commands) handled together share one lookup and one commit. */
#ifndef IGW_RESULTS_H
#define IGW_RESULTS_H

#include <stdint.h>

#include "db.h"
#include "json.h"

/* A device reply being settled. */
typedef struct igw_results_reply igw_results_reply;

/* The device answered the downlink `device_token` with `code` (200:
 * success), its `msg`, and (actionReply) its `response` (ptr NULL: none).
 * Strings are copied. Looks the command up at once, so the lookup runs
 * while the caller stores the reply; the result is emitted once
 * igw_results_reply_stored says the reply is durable. NULL when nothing
 * can be settled (logged). */
igw_results_reply *igw_results_reply_begin(igw_db *db, const char *product_id, const char *device_name,
                                           igw_str device_token, int64_t code, igw_str msg, igw_str response);

/* The reply is durable: its result goes out (now, or when the lookup
 * answers). r may be NULL. Ends r. */
void igw_results_reply_stored(igw_results_reply *r);

/* The reply was not stored: no result. r may be NULL. Ends r. */
void igw_results_reply_cancel(igw_results_reply *r);

/* Settles up to IGW_RESULTS_PASS_MAX commands whose deadline passed without
 * a reply (a failure result each). done(arg, n) is called once every result
 * of the pass is stored or given up (n: how many were overdue), so the
 * caller can keep passes from overlapping: a command stays overdue until its
 * result commits, and a pass started before that would emit it again. Safe
 * from several igwd processes at once. 0, or -1 when nothing was started
 * (done is not called). */
#define IGW_RESULTS_PASS_MAX 256
int igw_results_sweep_timeouts(igw_db *db, int64_t now_ms, void (*done)(void *arg, int n), void *arg);

#endif
