/* json_suite_test.c - runs the JSONTestSuite parsing corpus.
 *
 * Usage: json_suite_test DIR [-v]   (DIR = .../JSONTestSuite/test_parsing)
 *
 * n_*.json must be refused by both profiles; y_*.json accepted by RFC8259
 * and by STRICT except the files listed in strict_refused[]; every i_*.json
 * must appear in i_decisions[], which records what each profile does with it.
 * Every accepted document is also canonicalized: the output must validate
 * and canonicalizing it again must give the same bytes. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "json.h"
#include "jw.h"

#define MAX_FILE_BYTES ((size_t)4 << 20) /* the largest corpus file is 250 kB */
#define MAX_FILES 4096
#define DEPTH 64

typedef struct decision {
    const char *name;
    igw_json_errkind strict; /* IGW_JERR_NONE: accepted */
    igw_json_errkind rfc;
    int seen;
} decision;

/* y_ files that STRICT refuses on purpose. */
static decision strict_refused[] = {
    {"y_object_duplicated_key.json", IGW_JERR_DUPLICATE, IGW_JERR_NONE, 0},
    {"y_object_duplicated_key_and_value.json", IGW_JERR_DUPLICATE, IGW_JERR_NONE, 0},
    /* No C string, SQL text or PostgreSQL jsonb can hold U+0000. */
    {"y_object_escaped_null_in_key.json", IGW_JERR_FORMAT, IGW_JERR_NONE, 0},
    {"y_string_null_escape.json", IGW_JERR_FORMAT, IGW_JERR_NONE, 0},
};

/* The implementation-defined cases, decided. Numbers beyond the safe
 * integer range or outside the finite doubles are RANGE in STRICT and fine
 * in RFC8259; broken Unicode is refused by both, as are byte order marks,
 * UTF-16 input and nesting beyond the depth limit. */
