#!/usr/bin/env bash
# plugin_test.sh PLUGIN_SO - the Mosquitto auth plugin (src/mqttauth/) against
# a real PostgreSQL (src/ops/services.sh on free ports in a throwaway
# IGW_VAR) and its own Mosquitto loading the plugin. Devices are inserted
# with psql; credentials come from tests/mqttauth/sign.c (built here with
# cc, src/lib/devauth.c, base64.c and -lcrypto). Checks: good credentials connect
# and publish to their own up topic; bad secret, expired username, another
# device's username, mismatched clientID, wrong admin password are refused;
# publishing to another device's topic is not delivered; subscribing to the
# own down topic works, to another device's (or a wildcard) gets nothing;
# a gateway publishes for its bound sub-device but not for an unbound one.
# Exit 0 when every check passed, 1 otherwise. Always cleans up.
# shellcheck disable=SC2016 # MQTT topics start with a literal $
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 PLUGIN_SO" >&2; exit 2; }
so=$(realpath "$1")
[ -f "$so" ] || { echo "plugin_test: no plugin at $1" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
svc=$root/src/ops/services.sh
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # DESCRIPTION CMD...
    local what=$1
    shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports=()
# Below the kernel's ephemeral range (32768+), so no outgoing connection of
# another process can hold the port between this check and the bind.
p=$((20000 + RANDOM % 12000))
while [ ${#ports[@]} -lt 4 ]; do
    port_open "$p" || ports+=("$p")
    p=$((p + 1))
done
export IGW_PG_PORT=${ports[0]} IGW_REDIS_PORT=${ports[1]} IGW_MQTT_PORT=${ports[2]}
export IGW_DB=igw_mqttauth
mport=${ports[3]}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/igw-mqttauth.XXXXXX")
chmod 0755 "$tmp" # the postgres user must traverse it when run as root
export IGW_VAR=$tmp/var
mq_pid=
sub_pid=
cleanup() {
    local rc=$?
    # Under set -e a failing kill or wait would end the cleanup half way.
    if [ -n "$sub_pid" ]; then kill "$sub_pid" 2>/dev/null || true; fi
    if [ -n "$mq_pid" ]; then
        kill "$mq_pid" 2>/dev/null && wait "$mq_pid" 2>/dev/null || true
    fi
    "$svc" down >/dev/null 2>&1 || true
    rm -rf "$tmp" "/tmp/igw-$(printf %s "$IGW_VAR" | sha256sum | cut -c1-12)"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

summary() {
    echo "plugin_test: $pass passed, $fail failed ($((SECONDS - start))s)"
    [ "$fail" -eq 0 ]
}
start=$SECONDS

# ---- setup --------------------------------------------------------------------
cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -O1 -I"$root/src/rt" -I"$root/src/lib" \
    -o "$tmp/sign" "$root/tests/mqttauth/sign.c" "$root/src/lib/devauth.c" "$root/src/rt/base64.c" -lcrypto

if ! "$svc" up >"$tmp/up.out" 2>&1; then
    cat "$tmp/up.out"
    bad "services.sh up"
    summary
    exit 1
fi
# shellcheck disable=SC1091
. "$IGW_VAR/env"
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$IGW_PG_DSN" "$@"; }
newsecret() { head -c 20 /dev/urandom | base64; }
s_dev=$(newsecret) s_gw=$(newsecret) s_sub=$(newsecret) s_loose=$(newsecret)
P=Prod1
sql -v s_dev="$s_dev" -v s_gw="$s_gw" -v s_sub="$s_sub" -v s_loose="$s_loose" <<'EOF'
INSERT INTO enterprises (enterprise_id, name) VALUES (1, 'test');
INSERT INTO products (product_id, enterprise_id, name, model) VALUES ('Prod1', 1, 'p', '{}');
INSERT INTO devices (product_id, device_name, enterprise_id, secret, is_gateway,
                     gateway_product_id, gateway_device_name) VALUES
    ('Prod1', 'dev1', 1, :'s_dev', false, NULL, NULL),
    ('Prod1', 'gw1', 1, :'s_gw', true, NULL, NULL),
    ('Prod1', 'sub1', 1, :'s_sub', false, 'Prod1', 'gw1'),
    ('Prod1', 'loose1', 1, :'s_loose', false, NULL, NULL);
EOF

mq=$tmp/mq
mkdir -p "$mq"
admin_pw=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
(umask 077 && printf '%s\n' "$admin_pw" >"$mq/admin.secret")
cat >"$mq/mosquitto.conf" <<EOF
per_listener_settings false
listener $mport 127.0.0.1
allow_anonymous false
plugin $so
plugin_opt_dsn $IGW_PG_DSN
plugin_opt_admin_user igwd
plugin_opt_admin_password_file $mq/admin.secret
persistence false
log_dest file $mq/mosquitto.log
log_type all
user $(id -un)
EOF
mosquitto -c "$mq/mosquitto.conf" >"$mq/stderr" 2>&1 &
mq_pid=$!

A=(-h 127.0.0.1 -p "$mport" -u igwd -P "$admin_pw")
ready=0
for _ in $(seq 50); do
    if mosquitto_sub "${A[@]}" -i ready-check -t 'igw/ready' -E -W 2 >/dev/null 2>&1; then
        ready=1
        break
    fi
    kill -0 "$mq_pid" 2>/dev/null || break
    sleep 0.1
done
if [ "$ready" -ne 1 ]; then
    cat "$mq/stderr" "$mq/mosquitto.log" 2>/dev/null | tail -n 20 || true
    bad "mosquitto with the plugin starts and admits igwd"
    summary
    exit 1
fi
ok "mosquitto with the plugin starts and admits igwd"

# creds DEVICE [EXPIRY [SECRET]]: sets U and W (username, password) for
# Prod1/DEVICE, signed with its secret (or SECRET), expiring in an hour.
creds() {
    local secret out
    case $1 in
        dev1) secret=$s_dev ;; gw1) secret=$s_gw ;; sub1) secret=$s_sub ;; loose1) secret=$s_loose ;;
        *) secret=$(newsecret) ;;
    esac
    out=$("$tmp/sign" "$P" "$1" "${3:-$secret}" "${2:-$(($(date +%s) + 3600))}")
    U=${out%%$'\n'*}
    W=${out#*$'\n'}
}
# pub CLIENTID USER PASS TOPIC PAYLOAD: QoS 1 publish; output in $tmp/pub.err
pub() {
    mosquitto_pub -h 127.0.0.1 -p "$mport" -i "$1" -u "$2" -P "$3" -t "$4" -m "$5" -q 1 \
        >"$tmp/pub.err" 2>&1
}
refused() { # CLIENTID USER PASS: the connection is refused as not authorised
    ! pub "$1" "$2" "$3" "\$thing/up/property/$P/dev1" "refused-$RANDOM" \
        && grep -qi 'not authori' "$tmp/pub.err"
}

