#!/usr/bin/env bash
# talk_mute.sh IGWD IGWCTL VCAM - make bench-talk's media part (issue 16 §5;
# tests/bench/talk_mute.mjs): the time from a /talk/audio-access `set`
# (allowed=false) to the muted member's last audio packet forwarded to the
# camera, over CYCLES mute/unmute cycles: igw-vcam as the demo camera,
# igwd (-O2), a Chromium member publishing a tone. The packet's time is the
# media core's own (igwd logs it when the gate closes); the set's is the
# client's clock on the same machine. In network and PID namespaces of its
# own (tests/media/lib.sh) with its own PostgreSQL (25412), Redis (63812)
# and Mosquitto (18912). Prints
#   MUTE cycles=<n> mute_to_silence_p50_ms=<n> mute_to_silence_p99_ms=<n> mute_to_silence_max_ms=<n>
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    usage="usage: talk_mute.sh IGWD IGWCTL VCAM"
    args=()
    for i in 1 2 3; do args+=("$(realpath "${!i:?$usage}")") || exit 2; done
    command -v node >/dev/null || { echo "talk_mute.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "${args[0]}")/pw-node}" || { echo "talk_mute.sh: playwright-core" >&2; exit 1; }
    exec timeout -k 5 600 bash -c '. "$1/tests/media/lib.sh"; shift; media_netns bash "$0" --inside "$@"' \
        "$ROOT/tests/bench/talk_mute.sh" "$ROOT" "${args[@]}"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test bench-talk-mute 25412 63812 18912
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" \
    IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-bench-talk IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=info IGW_ACCESS_LOG=false \
    IGW_TALK_ENABLED=true IGW_IM_STANDIN=true
IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_IGWD_LOG=$TMP/igwd.err \
    node "$ROOT/tests/bench/talk_mute.mjs" || fail "talk_mute.mjs"
igw_stop
