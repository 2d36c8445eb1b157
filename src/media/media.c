/* media.c - the media core's engine: media threads and the public calls,
 * each of which runs its work on the owning media thread
 * (g_main_context_invoke) and waits for it. The peers by id and the event
 * queue are registry.c's; sources and viewers are forward.c's. */
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "core.h"
#include "forward.h"
#include "media.h"
#include "mux.h"
#include "registry.h"

#define TICK_MS 100

/* ---- events ---- */

const char *igw_media_event_name(igw_media_event_kind kind)
{
    switch (kind) {
    case IGW_MEDIA_EV_ICE_CONNECTED: return "ice-connected";
    case IGW_MEDIA_EV_ICE_FAILED: return "ice-failed";
    case IGW_MEDIA_EV_DTLS_CONNECTED: return "dtls-connected";
    case IGW_MEDIA_EV_DTLS_FAILED: return "dtls-failed";
    case IGW_MEDIA_EV_FIRST_PACKET: return "first-packet";
    case IGW_MEDIA_EV_KEYFRAME: return "keyframe";
    case IGW_MEDIA_EV_CLOSED: return "closed";
    case IGW_MEDIA_EV_FRAME: return "frame";
    }
    return "unknown";
}

int igw_media_event_fd(igw_media *m)
{
    return m->efd;
}

bool igw_media_event_next(igw_media *m, igw_media_event *out)
{
    return igw_registry_take(m, out);
}

static igw_node *node_here(igw_mthread *t, const char *id)
{
    return igw_registry_here(t, id, NULL);
}

/* ---- calls onto a media thread ---- */

typedef struct call call;
typedef igw_media_rc (*call_fn)(igw_mthread *t, call *c);

struct call {
    call_fn      fn;
    GMutex       mu;
    GCond        cv;
    bool         done;
    igw_media_rc rc;
    /* arguments, as the operation needs them */
    const char  *id, *source_id, *reason, *addr, *profile;
    uint32_t     revision;
    bool         check_rev; /* close: only this revision */
    bool         paused, allowed;
    unsigned     flags;              /* viewer offer: IGW_MEDIA_VIEWER_* */
    const igw_sdp *sdp;
    char        *out;
    size_t       cap;
    uint16_t     port, *bound;
    uint8_t      video_pt, audio_pt;
    int          kinds, trigger, *state;
    igw_media_stats *stats;
    char        *err;
    size_t       errlen;
};

typedef struct call_box {
    call        *c;
    igw_mthread *t;
} call_box;

static gboolean call_box_run(gpointer ud)
{
    call_box *b = ud;
    call *c = b->c;
    igw_media_rc rc = c->fn(b->t, c);
    g_mutex_lock(&c->mu);
    c->rc = rc;
    c->done = true;
    g_cond_signal(&c->cv);
    g_mutex_unlock(&c->mu);
    return G_SOURCE_REMOVE;
}

/* Set on media threads: the public calls are not for them (a call onto the
 * own thread would run inside a peer callback, one onto another could wait
 * on a thread that waits back). */
static _Thread_local bool on_media_thread;

static igw_media_rc call_on(igw_mthread *t, call *c)
{
    if (on_media_thread) {
        g_critical("igw-media: public call from a media thread refused");
        if (c->err)
            snprintf(c->err, c->errlen, "called from a media thread");
        return IGW_MEDIA_EFAIL;
    }
    call_box b = {c, t};
    g_mutex_init(&c->mu);
    g_cond_init(&c->cv);
    c->done = false;
    g_main_context_invoke(t->ctx, call_box_run, &b);
    g_mutex_lock(&c->mu);
    while (!c->done)
        g_cond_wait(&c->cv, &c->mu);
    g_mutex_unlock(&c->mu);
    g_mutex_clear(&c->mu);
    g_cond_clear(&c->cv);
    return c->rc;
}

