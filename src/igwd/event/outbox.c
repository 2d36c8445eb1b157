/* outbox.c - see outbox.h. */
#include "event/outbox.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base64.h"
#include "event/rights.h"

/* The delivery states the SQL below names: states of igw_sm_delivery (the
 * delivery_state domain of deliveries.state); igw_outbox_check_states()
 * proves it. */
#define ST_PENDING "pending"
#define ST_ACKNOWLEDGED "acknowledged"
#define ST_REDELIVERED "redelivered"
#define ST_EXPIRED "expired"

static const char *const used_states[] = {ST_PENDING, ST_ACKNOWLEDGED, ST_REDELIVERED, ST_EXPIRED};

/* Unix milliseconds of the transaction's start (one statement: its start). */

/* Parameters and columns by name: *_P_X is $(X + 1) in the statement's
 * SQL and X in its values array, *_C_X the result column X. A parameter
 * sent as bytes (libpq's format 1, not text's 0) is FMT_BINARY. */
enum { FMT_BINARY = 1 };

/* The caller's endpoint: known when (enterprise $1, user $2, endpoint $3)
 * match; live while unexpired. The statements with EP_CTE start with them. */
enum { EP_P_ENTERPRISE, EP_P_USER, EP_P_ENDPOINT };
#define EP_CTE                                                                                  \
    "ep AS (SELECT p.endpoint_id, p.expires_at_ms > t.now_ms AS live FROM endpoints p, t "      \
    "WHERE p.endpoint_id = $3::text AND p.enterprise_id = $1::bigint AND p.user_id = $2::bigint)"

/* $1 endpoint, $2 msgToken, $3 sessionId or '', $4 eventSeq or 0, $5 body
 * (binary text), $6 expiresAt cap or 0, $7 deliveryId. */
enum { EMIT_P_ENDPOINT, EMIT_P_TOKEN, EMIT_P_SESSION, EMIT_P_SEQ, EMIT_P_BODY, EMIT_P_EXPIRES, EMIT_P_DELIVERY, EMIT_NP };
enum {
    EMIT_C_LIVE, EMIT_C_BODY_OK, EMIT_C_DUP, EMIT_C_DELIVERY, EMIT_C_EVENT, EMIT_C_WATERMARK, EMIT_C_EXPIRES,
    EMIT_C_NOTIFIED
};
static const igw_db_stmt st_emit = {
    "igw_outbox_emit",
    "WITH t AS (SELECT " IGW_SQL_NOW_MS " AS now_ms), "
    "p AS (SELECT p.endpoint_id, p.expires_at_ms, p.expires_at_ms > t.now_ms AS live FROM endpoints p, t "
    "      WHERE p.endpoint_id = $1::text), "
    "b AS (SELECT x.j, jsonb_typeof(x.j) = 'object' AND x.j->>'msgToken' IS NOT DISTINCT FROM $2::text "
    "             AND x.j->>'sessionId' IS NOT DISTINCT FROM NULLIF($3::text, '') "
    "             AND x.j->'eventSeq' IS NOT DISTINCT FROM to_jsonb(NULLIF($4::bigint, 0)) AS ok "
    "      FROM (SELECT $5::text::jsonb AS j) x), "
    "dup AS (SELECT EXISTS (SELECT 1 FROM deliveries WHERE delivery_id = $7::text) AS v), "
    "go AS (SELECT p.endpoint_id, LEAST(p.expires_at_ms, COALESCE(NULLIF($6::bigint, 0), p.expires_at_ms)) AS exp "
    "       FROM p, b, dup WHERE p.live AND b.ok AND NOT dup.v), "
    "ev AS (INSERT INTO events (session_id, msg_token, event_seq, body, body_text) "
    "       SELECT NULLIF($3::text, ''), $2::text, NULLIF($4::bigint, 0), b.j, $5::text FROM go, b "
    "       RETURNING event_id), "
    "dl AS (INSERT INTO deliveries (delivery_id, event_id, endpoint_id, session_id, watermark, state, expires_at_ms) "
    "       SELECT $7::text, ev.event_id, go.endpoint_id, $3::text, ev.event_id, '" ST_PENDING "', go.exp "
    "       FROM ev, go RETURNING delivery_id, event_id, watermark, expires_at_ms, endpoint_id), "
    "ntf AS (SELECT pg_notify('" IGW_OUTBOX_CHANNEL "', dl.endpoint_id) FROM dl) "
    "SELECT p.live, b.ok, dup.v, dl.delivery_id, dl.event_id, dl.watermark, dl.expires_at_ms, "
    "       (SELECT count(*) FROM ntf) "
    "FROM b CROSS JOIN dup LEFT JOIN p ON true LEFT JOIN dl ON true",
    EMIT_NP};

/* The largest event body a result's notification carries (a NOTIFY payload
 * is below 8000 bytes; ids and the watermark take the rest). */
#define NOTIFY_BODY_MAX "7600"

/* Batched (igw_db_exec_row), one row per result: $1 endpoint, $2
 * msgToken, $3 body (text), $4 deliveryId, $5 productID, $6 deviceName,
 * $7 device token, $8 outcome, $9-$13 the device reply to store (handle,
 * type, method, msgToken, body; NULL body: none). As st_emit for each row (session-less, no
 * eventSeq, no expiry cap), a repeated deliveryId in the batch counting as
 * a duplicate of its first row, plus the device command settled in the same
 * transaction (its first outcome kept by COALESCE: a WHERE on outcome IS
 * NULL would let the planner drive the update from the partial index of
 * waiting commands, estimated near empty whenever analyzed idle, and walk
 * all of them per row). Event ids are drawn first so each delivery knows
 * its event (and its watermark: the same number); the notifications are
 * built from those rows (dl inserts every one or the statement fails, and
 * a failed transaction notifies nobody). The body is parsed once. */
