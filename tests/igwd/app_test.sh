#!/usr/bin/env bash
# app_test.sh IGWD IGWCTL - area B transport against real services: the
# login (Bearer JWT HS256, enterprise context checked in PostgreSQL), strict
# decoding before any authorization, the signaling gate, and
# /endpoints/register. Own PostgreSQL, Redis and Mosquitto (own ports and
# directory), demo tenant provisioned, everything torn down. Exits non-zero
# on the first failure.
set -u
IGWD=$(realpath "${1:?usage: app_test.sh IGWD IGWCTL}")
IGWCTL=$(realpath "${2:?usage: app_test.sh IGWD IGWCTL}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
export IGWCTL
igw_services_test app "${APP_PG_PORT:-25395}" "${APP_REDIS_PORT:-63795}" "${APP_MQTT_PORT:-18895}"
KEY=$IGW_VAR/jwt.key
TOKEN=$(j .user.token) OTHER=$(j .otherUser.token) OTHER_ENT=$(j .otherEnterpriseUser.token)

# start NAME [VAR=VALUE...]: igwd with the login key; URL in $BASE.
start_igwd() {
    igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_DEVICE_CACHE_MS=0 \
        IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
        IGW_MQTT_CLIENT_ID=igwd-app-test IGW_COMMAND_TIMEOUT_MS=8000 "$@"
    BASE=http://127.0.0.1:$PORT/api/v1/im/interaction
}
stop_igwd() { igw_stop; }
start_igwd

# call TOKEN PATH [BODY]: POST; reply in $TMP/r, status in $STATUS.
call() {
    local tok=$1 path=$2 body=${3-}
    local args=(-s -o "$TMP/r" -w '%{http_code}' -X POST)
    [ -n "$tok" ] && args+=(-H "authorization: Bearer $tok")
    [ -n "$body" ] && args+=(-H 'content-type: application/json' --data-binary "$body")
    STATUS=$(curl "${args[@]}" "$BASE$path")
}
# jwt CLAIMS_JSON [KEYFILE]: an HS256 token signed here, independently of igw.
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
jwt() {
    local h p s
    h=$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)
    p=$(printf '%s' "$1" | b64url)
    s=$(printf '%s.%s' "$h" "$p" | openssl dgst -sha256 -hmac "$(cat "${2:-$KEY}")" -binary | b64url)
    printf '%s.%s.%s' "$h" "$p" "$s"
}
now=$(date +%s)

# ---- login ---------------------------------------------------------------------------------
CASE="register"; call "$TOKEN" /endpoints/register; expect 200 200
EP=$(jq -r .data.endpointId "$TMP/r") EXP=$(jq -r .data.expiresAt "$TMP/r")
[[ $EP =~ ^[A-Za-z0-9_-]{22,}$ ]] || fail "endpointId $EP: not >= 128 random bits, URL-safe"; ok
after=$(( $(date +%s%3N) + 3600000 ))
[ "$EXP" -le "$after" ] && [ "$EXP" -ge $(( after - 5000 )) ] || fail "expiresAt $EXP is not now + 1 h"; ok
[ "$(psql_q "SELECT enterprise_id || '/' || user_id || '/' || expires_at_ms FROM endpoints WHERE endpoint_id = '$EP'")" = "1/1001/$EXP" ] ||
    fail "endpoint row"; ok
CASE="register twice: two endpoints"; call "$TOKEN" /endpoints/register; expect 200 200
[ "$(jq -r .data.endpointId "$TMP/r")" != "$EP" ] || fail "$CASE: same id"; ok
CASE="register with a body"; call "$TOKEN" /endpoints/register '{}'; expect 400 100400
CASE="independently signed token"; call "$(jwt "{\"sub\":\"1001\",\"ent\":\"1\",\"iat\":$now,\"exp\":$((now + 60))}")" /endpoints/register
expect 200 200
head -c 32 /dev/urandom | base64 >"$TMP/other.key"
# Another last signature character (a canonical one: it carries 4 bits and 2
# zero bits); "A" alone was the token itself one time in 16.
other_last=A; [ "${TOKEN: -1}" = A ] && other_last=E
for bad in "" "garbage" "$TOKEN.x" "${TOKEN%?}$other_last" \
    "$(jwt "{\"sub\":\"1001\",\"ent\":\"1\",\"iat\":$now,\"exp\":$((now + 60))}" "$TMP/other.key")" \
    "$(jwt "{\"sub\":\"1001\",\"ent\":\"1\",\"iat\":$((now - 120)),\"exp\":$((now - 60))}")" \
    "$(printf '{"alg":"none"}' | b64url).$(printf '{"sub":"1001","ent":"1","iat":%s,"exp":%s}' "$now" $((now + 60)) | b64url)." \
    "$(jwt "{\"sub\":\"1001\",\"ent\":\"1\",\"iat\":$now,\"exp\":$((now + 60)),\"admin\":true}")"; do
    CASE="bad token '${bad:0:24}...'"; call "$bad" /endpoints/register; expect 401 100401
    [ "$(jq -r .data.reason "$TMP/r")" = "a valid login token is required" ] || fail "$CASE: reason says more"; ok
done
CASE="basic credentials are not a login"
STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -X POST -H "authorization: $(j .device.authorization)" "$BASE/endpoints/register")
expect 401 100401
CASE="token of another enterprise's claim"; call "$(jwt "{\"sub\":\"1001\",\"ent\":\"2\",\"iat\":$now,\"exp\":$((now + 60))}")" /endpoints/register
expect 403 100403
CASE="unknown user"; call "$(jwt "{\"sub\":\"999999\",\"ent\":\"1\",\"iat\":$now,\"exp\":$((now + 60))}")" /endpoints/register
expect 403 100403
CASE="other enterprise user registers in its own"; call "$OTHER_ENT" /endpoints/register; expect 200 200
[ "$(psql_q "SELECT enterprise_id FROM endpoints WHERE endpoint_id = '$(jq -r .data.endpointId "$TMP/r")'")" = 2 ] || fail "$CASE"; ok
psql_q "UPDATE users SET active = false WHERE user_id = 1002" >/dev/null
CASE="inactive user"; call "$OTHER" /endpoints/register; expect 403 100403
psql_q "UPDATE users SET active = true WHERE user_id = 1002; UPDATE enterprises SET active = false WHERE enterprise_id = 2" >/dev/null
CASE="user active again"; call "$OTHER" /endpoints/register; expect 200 200
CASE="inactive enterprise"; call "$OTHER_ENT" /endpoints/register; expect 403 100403
psql_q "UPDATE enterprises SET active = true WHERE enterprise_id = 2" >/dev/null

