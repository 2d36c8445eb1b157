#!/usr/bin/env bash
# stop.sh DIR|PID - stops a janus started by start.sh (SIGTERM, then SIGKILL
# after 5 s). DIR is the one given to start.sh (its janus.pid is read).
set -u
[ $# -eq 1 ] || { echo "usage: stop.sh DIR|PID" >&2; exit 2; }
. "$(dirname "$0")/start.sh" || exit 1
janus_bench_stop "$1"
