/* multipart_test.c - unit tests of the streaming multipart parser (multipart.c).
 *
 * Every body is parsed whole, byte by byte, split in two at every offset and
 * in random chunks; all must give the same events. Events are recorded as a
 * string: "[name]" or "[name|filename]" at part begin, the content bytes,
 * "$" at part end, "!" at done, and "#reason" on the first error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multipart.h"

#include "../check.h"

/* ---- the event recorder ------------------------------------------------------- */

typedef struct rec {
    char *log;
    size_t len, cap;
    const char *buf; /* the fed buffer, to check zero-copy slices */
    size_t buflen;
    int outside;     /* a data slice did not point into buf */
    int stop_begin;  /* stop at the part_begin of this index + 1 */
    int stop_end;    /* stop at the part_end of this index + 1 */
    int ends, dones;
} rec;

static void put(rec *r, const char *s, size_t n)
{
    if (r->len + n + 1 > r->cap) {
        size_t cap = (r->len + n + 1) * 2;
        char *p = realloc(r->log, cap);
        if (!p) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
        r->log = p;
        r->cap = cap;
    }
    memcpy(r->log + r->len, s, n);
    r->len += n;
    r->log[r->len] = '\0';
}

static void puts_(rec *r, const char *s)
{
    put(r, s, strlen(s));
}

static int on_begin(void *ctx, const igw_multipart_part *p)
{
    rec *r = ctx;
    /* The lengths agree with the NUL-terminated copies. */
    if (strlen(p->name) != p->name_len || strlen(p->filename) != p->filename_len ||
        (!p->has_filename && p->filename_len))
        puts_(r, "<BADPART>");
    puts_(r, "[");
    put(r, p->name, p->name_len);
    if (p->has_filename) {
        puts_(r, "|");
        put(r, p->filename, p->filename_len);
    }
    puts_(r, "]");
    return r->stop_begin && (int)p->index + 1 == r->stop_begin;
}

static int on_data(void *ctx, const char *d, size_t n)
{
    rec *r = ctx;
    if (n == 0)
        puts_(r, "<EMPTY>");
    if (r->buf && (d < r->buf || d + n > r->buf + r->buflen))
        r->outside = 1;
    put(r, d, n);
    return 0;
}

static int on_end(void *ctx)
{
    rec *r = ctx;
    puts_(r, "$");
    return r->stop_end && ++r->ends == r->stop_end;
}

static int on_done(void *ctx)
{
    rec *r = ctx;
    r->dones++;
    puts_(r, "!");
    return 0;
}

static const igw_multipart_callbacks CB = {on_begin, on_data, on_end, on_done};

/* ---- running a body -------------------------------------------------------------- */

enum { WHOLE, BYTES, SPLIT, RANDOM };

static uint32_t rng = 12345;

static uint32_t next_rand(void)
{
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}

/* Parses body with boundary b, in the given chunking (split: offset of the
 * cut). Returns the log (caller frees); *rc is finish's result. */
static char *run(const char *b, const char *body, size_t n, int mode, size_t split, int stop_begin,
                 int stop_end, int *rc, rec *out)
{
    rec r;
    memset(&r, 0, sizeof r);
    r.stop_begin = stop_begin;
    r.stop_end = stop_end;
    puts_(&r, "");
    igw_multipart p;
    if (igw_multipart_init(&p, b, strlen(b), &CB, &r) != 0) {
        *rc = -2;
        return r.log;
    }
    int fr = 0;
    size_t i = 0;
    if (mode == WHOLE) {
        r.buf = body;
        r.buflen = n;
        fr = igw_multipart_feed(&p, body, n);
    } else {
        while (i < n) {
            size_t k = mode == BYTES ? 1 : mode == SPLIT ? (i < split ? split - i : n - i)
                                                           : 1 + next_rand() % 97;
            if (k > n - i)
                k = n - i;
            /* A fresh copy per chunk: slices must not outlive it. */
            char *c = malloc(k ? k : 1);
            if (!c)
                exit(2);
            memcpy(c, body + i, k);
            r.buf = c;
            r.buflen = k;
            fr = igw_multipart_feed(&p, c, k);
            memset(c, 0xAA, k);
            free(c);
            i += k;
            if (fr)
                break;
        }
    }
    int fin = igw_multipart_finish(&p);
    /* feed and finish agree, and errors stay */
    if (fr && !fin) {
        puts_(&r, "<FEED-FAILED-FINISH-OK>");
    }
    if (fin) {
        const char *e = igw_multipart_error(&p);
        puts_(&r, "#");
        puts_(&r, e ? e : "<NULL>");
        if (!e || strncmp(e, "multipart: ", 11) != 0)
            puts_(&r, "<BADREASON>");
        if (igw_multipart_feed(&p, "x", 1) != -1 || igw_multipart_error(&p) != e ||
            igw_multipart_finish(&p) != -1)
            puts_(&r, "<ERROR-NOT-STICKY>");
    } else if (igw_multipart_error(&p) != NULL || r.dones != 1) {
        puts_(&r, "<DONE-MISMATCH>");
    }
    *rc = fin;
    if (out)
        *out = r;
    return r.log;
}

