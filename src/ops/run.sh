#!/usr/bin/env bash
# run.sh - what `make run` does after building: the local services up (under
# $IGW_VAR, default var/), the demo camera (igw-vcam as the demo device),
# then igwd in the foreground; Ctrl-C stops igwd and the camera, `make stop`
# stops the services.
#
# NODES=N (make run NODES=3): N igwd nodes (node-1..N on the ports after
# IGW_LISTEN's, their logs in var/log/node-K.log) behind HAProxy on
# IGW_LISTEN (services.sh balancer-up): one URL, as one service. Ctrl-C
# stops the nodes and the balancer.
#
# igwd refuses IGW_* variables that name none of its settings (so a typo
# never leaves a default in place), while these scripts read their own
# IGW_VAR / IGW_*_PORT; igwd therefore starts with a clean environment that
# holds only its settings.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
var=${IGW_VAR:-$root/var}
listen=${IGW_LISTEN:-127.0.0.1:8080}
nodes=${NODES:-1}
[[ $nodes =~ ^[1-9]$ ]] || { echo "run.sh: NODES must be 1..9 (got '$nodes')" >&2; exit 2; }

"$root/src/ops/services.sh" up
# shellcheck disable=SC1091 # written by services.sh up
. "$var/env"

base="http://$listen"
IGW_VAR="$var" IGW_BASE_URL="$base" "$root/src/ops/provision.sh"
# Media on the address of the default route, so that a browser elsewhere
# (or here: Chromium gathers nothing on loopback) reaches the media core.
media=${IGW_MEDIA_ADDRESS:-$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')}
media=${media:-127.0.0.1}
# The demo camera: a real device on the broker (its log in var/log/vcam.log),
# recording one-minute segments under var/recordings for an hour
# (docs/recordings.md). It never outlives this run: --die-with-parent ends
# it when igwd (this shell, exec'd below) dies, however it dies; and a
# camera of an earlier run still alive (var/vcam.pid, its command line) is
# stopped first: two cameras with one client id would take the device's
# session from each other.
mkdir -p "$var/log" "$var/recordings"
pidfile=$var/vcam.pid
if [ -s "$pidfile" ]; then
    old=$(cat "$pidfile")
    # This var's camera only (its command line: a rebuilt binary's /proc exe reads "(deleted)").
    cmd=$([[ $old =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$old/cmdline" 2>/dev/null || true)
    if [[ $cmd == *igw-vcam*" --device-file $var/demo.json "* ]]; then
        echo "run.sh: stopping the demo camera of an earlier run (pid $old)" >&2
        kill -TERM "$old" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$old" 2>/dev/null || true
    fi
fi
"$root/build/igw-vcam" --die-with-parent --device-file "$var/demo.json" --address "$media" \
    --record-dir "$var/recordings" >>"$var/log/vcam.log" 2>&1 &
echo $! >"$pidfile"
# The browser console with the demo login and camera in the URL fragment
# (never sent to the server; console/README.md).
console=$(jq -r '"#token=\(.user.token|@uri)&product=\(.device.productID|@uri)&device=\(.device.deviceName|@uri)&camera=\(.camera.cameraId|@uri)"' \
    "$var/demo.json")
cat <<MSG

igw is starting at $base (Ctrl-C stops it; make stop stops the services)
  console:  $base/console/$console
  ready?    curl -s $base/readyz
  device:   curl -s -H "Authorization: \$(jq -r .device.authorization $var/demo.json)" -H 'content-type: application/json' -d '{"method":"report","msgToken":"t1","params":{"brightness":40}}' $base/api/v1/things/device/edge/send/thing/property
  upload:   curl -s -H "Authorization: \$(jq -r .device.authorization $var/demo.json)" -F file=@$root/README.md $base/api/v1/things/device/edge/upload-file
  decoder:  curl -s -X POST -H 'content-type: application/json' -d '{"endpointId":"e","limit":99}' $base/api/v1/im/interaction/events
  metrics:  curl -s $base/metrics
  camera:   the demo camera $(jq -r .camera.cameraId "$var/demo.json") runs as build/igw-vcam (var/log/vcam.log), recording into $var/recordings; media on $media
  ring:     kill -USR1 \$(cat $pidfile)   (the demo camera's door-bell: the console rings, Accept or Decline; docs/doorbell.md)
Services: PostgreSQL $IGW_PG_DSN, Redis $IGW_REDIS_HOST:$IGW_REDIS_PORT, MQTT $IGW_MQTT_HOST:$IGW_MQTT_PORT
Demo tenant, login token and device credentials: $var/demo.json

MSG
# igwd's settings, the same for every node.
igwd_env=(env -i PATH="$PATH" HOME="${HOME:-/root}" IGW_PG_DSN="$IGW_PG_DSN"
    IGW_REDIS_HOST="$IGW_REDIS_HOST" IGW_REDIS_PORT="$IGW_REDIS_PORT"
    IGW_MQTT_HOST="$IGW_MQTT_HOST" IGW_MQTT_PORT="$IGW_MQTT_PORT"
    IGW_MQTT_USERNAME="$IGW_MQTT_USER" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE"
    IGW_STORAGE_ROOT="$var/storage" IGW_URL_KEY_FILE="$var/url.key" IGW_PUBLIC_URL="$base"
    IGW_JWT_KEY_FILE="$var/jwt.key" IGW_MEDIA_ADDRESS="$media" IGW_CONSOLE_DIR="$root/console"
    IGW_TALK_ENABLED=true IGW_TALK_MEMBERS=true IGW_IM_STANDIN=true)
if [ "$nodes" = 1 ]; then
    "$root/src/ops/services.sh" balancer-down >/dev/null # one of an earlier NODES=N run would hold the port
    exec "${igwd_env[@]}" IGW_LISTEN="$listen" "$root/build/igwd"
fi

# Several nodes: each its own port, node id and broker client id (the
# broker shares the uplinks between them), the balancer in front.
host=${listen%:*} port=${listen##*:}
pids=() ports=()
stop_nodes() {
    trap - INT TERM EXIT
    [ ${#pids[@]} -gt 0 ] && kill -TERM "${pids[@]}" 2>/dev/null
    wait "${pids[@]}" 2>/dev/null
    "$root/src/ops/services.sh" balancer-down >/dev/null
}
trap stop_nodes EXIT
trap 'exit 130' INT TERM
for k in $(seq "$nodes"); do
    p=$((port + k))
    ports+=("$p")
    "${igwd_env[@]}" IGW_LISTEN="$host:$p" IGW_NODE_ID="node-$k" IGW_MQTT_CLIENT_ID="igwd-node-$k" \
        "$root/build/igwd" >>"$var/log/node-$k.log" 2>&1 &
    pids+=($!)
    echo "run.sh: node-$k (pid $!) on $host:$p, its log $var/log/node-$k.log"
done
"$root/src/ops/services.sh" balancer-up "$listen" "${ports[@]}"
echo "run.sh: $nodes nodes behind $base (Ctrl-C stops them; kill -9 one to see the others take over)"
# Until every node has gone (one killed, the others serve on).
wait "${pids[@]}" || true
