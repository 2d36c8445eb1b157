/* call.h - the IM conference runtime: persistent groups, live group calls,
 * their members' join instances (memberEpoch), publish permissions
 * (publishAllowed + audioRevision), heartbeats and leave receipts
 * (docs/talk.md).
 *
 * The IM system is outside the spec; igw ships a stand-in behind this
 * interface (standin.c: groups in PostgreSQL, live calls in Redis, every
 * check-and-write one run of call.lua). Another back end implements
 * igw_call_ops and is wired in its place by igw_call_create's caller.
 *
 * One igw_call per loop (an HTTP worker, the session engine): it borrows
 * that loop's database and Redis connections. Every operation is
 * asynchronous: 0 and cb(arg, result) exactly once later on the loop's
 * thread, or -1 (out of memory, queue full, shutting down) and cb never
 * runs. Identity (enterprise, user) always comes from the caller's login,
 * never from a body. Refusals carry a public class and a reason safe to
 * send; Redis and database causes are logged, never returned. */
#ifndef IGW_CALL_H
#define IGW_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/db.h"
#include "core/redis.h"

/* The schema's bounds under the runtime's names (a back end may keep less,
 * never more): a callId's bytes (CallId), a groupId's (GroupData.groupId, an
 * Ident), the persistent members of a group (the creator and GroupCreate's
 * others) and the live members of a call (RosterData; call.lua LIVE_MAX). */
#define IGW_CALL_ID_MAX IGW_CallId_MAX
#define IGW_CALL_GROUP_ID_MAX IGW_Ident_MAX
#define IGW_CALL_MEMBERS_MAX IGW_RosterData_members_MAX_ITEMS
_Static_assert(IGW_CALL_MEMBERS_MAX == IGW_GroupCreate_members_MAX_ITEMS + 1 &&
                   IGW_CALL_MEMBERS_MAX == IGW_ResultData_remaining_MAX_ITEMS,
               "a group's members, a call's live members and a leave's remaining: one bound");
#define IGW_CALL_RECEIPTS_MAX 256 /* leave receipts per call (call.lua RCPT_MAX) */
#define IGW_CALL_GRANT_MS 2000   /* an audio-access record's life at most */

/* The Redis channel the stand-in publishes a notice on for every change of
 * a live call: {"callId": ..., "op": "join"|"leave"|"lapse"|"audio"|"end",
 * "userId": ...}. A notice says only which call to read again. */
#define IGW_CALL_CHANNEL "igw:call"

typedef struct igw_call igw_call;

/* One live member (roster). */
typedef struct igw_call_member {
    int64_t user_id, epoch, revision, deadline_ms;
    bool allowed;
} igw_call_member;

/* What an operation answered; valid during the callback. cls is
 * IGW_ERR_OK (api.h igw_err) or the refusal; reason/path then say why. */
typedef struct igw_call_result {
    int cls;
    const char *reason, *path;
    const char *call_id, *group_id;       /* start / group create: the new id */
    int64_t initiator;                    /* roster, peek */
    int64_t epoch, revision, deadline_ms; /* join, heartbeat: the caller; audio: the target */
    int64_t expires_ms;                   /* audio: the record's expiresAt */
    bool allowed;                         /* audio: publishAllowed */
    bool fresh;                           /* join: a new join instance (not a repeat) */
    bool ended;                           /* leave, hangup: the head-count rule ended the call */
    bool replay;                          /* leave: the receipt of an earlier run */
    const int64_t *remaining;             /* leave: the remaining members, ascending */
    size_t nremaining;
    const igw_call_member *members;       /* roster */
    size_t nmembers;
    size_t receipts;                      /* roster: leave receipts the call holds */
} igw_call_result;

typedef void (*igw_call_cb)(void *arg, const igw_call_result *r);

/* The operations a back end provides (each as described below). */
typedef struct igw_call_ops {
    int (*group_create)(igw_call *c, int64_t ent, int64_t creator, const char *name, const int64_t *members,
                        size_t n, igw_call_cb cb, void *arg);
    int (*start)(igw_call *c, int64_t ent, int64_t user, const char *group_id, igw_call_cb cb, void *arg);
    int (*join)(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb, void *arg);
    int (*heartbeat)(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb, void *arg);
    int (*hangup)(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb, void *arg);
    int (*roster)(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb, void *arg);
    int (*audio_read)(igw_call *c, int64_t ent, int64_t user, const char *call_id, int64_t target, igw_call_cb cb,
                      void *arg);
    int (*audio_set)(igw_call *c, int64_t ent, int64_t user, const char *call_id, int64_t target, bool allowed,
                     int64_t expected_revision, igw_call_cb cb, void *arg);
    int (*leave)(igw_call *c, int64_t ent, int64_t actor, const char *call_id, int64_t target,
                 int64_t expected_epoch, const char *receipt_key, igw_call_cb cb, void *arg);
    int (*receipt)(igw_call *c, int64_t ent, const char *call_id, const char *receipt_key, igw_call_cb cb,
                   void *arg);
    void (*destroy)(igw_call *c);
} igw_call_ops;