# ---- strict decoding first; then the login; unimplemented routes after it -------------------
CASE="declared principal, no token"; call "" /events '{"endpointId":"e","limit":1,"userId":"1001"}'; expect 400 100400 /userId
CASE="declared enterprise"; call "$TOKEN" /events '{"endpointId":"e","limit":1,"enterpriseId":"1"}'; expect 400 100400 /enterpriseId
CASE="limit out of range, no token"; call "" /events '{"endpointId":"e","limit":33}'; expect 400 100400 /limit
CASE="valid body, no token"; call "" /events '{"endpointId":"e","limit":1}'; expect 401 100401
CASE="command as a string"; call "$TOKEN" /commands '{"endpointId":"e","command":"{}"}'; expect 400 100400 /command

# ---- /commands: endpoint, method, idempotency, rights, model, downlink ------------------------------
PID_=$(j .device.productID) DEV=$(j .device.deviceName)
action() { # TOKEN_OF_MSG ACTION INPUT_JSON [ENDPOINT]
    printf '{"endpointId":"%s","command":{"msgToken":"%s","method":"device.action","target":{"productID":"%s","deviceName":"%s"},"params":{"actionID":"%s","input":%s}}}' \
        "${4:-$EP}" "$1" "$PID_" "$DEV" "$2" "$3"
}
control() { # TOKEN_OF_MSG PROPERTIES_JSON
    printf '{"endpointId":"%s","command":{"msgToken":"%s","method":"device.propertyControl","target":{"productID":"%s","deviceName":"%s"},"params":{"properties":%s}}}' \
        "$EP" "$1" "$PID_" "$DEV" "$2"
}
# The device listens on its downlinks (one connection per device: the plugin's rule).
MU=$(j .device.username) MP=$(j .device.password)
mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&$DEV" -u "$MU" -P "$MP" -q 1 -v -C 2 -W 20 \
    -t "\$thing/down/action/$PID_/$DEV" -t "\$thing/down/property/$PID_/$DEV" >"$TMP/down" 2>&1 &
SUBPID=$!
sleep 0.5
CASE="action accepted"; call "$TOKEN" /commands "$(action c1 ptz '{"direction":1,"speed":5}')"; expect 200 200
jq -e '.data == {"accepted":true,"msgToken":"c1","replay":false}' "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="same command again: replay"; call "$TOKEN" /commands "$(action c1 ptz '{"direction":1,"speed":5}')"; expect 200 200
jq -e '.data == {"accepted":true,"msgToken":"c1","replay":true}' "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="same token, other body: conflict"; call "$TOKEN" /commands "$(action c1 ptz '{"direction":2,"speed":5}')"
expect 409 100409 /command/msgToken
CASE="property control accepted"; call "$TOKEN" /commands "$(control c2 '{"brightness":70,"power":1}')"; expect 200 200
wait "$SUBPID"; SUBPID=
CASE="downlinks on the device's topics"
grep -q "^\$thing/down/action/$PID_/$DEV {\"method\":\"action\",\"msgToken\":\"[A-Za-z0-9_-]\{24\}\",\"actionID\":\"ptz\",\"params\":{\"direction\":1,\"speed\":5}}$" "$TMP/down" &&
    grep -q "^\$thing/down/property/$PID_/$DEV {\"method\":\"control\",.*\"params\":{\"brightness\":70,\"power\":1}}$" "$TMP/down" ||
    fail "$CASE: $(cat "$TMP/down")"; ok
[ "$(psql_q "SELECT count(*) FROM commands WHERE msg_token IN ('c1','c2')")" = 2 ] &&
    [ "$(psql_q "SELECT string_agg(method, ',' ORDER BY msg_token) FROM device_commands WHERE msg_token IN ('c1','c2')")" = \
      "device.action,device.propertyControl" ] || fail "$CASE: ledger rows"; ok
