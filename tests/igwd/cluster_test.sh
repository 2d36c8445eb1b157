#!/usr/bin/env bash
# cluster_test.sh IGWD IGWCTL VCAM - three igwd nodes (c1, c2, c3) on one
# PostgreSQL, Redis and Mosquitto behind HAProxy (src/ops/services.sh
# balancer-up), as `make run NODES=3` runs them: a Chromium live view
# through the balancer (its commands spread over the nodes by round
# robin), then kill -9 of the node holding a second live view
# (tests/igwd/cluster_test.mjs), all under a steady load of device uplinks
# (HTTP through the balancer, MQTT through the broker's shared subscription)
# and application commands through the balancer. Then: every acknowledged
# uplink and command is stored exactly once, the killed node's share of the
# MQTT uplinks too (a survivor drained its broker session); the lost node's
# sessions ended nodeLost and its camera leg was let go (a survivor's bye);
# every node took commands; the killed node comes back with its id (a new
# epoch) and takes uplinks again. Own services, inside a network namespace.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" != --inside ]; then
    IGWD=$(realpath "${1:?usage: cluster_test.sh IGWD IGWCTL VCAM}")
    IGWCTL=$(realpath "${2:?usage: cluster_test.sh IGWD IGWCTL VCAM}")
    VCAM=$(realpath "${3:?usage: cluster_test.sh IGWD IGWCTL VCAM}")
    command -v node >/dev/null || { echo "cluster_test.sh: node is required" >&2; exit 1; }
    # shellcheck source=../media/lib.sh
    . "$ROOT/tests/media/lib.sh"
    media_playwright "${IGW_PW_DIR:-$(dirname "$IGWD")/pw-node}" || { echo "cluster_test.sh: playwright-core" >&2; exit 1; }
    WS_NODE_DIR=${WS_NODE_DIR:-$(dirname "$IGWD")/ws-node}
    if [ ! -d "$WS_NODE_DIR/node_modules/ws" ]; then
        npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$WS_NODE_DIR" ws@8.18.3 >&2 ||
            { echo "cluster_test.sh: npm install ws" >&2; exit 1; }
    fi
    export WS_NODE_DIR
    exec timeout -k 5 300 bash -c '. "$1/tests/media/lib.sh"; media_netns bash "$1/tests/igwd/cluster_test.sh" --inside "$2" "$3" "$4"' \
        sh "$ROOT" "$IGWD" "$IGWCTL" "$VCAM"
fi
IGWD=$2 IGWCTL=$3 VCAM=$4
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test cluster 25405 63805 18905
KEY=$IGW_VAR/jwt.key
LAPSE=3000
LB=127.0.0.1:18080 # this test's own network namespace: nothing else listens here
declare -A NPID NPORT

# start_node NAME: igwd NAME with the broker; its stderr in $TMP/NAME.err.
start_node() {
    : >"$TMP/$1.out"
    env -i PATH="$PATH" LSAN_OPTIONS="${LSAN_OPTIONS:-}" ASAN_OPTIONS="${ASAN_OPTIONS:-}" IGW_LISTEN=127.0.0.1:0 \
        IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_NODE_ID="$1" \
        IGW_NODE_HEARTBEAT_MS=500 IGW_NODE_LAPSE_MS=$LAPSE IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" \
        IGW_TALK_ENABLED=true IGW_TALK_MEMBERS=true IGW_IM_STANDIN=true \
        IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
        IGW_MQTT_CLIENT_ID="igwd-$1" IGW_MEDIA_ADDRESS="$IGW_NETNS_ADDR" IGW_LOG_LEVEL=info \
        "$IGWD" >"$TMP/$1.out" 2>>"$TMP/$1.err" &
    NPID[$1]=$!
    NPORT[$1]=$(igw_port "$TMP/$1.out" "${NPID[$1]}") || fail "igwd $1 did not start: $(tail -5 "$TMP/$1.err")"
}
stop_nodes() {
    for n in "${!NPID[@]}"; do [ -n "${NPID[$n]}" ] && kill -KILL "${NPID[$n]}" 2>/dev/null; done
    [ -n "${LOADS:-}" ] && kill $LOADS 2>/dev/null
    igw_services_test_down
}
trap stop_nodes EXIT
"$IGWCTL" grant --db "$IGW_PG_DSN" --user "$(j .otherUser.userId)" --product "$(j .device.productID)" \
    --device "$(j .device.deviceName)" >/dev/null || fail "grant 1002 the camera (a talk member)"
