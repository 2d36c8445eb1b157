#!/usr/bin/env bash
# vcam_direct.sh BINARY - igw-vcam (BINARY) alone against headless Chromium,
# driven by tests/media/vcam_direct.mjs through tests/media/lib.mjs.
#
# playwright-core (pinned) is installed once, only if missing, into
# IGW_PW_DIR (default: pw-node next to BINARY, i.e. under build/), and the
# browser is the system's /usr/bin/chromium (IGW_CHROMIUM to change).
#
# The run happens in namespaces of its own (unshare, as root): a network
# namespace with loopback plus a veth pair carrying 198.18.0.1 and a default
# route (Chromium gathers no candidates on loopback, nor without a route),
# so no packet can leave this host; a PID namespace (with its /proc, which
# LeakSanitizer reads) so that every process, Chromium included, dies with it.
# Exits non-zero on any failure; the .mjs prints "vcam_direct: N checks passed".
set -u
BIN=${1:?usage: vcam_direct.sh PATH/TO/igw-vcam}
HERE=$(cd "$(dirname "$0")" && pwd)
PW_VERSION=1.65.1
RUN_SECONDS=40
fail() { echo "vcam_direct.sh: FAIL: $*" >&2; exit 1; }

[ -x "$BIN" ] || fail "$BIN is not an executable"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are required (apt-get install nodejs npm)"
[ -x "${IGW_CHROMIUM:-/usr/bin/chromium}" ] || fail "no Chromium at ${IGW_CHROMIUM:-/usr/bin/chromium} (apt-get install chromium)"

IGW_PW_DIR=${IGW_PW_DIR:-$(dirname "$BIN")/pw-node}
if [ "$(node -p "try{require('$IGW_PW_DIR/node_modules/playwright-core/package.json').version}catch(e){''}" 2>/dev/null)" != "$PW_VERSION" ]; then
    mkdir -p "$IGW_PW_DIR" || fail "mkdir $IGW_PW_DIR"
    npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$IGW_PW_DIR" "playwright-core@$PW_VERSION" >&2 ||
        fail "npm install playwright-core@$PW_VERSION into $IGW_PW_DIR"
fi
export IGW_PW_DIR

TMP=$(mktemp -d /tmp/igw-vcamtest.XXXXXX) || fail "mktemp"
RUNNER=
cleanup() {
    [ -n "$RUNNER" ] && kill -9 "$RUNNER" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# For sanitizer builds of the camera: what GLib's constructors and
# fontconfig (clockoverlay's fonts) keep until exit is theirs, not ours.
# Full unwinding so that those frames are seen (GLib has no frame pointers).
printf 'leak:_dl_init\nleak:libfontconfig.so\n' >"$TMP/lsan.supp"
export LSAN_OPTIONS="suppressions=$TMP/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

unshare --net --pid --fork --mount-proc --kill-child true 2>/dev/null ||
    fail "cannot create network and PID namespaces (needs root, unshare and ip)"
SETUP='ip link set lo up &&
    ip link add igwv0 type veth peer name igwv1 &&
    ip addr add 198.18.0.1/24 dev igwv0 &&
    ip link set igwv0 up && ip link set igwv1 up &&
    ip route add default dev igwv0'
CMD="exec timeout -k 5 $RUN_SECONDS node '$HERE/vcam_direct.mjs' '$BIN'"
unshare --net --pid --fork --mount-proc --kill-child sh -c "$SETUP && $CMD" &
RUNNER=$!
wait "$RUNNER"
RC=$?
RUNNER=
[ "$RC" = 0 ] || fail "vcam_direct.mjs exited $RC"
