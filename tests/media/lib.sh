# lib.sh - sourced by the media tests and the media benchmark.
#
# media_playwright DIR: installs playwright-core (pinned) into DIR unless it
#   is there already, and exports IGW_PW_DIR for tests/media/lib.mjs. Call it
#   before media_netns: npm needs the registry, the namespace has no network.
# media_netns CMD [ARG...]: runs CMD in network, PID and mount namespaces of
#   its own and returns its status. Inside: lo up, and a veth pair whose end
#   igwv0 holds IGW_NETNS_ADDR (198.18.0.1/24, the RFC 2544 benchmarking
#   range) with the default route. Why: Chromium gathers no ICE candidates on
#   loopback alone nor without a route, and Janus never gathers on a loopback
#   interface; in the namespace nothing can leave this host, every peer of a
#   test reaches every other on one address, and everything dies with it.
#   /proc is the namespace's own (pgrep, LeakSanitizer). IGW_MEDIA_NETNS=0
#   runs CMD in the host's namespaces instead (with IGW_NETNS_ADDR=127.0.0.1).
# media_run SECONDS SCRIPT.mjs [ARG...]: the run of a real-peer test: a
#   scratch directory, sanitizer options, SCRIPT under node in media_netns
#   with a time limit, everything killed and removed on exit or signal.
#   Returns the script's status.
# media_sanitizers DIR: LeakSanitizer suppressions (in DIR) and options for
#   sanitizer builds: what GLib's and GStreamer's constructors and fontconfig
#   keep until exit is theirs, not ours; full unwinding so that those frames
#   are seen (the distribution's libraries have no frame pointers).
# playwright-core 1.61.1: the last release that runs on Node 18 (Debian 12's
# nodejs; 1.62 and later need Node 20); it drives Debian's /usr/bin/chromium.
MEDIA_PW_VERSION=1.61.1

media_playwright() {
    local dir=$1 have
    have=$(node -p "try{require('$dir/node_modules/playwright-core/package.json').version}catch(e){''}" 2>/dev/null)
    if [ "$have" != "$MEDIA_PW_VERSION" ]; then
        mkdir -p "$dir" || return 1
        npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$dir" \
            "playwright-core@$MEDIA_PW_VERSION" >&2 || { echo "npm install playwright-core into $dir failed" >&2; return 1; }
    fi
    export IGW_PW_DIR=$dir
}

media_netns() {
    if [ "${IGW_MEDIA_NETNS:-1}" = 0 ]; then
        IGW_NETNS_ADDR=127.0.0.1 "$@"
        return
    fi
    command -v unshare >/dev/null && command -v ip >/dev/null || { echo "media_netns: needs unshare and ip" >&2; return 1; }
    IGW_NETNS_ADDR=198.18.0.1 unshare --net --pid --fork --kill-child --mount-proc -- sh -c '
        ip link set lo up &&
        ip link add igwv0 type veth peer name igwv1 &&
        ip addr add "$IGW_NETNS_ADDR/24" dev igwv0 &&
        ip link set igwv0 up && ip link set igwv1 up &&
        ip route add default dev igwv0 || { echo "media_netns: namespace set-up failed" >&2; exit 1; }
        exec "$@"' sh "$@"
}

media_sanitizers() {
    printf 'leak:_dl_init\nleak:libfontconfig.so\nleak:libglib-2.0.so\nleak:libgobject-2.0.so\nleak:libgio-2.0.so\n' \
        >"$1/lsan.supp" || return 1
    export LSAN_OPTIONS="suppressions=$1/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
    export ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
}

media_run() {
    local secs=$1 rc
    shift
    MEDIA_TMP=$(mktemp -d /tmp/igw-media.XXXXXX) || return 1
    MEDIA_RUNNER=
    trap '[ -n "$MEDIA_RUNNER" ] && kill -9 "$MEDIA_RUNNER" 2>/dev/null; rm -rf "$MEDIA_TMP"' EXIT
    trap 'exit 1' INT TERM
    media_sanitizers "$MEDIA_TMP" || return 1
    # In the background so that a signal to us runs the trap at once.
    media_netns timeout -k 5 "$secs" node "$@" &
    MEDIA_RUNNER=$!
    wait "$MEDIA_RUNNER"
    rc=$?
    MEDIA_RUNNER=
    return $rc
}