enum {
    RESULT_P_ENDPOINT, RESULT_P_TOKEN, RESULT_P_BODY, RESULT_P_DELIVERY, RESULT_P_PID, RESULT_P_DN,
    RESULT_P_DEVICE_TOKEN, RESULT_P_OUTCOME, RESULT_P_REPLY_HANDLE, RESULT_P_REPLY_TYPE, RESULT_P_REPLY_METHOD,
    RESULT_P_REPLY_TOKEN, RESULT_P_REPLY_BODY, RESULT_NP
};
enum { RESULT_C_KNOWN, RESULT_C_LIVE, RESULT_C_DUP, RESULT_C_BODY_OK, RESULT_C_DELIVERY, RESULT_C_NOTIFIED, RESULT_C_SETTLED };
#define RESULT_NAMES "ep, token, body, did, pid, dn, dtoken, outcome, rh, rt, rm, rtok, rbody"
#define RESULT_SQL(RESULT_ROWS_, RESULT_FIRST_)                                                                      \
    "WITH t AS (SELECT " IGW_SQL_NOW_MS " AS now_ms), "                                                              \
    "i AS MATERIALIZED (SELECT u.*, b.j, p.endpoint_id IS NOT NULL AS known, p.expires_at_ms > t.now_ms AS live, "   \
    "      p.expires_at_ms AS exp, "                                                                                 \
    "      jsonb_typeof(b.j) = 'object' AND b.j->>'msgToken' IS NOT DISTINCT FROM u.token "                          \
    "        AND b.j->'sessionId' IS NULL AND b.j->'eventSeq' IS NULL AS ok, "                                       \
    "      EXISTS (SELECT 1 FROM deliveries d WHERE d.delivery_id = u.did) AS dup, "                                 \
    RESULT_FIRST_                                                                                                    \
    RESULT_ROWS_                                                                                                     \
    "    CROSS JOIN LATERAL (SELECT u.body::jsonb AS j) b "                                                          \
    "    CROSS JOIN t LEFT JOIN endpoints p ON p.endpoint_id = u.ep), "                                              \
    "dm AS (INSERT INTO device_messages (product_id, device_name, handle, msg_type, method, msg_token, body) "       \
    "       SELECT i.pid, i.dn, i.rh, i.rt, i.rm, i.rtok, i.rbody::jsonb FROM i WHERE i.rbody IS NOT NULL "          \
    "       ORDER BY i.ord RETURNING 1), "                                                                           \
    "go AS MATERIALIZED (SELECT i.*, nextval(pg_get_serial_sequence('events', 'event_id')) AS event_id "             \
    "    FROM i WHERE i.live AND i.ok AND NOT i.dup AND i.first), "                                                  \
    "ev AS (INSERT INTO events (event_id, session_id, msg_token, event_seq, body, body_text) OVERRIDING SYSTEM VALUE " \
    "       SELECT go.event_id, NULL, go.token, NULL, go.j, go.body FROM go RETURNING event_id), "                   \
    "dl AS (INSERT INTO deliveries (delivery_id, event_id, endpoint_id, session_id, watermark, state, expires_at_ms) " \
    "       SELECT go.did, go.event_id, go.ep, '', go.event_id, '" ST_PENDING "', go.exp FROM go "                   \
    "       RETURNING delivery_id, endpoint_id, watermark), "                                                        \
    "ntf AS (SELECT pg_notify('" IGW_OUTBOX_CHANNEL "', CASE WHEN octet_length(go.body) <= " NOTIFY_BODY_MAX " "     \
    "        THEN go.ep || E'\\n' || go.event_id || E'\\n' || go.did || E'\\n' || go.body "                          \
    "        ELSE go.ep END) FROM go), "                                                                             \
    "st AS (UPDATE device_commands c SET outcome = COALESCE(c.outcome, s.outcome) "                                  \
    "       FROM (SELECT DISTINCT ON (i.pid, i.dn, i.dtoken) i.pid, i.dn, i.dtoken, "                                \
    "                    CASE WHEN i.live AND i.ok THEN i.outcome "                                              \
    "                         WHEN i.live IS NOT TRUE THEN 'expired' END AS outcome "                                 \
    "             FROM i WHERE i.first ORDER BY i.pid, i.dn, i.dtoken, i.ord) s "                                    \
    "       WHERE c.product_id = s.pid AND c.device_name = s.dn AND c.device_token = s.dtoken "                      \
    "         AND s.outcome IS NOT NULL RETURNING 1) "                                                               \
    "SELECT i.known, i.live, i.dup OR NOT i.first, i.ok, dl.delivery_id, (SELECT count(*) FROM ntf), "               \
    "       (SELECT count(*) FROM st) "                                                                              \
    "FROM i LEFT JOIN dl ON dl.delivery_id = i.did AND i.first ORDER BY i.ord"
static const igw_db_stmt st_emit_result = {
    "igw_outbox_emit_result",
    RESULT_SQL("    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], "
               "                $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[]) "
               "         WITH ORDINALITY AS u(" RESULT_NAMES ", ord) ",
               "      u.ord = min(u.ord) OVER (PARTITION BY u.did) AS first "),
    RESULT_NP};

