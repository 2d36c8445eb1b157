/* state_sql.h - the interaction.state events of a statement that changes
 * sessions (node.c's sweeps, session.c's transitions), written once so the
 * event's canonical text cannot differ between them. Private to the
 * session room.
 *
 * IGW_SESSION_STATE_EVENTS(DID) follows a CTE `upd` returning, per changed
 * session, sid, ep (its endpoint), seq (its new event_seq), state, playback
 * and pos (a playback's phase and position; NULL: none) and reason (NULL:
 * none). For those whose endpoint is live it inserts the event {msgToken
 * "<sid>.<seq>", method, sessionId, eventSeq, data {state[, playback][,
 * positionMs][, reason]}} (strings escaped by to_json, the envelope's field order) and
 * its delivery with deliveryId DID (an SQL expression), and notifies the
 * endpoints; CTEs ev, dl and ntf can be counted after. Event ids are drawn
 * first (as outbox.c's emit_result) so each delivery knows its event and
 * watermark. */
#ifndef IGW_SESSION_STATE_SQL_H
#define IGW_SESSION_STATE_SQL_H

#include "event/outbox.h"

#define IGW_SESSION_STATE_EVENTS(DID)                                                                               \
    "go AS MATERIALIZED (SELECT u.sid, u.ep, u.seq, u.state, u.playback, u.pos, u.reason, p.expires_at_ms AS exp, " \
    "        nextval(pg_get_serial_sequence('events', 'event_id')) AS event_id, u.sid || '.' || u.seq AS token, "  \
    "        " DID " AS did "                                                                                      \
    "    FROM upd u JOIN endpoints p ON p.endpoint_id = u.ep "                                                     \
    "    WHERE p.expires_at_ms > floor(extract(epoch FROM now()) * 1000)::bigint), "                               \
    "b AS MATERIALIZED (SELECT go.*, '{\"msgToken\":' || to_json(go.token)::text "                                  \
    "        || ',\"method\":\"interaction.state\",\"sessionId\":' || to_json(go.sid)::text "                       \
    "        || ',\"eventSeq\":' || go.seq || ',\"data\":{\"state\":' || to_json(go.state)::text "                 \
    "        || CASE WHEN go.playback IS NULL THEN '' ELSE ',\"playback\":' || to_json(go.playback)::text END "   \
    "        || CASE WHEN go.pos IS NULL THEN '' ELSE ',\"positionMs\":' || go.pos END "                        \
    "        || CASE WHEN go.reason IS NULL THEN '' ELSE ',\"reason\":' || to_json(go.reason)::text END || '}}' "   \
    "        AS body FROM go), "                                                                                    \
    "ev AS (INSERT INTO events (event_id, session_id, msg_token, event_seq, body, body_text) OVERRIDING SYSTEM VALUE " \
    "       SELECT b.event_id, b.sid, b.token, b.seq, b.body::jsonb, b.body FROM b RETURNING 1), "                  \
    "dl AS (INSERT INTO deliveries (delivery_id, event_id, endpoint_id, session_id, watermark, state, expires_at_ms) " \
    "       SELECT b.did, b.event_id, b.ep, b.sid, b.event_id, 'pending', b.exp FROM b RETURNING 1), "             \
    "ntf AS (SELECT pg_notify('" IGW_OUTBOX_CHANNEL "', e.ep) FROM (SELECT DISTINCT ep FROM b) e) "

#endif
