/* ai.c - aiVision: the AI voice session (docs/ai.md). The user talks with
 * the platform's assistant: the application's microphone goes to the
 * session's processors and their voice comes back (the row's `side`); the
 * camera's video is the vision source, paused until a consent and the
 * owner advance it (the row's `vision`: the engine's vision.c). The
 * camera's leg carries its video only. Its processors (the row's
 * `processors`: the reference assistant and the translator) are the
 * engine's processor.c. */
#include "session/purpose.h"

/* Established when both transports are up and the camera's media flows:
 * the application receives nothing before a consent (its video paused)
 * or before a processor speaks, so its own first packet cannot be the
 * sign. */
static bool ai_ready(const live_session *s)
{
    return s->leg && s->leg->phase == LEG_FLOWING;
}

const struct igw_purpose_hooks igw_purpose_ai = {
    .establish_on_flow = false,
    .ready = ai_ready,
};
