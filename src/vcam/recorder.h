/*
 * recorder.h - igw-vcam's recorder and its catalog: the camera's test
 * pattern and tone encoded once more (H264 + Opus) into Matroska segments
 * of a fixed length (splitmuxsink), each closed segment a recording; its
 * times in a sidecar JSON next to it; retention by age and count.
 *
 * Files in dir, per recording: <id>.mkv and <id>.json, id
 * "rec-<cameraId>-<startTimeMs>". The sidecar is written (atomically) once
 * the segment is closed, so an .mkv without one is a segment cut short by
 * an exit: deleted at the next start. Files of other cameras are left alone.
 *
 * Threads: everything here runs on the GLib main loop of the caller,
 * callbacks included; splitmuxsink names its files on a streaming thread,
 * which reads only what is fixed at creation.
 */
#ifndef IGW_VCAM_RECORDER_H
#define IGW_VCAM_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "signal.h"

/* The hard cap of recordings kept, whatever their age. */
#define IGW_VCAM_RECORDINGS_MAX 1000

typedef struct igw_vcam_recorder_config {
    const char *dir;       /* exists or is made; the recorder's alone */
    const char *camera_id; /* [A-Za-z0-9._-], at most 46 bytes (the id is an Ident <= 64) */
    const char *pattern;   /* videotestsrc pattern */
    int segment_ms;        /* splitmuxsink max-size-time */
    int retain_s;          /* recordings whose end is older are deleted */
    int audio;             /* record the tone (Opus) too */
} igw_vcam_recorder_config;

typedef struct igw_vcam_recorder_cbs {
    /* A segment closed: a new recording (r valid during the call). */
    void (*on_closed)(void *user, const igw_vcam_recording *r);
    /* Retention deleted these recordings (ids valid during the call). */
    void (*on_removed)(void *user, const char *const *ids, unsigned n);
} igw_vcam_recorder_cbs;

typedef struct igw_vcam_recorder igw_vcam_recorder;

/* Checks that camera_id can name recordings. 0, or -1 with err. */
int igw_vcam_recorder_id_ok(const char *camera_id, char *err, size_t errlen);

/* Makes dir, reads the recordings already there, applies retention (each
 * deletion is reported through on_removed before this returns) and starts
 * recording. c's strings are copied. NULL with err when it cannot. */
igw_vcam_recorder *igw_vcam_recorder_new(const igw_vcam_recorder_config *c, const igw_vcam_recorder_cbs *cbs,
                                         void *user, char *err, size_t errlen);

/* The catalog, oldest first: n entries, valid until the main loop runs
 * again. */
const igw_vcam_recording *igw_vcam_recorder_list(igw_vcam_recorder *r, unsigned *n);

/* The recording id, or NULL. *path (the .mkv, valid until the main loop runs
 * again) is set when found. */
const igw_vcam_recording *igw_vcam_recorder_find(igw_vcam_recorder *r, const char *id, const char **path);

/* Ends the segment being written (it becomes a recording, up to about 2 s
 * waited for it) and frees everything. NULL is fine. */
void igw_vcam_recorder_free(igw_vcam_recorder *r);

#endif
