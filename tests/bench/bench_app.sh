#!/usr/bin/env bash
# bench_app.sh IGWD LOADGEN DEVICE - area B under load, beside two references
# measured in the same run on the same machine:
#  * the edge benchmark's no-database reply (/bench/bare): what HTTP and the
#    load generator cost alone;
#  * a one-row INSERT and COMMIT at the same rate (pgbench, own database):
#    the floor a durable acceptance cannot go below on this disk.
# Measured: acceptance latency at RATE commands/s (open loop, igw-loadgen,
# latency from each command's due time) and throughput (closed loop, CONNS
# connections); command-to-push latency (igw-loadgen -w: from each command's
# due time to its result's frame on the endpoint's WebSocket) with a real
# MQTT device answering (igw-benchdevice); pull-and-ack throughput
# (tests/bench/bench_app.mjs). See tests/bench/README.md.
# Own PostgreSQL, Redis and Mosquitto; demo tenant; everything torn down.
# The last line is
#   RESULT accept_p99_ms=<n> accepted_per_s=<n> push_p99_ms=<n> pull_ack_per_s=<n> accept_vs_floor=<ratio>
#          pg_cpu_us_per_cmd=<n>
# (accept_vs_floor: the acceptance p99 / the floor's p99, medians of the
# rounds; pg_cpu_us_per_cmd: PostgreSQL's CPU time while accepting / the
# commands accepted, median of the rounds: the disk's stalls move neither)
# Settings: RATE (1000), BENCH_SECONDS (5), CONNS (32), ROUNDS (3), IGWD_THREADS (2), IGWD_DB_CONNECTIONS (1),
# PUSH_RATE (500) and PUSH_SECONDS (4) of each push round, BARE_MAX_SECONDS (3:
# the no-database reply's closed loop), BENCH_TMP (/tmp: where the services'
# files go; /dev/shm makes every fsync free - not durable, a diagnostic of
# what igw costs apart from the disk).
# accept_p99_ms and push_p99_ms are the medians of the rounds' p99s.
# BENCH_PROFILE=1 adds, after each acceptance round, PostgreSQL's statements
# of that round by time (pg_stat_statements, loaded for the run).
set -euo pipefail
IGWD=$(realpath "${1:?usage: bench_app.sh IGWD LOADGEN DEVICE}")
LOADGEN=$(realpath "${2:?usage: bench_app.sh IGWD LOADGEN DEVICE}")
DEVICE=$(realpath "${3:?usage: bench_app.sh IGWD LOADGEN DEVICE}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
RATE=${RATE:-1000} SECS=${BENCH_SECONDS:-5} CONNS=${CONNS:-32} ROUNDS=${ROUNDS:-3} PROFILE=${BENCH_PROFILE:-0}
PUSH_RATE=${PUSH_RATE:-500} PUSH_SECS=${PUSH_SECONDS:-4} BARE_MAX_SECS=${BARE_MAX_SECONDS:-3}
TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/igw-bench-app.XXXXXX")
chmod 755 "$TMP"
export IGW_VAR=$TMP/var IGW_PG_PORT=25397 IGW_REDIS_PORT=63797 IGW_MQTT_PORT=18897
PID= DEV=
cleanup() { # never stops half way (set -e): a process that already exited is fine
    if [ -n "$DEV" ]; then disown "$DEV" 2>/dev/null || true; kill "$DEV" 2>/dev/null || true; fi
    if [ -n "$PID" ]; then disown "$PID" 2>/dev/null || true; kill -KILL "$PID" 2>/dev/null || true; fi
    "$ROOT/src/ops/services.sh" down >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
"$ROOT/src/ops/services.sh" up >"$TMP/services.log" 2>&1 || { cat "$TMP/services.log" >&2; exit 2; }
# shellcheck disable=SC1091
. "$IGW_VAR/env"
if [ "$PROFILE" = 1 ]; then # the library loads at server start
    psql "$IGW_PG_DSN" -qc 'ALTER SYSTEM SET shared_preload_libraries = pg_stat_statements'
    "$ROOT/src/ops/services.sh" down >>"$TMP/services.log" 2>&1
    "$ROOT/src/ops/services.sh" up >>"$TMP/services.log" 2>&1 || { cat "$TMP/services.log" >&2; exit 2; }
    psql "$IGW_PG_DSN" -qc 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements'
fi
profile() { # reset | report: the statements since the reset, by time
    [ "$PROFILE" = 1 ] || return 0
    if [ "$1" = reset ]; then psql "$IGW_PG_DSN" -qtAc 'SELECT pg_stat_statements_reset()' >/dev/null; return; fi
    psql "$IGW_PG_DSN" -P footer=off -c "SELECT calls, round((total_exec_time / calls)::numeric, 3) AS ms_per_call,
        rows, shared_blks_hit / calls AS blocks_per_call, left(regexp_replace(query, '\s+', ' ', 'g'), 70) AS statement
        FROM pg_stat_statements WHERE calls > 1 ORDER BY total_exec_time DESC LIMIT 5"
}
IGW_BASE_URL=http://127.0.0.1:0 "$ROOT/src/ops/provision.sh" >/dev/null
env -i PATH="$PATH" IGW_LISTEN=127.0.0.1:0 IGW_THREADS="${IGWD_THREADS:-2}" IGW_DB_CONNECTIONS="${IGWD_DB_CONNECTIONS:-1}" IGW_PG_DSN="$IGW_PG_DSN" \
    IGW_ACCESS_LOG=false IGW_BENCH_ROUTES=true IGW_JWT_KEY_FILE="$IGW_VAR/jwt.key" IGW_COMMAND_TIMEOUT_MS=1000 \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-bench-app "$IGWD" >"$TMP/out" 2>"$TMP/err" &
PID=$!
PORT=$(igw_port "$TMP/out" "$PID") || { echo "bench_app: igwd did not start" >&2; cat "$TMP/err" >&2; exit 2; }
for _ in $(seq 50); do grep -q "mqtt: connected to" "$TMP/err" && break; sleep 0.1; done

TOKEN=$(jq -r .user.token "$IGW_VAR/demo.json")
BASE=http://127.0.0.1:$PORT/api/v1/im/interaction
J() { jq -r "$1" <<<"$2"; }
# CPU per program (% of one core) between two snapshots of every process's
# utime+stime, counted per pid seen in both (a kernel thread that renamed
# itself or a process that came or went is not charged its whole past).
# A process that exits between the glob and the read is skipped (awk goes
# on past a file it cannot open, then exits 2).
cpu_snap() { awk '{ gsub(/[()]/, "", $2); print $1, $2, $14 + $15 }' /proc/[0-9]*/stat 2>/dev/null || true; }
cpu_report() { # BEFORE AFTER SECONDS
    awk -v s="$3" -v hz="$(getconf CLK_TCK)" 'NR == FNR { t[$1 " " $2] = $3; next }
        ($1 " " $2) in t { c[$2] += $3 - t[$1 " " $2] }
        END { for (k in c) if (c[k] * 100 / hz / s >= 1) printf "%s %.0f%%\n", k, c[k] * 100 / hz / s }' "$1" "$2" |
        sort -k2 -rn | head -6 | tr '\n' ' '
}
pg_us() { # BEFORE AFTER: the CPU time of the postgres processes between two cpu_snaps, microseconds
    awk -v hz="$(getconf CLK_TCK)" 'NR == FNR { t[$1 " " $2] = $3; next }
        ($1 " " $2) in t && $2 == "postgres" { c += $3 - t[$1 " " $2] } END { printf "%.0f", c * 1000000 / hz }' "$1" "$2"
}
line() { # NAME JSON: one line of a loadgen result
    printf '%-44s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  %8.0f ok/s  errors %s\n' "$1" \
        "$(J .p50_ms "$2")" "$(J .p99_ms "$2")" "$(J .max_ms "$2")" "$(J .per_s "$2")" "$(J .errors "$2")"
}

# Reference 1: the no-database reply, same binary, same load generator.
AUTH=$(jq -r .device.authorization "$IGW_VAR/demo.json")
bare() { "$LOADGEN" -u "http://127.0.0.1:$PORT/bench/bare" -H "Authorization: $AUTH" -H "Content-Type: application/json" \
    -b '{"method":"report","msgToken":"b{seq}","params":{"brightness":1}}' -e '"code":200' "$@"; }
bare_rate=$(bare -r "$RATE" -s "$SECS")
bare_max=$(bare -r 0 -s "$BARE_MAX_SECS" -c 64)

# Reference 2: a one-row durable INSERT at the same rate, in a database of
# its own (the ledger untouched), two clients like igwd's two workers.
psql "$IGW_PG_DSN" -qc 'CREATE DATABASE bench_floor'
FLOOR_DSN="${IGW_PG_DSN/dbname=igw/dbname=bench_floor}"
psql "$FLOOR_DSN" -qc 'CREATE TABLE floor (id bigserial PRIMARY KEY, v text NOT NULL)'
echo "INSERT INTO floor (v) VALUES ('accepted');" >"$TMP/floor.sql"
floor() { # ROUND: pgbench's latencies as a loadgen-like JSON line
    mkdir -p "$TMP/floor$1"
    (cd "$TMP/floor$1" && "${PGBIN:-/usr/lib/postgresql/15/bin}/pgbench" -n -R "$RATE" -T "$SECS" -c 2 -j 1 -l \
        -f "$TMP/floor.sql" "$FLOOR_DSN" >/dev/null 2>&1)
    cat "$TMP/floor$1"/pgbench_log.* | awk '{print $3 / 1000}' | sort -g | awk '{a[NR] = $1} END {
        printf "{\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,\"per_s\":%.1f,\"errors\":0}",
            a[int(NR * .5)], a[int(NR * .99)], a[NR], NR / '"$SECS"' }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# Acceptance: device.propertyControl commands, durable, each with its own
# msgToken; ROUNDS rounds, each right after a floor round (this machine's
# disk latency moves from minute to minute: compare within a round).
register() { curl -sf -X POST -H "Authorization: Bearer $TOKEN" "$BASE/endpoints/register" | jq -r .data.endpointId; }
dev() { jq -r ".device.$1" "$IGW_VAR/demo.json"; }
cmd() {
    "$LOADGEN" -u "$BASE/commands" -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" -e '"accepted":true' \
        -b "{\"endpointId\":\"$EP\",\"command\":{\"msgToken\":\"$1-{seq}\",\"method\":\"device.propertyControl\",\"target\":{\"productID\":\"$(dev productID)\",\"deviceName\":\"$(dev deviceName)\"},\"params\":{\"properties\":{\"brightness\":42}}}}" \
        "${@:2}"
}
# Warm-up: the rounds start from tables that hold history and have been
# analyzed, as a running system's are (autovacuum analyzes a table within a
# minute of it growing), not from empty ones. A prepared statement keeps its
# generic plan until a table it reads is analyzed, and one planned on empty
# tables reads them whole (sequential scans, hashed subplans) as they grow:
# from a fresh database each result of the first minute took 3-4 times as
# long in PostgreSQL. Its own endpoint: pull-and-ack drains EP's.
timeouts_settled() { # until every command has its result (60 s at most)
    for _ in $(seq 600); do
        [ "$(psql "$IGW_PG_DSN" -tAc 'SELECT count(*) FROM device_commands WHERE outcome IS NULL')" = 0 ] && return
        sleep 0.1
    done
    echo "bench_app: warning: commands still without a result after 60 s; measuring on" >&2
}
EP=$(register)
cmd w -r "$RATE" -s "$SECS" >/dev/null
timeouts_settled
psql "$IGW_PG_DSN" -qc 'VACUUM ANALYZE'
EP=$(register)
echo "area B at $RATE/s, $ROUNDS rounds of ${SECS} s (open loop: latency from each request's due time), after a warm-up of $((RATE * SECS)) commands"
line "no-database reply (reference)" "$bare_rate"
acc_p99=() floor_p99=() pg_per_cmd=()
for r in $(seq "$ROUNDS"); do
    fl=$(floor "$r")
    profile reset
    cpu_snap >"$TMP/cpu0"
    acc=$(cmd "r$r" -r "$RATE" -s "$SECS")
    cpu_snap >"$TMP/cpu1"
    line "round $r: one-row INSERT + COMMIT (floor)" "$fl"
    line "round $r: /commands accepted (durable)" "$acc"
    echo "  CPU (% of one core of $(nproc)) while accepting: $(cpu_report "$TMP/cpu0" "$TMP/cpu1" "$SECS")"
    pg_per_cmd+=("$(awk -v us="$(pg_us "$TMP/cpu0" "$TMP/cpu1")" -v n="$(J .per_s "$acc")" -v s="$SECS" \
        'BEGIN { printf "%.0f", (n > 0 ? us / (n * s) : -1) }')")
    echo "  PostgreSQL CPU per accepted command: ${pg_per_cmd[-1]} us"
    profile report
    acc_p99+=("$(J .p99_ms "$acc")") floor_p99+=("$(J .p99_ms "$fl")")
done
ACC_P99=$(median "${acc_p99[@]}") FLOOR_P99=$(median "${floor_p99[@]}") PG_PER_CMD=$(median "${pg_per_cmd[@]}")
acc_max=$(cmd t -r 0 -s "$SECS" -c "$CONNS")
echo "throughput: /commands $(J .per_s "$acc_max" | xargs printf '%.0f') accepted/s ($CONNS connections), no-database reply $(J .per_s "$bare_max" | xargs printf '%.0f')/s (64)"
awk -v a="$ACC_P99" -v f="$FLOOR_P99" -v b="$(J .p99_ms "$bare_rate")" \
    -v t="$(J .per_s "$acc_max")" -v bt="$(J .per_s "$bare_max")" 'BEGIN {
    printf "medians of the rounds: acceptance p99 %.2f ms, floor p99 %.2f ms (ratio %.2f); / no-database p99 %.1f; accepted/s / no-database %.3f\n", a, f, a / f, a / b, t / bt }'

# The acceptance phase's commands (no device answers them) time out into
# results over the next seconds; push is measured after that storm, on its
# own, with the device connected: ROUNDS rounds of PUSH_SECONDS at PUSH_RATE
# (2000 commands at 500/s), each on a new endpoint.
timeouts_settled # the throughput phase's
mkfifo "$TMP/dev.in"
"$DEVICE" -p "$IGW_MQTT_PORT" -t "$(dev productID)" -n "$(dev deviceName)" -u "$(dev username)" -P "$(dev password)" \
    <"$TMP/dev.in" >"$TMP/dev.out" 2>&1 &
DEV=$!
exec 7>"$TMP/dev.in" # the device runs while this end is open
for _ in $(seq 100); do grep -q ready "$TMP/dev.out" && break; sleep 0.05; done
grep -q ready "$TMP/dev.out" || { echo "bench_app: the device did not subscribe" >&2; cat "$TMP/dev.out" >&2; exit 2; }
EP_ACC=$EP
push_p99=()
for r in $(seq "$ROUNDS"); do
    EP=$(register)
    push=$(cmd "p$r" -r "$PUSH_RATE" -s "$PUSH_SECS" -c 8 -w "/api/v1/im/interaction/events/ws/$EP")
    line "round $r: command -> device -> result pushed" "$push"
    push_p99+=("$(J .p99_ms "$push")")
done
PUSH_P99=$(median "${push_p99[@]}")
echo "median of the rounds: push p99 $PUSH_P99 ms"
exec 7>&-

pull=$(BASE=$BASE TOKEN=$TOKEN EP=$EP_ACC node "$ROOT/tests/bench/bench_app.mjs" | sed -n 's/^JSON //p')
echo "pull-and-ack: $(J .pull_ack_per_s "$pull" | xargs printf '%.0f') deliveries/s over $(J .n "$pull")"
printf 'RESULT accept_p99_ms=%.2f accepted_per_s=%.0f push_p99_ms=%.2f pull_ack_per_s=%.0f accept_vs_floor=%.2f pg_cpu_us_per_cmd=%.0f\n' \
    "$ACC_P99" "$(J .per_s "$acc_max")" "$PUSH_P99" "$(J .pull_ack_per_s "$pull")" \
    "$(awk -v a="$ACC_P99" -v f="$FLOOR_P99" 'BEGIN { printf "%.2f", (f > 0 ? a / f : -1) }')" "$PG_PER_CMD"
