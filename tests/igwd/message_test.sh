#!/usr/bin/env bash
# message_test.sh IGWD IGWCTL VCAM - messageSend end to end (issue 26,
# tests/igwd/message_test.mjs): audio uploads by applications (the type
# told by the first bytes), a voice message sent to igw-vcam as the demo
# camera on the broker, which fetches the signed link, plays it (its level
# log) and answers; the refusals (expired, foreign and other tenant's
# uploads, a reused deliveryId), a message that expires before the device
# fetched it, and an offline camera that gets its message when it comes
# back (its `get`). Its own PostgreSQL, Redis and Mosquitto on loopback.
# Afterwards the database: every message settled exactly once.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
IGWD=$(realpath "${1:?usage: message_test.sh IGWD IGWCTL VCAM}")
IGWCTL=$(realpath "${2:?usage: message_test.sh IGWD IGWCTL VCAM}")
VCAM=$(realpath "${3:?usage: message_test.sh IGWD IGWCTL VCAM}")
command -v node >/dev/null || { echo "message_test.sh: node is required" >&2; exit 1; }
command -v gst-launch-1.0 >/dev/null || { echo "message_test.sh: gst-launch-1.0 is required" >&2; exit 1; }
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test message "${MESSAGE_PG_PORT:-25510}" "${MESSAGE_REDIS_PORT:-63910}" "${MESSAGE_MQTT_PORT:-19010}"
HTTP_PORT=${MESSAGE_HTTP_PORT:-18510}
mkdir -p "$TMP/storage"
# The sounds: 2 s of a 440 Hz tone as Ogg/Opus and as WAV.
gst-launch-1.0 -q audiotestsrc num-buffers=100 freq=440 volume=0.5 ! audioconvert ! opusenc ! oggmux ! \
    filesink location="$TMP/tone.ogg" || fail "gst-launch: tone.ogg"
gst-launch-1.0 -q audiotestsrc num-buffers=20 freq=440 ! audioconvert ! wavenc ! \
    filesink location="$TMP/tone.wav" || fail "gst-launch: tone.wav"
# Messages expire past their deadline; the overdue pass runs every
# chore tick, so a 3 s message ends within a few seconds here.
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_NODE_ID=message-node \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-message-test IGW_LOG_LEVEL=${MESSAGE_LOG_LEVEL:-info} \
    IGW_LISTEN=127.0.0.1:$HTTP_PORT IGW_PUBLIC_URL=http://127.0.0.1:$HTTP_PORT IGW_STORAGE_ROOT="$TMP/storage" \
    IGW_URL_KEY_FILE="$IGW_VAR/url.key" IGW_UPLOAD_MAX=1M IGW_MESSAGE_TTL_MAX_MS=7200000
if ! IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_SPEAKER_LOG=$TMP/speaker.jsonl \
    IGW_PG_DSN=$IGW_PG_DSN IGW_SOUNDS=$TMP IGW_STORAGE=$TMP/storage node "$ROOT/tests/igwd/message_test.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "message_test.mjs"
fi
CASE="database: every message settled once (played, expired or failed), none still waiting"
[ "$(psql_q "SELECT count(*) FROM messages m JOIN device_commands c USING (product_id, device_name, device_token)
             WHERE c.outcome IS NULL")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT m.delivery_id, c.outcome FROM messages m JOIN device_commands c USING (product_id, device_name, device_token)")"; ok
CASE="database: a message row for each accepted messageSend and none for a refused one"
[ "$(psql_q "SELECT count(*) FROM commands WHERE method = 'messageSend'")" = "$(psql_q "SELECT count(*) FROM messages")" ] ||
    fail "$CASE: $(psql_q "SELECT count(*) FROM commands WHERE method = 'messageSend'") commands, $(psql_q "SELECT count(*) FROM messages") messages"; ok
igw_stop
if grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err"; then
    grep -A40 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2; fail "sanitizer report"
fi
echo "message test: $checks checks passed (and the script's)"