# One igwd subscriber sees every uplink; a barrier message published by igwd
# after a step proves the broker handled that step before we look.
mosquitto_sub "${A[@]}" -i igwd-watch -v -t '$thing/#' -t '$ext/#' -t 'igw/#' >"$tmp/seen" 2>&1 &
sub_pid=$!
nbar=0
barrier() {
    nbar=$((nbar + 1))
    for _ in $(seq 30); do
        mosquitto_pub "${A[@]}" -i igwd-barrier -t '$ext/barrier/x/y' -m "barrier-$nbar" -q 1
        grep -q "barrier-$nbar\$" "$tmp/seen" && return 0
        sleep 0.1
    done
    echo "barrier $nbar never arrived" >&2
    return 1
}
seen() { grep -qxF "$1 $2" "$tmp/seen"; } # TOPIC PAYLOAD
check "igwd subscriber is live" barrier

# ---- authentication ---------------------------------------------------------------
creds dev1
check "device with good credentials publishes to its own up topic" \
    pub "$P&dev1" "$U" "$W" "\$thing/up/property/$P/dev1" up-own-1
barrier
check "... and the igwd subscriber receives it" seen "\$thing/up/property/$P/dev1" up-own-1
check "... on another handle (\$ext) too" pub "$P&dev1" "$U" "$W" "\$ext/up/custom_1/$P/dev1" up-own-2
barrier
check "... and it arrives" seen "\$ext/up/custom_1/$P/dev1" up-own-2
check "... each relayed to igw/<handle>/up/... (igwd's shared subscription)" \
    bash -c "grep -qxF 'igw/thing/up/property/$P/dev1 up-own-1' '$tmp/seen' && grep -qxF 'igw/ext/up/custom_1/$P/dev1 up-own-2' '$tmp/seen'"

