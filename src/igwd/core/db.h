/* db.h - one PostgreSQL connection per worker thread, on its h2o loop.
 *
 * Non-blocking libpq in pipeline mode: every query is sent as
 * Bind/Execute + Sync, so each is its own implicit transaction and many are
 * in flight at once; results come back in submission order. A query is
 * reported only once its Sync is answered, i.e. after its commit (the
 * session runs with synchronous_commit=on whatever the server default).
 * Queries submitted while disconnected wait in a bounded queue; after a
 * connection loss the queries that were already sent fail (they may have
 * committed: the caller decides) and the connection is re-established with
 * backoff (50 ms doubling to 2 s). Everything but igw_db_stats_get runs on
 * the loop's thread. */
#ifndef IGW_DB_H
#define IGW_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "api.h"
#include "core/conn.h"

struct st_h2o_evloop_t; /* h2o_evloop_t, without pulling h2o into every user */

typedef struct igw_db igw_db;

/* Queries accepted but not yet answered (queued + in flight, batched rows
 * waiting included), per connection. */
#define IGW_DB_QUEUE_MAX 65536

/* A statement, prepared lazily once per physical connection (again after a
 * reconnect) under `name`. Static storage, shared by all workers; the
 * pointer is its identity. */
typedef struct igw_db_stmt {
    const char *name;
    const char *sql;
    int nparams;
} igw_db_stmt;

/* Called exactly once per accepted query, on the loop thread. Success: res
 * is PGRES_TUPLES_OK or PGRES_COMMAND_OK, err NULL; db.c frees res after the
 * callback returns. Failure: res NULL and err a short text for logs only
 * (never for clients), valid during the callback. A server-reported error
 * starts with its 5-character SQLSTATE and a space ("23505 duplicate key
 * ..."); local failures start with a lower-case word ("connection lost: ...",
 * "shutting down"). Must not call igw_db_destroy. */
typedef void (*igw_db_cb)(void *arg, const PGresult *res, const char *err);


/* Counters since creation, for Prometheus. Round trip: from handing the
 * query to the socket until its Sync came back (successes and server-side
 * errors; queries lost with the connection are not observed). */
typedef struct igw_db_stats {
    uint64_t queries_ok, queries_failed; /* callbacks with a result / an error */
    uint64_t rejected;                   /* igw_db_exec returned -1 */
    uint64_t queued, in_flight;          /* gauges: waiting to be sent / sent, unanswered */
    igw_conn_stats conn;                 /* connects: sessions that became ready; round trips */
} igw_db_stats;

/* Starts connecting to `dsn` (a conninfo string or URI) in the background
 * and returns at once; queries may be submitted right away. A connection
 * attempt (including the session setup) is abandoned after the DSN's
 * connect_timeout, 10 s if unset. NULL with err when the DSN does not parse
 * or memory runs out. */
igw_db *igw_db_create(struct st_h2o_evloop_t *loop, const char *dsn, char *err, size_t errlen);

/* Queues `stmt` with stmt->nparams parameters (values[i] NULL for SQL NULL;
 * lengths and formats as for PQsendQueryPrepared, both may be NULL for all
 * text). The values are copied: they need to live only during the call.
 * Sending happens at the end of the current loop turn, all queued queries
 * together. 0 accepted (cb will be called exactly once), or -1 when the
 * queue is full (IGW_DB_QUEUE_MAX), memory runs out or the db is being
 * destroyed: cb is then never called. */
int igw_db_exec(igw_db *db, const igw_db_stmt *stmt, const char *const *values, const int *lengths,
                const int *formats, igw_db_cb cb, void *arg);

/* ---- group commit -------------------------------------------------------------
 * A batched statement runs many rows at once: rows submitted for the same
 * statement on one connection are gathered while its previous batch is in
 * flight (and during the loop turn) and go out as ONE execution, so one
 * transaction and one commit serve them all. Parameter c of the execution is
 * a PostgreSQL array literal (text form, e.g. {"a",NULL}) of every row's
 * value c, in submission order; the SQL casts it ($1::text[], $2::bigint[],
 * ...), reads the rows with unnest(...) WITH ORDINALITY and must answer
 * exactly one result row per input row, in input order (ORDER BY the
 * ordinality). A batch that fails on a value (SQLSTATE class 22 or 23) is
 * retried one row at a time, so a bad row fails alone; one that lost a
 * deadlock or serialization race (class 40) is retried as it was (at most
 * IGW_DB_BATCH_RETRIES times). */

#define IGW_DB_BATCH_ROWS 256          /* rows per execution at most */
#define IGW_DB_BATCH_BYTES (4u << 20)  /* parameter bytes per execution (a larger row goes alone) */
#define IGW_DB_BATCH_RETRIES 3
#define IGW_DB_BATCH_STMTS 16          /* distinct batched statements per connection */
#define IGW_DB_BATCH_COLS 32           /* parameters (columns) of a batched statement */

/* Called exactly once per accepted row, on the loop thread: res and `row`
 * (its index in res) on success, else res NULL and err as for igw_db_cb.
 * res is freed after the batch's last callback. */
