/*
 * recorder.c - igw-vcam's recorder and catalog (recorder.h).
 *
 * One pipeline for the whole process: videotestsrc (the live legs' pattern
 * and clock, smaller) ! x264enc (a keyframe a second, so that seeks land
 * near) and audiotestsrc ! opusenc into splitmuxsink with matroskamux
 * (Opus in Matroska is solid), a segment every segment_ms.
 *
 * Wall times: splitmuxsink's fragment messages carry running times; the
 * wall time of running time rt is now - (clock now - base time - rt), read
 * when it is needed, so that the two clocks drifting apart over days does
 * not accumulate. A segment's start is fixed when it is named (its first
 * sample, on the streaming thread) and carried in its id; its end is the
 * start plus the media duration, rounded up, so durationMs <= end - start.
 */
#include "recorder.h"
#include "log.h"

#include "arena.h"
#include "json.h"

#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIDECAR_MAX 4096
#define OPEN_MAX 4 /* fragments opened and not yet closed (async finalize) */
#define STOP_WAIT_NS (2 * GST_SECOND)

typedef struct entry {
    igw_vcam_recording pub; /* pub.id points at id */
    char id[IGW_VCAM_RECORDING_ID_MAX + 1];
    char *path; /* the .mkv */
} entry;

struct igw_vcam_recorder {
    char *dir, *camera_id, *pattern;
    char prefix[IGW_VCAM_RECORDING_ID_MAX + 1]; /* "rec-<cameraId>-" */
    int segment_ms, retain_s, audio;
    igw_vcam_recorder_cbs cbs;
    void *user;
    GArray *entries;    /* entry, oldest first */
    GArray *list;       /* igw_vcam_recording, igw_vcam_recorder_list's answer */
    GstElement *pipe;
    guint bus_watch;
    struct {
        char *location;
        GstClockTime rt;
    } open[OPEN_MAX]; /* the fragments' opening running times, by file */
};

#define rlog(...) igw_vcam_log("recorder: ", __VA_ARGS__)

int igw_vcam_recorder_id_ok(const char *camera_id, char *err, size_t errlen)
{
    size_t n = strlen(camera_id);

    /* "rec-" + id + "-" + 13 digits of Unix ms: an Ident of at most 64. */
    if (n == 0 || n > IGW_VCAM_RECORDING_ID_MAX - 18) {
        snprintf(err, errlen, "--record-dir wants a camera id of 1..%d bytes", IGW_VCAM_RECORDING_ID_MAX - 18);
        return -1;
    }
    /* It names files too. */
    for (size_t i = 0; i < n; i++)
        if (!g_ascii_isalnum(camera_id[i]) && !strchr("._-", camera_id[i])) {
            snprintf(err, errlen, "--record-dir wants a camera id of letters, digits, '.', '_' and '-'");
            return -1;
        }
    return 0;
}

static void entry_clear(entry *e)
{
    g_free(e->path);
    e->path = NULL;
}

static char *file_of(const igw_vcam_recorder *r, const char *id, const char *ext)
{
    return g_strdup_printf("%s/%s%s", r->dir, id, ext);
}

static void unlink_logged(const char *path)
{
    if (g_unlink(path) != 0 && errno != ENOENT)
        rlog("error: cannot delete %s: %s", path, g_strerror(errno));
}

/* The start time in an id "rec-<cameraId>-<ms>", or -1. */
static int64_t id_start(const igw_vcam_recorder *r, const char *id)
{
    size_t pl = strlen(r->prefix);
    const char *d = id + pl;
    char *end;
    gint64 ms;

    if (strncmp(id, r->prefix, pl) != 0 || !g_ascii_isdigit(*d) || strlen(d) > 15)
        return -1;
    ms = g_ascii_strtoll(d, &end, 10);
    return *end == '\0' && ms > 0 ? ms : -1;
}

/* ---- sidecars ---- */

