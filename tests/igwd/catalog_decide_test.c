/* catalog_decide_test.c - the recordings catalog's decision on a camera's
 * report without services: igw_recordings_report_check
 * (catalog/recordings.h) on reports decoded by the schema's strict decoder,
 * as the edge hands them over. Each refusal with its reason and exact
 * JSON pointer (generated/paths.h), which entry is named first, and what
 * it accepts. */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "api.h"
#include "catalog/recordings.h"

/* The check's verdict on one report. */
typedef struct verdict {
    const char *why; /* NULL: accepted */
    char path[96];
} verdict;

/* Decodes `json` as a camera's report params (the strict decoder must take
 * it: these reports are well-formed) and checks it. */
static verdict check_json(const char *json, int line)
{
    verdict v = {.why = "not decoded"};
    igw_arena a;
    igw_arena_init(&a, 1 << 20);
    igw_json j;
    igw_json_init(&j, json, strlen(json), &a, 10);
    igw_RecordingReport r;
    if (check(igw_decode_RecordingReport(&j, &r) == 0 && igw_json_finish(&j) == 0, __FILE__, line,
              "the strict decoder takes the report", "%s at %s", j.reason ? j.reason : "", j.path))
        v.why = igw_recordings_report_check(&r, v.path, sizeof v.path);
    igw_arena_free(&a);
    return v;
}
#define CHECK_JSON(json) check_json(json, __LINE__)

/* One entry of a report, as JSON. */
#define ENTRY(id, start, end, dur)                                                                              \
    "{\"recordingId\":\"" id "\",\"cameraId\":\"cam-1\",\"startTimeMs\":" #start ",\"endTimeMs\":" #end \
    ",\"durationMs\":" #dur ",\"available\":true,\"videoCodec\":\"H264\",\"recordingVersion\":1}"

static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static bool refused_at(verdict v, const char *reason, const char *path)
{
    return same(v.why, reason) && strcmp(v.path, path) == 0;
}

static const char END[] = "endTimeMs must be after startTimeMs";
static const char EMPTY[] = "an empty recording (durationMs 0) is not a recording";
static const char LONGER[] = "durationMs is longer than the time between startTimeMs and endTimeMs";
static const char TWICE[] = "the same recordingId twice in one report";
static const char BOTH[] = "a recording both reported and removed";

/* Well-formed entries and other removed ids: accepted, and the path is "". */
static void test_accepts_report(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 1000, 2000, 900) "," ENTRY("r2", 2000, 5000, 3000)
                           "],\"removed\":[\"r0\",\"r3\"]}");
    CHECK(v.why == NULL, "%s at %s", v.why, v.path);
    CHECK(v.path[0] == '\0', "%s", v.path);
}

/* A report of removals only has nothing to contradict. */
static void test_accepts_removed_only(void)
{
    verdict v = CHECK_JSON("{\"removed\":[\"r1\",\"r2\"]}");
    CHECK(v.why == NULL, "%s at %s", v.why, v.path);
}

/* A recording as long as its window, and one of 1 ms, are recordings. */
static void test_accepts_bounds(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 1000, 2000, 1000) "," ENTRY("r2", 0, 1, 1) "]}");
    CHECK(v.why == NULL, "%s at %s", v.why, v.path);
}

/* An end equal to the start is refused at that entry's endTimeMs. */
static void test_end_equal_start(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 5000, 5000, 1) "]}");
    CHECK(refused_at(v, END, "/params/recordings/0/endTimeMs"), "%s at %s", v.why, v.path);
}

/* An end before the start, on the second entry: its index in the path. */
static void test_end_before_start(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 0, 10, 5) "," ENTRY("r2", 9000, 8000, 5) "]}");
    CHECK(refused_at(v, END, "/params/recordings/1/endTimeMs"), "%s at %s", v.why, v.path);
}

/* durationMs 0 (the decoder admits it) is an empty recording: refused. */
static void test_empty_recording(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 1000, 2000, 0) "]}");
    CHECK(refused_at(v, EMPTY, "/params/recordings/0/durationMs"), "%s at %s", v.why, v.path);
}

/* One millisecond more than the window is refused at durationMs. */
static void test_duration_longer(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 1000, 2000, 1001) "]}");
    CHECK(refused_at(v, LONGER, "/params/recordings/0/durationMs"), "%s at %s", v.why, v.path);
}

