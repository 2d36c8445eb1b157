/* fuzz_json.c - libFuzzer harness for the JSON scanner and canonical writer.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/rt -Isrc/lib \
 *         src/rt/{arena,json,jw}.c tests/fuzz/fuzz_json.c -o fuzz_json
 *   ./fuzz_json -max_total_time=30 [corpus dir]
 *
 * With -DIGW_FUZZ_STANDALONE it builds without libFuzzer and replays the
 * files named on the command line (for gcc builds and regression runs).
 *
 * Invariants, each an abort() when broken:
 * - a failure always records a kind, a reason, an offset within the input
 *   and a terminated path; a success records none;
 * - STRICT accepts nothing RFC8259 refuses;
 * - igw_json_value's byte bound is exact: a value of span L passes with
 *   max_bytes L and fails with SIZE at L - 1;
 * - canonicalization succeeds exactly on RFC8259-valid input, its output
 *   validates in every profile the input did, and is a fixed point. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "fuzz.h"
#include "json.h"
#include "jw.h"

#define DEPTH IGW_JSON_MAX_DEPTH

static igw_arena arena;

static void check_outcome(const igw_json *j, int rc, size_t size)
{
    if (rc == 0) {
        REQUIRE(j->err == IGW_JERR_NONE);
        return;
    }
    REQUIRE(rc == -1 && j->err != IGW_JERR_NONE && j->reason != NULL && j->reason[0] != '\0');
    REQUIRE(j->err_offset <= size);
    REQUIRE(memchr(j->path, '\0', sizeof j->path) != NULL);
}

static int validate(const uint8_t *data, size_t size, igw_json_profile profile)
{
    igw_json j;
    igw_arena_reset(&arena);
    int rc = igw_json_validate(data, size, profile, DEPTH, &arena, &j);
    check_outcome(&j, rc, size);
    return rc;
}

/* The exact-bound check of igw_json_value on a valid document. */
static void check_window(const uint8_t *data, size_t size)
{
    igw_json j;
    igw_str raw, raw2;
    igw_arena_reset(&arena);
    igw_json_init(&j, data, size, &arena, DEPTH);
    REQUIRE(igw_json_value(&j, IGW_JSON_RFC8259, DEPTH, SIZE_MAX, &raw) == 0);
    REQUIRE(raw.len > 0 && raw.len <= size);

    igw_json_init(&j, data, size, &arena, DEPTH);
    REQUIRE(igw_json_value(&j, IGW_JSON_RFC8259, DEPTH, raw.len, &raw2) == 0);
    REQUIRE(raw2.ptr == raw.ptr && raw2.len == raw.len && igw_json_finish(&j) == 0);

    igw_json_init(&j, data, size, &arena, DEPTH);
    int rc = igw_json_value(&j, IGW_JSON_RFC8259, DEPTH, raw.len - 1, &raw2);
    check_outcome(&j, rc, size);
    REQUIRE(rc == -1 && j.err == IGW_JERR_SIZE && j.depth == 0 && j.nseg == 0);
}

/* Whether the bytes hold the text \u0000 (a necessary condition). */
static int has_nul_escape(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 6 <= n; i++)
        if (memcmp(p + i, "\\u0000", 6) == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        igw_arena_init(&arena, (size_t)256 << 20);
        ready = 1;
    }
    int rfc = validate(data, size, IGW_JSON_RFC8259);
    int strict = validate(data, size, IGW_JSON_STRICT);
    REQUIRE(strict != 0 || rfc == 0);

    igw_jw w1, w2;
    igw_jw_init(&w1);
    igw_jw_init(&w2);
    int c1 = igw_jw_canonical(&w1, (const char *)data, size);
    if (rfc != 0) {
        REQUIRE(c1 == -1 && w1.len == 0);
    } else if (igw_jw_status(&w1) == 0 && c1 != 0) {
        /* The canonical writer reads like the decoders: U+0000 refused. */
        REQUIRE(strict != 0 && has_nul_escape(data, size));
    } else if (igw_jw_status(&w1) == 0) { /* an allocation failure is no verdict */
        REQUIRE(c1 == 0);
        check_window(data, size);
        REQUIRE(validate((const uint8_t *)w1.buf, w1.len, IGW_JSON_RFC8259) == 0);
        if (strict == 0)
            REQUIRE(validate((const uint8_t *)w1.buf, w1.len, IGW_JSON_STRICT) == 0);
        int c2 = igw_jw_canonical(&w2, w1.buf, w1.len);
        if (igw_jw_status(&w2) == 0)
            REQUIRE(c2 == 0 && w2.len == w1.len && memcmp(w1.buf, w2.buf, w1.len) == 0);
    }
    igw_jw_free(&w1);
    igw_jw_free(&w2);
    return 0;
}

#ifdef IGW_FUZZ_STANDALONE
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (f == NULL) {
            perror(argv[i]);
            return 1;
        }
        static uint8_t buf[1 << 22];
        size_t n = fread(buf, 1, sizeof buf, f);
        int bad = ferror(f) || !feof(f);
        if (fclose(f) != 0 || bad) {
            fprintf(stderr, "%s: unreadable or too large\n", argv[i]);
            return 1;
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    igw_arena_free(&arena);
    printf("fuzz_json: %d inputs replayed\n", argc - 1);
    return 0;
}
#endif
