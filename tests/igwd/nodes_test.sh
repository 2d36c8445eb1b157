#!/usr/bin/env bash
# nodes_test.sh IGWD IGWCTL - two igwd nodes on one broker share the device
# uplinks (the plugin's relay topics, one shared subscription): the demo
# device publishes K QoS 1 reports with distinct msgTokens over MQTT with its
# own credentials; every msgToken is stored in device_messages exactly once,
# both nodes took part (their igw_mqtt_messages_total{direction="in"} are
# both non-zero and add up to K) and the device got K replies. Then node B
# stops (SIGTERM): its share of what the device publishes meanwhile waits in
# B's session and is stored, exactly once, when B comes back. Brings up its
# own PostgreSQL, Redis and Mosquitto (own ports and directory).
set -u
IGWD=$(realpath "${1:?usage: nodes_test.sh IGWD IGWCTL}")
IGWCTL=$(realpath "${2:?usage: nodes_test.sh IGWD IGWCTL}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test nodes "${NODES_PG_PORT:-25394}" "${NODES_REDIS_PORT:-63794}" "${NODES_MQTT_PORT:-18894}"
K=${NODES_K:-200}
PID_=$(j .device.productID) DEV=$(j .device.deviceName) MU=$(j .device.username) MP=$(j .device.password)
PID_B=

# start_node NAME: igwd with client id igwd-nodes-NAME; its stderr in
# $TMP/igwd.err (node a, shown by fail) or $TMP/igwd-NAME.err; pid in PID or PID_B.
start_node() {
    local err=$TMP/igwd.err out=$TMP/igwd-$1.out pid port
    [ "$1" = a ] || err=$TMP/igwd-$1.err
    : >"$out"
    env -i PATH="$PATH" LSAN_OPTIONS="$LSAN_OPTIONS" ASAN_OPTIONS="${ASAN_OPTIONS:-}" \
        IGW_LISTEN=127.0.0.1:0 IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" \
        IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" \
        IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
        IGW_MQTT_CLIENT_ID="igwd-nodes-$1" IGW_STORAGE_ROOT="$TMP/storage" \
        "$IGWD" >"$out" 2>>"$err" &
    pid=$!
    port=$(igw_port "$out" "$pid") || fail "igwd node $1 did not start"
    for _ in $(seq 100); do grep -q "mqtt: connected to" "$err" && break; sleep 0.1; done
    grep -q "mqtt: connected to" "$err" || fail "igwd node $1 did not connect to the broker"
    if [ "$1" = a ]; then PID=$pid PORT_A=$port; else PID_B=$pid PORT_B=$port; fi
}
stop_b() { [ -n "$PID_B" ] && { kill -TERM "$PID_B"; wait "$PID_B"; local rc=$?; PID_B=; return $rc; }; }
trap 'stop_b >/dev/null 2>&1; igw_services_test_down' EXIT

mqtt_in() { # PORT: the node's uplinks received
    curl -s "http://127.0.0.1:$1/metrics" | sed -n 's/^igw_mqtt_messages_total{direction="in"} \([0-9]*\)$/\1/p'
}
stored() { psql_q "SELECT count(*) FROM device_messages WHERE msg_token LIKE '$1%'"; }
wait_stored() { # PREFIX N: up to 30 s
    for _ in $(seq 300); do [ "$(stored "$1")" -ge "$2" ] && return 0; sleep 0.1; done
    return 1
}
# publish PREFIX N: N reports PREFIX1..PREFIXN over one QoS 1 connection of the device.
publish() {
    for i in $(seq "$2"); do
        printf '{"method":"report","msgToken":"%s%d","params":{"brightness":%d}}\n' "$1" "$i" $((i % 100))
    done | mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&$DEV" -u "$MU" -P "$MP" -q 1 -l \
        -t "\$thing/up/property/$PID_/$DEV"
}
once_each() { # PREFIX N: N distinct tokens, each in one row
    local got
    got=$(psql_q "SELECT count(DISTINCT msg_token) || ' ' || count(*) FROM device_messages WHERE msg_token LIKE '$1%'")
    [ "$got" = "$2 $2" ] || fail "$CASE: distinct tokens and rows: $got, want $2 $2 (duplicates: \
$(psql_q "SELECT string_agg(msg_token, ',') FROM (SELECT msg_token FROM device_messages WHERE msg_token LIKE '$1%' GROUP BY msg_token HAVING count(*) > 1 ORDER BY msg_token LIMIT 10) d")...)"
    ok
}

start_node a
start_node b

# ---- K uplinks over two nodes -----------------------------------------------------------
# igwd's user listens to the device's replies while it publishes (the
# device's one client id is busy publishing).
mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i nodes-listen -u "$IGW_MQTT_USER" -P "$IGW_MQTT_PASSWORD" -q 1 -C "$K" -W 60 \
    -t "\$thing/down/property/$PID_/$DEV" >"$TMP/replies" 2>&1 &
SUBPID=$!
sleep 0.5
CASE="device publishes $K reports"; publish nodes-n "$K" || fail "$CASE: mosquitto_pub"; ok
CASE="all $K stored"; wait_stored nodes-n "$K" || fail "$CASE: $(stored nodes-n) stored"; ok
sleep 0.5 # a duplicate, were there one, would land now
CASE="each msgToken stored exactly once"; once_each nodes-n "$K"
a=$(mqtt_in "$PORT_A") b=$(mqtt_in "$PORT_B")
CASE="both nodes took part"; [ "${a:-0}" -gt 0 ] && [ "${b:-0}" -gt 0 ] || fail "$CASE: node a $a, node b $b"; ok
CASE="the nodes' uplinks add up to $K"; [ $((a + b)) = "$K" ] || fail "$CASE: $a + $b"; ok
echo "nodes test: $K uplinks: node a $a, node b $b"
wait "$SUBPID" 2>/dev/null; SUBPID=
CASE="one reply per uplink"; [ "$(grep -c '"method":"reportReply"' "$TMP/replies")" = "$K" ] ||
    fail "$CASE: $(grep -c reportReply "$TMP/replies") replies"; ok

# ---- a node away: its share waits in its session ------------------------------------------
CASE="node b stops cleanly"; stop_b || fail "$CASE"; ok
publish nodes-w 20 || fail "mosquitto_pub while node b is away"
wait_stored nodes-w 10 || fail "node a's share not stored: $(stored nodes-w)"
sleep 1
CASE="while b is away, a stores its share only"; [ "$(stored nodes-w)" = 10 ] || fail "$CASE: $(stored nodes-w) of 20 stored"; ok
: >"$TMP/igwd-b.err"
start_node b
CASE="b's share stored when it is back"; wait_stored nodes-w 20 || fail "$CASE: $(stored nodes-w) of 20"; ok
sleep 0.5
CASE="each of them once"; once_each nodes-w 20

# ---- clean stop ----------------------------------------------------------------------------
CASE="node b stops cleanly again"; stop_b || fail "$CASE"; ok
kill -TERM "$PID"; wait "$PID"; rc=$?; PID=
[ $rc = 0 ] || fail "igwd node a exit $rc after SIGTERM"
grep -q "ERROR: \(Address\|Leak\)Sanitizer\|runtime error" "$TMP/igwd.err" "$TMP/igwd-b.err" && fail "sanitizer report"
echo "nodes test: $checks checks passed"
