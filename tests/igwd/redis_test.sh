#!/usr/bin/env bash
# redis_test.sh BINARY - runs the igw_redis test binary (tests/igwd/redis_test.c)
# against a throwaway redis-server on 127.0.0.1:63797 (and a unix socket),
# in the foreground of this script's background, without persistence and
# with DEBUG allowed for local clients (the test's DEBUG SLEEP). The binary
# stops and restarts the server itself through IGW_REDISTEST_STOP /
# IGW_REDISTEST_START. The server and its directory are always removed on
# exit. Exits non-zero on any failure.
set -u
BIN=${1:?usage: redis_test.sh BINARY}
PORT=${IGW_REDISTEST_PORT:-63797}
fail() { echo "redis_test.sh: FAIL: $*" >&2; [ -f "${TMP:-}/redis.log" ] && tail -n 20 "$TMP/redis.log" >&2; exit 1; }
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || fail "no redis-server/redis-cli (apt-get install redis-server)"
[ -x "$BIN" ] || fail "$BIN is not an executable"
redis-cli -p "$PORT" ping >/dev/null 2>&1 && fail "something already answers on port $PORT"

TMP=$(mktemp -d /tmp/igw-redistest.XXXXXX) || fail "mktemp"
SOCK="$TMP/redis.sock"
cleanup() {
    if [ -f "$TMP/redis.pid" ]; then
        pid=$(cat "$TMP/redis.pid")
        kill "$pid" 2>/dev/null
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -9 "$pid" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Starts redis-server in the background (its pid in redis.pid) and waits
# until it answers. Also run by the test binary, through system().
cat >"$TMP/start.sh" <<EOF
#!/bin/sh
redis-server --port $PORT --bind 127.0.0.1 --unixsocket $SOCK --save '' --appendonly no \\
    --daemonize no --enable-debug-command local --dir $TMP >>$TMP/redis.log 2>&1 </dev/null &
echo \$! >$TMP/redis.pid
i=0
until redis-cli -p $PORT ping >/dev/null 2>&1; do
    i=\$((i + 1)); [ \$i -gt 100 ] && exit 1
    sleep 0.05
done
EOF
# Stops it and waits until the process is gone.
cat >"$TMP/stop.sh" <<EOF
#!/bin/sh
pid=\$(cat $TMP/redis.pid)
redis-cli -p $PORT shutdown nosave >/dev/null 2>&1
i=0
while kill -0 \$pid 2>/dev/null; do
    i=\$((i + 1)); [ \$i -gt 100 ] && exit 1
    sleep 0.05
done
rm -f $TMP/redis.pid
EOF
chmod +x "$TMP/start.sh" "$TMP/stop.sh"
"$TMP/start.sh" || fail "redis-server did not start on port $PORT"

# For sanitizer builds: h2o 2.2.5 never frees its per-thread memory-pool
# recycle caches nor the multithread queue struct (fixed in later h2o).
export LSAN_OPTIONS="suppressions=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../lsan.supp"):print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export IGW_REDISTEST_STOP="$TMP/stop.sh"
export IGW_REDISTEST_START="$TMP/start.sh"

"$BIN" "$PORT" "$SOCK" || fail "redis_test exited $?"
echo "redis_test.sh: passed"
