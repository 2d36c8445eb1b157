#!/usr/bin/env bash
# presence_test.sh IGWD IGWCTL - device presence from the broker, end to
# end (src/mqttauth presence facts -> igwd edge/presence.c -> devices.online)
# against real services: a device connecting with mosquitto_sub is online
# within 2 s; a clean disconnect, a SIGKILL and a keepalive expiry (a raw
# client that goes silent, tests/mqttauth/hold.py) make it offline; a
# takeover (the same clientID twice) leaves it online; a device cannot
# forge presence or ask for a sync; igwd's own connection is no device; an
# older fact, or one of an unknown device, changes nothing; a broker killed
# and restarted: the devices of its old boot are offline (a device that
# does not come back included) and a device that reconnects is online
# again. Own PostgreSQL, Redis and Mosquitto (own ports and directory).
set -u
IGWD=$(realpath "${1:?usage: presence_test.sh IGWD IGWCTL}")
IGWCTL=$(realpath "${2:?usage: presence_test.sh IGWD IGWCTL}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test presence "${PRESENCE_PG_PORT:-25399}" "${PRESENCE_REDIS_PORT:-63799}" "${PRESENCE_MQTT_PORT:-18899}"
HOLD=$ROOT/tests/mqttauth/hold.py
P=$(j .device.productID)
BGPIDS=()
cleanup_bg() { for p in "${BGPIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; igw_services_test_down; }
trap cleanup_bg EXIT

for d in pres-1 pres-2 pres-3; do
    "$IGWCTL" device add --db "$IGW_PG_DSN" --product "$P" --device "$d" >"$TMP/$d.json" || fail "igwctl device add $d"
done
user() { jq -r .username "$TMP/$1.json"; }
pass() { jq -r .password "$TMP/$1.json"; }
# dev_sub DEVICE [ARGS...]: the device as mosquitto_sub on its own down topic, in the background ($!).
dev_sub() {
    local d=$1
    shift
    mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$P&$d" -u "$(user "$d")" -P "$(pass "$d")" "$@" \
        -t "\$thing/down/property/$P/$d" >/dev/null 2>&1 &
    BGPIDS+=($!)
}
dev_pub() { # DEVICE TOPIC PAYLOAD
    mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$P&$1" -u "$(user "$1")" -P "$(pass "$1")" -q 1 -t "$2" -m "$3" \
        2>/dev/null
}
admin_pub() { # TOPIC PAYLOAD: as igwd's privileged user
    mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "presence-test-admin" -u "$IGW_MQTT_USER" -P "$IGW_MQTT_PASSWORD" \
        -q 1 -t "$1" -m "$2"
}
online() { psql_q "SELECT online FROM devices WHERE product_id = '$P' AND device_name = '$1'"; }
is() { [ "$(online "$1")" = "$2" ]; }
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; } # NAME VALUE: read at each call (for wait_for)
metric_gt() { local v; v=$(metric "$1"); [ -n "$v" ] && [ "$v" -gt "$2" ]; }
key() { psql_q "SELECT presence_boot || '/' || presence_seq FROM devices WHERE product_id = '$P' AND device_name = '$1'"; }

igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" \
    IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
    IGW_MQTT_CLIENT_ID=igwd-presence-test

# ---- igwd's own connection: the sync's broker fact, no device ------------------------------
CASE="igwd connects and its sync is answered by the broker fact"
wait_for 10 metric_is 'igw_presence_total{state="boot"}' 1 || fail "$CASE: $(metric 'igw_presence_total{state="boot"}')"; ok
BOOT1=$(metric igw_presence_boot)
CASE="igw_presence_boot is the broker's start"; [ "${BOOT1:-0}" -gt 1700000000000 ] || fail "$CASE: $BOOT1"; ok
CASE="igwd's own connection gives no device presence"
[ "$(psql_q "SELECT count(*) FROM devices WHERE online OR presence_boot IS NOT NULL")" = 0 ] &&
    [ "$(metric 'igw_presence_total{state="online"}')" = 0 ] || fail "$CASE: $(psql_q "SELECT device_name FROM devices WHERE online")"; ok

# ---- connect, clean disconnect ----------------------------------------------------------------
dev_sub pres-1
SUB1=$!
CASE="a device connecting is online within 2 s"; wait_for 2 is pres-1 t || fail "$CASE: $(online pres-1)"; ok
CASE="... with presence_at and its key"
[ "$(psql_q "SELECT presence_at > now() - interval '1 minute' AND presence_boot = $BOOT1 AND presence_seq > 0 FROM devices WHERE product_id = '$P' AND device_name = 'pres-1'")" = t ] ||
    fail "$CASE: $(psql_q "SELECT presence_at, presence_boot, presence_seq FROM devices WHERE device_name = 'pres-1'")"; ok
CASE="the other devices stay offline"; is pres-2 f && is pres-3 f || fail "$CASE"; ok
kill -INT "$SUB1"; wait "$SUB1" 2>/dev/null
CASE="a clean disconnect: offline within 2 s"; wait_for 2 is pres-1 f || fail "$CASE: $(online pres-1)"; ok

# ---- unclean: SIGKILL, keepalive expiry ---------------------------------------------------------
dev_sub pres-1 -k 5
SUB1=$!
CASE="online again"; wait_for 2 is pres-1 t || fail "$CASE"; ok
kill -KILL "$SUB1"; wait "$SUB1" 2>/dev/null
CASE="a client killed with SIGKILL: offline within 3 s"; wait_for 3 is pres-1 f || fail "$CASE: $(online pres-1)"; ok
# A client that goes silent without closing (keepalive 2 s): Mosquitto 2.0
# drops it once 1.5 x 2 s passed, checking every 6 s.
python3 "$HOLD" "$IGW_MQTT_PORT" "$P&pres-2" "$(user pres-2)" "$(pass pres-2)" 2 >"$TMP/hold1" 2>&1 &
BGPIDS+=($!)
CASE="a silent client is online"; wait_for 2 is pres-2 t || fail "$CASE: $(cat "$TMP/hold1")"; ok
t0=$SECONDS
CASE="... offline when its keepalive expired (within 1.5 x 2 s + the broker's 6 s check)"
wait_for 11 is pres-2 f || fail "$CASE: $(online pres-2)"; ok
CASE="... not before 2 s"; [ $((SECONDS - t0)) -ge 2 ] || fail "$CASE: $((SECONDS - t0)) s"; ok

# ---- takeover: the same clientID twice -------------------------------------------------------
python3 "$HOLD" "$IGW_MQTT_PORT" "$P&pres-3" "$(user pres-3)" "$(pass pres-3)" 60 >"$TMP/hold2" 2>&1 &
BGPIDS+=($!)
CASE="takeover: the first connection is online"; wait_for 2 is pres-3 t || fail "$CASE"; ok
k1=$(key pres-3)
dev_sub pres-3
SUB3=$!
CASE="takeover: the first connection is kicked"; wait_for 3 grep -q '^closed' "$TMP/hold2" || fail "$CASE"; ok
sleep 1
CASE="takeover: the device stays online, with the newer fact"
is pres-3 t && [ "$(key pres-3)" != "$k1" ] || fail "$CASE: $(online pres-3) $(key pres-3) (was $k1)"; ok

# ---- what cannot change presence ----------------------------------------------------------------
ignored0=$(metric 'igw_presence_results_total{result="ignored"}')
boots0=$(metric 'igw_presence_total{state="boot"}')
FAKE="{\"state\":\"online\",\"boot\":9000000000000,\"seq\":1,\"at\":1}"
dev_pub pres-1 "igw/presence/device/$P/pres-2" "$FAKE"
dev_pub pres-1 "\$presence/device/$P/pres-2" "$FAKE"
dev_pub pres-1 "\$presence/up/state/$P/pres-2" "$FAKE"
dev_pub pres-1 "\$thing/up/property/$P/pres-1" '{"method":"report","msgToken":"p1","params":{}}'
dev_pub pres-1 igw/presence-sync x
# A fact of an unknown device, and one older than the stored one, as igwd's user.
admin_pub "igw/presence/device/$P/nosuch" "{\"state\":\"online\",\"boot\":$BOOT1,\"seq\":999999,\"at\":1}"
admin_pub "igw/presence/device/$P/pres-3" "{\"state\":\"offline\",\"boot\":$BOOT1,\"seq\":1,\"at\":1}"
admin_pub "igw/presence/device/$P/pres-3" 'not a fact'
CASE="an unknown device's and an older fact are ignored"
wait_for 3 metric_is 'igw_presence_results_total{result="ignored"}' $((ignored0 + 2)) ||
    fail "$CASE: $(metric 'igw_presence_results_total{result="ignored"}') (was $ignored0)"; ok
CASE="... the older fact did not flip the device"; is pres-3 t || fail "$CASE"; ok
CASE="... no row for the unknown device"; [ "$(psql_q "SELECT count(*) FROM devices WHERE device_name = 'nosuch'")" = 0 ] || fail "$CASE"; ok
CASE="a malformed fact is counted"; wait_for 2 metric_is igw_presence_malformed_total 1 || fail "$CASE"; ok
CASE="a device cannot forge presence (igw/presence/..., \$presence/...)"; is pres-2 f || fail "$CASE"; ok
CASE="... nor ask for a sync"; [ "$(metric 'igw_presence_total{state="boot"}')" = "$boots0" ] || fail "$CASE"; ok
CASE="... nor move the newest boot"; [ "$(metric igw_presence_boot)" = "$BOOT1" ] || fail "$CASE: $(metric igw_presence_boot)"; ok
CASE="the forgeries were refused by the broker's ACL"
grep -q "publish igw/presence/device/$P/pres-2 denied" "$IGW_VAR/log/mosquitto.log" &&
    grep -q "publish \$presence/up/state/$P/pres-2 denied" "$IGW_VAR/log/mosquitto.log" || fail "$CASE"; ok

# ---- a broker restart ------------------------------------------------------------------------------
# pres-3 (mosquitto_sub) reconnects by itself; pres-1 (a raw client) never
# comes back: only the new boot can say it is gone.
python3 "$HOLD" "$IGW_MQTT_PORT" "$P&pres-1" "$(user pres-1)" "$(pass pres-1)" 60 >"$TMP/hold3" 2>&1 &
BGPIDS+=($!)
CASE="before the restart: pres-1 and pres-3 online"; wait_for 2 is pres-1 t && is pres-3 t || fail "$CASE"; ok
swept0=$(metric igw_presence_swept_total)
MQPID=$(cat "$IGW_VAR/mosquitto/mosquitto.pid")
kill -KILL "$MQPID"
wait_for 5 bash -c "! kill -0 $MQPID 2>/dev/null" || fail "mosquitto did not die"
sleep 1.1 # a new boot id (ms) that is surely later
"$ROOT/src/ops/services.sh" up >"$TMP/services2.log" 2>&1 || { cat "$TMP/services2.log" >&2; fail "services.sh up (broker restart)"; }
CASE="broker restarted: igwd sees the new boot"
wait_for 15 metric_gt igw_presence_boot "$BOOT1" || fail "$CASE: $(metric igw_presence_boot)"; ok
CASE="a device of the old boot that does not come back is offline"; wait_for 5 is pres-1 f || fail "$CASE: $(key pres-1)"; ok
CASE="... its key is the new boot (no fact of the old one applies any more)"
[ "$(key pres-1)" = "$(metric igw_presence_boot)/0" ] || fail "$CASE: $(key pres-1)"; ok
CASE="igw_presence_swept_total counts it"; [ "$(metric igw_presence_swept_total)" -gt "$swept0" ] || fail "$CASE"; ok
CASE="the device that reconnects is online again, of the new boot"
B2=$(metric igw_presence_boot)
of_boot() { [ "$(psql_q "SELECT online AND presence_boot = $2 FROM devices WHERE product_id = '$P' AND device_name = '$1'")" = t ]; }
wait_for 10 of_boot pres-3 "$B2" ||
    fail "$CASE: $(online pres-3) $(key pres-3)"; ok
CASE="an old boot's fact arriving late changes nothing"
admin_pub "igw/presence/device/$P/pres-1" "{\"state\":\"online\",\"boot\":$BOOT1,\"seq\":9999999,\"at\":1}"
sleep 1
is pres-1 f || fail "$CASE"; ok
kill -INT "$SUB3"; wait "$SUB3" 2>/dev/null
CASE="and offline again after its clean disconnect"; wait_for 2 is pres-3 f || fail "$CASE"; ok

igw_stop
grep -q "ERROR: \(Address\|Leak\)Sanitizer\|runtime error" "$TMP/igwd.err" && fail "sanitizer report"
echo "presence test: $checks checks passed"
