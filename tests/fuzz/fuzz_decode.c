/* fuzz_decode.c - libFuzzer harness of one route's strict decoder.
 *
 * Built once per route with -DIGW_FUZZ_ROUTE=<igw_route_id>; path
 * parameters get fixed valid values. Properties checked on every input:
 * the decoder never crashes or leaks (ASan/UBSan), and an accepted body
 * round-trips: its canonical encoding decodes again and encodes to the very
 * same bytes (the fingerprint of a command depends on that). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void encode(const igw_route_def *r, const void *body, igw_jw *w)
{
    igw_jw_reset(w);
    r->encode(w, body);
    if (igw_jw_status(w) != 0)
        abort();
}

/* The route's path with every {param} replaced by a valid value. */
static const char *concrete_path(const igw_route_def *r, size_t *len)
{
    static char buf[512];
    size_t n = 0;
    for (const char *p = r->path; *p && n + 8 < sizeof buf; p++) {
        if (*p == '{') {
            memcpy(buf + n, "param", 5);
            n += 5;
            while (*p && *p != '}')
                p++;
            if (!*p)
                break;
        } else {
            buf[n++] = *p;
        }
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t plen;
    const char *path = concrete_path(&igw_routes[IGW_FUZZ_ROUTE], &plen);
    igw_arena a;
    igw_arena_init(&a, 0);
    igw_request req;
    igw_decode_error err;
    const igw_route_def *r = &igw_routes[IGW_FUZZ_ROUTE];
    if (igw_request_decode(&req, r->method, strlen(r->method), path, plen, "application/json", 16,
                           data, size, &a, &err) == 0 && req.body && r->encode) {
        igw_jw w1, w2;
        igw_jw_init(&w1);
        igw_jw_init(&w2);
        encode(r, req.body, &w1);
        igw_request again;
        if (igw_request_decode(&again, r->method, strlen(r->method), path, plen, NULL, 0, w1.buf, w1.len,
                               &a, &err) != 0) {
            fprintf(stderr, "canonical encoding refused at %s: %s\n", err.path, err.reason);
            abort();
        }
        encode(r, again.body, &w2);
        if (w1.len != w2.len || memcmp(w1.buf, w2.buf, w1.len) != 0)
            abort();
        igw_jw_free(&w1);
        igw_jw_free(&w2);
    } else if (igw_request_decode(&req, r->method, strlen(r->method), path, plen, NULL, 0, data, size,
                                  &a, &err) == 0) {
        /* ok: no body to encode */
    } else if (err.cls >= IGW_ERR__COUNT || !err.reason) {
        abort(); /* every refusal names a class and a reason */
    }
    igw_arena_free(&a);
    return 0;
}