/* Within an entry, the window is judged before its duration. */
static void test_window_before_duration(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 2000, 1000, 0) "]}");
    CHECK(refused_at(v, END, "/params/recordings/0/endTimeMs"), "%s at %s", v.why, v.path);
}

/* An id twice: the second occurrence is named, not the first. */
static void test_id_twice(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 0, 10, 5) "," ENTRY("r2", 0, 10, 5) "," ENTRY("r1", 20, 30, 5)
                           "]}");
    CHECK(refused_at(v, TWICE, "/params/recordings/2/recordingId"), "%s at %s", v.why, v.path);
}

/* Ids compare by their bytes and length: a prefix is another recording. */
static void test_id_prefix_distinct(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 0, 10, 5) "," ENTRY("r10", 0, 10, 5) "," ENTRY("r", 0, 10, 5)
                           "],\"removed\":[\"r100\",\"r1x\"]}");
    CHECK(v.why == NULL, "%s at %s", v.why, v.path);
}

/* An id both reported and removed: the removed item is named (its own
 * index, not the entry's). */
static void test_reported_and_removed(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 0, 10, 5) "," ENTRY("r2", 0, 10, 5)
                           "],\"removed\":[\"x\",\"y\",\"r1\"]}");
    CHECK(refused_at(v, BOTH, "/params/removed/2"), "%s at %s", v.why, v.path);
}

/* Entries are judged in order: the first offending one is named, whatever
 * comes after it. */
static void test_first_entry_named(void)
{
    verdict v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 0, 10, 5) "," ENTRY("r2", 0, 10, 0) "," ENTRY("r3", 10, 0, 5)
                           "]}");
    CHECK(refused_at(v, EMPTY, "/params/recordings/1/durationMs"), "%s at %s", v.why, v.path);
    v = CHECK_JSON("{\"recordings\":[" ENTRY("r1", 0, 10, 5) "," ENTRY("r2", 10, 0, 5) "],\"removed\":[\"r1\"]}");
    CHECK(refused_at(v, BOTH, "/params/removed/0"), "%s at %s", v.why, v.path); /* entry 0 first */
}

/* The has bits say what is there: lists marked absent are not read. */
static void test_absent_lists_unread(void)
{
    igw_RecordingEntry bad = {.recordingId = {"r1", 2}, .startTimeMs = 10, .endTimeMs = 0};
    igw_str removed = {"r1", 2};
    igw_RecordingReport r = {.has = 0, .recordings = {&bad, 1}, .removed = {&removed, 1}};
    char path[64] = "junk";
    CHECK(igw_recordings_report_check(&r, path, sizeof path) == NULL);
    CHECK(path[0] == '\0', "%s", path);
    r.has = IGW_RecordingReport_recordings;
    CHECK(same(igw_recordings_report_check(&r, path, sizeof path), END));
}

/* A path longer than the caller's buffer is cut, still a C string; the
 * reason is unchanged. */
static void test_path_cap(void)
{
    igw_RecordingEntry e = {.recordingId = {"r1", 2}, .startTimeMs = 0, .endTimeMs = 10, .durationMs = 0};
    igw_RecordingReport r = {.has = IGW_RecordingReport_recordings, .recordings = {&e, 1}};
    char path[12];
    memset(path, 'x', sizeof path);
    CHECK(same(igw_recordings_report_check(&r, path, sizeof path), EMPTY));
    CHECK(strlen(path) == sizeof path - 1 && strncmp(path, "/params/rec", sizeof path - 1) == 0, "%s", path);
}

int main(void)
{
    static const check_case cases[] = {
        CHECK_CASE(test_accepts_report),      CHECK_CASE(test_accepts_removed_only),
        CHECK_CASE(test_accepts_bounds),      CHECK_CASE(test_end_equal_start),
        CHECK_CASE(test_end_before_start),    CHECK_CASE(test_empty_recording),
        CHECK_CASE(test_duration_longer),     CHECK_CASE(test_window_before_duration),
        CHECK_CASE(test_id_twice),            CHECK_CASE(test_id_prefix_distinct),
        CHECK_CASE(test_reported_and_removed), CHECK_CASE(test_first_entry_named),
        CHECK_CASE(test_absent_lists_unread), CHECK_CASE(test_path_cap),
    };
    CHECK_RUN_ALL(cases);
    return check_summary("catalog_decide_test");
}
