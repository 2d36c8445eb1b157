/* db.c - see db.h.
 *
 * States: BACKOFF (waiting to retry) -> CONNECTING (PQconnectPoll steps) ->
 * SETUP (pipeline on, "SET synchronous_commit" in flight) -> READY. Any
 * failure goes back to BACKOFF through drop(). The attempt's deadline, the
 * backoff and the connection counters are conn.c's (the same for Redis). Queries wait in `queued`
 * until READY, then move to `inflight` once handed to libpq; a connection
 * loss fails `inflight` only. libpq's socket is watched through a dup()
 * wrapped in an h2o socket with DONT_READ, so h2o reports readiness and
 * libpq does all reading and writing. Rows of batched statements wait in
 * their statement's queue until the kick (the end of the loop turn) finds
 * no batch of it in flight; then they become one ordinary query. */
#include "core/db.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <h2o/socket.h>
#include <h2o/timeout.h>

#include "clock.h"
#include "core/conn.h"
#include "core/log.h"

/* PQpipelineSync (libpq <= 16) flushes on every call; PQsendPipelineSync
 * (17+) does not, which lets one loop turn go out in one write. */
#ifdef LIBPQ_HAS_SEND_PIPELINE_SYNC
#define SYNC_FLUSHES 0
#define send_sync PQsendPipelineSync
#else
#define SYNC_FLUSHES 1
#define send_sync PQpipelineSync
#endif

#define CONNECT_TIMEOUT_MS 10000 /* when the DSN sets no connect_timeout */

/* Durability must not depend on the server's default. Generic plans: the
 * batched statements are CTE chains whose planning cost more than their
 * execution; with custom plans (the default for a prepared statement's
 * first runs, and whenever a generic plan looks dearer) PostgreSQL took a
 * whole core at 1000 commands/s, 56-62% with generic ones (make bench-app). */
static const char setup_sql[] = "SELECT set_config('synchronous_commit', 'on', false), "
                                "set_config('plan_cache_mode', 'force_generic_plan', false)";

typedef struct req {
    struct req *next;
    const igw_db_stmt *stmt; /* NULL: a session setup statement */
    const char *sql;         /* setup: this text (NULL: setup_sql) */
    igw_db_cb cb;
    void *arg;
    const char *const *values;
    const int *lengths, *formats;
    bool prepare;       /* its Parse went out in the same Sync segment */
    unsigned cmds_done; /* commands (Parse, Execute) whose results ended */
    uint64_t sent_us;
    uint64_t queued_us; /* when it was submitted (the deadline counts from here) */
    PGresult *res;     /* the Execute's result on success */
    PGresult *err_res; /* the first error of its segment */
} req;

typedef struct fifo {
    req *head, *tail;
    size_t n;
} fifo;

/* A row of a batched statement, waiting or in flight (values follow it). */
typedef struct brow {
    struct brow *next;
    igw_db_row_cb cb;
    void *arg;
    bool solo;        /* its batch failed on a value: it goes alone */
    uint64_t at_us;   /* when it was submitted */
    unsigned retries; /* class 40 retries so far */
    size_t bytes;     /* its share of the parameters */
    const char **values;
} brow;

/* The rows of one batched statement: waiting ones, and whether a batch of
 * them is in flight (the next one gathers meanwhile). */
typedef struct bqueue {
    const igw_db_stmt *stmt;
    const igw_db_stmt *one; /* its twin for a batch of one row, or NULL */
    brow *head, *tail;
    size_t n;
    bool busy;
} bqueue;

typedef struct batch {
    igw_db *db;
    bqueue *q;
    brow *rows;
    size_t n;
} batch;

enum state { ST_BACKOFF, ST_CONNECTING, ST_SETUP, ST_READY };

struct igw_db {
    h2o_evloop_t *loop;
    char *dsn;
    PGconn *conn;
    h2o_socket_t *sock;
    enum state state;
    bool write_armed; /* h2o_socket_notify_write pending (it asserts if armed twice) */
    bool need_flush;  /* libpq holds unsent output */
    bool last_null;   /* the previous PQgetResult was NULL: two in a row means out of step */
    bool closing;
    unsigned in_cb;
    unsigned gen; /* bumped by every drop(), to notice one under our feet */
    igw_conn *sup; /* attempts, deadline, backoff, connection counters */
    fifo queued, inflight;
    const igw_db_stmt **prepared; /* statements prepared (or being) on this connection */
    size_t nprepared, capprepared;
    h2o_timeout_t t_zero, t_watch;
    h2o_timeout_entry_t kick, watch;
    uint64_t deadline_us; /* igw_db_set_deadline; 0: none */
    char errbuf[256];   /* err handed to callbacks */
    char lostbuf[320];  /* "connection lost: ..." while failing in-flight queries */
    /* The channels every session LISTENs on as part of its setup. */
    struct {
        char *sql;     /* "LISTEN <channel>" */
        char channel[64];
        void (*cb)(void *arg, const char *channel, const char *payload);
        void *arg;
    } listens[IGW_DB_LISTEN_MAX];
    unsigned nlistens;
    unsigned setup_left;
    bqueue bq[IGW_DB_BATCH_STMTS];
    unsigned nbq;
    size_t nrows; /* batched rows waiting (not yet in a query) */
    char *bbuf;   /* a batch's array literals, reused */
    size_t bcap;
    struct {
        atomic_uint_fast64_t ok, failed, rejected;
        atomic_uint_fast64_t queued, inflight;
    } st;
};

