/* ledger.h - the acceptance of commands: persistent idempotency by
 * (enterprise, endpoint, msgToken) with the SHA-256 of the canonical
 * command, and the durable rows of a first acceptance.
 *
 * Two batched statements (igw_db_exec_row: the commands of a worker that
 * arrive together share one execution and one commit):
 *   read   the endpoint's liveness, the fingerprint stored under the key,
 *          the caller's rights on the target and the product's model (its
 *          text only when its version is not the one the caller has);
 *   write  for a command the model accepted: checks endpoint, idempotency,
 *          rights and the model's version again and inserts the commands and
 *          device_commands rows in the same statement, so its answer is exact
 *          even if something changed since the read (or there was no read:
 *          the caller's cached model may stand in for it, the version check
 *          makes that safe).
 * The write's checks come in the read's order (endpoint, idempotency,
 * rights, then the version), so a caller can give every answer of the write
 * as the read would have. Only device commands are recorded by the write
 * (a device_commands row each).
 *
 * All calls run on the worker that owns `db`; callbacks come on it, never
 * from inside the call that queued them. */
#ifndef IGW_LEDGER_H
#define IGW_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "core/db.h"

#define IGW_LEDGER_VERSION_MAX 47 /* a model version's bytes (MODEL_VERSION in ledger.c is far shorter) */

/* A command's fingerprint: SHA-256 of its canonical form. */
typedef struct igw_ledger_fp {
    unsigned char md[32];
    char hex[65]; /* the same, as SQL compares it */
} igw_ledger_fp;

/* The canonical form of k (its encoder's bytes: the same whatever order its
 * keys came in) into *canon (malloc'd, NUL-terminated; the caller frees)
 * and its fingerprint. 0, or -1 when out of memory (*canon NULL). */
int igw_ledger_fingerprint(const igw_Command *k, char **canon, igw_ledger_fp *fp);

/* One command as the ledger keys, checks and records it. Strings are
 * NUL-terminated and copied by the calls below; decimal ids as text. */
typedef struct igw_ledger_cmd {
    int64_t enterprise_id, user_id;
    const char *enterprise, *user;           /* the same, decimal */
    const char *endpoint, *msg_token;        /* with the enterprise: the key */
    const char *method, *session_id;         /* wire name; session NULL: none */
    const igw_ledger_fp *fp;
    const char *canon;                       /* the canonical command */
    const char *product_id, *device_name;    /* the target; NULL: none */
    const char *device_token, *deadline;     /* write: the downlink's msgToken, its deadline (ms) */
    const char *now;                         /* wall clock, ms */
    const char *known;   /* read: the model version the caller has parsed; NULL: none */
    const char *version; /* write: the model version the command was checked against */
    int64_t window_ms;   /* repeat: a replay this long after the acceptance is refused (0: never) */
    /* write, a message (method.h; delivery_id NULL: none): its row, written
     * with the acceptance when file_id is the caller's upload and
     * delivery_id not the caller's yet; expires_at decimal ms,
     * kept_downlink the published payload (JSON). */
    const char *delivery_id, *file_id, *expires_at, *kept_downlink;
} igw_ledger_cmd;

/* The read's answer. `ok` false: it failed (err says why), nothing else holds. */
typedef struct igw_ledger_read_row {
    bool ok;
    const char *err;
    bool endpoint_live;   /* the caller's own endpoint, not expired */
    const char *prior_fp; /* the fingerprint stored under the key (hex), or NULL */
    bool rights;          /* the caller owns the target or has a grant, within its enterprise; an
                           * unknown device looks the same */
    const char *model_version;      /* rights only: the product row's version */
    const char *model;              /* its model's text, or NULL when that version is `known` */
    size_t model_len;
} igw_ledger_read_row;
typedef void (*igw_ledger_read_cb)(void *arg, const igw_ledger_read_row *r);

/* Queues the read of c. 0, or -1 (busy: the queue is full; cb is not called). */
int igw_ledger_read(igw_db *db, const igw_ledger_cmd *c, igw_ledger_read_cb cb, void *arg);

typedef enum igw_ledger_status {
    IGW_LEDGER_ANSWERED, /* the statement answered: the fields of the row hold */
    IGW_LEDGER_NOT_SENT, /* it never reached the server: nothing written, the client may simply retry */
    IGW_LEDGER_UNKNOWN,  /* the connection was lost after sending: it may have committed; the client
                          * retries with the same msgToken and learns the outcome */
    IGW_LEDGER_FAILED,   /* the server refused it: nothing written */
} igw_ledger_status;

/* The write's answer: of endpoint live, no prior fingerprint, rights and
 * model current, the first that fails says why nothing was inserted; all
 * passing and `accepted` false: a twin in another transaction won, not yet
 * visible to this snapshot (write again). A later row of the same key in
 * one batch sees the first one's fingerprint as `prior_fp`. */
typedef struct igw_ledger_write_row {
    igw_ledger_status status;
    const char *err; /* status other than ANSWERED */
    bool endpoint_live, rights, accepted, model_current;
    bool content_ok; /* no message, or its file_id is an upload of the caller */
    bool key_taken;  /* a message whose delivery_id the caller has used before */
    bool within_endpoint; /* no message, or its expires_at no later than the endpoint's expiry */
    const char *prior_fp;
} igw_ledger_write_row;
typedef void (*igw_ledger_write_cb)(void *arg, const igw_ledger_write_row *r);

/* Queues the write of c (product_id, device_name, device_token, deadline
 * and version set). 0, or -1 (busy; cb is not called). */
int igw_ledger_write(igw_db *db, const igw_ledger_cmd *c, igw_ledger_write_cb cb, void *arg);

/* The same key again, with the fingerprint `stored_fp` (hex): */
typedef enum igw_ledger_again {
    IGW_LEDGER_REPLAY,   /* the same command: its result is delivered again per the outbox's rules */
    IGW_LEDGER_CONFLICT, /* a different command under a used msgToken */
} igw_ledger_again;

/* Called once a replay was handed to the outbox (spec replay rules 1 and
 * 2); err non-NULL when that failed (the acceptance stands: the result
 * comes as an event, the same delivery, a new one after an ack, or none
 * once expired); window_passed: refused, the command's window_ms passed
 * (replay rule 1: nothing redelivered). */
typedef void (*igw_ledger_replay_cb)(void *arg, const char *err, bool window_passed);

/* CONFLICT (nothing started, cb not called) when stored_fp is not c's;
 * else REPLAY and the replay is queued (cb called once), or, cb not
 * called, -1 (busy: the queue is full) or -2 (out of memory). */
int igw_ledger_repeat(igw_db *db, const igw_ledger_cmd *c, const char *stored_fp, igw_ledger_replay_cb cb,
                      void *arg);

#endif
