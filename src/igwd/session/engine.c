/* engine.c - see engine.h. */
#include "session/engine.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <h2o.h>

#include "api.h"
#include "clock.h"
#include "core/log.h"
#include "core/loop.h"
#include "session/forward.h"
#include "session/leg.h"
#include "session/live.h"
#include "session/op.h"
#include "session/processor.h"
#include "session/rights.h"
#include "session/vision.h"
#include "session/hooks.h"
#include "session/session.h"

/* Single writer (the engine's loop): a relaxed load + store is enough. */
static void bump(_Atomic uint64_t *a)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* The core's events, on the engine's loop: each goes to the leg (a
 * source) or the session (a viewer) its id names; a peer the engine no
 * longer holds (closed by it) is only counted. */
static void on_media_events(h2o_socket_t *sock, const char *err)
{
    igw_engine *e = sock->data;
    (void)err; /* an eventfd does not fail; the queue is drained either way */
    igw_media_event ev;
    while (igw_media_event_next(e->media, &ev)) {
        if ((unsigned)ev.kind < IGW_ENGINE_EVENT_KINDS)
            bump(&e->counts[ev.kind]);
        igw_log(IGW_LOG_DEBUG, NULL, "session: media %s %s (revision %u)%s%s", igw_media_event_name(ev.kind), ev.id,
                ev.revision, ev.reason[0] ? ": " : "", ev.reason);
        if (ev.is_source) {
            live_leg *l = live_leg_find(e, ev.id);
            if (l)
                live_leg_media_event(e, l, &ev);
        } else {
            live_session *s = live_session_find(e, ev.id);
            if (s)
                live_session_media(e, s, &ev);
            else /* a processor's own viewer (its eyes), or a peer gone */
                (void)live_processor_media(e, &ev);
        }
    }
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    igw_engine *e = H2O_STRUCT_FROM_MEMBER(igw_engine, tick_entry, entry);
    int64_t now = igw_clock_ms();
    live_tick(e, now);
    live_rights_tick(e, now);
    live_processor_tick(e, now);
    live_forward_tick(e, now);
    h2o_timeout_link(e->evloop, &e->tick, &e->tick_entry);
}

/* A notice of the conference runtime: the call it names is read again
 * (the JSON is only scanned for its callId: the roster read is the truth);
 * payload NULL: the subscription is (re)established, notices may have been
 * missed: every talk call is read again. */
static void on_call_notice(void *arg, const char *payload, size_t len)
{
    igw_engine *e = arg;
    if (!payload) {
        live_fact(e, LIVE_FACT_CALL_CHANGED, NULL);
        return;
    }
    static const char key[] = "\"callId\":\"";
    const char *end = payload + len, *p = payload;
    for (; p + sizeof key - 1 <= end; p++)
        if (memcmp(p, key, sizeof key - 1) == 0)
            break;
    if (p + sizeof key - 1 > end)
        return;
    p += sizeof key - 1;
    const char *q = memchr(p, '"', (size_t)(end - p));
    char id[IGW_CALL_ID_MAX + 1];
    if (!q || q == p || (size_t)(q - p) > IGW_CALL_ID_MAX || memchr(p, '\\', (size_t)(q - p)))
        return; /* an id we never issue (the stand-in's are base64url): nothing of ours */
    memcpy(id, p, (size_t)(q - p));
    id[q - p] = '\0';
    live_fact(e, LIVE_FACT_CALL_CHANGED, id);
}

/* The media core and the watch on its events, stopped (both may be absent). */
static void media_stop(igw_engine *e)
{
    if (e->events) {
        h2o_socket_read_stop(e->events);
        h2o_socket_close(e->events); /* closes the dup; the loop's last turns free it */
        e->events = NULL;
    }
    igw_media_free(e->media);
    e->media = NULL;
}

/* What init made is undone by engine_fini only once init succeeded: each
 * failure below leaves nothing behind (the loop's destroy asserts that no
 * timer is linked). */
