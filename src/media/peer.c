/* peer.c - one WebRTC transport: a libnice agent or the thread's shared
 * sockets (mux.h), DTLS-SRTP, demultiplexing. */
#include "peer.h"

#include <nice/agent.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "clock.h"
#include "mux.h"
#include "rtp.h"

#define PEER_HELD_MAX 8 /* a DTLS flight's records (a certificate flight is a few) */

struct igw_peer {
    GMainContext           *ctx;
    const igw_media_config *cfg;
    igw_dtls_cert          *cert;
    const igw_peer_ops     *ops;
    void                   *ud;
    NiceAgent              *agent;
    guint                   stream;
    bool                    lite;
    bool                    ice_connected;
    bool                    dtls_client;
    bool                    remote_set;
    bool                    answering;     /* our description is the answer */
    bool                    failed;
    bool                    restarting;    /* ICE restarted (igw_peer_restart): no new pair selected yet */
    uint8_t                 remote_fp[32]; /* the remote certificate's SHA-256 (set_remote) */
    uint64_t                remote_sess_id; /* the remote description's o= session id: its peer connection */
    igw_dtls               *dtls;
    igw_srtp               *srtp;
    /* The selected pair's socket and peer address: media is sent with one
     * sendto() instead of nice_agent_send's lock, lookups and GObject calls. */
    GSocket                *sock;
    int                     fd;
    struct sockaddr_storage remote;
    socklen_t               remote_len;
    uint64_t                created_us, last_rx_us;
    /* On the thread's shared sockets (igw_peer_config.mux): known there by
     * our ufrag, one mux peer per local address; sel, the one whose address
     * the remote nominated. */
    igw_mux_peer           *mp[IGW_MEDIA_MAX_ADDRS];
    unsigned                nmp;
    igw_mux_peer           *sel;
    struct igw_mux *const  *mux;
    char                    ufrag[9], pwd[25];
    uint8_t                 buf[IGW_PEER_BUF];
    /* DTLS records written before ICE had a pair (the remote's handshake
     * can arrive first: a controlling agent starts DTLS once its check
     * succeeds, before we see its nomination). Sent when the pair is
     * selected instead of lost to a retransmission timer. */
    struct {
        uint8_t *data;
        size_t len;
    } held[PEER_HELD_MAX];
    unsigned nheld;
};

static void peer_fail(igw_peer *p, igw_media_event_kind kind, const char *reason)
{
    if (p->failed)
        return;
    p->failed = true;
    p->ops->on_failed(p->ud, kind, reason);
}

/* One datagram on the selected path: 0, or -1 (none yet, or it failed). */
static int path_send(igw_peer *p, const uint8_t *data, size_t n)
{
    if (p->nmp)
        return p->sel ? igw_mux_send(p->sel, data, n) : -1;
    return nice_agent_send(p->agent, p->stream, 1, (guint)n, (const gchar *)data) == (gint)n ? 0 : -1;
}

static void dtls_send(void *ud, const uint8_t *data, size_t n)
{
    igw_peer *p = ud;
    if (path_send(p, data, n) == 0)
        return;
    /* No pair yet: held for it (beyond the bound, DTLS retransmits). */
    if (p->nheld < PEER_HELD_MAX && (p->held[p->nheld].data = g_memdup2(data, n))) {
        p->held[p->nheld].len = n;
        p->nheld++;
    }
}

/* The pair exists: what DTLS wrote before it goes now, in order. */
static void held_flush(igw_peer *p)
{
    for (unsigned i = 0; i < p->nheld; i++) {
        (void)path_send(p, p->held[i].data, p->held[i].len);
        g_free(p->held[i].data);
    }
    p->nheld = 0;
}

