/* transfer.h - a live session moves to another endpoint of its user
 * (interaction.control endpointControl, docs/sessions.md "Sessions that
 * last"): the application's new endpoint takes over a session of its old
 * one without touching media. On the engine's loop.
 *
 * Allowed for the session's own user and enterprise, from the endpoint that
 * sends the command, naming the session's current endpoint while it is
 * valid or expired less than endpoint_grace_ms ago. Afterwards every event
 * and result of the session goes to the new endpoint, commands from the old
 * one are refused (404, as for another endpoint's session), and the old
 * endpoint's unacknowledged deliveries of the session are moved to the new
 * one in the same statement: the same deliveryIds, pulled or pushed there
 * once, never again on the old one. */
#ifndef IGW_SESSION_TRANSFER_H
#define IGW_SESSION_TRANSFER_H

#include <stdbool.h>

#include "session/op.h"

/* interaction.control endpointControl on s (decide.h's live_transfer_names holds):
 * the old endpoint's window read, then the acceptance, then the move; the
 * result goes to the new endpoint. Refuses and frees o otherwise. */
void live_transfer(live_op *o, live_session *s);

#endif