static void drop(igw_db *db, const char *why);
static void arm_watch(igw_db *db);
static void send_queued(igw_db *db);

/* ---- small helpers ----------------------------------------------------------- */

/* Single writer (the loop thread): a relaxed load + store is enough. */
static void bump(atomic_uint_fast64_t *a, uint64_t by)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + by, memory_order_relaxed);
}

static void set(atomic_uint_fast64_t *a, uint64_t v)
{
    atomic_store_explicit(a, v, memory_order_relaxed);
}

static void gauges(igw_db *db)
{
    set(&db->st.queued, db->queued.n);
    set(&db->st.inflight, db->inflight.n);
}

static void fifo_push(fifo *f, req *r)
{
    r->next = NULL;
    if (f->tail)
        f->tail->next = r;
    else
        f->head = r;
    f->tail = r;
    f->n++;
}

static void fifo_push_front(fifo *f, req *r)
{
    r->next = f->head;
    f->head = r;
    if (!f->tail)
        f->tail = r;
    f->n++;
}

static req *fifo_pop(fifo *f)
{
    req *r = f->head;
    if (r) {
        f->head = r->next;
        if (!f->head)
            f->tail = NULL;
        f->n--;
        r->next = NULL;
    }
    return r;
}

/* libpq messages span lines ("...failed: ...\n\tIs the server running"):
 * one line for logs, whitespace runs collapsed. */
static void flatten(char *dst, size_t cap, const char *prefix, const char *msg)
{
    const char *parts[2] = {prefix, msg};
    size_t o = 0;
    bool space = false;
    for (size_t i = 0; i < 2; i++) {
        for (const char *s = parts[i] ? parts[i] : ""; *s && o + 1 < cap; s++) {
            if (*s == '\n' || *s == '\r' || *s == '\t' || *s == ' ') {
                space = o > 0;
                continue;
            }
            if (space && o + 2 < cap)
                dst[o++] = ' ';
            space = false;
            dst[o++] = *s;
        }
    }
    dst[o] = '\0';
}

/* libpq's reason for a DSN that does not parse, flattened. What it quotes
 * of the DSN may hold a password (or be the whole URI): from the first
 * quote to the last becomes "...", except in the unknown-option message,
 * whose quote is a key. */
static void dsn_reason(char *dst, size_t cap, const char *perr)
{
    static const char unknown[] = "invalid connection option \"";
    char flat[256];
    flatten(flat, sizeof flat, "", perr);
    const char *first = strchr(flat, '"'), *last = strrchr(flat, '"');
    if (!first || first == last || strncmp(flat, unknown, sizeof unknown - 1) == 0)
        snprintf(dst, cap, "%s", first == last && first ? "does not parse" : flat);
    else
        snprintf(dst, cap, "%.*s\"...\"%s", (int)(first - flat), flat, last + 1);
}

/* Notices would go to stderr, in the middle of the JSON access log. */
static void quiet_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static bool is_prepared(const igw_db *db, const igw_db_stmt *s)
{
    for (size_t i = 0; i < db->nprepared; i++)
        if (db->prepared[i] == s)
            return true;
    return false;
}

static void unmark_prepared(igw_db *db, const igw_db_stmt *s)
{
    for (size_t i = 0; i < db->nprepared; i++)
        if (db->prepared[i] == s) {
            db->prepared[i] = db->prepared[--db->nprepared];
            return;
        }
}

/* ---- completion -------------------------------------------------------------- */

static void free_req(req *r)
{
    PQclear(r->res);
    PQclear(r->err_res);
    free(r);
}

static const char *format_err(igw_db *db, const PGresult *res)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    if (state && msg) {
        char head[8];
        snprintf(head, sizeof head, "%.5s ", state);
        flatten(db->errbuf, sizeof db->errbuf, head, msg);
    } else {
        const char *m = PQresultErrorMessage(res);
        flatten(db->errbuf, sizeof db->errbuf, "libpq: ", *m ? m : PQresStatus(PQresultStatus(res)));
    }
    return db->errbuf;
}

/* Hands a user query's outcome to its callback and frees it. `local_err`
 * applies only when the server did not report an error itself. */
static void finish(igw_db *db, req *r, const char *local_err)
{
    const PGresult *res = NULL;
    const char *err;
    if (r->err_res)
        err = format_err(db, r->err_res);
    else if (local_err)
        err = local_err;
    else if (r->res)
        err = NULL;
    else
        err = "no result";
    if (!err)
        res = r->res;
    bump(err ? &db->st.failed : &db->st.ok, 1);
    db->in_cb++;
    r->cb(r->arg, res, err);
    db->in_cb--;
    free_req(r);
}

/* Fails a detached list in order; setup requests are just freed. */
static void fail_list(igw_db *db, req *r, const char *err)
{
    while (r) {
        req *next = r->next;
        if (r->stmt)
            finish(db, r, err);
        else
            free_req(r);
        r = next;
    }
}


/* ---- socket plumbing --------------------------------------------------------- */

static void on_sock_read(h2o_socket_t *sock, const char *err);
static void on_sock_write(h2o_socket_t *sock, const char *err);

static void close_socket(igw_db *db)
{
    if (db->sock) {
        h2o_socket_close(db->sock); /* closes our dup only; a pending notify dies with it */
        db->sock = NULL;
    }
    db->write_armed = false;
}

