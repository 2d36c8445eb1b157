/* processor.c - a session's processors (processor.h, docs/ai.md).
 *
 * Each runs as a process of its own (child.h): it hears the application's
 * voice through a tap of the media core, speaks into the viewer's feed (a
 * side conversation: the application hears it; talk: the camera's speaker
 * hears it instead of the application's own voice), and an aiAssist sees
 * the camera only by frame takes: each one re-reads the owner's facts and
 * locks the covering consents in the database, then delivers one frame
 * bound to a ticket whose consumption is judged again (spec area C). What
 * they say reaches the application as interaction.processor events. */
#include "session/processor.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "core/log.h"
#include "event/rights.h"
#include "media.h"
#include "paths.h"
#include "procline.h"
#include "session/child.h"
#include "session/decide.h"
#include "session/op.h"
#include "session/session.h"
#include "session/vision.h"

#define PROCS_MAX 4             /* processors at once in one session */
#define READY_MS 15000      /* a processor not ready by then failed */
#define SIDE_MIC "mic"      /* a side conversation's uplink: the user's microphone */
#define SOURCE_LANG "en"    /* what the recognizer hears (its model) */
#define CONSENTS_MAX IGW_ProcessorControlParams_consentIds_MAX_ITEMS /* consents one attach names */

typedef struct processor {
    bool used;
    igw_engine *e;
    char id[LIVE_ID_MAX + 1];        /* processorId */
    igw_Processor kind;
    live_proc *proc;                 /* NULL once gone or stopped */
    bool ready;
    uint16_t audio_port, video_port;
    char pairs[64];                  /* what it translates: "en>es" */
    char token[LIVE_TOKEN_MAX + 1];  /* its attach, until its result went */
    int64_t ready_deadline_ms;       /* monotonic */
    char eyes[LIVE_ID_MAX + 1];      /* aiAssist: its plain-RTP viewer in the media core ("": none) */
    char consents[CONSENTS_MAX][LIVE_ID_MAX + 1];
    unsigned nconsents;
    char target[40];                 /* translation: its target language */
    /* the frame take in flight */
    bool taking;                     /* a take's check or frame is on its way */
    char ticket[32];
    uint32_t frame;
    bool have_frame;
    int64_t issued_ms, ticket_deadline_ms; /* wall clock */
    uint32_t ticket_revision;
    uint64_t ticket_gen;
} processor;

/* A session's processors: its live_session.processors (the vtable first). */
typedef struct processors {
    live_attached hooks;
    processor procs[PROCS_MAX];
    uint64_t events;                 /* interaction.processor events so far (their msgTokens) */
    char source_lang[40], target_lang[40];
    int64_t config_revision;         /* the last configure's (0: none yet) */
} processors;

static processors *set_of(const live_session *s)
{
    return s ? (processors *)s->processors : NULL;
}

static void set_end(igw_engine *e, live_session *s);
static void set_vision_lost(igw_engine *e, live_session *s);

/* The session's set, made on its first processorControl or configure;
 * NULL: out of memory. */
static processors *set_get(live_session *s)
{
    if (!s->processors) {
        processors *a = calloc(1, sizeof *a);
        if (!a)
            return NULL;
        a->hooks = (live_attached){.end = set_end, .vision_lost = set_vision_lost};
        snprintf(a->source_lang, sizeof a->source_lang, "%s", SOURCE_LANG);
        s->processors = &a->hooks;
    }
    return set_of(s);
}

/* What a processor of the session hears, by the track id its
 * sourceTrackIds name: the application's voice (the audio track the camera
 * plays: talk's "speaker"; a side conversation's "mic"). */
static igw_str voice_id(const live_session *s)
{
    for (size_t i = 0; !s->def->side && i < s->def->ntracks; i++) {
        const igw_purpose_track *t = &s->def->tracks[i];
        if (t->kind == IGW_TrackKind_audio && t->direction == IGW_PURPOSE_RECVONLY && (t->when & ~s->guards) == 0)
            return t->id;
    }
    return (igw_str){SIDE_MIC, sizeof SIDE_MIC - 1};
}

/* ---- events to the application ---------------------------------------------------- */

static void on_event_emitted(void *arg, const igw_outbox_result *r)
{
    char *token = arg;
    if (r->status != IGW_OUTBOX_OK && r->status != IGW_OUTBOX_DUPLICATE)
        igw_log(IGW_LOG_WARN, NULL, "session: processor event %s not stored (%d)", token, (int)r->status);
    free(token);
}

static void emit(igw_engine *e, live_session *s, const igw_ProcessorData *d)
{
    processors *a = set_of(s);
    char token[LIVE_TOKEN_MAX + 1];
    snprintf(token, sizeof token, "%s.p%" PRIu64, s->id, ++a->events);
    igw_ProcessorEvent ev = {.has = IGW_ProcessorEvent__REQUIRED,
                             .msgToken = igw_str_of(token),
                             .method = IGW_ProcessorMethod_interaction_processor,
                             .sessionId = igw_str_of(s->id),
                             .data = *d};
    igw_jw_reset(&e->jw);
    igw_encode_ProcessorEvent(&e->jw, &ev);
    char *copy = strdup(token);
    igw_outbox_event oe = {.endpoint_id = s->endpoint, .msg_token = token, .session_id = s->id,
                           .body = e->jw.buf, .body_len = e->jw.len};
    if (igw_jw_status(&e->jw) || !copy || igw_outbox_emit(e->db, &oe, on_event_emitted, copy) != 0) {
        igw_log(IGW_LOG_WARN, NULL, "session %s: processor event %s not emitted", s->id, token);
        free(copy);
    }
}

static igw_ProcessorData pdata(const processor *p, igw_ProcessorEventKind kind)
{
    return (igw_ProcessorData){.has = IGW_ProcessorData__REQUIRED, .processorId = igw_str_of(p->id),
                               .processor = p->kind, .kind = kind};
}

