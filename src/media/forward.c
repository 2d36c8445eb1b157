/* forward.c - sources, viewers and the packet path of the media core.
 *
 * Everything here runs on the media thread that owns the node; a source and
 * all of its viewers share that thread, so a packet received from the source
 * is rewritten, protected and sent to each viewer inside the receive callback.
 *
 * Per viewer and kind the forwarding state is the generated machine `track`
 * (active / paused / stopped); only `active` tracks are sent. Output SSRC,
 * sequence numbers and timestamps are the viewer's own (igw_rtp_rewriter), so
 * pause/resume and a new source SSRC continue seamlessly; video restarts at a
 * keyframe, which is requested from the source (at most once per
 * keyframe_min_interval_ms, whoever asks).
 *
 * Talk goes the other way on the same thread: a viewer's Opus, when its gate
 * is open and it holds the floor, is renumbered onto the source's talkback
 * (one continuous stream toward the camera's speaker) and sent to the camera
 * inside the viewer's receive callback. */
#include "forward.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "core.h"
#include "registry.h"

#define HISTORY_SLOTS 512
#define SR_INTERVAL_US 1000000
#define RTP_BURST 64 /* datagrams read per wakeup of a plain RTP source */
#define RTX_PER_TICK 100 /* retransmissions per viewer per tick (1000/s) */
#define FLOOR_HOLD_US 300000 /* a talker silent this long loses the floor */
#define TALK_ACTIVE_LEVEL 50 /* RFC 6464 level (-dBov) below which a packet is speech */

static const char *const kind_name[TRACK_KINDS] = {"audio", "video"};

static int track_of(igw_sdp_kind kind)
{
    return kind == IGW_SDP_AUDIO ? TRACK_AUDIO : kind == IGW_SDP_VIDEO ? TRACK_VIDEO : -1;
}

static uint32_t random_ssrc(void)
{
    uint32_t v;
    do
        v = g_random_int();
    while (v == 0);
    return v;
}

/* ---- node lifetime ---- */

/* Stops watching a side socket (its node goes or hands it over). */
static void side_unwatch(view_side *sd)
{
    if (sd->sock_src) {
        g_source_destroy(sd->sock_src);
        g_source_unref(sd->sock_src);
        sd->sock_src = NULL;
    }
}

static void side_release(view_side *sd)
{
    side_unwatch(sd);
    if (sd->sock) {
        (void)g_socket_close(sd->sock, NULL);
        g_object_unref(sd->sock);
    }
    for (int i = 0; i < IGW_MEDIA_TAPS_MAX; i++)
        if (sd->taps[i])
            g_object_unref(sd->taps[i]);
    memset(sd, 0, sizeof *sd);
}

static void node_free(igw_node *n)
{
    if (n->close_src) {
        g_source_destroy(n->close_src);
        g_source_unref(n->close_src);
        n->close_src = NULL;
    }
    igw_peer_free(n->peer);
    if (n->sock_src) {
        g_source_destroy(n->sock_src);
        g_source_unref(n->sock_src);
    }
    if (n->sock) {
        (void)g_socket_close(n->sock, NULL);
        g_object_unref(n->sock);
    }
    for (int k = 0; k < TRACK_KINDS; k++)
        igw_rtp_history_free(n->src[k].history);
    side_release(&n->side);
    if (n->dest)
        g_object_unref(n->dest);
    g_free(n->viewers);
    g_free(n);
}

static igw_node *node_new(igw_mthread *t, const char *id, uint32_t rev, bool is_source)
{
    igw_node *n = g_new0(igw_node, 1);
    g_strlcpy(n->id, id, sizeof n->id);
    n->revision = rev;
    n->is_source = is_source;
    n->m = t->m;
    n->t = t;
    n->link.data = n;
    n->rtcp_ssrc = random_ssrc();
    n->st.is_source = is_source;
    return n;
}

/* Makes a fully built node visible; false (node untouched) if the id is taken. */
static bool node_enter(igw_node *n)
{
    if (!igw_registry_add(n->m, n))
        return false;
    g_queue_push_tail_link(&n->t->nodes, &n->link);
    return true;
}

/* Makes a fully built node the current generation of its id: an older one on
 * this thread is closed in the same turn, so no call sees neither or both. */
static igw_media_rc node_commit(igw_node *n, char *err, size_t errlen)
{
    bool elsewhere = false;
    igw_node *old = igw_registry_here(n->t, n->id, &elsewhere);
    if (old && old->is_source != n->is_source) {
        snprintf(err, errlen, "id %s names a %s", n->id, old->is_source ? "source" : "viewer");
        return IGW_MEDIA_EINVAL;
    }
    if (old && old->revision >= n->revision) {
        snprintf(err, errlen, "mediaRevision %u is not newer than %u", n->revision, old->revision);
        return IGW_MEDIA_ESTALE;
    }
    if (old)
        igw_fwd_close(old, "superseded by a newer mediaRevision");
    if (elsewhere || !node_enter(n)) {
        snprintf(err, errlen, "id %s is in use", n->id);
        return IGW_MEDIA_ESTALE;
    }
    return IGW_MEDIA_OK;
}

static void source_detach_viewer(igw_node *src, igw_node *v)
{
    igw_rtp_floor_release(&src->talk.floor, (uintptr_t)v);
    for (size_t i = 0; i < src->nviewers; i++)
        if (src->viewers[i] == v) {
            src->viewers[i] = src->viewers[--src->nviewers];
            break;
        }
    src->st.viewers = (uint32_t)src->nviewers;
    v->source = NULL;
}

void igw_fwd_close(igw_node *n, const char *reason)
{
    n->closing = true; /* no close_later from here on */
    while (n->is_source && n->nviewers > 0)
        igw_fwd_close(n->viewers[n->nviewers - 1], "source closed");
    if (n->source)
        source_detach_viewer(n->source, n);
    igw_registry_remove(n->m, n);
    g_queue_unlink(&n->t->nodes, &n->link);
    igw_registry_emit(n->m, IGW_MEDIA_EV_CLOSED, n, reason);
    node_free(n);
}

static gboolean close_later_cb(gpointer ud)
{
    igw_node *n = ud;
    igw_fwd_close(n, n->close_reason);
    return G_SOURCE_REMOVE;
}

/* From inside a callback of the node's own peer: close on the next loop turn. */
static void close_later(igw_node *n, const char *reason)
{
    if (n->closing)
        return;
    n->closing = true;
    g_strlcpy(n->close_reason, reason, sizeof n->close_reason);
    n->close_src = g_idle_source_new();
    /* Default, not idle, priority: a thread busy with packets must still get to it. */
    g_source_set_priority(n->close_src, G_PRIORITY_DEFAULT);
    g_source_set_callback(n->close_src, close_later_cb, n, NULL);
    g_source_attach(n->close_src, n->t->ctx);
}

/* ---- keyframes ---- */

static void source_send_pli(igw_node *s, uint64_t now_us)
{
    src_track *tr = &s->src[TRACK_VIDEO];
    tr->last_pli_us = now_us;
    tr->pli_pending = false;
    if (!s->peer || !tr->have_ssrc)
        return; /* a plain RTP feed has no feedback channel */
    uint8_t buf[IGW_PEER_BUF];
    size_t n = igw_rtcp_write_pli(buf, sizeof buf, s->rtcp_ssrc, tr->ssrc);
    if (n && igw_peer_send_rtcp(s->peer, buf, n) == 0) {
        s->st.pli_out++;
        tr->keyframe_wanted = true;
    }
}

/* Asks the source for a keyframe; requests from every viewer are merged so the
 * source sees at most one per keyframe_min_interval_ms. */