CASE="unknown action"; call "$TOKEN" /commands "$(action c3 nosuch '{}')"; expect 400 100400 /command/params/actionID
CASE="action input out of range"; call "$TOKEN" /commands "$(action c3 ptz '{"direction":1,"speed":11}')"; expect 400 100400 /command/params/input/speed
CASE="action input missing a parameter"; call "$TOKEN" /commands "$(action c3 ptz '{"direction":1}')"; expect 400 100400 /command/params/input/speed
CASE="control of a read-only property"; call "$TOKEN" /commands "$(control c3 '{"rssi":-3}')"; expect 400 100400 /command/params/properties/rssi
CASE="control out of range"; call "$TOKEN" /commands "$(control c3 '{"brightness":101}')"; expect 400 100400 /command/params/properties/brightness
CASE="refusals are never accepted"; [ "$(psql_q "SELECT count(*) FROM commands WHERE msg_token = 'c3'")" = 0 ] || fail "$CASE"; ok
call "$OTHER" /endpoints/register; EP_OTHER=$(jq -r .data.endpointId "$TMP/r")
CASE="user without rights on the device"; call "$OTHER" /commands "$(action c4 ptz '{"direction":1,"speed":5}' "$EP_OTHER")"
expect 403 100403 /command/target
CASE="another user's endpoint, as if unknown"; call "$TOKEN" /commands "$(action c5 ptz '{"direction":1,"speed":5}' "$EP_OTHER")"
expect 404 100404 /endpointId
CASE="unknown endpoint"; call "$TOKEN" /commands "$(action c5 ptz '{"direction":1,"speed":5}' nosuchendpoint)"; expect 404 100404 /endpointId
CASE="a login token is no endpoint"; call "$TOKEN" /events "{\"endpointId\":\"${TOKEN:0:60}\",\"limit\":1}"; expect 404 100404 /endpointId
CASE="a principal declared in the command"
call "$TOKEN" /commands "{\"endpointId\":\"$EP\",\"command\":{\"msgToken\":\"c5\",\"method\":\"device.action\",\"userId\":\"1002\",\"target\":{\"productID\":\"$PID_\",\"deviceName\":\"$DEV\"},\"params\":{\"actionID\":\"ptz\",\"input\":{}}}}"
expect 400 100400 /command/userId
CASE="a principal declared beside the command"
call "$TOKEN" /commands "{\"endpointId\":\"$EP\",\"enterpriseId\":\"2\",\"command\":{\"msgToken\":\"c5\",\"method\":\"device.action\",\"target\":{\"productID\":\"$PID_\",\"deviceName\":\"$DEV\"},\"params\":{\"actionID\":\"ptz\",\"input\":{}}}}"
expect 400 100400 /enterpriseId
CASE="interaction.configure on a session that is not the caller's"
call "$TOKEN" /commands "{\"endpointId\":\"$EP\",\"command\":{\"msgToken\":\"c6\",\"method\":\"interaction.configure\",\"sessionId\":\"s1\",\"params\":{\"sourceLanguage\":\"en\",\"targetLanguage\":\"fr\",\"speakerId\":\"sp\",\"configRevision\":1}}}"
expect 404 100404 /command/sessionId
CASE="interaction.join on a session that is not the caller's"
call "$TOKEN" /commands "{\"endpointId\":\"$EP\",\"command\":{\"msgToken\":\"c6j\",\"method\":\"interaction.join\",\"sessionId\":\"s1\",\"params\":{\"participantId\":\"1001\"}}}"
expect 404 100404 /command/sessionId
# A live view of a camera that is not connected: refused before any claim (tests/igwd/live_test.sh has the rest).
CASE="live view of an offline camera"
call "$TOKEN" /commands "{\"endpointId\":\"$EP\",\"command\":{\"msgToken\":\"c6b\",\"method\":\"interaction.open\",\"target\":{\"productID\":\"$PID_\",\"deviceName\":\"$DEV\"},\"params\":{\"purpose\":\"ipcLiveView\",\"cameraId\":\"cam-1\"}}}"
expect 503 100503 /command/target
[ "$(psql_q "SELECT count(*) FROM commands WHERE msg_token = 'c6b'")" = 0 ] && [ "$(psql_q "SELECT count(*) FROM sessions")" = 0 ] ||
    fail "$CASE: something was claimed"; ok
psql_q "UPDATE endpoints SET expires_at_ms = 0 WHERE endpoint_id = '$EP_OTHER'" >/dev/null
CASE="expired endpoint"; call "$OTHER" /commands "$(action c7 ptz '{"direction":1,"speed":5}' "$EP_OTHER")"; expect 404 100404 /endpointId

# ---- results: the device answers over MQTT (action) and over HTTP (control) ---------------------
T1=$(sed -n 's/^\$thing\/down\/action\/[^ ]* //p' "$TMP/down" | jq -r .msgToken)
T2=$(sed -n 's/^\$thing\/down\/property\/[^ ]* //p' "$TMP/down" | jq -r .msgToken)
mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&$DEV" -u "$MU" -P "$MP" -q 1 -t "\$thing/up/action/$PID_/$DEV" \
    -m "{\"method\":\"actionReply\",\"msgToken\":\"$T1\",\"code\":200,\"actionID\":\"ptz\",\"response\":{\"ok\":true}}" ||
    fail "mosquitto_pub actionReply"
STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -H "authorization: $(j .device.authorization)" -H 'content-type: application/json' \
    -d "{\"method\":\"controlReply\",\"msgToken\":\"$T2\",\"code\":200}" \
    "http://127.0.0.1:$PORT/api/v1/things/device/edge/send/thing/property")
CASE="controlReply over HTTP"; expect 200 200
# A reply for a token nobody sent: stored as a message, settles nothing.
STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -H "authorization: $(j .device.authorization)" -H 'content-type: application/json' \
    -d '{"method":"controlReply","msgToken":"nosuchtoken","code":200}' \
    "http://127.0.0.1:$PORT/api/v1/things/device/edge/send/thing/property")
CASE="reply for an unknown token"; expect 200 200
# A command nobody answers: its deadline (IGW_COMMAND_TIMEOUT_MS) makes a failure result.
CASE="unanswered control accepted"; call "$TOKEN" /commands "$(control c8 '{"zoom":20}')"; expect 200 200
pull() { call "$TOKEN" /events "{\"endpointId\":\"$EP\",\"limit\":${1:-32}}"; }
for _ in $(seq 150); do pull; [ "$(jq '.data.list | length' "$TMP/r")" = 3 ] && break; sleep 0.1; done
CASE="three results pulled"; expect 200 200
[ "$(jq '.data.list | length' "$TMP/r")" = 3 ] || fail "$CASE: $(cat "$TMP/r")"; ok
cp "$TMP/r" "$TMP/pull1"
CASE="action result"
jq -e '[.data.list[].event | select(.msgToken == "c1")][0] | .method == "interaction.result" and .code == 200
       and .data == {"operation":"device.action","output":{"ok":true},"state":"succeeded"}' "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="control result"
jq -e '[.data.list[].event | select(.msgToken == "c2")][0] | .code == 200 and .data == {"operation":"device.propertyControl","state":"succeeded"}' \
    "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="timeout result"
