#!/usr/bin/env bash
# edge_test.sh IGWD IGWCTL - area A against real services: device HTTP
# ingestion (credential matrix, gateway rules, every protocol row, thing
# model errors with their paths, the envelope on every error), durability
# under kill -9, and the MQTT path (mosquitto_pub/sub as real devices, ACL
# refusals). Brings up its own PostgreSQL, Redis and Mosquitto (own ports,
# own directory, the project's auth plugin), provisions the demo tenant and
# tears everything down. Exits non-zero on the first failure.
set -u
IGWD=$(realpath "${1:?usage: edge_test.sh IGWD IGWCTL}")
IGWCTL=$(realpath "${2:?usage: edge_test.sh IGWD IGWCTL}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test edge "${EDGE_PG_PORT:-25393}" "${EDGE_REDIS_PORT:-63793}" "${EDGE_MQTT_PORT:-18893}"
PID_=$(j .device.productID) DEV=$(j .device.deviceName) SECRET=$(j .device.secret) AUTH=$(j .device.authorization)
GW_AUTH=$(j .gateway.authorization) GW_P=$(j .gateway.productID) GW_D=$(j .gateway.deviceName)
SUB_P=$(j .gateway.subDevice.productID) SUB_D=$(j .gateway.subDevice.deviceName)
UNB_P=$(j .unboundDevice.productID) UNB_D=$(j .unboundDevice.deviceName)

start_igwd() {
    igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" \
        IGW_REDIS_HOST=127.0.0.1 IGW_REDIS_PORT="$IGW_REDIS_PORT" \
        IGW_MQTT_HOST=127.0.0.1 IGW_MQTT_PORT="$IGW_MQTT_PORT" IGW_MQTT_PASSWORD_FILE="$IGW_MQTT_PASSWORD_FILE" \
        IGW_MQTT_CLIENT_ID=igwd-edge-test IGW_STORAGE_ROOT="$TMP/storage" IGW_DEVICE_CACHE_MS=0 \
        IGW_UPLOAD_MAX=4096 IGW_URL_TTL_S=4
    URL=http://127.0.0.1:$PORT/api/v1/things/device/edge/send
}
start_igwd

# send AUTH PATH BODY [HEADER...]: the reply body in $TMP/r, status in $STATUS.
send() {
    local auth=$1 path=$2 body=$3
    shift 3
    local hdr=()
    [ -n "$auth" ] && hdr+=(-H "authorization: $auth")
    for h in "$@"; do hdr+=(-H "$h"); done
    STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -H 'content-type: application/json' "${hdr[@]}" \
        --data-binary "$body" "$URL/$path")
}
REPORT='{"method":"report","msgToken":"m1","params":{"brightness":40}}'

# ---- credentials ---------------------------------------------------------------
sign() { "$IGWCTL" device sign --product "$PID_" --device "$DEV" "$@" | jq -r .authorization; }
CASE="good credentials"; send "$AUTH" thing/property "$REPORT"; expect 200 200
jq -e '.data == {"code":200,"method":"reportReply","msgToken":"m1"}' "$TMP/r" >/dev/null || fail "reply data: $(cat "$TMP/r")"; ok
CASE="sha1 form"; send "$(sign --secret "$SECRET" --sha1)" thing/property "$REPORT"; expect 200 200
CASE="wrong secret"; send "$(sign --secret AAAAAAAAAAAAAAAAAAAAAAAAAAA=)" thing/property "$REPORT"; expect 401 100401
CASE="expired"; send "$(sign --secret "$SECRET" --expiry $(( $(date +%s) - 10 )))" thing/property "$REPORT"; expect 401 100401
other=$("$IGWCTL" device sign --product "$GW_P" --device "$GW_D" --secret "$SECRET")
mine=$("$IGWCTL" device sign --product "$PID_" --device "$DEV" --secret "$SECRET")
CASE="other device's username with this password"
send "Basic $(printf '%s:%s' "$(jq -r .username <<<"$other")" "$(jq -r .password <<<"$mine")" | base64 -w0)" thing/property "$REPORT"
expect 401 100401
CASE="unknown device"; send "$("$IGWCTL" device sign --product "$PID_" --device nosuchdevice --secret "$SECRET" | jq -r .authorization)" thing/property "$REPORT"; expect 401 100401
for bad in "" "Basic" "Basic !!!" "Bearer abc" "Basic $(printf 'nocolon' | base64)" "Basic $(printf 'a:b' | base64)"; do
    CASE="malformed header '$bad'"; send "$bad" thing/property "$REPORT"; expect 401 100401
    [ "$(jq -r .data.reason "$TMP/r")" = "invalid device credentials" ] || fail "$CASE: reason says more"; ok
done