/* Its twin for a batch of one result (db.h): the thirteen values as
 * scalars, the row its deliveryId's first. */
static const igw_db_stmt st_emit_result_one = {
    "igw_outbox_emit_result_one",
    RESULT_SQL("    FROM (SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, "
               "                 $9::text, $10::text, $11::text, $12::text, $13::text, 1::bigint) "
               "         AS u(" RESULT_NAMES ", ord) ",
               "      true AS first "),
    RESULT_NP};

/* $1 enterprise, $2 user, $3 endpoint, $4 limit. Ordered in the database's
 * collation, the index's: an explicit COLLATE "C" made PostgreSQL sort all
 * of the endpoint's pending deliveries on every pull (services.sh creates
 * the database without a locale, so that order is bytewise). */
enum { PULL_P_LIMIT = EP_P_ENDPOINT + 1, PULL_NP };
enum { PULL_C_LIVE, PULL_C_DELIVERY, PULL_C_BODY };
static const igw_db_stmt st_pull = {
    "igw_outbox_pull",
    "WITH t AS (SELECT " IGW_SQL_NOW_MS " AS now_ms), " EP_CTE " "
    "SELECT ep.live, x.delivery_id, x.body_text "
    "FROM (SELECT 1) one LEFT JOIN ep ON true "
    "LEFT JOIN LATERAL ("
    "  SELECT d.delivery_id, d.session_id, d.watermark, e.body_text "
    "  FROM deliveries d JOIN events e ON e.event_id = d.event_id CROSS JOIN t "
    "  WHERE ep.live AND d.endpoint_id = ep.endpoint_id AND d.state = '" ST_PENDING "' AND d.acked_at IS NULL "
    "    AND d.expires_at_ms > t.now_ms "
    "  ORDER BY d.session_id, d.watermark, d.delivery_id LIMIT $4::int) x ON true "
    "ORDER BY x.session_id, x.watermark, x.delivery_id",
    PULL_NP};

/* $1 enterprise, $2 user, $3 endpoint, $4 ids (text[]). The acknowledged
 * count is the endpoint's counter, raised by this statement's updates (the
 * row lock orders concurrent acks of one endpoint; counting the acked
 * deliveries instead cost every ack the whole history). */
enum { ACK_P_IDS = EP_P_ENDPOINT + 1, ACK_NP };
enum { ACK_C_LIVE, ACK_C_REFUSAL, ACK_C_POS, ACK_C_ID, ACK_C_ACKNOWLEDGED };
static const igw_db_stmt st_ack = {
    "igw_outbox_ack",
    "WITH t AS (SELECT " IGW_SQL_NOW_MS " AS now_ms), " EP_CTE ", "
    "req AS (SELECT r.id, r.pos FROM unnest($4::text[]) WITH ORDINALITY AS r(id, pos)), "
    "chk AS (SELECT r.id, r.pos, CASE "
    "          WHEN d.delivery_id IS NULL THEN 'unknown' "
    "          WHEN p.endpoint_id IS NULL THEN 'device' "
    "          WHEN p.enterprise_id <> $1::bigint THEN 'enterprise' "
    "          WHEN p.user_id <> $2::bigint THEN 'user' "
    "          WHEN d.endpoint_id <> $3::text THEN 'endpoint' "
    "          WHEN d.state = '" ST_EXPIRED "' OR d.expires_at_ms <= t.now_ms THEN 'expired' "
    "        END AS refusal "
    "        FROM req r CROSS JOIN t LEFT JOIN deliveries d ON d.delivery_id = r.id "
    "        LEFT JOIN endpoints p ON p.endpoint_id = d.endpoint_id), "
    "bad AS (SELECT id, pos, refusal FROM chk WHERE refusal IS NOT NULL ORDER BY pos LIMIT 1), "
    "upd AS (UPDATE deliveries d SET state = '" ST_ACKNOWLEDGED "', acked_at = now() FROM t "
    "        WHERE d.delivery_id IN (SELECT id FROM req) AND d.endpoint_id = $3::text "
    "          AND d.state = '" ST_PENDING "' AND d.expires_at_ms > t.now_ms "
    "          AND EXISTS (SELECT 1 FROM ep WHERE ep.live) AND NOT EXISTS (SELECT 1 FROM bad) "
    "        RETURNING 1), "
    "cnt AS (UPDATE endpoints p SET acked = p.acked + u.n FROM (SELECT count(*) AS n FROM upd) u "
    "        WHERE p.endpoint_id = $3::text AND u.n > 0 RETURNING p.acked) "
    "SELECT ep.live, bad.refusal, bad.pos, bad.id, "
    "       COALESCE((SELECT acked FROM cnt), (SELECT p.acked FROM endpoints p WHERE p.endpoint_id = $3::text)) "
    "FROM (SELECT 1) one LEFT JOIN ep ON true LEFT JOIN bad ON true",
    ACK_NP};

/* $1 enterprise, $2 user, $3 endpoint, $4 sessionId or '', $5 method,
 * $6 msgToken, $7 fingerprint (bytea, binary), $8 the new deliveryId. The
 * head: the newest delivery to this endpoint, not redelivered, of the
 * earliest interaction.result event carrying the command's token. */
