#!/usr/bin/env bash
# console_test.sh IGWD IGWCTL VCAM - the browser console (console/) served by igwd
# (setting console_dir): the static route with curl (content types, headers,
# what is never served, every other route unaffected), then headless
# Chromium (tests/media/lib.mjs) driving the page against real PostgreSQL,
# Redis and Mosquitto with the demo tenant: log in, register, push, a
# device.action answered by the device over MQTT, acknowledgements, the pull
# fallback, error envelopes, a bad token (console_test.mjs); then the live
# view of the demo camera (igw-vcam as its device) from the page, and talk:
# a call of the stand-in IM (igwd with Redis and talk on), Chromium's fake
# microphone heard at the camera's speaker (igw-vcam --speaker-log); then the
# recordings panel over catalog rows written here and, when igw-vcam records
# (--record-dir), the playback of one of its recordings from the page.
# Runs in network, PID and mount namespaces of its own like the media tests
# (tests/media/lib.sh media_netns; IGW_MEDIA_NETNS=0: the host's), so
# everything it starts dies with it. playwright-core is installed first into
# IGW_PW_DIR (default: beside IGWD, shared with the media tests).
set -u
IGWD=$(realpath "${1:?usage: console_test.sh IGWD IGWCTL}")
IGWCTL=$(realpath "${2:?usage: console_test.sh IGWD IGWCTL VCAM}")
VCAM=$(realpath "${3:?usage: console_test.sh IGWD IGWCTL VCAM}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
RUN_SECONDS=300
# shellcheck source=../media/lib.sh
. "$ROOT/tests/media/lib.sh"

if [ -z "${IGW_CONSOLE_NS:-}" ]; then
    command -v node >/dev/null || { echo "console test: FAIL: node is required" >&2; exit 1; }
    # npm needs the registry: before the namespace, which has no network.
    media_playwright "${IGW_PW_DIR:-$(dirname "$IGWD")/pw-node}" || { echo "console test: FAIL: playwright-core" >&2; exit 1; }
    IGW_CONSOLE_NS=1 media_netns timeout -k 5 "$RUN_SECONDS" "$0" "$IGWD" "$IGWCTL" "$VCAM"
    exit $?
fi

# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test console "${CONSOLE_PG_PORT:-25400}" "${CONSOLE_REDIS_PORT:-63800}" "${CONSOLE_MQTT_PORT:-18900}"
TOKEN=$(j .user.token) P=$(j .device.productID) D=$(j .device.deviceName) CAM=$(j .camera.cameraId)

# The console as served: the repo's files, plus a dotfile and a subdirectory
# that must never be served.
mkdir -p "$TMP/storage" # the voice messages' uploads
DIR=$TMP/console
mkdir "$DIR" && cp "$ROOT"/console/* "$DIR"/ || fail "copy console/"
echo dotfile-secret >"$DIR/.env"
mkdir "$DIR/sub" && echo sub-secret >"$DIR/sub/f.txt"

# get PATH [CURL-ARGS...]: reply in $TMP/r, headers in $TMP/h, status in $STATUS.
get() {
    local p=$1
    shift
    STATUS=$(curl -s --path-as-is -o "$TMP/r" -D "$TMP/h" -w '%{http_code}' "$@" "http://127.0.0.1:$PORT$p")
}
# hdr NAME: the value of a response header in $TMP/h (last occurrence).
hdr() { tr -d '\r' <"$TMP/h" | sed -n "s/^$1: //Ip" | tail -n 1; }

# ---- off by default; a console_dir that is no directory stops igwd --------------------------
igw_start IGW_THREADS=1
CASE="no console_dir: /console/ is an unknown path"; get /console/; expect 404 100404
[ "$(jq -r .data.reason "$TMP/r")" = "no such route" ] || fail "$CASE: $(cat "$TMP/r")"; ok
igw_stop
env -i PATH="$PATH" LSAN_OPTIONS="${LSAN_OPTIONS:-}" IGW_LISTEN=127.0.0.1:0 IGW_CONSOLE_DIR="$DIR/index.html" "$IGWD" \
    >"$TMP/bad.out" 2>"$TMP/bad.err"
rc=$?
[ $rc != 0 ] && grep -q "console_dir .*index.html: not a directory" "$TMP/bad.err" ||
    fail "console_dir naming a file: exit $rc, $(cat "$TMP/bad.err")"; ok

# ---- the static route ---------------------------------------------------------------------------
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_DEVICE_CACHE_MS=0 \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-console-test IGW_COMMAND_TIMEOUT_MS=1000 IGW_CONSOLE_DIR="$DIR" \
    IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" \
    IGW_TALK_ENABLED=true IGW_TALK_MEMBERS=true IGW_IM_STANDIN=true \
    IGW_LISTEN=127.0.0.1:18480 IGW_PUBLIC_URL=http://127.0.0.1:18480 IGW_STORAGE_ROOT="$TMP/storage" \
    IGW_URL_KEY_FILE="$IGW_VAR/url.key" IGW_LOG_LEVEL=debug
CSP="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
for f in /console/:index.html:"text/html; charset=utf-8" /console/index.html:index.html:"text/html; charset=utf-8" \
    /console/console.js:console.js:"text/javascript; charset=utf-8" /console/console.css:console.css:"text/css; charset=utf-8" \
    /console/favicon.svg:favicon.svg:image/svg+xml; do
    path=${f%%:*} rest=${f#*:}; file=${rest%%:*} type=${rest#*:}
    CASE="GET $path"; get "$path"
    [ "$STATUS" = 200 ] && cmp -s "$TMP/r" "$DIR/$file" || fail "$CASE: HTTP $STATUS, or not $file's bytes"; ok
    [ "$(hdr content-type)" = "$type" ] || fail "$CASE: content-type $(hdr content-type), want $type"; ok
    [ "$(hdr cache-control)" = no-store ] && [ "$(hdr content-security-policy)" = "$CSP" ] &&
        [ "$(hdr x-content-type-options)" = nosniff ] && [ "$(hdr referrer-policy)" = no-referrer ] &&
        [[ $(hdr x-request-id) =~ ^[0-9a-f]{16}$ ]] || fail "$CASE: headers $(cat "$TMP/h")"; ok
done
CASE="HEAD"; get /console/console.js -I
[ "$STATUS" = 200 ] && [ "$(hdr content-length)" = "$(stat -c %s "$DIR/console.js")" ] && ! grep -q "use strict" "$TMP/r" ||
    fail "$CASE: HTTP $STATUS $(cat "$TMP/h")"; ok
CASE="a missing file"; get /console/nosuch.js; expect 404 100404
[ "$(jq -r .data.reason "$TMP/r")" = "no such file" ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="POST to a console file"; get /console/index.html -X POST; expect 405 100405
# Never served: a dotfile, a directory's listing or its files, an escape, an encoded name.
for p in /console/.env /console/sub/ /console/sub/f.txt /console/../console/index.html /console/%2e%2e/metrics \
    /console/x/../index.html /api/../console/index.html /console//index.html /console/%69ndex.html /console \
    "/console/..%2fjwt.key" /console/...; do
    CASE="not served: $p"; get "$p"; expect 404 100404
    grep -q "secret" "$TMP/r" && fail "$CASE: $(cat "$TMP/r")"; ok
done
CASE="a subdirectory: a redirect to what is not served"; get /console/sub
[ "$STATUS" = 404 ] || { [ "$STATUS" = 301 ] && [ "$(hdr location)" = /console/sub/ ]; } || fail "$CASE: HTTP $STATUS"; ok
# Every other route as before.
CASE="/healthz"; get /healthz; expect 200 200
CASE="an API route, no token"; get /api/v1/im/interaction/endpoints/register -X POST; expect 401 100401
CASE="an unknown path"; get /consoles/index.html; expect 404 100404
[ "$(jq -r .data.reason "$TMP/r")" = "no such route" ] || fail "$CASE: $(cat "$TMP/r")"; ok
# Five GETs, a HEAD, the redirect of /console/sub; a missing file; a POST.
CASE="the console in /metrics"; get /metrics
grep -q '^igw_requests_total{route="console",code="200"} 7$' "$TMP/r" &&
    grep -q '^igw_requests_total{route="console",code="100404"} 1$' "$TMP/r" &&
    grep -q '^igw_requests_total{route="console",code="100405"} 1$' "$TMP/r" ||
    fail "$CASE: $(grep console "$TMP/r")"; ok
CASE="the console in the access log"
grep -q '"path":"/console/console.js","route":"console","status":200,"code":200' "$TMP/igwd.err" || fail "$CASE"; ok

# ---- the page in Chromium ---------------------------------------------------------------------
# The device answers its first action over MQTT (one connection per device:
# the subscriber ends before the publisher connects).
MU=$(j .device.username) MP=$(j .device.password)
(mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$P&$D" -u "$MU" -P "$MP" -q 1 -C 1 -W 120 \
    -t "\$thing/down/action/$P/$D" >"$TMP/down" &&
    T1=$(jq -r .msgToken "$TMP/down") &&
    mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$P&$D" -u "$MU" -P "$MP" -q 1 -t "\$thing/up/action/$P/$D" \
        -m "{\"method\":\"actionReply\",\"msgToken\":\"$T1\",\"code\":200,\"actionID\":\"ptz\",\"response\":{\"ok\":true}}") &
SUBPID=$!
sleep 0.5
media_sanitizers "$TMP" || fail "sanitizer options"
node "$HERE/console_test.mjs" "http://127.0.0.1:$PORT" "$TOKEN" "$P" "$D" "$CAM" || fail "console_test.mjs"
ok
wait "$SUBPID"; SUBPID=
CASE="the device got the page's action"; jq -e '.actionID == "ptz" and .params == {"direction":1,"speed":5}' "$TMP/down" >/dev/null ||
    fail "$CASE: $(cat "$TMP/down")"; ok
CASE="every delivery acknowledged"
[ "$(psql_q "SELECT count(*) FILTER (WHERE acked_at IS NULL) || '/' || (count(*) >= 2) FROM deliveries")" = 0/true ] ||
    fail "$CASE: $(psql_q "SELECT delivery_id, state, acked_at FROM deliveries")"; ok
# ---- the live view: the device is the camera now (igw-vcam) -------------------------------------
# Its speaker's levels (one JSON line per 50 ms played) are for the talk below.
"$VCAM" --mqtt "127.0.0.1:$IGW_MQTT_PORT" --product "$P" --device "$D" --secret "$(j .device.secret)" --camera-id "$CAM" \
    --address "$IGW_NETNS_ADDR" --speaker-log "$TMP/speaker.jsonl" 2>"$TMP/vcam.err" &
SUBPID=$!
for _ in $(seq 100); do [ "$(psql_q "SELECT online FROM devices WHERE product_id = '$P' AND device_name = '$D'")" = t ] && break; sleep 0.1; done
IGW_VCAM_PID=$SUBPID node "$HERE/console_test.mjs" --live "http://127.0.0.1:$PORT" "$TOKEN" "$P" "$D" "$CAM" ||
    { tail -20 "$TMP/vcam.err" >&2; fail "console_test.mjs --live"; }
ok
CASE="the live view's, the door-bell's and the AI session ended, by the page (the ring's others answered elsewhere)"
[ "$(psql_q "SELECT string_agg(purpose || ' ' || state || ' ' || reason, ',' ORDER BY purpose)
             FROM sessions WHERE reason IS DISTINCT FROM 'answeredElsewhere'")" = \
    "aiVision ended userHangup,doorbell ended userHangup,ipcLiveView ended userHangup" ] ||
    fail "$CASE: $(psql_q "SELECT session_id, state, reason FROM sessions")"; ok
# ---- talk: user 1001 calls demo-group and talks; 1002 and 1003 join; hang up ----------------------
# 1002 talks too: rights on the camera.
"$IGWCTL" grant --db "$IGW_PG_DSN" --user "$(j .otherUser.userId)" --product "$P" --device "$D" >/dev/null || fail "igwctl grant"
node "$HERE/console_test.mjs" --talk "http://127.0.0.1:$PORT" "$TOKEN" "$P" "$D" "$CAM" "$(j .otherUser.token)" \
    "$(j .thirdUser.token)" "$TMP/speaker.jsonl" || { tail -20 "$TMP/vcam.err" >&2; fail "console_test.mjs --talk"; }
ok
CASE="the talk sessions (1001's, 1002's) ended with the call or their member, bound to it"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE purpose = 'ipcTalk' AND state = 'ended'
    AND reason IN ('callEnded', 'memberLeft') AND call_id IS NOT NULL AND member_epoch = 1")" = 2 ] &&
    [ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> 'ended'")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, purpose, state, reason, call_id, member_epoch FROM sessions")"; ok
CASE="the speaker heard the page"
jq -se 'map(select(.rms_db > -40)) | length > 0' "$TMP/speaker.jsonl" >/dev/null || fail "$CASE: $(tail -5 "$TMP/speaker.jsonl")"; ok
kill -TERM "$SUBPID"; wait "$SUBPID"; rc=$?; SUBPID=
[ $rc = 0 ] || fail "igw-vcam exit $rc after SIGTERM"; ok
# ---- recordings: a page of the catalog (rows written here), then what igw-vcam records, played -----
# 40 one-minute recordings from three hours ago (out of the default last hour): every other one
# with audio, every tenth unavailable, durations 59.0 s, 58.9 s, ...
CAT_T0=$((($(date +%s) - 3 * 3600) * 1000))
psql_q "INSERT INTO recordings (recording_id, product_id, device_name, camera_id, start_time_ms, end_time_ms,
          duration_ms, available, video_codec, audio_codec, recording_version)
        SELECT 'cat-' || lpad(i::text, 3, '0'), '$P', '$D', '$CAM', $CAT_T0 + i * 60000, $CAT_T0 + i * 60000 + 59000,
               59000 - i * 100, i % 10 <> 9, 'H264', CASE WHEN i % 2 = 0 THEN 'opus' END, 1 + i % 3
        FROM generate_series(0, 39) i" >/dev/null || fail "insert the catalog's rows"
PLAY=
if "$VCAM" --help 2>&1 | grep -q -- --record-dir; then
    # The camera again, recording 10 s segments, once the broker has seen the last one go.
    PLAY=play
    for _ in $(seq 100); do [ "$(psql_q "SELECT online FROM devices WHERE product_id = '$P' AND device_name = '$D'")" = f ] && break; sleep 0.1; done
    mkdir "$TMP/rec" || fail "mkdir rec"
    "$VCAM" --mqtt "127.0.0.1:$IGW_MQTT_PORT" --product "$P" --device "$D" --secret "$(j .device.secret)" --camera-id "$CAM" \
        --address "$IGW_NETNS_ADDR" --record-dir "$TMP/rec" --segment-ms 10000 --retain-s 600 2>"$TMP/vcam-rec.err" &
    SUBPID=$!
    for _ in $(seq 100); do [ "$(psql_q "SELECT online FROM devices WHERE product_id = '$P' AND device_name = '$D'")" = t ] && break; sleep 0.1; done
else
    echo "console test: igw-vcam does not record (no --record-dir): the recordings list only, no playback" >&2
fi
node "$HERE/console_test.mjs" --recordings "http://127.0.0.1:$PORT" "$TOKEN" "$P" "$D" "$CAM" "$CAT_T0" $PLAY ||
    { [ -n "$PLAY" ] && tail -20 "$TMP/vcam-rec.err" >&2; fail "console_test.mjs --recordings"; }
ok
if [ -n "$PLAY" ]; then
    CASE="the page's playbacks ended: one stopped by its user, one at the recording's end"
    [ "$(psql_q "SELECT string_agg(reason, ' ' ORDER BY reason) FROM sessions WHERE purpose = 'recordPlayback' AND state = 'ended'
        AND recording_id NOT LIKE 'cat-%'")" = "recordingEnded userStopped" ] &&
        [ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> 'ended'")" = 0 ] ||
        fail "$CASE: $(psql_q "SELECT session_id, purpose, state, reason, recording_id FROM sessions WHERE purpose = 'recordPlayback'")"; ok
    kill -TERM "$SUBPID"; wait "$SUBPID"; rc=$?; SUBPID=
    [ $rc = 0 ] || fail "igw-vcam (recording) exit $rc after SIGTERM"; ok
fi
igw_stop
echo "console test: $checks checks passed"