static void result(igw_engine *e, live_session *s, const char *token, igw_CommandMethod op, int cls,
                   const char *reason, const char *state, const processor *p, int64_t config_revision)
{
    igw_ResultData d = {0};
    if (cls == IGW_ERR_OK) {
        d.has = IGW_ResultData_state;
        d.state = igw_str_of(state);
        if (p) {
            d.has |= IGW_ResultData_processorId;
            d.processorId = igw_str_of(p->id);
        }
        if (config_revision) {
            d.has |= IGW_ResultData_configRevision;
            d.configRevision = config_revision;
        }
    }
    live_session_result(e, s->id, s->endpoint, token, op, cls, reason, &d);
}

/* ---- a processor's end ------------------------------------------------------------- */

static live_session *session_of_proc(igw_engine *e, const processor *p);

/* Its authorization first (no ticket stands, its eyes closed, it hears
 * nothing more), then the process. */
static void release(igw_engine *e, live_session *s, processor *p)
{
    char err[160];
    p->taking = false;
    p->ticket[0] = '\0';
    if (p->eyes[0]) {
        (void)igw_media_close(e->media, p->eyes, "processor released");
        p->eyes[0] = '\0';
    }
    if (p->audio_port && s->offered)
        (void)igw_media_viewer_tap(e->media, s->id, s->revision, "127.0.0.1", p->audio_port, false, err, sizeof err);
    if (p->proc) {
        live_proc_stop(p->proc);
        p->proc = NULL;
    }
    p->used = false;
}

/* ---- the processor's lines ----------------------------------------------------------- */

typedef struct line_fields {
    char op[32], text[1100], translated[1100], question[260], ticket[40], message[260], pairs[64], target[40];
    igw_procfield f[14];
} line_fields;

static int read_line(line_fields *L, const char *line, size_t len)
{
    igw_procfield f[] = {
        {.name = "op", .kind = IGW_PROCLINE_STR, .str = L->op, .cap = sizeof L->op},
        {.name = "text", .kind = IGW_PROCLINE_STR, .str = L->text, .cap = sizeof L->text},
        {.name = "translated", .kind = IGW_PROCLINE_STR, .str = L->translated, .cap = sizeof L->translated},
        {.name = "question", .kind = IGW_PROCLINE_STR, .str = L->question, .cap = sizeof L->question},
        {.name = "ticket", .kind = IGW_PROCLINE_STR, .str = L->ticket, .cap = sizeof L->ticket},
        {.name = "message", .kind = IGW_PROCLINE_STR, .str = L->message, .cap = sizeof L->message},
        {.name = "pairs", .kind = IGW_PROCLINE_STR, .str = L->pairs, .cap = sizeof L->pairs},
        {.name = "targetLanguage", .kind = IGW_PROCLINE_STR, .str = L->target, .cap = sizeof L->target},
        {.name = "audioPort", .kind = IGW_PROCLINE_INT},
        {.name = "videoPort", .kind = IGW_PROCLINE_INT},
        {.name = "frame", .kind = IGW_PROCLINE_INT},
        {.name = "faces", .kind = IGW_PROCLINE_INT},
        {.name = "brightness", .kind = IGW_PROCLINE_INT},
        {.name = "configRevision", .kind = IGW_PROCLINE_INT},
    };
    _Static_assert(sizeof f / sizeof f[0] == sizeof L->f / sizeof L->f[0], "every field has its slot");
    memcpy(L->f, f, sizeof f);
    return igw_procline_read(line, len, L->f, sizeof L->f / sizeof L->f[0]);
}

static igw_procfield *fld(line_fields *L, const char *name)
{
    return igw_procline_field(L->f, sizeof L->f / sizeof L->f[0], name);
}

static void send_line(processor *p, igw_jw *w)
{
    if (p->proc && igw_jw_status(w) == 0 && live_proc_send(p->proc, w->buf, w->len) != 0)
        p->proc = NULL; /* stalled: stopped by the send; its end is ours to say */
}

/* Starts a line to a processor in e->jw: {"op":op[,"ticket":ticket]...;
 * the caller adds its fields, ends the object and sends it. */
static void line_begin(igw_engine *e, const char *op, const char *ticket)
{
    igw_jw_reset(&e->jw);
    igw_jw_object_begin(&e->jw);
    igw_jw_key(&e->jw, "op", 2);
    igw_jw_string(&e->jw, op, strlen(op));
    if (ticket) {
        igw_jw_key(&e->jw, "ticket", 6);
        igw_jw_string(&e->jw, ticket, strlen(ticket));
    }
}

static void send_simple(igw_engine *e, processor *p, const char *op, const char *key, const char *value)
{
    line_begin(e, op, NULL);
    if (key) {
        igw_jw_key(&e->jw, key, strlen(key));
        igw_jw_string(&e->jw, value, strlen(value));
    }
    igw_jw_object_end(&e->jw);
    send_line(p, &e->jw);
}

static void configure_proc(igw_engine *e, live_session *s, processor *p)
{
    igw_media_stats st;
    int feed = s->offered && igw_media_get_stats(e->media, s->id, &st) == IGW_MEDIA_OK ? st.side_port : 0;
    processors *a = set_of(s);
    line_begin(e, "configure", NULL);
    igw_jw_key(&e->jw, "feedPort", 8);
    igw_jw_int(&e->jw, feed);
    igw_jw_key(&e->jw, "sourceLanguage", 14);
    igw_jw_string(&e->jw, a->source_lang, strlen(a->source_lang));
    const char *target = p->target[0] ? p->target : a->target_lang;
    igw_jw_key(&e->jw, "targetLanguage", 14);
    igw_jw_string(&e->jw, target, strlen(target));
    igw_jw_key(&e->jw, "configRevision", 14);
    igw_jw_int(&e->jw, a->config_revision);
    igw_jw_object_end(&e->jw);
    send_line(p, &e->jw);
}

