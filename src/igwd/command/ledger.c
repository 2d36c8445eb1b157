/* ledger.c - see ledger.h. The statements were tuned with make bench-app:
 * change them only with a measurement. */
#include "command/ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "base64.h"
#include "event/rights.h"
#include "event/outbox.h"
#include "jw.h"

int igw_ledger_fingerprint(const igw_Command *k, char **canon, igw_ledger_fp *fp)
{
    igw_jw jw;
    igw_jw_init(&jw);
    igw_encode_Command(&jw, k);
    *canon = NULL;
    if (igw_jw_status(&jw) || !(*canon = strndup(jw.buf, jw.len))) {
        igw_jw_free(&jw);
        return -1;
    }
    SHA256((const unsigned char *)jw.buf, jw.len, fp->md);
    igw_jw_free(&jw);
    igw_hex_encode(fp->md, sizeof fp->md, fp->hex);
    return 0;
}

/* The version of a product row `pr`: its xmin (the transaction that wrote
 * this row version; every UPDATE writes a new one) and its place. A stale
 * match would need a later version of the row at the same place written by
 * a transaction id equal modulo 2^32 to the cached one. */
#define MODEL_VERSION "(pr.xmin::text || '/' || pr.ctid::text)"

/* Parameters and columns by name: *_P_X is $(X + 1), *_C_X column X. */

/* $1 endpoint, $2 enterprise, $3 user, $4 msgToken, $5 productID, $6
 * deviceName, $7 now (ms), $8 the model version the worker has (NULL: none).
 * Per row: endpoint live, stored fingerprint (hex) or NULL, rights (NULL:
 * none; an unknown device looks the same), the model's version, the model
 * (NULL when its version is $8). */
enum {
    READ_P_ENDPOINT, READ_P_ENTERPRISE, READ_P_USER, READ_P_TOKEN, READ_P_PID, READ_P_DN, READ_P_NOW, READ_P_KNOWN,
    READ_NP
};
enum { READ_C_LIVE, READ_C_PRIOR_FP, READ_C_RIGHTS, READ_C_VERSION, READ_C_MODEL };
static const igw_db_stmt stmt_cmd_read = {
    "igw_cmd_read",
    "SELECT " IGW_SQL_ENDPOINT_LIVE("i.ep", "i.ent", "i.usr", "i.now_ms") ", "
    "       (SELECT encode(k.fingerprint, 'hex') FROM commands k "
    "        WHERE k.enterprise_id = i.ent AND k.endpoint_id = i.ep AND k.msg_token = i.token), "
    "       t.ok, t.ver, CASE WHEN t.ver = i.known THEN NULL ELSE t.model::text END "
    "FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], "
    "            $8::text[]) WITH ORDINALITY AS i(ep, ent, usr, token, pid, dn, now_ms, known, ord) "
    "LEFT JOIN LATERAL (SELECT true AS ok, " MODEL_VERSION " AS ver, pr.model AS model FROM devices d "
    "                   JOIN products pr ON pr.product_id = d.product_id "
    "                   WHERE d.product_id = i.pid AND d.device_name = i.dn AND d.enterprise_id = i.ent "
    "                     AND " IGW_SQL_USER_MAY("d", "i.usr") ") t ON true "
    "ORDER BY i.ord",
    READ_NP};

/* $1 endpoint, $2 enterprise, $3 user, $4 msgToken, $5 method, $6
 * fingerprint (hex), $7 command, $8 productID, $9 deviceName, $10 device
 * token, $11 deadline (ms), $12 now (ms), $13 the version of the model the
 * command was checked against, and a message's row (NULL: none): $14
 * deliveryId, $15 its upload, $16 expiresAt, $17 its downlink. Of the rows
 * that pass (endpoint live, no stored command, rights, the product's model
 * still at that version; a message's upload the caller's and its
 * deliveryId new for the caller), the first of each key in the batch
 * inserts (ON CONFLICT DO NOTHING: a concurrent twin elsewhere wins or
 * loses on the unique key); a later row of the same key sees the winner's
 * fingerprint as if it had come after it. A message's row goes first, and
 * its command only with it: of two concurrent commands with one
 * deliveryId, the one whose row lost is not accepted. Per row: endpoint
 * live, rights, accepted, fingerprint stored before it (NULL: none), model
 * current, content ok, deliveryId taken, expiresAt before the endpoint
 * expires (its result must reach the endpoint). Accepted false with the rest
 * passing: a twin in another transaction won, not yet visible to this
 * snapshot; the caller asks again. */