/* Wraps a dup of libpq's current socket (closing the previous wrapper:
 * PQconnectPoll may switch sockets between attempts, and a fd number can
 * be reused, so a fresh one per step is the simple correct choice). */
static int open_socket(igw_db *db)
{
    close_socket(db);
    int fd = PQsocket(db->conn);
    if (fd < 0)
        return -1;
    int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dupfd < 0)
        return -1;
    db->sock = h2o_evloop_socket_create(db->loop, dupfd, H2O_SOCKET_FLAG_DONT_READ);
    db->sock->data = db;
    return 0;
}

static void arm_write(igw_db *db)
{
    if (!db->write_armed) {
        db->write_armed = true;
        h2o_socket_notify_write(db->sock, on_sock_write);
    }
}

/* 0 all sent, 1 more to send (write readiness armed), -1 connection dropped. */
static int flush(igw_db *db)
{
    int r = PQflush(db->conn);
    if (r < 0) {
        drop(db, "send failed");
        return -1;
    }
    db->need_flush = r > 0;
    if (r > 0)
        arm_write(db);
    return r;
}

/* ---- connection lifecycle ---------------------------------------------------- */

/* Tears the connection down from any state and schedules the next attempt;
 * queries in flight fail (never retried: they may have committed). */
static void drop(igw_db *db, const char *why)
{
    const char *pqmsg = db->conn ? PQerrorMessage(db->conn) : "";
    char tmp[256], last[256];
    snprintf(tmp, sizeof tmp, "%s%s%s", why, *pqmsg ? ": " : "", pqmsg);
    flatten(last, sizeof last, "", tmp);
    db->gen++;
    close_socket(db);
    if (db->conn)
        PQfinish(db->conn);
    db->conn = NULL;
    db->nprepared = 0;
    db->need_flush = false;
    db->last_null = false;
    if (h2o_timeout_is_linked(&db->kick))
        h2o_timeout_unlink(&db->kick);
    db->state = ST_BACKOFF;
    igw_conn_down(db->sup, last);

    req *list = db->inflight.head;
    db->inflight = (fifo){0};
    gauges(db);
    snprintf(db->lostbuf, sizeof db->lostbuf, "%s%s", strncmp(why, "connection lost", 15) ? "connection lost: " : "",
             last);
    fail_list(db, list, db->lostbuf); /* last: callbacks may submit again */
}

/* Hands one request to libpq: 0 sent; 1 nothing of its Execute queued
 * (safe to requeue); 2 queued without its Sync (counts as in flight). */
static int send_one(igw_db *db, req *r)
{
    if (!r->stmt) {
        if (!PQsendQueryParams(db->conn, r->sql ? r->sql : setup_sql, 0, NULL, NULL, NULL, NULL, 0))
            return 1;
    } else {
        r->prepare = !is_prepared(db, r->stmt);
        if (r->prepare) {
            if (db->nprepared == db->capprepared) {
                size_t cap = db->capprepared ? db->capprepared * 2 : 16;
                const igw_db_stmt **p = realloc(db->prepared, cap * sizeof *p);
                if (!p)
                    return 1;
                db->prepared = p;
                db->capprepared = cap;
            }
            if (!PQsendPrepare(db->conn, r->stmt->name, r->stmt->sql, 0, NULL))
                return 1;
            db->prepared[db->nprepared++] = r->stmt;
        }
        if (!PQsendQueryPrepared(db->conn, r->stmt->name, r->stmt->nparams, r->values, r->lengths, r->formats, 0))
            return 1;
    }
    r->sent_us = igw_clock_us();
    fifo_push(&db->inflight, r);
    return send_sync(db->conn) ? 0 : 2;
}

/* Moves queued queries into the pipeline until done or the socket pushes
 * back (then on_sock_write resumes). */
static void send_queued(igw_db *db)
{
    if (db->state != ST_READY || db->need_flush)
        return;
    while (db->queued.head) {
        req *r = fifo_pop(&db->queued);
        int rc = send_one(db, r);
        if (rc == 1)
            fifo_push_front(&db->queued, r);
        if (rc != 0) {
            gauges(db);
            drop(db, "send failed");
            return;
        }
        if (SYNC_FLUSHES && PQflush(db->conn) != 0) /* no syscall when libpq's buffer is empty */
            break;
    }
    gauges(db);
    flush(db);
}

static void form_batches(igw_db *db);

static void on_kick(h2o_timeout_entry_t *e)
{
    igw_db *db = H2O_STRUCT_FROM_MEMBER(igw_db, kick, e);
    form_batches(db);
    send_queued(db);
}

static void setup_done(igw_db *db, req *r)
{
    if (r->err_res || !r->res) {
        char why[200];
        snprintf(why, sizeof why, "session setup failed: %s", r->err_res ? format_err(db, r->err_res) : "no result");
        free_req(r);
        drop(db, why);
        return;
    }
    free_req(r);
    if (db->setup_left > 1) {
        db->setup_left--;
        return;
    }
    db->setup_left = 0;
    db->state = ST_READY;
    igw_conn_answered(db->sup, UINT64_MAX); /* the setup's answer */
    igw_conn_up(db->sup);
    if ((db->queued.head || db->nrows) && !h2o_timeout_is_linked(&db->kick))
        h2o_timeout_link(db->loop, &db->t_zero, &db->kick);
    /* Notifications sent while this session did not listen are lost: the
     * listeners catch up (channel NULL). */
    for (unsigned i = 0; i < db->nlistens; i++)
        db->listens[i].cb(db->listens[i].arg, NULL, NULL);
}