/* Ready: its ears on the side's tap, its voice into the side's feed, its
 * eyes a paused plain-RTP viewer of the camera (aiAssist), then the
 * attach's result. */
static void proc_ready(igw_engine *e, live_session *s, processor *p, line_fields *L)
{
    igw_procfield *ap = fld(L, "audioPort"), *vp = fld(L, "videoPort");
    char err[160] = "";
    if (!ap->present || ap->num <= 0 || ap->num > 65535 ||
        (p->kind == IGW_Processor_aiAssist && (!vp->present || vp->num <= 0 || vp->num > 65535))) {
        snprintf(err, sizeof err, "its ready line names no usable port");
    } else {
        p->audio_port = (uint16_t)ap->num;
        p->video_port = vp->present ? (uint16_t)vp->num : 0;
        snprintf(p->pairs, sizeof p->pairs, "%s", L->pairs);
        if (igw_media_viewer_tap(e->media, s->id, s->revision, "127.0.0.1", p->audio_port, true, err, sizeof err) !=
            IGW_MEDIA_OK) {
        } else if (p->kind == IGW_Processor_aiAssist) {
            snprintf(p->eyes, sizeof p->eyes, "%.40s~%.16s", s->id, p->id);
            if (!s->leg || igw_media_viewer_rtp(e->media, s->leg->id, p->eyes, "127.0.0.1", p->video_port, err,
                                                sizeof err) != IGW_MEDIA_OK)
                p->eyes[0] = '\0';
            else
                err[0] = '\0';
        } else {
            err[0] = '\0';
        }
    }
    if (err[0]) {
        igw_log(IGW_LOG_WARN, NULL, "session %s: processor %s not attached: %s", s->id, p->id, err);
        if (p->token[0])
            result(e, s, p->token, IGW_CommandMethod_interaction_processorControl, IGW_ERR_UNAVAILABLE,
                   "the processor could not be attached", NULL, NULL, 0);
        release(e, s, p);
        return;
    }
    p->ready = true;
    configure_proc(e, s, p);
    if (p->token[0]) {
        result(e, s, p->token, IGW_CommandMethod_interaction_processorControl, IGW_ERR_OK, NULL, "attached", p, 0);
        p->token[0] = '\0';
    }
    igw_ProcessorData d = pdata(p, IGW_ProcessorEventKind_ready);
    emit(e, s, &d);
    igw_log(IGW_LOG_INFO, NULL, "session %s: processor %s (%.*s) attached, pid %d", s->id, p->id,
            (int)igw_Processor_names[p->kind].len, igw_Processor_names[p->kind].ptr, (int)live_proc_pid(p->proc));
}

/* The frame take's lock: the session's source row as the owner holds it
 * and at least one of the processor's consents still granted, unexpired
 * and covering this generation, both locked FOR SHARE so that a revoke
 * (FOR UPDATE) waits for the check or the check sees it. The row locks
 * are the only thing it writes and they die with the statement, so its
 * commit does not wait for the WAL flush (synchronous_commit off for this
 * transaction only): a take costs no WAL flush of its own. It runs on a
 * connection of its own (takes_db): on the engine's, its answer would wait
 * behind the commit of whatever was queued before it (the processor's
 * "heard" event, sent just before its take, is one). A source change the
 * engine has queued there and not yet committed can only make it refuse. */
enum { TK_SID, TK_ENT, TK_USER, TK_NODE, TK_EPOCH, TK_REV, TK_CAM, TK_IDS, TK__N };
static const igw_db_stmt st_take = {
    "igw_processor_frame_take",
    "WITH src AS MATERIALIZED (SELECT 1 FROM vision_sources v WHERE v.session_id = $1::text "
    "    AND v.enterprise_id = $2::bigint AND v.user_id = $3::bigint AND v.live AND v.owner_node = $4::text "
    "    AND v.owner_epoch = $5::bigint AND v.media_revision = $6::bigint FOR SHARE), "
    "c AS MATERIALIZED (SELECT x.consent_id FROM consents x WHERE x.consent_id = ANY($8::text[]) "
    "    AND x.enterprise_id = $2::bigint AND x.user_id = $3::bigint AND x.state = '" LIVE_CONSENT_GRANTED "' "
    "    AND x.expires_at_ms > " IGW_SQL_NOW_MS " AND x.source_session_id = $1::text AND x.camera_id = $7::text "
    "    AND x.media_revision = $6::bigint FOR SHARE) "
    "SELECT (SELECT count(*) FROM src), (SELECT count(*) FROM c), "
    "    set_config('synchronous_commit', 'off', true)",
    TK__N};

/* The takes' connection, opened by the first processor with eyes (a node
 * that never runs one holds no extra connection); by its first take it is
 * up, the processor's model takes longer to load. NULL: no database. */
static igw_db *takes_db(igw_engine *e)
{
    if (!e->takes && e->db) {
        char err[160];
        if (!(e->takes = igw_db_create(e->evloop, e->pg_dsn, err, sizeof err))) {
            igw_log(IGW_LOG_WARN, NULL, "frame takes: no connection of their own (%s): they share the engine's", err);
            return e->db;
        }
        igw_db_set_deadline(e->takes, e->cfg.db_timeout_ms);
    }
    return e->takes ? e->takes : e->db;
}

typedef struct take_ctx {
    igw_engine *e;
    char sid[LIVE_ID_MAX + 1], proc[LIVE_ID_MAX + 1];
    uint64_t gen;
    uint32_t revision;
    int64_t asked_ms;
} take_ctx;

static processor *find_proc(processors *a, const char *id)
{
    for (int i = 0; i < PROCS_MAX; i++)
        if (a->procs[i].used && strcmp(a->procs[i].id, id) == 0)
            return &a->procs[i];
    return NULL;
}

static void take_refused(igw_engine *e, processor *p, const char *why)
{
    p->taking = false;
    p->ticket[0] = '\0';
    send_simple(e, p, "refused", "reason", why);
}

