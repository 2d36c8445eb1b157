/* recordings.c - see recordings.h. */
#include "catalog/recordings.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "event/rights.h"
#include "paths.h"


/* The checks, then (only when they hold) the window's recordings through the
 * index (product_id, device_name, camera_id, start_time_ms): at most limit
 * + 1 rows however large the catalog. The flags come on every row, and on
 * one row of NULLs when there is none. Parameters and columns by name:
 * *_P_X is $(X + 1), *_C_X column X. */
enum {
    QUERY_P_ENTERPRISE, QUERY_P_USER, QUERY_P_ENDPOINT, QUERY_P_PID, QUERY_P_DN, QUERY_P_CAMERA, QUERY_P_START,
    QUERY_P_END, QUERY_P_LIMIT, QUERY_NP
};
enum {
    QUERY_C_ENDPOINT_LIVE, QUERY_C_RIGHTS, QUERY_C_CAMERA_KNOWN, QUERY_C_ID, QUERY_C_CAMERA, QUERY_C_START,
    QUERY_C_END, QUERY_C_DURATION, QUERY_C_AVAILABLE, QUERY_C_VIDEO, QUERY_C_AUDIO, QUERY_C_VERSION
};
static const igw_db_stmt st_query = {
    "igw_recordings_query",
    "WITH f AS MATERIALIZED (SELECT "
    IGW_SQL_ENDPOINT_LIVE("$3::text", "$1::bigint", "$2::bigint", IGW_SQL_NOW_MS) " AS ep, "
    IGW_SQL_DEVICE_RIGHTS("$4::text", "$5::text", "$1::bigint", "$2::bigint") " AS rt, "
    "    EXISTS (SELECT 1 FROM cameras c WHERE c.product_id = $4::text AND c.device_name = $5::text "
    "            AND c.camera_id = $6::text) AS cam), "
    "r AS (SELECT x.recording_id, x.camera_id, x.start_time_ms, x.end_time_ms, x.duration_ms, x.available, "
    "             x.video_codec, x.audio_codec, x.recording_version FROM recordings x "
    "      WHERE (SELECT ep AND rt AND cam FROM f) AND x.product_id = $4::text AND x.device_name = $5::text "
    "        AND x.camera_id = $6::text AND x.start_time_ms >= $7::bigint AND x.start_time_ms < $8::bigint "
    "      ORDER BY x.start_time_ms, x.recording_id LIMIT $9::int + 1) "
    "SELECT f.ep, f.rt, f.cam, r.recording_id, r.camera_id, r.start_time_ms, r.end_time_ms, r.duration_ms, "
    "       r.available, r.video_codec, r.audio_codec, r.recording_version "
    "FROM f LEFT JOIN r ON true ORDER BY r.start_time_ms, r.recording_id",
    QUERY_NP};

typedef struct rq {
    igw_recordings_cb cb;
    void *arg;
    unsigned limit;
} rq;

static int64_t i64(const PGresult *res, int row, int c)
{
    return strtoll(PQgetvalue(res, row, c), NULL, 10);
}

static void on_query(void *arg, const PGresult *res, const char *err)
{
    rq *q = arg;
    igw_recordings_result r = {.status = IGW_RECORDINGS_OK};
    igw_recording list[IGW_RECORDINGS_LIMIT_MAX];
    if (!res || PQntuples(res) < 1) {
        r.status = IGW_RECORDINGS_FAILED;
        r.err = err ? err : "no result row";
    } else if (!igw_db_true(res, 0, QUERY_C_ENDPOINT_LIVE)) {
        r.status = IGW_RECORDINGS_UNKNOWN_ENDPOINT;
    } else if (!igw_db_true(res, 0, QUERY_C_RIGHTS)) {
        r.status = IGW_RECORDINGS_NO_RIGHTS;
    } else if (!igw_db_true(res, 0, QUERY_C_CAMERA_KNOWN)) {
        r.status = IGW_RECORDINGS_UNKNOWN_CAMERA;
    } else {
        int rows = PQntuples(res);
        for (int i = 0; i < rows && !PQgetisnull(res, i, QUERY_C_ID); i++) {
            if (r.n == q->limit) {
                r.has_more = true;
                break;
            }
            list[r.n++] = (igw_recording){
                .recording_id = PQgetvalue(res, i, QUERY_C_ID),
                .camera_id = PQgetvalue(res, i, QUERY_C_CAMERA),
                .start_ms = i64(res, i, QUERY_C_START),
                .end_ms = i64(res, i, QUERY_C_END),
                .duration_ms = i64(res, i, QUERY_C_DURATION),
                .available = PQgetvalue(res, i, QUERY_C_AVAILABLE)[0] == 't',
                .video_codec = PQgetvalue(res, i, QUERY_C_VIDEO),
                .audio_codec = PQgetisnull(res, i, QUERY_C_AUDIO) ? NULL : PQgetvalue(res, i, QUERY_C_AUDIO),
                .version = i64(res, i, QUERY_C_VERSION)};
        }
        r.list = list;
    }
    q->cb(q->arg, &r);
    free(q);
}

