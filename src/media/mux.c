/* mux.c - see mux.h. */
#define _GNU_SOURCE /* recvmmsg */
#include "mux.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib-unix.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stun.h"

#define RECV_BATCH 16 /* datagrams read per wake-up */
#define SEND_BATCH 32 /* datagrams per sendmmsg */

struct igw_mux_peer {
    igw_mux *m;
    char ufrag[IGW_MUX_UFRAG_MAX + 1], pwd[IGW_MUX_PWD_MAX + 1];
    const igw_mux_ops *ops;
    void *ud;
    bool selected, nominated;
    struct sockaddr_storage remote;
    socklen_t remote_len;
};

struct igw_mux {
    int fd;
    uint16_t port; /* bound, host order */
    char address[INET6_ADDRSTRLEN];
    GSource *src;
    GHashTable *by_ufrag; /* char * (the peer's own) -> peer */
    GHashTable *by_addr;  /* the peer's remote (its own storage) -> peer */
    /* The counters: written by the mux's thread only, read from any
     * (igw_mux_stats_get), hence relaxed atomics bumped by a plain load
     * and store (no locked instruction on the packet path). */
    struct {
        _Atomic uint64_t checks, checks_refused, data, data_unknown, sent, send_batches, send_dropped;
    } st;
    uint8_t bufs[RECV_BATCH][IGW_MUX_BUF];
    /* Media sent during one turn of the thread's loop (one packet's
     * fan-out, a batch of received ones') leaves in one sendmmsg before
     * the thread polls again, or when the queue is full. */
    GSource *flush_src;
    unsigned nq;
    struct mmsghdr q[SEND_BATCH];
    struct iovec qiov[SEND_BATCH];
    struct sockaddr_storage qto[SEND_BATCH];
    uint8_t qbuf[SEND_BATCH][IGW_MUX_BUF];
};

static void bump(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

/* The flush source: its prepare runs before every poll of the context. */
typedef struct flush_source {
    GSource base;
    igw_mux *m;
} flush_source;

/* The address part of a sockaddr that identifies a 5-tuple on this socket. */
static guint addr_hash(gconstpointer k)
{
    const struct sockaddr_storage *s = k;
    if (s->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)s;
        return (guint)a->sin_addr.s_addr * 2654435761u ^ a->sin_port;
    }
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)s;
    guint h = a->sin6_port;
    for (int i = 0; i < 16; i++)
        h = h * 31u + a->sin6_addr.s6_addr[i];
    return h;
}

static gboolean addr_equal(gconstpointer x, gconstpointer y)
{
    const struct sockaddr_storage *a = x, *b = y;
    if (a->ss_family != b->ss_family)
        return FALSE;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *p = (const struct sockaddr_in *)a, *q = (const struct sockaddr_in *)b;
        return p->sin_port == q->sin_port && p->sin_addr.s_addr == q->sin_addr.s_addr;
    }
    const struct sockaddr_in6 *p = (const struct sockaddr_in6 *)a, *q = (const struct sockaddr_in6 *)b;
    return p->sin6_port == q->sin6_port && memcmp(&p->sin6_addr, &q->sin6_addr, sizeof p->sin6_addr) == 0;
}

/* Answers a check for the peer its USERNAME names; returns that peer when
 * the check passed. */
