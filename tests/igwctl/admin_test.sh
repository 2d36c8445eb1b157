#!/usr/bin/env bash
# admin_test.sh [IGWCTL] - igwctl's admin commands and src/ops/provision.sh
# against real local services (src/ops/services.sh) in a throwaway IGW_VAR
# on free ports: provisioning twice (idempotent: same ids and secrets, same
# rows), demo.json's shape, the rows in PostgreSQL, the device credentials
# and the login token checked independently with the openssl CLI, `token
# verify`, and clean JSON errors. Always runs `down` and removes its
# directory. Exit 0 when every check passed, 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ctl=$(realpath "${1:-$root/build/igwctl}")
svc=$root/src/ops/services.sh
prov=$root/src/ops/provision.sh
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # DESCRIPTION CMD...
    local what=$1
    shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}
eq() { [ "$1" = "$2" ] || { echo "     got '$1', want '$2'"; return 1; }; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports=()
p=$((20000 + RANDOM % 12000)) # below the ephemeral range (32768+)
while [ ${#ports[@]} -lt 3 ]; do
    port_open "$p" || ports+=("$p")
    p=$((p + 1))
done
export IGW_PG_PORT=${ports[0]} IGW_REDIS_PORT=${ports[1]} IGW_MQTT_PORT=${ports[2]}
export IGW_DB=igw_admin_test IGWCTL=$ctl
unset IGW_JWT_KEY_FILE IGW_BASE_URL IGW_LISTEN

tmp=$(mktemp -d "${TMPDIR:-/tmp}/igw-admin.XXXXXX")
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
if ! "$svc" up >"$tmp/up.out" 2>&1; then
    cat "$tmp/up.out"
    echo "admin_test: services did not start"
    exit 1
fi
# shellcheck disable=SC1091
. "$IGW_VAR/env"
export IGW_PG_DSN
sql() { psql -X -tA -d "$IGW_PG_DSN" -c "$1" 2>&1; }
demo=$IGW_VAR/demo.json
js() { node -e "const d=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')); process.stdout.write(String($2))" "$1"; }

# ---- provisioning, twice ------------------------------------------------------
if "$prov" >"$tmp/prov1.out" 2>&1; then ok "provision (first run)"; else cat "$tmp/prov1.out"; bad "provision (first run)"; fi
check "provision prints the login token" grep -q 'login token:  eyJ' "$tmp/prov1.out"
check "provision prints the Authorization header" grep -q 'Authorization: Basic ' "$tmp/prov1.out"
cp "$demo" "$tmp/demo1.json" 2>/dev/null || true
counts() { sql "SELECT (SELECT count(*) FROM enterprises) || ' ' || (SELECT count(*) FROM users) || ' ' ||
    (SELECT count(*) FROM products) || ' ' || (SELECT count(*) FROM devices) || ' ' ||
    (SELECT count(*) FROM device_grants) || ' ' || (SELECT count(*) FROM cameras) || ' ' ||
    (SELECT count(*) FROM im_groups) || ' ' || (SELECT count(*) FROM im_group_members)"; }
rows1=$(counts)
check "rows after the first run: 2 enterprises, 4 users, 2 products, 4 devices, 1 grant, 1 camera, 1 group of 3" \
    eq "$rows1" "2 4 2 4 1 1 1 3"
snap() { sql "SELECT string_agg(product_id || '/' || device_name || ':' || secret || ':' || coalesce(owner_user_id::text,'-') || ':' ||
    coalesce(gateway_device_name,'-'), ',' ORDER BY product_id, device_name) FROM devices"; }
snap1=$(snap)

if "$prov" >"$tmp/prov2.out" 2>&1; then ok "provision (second run)"; else cat "$tmp/prov2.out"; bad "provision (second run)"; fi
check "second run: same row counts" eq "$(counts)" "$rows1"
check "second run: same devices, secrets, owners and bindings" eq "$(snap)" "$snap1"

shape='const keys=(o)=>Object.keys(o).sort().join(",");
const want={"":"baseUrl,camera,device,gateway,group,mqtt,otherEnterpriseUser,otherUser,thirdUser,unboundDevice,user",
 user:"enterpriseId,token,userId", otherUser:"enterpriseId,token,userId", otherEnterpriseUser:"enterpriseId,token,userId",
 thirdUser:"enterpriseId,token,userId", group:"groupId,members",
 device:"authorization,deviceName,model,password,productID,secret,username",
 gateway:"authorization,deviceName,password,productID,subDevice,username",
 "gateway.subDevice":"deviceName,productID", unboundDevice:"deviceName,productID", camera:"cameraId", mqtt:"host,port"};
const get=(p)=>p===""?d:p.split(".").reduce((o,k)=>o[k],d);
const bad=Object.keys(want).filter((p)=>keys(get(p))!==want[p]);
return bad.length ? "bad keys: "+bad.join(" ") : "ok";'
check "demo.json is JSON with exactly the documented keys" eq "$(js "$demo" "(()=>{$shape})()")" ok
check "demo.json model has the demo properties, events and actions" \
    eq "$(js "$demo" 'd.device.model.properties.length+" "+d.device.model.events.length+" "+d.device.model.actions.length')" "12 2 2"
ids='[d.user.enterpriseId,d.user.userId,d.otherUser.userId,d.otherUser.enterpriseId,d.otherEnterpriseUser.userId,
 d.otherEnterpriseUser.enterpriseId,d.device.productID,d.device.deviceName,d.device.secret,d.gateway.productID,
 d.gateway.deviceName,d.gateway.subDevice.deviceName,d.unboundDevice.deviceName,d.camera.cameraId,d.mqtt.port].join(" ")'
check "demo.json ids" eq "$(js "$demo" "$ids" 2>&1)" \
    "1 1001 1002 1 2001 2 camlamp01 demo-cam-1 $(js "$demo" d.device.secret) demogw01 demo-gw-1 demo-sub-1 demo-unbound-1 cam-1 $IGW_MQTT_PORT"
check "demo.json: same ids and secret on the second run" eq "$(js "$tmp/demo1.json" "$ids" 2>&1)" "$(js "$demo" "$ids" 2>&1)"
check "demo.json baseUrl and mqtt host" eq "$(js "$demo" 'd.baseUrl+" "+d.mqtt.host')" "http://127.0.0.1:8080 127.0.0.1"
check "demo.json is private (0600)" eq "$(stat -c %a "$demo")" 600

# ---- rows ------------------------------------------------------------------------
check "demo device: owner 1001, secret as in demo.json" \
    eq "$(sql "SELECT owner_user_id || ' ' || secret FROM devices WHERE product_id='camlamp01' AND device_name='demo-cam-1'")" \
    "1001 $(js "$demo" d.device.secret)"
check "gateway row is a gateway owned by 1001" \
    eq "$(sql "SELECT is_gateway || ' ' || owner_user_id FROM devices WHERE device_name='demo-gw-1'")" "true 1001"
check "sub-device bound to the gateway" \
    eq "$(sql "SELECT gateway_product_id || '/' || gateway_device_name FROM devices WHERE device_name='demo-sub-1'")" "demogw01/demo-gw-1"
check "user 1001 granted the sub-device" \
    eq "$(sql "SELECT product_id || '/' || device_name || ' ' || user_id FROM device_grants")" "camlamp01/demo-sub-1 1001"
check "unbound device: no owner, no gateway, no grant" \
    eq "$(sql "SELECT (owner_user_id IS NULL AND gateway_device_name IS NULL) || ' ' ||
        (SELECT count(*) FROM device_grants g WHERE g.device_name = d.device_name) FROM devices d WHERE device_name='demo-unbound-1'")" "true 0"
check "user 1002 has no rights on any device" \
    eq "$(sql "SELECT (SELECT count(*) FROM devices WHERE owner_user_id=1002) + (SELECT count(*) FROM device_grants WHERE user_id=1002)")" 0
check "users in their enterprises" \
    eq "$(sql "SELECT string_agg(user_id || ':' || enterprise_id, ' ' ORDER BY user_id) FROM users")" "1001:1 1002:1 1003:1 2001:2"
check "the stand-in IM's demo group: owner 1001, members 1001 1002 1003" \
    eq "$(sql "SELECT g.group_id || ':' || g.enterprise_id || ':' || g.owner_user_id || ':' || string_agg(m.user_id::text, ',' ORDER BY m.user_id)
              FROM im_groups g JOIN im_group_members m USING (group_id) GROUP BY g.group_id")" "demo-group:1:1001:1001,1002,1003"
check "product model stored as jsonb" \
    eq "$(sql "SELECT jsonb_typeof(model) || ' ' || jsonb_array_length(model->'properties') FROM products WHERE product_id='camlamp01'")" "object 12"
check "camera row" eq "$(sql "SELECT product_id || '/' || device_name || '/' || camera_id FROM cameras")" "camlamp01/demo-cam-1/cam-1"

# ---- credentials, checked with the openssl CLI --------------------------------------
user=$(js "$demo" d.device.username)
pw=$(js "$demo" d.device.password)
secret=$(js "$demo" d.device.secret)
keyhex=$(printf '%s' "$secret" | base64 -d | od -An -v -tx1 | tr -d ' \n')
want_pw="$(printf '%s' "$user" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$keyhex" -r | cut -d' ' -f1);hmacsha256"
check "device username has the iThings shape" bash -c '[[ $1 =~ ^camlamp01\&demo-cam-1\;12010126\;[A-Za-z0-9]{5}\;[0-9]+$ ]]' _ "$user"
check "device password = HMAC-SHA256(secret, username)" eq "$pw" "$want_pw"
exp=${user##*;}
now=$(date +%s)
check "device credential expiry about a year ahead" test "$exp" -gt $((now + 360 * 86400)) -a "$exp" -le $((now + 366 * 86400))
check "authorization = Basic base64(user:password)" \
    eq "$(js "$demo" d.device.authorization)" "Basic $(printf '%s:%s' "$user" "$pw" | base64 -w0)"
gw_user=$(js "$demo" d.gateway.username)
gw_secret=$(sql "SELECT secret FROM devices WHERE device_name='demo-gw-1'")
gw_hex=$(printf '%s' "$gw_secret" | base64 -d | od -An -v -tx1 | tr -d ' \n')
check "gateway password = HMAC-SHA256(its secret, username)" eq "$(js "$demo" d.gateway.password)" \
    "$(printf '%s' "$gw_user" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$gw_hex" -r | cut -d' ' -f1);hmacsha256"

# ---- the login token ------------------------------------------------------------------
export IGW_JWT_KEY_FILE=$IGW_VAR/jwt.key
token=$(js "$demo" d.user.token)
out=$("$ctl" token verify --token "$token" 2>&1) || true
check "token verify: user 1001 of enterprise 1" eq "$(node -e 'const o=JSON.parse(process.argv[1]); process.stdout.write(o.userId+" "+o.enterpriseId+" "+(o.expiresAt-o.issuedAt))' "$out" 2>&1)" "1001 1 2592000"
check "token verify reads stdin" bash -c 'printf "%s\n" "$1" | "$2" token verify | grep -q "\"userId\":\"1001\""' _ "$token" "$ctl"
b64u() { basenc --base64url | tr -d '=\n'; }
key=$(cat "$IGW_JWT_KEY_FILE")
check "token signature = HMAC-SHA256(key file, header.payload) (openssl)" eq "${token##*.}" \
    "$(printf '%s' "${token%.*}" | openssl dgst -sha256 -mac HMAC -macopt "key:$key" -binary | b64u)"
check "token header is {\"alg\":\"HS256\",\"typ\":\"JWT\"}" eq "${token%%.*}" "$(printf '{"alg":"HS256","typ":"JWT"}' | b64u)"
head -c 40 /dev/urandom | base64 -w0 >"$tmp/other.key"
errjson() { # STDERR_FILE: exactly one line {"error":"..."} and nothing else
    node -e 'const t=require("fs").readFileSync(process.argv[1],"utf8"); const l=t.split("\n");
        if (l.length!==2||l[1]!=="") process.exit(1); const o=JSON.parse(l[0]);
        if (Object.keys(o).join()!=="error"||typeof o.error!=="string") process.exit(1);
        if (/SELECT|INSERT|UPDATE|ERROR:|DETAIL|dbname|host=/.test(o.error)) process.exit(1);
        process.stdout.write(o.error)' "$1"
}
fails() { # NAME EXPECTED_ERROR_REGEX IGWCTL_ARGS...: exit 1, empty stdout, one clean JSON error
    local name=$1 want=$2 rc=0 msg
    shift 2
    "$ctl" "$@" >"$tmp/o" 2>"$tmp/e" || rc=$?
    if [ "$rc" -ne 1 ]; then bad "$name: exit $rc (want 1)"; return; fi
    if [ -s "$tmp/o" ]; then bad "$name: stdout not empty"; return; fi
    if ! msg=$(errjson "$tmp/e"); then bad "$name: stderr is not one clean {\"error\"}: $(cat "$tmp/e")"; return; fi
    if [[ $msg =~ $want ]]; then ok "$name ($msg)"; else bad "$name: error '$msg' does not match '$want'"; fi
}
fails "token verify with another key" 'token refused \(signature\)' token verify --jwt-key-file "$tmp/other.key" --token "$token"
last=${token: -1}
[ "$last" = A ] && sub=E || sub=A # both keep the 2 unused low bits zero
fails "token verify of a tampered signature" 'token refused \(signature\)' token verify --token "${token%?}$sub"
mid=${token#*.}
mid=${mid%%.*}
[ "${mid:0:1}" = e ] && sub=f || sub=e
fails "token verify of a tampered payload" 'token refused' token verify --token "${token%%.*}.$sub${token#*.?}"
printf 'short' >"$tmp/short.key"
fails "token issue with a short key" 'JWT key file must hold' token issue --user 1001 --jwt-key-file "$tmp/short.key"
fails "token issue for an unknown user" 'user 4242 not found' token issue --user 4242
out=$("$ctl" token issue --user 2001 --ttl 60 2>&1) || true
check "token issue --ttl 60 for user 2001" eq "$(node -e 'const o=JSON.parse(process.argv[1]); process.stdout.write(o.userId+" "+o.enterpriseId+" "+(o.expiresAt-o.issuedAt))' "$out" 2>&1)" "2001 2 60"

# ---- idempotency and errors ---------------------------------------------------------------
check "enterprise add with the same data: created false" \
    bash -c '"$1" enterprise add --id 1 --name Demo | grep -qx "{\"enterpriseId\":\"1\",\"name\":\"Demo\",\"created\":false}"' _ "$ctl"
fails "enterprise add: same id, different name" 'enterprise 1 exists with a different name' enterprise add --id 1 --name Changed
fails "user add: unknown enterprise" '^enterprise 999 not found$' user add --id 5000 --enterprise 999 --name X
fails "user add: existing id, other enterprise" 'user 1001 exists' user add --id 1001 --enterprise 2 --name 'Demo user'
fails "user add: non-canonical id" 'canonical id' user add --id 007 --enterprise 1 --name X
printf '{"properties":[],"events":[],"actions":[]}' >"$tmp/empty-model.json"
fails "product add: model differs" 'product camlamp01 exists' product add --id camlamp01 --enterprise 1 --name 'Demo camera lamp' --model "$tmp/empty-model.json"
fails "product add: model not JSON" "^model: .* at ''" product add --id p2 --enterprise 1 --name P --model "$root/tests/lib/devauth_test.c"
printf '{"properties":[{"identifier":"x","name":"X","mode":"rw","define":{"type":"int","min":"5","max":"1"}}]}' >"$tmp/bad-model.json"
fails "product add: invalid model names its path" "model: .* at '/properties/0/define" product add --id p2 --enterprise 1 --name P --model "$tmp/bad-model.json"
fails "product add: unknown enterprise" 'enterprise 77 not found' product add --id p2 --enterprise 77 --name P --model "$root/tests/lib/demo-model.json"
fails "device add: different owner" 'exists with a different owner' device add --product camlamp01 --device demo-cam-1 --owner 1002
fails "device add: owner of another enterprise" 'not in the enterprise' device add --product camlamp01 --device d9 --owner 2001
fails "device add: unknown product" 'product nope not found' device add --product nope --device d9
fails "device add: bad deviceName" 'must be 1..64 printable ASCII' device add --product camlamp01 --device 'a&b'
fails "device add: expiry in the past" 'expiry must be within' device add --product camlamp01 --device d9 --expiry 1
fails "gateway bind: not a gateway" 'is not a gateway' gateway bind --gateway-product camlamp01 --gateway-device demo-cam-1 --product camlamp01 --device demo-unbound-1
"$ctl" device add --product demogw01 --device gw2 --gateway >/dev/null 2>&1 || bad "second gateway"
fails "gateway bind: bound to another gateway" 'bound to another gateway' gateway bind --gateway-product demogw01 --gateway-device gw2 --product camlamp01 --device demo-sub-1
check "gateway bind again to the same gateway: created false" \
    bash -c '"$1" gateway bind --gateway-product demogw01 --gateway-device demo-gw-1 --product camlamp01 --device demo-sub-1 | grep -q "\"created\":false"' _ "$ctl"
fails "grant: user of another enterprise" 'user 2001 is not in the enterprise' grant --user 2001 --product camlamp01 --device demo-cam-1
fails "camera add: unknown device" 'device camlamp01/zz not found' camera add --product camlamp01 --device zz --camera c
fails "camera add: same id, other name" 'exists with a different name' camera add --product camlamp01 --device demo-cam-1 --camera cam-1 --name Other
fails "group add: a member of another enterprise" 'must be users of enterprise 1' group add --id g2 --enterprise 1 --owner 1001 --name G --members 1002,2001
fails "group add: non-canonical member" 'canonical ids' group add --id g2 --enterprise 1 --owner 1001 --name G --members 1002,01003
fails "group add: same id, other owner" 'exists with a different' group add --id demo-group --enterprise 1 --owner 1002 --name 'Demo talk group'
check "group add again: created false, members kept" \
    bash -c '"$1" group add --id demo-group --enterprise 1 --owner 1001 --name "Demo talk group" | grep -q "\"created\":false,.*\"members\":\"1001,1002,1003\"\|\"members\":\"1001,1002,1003\".*\"created\":false"' _ "$ctl"
fails "unknown option" 'unknown option --frob' enterprise add --id 3 --name X --frob 1
fails "missing option" 'missing option --name' enterprise add --id 3
fails "no database" 'no database' enterprise add --id 3 --name X --db ''
fails "unreachable database: no DSN in the message" '^cannot connect to the database$' enterprise add --id 3 --name X --db "host=$tmp/nowhere password=hunter2"
check "no row was added by the failures" eq "$(counts)" "2 4 2 5 1 1 1 3"

echo "admin_test: $pass passed, $fail failed in $((SECONDS - start))s"
[ "$fail" -eq 0 ]