# ---- gateway rules ---------------------------------------------------------------
CASE="gateway for its bound sub-device"; send "$GW_AUTH" thing/property '{"method":"report","msgToken":"g1","params":{"zoom":20}}' "productID: $SUB_P" "deviceName: $SUB_D"; expect 200 200
[ "$(psql_q "SELECT count(*) FROM device_messages WHERE product_id='$SUB_P' AND device_name='$SUB_D' AND msg_token='g1'")" = 1 ] || fail "sub-device message not stored under the sub-device"; ok
CASE="gateway for an unbound device"; send "$GW_AUTH" thing/property "$REPORT" "productID: $UNB_P" "deviceName: $UNB_D"; expect 403 100403
CASE="gateway for a device that does not exist"; send "$GW_AUTH" thing/property "$REPORT" "productID: $UNB_P" "deviceName: nosuch"; expect 403 100403
CASE="plain device naming another"; send "$AUTH" thing/property "$REPORT" "productID: $SUB_P" "deviceName: $SUB_D"; expect 403 100403
CASE="productID without deviceName"; send "$GW_AUTH" thing/property "$REPORT" "productID: $SUB_P"; expect 400 100400 deviceName
CASE="gateway topo, bound"; send "$GW_AUTH" gateway/operation "{\"method\":\"topo\",\"msgToken\":\"t\",\"params\":{\"devices\":[{\"productID\":\"$SUB_P\",\"deviceName\":\"$SUB_D\"}]}}"; expect 200 200
CASE="gateway online, second not bound"; send "$GW_AUTH" gateway/operation "{\"method\":\"online\",\"msgToken\":\"t\",\"params\":{\"devices\":[{\"productID\":\"$SUB_P\",\"deviceName\":\"$SUB_D\"},{\"productID\":\"$UNB_P\",\"deviceName\":\"$UNB_D\"}]}}"; expect 403 100403 /params/devices/1
CASE="topo from a plain device"; send "$AUTH" gateway/operation "{\"method\":\"topo\",\"msgToken\":\"t\",\"params\":{\"devices\":[{\"productID\":\"$SUB_P\",\"deviceName\":\"$SUB_D\"}]}}"; expect 403 100403

# ---- every protocol row ------------------------------------------------------------
# PATH BODY REPLY_METHOD: each row of `protocol device` (schema/device.igw), also with '$'.
while IFS='|' read -r path body reply; do
    for p in "$path" "\$$path"; do
        CASE="row $p $reply"; send "$AUTH" "$p" "$body"; expect 200 200
        [ "$(jq -r .data.method "$TMP/r")" = "$reply" ] || fail "$CASE: reply method $(jq -r .data.method "$TMP/r")"; ok
    done
done <<'ROWS'
thing/property|{"method":"report","msgToken":"r","params":{"brightness":1,"label":"abc","position":{"pan":10}}}|reportReply
thing/property|{"method":"reportInfo","msgToken":"r","params":{"fw":"1.0"}}|reportInfoReply
thing/property|{"method":"getStatus","msgToken":"r"}|getStatusReply
thing/property|{"method":"packReport","msgToken":"r","params":{"properties":{"zoom":15},"events":[{"eventID":"alarm","params":{"level":2}}]}}|packReportReply
thing/property|{"method":"controlReply","msgToken":"r","code":200}|controlReply
thing/property|{"method":"getReportReply","msgToken":"r","code":200,"params":{"power":1}}|getReportReply
thing/event|{"method":"eventPost","msgToken":"r","eventID":"alarm","type":"alert","params":{"type":1,"level":3}}|eventReply
thing/action|{"method":"actionReply","msgToken":"r","code":200,"actionID":"ptz","response":{"ok":true}}|actionReply
thing/service|{"method":"getStatus","msgToken":"r"}|getStatusReply
ota/inform|{"method":"inform","msgToken":"r","params":{"version":"1.2.3"}}|informReply
ota/progress|{"method":"progress","msgToken":"r","params":{"step":50}}|progressReply
config/report|{"method":"report","msgToken":"r","params":{"interval":30}}|reportReply
config/get|{"method":"get","msgToken":"r"}|getReply
log/operation|{"method":"operation","msgToken":"r","params":{"op":"reboot"}}|operationReply
log/status|{"method":"status","msgToken":"r","params":{"s":"ok"}}|statusReply
ext/anything|{"method":"whatever","msgToken":"r","params":{"x":1}}|whatever
media/capability|{"method":"report","msgToken":"r","params":{"cameras":[{"cameraId":"cam-1","video":["H264"],"audio":["opus"]}],"microphone":true,"speaker":false,"maxUpstreams":1,"confirmPolicy":"auto"}}|reportReply
ROWS
CASE="getStatus returns stored values"; send "$AUTH" thing/property '{"method":"getStatus","msgToken":"s"}'
expect 200 200
jq -e '.data.data.brightness == 1 and .data.data.zoom == 15 and .data.data.label == "abc" and .data.data.power == 1' "$TMP/r" >/dev/null ||
    fail "getStatus data: $(cat "$TMP/r")"; ok