static void on_take_locked(void *arg, const PGresult *res, const char *err)
{
    take_ctx *t = arg;
    igw_engine *e = t->e;
    live_session *s = live_session_find(e, t->sid);
    processors *a = set_of(s);
    processor *p = a ? find_proc(a, t->proc) : NULL;
    if (!p || !p->taking) {
        free(t);
        return;
    }
    char merr[160];
    if (!res) {
        igw_log(IGW_LOG_WARN, NULL, "session %s: a frame take's lock failed: %s", s->id, err);
        take_refused(e, p, "the consent could not be checked");
    } else if (strcmp(PQgetvalue(res, 0, 0), "1") != 0) {
        take_refused(e, p, "the session's source changed");
    } else if (strcmp(PQgetvalue(res, 0, 1), "0") == 0) {
        take_refused(e, p, "no consent of yours covers the camera now");
    } else if (t->gen != live_vision_consent_gen(s) || t->revision != s->revision || !live_vision_sharing(s)) {
        take_refused(e, p, "the consent or the media changed meanwhile");
    } else if (!p->eyes[0] || igw_media_viewer_take(e->media, p->eyes, merr, sizeof merr) != IGW_MEDIA_OK) {
        take_refused(e, p, "the camera's frame cannot be taken");
    } else {
        /* The ticket: bound to this generation, this consent state and a
         * short deadline; its frame is the one the take delivers. */
        if (live_new_id(p->ticket, sizeof p->ticket) != 0) {
            take_refused(e, p, "no ticket id");
        } else {
            p->issued_ms = igw_wall_ms();
            p->ticket_deadline_ms = p->issued_ms + IGW_VISION_AUTHORITY_MS;
            p->ticket_revision = s->revision;
            p->ticket_gen = t->gen;
            p->have_frame = false;
            /* Granted: its frame follows (the camera's next keyframe). */
            line_begin(e, "granted", p->ticket);
            igw_jw_key(&e->jw, "deadlineMs", 10);
            igw_jw_int(&e->jw, p->ticket_deadline_ms);
            igw_jw_object_end(&e->jw);
            send_line(p, &e->jw);
        }
    }
    free(t);
}

static void proc_take(igw_engine *e, live_session *s, processor *p)
{
    if (p->kind != IGW_Processor_aiAssist || !p->eyes[0]) {
        send_simple(e, p, "refused", "reason", "this processor has no eyes");
        return;
    }
    if (p->taking) {
        send_simple(e, p, "refused", "reason", "a take is in flight");
        return;
    }
    /* The live authority, re-read in the owner's memory first. */
    if (!live_vision_sharing(s)) {
        send_simple(e, p, "refused", "reason", "the camera is not shared now: no consent covers it");
        return;
    }
    take_ctx *t = calloc(1, sizeof *t);
    char ent[24], user[24], epoch[24], rev[16], ids[CONSENTS_MAX * (2 * LIVE_ID_MAX + 3) + 3];
    if (!t) {
        send_simple(e, p, "refused", "reason", "busy");
        return;
    }
    *t = (take_ctx){.e = e, .gen = live_vision_consent_gen(s), .revision = s->revision, .asked_ms = igw_wall_ms()};
    snprintf(t->sid, sizeof t->sid, "%s", s->id);
    snprintf(t->proc, sizeof t->proc, "%s", p->id);
    snprintf(ent, sizeof ent, "%" PRId64, s->enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, s->user_id);
    snprintf(epoch, sizeof epoch, "%" PRId64, live_node_epoch(e));
    snprintf(rev, sizeof rev, "%" PRIu32, s->revision);
    const char *list[CONSENTS_MAX];
    for (unsigned i = 0; i < p->nconsents; i++)
        list[i] = p->consents[i];
    if (!igw_db_text_array(ids, sizeof ids, list, p->nconsents)) {
        free(t);
        send_simple(e, p, "refused", "reason", "busy");
        return;
    }
    const char *v[TK__N] = {[TK_SID] = s->id,   [TK_ENT] = ent,  [TK_USER] = user,
                            [TK_NODE] = e->node_id, [TK_EPOCH] = epoch, [TK_REV] = rev,
                            [TK_CAM] = s->leg ? s->leg->camera_id : "", [TK_IDS] = ids};
    if (igw_db_exec(takes_db(e), &st_take, v, NULL, NULL, on_take_locked, t) != 0) {
        free(t);
        send_simple(e, p, "refused", "reason", "busy");
        return;
    }
    p->taking = true;
}

/* The ticket's frame went out: the processor gets its ticket; its eyes'
 * source went: it has none. */
bool live_processor_media(igw_engine *e, const igw_media_event *ev)
{
    if (ev->kind != IGW_MEDIA_EV_FRAME && ev->kind != IGW_MEDIA_EV_CLOSED)
        return false;
    for (live_session *s = e->sessions; s; s = s->next) {
        processors *a = set_of(s);
        for (int i = 0; a && i < PROCS_MAX; i++) {
            processor *p = &a->procs[i];
            if (!p->used || strcmp(p->eyes, ev->id) != 0)
                continue;
            if (ev->kind == IGW_MEDIA_EV_CLOSED) { /* the camera's leg went: no eyes */
                p->eyes[0] = '\0';
                return true;
            }
            if (!p->taking || !p->ticket[0])
                return true;
            p->frame = ev->rtp_ts;
            p->have_frame = true;
            line_begin(e, "ticket", p->ticket);
            igw_jw_key(&e->jw, "frame", 5);
            igw_jw_int(&e->jw, p->frame);
            igw_jw_key(&e->jw, "deadlineMs", 10);
            igw_jw_int(&e->jw, p->ticket_deadline_ms);
            igw_jw_object_end(&e->jw);
            send_line(p, &e->jw);
            return true;
        }
    }
    return false;
}

/* Consumption: the ticket, its frame, its deadline, the clock, the consents
 * and the generation judged again now; only then may the model look. */