static int sidecar_write(const igw_vcam_recorder *r, const entry *e)
{
    char *path = file_of(r, e->id, ".json");
    GError *err = NULL;
    char *text = g_strdup_printf("{\"recordingId\":\"%s\",\"startTimeMs\":%lld,\"endTimeMs\":%lld,\"durationMs\":%lld,"
                                 "\"recordingVersion\":%d,\"audio\":%s}\n",
                                 e->id, (long long)e->pub.start_ms, (long long)e->pub.end_ms,
                                 (long long)e->pub.duration_ms, e->pub.version,
                                 e->pub.audio ? "true" : "false");
    int rc = 0;

    /* Atomic (a temporary file renamed): a crash leaves no half sidecar. */
    if (!g_file_set_contents(path, text, -1, &err)) {
        rlog("error: %s: %s", path, err ? err->message : "cannot write");
        g_clear_error(&err);
        rc = -1;
    }
    g_free(text);
    g_free(path);
    return rc;
}

/* Reads id's sidecar into e. 0, or -1 (logged) when it is not one we wrote. */
static int sidecar_read(const igw_vcam_recorder *r, const char *id, entry *e)
{
    char *path = file_of(r, id, ".json"), *text = NULL;
    gsize len = 0;
    igw_arena a;
    igw_json j;
    igw_str key, s;
    int more, rc = -1;
    bool audio = false;
    int64_t start = -1, end = -1, dur = -1, ver = -1;

    if (!g_file_get_contents(path, &text, &len, NULL) || len > SIDECAR_MAX) {
        rlog("%s: unreadable or over %d bytes", path, SIDECAR_MAX);
        goto out;
    }
    igw_arena_init(&a, 4 * SIDECAR_MAX);
    igw_json_init(&j, text, len, &a, 2);
    if (igw_json_object_begin(&j) == 0) {
        while ((more = igw_json_object_next(&j, &key)) > 0) {
#define IS(k) (key.len == sizeof(k) - 1 && memcmp(key.ptr, k, key.len) == 0)
            int k;
            if (IS("recordingId"))
                k = igw_json_string(&j, &s) == 0 && s.len == strlen(id) && memcmp(s.ptr, id, s.len) == 0 ? 0 : -1;
            else if (IS("startTimeMs"))
                k = igw_json_int(&j, &start, 1, IGW_JSON_SAFE_MAX);
            else if (IS("endTimeMs"))
                k = igw_json_int(&j, &end, 1, IGW_JSON_SAFE_MAX);
            else if (IS("durationMs"))
                k = igw_json_int(&j, &dur, 0, IGW_JSON_SAFE_MAX);
            else if (IS("recordingVersion"))
                k = igw_json_int(&j, &ver, 1, INT32_MAX);
            else if (IS("audio"))
                k = igw_json_bool(&j, &audio);
            else
                k = igw_json_value(&j, IGW_JSON_RFC8259, 2, SIDECAR_MAX, &s);
#undef IS
            if (k != 0)
                break;
        }
        if (more == 0 && igw_json_finish(&j) == 0 && start == id_start(r, id) && end > start && dur >= 0 &&
            dur <= end - start && ver >= 1)
            rc = 0;
    }
    igw_arena_free(&a);
    if (rc < 0)
        rlog("%s: not a sidecar of this camera, ignored", path);
    else
        *e = (entry){.pub = {.start_ms = start, .end_ms = end, .duration_ms = dur, .version = (int)ver, .audio = audio}};
out:
    g_free(text);
    g_free(path);
    return rc;
}

static gint entry_cmp(gconstpointer a, gconstpointer b)
{
    const entry *x = a, *y = b;

    return x->pub.start_ms < y->pub.start_ms ? -1 : x->pub.start_ms > y->pub.start_ms;
}

/* The recordings an earlier run left: each .mkv with its sidecar. An .mkv
 * without one was being written when that run ended: deleted (so is a
 * sidecar without its .mkv). */