static void source_want_keyframe(igw_node *s)
{
    src_track *tr = &s->src[TRACK_VIDEO];
    if (!tr->present)
        return;
    uint64_t now = igw_clock_us();
    if (tr->last_pli_us == 0 || now - tr->last_pli_us >= (uint64_t)s->m->cfg.keyframe_min_interval_ms * 1000)
        source_send_pli(s, now);
    else
        tr->pli_pending = true;
}

/* ---- the packet path ---- */

static void viewer_forward(igw_node *v, int k, const src_track *tr, const uint8_t *pkt, size_t len,
                           const igw_rtp_hdr *h, bool keyframe, uint64_t now_us)
{
    view_track *vt = &v->view[k];
    if (!vt->present || vt->state != IGW_TRACK_ACTIVE || (v->peer ? !igw_peer_ready(v->peer) : !v->dest))
        return;
    if (vt->epoch != tr->epoch) { /* the source changed SSRC: continue our numbering */
        vt->epoch = tr->epoch;
        igw_rtp_rewriter_rebase(&vt->rw);
        if (k == TRACK_VIDEO) {
            vt->waiting_keyframe = true;
            source_want_keyframe(v->source);
        }
    }
    if (vt->waiting_keyframe) {
        if (!keyframe) {
            v->st.dropped++;
            return;
        }
        vt->waiting_keyframe = false;
        igw_registry_emit(v->m, IGW_MEDIA_EV_KEYFRAME, v, kind_name[k]);
    }
    uint8_t out[IGW_PEER_BUF];
    memcpy(out, pkt, len);
    uint16_t seq;
    uint32_t ts;
    igw_rtp_rewriter_map(&vt->rw, h->seq, h->ts, now_us, &seq, &ts);
    if (!igw_rtp_rewriter_unmap(&vt->rw, seq, &(uint16_t){0})) {
        v->st.dropped++; /* late packet of a mapping before the last rebase */
        return;
    }
    igw_rtp_rewrite(out, vt->pt, seq, ts, vt->ssrc);
    if (v->peer ? igw_peer_send_rtp(v->peer, out, len) != 0
                : g_socket_send_to(v->sock, v->dest, (const gchar *)out, len, NULL, NULL) != (gssize)len) {
        v->st.dropped++;
        return;
    }
    if (v->take && k == TRACK_VIDEO && h->marker) {
        /* The take's frame is complete: paused again before another packet. */
        v->take = false;
        vt->state = igw_sm_fire(&igw_sm_track, vt->state, IGW_TRACK_ON_PAUSE, 0).next;
        v->st.frames_taken++;
        igw_registry_emit_ts(v->m, IGW_MEDIA_EV_FRAME, v, "video", ts);
    }
    vt->packets++;
    vt->octets += (uint32_t)h->payload_len;
    v->st.rtp_out++;
    if (k == TRACK_VIDEO)
        v->st.video_out++;
    v->st.bytes_out += len;
    if (!v->first_packet) {
        v->first_packet = true;
        igw_registry_emit(v->m, IGW_MEDIA_EV_FIRST_PACKET, v, kind_name[k]);
    }
}

/* One RTP packet from a source (decrypted, or plain from a UDP feed). */
static void source_rtp(igw_node *s, uint8_t *pkt, size_t len)
{
    igw_rtp_hdr h;
    if (!igw_rtp_parse(pkt, len, &h)) {
        s->st.dropped++;
        return;
    }
    int k = -1;
    for (int i = 0; i < TRACK_KINDS; i++)
        if (s->src[i].present && s->src[i].pt == h.pt)
            k = i;
    if (k < 0) {
        s->st.dropped++;
        return;
    }
    src_track *tr = &s->src[k];
    s->st.rtp_in++;
    s->st.bytes_in += len;
    if (!s->first_packet) {
        s->first_packet = true;
        igw_registry_emit(s->m, IGW_MEDIA_EV_FIRST_PACKET, s, kind_name[k]);
    }
    if (!tr->have_ssrc || tr->ssrc != h.ssrc) {
        if (tr->have_ssrc)
            tr->epoch++;
        tr->ssrc = h.ssrc;
        tr->have_ssrc = true;
        tr->ext_max = tr->ext_base = h.seq;
        tr->received = tr->expected_prior = tr->received_prior = 0;
        tr->jitter_q4 = 0;
        tr->have_transit = false;
        tr->lsr = 0;
        s->st.rtp_expected++;
    } else {
        /* Extended highest sequence number: count how many the sender numbered. */
        uint16_t step = (uint16_t)(h.seq - (uint16_t)tr->ext_max);
        if (step != 0 && step < 0x8000) {
            tr->ext_max += step;
            s->st.rtp_expected += step;
        }
    }
    tr->received++;
    /* Interarrival jitter (RFC 3550 A.8), in the track's clock units. */
    uint32_t arrival = (uint32_t)(igw_clock_us() * tr->clock / 1000000);
    uint32_t transit = arrival - h.ts;
    if (tr->have_transit) {
        int32_t d = (int32_t)(transit - tr->transit);
        uint32_t ad = d < 0 ? (uint32_t)-(int64_t)d : (uint32_t)d;
        tr->jitter_q4 += ad - ((tr->jitter_q4 + 8) >> 4);
    }
    tr->transit = transit;
    tr->have_transit = true;
    bool keyframe = false;
    if (k == TRACK_VIDEO) {
        keyframe = igw_rtp_h264_keyframe(pkt + h.hdr_len, h.payload_len);
        if (keyframe) {
            s->st.keyframes_in++;
            tr->pli_pending = false;
            if (tr->keyframe_wanted || s->st.keyframes_in == 1) {
                tr->keyframe_wanted = false;
                igw_registry_emit(s->m, IGW_MEDIA_EV_KEYFRAME, s, "video");
            }
        }
        igw_rtp_history_put(tr->history, h.seq, pkt, len);
    }
    uint64_t now = igw_clock_us();
    for (size_t i = 0; i < s->nviewers; i++)
        viewer_forward(s->viewers[i], k, tr, pkt, len, &h, keyframe, now);
}

/* Puts one packet of viewer v's talk (from `who`: its voice, or its
 * interpreter's) on the source's talkback while v's gate is open and who
 * holds the floor: stripped of CSRCs and extensions (their ids are the
 * viewer's), renumbered onto the talkback's SSRC, sequence, timestamps and
 * payload type. */
static void talk_send(igw_node *v, uintptr_t who, const uint8_t *pkt, const igw_rtp_hdr *h, bool active)
{
    igw_node *s = v->source;
    if (!v->pub.allowed) {
        v->st.talk_gated++;
        return;
    }
    uint64_t now = igw_clock_us();
    uint16_t seq;
    uint32_t ts;
    if (!igw_peer_ready(s->peer) || igw_rtp_floor_map(&s->talk.floor, who, active, h, now, &seq, &ts) != IGW_FLOOR_FORWARD) {
        v->st.talk_no_floor++;
        return;
    }
    uint8_t out[IGW_PEER_BUF];
    size_t n = igw_rtp_strip(pkt, h, out, IGW_RTP_MTU);
    if (n == 0 || (igw_rtp_rewrite(out, s->talk.pt, seq, ts, s->talk.ssrc), igw_peer_send_rtp(s->peer, out, n)) != 0) {
        s->st.dropped++;
        return;
    }
    v->st.talk_forwarded++;
    v->st.talk_last_us = now;
    s->st.talkback_out++;
    s->st.rtp_out++;
    s->st.bytes_out += n;
}

/* One RTP packet from a viewer: its talk when it publishes. Counted, and
 * sent to the source's talkback (talk_send). */
