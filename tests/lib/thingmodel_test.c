/* thingmodel_test.c - thing model loading and report/event/action validation.
 * Usage: thingmodel_test [demo-model.json] (default tests/lib/demo-model.json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "json.h"
#include "thingmodel.h"

#include "../check.h"

static igw_thingmodel *M;
static igw_arena scratch;

enum what { PROPS, CONTROL, EVENT, INPUT, OUTPUT };

static int run(enum what w, const char *id, const char *json, igw_json *e)
{
    igw_arena_reset(&scratch);
    size_t n = strlen(json), idn = id ? strlen(id) : 0;
    switch (w) {
    case PROPS: return igw_thingmodel_check_properties(M, json, n, 0, "/params", &scratch, e);
    case CONTROL:
        return igw_thingmodel_check_properties(M, json, n, IGW_TM_WRITABLE_ONLY, "/params",
                                               &scratch, e);
    case EVENT: return igw_thingmodel_check_event(M, id, idn, json, n, "/params", &scratch, e);
    case INPUT:
        return igw_thingmodel_check_action_input(M, id, idn, json, n, "/input", &scratch, e);
    case OUTPUT:
        return igw_thingmodel_check_action_output(M, id, idn, json, n, "/output", &scratch, e);
    }
    return -2;
}

static void ok_at(int line, enum what w, const char *id, const char *json)
{
    igw_json e;
    if (run(w, id, json, &e) == 0)
        check(true, __FILE__, line, json, NULL);
    else
        check(false, __FILE__, line, json, "refused: %s %s (%s)", e.path, e.reason, igw_json_errkind_name(e.err));
}

/* Refused with `kind` at `path`; `reason` (if not NULL) is a substring of the reason. */
static void bad_at(int line, enum what w, const char *id, const char *json, igw_json_errkind kind,
                   const char *path, const char *reason)
{
    igw_json e;
    if (run(w, id, json, &e) == 0)
        check(false, __FILE__, line, json, "accepted");
    else
        check(e.err == kind && strcmp(e.path, path) == 0 && (reason == NULL || strstr(e.reason, reason) != NULL),
              __FILE__, line, json, "got %s %s \"%s\", want %s %s \"%s\"", igw_json_errkind_name(e.err), e.path,
              e.reason, igw_json_errkind_name(kind), path, reason ? reason : "");
}

#define OK(json) ok_at(__LINE__, PROPS, NULL, json)
#define BAD(json, kind, path, reason) bad_at(__LINE__, PROPS, NULL, json, kind, path, reason)
#define OKW(json) ok_at(__LINE__, CONTROL, NULL, json)
#define BADW(json, kind, path, reason) bad_at(__LINE__, CONTROL, NULL, json, kind, path, reason)

static void test_lookup(void)
{
    CHECK(M->properties.n == 12 && M->nevents == 2 && M->nactions == 2);
    const igw_tm_member *b = igw_thingmodel_property(M, "brightness", 10);
    CHECK(b != NULL && b->writable && b->def->type == IGW_TM_INT && b->def->imin == 0 &&
          b->def->imax == 100 && b->def->istep == 1 && b->index == 0);
    CHECK(b != NULL && b->def->unit.len == 1 && b->def->unit.ptr[0] == '%');
    const igw_tm_member *r = igw_thingmodel_property(M, "rssi", 4);
    CHECK(r != NULL && !r->writable && r->def->imin == -120);
    CHECK(igw_thingmodel_property(M, "nope", 4) == NULL);
    CHECK(igw_thingmodel_property(M, "brightnes", 9) == NULL);
    CHECK(igw_thingmodel_property(M, "brightnessX", 11) == NULL);
    const igw_tm_member *t = igw_thingmodel_property(M, "temperature", 11);
    CHECK(t != NULL && t->def->type == IGW_TM_FLOAT && t->def->fmin == -40.0 &&
          t->def->fmax == 85.5);
    const igw_tm_member *p = igw_thingmodel_property(M, "position", 8);
    CHECK(p != NULL && p->def->type == IGW_TM_STRUCT && p->def->specs.n == 3);
    const igw_tm_member *lens = p ? igw_tm_list_find(&p->def->specs, "lens", 4) : NULL;
    CHECK(lens != NULL && lens->def->type == IGW_TM_STRUCT);
    const igw_tm_member *pr = igw_thingmodel_property(M, "presets", 7);
    CHECK(pr != NULL && pr->def->type == IGW_TM_ARRAY && pr->def->max == 3 &&
          pr->def->item->type == IGW_TM_STRUCT);
    const igw_tm_member *nm = igw_thingmodel_property(M, "nightMode", 9);
    CHECK(nm != NULL && nm->def->nmapping == 3 && nm->def->mapping[2].key == 2 &&
          nm->def->mapping[2].label.len == 3);
    const igw_tm_event *ev = igw_thingmodel_event(M, "alarm", 5);
    CHECK(ev != NULL && ev->type == IGW_TM_EV_ALERT && ev->params.n == 2);
    CHECK(igw_thingmodel_event(M, "boot", 4) != NULL);
    CHECK(igw_thingmodel_event(M, "ptz", 3) == NULL);
    const igw_tm_action *ac = igw_thingmodel_action(M, "ptz", 3);
    CHECK(ac != NULL && ac->input.n == 2 && ac->output.n == 1);
    CHECK(igw_thingmodel_action(M, "alarm", 5) == NULL);
    CHECK(strcmp(igw_tm_type_name(IGW_TM_TIMESTAMP), "timestamp") == 0);
}

