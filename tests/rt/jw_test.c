/* jw_test.c - unit tests of the JSON writer and its canonical form. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "json.h"
#include "jw.h"

#include "../check.h"

/* Output equals `want` (n bytes) and the writer is healthy; prints a diff otherwise. */
static int out_is_n(const igw_jw *w, const char *want, size_t n)
{
    int ok = igw_jw_status(w) == 0 && w->len == n && (n == 0 || memcmp(w->buf, want, n) == 0);
    if (!ok)
        printf("  want %.*s\n  got  %.*s (status %d)\n", (int)n, want, (int)w->len,
               w->buf ? w->buf : "", igw_jw_status(w));
    return ok;
}

static int out_is(const igw_jw *w, const char *want)
{
    return out_is_n(w, want, strlen(want));
}

/* Canonical form of `in` equals `want`, and is a fixed point. */
static int canon_is(const char *in, const char *want)
{
    igw_jw w, w2;
    igw_jw_init(&w);
    igw_jw_init(&w2);
    int ok = igw_jw_canonical(&w, in, strlen(in)) == 0 && out_is(&w, want) &&
             igw_jw_canonical(&w2, w.buf, w.len) == 0 && out_is(&w2, want);
    igw_jw_free(&w);
    igw_jw_free(&w2);
    return ok;
}

static void test_structure(void)
{
    igw_jw w;
    igw_jw_init(&w);
    CHECK(igw_jw_status(&w) == 0 && w.len == 0);

    igw_jw_object_begin(&w);
    igw_jw_key(&w, "a", 1);
    igw_jw_int(&w, 1);
    igw_jw_key(&w, "b", 1);
    igw_jw_string(&w, "x", 1);
    igw_jw_key(&w, "c", 1);
    igw_jw_bool(&w, true);
    igw_jw_key(&w, "d", 1);
    igw_jw_null(&w);
    igw_jw_key(&w, "e", 1);
    igw_jw_array_begin(&w);
    igw_jw_int(&w, 1);
    igw_jw_int(&w, 2);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "f", 1);
    igw_jw_bool(&w, false);
    igw_jw_object_end(&w);
    igw_jw_array_begin(&w);
    igw_jw_array_end(&w);
    igw_jw_raw(&w, "{\"r\":[1]}", 9);
    igw_jw_array_end(&w);
    igw_jw_key(&w, "g", 1);
    igw_jw_object_begin(&w);
    igw_jw_object_end(&w);
    igw_jw_key(&w, "h", 1);
    igw_jw_raw(&w, "3.5e1", 5);
    igw_jw_object_end(&w);
    CHECK(out_is(&w, "{\"a\":1,\"b\":\"x\",\"c\":true,\"d\":null,"
                     "\"e\":[1,2,{\"f\":false},[],{\"r\":[1]}],\"g\":{},\"h\":3.5e1}"));
    CHECK(w.depth == 0 && w.buf[w.len] == '\0');

    igw_jw_reset(&w);
    igw_jw_array_begin(&w);
    igw_jw_array_begin(&w);
    igw_jw_array_end(&w);
    igw_jw_array_begin(&w);
    igw_jw_int(&w, 1);
    igw_jw_array_end(&w);
    igw_jw_array_begin(&w);
    igw_jw_int(&w, 1);
    igw_jw_array_begin(&w);
    igw_jw_int(&w, 2);
    igw_jw_int(&w, 3);
    igw_jw_array_end(&w);
    igw_jw_array_end(&w);
    igw_jw_object_begin(&w);
    igw_jw_object_end(&w);
    igw_jw_string(&w, "", 0);
    igw_jw_array_end(&w);
    CHECK(out_is(&w, "[[],[1],[1,[2,3]],{},\"\"]"));

    igw_jw_reset(&w);
    igw_jw_string(&w, NULL, 0);
    CHECK(out_is(&w, "\"\""));

    /* 64 levels are fine, the 65th is refused and the failure sticks */
    igw_jw_reset(&w);
    for (int i = 0; i < 64; i++)
        igw_jw_array_begin(&w);
    for (int i = 0; i < 64; i++)
        igw_jw_array_end(&w);
    CHECK(igw_jw_status(&w) == 0 && w.len == 128 && w.depth == 0);
    igw_jw_reset(&w);
    for (int i = 0; i < 65; i++)
        igw_jw_object_begin(&w);
    CHECK(igw_jw_status(&w) == -1);
    igw_jw_int(&w, 1);
    CHECK(igw_jw_status(&w) == -1);

    /* unbalanced use is refused, reset clears the failure */
    igw_jw_reset(&w);
    CHECK(igw_jw_status(&w) == 0 && w.len == 0);
    igw_jw_array_end(&w);
    CHECK(igw_jw_status(&w) == -1);
    igw_jw_reset(&w);
    igw_jw_key(&w, "k", 1);
    CHECK(igw_jw_status(&w) == -1);
    igw_jw_reset(&w);
    igw_jw_int(&w, 7);
    CHECK(out_is(&w, "7"));
    igw_jw_free(&w);
    CHECK(w.buf == NULL && w.len == 0 && w.cap == 0);
    igw_jw_free(&w); /* twice is harmless */
}

