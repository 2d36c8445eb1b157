/*
 * player.h - one recording played into a playback leg: filesrc !
 * matroskademux, H264 (h264parse: avc, SPS/PPS before every keyframe) and Opus
 * each into an appsink that syncs to the clock; each sample goes on to the
 * leg's appsrc with its timestamps cleared, so that the leg (always
 * PLAYING, appsrc do-timestamp) sees one continuous stream across pauses
 * and seeks. Paused, the appsinks hold their preroll: nothing reaches the
 * leg. Playing, the first thing out is the keyframe at the position.
 *
 * Threads: call everything on the main loop; on_eos and on_error come there
 * too (a bus watch). The appsinks push on the player's streaming threads.
 */
#ifndef IGW_VCAM_PLAYER_H
#define IGW_VCAM_PLAYER_H

#include <stddef.h>
#include <stdint.h>

#include <gst/gst.h>

typedef struct igw_vcam_player igw_vcam_player;

typedef struct igw_vcam_player_cbs {
    void (*on_eos)(void *user, igw_vcam_player *p);                  /* the end, while playing */
    void (*on_error)(void *user, igw_vcam_player *p, const char *why); /* the player cannot go on */
} igw_vcam_player_cbs;

/* Opens path (audio: it has an Opus track to play) and prerolls it at its
 * start, paused. Waits up to a few seconds for the preroll. NULL with err
 * when it cannot. */
igw_vcam_player *igw_vcam_player_new(const char *path, int audio,
                                     const igw_vcam_player_cbs *cbs, void *user, char *err, size_t errlen);

/* The caps of what the player puts out (video: H264 avc with codec_data, AUs;
 * else Opus), for the leg's appsrc; a new reference, or NULL. */
GstCaps *igw_vcam_player_caps(igw_vcam_player *p, int video);

/* Where the samples go: the leg's appsrc elements (asrc may be NULL: audio
 * dropped). Set once, before the first play; p keeps a reference. */
void igw_vcam_player_attach(igw_vcam_player *p, GstElement *vsrc, GstElement *asrc);

/* Pushes a copy of each prerolled sample to the attached appsrcs, so that
 * their caps travel down the leg (webrtcbin offers only once every sink pad
 * has caps); the leg must drop these buffers (a closed valve that forwards
 * sticky events). */
void igw_vcam_player_prime(igw_vcam_player *p);

/* Play or pause (waits for the state, bounded). 0 or -1. */
int igw_vcam_player_set_playing(igw_vcam_player *p, int playing);
/* Flushing key-unit seek to ms from the start, the state kept (waits for the
 * preroll, bounded). 0 or -1. */
int igw_vcam_player_seek(igw_vcam_player *p, int64_t ms);
/* ms from the recording's start (0 when unknown). */
int64_t igw_vcam_player_position(igw_vcam_player *p);
int igw_vcam_player_playing(const igw_vcam_player *p);

/* Stops the player (no sample is pushed after) and frees it. NULL is fine. */
void igw_vcam_player_free(igw_vcam_player *p);

#endif
