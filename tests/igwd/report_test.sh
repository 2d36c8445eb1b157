#!/usr/bin/env bash
# report_test.sh IGWD IGWCTL VCAM - a device's capability report never
# depends on who was subscribed when it went (issue 24, item 3): igw-vcam
# reports again with backoff until its reportReply, and igwd asks a camera
# that comes online with none of its reports stored (the protocol's `media
# capability get` downlink). Real PostgreSQL, Redis and Mosquitto (the auth
# plugin's presence facts), igw-vcam as the camera, mosquitto_sub as a bare
# camera that never reports by itself.
set -u
IGWD=$(realpath "${1:?usage: report_test.sh IGWD IGWCTL VCAM}")
IGWCTL=$(realpath "${2:?usage: report_test.sh IGWD IGWCTL VCAM}")
VCAM=$(realpath "${3:?usage: report_test.sh IGWD IGWCTL VCAM}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test report "${REPORT_PG_PORT:-25470}" "${REPORT_REDIS_PORT:-63870}" "${REPORT_MQTT_PORT:-18970}"
BGPIDS=()
cleanup() { for p in "${BGPIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; igw_services_test_down; }
trap cleanup EXIT
P=$(j .device.productID) D=$(j .device.deviceName) CAM=$(j .camera.cameraId) TOKEN=$(j .user.token)
start_igwd() {
    igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_NODE_ID=report-node \
        IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
        IGW_MQTT_CLIENT_ID=igwd-report-test IGW_MEDIA_ADDRESS=127.0.0.1
}
reports() { psql_q "SELECT count(*) FROM device_messages WHERE product_id = '$P' AND device_name = '$1'
                    AND handle = 'media' AND msg_type = 'capability' AND method = 'report'"; }
stored() { [ "$(reports "$1")" -gt 0 ]; }
online() { [ "$(psql_q "SELECT online FROM devices WHERE product_id = '$P' AND device_name = '$1'")" = t ]; }
api() { curl -s -X POST -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' "$@"; }

# ---- the camera first, igwd after: its first report went nowhere --------------------------------
# Its camera row is away meanwhile, so that igwd does not ask (below): the
# camera's own resend alone must bring the report.
CAMROW=$(psql_q "SELECT name FROM cameras WHERE product_id = '$P' AND device_name = '$D' AND camera_id = '$CAM'")
psql_q "DELETE FROM cameras WHERE product_id = '$P' AND device_name = '$D' AND camera_id = '$CAM'" >/dev/null ||
    fail "cannot remove the camera row"
: >"$TMP/vcam.err" # before the child opens it: the first grep below must find a file
"$VCAM" --mqtt "127.0.0.1:$IGW_MQTT_PORT" --product "$P" --device "$D" --secret "$(j .device.secret)" \
    --camera-id "$CAM" --address 127.0.0.1 2>>"$TMP/vcam.err" &
BGPIDS+=($!)
CASE="igw-vcam reported before igwd ran"
wait_for 10 grep -q "capability reported" "$TMP/vcam.err" || fail "$CASE: $(tail -3 "$TMP/vcam.err")"
[ "$(reports "$D")" = 0 ] || fail "$CASE: stored already"; ok
start_igwd
CASE="igwd after the camera: the report is stored (sent again until answered)"
wait_for 20 stored "$D" || fail "$CASE: $(grep capability "$TMP/vcam.err")"
wait_for 5 grep -q "capability accepted" "$TMP/vcam.err" || fail "$CASE: no reportReply: $(tail -3 "$TMP/vcam.err")"; ok
psql_q "INSERT INTO cameras (product_id, device_name, camera_id, name) VALUES ('$P', '$D', '$CAM', '$CAMROW')" >/dev/null
CASE="igwd after the camera: an open with listenAudio is not refused for want of a microphone"
wait_for 10 online "$D" || fail "$CASE: the camera is not online"
EP=$(api "http://127.0.0.1:$PORT/api/v1/im/interaction/endpoints/register" | jq -r .data.endpointId)
api "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "{\"endpointId\":\"$EP\",\"command\":{\"msgToken\":\"listen-1\",\"method\":\"interaction.open\",\"target\":{\"productID\":\"$P\",\"deviceName\":\"$D\"},\"params\":{\"purpose\":\"ipcLiveView\",\"cameraId\":\"$CAM\",\"listenAudio\":true}}}" >"$TMP/r"
[ "$(jq -r .data.accepted "$TMP/r")" = true ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="the camera sent it again by itself (igwd did not ask: no camera row)"
grep -q "capability report unanswered after 1000 ms: sent again" "$TMP/vcam.err" &&
    ! grep -q "capability asked for" "$TMP/vcam.err" || fail "$CASE: $(grep capability "$TMP/vcam.err")"; ok
CASE="once answered, the camera stops reporting"
n=$(grep -c "capability reported" "$TMP/vcam.err")
sleep 3
[ "$(grep -c "capability reported" "$TMP/vcam.err")" = "$n" ] || fail "$CASE: $(grep capability "$TMP/vcam.err")"; ok

# ---- a broker restart without persistence: the report comes again ----------------------------------
psql_q "DELETE FROM device_messages WHERE product_id = '$P' AND device_name = '$D' AND handle = 'media' AND msg_type = 'capability'" >/dev/null
MQPID=$(cat "$IGW_VAR/mosquitto/mosquitto.pid")
kill -KILL "$MQPID"
wait_for 5 bash -c "! kill -0 $MQPID 2>/dev/null" || fail "mosquitto did not die"
sleep 1.1 # a new boot id (ms) that is surely later
"$ROOT/src/ops/services.sh" up >"$TMP/services2.log" 2>&1 || { cat "$TMP/services2.log" >&2; fail "services.sh up (broker restart)"; }
CASE="after a broker restart: the capability is stored again"
wait_for 40 stored "$D" || fail "$CASE: $(grep -i "capability\|connect" "$TMP/vcam.err" | tail -5)"; ok

# ---- a camera that never reports by itself is asked for its capability ---------------------------
"$IGWCTL" device add --db "$IGW_PG_DSN" --product "$P" --device bare-cam >"$TMP/bare.json" || fail "igwctl device add"
psql_q "INSERT INTO cameras (product_id, device_name, camera_id, name) VALUES ('$P', 'bare-cam', 'cam-1', 'bare')" >/dev/null
CASE="a camera online without a stored report gets the get downlink"
mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$P&bare-cam" -u "$(jq -r .username "$TMP/bare.json")" \
    -P "$(jq -r .password "$TMP/bare.json")" -q 1 -C 1 -W 15 -t "\$media/down/capability/$P/bare-cam" >"$TMP/asked" 2>"$TMP/asked.err"
jq -e '.method == "get" and (.msgToken | type) == "string" and (.msgToken | length) > 0' "$TMP/asked" >/dev/null ||
    fail "$CASE: $(cat "$TMP/asked" "$TMP/asked.err")"; ok
CASE="a device that is no camera is never asked"
"$IGWCTL" device add --db "$IGW_PG_DSN" --product "$P" --device bare-lamp >"$TMP/lamp.json" || fail "igwctl device add"
mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$P&bare-lamp" -u "$(jq -r .username "$TMP/lamp.json")" \
    -P "$(jq -r .password "$TMP/lamp.json")" -q 1 -C 1 -W 4 -t "\$media/down/capability/$P/bare-lamp" >"$TMP/lamp" 2>/dev/null
[ ! -s "$TMP/lamp" ] || fail "$CASE: $(cat "$TMP/lamp")"; ok
kill -TERM "${BGPIDS[0]}"; wait "${BGPIDS[0]}" 2>/dev/null

# ---- the recording catalog: reports made while igwd was away arrive once it is back ----------------
igw_stop
: >"$TMP/rec.err"
"$VCAM" --mqtt "127.0.0.1:$IGW_MQTT_PORT" --product "$P" --device "$D" --secret "$(j .device.secret)" \
    --camera-id "$CAM" --address 127.0.0.1 --record-dir "$TMP/rec" --segment-ms 1000 2>>"$TMP/rec.err" &
BGPIDS+=($!)
CASE="the catalog: segments reported while igwd was away are stored once it is back"
two_segs() { [ "$(grep -c "recording report .* sent: 1 recording(s)" "$TMP/rec.err")" -ge 2 ]; }
wait_for 20 two_segs || fail "$CASE: $(tail -5 "$TMP/rec.err")"
FIRST=$(sed -n 's/.*recording report .* sent: 1 recording(s) (\([^)]*\)).*/\1/p' "$TMP/rec.err" | head -1)
[ "$(psql_q "SELECT count(*) FROM recordings WHERE recording_id = '$FIRST'")" = 0 ] || fail "$CASE: stored already"
start_igwd
stored_rec() { [ "$(psql_q "SELECT count(*) FROM recordings WHERE product_id = '$P' AND device_name = '$D' AND recording_id = '$FIRST'")" = 1 ]; }
wait_for 20 stored_rec || { fail "$CASE: $FIRST not in the catalog: $(grep -i "catalog\|recording report" "$TMP/rec.err" | tail -5)"; }
grep -q "the catalog goes again" "$TMP/rec.err" || fail "$CASE: no resend logged"; ok
kill -TERM "${BGPIDS[-1]}"; wait "${BGPIDS[-1]}" 2>/dev/null
igw_stop
echo "report test: $checks checks passed"
