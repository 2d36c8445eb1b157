/* command.c - see command.h: the walk of one command through the method
 * table, the ledger and, for a device command, the model and the downlink. */
#include "command/command.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base64.h"
#include "clock.h"
#include "command/device.h"
#include "command/ledger.h"
#include "command/method.h"
#include "core/log.h"
#include "paths.h"

#define CMD_WRITE_RETRIES 3 /* a twin committed elsewhere, not yet visible: ask again */
#define CMD_STALE_RETRIES 3 /* the model changed under the command: check it again */
#define CMD_REREADS 2       /* the cached model went away between the read and its answer */

typedef struct cmd {
    igw_command_env env;
    const igw_CommandsRequest *rq;
    const igw_CommandMethod_method *m; /* the method's entry in the schema's table */
    int64_t enterprise_id, user_id;
    igw_command_done done;
    void *arg;
    char rid[24];         /* the request id, for logs */
    igw_ledger_fp fp;
    char *canon;          /* canonical command, NUL-terminated */
    char *msg_token;      /* the command's, NUL-terminated */
    char *session;        /* its sessionId, or NULL */
    char method[IGW_CommandMethod_NAME_MAX + 1]; /* its wire name, as the ledger stores it */
    char ent[24], user[24], now[24];
    char endpoint[IGW_EndpointId_MAX + 1];
    char pid[IGW_Ident_MAX + 1], dn[IGW_Ident_MAX + 1]; /* its Target */
    char token[40]; /* the downlink's msgToken */
    int64_t deadline_ms;
    char deadline[24]; /* the same, as the write's parameter */
    char *downlink;    /* the MQTT payload */
    size_t downlink_len;
    /* A message's row (the handler's: method.h), NUL-terminated; dlv[0] '\0': none. */
    char dlv[IGW_DeliveryId_MAX + 1], file[IGW_Ident_MAX + 1], expires[24];
    unsigned retries, stale, rereads;
    char known[IGW_LEDGER_VERSION_MAX + 1]; /* the cached version sent with the read; "" none */
    char ver[IGW_LEDGER_VERSION_MAX + 1];   /* the version the write expects */
    igw_arena arena; /* check reasons (and a model that could not be cached) */
} cmd;

_Static_assert(IGW_LEDGER_VERSION_MAX == IGW_MODELCACHE_VERSION_MAX, "one version bound");

static void cmd_free(cmd *c)
{
    free(c->canon);
    free(c->msg_token);
    free(c->session);
    free(c->downlink);
    igw_arena_free(&c->arena);
    free(c);
}

/* The answer, then the command's state is gone. */
static void finish(cmd *c, int cls, const char *reason, const char *path)
{
    igw_command_result r = {.cls = cls, .reason = reason, .path = path};
    c->done(c->arg, &r);
    cmd_free(c);
}

static void accepted(cmd *c, bool replay)
{
    igw_command_result r = {.cls = IGW_ERR_OK, .replay = replay, .msg_token = c->rq->command.msgToken};
    c->done(c->arg, &r);
    cmd_free(c);
}

static bool has_target(const cmd *c)
{
    return c->rq->command.has & IGW_Command_target;
}

/* The command as the ledger sees it. */
static void ledger_cmd(const cmd *c, igw_ledger_cmd *lc)
{
    bool target = has_target(c);
    *lc = (igw_ledger_cmd){.enterprise_id = c->enterprise_id, .user_id = c->user_id, .enterprise = c->ent,
                           .user = c->user, .endpoint = c->endpoint, .msg_token = c->msg_token,
                           .method = c->method, .session_id = c->session, .fp = &c->fp, .canon = c->canon,
                           .product_id = target ? c->pid : NULL, .device_name = target ? c->dn : NULL,
                           .device_token = c->token, .deadline = c->deadline, .now = c->now,
                           .known = c->known[0] ? c->known : NULL, .version = c->ver,
                           .delivery_id = c->dlv[0] ? c->dlv : NULL, .file_id = c->dlv[0] ? c->file : NULL,
                           .expires_at = c->dlv[0] ? c->expires : NULL,
                           .kept_downlink = c->dlv[0] ? c->downlink : NULL};
}

static void on_replayed(void *arg, const char *err, bool window_passed)
{
    cmd *c = arg;
    if (window_passed) { /* replay rule 1: a door-bell decision's retry after its window */
        finish(c, IGW_ERR_EXPIRED, "the retry came after the retention window (doorbell_retention_ms): nothing redelivered",
               IGW_PATH_command_msgToken);
        return;
    }
    if (err)
        igw_log(IGW_LOG_WARN, c->rid, "commands: replay: %s", err);
    /* The answer is the acceptance only; the result comes as an event (the
     * same delivery, a new one after an ack, or none once expired). */
    accepted(c, true);
}