typedef void (*igw_db_row_cb)(void *arg, const PGresult *res, int row, const char *err);

/* Queues one row of the batched statement `stmt` (stmt->nparams text
 * values, NULL for SQL NULL; copied). `one`, when not NULL, is its twin for
 * a batch that holds a single row: the same parameters as scalars ($1::text
 * where stmt has $1::text[]) and one answer row, run instead of `stmt` so
 * that no array literal is built or parsed and nothing is unnested (a batch
 * of one is the common case at a few hundred rows a second per connection;
 * make bench-app: -12 % of PostgreSQL's CPU per command). A statement is
 * always queued with the same twin. 0 accepted, or -1 (queue full, out of
 * memory, more than IGW_DB_BATCH_STMTS statements, a different twin,
 * destroying): cb is then never called. Never calls cb from inside the
 * call. */
int igw_db_exec_row(igw_db *db, const igw_db_stmt *stmt, const igw_db_stmt *one, const char *const *values,
                    igw_db_row_cb cb, void *arg);

/* For a failed query's err: true when the server never answered it (the
 * connection was lost after sending), so a write may have committed; false
 * for a server-reported error (SQLSTATE first), which rolled it back, and
 * for a query that was never sent (igw_db_not_sent). */
bool igw_db_outcome_unknown(const char *err);

/* The errors of queries that never reached the server start with this:
 * nothing was written (the queue was full, memory ran out building a batch,
 * or igw_db_destroy came before they were sent). */
#define IGW_DB_NOT_SENT "not sent: "

/* The public error class of a failed query, the same on every route: never
 * sent (nothing written) IGW_ERR_UNAVAILABLE; sent and unanswered (the
 * deadline, a lost connection) IGW_ERR_UNAVAILABLE for a read and
 * IGW_ERR_UNKNOWN_OUTCOME for a `write` (it may have committed); refused by
 * the server IGW_ERR_INTERNAL (log err: it is never for clients). */
igw_err igw_db_error_class(const char *err, bool write);

/* err says the query never reached the server. */
bool igw_db_not_sent(const char *err);

/* err is the server refusing a value (SQLSTATE class 22 data exception or
 * 23 integrity constraint): that row fails again however often it is sent. */
bool igw_db_value_error(const char *err);

/* Writes the n strings as a PostgreSQL text[] literal (`{"a","b\"c"}`:
 * each element quoted, `"` and `\` escaped) into out, NUL-terminated, for
 * a parameter cast `::text[]`. Returns its length, or 0 when it does not
 * fit cap (out then holds nothing usable). */
size_t igw_db_text_array(char *out, size_t cap, const char *const *items, size_t n);

/* Column col of row `row` of res is a true boolean (NULL is false). */
bool igw_db_true(const PGresult *res, int row, int col);

/* err is a lost deadlock or serialization race (SQLSTATE class 40): the
 * same statement may well succeed when sent again. */
bool igw_db_lost_race(const char *err);

/* Makes every session of db LISTEN on `channel` ([a-z_]{1,63}) as part of
 * its setup; cb gets each notification on that channel (channel, payload)
 * on the loop thread, and (NULL, NULL) whenever a session became ready,
 * since notifications sent while none listened are lost. At most
 * IGW_DB_LISTEN_MAX channels, each with its own callback. Call right after
 * igw_db_create. 0, or -1 (bad channel, already listened on, too many, too
 * late). */
#define IGW_DB_LISTEN_MAX 4
int igw_db_listen(igw_db *db, const char *channel, void (*cb)(void *arg, const char *channel, const char *payload),
                  void *arg);

/* True when the session is ready (connected and configured). */
bool igw_db_connected(const igw_db *db);

/* The reason of the last connection failure or loss ("" if none), for logs. */
const char *igw_db_last_error(const igw_db *db);

/* A consistent-enough snapshot of the counters; safe from any thread. */
void igw_db_stats_get(const igw_db *db, igw_db_stats *out);

/* A deadline for every query and row (ms; 0, the default: none): one still
 * waiting to be sent after it fails with IGW_DB_NOT_SENT "the database did
 * not answer within N ms"; one sent and unanswered after it drops the
 * connection, which fails everything in flight as "connection lost: no
 * answer within N ms" (it may have committed) and reconnects. So a frozen
 * server costs a caller at most about the deadline (checked every quarter
 * of it), never a hang. */
void igw_db_set_deadline(igw_db *db, unsigned ms);

/* Probes the connection while it is idle (conn.h): SELECT 1 after
 * `interval_ms` without an answer; none within `timeout_ms` makes the
 * stats' conn.healthy false (readiness), until the server answers again or
 * the deadline drops the connection. 0 interval: none. Once, after create. */
void igw_db_set_probe(igw_db *db, unsigned interval_ms, unsigned timeout_ms);

/* Fails every queued and in-flight query with "shutting down" (in order),
 * closes the connection and frees. On the loop thread, not from inside an
 * igw_db callback. The loop must run once more afterwards (or be destroyed)
 * for h2o to free its socket. NULL is ignored. */
void igw_db_destroy(igw_db *db);

#endif
