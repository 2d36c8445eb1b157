#!/usr/bin/env bash
# bench_edge.sh IGWD - durable device ingestion against the same binary's
# no-database reply (POST /bench/bare), with wrk on loopback, in one run.
#
# Brings up its own PostgreSQL, Redis and Mosquitto (own ports and
# directory), provisions the demo tenant, starts igwd with bench_routes on,
# warms up, then runs wrk on send/thing/property with a valid report
# (credentials, thing-model check, group commit, synchronous_commit on) and
# on /bench/bare with the same body, alternating ROUNDS times and keeping each
# side's best run (the machine is shared with wrk and PostgreSQL). The last line is
#   RESULT durable_vs_bare=<ratio> durable_msgs_s=<n> bare_msgs_s=<n> p99_ms=<n>
# (p99 of the durable side). The reference route does everything the send
# route does (credentials, strict decoding, thing-model check, the same
# reply) except the database write, so the ratio is the price of
# durability. Settings: BENCH_SECONDS (10), BENCH_CONNS (1000: devices
# connected at once; group commit needs concurrency), BENCH_THREADS (wrk
# threads, 2), ROUNDS (2: pairs of runs, the best of each side kept),
# WARMUP_SECONDS (2 per route, not counted), IGWD_THREADS (2),
# IGWD_DB_CONNECTIONS (1), IGWD_BATCH_MAX (256), BENCH_TMP (/tmp: where the
# services' files go; /dev/shm makes every fsync free, not durable).
set -euo pipefail
IGWD=$(realpath "${1:?usage: bench_edge.sh IGWD}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
SECONDS_=${BENCH_SECONDS:-10}
CONNS=${BENCH_CONNS:-1000}
WRK_THREADS=${BENCH_THREADS:-2}
ROUNDS=${ROUNDS:-2} WARM=${WARMUP_SECONDS:-2}
command -v wrk >/dev/null || { echo "bench_edge: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/igw-bench-edge.XXXXXX")
chmod 755 "$TMP"
export IGW_VAR=$TMP/var IGW_PG_PORT=54394 IGW_REDIS_PORT=63794 IGW_MQTT_PORT=18894
PID=
cleanup() { # never stops half way (set -e): a process that already exited is fine
    if [ -n "$PID" ]; then disown "$PID" 2>/dev/null || true; kill -KILL "$PID" 2>/dev/null || true; fi
    "$ROOT/src/ops/services.sh" down >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT

"$ROOT/src/ops/services.sh" up >"$TMP/services.log" 2>&1 || { cat "$TMP/services.log" >&2; exit 2; }
# shellcheck disable=SC1091
. "$IGW_VAR/env"
IGW_BASE_URL=http://127.0.0.1:0 "$ROOT/src/ops/provision.sh" >/dev/null
AUTH=$(jq -r .device.authorization "$IGW_VAR/demo.json")

env -i PATH="$PATH" IGW_LISTEN=127.0.0.1:0 IGW_THREADS="${IGWD_THREADS:-2}" IGW_PG_DSN="$IGW_PG_DSN" \
    IGW_ACCESS_LOG=false IGW_BENCH_ROUTES=true IGW_DB_CONNECTIONS="${IGWD_DB_CONNECTIONS:-1}" IGW_BATCH_MAX="${IGWD_BATCH_MAX:-256}" "$IGWD" >"$TMP/out" 2>"$TMP/err" &
PID=$!
PORT=$(igw_port "$TMP/out" "$PID") || { echo "bench_edge: igwd did not start" >&2; cat "$TMP/err" >&2; exit 2; }
BASE=http://127.0.0.1:$PORT

# Each request a distinct msgToken, as devices send.
cat >"$TMP/post.lua" <<LUA
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "$AUTH"
request = function()
  n = n + 1
  local body = '{"method":"report","msgToken":"b' .. n .. '","params":{"brightness":' .. (n % 101) .. ',"zoom":20}}'
  return wrk.format(nil, nil, nil, body)
end
LUA

# Sanity: both routes answer 200 with the same reply shape.
body='{"method":"report","msgToken":"b0","params":{"brightness":1,"zoom":20}}'
for path in /api/v1/things/device/edge/send/thing/property /bench/bare; do
    code=$(curl -s -o "$TMP/r" -w '%{http_code}' -H "authorization: $AUTH" -H 'content-type: application/json' \
        -d "$body" "$BASE$path")
    [ "$code" = 200 ] || { echo "bench_edge: $path answered $code: $(cat "$TMP/r")" >&2; exit 2; }
done

# run PATH SECONDS: prints "rps p50_ms p99_ms errors".
run() {
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"$2"s --latency -s "$TMP/post.lua" "$BASE$1" >"$TMP/wrk" 2>&1
    awk '
        /Requests\/sec:/ { rps = $2 }
        /^ +50%/ { p50 = $2 } /^ +99%/ { p99 = $2 }
        /Non-2xx or 3xx responses:/ { errs = $5 }
        /Socket errors:/ { errs += 0 }
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        END { printf "%.0f %.3f %.3f %d\n", rps, ms(p50), ms(p99), errs + 0 }' "$TMP/wrk"
}

before=$(IGW_VAR=$IGW_VAR "$ROOT/src/ops/services.sh" psql -XAtq -c "SELECT count(*) FROM device_messages")
run /api/v1/things/device/edge/send/thing/property "$WARM" >/dev/null # warm-up: connections, caches, JIT of nothing
run /bench/bare "$WARM" >/dev/null
best_d=0 best_b=0 d_p50=0 d_p99=0 b_p50=0 b_p99=0
for round in $(seq "$ROUNDS"); do
    read -r rps p50 p99 errs < <(run /api/v1/things/device/edge/send/thing/property "$SECONDS_")
    echo "round $round durable: $rps msgs/s p50 ${p50} ms p99 ${p99} ms non-2xx $errs"
    [ "$errs" = 0 ] || { echo "bench_edge: durable route had $errs errors" >&2; exit 1; }
    if [ "$rps" -gt "$best_d" ]; then best_d=$rps d_p50=$p50 d_p99=$p99; fi
    read -r rps p50 p99 errs < <(run /bench/bare "$SECONDS_")
    echo "round $round bare:    $rps msgs/s p50 ${p50} ms p99 ${p99} ms non-2xx $errs"
    if [ "$rps" -gt "$best_b" ]; then best_b=$rps b_p50=$p50 b_p99=$p99; fi
done
after=$("$ROOT/src/ops/services.sh" psql -XAtq -c "SELECT count(*) FROM device_messages")
batches=$("$ROOT/src/ops/services.sh" psql -XAtq -c "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
echo "stored: $((after - before)) messages (every durable 200 is a row); database commits so far: $batches"
echo "durable: best $best_d msgs/s, p50 $d_p50 ms, p99 $d_p99 ms"
echo "bare:    best $best_b msgs/s, p50 $b_p50 ms, p99 $b_p99 ms"
ratio=$(awk -v d="$best_d" -v b="$best_b" 'BEGIN { printf "%.2f", b ? d / b : 0 }')
echo "RESULT durable_vs_bare=$ratio durable_msgs_s=$best_d bare_msgs_s=$best_b p99_ms=$d_p99"
