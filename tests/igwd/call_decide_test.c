/* call_decide_test.c - the stand-in conference runtime's decisions without
 * Redis or PostgreSQL (call/decide.h), against the script igwd runs
 * (call.lua, embedded as IGW_CALL_LUA): every refusal word the script can
 * answer has its public class, reason and path; the script's bounds are
 * the runtime's; each route's refusals are classes its schema declares;
 * each operation's steps, dependency failures, argument bounds, keys, a
 * group's member array and a leave receipt's text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "api.h"
#include "call/decide.h"
#include "call_lua.h"

static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static bool refusal_is(const igw_call_refusal *r, int cls, const char *reason, const char *path)
{
    return r->cls == cls && same(r->reason, reason) && same(r->path, path);
}

/* ---- call.lua, read as igwd embeds it ---- */

#define WORDS_MAX 32
typedef struct words {
    char w[WORDS_MAX][32];
    int n;
} words;

static void words_add(words *ws, const char *p, size_t len)
{
    for (int i = 0; i < ws->n; i++)
        if (strlen(ws->w[i]) == len && memcmp(ws->w[i], p, len) == 0)
            return;
    if (ws->n < WORDS_MAX && len < sizeof ws->w[0]) {
        memcpy(ws->w[ws->n], p, len);
        ws->w[ws->n++][len] = '\0';
    }
}

