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
#include "core/log.h"
#include "http/http.h"
#include "multipart.h"
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
 * h2o 2.2.5 hands over the body once it is complete (bounded by the route's
 * cap); the multipart parser then streams it, in slices, straight into the
 * file: no second copy of the content. The file is fsync'ed and its
 * metadata row committed before the reply. */

#define UPLOAD_SLICE 65536

typedef struct upload {
    igw_exchange *ex;
    igw_worker *w;
    char pid[IGW_DEVAUTH_NAME_MAX + 1], dn[IGW_DEVAUTH_NAME_MAX + 1];
    int fd;
    bool in_file, have_file;
    uint64_t size;
    EVP_MD_CTX *sha;
    char relpath[IGW_STORAGE_PATH_MAX + 1];
    int cls;            /* the first failure, IGW_ERR_OK while none */
    const char *reason;
    const char *path;
} upload;

static int up_fail(upload *u, int cls, const char *reason, const char *path)
{
    if (u->cls == IGW_ERR_OK) {
        u->cls = cls;
        u->reason = reason;
        u->path = path;
    }
    return -1;
}

static int up_part_begin(void *ctx, const igw_multipart_part *p)
{
    upload *u = ctx;
    igw_routes_error e;
    igw_routes_part part = igw_routes_upload_part(p, u->have_file, &e);
    if (part == IGW_ROUTES_PART_SKIP)
        return 0;
    u->have_file = true;
    if (part == IGW_ROUTES_PART_REFUSED)
        return up_fail(u, e.cls, e.reason, e.path);
    igw_storage_edge dirs;
    if (igw_storage_edge_dirs(&dirs, u->pid, u->dn, time(NULL)) ||
        igw_storage_open(u->w->app->storage_fd, dirs.dirs, 5, p->filename, &u->fd, u->relpath,
                         sizeof u->relpath)) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(u->ex), "upload: cannot create the file: %s", strerror(errno));
        return up_fail(u, IGW_ERR_INTERNAL, "cannot store the file", "");
    }
    u->in_file = true;
    if (!(u->sha = EVP_MD_CTX_new()) || EVP_DigestInit_ex(u->sha, EVP_sha256(), NULL) != 1)
        return up_fail(u, IGW_ERR_INTERNAL, "out of memory", "");
    return 0;
}

static int up_part_data(void *ctx, const char *data, size_t len)
{
    upload *u = ctx;
    if (!u->in_file)
        return 0;
    u->size += len;
    igw_routes_error e;
    if (igw_routes_upload_too_large(u->size, u->w->app->cfg.upload_max, &e))
        return up_fail(u, e.cls, e.reason, e.path);
    if (EVP_DigestUpdate(u->sha, data, len) != 1)
        return up_fail(u, IGW_ERR_INTERNAL, "digest failed", "");
    while (len) {
        ssize_t n = write(u->fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            igw_log(IGW_LOG_ERROR, igw_http_request_id(u->ex), "upload: write: %s", strerror(errno));
            return up_fail(u, IGW_ERR_INTERNAL, "cannot store the file", "");
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int up_part_end(void *ctx)
{
    upload *u = ctx;
    if (!u->in_file)
        return 0;
    u->in_file = false;
    /* Durable before the reply: the content, then the new directory entries. */
    if (fsync(u->fd) != 0 || igw_storage_sync_dirs(u->w->app->storage_fd, u->relpath) != 0) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(u->ex), "upload: fsync: %s", strerror(errno));
        return up_fail(u, IGW_ERR_INTERNAL, "cannot store the file", "");
    }
    return 0;
}

static int up_done(void *ctx)
{
    (void)ctx;
    return 0;
}

static const igw_multipart_callbacks up_callbacks = {up_part_begin, up_part_data, up_part_end, up_done};

static void upload_free(upload *u, bool remove_file)
{
    if (u->fd >= 0)
        close(u->fd);
    if (remove_file && u->relpath[0] && igw_storage_remove(u->w->app->storage_fd, u->relpath) != 0)
        igw_log(IGW_LOG_WARN, NULL, "upload: cannot remove %s: %s", u->relpath, strerror(errno));
    EVP_MD_CTX_free(u->sha);
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
    long n = igw_signedurl_make(app->url_key, sizeof app->url_key, u->relpath, strlen(u->relpath),
                                (int64_t)time(NULL) + app->cfg.url_ttl_s, uri + base, sizeof uri - base);
    if (n < 0) {
        igw_http_reply_error(u->ex, IGW_ERR_INTERNAL, "cannot sign the file URL", "");
        upload_free(u, false); /* stored and recorded: keep it */
        return;
    }
    igw_UploadResult r = {.filePath = {u->relpath, strlen(u->relpath)}, .fileUri = {uri, base + (size_t)n}};
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
    igw_str ct = igw_http_header_value(u->ex, "content-type");
    char boundary[IGW_MULTIPART_BOUNDARY_MAX + 1];
    const char *why = NULL;
    igw_multipart mp;
    int blen = igw_multipart_boundary(ct.ptr, ct.len, boundary, sizeof boundary, &why);
    if (blen < 0 || igw_multipart_init(&mp, boundary, (size_t)blen, &up_callbacks, u)) {
        igw_http_reply_error(u->ex, IGW_ERR_MEDIA_TYPE, why ? why : "invalid multipart boundary", "");
        upload_free(u, false);
        return;
    }
    igw_str body = igw_http_body(u->ex);
    int rc = 0;
    for (size_t off = 0; rc == 0 && off < body.len; off += UPLOAD_SLICE) {
        size_t n = body.len - off < UPLOAD_SLICE ? body.len - off : UPLOAD_SLICE;
        rc = igw_multipart_feed(&mp, body.ptr + off, n);
    }
    if (rc == 0)
        rc = igw_multipart_finish(&mp);
    if (igw_routes_upload_end_error(rc, u->have_file, igw_multipart_error(&mp), &e))
        up_fail(u, e.cls, e.reason, e.path); /* a callback's refusal, if any, stays first */
    if (u->cls != IGW_ERR_OK) {
        igw_http_reply_error(u->ex, u->cls, u->reason, u->path);
        upload_free(u, true);
        return;
    }
    unsigned char md[32];
    unsigned mdlen = 0;
    char hex[65], size[24];
    if (EVP_DigestFinal_ex(u->sha, md, &mdlen) != 1 || mdlen != 32) {
        igw_http_reply_error(u->ex, IGW_ERR_INTERNAL, "digest failed", "");
        upload_free(u, true);
        return;
    }
    igw_hex_encode(md, 32, hex);
    snprintf(size, sizeof size, "%llu", (unsigned long long)u->size);
    const char *values[FILE_NP] = {[FILE_P_PATH] = u->relpath, [FILE_P_PID] = u->pid, [FILE_P_DN] = u->dn,
                                   [FILE_P_SIZE] = size, [FILE_P_SHA256] = hex};
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
    u->fd = -1;
    u->cls = IGW_ERR_OK;
    igw_edge_authorize(w->edge, &up, on_upload_authorized, u);
}
