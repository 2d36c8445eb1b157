#!/usr/bin/env bash
# provision.sh - the demo tenant, idempotently, with build/igwctl against
# the running local services (src/ops/services.sh up), then $IGW_VAR/demo.json.
#
#   src/ops/provision.sh            prints the demo token and device credentials
#
# Settings (environment): IGW_VAR (var/ under the repo root; its env file
# gives IGW_PG_DSN and IGW_MQTT_*), IGWCTL (build/igwctl), IGW_BASE_URL
# (http://$IGW_LISTEN, IGW_LISTEN defaulting to 127.0.0.1:8080),
# IGW_JWT_KEY_FILE ($IGW_VAR/jwt.key; created with 32 random bytes,
# base64, mode 0600, when absent; igwd must verify tokens with the same file).
#
# The demo: enterprise 1 "Demo" with user 1001 (owns the demo device and the
# gateway, granted the sub-device) and user 1002 (no rights on any device);
# user 1003 (a member of the talk group only); the stand-in IM's group
# demo-group (owner 1001, members 1001, 1002, 1003); enterprise 2 "Other"
# with user 2001. Product camlamp01
# (tests/lib/demo-model.json) with devices demo-cam-1 (camera cam-1),
# demo-sub-1 (sub-device of the gateway) and demo-unbound-1 (no owner, no
# grant, no gateway); product demogw01 with gateway demo-gw-1.
# A second run changes no row: same ids and secrets; the token and the
# username/password (random connid, expiry) are issued afresh. A demo user
# or enterprise found deactivated (say, to try rightsRevoked) is the demo
# tenant's own: it is activated again, with a warning, before its token is
# issued.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IGW_VAR=$(realpath -m "${IGW_VAR:-$root/var}")
ctl=${IGWCTL:-$root/build/igwctl}
prog=provision.sh
die() { echo "$prog: $*" >&2; exit 1; }

