#!/usr/bin/env bash
# smoke.sh BINARY - starts igwd on a free loopback port with no PostgreSQL,
# Redis or MQTT configured and checks the transport end to end with curl:
# ops routes, the strict stage's error envelopes, the stub handlers, metrics,
# request ids, the access log, strict configuration and a clean SIGTERM.
# Exits non-zero with a message on the first failure.
set -u
BIN=${1:?usage: smoke.sh BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
DOCS="$HERE/../../docs/configuration.md"
TMP=$(mktemp -d)
PID=
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "igwd smoke: FAIL: $*" >&2; [ -s "$TMP/err" ] && { echo "--- igwd stderr:" >&2; tail -n 20 "$TMP/err" >&2; }; exit 1; }
command -v curl >/dev/null || fail "curl is not installed"

# jfield FILE .a.b - one JSON field as text (jq if installed, else python3).
jfield() {
    if command -v jq >/dev/null; then jq -r "$2" "$1"; else
        python3 -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split(".")[1:]: v=v[k]
print(json.dumps(v) if isinstance(v,(dict,list)) else v)' "$1" "$2"; fi
}

# For sanitizer builds: h2o 2.2.5 never frees its per-thread memory-pool
# recycle caches nor the multithread queue struct (fixed in later h2o);
# suppress exactly those two allocation sites, nothing of ours.
export LSAN_OPTIONS="suppressions=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../lsan.supp"):print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# No IGW_* from the caller's environment: the run must be reproducible.
for v in $(compgen -e | grep '^IGW_' || true); do unset "$v"; done

# ---- configuration is strict -------------------------------------------------
IGW_NO_SUCH_SETTING=1 "$BIN" >/dev/null 2>"$TMP/cfgerr"; rc=$?
[ $rc -eq 2 ] || fail "unknown IGW_ variable: exit $rc, want 2"
printf 'listen = 127.0.0.1:0\nno_such_key = 1\n' >"$TMP/bad.conf"
"$BIN" -c "$TMP/bad.conf" >/dev/null 2>"$TMP/cfgerr"; rc=$?
[ $rc -eq 2 ] && grep -q 'bad.conf:2: unknown setting' "$TMP/cfgerr" || fail "unknown file key: exit $rc, $(cat "$TMP/cfgerr")"
IGW_THREADS=x "$BIN" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "IGW_THREADS=x: exit $rc, want 2"
IGW_LOG_LEVEL=verbose "$BIN" >/dev/null 2>"$TMP/cfgerr"; rc=$?
[ $rc -eq 2 ] && grep -q ' error config: environment IGW_LOG_LEVEL: log_level: expected error, warn, info or debug' "$TMP/cfgerr" ||
    fail "IGW_LOG_LEVEL=verbose: exit $rc, $(cat "$TMP/cfgerr")"
# A fatal start-up error as a JSON line (log_format); libpq's reason for a
# DSN that does not parse is withheld: it may quote the password.
IGW_LOG_FORMAT=json IGW_LISTEN=127.0.0.1:0 IGW_THREADS=1 IGW_PG_DSN='password=smoke-dsn-pw junk' \
    "$BIN" >/dev/null 2>"$TMP/cfgerr"; rc=$?
[ $rc -eq 1 ] || fail "bad DSN: exit $rc, want 1: $(cat "$TMP/cfgerr")"
python3 - "$TMP/cfgerr" <<'PY' || fail "bad DSN: not one JSON error line: $(cat "$TMP/cfgerr")"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
o = json.loads(lines[0])
assert len(lines) == 1 and set(o) == {"ts", "level", "msg"} and o["level"] == "error", lines
assert o["msg"].startswith("database DSN: ") and len(o["ts"]) == 24 and o["ts"].endswith("Z"), o
PY
grep -q 'smoke-dsn-pw\|junk' "$TMP/cfgerr" && fail "bad DSN: the DSN is in the log: $(cat "$TMP/cfgerr")"
# The media core's settings: a port range that is not one, an address it
# cannot use; each refused at start with one error line naming it.
IGW_LISTEN=127.0.0.1:0 IGW_THREADS=1 IGW_MEDIA_PORT_MIN=5000 "$BIN" >/dev/null 2>"$TMP/cfgerr"; rc=$?
[ $rc -eq 1 ] && grep -q 'error media_port_min and media_port_max' "$TMP/cfgerr" ||
    fail "media port range 5000-0: exit $rc, $(cat "$TMP/cfgerr")"
