#!/usr/bin/env bash
# bench_nodes.sh IGWD IGWCTL VCAM - several nodes as one service (issue 28;
# tests/bench/bench_nodes.mjs): three igwd nodes (-O2, no sanitizers) n1 n2
# n3 on one PostgreSQL, Redis and Mosquitto behind HAProxy (services.sh
# balancer-up), the demo camera (igw-vcam) on the broker, a Chromium viewer.
# Everything in network and PID namespaces of its own (tests/media/lib.sh)
# with its own services (25407, 63807, 18907). A benchmark, not a test: it
# fails only when something does not work, never on speed.
# Settings: CMDS (1000), CONC (8), LOAD_SECONDS (5), LAPSE_MS (3000: the
# nodes' node_lapse_ms; heartbeat 500 ms). The last line is
#   RESULT forwarded_cmd_overhead_p99_ms=<n> owner_p99_ms=<n> forwarded_p99_ms=<n> failover_to_frame_ms=<n>
#          lapse_ms=<n> lost=<n> cmds_per_s_1=<n> cmds_per_s_2=<n> cmds_per_s_3=<n>
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    usage="usage: bench_nodes.sh IGWD IGWCTL VCAM"
    args=()
    for i in 1 2 3; do args+=("$(realpath "${!i:?$usage}")") || exit 2; done
    command -v node >/dev/null || { echo "bench_nodes.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "${args[0]}")/pw-node}" || { echo "bench_nodes.sh: playwright-core" >&2; exit 1; }
    WS_NODE_DIR=${WS_NODE_DIR:-$(dirname "${args[0]}")/ws-node}
    if [ ! -d "$WS_NODE_DIR/node_modules/ws" ]; then
        npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$WS_NODE_DIR" ws@8.18.3 >&2 ||
            { echo "bench_nodes.sh: npm install ws" >&2; exit 1; }
    fi
    export WS_NODE_DIR
    exec timeout -k 5 900 bash -c '. "$1/tests/media/lib.sh"; shift; media_netns bash "$0" --inside "$@"' \
        "$ROOT/tests/bench/bench_nodes.sh" "$ROOT" "${args[@]}"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test bench-nodes 25407 63807 18907
LAPSE=${LAPSE_MS:-3000}
LB=127.0.0.1:18080 # this namespace's own
declare -A NPID NPORT
start_node() {
    : >"$TMP/$1.out"
    env -i PATH="$PATH" IGW_LISTEN=127.0.0.1:0 IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" \
        IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_NODE_ID="$1" IGW_NODE_HEARTBEAT_MS=500 IGW_NODE_LAPSE_MS="$LAPSE" \
        IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" IGW_MAX_SESSIONS_PER_USER=0 \
        IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
        IGW_MQTT_CLIENT_ID="igwd-$1" IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=warn \
        "$IGWD" >"$TMP/$1.out" 2>>"$TMP/$1.err" &
    NPID[$1]=$!
    NPORT[$1]=$(igw_port "$TMP/$1.out" "${NPID[$1]}") || fail "igwd $1 did not start: $(tail -5 "$TMP/$1.err")"
}
stop_nodes() {
    for n in "${!NPID[@]}"; do kill -KILL "${NPID[$n]}" 2>/dev/null; done
    igw_services_test_down
}
trap stop_nodes EXIT
for n in n1 n2 n3; do start_node $n; done
"$ROOT/src/ops/services.sh" balancer-up "$LB" "${NPORT[n1]}" "${NPORT[n2]}" "${NPORT[n3]}" >"$TMP/lb.log" 2>&1 ||
    fail "balancer-up: $(cat "$TMP/lb.log")"
for _ in $(seq 50); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$LB/readyz")" = 200 ] && break; sleep 0.1; done

echo "bench-nodes: 3 igwd nodes (-O2, no sanitizers, 2 workers, 1 media thread each) behind HAProxy on one PostgreSQL," \
    "Redis and Mosquitto, the demo camera and one Chromium viewer, all on this machine's $(nproc) cores;" \
    "CMDS=${CMDS:-1000} CONC=${CONC:-8} LOAD_SECONDS=${LOAD_SECONDS:-5} lapse ${LAPSE} ms"
url() { echo "http://127.0.0.1:${NPORT[$1]}"; }
IGW_BASE=$(url n3) IGW_LB=http://$LB IGW_NODES="n1=$(url n1) n2=$(url n2) n3=$(url n3)" \
    IGW_NODE_PIDS="n1=${NPID[n1]}" IGW_DEMO=$DEMO IGW_VCAM=$VCAM IGW_PG_DSN=$IGW_PG_DSN IGW_LAPSE_MS=$LAPSE \
    node "$ROOT/tests/bench/bench_nodes.mjs" | tee "$TMP/nodes.out"
[ "${PIPESTATUS[0]}" = 0 ] || fail "bench_nodes.mjs: $(tail -n 5 "$TMP"/n?.err)"
line=$(grep '^RESULT ' "$TMP/nodes.out" | tail -n 1)
[ -n "$line" ] || fail "no RESULT"
field() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
echo "targets: forwarded_cmd_overhead_p99_ms < 5 (forwarded p99 minus the owner's, same run); failover_to_frame_ms <" \
    "lapse + 2000 = $((LAPSE + 2000)); lost = 0. cmds_per_s over 1, 2, 3 nodes: on $(nproc) cores shared by every" \
    "node, PostgreSQL, the broker, the camera and the browser, the figure shows the cost of forwarding, not scale-out."
echo "$line"