mkdir -p "$TMP/rec"
for n in c1 c2 c3; do start_node $n; done
"$ROOT/src/ops/services.sh" balancer-up "$LB" "${NPORT[c1]}" "${NPORT[c2]}" "${NPORT[c3]}" >"$TMP/lb.log" 2>&1 ||
    fail "balancer-up: $(cat "$TMP/lb.log")"
CASE="the balancer answers /readyz"
for _ in $(seq 50); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$LB/readyz")" = 200 ] && break; sleep 0.1; done
[ "$(curl -s -o /dev/null -w "%{http_code}" "http://$LB/readyz")" = 200 ] || fail "$CASE: $(curl -s -i "http://$LB/readyz"; cat "$TMP/lb.log"; curl -s -i "http://127.0.0.1:${NPORT[c1]}/readyz")"; ok

# ---- the load: until $TMP/stop exists ------------------------------------------
PID_=$(j .device.productID) DEV=$(j .device.deviceName) AUTH=$(j .device.authorization)
GP=$(j .gateway.productID) GD=$(j .gateway.deviceName) GU=$(j .gateway.username) GW=$(j .gateway.password)
TOKEN=$(j .user.token)
EP=$(curl -s -X POST -H "authorization: Bearer $TOKEN" "http://$LB/api/v1/im/interaction/endpoints/register" | jq -r .data.endpointId)
[ -n "$EP" ] && [ "$EP" != null ] || fail "endpoint for the load"
# uplinks over HTTP through the balancer: a token is acknowledged by its 200
http_load() {
    local i=0 code
    while [ ! -e "$TMP/stop" ]; do
        i=$((i + 1))
        code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 -H "authorization: $AUTH" -H 'content-type: application/json' \
            -d "{\"method\":\"report\",\"msgToken\":\"ch$i\",\"params\":{\"brightness\":$((i % 100))}}" \
            "http://$LB/api/v1/things/device/edge/send/thing/property")
        [ "$code" = 200 ] && echo "ch$i" >>"$TMP/http.acked"
        sleep 0.05
    done
}
# application commands through the balancer: accepted means durable
cmd_load() {
    local i=0 code
    while [ ! -e "$TMP/stop" ]; do
        i=$((i + 1))
        code=$(curl -s -o "$TMP/cmd.r" -w '%{http_code}' -m 5 -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
            -d "{\"endpointId\":\"$EP\",\"command\":{\"msgToken\":\"cc$i\",\"method\":\"device.propertyControl\",\"target\":{\"productID\":\"$PID_\",\"deviceName\":\"$DEV\"},\"params\":{\"properties\":{\"brightness\":$((i % 100))}}}}" \
            "http://$LB/api/v1/im/interaction/commands")
        [ "$code" = 200 ] && [ "$(jq -r .data.accepted "$TMP/cmd.r")" = true ] && echo "cc$i" >>"$TMP/cmd.acked"
        sleep 0.1
    done
}
# the gateway's reports over MQTT (QoS 1): the broker shares them between the nodes
mqtt_load() {
    local i=0
    while [ ! -e "$TMP/stop" ]; do
        i=$((i + 1))
        printf '{"method":"report","msgToken":"cm%d","params":{"online":true}}\n' "$i"
        echo "cm$i" >>"$TMP/mqtt.sent"
        sleep 0.05
    done | mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$GP&$GD" -u "$GU" -P "$GW" -q 1 -l \
        -t "\$thing/up/property/$GP/$GD" 2>>"$TMP/mqtt.err"
}
: >"$TMP/http.acked"; : >"$TMP/cmd.acked"; : >"$TMP/mqtt.sent"
http_load & LOADS=$!
cmd_load & LOADS="$LOADS $!"
mqtt_load & LOADS="$LOADS $!"