enum {
    REPLAY_P_SESSION = EP_P_ENDPOINT + 1, REPLAY_P_METHOD, REPLAY_P_TOKEN, REPLAY_P_FP, REPLAY_P_DELIVERY, REPLAY_P_WINDOW,
    REPLAY_NP
};
enum {
    REPLAY_C_LIVE, REPLAY_C_COMMANDS, REPLAY_C_HEAD, REPLAY_C_HEAD_STATE, REPLAY_C_HEAD_EXPIRED, REPLAY_C_EVENT,
    REPLAY_C_WATERMARK, REPLAY_C_EXPIRES, REPLAY_C_NEW, REPLAY_C_NEW_WATERMARK, REPLAY_C_NOTIFIED, REPLAY_C_FRESH
};
static const igw_db_stmt st_replay = {
    "igw_outbox_replay",
    "WITH t AS (SELECT " IGW_SQL_NOW_MS " AS now_ms), " EP_CTE ", "
    "cmd AS (SELECT c.msg_token, ($9::bigint = 0 OR c.accepted_at > now() - $9::bigint * interval '1 millisecond') "
    "               AS fresh FROM commands c JOIN ep ON ep.live "
    "        WHERE c.enterprise_id = $1::bigint AND c.endpoint_id = $3::text AND c.msg_token = $6::text "
    "          AND c.user_id = $2::bigint AND c.method = $5::text "
    "          AND c.session_id IS NOT DISTINCT FROM NULLIF($4::text, '') AND c.fingerprint = $7::bytea), "
    "head AS (SELECT d.delivery_id, d.event_id, d.state, d.watermark, d.expires_at_ms "
    "         FROM cmd JOIN deliveries d ON d.endpoint_id = $3::text AND cmd.fresh "
    "         JOIN events e ON e.event_id = d.event_id AND e.msg_token = cmd.msg_token "
    "         WHERE e.body->>'method' = 'interaction.result' AND d.state <> '" ST_REDELIVERED "' "
    "         ORDER BY d.event_id, d.watermark DESC LIMIT 1), "
    "upd AS (UPDATE deliveries d SET state = '" ST_REDELIVERED "' FROM head, t "
    "        WHERE d.delivery_id = head.delivery_id AND d.state = '" ST_ACKNOWLEDGED "' "
    "          AND d.expires_at_ms > t.now_ms "
    "        RETURNING d.delivery_id, d.event_id, d.endpoint_id, d.session_id, d.expires_at_ms), "
    "ins AS (INSERT INTO deliveries (delivery_id, event_id, endpoint_id, session_id, watermark, state, "
    "                                expires_at_ms, replaces) "
    "        SELECT $8::text, u.event_id, u.endpoint_id, u.session_id, "
    "               nextval(pg_get_serial_sequence('events', 'event_id')), '" ST_PENDING "', u.expires_at_ms, "
    "               u.delivery_id FROM upd u "
    "        RETURNING delivery_id, endpoint_id, watermark, expires_at_ms, event_id), "
    "ntf AS (SELECT pg_notify('" IGW_OUTBOX_CHANNEL "', ins.endpoint_id) FROM ins) "
    "SELECT ep.live, (SELECT count(*) FROM cmd), head.delivery_id, head.state, head.expires_at_ms <= t.now_ms, "
    "       head.event_id, head.watermark, head.expires_at_ms, ins.delivery_id, ins.watermark, "
    "       (SELECT count(*) FROM ntf), (SELECT count(*) FROM cmd WHERE fresh) "
    "FROM t LEFT JOIN ep ON true LEFT JOIN head ON true LEFT JOIN ins ON true",
    REPLAY_NP};

/* $1 now_ms, $2 retention_ms, $3 batch. Marking spares the rows being
 * deleted (one statement must not modify a row twice); an event goes with
 * its last delivery, an endpoint once it has no delivery left, and the
 * commands and device commands with their endpoint. The foreign keys are
 * checked at the end of the statement, after every sub-statement. Each step
 * reads an index (expires_at_ms, the keys' (enterprise, endpoint) prefix):
 * no scan of the tables' history. */
enum { SWEEP_P_NOW, SWEEP_P_RETENTION, SWEEP_P_BATCH, SWEEP_NP };
enum {
    SWEEP_C_MARKED, SWEEP_C_DELIVERIES, SWEEP_C_EVENTS, SWEEP_C_ENDPOINTS, SWEEP_C_COMMANDS, SWEEP_C_BATCH
};
static const igw_db_stmt st_sweep = {
    "igw_outbox_sweep",
    "WITH c AS (SELECT $1::bigint AS now_ms, $1::bigint - $2::bigint AS cut, $3::int AS lim), "
    "mark AS (UPDATE deliveries d SET state = '" ST_EXPIRED "' FROM c "
    "         WHERE d.delivery_id IN (SELECT x.delivery_id FROM deliveries x, c "
    "                                 WHERE x.expires_at_ms <= c.now_ms AND x.expires_at_ms > c.cut "
    "                                   AND x.state IN ('" ST_PENDING "', '" ST_ACKNOWLEDGED "') LIMIT $3::int) "
    "           AND d.state IN ('" ST_PENDING "', '" ST_ACKNOWLEDGED "') RETURNING 1), "
    "dd AS (DELETE FROM deliveries d WHERE d.delivery_id IN "
    "         (SELECT x.delivery_id FROM deliveries x, c WHERE x.expires_at_ms <= c.cut LIMIT $3::int) "
    "       RETURNING d.delivery_id, d.event_id), "
    "de AS (DELETE FROM events e WHERE e.event_id IN (SELECT event_id FROM dd) "
    "         AND NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.event_id = e.event_id "
    "                           AND x.delivery_id NOT IN (SELECT delivery_id FROM dd)) "
    "       RETURNING 1), "
    "dep AS (DELETE FROM endpoints p WHERE p.endpoint_id IN "
    "          (SELECT x.endpoint_id FROM endpoints x, c WHERE x.expires_at_ms <= c.cut LIMIT $3::int) "
    "          AND NOT EXISTS (SELECT 1 FROM deliveries x WHERE x.endpoint_id = p.endpoint_id "
    "                            AND x.delivery_id NOT IN (SELECT delivery_id FROM dd)) "
    "        RETURNING p.enterprise_id, p.endpoint_id), "
    "dc AS (DELETE FROM commands k WHERE (k.enterprise_id, k.endpoint_id) IN (SELECT enterprise_id, endpoint_id FROM dep) "
    "       RETURNING 1), "
    "ddc AS (DELETE FROM device_commands k "
    "        WHERE (k.enterprise_id, k.endpoint_id) IN (SELECT enterprise_id, endpoint_id FROM dep)) "
    "SELECT (SELECT count(*) FROM mark), (SELECT count(*) FROM dd), (SELECT count(*) FROM de), "
    "       (SELECT count(*) FROM dep), (SELECT count(*) FROM dc), c.lim FROM c",
    SWEEP_NP};

