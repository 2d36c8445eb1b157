/* decide.h - the stand-in conference runtime's decisions (standin.c) as
 * pure functions: each operation's steps, what a refusal word of call.lua
 * answers, what a failed dependency answers, the bounds of its arguments,
 * a call's Redis keys, a group's member array and a leave receipt's text.
 * No I/O: standin.c calls them, and tests/igwd/call_decide_test.c checks
 * them (and call.lua's words and bounds) without Redis or PostgreSQL. Any
 * thread. */
#ifndef IGW_CALL_DECIDE_H
#define IGW_CALL_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "call/call.h"

/* A script argument (a key "igw:{call:" + a callId + "}:meta", an id, a
 * number) is shorter than this; a run has at most IGW_CALL_ARGS_MAX after
 * the keys and before the callId. */
#define IGW_CALL_ARG_MAX 140
#define IGW_CALL_ARGS_MAX 12
_Static_assert(IGW_CALL_ARG_MAX > sizeof "igw:{call:}:meta" - 1 + IGW_CALL_ID_MAX, "a call's keys fit an argument");

/* The stand-in's operations (call.h's igw_call_ops, one each). */
typedef enum igw_call_op {
    IGW_CALL_OP_GROUP, IGW_CALL_OP_START, IGW_CALL_OP_JOIN, IGW_CALL_OP_HEARTBEAT, IGW_CALL_OP_HANGUP,
    IGW_CALL_OP_ROSTER, IGW_CALL_OP_READ, IGW_CALL_OP_SET, IGW_CALL_OP_LEAVE, IGW_CALL_OP_RECEIPT
} igw_call_op;
#define IGW_CALL_OPS (IGW_CALL_OP_RECEIPT + 1)

/* Where an operation is: peeking at the call (call.lua peek), checking
 * the caller's group in PostgreSQL, reserving a new call's place under the
 * bounds (call.lua reserve, on the registry's keys), acting (the script's
 * own run, or the group's statement). */
typedef enum igw_call_step {
    IGW_CALL_STEP_PEEK, IGW_CALL_STEP_GROUP, IGW_CALL_STEP_RESERVE, IGW_CALL_STEP_ACT
} igw_call_step;

/* The step after the group check: start reserves its place first. */
igw_call_step igw_call_after_group(igw_call_op op);

/* A refusal: the public class (igw_err), a reason safe to send and the
 * JSON pointer of the request field it is about ("" when none). Static
 * strings. */
typedef struct igw_call_refusal {
    int cls;
    const char *reason, *path;
} igw_call_refusal;

/* The operation changes the call or the group (its outcome is unknown
 * when the answer to its act is lost). */
bool igw_call_op_writes(igw_call_op op);

/* Its first step: join, roster and the audio record peek (the call's
 * group, for set the target's join instance), then check the group, then
 * act; start checks the group first (the call is new); the others act at
 * once (the script checks the caller is live). */
igw_call_step igw_call_first_step(igw_call_op op);

/* The user a peek reads: the target for the audio record, else the caller. */
int64_t igw_call_peek_user(igw_call_op op, int64_t user, int64_t target);

/* call.lua's refusal word w for operation op as the public answer: true,
 * or false for a word the runtime does not know (EXISTS: a callId taken,
 * BAD_OP, anything else), answered internal (the caller logs the word).
 * A target's words point at leave's own fields for leave (/participantId,
 * /expectedMemberEpoch), at /targetUserID otherwise. */
bool igw_call_refusal_of(const char *w, igw_call_op op, igw_call_refusal *r);

/* The peek's own refusal: a set whose target is not live (the script
 * checks it again when it acts). false, or true with *r. */
bool igw_call_peek_refuses(igw_call_op op, bool target_live, igw_call_refusal *r);

/* The refusal of a step's check outside the script: the group check
 * (the caller is no member of the call's group: permission) and a new
 * group's statement (a member is no active user of the enterprise:
 * parameter at /members; members_ok but nothing made: the creator's
 * groups are at im_max_groups_per_user, capacity). false for a step
 * without such a check. */
bool igw_call_check_refusal(igw_call_op op, igw_call_step step, bool members_ok, igw_call_refusal *r);

/* A dependency (Redis, PostgreSQL) failed at op's step: the public class
 * only (the cause is logged). sent: the request went out; a write whose
 * act was sent may have happened (unknown outcome, read before
 * retrying), anything else is unavailable. */
void igw_call_dep_refusal(igw_call_op op, igw_call_step step, bool sent, igw_call_refusal *r);

/* The ids an operation is given fit the runtime (NULL: not given): a
 * callId of at most IGW_CALL_ID_MAX bytes, a groupId of at most
 * IGW_CALL_GROUP_ID_MAX, a receipt key shorter than IGW_CALL_ARG_MAX. */
bool igw_call_ids_fit(const char *call_id, const char *group_id, const char *receipt_key);

/* A call's four Redis keys (call.lua KEYS[1..4]), sharing the hash tag
 * {call:<callId>} so they sit in one cluster slot. */
typedef enum igw_call_key_kind { IGW_CALL_KEY_META, IGW_CALL_KEY_LIVE, IGW_CALL_KEY_MEM, IGW_CALL_KEY_RCPT } igw_call_key_kind;
#define IGW_CALL_KEYS 4

/* Writes key k of call_id (at most IGW_CALL_ID_MAX bytes) into out
 * (IGW_CALL_ARG_MAX bytes). */
void igw_call_key(char out[IGW_CALL_ARG_MAX], const char *call_id, igw_call_key_kind k);

/* The bounds' registry (call.lua reserve, lease, release): the live calls
 * of a group (its groupId) or those a user started (its decimal id), both
 * under the hash tag {im}. */
typedef enum igw_call_registry_kind { IGW_CALL_REG_GROUP, IGW_CALL_REG_USER } igw_call_registry_kind;
#define IGW_CALL_REG_KEYS 2
void igw_call_registry_key(char out[IGW_CALL_ARG_MAX], igw_call_registry_kind k, const char *id);

/* Bytes igw_call_members_literal may write for n members at most. */
#define IGW_CALL_LITERAL_CAP(n) (((n) + 1) * 22 + 3)

/* A new group's members as a PostgreSQL bigint[] literal: the creator and
 * members[0..n), ascending, each once (its cardinality is the number of
 * distinct users the statement must find active). The length written
 * (NUL-terminated), or 0 when n > IGW_CALL_MEMBERS_MAX or cap is below
 * IGW_CALL_LITERAL_CAP(n). */
size_t igw_call_members_literal(int64_t creator, const int64_t *members, size_t n, char *out, size_t cap);

/* A leave receipt "<memberEpoch> <ended 0|1> <uid,uid,...>" (call.lua):
 * 0 with the epoch (>= 1), ended, and the remaining members ascending in
 * rest[0..*n) (at most cap; the list ends at the first item that is no
 * number), or -1 when it is unreadable. */
int igw_call_receipt_parse(const char *text, int64_t *epoch, bool *ended, int64_t *rest, size_t cap, size_t *n);

#endif
