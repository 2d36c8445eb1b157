/* standin.c - igw's stand-in IM back end (call.h): persistent groups in
 * PostgreSQL (im_groups, im_group_members), live calls in Redis, every
 * check-and-write one run of call.lua (embedded at build time).
 *
 * An operation that needs the call's group (join, roster, audio) first
 * peeks at the call (its group; for set, the target's current join
 * instance), then checks the caller's persistent membership in
 * PostgreSQL, then runs the script that acts, which checks everything
 * again atomically. A start reserves its place under the bounds on live
 * calls before it acts (call.lua reserve, on the bounds' own keys), each
 * join or heartbeat leases that place until its new deadline and a call's
 * end releases it: one more script run, sent without waiting for it. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "api.h"
#include "base64.h"
#include "call/call.h"
#include "call/decide.h"
#include "call_lua.h" /* IGW_CALL_LUA: call.lua as a C string (Makefile) */
#include "core/log.h"
#include "event/outbox.h"

typedef struct standin {
    igw_call base;
    igw_db *db;
    igw_redis *r;
    igw_call_standin_config cfg;
} standin;

typedef struct op {
    standin *s;
    igw_call_op kind;
    igw_call_step step;
    int64_t ent, user, target;
    int64_t expected; /* set: the target's join instance (peeked); leave: expectedMemberEpoch */
    int64_t revision; /* set: expectedRevision */
    bool allowed, retried; /* retried: NOSCRIPT answered, sent again as EVAL */
    bool reserved;         /* start: its place under the bounds is held (released if it fails) */
    char call_id[IGW_CALL_ID_MAX + 1], group_id[IGW_CALL_GROUP_ID_MAX + 1];
    char key[IGW_CALL_ARG_MAX];
    int argc;
    char argv[IGW_CALL_ARGS_MAX][IGW_CALL_ARG_MAX];
    igw_call_cb cb;
    void *arg;
} op;

static char script_sha[2 * SHA_DIGEST_LENGTH + 1];
static pthread_once_t sha_done = PTHREAD_ONCE_INIT;

static void sha_once(void)
{
    unsigned char d[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)IGW_CALL_LUA, strlen(IGW_CALL_LUA), d);
    igw_hex_encode(d, sizeof d, script_sha);
}

static void registry_send(standin *s, const char *what, int64_t ent, const char *group, const char *user, int64_t until,
                          const char *call_id);

/* The bounds' keys in call.lua's order (reserve, lease, release): the
 * group's live calls, then the user's. */
static void registry_keys(char keys[IGW_CALL_REG_KEYS][IGW_CALL_ARG_MAX], const char *group, const char *user)
{
    igw_call_registry_key(keys[0], IGW_CALL_REG_GROUP, group);
    igw_call_registry_key(keys[1], IGW_CALL_REG_USER, user);
}

static void finish(op *o, const igw_call_result *r)
{
    /* A start that did not make its call gives its place back; one whose
     * outcome is unknown keeps it until its lease runs out. */
    if (o->reserved && r->cls != IGW_ERR_OK && r->cls != IGW_ERR_UNKNOWN_OUTCOME) {
        char user[24];
        snprintf(user, sizeof user, "%" PRId64, o->user);
        registry_send(o->s, "release", o->ent, o->group_id, user, 0, o->call_id);
    }
    o->cb(o->arg, r);
    free(o);
}

static void fail(op *o, int cls, const char *reason, const char *path)
{
    igw_call_result r = {.cls = cls, .reason = reason, .path = path ? path : ""};
    finish(o, &r);
}

/* A dependency failed: the public class only (the cause is logged). */
static void fail_dep(op *o, const char *what, const char *err, bool sent)
{
    igw_log(IGW_LOG_WARN, NULL, "call: %s: %s", what, err);
    igw_call_refusal r;
    igw_call_dep_refusal(o->kind, o->step, sent, &r);
    fail(o, r.cls, r.reason, r.path);
}