jq -e '[.data.list[].event | select(.msgToken == "c8")][0] | .code == 100504 and .data.operation == "device.propertyControl"
       and (.data.reason | length) > 0 and (.data | has("state") | not)' "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="exactly one result per command"
[ "$(psql_q "SELECT count(*) FROM events WHERE msg_token IN ('c1','c2','c8')")" = 3 ] || fail "$CASE"; ok
# A reply that settles a command is stored in its result's transaction, one
# that settles nothing as any uplink: each exactly once, with its body.
CASE="each reply stored once"
[ "$(psql_q "SELECT count(*) FILTER (WHERE msg_token = '$T1' AND method = 'actionReply' AND handle = 'thing'
                                     AND msg_type = 'action' AND body->'response' = '{\"ok\":true}')
             || '/' || count(*) FILTER (WHERE msg_token = '$T2' AND method = 'controlReply' AND msg_type = 'property')
             || '/' || count(*) FILTER (WHERE msg_token = 'nosuchtoken')
             FROM device_messages")" = 1/1/1 ] || fail "$CASE"; ok
CASE="replied commands settled"
[ "$(psql_q "SELECT string_agg(outcome, ',' ORDER BY outcome) FROM device_commands WHERE device_token IN ('$T1', '$T2')")" = replied,replied ] ||
    fail "$CASE"; ok
# A reply to a command this process published takes the command from the
# process's map (pending.h), with no lookup; the unknown token was looked up.
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
CASE="replies to this process's commands skip the lookup"
hits=$(metric 'igw_pending_replies_total{result="hit"}') misses=$(metric 'igw_pending_replies_total{result="miss"}')
[ "$hits/$misses" = 2/1 ] || fail "$CASE: hit/miss $hits/$misses"; ok
# The map is a hint: a command settled behind its back (here its deadline
# moved to now, as another igwd's clock could see it) gets no second
# result from a reply that still finds it there; the reply is stored once.
call "$TOKEN" /endpoints/register; EPS=$(jq -r .data.endpointId "$TMP/r")
CASE="action accepted, then settled by its deadline"; call "$TOKEN" /commands "$(action s1 ptz '{"direction":2,"speed":2}' "$EPS")"
expect 200 200
psql_q "UPDATE device_commands SET deadline_ms = floor(extract(epoch FROM now()) * 1000) WHERE msg_token = 's1'" >/dev/null
for _ in $(seq 100); do [ "$(psql_q "SELECT outcome FROM device_commands WHERE msg_token = 's1'")" = timeout ] && break; sleep 0.05; done
TS=$(psql_q "SELECT device_token FROM device_commands WHERE msg_token = 's1'")
STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -H "authorization: $(j .device.authorization)" -H 'content-type: application/json' \
    -d "{\"method\":\"actionReply\",\"msgToken\":\"$TS\",\"code\":200,\"actionID\":\"ptz\",\"response\":{\"ok\":true}}" \
    "http://127.0.0.1:$PORT/api/v1/things/device/edge/send/thing/action")
CASE="a late reply found in the map"; expect 200 200
CASE="no second result, the first outcome kept, the reply stored once"
[ "$(psql_q "SELECT (SELECT count(*) FROM events WHERE msg_token = 's1') || '/' ||
                    (SELECT outcome FROM device_commands WHERE msg_token = 's1') || '/' ||
                    (SELECT count(*) FROM device_messages WHERE msg_token = '$TS')")" = 1/timeout/1 ] ||
    fail "$CASE: $(psql_q "SELECT count(*) FROM events WHERE msg_token = 's1'")"
call "$TOKEN" /events "{\"endpointId\":\"$EPS\",\"limit\":32}"
jq -e '[.data.list[].event] | length == 1 and .[0].code == 100504' "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"
[ "$(metric 'igw_pending_replies_total{result="hit"}')" = 3 ] || fail "$CASE: not a hit"
grep -q "reply $TS comes after its command was settled" "$TMP/igwd.err" || fail "$CASE: not logged"; ok
# A command accepted before a restart is not in the new process's map: its
# reply is looked up and settles it all the same.
call "$TOKEN" /endpoints/register; EPR=$(jq -r .data.endpointId "$TMP/r")
# Passes read the deadlines of the last seconds only (app.c, LOOKBACK_MS);
# one whose deadline is long past, as a process that died leaves it, is
# settled by the pass that reads from the start, the first of a process.
CASE="a command left overdue by a dead process"; call "$TOKEN" /commands "$(action o1 ptz '{"direction":1,"speed":2}' "$EPR")"
expect 200 200
psql_q "UPDATE device_commands SET deadline_ms = 0 WHERE msg_token = 'o1'" >/dev/null
CASE="action accepted before a restart"; call "$TOKEN" /commands "$(action r1 ptz '{"direction":3,"speed":2}' "$EPR")"; expect 200 200
TR=$(psql_q "SELECT device_token FROM device_commands WHERE msg_token = 'r1'")
stop_igwd; start_igwd
STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -H "authorization: $(j .device.authorization)" -H 'content-type: application/json' \
    -d "{\"method\":\"actionReply\",\"msgToken\":\"$TR\",\"code\":200,\"actionID\":\"ptz\",\"response\":{\"ok\":false}}" \
    "http://127.0.0.1:$PORT/api/v1/things/device/edge/send/thing/action")
CASE="its reply after the restart"; expect 200 200
CASE="looked up, settled, its result delivered"
for _ in $(seq 50); do
    call "$TOKEN" /events "{\"endpointId\":\"$EPR\",\"limit\":32}"; [ "$(jq '.data.list | length' "$TMP/r")" = 2 ] && break; sleep 0.1
done
jq -e '[.data.list[].event | select(.msgToken == "r1")][0] | .msgToken == "r1" and .data == {"operation":"device.action","output":{"ok":false},"state":"succeeded"}' \
    "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"