static void dtls_after(igw_peer *p, igw_dtls_state before, igw_dtls_state now)
{
    if (now == before)
        return;
    if (now == IGW_DTLS_CONNECTED) {
        char err[128];
        p->srtp = igw_dtls_srtp_new(p->dtls, err, sizeof err);
        if (!p->srtp) {
            peer_fail(p, IGW_MEDIA_EV_DTLS_FAILED, "SRTP keys could not be installed");
            return;
        }
        p->ops->on_event(p->ud, IGW_MEDIA_EV_DTLS_CONNECTED,
                         igw_dtls_srtp_profile(p->dtls) == IGW_SRTP_AEAD_AES_128_GCM ? "AEAD_AES_128_GCM"
                                                                                  : "AES_CM_128_HMAC_SHA1_80");
    } else if (now == IGW_DTLS_FAILED) {
        peer_fail(p, IGW_MEDIA_EV_DTLS_FAILED, igw_dtls_reason(p->dtls));
    } else if (now == IGW_DTLS_CLOSED) {
        peer_fail(p, IGW_MEDIA_EV_DTLS_FAILED, "peer closed DTLS");
    }
}

/* A restarted peer's new generation is connected once the remote's media
 * (its SRTP, on the association that went on) or a newly selected pair
 * shows its path works: ICE and DTLS connected again, to the new owner. */
static void restarted(igw_peer *p)
{
    if (!p->restarting || !p->remote_set)
        return;
    p->restarting = false;
    p->ops->on_event(p->ud, IGW_MEDIA_EV_ICE_CONNECTED, "restarted");
    p->ops->on_event(p->ud, IGW_MEDIA_EV_DTLS_CONNECTED, "continued");
}

static void peer_input(igw_peer *p, const uint8_t *data, size_t len);

static void on_recv(NiceAgent *agent, guint stream, guint component, guint len, gchar *data, gpointer ud)
{
    (void)agent, (void)stream, (void)component;
    peer_input(ud, (const uint8_t *)data, len);
}

/* A datagram from the selected path (RFC 7983: DTLS, SRTP or SRTCP). */
static void peer_input(igw_peer *p, const uint8_t *data, size_t len)
{
    if (p->failed || len == 0 || len > IGW_RTP_MTU)
        return;
    p->last_rx_us = igw_clock_us();
    memcpy(p->buf, data, len);
    size_t n = len;
    switch (igw_pkt_classify(p->buf, n)) {
    case IGW_PKT_DTLS:
        if (p->dtls) {
            igw_dtls_state before = igw_dtls_state_get(p->dtls);
            dtls_after(p, before, igw_dtls_feed(p->dtls, p->buf, n));
        }
        break;
    case IGW_PKT_RTP:
        if (p->srtp && igw_srtp_unprotect(p->srtp, p->buf, &n) == 0) {
            restarted(p);
            p->ops->on_rtp(p->ud, p->buf, n);
        }
        break;
    case IGW_PKT_RTCP:
        if (p->srtp && igw_srtp_unprotect_rtcp(p->srtp, p->buf, &n) == 0) {
            restarted(p);
            p->ops->on_rtcp(p->ud, p->buf, n);
        }
        break;
    default:
        break;
    }
}

static void on_pair(NiceAgent *agent, guint stream, guint component, NiceCandidate *local, NiceCandidate *remote,
                    gpointer ud)
{
    (void)local;
    igw_peer *p = ud;
    if (p->sock)
        g_object_unref(p->sock);
    p->sock = nice_agent_get_selected_socket(agent, stream, component);
    p->fd = p->sock ? g_socket_get_fd(p->sock) : -1;
    nice_address_copy_to_sockaddr(&remote->addr, (struct sockaddr *)&p->remote);
    p->remote_len = remote->addr.s.addr.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    held_flush(p);
    if (p->srtp)
        restarted(p);
}

/* ICE is up: said once; a DTLS client starts its handshake. */
static void ice_connected(igw_peer *p)
{
    p->ice_connected = true;
    p->ops->on_event(p->ud, IGW_MEDIA_EV_ICE_CONNECTED, "");
    if (p->dtls && p->dtls_client && igw_dtls_state_get(p->dtls) == IGW_DTLS_NEW) {
        igw_dtls_state before = igw_dtls_state_get(p->dtls);
        dtls_after(p, before, igw_dtls_start(p->dtls));
    }
}

/* A check on a shared socket passed (mux.h): it proves the peer alive; a
 * selected address is the path, as libnice's selected pair is. */
