/* filename_test.c - unit tests of the upload file name rules (filename.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filename.h"

#include "../check.h"

/* 1 when name[0..len) gets the verdict want (NULL: accepted). */
static int verdict(const char *name, size_t len, const char *want)
{
    const char *err = "unset";
    int rc = igw_filename_check(name, len, &err);
    if (want == NULL ? (rc == 0 && err == NULL) : (rc == -1 && err && strcmp(err, want) == 0))
        return 1;
    printf("  \"%.*s\" (%zu bytes): %d %s, want %s\n", (int)len, name, len, rc, err ? err : "ok",
           want ? want : "ok");
    return 0;
}

#define OK(s) CHECK(verdict(s, strlen(s), NULL))
#define NO(s, why) CHECK(verdict(s, strlen(s), "filename: " why))
#define NO_N(s, n, why) CHECK(verdict(s, n, "filename: " why))

static void test_accepted(void)
{
    OK("a");
    OK("a.txt");
    OK("photo.JPG");
    OK("report 2024-01-01.tar.gz");
    OK("my..file.txt");  /* inner dots climb nothing */
    OK("a.b.c.d");
}

static void test_basic_refusals(void)
{
    NO_N("", 0, "empty");
    CHECK(igw_filename_check(NULL, 3, NULL) == -1);
    NO(".", ". and .. are not file names");
    NO("..", ". and .. are not file names");
    NO("../a", "contains a path separator");
    NO("..\\a", "contains a path separator");
    NO("a/b", "contains a path separator");
    NO("a\\b", "contains a path separator");
    NO("/etc/passwd", "contains a path separator");
    NO("C:\\x.txt", "contains a path separator");
    NO("a/", "contains a path separator");
    NO("a.txt ", "leading or trailing whitespace");
    NO(" a.txt", "leading or trailing whitespace");
    NO("a.txt.", "leading or trailing dot");
    NO(".profile", "leading or trailing dot");
    NO(".a.txt", "leading or trailing dot");
    NO("a.", "leading or trailing dot");
    NO("...", "leading or trailing dot");
    NO("a.php.", "leading or trailing dot"); /* Windows would make it a.php */
    NO("a.php ", "leading or trailing whitespace");

    /* length: 255 bytes pass, 256 do not; counted in bytes, not characters */
    char n[300];
    memset(n, 'a', sizeof n);
    CHECK(verdict(n, 255, NULL));
    CHECK(verdict(n, 256, "filename: longer than 255 bytes"));
    for (int i = 0; i < 85; i++)
        memcpy(n + 3 * i, "\xe6\x96\x87", 3); /* 85 three-byte characters = 255 bytes */
    CHECK(verdict(n, 255, NULL));
    memcpy(n + 255, "a", 1);
    CHECK(verdict(n, 256, "filename: longer than 255 bytes"));
}

