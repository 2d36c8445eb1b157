/* check.c - `igwctl check ROUTE_PATH < body`: the strict decoder on the
 * command line, exactly the stage the server runs before authorization. */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "jw.h"

/* Reads stdin up to `cap` bytes; *over is set when more was available. */
static char *read_stdin(size_t cap, size_t *len, int *over)
{
    size_t size = 65536, n = 0;
    char *buf = malloc(size);
    if (!buf)
        return NULL;
    *over = 0;
    for (;;) {
        if (n == size) {
            if (size > cap) {
                *over = 1;
                break;
            }
            char *b = realloc(buf, size * 2);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
            size *= 2;
        }
        size_t got = fread(buf + n, 1, size - n, stdin);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(stdin)) {
        free(buf);
        return NULL;
    }
    if (n > cap)
        *over = 1;
    *len = n;
    return buf;
}

static void print_error(const igw_decode_error *err)
{
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "code", 4);
    igw_jw_int(&w, igw_error_classes[err->cls].code);
    igw_jw_key(&w, "reason", 6);
    const char *reason = err->reason ? err->reason : igw_error_classes[err->cls].reason;
    igw_jw_string(&w, reason, strlen(reason));
    igw_jw_key(&w, "path", 4);
    igw_jw_string(&w, err->path, strlen(err->path));
    igw_jw_object_end(&w);
    if (igw_jw_status(&w) == 0)
        printf("%.*s\n", (int)w.len, w.buf);
    igw_jw_free(&w);
}

int igw_check_main(int argc, char **argv)
{
    if (argc != 1) {
        fputs("usage: igwctl check ROUTE_PATH < body\n", stderr);
        return 2;
    }
    const char *path = argv[0];
    igw_decode_error err;
    memset(&err, 0, sizeof err);
    igw_str params[IGW_MAX_PATH_PARAMS];
    const igw_route_def *route = igw_gen_api.match(path, strlen(path), params);
    if (!route) {
        err.cls = igw_gen_api.cls_no_route;
        err.reason = "no such route";
        print_error(&err);
        return 2;
    }
    if (route->body == IGW_BODY_KIND_MULTIPART) {
        fprintf(stderr, "igwctl: %s takes multipart/form-data, which the server streams; check decodes JSON bodies\n",
                route->path);
        return 2;
    }
    size_t len = 0;
    int over = 0;
    char *body = read_stdin(route->body_limit, &len, &over);
    if (!body) {
        fputs("igwctl: cannot read standard input\n", stderr);
        return 2;
    }
    /* The request as a client would send it: the route's method and, for a
     * JSON body, its media type; the decoder decides the rest. */
    igw_header ct = {{"content-type", 12}, {"application/json", 16}};
    igw_http_request in = {
        .method = {route->method, strlen(route->method)},
        .path = {path, strlen(path)},
        .headers = &ct,
        .nheaders = route->body == IGW_BODY_KIND_JSON ? 1 : 0,
        .body = {body, over ? route->body_limit + 1 : len}, /* over the cap: enough to trip it */
    };
    igw_arena arena;
    igw_arena_init(&arena, 0);
    igw_request req;
    int rc = 1;
    if (igw_request_decode(&igw_gen_api, &req, &in, &arena, &err) != 0) {
        print_error(&err);
    } else {
        rc = 0;
        if (req.body && route->encode) {
            igw_jw w;
            igw_jw_init(&w);
            route->encode(&w, req.body);
            if (igw_jw_status(&w) == 0) {
                printf("%.*s\n", (int)w.len, w.buf);
            } else {
                fputs("igwctl: cannot encode the decoded request\n", stderr);
                rc = 2;
            }
            igw_jw_free(&w);
        }
    }
    igw_arena_free(&arena);
    free(body);
    if (fflush(stdout) != 0)
        return 2;
    return rc;
}
