#!/usr/bin/env bash
# ws_test.sh BINARY - runs the igw_ws test server (tests/igwd/ws_test.c) on
# a free loopback port and drives it with tests/igwd/ws_client.mjs, a client
# built on the npm package `ws` (installed once, pinned, into WS_NODE_DIR,
# default: ws-node next to BINARY, i.e. under build/). Ping interval 500 ms,
# close timeout 1000 ms. Both sides count checks; the server exits after the
# client's /quit and must drain cleanly (and leak nothing under LSan).
# Exits non-zero on any failure.
set -u
BIN=${1:?usage: ws_test.sh BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
WS_VERSION=8.18.3
PING_MS=500
CLOSE_MS=1000
fail() { echo "ws_test.sh: FAIL: $*" >&2; exit 1; }
[ -x "$BIN" ] || fail "$BIN is not an executable"
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are required (apt-get install nodejs npm)"

WS_NODE_DIR=${WS_NODE_DIR:-$(cd "$(dirname "$BIN")" && pwd)/ws-node}
if [ "$(node -p "try{require('$WS_NODE_DIR/node_modules/ws/package.json').version}catch(e){''}" 2>/dev/null)" != "$WS_VERSION" ]; then
    mkdir -p "$WS_NODE_DIR" || fail "mkdir $WS_NODE_DIR"
    npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$WS_NODE_DIR" "ws@$WS_VERSION" >&2 ||
        fail "npm install ws@$WS_VERSION into $WS_NODE_DIR"
fi
export WS_MODULE_DIR=$WS_NODE_DIR

TMP=$(mktemp -d /tmp/igw-wstest.XXXXXX) || fail "mktemp"
SERVER=
cleanup() {
    [ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# For sanitizer builds: h2o 2.2.5 never frees its per-thread memory-pool
# recycle caches nor the multithread queue struct (fixed in later h2o).
export LSAN_OPTIONS="suppressions=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../lsan.supp"):print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

"$BIN" "$PING_MS" "$CLOSE_MS" >"$TMP/server.out" 2>"$TMP/server.err" &
SERVER=$!
PORT=
for _ in $(seq 100); do
    PORT=$(sed -n 's/^port \([0-9][0-9]*\)$/\1/p' "$TMP/server.out")
    [ -n "$PORT" ] && break
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.05
done
[ -n "$PORT" ] || { cat "$TMP/server.err" >&2; fail "the server did not start"; }

timeout 60 node "$HERE/ws_client.mjs" suite "127.0.0.1:$PORT" "$PING_MS" "$CLOSE_MS"
CLIENT_RC=$?

# The client's last step asked the server to quit; give it time to drain.
for _ in $(seq 100); do
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.05
done
if kill -0 "$SERVER" 2>/dev/null; then
    cat "$TMP/server.err" >&2
    fail "the server did not exit after /quit"
fi
wait "$SERVER"
SERVER_RC=$?
SERVER=
cat "$TMP/server.out" | grep -v '^port ' || true
if [ "$SERVER_RC" != 0 ] || [ -s "$TMP/server.err" ]; then
    cat "$TMP/server.err" >&2
    fail "server exited $SERVER_RC"
fi
[ "$CLIENT_RC" = 0 ] || fail "client exited $CLIENT_RC"
echo "ws_test.sh: passed"
