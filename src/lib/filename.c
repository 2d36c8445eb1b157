/* filename.c - acceptance rules for uploaded file names (see filename.h). */
#include "filename.h"

#include <stdint.h>
#include <string.h>

/* The one list of forbidden types; the criteria, and what is left out and
 * why, are in docs/decisions.md (issue 14). Lower case ASCII. */
const char *const IGW_FILENAME_FORBIDDEN[] = {
    /* PHP: what stock Apache, nginx and hosting panels hand to PHP; .phps is
     * served as highlighted source in HTML */
    "php", "php2", "php3", "php4", "php5", "php6", "php7", "php8", "phtml", "phtm", "pht", "phps",
    "phar",
    /* server-side includes */
    "shtml", "shtm", "stm",
    /* IIS and ASP.NET (IIS maps .cer to asp.dll) */
    "asp", "aspx", "asa", "asax", "ascx", "ashx", "asmx", "cer", "cshtml", "vbhtml", "svc",
    /* Java servlet containers, ATG */
    "jsp", "jspa", "jspx", "jsw", "jsv", "jspf", "jhtml",
    /* ColdFusion */
    "cfm", "cfml", "cfc",
    /* the stock CGI handler's extensions */
    "cgi", "pl",
    /* documents a browser renders with script */
    "html", "htm", "xhtml", "xht", "mht", "mhtml", "xml", "xsl", "xslt", "svg", "svgz",
    /* script and plug-in content a page can load */
    "js", "mjs", "cjs", "swf",
    /* web server per-directory configuration (a name that is all extension) */
    "htaccess", "htpasswd",
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
           c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

static int is_control(uint32_t c)
{
    return c < 0x20 || (c >= 0x7f && c <= 0x9f);
}

static int is_bidi(uint32_t c)
{
    return c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
           (c >= 0x2066 && c <= 0x2069);
}

/* Variation selectors: they pick a glyph of the character before them (the
 * emoji form of a heart, say), so they are allowed, but skipped when the
 * extension is compared: "x.php\uFE0F" still reads x.php. */
static int is_selector(uint32_t c)
{
    return (c >= 0x180b && c <= 0x180d) || c == 0x180f || (c >= 0xfe00 && c <= 0xfe0f) ||
           (c >= 0xe0100 && c <= 0xe01ef);
}

/* Unicode's Default_Ignorable_Code_Point (15.1) but the bidi marks and the
 * selectors, plus the interlinear annotation controls U+FFF9..U+FFFB: all
 * render as nothing, so "x.PHP\u200B" reads x.PHP. Includes zero-width
 * space, non-joiner and joiner, word joiner, the BOM, the soft hyphen, the
 * Hangul fillers and the tag characters. */
static int is_invisible(uint32_t c)
{
    return c == 0x00ad || c == 0x034f || c == 0x115f || c == 0x1160 || c == 0x17b4 ||
           c == 0x17b5 || c == 0x180e || (c >= 0x200b && c <= 0x200d) ||
           (c >= 0x2060 && c <= 0x2065) || (c >= 0x206a && c <= 0x206f) || c == 0x3164 ||
           c == 0xfeff || c == 0xffa0 || (c >= 0xfff0 && c <= 0xfffb) ||
           (c >= 0x1bca0 && c <= 0x1bca3) || (c >= 0x1d173 && c <= 0x1d17a) ||
           (c >= 0xe0000 && c <= 0xe00ff) || (c >= 0xe01f0 && c <= 0xe0fff);
}

/* e[0..n) is valid UTF-8. Folds it to lower case ASCII, skipping variation
 * selectors, and looks it up; any other non-ASCII character makes it no
 * listed type (a fullwidth 'p' is not 'p' to any server). */
static int forbidden_ext(const char *e, size_t n)
{
    char low[16]; /* longer than every entry */
    size_t m = 0;
    const unsigned char *s = (const unsigned char *)e;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t k = utf8_next(s + i, n - i, &c);
        if (k == 0)
            return 0; /* not reached: the caller validated the name */
        i += k;
        if (is_selector(c))
            continue;
        if (c >= 0x80 || m == sizeof low - 1)
            return 0;
        low[m++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    low[m] = 0;
    for (size_t i = 0; IGW_FILENAME_FORBIDDEN[i]; i++)
        if (strcmp(low, IGW_FILENAME_FORBIDDEN[i]) == 0)
            return 1;
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
    int seen = 0;
    for (size_t i = 0; i < len;) { /* each pass consumes 1..4 bytes */
        uint32_t c;
        size_t k = utf8_next(s + i, len - i, &c);
        if (k == 0)
            return refuse(err, "filename: not valid UTF-8");
        if (c == '/' || c == '\\')
            return refuse(err, "filename: contains a path separator");
        if (is_control(c))
            return refuse(err, "filename: contains a control character");
        if (is_bidi(c))
            return refuse(err, "filename: contains an invisible direction mark");
        if (is_invisible(c))
            return refuse(err, "filename: contains an invisible character");
        if (c < 0x80 && strchr(",?*|{}$'\"`", (int)c))
            return refuse(err, "filename: contains a forbidden character");
        i += k;
        if (is_selector(c))
            continue; /* a selector after '.' or ' ' hides neither */
        if (!seen)
            first = c;
        last = c;
        seen = 1;
    }
    if (!seen)
        return refuse(err, "filename: contains an invisible character"); /* only selectors */
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