static void viewer_talk(igw_node *v, const uint8_t *pkt, size_t len)
{
    igw_node *s = v->source;
    igw_rtp_hdr h;
    if (!v->pub.present || !s || !s->talk.present || !igw_rtp_parse(pkt, len, &h) || h.pt != v->pub.pt)
        return;
    v->st.talk_in++;
    /* Without the level every packet is activity: the holder keeps the
     * floor for as long as it sends. */
    bool active = true;
    if (v->pub.level_ext) {
        int level = igw_rtp_audio_level(pkt, len, &h, v->pub.level_ext);
        active = level >= 0 && level < TALK_ACTIVE_LEVEL;
    }
    talk_send(v, (uintptr_t)v, pkt, &h, active);
}

static bool side_tapped(const view_side *sd)
{
    for (int i = 0; i < IGW_MEDIA_TAPS_MAX; i++)
        if (sd->taps[i])
            return true;
    return false;
}

/* One RTP packet from a viewer with a side conversation or a tapped
 * interpreter: its published audio, sent to the taps while its gate is
 * open, stripped of CSRCs and extensions (their ids are the viewer's); its
 * own SSRC and numbering stay (the tap hears one speaker). */
static void viewer_tap(igw_node *v, const uint8_t *pkt, size_t len)
{
    igw_rtp_hdr h;
    if (!v->pub.present || !igw_rtp_parse(pkt, len, &h) || h.pt != v->pub.pt)
        return;
    v->st.talk_in++;
    if (!v->pub.allowed || !side_tapped(&v->side)) {
        v->st.talk_gated++;
        return;
    }
    uint8_t out[IGW_PEER_BUF];
    size_t n = igw_rtp_strip(pkt, &h, out, IGW_RTP_MTU);
    if (n == 0) {
        v->st.dropped++;
        return;
    }
    for (int i = 0; i < IGW_MEDIA_TAPS_MAX; i++)
        if (v->side.taps[i] &&
            g_socket_send_to(v->side.sock, v->side.taps[i], (const gchar *)out, n, NULL, NULL) != (gssize)n)
            v->st.dropped++; /* that processor's socket is full or gone: the others still hear */
    v->st.talk_forwarded++;
    v->st.talk_last_us = igw_clock_us();
}

/* One RTP packet on a viewer's side socket: its feed, onto the viewer's
 * audio stream (a side conversation) or onto the source's talkback in the
 * viewer's place (an interpreter: every packet is speech). Only RTP-sized
 * datagrams from loopback reach here (the socket is bound there); a new
 * SSRC continues our numbering. */
static void viewer_feed(igw_node *v, uint8_t *pkt, size_t len)
{
    igw_rtp_hdr h;
    src_track *tr = &v->side.feed;
    if (!igw_rtp_parse(pkt, len, &h)) {
        v->st.dropped++;
        return;
    }
    v->st.feed_in++;
    if (v->side.interpret) {
        if (v->pub.present && v->source && v->source->talk.present && side_tapped(&v->side))
            talk_send(v, (uintptr_t)&v->side, pkt, &h, true);
        return;
    }
    if (!tr->have_ssrc || tr->ssrc != h.ssrc) {
        if (tr->have_ssrc)
            tr->epoch++;
        tr->ssrc = h.ssrc;
        tr->have_ssrc = true;
    }
    viewer_forward(v, TRACK_AUDIO, tr, pkt, len, &h, false, igw_clock_us());
}

/* Reads up to RTP_BURST datagrams of a plain RTP socket and hands each of
 * RTP size to fn: the feeds of plain sources and of side conversations. */
static void drain_rtp(GSocket *sock, void (*fn)(igw_node *n, uint8_t *pkt, size_t len), igw_node *n)
{
    uint8_t buf[IGW_PEER_BUF];
    int fd = g_socket_get_fd(sock);
    for (int i = 0; i < RTP_BURST; i++) {
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0)
            break; /* EAGAIN, or an ICMP error queued by an earlier send: try next wakeup */
        if (r > 0 && (size_t)r <= IGW_RTP_MTU)
            fn(n, buf, (size_t)r);
    }
}

static gboolean side_feed_cb(GSocket *sock, GIOCondition cond, gpointer ud)
{
    (void)cond;
    drain_rtp(sock, viewer_feed, ud);
    return G_SOURCE_CONTINUE;
}

/* Watches v's side socket on its thread (a new one, or the one its
 * previous generation handed over). */
static void side_watch(igw_node *v)
{
    v->side.sock_src = g_socket_create_source(v->side.sock, G_IO_IN, NULL);
    g_source_set_callback(v->side.sock_src, (GSourceFunc)(void (*)(void))side_feed_cb, v, NULL);
    g_source_attach(v->side.sock_src, v->t->ctx);
}

/* A new side socket on 127.0.0.1 (any port). */
static bool side_open(view_side *sd, char *err, size_t errlen)
{
    GError *ge = NULL;
    GInetAddress *ia = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    GSocketAddress *sa = g_inet_socket_address_new(ia, 0);
    g_object_unref(ia);
    sd->sock = g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM, G_SOCKET_PROTOCOL_UDP, &ge);
    bool ok = sd->sock && g_socket_bind(sd->sock, sa, FALSE, &ge);
    g_object_unref(sa);
    g_clear_error(&ge);
    if (!ok) {
        snprintf(err, errlen, "cannot bind the side port");
        return false;
    }
    g_socket_set_blocking(sd->sock, FALSE);
    GSocketAddress *local = g_socket_get_local_address(sd->sock, NULL);
    sd->port = local ? g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(local)) : 0;
    if (local)
        g_object_unref(local);
    sd->feed.present = true;
    sd->feed.clock = 48000;
    sd->present = sd->port != 0;
    if (!sd->present)
        snprintf(err, errlen, "cannot read the side port");
    return sd->present;
}

igw_media_rc igw_fwd_viewer_tap(igw_node *v, const char *addr, uint16_t port, bool on, char *err, size_t errlen)
{
    if (!v->side.present) { /* a publishing viewer's first tap opens its interpreter */
        if (!v->pub.present) {
            snprintf(err, errlen, "this viewer sends no audio to tap");
            return IGW_MEDIA_EINVAL;
        }
        if (!on)
            return IGW_MEDIA_OK; /* nothing is tapped */
        if (!side_open(&v->side, err, errlen))
            return IGW_MEDIA_EFAIL;
        v->side.interpret = true;
        side_watch(v);
    }
    GSocketAddress *tap = NULL;
    if (addr) {
        GInetAddress *ia = g_inet_address_new_from_string(addr);
        if (!ia || port == 0) {
            if (ia)
                g_object_unref(ia);
            snprintf(err, errlen, "bad tap address");
            return IGW_MEDIA_EINVAL;
        }
        tap = g_inet_socket_address_new(ia, port);
        g_object_unref(ia);
    }
    int found = -1, free_slot = -1;
    for (int i = 0; i < IGW_MEDIA_TAPS_MAX; i++) {
        GSocketAddress *t = v->side.taps[i];
        if (!t) {
            if (free_slot < 0)
                free_slot = i;
            continue;
        }
        if (!tap) { /* off without an address: every tap */
            g_object_unref(t);
            v->side.taps[i] = NULL;
            continue;
        }
        GInetSocketAddress *a = G_INET_SOCKET_ADDRESS(t), *b = G_INET_SOCKET_ADDRESS(tap);
        if (g_inet_socket_address_get_port(a) == g_inet_socket_address_get_port(b) &&
            g_inet_address_equal(g_inet_socket_address_get_address(a), g_inet_socket_address_get_address(b)))
            found = i;
    }
    igw_media_rc rc = IGW_MEDIA_OK;
    if (tap && on && found < 0) {
        if (free_slot < 0) {
            snprintf(err, errlen, "at most %d taps", IGW_MEDIA_TAPS_MAX);
            rc = IGW_MEDIA_EINVAL;
        } else {
            v->side.taps[free_slot] = tap;
            tap = NULL;
        }
    } else if (tap && !on && found >= 0) {
        g_object_unref(v->side.taps[found]);
        v->side.taps[found] = NULL;
    }
    if (tap)
        g_object_unref(tap);
    return rc;
}

