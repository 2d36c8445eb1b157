/* talk.c - ipcTalk (docs/talk.md): a call's member hears the camera and
 * speaks through its speaker; the conference runtime (call/call.h) is the
 * authority on who is a live member and who may publish.
 *
 * The open: the caller must be a live member of the call with audio
 * permission now (no auto-join), and with talk_members off the call has no
 * talk session yet. Then what keeps a session true to its call ("The media
 * room"): the runtime is read again for each call with talk sessions on
 * this node, every talk_recheck_ms and at once when told the call changed:
 *   - a member no longer live in the join instance its session was opened
 *     in (it left, was removed, lapsed or re-entered) ends that session:
 *     memberLeft; an ended call ends them all: callEnded;
 *   - a changed permission moves the media core's gate at once;
 *   - a permission not confirmed for IGW_CALL_GRANT_MS (the runtime cannot
 *     be read) closes the gate until it is: an allowance is never a lease.
 * Receiving is never touched: muting does not remove receive eligibility.
 * And the session's methods of the call: interaction.join and leave.
 * Everything here runs on the engine's loop. */
#include "session/purpose.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "base64.h"
#include "clock.h"
#include "core/log.h"
#include "decode.h"
#include "event/rights.h"
#include "paths.h"
#include "session/commands.h"


/* A talk session's own state. */
typedef struct talk_session {
    char call_id[IGW_CALL_ID_MAX + 1]; /* the call its leg is bound to, for good */
    int64_t member_epoch;              /* the caller's join instance at the open */
    bool publish_allowed;              /* what the media core's gate lets through */
    bool checking;                     /* a member read for it is in flight */
    int64_t checked_ms;                /* when its member state was last applied (monotonic) */
} talk_session;

/* An accepted join or leave, until the runtime answers (the op is freed
 * once accepted). */
typedef struct talk_cmd {
    struct talk_cmd *next;
    igw_engine *e;
    igw_CommandMethod method;
    char sid[LIVE_ID_MAX + 1], endpoint[LIVE_ID_MAX + 1], token[LIVE_TOKEN_MAX + 1];
    char call_id[IGW_CALL_ID_MAX + 1];
    int64_t target;
} talk_cmd;

/* The engine-wide state: accepted joins and leaves not answered yet. */
typedef struct talk_engine {
    talk_cmd *cmds;
} talk_engine;

static talk_session *talk_of(const live_session *s)
{
    return s->purpose == IGW_Purpose_ipcTalk ? s->pdata : NULL;
}

static talk_engine *engine_state(igw_engine *e)
{
    if (!e->pstate[IGW_Purpose_ipcTalk])
        e->pstate[IGW_Purpose_ipcTalk] = calloc(1, sizeof(talk_engine));
    return e->pstate[IGW_Purpose_ipcTalk];
}

/* ---- the open ---------------------------------------------------------------------- */

/* With talk_members off, the call's talk sessions (one at most). */
enum { TC_CALL, TC__N };
enum { TC_COL_COUNT };
static const igw_db_stmt st_call_sessions = {
    "igw_talk_call_sessions",
    "SELECT count(*) FROM sessions x WHERE x.call_id = $1::text AND x.state <> 'ended'",
    TC__N};

static bool talk_check(igw_engine *e, const igw_OpenParams *p, uint32_t *guards, live_refusal *r)
{
    (void)p;
    (void)guards;
    if (!e->cfg.talk_enabled)
        *r = (live_refusal){.cls = IGW_ERR_NOT_IMPLEMENTED, .reason = "talk is not enabled on this server",
                            .path = IGW_PATH_command_params_purpose};
    else if (!e->call)
        *r = (live_refusal){.cls = IGW_ERR_UNAVAILABLE, .reason = "no conference runtime is wired", .path = ""};
    else
        return false;
    return true;
}

static void on_call_sessions(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    if (!live_op_row(o, res, err, false))
        return;
    if (strcmp(PQgetvalue(res, 0, TC_COL_COUNT), "0") != 0) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "the call has its talk session already (two-party talk: talk_members is off)",
                       IGW_PATH_command_params_callId);
        return;
    }
    live_op_admitted(o);
}

