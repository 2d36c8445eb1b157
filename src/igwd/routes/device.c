/* device.c - the device routes (area A): send and upload-file.
 *
 * Rules (route, parameters, headers, body) are in schema/device.igw and were
 * applied by the strict stage; the method table is the schema's `protocol
 * device`. What is left here: the credentials, the gateway header rule, and
 * handing the message to the edge (edge.c), which MQTT uplinks share. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "api.h"
#include "base64.h"
#include "routes/context.h"
#include "routes/decide.h"
#include "devauth.h"
#include "filename.h"
#include "routes/routes.h"
#include "routes/upload.h"
#include "core/log.h"
#include "http/http.h"
#include "signedurl.h"
#include "storage.h"

/* Authorization: Basic base64(username:password), the device's MQTT pair.
 * Missing or malformed: unauthenticated, without saying which part. */
static int basic_credentials(igw_exchange *ex, char *user, size_t ucap, char *pass, size_t pcap)
{
    igw_str h = igw_http_header_value(ex, "authorization");
    if (!h.ptr || igw_devauth_parse_basic(h.ptr, h.len, user, ucap, pass, pcap) != IGW_DEVAUTH_OK) {
        igw_http_reply_error(ex, IGW_ERR_UNAUTHENTICATED, "invalid device credentials", "");
        return -1;
    }
    return 0;
}

/* The two device routes read the pair from the same slots. */
_Static_assert((int)IGW_DEVICE_SEND_H_productID == (int)IGW_DEVICE_UPLOAD_H_productID &&
                   (int)IGW_DEVICE_SEND_H_deviceName == (int)IGW_DEVICE_UPLOAD_H_deviceName,
               "send and upload-file keep productID and deviceName in the same header slots");

/* productID and deviceName headers name a sub-device (together or
 * neither: the schema's header rules, applied by the strict stage). */
static void target_headers(const igw_request *req, igw_str *pid, igw_str *dn)
{
    *pid = req->headers[IGW_DEVICE_SEND_H_productID];
    *dn = req->headers[IGW_DEVICE_SEND_H_deviceName];
}

static void on_send_done(void *arg, const igw_edge_result *r)
{
    igw_exchange *ex = arg;
    igw_routes_error e;
    if (igw_routes_uplink_error(r, true, &e))
        igw_http_reply_error(ex, e.cls, e.reason, e.path);
    else
        igw_http_reply_ok(ex, r->reply, r->reply_len);
}

/* The send route, or (dry_run) the bench's reference: the same work and
 * reply without the database write. */
static void send_uplink(igw_exchange *ex, const igw_request *req, igw_str handle, igw_str type, bool dry_run)
{
    igw_worker *w = igw_http_state(ex);
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    igw_uplink up = {.handle = handle, .type = type, .dry_run = dry_run};
    if (basic_credentials(ex, user, sizeof user, pass, sizeof pass))
        return;
    if (req)
        target_headers(req, &up.product_id, &up.device_name);
    if (!w || !w->edge) {
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "no database configured", "");
        return;
    }
    up.username = (igw_str){user, strlen(user)};
    up.password = (igw_str){pass, strlen(pass)};
    up.payload = igw_http_body(ex);
    up.log_id = igw_http_request_id(ex);
    igw_exchange *held = igw_http_hold(ex);
    if (!held) {
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    igw_edge_submit(w->edge, &up, on_send_done, held); /* copies what it keeps */
}

void igw_route_device_send(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    (void)who;
    send_uplink(ex, req, req->params[IGW_DEVICE_SEND_P_handle], req->params[IGW_DEVICE_SEND_P_type], false);
}

void igw_route_bench_bare(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    (void)req;
    (void)who;
    send_uplink(ex, NULL, (igw_str){"thing", 5}, (igw_str){"property", 8}, true);
}

/* ---- upload-file ---------------------------------------------------------------
 * The body streamed into the file (upload.h), then its metadata row
 * committed before the reply. */

typedef struct upload {
    igw_exchange *ex;
    igw_worker *w;
    char pid[IGW_DEVAUTH_NAME_MAX + 1], dn[IGW_DEVAUTH_NAME_MAX + 1];
    igw_upload file;
} upload;

static void upload_free(upload *u, bool remove_file)
{
    igw_upload_release(&u->file, remove_file);
    free(u);
}

/* Parameters by name: FILE_P_X is $(X + 1). */
enum { FILE_P_PATH, FILE_P_PID, FILE_P_DN, FILE_P_SIZE, FILE_P_SHA256, FILE_NP };
static const igw_db_stmt stmt_file = {
    "igw_upload_file",
    "INSERT INTO files (file_path, product_id, device_name, size_bytes, sha256) "
    "VALUES ($1, $2, $3, $4::bigint, decode($5, 'hex'))",
    FILE_NP};

