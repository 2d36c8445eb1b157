/* bench_decode.c - throughput of the generated strict decoders.
 *
 *   bench_decode [--per-route] [--only gen|direct|simd|jansson] [-v] FILE.jsonl...
 *
 * Loads every valid request body (expect.status 200, a non-empty body on a
 * route whose body is JSON) from the conformance vector files and decodes
 * the whole set many times, in one process, with each contender:
 *
 *   generated  igw_request_decode: route match, body cap, content type, path
 *              parameters and the generated strict decoder, arena reset per
 *              body (the arena's first chunk is sized once, so no malloc)
 *   gen-direct the route's generated decoder alone (route resolved before
 *              the timed loop): shows what the strict stage adds around it
 *   simdjson   simdjson::dom::parser::parse only, parser reused, padded
 *              strings built before the timed loop; no validation at all
 *   jansson    json_loadb (JSON_REJECT_DUPLICATES) plus the hand-written
 *              validator of hand_validate.c, routing included
 *
 * Every contender first proves it accepts every body (the run aborts naming
 * the body otherwise), is warmed up, and is calibrated once to an iteration
 * count that takes BENCH_SECONDS (default 1) split into ROUNDS rounds; the
 * rounds of the contenders are interleaved and the median round is reported.
 * MB/s is body bytes x iterations / seconds with MB = 10^6 bytes. The ratios
 * are generated throughput over the other's (> 1: generated is faster). The
 * last line is machine-readable:
 *
 *   RESULT decode_vs_simdjson=<ratio> decode_mb_s=<n> ns_per_body=<n>
 *
 * --per-route adds a per-route table (shorter runs); --only times a single
 * contender, for profiling (perf record, callgrind), and prints no RESULT;
 * BENCH_SECONDS sets the time per contender; -v lists the invalid
 * vectors the hand validator accepts (information only: it cannot see every
 * rule violation the generated decoder reports, -0 for instance). */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api.h"
#include "bench_simdjson.h"
#include "hand_validate.h"

#define ROUNDS 5
#define ARENA_FIRST_CHUNK ((size_t)60 << 10) /* kept across resets (<= 64 KiB) */

typedef struct body {
    char *file, *id;
    char *method, *path, *ct, *data;
    size_t mlen, plen, ctlen, len;
    size_t order; /* position in the input, for a stable sort */
    const igw_route_def *route;
} body;

typedef struct corpus {
    const char *name;
    body *b;
    size_t n, bytes;
    sj_corpus *sj;
} corpus;

static igw_arena arena;
static int verbose;
static int only = -1; /* --only: the one contender timed */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench-decode: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------- loading */

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

static char *b64_decode(const char *in, size_t n, size_t *outlen)
{
    char *buf = malloc(n / 4 * 3 + 4);
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    if (buf == NULL)
        return NULL;
    for (size_t i = 0; i < n && in[i] != '='; i++) {
        int v = b64val((unsigned char)in[i]);
        if (v < 0) {
            free(buf);
            return NULL;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    *outlen = o;
    return buf;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d == NULL)
        die("out of memory");
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static char *str_member(json_t *o, const char *key, size_t *len)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return NULL;
    *len = json_string_length(v);
    return dup_n(json_string_value(v), *len);
}

typedef struct bodies {
    body *v;
    size_t n, cap;
} bodies;

static void push(bodies *l, body b)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (l->v == NULL)
            die("out of memory");
    }
    l->v[l->n++] = b;
}

static void free_body(body *b)
{
    free(b->file);
    free(b->id);
    free(b->method);
    free(b->path);
    free(b->ct);
    free(b->data);
}

