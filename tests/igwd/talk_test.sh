#!/usr/bin/env bash
# talk_test.sh IGWD IGWCTL - the conference runtime (issue 16): igw's
# stand-in IM back end (/api/v1/im-standin/...: groups in PostgreSQL, live
# calls in Redis by src/igwd/call/call.lua) and /talk/audio-access, through
# the public API against real PostgreSQL and Redis: membership and
# initiator rules, the compare-and-set (stale revision, equal value, a
# re-entry between read and write, many concurrent sets: one wins), the
# head-count rule, heartbeat lapses, every key with a lifetime, an unwired
# runtime, and Redis frozen mid-operation (a clear error, nothing half
# written, no internal cause).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
IGWD=$(realpath "${1:?usage: talk_test.sh IGWD IGWCTL}")
IGWCTL=$(realpath "${2:?usage: talk_test.sh IGWD IGWCTL}")
export IGWCTL
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
igw_services_test talk "${TALK_PG_PORT:-25406}" "${TALK_REDIS_PORT:-63806}" "${TALK_MQTT_PORT:-18906}"
KEY=$IGW_VAR/jwt.key
start() {
    igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_REDIS_HOST=127.0.0.1 \
        IGW_REDIS_PORT="$IGW_REDIS_PORT" IGW_CHECK_TIMEOUT_MS=500 IGW_DB_TIMEOUT_MS=1000 IGW_MEDIA_THREADS=0 IGW_IM_STANDIN=true \
        IGW_IM_MAX_CALLS_PER_GROUP=8 IGW_IM_MAX_CALLS_PER_USER=8 "$@"
    BASE=http://127.0.0.1:$PORT
}
start
A=$(j .user.token) B=$(j .otherUser.token) C=$(j .thirdUser.token) X=$(j .otherEnterpriseUser.token)
GROUP=$(j .group.groupId)
post() { # TOKEN PATH BODY: the reply in $TMP/r, its HTTP status in STATUS
    STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
        -H 'content-type: application/json' --data-binary "$3" "$BASE$2")
}
im() { post "$1" "/api/v1/im-standin/$2" "$3"; }
aa() { post "$1" /api/v1/im/interaction/talk/audio-access "$2"; }
r() { jq -r "$1" "$TMP/r"; }
rcli() { redis-cli -h 127.0.0.1 -p "$IGW_REDIS_PORT" "$@"; }
now_ms() { date +%s%3N; }

# ---- groups ------------------------------------------------------------------------------------
CASE="group create: the creator and its enterprise's users"
im "$A" groups/create '{"name":"pair","members":["1002"]}'; expect 200 200
PAIR=$(r .data.groupId)
[ "$(psql_q "SELECT string_agg(user_id::text, ',' ORDER BY user_id) FROM im_group_members WHERE group_id = '$PAIR'")" = 1001,1002 ] ||
    fail "$CASE: members $(psql_q "SELECT user_id FROM im_group_members WHERE group_id = '$PAIR'")"; ok
n_groups=$(psql_q "SELECT count(*) FROM im_groups")
CASE="group create: a user of another enterprise is refused, nothing written"
im "$A" groups/create '{"name":"x","members":["1002","2001"]}'; expect 400 100400 /members
CASE="group create: an unknown user is refused"
im "$A" groups/create '{"name":"x","members":["999999"]}'; expect 400 100400 /members
CASE="group create: strict body (duplicate members, a number, leading zero, extra field)"
im "$A" groups/create '{"name":"x","members":["1002","1002"]}'; expect 400 100400 /members/1
im "$A" groups/create '{"name":"x","members":[1002]}'; expect 400 100400 /members/0
im "$A" groups/create '{"name":"x","members":["01002"]}'; expect 400 100400 /members/0
im "$A" groups/create '{"name":"x","members":["1002"],"enterpriseId":1}'; expect 400 100400 /enterpriseId
CASE="group create: nothing half written"
[ "$(psql_q "SELECT count(*) FROM im_groups")" = "$n_groups" ] || fail "$CASE"; ok