static int mismatches;

/* Parses in every chunking; each log must equal want. */
static void expect_ex(int line, const char *b, const char *body, size_t n, const char *want,
                      int stop_begin, int stop_end)
{
    int rc;
    rec whole;
    char *w = run(b, body, n, WHOLE, 0, stop_begin, stop_end, &rc, &whole);
    int ok = strcmp(w, want) == 0 && !whole.outside;
    if (!ok)
        printf("FAIL line %d (whole): got \"%s\" want \"%s\"%s\n", line, w, want,
               whole.outside ? " (slice outside the buffer)" : "");
    free(w);
    CHECK(ok);
    int all = 1;
    for (int mode = BYTES; mode <= RANDOM; mode++) {
        size_t reps = mode == BYTES ? 1 : mode == SPLIT ? n + 1 : 20;
        for (size_t s = 0; s < reps; s++) {
            char *l = run(b, body, n, mode, s, stop_begin, stop_end, &rc, NULL);
            if (strcmp(l, want) != 0) {
                if (all)
                    printf("FAIL line %d (mode %d, %zu): got \"%s\" want \"%s\"\n", line, mode, s,
                           l, want);
                all = 0;
                mismatches++;
            }
            free(l);
        }
    }
    CHECK(all);
}

#define EXPECT(b, body, want) expect_ex(__LINE__, b, body, strlen(body), want, 0, 0)
#define EXPECT_N(b, body, n, want) expect_ex(__LINE__, b, body, n, want, 0, 0)

/* A one-part body with the given part header lines (CRLF-terminated). */
static char *one_part(const char *headers, const char *data)
{
    size_t n = strlen(headers) + strlen(data) + 64;
    char *s = malloc(n);
    if (!s)
        exit(2);
    snprintf(s, n, "--B\r\n%s\r\n%s\r\n--B--\r\n", headers, data);
    return s;
}

static void expect_part(int line, const char *headers, const char *data, const char *want)
{
    char *s = one_part(headers, data);
    expect_ex(line, "B", s, strlen(s), want, 0, 0);
    free(s);
}

#define PART(h, d, want) expect_part(__LINE__, h, d, want)

/* ---- the boundary ------------------------------------------------------------------ */

static int bnd(const char *ct, const char *want_b, const char *want_err)
{
    char out[IGW_MULTIPART_BOUNDARY_MAX + 1];
    const char *err = "unset";
    int n = igw_multipart_boundary(ct, ct ? strlen(ct) : 0, out, sizeof out, &err);
    if (want_b) {
        if (n == (int)strlen(want_b) && strcmp(out, want_b) == 0 && err == NULL)
            return 1;
        printf("  boundary of \"%s\": %d \"%s\" (%s)\n", ct, n, out, err ? err : "");
        return 0;
    }
    if (n == -1 && err && strcmp(err, want_err) == 0 && out[0] == '\0')
        return 1;
    printf("  boundary of \"%s\": %d, \"%s\" want \"%s\"\n", ct ? ct : "(null)", n,
           err ? err : "(null)", want_err);
    return 0;
}

