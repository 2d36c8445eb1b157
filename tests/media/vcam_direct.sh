#!/usr/bin/env bash
# vcam_direct.sh BINARY - igw-vcam (BINARY) alone against headless Chromium,
# driven by tests/media/vcam_direct.mjs through tests/media/lib.mjs.
#
# playwright-core (pinned) is installed once, only if missing, into
# IGW_PW_DIR (default: pw-node next to BINARY, i.e. under build/), and the
# browser is the system's /usr/bin/chromium (IGW_CHROMIUM to change).
#
# The run happens in namespaces of its own (media_netns in lib.sh, as root).
# Exits non-zero on any failure; the .mjs prints "vcam_direct: N checks passed".
set -u
BIN=${1:?usage: vcam_direct.sh PATH/TO/igw-vcam}
HERE=$(cd "$(dirname "$0")" && pwd)
RUN_SECONDS=40
fail() { echo "vcam_direct.sh: FAIL: $*" >&2; exit 1; }

[ -x "$BIN" ] || fail "$BIN is not an executable"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are required (apt-get install nodejs npm)"
[ -x "${IGW_CHROMIUM:-/usr/bin/chromium}" ] || fail "no Chromium at ${IGW_CHROMIUM:-/usr/bin/chromium} (apt-get install chromium)"

. "$HERE/lib.sh"
media_playwright "${IGW_PW_DIR:-$(dirname "$BIN")/pw-node}" || fail "playwright-core"

media_run "$RUN_SECONDS" "$HERE/vcam_direct.mjs" "$BIN" || fail "vcam_direct.mjs exited $?"
