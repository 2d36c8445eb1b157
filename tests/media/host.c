/* host.c - igw-media-host: the media core behind a JSON-lines interface on
 * stdin/stdout, for the real-peer tests (the .mjs files in tests/media) and the benchmark.
 * A test-only signaling path: the product drives the same library from igwd.
 *
 * In (one object per line):
 *   {"op":"source","id":..,"rev":n,"sdp":offer}              -> {"type":"reply","re":"source","ok":true,"sdp":answer}
 *   {"op":"source_rtp","id":..,"port":n,"video_pt":96,"audio_pt":111} -> {..,"port":bound}
 *   {"op":"viewer","source":..,"id":..,"rev":n,"paused":b,"sdp":offer} -> {..,"sdp":answer}
 *   {"op":"viewer_offer","source":..,"id":..,"rev":n}         -> {..,"sdp":offer}
 *   {"op":"viewer_answer","id":..,"rev":n,"sdp":answer}
 *   {"op":"track","id":..,"rev":n,"kinds":"video|audio|both","trigger":"pause|resume|subscribe|unsubscribe"}
 *   {"op":"publish","id":..,"rev":n,"allowed":b}             -> {..,"before_us":t0,"after_us":t1}
 *       (the talk gate; t0/t1: the media core's monotonic clock around the call,
 *       comparable with the stats' talk_last_us)
 *   {"op":"close","id":..}   {"op":"stats","id":..}   {"op":"fingerprint"}
 *   {"op":"sockets"} -> {..,"sent":n,"send_batches":n,"send_dropped":n} (the shared sockets')
 * A failure is {"type":"reply","re":op,"ok":false,"rc":"ESTALE","error":"..."}.
 * Events are written as they come:
 *   {"type":"event","event":"ice-connected","id":..,"rev":n,"source":b,"reason":..}.
 * Options: --threads N --consent-ms N --connect-ms N --address A (repeatable)
 *          --announce A --ports MIN-MAX --ice-full --agent-per-peer. Exits on stdin EOF. */
#include <errno.h>
#include <glib.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "json.h"
#include "jw.h"
#include "machines.h"
#include "media.h"

#define LINE_MAX_BYTES (256 * 1024)

typedef struct req {
    char op[32], id[IGW_MEDIA_ID_MAX + 2], source[IGW_MEDIA_ID_MAX + 2], kinds[8], trigger[16];
    char *sdp;
    size_t sdp_len;
    int64_t rev, port, video_pt, audio_pt;
    bool paused, allowed;
} req;

static void copy_str(char *dst, size_t cap, igw_str s)
{
    size_t n = s.len < cap - 1 ? s.len : cap - 1;
    memcpy(dst, s.ptr, n);
    dst[n] = 0;
}

static int parse_req(const char *line, size_t len, req *r, igw_arena *a)
{
    igw_json j;
    igw_json_init(&j, line, len, a, 4);
    igw_str key, val;
    if (igw_json_object_begin(&j) != 0)
        return -1;
    int more;
    while ((more = igw_json_object_next(&j, &key)) > 0) {
#define IS(k) (key.len == sizeof(k) - 1 && memcmp(key.ptr, k, key.len) == 0)
        int rc;
        if (IS("op") || IS("id") || IS("source") || IS("kinds") || IS("trigger") || IS("sdp")) {
            if ((rc = igw_json_string(&j, &val)) != 0)
                return -1;
            if (IS("op")) copy_str(r->op, sizeof r->op, val);
            else if (IS("id")) copy_str(r->id, sizeof r->id, val);
            else if (IS("source")) copy_str(r->source, sizeof r->source, val);
            else if (IS("kinds")) copy_str(r->kinds, sizeof r->kinds, val);
            else if (IS("trigger")) copy_str(r->trigger, sizeof r->trigger, val);
            else { r->sdp = (char *)val.ptr; r->sdp_len = val.len; }
        } else if (IS("rev")) {
            rc = igw_json_int(&j, &r->rev, 0, UINT32_MAX);
        } else if (IS("port")) {
            rc = igw_json_int(&j, &r->port, 0, 65535);
        } else if (IS("video_pt")) {
            rc = igw_json_int(&j, &r->video_pt, 0, 127);
        } else if (IS("audio_pt")) {
            rc = igw_json_int(&j, &r->audio_pt, 0, 127);
        } else if (IS("paused")) {
            rc = igw_json_bool(&j, &r->paused);
        } else if (IS("allowed")) {
            rc = igw_json_bool(&j, &r->allowed);
        } else {
            return -1;
        }
        if (rc != 0)
            return -1;
#undef IS
    }
    return more == 0 && igw_json_finish(&j) == 0 ? 0 : -1;
}

