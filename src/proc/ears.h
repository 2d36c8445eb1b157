/* ears.h - a processor's ears: the user's audio as plain Opus RTP on a
 * loopback UDP port of its own, cut into utterances by energy, each
 * recognized by pocketsphinx (docs/ai.md). Recognition runs on GStreamer's
 * streaming thread, never on the caller's loop; what was heard comes back
 * through `heard` on that streaming thread (the caller marshals it). */
#ifndef IGW_PROC_EARS_H
#define IGW_PROC_EARS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct igw_ears igw_ears;

/* heard(arg, text, end_ms): an utterance's words (UTF-8), the wall clock
 * (Unix ms) when its speech ended (its last loud 20 ms, as it arrived;
 * the utterance is cut 500 ms of quiet later). Called on the streaming
 * thread. */
typedef void (*igw_ears_heard)(void *arg, const char *text, int64_t end_ms);

/* Starts listening on 127.0.0.1 (any port): model_dir holds the acoustic
 * model and dictionary (en-us, cmudict-en-us.dict); grammar a JSGF file
 * restricting what can be heard, or NULL for the general language model
 * (best effort). NULL with err. */
igw_ears *igw_ears_start(const char *model_dir, const char *grammar, igw_ears_heard heard, void *arg, char *err,
                         size_t errlen);

/* The UDP port it listens on. */
uint16_t igw_ears_port(const igw_ears *e);

void igw_ears_stop(igw_ears *e);

#endif