/* Adds the route vectors of FILE with a JSON body to valid / invalid. */
static void load_file(const char *file, bodies *valid, bodies *invalid)
{
    FILE *f = fopen(file, "r");
    if (f == NULL)
        die("cannot open %s: %s", file, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        json_error_t jerr;
        json_t *v = json_loadb(line, (size_t)got, JSON_ALLOW_NUL, &jerr);
        if (v == NULL)
            die("%s: unreadable vector line: %s", file, jerr.text);
        json_t *req = json_object_get(v, "request"), *exp = json_object_get(v, "expect");
        if (!json_is_object(req) || !json_is_object(exp)) { /* header line, machine vector */
            json_decref(v);
            continue;
        }
        body b;
        memset(&b, 0, sizeof b);
        size_t idlen, raw_len;
        b.file = dup_n(file, strlen(file));
        b.id = str_member(v, "id", &idlen);
        if (b.id == NULL)
            b.id = dup_n("?", 1);
        b.method = str_member(req, "method", &b.mlen);
        b.path = str_member(req, "path", &b.plen);
        json_t *headers = json_object_get(req, "headers");
        const char *hk;
        json_t *hv;
        json_object_foreach(headers, hk, hv) {
            if (strcasecmp(hk, "content-type") == 0 && json_is_string(hv)) {
                b.ctlen = json_string_length(hv);
                b.ct = dup_n(json_string_value(hv), b.ctlen);
            }
        }
        char *raw;
        if ((b.data = str_member(req, "body", &b.len)) == NULL &&
            (raw = str_member(req, "body_b64", &raw_len)) != NULL) {
            b.data = b64_decode(raw, raw_len, &b.len);
            free(raw);
            if (b.data == NULL)
                die("%s %s: bad body_b64", file, b.id);
        }
        json_t *status = json_object_get(exp, "status");
        bool ok = json_is_integer(status) && json_integer_value(status) == 200;
        igw_str params[IGW_MAX_PATH_PARAMS];
        if (b.method != NULL && b.path != NULL && b.data != NULL && b.len > 0)
            b.route = igw_gen_api.match(b.path, b.plen, params);
        if (b.route != NULL && b.route->body == IGW_BODY_KIND_JSON) {
            b.order = valid->n + invalid->n;
            push(ok ? valid : invalid, b);
        } else {
            free_body(&b);
        }
        json_decref(v);
    }
    free(line);
    fclose(f);
}

/* ---------------------------------------------------------- contenders */

static uint64_t run_generated(const corpus *c, size_t iters)
{
    uint64_t sum = 0;
    for (size_t it = 0; it < iters; it++) {
        for (size_t i = 0; i < c->n; i++) {
            const body *b = &c->b[i];
            igw_request req;
            igw_decode_error err;
            igw_arena_reset(&arena);
            igw_header ct = {{"content-type", 12}, {b->ct, b->ctlen}};
            igw_http_request in = {{b->method, b->mlen}, {b->path, b->plen}, &ct, b->ct ? 1 : 0, {b->data, b->len}};
            if (igw_request_decode(&igw_gen_api, &req, &in, &arena, &err) != 0) {
                sum += 1000003;
                continue;
            }
            sum += *(const uint64_t *)req.body + (uint64_t)req.route->id; /* `has` bits */
        }
    }
    return sum;
}

static uint64_t run_gen_direct(const corpus *c, size_t iters)
{
    uint64_t sum = 0;
    for (size_t it = 0; it < iters; it++) {
        for (size_t i = 0; i < c->n; i++) {
            const body *b = &c->b[i];
            igw_json j;
            igw_arena_reset(&arena);
            void *out = igw_arena_alloc(&arena, b->route->body_size);
            igw_json_init(&j, b->data, b->len, &arena, IGW_JSON_MAX_DEPTH);
            if (out == NULL || b->route->decode(&j, out) != 0 || igw_json_finish(&j) != 0) {
                sum += 1000003;
                continue;
            }
            sum += *(const uint64_t *)out;
        }
    }
    return sum;
}

/* The same scanner without the schema: the body as a free RFC 8259 value
 * (syntax, UTF-8, depth; no keys matched, no types, lengths or formats),
 * what simdjson's parse checks. The generated contenders' lead over this
 * one is the schema's work. */