static int load_dir(igw_vcam_recorder *r, char *err, size_t errlen)
{
    GError *gerr = NULL;
    GDir *d = g_dir_open(r->dir, 0, &gerr);
    const char *name;

    if (!d) {
        snprintf(err, errlen, "--record-dir %s: %s", r->dir, gerr ? gerr->message : "cannot read");
        g_clear_error(&gerr);
        return -1;
    }
    while ((name = g_dir_read_name(d))) {
        char id[IGW_VCAM_RECORDING_ID_MAX + 1];
        size_t n = strlen(name);
        char *mkv, *json;
        entry e;

        if (n > 5 && n - 5 <= IGW_VCAM_RECORDING_ID_MAX && g_str_has_suffix(name, ".json")) {
            memcpy(id, name, n - 5);
            id[n - 5] = '\0';
            mkv = file_of(r, id, ".mkv");
            if (id_start(r, id) >= 0 && !g_file_test(mkv, G_FILE_TEST_EXISTS)) {
                json = file_of(r, id, ".json");
                rlog("%s has no segment: deleted", json);
                unlink_logged(json);
                g_free(json);
            }
            g_free(mkv);
            continue;
        }
        if (n <= 4 || n - 4 > IGW_VCAM_RECORDING_ID_MAX || !g_str_has_suffix(name, ".mkv"))
            continue;
        memcpy(id, name, n - 4);
        id[n - 4] = '\0';
        if (id_start(r, id) < 0)
            continue; /* another camera's, or not ours at all */
        mkv = file_of(r, id, ".mkv");
        json = file_of(r, id, ".json");
        if (!g_file_test(json, G_FILE_TEST_EXISTS)) {
            rlog("%s was cut short by an exit (no sidecar): deleted", mkv);
            unlink_logged(mkv);
        } else if (sidecar_read(r, id, &e) == 0) {
            g_strlcpy(e.id, id, sizeof e.id);
            e.path = mkv;
            mkv = NULL;
            g_array_append_val(r->entries, e);
        }
        g_free(mkv);
        g_free(json);
    }
    g_dir_close(d);
    g_array_sort(r->entries, entry_cmp);
    return 0;
}

/* ---- retention ---- */

/* Deletes what is older than retain_s or beyond the cap (oldest first) and
 * reports it. */
static void retain(igw_vcam_recorder *r)
{
    int64_t horizon = g_get_real_time() / 1000 - (int64_t)r->retain_s * 1000;
    const char *ids[IGW_VCAM_RECORDINGS_MAX + 64];
    GArray *gone = g_array_new(FALSE, FALSE, sizeof(entry));
    guint n = 0, total = r->entries->len;

    /* Oldest first: the cap takes from the front too. */
    while (n < total && n < G_N_ELEMENTS(ids)) {
        entry *e = &g_array_index(r->entries, entry, n);
        if (e->pub.end_ms >= horizon && total - n <= IGW_VCAM_RECORDINGS_MAX)
            break;
        n++;
    }
    if (n == 0) {
        g_array_free(gone, TRUE);
        return;
    }
    g_array_append_vals(gone, r->entries->data, n);
    g_array_remove_range(r->entries, 0, n);
    for (guint i = 0; i < n; i++) {
        entry *e = &g_array_index(gone, entry, i);
        char *json = file_of(r, e->id, ".json");
        /* The sidecar first: a crash in between leaves an .mkv without one,
         * which the next start deletes. A playback leg reading the file
         * keeps it open: it plays on. */
        unlink_logged(json);
        unlink_logged(e->path);
        g_free(json);
        ids[i] = e->id;
    }
    rlog("retention: %u recording(s) deleted (older than %d s or over %d), %u kept", n, r->retain_s,
         IGW_VCAM_RECORDINGS_MAX, r->entries->len);
    if (r->cbs.on_removed) {
        /* Reports of at most IGW_VCAM_REPORT_MAX ids each. */
        for (guint i = 0; i < n; i += IGW_VCAM_REPORT_MAX)
            r->cbs.on_removed(r->user, ids + i, n - i < IGW_VCAM_REPORT_MAX ? n - i : IGW_VCAM_REPORT_MAX);
    }
    for (guint i = 0; i < n; i++)
        entry_clear(&g_array_index(gone, entry, i));
    g_array_free(gone, TRUE);
}

/* ---- the pipeline ---- */

/* Wall ms of running time rt (see the top). */
static int64_t wall_ms(GstElement *pipe, GstClockTime rt)
{
    GstClock *clock = gst_element_get_clock(pipe);
    GstClockTime now, base = gst_element_get_base_time(pipe);
    int64_t wall_us = g_get_real_time();

    if (!clock)
        return wall_us / 1000;
    now = gst_clock_get_time(clock);
    gst_object_unref(clock);
    return (wall_us * 1000 - ((int64_t)now - (int64_t)base - (int64_t)rt)) / 1000000;
}