enum {
    WRITE_P_ENDPOINT, WRITE_P_ENTERPRISE, WRITE_P_USER, WRITE_P_TOKEN, WRITE_P_METHOD, WRITE_P_FP, WRITE_P_COMMAND,
    WRITE_P_PID, WRITE_P_DN, WRITE_P_DEVICE_TOKEN, WRITE_P_DEADLINE, WRITE_P_NOW, WRITE_P_VERSION,
    WRITE_P_DELIVERY, WRITE_P_FILE, WRITE_P_EXPIRES, WRITE_P_DOWNLINK, WRITE_NP
};
enum {
    WRITE_C_LIVE, WRITE_C_RIGHTS, WRITE_C_ACCEPTED, WRITE_C_PRIOR_FP, WRITE_C_MODEL_CURRENT, WRITE_C_CONTENT_OK,
    WRITE_C_KEY_TAKEN, WRITE_C_WITHIN
};
/* The pieces of both statements: every command's checks (c), the keys that
 * pass (w), its commands and device_commands rows (ins, dc), the accepted
 * (acc) and the answer; a message's parts only in the statement for
 * messageSend's rows: a batch without one plans and starts none of them. */
#define WRITE_CHECKS                                                                                                 \
    "    " IGW_SQL_ENDPOINT_LIVE("i.ep", "i.ent", "i.usr", "i.now_ms") " AS ep_ok, "                                  \
    "    (SELECT encode(k.fingerprint, 'hex') FROM commands k "                                                     \
    "     WHERE k.enterprise_id = i.ent AND k.endpoint_id = i.ep AND k.msg_token = i.token) AS prior, "             \
    "    " IGW_SQL_DEVICE_RIGHTS("i.pid", "i.dn", "i.ent", "i.usr") " AS rights, "                                   \
    "    EXISTS (SELECT 1 FROM products pr WHERE pr.product_id = i.pid AND " MODEL_VERSION " = i.ver) AS model_ok"
#define WRITE_ARRAYS                                                                                                 \
    "$1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::text[], "          \
    "$9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::text[]"
#define WRITE_NAMES "ep, ent, usr, token, method, fp, command, pid, dn, dtoken, deadline, now_ms, ver"
#define WRITE_PASS "ep_ok AND prior IS NULL AND rights AND model_ok"
#define WRITE_INS(only)                                                                                              \
    "ins AS (INSERT INTO commands (enterprise_id, endpoint_id, msg_token, user_id, method, session_id, "              \
    "                              fingerprint, command) "                                                           \
    "        SELECT c.ent, c.ep, c.token, c.usr, c.method, NULL, decode(c.fp, 'hex'), c.command "                    \
    "        FROM c JOIN w USING (ord) " only                                                                        \
    "        ORDER BY c.ent, c.ep, c.token "                                                                         \
    "        ON CONFLICT (enterprise_id, endpoint_id, msg_token) DO NOTHING "                                         \
    "        RETURNING enterprise_id, endpoint_id, msg_token), "                                                     \
    "dc AS (INSERT INTO device_commands (product_id, device_name, device_token, enterprise_id, endpoint_id, "         \
    "                                    msg_token, method, deadline_ms) "                                           \
    "       SELECT c.pid, c.dn, c.dtoken, c.ent, c.ep, c.token, c.method, c.deadline "                               \
    "       FROM c JOIN w USING (ord) "                                                                              \
    "       JOIN ins ON ins.enterprise_id = c.ent AND ins.endpoint_id = c.ep AND ins.msg_token = c.token "           \
    "       RETURNING enterprise_id, endpoint_id, msg_token), "                                                      \
    "acc AS (SELECT c.ord, c.ent, c.ep, c.token, c.fp FROM c JOIN w USING (ord) "                                    \
    "        JOIN dc ON dc.enterprise_id = c.ent AND dc.endpoint_id = c.ep AND dc.msg_token = c.token) "
#define WRITE_ANSWER(message_cols)                                                                                   \
    "SELECT c.ep_ok, c.rights, a.ord IS NOT NULL, "                                                                  \
    "       COALESCE(c.prior, (SELECT x.fp FROM acc x WHERE x.ent = c.ent AND x.ep = c.ep AND x.token = c.token "     \
    "                          AND x.ord < c.ord)), "                                                               \
    "       c.model_ok, " message_cols " "                                                                           \
    "FROM c LEFT JOIN acc a ON a.ord = c.ord ORDER BY c.ord"

