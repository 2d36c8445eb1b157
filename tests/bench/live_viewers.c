/* live_viewers.c - igw-live-viewers: many recvonly WebRTC viewers in one
 * process, the load client of `make bench-live` (tests/bench/bench_live.mjs).
 *
 * Each viewer is the media library's own transport (src/media/peer.h: libnice
 * in full ICE mode, DTLS, SRTP) used as the *client*: it makes a recvonly
 * offer (H264 + Opus, BUNDLE, rtcp-mux, no trickle), applies the server's
 * answer, decrypts every packet and counts it; loss comes from the RTP
 * sequence numbers of each SSRC it receives (RFC 3550 A.3). A receiver report
 * every second is its proof of life (consent). Nothing is decoded: the point
 * is a peer cheap enough that 100 of them fit beside the server on 2 cores.
 *
 * One thread: stdin, the peers and the timers share the default GLib main
 * context, so no lock is needed anywhere.
 *
 * In (one object per line), out (one reply per request, events as they come):
 *   {"op":"offer","id":..}             -> {"type":"reply","re":"offer","ok":true,"sdp":offer}
 *   {"op":"answer","id":..,"sdp":..}   -> {..,"ok":true}
 *   {"op":"close","id":..}             -> {..,"ok":true}
 *   {"op":"totals"}                    -> {..,"viewers":n,"connected":n,"receiving":n,
 *                                           "rtp_in":n,"rtp_expected":n,"bytes_in":n}
 *   {"type":"event","event":"dtls-connected|first-packet|failed","id":..,"reason":..}
 * Options: --address A (repeatable) --consent-ms N --connect-ms N. Exits on stdin EOF. */
#include <errno.h>
#include <glib-unix.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "clock.h"
#include "dtls.h"
#include "json.h"
#include "jw.h"
#include "media.h"
#include "peer.h"
#include "sdp.h"

#define LINE_MAX_BYTES (256 * 1024)
#define MAX_SSRC       4 /* streams counted per viewer (video, audio, spares) */

typedef struct seq_track {
    uint32_t ssrc;
    uint16_t base, max;
    uint32_t cycles;
    uint64_t received;
} seq_track;

typedef struct viewer {
    char      id[IGW_MEDIA_ID_MAX + 1];
    igw_peer *peer;
    uint32_t  ssrc; /* ours, in the receiver reports */
    bool      connected, receiving, failed;
    seq_track tracks[MAX_SSRC];
    size_t    ntracks;
    uint64_t  bytes_in, unknown_ssrc;
} viewer;

static igw_media_config g_cfg;
static igw_dtls_cert   *g_cert;
static GHashTable      *g_viewers; /* id -> viewer */
static GMainLoop       *g_loop;
static igw_jw           g_w;
static unsigned         g_ticks;

static void emit(void)
{
    if (igw_jw_status(&g_w) != 0) {
        fputs("{\"type\":\"reply\",\"re\":\"?\",\"ok\":false,\"error\":\"out of memory\"}\n", stdout);
    } else {
        fwrite(g_w.buf, 1, g_w.len, stdout);
        fputc('\n', stdout);
    }
    fflush(stdout);
    igw_jw_reset(&g_w);
}

static void kv_str(const char *k, const char *v)
{
    igw_jw_key(&g_w, k, strlen(k));
    igw_jw_string(&g_w, v, strlen(v));
}

static void kv_int(const char *k, int64_t v)
{
    igw_jw_key(&g_w, k, strlen(k));
    igw_jw_int(&g_w, v);
}

static void event(const viewer *v, const char *name, const char *reason)
{
    igw_jw_object_begin(&g_w);
    kv_str("type", "event");
    kv_str("event", name);
    kv_str("id", v->id);
    kv_str("reason", reason ? reason : "");
    igw_jw_object_end(&g_w);
    emit();
}

/* ---- the peer's callbacks (main thread) ---- */

/* RFC 3550 A.1: the extended highest sequence number of one SSRC; a packet
 * older than the highest (reordered or duplicated) adds to received only. */
static void count_seq(viewer *v, uint32_t ssrc, uint16_t seq)
{
    seq_track *t = NULL;
    for (size_t i = 0; i < v->ntracks; i++)
        if (v->tracks[i].ssrc == ssrc)
            t = &v->tracks[i];
    if (!t) {
        if (v->ntracks == MAX_SSRC) {
            v->unknown_ssrc++;
            return;
        }
        t = &v->tracks[v->ntracks++];
        *t = (seq_track){.ssrc = ssrc, .base = seq, .max = seq};
    } else {
        uint16_t delta = (uint16_t)(seq - t->max);
        if (delta != 0 && delta < 0x8000) {
            if (seq < t->max)
                t->cycles += 65536;
            t->max = seq;
        }
    }
    t->received++;
}