static bool id_ok(const char *id, char *err, size_t errlen)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > IGW_MEDIA_ID_MAX) {
        snprintf(err, errlen, "id must be 1..%d bytes", IGW_MEDIA_ID_MAX);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e) {
            snprintf(err, errlen, "id must be printable ASCII without spaces");
            return false;
        }
    return true;
}

/* Parses and checks a peer's description on the caller's thread. */
static igw_sdp *parse_remote(const char *text, size_t len, char *err, size_t errlen)
{
    igw_sdp *sdp = g_new0(igw_sdp, 1);
    char why[160];
    if (igw_sdp_parse(text, len, sdp, why, sizeof why) != 0) {
        snprintf(err, errlen, "bad SDP: %s", why);
        g_free(sdp);
        return NULL;
    }
    if (igw_sdp_check_webrtc(sdp, why, sizeof why) != 0) {
        snprintf(err, errlen, "unusable SDP: %s", why);
        g_free(sdp);
        return NULL;
    }
    return sdp;
}

/* A quick refusal on the caller's thread: an existing peer under id with the
 * same or a newer revision blocks a new generation. The media thread checks
 * again and supersedes an older one in the same turn (igw_fwd_* commit). */
static igw_media_rc precheck(igw_media *m, const char *id, uint32_t rev, bool want_source, char *err, size_t errlen)
{
    uint32_t have;
    bool is_source;
    if (!igw_registry_lookup(m, id, &have, &is_source))
        return IGW_MEDIA_OK;
    if (is_source != want_source) {
        snprintf(err, errlen, "id %s names a %s", id, is_source ? "source" : "viewer");
        return IGW_MEDIA_EINVAL;
    }
    if (rev <= have) {
        snprintf(err, errlen, "mediaRevision %u is not newer than %u", rev, have);
        return IGW_MEDIA_ESTALE;
    }
    return IGW_MEDIA_OK;
}

static igw_media_rc op_close(igw_mthread *t, call *c);

/* ---- sources ---- */

static igw_media_rc op_source_offer(igw_mthread *t, call *c)
{
    return igw_fwd_source_offer(t, c->id, c->revision, c->sdp, c->out, c->cap, c->err, c->errlen);
}

igw_media_rc igw_media_source_offer(igw_media *m, const char *source_id, uint32_t revision, const char *offer,
                                    size_t len, char *answer, size_t cap, char *err, size_t errlen)
{
    if (!id_ok(source_id, err, errlen))
        return IGW_MEDIA_EINVAL;
    igw_sdp *sdp = parse_remote(offer, len, err, errlen);
    if (!sdp)
        return IGW_MEDIA_EINVAL;
    igw_media_rc rc = precheck(m, source_id, revision, true, err, errlen);
    if (rc == IGW_MEDIA_OK) {
        /* A new generation goes where the old one is, so that it replaces it in one turn. */
        igw_mthread *t = igw_registry_lookup(m, source_id, NULL, NULL);
        g_mutex_lock(&m->lock);
        if (!t)
            t = &m->threads[m->next_thread++ % m->nthreads];
        g_mutex_unlock(&m->lock);
        call c = {.fn = op_source_offer, .id = source_id, .revision = revision, .sdp = sdp, .out = answer,
                  .cap = cap, .err = err, .errlen = errlen};
        rc = call_on(t, &c);
    }
    g_free(sdp);
    return rc;
}

static igw_media_rc op_source_rtp(igw_mthread *t, call *c)
{
    return igw_fwd_source_rtp(t, c->id, c->addr, c->port, c->video_pt, c->profile, c->audio_pt, c->bound, c->err,
                              c->errlen);
}

