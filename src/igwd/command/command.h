/* command.h - /commands' domain: one command from its decoded request to
 * its acceptance.
 *
 * In order (spec): endpoint authentication, the method known and carried
 * out here (the schema's method table, generated/igwd/methods.c: a method
 * without a handler answers not_implemented), persistent idempotency
 * (ledger.h: replay or conflict), then for a first acceptance what the
 * method's traits ask: for a `device` command the caller's rights on the
 * target and the product's thing model, checked by the method's handler
 * (device.h, given the call of method.h); then the acceptance commits, and a device command's downlink
 * is published after it. Every accepted device command gets exactly one
 * interaction.result, from the device's reply or the deadline (results.h).
 * A `session` command goes to the session engine (session/engine.h) once
 * the endpoint is known live and its key new, or at once when the method
 * `reads` (the engine's one read has the endpoint, an earlier acceptance
 * and the rights): the engine runs the method's session handler from the
 * same table, writes its acceptance with the session's rows, and its
 * result follows as an event.
 *
 * Fast path: each worker keeps parsed models by product with the product
 * row's version (modelcache.h). When the cached model accepts the command,
 * only the ledger's write is sent, with that version; the write refuses
 * when the product's row is no longer that version, and the command takes
 * the slow path (the read, then the write). A command the cached model
 * rejects takes the slow path too, whose earlier checks (replay, conflict,
 * rights) come first. The read ships the model only when its version is not
 * the one the worker has.
 *
 * Everything runs on the worker that owns env->db. */
#ifndef IGW_COMMAND_H
#define IGW_COMMAND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "arena.h"
#include "command/modelcache.h"
#include "command/pending.h"
#include "core/db.h"
#include "core/mqtt.h"
#include "json.h"
#include "session/engine.h"

/* What a worker lends the domain: not owned, valid while the worker runs. */
typedef struct igw_command_env {
    igw_db *db;                /* the worker's request connection */
    igw_modelcache *models;    /* the worker's parsed thing models */
    igw_pending *pending;      /* the process's published device commands (NULL: replies are looked up) */
    _Atomic(igw_mqtt *) *mqtt; /* the broker's client, NULL inside while there is none */
    unsigned timeout_ms;       /* a device command's deadline from its acceptance */
    unsigned retention_ms;     /* a `retained` method's replay window (doorbell_retention_ms) */
    igw_engine *const *engine; /* session commands: the node's engine, read at each use (NULL inside: none) */
    igw_engine_back back;      /* how its answers come back to this worker */
    const struct igw_command_site *site; /* lent to the methods' handlers (method.h) */
} igw_command_env;

/* One /commands request. */
typedef struct igw_command_in {
    const igw_CommandsRequest *rq; /* decoded; must stay valid until done is called */
    int64_t enterprise_id, user_id; /* the authenticated caller */
    const char *request_id;         /* for logs (copied) */
} igw_command_in;

/* The answer. Strings are valid during the done call only. */
typedef struct igw_command_result {
    int cls;            /* igw_err: IGW_ERR_OK when the command is accepted (durably) */
    bool replay;        /* accepted: this key was accepted before with this same command */
    igw_str msg_token;  /* accepted: the command's */
    const char *reason; /* errors: specific, safe to send */
    const char *path;   /* errors: JSON Pointer into the request, or "" */
} igw_command_result;

typedef void (*igw_command_done)(void *arg, const igw_command_result *r);

/* Carries out one command; done is called exactly once, possibly before
 * this returns. */
void igw_command_submit(const igw_command_env *env, const igw_command_in *in, igw_command_done done, void *arg);

#endif