CASE="config get returns the latest report"; send "$AUTH" config/get '{"method":"get","msgToken":"c"}'; expect 200 200
jq -e '.data.data == {"interval":30}' "$TMP/r" >/dev/null || fail "config data: $(cat "$TMP/r")"; ok
# ---- media legs: the engine answers once the message is stored --------------------
OFFER='{"method":"mediaOffer","msgToken":"mo1","sessionId":"leg-nosuch","params":{"mediaRevision":1,"webrtc":{"iceMode":"full","sdp":"v=0"}}}'
CASE="mediaOffer on a leg this node does not have"; send "$AUTH" media/session "$OFFER"; expect 404 100404
[ "$(jq -r .data.reason "$TMP/r")" = "unknown session" ] || fail "$CASE: $(cat "$TMP/r")"; ok
[ "$(psql_q "SELECT count(*) FROM device_messages WHERE handle='media' AND method='mediaOffer' AND msg_token='mo1' AND body->>'sessionId'='leg-nosuch'")" = 1 ] ||
    fail "$CASE: the message was not stored before the engine's answer"; ok
CASE="mediaOffer without sessionId"; send "$AUTH" media/session '{"method":"mediaOffer","msgToken":"x","params":{"mediaRevision":1,"webrtc":{"iceMode":"full","sdp":"v=0"}}}'; expect 400 100400 /sessionId
CASE="bye with an unknown reason"; send "$AUTH" media/session '{"method":"bye","msgToken":"x","sessionId":"l","params":{"reason":"bored"}}'; expect 400 100400 /params/reason
CASE="mediaState on an unknown leg"; send "$AUTH" media/session '{"method":"mediaState","msgToken":"ms","sessionId":"l","params":{"mediaRevision":1,"state":"connected"}}'; expect 404 100404
CASE="capability without cameras"; send "$AUTH" media/capability '{"method":"report","msgToken":"x","params":{"cameras":[],"microphone":true,"speaker":false,"maxUpstreams":1,"confirmPolicy":"auto"}}'; expect 400 100400 /params/cameras
CASE="capability: a codec twice"; send "$AUTH" media/capability '{"method":"report","msgToken":"x","params":{"cameras":[{"cameraId":"c","video":["H264","H264"]}],"microphone":true,"speaker":false,"maxUpstreams":1,"confirmPolicy":"auto"}}'; expect 400 100400 /params/cameras/0/video/1
CASE="byeReply on a leg that is gone: acknowledged"; send "$AUTH" media/session '{"method":"byeReply","msgToken":"br","sessionId":"gone","code":200}'; expect 200 200
CASE="trackControlReply without sessionId"; send "$AUTH" media/session '{"method":"trackControlReply","msgToken":"x","code":200}'; expect 400 100400 /sessionId
CASE="media invite is a downlink, not an uplink"; send "$AUTH" media/session '{"method":"invite","msgToken":"x","sessionId":"l"}'; expect 400 100400 /method

CASE="unknown handle"; send "$AUTH" nothing/property "$REPORT"; expect 400 100400
CASE="unknown type"; send "$AUTH" thing/nothing "$REPORT"; expect 400 100400
CASE="unknown method"; send "$AUTH" thing/event "$REPORT"; expect 400 100400 /method
CASE="double dollar"; send "$AUTH" '$$thing/property' "$REPORT"; expect 400 100400

# ---- thing model errors, with paths -------------------------------------------------
while IFS='|' read -r path body errpath; do
    CASE="model $body"; send "$AUTH" "$path" "$body"; expect 400 100400 "$errpath"
