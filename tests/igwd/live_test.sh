#!/usr/bin/env bash
# live_test.sh IGWD IGWCTL VCAM GST_VIEWER - IPC live view end to end (issue
# 15, tests/igwd/live_test.mjs): igw-vcam as the demo camera on the broker,
# igwd's session engine and media core, headless Chromium as the
# applications' peers, through the public API only; then GStreamer's
# webrtcbin as the peer (tests/igwd/live_gst.mjs with GST_VIEWER,
# tests/igwd/gst_viewer.c). Everything runs in network and PID namespaces
# of its own (tests/media/lib.sh: Chromium gathers no candidates on
# loopback), with its own PostgreSQL, Redis and Mosquitto. Afterwards the
# database is checked: every session ended, each with its reason, nothing
# owned by a live session left. Then rights taken away while a session
# lives (tests/igwd/revoke_test.mjs, and here the periodic recheck and a
# device's owner changed) and the session caps, exact under racing opens.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    IGWD=$(realpath "${1:?usage: live_test.sh IGWD IGWCTL VCAM GST_VIEWER}")
    IGWCTL=$(realpath "${2:?usage: live_test.sh IGWD IGWCTL VCAM GST_VIEWER}")
    VCAM=$(realpath "${3:?usage: live_test.sh IGWD IGWCTL VCAM GST_VIEWER}")
    GST_VIEWER=$(realpath "${4:?usage: live_test.sh IGWD IGWCTL VCAM GST_VIEWER}")
    command -v node >/dev/null || { echo "live_test.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "$IGWD")/pw-node}" || { echo "live_test.sh: playwright-core" >&2; exit 1; }
    exec timeout -k 5 300 bash -c '. "$1/tests/media/lib.sh"; media_netns bash "$1/tests/igwd/live_test.sh" --inside "$2" "$3" "$4" "$5"' \
        sh "$ROOT" "$IGWD" "$IGWCTL" "$VCAM" "$GST_VIEWER"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4 GST_VIEWER=$5
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test live 25402 63802 18902
KEY=$IGW_VAR/jwt.key
"$IGWCTL" grant --db "$IGW_PG_DSN" --user "$(j .otherUser.userId)" --product "$(j .device.productID)" \
    --device "$(j .device.deviceName)" >/dev/null || fail "igwctl grant"
# The periodic rights recheck far away: only the igw_rights notification can
# end a session in time (revoke_test.mjs); a restart below sets it short.
start_igwd() {
    igw_start IGW_RIGHTS_RECHECK_MS=600000 IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_NODE_ID=live-node \
        IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
        IGW_MQTT_CLIENT_ID=igwd-live-test IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=${LIVE_LOG_LEVEL:-info} \
        IGW_INVITE_TIMEOUT_MS=3000 "$@"
}
start_igwd

if ! IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO node "$ROOT/tests/igwd/live_test.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2 # a sanitizer's report, whole
    fail "live_test.mjs"
fi
# The viewer is a sanitizer build linking GLib and GStreamer: the media
# tests' options (tests/media/lib.sh) for it, in a subshell (igwd keeps its
# own); unset first, as a second suppressions= would replace the first.
# shellcheck source=../media/lib.sh
if ! (unset LSAN_OPTIONS && . "$ROOT/tests/media/lib.sh" && media_sanitizers "$TMP" &&
      IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_GST_VIEWER=$GST_VIEWER IGW_DEMO=$DEMO \
      node "$ROOT/tests/igwd/live_gst.mjs"); then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "live_gst.mjs"
fi
if ! IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_PG_DSN=$IGW_PG_DSN \
    node "$ROOT/tests/igwd/revoke_test.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "revoke_test.mjs"
fi
CASE="database: no session is left live"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> 'ended'")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, state FROM sessions")"; ok
CASE="database: every session ended with its reason"
[ "$(psql_q "SELECT string_agg(reason, ',' ORDER BY reason) FROM sessions")" = "cameraOffline,rightsRevoked,rightsRevoked,userHangup,userHangup,userStopped,viewerFailed" ] ||
    fail "$CASE: $(psql_q "SELECT session_id, state, reason FROM sessions")"; ok