/* Streaming thread: the name of the next segment, from its first sample. */
static gchar *on_format_location(GstElement *smux, guint fragment, GstSample *first, gpointer data)
{
    igw_vcam_recorder *r = data;
    GstBuffer *buf = first ? gst_sample_get_buffer(first) : NULL;
    const GstSegment *seg = first ? gst_sample_get_segment(first) : NULL;
    GstClockTime rt = GST_CLOCK_TIME_NONE;
    GstElement *pipe = GST_ELEMENT(gst_element_get_parent(smux));
    int64_t start;
    gchar *path;

    (void)fragment;
    if (buf && seg && GST_BUFFER_PTS_IS_VALID(buf))
        rt = gst_segment_to_running_time(seg, GST_FORMAT_TIME, GST_BUFFER_PTS(buf));
    start = pipe && GST_CLOCK_TIME_IS_VALID(rt) ? wall_ms(pipe, rt) : g_get_real_time() / 1000;
    if (pipe)
        gst_object_unref(pipe);
    path = g_strdup_printf("%s/%s%lld.mkv", r->dir, r->prefix, (long long)start);
    return path;
}

static void fragment_opened(igw_vcam_recorder *r, const char *location, GstClockTime rt)
{
    int slot = 0;

    for (int i = 0; i < OPEN_MAX; i++)
        if (!r->open[i].location) {
            slot = i;
            break;
        } else if (r->open[i].rt < r->open[slot].rt) {
            slot = i; /* full (never in practice): the oldest goes */
        }
    g_free(r->open[slot].location);
    r->open[slot].location = g_strdup(location);
    r->open[slot].rt = rt;
}

static void fragment_closed(igw_vcam_recorder *r, const char *location, GstClockTime end_rt)
{
    const char *base = strrchr(location, '/');
    char id[IGW_VCAM_RECORDING_ID_MAX + 1];
    GstClockTime start_rt = GST_CLOCK_TIME_NONE;
    size_t n;
    int64_t start;
    entry e = {0};

    for (int i = 0; i < OPEN_MAX; i++)
        if (r->open[i].location && strcmp(r->open[i].location, location) == 0) {
            start_rt = r->open[i].rt;
            g_free(r->open[i].location);
            r->open[i].location = NULL;
        }
    base = base ? base + 1 : location;
    n = strlen(base);
    if (n <= 4 || n - 4 >= sizeof id || !GST_CLOCK_TIME_IS_VALID(start_rt) || !GST_CLOCK_TIME_IS_VALID(end_rt)) {
        rlog("error: segment %s closed without its times, deleted", location);
        unlink_logged(location);
        return;
    }
    memcpy(id, base, n - 4);
    id[n - 4] = '\0';
    start = id_start(r, id);
    if (start < 0 || end_rt <= start_rt) {
        rlog("segment %s is empty or unnamed, deleted", location);
        unlink_logged(location);
        return;
    }
    g_strlcpy(e.id, id, sizeof e.id);
    e.path = g_strdup(location);
    e.pub = (igw_vcam_recording){.start_ms = start,
                                 .end_ms = start + (int64_t)((end_rt - start_rt + GST_MSECOND - 1) / GST_MSECOND),
                                 .duration_ms = (int64_t)((end_rt - start_rt) / GST_MSECOND),
                                 .version = 1,
                                 .audio = r->audio};
    if (sidecar_write(r, &e) < 0) {
        unlink_logged(location);
        entry_clear(&e);
        return;
    }
    g_array_append_val(r->entries, e);
    rlog("recording %s: %lld..%lld, %lld ms", id, (long long)e.pub.start_ms, (long long)e.pub.end_ms,
         (long long)e.pub.duration_ms);
    if (r->cbs.on_closed) {
        igw_vcam_recording pub = e.pub;
        pub.id = e.id;
        r->cbs.on_closed(r->user, &pub);
    }
    retain(r);
}