/* A refusal word of call.lua as the public answer. */
static void refuse(op *o, const char *w)
{
    igw_call_refusal r;
    if (!igw_call_refusal_of(w, o->kind, &r))
        igw_log(IGW_LOG_ERROR, NULL, "call: unexpected answer %s", w);
    fail(o, r.cls, r.reason, r.path);
}

/* ---- the script ---------------------------------------------------------------------- */

static void on_script(void *arg, const redisReply *rep, const char *err);

static int send_script(op *o, bool eval)
{
    const char *argv[IGW_CALL_ARGS_MAX + 7];
    int n = 0, nkeys = IGW_CALL_KEYS;
    char keys[IGW_CALL_KEYS][IGW_CALL_ARG_MAX];
    if (o->step == IGW_CALL_STEP_RESERVE) { /* the bounds' keys, not the call's */
        char user[24];
        snprintf(user, sizeof user, "%" PRId64, o->user);
        registry_keys(keys, o->group_id, user);
        nkeys = IGW_CALL_REG_KEYS;
    } else {
        for (int i = 0; i < IGW_CALL_KEYS; i++)
            igw_call_key(keys[i], o->call_id, (igw_call_key_kind)i);
    }
    argv[n++] = eval ? "EVAL" : "EVALSHA";
    argv[n++] = eval ? IGW_CALL_LUA : script_sha;
    argv[n++] = nkeys == IGW_CALL_KEYS ? "4" : "2";
    for (int i = 0; i < nkeys; i++)
        argv[n++] = keys[i];
    for (int i = 0; i < o->argc; i++)
        argv[n++] = o->argv[i];
    argv[n++] = o->call_id; /* last: the call's id for notices and receipts */
    return igw_redis_command(o->s->r, on_script, o, n, argv, NULL);
}

/* call.lua's arguments after the keys: the operation, the caller's
 * enterprise, then the operation's own (arg_*); an argument that does not
 * fit makes send_args refuse (-1). */
static void arg_str(op *o, const char *v)
{
    if (o->argc < 0 || o->argc >= IGW_CALL_ARGS_MAX || strlen(v) >= IGW_CALL_ARG_MAX) {
        o->argc = -1;
        return;
    }
    memcpy(o->argv[o->argc++], v, strlen(v) + 1);
}

static void arg_i64(op *o, int64_t v)
{
    char n[24];
    snprintf(n, sizeof n, "%" PRId64, v);
    arg_str(o, n);
}

static void args_begin(op *o, const char *name)
{
    o->argc = 0;
    arg_str(o, name);
    arg_i64(o, o->ent);
}

static int send_args(op *o)
{
    if (o->argc < 0)
        return -1;
    o->retried = false;
    return send_script(o, false);
}

static bool is_int(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER;
}

static int64_t int_at(const redisReply *r, size_t i)
{
    return i < r->elements && is_int(r->element[i]) ? (int64_t)r->element[i]->integer : 0;
}

static const char *str_at(const redisReply *r, size_t i)
{
    if (i >= r->elements)
        return "";
    const redisReply *e = r->element[i];
    return e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS ? e->str : "";
}

/* The bounds' registry, without waiting: a call's place leased until
 * `until` (lease) or given back (release, until unused). A failure costs
 * at most the lease's remaining life (logged). */
static void on_registry(void *arg, const redisReply *rep, const char *err)
{
    (void)arg;
    if (!rep)
        igw_log(IGW_LOG_WARN, NULL, "call: bounds not updated: %s", err);
    else if (rep->type == REDIS_REPLY_ERROR)
        igw_log(IGW_LOG_WARN, NULL, "call: bounds not updated: %s", rep->str);
}

