#!/usr/bin/env bash
# check.sh IGWCTL - `igwctl check` decides bodies the way the spec says.
# Each case: route, body, expected exit status, expected stdout prefix
# (the canonical request, or {"code":N,"reason":...,"path":P} with the reason
# elided here since only code and path are contractual).
set -uo pipefail
ctl=$1
pass=0 fail=0
I=/api/v1/im/interaction
V=/api/v1/im/vision-consents
D=/api/v1/things/device/edge

run() { # name route status expected body
    local name=$1 route=$2 want_status=$3 want=$4 body=$5 out status
    out=$(printf '%s' "$body" | "$ctl" check "$route")
    status=$?
    # Drop the free-text reason so only code and path are compared.
    local shown
    shown=$(printf '%s' "$out" | sed -E 's/"reason":"([^"\\]|\\.)*",//')
    if [ "$status" -ne "$want_status" ] || [ "$shown" != "$want" ]; then
        echo "FAIL $name: status $status (want $want_status)"
        echo "  got:  $shown"
        echo "  want: $want"
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
}
err() { printf '{"code":%s,"path":"%s"}' "$1" "$2"; }

open='{"msgToken":"t1","method":"interaction.open","target":{"productID":"p1","deviceName":"d1"},"params":{"purpose":"ipcLiveView","cameraId":"cam-1"}}'
run canonical-reorders "$I/commands" 0 \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.open","target":{"productID":"p1","deviceName":"d1"},"params":{"purpose":"ipcLiveView","cameraId":"cam-1"}}}' \
    "{ \"command\" : $open , \"endpointId\" : \"ep\" }"
run command-as-string "$I/commands" 1 "$(err 100400 /command)" '{"endpointId":"ep","command":"{\"msgToken\":\"t\"}"}'
run extra-top-level "$I/commands" 1 "$(err 100400 /enterpriseId)" "{\"endpointId\":\"ep\",\"command\":$open,\"enterpriseId\":\"1\"}"
run endpoint-in-envelope "$I/commands" 1 "$(err 100400 /command/endpointId)" \
    '{"endpointId":"ep","command":{"endpointId":"ep","msgToken":"t1","method":"device.action","target":{"productID":"p","deviceName":"d"},"params":{"actionID":"a","input":{}}}}'
run preview-with-callId "$I/commands" 1 "$(err 100400 /command/params/callId)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.open","target":{"productID":"p","deviceName":"d"},"params":{"purpose":"ipcLiveView","cameraId":"c","callId":"call"}}}'
run talk-needs-callId "$I/commands" 1 "$(err 100400 /command/params/callId)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.open","target":{"productID":"p","deviceName":"d"},"params":{"purpose":"ipcTalk","cameraId":"c"}}}'
run listenAudio-null "$I/commands" 1 "$(err 100400 /command/params/listenAudio)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.open","target":{"productID":"p","deviceName":"d"},"params":{"purpose":"ipcLiveView","cameraId":"c","listenAudio":null}}}'
run clip-on-preview "$I/commands" 1 "$(err 100400 /command/params/clip)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.open","target":{"productID":"p","deviceName":"d"},"params":{"purpose":"ipcLiveView","cameraId":"c","clip":{"startMs":0,"endMs":5}}}}'
run callType-not-open "$I/commands" 1 "$(err 100501 /command/params/callType)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.open","target":{"productID":"p","deviceName":"d"},"params":{"purpose":"ipcTalk","cameraId":"c","callId":"k","callType":"voice"}}}'
run end-needs-session "$I/commands" 1 "$(err 100400 /command/sessionId)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.end","params":{"reason":"userHangup"}}}'
run open-forbids-session "$I/commands" 1 "$(err 100400 /command/sessionId)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.open","sessionId":"s","target":{"productID":"p","deviceName":"d"},"params":{"purpose":"ipcLiveView","cameraId":"c"}}}'
run leave-epoch-float "$I/commands" 1 "$(err 100400 /command/params/expectedMemberEpoch)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.leave","sessionId":"s","params":{"callId":"k","participantId":"7","expectedMemberEpoch":1e0}}}'
run leave-participant-leading-zero "$I/commands" 1 "$(err 100400 /command/params/participantId)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.leave","sessionId":"s","params":{"callId":"k","participantId":"07","expectedMemberEpoch":1}}}'
run processor-detach-consents "$I/commands" 1 "$(err 100400 /command/params/consentIds)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.processorControl","sessionId":"s","params":{"processorId":"p","processor":"aiAssist","operation":"detach","sourceTrackIds":["v"],"consentIds":["c"]}}}'
run translation-attach-language "$I/commands" 1 "$(err 100400 /command/params/targetLanguage)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.processorControl","sessionId":"s","params":{"processorId":"p","processor":"translation","operation":"attach","sourceTrackIds":["v"],"consentIds":["c"]}}}'
run unknown-method "$I/commands" 1 "$(err 100400 /command/method)" \
    '{"endpointId":"ep","command":{"msgToken":"t1","method":"interaction.dance","params":{}}}'
