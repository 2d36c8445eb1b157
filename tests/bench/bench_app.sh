#!/usr/bin/env bash
# bench_app.sh IGWD - area B under load: acceptance latency at 1000
# commands/s and throughput, command-to-push latency over the WebSocket with a
# real MQTT device answering, pull-and-ack throughput (tests/bench/bench_app.mjs),
# beside the edge benchmark's no-database reference route as ratios.
# Own PostgreSQL, Redis and Mosquitto; demo tenant; everything torn down.
# The last line is
#   RESULT accept_p99_ms=<n> accepted_per_s=<n> push_p99_ms=<n> pull_ack_per_s=<n>
# Settings: RATE (1000), SECONDS (5), CONNS (32), IGWD_THREADS (2).
set -euo pipefail
IGWD=$(realpath "${1:?usage: bench_app.sh IGWD}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
TMP=$(mktemp -d /tmp/igw-bench-app.XXXXXX)
chmod 755 "$TMP"
export IGW_VAR=$TMP/var IGW_PG_PORT=25397 IGW_REDIS_PORT=63797 IGW_MQTT_PORT=18897
NODE_DIR=${BENCH_NODE_DIR:-$ROOT/build/bench/node}
PID=
cleanup() {
    [ -n "$PID" ] && { disown "$PID" 2>/dev/null; kill -KILL "$PID" 2>/dev/null; }
    "$ROOT/src/ops/services.sh" down >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
if [ ! -d "$NODE_DIR/node_modules/mqtt" ] || [ ! -d "$NODE_DIR/node_modules/ws" ]; then
    npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$NODE_DIR" ws@8.18.3 mqtt@5 >&2
fi
"$ROOT/src/ops/services.sh" up >"$TMP/services.log" 2>&1 || { cat "$TMP/services.log" >&2; exit 2; }
# shellcheck disable=SC1091
. "$IGW_VAR/env"
IGW_BASE_URL=http://127.0.0.1:0 "$ROOT/src/ops/provision.sh" >/dev/null
env -i PATH="$PATH" IGW_LISTEN=127.0.0.1:0 IGW_THREADS="${IGWD_THREADS:-2}" IGW_PG_DSN="$IGW_PG_DSN" \
    IGW_ACCESS_LOG=false IGW_BENCH_ROUTES=true IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_COMMAND_TIMEOUT_MS=1000 \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-bench-app "$IGWD" >"$TMP/out" 2>"$TMP/err" &
PID=$!
PORT=$(igw_port "$TMP/out" "$PID") || { echo "bench_app: igwd did not start" >&2; cat "$TMP/err" >&2; exit 2; }
for _ in $(seq 50); do grep -q "igw-mqtt: connected" "$TMP/err" && break; sleep 0.1; done

# The reference of the edge benchmark: the no-database reply, same binary, wrk.
AUTH=$(jq -r .device.authorization "$IGW_VAR/demo.json")
bare=0
if command -v wrk >/dev/null; then
    cat >"$TMP/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "$AUTH"
wrk.body = '{"method":"report","msgToken":"b","params":{"brightness":1}}'
LUA
    bare=$(wrk -t2 -c64 -d3s -s "$TMP/post.lua" "http://127.0.0.1:$PORT/bench/bare" | awk '/Requests\/sec/ {printf "%.0f", $2}')
fi

BASE=http://127.0.0.1:$PORT/api/v1/im/interaction TOKEN=$(jq -r .user.token "$IGW_VAR/demo.json") \
    DEVICE=$(jq -c .device "$IGW_VAR/demo.json") MQTT_PORT=$IGW_MQTT_PORT NODE_DIR=$NODE_DIR \
    node "$ROOT/tests/bench/bench_app.mjs" | tee "$TMP/res"
json=$(sed -n 's/^JSON //p' "$TMP/res")
r() { jq -r "$1" <<<"$json"; }
echo "reference (no-database reply of the edge route): ${bare} req/s"
awk -v a="$(r .accepted_per_s)" -v p="$(r .pull_ack_per_s)" -v b="$bare" \
    'BEGIN { if (b > 0) printf "ratios to the reference: accepted %.3f, pull-and-ack deliveries %.3f\n", a / b, p / b }'
printf 'RESULT accept_p99_ms=%.2f accepted_per_s=%.0f push_p99_ms=%.2f pull_ack_per_s=%.0f\n' \
    "$(r .accept_p99_ms)" "$(r .accepted_per_s)" "$(r .push_p99_ms)" "$(r .pull_ack_per_s)"