CASE="metrics: seven sessions opened and ended (two revoked), none live, no leg"
curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
for m in 'igw_sessions_opened_total 7' 'igw_sessions_ended_total 7' 'igw_sessions_revoked_total 2' 'igw_sessions{state="invited"} 0' \
    'igw_sessions{state="established"} 0' 'igw_legs 0'; do
    grep -qxF "$m" "$TMP/metrics" || fail "$CASE: want $m: $(grep -E '^igw_(sessions|legs)' "$TMP/metrics")"
done; ok
CASE="metrics: the shared socket answered checks and carried the media, dropping none"
metric() { sed -n "s/^$1 //p" "$TMP/metrics"; }
answered=$(metric 'igw_media_socket_checks_total{outcome="answered"}') sent=$(metric igw_media_socket_sent_total)
batches=$(metric igw_media_socket_send_batches_total) dropped=$(metric igw_media_socket_send_dropped_total)
[ "${answered:-0}" -gt 0 ] && [ "${sent:-0}" -gt 0 ] && [ "${batches:-0}" -gt 0 ] && [ "$batches" -le "$sent" ] &&
    [ "$dropped" = 0 ] || fail "$CASE: $(grep '^igw_media_socket' "$TMP/metrics")"; ok
CASE="database: each state change is one event in order"
[ "$(psql_q "SELECT string_agg(event_seq::text, ',' ORDER BY session_id, event_seq) FROM events WHERE event_seq IS NOT NULL")" != "" ] ||
    fail "$CASE"; ok

# A failed media barrier ends that viewer only (issue 26, item 3).
igw_stop
start_igwd IGW_MEDIA_FAULT_BARRIER=true
if ! IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO node "$ROOT/tests/igwd/barrier_test.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "barrier_test.mjs"
fi
CASE="database: the failed barrier's session ended mediaFailed, nothing left live"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE reason = 'mediaFailed'")" = 1 ] &&
    [ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> 'ended'")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, state, reason FROM sessions")"; ok
# Sessions that outlive their endpoint, shortened clocks (issue 26, items 5 and 6).
igw_stop
start_igwd IGW_ENDPOINT_TTL_MS=6000 IGW_ENDPOINT_GRACE_MS=2000 IGW_RIGHTS_RECHECK_MS=1000
if ! IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO node "$ROOT/tests/igwd/transfer_test.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "transfer_test.mjs"
fi
CASE="database: the unrenewed live view ended endpointExpired, on the last endpoint it was moved to"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE reason = 'endpointExpired'")" = 1 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, state, reason, endpoint_id FROM sessions WHERE state <> 'ended' OR reason = 'endpointExpired'")"; ok
igw_stop
start_igwd