static void test_characters(void)
{
    static const char forbidden[] = ",?*|{}$'\"`";
    char n[8];
    for (size_t i = 0; forbidden[i]; i++) {
        snprintf(n, sizeof n, "a%cb", forbidden[i]);
        NO(n, "contains a forbidden character");
        snprintf(n, sizeof n, "%ca.txt", forbidden[i]);
        NO(n, "contains a forbidden character");
    }
    /* every C0 byte and DEL, in the middle and at the ends */
    for (int c = 0; c < 0x20; c++) {
        char m[4] = {'a', (char)c, 'b', 0};
        CHECK(verdict(m, 3, "filename: contains a control character"));
        CHECK(verdict(m + 1, 2, "filename: contains a control character"));
    }
    NO("a\x7f" "b", "contains a control character");
    NO("a\tb", "contains a control character");
    NO("a\r\nb", "contains a control character");
    CHECK(verdict("a\0b", 3, "filename: contains a control character")); /* NUL inside */
    /* C1 controls U+0080..U+009F (C2 80..C2 9F); U+00A0 is a space, U+00A1 is fine */
    for (int c = 0x80; c <= 0x9f; c++) {
        char m[5] = {'a', (char)0xc2, (char)c, 'b', 0};
        CHECK(verdict(m, 4, "filename: contains a control character"));
    }
    OK("a\xc2\xa1" "b");
    OK("a\xc2\xa0" "b"); /* a no-break space inside is fine */
    /* direction marks: "evil\u202Egpj.exe" */
    NO("evil\xe2\x80\xaegpj.exe", "contains an invisible direction mark");
    NO("a\xe2\x80\x8e" "b", "contains an invisible direction mark");   /* U+200E */
    NO("a\xe2\x80\x8f" "b", "contains an invisible direction mark");   /* U+200F */
    NO("a\xe2\x80\xaa" "b", "contains an invisible direction mark");   /* U+202A */
    NO("a\xe2\x81\xa6" "b", "contains an invisible direction mark");   /* U+2066 */
    NO("a\xe2\x81\xa9" "b", "contains an invisible direction mark");   /* U+2069 */
    NO("a\xd8\x9c" "b", "contains an invisible direction mark");       /* U+061C */
    OK("a\xe2\x80\xaf" "b");                                           /* U+202F inside */
    NO("a\xe2\x81\xaa" "b", "contains an invisible character");      /* U+206A, deprecated */
    /* Unicode spaces at the ends */
    static const char *spaces[] = {"\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x8a",
                                   "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f",
                                   "\xe3\x80\x80"};
    for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++) {
        char m[16];
        snprintf(m, sizeof m, "%sa.txt", spaces[i]);
        NO(m, "leading or trailing whitespace");
        snprintf(m, sizeof m, "a.txt%s", spaces[i]);
        NO(m, "leading or trailing whitespace");
        snprintf(m, sizeof m, "a%sb.txt", spaces[i]);
        OK(m);
    }
    /* the BOM is no space but an invisible character, anywhere */
    NO("\xef\xbb\xbf" "a.txt", "contains an invisible character");
    NO("a.txt\xef\xbb\xbf", "contains an invisible character");
    NO("a\xef\xbb\xbf" "b.txt", "contains an invisible character");
    OK("a b.txt");
    OK("(1) [copy] #2 @home ~x + y = z; 100% & more! <a>.txt");
}

static void test_utf8(void)
{
    OK("caf\xc3\xa9.txt");                 /* U+00E9 */
    OK("\xe6\x96\x87\xe4\xbb\xb6.txt");     /* two CJK characters */
    OK("\xf0\x9f\x98\x80.png");            /* U+1F600, 4 bytes */
    OK("\xef\xbf\xbf");                    /* U+FFFF (a noncharacter, still a scalar) */
    OK("\xf4\x8f\xbf\xbf");                /* U+10FFFF, the last */
    OK("\xed\x9f\xbf");                    /* U+D7FF, just below the surrogates */
    OK("\xee\x80\x80");                    /* U+E000, just above */
    OK("\xc2\xa1");                        /* first non-control 2-byte */
    OK("\xe0\xa0\x80");                    /* U+0800, shortest 3-byte */
    OK("\xf0\x90\x80\x80");                /* U+10000, shortest 4-byte */
    NO("a\x80" "b", "not valid UTF-8");    /* lone continuation */
    NO("a\xbf", "not valid UTF-8");
    NO("a\xc3", "not valid UTF-8");        /* truncated at the end */
    NO("\xe6\x96", "not valid UTF-8");
    NO("\xf0\x9f\x98", "not valid UTF-8");
    NO("\xc3(", "not valid UTF-8");        /* bad continuation */
    NO("\xe6(\x87", "not valid UTF-8");
    NO("\xc0\xaf", "not valid UTF-8");     /* overlong '/' */
    NO("\xc1\xbf", "not valid UTF-8");
    NO("\xe0\x80\xaf", "not valid UTF-8"); /* overlong '/', 3 bytes */
    NO("\xe0\x9f\xbf", "not valid UTF-8"); /* overlong U+07FF */
    NO("\xf0\x80\x80\xaf", "not valid UTF-8");
    NO("\xf0\x8f\xbf\xbf", "not valid UTF-8"); /* overlong U+FFFF */
    NO("\xc0\xae\xc0\xae", "not valid UTF-8"); /* overlong ".." */
    NO("\xed\xa0\x80", "not valid UTF-8");  /* U+D800 */
    NO("\xed\xbf\xbf", "not valid UTF-8");  /* U+DFFF */
    NO("\xf4\x90\x80\x80", "not valid UTF-8"); /* U+110000 */
    NO("\xf5\x80\x80\x80", "not valid UTF-8");
    NO("\xf8\x88\x80\x80\x80", "not valid UTF-8"); /* 5-byte form */
    NO("\xfe", "not valid UTF-8");
    NO("\xff", "not valid UTF-8");
    /* the length bounds the decoder: a lead byte as the last counted byte */
    CHECK(verdict("a\xc3\xa9", 2, "filename: not valid UTF-8"));
    CHECK(verdict("a\xc3\xa9", 3, NULL));
}