# ---- calls ----------------------------------------------------------------------------------------
CASE="call start: by a member of the group, who is its initiator with memberEpoch 1"
im "$A" calls/start "{\"groupId\":\"$GROUP\"}"; expect 200 200
CALL=$(r .data.callId)
[ "$(r .data.memberEpoch)" = 1 ] || fail "$CASE: $(cat "$TMP/r")"
d=$(r .data.deadlineAt); t=$(now_ms)
[ "$d" -gt "$t" ] && [ "$d" -le $((t + 31000)) ] || fail "$CASE: deadline $d at $t"; ok
CASE="call start: another enterprise's user cannot start a call of the group"
im "$X" calls/start "{\"groupId\":\"$GROUP\"}"; expect 403 100403
CASE="call start: an unknown group"
im "$A" calls/start '{"groupId":"no-such-group"}'; expect 403 100403
CASE="call join: members join with their first join instance"
im "$B" calls/join "{\"callId\":\"$CALL\"}"; expect 200 200
[ "$(r .data.memberEpoch)" = 1 ] || fail "$CASE: $(cat "$TMP/r")"
im "$C" calls/join "{\"callId\":\"$CALL\"}"; expect 200 200
CASE="call join: a repeat while live is the same instance"
im "$C" calls/join "{\"callId\":\"$CALL\"}"; expect 200 200
[ "$(r .data.memberEpoch)" = 1 ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="call join: another enterprise does not see the call"
im "$X" calls/join "{\"callId\":\"$CALL\"}"; expect 404 100404 /callId
CASE="roster: three live members, the initiator named"
im "$B" calls/roster "{\"callId\":\"$CALL\"}"; expect 200 200
[ "$(jq -c '[.data.initiator, (.data.members | map(.userId) | sort)]' "$TMP/r")" = '["1001",["1001","1002","1003"]]' ] ||
    fail "$CASE: $(cat "$TMP/r")"; ok
CASE="redis: every key of the call has a lifetime, all in one hash slot"
keys=$(rcli --scan --pattern "igw:{call:$CALL}:*" | sort | tr '\n' ' ')
[ "$keys" = "igw:{call:$CALL}:live igw:{call:$CALL}:mem igw:{call:$CALL}:meta " ] || fail "$CASE: keys $keys"
for k in $keys; do
    ttl=$(rcli pttl "$k"); [ "$ttl" -gt 0 ] || fail "$CASE: $k pttl $ttl"
done
[ "$(rcli cluster keyslot "igw:{call:$CALL}:meta" 2>/dev/null || echo x)" = "$(rcli cluster keyslot "igw:{call:$CALL}:live" 2>/dev/null || echo y)" ] ||
    true; ok

# ---- igwctl call: the same API from the command line ----------------------------------------------
CASE="igwctl call start/join/roster/hangup as users of the demo group"
ctl() { IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" "$IGWCTL" "$@"; }
out=$(ctl call start --user 1001 --group "$GROUP" --url "$BASE") || fail "$CASE: start: $out"
CCALL=$(jq -r .data.callId <<<"$out")
[ "$(jq -r .data.memberEpoch <<<"$out")" = 1 ] || fail "$CASE: $out"
out=$(ctl call join --user 1003 --call "$CCALL" --url "$BASE") || fail "$CASE: join: $out"
out=$(ctl call heartbeat --user 1003 --call "$CCALL" --url "$BASE") || fail "$CASE: heartbeat: $out"
out=$(ctl call roster --user 1002 --call "$CCALL" --url "$BASE") || fail "$CASE: roster: $out"
[ "$(jq -c '.data.members | map(.userId) | sort' <<<"$out")" = '["1001","1003"]' ] || fail "$CASE: $out"
out=$(ctl call hangup --user 1003 --call "$CCALL" --url "$BASE") || fail "$CASE: hangup: $out"
[ "$(jq -r .data.ended <<<"$out")" = true ] || fail "$CASE: $out"; ok
CASE="igwctl call: a refusal is the envelope on stderr, exit 1"
if out=$(ctl call join --user 2001 --call "$CCALL" --url "$BASE" 2>&1); then fail "$CASE: exit 0: $out"; fi
[ "$(jq -r .code <<<"$out")" = 100404 ] || fail "$CASE: $out"; ok

# ---- /talk/audio-access --------------------------------------------------------------------------
CASE="audio read: a member reads another member's record (exactly the six fields)"
aa "$B" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 200 200
[ "$(jq -c '.data | del(.expiresAt)' "$TMP/r")" = "{\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"publishAllowed\":true,\"audioRevision\":1,\"memberEpoch\":1}" ] ||
    fail "$CASE: $(cat "$TMP/r")"
e=$(r .data.expiresAt); t=$(now_ms)
[ "$e" -le $((t + 2000)) ] && [ "$e" -gt $((t - 1000)) ] || fail "$CASE: expiresAt $e, now $t"; ok
CASE="audio: strict body before authorization"
aa "$B" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":true}"; expect 400 100400 /allowed
aa "$A" "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":false}"; expect 400 100400 /expectedRevision
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":1003}"; expect 400 100400 /targetUserID
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"01003\"}"; expect 400 100400 /targetUserID
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"memberEpoch\":1}"; expect 400 100400 /memberEpoch
aa "$A" "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":null,\"expectedRevision\":1}"; expect 400 100400 /allowed
aa "$A" "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":false,\"expectedRevision\":1.0}"; expect 400 100400 /expectedRevision
aa "$A" "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":false,\"expectedRevision\":9007199254740992}"; expect 400 100400 /expectedRevision
aa "$A" "{\"operation\":\"read\",\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 400 100400 /operation
aa "$A" "{\"operation\":\"read\",\"callId\":\"$(printf 'c%.0s' $(seq 97))\",\"targetUserID\":\"1003\"}"; expect 400 100400 /callId
CASE="audio set: only the original initiator"
aa "$B" "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":false,\"expectedRevision\":1}"; expect 403 100403
CASE="audio set: the initiator mutes a member (revision 2)"
aa "$A" "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":false,\"expectedRevision\":1}"; expect 200 200
[ "$(jq -c '[.data.publishAllowed, .data.audioRevision, .data.memberEpoch]' "$TMP/r")" = '[false,2,1]' ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="audio set: an equal value with a valid CAS does not raise the revision"
aa "$A" "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":false,\"expectedRevision\":2}"; expect 200 200
[ "$(jq -c '[.data.publishAllowed, .data.audioRevision]' "$TMP/r")" = '[false,2]' ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="audio set: a stale revision is the public parameter error, never forced"
aa "$A" "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":true,\"expectedRevision\":1}"; expect 400 100400 /expectedRevision
aa "$B" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 200 200
[ "$(jq -c '[.data.publishAllowed, .data.audioRevision]' "$TMP/r")" = '[false,2]' ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="audio: another enterprise's user does not see the call"
aa "$X" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 404 100404 /callId
CASE="audio: a target that is not live"
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1002000\"}"; expect 404 100404 /targetUserID
CASE="audio: a caller outside the call's persistent group (a live call of the pair group)"
im "$A" calls/start "{\"groupId\":\"$PAIR\"}"; expect 200 200
PCALL=$(r .data.callId)
aa "$C" "{\"operation\":\"read\",\"callId\":\"$PCALL\",\"targetUserID\":\"1001\"}"; expect 403 100403
CASE="audio: a group member not live in the call"
aa "$B" "{\"operation\":\"read\",\"callId\":\"$PCALL\",\"targetUserID\":\"1001\"}"; expect 403 100403

CASE="re-entry: a hang-up and a join raise memberEpoch; the permission stays"
im "$C" calls/hangup "{\"callId\":\"$CALL\"}"; expect 200 200
[ "$(r .data.ended)" = false ] || fail "$CASE: $(cat "$TMP/r")"
im "$C" calls/join "{\"callId\":\"$CALL\"}"; expect 200 200
[ "$(r .data.memberEpoch)" = 2 ] || fail "$CASE: $(cat "$TMP/r")"
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 200 200
[ "$(jq -c '[.data.publishAllowed, .data.audioRevision, .data.memberEpoch]' "$TMP/r")" = '[false,2,2]' ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="re-entry between the read and the write: refused before writing, even with an equal revision"
LUA=$ROOT/src/igwd/call/call.lua
K="igw:{call:$CALL}:meta igw:{call:$CALL}:live igw:{call:$CALL}:mem igw:{call:$CALL}:rcpt"
# set as igwd runs it, with the join instance read before the re-entry (1): the script refuses
# shellcheck disable=SC2086
out=$(rcli EVAL "$(cat "$LUA")" 4 $K audio_set 1 1001 1003 1 2 1 "$CALL" | head -1)
[ "$out" = EPOCH ] || fail "$CASE: $out"
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 200 200
[ "$(jq -c '[.data.publishAllowed, .data.audioRevision]' "$TMP/r")" = '[false,2]' ] || fail "$CASE: $(cat "$TMP/r")"; ok

CASE="concurrency: 40 sets with the same expectedRevision, exactly one wins"
pids=()
for i in $(seq 40); do
    ( s=$(curl -s -o "$TMP/cas.$i" -w '%{http_code}' -X POST -H "Authorization: Bearer $A" -H 'content-type: application/json' \
        --data-binary "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":true,\"expectedRevision\":2}" \
        "$BASE/api/v1/im/interaction/talk/audio-access"); echo "$s" >"$TMP/cas.$i.status" ) &
    pids+=($!)
done
wait "${pids[@]}" # not igwd
wins=$(cat "$TMP"/cas.*.status | grep -c '^200$')
stale=$(for i in $(seq 40); do jq -r '.data.path // ""' "$TMP/cas.$i"; done | grep -c '^/expectedRevision$')
[ "$wins" = 1 ] && [ "$stale" = 39 ] || fail "$CASE: $wins won, $stale stale: $(cat "$TMP"/cas.*.status | sort | uniq -c)"
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 200 200
[ "$(jq -c '[.data.publishAllowed, .data.audioRevision]' "$TMP/r")" = '[true,3]' ] || fail "$CASE: $(cat "$TMP/r")"; ok

# ---- leave receipts: capacity 256, no eviction ------------------------------------------------------
CASE="receipts: 200 exits, then 57 concurrent ones (call.lua as igwd runs it): the 257th is refused, nothing evicted"
im "$A" calls/start "{\"groupId\":\"$GROUP\"}"; expect 200 200
RCALL=$(r .data.callId)
RK="igw:{call:$RCALL}:meta igw:{call:$RCALL}:live igw:{call:$RCALL}:mem igw:{call:$RCALL}:rcpt"
LUA=$ROOT/src/igwd/call/call.lua
SHA=$(rcli SCRIPT LOAD "$(cat "$LUA")")
# (the script's own join and leave: the group check is igwd's, before it)
rcli EVALSHA "$SHA" 4 $RK join 1 1002 60000 "$RCALL" >/dev/null # keeps the call over two members
# 200 exits of one member, each of its next join instance
for i in $(seq 200); do
    echo "EVALSHA $SHA 4 $RK join 1 10001 60000 $RCALL"
    echo "EVALSHA $SHA 4 $RK leave 1 10001 10001 $i s$i 60000 $RCALL"
done | rcli | grep -c '^OK$' >"$TMP/seq.ok"
[ "$(cat "$TMP/seq.ok")" = 400 ] || fail "$CASE: $(cat "$TMP/seq.ok") of 400 joins and exits ok"
for u in $(seq 20001 20057); do echo "EVALSHA $SHA 4 $RK join 1 $u 60000 $RCALL"; done | rcli >/dev/null
pids=()
for u in $(seq 20001 20057); do
    # shellcheck disable=SC2086
    ( rcli EVALSHA "$SHA" 4 $RK leave 1 "$u" "$u" 1 "k$u" 60000 "$RCALL" | head -1 >"$TMP/leave.$u" ) &
    pids+=($!)
done
wait "${pids[@]}"
okn=$(cat "$TMP"/leave.2* | grep -c '^OK$'); full=$(cat "$TMP"/leave.2* | grep -c '^FULL$')
[ "$okn" = 56 ] && [ "$full" = 1 ] || fail "$CASE: $okn OK, $full FULL: $(cat "$TMP"/leave.2* | sort | uniq -c)"
[ "$(rcli HLEN "igw:{call:$RCALL}:rcpt")" = 256 ] || fail "$CASE: $(rcli HLEN "igw:{call:$RCALL}:rcpt") receipts"
# shellcheck disable=SC2086
[ "$(rcli EVALSHA "$SHA" 4 $RK receipt 1 s1 "$RCALL" | head -1)" = OK ] || fail "$CASE: the first receipt was evicted"
# shellcheck disable=SC2086
[ "$(rcli EVALSHA "$SHA" 4 $RK leave 1 10001 10001 1 s1 60000 "$RCALL" | head -1)" = REPLAY ] ||
    fail "$CASE: a receipt's key does not replay"; ok
CASE="receipts: the refused member is still live, beside the initiator and 1002"
refused=$(for u in $(seq 20001 20057); do [ "$(cat "$TMP/leave.$u")" = FULL ] && echo "$u"; done)
im "$A" calls/roster "{\"callId\":\"$RCALL\"}"; expect 200 200
[ "$(jq -c '.data.members | map(.userId) | sort' "$TMP/r")" = "[\"1001\",\"1002\",\"$refused\"]" ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="a call holds 256 live members at most"
for u in $(seq 30001 30253); do echo "EVALSHA $SHA 4 $RK join 1 $u 60000 $RCALL"; done | rcli >/dev/null
# shellcheck disable=SC2086
[ "$(rcli ZCARD "igw:{call:$RCALL}:live")" = 256 ] && [ "$(rcli EVALSHA "$SHA" 4 $RK join 1 39999 60000 "$RCALL" | head -1)" = CALL_FULL ] ||
    fail "$CASE: $(rcli ZCARD "igw:{call:$RCALL}:live") live"
im "$C" calls/join "{\"callId\":\"$RCALL\"}"; expect 429 100429
im "$A" calls/roster "{\"callId\":\"$RCALL\"}"; expect 200 200
[ "$(jq '.data.members | length' "$TMP/r")" = 256 ] || fail "$CASE: roster of $(jq '.data.members | length' "$TMP/r")"; ok

# ---- PostgreSQL frozen: the group check cannot run ----------------------------------------------------
CASE="postgres frozen: audio read is unavailable, no internal cause"
"$ROOT/tests/pg_signal.sh" STOP "$IGW_VAR/pg" || fail "$CASE: cannot freeze postgres"
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"
"$ROOT/tests/pg_signal.sh" CONT "$IGW_VAR/pg"
expect 503 100503
grep -qiE 'postgres|sqlstate|timed out' "$TMP/r" && fail "$CASE: internal cause in $(cat "$TMP/r")"

# ---- Redis frozen mid-operation ---------------------------------------------------------------------
CASE="redis frozen: read is unavailable, set is unknown_outcome, no internal cause"
for _ in $(seq 50); do aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; [ "$STATUS" = 200 ] && break; sleep 0.1; done
RPID=$(rcli info server | sed -n 's/^process_id:\([0-9]*\).*/\1/p' | tr -d '\r')
[ -n "$RPID" ] || fail "$CASE: no redis pid"
kill -STOP "$RPID"
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 503 100503
aa "$A" "{\"operation\":\"set\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\",\"allowed\":false,\"expectedRevision\":3}"
kill -CONT "$RPID"
# the set's peek (a read) or its script may be the one left unanswered: unavailable or unknown, never success
{ [ "$STATUS" = 503 ] && expect 503 100503; } || { [ "$STATUS" = 504 ] && expect 504 100504; } || fail "$CASE: $STATUS $(cat "$TMP/r")"
grep -qiE 'redis|timed out|connection|6380' "$TMP/r" && fail "$CASE: internal cause in $(cat "$TMP/r")"
CASE="redis back: the state is whole (the read before retrying says what happened)"
for _ in $(seq 50); do aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; [ "$STATUS" = 200 ] && break; sleep 0.1; done
expect 200 200
rev=$(r .data.audioRevision) allowed=$(r .data.publishAllowed)
{ [ "$rev" = 3 ] && [ "$allowed" = true ]; } || { [ "$rev" = 4 ] && [ "$allowed" = false ]; } || fail "$CASE: $(cat "$TMP/r")"; ok

# ---- the head-count rule ------------------------------------------------------------------------------
CASE="hang-up: with two left the call goes on; with one left it ends"
im "$B" calls/hangup "{\"callId\":\"$CALL\"}"; expect 200 200
[ "$(r .data.ended)" = false ] || fail "$CASE: $(cat "$TMP/r")"
im "$C" calls/hangup "{\"callId\":\"$CALL\"}"; expect 200 200
[ "$(r .data.ended)" = true ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="an ended call cannot be joined"
im "$B" calls/join "{\"callId\":\"$CALL\"}"; expect 404 100404 /callId
CASE="an ended call's keys live at least 10 minutes (at most 10 plus a heartbeat), then go"
for k in $(rcli --scan --pattern "igw:{call:$CALL}:*"); do
    ttl=$(rcli pttl "$k"); [ "$ttl" -gt 590000 ] && [ "$ttl" -le 630000 ] || fail "$CASE: $k pttl $ttl"
done; ok
igw_stop

# ---- heartbeats lapse ----------------------------------------------------------------------------------
start IGW_IM_HEARTBEAT_MS=1000
CASE="heartbeat: a member without one lapses; the others stay"
im "$A" calls/start "{\"groupId\":\"$GROUP\"}"; expect 200 200
CALL=$(r .data.callId)
im "$B" calls/join "{\"callId\":\"$CALL\"}"; expect 200 200
im "$C" calls/join "{\"callId\":\"$CALL\"}"; expect 200 200
for _ in 1 2 3; do
    sleep 0.5
    im "$A" calls/heartbeat "{\"callId\":\"$CALL\"}"; expect 200 200
    im "$B" calls/heartbeat "{\"callId\":\"$CALL\"}"; expect 200 200
done
im "$A" calls/roster "{\"callId\":\"$CALL\"}"; expect 200 200
[ "$(jq -c '.data.members | map(.userId) | sort' "$TMP/r")" = '["1001","1002"]' ] || fail "$CASE: $(cat "$TMP/r")"
im "$C" calls/heartbeat "{\"callId\":\"$CALL\"}"; expect 403 100403
CASE="heartbeat: when lapses leave fewer than two, the call ends"
sleep 1.2
im "$A" calls/heartbeat "{\"callId\":\"$CALL\"}"; expect 404 100404 /callId
igw_stop

# ---- the stand-in's bounds: exact under racing requests -------------------------------------------------
# race N TOKEN PATH BODY: N stand-in requests at once; their HTTP statuses, counted ("200x3 429x9").
race() { igw_race "$1" "$2" "$BASE/api/v1/im-standin/$3" "$4"; }
start IGW_IM_MAX_GROUPS_PER_USER=3 IGW_IM_MAX_CALLS_PER_USER=2 IGW_IM_MAX_CALLS_PER_GROUP=1 IGW_IM_HEARTBEAT_MS=2000
CASE="bounds: 12 group creates at once against im_max_groups_per_user 3: exactly 3"
got=$(race 12 "$C" groups/create '{"name":"many","members":["1002"]}')
[ "$got" = "200x3 429x9" ] || fail "$CASE: $got"
[ "$(psql_q "SELECT count(*) FROM im_groups WHERE owner_user_id = 1003")" = 3 ] || fail "$CASE: groups in the database"; ok
CASE="bounds: the refusal names the setting, nothing made"
im "$C" groups/create '{"name":"one more","members":["1002"]}'; expect 429 100429
grep -q im_max_groups_per_user "$TMP/r" || fail "$CASE: $(cat "$TMP/r")"
[ "$(psql_q "SELECT count(*) FROM im_groups WHERE owner_user_id = 1003")" = 3 ] || fail "$CASE"; ok
mapfile -t CG < <(psql_q "SELECT group_id FROM im_groups WHERE owner_user_id = 1003 ORDER BY group_id")
CASE="bounds: 8 starts at once in one group against im_max_calls_per_group 1: exactly 1"
got=$(race 8 "$C" calls/start "{\"groupId\":\"${CG[0]}\"}")
[ "$got" = "200x1 429x7" ] || fail "$CASE: $got"
im "$C" calls/start "{\"groupId\":\"${CG[0]}\"}"; expect 429 100429 /groupId
grep -q im_max_calls_per_group "$TMP/r" || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="bounds: a second group's call is the user's second; a third is refused (im_max_calls_per_user 2)"
im "$C" calls/start "{\"groupId\":\"${CG[1]}\"}"; expect 200 200
CALL2=$(r .data.callId)
im "$C" calls/start "{\"groupId\":\"${CG[2]}\"}"; expect 429 100429
grep -q im_max_calls_per_user "$TMP/r" || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="bounds: the refused starts left no call in Redis"
[ "$(rcli --scan --pattern 'igw:{call:*}:meta' | while read -r k; do rcli hget "$k" initiator; done | grep -c '^1003$')" = 2 ] ||
    fail "$CASE: $(rcli --scan --pattern 'igw:{call:*}:meta')"; ok
CASE="bounds: a call hung up gives its place back at once"
im "$C" calls/hangup "{\"callId\":\"$CALL2\"}"; expect 200 200
[ "$(r .data.ended)" = true ] || fail "$CASE: $(cat "$TMP/r")"
im "$C" calls/start "{\"groupId\":\"${CG[2]}\"}"; expect 200 200; ok
CASE="bounds: a call nobody heartbeats gives its place back after its lease (im_heartbeat_ms)"
sleep 2.5
im "$C" calls/start "{\"groupId\":\"${CG[0]}\"}"; expect 200 200; ok
CASE="bounds: another member's start is its own (the user's bound is per user)"
im "$B" calls/start "{\"groupId\":\"${CG[1]}\"}"; expect 200 200; ok
igw_stop

# ---- no runtime wired ---------------------------------------------------------------------------------
CASE="unwired: without Redis the conference routes fail explicitly"
igw_start IGW_THREADS=1 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_MEDIA_THREADS=0
BASE=http://127.0.0.1:$PORT
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 503 100503
grep -q 'no conference runtime' "$TMP/r" || fail "$CASE: $(cat "$TMP/r")"
im "$A" calls/start "{\"groupId\":\"$GROUP\"}"; expect 503 100503
igw_stop
CASE="unwired: im_standin=false"
start IGW_IM_STANDIN=false
aa "$A" "{\"operation\":\"read\",\"callId\":\"$CALL\",\"targetUserID\":\"1003\"}"; expect 503 100503
igw_stop
if grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err"; then
    grep -A40 -m1 'ERROR: AddressSanitizer\|runtime error' "$TMP/igwd.err" >&2; fail "sanitizer report"
fi
echo "talk test: $checks checks passed"