static void proc_consume(igw_engine *e, live_session *s, processor *p, line_fields *L)
{
    int64_t now = igw_wall_ms();
    igw_procfield *fr = fld(L, "frame");
    const char *why = NULL;
    if (!p->taking || !p->ticket[0] || strcmp(L->ticket, p->ticket) != 0)
        why = "no such ticket";
    else if (!p->have_frame || !fr->present || (uint32_t)fr->num != p->frame)
        why = "not the ticket's frame";
    else if (now < p->issued_ms)
        why = "the clock went back";
    else if (now >= p->ticket_deadline_ms)
        why = "the ticket expired";
    else if (p->ticket_gen != live_vision_consent_gen(s) || !live_vision_sharing(s))
        why = "the consent was revoked or changed";
    else if (p->ticket_revision != s->revision)
        why = "the media generation changed";
    line_begin(e, "consumed", L->ticket);
    igw_jw_key(&e->jw, "ok", 2);
    igw_jw_bool(&e->jw, why == NULL);
    if (why) {
        igw_jw_key(&e->jw, "reason", 6);
        igw_jw_string(&e->jw, why, strlen(why));
    }
    igw_jw_object_end(&e->jw);
    send_line(p, &e->jw);
    p->taking = false;
    p->ticket[0] = '\0';
}

static void proc_says(igw_engine *e, live_session *s, processor *p, line_fields *L)
{
    igw_ProcessorData d;
    if (strcmp(L->op, "heard") == 0 && L->text[0]) {
        d = pdata(p, IGW_ProcessorEventKind_heard);
        d.has |= IGW_ProcessorData_text;
        d.text = igw_str_of(L->text);
    } else if (strcmp(L->op, "caption") == 0 && L->text[0] && L->translated[0]) {
        d = pdata(p, IGW_ProcessorEventKind_caption);
        d.has |= IGW_ProcessorData_text | IGW_ProcessorData_translated;
        d.text = igw_str_of(L->text);
        d.translated = igw_str_of(L->translated);
        const char *target = p->target[0] ? p->target : set_of(s)->target_lang;
        if (target[0]) {
            d.has |= IGW_ProcessorData_targetLanguage;
            d.targetLanguage = igw_str_of(target);
        }
        if (fld(L, "configRevision")->num > 0) {
            d.has |= IGW_ProcessorData_configRevision;
            d.configRevision = fld(L, "configRevision")->num;
        }
    } else if (strcmp(L->op, "answer") == 0 && L->text[0]) {
        d = pdata(p, IGW_ProcessorEventKind_answer);
        d.has |= IGW_ProcessorData_text;
        d.text = igw_str_of(L->text);
        if (L->question[0]) {
            d.has |= IGW_ProcessorData_question;
            d.question = igw_str_of(L->question);
        }
        igw_procfield *fa = fld(L, "faces"), *br = fld(L, "brightness");
        if (fa->present && fa->num >= 0 && fa->num <= 10000 && br->present && br->num >= 0 && br->num <= 255) {
            d.has |= IGW_ProcessorData_faces | IGW_ProcessorData_brightness;
            d.faces = fa->num;
            d.brightness = br->num;
        }
    } else {
        return; /* nothing the application reads (configured, error...) */
    }
    emit(e, s, &d);
}

static live_session *session_of_proc(igw_engine *e, const processor *p)
{
    for (live_session *s = e->sessions; s; s = s->next) {
        processors *a = set_of(s);
        if (a && p >= a->procs && p < a->procs + PROCS_MAX)
            return s;
    }
    return NULL;
}

static void on_line(void *ctx, live_proc *lp, const char *line, size_t len)
{
    (void)lp;
    processor *p = ctx;
    igw_engine *e = p->e;
    live_session *s = session_of_proc(e, p);
    if (!s)
        return;
    line_fields L;
    if (read_line(&L, line, len) != 0 || !L.op[0]) {
        igw_log(IGW_LOG_WARN, NULL, "session %s: processor %s said a line it may not: ignored", s->id, p->id);
        return;
    }
    if (strcmp(L.op, "ready") == 0 && !p->ready)
        proc_ready(e, s, p, &L);
    else if (!p->ready)
        return; /* nothing counts before it is ready */
    else if (strcmp(L.op, "take") == 0)
        proc_take(e, s, p);
    else if (strcmp(L.op, "consume") == 0)
        proc_consume(e, s, p, &L);
    else if (strcmp(L.op, "error") == 0)
        igw_log(IGW_LOG_WARN, NULL, "session %s: processor %s: %s", s->id, p->id, L.message);
    else
        proc_says(e, s, p, &L);
}

static void proc_gone(void *ctx, live_proc *lp, const char *why)
{
    (void)lp;
    processor *p = ctx;
    igw_engine *e = p->e;
    live_session *s = session_of_proc(e, p);
    p->proc = NULL;
    if (!s)
        return;
    igw_log(IGW_LOG_WARN, NULL, "session %s: processor %s failed: %s (the session goes on)", s->id, p->id, why);
    if (p->token[0])
        result(e, s, p->token, IGW_CommandMethod_interaction_processorControl, IGW_ERR_UNAVAILABLE,
               "the processor failed to start", NULL, NULL, 0);
    igw_ProcessorData d = pdata(p, IGW_ProcessorEventKind_failed);
    d.has |= IGW_ProcessorData_reason;
    d.reason = igw_str_of(why);
    emit(e, s, &d);
    release(e, s, p);
}

static const live_proc_ops proc_ops = {.line = on_line, .gone = proc_gone};

/* ---- interaction.processorControl ---------------------------------------------------- */

/* The consents an attach names: each the caller's, granted and unexpired;
 * an aiAssist's each covering this session's camera and generation. */
