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
RUN_SECONDS=120
fail() { echo "media_test.sh: FAIL: $*" >&2; exit 1; }
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
[ -x "$HOST" ] && [ -x "$VCAM" ] || fail "$HOST or $VCAM is not an executable"
HOST=$(abs "$HOST")
VCAM=$(abs "$VCAM")
command -v node >/dev/null || fail "node is required"

. "$HERE/lib.sh"
media_playwright "${IGW_PW_DIR:-$(dirname "$HOST")/pw-node}" || fail "playwright-core"

media_run "$RUN_SECONDS" "$HERE/media_test.mjs" "$HOST" "$VCAM" || fail "media_test.mjs exited $?"
