/* recordings.h - the recordings catalog: written from the cameras' own
 * reports (the device protocol's `media recording report`), read by
 * applications (/recordings/query; docs/recordings.md) and by playback
 * sessions. The platform's trusted facts about what a camera recorded,
 * never an address, path or secret.
 *
 * Reads and writes run on the caller's loop (its database connection) and check, in
 * the same statement and before any catalog row is read, the endpoint
 * (the caller's, unexpired), the caller's rights on the device (its true
 * owner or a grant, in the caller's enterprise) and the camera. */
#ifndef IGW_CATALOG_RECORDINGS_H
#define IGW_CATALOG_RECORDINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "core/db.h"

/* A query's limit, 1..this: the schema's, and the most a reply lists. */
#define IGW_RECORDINGS_LIMIT_MAX IGW_RecordingsQuery_limit_MAX
_Static_assert(IGW_RECORDINGS_LIMIT_MAX == IGW_RecordingsData_list_MAX_ITEMS, "a reply lists up to the limit");

typedef enum igw_recordings_status {
    IGW_RECORDINGS_OK,
    IGW_RECORDINGS_UNKNOWN_ENDPOINT, /* unknown, expired, or not the caller's */
    IGW_RECORDINGS_NO_RIGHTS,        /* no rights on the device (or no such device) */
    IGW_RECORDINGS_UNKNOWN_CAMERA,   /* the device has no such camera */
    IGW_RECORDINGS_FAILED,           /* the database: err says why (logs only) */
} igw_recordings_status;

typedef struct igw_recording {
    const char *recording_id, *camera_id, *video_codec, *audio_codec; /* audio_codec NULL: none */
    int64_t start_ms, end_ms, duration_ms, version;
    bool available;
} igw_recording;

/* Valid during the callback only. */
typedef struct igw_recordings_result {
    igw_recordings_status status;
    const char *err;
    const igw_recording *list; /* ordered by start time, then id */
    unsigned n;
    bool has_more; /* more started in the window than the limit */
} igw_recordings_result;

typedef void (*igw_recordings_cb)(void *arg, const igw_recordings_result *r);

typedef struct igw_recordings_query {
    int64_t enterprise_id, user_id;
    const char *endpoint_id, *product_id, *device_name, *camera_id;
    int64_t start_ms, end_ms; /* the window, [start, end): recordings that start in it */
    unsigned limit;           /* 1..IGW_RECORDINGS_LIMIT_MAX */
} igw_recordings_query;

/* 0, and cb(arg, result) once later on db's loop; -1 (queue full, out of
 * memory): cb never runs. Strings are copied. */
int igw_recordings_read(igw_db *db, const igw_recordings_query *q, igw_recordings_cb cb, void *arg);

/* ---- the cameras' reports ---- */

typedef enum igw_recordings_report_status {
    IGW_RECORDINGS_REPORT_OK,
    IGW_RECORDINGS_REPORT_UNKNOWN_CAMERA, /* an entry names a camera the device does not have: nothing stored */
    IGW_RECORDINGS_REPORT_FAILED,         /* the database: err says why (logs only); nothing stored */
} igw_recordings_report_status;

typedef struct igw_recordings_report_result {
    igw_recordings_report_status status;
    const char *err;
    unsigned bad;                    /* UNKNOWN_CAMERA: the index of the first such entry */
    unsigned stored, stale, removed; /* OK: entries written, dropped as older, removed */
} igw_recordings_report_result;

typedef void (*igw_recordings_report_cb)(void *arg, const igw_recordings_report_result *r);

/* What a decoded report cannot be whatever the catalog holds (an end not
 * after its start, a duration longer than the window it was recorded in,
 * an empty recording, an id twice): NULL when none, else the reason, with
 * the JSON pointer of the first offending field in path (cap bytes). */
const char *igw_recordings_report_check(const igw_RecordingReport *r, char *path, size_t cap);

/* Writes a checked report of device (product_id, device_name) in one
 * statement: its entries upserted (a stored recording changes only for a
 * version not older than its own; older ones are dropped and counted
 * stale), its removed ids deleted, all or nothing, and only when every
 * entry's camera is the device's. params is the report's JSON text (the
 * decoded `r`'s source). 0, and cb(arg, result) once later on db's loop;
 * -1 (queue full, out of memory): cb never runs. */
int igw_recordings_report(igw_db *db, const char *product_id, const char *device_name, const igw_RecordingReport *r,
                          igw_str params, igw_recordings_report_cb cb, void *arg);

#endif