static void registry_send(standin *s, const char *what, int64_t ent, const char *group, const char *user, int64_t until,
                          const char *call_id)
{
    if (!group[0] || !user[0] || strlen(group) > IGW_CALL_GROUP_ID_MAX || strlen(user) > 20)
        return; /* not the script's answer: nothing to touch */
    char keys[IGW_CALL_REG_KEYS][IGW_CALL_ARG_MAX], e[24], u[24];
    registry_keys(keys, group, user);
    snprintf(e, sizeof e, "%" PRId64, ent);
    snprintf(u, sizeof u, "%" PRId64, until);
    const char *argv[9] = {"EVALSHA", script_sha, "2", keys[0], keys[1], what, e};
    int n = 7;
    if (until)
        argv[n++] = u;
    argv[n++] = call_id;
    if (igw_redis_command(s->r, on_registry, NULL, n, argv, NULL) != 0)
        igw_log(IGW_LOG_WARN, NULL, "call: bounds not updated: redis busy");
}

/* A leave receipt "<epoch> <ended> <uid,uid,...>" (call.lua) as the result;
 * rep's elements after it are the call's group and initiator. */
static void answer_receipt(op *o, const redisReply *rep, const char *text, bool replay)
{
    int64_t rest[IGW_CALL_MEMBERS_MAX], epoch;
    size_t n = 0;
    bool ended;
    if (igw_call_receipt_parse(text, &epoch, &ended, rest, IGW_CALL_MEMBERS_MAX, &n) != 0) {
        igw_log(IGW_LOG_ERROR, NULL, "call: unreadable receipt");
        fail(o, IGW_ERR_INTERNAL, "the conference runtime failed", "");
        return;
    }
    igw_call_result r = {.cls = IGW_ERR_OK, .call_id = o->call_id, .epoch = epoch, .ended = ended,
                         .replay = replay, .remaining = rest, .nremaining = n};
    if (ended && !replay && o->kind == IGW_CALL_OP_LEAVE) /* the leave ended the call: its place is free */
        registry_send(o->s, "release", o->ent, str_at(rep, 2), str_at(rep, 3), 0, o->call_id);
    finish(o, &r);
}

static void act(op *o);

static void answer(op *o, const redisReply *rep)
{
    const char *w = str_at(rep, 0);
    if (!strcmp(w, "REPLAY")) {
        answer_receipt(o, rep, str_at(rep, 1), true);
        return;
    }
    if (strcmp(w, "OK") != 0) {
        refuse(o, w);
        return;
    }
    if (o->step == IGW_CALL_STEP_RESERVE) { /* the start's place is held: now the call */
        o->reserved = true;
        o->step = IGW_CALL_STEP_ACT;
        act(o);
        return;
    }
    if (o->step == IGW_CALL_STEP_PEEK) { /* OK group initiator epoch live */
        snprintf(o->group_id, sizeof o->group_id, "%s", str_at(rep, 1));
        if (o->kind == IGW_CALL_OP_SET)
            o->expected = int_at(rep, 3); /* the target's current join instance */
        igw_call_refusal no;
        if (igw_call_peek_refuses(o->kind, int_at(rep, 4) != 0, &no)) {
            fail(o, no.cls, no.reason, no.path);
            return;
        }
        o->step = IGW_CALL_STEP_GROUP;
        act(o);
        return;
    }
    igw_call_result r = {.cls = IGW_ERR_OK, .call_id = o->call_id, .group_id = o->group_id};
    switch (o->kind) {
    case IGW_CALL_OP_START:
    case IGW_CALL_OP_JOIN:
    case IGW_CALL_OP_HEARTBEAT:
        r.epoch = int_at(rep, 1);
        r.deadline_ms = int_at(rep, 2);
        r.fresh = o->kind == IGW_CALL_OP_START || int_at(rep, 3) == 1;
        if (o->kind != IGW_CALL_OP_START) /* OK epoch deadline fresh group initiator: the call's place lives on */
            registry_send(o->s, "lease", o->ent, str_at(rep, 4), str_at(rep, 5), r.deadline_ms, o->call_id);
        break;
    case IGW_CALL_OP_HANGUP: /* OK epoch ended group initiator */
        r.epoch = int_at(rep, 1);
        r.ended = int_at(rep, 2) == 1;
        if (r.ended)
            registry_send(o->s, "release", o->ent, str_at(rep, 3), str_at(rep, 4), 0, o->call_id);
        break;
    case IGW_CALL_OP_READ:
    case IGW_CALL_OP_SET:
        r.allowed = int_at(rep, 1) == 1;
        r.revision = int_at(rep, 2);
        r.epoch = int_at(rep, 3);
        r.expires_ms = int_at(rep, 4);
        break;
    case IGW_CALL_OP_ROSTER: {
        igw_call_member m[IGW_CALL_MEMBERS_MAX];
        size_t n = 0;
        r.initiator = strtoll(str_at(rep, 1), NULL, 10);
        r.receipts = (size_t)int_at(rep, 3);
        for (size_t i = 4; i < rep->elements && n < IGW_CALL_MEMBERS_MAX; i++) {
            const redisReply *e = rep->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 5)
                continue;
            m[n++] = (igw_call_member){.user_id = strtoll(str_at(e, 0), NULL, 10), .epoch = int_at(e, 1),
                                       .allowed = int_at(e, 2) == 1, .revision = int_at(e, 3),
                                       .deadline_ms = int_at(e, 4)};
        }
        r.members = m;
        r.nmembers = n;
        finish(o, &r);
        return;
    }
    case IGW_CALL_OP_LEAVE:
    case IGW_CALL_OP_RECEIPT:
        answer_receipt(o, rep, str_at(rep, 1), o->kind == IGW_CALL_OP_RECEIPT);
        return;
    case IGW_CALL_OP_GROUP:
        break;
    }
    finish(o, &r);
}

