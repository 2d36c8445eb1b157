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
# A secret changed with psql takes effect at once (the devices trigger's
# NOTIFY). With PostgreSQL frozen (SIGSTOP) and unknown devices connecting
# in a loop, a known device still connects within 1 s, one never seen is
# refused within 1 s, and the broker answers PINGREQ within 1 s throughout
# (tests/mqttauth/ping.py); after SIGCONT everything recovers. Presence:
# the facts a privileged subscriber sees on igw/presence/... (online at a
# device's authentication, offline at its end: clean, SIGKILL, a keepalive
# expiry with tests/mqttauth/hold.py; none for igwd or a refused device;
# a takeover leaves the device online), forged presence and sync refused,
# igwd's sync answered with the broker fact and the connected devices.
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
frozen=
flood_pids=()
# pg_signal STOP|CONT: the PostgreSQL server and its backends (found through
# /proc: no procps on a fresh machine). STOP freezes it: nothing answers,
# nothing closes.
pg_signal() { "$root/tests/pg_signal.sh" "$1" "$IGW_VAR/pg"; }
cleanup() {
    local rc=$?
    # Under set -e a failing kill or wait would end the cleanup half way.
    for p in "${flood_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    # Never leave a stopped server behind (services.sh down would wait on it).
    if [ -n "$frozen" ]; then pg_signal CONT 2>/dev/null || true; fi
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
plugin_opt_db_wait_ms 400
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

# ---- presence ------------------------------------------------------------------------
# The plugin publishes igw/presence/device/<p>/<d> {"state","boot","seq","at"}
# for each device connection (online at authentication, offline at its end)
# and nothing for igwd; the watcher above subscribed to igw/#.
# states DEVICE: the states of DEVICE's facts seen so far, in order.
states() { grep "^igw/presence/device/$P/$1 " "$tmp/seen" | cut -d' ' -f2- | jq -r .state | tr '\n' ' ' | sed 's/ $//'; }
last_state() { local s; s=$(states "$1"); echo "${s##* }"; }
wait_state() { # DEVICE STATE SECONDS: until DEVICE's last fact is STATE
    local n=$(($3 * 10))
    for _ in $(seq "$n"); do [ "$(last_state "$1")" = "$2" ] && return 0; sleep 0.1; done
    return 1
}
barrier
check "presence: dev1's connections above gave online/offline pairs, in order" \
    bash -c "[[ '$(states dev1)' =~ ^(online\ offline)(\ online\ offline)*$ ]]"
check "presence: loose1 connected once (the refused attempt with its credentials gave nothing)" \
    test "$(states loose1)" = "online offline"
check "presence: a refused device (unknown, wrong secret) gives none" \
    bash -c "! grep -q -e '^igw/presence/device/$P/nobody ' -e '^igw/presence/device/$P/new1 ' '$tmp/seen'"
check "presence: the privileged user (igwd's clients) gives none" \
    test "$(grep -c '^igw/presence/' "$tmp/seen")" = "$(grep -c "^igw/presence/device/$P/" "$tmp/seen")"
check "presence: each fact's JSON: state, one boot, seq rising, at" \
    bash -c "grep '^igw/presence/' '$tmp/seen' | cut -d' ' -f2- | jq -s -e '
        (map(keys) | unique) == [[\"at\",\"boot\",\"seq\",\"state\"]] and (map(.boot) | unique | length) == 1
        and ([.[].seq] == ([.[].seq] | sort)) and ([.[].seq] | unique | length) == length
        and all(.[]; .at >= .boot and .boot > 1700000000000)' >/dev/null"
check "presence: not retained (a new subscriber gets none)" \
    test -z "$(mosquitto_sub "${A[@]}" -i igwd-retained -t 'igw/presence/#' -W 1 2>/dev/null || true)"

# A device that goes silent: dropped by the broker once 1.5 x its keepalive
# (2 s) passed; Mosquitto 2.0 checks keepalives every 6 s (keepalive.c), so
# at most about 3 + 6 s after its last packet.
creds dev1
python3 "$root/tests/mqttauth/hold.py" "$mport" "$P&dev1" "$U" "$W" 2 >"$tmp/hold1" 2>&1 &
hold_pid=$!
check "presence: a silent connection is online" wait_state dev1 online 3
t0=$(date +%s%N)
wait_state dev1 offline 12 || true
t1=$(date +%s%N)
wait "$hold_pid" || true
check "presence: ... offline after its keepalive expired ($(((t1 - t0) / 1000000)) ms; 2 s keepalive, checked every 6 s)" \
    test "$(last_state dev1)" = offline -a $(((t1 - t0) / 1000000)) -ge 2000 -a $(((t1 - t0) / 1000000)) -le 10500
check "presence: ... the broker closed it (keepalive), not the client" grep -q '^closed' "$tmp/hold1"
# A client killed with SIGKILL: the kernel closes its socket.
mosquitto_sub -h 127.0.0.1 -p "$mport" -i "$P&dev1" -u "$U" -P "$W" -k 5 -t "\$thing/down/property/$P/dev1" >/dev/null 2>&1 &
kill_pid=$!
check "presence: mosquitto_sub -k 5 is online" wait_state dev1 online 3
kill -KILL "$kill_pid" 2>/dev/null || true; wait "$kill_pid" 2>/dev/null || true
check "presence: ... offline within 3 s of its SIGKILL" wait_state dev1 offline 3
# Takeover: the same clientID connects again while connected; the broker
# closes the first connection, whose disconnect comes after the second's
# online: the device stays online.
python3 "$root/tests/mqttauth/hold.py" "$mport" "$P&dev1" "$U" "$W" 60 >"$tmp/hold2" 2>&1 &
hold_pid=$!
check "presence: takeover: the first connection is online" wait_state dev1 online 3
n_before=$(states dev1 | wc -w)
mosquitto_sub -h 127.0.0.1 -p "$mport" -i "$P&dev1" -u "$U" -P "$W" -t "\$thing/down/property/$P/dev1" >/dev/null 2>&1 &
second_pid=$!
kicked=1
for _ in $(seq 30); do grep -q '^closed' "$tmp/hold2" && { kicked=0; break; }; sleep 0.1; done
wait "$hold_pid" || true
check "presence: takeover: the first connection is closed by the broker" test "$kicked" -eq 0
barrier
check "presence: takeover: one more online, no offline: still online ($(states dev1 | cut -d' ' -f"$((n_before + 1))"-))" \
    test "$(states dev1 | cut -d' ' -f"$((n_before + 1))"-)" = online
kill -INT "$second_pid" 2>/dev/null || true; wait "$second_pid" 2>/dev/null || true
check "presence: takeover: the second's clean disconnect is offline" wait_state dev1 offline 3

# Forgery: a device cannot publish presence, nor ask for a sync.
creds dev1
pub "$P&dev1" "$U" "$W" "igw/presence/device/$P/loose1" '{"state":"online","forged":1}' || true
pub "$P&dev1" "$U" "$W" "\$presence/device/$P/dev1" '{"state":"online","forged":2}' || true
pub "$P&dev1" "$U" "$W" "\$presence/up/state/$P/dev1" '{"state":"online","forged":3}' || true
pub "$P&dev1" "$U" "$W" 'igw/presence-sync' sync-forged || true
barrier
check "presence: a device's forged presence is not delivered" bash -c "! grep -q forged '$tmp/seen'"
check "presence: a device cannot ask for a sync (no broker fact)" bash -c "! grep -q '^igw/presence/broker ' '$tmp/seen'"
check "presence: the forgery attempts were refused by the ACL" \
    grep -q "publish igw/presence/device/$P/loose1 denied" "$mq/mosquitto.log"

# Sync: igwd asks; the broker fact, then an online fact per connected device.
creds gw1
mosquitto_sub -h 127.0.0.1 -p "$mport" -i "$P&gw1" -u "$U" -P "$W" -t "\$thing/down/property/$P/gw1" >"$tmp/gw1.out" 2>&1 &
sync_dev_pid=$!
check "presence: gw1 connected, online" wait_state gw1 online 3
n_gw=$(states gw1 | wc -w)
mosquitto_pub "${A[@]}" -i igwd-sync -q 1 -t 'igw/presence-sync' -n
barrier
check "presence: sync: the broker fact (state boot, the facts' boot)" \
    bash -c "grep '^igw/presence/broker ' '$tmp/seen' | cut -d' ' -f2- | jq -s -e --argjson b \
        \"\$(grep '^igw/presence/device/' '$tmp/seen' | head -n 1 | cut -d' ' -f2- | jq .boot)\" \
        'length == 1 and .[0].state == \"boot\" and .[0].boot == \$b' >/dev/null"
check "presence: sync: the connected device's online again, with its connection's time" \
    bash -c "[ '$(states gw1 | cut -d' ' -f"$((n_gw + 1))"-)' = online ] && [ \"\$(grep '^igw/presence/device/$P/gw1 ' '$tmp/seen' | tail -n 2 | cut -d' ' -f2- | jq -s '.[0].at == .[1].at and .[0].seq < .[1].seq')\" = true ]"
check "presence: sync: no fact for a device not connected" \
    test "$(last_state dev1)" = offline -a "$(last_state loose1)" = offline
kill -INT "$sync_dev_pid" 2>/dev/null || true; wait "$sync_dev_pid" 2>/dev/null || true
check "presence: gw1 offline after its disconnect" wait_state gw1 offline 3

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

# ---- a secret changed in the database ------------------------------------------------
# The devices trigger NOTIFYs igw_device_secret; the plugin LISTENs and drops
# the cached secret at once (not after its 30 s TTL).
s_rot=$(newsecret)
s_rot2=$(newsecret)
sql -c "INSERT INTO devices (product_id, device_name, enterprise_id, secret) VALUES ('$P', 'rot1', 1, '$s_rot')"
creds rot1 "" "$s_rot"
U_old=$U W_old=$W
check "a device with a fresh secret connects (and its secret is cached)" \
    pub "$P&rot1" "$U_old" "$W_old" "\$thing/up/property/$P/rot1" rot-1
sql -c "UPDATE devices SET secret = '$s_rot2' WHERE product_id = '$P' AND device_name = 'rot1'"
# "At once": the NOTIFY reaches the plugin's connection moments after the
# commit (the listening backend sends it when signalled), not within the
# UPDATE's own round trip, so a loaded machine may still let one connection
# in; within a second it must not (the TTL is 30 s).
refused_soon() { for _ in $(seq 10); do refused "$@" && return 0; sleep 0.1; done; return 1; }
check "after UPDATE of its secret its old credentials are refused at once" refused_soon "$P&rot1" "$U_old" "$W_old"
creds rot1 "" "$s_rot2"
check "... and credentials signed with the new secret are accepted" \
    pub "$P&rot1" "$U" "$W" "\$thing/up/property/$P/rot1" rot-2
s_del=$(newsecret)
sql -c "INSERT INTO devices (product_id, device_name, enterprise_id, secret) VALUES ('$P', 'del1', 1, '$s_del')"
creds del1 "" "$s_del"
check "another device connects (and its secret is cached)" \
    pub "$P&del1" "$U" "$W" "\$thing/up/property/$P/del1" del-1
sql -c "DELETE FROM devices WHERE product_id = '$P' AND device_name = 'del1'"
check "after DELETE of the device its credentials are refused at once" refused_soon "$P&del1" "$U" "$W"
# listen_after SQL: what a session LISTENing on the channel hears from SQL.
listen_after() { psql -X -q -tA -d "$IGW_PG_DSN" -c 'LISTEN igw_device_secret' -c "$1" -c 'SELECT 1' 2>&1; }
check "an UPDATE of the secret notifies '<productID>&<deviceName>'" \
    bash -c "grep -qF 'payload \"$P&dev1\"' <<<\"\$1\"" _ \
    "$(listen_after "UPDATE devices SET secret = secret WHERE product_id = '$P' AND device_name = 'dev1'")"
check "an UPDATE of other columns (the uplink path's) notifies nothing" \
    bash -c "! grep -q 'notification' <<<\"\$1\"" _ \
    "$(listen_after "UPDATE devices SET properties = '{}' WHERE product_id = '$P' AND device_name = 'dev1'")"

# ---- a frozen database --------------------------------------------------------------
# PostgreSQL stopped with SIGSTOP accepts connections and never answers.
# Unknown devices (random names, well-formed signed usernames, 64-hex
# passwords) connect in a loop meanwhile: they may cost one bounded wait
# (plugin_opt_db_wait_ms, 400 here: a loaded test machine must not refuse
# devices while the database is healthy), then nothing.
s_new=$(newsecret)
sql -c "INSERT INTO devices (product_id, device_name, enterprise_id, secret) VALUES ('$P', 'new1', 1, '$s_new')"
creds dev1
check "before the freeze the known device connects" pub "$P&dev1" "$U" "$W" "\$thing/up/property/$P/dev1" pre-freeze
ms() { echo $(($(date +%s%N) / 1000000)); }
# within_1s WHAT CMD...: CMD succeeds and took less than 1000 ms.
within_1s() {
    local what=$1 t0 t1 rc=0
    shift
    t0=$(ms)
    "$@" || rc=$?
    t1=$(ms)
    if [ "$rc" -eq 0 ] && [ $((t1 - t0)) -lt 1000 ]; then ok "$what ($((t1 - t0)) ms)"; else
        bad "$what (exit $rc after $((t1 - t0)) ms)"; fi
}
tpub() { timeout 5 mosquitto_pub -h 127.0.0.1 -p "$mport" -i "$1" -u "$2" -P "$3" -t "$4" -m "$5" -q 1 \
    >"$tmp/pub.err" 2>&1; }
trefused() { ! tpub "$1" "$2" "$3" "\$thing/up/property/$P/dev1" "refused-$RANDOM" && grep -qi 'not authori' "$tmp/pub.err"; }
flood() { # one loop of unknown devices, until killed
    local i=0 name out
    while :; do
        i=$((i + 1))
        name=ghost$1x$i$RANDOM
        out=$("$tmp/sign" "$P" "$name" "$(newsecret)" $(($(date +%s) + 3600)))
        timeout 5 mosquitto_pub -h 127.0.0.1 -p "$mport" -i "$P&$name" -u "${out%%$'\n'*}" -P "${out#*$'\n'}" \
            -t "\$thing/up/property/$P/$name" -m x -q 1 >/dev/null 2>&1 || true
    done
}
python3 "$root/tests/mqttauth/ping.py" "$mport" igwd "$admin_pw" 4 >"$tmp/ping.out" 2>"$tmp/ping.err" &
ping_pid=$!
sleep 0.3
pg_signal STOP && frozen=1
for n in 1 2 3; do
    flood "$n" &
    flood_pids+=($!)
done
sleep 0.5
creds dev1
within_1s "frozen database, unknown devices flooding: the known device connects within 1 s" \
    tpub "$P&dev1" "$U" "$W" "\$thing/up/property/$P/dev1" frozen-1
creds loose1
within_1s "... one cached before the last reconnect too (its stale secret)" \
    tpub "$P&loose1" "$U" "$W" "\$thing/up/property/$P/loose1" frozen-2
creds gw1
within_1s "... a gateway publishes for its bound sub-device (cached binding)" \
    tpub "$P&gw1" "$U" "$W" "\$thing/up/property/$P/sub1" frozen-gw-sub
creds new1 "" "$s_new"
within_1s "... a device never seen is refused within 1 s" trefused "$P&new1" "$U" "$W"
sleep 1
creds dev1
within_1s "... 1.5 s into the flood the known device still connects within 1 s" \
    tpub "$P&dev1" "$U" "$W" "\$thing/up/property/$P/dev1" frozen-3
ping_rc=0
wait "$ping_pid" || ping_rc=$?
read -r _ npings _ max_ms <"$tmp/ping.out" || true
check "the broker answered every PINGREQ during the freeze (${npings:-0} pings, max ${max_ms:-?} ms)" \
    test "$ping_rc" -eq 0 -a "${npings:-0}" -ge 10 -a "${max_ms:-99999}" -lt 1000
[ "$ping_rc" -eq 0 ] || cat "$tmp/ping.err"
for p in "${flood_pids[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${flood_pids[@]}"; do wait "$p" 2>/dev/null || true; done
flood_pids=()
pg_signal CONT && frozen=
barrier || true
check "... and the sub-device's message arrived" seen "\$thing/up/property/$P/sub1" frozen-gw-sub

s_late=$(newsecret)
sql -c "INSERT INTO devices (product_id, device_name, enterprise_id, secret) VALUES ('$P', 'late1', 1, '$s_late')"
creds late1 "" "$s_late"
back=1
for _ in $(seq 40); do
    pub "$P&late1" "$U" "$W" "\$thing/up/property/$P/late1" after-thaw && { back=0; break; }
    sleep 0.2
done
check "after SIGCONT the plugin recovers: a device inserted after the thaw connects" test "$back" -eq 0
creds new1 "" "$s_new"
check "... and the device refused during the freeze connects" \
    pub "$P&new1" "$U" "$W" "\$thing/up/property/$P/new1" after-thaw-2
creds dev1
check "... and the known device" pub "$P&dev1" "$U" "$W" "\$thing/up/property/$P/dev1" after-thaw-3
n_down=$(grep -c 'igw-mqtt-auth: database unavailable (' "$mq/mosquitto.log" || true)
n_up=$(grep -c 'igw-mqtt-auth: database available again' "$mq/mosquitto.log" || true)
# Two outages (services.sh down, the freeze); a loaded machine may add a
# missed deadline, but never one line per refused device.
check "each outage's state change is logged once ($n_down unavailable, $n_up available again)" \
    test "$n_down" -ge 2 -a "$n_down" -le 4 -a "$n_up" -eq "$n_down"

check "the broker log has no secrets" bash -c "! grep -qF -e '$s_dev' -e '$admin_pw' '$mq/mosquitto.log'"
check "the broker logged the denials" grep -q 'igw-mqtt-auth: client .* denied' "$mq/mosquitto.log"

summary
