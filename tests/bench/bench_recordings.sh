#!/usr/bin/env bash
# bench_recordings.sh IGWD RECLOAD RECSQL LOADGEN IGWCTL VCAM - recordings
# (issue 17, section 5), the catalog, then playback. The catalog: /recordings/query over a catalog of a million rows at a fixed
# offered rate (open loop, igw-recload: latency from each request's due
# time), beside the reference measured in the same run on the same machine:
# the statement igwd prepares for it (printed by RECSQL from
# src/igwd/catalog/recordings.c itself), EXPLAIN ANALYZEd in PostgreSQL with
# the same random parameters. See tests/bench/README.md.
# Where a slow answer's time went, per round: igw-loadgen (LOADGEN) on
# igwd's no-database reply (/bench/bare) at the same rate (HTTP, the
# client and this machine without the catalog), the answers over SLOW_MS
# and how many 100 ms slots they fall in (a stall or spread out), and
# PostgreSQL's executions of the statement over SLOW_MS in the same
# seconds (log_min_duration_statement).
# Own PostgreSQL, Redis and Mosquitto; the demo tenant; the catalog of
# tests/bench/recordings_gen.sql; one igwd (the bench build, IGWD_THREADS
# workers); everything torn down. Any answer that is not a well-formed 200
# fails the run (exit 1), and so does a plan that reads the catalog by a
# sequential scan or without the index range.
# Playback (tests/bench/bench_playback.sh, in a network namespace of its own
# with its own services, after the catalog's are stopped): BENCH_PLAY_N
# recordPlayback sessions of igw-vcam's recordings in Chromium through the
# public API, play to first frame and open to first frame, beside the same
# viewer on live views of the same camera (a paused video track resumed to
# its first frame, open to first frame). A playback or live view that does
# not work fails the run (exit 1).
# The run is in phases, each appending its figures to the RESULT line:
#   catalog   query_p99_ms=<n> query_vs_sql=<ratio>
#   playback  play_to_frame_p50_ms=<n> play_vs_live=<ratio> open_to_frame_p50_ms=<n> open_vs_live=<ratio>
# Settings: RATE (1000), BENCH_SECONDS (10), WARMUP_SECONDS (2), ROUNDS (3),
# CONNS (32), SLOW_MS (2), SAMPLES (200: parameter sets EXPLAIN ANALYZEd per round),
# DEVICES (100), CAMERAS (10 per device), SEGMENTS (1000 per camera),
# OTHER_DEVICES (10, enterprise 2's), NARROW (20: % of windows of 1-15 min),
# IGWD_THREADS (2), BENCH_TMP (/tmp), ports BENCH_REC_IGWD_PORT (25416),
# BENCH_REC_PG_PORT (63816), BENCH_REC_REDIS_PORT (18916),
# BENCH_REC_MQTT_PORT (18917); the playback phase's: BENCH_PLAY_N (20; 0: no
# playback phase), BENCH_LIVE_N (BENCH_PLAY_N), BENCH_SEGMENT_MS (4000),
# BENCH_MIN_RECORDINGS (3).
set -euo pipefail
usage="usage: bench_recordings.sh IGWD RECLOAD RECSQL LOADGEN IGWCTL VCAM"
IGWD=$(realpath "${1:?$usage}")
RECLOAD=$(realpath "${2:?$usage}")
RECSQL=$(realpath "${3:?$usage}")
LOADGEN=$(realpath "${4:?$usage}")
IGWCTL=$(realpath "${5:?$usage}")
VCAM=$(realpath "${6:?$usage}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
RATE=${RATE:-1000} SECS=${BENCH_SECONDS:-10} WARM=${WARMUP_SECONDS:-2} ROUNDS=${ROUNDS:-3} CONNS=${CONNS:-32}
SAMPLES=${SAMPLES:-200} DEVICES=${DEVICES:-100} CAMERAS=${CAMERAS:-10} SEGMENTS=${SEGMENTS:-1000}
OTHER_DEVICES=${OTHER_DEVICES:-10} NARROW=${NARROW:-20} SLOW_MS=${SLOW_MS:-2}
TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/igw-bench-rec.XXXXXX")
chmod 755 "$TMP"
export IGW_VAR=$TMP/var IGW_PG_PORT=${BENCH_REC_PG_PORT:-63816} IGW_REDIS_PORT=${BENCH_REC_REDIS_PORT:-18916} \
    IGW_MQTT_PORT=${BENCH_REC_MQTT_PORT:-18917}
IGWD_PORT=${BENCH_REC_IGWD_PORT:-25416}
PID=
cleanup() { # never stops half way (set -e): a process that already exited is fine
    if [ -n "$PID" ]; then disown "$PID" 2>/dev/null || true; kill -KILL "$PID" 2>/dev/null || true; fi
    "$ROOT/src/ops/services.sh" down >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
die() { echo "bench_recordings: $*" >&2; exit 2; }
"$ROOT/src/ops/services.sh" up >"$TMP/services.log" 2>&1 || { cat "$TMP/services.log" >&2; exit 2; }
# shellcheck disable=SC1091
. "$IGW_VAR/env"
IGW_BASE_URL=http://127.0.0.1:$IGWD_PORT "$ROOT/src/ops/provision.sh" >"$TMP/provision.log" 2>&1 ||
    { cat "$TMP/provision.log" >&2; exit 2; }
sql() { psql "$IGW_PG_DSN" -XAtq -v ON_ERROR_STOP=1 "$@"; }
J() { jq -r "$1" <<<"$2"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
RESULT=() # name=value, each phase appends its own

# ---- the catalog ------------------------------------------------------------------------
echo "catalog: $DEVICES devices x $CAMERAS cameras x $SEGMENTS segments of 60 s for the bench user (1001)," \
    "$OTHER_DEVICES x $CAMERAS x $SEGMENTS for enterprise 2"
t0=$(date +%s.%N)
sql -v devices="$DEVICES" -v cameras="$CAMERAS" -v segments="$SEGMENTS" -v other_devices="$OTHER_DEVICES" \
    -f "$ROOT/tests/bench/recordings_gen.sql" >"$TMP/gen.out" || { cat "$TMP/gen.out" >&2; die "recordings_gen.sql failed"; }
t1=$(date +%s.%N)
ROWS=$(sql -c "SELECT count(*) FROM recordings")
[ "$ROWS" = $(((DEVICES + OTHER_DEVICES) * CAMERAS * SEGMENTS)) ] || die "the catalog has $ROWS rows"
echo "  filled in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s" \
    "(INSERT $(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$TMP/gen.out" | head -1) ms, then ANALYZE): $ROWS rows"
sql -F ' ' -c "SELECT 'table ' || pg_size_pretty(pg_table_size('recordings')) || ', indexes '
                      || pg_size_pretty(pg_indexes_size('recordings')) || ':'
               UNION ALL
               SELECT '    ' || indexrelid::regclass || ' ' || pg_size_pretty(pg_relation_size(indexrelid))
               FROM pg_index WHERE indrelid = 'recordings'::regclass" | sed 's/^/  /'
# Each of the bench user's cameras with its first and last start: what the
# load client draws from.
sql -F ' ' -c "SELECT product_id, device_name, camera_id, min(start_time_ms), max(start_time_ms) FROM recordings
               WHERE product_id = 'benchcam01' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3" >"$TMP/targets"
[ "$(wc -l <"$TMP/targets")" = $((DEVICES * CAMERAS)) ] || die "targets: $(wc -l <"$TMP/targets") cameras"

# Executions slower than SLOW_MS go to PostgreSQL's log (igwd's sessions
# start after the reload): PostgreSQL's share of the slow answers.
sql -c "ALTER SYSTEM SET log_min_duration_statement = '${SLOW_MS}ms'" -c "SELECT pg_reload_conf()" >/dev/null
PGLOG=$IGW_VAR/log/postgres.log
[ -f "$PGLOG" ] || die "no PostgreSQL log at $PGLOG"

# ---- igwd, the bench user's endpoint ---------------------------------------------------------
env -i PATH="$PATH" IGW_LISTEN="127.0.0.1:$IGWD_PORT" IGW_THREADS="${IGWD_THREADS:-2}" IGW_PG_DSN="$IGW_PG_DSN" \
    IGW_ACCESS_LOG=false IGW_BENCH_ROUTES=true IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_MEDIA_THREADS=0 \
    "$IGWD" >"$TMP/out" 2>"$TMP/err" &
PID=$!
PORT=$(igw_port "$TMP/out" "$PID") || { echo "bench_recordings: igwd did not start" >&2; cat "$TMP/err" >&2; exit 2; }
BASE=http://127.0.0.1:$PORT
TOKEN=$(jq -r .user.token "$IGW_VAR/demo.json")
post() { curl -s -X POST -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' --data-binary "$2" "$BASE$1"; }
EP=$(post /api/v1/im/interaction/endpoints/register '' | jq -r .data.endpointId)
[ -n "$EP" ] && [ "$EP" != null ] || die "cannot register an endpoint"
URL=$BASE/api/v1/im/interaction/recordings/query
# Rights matter: the bench user reads a granted device, not enterprise 2's.
rq() { # DEVICE: the answer to a 24 h window of its camera cam-0 ending now
    local now
    now=$(($(date +%s) * 1000))
    post /api/v1/im/interaction/recordings/query "{\"endpointId\":\"$EP\",\"target\":{\"productID\":\"${2:-benchcam01}\",\"deviceName\":\"$1\"},\"cameraId\":\"cam-0\",\"startTimeMs\":$((now - 86400000)),\"endTimeMs\":$now,\"limit\":32}"
}
[ "$(rq bcam-009 | jq -c '[.code, (.data.list | length), .data.hasMore]')" = '[200,32,true]' ] ||
    die "a granted device's catalog: $(rq bcam-009)"
[ "$(rq ocam-000 benchother01 | jq -c .code)" = 100403 ] || die "enterprise 2's device: $(rq ocam-000 benchother01)"

# ---- the reference: the statement igwd prepares, EXPLAIN ANALYZEd --------------------------
STMT=$("$RECSQL" | head -n -1)
[ "$("$RECSQL" | tail -n 1)" = 9 ] || die "igw-recordings-sql: the statement does not take the 9 parameters this script sends"
# sql_ref SEED PLANFILE: SAMPLES parameter sets of the load with SEED, each
# EXECUTEd under EXPLAIN (ANALYZE, TIMING ON) in one session that PREPAREd
# the statement as igwd does (its plan cache behaves as igwd's); prints
# "planning execution" ms per set, writes every plan to PLANFILE.
sql_ref() {
    "$RECLOAD" -f "$TMP/targets" -S "$1" -N "$NARROW" -p "$SAMPLES" >"$TMP/params" || die "igw-recload -p failed"
    {
        echo "PREPARE igw_recordings_query AS $STMT;"
        while read -r p d c s e l; do
            echo "EXPLAIN (ANALYZE, TIMING ON) EXECUTE igw_recordings_query(1, 1001, '$EP', '$p', '$d', '$c', $s, $e, $l);"
        done <"$TMP/params"
    } >"$TMP/ref.sql"
    sql -f "$TMP/ref.sql" >"$2" || die "the SQL reference failed: $(tail -n 5 "$2")"
    awk '/^Planning Time:/ { p = $3 } /^Execution Time:/ { print p + 0, $3; p = 0 }' "$2"
}
# check_plans PLANFILE: every plan reads the camera's window through the
# catalog's index (a range on start_time_ms), none scans the catalog.
check_plans() {
    local n
    n=$(grep -c '^Execution Time:' "$1") || true
    [ "$n" = "$SAMPLES" ] || die "the SQL reference ran $n of $SAMPLES statements"
    if grep -q 'Seq Scan on recordings' "$1"; then
        echo "bench_recordings: FAILED: a plan reads the catalog by a sequential scan:" >&2
        grep -m1 -B30 'Seq Scan on recordings' "$1" >&2
        exit 1
    fi
    n=$(grep -c 'Index Scan using recordings_product_id_device_name_camera_id_start_time_ms_idx on recordings' "$1") || true
    local r
    r=$(grep -Ec 'Index Cond: .*start_time_ms[):a-z]* >= .*start_time_ms[):a-z]* < ' "$1") || true
    if [ "$n" != "$SAMPLES" ] || [ "$r" -lt "$SAMPLES" ]; then
        echo "bench_recordings: FAILED: $n of $SAMPLES plans use the catalog index, $r with the window's range:" >&2
        awk '/^Execution Time:/ { exit } { print }' "$1" >&2
        exit 1
    fi
}
pct() { # P FILE-OF-NUMBERS: the P-th percentile (as igw-recload counts it)
    sort -g "$2" | awk -v p="$1" '{ a[NR] = $1 } END { i = int(NR * p) + 1; if (i > NR) i = NR; printf "%.3f", a[i] }'
}

# CPU per program (% of one core), as bench_app.sh counts it.
cpu_snap() { awk '{ gsub(/[()]/, "", $2); print $1, $2, $14 + $15 }' /proc/[0-9]*/stat 2>/dev/null || true; }
cpu_report() { # BEFORE AFTER SECONDS
    awk -v s="$3" -v hz="$(getconf CLK_TCK)" 'NR == FNR { t[$1 " " $2] = $3; next }
        ($1 " " $2) in t { c[$2] += $3 - t[$1 " " $2] }
        END { for (k in c) if (c[k] * 100 / hz / s >= 1) printf "%s %.0f%%\n", k, c[k] * 100 / hz / s }' "$1" "$2" |
        sort -k2 -rn | head -5 | tr '\n' ' '
}

echo "/recordings/query at $RATE/s for $SECS s after $WARM s of warm-up (open loop), limit 32, random cameras of" \
    "the bench user's $((DEVICES * CAMERAS)), 24 h windows ($NARROW % of 1-15 min); $ROUNDS rounds," \
    "each beside $SAMPLES of its parameter sets EXPLAIN ANALYZEd"
DEV_AUTH=$(jq -r .device.authorization "$IGW_VAR/demo.json")
# slow LOGFILE: "<answers over SLOW_MS> in <n> 100 ms slots" of an igw-*load -l file
slow() { awk -v t="$SLOW_MS" '$2 > t { n++; s[int($1 / 100)] = 1 } END { k = 0; for (x in s) k++; printf "%d in %d 100 ms slots", n, k }' "$1"; }
FAILED=0
b_p99=() q_p99=() q_p50=() s_p99=() s_p50=() rates=()
for r in $(seq "$ROUNDS"); do
    seed=$((1000 + r))
    cpu_snap >"$TMP/cpu0"
    rc=0
    log0=$(stat -c %s "$PGLOG")
    RES=$("$RECLOAD" -u "$URL" -H "Authorization: Bearer $TOKEN" -e "$EP" -f "$TMP/targets" -S "$seed" -N "$NARROW" \
        -r "$RATE" -s "$SECS" -W "$WARM" -c "$CONNS" -l "$TMP/lat.$r" 2>"$TMP/load.err") || rc=$?
    cpu_snap >"$TMP/cpu1"
    pg_slow=$(tail -c +"$((log0 + 1))" "$PGLOG" | grep -c 'duration: .* execute igw_recordings_query') || true
    [ -n "$RES" ] || { cat "$TMP/load.err" >&2; die "round $r: igw-recload failed (exit $rc)"; }
    if [ "$rc" != 0 ]; then
        FAILED=1
        sed 's/^/  /' "$TMP/load.err" >&2
    fi
    ok=$(J .ok "$RES")
    printf 'round %s: igwd  p50 %7.3f ms  p99 %7.3f ms  max %7.2f ms  %5.0f ok/s  errors %s  (rows/answer %.1f, empty %s, hasMore %s)\n' \
        "$r" "$(J .p50_ms "$RES")" "$(J .p99_ms "$RES")" "$(J .max_ms "$RES")" "$(J .per_s "$RES")" "$(J .errors "$RES")" \
        "$(awk -v a="$(J .rows "$RES")" -v b="$ok" 'BEGIN { print b ? a / b : 0 }')" "$(J .empty "$RES")" "$(J .has_more "$RES")"
    echo "  CPU (% of one core of $(nproc), warm-up included): $(cpu_report "$TMP/cpu0" "$TMP/cpu1" "$((SECS + WARM))")"
    echo "  answers over $SLOW_MS ms: $(slow "$TMP/lat.$r"); PostgreSQL executions over $SLOW_MS ms (warm-up included): $pg_slow"
    BARE=$("$LOADGEN" -u "$BASE/bench/bare" -H "Authorization: $DEV_AUTH" -H "Content-Type: application/json" \
        -b '{"method":"report","msgToken":"b{seq}","params":{"brightness":1}}' -e '"code":200' -r "$RATE" -s "$SECS" \
        -c "$CONNS" -l "$TMP/bare.$r") || die "igw-loadgen failed"
    [ "$(J .errors "$BARE")" = 0 ] || die "round $r: the no-database reply had errors: $BARE"
    printf 'round %s: bare  p50 %7.3f ms  p99 %7.3f ms  max %7.2f ms  %5.0f ok/s  (no-database reply; over %s ms: %s)\n' \
        "$r" "$(J .p50_ms "$BARE")" "$(J .p99_ms "$BARE")" "$(J .max_ms "$BARE")" "$(J .per_s "$BARE")" "$SLOW_MS" \
        "$(slow "$TMP/bare.$r")"
    b_p99+=("$(J .p99_ms "$BARE")")
    # Answers with rows must be the rule: otherwise the windows miss the catalog.
    [ "$(J .empty "$RES")" -le $((ok / 2)) ] || { echo "bench_recordings: round $r: most answers were empty" >&2; FAILED=1; }
    q_p99+=("$(J .p99_ms "$RES")") q_p50+=("$(J .p50_ms "$RES")") rates+=("$(J .per_s "$RES")")

    sql_ref "$seed" "$TMP/plans.$r" >"$TMP/times.$r"
    check_plans "$TMP/plans.$r"
    cut -d' ' -f2 "$TMP/times.$r" >"$TMP/exec.$r"
    cut -d' ' -f1 "$TMP/times.$r" >"$TMP/plan.$r"
    s_p50+=("$(pct 0.5 "$TMP/exec.$r")") s_p99+=("$(pct 0.99 "$TMP/exec.$r")")
    printf 'round %s: SQL   p50 %7.3f ms  p99 %7.3f ms  (Execution Time of %s EXPLAIN ANALYZE EXECUTE; planning p50 %.3f ms)\n' \
        "$r" "${s_p50[-1]}" "${s_p99[-1]}" "$SAMPLES" "$(pct 0.5 "$TMP/plan.$r")"
done
echo "one plan (the last of round $ROUNDS's reference, the statement's plan once its cache has settled):"
awk '/^Execution Time:/ { n++ } n == '"$((SAMPLES - 1))"' && !/^Execution Time:/ { print "  " $0 }' "$TMP/plans.$ROUNDS" |
    sed '/^  Execution Time/d'
QP99=$(median "${q_p99[@]}") SP99=$(median "${s_p99[@]}")
awk -v q5="$(median "${q_p50[@]}")" -v s5="$(median "${s_p50[@]}")" -v q="$QP99" -v s="$SP99" \
    -v rt="$(median "${rates[@]}")" -v b="$(median "${b_p99[@]}")" 'BEGIN {
    printf "medians of the rounds: p50 igwd %.3f ms, SQL %.3f ms; p99 igwd %.3f ms, SQL %.3f ms, no-database reply %.3f ms\n", q5, s5, q, s, b
    printf "achieved (median): %.0f/s (offered '"$RATE"'/s)\n", rt }'
RESULT+=("query_p99_ms=$(awk -v q="$QP99" 'BEGIN { printf "%.2f", q }')"
    "query_vs_sql=$(awk -v q="$QP99" -v s="$SP99" 'BEGIN { printf "%.2f", (s > 0 ? q / s : 0) }')")

# ---- playback ------------------------------------------------------------------------------
# The catalog's igwd and services go first: the phase has the machine to itself.
PLAY_FAILED=0
if [ "${BENCH_PLAY_N:-20}" != 0 ]; then
    disown "$PID" 2>/dev/null || true
    kill -KILL "$PID" 2>/dev/null || true
    PID=
    "$ROOT/src/ops/services.sh" down >/dev/null 2>&1 || true
    # pipefail: the script's status unless tee failed too.
    "$ROOT/tests/bench/bench_playback.sh" "$IGWD" "$IGWCTL" "$VCAM" | tee "$TMP/playback.out" || PLAY_FAILED=1
    # field KEY: KEY's value on the PLAYBACK line.
    field() { sed -n 's/^PLAYBACK //p' "$TMP/playback.out" | tr ' ' '\n' | sed -n "s/^$1=//p" | tail -n 1; }
    ptf=$(field play_to_frame_p50_ms) otf=$(field open_to_frame_p50_ms)
    lrf=$(field live_resume_to_frame_p50_ms) lof=$(field live_open_to_frame_p50_ms)
    if [ "$PLAY_FAILED" = 0 ] && [ -n "$ptf" ] && [ -n "$otf" ] && [ -n "$lrf" ] && [ -n "$lof" ]; then
        ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : -1) }'; }
        echo "play_vs_live = play_to_frame p50 / live resume_to_frame p50 = $ptf / $lrf = $(ratio "$ptf" "$lrf");" \
            "open_vs_live = playback open_to_frame p50 / live open_to_frame p50 = $otf / $lof = $(ratio "$otf" "$lof")" \
            "(target: play_to_frame_p50_ms < 300)"
        RESULT+=("play_to_frame_p50_ms=$ptf" "play_vs_live=$(ratio "$ptf" "$lrf")"
            "open_to_frame_p50_ms=$otf" "open_vs_live=$(ratio "$otf" "$lof")")
    else
        PLAY_FAILED=1
    fi
fi

echo "RESULT ${RESULT[*]}"
if [ "$FAILED" != 0 ]; then
    echo "bench_recordings: FAILED: answers that were not ok (above)" >&2
    exit 1
fi
if [ "$PLAY_FAILED" != 0 ]; then
    echo "bench_recordings: FAILED: the playback phase (above)" >&2
    exit 1
fi