typedef struct rtcp_ctx {
    igw_node *v;
} rtcp_ctx;

/* A NACKed packet, from the source's history, renumbered for this viewer.
 * Only while its video is active: a paused or stopped track is a forwarding
 * barrier, and a NACK for a packet sent before the pause (the viewer asks
 * again every round trip for a while) must not bring media through it. */
static void viewer_retransmit(igw_node *v, uint16_t out_seq)
{
    view_track *vt = &v->view[TRACK_VIDEO];
    src_track  *tr = &v->source->src[TRACK_VIDEO];
    uint16_t in_seq;
    size_t len;
    if (vt->state != IGW_TRACK_ACTIVE) {
        v->st.dropped++;
        return;
    }
    if (v->rtx_budget == 0) {
        v->st.dropped++; /* a viewer NACKing beyond reason does not get to load the thread */
        return;
    }
    if (!igw_rtp_rewriter_unmap(&vt->rw, out_seq, &in_seq))
        return;
    v->rtx_budget--;
    const uint8_t *pkt = igw_rtp_history_get(tr->history, in_seq, &len);
    igw_rtp_hdr h;
    if (!pkt || !igw_rtp_parse(pkt, len, &h) || h.ssrc != tr->ssrc)
        return;
    uint8_t out[IGW_PEER_BUF];
    memcpy(out, pkt, len);
    igw_rtp_rewrite(out, vt->pt, out_seq, h.ts + vt->rw.ts_delta, vt->ssrc);
    if (igw_peer_send_rtp(v->peer, out, len) == 0) {
        v->st.rtx_out++;
        v->st.video_out++;
    }
}

static void viewer_rtcp_item(void *ud, const igw_rtcp_item *it)
{
    igw_node *v = ((rtcp_ctx *)ud)->v;
    view_track *video = &v->view[TRACK_VIDEO];
    if (!v->source || !video->present || it->media_ssrc != video->ssrc)
        return;
    switch (it->kind) {
    case IGW_RTCP_PLI:
    case IGW_RTCP_FIR:
        v->st.pli_in++;
        source_want_keyframe(v->source);
        break;
    case IGW_RTCP_NACK:
        v->st.nack_in++;
        viewer_retransmit(v, it->seq);
        break;
    default:
        break;
    }
}

/* ---- peer callbacks ---- */

static void node_on_rtp(void *ud, uint8_t *buf, size_t len)
{
    igw_node *n = ud;
    if (n->is_source) {
        source_rtp(n, buf, len);
    } else {
        n->st.rtp_in++;
        if (n->side.present && (!n->side.interpret || side_tapped(&n->side)))
            viewer_tap(n, buf, len);
        else
            viewer_talk(n, buf, len);
    }
}

/* A source's sender report: its time, for the LSR/DLSR of our reports. */
static void source_rtcp_item(void *ud, const igw_rtcp_item *it)
{
    igw_node *s = ((rtcp_ctx *)ud)->v;
    if (it->kind != IGW_RTCP_SR)
        return;
    for (int k = 0; k < TRACK_KINDS; k++)
        if (s->src[k].present && s->src[k].have_ssrc && s->src[k].ssrc == it->sender_ssrc) {
            s->src[k].lsr = (uint32_t)(it->ntp >> 16);
            s->src[k].lsr_at_us = igw_clock_us();
        }
}

static void node_on_rtcp(void *ud, uint8_t *buf, size_t len)
{
    igw_node *n = ud;
    rtcp_ctx c = {n};
    (void)igw_rtcp_walk(buf, len, n->is_source ? source_rtcp_item : viewer_rtcp_item, &c);
}

static void node_on_event(void *ud, igw_media_event_kind kind, const char *reason)
{
    igw_node *n = ud;
    igw_registry_emit(n->m, kind, n, reason);
    if (kind == IGW_MEDIA_EV_DTLS_CONNECTED) {
        n->st.connected = true;
        if (!n->is_source && n->source && n->view[TRACK_VIDEO].present &&
            n->view[TRACK_VIDEO].state == IGW_TRACK_ACTIVE)
            source_want_keyframe(n->source);
    }
}

static void node_on_failed(void *ud, igw_media_event_kind kind, const char *reason)
{
    igw_node *n = ud;
    igw_registry_emit(n->m, kind, n, reason);
    close_later(n, reason);
}

static const igw_peer_ops node_ops = {node_on_rtp, node_on_rtcp, node_on_event, node_on_failed};

static igw_peer *node_peer(igw_node *n, char *err, size_t errlen)
{
    igw_peer_config pc = {n->t->ctx, n->m->cert, &n->m->cfg, n->t->mux, n->t->nmux};
    return igw_peer_new(&pc, &node_ops, n, err, errlen);
}

/* ---- descriptions ---- */

static igw_sdp *local_new(void)
{
    igw_sdp *l = g_new0(igw_sdp, 1);
    l->sess_id = ((uint64_t)g_random_int() << 31) ^ g_random_int();
    l->sess_version = 2;
    l->bundle = true;
    return l;
}

static igw_sdp_media *local_section(igw_sdp *l, igw_sdp_kind kind, const char *mid, const char *proto)
{
    igw_sdp_media *lm = &l->media[l->nmedia++];
    lm->kind = kind;
    g_strlcpy(lm->mid, mid, sizeof lm->mid);
    g_strlcpy(lm->proto, proto[0] ? proto : "UDP/TLS/RTP/SAVPF", sizeof lm->proto);
    lm->port = 9;
    lm->rtcp_mux = true;
    return lm;
}

/* An answer section refusing the offered one (port 0, first payload type). */
static void local_reject(igw_sdp *l, const igw_sdp_media *om)
{
    igw_sdp_media *lm = local_section(l, om->kind, om->mid, om->proto);
    lm->port = 0;
    lm->dir = IGW_SDP_INACTIVE;
    if (om->ncodecs) {
        lm->codecs[0] = om->codecs[0];
        lm->ncodecs = 1;
    }
}

static void local_accept(igw_sdp *l, igw_sdp_media *lm)
{
    g_strlcpy(l->bundle_mids[l->nbundle++], lm->mid, sizeof l->bundle_mids[0]);
}

/* Codec c (kind k) as the section's only one, with our feedback only: NACK,
 * PLI and FIR for video as c has them, none for audio, never REMB or
 * transport-cc (we estimate no bandwidth). */
static void local_codec(igw_sdp_media *lm, const igw_sdp_codec *c, int k)
{
    lm->codecs[0] = *c;
    lm->codecs[0].fb_remb = lm->codecs[0].fb_twcc = false;
    if (k == TRACK_AUDIO)
        lm->codecs[0].fb_nack = lm->codecs[0].fb_pli = lm->codecs[0].fb_fir = false;
    lm->ncodecs = 1;
}

/* An answer section accepting the offered one with its codec c, in dir. */
static igw_sdp_media *local_answer(igw_sdp *l, const igw_sdp_media *om, const igw_sdp_codec *c, int k,
                                   igw_sdp_dir dir)
{
    igw_sdp_media *lm = local_section(l, om->kind, om->mid, om->proto);
    lm->dir = dir;
    lm->rtcp_rsize = om->rtcp_rsize;
    local_codec(lm, c, k);
    local_accept(l, lm);
    return lm;
}

/* Our outgoing track (toward a viewer, or the talkback toward a camera):
 * SSRC, cname, msid "igw igw-<track>". */
static void local_sender(igw_sdp_media *lm, uint32_t ssrc, const char *track)
{
    lm->ssrc[0] = ssrc;
    lm->nssrc = 1;
    g_strlcpy(lm->cname, "igw", sizeof lm->cname);
    snprintf(lm->msid, sizeof lm->msid, "igw igw-%s", track);
}

