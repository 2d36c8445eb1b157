/* processor.h - a session's processors (docs/ai.md, "Processors"):
 * interaction.processorControl attaches them, interaction.configure sets
 * their translation, and what they say reaches the application as
 * interaction.processor events. Which processors a session runs is its
 * purpose's row (`processors`, igw_purpose.processors); each runs as a
 * process of its own (child.h) that hears the application's voice through
 * a tap of the media core: its side conversation (an AI session) or what it
 * sends the camera's speaker (talk: the translator's voice then goes to the
 * speaker in its place). An aiAssist sees a vision source's camera only by
 * frame takes bound to the consents (vision.h).
 *
 * The set hangs on the session (live_session.processors) from the first
 * processorControl or configure on it; the session's end and the loss of
 * its vision's consents reach it through that pointer. Everything here runs
 * on the engine's loop. */
#ifndef IGW_SESSION_PROCESSOR_H
#define IGW_SESSION_PROCESSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "media.h"
#include "session/live.h"

/* interaction.processorControl and interaction.configure (the schema's
 * methods table names them): each answers o. */
void igw_processor_control(live_op *o);
void igw_processor_configure(live_op *o);

/* A media event of a processor's own viewer (an aiAssist's eyes): true when
 * it was one (the engine offers it every viewer event no session claims). */
bool live_processor_media(igw_engine *e, const igw_media_event *ev);

/* Every engine tick: a processor not ready in time, or stalled, failed. */
void live_processor_tick(igw_engine *e, int64_t now_ms);

#endif