static void test_escaping(void)
{
    igw_jw w;
    igw_jw_init(&w);
    const char in[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f\xC3\xA9\xF4\x8F\xBF\xBF";
    igw_jw_string(&w, in, sizeof in - 1);
    CHECK(out_is(&w, "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xC3\xA9\xF4\x8F\xBF\xBF\""));

    igw_jw_reset(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "a\0b\"", 4);
    igw_jw_string(&w, "\0", 1);
    igw_jw_object_end(&w);
    CHECK(out_is(&w, "{\"a\\u0000b\\\"\":\"\\u0000\"}"));

    /* every control character: short form where JSON has one */
    for (unsigned c = 0; c < 0x20; c++) {
        char s = (char)c, want[16];
        const char *shortform = c == '\b' ? "\\b" : c == '\f' ? "\\f" : c == '\n' ? "\\n"
                               : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (shortform != NULL)
            snprintf(want, sizeof want, "\"%s\"", shortform);
        else
            snprintf(want, sizeof want, "\"\\u%04x\"", c);
        igw_jw_reset(&w);
        igw_jw_string(&w, &s, 1);
        CHECK(out_is(&w, want));
    }

    /* the writer's output reads back to the same bytes (U+0000 excepted:
     * the reader refuses it, nothing downstream can hold it) */
    char all[256];
    for (int i = 0; i < 128; i++)
        all[i] = (char)(i + 1);
    igw_jw_reset(&w);
    igw_jw_string(&w, all, 127);
    igw_arena a;
    igw_arena_init(&a, 0);
    igw_json j;
    igw_str s;
    igw_json_init(&j, w.buf, w.len, &a, 4);
    CHECK(igw_json_string(&j, &s) == 0 && s.len == 127 && memcmp(s.ptr, all, 127) == 0);
    CHECK(igw_json_finish(&j) == 0);
    igw_arena_free(&a);
    igw_jw_free(&w);
}

static void test_ints(void)
{
    static const int64_t vals[] = {0, 1, -1, 9, 10, 99, 100, -100, 12345, 1000000007,
                                   INT64_C(9007199254740991), -INT64_C(9007199254740991),
                                   INT64_MAX, INT64_MIN, INT64_MIN + 1, INT64_C(10000000000000000)};
    igw_jw w;
    igw_jw_init(&w);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char want[32];
        snprintf(want, sizeof want, "%" PRId64, vals[i]);
        igw_jw_reset(&w);
        igw_jw_int(&w, vals[i]);
        CHECK(out_is(&w, want));
    }
    igw_jw_reset(&w);
    igw_jw_array_begin(&w);
    igw_jw_int(&w, INT64_MIN);
    igw_jw_int(&w, INT64_MAX);
    igw_jw_array_end(&w);
    CHECK(out_is(&w, "[-9223372036854775808,9223372036854775807]"));

    /* growth across many reallocations, checked against printf */
    igw_jw_reset(&w);
    size_t cap = 100000 * 24, len = 1;
    char *want = malloc(cap);
    CHECK(want != NULL);
    if (want != NULL) {
        want[0] = '[';
        igw_jw_array_begin(&w);
        uint64_t x = 88172645463325252u;
        for (int i = 0; i < 100000; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
            int64_t v = (int64_t)x >> (i % 63);
            igw_jw_int(&w, v);
            len += (size_t)snprintf(want + len, cap - len, "%s%" PRId64, i ? "," : "", v);
        }
        igw_jw_array_end(&w);
        want[len++] = ']';
        CHECK(out_is_n(&w, want, len));
        free(want);
    }
    igw_jw_free(&w);
}