igw_media_rc igw_media_source_rtp(igw_media *m, const char *source_id, const char *addr, uint16_t port,
                                  uint8_t video_pt, const char *h264_profile, uint8_t audio_pt, uint16_t *bound,
                                  char *err, size_t errlen)
{
    if (!id_ok(source_id, err, errlen))
        return IGW_MEDIA_EINVAL;
    if (h264_profile && (strlen(h264_profile) != 6 || strspn(h264_profile, "0123456789abcdefABCDEF") != 6)) {
        snprintf(err, errlen, "profile-level-id must be 6 hex digits");
        return IGW_MEDIA_EINVAL;
    }
    if (igw_registry_lookup(m, source_id, NULL, NULL)) {
        snprintf(err, errlen, "id %s is in use", source_id);
        return IGW_MEDIA_ESTALE;
    }
    g_mutex_lock(&m->lock);
    igw_mthread *t = &m->threads[m->next_thread++ % m->nthreads];
    g_mutex_unlock(&m->lock);
    call c = {.fn = op_source_rtp, .id = source_id, .addr = addr, .port = port, .video_pt = video_pt,
              .profile = h264_profile, .audio_pt = audio_pt, .bound = bound, .err = err, .errlen = errlen};
    return call_on(t, &c);
}

/* ---- viewers ---- */

static igw_media_rc source_here(igw_mthread *t, call *c, igw_node **s)
{
    *s = node_here(t, c->source_id);
    if (!*s || !(*s)->is_source) {
        snprintf(c->err, c->errlen, "no source %s", c->source_id);
        return IGW_MEDIA_ENOENT;
    }
    return IGW_MEDIA_OK;
}

static igw_media_rc op_viewer_offer(igw_mthread *t, call *c)
{
    igw_node *s;
    igw_media_rc rc = source_here(t, c, &s);
    if (rc == IGW_MEDIA_OK)
        rc = igw_fwd_viewer_offer(s, c->id, c->revision, c->flags, c->sdp, c->out, c->cap, c->err, c->errlen);
    return rc;
}

static igw_media_rc op_viewer_make_offer(igw_mthread *t, call *c)
{
    igw_node *s;
    igw_media_rc rc = source_here(t, c, &s);
    if (rc == IGW_MEDIA_OK)
        rc = igw_fwd_viewer_make_offer(s, c->id, c->revision, c->paused, c->out, c->cap, c->err, c->errlen);
    return rc;
}

static igw_media_rc viewer_start(igw_media *m, call *c, const char *source_id, const char *viewer_id)
{
    if (!id_ok(viewer_id, c->err, c->errlen) || !id_ok(source_id, c->err, c->errlen))
        return IGW_MEDIA_EINVAL;
    igw_media_rc rc = precheck(m, viewer_id, c->revision, false, c->err, c->errlen);
    if (rc != IGW_MEDIA_OK)
        return rc;
    bool is_source = false;
    igw_mthread *t = igw_registry_lookup(m, source_id, NULL, &is_source);
    if (!t || !is_source) {
        snprintf(c->err, c->errlen, "no source %s", source_id);
        return IGW_MEDIA_ENOENT;
    }
    /* An older generation watching a source on another thread is closed
     * first (the rare case: moving a viewer between sources). */
    uint32_t have;
    igw_mthread *old = igw_registry_lookup(m, viewer_id, &have, NULL);
    if (old && old != t) {
        call cl = {.fn = op_close, .id = viewer_id, .reason = "superseded by a newer mediaRevision",
                   .check_rev = true, .revision = have};
        (void)call_on(old, &cl);
    }
    c->id = viewer_id;
    c->source_id = source_id;
    return call_on(t, c);
}

igw_media_rc igw_media_viewer_offer(igw_media *m, const char *source_id, const char *viewer_id, uint32_t revision,
                                    unsigned flags, const char *offer, size_t len, char *answer, size_t cap,
                                    char *err, size_t errlen)
{
    igw_sdp *sdp = parse_remote(offer, len, err, errlen);
    if (!sdp)
        return IGW_MEDIA_EINVAL;
    call c = {.fn = op_viewer_offer, .revision = revision, .flags = flags, .sdp = sdp, .out = answer, .cap = cap,
              .err = err, .errlen = errlen};
    igw_media_rc rc = viewer_start(m, &c, source_id, viewer_id);
    g_free(sdp);
    return rc;
}

