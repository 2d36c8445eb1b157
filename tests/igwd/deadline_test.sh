#!/usr/bin/env bash
# deadline_test.sh IGWD - deadlines on every dependency, end to end: with
# PostgreSQL frozen (SIGSTOP of the server and its backends: nothing
# answers, nothing closes) a device send and an endpoint registration are
# answered within the database deadline with their documented class (a
# device already cached: its message write may have committed, outcome
# unknown; a device to look up: unavailable), /readyz turns to 503 naming postgres
# within a probe interval and timeout, and /metrics counts the probes that
# timed out; with Redis frozen /readyz names redis. After SIGCONT everything
# recovers by itself. Own PostgreSQL, Redis and Mosquitto (own ports).
set -u
IGWD=$(realpath "${1:?usage: deadline_test.sh IGWD}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
igw_services_test deadline "${DEADLINE_PG_PORT:-25396}" "${DEADLINE_REDIS_PORT:-63796}" "${DEADLINE_MQTT_PORT:-18896}"
AUTH=$(j .device.authorization) GW_AUTH=$(j .gateway.authorization) TOKEN=$(j .user.token)

# signal STOP|CONT pg|redis: freezes or thaws a service, found through its
# pid file (PostgreSQL with its backends: tests/pg_signal.sh). Thawed on
# exit, whatever happens, so a failed test never leaves a stopped server.
signal() {
    case "$2" in
    pg) "$ROOT/tests/pg_signal.sh" "$1" "$IGW_VAR/pg" ;;
    redis) kill -"$1" "$(cat "$IGW_VAR/redis/redis.pid")" ;;
    esac
}
thaw_all() { signal CONT pg 2>/dev/null; signal CONT redis 2>/dev/null; igw_services_test_down; }
trap thaw_all EXIT

DB_TIMEOUT_MS=2000
igw_start IGW_THREADS=1 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" \
    IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-deadline-test IGW_DEVICE_CACHE_MS=60000 IGW_DB_TIMEOUT_MS=$DB_TIMEOUT_MS \
    IGW_CHECK_TIMEOUT_MS=300 IGW_PROBE_INTERVAL_MS=300
H=http://127.0.0.1:$PORT

# timed METHOD URL [CURL ARGS...]: reply in $TMP/r, status in $STATUS,
# milliseconds taken in $MS.
timed() {
    local out
    out=$(curl -s -o "$TMP/r" -w '%{http_code} %{time_total}' --max-time 15 -X "$1" "${@:3}" "$2")
    STATUS=${out%% *}
    MS=$(awk -v t="${out#* }" 'BEGIN { printf "%d", t * 1000 }')
}
# send [AUTH]: a property report of the demo device (or AUTH's).
send() {
    timed POST "$H/api/v1/things/device/edge/send/thing/property" -H "authorization: ${1:-$AUTH}" \
        -H 'content-type: application/json' --data-binary '{"method":"report","msgToken":"d1","params":{"brightness":7}}'
}
register() { timed POST "$H/api/v1/im/interaction/endpoints/register" -H "authorization: Bearer $TOKEN"; }
# ready_within MS WANT [NAME]: polls /readyz until it answers WANT (200, or
# 503 naming NAME); prints how long it took; fails after MS.
ready_within() {
    local limit=$1 want=$2 name=${3-} t0 now
    t0=$(date +%s%3N)
    while :; do
        timed GET "$H/readyz"
        if [ "$STATUS" = "$want" ]; then
            [ "$want" = 200 ] && break
            jq -e --arg n "$name" '.code == 100503 and (.data.down | index($n)) != null' "$TMP/r" >/dev/null && break
        fi
        now=$(date +%s%3N)
        [ $((now - t0)) -lt "$limit" ] || fail "/readyz not $want${name:+ ($name down)} within $limit ms: $STATUS $(cat "$TMP/r")"
        sleep 0.05
    done
    echo "deadline test: /readyz $want${name:+ ($name)} after $(($(date +%s%3N) - t0)) ms"
    ok
}
metric() { curl -s "$H/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }

# ---- everything up ------------------------------------------------------------------
ready_within 5000 200
CASE="send, all up"; send; expect 200 200
CASE="register, all up"; register; expect 200 200
sleep 1 # idle: the probes run and are answered
[ "$(metric 'igw_db_probes_total{result="ok"}')" -ge 1 ] || fail "no database probe answered: $(curl -s "$H/metrics" | grep probes)"; ok
[ "$(metric 'igw_redis_probes_total{result="ok"}')" -ge 1 ] || fail "no Redis probe answered"; ok
[ "$(metric 'igw_db_probes_total{result="timeout"}')" = 0 ] || fail "a database probe timed out while all was up"; ok

# ---- PostgreSQL frozen ----------------------------------------------------------------
signal STOP pg || fail "cannot freeze PostgreSQL"
# An idle connection to a frozen server is noticed by its probe: interval
# 300 ms + timeout 300 ms (3 s allowed for a loaded machine); the old
# behaviour never turned to 503 while the connections stayed open.
ready_within 3000 503 postgres
jq -e '.data.down == ["postgres"]' "$TMP/r" >/dev/null || fail "/readyz names more than postgres: $(cat "$TMP/r")"; ok
[ "$(metric 'igw_db_probes_total{result="timeout"}')" -ge 1 ] || fail "no probe timeout counted"; ok
for _ in $(seq 30); do # each connection has its own probe phase
    [ "$(metric 'igw_db_connections{state="healthy"}')" = 0 ] && break
    sleep 0.05
done
[ "$(metric 'igw_db_connections{state="healthy"}')" = 0 ] || fail "a connection to the frozen server still counts as healthy"; ok
# within_deadline STATUS CODE: the reply came within the deadline (and the
# time a connection already waiting takes to be dropped) with that class.
within_deadline() {
    [ "$MS" -le $((DB_TIMEOUT_MS + 1500)) ] || fail "$CASE: answered after $MS ms, deadline $DB_TIMEOUT_MS ms"
    expect "$1" "$2"
    echo "deadline test: $CASE: $STATUS after $MS ms"
}
# The demo device is cached (its first send above): straight to the write.
CASE="send, cached device, PostgreSQL frozen"; send; within_deadline 504 100504
# The gateway was never seen: its lookup is a read.
CASE="send, device to look up, PostgreSQL frozen"; send "$GW_AUTH"; within_deadline 503 100503
CASE="register, PostgreSQL frozen"; register
case "$STATUS" in
503) within_deadline 503 100503 ;;
*) within_deadline 504 100504 ;;
esac
signal CONT pg || fail "cannot thaw PostgreSQL"
ready_within 10000 200
CASE="send, PostgreSQL back"; send; expect 200 200
CASE="register, PostgreSQL back"; register; expect 200 200

# ---- Redis frozen ----------------------------------------------------------------------
signal STOP redis || fail "cannot freeze Redis"
ready_within 3000 503 redis
jq -e '.data.down == ["redis"]' "$TMP/r" >/dev/null || fail "/readyz names more than redis: $(cat "$TMP/r")"; ok
[ "$(metric 'igw_redis_probes_total{result="timeout"}')" -ge 1 ] || fail "no Redis probe timeout counted"; ok
signal CONT redis || fail "cannot thaw Redis"
ready_within 10000 200

igw_stop; ok
echo "deadline test: $checks checks passed"
