#!/usr/bin/env bash
# bench_ai.sh IGWD IGWCTL VCAM PROC - AI sessions (issue 27;
# tests/bench/bench_ai.mjs): a vision consent's creation, the revoke to the
# last frame, a processor's frame take, speech to translated caption; with
# igw-vcam, Chromium and igw-proc (behind tests/bench/ai_tap.mjs, which
# times the protocol's lines). Network and PID namespaces of its own, its
# own PostgreSQL (25497), Redis (63897) and Mosquitto (18997). A benchmark,
# not a test: it fails only when something does not work, never on speed.
# Settings: CREATES (200), REVOKES (20), TAKES (30), CAPTIONS (5).
# The last line is
#   RESULT consent_create_p99_ms=<n> revoke_to_last_frame_ms=<p99> speech_to_caption_p50_ms=<n> frame_take_p99_ms=<n>
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    usage="usage: bench_ai.sh IGWD IGWCTL VCAM PROC"
    args=()
    for i in 1 2 3 4; do args+=("$(realpath "${!i:?$usage}")") || exit 2; done
    command -v node >/dev/null || { echo "bench_ai.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "${args[0]}")/pw-node}" || { echo "bench_ai.sh: playwright-core" >&2; exit 1; }
    exec timeout -k 5 900 bash -c '. "$1/tests/media/lib.sh"; shift; media_netns bash "$0" --inside "$@"' \
        "$ROOT/tests/bench/bench_ai.sh" "$ROOT" "${args[@]}"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4 PROC=$5
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test bench-ai 25497 63897 18997
espeak-ng -v en-us -w "$TMP/count.wav" "how many people are there" || fail "espeak-ng"
espeak-ng -v en-us -w "$TMP/sentence.wav" "hello, the house is big" || fail "espeak-ng"
printf '#JSGF V1.0;\ngrammar t;\npublic <s> = hello the house is big | the house is big | good morning;\n' >"$TMP/t.gram"
export BENCH_PROC_REAL=$PROC BENCH_TAP_LOG=$TMP/tap.jsonl
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-bench-ai IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=warn \
    IGW_PROCESSOR_BIN="$ROOT/tests/bench/ai_tap.mjs" IGW_TRANSLATION_GRAMMAR="$TMP/t.gram" \
    BENCH_PROC_REAL="$PROC" BENCH_TAP_LOG="$TMP/tap.jsonl" IGW_MAX_SESSIONS_PER_USER=0

echo "bench-ai: igwd (-O2, no sanitizers), 2 workers, 1 media thread; CREATES=${CREATES:-200} REVOKES=${REVOKES:-20}" \
    "TAKES=${TAKES:-30} CAPTIONS=${CAPTIONS:-5}; igw-vcam on the broker, Chromium, igw-proc"
IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_SOUNDS=$TMP IGW_NETNS_ADDR=$IGW_NETNS_ADDR \
    node "$ROOT/tests/bench/bench_ai.mjs" | tee "$TMP/ai.out"
[ "${PIPESTATUS[0]}" = 0 ] || fail "bench_ai.mjs"
igw_stop

field() { grep "^AI " "$TMP/ai.out" | tr ' ' '\n' | sed -n "s/^$1=//p" | tail -n 1; }
create=$(field consent_create_p99_ms) revoke=$(field revoke_to_last_frame_p99_ms) caption=$(field speech_to_caption_p50_ms)
take=$(field frame_take_p99_ms)
[ -n "$create" ] && [ -n "$revoke" ] && [ -n "$caption" ] && [ -n "$take" ] || fail "a figure is missing"
echo "(targets: consent_create_p99_ms < 20, revoke_to_last_frame_ms p99 < 200, speech_to_caption_p50_ms < 2000," \
    "frame_take_p99_ms < 10)"
echo "RESULT consent_create_p99_ms=$create revoke_to_last_frame_ms=$revoke speech_to_caption_p50_ms=$caption frame_take_p99_ms=$take"