static void test_extensions(void)
{
    int all = 1;
    for (size_t i = 0; IGW_FILENAME_FORBIDDEN[i]; i++) {
        const char *e = IGW_FILENAME_FORBIDDEN[i];
        char n[64], up[32], mixed[32];
        size_t l = strlen(e);
        for (size_t j = 0; j <= l; j++) {
            up[j] = (char)(e[j] >= 'a' && e[j] <= 'z' ? e[j] - 32 : e[j]);
            mixed[j] = j % 2 ? up[j] : e[j];
        }
        const char *forms[] = {e, up, mixed};
        for (int f = 0; f < 3; f++) {
            snprintf(n, sizeof n, "a.%s", forms[f]);
            all &= verdict(n, strlen(n), "filename: forbidden file type");
            snprintf(n, sizeof n, "x.jpg.%s", forms[f]);
            all &= verdict(n, strlen(n), "filename: forbidden file type");
            /* a name that is only the extension */
            snprintf(n, sizeof n, ".%s", forms[f]);
            all &= verdict(n, strlen(n), "filename: forbidden file type");
            /* an extension that merely starts or ends like one, or the name itself */
            snprintf(n, sizeof n, "a.%sq", forms[f]);
            all &= verdict(n, strlen(n), NULL);
            snprintf(n, sizeof n, "a.q%s", forms[f]);
            all &= verdict(n, strlen(n), NULL);
            snprintf(n, sizeof n, "%s", forms[f]);
            all &= verdict(n, strlen(n), NULL);
            snprintf(n, sizeof n, "a.%s.txt", forms[f]); /* the last extension counts */
            all &= verdict(n, strlen(n), NULL);
        }
    }
    CHECK(all);
    /* the list is exactly the one documented in docs/decisions.md (issue 14) */
    static const char *const listed[] = {
        "php", "php2", "php3", "php4", "php5", "php6", "php7", "php8", "phtml", "phtm", "pht", "phps",
        "phar", "shtml", "shtm", "stm", "asp", "aspx", "asa", "asax", "ascx", "ashx", "asmx", "cer",
        "cshtml", "vbhtml", "svc", "jsp", "jspa", "jspx", "jsw", "jsv", "jspf", "jhtml", "cfm",
        "cfml", "cfc", "cgi", "pl", "html", "htm", "xhtml", "xht", "mht", "mhtml", "xml", "xsl",
        "xslt", "svg", "svgz", "js", "mjs", "cjs", "swf", "htaccess", "htpasswd"};
    for (size_t i = 0; i < sizeof listed / sizeof listed[0]; i++) {
        char n[32];
        snprintf(n, sizeof n, "x.%s", listed[i]);
        NO(n, "forbidden file type");
    }
    size_t count = 0;
    while (IGW_FILENAME_FORBIDDEN[count])
        count++;
    CHECK(count == sizeof listed / sizeof listed[0]);
    NO("index.html", "forbidden file type");
    NO("INDEX.HTM", "forbidden file type");
    NO("shell.pHp5", "forbidden file type");
    NO(".htaccess", "forbidden file type");
    NO(".HTAccess", "forbidden file type");
    NO("x.SvG", "forbidden file type");
    NO("a.php6", "forbidden file type");
    NO("a.phps", "forbidden file type");
    OK("a.php1"); /* no server maps it */
    OK("htaccess");
    OK("a.ht");
    OK("a.xm");
    /* non-ASCII lookalikes are not the extension (and harmless to a server) */
    OK("a.\xef\xbd\x90hp"); /* fullwidth p */
}

