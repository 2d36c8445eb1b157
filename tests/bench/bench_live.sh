#!/usr/bin/env bash
# bench_live.sh IGWD IGWCTL VCAM HOST VIEWERS_BIN - live view through igwd's
# public API (issue 15 §4; tests/bench/bench_live.mjs): open-to-first-frame
# over OPENS opens (Chromium viewers), VIEWERS viewers on one camera
# (igw-live-viewers) with igwd's CPU per forwarded packet, then the media
# library alone at the same number of viewers (bench_media.mjs IGW_ONLY=1 with
# HOST, an optimized igw-media-host) for the ratio. Everything runs in network
# and PID namespaces of its own (tests/media/lib.sh) with its own PostgreSQL
# (25404), Redis (63804) and Mosquitto (18904). A benchmark, not a test: it
# fails only when something does not work, never on speed.
# Settings: OPENS (50), WARM_OPENS (20: opens while another viewer holds the camera's
# leg up, printed beside; 0 = none), VIEWERS (100), MEASURE_SECONDS (10),
# WARMUP_SECONDS (3: every viewer receiving before the window). The last line is
#   RESULT open_to_frame_p50_ms=<n> open_to_frame_p99_ms=<n> viewers=<n> loss_pct=<n> cpu_vs_library=<ratio> revoke_to_end_ms=<n> revoke_vs_hangup=<ratio>
#          renegotiate_to_frame_p50_ms=<n> renegotiate_vs_open=<ratio> mute_to_silence_ms=<p99>
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    usage="usage: bench_live.sh IGWD IGWCTL VCAM HOST VIEWERS_BIN"
    args=()
    for i in 1 2 3 4 5; do args+=("$(realpath "${!i:?$usage}")") || exit 2; done
    command -v node >/dev/null || { echo "bench_live.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "${args[0]}")/pw-node}" || { echo "bench_live.sh: playwright-core" >&2; exit 1; }
    WS_NODE_DIR=${WS_NODE_DIR:-$(dirname "${args[0]}")/ws-node}
    if [ ! -d "$WS_NODE_DIR/node_modules/ws" ]; then
        npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$WS_NODE_DIR" ws@8.18.3 >&2 ||
            { echo "bench_live.sh: npm install ws" >&2; exit 1; }
    fi
    export WS_NODE_DIR
    exec timeout -k 5 900 bash -c '. "$1/tests/media/lib.sh"; shift; media_netns bash "$0" --inside "$@"' \
        "$ROOT/tests/bench/bench_live.sh" "$ROOT" "${args[@]}"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4 HOST=$5 LIVE_VIEWERS=$6
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test bench-live 25404 63804 18904
# One application holds every viewer; part 5 talks (the stand-in IM on
# Redis) and reads igwd's info lines (a gate's last packet forwarded).
# Every open cold (the camera invited anew), as before the legs lingered:
# an open within leg_linger_ms of the last viewer is the warm figure.
igw_start IGW_LEG_LINGER_MS=0 IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-bench-live IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=info \
    IGW_MAX_SESSIONS_PER_USER=0 IGW_TALK_ENABLED=true IGW_IM_STANDIN=true IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT"

echo "bench-live: igwd (-O2, no sanitizers), 2 workers, 1 media thread; OPENS=${OPENS:-50} WARM_OPENS=${WARM_OPENS:-20} VIEWERS=${VIEWERS:-100}" \
    "MEASURE_SECONDS=${MEASURE_SECONDS:-10}; the camera: igw-vcam on the broker"
IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGWD_PID=$PID LIVE_VIEWERS=$LIVE_VIEWERS IGW_PG_DSN=$IGW_PG_DSN \
    IGW_IGWD_LOG=$TMP/igwd.err \
    node "$ROOT/tests/bench/bench_live.mjs" | tee "$TMP/live.out"
[ "${PIPESTATUS[0]}" = 0 ] || fail "bench_live.mjs"
igw_stop

# The library alone, same viewers and window, igwd gone (bench-media's igw side).
echo "bench-live: the media library alone (make bench-media's igw measurement, ${VIEWERS:-100} viewers)"
VIEWERS=${VIEWERS:-100} IGW_ONLY=1 node "$ROOT/tests/bench/bench_media.mjs" "$HOST" | tee "$TMP/lib.out"
[ "${PIPESTATUS[0]}" = 0 ] || fail "bench_media.mjs IGW_ONLY=1"

# field FILE PREFIX KEY: KEY's last value on FILE's lines starting with PREFIX.
field() { grep "^$2 " "$1" | tr ' ' '\n' | sed -n "s/^$3=//p" | tail -n 1; }
p50=$(field "$TMP/live.out" LIVE open_to_frame_p50_ms)
p99=$(field "$TMP/live.out" LIVE open_to_frame_p99_ms)
viewers=$(field "$TMP/live.out" LIVE viewers)
loss=$(field "$TMP/live.out" LIVE loss_pct)
igwd_us=$(field "$TMP/live.out" LIVE cpu_us_per_pkt)
lib_us=$(field "$TMP/lib.out" RESULT cpu_us_per_pkt)
revoke=$(field "$TMP/live.out" LIVE revoke_to_end_p99_ms)
hangup=$(field "$TMP/live.out" LIVE hangup_to_end_p99_ms)
reneg=$(field "$TMP/live.out" LIVE renegotiate_to_frame_p50_ms)
mute99=$(field "$TMP/live.out" LIVE mute_to_silence_p99_ms)
[ -n "$p50" ] && [ -n "$p99" ] && [ -n "$viewers" ] && [ -n "$loss" ] && [ -n "$igwd_us" ] && [ -n "$lib_us" ] &&
    [ -n "$revoke" ] && [ -n "$hangup" ] && [ -n "$reneg" ] && [ -n "$mute99" ] ||
    fail "a figure is missing"
echo "open to frame, warm leg (WARM_OPENS, another viewer holds the camera up; -1 = not run):" \
    "p50 $(field "$TMP/live.out" LIVE warm_open_to_frame_p50_ms) ms, p99 $(field "$TMP/live.out" LIVE warm_open_to_frame_p99_ms) ms"
ratio=$(awk -v a="$igwd_us" -v b="$lib_us" 'BEGIN { printf "%.2f", (b > 0 ? a / b : -1) }')
echo "cpu_vs_library = igwd CPU per packet / library CPU per packet = $igwd_us / $lib_us = $ratio" \
    "(targets: p50 < 400 ms, p99 < 1000 ms, 100 viewers with no loss, cpu_vs_library <= 1.15)"
revoke_ratio=$(awk -v a="$revoke" -v b="$hangup" 'BEGIN { printf "%.2f", (b > 0 ? a / b : -1) }')
echo "revoke_to_end_ms: p99 $revoke ms from the change's commit to the ended event (target < 2000 ms);" \
    "revoke_vs_hangup = $revoke / $hangup = $revoke_ratio (the application's own interaction.end as the reference)"
reneg_ratio=$(awk -v a="$reneg" -v b="$p50" 'BEGIN { printf "%.2f", (b > 0 ? a / b : -1) }')
echo "renegotiate_to_frame_ms: p50 $reneg ms from the new generation's acceptance to the next decoded frame (target < 300);" \
    "renegotiate_vs_open = $reneg / $p50 = $reneg_ratio (a cold open as the reference); mute_to_silence_ms p99 $mute99 (target < 100)"
echo "RESULT open_to_frame_p50_ms=$p50 open_to_frame_p99_ms=$p99 viewers=$viewers loss_pct=$loss cpu_vs_library=$ratio" \
    "revoke_to_end_ms=$revoke revoke_vs_hangup=$revoke_ratio renegotiate_to_frame_p50_ms=$reneg renegotiate_vs_open=$reneg_ratio" \
    "mute_to_silence_ms=$mute99"