static void test_int(void)
{
    OK("{\"brightness\":0}");
    OK("{\"brightness\":100}");
    OK("{\"brightness\":57}");
    BAD("{\"brightness\":-1}", IGW_JERR_RANGE, "/params/brightness", "below minimum 0");
    BAD("{\"brightness\":101}", IGW_JERR_RANGE, "/params/brightness", "above maximum 100");
    BAD("{\"brightness\":50.5}", IGW_JERR_INTEGER, "/params/brightness", NULL);
    BAD("{\"brightness\":1e2}", IGW_JERR_INTEGER, "/params/brightness", NULL);
    BAD("{\"brightness\":\"50\"}", IGW_JERR_TYPE, "/params/brightness", NULL);
    BAD("{\"brightness\":null}", IGW_JERR_NULL, "/params/brightness", NULL);
    BAD("{\"brightness\":true}", IGW_JERR_TYPE, "/params/brightness", NULL);
    BAD("{\"brightness\":9007199254740992}", IGW_JERR_RANGE, "/params/brightness", NULL);
    /* zoom 10..50 step 5 (numbers in the model) */
    OK("{\"zoom\":10}");
    OK("{\"zoom\":50}");
    OK("{\"zoom\":35}");
    BAD("{\"zoom\":9}", IGW_JERR_RANGE, "/params/zoom", "below minimum 10");
    BAD("{\"zoom\":55}", IGW_JERR_RANGE, "/params/zoom", "above maximum 50");
    BAD("{\"zoom\":12}", IGW_JERR_RANGE, "/params/zoom", "multiple of step 5");
    BAD("{\"zoom\":11}", IGW_JERR_RANGE, "/params/zoom", "minimum 10 plus a multiple of step 5");
    /* negative range */
    OK("{\"rssi\":-120}");
    OK("{\"rssi\":0}");
    BAD("{\"rssi\":-121}", IGW_JERR_RANGE, "/params/rssi", "below minimum -120");
    BAD("{\"rssi\":1}", IGW_JERR_RANGE, "/params/rssi", "above maximum 0");
}

static void test_float(void)
{
    OK("{\"temperature\":-40}");
    OK("{\"temperature\":-40.0}");
    OK("{\"temperature\":85.5}");
    OK("{\"temperature\":21.3}");
    OK("{\"temperature\":0.1}");
    OK("{\"temperature\":2.13e1}");
    BAD("{\"temperature\":-40.1}", IGW_JERR_RANGE, "/params/temperature", "below minimum -40.0");
    BAD("{\"temperature\":85.6}", IGW_JERR_RANGE, "/params/temperature", "above maximum 85.5");
    BAD("{\"temperature\":21.35}", IGW_JERR_RANGE, "/params/temperature",
        "not a multiple of step 0.1");
    BAD("{\"temperature\":\"21.3\"}", IGW_JERR_TYPE, "/params/temperature", "expected a number");
    BAD("{\"temperature\":null}", IGW_JERR_NULL, "/params/temperature", NULL);
    BAD("{\"temperature\":1e400}", IGW_JERR_RANGE, "/params/temperature", NULL);
    BAD("{\"temperature\":[1]}", IGW_JERR_TYPE, "/params/temperature", NULL);
    BAD("{\"temperature\":01}", IGW_JERR_SYNTAX, "/params/temperature", NULL);
    /* no step: any value in range */
    OK("{\"colorTemp\":2700}");
    OK("{\"colorTemp\":6500}");
    OK("{\"colorTemp\":3333.333}");
    BAD("{\"colorTemp\":2699.999}", IGW_JERR_RANGE, "/params/colorTemp", "below minimum 2700");
    BAD("{\"colorTemp\":6500.001}", IGW_JERR_RANGE, "/params/colorTemp", "above maximum 6500.0");
}