static igw_mux_peer *check(igw_mux *m, const uint8_t *buf, size_t n, const igw_stun_request *rq,
                           const struct sockaddr_storage *from, socklen_t from_len)
{
    const uint8_t *colon = memchr(rq->username, ':', rq->username_len);
    char ufrag[IGW_MUX_UFRAG_MAX + 1];
    size_t ulen = colon ? (size_t)(colon - rq->username) : 0;
    if (!colon || ulen == 0 || ulen > IGW_MUX_UFRAG_MAX)
        return NULL;
    memcpy(ufrag, rq->username, ulen);
    ufrag[ulen] = '\0';
    igw_mux_peer *p = g_hash_table_lookup(m->by_ufrag, ufrag);
    uint8_t out[IGW_STUN_REPLY_MAX];
    size_t len;
    if (!p)
        return NULL; /* not ours: silence, as for any stray datagram */
    if (!igw_stun_check_integrity(buf, n, p->pwd, strlen(p->pwd))) {
        len = igw_stun_error(out, sizeof out, rq->tid, 401, "Unauthorized", NULL, 0);
        p = NULL;
    } else if (rq->controlled) {
        /* Both sides controlled: a lite agent stays so (RFC 8445 6.1.1),
         * the full one switches on a 487 and checks again, controlling. */
        len = igw_stun_error(out, sizeof out, rq->tid, 487, "Role Conflict", p->pwd, strlen(p->pwd));
        p = NULL;
    } else {
        len = igw_stun_success(out, sizeof out, rq->tid, (const struct sockaddr *)from, NULL, p->pwd, strlen(p->pwd));
    }
    if (len)
        (void)sendto(m->fd, out, len, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)from, from_len);
    return p;
}

static void select_remote(igw_mux_peer *p, const struct sockaddr_storage *from, socklen_t len)
{
    igw_mux *m = p->m;
    if (p->selected && addr_equal(&p->remote, from))
        return;
    if (p->selected)
        g_hash_table_remove(m->by_addr, &p->remote);
    /* Another peer nominated from this address before: the newer wins. */
    igw_mux_peer *old = g_hash_table_lookup(m->by_addr, from);
    if (old) {
        g_hash_table_remove(m->by_addr, from);
        old->selected = old->nominated = false;
    }
    memcpy(&p->remote, from, len);
    p->remote_len = len;
    p->selected = true;
    g_hash_table_insert(m->by_addr, &p->remote, p);
}

static void datagram(igw_mux *m, uint8_t *buf, size_t n, const struct sockaddr_storage *from, socklen_t from_len)
{
    igw_stun_request rq;
    if (igw_stun_maybe(buf, n) && igw_stun_parse_request(buf, n, &rq) == IGW_STUN_OK) {
        bump(&m->st.checks, 1);
        igw_mux_peer *p = check(m, buf, n, &rq, from, from_len);
        if (!p) {
            bump(&m->st.checks_refused, 1);
            return;
        }
        /* A passed check makes its address a valid pair: media may come on
         * it before any nomination (RFC 8445 12.1), so it is selected until
         * one is nominated; a nominated address stays until another is. */
        bool selected = rq.use_candidate || !p->nominated;
        if (selected)
            select_remote(p, from, from_len);
        p->nominated = p->nominated || rq.use_candidate;
        p->ops->on_check(p->ud, p, (const struct sockaddr *)from, from_len, selected);
        return;
    }
    igw_mux_peer *p = g_hash_table_lookup(m->by_addr, from);
    if (!p) {
        bump(&m->st.data_unknown, 1);
        return;
    }
    bump(&m->st.data, 1);
    p->ops->on_data(p->ud, buf, n);
}

static gboolean on_readable(gint fd, GIOCondition cond, gpointer ud)
{
    (void)fd, (void)cond;
    igw_mux *m = ud;
    struct mmsghdr msgs[RECV_BATCH];
    struct iovec iov[RECV_BATCH];
    struct sockaddr_storage from[RECV_BATCH];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < RECV_BATCH; i++) {
        iov[i] = (struct iovec){m->bufs[i], IGW_MUX_BUF};
        msgs[i].msg_hdr = (struct msghdr){.msg_name = &from[i], .msg_namelen = sizeof from[i], .msg_iov = &iov[i],
                                          .msg_iovlen = 1};
    }
    int got = recvmmsg(m->fd, msgs, RECV_BATCH, MSG_DONTWAIT, NULL);
    for (int i = 0; i < got; i++)
        if (!(msgs[i].msg_hdr.msg_flags & MSG_TRUNC))
            datagram(m, m->bufs[i], msgs[i].msg_len, &from[i], msgs[i].msg_hdr.msg_namelen);
    return G_SOURCE_CONTINUE;
}