check "good username with a mismatched clientID is refused" refused "$P&gw1" "$U" "$W"
check "good credentials with a clientID that is not {productID}&{deviceName} are refused" \
    refused "dev1" "$U" "$W"
creds dev1 "" "$(newsecret)"
check "wrong secret is refused" refused "$P&dev1" "$U" "$W"
creds dev1 $(($(date +%s) - 5))
check "expired username (correctly signed) is refused" refused "$P&dev1" "$U" "$W"
creds loose1
check "another device's valid credentials with own clientID are refused" refused "$P&dev1" "$U" "$W"
check "that device's credentials with its own clientID are accepted (control)" \
    pub "$P&loose1" "$U" "$W" "\$thing/up/property/$P/loose1" loose-ok
creds dev1
flipped=$(printf %s "$W" | cut -c1 | tr 0-9a-f 1-9a-f0)$(printf %s "$W" | cut -c2-)
check "a tampered signature is refused" refused "$P&dev1" "$U" "$flipped"
creds nobody
check "an unknown device is refused" refused "$P&nobody" "$U" "$W"
check "igwd with a wrong password is refused" refused igwd-x igwd "$admin_pw-x"
check "no username is refused" bash -c "! mosquitto_pub -h 127.0.0.1 -p $mport -i x -t t -m m 2>/dev/null"

# ---- publish ACL --------------------------------------------------------------------
creds dev1
pub "$P&dev1" "$U" "$W" "\$thing/up/property/$P/loose1" up-foreign-1 || true
pub "$P&dev1" "$U" "$W" "\$thing/down/property/$P/dev1" down-by-device-1 || true
pub "$P&dev1" "$U" "$W" "\$thing/up/property/$P/dev1/extra" up-extra-1 || true
pub "$P&dev1" "$U" "$W" "\$bogus/up/property/$P/dev1" up-bogus-1 || true
pub "$P&dev1" "$U" "$W" "igw/thing/up/property/$P/dev1" relay-forged-1 || true
barrier
check "device publishing on a relay topic itself: not delivered" \
    bash -c "! grep -q relay-forged-1 '$tmp/seen'"
check "refused publishes are not relayed either" \
    bash -c "! grep -q -e up-foreign-1 -e down-by-device-1 -e up-extra-1 -e up-bogus-1 '$tmp/seen'"
check "device publishing to another device's up topic: not delivered" \
    bash -c "! grep -q up-foreign-1 '$tmp/seen'"
check "device publishing to its own down topic: not delivered" \
    bash -c "! grep -q down-by-device-1 '$tmp/seen'"
check "device publishing with an extra topic level: not delivered" \
    bash -c "! grep -q up-extra-1 '$tmp/seen'"

# ---- subscribe ACL --------------------------------------------------------------------
mosquitto_pub "${A[@]}" -i igwd-r1 -r -q 1 -t "\$thing/down/property/$P/dev1" -m down-own-1
mosquitto_pub "${A[@]}" -i igwd-r2 -r -q 1 -t "\$thing/down/property/$P/loose1" -m down-loose-1
subget() { # CLIENTID USER PASS TOPIC: messages received in 2 s
    mosquitto_sub -h 127.0.0.1 -p "$mport" -i "$1" -u "$2" -P "$3" -t "$4" -W 2 -C 1 2>/dev/null || true
}
check "igwd receives the retained downlinks (control)" \
    test "$(subget igwd-r3 igwd "$admin_pw" "\$thing/down/property/$P/loose1")" = down-loose-1