/* The refusal words in script[from, to): {'WORD'} alone, or nil, 'WORD'. */
static void words_in(const char *from, const char *to, words *ws)
{
    for (const char *p = from; p < to; p++) {
        const char *q = NULL;
        if (!strncmp(p, "{'", 2))
            q = p + 2;
        else if (!strncmp(p, "nil, '", 6))
            q = p + 6;
        if (!q)
            continue;
        size_t len = strspn(q, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
        if (len && q[len] == '\'' && (q == p + 6 || q[len + 1] == '}'))
            words_add(ws, q, len);
    }
}

/* The script's text between `from` and the next `until` (the end when none). */
static const char *find(const char *from, const char *what)
{
    const char *p = strstr(from, what);
    CHECK(p != NULL, "call.lua has %s", what);
    return p ? p : from + strlen(from);
}

/* The words an operation's branch of the script answers, with its
 * the_call()'s when it calls it. */
static words op_words(const char *name)
{
    words ws = {.n = 0};
    char tag[48];
    snprintf(tag, sizeof tag, "op == '%s' then", name);
    const char *from = find(IGW_CALL_LUA, tag), *to = strstr(from + 1, "op == '");
    if (!to)
        to = from + strlen(from);
    words_in(from, to, &ws);
    const char *call = strstr(from, "the_call()");
    if (call && call < to) {
        const char *fn = find(IGW_CALL_LUA, "local function the_call()");
        words_in(fn, find(fn, "\nend\n"), &ws);
    }
    return ws;
}

/* The script's `local NAME = <number>`. */
static long lua_const(const char *name)
{
    char tag[48];
    snprintf(tag, sizeof tag, "local %s = ", name);
    const char *p = find(IGW_CALL_LUA, tag);
    return strtol(p + strlen(tag), NULL, 10);
}

/* ---- refusal words ---- */

/* Each word's class, reason and path, as an operation other than leave hears it. */
static void test_refusal_words(void)
{
    igw_call_refusal r = {0};
    CHECK(igw_call_refusal_of("NO_CALL", IGW_CALL_OP_JOIN, &r) &&
          refusal_is(&r, IGW_ERR_NOT_FOUND, "no such live call", "/callId"));
    CHECK(igw_call_refusal_of("ENDED", IGW_CALL_OP_JOIN, &r) &&
          refusal_is(&r, IGW_ERR_NOT_FOUND, "the call has ended", "/callId"));
    CHECK(igw_call_refusal_of("NOT_LIVE", IGW_CALL_OP_HEARTBEAT, &r) &&
          refusal_is(&r, IGW_ERR_PERMISSION, "you are not a live member of the call", ""));
    CHECK(igw_call_refusal_of("TARGET_NOT_LIVE", IGW_CALL_OP_READ, &r) &&
          refusal_is(&r, IGW_ERR_NOT_FOUND, "the member is not live in the call", "/targetUserID"));
    CHECK(igw_call_refusal_of("NOT_INITIATOR", IGW_CALL_OP_SET, &r) &&
          refusal_is(&r, IGW_ERR_PERMISSION, "only the call's original initiator may do this", ""));
    CHECK(igw_call_refusal_of("EPOCH", IGW_CALL_OP_SET, &r) &&
          refusal_is(&r, IGW_ERR_PARAMETER, "the member re-entered the call since it was read; read again",
                     "/targetUserID"));
    CHECK(igw_call_refusal_of("REVISION", IGW_CALL_OP_SET, &r) &&
          refusal_is(&r, IGW_ERR_PARAMETER, "stale expectedRevision; read the record again", "/expectedRevision"));
    CHECK(igw_call_refusal_of("CALL_FULL", IGW_CALL_OP_JOIN, &r) && r.cls == IGW_ERR_CAPACITY && same(r.path, ""));
    CHECK(igw_call_refusal_of("NONE", IGW_CALL_OP_RECEIPT, &r) && refusal_is(&r, IGW_ERR_NOT_FOUND, "no receipt", ""));
}

/* Leave's target words point at its own fields, not a route's body. */
static void test_refusal_leave(void)
{
    igw_call_refusal r = {0};
    CHECK(igw_call_refusal_of("TARGET_NOT_LIVE", IGW_CALL_OP_LEAVE, &r) && same(r.path, "/participantId"));
    CHECK(igw_call_refusal_of("EPOCH", IGW_CALL_OP_LEAVE, &r) &&
          refusal_is(&r, IGW_ERR_PARAMETER, "stale expectedMemberEpoch: the member re-entered the call",
                     "/expectedMemberEpoch"));
    CHECK(igw_call_refusal_of("FULL", IGW_CALL_OP_LEAVE, &r) &&
          refusal_is(&r, IGW_ERR_CAPACITY, "the call's leave receipts are full", ""));
}

/* A word the runtime does not know is internal, never a client's fault. */
static void test_refusal_unknown(void)
{
    igw_call_refusal r = {0};
    static const char *const odd[] = {"EXISTS", "BAD_OP", "", "no_call", "NO_CALL ", "OK"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        CHECK(!igw_call_refusal_of(odd[i], IGW_CALL_OP_JOIN, &r), "%s", odd[i]);
        CHECK(refusal_is(&r, IGW_ERR_INTERNAL, "the conference runtime failed", ""), "%s", odd[i]);
    }
}

/* Every refusal word in call.lua is mapped, but the two that mean a bug
 * or a collision (EXISTS: a new callId taken; BAD_OP). */
static void test_script_words_mapped(void)
{
    words all = {.n = 0};
    words_in(IGW_CALL_LUA, IGW_CALL_LUA + strlen(IGW_CALL_LUA), &all);
    CHECK(all.n >= 12, "%d words found in call.lua", all.n);
    for (int i = 0; i < all.n; i++) {
        igw_call_refusal r = {0};
        bool internal = same(all.w[i], "EXISTS") || same(all.w[i], "BAD_OP");
        CHECK(igw_call_refusal_of(all.w[i], IGW_CALL_OP_LEAVE, &r) == !internal, "%s", all.w[i]);
        CHECK(igw_call_refusal_of(all.w[i], IGW_CALL_OP_SET, &r) == !internal, "%s", all.w[i]);
    }
}

/* The script's bounds are the runtime's, and the full call's reason names its bound. */
static void test_script_bounds(void)
{
    CHECK(lua_const("RCPT_MAX") == IGW_CALL_RECEIPTS_MAX, "%ld", lua_const("RCPT_MAX"));
    CHECK(lua_const("LIVE_MAX") == IGW_CALL_MEMBERS_MAX, "%ld", lua_const("LIVE_MAX"));
    CHECK(lua_const("GRANT_MS") == IGW_CALL_GRANT_MS, "%ld", lua_const("GRANT_MS"));
    igw_call_refusal r = {0};
    char bound[16];
    snprintf(bound, sizeof bound, "(%d)", IGW_CALL_MEMBERS_MAX);
    CHECK(igw_call_refusal_of("CALL_FULL", IGW_CALL_OP_JOIN, &r) && strstr(r.reason, bound), "%s", r.reason);
    words join = op_words("join"), leave = op_words("leave");
    bool full = false, rcpt = false;
    for (int i = 0; i < join.n; i++)
        full = full || same(join.w[i], "CALL_FULL");
    for (int i = 0; i < leave.n; i++)
        rcpt = rcpt || same(leave.w[i], "FULL");
    CHECK(full && rcpt); /* the bounds are enforced where the words say */
}

/* ---- the routes' contracts ---- */

static bool declared(igw_route_id route, int cls)
{
    if (cls == IGW_ERR_INTERNAL) /* always allowed (http.c's contract check) */
        return true;
    for (uint32_t i = 0; i < igw_routes[route].nerrors; i++)
        if (igw_routes[route].errors[i] == cls)
            return true;
    return false;
}

/* Every answer an operation can give on its steps: the script's words of
 * its peek and its act, the peek's and the checks' own refusals, and a
 * dependency failing before or after sending. */
static void check_contract(igw_route_id route, igw_call_op op, const char *script_op)
{
    igw_call_refusal r = {0};
    const char *name = igw_routes[route].name;
    for (int step = igw_call_first_step(op); step <= IGW_CALL_STEP_ACT; step++) {
        for (int sent = 0; sent < 2; sent++) {
            igw_call_dep_refusal(op, (igw_call_step)step, sent, &r);
            CHECK(declared(route, r.cls), "%s: %s at step %d", name, igw_error_classes[r.cls].name, step);
        }
        for (int ok = 0; ok < 2; ok++)
            if (igw_call_check_refusal(op, (igw_call_step)step, ok, &r))
                CHECK(declared(route, r.cls), "%s: check at step %d: %s", name, step, igw_error_classes[r.cls].name);
    }
    words ws = {.n = 0};
    if (igw_call_first_step(op) == IGW_CALL_STEP_PEEK) {
        ws = op_words("peek");
        if (igw_call_peek_refuses(op, false, &r))
            CHECK(declared(route, r.cls), "%s: peek: %s", name, igw_error_classes[r.cls].name);
    }
    if (igw_call_after_group(op) == IGW_CALL_STEP_RESERVE) { /* its place under the bounds first */
        words res = op_words("reserve");
        for (int i = 0; i < res.n; i++)
            words_add(&ws, res.w[i], strlen(res.w[i]));
    }
    if (script_op) {
        words act = op_words(script_op);
        for (int i = 0; i < act.n; i++)
            words_add(&ws, act.w[i], strlen(act.w[i]));
    }
    for (int i = 0; i < ws.n; i++) {
        igw_call_refusal_of(ws.w[i], op, &r);
        CHECK(declared(route, r.cls), "%s: %s answers %s", name, ws.w[i], igw_error_classes[r.cls].name);
    }
}

/* The stand-in's routes answer only classes their schema declares. */
static void test_standin_contracts(void)
{
    check_contract(IGW_ROUTE_STANDIN_GROUP_CREATE, IGW_CALL_OP_GROUP, NULL);
    check_contract(IGW_ROUTE_STANDIN_CALL_START, IGW_CALL_OP_START, "start");
    check_contract(IGW_ROUTE_STANDIN_CALL_JOIN, IGW_CALL_OP_JOIN, "join");
    check_contract(IGW_ROUTE_STANDIN_CALL_HEARTBEAT, IGW_CALL_OP_HEARTBEAT, "heartbeat");
    check_contract(IGW_ROUTE_STANDIN_CALL_HANGUP, IGW_CALL_OP_HANGUP, "hangup");
    check_contract(IGW_ROUTE_STANDIN_CALL_ROSTER, IGW_CALL_OP_ROSTER, "roster");
}

/* /talk/audio-access's read and set answer only its declared classes. */
static void test_audio_contract(void)
{
    check_contract(IGW_ROUTE_TALK_AUDIO_ACCESS, IGW_CALL_OP_READ, "audio_read");
    check_contract(IGW_ROUTE_TALK_AUDIO_ACCESS, IGW_CALL_OP_SET, "audio_set");
}

/* ---- steps and dependencies ---- */

/* The writes: those whose lost answer leaves an unknown outcome. */
static void test_writes(void)
{
    static const igw_call_op w[] = {IGW_CALL_OP_GROUP, IGW_CALL_OP_START, IGW_CALL_OP_JOIN, IGW_CALL_OP_HANGUP,
                                    IGW_CALL_OP_SET, IGW_CALL_OP_LEAVE};
    int n = 0;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        CHECK(igw_call_op_writes(w[i]), "op %d", w[i]);
    for (int op = 0; op < IGW_CALL_OPS; op++)
        n += igw_call_op_writes((igw_call_op)op);
    CHECK(n == 6, "%d writes", n);
    CHECK(!igw_call_op_writes(IGW_CALL_OP_HEARTBEAT) && !igw_call_op_writes(IGW_CALL_OP_READ));
}

/* Peek before the group check for join, roster and the audio record; the group first for start. */
static void test_first_step(void)
{
    CHECK(igw_call_first_step(IGW_CALL_OP_JOIN) == IGW_CALL_STEP_PEEK);
    CHECK(igw_call_first_step(IGW_CALL_OP_ROSTER) == IGW_CALL_STEP_PEEK);
    CHECK(igw_call_first_step(IGW_CALL_OP_READ) == IGW_CALL_STEP_PEEK);
    CHECK(igw_call_first_step(IGW_CALL_OP_SET) == IGW_CALL_STEP_PEEK);
    CHECK(igw_call_first_step(IGW_CALL_OP_START) == IGW_CALL_STEP_GROUP);
    CHECK(igw_call_first_step(IGW_CALL_OP_HEARTBEAT) == IGW_CALL_STEP_ACT);
    CHECK(igw_call_first_step(IGW_CALL_OP_HANGUP) == IGW_CALL_STEP_ACT);
    CHECK(igw_call_first_step(IGW_CALL_OP_LEAVE) == IGW_CALL_STEP_ACT);
    CHECK(igw_call_first_step(IGW_CALL_OP_RECEIPT) == IGW_CALL_STEP_ACT);
    CHECK(igw_call_first_step(IGW_CALL_OP_GROUP) == IGW_CALL_STEP_ACT);
}

/* The audio record's peek reads the target; the others the caller. A set
 * whose target is not live stops at the peek. */
static void test_peek(void)
{
    igw_call_refusal r = {0};
    CHECK(igw_call_peek_user(IGW_CALL_OP_SET, 7, 9) == 9 && igw_call_peek_user(IGW_CALL_OP_READ, 7, 9) == 9);
    CHECK(igw_call_peek_user(IGW_CALL_OP_JOIN, 7, 9) == 7 && igw_call_peek_user(IGW_CALL_OP_ROSTER, 7, 0) == 7);
    CHECK(igw_call_peek_refuses(IGW_CALL_OP_SET, false, &r) &&
          refusal_is(&r, IGW_ERR_NOT_FOUND, "the member is not live in the call", "/targetUserID"));
    CHECK(!igw_call_peek_refuses(IGW_CALL_OP_SET, true, &r));
    CHECK(!igw_call_peek_refuses(IGW_CALL_OP_READ, false, &r)); /* the script answers that */
    CHECK(!igw_call_peek_refuses(IGW_CALL_OP_JOIN, false, &r));
}

/* The group check refuses permission; a new group's statement, /members. */
static void test_checks(void)
{
    igw_call_refusal r = {0};
    CHECK(igw_call_check_refusal(IGW_CALL_OP_JOIN, IGW_CALL_STEP_GROUP, false, &r) &&
          refusal_is(&r, IGW_ERR_PERMISSION, "you are not a member of the call's group", ""));
    CHECK(igw_call_check_refusal(IGW_CALL_OP_GROUP, IGW_CALL_STEP_ACT, false, &r) &&
          refusal_is(&r, IGW_ERR_PARAMETER, "every member must be an active user of your enterprise", "/members"));
    CHECK(igw_call_check_refusal(IGW_CALL_OP_GROUP, IGW_CALL_STEP_ACT, true, &r) &&
          refusal_is(&r, IGW_ERR_CAPACITY, "you have created as many groups as you may (im_max_groups_per_user)", ""));
    CHECK(!igw_call_check_refusal(IGW_CALL_OP_JOIN, IGW_CALL_STEP_ACT, false, &r));
    CHECK(!igw_call_check_refusal(IGW_CALL_OP_SET, IGW_CALL_STEP_PEEK, false, &r));
}

/* A start reserves its place under the bounds after the group check; the
 * bounds' words name the setting. */
static void test_bounds(void)
{
    igw_call_refusal r = {0};
    CHECK(igw_call_after_group(IGW_CALL_OP_START) == IGW_CALL_STEP_RESERVE);
    CHECK(igw_call_after_group(IGW_CALL_OP_JOIN) == IGW_CALL_STEP_ACT);
    CHECK(igw_call_refusal_of("USER_CALLS", IGW_CALL_OP_START, &r) && r.cls == IGW_ERR_CAPACITY &&
          strstr(r.reason, "im_max_calls_per_user"));
    CHECK(igw_call_refusal_of("GROUP_CALLS", IGW_CALL_OP_START, &r) && r.cls == IGW_ERR_CAPACITY &&
          strstr(r.reason, "im_max_calls_per_group") && !strcmp(r.path, "/groupId"));
    char g[IGW_CALL_ARG_MAX], u[IGW_CALL_ARG_MAX];
    igw_call_registry_key(g, IGW_CALL_REG_GROUP, "g-1");
    igw_call_registry_key(u, IGW_CALL_REG_USER, "1001");
    CHECK(!strcmp(g, "igw:{im}:calls:g:g-1") && !strcmp(u, "igw:{im}:calls:u:1001")); /* one slot: {im} */
}

/* A sent write's act may have happened; anything else is unavailable. */
static void test_dep_refusal(void)
{
    igw_call_refusal r = {0};
    igw_call_dep_refusal(IGW_CALL_OP_SET, IGW_CALL_STEP_ACT, true, &r);
    CHECK(refusal_is(&r, IGW_ERR_UNKNOWN_OUTCOME, "the conference runtime did not answer; read before retrying", ""));
    igw_call_dep_refusal(IGW_CALL_OP_SET, IGW_CALL_STEP_ACT, false, &r);
    CHECK(refusal_is(&r, IGW_ERR_UNAVAILABLE, "the conference runtime is unavailable; try again later", ""));
    igw_call_dep_refusal(IGW_CALL_OP_SET, IGW_CALL_STEP_PEEK, true, &r);
    CHECK(r.cls == IGW_ERR_UNAVAILABLE);
    igw_call_dep_refusal(IGW_CALL_OP_JOIN, IGW_CALL_STEP_GROUP, true, &r);
    CHECK(r.cls == IGW_ERR_UNAVAILABLE);
    igw_call_dep_refusal(IGW_CALL_OP_ROSTER, IGW_CALL_STEP_ACT, true, &r);
    CHECK(r.cls == IGW_ERR_UNAVAILABLE);
    igw_call_dep_refusal(IGW_CALL_OP_GROUP, IGW_CALL_STEP_ACT, true, &r);
    CHECK(r.cls == IGW_ERR_UNKNOWN_OUTCOME);
}

/* ---- arguments and keys ---- */

/* Ids up to their bounds fit; one byte more does not; absent ones are not judged. */
static void test_ids_fit(void)
{
    char id[IGW_CALL_ARG_MAX + 2];
    memset(id, 'a', sizeof id);
    id[IGW_CALL_ID_MAX] = '\0';
    CHECK(igw_call_ids_fit(id, NULL, NULL));
    id[IGW_CALL_ID_MAX] = 'a';
    id[IGW_CALL_ID_MAX + 1] = '\0';
    CHECK(!igw_call_ids_fit(id, NULL, NULL));
    memset(id, 'g', sizeof id);
    id[IGW_CALL_GROUP_ID_MAX] = '\0';
    CHECK(igw_call_ids_fit(NULL, id, NULL));
    id[IGW_CALL_GROUP_ID_MAX] = 'g';
    id[IGW_CALL_GROUP_ID_MAX + 1] = '\0';
    CHECK(!igw_call_ids_fit(NULL, id, NULL));
    memset(id, 'k', sizeof id);
    id[IGW_CALL_ARG_MAX - 1] = '\0';
    CHECK(igw_call_ids_fit(NULL, NULL, id));
    id[IGW_CALL_ARG_MAX - 1] = 'k';
    id[IGW_CALL_ARG_MAX] = '\0';
    CHECK(!igw_call_ids_fit(NULL, NULL, id));
    CHECK(igw_call_ids_fit(NULL, NULL, NULL) && igw_call_ids_fit("", "", ""));
}

/* A call's four keys share one hash tag (one cluster slot), the longest id's too. */
static void test_keys(void)
{
    char id[IGW_CALL_ID_MAX + 1], k[IGW_CALL_KEYS][IGW_CALL_ARG_MAX];
    memset(id, 'c', IGW_CALL_ID_MAX);
    id[IGW_CALL_ID_MAX] = '\0';
    static const char *const suffix[IGW_CALL_KEYS] = {":meta", ":live", ":mem", ":rcpt"};
    for (int i = 0; i < IGW_CALL_KEYS; i++) {
        igw_call_key(k[i], id, (igw_call_key_kind)i);
        const char *open = strchr(k[i], '{'), *close = strchr(k[i], '}');
        CHECK(open && close && strncmp(k[0], k[i], (size_t)(close - k[i]) + 1) == 0, "%s", k[i]);
        CHECK(close && strcmp(close + 1, suffix[i]) == 0, "%s", k[i]);
        CHECK(strlen(k[i]) < IGW_CALL_ARG_MAX - 1); /* not cut */
    }
    igw_call_key(k[0], "c-1", IGW_CALL_KEY_META);
    CHECK(strcmp(k[0], "igw:{call:c-1}:meta") == 0, "%s", k[0]);
}

/* ---- a group's members and a leave receipt ---- */

/* The creator and the members, ascending, each once. */
static void test_members_literal(void)
{
    char out[IGW_CALL_LITERAL_CAP(IGW_CALL_MEMBERS_MAX)];
    int64_t m[] = {30, 7, 30, 1};
    CHECK(igw_call_members_literal(7, m, 4, out, sizeof out) == 8 && strcmp(out, "{1,7,30}") == 0, "%s", out);
    CHECK(igw_call_members_literal(42, NULL, 0, out, sizeof out) == 4 && strcmp(out, "{42}") == 0, "%s", out);
    int64_t big[] = {9007199254740991, 9007199254740990};
    CHECK(igw_call_members_literal(9007199254740991, big, 2, out, sizeof out) > 0 &&
          strcmp(out, "{9007199254740990,9007199254740991}") == 0, "%s", out);
}

/* More members than a call holds, or a buffer below the cap: nothing written. */
static void test_members_literal_bounds(void)
{
    static int64_t many[IGW_CALL_MEMBERS_MAX + 1];
    static char out[IGW_CALL_LITERAL_CAP(IGW_CALL_MEMBERS_MAX + 1)];
    for (int i = 0; i <= IGW_CALL_MEMBERS_MAX; i++)
        many[i] = 9007199254740991 - i;
    CHECK(igw_call_members_literal(1, many, IGW_CALL_MEMBERS_MAX + 1, out, sizeof out) == 0);
    size_t len = igw_call_members_literal(1, many, IGW_CALL_MEMBERS_MAX, out, IGW_CALL_LITERAL_CAP(IGW_CALL_MEMBERS_MAX));
    CHECK(len > 0 && len < IGW_CALL_LITERAL_CAP(IGW_CALL_MEMBERS_MAX) && out[len] == '\0' && out[len - 1] == '}');
    CHECK(igw_call_members_literal(1, many, 2, out, IGW_CALL_LITERAL_CAP(2) - 1) == 0);
}

/* The receipt's epoch, ended flag and remaining members, ascending. */
static void test_receipt_parse(void)
{
    int64_t rest[8], epoch = 0;
    bool ended = false;
    size_t n = 99;
    CHECK(igw_call_receipt_parse("3 1 5,2,9", &epoch, &ended, rest, 8, &n) == 0);
    CHECK(epoch == 3 && ended && n == 3 && rest[0] == 2 && rest[1] == 5 && rest[2] == 9);
    CHECK(igw_call_receipt_parse("4 0 ", &epoch, &ended, rest, 8, &n) == 0 && epoch == 4 && !ended && n == 0);
    CHECK(igw_call_receipt_parse("2 0", &epoch, &ended, rest, 8, &n) == 0 && n == 0); /* call.lua's empty list */
    CHECK(igw_call_receipt_parse("7 0 11", &epoch, &ended, rest, 8, &n) == 0 && n == 1 && rest[0] == 11);
}

/* Unreadable receipts are refused; the list stops at its cap or at a non-number. */
static void test_receipt_parse_limits(void)
{
    int64_t rest[2], epoch;
    bool ended;
    size_t n;
    CHECK(igw_call_receipt_parse("", &epoch, &ended, rest, 2, &n) == -1);
    CHECK(igw_call_receipt_parse("x 1 2", &epoch, &ended, rest, 2, &n) == -1);
    CHECK(igw_call_receipt_parse("0 1 2", &epoch, &ended, rest, 2, &n) == -1); /* epochs start at 1 */
    CHECK(igw_call_receipt_parse("5", &epoch, &ended, rest, 2, &n) == -1);
    CHECK(igw_call_receipt_parse("5 2 1", &epoch, &ended, rest, 2, &n) == 0 && !ended); /* only 1 is ended */
    CHECK(igw_call_receipt_parse("5 0 9,8,7", &epoch, &ended, rest, 2, &n) == 0 && n == 2 && rest[0] == 8 &&
          rest[1] == 9);
    CHECK(igw_call_receipt_parse("5 0 9,,7", &epoch, &ended, rest, 2, &n) == 0 && n == 1 && rest[0] == 9);
}

int main(void)
{
    static const check_case cases[] = {
        CHECK_CASE(test_refusal_words),       CHECK_CASE(test_refusal_leave),
        CHECK_CASE(test_refusal_unknown),     CHECK_CASE(test_script_words_mapped),
        CHECK_CASE(test_script_bounds),       CHECK_CASE(test_standin_contracts),
        CHECK_CASE(test_audio_contract),      CHECK_CASE(test_writes),
        CHECK_CASE(test_first_step),          CHECK_CASE(test_peek),
        CHECK_CASE(test_checks),              CHECK_CASE(test_dep_refusal),         CHECK_CASE(test_bounds),
        CHECK_CASE(test_ids_fit),             CHECK_CASE(test_keys),
        CHECK_CASE(test_members_literal),     CHECK_CASE(test_members_literal_bounds),
        CHECK_CASE(test_receipt_parse),       CHECK_CASE(test_receipt_parse_limits),
    };
    CHECK_RUN_ALL(cases);
    return check_summary("call_decide_test");
}
