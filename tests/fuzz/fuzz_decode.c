/* fuzz_decode.c - libFuzzer harness of one route's strict stage.
 *
 * One binary for every route: IGW_FUZZ_ROUTE in the environment names the
 * route under test (its name in the route table, "commands"); run.sh sets
 * it per target, so the routes share one build. The input is
 * the body; when the route has path parameters or reads headers, an input
 * starting with 0xFF instead carries their values: 0xFF, then NUL-separated
 * values for each parameter and header in turn, then the body. So the same
 * corpus (plain bodies from the vectors) also reaches the text checks.
 *
 * Properties checked on every input: no crash, leak or UB (ASan/UBSan);
 * every refusal names a class and a reason; an accepted JSON body
 * round-trips: its canonical encoding decodes again and encodes to the very
 * same bytes (command fingerprints depend on that). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "fuzz.h"

static void encode(const igw_route_def *r, const void *body, igw_jw *w)
{
    igw_jw_reset(w);
    r->encode(w, body);
    if (igw_jw_status(w) != 0)
        abort();
}

/* Splits the next NUL-terminated value off the input (or the rest). */
static igw_str take(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *start = *p, *nul = memchr(start, 0, (size_t)(end - start));
    *p = nul ? nul + 1 : end;
    return (igw_str){(const char *)start, (size_t)((nul ? nul : end) - start)};
}

static const igw_route_def *route;

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *name = getenv("IGW_FUZZ_ROUTE");
    for (uint32_t i = 0; name && i < IGW_ROUTE__COUNT; i++)
        if (strcmp(igw_routes[i].name, name) == 0)
            route = &igw_routes[i];
    if (!route) {
        fprintf(stderr, "fuzz_decode: IGW_FUZZ_ROUTE=%s names no route\n", name ? name : "(unset)");
        exit(2);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const igw_route_def *r = route;
    const uint8_t *p = data, *end = data + size;
    igw_str values[IGW_MAX_PATH_PARAMS + IGW_MAX_ROUTE_HEADERS];
    uint32_t nvalues = r->nparams + r->nheaders;
    for (uint32_t i = 0; i < nvalues; i++)
        values[i] = (igw_str){"v", 1};
    if (size > 0 && data[0] == 0xFF && nvalues) {
        p++;
        for (uint32_t i = 0; i < nvalues; i++)
            values[i] = take(&p, end);
    }
    /* The path with each {param} replaced by its value. */
    char path[4096];
    size_t plen = 0, param = 0;
    for (const char *q = r->path; *q; q++) {
        if (*q == '{') {
            igw_str v = values[param++];
            if (plen + v.len >= sizeof path)
                return 0;
            memcpy(path + plen, v.ptr, v.len);
            plen += v.len;
            while (*q && *q != '}')
                q++;
            if (!*q)
                break;
        } else if (plen + 1 < sizeof path) {
            path[plen++] = *q;
        }
    }
    igw_header headers[1 + IGW_MAX_ROUTE_HEADERS];
    size_t nheaders = 0;
    headers[nheaders++] = (igw_header){{"content-type", 12}, {"application/json", 16}};
    for (uint32_t i = 0; i < r->nheaders; i++)
        headers[nheaders++] = (igw_header){{r->headers[i], strlen(r->headers[i])}, values[r->nparams + i]};

    igw_arena a;
    igw_arena_init(&a, 0);
    igw_request req;
    igw_decode_error err;
    igw_http_request in = {{r->method, strlen(r->method)}, {path, plen}, headers, nheaders,
                           {(const char *)p, (size_t)(end - p)}};
    if (igw_request_decode(&igw_gen_api, &req, &in, &a, &err) == 0) {
        if (req.route != r)
            abort(); /* a path built from this route's template matched another route */
        if (req.body && r->encode) {
            igw_jw w1, w2;
            igw_jw_init(&w1);
            igw_jw_init(&w2);
            encode(r, req.body, &w1);
            igw_request again;
            in.body = (igw_str){w1.buf, w1.len};
            if (igw_request_decode(&igw_gen_api, &again, &in, &a, &err) != 0) {
                fprintf(stderr, "canonical encoding refused at %s: %s\n", err.path, err.reason);
                abort();
            }
            encode(r, again.body, &w2);
            if (w1.len != w2.len || memcmp(w1.buf, w2.buf, w1.len) != 0)
                abort();
            igw_jw_free(&w1);
            igw_jw_free(&w2);
        }
    } else if (err.cls < 0 || err.cls >= IGW_ERR__COUNT || !err.reason) {
        abort();
    }
    igw_arena_free(&a);
    return 0;
}