done <<'MODEL'
thing/property|{"method":"report","msgToken":"x","params":{"brightness":101}}|/params/brightness
thing/property|{"method":"report","msgToken":"x","params":{"zoom":12}}|/params/zoom
thing/property|{"method":"report","msgToken":"x","params":{"temperature":20.05}}|/params/temperature
thing/property|{"method":"report","msgToken":"x","params":{"label":"123456789"}}|/params/label
thing/property|{"method":"report","msgToken":"x","params":{"nightMode":7}}|/params/nightMode
thing/property|{"method":"report","msgToken":"x","params":{"power":"on"}}|/params/power
thing/property|{"method":"report","msgToken":"x","params":{"lastSeen":-1}}|/params/lastSeen
thing/property|{"method":"report","msgToken":"x","params":{"position":{"pan":181}}}|/params/position/pan
thing/property|{"method":"report","msgToken":"x","params":{"position":{"roll":1}}}|/params/position/roll
thing/property|{"method":"report","msgToken":"x","params":{"presets":[{"id":1},{"id":17}]}}|/params/presets/1/id
thing/property|{"method":"report","msgToken":"x","params":{"tags":["ok","toolong"]}}|/params/tags/1
thing/property|{"method":"report","msgToken":"x","params":{"nosuch":1}}|/params/nosuch
thing/property|{"method":"packReport","msgToken":"x","params":{"properties":{"zoom":15},"events":[{"eventID":"alarm","params":{"level":9}}]}}|/params/events/0/params/level
thing/event|{"method":"eventPost","msgToken":"x","eventID":"alarm","type":"alert","params":{"level":0}}|/params/level
thing/event|{"method":"eventPost","msgToken":"x","eventID":"nosuch","type":"alert","params":{}}|/eventID
thing/action|{"method":"actionReply","msgToken":"x","code":200,"actionID":"nosuch"}|/actionID
thing/action|{"method":"actionReply","msgToken":"x","code":200,"actionID":"ptz","response":{"ok":3}}|/response/ok
MODEL
CASE="strict decoding first"; send "$AUTH" thing/property '{"method":"report","msgToken":"x","msgToken":"y"}'; expect 400 100400 /msgToken
# Values no database column could hold are refused by the decoder, before
# they could share (and fail) a batch with other devices' messages.
CASE="escaped NUL in free params"; send "$AUTH" ext/x '{"method":"m","msgToken":"x","params":{"a":"b\u0000"}}'; expect 400 100400 /params/a
CASE="zero with a huge exponent"; send "$AUTH" ext/x '{"method":"m","msgToken":"x","params":{"a":0e99999999999}}'; expect 400 100400 /params/a
CASE="too many fraction digits"; send "$AUTH" ext/x "{\"method\":\"m\",\"msgToken\":\"x\",\"params\":{\"a\":1.$(printf '0%.0s' $(seq 16400))}}"
expect 400 100400 /params/a
CASE="type longer than MsgType"; send "$AUTH" ext/abcdefghijabcdefghijabcdefghij123 '{"method":"m","msgToken":"x"}'; expect 400 100400
CASE="refusals change nothing"
[ "$(psql_q "SELECT count(*) FROM device_messages WHERE msg_token='x'")" = 0 ] || fail "a refused message was stored"; ok

# ---- uploads ------------------------------------------------------------------------------
UP=http://127.0.0.1:$PORT/api/v1/things/device/edge/upload-file
printf 'hello upload\n' >"$TMP/hello.txt"
# upload AUTH CURL_ARGS...: reply in $TMP/r, status in $STATUS.
upload() { local a=$1; shift; STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' ${a:+-H "authorization: $a"} "$@" "$UP"); }
CASE="upload"; upload "$AUTH" -F "file=@$TMP/hello.txt" -F "note=ignored"; expect 200 200
fp=$(jq -r .data.filePath "$TMP/r") uri=$(jq -r .data.fileUri "$TMP/r")
[[ $fp =~ ^edge/$PID_/$DEV/[0-9]{6}/[0-9]{6}/hello\.txt$ ]] || fail "filePath $fp"; ok
[ "$(date -u +%y%m%d)" = "$(cut -d/ -f4 <<<"$fp")" ] || fail "filePath date is not today in UTC: $fp"; ok
cmp -s "$TMP/hello.txt" "$TMP/storage/$fp" || fail "stored bytes differ"; ok
[ "$(psql_q "SELECT size_bytes || ' ' || encode(sha256, 'hex') FROM files WHERE file_path = '$fp'")" = \
  "$(stat -c %s "$TMP/hello.txt") $(sha256sum "$TMP/hello.txt" | cut -d' ' -f1)" ] || fail "files row"; ok
CASE="download"; code=$(curl -s -o "$TMP/dl" -D "$TMP/dlh" -w '%{http_code}' "http://127.0.0.1:$PORT$uri")
[ "$code" = 200 ] && cmp -s "$TMP/dl" "$TMP/hello.txt" || fail "$CASE: $code"; ok
grep -qi '^content-disposition: attachment; filename="hello.txt"' "$TMP/dlh" && grep -qi '^x-content-type-options: nosniff' "$TMP/dlh" ||
    fail "$CASE: headers $(cat "$TMP/dlh")"; ok
CASE="download URL with POST: 405, not 404"; STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -X POST "http://127.0.0.1:$PORT$uri"); expect 405 100405
CASE="same name again: never overwritten"; upload "$AUTH" -F "file=@$TMP/hello.txt"; expect 200 200
fp2=$(jq -r .data.filePath "$TMP/r")
[ "$fp2" != "$fp" ] && cmp -s "$TMP/hello.txt" "$TMP/storage/$fp2" || fail "$CASE: $fp2"; ok
# Tampering: every part of the URL is covered (the last character replaced by
# another canonical one: "A" alone was the URL itself one time in 16).
other_last=A; [ "${uri: -1}" = A ] && other_last=E
for bad in "${uri/hello.txt/hellp.txt}" "${uri/expires=/expires=1}" "${uri%?}$other_last" "${uri%%\?*}" "${uri}&x=1" \
           "${uri/hello.txt/..%2Fhello.txt}"; do
    CASE="tampered URL $bad"; STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' "http://127.0.0.1:$PORT$bad"); expect 404 100404
