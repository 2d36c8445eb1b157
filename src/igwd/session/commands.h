/* commands.h - the session methods of /commands on the engine's loop, one
 * function per method (named by schema/commands.igw's `methods` table and
 * declared by generated/igwd/methods.h), and the steps of a new session
 * that a purpose's hooks continue. On the engine's loop. */
#ifndef IGW_SESSION_COMMANDS_H
#define IGW_SESSION_COMMANDS_H

#include "session/op.h"

/* The purpose's admit hook let the open through: it goes on (the camera
 * online, the preflights, the leg) to its write. */
void live_op_admitted(live_op *o);

#endif