igw_media_rc igw_media_viewer_make_offer(igw_media *m, const char *source_id, const char *viewer_id,
                                         uint32_t revision, bool start_paused, char *offer, size_t cap, char *err,
                                         size_t errlen)
{
    call c = {.fn = op_viewer_make_offer, .revision = revision, .paused = start_paused, .out = offer, .cap = cap,
              .err = err, .errlen = errlen};
    return viewer_start(m, &c, source_id, viewer_id);
}

/* Runs fn on the thread of an existing viewer whose revision must equal rev. */
static igw_media_rc viewer_op(igw_media *m, const char *viewer_id, uint32_t rev, call *c)
{
    if (!id_ok(viewer_id, c->err, c->errlen))
        return IGW_MEDIA_EINVAL;
    c->id = viewer_id;
    c->revision = rev;
    igw_mthread *t = igw_registry_lookup(m, viewer_id, NULL, NULL);
    if (!t) {
        snprintf(c->err, c->errlen, "no viewer %s", viewer_id);
        return IGW_MEDIA_ENOENT;
    }
    return call_on(t, c);
}

static igw_media_rc viewer_here(igw_mthread *t, call *c, igw_node **v)
{
    *v = node_here(t, c->id);
    if (!*v || (*v)->is_source) {
        snprintf(c->err, c->errlen, "no viewer %s", c->id);
        return IGW_MEDIA_ENOENT;
    }
    if ((*v)->revision != c->revision) {
        snprintf(c->err, c->errlen, "mediaRevision %u is not the current %u", c->revision, (*v)->revision);
        return IGW_MEDIA_ESTALE;
    }
    return IGW_MEDIA_OK;
}

static igw_media_rc op_viewer_answer(igw_mthread *t, call *c)
{
    igw_node *v;
    igw_media_rc rc = viewer_here(t, c, &v);
    return rc == IGW_MEDIA_OK ? igw_fwd_viewer_answer(v, c->sdp, c->err, c->errlen) : rc;
}

igw_media_rc igw_media_viewer_answer(igw_media *m, const char *viewer_id, uint32_t revision, const char *answer,
                                     size_t len, char *err, size_t errlen)
{
    igw_sdp *sdp = parse_remote(answer, len, err, errlen);
    if (!sdp)
        return IGW_MEDIA_EINVAL;
    call c = {.fn = op_viewer_answer, .sdp = sdp, .err = err, .errlen = errlen};
    igw_media_rc rc = viewer_op(m, viewer_id, revision, &c);
    g_free(sdp);
    return rc;
}

/* The injected failure of a barrier (igw_media_config.fault_barrier). */
static igw_media_rc fault(igw_mthread *t, call *c)
{
    if (!t->m->cfg.fault_barrier)
        return IGW_MEDIA_OK;
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "fault injected (fault_barrier)");
    return IGW_MEDIA_EFAIL;
}

static igw_media_rc op_viewer_track(igw_mthread *t, call *c)
{
    igw_node *v;
    igw_media_rc rc = viewer_here(t, c, &v);
    if (rc == IGW_MEDIA_OK)
        rc = fault(t, c);
    return rc == IGW_MEDIA_OK ? igw_fwd_viewer_track(v, c->kinds, c->trigger, c->state, c->err, c->errlen) : rc;
}

igw_media_rc igw_media_viewer_track(igw_media *m, const char *viewer_id, uint32_t revision, igw_media_kinds kinds,
                                    int trigger, int *state, char *err, size_t errlen)
{
    call c = {.fn = op_viewer_track, .kinds = (int)kinds, .trigger = trigger, .state = state, .err = err,
              .errlen = errlen};
    return viewer_op(m, viewer_id, revision, &c);
}

