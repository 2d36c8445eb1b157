/* rights.c - see rights.h: live sessions whose holder lost the device end. */
#include "session/rights.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "event/rights.h"
#include "session/decide.h"
#include "session/op.h"
#include "session/session.h"

/* For each live session of this node's epoch: its holder's facts now, and
 * whether its endpoint expired more than the grace ago (nobody moved it to
 * a new one: docs/sessions.md). The partial index of live sessions by
 * owner serves it (never the history). */
enum { RC_NODE, RC_EPOCH, RC_GRACE, RC__N };
enum { RC_COL_SESSION, RC_COL_ACTIVE, RC_COL_OWNER, RC_COL_GRANTED, RC_COL_LAPSED, RC_COL_ENDPOINT };
static const igw_db_stmt st_recheck = {
    "igw_session_rights",
    "SELECT s.session_id, " IGW_SQL_HOLDER_ACTIVE("s.enterprise_id", "s.user_id") ", "
    "       COALESCE(" IGW_SQL_USER_OWNS("d", "s.user_id") ", false), "
    "       d.product_id IS NOT NULL AND " IGW_SQL_USER_GRANTED("d", "s.user_id") ", "
    "       COALESCE((SELECT p.expires_at_ms + $3::bigint <= " IGW_SQL_NOW_MS " FROM endpoints p "
    "                 WHERE p.endpoint_id = s.endpoint_id), true), s.endpoint_id "
    "FROM sessions s LEFT JOIN devices d ON d.product_id = s.product_id AND d.device_name = s.device_name "
    "                                   AND d.enterprise_id = s.enterprise_id "
    "WHERE s.owner_node = $1::text AND s.owner_epoch = $2::bigint AND s.state <> 'ended'",
    RC__N};

static void recheck(igw_engine *e);

static void on_notify(void *arg, const char *channel, const char *payload)
{
    (void)channel; /* NULL when the connection became ready: changes may have been missed */
    (void)payload; /* which row changed: every live session is checked anyway */
    live_rights_changed(arg);
}

int live_rights_listen(igw_engine *e)
{
    return igw_db_listen(e->db, IGW_RIGHTS_CHANNEL, on_notify, e);
}

static void on_recheck(void *arg, const PGresult *res, const char *err)
{
    igw_engine *e = arg;
    e->rights_busy = false;
    if (err) /* the next notification, connection or period tries again */
        igw_log(IGW_LOG_WARN, NULL, "session: rights not checked: %s", err);
    else {
        unsigned ended = 0;
        for (int i = 0, n = PQntuples(res); i < n; i++) {
            live_session *s = live_session_find(e, PQgetvalue(res, i, RC_COL_SESSION));
            live_holder_facts f = {.active = igw_db_true(res, i, RC_COL_ACTIVE),
                                   .owner = igw_db_true(res, i, RC_COL_OWNER),
                                   .granted = igw_db_true(res, i, RC_COL_GRANTED)};
            if (!s)
                continue;
            /* (a session moved since the row was read is judged by its next check) */
            if (igw_db_true(res, i, RC_COL_LAPSED) && strcmp(PQgetvalue(res, i, RC_COL_ENDPOINT), s->endpoint) == 0) {
                igw_log(IGW_LOG_INFO, NULL, "session %s: its endpoint %s expired, not renewed within endpoint_grace_ms",
                        s->id, s->endpoint);
                live_session_end(e, s, LIVE_ENDPOINT_EXPIRED);
                continue;
            }
            if (live_rights_hold(s->def->access, &f))
                continue;
            igw_log(IGW_LOG_INFO, NULL, "session %s: user %" PRId64 " lost the device (%s)", s->id, s->user_id,
                    !f.active ? "user or enterprise inactive" : "no ownership or grant");
            live_session_end(e, s, LIVE_RIGHTS_REVOKED);
            ended++;
        }
        if (ended)
            live_add(&e->n_revoked, ended);
    }
    if (e->rights_again) {
        e->rights_again = false;
        recheck(e);
    }
}

static void recheck(igw_engine *e)
{
    int64_t epoch = live_node_epoch(e);
    if (!e->db || !e->sessions || !epoch) /* nothing live here to check */
        return;
    char ep[24], grace[24];
    snprintf(ep, sizeof ep, "%" PRId64, epoch);
    snprintf(grace, sizeof grace, "%u", e->cfg.endpoint_grace_ms);
    const char *v[RC__N] = {[RC_NODE] = e->node_id, [RC_EPOCH] = ep, [RC_GRACE] = grace};
    if (igw_db_exec(e->db, &st_recheck, v, NULL, NULL, on_recheck, e) != 0) {
        e->rights_again = true; /* busy: the next tick tries */
        return;
    }
    e->rights_busy = true;
}

void live_rights_changed(igw_engine *e)
{
    if (e->rights_busy)
        e->rights_again = true;
    else
        recheck(e);
}

void live_rights_tick(igw_engine *e, int64_t now_ms)
{
    if (e->rights_again && !e->rights_busy) {
        e->rights_again = false;
        recheck(e);
    }
    if (!e->cfg.rights_recheck_ms || now_ms < e->rights_next_ms)
        return;
    e->rights_next_ms = now_ms + e->cfg.rights_recheck_ms;
    live_rights_changed(e);
}