static int engine_init(void *arg, struct st_h2o_evloop_t *loop)
{
    igw_engine *e = arg;
    e->evloop = loop;
    if (e->media_cfg.threads) {
        if (!(e->media = igw_media_new(&e->media_cfg, e->start_err, sizeof e->start_err)))
            return -1;
        int fd = dup(igw_media_event_fd(e->media));
        if (fd < 0) {
            snprintf(e->start_err, sizeof e->start_err, "cannot watch the media core's events");
            igw_media_free(e->media);
            e->media = NULL;
            return -1;
        }
        e->events = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
        e->events->data = e;
        h2o_socket_read_start(e->events, on_media_events);
        snprintf(e->fingerprint, sizeof e->fingerprint, "%s", igw_media_fingerprint(e->media));
    }
    if (e->pg_dsn[0] && !(e->db = igw_db_create(loop, e->pg_dsn, e->start_err, sizeof e->start_err))) {
        media_stop(e);
        return -1;
    }
    if (e->db && (live_rights_listen(e) != 0 || live_vision_listen(e) != 0 || live_forward_listen(e) != 0)) {
        /* (right after the create) */
        snprintf(e->start_err, sizeof e->start_err, "out of memory");
        igw_db_destroy(e->db);
        e->db = NULL;
        media_stop(e);
        return -1;
    }
    if (e->db) {
        igw_db_set_deadline(e->db, e->cfg.db_timeout_ms);
        igw_db_set_probe(e->db, e->cfg.probe_interval_ms, e->cfg.check_timeout_ms);
    }
    /* Talk's conference runtime, on connections of the engine's own loop. */
    if (e->db && e->redis_host[0] && e->cfg.im_standin) {
        e->redis = igw_redis_create(loop, e->redis_host, e->cfg.redis_port, e->cfg.check_timeout_ms, e->start_err,
                                    sizeof e->start_err);
        if (e->redis)
            igw_redis_set_probe(e->redis, e->cfg.probe_interval_ms);
        e->notices = e->redis ? igw_redis_subscribe_create(loop, e->redis_host, e->cfg.redis_port,
                                                           e->cfg.check_timeout_ms, IGW_CALL_CHANNEL,
                                                           on_call_notice, e, e->start_err, sizeof e->start_err)
                              : NULL;
        if (e->notices) /* a frozen server is noticed only by probes */
            igw_redis_set_probe(e->notices, e->cfg.probe_interval_ms ? e->cfg.probe_interval_ms : 1000);
        if (!e->notices || !(e->call = igw_call_standin_create(e->db, e->redis, &e->cfg.standin))) {
            igw_redis_destroy(e->notices);
            e->notices = NULL;
            if (!e->start_err[0])
                snprintf(e->start_err, sizeof e->start_err, "out of memory");
            igw_redis_destroy(e->redis);
            e->redis = NULL;
            igw_db_destroy(e->db);
            e->db = NULL;
            media_stop(e);
            return -1;
        }
    }
    igw_jw_init(&e->jw);
    h2o_timeout_init(loop, &e->tick, LIVE_TICK_MS);
    e->tick_entry.cb = on_tick;
    h2o_timeout_link(loop, &e->tick, &e->tick_entry);
    return 0;
}

static void engine_fini(void *arg)
{
    igw_engine *e = arg;
    live_free_all(e); /* the media core's close below ends their peers */
    if (h2o_timeout_is_linked(&e->tick_entry))
        h2o_timeout_unlink(&e->tick_entry);
    h2o_timeout_dispose(e->evloop, &e->tick);
    igw_db_destroy(e->takes);
    e->takes = NULL;
    igw_db_destroy(e->db);
    e->db = NULL;
    live_forward_stop(e); /* after the database's last answers: none waits any more */
    igw_redis_destroy(e->notices);
    e->notices = NULL;
    igw_redis_destroy(e->redis);
    e->redis = NULL;
    igw_call_destroy(e->call); /* after its connections: their failed commands reach it */
    e->call = NULL;
    igw_jw_free(&e->jw);
    media_stop(e);
}