[ "$(psql_q "SELECT outcome FROM device_commands WHERE msg_token = 'r1'")" = replied ] || fail "$CASE: not settled"
hits=$(metric 'igw_pending_replies_total{result="hit"}') misses=$(metric 'igw_pending_replies_total{result="miss"}')
[ "$hits/$misses" = 0/1 ] || fail "$CASE: hit/miss $hits/$misses"; ok
CASE="the command left overdue settled by the new process's first pass"
for _ in $(seq 100); do [ "$(psql_q "SELECT outcome FROM device_commands WHERE msg_token = 'o1'")" = timeout ] && break; sleep 0.05; done
[ "$(psql_q "SELECT outcome || '/' || (SELECT count(*) FROM events WHERE msg_token = 'o1')
             FROM device_commands WHERE msg_token = 'o1'")" = timeout/1 ] || fail "$CASE"; ok
CASE="repeated pulls are byte-identical"; pull; cmp -s <(jq -c .data "$TMP/r") <(jq -c .data "$TMP/pull1") || fail "$CASE"; ok
curl -s -o "$TMP/raw1" -X POST -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "{\"endpointId\":\"$EP\",\"limit\":32}" "$BASE/events"
curl -s -o "$TMP/raw2" -X POST -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d "{\"endpointId\":\"$EP\",\"limit\":32}" "$BASE/events"
cmp -s "$TMP/raw1" "$TMP/raw2" || fail "$CASE: raw bytes differ"; ok
CASE="limit"; pull 1; [ "$(jq '.data.list | length' "$TMP/r")" = 1 ] || fail "$CASE"; ok
D1=$(jq -r '.data.list[] | select(.event.msgToken == "c1") | .deliveryId' "$TMP/pull1")
D2=$(jq -r '.data.list[] | select(.event.msgToken == "c2") | .deliveryId' "$TMP/pull1")
D8=$(jq -r '.data.list[] | select(.event.msgToken == "c8") | .deliveryId' "$TMP/pull1")
ack() { call "$TOKEN" /events/ack "{\"endpointId\":\"$EP\",\"deliveryIds\":$1}"; }
CASE="ack with an unknown id: nothing acknowledged"; ack "[\"$D1\",\"nosuchdelivery\"]"; expect 404 100404 /deliveryIds/1
pull; [ "$(jq '.data.list | length' "$TMP/r")" = 3 ] || fail "$CASE: something was cleared"; ok
CASE="another user's endpoint"; ack_other=$(curl -s -X POST -H "authorization: Bearer $OTHER" -H 'content-type: application/json' \
    -d "{\"endpointId\":\"$EP\",\"deliveryIds\":[\"$D1\"]}" "$BASE/events/ack")
