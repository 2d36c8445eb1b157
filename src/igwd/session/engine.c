/* engine.c - see engine.h. */
#include "session/engine.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <h2o.h>

#include "api.h"
#include "core/log.h"
#include "core/loop.h"

struct igw_engine {
    igw_loop *loop;
    igw_media *media;       /* NULL: no media */
    igw_media_config media_cfg;
    h2o_socket_t *events;   /* a dup of the core's event fd, DONT_READ: the core reads it */
    char fingerprint[160];
    char start_err[256];    /* the loop's init failure, for the caller */
    _Atomic uint64_t counts[IGW_ENGINE_EVENT_KINDS];
};

/* Single writer (the engine's loop): a relaxed load + store is enough. */
static void bump(_Atomic uint64_t *a)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* The core's events, on the engine's loop. Step 4 hands each to the
 * session or leg named by ev.id; until then they are counted and logged. */
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
    }
}

static int engine_init(void *arg, struct st_h2o_evloop_t *loop)
{
    igw_engine *e = arg;
    if (e->media_cfg.threads == 0)
        return 0;
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
    return 0;
}

static void engine_fini(void *arg)
{
    igw_engine *e = arg;
    if (e->events) {
        h2o_socket_read_stop(e->events);
        h2o_socket_close(e->events); /* closes the dup; the loop's last turns free it */
        e->events = NULL;
    }
    igw_media_free(e->media);
    e->media = NULL;
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

/* On the loop. No leg is open on this node yet (build step 4 opens them):
 * every leg a device names is unknown to it. */
static void on_uplink(void *arg)
{
    uplink_msg *m = arg;
    uplink_answer(m, IGW_ERR_NOT_FOUND, "unknown session");
}

static char *put(char **at, igw_str s)
{
    char *p = *at;
    if (s.len)
        memcpy(p, s.ptr, s.len);
    p[s.len] = '\0';
    *at += s.len + 1;
    return p;
}

int igw_engine_uplink_submit(igw_engine *e, const igw_engine_uplink *u, const igw_engine_back *back,
                             igw_engine_answer_cb done, void *arg)
{
    size_t pl = strlen(u->product_id), dl = strlen(u->device_name);
    size_t need = pl + dl + u->method.len + u->msg_token.len + u->session_id.len + u->params.len + 6;
    uplink_msg *m = calloc(1, sizeof *m + need);
    if (!m)
        return -1;
    m->e = e;
    m->back = *back;
    m->done = done;
    m->arg = arg;
    char *at = m->buf;
    m->u.product_id = put(&at, (igw_str){u->product_id, pl});
    m->u.device_name = put(&at, (igw_str){u->device_name, dl});
    m->u.method = (igw_str){put(&at, u->method), u->method.len};
    m->u.msg_token = (igw_str){put(&at, u->msg_token), u->msg_token.len};
    m->u.session_id = (igw_str){put(&at, u->session_id), u->session_id.len};
    m->u.params = u->params.ptr ? (igw_str){put(&at, u->params), u->params.len} : (igw_str){NULL, 0};
    if (igw_loop_post(e->loop, on_uplink, m) != 0) {
        free(m);
        return -1;
    }
    return 0;
}

igw_engine *igw_engine_start(const igw_media_config *media, char *err, size_t errlen)
{
    igw_engine *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (media)
        e->media_cfg = *media; /* else threads 0: no media */
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
}

void igw_engine_stop(igw_engine *e)
{
    if (!e)
        return;
    igw_loop_stop(e->loop, engine_fini, e);
    free(e);
}