static void mux_check(void *ud, igw_mux_peer *mp, const struct sockaddr *from, socklen_t len, bool selected)
{
    (void)from, (void)len;
    igw_peer *p = ud;
    if (p->failed)
        return;
    p->last_rx_us = igw_clock_us();
    if (!selected)
        return;
    bool moved = p->sel != mp;
    p->sel = mp;
    if (moved)
        held_flush(p);
    if (!p->ice_connected)
        ice_connected(p);
    else if (p->srtp)
        restarted(p);
}

static void mux_data(void *ud, uint8_t *buf, size_t len)
{
    peer_input(ud, buf, len);
}

static const igw_mux_ops mux_ops = {.on_check = mux_check, .on_data = mux_data};

/* ICE-lite credentials of our own (RFC 8839 ice-chars): 8 and 24 of them,
 * 48 and 144 random bits. */
static int make_credentials(igw_peer *p)
{
    static const char ice_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint8_t r[sizeof p->ufrag - 1 + sizeof p->pwd - 1];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return -1;
    for (size_t i = 0; i < sizeof r; i++) {
        char c = ice_chars[r[i] & 63];
        if (i < sizeof p->ufrag - 1)
            p->ufrag[i] = c;
        else
            p->pwd[i - (sizeof p->ufrag - 1)] = c;
    }
    p->ufrag[sizeof p->ufrag - 1] = p->pwd[sizeof p->pwd - 1] = '\0';
    return 0;
}

/* Known by our credentials on each of the n shared sockets: 0, or -1 with
 * none joined (a ufrag taken on one of them). */
static int mux_join(igw_peer *p, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (!(p->mp[i] = igw_mux_add(p->mux[i], p->ufrag, p->pwd, &mux_ops, p))) {
            while (i-- > 0)
                igw_mux_remove(p->mp[i]);
            return -1;
        }
    }
    p->nmp = n;
    return 0;
}

static void on_state(NiceAgent *agent, guint stream, guint component, guint state, gpointer ud)
{
    (void)agent, (void)stream, (void)component;
    igw_peer *p = ud;
    if (p->failed)
        return;
    if ((state == NICE_COMPONENT_STATE_CONNECTED || state == NICE_COMPONENT_STATE_READY) && !p->ice_connected) {
        ice_connected(p);
    } else if (state == NICE_COMPONENT_STATE_FAILED && p->lite) {
        /* Full mode: checks toward unreachable candidates fail before a
         * peer-reflexive pair succeeds; connect_timeout_ms decides there. */
        peer_fail(p, IGW_MEDIA_EV_ICE_FAILED, "ICE failed");
    }
}

igw_peer *igw_peer_new(const igw_peer_config *cfg, const igw_peer_ops *ops, void *ud, char *err, size_t errlen)
{
    igw_peer *p = g_new0(igw_peer, 1);
    p->ctx = cfg->ctx;
    p->cfg = cfg->media;
    p->cert = cfg->cert;
    p->ops = ops;
    p->ud = ud;
    p->lite = !cfg->media->ice_full;
    p->created_us = igw_clock_us();
    p->fd = -1;
    if (cfg->nmux && p->lite) {
        p->mux = cfg->mux;
        /* A ufrag already taken on a socket: new credentials. */
        for (int attempt = 0; attempt < 3 && p->nmp == 0; attempt++)
            if (make_credentials(p) == 0)
                (void)mux_join(p, cfg->nmux); /* sets nmp only when joined */
        if (p->nmp == 0) {
            snprintf(err, errlen, "ICE credentials could not be made");
            g_free(p);
            return NULL;
        }
        return p;
    }
    p->agent = nice_agent_new_full(p->ctx, NICE_COMPATIBILITY_RFC5245,
                                   p->lite ? NICE_AGENT_OPTION_LITE_MODE : NICE_AGENT_OPTION_NONE);
    if (!p->agent) {
        snprintf(err, errlen, "ICE agent could not be created");
        g_free(p);
        return NULL;
    }
    g_object_set(p->agent, "ice-tcp", FALSE, "upnp", FALSE, "controlling-mode", FALSE, NULL);
    unsigned naddr = p->cfg->naddresses;
    for (unsigned i = 0; i < (naddr ? naddr : 1); i++) {
        const char *text = naddr ? p->cfg->addresses[i] : "127.0.0.1";
        NiceAddress a;
        nice_address_init(&a);
        if (!nice_address_set_from_string(&a, text) || !nice_agent_add_local_address(p->agent, &a)) {
            snprintf(err, errlen, "bad local address %.40s", text);
            goto fail;
        }
    }
    p->stream = nice_agent_add_stream(p->agent, 1);
    if (!p->stream) {
        snprintf(err, errlen, "ICE stream could not be added");
        goto fail;
    }
    if (p->cfg->port_min || p->cfg->port_max)
        nice_agent_set_port_range(p->agent, p->stream, 1, p->cfg->port_min, p->cfg->port_max);
    g_signal_connect(p->agent, "component-state-changed", G_CALLBACK(on_state), p);
    g_signal_connect(p->agent, "new-selected-pair-full", G_CALLBACK(on_pair), p);
    if (!nice_agent_attach_recv(p->agent, p->stream, 1, p->ctx, on_recv, p)) {
        snprintf(err, errlen, "ICE receive could not be attached");
        goto fail;
    }
    if (!nice_agent_gather_candidates(p->agent, p->stream)) {
        snprintf(err, errlen, "no local candidate (address or port range unusable)");
        goto fail;
    }
    return p;
fail:
    igw_peer_free(p);
    return NULL;
}