/* Connected: pipeline on, then the session settings as the first entry. */
static void connected(igw_db *db)
{
    req *r = calloc(1, sizeof *r);
    if (!r) {
        drop(db, "out of memory");
        return;
    }
    if (PQsetnonblocking(db->conn, 1) != 0 || !PQenterPipelineMode(db->conn) || open_socket(db) != 0) {
        free(r);
        drop(db, "pipeline setup failed");
        return;
    }
    db->state = ST_SETUP;
    db->setup_left = 1;
    h2o_socket_read_start(db->sock, on_sock_read);
    int rc = send_one(db, r);
    if (rc == 1)
        free(r);
    if (rc != 0) {
        drop(db, "send failed");
        return;
    }
    for (unsigned i = 0; i < db->nlistens; i++) {
        req *l = calloc(1, sizeof *l);
        if (!l) {
            drop(db, "out of memory");
            return;
        }
        l->sql = db->listens[i].sql;
        if ((rc = send_one(db, l)) == 1)
            free(l);
        if (rc != 0) {
            drop(db, "send failed");
            return;
        }
        db->setup_left++;
    }
    gauges(db);
    flush(db);
}

/* One PQconnectPoll step, then wait for what it asked for. */
static void connect_step(igw_db *db)
{
    PostgresPollingStatusType ps = PQconnectPoll(db->conn);
    if (ps == PGRES_POLLING_OK) {
        connected(db);
        return;
    }
    if (ps == PGRES_POLLING_FAILED || open_socket(db) != 0) {
        drop(db, "connect failed");
        return;
    }
    if (ps == PGRES_POLLING_READING)
        h2o_socket_read_start(db->sock, on_sock_read);
    else
        arm_write(db);
}

/* conn.c's `connect` hook. */
static void start_connect(void *arg)
{
    igw_db *db = arg;
    static const char *const keys[] = {"dbname", "fallback_application_name", NULL};
    const char *vals[] = {db->dsn, "igwd", NULL};
    db->conn = PQconnectStartParams(keys, vals, 1);
    db->state = ST_CONNECTING;
    if (!db->conn) {
        drop(db, "out of memory");
        return;
    }
    PQsetNoticeProcessor(db->conn, quiet_notice, NULL);
    if (PQstatus(db->conn) == CONNECTION_BAD || open_socket(db) != 0) {
        drop(db, "connect failed");
        return;
    }
    arm_write(db); /* as if PQconnectPoll had said WRITING */
}

/* conn.c's `timed_out` hook. */
static void on_deadline(void *arg)
{
    drop(arg, "connect timed out");
}

/* ---- results ------------------------------------------------------------------- */

/* Reads every complete result; a query completes at its Sync, i.e. after
 * its commit, so success is never reported for a transaction that could
 * still be lost. */
static void process(igw_db *db)
{
    unsigned gen = db->gen;
    while (db->inflight.head) {
        if (PQisBusy(db->conn))
            break;
        PGresult *res = PQgetResult(db->conn);
        req *r = db->inflight.head;
        if (!res) {
            if (db->last_null) { /* libpq and our FIFO disagree: start afresh */
                drop(db, "pipeline out of step");
                return;
            }
            db->last_null = true;
            r->cmds_done++;
            continue;
        }
        db->last_null = false;
        ExecStatusType s = PQresultStatus(res);
        if (s == PGRES_PIPELINE_SYNC) {
            PQclear(res);
            fifo_pop(&db->inflight);
            gauges(db);
            if (!r->stmt) {
                setup_done(db, r);
            } else {
                igw_conn_answered(db->sup, igw_clock_us() - r->sent_us);
                finish(db, r, NULL);
            }
            if (gen != db->gen || db->closing)
                return;
            continue;
        }
        if (s == PGRES_COPY_IN || s == PGRES_COPY_OUT || s == PGRES_COPY_BOTH) {
            PQclear(res);
            drop(db, "COPY is not supported");
            return;
        }
        bool is_prepare = r->prepare && r->cmds_done == 0;
        if ((s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) && !is_prepare && !r->res) {
            r->res = res;
        } else if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
            PQclear(res);
        } else {
            if (is_prepare) /* prepare again next time */
                unmark_prepared(db, r->stmt);
            if (!r->err_res)
                r->err_res = res;
            else
                PQclear(res);
        }
    }
    if (PQstatus(db->conn) == CONNECTION_BAD)
        drop(db, "connection lost");
}

/* Hands every notification libpq has parsed to its channel's callback:
 * true, or false when a callback dropped or closed the connection. */
static bool notifies(igw_db *db, unsigned gen)
{
    PGnotify *n;
    while ((n = PQnotifies(db->conn)) != NULL) {
        for (unsigned i = 0; i < db->nlistens; i++)
            if (strcmp(db->listens[i].channel, n->relname) == 0)
                db->listens[i].cb(db->listens[i].arg, n->relname, n->extra);
        PQfreemem(n);
        if (gen != db->gen || db->closing)
            return false;
    }
    return true;
}