/* ---- device messages on legs -------------------------------------------------- */

typedef struct uplink_msg {
    igw_engine *e;
    igw_engine_back back;
    igw_engine_answer_cb done;
    void *arg;
    igw_engine_uplink u; /* its strings point into buf */
    igw_engine_answer answer;
    char *data; /* the answer's data (owned), or NULL */
    char reason[256]; /* a later answer's reason (device_done) */
    char buf[];
} uplink_msg;

/* Back on the caller's thread. */
static void uplink_deliver(void *arg)
{
    uplink_msg *m = arg;
    m->done(m->arg, &m->answer);
    free(m->data);
    free(m);
}

static void uplink_answer(uplink_msg *m, int cls, const char *reason)
{
    m->answer.cls = cls;
    m->answer.reason = reason;
    m->answer.data = m->data;
    if (m->back.post(m->back.ctx, uplink_deliver, m) != 0) {
        /* The caller's thread is gone or out of memory: its job waits for
         * its own deadline (a worker's drain bound). */
        igw_log(IGW_LOG_ERROR, NULL, "session: cannot answer %s/%s's %.*s", m->u.product_id, m->u.device_name,
                (int)m->u.method.len, m->u.method.ptr);
        free(m->data);
        free(m);
    }
}

/* Keeps a copy of the answer's data (the engine's buffer is reused): 0, or
 * -1 out of memory. */
static int uplink_keep(uplink_msg *m, const char *data, size_t len)
{
    if (!data)
        return 0;
    if (!(m->data = malloc(len + 1)))
        return -1;
    memcpy(m->data, data, len);
    m->data[len] = '\0';
    m->answer.data_len = len;
    return 0;
}

/* A purpose's answer to a device message that names no leg (a ring),
 * now or later. */
static void device_done(void *ctx, int cls, const char *reason, const char *data, size_t len)
{
    uplink_msg *m = ctx;
    snprintf(m->reason, sizeof m->reason, "%s", reason ? reason : "");
    if (uplink_keep(m, data, len) != 0) {
        cls = IGW_ERR_INTERNAL;
        snprintf(m->reason, sizeof m->reason, "out of memory");
    }
    uplink_answer(m, cls, m->reason);
}

/* On the loop: the leg it names answers, or the purpose that takes a
 * message naming no leg. */
static void on_uplink(void *arg)
{
    uplink_msg *m = arg;
    const char *reason = "", *data = NULL;
    size_t len = 0;
    live_leg *ready = NULL;
    igw_engine *e = m->e;
    if (!m->u.session_id.len && live_device_uplink(e, &m->u, device_done, m))
        return;
    if (m->u.session_id.len && !live_uplink_here(e, &m->u)) {
        live_forward_uplink(e, &m->u, device_done, m); /* the node holding its leg answers */
        return;
    }
    int cls = live_uplink(e, &m->u, &reason, &data, &len, &ready);
    if (uplink_keep(m, data, len) != 0) {
        cls = IGW_ERR_INTERNAL;
        reason = "out of memory";
    }
    uplink_answer(m, cls, reason);
    if (ready)
        live_legs_source_ready(e, ready);
}

/* ---- presence ------------------------------------------------------------------ */

typedef struct offline_msg {
    igw_engine *e;
    char pid[LIVE_ID_MAX + 1], dn[LIVE_ID_MAX + 1];
} offline_msg;

static void on_offline(void *arg)
{
    offline_msg *m = arg;
    live_legs_offline(m->e, m->pid, m->dn);
    free(m);
}

int igw_engine_device_offline(igw_engine *e, const char *product_id, const char *device_name)
{
    offline_msg *m = calloc(1, sizeof *m);
    if (!m)
        return -1;
    m->e = e;
    snprintf(m->pid, sizeof m->pid, "%s", product_id);
    snprintf(m->dn, sizeof m->dn, "%s", device_name);
    if (igw_loop_post(e->loop, on_offline, m) != 0) {
        free(m);
        return -1;
    }
    return 0;
}

