# lib.sh - shell pieces the igwd tests and benchmarks share; source it.

# igw_port FILE [PID]: waits up to 10 s for igwd's startup line in FILE and
# prints the port it listens on; returns 1 if none came (at once if PID died).
igw_port() {
    local p
    for _ in $(seq 100); do
        p=$(sed -n 's/^igwd: listening on http:\/\/[^/ ]*:\([0-9]*\) .*/\1/p' "$1") # any address: 127.0.0.1, 0.0.0.0
        [ -n "$p" ] && { echo "$p"; return 0; }
        [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null && return 1
        sleep 0.1
    done
    return 1
}

# igw_start [VAR=VALUE...]: igwd ($IGWD) on a free loopback port with only
# these IGW_* settings (env -i: nothing leaks in from the caller, the
# sanitizer options excepted), stdout in $TMP/igwd.out, stderr appended to
# $TMP/igwd.err; sets PID and PORT, or fails the test. igw_stop: SIGTERM,
# and it must exit 0.
igw_start() {
    : >"$TMP/igwd.out" # here, not in the child: igw_port must never read a previous run's port
    env -i PATH="$PATH" LSAN_OPTIONS="${LSAN_OPTIONS:-}" ASAN_OPTIONS="${ASAN_OPTIONS:-}" IGW_LISTEN=127.0.0.1:0 \
        "$@" "$IGWD" >"$TMP/igwd.out" 2>>"$TMP/igwd.err" &
    PID=$!
    PORT=$(igw_port "$TMP/igwd.out" "$PID") || fail "igwd did not start"
}
igw_stop() {
    kill -TERM "$PID"; wait "$PID"; local rc=$?; PID=
    [ $rc = 0 ] || fail "igwd exit $rc after SIGTERM"
}

# expect STATUS CODE [PATH]: the reply in $TMP/r had HTTP STATUS (in
# $STATUS) and envelope code CODE; an error carries the envelope with
# data.reason and data.path (PATH, default "") and no internal text. Names
# the case by $CASE; needs the caller's fail and ok.
expect() {
    local want=$1 code=$2 path=${3-}
    [ "$STATUS" = "$want" ] || fail "$CASE: HTTP $STATUS, want $want: $(cat "$TMP/r")"
    [ "$(jq -r .code "$TMP/r")" = "$code" ] || fail "$CASE: code $(jq -r .code "$TMP/r"), want $code: $(cat "$TMP/r")"
    if [ "$code" != 200 ]; then
        jq -e '(.msg|type)=="string" and (.data.reason|type)=="string" and (.data.reason|length)>0 and (.data.path|type)=="string"' \
            "$TMP/r" >/dev/null || fail "$CASE: not the error envelope: $(cat "$TMP/r")"
        [ "$(jq -r .data.path "$TMP/r")" = "$path" ] || fail "$CASE: path $(jq -r .data.path "$TMP/r"), want $path"
        grep -qiE 'select|insert|postgres|sqlstate|127\.0\.0\.1|secret' "$TMP/r" && fail "$CASE: internal text leaked: $(cat "$TMP/r")"
    fi
    ok
}

# igw_services_test NAME PG_PORT REDIS_PORT MQTT_PORT: the set-up of a test
# against real services (the edge and app tests): a scratch $TMP, PostgreSQL,
# Redis and Mosquitto on those ports under $TMP/var, the demo tenant
# provisioned ($DEMO), and on exit igwd ($PID), a helper ($SUBPID) and the
# services stopped and $TMP removed. Defines fail (names the test NAME, shows
# igwd's last stderr lines) and ok (counts $checks).
igw_services_test() {
    IGW_TEST_NAME=$1
    TMP=$(mktemp -d "/tmp/igw-$1.XXXXXX")
    chmod 755 "$TMP"
    export IGW_VAR=$TMP/var IGW_PG_PORT=$2 IGW_REDIS_PORT=$3 IGW_MQTT_PORT=$4
    PID=
    SUBPID=
    checks=0
    trap igw_services_test_down EXIT
    export LSAN_OPTIONS="suppressions=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../lsan.supp"):print_suppressions=0"
    "$ROOT/src/ops/services.sh" up >"$TMP/services.log" 2>&1 || { cat "$TMP/services.log" >&2; fail "services.sh up"; }
    # shellcheck disable=SC1091
    . "$IGW_VAR/env"
    IGW_BASE_URL=http://127.0.0.1:0 "$ROOT/src/ops/provision.sh" >"$TMP/provision.log" 2>&1 ||
        { cat "$TMP/provision.log" >&2; fail "provision.sh"; }
    DEMO=$IGW_VAR/demo.json
}

igw_services_test_down() {
    [ -n "$PID" ] && { disown "$PID" 2>/dev/null; kill -KILL "$PID" 2>/dev/null; }
    [ -n "$SUBPID" ] && kill "$SUBPID" 2>/dev/null
    "$ROOT/src/ops/services.sh" down >/dev/null 2>&1
    rm -rf "$TMP"
}

fail() {
    echo "$IGW_TEST_NAME test: FAIL: $*" >&2
    # IGW_KEEP_ERR=FILE keeps igwd's whole stderr of a failed test.
    [ -n "${IGW_KEEP_ERR:-}" ] && [ -s "$TMP/igwd.err" ] && cp "$TMP/igwd.err" "$IGW_KEEP_ERR" && cp "$TMP/igwd.out" "$IGW_KEEP_ERR.out"
    [ -s "$TMP/igwd.err" ] && { echo "--- igwd stderr (last lines):" >&2; grep -v '^{"ts"' "$TMP/igwd.err" | tail -n 60 >&2; }
    exit 1
}

ok() { checks=$((checks + 1)); }

# igw_race N TOKEN URL BODY [OUT]: N POSTs of BODY (its {} is each one's
# index, 1..N) at once as TOKEN's bearer; each reply saved as OUT.<index>
# when OUT is given. Prints their HTTP statuses counted, ascending
# ("200x16 429x48"): what a cap let through, exactly.
igw_race() {
    local out=${5:-}
    seq "$1" | xargs -P "$1" -I{} sh -c 'o=/dev/null; [ -z "$1" ] || o=$1.$2; curl -s -o "$o" -w "%{http_code}\n" -X POST \
        -H "Authorization: Bearer $3" -H "content-type: application/json" --data-binary "$5" "$4"' \
        sh "$out" {} "$2" "$3" "$4" | sort | uniq -c | awk '{print $2 "x" $1}' | paste -sd' '
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds (tried every 0.1 s; a
# function reads its state afresh at each try), or 1 after SECONDS.
wait_for() {
    local n=$(($1 * 10))
    shift
    for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
    return 1
}

# j FILTER: a value of the demo tenant ($DEMO); psql_q SQL: one query on the
# test's PostgreSQL, unaligned and quiet.
j() { jq -r "$1" "$DEMO"; }
psql_q() { "$ROOT/src/ops/services.sh" psql -XAtq -c "$1"; }