typedef enum op { OP_EMIT, OP_EMIT_RESULT, OP_PULL, OP_ACK, OP_REPLAY, OP_SWEEP } op;

typedef struct ctx {
    op op;
    igw_outbox_cb cb;
    void *arg;
    char delivery_id[IGW_OUTBOX_ID_MAX + 1]; /* emit, replay: the id passed in */
} ctx;

const char *igw_outbox_check_states(void)
{
    for (size_t i = 0; i < sizeof used_states / sizeof used_states[0]; i++)
        if (igw_sm_state(&igw_sm_delivery, used_states[i]) <= 0) /* 0 is the pseudo-state none */
            return used_states[i];
    return NULL;
}

int igw_outbox_new_id(char *out, size_t cap)
{
    unsigned char raw[16];
    size_t got = 0;
    if (!out || cap <= IGW_OUTBOX_ID_LEN)
        return -1;
    while (got < sizeof raw) {
        ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    long n = igw_b64_encode(IGW_B64_URL, raw, sizeof raw, out, cap);
    memset(raw, 0, sizeof raw);
    return n == IGW_OUTBOX_ID_LEN ? 0 : -1;
}

static bool id_ok(const char *s)
{
    if (!s)
        return false;
    size_t n = strnlen(s, IGW_OUTBOX_ID_MAX + 1);
    return n >= 1 && n <= IGW_OUTBOX_ID_MAX;
}

static const char *val(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static int64_t num(const PGresult *res, int row, int col)
{
    const char *v = val(res, row, col);
    return v ? strtoll(v, NULL, 10) : 0;
}

static void fail(igw_outbox_result *r, const char *err)
{
    r->status = IGW_OUTBOX_ERROR;
    r->err = err;
}

/* The endpoint columns: NULL unknown, false expired; true on. */
static bool endpoint_live(igw_outbox_result *r, const PGresult *res, int col)
{
    const char *live = val(res, 0, col);
    if (!live)
        r->status = IGW_OUTBOX_UNKNOWN_ENDPOINT;
    else if (live[0] != 't')
        r->status = IGW_OUTBOX_ENDPOINT_EXPIRED;
    return live && live[0] == 't';
}

static void done_emit(ctx *c, igw_outbox_result *r, const PGresult *res)
{
    if (!endpoint_live(r, res, EMIT_C_LIVE))
        return;
    if (igw_db_true(res, 0, EMIT_C_DUP)) {
        r->status = IGW_OUTBOX_DUPLICATE;
        r->delivery_id = c->delivery_id;
        return;
    }
    if (!igw_db_true(res, 0, EMIT_C_BODY_OK)) {
        r->status = IGW_OUTBOX_BAD_EVENT;
        return;
    }
    if (!val(res, 0, EMIT_C_DELIVERY) || num(res, 0, EMIT_C_NOTIFIED) != 1) {
        fail(r, "emit: no delivery inserted");
        return;
    }
    r->delivery_id = val(res, 0, EMIT_C_DELIVERY);
    r->event_id = num(res, 0, EMIT_C_EVENT);
    r->watermark = num(res, 0, EMIT_C_WATERMARK);
    r->expires_at_ms = num(res, 0, EMIT_C_EXPIRES);
}

static void done_emit_result(ctx *c, igw_outbox_result *r, const PGresult *res, int row)
{
    if (!val(res, row, RESULT_C_KNOWN))
        r->status = IGW_OUTBOX_UNKNOWN_ENDPOINT;
    else if (!igw_db_true(res, row, RESULT_C_LIVE))
        r->status = IGW_OUTBOX_ENDPOINT_EXPIRED;
    else if (igw_db_true(res, row, RESULT_C_DUP))
        r->status = IGW_OUTBOX_DUPLICATE;
    else if (!igw_db_true(res, row, RESULT_C_BODY_OK))
        r->status = IGW_OUTBOX_BAD_EVENT;
    else if (!val(res, row, RESULT_C_DELIVERY))
        fail(r, "emit: no delivery inserted");
    if (r->status == IGW_OUTBOX_OK || r->status == IGW_OUTBOX_DUPLICATE)
        r->delivery_id = c->delivery_id;
}

static void done_pull(igw_outbox_result *r, const PGresult *res, igw_outbox_item *items)
{
    /* one row of NULLs when nothing */
    if (!endpoint_live(r, res, PULL_C_LIVE))
        return;
    int rows = PQntuples(res);
    size_t n = 0;
    for (int i = 0; i < rows && n < IGW_OUTBOX_BATCH_MAX; i++) {
        if (PQgetisnull(res, i, PULL_C_DELIVERY))
            continue;
        items[n].delivery_id = PQgetvalue(res, i, PULL_C_DELIVERY);
        items[n].event = PQgetvalue(res, i, PULL_C_BODY);
        items[n].event_len = (size_t)PQgetlength(res, i, PULL_C_BODY);
        n++;
    }
    r->items = items;
    r->nitems = n;
}

static void done_ack(igw_outbox_result *r, const PGresult *res)
{
    if (!endpoint_live(r, res, ACK_C_LIVE))
        return;
    const char *why = val(res, 0, ACK_C_REFUSAL);
    if (why) {
        static const struct {
            const char *name;
            igw_outbox_refusal v;
        } map[] = {{"unknown", IGW_OUTBOX_REFUSAL_UNKNOWN},   {"device", IGW_OUTBOX_REFUSAL_DEVICE},
                   {"enterprise", IGW_OUTBOX_REFUSAL_ENTERPRISE}, {"user", IGW_OUTBOX_REFUSAL_USER},
                   {"endpoint", IGW_OUTBOX_REFUSAL_ENDPOINT}, {"expired", IGW_OUTBOX_REFUSAL_EXPIRED}};
        r->status = IGW_OUTBOX_REFUSED;
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (strcmp(why, map[i].name) == 0)
                r->refusal = map[i].v;
        r->refused_index = (size_t)(num(res, 0, ACK_C_POS) - 1); /* 1-based */
        r->refused_id = val(res, 0, ACK_C_ID);
        return;
    }
    r->acknowledged = num(res, 0, ACK_C_ACKNOWLEDGED);
}

static void done_replay(ctx *c, igw_outbox_result *r, const PGresult *res)
{
    if (!endpoint_live(r, res, REPLAY_C_LIVE))
        return;
    if (num(res, 0, REPLAY_C_COMMANDS) == 0) {
        r->status = IGW_OUTBOX_NO_COMMAND;
        return;
    }
    if (num(res, 0, REPLAY_C_FRESH) == 0) {
        r->status = IGW_OUTBOX_WINDOW_PASSED;
        return;
    }
    const char *head = val(res, 0, REPLAY_C_HEAD);
    if (!head) {
        r->replay = IGW_OUTBOX_REPLAY_NONE;
        return;
    }
    const char *head_state = val(res, 0, REPLAY_C_HEAD_STATE);
    int st = igw_sm_state(&igw_sm_delivery, head_state ? head_state : "");
    if (st <= 0) {
        fail(r, "replay: unknown delivery state");
        return;
    }
    r->head_state = (igw_delivery_state)st;
    r->event_id = num(res, 0, REPLAY_C_EVENT);
    r->expires_at_ms = num(res, 0, REPLAY_C_EXPIRES);
    /* The machine decides: replay keeps a pending head (SAME), turns an
     * acknowledged one into redelivered (NEW), and is illegal on an expired
     * one; a head expired by time but not yet marked counts as expired. */
    igw_err err = IGW_ERR_OK;
    igw_delivery_state next = r->head_state;
    bool expired = igw_db_true(res, 0, REPLAY_C_HEAD_EXPIRED);
    if (!expired)
        next = igw_delivery_next(r->head_state, IGW_DELIVERY_ON_REPLAY, 0, &err);
    if (expired || err != IGW_ERR_OK) {
        r->replay = IGW_OUTBOX_REPLAY_EXPIRED;
    } else if (next == IGW_DELIVERY_PENDING) {
        r->replay = IGW_OUTBOX_REPLAY_SAME;
        r->delivery_id = head;
        r->watermark = num(res, 0, REPLAY_C_WATERMARK);
    } else if (val(res, 0, REPLAY_C_NEW) && num(res, 0, REPLAY_C_NOTIFIED) == 1) {
        r->replay = IGW_OUTBOX_REPLAY_NEW;
        r->delivery_id = c->delivery_id;
        r->watermark = num(res, 0, REPLAY_C_NEW_WATERMARK);
        r->replaced = head;
    } else {
        r->replay = IGW_OUTBOX_REPLAY_CONCURRENT;
    }
}

static void done_sweep(igw_outbox_result *r, const PGresult *res)
{
    r->marked_expired = num(res, 0, SWEEP_C_MARKED);
    r->deliveries_deleted = num(res, 0, SWEEP_C_DELIVERIES);
    r->events_deleted = num(res, 0, SWEEP_C_EVENTS);
    r->endpoints_deleted = num(res, 0, SWEEP_C_ENDPOINTS);
    r->commands_deleted = num(res, 0, SWEEP_C_COMMANDS);
    int64_t lim = num(res, 0, SWEEP_C_BATCH);
    r->more = r->marked_expired >= lim || r->deliveries_deleted >= lim || r->endpoints_deleted >= lim;
}

static void on_result(void *arg, const PGresult *res, const char *err)
{
    ctx *c = arg;
    igw_outbox_result r = {.status = IGW_OUTBOX_OK};
    igw_outbox_item items[IGW_OUTBOX_BATCH_MAX];
    if (!res)
        fail(&r, err ? err : "no result");
    else if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) < 1)
        fail(&r, "unexpected result shape");
    else
        switch (c->op) {
        case OP_EMIT:
            done_emit(c, &r, res);
            break;
        case OP_EMIT_RESULT: /* batched: on_result_row */
            fail(&r, "emit_result: not a batched row");
            break;
        case OP_PULL:
            done_pull(&r, res, items);
            break;
        case OP_ACK:
            done_ack(&r, res);
            break;
        case OP_REPLAY:
            done_replay(c, &r, res);
            break;
        case OP_SWEEP:
            done_sweep(&r, res);
            break;
        }
    c->cb(c->arg, &r); /* r may point into c (delivery_id) */
    free(c);
}