[ -x "$ctl" ] || die "$ctl not found (run make)"
[ -r "$IGW_VAR/env" ] || die "$IGW_VAR/env not found (run src/ops/services.sh up)"
command -v node >/dev/null || die "node not found (make deps installs it)"
# shellcheck disable=SC1091 # written by services.sh up
. "$IGW_VAR/env"
export IGW_PG_DSN
base_url=${IGW_BASE_URL:-http://${IGW_LISTEN:-127.0.0.1:8080}}
model=$root/tests/lib/demo-model.json

keyfile=${IGW_JWT_KEY_FILE:-$IGW_VAR/jwt.key}
if [ ! -s "$keyfile" ]; then
    (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '\n' >"$keyfile.tmp.$$")
    mv -f "$keyfile.tmp.$$" "$keyfile"
fi
export IGW_JWT_KEY_FILE=$keyfile
# The key igwd signs download URLs with (setting url_key_file).
urlkey=$IGW_VAR/url.key
if [ ! -s "$urlkey" ]; then
    (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '\n' >"$urlkey.tmp.$$")
    mv -f "$urlkey.tmp.$$" "$urlkey"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/igw-provision.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' '{"properties":[{"identifier":"online","name":"Online","mode":"r","define":{"type":"bool"}}],"events":[],"actions":[]}' \
    >"$tmp/gateway-model.json"

run() { # igwctl ARGS...: its JSON on stdout; its error and exit on failure
    local out
    if ! out=$("$ctl" "$@" 2>"$tmp/err"); then
        die "igwctl $1 $2 failed: $(cat "$tmp/err")"
    fi
    printf '%s' "$out"
}

run enterprise add --id 1 --name Demo >/dev/null
run enterprise add --id 2 --name Other >/dev/null
run user add --id 1001 --enterprise 1 --name 'Demo user' >/dev/null
run user add --id 1002 --enterprise 1 --name 'Demo user without rights' >/dev/null
run user add --id 1003 --enterprise 1 --name 'Demo talk member' >/dev/null
run user add --id 2001 --enterprise 2 --name 'Other enterprise user' >/dev/null
for e in 1 2; do
    [ "$(run enterprise activate --id "$e" | jq -r .changed)" = false ] ||
        echo "$prog: warning: demo enterprise $e was inactive: activated again" >&2
done
for u in 1001 1002 1003 2001; do
    [ "$(run user activate --id "$u" | jq -r .changed)" = false ] ||
        echo "$prog: warning: demo user $u was inactive: activated again" >&2
done
product=$(run product add --id camlamp01 --enterprise 1 --name 'Demo camera lamp' --model "$model")
run product add --id demogw01 --enterprise 1 --name 'Demo gateway' --model "$tmp/gateway-model.json" >/dev/null
device=$(run device add --product camlamp01 --device demo-cam-1 --owner 1001)
gateway=$(run device add --product demogw01 --device demo-gw-1 --owner 1001 --gateway)
run device add --product camlamp01 --device demo-sub-1 >/dev/null
run device add --product camlamp01 --device demo-unbound-1 >/dev/null
run gateway bind --gateway-product demogw01 --gateway-device demo-gw-1 \
    --product camlamp01 --device demo-sub-1 >/dev/null
run grant --user 1001 --product camlamp01 --device demo-sub-1 >/dev/null
camera=$(run camera add --product camlamp01 --device demo-cam-1 --camera cam-1 --name 'Demo camera')
group=$(run group add --id demo-group --enterprise 1 --owner 1001 --name 'Demo talk group' --members 1002,1003)
user=$(run token issue --user 1001 --ttl 2592000)
other=$(run token issue --user 1002 --ttl 2592000)
third=$(run token issue --user 1003 --ttl 2592000)
other_ent=$(run token issue --user 2001 --ttl 2592000)

out=$IGW_VAR/demo.json
(umask 077 && BASE_URL=$base_url MQTT_HOST=$IGW_MQTT_HOST MQTT_PORT=$IGW_MQTT_PORT \
    PRODUCT=$product DEVICE=$device GATEWAY=$gateway CAMERA=$camera USER_TOKEN=$user \
    OTHER=$other THIRD=$third OTHER_ENT=$other_ent GROUP=$group node -e '
const e = process.env, j = (k) => JSON.parse(e[k]);
const who = (t) => ({enterpriseId: t.enterpriseId, userId: t.userId, token: t.token});
const creds = (d) => ({productID: d.productID, deviceName: d.deviceName,
                       username: d.username, password: d.password, authorization: d.authorization});
const d = j("DEVICE"), g = j("GATEWAY");
const port = Number(e.MQTT_PORT);
if (!Number.isInteger(port)) throw new Error("bad IGW_MQTT_PORT");
const demo = {
  baseUrl: e.BASE_URL,
  user: who(j("USER_TOKEN")),
  otherUser: who(j("OTHER")),
  thirdUser: who(j("THIRD")),
  otherEnterpriseUser: who(j("OTHER_ENT")),
  device: {productID: d.productID, deviceName: d.deviceName, secret: d.secret,
           username: d.username, password: d.password, authorization: d.authorization,
           model: j("PRODUCT").model},
  gateway: {...creds(g), subDevice: {productID: "camlamp01", deviceName: "demo-sub-1"}},
  unboundDevice: {productID: "camlamp01", deviceName: "demo-unbound-1"},
  camera: {cameraId: j("CAMERA").cameraId},
  group: {groupId: j("GROUP").groupId, members: j("GROUP").members.split(",")},
  mqtt: {host: e.MQTT_HOST, port: port},
};
process.stdout.write(JSON.stringify(demo, null, 2) + "\n");
' >"$out.tmp.$$") || die "cannot assemble $out"
mv -f "$out.tmp.$$" "$out"

tok() { [[ $1 =~ \"token\":\"([^\"]*)\" ]] && printf '%s' "${BASH_REMATCH[1]}"; }
field() { [[ $1 =~ \"$2\":\"([^\"]*)\" ]] && printf '%s' "${BASH_REMATCH[1]}"; }
cat <<MSG
Demo tenant (enterprise 1, user 1001), written to $out:
  login token:  $(tok "$user")
  device camlamp01/demo-cam-1 (MQTT $IGW_MQTT_HOST:$IGW_MQTT_PORT):
    username:      $(field "$device" username)
    password:      $(field "$device" password)
    Authorization: $(field "$device" authorization)
MSG
