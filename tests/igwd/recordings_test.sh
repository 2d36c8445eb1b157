#!/usr/bin/env bash
# recordings_test.sh IGWD IGWCTL - /recordings/query against real
# PostgreSQL (issue 17, step 1: the catalog's reader): endpoint ownership,
# the true owner or a grant, the camera, all checked before the catalog is
# read; the window (recordings that start in it) and its edges, limit and
# hasMore, the empty list; another user and another enterprise refused; the
# query's plan reads the index, not the table. Catalog rows are written with
# psql here, and by the camera's own reports (the device protocol's `media
# recording report`, over the send route): stored all or nothing, versions
# never go back, impossible values and other devices' cameras refused, a
# device's ids never touch another device's recordings.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
IGWD=$(realpath "${1:?usage: recordings_test.sh IGWD IGWCTL}")
IGWCTL=$(realpath "${2:?usage: recordings_test.sh IGWD IGWCTL}")
export IGWCTL
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
igw_services_test recordings "${REC_PG_PORT:-25414}" "${REC_REDIS_PORT:-63814}" "${REC_MQTT_PORT:-18914}"
igw_start IGW_THREADS=1 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_MEDIA_THREADS=0
BASE=http://127.0.0.1:$PORT
A=$(j .user.token) B=$(j .otherUser.token) X=$(j .otherEnterpriseUser.token)
P=$(j .device.productID) D=$(j .device.deviceName) CAM=$(j .camera.cameraId)
post() { STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
    -H 'content-type: application/json' --data-binary "$3" "$BASE$2"); }
ep() { post "$1" /api/v1/im/interaction/endpoints/register ''; jq -r .data.endpointId "$TMP/r"; }
EA=$(ep "$A") EB=$(ep "$B") EX=$(ep "$X")
q() { # TOKEN EP START END LIMIT [CAMERA]
    post "$1" /api/v1/im/interaction/recordings/query \
        "{\"endpointId\":\"$2\",\"target\":{\"productID\":\"$P\",\"deviceName\":\"$D\"},\"cameraId\":\"${6:-$CAM}\",\"startTimeMs\":$3,\"endTimeMs\":$4,\"limit\":$5}"
}
ids() { jq -c '[.data.list[].recordingId]' "$TMP/r"; }
T0=1795600000000 # segments of one minute from here, every minute, for two hours
psql_q "INSERT INTO recordings (recording_id, product_id, device_name, camera_id, start_time_ms, end_time_ms,
          duration_ms, available, video_codec, audio_codec, recording_version)
        SELECT 'rec-' || lpad(i::text, 3, '0'), '$P', '$D', '$CAM', $T0 + i * 60000, $T0 + i * 60000 + 59000, 59000,
               i % 10 <> 9, 'H264', CASE WHEN i % 2 = 0 THEN 'opus' END, 1 + i % 3
        FROM generate_series(0, 119) i" >/dev/null || fail "insert"

CASE="a window of three segments: ordered, every field, audioCodec only when there is one"
q "$A" "$EA" "$T0" $((T0 + 180000)) 32; expect 200 200
[ "$(ids)" = '["rec-000","rec-001","rec-002"]' ] && [ "$(jq -r .data.hasMore "$TMP/r")" = false ] || fail "$CASE: $(cat "$TMP/r")"
[ "$(jq -c '.data.list[0]' "$TMP/r")" = "{\"recordingId\":\"rec-000\",\"cameraId\":\"$CAM\",\"startTimeMs\":$T0,\"endTimeMs\":$((T0 + 59000)),\"durationMs\":59000,\"available\":true,\"videoCodec\":\"H264\",\"audioCodec\":\"opus\",\"recordingVersion\":1}" ] ||
    fail "$CASE: $(jq -c '.data.list[0]' "$TMP/r")"