static void on_result_row(void *arg, const PGresult *res, int row, const char *err)
{
    ctx *c = arg;
    igw_outbox_result r = {.status = IGW_OUTBOX_OK};
    if (!res)
        fail(&r, err ? err : "no result");
    else {
        r.committed = true;
        done_emit_result(c, &r, res, row);
    }
    c->cb(c->arg, &r);
    free(c);
}

static ctx *new_ctx(op o, igw_outbox_cb cb, void *arg)
{
    if (!cb)
        return NULL;
    ctx *c = calloc(1, sizeof *c);
    if (c) {
        c->op = o;
        c->cb = cb;
        c->arg = arg;
    }
    return c;
}

static int submit(igw_db *db, const igw_db_stmt *st, const char *const *values, const int *lengths,
                  const int *formats, ctx *c)
{
    if (!db || igw_db_exec(db, st, values, lengths, formats, on_result, c) != 0) {
        free(c);
        return -1;
    }
    return 0;
}

int igw_outbox_emit(igw_db *db, const igw_outbox_event *ev, igw_outbox_cb cb, void *arg)
{
    if (!ev || !id_ok(ev->endpoint_id) || !ev->msg_token || !ev->msg_token[0] || !ev->body || ev->body_len == 0 ||
        ev->body_len > INT32_MAX || ev->event_seq < 0 || ev->expires_at_ms < 0)
        return -1;
    const char *sess = ev->session_id ? ev->session_id : "";
    if (strnlen(sess, IGW_OUTBOX_ID_MAX + 1) > IGW_OUTBOX_ID_MAX)
        return -1;
    if (ev->delivery_id && !id_ok(ev->delivery_id))
        return -1;
    ctx *c = new_ctx(OP_EMIT, cb, arg);
    if (!c)
        return -1;
    if (ev->delivery_id)
        snprintf(c->delivery_id, sizeof c->delivery_id, "%s", ev->delivery_id);
    else if (igw_outbox_new_id(c->delivery_id, sizeof c->delivery_id) != 0) {
        free(c);
        return -1;
    }
    char seq[24], exp[24];
    snprintf(seq, sizeof seq, "%" PRId64, ev->event_seq);
    snprintf(exp, sizeof exp, "%" PRId64, ev->expires_at_ms);
    const char *v[EMIT_NP] = {[EMIT_P_ENDPOINT] = ev->endpoint_id, [EMIT_P_TOKEN] = ev->msg_token,
                              [EMIT_P_SESSION] = sess,             [EMIT_P_SEQ] = seq,
                              [EMIT_P_BODY] = ev->body,            [EMIT_P_EXPIRES] = exp,
                              [EMIT_P_DELIVERY] = c->delivery_id};
    /* the body as text's binary form: its bytes, no NUL needed */
    int len[EMIT_NP] = {[EMIT_P_BODY] = (int)ev->body_len};
    int fmt[EMIT_NP] = {[EMIT_P_BODY] = FMT_BINARY};
    return submit(db, &st_emit, v, len, fmt, c);
}