static const igw_db_stmt stmt_cmd_write = {
    "igw_cmd_write",
    "WITH c AS MATERIALIZED (SELECT i.*, " WRITE_CHECKS ", "
    "    (i.dlv IS NULL OR EXISTS (SELECT 1 FROM app_files f WHERE f.file_id = i.file AND f.enterprise_id = i.ent "
    "                              AND f.user_id = i.usr)) AS content_ok, "
    "    (i.dlv IS NOT NULL AND EXISTS (SELECT 1 FROM messages m WHERE m.enterprise_id = i.ent "
    "                                   AND m.user_id = i.usr AND m.delivery_id = i.dlv)) AS key_taken, "
    "    (i.dlv IS NULL OR i.expires < (SELECT p.expires_at_ms FROM endpoints p WHERE p.endpoint_id = i.ep)) "
    "      AS within "
    "  FROM unnest(" WRITE_ARRAYS ", $14::text[], $15::text[], $16::bigint[], $17::jsonb[]) "
    "       WITH ORDINALITY AS i(" WRITE_NAMES ", dlv, file, expires, down, ord)), "
    "w AS (SELECT DISTINCT ON (ent, ep, token) ord FROM c "
    "      WHERE " WRITE_PASS " AND content_ok AND NOT key_taken AND within "
    "      ORDER BY ent, ep, token, ord), "
    "msg AS (INSERT INTO messages (enterprise_id, user_id, delivery_id, product_id, device_name, device_token, "
    "                              file_id, expires_at_ms, downlink) "
    "        SELECT c.ent, c.usr, c.dlv, c.pid, c.dn, c.dtoken, c.file, c.expires, c.down "
    "        FROM c JOIN w USING (ord) WHERE c.dlv IS NOT NULL ORDER BY c.ent, c.usr, c.dlv "
    "        ON CONFLICT DO NOTHING RETURNING product_id, device_name, device_token), "
    WRITE_INS("WHERE c.dlv IS NULL OR EXISTS (SELECT 1 FROM msg WHERE msg.product_id = c.pid "
              "                                AND msg.device_name = c.dn AND msg.device_token = c.dtoken) ")
    WRITE_ANSWER("c.content_ok, c.key_taken, c.within IS TRUE"),
    WRITE_NP};

/* The same for rows without a message ($1..$13 only). */
static const igw_db_stmt stmt_cmd_write_plain = {
    "igw_cmd_write_plain",
    "WITH c AS MATERIALIZED (SELECT i.*, " WRITE_CHECKS " "
    "  FROM unnest(" WRITE_ARRAYS ") WITH ORDINALITY AS i(" WRITE_NAMES ", ord)), "
    "w AS (SELECT DISTINCT ON (ent, ep, token) ord FROM c WHERE " WRITE_PASS " ORDER BY ent, ep, token, ord), "
    WRITE_INS("")
    WRITE_ANSWER("true, false, true"),
    WRITE_P_DELIVERY}; /* the first thirteen: no message's columns */

/* igw_cmd_write_plain's twin for a batch of one command (db.h): the same
 * thirteen parameters as scalars, nothing to unnest or deduplicate. */
#define WRITE_SCALARS                                                                                                \
    "$1::text, $2::bigint, $3::bigint, $4::text, $5::text, $6::text, $7::jsonb, $8::text, "                          \
    "$9::text, $10::text, $11::bigint, $12::bigint, $13::text"
static const igw_db_stmt stmt_cmd_write_one = {
    "igw_cmd_write_one",
    "WITH c AS MATERIALIZED (SELECT i.*, " WRITE_CHECKS " "
    "  FROM (SELECT " WRITE_SCALARS ", 1::bigint) AS i(" WRITE_NAMES ", ord)), "
    "w AS (SELECT ord FROM c WHERE " WRITE_PASS "), "
    WRITE_INS("")
    WRITE_ANSWER("true, false, true"),
    WRITE_P_DELIVERY};

typedef struct ledger_call {
    union {
        igw_ledger_read_cb read;
        igw_ledger_write_cb write;
        igw_ledger_replay_cb replay;
    } cb;
    void *arg;
} ledger_call;

static ledger_call *call_new(void *arg)
{
    ledger_call *lc = malloc(sizeof *lc);
    if (lc)
        lc->arg = arg;
    return lc;
}