static void emit(igw_jw *w)
{
    if (igw_jw_status(w) != 0) {
        fputs("{\"re\":\"?\",\"ok\":false,\"error\":\"out of memory\"}\n", stdout);
    } else {
        fwrite(w->buf, 1, w->len, stdout);
        fputc('\n', stdout);
    }
    fflush(stdout);
    igw_jw_reset(w);
}

static void kv_str(igw_jw *w, const char *k, const char *v)
{
    igw_jw_key(w, k, strlen(k));
    igw_jw_string(w, v, strlen(v));
}

static void kv_int(igw_jw *w, const char *k, int64_t v)
{
    igw_jw_key(w, k, strlen(k));
    igw_jw_int(w, v);
}

static const char *rc_name(igw_media_rc rc)
{
    switch (rc) {
    case IGW_MEDIA_OK: return "OK";
    case IGW_MEDIA_EINVAL: return "EINVAL";
    case IGW_MEDIA_ESTALE: return "ESTALE";
    case IGW_MEDIA_ENOENT: return "ENOENT";
    case IGW_MEDIA_ECONFLICT: return "ECONFLICT";
    case IGW_MEDIA_EFAIL: return "EFAIL";
    }
    return "?";
}

static int trigger_of(const char *name)
{
    for (int i = 0; i < igw_sm_track.ntriggers; i++)
        if (strcmp(igw_sm_track.triggers[i], name) == 0)
            return i;
    return -1;
}

static void drain_events(igw_media *m, igw_jw *w)
{
    igw_media_event ev;
    while (igw_media_event_next(m, &ev)) {
        igw_jw_object_begin(w);
        kv_str(w, "type", "event");
        kv_str(w, "event", igw_media_event_name(ev.kind));
        kv_str(w, "id", ev.id);
        kv_int(w, "rev", ev.revision);
        igw_jw_key(w, "source", 6);
        igw_jw_bool(w, ev.is_source);
        kv_str(w, "reason", ev.reason);
        igw_jw_object_end(w);
        emit(w);
    }
}

