#!/usr/bin/env bash
# bench_media.sh HOST - igw's media core against Janus 1.1.2 (Debian `janus`,
# streaming plugin) with the same feed and the same viewers, in one run
# (tests/bench/bench_media.mjs), inside namespaces of its own (media_netns in
# tests/media/lib.sh: Janus gathers on no loopback interface).
# HOST is an optimized igw-media-host. Settings: VIEWERS (50), MEASURE_SECONDS (10),
# WARMUP_SECONDS (3: every viewer receiving before the window opens),
# VIDEO_PATTERN (ball: the feed's picture, see bench_media.mjs).
# The last line is
#   RESULT cpu_us_per_pkt=<n> janus_cpu_us_per_pkt=<n> vs_janus=<ratio> kb_per_viewer=<n> loss_pct=<n>
set -euo pipefail
HOST=$(realpath "${1:?usage: bench_media.sh HOST}")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../media/lib.sh"
media_netns node "$HERE/bench_media.mjs" "$HOST"