static void test_boundary(void)
{
    CHECK(bnd("multipart/form-data; boundary=XyZ", "XyZ", NULL));
    CHECK(bnd("multipart/form-data;boundary=XyZ", "XyZ", NULL));
    CHECK(bnd("Multipart/Form-Data; BOUNDARY=XyZ", "XyZ", NULL));
    CHECK(bnd("  multipart/form-data ;  boundary=XyZ  ", "XyZ", NULL));
    CHECK(bnd("multipart/form-data; charset=utf-8; boundary=abc; x=\"y;z\"", "abc", NULL));
    CHECK(bnd("multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW",
              "----WebKitFormBoundary7MA4YWxkTrZu0gW", NULL));
    CHECK(bnd("multipart/form-data; boundary=\"a b'()+_,-./:=?Z\"", "a b'()+_,-./:=?Z", NULL));
    CHECK(bnd("multipart/form-data; boundary=\"a\\bc\"", "abc", NULL)); /* quoted-pair */
    CHECK(bnd("multipart/form-data; boundary=\"----=_Part_0_1.2\"", "----=_Part_0_1.2", NULL));
    char ct[200];
    char b70[71];
    memset(b70, 'a', 70);
    b70[70] = '\0';
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", b70);
    CHECK(bnd(ct, b70, NULL));
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=\"%s\"", b70);
    CHECK(bnd(ct, b70, NULL));
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%sa", b70);
    CHECK(bnd(ct, NULL, "multipart: boundary too long"));
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=\"%s%s\"", b70, b70);
    CHECK(bnd(ct, NULL, "multipart: boundary too long"));

    CHECK(bnd(NULL, NULL, "multipart: missing Content-Type"));
    CHECK(bnd("", NULL, "multipart: missing Content-Type"));
    CHECK(bnd("text/plain; boundary=a", NULL, "multipart: Content-Type is not multipart/form-data"));
    CHECK(bnd("multipart/mixed; boundary=a", NULL, "multipart: Content-Type is not multipart/form-data"));
    CHECK(bnd("multipart/form-datax; boundary=a", NULL,
              "multipart: Content-Type is not multipart/form-data"));
    CHECK(bnd("application/x-www-form-urlencoded", NULL,
              "multipart: Content-Type is not multipart/form-data"));
    CHECK(bnd("multipart", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("/form-data; boundary=a", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/; boundary=a", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data boundary=a", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data; boundary=", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data; boundary", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data; boundary = a", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data; boundary=ab/c", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data; boundary=\"abc", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data; boundary=\"abc\"x", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data; boundary=a;", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data;; boundary=a", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data; boundary=\"a\001b\"", NULL, "multipart: malformed Content-Type"));
    CHECK(bnd("multipart/form-data", NULL, "multipart: missing boundary"));
    CHECK(bnd("multipart/form-data; charset=utf-8", NULL, "multipart: missing boundary"));
    CHECK(bnd("multipart/form-data; boundary=\"\"", NULL, "multipart: empty boundary"));
    CHECK(bnd("multipart/form-data; boundary=a; Boundary=a", NULL, "multipart: duplicate boundary"));
    CHECK(bnd("multipart/form-data; boundary=\"ab \"", NULL, "multipart: boundary ends with a space"));
    CHECK(bnd("multipart/form-data; boundary=\"a@b\"", NULL, "multipart: invalid character in boundary"));
    CHECK(bnd("multipart/form-data; boundary=a*b", NULL, "multipart: invalid character in boundary"));
    CHECK(bnd("multipart/form-data; boundary=\"a\xc3\xa9\"", NULL,
              "multipart: invalid character in boundary"));

    /* the output buffer: exactly large enough, one byte short */
    const char *err;
    char small[4];
    CHECK(igw_multipart_boundary("multipart/form-data; boundary=abc", 33, small, 4, &err) == 3 &&
          strcmp(small, "abc") == 0);
    CHECK(igw_multipart_boundary("multipart/form-data; boundary=abc", 33, small, 3, &err) == -1 &&
          strcmp(err, "multipart: boundary buffer too small") == 0 && small[0] == '\0');
    /* length is honoured: no NUL needed, nothing past len read */
    CHECK(igw_multipart_boundary("multipart/form-data; boundary=abcdef", 33, small, 4, &err) == 3);
    /* err may be NULL */
    CHECK(igw_multipart_boundary("text/plain", 10, small, 4, NULL) == -1);

    /* init refuses what the boundary parser refuses */
    igw_multipart p;
    CHECK(igw_multipart_init(&p, "", 0, &CB, NULL) == -1 && igw_multipart_feed(&p, "x", 1) == -1 &&
          strcmp(igw_multipart_error(&p), "multipart: invalid boundary") == 0);
    CHECK(igw_multipart_init(&p, b70, 70, &CB, NULL) == 0);
    CHECK(igw_multipart_init(&p, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrs",
                             71, &CB, NULL) == -1);
    CHECK(igw_multipart_init(&p, "a\r", 2, &CB, NULL) == -1);
    CHECK(igw_multipart_init(&p, NULL, 3, &CB, NULL) == -1);
}