static void test_string_enum_bool_ts(void)
{
    OK("{\"label\":\"\"}");
    OK("{\"label\":\"12345678\"}");
    OK("{\"label\":\"\\u00e9\\u00e9\\u00e9\\u00e9\"}"); /* 8 bytes */
    BAD("{\"label\":\"123456789\"}", IGW_JERR_LENGTH, "/params/label", "longer than 8 bytes");
    BAD("{\"label\":\"\\u00e9\\u00e9\\u00e9\\u00e9x\"}", IGW_JERR_LENGTH, "/params/label", NULL);
    BAD("{\"label\":5}", IGW_JERR_TYPE, "/params/label", NULL);
    BAD("{\"label\":\"\\ud800\"}", IGW_JERR_UTF8, "/params/label", NULL);

    OK("{\"nightMode\":0}");
    OK("{\"nightMode\":2}");
    BAD("{\"nightMode\":3}", IGW_JERR_ENUM, "/params/nightMode", "(0, 1, 2)");
    BAD("{\"nightMode\":-1}", IGW_JERR_ENUM, "/params/nightMode", NULL);
    BAD("{\"nightMode\":\"auto\"}", IGW_JERR_TYPE, "/params/nightMode", NULL);
    BAD("{\"nightMode\":1.0}", IGW_JERR_INTEGER, "/params/nightMode", NULL);

    OK("{\"power\":true}");
    OK("{\"power\":false}");
    OK("{\"power\":0}");
    OK("{\"power\":1}");
    BAD("{\"power\":2}", IGW_JERR_RANGE, "/params/power", "true, false, 0 or 1");
    BAD("{\"power\":-1}", IGW_JERR_RANGE, "/params/power", NULL);
    BAD("{\"power\":\"on\"}", IGW_JERR_TYPE, "/params/power", NULL);
    BAD("{\"power\":null}", IGW_JERR_NULL, "/params/power", NULL);
    BAD("{\"power\":1.0}", IGW_JERR_INTEGER, "/params/power", NULL);

    OK("{\"lastSeen\":0}");
    OK("{\"lastSeen\":1763780000000}");
    OK("{\"lastSeen\":9007199254740991}");
    BAD("{\"lastSeen\":-1}", IGW_JERR_RANGE, "/params/lastSeen", "timestamp");
    BAD("{\"lastSeen\":9007199254740992}", IGW_JERR_RANGE, "/params/lastSeen", NULL);
    BAD("{\"lastSeen\":1.5}", IGW_JERR_INTEGER, "/params/lastSeen", NULL);
    BAD("{\"lastSeen\":\"1763780000000\"}", IGW_JERR_TYPE, "/params/lastSeen", NULL);
}

static void test_struct_array(void)
{
    OK("{\"position\":{\"pan\":-180,\"tilt\":90,\"lens\":{\"focus\":0.5}}}");
    OK("{\"position\":{\"pan\":10}}"); /* partial struct in a report */
    OK("{\"position\":{}}");
    BAD("{\"position\":{\"pan\":181}}", IGW_JERR_RANGE, "/params/position/pan", "above maximum 180");
    BAD("{\"position\":{\"tilt\":-91}}", IGW_JERR_RANGE, "/params/position/tilt", "below minimum -90");
    BAD("{\"position\":{\"lens\":{\"focus\":1.01}}}", IGW_JERR_RANGE, "/params/position/lens/focus",
        "above maximum 1");
    BAD("{\"position\":{\"lens\":{\"zoom\":1}}}", IGW_JERR_UNKNOWN, "/params/position/lens/zoom",
        "unknown struct field");
    BAD("{\"position\":{\"roll\":1}}", IGW_JERR_UNKNOWN, "/params/position/roll", NULL);
    BAD("{\"position\":{\"pan\":1,\"pan\":2}}", IGW_JERR_DUPLICATE, "/params/position/pan", NULL);
    BAD("{\"position\":[1,2]}", IGW_JERR_TYPE, "/params/position", NULL);
    BAD("{\"position\":{\"a/b~c\":1}}", IGW_JERR_UNKNOWN, "/params/position/a~1b~0c", NULL);

    OK("{\"presets\":[]}");
    OK("{\"presets\":[{\"id\":1,\"title\":\"door\"},{\"id\":16},{}]}");
    BAD("{\"presets\":[{},{},{},{}]}", IGW_JERR_LENGTH, "/params/presets/3", "more than 3 items");
    BAD("{\"presets\":[{\"id\":1},{\"id\":17}]}", IGW_JERR_RANGE, "/params/presets/1/id", NULL);
    BAD("{\"presets\":[{\"id\":0}]}", IGW_JERR_RANGE, "/params/presets/0/id", "below minimum 1");
    BAD("{\"presets\":[{\"title\":\"12345678901234567\"}]}", IGW_JERR_LENGTH,
        "/params/presets/0/title", NULL);
    BAD("{\"presets\":[1]}", IGW_JERR_TYPE, "/params/presets/0", NULL);
    BAD("{\"presets\":{}}", IGW_JERR_TYPE, "/params/presets", NULL);
    OK("{\"tags\":[\"a\",\"abcd\"]}");
    BAD("{\"tags\":[\"a\",\"abcde\"]}", IGW_JERR_LENGTH, "/params/tags/1", NULL);
    BAD("{\"tags\":[\"a\",null]}", IGW_JERR_NULL, "/params/tags/1", NULL);
}