static igw_media_rc op_viewer_publish(igw_mthread *t, call *c)
{
    igw_node *v;
    igw_media_rc rc = viewer_here(t, c, &v);
    if (rc == IGW_MEDIA_OK)
        rc = fault(t, c);
    return rc == IGW_MEDIA_OK ? igw_fwd_viewer_publish(v, c->allowed) : rc;
}

igw_media_rc igw_media_viewer_publish(igw_media *m, const char *viewer_id, uint32_t revision, bool allowed, char *err,
                                      size_t errlen)
{
    call c = {.fn = op_viewer_publish, .allowed = allowed, .err = err, .errlen = errlen};
    return viewer_op(m, viewer_id, revision, &c);
}

static igw_media_rc op_viewer_tap(igw_mthread *t, call *c)
{
    igw_node *v;
    igw_media_rc rc = viewer_here(t, c, &v);
    return rc == IGW_MEDIA_OK ? igw_fwd_viewer_tap(v, c->addr, c->port, c->allowed, c->err, c->errlen) : rc;
}

igw_media_rc igw_media_viewer_tap(igw_media *m, const char *viewer_id, uint32_t revision, const char *addr,
                                  uint16_t port, bool on, char *err, size_t errlen)
{
    call c = {.fn = op_viewer_tap, .addr = addr, .port = port, .allowed = on, .err = err, .errlen = errlen};
    return viewer_op(m, viewer_id, revision, &c);
}

static igw_media_rc op_viewer_rtp(igw_mthread *t, call *c)
{
    igw_node *s;
    igw_media_rc rc = source_here(t, c, &s);
    return rc == IGW_MEDIA_OK ? igw_fwd_viewer_rtp(s, c->id, c->addr, c->port, c->err, c->errlen) : rc;
}

igw_media_rc igw_media_viewer_rtp(igw_media *m, const char *source_id, const char *viewer_id, const char *addr,
                                  uint16_t port, char *err, size_t errlen)
{
    if (!addr) {
        snprintf(err, errlen, "no address");
        return IGW_MEDIA_EINVAL;
    }
    call c = {.fn = op_viewer_rtp, .revision = 1, .addr = addr, .port = port, .err = err, .errlen = errlen};
    return viewer_start(m, &c, source_id, viewer_id);
}

static igw_media_rc op_viewer_take(igw_mthread *t, call *c)
{
    igw_node *v;
    igw_media_rc rc = viewer_here(t, c, &v);
    return rc == IGW_MEDIA_OK ? igw_fwd_viewer_take(v, c->err, c->errlen) : rc;
}

igw_media_rc igw_media_viewer_take(igw_media *m, const char *viewer_id, char *err, size_t errlen)
{
    call c = {.fn = op_viewer_take, .err = err, .errlen = errlen};
    return viewer_op(m, viewer_id, 1, &c);
}

/* ---- close and stats ---- */

static igw_media_rc op_close(igw_mthread *t, call *c)
{
    igw_node *n = node_here(t, c->id);
    if (!n || (c->check_rev && n->revision != c->revision))
        return IGW_MEDIA_ENOENT;
    igw_fwd_close(n, c->reason);
    return IGW_MEDIA_OK;
}

igw_media_rc igw_media_close(igw_media *m, const char *id, const char *reason)
{
    if (!id)
        return IGW_MEDIA_EINVAL;
    igw_mthread *t = igw_registry_lookup(m, id, NULL, NULL);
    if (!t)
        return IGW_MEDIA_ENOENT;
    call c = {.fn = op_close, .id = id, .reason = reason ? reason : "closed"};
    return call_on(t, &c);
}

static igw_media_rc op_stats(igw_mthread *t, call *c)
{
    igw_node *n = node_here(t, c->id);
    if (!n)
        return IGW_MEDIA_ENOENT;
    igw_fwd_stats(n, c->stats);
    return IGW_MEDIA_OK;
}

