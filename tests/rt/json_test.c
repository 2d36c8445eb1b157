/* json_test.c - unit tests of the pull scanner (json.c) and the arena. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "bytes.h"
#include "decode.h"
#include "json.h"

#include "../check.h"

static igw_arena arena;

static void start(igw_json *j, const char *s, unsigned max_depth)
{
    igw_arena_reset(&arena);
    igw_json_init(j, s, strlen(s), &arena, max_depth);
}

/* Checks the recorded failure; reason and path are compared exactly unless NULL. */
static int failure_is(const igw_json *j, igw_json_errkind kind, const char *path,
                      const char *reason)
{
    int ok = j->err == kind && (path == NULL || strcmp(j->path, path) == 0) &&
             (reason == NULL || strcmp(j->reason, reason) == 0);
    if (!ok)
        printf("  got %s \"%s\" at \"%s\" offset %zu\n", igw_json_errkind_name(j->err), j->reason,
               j->path, j->err_offset);
    return ok;
}

static int str_is(igw_str s, const char *want, size_t n)
{
    return s.len == n && memcmp(s.ptr, want, n) == 0;
}

static int inside(const char *buf, igw_str s)
{
    return s.ptr >= buf && s.ptr + s.len <= buf + strlen(buf);
}

/* ------------------------------------------------------------ decoding */

/* A decoder shaped like the generated ones:
 * {"command":{"name":str,"params":{"x":int,"on":bool}},"deliveryIds":[int...]} */
typedef struct cmd {
    igw_str name;
    int64_t x;
    bool on;
    int64_t ids[8];
    unsigned nids;
} cmd;

static int decode_params(igw_json *j, cmd *c)
{
    igw_str k;
    int r;
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        if (str_is(k, "x", 1))
            r = igw_json_int(j, &c->x, -1000, 1000);
        else if (str_is(k, "on", 2))
            r = igw_json_bool(j, &c->on);
        else
            r = igw_json_fail(j, IGW_JERR_UNKNOWN, "unknown field");
        if (r < 0)
            return -1;
        igw_json_pop(j);
    }
    return r;
}

static int decode_command(igw_json *j, cmd *c)
{
    igw_str k;
    int r;
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        if (str_is(k, "name", 4))
            r = igw_json_string(j, &c->name);
        else if (str_is(k, "params", 6))
            r = decode_params(j, c);
        else
            r = igw_json_fail(j, IGW_JERR_UNKNOWN, "unknown field");
        if (r < 0)
            return -1;
        igw_json_pop(j);
    }
    return r;
}

static int decode_doc(const char *s, cmd *c, igw_json *j)
{
    igw_str k;
    int r;
    memset(c, 0, sizeof *c);
    start(j, s, 16);
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        igw_json_push_key(j, k.ptr, k.len);
        if (str_is(k, "command", 7)) {
            r = decode_command(j, c);
        } else if (str_is(k, "deliveryIds", 11)) {
            if ((r = igw_json_array_begin(j)) < 0)
                return -1;
            uint32_t i = 0;
            while ((r = igw_json_array_next(j)) == 1) {
                igw_json_push_index(j, i);
                if (i == 8)
                    return igw_json_fail(j, IGW_JERR_LENGTH, "too many items");
                if (igw_json_int(j, &c->ids[i], 0, 100) < 0)
                    return -1;
                igw_json_pop(j);
                c->nids = ++i;
            }
        } else {
            r = igw_json_fail(j, IGW_JERR_UNKNOWN, "unknown field");
        }
        if (r < 0)
            return -1;
        igw_json_pop(j);
    }
    if (r < 0)
        return -1;
    return igw_json_finish(j);
}