#define DISP "Content-Disposition: form-data; name=a\r\n"

/* ---- valid bodies ------------------------------------------------------------------ */

static void test_valid(void)
{
    EXPECT("XyZ",
           "--XyZ\r\n"
           "Content-Disposition: form-data; name=\"a\"\r\n"
           "\r\n"
           "hello\r\n"
           "--XyZ\r\n"
           "Content-Disposition: form-data; name=\"file\"; filename=\"x.txt\"\r\n"
           "Content-Type: application/octet-stream\r\n"
           "\r\n"
           "line1\r\nline2\r\n"
           "--XyZ--\r\n",
           "[a]hello$[file|x.txt]line1\r\nline2$!");
    /* preamble and epilogue ignored (the epilogue holds another delimiter and junk) */
    EXPECT("XyZ",
           "This is the preamble.\r\n--XyA, a--XyZ, \n--XyZ and \r\n-XyZ are no delimiters\r\n"
           "\r\n--XyZ\r\n"
           "Content-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ--\r\n"
           "epilogue\r\n--XyZ\r\nContent-Disposition: form-data; name=b\r\n\r\nw\r\n--XyZ--\r\n\x01\xff",
           "[a]v$!");
    /* a preamble that is only CRLF; close delimiter without a final CRLF */
    EXPECT("XyZ", "\r\n--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ--",
           "[a]v$!");
    /* an empty part, a part that is only CRLF, a part that is only CR */
    EXPECT("B",
           "--B\r\nContent-Disposition: form-data; name=e\r\n\r\n\r\n"
           "--B\r\nContent-Disposition: form-data; name=c\r\n\r\n\r\n\r\n"
           "--B\r\nContent-Disposition: form-data; name=r\r\n\r\n\r\r\n--B--",
           "[e]$[c]\r\n$[r]\r$!");
    /* zero parts */
    EXPECT("B", "--B--\r\n", "!");
    EXPECT("B", "preamble\r\n--B--", "!");
    /* boundary-like bytes in the content that are not a delimiter */
    EXPECT("XyZ",
           "--XyZ\r\nContent-Disposition: form-data; name=f; filename=d.bin\r\n\r\n"
           "--XyZ\r\n"        /* no CRLF before it (the content's start is no line start) */
           "a--XyZ\r\n"       /* not at a line start */
           "\r\n--XyA\r\n"    /* another boundary */
           "\r\n--Xy\r\n"     /* a prefix */
           "\r\n-XyZ\r\n"     /* one dash */
           "\n--XyZ\r\n"      /* LF only */
           "\r--XyZ\r\n"      /* CR only */
           "\r\r\n--X"        /* CR before a CRLF, then a prefix */
           "\r\n\r\n--XyZ--\r\n",
           "[f|d.bin]--XyZ\r\na--XyZ\r\n\r\n--XyA\r\n\r\n--Xy\r\n\r\n-XyZ\r\n\n--XyZ\r\n"
           "\r--XyZ\r\n\r\r\n--X\r\n$!");
    /* transport padding after delimiters */
    EXPECT("B", "--B \t \r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--B\t\r\n"
                "Content-Disposition: form-data; name=b\r\n\r\nw\r\n--B--  \r\n",
           "[a]v$[b]w$!");
    /* binary content with NUL and high bytes */
    EXPECT_N("B", "--B\r\nContent-Disposition: form-data; name=a\r\n\r\n\0\xff\r\0\n\r\n--B--", 51,
             "[a]"
             "\0\xff\r\0\n$!");
    {
        char *l;
        int rc;
        static const char body[] = "--B\r\nContent-Disposition: form-data; name=a\r\n\r\n\0\xff\r\0\n\r\n--B--";
        l = run("B", body, sizeof body - 1, WHOLE, 0, 0, 0, &rc, NULL);
        CHECK(rc == 0 && memcmp(l, "[a]\0\xff\r\0\n$!", 11) == 0);
        free(l);
    }

    /* Content-Disposition forms */
    PART("Content-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n", "x", "[file|a.txt]x$!");
    PART("content-disposition: FORM-DATA; NAME=file; FileName=a.txt\r\n", "x", "[file|a.txt]x$!");
    PART("CONTENT-DISPOSITION:form-data;name=file;filename=\"\"\r\n", "x", "[file|]x$!");
    PART("Content-Disposition: form-data ; name=\"a\" ;\tfilename=\"b\"  \t\r\n", "", "[a|b]$!");
    PART("Content-Disposition: form-data; filename=\"b\"; name=\"a\"\r\n", "", "[a|b]$!");
    PART("Content-Disposition: form-data; name=\"a\\\"b\\\\c\\d\"; filename=\"x\\\"y.txt\"\r\n", "",
         "[a\"b\\cd|x\"y.txt]$!");
    PART("Content-Disposition: form-data; name=\"\"\r\n", "v", "[]v$!");
    PART("Content-Disposition: form-data; name=\"a;b=c\"\r\n", "", "[a;b=c]$!");
    PART("Content-Disposition: form-data; name=f; filename=\"caf\xc3\xa9 \xe6\x96\x87.txt\"\r\n", "",
         "[f|caf\xc3\xa9 \xe6\x96\x87.txt]$!");
    PART("Content-Disposition: form-data; name=f; filename=\"a\tb\"\r\n", "", "[f|a\tb]$!");
    /* unknown parameters and headers ignored, also before Content-Disposition */
    PART("X-Other: whatever; \"q\r\nContent-Type: text/plain; charset=utf-8\r\n"
         "Content-Disposition: form-data; name=a; size=10; creation-date=\"x\"\r\n"
         "Content-Transfer-Encoding: binary\r\nEmpty:\r\n",
         "v", "[a]v$!");

    /* the bounds, at the limit */
    char hdr[4096], name[300], val[2000];
    memset(name, 'n', 255);
    name[255] = '\0';
    snprintf(hdr, sizeof hdr, "Content-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n", name, name);
    char want[700];
    snprintf(want, sizeof want, "[%s|%s]$!", name, name);
    PART(hdr, "", want);
    /* a line of exactly IGW_MULTIPART_LINE_MAX bytes */
    memset(val, 'v', sizeof val);
    int pad = IGW_MULTIPART_LINE_MAX - (int)strlen("X: ");
    snprintf(hdr, sizeof hdr, "X: %.*s\r\nContent-Disposition: form-data; name=a\r\n", pad, val);
    PART(hdr, "", "[a]$!");
    /* IGW_MULTIPART_HEADERS_MAX headers */
    hdr[0] = '\0';
    for (int i = 0; i < IGW_MULTIPART_HEADERS_MAX - 1; i++)
        strcat(hdr, "X-H: 1\r\n");
    strcat(hdr, "Content-Disposition: form-data; name=a\r\n");
    PART(hdr, "", "[a]$!");

    /* epilogue fed after done: accepted and ignored */
    igw_multipart p;
    rec r;
    memset(&r, 0, sizeof r);
    CHECK(igw_multipart_init(&p, "B", 1, &CB, &r) == 0);
    CHECK(igw_multipart_feed(&p, "--B--", 5) == 0 && r.dones == 1);
    CHECK(igw_multipart_feed(&p, "\r\n--B\r\nnonsense", 15) == 0 && igw_multipart_feed(&p, NULL, 0) == 0);
    CHECK(igw_multipart_finish(&p) == 0 && r.dones == 1 && igw_multipart_error(&p) == NULL);
    free(r.log);

    /* NULL callbacks are allowed */
    static const igw_multipart_callbacks none;
    CHECK(igw_multipart_init(&p, "B", 1, &none, NULL) == 0);
    static const char simple[] = "--B\r\n" DISP "\r\nv\r\n--B--";
    CHECK(igw_multipart_feed(&p, simple, sizeof simple - 1) == 0);
    CHECK(igw_multipart_finish(&p) == 0);
    CHECK(igw_multipart_init(&p, "B", 1, NULL, NULL) == 0);
    CHECK(igw_multipart_feed(&p, "--B--", 5) == 0 && igw_multipart_finish(&p) == 0);
}