enum { CC_ENT, CC_USER, CC_IDS, CC_SID, CC_CAM, CC_REV, CC__N };
enum { CC_COL_ID, CC_COL_MINE, CC_COL_GRANTED, CC_COL_UNEXPIRED, CC_COL_COVERS };
static const igw_db_stmt st_consents = {
    "igw_processor_attach_consents",
    "SELECT u.id, c.consent_id IS NOT NULL, c.state = '" LIVE_CONSENT_GRANTED "', c.expires_at_ms > " IGW_SQL_NOW_MS ", "
    "       c.source_session_id = $4::text AND c.camera_id = $5::text AND c.media_revision = $6::bigint "
    "FROM unnest($3::text[]) WITH ORDINALITY AS u(id, i) "
    "LEFT JOIN consents c ON c.consent_id = u.id AND c.enterprise_id = $1::bigint AND c.user_id = $2::bigint "
    "ORDER BY u.i",
    CC__N};

/* What an accepted attach needs after its command is gone (the op keeps
 * it: text the processorId, iarg the kind, offer the target language and
 * the consent ids, a line each). */
static int stash_attach(live_op *o, const igw_ProcessorControlParams *pp)
{
    bool has_target = pp->has & IGW_ProcessorControlParams_targetLanguage;
    size_t n = (has_target ? pp->targetLanguage.len : 0) + 1;
    for (uint32_t i = 0; i < pp->consentIds.n && i < CONSENTS_MAX; i++)
        n += pp->consentIds.v[i].len + 1;
    if (!(o->offer = malloc(n)))
        return -1;
    size_t at = (size_t)snprintf(o->offer, n, "%.*s", has_target ? (int)pp->targetLanguage.len : 0,
                                 has_target ? pp->targetLanguage.ptr : "");
    for (uint32_t i = 0; i < pp->consentIds.n && i < CONSENTS_MAX; i++)
        at += (size_t)snprintf(o->offer + at, n - at, "\n%.*s", (int)pp->consentIds.v[i].len, pp->consentIds.v[i].ptr);
    o->iarg = pp->processor;
    return 0;
}

static void attach_accepted(live_op *o, live_session *s)
{
    igw_engine *e = o->e;
    processors *a = set_of(s);
    processor *p = NULL;
    for (int i = 0; i < PROCS_MAX && !p; i++)
        if (!a->procs[i].used)
            p = &a->procs[i];
    if (!p || find_proc(a, o->text)) { /* two accepted at once */
        result(e, s, o->token, IGW_CommandMethod_interaction_processorControl, IGW_ERR_CONFLICT,
               "the processorId is in use, or the session has its processors already", NULL, NULL, 0);
        return;
    }
    *p = (processor){.used = true, .e = e, .kind = (igw_Processor)o->iarg, .ready_deadline_ms = igw_clock_ms() + READY_MS};
    snprintf(p->id, sizeof p->id, "%s", o->text);
    snprintf(p->token, sizeof p->token, "%s", o->token);
    char *save = NULL, *line = strtok_r(o->offer, "\n", &save);
    if (o->offer[0] != '\n' && line) { /* the first line is the target (empty: none) */
        snprintf(p->target, sizeof p->target, "%s", line);
        line = strtok_r(NULL, "\n", &save);
    }
    for (; line && p->nconsents < CONSENTS_MAX; line = strtok_r(NULL, "\n", &save))
        snprintf(p->consents[p->nconsents++], sizeof p->consents[0], "%s", line);
    char kind[32];
    snprintf(kind, sizeof kind, "%.*s", (int)igw_Processor_names[p->kind].len, igw_Processor_names[p->kind].ptr);
    char *argv[6] = {e->processor_bin, "--kind", kind, NULL, NULL, NULL};
    if (p->kind == IGW_Processor_translation && e->translation_grammar[0]) {
        argv[3] = "--grammar";
        argv[4] = e->translation_grammar;
    }
    if (p->kind == IGW_Processor_aiAssist)
        (void)takes_db(e); /* connecting while the processor loads */
    char err[200];
    if (!(p->proc = live_proc_start(e, argv, &proc_ops, p, err, sizeof err))) {
        igw_log(IGW_LOG_WARN, NULL, "session %s: processor %s not started: %s", s->id, p->id, err);
        result(e, s, p->token, IGW_CommandMethod_interaction_processorControl, IGW_ERR_UNAVAILABLE,
               "the processor could not be started", NULL, NULL, 0);
        p->used = false;
    }
}

static void on_attach_consents(void *arg, const PGresult *res, const char *err)
{
    live_op *o = arg;
    if (!res) {
        live_op_refuse_db(o, err, false);
        return;
    }
    live_session *s = live_session_find(o->e, o->sid);
    if (!s) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "the session ended", IGW_PATH_command_sessionId);
        return;
    }
    const igw_ProcessorControlParams *pp = &o->k->params.interaction_processorControl;
    static char path[64];
    for (int i = 0, n = PQntuples(res); i < n; i++) {
        snprintf(path, sizeof path, "%s/%d", IGW_PATH_command_params_consentIds, i);
        if (!igw_db_true(res, i, CC_COL_MINE)) {
            live_op_refuse(o, IGW_ERR_PERMISSION, "not a consent of yours", path);
            return;
        }
        if (!igw_db_true(res, i, CC_COL_GRANTED)) {
            live_op_refuse(o, IGW_ERR_CONFLICT, "the consent is revoked", path);
            return;
        }
        if (!igw_db_true(res, i, CC_COL_UNEXPIRED)) {
            live_op_refuse(o, IGW_ERR_CONFLICT, "the consent expired", path);
            return;
        }
        if (pp->processor == IGW_Processor_aiAssist && !igw_db_true(res, i, CC_COL_COVERS)) {
            live_op_refuse(o, IGW_ERR_CONFLICT, "the consent does not cover this session's camera and generation",
                           path);
            return;
        }
    }
    if (stash_attach(o, pp) != 0) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    live_op_accept(o, attach_accepted);
}