# ---- igwd killed and restarted: its sessions end (nodeRestarted), nothing is lost ----------------
P=$(j .device.productID) D=$(j .device.deviceName) CAM=$(j .camera.cameraId) TOKEN=$(j .user.token)
api() { curl -s -X POST -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' "$@"; }
"$VCAM" --mqtt "127.0.0.1:$IGW_MQTT_PORT" --product "$P" --device "$D" --secret "$(j .device.secret)" --camera-id "$CAM" \
    --address "$IGW_NETNS_ADDR" 2>"$TMP/vcam.err" &
SUBPID=$!
online() { [ "$(psql_q "SELECT online FROM devices WHERE product_id = '$P' AND device_name = '$D'")" = t ]; }
wait_for 10 online || fail "the camera is not online"
EP=$(api "http://127.0.0.1:$PORT/api/v1/im/interaction/endpoints/register" | jq -r .data.endpointId)
OPEN="{\"endpointId\":\"$EP\",\"command\":{\"msgToken\":\"restart-1\",\"method\":\"interaction.open\",\"target\":{\"productID\":\"$P\",\"deviceName\":\"$D\"},\"params\":{\"purpose\":\"ipcLiveView\",\"cameraId\":\"$CAM\"}}}"
CASE="open before the restart"
[ "$(api "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "$OPEN" | jq -r .data.accepted)" = true ] || fail "$CASE"; ok
legs_are() { [ "$(grep -c "offer for leg .* sent" "$TMP/vcam.err")" = "$1" ]; } # the camera's offers so far
wait_for 10 legs_are 1 || fail "the camera was not invited: $(cat "$TMP/vcam.err")"
SID=$(psql_q "SELECT session_id FROM sessions WHERE state = 'invited'")
kill -KILL "$PID"; wait "$PID" 2>/dev/null; PID=
start_igwd
CASE="after the restart: the session ended nodeRestarted"
ended() { [ "$(psql_q "SELECT state || ' ' || reason || ' ' || event_seq FROM sessions WHERE session_id = '$SID'")" = "ended nodeRestarted 1" ]; }
wait_for 10 ended || fail "$CASE: $(psql_q "SELECT state, reason, event_seq FROM sessions WHERE session_id = '$SID'")"; ok
CASE="after the restart: nothing lost (the open's result, then the ended state, pulled in order)"
api "http://127.0.0.1:$PORT/api/v1/im/interaction/events" -d "{\"endpointId\":\"$EP\",\"limit\":32}" >"$TMP/ev"
jq -e --arg s "$SID" '[.data.list[].event | select(.sessionId == $s) | (.method + " " + (.data.state // "") + " " + (.data.reason // ""))]
    == ["interaction.result invited ", "interaction.state ended nodeRestarted"]' "$TMP/ev" >/dev/null || fail "$CASE: $(cat "$TMP/ev")"; ok
CASE="after the restart: the replay is the same acceptance, no new session"
[ "$(api "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "$OPEN" | jq -r .data.replay)" = true ] &&
    [ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> 'ended'")" = 0 ] || fail "$CASE"; ok
CASE="after the restart: a new open invites the camera again (its old leg is replaced)"
[ "$(api "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "${OPEN/restart-1/restart-2}" | jq -r .data.accepted)" = true ] ||
    fail "$CASE"
wait_for 10 legs_are 2 || fail "$CASE: $(tail -5 "$TMP/vcam.err")"; ok
CASE="the ended session is not revived by the new leg"
[ "$(psql_q "SELECT state FROM sessions WHERE session_id = '$SID'")" = ended ] || fail "$CASE"; ok

# ---- a camera that never offers: inviteTimeout, and the waiting mediaOffer gets its failure ------
SID2=$(psql_q "SELECT session_id FROM sessions WHERE state = 'invited'")
cmd() { api "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "{\"endpointId\":\"$EP\",\"command\":$1}"; }
[ "$(cmd "{\"msgToken\":\"restart-2e\",\"method\":\"interaction.end\",\"sessionId\":\"$SID2\",\"params\":{\"reason\":\"userHangup\"}}" |
    jq -r .data.accepted)" = true ] || fail "end before the stalled camera"
wait_for 10 grep -q "ended: bye from the platform" "$TMP/vcam.err" || fail "the camera got no bye: $(tail -5 "$TMP/vcam.err")"
kill -STOP "$SUBPID"
CASE="a stalled camera: open accepted, the offer waits"
[ "$(api "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "${OPEN/restart-1/restart-3}" | jq -r .data.accepted)" = true ] ||
    fail "$CASE"
invited() { [ -n "$(psql_q "SELECT session_id FROM sessions WHERE state = 'invited'")" ]; } # read at each try
wait_for 10 invited || fail "$CASE: no session"
SID3=$(psql_q "SELECT session_id FROM sessions WHERE state = 'invited'")
[ "$(cmd "{\"msgToken\":\"restart-3o\",\"method\":\"interaction.mediaOffer\",\"sessionId\":\"$SID3\",\"params\":{\"mediaRevision\":1,\"webrtc\":{\"iceMode\":\"full\",\"sdp\":\"v=0\"}}}" |
    jq -r .data.accepted)" = true ] || fail "$CASE: mediaOffer"; ok
CASE="a stalled camera: the session ended inviteTimeout"
stalled_ended() { [ "$(psql_q "SELECT state || ' ' || reason FROM sessions WHERE session_id = '$SID3'")" = "ended inviteTimeout" ]; }
wait_for 10 stalled_ended || fail "$CASE: $(psql_q "SELECT state, reason FROM sessions WHERE session_id = '$SID3'")"; ok
CASE="a stalled camera: the waiting mediaOffer's result is a failure naming the end"
api "http://127.0.0.1:$PORT/api/v1/im/interaction/events" -d "{\"endpointId\":\"$EP\",\"limit\":32}" >"$TMP/ev"
jq -e '[.data.list[].event | select(.msgToken == "restart-3o")] | length == 1 and .[0].code == 100409 and
    (.[0].data.reason | test("inviteTimeout"))' "$TMP/ev" >/dev/null || fail "$CASE: $(cat "$TMP/ev")"; ok
kill -CONT "$SUBPID"

# ---- rights: the periodic recheck, the safety net of a missed notification -----------------------
OTOKEN=$(j .otherUser.token) OUSER=$(j .otherUser.userId)
oapi() { curl -s -X POST -H "Authorization: Bearer $OTOKEN" -H 'content-type: application/json' "$@"; }
igw_stop
start_igwd IGW_RIGHTS_RECHECK_MS=1000
EP=$(api "http://127.0.0.1:$PORT/api/v1/im/interaction/endpoints/register" | jq -r .data.endpointId)
OEP=$(oapi "http://127.0.0.1:$PORT/api/v1/im/interaction/endpoints/register" | jq -r .data.endpointId)
open_json() { # ENDPOINT TOKEN
    echo "{\"endpointId\":\"$1\",\"command\":{\"msgToken\":\"$2\",\"method\":\"interaction.open\",\"target\":{\"productID\":\"$P\",\"deviceName\":\"$D\"},\"params\":{\"purpose\":\"ipcLiveView\",\"cameraId\":\"$CAM\"}}}"
}
live_of() { psql_q "SELECT session_id FROM sessions WHERE state <> 'ended' AND user_id = $1"; }
has_live() { [ -n "$(live_of "$1")" ]; } # for wait_for: read at each try
no_live() { [ -z "$(live_of "$1")" ]; }
reason_is() { [ "$(psql_q "SELECT state || ' ' || coalesce(reason, '') FROM sessions WHERE session_id = '$1'")" = "ended $2" ]; }
CASE="rights: a grant deleted without its notification still ends the session (the periodic recheck)"
[ "$(oapi "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "$(open_json "$OEP" net-1)" | jq -r .data.accepted)" = true ] ||
    fail "$CASE: open"
wait_for 10 has_live "$OUSER" || fail "$CASE: no session"
SIDN=$(live_of "$OUSER")
psql_q "ALTER TABLE device_grants DISABLE TRIGGER device_grants_notify_igw_rights;
        DELETE FROM device_grants WHERE product_id = '$P' AND device_name = '$D' AND user_id = $OUSER;
        ALTER TABLE device_grants ENABLE TRIGGER device_grants_notify_igw_rights" >/dev/null
wait_for 5 reason_is "$SIDN" rightsRevoked || fail "$CASE: $(psql_q "SELECT state, reason FROM sessions WHERE session_id = '$SIDN'")"; ok
psql_q "INSERT INTO device_grants (product_id, device_name, user_id) VALUES ('$P', '$D', $OUSER)" >/dev/null
CASE="rights: the device given to another owner ends its former owner's session, not the grantee's"
[ "$(api "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "$(open_json "$EP" own-1)" | jq -r .data.accepted)" = true ] &&
    [ "$(oapi "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "$(open_json "$OEP" own-2)" | jq -r .data.accepted)" = true ] ||
    fail "$CASE: opens"
OWNER=$(j .user.userId)
wait_for 10 has_live "$OWNER" || fail "$CASE: no session"
SIDO=$(live_of "$OWNER") SIDG=$(live_of "$OUSER")
psql_q "UPDATE devices SET owner_user_id = NULL WHERE product_id = '$P' AND device_name = '$D'" >/dev/null
wait_for 5 reason_is "$SIDO" rightsRevoked || fail "$CASE: $(psql_q "SELECT state, reason FROM sessions WHERE session_id = '$SIDO'")"
[ "$(psql_q "SELECT state FROM sessions WHERE session_id = '$SIDG'")" != ended ] || fail "$CASE: the grantee's ended too"; ok
psql_q "UPDATE devices SET owner_user_id = $OWNER WHERE product_id = '$P' AND device_name = '$D'" >/dev/null
CASE="rights: the enterprise deactivated ends its users' sessions"
wait_for 10 no_live "$OWNER" || fail "$CASE: the owner's session is still live"
[ "$(api "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" -d "$(open_json "$EP" ent-1)" | jq -r .data.accepted)" = true ] ||
    fail "$CASE: open"
wait_for 10 has_live "$OWNER" || fail "$CASE: no session"
SIDE=$(live_of "$OWNER")
psql_q "UPDATE enterprises SET active = false WHERE enterprise_id = $(j .user.enterpriseId)" >/dev/null
wait_for 5 reason_is "$SIDE" rightsRevoked && wait_for 5 reason_is "$SIDG" rightsRevoked ||
    fail "$CASE: $(psql_q "SELECT session_id, state, reason FROM sessions WHERE session_id IN ('$SIDE', '$SIDG')")"; ok
psql_q "UPDATE enterprises SET active = true WHERE enterprise_id = $(j .user.enterpriseId)" >/dev/null

# ---- caps: exact under racing opens, per node, per user, per enterprise ---------------------------
# opens N TOKEN ENDPOINT PREFIX: N opens at once (replies in $TMP/cap.PREFIX.<i>); their statuses counted.
opens() {
    igw_race "$1" "$2" "http://127.0.0.1:$PORT/api/v1/im/interaction/commands" "$(open_json "$3" "$4-{}")" "$TMP/cap.$4"
}
igw_stop
start_igwd IGW_MAX_SESSIONS=16 IGW_MAX_SESSIONS_PER_USER=0
CASE="caps: 64 opens at once against max_sessions 16: exactly 16 accepted"
got=$(opens 64 "$TOKEN" "$EP" node)
[ "$got" = "200x16 429x48" ] || fail "$CASE: $got"
# This igwd's epoch only: the restart's sweep of the earlier ones may still run.
mine="SELECT count(*) FROM sessions s JOIN nodes n ON n.node_id = s.owner_node AND n.epoch = s.owner_epoch WHERE s.state <> 'ended'"
[ "$(psql_q "$mine")" = 16 ] || fail "$CASE: $(psql_q "$mine") live sessions"
grep -l '"code":100429' "$TMP"/cap.node.* | head -1 | xargs jq -e '.data.reason | test("max_sessions 16")' >/dev/null ||
    fail "$CASE: the refusal does not name the cap: $(grep -h 100429 "$TMP"/cap.node.* | head -1)"; ok
igw_stop
start_igwd IGW_MAX_SESSIONS_PER_USER=4 IGW_MAX_SESSIONS_PER_ENTERPRISE=5
CASE="caps: 20 opens of one user against max_sessions_per_user 4: exactly 4"
got=$(opens 20 "$TOKEN" "$EP" user)
[ "$got" = "200x4 429x16" ] || fail "$CASE: $got"
grep -h '"code":100429' "$TMP"/cap.user.* | head -1 | jq -e '.data.reason | test("max_sessions_per_user 4")' >/dev/null ||
    fail "$CASE: $(grep -h 100429 "$TMP"/cap.user.* | head -1)"; ok
CASE="caps: another user of the enterprise gets what is left of max_sessions_per_enterprise 5: 1"
got=$(opens 8 "$OTOKEN" "$OEP" ent)
[ "$got" = "200x1 429x7" ] || fail "$CASE: $got"
grep -h '"code":100429' "$TMP"/cap.ent.* | head -1 | jq -e '.data.reason | test("max_sessions_per_enterprise 5")' >/dev/null ||
    fail "$CASE: $(grep -h 100429 "$TMP"/cap.ent.* | head -1)"; ok
kill -TERM "$SUBPID"; wait "$SUBPID"; rc=$?; SUBPID=
[ $rc = 0 ] || fail "igw-vcam exit $rc after SIGTERM"; ok
igw_stop
[ -n "${LIVE_KEEP_LOG:-}" ] && cp "$TMP/igwd.err" "$LIVE_KEEP_LOG"
echo "live test: $checks database checks passed"
