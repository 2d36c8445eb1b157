/* session.h - session commands (the `session` trait of schema/commands.igw's
 * methods: interaction.open, mediaOffer, mediaState, trackControl, end):
 * their handler hands the command to the node's session engine
 * (session/engine.h), which checks it against the session it names (or,
 * for open, the target and camera), writes the acceptance with the
 * session's rows and answers through the call's `back`. On the calling
 * worker. */
#ifndef IGW_COMMAND_SESSION_H
#define IGW_COMMAND_SESSION_H

#include "command/method.h"

/* generated/igwd/methods.h declares it for every session method: 0 when
 * the engine took the command (call->session_done runs later, once, on
 * this worker), -1 when it could not (stopping, out of memory). */
int igw_session_command(igw_command_call *call);

#endif
