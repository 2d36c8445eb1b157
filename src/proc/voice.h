/* voice.h - a processor's voice: text synthesized by espeak-ng, encoded as
 * Opus and sent as plain RTP (payload type 111) to a loopback UDP port at
 * the pace it plays (docs/ai.md). Main thread only (espeak-ng is not
 * thread-safe). */
#ifndef IGW_PROC_VOICE_H
#define IGW_PROC_VOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct igw_voice igw_voice;

igw_voice *igw_voice_start(char *err, size_t errlen);

/* Where its RTP goes (0: nowhere: what it says is dropped). */
void igw_voice_target(igw_voice *v, uint16_t port);

/* Says text in the espeak-ng voice named `lang` ("en-us", "es"): queued after
 * what it is saying. false when the voice is unknown or synthesis failed. */
bool igw_voice_say(igw_voice *v, const char *lang, const char *text);

/* Drops what it has not said yet. */
void igw_voice_hush(igw_voice *v);

void igw_voice_stop(igw_voice *v);

#endif
