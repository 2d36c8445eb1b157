#!/usr/bin/env bash
# vcam_mqtt.sh HOST VCAM - igw-vcam (VCAM) as an MQTT device against a platform
# played by tests/media/vcam_mqtt.py: a plain Mosquitto on port 18901
# (anonymous, no auth plugin; config and logs under build/vcam-mqtt/), a raw
# MQTT client (tests/mqttauth/mqttraw.py) and igw-media-host (HOST, the media
# core under sanitizers) answering the camera's offers. No browser: the media
# core counts what arrives. Runs in the host's network namespace (loopback).
# VCAM_MQTT_PORT changes the port (e.g. for a second run beside this one).
# Exits non-zero on any failure; the .py prints "vcam mqtt: N checks passed".
set -u
HOST=${1:?usage: vcam_mqtt.sh HOST VCAM}
VCAM=${2:?usage: vcam_mqtt.sh HOST VCAM}
HERE=$(cd "$(dirname "$0")" && pwd)
PORT=${VCAM_MQTT_PORT:-18901}
RUN_SECONDS=180
fail() { echo "vcam_mqtt.sh: FAIL: $*" >&2; exit 1; }
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
[ -x "$HOST" ] && [ -x "$VCAM" ] || fail "$HOST or $VCAM is not an executable"
HOST=$(abs "$HOST")
VCAM=$(abs "$VCAM")
command -v mosquitto >/dev/null || fail "mosquitto is required (make deps)"
command -v python3 >/dev/null || fail "python3 is required (make deps)"
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    fail "port $PORT is in use (another run of this test?)"
fi

. "$HERE/lib.sh"
DIR=$(dirname "$VCAM")/vcam-mqtt
rm -rf "$DIR" && mkdir -p "$DIR" || fail "cannot make $DIR"
media_sanitizers "$DIR" || fail "sanitizer options"
timeout -k 5 "$RUN_SECONDS" python3 "$HERE/vcam_mqtt.py" "$DIR" "$PORT" "$HOST" "$VCAM" ||
    fail "vcam_mqtt.py exited $? (logs: $DIR)"
