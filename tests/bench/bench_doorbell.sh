#!/usr/bin/env bash
# bench_doorbell.sh IGWD IGWCTL VCAM - the door-bell through igwd's public API
# (issue 25; tests/bench/bench_doorbell.mjs): ring to the ringing event at
# ENDPOINTS endpoints (a plain uplink as the reference), accept to the first
# decoded frame in Chromium (a live view's open as the reference), and RACES
# rings accepted by three endpoints at once. Everything runs in network and
# PID namespaces of its own (tests/media/lib.sh) with its own PostgreSQL
# (25496), Redis (63896) and Mosquitto (18996). A benchmark, not a test: it
# fails only when something does not work, never on speed.
# Settings: ENDPOINTS (10), RINGS (50), ACCEPTS (20), OPENS (10), RACES (200).
# The last line is
#   RESULT ring_to_invite_p99_ms=<n> ring_vs_uplink=<ratio> accept_to_frame_p50_ms=<n> accept_vs_open=<ratio> races=<n> double_winners=<n>
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    usage="usage: bench_doorbell.sh IGWD IGWCTL VCAM"
    args=()
    for i in 1 2 3; do args+=("$(realpath "${!i:?$usage}")") || exit 2; done
    command -v node >/dev/null || { echo "bench_doorbell.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "${args[0]}")/pw-node}" || { echo "bench_doorbell.sh: playwright-core" >&2; exit 1; }
    WS_NODE_DIR=${WS_NODE_DIR:-$(dirname "${args[0]}")/ws-node}
    if [ ! -d "$WS_NODE_DIR/node_modules/ws" ]; then
        npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$WS_NODE_DIR" ws@8.18.3 >&2 ||
            { echo "bench_doorbell.sh: npm install ws" >&2; exit 1; }
    fi
    export WS_NODE_DIR
    exec timeout -k 5 900 bash -c '. "$1/tests/media/lib.sh"; shift; media_netns bash "$0" --inside "$@"' \
        "$ROOT/tests/bench/bench_doorbell.sh" "$ROOT" "${args[@]}"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test bench-doorbell 25496 63896 18996
# Every open cold (the camera invited anew), as before the legs lingered:
# an open within leg_linger_ms of the last viewer is the warm figure.
igw_start IGW_LEG_LINGER_MS=0 IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-bench-doorbell IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=warn \
    IGW_MAX_SESSIONS_PER_USER=0 # one user's endpoints hold every ringing session

echo "bench-doorbell: igwd (-O2, no sanitizers), 2 workers, 1 media thread; ENDPOINTS=${ENDPOINTS:-10} RINGS=${RINGS:-50}" \
    "ACCEPTS=${ACCEPTS:-20} OPENS=${OPENS:-10} RACES=${RACES:-200}; the camera: igw-vcam on the broker"
IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO node "$ROOT/tests/bench/bench_doorbell.mjs" | tee "$TMP/db.out"
[ "${PIPESTATUS[0]}" = 0 ] || fail "bench_doorbell.mjs"
igw_stop

# field KEY: KEY's last value on the DOORBELL lines.
field() { grep "^DOORBELL " "$TMP/db.out" | tr ' ' '\n' | sed -n "s/^$1=//p" | tail -n 1; }
ring=$(field ring_to_invite_p99_ms) up=$(field uplink_p99_ms) acc=$(field accept_to_frame_p50_ms)
open=$(field open_to_frame_p50_ms) races=$(field races) doubles=$(field double_winners)
[ -n "$ring" ] && [ -n "$up" ] && [ -n "$acc" ] && [ -n "$open" ] && [ -n "$races" ] && [ -n "$doubles" ] ||
    fail "a figure is missing"
ring_ratio=$(awk -v a="$ring" -v b="$up" 'BEGIN { printf "%.2f", (b > 0 ? a / b : -1) }')
acc_ratio=$(awk -v a="$acc" -v b="$open" 'BEGIN { printf "%.2f", (b > 0 ? a / b : -1) }')
echo "ring_vs_uplink = ring to the last ringing event p99 / a plain uplink's round trip p99 = $ring / $up = $ring_ratio;" \
    "accept_vs_open = accept to frame p50 / a live view's open to frame p50 = $acc / $open = $acc_ratio" \
    "(targets: ring_to_invite_p99_ms < 50, accept_to_frame_p50_ms < 400, double_winners = 0)"
echo "RESULT ring_to_invite_p99_ms=$ring ring_vs_uplink=$ring_ratio accept_to_frame_p50_ms=$acc accept_vs_open=$acc_ratio" \
    "races=$races double_winners=$doubles"