igw_media_rc igw_media_get_stats(igw_media *m, const char *id, igw_media_stats *out)
{
    igw_mthread *t = id ? igw_registry_lookup(m, id, NULL, NULL) : NULL;
    if (!t)
        return IGW_MEDIA_ENOENT;
    call c = {.fn = op_stats, .id = id, .stats = out};
    return call_on(t, &c);
}

void igw_media_socket_stats_get(igw_media *m, igw_media_socket_stats *out)
{
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < m->nthreads; i++)
        for (unsigned k = 0; k < m->threads[i].nmux; k++) {
            igw_mux_stats st;
            igw_mux_stats_get(m->threads[i].mux[k], &st);
            out->checks += st.checks;
            out->checks_refused += st.checks_refused;
            out->data += st.data;
            out->data_unknown += st.data_unknown;
            out->sent += st.sent;
            out->send_batches += st.send_batches;
            out->send_dropped += st.send_dropped;
        }
}

/* ---- threads ---- */

static gboolean tick_cb(gpointer ud)
{
    igw_mthread *t = ud;
    igw_fwd_tick(t, igw_clock_us());
    return G_SOURCE_CONTINUE;
}

static gpointer thread_main(gpointer ud)
{
    igw_mthread *t = ud;
    on_media_thread = true;
    g_main_context_push_thread_default(t->ctx);
    g_main_loop_run(t->loop);
    g_main_context_pop_thread_default(t->ctx);
    return NULL;
}

static igw_media_rc op_close_all(igw_mthread *t, call *c)
{
    (void)c;
    /* Sources first: closing one closes its viewers, wherever they are queued. */
    for (GList *it = t->nodes.head; it;) {
        igw_node *n = it->data;
        it = it->next;
        if (n->is_source) {
            igw_fwd_close(n, "media core stopping");
            it = t->nodes.head;
        }
    }
    while (t->nodes.head)
        igw_fwd_close(t->nodes.head->data, "media core stopping");
    return IGW_MEDIA_OK;
}

static gboolean quit_cb(gpointer ud)
{
    g_main_loop_quit(ud);
    return G_SOURCE_REMOVE;
}

void igw_media_config_defaults(igw_media_config *c)
{
    memset(c, 0, sizeof *c);
    c->threads = 1;
    c->consent_timeout_ms = 10000;
    c->connect_timeout_ms = 20000;
    c->keyframe_min_interval_ms = 1000;
    c->shared_socket = true;
}

/* The thread's shared sockets, one per address, on a port of the range
 * (the first free one) or any. */
static int thread_muxes(igw_media *m, igw_mthread *t, char *err, size_t errlen)
{
    unsigned naddr = m->cfg.naddresses ? m->cfg.naddresses : 1;
    for (unsigned i = 0; i < naddr; i++) {
        const char *addr = m->cfg.naddresses ? m->cfg.addresses[i] : "127.0.0.1";
        unsigned lo = m->cfg.port_min, hi = m->cfg.port_min ? m->cfg.port_max : 0;
        for (unsigned port = lo; !t->mux[i] && port <= hi; port++)
            t->mux[i] = igw_mux_new(t->ctx, addr, (uint16_t)port, err, errlen);
        if (!t->mux[i])
            return -1;
        t->nmux = i + 1;
    }
    return 0;
}