void igw_peer_describe(igw_peer *p, igw_sdp *local, size_t media_index, bool answering, igw_sdp_setup remote_setup)
{
    gchar *ufrag = NULL, *pwd = NULL;
    if (p->nmp) {
        g_strlcpy(local->ice_ufrag, p->ufrag, sizeof local->ice_ufrag);
        g_strlcpy(local->ice_pwd, p->pwd, sizeof local->ice_pwd);
    } else if (nice_agent_get_local_credentials(p->agent, p->stream, &ufrag, &pwd)) {
        g_strlcpy(local->ice_ufrag, ufrag, sizeof local->ice_ufrag);
        g_strlcpy(local->ice_pwd, pwd, sizeof local->ice_pwd);
    }
    g_free(ufrag);
    g_free(pwd);
    p->answering = answering;
    local->ice_lite = p->lite;
    g_strlcpy(local->fp_alg, "sha-256", sizeof local->fp_alg);
    memcpy(local->fp, igw_dtls_cert_fp(p->cert), 32);
    local->fp_len = 32;
    if (!answering)
        local->setup = IGW_SDP_SETUP_ACTPASS;
    else
        local->setup = remote_setup == IGW_SDP_SETUP_PASSIVE ? IGW_SDP_SETUP_ACTIVE : IGW_SDP_SETUP_PASSIVE;

    igw_sdp_media *m = &local->media[media_index];
    m->ncands = 0;
    if (p->nmp) { /* one host candidate per shared socket */
        for (unsigned i = 0; i < p->nmp && m->ncands < IGW_SDP_MAX_CANDS; i++) {
            const char *shown = p->cfg->announced_address ? p->cfg->announced_address : igw_mux_address(p->mux[i]);
            /* RFC 8445 5.1.2.1: host type preference 126, local preference by
             * order, component 1. */
            snprintf(m->cands[m->ncands++], sizeof m->cands[0], "candidate:%u 1 udp %u %s %u typ host", i + 1,
                     (126u << 24) | ((65535u - i) << 8) | 255u, shown, igw_mux_port(p->mux[i]));
        }
        m->end_of_candidates = true;
        return;
    }
    GSList *cands = nice_agent_get_local_candidates(p->agent, p->stream, 1);
    for (GSList *it = cands; it && m->ncands < IGW_SDP_MAX_CANDS; it = it->next) {
        NiceCandidate *c = it->data;
        if (c->transport != NICE_CANDIDATE_TRANSPORT_UDP)
            continue;
        char addr[NICE_ADDRESS_STRING_LEN];
        nice_address_to_string(&c->addr, addr);
        const char *shown = p->cfg->announced_address ? p->cfg->announced_address : addr;
        snprintf(m->cands[m->ncands++], sizeof m->cands[0], "candidate:%s 1 udp %u %s %u typ host",
                 c->foundation, c->priority, shown, nice_address_get_port(&c->addr));
    }
    g_slist_free_full(cands, (GDestroyNotify)nice_candidate_free);
    m->end_of_candidates = true;
}