static void test_canonical(void)
{
    CHECK(canon_is("{\"b\":1,\"a\":2}", "{\"a\":2,\"b\":1}"));
    CHECK(canon_is(" { \"a\" :\t[ 1 , 2 ]\r\n} ", "{\"a\":[1,2]}"));
    CHECK(canon_is("{\"z\":{\"y\":1,\"x\":[{\"b\":2,\"a\":1}]},\"a\":null}",
                   "{\"a\":null,\"z\":{\"x\":[{\"a\":1,\"b\":2}],\"y\":1}}"));
    CHECK(canon_is("{\"b\":{\"d\":1,\"c\":2},\"a\":{\"f\":[{\"h\":1,\"g\":2}],\"e\":2}}",
                   "{\"a\":{\"e\":2,\"f\":[{\"g\":2,\"h\":1}]},\"b\":{\"c\":2,\"d\":1}}"));
    CHECK(canon_is("{\"ab\":1,\"a\":2,\"\":3}", "{\"\":3,\"a\":2,\"ab\":1}"));
    CHECK(canon_is("[]", "[]"));
    CHECK(canon_is("{}", "{}"));
    CHECK(canon_is(" [ { } , [ ] ] ", "[{},[]]"));

    /* UTF-16 order: the surrogate pair D83D DE00 sorts before U+E000,
     * although its code point (and UTF-8 bytes) are greater */
    CHECK(canon_is("{\"\\uE000\":1,\"\\uD83D\\uDE00\":2}",
                   "{\"\xF0\x9F\x98\x80\":2,\"\xEE\x80\x80\":1}"));
    CHECK(canon_is("{\"\xEE\x80\x80\":1,\"\xF0\x9F\x98\x80\":2,\"\xED\x9F\xBF\":3}",
                   "{\"\xED\x9F\xBF\":3,\"\xF0\x9F\x98\x80\":2,\"\xEE\x80\x80\":1}"));
    CHECK(canon_is("{\"a\xEF\xBF\xBF\":1,\"a\xF0\x90\x80\x80\":2,\"a\":3}",
                   "{\"a\":3,\"a\xF0\x90\x80\x80\":2,\"a\xEF\xBF\xBF\":1}"));
    /* the RFC 8785 section 3.2.3 sorting example */
    CHECK(canon_is("{\"\\u20ac\":\"Euro Sign\",\"\\r\":\"Carriage Return\","
                   "\"\\ufb33\":\"Hebrew Letter Dalet With Dagesh\",\"1\":\"One\","
                   "\"\\ud83d\\ude00\":\"Emoji: Grinning Face\",\"\\u0080\":\"Control\","
                   "\"\\u00f6\":\"Latin Small Letter O With Diaeresis\"}",
                   "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xC2\x80\":\"Control\","
                   "\"\xC3\xB6\":\"Latin Small Letter O With Diaeresis\","
                   "\"\xE2\x82\xAC\":\"Euro Sign\",\"\xF0\x9F\x98\x80\":\"Emoji: Grinning Face\","
                   "\"\xEF\xAC\xB3\":\"Hebrew Letter Dalet With Dagesh\"}"));

    /* strings re-escaped minimally, numbers and literals kept as written */
    CHECK(canon_is("[\"\\u0041\\/\\u00e9\\u001F\\u007f\\b\\\"\\\\\"]",
                   "[\"A/\xC3\xA9\\u001f\x7f\\b\\\"\\\\\"]"));
    CHECK(canon_is("[1.0E+2, -0, 1e400, 0.10, 123456789012345678901234567890, true, false, null]",
                   "[1.0E+2,-0,1e400,0.10,123456789012345678901234567890,true,false,null]"));
    {
        igw_jw z;
        igw_jw_init(&z);
        CHECK(igw_jw_canonical(&z, " \"\\u0000\" ", 10) != 0); /* refused, as by the reader */
        igw_jw_free(&z);
    }
    CHECK(canon_is("-1.5e-7", "-1.5e-7"));

    /* keys compare unescaped; duplicates (RFC 8259) keep document order */
    CHECK(canon_is("{\"\\u0062\":1,\"a\":2}", "{\"a\":2,\"b\":1}"));
    CHECK(canon_is("{\"b\":1,\"a\":2,\"a\":1}", "{\"a\":2,\"a\":1,\"b\":1}"));

    /* a large reversed object */
    size_t cap = 2000 * 24, len = 0, wl = 0;
    char *in = malloc(cap), *want = malloc(cap);
    CHECK(in != NULL && want != NULL);
    if (in != NULL && want != NULL) {
        in[len++] = '{';
        want[wl++] = '{';
        for (int i = 0; i < 2000; i++) {
            len += (size_t)snprintf(in + len, cap - len, "%s\"k%04d\":[%d]", i ? ", " : "",
                                    1999 - i, i);
            wl += (size_t)snprintf(want + wl, cap - wl, "%s\"k%04d\":[%d]", i ? "," : "", i,
                                   1999 - i);
        }
        memcpy(in + len, "}", 2);
        memcpy(want + wl, "}", 2);
        CHECK(canon_is(in, want));
    }
    free(in);
    free(want);
}