# ---- the sessions ------------------------------------------------------------------
PIDS="c1=${NPID[c1]} c2=${NPID[c2]} c3=${NPID[c3]}"
URLS="c1=http://127.0.0.1:${NPORT[c1]} c2=http://127.0.0.1:${NPORT[c2]} c3=http://127.0.0.1:${NPORT[c3]}"
if ! IGW_BASE=http://$LB IGW_VCAM=$VCAM IGW_DEMO=$DEMO IGW_PG_DSN=$IGW_PG_DSN IGW_NODE_PIDS=$PIDS IGW_NODE_URLS=$URLS \
    IGW_LAPSE_MS=$LAPSE IGW_REC_DIR=$TMP/rec IGW_SPEAKER_LOG=$TMP/speaker.jsonl \
    node "$ROOT/tests/igwd/cluster_test.mjs" >"$TMP/cluster.out" 2>"$TMP/cluster.err"; then
    cat "$TMP/cluster.out"
    grep -a "FAIL" "$TMP/cluster.err"; tail -n 20 "$TMP/cluster.err"
    for n in c1 c2 c3; do grep -A40 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/$n.err" >&2; done
    fail "cluster_test.mjs"
fi
cat "$TMP/cluster.out"
KILLED=$(sed -n 's/^KILLED //p' "$TMP/cluster.out")
wait "${NPID[$KILLED]}" 2>/dev/null
NPID[$KILLED]=

sleep 1
touch "$TMP/stop"
wait $LOADS 2>/dev/null
LOADS=