/* The caller's own member record in its call. */
static void on_member(void *arg, const igw_call_result *r)
{
    live_op *o = arg;
    if (r->cls != IGW_ERR_OK) {
        /* The runtime's reasons, on the command's paths. */
        bool call = r->cls == IGW_ERR_NOT_FOUND || r->cls == IGW_ERR_PERMISSION;
        live_op_refuse(o, r->cls,
                       r->cls == IGW_ERR_PERMISSION ? "you are not a live member of the call (join it first)" : r->reason,
                       call ? IGW_PATH_command_params_callId : "");
        return;
    }
    if (!r->allowed) {
        live_op_refuse(o, IGW_ERR_PERMISSION, "you have no audio permission in the call", IGW_PATH_command_params_callId);
        return;
    }
    talk_session *t = calloc(1, sizeof *t);
    if (!t) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    snprintf(t->call_id, sizeof t->call_id, "%s", o->cols.call_id);
    t->member_epoch = r->epoch;
    t->publish_allowed = true; /* checked now; the recheck keeps it true */
    t->checked_ms = igw_clock_ms();
    o->pdata = t;
    snprintf(o->cols.member_epoch, sizeof o->cols.member_epoch, "%" PRId64, r->epoch);
    if (o->e->cfg.talk_members) {
        live_op_admitted(o);
        return;
    }
    const char *v[TC__N] = {[TC_CALL] = o->cols.call_id};
    if (igw_db_exec(o->e->db, &st_call_sessions, v, NULL, NULL, on_call_sessions, o) != 0)
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* The caller must be a live member with audio permission now; no auto-join. */
static void talk_admit(live_op *o)
{
    const igw_OpenParams *p = &o->k->params.interaction_open;
    snprintf(o->cols.call_id, sizeof o->cols.call_id, "%.*s", (int)p->callId.len, p->callId.ptr);
    if (igw_call_audio_read(o->e->call, o->enterprise_id, o->user_id, o->cols.call_id, o->user_id, on_member, o))
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- the media room ------------------------------------------------------------------ */

/* The call's permission: the engine's gate (live_session_gate) opens only
 * while it holds, and while the application has not stopped its uplink. */
static bool talk_permitted(const live_session *s)
{
    const talk_session *t = talk_of(s);
    return t && t->publish_allowed;
}

static void set_gate(igw_engine *e, live_session *s, bool allowed)
{
    talk_session *t = talk_of(s);
    if (t->publish_allowed == allowed)
        return;
    t->publish_allowed = allowed;
    char err[160] = "";
    if (!live_session_gate(e, s, err, sizeof err))
        igw_log(IGW_LOG_WARN, NULL, "session %s: gate not set: %s", s->id, err);
    /* Muted: no packet of it is forwarded after the gate call returned;
     * when was its last one (make bench-talk reads it) */
    int64_t last = allowed ? 0 : live_session_last_uplink_ms(e, s);
    if (allowed)
        igw_log(IGW_LOG_INFO, NULL, "session %s: publish allowed (call %s)", s->id, t->call_id);
    else
        igw_log(IGW_LOG_INFO, NULL, "session %s: publish muted (call %s; its last packet forwarded at %" PRId64 ")",
                s->id, t->call_id, last);
}

/* One read of a call's roster in flight. */
typedef struct recheck {
    igw_engine *e;
    char call_id[IGW_CALL_ID_MAX + 1];
    int64_t ent, user; /* whose view of the roster (a member of the call's group) */
} recheck;

static void on_roster(void *arg, const igw_call_result *r)
{
    recheck *c = arg;
    igw_engine *e = c->e;
    int64_t now = igw_clock_ms();
    for (live_session *s = e->sessions, *next; s; s = next) {
        next = s->next; /* s may end here */
        talk_session *t = talk_of(s);
        if (!t || s->enterprise_id != c->ent || strcmp(t->call_id, c->call_id) != 0)
            continue;
        t->checking = false;
        if (r->cls == IGW_ERR_NOT_FOUND) { /* no such live call: it ended */
            live_session_end(e, s, "callEnded");
            continue;
        }
        if (r->cls == IGW_ERR_PERMISSION) {
            /* The reader is no longer a member of the call's group: its
             * own sessions end; the others are read again next time. */
            if (s->user_id == c->user)
                live_session_end(e, s, "memberLeft");
            continue;
        }
        if (r->cls != IGW_ERR_OK)
            continue; /* unknown now: the grant's expiry (tick) decides */
        const igw_call_member *m = NULL;
        for (size_t i = 0; i < r->nmembers; i++)
            if (r->members[i].user_id == s->user_id)
                m = &r->members[i];
        if (!m || m->epoch != t->member_epoch) {
            live_session_end(e, s, "memberLeft");
            continue;
        }
        t->checked_ms = now;
        set_gate(e, s, m->allowed);
    }
    if (r->cls != IGW_ERR_OK && r->cls != IGW_ERR_NOT_FOUND && r->cls != IGW_ERR_PERMISSION)
        igw_log(IGW_LOG_WARN, NULL, "talk: call %s not read: %s", c->call_id, r->reason ? r->reason : "");
    free(c);
}

/* Reads the call of s (and of every other talk session on it) now. */
static void read_call(igw_engine *e, live_session *s)
{
    recheck *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->e = e;
    snprintf(c->call_id, sizeof c->call_id, "%s", talk_of(s)->call_id);
    c->ent = s->enterprise_id;
    c->user = s->user_id;
    if (igw_call_roster(e->call, c->ent, c->user, c->call_id, on_roster, c) != 0) {
        free(c);
        return;
    }
    for (live_session *x = e->sessions; x; x = x->next) {
        talk_session *t = talk_of(x);
        if (t && x->enterprise_id == c->ent && strcmp(t->call_id, c->call_id) == 0)
            t->checking = true;
    }
}

/* The talk sessions' member state is read again: every call (call_id
 * NULL) or the one the runtime says changed. */
static void recheck_calls(igw_engine *e, const char *call_id)
{
    if (!e->call)
        return;
    for (live_session *s = e->sessions; s; s = s->next) {
        talk_session *t = talk_of(s);
        if (t && !t->checking && (!call_id || strcmp(t->call_id, call_id) == 0))
            read_call(e, s);
    }
}

static void talk_fact(igw_engine *e, live_fact_kind kind, const char *arg)
{
    if (kind == LIVE_FACT_CALL_CHANGED)
        recheck_calls(e, arg);
}

static void talk_tick(igw_engine *e, int64_t now_ms)
{
    if (!e->call)
        return;
    for (live_session *s = e->sessions; s; s = s->next) {
        talk_session *t = talk_of(s);
        if (!t)
            continue;
        if (t->publish_allowed && now_ms - t->checked_ms > IGW_CALL_GRANT_MS + (int64_t)e->cfg.talk_recheck_ms) {
            igw_log(IGW_LOG_WARN, NULL, "session %s: permission not confirmed for %" PRId64 " ms: muted", s->id,
                    now_ms - t->checked_ms);
            set_gate(e, s, false);
        }
        if (!t->checking && now_ms - t->checked_ms >= (int64_t)e->cfg.talk_recheck_ms)
            read_call(e, s);
    }
}

static void talk_stop(igw_engine *e)
{
    talk_engine *te = e->pstate[IGW_Purpose_ipcTalk];
    if (!te)
        return;
    while (te->cmds) { /* the runtime is destroyed after the engine's state: nothing answers them */
        talk_cmd *t = te->cmds;
        te->cmds = t->next;
        free(t);
    }
    free(te);
    e->pstate[IGW_Purpose_ipcTalk] = NULL;
}

const struct igw_purpose_hooks igw_purpose_talk = {
    .check = talk_check,
    .admit = talk_admit,
    .establish_on_flow = true,
    .permitted = talk_permitted,
    .fact = talk_fact,
    .tick = talk_tick,
    .stop = talk_stop,
};

/* ---- interaction.join and leave: the runtime's operations on the session's call ---- */

/* The result goes to the session's endpoint even when the session ended
 * meanwhile (a leave ends the leaver's own). */
static void cmd_result(talk_cmd *t, int cls, const char *reason, igw_ResultData *d)
{
    live_session_result(t->e, t->sid, t->endpoint, t->token, t->method, cls, reason, d);
}

static void cmd_unlink(talk_cmd *t)
{
    talk_engine *te = t->e->pstate[IGW_Purpose_ipcTalk];
    for (talk_cmd **p = te ? &te->cmds : NULL; p && *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            return;
        }
}

static bool cmd_in_flight(igw_engine *e, const char *endpoint, const char *token)
{
    talk_engine *te = e->pstate[IGW_Purpose_ipcTalk];
    for (const talk_cmd *t = te ? te->cmds : NULL; t; t = t->next)
        if (!strcmp(t->endpoint, endpoint) && !strcmp(t->token, token))
            return true;
    return false;
}

/* The accepted command o on call_id, until the runtime answers: linked in
 * the engine's list (unlinked by whoever ends it). NULL: out of memory. */
static talk_cmd *cmd_new(live_op *o, const char *call_id)
{
    talk_engine *te = engine_state(o->e);
    talk_cmd *t = te ? calloc(1, sizeof *t) : NULL;
    if (!t)
        return NULL;
    t->e = o->e;
    t->method = o->method;
    t->target = o->arg1;
    snprintf(t->sid, sizeof t->sid, "%s", o->sid);
    snprintf(t->endpoint, sizeof t->endpoint, "%s", o->endpoint);
    snprintf(t->token, sizeof t->token, "%s", o->token);
    snprintf(t->call_id, sizeof t->call_id, "%s", call_id);
    t->next = te->cmds;
    te->cmds = t;
    return t;
}

static void on_cmd_done(void *arg, const igw_call_result *r)
{
    talk_cmd *t = arg;
    cmd_unlink(t);
    igw_ResultData d = {0};
    if (r->cls == IGW_ERR_UNKNOWN_OUTCOME && t->method == IGW_CommandMethod_interaction_leave) {
        /* Sent, unanswered: it may have run. No result now; a retry with
         * the original token reads the receipt (spec: never a new token). */
        igw_log(IGW_LOG_WARN, NULL, "session %s: leave %s: outcome unknown, left to the receipt", t->sid, t->token);
    } else if (r->cls != IGW_ERR_OK) {
        cmd_result(t, r->cls, r->reason, &d);
    } else if (t->method == IGW_CommandMethod_interaction_join) {
        d.has = IGW_ResultData_state;
        d.state = igw_str_of("joined");
        cmd_result(t, IGW_ERR_OK, NULL, &d);
    } else {
        /* exactly operation, callId, participantId, memberEpoch, remaining, ended */
        char who[24], ids[IGW_CALL_MEMBERS_MAX][24];
        igw_str rest[IGW_CALL_MEMBERS_MAX];
        size_t n = r->nremaining < IGW_CALL_MEMBERS_MAX ? r->nremaining : IGW_CALL_MEMBERS_MAX;
        for (size_t i = 0; i < n; i++)
            rest[i] = (igw_str){ids[i], (size_t)snprintf(ids[i], sizeof ids[i], "%" PRId64, r->remaining[i])};
        d.has = IGW_ResultData_callId | IGW_ResultData_participantId | IGW_ResultData_memberEpoch |
                IGW_ResultData_remaining | IGW_ResultData_ended;
        d.callId = igw_str_of(t->call_id);
        d.participantId = (igw_str){who, (size_t)snprintf(who, sizeof who, "%" PRId64, t->target)};
        d.memberEpoch = r->epoch;
        d.remaining = (igw_str_list){rest, (uint32_t)n};
        d.ended = r->ended;
        cmd_result(t, IGW_ERR_OK, NULL, &d);
    }
    recheck_calls(t->e, t->call_id); /* the owner revokes the leg of who left, at once */
    free(t);
}

/* A leave accepted before and still without its result (an interruption
 * after the claim): its receipt is the result; none means the outcome is
 * unknown, and nothing is run again. */
static void on_receipt(void *arg, const igw_call_result *r)
{
    talk_cmd *t = arg;
    if (r->cls == IGW_ERR_OK) { /* the result as the leave's own */
        on_cmd_done(t, r);
        return;
    }
    cmd_unlink(t);
    igw_ResultData d = {0};
    if (r->cls == IGW_ERR_NOT_FOUND)
        cmd_result(t, IGW_ERR_UNKNOWN_OUTCOME, "no receipt of this leave: its outcome is unknown; nothing was run again",
                   &d);
    /* else the runtime cannot be read now: a later retry reads it */
    free(t);
}

/* A leave's receipt key: unique per enterprise, endpoint and msgToken
 * (the ledger's key), short and opaque in Redis. */
static void receipt_key(const live_op *o, char out[33])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    char in[24 + LIVE_ID_MAX + LIVE_TOKEN_MAX + 3];
    int n = snprintf(in, sizeof in, "%s\n%s\n%s", o->ent, o->endpoint, o->token);
    SHA256((const unsigned char *)in, (size_t)n, d);
    igw_hex_encode(d, 16, out);
}

static void cmd_done(live_op *o, live_session *s)
{
    igw_engine *e = o->e;
    talk_cmd *t = cmd_new(o, talk_of(s)->call_id);
    int rc = -1;
    if (t) {
        if (o->method == IGW_CommandMethod_interaction_join) {
            rc = igw_call_join(e->call, o->enterprise_id, o->arg1, t->call_id, on_cmd_done, t);
        } else {
            char key[33];
            receipt_key(o, key);
            rc = igw_call_leave(e->call, o->enterprise_id, o->user_id, t->call_id, o->arg1, o->arg2, key, on_cmd_done,
                                t);
        }
    }
    if (rc != 0) {
        igw_ResultData d = {0};
        live_session_result(e, s->id, s->endpoint, o->token, o->method, IGW_ERR_UNAVAILABLE,
                            "the conference runtime is busy; retry", &d);
        if (t)
            cmd_unlink(t);
        free(t);
    }
}

/* interaction.join: the participant is logged in (a live endpoint of its
 * own in the caller's enterprise). */
enum { PL_ENT, PL_USER, PL__N };
enum { PL_COL_LIVE };
static const igw_db_stmt st_participant_live = {
    "igw_session_participant_live",
    "SELECT EXISTS (SELECT 1 FROM endpoints p JOIN users u ON u.user_id = p.user_id AND u.active "
    "               WHERE p.user_id = $2::bigint AND p.enterprise_id = $1::bigint AND p.expires_at_ms > " IGW_SQL_NOW_MS ")",
    PL__N};

/* join and leave: an earlier acceptance of the key, and whether its result exists. */
enum { TP_ENT, TP_EP, TP_TOKEN, TP_SID, TP__N };
enum { TP_COL_PRIOR, TP_COL_RESULT };
static const igw_db_stmt st_talk_prior = {
    "igw_session_talk_prior",
    "SELECT " IGW_SQL_PRIOR_FP("$1::bigint", "$2::text", "$3::text") ", "
    "EXISTS (SELECT 1 FROM events ev WHERE ev.session_id = $4::text AND ev.msg_token = $3::text "
    "        AND ev.event_seq IS NULL)",
    TP__N};

static void on_participant_live(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    if (!live_op_row(o, res, err, false))
        return;
    if (!igw_db_true(res, 0, PL_COL_LIVE)) {
        live_op_refuse(o, IGW_ERR_PERMISSION, "the participant is not logged in (no live endpoint)",
                       IGW_PATH_command_params_participantId);
        return;
    }
    live_op_accept(o, cmd_done);
}

/* Before join or leave claims anything: the caller is still the live
 * member of its session's join instance; leave's target, its instance,
 * the initiator rule and the receipts' room; join's participant logged in. */
static void on_precheck(void *arg, const igw_call_result *r)
{
    live_op *o = arg;
    live_session *s = live_session_find(o->e, o->sid);
    if (!s) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "the session has ended", IGW_PATH_command_sessionId);
        return;
    }
    if (r->cls != IGW_ERR_OK) {
        live_op_refuse(o, r->cls, r->cls == IGW_ERR_NOT_FOUND ? "the call has ended" : r->reason,
                       r->cls == IGW_ERR_NOT_FOUND ? IGW_PATH_command_params_callId : "");
        return;
    }
    const igw_call_member *me = NULL, *target = NULL;
    for (size_t i = 0; i < r->nmembers; i++) {
        if (r->members[i].user_id == o->user_id)
            me = &r->members[i];
        if (r->members[i].user_id == o->arg1)
            target = &r->members[i];
    }
    if (!me || me->epoch != talk_of(s)->member_epoch) {
        live_op_refuse(o, IGW_ERR_PERMISSION,
                       "you are no longer a live member of the call in this session's join instance",
                       IGW_PATH_command_sessionId);
        return;
    }
    if (o->method == IGW_CommandMethod_interaction_join) {
        char who[24];
        snprintf(who, sizeof who, "%" PRId64, o->arg1);
        const char *v[PL__N] = {[PL_ENT] = o->ent, [PL_USER] = who};
        if (igw_db_exec(o->e->db, &st_participant_live, v, NULL, NULL, on_participant_live, o) != 0)
            live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    if (o->arg1 != o->user_id && r->initiator != o->user_id) {
        live_op_refuse(o, IGW_ERR_PERMISSION, "only the call's original initiator may remove another member",
                       IGW_PATH_command_params_participantId);
        return;
    }
    if (!target) {
        live_op_refuse(o, IGW_ERR_NOT_FOUND, "the participant is not a live member of the call",
                       IGW_PATH_command_params_participantId);
        return;
    }
    if (target->epoch != o->arg2) {
        live_op_refuse(o, IGW_ERR_PARAMETER, "stale expectedMemberEpoch: the member re-entered the call",
                       IGW_PATH_command_params_expectedMemberEpoch);
        return;
    }
    if (r->receipts >= IGW_CALL_RECEIPTS_MAX) {
        live_op_refuse(o, IGW_ERR_CAPACITY, "the call's leave receipts are full", "");
        return;
    }
    live_op_accept(o, cmd_done);
}