static decision i_decisions[] = {
    {"i_number_double_huge_neg_exp.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_number_huge_exp.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_number_neg_int_huge_exp.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_number_pos_double_huge_exp.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_number_real_neg_overflow.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_number_real_pos_overflow.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_number_real_underflow.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_number_too_big_neg_int.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_number_too_big_pos_int.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_number_very_big_negative_int.json", IGW_JERR_RANGE, IGW_JERR_NONE, 0},
    {"i_object_key_lone_2nd_surrogate.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_1st_surrogate_but_2nd_missing.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_1st_valid_surrogate_2nd_invalid.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_UTF-16LE_with_BOM.json", IGW_JERR_SYNTAX, IGW_JERR_SYNTAX, 0},
    {"i_string_UTF-8_invalid_sequence.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_UTF8_surrogate_U+D800.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_incomplete_surrogate_and_escape_valid.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_incomplete_surrogate_pair.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_incomplete_surrogates_escape_valid.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_invalid_lonely_surrogate.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_invalid_surrogate.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_invalid_utf-8.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_inverted_surrogates_U+1D11E.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_iso_latin_1.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_lone_second_surrogate.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_lone_utf8_continuation_byte.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_not_in_unicode_range.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_overlong_sequence_2_bytes.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_overlong_sequence_6_bytes.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_overlong_sequence_6_bytes_null.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_truncated-utf-8.json", IGW_JERR_UTF8, IGW_JERR_UTF8, 0},
    {"i_string_utf16BE_no_BOM.json", IGW_JERR_SYNTAX, IGW_JERR_SYNTAX, 0},
    {"i_string_utf16LE_no_BOM.json", IGW_JERR_SYNTAX, IGW_JERR_SYNTAX, 0},
    {"i_structure_500_nested_arrays.json", IGW_JERR_DEPTH, IGW_JERR_DEPTH, 0},
    {"i_structure_UTF-8_BOM_empty_object.json", IGW_JERR_SYNTAX, IGW_JERR_SYNTAX, 0},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int verbose;

static decision *lookup(decision *table, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

/* Reads at most MAX_FILE_BYTES; returns NULL (and says why) otherwise. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    char *buf = malloc(MAX_FILE_BYTES + 1);
    size_t n = buf != NULL ? fread(buf, 1, MAX_FILE_BYTES + 1, f) : 0;
    int bad = buf == NULL || ferror(f) || n > MAX_FILE_BYTES;
    if (fclose(f) != 0)
        bad = 1;
    if (bad) {
        fprintf(stderr, "%s: unreadable or larger than %zu bytes\n", path, MAX_FILE_BYTES);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* Validates in `profile` and checks the outcome is `want` (NONE: accepted;
 * for n_ files any failure is fine: want_any_failure). */
static int check(const char *name, const char *buf, size_t len, igw_json_profile profile,
                 igw_json_errkind want, int want_any_failure, igw_arena *a)
{
    igw_json j;
    igw_arena_reset(a);
    int rc = igw_json_validate(buf, len, profile, DEPTH, a, &j);
    const char *pname = profile == IGW_JSON_STRICT ? "strict" : "rfc8259";
    int ok = want_any_failure ? rc < 0 && j.err != IGW_JERR_NONE
                              : (rc == 0) == (want == IGW_JERR_NONE) && j.err == want;
    if (!ok)
        printf("FAIL %s [%s]: want %s, got %s (%s) at \"%s\" offset %zu\n", name, pname,
               want_any_failure ? "any failure" : igw_json_errkind_name(want),
               igw_json_errkind_name(j.err), j.reason, j.path, j.err_offset);
    else if (verbose)
        printf("ok   %s [%s]: %s %s\n", name, pname, igw_json_errkind_name(j.err), j.reason);
    return ok;
}

static int canonical_refuses(const char *buf, size_t len)
{
    igw_jw w;
    igw_jw_init(&w);
    int refused = igw_jw_canonical(&w, buf, len) != 0;
    igw_jw_free(&w);
    return refused;
}

/* Canonical form must validate and be a fixed point. */
static int check_canonical(const char *name, const char *buf, size_t len, igw_arena *a)
{
    igw_jw w1, w2;
    igw_jw_init(&w1);
    igw_jw_init(&w2);
    int ok = igw_jw_canonical(&w1, buf, len) == 0 && igw_jw_status(&w1) == 0;
    if (ok) {
        igw_json j;
        igw_arena_reset(a);
        ok = igw_json_validate(w1.buf, w1.len, IGW_JSON_RFC8259, DEPTH, a, &j) == 0 &&
             igw_jw_canonical(&w2, w1.buf, w1.len) == 0 && w1.len == w2.len &&
             memcmp(w1.buf, w2.buf, w1.len) == 0;
    }
    if (!ok)
        printf("FAIL %s: canonical form invalid or not idempotent\n", name);
    igw_jw_free(&w1);
    igw_jw_free(&w2);
    return ok;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s JSONTestSuite/test_parsing [-v]\n", argv[0]);
        return 2;
    }
    verbose = argc > 2 && strcmp(argv[2], "-v") == 0;
    const char *dir = argv[1];

    DIR *d = opendir(dir);
    if (d == NULL) {
        perror(dir);
        return 2;
    }
    static char *names[MAX_FILES];
    size_t nnames = 0;
    struct dirent *e;
    int status = 0;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0)
            continue;
        if (nnames == MAX_FILES) {
            fprintf(stderr, "%s: more than %d files\n", dir, MAX_FILES);
            status = 2;
            break;
        }
        if ((names[nnames] = strdup(e->d_name)) == NULL) {
            fprintf(stderr, "out of memory\n");
            status = 2;
            break;
        }
        nnames++;
    }
    if (closedir(d) != 0)
        status = 2;
    qsort(names, nnames, sizeof(char *), cmp_names);

    igw_arena arena;
    igw_arena_init(&arena, (size_t)64 << 20);
    unsigned passed = 0, failed = 0, ny = 0, nn = 0, ni = 0;
    for (size_t f = 0; status == 0 && f < nnames; f++) {
        const char *name = names[f];
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
            printf("FAIL %s: path too long\n", name);
            failed++;
            continue;
        }
        size_t len;
        char *buf = read_file(path, &len);
        if (buf == NULL) {
            failed++;
            continue;
        }
        int ok = 1;
        if (name[0] == 'n' && name[1] == '_') {
            nn++;
            ok &= check(name, buf, len, IGW_JSON_RFC8259, IGW_JERR_NONE, 1, &arena);
            ok &= check(name, buf, len, IGW_JSON_STRICT, IGW_JERR_NONE, 1, &arena);
        } else if (name[0] == 'y' && name[1] == '_') {
            ny++;
            decision *dec = lookup(strict_refused, COUNT(strict_refused), name);
            if (dec != NULL)
                dec->seen = 1;
            ok &= check(name, buf, len, IGW_JSON_RFC8259, IGW_JERR_NONE, 0, &arena);
            ok &= check(name, buf, len, IGW_JSON_STRICT, dec ? dec->strict : IGW_JERR_NONE, 0,
                        &arena);
            /* the canonical writer reads like the decoders: no U+0000 */
            if (!dec || dec->strict != IGW_JERR_FORMAT)
                ok &= check_canonical(name, buf, len, &arena);
            else
                ok &= canonical_refuses(buf, len);
        } else if (name[0] == 'i' && name[1] == '_') {
            ni++;
            decision *dec = lookup(i_decisions, COUNT(i_decisions), name);
            if (dec == NULL) {
                printf("FAIL %s: no recorded decision in i_decisions[]\n", name);
                ok = 0;
            } else {
                dec->seen = 1;
                ok &= check(name, buf, len, IGW_JSON_STRICT, dec->strict, 0, &arena);
                ok &= check(name, buf, len, IGW_JSON_RFC8259, dec->rfc, 0, &arena);
                if (dec->rfc == IGW_JERR_NONE)
                    ok &= check_canonical(name, buf, len, &arena);
            }
        } else {
            printf("FAIL %s: not a y_, n_ or i_ file\n", name);
            ok = 0;
        }
        free(buf);
        if (ok)
            passed++;
        else
            failed++;
    }
    for (size_t i = 0; i < COUNT(strict_refused); i++)
        if (!strict_refused[i].seen) {
            printf("FAIL %s: listed in strict_refused[] but missing\n", strict_refused[i].name);
            failed++;
        }
    for (size_t i = 0; i < COUNT(i_decisions); i++)
        if (!i_decisions[i].seen) {
            printf("FAIL %s: listed in i_decisions[] but missing\n", i_decisions[i].name);
            failed++;
        }
    for (size_t f = 0; f < nnames; f++)
        free(names[f]);
    igw_arena_free(&arena);
    if (nnames == 0) {
        printf("FAIL %s: no .json files\n", dir);
        failed++;
    }
    printf("json_suite: %u passed, %u failed (%u y, %u n, %u i)\n", passed, failed, ny, nn, ni);
    return status != 0 ? status : failed != 0;
}
