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
# owned by a live session left.
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
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-live-test IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=info

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
CASE="database: no session is left live"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> 'ended'")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, state FROM sessions")"; ok
CASE="database: every session ended with its reason"
[ "$(psql_q "SELECT string_agg(reason, ',' ORDER BY reason) FROM sessions")" = "cameraGone,userHangup,userHangup" ] ||
    fail "$CASE: $(psql_q "SELECT session_id, state, reason FROM sessions")"; ok
CASE="database: each state change is one event in order"
[ "$(psql_q "SELECT string_agg(event_seq::text, ',' ORDER BY session_id, event_seq) FROM events WHERE event_seq IS NOT NULL")" != "" ] ||
    fail "$CASE"; ok
igw_stop
echo "live test: $checks database checks passed"