int igw_outbox_emit_result(igw_db *db, const igw_outbox_result_event *ev, igw_outbox_cb cb, void *arg)
{
    if (!db || !ev || !id_ok(ev->endpoint_id) || !ev->msg_token || !ev->msg_token[0] || !ev->body || !ev->body[0] ||
        !id_ok(ev->delivery_id) || !ev->product_id || !ev->device_name || !ev->device_token || !ev->outcome)
        return -1;
    ctx *c = new_ctx(OP_EMIT_RESULT, cb, arg);
    if (!c)
        return -1;
    snprintf(c->delivery_id, sizeof c->delivery_id, "%s", ev->delivery_id);
    const char *v[RESULT_NP] = {[RESULT_P_ENDPOINT] = ev->endpoint_id,
                                [RESULT_P_TOKEN] = ev->msg_token,
                                [RESULT_P_BODY] = ev->body,
                                [RESULT_P_DELIVERY] = ev->delivery_id,
                                [RESULT_P_PID] = ev->product_id,
                                [RESULT_P_DN] = ev->device_name,
                                [RESULT_P_DEVICE_TOKEN] = ev->device_token,
                                [RESULT_P_OUTCOME] = ev->outcome,
                                [RESULT_P_REPLY_HANDLE] = ev->reply_handle,
                                [RESULT_P_REPLY_TYPE] = ev->reply_type,
                                [RESULT_P_REPLY_METHOD] = ev->reply_method,
                                [RESULT_P_REPLY_TOKEN] = ev->reply_token,
                                [RESULT_P_REPLY_BODY] = ev->reply_body};
    if (igw_db_exec_row(db, &st_emit_result, &st_emit_result_one, v, on_result_row, c) != 0) {
        free(c);
        return -1;
    }
    return 0;
}

