#!/usr/bin/env bash
# forward_test.sh IGWD IGWCTL VCAM - two igwd nodes on one PostgreSQL: a
# live view opened on node A (igw-vcam its camera on the broker, Chromium
# its viewer) and driven through node B, which holds nothing and forwards
# every command to A, a second viewer opened on B joining A's camera leg,
# then a cold open on B (B's leg) (tests/igwd/forward_test.mjs); then the
# database: the sessions A's and B's as opened, no forward or leg left. Both
# nodes are on the broker: the camera's messages reach either. Own
# services, inside a network namespace.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    IGWD=$(realpath "${1:?usage: forward_test.sh IGWD IGWCTL VCAM}")
    IGWCTL=$(realpath "${2:?usage: forward_test.sh IGWD IGWCTL VCAM}")
    VCAM=$(realpath "${3:?usage: forward_test.sh IGWD IGWCTL VCAM}")
    command -v node >/dev/null || { echo "forward_test.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "$IGWD")/pw-node}" || { echo "forward_test.sh: playwright-core" >&2; exit 1; }
    exec timeout -k 5 240 bash -c '. "$1/tests/media/lib.sh"; media_netns bash "$1/tests/igwd/forward_test.sh" --inside "$2" "$3" "$4"' \
        sh "$ROOT" "$IGWD" "$IGWCTL" "$VCAM"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test forward 25403 63803 18903
KEY=$IGW_VAR/jwt.key

# No linger: the cold open on B must find no leg left on A.
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_NODE_ID=fwd-a IGW_LEG_LINGER_MS=0 \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-forward-a IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=info
: >"$TMP/igwd-b.out"
env -i PATH="$PATH" LSAN_OPTIONS="${LSAN_OPTIONS:-}" ASAN_OPTIONS="${ASAN_OPTIONS:-}" IGW_LISTEN=127.0.0.1:0 \
    IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_NODE_ID=fwd-b IGW_LEG_LINGER_MS=0 \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-forward-b IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=info "$IGWD" >"$TMP/igwd-b.out" 2>>"$TMP/igwd-b.err" &
PID_B=$!
PORT_B=$(igw_port "$TMP/igwd-b.out" "$PID_B") || fail "igwd node b did not start: $(cat "$TMP/igwd-b.err")"
stop_b() { [ -n "$PID_B" ] && { kill -TERM "$PID_B"; wait "$PID_B"; local rc=$?; PID_B=; return $rc; }; }
trap 'stop_b >/dev/null 2>&1; igw_services_test_down' EXIT

if ! IGW_BASE=http://127.0.0.1:$PORT IGW_BASE_B=http://127.0.0.1:$PORT_B IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_PG_DSN=$IGW_PG_DSN \
    node "$ROOT/tests/igwd/forward_test.mjs" >"$TMP/fwd.out"; then
    cat "$TMP/fwd.out"
    grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" "$TMP/igwd-b.err" >&2
    tail -n 30 "$TMP/igwd-b.err" >&2
    fail "forward_test.mjs"
fi
cat "$TMP/fwd.out"
SID=$(sed -n 's/^SID //p' "$TMP/fwd.out")
SID3=$(sed -n 's/^SID3 //p' "$TMP/fwd.out")
CASE="database: the session, its subscriber and the second viewer are node A's, the cold open on B node B's, all ended"
[ "$(psql_q "SELECT string_agg(owner_node || ' ' || state, ',' ORDER BY owner_node) FROM sessions")" = \
    "fwd-a ended,fwd-a ended,fwd-a ended,fwd-b ended" ] &&
    [ "$(psql_q "SELECT owner_node FROM sessions WHERE session_id = '$SID'")" = fwd-a ] &&
    [ "$(psql_q "SELECT owner_node FROM sessions WHERE session_id = '$SID3'")" = fwd-b ] ||
    fail "$CASE: $(psql_q "SELECT session_id, owner_node, state FROM sessions")"; ok
CASE="database: no forward left unclaimed, no leg left"
[ "$(psql_q "SELECT count(*) FROM forwards")" = 0 ] && [ "$(psql_q "SELECT count(*) FROM legs")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT * FROM forwards") / $(psql_q "SELECT * FROM legs")"; ok
CASE="node b: stops cleanly"; stop_b || fail "$CASE"; ok
CASE="node a: stops cleanly"; igw_stop; ok
for f in "$TMP/igwd.err" "$TMP/igwd-b.err"; do
    CASE="no sanitizer report in $(basename "$f")"
    ! grep -q 'ERROR: AddressSanitizer\|runtime error\|LeakSanitizer' "$f" || fail "$CASE: $(grep -A30 -m1 'Sanitizer\|runtime error' "$f")"; ok
done
echo "forward test: passed"
