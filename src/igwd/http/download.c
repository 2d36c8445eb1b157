/* download.c - see download.h. */
#include "http/download.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "core/log.h"
#include "signedurl.h"
#include "storage.h"

bool igw_http_download_match(igw_str path)
{
    static const char prefix[] = IGW_SIGNEDURL_PREFIX;
    return path.len > sizeof prefix - 1 && memcmp(path.ptr, prefix, sizeof prefix - 1) == 0;
}

void igw_http_download(igw_exchange *ex, const igw_http_app *app)
{
    if (app->files_fd < 0 || !app->files_key) {
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "no such file or link expired", "");
        return;
    }
    /* The path as sent (still percent-encoded): the signature covers it. */
    igw_str path = igw_http_path(ex), query = igw_http_query(ex);
    char rel[IGW_SIGNEDURL_PATH_MAX + 1];
    int rc = igw_signedurl_verify(app->files_key, app->files_key_len, path.ptr, path.len, query.ptr ? query.ptr : "",
                                  query.len, (int64_t)time(NULL), rel, sizeof rel);
    if (rc != IGW_SIGNEDURL_OK) {
        /* Why, never the URL: its query is a credential. */
        igw_log(IGW_LOG_DEBUG, igw_http_request_id(ex), "download: signed URL refused: %s", igw_signedurl_strerror(rc));
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "no such file or link expired", "");
        return;
    }
    int fd = -1;
    struct stat st;
    if (igw_storage_open_read(app->files_fd, rel, &fd) != 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        igw_http_reply_error(ex, IGW_ERR_NOT_FOUND, "no such file or link expired", "");
        return;
    }
    const char *slash = strrchr(rel, '/');
    igw_http_reply_file(ex, fd, (uint64_t)st.st_size, slash ? slash + 1 : rel);
}
