/* forward.h - session commands between nodes (issue 28; docs/decisions.md
 * "Several nodes: the channel to the owner").
 *
 * A command for a session another live node holds is accepted here and,
 * in the same statement, written to that node's inbox (table forwards) with
 * a notification on LIVE_FORWARD_CHANNEL naming the owner. The owner claims
 * its rows (its node id and epoch only), decodes each acceptance and runs
 * it through live_command as already accepted: what it refuses then
 * becomes the command's result event. A notification only wakes: the
 * owner claims on each one, whenever its connection becomes ready and on
 * its tick, so a lost notification delays a command, never loses it.
 *
 * The receiving side is op.c's (the acceptance's other statement); this is
 * the owner's. Threads: everything on the engine's loop. */
#ifndef IGW_SESSION_FORWARD_H
#define IGW_SESSION_FORWARD_H

#include <stdint.h>

#include "session/live.h"

/* Listens on the engine's database (call right after igw_db_create). 0, or -1. */
int live_forward_listen(igw_engine *e);

/* Claims this node's forwards now if it has not lately (from the tick). */
void live_forward_tick(igw_engine *e, int64_t now_ms);

#endif
