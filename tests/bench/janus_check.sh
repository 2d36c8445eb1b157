#!/usr/bin/env bash
# janus_check.sh - proves the benchmark's Janus setup with a real browser.
# In namespaces of its own (media_netns in tests/media/lib.sh), starts Janus 1.1.2 through janus/start.sh on free ports, feeds its
# mountpoint 1 with the benchmark's GStreamer RTP feed (H264 pt 96 + Opus
# pt 111) and runs janus_check.mjs: JANUS_CHECK_VIEWERS (default 2) headless
# Chromium viewers must decode video and receive audio within 10 s; Janus's
# CPU ticks per second while they watch are printed. Needs root, janus,
# gstreamer1.0-plugins-{good,bad,ugly}, chromium, node and npm; installs
# playwright-core (pinned) into PW_NODE_DIR (default build/bench/janus-pw)
# if missing. Everything it started dies with it. Exits non-zero on failure.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
fail() { echo "janus_check.sh: FAIL: $*" >&2; exit 1; }

if [ "${1:-}" != --in-netns ]; then
    for c in janus gst-launch-1.0 node npm unshare ip curl; do
        command -v "$c" >/dev/null || fail "$c is required"
    done
    [ -x "${IGW_CHROMIUM:-/usr/bin/chromium}" ] || fail "chromium is required (apt-get install chromium)"
    # npm needs the registry: install before entering the namespace.
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${PW_NODE_DIR:-$ROOT/build/bench/janus-pw}" || fail "playwright-core"
    media_netns "$0" --in-netns
    exit
fi

. "$HERE/janus/start.sh" || fail "cannot source janus/start.sh"
TMP=$(mktemp -d /tmp/igw-janus-check.XXXXXX) || fail "mktemp"
FEED=
NODE=
OK=
cleanup() {
    [ -n "$NODE" ] && kill "$NODE" 2>/dev/null
    [ -n "$FEED" ] && kill "$FEED" 2>/dev/null
    janus_bench_stop "$TMP" >/dev/null 2>&1
    if [ -z "$OK" ] && [ -s "$TMP/janus.log" ]; then
        echo "--- janus.log (tail) ---" >&2
        tail -n 40 "$TMP/janus.log" >&2
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Free ports, asked of the kernel (one TCP for HTTP, two UDP for RTP).
read -r HTTP_PORT VPORT APORT < <(node -e '
const net = require("net"), dgram = require("dgram");
const tcp = () => new Promise((ok) => { const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); }); });
const udp = () => new Promise((ok) => { const s = dgram.createSocket("udp4"); s.bind(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); }); });
(async () => { const a = await tcp(), b = await udp(); let c = await udp(); while (c === b) c = await udp(); console.log(a, b, c); })();
') || fail "no free ports"
[ -n "${APORT:-}" ] || fail "no free ports"

JANUS_PID=$(janus_bench_start "$TMP" "$HTTP_PORT" "$VPORT" "$APORT") || fail "janus did not start"

# The benchmark's feed: plain RTP, H264 (keyframe every 30 frames, SPS/PPS
# with each) and Opus, to the mountpoint's ports.
gst-launch-1.0 -q \
    videotestsrc is-live=true ! video/x-raw,width=640,height=360,framerate=30/1 ! \
    x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bitrate=1000 ! \
    rtph264pay pt=96 config-interval=-1 ! udpsink host=127.0.0.1 port="$VPORT" \
    audiotestsrc is-live=true wave=sine ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=2 ! \
    opusenc bitrate=64000 ! rtpopuspay pt=111 ! udpsink host=127.0.0.1 port="$APORT" \
    </dev/null >"$TMP/feed.log" 2>&1 &
FEED=$!
sleep 0.5
kill -0 "$FEED" 2>/dev/null || { cat "$TMP/feed.log" >&2; fail "the GStreamer feed did not start"; }

# In the background so that a signal to us runs the trap at once (bash
# runs traps only between foreground commands); timeout passes it on.
JANUS_URL="http://127.0.0.1:$HTTP_PORT/janus" JANUS_PID=$JANUS_PID \
    timeout 120 node "$HERE/janus_check.mjs" &
NODE=$!
wait "$NODE"
RC=$?
NODE=
kill -0 "$FEED" 2>/dev/null || { cat "$TMP/feed.log" >&2; fail "the GStreamer feed died during the check"; }
janus_bench_alive "$JANUS_PID" || fail "janus died during the check"
[ "$RC" -eq 0 ] || exit "$RC"
OK=1