static void handle(igw_media *m, const req *r, igw_jw *w)
{
    static char out[IGW_MEDIA_SDP_MAX];
    char err[256] = "";
    igw_media_rc rc = IGW_MEDIA_EINVAL;
    bool with_sdp = false;
    uint16_t bound = 0;
    int state = 0;
    uint64_t before_us = 0, after_us = 0;
    igw_media_stats st;
    igw_media_socket_stats sock;
    memset(&st, 0, sizeof st);
    const char *sdp = r->sdp ? r->sdp : "";
    if (strcmp(r->op, "source") == 0) {
        rc = igw_media_source_offer(m, r->id, (uint32_t)r->rev, sdp, r->sdp_len, out, sizeof out, err, sizeof err);
        with_sdp = true;
    } else if (strcmp(r->op, "source_rtp") == 0) {
        rc = igw_media_source_rtp(m, r->id, "127.0.0.1", (uint16_t)r->port, (uint8_t)r->video_pt, NULL,
                                  (uint8_t)r->audio_pt, &bound, err, sizeof err);
    } else if (strcmp(r->op, "viewer") == 0) {
        /* The host's viewers may talk: tests/media/talk_test.sh's publish to the camera. */
        rc = igw_media_viewer_offer(m, r->source, r->id, (uint32_t)r->rev,
                                    IGW_MEDIA_VIEWER_PUBLISH | (r->paused ? IGW_MEDIA_VIEWER_PAUSED : 0u), sdp,
                                    r->sdp_len, out, sizeof out, err, sizeof err);
        with_sdp = true;
    } else if (strcmp(r->op, "viewer_offer") == 0) {
        rc = igw_media_viewer_make_offer(m, r->source, r->id, (uint32_t)r->rev, r->paused, out, sizeof out, err,
                                         sizeof err);
        with_sdp = true;
    } else if (strcmp(r->op, "viewer_answer") == 0) {
        rc = igw_media_viewer_answer(m, r->id, (uint32_t)r->rev, sdp, r->sdp_len, err, sizeof err);
    } else if (strcmp(r->op, "track") == 0) {
        igw_media_kinds k = strcmp(r->kinds, "audio") == 0   ? IGW_MEDIA_AUDIO
                            : strcmp(r->kinds, "video") == 0 ? IGW_MEDIA_VIDEO
                                                             : IGW_MEDIA_BOTH;
        rc = igw_media_viewer_track(m, r->id, (uint32_t)r->rev, k, trigger_of(r->trigger), &state, err, sizeof err);
    } else if (strcmp(r->op, "publish") == 0) {
        before_us = igw_clock_us();
        rc = igw_media_viewer_publish(m, r->id, (uint32_t)r->rev, r->allowed, err, sizeof err);
        after_us = igw_clock_us();
    } else if (strcmp(r->op, "close") == 0) {
        rc = igw_media_close(m, r->id, "closed by the host");
        if (rc != IGW_MEDIA_OK)
            snprintf(err, sizeof err, "no peer %s", r->id);
    } else if (strcmp(r->op, "stats") == 0) {
        rc = igw_media_get_stats(m, r->id, &st);
        if (rc != IGW_MEDIA_OK)
            snprintf(err, sizeof err, "no peer %s", r->id);
    } else if (strcmp(r->op, "fingerprint") == 0) {
        rc = IGW_MEDIA_OK;
    } else if (strcmp(r->op, "sockets") == 0) {
        igw_media_socket_stats_get(m, &sock);
        rc = IGW_MEDIA_OK;
    } else {
        snprintf(err, sizeof err, "unknown op");
    }
    drain_events(m, w); /* what happened during the operation comes before its reply */
    igw_jw_object_begin(w);
    kv_str(w, "type", "reply");
    kv_str(w, "re", r->op);
    igw_jw_key(w, "ok", 2);
    igw_jw_bool(w, rc == IGW_MEDIA_OK);
    if (rc != IGW_MEDIA_OK) {
        kv_str(w, "rc", rc_name(rc));
        kv_str(w, "error", err);
    } else if (with_sdp) {
        kv_str(w, "sdp", out);
    } else if (strcmp(r->op, "source_rtp") == 0) {
        kv_int(w, "port", bound);
    } else if (strcmp(r->op, "track") == 0) {
        kv_str(w, "state", igw_sm_track.states[state]);
    } else if (strcmp(r->op, "fingerprint") == 0) {
        kv_str(w, "fingerprint", igw_media_fingerprint(m));
    } else if (strcmp(r->op, "publish") == 0) {
        kv_int(w, "before_us", (int64_t)before_us);
        kv_int(w, "after_us", (int64_t)after_us);
    } else if (strcmp(r->op, "sockets") == 0) {
        kv_int(w, "sent", (int64_t)sock.sent);
        kv_int(w, "send_batches", (int64_t)sock.send_batches);
        kv_int(w, "send_dropped", (int64_t)sock.send_dropped);
    } else if (strcmp(r->op, "stats") == 0) {
        igw_jw_key(w, "connected", 9);
        igw_jw_bool(w, st.connected);
        kv_str(w, "audio", igw_sm_track.states[st.audio_state]);
        kv_str(w, "video", igw_sm_track.states[st.video_state]);
        kv_int(w, "rtp_in", (int64_t)st.rtp_in);
        kv_int(w, "rtp_out", (int64_t)st.rtp_out);
        kv_int(w, "bytes_in", (int64_t)st.bytes_in);
        kv_int(w, "bytes_out", (int64_t)st.bytes_out);
        kv_int(w, "keyframes_in", (int64_t)st.keyframes_in);
        kv_int(w, "pli_in", (int64_t)st.pli_in);
        kv_int(w, "pli_out", (int64_t)st.pli_out);
        kv_int(w, "nack_in", (int64_t)st.nack_in);
        kv_int(w, "rtx_out", (int64_t)st.rtx_out);
        kv_int(w, "video_out", (int64_t)st.video_out);
        kv_int(w, "sr_out", (int64_t)st.sr_out);
        kv_int(w, "dropped", (int64_t)st.dropped);
        kv_int(w, "rtp_expected", (int64_t)st.rtp_expected);
        kv_int(w, "viewers", st.viewers);
        igw_jw_key(w, "publish_allowed", 15);
        igw_jw_bool(w, st.publish_allowed);
        kv_int(w, "talk_in", (int64_t)st.talk_in);
        kv_int(w, "talk_forwarded", (int64_t)st.talk_forwarded);
        kv_int(w, "talk_gated", (int64_t)st.talk_gated);
        kv_int(w, "talk_no_floor", (int64_t)st.talk_no_floor);
        kv_int(w, "talk_last_us", (int64_t)st.talk_last_us);
        kv_int(w, "talkback_out", (int64_t)st.talkback_out);
    }
    igw_jw_object_end(w);
    emit(w);
}