done
# Raw bodies (curl -F rewrites backslashes and quotes in names).
raw_upload() { # NAME: a body whose part file is named NAME (a quoted-string: \ and " escaped)
    local q=${1//\\/\\\\}
    q=${q//\"/\\\"}
    printf -- '--bnd\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n\r\nhello\r\n--bnd--\r\n' "$q" >"$TMP/raw"
    upload "$AUTH" -H 'content-type: multipart/form-data; boundary=bnd' --data-binary "@$TMP/raw"
}
# A raw control character already breaks the part's header line.
for name in $'a\x01b.txt' $'a\x7fb.txt' $'a\x1bb.txt'; do
    CASE="filename $(printf '%q' "$name")"; raw_upload "$name"; expect 400 100400 ""
done
for name in ../etc/passwd '..\x.txt' 'a/b.txt' $'a\xc2\x85b.txt' 'a$b.txt' "a'b.txt" 'a"b.txt' 'a`b.txt' 'a|b.txt' \
            'a{b}.txt' 'a,b.txt' 'a?b.txt' 'a*b.txt' '..' '.' '/abs.txt' 'C:\\x.txt'; do
    CASE="filename $(printf '%q' "$name")"; raw_upload "$name"; expect 400 100400 file
done
CASE="raw upload with a plain name"; raw_upload 'plain name (1).txt'; expect 200 200
rm -f "$TMP/storage/$(jq -r .data.filePath "$TMP/r")"; psql_q "DELETE FROM files WHERE file_path = '$(jq -r .data.filePath "$TMP/r")'" >/dev/null
for ext in html HTM xml Xht xhtml SVG php PHP2 php3 php4 Php5 phtml pht asp ASPX asa asax ascx ashx asmx cer jsp jspa jspx jsw jsv jspf jhtml htaccess swf \
           php6 php7 PHP8 phtm phps phar shtml shtm stm cshtml vbhtml svc cfm cfml cfc cgi pl mht mhtml xsl xslt svgz js mjs cjs htpasswd; do
    CASE="forbidden .$ext"; upload "$AUTH" -F "file=@$TMP/hello.txt;filename=x.$ext"; expect 400 100400 file
done
# Issue 14: dangerous names that used to be stored; the reason says which rule.
for name in x.shtml x.phar x.pHp7 x.js x.MJS x.svgz x.cgi $'x.PHP\xe2\x80\x8b' $'x.P\xe2\x80\x8dHP' $'x.php\xc2\xad' \
            $'x.php\xef\xb8\x8f' \
            $'\xef\xbb\xbfx.txt' $'x.php\xe2\x80\xae' x.php. 'x.php ' 'x.php. .'; do # these five held before; now end to end
    CASE="filename $(printf '%q' "$name")"; raw_upload "$name"; expect 400 100400 file
done
CASE="x.shtml: the reason"; raw_upload x.shtml; expect 400 100400 file
[ "$(jq -r .data.reason "$TMP/r")" = "filename: forbidden file type" ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="x.PHP+U+200B: the reason"; raw_upload $'x.PHP\xe2\x80\x8b'; expect 400 100400 file
[ "$(jq -r .data.reason "$TMP/r")" = "filename: contains an invisible character" ] || fail "$CASE: $(cat "$TMP/r")"; ok
# Only the last extension counts: the download is an attachment, never run or rendered.
CASE="x.php.jpg is a jpg"; raw_upload x.php.jpg; expect 200 200
[[ $(jq -r .data.filePath "$TMP/r") == */x.php.jpg ]] || fail "$CASE: $(cat "$TMP/r")"; ok
rm -f "$TMP/storage/$(jq -r .data.filePath "$TMP/r")"; psql_q "DELETE FROM files WHERE file_path = '$(jq -r .data.filePath "$TMP/r")'" >/dev/null
CASE="forbidden .htaccess alone"; upload "$AUTH" -F "file=@$TMP/hello.txt;filename=.htaccess"; expect 400 100400 file
head -c 5000 /dev/zero >"$TMP/big.bin"
CASE="oversize (upload_max 4096)"; upload "$AUTH" -F "file=@$TMP/big.bin"; expect 413 100413 file
CASE="missing part file"; upload "$AUTH" -F "other=@$TMP/hello.txt"; expect 400 100400 file
CASE="wrong content type"; upload "$AUTH" -H 'content-type: application/json' --data-binary '{}'; expect 415 100415
CASE="broken multipart"; upload "$AUTH" -H 'content-type: multipart/form-data; boundary=xyz' --data-binary $'--xyz\r\nno headers'; expect 400 100400
CASE="upload without credentials"; upload "" -F "file=@$TMP/hello.txt"; expect 401 100401
CASE="gateway uploads for its sub-device"; upload "$GW_AUTH" -H "productID: $SUB_P" -H "deviceName: $SUB_D" -F "file=@$TMP/hello.txt"; expect 200 200
[[ $(jq -r .data.filePath "$TMP/r") == edge/$SUB_P/$SUB_D/* ]] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="gateway upload for an unbound device"; upload "$GW_AUTH" -H "productID: $UNB_P" -H "deviceName: $UNB_D" -F "file=@$TMP/hello.txt"; expect 403 100403
CASE="refused uploads left no file"
[ "$(find "$TMP/storage" -type f | wc -l)" = 3 ] || fail "$CASE: $(find "$TMP/storage" -type f)"; ok
[ "$(psql_q "SELECT count(*) FROM files")" = 3 ] || fail "$CASE: files rows"; ok
# A symlink planted inside the storage root is never followed.
ln -s /etc "$TMP/storage/edge/$PID_/$DEV/planted"
CASE="no reading through a planted symlink"
STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' "http://127.0.0.1:$PORT${uri/hello.txt/..\/planted\/passwd}"); expect 404 100404
expiry_uri=$uri expiry_at=$(( $(date +%s) + 5 ))

# ---- durability: kill -9 under load --------------------------------------------------
before=$(psql_q "SELECT count(*) FROM device_messages")
load() { # WORKER: reports until igwd dies; logs the tokens that got 200
    local i=0
    while [ $i -lt 400 ]; do
        i=$((i + 1))
        code=$(curl -s -o /dev/null -w '%{http_code}' -H "authorization: $AUTH" -H 'content-type: application/json' \
            --data-binary "{\"method\":\"report\",\"msgToken\":\"k$1-$i\",\"params\":{\"brightness\":$((i % 100))}}" "$URL/thing/property")
        [ "$code" = 200 ] && echo "k$1-$i"
        [ "$code" = 000 ] && break
    done >"$TMP/acked.$1"
}
for w in 1 2 3 4; do load $w & done
sleep 1.5
disown "$PID"; kill -KILL "$PID" # disowned: no job notice on stderr
while kill -0 "$PID" 2>/dev/null; do sleep 0.05; done
PID=
wait
cat "$TMP"/acked.* | sort >"$TMP/acked"
nacked=$(wc -l <"$TMP/acked")
[ "$nacked" -gt 20 ] || fail "durability: only $nacked messages acknowledged before the kill (load too slow?)"
psql_q "SELECT msg_token FROM device_messages WHERE msg_token LIKE 'k%'" | sort >"$TMP/stored"
missing=$(comm -23 "$TMP/acked" "$TMP/stored" | wc -l)
[ "$missing" = 0 ] || fail "durability: $missing of $nacked acknowledged messages are not in the database"; ok
echo "edge test: durability: $nacked acknowledged before kill -9, all stored ($(( $(psql_q "SELECT count(*) FROM device_messages") - before )) rows written)"
: >"$TMP/igwd.err"
start_igwd
CASE="after restart"; send "$AUTH" thing/property "$REPORT"; expect 200 200

# ---- MQTT: the same processing ------------------------------------------------------------
# The plugin admits one connection per device (client id {productID}&{deviceName}).
# A fresh sub-device listens on its down topics while its gateway publishes
# for it; the device itself publishes too (checked in the database).
SUB2=$("$IGWCTL" device add --db "$IGW_PG_DSN" --product "$PID_" --device edge-sub-2) || fail "igwctl device add"
"$IGWCTL" gateway bind --db "$IGW_PG_DSN" --gateway-product "$GW_P" --gateway-device "$GW_D" --product "$PID_" --device edge-sub-2 >/dev/null ||
    fail "igwctl gateway bind"
GU=$(j .gateway.username) GP=$(j .gateway.password) MU=$(j .device.username) MP=$(j .device.password)
gw_pub() { mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$GW_P&$GW_D" -u "$GU" -P "$GP" -q 1 "$@"; }
for _ in $(seq 50); do grep -q "mqtt: connected to" "$TMP/igwd.err" && break; sleep 0.1; done
mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&edge-sub-2" -u "$(jq -r .username <<<"$SUB2")" \
    -P "$(jq -r .password <<<"$SUB2")" -q 1 -v -C 3 -W 15 \
    -t "\$thing/down/property/$PID_/edge-sub-2" -t "\$thing/down/event/$PID_/edge-sub-2" >"$TMP/down" 2>&1 &
SUBPID=$!
sleep 0.5
up=\$thing/up/property/$PID_/edge-sub-2
gw_pub -t "$up" -m '{"method":"report","msgToken":"mq1","params":{"brightness":77}}' || fail "mosquitto_pub"
gw_pub -t "$up" -m '{"method":"report","msgToken":"mq2","params":{"brightness":700}}' || fail "mosquitto_pub"
gw_pub -t "\$thing/up/event/$PID_/edge-sub-2" -m '{"method":"eventPost","msgToken":"mq3","eventID":"boot","type":"info","params":{}}' ||
    fail "mosquitto_pub"
# The device itself, on its own topic; and on another device's topic, which the plugin refuses.
mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&$DEV" -u "$MU" -P "$MP" -q 1 \
    -t "\$thing/up/property/$PID_/$DEV" -m '{"method":"report","msgToken":"mq5","params":{"zoom":45}}' || fail "mosquitto_pub"
mosquitto_pub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&$DEV" -u "$MU" -P "$MP" -q 1 \
    -t "\$thing/up/property/$SUB_P/$SUB_D" -m '{"method":"report","msgToken":"mq4","params":{"zoom":20}}' 2>/dev/null
wait "$SUBPID"; SUBPID=
CASE="mqtt reportReply"
grep -q "^\$thing/down/property/$PID_/edge-sub-2 {\"code\":200,\"method\":\"reportReply\",\"msgToken\":\"mq1\"}$" "$TMP/down" ||
    fail "$CASE: $(cat "$TMP/down")"; ok
CASE="mqtt error reply names the reason"
grep '"msgToken":"mq2"' "$TMP/down" | grep '"code":100400' | grep '"method":"reportReply"' | grep -q '"msg":"above maximum 100"' ||
    fail "$CASE: $(cat "$TMP/down")"; ok
CASE="mqtt eventReply"; grep -q "^\$thing/down/event/$PID_/edge-sub-2 .*\"method\":\"eventReply\",\"msgToken\":\"mq3\"" "$TMP/down" ||
    fail "$CASE: $(cat "$TMP/down")"; ok
for _ in $(seq 50); do [ "$(psql_q "SELECT count(*) FROM device_messages WHERE msg_token = 'mq5'")" = 1 ] && break; sleep 0.1; done
CASE="mqtt stored under the right devices"
[ "$(psql_q "SELECT string_agg(msg_token || '@' || device_name, ',' ORDER BY msg_token) FROM device_messages WHERE msg_token LIKE 'mq%'")" = \
  "mq1@edge-sub-2,mq3@edge-sub-2,mq5@$DEV" ] || fail "$CASE: $(psql_q "SELECT msg_token, device_name FROM device_messages WHERE msg_token LIKE 'mq%'")"; ok
CASE="mqtt and http share the device state"; send "$AUTH" thing/property '{"method":"getStatus","msgToken":"s"}'
jq -e '.data.data.zoom == 45' "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"; ok
# Uplinks the strict decoder refuses: answered on the reply topic when their
# method and msgToken can be read, counted and logged (once a minute per device) always.
mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&edge-sub-2" -u "$(jq -r .username <<<"$SUB2")" \
    -P "$(jq -r .password <<<"$SUB2")" -q 1 -v -C 1 -W 15 -t "\$thing/down/property/$PID_/edge-sub-2" >"$TMP/down2" 2>&1 &
SUBPID=$!
sleep 0.5
gw_pub -t "$up" -m '{"method":"report","msgToken":"mq6","params":{"brightness":1},"colour":"red"}' || fail "mosquitto_pub"
gw_pub -t "$up" -m 'not json at all' || fail "mosquitto_pub"
gw_pub -t "$up" -m '{"method":"report","msgToken":"mq7","params":{}' || fail "mosquitto_pub"
wait "$SUBPID"; SUBPID=
CASE="mqtt uplink the decoder refuses: error reply on the reply topic"
grep '"msgToken":"mq6"' "$TMP/down2" | grep '"code":100400' | grep '"method":"reportReply"' | grep -q '"msg":"unknown field"' ||
    fail "$CASE: $(cat "$TMP/down2")"; ok
for _ in $(seq 50); do [ "$(grep -c 'mqtt uplink from .*/edge-sub-2 .* refused' "$TMP/igwd.err")" -ge 1 ] && break; sleep 0.1; done
CASE="mqtt refusals logged once a minute per device"
[ "$(grep -c "mqtt uplink from $PID_/edge-sub-2 on thing/property refused: unknown field" "$TMP/igwd.err")" = 1 ] &&
    [ "$(grep -c "mqtt uplink from $PID_/edge-sub-2 .* refused" "$TMP/igwd.err")" = 1 ] || fail "$CASE: $(grep refused "$TMP/igwd.err")"; ok
CASE="mqtt refusals counted"; curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
grep -Eq '^igw_mqtt_dropped_total\{reason="decode"\} 3$' "$TMP/metrics" || fail "$CASE: $(grep dropped "$TMP/metrics")"; ok
[ "$(psql_q "SELECT count(*) FROM device_messages WHERE msg_token IN ('mq6', 'mq7')")" = 0 ] || fail "refused uplinks stored"; ok
# A device may not listen to another device's downlinks.
CASE="mqtt subscribe refused"
timeout 5 mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&$DEV" -u "$MU" -P "$MP" -q 1 -E \
    -t "\$thing/down/property/$SUB_P/$SUB_D" >"$TMP/subx" 2>&1
grep -qi "denied" "$TMP/subx" || fail "$CASE: $(cat "$TMP/subx")"; ok
CASE="mqtt subscribe to its own downlinks allowed"
timeout 5 mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&$DEV" -u "$MU" -P "$MP" -q 1 -E \
    -t "\$thing/down/property/$PID_/$DEV" >"$TMP/subx" 2>&1 || fail "$CASE: $(cat "$TMP/subx")"; ok

# The media handle over MQTT (its topics allowed by the broker from the
# schema's handles): a capability report and a message on a leg, each
# answered on its down topic.
mosquitto_sub -h 127.0.0.1 -p "$IGW_MQTT_PORT" -i "$PID_&edge-sub-2" -u "$(jq -r .username <<<"$SUB2")" \
    -P "$(jq -r .password <<<"$SUB2")" -q 1 -v -C 2 -W 15 \
    -t "\$media/down/capability/$PID_/edge-sub-2" -t "\$media/down/session/$PID_/edge-sub-2" >"$TMP/mdown" 2>&1 &
SUBPID=$!
sleep 0.5
gw_pub -t "\$media/up/capability/$PID_/edge-sub-2" \
    -m '{"method":"report","msgToken":"mc1","params":{"cameras":[{"cameraId":"cam-1","video":["H264"]}],"microphone":false,"speaker":false,"maxUpstreams":2,"confirmPolicy":"auto"}}' ||
    fail "mosquitto_pub"
gw_pub -t "\$media/up/session/$PID_/edge-sub-2" \
    -m '{"method":"bye","msgToken":"mc2","sessionId":"leg-x","params":{"reason":"cameraShutdown"}}' || fail "mosquitto_pub"
wait "$SUBPID"; SUBPID=
CASE="mqtt media capability reportReply"
grep -q "^\$media/down/capability/$PID_/edge-sub-2 {\"code\":200,\"method\":\"reportReply\",\"msgToken\":\"mc1\"}$" "$TMP/mdown" ||
    fail "$CASE: $(cat "$TMP/mdown")"; ok
CASE="mqtt media bye on an unknown leg: byeReply 100404 from the engine"
grep "^\$media/down/session/$PID_/edge-sub-2 " "$TMP/mdown" | grep '"msgToken":"mc2"' | grep '"method":"byeReply"' |
    grep '"code":100404' | grep -q '"msg":"unknown session"' || fail "$CASE: $(cat "$TMP/mdown")"; ok
CASE="mqtt media capability stored as the latest report"
[ "$(psql_q "SELECT body->'params'->>'maxUpstreams' FROM device_messages WHERE device_name='edge-sub-2' AND handle='media' AND msg_type='capability' ORDER BY received_at DESC, message_id DESC LIMIT 1")" = 2 ] ||
    fail "$CASE"; ok

# ---- the upload's URL expired (url_ttl_s 4) ---------------------------------------------------
while [ "$(date +%s)" -lt "$expiry_at" ]; do sleep 0.2; done
CASE="expired URL"; STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' "http://127.0.0.1:$PORT$expiry_uri"); expect 404 100404

# ---- readiness and metrics from the live connections ---------------------------------------------
CASE="metrics"; curl -s "http://127.0.0.1:$PORT/metrics" >"$TMP/metrics"
grep -Eq '^igw_db_queries_total\{result="ok"\} [1-9]' "$TMP/metrics" &&
    grep -Eq '^igw_db_round_trip_seconds_count [1-9]' "$TMP/metrics" &&
    grep -Eq '^igw_mqtt_messages_total\{direction="in"\} [1-9]' "$TMP/metrics" &&
    grep -Eq '^igw_mqtt_messages_total\{direction="out"\} [1-9]' "$TMP/metrics" &&
    grep -Eq '^igw_mqtt_connected 1$' "$TMP/metrics" &&
    grep -Eq '^igw_requests_total\{route="device_send",code="200"\} [1-9]' "$TMP/metrics" ||
    fail "$CASE: $(grep -E 'igw_db|igw_mqtt' "$TMP/metrics")"; ok
grep -Eq '^igw_redis_connections\{state="ready"\} 2$' "$TMP/metrics" || fail "$CASE: redis $(grep -E 'igw_redis' "$TMP/metrics")"; ok
CASE="readyz with every service up"; STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' "http://127.0.0.1:$PORT/readyz")
expect 200 200
# Judged from the live connections: Redis stopped shows at once, and back.
redis-cli -p "$IGW_REDIS_PORT" shutdown nosave >/dev/null 2>&1
for _ in $(seq 50); do
    STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' "http://127.0.0.1:$PORT/readyz"); [ "$STATUS" = 503 ] && break; sleep 0.1
done
CASE="readyz with redis down"; expect 503 100503
jq -e '.data.down == ["redis"]' "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"; ok
"$ROOT/src/ops/services.sh" up >/dev/null 2>&1 || fail "services.sh up again"
for _ in $(seq 60); do
    STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' "http://127.0.0.1:$PORT/readyz"); [ "$STATUS" = 200 ] && break; sleep 0.1
done
CASE="readyz after redis is back"; expect 200 200

# ---- clean stop ------------------------------------------------------------------------------
igw_stop
grep -q "ERROR: \(Address\|Leak\)Sanitizer\|runtime error" "$TMP/igwd.err" && fail "sanitizer report"
echo "edge test: $checks checks passed"