static void on_script(void *arg, const redisReply *rep, const char *err)
{
    op *o = arg;
    if (!rep) {
        fail_dep(o, "redis", err, true);
        return;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        if (!o->retried && !strncmp(rep->str, "NOSCRIPT", 8)) {
            o->retried = true; /* a fresh or flushed server: EVAL loads it for the next EVALSHA */
            if (send_script(o, true) != 0)
                fail_dep(o, "redis", "EVAL not accepted", false);
            return;
        }
        igw_log(IGW_LOG_ERROR, NULL, "call: script: %s", rep->str);
        fail(o, IGW_ERR_INTERNAL, "the conference runtime failed", "");
        return;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) {
        igw_log(IGW_LOG_ERROR, NULL, "call: script answered type %d", rep->type);
        fail(o, IGW_ERR_INTERNAL, "the conference runtime failed", "");
        return;
    }
    answer(o, rep);
}

/* ---- the persistent group ---------------------------------------------------------- */

/* Parameters and columns by name: *_P_X is $(X + 1), *_C_X column X. */

/* The caller is an active user of the enterprise and a member of the group. */
enum { MEMBER_P_GROUP, MEMBER_P_ENTERPRISE, MEMBER_P_USER, MEMBER_NP };
static const igw_db_stmt q_member = {
    "call_member",
    "SELECT 1 FROM im_groups g JOIN im_group_members m ON m.group_id = g.group_id "
    "JOIN users u ON u.user_id = m.user_id AND u.active AND u.enterprise_id = g.enterprise_id "
    "WHERE g.group_id = $1 AND g.enterprise_id = $2::bigint AND m.user_id = $3::bigint",
    MEMBER_NP};

/* Creates the group only when every member is an active user of the
 * enterprise (the creator among them) and the creator is under
 * im_max_groups_per_user ($6): one statement, all or nothing. The count
 * is raised only while under the bound, on the newest row under its lock
 * (ON CONFLICT DO UPDATE ... WHERE), so racing creates cannot pass it. */
