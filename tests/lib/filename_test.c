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
    OK("a\xe2\x81\xaa" "b");                                           /* U+206A: not listed */
    /* Unicode spaces at the ends */
    static const char *spaces[] = {"\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x8a",
                                   "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f",
                                   "\xe3\x80\x80", "\xef\xbb\xbf"};
    for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++) {
        char m[16];
        snprintf(m, sizeof m, "%sa.txt", spaces[i]);
        NO(m, "leading or trailing whitespace");
        snprintf(m, sizeof m, "a.txt%s", spaces[i]);
        NO(m, "leading or trailing whitespace");
        snprintf(m, sizeof m, "a%sb.txt", spaces[i]);
        OK(m);
    }
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
    /* the list is the spec's, all 30 */
    size_t count = 0;
    while (IGW_FILENAME_FORBIDDEN[count])
        count++;
    CHECK(count == 30);
    NO("index.html", "forbidden file type");
    NO("INDEX.HTM", "forbidden file type");
    NO("shell.pHp5", "forbidden file type");
    NO(".htaccess", "forbidden file type");
    NO(".HTAccess", "forbidden file type");
    NO("x.SvG", "forbidden file type");
    OK("a.php6");
    OK("a.php1");
    OK("a.phps");
    OK("htaccess");
    OK("a.ht");
    OK("a.xm");
    /* non-ASCII lookalikes are not the extension (and harmless to a server) */
    OK("a.\xef\xbd\x90hp"); /* fullwidth p */
}

int main(void)
{
    test_accepted();
    test_basic_refusals();
    test_characters();
    test_utf8();
    test_extensions();
    return check_summary("filename_test");
}