/* Issue 14: names stored before although dangerous, and the rules that
 * refuse them. */
static void test_issue14(void)
{
    /* the reported names */
    NO("x.shtml", "forbidden file type");
    NO("x.phar", "forbidden file type");
    NO("x.pHp7", "forbidden file type");
    NO("x.js", "forbidden file type");
    NO("x.PHP\xe2\x80\x8b", "contains an invisible character"); /* U+200B */
    /* mixed case, numbered forms */
    NO("x.PhP3", "forbidden file type");
    NO("x.PHP8", "forbidden file type");
    NO("X.PHAR", "forbidden file type");
    NO("x.ShTmL", "forbidden file type");
    NO("x.sHtM", "forbidden file type");
    NO("x.MJS", "forbidden file type");
    NO("x.SvgZ", "forbidden file type");
    NO("x.mHtMl", "forbidden file type");
    NO(".HTPasswd", "forbidden file type");
    NO("x.CFM", "forbidden file type");
    NO("x.Cgi", "forbidden file type");
    /* every invisible character we know, inside, leading and trailing */
    static const char *const inv[] = {
        "\xe2\x80\x8b",     /* U+200B zero-width space */
        "\xe2\x80\x8c",     /* U+200C zero-width non-joiner */
        "\xe2\x80\x8d",     /* U+200D zero-width joiner */
        "\xe2\x81\xa0",     /* U+2060 word joiner */
        "\xe2\x81\xa1",     /* U+2061 function application */
        "\xe2\x81\xa4",     /* U+2064 invisible plus */
        "\xe2\x81\xaf",     /* U+206F nominal digit shapes */
        "\xef\xbb\xbf",     /* U+FEFF BOM */
        "\xc2\xad",         /* U+00AD soft hyphen */
        "\xcd\x8f",         /* U+034F combining grapheme joiner */
        "\xe1\x85\x9f",     /* U+115F Hangul choseong filler */
        "\xe1\x85\xa0",     /* U+1160 */
        "\xe1\x9e\xb4",     /* U+17B4 */
        "\xe1\xa0\x8e",     /* U+180E Mongolian vowel separator */
        "\xe3\x85\xa4",     /* U+3164 Hangul filler */
        "\xef\xbe\xa0",     /* U+FFA0 halfwidth Hangul filler */
        "\xef\xbf\xb9",     /* U+FFF9 interlinear annotation anchor */
        "\xef\xbf\xbb",     /* U+FFFB */
        "\xf0\x9b\xb2\xa0", /* U+1BCA0 shorthand format letter overlap */
        "\xf0\x9d\x85\xb3", /* U+1D173 musical symbol begin beam */
        "\xf3\xa0\x80\x81", /* U+E0001 language tag */
        "\xf3\xa0\x81\x81", /* U+E0041 tag latin capital A */
        "\xf3\xa0\x81\xbf", /* U+E007F cancel tag */
        "\xf3\xa0\x87\xb0", /* U+E01F0, default ignorable */
    };
    for (size_t i = 0; i < sizeof inv / sizeof inv[0]; i++) {
        char m[32];
        snprintf(m, sizeof m, "x.PHP%s", inv[i]);
        NO(m, "contains an invisible character");
        snprintf(m, sizeof m, "x.P%sHP", inv[i]);
        NO(m, "contains an invisible character");
        snprintf(m, sizeof m, "%sa.txt", inv[i]);
        NO(m, "contains an invisible character");
        snprintf(m, sizeof m, "a%s.txt", inv[i]);
        NO(m, "contains an invisible character");
    }
    /* bidi controls, also around an extension */
    static const char *const bidi[] = {"\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac",
                                       "\xe2\x80\xad", "\xe2\x80\xae", "\xe2\x81\xa6",
                                       "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9",
                                       "\xe2\x80\x8e", "\xe2\x80\x8f", "\xd8\x9c"};
    for (size_t i = 0; i < sizeof bidi / sizeof bidi[0]; i++) {
        char m[32];
        snprintf(m, sizeof m, "x.php%s", bidi[i]);
        NO(m, "contains an invisible direction mark");
        snprintf(m, sizeof m, "x%sphp.jpg", bidi[i]);
        NO(m, "contains an invisible direction mark");
    }
    /* neighbours that are visible and stay allowed */
    OK("a\xe2\x80\x8a" "b"); /* U+200A hair space, inside */
    OK("a\xe2\x80\x90" "b"); /* U+2010 hyphen */
    OK("a\xe2\x81\x9f" "b"); /* U+205F medium mathematical space, inside */
    OK("a\xe1\x85\xa1" "b"); /* U+1161 Hangul jungseong A */
    OK("a\xf3\xa0\x84\x80"); /* U+E0100, a variation selector */
    /* variation selectors: allowed (emoji), but they hide no type, dot or space */
    OK("\xe2\x9d\xa4\xef\xb8\x8f.png");                          /* red heart + U+FE0F */
    NO("x.php\xef\xb8\x8f", "forbidden file type");
    NO("x.s\xef\xb8\x80html", "forbidden file type");
    NO("x.php\xf3\xa0\x84\x80", "forbidden file type");               /* U+E0100 */
    NO("x.php\xe1\xa0\x8b", "forbidden file type");                   /* U+180B */
    NO("x.php.\xef\xb8\x8f", "leading or trailing dot");
    NO("\xef\xb8\x8f.profile", "leading or trailing dot");
    NO("x.php \xef\xb8\x8f", "leading or trailing whitespace");
    NO("\xef\xb8\x8f", "contains an invisible character");
    NO("\xef\xb8\x8f\xef\xb8\x8e", "contains an invisible character");
    /* trailing dots and spaces are refused, not stripped: Windows would make these x.php */
    NO("x.php..", "leading or trailing dot");
    NO("x.PHP.", "leading or trailing dot");
    NO("x.php. ", "leading or trailing whitespace");
    NO("x.php .", "leading or trailing dot");
    NO("x.php. . .", "leading or trailing dot");
    NO("x.php\xc2\xa0", "leading or trailing whitespace");
    NO("x.php\xe3\x80\x80", "leading or trailing whitespace");
    NO("x.shtml  ", "leading or trailing whitespace");
    NO("x.txt.", "leading or trailing dot"); /* any name, not only a listed type */
    /* only the last extension counts: igwd serves every file as an attachment */
    OK("x.php.jpg");
    OK("x.shtml.png");
    OK("x.html.txt");
    /* decided out of the list (docs/decisions.md, issue 14) */
    OK("a.py");
    OK("a.rb");
    OK("a.sh");
    OK("a.exe");
    OK("a.pgif");
    OK("a.inc");
    OK("a.json");
    OK("a.crt");
    OK("web.config");
    OK("a.ini");
}

int main(void)
{
    test_accepted();
    test_basic_refusals();
    test_characters();
    test_utf8();
    test_extensions();
    test_issue14();
    return check_summary("filename_test");
}