enum { GROUP_P_ID, GROUP_P_ENTERPRISE, GROUP_P_NAME, GROUP_P_OWNER, GROUP_P_MEMBERS, GROUP_P_MAX, GROUP_NP };
enum { GROUP_C_CREATED, GROUP_C_MEMBERS, GROUP_C_MEMBERS_OK };
static const igw_db_stmt q_group = {
    "call_group_create",
    "WITH ok AS (SELECT count(*) = cardinality($5::bigint[]) AS ok FROM users "
    "            WHERE user_id = ANY($5::bigint[]) AND enterprise_id = $2::bigint AND active), "
    "q AS (INSERT INTO im_group_quotas AS q (user_id, groups) SELECT $4::bigint, 1 FROM ok WHERE ok.ok "
    "      ON CONFLICT (user_id) DO UPDATE SET groups = q.groups + 1 WHERE q.groups < $6::bigint RETURNING 1), "
    "g AS (INSERT INTO im_groups (group_id, enterprise_id, name, owner_user_id) "
    "      SELECT $1, $2::bigint, $3, $4::bigint FROM q RETURNING group_id), "
    "m AS (INSERT INTO im_group_members (group_id, user_id) "
    "      SELECT g.group_id, u FROM g, unnest($5::bigint[]) AS u RETURNING user_id) "
    "SELECT (SELECT count(*) FROM g), (SELECT count(*) FROM m), (SELECT ok FROM ok)",
    GROUP_NP};

static void on_member(void *arg, const PGresult *res, const char *err)
{
    op *o = arg;
    if (!res) {
        fail_dep(o, "postgres", err, false);
        return;
    }
    igw_call_refusal no;
    if (PQntuples(res) != 1 && igw_call_check_refusal(o->kind, o->step, false, &no)) {
        fail(o, no.cls, no.reason, no.path);
        return;
    }
    o->step = igw_call_after_group(o->kind);
    act(o);
}

static void on_group(void *arg, const PGresult *res, const char *err)
{
    op *o = arg;
    if (!res) {
        fail_dep(o, "postgres", err, true);
        return;
    }
    igw_call_refusal no;
    bool members_ok = PQntuples(res) == 1 && !strcmp(PQgetvalue(res, 0, GROUP_C_MEMBERS_OK), "t");
    if ((PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, GROUP_C_CREATED), "1") != 0) &&
        igw_call_check_refusal(o->kind, o->step, members_ok, &no)) {
        fail(o, no.cls, no.reason, no.path);
        return;
    }
    igw_call_result r = {.cls = IGW_ERR_OK, .group_id = o->group_id};
    finish(o, &r);
}

static int check_member(op *o)
{
    char ent[24], user[24];
    snprintf(ent, sizeof ent, "%" PRId64, o->ent);
    snprintf(user, sizeof user, "%" PRId64, o->user);
    const char *v[MEMBER_NP] = {[MEMBER_P_GROUP] = o->group_id, [MEMBER_P_ENTERPRISE] = ent, [MEMBER_P_USER] = user};
    return igw_db_exec(o->s->db, &q_member, v, NULL, NULL, on_member, o);
}

/* Sends o's current step. 0, or -1 when it could not be sent. */
static int send_step(op *o)
{
    standin *s = o->s;
    if (o->step == IGW_CALL_STEP_GROUP)
        return check_member(o);
    if (o->step == IGW_CALL_STEP_PEEK) {
        args_begin(o, "peek");
        arg_i64(o, igw_call_peek_user(o->kind, o->user, o->target));
        return send_args(o);
    }
    if (o->step == IGW_CALL_STEP_RESERVE) { /* a start's place: leased until its first heartbeat is due */
        args_begin(o, "reserve");
        arg_i64(o, s->cfg.max_calls_per_group);
        arg_i64(o, s->cfg.max_calls_per_user);
        arg_i64(o, s->cfg.heartbeat_ms);
        return send_args(o);
    }
    switch (o->kind) {
    case IGW_CALL_OP_START:
        args_begin(o, "start");
        arg_str(o, o->group_id);
        arg_i64(o, o->user);
        arg_i64(o, s->cfg.heartbeat_ms);
        break;
    case IGW_CALL_OP_JOIN:
    case IGW_CALL_OP_HEARTBEAT:
        args_begin(o, o->kind == IGW_CALL_OP_JOIN ? "join" : "heartbeat");
        arg_i64(o, o->user);
        arg_i64(o, s->cfg.heartbeat_ms);
        break;
    case IGW_CALL_OP_HANGUP:
        args_begin(o, "hangup");
        arg_i64(o, o->user);
        break;
    case IGW_CALL_OP_ROSTER:
        args_begin(o, "roster");
        break;
    case IGW_CALL_OP_READ:
        args_begin(o, "audio_read");
        arg_i64(o, o->user);
        arg_i64(o, o->target);
        break;
    case IGW_CALL_OP_SET:
        args_begin(o, "audio_set");
        arg_i64(o, o->user);
        arg_i64(o, o->target);
        arg_i64(o, o->allowed ? 1 : 0);
        arg_i64(o, o->revision);
        arg_i64(o, o->expected);
        break;
    case IGW_CALL_OP_LEAVE:
        args_begin(o, "leave");
        arg_i64(o, o->user);
        arg_i64(o, o->target);
        arg_i64(o, o->expected);
        arg_str(o, o->key);
        arg_i64(o, s->cfg.heartbeat_ms);
        break;
    case IGW_CALL_OP_RECEIPT:
        args_begin(o, "receipt");
        arg_str(o, o->key);
        break;
    case IGW_CALL_OP_GROUP: /* PostgreSQL only: no script */
        return -1;
    }
    return send_args(o);
}

