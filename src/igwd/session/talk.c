/* talk.c - what keeps an ipcTalk session true to its call (docs/talk.md,
 * "The media room"): the conference runtime is the authority on who is a
 * live member and who may publish; the engine reads it again for each call
 * with talk sessions on this node, every talk_recheck_ms and at once when
 * told the call changed, and applies it:
 *   - a member no longer live in the join instance its session was opened
 *     in (it left, was removed, lapsed or re-entered) ends that session:
 *     memberLeft; an ended call ends them all: callEnded;
 *   - a changed permission moves the media core's gate at once;
 *   - a permission not confirmed for IGW_CALL_GRANT_MS (the runtime cannot
 *     be read) closes the gate until it is: an allowance is never a lease.
 * Receiving is never touched: muting does not remove receive eligibility.
 * Everything here runs on the engine's loop. */
#include "session/live.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "core/log.h"

/* One read of a call's roster in flight. */
typedef struct recheck {
    igw_engine *e;
    char call_id[IGW_CALL_ID_MAX + 1];
    int64_t ent, user; /* whose view of the roster (a member of the call's group) */
} recheck;

static void set_gate(igw_engine *e, live_session *s, bool allowed)
{
    if (s->publish_allowed == allowed)
        return;
    s->publish_allowed = allowed;
    live_talk_gate(e, s);
    /* Muted: no packet of it is forwarded after the gate call returned;
     * when was its last one (Unix ms; make bench-talk reads it) */
    igw_media_stats st;
    int64_t last = 0;
    if (!allowed && s->offered && e->media && igw_media_get_stats(e->media, s->id, &st) == IGW_MEDIA_OK &&
        st.talk_last_us)
        last = igw_wall_ms() - (int64_t)((igw_clock_us() - st.talk_last_us) / 1000);
    if (allowed)
        igw_log(IGW_LOG_INFO, NULL, "session %s: publish allowed (call %s)", s->id, s->call_id);
    else
        igw_log(IGW_LOG_INFO, NULL, "session %s: publish muted (call %s; its last packet forwarded at %" PRId64 ")",
                s->id, s->call_id, last);
}

void live_talk_gate(igw_engine *e, live_session *s)
{
    if (!s->offered || !e->media)
        return; /* the offer's answer applies it */
    char err[160] = "";
    igw_media_rc rc = igw_media_viewer_publish(e->media, s->id, s->revision, s->publish_allowed, err, sizeof err);
    if (rc != IGW_MEDIA_OK)
        igw_log(IGW_LOG_WARN, NULL, "session %s: gate not set: %s", s->id, err);
}

static void on_roster(void *arg, const igw_call_result *r)
{
    recheck *c = arg;
    igw_engine *e = c->e;
    int64_t now = igw_clock_ms();
    for (live_session *s = e->sessions, *next; s; s = next) {
        next = s->next; /* s may end here */
        if (!s->talk || s->enterprise_id != c->ent || strcmp(s->call_id, c->call_id) != 0)
            continue;
        s->checking = false;
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
        if (!m || m->epoch != s->member_epoch) {
            live_session_end(e, s, "memberLeft");
            continue;
        }
        s->checked_ms = now;
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
    snprintf(c->call_id, sizeof c->call_id, "%s", s->call_id);
    c->ent = s->enterprise_id;
    c->user = s->user_id;
    if (igw_call_roster(e->call, c->ent, c->user, c->call_id, on_roster, c) != 0) {
        free(c);
        return;
    }
    for (live_session *t = e->sessions; t; t = t->next)
        if (t->talk && t->enterprise_id == c->ent && strcmp(t->call_id, c->call_id) == 0)
            t->checking = true;
}

void live_talk_recheck(igw_engine *e, const char *call_id)
{
    if (!e->call)
        return;
    for (live_session *s = e->sessions; s; s = s->next)
        if (s->talk && !s->checking && (!call_id || strcmp(s->call_id, call_id) == 0))
            read_call(e, s);
}

void live_talk_tick(igw_engine *e, int64_t now_ms)
{
    if (!e->call)
        return;
    for (live_session *s = e->sessions; s; s = s->next) {
        if (!s->talk)
            continue;
        if (s->publish_allowed && now_ms - s->checked_ms > IGW_CALL_GRANT_MS + (int64_t)e->cfg.talk_recheck_ms) {
            igw_log(IGW_LOG_WARN, NULL, "session %s: permission not confirmed for %" PRId64 " ms: muted", s->id,
                    now_ms - s->checked_ms);
            set_gate(e, s, false);
        }
        if (!s->checking && now_ms - s->checked_ms >= (int64_t)e->cfg.talk_recheck_ms)
            read_call(e, s);
    }
}