static void test_canonical_in_writer(void)
{
    igw_jw w;
    igw_jw_init(&w);
    igw_jw_object_begin(&w);
    igw_jw_key(&w, "x", 1);
    CHECK(igw_jw_canonical(&w, " [ 1 ] ", 7) == 0);
    igw_jw_key(&w, "y", 1);
    CHECK(igw_jw_canonical(&w, "{\"b\":2,\"a\":1}", 13) == 0);
    igw_jw_object_end(&w);
    CHECK(out_is(&w, "{\"x\":[1],\"y\":{\"a\":1,\"b\":2}}"));

    /* invalid input leaves the writer exactly as it was, commas included */
    igw_jw_reset(&w);
    igw_jw_array_begin(&w);
    CHECK(igw_jw_canonical(&w, "[1,", 3) == -1);
    CHECK(igw_jw_canonical(&w, "{\"a\":1,\"a\":\"\\ud800\"}", 21) == -1);
    CHECK(igw_jw_canonical(&w, "1 2", 3) == -1);
    CHECK(igw_jw_canonical(&w, "", 0) == -1);
    igw_jw_int(&w, 1);
    CHECK(igw_jw_canonical(&w, "[01]", 4) == -1);
    CHECK(igw_jw_canonical(&w, "{\"k\":[\"v\",{\"z\":0,\"y\":}]}", 24) == -1);
    igw_jw_int(&w, 2);
    CHECK(igw_jw_canonical(&w, "{\"b\":[],\"a\":{}}", 15) == 0);
    igw_jw_array_end(&w);
    CHECK(out_is(&w, "[1,2,{\"a\":{},\"b\":[]}]"));

    /* nesting is bounded by IGW_JSON_MAX_DEPTH */
    char deep[2 * IGW_JSON_MAX_DEPTH + 2];
    for (int n = IGW_JSON_MAX_DEPTH; n <= IGW_JSON_MAX_DEPTH + 1; n++) {
        memset(deep, '[', (size_t)n);
        memset(deep + n, ']', (size_t)n);
        igw_jw_reset(&w);
        int r = igw_jw_canonical(&w, deep, 2 * (size_t)n);
        CHECK(n <= IGW_JSON_MAX_DEPTH ? r == 0 && out_is_n(&w, deep, 2 * (size_t)n)
                                      : r == -1 && w.len == 0);
    }
    igw_jw_free(&w);
}

int main(void)
{
    test_structure();
    test_escaping();
    test_ints();
    test_canonical();
    test_canonical_in_writer();
    return check_summary("jw");
}
