/* console.c - see console.h. */
#include "ops/console.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONSOLE_PATH "/console/"
#define CONSOLE_NAME_MAX 128

struct igw_console {
    char *dir; /* absolute */
    igw_http_files files;
};

/* Same origin only; the page's fetch and WebSocket go to its own origin
 * (CSP 3: 'self' covers ws: and wss: of it). blob: media: the voice
 * message's preview plays the recording or file the page holds. */
static const char console_csp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self' blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/* The console's types only: anything else is served as application/octet-stream. */
static const char *const console_types[] = {
    "html", "text/html; charset=utf-8",
    "js",   "text/javascript; charset=utf-8",
    "css",  "text/css; charset=utf-8",
    "svg",  "image/svg+xml",
    "png",  "image/png",
    "ico",  "image/x-icon",
    "md",   "text/plain; charset=utf-8",
    NULL,
};

/* Nothing is cached (no ETag either: nothing revalidates), nothing sniffed
 * or framed, no referrer leaves. */
static const char *const console_headers[] = {
    "cache-control",           "no-store",
    "content-security-policy", console_csp,
    "x-content-type-options",  "nosniff",
    "referrer-policy",         "no-referrer",
    NULL,
};

static bool console_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           (!first && c == '.');
}

/* The raw path (not h2o's normalized one) is /console/ or /console/NAME:
 * any other path h2o's normalization brought under /console/
 * (/console/x/../y, /api/../console/z) is routed by its raw path as before. */
static bool console_path_ok(igw_str path)
{
    size_t n = sizeof CONSOLE_PATH - 1;
    if (path.len < n || memcmp(path.ptr, CONSOLE_PATH, n) != 0)
        return false;
    const char *name = path.ptr + n;
    size_t len = path.len - n;
    if (len > CONSOLE_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!console_char(name[i], i == 0) || (name[i] == '.' && i + 1 < len && name[i + 1] == '.'))
            return false;
    return true;
}

igw_console *igw_console_create(const char *dir, char *err, size_t errlen)
{
    char *abs = realpath(dir, NULL); /* h2o's file handler wants it absolute */
    if (!abs) {
        snprintf(err, errlen, "console_dir %s: %s", dir, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (stat(abs, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "console_dir %s: not a directory", dir);
        free(abs);
        return NULL;
    }
    igw_console *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        free(abs);
        return NULL;
    }
    c->dir = abs;
    c->files = (igw_http_files){.name = "console",
                                .path = CONSOLE_PATH,
                                .dir = c->dir,
                                .index = "index.html",
                                .serves = console_path_ok,
                                .types = console_types,
                                .headers = console_headers,
                                .refused = "the console is read with GET or HEAD",
                                .missing = "no such file"};
    return c;
}

void igw_console_destroy(igw_console *c)
{
    if (!c)
        return;
    free(c->dir);
    free(c);
}

const igw_http_files *igw_console_files(const igw_console *c)
{
    return &c->files;
}
