#!/usr/bin/env bash
# talk_media.sh IGWD IGWCTL VCAM - ipcTalk end to end with real audio (issue
# 16, tests/igwd/talk_media.mjs): igw-vcam as the demo camera with a speaker
# whose played levels it logs, igwd with talk and extra members on, headless
# Chromium as the members' applications publishing WebAudio tones, the
# stand-in IM for the call. In network and PID namespaces of its own
# (tests/media/lib.sh), with its own PostgreSQL, Redis and Mosquitto.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    IGWD=$(realpath "${1:?usage: talk_media.sh IGWD IGWCTL VCAM}")
    IGWCTL=$(realpath "${2:?usage: talk_media.sh IGWD IGWCTL VCAM}")
    VCAM=$(realpath "${3:?usage: talk_media.sh IGWD IGWCTL VCAM}")
    command -v node >/dev/null || { echo "talk_media.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "$IGWD")/pw-node}" || { echo "talk_media.sh: playwright-core" >&2; exit 1; }
    exec timeout -k 5 300 bash -c '. "$1/tests/media/lib.sh"; media_netns bash "$1/tests/igwd/talk_media.sh" --inside "$2" "$3" "$4"' \
        sh "$ROOT" "$IGWD" "$IGWCTL" "$VCAM"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test talk-media 25408 63808 18908
KEY=$IGW_VAR/jwt.key
# The second and third members talk to the camera too: rights on the device.
"$IGWCTL" grant --db "$IGW_PG_DSN" --user "$(j .otherUser.userId)" --product "$(j .device.productID)" \
    --device "$(j .device.deviceName)" >/dev/null || fail "igwctl grant"
"$IGWCTL" grant --db "$IGW_PG_DSN" --user "$(j .thirdUser.userId)" --product "$(j .device.productID)" \
    --device "$(j .device.deviceName)" >/dev/null || fail "igwctl grant"
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_NODE_ID=talk-node \
    IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-talk-test IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=${TALK_LOG_LEVEL:-info} \
    IGW_TALK_ENABLED=true IGW_TALK_MEMBERS=true IGW_IM_STANDIN=true
if ! IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_SPEAKER_LOG=$TMP/speaker.jsonl \
    IGW_IGWD_LOG=$TMP/igwd.err IGW_SERVICES=$ROOT/src/ops/services.sh node "$ROOT/tests/igwd/talk_media.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "talk_media.mjs"
fi
CASE="database: every talk session ended with its reason, bound to its call"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> 'ended'")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, state FROM sessions")"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE purpose = 'ipcTalk' AND (call_id IS NULL OR member_epoch IS NULL)")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, purpose, call_id, member_epoch FROM sessions")"; ok
igw_stop
if grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err"; then
    grep -A40 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2; fail "sanitizer report"
fi
echo "talk media test: $checks checks passed (and the script's)"