static unsigned num_arg(const char *s, const char *name)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == 0 || *end || v > 1000000) {
        fprintf(stderr, "igw-media-host: bad %s\n", name);
        exit(2);
    }
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    igw_media_config cfg;
    igw_media_config_defaults(&cfg);
    g_log_writer_default_set_use_stderr(TRUE); /* stdout is the JSON-lines channel, even with G_MESSAGES_DEBUG */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--ice-full") == 0) {
            cfg.ice_full = true;
            continue;
        }
        if (strcmp(a, "--agent-per-peer") == 0) { /* ICE-lite on a libnice agent per peer, not the shared socket */
            cfg.shared_socket = false;
            continue;
        }
        if (!v) {
            fprintf(stderr, "igw-media-host: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--threads") == 0)
            cfg.threads = num_arg(v, a);
        else if (strcmp(a, "--consent-ms") == 0)
            cfg.consent_timeout_ms = num_arg(v, a);
        else if (strcmp(a, "--connect-ms") == 0)
            cfg.connect_timeout_ms = num_arg(v, a);
        else if (strcmp(a, "--address") == 0 && cfg.naddresses < IGW_MEDIA_MAX_ADDRS)
            cfg.addresses[cfg.naddresses++] = v;
        else if (strcmp(a, "--announce") == 0)
            cfg.announced_address = v;
        else if (strcmp(a, "--ports") == 0) {
            unsigned lo, hi;
            if (sscanf(v, "%u-%u", &lo, &hi) != 2 || lo > hi || hi > 65535) {
                fprintf(stderr, "igw-media-host: bad --ports\n");
                return 2;
            }
            cfg.port_min = (uint16_t)lo;
            cfg.port_max = (uint16_t)hi;
        } else {
            fprintf(stderr, "igw-media-host: unknown option %s\n", a);
            return 2;
        }
    }
    char err[256];
    igw_media *m = igw_media_new(&cfg, err, sizeof err);
    if (!m) {
        fprintf(stderr, "igw-media-host: %s\n", err);
        return 1;
    }
    igw_jw w;
    igw_jw_init(&w);
    igw_arena arena;
    igw_arena_init(&arena, 4 * LINE_MAX_BYTES);
    char *line = NULL;
    size_t linecap = 0;
    /* Unbuffered: poll() on fd 0 must see every line, none may wait in stdio. */
    setvbuf(stdin, NULL, _IONBF, 0);
    struct pollfd pfd[2] = {{.fd = 0, .events = POLLIN}, {.fd = igw_media_event_fd(m), .events = POLLIN}};
    int status = 0;
    for (;;) {
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            status = 1;
            break;
        }
        if (pfd[1].revents)
            drain_events(m, &w);
        if (!pfd[0].revents)
            continue;
        ssize_t n = getline(&line, &linecap, stdin);
        if (n < 0)
            break; /* EOF: the driver is gone */
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n == 0)
            continue;
        req r;
        memset(&r, 0, sizeof r);
        igw_arena_reset(&arena);
        if (n > LINE_MAX_BYTES || parse_req(line, (size_t)n, &r, &arena) != 0) {
            fputs("{\"type\":\"reply\",\"re\":\"?\",\"ok\":false,\"rc\":\"EINVAL\",\"error\":\"bad request line\"}\n", stdout);
            fflush(stdout);
            continue;
        }
        handle(m, &r, &w);
        drain_events(m, &w);
    }
    free(line);
    igw_media_free(m);
    igw_arena_free(&arena);
    igw_jw_free(&w);
    return status;
}