check "device subscribing to its own down topic receives igwd's message" \
    test "$(subget "$P&dev1" "$U" "$W" "\$thing/down/property/$P/dev1")" = down-own-1
check "device subscribing with + as type receives it too" \
    test "$(subget "$P&dev1" "$U" "$W" "\$thing/down/+/$P/dev1")" = down-own-1
check "device subscribing to another device's down topic receives nothing" \
    test -z "$(subget "$P&dev1" "$U" "$W" "\$thing/down/property/$P/loose1")"
check "device subscribing to \$thing/down/property/$P/+ receives nothing" \
    test -z "$(subget "$P&dev1" "$U" "$W" "\$thing/down/property/$P/+")"
check "device subscribing to \$thing/# receives nothing" \
    test -z "$(subget "$P&dev1" "$U" "$W" '$thing/#')"

# A live (not retained) downlink reaches the device.
mosquitto_sub -h 127.0.0.1 -p "$mport" -i "$P&dev1" -u "$U" -P "$W" \
    -t "\$thing/down/action/$P/dev1" -C 1 -W 5 >"$tmp/live" 2>&1 &
live_pid=$!
for _ in $(seq 40); do
    mosquitto_pub "${A[@]}" -i igwd-live -q 1 -t "\$thing/down/action/$P/dev1" -m down-live-1
    [ -s "$tmp/live" ] && break
    sleep 0.1
done
wait "$live_pid" || true
check "device receives a live downlink on its own action topic" test "$(cat "$tmp/live")" = down-live-1

# ---- gateway ---------------------------------------------------------------------------
creds gw1
check "gateway publishes for itself" pub "$P&gw1" "$U" "$W" "\$gateway/up/operation/$P/gw1" gw-self-1
check "gateway publishes for its bound sub-device" \
    pub "$P&gw1" "$U" "$W" "\$thing/up/property/$P/sub1" gw-sub-1
pub "$P&gw1" "$U" "$W" "\$thing/up/property/$P/loose1" gw-loose-1 || true
barrier
check "... the bound sub-device's message arrives" seen "\$thing/up/property/$P/sub1" gw-sub-1
check "... the unbound device's message does not" bash -c "! grep -q gw-loose-1 '$tmp/seen'"
mosquitto_pub "${A[@]}" -i igwd-r4 -r -q 1 -t "\$thing/down/property/$P/sub1" -m down-sub-1
check "gateway subscribes to its sub-device's down topic" \
    test "$(subget "$P&gw1" "$U" "$W" "\$thing/down/property/$P/sub1")" = down-sub-1
check "gateway cannot subscribe to an unbound device's down topic" \
    test -z "$(subget "$P&gw1" "$U" "$W" "\$thing/down/property/$P/loose1")"
creds dev1
pub "$P&dev1" "$U" "$W" "\$thing/up/property/$P/sub1" dev-sub-1 || true
barrier
check "a non-gateway cannot publish for someone else's sub-device" \
    bash -c "! grep -q dev-sub-1 '$tmp/seen'"

# ---- database outage ---------------------------------------------------------------
# sub1 never connected, so its secret is not cached: with PostgreSQL down it
# is refused; once PostgreSQL is back the plugin reconnects and admits it.
creds sub1
if "$svc" down >"$tmp/down.out" 2>&1; then
    check "with the database down an uncached device is refused" refused "$P&sub1" "$U" "$W"
    if "$svc" up >"$tmp/up2.out" 2>&1; then
        back=1
        for _ in $(seq 30); do
            pub "$P&sub1" "$U" "$W" "\$thing/up/property/$P/sub1" after-outage && { back=0; break; }
            sleep 0.2
        done
        check "after the database is back the plugin reconnects and admits it" test "$back" -eq 0
    else
        cat "$tmp/up2.out"
        bad "services.sh up after the outage"
    fi
else
    cat "$tmp/down.out"
    bad "services.sh down (for the outage check)"
fi

check "the broker log has no secrets" bash -c "! grep -qF -e '$s_dev' -e '$admin_pw' '$mq/mosquitto.log'"
check "the broker logged the denials" grep -q 'igw-mqtt-auth: client .* denied' "$mq/mosquitto.log"

summary