[ "$(jq -r .code <<<"$ack_other")" = 100404 ] || fail "$CASE: $ack_other"; ok
CASE="ack"; ack "[\"$D1\",\"$D2\"]"; expect 200 200
[ "$(jq -r .data.acknowledged "$TMP/r")" = 2 ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="ack again"; ack "[\"$D1\"]"; expect 200 200
[ "$(jq -r .data.acknowledged "$TMP/r")" = 2 ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="acknowledged ones are not pulled"; pull
[ "$(jq -r '[.data.list[].deliveryId] | join(",")' "$TMP/r")" = "$D8" ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="replay after ack: a new delivery, the same body"; call "$TOKEN" /commands "$(action c1 ptz '{"direction":1,"speed":5}')"; expect 200 200
jq -e '.data.replay == true' "$TMP/r" >/dev/null || fail "$CASE"; ok
pull
NEW1=$(jq -r '.data.list[] | select(.event.msgToken == "c1") | .deliveryId' "$TMP/r")
[ -n "$NEW1" ] && [ "$NEW1" != "$D1" ] || fail "$CASE: $(cat "$TMP/r")"; ok
cmp -s <(jq -c '.data.list[] | select(.event.msgToken == "c1") | .event' "$TMP/r") \
       <(jq -c '.data.list[] | select(.event.msgToken == "c1") | .event' "$TMP/pull1") || fail "$CASE: body differs"; ok
CASE="replay before ack: the same delivery"; call "$TOKEN" /commands "$(control c8 '{"zoom":20}')"; expect 200 200
pull; [ "$(jq -r '[.data.list[] | select(.event.msgToken == "c8") | .deliveryId] | join(",")' "$TMP/r")" = "$D8" ] || fail "$CASE"; ok
CASE="a late ack of the old id does not ack the new one"; ack "[\"$D1\"]"; expect 200 200
pull; jq -e --arg n "$NEW1" '[.data.list[].deliveryId] | index($n) != null' "$TMP/r" >/dev/null || fail "$CASE"; ok

# ---- group commit: commands sent together share a batch, each keeps its own outcome ---------------
# (own endpoint, so its results do not disturb the pulls and pushes of $EP)
call "$TOKEN" /endpoints/register; EPB=$(jq -r .data.endpointId "$TMP/r")
# par NAME BODY...: POSTs every BODY to /commands at once; reply i in $TMP/NAME.i, status in $TMP/NAME.i.st.
par() {
    local name=$1 i=0 pids=() body
    shift
    for body in "$@"; do
        curl -s -o "$TMP/$name.$i" -w '%{http_code}' -X POST -H "authorization: Bearer $TOKEN" \
            -H 'content-type: application/json' --data-binary "$body" "$BASE/commands" >"$TMP/$name.$i.st" &
        pids+=($!)
        i=$((i + 1))
    done
    wait "${pids[@]}"
}
same=$(action g1 ptz '{"direction":1,"speed":5}' "$EPB")
CASE="the same command twice at once: one acceptance, one replay"
par twin "$same" "$same"
[ "$(cat "$TMP/twin.0.st" "$TMP/twin.1.st" | tr -d '\n')" = 200200 ] || fail "$CASE: $(cat "$TMP"/twin.*)"
[ "$(jq -s -c 'map(.data.replay) | sort' "$TMP/twin.0" "$TMP/twin.1")" = '[false,true]' ] || fail "$CASE: $(cat "$TMP"/twin.0 "$TMP"/twin.1)"; ok
[ "$(psql_q "SELECT count(*) FROM commands WHERE endpoint_id = '$EPB' AND msg_token = 'g1'")" = 1 ] &&
    [ "$(psql_q "SELECT count(*) FROM device_commands WHERE endpoint_id = '$EPB' AND msg_token = 'g1'")" = 1 ] ||
    fail "$CASE: rows"; ok
CASE="the same token, two bodies at once: one acceptance, one conflict"
par rival "$(action g2 ptz '{"direction":1,"speed":5}' "$EPB")" "$(action g2 ptz '{"direction":2,"speed":5}' "$EPB")"
[ "$( (cat "$TMP/rival.0.st"; echo; cat "$TMP/rival.1.st"; echo) | sort | tr -d '\n')" = 200409 ] || fail "$CASE: $(cat "$TMP"/rival.*)"; ok
won=$(for i in 0 1; do [ "$(cat "$TMP/rival.$i.st")" = 200 ] && jq -r '.data.replay' "$TMP/rival.$i"; done)
[ "$won" = false ] && [ "$(psql_q "SELECT count(*) FROM device_commands WHERE endpoint_id = '$EPB' AND msg_token = 'g2'")" = 1 ] ||
    fail "$CASE: $won"; ok
CASE="refusals in a batch do not fail their neighbours"
par mix "$(action g3 ptz '{"direction":1,"speed":5}' "$EPB")" "$(action g4 ptz '{"direction":1,"speed":11}' "$EPB")" \
    "$(action g5 ptz '{"direction":1,"speed":5}' nosuchendpoint)" "$(action g2 ptz '{"direction":3,"speed":5}' "$EPB")" \
    "$(action g6 ptz '{"direction":2,"speed":5}' "$EPB")" "$(action g7 ptz '{"direction":1,"speed":5}' "$EP_OTHER")"
got=$(for i in 0 1 2 3 4 5; do printf '%s,' "$(cat "$TMP/mix.$i.st")"; done)
[ "$got" = 200,400,404,409,200,404, ] || fail "$CASE: $got"; ok
jq -e '.data.path == "/command/params/input/speed"' "$TMP/mix.1" >/dev/null && jq -e '.data.path == "/command/msgToken"' "$TMP/mix.3" >/dev/null ||
    fail "$CASE: paths"; ok
[ "$(psql_q "SELECT string_agg(msg_token, ',' ORDER BY msg_token) FROM commands WHERE endpoint_id = '$EPB'")" = g1,g2,g3,g6 ] ||
    fail "$CASE: stored"; ok

# ---- push over the WebSocket: the same deliveryIds and bodies as the pull -------------------------
WS_NODE_DIR=${WS_NODE_DIR:-$(cd "$(dirname "$IGWD")" && pwd)/ws-node}
if [ ! -d "$WS_NODE_DIR/node_modules/ws" ]; then
    npm install --no-save --no-audit --no-fund --silent --prefer-offline --prefix "$WS_NODE_DIR" ws@8.18.3 >&2 ||
        fail "npm install ws"
fi
export WS_NODE_DIR
WSURL=ws://127.0.0.1:$PORT/api/v1/im/interaction/events/ws
node "$HERE/push_client.mjs" "$WSURL/$EP" "$TOKEN" 11 >"$TMP/push" 2>&1 &
PUSHPID=$!
for _ in $(seq 50); do grep -q '^OPEN' "$TMP/push" && break; sleep 0.1; done
sleep 0.5
CASE="push sends what is pending on connect"
pull
[ "$(jq -r '[.data.list[].deliveryId] | sort | join(",")' "$TMP/r")" = \
  "$(grep '^{' "$TMP/push" | jq -rs '[.[].deliveryId] | sort | join(",")')" ] || fail "$CASE: $(cat "$TMP/push")"; ok
grep '^{' "$TMP/push" | jq -e -s 'all(.method == "interaction.event")' >/dev/null || fail "$CASE: frame shape"; ok
# A new result, pushed as soon as it is committed: a command nobody answers (deadline 1.5 s).
CASE="a new delivery is pushed"; call "$TOKEN" /commands "$(control c9 '{"zoom":25}')"; expect 200 200
wait "$PUSHPID"
D9=$(grep '^{' "$TMP/push" | jq -r 'select(.event.msgToken == "c9") | .deliveryId')
[ -n "$D9" ] || fail "$CASE: $(cat "$TMP/push")"; ok
pull
[ "$(jq -c '.data.list[] | select(.deliveryId == "'"$D9"'")' "$TMP/r")" = \
  "$(grep '^{' "$TMP/push" | jq -c 'select(.deliveryId == "'"$D9"'") | {deliveryId, event}')" ] || fail "$CASE: pull and push differ"; ok
CASE="push for another user's endpoint"; node "$HERE/push_client.mjs" "$WSURL/$EP" "$OTHER" 1 >"$TMP/push2" 2>&1
grep -q '^HTTP 404' "$TMP/push2" || fail "$CASE: $(cat "$TMP/push2")"; ok
CASE="push without a token"; node "$HERE/push_client.mjs" "$WSURL/$EP" "" 1 >"$TMP/push2" 2>&1
grep -q '^HTTP 401' "$TMP/push2" || fail "$CASE: $(cat "$TMP/push2")"; ok
CASE="push route without the handshake"
STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -H "authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v1/im/interaction/events/ws/$EP")
expect 400 100400

CASE="push with the login as a subprotocol (the browser form)"
node "$HERE/push_client.mjs" --check-subprotocol "$WSURL/$EP" "$TOKEN" "$OTHER" "$KEY" "$TMP/igwd.err" >"$TMP/push3" 2>&1 ||
    fail "$CASE: $(cat "$TMP/push3")"
n=$(sed -n 's/^push subprotocol: \([0-9]*\) checks passed$/\1/p' "$TMP/push3")
[ -n "$n" ] || fail "$CASE: $(cat "$TMP/push3")"; checks=$((checks + n))
stop_igwd

# ---- the model cache: one round trip per command, a model change honoured at once ----------------
# One worker (every command meets the same cache); PostgreSQL logs each execution of the statements.
PGLOG=$IGW_VAR/log/postgres.log
psql_q "DO \$\$ BEGIN EXECUTE format('ALTER DATABASE %I SET log_statement = ''all''', current_database()); END \$\$" >/dev/null ||
    fail "log_statement"
start_igwd IGW_THREADS=1
call "$TOKEN" /endpoints/register; EPM=$(jq -r .data.endpointId "$TMP/r")
mark() { LOGPOS=$(stat -c %s "$PGLOG"); }
# execs KIND: executions of igw_cmd_KIND (or its _plain or _one form) since the mark.
execs() { tail -c +$((LOGPOS + 1)) "$PGLOG" | grep -cE "execute igw_cmd_$1(_plain|_one)?:"; } # a write without a message: _plain, alone _one
cmodel() { # TOKEN_OF_MSG BRIGHTNESS: a control on EPM
    printf '{"endpointId":"%s","command":{"msgToken":"%s","method":"device.propertyControl","target":{"productID":"%s","deviceName":"%s"},"params":{"properties":{"brightness":%s}}}}' \
        "$EPM" "$1" "$PID_" "$DEV" "$2"
}
# bmax N: the product's model now allows brightness up to N (a plain UPDATE, as an operator would).
bmax() {
    psql_q "UPDATE products SET model = jsonb_set(model, ARRAY['properties', (SELECT (o - 1)::text
              FROM jsonb_array_elements(model->'properties') WITH ORDINALITY e(p, o) WHERE p->>'identifier' = 'brightness'),
              'define', 'max'], to_jsonb('$1'::text)) WHERE product_id = '$PID_'" >/dev/null || fail "bmax $1"
}
accepted() { # REPLAY: expects 200, accepted, and .data.replay == REPLAY
    expect 200 200
    jq -e ".data.accepted == true and .data.replay == $1" "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"; ok
}
mark
CASE="model cache: first command"; call "$TOKEN" /commands "$(cmodel m1 70)"; accepted false
[ "$(execs read),$(execs write)" = 1,1 ] || fail "$CASE: $(execs read) reads, $(execs write) writes"; ok
mark
for t in m2 m3 m4; do CASE="model cache: $t"; call "$TOKEN" /commands "$(cmodel $t 80)"; accepted false; done
CASE="model cache: one round trip per command"
[ "$(execs read),$(execs write)" = 0,3 ] || fail "$CASE: $(execs read) reads, $(execs write) writes"; ok
CASE="model cache: a lone command's write is the single-row twin (db.h)"
n=$(tail -c +$((LOGPOS + 1)) "$PGLOG" | grep -c "execute igw_cmd_write_one:")
[ "$n" = 3 ] || fail "$CASE: $n of 3 writes by igw_cmd_write_one"; ok
bmax 60
mark
CASE="model narrowed: what the old model accepted is refused"; call "$TOKEN" /commands "$(cmodel m5 70)"
expect 400 100400 /command/params/properties/brightness
[ "$(execs write),$(execs read)" = 1,1 ] || fail "$CASE: the write should refuse, then one read"; ok
[ "$(psql_q "SELECT count(*) FROM commands WHERE endpoint_id = '$EPM' AND msg_token = 'm5'")" = 0 ] || fail "$CASE: stored"; ok
CASE="model narrowed: replay of a command accepted before"; call "$TOKEN" /commands "$(cmodel m1 70)"; accepted true
CASE="model narrowed: conflict still a conflict"; call "$TOKEN" /commands "$(cmodel m1 55)"; expect 409 100409 /command/msgToken
CASE="model narrowed: within the new bound"; call "$TOKEN" /commands "$(cmodel m6 60)"; accepted false
bmax 120
CASE="model widened: what the old model refused is accepted"; call "$TOKEN" /commands "$(cmodel m7 110)"; accepted false
[ "$(psql_q "SELECT count(*) FROM device_commands WHERE endpoint_id = '$EPM' AND msg_token = 'm7'")" = 1 ] || fail "$CASE: row"; ok
bmax 60
CASE="model narrowed again: replay through the cached old model"; call "$TOKEN" /commands "$(cmodel m7 110)"; accepted true
CASE="model narrowed again: refused"; call "$TOKEN" /commands "$(cmodel m8 110)"; expect 400 100400 /command/params/properties/brightness
CASE="model narrowed again: replay through the cached new model"; call "$TOKEN" /commands "$(cmodel m7 110)"; accepted true
CASE="model narrowed again: no rights still answers no rights"
call "$OTHER" /endpoints/register; EPO=$(jq -r .data.endpointId "$TMP/r")
call "$OTHER" /commands "$(cmodel m9 10 | sed "s/$EPM/$EPO/")"; expect 403 100403 /command/target
CASE="model narrowed again: unknown device as no rights"; call "$TOKEN" /commands "$(cmodel m9 10 | sed "s/\"$DEV\"/\"nosuchdevice\"/")"
expect 403 100403 /command/target
CASE="model narrowed again: unknown endpoint"; call "$TOKEN" /commands "$(cmodel m9 10 | sed "s/$EPM/nosuchendpoint/")"
expect 404 100404 /endpointId
bmax 100
psql_q "DO \$\$ BEGIN EXECUTE format('ALTER DATABASE %I RESET log_statement', current_database()); END \$\$" >/dev/null
stop_igwd

