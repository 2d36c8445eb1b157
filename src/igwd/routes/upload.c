/* upload.c - see upload.h. h2o 2.2.5 hands over the body once it is
 * complete (bounded by the route's cap); the multipart parser then streams
 * it, in slices, straight into the file. */
#include "routes/upload.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "api.h"
#include "base64.h"
#include "core/log.h"
#include "multipart.h"

#define UPLOAD_SLICE 65536

void igw_upload_init(igw_upload *u, igw_exchange *ex, int storage_fd, uint64_t max)
{
    *u = (igw_upload){.ex = ex, .storage_fd = storage_fd, .max = max, .fd = -1, .audio_type = -1};
    u->err.cls = IGW_ERR_OK;
}

static int fail(igw_upload *u, int cls, const char *reason, const char *path)
{
    if (u->err.cls == IGW_ERR_OK) {
        u->err.cls = cls;
        u->err.reason = reason;
        u->err.path = path;
    }
    return -1;
}

static int fail_with(igw_upload *u, const igw_routes_error *e)
{
    return fail(u, e->cls, e->reason, e->path);
}

/* The audio type once the head is complete, or at the end of a short file. */
static int settle_type(igw_upload *u)
{
    if (!u->audio || u->typed)
        return 0;
    u->typed = true;
    igw_routes_error e;
    u->audio_type = igw_routes_audio_type(u->head, u->headlen, &e);
    return u->audio_type < 0 ? fail_with(u, &e) : 0;
}

static int part_begin(void *ctx, const igw_multipart_part *p)
{
    igw_upload *u = ctx;
    igw_routes_error e;
    igw_routes_part part = igw_routes_upload_part(p, u->have_file, &e);
    if (part == IGW_ROUTES_PART_SKIP)
        return 0;
    u->have_file = true;
    if (part == IGW_ROUTES_PART_REFUSED)
        return fail_with(u, &e);
    if (igw_storage_open(u->storage_fd, u->dirs, u->ndirs, u->name ? u->name : p->filename, &u->fd, u->relpath,
                         sizeof u->relpath)) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(u->ex), "upload: cannot create the file: %s", strerror(errno));
        return fail(u, IGW_ERR_INTERNAL, "cannot store the file", "");
    }
    u->in_file = true;
    if (!(u->sha = EVP_MD_CTX_new()) || EVP_DigestInit_ex(u->sha, EVP_sha256(), NULL) != 1)
        return fail(u, IGW_ERR_INTERNAL, "out of memory", "");
    return 0;
}

static int part_data(void *ctx, const char *data, size_t len)
{
    igw_upload *u = ctx;
    if (!u->in_file)
        return 0;
    u->size += len;
    igw_routes_error e;
    if (igw_routes_upload_too_large(u->size, u->max, &e))
        return fail_with(u, &e);
    if (u->audio && !u->typed) {
        size_t take = sizeof u->head - u->headlen < len ? sizeof u->head - u->headlen : len;
        memcpy(u->head + u->headlen, data, take);
        u->headlen += take;
        if (u->headlen == sizeof u->head && settle_type(u))
            return -1;
    }
    if (EVP_DigestUpdate(u->sha, data, len) != 1)
        return fail(u, IGW_ERR_INTERNAL, "digest failed", "");
    while (len) {
        ssize_t n = write(u->fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            igw_log(IGW_LOG_ERROR, igw_http_request_id(u->ex), "upload: write: %s", strerror(errno));
            return fail(u, IGW_ERR_INTERNAL, "cannot store the file", "");
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int part_end(void *ctx)
{
    igw_upload *u = ctx;
    if (!u->in_file)
        return 0;
    u->in_file = false;
    if (settle_type(u))
        return -1;
    /* Durable before the reply: the content, then the new directory entries. */
    if (fsync(u->fd) != 0 || igw_storage_sync_dirs(u->storage_fd, u->relpath) != 0) {
        igw_log(IGW_LOG_ERROR, igw_http_request_id(u->ex), "upload: fsync: %s", strerror(errno));
        return fail(u, IGW_ERR_INTERNAL, "cannot store the file", "");
    }
    return 0;
}

static int done(void *ctx)
{
    (void)ctx;
    return 0;
}

static const igw_multipart_callbacks callbacks = {part_begin, part_data, part_end, done};

void igw_upload_release(igw_upload *u, bool remove_file)
{
    if (u->fd >= 0)
        close(u->fd);
    u->fd = -1;
    if (remove_file && u->relpath[0] && igw_storage_remove(u->storage_fd, u->relpath) != 0)
        igw_log(IGW_LOG_WARN, NULL, "upload: cannot remove %s: %s", u->relpath, strerror(errno));
    if (remove_file)
        u->relpath[0] = '\0';
    EVP_MD_CTX_free(u->sha);
    u->sha = NULL;
}

int igw_upload_store(igw_upload *u)
{
    igw_str ct = igw_http_header_value(u->ex, "content-type");
    char boundary[IGW_MULTIPART_BOUNDARY_MAX + 1];
    const char *why = NULL;
    igw_multipart mp;
    int blen = igw_multipart_boundary(ct.ptr, ct.len, boundary, sizeof boundary, &why);
    if (blen < 0 || igw_multipart_init(&mp, boundary, (size_t)blen, &callbacks, u))
        return fail(u, IGW_ERR_MEDIA_TYPE, why ? why : "invalid multipart boundary", "");
    igw_str body = igw_http_body(u->ex);
    int rc = 0;
    for (size_t off = 0; rc == 0 && off < body.len; off += UPLOAD_SLICE) {
        size_t n = body.len - off < UPLOAD_SLICE ? body.len - off : UPLOAD_SLICE;
        rc = igw_multipart_feed(&mp, body.ptr + off, n);
    }
    if (rc == 0)
        rc = igw_multipart_finish(&mp);
    igw_routes_error e;
    if (igw_routes_upload_end_error(rc, u->have_file, igw_multipart_error(&mp), &e))
        fail_with(u, &e); /* a callback's refusal, if any, stays first */
    unsigned char md[32];
    unsigned mdlen = 0;
    if (u->err.cls == IGW_ERR_OK && (EVP_DigestFinal_ex(u->sha, md, &mdlen) != 1 || mdlen != 32))
        fail(u, IGW_ERR_INTERNAL, "digest failed", "");
    if (u->err.cls != IGW_ERR_OK) {
        igw_upload_release(u, true);
        return -1;
    }
    igw_hex_encode(md, 32, u->sha256_hex);
    return 0;
}
