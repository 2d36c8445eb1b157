#!/usr/bin/env bash
# ai_test.sh IGWD IGWCTL VCAM PROC PICTURE - AI sessions and vision consents (issue 27,
# tests/igwd/ai_test.mjs) against real PostgreSQL, Redis and Mosquitto on
# loopback. First with Signaling disabled and no session at all: the
# consent ledger's get-one and revoke (they need no Signaling, no live
# owner and no model); only the signed-in user reaches its rows. Then with
# igw-vcam as the demo camera on the broker and Chromium as the
# application: the AI session (purpose aiVision), and translation in an IM
# talk call (the stand-in IM's call).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    IGWD=$(realpath "${1:?usage: ai_test.sh IGWD IGWCTL VCAM PROC PICTURE}")
    IGWCTL=$(realpath "${2:?usage: ai_test.sh IGWD IGWCTL VCAM PROC PICTURE}")
    VCAM=$(realpath "${3:?usage: ai_test.sh IGWD IGWCTL VCAM PROC PICTURE}")
    PROC=$(realpath "${4:?usage: ai_test.sh IGWD IGWCTL VCAM PROC PICTURE}")
    PICTURE=$(realpath "${5:?usage: ai_test.sh IGWD IGWCTL VCAM PROC PICTURE}")
    command -v node >/dev/null || { echo "ai_test.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "$IGWD")/pw-node}" || { echo "ai_test.sh: playwright-core" >&2; exit 1; }
    # In a network namespace of its own: Chromium's WebRTC sees only it.
    exec timeout -k 5 600 bash -c '. "$1/tests/media/lib.sh"; media_netns bash "$1/tests/igwd/ai_test.sh" --inside "$2" "$3" "$4" "$5" "$6"' \
        sh "$ROOT" "$IGWD" "$IGWCTL" "$VCAM" "$PROC" "$PICTURE"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4 PROC=$5 PICTURE=$6
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test ai "${AI_PG_PORT:-25520}" "${AI_REDIS_PORT:-63920}" "${AI_MQTT_PORT:-19020}"

# The sounds and pictures: questions and a sentence said by espeak-ng, two
# astronauts side by side (two faces).
espeak-ng -v en-us -w "$TMP/count.wav" "how many people are there" || fail "espeak-ng"
espeak-ng -v en-us -w "$TMP/sentence.wav" "hello, the house is big" || fail "espeak-ng"
printf '#JSGF V1.0;\ngrammar t;\npublic <s> = hello the house is big | the house is big | good morning;\n' >"$TMP/t.gram"
gst-launch-1.0 -q compositor name=m sink_1::xpos=512 ! videoconvert ! pngenc ! filesink location="$TMP/two.png" \
    filesrc location="$PICTURE" ! pngdec ! imagefreeze num-buffers=1 ! videoconvert ! m. \
    filesrc location="$PICTURE" ! pngdec ! imagefreeze num-buffers=1 ! videoconvert ! m. || fail "gst-launch: two.png"

run_part() { # PART: ai_test.mjs's part against the igwd running now
    if ! IGW_PART=$1 IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_PG_DSN=$IGW_PG_DSN IGW_NETNS_ADDR=$IGW_NETNS_ADDR \
        IGW_JWT_KEY_FILE=$IGW_VAR/jwt.key IGW_SOUNDS=$TMP IGW_PICTURE=$TMP/two.png node "$ROOT/tests/igwd/ai_test.mjs"; then
        grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
        fail "ai_test.mjs $1"
    fi
}

igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_NODE_ID=ai-node \
    IGW_SIGNALING_ENABLED=false IGW_LOG_LEVEL=${AI_LOG_LEVEL:-info}
run_part ledger
igw_stop
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_NODE_ID=ai-node \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-ai-test IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=${AI_LOG_LEVEL:-info} \
    IGW_PROCESSOR_BIN="$PROC" IGW_TRANSLATION_GRAMMAR="$TMP/t.gram" \
    IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" IGW_TALK_ENABLED=true IGW_IM_STANDIN=true
run_part session
run_part assist
run_part pattern
run_part translate
run_part talk
igw_stop
# A processor that holds its tickets until told (the protocol's client).
export TICKET_DIR=$TMP/tickets
mkdir -p "$TICKET_DIR" || fail "mkdir"
igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_NODE_ID=ai-node \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-ai-test IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=${AI_LOG_LEVEL:-info} \
    IGW_PROCESSOR_BIN="$ROOT/tests/igwd/ticket_proc.mjs" TICKET_DIR="$TICKET_DIR"
run_part ticket
igw_stop
if grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err"; then
    grep -A40 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2; fail "sanitizer report"
fi
echo "ai test: $checks checks passed (and the script's)"
