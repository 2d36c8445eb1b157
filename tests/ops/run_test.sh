#!/usr/bin/env bash
# run_test.sh IGWD IGWCTL VCAM - `make run`'s lifecycle (issue 24, item 2),
# src/ops/run.sh itself in a scratch IGW_VAR on its own ports, inside a
# network and PID namespace (tests/media/lib.sh: Chromium gathers nothing
# on loopback): the demo camera never outlives its igwd (kill -9 of igwd
# ends it), a second run leaves exactly one camera whose live view decodes
# frames in Chromium, a camera left by an earlier run is replaced, a second
# camera with the same client id makes the older one stop instead of
# fighting (and refusals after a lost connection are no takeover), and
# provisioning restores a deactivated demo user.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    command -v node >/dev/null || { echo "run_test.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$ROOT/build/tests/pw-node}" || { echo "run_test.sh: playwright-core" >&2; exit 1; }
    exec timeout -k 5 400 bash -c '. "$1/tests/media/lib.sh"; media_netns bash "$1/tests/ops/run_test.sh" --inside' \
        sh "$ROOT"
fi
# shellcheck source=../igwd/lib.sh
. "$ROOT/tests/igwd/lib.sh"
VCAM=$(realpath "$ROOT/build/igw-vcam")
export IGWCTL=$ROOT/build/igwctl # provision.sh runs it too
igw_services_test run "${RUN_PG_PORT:-25480}" "${RUN_REDIS_PORT:-63880}" "${RUN_MQTT_PORT:-18980}"
LISTEN=127.0.0.1:${RUN_HTTP_PORT:-18981}
RUNPID= EXTRA= BROKER=
stop_all() {
    [ -n "$RUNPID" ] && kill -KILL "$RUNPID" 2>/dev/null
    [ -n "$BROKER" ] && kill -KILL "$BROKER" 2>/dev/null
    [ -n "$EXTRA" ] && kill -KILL "$EXTRA" 2>/dev/null
    pkill -KILL -f -- "--device-file $IGW_VAR/demo.json" 2>/dev/null
    igw_services_test_down
}
trap stop_all EXIT
cameras() { pgrep -f -- "igw-vcam.* --device-file $IGW_VAR/demo.json" | wc -l; }
cameras_are() { [ "$(cameras)" = "$1" ]; }
ready() { curl -sf "http://$LISTEN/readyz" >/dev/null; }
P=$(j .device.productID) D=$(j .device.deviceName)
online() { [ "$(psql_q "SELECT online FROM devices WHERE product_id = '$P' AND device_name = '$D'")" = t ]; }
# make_run LOG: src/ops/run.sh in the background as `make run` runs it; RUNPID becomes igwd (exec).
make_run() {
    IGW_LISTEN=$LISTEN "$ROOT/src/ops/run.sh" >"$TMP/$1" 2>&1 &
    RUNPID=$!
    wait_for 60 ready || fail "run.sh: igwd not ready: $(tail -5 "$TMP/$1")"
}

make_run run1.log
CASE="make run: one demo camera"
wait_for 10 cameras_are 1 || fail "$CASE: $(cameras)"; ok
CASE="kill -9 of igwd: its camera stops with it (--die-with-parent)"
kill -KILL "$RUNPID"; wait "$RUNPID" 2>/dev/null; RUNPID=
wait_for 10 cameras_are 0 || fail "$CASE: $(cameras) left: $(pgrep -af igw-vcam)"; ok

make_run run2.log
CASE="make run again: exactly one camera, online, and it stays"
wait_for 10 cameras_are 1 && wait_for 15 online || fail "$CASE: $(cameras) cameras, online $(online && echo t)"
sleep 5
cameras_are 1 && online || fail "$CASE: after 5 s: $(cameras) cameras"
! grep -q "another client connected" "$IGW_VAR/log/vcam.log" || fail "$CASE: a takeover: $(tail -5 "$IGW_VAR/log/vcam.log")"; ok
CASE="make run again: a live view in Chromium decodes frames"
IGW_BASE=http://$LISTEN IGW_DEMO=$DEMO node "$ROOT/tests/ops/run_view.mjs" || fail "$CASE"
# ... offered by make run's own camera (its log), not by some other client of the device.
grep -q "offer for leg .* sent" "$IGW_VAR/log/vcam.log" || fail "$CASE: no offer in vcam.log: $(tail -5 "$IGW_VAR/log/vcam.log")"; ok