int igw_outbox_pull(igw_db *db, int64_t enterprise_id, int64_t user_id, const char *endpoint_id, int limit,
                    igw_outbox_cb cb, void *arg)
{
    if (!id_ok(endpoint_id) || limit < 1 || limit > IGW_OUTBOX_BATCH_MAX)
        return -1;
    ctx *c = new_ctx(OP_PULL, cb, arg);
    if (!c)
        return -1;
    char ent[24], usr[24], lim[12];
    snprintf(ent, sizeof ent, "%" PRId64, enterprise_id);
    snprintf(usr, sizeof usr, "%" PRId64, user_id);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *v[PULL_NP] = {[EP_P_ENTERPRISE] = ent, [EP_P_USER] = usr, [EP_P_ENDPOINT] = endpoint_id,
                              [PULL_P_LIMIT] = lim};
    return submit(db, &st_pull, v, NULL, NULL, c);
}

/* ids as a text[] literal: each element double-quoted, '"' and '\' escaped. */
static char *array_literal(const char *const *ids, size_t n)
{
    size_t cap = 3;
    for (size_t i = 0; i < n; i++)
        cap += 2 * strlen(ids[i]) + 3;
    char *s = malloc(cap), *p = s;
    if (!s)
        return NULL;
    *p++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i)
            *p++ = ',';
        *p++ = '"';
        for (const char *q = ids[i]; *q; q++) {
            if (*q == '"' || *q == '\\')
                *p++ = '\\';
            *p++ = *q;
        }
        *p++ = '"';
    }
    *p++ = '}';
    *p = '\0';
    return s;
}

int igw_outbox_ack(igw_db *db, int64_t enterprise_id, int64_t user_id, const char *endpoint_id,
                   const char *const *ids, size_t n, igw_outbox_cb cb, void *arg)
{
    if (!id_ok(endpoint_id) || !ids || n < 1 || n > IGW_OUTBOX_BATCH_MAX)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!id_ok(ids[i]))
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(ids[i], ids[j]) == 0)
                return -1;
    }
    char *arr = array_literal(ids, n);
    if (!arr)
        return -1;
    ctx *c = new_ctx(OP_ACK, cb, arg);
    if (!c) {
        free(arr);
        return -1;
    }
    char ent[24], usr[24];
    snprintf(ent, sizeof ent, "%" PRId64, enterprise_id);
    snprintf(usr, sizeof usr, "%" PRId64, user_id);
    const char *v[ACK_NP] = {[EP_P_ENTERPRISE] = ent, [EP_P_USER] = usr, [EP_P_ENDPOINT] = endpoint_id,
                             [ACK_P_IDS] = arr};
    int rc = submit(db, &st_ack, v, NULL, NULL, c);
    free(arr);
    return rc;
}

int igw_outbox_replay(igw_db *db, const igw_outbox_command *cmd, igw_outbox_cb cb, void *arg)
{
    if (!cmd || !id_ok(cmd->endpoint_id) || !cmd->method || !cmd->method[0] || !cmd->msg_token ||
        !cmd->msg_token[0] || !cmd->fingerprint || cmd->fingerprint_len == 0 || cmd->fingerprint_len > 64)
        return -1;
    ctx *c = new_ctx(OP_REPLAY, cb, arg);
    if (!c)
        return -1;
    if (igw_outbox_new_id(c->delivery_id, sizeof c->delivery_id) != 0) {
        free(c);
        return -1;
    }
    char ent[24], usr[24], win[24];
    snprintf(ent, sizeof ent, "%" PRId64, cmd->enterprise_id);
    snprintf(usr, sizeof usr, "%" PRId64, cmd->user_id);
    snprintf(win, sizeof win, "%" PRId64, cmd->window_ms > 0 ? cmd->window_ms : 0);
    const char *v[REPLAY_NP] = {[REPLAY_P_WINDOW] = win,
                                [EP_P_ENTERPRISE] = ent,
                                [EP_P_USER] = usr,
                                [EP_P_ENDPOINT] = cmd->endpoint_id,
                                [REPLAY_P_SESSION] = cmd->session_id ? cmd->session_id : "",
                                [REPLAY_P_METHOD] = cmd->method,
                                [REPLAY_P_TOKEN] = cmd->msg_token,
                                [REPLAY_P_FP] = (const char *)cmd->fingerprint,
                                [REPLAY_P_DELIVERY] = c->delivery_id};
    int len[REPLAY_NP] = {[REPLAY_P_FP] = (int)cmd->fingerprint_len};
    int fmt[REPLAY_NP] = {[REPLAY_P_FP] = FMT_BINARY}; /* bytea */
    return submit(db, &st_replay, v, len, fmt, c);
}

int igw_outbox_sweep(igw_db *db, int64_t now_ms, int64_t retention_ms, igw_outbox_cb cb, void *arg)
{
    if (now_ms < 0 || retention_ms < 0)
        return -1;
    ctx *c = new_ctx(OP_SWEEP, cb, arg);
    if (!c)
        return -1;
    char now[24], ret[24], lim[12];
    snprintf(now, sizeof now, "%" PRId64, now_ms);
    snprintf(ret, sizeof ret, "%" PRId64, retention_ms);
    snprintf(lim, sizeof lim, "%d", IGW_OUTBOX_SWEEP_BATCH);
    const char *v[SWEEP_NP] = {[SWEEP_P_NOW] = now, [SWEEP_P_RETENTION] = ret, [SWEEP_P_BATCH] = lim};
    return submit(db, &st_sweep, v, NULL, NULL, c);
}
