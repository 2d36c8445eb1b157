/* field.c - see field.h. */
#include "field.h"

#include <string.h>

bool igw_field_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

bool igw_field_ows(char c)
{
    return c == ' ' || c == '\t';
}

static int lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

bool igw_field_ieq(const char *s, size_t n, const char *w)
{
    /* w's NUL ends the walk: no strlen of w per call (the strict stage
     * matches every route header's name this way), nothing read past it. */
    for (size_t i = 0; i < n; i++)
        if (w[i] == '\0' || lower((unsigned char)s[i]) != (unsigned char)w[i])
            return false;
    return w[n] == '\0';
}

const char *igw_field_skip_ows(const char *s, const char *end)
{
    while (s < end && igw_field_ows(*s))
        s++;
    return s;
}

const char *igw_field_skip_token(const char *s, const char *end)
{
    while (s < end && igw_field_tchar((unsigned char)*s))
        s++;
    return s;
}

int igw_field_param_next(const char **s, const char *end, const char **name, size_t *nlen, char *val, size_t vcap,
                         size_t *vlen)
{
    const char *q = igw_field_skip_ows(*s, end);
    if (q == end) {
        *s = q;
        return 0;
    }
    if (*q != ';')
        return -1;
    q = igw_field_skip_ows(q + 1, end);
    const char *n = q;
    q = igw_field_skip_token(q, end);
    if (q == n || q == end || *q != '=')
        return -1;
    *name = n;
    *nlen = (size_t)(q - n);
    q++;
    size_t o = 0;
    if (q < end && *q == '"') {
        for (q++;; q++) {
            if (q == end)
                return -1; /* unterminated */
            unsigned char c = (unsigned char)*q;
            if (c == '"')
                break;
            if (c == '\\') {
                if (++q == end)
                    return -1;
                c = (unsigned char)*q;
            }
            /* qdtext and quoted-pair: HTAB, SP, VCHAR, obs-text. */
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return -1;
            if (val && o + 1 < vcap)
                val[o] = (char)c;
            o++;
        }
        q++;
    } else {
        const char *v = q;
        q = igw_field_skip_token(q, end);
        if (q == v)
            return -1;
        for (const char *t = v; t < q; t++, o++)
            if (val && o + 1 < vcap)
                val[o] = *t;
    }
    /* A value ends at OWS, ';' or the end. */
    if (q < end && !igw_field_ows(*q) && *q != ';')
        return -1;
    if (val && vcap)
        val[o < vcap ? o : vcap - 1] = '\0';
    *vlen = o;
    *s = q;
    return 1;
}