static void on_talk_prior(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    igw_engine *e = o->e;
    if (!live_op_row(o, res, err, false))
        return;
    live_session *s = live_session_find(e, o->sid);
    if (PQgetisnull(res, 0, TP_COL_PRIOR) || o->c->accepted) {
        /* first time (a forwarded one is: its acceptance is the prior): the checks, then the claim */
        if (!s) {
            live_op_refuse(o, IGW_ERR_CONFLICT, "the session has ended", IGW_PATH_command_sessionId);
            return;
        }
        if (igw_call_roster(e->call, o->enterprise_id, o->user_id, talk_of(s)->call_id, on_precheck, o) != 0)
            live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    const char *prior = PQgetvalue(res, 0, TP_COL_PRIOR);
    if (o->method == IGW_CommandMethod_interaction_leave && !igw_db_true(res, 0, TP_COL_RESULT) &&
        strcmp(prior, o->c->fingerprint_hex) == 0 && !cmd_in_flight(e, o->endpoint, o->token)) {
        /* The same leave, pending without a result: its receipt answers. */
        talk_cmd *t = cmd_new(o, s ? talk_of(s)->call_id : "");
        if (t) {
            char key[33];
            receipt_key(o, key);
            if (!t->call_id[0] || igw_call_receipt(e->call, o->enterprise_id, t->call_id, key, on_receipt, t) != 0) {
                cmd_unlink(t);
                free(t);
            }
        }
    }
    live_op_answer(o, IGW_ERR_OK, NULL, NULL, prior); /* the command room answers the replay or the conflict */
    live_op_free(o);
}

/* join and leave on the session: its call, then a replay first (its checks
 * were made when it was accepted, and what it changed, who is live, would
 * refuse it now). */
static void call_command(live_op *o, igw_str participant)
{
    igw_engine *e = o->e;
    live_session *s = live_session_find(e, o->sid);
    if (!talk_of(s)) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "not an ipcTalk session", IGW_PATH_command_sessionId);
        return;
    }
    if (!e->call) {
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "no conference runtime is wired", "");
        return;
    }
    o->arg1 = strtoll(participant.ptr, NULL, 10); /* canonical_id: digits, in range */
    const char *v[TP__N] = {[TP_ENT] = o->ent, [TP_EP] = o->endpoint, [TP_TOKEN] = o->token, [TP_SID] = o->sid};
    if (igw_db_exec(e->db, &st_talk_prior, v, NULL, NULL, on_talk_prior, o) != 0)
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

void igw_talk_join(live_op *o)
{
    live_session *s = live_session_find(o->e, o->sid);
    if (talk_of(s) && !o->e->cfg.talk_members) {
        live_op_refuse(o, IGW_ERR_NOT_IMPLEMENTED, "extra members are off on this server (two-party talk)",
                       IGW_PATH_command_method);
        return;
    }
    call_command(o, o->k->params.interaction_join.participantId);
}

void igw_talk_leave(live_op *o)
{
    live_session *s = live_session_find(o->e, o->sid);
    const igw_LeaveParams *p = &o->k->params.interaction_leave;
    talk_session *t = talk_of(s);
    if (t && !igw_str_eq(p->callId, t->call_id, strlen(t->call_id))) {
        live_op_refuse(o, IGW_ERR_PARAMETER, "not the call this session is bound to", IGW_PATH_command_params_callId);
        return;
    }
    o->arg2 = p->expectedMemberEpoch;
    call_command(o, p->participantId);
}
