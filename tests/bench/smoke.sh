#!/usr/bin/env bash
# smoke.sh - make bench-smoke: every `make bench-*` target of the Makefile,
# one after the other, in a tiny configuration (the knobs below: the same
# code paths, seconds each), so that a benchmark cannot rot unnoticed. Not a
# measurement: no figure is judged, there are no thresholds. A bench fails
# the smoke run when it exits non-zero or prints no RESULT line; the summary
# at the end lists each bench's time and RESULT line (its last one).
#
#   MAKE=make tests/bench/smoke.sh [BENCH...]      (make bench-smoke)
#
# BENCH... (decode, edge, ...) runs only those. Each bench runs as
# `make -o deps -o deps-bench bench-NAME` with its knobs in the environment
# (bench-smoke has installed the packages once, before). A bench-* target
# without an entry here fails the run: a new benchmark gets its tiny
# configuration in the same commit. Each bench starts its own services on
# its own ports and directories and stops them before it exits; a bench
# still running after SMOKE_TIMEOUT (300) seconds is killed and fails.
# Logs: $SMOKE_LOG_DIR (build/bench/smoke), one file per bench.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
MAKE=${MAKE:-make}
LOGS=${SMOKE_LOG_DIR:-$ROOT/build/bench/smoke}
TIMEOUT=${SMOKE_TIMEOUT:-300}
# The services' files in memory when there is a /dev/shm (fsync is free: a
# smoke run measures nothing; the code paths are the same).
SHM=/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && SHM=/dev/shm

# The tiny configuration of each bench (tests/bench/README.md lists the knobs).
declare -A KNOBS=(
    [decode]="BENCH_SECONDS=0.05"
    [edge]="BENCH_SECONDS=1 BENCH_CONNS=32 ROUNDS=1 WARMUP_SECONDS=1 BENCH_TMP=$SHM"
    [app]="RATE=200 BENCH_SECONDS=1 ROUNDS=1 CONNS=4 PUSH_RATE=100 PUSH_SECONDS=1 BARE_MAX_SECONDS=1 BENCH_TMP=$SHM"
    [srtp]="SRTP_PACKETS=20000"
    [media]="VIEWERS=1 MEASURE_SECONDS=1 WARMUP_SECONDS=1"
    [live]="OPENS=1 WARM_OPENS=1 VIEWERS=1 MEASURE_SECONDS=1 WARMUP_SECONDS=1 REVOKES=2 RENEGOTIATIONS=2 MUTES=2"
    [doorbell]="ENDPOINTS=3 RINGS=2 ACCEPTS=1 OPENS=1 RACES=2"
    [ai]="CREATES=5 REVOKES=2 TAKES=1 CAPTIONS=1"
    [nodes]="CMDS=10 CONC=2 LOAD_SECONDS=1"
    [talk]="RATE=200 BENCH_SECONDS=1 WARMUP_SECONDS=1 ROUNDS=1 CALLS=1 CYCLES=1 BENCH_TMP=$SHM"
    [recordings]="RATE=200 BENCH_SECONDS=1 WARMUP_SECONDS=1 ROUNDS=1 CONNS=4 SAMPLES=20 DEVICES=10 CAMERAS=10
                  SEGMENTS=100 OTHER_DEVICES=1 BENCH_PLAY_N=1 BENCH_LIVE_N=1 BENCH_MIN_RECORDINGS=1 BENCH_TMP=$SHM"
)

# Every bench-* target of the Makefile but this one, in the Makefile's order.
mapfile -t ALL < <(sed -n 's/^bench-\([a-z0-9-]*\):.*/\1/p' Makefile | grep -vx smoke)
[ "${#ALL[@]}" -gt 0 ] || { echo "bench-smoke: no bench-* target in the Makefile" >&2; exit 2; }
missing=()
for b in "${ALL[@]}"; do [ -n "${KNOBS[$b]+x}" ] || missing+=("bench-$b"); done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "bench-smoke: no tiny configuration for ${missing[*]} (tests/bench/smoke.sh KNOBS)" >&2
    exit 2
fi
for b in "${!KNOBS[@]}"; do
    printf '%s\n' "${ALL[@]}" | grep -qx "$b" || { echo "bench-smoke: KNOBS names bench-$b, which the Makefile lacks" >&2; exit 2; }
done
RUN=("${ALL[@]}")
if [ $# -gt 0 ]; then
    RUN=("$@")
    for b in "${RUN[@]}"; do [ -n "${KNOBS[$b]+x}" ] || { echo "bench-smoke: no bench-$b" >&2; exit 2; }; done
fi

# make -n (check-deps runs `make -n -B test`): say what would run, run nothing.
flags=${MAKEFLAGS:-}
flags=${flags%% *}
if [[ $flags != -* && $flags == *n* ]]; then
    # shellcheck disable=SC2086
    for b in "${RUN[@]}"; do echo "env" ${KNOBS[$b]} "timeout -k 10 $TIMEOUT $MAKE --no-print-directory -o deps -o deps-bench bench-$b"; done
    exit 0
fi

mkdir -p "$LOGS" || exit 2
names=() secs=() results=() failed=0
t_all=$(date +%s)
for b in "${RUN[@]}"; do
    # shellcheck disable=SC2086,SC2116 # the knobs are words, joined on one line
    knobs=$(echo ${KNOBS[$b]})
    echo "==== bench-smoke: bench-$b ($knobs)"
    t0=$(date +%s)
    rm -f "$LOGS/bench-$b.rc"
    (
        # timeout leads a process group of its own: once make is done, its
        # group empties when the bench's own clean-up (services down) has
        # run; after a time-out that may take a while, and what is left of
        # the group after 60 s is killed (the next bench starts clean).
        # shellcheck disable=SC2086
        env $knobs timeout -k 10 "$TIMEOUT" $MAKE --no-print-directory -o deps -o deps-bench "bench-$b" 2>&1 &
        group=$!
        wait "$group"
        echo $? >"$LOGS/bench-$b.rc"
        for _ in $(seq 300); do kill -0 -- "-$group" 2>/dev/null || exit 0; sleep 0.2; done
        echo "bench-smoke: bench-$b left processes behind (process group $group): killed" >&2
        kill -KILL -- "-$group" 2>/dev/null
    ) | tee "$LOGS/bench-$b.log"
    rc=$(cat "$LOGS/bench-$b.rc" 2>/dev/null || echo 2)
    t=$(($(date +%s) - t0))
    result=$(grep '^RESULT ' "$LOGS/bench-$b.log" | tail -n 1)
    status=ok
    if [ "$rc" != 0 ]; then
        status="FAILED (exit $rc$([ "$rc" = 124 ] && echo ": timed out after $TIMEOUT s"))"
    elif [ -z "$result" ]; then
        status="FAILED (no RESULT line)"
    fi
    [ "$status" = ok ] || failed=1
    echo "==== bench-smoke: bench-$b $status in $t s"
    names+=("bench-$b") secs+=("$t") results+=("$([ "$status" = ok ] && echo "$result" || echo "$status")")
done

echo
echo "bench-smoke: $(( $(date +%s) - t_all )) s (tiny configurations: the figures mean nothing; logs in $LOGS)"
for i in "${!names[@]}"; do
    printf '  %-18s %4s s  %s\n' "${names[$i]}" "${secs[$i]}" "${results[$i]}"
done
if [ "$failed" != 0 ]; then
    echo "bench-smoke: FAILED" >&2
    exit 1
fi
echo "bench-smoke: every bench ran and printed its RESULT line"