IGW_LISTEN=127.0.0.1:0 IGW_THREADS=1 IGW_MEDIA_ADDRESS=not-an-address "$BIN" >/dev/null 2>"$TMP/cfgerr"; rc=$?
[ $rc -eq 1 ] && grep -q 'error session engine: ' "$TMP/cfgerr" ||
    fail "media address not-an-address: exit $rc, $(cat "$TMP/cfgerr")"
# Every setting --help lists is documented.
if [ -f "$DOCS" ]; then
    for k in $("$BIN" --help | sed -n 's/^  \([a-z_]*\) .*/\1/p'); do
        grep -q "\`$k\`" "$DOCS" || fail "setting $k missing from docs/configuration.md"
    done
fi

# ---- start ---------------------------------------------------------------------
IGW_LISTEN=127.0.0.1:0 IGW_THREADS=2 "$BIN" >"$TMP/out" 2>"$TMP/err" &
PID=$!
PORT=$(igw_port "$TMP/out" "$PID") || fail "no startup line (igwd exited, or 10 s passed)"
BASE="http://127.0.0.1:$PORT"

# req NAME EXPECTED_STATUS curl-args... - body in $TMP/NAME.json, headers in $TMP/NAME.h
req() {
    local name=$1 want=$2; shift 2
    local got
    got=$(curl -s -o "$TMP/$name.json" -D "$TMP/$name.h" -w '%{http_code}' "$@") || fail "$name: curl failed"
    [ "$got" = "$want" ] || fail "$name: HTTP $got, want $want: $(head -c 300 "$TMP/$name.json")"
}
# envelope NAME CODE - the reply is the JSON error envelope with this code.
envelope() {
    grep -qi '^content-type: application/json' "$TMP/$1.h" || fail "$1: not application/json"
    grep -qi '^content-length: ' "$TMP/$1.h" || fail "$1: no Content-Length"
    local code; code=$(jfield "$TMP/$1.json" .code) || fail "$1: body is not JSON"
    [ "$code" = "$2" ] || fail "$1: code $code, want $2"
    jfield "$TMP/$1.json" .msg >/dev/null && jfield "$TMP/$1.json" .data.reason >/dev/null \
        || fail "$1: envelope lacks msg or data.reason"
}
EVENTS=/api/v1/im/interaction/events
JSON=(-H 'Content-Type: application/json')

req healthz 200 "$BASE/healthz"
[ "$(jfield "$TMP/healthz.json" .data.status)" = alive ] || fail "healthz: $(cat "$TMP/healthz.json")"
[ "$(jfield "$TMP/healthz.json" .code)" = 200 ] || fail "healthz: code"
grep -qiE '^x-request-id: [0-9a-f]{16}' "$TMP/healthz.h" || fail "healthz: no 16-hex x-request-id header"

req limit 400 "${JSON[@]}" -d '{"endpointId":"e","limit":99}' "$BASE$EVENTS"
envelope limit 100400
[ "$(jfield "$TMP/limit.json" .data.path)" = /limit ] || fail "limit: data.path $(cat "$TMP/limit.json")"

req unknown 404 "$BASE/api/v1/no/such/route?x=1"
envelope unknown 100404
req method 405 "$BASE$EVENTS"
envelope method 100405
head -c 4097 /dev/zero | tr '\0' ' ' >"$TMP/big"
req cap 413 "${JSON[@]}" --data-binary @"$TMP/big" "$BASE/api/v1/im/vision-consents/get-one"
envelope cap 100413
req ctype 415 -H 'Content-Type: text/plain' -d '{"endpointId":"e","limit":1}' "$BASE$EVENTS"
envelope ctype 100415
# No database and no login key here: `auth user` routes stop at the login.
req stub 503 "${JSON[@]}" -d '{"endpointId":"e","limit":1}' "$BASE$EVENTS?since=now"
envelope stub 100503
[ "$(jfield "$TMP/stub.json" .data.reason)" = "login is not configured" ] || fail "stub: reason"

req readyz 503 "$BASE/readyz"
envelope readyz 100503
for dep in postgres redis mqtt; do
    grep -q "\"$dep\"" "$TMP/readyz.json" || fail "readyz: $dep not named as down: $(cat "$TMP/readyz.json")"
done

req metrics 200 "$BASE/metrics"
for code in 200 100400 100404 100405 100413 100415 100503; do
    grep -q "requests_total{.*code=\"$code\"}" "$TMP/metrics.json" || fail "metrics: no requests_total with code $code"
done
grep -q '^igw_request_duration_seconds_bucket{route="events_pull",le="+Inf"}' "$TMP/metrics.json" \
    || fail "metrics: no duration histogram for events_pull"