static void test_report_shape(void)
{
    OK("{}");
    OK(" { \"brightness\" : 5 , \"power\" : 1 , \"rssi\" : -60 } ");
    BAD("{\"bogus\":1}", IGW_JERR_UNKNOWN, "/params/bogus", "unknown property");
    BAD("{\"brightness\":1,\"brightness\":2}", IGW_JERR_DUPLICATE, "/params/brightness", NULL);
    BAD("[]", IGW_JERR_TYPE, "/params", NULL);
    BAD("{\"brightness\":1", IGW_JERR_SYNTAX, "/params", NULL);
    BAD("{\"brightness\":1} x", IGW_JERR_TRAILING, "/params", NULL);
    BAD("", IGW_JERR_SYNTAX, "/params", NULL);
    /* property control: writable only */
    OKW("{\"brightness\":5,\"power\":true,\"position\":{\"pan\":1}}");
    BADW("{\"brightness\":5,\"rssi\":-50}", IGW_JERR_FORBIDDEN, "/params/rssi", "read-only property");
    BADW("{\"lastSeen\":1}", IGW_JERR_FORBIDDEN, "/params/lastSeen", NULL);
    BADW("{\"bogus\":1}", IGW_JERR_UNKNOWN, "/params/bogus", "unknown property");
    BADW("{\"brightness\":101}", IGW_JERR_RANGE, "/params/brightness", "above maximum 100");
    /* no prefix */
    igw_json e;
    igw_arena_reset(&scratch);
    CHECK(igw_thingmodel_check_properties(M, "{\"zoom\":1}", 10, 0, NULL, &scratch, &e) == -1 &&
          strcmp(e.path, "/zoom") == 0);
    CHECK(igw_thingmodel_check_properties(M, "{\"zoom\":1}", 10, 0, "", &scratch, &e) == -1 &&
          strcmp(e.path, "/zoom") == 0);
    CHECK(igw_thingmodel_check_properties(M, "{\"zoom\":1}", 10, 0, "/a/b", &scratch, &e) == -1 &&
          strcmp(e.path, "/a/b/zoom") == 0);
}

