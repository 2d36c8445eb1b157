#!/usr/bin/env bash
# nodes_own_test.sh IGWD IGWCTL - igwd as a node (src/igwd/session/node.c)
# against real services: the `nodes` row and its epoch (1 at the first
# start, 2 after a restart with the same node id), the heartbeat, the sweep
# that ends the sessions of this node's older epoch (nodeRestarted) and of a
# node whose heartbeat lapsed (nodeLost) - each with exactly one
# interaction.state ended event pulled from /events, eventSeq one more than
# the session's - while a live node's session and an already ended one stay
# untouched and a session whose endpoint expired ends without a delivery;
# then the fence (another process took the epoch: one error line, no more
# heartbeat, no more sweep) and the default node id (<host>:<port>). Own
# PostgreSQL, Redis and Mosquitto (own ports and directory).
set -u
IGWD=$(realpath "${1:?usage: nodes_own_test.sh IGWD IGWCTL}")
IGWCTL=$(realpath "${2:?usage: nodes_own_test.sh IGWD IGWCTL}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/igwd/lib.sh"
export IGWCTL
igw_services_test nodes-own "${NODES_OWN_PG_PORT:-25398}" "${NODES_OWN_REDIS_PORT:-63798}" "${NODES_OWN_MQTT_PORT:-18898}"
KEY=$IGW_VAR/jwt.key
TOKEN=$(j .user.token)
NODE=own-a

# start_igwd [VAR=VALUE...]: igwd as node $NODE, heartbeat 200 ms, lapse 2 s; URL in $BASE.
start_igwd() {
    igw_start IGW_THREADS=2 IGW_PG_DSN="$IGW_PG_DSN" IGW_JWT_KEY_FILE="$KEY" IGW_DEVICE_CACHE_MS=0 \
        IGW_NODE_ID="$NODE" IGW_NODE_HEARTBEAT_MS=200 IGW_NODE_LAPSE_MS=2000 "$@"
    BASE=http://127.0.0.1:$PORT/api/v1/im/interaction
}
stop_igwd() { igw_stop; }
call() { # PATH BODY: POST with the user's token; reply in $TMP/r, status in $STATUS
    STATUS=$(curl -s -o "$TMP/r" -w '%{http_code}' -X POST -H "authorization: Bearer $TOKEN" \
        -H 'content-type: application/json' --data-binary "$2" "$BASE$1")
}
metric() { # NAME_AND_LABELS: its value on /metrics
    curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}
metric_is() { # NAME VALUE: the metric has that value now (for wait_for: read again each time)
    [ "$(metric "$1")" = "$2" ]
}
epoch_is() { [ "$(psql_q "SELECT epoch FROM nodes WHERE node_id = '$1'")" = "$2" ]; }
session() { psql_q "SELECT state || '/' || coalesce(reason, '-') || '/' || event_seq FROM sessions WHERE session_id = '$1'"; }
session_is() { [ "$(session "$1")" = "$2" ]; }
# add_session ID NODE EPOCH STATE EVENT_SEQ ENDPOINT [REASON]
add_session() {
    psql_q "INSERT INTO sessions (session_id, enterprise_id, user_id, endpoint_id, state, reason, event_seq, purpose,
                                  camera_id, owner_node, owner_epoch)
            VALUES ('$1', 1, 1001, '$6', '$4', $([ -n "${7-}" ] && echo "'$7'" || echo NULL), $5, 'ipcLiveView',
                    'cam-1', '$2', $3)" >/dev/null || fail "insert session $1"
}
# The interaction.state events of session ID in the last pull ($TMP/r).
state_events() { jq -c --arg s "$1" '[.data.list[] | select(.event.sessionId == $s and .event.method == "interaction.state")]' "$TMP/r"; }

# ---- the first start: epoch 1 ----------------------------------------------------------------
CASE="config: a lapse shorter than two heartbeats is refused"
env -i PATH="$PATH" LSAN_OPTIONS="$LSAN_OPTIONS" IGW_LISTEN=127.0.0.1:0 IGW_PG_DSN="$IGW_PG_DSN" \
    IGW_NODE_HEARTBEAT_MS=800 IGW_NODE_LAPSE_MS=1500 "$IGWD" >/dev/null 2>"$TMP/refused.err"
