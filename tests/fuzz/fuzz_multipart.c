/* fuzz_multipart.c - libFuzzer harness of the upload parsing path.
 *
 *   clang -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 \
 *         -fsanitize=fuzzer,address,undefined -Isrc/rt -Isrc/lib \
 *         tests/fuzz/fuzz_multipart.c src/rt/[a-z]*.c src/lib/[a-z]*.c -lcrypto -lm -o fuzz_multipart
 *   ./fuzz_multipart -max_total_time=30 -max_len=8192 [corpus dir]
 *
 * With -DIGW_FUZZ_STANDALONE it builds without libFuzzer and replays the
 * files named on the command line.
 *
 * Input: a first byte, then the body. If the first byte is 0xFF, the
 * Content-Type value is the text up to the first '\n' (where bytes 0xF0,
 * 0xF1, 0xF2 stand for "multipart/form-data", "; boundary=" and a quote)
 * and the body the rest, verbatim. Otherwise the boundary is one of three fixed ones (first
 * byte % 3), first byte / 3 seeds the chunk sizes, and body bytes 0xF0..0xFE
 * stand for the tokens of TOKENS (a delimiter, a Content-Disposition...),
 * so that the fuzzer reaches the part states without a seed corpus.
 *
 * Invariants, each an abort() when broken:
 * - an accepted boundary is 1..70 bchars, and quoting it parses back to it;
 * - the parse whole, byte by byte and in pseudo-random chunks gives the
 *   same events (hashed; content bytes hashed one by one) and verdict;
 * - callbacks come in order (begin, data*, end)* done, data non-empty and,
 *   fed whole, inside the input; names within bounds; at most 64 parts;
 *   every error reason is "multipart: ..." and finish agrees with feed;
 * - a filename igw_filename_check accepts holds no separator or control
 *   byte, is not . or .., and its storage path signs and verifies. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filename.h"
#include "fuzz.h"
#include "multipart.h"
#include "signedurl.h"

typedef struct run {
    uint64_t hash;
    const char *buf; /* the input when fed whole, else NULL */
    size_t buflen;
    int in_part, done;
    unsigned parts;
    size_t data_bytes;
} run;

static void mix(run *r, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        r->hash = (r->hash ^ s[i]) * 0x100000001b3ull; /* FNV-1a */
}

static const unsigned char KEY[] = "fuzz-key";

static void check_filename(const char *name, size_t len)
{
    if (igw_filename_check(name, len, NULL) != 0)
        return;
    REQUIRE(len >= 1 && len <= IGW_FILENAME_MAX);
    REQUIRE(!memchr(name, '/', len) && !memchr(name, '\\', len));
    for (size_t i = 0; i < len; i++)
        REQUIRE((unsigned char)name[i] >= 0x20 && (unsigned char)name[i] != 0x7f);
    REQUIRE(name[0] != '.' && name[len - 1] != '.');
    char path[IGW_SIGNEDURL_PATH_MAX + 1], out[IGW_SIGNEDURL_PATH_MAX + 1];
    int n = snprintf(path, sizeof path, "edge/p/d/250101/000000/%.*s", (int)len, name);
    REQUIRE(n > 0 && (size_t)n < sizeof path);
    static char url[IGW_SIGNEDURL_MAX + 1];
    long ul = igw_signedurl_make(KEY, sizeof KEY - 1, path, (size_t)n, 100, url, sizeof url);
    REQUIRE(ul > 0);
    char *q = strchr(url, '?');
    REQUIRE(q != NULL);
    REQUIRE(igw_signedurl_verify(KEY, sizeof KEY - 1, url, (size_t)(q - url), q + 1, strlen(q + 1), 99,
                                 out, sizeof out) == IGW_SIGNEDURL_OK);
    REQUIRE(strcmp(out, path) == 0);
    REQUIRE(igw_signedurl_verify(KEY, sizeof KEY - 1, url, (size_t)(q - url), q + 1, strlen(q + 1), 100,
                                 out, sizeof out) == IGW_SIGNEDURL_EEXPIRED);
}

