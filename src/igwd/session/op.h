/* op.h - one /commands command on the engine's loop, from its arrival
 * (engine.c's igw_engine_command_submit) to its answer: the session it
 * names looked up, the method's handler reached through the schema's table
 * (generated/igwd/methods.h: `session` handlers take a live_op), the
 * acceptance written, the answer sent back once. On the engine's loop. */
#ifndef IGW_SESSION_OP_H
#define IGW_SESSION_OP_H

#include <libpq-fe.h>

#include "igwd/methods.h"
#include "session/decide.h"
#include "session/live.h"

/* What an open writes with its session row beyond the common columns: the
 * purpose's (its admit hook fills them; "" is NULL). */
typedef struct live_open_cols {
    char call_id[IGW_CALL_ID_MAX + 1];
    char member_epoch[24];
    char recording_id[LIVE_ID_MAX + 1];
    char recording_version[24];
} live_open_cols;

typedef struct igw_CommandMethod_op live_op;

/* Runs once the acceptance committed, with the session (still live). */
typedef void (*live_op_then)(live_op *o, live_session *s);

struct igw_CommandMethod_op {
    igw_engine *e;
    void (*answer)(void *ctx, const igw_engine_cmd_answer *a);
    void *ctx;
    const igw_engine_cmd *c; /* valid until answered */
    const igw_Command *k;    /* c->command, likewise */
    igw_CommandMethod method;
    int64_t enterprise_id, user_id;
    char ent[24], user[24];
    char endpoint[LIVE_ID_MAX + 1];
    char token[LIVE_TOKEN_MAX + 1];
    char sid[LIVE_ID_MAX + 1]; /* the session it names; open, subscribe: the new one */
    /* A new session (open, subscribe): its purpose, guards, camera and
     * what the purpose hands it */
    igw_Purpose purpose;
    const igw_purpose *def;
    uint32_t guards;
    char pid[LIVE_ID_MAX + 1], dn[LIVE_ID_MAX + 1], cam[LIVE_ID_MAX + 1];
    live_open_cols cols;
    void *pdata, *ldata;      /* owned until handed to the session and its leg */
    void (*pdata_free)(void *pdata);
    bool online;              /* open: the read's facts kept for after the purpose's admit */
    char *capability;         /* open: the camera's latest capability report (owned), or NULL */
    char parent[LIVE_ID_MAX + 1];   /* subscribe: the session it was asked on */
    char only_track[LIVE_ID_MAX + 1]; /* subscribe: the viewer's one track */
    char playback_token[32];        /* subscribe: the viewer's own */
    bool seated;              /* open, subscribe: holds a seat (live_op_seat) until freed */
    live_op *seat_prev, *seat_next;
    /* The method's own, kept past the answer for its effect */
    char *offer;               /* mediaOffer: the SDP (owned) */
    int64_t arg1, arg2;        /* a method's numbers (what each handler says) */
    int iarg;                  /* a method's enum value */
    char text[LIVE_ID_MAX + 1]; /* a method's id or name */
    live_op_then then;
};

/* The command of a session method, on the loop: the session it names is
 * found (or the row says why not), then its handler in the schema's table
 * runs; ans(ctx, answer) runs exactly once. */
void live_command(igw_engine *e, const igw_engine_cmd *c, void (*ans)(void *ctx, const igw_engine_cmd_answer *a),
                  void *ctx);

/* The answer (prior: the fingerprint of an earlier acceptance of the key,
 * or NULL); the op lives on (its effect may follow). */
void live_op_answer(live_op *o, int cls, const char *reason, const char *path, const char *prior);
/* Answers a refusal and frees the op. */
void live_op_refuse(live_op *o, int cls, const char *reason, const char *path);
void live_op_refuse_with(live_op *o, const live_refusal *r);
/* "the session has ended", with its row's reason (answeredElsewhere,
 * nodeLost...) when it has one, written into buf (n bytes); returns buf. */
const char *live_op_ended_why(char *buf, size_t n, const char *reason);
/* Refuses by a statement's failure (its class: busy, unknown outcome, internal). */
void live_op_refuse_db(live_op *o, const char *err, bool write);
/* A statement's one result row, or the op refused by its failure (false:
 * answered and freed). */
bool live_op_row(live_op *o, const PGresult *res, const char *err, bool write);
void live_op_free(live_op *o);

/* A new session's seat, taken before anything asynchronous so that the
 * caps (max_sessions, per enterprise, per user) are exact however many
 * opens race: the live sessions and the seats held count. true: seated
 * (given back by live_op_free; the session made meanwhile counts itself);
 * false: refused (capacity, naming the cap) and freed. */
bool live_op_seat(live_op *o);

/* The mediaRevision of a command against its session's: false when stale
 * (refused). */
bool live_op_revision(live_op *o, const live_session *s, int64_t revision);

/* Writes the acceptance of a command on its session; once committed the
 * op is answered and then(o, s) runs with the session (a result of
 * conflict goes out instead when it ended meanwhile); the op is freed
 * after. A twin's earlier acceptance is answered as the replay. */
void live_op_accept(live_op *o, live_op_then then);

/* o (not accepted yet) belongs to another live node at owner_epoch: the
 * session it names is held there, or (an open) the camera's shared leg is.
 * Its acceptance, that node's forwards row and wake-up are written in one
 * statement; o is answered (accepted, a replay, or refused) and freed. The
 * owner's result follows as an event (forward.h). */
void live_op_forward(live_op *o, const char *owner_node, int64_t owner_epoch);

#endif