rc=$?
[ $rc != 0 ] && grep -q "node_lapse_ms (1500) must be at least twice node_heartbeat_ms (800)" "$TMP/refused.err" ||
    fail "$CASE: exit $rc: $(cat "$TMP/refused.err")"; ok

start_igwd
CASE="first start: nodes row, epoch 1"; wait_for 10 epoch_is "$NODE" 1 || fail "$CASE: $(psql_q "TABLE nodes")"; ok
CASE="igw_node_epoch 1"; wait_for 5 metric_is igw_node_epoch 1 || fail "$CASE: $(metric igw_node_epoch)"; ok
hb1=$(psql_q "SELECT heartbeat_at FROM nodes WHERE node_id = '$NODE'")
sleep 0.6
CASE="the heartbeat moves"
[ "$(psql_q "SELECT heartbeat_at > '$hb1' FROM nodes WHERE node_id = '$NODE'")" = t ] || fail "$CASE"; ok

call /endpoints/register ""; EP=$(jq -r .data.endpointId "$TMP/r")
[ -n "$EP" ] && [ "$EP" != null ] || fail "register: $(cat "$TMP/r")"
call /endpoints/register ""; EP_OLD=$(jq -r .data.endpointId "$TMP/r")
psql_q "UPDATE endpoints SET expires_at_ms = 1 WHERE endpoint_id = '$EP_OLD'" >/dev/null

# ---- a lapsed node's sessions end (nodeLost); a live node's do not ---------------------------
# other-live's heartbeat is set in the future: fresh for the whole test
# without a process behind it.
psql_q "INSERT INTO nodes (node_id, epoch, heartbeat_at) VALUES
          ('other-dead', 3, now() - interval '60 seconds'), ('other-live', 1, now() + interval '10 minutes')" >/dev/null
add_session s-lost other-dead 3 invited 0 "$EP"
add_session s-lost-old other-dead 2 established 7 "$EP"
add_session s-live other-live 1 established 2 "$EP"
add_session s-lost-ended other-dead 3 ended 4 "$EP" userHangup
CASE="lapsed node's session ended nodeLost"; wait_for 5 session_is s-lost ended/nodeLost/1 || fail "$CASE: $(session s-lost)"; ok
CASE="and its older epoch's"; wait_for 5 session_is s-lost-old ended/nodeLost/8 || fail "$CASE: $(session s-lost-old)"; ok
sleep 1 # a few more sweeps: none may touch these
CASE="live node's session untouched"; session_is s-live established/-/2 || fail "$CASE: $(session s-live)"; ok
CASE="ended session of the lapsed node untouched"; session_is s-lost-ended ended/userHangup/4 || fail "$CASE: $(session s-lost-ended)"; ok
CASE="igw_sessions_swept_total nodeLost"
[ "$(metric 'igw_sessions_swept_total{reason="nodeLost"}')" = 2 ] || fail "$CASE: $(metric 'igw_sessions_swept_total{reason="nodeLost"}')"; ok