static void test_decoder(void)
{
    igw_json j;
    cmd c;
    const char *doc = " {\"command\": {\"name\": \"reboot\", \"params\": {\"x\": -7, \"on\": true}},\n"
                      "  \"deliveryIds\": [1, 2 ,3] } \r\n";
    CHECK(decode_doc(doc, &c, &j) == 0);
    CHECK(str_is(c.name, "reboot", 6) && inside(doc, c.name)); /* zero-copy */
    CHECK(c.x == -7 && c.on && c.nids == 3 && c.ids[0] == 1 && c.ids[2] == 3);
    CHECK(j.depth == 0 && j.nseg == 0 && j.err == IGW_JERR_NONE);

    CHECK(decode_doc("{\"command\":{\"params\":{\"x\":\"7\"}}}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_TYPE, "/command/params/x", "expected integer, found string"));
    CHECK(j.err_offset == 26);
    CHECK(decode_doc("{\"command\":{\"params\":{\"on\":null}}}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_NULL, "/command/params/on", "null is not accepted"));
    CHECK(decode_doc("{\"deliveryIds\":[1,2,3,101]}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_RANGE, "/deliveryIds/3", "integer above the allowed maximum"));
    CHECK(decode_doc("{\"deliveryIds\":[1,2,3,]}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/deliveryIds", "trailing comma in array"));
    CHECK(decode_doc("{\"deliveryIds\":[1 2]}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/deliveryIds", NULL));
    CHECK(decode_doc("{\"deliveryIds\":[,1]}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/deliveryIds/0", "unexpected character"));
    CHECK(decode_doc("{\"deliveryIds\":{}}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_TYPE, "/deliveryIds", "expected array, found object"));
    CHECK(decode_doc("{\"command\":{\"params\":{\"x\":1,}}}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/command/params", "trailing comma in object"));
    CHECK(decode_doc("{\"command\":{\"params\":{\"x\":1 \"on\":true}}}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/command/params",
                     "expected ',' or '}' after object member"));
    CHECK(decode_doc("{\"command\" {}}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "", "expected ':' after object key"));
    CHECK(decode_doc("{,}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "", "expected an object key"));
    CHECK(decode_doc("{\"command\":{}} x", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_TRAILING, "", "unexpected data after the value"));
    CHECK(j.err_offset == 15);
    CHECK(decode_doc("{\"command\":{}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "", "unexpected end of input") && j.err_offset == 13);
    CHECK(decode_doc("{\"bogus\":1}", &c, &j) < 0);
    CHECK(failure_is(&j, IGW_JERR_UNKNOWN, "/bogus", "unknown field"));
}

static void test_keys(void)
{
    igw_json j;
    igw_str k1, k2, k3;
    const char *doc = "{\"a\":1,\"\\u0061\":2, \"x\\/y\" : 3}";
    int64_t v;
    start(&j, doc, 4);
    CHECK(igw_json_object_begin(&j) == 0 && j.depth == 1);
    CHECK(igw_json_object_next(&j, &k1) == 1 && igw_json_int(&j, &v, 0, 9) == 0 && v == 1);
    CHECK(igw_json_object_next(&j, &k2) == 1 && igw_json_int(&j, &v, 0, 9) == 0 && v == 2);
    CHECK(igw_json_peek(&j) == ',');
    CHECK(igw_json_object_next(&j, &k3) == 1 && igw_json_int(&j, &v, 0, 9) == 0 && v == 3);
    CHECK(igw_json_object_next(&j, &k3) == 0 && j.depth == 0);
    CHECK(igw_json_finish(&j) == 0);
    CHECK(str_is(k1, "a", 1) && str_is(k2, "a", 1)); /* equal after unescaping */
    CHECK(inside(doc, k1) && !inside(doc, k2));      /* fast path vs arena copy */
    CHECK(k2.ptr[1] == '\0');                        /* decoded copies are terminated */

    start(&j, "{ }", 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k1) == 0);
    CHECK(j.depth == 0 && igw_json_finish(&j) == 0);
    start(&j, "[ ]", 4);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 0 && j.depth == 0);
    start(&j, "{\"a\":1", 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k1) == 1);
    CHECK(igw_json_int(&j, &v, 0, 9) == 0 && igw_json_object_next(&j, &k1) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "", "unexpected end of input") && j.err_offset == 6);
    start(&j, "{\"a\\q\":1}", 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k1) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "", "invalid escape in string") && j.err_offset == 3);
    start(&j, "{\"\\udc00\":1}", 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k1) < 0);
    CHECK(failure_is(&j, IGW_JERR_UTF8, "", "lone low surrogate escape in string"));
}

static void test_types(void)
{
    static const struct {
        const char *doc;
        int reader; /* 0 object, 1 array, 2 string, 3 int, 4 bool */
        igw_json_errkind kind;
        const char *reason;
    } cases[] = {
        {"null", 0, IGW_JERR_NULL, "null is not accepted"},
        {" null", 1, IGW_JERR_NULL, "null is not accepted"},
        {"null", 2, IGW_JERR_NULL, "null is not accepted"},
        {"null", 3, IGW_JERR_NULL, "null is not accepted"},
        {"null", 4, IGW_JERR_NULL, "null is not accepted"},
        {"\"x\"", 0, IGW_JERR_TYPE, "expected object, found string"},
        {"1", 1, IGW_JERR_TYPE, "expected array, found number"},
        {"{}", 2, IGW_JERR_TYPE, "expected string, found object"},
        {"[]", 3, IGW_JERR_TYPE, "expected integer, found array"},
        {"true", 3, IGW_JERR_TYPE, "expected integer, found boolean"},
        {"[", 4, IGW_JERR_TYPE, "expected boolean, found array"},
        {"-1", 4, IGW_JERR_TYPE, "expected boolean, found number"},
        {"false", 2, IGW_JERR_TYPE, "expected string, found boolean"},
        {"nul", 3, IGW_JERR_SYNTAX, "unexpected end of input"},
        {"nulL", 3, IGW_JERR_SYNTAX, "invalid literal"},
        {"True", 4, IGW_JERR_SYNTAX, "unexpected character"},
        {"tru", 4, IGW_JERR_SYNTAX, "unexpected end of input"},
        {"x", 0, IGW_JERR_SYNTAX, "unexpected character"},
        {"'a'", 2, IGW_JERR_SYNTAX, "unexpected character"},
        {"", 2, IGW_JERR_SYNTAX, "unexpected end of input"},
        {"   ", 0, IGW_JERR_SYNTAX, "unexpected end of input"},
        {"-", 3, IGW_JERR_SYNTAX, "unexpected end of input"},
        {"-x", 3, IGW_JERR_SYNTAX, "expected a digit in number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        igw_json j;
        igw_str s;
        int64_t v;
        bool b;
        int r = 0;
        start(&j, cases[i].doc, 4);
        switch (cases[i].reader) {
        case 0: r = igw_json_object_begin(&j); break;
        case 1: r = igw_json_array_begin(&j); break;
        case 2: r = igw_json_string(&j, &s); break;
        case 3: r = igw_json_int(&j, &v, INT64_MIN, INT64_MAX); break;
        case 4: r = igw_json_bool(&j, &b); break;
        }
        CHECK(r < 0 && failure_is(&j, cases[i].kind, "", cases[i].reason));
        if (r == 0 || j.err != cases[i].kind)
            printf("  case %zu: %s\n", i, cases[i].doc);
    }

    igw_json j;
    bool b = false;
    start(&j, " true false", 4);
    CHECK(igw_json_bool(&j, &b) == 0 && b);
    CHECK(igw_json_bool(&j, &b) == 0 && !b);
    CHECK(igw_json_finish(&j) == 0);
}

static void test_integers(void)
{
    static char long_digits[10002];
    memset(long_digits, '7', sizeof long_digits - 1);
    static const char *const frac = "fraction or exponent where an integer is required";
    static const char *const safe = "integer beyond the safe integer range";
    const struct {
        const char *doc;
        int64_t min, max;
        igw_json_errkind kind;
        int64_t want;
        const char *reason;
    } cases[] = {
        {"1", 0, 10, IGW_JERR_NONE, 1, NULL},
        {"0", 0, 10, IGW_JERR_NONE, 0, NULL},
        {"-0", 0, 10, IGW_JERR_INTEGER, 0, "-0 is not accepted as an integer here"},
        {"-0", -5, 10, IGW_JERR_NONE, 0, NULL},
        {"01", 0, 10, IGW_JERR_INTEGER, 0, "leading zero is not allowed in an integer"},
        {"-01", -5, 10, IGW_JERR_INTEGER, 0, "leading zero is not allowed in an integer"},
        {"00", 0, 10, IGW_JERR_INTEGER, 0, "leading zero is not allowed in an integer"},
        {"1.0", 0, 10, IGW_JERR_INTEGER, 0, frac},
        {"1e0", 0, 10, IGW_JERR_INTEGER, 0, frac},
        {"1E0", 0, 10, IGW_JERR_INTEGER, 0, frac},
        {"0.5", 0, 10, IGW_JERR_INTEGER, 0, frac},
        {"1e+2", 0, 1000, IGW_JERR_INTEGER, 0, frac},
        {"1.", 0, 10, IGW_JERR_SYNTAX, 0, "unexpected end of input"},
        {"1.x", 0, 10, IGW_JERR_SYNTAX, 0, "expected a digit after '.'"},
        {"1e", 0, 10, IGW_JERR_SYNTAX, 0, "unexpected end of input"},
        {"+1", 0, 10, IGW_JERR_INTEGER, 0, "leading '+' is not allowed in an integer"},
        {"+", 0, 10, IGW_JERR_SYNTAX, 0, "unexpected character"},
        {"9007199254740991", INT64_MIN, INT64_MAX, IGW_JERR_NONE, INT64_C(9007199254740991), NULL},
        {"-9007199254740991", INT64_MIN, INT64_MAX, IGW_JERR_NONE, -INT64_C(9007199254740991), NULL},
        {"9007199254740992", INT64_MIN, INT64_MAX, IGW_JERR_RANGE, 0, safe},
        {"-9007199254740992", INT64_MIN, INT64_MAX, IGW_JERR_RANGE, 0, safe},
        {"10000000000000000", INT64_MIN, INT64_MAX, IGW_JERR_RANGE, 0, safe},
        {"99999999999999999999999999999", INT64_MIN, INT64_MAX, IGW_JERR_RANGE, 0, safe},
        {long_digits, INT64_MIN, INT64_MAX, IGW_JERR_RANGE, 0, safe},
        {"1000000000000000", INT64_MIN, INT64_MAX, IGW_JERR_NONE, INT64_C(1000000000000000), NULL},
        {"5", 0, 4, IGW_JERR_RANGE, 0, "integer above the allowed maximum"},
        {"-6", -5, 4, IGW_JERR_RANGE, 0, "integer below the allowed minimum"},
        {"-5", -5, 4, IGW_JERR_NONE, -5, NULL},
        {"-1", 0, 4, IGW_JERR_RANGE, 0, "integer below the allowed minimum"},
        {" \t\r\n42", 0, 100, IGW_JERR_NONE, 42, NULL},
        {"\f42", 0, 100, IGW_JERR_SYNTAX, 0, "unexpected character"},
        {"\"1\"", 0, 100, IGW_JERR_TYPE, 0, "expected integer, found string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        igw_json j;
        int64_t v = -12345;
        start(&j, cases[i].doc, 4);
        int r = igw_json_int(&j, &v, cases[i].min, cases[i].max);
        if (cases[i].kind == IGW_JERR_NONE) {
            CHECK(r == 0 && v == cases[i].want && igw_json_finish(&j) == 0);
        } else {
            CHECK(r < 0 && failure_is(&j, cases[i].kind, "", cases[i].reason));
            CHECK(v == -12345); /* output untouched on failure */
        }
        if ((r == 0) != (cases[i].kind == IGW_JERR_NONE) || j.err != cases[i].kind)
            printf("  case %zu: %.40s\n", i, cases[i].doc);
    }
    /* the number stops at its last digit; what follows is the caller's business */
    igw_json j;
    int64_t v;
    start(&j, "42x", 4);
    CHECK(igw_json_int(&j, &v, 0, 100) == 0 && v == 42);
    CHECK(igw_json_finish(&j) < 0 && failure_is(&j, IGW_JERR_TRAILING, "", NULL) &&
          j.err_offset == 2);
}

static void test_strings(void)
{
    const struct {
        const char *doc;
        igw_json_errkind kind;
        const char *want; /* decoded, for successes */
        size_t want_len;
        size_t offset;    /* error offset, for failures */
    } cases[] = {
        {"\"\xF4\x8F\xBF\xBF\"", IGW_JERR_NONE, "\xF4\x8F\xBF\xBF", 4, 0},   /* U+10FFFF */
        {"\"\xEF\xBF\xBF\xC2\x80\xDF\xBF\"", IGW_JERR_NONE, "\xEF\xBF\xBF\xC2\x80\xDF\xBF", 7, 0},
        {"\"\xED\x9F\xBF\xEE\x80\x80\"", IGW_JERR_NONE, "\xED\x9F\xBF\xEE\x80\x80", 6, 0},
        {"\"\\ud83d\\ude00\"", IGW_JERR_NONE, "\xF0\x9F\x98\x80", 4, 0},
        {"\"\\uD834\\uDD1E\"", IGW_JERR_NONE, "\xF0\x9D\x84\x9E", 4, 0},
        {"\"\\udbff\\udfff\"", IGW_JERR_NONE, "\xF4\x8F\xBF\xBF", 4, 0},
        {"\"\\u00e9\\u20AC\\u0041\"", IGW_JERR_NONE, "\xC3\xA9\xE2\x82\xAC" "A", 6, 0},
        {"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", IGW_JERR_NONE, "\"\\/\b\f\n\r\t", 8, 0},
        /* U+0000 cannot be held downstream (C strings, SQL text, jsonb) */
        {"\"a\\u0000b\"", IGW_JERR_FORMAT, NULL, 0, 2},
        {"\"\x7F\"", IGW_JERR_NONE, "\x7F", 1, 0},
        {"\"\"", IGW_JERR_NONE, "", 0, 0},
        {"\"\\ud800\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\\udc00\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\\ud800\\u0041\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\\ud800\\ud800\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"ab\\ud800x\"", IGW_JERR_UTF8, NULL, 0, 3},
        {"\"\\ude00\\ud83d\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\\ud800\\u00\"", IGW_JERR_SYNTAX, NULL, 0, 7},
        {"\"\\ud800", IGW_JERR_SYNTAX, NULL, 0, 7},
        {"\"\xC0\x80\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xC1\xBF\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xE0\x80\x80\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xE0\x9F\xBF\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xF0\x8F\xBF\xBF\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xED\xA0\x80\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xED\xBF\xBF\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xF4\x90\x80\x80\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xF5\x80\x80\x80\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xFF\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"abc\x80\"", IGW_JERR_UTF8, NULL, 0, 4},
        {"\"\xE2\x82\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xF0\x9F\x98\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xC3\"", IGW_JERR_UTF8, NULL, 0, 1},
        {"\"\xE2\x82", IGW_JERR_SYNTAX, NULL, 0, 3}, /* cut by the end of input */
        {"\"a\x01\"", IGW_JERR_SYNTAX, NULL, 0, 2},
        {"\"a\tb\"", IGW_JERR_SYNTAX, NULL, 0, 2},
        {"\"a\nb\"", IGW_JERR_SYNTAX, NULL, 0, 2},
        {"\"\\x\"", IGW_JERR_SYNTAX, NULL, 0, 1},
        {"\"\\u12\"", IGW_JERR_SYNTAX, NULL, 0, 1},
        {"\"\\u12", IGW_JERR_SYNTAX, NULL, 0, 5},
        {"\"\\U0041\"", IGW_JERR_SYNTAX, NULL, 0, 1},
        {"\"abc", IGW_JERR_SYNTAX, NULL, 0, 4},
        {"\"abc\\", IGW_JERR_SYNTAX, NULL, 0, 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        igw_json j;
        igw_str s;
        start(&j, cases[i].doc, 4);
        int r = igw_json_string(&j, &s);
        if (cases[i].kind == IGW_JERR_NONE) {
            CHECK(r == 0 && str_is(s, cases[i].want, cases[i].want_len));
            CHECK(igw_json_finish(&j) == 0);
        } else {
            CHECK(r < 0 && j.err == cases[i].kind && j.err_offset == cases[i].offset);
        }
        if ((r == 0) != (cases[i].kind == IGW_JERR_NONE) || j.err != cases[i].kind ||
            (r < 0 && j.err_offset != cases[i].offset))
            printf("  case %zu: got %s \"%s\" offset %zu\n", i, igw_json_errkind_name(j.err),
                   j.reason, j.err_offset);
    }

    /* Long strings: the block scan must find a special byte at any offset. */
    for (size_t pos = 0; pos < 40; pos++) {
        char doc[64];
        igw_json j;
        igw_str s;
        memset(doc, 'a', sizeof doc);
        doc[0] = '"';
        doc[62] = '"';
        doc[63] = '\0';
        CHECK((start(&j, doc, 4), igw_json_string(&j, &s) == 0 && s.len == 61 && inside(doc, s)));
        doc[1 + pos] = '\x1f';
        CHECK((start(&j, doc, 4), igw_json_string(&j, &s) < 0 && j.err == IGW_JERR_SYNTAX &&
                                      j.err_offset == 1 + pos));
        doc[1 + pos] = '"';
        CHECK((start(&j, doc, 4), igw_json_string(&j, &s) == 0 && s.len == pos));
        doc[1 + pos] = '\xA9';
        CHECK((start(&j, doc, 4), igw_json_string(&j, &s) < 0 && j.err == IGW_JERR_UTF8 &&
                                      j.err_offset == 1 + pos));
        doc[1 + pos] = '\\';
        doc[2 + pos] = 'n';
        CHECK((start(&j, doc, 4), igw_json_string(&j, &s) == 0 && s.len == 60 &&
                                      s.ptr[pos] == '\n' && !inside(doc, s)));
    }

    CHECK(igw_json_utf8_valid("", 0) && igw_json_utf8_valid(NULL, 0));
    CHECK(igw_json_utf8_valid("a\0b", 3));
    CHECK(igw_json_utf8_valid("\xF4\x8F\xBF\xBF\xE2\x82\xAC", 7));
    CHECK(!igw_json_utf8_valid("\xE2\x82", 2));
    CHECK(!igw_json_utf8_valid("\xED\xA0\x80", 3));
    CHECK(!igw_json_utf8_valid("\xC0\xAF", 2));
    CHECK(!igw_json_utf8_valid("\xF8\x88\x80\x80\x80", 5));
}

static void test_paths(void)
{
    igw_json j;
    start(&j, "{}", 4);
    CHECK(igw_json_fail(&j, IGW_JERR_RULE, "root") == -1 && failure_is(&j, IGW_JERR_RULE, "", "root"));

    start(&j, "{}", 4);
    igw_json_push_key(&j, "command", 7);
    igw_json_push_key(&j, "params", 6);
    igw_json_push_key(&j, "xyz", 1); /* only the first len bytes count */
    igw_json_fail(&j, IGW_JERR_MISSING, NULL);
    CHECK(failure_is(&j, IGW_JERR_MISSING, "/command/params/x", "missing-field"));

    start(&j, "{}", 4);
    igw_json_push_key(&j, "a~b/c", 5);
    igw_json_push_key(&j, "", 0);
    igw_json_push_key(&j, "~/~", 3);
    igw_json_fail(&j, IGW_JERR_FORMAT, "bad");
    CHECK(failure_is(&j, IGW_JERR_FORMAT, "/a~0b~1c//~0~1~0", "bad"));

    start(&j, "{}", 4);
    igw_json_push_key(&j, "deliveryIds", 11);
    igw_json_push_index(&j, 3);
    igw_json_push_index(&j, UINT32_MAX);
    igw_json_pop(&j);
    igw_json_fail(&j, IGW_JERR_DUPLICATE, "dup");
    CHECK(failure_is(&j, IGW_JERR_DUPLICATE, "/deliveryIds/3", "dup"));

    /* pushes past the capacity are counted and keep push/pop balanced */
    start(&j, "{}", 4);
    for (unsigned i = 0; i < 1000; i++)
        igw_json_push_index(&j, i);
    CHECK(j.nseg == 1000);
    for (unsigned i = 0; i < 990; i++)
        igw_json_pop(&j);
    igw_json_push_key(&j, "k", 1);
    igw_json_fail(&j, IGW_JERR_RULE, "deep");
    CHECK(j.err == IGW_JERR_RULE && strncmp(j.path, "/0/1/2/3/", 9) == 0);
    CHECK(strlen(j.path) < sizeof j.path);
    for (unsigned i = 0; i < 2000; i++)
        igw_json_pop(&j);
    CHECK(j.nseg == 0);

    /* a segment that does not fit ends the pointer at its parent */
    static char big[700];
    memset(big, 'k', sizeof big);
    start(&j, "{}", 4);
    igw_json_push_key(&j, "a", 1);
    igw_json_push_key(&j, big, sizeof big);
    igw_json_push_key(&j, "b", 1);
    igw_json_fail(&j, IGW_JERR_RULE, "long");
    CHECK(failure_is(&j, IGW_JERR_RULE, "/a", "long"));
    start(&j, "{}", 4);
    igw_json_push_key(&j, big, 509); /* '/' + 509 + NUL = 511 bytes: fits */
    igw_json_fail(&j, IGW_JERR_RULE, "fits");
    CHECK(strlen(j.path) == 510);
    start(&j, "{}", 4);
    igw_json_push_key(&j, big, 200);
    igw_json_push_key(&j, "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"
                          "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"
                          "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
                      204);
    igw_json_fail(&j, IGW_JERR_RULE, "escaped growth");
    CHECK(strlen(j.path) == 201); /* 204 '~' need 408 bytes after escaping */
    start(&j, "{}", 4);
    igw_json_push_key(&j, "a", 1);
    igw_json_push_key(&j, "b\0c", 3); /* NUL cannot live in a C string */
    igw_json_fail(&j, IGW_JERR_RULE, "nul");
    CHECK(failure_is(&j, IGW_JERR_RULE, "/a", "nul"));

    /* first failure wins, later calls return -1 and change nothing */
    start(&j, "[1, 2]", 4);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    igw_json_push_index(&j, 0);
    CHECK(igw_json_fail(&j, IGW_JERR_ENUM, "first") == -1);
    igw_json_pop(&j);
    CHECK(igw_json_fail(&j, IGW_JERR_RANGE, "second") == -1);
    CHECK(failure_is(&j, IGW_JERR_ENUM, "/0", "first") && j.err_offset == 1);
    int64_t v;
    CHECK(igw_json_int(&j, &v, 0, 9) == -1 && igw_json_array_next(&j) == -1);
    CHECK(igw_json_peek(&j) == -1 && igw_json_finish(&j) == -1);
    CHECK(failure_is(&j, IGW_JERR_ENUM, "/0", "first"));
    start(&j, "1", 4);
    CHECK(igw_json_fail(&j, IGW_JERR_NONE, NULL) == -1 && j.err == IGW_JERR_SYNTAX);

    CHECK(strcmp(igw_json_errkind_name(IGW_JERR_DUPLICATE), "duplicate") == 0);
    CHECK(strcmp(igw_json_errkind_name(IGW_JERR_UNKNOWN), "unknown-field") == 0);
    CHECK(strcmp(igw_json_errkind_name(IGW_JERR_NOMEM), "nomem") == 0);
    CHECK(strcmp(igw_json_errkind_name((igw_json_errkind)999), "invalid-kind") == 0);
}

/* Lazy paths (igw_json_prefix_key/index, what generated decoders use):
 * failing at the leaf and prepending the segments on the way out must give
 * exactly the pointer that pushing them all before the failure gives,
 * including the overflow and NUL policies. */
static void test_lazy_paths(void)
{
    igw_json j;
    start(&j, "{}", 4);
    CHECK(igw_json_prefix_key(&j, "a", 1) == -1 && igw_json_prefix_index(&j, 2) == -1);
    CHECK(j.err == IGW_JERR_NONE && j.path[0] == '\0'); /* no failure: nothing to prefix */

    start(&j, "{}", 4);
    igw_json_fail(&j, IGW_JERR_FORMAT, "bad");
    igw_json_prefix_key(&j, "~/~", 3);
    igw_json_prefix_index(&j, UINT32_MAX);
    igw_json_prefix_key(&j, "", 0);
    igw_json_prefix_key(&j, "a~b/c", 5);
    CHECK(failure_is(&j, IGW_JERR_FORMAT, "/a~0b~1c//4294967295/~0~1~0", "bad"));

    /* Chains of keys (short, long, escaped, holding NUL) and indexes. */
    static char big[700];
    memset(big, 'k', sizeof big);
    static const char tildes[] = "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"
                                 "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"
                                 "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"
                                 "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~";
    struct { const char *k; size_t n; } keys[] = {
        {"a", 1}, {"b/c", 3}, {big, 100}, {big, 254}, {big, 509}, {big, 510}, {big, 700},
        {tildes, 200}, {tildes, 255}, {"x\0y", 3}, {"", 0}, {NULL, 0} /* NULL: an index */
    };
    const unsigned nk = sizeof keys / sizeof keys[0];
    uint32_t rng = 12345;
    for (unsigned round = 0; round < 3000; round++) {
        unsigned len = 1 + round % 9, pick[9];
        for (unsigned i = 0; i < len; i++) {
            rng = rng * 1103515245u + 12345u;
            pick[i] = (rng >> 16) % nk;
        }
        igw_json eager, lazy;
        start(&eager, "{}", 4);
        for (unsigned i = 0; i < len; i++) {
            if (keys[pick[i]].k)
                igw_json_push_key(&eager, keys[pick[i]].k, keys[pick[i]].n);
            else
                igw_json_push_index(&eager, i * 1000u);
        }
        igw_json_fail(&eager, IGW_JERR_RULE, "r");
        start(&lazy, "{}", 4);
        igw_json_fail(&lazy, IGW_JERR_RULE, "r");
        for (unsigned i = len; i-- > 0;) {
            if (keys[pick[i]].k)
                igw_json_prefix_key(&lazy, keys[pick[i]].k, keys[pick[i]].n);
            else
                igw_json_prefix_index(&lazy, i * 1000u);
        }
        if (strcmp(eager.path, lazy.path) != 0) {
            CHECK(!"lazy path differs from eager path");
            break;
        }
    }
    CHECK(1);
}

/* igw_format_identifier (decode.c, with its SIMD fast paths) against the
 * rule written plainly over code points, on random UTF-8 of every length
 * around the block sizes. */
static bool ident_ref_space(uint32_t c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000 || c == 0xFEFF;
}

static size_t put_utf8(unsigned char *o, uint32_t c)
{
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | (c >> 6));
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (c >> 12));
        o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

static void test_identifier_format(void)
{
    static const uint32_t alpha[] = {'a', 'b', 'Z', '0', '-', '.', ' ', '\t', '\n', 0x1F, 0x7F, '*', '?', '%', '+',
                                     '#', 0x80, 0x85, 0x9F, 0xA0, 0xE9, 0x100, 0x1680, 0x2000, 0x2028, 0x3000,
                                     0xFEFF, 0xFFFD, 0x1F600, 0x10FFFF};
    const unsigned na = sizeof alpha / sizeof alpha[0];
    uint32_t rng = 777;
    unsigned mismatches = 0, accepted = 0;
    for (unsigned round = 0; round < 200000; round++) {
        uint32_t cps[48];
        unsigned ncp = round % 41;
        for (unsigned i = 0; i < ncp; i++) {
            rng = rng * 1103515245u + 12345u;
            unsigned r = (rng >> 16) & 0x7FFF;
            /* mostly plain letters, so that many strings are accepted */
            cps[i] = r % 64 < 56 ? alpha[r % 4] : alpha[(r >> 6) % na];
        }
        unsigned char buf[48 * 4];
        size_t n = 0;
        bool want = true;
        for (unsigned i = 0; i < ncp; i++) {
            uint32_t c = cps[i];
            if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || c == '*' || c == '?' || c == '%' ||
                c == '+' || c == '#')
                want = false;
            n += put_utf8(buf + n, c);
        }
        if (ncp > 0 && (ident_ref_space(cps[0]) || ident_ref_space(cps[ncp - 1])))
            want = false;
        /* exact-size heap copy, so ASan sees any read past the string */
        char *copy = malloc(n ? n : 1);
        if (n)
            memcpy(copy, buf, n);
        bool got = igw_format_identifier(copy, n);
        free(copy);
        accepted += got;
        if (got != want && mismatches++ < 5)
            fprintf(stderr, "identifier mismatch: round %u, %zu bytes, want %d\n", round, n, want);
    }
    CHECK(mismatches == 0);
    CHECK(accepted > 10000); /* the test exercises the accepting paths too */
}

static void test_depth(void)
{
    igw_json j;
    start(&j, "[[1]]", 2);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    CHECK(igw_json_array_begin(&j) == 0 && j.depth == 2);
    start(&j, "[[[1]]]", 2);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    CHECK(igw_json_array_begin(&j) < 0);
    CHECK(failure_is(&j, IGW_JERR_DEPTH, "", "nesting too deep") && j.err_offset == 2);
    start(&j, "{}", 0);
    CHECK(igw_json_object_begin(&j) < 0 && j.err == IGW_JERR_DEPTH);
    start(&j, "{}", 1000); /* clamped to IGW_JSON_MAX_DEPTH */
    CHECK(j.max_depth == IGW_JSON_MAX_DEPTH);

    /* depth goes back down as containers close */
    igw_str k;
    start(&j, "{\"a\":{},\"b\":{}}", 2);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 0 && j.depth == 1);
    CHECK(igw_json_object_next(&j, &k) == 1 && str_is(k, "b", 1));
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 0);
    CHECK(igw_json_object_next(&j, &k) == 0 && j.depth == 0 && igw_json_finish(&j) == 0);

    /* the whole-document check stays bounded on hostile nesting */
    static char deep[100001];
    memset(deep, '[', sizeof deep - 1);
    CHECK(igw_json_validate(deep, sizeof deep - 1, IGW_JSON_RFC8259, 64, &arena, &j) < 0);
    CHECK(j.err == IGW_JERR_DEPTH && j.err_offset == 64);
    char doc[200];
    for (int n = 63; n <= 65; n++) {
        memset(doc, '[', (size_t)n);
        memset(doc + n, ']', (size_t)n);
        int r = igw_json_validate(doc, 2 * (size_t)n, IGW_JSON_STRICT, IGW_JSON_MAX_DEPTH,
                                  &arena, &j);
        CHECK(n <= 64 ? r == 0 : (r < 0 && j.err == IGW_JERR_DEPTH));
    }
}

/* Writes the decimal digits of base^exp * mul to out; returns their count. */
static size_t big_digits(char *out, unsigned base, unsigned exp, uint64_t mul)
{
    static uint8_t d[2000]; /* little-endian decimal digits */
    size_t n = 1;
    d[0] = 1;
    for (unsigned e = 0; e <= exp; e++) {
        uint64_t m = e < exp ? base : mul, carry = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t v = d[i] * m + carry;
            d[i] = (uint8_t)(v % 10);
            carry = v / 10;
        }
        while (carry != 0 && n < sizeof d) {
            d[n++] = (uint8_t)(carry % 10);
            carry /= 10;
        }
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (char)('0' + d[n - 1 - i]);
    return n;
}

/* igw_json_value on `doc` from its start. */
static int value(igw_json *j, const char *doc, igw_json_profile profile, unsigned max_depth,
                 size_t max_bytes, igw_str *raw)
{
    start(j, doc, IGW_JSON_MAX_DEPTH);
    return igw_json_value(j, profile, max_depth, max_bytes, raw);
}

/* igw_json_value's depth limit: its own container is level 1; relative to the current depth, capped by the scanner's */
static void test_value_depth(void)
{
    igw_json j;
    igw_str raw, k;
    const size_t any = SIZE_MAX;
    /* depth: the value's own container is level 1 */
    CHECK(value(&j, "{\"a\":1}", IGW_JSON_STRICT, 1, any, &raw) == 0 && raw.len == 7);
    CHECK(value(&j, "{\"a\":{}}", IGW_JSON_STRICT, 1, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_DEPTH, "/a", "nesting too deep") && j.err_offset == 5);
    CHECK(raw.ptr == NULL && raw.len == 0);
    CHECK(value(&j, "{\"a\":{}}", IGW_JSON_STRICT, 2, any, NULL) == 0);
    CHECK(value(&j, " \"s\" ", IGW_JSON_STRICT, 0, any, &raw) == 0 && str_is(raw, "\"s\"", 3));
    CHECK(value(&j, "[]", IGW_JSON_STRICT, 0, any, &raw) < 0 && j.err == IGW_JERR_DEPTH);
    CHECK(value(&j, "[[[]]]", IGW_JSON_RFC8259, 3, any, &raw) == 0);
    CHECK(value(&j, "[[[[]]]]", IGW_JSON_RFC8259, 3, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_DEPTH, "/0/0/0", NULL));

    /* relative to the current depth, and never past the scanner's limit */
    const char *nested = "{\"free\": {\"a\": [1, {\"b\": null}]}, \"n\": 2}";
    start(&j, nested, 3);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    igw_json_push_key(&j, k.ptr, k.len);
    CHECK(igw_json_value(&j, IGW_JSON_STRICT, 10, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_DEPTH, "/free/a/1", NULL));
    CHECK(j.depth == 1 && j.nseg == 1); /* restored on failure too */
    start(&j, nested, 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    igw_json_push_key(&j, k.ptr, k.len);
    CHECK(igw_json_value(&j, IGW_JSON_STRICT, 2, any, &raw) < 0 && j.err == IGW_JERR_DEPTH);
    start(&j, nested, 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    igw_json_push_key(&j, k.ptr, k.len);
    CHECK(igw_json_value(&j, IGW_JSON_STRICT, 3, any, &raw) == 0);
    CHECK(str_is(raw, "{\"a\": [1, {\"b\": null}]}", 23) && j.depth == 1 && j.nseg == 1);
    igw_json_pop(&j);
    int64_t n;
    CHECK(igw_json_object_next(&j, &k) == 1 && igw_json_int(&j, &n, 0, 9) == 0 && n == 2);
    CHECK(igw_json_object_next(&j, &k) == 0 && igw_json_finish(&j) == 0);
}

/* igw_json_value's size limit, both sides of it; the error path and offset */
static void test_value_size(void)
{
    igw_json j;
    igw_str raw, k;
    /* size, both sides of the limit */
    CHECK(value(&j, "[1,2,3]", IGW_JSON_STRICT, 4, 7, &raw) == 0 && raw.len == 7);
    CHECK(value(&j, "[1,2,3]", IGW_JSON_STRICT, 4, 6, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_SIZE, "", "value larger than allowed") && j.err_offset == 0);
    CHECK(value(&j, "12345", IGW_JSON_STRICT, 4, 5, &raw) == 0 && raw.len == 5);
    CHECK(value(&j, "12345", IGW_JSON_STRICT, 4, 4, &raw) < 0 && j.err == IGW_JERR_SIZE);
    CHECK(value(&j, "12345 ", IGW_JSON_STRICT, 4, 4, &raw) < 0 && j.err == IGW_JERR_SIZE);
    CHECK(value(&j, "\"abcdef\"", IGW_JSON_STRICT, 4, 3, &raw) < 0 && j.err == IGW_JERR_SIZE);
    CHECK(value(&j, "\"abcdef\"", IGW_JSON_STRICT, 4, 0, &raw) < 0 && j.err == IGW_JERR_SIZE);
    CHECK(value(&j, "true", IGW_JSON_STRICT, 4, 3, &raw) < 0 && j.err == IGW_JERR_SIZE);
    CHECK(value(&j, "\"\xE2\x82\xAC\"", IGW_JSON_STRICT, 4, 3, &raw) < 0 &&
          j.err == IGW_JERR_SIZE);
    CHECK(value(&j, "\"\xE2\x82\xAC\"", IGW_JSON_STRICT, 4, 5, &raw) == 0);
    CHECK(value(&j, "[1,x,22222222]", IGW_JSON_STRICT, 4, 5, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/1", "unexpected character")); /* before the limit */
    CHECK(value(&j, "[1,2,x2222222]", IGW_JSON_STRICT, 4, 5, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_SIZE, "", NULL)); /* at the limit: could not have fitted */
    start(&j, "{\"x\": [1, 2] ,\"y\":1}", 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    igw_json_push_key(&j, k.ptr, k.len);
    CHECK(igw_json_value(&j, IGW_JSON_RFC8259, 4, 5, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_SIZE, "/x", NULL) && j.err_offset == 6);
    start(&j, "{\"x\": [1, 2] ,\"y\":1}", 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    igw_json_push_key(&j, k.ptr, k.len);
    CHECK(igw_json_value(&j, IGW_JSON_RFC8259, 4, 6, &raw) == 0 && str_is(raw, "[1, 2]", 6));
    igw_json_pop(&j);
    CHECK(igw_json_object_next(&j, &k) == 1 && str_is(k, "y", 1));
}

/* duplicate keys: STRICT only, after unescaping, the earliest repeat, pairwise and sorted */
static void test_value_duplicates(void)
{
    igw_json j;
    igw_str raw;
    const size_t any = SIZE_MAX;
    /* duplicates: STRICT only, compared after unescaping, path at the repeat */
    CHECK(value(&j, "{\"a\":1,\"b\":{\"c\":1,\"d\":[],\"c\":2}}", IGW_JSON_STRICT, 4, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_DUPLICATE, "/b/c", "duplicate object key") &&
          j.err_offset == 25);
    CHECK(value(&j, "{\"a\":1,\"b\":{\"c\":1,\"d\":[],\"c\":2}}", IGW_JSON_RFC8259, 4, any, &raw) == 0);
    CHECK(value(&j, "{\"a\":1,\"\\u0061\":2}", IGW_JSON_STRICT, 4, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_DUPLICATE, "/a", NULL) && j.err_offset == 7);
    CHECK(value(&j, "{\"a~/\":1,\"x\":1,\"a~/\":2,\"x\":3}", IGW_JSON_STRICT, 4, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_DUPLICATE, "/a~0~1", NULL));
    CHECK(value(&j, "[{\"a\":1},{\"a\":1},{\"b\":1,\"a\":2}]", IGW_JSON_STRICT, 4, any, &raw) == 0);
    CHECK(value(&j, "{\"\":1,\"\":2}", IGW_JSON_STRICT, 4, any, &raw) < 0 &&
          failure_is(&j, IGW_JERR_DUPLICATE, "/", NULL));
    CHECK(value(&j, "{\"a\":1,\"a\\u0000\":2,\"a\\u0000b\":3}", IGW_JSON_STRICT, 4, any, &raw) < 0 &&
          j.err == IGW_JERR_FORMAT);
    CHECK(value(&j, "{\"a\":1,\"a\\u0000\":2,\"a\\u0000b\":3}", IGW_JSON_RFC8259, 4, any, &raw) == 0);

    /* both sides of the pairwise/sorted switch: the earliest repeat wins */
    for (int n = 2; n <= 40; n++) {
        char doc[1024];
        size_t dl = 0, off = 0;
        doc[dl++] = '{';
        for (int i = 0; i < n; i++)
            dl += (size_t)snprintf(doc + dl, sizeof doc - dl, "%s\"k%d\":%d", i ? "," : "", i, i);
        memcpy(doc + dl, "}", 2);
        CHECK(value(&j, doc, IGW_JSON_STRICT, 4, any, &raw) == 0);
        dl += (size_t)snprintf(doc + dl, sizeof doc - dl, ",");
        off = dl;
        dl += (size_t)snprintf(doc + dl, sizeof doc - dl, "\"k%d\":0,\"k0\":0}", n - 1);
        CHECK(value(&j, doc, IGW_JSON_STRICT, 4, any, &raw) < 0 && j.err_offset == off);
        char want[16];
        snprintf(want, sizeof want, "/k%d", n - 1);
        CHECK(failure_is(&j, IGW_JERR_DUPLICATE, want, NULL));
    }

    /* a big object: sorted check, and the earliest repeat is reported */
    size_t cap = 20000 * 16, len = 0;
    char *big = malloc(cap);
    CHECK(big != NULL);
    if (big != NULL) {
        big[len++] = '{';
        for (int i = 0; i < 20000; i++)
            len += (size_t)snprintf(big + len, cap - len, "%s\"k%d\":%d", i ? "," : "", i, i);
        memcpy(big + len, "}", 2);
        CHECK(value(&j, big, IGW_JSON_STRICT, 4, any, &raw) == 0 && raw.len == len + 1);
        len += (size_t)snprintf(big + len, cap - len, ",\"k7\":1,\"k5000\":1,\"k7\":2}");
        CHECK(value(&j, big, IGW_JSON_STRICT, 4, any, &raw) < 0);
        CHECK(failure_is(&j, IGW_JERR_DUPLICATE, "/k7", NULL));
        free(big);
    }
}

/* STRICT numbers: safe integers, PostgreSQL's numeric bounds, doubles; RFC 8259 refuses only bad syntax */
static void test_value_strict_numbers(void)
{
    igw_json j;
    igw_str raw;
    const size_t any = SIZE_MAX;
    /* STRICT numbers */
    static const struct {
        const char *doc;
        igw_json_errkind strict;
    } nums[] = {
        {"9007199254740991", IGW_JERR_NONE},
        {"-9007199254740991", IGW_JERR_NONE},
        {"9007199254740992", IGW_JERR_RANGE},
        {"-9007199254740992", IGW_JERR_RANGE},
        {"123456789012345678901234567890", IGW_JERR_RANGE},
        {"-0", IGW_JERR_NONE},
        /* zero too: PostgreSQL's numeric bounds (exponent, digits after the point) */
        {"-0.0e-99999999999999999999", IGW_JERR_RANGE},
        {"0e99999999999999999999999", IGW_JERR_RANGE},
        {"0e100000", IGW_JERR_NONE},
        {"0e100001", IGW_JERR_RANGE},
        {"0e-16383", IGW_JERR_NONE},
        {"0.0e-16383", IGW_JERR_RANGE},
        {"1e-16384", IGW_JERR_RANGE},
        {"9007199254740992.0", IGW_JERR_NONE}, /* a double, not an integer */
        {"1e308", IGW_JERR_NONE},
        {"1.7976931348623157e308", IGW_JERR_NONE},  /* DBL_MAX */
        {"1.7976931348623158e308", IGW_JERR_NONE},  /* rounds down to DBL_MAX */
        {"1.7976931348623159e308", IGW_JERR_RANGE}, /* rounds to infinity */
        {"-1e309", IGW_JERR_RANGE},
        {"1E400", IGW_JERR_RANGE},
        {"1e99999999999999999999999999", IGW_JERR_RANGE},
        {"4.9406564584124654e-324", IGW_JERR_NONE}, /* smallest subnormal */
        {"3e-324", IGW_JERR_NONE},                  /* rounds up to it */
        {"2e-324", IGW_JERR_RANGE},                 /* rounds to zero */
        {"1e-400", IGW_JERR_RANGE},
        {"-1e-99999999999999999999", IGW_JERR_RANGE},
        {"0.0000000000000000000000000000000000000000000000000000000000000000000000000000001",
         IGW_JERR_NONE},
        {"1.5", IGW_JERR_NONE},
        {"01", IGW_JERR_SYNTAX},
        {"-", IGW_JERR_SYNTAX},
        {"1.e3", IGW_JERR_SYNTAX},
        {".5", IGW_JERR_SYNTAX},
        {"1e+", IGW_JERR_SYNTAX},
        {"NaN", IGW_JERR_SYNTAX},
        {"-Infinity", IGW_JERR_SYNTAX},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        int rs = value(&j, nums[i].doc, IGW_JSON_STRICT, 4, any, &raw);
        CHECK(rs == 0 ? nums[i].strict == IGW_JERR_NONE : j.err == nums[i].strict);
        if ((rs == 0) != (nums[i].strict == IGW_JERR_NONE) || j.err != nums[i].strict)
            printf("  strict number case %zu: %s -> %s\n", i, nums[i].doc,
                   igw_json_errkind_name(j.err));
        int rr = value(&j, nums[i].doc, IGW_JSON_RFC8259, 4, any, &raw);
        CHECK(nums[i].strict == IGW_JERR_SYNTAX ? rr < 0 && j.err == IGW_JERR_SYNTAX
                                                : rr == 0 && raw.len == strlen(nums[i].doc));
    }
}

/* long mantissas decided exactly beyond strtod's 800 digits, at the rounding boundaries */
static void test_value_number_rounding(void)
{
    igw_json j;
    igw_str raw;
    const size_t any = SIZE_MAX;
    /* long mantissas: exact decisions beyond the 800 digits passed to strtod */
    static char m[2100];
    memset(m, '0', sizeof m);
    m[0] = '1';
    snprintf(m + 1500, sizeof m - 1500, "e-1800"); /* 1e-301 */
    CHECK(value(&j, m, IGW_JSON_STRICT, 4, any, &raw) == 0);
    m[1499] = '7';
    CHECK(value(&j, m, IGW_JSON_STRICT, 4, any, &raw) == 0);
    snprintf(m + 1500, sizeof m - 1500, "e-1200"); /* 1e299 */
    CHECK(value(&j, m, IGW_JSON_STRICT, 4, any, &raw) == 0);
    snprintf(m + 1500, sizeof m - 1500, "e-1190"); /* 1e309 */
    CHECK(value(&j, m, IGW_JSON_STRICT, 4, any, &raw) < 0 && j.err == IGW_JERR_RANGE);
    snprintf(m + 1500, sizeof m - 1500, "e-1823"); /* ~1e-324: rounds to zero */
    CHECK(value(&j, m, IGW_JSON_STRICT, 4, any, &raw) < 0 && j.err == IGW_JERR_RANGE);
    /* the rounding boundaries, exactly and off by far less than 800 digits */
    static char b[4096];
    size_t nb = big_digits(b, 5, 1075, 1); /* 5^1075 * 10^-1075 = 2^-1075, half the
                                              smallest subnormal: a tie, rounds to 0 */
    snprintf(b + nb, sizeof b - nb, "e-1075");
    CHECK(value(&j, b, IGW_JSON_STRICT, 4, any, &raw) < 0 && j.err == IGW_JERR_RANGE);
    memset(b + nb, '0', 100);
    snprintf(b + nb + 100, sizeof b - nb - 100, "1e-1176"); /* a hair above: rounds up */
    CHECK(value(&j, b, IGW_JSON_STRICT, 4, any, &raw) == 0);
    b[nb - 1]--; /* 5^1075 ends in 5 */
    memset(b + nb, '9', 100);
    snprintf(b + nb + 100, sizeof b - nb - 100, "9e-1176"); /* a hair below: zero */
    CHECK(value(&j, b, IGW_JSON_STRICT, 4, any, &raw) < 0 && j.err == IGW_JERR_RANGE);
    /* 2^970 * (2^54 - 1) = 2^1024 - 2^970, midway between DBL_MAX and 2^1024:
     * a tie that rounds to even, i.e. to infinity */
    nb = big_digits(b, 2, 970, (UINT64_C(1) << 54) - 1);
    snprintf(b + nb, sizeof b - nb, "e0");
    CHECK(value(&j, b, IGW_JSON_STRICT, 4, any, &raw) < 0 && j.err == IGW_JERR_RANGE);
    b[nb - 1]--;
    b[nb] = '.';
    memset(b + nb + 1, '9', 600);
    b[nb + 601] = '\0'; /* a hair below: DBL_MAX */
    CHECK(value(&j, b, IGW_JSON_STRICT, 4, any, &raw) == 0);
    b[nb - 1]++;
    memset(b + nb + 1, '0', 600);
    memcpy(b + nb + 601, "1", 2); /* a hair above */
    CHECK(value(&j, b, IGW_JSON_STRICT, 4, any, &raw) < 0 && j.err == IGW_JERR_RANGE);
}

/* error paths and offsets inside free values */
static void test_value_paths(void)
{
    igw_json j;
    igw_str raw;
    const size_t any = SIZE_MAX;
    /* paths inside free values */
    CHECK(value(&j, "{\"a\":[1,2,{\"b\":tru}]}", IGW_JSON_RFC8259, 8, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/a/2/b", "invalid literal") && j.err_offset == 15);
    CHECK(value(&j, "[0, 1, 1e999]", IGW_JSON_STRICT, 8, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_RANGE, "/2", "number overflows a double") && j.err_offset == 7);
    CHECK(value(&j, "{\"k\":\"\\ud800\"}", IGW_JSON_RFC8259, 8, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_UTF8, "/k", NULL));
    CHECK(value(&j, "{\"a\":1,}", IGW_JSON_RFC8259, 8, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "", "trailing comma in object"));
    CHECK(value(&j, "[[1,]]", IGW_JSON_RFC8259, 8, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/0", "trailing comma in array"));
    CHECK(value(&j, "{\"a\" 1}", IGW_JSON_RFC8259, 8, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/a", "expected ':' after object key"));
    CHECK(value(&j, "{\"a\":1 \"b\":2}", IGW_JSON_RFC8259, 8, any, &raw) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "/a", "expected ',' or '}' after object member"));
    CHECK(value(&j, "[\"a\\u00e9\", -1.5e-3, true, false, null, {}, []]", IGW_JSON_STRICT, 2,
                any, &raw) == 0);
}

/* igw_json_validate: trailing data, empty, NUL; escaped keys without arena room are NOMEM */
static void test_value_validate(void)
{
    igw_json j;
    /* the convenience wrapper */
    CHECK(igw_json_validate(" {\"a\" : [1, 2]} \n", 17, IGW_JSON_STRICT, 4, &arena, &j) == 0);
    CHECK(igw_json_validate("{} {}", 5, IGW_JSON_STRICT, 4, &arena, &j) < 0 &&
          failure_is(&j, IGW_JERR_TRAILING, "", NULL) && j.err_offset == 3);
    CHECK(igw_json_validate("", 0, IGW_JSON_STRICT, 4, &arena, &j) < 0 &&
          j.err == IGW_JERR_SYNTAX && j.err_offset == 0);
    CHECK(igw_json_validate(NULL, 0, IGW_JSON_RFC8259, 4, &arena, &j) < 0 &&
          j.err == IGW_JERR_SYNTAX);
    CHECK(igw_json_validate("\"a\0\"", 4, IGW_JSON_RFC8259, 4, &arena, &j) < 0 &&
          j.err == IGW_JERR_SYNTAX);

    /* escaped keys need the arena; without room that is NOMEM, not a crash */
    igw_arena tiny;
    igw_arena_init(&tiny, 1);
    CHECK(igw_json_validate("{\"\\u0061bc\":1}", 14, IGW_JSON_RFC8259, 4, &tiny, &j) < 0 &&
          j.err == IGW_JERR_NOMEM);
    CHECK(igw_json_validate("{\"abc\":1}", 9, IGW_JSON_RFC8259, 4, &tiny, &j) == 0);
    CHECK(igw_json_validate("{\"abc\":1}", 9, IGW_JSON_RFC8259, 4, NULL, &j) == 0);
    igw_arena_free(&tiny);
}


/* ------------------------------------------------- block scanning, state */

/* Starts j on an exact-size heap copy of n bytes, so AddressSanitizer
 * reports any read past the end of the input (which is not padded). The
 * copy lives until the next call. */
static const char *start_exact(igw_json *j, const void *s, size_t n, unsigned max_depth)
{
    static char *copy;
    free(copy);
    copy = malloc(n != 0 ? n : 1);
    if (copy == NULL) {
        printf("FAIL: out of memory\n");
        exit(1);
    }
    memcpy(copy, s, n);
    igw_arena_reset(&arena);
    igw_json_init(j, copy, n, &arena, max_depth);
    return copy;
}

/* Every byte value at every offset around the 16- and 64-byte blocks of the
 * string scan, with the string ending at, before and past the end of an
 * unpadded buffer. */
static void test_string_blocks(void)
{
    static const size_t lens[] = {1, 14, 15, 16, 17, 31, 32, 33, 63, 64, 65, 79, 80, 81, 95,
                                  96, 97, 127, 128, 129, 143, 200};
    char doc[256];
    unsigned bad = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t len = lens[li]; /* content bytes between the quotes */
        for (size_t pos = 0; pos < len; pos++) {
            for (unsigned b = 0; b < 256; b++) {
                doc[0] = '"';
                memset(doc + 1, 'a', len);
                doc[1 + pos] = (char)b;
                doc[1 + len] = '"';
                for (int tail = 0; tail < 2; tail++) { /* closing quote last, or 20 bytes more */
                    size_t n = 2 + len;
                    if (tail) {
                        memset(doc + n, ' ', 19);
                        doc[n + 19] = '1';
                        n += 20;
                    }
                    igw_json j;
                    igw_str s;
                    start_exact(&j, doc, n, 4);
                    int r = igw_json_string(&j, &s);
                    bool ok;
                    if (b < 0x20)
                        ok = r < 0 && j.err == IGW_JERR_SYNTAX && j.err_offset == 1 + pos &&
                             strcmp(j.reason, "control character in string") == 0;
                    else if (b == '"')
                        ok = r == 0 && s.len == pos && j.p == j.start + 2 + pos;
                    else if (b == '\\') /* "\a" is no escape; \" leaves the string open */
                        ok = r < 0 && j.err == IGW_JERR_SYNTAX &&
                             j.err_offset == (pos + 1 == len ? n : 1 + pos);
                    else if (b >= 0x80) /* no sequence continues with 'a' or '"' */
                        ok = r < 0 && j.err == IGW_JERR_UTF8 && j.err_offset == 1 + pos;
                    else
                        ok = r == 0 && s.len == len && j.p == j.start + 2 + len;
                    if (!ok && bad++ < 5)
                        printf("  len %zu pos %zu byte 0x%02x tail %d: r=%d %s at %zu\n", len, pos,
                               b, tail, r, igw_json_errkind_name(j.err), j.err_offset);
                }
            }
        }
        /* unterminated: EOF is reported at the end, whatever the length */
        igw_json j;
        igw_str s;
        memset(doc + 1, 'a', len);
        start_exact(&j, doc, 1 + len, 4);
        CHECK(igw_json_string(&j, &s) < 0 && j.err == IGW_JERR_SYNTAX && j.err_offset == 1 + len);
    }
    CHECK(bad == 0);

    /* multi-byte sequences across block edges; scanning resumes after them */
    static const char *const seqs[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                                       "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"};
    bad = 0;
    for (size_t si = 0; si < sizeof seqs / sizeof seqs[0]; si++) {
        size_t sl = strlen(seqs[si]);
        for (size_t pos = 0; pos + sl <= 150; pos++) {
            size_t len = 150;
            doc[0] = '"';
            memset(doc + 1, 'b', len);
            memcpy(doc + 1 + pos, seqs[si], sl);
            /* a second sequence 17 bytes later, and a control byte at the end */
            if (pos + 17 + sl <= len)
                memcpy(doc + 1 + pos + 17, seqs[si], sl);
            doc[1 + len] = '"';
            igw_json j;
            igw_str s;
            const char *copy = start_exact(&j, doc, 2 + len, 4);
            bool ok = igw_json_string(&j, &s) == 0 && s.len == len && s.ptr == copy + 1;
            /* cut the sequence by a control byte: refused at the lead byte */
            doc[1 + pos + sl - 1] = '\x01';
            start_exact(&j, doc, 2 + len, 4);
            ok = ok && igw_json_string(&j, &s) < 0 && j.err == IGW_JERR_UTF8 && j.err_offset == 1 + pos;
            /* cut by the end of input */
            start_exact(&j, doc, 1 + pos + sl - 1, 4);
            ok = ok && igw_json_string(&j, &s) < 0 && j.err == IGW_JERR_SYNTAX &&
                 j.err_offset == pos + sl;
            if (!ok && bad++ < 5)
                printf("  seq %zu at %zu: %s at %zu\n", si, pos, igw_json_errkind_name(j.err),
                       j.err_offset);
        }
    }
    CHECK(bad == 0);

    /* escapes anywhere in a long string: decoded copy, scan resumes after */
    bad = 0;
    for (size_t pos = 0; pos + 12 <= 120; pos++) {
        doc[0] = '"';
        memset(doc + 1, 'c', 120);
        memcpy(doc + 1 + pos, "\\ud83d\\ude00", 12);
        doc[121] = '"';
        igw_json j;
        igw_str s;
        start_exact(&j, doc, 122, 4);
        bool ok = igw_json_string(&j, &s) == 0 && s.len == 112 &&
                  memcmp(s.ptr + pos, "\xF0\x9F\x98\x80", 4) == 0 &&
                  (pos == 108 || s.ptr[111] == 'c');
        if (!ok && bad++ < 5)
            printf("  escape at %zu: %s at %zu\n", pos, igw_json_errkind_name(j.err), j.err_offset);
    }
    CHECK(bad == 0);
}

/* Whitespace runs of every length up to past two 64-byte blocks, mixed and
 * spaces only, before a value, before the end, and broken by a byte that is
 * no JSON whitespace (form feed, vertical tab, NUL). */
static void test_ws_blocks(void)
{
    char doc[300];
    unsigned bad = 0;
    for (size_t n = 0; n <= 200; n++) {
        for (int mixed = 0; mixed < 2; mixed++) {
            for (size_t i = 0; i < n; i++)
                doc[i] = mixed ? " \t\r\n"[(i * 7 + n) % 4] : ' ';
            igw_json j;
            bool b = false;
            doc[n] = 't';
            memcpy(doc + n, "true", 4);
            start_exact(&j, doc, n + 4, 4);
            bool ok = igw_json_bool(&j, &b) == 0 && b && igw_json_finish(&j) == 0;
            start_exact(&j, doc, n, 4); /* whitespace up to the end */
            ok = ok && igw_json_finish(&j) == 0 && igw_json_peek(&j) == -1;
            memcpy(doc, "1", 1); /* "1" then n-1 bytes of whitespace */
            start_exact(&j, doc, n != 0 ? n : 1, 4);
            int64_t v;
            ok = ok && igw_json_int(&j, &v, 0, 9) == 0 && igw_json_finish(&j) == 0;
            for (size_t k = 0; k < n; k += 1 + k / 8) {
                static const char stray[] = {'\f', '\v', '\0', 'x'};
                for (size_t si = 0; si < sizeof stray; si++) {
                    for (size_t i = 0; i < n; i++)
                        doc[i] = mixed ? " \t\r\n"[(i * 7 + n) % 4] : ' ';
                    doc[k] = stray[si];
                    start_exact(&j, doc, n, 4);
                    ok = ok && igw_json_finish(&j) < 0 && j.err == IGW_JERR_TRAILING &&
                         j.err_offset == k;
                }
            }
            if (!ok && bad++ < 5)
                printf("  ws run %zu mixed %d: %s at %zu\n", n, mixed, igw_json_errkind_name(j.err),
                       j.err_offset);
        }
    }
    CHECK(bad == 0);
}

/* The first-member state: one bit per depth, set on open, cleared at the
 * first member, never confused by siblings, free values or sub-scanners. */
static void test_members(void)
{
    igw_json j;
    igw_str k;
    int64_t v;

    /* empty and non-empty containers side by side, at every level */
    start(&j, "[[],[ ],{},{ \"a\" : [ ] },[[1],[]]]", 8);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 0);
    CHECK(igw_json_array_next(&j) == 1);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 0);
    CHECK(igw_json_array_next(&j) == 1);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 0);
    CHECK(igw_json_array_next(&j) == 1);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1 && str_is(k, "a", 1));
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 0);
    CHECK(igw_json_object_next(&j, &k) == 0);
    CHECK(igw_json_array_next(&j) == 1);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    CHECK(igw_json_int(&j, &v, 0, 9) == 0 && igw_json_array_next(&j) == 0);
    CHECK(igw_json_array_next(&j) == 1);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 0);
    CHECK(igw_json_array_next(&j) == 0 && igw_json_array_next(&j) == 0 && j.depth == 0);
    CHECK(igw_json_finish(&j) == 0);

    /* a comma is required after an empty container, refused before the first */
    start(&j, "[[] []]", 4);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 0);
    CHECK(igw_json_array_next(&j) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "", "expected ',' or ']' after array item"));
    start(&j, "{\"a\":{}\"b\":1}", 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 0);
    CHECK(igw_json_object_next(&j, &k) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "", "expected ',' or '}' after object member"));
    start(&j, "[,1]", 4);
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    CHECK(igw_json_int(&j, &v, 0, 9) < 0 && j.err == IGW_JERR_SYNTAX && j.err_offset == 1);
    start(&j, "{ , \"a\":1}", 4);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) < 0);
    CHECK(failure_is(&j, IGW_JERR_SYNTAX, "", "expected an object key") && j.err_offset == 2);
    /* a member read where no container is open needs a ',' */
    start(&j, "\"a\":1", 4);
    CHECK(igw_json_object_next(&j, &k) < 0 && j.err == IGW_JERR_SYNTAX);

    /* a free value opens and closes containers of its own below the current
     * depth; the open object continues with its second member after it */
    start(&j, "{\"a\":{\"x\":[{},[]]},\"b\":[{\"y\":1}],\"c\":2}", 8);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    CHECK(igw_json_value(&j, IGW_JSON_STRICT, 8, SIZE_MAX, NULL) == 0);
    CHECK(igw_json_object_next(&j, &k) == 1 && str_is(k, "b", 1));
    CHECK(igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1);
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    CHECK(igw_json_int(&j, &v, 0, 9) == 0 && igw_json_object_next(&j, &k) == 0);
    CHECK(igw_json_array_next(&j) == 0);
    CHECK(igw_json_object_next(&j, &k) == 1 && str_is(k, "c", 1));
    CHECK(igw_json_int(&j, &v, 0, 9) == 0 && v == 2 && igw_json_object_next(&j, &k) == 0);
    CHECK(igw_json_finish(&j) == 0);

    /* every depth up to the ceiling has its own bit: [{"k":[{"k":...}]}] */
    char deep[1000];
    size_t n = 0;
    for (int d = 0; d < IGW_JSON_MAX_DEPTH / 2; d++) {
        memcpy(deep + n, "[{\"k\":", 6);
        n += 6;
    }
    deep[n++] = '1';
    for (int d = 0; d < IGW_JSON_MAX_DEPTH / 2; d++) {
        memcpy(deep + n, ",2},3]", 6);
        n += 6;
    }
    start_exact(&j, deep, n, IGW_JSON_MAX_DEPTH);
    bool ok = true;
    for (int d = 0; d < IGW_JSON_MAX_DEPTH / 2; d++)
        ok = ok && igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1 &&
             igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1;
    CHECK(ok && j.depth == IGW_JSON_MAX_DEPTH && igw_json_int(&j, &v, 0, 9) == 0);
    for (int d = 0; d < IGW_JSON_MAX_DEPTH / 2; d++) /* ',2' is a bad key, ',3' an item */
        ok = ok && igw_json_object_next(&j, &k) < 0;
    CHECK(ok && failure_is(&j, IGW_JERR_SYNTAX, "", "expected an object key"));
    CHECK(j.err_offset == (size_t)(IGW_JSON_MAX_DEPTH / 2 * 6 + 2));
    start_exact(&j, deep, n, IGW_JSON_MAX_DEPTH);
    for (int d = 0; d < IGW_JSON_MAX_DEPTH / 2; d++)
        ok = ok && igw_json_array_begin(&j) == 0 && igw_json_array_next(&j) == 1 &&
             igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1;
    CHECK(ok && igw_json_int(&j, &v, 0, 9) == 0);
    for (int d = 0; ok && d < IGW_JSON_MAX_DEPTH / 2; d++) {
        igw_json_push_key(&j, "k", 1);
        ok = igw_json_peek(&j) == ',' && (j.p++, igw_json_int(&j, &v, 0, 9) == 0) && v == 2 &&
             igw_json_object_next(&j, &k) == 0 && igw_json_array_next(&j) == 1 &&
             igw_json_int(&j, &v, 0, 9) == 0 && v == 3 && igw_json_array_next(&j) == 0;
        igw_json_pop(&j);
    }
    CHECK(ok && j.depth == 0 && igw_json_finish(&j) == 0);

    /* a sub-scanner as igw_decode_held makes one: fresh state, started at
     * the depth of the parent field, opening its value itself */
    const char *body = "{\"params\":{\"x\":1,\"on\":true},\"method\":\"m\"}";
    start(&j, body, 3);
    igw_str raw;
    CHECK(igw_json_object_begin(&j) == 0 && igw_json_object_next(&j, &k) == 1);
    unsigned held_depth = j.depth;
    CHECK(igw_json_value(&j, IGW_JSON_RFC8259, 2, SIZE_MAX, &raw) == 0);
    CHECK(igw_json_object_next(&j, &k) == 1 && str_is(k, "method", 6));
    igw_json sub;
    igw_json_init(&sub, raw.ptr, raw.len, j.arena, j.max_depth);
    sub.start = j.start;
    sub.depth = held_depth;
    cmd c;
    memset(&c, 0, sizeof c);
    CHECK(decode_params(&sub, &c) == 0 && igw_json_finish(&sub) == 0);
    CHECK(c.x == 1 && c.on && sub.depth == held_depth);
    igw_json_init(&sub, raw.ptr, raw.len - 1, j.arena, j.max_depth); /* cut before '}' */
    sub.start = j.start;
    sub.depth = held_depth;
    CHECK(decode_params(&sub, &c) < 0 && sub.err == IGW_JERR_SYNTAX &&
          sub.err_offset == (size_t)(raw.ptr + raw.len - 1 - body));
    igw_json_init(&sub, "{\"x\":1}", 7, j.arena, j.max_depth); /* depth limit still counts */
    sub.depth = held_depth + 2;
    CHECK(decode_params(&sub, &c) < 0 && sub.err == IGW_JERR_DEPTH);
}

/* Reads {"key":int,...} with the pull API; the keys go to keys[]. */
static int read_flat(igw_json *j, igw_str *keys, size_t cap, size_t *n)
{
    igw_str k;
    int r;
    int64_t v;
    *n = 0;
    if (igw_json_object_begin(j) < 0)
        return -1;
    while ((r = igw_json_object_next(j, &k)) == 1) {
        if (*n < cap)
            keys[(*n)++] = k;
        if (igw_json_int(j, &v, 0, 9) < 0)
            return -1;
    }
    return r < 0 ? -1 : igw_json_finish(j);
}

/* Members of every key length around the 16-byte block, packed or spaced,
 * plain or with escapes, UTF-8 or a raw control byte in the key, and every
 * prefix of each document: the packed fast path and the general code must
 * agree byte for byte. */
static void test_member_layouts(void)
{
    static const char *const inserts[] = {"", "\\n", "\xC3\xA9", "\\u00e9", "\x01"};
    static const char *const decoded[] = {"", "\n", "\xC3\xA9", "\xC3\xA9", NULL};
    static const char *const seps[][3] = {{"", "", ""}, {" ", "", ""}, {"", " ", ""},
                                          {"", "", "\n  "}, {"\t", "\r\n", " "}};
    unsigned bad = 0;
    for (size_t len = 0; len <= 40; len++) {
        for (size_t ii = 0; ii < sizeof inserts / sizeof inserts[0]; ii++) {
            for (size_t si = 0; si < sizeof seps / sizeof seps[0]; si++) {
                if (ii != 0 && len == 0)
                    continue;
                /* key: len 'k' bytes with the insert at len / 2 */
                char key[64], want[64];
                size_t h = len / 2;
                snprintf(key, sizeof key, "%.*s%s%.*s", (int)h, "kkkkkkkkkkkkkkkkkkkk", inserts[ii],
                         (int)(len - h), "kkkkkkkkkkkkkkkkkkkkkkkkk");
                if (decoded[ii] != NULL)
                    snprintf(want, sizeof want, "%.*s%s%.*s", (int)h, "kkkkkkkkkkkkkkkkkkkk",
                             decoded[ii], (int)(len - h), "kkkkkkkkkkkkkkkkkkkkkkkkk");
                /* {"key":1,"key":2,"a":3} with the separators: before ':', after ':', after ',' */
                char doc[256];
                int dl = snprintf(doc, sizeof doc, "{\"%s\"%s:%s1,%s\"%s\"%s:%s2,%s\"a\":3}", key,
                                  seps[si][0], seps[si][1], seps[si][2], key, seps[si][0],
                                  seps[si][1], seps[si][2]);
                igw_json j;
                igw_str keys[4];
                size_t n;
                start_exact(&j, doc, (size_t)dl, 4);
                int r = read_flat(&j, keys, 4, &n);
                bool ok;
                if (decoded[ii] == NULL) {
                    ok = r < 0 && j.err == IGW_JERR_SYNTAX && j.err_offset == 2 + h;
                } else {
                    size_t wl = strlen(want);
                    ok = r == 0 && n == 3 && str_is(keys[0], want, wl) && str_is(keys[1], want, wl) &&
                         str_is(keys[2], "a", 1);
                    for (int cut = 0; ok && cut < dl; cut++) {
                        start_exact(&j, doc, (size_t)cut, 4);
                        ok = read_flat(&j, keys, 4, &n) < 0 &&
                             failure_is(&j, IGW_JERR_SYNTAX, "", "unexpected end of input") &&
                             j.err_offset == (size_t)cut;
                    }
                }
                if (!ok && bad++ < 5)
                    printf("  key len %zu insert %zu seps %zu: %s \"%s\" at %zu\n", len, ii, si,
                           igw_json_errkind_name(j.err), j.reason, j.err_offset);
            }
        }
    }
    CHECK(bad == 0);

    /* arrays, packed and spaced, and every prefix */
    static const char *const arrays[] = {"[1,2,[3,[]],[],4]", "[ 1 , 2 ,[ 3,[ ] ] ,[],\n4 ]",
                                         "[[[[]]],[[]]]"};
    for (size_t ai = 0; ai < sizeof arrays / sizeof arrays[0]; ai++) {
        size_t n = strlen(arrays[ai]);
        igw_json j;
        CHECK((start_exact(&j, arrays[ai], n, 8), igw_json_value(&j, IGW_JSON_STRICT, 8, SIZE_MAX,
                                                                 NULL) == 0));
        for (size_t cut = 0; cut <= n; cut++) {
            /* walk with the pull API: every item is an int or an array */
            start_exact(&j, arrays[ai], cut, 8);
            int depth = 0, r = 0;
            if (igw_json_array_begin(&j) == 0) {
                depth = 1;
                while (depth > 0 && r >= 0) {
                    r = igw_json_array_next(&j);
                    if (r == 0) {
                        depth--;
                    } else if (r == 1) {
                        int64_t v;
                        if (igw_json_peek(&j) == '[')
                            r = igw_json_array_begin(&j) == 0 ? (depth++, 1) : -1;
                        else
                            r = igw_json_int(&j, &v, 0, 9);
                    }
                }
            }
            bool ok = cut == n ? r >= 0 && depth == 0 && igw_json_finish(&j) == 0
                               : j.err == IGW_JERR_SYNTAX && j.err_offset == cut;
            CHECK(ok);
            if (!ok)
                printf("  array %zu cut %zu: %s at %zu\n", ai, cut, igw_json_errkind_name(j.err),
                       j.err_offset);
        }
    }
}

/* Integers around the 16-digit fast path and at an unpadded end. */
static void test_int_edges(void)
{
    static const char *const safe = "integer beyond the safe integer range";
    const struct {
        const char *doc;
        igw_json_errkind kind;
        int64_t want;
        const char *reason;
    } cases[] = {
        {"1234567890123456", IGW_JERR_NONE, INT64_C(1234567890123456), NULL},
        {"-1234567890123456", IGW_JERR_NONE, -INT64_C(1234567890123456), NULL},
        {"9999999999999999", IGW_JERR_RANGE, 0, safe},
        {"12345678901234567", IGW_JERR_RANGE, 0, safe},
        {"00000000000000000", IGW_JERR_INTEGER, 0, "leading zero is not allowed in an integer"},
        {"0000000000000001", IGW_JERR_INTEGER, 0, "leading zero is not allowed in an integer"},
        {"1234567890123456.5", IGW_JERR_INTEGER, 0, NULL},
        {"12345678901234567.5", IGW_JERR_INTEGER, 0, NULL},
        {"12345678901234567e0", IGW_JERR_INTEGER, 0, NULL},
        {"7E1", IGW_JERR_INTEGER, 0, NULL},
        {"7.", IGW_JERR_SYNTAX, 0, "unexpected end of input"},
        {"7.e", IGW_JERR_SYNTAX, 0, "expected a digit after '.'"},
        {"7e", IGW_JERR_SYNTAX, 0, "unexpected end of input"},
        {"-", IGW_JERR_SYNTAX, 0, "unexpected end of input"},
        {"-0", IGW_JERR_NONE, 0, NULL},
        {"0", IGW_JERR_NONE, 0, NULL},
        {"0-", IGW_JERR_NONE, 0, NULL}, /* the number ends at '-' */
        {"42", IGW_JERR_NONE, 42, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        igw_json j;
        int64_t v = -1;
        start_exact(&j, cases[i].doc, strlen(cases[i].doc), 4);
        int r = igw_json_int(&j, &v, INT64_MIN, INT64_MAX);
        bool ok = cases[i].kind == IGW_JERR_NONE
                      ? r == 0 && v == cases[i].want
                      : r < 0 && failure_is(&j, cases[i].kind, "", cases[i].reason);
        CHECK(ok);
        if (!ok)
            printf("  case %zu: %s\n", i, cases[i].doc);
    }
}

/* The sorted duplicate check against a pairwise reference, on objects with
 * random keys (many alike) and repeats in random places. */
/* Reference for duplicate checks: the index of the first of the n strings
 * (stride bytes apart) equal to an earlier one, by pairwise compares; n
 * when all differ. */
static size_t first_repeat(const char *items, size_t stride, size_t n)
{
    for (size_t b = 1; b < n; b++)
        for (size_t a = 0; a < b; a++)
            if (strcmp(items + a * stride, items + b * stride) == 0)
                return b;
    return n;
}

static void test_dup_sort(void)
{
    static char doc[1 << 16];
    static size_t offs[2000];
    static char keys[2000][8];
    uint32_t seed = 12345;
    unsigned bad = 0;
    for (int round = 0; round < 200; round++) {
        seed = seed * 1103515245u + 12345u;
        size_t nkeys = 17 + (seed >> 8) % (round < 150 ? 150 : 2000);
        size_t len = 0;
        doc[len++] = '{';
        for (size_t i = 0; i < nkeys; i++) {
            seed = seed * 1103515245u + 12345u;
            /* a small alphabet and lengths 0..5: repeats happen, often late */
            size_t kl = (seed >> 10) % 6;
            uint32_t alpha = round % 3 == 0 ? 26 : 2;
            for (size_t c = 0; c < kl; c++) {
                seed = seed * 1103515245u + 12345u;
                keys[i][c] = (char)('a' + (seed >> 16) % alpha);
            }
            keys[i][kl] = '\0';
            if (i != 0)
                doc[len++] = ',';
            offs[i] = len;
            len += (size_t)snprintf(doc + len, sizeof doc - len, "\"%s\":%zu", keys[i], i);
        }
        doc[len++] = '}';
        /* reference: the earliest key equal to an earlier one */
        size_t want = first_repeat(keys[0], sizeof keys[0], nkeys);
        want = want == nkeys ? SIZE_MAX : want;
        igw_json j;
        int r = (start_exact(&j, doc, len, 4), igw_json_value(&j, IGW_JSON_STRICT, 4, SIZE_MAX, NULL));
        bool ok = want == SIZE_MAX ? r == 0
                                   : r < 0 && j.err == IGW_JERR_DUPLICATE && j.err_offset == offs[want];
        if (!ok && bad++ < 5)
            printf("  round %d (%zu keys): r=%d %s at %zu, want key %zu\n", round, nkeys, r,
                   igw_json_errkind_name(j.err), j.err_offset, want);
    }
    CHECK(bad == 0);
}

/* igw_decode_unique_str against pairwise compares: arrays of 1..300 items
 * from small alphabets (repeats often late, past the switch to the hash
 * set), and ids that differ only in their last bytes (a weak hash puts
 * them all in one slot chain: found equal or not, never wrongly). */
static void test_unique_items(void)
{
    static igw_str v[300];
    static char text[300][24];
    uint32_t seed = 777;
    unsigned bad = 0;
    for (int round = 0; round < 400; round++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t n = 1 + (seed >> 8) % 300;
        for (uint32_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            if (round % 2)
                snprintf(text[i], sizeof text[i], "90071992547%05u", (seed >> 8) % (n * 4));
            else
                for (size_t c = 0, kl = (seed >> 10) % 5; c <= kl; c++) {
                    seed = seed * 1103515245u + 12345u;
                    text[i][c] = (char)('a' + (seed >> 16) % 3);
                    text[i][c + 1] = '\0';
                }
            v[i] = (igw_str){text[i], strlen(text[i])};
        }
        uint32_t want = (uint32_t)first_repeat(text[0], sizeof text[0], n);
        igw_json j;
        start(&j, "[]", 4);
        igw_decode_set set = {0};
        uint32_t got = n;
        for (uint32_t i = 0; i < n && got == n; i++)
            if (igw_decode_unique_str(&j, &set, v, i))
                got = i;
        bool ok = got == want && (got == n ? j.err == IGW_JERR_NONE : j.err == IGW_JERR_DUPLICATE);
        if (!ok && bad++ < 5)
            printf("  round %d (%u items): duplicate at %u, want %u (%s)\n", round, n, got, want,
                   igw_json_errkind_name(j.err));
    }
    CHECK(bad == 0);
}

static void test_arena(void)
{
    igw_arena a;
    igw_arena_init(&a, 0);
    void *first = NULL;
    size_t sizes[] = {1, 15, 16, 17, 0, 100, 4000, 5000, 70000, 3, 2000000, 8};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = igw_arena_alloc(&a, sizes[i]);
        CHECK(p != NULL && ((uintptr_t)p & 15) == 0);
        if (p != NULL && sizes[i] != 0)
            memset(p, 0xAB, sizes[i]); /* ASan catches overlap or overrun */
        if (i == 0)
            first = p;
    }
    CHECK(igw_arena_alloc(&a, SIZE_MAX) == NULL && igw_arena_alloc(&a, SIZE_MAX - 8) == NULL);
    char *s = igw_arena_strndup(&a, "hello", 3);
    CHECK(s != NULL && strcmp(s, "hel") == 0);
    CHECK(igw_arena_strndup(&a, "x", SIZE_MAX) == NULL);
    igw_arena_reset(&a);
    CHECK(a.total == 0 && a.head != NULL);
    CHECK(igw_arena_alloc(&a, 10) == first); /* the first chunk is reused */
    igw_arena_free(&a);
    CHECK(a.head == NULL);

    igw_arena_init(&a, 100);
    CHECK(igw_arena_alloc(&a, 60) != NULL && igw_arena_alloc(&a, 40) != NULL);
    CHECK(igw_arena_alloc(&a, 1) == NULL && a.total == 100);
    igw_arena_reset(&a);
    CHECK(igw_arena_alloc(&a, 100) != NULL && igw_arena_alloc(&a, 1) == NULL);
    igw_arena_free(&a);

    /* a huge first chunk is not pinned by reset */
    igw_arena_init(&a, 0);
    CHECK(igw_arena_alloc(&a, 1 << 20) != NULL);
    igw_arena_reset(&a);
    CHECK(a.head == NULL);
    igw_arena_free(&a);
}

/* igw_bytes_eq (bytes.h), which the generated route, key and enum matchers
 * use: every length up to past five words, at every alignment, one bit
 * changed at every position (the overlapping last word included), and the
 * constant-length form the matchers compile. */
static void test_bytes_eq(void)
{
    unsigned char a[96], b[96];
    for (size_t i = 0; i < sizeof a; i++)
        a[i] = (unsigned char)(i * 37 + 11);
    for (size_t off = 0; off < 8; off++) {
        for (size_t n = 0; n + off <= 80; n++) {
            memcpy(b, a, sizeof b);
            CHECK(igw_bytes_eq(a + off, b + off, n));
            for (size_t i = 0; i < n; i++) {
                b[off + i] ^= (unsigned char)(1u << (i % 8));
                CHECK(!igw_bytes_eq(a + off, b + off, n));
                b[off + i] = a[off + i];
            }
            /* bytes outside [0, n) do not count */
            b[off + n] ^= 0xFF;
            if (off > 0)
                b[off - 1] ^= 0xFF;
            CHECK(igw_bytes_eq(a + off, b + off, n));
        }
    }
    char path[] = "/api/v1/im/interaction/commands";
    CHECK(igw_bytes_eq(path, "/api/v1/im/interaction/commands", 31));
    path[30] = 'S';
    CHECK(!igw_bytes_eq(path, "/api/v1/im/interaction/commands", 31));
    path[30] = 's';
    path[0] = '.';
    CHECK(!igw_bytes_eq(path, "/api/v1/im/interaction/commands", 31));
}

/* In this order (the arena is shared). */
static const check_case cases[] = {
    CHECK_CASE(test_decoder),
    CHECK_CASE(test_keys),
    CHECK_CASE(test_types),
    CHECK_CASE(test_integers),
    CHECK_CASE(test_strings),
    CHECK_CASE(test_paths),
    CHECK_CASE(test_lazy_paths),
    CHECK_CASE(test_identifier_format),
    CHECK_CASE(test_depth),
    CHECK_CASE(test_value_depth),
    CHECK_CASE(test_value_size),
    CHECK_CASE(test_value_duplicates),
    CHECK_CASE(test_value_strict_numbers),
    CHECK_CASE(test_value_number_rounding),
    CHECK_CASE(test_value_paths),
    CHECK_CASE(test_value_validate),
    CHECK_CASE(test_string_blocks),
    CHECK_CASE(test_ws_blocks),
    CHECK_CASE(test_members),
    CHECK_CASE(test_member_layouts),
    CHECK_CASE(test_int_edges),
    CHECK_CASE(test_dup_sort),
    CHECK_CASE(test_unique_items),
    CHECK_CASE(test_arena),
    CHECK_CASE(test_bytes_eq),
};

int main(void)
{
    igw_arena_init(&arena, (size_t)16 << 20);
    CHECK_RUN_ALL(cases);
    igw_arena_free(&arena);
    return check_summary("scanner");
}