/* Many parts: IGW_MULTIPART_PARTS_MAX pass, one more does not. */
static void test_many_parts(void)
{
    size_t cap = 100 * (IGW_MULTIPART_PARTS_MAX + 2);
    char *body = malloc(cap), *want = malloc(cap);
    if (!body || !want)
        exit(2);
    for (int extra = 0; extra <= 1; extra++) {
        size_t o = 0, w = 0;
        for (int i = 0; i < IGW_MULTIPART_PARTS_MAX + extra; i++) {
            o += (size_t)snprintf(body + o, cap - o,
                                  "--B\r\nContent-Disposition: form-data; name=p%d\r\n\r\n%d\r\n", i, i);
            w += (size_t)snprintf(want + w, cap - w, "[p%d]%d$", i, i);
        }
        o += (size_t)snprintf(body + o, cap - o, "--B--\r\n");
        if (extra) /* the 65th part's delimiter line ends the 64th part, then fails */
            snprintf(want + w - strlen("[p64]64$"), cap, "#multipart: too many parts");
        else
            snprintf(want + w, cap - w, "!");
        expect_ex(__LINE__, "B", body, o, want, 0, 0);
    }
    free(body);
    free(want);
}

/* ---- errors -------------------------------------------------------------------------- */

static void test_errors(void)
{
    /* truncated bodies */
    EXPECT("B", "", "#multipart: no boundary delimiter in the body");
    EXPECT("B", "just a preamble\r\n--C--\r\n", "#multipart: no boundary delimiter in the body");
    EXPECT("B", "--B", "#multipart: missing closing boundary");
    EXPECT("B", "--B\r\n", "#multipart: missing closing boundary");
    EXPECT("B", "--B\r\nContent-Disp", "#multipart: missing closing boundary");
    EXPECT("B", "--B\r\n" DISP, "#multipart: missing closing boundary");
    EXPECT("B", "--B\r\n" DISP "\r\n", "[a]#multipart: missing closing boundary");
    EXPECT("B", "--B\r\n" DISP "\r\ndata", "[a]data#multipart: missing closing boundary");
    /* the bytes of a partial delimiter at the end are not content */
    EXPECT("B", "--B\r\n" DISP "\r\ndata\r\n-", "[a]data#multipart: missing closing boundary");
    EXPECT("B", "--B\r\n" DISP "\r\ndata\r\n--B", "[a]data#multipart: missing closing boundary");
    EXPECT("B", "--B\r\n" DISP "\r\ndata\r\n--B-", "[a]data#multipart: missing closing boundary");
    EXPECT("B", "--B\r\n" DISP "\r\ndata\r\n--B\r\n", "[a]data$#multipart: missing closing boundary");
    EXPECT("B", "--B\r\n" DISP "\r\ndata\r\n--B  ", "[a]data#multipart: missing closing boundary");

    /* delimiter lines */
    EXPECT("B", "--BX\r\n", "#multipart: malformed delimiter line");
    EXPECT("B", "--B-X\r\n", "#multipart: malformed delimiter line");
    EXPECT("B", "--B \rX", "#multipart: malformed delimiter line");
    EXPECT("B", "--B\rX", "#multipart: malformed delimiter line");
    EXPECT("B", "--B\n", "#multipart: malformed delimiter line");
    EXPECT("B", "--B x\r\n", "#multipart: malformed delimiter line");
    EXPECT("B", "pre\r\n--Bx", "#multipart: malformed delimiter line");
    /* the delimiter followed by other bytes inside content is refused, not content */
    EXPECT("Bd", "--Bd\r\n" DISP "\r\nabc\r\n--Bdef\r\n--Bd--", "[a]abc#multipart: malformed delimiter line");
    {
        char pad[IGW_MULTIPART_LINE_MAX + 20];
        memset(pad, ' ', sizeof pad);
        snprintf(pad, sizeof pad, "--B%*s\r\n", IGW_MULTIPART_LINE_MAX, "");
        EXPECT("B", pad, "#multipart: missing closing boundary");
        snprintf(pad, sizeof pad, "--B%*s\r\n", IGW_MULTIPART_LINE_MAX + 1, "");
        EXPECT("B", pad, "#multipart: malformed delimiter line");
    }

    /* header lines */
    EXPECT("B", "--B\r\nContent-Disposition: form-data; name=a\n\r\n", "#multipart: bare LF in part header");
    EXPECT("B", "--B\r\n\n", "#multipart: bare LF in part header");
    EXPECT("B", "--B\r\nContent-Disposition: form-data; name=a\rX\r\n", "#multipart: bare CR in part header");
    EXPECT("B", "--B\r\n\r\r\n", "#multipart: bare CR in part header");
    EXPECT_N("B", "--B\r\nX: a\0b\r\n", 12, "#multipart: control character in part header");
    EXPECT("B", "--B\r\nX: a\x01" "b\r\n", "#multipart: control character in part header");
    EXPECT("B", "--B\r\nX: a\x7f" "b\r\n", "#multipart: control character in part header");
    EXPECT("B", "--B\r\nX: a\x1b[0m\r\n", "#multipart: control character in part header");
    {
        char hdr[IGW_MULTIPART_LINE_MAX + 64], val[IGW_MULTIPART_LINE_MAX + 1];
        memset(val, 'v', sizeof val);
        snprintf(hdr, sizeof hdr, "X: %.*s\r\n" DISP, IGW_MULTIPART_LINE_MAX - 2, val);
        PART(hdr, "", "#multipart: part header too long");
        char many[1024] = "";
        for (int i = 0; i < IGW_MULTIPART_HEADERS_MAX; i++)
            strcat(many, "X-H: 1\r\n");
        strcat(many, DISP);
        PART(many, "", "#multipart: too many part headers");
    }
    PART(DISP " folded\r\n", "", "#multipart: folded part header");
    PART("\tX: y\r\n" DISP, "", "#multipart: folded part header");
    PART("NoColon\r\n" DISP, "", "#multipart: malformed part header");
    PART(": empty name\r\n" DISP, "", "#multipart: malformed part header");
    PART("Content-Disposition : form-data; name=a\r\n", "", "#multipart: malformed part header");
    PART("Bad(name): x\r\n" DISP, "", "#multipart: malformed part header");
    PART("", "", "#multipart: part without Content-Disposition");
    PART("Content-Type: text/plain\r\n", "", "#multipart: part without Content-Disposition");
    PART(DISP DISP, "", "#multipart: duplicate Content-Disposition");

    /* Content-Disposition values */
    PART("Content-Disposition: attachment; name=a\r\n", "", "#multipart: Content-Disposition is not form-data");
    PART("Content-Disposition: form-datax; name=a\r\n", "", "#multipart: Content-Disposition is not form-data");
    PART("Content-Disposition:\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: ; name=a\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data name=a\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name=\"a\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name=\"a\\\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name=\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name = a\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name=a b\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name=\"a\"b\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name=a/b\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name=a;\r\n", "", "#multipart: malformed Content-Disposition");
    PART("Content-Disposition: form-data; name=\"a\\\tb\"; x=\"\t\"\r\n", "", "[a\tb]$!");
    PART("Content-Disposition: form-data; name=a; name=b\r\n", "",
         "#multipart: duplicate Content-Disposition parameter");
    PART("Content-Disposition: form-data; name=a; filename=x; FILENAME=y\r\n", "",
         "#multipart: duplicate Content-Disposition parameter");
    PART("Content-Disposition: form-data; name=a; filename*=UTF-8''x.txt\r\n", "",
         "#multipart: filename* is not supported");
    PART("Content-Disposition: form-data; name=a; filename=x.txt; Filename*=UTF-8''x.txt\r\n", "",
         "#multipart: filename* is not supported");
    PART("Content-Disposition: form-data\r\n", "", "#multipart: part without a name");
    PART("Content-Disposition: form-data; filename=a.txt\r\n", "", "#multipart: part without a name");
    {
        char hdr[1024], name[300];
        memset(name, 'n', 256);
        name[256] = '\0';
        snprintf(hdr, sizeof hdr, "Content-Disposition: form-data; name=\"%s\"\r\n", name);
        PART(hdr, "", "#multipart: part name too long");
        snprintf(hdr, sizeof hdr, "Content-Disposition: form-data; name=a; filename=\"%s\"\r\n", name);
        PART(hdr, "", "#multipart: filename too long");
        /* 255 bytes once unescaped: fits */
        char esc[600];
        size_t o = 0;
        for (int i = 0; i < 255; i++) {
            esc[o++] = '\\';
            esc[o++] = 'e';
        }
        esc[o] = '\0';
        snprintf(hdr, sizeof hdr, "Content-Disposition: form-data; name=a; filename=\"%s\"\r\n", esc);
        char want[320];
        memset(name, 'e', 255);
        name[255] = '\0';
        snprintf(want, sizeof want, "[a|%s]$!", name);
        PART(hdr, "", want);
    }

    /* the handler stops the parse */
    static const char two[] = "--B\r\n" DISP "\r\nv\r\n--B\r\nContent-Disposition: form-data; name=b\r\n\r\nw\r\n--B--";
    expect_ex(__LINE__, "B", two, strlen(two), "[a]#multipart: stopped by the handler", 1, 0);
    expect_ex(__LINE__, "B", two, strlen(two), "[a]v$[b]#multipart: stopped by the handler", 2, 0);
    expect_ex(__LINE__, "B", two, strlen(two), "[a]v$#multipart: stopped by the handler", 0, 1);
    expect_ex(__LINE__, "B", two, strlen(two), "[a]v$[b]w$#multipart: stopped by the handler", 0, 2);

    /* the offset of an error */
    igw_multipart p;
    CHECK(igw_multipart_init(&p, "B", 1, &CB, NULL) == 0);
    static const char bad[] = "--B\r\nX: y\r\nZ\n";
    CHECK(igw_multipart_feed(&p, bad, 5) == 0);
    CHECK(igw_multipart_feed(&p, bad + 5, sizeof bad - 1 - 5) == -1 && p.offset == sizeof bad - 2);
    CHECK(strcmp(igw_multipart_error(&p), "multipart: bare LF in part header") == 0);
    /* feed with a NULL buffer */
    CHECK(igw_multipart_init(&p, "B", 1, &CB, NULL) == 0);
    CHECK(igw_multipart_feed(&p, NULL, 3) == -1 && igw_multipart_error(&p) != NULL);
}