# ---- this node's sessions of its older epoch end at its restart (nodeRestarted) --------------
add_session s-restart "$NODE" 1 established 3 "$EP"
add_session s-ended "$NODE" 1 ended 5 "$EP" userHangup
add_session s-gone "$NODE" 1 established 0 "$EP_OLD"
sleep 0.6
CASE="the running epoch's own sessions are not swept"; session_is s-restart established/-/3 || fail "$CASE: $(session s-restart)"; ok
stop_igwd
start_igwd
CASE="restart: epoch 2"; wait_for 10 epoch_is "$NODE" 2 || fail "$CASE: $(psql_q "TABLE nodes")"; ok
CASE="igw_node_epoch 2"; wait_for 5 metric_is igw_node_epoch 2 || fail "$CASE: $(metric igw_node_epoch)"; ok
CASE="older epoch's session ended nodeRestarted, eventSeq + 1"
wait_for 5 session_is s-restart ended/nodeRestarted/4 || fail "$CASE: $(session s-restart)"; ok
CASE="session of an expired endpoint ended too"; wait_for 5 session_is s-gone ended/nodeRestarted/1 || fail "$CASE: $(session s-gone)"; ok
CASE="already ended session untouched"; session_is s-ended ended/userHangup/5 || fail "$CASE: $(session s-ended)"; ok
CASE="live node's session still untouched"; session_is s-live established/-/2 || fail "$CASE: $(session s-live)"; ok
CASE="igw_sessions_swept_total nodeRestarted"
[ "$(metric 'igw_sessions_swept_total{reason="nodeRestarted"}')" = 2 ] || fail "$CASE: $(metric 'igw_sessions_swept_total{reason="nodeRestarted"}')"; ok

# ---- the events: one interaction.state ended per ended session, through /events -------------
call /events "{\"endpointId\":\"$EP\",\"limit\":32}"
CASE="pull"; expect 200 200
CASE="exactly one state event of the restarted session"
ev=$(state_events s-restart)
[ "$(jq length <<<"$ev")" = 1 ] || fail "$CASE: $ev"; ok
CASE="its envelope"
jq -e '.[0].event == {"msgToken":"s-restart.4","method":"interaction.state","sessionId":"s-restart","eventSeq":4,
                      "data":{"state":"ended","reason":"nodeRestarted"}} and (.[0].deliveryId | test("^[A-Za-z0-9_-]{22}$"))' \
    <<<"$ev" >/dev/null || fail "$CASE: $ev"; ok
# Stored as the generated encoder writes a StateEvent (its fields in schema
# order, no whitespace); /events writes it canonically (keys sorted).
CASE="its stored text: the envelope in schema order"
[ "$(psql_q "SELECT body_text FROM events WHERE session_id = 's-restart'")" = \
  '{"msgToken":"s-restart.4","method":"interaction.state","sessionId":"s-restart","eventSeq":4,"data":{"state":"ended","reason":"nodeRestarted"}}' ] ||
    fail "$CASE: $(psql_q "SELECT body_text FROM events WHERE session_id = 's-restart'")"; ok
CASE="its bytes on /events: canonical"
grep -qF '"event":{"data":{"reason":"nodeRestarted","state":"ended"},"eventSeq":4,"method":"interaction.state","msgToken":"s-restart.4","sessionId":"s-restart"}' "$TMP/r" ||
    fail "$CASE: $(cat "$TMP/r")"; ok
CASE="exactly one state event of each lost session"
[ "$(state_events s-lost | jq -c '[.[].event | [.eventSeq, .data.reason, .msgToken]]')" = '[[1,"nodeLost","s-lost.1"]]' ] &&
    [ "$(state_events s-lost-old | jq -c '[.[].event | [.eventSeq, .data.reason]]')" = '[[8,"nodeLost"]]' ] ||
    fail "$CASE: $(cat "$TMP/r")"; ok
CASE="no event of the untouched sessions"
[ "$(state_events s-live)" = '[]' ] && [ "$(state_events s-ended)" = '[]' ] && [ "$(state_events s-lost-ended)" = '[]' ] ||
    fail "$CASE: $(cat "$TMP/r")"; ok
CASE="nothing else delivered"; [ "$(jq '.data.list | length' "$TMP/r")" = 3 ] || fail "$CASE: $(cat "$TMP/r")"; ok
CASE="the expired endpoint's session: no event, no delivery"
[ "$(psql_q "SELECT (SELECT count(*) FROM events WHERE session_id = 's-gone') + (SELECT count(*) FROM deliveries WHERE session_id = 's-gone')")" = 0 ] ||
    fail "$CASE"; ok
CASE="one event row per ended session"
[ "$(psql_q "SELECT count(*) FROM events WHERE body->>'method' = 'interaction.state'")" = 3 ] || fail "$CASE"; ok