/* Gives a negotiated node its transport and makes it current: the peer's
 * ICE/DTLS side of our description l (its transport in section `first`),
 * the remote offer applied when we answer (remote NULL: we offer), l
 * written into out, the node committed. The caller frees n on failure. */
/* prev (or NULL): the generation n replaces. When its remote continues
 * (igw_peer_continuable: an ICE restart) n takes prev's transport over,
 * restarted, and gives it back if n does not start. */
static igw_media_rc node_start(igw_node *n, igw_node *prev, igw_sdp *l, size_t first, const igw_sdp *remote,
                               char *out, size_t cap, char *err, size_t errlen)
{
    bool taken = prev && prev->peer && remote && igw_peer_continuable(prev->peer, remote);
    if (taken) {
        if (igw_peer_restart(prev->peer, n, err, errlen) != 0)
            return IGW_MEDIA_EFAIL;
        n->peer = prev->peer;
        prev->peer = NULL;
    } else if (!(n->peer = node_peer(n, err, errlen))) {
        return IGW_MEDIA_EFAIL;
    }
    igw_media_rc rc = IGW_MEDIA_OK;
    bool committed = false;
    igw_peer_describe(n->peer, l, first, remote != NULL, remote ? remote->setup : IGW_SDP_SETUP_NONE);
    if (remote && igw_peer_set_remote(n->peer, remote, err, errlen) != 0) {
        rc = IGW_MEDIA_EINVAL;
    } else if (igw_sdp_write(l, out, cap) == 0) {
        snprintf(err, errlen, "description does not fit in %zu bytes", cap);
        rc = IGW_MEDIA_EFAIL;
    } else {
        committed = true; /* from here prev may be closed: a failure frees the transport with n */
        rc = node_commit(n, err, errlen);
    }
    if (rc != IGW_MEDIA_OK && taken && !committed) { /* prev goes on with it */
        igw_peer_return(n->peer, prev);
        prev->peer = n->peer;
        n->peer = NULL;
    }
    return rc;
}

static void view_track_start(igw_node *v, int k, uint32_t clock, bool paused)
{
    view_track *vt = &v->view[k];
    vt->present = true;
    vt->ssrc = random_ssrc();
    vt->state = igw_track_next(IGW_TRACK_NONE, paused ? IGW_TRACK_ON_STARTVISION : IGW_TRACK_ON_START, 0, NULL);
    igw_rtp_rewriter_init(&vt->rw, clock, (uint16_t)g_random_int(), g_random_int());
    vt->epoch = v->source->src[k].epoch;
    vt->waiting_keyframe = k == TRACK_VIDEO;
}

/* The next generation's track after prev's: its state, and on the same DTLS
 * association the same stream. */
static void view_track_continue(view_track *vt, const view_track *prev, bool same_stream)
{
    vt->state = prev->state;
    if (!same_stream)
        return;
    vt->ssrc = prev->ssrc;
    vt->rw = prev->rw; /* the same mapping: the source's next packet follows on */
    vt->epoch = prev->epoch;
    vt->waiting_keyframe = prev->waiting_keyframe;
    vt->packets = prev->packets;
    vt->octets = prev->octets;
}

static void source_attach_viewer(igw_node *s, igw_node *v)
{
    if (s->nviewers == s->capviewers) {
        s->capviewers = s->capviewers ? s->capviewers * 2 : 8;
        s->viewers = g_renew(igw_node *, s->viewers, s->capviewers);
    }
    s->viewers[s->nviewers++] = v;
    s->st.viewers = (uint32_t)s->nviewers;
    v->source = s;
}

/* ---- sources ---- */

igw_media_rc igw_fwd_source_offer(igw_mthread *t, const char *id, uint32_t rev, const igw_sdp *offer, char *answer,
                                  size_t cap, char *err, size_t errlen)
{
    igw_node *n = node_new(t, id, rev, true);
    igw_sdp *l = local_new();
    igw_media_rc rc = IGW_MEDIA_EINVAL;
    int first = -1;
    for (size_t i = 0; i < offer->nmedia; i++) {
        const igw_sdp_media *om = &offer->media[i];
        int k = track_of(om->kind), ci = -1;
        if (om->kind == IGW_SDP_OTHER) { /* an answer cannot even name it to refuse it */
            snprintf(err, errlen, "section %.32s: unsupported media kind", om->mid);
            goto out;
        }
        /* The camera sends on it, and (audio) may play what we send: a
         * speaker for talk. The first such section of a kind is taken. */
        bool recv = om->dir == IGW_SDP_SENDONLY || om->dir == IGW_SDP_SENDRECV;
        bool talk = k == TRACK_AUDIO && (om->dir == IGW_SDP_RECVONLY || om->dir == IGW_SDP_SENDRECV);
        if (k >= 0 && om->port != 0 && (recv || talk) && !n->src[k].present && !(k == TRACK_AUDIO && n->talk.present))
            ci = k == TRACK_VIDEO ? igw_sdp_pick_h264(om, IGW_H264_UNKNOWN) : igw_sdp_pick_opus(om);
        /* Packets are told apart by payload type: two tracks cannot share one. */
        if (ci >= 0 && n->src[!k].present && n->src[!k].pt == om->codecs[ci].pt)
            ci = -1;
        if (ci < 0) {
            local_reject(l, om);
            continue;
        }
        const igw_sdp_codec *oc = &om->codecs[ci];
        igw_sdp_media *lm = local_answer(l, om, oc, k, igw_sdp_answer_dir(om->dir, talk, true));
        if (first < 0)
            first = (int)(l->nmedia - 1);
        if (talk) {
            talkback *tb = &n->talk;
            tb->present = true;
            tb->pt = oc->pt;
            tb->ssrc = random_ssrc();
            igw_rtp_floor_init(&tb->floor, oc->clock, (uint16_t)g_random_int(), g_random_int(), FLOOR_HOLD_US);
            local_sender(lm, tb->ssrc, "talk");
        }
        if (!recv)
            continue;
        src_track *tr = &n->src[k];
        tr->present = true;
        tr->pt = oc->pt;
        tr->clock = oc->clock;
        g_strlcpy(tr->fmtp, oc->fmtp, sizeof tr->fmtp);
        if (k == TRACK_VIDEO) {
            tr->profile = igw_sdp_h264_profile(oc->fmtp);
            if (!(tr->history = igw_rtp_history_new(HISTORY_SLOTS))) {
                snprintf(err, errlen, "out of memory");
                rc = IGW_MEDIA_EFAIL;
                goto out;
            }
        }
    }
    if (first < 0) {
        snprintf(err, errlen, "no common codec: need a sending H264 (packetization-mode=1) or opus/48000/2 section");
        goto out;
    }
    if ((rc = node_start(n, NULL, l, (size_t)first, offer, answer, cap, err, errlen)) != IGW_MEDIA_OK)
        goto out;
    n = NULL;
out:
    if (n)
        node_free(n);
    g_free(l);
    return rc;
}

static gboolean rtp_feed_cb(GSocket *sock, GIOCondition cond, gpointer ud)
{
    (void)cond;
    drain_rtp(sock, source_rtp, ud);
    return G_SOURCE_CONTINUE;
}