run trailing-bytes "$I/events" 1 "$(err 100400 "")" '{"endpointId":"ep","limit":1} x'
run limit-over "$I/events" 1 "$(err 100400 /limit)" '{"endpointId":"ep","limit":33}'
run limit-minus-zero "$I/events" 1 "$(err 100400 /limit)" '{"endpointId":"ep","limit":-0}'
run roster-cursor "$I/events" 1 "$(err 100400 /afterSeq)" '{"endpointId":"ep","limit":1,"afterSeq":3}'
run ack-duplicate-ids "$I/events/ack" 1 "$(err 100400 /deliveryIds/1)" '{"endpointId":"ep","deliveryIds":["a","a"]}'
run ack-empty "$I/events/ack" 1 "$(err 100400 /deliveryIds)" '{"endpointId":"ep","deliveryIds":[]}'
run escaped-duplicate "$I/events" 1 "$(err 100400 /limit)" '{"endpointId":"ep","limit":1,"\u006cimit":2}'
run audio-read-3 "$I/talk/audio-access" 0 '{"operation":"read","callId":"k","targetUserID":"9007199254740991"}' \
    '{"operation":"read","callId":"k","targetUserID":"9007199254740991"}'
run audio-read-allowed "$I/talk/audio-access" 1 "$(err 100400 /allowed)" \
    '{"operation":"read","callId":"k","targetUserID":"1","allowed":false}'
run audio-set-missing-revision "$I/talk/audio-access" 1 "$(err 100400 /expectedRevision)" \
    '{"operation":"set","callId":"k","targetUserID":"1","allowed":false}'
run audio-target-number "$I/talk/audio-access" 1 "$(err 100400 /targetUserID)" '{"operation":"read","callId":"k","targetUserID":1}'
run audio-target-unsafe "$I/talk/audio-access" 1 "$(err 100400 /targetUserID)" '{"operation":"read","callId":"k","targetUserID":"9007199254740992"}'
run audio-callId-97 "$I/talk/audio-access" 1 "$(err 100400 /callId)" \
    "{\"operation\":\"read\",\"callId\":\"$(printf 'k%.0s' $(seq 97))\",\"targetUserID\":\"1\"}"
run recordings-window "$I/recordings/query" 1 "$(err 100400 /endTimeMs)" \
    '{"endpointId":"ep","target":{"productID":"p","deviceName":"d"},"cameraId":"c","startTimeMs":0,"endTimeMs":86400001,"limit":1}'
run recordings-order "$I/recordings/query" 1 "$(err 100400 /startTimeMs)" \
    '{"endpointId":"ep","target":{"productID":"p","deviceName":"d"},"cameraId":"c","startTimeMs":5,"endTimeMs":5,"limit":1}'
run consent-wildcard "$V/get-one" 1 "$(err 100400 /consentId)" '{"consentId":"abc*"}'
run consent-space "$V/get-one" 1 "$(err 100400 /consentId)" '{"consentId":" abc"}'
run consent-nbsp-edge "$V/get-one" 1 "$(err 100400 /consentId)" $'{"consentId":"abc\u00a0"}'
run consent-c1-control "$V/get-one" 1 "$(err 100400 /consentId)" $'{"consentId":"a\xc2\x85b"}'
run consent-nbsp-inside "$V/get-one" 0 $'{"consentId":"a\xc2\xa0b"}' $'{"consentId":"a\xc2\xa0b"}'
run revoke-at-bound "$V/revoke" 1 "$(err 100400 /expectedRevision)" '{"consentId":"c","expectedRevision":9007199254740991}'
run revoke-ok "$V/revoke" 0 '{"consentId":"c","expectedRevision":9007199254740990}' '{"consentId":"c","expectedRevision":9007199254740990}'
run consent-cap "$V/create" 1 "$(err 100413 "")" "{\"msgToken\":\"$(head -c 5000 /dev/zero | tr '\0' a)\"}"
run register-no-body "$I/endpoints/register" 0 "" ''
run register-body "$I/endpoints/register" 1 "$(err 100400 "")" '{}'
run device-null-param "$D/send/thing/property" 1 "$(err 100400 /params)" '{"method":"report","msgToken":"m","params":null}'
run lone-surrogate "$D/send/thing/property" 1 "$(err 100400 /msgToken)" '{"method":"report","msgToken":"\ud800"}'
run unknown-route /api/v1/nope 2 "$(err 100404 "")" '{}'
echo "igwctl check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