static void detach_accepted(live_op *o, live_session *s)
{
    igw_engine *e = o->e;
    processors *a = set_of(s);
    processor *p = find_proc(a, o->text);
    if (!p) {
        result(e, s, o->token, IGW_CommandMethod_interaction_processorControl, IGW_ERR_NOT_FOUND,
               "no such processor", NULL, NULL, 0);
        return;
    }
    processor copy = *p;
    send_simple(e, p, "revoked", NULL, NULL); /* its authorization first */
    release(e, s, p);
    result(e, s, o->token, IGW_CommandMethod_interaction_processorControl, IGW_ERR_OK, NULL, "detached", &copy, 0);
    igw_ProcessorData d = pdata(&copy, IGW_ProcessorEventKind_detached);
    emit(e, s, &d);
}

/* Whether the target language is one the translator serves from the
 * session's source language: what the reference processor says it can
 * (its ready line's pairs; en>es). */
static bool pair_supported(const char *source, const char *target)
{
    return strncmp(source, "en", 2) == 0 && (source[2] == '\0' || source[2] == '-') && strncmp(target, "es", 2) == 0 &&
           (target[2] == '\0' || target[2] == '-');
}

/* Whether s's purpose runs processors of kind k; if not, the refusal. */
static bool runs(live_op *o, const live_session *s, igw_Processor k, const char *path)
{
    if (s->def->processors & (1u << k))
        return true;
    char why[160];
    const igw_str pn = igw_Purpose_names[s->purpose], kn = igw_Processor_names[k];
    if (!s->def->processors) {
        snprintf(why, sizeof why, "%.*s sessions run no processor in this version", (int)pn.len, pn.ptr);
        live_op_refuse(o, IGW_ERR_NOT_IMPLEMENTED, why, IGW_PATH_command_sessionId);
        return false;
    }
    size_t at = (size_t)snprintf(why, sizeof why, "%.*s sessions run no %.*s: they run", (int)pn.len, pn.ptr,
                                 (int)kn.len, kn.ptr);
    for (int i = 0; i < IGW_Processor__COUNT && at < sizeof why; i++)
        if (s->def->processors & (1u << i))
            at += (size_t)snprintf(why + at, sizeof why - at, " %.*s", (int)igw_Processor_names[i].len,
                                   igw_Processor_names[i].ptr);
    live_op_refuse(o, IGW_ERR_PARAMETER, why, path);
    return false;
}

