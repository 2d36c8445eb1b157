#!/usr/bin/env bash
# doorbell_test.sh IGWD IGWCTL VCAM - the door-bell end to end (issue 25,
# tests/igwd/doorbell_test.mjs): igw-vcam as the demo camera on the broker
# ringing (SIGUSR1), igwd's session engine fanning the ring out to every
# endpoint that may answer, headless Chromium as the winner's application
# (the camera's picture and microphone down, a WebAudio tone up to the
# camera's speaker, whose levels igw-vcam logs), the others answered
# elsewhere; declines, no answer, a ring joining the one ringing, the
# refusals; every clause of the replay rules (tests/igwd/doorbell_replay.mjs);
# then the race (tests/igwd/doorbell_race.mjs): rings each
# answered by three endpoints at once, exactly one winner every time. In
# network and PID namespaces of its own (tests/media/lib.sh), with its own
# PostgreSQL, Redis and Mosquitto. Afterwards the database: every ring and
# session ended with its reason, one winner per answered ring.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    IGWD=$(realpath "${1:?usage: doorbell_test.sh IGWD IGWCTL VCAM}")
    IGWCTL=$(realpath "${2:?usage: doorbell_test.sh IGWD IGWCTL VCAM}")
    VCAM=$(realpath "${3:?usage: doorbell_test.sh IGWD IGWCTL VCAM}")
    command -v node >/dev/null || { echo "doorbell_test.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "$IGWD")/pw-node}" || { echo "doorbell_test.sh: playwright-core" >&2; exit 1; }
    exec timeout -k 5 400 bash -c '. "$1/tests/media/lib.sh"; media_netns bash "$1/tests/igwd/doorbell_test.sh" --inside "$2" "$3" "$4"' \
        sh "$ROOT" "$IGWD" "$IGWCTL" "$VCAM"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test doorbell "${DOORBELL_PG_PORT:-25490}" "${DOORBELL_REDIS_PORT:-63890}" "${DOORBELL_MQTT_PORT:-18990}"
KEY=$IGW_VAR/jwt.key
# The second user may answer the camera too: a grant.
"$IGWCTL" grant --db "$IGW_PG_DSN" --user "$(j .otherUser.userId)" --product "$(j .device.productID)" \
    --device "$(j .device.deviceName)" >/dev/null || fail "igwctl grant"
# A ring nobody answers ends after 4 s here (30 s by default); a decision's
# retry after 3 s is refused (10 minutes by default).
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_NODE_ID=doorbell-node \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-doorbell-test IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=${DOORBELL_LOG_LEVEL:-info} \
    IGW_DOORBELL_RING_TIMEOUT_MS=4000 IGW_DOORBELL_RETENTION_MS=3000 IGW_INVITE_TIMEOUT_MS=10000 IGW_MAX_SESSIONS_PER_USER=0
if ! IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_SPEAKER_LOG=$TMP/speaker.jsonl \
    IGW_PG_DSN=$IGW_PG_DSN node "$ROOT/tests/igwd/doorbell_test.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "doorbell_test.mjs"
fi
if ! IGW_BASE=http://127.0.0.1:$PORT IGW_DEMO=$DEMO IGW_PG_DSN=$IGW_PG_DSN IGW_RETENTION_MS=3000 \
    node "$ROOT/tests/igwd/doorbell_replay.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "doorbell_replay.mjs"
fi
if ! IGW_BASE=http://127.0.0.1:$PORT IGW_DEMO=$DEMO IGW_RACES=${DOORBELL_RACES:-200} \
    node "$ROOT/tests/igwd/doorbell_race.mjs"; then
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
    fail "doorbell_race.mjs"
fi
CASE="database: every ring ended, each with its reason"
wait_for 10 eval '[ "$(psql_q "SELECT count(*) FROM rings WHERE state <> '"'"'ended'"'"' OR reason IS NULL")" = 0 ]' ||
    fail "$CASE: $(psql_q "SELECT ring_id, state, reason FROM rings WHERE state <> 'ended' OR reason IS NULL")"; ok
CASE="database: no session is left live"
wait_for 10 eval '[ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> '"'"'ended'"'"'")" = 0 ]' ||
    fail "$CASE: $(psql_q "SELECT session_id, state FROM sessions WHERE state <> 'ended'")"; ok
CASE="database: an answered ring has exactly one controller at its end, every other session answered elsewhere, declined or handed over"
[ "$(psql_q "SELECT count(*) FROM rings r WHERE r.answered_at IS NOT NULL AND (r.controller IS NULL OR
       (SELECT count(*) FROM sessions s WHERE s.ring_id = r.ring_id AND s.reason NOT IN ('answeredElsewhere', 'declined', 'handedOver')) <> 1
       OR NOT EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = r.controller AND s.ring_id = r.ring_id))")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT r.ring_id, r.controller, string_agg(s.reason, ',') FROM rings r JOIN sessions s ON s.ring_id = r.ring_id GROUP BY 1, 2 LIMIT 5")"; ok
CASE="metrics: rings counted by how their ringing ended"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics" || fail "$CASE: /metrics"
total=$(sed -n 's/^igw_doorbell_rings_total //p' "$TMP/metrics")
sum=$(awk '/^igw_doorbell_rings_ended_total/ {s += $2} END {print s + 0}' "$TMP/metrics")
[ -n "$total" ] && [ "$total" -gt 0 ] && [ "$total" = "$sum" ] || fail "$CASE: rings $total, ended $sum: $(grep doorbell "$TMP/metrics")"; ok
igw_stop
if grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err"; then
    grep -A40 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2; fail "sanitizer report"
fi
echo "doorbell test: $checks checks passed (and the scripts')"
