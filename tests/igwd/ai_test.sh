#!/usr/bin/env bash
# ai_test.sh IGWD IGWCTL VCAM - AI sessions and vision consents (issue 27,
# tests/igwd/ai_test.mjs) against real PostgreSQL, Redis and Mosquitto on
# loopback. First with Signaling disabled and no session at all: the
# consent ledger's get-one and revoke (they need no Signaling, no live
# owner and no model); only the signed-in user reaches its rows.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
IGWD=$(realpath "${1:?usage: ai_test.sh IGWD IGWCTL VCAM}")
IGWCTL=$(realpath "${2:?usage: ai_test.sh IGWD IGWCTL VCAM}")
VCAM=$(realpath "${3:?usage: ai_test.sh IGWD IGWCTL VCAM}")
command -v node >/dev/null || { echo "ai_test.sh: node is required" >&2; exit 1; }
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test ai "${AI_PG_PORT:-25520}" "${AI_REDIS_PORT:-63920}" "${AI_MQTT_PORT:-19020}"

run_part() { # PART: ai_test.mjs's part against the igwd running now
    if ! IGW_PART=$1 IGW_BASE=http://127.0.0.1:$PORT IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_PG_DSN=$IGW_PG_DSN \
        IGW_JWT_KEY_FILE=$IGW_VAR/jwt.key node "$ROOT/tests/igwd/ai_test.mjs"; then
        grep -A60 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2
        fail "ai_test.mjs $1"
    fi
}

igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_NODE_ID=ai-node \
    IGW_SIGNALING_ENABLED=false IGW_LOG_LEVEL=${AI_LOG_LEVEL:-info}
run_part ledger
igw_stop
if grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err"; then
    grep -A40 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2; fail "sanitizer report"
fi
echo "ai test: $checks checks passed (and the script's)"
