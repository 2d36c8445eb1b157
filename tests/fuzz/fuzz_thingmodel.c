/* fuzz_thingmodel.c - libFuzzer harness of the thing-model loader and the
 * validators it drives (property reports and controls, events, action input
 * and output).
 *
 * Input: MODEL \0 KIND ID \0 DOCUMENT, where KIND is one byte (its value
 * modulo 5 picks properties, control, event, action input, action output).
 * An empty MODEL stands for tests/lib/demo-model.json (its path given at
 * build time as IGW_FUZZ_MODEL, read once at start), so seeds made of a
 * document alone reach the validators; without a first NUL the whole input
 * is a model.
 *
 * Invariants, each an abort() when broken:
 * - a refused model names a reason and a JSON Pointer path;
 * - every member of a loaded model is found again by its identifier, and
 *   the lists are sorted (lookups bisect them);
 * - a refused document names a reason and a path under the prefix given;
 * - validation is deterministic: the same document checked twice agrees. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "fuzz.h"
#include "json.h"
#include "thingmodel.h"

static char DEMO[1 << 16];
static size_t demo_len;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    FILE *f = fopen(IGW_FUZZ_MODEL, "rb");
    REQUIRE(f);
    demo_len = fread(DEMO, 1, sizeof DEMO, f);
    REQUIRE(demo_len > 0 && demo_len < sizeof DEMO && !ferror(f));
    fclose(f);
    return 0;
}

static int check(const igw_thingmodel *m, int kind, const char *id, size_t idn, const char *doc, size_t n,
                 igw_arena *a, igw_json *e)
{
    switch (kind) {
    case 0: return igw_thingmodel_check_properties(m, doc, n, 0, "/params", a, e);
    case 1: return igw_thingmodel_check_properties(m, doc, n, IGW_TM_WRITABLE_ONLY, "/params", a, e);
    case 2: return igw_thingmodel_check_event(m, id, idn, doc, n, "/params", a, e);
    case 3: return igw_thingmodel_check_action_input(m, id, idn, doc, n, "/input", a, e);
    default: return igw_thingmodel_check_action_output(m, id, idn, doc, n, "/output", a, e);
    }
}

static void check_model(const igw_thingmodel *m)
{
    const igw_tm_list *p = &m->properties;
    for (uint32_t i = 0; i < p->n; i++) {
        const igw_tm_member *x = &p->items[i];
        REQUIRE(igw_thingmodel_property(m, x->id.ptr, x->id.len) == x);
        REQUIRE(i == 0 || strcmp(p->items[i - 1].id.ptr, x->id.ptr) < 0);
    }
    for (uint32_t i = 0; i < m->nevents; i++) {
        const igw_tm_event *x = &m->events[i];
        REQUIRE(igw_thingmodel_event(m, x->id.ptr, x->id.len) == x);
        REQUIRE(i == 0 || strcmp(m->events[i - 1].id.ptr, x->id.ptr) < 0);
    }
    for (uint32_t i = 0; i < m->nactions; i++) {
        const igw_tm_action *x = &m->actions[i];
        REQUIRE(igw_thingmodel_action(m, x->id.ptr, x->id.len) == x);
        REQUIRE(i == 0 || strcmp(m->actions[i - 1].id.ptr, x->id.ptr) < 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *end = in + size;
    const char *nul = memchr(in, 0, size);
    const char *model = in;
    size_t model_len = nul ? (size_t)(nul - in) : size;
    if (nul && model_len == 0) {
        model = DEMO;
        model_len = demo_len;
    }

    igw_arena a;
    igw_arena_init(&a, 1 << 22);
    igw_thingmodel *m = NULL;
    igw_json err;
    memset(&err, 0, sizeof err);
    if (igw_thingmodel_load(model, model_len, &a, &m, &err) != 0) {
        REQUIRE(err.reason && err.reason[0]);
        REQUIRE(err.path[0] == '\0' || err.path[0] == '/');
        igw_arena_free(&a);
        return 0;
    }
    REQUIRE(m);
    check_model(m);
    if (!nul || nul + 1 >= end) {
        igw_arena_free(&a);
        return 0;
    }

    const char *p = nul + 1;
    int kind = (unsigned char)*p++ % 5;
    const char *idnul = memchr(p, 0, (size_t)(end - p));
    const char *id = p;
    size_t idn = idnul ? (size_t)(idnul - p) : (size_t)(end - p);
    const char *doc = idnul ? idnul + 1 : end;
    size_t n = (size_t)(end - doc);

    static const char *const prefix[] = {"/params", "/params", "/params", "/input", "/output"};
    igw_arena scratch;
    igw_arena_init(&scratch, 1 << 22);
    igw_json e1, e2;
    memset(&e1, 0, sizeof e1);
    memset(&e2, 0, sizeof e2);
    int r1 = check(m, kind, id, idn, doc, n, &scratch, &e1);
    char reason1[512] = "";
    if (r1 != 0) { /* a dynamic reason lives in the scratch arena: keep a copy */
        REQUIRE(e1.reason && e1.reason[0]);
        snprintf(reason1, sizeof reason1, "%s", e1.reason);
    }
    igw_arena_reset(&scratch);
    int r2 = check(m, kind, id, idn, doc, n, &scratch, &e2);
    REQUIRE(r1 == r2);
    if (r1 != 0) {
        REQUIRE(e2.reason && strncmp(reason1, e2.reason, sizeof reason1 - 1) == 0);
        REQUIRE(strcmp(e1.path, e2.path) == 0);
        REQUIRE(strncmp(e1.path, prefix[kind], strlen(prefix[kind])) == 0);
    }
    igw_arena_free(&scratch);
    igw_arena_free(&a);
    return 0;
}