static void test_event_action(void)
{
    ok_at(__LINE__, EVENT, "alarm", "{\"type\":1,\"level\":5}");
    ok_at(__LINE__, EVENT, "alarm", "{\"level\":1}"); /* partial event params */
    ok_at(__LINE__, EVENT, "boot", "{}");
    bad_at(__LINE__, EVENT, "alarm", "{\"type\":3}", IGW_JERR_ENUM, "/params/type", NULL);
    bad_at(__LINE__, EVENT, "alarm", "{\"level\":6}", IGW_JERR_RANGE, "/params/level",
           "above maximum 5");
    bad_at(__LINE__, EVENT, "alarm", "{\"level\":0}", IGW_JERR_RANGE, "/params/level",
           "below minimum 1");
    bad_at(__LINE__, EVENT, "alarm", "{\"brightness\":1}", IGW_JERR_UNKNOWN, "/params/brightness",
           "unknown event parameter");
    bad_at(__LINE__, EVENT, "boot", "{\"x\":1}", IGW_JERR_UNKNOWN, "/params/x", NULL);
    bad_at(__LINE__, EVENT, "fire", "{}", IGW_JERR_UNKNOWN, "/params", "unknown event");
    bad_at(__LINE__, EVENT, "ptz", "{}", IGW_JERR_UNKNOWN, "/params", "unknown event");

    ok_at(__LINE__, INPUT, "ptz", "{\"direction\":3,\"speed\":10}");
    ok_at(__LINE__, INPUT, "ptz", "{\"speed\":1,\"direction\":0}");
    ok_at(__LINE__, INPUT, "snapshot", "{}");
    bad_at(__LINE__, INPUT, "ptz", "{\"direction\":4,\"speed\":1}", IGW_JERR_ENUM,
           "/input/direction", NULL);
    bad_at(__LINE__, INPUT, "ptz", "{\"direction\":1,\"speed\":11}", IGW_JERR_RANGE,
           "/input/speed", "above maximum 10");
    bad_at(__LINE__, INPUT, "ptz", "{\"direction\":1,\"speed\":0}", IGW_JERR_RANGE,
           "/input/speed", "below minimum 1");
    bad_at(__LINE__, INPUT, "ptz", "{\"direction\":1}", IGW_JERR_MISSING, "/input/speed",
           "missing");
    bad_at(__LINE__, INPUT, "ptz", "{}", IGW_JERR_MISSING, "/input/direction", NULL);
    bad_at(__LINE__, INPUT, "ptz", "{\"direction\":1,\"speed\":1,\"x\":1}", IGW_JERR_UNKNOWN,
           "/input/x", "unknown action input");
    bad_at(__LINE__, INPUT, "snapshot", "{\"x\":1}", IGW_JERR_UNKNOWN, "/input/x", NULL);
    bad_at(__LINE__, INPUT, "zap", "{}", IGW_JERR_UNKNOWN, "/input", "unknown action");
    bad_at(__LINE__, INPUT, "alarm", "{}", IGW_JERR_UNKNOWN, "/input", "unknown action");
    ok_at(__LINE__, OUTPUT, "ptz", "{\"ok\":1}");
    bad_at(__LINE__, OUTPUT, "ptz", "{}", IGW_JERR_MISSING, "/output/ok", NULL);
    bad_at(__LINE__, OUTPUT, "ptz", "{\"ok\":\"yes\"}", IGW_JERR_TYPE, "/output/ok", NULL);
}

/* ---- model load errors */

static void load_bad_at(int line, const char *model, igw_json_errkind kind, const char *path,
                        const char *reason)
{
    igw_arena a;
    igw_arena_init(&a, 0);
    igw_thingmodel *m = (igw_thingmodel *)&a; /* must be reset to NULL */
    igw_json e;
    if (igw_thingmodel_load(model, strlen(model), &a, &m, &e) == 0)
        check(false, __FILE__, line, model, "model accepted");
    else
        check(m == NULL && e.err == kind && strcmp(e.path, path) == 0 &&
                  (reason == NULL || strstr(e.reason, reason) != NULL),
              __FILE__, line, model, "got %s %s \"%s\", want %s %s \"%s\" (model %s)", igw_json_errkind_name(e.err),
              e.path, e.reason, igw_json_errkind_name(kind), path, reason ? reason : "",
              m ? "set" : "reset to NULL");
    igw_arena_free(&a);
}

static void load_ok_at(int line, const char *model)
{
    igw_arena a;
    igw_arena_init(&a, 0);
    igw_thingmodel *m;
    igw_json e;
    if (igw_thingmodel_load(model, strlen(model), &a, &m, &e) == 0)
        check(m != NULL, __FILE__, line, model, "loaded, but no model");
    else
        check(false, __FILE__, line, model, "model refused: %s %s", e.path, e.reason);
    igw_arena_free(&a);
}

#define LOAD_OK(m) load_ok_at(__LINE__, m)
#define LOAD_BAD(m, kind, path, reason) load_bad_at(__LINE__, m, kind, path, reason)
#define P1(def) "{\"properties\":[{\"identifier\":\"p\",\"mode\":\"rw\",\"define\":" def "}]}"

/* models that load: empty, every data type with its bounds, mode r by default */
static void test_load_valid(void)
{
    LOAD_OK("{}");
    LOAD_OK("{\"properties\":[],\"events\":[],\"actions\":[]}");
    LOAD_OK(P1("{\"type\":\"int\"}"));
    LOAD_OK(P1("{\"type\":\"int\",\"min\":5,\"max\":5}"));
    LOAD_OK(P1("{\"type\":\"float\",\"min\":\"-1.5e2\",\"max\":\"1E3\",\"step\":0.25}"));
    LOAD_OK(P1("{\"type\":\"string\",\"max\":0}"));
    LOAD_OK(P1("{\"type\":\"bool\"}"));
    LOAD_OK(P1("{\"type\":\"enum\",\"mapping\":{\"-1\":\"neg\",\"7\":\"x\"}}"));
    LOAD_OK("{\"properties\":[{\"identifier\":\"p\",\"define\":{\"type\":\"int\"}}]}"); /* mode r */
}