/* Random bodies from pieces that look like multipart: whole, byte-wise and
 * random-chunk parses must agree (errors included). */
static void test_random_agreement(void)
{
    static const char *pieces[] = {"--B", "\r\n", "\r", "\n", "-", "--", DISP, "Content-Disposition: ",
                                   "form-data", "; name=", "\"x\"", "; filename=\"f.txt\"", "data", " ",
                                   "B", "--B--", "X: y\r\n", "\"", "\\", "\0"};
    int bad = 0;
    for (int t = 0; t < 3000; t++) {
        char body[512];
        size_t n = 0;
        int k = 1 + (int)(next_rand() % 24);
        for (int i = 0; i < k; i++) {
            const char *s = pieces[next_rand() % (sizeof pieces / sizeof pieces[0])];
            size_t l = s[0] ? strlen(s) : 1;
            if (n + l > sizeof body)
                break;
            memcpy(body + n, s, l);
            n += l;
        }
        int rc;
        rec rw, rb, rr;
        char *w = run("B", body, n, WHOLE, 0, 0, 0, &rc, &rw);
        char *b = run("B", body, n, BYTES, 0, 0, 0, &rc, &rb);
        char *r = run("B", body, n, RANDOM, 0, 0, 0, &rc, &rr);
        if (rw.len != rb.len || rw.len != rr.len || memcmp(w, b, rw.len) != 0 ||
            memcmp(w, r, rw.len) != 0 || memchr(w, '<', rw.len) != NULL || rw.outside)
            bad++;
        free(w);
        free(b);
        free(r);
    }
    CHECK(bad == 0);
}

int main(void)
{
    test_boundary();
    test_valid();
    test_many_parts();
    test_errors();
    test_random_agreement();
    CHECK(mismatches == 0);
    return check_summary("multipart_test");
}
