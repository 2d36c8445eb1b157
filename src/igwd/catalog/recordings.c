/* recordings.c - see recordings.h. */
#include "catalog/recordings.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event/rights.h"

#define NOW_MS "floor(extract(epoch FROM now()) * 1000)::bigint"

/* The checks, then (only when they hold) the window's recordings through the
 * index (product_id, device_name, camera_id, start_time_ms): at most limit
 * + 1 rows however large the catalog. The flags come on every row, and on
 * one row of NULLs when there is none. */
static const igw_db_stmt st_query = {
    "igw_recordings_query",
    "WITH f AS MATERIALIZED (SELECT "
    IGW_SQL_ENDPOINT_LIVE("$3::text", "$1::bigint", "$2::bigint", NOW_MS) " AS ep, "
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
    9};

typedef struct rq {
    igw_recordings_cb cb;
    void *arg;
    unsigned limit;
} rq;

static bool t(const PGresult *res, int c)
{
    return !PQgetisnull(res, 0, c) && PQgetvalue(res, 0, c)[0] == 't';
}

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
    } else if (!t(res, 0)) {
        r.status = IGW_RECORDINGS_UNKNOWN_ENDPOINT;
    } else if (!t(res, 1)) {
        r.status = IGW_RECORDINGS_NO_RIGHTS;
    } else if (!t(res, 2)) {
        r.status = IGW_RECORDINGS_UNKNOWN_CAMERA;
    } else {
        int rows = PQntuples(res);
        for (int i = 0; i < rows && !PQgetisnull(res, i, 3); i++) {
            if (r.n == q->limit) {
                r.has_more = true;
                break;
            }
            list[r.n++] = (igw_recording){.recording_id = PQgetvalue(res, i, 3),
                                          .camera_id = PQgetvalue(res, i, 4),
                                          .start_ms = i64(res, i, 5),
                                          .end_ms = i64(res, i, 6),
                                          .duration_ms = i64(res, i, 7),
                                          .available = PQgetvalue(res, i, 8)[0] == 't',
                                          .video_codec = PQgetvalue(res, i, 9),
                                          .audio_codec = PQgetisnull(res, i, 10) ? NULL : PQgetvalue(res, i, 10),
                                          .version = i64(res, i, 11)};
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
    const char *v[9] = {ent, user, in->endpoint_id, in->product_id, in->device_name, in->camera_id, start, end, limit};
    if (igw_db_exec(db, &st_query, v, NULL, NULL, on_query, q) != 0) {
        free(q);
        return -1;
    }
    return 0;
}