static uint64_t run_scan(const corpus *c, size_t iters)
{
    uint64_t sum = 0;
    for (size_t it = 0; it < iters; it++) {
        for (size_t i = 0; i < c->n; i++) {
            const body *b = &c->b[i];
            igw_json j;
            igw_str raw;
            igw_arena_reset(&arena);
            igw_json_init(&j, b->data, b->len, &arena, IGW_JSON_MAX_DEPTH);
            if (igw_json_value(&j, IGW_JSON_RFC8259, IGW_JSON_MAX_DEPTH, b->len, &raw) != 0 ||
                igw_json_finish(&j) != 0) {
                sum += 1000003;
                continue;
            }
            sum += raw.len;
        }
    }
    return sum;
}

static uint64_t run_simdjson(const corpus *c, size_t iters)
{
    return sj_run(c->sj, iters);
}

static uint64_t run_jansson(const corpus *c, size_t iters)
{
    uint64_t sum = 0;
    for (size_t it = 0; it < iters; it++) {
        for (size_t i = 0; i < c->n; i++) {
            const body *b = &c->b[i];
            hv_result res;
            if (hv_request(b->method, b->mlen, b->path, b->plen, b->ct, b->ctlen, b->data, b->len, &res) != 0) {
                sum += 1000003;
                continue;
            }
            sum += (uint64_t)res.fields + (uint64_t)res.route;
        }
    }
    return sum;
}

typedef uint64_t (*runner)(const corpus *c, size_t iters);

enum { C_GEN, C_DIRECT, C_SCAN, C_SIMD, C_JANSSON, NCONT };
static const struct {
    const char *key, *name;
    runner run;
} contenders[NCONT] = {
    [C_GEN] = {"gen", "generated (igw_request_decode)", run_generated},
    [C_DIRECT] = {"direct", "generated decoder only", run_gen_direct},
    [C_SCAN] = {"scan", "scanner, no schema (RFC 8259)", run_scan},
    [C_SIMD] = {"simd", "simdjson DOM parse only", run_simdjson},
    [C_JANSSON] = {"jansson", "jansson + hand validation", run_jansson},
};

/* ------------------------------------------------------------- checks */

/* Every contender must accept every body before anything is timed. */
static void verify(const corpus *c)
{
    size_t peak = 0;
    for (size_t i = 0; i < c->n; i++) {
        const body *b = &c->b[i];
        igw_request req;
        igw_decode_error err;
        igw_arena_reset(&arena);
        igw_header ct = {{"content-type", 12}, {b->ct, b->ctlen}};
        igw_http_request in = {{b->method, b->mlen}, {b->path, b->plen}, &ct, b->ct ? 1 : 0, {b->data, b->len}};
        if (igw_request_decode(&igw_gen_api, &req, &in, &arena, &err) != 0)
            die("generated decoder refuses valid body %s (%s): %s", b->id, b->file, err.reason);
        if (arena.total > peak)
            peak = arena.total;
        igw_json j;
        if (igw_json_validate(b->data, b->len, IGW_JSON_RFC8259, IGW_JSON_MAX_DEPTH, &arena, &j) != 0)
            die("the scanner without schema refuses valid body %s (%s): %s", b->id, b->file, j.reason);
        hv_result res;
        if (hv_request(b->method, b->mlen, b->path, b->plen, b->ct, b->ctlen, b->data, b->len, &res) != 0)
            die("hand validator refuses valid body %s (%s): %s", b->id, b->file, res.err);
    }
    const char *msg = "";
    size_t bad = sj_check(c->sj, &msg);
    if (bad < c->n)
        die("simdjson refuses valid body %s (%s): %s", c->b[bad].id, c->b[bad].file, msg);
    if (peak + 4096 > ARENA_FIRST_CHUNK)
        fprintf(stderr, "bench-decode: warning: a body needs %zu arena bytes, beyond the first chunk: "
                        "the generated contender mallocs for it\n", peak);
    printf("arena peak per body: %zu bytes (first chunk %zu: no malloc per body)\n", peak,
           (size_t)ARENA_FIRST_CHUNK);
}