static int on_begin(void *ctx, const igw_multipart_part *p)
{
    run *r = ctx;
    REQUIRE(!r->in_part && !r->done);
    REQUIRE(p->index == r->parts && r->parts < IGW_MULTIPART_PARTS_MAX);
    REQUIRE(p->name_len <= IGW_MULTIPART_NAME_MAX && strlen(p->name) == p->name_len);
    REQUIRE(p->filename_len <= IGW_MULTIPART_NAME_MAX && strlen(p->filename) == p->filename_len);
    REQUIRE(p->has_filename || p->filename_len == 0);
    r->parts++;
    r->in_part = 1;
    mix(r, "B", 1);
    mix(r, p->name, p->name_len + 1);
    mix(r, &p->has_filename, sizeof p->has_filename);
    mix(r, p->filename, p->filename_len + 1);
    if (r->buf && p->has_filename) /* once per input is enough */
        check_filename(p->filename, p->filename_len);
    return 0;
}

static int on_data(void *ctx, const char *d, size_t n)
{
    run *r = ctx;
    REQUIRE(r->in_part && n > 0);
    if (r->buf)
        REQUIRE(d >= r->buf && d + n <= r->buf + r->buflen);
    r->data_bytes += n;
    mix(r, d, n);
    return 0;
}

static int on_end(void *ctx)
{
    run *r = ctx;
    REQUIRE(r->in_part && !r->done);
    r->in_part = 0;
    mix(r, "E", 1);
    return 0;
}

static int on_done(void *ctx)
{
    run *r = ctx;
    REQUIRE(!r->in_part && !r->done);
    r->done = 1;
    mix(r, "Z", 1);
    return 0;
}

static const igw_multipart_callbacks CB = {on_begin, on_data, on_end, on_done};

/* mode 0: whole; 1: byte by byte; 2: chunks from seed. */
static void parse(const char *b, size_t blen, const uint8_t *body, size_t n, int mode, unsigned seed,
                  run *r)
{
    memset(r, 0, sizeof *r);
    r->hash = 0xcbf29ce484222325ull;
    igw_multipart p;
    REQUIRE(igw_multipart_init(&p, b, blen, &CB, r) == 0);
    int fr = 0;
    if (mode == 0) {
        r->buf = (const char *)body;
        r->buflen = n;
        fr = igw_multipart_feed(&p, body, n);
    } else {
        uint32_t x = seed * 2654435761u + 1;
        for (size_t i = 0; i < n && !fr;) {
            x = x * 1103515245u + 12345u;
            size_t k = mode == 1 ? 1 : 1 + (x >> 16) % 80;
            if (k > n - i)
                k = n - i;
            fr = igw_multipart_feed(&p, body + i, k);
            i += k;
        }
    }
    int fin = igw_multipart_finish(&p);
    const char *e = igw_multipart_error(&p);
    REQUIRE(fr == 0 || fin == -1);
    REQUIRE((fin == 0) == (e == NULL));
    REQUIRE(fin == -1 || (r->done && !r->in_part));
    if (e) {
        REQUIRE(strncmp(e, "multipart: ", 11) == 0 && e[11] != '\0');
        mix(r, e, strlen(e));
    }
    REQUIRE(r->data_bytes <= n);
}

/* Bytes 0xF0 + i expand to TOKENS[i]; "@" in a token is the boundary. */
static const char *const TOKENS[] = {
    "\r\n--@\r\n",
    "\r\n--@--\r\n",
    "Content-Disposition: form-data; name=\"file\"; filename=\"",
    "\"\r\n\r\n",
    "Content-Disposition: form-data; name=",
    "\r\n",
    ".php",
    "; filename*=UTF-8''",
    "Content-Type: application/octet-stream\r\n",
    "\r\n--@",
    "; filename=",
    "\\\"",
    "\xe2\x80\xae",
    "\r\n\r\n",
    "--@\r\nContent-Disposition: form-data; name=a\r\n\r\n",
};
#define EXPANDED_MAX 65536