# ---- a second camera with the same client id: one stops instead of fighting -----------------------------
CASE="a second camera for the device: one of the two says so and stops, the other stays connected"
FIRST=$(pgrep -f -- "igw-vcam.* --device-file $IGW_VAR/demo.json")
: >"$TMP/extra.log"
"$VCAM" --device-file "$DEMO" --address "$IGW_NETNS_ADDR" >>"$TMP/extra.log" 2>&1 &
EXTRA=$!
alive() { kill -0 "$1" 2>/dev/null; }
one_left() { ! alive "$FIRST" || ! alive "$EXTRA"; }
wait_for 30 one_left || fail "$CASE: both still run: $(tail -3 "$TMP/extra.log")"
if alive "$FIRST"; then LOST=$TMP/extra.log KEPT=$FIRST; else LOST=$IGW_VAR/log/vcam.log KEPT=$EXTRA; fi
grep -q "another client connected as $P&$D" "$LOST" || fail "$CASE: no takeover line: $(tail -5 "$LOST")"
sleep 3
alive "$KEPT" && online || fail "$CASE: the other one is not connected"; ok
kill -TERM "$RUNPID"; wait "$RUNPID" 2>/dev/null; RUNPID=
alive "$EXTRA" && { kill -TERM "$EXTRA"; wait "$EXTRA" 2>/dev/null; }
EXTRA=

# ---- a camera left by an earlier run is replaced ---------------------------------------------------------
CASE="a camera of an earlier run (var/vcam.pid) is stopped by the next run: one camera"
wait_for 10 cameras_are 0 || fail "$CASE: $(cameras) cameras before"
"$VCAM" --device-file "$DEMO" --address "$IGW_NETNS_ADDR" >>"$TMP/stray.log" 2>&1 &
EXTRA=$!
echo "$EXTRA" >"$IGW_VAR/vcam.pid" # as if started by an earlier run without --die-with-parent
wait_for 10 grep -q "mqtt: connected" "$TMP/stray.log" || fail "$CASE: the stray camera did not connect"
make_run run3.log
wait_for 10 bash -c "! kill -0 $EXTRA 2>/dev/null" || fail "$CASE: the earlier camera still runs"
EXTRA=
grep -q "stopping the demo camera of an earlier run" "$TMP/run3.log" || fail "$CASE: $(head -5 "$TMP/run3.log")"
wait_for 10 cameras_are 1 || fail "$CASE: $(cameras) cameras"
sleep 3
cameras_are 1 && online || fail "$CASE: after 3 s: $(cameras) cameras"; ok

# ---- a deactivated demo user ------------------------------------------------------------------------------
CASE="provisioning restores a deactivated demo user and enterprise (warning), tokens issued"
"$IGWCTL" user deactivate --db "$IGW_PG_DSN" --id 1003 >/dev/null || fail "$CASE: igwctl user deactivate"
"$IGWCTL" enterprise deactivate --db "$IGW_PG_DSN" --id 2 >/dev/null || fail "$CASE: igwctl enterprise deactivate"
IGW_BASE_URL=http://$LISTEN "$ROOT/src/ops/provision.sh" >"$TMP/prov.log" 2>&1 || fail "$CASE: $(cat "$TMP/prov.log")"
grep -q "demo user 1003 was inactive: activated again" "$TMP/prov.log" &&
    grep -q "demo enterprise 2 was inactive: activated again" "$TMP/prov.log" || fail "$CASE: $(cat "$TMP/prov.log")"
[ "$(psql_q "SELECT bool_and(active) FROM users WHERE user_id IN (1003, 2001)")" = t ] || fail "$CASE: still inactive"; ok
CASE="provisioning again: nothing to restore, no warning"
IGW_BASE_URL=http://$LISTEN "$ROOT/src/ops/provision.sh" >"$TMP/prov2.log" 2>&1 || fail "$CASE: $(cat "$TMP/prov2.log")"
! grep -q "warning" "$TMP/prov2.log" || fail "$CASE: $(cat "$TMP/prov2.log")"; ok

# ---- refused after a lost connection: no takeover, the camera keeps trying ------------------------------
CASE="a camera refused after a lost connection keeps reconnecting and claims no takeover"
python3 "$ROOT/tests/ops/refusing_broker.py" 18932 12 >"$TMP/refusing.out" 2>&1 &
BROKER=$!
wait_for 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/18932' 2>/dev/null || fail "$CASE: the refusing broker did not listen"
"$VCAM" --mqtt 127.0.0.1:18932 --product "$P" --device "$D" --secret "$(j .device.secret)" \
    --address "$IGW_NETNS_ADDR" >"$TMP/refused.log" 2>&1 &
EXTRA=$!
wait "$BROKER" || fail "$CASE: the refusing broker failed: $(cat "$TMP/refusing.out")"
BROKER=
alive "$EXTRA" || fail "$CASE: the camera exited: $(tail -3 "$TMP/refused.log")"
! grep -q "another client connected" "$TMP/refused.log" || fail "$CASE: $(tail -3 "$TMP/refused.log")"
# One accepted connection, then refusals: a camera that stopped trying after a refusal shows 2.
[ "$(cat "$TMP/refusing.out")" -ge 3 ] 2>/dev/null || fail "$CASE: connections: $(cat "$TMP/refusing.out"): $(tail -3 "$TMP/refused.log")"
kill -TERM "$EXTRA"; wait "$EXTRA" 2>/dev/null; EXTRA=; ok

CASE="igwd stopped (SIGTERM): its camera stops too"
kill -TERM "$RUNPID"; wait "$RUNPID" 2>/dev/null; RUNPID=
wait_for 10 cameras_are 0 || fail "$CASE: $(cameras) left"; ok
echo "run test: $checks checks passed"