int igw_recordings_read(igw_db *db, const igw_recordings_query *in, igw_recordings_cb cb, void *arg)
{
    if (in->limit < 1 || in->limit > IGW_RECORDINGS_LIMIT_MAX)
        return -1;
    rq *q = calloc(1, sizeof *q);
    if (!q)
        return -1;
    q->cb = cb;
    q->arg = arg;
    q->limit = in->limit;
    char ent[24], user[24], start[24], end[24], limit[8];
    snprintf(ent, sizeof ent, "%" PRId64, in->enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, in->user_id);
    snprintf(start, sizeof start, "%" PRId64, in->start_ms);
    snprintf(end, sizeof end, "%" PRId64, in->end_ms);
    snprintf(limit, sizeof limit, "%u", in->limit);
    const char *v[QUERY_NP] = {[QUERY_P_ENTERPRISE] = ent,        [QUERY_P_USER] = user,
                               [QUERY_P_ENDPOINT] = in->endpoint_id, [QUERY_P_PID] = in->product_id,
                               [QUERY_P_DN] = in->device_name,    [QUERY_P_CAMERA] = in->camera_id,
                               [QUERY_P_START] = start,           [QUERY_P_END] = end,
                               [QUERY_P_LIMIT] = limit};
    if (igw_db_exec(db, &st_query, v, NULL, NULL, on_query, q) != 0) {
        free(q);
        return -1;
    }
    return 0;
}

/* ---- the cameras' reports ------------------------------------------------------- */

/* The report's entries ($3: its JSON text) upserted and its removed ids
 * deleted, only when every entry's camera is the device's; the first
 * entry (1-based) naming another camera otherwise. An entry that changes a
 * stored recording must carry a version not older than the stored one. */
enum { REPORT_P_PID, REPORT_P_DN, REPORT_P_JSON, REPORT_NP };
enum { REPORT_C_BAD, REPORT_C_STORED, REPORT_C_REMOVED };
static const igw_db_stmt st_report = {
    "igw_recordings_report",
    "WITH inp AS MATERIALIZED (SELECT * FROM ROWS FROM (jsonb_to_recordset(COALESCE($3::jsonb->'recordings', '[]')) "
    "        AS (\"recordingId\" text, \"cameraId\" text, \"startTimeMs\" bigint, \"endTimeMs\" bigint, "
    "            \"durationMs\" bigint, available boolean, \"videoCodec\" text, \"audioCodec\" text, "
    "            \"recordingVersion\" bigint)) WITH ORDINALITY AS t(rid, cam, st, en, du, av, vc, ac, ver, i)), "
    "bad AS MATERIALIZED (SELECT min(inp.i) AS i FROM inp WHERE NOT EXISTS (SELECT 1 FROM cameras c "
    "        WHERE c.product_id = $1::text AND c.device_name = $2::text AND c.camera_id = inp.cam)), "
    "up AS (INSERT INTO recordings AS r (recording_id, product_id, device_name, camera_id, start_time_ms, "
    "                                    end_time_ms, duration_ms, available, video_codec, audio_codec, "
    "                                    recording_version) "
    "       SELECT inp.rid, $1::text, $2::text, inp.cam, inp.st, inp.en, inp.du, inp.av, inp.vc, inp.ac, inp.ver "
    "       FROM inp WHERE (SELECT i FROM bad) IS NULL "
    "       ON CONFLICT (product_id, device_name, recording_id) DO UPDATE SET camera_id = excluded.camera_id, "
    "           start_time_ms = excluded.start_time_ms, end_time_ms = excluded.end_time_ms, "
    "           duration_ms = excluded.duration_ms, available = excluded.available, "
    "           video_codec = excluded.video_codec, audio_codec = excluded.audio_codec, "
    "           recording_version = excluded.recording_version, updated_at = now() "
    "       WHERE r.recording_version <= excluded.recording_version RETURNING 1), "
    "del AS (DELETE FROM recordings r WHERE (SELECT i FROM bad) IS NULL AND r.product_id = $1::text "
    "        AND r.device_name = $2::text "
    "        AND r.recording_id IN (SELECT jsonb_array_elements_text(COALESCE($3::jsonb->'removed', '[]')))"
    "        RETURNING 1) "
    "SELECT (SELECT i FROM bad), (SELECT count(*) FROM up), (SELECT count(*) FROM del)",
    REPORT_NP};

