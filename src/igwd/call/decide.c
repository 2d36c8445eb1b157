/* decide.c - see decide.h. */
#include "call/decide.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paths.h"

bool igw_call_op_writes(igw_call_op op)
{
    return op == IGW_CALL_OP_START || op == IGW_CALL_OP_JOIN || op == IGW_CALL_OP_HANGUP || op == IGW_CALL_OP_SET ||
           op == IGW_CALL_OP_LEAVE || op == IGW_CALL_OP_GROUP;
}

igw_call_step igw_call_first_step(igw_call_op op)
{
    switch (op) {
    case IGW_CALL_OP_JOIN:
    case IGW_CALL_OP_ROSTER:
    case IGW_CALL_OP_READ:
    case IGW_CALL_OP_SET:
        return IGW_CALL_STEP_PEEK;
    case IGW_CALL_OP_START:
        return IGW_CALL_STEP_GROUP;
    default:
        return IGW_CALL_STEP_ACT;
    }
}

igw_call_step igw_call_after_group(igw_call_op op)
{
    return op == IGW_CALL_OP_START ? IGW_CALL_STEP_RESERVE : IGW_CALL_STEP_ACT;
}

int64_t igw_call_peek_user(igw_call_op op, int64_t user, int64_t target)
{
    return op == IGW_CALL_OP_SET || op == IGW_CALL_OP_READ ? target : user;
}

static bool set(igw_call_refusal *r, int cls, const char *reason, const char *path)
{
    *r = (igw_call_refusal){cls, reason, path};
    return true;
}

bool igw_call_refusal_of(const char *w, igw_call_op op, igw_call_refusal *r)
{
    bool leave = op == IGW_CALL_OP_LEAVE;
    /* leave's are the runtime's own words: no route's body has them */
    const char *target = leave ? "/participantId" : IGW_PATH_targetUserID;
    if (!strcmp(w, "NO_CALL"))
        return set(r, IGW_ERR_NOT_FOUND, "no such live call", IGW_PATH_callId);
    if (!strcmp(w, "ENDED"))
        return set(r, IGW_ERR_NOT_FOUND, "the call has ended", IGW_PATH_callId);
    if (!strcmp(w, "NOT_LIVE"))
        return set(r, IGW_ERR_PERMISSION, "you are not a live member of the call", "");
    if (!strcmp(w, "TARGET_NOT_LIVE"))
        return set(r, IGW_ERR_NOT_FOUND, "the member is not live in the call", target);
    if (!strcmp(w, "NOT_INITIATOR"))
        return set(r, IGW_ERR_PERMISSION, "only the call's original initiator may do this", "");
    if (!strcmp(w, "EPOCH"))
        return set(r, IGW_ERR_PARAMETER,
                   leave ? "stale expectedMemberEpoch: the member re-entered the call"
                         : "the member re-entered the call since it was read; read again",
                   leave ? "/expectedMemberEpoch" : target);
    if (!strcmp(w, "REVISION"))
        return set(r, IGW_ERR_PARAMETER, "stale expectedRevision; read the record again", IGW_PATH_expectedRevision);
    if (!strcmp(w, "FULL"))
        return set(r, IGW_ERR_CAPACITY, "the call's leave receipts are full", "");
    if (!strcmp(w, "CALL_FULL"))
        return set(r, IGW_ERR_CAPACITY, "the call has as many live members as it may (256)", "");
    if (!strcmp(w, "USER_CALLS"))
        return set(r, IGW_ERR_CAPACITY, "you have started as many live calls as you may (im_max_calls_per_user)", "");
    if (!strcmp(w, "GROUP_CALLS"))
        return set(r, IGW_ERR_CAPACITY, "the group has as many live calls as it may (im_max_calls_per_group)",
                   IGW_PATH_groupId);
    if (!strcmp(w, "NONE"))
        return set(r, IGW_ERR_NOT_FOUND, "no receipt", "");
    set(r, IGW_ERR_INTERNAL, "the conference runtime failed", "");
    return false;
}