/* a document that is no model: bad JSON, not an object, trailing data, "properties" not a list or repeated */
static void test_load_errors_document(void)
{
    LOAD_BAD("", IGW_JERR_SYNTAX, "", NULL);
    LOAD_BAD("[]", IGW_JERR_TYPE, "", NULL);
    LOAD_BAD("{} {}", IGW_JERR_TRAILING, "", NULL);
    LOAD_BAD("{\"properties\":{}}", IGW_JERR_TYPE, "/properties", NULL);
    LOAD_BAD("{\"properties\":[],\"properties\":[]}", IGW_JERR_DUPLICATE, "/properties", NULL);
}

/* bad data definitions: type, bounds, step, formats, arrayInfo, mapping, specs; the path and reason */
static void test_load_errors_define(void)
{
    LOAD_BAD(P1("{\"type\":\"double\"}"), IGW_JERR_ENUM, "/properties/0/define/type",
             "unknown data type \"double\"");
    LOAD_BAD(P1("{\"min\":1}"), IGW_JERR_MISSING, "/properties/0/define", "missing \"type\"");
    LOAD_BAD(P1("{\"type\":\"int\",\"min\":\"10\",\"max\":\"5\"}"), IGW_JERR_RULE,
             "/properties/0/define/max", "max is below min");
    LOAD_BAD(P1("{\"max\":1.5,\"type\":\"float\",\"min\":2}"), IGW_JERR_RULE,
             "/properties/0/define/max", NULL);
    LOAD_BAD(P1("{\"type\":\"int\",\"step\":\"0\"}"), IGW_JERR_RANGE, "/properties/0/define/step",
             "step must be greater than 0");
    LOAD_BAD(P1("{\"type\":\"int\",\"step\":-1}"), IGW_JERR_RANGE, "/properties/0/define/step", NULL);
    LOAD_BAD(P1("{\"type\":\"float\",\"step\":\"0.0\"}"), IGW_JERR_RANGE,
             "/properties/0/define/step", NULL);
    LOAD_BAD(P1("{\"type\":\"int\",\"min\":\"1.5\"}"), IGW_JERR_INTEGER, "/properties/0/define/min",
             NULL);
    LOAD_BAD(P1("{\"type\":\"int\",\"min\":\"abc\"}"), IGW_JERR_FORMAT, "/properties/0/define/min",
             NULL);
    LOAD_BAD(P1("{\"type\":\"int\",\"min\":\" 1\"}"), IGW_JERR_FORMAT, "/properties/0/define/min",
             NULL);
    LOAD_BAD(P1("{\"type\":\"int\",\"min\":true}"), IGW_JERR_TYPE, "/properties/0/define/min", NULL);
    LOAD_BAD(P1("{\"type\":\"int\",\"max\":\"9007199254740992\"}"), IGW_JERR_RANGE,
             "/properties/0/define/max", NULL);
    LOAD_BAD(P1("{\"type\":\"float\",\"max\":\"1e999\"}"), IGW_JERR_RANGE,
             "/properties/0/define/max", NULL);
    LOAD_BAD(P1("{\"type\":\"string\",\"max\":-1}"), IGW_JERR_RANGE, "/properties/0/define/max",
             NULL);
    LOAD_BAD(P1("{\"type\":\"array\",\"max\":\"2\"}"), IGW_JERR_MISSING, "/properties/0/define",
             "arrayInfo");
    LOAD_BAD(P1("{\"type\":\"array\",\"arrayInfo\":{\"type\":\"int\"},\"max\":0}"), IGW_JERR_RANGE,
             "/properties/0/define/max", NULL);
    LOAD_BAD(P1("{\"type\":\"enum\"}"), IGW_JERR_MISSING, "/properties/0/define", "mapping");
    LOAD_BAD(P1("{\"type\":\"enum\",\"mapping\":{\"a\":\"x\"}}"), IGW_JERR_FORMAT,
             "/properties/0/define/mapping/a", NULL);
    LOAD_BAD(P1("{\"type\":\"enum\",\"mapping\":{\"01\":\"x\"}}"), IGW_JERR_FORMAT,
             "/properties/0/define/mapping/01", NULL);
    LOAD_BAD(P1("{\"type\":\"enum\",\"mapping\":{\"1\":\"x\",\"1\":\"y\"}}"), IGW_JERR_DUPLICATE,
             "/properties/0/define/mapping/1", NULL);
    LOAD_BAD(P1("{\"type\":\"enum\",\"mapping\":{\"1\":2}}"), IGW_JERR_TYPE,
             "/properties/0/define/mapping/1", NULL);
    LOAD_BAD(P1("{\"type\":\"bool\",\"mapping\":{\"2\":\"x\"}}"), IGW_JERR_RANGE,
             "/properties/0/define/mapping/2", NULL);
    LOAD_BAD(P1("{\"type\":\"struct\"}"), IGW_JERR_MISSING, "/properties/0/define", "specs");
    LOAD_BAD(P1("{\"type\":\"struct\",\"specs\":[{\"identifier\":\"a\"}]}"), IGW_JERR_MISSING,
             "/properties/0/define/specs/0", "dataType");
    LOAD_BAD(P1("{\"type\":\"struct\",\"specs\":[{\"identifier\":\"a\",\"dataType\":{\"type\":\"int\"}},"
                "{\"identifier\":\"a\",\"dataType\":{\"type\":\"bool\"}}]}"),
             IGW_JERR_DUPLICATE, "/properties/0/define/specs/1/identifier", NULL);
    LOAD_BAD(P1("{\"type\":\"int\",\"type\":\"int\"}"), IGW_JERR_DUPLICATE,
             "/properties/0/define/type", NULL);
}