/* Main loop (and igw_vcam_recorder_free): one bus message. */
static void handle_message(igw_vcam_recorder *r, GstMessage *msg)
{
    const GstStructure *st;
    GError *err = NULL;
    gchar *dbg = NULL;
    const char *loc;
    GstClockTime rt = GST_CLOCK_TIME_NONE;

    switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR:
        gst_message_parse_error(msg, &err, &dbg);
        /* The catalog stays (playback goes on); recording does not. */
        rlog("error: %s: %s (%s); recording stops", GST_OBJECT_NAME(msg->src), err->message, dbg ? dbg : "");
        gst_element_set_state(r->pipe, GST_STATE_NULL);
        break;
    case GST_MESSAGE_WARNING:
        gst_message_parse_warning(msg, &err, &dbg);
        rlog("warning: %s: %s", GST_OBJECT_NAME(msg->src), err->message);
        break;
    case GST_MESSAGE_ELEMENT:
        st = gst_message_get_structure(msg);
        if (!st || !(loc = gst_structure_get_string(st, "location")) ||
            !gst_structure_get_clock_time(st, "running-time", &rt))
            break;
        if (gst_structure_has_name(st, "splitmuxsink-fragment-opened"))
            fragment_opened(r, loc, rt);
        else if (gst_structure_has_name(st, "splitmuxsink-fragment-closed"))
            fragment_closed(r, loc, rt);
        break;
    default:
        break;
    }
    g_clear_error(&err);
    g_free(dbg);
}

static gboolean on_bus(GstBus *bus, GstMessage *msg, gpointer data)
{
    (void)bus;
    handle_message(data, msg);
    return G_SOURCE_CONTINUE;
}

