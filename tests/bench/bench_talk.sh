#!/usr/bin/env bash
# bench_talk.sh IGWD TALKLOAD - the conference audio permission (issue 16):
# /talk/audio-access on a live call at a fixed offered rate (open loop,
# igw-talkload: latency from each request's due time), beside the reference
# measured in the same run on the same machine: call.lua's own audio_set by
# a bare EVALSHA (same keys, same arguments), what the Redis transaction
# costs without igw around it. See tests/bench/README.md.
# Own PostgreSQL, Redis and Mosquitto; the demo tenant; one igwd (the bench
# build, IGWD_THREADS workers); everything torn down. A call of the demo
# group is started by 1001 and joined by 1002 and 1003 through the stand-in's
# /api/v1/im-standin/ routes; each of its members is a target, with its own
# connection, strictly sequential: every set names the target's current
# revision and the opposite permission, so each one is a real change.
# Any request that is not the success it should be fails the run (exit 1).
# The last line is
#   RESULT set_p99_ms=<n> read_p99_ms=<n> set_vs_redis=<ratio> mute_to_silence_ms=<n>
# (mute_to_silence_ms: from a set allowed=false to the media room's last
# forwarded audio packet of that member, the median of talk_mute.sh's
# cycles; run when IGWCTL_BIN and VCAM_BIN are set, as make bench-talk does;
# NA otherwise.)
# The figures are the medians of ROUNDS rounds, each the three phases in a
# row (this shared machine's latency moves from minute to minute: compare
# within a round).
# Settings: RATE (1000), BENCH_SECONDS (10), WARMUP_SECONDS (2), ROUNDS (3), CALLS (4:
# live calls of the group, three targets each; a lane is strictly sequential
# (each set names its target's current revision), so with few lanes one slow
# answer delays the lane's next requests and the p99 measures that queue:
# 12 lanes at 1000/s is a lane every 12 ms, many calls as a platform sees
# them), IGWD_THREADS (2), BENCH_TMP (/tmp), ports BENCH_TALK_PG_PORT
# (25410), BENCH_TALK_REDIS_PORT (63810), BENCH_TALK_MQTT_PORT (18910).
set -euo pipefail
IGWD=$(realpath "${1:?usage: bench_talk.sh IGWD TALKLOAD}")
TALKLOAD=$(realpath "${2:?usage: bench_talk.sh IGWD TALKLOAD}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
RATE=${RATE:-1000} SECS=${BENCH_SECONDS:-10} WARM=${WARMUP_SECONDS:-2} CALLS=${CALLS:-4} ROUNDS=${ROUNDS:-3}
TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/igw-bench-talk.XXXXXX")
chmod 755 "$TMP"
export IGW_VAR=$TMP/var IGW_PG_PORT=${BENCH_TALK_PG_PORT:-25410} IGW_REDIS_PORT=${BENCH_TALK_REDIS_PORT:-63810} \
    IGW_MQTT_PORT=${BENCH_TALK_MQTT_PORT:-18910}
PID=
cleanup() { # never stops half way (set -e): a process that already exited is fine
    if [ -n "$PID" ]; then disown "$PID" 2>/dev/null || true; kill -KILL "$PID" 2>/dev/null || true; fi
    "$ROOT/src/ops/services.sh" down >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
die() { echo "bench_talk: $*" >&2; exit 2; }
"$ROOT/src/ops/services.sh" up >"$TMP/services.log" 2>&1 || { cat "$TMP/services.log" >&2; exit 2; }
# shellcheck disable=SC1091
. "$IGW_VAR/env"
IGW_BASE_URL=http://127.0.0.1:0 "$ROOT/src/ops/provision.sh" >"$TMP/provision.log" 2>&1 ||
    { cat "$TMP/provision.log" >&2; exit 2; }
# Heartbeats of 10 minutes (the maximum): the members stay live for the
# whole run without heartbeat traffic beside the measured requests.
env -i PATH="$PATH" IGW_LISTEN=127.0.0.1:0 IGW_THREADS="${IGWD_THREADS:-2}" IGW_PG_DSN="$IGW_PG_DSN" \
    IGW_ACCESS_LOG=false IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_MEDIA_THREADS=0 \
    IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" IGW_IM_HEARTBEAT_MS=600000 IGW_IM_STANDIN=true \
    IGW_IM_MAX_CALLS_PER_USER=1000 IGW_IM_MAX_CALLS_PER_GROUP=1000 \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-bench-talk "$IGWD" >"$TMP/out" 2>"$TMP/err" &
PID=$!
PORT=$(igw_port "$TMP/out" "$PID") || { echo "bench_talk: igwd did not start" >&2; cat "$TMP/err" >&2; exit 2; }
BASE=http://127.0.0.1:$PORT
DEMO=$IGW_VAR/demo.json
A=$(jq -r .user.token "$DEMO") B=$(jq -r .otherUser.token "$DEMO") C=$(jq -r .thirdUser.token "$DEMO")
GROUP=$(jq -r .group.groupId "$DEMO")
ENT=$(psql "$IGW_PG_DSN" -XAtqc "SELECT enterprise_id FROM im_groups WHERE group_id = '$GROUP'")
[ -n "$ENT" ] || die "the demo group $GROUP is not provisioned"
im() { # TOKEN PATH BODY: the answer's data, or the run stops
    local out
    out=$(curl -sf -X POST -H "Authorization: Bearer $1" -H 'content-type: application/json' --data-binary "$3" \
        "$BASE/api/v1/im-standin/$2") || die "$2 failed: $(curl -s -X POST -H "Authorization: Bearer $1" \
        -H 'content-type: application/json' --data-binary "$3" "$BASE/api/v1/im-standin/$2")"
    jq -ce .data <<<"$out" >/dev/null || die "$2: $out"
    jq -c .data <<<"$out"
}
TARGETS=()
for _ in $(seq "$CALLS"); do
    CALL=$(im "$A" calls/start "{\"groupId\":\"$GROUP\"}" | jq -r .callId)
    im "$B" calls/join "{\"callId\":\"$CALL\"}" >/dev/null
    im "$C" calls/join "{\"callId\":\"$CALL\"}" >/dev/null
    members=$(im "$A" calls/roster "{\"callId\":\"$CALL\"}" | jq -r '.members | map(.userId) | sort | join(",")')
    [ "$members" = 1001,1002,1003 ] || die "call $CALL: live members $members"
    for u in 1001 1002 1003; do TARGETS+=(-t "$CALL:$u"); done
done
INITIATOR=1001
# The script igwd runs (embedded from this file at build time), loaded as is.
SHA=$(redis-cli -h 127.0.0.1 -p "$IGW_REDIS_PORT" -x SCRIPT LOAD <"$ROOT/src/igwd/call/call.lua")
[ "$SHA" = "$(sha1sum "$ROOT/src/igwd/call/call.lua" | cut -d' ' -f1)" ] || die "SCRIPT LOAD answered $SHA"

J() { jq -r "$1" <<<"$2"; }
# CPU per program (% of one core), as bench_app.sh counts it.
cpu_snap() { awk '{ gsub(/[()]/, "", $2); print $1, $2, $14 + $15 }' /proc/[0-9]*/stat 2>/dev/null || true; }
cpu_report() { # BEFORE AFTER SECONDS
    awk -v s="$3" -v hz="$(getconf CLK_TCK)" 'NR == FNR { t[$1 " " $2] = $3; next }
        ($1 " " $2) in t { c[$2] += $3 - t[$1 " " $2] }
        END { for (k in c) if (c[k] * 100 / hz / s >= 1) printf "%s %.0f%%\n", k, c[k] * 100 / hz / s }' "$1" "$2" |
        sort -k2 -rn | head -5 | tr '\n' ' '
}
line() { # NAME JSON
    printf '%-48s p50 %7.3f ms  p99 %7.3f ms  max %7.2f ms  %7.0f ok/s  errors %s\n' "$1" \
        "$(J .p50_ms "$2")" "$(J .p99_ms "$2")" "$(J .max_ms "$2")" "$(J .per_s "$2")" "$(J .errors "$2")"
}
FAILED=0
phase() { # NAME igw-talkload ARGS...: prints the line; its JSON in $RES
    local name=$1 rc=0
    shift
    cpu_snap >"$TMP/cpu0"
    RES=$("$TALKLOAD" "$@" -r "$RATE" -s "$SECS" -W "$WARM" "${TARGETS[@]}" 2>"$TMP/load.err") || rc=$?
    cpu_snap >"$TMP/cpu1"
    [ -n "$RES" ] || { cat "$TMP/load.err" >&2; die "$name: igw-talkload failed (exit $rc)"; }
    line "$name" "$RES"
    echo "  CPU (% of one core of $(nproc), warm-up included): $(cpu_report "$TMP/cpu0" "$TMP/cpu1" "$((SECS + WARM))")"
    if [ "$rc" != 0 ]; then
        FAILED=1
        sed 's/^/  /' "$TMP/load.err" >&2
    fi
}
URL=$BASE/api/v1/im/interaction/talk/audio-access
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "/talk/audio-access at $RATE/s for $SECS s after $WARM s of warm-up (open loop: latency from each request's due time)," \
    "$((CALLS * 3)) targets on $CALLS live call(s), one connection each, strictly sequential; $ROUNDS rounds"
set_p99=() read_p99=() redis_p99=() set_p50=() read_p50=() redis_p50=() set_rate=() read_rate=() redis_rate=() SETS=0
for r in $(seq "$ROUNDS"); do
    phase "round $r: set (igwd, initiator)" -m http -u "$URL" -H "Authorization: Bearer $A" -o set
    set_p99+=("$(J .p99_ms "$RES")") set_p50+=("$(J .p50_ms "$RES")") set_rate+=("$(J .per_s "$RES")") SETS=$((SETS + $(J .ok "$RES")))
    phase "round $r: read (igwd, initiator)" -m http -u "$URL" -H "Authorization: Bearer $A" -o read
    read_p99+=("$(J .p99_ms "$RES")") read_p50+=("$(J .p50_ms "$RES")") read_rate+=("$(J .per_s "$RES")")
    phase "round $r: audio_set by bare EVALSHA (reference)" -m redis -R "127.0.0.1:$IGW_REDIS_PORT" -S "$SHA" \
        -E "$ENT" -I "$INITIATOR" -o set
    redis_p99+=("$(J .p99_ms "$RES")") redis_p50+=("$(J .p50_ms "$RES")") redis_rate+=("$(J .per_s "$RES")") SETS=$((SETS + $(J .ok "$RES")))
done
# The run's sets are all in Redis: every target's revision went up by one
# per set it was sent (igwd's and the reference's), nothing else wrote.
want=$SETS
got=0
for ((i = 1; i < ${#TARGETS[@]}; i += 2)); do
    t=${TARGETS[$i]}
    r=$(redis-cli -h 127.0.0.1 -p "$IGW_REDIS_PORT" HGET "igw:{call:${t%:*}}:mem" "r:${t##*:}")
    got=$((got + r - 1))
done
echo "revisions raised: $got (warm-up included; counted sets: $want)"
[ "$got" -ge "$want" ] || { echo "bench_talk: fewer revisions than successful sets" >&2; FAILED=1; }

# mute_to_silence_ms: a set allowed=false to the last audio packet the media
# room forwards for that member (tests/bench/talk_mute.sh: igw-vcam, a
# Chromium member, CYCLES mutes; the median; p99 and max printed beside).
MUTE=NA
if [ -n "${IGWCTL_BIN:-}" ] && [ -n "${VCAM_BIN:-}" ]; then
    "$ROOT/tests/bench/talk_mute.sh" "$IGWD" "$IGWCTL_BIN" "$VCAM_BIN" | tee "$TMP/mute.out" | grep -E '^(MUTE|talk_mute)' ||
        { echo "bench_talk: talk_mute.sh failed" >&2; FAILED=1; }
    MUTE=$(grep '^MUTE ' "$TMP/mute.out" | tr ' ' '\n' | sed -n 's/^mute_to_silence_p50_ms=//p' | tail -n 1)
    MUTE=${MUTE:-NA}
fi
awk -v s="$(median "${set_p99[@]}")" -v r="$(median "${redis_p99[@]}")" -v rd="$(median "${read_p99[@]}")" \
    -v sr="$(median "${set_rate[@]}")" -v rr="$(median "${read_rate[@]}")" -v er="$(median "${redis_rate[@]}")" \
    -v s5="$(median "${set_p50[@]}")" -v rd5="$(median "${read_p50[@]}")" -v r5="$(median "${redis_p50[@]}")" \
    -v m="$MUTE" 'BEGIN {
    printf "medians of the rounds: p50 set %.3f ms, read %.3f ms, bare EVALSHA %.3f ms (set / EVALSHA %.2f)\n", s5, rd5, r5, (r5 > 0 ? s5 / r5 : 0)
    printf "                       p99 set %.3f ms, read %.3f ms, bare EVALSHA %.3f ms\n", s, rd, r
    printf "achieved (medians): set %.0f/s, read %.0f/s, EVALSHA %.0f/s (offered '"$RATE"'/s)\n", sr, rr, er
    printf "RESULT set_p99_ms=%.2f read_p99_ms=%.2f set_vs_redis=%.2f mute_to_silence_ms=%s\n", s, rd, (r > 0 ? s / r : 0), m }'
if [ "$FAILED" != 0 ]; then
    echo "bench_talk: FAILED: requests that were not ok (above)" >&2
    exit 1
fi
