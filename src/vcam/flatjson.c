/*
 * flatjson.c - a bounded escaper and a flat-object string reader (see flatjson.h).
 */
#include "flatjson.h"

#include <string.h>

size_t igw_vcam_json_escape(char *out, size_t cap, size_t used, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = used;

    if (cap == 0 || used >= cap)
        return (size_t)-1;
#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (n + 1 >= cap)                                                                          \
            goto full;                                                                             \
        out[n++] = (char)(c);                                                                      \
    } while (0)
    PUT('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': PUT('\\'); PUT('"'); break;
        case '\\': PUT('\\'); PUT('\\'); break;
        case '\n': PUT('\\'); PUT('n'); break;
        case '\r': PUT('\\'); PUT('r'); break;
        case '\t': PUT('\\'); PUT('t'); break;
        default:
            if (c < 0x20) {
                PUT('\\'); PUT('u'); PUT('0'); PUT('0');
                PUT(hex[c >> 4]); PUT(hex[c & 15]);
            } else {
                PUT(c);
            }
        }
    }
    PUT('"');
#undef PUT
    out[n] = '\0';
    return n;
full:
    out[used] = '\0';
    return (size_t)-1;
}

static size_t skip_ws(const char *j, size_t len, size_t i)
{
    while (i < len && (j[i] == ' ' || j[i] == '\t' || j[i] == '\n' || j[i] == '\r'))
        i++;
    return i;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Scans the string literal starting at j[*pi] == '"'. Unescapes into out
 * while it fits (out may be NULL); *outlen gets the full unescaped length
 * and *overflow is set when it did not fit. Returns 0, or -1 if malformed. */
static int scan_string(const char *j, size_t len, size_t *pi, char *out, size_t cap, size_t *outlen,
                       int *overflow)
{
    size_t i = *pi, n = 0;

    *overflow = 0;
    if (i >= len || j[i] != '"')
        return -1;
    for (i++;; i++) {
        if (i >= len)
            return -1;
        unsigned char c = (unsigned char)j[i];
        if (c == '"')
            break;
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            if (++i >= len)
                return -1;
            switch (j[i]) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case '/': c = '/'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                int v = 0;
                if (len - i < 5)
                    return -1;
                for (int k = 1; k <= 4; k++) {
                    int h = hexval(j[i + (size_t)k]);
                    if (h < 0)
                        return -1;
                    v = v * 16 + h;
                }
                if (v < 0x01 || v > 0x7f)
                    return -1;
                c = (unsigned char)v;
                i += 4;
                break;
            }
            default:
                return -1;
            }
        }
        if (out && n + 1 < cap)
            out[n] = (char)c;
        else
            *overflow = 1;
        n++;
    }
    if (out && cap > 0)
        out[n < cap ? n : cap - 1] = '\0';
    *pi = i + 1;
    *outlen = n;
    return 0;
}

/* Skips a number or a literal (true, false, null). Returns 0 or -1. */
static int skip_scalar(const char *j, size_t len, size_t *pi)
{
    static const char *const lits[] = {"true", "false", "null"};
    size_t i = *pi;

    for (size_t k = 0; k < sizeof lits / sizeof lits[0]; k++) {
        size_t l = strlen(lits[k]);
        if (len - i >= l && memcmp(j + i, lits[k], l) == 0) {
            *pi = i + l;
            return 0;
        }
    }
    /* Numbers loosely: sign, digits, fraction, exponent characters. */
    size_t start = i;
    while (i < len && ((j[i] >= '0' && j[i] <= '9') || j[i] == '-' || j[i] == '+' || j[i] == '.' ||
                       j[i] == 'e' || j[i] == 'E'))
        i++;
    if (i == start)
        return -1;
    *pi = i;
    return 0;
}

long igw_vcam_json_get_string(const char *json, size_t len, const char *key, char *out, size_t cap)
{
    char name[64];
    size_t i, nlen, vlen;
    int overflow, found = 0;
    long result = -1;

    if (cap == 0)
        return -2;
    out[0] = '\0';
    i = skip_ws(json, len, 0);
    if (i >= len || json[i] != '{')
        return -2;
    i = skip_ws(json, len, i + 1);
    if (i < len && json[i] == '}') {
        i++;
        goto end;
    }
    for (;;) {
        if (scan_string(json, len, &i, name, sizeof name, &nlen, &overflow) < 0)
            return -2;
        int match = !overflow && nlen == strlen(key) && memcmp(name, key, nlen) == 0;
        i = skip_ws(json, len, i);
        if (i >= len || json[i] != ':')
            return -2;
        i = skip_ws(json, len, i + 1);
        if (i < len && json[i] == '"') {
            if (match) {
                if (found)
                    return -2;
                found = 1;
                if (scan_string(json, len, &i, out, cap, &vlen, &overflow) < 0 || overflow)
                    return -2;
                result = (long)vlen;
            } else if (scan_string(json, len, &i, NULL, 0, &vlen, &overflow) < 0) {
                return -2;
            }
        } else {
            if (match) {
                if (found)
                    return -2;
                found = 1;
            }
            if (skip_scalar(json, len, &i) < 0)
                return -2;
        }
        i = skip_ws(json, len, i);
        if (i < len && json[i] == ',') {
            i = skip_ws(json, len, i + 1);
            continue;
        }
        if (i < len && json[i] == '}') {
            i++;
            break;
        }
        return -2;
    }
end:
    if (skip_ws(json, len, i) != len)
        return -2;
    if (result < 0)
        out[0] = '\0';
    return result;
}