bool igw_call_peek_refuses(igw_call_op op, bool target_live, igw_call_refusal *r)
{
    return op == IGW_CALL_OP_SET && !target_live && igw_call_refusal_of("TARGET_NOT_LIVE", op, r);
}

bool igw_call_check_refusal(igw_call_op op, igw_call_step step, bool members_ok, igw_call_refusal *r)
{
    if (step == IGW_CALL_STEP_GROUP)
        return set(r, IGW_ERR_PERMISSION, "you are not a member of the call's group", "");
    if (op == IGW_CALL_OP_GROUP && step == IGW_CALL_STEP_ACT && members_ok)
        return set(r, IGW_ERR_CAPACITY, "you have created as many groups as you may (im_max_groups_per_user)", "");
    if (op == IGW_CALL_OP_GROUP && step == IGW_CALL_STEP_ACT)
        return set(r, IGW_ERR_PARAMETER, "every member must be an active user of your enterprise", IGW_PATH_members);
    return false;
}

void igw_call_dep_refusal(igw_call_op op, igw_call_step step, bool sent, igw_call_refusal *r)
{
    if (sent && igw_call_op_writes(op) && step == IGW_CALL_STEP_ACT)
        set(r, IGW_ERR_UNKNOWN_OUTCOME, "the conference runtime did not answer; read before retrying", "");
    else
        set(r, IGW_ERR_UNAVAILABLE, "the conference runtime is unavailable; try again later", "");
}

bool igw_call_ids_fit(const char *call_id, const char *group_id, const char *receipt_key)
{
    return (!call_id || strlen(call_id) <= IGW_CALL_ID_MAX) && (!group_id || strlen(group_id) <= IGW_CALL_GROUP_ID_MAX) &&
           (!receipt_key || strlen(receipt_key) < IGW_CALL_ARG_MAX);
}

void igw_call_key(char out[IGW_CALL_ARG_MAX], const char *call_id, igw_call_key_kind k)
{
    static const char *const suffix[IGW_CALL_KEYS] = {"meta", "live", "mem", "rcpt"};
    snprintf(out, IGW_CALL_ARG_MAX, "igw:{call:%s}:%s", call_id, suffix[k]);
}

void igw_call_registry_key(char out[IGW_CALL_ARG_MAX], igw_call_registry_kind k, const char *id)
{
    snprintf(out, IGW_CALL_ARG_MAX, "igw:{im}:calls:%s:%s", k == IGW_CALL_REG_GROUP ? "g" : "u", id);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

size_t igw_call_members_literal(int64_t creator, const int64_t *members, size_t n, char *out, size_t cap)
{
    if (n > IGW_CALL_MEMBERS_MAX || cap < IGW_CALL_LITERAL_CAP(n))
        return 0;
    int64_t ids[IGW_CALL_MEMBERS_MAX + 1];
    size_t k = 0;
    ids[k++] = creator;
    for (size_t i = 0; i < n; i++)
        ids[k++] = members[i];
    qsort(ids, k, sizeof ids[0], cmp_i64);
    size_t len = 0;
    out[len++] = '{';
    for (size_t i = 0; i < k; i++) {
        if (i && ids[i] == ids[i - 1])
            continue;
        len += (size_t)sprintf(out + len, "%s%" PRId64, len > 1 ? "," : "", ids[i]);
    }
    out[len++] = '}';
    out[len] = '\0';
    return len;
}

int igw_call_receipt_parse(const char *text, int64_t *epoch, bool *ended, int64_t *rest, size_t cap, size_t *n)
{
    long long e = 0;
    int end = 0, used = 0;
    if (sscanf(text, "%lld %d %n", &e, &end, &used) < 2 || e <= 0)
        return -1;
    *n = 0;
    for (const char *p = text + used; *p && *n < cap;) {
        char *stop;
        long long v = strtoll(p, &stop, 10);
        if (stop == p)
            break;
        rest[(*n)++] = v;
        p = *stop == ',' ? stop + 1 : stop;
    }
    qsort(rest, *n, sizeof rest[0], cmp_i64);
    *epoch = e;
    *ended = end == 1;
    return 0;
}