static int build(igw_vcam_recorder *r, char *err, size_t errlen)
{
    GError *gerr = NULL;
    GstElement *smux;
    GstBus *bus;
    char *desc;

    /* Small is fine: 320x240 at 15 fps, a keyframe a second. The sink's
     * fragments finalize on their own (async-finalize, needed for
     * muxer-factory), so a new segment never waits for the last. */
    desc = g_strdup_printf(
        "videotestsrc is-live=true pattern=%s ! video/x-raw,width=320,height=240,framerate=15/1 "
        "! clockoverlay time-format=\"%%H:%%M:%%S\" halignment=left valignment=top font-desc=\"Sans 14\" "
        "shaded-background=true ! timeoverlay halignment=right valignment=bottom font-desc=\"Sans 10\" "
        "! videoconvert ! queue max-size-buffers=4 max-size-bytes=0 max-size-time=0 "
        "! x264enc tune=zerolatency speed-preset=ultrafast bitrate=300 key-int-max=15 sliced-threads=false threads=1 "
        "! video/x-h264,profile=constrained-baseline ! h264parse ! queue ! smux.video "
        "%s"
        "splitmuxsink name=smux async-finalize=true muxer-factory=matroskamux max-size-time=%lld",
        r->pattern,
        r->audio ? "audiotestsrc is-live=true wave=sine freq=440 volume=0.3 ! audioconvert ! audioresample "
                   "! opusenc ! queue ! smux.audio_0 "
                 : "",
        (long long)r->segment_ms * 1000000LL);
    r->pipe = gst_parse_launch_full(desc, NULL, GST_PARSE_FLAG_FATAL_ERRORS, &gerr);
    g_free(desc);
    if (!r->pipe) {
        snprintf(err, errlen, "cannot build the recorder: %s", gerr ? gerr->message : "unknown error");
        g_clear_error(&gerr);
        return -1;
    }
    if (!(smux = gst_bin_get_by_name(GST_BIN(r->pipe), "smux"))) {
        snprintf(err, errlen, "the recorder has no splitmuxsink");
        return -1;
    }
    g_signal_connect(smux, "format-location-full", G_CALLBACK(on_format_location), r);
    gst_object_unref(smux);
    bus = gst_element_get_bus(r->pipe);
    r->bus_watch = gst_bus_add_watch(bus, on_bus, r);
    gst_object_unref(bus);
    if (gst_element_set_state(r->pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        snprintf(err, errlen, "the recorder does not start");
        return -1;
    }
    return 0;
}

/* ---- public ---- */

igw_vcam_recorder *igw_vcam_recorder_new(const igw_vcam_recorder_config *c, const igw_vcam_recorder_cbs *cbs,
                                         void *user, char *err, size_t errlen)
{
    igw_vcam_recorder *r;

    if (igw_vcam_recorder_id_ok(c->camera_id, err, errlen) < 0)
        return NULL;
    if (g_mkdir_with_parents(c->dir, 0755) != 0) {
        snprintf(err, errlen, "--record-dir %s: %s", c->dir, g_strerror(errno));
        return NULL;
    }
    r = g_new0(igw_vcam_recorder, 1);
    r->dir = g_strdup(c->dir);
    r->camera_id = g_strdup(c->camera_id);
    r->pattern = g_strdup(c->pattern);
    snprintf(r->prefix, sizeof r->prefix, "rec-%s-", c->camera_id);
    r->segment_ms = c->segment_ms;
    r->retain_s = c->retain_s;
    r->audio = c->audio != 0;
    r->cbs = *cbs;
    r->user = user;
    r->entries = g_array_new(FALSE, FALSE, sizeof(entry));
    r->list = g_array_new(FALSE, FALSE, sizeof(igw_vcam_recording));
    if (load_dir(r, err, errlen) < 0)
        goto fail;
    rlog("%u recording(s) in %s", r->entries->len, r->dir);
    retain(r);
    if (build(r, err, errlen) < 0)
        goto fail;
    rlog("recording %s every %d ms (320x240@15 H264%s), kept %d s", r->dir, r->segment_ms, r->audio ? " + Opus" : "",
         r->retain_s);
    return r;
fail:
    igw_vcam_recorder_free(r);
    return NULL;
}

const igw_vcam_recording *igw_vcam_recorder_list(igw_vcam_recorder *r, unsigned *n)
{
    g_array_set_size(r->list, 0);
    for (guint i = 0; i < r->entries->len; i++) {
        entry *e = &g_array_index(r->entries, entry, i);
        igw_vcam_recording pub = e->pub;
        pub.id = e->id;
        g_array_append_val(r->list, pub);
    }
    *n = r->list->len;
    return (const igw_vcam_recording *)(void *)r->list->data;
}

const igw_vcam_recording *igw_vcam_recorder_find(igw_vcam_recorder *r, const char *id, const char **path)
{
    for (guint i = 0; i < r->entries->len; i++) {
        entry *e = &g_array_index(r->entries, entry, i);
        if (strcmp(e->id, id) == 0) {
            e->pub.id = e->id;
            *path = e->path;
            return &e->pub;
        }
    }
    return NULL;
}

void igw_vcam_recorder_free(igw_vcam_recorder *r)
{
    if (!r)
        return;
    if (r->bus_watch)
        g_source_remove(r->bus_watch);
    if (r->pipe) {
        GstBus *bus = gst_element_get_bus(r->pipe);
        GstState st = GST_STATE_NULL;
        gst_element_get_state(r->pipe, &st, NULL, 0);
        /* EOS closes the segment being written: it becomes a recording the
         * next start finds. Its messages are read here, the loop being
         * done. */
        if (st == GST_STATE_PLAYING && gst_element_send_event(r->pipe, gst_event_new_eos())) {
            gint64 deadline = g_get_monotonic_time() + STOP_WAIT_NS / 1000;
            GstMessage *m;
            while (g_get_monotonic_time() < deadline &&
                   (m = gst_bus_timed_pop_filtered(bus, (GstClockTime)(deadline - g_get_monotonic_time()) * 1000,
                                                   GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT))) {
                int done = GST_MESSAGE_TYPE(m) != GST_MESSAGE_ELEMENT;
                if (!done)
                    handle_message(r, m);
                gst_message_unref(m);
                if (done)
                    break;
            }
        }
        gst_object_unref(bus);
        gst_element_set_state(r->pipe, GST_STATE_NULL);
        gst_object_unref(r->pipe);
    }
    for (int i = 0; i < OPEN_MAX; i++)
        g_free(r->open[i].location);
    if (r->entries) {
        for (guint i = 0; i < r->entries->len; i++)
            entry_clear(&g_array_index(r->entries, entry, i));
        g_array_free(r->entries, TRUE);
    }
    if (r->list)
        g_array_free(r->list, TRUE);
    g_free(r->dir);
    g_free(r->camera_id);
    g_free(r->pattern);
    g_free(r);
}
