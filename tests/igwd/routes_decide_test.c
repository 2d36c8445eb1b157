/* routes_decide_test.c - the routes' decisions without services
 * (routes/decide.h): how a request reaches its handler (the login before
 * any `auth user` route, bound or not), what the domains' results answer
 * over HTTP (class, reason, path; the status and code are the class's),
 * upload-file's part rules, and the decoded requests turned into domain
 * inputs. Every answer is checked against its route's declared classes
 * (the schema's `errors`, which the transport enforces). */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "api.h"
#include "core/db.h"
#include "routes/decide.h"

static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static bool error_is(const igw_routes_error *e, int cls, const char *reason, const char *path)
{
    return e->cls == cls && same(e->reason, reason) && same(e->path, path);
}

/* The route declares cls (internal always may be answered: http.c). */
static bool declared(igw_route_id route, int cls)
{
    if (cls == IGW_ERR_INTERNAL)
        return true;
    for (uint32_t i = 0; i < igw_routes[route].nerrors; i++)
        if (igw_routes[route].errors[i] == cls)
            return true;
    return false;
}
#define CHECK_DECLARED(route, e) \
    CHECK(declared(route, (e).cls), "%s answers %s", igw_routes[route].name, igw_error_classes[(e).cls].name)

static const char SQLSTATE_ERR[] = "23505 duplicate key value";
static const char LOST_ERR[] = "connection lost: no answer within 1000 ms";
static const char NOT_SENT_ERR[] = IGW_DB_NOT_SENT "database queue full";

/* ---- dispatch ---- */

/* Only `auth user` routes log in; without a login configured they are unavailable. */
static void test_way(void)
{
    CHECK(igw_routes_decide_way(IGW_AUTH_KIND_NONE, false, false) == IGW_ROUTES_DIRECT);
    CHECK(igw_routes_decide_way(IGW_AUTH_KIND_DEVICE, true, true) == IGW_ROUTES_DIRECT);
    CHECK(igw_routes_decide_way(IGW_AUTH_KIND_USER, false, true) == IGW_ROUTES_LOGIN);
    CHECK(igw_routes_decide_way(IGW_AUTH_KIND_USER, true, true) == IGW_ROUTES_LOGIN_WS);
    CHECK(igw_routes_decide_way(IGW_AUTH_KIND_USER, true, false) == IGW_ROUTES_NO_LOGIN);
    CHECK(igw_routes_decide_way(IGW_AUTH_KIND_USER, false, false) == IGW_ROUTES_NO_LOGIN);
}

/* Over the schema's routes: the device routes go direct, every other one
 * logs in first, the unbound consent routes included (401 before 501). */
static void test_way_schema(void)
{
    for (int i = 0; i < IGW_ROUTE__COUNT; i++) {
        const igw_route_def *r = &igw_routes[i];
        igw_routes_way way = igw_routes_decide_way(r->auth, false, true);
        bool device = i == IGW_ROUTE_DEVICE_SEND || i == IGW_ROUTE_DEVICE_UPLOAD;
        CHECK((way == IGW_ROUTES_DIRECT) == device, "%s", r->name);
        CHECK((igw_routes_decide_way(r->auth, false, false) == IGW_ROUTES_NO_LOGIN) == !device, "%s", r->name);
        if (!device) {
            igw_routes_error e = {.cls = IGW_ERR_UNAVAILABLE};
            CHECK_DECLARED((igw_route_id)i, e);
        }
    }
    CHECK(igw_routes_decide_way(igw_routes[IGW_ROUTE_CONSENT_CREATE].auth, false, true) == IGW_ROUTES_LOGIN);
}

/* ---- results as replies ---- */