/* bad identifiers (format, length, missing, repeated) and members of properties, events, actions */
static void test_load_errors_identifiers(void)
{
    LOAD_BAD("{\"properties\":[{\"identifier\":\"a-b\",\"define\":{\"type\":\"int\"}}]}",
             IGW_JERR_FORMAT, "/properties/0/identifier", "[A-Za-z0-9_]");
    LOAD_BAD("{\"properties\":[{\"identifier\":\"\",\"define\":{\"type\":\"int\"}}]}",
             IGW_JERR_LENGTH, "/properties/0/identifier", NULL);
    LOAD_OK("{\"properties\":[{\"identifier\":\"a123456789012345678901234567890123456789012345678901234567890123\","
            "\"define\":{\"type\":\"int\"}}]}"); /* 64 */
    LOAD_BAD("{\"properties\":[{\"identifier\":\"a1234567890123456789012345678901234567890123456789012345678901234\","
             "\"define\":{\"type\":\"int\"}}]}",
             IGW_JERR_LENGTH, "/properties/0/identifier", NULL); /* 65 */
    LOAD_BAD("{\"properties\":[{\"name\":\"x\",\"define\":{\"type\":\"int\"}}]}", IGW_JERR_MISSING,
             "/properties/0", "identifier");
    LOAD_BAD("{\"properties\":[{\"identifier\":\"x\"}]}", IGW_JERR_MISSING, "/properties/0",
             "define");
    LOAD_BAD("{\"properties\":[{\"identifier\":\"x\",\"mode\":\"w\",\"define\":{\"type\":\"int\"}}]}",
             IGW_JERR_ENUM, "/properties/0/mode", NULL);
    LOAD_BAD("{\"properties\":[{\"identifier\":\"x\",\"define\":{\"type\":\"int\"}},"
             "{\"identifier\":\"y\",\"define\":{\"type\":\"int\"}},"
             "{\"identifier\":\"x\",\"define\":{\"type\":\"bool\"}}]}",
             IGW_JERR_DUPLICATE, "/properties/2/identifier", "duplicate identifier");
    LOAD_BAD("{\"events\":[{\"identifier\":\"e\",\"type\":\"warn\"}]}", IGW_JERR_ENUM,
             "/events/0/type", NULL);
    LOAD_BAD("{\"events\":[{\"identifier\":\"e\"},{\"identifier\":\"e\"}]}", IGW_JERR_DUPLICATE,
             "/events/1/identifier", NULL);
    LOAD_BAD("{\"events\":[{\"identifier\":\"e\",\"params\":[{\"identifier\":\"p\",\"define\":{\"type\":\"x\"}}]}]}",
             IGW_JERR_ENUM, "/events/0/params/0/define/type", NULL);
    LOAD_BAD("{\"actions\":[{\"identifier\":\"a\"},{\"identifier\":\"a\"}]}", IGW_JERR_DUPLICATE,
             "/actions/1/identifier", NULL);
    LOAD_BAD("{\"actions\":[{\"identifier\":\"a\",\"input\":[{\"identifier\":\"p\",\"define\":{\"type\":\"int\",\"min\":2,\"max\":1}}]}]}",
             IGW_JERR_RULE, "/actions/0/input/0/define/max", NULL);
    LOAD_BAD("{\"actions\":[{\"identifier\":\"a\",\"output\":[{\"identifier\":\"p!\",\"define\":{\"type\":\"int\"}}]}]}",
             IGW_JERR_FORMAT, "/actions/0/output/0/identifier", NULL);
    LOAD_BAD("{\"actions\":[{\"name\":\"a\"}]}", IGW_JERR_MISSING, "/actions/0", NULL);
}