/* The same key again (a stored fingerprint): a replay or a conflict. The
 * command is answered, now or by the replay. */
static void again(cmd *c, const char *stored_fp)
{
    igw_ledger_cmd lc;
    ledger_cmd(c, &lc);
    if (c->m && (c->m->traits & IGW_METHOD_RETAINED))
        lc.window_ms = c->env.retention_ms;
    int rc = igw_ledger_repeat(c->env.db, &lc, stored_fp, on_replayed, c);
    if (rc == IGW_LEDGER_REPLAY)
        return;
    if (rc == IGW_LEDGER_CONFLICT)
        finish(c, IGW_ERR_CONFLICT, "this msgToken was used for a different command", IGW_PATH_command_msgToken);
    else if (rc == -2)
        finish(c, IGW_ERR_INTERNAL, "out of memory", "");
    else
        finish(c, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
}

static int submit_write(cmd *c);
static int submit_read(cmd *c);
static void session_first(cmd *c);

/* The command takes the slow path (again): 0, or -1 with the answer given. */
static int slow_path(cmd *c)
{
    const char *v = NULL;
    c->known[0] = '\0';
    if (has_target(c) && igw_modelcache_get(c->env.models, c->pid, &v))
        snprintf(c->known, sizeof c->known, "%s", v);
    if (submit_read(c) == 0)
        return 0;
    finish(c, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    return -1;
}

static void publish(cmd *c)
{
    igw_device_accepted a = {.product_id = c->pid, .device_name = c->dn, .device_token = c->token,
                             .endpoint_id = c->endpoint, .msg_token = c->msg_token, .method = c->method,
                             .enterprise_id = c->ent, .deadline_ms = c->deadline_ms, .down = c->m->downlink,
                             .payload = c->downlink, .len = c->downlink_len};
    /* Not published (broker away): the deadline turns it into a failure
     * result. A message waits for days, not seconds: its reply is looked
     * up instead of filling the map of pending commands. */
    if (igw_device_publish(c->dlv[0] ? NULL : c->env.pending, atomic_load(c->env.mqtt), &a) != 0)
        igw_log(IGW_LOG_WARN, c->rid, "commands: downlink not published (broker unreachable)");
}

static void on_write(void *arg, const igw_ledger_write_row *r)
{
    cmd *c = arg;
    if (r->status != IGW_LEDGER_ANSWERED) {
        igw_log(IGW_LOG_ERROR, c->rid, "commands: acceptance failed: %s", r->err);
        if (r->status == IGW_LEDGER_NOT_SENT)
            finish(c, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        else if (r->status == IGW_LEDGER_UNKNOWN)
            finish(c, IGW_ERR_UNKNOWN_OUTCOME, "outcome unknown; retry with the same msgToken", "");
        else
            finish(c, IGW_ERR_INTERNAL, "the command could not be recorded", "");
    } else if (!r->endpoint_live) { /* expired since the read (or unknown: fast path) */
        finish(c, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", IGW_PATH_endpointId);
    } else if (r->prior_fp) {
        again(c, r->prior_fp); /* a twin came first */
    } else if (!r->rights) { /* revoked since the read (or none: fast path) */
        finish(c, IGW_ERR_PERMISSION, "no rights on the target device", IGW_PATH_command_target);
    } else if (!r->content_ok) { /* another user's, another tenant's, or none: all the same */
        finish(c, IGW_ERR_PERMISSION, "contentRef names no upload of yours", IGW_PATH_command_params_contentRef);
    } else if (r->key_taken) {
        finish(c, IGW_ERR_CONFLICT, "this deliveryId was used by another of your commands",
               IGW_PATH_command_params_deliveryId);
    } else if (!r->within_endpoint) { /* the message's result could reach nobody */
        finish(c, IGW_ERR_PARAMETER, "expiresAt is after this endpoint expires: send it from a newer endpoint",
               IGW_PATH_command_params_expiresAt);
    } else if (!r->model_current) { /* the model changed since it was checked */
        if (c->stale++ < CMD_STALE_RETRIES)
            (void)slow_path(c);
        else
            finish(c, IGW_ERR_UNAVAILABLE, "try again later", "");
    } else if (r->accepted) {
        publish(c);
        accepted(c, false);
    } else if (c->retries++ < CMD_WRITE_RETRIES) { /* a twin elsewhere won, not visible yet */
        if (submit_write(c) != 0)
            finish(c, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    } else {
        finish(c, IGW_ERR_UNAVAILABLE, "try again later", "");
    }
}

static int submit_write(cmd *c)
{
    igw_ledger_cmd lc;
    ledger_cmd(c, &lc);
    return igw_ledger_write(c->env.db, &lc, on_write, c);
}

/* The method's handler on `model` for a first acceptance, and the downlink
 * it says: 0; -1, refused (*e says why); -2, out of memory. Nothing is
 * answered here: the fast path drops a refusal. */
static int check_and_build(cmd *c, const igw_thingmodel *model, igw_json *e)
{
    free(c->downlink); /* from an earlier check whose model went stale */
    c->downlink = NULL;
    igw_json_init(e, "", 0, NULL, 1);
    int64_t now = igw_wall_ms();
    igw_command_call call = {.command = &c->rq->command,
                             .model = model,
                             .arena = &c->arena,
                             .err = e,
                             .down = c->m->downlink,
                             .device_token = {c->token, strlen(c->token)},
                             .now_ms = now,
                             .site = c->env.site};
    int rc = c->m->fn(&call);
    if (rc)
        return rc == -2 ? -2 : -1;
    if (!call.message || igw_device_downlink(&call, &c->downlink, &c->downlink_len))
        return -2;
    c->dlv[0] = '\0';
    if (call.delivery_id.len) {
        snprintf(c->dlv, sizeof c->dlv, "%.*s", (int)call.delivery_id.len, call.delivery_id.ptr);
        snprintf(c->file, sizeof c->file, "%.*s", (int)call.file_id.len, call.file_id.ptr);
        snprintf(c->expires, sizeof c->expires, "%lld", (long long)call.expires_at_ms);
    }
    c->deadline_ms = call.deadline_ms ? call.deadline_ms : now + (int64_t)c->env.timeout_ms;
    snprintf(c->deadline, sizeof c->deadline, "%lld", (long long)c->deadline_ms);
    return 0;
}

/* A device command's first acceptance after the read: its model, the
 * handler's check, the write. */
static void device_first(cmd *c, const igw_ledger_read_row *r)
{
    bool reread;
    igw_json e;
    igw_arena_reset(&c->arena);
    snprintf(c->ver, sizeof c->ver, "%s", r->model_version); /* far shorter than c->ver */
    const igw_thingmodel *model =
        igw_device_model(c->env.models, c->pid, r->model_version, r->model, r->model_len, &c->arena, &reread);
    if (reread) {
        c->known[0] = '\0';
        if (c->rereads++ < CMD_REREADS && submit_read(c) == 0)
            return;
        finish(c, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    if (!model) {
        finish(c, IGW_ERR_INTERNAL, "the product's thing model is not usable", "");
        return;
    }
    int rc = check_and_build(c, model, &e);
    if (rc == -1) {
        finish(c, IGW_ERR_PARAMETER, e.reason, e.path);
    } else if (rc) {
        finish(c, IGW_ERR_INTERNAL, "out of memory", "");
    } else {
        snprintf(c->now, sizeof c->now, "%lld", (long long)igw_wall_ms());
        if (submit_write(c) != 0)
            finish(c, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
    }
}

static void on_read(void *arg, const igw_ledger_read_row *r)
{
    cmd *c = arg;
    if (!r->ok) {
        igw_log(IGW_LOG_ERROR, c->rid, "commands: lookup failed: %s", r->err);
        finish(c, IGW_ERR_UNAVAILABLE, "try again later", "");
    } else if (!r->endpoint_live) {
        /* Unknown, expired, or another user's or enterprise's: all the same. */
        finish(c, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", IGW_PATH_endpointId);
    } else if (!c->m->fn && !(c->m->traits & IGW_METHOD_SESSION)) {
        /* No handler in the schema's table. */
        finish(c, IGW_ERR_NOT_IMPLEMENTED, "this command method is not implemented yet", IGW_PATH_command_method);
    } else if (r->prior_fp && !((c->m->traits & IGW_METHOD_RECEIPT) && strcmp(r->prior_fp, c->fp.hex) == 0)) {
        again(c, r->prior_fp);
    } else if (c->m->traits & IGW_METHOD_SESSION) {
        /* (a `receipt` method's replay too: the engine answers it) */
        session_first(c); /* the engine checks rights and the session itself */
    } else if (!r->rights) {
        /* The caller's rights on the target: its true owner or a grant,
         * within the caller's enterprise; an unknown device looks the same
         * (no existence leak). */
        finish(c, IGW_ERR_PERMISSION, "no rights on the target device", IGW_PATH_command_target);
    } else {
        device_first(c, r);
    }
}

/* The engine's answer to a session command, on this worker. */
static void on_engine(void *arg, const igw_engine_cmd_answer *a)
{
    cmd *c = arg;
    if (a->prior_fp)
        again(c, a->prior_fp); /* a twin accepted first */
    else if (a->cls == IGW_ERR_OK)
        accepted(c, false);
    else
        finish(c, a->cls, a->reason, a->path);
}

/* A session command: the engine that owns sessions carries it out on its
 * loop, by the method's session handler in the schema's table. */
static void session_first(cmd *c)
{
    igw_engine *en = c->env.engine ? *c->env.engine : NULL;
    igw_engine_cmd ec = {.command = &c->rq->command, .enterprise_id = c->enterprise_id, .user_id = c->user_id,
                         .endpoint_id = c->endpoint, .msg_token = c->msg_token, .method = c->method,
                         .fingerprint_hex = c->fp.hex, .canon = c->canon, .request_id = c->rid};
    if (!en || !c->env.back.post || igw_engine_command_submit(en, &ec, &c->env.back, on_engine, c) != 0)
        finish(c, IGW_ERR_UNAVAILABLE, "sessions are not available on this node now", "");
}

static int submit_read(cmd *c)
{
    igw_ledger_cmd lc;
    ledger_cmd(c, &lc);
    return igw_ledger_read(c->env.db, &lc, on_read, c);
}

void igw_command_submit(const igw_command_env *env, const igw_command_in *in, igw_command_done done, void *arg)
{
    const igw_CommandsRequest *rq = in->rq;
    const igw_Command *k = &rq->command;
    cmd *c = calloc(1, sizeof *c);
    unsigned char raw[18];
    if (!c || getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw ||
        igw_b64_encode(IGW_B64_URL, raw, sizeof raw, c->token, sizeof c->token) < 0 ||
        igw_ledger_fingerprint(k, &c->canon, &c->fp) != 0 ||
        !(c->msg_token = strndup(k->msgToken.ptr, k->msgToken.len)) ||
        (k->has & IGW_Command_sessionId && !(c->session = strndup(k->sessionId.ptr, k->sessionId.len)))) {
        if (c) {
            free(c->canon);
            free(c->msg_token);
        }
        free(c);
        igw_command_result r = {.cls = IGW_ERR_INTERNAL, .reason = "out of memory", .path = ""};
        done(arg, &r);
        return;
    }
    c->env = *env;
    c->rq = rq;
    c->m = &igw_CommandMethod_methods[k->method];
    c->enterprise_id = in->enterprise_id;
    c->user_id = in->user_id;
    c->done = done;
    c->arg = arg;
    snprintf(c->rid, sizeof c->rid, "%s", in->request_id);
    igw_arena_init(&c->arena, 4u << 20);
    const igw_str *me = &igw_CommandMethod_names[k->method];
    snprintf(c->method, sizeof c->method, "%.*s", (int)me->len, me->ptr);
    snprintf(c->ent, sizeof c->ent, "%lld", (long long)in->enterprise_id);
    snprintf(c->user, sizeof c->user, "%lld", (long long)in->user_id);
    snprintf(c->endpoint, sizeof c->endpoint, "%.*s", (int)rq->endpointId.len, rq->endpointId.ptr);
    bool target = has_target(c);
    if (target) {
        snprintf(c->pid, sizeof c->pid, "%.*s", (int)k->target.productID.len, k->target.productID.ptr);
        snprintf(c->dn, sizeof c->dn, "%.*s", (int)k->target.deviceName.len, k->target.deviceName.ptr);
    }
    snprintf(c->now, sizeof c->now, "%lld", (long long)igw_wall_ms());
    /* Fast path: a device command the cached model accepts; the write alone
     * confirms the model's version with everything else (command.h). */
    const char *v = NULL;
    const igw_thingmodel *model;
    igw_json e;
    if (target && c->m->fn && c->m->traits & IGW_METHOD_DEVICE &&
        (model = igw_modelcache_get(env->models, c->pid, &v)) && check_and_build(c, model, &e) == 0) {
        snprintf(c->ver, sizeof c->ver, "%s", v);
        if (submit_write(c) != 0)
            finish(c, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        return;
    }
    /* A method whose engine reads the endpoint, an earlier acceptance and
     * the rights itself (`reads`) needs no read here. */
    if ((c->m->traits & (IGW_METHOD_SESSION | IGW_METHOD_READS)) == (IGW_METHOD_SESSION | IGW_METHOD_READS)) {
        session_first(c);
        return;
    }
    (void)slow_path(c);
}