/* The next step, from a callback: one that cannot be sent fails o. */
static void act(op *o)
{
    if (send_step(o) != 0)
        fail_dep(o, o->step == IGW_CALL_STEP_GROUP ? "postgres" : "redis", "not accepted", false);
}


/* ---- the operations ------------------------------------------------------------------ */

static op *op_new(igw_call *c, igw_call_op kind, int64_t ent, int64_t user, const char *call_id,
                  igw_call_cb cb, void *arg)
{
    if (!igw_call_ids_fit(call_id, NULL, NULL))
        return NULL;
    op *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->s = (standin *)c;
    o->kind = kind;
    o->ent = ent;
    o->user = user;
    o->cb = cb;
    o->arg = arg;
    if (call_id)
        snprintf(o->call_id, sizeof o->call_id, "%s", call_id);
    return o;
}

/* Sends o's first step (igw_call_first_step); -1 (o freed, cb never runs)
 * when it cannot. */
static int begin(op *o)
{
    o->step = igw_call_first_step(o->kind);
    if (send_step(o) != 0) {
        free(o);
        return -1;
    }
    return 0;
}

static int s_group_create(igw_call *c, int64_t ent, int64_t creator, const char *name, const int64_t *members,
                          size_t n, igw_call_cb cb, void *arg)
{
    if (n > IGW_CALL_MEMBERS_MAX)
        return -1;
    op *o = op_new(c, IGW_CALL_OP_GROUP, ent, creator, NULL, cb, arg);
    if (!o)
        return -1;
    char id[40];
    if (igw_outbox_new_id(id, sizeof id) != 0) {
        free(o);
        return -1;
    }
    snprintf(o->group_id, sizeof o->group_id, "g-%s", id);
    /* {creator,members...} deduplicated: the array's cardinality is the
     * number of distinct active users the statement must find. */
    char *arr = malloc(IGW_CALL_LITERAL_CAP(n));
    if (!arr || !igw_call_members_literal(creator, members, n, arr, IGW_CALL_LITERAL_CAP(n))) {
        free(arr);
        free(o);
        return -1;
    }
    char e[24], u[24], max[24];
    snprintf(e, sizeof e, "%" PRId64, ent);
    snprintf(u, sizeof u, "%" PRId64, creator);
    snprintf(max, sizeof max, "%u", o->s->cfg.max_groups_per_user);
    const char *v[GROUP_NP] = {[GROUP_P_ID] = o->group_id, [GROUP_P_ENTERPRISE] = e, [GROUP_P_NAME] = name,
                               [GROUP_P_OWNER] = u, [GROUP_P_MEMBERS] = arr, [GROUP_P_MAX] = max};
    o->step = IGW_CALL_STEP_ACT;
    int rc = igw_db_exec(o->s->db, &q_group, v, NULL, NULL, on_group, o);
    free(arr);
    if (rc != 0)
        free(o);
    return rc;
}