/* A registered endpoint, a database that did not answer, and one that refused. */
static void test_register_error(void)
{
    igw_routes_error e = {0};
    CHECK(!igw_routes_register_error(NULL, &e));
    CHECK(igw_routes_register_error(NOT_SENT_ERR, &e) && error_is(&e, IGW_ERR_UNAVAILABLE, "try again later", ""));
    CHECK(igw_routes_register_error(LOST_ERR, &e) && error_is(&e, IGW_ERR_UNAVAILABLE, "try again later", ""));
    CHECK_DECLARED(IGW_ROUTE_ENDPOINTS_REGISTER, e);
    CHECK(igw_routes_register_error(SQLSTATE_ERR, &e) &&
          error_is(&e, IGW_ERR_INTERNAL, "could not register the endpoint", ""));
}

/* /events: the endpoint's refusals at /endpointId; any other failure unavailable. */
static void test_pull_error(void)
{
    igw_routes_error e = {0};
    igw_outbox_result r = {.status = IGW_OUTBOX_OK};
    CHECK(!igw_routes_outbox_error(&r, false, &e));
    static const igw_outbox_status gone[] = {IGW_OUTBOX_UNKNOWN_ENDPOINT, IGW_OUTBOX_ENDPOINT_EXPIRED};
    for (int i = 0; i < 2; i++) {
        r.status = gone[i];
        CHECK(igw_routes_outbox_error(&r, false, &e) &&
              error_is(&e, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", "/endpointId"));
        CHECK_DECLARED(IGW_ROUTE_EVENTS_PULL, e);
    }
    r.status = IGW_OUTBOX_ERROR;
    CHECK(igw_routes_outbox_error(&r, false, &e) && error_is(&e, IGW_ERR_UNAVAILABLE, "try again later", ""));
    CHECK_DECLARED(IGW_ROUTE_EVENTS_PULL, e);
    r.status = IGW_OUTBOX_REFUSED; /* never a pull's: no /deliveryIds to point at */
    CHECK(igw_routes_outbox_error(&r, false, &e) && e.cls == IGW_ERR_UNAVAILABLE);
}

/* /events/ack: one reason for every kind of refused id, at its index. */
static void test_ack_error(void)
{
    igw_routes_error e = {0};
    static const igw_outbox_refusal kinds[] = {IGW_OUTBOX_REFUSAL_UNKNOWN, IGW_OUTBOX_REFUSAL_DEVICE,
                                               IGW_OUTBOX_REFUSAL_ENTERPRISE, IGW_OUTBOX_REFUSAL_USER,
                                               IGW_OUTBOX_REFUSAL_ENDPOINT, IGW_OUTBOX_REFUSAL_EXPIRED};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        igw_outbox_result r = {.status = IGW_OUTBOX_REFUSED, .refusal = kinds[i], .refused_index = 7};
        CHECK(igw_routes_outbox_error(&r, true, &e) &&
                  error_is(&e, IGW_ERR_NOT_FOUND, "unknown, foreign or expired delivery; nothing was acknowledged",
                           "/deliveryIds/7"),
              "kind %d: %s at %s", kinds[i], e.reason, e.path);
        CHECK_DECLARED(IGW_ROUTE_EVENTS_ACK, e);
    }
    igw_outbox_result r = {.status = IGW_OUTBOX_ENDPOINT_EXPIRED};
    CHECK(igw_routes_outbox_error(&r, true, &e) && same(e.path, "/endpointId"));
    r = (igw_outbox_result){.status = IGW_OUTBOX_OK, .acknowledged = 3};
    CHECK(!igw_routes_outbox_error(&r, true, &e));
}

/* /recordings/query: endpoint, rights, camera, each at its field; the database by its class. */
static void test_recordings_error(void)
{
    igw_routes_error e = {0};
    igw_recordings_result r = {.status = IGW_RECORDINGS_OK};
    CHECK(!igw_routes_recordings_error(&r, &e));
    r.status = IGW_RECORDINGS_UNKNOWN_ENDPOINT;
    CHECK(igw_routes_recordings_error(&r, &e) &&
          error_is(&e, IGW_ERR_NOT_FOUND, "unknown or expired endpoint", "/endpointId"));
    CHECK_DECLARED(IGW_ROUTE_RECORDINGS_QUERY, e);
    r.status = IGW_RECORDINGS_NO_RIGHTS;
    CHECK(igw_routes_recordings_error(&r, &e) &&
          error_is(&e, IGW_ERR_PERMISSION, "no rights on the target device", "/target"));
    CHECK_DECLARED(IGW_ROUTE_RECORDINGS_QUERY, e);
    r.status = IGW_RECORDINGS_UNKNOWN_CAMERA;
    CHECK(igw_routes_recordings_error(&r, &e) &&
          error_is(&e, IGW_ERR_NOT_FOUND, "unknown camera of the target device", "/cameraId"));
    r = (igw_recordings_result){.status = IGW_RECORDINGS_FAILED, .err = LOST_ERR};
    CHECK(igw_routes_recordings_error(&r, &e) && error_is(&e, IGW_ERR_UNAVAILABLE, "try again later", ""));
    CHECK_DECLARED(IGW_ROUTE_RECORDINGS_QUERY, e); /* a read: never an unknown outcome */
    r.err = NOT_SENT_ERR;
    CHECK(igw_routes_recordings_error(&r, &e) && e.cls == IGW_ERR_UNAVAILABLE);
    r.err = SQLSTATE_ERR;
    CHECK(igw_routes_recordings_error(&r, &e) && e.cls == IGW_ERR_INTERNAL);
}

/* consents: unknown and another user's read the same; a stale revision
 * is a conflict at expectedRevision; a failed statement never says why. */
static void test_consent_error(void)
{
    igw_routes_error e = {0};
    igw_consent_result r = {.status = IGW_CONSENT_OK};
    CHECK(!igw_routes_consent_error(&r, &e));
    r.status = IGW_CONSENT_NOT_FOUND;
    CHECK(igw_routes_consent_error(&r, &e) && error_is(&e, IGW_ERR_NOT_FOUND, "unknown consent", "/consentId"));
    CHECK_DECLARED(IGW_ROUTE_CONSENT_GET_ONE, e);
    CHECK_DECLARED(IGW_ROUTE_CONSENT_REVOKE, e);
    r.status = IGW_CONSENT_CONFLICT;
    CHECK(igw_routes_consent_error(&r, &e) && e.cls == IGW_ERR_CONFLICT && strcmp(e.path, "/expectedRevision") == 0);
    CHECK_DECLARED(IGW_ROUTE_CONSENT_REVOKE, e);
    r = (igw_consent_result){.status = IGW_CONSENT_FAILED, .err = LOST_ERR};
    CHECK(igw_routes_consent_error(&r, &e) && error_is(&e, IGW_ERR_UNAVAILABLE, "try again later", ""));
    CHECK_DECLARED(IGW_ROUTE_CONSENT_GET_ONE, e);
    r.err = SQLSTATE_ERR;
    CHECK(igw_routes_consent_error(&r, &e) && e.cls == IGW_ERR_INTERNAL && !strstr(e.reason, "SQL"));
    CHECK_DECLARED(IGW_ROUTE_CONSENT_REVOKE, e);
    /* create's refusals: each a class its route declares, never a word of
     * the database or the owner. */
    for (int st = IGW_CONSENT_SECONDS; st <= IGW_CONSENT_NO_OWNER; st++) {
        r = (igw_consent_result){.status = (igw_consent_status)st};
        CHECK(igw_routes_consent_error(&r, &e) && e.cls != IGW_ERR_OK && e.reason[0]);
        CHECK_DECLARED(IGW_ROUTE_CONSENT_CREATE, e);
    }
    r = (igw_consent_result){.status = IGW_CONSENT_SECONDS};
    CHECK(igw_routes_consent_error(&r, &e) && e.cls == IGW_ERR_PARAMETER && strcmp(e.path, "/expiresAt") == 0);
    r.status = IGW_CONSENT_TOKEN_TAKEN;
    CHECK(igw_routes_consent_error(&r, &e) && e.cls == IGW_ERR_CONFLICT && strcmp(e.path, "/msgToken") == 0);
    r.status = IGW_CONSENT_NO_SOURCE;
    CHECK(igw_routes_consent_error(&r, &e) && e.cls == IGW_ERR_NOT_FOUND && strcmp(e.path, "/sourceSessionId") == 0);
    r.status = IGW_CONSENT_NO_OWNER;
    CHECK(igw_routes_consent_error(&r, &e) && e.cls == IGW_ERR_UNAVAILABLE);
    r.status = IGW_CONSENT_PRIVACY;
    CHECK(igw_routes_consent_error(&r, &e) && e.cls == IGW_ERR_PERMISSION);
    /* The ledger's SQL names only the consent machine's states. */
    CHECK(igw_consent_check_states() == NULL);
}

/* send: a success answers its DeviceReply; one without is internal; a refusal is the edge's. */
static void test_uplink_error(void)
{
    igw_routes_error e = {0};
    igw_edge_result ok = {.cls = IGW_ERR_OK, .reason = "", .path = "", .reply = "{}", .reply_len = 2};
    CHECK(!igw_routes_uplink_error(&ok, true, &e));
    ok.reply = NULL;
    CHECK(igw_routes_uplink_error(&ok, true, &e) && e.cls == IGW_ERR_INTERNAL);
    CHECK(!igw_routes_uplink_error(&ok, false, &e) && e.cls == IGW_ERR_INTERNAL); /* upload: if the exchange is gone */
    igw_edge_result no = {.cls = IGW_ERR_PERMISSION, .reason = "not a sub-device bound to this gateway",
                          .path = "/params/devices/0"};
    CHECK(igw_routes_uplink_error(&no, true, &e) &&
          error_is(&e, IGW_ERR_PERMISSION, "not a sub-device bound to this gateway", "/params/devices/0"));
    CHECK(igw_routes_uplink_error(&no, false, &e) && e.cls == IGW_ERR_PERMISSION);
    CHECK_DECLARED(IGW_ROUTE_DEVICE_UPLOAD, e);
}

/* ---- upload-file ---- */

static igw_multipart_part part(const char *name, const char *filename)
{
    igw_multipart_part p = {.has_filename = filename != NULL};
    snprintf(p.name, sizeof p.name, "%s", name);
    snprintf(p.filename, sizeof p.filename, "%s", filename ? filename : "");
    p.name_len = strlen(p.name);
    p.filename_len = strlen(p.filename);
    return p;
}

/* Parts other than `file` are skipped; the file is taken once, with a safe name. */
static void test_upload_part(void)
{
    igw_routes_error e = {0};
    igw_multipart_part p = part("note", "x.txt");
    CHECK(igw_routes_upload_part(&p, false, &e) == IGW_ROUTES_PART_SKIP);
    p = part("files", "x.txt");
    CHECK(igw_routes_upload_part(&p, false, &e) == IGW_ROUTES_PART_SKIP);
    p = part("file", "report.txt");
    CHECK(igw_routes_upload_part(&p, false, &e) == IGW_ROUTES_PART_FILE);
    CHECK(igw_routes_upload_part(&p, true, &e) == IGW_ROUTES_PART_REFUSED);
    CHECK(error_is(&e, IGW_ERR_PARAMETER, "the part file appears twice", "file"), "%s", e.reason);
    p = part("note", "x.txt");
    CHECK(igw_routes_upload_part(&p, true, &e) == IGW_ROUTES_PART_SKIP); /* after the file: still ignored */
}

/* The file's name: present, not empty, and what the filename rule admits. */
static void test_upload_filename(void)
{
    igw_routes_error e = {0};
    igw_multipart_part p = part("file", NULL);
    CHECK(igw_routes_upload_part(&p, false, &e) == IGW_ROUTES_PART_REFUSED);
    CHECK(error_is(&e, IGW_ERR_PARAMETER, "the part file needs a filename", "file"), "%s", e.reason);
    p = part("file", "");
    CHECK(igw_routes_upload_part(&p, false, &e) == IGW_ROUTES_PART_REFUSED && same(e.path, "file"));
    p = part("file", "../etc/passwd");
    CHECK(igw_routes_upload_part(&p, false, &e) == IGW_ROUTES_PART_REFUSED);
    CHECK(e.cls == IGW_ERR_PARAMETER && strstr(e.reason, "path separator") && same(e.path, "file"), "%s", e.reason);
    CHECK_DECLARED(IGW_ROUTE_DEVICE_UPLOAD, e);
}

/* The cap is the largest file taken; a byte more is too large, at `file`. */
static void test_upload_size(void)
{
    igw_routes_error e = {0};
    CHECK(!igw_routes_upload_too_large(1000, 1000, &e));
    CHECK(igw_routes_upload_too_large(1001, 1000, &e) &&
          error_is(&e, IGW_ERR_TOO_LARGE, "the file exceeds the upload cap", "file"));
    CHECK_DECLARED(IGW_ROUTE_DEVICE_UPLOAD, e);
}

/* The body's end: the parser's refusal first, then a missing file. */
static void test_upload_end(void)
{
    igw_routes_error e = {0};
    CHECK(!igw_routes_upload_end_error(0, true, NULL, &e));
    CHECK(igw_routes_upload_end_error(0, false, NULL, &e) &&
          error_is(&e, IGW_ERR_PARAMETER, "the part file is required", "file"));
    CHECK(igw_routes_upload_end_error(-1, false, "multipart: truncated body", &e) &&
          error_is(&e, IGW_ERR_PARAMETER, "multipart: truncated body", ""));
    CHECK(igw_routes_upload_end_error(-1, true, NULL, &e) &&
          error_is(&e, IGW_ERR_PARAMETER, "invalid multipart body", ""));
    CHECK_DECLARED(IGW_ROUTE_DEVICE_UPLOAD, e);
}

/* An audio upload's type by its first bytes, whatever its name. */
static void test_audio_type(void)
{
    igw_routes_error e = {0};
    static const unsigned char ogg[] = "OggS\0\2\0\0\0\0\0\0", wav[] = "RIFF\x24\0\0\0WAVE",
                               id3[] = "ID3\4\0\0\0\0\0\0\0\0", frame[12] = {0xFF, 0xFB, 0x90, 0x64},
                               mp2[12] = {0xFF, 0xFD, 0x90, 0x64}, /* layer II: not MP3 */
                               badrate[12] = {0xFF, 0xFB, 0xF0, 0x64}, riffavi[] = "RIFF\x24\0\0\0AVI ",
                               text[] = "hello, world";
    CHECK(igw_routes_audio_type(ogg, 12, &e) == IGW_AudioType_audio_ogg);
    CHECK(igw_routes_audio_type(ogg, 4, &e) < 0); /* a file of 4 bytes: too short to be audio */
    CHECK(igw_routes_audio_type(wav, 12, &e) == IGW_AudioType_audio_wav);
    CHECK(igw_routes_audio_type(id3, 12, &e) == IGW_AudioType_audio_mpeg);
    CHECK(igw_routes_audio_type(frame, 12, &e) == IGW_AudioType_audio_mpeg);
    CHECK(igw_routes_audio_type(mp2, 12, &e) < 0);
    CHECK(igw_routes_audio_type(badrate, 12, &e) < 0);
    CHECK(igw_routes_audio_type(riffavi, 12, &e) < 0);
    CHECK(igw_routes_audio_type(wav, 11, &e) < 0); /* "WAVE" cut short */
    CHECK(igw_routes_audio_type(ogg, 3, &e) < 0);
    CHECK(igw_routes_audio_type(text, 12, &e) < 0 &&
          error_is(&e, IGW_ERR_MEDIA_TYPE, "the file is not Ogg, WAV or MP3 audio (told by its first bytes, not its name)",
                   "file"));
    CHECK(igw_routes_audio_type(text, 0, &e) < 0);
    CHECK_DECLARED(IGW_ROUTE_APP_UPLOAD, e);
}

/* ---- requests into domain inputs ---- */

/* A canonical id read from its bytes alone, up to 2^53 - 1. */
static void test_id_of(void)
{
    CHECK(igw_routes_id_of(igw_str_of("1")) == 1);
    CHECK(igw_routes_id_of(igw_str_of("9007199254740991")) == 9007199254740991);
    CHECK(igw_routes_id_of((igw_str){"1234567", 3}) == 123); /* a slice of the body: no NUL after it */
    CHECK(igw_routes_id_of((igw_str){"42\"}", 2}) == 42);
}

/* Decodes json with the strict decoder FN into *out (the test fails when it refuses). */
#define DECODE(FN, json, out, a)                                                                              \
    do {                                                                                                      \
        igw_json j_;                                                                                          \
        igw_json_init(&j_, json, strlen(json), a, 10);                                                        \
        CHECK(FN(&j_, out) == 0 && igw_json_finish(&j_) == 0, "%s at %s", j_.reason ? j_.reason : "", j_.path); \
    } while (0)

/* /recordings/query's body becomes the catalog's query, strings as C strings. */
static void test_recordings_query(void)
{
    igw_arena a;
    igw_arena_init(&a, 1 << 16);
    igw_RecordingsQuery rq;
    DECODE(igw_decode_RecordingsQuery,
           "{\"endpointId\":\"ep1\",\"target\":{\"productID\":\"P1\",\"deviceName\":\"d1\"},\"cameraId\":\"cam-1\","
           "\"startTimeMs\":1000,\"endTimeMs\":2000,\"limit\":10}",
           &rq, &a);
    igw_recordings_query q;
    CHECK(igw_routes_recordings_query(&rq, 5, 6, &a, &q) == 0);
    CHECK(q.enterprise_id == 5 && q.user_id == 6 && same(q.endpoint_id, "ep1") && same(q.product_id, "P1") &&
          same(q.device_name, "d1") && same(q.camera_id, "cam-1"));
    CHECK(q.start_ms == 1000 && q.end_ms == 2000 && q.limit == 10);
    igw_arena small;
    igw_arena_init(&small, 1); /* no room for the strings */
    CHECK(igw_routes_recordings_query(&rq, 5, 6, &small, &q) == -1);
    igw_arena_free(&small);
    igw_arena_free(&a);
}

/* A group's members as numbers, in the body's order. */
static void test_group_members(void)
{
    igw_arena a;
    igw_arena_init(&a, 1 << 16);
    igw_GroupCreate rq;
    DECODE(igw_decode_GroupCreate,
           "{\"name\":\"team\",\"members\":[\"12\",\"9007199254740991\",\"3\"]}", &rq, &a);
    int64_t out[IGW_GroupCreate_members_MAX_ITEMS];
    CHECK(igw_routes_group_members(&rq, out) == 3);
    CHECK(out[0] == 12 && out[1] == 9007199254740991 && out[2] == 3);
    igw_arena_free(&a);
}

int main(void)
{
    static const check_case cases[] = {
        CHECK_CASE(test_way),              CHECK_CASE(test_way_schema),       CHECK_CASE(test_register_error),
        CHECK_CASE(test_pull_error),       CHECK_CASE(test_ack_error),        CHECK_CASE(test_recordings_error), CHECK_CASE(test_consent_error),
        CHECK_CASE(test_uplink_error),     CHECK_CASE(test_upload_part),      CHECK_CASE(test_upload_filename),
        CHECK_CASE(test_upload_size),      CHECK_CASE(test_upload_end),       CHECK_CASE(test_id_of),
        CHECK_CASE(test_recordings_query), CHECK_CASE(test_group_members),    CHECK_CASE(test_audio_type),
    };
    CHECK_RUN_ALL(cases);
    return check_summary("routes_decide_test");
}
