/* download.c - see download.h. */
#include "ops/download.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "core/log.h"
#include "decode.h"
#include "signedurl.h"
#include "storage.h"

struct igw_download {
    int dir_fd;
    const unsigned char *key; /* NULL: nothing is served */
    size_t keylen;
};

igw_download *igw_download_create(int dir_fd, const unsigned char *key, size_t keylen)
{
    igw_download *d = malloc(sizeof *d);
    if (!d)
        return NULL;
    *d = (igw_download){.dir_fd = dir_fd, .key = key, .keylen = keylen};
    return d;
}

void igw_download_destroy(igw_download *d)
{
    free(d);
}

static bool is_download(igw_str path)
{
    static const char prefix[] = IGW_SIGNEDURL_PREFIX;
    return path.len > sizeof prefix - 1 && memcmp(path.ptr, prefix, sizeof prefix - 1) == 0;
}

static void download(igw_download *d, igw_exchange *ex)
{
    if (d->dir_fd < 0 || !d->key) {
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "no such file or link expired", "");
        return;
    }
    /* The path as sent (still percent-encoded): the signature covers it. */
    igw_str path = igw_http_path(ex), query = igw_http_query(ex);
    char rel[IGW_SIGNEDURL_PATH_MAX + 1];
    int rc = igw_signedurl_verify(d->key, d->keylen, path.ptr, path.len, query.ptr ? query.ptr : "", query.len,
                                  (int64_t)time(NULL), rel, sizeof rel);
    if (rc != IGW_SIGNEDURL_OK) {
        /* Why, never the URL: its query is a credential. */
        igw_log(IGW_LOG_DEBUG, igw_http_request_id(ex), "download: signed URL refused: %s", igw_signedurl_strerror(rc));
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "no such file or link expired", "");
        return;
    }
    int fd = -1;
    struct stat st;
    if (igw_storage_open_read(d->dir_fd, rel, &fd) != 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "no such file or link expired", "");
        return;
    }
    const char *slash = strrchr(rel, '/');
    igw_http_reply_file(ex, fd, (uint64_t)st.st_size, slash ? slash + 1 : rel);
}

bool igw_download_serve(void *arg, igw_exchange *ex, unsigned slot)
{
    if (!is_download(igw_http_path(ex)))
        return false;
    igw_http_set_route(ex, slot);
    igw_str m = igw_http_method(ex);
    if (!igw_str_eq(m, "GET", 3) && !igw_str_eq(m, "HEAD", 4)) {
        igw_http_reply_error(ex, IGW_ERR_METHOD, "a download URL is read with GET or HEAD", "");
        return true;
    }
    download(arg, ex);
    return true;
}