igw_media_rc igw_fwd_source_rtp(igw_mthread *t, const char *id, const char *addr, uint16_t port, uint8_t video_pt,
                                const char *profile, uint8_t audio_pt, uint16_t *bound, char *err, size_t errlen)
{
    if ((!video_pt && !audio_pt) || video_pt > 127 || audio_pt > 127 || (video_pt && video_pt == audio_pt)) {
        snprintf(err, errlen, "payload types: one or two distinct values 1..127");
        return IGW_MEDIA_EINVAL;
    }
    GInetAddress *ia = g_inet_address_new_from_string(addr);
    if (!ia) {
        snprintf(err, errlen, "bad address");
        return IGW_MEDIA_EINVAL;
    }
    igw_node *n = node_new(t, id, 0, true);
    GError *ge = NULL;
    GSocketAddress *sa = g_inet_socket_address_new(ia, port);
    g_object_unref(ia);
    n->sock = g_socket_new(g_socket_address_get_family(sa), G_SOCKET_TYPE_DATAGRAM, G_SOCKET_PROTOCOL_UDP, &ge);
    if (!n->sock || !g_socket_bind(n->sock, sa, FALSE, &ge)) { /* no SO_REUSEPORT: one feed per port */
        snprintf(err, errlen, "cannot bind the RTP port");
        g_clear_error(&ge);
        g_object_unref(sa);
        node_free(n);
        return IGW_MEDIA_EFAIL;
    }
    g_object_unref(sa);
    g_socket_set_blocking(n->sock, FALSE);
    (void)g_socket_set_option(n->sock, SOL_SOCKET, SO_RCVBUF, 4 << 20, NULL);
    GSocketAddress *local = g_socket_get_local_address(n->sock, NULL);
    *bound = local ? g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(local)) : port;
    if (local)
        g_object_unref(local);
    if (video_pt) {
        char fmtp[128];
        snprintf(fmtp, sizeof fmtp, "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=%.6s",
                 profile ? profile : "42e01f");
        src_track *tr = &n->src[TRACK_VIDEO];
        tr->present = true;
        tr->pt = video_pt;
        tr->clock = 90000;
        g_strlcpy(tr->fmtp, fmtp, sizeof tr->fmtp);
        tr->profile = igw_sdp_h264_profile(fmtp);
        if (!(tr->history = igw_rtp_history_new(HISTORY_SLOTS))) {
            snprintf(err, errlen, "out of memory");
            node_free(n);
            return IGW_MEDIA_EFAIL;
        }
    }
    if (audio_pt) {
        src_track *tr = &n->src[TRACK_AUDIO];
        tr->present = true;
        tr->pt = audio_pt;
        tr->clock = 48000;
        g_strlcpy(tr->fmtp, "minptime=10;useinbandfec=1", sizeof tr->fmtp);
    }
    n->st.connected = true;
    n->sock_src = g_socket_create_source(n->sock, G_IO_IN, NULL);
    g_source_set_callback(n->sock_src, (GSourceFunc)(void (*)(void))rtp_feed_cb, n, NULL);
    g_source_attach(n->sock_src, t->ctx);
    igw_media_rc rc = node_commit(n, err, errlen);
    if (rc != IGW_MEDIA_OK)
        node_free(n);
    return rc;
}

/* ---- viewers ---- */

igw_media_rc igw_fwd_viewer_offer(igw_node *s, const char *id, uint32_t rev, unsigned flags, const igw_sdp *offer,
                                  char *answer, size_t cap, char *err, size_t errlen)
{
    bool paused = flags & IGW_MEDIA_VIEWER_PAUSED, side = flags & IGW_MEDIA_VIEWER_SIDE;
    bool publish = side || (flags & IGW_MEDIA_VIEWER_PUBLISH);
    /* A new generation of this viewer: its tracks' states carry over (a
     * paused or stopped track stays so); an ICE restart of the same remote
     * goes on with its DTLS association and, on it, with the same streams
     * (SSRC, sequence and timestamps continue: the remote's decoders too). */
    bool elsewhere = false;
    igw_node *prev = igw_registry_here(s->t, id, &elsewhere);
    if (prev && (prev->is_source || prev->revision >= rev || prev->source != s))
        prev = NULL; /* refused by node_commit, or another camera's stream */
    bool same = prev && prev->peer && igw_peer_continuable(prev->peer, offer);
    igw_node *v = node_new(s->t, id, rev, false);
    v->source = s;
    igw_sdp *l = local_new();
    igw_media_rc rc = IGW_MEDIA_EINVAL;
    int first = -1;
    bool served = false;
    /* The side socket: the previous generation's (taken now, given back
     * if this one fails while that one lives), or a new one. */
    bool handed = prev && prev->side.present;
    if (handed) {
        v->side = prev->side;
        memset(&prev->side, 0, sizeof prev->side);
        side_unwatch(&v->side); /* it named prev */
    } else if (side && !side_open(&v->side, err, errlen)) {
        rc = IGW_MEDIA_EFAIL;
        goto out;
    }
    for (size_t i = 0; i < offer->nmedia; i++) {
        const igw_sdp_media *om = &offer->media[i];
        int k = track_of(om->kind), ci = -1;
        if (om->kind == IGW_SDP_OTHER) { /* an answer cannot even name it to refuse it */
            snprintf(err, errlen, "section %.32s: unsupported media kind", om->mid);
            goto out;
        }
        /* The viewer receives, and (audio) may publish: its talk. */
        bool v_recv = om->dir == IGW_SDP_RECVONLY || om->dir == IGW_SDP_SENDRECV;
        bool v_send = k == TRACK_AUDIO && (om->dir == IGW_SDP_SENDONLY || om->dir == IGW_SDP_SENDRECV);
        if (v_send && om->port != 0 && !publish) { /* the caller's rule, whatever the source could take */
            snprintf(err, errlen, "section %.32s sends audio: this viewer may only receive (recvonly expected)", om->mid);
            goto out;
        }
        /* A section takes the roles it offers that no earlier one took:
         * one stream toward the viewer per kind and (audio) one from it.
         * Without a side conversation both audio roles are one section's. */
        bool take_recv = v_recv && !v->view[k].present && !(k == TRACK_AUDIO && !side && v->pub.present);
        bool take_send = v_send && !v->pub.present && !(!side && v->view[k].present);
        bool wanted = k >= 0 && om->port != 0 && (take_recv || take_send);
        if (wanted) {
            if (k == TRACK_AUDIO)
                ci = igw_sdp_pick_opus(om);
            else if (!s->src[k].present || (ci = igw_sdp_pick_h264(om, s->src[k].profile)) < 0)
                ci = igw_sdp_pick_h264(om, IGW_H264_UNKNOWN);
        }
        if (ci < 0) {
            local_reject(l, om);
            continue;
        }
        /* We send what the source has; we take the viewer's audio only when
         * the source has a talkback to put it on. Neither (a camera without
         * its microphone, a viewer publishing to a camera without a
         * speaker): inactive, but kept in the bundle. Refusing it (port 0)
         * would take the offer's BUNDLE-tag section out of the group, which
         * Chrome cannot apply ("Failed to setup RTCP mux"). */
        bool we_send = take_recv && (s->src[k].present || (k == TRACK_AUDIO && side));
        bool we_recv = take_send && (s->talk.present || side);
        igw_sdp_dir dir = igw_sdp_answer_dir(om->dir, we_send, we_recv);
        igw_sdp_media *lm = local_answer(l, om, &om->codecs[ci], k, dir);
        if (first < 0)
            first = (int)(l->nmedia - 1);
        if (dir == IGW_SDP_INACTIVE)
            continue;
        served = true;
        if (we_recv) {
            v->pub.present = true;
            v->pub.pt = om->codecs[ci].pt;
            v->pub.level_ext = lm->audio_level_ext = om->audio_level_ext;
        }
        if (!we_send)
            continue;
        if (k == TRACK_VIDEO && s->src[k].fmtp[0]) /* we send the source's stream */
            g_strlcpy(lm->codecs[0].fmtp, s->src[k].fmtp, sizeof lm->codecs[0].fmtp);
        bool fed = k == TRACK_AUDIO && side; /* the side's feed, not the source */
        view_track_start(v, k, fed ? v->side.feed.clock : s->src[k].clock, fed ? false : paused);
        if (fed)
            v->view[k].epoch = v->side.feed.epoch;
        if (prev && prev->view[k].present)
            view_track_continue(&v->view[k], &prev->view[k], same);
        v->view[k].pt = om->codecs[ci].pt;
        g_strlcpy(v->view[k].mid, om->mid, sizeof v->view[k].mid);
        local_sender(lm, v->view[k].ssrc, kind_name[k]);
    }
    if (!served) {
        snprintf(err, errlen, "no common codec: the source sends %s%s%s", s->src[TRACK_VIDEO].present ? "H264" : "",
                 s->src[0].present && s->src[1].present ? " and " : "", s->src[TRACK_AUDIO].present ? "opus" : "");
        goto out;
    }
    if (side && !v->pub.present) {
        snprintf(err, errlen, "a side conversation needs an audio section the viewer sends on");
        goto out;
    }
    if ((rc = node_start(v, prev, l, (size_t)first, offer, answer, cap, err, errlen)) != IGW_MEDIA_OK)
        goto out;
    source_attach_viewer(s, v);
    if (v->side.present)
        side_watch(v);
    v = NULL;
out:
    if (v) {
        /* prev lives unless this attempt's commit closed it (pointer
         * compared, never read): then the socket goes with v. */
        if (handed && igw_registry_here(v->t, id, NULL) == prev) {
            prev->side = v->side;
            memset(&v->side, 0, sizeof v->side);
            side_watch(prev);
        }
        node_free(v);
    }
    g_free(l);
    return rc;
}