/* How the hand validator judges the invalid vectors (information only). */
static void judge_invalid(const bodies *inv)
{
    size_t refused = 0;
    for (size_t i = 0; i < inv->n; i++) {
        const body *b = &inv->v[i];
        hv_result res;
        if (hv_request(b->method, b->mlen, b->path, b->plen, b->ct, b->ctlen, b->data, b->len, &res) != 0)
            refused++;
        else if (verbose)
            printf("  hand validator accepts invalid %s (%s)\n", b->id, b->file);
    }
    if (inv->n)
        printf("hand validator refuses %zu of %zu invalid JSON-route vectors%s\n", refused, inv->n,
               refused < inv->n && !verbose ? " (-v lists the others)" : "");
}

/* -------------------------------------------------------------- timing */

typedef struct result {
    size_t iters;
    double secs[ROUNDS];
    double median;
    uint64_t sum;
} result;

static double timed(int k, const corpus *c, size_t iters, uint64_t *sum)
{
    double t0 = now();
    *sum += contenders[k].run(c, iters);
    return now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Warms up, calibrates and runs all contenders on `c` for about `seconds` each. */
static void bench(const corpus *c, double seconds, result res[NCONT])
{
    for (int k = 0; k < NCONT; k++) {
        memset(&res[k], 0, sizeof res[k]);
        res[k].median = -1;
        if (only >= 0 && k != only)
            continue;
        timed(k, c, 1, &res[k].sum); /* warm-up */
        size_t iters = 1;
        double t;
        while ((t = timed(k, c, iters, &res[k].sum)) < 0.05 && iters < ((size_t)1 << 40))
            iters *= 2;
        double want = iters * (seconds / ROUNDS) / (t > 0 ? t : 1e-9);
        res[k].iters = want < 1 ? 1 : (size_t)want;
    }
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < NCONT; k++)
            if (only < 0 || k == only)
                res[k].secs[r] = timed(k, c, res[k].iters, &res[k].sum);
    for (int k = 0; k < NCONT; k++) {
        if (only >= 0 && k != only)
            continue;
        double s[ROUNDS];
        memcpy(s, res[k].secs, sizeof s);
        qsort(s, ROUNDS, sizeof s[0], cmp_double);
        res[k].median = s[ROUNDS / 2];
    }
}

static double mb_s(const corpus *c, const result *r)
{
    return (double)c->bytes * (double)r->iters / r->median / 1e6;
}

static double ns_body(const corpus *c, const result *r)
{
    return r->median * 1e9 / ((double)r->iters * (double)c->n);
}

static corpus make_corpus(const char *name, body *b, size_t n)
{
    corpus c = {name, b, n, 0, NULL};
    const char **ptrs = malloc((n ? n : 1) * sizeof *ptrs);
    size_t *lens = malloc((n ? n : 1) * sizeof *lens);
    if (ptrs == NULL || lens == NULL)
        die("out of memory");
    for (size_t i = 0; i < n; i++) {
        ptrs[i] = b[i].data;
        lens[i] = b[i].len;
        c.bytes += b[i].len;
    }
    c.sj = sj_prepare(ptrs, lens, n);
    if (c.sj == NULL)
        die("simdjson: cannot prepare the corpus");
    free(ptrs);
    free(lens);
    return c;
}

static int by_route(const void *a, const void *b)
{
    const body *x = a, *y = b;
    if (x->route->id != y->route->id)
        return (int)x->route->id - (int)y->route->id;
    return x->order < y->order ? -1 : x->order > y->order;
}