int igw_peer_set_remote(igw_peer *p, const igw_sdp *remote, char *err, size_t errlen)
{
    if (p->remote_set) {
        snprintf(err, errlen, "remote description already applied");
        return -1;
    }
    if (remote->fp_len != 32 || strcmp(remote->fp_alg, "sha-256") != 0) {
        snprintf(err, errlen, "no sha-256 fingerprint");
        return -1;
    }
    if (p->nmp) {
        /* ICE-lite on a shared socket: the remote's checks, authenticated
         * with our password, are all it needs; the DTLS part as below. */
    } else if (!nice_agent_set_remote_credentials(p->agent, p->stream, remote->ice_ufrag, remote->ice_pwd)) {
        snprintf(err, errlen, "ICE credentials refused");
        return -1;
    }
    if (p->restarting && p->lite) { /* its checks reach us; the DTLS association goes on */
        p->remote_set = true;
        return 0;
    }
    /* Full mode: the offerer controls, unless the other side is lite (RFC
     * 8445 6.1.1); set before the candidates so pair priorities use it. */
    if (!p->lite && !p->restarting)
        g_object_set(p->agent, "controlling-mode", (gboolean)(remote->ice_lite || !p->answering), NULL);
    /* The first BUNDLE member carries the transport; in ICE-lite the peer's
     * checks reach us anyway, in full mode we need its candidates. */
    GSList *list = NULL;
    for (size_t i = 0; i < remote->nmedia && !p->nmp; i++) {
        const igw_sdp_media *m = &remote->media[i];
        if (m->port == 0)
            continue;
        for (size_t k = 0; k < m->ncands; k++) {
            char line[300];
            snprintf(line, sizeof line, "a=%s", m->cands[k]);
            NiceCandidate *c = nice_agent_parse_remote_candidate_sdp(p->agent, p->stream, line);
            if (!c)
                continue; /* mDNS names, TCP, unknown types: not usable here */
            if (c->component_id != 1 || c->transport != NICE_CANDIDATE_TRANSPORT_UDP) {
                nice_candidate_free(c);
                continue;
            }
            list = g_slist_append(list, c);
        }
        break;
    }
    if (list) {
        (void)nice_agent_set_remote_candidates(p->agent, p->stream, 1, list);
        g_slist_free_full(list, (GDestroyNotify)nice_candidate_free);
    }
    if (p->restarting) { /* the DTLS association goes on (igw_peer_restart) */
        p->remote_set = true;
        return 0;
    }
    p->dtls_client = remote->setup == IGW_SDP_SETUP_PASSIVE;
    memcpy(p->remote_fp, remote->fp, sizeof p->remote_fp);
    p->remote_sess_id = remote->sess_id;
    char derr[128];
    p->dtls = igw_dtls_new(p->cert, p->dtls_client ? IGW_DTLS_CLIENT : IGW_DTLS_SERVER, remote->fp, dtls_send, p,
                           derr, sizeof derr);
    if (!p->dtls) {
        snprintf(err, errlen, "DTLS transport could not be created");
        return -1;
    }
    p->remote_set = true;
    if (!p->dtls_client || p->ice_connected) {
        igw_dtls_state before = igw_dtls_state_get(p->dtls);
        dtls_after(p, before, igw_dtls_start(p->dtls));
    }
    return 0;
}

bool igw_peer_continuable(const igw_peer *old, const igw_sdp *remote)
{
    /* The same peer connection (RFC 8829: its later offers keep the o= session
     * id), not merely the same certificate: a browser may share one between
     * its connections. */
    return old->remote_set && old->srtp && !old->failed && old->dtls && remote->sess_id == old->remote_sess_id &&
           igw_dtls_state_get(old->dtls) == IGW_DTLS_CONNECTED && remote->fp_len == sizeof old->remote_fp &&
           memcmp(old->remote_fp, remote->fp, sizeof old->remote_fp) == 0 &&
           old->dtls_client == (remote->setup == IGW_SDP_SETUP_PASSIVE);
}

