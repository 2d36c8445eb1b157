/* util.c - see util.h. */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void oom(void)
{
    fputs("igw-gen: out of memory\n", stderr);
    exit(3);
}

void *igw_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *igw_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

char *igw_xstrndup(const char *s, size_t n)
{
    char *p = igw_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *igw_xstrdup(const char *s) { return igw_xstrndup(s, strlen(s)); }

char *igw_xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom();
    char *p = igw_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void igw_vec_push(igw_vec *vec, void *item)
{
    if (vec->n == vec->cap) {
        int cap = vec->cap ? vec->cap * 2 : 8;
        void **v = realloc(vec->v, (size_t)cap * sizeof *v);
        if (!v)
            oom();
        vec->v = v;
        vec->cap = cap;
    }
    vec->v[vec->n++] = item;
}

/* ---- diagnostics ---- */

typedef struct source {
    const char *file, *text;
    size_t len;
} source;

static source sources[64];
static int nsources;
static int nerrors;

void igw_diag_source(const char *file, const char *text, size_t len)
{
    if (nsources < (int)(sizeof sources / sizeof sources[0]))
        sources[nsources++] = (source){file, text, len};
}

int igw_diag_count(void) { return nerrors; }

void igw_diag_error(igw_loc loc, const char *fmt, ...)
{
    va_list ap;
    nerrors++;
    fprintf(stderr, "%s:%d:%d: error: ", loc.file ? loc.file : "<schema>", loc.line, loc.col);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    for (int i = 0; i < nsources; i++) {
        if (!loc.file || strcmp(sources[i].file, loc.file) != 0 || loc.line < 1)
            continue;
        const char *p = sources[i].text, *end = p + sources[i].len;
        for (int line = 1; line < loc.line && p < end; p++)
            if (*p == '\n')
                line++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        fprintf(stderr, "%.*s\n", (int)(eol - p), p);
        /* Tabs are kept so the caret lines up under the same columns. */
        for (int c = 1; c < loc.col && p + c - 1 < eol; c++)
            fputc(p[c - 1] == '\t' ? '\t' : ' ', stderr);
        fputs("^\n", stderr);
        break;
    }
}

/* ---- output ---- */

void igw_out_init(igw_out *o) { memset(o, 0, sizeof *o); }
void igw_out_free(igw_out *o)
{
    free(o->buf);
    memset(o, 0, sizeof *o);
}

void igw_out_write(igw_out *o, const void *p, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->len + n + 1)
            cap *= 2;
        char *b = realloc(o->buf, cap);
        if (!b)
            oom();
        o->buf = b;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

void igw_out_puts(igw_out *o, const char *s) { igw_out_write(o, s, strlen(s)); }

void igw_out_printf(igw_out *o, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom();
    if ((size_t)n < sizeof small) {
        igw_out_write(o, small, (size_t)n);
        return;
    }
    char *big = igw_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    igw_out_write(o, big, (size_t)n);
    free(big);
}

void igw_out_json_string(igw_out *o, const char *s)
{
    igw_out_write(o, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': igw_out_puts(o, "\\\""); break;
        case '\\': igw_out_puts(o, "\\\\"); break;
        case '\n': igw_out_puts(o, "\\n"); break;
        case '\t': igw_out_puts(o, "\\t"); break;
        case '\r': igw_out_puts(o, "\\r"); break;
        default:
            if (*p < 0x20)
                igw_out_printf(o, "\\u%04x", *p);
            else
                igw_out_write(o, p, 1);
        }
    }
    igw_out_write(o, "\"", 1);
}

void igw_out_c_bytes(igw_out *o, const char *s, size_t n)
{
    igw_out_write(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            igw_out_printf(o, "\\%c", c);
        else if (c == '\n')
            igw_out_puts(o, "\\n");
        else if (c < 0x20 || c >= 0x7f || c == '?')
            igw_out_printf(o, "\\%03o", c); /* octal: never swallows the next char, no trigraphs */
        else
            igw_out_write(o, &c, 1);
    }
    igw_out_write(o, "\"", 1);
}

void igw_out_c_string(igw_out *o, const char *s) { igw_out_c_bytes(o, s, strlen(s)); }

static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            *p = '/';
            return -1;
        }
        *p = '/';
    }
    return 0;
}

int igw_out_save(const igw_out *o, const char *dir, const char *rel)
{
    char *path = igw_xprintf("%s/%s", dir, rel);
    if (mkdirs(path) != 0) {
        fprintf(stderr, "igw-gen: cannot create directories for %s: %s\n", path, strerror(errno));
        free(path);
        return -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "igw-gen: cannot write %s: %s\n", path, strerror(errno));
        free(path);
        return -1;
    }
    size_t n = o->len ? fwrite(o->buf, 1, o->len, f) : 0;
    int bad = n != o->len;
    bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "igw-gen: short write to %s\n", path);
    free(path);
    return bad ? -1 : 0;
}

void igw_out_banner(igw_out *o, const igw_schema *s, const char *comment)
{
    igw_out_printf(o, "%s generated by igw-gen from", comment);
    for (int i = 0; i < s->files.n; i++) {
        const char *f = IGW_VEC_AT(s->files, const char, i);
        const char *base = strrchr(f, '/');
        igw_out_printf(o, " %s", base ? base + 1 : f);
    }
    igw_out_puts(o, "; do not edit\n");
}

static igw_vec scratch;

static const char *scratch_keep(char *s)
{
    igw_vec_push(&scratch, s);
    return s;
}

const char *igw_sprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom();
    char *p = igw_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return scratch_keep(p);
}

void igw_scratch_release(void)
{
    for (int i = 0; i < scratch.n; i++)
        free(scratch.v[i]);
    free(scratch.v);
    memset(&scratch, 0, sizeof scratch);
}

const char *igw_c_ident(const char *name)
{
    char *r = igw_xstrdup(name);
    for (char *p = r; *p; p++)
        if (!isalnum((unsigned char)*p))
            *p = '_';
    return scratch_keep(r);
}

const char *igw_c_upper(const char *name)
{
    char *r = igw_xstrdup(igw_c_ident(name));
    for (char *p = r; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return scratch_keep(r);
}
