#!/usr/bin/env bash
# services_test.sh - src/ops/services.sh against real PostgreSQL, Redis and
# Mosquitto in a throwaway IGW_VAR on free ports: up (twice), the database
# and migrations, redis ping, mosquitto auth, migrate (a no-op), down (ports
# closed, processes gone), up again on the same data. Always runs `down` and
# removes its directory. Exit 0 when every check passed, 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
svc=$root/src/ops/services.sh
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # DESCRIPTION CMD...
    local what=$1
    shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port_closed() { ! port_open "$1"; }
lacks() { ! grep -Eq "$1" "$2"; } # REGEX FILE
refused() { ! "$@" 2>/dev/null; }
quiet() { "$@" >/dev/null 2>&1; }
exits_3() { local rc=0; "$@" >/dev/null 2>&1 || rc=$?; [ "$rc" -eq 3 ]; }

# Three distinct free ports, probed from a random base.
ports=()
p=$((20000 + RANDOM % 12000)) # below the ephemeral range (32768+)
while [ ${#ports[@]} -lt 3 ]; do
    port_open "$p" || ports+=("$p")
    p=$((p + 1))
done
export IGW_PG_PORT=${ports[0]} IGW_REDIS_PORT=${ports[1]} IGW_MQTT_PORT=${ports[2]}
export IGW_DB=igw_test

tmp=$(mktemp -d "${TMPDIR:-/tmp}/igw-ops.XXXXXX")
chmod 0755 "$tmp" # the postgres user must traverse it when run as root
export IGW_VAR=$tmp/var
cleanup() {
    local rc=$?
    "$svc" down >/dev/null 2>&1 || true
    rm -rf "$tmp" "/tmp/igw-$(printf %s "$IGW_VAR" | sha256sum | cut -c1-12)"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start=$SECONDS
echo "services_test: IGW_VAR=$IGW_VAR ports pg=$IGW_PG_PORT redis=$IGW_REDIS_PORT mqtt=$IGW_MQTT_PORT"

if ! "$svc" up >"$tmp/up1.out" 2>&1; then
    cat "$tmp/up1.out"
    bad "first up"
    echo "services_test: $pass passed, $fail failed"
    exit 1
fi
ok "first up ($((SECONDS - start))s)"
check "first up applied 0001_init.sql" grep -q 'applied 0001_init.sql' "$tmp/up1.out"

if "$svc" up >"$tmp/up2.out" 2>&1; then ok "second up"; else cat "$tmp/up2.out"; bad "second up"; fi
check "second up starts nothing and applies nothing" \
    lacks 'starting|initdb|creating|migrate: applied' "$tmp/up2.out"

check "env file exists" test -s "$IGW_VAR/env"
# shellcheck disable=SC1091
. "$IGW_VAR/env"

sql() { psql -X -tA -d "$IGW_PG_DSN" -c "$1" 2>&1; }
n=$(sql 'SELECT count(*) FROM schema_migrations' || true)
check "schema_migrations has rows ($n)" test "${n:-0}" -ge 1 2>/dev/null
check "table devices exists" test "$(sql "SELECT to_regclass('public.devices') IS NOT NULL")" = t
check "services.sh psql passes arguments" \
    test "$("$svc" psql -X -tA -c 'SELECT current_database()' 2>&1)" = "$IGW_DB"

check "redis ping over TCP" test "$(redis-cli -h 127.0.0.1 -p "$IGW_REDIS_PORT" ping 2>&1)" = PONG
check "redis ping over the unix socket" test "$(redis-cli -s "$IGW_REDIS_SOCKET" ping 2>&1)" = PONG

check "mosquitto_pub as igwd succeeds" \
    mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -u "$IGW_MQTT_USER" -P "$IGW_MQTT_PASSWORD" -t igw/test -m hi
check "anonymous mosquitto_pub is refused" \
    refused mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -t igw/test -m hi
check "a wrong password is refused" \
    refused mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -u igwd -P wrong -t igw/test -m hi

out=$("$svc" migrate 2>&1) || bad "migrate again: exit status"
echo "$out" >"$tmp/migrate.out"
check "migrate again applies nothing" lacks 'migrate: applied' "$tmp/migrate.out"
check "migrate again says so" grep -q 'nothing to apply' "$tmp/migrate.out"

check "status: all running" quiet "$svc" status

pids=("$(head -n 1 "$IGW_VAR/pg/postmaster.pid")" "$(cat "$IGW_VAR/redis/redis.pid")" \
    "$(cat "$IGW_VAR/mosquitto/mosquitto.pid")")
if "$svc" down >"$tmp/down.out" 2>&1; then ok "down"; else cat "$tmp/down.out"; bad "down"; fi
for port in "$IGW_PG_PORT" "$IGW_REDIS_PORT" "$IGW_MQTT_PORT"; do
    check "port $port closed after down" port_closed "$port"
done
gone() { # PID: no such process, or a zombie waiting for PID 1
    local s
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    s=${s##*) }
    [ "${s%% *}" = Z ]
}
for pid in "${pids[@]}"; do
    check "pid $pid gone after down" gone "$pid"
done
check "status after down reports stopped (exit 3)" exits_3 "$svc" status
check "down again is a no-op" quiet "$svc" down

if "$svc" up >"$tmp/up3.out" 2>&1; then ok "up after down"; else cat "$tmp/up3.out"; bad "up after down"; fi
check "up after down reuses the data (no initdb, nothing applied)" \
    lacks 'initdb|creating|migrate: applied' "$tmp/up3.out"
n=$(sql 'SELECT count(*) FROM schema_migrations' || true)
check "schema_migrations still there ($n)" test "${n:-0}" -ge 1 2>/dev/null

echo "services_test: $pass passed, $fail failed in $((SECONDS - start))s"
[ "$fail" -eq 0 ]
