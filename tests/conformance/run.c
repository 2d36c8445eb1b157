/* run.c - runs the generated conformance vectors in-process.
 *
 *   run FILE.jsonl...
 *   run --seeds DIR FILE.jsonl   (write each vector's body to DIR/<n>, for fuzzing)
 *
 * Route vectors go through igw_request_decode (the server's strict stage);
 * machine vectors (machines.jsonl) through igw_sm_fire. Each expectation is
 * compared exactly: HTTP status, envelope code and JSON Pointer for routes,
 * state and error class after every step for machines. Prints one line per
 * failure and a summary; exit 1 on any failure or when nothing ran. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "machines.h"
#include "protocol.h"

#define MAX_LINE (4u << 20)

#define MAX_HEADERS 16

typedef struct vec {
    igw_str id, method, path, body;
    igw_header headers[MAX_HEADERS];
    size_t nheaders;
    bool has_body, body_is_b64;
    int64_t status, code;
    igw_str expect_path;
    bool has_expect;
} vec;

static int failures, passed;
static const char *seed_dir; /* --seeds: dump bodies instead of running */
static int nseeds;

static void fail_vec(const char *file, igw_str id, const char *fmt, const char *a, const char *b)
{
    failures++;
    fprintf(stderr, "FAIL %s %.*s: ", file, (int)id.len, id.ptr);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

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

/* Decodes base64 into the arena; returns -1 on bad input. */
static int b64_decode(igw_arena *a, igw_str in, igw_str *out)
{
    char *buf = igw_arena_alloc(a, in.len / 4 * 3 + 3);
    if (!buf)
        return -1;
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < in.len; i++) {
        if (in.ptr[i] == '=')
            break;
        int v = b64val((unsigned char)in.ptr[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    *out = (igw_str){buf, n};
    return 0;
}

static bool key_is(igw_str k, const char *s) { return k.len == strlen(s) && memcmp(k.ptr, s, k.len) == 0; }

static int skip(igw_json *j)
{
    igw_str raw;
    return igw_json_value(j, IGW_JSON_RFC8259, 32, SIZE_MAX, &raw);
}

static int read_headers(igw_json *j, vec *v)
{
    igw_str k;
    int more;
    if (igw_json_object_begin(j))
        return -1;
    while ((more = igw_json_object_next(j, &k)) == 1) {
        if (v->nheaders == MAX_HEADERS)
            return -1;
        igw_header *h = &v->headers[v->nheaders++];
        h->name = k;
        if (igw_json_string(j, &h->value))
            return -1;
    }
    return more;
}

static int read_request(igw_json *j, vec *v)
{
    igw_str k;
    int more;
    if (igw_json_object_begin(j))
        return -1;
    while ((more = igw_json_object_next(j, &k)) == 1) {
        int rc;
        if (key_is(k, "method"))
            rc = igw_json_string(j, &v->method);
        else if (key_is(k, "path"))
            rc = igw_json_string(j, &v->path);
        else if (key_is(k, "body"))
            rc = igw_json_string(j, &v->body), v->has_body = true;
        else if (key_is(k, "body_b64"))
            rc = igw_json_string(j, &v->body), v->has_body = v->body_is_b64 = true;
        else if (key_is(k, "headers"))
            rc = read_headers(j, v);
        else
            rc = skip(j);
        if (rc)
            return -1;
    }
    return more;
}

static int read_expect(igw_json *j, vec *v)
{
    igw_str k;
    int more;
    if (igw_json_object_begin(j))
        return -1;
    v->has_expect = true;
    while ((more = igw_json_object_next(j, &k)) == 1) {
        int rc;
        if (key_is(k, "status"))
            rc = igw_json_int(j, &v->status, 100, 599);
        else if (key_is(k, "code"))
            rc = igw_json_int(j, &v->code, 0, IGW_JSON_SAFE_MAX);
        else if (key_is(k, "path"))
            rc = igw_json_string(j, &v->expect_path);
        else
            rc = skip(j);
        if (rc)
            return -1;
    }
    return more;
}

static void run_route_vector(const char *file, vec *v, igw_arena *a)
{
    igw_str body = v->body;
    if (v->body_is_b64 && b64_decode(a, v->body, &body)) {
        fail_vec(file, v->id, "%s%s", "bad body_b64", "");
        return;
    }
    igw_request req;
    igw_decode_error err;
    memset(&err, 0, sizeof err);
    int64_t status = 200, code = igw_error_classes[IGW_ERR_FOR_OK_ROLE].code;
    const char *path = "";
    igw_http_request in = {v->method, v->path, v->headers, v->nheaders, body};
    if (igw_request_decode(&igw_gen_api, &req, &in, a, &err) != 0) {
        status = igw_error_classes[err.cls].http;
        code = igw_error_classes[err.cls].code;
        path = err.path;
    }
    char want[600], got[600];
    snprintf(want, sizeof want, "%lld %lld \"%.*s\"", (long long)v->status, (long long)v->code,
             (int)v->expect_path.len, v->expect_path.ptr);
    snprintf(got, sizeof got, "%lld %lld \"%s\"%s%s", (long long)status, (long long)code, path,
             err.reason ? " reason: " : "", err.reason ? err.reason : "");
    if (status != v->status || code != v->code || strlen(path) != v->expect_path.len ||
        memcmp(path, v->expect_path.ptr, v->expect_path.len) != 0)
        fail_vec(file, v->id, "expected %s, got %s", want, got);
    else
        passed++;
}

/* ---- machine vectors ---- */

static const igw_sm *machine_named(igw_str name)
{
    for (size_t i = 0; i < IGW_SM_COUNT; i++)
        if (key_is(name, igw_sm_all[i]->name))
            return igw_sm_all[i];
    return NULL;
}

static char *cstr(igw_arena *a, igw_str s) { return igw_arena_strndup(a, s.ptr, s.len); }

/* Reads one step and fires it; returns -1 on a malformed vector. */
static int run_step(igw_json *j, const igw_sm *m, int *state, igw_arena *a, const char *file, igw_str id,
                    bool *ok)
{
    igw_str k, trigger = {NULL, 0}, want_state = {NULL, 0}, want_err = {NULL, 0};
    uint32_t guards = 0;
    int more;
    if (igw_json_object_begin(j))
        return -1;
    while ((more = igw_json_object_next(j, &k)) == 1) {
        if (key_is(k, "trigger")) {
            if (igw_json_string(j, &trigger))
                return -1;
        } else if (key_is(k, "guards")) {
            if (igw_json_array_begin(j))
                return -1;
            int r;
            while ((r = igw_json_array_next(j)) == 1) {
                igw_str g;
                if (igw_json_string(j, &g))
                    return -1;
                int gi = igw_sm_guard(m, cstr(a, g));
                if (gi < 0)
                    return -1;
                guards |= UINT32_C(1) << gi;
            }
            if (r < 0)
                return -1;
        } else if (key_is(k, "expect")) {
            igw_str ek;
            int emore;
            if (igw_json_object_begin(j))
                return -1;
            while ((emore = igw_json_object_next(j, &ek)) == 1) {
                if (key_is(ek, "state")) {
                    if (igw_json_string(j, &want_state))
                        return -1;
                } else if (key_is(ek, "error")) {
                    if (igw_json_string(j, &want_err))
                        return -1;
                } else if (skip(j)) {
                    return -1;
                }
            }
            if (emore < 0)
                return -1;
        } else if (skip(j)) {
            return -1;
        }
    }
    if (more < 0 || !trigger.ptr || !want_state.ptr)
        return -1;
    int t = igw_sm_trigger(m, cstr(a, trigger));
    if (t < 0)
        return -1;
    igw_sm_result r = igw_sm_fire(m, *state, t, guards);
    const char *got_err = r.ok ? "" : igw_error_classes[r.err].name;
    if (!key_is(want_state, m->states[r.next]) ||
        !(want_err.ptr ? key_is(want_err, got_err) : r.ok)) {
        char want[160], got[160];
        snprintf(want, sizeof want, "%.*s %.*s", (int)want_state.len, want_state.ptr, (int)want_err.len,
                 want_err.ptr ? want_err.ptr : "");
        snprintf(got, sizeof got, "%s %s (trigger %.*s)", m->states[r.next], got_err, (int)trigger.len, trigger.ptr);
        fail_vec(file, id, "expected %s, got %s", want, got);
        *ok = false;
    }
    *state = r.next;
    return 0;
}

/* ---- protocol vectors ---- */

static const igw_protocol *protocol_named(igw_str name)
{
    static const igw_protocol *const all[] = {&igw_proto_device};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (key_is(name, all[i]->name))
            return all[i];
    return NULL;
}

static const char *const proto_status_names[] = {"found", "no_handle", "no_type", "no_method"};

/* One protocol vector: {"protocol","handle","type","method","expect":{"status",
 * "reply","check","returns"}}; the lookup must give exactly the expectation. */
static int run_protocol(igw_json *j, igw_str id, const char *file)
{
    igw_str k, name = {0}, h = {0}, t = {0}, m = {0}, st = {0}, reply = {0}, check = {0}, returns = {0};
    int more;
    while ((more = igw_json_object_next(j, &k)) == 1) {
        int rc = 0;
        if (key_is(k, "protocol"))
            rc = igw_json_string(j, &name);
        else if (key_is(k, "handle"))
            rc = igw_json_string(j, &h);
        else if (key_is(k, "type"))
            rc = igw_json_string(j, &t);
        else if (key_is(k, "method"))
            rc = igw_json_string(j, &m);
        else if (key_is(k, "expect")) {
            igw_str ek;
            int emore;
            if (igw_json_object_begin(j))
                return -1;
            while ((emore = igw_json_object_next(j, &ek)) == 1) {
                if (key_is(ek, "status"))
                    rc = igw_json_string(j, &st);
                else if (key_is(ek, "reply"))
                    rc = igw_json_string(j, &reply);
                else if (key_is(ek, "check"))
                    rc = igw_json_string(j, &check);
                else if (key_is(ek, "returns"))
                    rc = igw_json_string(j, &returns);
                else
                    rc = skip(j);
                if (rc)
                    return -1;
            }
            if (emore < 0)
                return -1;
        } else if (key_is(k, "id"))
            rc = igw_json_string(j, &id);
        else
            rc = skip(j);
        if (rc)
            return -1;
    }
    const igw_protocol *p = protocol_named(name);
    if (more < 0 || !p || !h.ptr || !t.ptr || !m.ptr || !st.ptr)
        return -1;
    const igw_proto_row *row = NULL;
    igw_proto_status got = igw_proto_find(p, h.ptr, h.len, t.ptr, t.len, m.ptr, m.len, &row);
    bool ok = key_is(st, proto_status_names[got]);
    if (ok && got == IGW_PROTO_FOUND)
        ok = reply.ptr && key_is(reply, row->reply ? row->reply : "") &&
             key_is(check, igw_proto_check_names[row->check]) && key_is(returns, igw_proto_returns_names[row->returns]);
    if (ok && got == IGW_PROTO_FOUND) /* the row's enums name what the vector does (none for `*`) */
        ok = row->method_id == (int)(strcmp(row->method, "*") ? igw_proto_method_of(m) : IGW_PROTO_M__NONE) &&
             row->type_id == (int)(strcmp(row->type, "*") ? igw_proto_type_of(t) : IGW_PROTO_T__NONE) &&
             row->reply_id == (int)(row->reply ? igw_proto_method_of(reply) : IGW_PROTO_M__NONE) &&
             row->method_id != IGW_PROTO_M__COUNT;
    if (ok)
        passed++;
    else {
        char want[64];
        snprintf(want, sizeof want, "%.*s", (int)(st.len < 40 ? st.len : 40), st.ptr);
        fail_vec(file, id, "expected %s, got %s (or a different reply/check/returns)", want, proto_status_names[got]);
    }
    return 0;
}

static int run_line(const char *file, const char *line, size_t len, igw_arena *a)
{
    igw_json j;
    igw_json_init(&j, line, len, a, 32);
    vec v;
    memset(&v, 0, sizeof v);
    igw_str k, machine = {NULL, 0};
    const char *steps_at = NULL;
    size_t steps_len = 0;
    int more;
    if (igw_json_object_begin(&j))
        return -1;
    while ((more = igw_json_object_next(&j, &k)) == 1) {
        int rc;
        if (key_is(k, "id"))
            rc = igw_json_string(&j, &v.id);
        else if (key_is(k, "request"))
            rc = read_request(&j, &v);
        else if (key_is(k, "expect"))
            rc = read_expect(&j, &v);
        else if (key_is(k, "machine"))
            rc = igw_json_string(&j, &machine);
        else if (key_is(k, "protocol")) {
            /* A protocol vector: re-read the line from the start. */
            igw_json pj;
            igw_json_init(&pj, line, len, a, 32);
            if (igw_json_object_begin(&pj))
                return -1;
            return run_protocol(&pj, v.id, file);
        }
        else if (key_is(k, "steps")) {
            igw_str raw;
            rc = igw_json_value(&j, IGW_JSON_RFC8259, 16, SIZE_MAX, &raw);
            steps_at = raw.ptr;
            steps_len = raw.len;
        } else if (key_is(k, "generated_by"))
            return 0; /* header line */
        else
            rc = skip(&j);
        if (rc)
            return -1;
    }
    if (more < 0 || igw_json_finish(&j))
        return -1;
    if (machine.ptr) {
        const igw_sm *m = machine_named(machine);
        if (!m || !steps_at)
            return -1;
        igw_json s;
        igw_json_init(&s, steps_at, steps_len, a, 16);
        int state = 0, r;
        bool ok = true;
        if (igw_json_array_begin(&s))
            return -1;
        while (ok && (r = igw_json_array_next(&s)) == 1)
            if (run_step(&s, m, &state, a, file, v.id, &ok))
                return -1;
        if (ok)
            passed++;
        return 0;
    }
    if (!v.id.ptr || !v.method.ptr || !v.path.ptr || !v.has_body || !v.has_expect)
        return -1;
    if (seed_dir) {
        igw_str body = v.body;
        if (v.body_is_b64 && b64_decode(a, v.body, &body))
            return -1;
        char name[4096];
        snprintf(name, sizeof name, "%s/%04d", seed_dir, nseeds++);
        FILE *f = fopen(name, "wb");
        if (!f)
            return -1;
        size_t w = body.len ? fwrite(body.ptr, 1, body.len, f) : 0;
        if (fclose(f) != 0 || w != body.len)
            return -1;
        return 0;
    }
    run_route_vector(file, &v, a);
    return 0;
}

int main(int argc, char **argv)
{
    char *line = malloc(MAX_LINE);
    if (!line)
        return 2;
    igw_arena a;
    igw_arena_init(&a, 0);
    int malformed = 0, first = 1;
    if (argc > 2 && strcmp(argv[1], "--seeds") == 0) {
        seed_dir = argv[2];
        first = 3;
    }
    for (int i = first; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 2;
        }
        int lineno = 0;
        while (fgets(line, MAX_LINE, f)) {
            lineno++;
            size_t len = strlen(line);
            if (len && line[len - 1] == '\n')
                line[--len] = '\0';
            else if (!feof(f)) {
                fprintf(stderr, "%s:%d: line too long\n", argv[i], lineno);
                malformed++;
                break;
            }
            if (len == 0)
                continue;
            if (run_line(argv[i], line, len, &a) != 0) {
                fprintf(stderr, "%s:%d: malformed vector\n", argv[i], lineno);
                malformed++;
            }
            igw_arena_reset(&a);
        }
        fclose(f);
    }
    igw_arena_free(&a);
    free(line);
    if (seed_dir) {
        printf("seeds: %d bodies written to %s\n", nseeds, seed_dir);
        return malformed ? 1 : 0;
    }
    printf("conformance: %d passed, %d failed, %d malformed\n", passed, failures, malformed);
    return failures || malformed || passed == 0 ? 1 : 0;
}