int igw_peer_restart(igw_peer *p, void *ud, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    /* Our credentials stay (docs/decisions.md): the remote's new generation
     * checks against them at once, and its old one stays valid until it
     * switches, so media never waits for a handshake of ours. */
    p->ud = ud;
    p->restarting = true;
    p->remote_set = false; /* the new remote credentials and candidates come next */
    return 0;
}

void igw_peer_return(igw_peer *p, void *ud)
{
    p->ud = ud;
    p->remote_set = true;
    p->restarting = false;
}

static int peer_send(igw_peer *p, uint8_t *buf, size_t len, bool rtcp)
{
    if (!p->srtp || p->failed)
        return -1;
    int rc = rtcp ? igw_srtp_protect_rtcp(p->srtp, buf, &len, IGW_PEER_BUF)
                  : igw_srtp_protect(p->srtp, buf, &len, IGW_PEER_BUF);
    if (rc != 0)
        return -1;
    if (p->fd >= 0) {
        ssize_t n = sendto(p->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&p->remote, p->remote_len);
        return n == (ssize_t)len ? 0 : -1; /* EAGAIN: a full socket buffer drops, as UDP would */
    }
    return path_send(p, buf, len);
}

int igw_peer_send_rtp(igw_peer *p, uint8_t *buf, size_t len)
{
    return peer_send(p, buf, len, false);
}

int igw_peer_send_rtcp(igw_peer *p, uint8_t *buf, size_t len)
{
    return peer_send(p, buf, len, true);
}

bool igw_peer_ready(const igw_peer *p)
{
    return p->srtp != NULL && !p->failed;
}

void igw_peer_tick(igw_peer *p, uint64_t now_us)
{
    if (p->failed)
        return;
    if (p->dtls && igw_dtls_state_get(p->dtls) == IGW_DTLS_HANDSHAKING && igw_dtls_timeout_us(p->dtls) == 0) {
        igw_dtls_state before = igw_dtls_state_get(p->dtls);
        dtls_after(p, before, igw_dtls_on_timer(p->dtls));
        if (p->failed)
            return;
    }
    if (!p->srtp) {
        if (now_us - p->created_us > (uint64_t)p->cfg->connect_timeout_ms * 1000)
            peer_fail(p, p->ice_connected ? IGW_MEDIA_EV_DTLS_FAILED : IGW_MEDIA_EV_ICE_FAILED,
                      p->ice_connected ? "DTLS handshake timeout" : "ICE connect timeout");
        return;
    }
    /* Consent (RFC 7675 in spirit): an ICE-lite agent sends no checks, so the
     * proof of life is traffic; a viewer sends RTCP at least every few seconds. */
    if (now_us - p->last_rx_us > (uint64_t)p->cfg->consent_timeout_ms * 1000)
        peer_fail(p, IGW_MEDIA_EV_ICE_FAILED, "consent expired: peer silent");
}

void igw_peer_free(igw_peer *p)
{
    if (!p)
        return;
    p->failed = true; /* nothing reported from here on */
    if (p->agent)
        g_signal_handlers_disconnect_by_data(p->agent, p);
    if (p->dtls) {
        if (igw_dtls_state_get(p->dtls) == IGW_DTLS_CONNECTED)
            igw_dtls_close(p->dtls);
        igw_dtls_free(p->dtls);
    }
    for (unsigned i = 0; i < p->nheld; i++)
        g_free(p->held[i].data);
    if (p->srtp)
        igw_srtp_free(p->srtp);
    for (unsigned i = 0; i < p->nmp; i++)
        igw_mux_remove(p->mp[i]);
    if (p->agent) {
        if (p->stream) {
            (void)nice_agent_attach_recv(p->agent, p->stream, 1, p->ctx, NULL, NULL);
            nice_agent_remove_stream(p->agent, p->stream);
        }
        if (p->sock)
            g_object_unref(p->sock);
        g_object_unref(p->agent);
    }
    g_free(p);
}