# ---- the signaling gate ------------------------------------------------------------------------
start_igwd IGW_SIGNALING_ENABLED=false
CASE="gated register"; call "$TOKEN" /endpoints/register; expect 503 100503
[ "$(jq -r .data.reason "$TMP/r")" = "signaling is disabled" ] || fail "$CASE: reason"; ok
CASE="gated, no token"; call "" /endpoints/register; expect 503 100503
CASE="consent get-one is not gated"
STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -X POST -H 'content-type: application/json' -d '{"consentId":"c1"}' \
    "http://127.0.0.1:$PORT/api/v1/im/vision-consents/get-one")
expect 401 100401
stop_igwd

# ---- secrets never reach the log -----------------------------------------------------------------
# igwd at debug level with every kind of secret in play: the login key and
# tokens (good, signed with another key, expired), a device's secret and
# credentials (right and wrong), igwd's MQTT password, a password in the
# DSN, the URL key and a signed URL's signature. Each is used by a request
# (or the connection), the debug lines about them are written, and then
# neither igwd's stderr (this run's and every earlier one's) nor its stdout
# holds any of them.
DSN_PW=dsnpw$(head -c 12 /dev/urandom | base64 | tr -d '/+=')
start_igwd IGW_LOG_LEVEL=debug IGW_PG_DSN="$IGW_PG_DSN password=$DSN_PW" IGW_URL_KEY_FILE="$IGW_VAR/url.key" \
    IGW_STORAGE_ROOT="$TMP/storage"
