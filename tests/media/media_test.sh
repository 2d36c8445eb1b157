#!/usr/bin/env bash
# media_test.sh HOST VCAM - the media core with real peers (tests/media/media_test.mjs):
# igw-vcam publishes to igw-media-host (HOST, a sanitizer build), headless
# Chromium pages view it. Runs in network and PID namespaces of its own like
# vcam_direct.sh (loopback plus a veth carrying 198.18.0.1: Chromium gathers
# nothing on loopback alone); IGW_MEDIA_NETNS=0 runs in the host's namespaces.
# playwright-core is installed once into IGW_PW_DIR (see vcam_direct.sh).
set -u
HOST=${1:?usage: media_test.sh HOST VCAM}
VCAM=${2:?usage: media_test.sh HOST VCAM}
HERE=$(cd "$(dirname "$0")" && pwd)
PW_VERSION=1.65.1
RUN_SECONDS=120
fail() { echo "media_test.sh: FAIL: $*" >&2; exit 1; }
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
[ -x "$HOST" ] && [ -x "$VCAM" ] || fail "$HOST or $VCAM is not an executable"
HOST=$(abs "$HOST")
VCAM=$(abs "$VCAM")
command -v node >/dev/null || fail "node is required"

IGW_PW_DIR=${IGW_PW_DIR:-$(dirname "$HOST")/pw-node}
if [ "$(node -p "try{require('$IGW_PW_DIR/node_modules/playwright-core/package.json').version}catch(e){''}" 2>/dev/null)" != "$PW_VERSION" ]; then
    mkdir -p "$IGW_PW_DIR" || fail "mkdir $IGW_PW_DIR"
    npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$IGW_PW_DIR" "playwright-core@$PW_VERSION" >&2 ||
        fail "npm install playwright-core@$PW_VERSION into $IGW_PW_DIR"
fi
export IGW_PW_DIR

TMP=$(mktemp -d /tmp/igw-mediatest.XXXXXX) || fail "mktemp"
RUNNER=
cleanup() {
    [ -n "$RUNNER" ] && kill -9 "$RUNNER" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# What GLib, GStreamer and fontconfig keep until exit is theirs, not ours.
printf 'leak:_dl_init\nleak:libfontconfig.so\nleak:libglib-2.0.so\nleak:libgobject-2.0.so\nleak:libgio-2.0.so\n' >"$TMP/lsan.supp"
export LSAN_OPTIONS="suppressions=$TMP/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

CMD="exec timeout -k 5 $RUN_SECONDS node '$HERE/media_test.mjs' '$HOST' '$VCAM'"
if [ "${IGW_MEDIA_NETNS:-1}" = 0 ]; then
    sh -c "$CMD" &
else
    export IGW_MEDIA_ADDR=198.18.0.1
    SETUP='ip link set lo up &&
        ip link add igwv0 type veth peer name igwv1 &&
        ip addr add 198.18.0.1/24 dev igwv0 &&
        ip link set igwv0 up && ip link set igwv1 up &&
        ip route add default dev igwv0'
    unshare --net --pid --fork --kill-child --mount-proc sh -c "$SETUP && $CMD" &
fi
RUNNER=$!
wait "$RUNNER"
RC=$?
RUNNER=
[ "$RC" = 0 ] || fail "media_test.mjs exited $RC"