void igw_processor_control(live_op *o)
{
    live_session *s = live_session_find(o->e, o->sid);
    const igw_ProcessorControlParams *pp = &o->k->params.interaction_processorControl;
    if (!s) { /* op.c found it: never, but an op is always answered */
        live_op_refuse(o, IGW_ERR_CONFLICT, "the session ended", IGW_PATH_command_sessionId);
        return;
    }
    if (!runs(o, s, pp->processor, IGW_PATH_command_params_processor))
        return;
    processors *a = set_get(s);
    if (!a) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    snprintf(o->text, sizeof o->text, "%.*s", (int)pp->processorId.len, pp->processorId.ptr);
    if (pp->operation == IGW_ProcessorOperation_detach) {
        if (!find_proc(a, o->text)) {
            live_op_refuse(o, IGW_ERR_NOT_FOUND, "no such processor in this session",
                           IGW_PATH_command_params_processorId);
            return;
        }
        live_op_accept(o, detach_accepted);
        return;
    }
    if (s->state != IGW_SESSION_ESTABLISHED) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "the session is not established yet", IGW_PATH_command_sessionId);
        return;
    }
    if (find_proc(a, o->text)) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "a processor with this processorId is attached",
                       IGW_PATH_command_params_processorId);
        return;
    }
    unsigned used = 0;
    for (int i = 0; i < PROCS_MAX; i++)
        used += a->procs[i].used;
    if (used == PROCS_MAX) {
        live_op_refuse(o, IGW_ERR_CAPACITY, "the session runs its most processors already", "");
        return;
    }
    /* What it takes in: the application's voice, and (aiAssist) the
     * vision source's camera. */
    bool camera = false;
    igw_str voice = voice_id(s);
    static char path[64];
    for (uint32_t i = 0; i < pp->sourceTrackIds.n; i++) {
        igw_str t = pp->sourceTrackIds.v[i];
        snprintf(path, sizeof path, "%s/%u", IGW_PATH_command_params_sourceTrackIds, i);
        bool heard = t.len == voice.len && memcmp(t.ptr, voice.ptr, t.len) == 0;
        const igw_purpose_track *vt = live_track_find(s->def, s->guards, t);
        if (vt && vt->kind == IGW_TrackKind_video && s->def->vision && pp->processor == IGW_Processor_aiAssist) {
            camera = true;
        } else if (!heard) {
            char why[128];
            if (pp->processor == IGW_Processor_translation)
                snprintf(why, sizeof why, "translation hears the application's voice (%.*s) only", (int)voice.len,
                         voice.ptr);
            else
                snprintf(why, sizeof why, "not a track this processor may take (%.*s, the camera's video)",
                         (int)voice.len, voice.ptr);
            live_op_refuse(o, IGW_ERR_PARAMETER, why, path);
            return;
        }
    }
    if (pp->processor == IGW_Processor_aiAssist && !camera) {
        live_op_refuse(o, IGW_ERR_PARAMETER, "aiAssist looks through the camera: name its video track",
                       IGW_PATH_command_params_sourceTrackIds);
        return;
    }
    if (pp->processor == IGW_Processor_translation) {
        char target[40];
        snprintf(target, sizeof target, "%.*s", (int)pp->targetLanguage.len, pp->targetLanguage.ptr);
        if (!pair_supported(a->source_lang, target)) {
            live_op_refuse(o, IGW_ERR_PARAMETER, "unsupported language pair: supported is en to es",
                           IGW_PATH_command_params_targetLanguage);
            return;
        }
    }
    /* The consents, in the database (no processor is started before). */
    char ent[24], user[24], rev[16], ids[CONSENTS_MAX * (2 * LIVE_ID_MAX + 3) + 3], one[CONSENTS_MAX][LIVE_ID_MAX + 1];
    const char *list[CONSENTS_MAX];
    snprintf(ent, sizeof ent, "%" PRId64, o->enterprise_id);
    snprintf(user, sizeof user, "%" PRId64, o->user_id);
    snprintf(rev, sizeof rev, "%" PRIu32, s->revision);
    size_t n = pp->consentIds.n < CONSENTS_MAX ? pp->consentIds.n : CONSENTS_MAX;
    for (size_t i = 0; i < n; i++) {
        snprintf(one[i], sizeof one[i], "%.*s", (int)pp->consentIds.v[i].len, pp->consentIds.v[i].ptr);
        list[i] = one[i];
    }
    if (!igw_db_text_array(ids, sizeof ids, list, n)) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "the consent ids do not fit", "");
        return;
    }
    const char *v[CC__N] = {[CC_ENT] = ent, [CC_USER] = user, [CC_IDS] = ids, [CC_SID] = s->id,
                            [CC_CAM] = s->leg ? s->leg->camera_id : "", [CC_REV] = rev};
    if (igw_db_exec(o->e->db, &st_consents, v, NULL, NULL, on_attach_consents, o) != 0)
        live_op_refuse(o, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

/* ---- interaction.configure ------------------------------------------------------------- */

static void configure_accepted(live_op *o, live_session *s)
{
    igw_engine *e = o->e;
    processors *a = set_of(s);
    if (o->arg1 <= a->config_revision) { /* two accepted at once: the first one stands */
        result(e, s, o->token, IGW_CommandMethod_interaction_configure, IGW_ERR_CONFLICT,
               "configRevision must be greater than the current one", NULL, NULL, 0);
        return;
    }
    a->config_revision = o->arg1;
    char *nl = strchr(o->offer, '\n'); /* "source\ntarget", stashed by igw_processor_configure */
    snprintf(a->source_lang, sizeof a->source_lang, "%.*s", nl ? (int)(nl - o->offer) : 0, o->offer);
    snprintf(a->target_lang, sizeof a->target_lang, "%s", nl ? nl + 1 : "");
    for (int i = 0; i < PROCS_MAX; i++) {
        processor *p = &a->procs[i];
        if (p->used && p->kind == IGW_Processor_translation) {
            p->target[0] = '\0'; /* the new direction; the old one's queued speech is its own to drop */
            if (p->ready)
                configure_proc(e, s, p);
        }
    }
    result(e, s, o->token, IGW_CommandMethod_interaction_configure, IGW_ERR_OK, NULL, "configured", NULL,
           a->config_revision);
}

void igw_processor_configure(live_op *o)
{
    live_session *s = live_session_find(o->e, o->sid);
    const igw_ConfigureParams *cp = &o->k->params.interaction_configure;
    if (!s) {
        live_op_refuse(o, IGW_ERR_CONFLICT, "the session ended", IGW_PATH_command_sessionId);
        return;
    }
    if (!runs(o, s, IGW_Processor_translation, IGW_PATH_command_sessionId))
        return;
    processors *a = set_get(s);
    if (!a) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    if (cp->configRevision <= a->config_revision) {
        char why[96];
        snprintf(why, sizeof why, "configRevision must be greater than %" PRId64, a->config_revision);
        live_op_refuse(o, IGW_ERR_CONFLICT, why, IGW_PATH_command_params_configRevision);
        return;
    }
    char source[40], target[40];
    snprintf(source, sizeof source, "%.*s", (int)cp->sourceLanguage.len, cp->sourceLanguage.ptr);
    snprintf(target, sizeof target, "%.*s", (int)cp->targetLanguage.len, cp->targetLanguage.ptr);
    if (!pair_supported(source, target)) {
        live_op_refuse(o, IGW_ERR_PARAMETER, "unsupported language pair: supported is en to es",
                       IGW_PATH_command_params_targetLanguage);
        return;
    }
    /* Kept past the answer (the command is not): the revision, the pair. */
    o->arg1 = cp->configRevision;
    size_t n = strlen(source) + strlen(target) + 2;
    if (!(o->offer = malloc(n))) {
        live_op_refuse(o, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    snprintf(o->offer, n, "%s\n%s", source, target);
    live_op_accept(o, configure_accepted);
}

/* ---- the session's life ------------------------------------------------------------------ */

/* The consent is gone: every processor stops looking at once (no ticket
 * stands, its eyes paused: a take in flight is cancelled), and is told to
 * drop what it kept. */
static void set_vision_lost(igw_engine *e, live_session *s)
{
    processors *a = set_of(s);
    for (int i = 0; a && i < PROCS_MAX; i++) {
        processor *p = &a->procs[i];
        if (!p->used || p->kind != IGW_Processor_aiAssist)
            continue;
        char err[160];
        if (p->eyes[0])
            (void)igw_media_viewer_track(e->media, p->eyes, 1, IGW_MEDIA_VIDEO, IGW_TRACK_ON_PAUSE, NULL, err,
                                         sizeof err); /* paused already between takes: a conflict is fine */
        p->taking = false;
        p->ticket[0] = '\0';
        send_simple(e, p, "revoked", NULL, NULL);
    }
}

/* The session ends: every processor released, the set freed. */
static void set_end(igw_engine *e, live_session *s)
{
    processors *a = set_of(s);
    for (int i = 0; a && i < PROCS_MAX; i++)
        if (a->procs[i].used)
            release(e, s, &a->procs[i]);
    s->processors = NULL;
    free(a);
}

void live_processor_tick(igw_engine *e, int64_t now_ms)
{
    for (live_session *s = e->sessions; s; s = s->next) {
        processors *a = set_of(s);
        for (int i = 0; a && i < PROCS_MAX; i++) {
            processor *p = &a->procs[i];
            if (p->used && !p->ready && now_ms >= p->ready_deadline_ms)
                proc_gone(p, NULL, "it did not get ready in time");
            else if (p->used && p->ready && !p->proc)
                proc_gone(p, NULL, "it stalled");
        }
    }
}
