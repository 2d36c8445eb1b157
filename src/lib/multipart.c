/* multipart.c - streaming multipart/form-data parser (see multipart.h). */
#include "multipart.h"

#include <string.h>

#include "field.h"

enum {
    S_PREAMBLE,   /* looking for the first delimiter, discarding */
    S_DATA,       /* in a part's content, looking for the next delimiter */
    S_AFTER,      /* just after a delimiter's boundary */
    S_DASH,       /* after "boundary-" */
    S_PAD,        /* in transport padding */
    S_DELIM_LF,   /* after the CR ending a delimiter line */
    S_HEADER,     /* in a part header line */
    S_HEADER_LF,  /* after the CR ending a header line */
    S_DONE,
    S_ERROR
};

static int fail(igw_multipart *p, const char *why)
{
    p->err = why;
    p->state = S_ERROR;
    return -1;
}

/* ---- the boundary ---------------------------------------------------------- */

/* RFC 2046 bchars. */
static int is_bchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
        return 1;
    return c != 0 && strchr("'()+_,-./:=? ", c) != NULL;
}

static int boundary_ok(const char *b, size_t n, const char **err)
{
    if (n == 0) {
        *err = "multipart: empty boundary";
        return 0;
    }
    if (n > IGW_MULTIPART_BOUNDARY_MAX) {
        *err = "multipart: boundary too long";
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (!is_bchar((unsigned char)b[i])) {
            *err = "multipart: invalid character in boundary";
            return 0;
        }
    if (b[n - 1] == ' ') {
        *err = "multipart: boundary ends with a space";
        return 0;
    }
    return 1;
}

/* Parses the Content-Type into out; returns the boundary's length or -1
 * with *err set (out may then hold anything). */
static int boundary_of(const char *ct, size_t len, char *out, size_t cap, const char **err)
{
    if (!ct || len == 0) {
        *err = "multipart: missing Content-Type";
        return -1;
    }
    const char *s = ct, *end = ct + len;
    s = igw_field_skip_ows(s, end);
    const char *type = s;
    s = igw_field_skip_token(s, end);
    size_t tlen = (size_t)(s - type);
    if (tlen == 0 || s == end || *s != '/') {
        *err = "multipart: malformed Content-Type";
        return -1;
    }
    const char *sub = ++s;
    s = igw_field_skip_token(s, end);
    size_t slen = (size_t)(s - sub);
    if (slen == 0) {
        *err = "multipart: malformed Content-Type";
        return -1;
    }
    if (!igw_field_ieq(type, tlen, "multipart") || !igw_field_ieq(sub, slen, "form-data")) {
        *err = "multipart: Content-Type is not multipart/form-data";
        return -1;
    }
    char val[IGW_MULTIPART_BOUNDARY_MAX + 2]; /* one more to tell "too long" */
    int blen = -1;
    /* Each iteration consumes at least ";x=y", so this ends within len steps. */
    for (;;) {
        const char *name;
        size_t nlen, vlen;
        int r = igw_field_param_next(&s, end, &name, &nlen, val, sizeof val, &vlen);
        if (r == 0)
            break;
        if (r < 0) {
            *err = "multipart: malformed Content-Type";
            return -1;
        }
        if (!igw_field_ieq(name, nlen, "boundary"))
            continue;
        if (blen >= 0) {
            *err = "multipart: duplicate boundary";
            return -1;
        }
        if (!boundary_ok(val, vlen, err))
            return -1;
        if (vlen + 1 > cap) {
            *err = "multipart: boundary buffer too small";
            return -1;
        }
        memcpy(out, val, vlen + 1); /* val is reused by later parameters */
        blen = (int)vlen;
    }
    if (blen < 0)
        *err = "multipart: missing boundary";
    return blen;
}

int igw_multipart_boundary(const char *ct, size_t len, char *out, size_t cap, const char **err)
{
    const char *why = NULL;
    if (!out || cap < 2) {
        if (out && cap)
            out[0] = '\0';
        why = "multipart: boundary buffer too small";
        if (err)
            *err = why;
        return -1;
    }
    int n = boundary_of(ct, len, out, cap, &why);
    if (n < 0)
        out[0] = '\0';
    else
        why = NULL;
    if (err)
        *err = why;
    return n;
}

/* ---- the parser ------------------------------------------------------------- */

int igw_multipart_init(igw_multipart *p, const char *boundary, size_t blen,
                       const igw_multipart_callbacks *cb, void *ctx)
{
    static const igw_multipart_callbacks none;
    memset(p, 0, sizeof *p);
    p->cb = cb ? cb : &none;
    p->ctx = ctx;
    const char *why;
    if (!boundary || !boundary_ok(boundary, blen, &why))
        return fail(p, "multipart: invalid boundary");
    memcpy(p->delim, "\r\n--", 4);
    memcpy(p->delim + 4, boundary, blen);
    p->dlen = 4 + blen;
    /* The first delimiter may open the body: act as if a CRLF preceded it. */
    p->matched = 2;
    p->state = S_PREAMBLE;
    return 0;
}

static int emit(igw_multipart *p, const char *d, size_t n)
{
    if (n == 0 || p->state != S_DATA || !p->cb->part_data)
        return 0;
    if (p->cb->part_data(p->ctx, d, n))
        return fail(p, "multipart: stopped by the handler");
    return 0;
}

/* Scans b[*i..n) for the delimiter in S_PREAMBLE or S_DATA, passing content
 * on (S_DATA). Since the delimiter's only CR is its first byte, a mismatch
 * can restart matching only at a CR: no backtracking, and the bytes held
 * across a chunk edge are always a prefix of delim. Returns 0 (end of chunk
 * or delimiter found, state S_AFTER) or -1. */
static int scan(igw_multipart *p, const char *b, size_t n, size_t *i)
{
    size_t run = *i;             /* start of pending content in b */
    size_t held_prev = p->matched; /* held bytes that came from earlier chunks */
    size_t k = *i;
    while (k < n) {
        if (p->matched == 0) {
            const char *cr = memchr(b + k, '\r', n - k);
            if (!cr) {
                k = n;
                break;
            }
            k = (size_t)(cr - b) + 1;
            p->matched = 1;
            held_prev = 0;
            continue;
        }
        if (b[k] == p->delim[p->matched]) {
            k++;
            if (++p->matched == p->dlen) {
                size_t here = p->dlen - held_prev; /* delimiter bytes in this chunk */
                if (emit(p, b + run, k - here - run)) {
                    *i = k;
                    return -1;
                }
                p->matched = 0;
                p->seen_delim = 1;
                p->state = S_AFTER;
                *i = k;
                return 0;
            }
            continue;
        }
        /* Mismatch: what was held is content; b[k] is looked at again. */
        if (held_prev && emit(p, p->delim, held_prev)) {
            *i = k;
            return -1;
        }
        held_prev = 0;
        p->matched = 0;
    }
    /* Keep the bytes of a partial match that lie in this chunk back. */
    *i = n;
    return emit(p, b + run, n - (p->matched - held_prev) - run);
}

static int end_part(igw_multipart *p)
{
    if (!p->in_part)
        return 0;
    p->in_part = 0;
    if (p->cb->part_end && p->cb->part_end(p->ctx))
        return fail(p, "multipart: stopped by the handler");
    return 0;
}

/* Content-Disposition: form-data; name=...; filename=... */
static int disposition(igw_multipart *p, const char *s, const char *end)
{
    const char *t = s;
    s = igw_field_skip_token(s, end);
    if (s == t)
        return fail(p, "multipart: malformed Content-Disposition");
    if (!igw_field_ieq(t, (size_t)(s - t), "form-data"))
        return fail(p, "multipart: Content-Disposition is not form-data");
    igw_multipart_part *pt = &p->part;
    int have_name = 0;
    for (;;) { /* each parameter consumes bytes: bounded by the line */
        const char *name;
        size_t nlen, vlen;
        const char *save = s;
        int r = igw_field_param_next(&s, end, &name, &nlen, NULL, 0, &vlen);
        if (r == 0)
            break;
        if (r < 0)
            return fail(p, "multipart: malformed Content-Disposition");
        char *dst = NULL;
        if (igw_field_ieq(name, nlen, "name")) {
            if (have_name)
                return fail(p, "multipart: duplicate Content-Disposition parameter");
            if (vlen > IGW_MULTIPART_NAME_MAX)
                return fail(p, "multipart: part name too long");
            have_name = 1;
            dst = pt->name;
            pt->name_len = vlen;
        } else if (igw_field_ieq(name, nlen, "filename")) {
            if (pt->has_filename)
                return fail(p, "multipart: duplicate Content-Disposition parameter");
            if (vlen > IGW_MULTIPART_NAME_MAX)
                return fail(p, "multipart: filename too long");
            pt->has_filename = 1;
            dst = pt->filename;
            pt->filename_len = vlen;
        } else if (igw_field_ieq(name, nlen, "filename*")) {
            return fail(p, "multipart: filename* is not supported");
        }
        if (dst) { /* parse again, now copying (it fits) */
            s = save;
            if (igw_field_param_next(&s, end, &name, &nlen, dst, IGW_MULTIPART_NAME_MAX + 1, &vlen) != 1)
                return fail(p, "multipart: malformed Content-Disposition");
        }
    }
    if (!have_name)
        return fail(p, "multipart: part without a name");
    p->have_disp = 1;
    return 0;
}

static int header_line(igw_multipart *p)
{
    const char *s = p->line, *end = p->line + p->line_len;
    if (p->line_len == 0) { /* end of the headers */
        if (!p->have_disp)
            return fail(p, "multipart: part without Content-Disposition");
        p->part.index = p->parts - 1;
        p->in_part = 1;
        p->state = S_DATA;
        p->matched = 0;
        if (p->cb->part_begin && p->cb->part_begin(p->ctx, &p->part))
            return fail(p, "multipart: stopped by the handler");
        return 0;
    }
    if (++p->headers > IGW_MULTIPART_HEADERS_MAX)
        return fail(p, "multipart: too many part headers");
    if (igw_field_ows(*s))
        return fail(p, "multipart: folded part header");
    const char *name = s;
    s = igw_field_skip_token(s, end);
    if (s == name || s == end || *s != ':')
        return fail(p, "multipart: malformed part header");
    size_t nlen = (size_t)(s - name);
    if (!igw_field_ieq(name, nlen, "content-disposition"))
        return 0; /* others are ignored */
    if (p->have_disp)
        return fail(p, "multipart: duplicate Content-Disposition");
    s = igw_field_skip_ows(s + 1, end);
    while (end > s && igw_field_ows(end[-1]))
        end--;
    return disposition(p, s, end);
}

/* A delimiter line ended: close the previous part, open a new one. */
static int new_part(igw_multipart *p)
{
    if (end_part(p))
        return -1;
    if (p->parts >= IGW_MULTIPART_PARTS_MAX)
        return fail(p, "multipart: too many parts");
    p->parts++;
    p->headers = 0;
    p->have_disp = 0;
    p->line_len = 0;
    memset(&p->part, 0, sizeof p->part);
    p->state = S_HEADER;
    return 0;
}

/* One byte in a state other than S_PREAMBLE / S_DATA. */
static int step(igw_multipart *p, unsigned char c)
{
    switch (p->state) {
    case S_AFTER:
        if (c == '-') {
            p->state = S_DASH;
            return 0;
        }
        p->pad = 0;
        p->state = S_PAD;
        /* fall through */
    case S_PAD:
        if (igw_field_ows((char)c)) {
            if (++p->pad > IGW_MULTIPART_LINE_MAX)
                return fail(p, "multipart: malformed delimiter line");
            return 0;
        }
        if (c != '\r')
            return fail(p, "multipart: malformed delimiter line");
        p->state = S_DELIM_LF;
        return 0;
    case S_DASH:
        if (c != '-')
            return fail(p, "multipart: malformed delimiter line");
        if (end_part(p))
            return -1;
        p->state = S_DONE;
        if (p->cb->done && p->cb->done(p->ctx))
            return fail(p, "multipart: stopped by the handler");
        return 0;
    case S_DELIM_LF:
        if (c != '\n')
            return fail(p, "multipart: malformed delimiter line");
        return new_part(p);
    case S_HEADER:
        if (c == '\r') {
            p->state = S_HEADER_LF;
            return 0;
        }
        if (c == '\n')
            return fail(p, "multipart: bare LF in part header");
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(p, "multipart: control character in part header");
        if (p->line_len == sizeof p->line)
            return fail(p, "multipart: part header too long");
        p->line[p->line_len++] = (char)c;
        return 0;
    case S_HEADER_LF:
        if (c != '\n')
            return fail(p, "multipart: bare CR in part header");
        p->state = S_HEADER;
        if (header_line(p))
            return -1;
        p->line_len = 0;
        return 0;
    default:
        return fail(p, "multipart: internal state error");
    }
}

int igw_multipart_feed(igw_multipart *p, const void *buf, size_t len)
{
    const char *b = buf;
    size_t i = 0;
    if (p->state == S_ERROR)
        return -1;
    if (len && !b)
        return fail(p, "multipart: no buffer");
    while (i < len) { /* every pass consumes at least one byte or ends */
        if (p->state == S_DONE) {
            i = len; /* the epilogue */
            break;
        }
        if (p->state == S_PREAMBLE || p->state == S_DATA) {
            if (scan(p, b, len, &i))
                break;
            continue;
        }
        if (step(p, (unsigned char)b[i]))
            break;
        i++;
    }
    p->offset += i;
    return p->state == S_ERROR ? -1 : 0;
}

int igw_multipart_finish(igw_multipart *p)
{
    if (p->state == S_DONE)
        return 0;
    if (p->state == S_ERROR)
        return -1;
    if (!p->seen_delim)
        return fail(p, "multipart: no boundary delimiter in the body");
    return fail(p, "multipart: missing closing boundary");
}

const char *igw_multipart_error(const igw_multipart *p)
{
    return p->state == S_ERROR ? p->err : NULL;
}