/* ---- plain-RTP viewers (a processor's frames) ---- */

igw_media_rc igw_fwd_viewer_rtp(igw_node *s, const char *id, const char *addr, uint16_t port, char *err,
                                size_t errlen)
{
    if (!s->src[TRACK_VIDEO].present) {
        snprintf(err, errlen, "the source sends no video");
        return IGW_MEDIA_EINVAL;
    }
    GInetAddress *ia = g_inet_address_new_from_string(addr);
    if (!ia || port == 0) {
        if (ia)
            g_object_unref(ia);
        snprintf(err, errlen, "bad address");
        return IGW_MEDIA_EINVAL;
    }
    igw_node *v = node_new(s->t, id, 1, false);
    v->source = s;
    v->dest = g_inet_socket_address_new(ia, port);
    g_object_unref(ia);
    GError *ge = NULL;
    v->sock = g_socket_new(g_socket_address_get_family(v->dest), G_SOCKET_TYPE_DATAGRAM, G_SOCKET_PROTOCOL_UDP, &ge);
    g_clear_error(&ge);
    if (!v->sock) {
        snprintf(err, errlen, "cannot open a socket");
        node_free(v);
        return IGW_MEDIA_EFAIL;
    }
    g_socket_set_blocking(v->sock, FALSE);
    /* Video only, paused: nothing flows but a take's frame. */
    view_track_start(v, TRACK_VIDEO, s->src[TRACK_VIDEO].clock, true);
    v->view[TRACK_VIDEO].pt = s->src[TRACK_VIDEO].pt;
    igw_media_rc rc = node_commit(v, err, errlen);
    if (rc != IGW_MEDIA_OK) {
        node_free(v);
        return rc;
    }
    source_attach_viewer(s, v);
    return IGW_MEDIA_OK;
}

igw_media_rc igw_fwd_viewer_take(igw_node *v, char *err, size_t errlen)
{
    view_track *vt = &v->view[TRACK_VIDEO];
    if (v->peer || !v->dest || !vt->present) {
        snprintf(err, errlen, "not a plain-RTP viewer");
        return IGW_MEDIA_EINVAL;
    }
    if (vt->state == IGW_TRACK_PAUSED) {
        igw_sm_result r = igw_sm_fire(&igw_sm_track, vt->state, IGW_TRACK_ON_RESUME, 0);
        if (!r.ok) {
            snprintf(err, errlen, "the track cannot resume");
            return IGW_MEDIA_ECONFLICT;
        }
        vt->state = r.next;
        igw_rtp_rewriter_rebase(&vt->rw);
    }
    vt->waiting_keyframe = true;
    v->take = true;
    if (v->source)
        source_want_keyframe(v->source);
    return IGW_MEDIA_OK;
}

igw_media_rc igw_fwd_viewer_make_offer(igw_node *s, const char *id, uint32_t rev, bool paused, char *offer,
                                       size_t cap, char *err, size_t errlen)
{
    igw_node *v = node_new(s->t, id, rev, false);
    v->source = s;
    v->offered = true;
    igw_sdp *l = local_new();
    igw_media_rc rc = IGW_MEDIA_EFAIL;
    for (int k = 0; k < TRACK_KINDS; k++) {
        const src_track *tr = &s->src[k];
        if (!tr->present)
            continue;
        char mid[4];
        snprintf(mid, sizeof mid, "%u", (unsigned)l->nmedia);
        igw_sdp_media *lm = local_section(l, k == TRACK_VIDEO ? IGW_SDP_VIDEO : IGW_SDP_AUDIO, mid, "");
        lm->dir = IGW_SDP_SENDONLY;
        lm->rtcp_rsize = true;
        igw_sdp_codec c = {.pt = tr->pt, .clock = tr->clock, .channels = k == TRACK_AUDIO ? 2 : 0,
                           .fb_nack = true, .fb_pli = true, .fb_fir = true};
        g_strlcpy(c.name, k == TRACK_VIDEO ? "H264" : "opus", sizeof c.name);
        g_strlcpy(c.fmtp, tr->fmtp, sizeof c.fmtp);
        local_codec(lm, &c, k);
        view_track_start(v, k, tr->clock, paused);
        v->view[k].pt = tr->pt;
        g_strlcpy(v->view[k].mid, mid, sizeof v->view[k].mid);
        local_sender(lm, v->view[k].ssrc, kind_name[k]);
        local_accept(l, lm);
    }
    if (l->nmedia == 0) {
        snprintf(err, errlen, "the source has no track");
        rc = IGW_MEDIA_EINVAL;
        goto out;
    }
    if ((rc = node_start(v, NULL, l, 0, NULL, offer, cap, err, errlen)) != IGW_MEDIA_OK)
        goto out;
    source_attach_viewer(s, v);
    v = NULL;
out:
    if (v)
        node_free(v);
    g_free(l);
    return rc;
}

igw_media_rc igw_fwd_viewer_answer(igw_node *v, const igw_sdp *answer, char *err, size_t errlen)
{
    if (!v->offered) {
        snprintf(err, errlen, "no offer of ours is waiting for an answer");
        return IGW_MEDIA_EINVAL;
    }
    if (answer->setup == IGW_SDP_SETUP_ACTPASS) {
        snprintf(err, errlen, "an answer must say setup active or passive");
        return IGW_MEDIA_EINVAL;
    }
    bool keep[TRACK_KINDS] = {false, false};
    for (int k = 0; k < TRACK_KINDS; k++) {
        view_track *vt = &v->view[k];
        if (!vt->present)
            continue;
        for (size_t i = 0; i < answer->nmedia; i++) {
            const igw_sdp_media *am = &answer->media[i];
            if (strcmp(am->mid, vt->mid) != 0 || am->port == 0 || track_of(am->kind) != k ||
                !(am->dir == IGW_SDP_RECVONLY || am->dir == IGW_SDP_SENDRECV))
                continue;
            int ci = k == TRACK_VIDEO ? igw_sdp_find_codec(am, "H264", 90000, 0) : igw_sdp_pick_opus(am);
            if (ci >= 0) {
                vt->pt = am->codecs[ci].pt;
                keep[k] = true;
            }
        }
    }
    if (!keep[TRACK_AUDIO] && !keep[TRACK_VIDEO]) {
        snprintf(err, errlen, "the answer accepts no track");
        return IGW_MEDIA_EINVAL;
    }
    if (igw_peer_set_remote(v->peer, answer, err, errlen) != 0)
        return IGW_MEDIA_EINVAL;
    for (int k = 0; k < TRACK_KINDS; k++)
        if (!keep[k])
            v->view[k].present = false;
    v->offered = false;
    return IGW_MEDIA_OK;
}