/* The path of the report's item i (a format of paths.h). */
#define SET_PATH(FMT, i) snprintf(path, cap, FMT, (unsigned)(i))

const char *igw_recordings_report_check(const igw_RecordingReport *r, char *path, size_t cap)
{
    path[0] = '\0';
    uint32_t n = r->has & IGW_RecordingReport_recordings ? r->recordings.n : 0;
    uint32_t m = r->has & IGW_RecordingReport_removed ? r->removed.n : 0;
    for (uint32_t i = 0; i < n; i++) { /* n, m <= 64 (the schema): quadratic is fine */
        const igw_RecordingEntry *x = &r->recordings.v[i];
        if (x->endTimeMs <= x->startTimeMs) {
            SET_PATH(IGW_PATH_params_recordings_ITEM_endTimeMs, i);
            return "endTimeMs must be after startTimeMs";
        }
        if (x->durationMs == 0) {
            SET_PATH(IGW_PATH_params_recordings_ITEM_durationMs, i);
            return "an empty recording (durationMs 0) is not a recording";
        }
        if (x->durationMs > x->endTimeMs - x->startTimeMs) {
            SET_PATH(IGW_PATH_params_recordings_ITEM_durationMs, i);
            return "durationMs is longer than the time between startTimeMs and endTimeMs";
        }
        for (uint32_t k = 0; k < i; k++)
            if (igw_str_eq(r->recordings.v[k].recordingId, x->recordingId.ptr, x->recordingId.len)) {
                SET_PATH(IGW_PATH_params_recordings_ITEM_recordingId, i);
                return "the same recordingId twice in one report";
            }
        for (uint32_t k = 0; k < m; k++)
            if (igw_str_eq(r->removed.v[k], x->recordingId.ptr, x->recordingId.len)) {
                SET_PATH(IGW_PATH_params_removed_ITEM, k);
                return "a recording both reported and removed";
            }
    }
    return NULL;
}

typedef struct wq {
    igw_recordings_report_cb cb;
    void *arg;
    unsigned n;
} wq;

static void on_report(void *arg, const PGresult *res, const char *err)
{
    wq *q = arg;
    igw_recordings_report_result r = {.status = IGW_RECORDINGS_REPORT_OK};
    if (!res || PQntuples(res) != 1) {
        r.status = IGW_RECORDINGS_REPORT_FAILED;
        r.err = err ? err : "no result row";
    } else if (!PQgetisnull(res, 0, REPORT_C_BAD)) {
        r.status = IGW_RECORDINGS_REPORT_UNKNOWN_CAMERA;
        r.bad = (unsigned)(i64(res, 0, REPORT_C_BAD) - 1);
    } else {
        r.stored = (unsigned)i64(res, 0, REPORT_C_STORED);
        r.stale = q->n - r.stored;
        r.removed = (unsigned)i64(res, 0, REPORT_C_REMOVED);
    }
    q->cb(q->arg, &r);
    free(q);
}

int igw_recordings_report(igw_db *db, const char *product_id, const char *device_name, const igw_RecordingReport *r,
                          igw_str params, igw_recordings_report_cb cb, void *arg)
{
    wq *q = calloc(1, sizeof *q);
    char *text = q ? strndup(params.ptr, params.len) : NULL;
    if (!text) {
        free(q);
        return -1;
    }
    q->cb = cb;
    q->arg = arg;
    q->n = r->has & IGW_RecordingReport_recordings ? r->recordings.n : 0;
    const char *v[REPORT_NP] = {[REPORT_P_PID] = product_id, [REPORT_P_DN] = device_name, [REPORT_P_JSON] = text};
    int rc = igw_db_exec(db, &st_report, v, NULL, NULL, on_report, q);
    free(text); /* the values are copied into the query */
    if (rc != 0)
        free(q);
    return rc;
}