static uint64_t expected_of(const seq_track *t)
{
    return (uint64_t)t->cycles + t->max - t->base + 1;
}

static void on_rtp(void *ud, uint8_t *buf, size_t len)
{
    viewer *v = ud;
    if (len < 12)
        return;
    v->bytes_in += len;
    count_seq(v, (uint32_t)buf[8] << 24 | (uint32_t)buf[9] << 16 | (uint32_t)buf[10] << 8 | buf[11],
              (uint16_t)(buf[2] << 8 | buf[3]));
    if (!v->receiving) {
        v->receiving = true;
        event(v, "first-packet", NULL);
    }
}

static void on_rtcp(void *ud, uint8_t *buf, size_t len)
{
    (void)ud, (void)buf, (void)len; /* the server's sender reports: not needed for counting */
}

static void on_event(void *ud, igw_media_event_kind kind, const char *reason)
{
    viewer *v = ud;
    if (kind == IGW_MEDIA_EV_DTLS_CONNECTED && !v->connected) {
        v->connected = true;
        event(v, "dtls-connected", reason);
    }
}

/* The peer may not be freed inside its callback: the tick or a close does it. */
static void on_failed(void *ud, igw_media_event_kind kind, const char *reason)
{
    viewer *v = ud;
    (void)kind;
    if (!v->failed) {
        v->failed = true;
        event(v, "failed", reason);
    }
}

static const igw_peer_ops viewer_ops = {on_rtp, on_rtcp, on_event, on_failed};

static void viewer_free(gpointer p)
{
    viewer *v = p;
    if (v->peer)
        igw_peer_free(v->peer);
    g_free(v);
}

/* ---- requests ---- */

static igw_sdp_media *offer_section(igw_sdp *l, igw_sdp_kind kind, const char *mid, const igw_sdp_codec *c)
{
    igw_sdp_media *m = &l->media[l->nmedia++];
    m->kind = kind;
    g_strlcpy(m->mid, mid, sizeof m->mid);
    g_strlcpy(m->proto, "UDP/TLS/RTP/SAVPF", sizeof m->proto);
    m->port = 9;
    m->dir = IGW_SDP_RECVONLY;
    m->rtcp_mux = true;
    m->rtcp_rsize = true;
    m->codecs[0] = *c;
    m->ncodecs = 1;
    g_strlcpy(l->bundle_mids[l->nbundle++], mid, sizeof l->bundle_mids[0]);
    return m;
}

/* A new viewer and its recvonly offer in out; 0 or -1 + err. */
static int op_offer(const char *id, char *out, size_t cap, char *err, size_t errlen)
{
    if (!id[0] || g_hash_table_contains(g_viewers, id)) {
        snprintf(err, errlen, "missing or duplicate id");
        return -1;
    }
    viewer *v = g_new0(viewer, 1);
    g_strlcpy(v->id, id, sizeof v->id);
    v->ssrc = g_random_int() | 1;
    igw_peer_config pc = {g_main_context_default(), g_cert, &g_cfg, NULL, 0}; /* full ICE: its own agent */
    if (!(v->peer = igw_peer_new(&pc, &viewer_ops, v, err, errlen))) {
        g_free(v);
        return -1;
    }
    igw_sdp *l = g_new0(igw_sdp, 1);
    l->sess_id = ((uint64_t)g_random_int() << 31) ^ g_random_int();
    l->sess_version = 2;
    l->bundle = true;
    igw_sdp_codec h264 = {.pt = 102, .clock = 90000, .fb_nack = true, .fb_pli = true, .fb_fir = true};
    g_strlcpy(h264.name, "H264", sizeof h264.name);
    g_strlcpy(h264.fmtp, "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f", sizeof h264.fmtp);
    igw_sdp_codec opus = {.pt = 111, .clock = 48000, .channels = 2};
    g_strlcpy(opus.name, "opus", sizeof opus.name);
    g_strlcpy(opus.fmtp, "minptime=10;useinbandfec=1", sizeof opus.fmtp);
    offer_section(l, IGW_SDP_VIDEO, "0", &h264);
    offer_section(l, IGW_SDP_AUDIO, "1", &opus);
    igw_peer_describe(v->peer, l, 0, false, IGW_SDP_SETUP_NONE);
    size_t n = igw_sdp_write(l, out, cap);
    g_free(l);
    if (n == 0) {
        snprintf(err, errlen, "offer does not fit in %zu bytes", cap);
        viewer_free(v);
        return -1;
    }
    g_hash_table_insert(g_viewers, v->id, v);
    return 0;
}

