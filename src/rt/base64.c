/* base64.c - see base64.h. */
#include "base64.h"

#include <stdint.h>

/* Value of one character + 1, or 0 when outside the alphabet; each term is a
 * mask that is all ones only when c lies in the range (no branches). */
static int val(igw_b64_variant v, unsigned char uc)
{
    int c = uc, r = -1;
    int c62 = v == IGW_B64_STD ? '+' : '-', c63 = v == IGW_B64_STD ? '/' : '_';
    r += (((0x40 - c) & (c - 0x5b)) >> 8) & (c - 64);  /* A-Z -> 0..25, +1 */
    r += (((0x60 - c) & (c - 0x7b)) >> 8) & (c - 70);  /* a-z -> 26..51, +1 */
    r += (((0x2f - c) & (c - 0x3a)) >> 8) & (c + 5);   /* 0-9 -> 52..61, +1 */
    r += (((c62 - 1 - c) & (c - c62 - 1)) >> 8) & 63; /* 62, +1 */
    r += (((c63 - 1 - c) & (c - c63 - 1)) >> 8) & 64; /* 63, +1 */
    return r;
}

static void wipe(unsigned char *p, size_t n)
{
    volatile unsigned char *q = p; /* not optimised away: may hold a secret */
    while (n--)
        *q++ = 0;
}

long igw_b64_decode(igw_b64_variant v, const char *in, size_t n, unsigned char *out, size_t cap)
{
    size_t len = n;
    if (v == IGW_B64_STD) {
        if (n % 4 != 0)
            return -1;
        /* Padding length is public (it follows from the data's length). */
        if (n >= 1 && in[n - 1] == '=')
            len--;
        if (n >= 2 && in[n - 1] == '=' && in[n - 2] == '=')
            len--;
    } else if (n % 4 == 1) {
        return -1;
    }
    /* With padding removed len % 4 is 0, 2 or 3 for STD; 1 was refused above. */
    size_t olen = len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
    if (len % 4 == 1 || olen > cap)
        return -1;
    int bad = 0;
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int x = val(v, (unsigned char)in[i]);
        bad |= (x >> 8) & 1; /* only -1 reaches bit 8 */
        acc = acc << 6 | (uint32_t)(x & 63);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    bad |= acc != 0; /* unused trailing bits must be zero */
    if (bad) {
        wipe(out, olen);
        return -1;
    }
    return (long)olen;
}

long igw_b64_encode(igw_b64_variant v, const unsigned char *in, size_t n, char *out, size_t cap)
{
    static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *abc = v == IGW_B64_STD ? std : url;
    size_t rem = n % 3;
    size_t need = n / 3 * 4 + (rem ? (v == IGW_B64_STD ? 4 : rem + 1) : 0) + 1;
    if (cap < need)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t x = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            x |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            x |= in[i + 2];
        out[o++] = abc[x >> 18 & 63];
        out[o++] = abc[x >> 12 & 63];
        if (i + 1 < n)
            out[o++] = abc[x >> 6 & 63];
        else if (v == IGW_B64_STD)
            out[o++] = '=';
        if (i + 2 < n)
            out[o++] = abc[x & 63];
        else if (v == IGW_B64_STD)
            out[o++] = '=';
    }
    out[o] = '\0';
    return (long)o;
}

void igw_hex_encode(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}