static void flush(igw_mux *m)
{
    unsigned i = 0;
    while (i < m->nq) {
        int n = sendmmsg(m->fd, m->q + i, m->nq - i, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            bump(&m->st.send_dropped, m->nq - i); /* a full socket buffer drops, as UDP would */
            break;
        }
        if (n < 0) { /* this datagram's own error (its address): the rest go on */
            bump(&m->st.send_dropped, 1);
            i++;
            continue;
        }
        bump(&m->st.sent, (unsigned)n);
        i += (unsigned)n;
    }
    bump(&m->st.send_batches, 1);
    m->nq = 0;
}

static gboolean flush_prepare(GSource *src, gint *timeout)
{
    igw_mux *m = ((flush_source *)src)->m;
    if (m->nq)
        flush(m);
    *timeout = -1;
    return FALSE;
}

static gboolean flush_dispatch(GSource *src, GSourceFunc cb, gpointer ud)
{
    (void)src, (void)cb, (void)ud;
    return G_SOURCE_CONTINUE; /* never ready: prepare does the work */
}

static GSourceFuncs flush_funcs = {.prepare = flush_prepare, .dispatch = flush_dispatch};

igw_mux *igw_mux_new(GMainContext *ctx, const char *address, uint16_t port, char *err, size_t errlen)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, address, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        len = sizeof *a4;
    } else if (inet_pton(AF_INET6, address, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        len = sizeof *a6;
    } else {
        snprintf(err, errlen, "%.40s is not an IP address", address);
        return NULL;
    }
    igw_mux *m = g_new0(igw_mux, 1);
    m->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    socklen_t got = sizeof ss;
    if (m->fd < 0 || bind(m->fd, (struct sockaddr *)&ss, len) != 0 ||
        getsockname(m->fd, (struct sockaddr *)&ss, &got) != 0) {
        snprintf(err, errlen, "cannot bind %.40s port %u: %s", address, port, strerror(errno));
        goto fail;
    }
    m->port = ntohs(ss.ss_family == AF_INET ? a4->sin_port : a6->sin6_port);
    /* DF on IPv4: WebRTC keeps its packets under the path MTU (1200-byte
     * RTP), and an unfragmentable datagram spares the kernel a hashed IP
     * id per packet (3 % of the forwarding thread, bench README). */
    int df = IP_PMTUDISC_PROBE;
    if (ss.ss_family == AF_INET && setsockopt(m->fd, IPPROTO_IP, IP_MTU_DISCOVER, &df, sizeof df) != 0) {
        snprintf(err, errlen, "cannot set DF on %.40s: %s", address, strerror(errno));
        goto fail;
    }
    g_strlcpy(m->address, address, sizeof m->address);
    m->by_ufrag = g_hash_table_new(g_str_hash, g_str_equal);
    m->by_addr = g_hash_table_new(addr_hash, addr_equal);
    m->src = g_unix_fd_source_new(m->fd, G_IO_IN);
    g_source_set_callback(m->src, G_SOURCE_FUNC(on_readable), m, NULL);
    g_source_attach(m->src, ctx);
    for (int i = 0; i < SEND_BATCH; i++)
        m->q[i].msg_hdr = (struct msghdr){.msg_name = &m->qto[i], .msg_iov = &m->qiov[i], .msg_iovlen = 1};
    m->flush_src = g_source_new(&flush_funcs, sizeof(flush_source));
    ((flush_source *)m->flush_src)->m = m;
    /* First in every turn's prepare phase, whatever else is ready. */
    g_source_set_priority(m->flush_src, G_PRIORITY_HIGH);
    g_source_attach(m->flush_src, ctx);
    return m;
fail:
    if (m->fd >= 0)
        close(m->fd);
    g_free(m);
    return NULL;
}

