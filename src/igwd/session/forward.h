/* forward.h - a node's inbox: what reaches a node but is another's
 * (issue 28; docs/decisions.md "Several nodes: the channel to the owner").
 *
 * Three kinds of rows in table forwards, each in the inbox of one node
 * (its id and epoch), with a notification on LIVE_FORWARD_CHANNEL naming
 * it:
 *
 *  - command: a command for a session another live node holds (or an open
 *    of a camera whose shared leg it holds), accepted on the receiving node
 *    in the same statement (op.c, live_op_forward). The owner decodes the
 *    acceptance and runs it through live_command as already accepted; what
 *    it refuses becomes the command's result event.
 *  - uplink: a camera's message on a leg another live node holds (the
 *    broker's shared subscription hands each uplink to any node), stored
 *    here already as every uplink is. The holder runs it as its own
 *    (live_uplink) and writes
 *  - answer: the reply's class, reason and data, in the receiving node's
 *    inbox; the receiving node replies to the camera with it. No answer
 *    within FORWARD_WAIT_MS: the camera is told to retry (unavailable).
 *
 * A notification only wakes: a node claims on each one, whenever its
 * connection becomes ready and on its tick, so a lost notification delays
 * a row, never loses it. Rows of a lapsed or restarted node's epoch are
 * answered (commands) or dropped by any node.
 *
 * Threads: everything on the engine's loop. */
#ifndef IGW_SESSION_FORWARD_H
#define IGW_SESSION_FORWARD_H

#include <stdint.h>

#include "session/live.h"

/* Listens on the engine's database (call right after igw_db_create). 0, or -1. */
int live_forward_listen(igw_engine *e);

/* Claims this node's forwards now if it has not lately, and tells the
 * cameras whose messages' answers are overdue to retry (from the tick). */
void live_forward_tick(igw_engine *e, int64_t now_ms);

/* A camera's message u naming a leg this node does not hold
 * (live_uplink_here false): handed to the live node holding the leg, whose
 * answer comes back through done (ctx), exactly once, later; when no other
 * node holds it, answered here as live_uplink answers it (unknown session).
 * u's strings are copied. */
void live_forward_uplink(igw_engine *e, const igw_engine_uplink *u, live_device_done done, void *ctx);

/* Answers every message still waiting (unavailable): the engine stops. */
void live_forward_stop(igw_engine *e);

#endif
