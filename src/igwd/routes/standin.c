/* standin.c - the stand-in IM back end's own routes (schema/standin.igw,
 * /api/v1/im-standin/...): groups and live calls for talk to run against,
 * through the conference runtime of the worker (call/call.h). The caller
 * is the logged-in user; a worker without a runtime answers unavailable. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "call/call.h"
#include "routes/context.h"
#include "routes/decide.h"
#include "routes/routes.h"

#define UID_LEN 24

static igw_call *runtime(igw_exchange *ex)
{
    igw_worker *w = igw_http_state(ex);
    if (!w->call)
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "no conference runtime is wired", "");
    return w->call;
}

/* Answers the runtime's refusal; false when r is a success. */
static bool refused(igw_exchange *ex, const igw_call_result *r)
{
    if (r->cls == IGW_ERR_OK)
        return false;
    igw_http_reply_error(ex, (igw_err)r->cls, r->reason, r->path);
    return true;
}

static void busy(igw_exchange *ex)
{
    igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* The body's callId, NUL-terminated in the exchange's arena (NULL: out of memory, answered). */
static const char *call_id_of(igw_exchange *ex, igw_str id)
{
    char *s = igw_arena_strndup(igw_http_arena(ex), id.ptr, id.len);
    if (!s)
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
    return s;
}

static void on_group(void *arg, const igw_call_result *r)
{
    igw_exchange *ex = arg;
    if (refused(ex, r))
        return;
    igw_GroupData d = {.groupId = {r->group_id, strlen(r->group_id)}};
    igw_encode_GroupData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_standin_group_create(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_call *c = runtime(ex);
    if (!c)
        return;
    const igw_GroupCreate *rq = req->body;
    int64_t members[IGW_GroupCreate_members_MAX_ITEMS];
    uint32_t n = igw_routes_group_members(rq, members); /* canonical_id: digits, in range */
    char *name = igw_arena_strndup(igw_http_arena(ex), rq->name.ptr, rq->name.len);
    if (!name) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    if (igw_call_group_create(c, who->enterprise_id, who->user_id, name, members, n, on_group, ex))
        busy(ex);
}

static void on_member(void *arg, const igw_call_result *r)
{
    igw_exchange *ex = arg;
    if (refused(ex, r))
        return;
    igw_CallMember d = {.callId = {r->call_id, strlen(r->call_id)}, .memberEpoch = r->epoch,
                        .deadlineAt = r->deadline_ms};
    igw_encode_CallMember(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_standin_call_start(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_call *c = runtime(ex);
    if (!c)
        return;
    const igw_CallStart *rq = req->body;
    const char *group = call_id_of(ex, rq->groupId);
    if (group && igw_call_start(c, who->enterprise_id, who->user_id, group, on_member, ex))
        busy(ex);
}

void igw_route_standin_call_join(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_call *c = runtime(ex);
    if (!c)
        return;
    const igw_CallRef *rq = req->body;
    const char *id = call_id_of(ex, rq->callId);
    if (id && igw_call_join(c, who->enterprise_id, who->user_id, id, on_member, ex))
        busy(ex);
}

void igw_route_standin_call_heartbeat(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_call *c = runtime(ex);
    if (!c)
        return;
    const igw_CallRef *rq = req->body;
    const char *id = call_id_of(ex, rq->callId);
    if (id && igw_call_heartbeat(c, who->enterprise_id, who->user_id, id, on_member, ex))
        busy(ex);
}

static void on_left(void *arg, const igw_call_result *r)
{
    igw_exchange *ex = arg;
    if (refused(ex, r))
        return;
    igw_CallLeft d = {.callId = {r->call_id, strlen(r->call_id)}, .ended = r->ended};
    igw_encode_CallLeft(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_standin_call_hangup(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_call *c = runtime(ex);
    if (!c)
        return;
    const igw_CallRef *rq = req->body;
    const char *id = call_id_of(ex, rq->callId);
    if (id && igw_call_hangup(c, who->enterprise_id, who->user_id, id, on_left, ex))
        busy(ex);
}

static void on_roster(void *arg, const igw_call_result *r)
{
    igw_exchange *ex = arg;
    if (refused(ex, r))
        return;
    igw_arena *a = igw_http_arena(ex);
    igw_RosterMember *m = r->nmembers ? igw_arena_alloc(a, r->nmembers * sizeof *m) : NULL;
    char *ids = igw_arena_alloc(a, (r->nmembers + 1) * UID_LEN);
    if ((r->nmembers && !m) || !ids) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    for (size_t i = 0; i < r->nmembers; i++) {
        char *id = ids + (i + 1) * UID_LEN;
        int n = snprintf(id, UID_LEN, "%" PRId64, r->members[i].user_id);
        m[i] = (igw_RosterMember){.userId = {id, (size_t)n}, .memberEpoch = r->members[i].epoch,
                                  .publishAllowed = r->members[i].allowed, .audioRevision = r->members[i].revision,
                                  .deadlineAt = r->members[i].deadline_ms};
    }
    int n = snprintf(ids, UID_LEN, "%" PRId64, r->initiator);
    igw_RosterData d = {.has = IGW_RosterData_members, .callId = {r->call_id, strlen(r->call_id)},
                        .initiator = {ids, (size_t)n}, .members = {m, (uint32_t)r->nmembers}};
    igw_encode_RosterData(igw_http_data(ex), &d);
    igw_http_reply_data(ex);
}

void igw_route_standin_call_roster(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    igw_call *c = runtime(ex);
    if (!c)
        return;
    const igw_CallRef *rq = req->body;
    const char *id = call_id_of(ex, rq->callId);
    if (id && igw_call_roster(c, who->enterprise_id, who->user_id, id, on_roster, ex))
        busy(ex);
}
