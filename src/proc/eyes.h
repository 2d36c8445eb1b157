/* eyes.h - a processor's eyes: H264 frames as plain RTP on a loopback UDP
 * port of its own (what igwd's frame takes deliver, one frame each),
 * decoded and kept by their RTP timestamp; a kept frame is looked at (face
 * detection by OpenCV's Haar cascade through GStreamer's facedetect, and
 * its brightness) only when asked, after igwd allowed its consumption
 * (docs/ai.md). Main thread, but for decoding. */
#ifndef IGW_PROC_EYES_H
#define IGW_PROC_EYES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct igw_eyes igw_eyes;

/* A decoded frame arrived (on the streaming thread): its RTP timestamp. */
typedef void (*igw_eyes_frame)(void *arg, uint32_t rtp_ts);

igw_eyes *igw_eyes_start(const char *cascade, igw_eyes_frame frame, void *arg, char *err, size_t errlen);

uint16_t igw_eyes_port(const igw_eyes *e);

/* Whether a frame with that timestamp is kept. */
bool igw_eyes_has(igw_eyes *e, uint32_t rtp_ts);

/* Looks at the kept frame rtp_ts: faces found and mean brightness (0..255).
 * false when it is not kept or the detector failed. The frame is dropped. */
bool igw_eyes_look(igw_eyes *e, uint32_t rtp_ts, int *faces, int *brightness);

/* Drops every kept frame (a revocation: nothing of them is looked at). */
void igw_eyes_forget(igw_eyes *e);

void igw_eyes_stop(igw_eyes *e);

#endif