# once_each FILE SQL-TABLE-COUNT: every token of FILE in exactly one row.
stored_once() { # FILE SELECT-of-token-counts
    local want got
    want=$(sort -u "$1" | wc -l)
    sort -u "$1" | sed "s/.*/('&')/" | paste -sd, >"$TMP/tokens"
    got=$(psql_q "SELECT count(*) FILTER (WHERE n = 1), count(*) FILTER (WHERE n > 1), count(*) FILTER (WHERE n = 0)
                  FROM (SELECT t.tok, ($2) AS n FROM (VALUES $(cat "$TMP/tokens")) t(tok)) x")
    echo "$want $got"
}
CASE="uplinks over HTTP: every acknowledged one stored exactly once"
H=$(wc -l <"$TMP/http.acked")
[ "$H" -gt 20 ] || fail "$CASE: only $H acknowledged"
R=$(stored_once "$TMP/http.acked" "SELECT count(*) FROM device_messages m WHERE m.product_id = '$PID_' AND m.msg_token = t.tok")
[ "$R" = "$H $H|0|0" ] || fail "$CASE: acknowledged, once|twice+|never: $R"; ok
CASE="application commands: every accepted one stored exactly once"
C=$(wc -l <"$TMP/cmd.acked")
[ "$C" -gt 10 ] || fail "$CASE: only $C accepted"
R=$(stored_once "$TMP/cmd.acked" "SELECT count(*) FROM commands c WHERE c.endpoint_id = '$EP' AND c.msg_token = t.tok")
[ "$R" = "$C $C|0|0" ] || fail "$CASE: accepted, once|twice+|never: $R"; ok
CASE="a survivor drained the killed node's broker session"
grep -q "draining lost node $KILLED's broker session" "$TMP"/c?.err &&
    grep -q "drain of igwd-$KILLED: .* its subscriptions left" "$TMP"/c?.err || fail "$CASE: $(grep -h drain "$TMP"/c?.err)"; ok
CASE="uplinks over MQTT: every one published stored once, the killed node's share too (drained, the node still away)"
M=$(wc -l <"$TMP/mqtt.sent")
[ "$M" -gt 20 ] || fail "$CASE: only $M published"
for _ in $(seq 100); do
    R=$(stored_once "$TMP/mqtt.sent" "SELECT count(*) FROM device_messages m WHERE m.product_id = '$GP' AND m.msg_token = t.tok")
    [ "${R##*|}" = 0 ] && break
    sleep 0.1
done
echo "mqtt: published, once|twice+|never: $R"
[ "${R##*|}" = 0 ] || fail "$CASE: published, once|twice+|never: $R"; ok

# The killed node comes back with its id: a new epoch, back in the groups.
start_node "$KILLED"
CASE="the killed node comes back with a new epoch"
for _ in $(seq 50); do grep -q "node $KILLED: epoch 2" "$TMP/$KILLED.err" && break; sleep 0.1; done
grep -q "node $KILLED: epoch 2" "$TMP/$KILLED.err" || fail "$CASE: $(grep "node $KILLED" "$TMP/$KILLED.err")"; ok
CASE="uplinks reach the returned node again (its shared subscription renewed)"
for i in $(seq 30); do printf '{"method":"report","msgToken":"cr%d","params":{"online":true}}\n' "$i"; done |
    mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$GP&$GD" -u "$GU" -P "$GW" -q 1 -l -t "\$thing/up/property/$GP/$GD" ||
    fail "$CASE: mosquitto_pub"
for _ in $(seq 100); do [ "$(psql_q "SELECT count(*) FROM device_messages WHERE msg_token LIKE 'cr%'")" = 30 ] && break; sleep 0.1; done
[ "$(psql_q "SELECT count(*) FROM device_messages WHERE msg_token LIKE 'cr%'")" = 30 ] || fail "$CASE: not all 30 stored"
IN=$(curl -s "http://127.0.0.1:${NPORT[$KILLED]}/metrics" | sed -n 's/^igw_mqtt_messages_total{direction="in"} \([0-9]*\)$/\1/p')
[ "${IN:-0}" -gt 0 ] || fail "$CASE: the returned node got none of 30"; ok

CASE="the killed node's sessions ended nodeLost, none live"
[ "$(psql_q "SELECT count(*) FROM sessions WHERE owner_node = '$KILLED' AND owner_epoch = 1 AND state <> 'ended'")" = 0 ] &&
    [ "$(psql_q "SELECT count(*) FROM sessions WHERE owner_node = '$KILLED' AND owner_epoch = 1 AND reason = 'nodeLost'")" -ge 1 ] ||
    fail "$CASE: $(psql_q "SELECT session_id, owner_node, owner_epoch, state, reason FROM sessions")"; ok
CASE="its camera leg let go by a survivor (bye); the survivors' legs gone after their linger (leg_linger_ms 3000)"
grep -q "of lost node $KILLED: bye sent" "$TMP"/c?.err || fail "$CASE: no survivor said bye"
for _ in $(seq 80); do [ "$(psql_q "SELECT count(*) FROM legs")" = 0 ] && break; sleep 0.1; done
[ "$(psql_q "SELECT count(*) FROM legs")" = 0 ] || fail "$CASE: $(psql_q "SELECT * FROM legs")"; ok
CASE="every node took application commands through the balancer"
for n in c1 c2 c3; do
    grep -q '"route":"commands"' "$TMP/$n.err" || fail "$CASE: none on $n"
done; ok
CASE="no forward left unclaimed"
for _ in $(seq 30); do [ "$(psql_q "SELECT count(*) FROM forwards")" = 0 ] && break; sleep 0.2; done
[ "$(psql_q "SELECT count(*) FROM forwards")" = 0 ] || fail "$CASE: $(psql_q "SELECT forward_id, kind, owner_node FROM forwards")"; ok

"$ROOT/src/ops/services.sh" balancer-down >/dev/null
for n in c1 c2 c3; do
    CASE="$n: stops cleanly"
    kill -TERM "${NPID[$n]}"; wait "${NPID[$n]}" || fail "$CASE: exit $?"; NPID[$n]=; ok
done
for n in c1 c2 c3; do
    CASE="no sanitizer report in $n's log"
    ! grep -q 'ERROR: AddressSanitizer\|runtime error\|LeakSanitizer' "$TMP/$n.err" ||
        fail "$CASE: $(grep -A30 -m1 'Sanitizer\|runtime error' "$TMP/$n.err")"; ok
done
echo "cluster test: $checks checks passed"