[ "$(jq -c '.data.list[1] | has("audioCodec")' "$TMP/r")" = false ] || fail "$CASE: $(jq -c '.data.list[1]' "$TMP/r")"; ok
CASE="window edges: start inclusive, end exclusive"
q "$A" "$EA" $((T0 + 60000)) $((T0 + 120000)) 32; expect 200 200
[ "$(ids)" = '["rec-001"]' ] || fail "$CASE: $(ids)"
q "$A" "$EA" $((T0 + 60001)) $((T0 + 120001)) 32; expect 200 200
[ "$(ids)" = '["rec-002"]' ] || fail "$CASE: $(ids)"; ok
CASE="limit: truncated says hasMore, the next window goes on"
q "$A" "$EA" "$T0" $((T0 + 7200000)) 32; expect 200 200
[ "$(jq '.data.list | length' "$TMP/r")" = 32 ] && [ "$(jq -r .data.hasMore "$TMP/r")" = true ] || fail "$CASE: $(ids)"
[ "$(jq -r '.data.list[31].recordingId' "$TMP/r")" = rec-031 ] || fail "$CASE: $(ids)"
q "$A" "$EA" $((T0 + 119 * 60000)) $((T0 + 7200000)) 1; expect 200 200
[ "$(ids)" = '["rec-119"]' ] && [ "$(jq -r .data.hasMore "$TMP/r")" = false ] || fail "$CASE: exactly the limit: $(cat "$TMP/r")"; ok
CASE="an empty window is success"
q "$A" "$EA" 1 2 5; expect 200 200
[ "$(jq -c .data "$TMP/r")" = '{"list":[],"hasMore":false}' ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="strict: a window over 24 hours, start not before end, limit 0 or 33, an unsafe time"
q "$A" "$EA" "$T0" $((T0 + 86400001)) 5; expect 400 100400 /endTimeMs
q "$A" "$EA" "$T0" $((T0 + 86400000)) 5; expect 200 200
q "$A" "$EA" "$T0" "$T0" 5; expect 400 100400 /startTimeMs
q "$A" "$EA" "$T0" $((T0 + 1)) 0; expect 400 100400 /limit
q "$A" "$EA" "$T0" $((T0 + 1)) 33; expect 400 100400 /limit
q "$A" "$EA" 9007199254740990 9007199254740992 5; expect 400 100400 /endTimeMs
CASE="another user of the enterprise without rights: refused before the catalog is read"
q "$B" "$EB" "$T0" $((T0 + 180000)) 5; expect 403 100403 /target
CASE="another enterprise: refused"
q "$X" "$EX" "$T0" $((T0 + 180000)) 5; expect 403 100403 /target
CASE="another user's endpoint: unknown"
q "$A" "$EB" "$T0" $((T0 + 180000)) 5; expect 404 100404 /endpointId
CASE="a camera the device does not have"
q "$A" "$EA" "$T0" $((T0 + 180000)) 5 no-such-cam; expect 404 100404 /cameraId
CASE="with a grant, the other user reads the catalog"
"$IGWCTL" grant --db "$IGW_PG_DSN" --user 1002 --product "$P" --device "$D" >/dev/null || fail "grant"
q "$B" "$EB" "$T0" $((T0 + 180000)) 5; expect 200 200
[ "$(ids)" = '["rec-000","rec-001","rec-002"]' ] || fail "$CASE: $(ids)"; ok
CASE="the plan: the camera's window read through its index, never a scan of the catalog"
# 100000 rows of 100 other cameras beside this one's 120: the planner's own choice, no setting forced
psql_q "INSERT INTO products (product_id, enterprise_id, name, model) VALUES ('benchprod', 1, 'b', '{}') ON CONFLICT DO NOTHING;
        INSERT INTO recordings (recording_id, product_id, device_name, camera_id, start_time_ms, end_time_ms,
          duration_ms, available, video_codec, recording_version)
        SELECT 'bulk-' || i, 'benchprod', 'dev-' || (i % 100), 'cam-1', $T0 + (i / 100) * 60000, $T0 + (i / 100) * 60000 + 59000,
               59000, true, 'H264', 1 FROM generate_series(0, 99999) i; ANALYZE recordings" >/dev/null || fail "$CASE: bulk insert"
plan=$(psql_q "EXPLAIN SELECT recording_id FROM recordings WHERE product_id = '$P' AND device_name = '$D'
               AND camera_id = '$CAM' AND start_time_ms >= $T0 AND start_time_ms < $((T0 + 180000))
               ORDER BY start_time_ms, recording_id LIMIT 33")
grep -q 'Index.* Scan.* on recordings_product_id_device_name_camera_id_start_time_ms_idx\|Index Scan using recordings_product_id_device_name_camera_id_start_time_ms_idx' <<<"$plan" &&
    grep -q 'Index Cond: .*start_time_ms.* >= .*start_time_ms.* < ' <<<"$plan" && ! grep -q 'Seq Scan' <<<"$plan" ||
    fail "$CASE: $(tr "\n" " " <<<"$plan")"
q "$A" "$EA" "$T0" $((T0 + 180000)) 32; expect 200 200
[ "$(ids)" = '["rec-000","rec-001","rec-002"]' ] || fail "$CASE: $(ids)"; ok

# ---- the cameras' reports (the catalog's writer) ----
AUTH=$(j .device.authorization)
rep() { STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -H "authorization: $AUTH" -H 'content-type: application/json' \
    --data-binary "{\"method\":\"report\",\"msgToken\":\"t$RANDOM\",\"params\":$1}" "$BASE/api/v1/things/device/edge/send/media/recording"); }
entry() { # ID START END DURATION VERSION [CAMERA]
    echo "{\"recordingId\":\"$1\",\"cameraId\":\"${6:-$CAM}\",\"startTimeMs\":$2,\"endTimeMs\":$3,\"durationMs\":$4,\"available\":true,\"videoCodec\":\"H264\",\"audioCodec\":\"opus\",\"recordingVersion\":$5}"
}
T1=1795700000000
n_rows() { psql_q "SELECT count(*) FROM recordings WHERE product_id = '$P' AND device_name = '$D'"; }
CASE="a camera's report is the catalog: stored, counted, then found by the query"
rep "{\"recordings\":[$(entry seg-a "$T1" $((T1 + 3000)) 2990 1),$(entry seg-b $((T1 + 3000)) $((T1 + 6000)) 3000 1)]}"; expect 200 200
[ "$(jq -cS .data.data "$TMP/r")" = '{"removed":0,"stale":0,"stored":2}' ] || fail "$CASE: $(cat "$TMP/r")"
q "$A" "$EA" "$T1" $((T1 + 10000)) 32; expect 200 200
[ "$(ids)" = '["seg-a","seg-b"]' ] && [ "$(jq -r '.data.list[0].durationMs' "$TMP/r")" = 2990 ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="a higher version changes a recording; an older one is dropped as stale"
rep "{\"recordings\":[$(entry seg-a "$T1" $((T1 + 2500)) 2400 2)]}"; expect 200 200
[ "$(jq -cS .data.data "$TMP/r")" = '{"removed":0,"stale":0,"stored":1}' ] || fail "$CASE: $(cat "$TMP/r")"
rep "{\"recordings\":[$(entry seg-a "$T1" $((T1 + 3000)) 2990 1)]}"; expect 200 200
[ "$(jq -cS .data.data "$TMP/r")" = '{"removed":0,"stale":1,"stored":0}' ] || fail "$CASE: $(cat "$TMP/r")"
q "$A" "$EA" "$T1" $((T1 + 1)) 1; expect 200 200
[ "$(jq -c '.data.list[0] | [.recordingVersion, .endTimeMs, .durationMs]' "$TMP/r")" = "[2,$((T1 + 2500)),2400]" ] ||
    fail "$CASE: $(cat "$TMP/r")"; ok
before=$(n_rows)
CASE="end before start: refused, nothing of the report stored"
rep "{\"recordings\":[$(entry seg-c "$T1" $((T1 + 3000)) 10 1),$(entry seg-d $((T1 + 3000)) "$T1" 10 1)]}"
expect 400 100400 /params/recordings/1/endTimeMs
CASE="a duration longer than its window"; rep "{\"recordings\":[$(entry seg-c "$T1" $((T1 + 3000)) 3001 1)]}"
expect 400 100400 /params/recordings/0/durationMs
CASE="an empty recording"; rep "{\"recordings\":[$(entry seg-c "$T1" $((T1 + 3000)) 0 1)]}"
expect 400 100400 /params/recordings/0/durationMs
CASE="one id twice"; rep "{\"recordings\":[$(entry seg-c "$T1" $((T1 + 3000)) 10 1),$(entry seg-c "$T1" $((T1 + 3000)) 10 2)]}"
expect 400 100400 /params/recordings/1/recordingId
CASE="reported and removed at once"; rep "{\"recordings\":[$(entry seg-c "$T1" $((T1 + 3000)) 10 1)],\"removed\":[\"seg-c\"]}"
expect 400 100400 /params/removed/0
CASE="an unsafe integer"; rep "{\"recordings\":[$(entry seg-c 9007199254740992 9007199254740993 10 1)]}"
expect 400 100400 /params/recordings/0/startTimeMs
CASE="a version of 0"; rep "{\"recordings\":[$(entry seg-c "$T1" $((T1 + 3000)) 10 0)]}"
expect 400 100400 /params/recordings/0/recordingVersion
CASE="a camera the device does not have: the whole report refused"
rep "{\"recordings\":[$(entry seg-c "$T1" $((T1 + 3000)) 10 1),$(entry seg-d "$T1" $((T1 + 3000)) 10 1 no-such-cam)]}"
expect 400 100400 /params/recordings/1/cameraId
CASE="an unknown field (no address or path may ride along)"
rep "{\"recordings\":[$(entry seg-c "$T1" $((T1 + 3000)) 10 1 | sed 's/}$/,"url":"rtsp:\/\/x"}/')]}"
expect 400 100400 /params/recordings/0/url
CASE="an empty report"; rep '{}'; expect 400 100400 /params/recordings
CASE="after every refusal the catalog is unchanged"
[ "$(n_rows)" = "$before" ] || fail "$CASE: $before rows before, $(n_rows) after"; ok
CASE="ids are the device's own: another device's seg-a is neither changed nor removed"
psql_q "INSERT INTO recordings (recording_id, product_id, device_name, camera_id, start_time_ms, end_time_ms, duration_ms,
          available, video_codec, recording_version) VALUES ('seg-a', 'demogw01', 'demo-gw-1', 'cam-9', 1, 2, 1, true, 'H264', 7)" >/dev/null ||
    fail "$CASE: insert"
rep "{\"removed\":[\"seg-a\",\"never-was\"]}"; expect 200 200
[ "$(jq -cS .data.data "$TMP/r")" = '{"removed":1,"stale":0,"stored":0}' ] || fail "$CASE: $(cat "$TMP/r")"
[ "$(psql_q "SELECT product_id || '/' || recording_version FROM recordings WHERE recording_id = 'seg-a'")" = demogw01/7 ] ||
    fail "$CASE: $(psql_q "SELECT * FROM recordings WHERE recording_id = 'seg-a'")"
q "$A" "$EA" "$T1" $((T1 + 10000)) 32; expect 200 200
[ "$(ids)" = '["seg-b"]' ] || fail "$CASE: $(ids)"; ok
igw_stop
if grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err"; then
    grep -A40 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2; fail "sanitizer report"
fi
echo "recordings test: $checks checks passed"