grep -q '^process_start_time_seconds ' "$TMP/metrics.json" || fail "metrics: no process_start_time_seconds"
# The session engine's media core runs (media_threads 1 by default), no peer yet.
grep -qx 'igw_media_up 1' "$TMP/metrics.json" && grep -qx 'igw_media_threads 1' "$TMP/metrics.json" &&
    grep -qx 'igw_media_events_total{kind="closed"} 0' "$TMP/metrics.json" &&
    grep -qx 'igw_media_socket_sent_total 0' "$TMP/metrics.json" &&
    grep -qx 'igw_media_socket_send_dropped_total 0' "$TMP/metrics.json" || fail "metrics: the media core is not up"
grep -q ' info session: media core up: 1 thread on 127.0.0.1, certificate [0-9A-F:]\{95\}$' "$TMP/err" ||
    fail "no media core start line with its certificate fingerprint"

# ---- SIGTERM: exit 0 within 5 s ------------------------------------------------
kill -TERM "$PID"
for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null && fail "still running 5 s after SIGTERM"
wait "$PID"; rc=$?
PID=
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
grep -q '^igwd: stopped' "$TMP/out" || fail "no 'stopped' line"

# ---- the access log: one JSON object per request on stderr ----------------------
python3 - "$TMP/err" <<'PY' || fail "access log"
import json, re, sys
# Diagnostics (text lines with a level, e.g. the media core's start) are not requests.
diag = re.compile(r"^\d{4}-\d\d-\d\dT[0-9:.]+Z (error|warn|info|debug) ")
lines = [l for l in open(sys.argv[1], encoding="utf-8").read().splitlines() if not diag.match(l)]
keys = {"ts", "id", "method", "path", "route", "status", "code", "bytes_in", "bytes_out", "duration_us"}
if len(lines) != 9:
    sys.exit(f"{len(lines)} stderr lines, want 9 (one per request): {lines[:3]}")
for l in lines:
    o = json.loads(l)
    if set(o) != keys:
        sys.exit(f"keys {sorted(o)}")
    if len(o["id"]) != 16 or "?" in o["path"]:
        sys.exit(f"bad line {l}")
PY
# ---- Signaling off: gated routes answer the gate class, others go on -----------
IGW_LISTEN=127.0.0.1:0 IGW_THREADS=1 IGW_SIGNALING_ENABLED=false "$BIN" >"$TMP/out2" 2>/dev/null &
PID=$!
PORT=$(igw_port "$TMP/out2" "$PID") || fail "second igwd did not start"
BASE=http://127.0.0.1:$PORT
req gated 503 "${JSON[@]}" -d '{"endpointId":"e","limit":1}' "$BASE$EVENTS"
envelope gated 100503
[ "$(jfield "$TMP/gated.json" .data.reason)" = "signaling is disabled" ] || fail "gated: reason"
req gated_bad 400 "${JSON[@]}" -d '{"endpointId":"e","limit":99}' "$BASE$EVENTS"
envelope gated_bad 100400
req ungated 503 "${JSON[@]}" -d '{"consentId":"c1"}' "$BASE/api/v1/im/vision-consents/get-one"
envelope ungated 100503
[ "$(jfield "$TMP/ungated.json" .data.reason)" = "login is not configured" ] || fail "ungated: reason"
kill -TERM "$PID"
wait "$PID" || fail "second igwd: exit status $? after SIGTERM"
PID=

# ---- /metrics: loopback peers only, unless metrics_public -----------------------
# Needs an address of this host that is not loopback (the peer is then that address).
HOSTIP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
if [ -n "$HOSTIP" ]; then
    for public in false true; do
        IGW_LISTEN=0.0.0.0:0 IGW_THREADS=1 IGW_METRICS_PUBLIC=$public "$BIN" >"$TMP/out3" 2>/dev/null &
        PID=$!
        PORT=$(igw_port "$TMP/out3" "$PID") || fail "igwd on 0.0.0.0 did not start: $(cat "$TMP/out3")"
        req "metrics_local_$public" 200 "http://127.0.0.1:$PORT/metrics"
        if [ $public = false ]; then
            req metrics_remote 404 "http://$HOSTIP:$PORT/metrics"
            envelope metrics_remote 100404
            req healthz_remote 200 "http://$HOSTIP:$PORT/healthz"
        else
            req metrics_remote_public 200 "http://$HOSTIP:$PORT/metrics"
        fi
        kill -TERM "$PID"
        wait "$PID" || fail "igwd on 0.0.0.0: exit status $? after SIGTERM"
        PID=
    done
else
    echo "smoke: no global IPv4 address here: /metrics from a remote peer not checked" >&2
fi

echo "igwd smoke: all passed ($BIN)"