int main(int argc, char **argv)
{
    bool per_route = false;
    bodies valid = {0}, invalid = {0};
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--per-route") == 0)
            per_route = true;
        else if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            for (only = 0; only < NCONT && strcmp(argv[i + 1], contenders[only].key) != 0; only++)
                ;
            if (only == NCONT)
                die("--only takes gen, direct, simd or jansson, not %s", argv[i + 1]);
            i++;
        }
        else {
            load_file(argv[i], &valid, &invalid);
            nfiles++;
        }
    }
    if (valid.n == 0)
        die("no valid JSON bodies in %d file(s)", nfiles);
    const char *env = getenv("BENCH_SECONDS");
    double seconds = env != NULL ? atof(env) : 1.0;
    if (!(seconds > 0))
        seconds = 1.0;

    /* One arena for the whole run; its first chunk is big enough for any
     * body, and reset keeps it, so decoding never mallocs. */
    igw_arena_init(&arena, 0);
    if (igw_arena_alloc(&arena, ARENA_FIRST_CHUNK) == NULL)
        die("out of memory");
    igw_arena_reset(&arena);

    qsort(valid.v, valid.n, sizeof *valid.v, by_route); /* groups routes, input order within */
    corpus all = make_corpus("all", valid.v, valid.n);
    size_t nroutes = 0;
    for (size_t i = 0; i < valid.n; i++)
        nroutes += i == 0 || valid.v[i].route != valid.v[i - 1].route;
    printf("bench-decode: %zu valid bodies on %zu routes from %d file(s), %zu bytes (avg %.0f B/body); "
           "simdjson kernel %s; %.1f s per contender in %d rounds\n",
           all.n, nroutes, nfiles, all.bytes, (double)all.bytes / (double)all.n, sj_implementation(),
           seconds, ROUNDS);
    verify(&all);
    judge_invalid(&invalid);

    result res[NCONT];
    bench(&all, seconds, res);
    printf("%-32s %12s %9s %10s %10s\n", "contender", "iterations", "median s", "MB/s", "ns/body");
    uint64_t checksum = 0;
    for (int k = 0; k < NCONT; k++) {
        checksum = checksum * 31 + res[k].sum;
        if (only >= 0 && k != only)
            continue;
        printf("%-32s %12zu %9.3f %10.1f %10.1f\n", contenders[k].name, res[k].iters, res[k].median,
               mb_s(&all, &res[k]), ns_body(&all, &res[k]));
    }
    if (only >= 0) {
        printf("checksum %016llx\n", (unsigned long long)checksum);
        return 0;
    }
    double gen = mb_s(&all, &res[C_GEN]);
    double vs_simd = gen / mb_s(&all, &res[C_SIMD]), vs_jansson = gen / mb_s(&all, &res[C_JANSSON]);
    printf("ratio generated/simdjson = %.2f, generated/jansson = %.2f, decoder-only/simdjson = %.2f, "
           "scanner-no-schema/simdjson = %.2f\n",
           vs_simd, vs_jansson, mb_s(&all, &res[C_DIRECT]) / mb_s(&all, &res[C_SIMD]),
           mb_s(&all, &res[C_SCAN]) / mb_s(&all, &res[C_SIMD]));

    if (per_route) {
        printf("\nper route (%.2f s per contender): ns/body generated | decoder only | scanner | simdjson | jansson\n",
               seconds / 4);
        for (size_t i = 0; i < valid.n;) {
            size_t j = i;
            while (j < valid.n && valid.v[j].route == valid.v[i].route)
                j++;
            corpus rc = make_corpus(valid.v[i].route->name, valid.v + i, j - i);
            result rr[NCONT];
            bench(&rc, seconds / 4, rr);
            printf("  %-20s %3zu bodies %6.0f B avg  %8.1f %8.1f %8.1f %8.1f %8.1f   gen/simd %.2f\n", rc.name,
                   rc.n, (double)rc.bytes / (double)rc.n, ns_body(&rc, &rr[C_GEN]), ns_body(&rc, &rr[C_DIRECT]),
                   ns_body(&rc, &rr[C_SCAN]), ns_body(&rc, &rr[C_SIMD]), ns_body(&rc, &rr[C_JANSSON]),
                   mb_s(&rc, &rr[C_GEN]) / mb_s(&rc, &rr[C_SIMD]));
            for (int k = 0; k < NCONT; k++)
                checksum = checksum * 31 + rr[k].sum;
            sj_free(rc.sj);
            i = j;
        }
    }
    printf("checksum %016llx\n", (unsigned long long)checksum);
    printf("RESULT decode_vs_simdjson=%.2f decode_mb_s=%.0f ns_per_body=%.0f\n", vs_simd, gen,
           ns_body(&all, &res[C_GEN]));
    sj_free(all.sj);
    igw_arena_free(&arena);
    return 0;
}