/* ---- commands ------------------------------------------------------------------- */

typedef struct cmd_msg {
    igw_engine *e;
    igw_engine_cmd c;
    igw_engine_back back;
    igw_engine_cmd_cb done;
    void *arg;
    igw_engine_cmd_answer a;
    char reason[256], path[128], prior[80];
} cmd_msg;

static void cmd_deliver(void *arg)
{
    cmd_msg *m = arg;
    m->done(m->arg, &m->a);
    free(m);
}

/* The engine's answer, copied (the engine's strings do not outlive the
 * turn), then back to the caller's thread. */
static void cmd_answer(void *ctx, const igw_engine_cmd_answer *a)
{
    cmd_msg *m = ctx;
    snprintf(m->reason, sizeof m->reason, "%s", a->reason ? a->reason : "");
    snprintf(m->path, sizeof m->path, "%s", a->path ? a->path : "");
    if (a->prior_fp)
        snprintf(m->prior, sizeof m->prior, "%s", a->prior_fp);
    m->a = (igw_engine_cmd_answer){.cls = a->cls, .reason = m->reason, .path = m->path,
                                   .prior_fp = a->prior_fp ? m->prior : NULL};
    if (m->back.post(m->back.ctx, cmd_deliver, m) != 0) {
        igw_log(IGW_LOG_ERROR, NULL, "session: cannot answer the command %s", m->c.msg_token);
        free(m);
    }
}

static void on_command(void *arg)
{
    cmd_msg *m = arg;
    live_command(m->e, &m->c, cmd_answer, m);
}

int igw_engine_command_submit(igw_engine *e, const igw_engine_cmd *c, const igw_engine_back *back,
                              igw_engine_cmd_cb done, void *arg)
{
    cmd_msg *m = calloc(1, sizeof *m);
    if (!m)
        return -1;
    *m = (cmd_msg){.e = e, .c = *c, .back = *back, .done = done, .arg = arg};
    if (igw_loop_post(e->loop, on_command, m) != 0) {
        free(m);
        return -1;
    }
    return 0;
}

int igw_engine_uplink_submit(igw_engine *e, const igw_engine_uplink *u, const igw_engine_back *back,
                             igw_engine_answer_cb done, void *arg)
{
    uplink_msg *m = calloc(1, sizeof *m + live_uplink_size(u));
    if (!m)
        return -1;
    m->e = e;
    m->back = *back;
    m->done = done;
    m->arg = arg;
    live_uplink_copy(&m->u, m->buf, u);
    if (igw_loop_post(e->loop, on_uplink, m) != 0) {
        free(m);
        return -1;
    }
    return 0;
}