/* nesting: 8 levels load, 9 do not (struct specs and arrayInfo alike) */
static void test_load_nesting_limit(void)
{
    /* nesting: 8 levels load, 9 do not */
    char buf[4096], tail[512];
    for (int levels = 8; levels <= 9; levels++) {
        strcpy(buf, "{\"properties\":[{\"identifier\":\"p\",\"define\":");
        tail[0] = '\0';
        for (int i = 1; i < levels; i++) {
            strcat(buf, "{\"type\":\"struct\",\"specs\":[{\"identifier\":\"s\",\"dataType\":");
            strcat(tail, "}]}");
        }
        strcat(buf, "{\"type\":\"int\"}");
        strcat(buf, tail);
        strcat(buf, "}]}");
        if (levels == 8) {
            LOAD_OK(buf);
        } else {
            char path[256] = "/properties/0/define";
            for (int i = 1; i < levels; i++)
                strcat(path, "/specs/0/dataType");
            LOAD_BAD(buf, IGW_JERR_DEPTH, path, "nesting");
        }
    }
    LOAD_BAD(P1("{\"type\":\"array\",\"arrayInfo\":{\"type\":\"array\",\"arrayInfo\":{\"type\":\"array\",\"arrayInfo\":"
                "{\"type\":\"array\",\"arrayInfo\":{\"type\":\"array\",\"arrayInfo\":{\"type\":\"array\",\"arrayInfo\":"
                "{\"type\":\"array\",\"arrayInfo\":{\"type\":\"array\",\"arrayInfo\":{\"type\":\"int\"}}}}}}}}}"),
             IGW_JERR_DEPTH,
             "/properties/0/define/arrayInfo/arrayInfo/arrayInfo/arrayInfo/arrayInfo/arrayInfo/arrayInfo/arrayInfo",
             NULL);
}

/* counts: 256 properties load, 257 do not */
static void test_load_count_limit(void)
{
    /* counts: 256 properties load, 257 do not */
    size_t cap = 300 * 64;
    char *big = malloc(cap);
    for (int n = 256; n <= 257; n++) {
        size_t len = (size_t)snprintf(big, cap, "{\"properties\":[");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(big + len, cap - len,
                                    "%s{\"identifier\":\"p%d\",\"define\":{\"type\":\"bool\"}}",
                                    i ? "," : "", i);
        snprintf(big + len, cap - len, "]}");
        if (n == 256)
            LOAD_OK(big);
        else
            LOAD_BAD(big, IGW_JERR_SIZE, "/properties/256", "too many");
    }
    free(big);
}


static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* In this order (on the demo model M, loaded by main). */
static const check_case cases[] = {
    CHECK_CASE(test_lookup),
    CHECK_CASE(test_int),
    CHECK_CASE(test_float),
    CHECK_CASE(test_string_enum_bool_ts),
    CHECK_CASE(test_struct_array),
    CHECK_CASE(test_report_shape),
    CHECK_CASE(test_event_action),
    CHECK_CASE(test_load_valid),
    CHECK_CASE(test_load_errors_document),
    CHECK_CASE(test_load_errors_define),
    CHECK_CASE(test_load_errors_identifiers),
    CHECK_CASE(test_load_nesting_limit),
    CHECK_CASE(test_load_count_limit),
};

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "tests/lib/demo-model.json";
    size_t len;
    char *model = slurp(path, &len);
    if (model == NULL) {
        fprintf(stderr, "thingmodel_test: cannot read %s\n", path);
        return 2;
    }
    igw_arena ma;
    igw_arena_init(&ma, 0);
    igw_arena_init(&scratch, 0);
    igw_json e;
    if (igw_thingmodel_load(model, len, &ma, &M, &e) < 0) {
        fprintf(stderr, "FAIL: demo model refused: %s %s (%s)\n", e.path, e.reason,
                igw_json_errkind_name(e.err));
        return 1;
    }
    CHECK_RUN_ALL(cases);
    igw_arena_free(&scratch);
    igw_arena_free(&ma);
    free(model);
    return check_summary("thingmodel_test");
}
