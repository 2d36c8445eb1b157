#!/usr/bin/env bash
# bench_playback.sh IGWD IGWCTL VCAM - the playback phase of make
# bench-recordings (issue 17 §5; tests/bench/bench_playback.mjs): recordPlayback
# sessions of igw-vcam's recordings in Chromium through igwd's public API,
# play_to_frame and open_to_frame, beside the same viewer on a live view of
# the same camera (resume_to_frame, open_to_frame) in the same run. In
# network and PID namespaces of its own (tests/media/lib.sh: Chromium gathers
# nothing on loopback) with its own PostgreSQL, Redis and Mosquitto (25420,
# 63820, 18920 inside the namespace); igwd with MQTT, Redis and one media
# thread. Fails (exit 1) when a playback or a live view does not work, never
# on speed. bench_recordings.sh calls it; it runs alone too.
# Settings: BENCH_PLAY_N (20 playbacks), BENCH_LIVE_N (as many live views),
# BENCH_SEGMENT_MS (4000: the camera's segments), BENCH_MIN_RECORDINGS (3: the
# segments in the catalog before the first session). The last line is
#   PLAYBACK play_to_frame_p50_ms=<n> ... (bench_playback.mjs)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    usage="usage: bench_playback.sh IGWD IGWCTL VCAM"
    args=()
    for i in 1 2 3; do args+=("$(realpath "${!i:?$usage}")") || exit 2; done
    command -v node >/dev/null || { echo "bench_playback.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    # npm needs the registry: before the namespace, which has no network.
    media_playwright "${IGW_PW_DIR:-$(dirname "${args[0]}")/pw-node}" || { echo "bench_playback.sh: playwright-core" >&2; exit 1; }
    WS_NODE_DIR=${WS_NODE_DIR:-$(dirname "${args[0]}")/ws-node}
    if [ ! -d "$WS_NODE_DIR/node_modules/ws" ]; then
        npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$WS_NODE_DIR" ws@8.18.3 >&2 ||
            { echo "bench_playback.sh: npm install ws" >&2; exit 1; }
    fi
    export WS_NODE_DIR
    exec timeout -k 5 600 bash -c '. "$1/tests/media/lib.sh"; shift; media_netns bash "$0" --inside "$@"' \
        "$ROOT/tests/bench/bench_playback.sh" "$ROOT" "${args[@]}"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test bench-playback 25420 63820 18920
# Every open cold (the camera invited anew), as before the legs lingered:
# an open within leg_linger_ms of the last viewer is the warm figure.
igw_start IGW_LEG_LINGER_MS=0 IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_NODE_ID=bench-playback \
    IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-bench-playback IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=warn
mkdir -p "$TMP/rec"
echo "playback: igwd (-O2, no sanitizers), 2 workers, 1 media thread; the camera: igw-vcam on the broker recording" \
    "segments of ${BENCH_SEGMENT_MS:-4000} ms; ${BENCH_PLAY_N:-20} playbacks, ${BENCH_LIVE_N:-${BENCH_PLAY_N:-20}} live views"
IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_REC_DIR=$TMP/rec PLAY_N=${BENCH_PLAY_N:-20} \
    LIVE_N=${BENCH_LIVE_N:-${BENCH_PLAY_N:-20}} SEGMENT_MS=${BENCH_SEGMENT_MS:-4000} \
    MIN_RECORDINGS=${BENCH_MIN_RECORDINGS:-3} node "$ROOT/tests/bench/bench_playback.mjs" || fail "bench_playback.mjs"
CASE="every session ended with its reason"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE state <> 'ended' OR reason IS NULL")" = 0 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, purpose, state, reason FROM sessions WHERE state <> 'ended' OR reason IS NULL")"
igw_stop