now=$(date +%s)
BAD_TOKEN=$(jwt "{\"sub\":\"1001\",\"ent\":\"1\",\"iat\":$now,\"exp\":$((now + 60))}" "$TMP/other.key")
OLD_TOKEN=$(jwt "{\"sub\":\"1001\",\"ent\":\"1\",\"iat\":$((now - 120)),\"exp\":$((now - 60))}")
CASE="secrets: good token"; call "$TOKEN" /endpoints/register; expect 200 200
CASE="secrets: token of another key"; call "$BAD_TOKEN" /endpoints/register; expect 401 100401
CASE="secrets: expired token"; call "$OLD_TOKEN" /endpoints/register; expect 401 100401
DEV_P=$(j .device.productID) DEV_D=$(j .device.deviceName) DEV_AUTH=$(j .device.authorization)
WRONG=$("$IGWCTL" device sign --product "$DEV_P" --device "$DEV_D" --secret AAAAAAAAAAAAAAAAAAAAAAAAAAA=) ||
    fail "igwctl device sign"
WRONG_AUTH=$(jq -r .authorization <<<"$WRONG") WRONG_PW=$(jq -r .password <<<"$WRONG")
EDGE=http://127.0.0.1:$PORT/api/v1/things/device/edge
dev() { # AUTH PATH CURL_ARGS...: status in $STATUS, reply in $TMP/r
    local a=$1 p=$2; shift 2
    STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -H "authorization: $a" "$@" "$EDGE/$p")
}
REP=(-H 'content-type: application/json' --data-binary '{"method":"report","msgToken":"sec1","params":{"brightness":1}}')
CASE="secrets: device credentials"; dev "$DEV_AUTH" send/thing/property "${REP[@]}"; expect 200 200
CASE="secrets: wrong device password"; dev "$WRONG_AUTH" send/thing/property "${REP[@]}"; expect 401 100401
printf 'secret test\n' >"$TMP/sec.txt"
CASE="secrets: upload"; dev "$DEV_AUTH" upload-file -F "file=@$TMP/sec.txt"; expect 200 200
uri=$(jq -r .data.fileUri "$TMP/r") SIG=${uri##*sig=}
[ ${#SIG} -ge 40 ] || fail "$CASE: no signature in $uri"; ok
CASE="secrets: download"; STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' "http://127.0.0.1:$PORT$uri")
[ "$STATUS" = 200 ] || fail "$CASE: $STATUS"; ok
CASE="secrets: download, bad signature"
STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' "http://127.0.0.1:$PORT${uri%%sig=*}sig=${SIG:1}A"); expect 404 100404
for _ in $(seq 50); do grep -q "mqtt: connected to" "$TMP/igwd.err" && break; sleep 0.1; done
stop_igwd
CASE="secrets: the debug lines were written"
for line in " debug [" "login: token refused: signature does not match" "login: token refused: expired" \
    "edge: device $DEV_P/$DEV_D: credentials refused: signature does not match" \
    "download: signed URL refused: " "mqtt: connecting to "; do
    grep -qF -e "$line" "$TMP/igwd.err" || fail "$CASE: no \"$line\": $(grep ' debug ' "$TMP/igwd.err" | tail -n 5)"; ok
done
CASE="secrets: none in the output"
secrets=("$TOKEN" "${TOKEN##*.}" "$BAD_TOKEN" "${BAD_TOKEN##*.}" "$OLD_TOKEN" "${OLD_TOKEN##*.}" "$(cat "$KEY")"
    "$DEV_AUTH" "${DEV_AUTH#Basic }" "$(j .device.password)" "$(j .device.secret)" "$WRONG_AUTH" "${WRONG_AUTH#Basic }"
    "$WRONG_PW" "$(cat "$IGW_MQTT_PASSWORD_FILE")" "$DSN_PW" "$(cat "$IGW_VAR/url.key")" "$SIG")
for s in "${secrets[@]}"; do
    [ ${#s} -ge 12 ] || fail "$CASE: a secret of ${#s} bytes (the test's own mistake)"
    ! grep -qF -e "$s" "$TMP/igwd.err" "$TMP/igwd.out" || fail "$CASE: a secret (${s:0:6}...) is in igwd's output"; ok
done

# ---- no login key: application routes are off, device routes are not ------------------------------
igw_start IGW_THREADS=1 IGW_PG_DSN="$IGW_PG_DSN"
BASE=http://127.0.0.1:$PORT/api/v1/im/interaction
CASE="no login key"; call "$TOKEN" /endpoints/register; expect 503 100503
stop_igwd
grep -q "ERROR: \(Address\|Leak\)Sanitizer\|runtime error" "$TMP/igwd.err" && fail "sanitizer report"
echo "app test: $checks checks passed"