/* Expands tokens of body[0..n) into out; returns the length. */
static size_t expand(const uint8_t *body, size_t n, const char *b, char *out)
{
    size_t o = 0, blen = strlen(b);
    for (size_t i = 0; i < n; i++) {
        unsigned t = body[i];
        if (t < 0xF0 || t - 0xF0 >= sizeof TOKENS / sizeof TOKENS[0]) {
            if (o == EXPANDED_MAX)
                break;
            out[o++] = (char)t;
            continue;
        }
        for (const char *s = TOKENS[t - 0xF0]; *s; s++) {
            size_t k = *s == '@' ? blen : 1;
            if (o + k > EXPANDED_MAX)
                return o;
            memcpy(out + o, *s == '@' ? b : s, k);
            o += k;
        }
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *fixed[] = {"B", "--b-", "----WebKitFormBoundary7MA4YWxkTrZu0gW"};
    static char expanded[EXPANDED_MAX];
    if (size < 1)
        return 0;
    char b[IGW_MULTIPART_BOUNDARY_MAX + 1];
    size_t blen;
    const uint8_t *body = data + 1;
    size_t n = size - 1;
    unsigned seed = data[0];
    if (data[0] == 0xFF) {
        const uint8_t *nl = memchr(body, '\n', n);
        size_t ctlen = nl ? (size_t)(nl - body) : n;
        static const char *const ct_tokens[] = {"multipart/form-data", "; boundary=", "\""};
        char ctx[1024];
        size_t cl = 0;
        for (size_t i = 0; i < ctlen && cl < sizeof ctx; i++) {
            const char *t = body[i] >= 0xF0 && body[i] <= 0xF2 ? ct_tokens[body[i] - 0xF0] : NULL;
            size_t k = t ? strlen(t) : 1;
            if (cl + k > sizeof ctx)
                break;
            memcpy(ctx + cl, t ? t : (const char *)body + i, k);
            cl += k;
        }
        const char *why = NULL;
        int r = igw_multipart_boundary(ctx, cl, b, sizeof b, &why);
        if (r < 0) {
            REQUIRE(why && strncmp(why, "multipart: ", 11) == 0 && b[0] == '\0');
            return 0;
        }
        REQUIRE(why == NULL && r >= 1 && r <= IGW_MULTIPART_BOUNDARY_MAX && strlen(b) == (size_t)r);
        REQUIRE(b[r - 1] != ' ' && !strchr(b, '"') && !strchr(b, '\\'));
        /* quoted, it parses back to itself */
        char ct[128], b2[IGW_MULTIPART_BOUNDARY_MAX + 1];
        int ql = snprintf(ct, sizeof ct, "multipart/form-data; boundary=\"%s\"", b);
        REQUIRE(igw_multipart_boundary(ct, (size_t)ql, b2, sizeof b2, NULL) == r && strcmp(b, b2) == 0);
        blen = (size_t)r;
        if (nl) {
            n -= ctlen + 1;
            body = nl + 1;
        } else {
            n = 0;
        }
    } else {
        snprintf(b, sizeof b, "%s", fixed[data[0] % 3]);
        blen = strlen(b);
        seed = data[0] / 3u;
        n = expand(body, n, b, expanded);
        body = (const uint8_t *)expanded;
    }
    run whole, bytes, chunks;
    parse(b, blen, body, n, 0, seed, &whole);
    parse(b, blen, body, n, 1, seed, &bytes);
    parse(b, blen, body, n, 2, seed, &chunks);
    REQUIRE(whole.hash == bytes.hash && whole.hash == chunks.hash);
    REQUIRE(whole.parts == bytes.parts && whole.parts == chunks.parts);
    REQUIRE(whole.data_bytes == bytes.data_bytes && whole.data_bytes == chunks.data_bytes);
    REQUIRE(whole.done == bytes.done && whole.done == chunks.done);
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
        static uint8_t buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        int bad = ferror(f) || !feof(f);
        if (fclose(f) != 0 || bad) {
            fprintf(stderr, "%s: unreadable or too large\n", argv[i]);
            return 1;
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_multipart: %d inputs replayed\n", argc - 1);
    return 0;
}
#endif