igw_media *igw_media_new(const igw_media_config *cfg, char *err, size_t errlen)
{
    if (cfg->threads < 1 || cfg->threads > 16 || cfg->naddresses > IGW_MEDIA_MAX_ADDRS ||
        cfg->consent_timeout_ms < 500 || cfg->connect_timeout_ms < 500 || cfg->port_min > cfg->port_max) {
        snprintf(err, errlen, "bad media configuration");
        return NULL;
    }
    /* Addresses are IP literals: a name would be looked up per peer, and a
     * typo would only show when the first peer fails to gather. */
    for (unsigned i = 0; i <= cfg->naddresses; i++) {
        const char *a = i < cfg->naddresses ? cfg->addresses[i] : cfg->announced_address;
        GInetAddress *ia = a ? g_inet_address_new_from_string(a) : NULL;
        if (a && !ia) {
            snprintf(err, errlen, "media address %.64s is not an IP address", a);
            return NULL;
        }
        if (ia)
            g_object_unref(ia);
    }
    igw_media *m = g_new0(igw_media, 1);
    m->cfg = *cfg;
    m->addresses = g_new0(char *, IGW_MEDIA_MAX_ADDRS + 1);
    for (unsigned i = 0; i < cfg->naddresses; i++) {
        m->addresses[i] = g_strdup(cfg->addresses[i]);
        m->cfg.addresses[i] = m->addresses[i];
    }
    m->announced = g_strdup(cfg->announced_address);
    m->cfg.announced_address = m->announced;
    g_mutex_init(&m->lock);
    g_queue_init(&m->events);
    m->registry = g_hash_table_new(g_str_hash, g_str_equal);
    m->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (m->efd < 0 || !(m->cert = igw_dtls_cert_new(err, errlen))) {
        if (m->efd < 0)
            snprintf(err, errlen, "eventfd failed");
        igw_media_free(m);
        return NULL;
    }
    m->threads = g_new0(igw_mthread, cfg->threads);
    for (unsigned i = 0; i < cfg->threads; i++) {
        igw_mthread *t = &m->threads[i];
        t->m = m;
        t->index = i;
        t->ctx = g_main_context_new();
        t->loop = g_main_loop_new(t->ctx, FALSE);
        g_queue_init(&t->nodes);
        if (cfg->shared_socket && !cfg->ice_full && thread_muxes(m, t, err, errlen) != 0) {
            for (unsigned k = 0; k < t->nmux; k++)
                igw_mux_free(t->mux[k]);
            g_main_loop_unref(t->loop);
            g_main_context_unref(t->ctx);
            igw_media_free(m);
            return NULL;
        }
        t->tick = g_timeout_source_new(TICK_MS);
        g_source_set_callback(t->tick, tick_cb, t, NULL);
        g_source_attach(t->tick, t->ctx);
        char name[24];
        snprintf(name, sizeof name, "igw-media-%u", i);
        t->thread = g_thread_new(name, thread_main, t);
        m->nthreads = i + 1;
    }
    return m;
}

void igw_media_free(igw_media *m)
{
    if (!m)
        return;
    for (unsigned i = 0; i < m->nthreads; i++) {
        call c = {.fn = op_close_all};
        (void)call_on(&m->threads[i], &c);
    }
    for (unsigned i = 0; i < m->nthreads; i++) {
        igw_mthread *t = &m->threads[i];
        g_main_context_invoke(t->ctx, quit_cb, t->loop);
        g_thread_join(t->thread);
        g_source_destroy(t->tick);
        g_source_unref(t->tick);
        for (unsigned k = 0; k < t->nmux; k++)
            igw_mux_free(t->mux[k]);
        g_main_loop_unref(t->loop);
        g_main_context_unref(t->ctx);
    }
    g_free(m->threads);
    if (m->cert)
        igw_dtls_cert_free(m->cert);
    igw_media_event ev;
    while (igw_media_event_next(m, &ev))
        ;
    if (m->efd >= 0)
        close(m->efd);
    if (m->registry)
        g_hash_table_destroy(m->registry);
    g_mutex_clear(&m->lock);
    for (unsigned i = 0; i < IGW_MEDIA_MAX_ADDRS; i++)
        g_free(m->addresses[i]);
    g_free(m->addresses);
    g_free(m->announced);
    g_free(m);
}

const char *igw_media_fingerprint(const igw_media *m)
{
    return igw_dtls_cert_fp_text(m->cert);
}