void igw_mux_free(igw_mux *m)
{
    if (!m)
        return;
    if (m->nq)
        flush(m);
    g_source_destroy(m->flush_src);
    g_source_unref(m->flush_src);
    g_source_destroy(m->src);
    g_source_unref(m->src);
    g_hash_table_destroy(m->by_ufrag);
    g_hash_table_destroy(m->by_addr);
    close(m->fd);
    g_free(m);
}

uint16_t igw_mux_port(const igw_mux *m)
{
    return m->port;
}

const char *igw_mux_address(const igw_mux *m)
{
    return m->address;
}

static bool creds_ok(igw_mux *m, const char *ufrag, const char *pwd, const igw_mux_peer *self)
{
    igw_mux_peer *other = g_hash_table_lookup(m->by_ufrag, ufrag);
    return ufrag[0] && strlen(ufrag) <= IGW_MUX_UFRAG_MAX && strlen(pwd) <= IGW_MUX_PWD_MAX &&
           (!other || other == self);
}

igw_mux_peer *igw_mux_add(igw_mux *m, const char *ufrag, const char *pwd, const igw_mux_ops *ops, void *ud)
{
    if (!creds_ok(m, ufrag, pwd, NULL))
        return NULL;
    igw_mux_peer *p = g_new0(igw_mux_peer, 1);
    p->m = m;
    p->ops = ops;
    p->ud = ud;
    g_strlcpy(p->ufrag, ufrag, sizeof p->ufrag);
    g_strlcpy(p->pwd, pwd, sizeof p->pwd);
    g_hash_table_insert(m->by_ufrag, p->ufrag, p);
    return p;
}

int igw_mux_set_credentials(igw_mux_peer *p, const char *ufrag, const char *pwd)
{
    if (!creds_ok(p->m, ufrag, pwd, p))
        return -1;
    g_hash_table_remove(p->m->by_ufrag, p->ufrag);
    g_strlcpy(p->ufrag, ufrag, sizeof p->ufrag);
    g_strlcpy(p->pwd, pwd, sizeof p->pwd);
    g_hash_table_insert(p->m->by_ufrag, p->ufrag, p);
    return 0;
}

void igw_mux_remove(igw_mux_peer *p)
{
    if (!p)
        return;
    g_hash_table_remove(p->m->by_ufrag, p->ufrag);
    if (p->selected && g_hash_table_lookup(p->m->by_addr, &p->remote) == p)
        g_hash_table_remove(p->m->by_addr, &p->remote);
    g_free(p);
}

int igw_mux_send(igw_mux_peer *p, const uint8_t *buf, size_t len)
{
    igw_mux *m = p->m;
    if (!p->selected || len > IGW_MUX_BUF)
        return -1;
    if (m->nq == SEND_BATCH)
        flush(m);
    unsigned i = m->nq++;
    memcpy(m->qbuf[i], buf, len);
    m->qiov[i] = (struct iovec){m->qbuf[i], len};
    memcpy(&m->qto[i], &p->remote, p->remote_len); /* the peer may go before the flush */
    m->q[i].msg_hdr.msg_namelen = p->remote_len;
    return 0;
}

void igw_mux_stats_get(const igw_mux *m, igw_mux_stats *out)
{
    *out = (igw_mux_stats){
        .checks = atomic_load_explicit(&m->st.checks, memory_order_relaxed),
        .checks_refused = atomic_load_explicit(&m->st.checks_refused, memory_order_relaxed),
        .data = atomic_load_explicit(&m->st.data, memory_order_relaxed),
        .data_unknown = atomic_load_explicit(&m->st.data_unknown, memory_order_relaxed),
        .sent = atomic_load_explicit(&m->st.sent, memory_order_relaxed),
        .send_batches = atomic_load_explicit(&m->st.send_batches, memory_order_relaxed),
        .send_dropped = atomic_load_explicit(&m->st.send_dropped, memory_order_relaxed),
    };
}