static void on_file_row(void *arg, const PGresult *res, const char *err)
{
    upload *u = arg;
    if (!res) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(u->ex), "upload: metadata insert failed: %s", err);
        igw_http_reply_error(u->ex, IGW_ERR_INTERNAL, "cannot store the file", "");
        /* A server-reported error (SQLSTATE first) rolled the row back; a
         * lost connection may have committed it: keep the file then. */
        upload_free(u, !igw_db_outcome_unknown(err));
        return;
    }
    const igw_app *app = u->w->app;
    char uri[IGW_CONFIG_PATH_MAX + IGW_SIGNEDURL_MAX + 1];
    size_t base = strlen(app->cfg.public_url);
    memcpy(uri, app->cfg.public_url, base);
    long n = igw_signedurl_make(app->url_key, sizeof app->url_key, u->file.relpath, strlen(u->file.relpath),
                                (int64_t)time(NULL) + app->cfg.url_ttl_s, uri + base, sizeof uri - base);
    if (n < 0) {
        igw_http_reply_error(u->ex, IGW_ERR_INTERNAL, "cannot sign the file URL", "");
        upload_free(u, false); /* stored and recorded: keep it */
        return;
    }
    igw_UploadResult r = {.filePath = {u->file.relpath, strlen(u->file.relpath)}, .fileUri = {uri, base + (size_t)n}};
    igw_encode_UploadResult(igw_http_data(u->ex), &r);
    igw_http_reply_data(u->ex);
    upload_free(u, false);
}

/* The device is known: parse, store, record. */
static void on_upload_authorized(void *arg, const igw_edge_result *r)
{
    upload *u = arg;
    igw_routes_error e;
    if (igw_routes_uplink_error(r, false, &e) || igw_http_cancelled(u->ex)) {
        igw_http_reply_error(u->ex, e.cls, e.reason, e.path);
        upload_free(u, false);
        return;
    }
    snprintf(u->pid, sizeof u->pid, "%s", r->product_id);
    snprintf(u->dn, sizeof u->dn, "%s", r->device_name);
    igw_storage_edge dirs;
    if (igw_storage_edge_dirs(&dirs, u->pid, u->dn, time(NULL))) {
        igw_http_reply_error(u->ex, IGW_ERR_INTERNAL, "cannot store the file", "");
        upload_free(u, false);
        return;
    }
    for (size_t i = 0; i < 5; i++)
        u->file.dirs[i] = dirs.dirs[i];
    u->file.ndirs = 5;
    int stored = igw_upload_store(&u->file);
    u->file.ndirs = 0; /* they point into `dirs`, gone on return */
    if (stored) {
        igw_http_reply_error(u->ex, u->file.err.cls, u->file.err.reason, u->file.err.path);
        upload_free(u, true);
        return;
    }
    char size[24];
    snprintf(size, sizeof size, "%llu", (unsigned long long)u->file.size);
    const char *values[FILE_NP] = {[FILE_P_PATH] = u->file.relpath, [FILE_P_PID] = u->pid, [FILE_P_DN] = u->dn,
                                   [FILE_P_SIZE] = size, [FILE_P_SHA256] = u->file.sha256_hex};
    if (igw_db_exec(u->w->db[0], &stmt_file, values, NULL, NULL, on_file_row, u)) {
        igw_http_reply_error(u->ex, IGW_ERR_UNAVAILABLE, "busy, retry later", "");
        upload_free(u, true);
    }
}

void igw_route_device_upload(igw_exchange *ex, const igw_request *req, const igw_principal *who)
{
    (void)who;
    igw_worker *w = igw_http_state(ex);
    char user[IGW_DEVAUTH_USER_MAX + 1], pass[IGW_DEVAUTH_PASS_MAX + 1];
    igw_uplink up = {0};
    if (basic_credentials(ex, user, sizeof user, pass, sizeof pass))
        return;
    target_headers(req, &up.product_id, &up.device_name);
    if (!w || !w->edge || w->app->storage_fd < 0) {
        igw_http_reply_error(ex, IGW_ERR_UNAVAILABLE, "uploads are not configured", "");
        return;
    }
    up.username = (igw_str){user, strlen(user)};
    up.password = (igw_str){pass, strlen(pass)};
    up.log_id = igw_http_request_id(ex);
    upload *u = calloc(1, sizeof *u);
    igw_exchange *held = u ? igw_http_hold(ex) : NULL;
    if (!held) {
        free(u);
        igw_http_reply_error(ex, IGW_ERR_INTERNAL, "out of memory", "");
        return;
    }
    u->ex = held;
    u->w = w;
    igw_upload_init(&u->file, held, w->app->storage_fd, w->app->cfg.upload_max);
    igw_edge_authorize(w->edge, &up, on_upload_authorized, u);
}
