#!/usr/bin/env bash
# talk_test.sh HOST TALKCAM - talk with real peers (tests/media/talk_test.mjs): a
# GStreamer camera with a speaker (TALKCAM, tests/media/gst_talkcam.c: audio
# sendrecv, what it hears measured by `level`) publishes to igw-media-host
# (HOST, a sanitizer build); headless Chromium viewers publish a tone through
# the per-viewer gate and the floor. Namespaces and playwright-core as in
# media_test.sh.
set -u
HOST=${1:?usage: talk_test.sh HOST TALKCAM}
CAM=${2:?usage: talk_test.sh HOST TALKCAM}
HERE=$(cd "$(dirname "$0")" && pwd)
RUN_SECONDS=120
fail() { echo "talk_test.sh: FAIL: $*" >&2; exit 1; }
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
[ -x "$HOST" ] && [ -x "$CAM" ] || fail "$HOST or $CAM is not an executable"
HOST=$(abs "$HOST")
CAM=$(abs "$CAM")
command -v node >/dev/null || fail "node is required"

. "$HERE/lib.sh"
media_playwright "${IGW_PW_DIR:-$(dirname "$HOST")/pw-node}" || fail "playwright-core"

media_run "$RUN_SECONDS" "$HERE/talk_test.mjs" "$HOST" "$CAM" || fail "talk_test.mjs exited $?"
