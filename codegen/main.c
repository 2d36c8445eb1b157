/* main.c - igw-gen: schema files in, generated code and artefacts out.
 *
 *   igw-gen [-o GEN_DIR] [-d DOCS_DIR] [--check-only] FILE.igw...
 *
 * Exit 0 on success, 1 on schema errors (ninja-style messages on stderr),
 * 2 on usage or I/O errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "parser.h"
#include "sema.h"
#include "util.h"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = igw_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > (64u << 20)) { /* a schema file is small; refuse absurd input */
                free(buf);
                fclose(f);
                errno = EFBIG;
                return NULL;
            }
            cap *= 2;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void usage(void)
{
    fputs("usage: igw-gen [-o GEN_DIR] [-d DOCS_DIR] [--check-only] FILE.igw...\n", stderr);
}

int main(int argc, char **argv)
{
    const char *gen_dir = "generated", *docs_dir = "docs";
    bool check_only = false;
    /* The model lives until exit (the process is short-lived); emitters'
     * temporaries are scratch strings released below. */
    static igw_schema s;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            gen_dir = argv[++i];
        } else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
            docs_dir = argv[++i];
        } else if (strcmp(argv[i], "--check-only") == 0) {
            check_only = true;
        } else if (argv[i][0] == '-') {
            usage();
            return 2;
        } else {
            igw_vec_push(&s.files, argv[i]);
        }
    }
    if (s.files.n == 0) {
        usage();
        return 2;
    }
    int parse_failed = 0;
    for (int i = 0; i < s.files.n; i++) {
        const char *path = IGW_VEC_AT(s.files, char, i);
        size_t len = 0;
        char *text = read_file(path, &len);
        if (!text) {
            fprintf(stderr, "igw-gen: cannot read %s: %s\n", path, strerror(errno));
            return 2;
        }
        igw_diag_source(path, text, len); /* diagnostics quote it until exit */
        if (igw_parse(&s, path, text, len) != 0)
            parse_failed = 1;
    }
    if (parse_failed || igw_sema(&s) != 0) {
        fprintf(stderr, "igw-gen: %d error%s\n", igw_diag_count(), igw_diag_count() == 1 ? "" : "s");
        return 1;
    }
    if (check_only)
        return 0;
    int rc = igw_emit_c(&s, gen_dir) || igw_emit_machines(&s, gen_dir, docs_dir) || igw_emit_sql(&s, gen_dir) ||
             igw_emit_vectors(&s, gen_dir) || igw_emit_openapi(&s, gen_dir) || igw_emit_protocol(&s, gen_dir) ||
             igw_emit_bind(&s, gen_dir) || igw_emit_apidoc(&s, docs_dir) || igw_emit_paths(&s, gen_dir) ||
             igw_emit_state_sql(&s, gen_dir);
    igw_scratch_release();
    return rc ? 2 : 0;
}