static int s_start(igw_call *c, int64_t ent, int64_t user, const char *group_id, igw_call_cb cb, void *arg)
{
    op *o = op_new(c, IGW_CALL_OP_START, ent, user, NULL, cb, arg);
    if (!o || !igw_call_ids_fit(NULL, group_id, NULL)) {
        free(o);
        return -1;
    }
    char id[40];
    if (igw_outbox_new_id(id, sizeof id) != 0) {
        free(o);
        return -1;
    }
    snprintf(o->call_id, sizeof o->call_id, "c-%s", id);
    snprintf(o->group_id, sizeof o->group_id, "%s", group_id);
    return begin(o);
}

static int s_join(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb, void *arg)
{
    op *o = op_new(c, IGW_CALL_OP_JOIN, ent, user, call_id, cb, arg);
    return o ? begin(o) : -1;
}

static int s_heartbeat(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb, void *arg)
{
    op *o = op_new(c, IGW_CALL_OP_HEARTBEAT, ent, user, call_id, cb, arg);
    return o ? begin(o) : -1;
}

static int s_hangup(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb, void *arg)
{
    op *o = op_new(c, IGW_CALL_OP_HANGUP, ent, user, call_id, cb, arg);
    return o ? begin(o) : -1;
}

static int s_roster(igw_call *c, int64_t ent, int64_t user, const char *call_id, igw_call_cb cb, void *arg)
{
    op *o = op_new(c, IGW_CALL_OP_ROSTER, ent, user, call_id, cb, arg);
    return o ? begin(o) : -1;
}

static int s_audio_read(igw_call *c, int64_t ent, int64_t user, const char *call_id, int64_t target,
                        igw_call_cb cb, void *arg)
{
    op *o = op_new(c, IGW_CALL_OP_READ, ent, user, call_id, cb, arg);
    if (!o)
        return -1;
    o->target = target;
    return begin(o);
}

static int s_audio_set(igw_call *c, int64_t ent, int64_t user, const char *call_id, int64_t target, bool allowed,
                       int64_t expected_revision, igw_call_cb cb, void *arg)
{
    op *o = op_new(c, IGW_CALL_OP_SET, ent, user, call_id, cb, arg);
    if (!o)
        return -1;
    o->target = target;
    o->allowed = allowed;
    o->revision = expected_revision;
    return begin(o);
}

static int s_leave(igw_call *c, int64_t ent, int64_t actor, const char *call_id, int64_t target,
                   int64_t expected_epoch, const char *receipt_key, igw_call_cb cb, void *arg)
{
    if (!igw_call_ids_fit(NULL, NULL, receipt_key))
        return -1;
    op *o = op_new(c, IGW_CALL_OP_LEAVE, ent, actor, call_id, cb, arg);
    if (!o)
        return -1;
    o->target = target;
    o->expected = expected_epoch;
    snprintf(o->key, sizeof o->key, "%s", receipt_key);
    return begin(o);
}

static int s_receipt(igw_call *c, int64_t ent, const char *call_id, const char *receipt_key, igw_call_cb cb,
                     void *arg)
{
    if (!igw_call_ids_fit(NULL, NULL, receipt_key))
        return -1;
    op *o = op_new(c, IGW_CALL_OP_RECEIPT, ent, 0, call_id, cb, arg);
    if (!o)
        return -1;
    snprintf(o->key, sizeof o->key, "%s", receipt_key);
    return begin(o);
}

static void s_destroy(igw_call *c)
{
    free(c);
}

static const igw_call_ops standin_ops = {
    .group_create = s_group_create,
    .start = s_start,
    .join = s_join,
    .heartbeat = s_heartbeat,
    .hangup = s_hangup,
    .roster = s_roster,
    .audio_read = s_audio_read,
    .audio_set = s_audio_set,
    .leave = s_leave,
    .receipt = s_receipt,
    .destroy = s_destroy,
};

igw_call *igw_call_standin_create(igw_db *db, igw_redis *r, const igw_call_standin_config *cfg)
{
    standin *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_once(&sha_done, sha_once);
    s->base.ops = &standin_ops;
    s->db = db;
    s->r = r;
    s->cfg = *cfg;
    return &s->base;
}