static const char *text_or_null(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static void on_read(void *arg, const PGresult *res, int row, const char *err)
{
    ledger_call lc = *(ledger_call *)arg;
    free(arg);
    igw_ledger_read_row r = {.ok = res != NULL, .err = err};
    if (res) {
        r.endpoint_live = igw_db_true(res, row, READ_C_LIVE);
        r.prior_fp = text_or_null(res, row, READ_C_PRIOR_FP);
        r.rights = !PQgetisnull(res, row, READ_C_RIGHTS);
        if (r.rights) {
            r.model_version = PQgetvalue(res, row, READ_C_VERSION);
            r.model = text_or_null(res, row, READ_C_MODEL);
            r.model_len = r.model ? (size_t)PQgetlength(res, row, READ_C_MODEL) : 0;
        }
    }
    lc.cb.read(lc.arg, &r);
}

int igw_ledger_read(igw_db *db, const igw_ledger_cmd *c, igw_ledger_read_cb cb, void *arg)
{
    ledger_call *lc = call_new(arg);
    if (!lc)
        return -1;
    lc->cb.read = cb;
    const char *values[READ_NP] = {[READ_P_ENDPOINT] = c->endpoint, [READ_P_ENTERPRISE] = c->enterprise,
                                   [READ_P_USER] = c->user,         [READ_P_TOKEN] = c->msg_token,
                                   [READ_P_PID] = c->product_id,    [READ_P_DN] = c->device_name,
                                   [READ_P_NOW] = c->now,           [READ_P_KNOWN] = c->known};
    if (igw_db_exec_row(db, &stmt_cmd_read, NULL, values, on_read, lc)) {
        free(lc);
        return -1;
    }
    return 0;
}

static void on_write(void *arg, const PGresult *res, int row, const char *err)
{
    ledger_call lc = *(ledger_call *)arg;
    free(arg);
    igw_ledger_write_row r = {.status = IGW_LEDGER_ANSWERED, .err = err};
    if (!res) {
        if (igw_db_not_sent(err))
            r.status = IGW_LEDGER_NOT_SENT;
        else if (igw_db_outcome_unknown(err))
            r.status = IGW_LEDGER_UNKNOWN;
        else
            r.status = IGW_LEDGER_FAILED;
    } else {
        r.endpoint_live = igw_db_true(res, row, WRITE_C_LIVE);
        r.rights = igw_db_true(res, row, WRITE_C_RIGHTS);
        r.accepted = igw_db_true(res, row, WRITE_C_ACCEPTED);
        r.prior_fp = text_or_null(res, row, WRITE_C_PRIOR_FP);
        r.model_current = igw_db_true(res, row, WRITE_C_MODEL_CURRENT);
        r.content_ok = igw_db_true(res, row, WRITE_C_CONTENT_OK);
        r.key_taken = igw_db_true(res, row, WRITE_C_KEY_TAKEN);
        r.within_endpoint = igw_db_true(res, row, WRITE_C_WITHIN);
    }
    lc.cb.write(lc.arg, &r);
}

int igw_ledger_write(igw_db *db, const igw_ledger_cmd *c, igw_ledger_write_cb cb, void *arg)
{
    ledger_call *lc = call_new(arg);
    if (!lc)
        return -1;
    lc->cb.write = cb;
    const char *values[WRITE_NP] = {[WRITE_P_ENDPOINT] = c->endpoint,   [WRITE_P_ENTERPRISE] = c->enterprise,
                                    [WRITE_P_USER] = c->user,           [WRITE_P_TOKEN] = c->msg_token,
                                    [WRITE_P_METHOD] = c->method,       [WRITE_P_FP] = c->fp->hex,
                                    [WRITE_P_COMMAND] = c->canon,       [WRITE_P_PID] = c->product_id,
                                    [WRITE_P_DN] = c->device_name,      [WRITE_P_DEVICE_TOKEN] = c->device_token,
                                    [WRITE_P_DEADLINE] = c->deadline,   [WRITE_P_NOW] = c->now,
                                    [WRITE_P_VERSION] = c->version,     [WRITE_P_DELIVERY] = c->delivery_id,
                                    [WRITE_P_FILE] = c->file_id,        [WRITE_P_EXPIRES] = c->expires_at,
                                    [WRITE_P_DOWNLINK] = c->kept_downlink};
    if (c->delivery_id ? igw_db_exec_row(db, &stmt_cmd_write, NULL, values, on_write, lc)
                       : igw_db_exec_row(db, &stmt_cmd_write_plain, &stmt_cmd_write_one, values, on_write, lc)) {
        free(lc);
        return -1;
    }
    return 0;
}

static void on_replayed(void *arg, const igw_outbox_result *r)
{
    ledger_call lc = *(ledger_call *)arg;
    free(arg);
    lc.cb.replay(lc.arg, r->status == IGW_OUTBOX_OK ? NULL : r->err ? r->err : "no such command",
                 r->status == IGW_OUTBOX_WINDOW_PASSED);
}

int igw_ledger_repeat(igw_db *db, const igw_ledger_cmd *c, const char *stored_fp, igw_ledger_replay_cb cb, void *arg)
{
    if (strcmp(stored_fp, c->fp->hex) != 0)
        return IGW_LEDGER_CONFLICT;
    igw_outbox_command oc = {.enterprise_id = c->enterprise_id, .user_id = c->user_id, .endpoint_id = c->endpoint,
                             .session_id = c->session_id, .method = c->method, .msg_token = c->msg_token,
                             .fingerprint = c->fp->md, .fingerprint_len = sizeof c->fp->md,
                             .window_ms = c->window_ms};
    ledger_call *lc = call_new(arg);
    if (!lc)
        return -2;
    lc->cb.replay = cb;
    if (igw_outbox_replay(db, &oc, on_replayed, lc)) {
        free(lc);
        return -1;
    }
    return IGW_LEDGER_REPLAY;
}