static void on_sock_read(h2o_socket_t *sock, const char *err)
{
    igw_db *db = sock->data;
    if (db->state == ST_CONNECTING) {
        connect_step(db);
        return;
    }
    if (err || !PQconsumeInput(db->conn)) {
        drop(db, "connection lost");
        return;
    }
    unsigned gen = db->gen;
    /* libpq parses a notification only when it reaches it: one behind a
     * result (the backend sends its own after ReadyForQuery) is parsed
     * while process() takes the results, after the first drain. Drained
     * again after them, or it waits for the socket's next read. */
    if (!notifies(db, gen))
        return;
    process(db);
    if (gen != db->gen || !notifies(db, gen))
        return;
    if (db->need_flush && flush(db) == 0) /* libpq: after reading, flush again */
        send_queued(db);
}

static void on_sock_write(h2o_socket_t *sock, const char *err)
{
    igw_db *db = sock->data;
    db->write_armed = false;
    if (db->state == ST_CONNECTING) {
        connect_step(db);
        return;
    }
    if (err) {
        drop(db, "connection lost");
        return;
    }
    if (flush(db) == 0)
        send_queued(db);
}

/* ---- deadlines ------------------------------------------------------------------ */

static void finish_rows(igw_db *db, brow *rows, const PGresult *res, const char *err);

/* Watched while anything waits: the deadline is checked every quarter of it. */
static void arm_watch(igw_db *db)
{
    if (db->deadline_us && !db->closing && !h2o_timeout_is_linked(&db->watch) &&
        (db->queued.head || db->inflight.head || db->nrows))
        h2o_timeout_link(db->loop, &db->t_watch, &db->watch);
}

/* Nothing waits past the deadline (igw_db_set_deadline): a query sent and
 * unanswered that long means the server does not answer (frozen, a lost
 * route): the connection is dropped, which fails what is in flight (outcome
 * unknown) and reconnects; queries and rows still waiting to be sent fail
 * as not sent. */
static void on_watch(h2o_timeout_entry_t *e)
{
    igw_db *db = H2O_STRUCT_FROM_MEMBER(igw_db, watch, e);
    uint64_t now = igw_clock_us(), limit = db->deadline_us;
    char why[96];
    snprintf(why, sizeof why, IGW_DB_NOT_SENT "the database did not answer within %llu ms",
             (unsigned long long)(limit / 1000));
    unsigned gen = db->gen;
    req *late = NULL, **tail = &late;
    while (db->queued.head && now - db->queued.head->queued_us > limit) {
        *tail = fifo_pop(&db->queued);
        tail = &(*tail)->next;
    }
    gauges(db);
    for (unsigned i = 0; i < db->nbq; i++) {
        bqueue *q = &db->bq[i];
        brow *rows = NULL, **rt = &rows;
        while (q->head && now - q->head->at_us > limit) {
            brow *r = q->head;
            q->head = r->next;
            if (!q->head)
                q->tail = NULL;
            q->n--;
            db->nrows--;
            r->next = NULL;
            *rt = r;
            rt = &r->next;
        }
        if (rows)
            finish_rows(db, rows, NULL, why);
        if (gen != db->gen || db->closing)
            return;
    }
    if (late)
        fail_list(db, late, why);
    if (gen != db->gen || db->closing)
        return;
    req *head = db->inflight.head;
    if (head && now - head->sent_us > limit) {
        snprintf(why, sizeof why, "no answer within %llu ms", (unsigned long long)(limit / 1000));
        drop(db, why);
        return; /* drop's callbacks may have submitted again: they arm the watch */
    }
    arm_watch(db);
}

void igw_db_set_deadline(igw_db *db, unsigned ms)
{
    db->deadline_us = (uint64_t)ms * 1000;
    if (h2o_timeout_is_linked(&db->watch))
        h2o_timeout_unlink(&db->watch);
    h2o_timeout_dispose(db->loop, &db->t_watch);
    unsigned period = ms / 4 < 20 ? 20 : ms / 4 > 1000 ? 1000 : ms / 4;
    h2o_timeout_init(db->loop, &db->t_watch, period);
    arm_watch(db);
}

/* The probe of an idle connection (conn.h): answered by anything. */
static const igw_db_stmt probe_stmt = {"igw_probe", "SELECT 1", 0};

static void on_probe_answer(void *arg, const PGresult *res, const char *err)
{
    (void)arg, (void)res, (void)err; /* the supervisor saw the answer, or the loss */
}

static int send_probe(void *arg)
{
    return igw_db_exec(arg, &probe_stmt, NULL, NULL, NULL, on_probe_answer, NULL);
}

void igw_db_set_probe(igw_db *db, unsigned interval_ms, unsigned timeout_ms)
{
    igw_conn_set_probe(db->sup, interval_ms, timeout_ms); /* the hook is set: cannot fail */
}

/* ---- public -------------------------------------------------------------------- */