igw_media_rc igw_fwd_viewer_track(igw_node *v, igw_media_kinds kinds, int trigger, int *state, char *err,
                                  size_t errlen)
{
    if (trigger < 0 || trigger >= IGW_TRACK__TRIGGERS || !(kinds & IGW_MEDIA_BOTH)) {
        snprintf(err, errlen, "unknown trigger or kind");
        return IGW_MEDIA_EINVAL;
    }
    int next[TRACK_KINDS] = {0, 0}, first = -1;
    for (int k = 0; k < TRACK_KINDS; k++) {
        if (!(kinds & (1 << k)))
            continue;
        if (!v->view[k].present) {
            if (kinds != IGW_MEDIA_BOTH) {
                snprintf(err, errlen, "the viewer has no %s track", kind_name[k]);
                return IGW_MEDIA_ENOENT;
            }
            continue;
        }
        igw_sm_result r = igw_sm_fire(&igw_sm_track, v->view[k].state, trigger, IGW_TRACK_IF_SAMETRACK);
        if (!r.ok) {
            snprintf(err, errlen, "%s track: %s", kind_name[k], r.reason ? r.reason : "not allowed in this state");
            return IGW_MEDIA_ECONFLICT;
        }
        next[k] = r.next;
        if (first < 0)
            first = k;
    }
    if (first < 0) {
        snprintf(err, errlen, "the viewer has no track");
        return IGW_MEDIA_ENOENT;
    }
    for (int k = 0; k < TRACK_KINDS; k++) {
        view_track *vt = &v->view[k];
        if (!(kinds & (1 << k)) || !vt->present)
            continue;
        bool starts = next[k] == IGW_TRACK_ACTIVE && vt->state != IGW_TRACK_ACTIVE;
        vt->state = next[k];
        if (k == TRACK_VIDEO && next[k] != IGW_TRACK_ACTIVE)
            v->take = false; /* a take waiting for its frame is over */
        if (starts) {
            igw_rtp_rewriter_rebase(&vt->rw);
            if (k == TRACK_VIDEO) {
                vt->waiting_keyframe = true;
                source_want_keyframe(v->source);
            }
        }
    }
    if (state)
        *state = v->view[first].state;
    return IGW_MEDIA_OK;
}

igw_media_rc igw_fwd_viewer_publish(igw_node *v, bool allowed)
{
    v->pub.allowed = allowed;
    if (!allowed && v->source) /* its next packet is not heard; another may take the floor */
        igw_rtp_floor_release(&v->source->talk.floor, (uintptr_t)v);
    return IGW_MEDIA_OK;
}

void igw_fwd_stats(const igw_node *n, igw_media_stats *out)
{
    *out = n->st;
    out->publish_allowed = !n->is_source && n->pub.allowed;
    out->audio_state = n->view[TRACK_AUDIO].present ? n->view[TRACK_AUDIO].state : 0;
    out->video_state = n->view[TRACK_VIDEO].present ? n->view[TRACK_VIDEO].state : 0;
    out->side_port = n->side.present ? n->side.port : 0;
}

/* ---- the tick ---- */

static void viewer_reports(igw_node *v, uint64_t now_us)
{
    if (!v->peer || !igw_peer_ready(v->peer) || now_us - v->last_sr_us < SR_INTERVAL_US)
        return;
    v->last_sr_us = now_us;
    uint64_t ntp = igw_rtp_ntp_from_unix_us((uint64_t)g_get_real_time());
    for (int k = 0; k < TRACK_KINDS; k++) {
        view_track *vt = &v->view[k];
        if (!vt->present || vt->packets == 0 || !vt->rw.started)
            continue;
        uint32_t ts = vt->rw.last_ts + (uint32_t)((now_us - vt->rw.last_us) * vt->rw.clock / 1000000);
        uint8_t buf[IGW_PEER_BUF];
        size_t n = igw_rtcp_write_sr(buf, sizeof buf, vt->ssrc, ntp, ts, vt->packets, vt->octets);
        if (n && igw_peer_send_rtcp(v->peer, buf, n) == 0)
            v->st.sr_out++;
    }
}

/* A receiver report toward a WebRTC source each second, a block per track:
 * loss, jitter and round-trip data a camera's rate control reads, and the
 * sender's proof that we are still here. */
static void source_reports(igw_node *s, uint64_t now_us)
{
    if (!s->peer || !igw_peer_ready(s->peer) || now_us - s->last_sr_us < SR_INTERVAL_US)
        return;
    s->last_sr_us = now_us;
    igw_rtcp_report rb[TRACK_KINDS];
    size_t nb = 0;
    for (int k = 0; k < TRACK_KINDS; k++) {
        src_track *tr = &s->src[k];
        if (!tr->present || !tr->have_ssrc)
            continue;
        uint64_t expected = (uint64_t)(tr->ext_max - tr->ext_base) + 1;
        int64_t exp_int = (int64_t)(expected - tr->expected_prior);
        int64_t lost_int = exp_int - (int64_t)(tr->received - tr->received_prior);
        tr->expected_prior = expected;
        tr->received_prior = tr->received;
        igw_rtcp_report *r = &rb[nb++];
        r->ssrc = tr->ssrc;
        r->fraction_lost = exp_int > 0 && lost_int > 0 ? (uint8_t)((lost_int << 8) / exp_int) : 0;
        int64_t lost = (int64_t)expected - (int64_t)tr->received;
        r->cumulative_lost = lost > INT32_MAX ? INT32_MAX : lost < INT32_MIN ? INT32_MIN : (int32_t)lost;
        r->ext_highest_seq = tr->ext_max;
        r->jitter = tr->jitter_q4 >> 4;
        r->lsr = tr->lsr;
        r->dlsr = tr->lsr ? (uint32_t)((now_us - tr->lsr_at_us) * 65536 / 1000000) : 0;
    }
    uint8_t buf[IGW_PEER_BUF];
    size_t n = igw_rtcp_write_rr(buf, sizeof buf, s->rtcp_ssrc, rb, nb);
    if (n)
        (void)igw_peer_send_rtcp(s->peer, buf, n);
}

/* Some connected viewer waits for a keyframe to start its video. */
static bool source_starving(const igw_node *s)
{
    for (size_t i = 0; i < s->nviewers; i++) {
        const igw_node *v = s->viewers[i];
        const view_track *vt = &v->view[TRACK_VIDEO];
        if (vt->present && vt->state == IGW_TRACK_ACTIVE && vt->waiting_keyframe &&
            (v->peer ? igw_peer_ready(v->peer) : v->dest != NULL))
            return true;
    }
    return false;
}

void igw_fwd_tick(igw_mthread *t, uint64_t now_us)
{
    for (GList *it = t->nodes.head; it; it = it->next) {
        igw_node *n = it->data;
        if (n->closing)
            continue;
        if (n->peer)
            igw_peer_tick(n->peer, now_us);
        if (n->is_source) {
            source_reports(n, now_us);
            src_track *tr = &n->src[TRACK_VIDEO];
            if (tr->pli_pending &&
                now_us - tr->last_pli_us >= (uint64_t)n->m->cfg.keyframe_min_interval_ms * 1000)
                source_send_pli(n, now_us);
            if (!tr->pli_pending && tr->present && source_starving(n) &&
                now_us - tr->last_pli_us >= (uint64_t)n->m->cfg.keyframe_min_interval_ms * 1000)
                source_send_pli(n, now_us); /* the last request or its keyframe was lost */
        } else {
            n->rtx_budget = RTX_PER_TICK;
            viewer_reports(n, now_us);
        }
    }
}