struct igw_call {
    const igw_call_ops *ops;
};

/* The stand-in's settings: the life a join or heartbeat gives a
 * membership, and its bounds (each at least 1): groups a user may create,
 * live calls a user may have started, live calls of one group. */
typedef struct igw_call_standin_config {
    unsigned heartbeat_ms;
    unsigned max_groups_per_user, max_calls_per_user, max_calls_per_group;
} igw_call_standin_config;

/* The stand-in (standin.c) on one loop: db for the persistent groups, r for
 * the live calls (both borrowed, outliving it), cfg copied. NULL when out
 * of memory. */
igw_call *igw_call_standin_create(igw_db *db, igw_redis *r, const igw_call_standin_config *cfg);

/* Creates a persistent group of `members` (user ids of the enterprise, the
 * creator included or added) owned by `creator`. */
static inline int igw_call_group_create(igw_call *c, int64_t ent, int64_t creator, const char *name,
                                        const int64_t *members, size_t n, igw_call_cb cb, void *arg)
{
    return c->ops->group_create(c, ent, creator, name, members, n, cb, arg);
}
/* Starts a live call of a group the user belongs to: the user is its
 * initiator and its first live member (memberEpoch 1). */
static inline int igw_call_start(igw_call *c, int64_t ent, int64_t user, const char *group_id, igw_call_cb cb,
                                 void *arg)
{
    return c->ops->start(c, ent, user, group_id, cb, arg);
}
/* Joins a live call of a group the user (still) belongs to; a new join
 * instance raises memberEpoch, a repeat while live only renews the
 * heartbeat (fresh false). */
static inline int igw_call_join(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb,
                                void *arg)
{
    return c->ops->join(c, ent, user, call_id, cb, arg);
}
static inline int igw_call_heartbeat(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb,
                                     void *arg)
{
    return c->ops->heartbeat(c, ent, user, call_id, cb, arg);
}
/* The IM's own exit of the caller (no receipt); the head-count rule applies. */
static inline int igw_call_hangup(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb,
                                  void *arg)
{
    return c->ops->hangup(c, ent, user, call_id, cb, arg);
}
/* The live members, for a member of the call's group. */
static inline int igw_call_roster(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb,
                                  void *arg)
{
    return c->ops->roster(c, ent, user, call_id, cb, arg);
}
/* /talk/audio-access read and set (the spec's rules; set is a
 * compare-and-set on the target's audioRevision and its join instance read
 * first). */
static inline int igw_call_audio_read(igw_call *c, int64_t ent, int64_t user, const char *call_id, int64_t target,
                                      igw_call_cb cb, void *arg)
{
    return c->ops->audio_read(c, ent, user, call_id, target, cb, arg);
}
static inline int igw_call_audio_set(igw_call *c, int64_t ent, int64_t user, const char *call_id, int64_t target,
                                     bool allowed, int64_t expected_revision, igw_call_cb cb, void *arg)
{
    return c->ops->audio_set(c, ent, user, call_id, target, allowed, expected_revision, cb, arg);
}
/* interaction.leave: self exit (target == actor) or the initiator's
 * removal of a member, checked against the target's expected join
 * instance, with a receipt under receipt_key (at most
 * IGW_CALL_RECEIPTS_MAX per call, kept at least 10 minutes). A key that
 * already has a receipt answers it (replay true) and changes nothing. */
static inline int igw_call_leave(igw_call *c, int64_t ent, int64_t actor, const char *call_id, int64_t target,
                                 int64_t expected_epoch, const char *receipt_key, igw_call_cb cb, void *arg)
{
    return c->ops->leave(c, ent, actor, call_id, target, expected_epoch, receipt_key, cb, arg);
}
/* The receipt of an earlier leave (replay true), or not_found when none:
 * nothing is run again. */
static inline int igw_call_receipt(igw_call *c, int64_t ent, const char *call_id, const char *receipt_key,
                                   igw_call_cb cb, void *arg)
{
    return c->ops->receipt(c, ent, call_id, receipt_key, cb, arg);
}
/* Frees c; callbacks of operations still running never run. NULL ok. */
static inline void igw_call_destroy(igw_call *c)
{
    if (c)
        c->ops->destroy(c);
}

#endif