igw_db *igw_db_create(h2o_evloop_t *loop, const char *dsn, char *err, size_t errlen)
{
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(dsn, &perr);
    if (!opts) {
        char tmp[256];
        dsn_reason(tmp, sizeof tmp, perr ? perr : "out of memory");
        snprintf(err, errlen, "database DSN: %s", tmp);
        PQfreemem(perr);
        return NULL;
    }
    /* PQconnectPoll ignores connect_timeout: the caller enforces it, as
     * libpq would (seconds, at least 2). */
    uint64_t timeout_ms = CONNECT_TIMEOUT_MS;
    for (PQconninfoOption *o = opts; o->keyword; o++)
        if (strcmp(o->keyword, "connect_timeout") == 0 && o->val) {
            long t = strtol(o->val, NULL, 10);
            if (t > 0)
                timeout_ms = (uint64_t)(t < 2 ? 2 : t) * 1000;
        }
    PQconninfoFree(opts);
    igw_db *db = calloc(1, sizeof *db);
    if (!db || !(db->dsn = strdup(dsn))) {
        free(db);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    db->loop = loop;
    db->sup = igw_conn_create(loop, timeout_ms, (igw_conn_hooks){.connect = start_connect, .timed_out = on_deadline, .probe = send_probe},
                              db);
    if (!db->sup) {
        free(db->dsn);
        free(db);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h2o_timeout_init(loop, &db->t_zero, 0);
    h2o_timeout_init(loop, &db->t_watch, 1000);
    db->kick.cb = on_kick;
    db->watch.cb = on_watch;
    igw_conn_start(db->sup);
    return db;
}

int igw_db_exec(igw_db *db, const igw_db_stmt *stmt, const char *const *values, const int *lengths,
                const int *formats, igw_db_cb cb, void *arg)
{
    if (db->closing || !stmt || !cb || stmt->nparams < 0 || stmt->nparams > 65535 ||
        (stmt->nparams > 0 && !values) || db->queued.n + db->inflight.n + db->nrows >= IGW_DB_QUEUE_MAX)
        goto reject;
    size_t n = (size_t)stmt->nparams, data = 0;
    for (size_t i = 0; i < n; i++) {
        if (!values[i])
            continue;
        bool bin = formats && formats[i];
        if (bin && (!lengths || lengths[i] < 0))
            goto reject;
        data += bin ? (size_t)lengths[i] : strlen(values[i]) + 1;
    }
    /* One block: the request, then values, lengths, formats, bytes. */
    size_t size = sizeof(req) + n * sizeof(char *) + (lengths ? n * sizeof(int) : 0) +
                  (formats ? n * sizeof(int) : 0) + data;
    req *r = calloc(1, size);
    if (!r)
        goto reject;
    const char **v = (const char **)(r + 1);
    int *l = (int *)(v + n), *f = lengths ? l + n : l;
    char *bytes = (char *)(formats ? f + n : f);
    for (size_t i = 0; i < n; i++) {
        if (lengths)
            l[i] = lengths[i];
        if (formats)
            f[i] = formats[i];
        if (!values[i])
            continue;
        size_t len = formats && formats[i] ? (size_t)lengths[i] : strlen(values[i]) + 1;
        memcpy(bytes, values[i], len);
        v[i] = bytes;
        bytes += len;
    }
    r->stmt = stmt;
    r->cb = cb;
    r->arg = arg;
    r->queued_us = igw_clock_us();
    r->values = n ? v : NULL;
    r->lengths = lengths ? l : NULL;
    r->formats = formats ? f : NULL;
    fifo_push(&db->queued, r);
    gauges(db);
    arm_watch(db);
    if (db->state == ST_READY && !h2o_timeout_is_linked(&db->kick))
        h2o_timeout_link(db->loop, &db->t_zero, &db->kick); /* end of this loop turn: one batch */
    return 0;
reject:
    bump(&db->st.rejected, 1);
    return -1;
}

/* ---- group commit ---------------------------------------------------------------- */

static void arm_kick(igw_db *db)
{
    if (db->state == ST_READY && !h2o_timeout_is_linked(&db->kick))
        h2o_timeout_link(db->loop, &db->t_zero, &db->kick); /* end of this loop turn */
}

/* Hands each row of a detached list its outcome (row i of res, or err), in
 * order, and frees it. */
static void finish_rows(igw_db *db, brow *rows, const PGresult *res, const char *err)
{
    int i = 0;
    while (rows) {
        brow *next = rows->next;
        db->in_cb++;
        rows->cb(rows->arg, err ? NULL : res, i++, err);
        db->in_cb--;
        free(rows);
        rows = next;
    }
}

/* Puts a detached list back at the head of its queue, in order. */
static void requeue_rows(igw_db *db, bqueue *q, brow *rows, size_t n)
{
    brow *last = rows;
    while (last->next)
        last = last->next;
    last->next = q->head;
    if (!q->head)
        q->tail = last;
    q->head = rows;
    q->n += n;
    db->nrows += n;
}

static void on_batch(void *arg, const PGresult *res, const char *err)
{
    batch *b = arg;
    igw_db *db = b->db;
    bqueue *q = b->q;
    brow *rows = b->rows;
    size_t n = b->n;
    free(b);
    q->busy = false;
    if (res && (size_t)PQntuples(res) != n) {
        res = NULL;
        err = "batched statement answered a different number of rows";
    }
    bool value = !res && igw_db_value_error(err);
    bool race = !res && igw_db_lost_race(err);
    if (!db->closing && ((value && n > 1) || (race && rows->retries < IGW_DB_BATCH_RETRIES))) {
        for (brow *r = rows; r; r = r->next) {
            r->solo = r->solo || value;
            r->retries += race;
        }
        requeue_rows(db, q, rows, n);
    } else {
        finish_rows(db, rows, res, err);
    }
    if (q->n && !db->closing)
        arm_kick(db);
}

/* Appends one element of an array literal to the batch buffer; -1 when out
 * of memory. */
static int put(igw_db *db, size_t *len, const char *s, size_t n)
{
    if (*len + n + 1 > db->bcap) {
        size_t cap = db->bcap ? db->bcap : 4096;
        while (cap < *len + n + 1)
            cap *= 2;
        char *p = realloc(db->bbuf, cap);
        if (!p)
            return -1;
        db->bbuf = p;
        db->bcap = cap;
    }
    memcpy(db->bbuf + *len, s, n);
    *len += n;
    return 0;
}

size_t igw_db_text_array(char *out, size_t cap, const char *const *items, size_t n)
{
    size_t at = 0;
#define OUT(c) do { if (at + 1 >= cap) return 0; out[at++] = (c); } while (0)
    OUT('{');
    for (size_t i = 0; i < n; i++) {
        if (i)
            OUT(',');
        OUT('"');
        for (const char *p = items[i]; *p; p++) {
            if (*p == '"' || *p == '\\')
                OUT('\\');
            OUT(*p);
        }
        OUT('"');
    }
    OUT('}');
#undef OUT
    out[at] = '\0';
    return at;
}

static int put_elem(igw_db *db, size_t *len, const char *v)
{
    if (!v)
        return put(db, len, "NULL", 4);
    if (put(db, len, "\"", 1))
        return -1;
    for (const char *from = v, *p = v;; p++) {
        if (*p == '"' || *p == '\\' || !*p) {
            if (put(db, len, from, (size_t)(p - from)) || (*p && put(db, len, "\\", 1)))
                return -1;
            if (!*p)
                break;
            from = p;
        }
    }
    return put(db, len, "\"", 1);
}

/* Sends the next batch of q: its first rows up to the bounds (a solo row
 * alone). */
static void form_batch(igw_db *db, bqueue *q)
{
    batch *b = malloc(sizeof *b);
    if (!b) {
        arm_kick(db); /* try again next turn */
        return;
    }
    size_t n = 0, bytes = 0, max = q->head->solo ? 1 : IGW_DB_BATCH_ROWS;
    brow **tail = &q->head;
    while (*tail && n < max && !(n && ((*tail)->solo || bytes + (*tail)->bytes > IGW_DB_BATCH_BYTES))) {
        bytes += (*tail)->bytes;
        tail = &(*tail)->next;
        n++;
    }
    *b = (batch){.db = db, .q = q, .rows = q->head, .n = n};
    q->head = *tail;
    *tail = NULL;
    if (!q->head)
        q->tail = NULL;
    q->n -= n;
    db->nrows -= n;
    q->busy = true;

    /* A batch of one row: its twin, if it has one, takes the row's values
     * as they are (no array literals to build or parse, no unnest). */
    if (n == 1 && q->one) {
        if (igw_db_exec(db, q->one, b->rows->values, NULL, NULL, on_batch, b) != 0)
            on_batch(b, NULL, IGW_DB_NOT_SENT "database queue full");
        return;
    }
    /* The columns' array literals, one after the other, NUL-separated. */
    size_t np = (size_t)q->stmt->nparams, len = 0, start[IGW_DB_BATCH_COLS];
    int rc = 0;
    for (size_t c = 0; c < np && !rc; c++) {
        start[c] = len;
        rc = put(db, &len, "{", 1);
        for (brow *r = b->rows; r && !rc; r = r->next)
            rc = (r != b->rows && put(db, &len, ",", 1)) || put_elem(db, &len, r->values[c]);
        rc = rc || put(db, &len, "}", 2); /* with the NUL */
    }
    const char *values[IGW_DB_BATCH_COLS];
    for (size_t c = 0; c < np && !rc; c++)
        values[c] = db->bbuf + start[c];
    if (rc || igw_db_exec(db, q->stmt, values, NULL, NULL, on_batch, b) != 0)
        on_batch(b, NULL, rc ? IGW_DB_NOT_SENT "out of memory building a batch" : IGW_DB_NOT_SENT "database queue full");
}

static void form_batches(igw_db *db)
{
    for (unsigned i = 0; i < db->nbq && !db->closing; i++)
        if (db->bq[i].n && !db->bq[i].busy)
            form_batch(db, &db->bq[i]);
}

int igw_db_exec_row(igw_db *db, const igw_db_stmt *stmt, const igw_db_stmt *one, const char *const *values,
                    igw_db_row_cb cb, void *arg)
{
    if (db->closing || !stmt || !cb || stmt->nparams < 1 || stmt->nparams > IGW_DB_BATCH_COLS || !values ||
        (one && one->nparams != stmt->nparams) || db->queued.n + db->inflight.n + db->nrows >= IGW_DB_QUEUE_MAX)
        goto reject;
    bqueue *q = NULL;
    for (unsigned i = 0; i < db->nbq && !q; i++)
        if (db->bq[i].stmt == stmt)
            q = &db->bq[i];
    if (!q) {
        if (db->nbq == IGW_DB_BATCH_STMTS)
            goto reject;
        q = &db->bq[db->nbq++];
        *q = (bqueue){.stmt = stmt, .one = one};
    } else if (q->one != one) {
        goto reject; /* a statement has one twin (or none) */
    }
    size_t n = (size_t)stmt->nparams, data = 0;
    for (size_t i = 0; i < n; i++)
        data += values[i] ? strlen(values[i]) + 1 : 0;
    brow *r = calloc(1, sizeof *r + n * sizeof(char *) + data);
    if (!r)
        goto reject;
    r->values = (const char **)(r + 1);
    char *bytes = (char *)(r->values + n);
    for (size_t i = 0; i < n; i++) {
        if (!values[i])
            continue;
        size_t len = strlen(values[i]) + 1;
        memcpy(bytes, values[i], len);
        r->values[i] = bytes;
        bytes += len;
    }
    r->cb = cb;
    r->arg = arg;
    r->at_us = igw_clock_us();
    r->bytes = 2 * data + 8 * n; /* escaping at worst doubles it */
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
    q->n++;
    db->nrows++;
    arm_kick(db);
    arm_watch(db);
    return 0;
reject:
    bump(&db->st.rejected, 1);
    return -1;
}

bool igw_db_connected(const igw_db *db)
{
    return db->state == ST_READY;
}

const char *igw_db_last_error(const igw_db *db)
{
    return igw_conn_last_error(db->sup);
}

void igw_db_stats_get(const igw_db *db, igw_db_stats *out)
{
#define L(x) atomic_load_explicit(&db->st.x, memory_order_relaxed)
    memset(out, 0, sizeof *out);
    out->queries_ok = L(ok);
    out->queries_failed = L(failed);
    out->rejected = L(rejected);
    out->queued = L(queued);
    out->in_flight = L(inflight);
    igw_conn_stats_get(db->sup, &out->conn);
#undef L
}

void igw_db_destroy(igw_db *db)
{
    if (!db)
        return;
    if (db->in_cb) {
        igw_log(IGW_LOG_ERROR, NULL, "bug: igw_db_destroy called from an igw_db callback");
        abort();
    }
    db->closing = true;
    igw_conn_stop(db->sup);
    if (h2o_timeout_is_linked(&db->kick))
        h2o_timeout_unlink(&db->kick);
    if (h2o_timeout_is_linked(&db->watch))
        h2o_timeout_unlink(&db->watch);
    close_socket(db);
    if (db->conn)
        PQfinish(db->conn);
    db->conn = NULL;
    req *inflight = db->inflight.head, *queued = db->queued.head;
    db->inflight = db->queued = (fifo){0};
    fail_list(db, inflight, "shutting down");
    fail_list(db, queued, IGW_DB_NOT_SENT "shutting down");
    for (unsigned i = 0; i < db->nbq; i++) {
        brow *rows = db->bq[i].head;
        db->bq[i].head = db->bq[i].tail = NULL;
        db->bq[i].n = 0;
        finish_rows(db, rows, NULL, IGW_DB_NOT_SENT "shutting down");
    }
    db->nrows = 0;
    h2o_timeout_dispose(db->loop, &db->t_zero);
    h2o_timeout_dispose(db->loop, &db->t_watch);
    igw_conn_destroy(db->sup);
    free(db->prepared);
    free(db->bbuf);
    free(db->dsn);
    for (unsigned i = 0; i < db->nlistens; i++)
        free(db->listens[i].sql);
    free(db);
}

bool igw_db_value_error(const char *err)
{
    return err && (!strncmp(err, "22", 2) || !strncmp(err, "23", 2));
}

bool igw_db_true(const PGresult *res, int row, int col)
{
    return !PQgetisnull(res, row, col) && PQgetvalue(res, row, col)[0] == 't';
}

bool igw_db_lost_race(const char *err)
{
    return err && !strncmp(err, "40", 2);
}

bool igw_db_not_sent(const char *err)
{
    return err && strncmp(err, IGW_DB_NOT_SENT, strlen(IGW_DB_NOT_SENT)) == 0;
}

igw_err igw_db_error_class(const char *err, bool write)
{
    if (igw_db_not_sent(err))
        return IGW_ERR_UNAVAILABLE;
    if (igw_db_outcome_unknown(err))
        return write ? IGW_ERR_UNKNOWN_OUTCOME : IGW_ERR_UNAVAILABLE;
    return IGW_ERR_INTERNAL;
}

bool igw_db_outcome_unknown(const char *err)
{
    if (!err)
        return true;
    if (igw_db_not_sent(err))
        return false;
    for (int i = 0; i < 5; i++)
        if (!((err[i] >= '0' && err[i] <= '9') || (err[i] >= 'A' && err[i] <= 'Z')))
            return true;
    return err[5] != ' ';
}

int igw_db_listen(igw_db *db, const char *channel, void (*cb)(void *arg, const char *channel, const char *payload),
                  void *arg)
{
    size_t n = strlen(channel);
    if (n == 0 || n > 63 || !cb || db->nlistens == IGW_DB_LISTEN_MAX || db->state == ST_SETUP ||
        db->state == ST_READY)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!((channel[i] >= 'a' && channel[i] <= 'z') || channel[i] == '_'))
            return -1;
    for (unsigned i = 0; i < db->nlistens; i++)
        if (strcmp(db->listens[i].channel, channel) == 0)
            return -1;
    char *sql = malloc(n + 8);
    if (!sql)
        return -1;
    snprintf(sql, n + 8, "LISTEN %s", channel);
    db->listens[db->nlistens].sql = sql;
    memcpy(db->listens[db->nlistens].channel, channel, n + 1);
    db->listens[db->nlistens].cb = cb;
    db->listens[db->nlistens].arg = arg;
    db->nlistens++;
    return 0;
}