# ---- forwards nobody will claim (issue 28, session/forward.c) ---------------------------------
# A command another node accepted for s-lost, whose owner lapsed and whose
# sweep ended it: this node answers it with the session's end; one for
# s-live (its owner alive) stays for its owner.
psql_q "INSERT INTO commands (enterprise_id, endpoint_id, msg_token, user_id, method, session_id, fingerprint, command)
        VALUES (1, '$EP', 'fw-lost', 1001, 'interaction.end', 's-lost', sha256('a'), '{}'),
               (1, '$EP', 'fw-live', 1001, 'interaction.end', 's-live', sha256('b'), '{}');
        INSERT INTO forwards (owner_node, owner_epoch, enterprise_id, endpoint_id, msg_token, session_id)
        VALUES ('other-dead', 3, 1, '$EP', 'fw-lost', 's-lost'), ('other-live', 1, 1, '$EP', 'fw-live', 's-live')" >/dev/null ||
    fail "insert forwards"
forwards_left() { [ "$(psql_q "SELECT string_agg(msg_token, ',') FROM forwards")" = "$1" ]; }
CASE="the lapsed owner's forward answered, the live owner's left"
wait_for 5 forwards_left fw-live || fail "$CASE: $(psql_q "SELECT * FROM forwards")"; ok
call /events "{\"endpointId\":\"$EP\",\"limit\":32}"
CASE="its result: the session ended (nodeLost)"
jq -e '[.data.list[].event | select(.msgToken == "fw-lost")] == [{"code":100409,"method":"interaction.result","msgToken":"fw-lost",
        "sessionId":"s-lost","data":{"operation":"interaction.end","reason":"the session has ended (nodeLost)"}}]' "$TMP/r" >/dev/null ||
    fail "$CASE: $(cat "$TMP/r")"; ok
CASE="no result for the live owner's"
jq -e '[.data.list[].event | select(.msgToken == "fw-live")] == []' "$TMP/r" >/dev/null || fail "$CASE: $(cat "$TMP/r")"; ok
psql_q "DELETE FROM forwards" >/dev/null

# ---- fenced: another process took this node id's epoch ---------------------------------------
psql_q "UPDATE nodes SET epoch = epoch + 1 WHERE node_id = '$NODE'" >/dev/null
fenced_line() { grep -q "node $NODE: epoch 2 was taken over by another process" "$TMP/igwd.err"; }
CASE="fenced: the error line"; wait_for 5 fenced_line || fail "$CASE"; ok
CASE="igw_node_fenced 1"; [ "$(metric igw_node_fenced)" = 1 ] || fail "$CASE: $(metric igw_node_fenced)"; ok
hb=$(psql_q "SELECT heartbeat_at FROM nodes WHERE node_id = '$NODE'")
add_session s-after-fence other-dead 3 established 0 "$EP"
sleep 1.5
CASE="fenced: the heartbeat no longer moves"
[ "$(psql_q "SELECT heartbeat_at = '$hb' FROM nodes WHERE node_id = '$NODE'")" = t ] || fail "$CASE"; ok
CASE="fenced: no sweep any more"; session_is s-after-fence established/-/0 || fail "$CASE: $(session s-after-fence)"; ok
CASE="fenced: the error once"; [ "$(grep -c "was taken over" "$TMP/igwd.err")" = 1 ] || fail "$CASE"; ok
stop_igwd

# ---- the default node id: the host name and the listening port -------------------------------
NODE= start_igwd
CASE="default node id <host>:<port>, epoch 1"
wait_for 10 epoch_is "$(hostname):$PORT" 1 || fail "$CASE: $(psql_q "SELECT node_id, epoch FROM nodes")"; ok
CASE="a live node sweeps the lapsed node's later session"
wait_for 5 session_is s-after-fence ended/nodeLost/1 || fail "$CASE: $(session s-after-fence)"; ok
stop_igwd

grep -q "ERROR: \(Address\|Leak\)Sanitizer\|runtime error" "$TMP/igwd.err" && fail "sanitizer report"
echo "nodes-own test: $checks checks passed"