static int op_answer(const char *id, const char *sdp, size_t len, char *err, size_t errlen)
{
    viewer *v = g_hash_table_lookup(g_viewers, id);
    if (!v) {
        snprintf(err, errlen, "no viewer %s", id);
        return -1;
    }
    igw_sdp *a = g_new0(igw_sdp, 1);
    int rc = igw_sdp_parse(sdp, len, a, err, errlen);
    if (rc == 0 && a->setup == IGW_SDP_SETUP_ACTPASS) {
        snprintf(err, errlen, "an answer must say setup active or passive");
        rc = -1;
    }
    if (rc == 0)
        rc = igw_peer_set_remote(v->peer, a, err, errlen);
    g_free(a);
    return rc;
}

static void op_totals(void)
{
    GHashTableIter it;
    gpointer k, val;
    uint64_t n = 0, connected = 0, receiving = 0, rtp = 0, expected = 0, bytes = 0;
    g_hash_table_iter_init(&it, g_viewers);
    while (g_hash_table_iter_next(&it, &k, &val)) {
        const viewer *v = val;
        n++;
        connected += v->connected && !v->failed;
        receiving += v->receiving && !v->failed;
        bytes += v->bytes_in;
        for (size_t i = 0; i < v->ntracks; i++) {
            rtp += v->tracks[i].received;
            expected += expected_of(&v->tracks[i]);
        }
    }
    kv_int("viewers", (int64_t)n);
    kv_int("connected", (int64_t)connected);
    kv_int("receiving", (int64_t)receiving);
    kv_int("rtp_in", (int64_t)rtp);
    kv_int("rtp_expected", (int64_t)expected);
    kv_int("bytes_in", (int64_t)bytes);
}

typedef struct req {
    char        op[16], id[IGW_MEDIA_ID_MAX + 2];
    const char *sdp;
    size_t      sdp_len;
} req;

static int parse_req(const char *line, size_t len, req *r, igw_arena *a)
{
    igw_json j;
    igw_json_init(&j, line, len, a, 4);
    igw_str key, val;
    if (igw_json_object_begin(&j) != 0)
        return -1;
    int more;
    while ((more = igw_json_object_next(&j, &key)) > 0) {
        if (igw_json_string(&j, &val) != 0)
            return -1;
#define IS(k) (key.len == sizeof(k) - 1 && memcmp(key.ptr, k, key.len) == 0)
        if (IS("op") && val.len < sizeof r->op) {
            memcpy(r->op, val.ptr, val.len);
            r->op[val.len] = 0;
        } else if (IS("id") && val.len < sizeof r->id) {
            memcpy(r->id, val.ptr, val.len);
            r->id[val.len] = 0;
        } else if (IS("sdp")) {
            r->sdp = val.ptr;
            r->sdp_len = val.len;
        } else {
            return -1;
        }
#undef IS
    }
    return more == 0 && igw_json_finish(&j) == 0 ? 0 : -1;
}

static void handle(const req *r)
{
    static char out[IGW_MEDIA_SDP_MAX];
    char err[256] = "";
    int rc = -1;
    if (strcmp(r->op, "offer") == 0) {
        rc = op_offer(r->id, out, sizeof out, err, sizeof err);
    } else if (strcmp(r->op, "answer") == 0) {
        rc = op_answer(r->id, r->sdp ? r->sdp : "", r->sdp_len, err, sizeof err);
    } else if (strcmp(r->op, "close") == 0) {
        rc = g_hash_table_remove(g_viewers, r->id) ? 0 : -1;
        if (rc)
            snprintf(err, sizeof err, "no viewer %s", r->id);
    } else if (strcmp(r->op, "totals") == 0) {
        rc = 0;
    } else {
        snprintf(err, sizeof err, "unknown op");
    }
    igw_jw_object_begin(&g_w);
    kv_str("type", "reply");
    kv_str("re", r->op);
    igw_jw_key(&g_w, "ok", 2);
    igw_jw_bool(&g_w, rc == 0);
    if (rc != 0)
        kv_str("error", err);
    else if (strcmp(r->op, "offer") == 0)
        kv_str("sdp", out);
    else if (strcmp(r->op, "totals") == 0)
        op_totals();
    igw_jw_object_end(&g_w);
    emit();
}

/* ---- the loop ---- */

static char     *g_line;  /* bytes read from stdin, not yet a whole line */
static size_t    g_len;
static igw_arena g_arena;

