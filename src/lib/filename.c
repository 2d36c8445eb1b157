/* filename.c - acceptance rules for uploaded file names (see filename.h). */
#include "filename.h"

#include <stdint.h>
#include <string.h>

const char *const IGW_FILENAME_FORBIDDEN[] = {
    "html", "htm",  "xml",  "xht",  "xhtml",  "svg",  "php",  "php2", "php3", "php4",
    "php5", "phtml", "pht", "asp",  "aspx",   "asa",  "asax", "ascx", "ashx", "asmx",
    "cer",  "jsp",  "jspa", "jspx", "jsw",    "jsv",  "jspf", "jhtml", "htaccess", "swf",
    NULL};

/* Decodes one UTF-8 sequence at s[0..n) (n >= 1). Returns its length and
 * sets *cp, or 0 when not the shortest valid encoding of a scalar value. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t need;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        need = 2, v = c & 0x1fu, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3, v = c & 0x0fu, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4, v = c & 0x07u, min = 0x10000;
    } else {
        return 0; /* continuation byte, C0/C1 overlong lead, F5..FF */
    }
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3fu);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return need;
}

static int is_space(uint32_t c)
{
    return c == ' ' || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
           c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000 || c == 0xfeff;
}

static int is_control(uint32_t c)
{
    return c < 0x20 || (c >= 0x7f && c <= 0x9f);
}

static int is_format(uint32_t c)
{
    return c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
           (c >= 0x2066 && c <= 0x2069);
}

static int forbidden_ext(const char *e, size_t n)
{
    for (size_t i = 0; IGW_FILENAME_FORBIDDEN[i]; i++) {
        const char *f = IGW_FILENAME_FORBIDDEN[i];
        if (strlen(f) != n)
            continue;
        size_t j = 0;
        while (j < n) {
            unsigned char c = (unsigned char)e[j];
            if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (unsigned char)f[j])
                break;
            j++;
        }
        if (j == n)
            return 1;
    }
    return 0;
}

static int refuse(const char **err, const char *why)
{
    if (err)
        *err = why;
    return -1;
}

int igw_filename_check(const char *name, size_t len, const char **err)
{
    if (err)
        *err = NULL;
    if (!name || len == 0)
        return refuse(err, "filename: empty");
    if (len > IGW_FILENAME_MAX)
        return refuse(err, "filename: longer than 255 bytes");
    const unsigned char *s = (const unsigned char *)name;
    uint32_t first = 0, last = 0;
    for (size_t i = 0; i < len;) { /* each pass consumes 1..4 bytes */
        uint32_t c;
        size_t k = utf8_next(s + i, len - i, &c);
        if (k == 0)
            return refuse(err, "filename: not valid UTF-8");
        if (c == '/' || c == '\\')
            return refuse(err, "filename: contains a path separator");
        if (is_control(c))
            return refuse(err, "filename: contains a control character");
        if (is_format(c))
            return refuse(err, "filename: contains an invisible direction mark");
        if (c < 0x80 && strchr(",?*|{}$'\"`", (int)c))
            return refuse(err, "filename: contains a forbidden character");
        if (i == 0)
            first = c;
        last = c;
        i += k;
    }
    if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
        return refuse(err, "filename: . and .. are not file names");
    /* The last extension; ".htaccess" is all extension. */
    const char *dot = NULL;
    for (size_t i = len; i-- > 0;)
        if (name[i] == '.') {
            dot = name + i;
            break;
        }
    if (dot && forbidden_ext(dot + 1, len - (size_t)(dot + 1 - name)))
        return refuse(err, "filename: forbidden file type");
    if (is_space(first) || is_space(last))
        return refuse(err, "filename: leading or trailing whitespace");
    if (first == '.' || last == '.')
        return refuse(err, "filename: leading or trailing dot");
    return 0;
}
