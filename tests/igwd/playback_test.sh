#!/usr/bin/env bash
# playback_test.sh IGWD IGWCTL VCAM - recordings end to end (issue 17,
# tests/igwd/playback_test.mjs): igw-vcam as the demo camera recording short
# segments and reporting them, the catalog query over what it recorded, and
# recordPlayback sessions played in headless Chromium through the public
# API (loaded, ready, nothing before play, play, pause, seek, the end, a
# version change, the camera killed). In network and PID namespaces of its
# own (tests/media/lib.sh), with its own PostgreSQL, Redis and Mosquitto.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    IGWD=$(realpath "${1:?usage: playback_test.sh IGWD IGWCTL VCAM}")
    IGWCTL=$(realpath "${2:?usage: playback_test.sh IGWD IGWCTL VCAM}")
    VCAM=$(realpath "${3:?usage: playback_test.sh IGWD IGWCTL VCAM}")
    command -v node >/dev/null || { echo "playback_test.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "$IGWD")/pw-node}" || { echo "playback_test.sh: playwright-core" >&2; exit 1; }
    exec timeout -k 5 300 bash -c '. "$1/tests/media/lib.sh"; media_netns bash "$1/tests/igwd/playback_test.sh" --inside "$2" "$3" "$4"' \
        sh "$ROOT" "$IGWD" "$IGWCTL" "$VCAM"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test playback 25418 63818 18918
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_NODE_ID=playback-node \
    IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-playback-test IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=${PLAYBACK_LOG_LEVEL:-info}
mkdir -p "$TMP/rec"
if ! IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_REC_DIR=$TMP/rec \
    IGW_IGWD_LOG=$TMP/igwd.err node "$ROOT/tests/igwd/playback_test.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "playback_test.mjs"
fi
CASE="database: every playback ended with its reason, bound to its recording and version"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> 'ended'")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, state FROM sessions")"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE purpose = 'recordPlayback' AND (recording_id IS NULL OR recording_version IS NULL OR reason IS NULL)")" = 0 ] &&
    [ "$(psql_q "SELECT count(*) FROM sessions WHERE purpose = 'recordPlayback'")" -ge 4 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, purpose, recording_id, recording_version, reason FROM sessions")"; ok
CASE="the catalog holds what the camera recorded, never a path"
psql_q "SELECT count(*) FROM recordings" | grep -qv '^0$' || fail "$CASE: empty"
psql_q "SELECT row_to_json(r)::text FROM recordings r" | grep -q "$TMP" && fail "$CASE: a path in the catalog"; ok
igw_stop
if grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err"; then
    grep -A40 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2; fail "sanitizer report"
fi
echo "playback test: $checks checks passed (and the script's)"