static gboolean on_stdin(gint fd, GIOCondition cond, gpointer ud)
{
    (void)cond, (void)ud;
    if (g_len == LINE_MAX_BYTES) { /* a line longer than any request: drop it whole */
        fputs("{\"type\":\"reply\",\"re\":\"?\",\"ok\":false,\"error\":\"line too long\"}\n", stdout);
        fflush(stdout);
        g_len = 0;
    }
    ssize_t n = read(fd, g_line + g_len, LINE_MAX_BYTES - g_len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return G_SOURCE_CONTINUE;
    if (n <= 0) { /* EOF: the driver is gone */
        g_main_loop_quit(g_loop);
        return G_SOURCE_REMOVE;
    }
    g_len += (size_t)n;
    char *start = g_line, *nl;
    while ((nl = memchr(start, '\n', g_len - (size_t)(start - g_line)))) {
        size_t len = (size_t)(nl - start);
        if (len && start[len - 1] == '\r')
            len--;
        if (len) {
            req r;
            memset(&r, 0, sizeof r);
            igw_arena_reset(&g_arena);
            if (parse_req(start, len, &r, &g_arena) == 0) {
                handle(&r);
            } else {
                fputs("{\"type\":\"reply\",\"re\":\"?\",\"ok\":false,\"error\":\"bad request line\"}\n", stdout);
                fflush(stdout);
            }
        }
        start = nl + 1;
    }
    g_len -= (size_t)(start - g_line);
    memmove(g_line, start, g_len);
    return G_SOURCE_CONTINUE;
}

/* Every 100 ms: the peers' timeouts; every second a receiver report each
 * (an RR with no block: proof of life for the server's consent check). */
static gboolean on_tick(gpointer ud)
{
    (void)ud;
    uint64_t now = igw_clock_us();
    bool report = ++g_ticks % 10 == 0;
    GHashTableIter it;
    gpointer k, val;
    g_hash_table_iter_init(&it, g_viewers);
    while (g_hash_table_iter_next(&it, &k, &val)) {
        viewer *v = val;
        if (v->failed) {
            if (v->peer) {
                igw_peer_free(v->peer);
                v->peer = NULL;
            }
            continue;
        }
        igw_peer_tick(v->peer, now);
        if (report && v->connected && !v->failed) {
            uint8_t buf[IGW_PEER_BUF] = {0x80, 201, 0, 1, (uint8_t)(v->ssrc >> 24), (uint8_t)(v->ssrc >> 16),
                                         (uint8_t)(v->ssrc >> 8), (uint8_t)v->ssrc};
            (void)igw_peer_send_rtcp(v->peer, buf, 8); /* a full socket drops it, as UDP would */
        }
    }
    return G_SOURCE_CONTINUE;
}

static unsigned num_arg(const char *s, const char *name)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == 0 || *end || v > 1000000) {
        fprintf(stderr, "igw-live-viewers: bad %s\n", name);
        exit(2);
    }
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    igw_media_config_defaults(&g_cfg);
    g_cfg.ice_full = true;
    g_cfg.consent_timeout_ms = 30000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "igw-live-viewers: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--address") == 0 && g_cfg.naddresses < IGW_MEDIA_MAX_ADDRS)
            g_cfg.addresses[g_cfg.naddresses++] = v;
        else if (strcmp(a, "--consent-ms") == 0)
            g_cfg.consent_timeout_ms = num_arg(v, a);
        else if (strcmp(a, "--connect-ms") == 0)
            g_cfg.connect_timeout_ms = num_arg(v, a);
        else {
            fprintf(stderr, "igw-live-viewers: unknown option %s\n", a);
            return 2;
        }
    }
    char err[256];
    if (!(g_cert = igw_dtls_cert_new(err, sizeof err))) {
        fprintf(stderr, "igw-live-viewers: %s\n", err);
        return 1;
    }
    g_viewers = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, viewer_free);
    g_line = g_malloc(LINE_MAX_BYTES);
    igw_arena_init(&g_arena, 4 * LINE_MAX_BYTES);
    igw_jw_init(&g_w);
    g_loop = g_main_loop_new(NULL, FALSE);
    g_unix_fd_add(0, G_IO_IN | G_IO_HUP | G_IO_ERR, on_stdin, NULL);
    g_timeout_add(100, on_tick, NULL);
    g_main_loop_run(g_loop);
    g_hash_table_destroy(g_viewers); /* every peer says close_notify */
    g_main_loop_unref(g_loop);
    igw_jw_free(&g_w);
    igw_arena_free(&g_arena);
    g_free(g_line);
    igw_dtls_cert_free(g_cert);
    return 0;
}