igw_engine *igw_engine_start(const igw_engine_config *cfg, char *err, size_t errlen)
{
    igw_engine *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    e->cfg = *cfg;
    if (cfg->media)
        e->media_cfg = *cfg->media; /* else threads 0: no media */
    e->cfg.media = NULL;
    snprintf(e->node_id, sizeof e->node_id, "%s", cfg->node_id ? cfg->node_id : "");
    snprintf(e->pg_dsn, sizeof e->pg_dsn, "%s", cfg->pg_dsn ? cfg->pg_dsn : "");
    snprintf(e->redis_host, sizeof e->redis_host, "%s", cfg->redis_host ? cfg->redis_host : "");
    e->cfg.node_id = e->node_id;
    e->cfg.pg_dsn = e->pg_dsn;
    e->cfg.redis_host = e->redis_host;
    /* The processor program: the setting, or igw-proc beside igwd. */
    if (cfg->processor_bin && cfg->processor_bin[0]) {
        snprintf(e->processor_bin, sizeof e->processor_bin, "%s", cfg->processor_bin);
    } else {
        char self[IGW_CONFIG_PATH_MAX - 16];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        self[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = '\0';
        snprintf(e->processor_bin, sizeof e->processor_bin, "%s/igw-proc", n > 0 ? self : ".");
    }
    snprintf(e->translation_grammar, sizeof e->translation_grammar, "%s",
             cfg->translation_grammar ? cfg->translation_grammar : "");
    e->cfg.processor_bin = e->processor_bin;
    e->cfg.translation_grammar = e->translation_grammar;
    if (!e->cfg.talk_recheck_ms)
        e->cfg.talk_recheck_ms = 1000;
    if (!e->cfg.max_sessions)
        e->cfg.max_sessions = 1;
    char why[64];
    if (!(e->loop = igw_loop_start("session", engine_init, e, why, sizeof why))) {
        snprintf(err, errlen, "%s", e->start_err[0] ? e->start_err : why);
        free(e);
        return NULL;
    }
    return e;
}

const char *igw_engine_fingerprint(const igw_engine *e)
{
    return e->fingerprint;
}

int igw_engine_post(igw_engine *e, void (*fn)(void *arg), void *arg)
{
    return igw_loop_post(e->loop, fn, arg);
}

void igw_engine_stats_get(const igw_engine *e, igw_engine_stats *out)
{
    memset(out, 0, sizeof *out);
    out->media_threads = e->media_cfg.threads;
    for (unsigned k = 0; k < IGW_ENGINE_EVENT_KINDS; k++)
        out->events[k] = atomic_load_explicit(&e->counts[k], memory_order_relaxed);
    out->invited = atomic_load_explicit(&e->n_invited, memory_order_relaxed);
    out->established = atomic_load_explicit(&e->n_established, memory_order_relaxed);
    out->legs = atomic_load_explicit(&e->n_legs, memory_order_relaxed);
    out->opened = atomic_load_explicit(&e->n_opened, memory_order_relaxed);
    out->ended = atomic_load_explicit(&e->n_ended, memory_order_relaxed);
    out->revoked = atomic_load_explicit(&e->n_revoked, memory_order_relaxed);
    out->ringing = atomic_load_explicit(&e->n_ringing, memory_order_relaxed);
    out->rings = atomic_load_explicit(&e->n_rings, memory_order_relaxed);
    out->rings_answered = atomic_load_explicit(&e->n_rings_answered, memory_order_relaxed);
    out->rings_declined = atomic_load_explicit(&e->n_rings_declined, memory_order_relaxed);
    out->rings_unanswered = atomic_load_explicit(&e->n_rings_unanswered, memory_order_relaxed);
    out->answer_ms_sum = atomic_load_explicit(&e->answer_ms_sum, memory_order_relaxed);
    if (e->media) /* set before the workers serve, cleared after they drained */
        igw_media_socket_stats_get(e->media, &out->sockets);
}

void igw_engine_metrics_write(FILE *f, const igw_engine_stats *s)
{
    fprintf(f,
            "# HELP igw_media_up 1 while the media core runs (media_threads > 0).\n"
            "# TYPE igw_media_up gauge\nigw_media_up %d\n"
            "# HELP igw_media_threads Media threads of the WebRTC core.\n"
            "# TYPE igw_media_threads gauge\nigw_media_threads %u\n"
            "# HELP igw_media_events_total Events of the media core's peers, by kind.\n"
            "# TYPE igw_media_events_total counter\n",
            s->media_threads > 0, s->media_threads);
    for (unsigned k = 0; k < IGW_ENGINE_EVENT_KINDS; k++)
        fprintf(f, "igw_media_events_total{kind=\"%s\"} %llu\n", igw_media_event_name((igw_media_event_kind)k),
                (unsigned long long)s->events[k]);
    const igw_media_socket_stats *k = &s->sockets;
    fprintf(f,
            "# HELP igw_media_socket_checks_total ICE checks on the media threads' shared sockets, by outcome.\n"
            "# TYPE igw_media_socket_checks_total counter\n"
            "igw_media_socket_checks_total{outcome=\"answered\"} %llu\n"
            "igw_media_socket_checks_total{outcome=\"refused\"} %llu\n"
            "# HELP igw_media_socket_received_total Other datagrams on the shared sockets: a peer's, or from no "
            "peer's address.\n"
            "# TYPE igw_media_socket_received_total counter\n"
            "igw_media_socket_received_total{from=\"peer\"} %llu\n"
            "igw_media_socket_received_total{from=\"unknown\"} %llu\n"
            "# HELP igw_media_socket_sent_total Datagrams sent on the shared sockets.\n"
            "# TYPE igw_media_socket_sent_total counter\nigw_media_socket_sent_total %llu\n"
            "# HELP igw_media_socket_send_batches_total sendmmsg rounds of the shared sockets.\n"
            "# TYPE igw_media_socket_send_batches_total counter\nigw_media_socket_send_batches_total %llu\n"
            "# HELP igw_media_socket_send_dropped_total Datagrams the shared sockets did not send (a full socket "
            "buffer, an unreachable address).\n"
            "# TYPE igw_media_socket_send_dropped_total counter\nigw_media_socket_send_dropped_total %llu\n",
            (unsigned long long)(k->checks - k->checks_refused), (unsigned long long)k->checks_refused,
            (unsigned long long)k->data, (unsigned long long)k->data_unknown, (unsigned long long)k->sent,
            (unsigned long long)k->send_batches, (unsigned long long)k->send_dropped);
    fprintf(f,
            "# HELP igw_sessions Live sessions held by this node, by state.\n"
            "# TYPE igw_sessions gauge\nigw_sessions{state=\"ringing\"} %llu\nigw_sessions{state=\"invited\"} %llu\n"
            "igw_sessions{state=\"established\"} %llu\n"
            "# HELP igw_legs Camera legs (upstreams) open on this node.\n# TYPE igw_legs gauge\nigw_legs %llu\n"
            "# HELP igw_sessions_opened_total Sessions this process opened (open, subscribe).\n"
            "# TYPE igw_sessions_opened_total counter\nigw_sessions_opened_total %llu\n"
            "# HELP igw_sessions_ended_total Sessions this process ended.\n"
            "# TYPE igw_sessions_ended_total counter\nigw_sessions_ended_total %llu\n"
            "# HELP igw_sessions_revoked_total Sessions this process ended because their user lost the device.\n"
            "# TYPE igw_sessions_revoked_total counter\nigw_sessions_revoked_total %llu\n",
            (unsigned long long)s->ringing, (unsigned long long)s->invited, (unsigned long long)s->established,
            (unsigned long long)s->legs, (unsigned long long)s->opened, (unsigned long long)s->ended,
            (unsigned long long)s->revoked);
    fprintf(f,
            "# HELP igw_doorbell_rings_total Door-bell rings this process fanned out (a joined ring is not one).\n"
            "# TYPE igw_doorbell_rings_total counter\nigw_doorbell_rings_total %llu\n"
            "# HELP igw_doorbell_rings_ended_total Rings by how their ringing ended.\n"
            "# TYPE igw_doorbell_rings_ended_total counter\n"
            "igw_doorbell_rings_ended_total{outcome=\"answered\"} %llu\n"
            "igw_doorbell_rings_ended_total{outcome=\"declined\"} %llu\n"
            "igw_doorbell_rings_ended_total{outcome=\"unanswered\"} %llu\n"
            "# HELP igw_doorbell_answer_seconds Ring to winning accept of the answered rings.\n"
            "# TYPE igw_doorbell_answer_seconds summary\n"
            "igw_doorbell_answer_seconds_sum %.3f\nigw_doorbell_answer_seconds_count %llu\n",
            (unsigned long long)s->rings, (unsigned long long)s->rings_answered,
            (unsigned long long)s->rings_declined, (unsigned long long)s->rings_unanswered,
            (double)s->answer_ms_sum / 1000.0, (unsigned long long)s->rings_answered);
}

void igw_engine_stop(igw_engine *e)
{
    if (!e)
        return;
    igw_loop_stop(e->loop, engine_fini, e);
    free(e);
}
