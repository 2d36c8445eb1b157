#!/usr/bin/env bash
# mqtt_test.sh TEST_BIN [PLUGIN_SO] - igwd's MQTT client (src/igwd/mqtt.c)
# against real services: src/ops/services.sh up in a throwaway IGW_VAR on
# its own ports (PostgreSQL 18890, Redis 18891, Mosquitto 18892 or the next
# free ones; once more on random ports if that fails), Mosquitto loading the
# auth plugin (PLUGIN_SO, default build/igw-mqtt-auth.so: `make
# build/igw-mqtt-auth.so`). Provisions with
# igwctl ($IGWCTL, default build/igwctl) an enterprise, a product with the
# demo model, a device, a gateway and a sub-device bound to it, then runs
# TEST_BIN (tests/igwd/mqtt_test.c) with the credentials in its environment.
# Exit 0 when every check passed. Always stops the services and removes
# its directory.
set -euo pipefail

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 TEST_BIN [PLUGIN_SO]" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(realpath "$1")
so=$(realpath -m "${2:-$root/build/igw-mqtt-auth.so}")
ctl=$(realpath -m "${IGWCTL:-$root/build/igwctl}")
svc=$root/src/ops/services.sh
[ -x "$bin" ] || { echo "mqtt_test: no test binary at $1" >&2; exit 2; }
[ -f "$so" ] || { echo "mqtt_test: no plugin at $so (make build/igw-mqtt-auth.so)" >&2; exit 2; }
[ -x "$ctl" ] || { echo "mqtt_test: no igwctl at $ctl (make build/igwctl)" >&2; exit 2; }
command -v node >/dev/null || { echo "mqtt_test: node not found (make deps)" >&2; exit 2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # FIRST: FIRST or the next port nobody listens on
    local p=$1
    while port_open "$p"; do p=$((p + 1)); done
    echo "$p"
}
export IGW_PG_PORT IGW_REDIS_PORT IGW_MQTT_PORT
# Below the kernel's ephemeral range (32768..), where an outgoing connection
# can hold a port that looks free.
IGW_PG_PORT=$(free_port 18890)
IGW_REDIS_PORT=$(free_port $((IGW_PG_PORT + 1)))
IGW_MQTT_PORT=$(free_port $((IGW_REDIS_PORT + 1)))
export IGW_DB=igw_mqtt_test IGW_MQTT_PLUGIN=$so

tmp=$(mktemp -d "${TMPDIR:-/tmp}/igw-mqtt.XXXXXX")
chmod 0755 "$tmp" # the postgres user must traverse it when run as root
export IGW_VAR=$tmp/var
cleanup() {
    local rc=$?
    "$svc" down >/dev/null 2>&1 || true
    rm -rf "$tmp" "/tmp/igw-$(printf %s "$IGW_VAR" | sha256sum | cut -c1-12)"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
start=$SECONDS

# A port found free can be taken by a concurrent test before the server
# binds it: then once more on random free ports, from scratch.
up_out=$tmp/up.out
if ! "$svc" up >"$up_out" 2>&1; then
    up_out=$tmp/up2.out
    "$svc" down >/dev/null 2>&1 || true
    rm -rf "$IGW_VAR"
    IGW_PG_PORT=$(free_port $((20000 + RANDOM % 12000)))
    IGW_REDIS_PORT=$(free_port $((IGW_PG_PORT + 1)))
    IGW_MQTT_PORT=$(free_port $((IGW_REDIS_PORT + 1)))
    if ! "$svc" up >"$up_out" 2>&1; then
        cat "$tmp/up.out" "$tmp/up2.out"
        echo "mqtt_test: services did not start"
        exit 1
    fi
fi
grep -q "mosquitto auth: plugin" "$up_out" || { cat "$up_out"; echo "mqtt_test: plugin not loaded"; exit 1; }
# shellcheck disable=SC1091 # written by services.sh up
. "$IGW_VAR/env"
export IGW_PG_DSN

run() { # igwctl ARGS...: its JSON on stdout, or the error and exit 1
    local out
    if ! out=$("$ctl" "$@" 2>"$tmp/ctl.err"); then
        echo "mqtt_test: igwctl $* failed: $(cat "$tmp/ctl.err")" >&2
        exit 1
    fi
    printf '%s' "$out"
}
field() { node -e 'process.stdout.write(String(JSON.parse(process.argv[1])[process.argv[2]]))' "$1" "$2"; }

P=mqttprod01 G=mqttgw01
printf '%s\n' '{"properties":[{"identifier":"online","name":"Online","mode":"r","define":{"type":"bool"}}],"events":[],"actions":[]}' \
    >"$tmp/gateway-model.json"
run enterprise add --id 1 --name 'MQTT test' >/dev/null
run product add --id "$P" --enterprise 1 --name 'MQTT test product' --model "$root/tests/lib/demo-model.json" >/dev/null
run product add --id "$G" --enterprise 1 --name 'MQTT test gateway' --model "$tmp/gateway-model.json" >/dev/null
dev=$(run device add --product "$P" --device dev-1)
gw=$(run device add --product "$G" --device gw-1 --gateway)
run device add --product "$P" --device sub-1 >/dev/null
run gateway bind --gateway-product "$G" --gateway-device gw-1 --product "$P" --device sub-1 >/dev/null

# The password igwd uses is the one in mosquitto/igwd.secret (also in env).
secret=$(head -n 1 "$IGW_VAR/mosquitto/igwd.secret")
[ "$secret" = "$IGW_MQTT_PASSWORD" ] || { echo "mqtt_test: igwd.secret and env disagree"; exit 1; }

rc=0
TEST_TMP=$tmp MQTT_HOST=$IGW_MQTT_HOST MQTT_PORT=$IGW_MQTT_PORT MQTT_USER=$IGW_MQTT_USER \
    MQTT_PASSWORD=$secret \
    DEV_PID=$(field "$dev" productID) DEV_DN=$(field "$dev" deviceName) \
    DEV_USER=$(field "$dev" username) DEV_PASS=$(field "$dev" password) \
    GW_PID=$(field "$gw" productID) GW_DN=$(field "$gw" deviceName) \
    GW_USER=$(field "$gw" username) GW_PASS=$(field "$gw" password) \
    SUB_PID=$P SUB_DN=sub-1 \
    "$bin" || rc=$?
if [ "$rc" -ne 0 ]; then
    echo "---- mosquitto log (last 30 lines) ----"
    tail -n 30 "$IGW_VAR/log/mosquitto.log" 2>/dev/null || true
fi
# Every stop of the client sent DISCONNECT after its PUBACKs (no RST, no
# "closed its connection"): the broker keeps the session, nothing repeats.
unclean=$(grep -c 'igwd-mqtt-test-[0-9]* closed its connection' "$IGW_VAR/log/mosquitto.log" || true)
if [ "$unclean" -eq 0 ]; then
    echo "ok   broker log: every stop of the client was a clean DISCONNECT"
else
    echo "FAIL broker log: $unclean unclean disconnect(s) of the client"
    rc=1
fi
echo "mqtt_test.sh: exit $rc ($((SECONDS - start))s)"
exit "$rc"
