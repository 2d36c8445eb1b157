/* edge_decide_test.c - the edge room's decisions without services
 * (edge/decide.h, on the schema's device protocol, generated/protocol.c):
 * which device an uplink is for and the gateway rule, the credentials'
 * one answer, reply methods, where a checked message goes, the batch's
 * retries, what a refused MQTT payload still names, the refusal log's
 * pace, and presence facts: their parse, their source, the broker boots'
 * sweep. */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "api.h"
#include "command/results.h"
#include "devauth.h"
#include "edge/decide.h"
#include "protocol.h"

static igw_str S(const char *s)
{
    return igw_str_of(s);
}

static const igw_str NONE = {NULL, 0};

static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static bool refusal_is(const igw_edge_refusal *r, int cls, const char *reason, const char *path)
{
    return r->cls == cls && same(r->reason, reason) && same(r->path, path);
}

/* The device protocol's row for (handle, type, method); the test fails without one. */
static const igw_proto_row *row_of(const char *h, const char *t, const char *m)
{
    const igw_proto_row *row = NULL;
    igw_proto_status st = igw_proto_find(&igw_proto_device, h, strlen(h), t, strlen(t), m, strlen(m), &row);
    CHECK(st == IGW_PROTO_FOUND && row, "%s/%s/%s", h, t, m);
    return row;
}

/* ---- the uplink's device ---- */

/* A name is 1..cap-1 bytes without NUL; a refused one leaves dst as it was. */
static void test_name_copy(void)
{
    char d[8] = "keep";
    CHECK(igw_edge_name_copy(d, sizeof d, S("abc")) && strcmp(d, "abc") == 0);
    CHECK(igw_edge_name_copy(d, sizeof d, S("1234567")) && strcmp(d, "1234567") == 0); /* cap - 1 */
    strcpy(d, "keep");
    CHECK(!igw_edge_name_copy(d, sizeof d, S("12345678")) && strcmp(d, "keep") == 0);  /* cap */
    CHECK(!igw_edge_name_copy(d, sizeof d, S("")) && strcmp(d, "keep") == 0);
    CHECK(!igw_edge_name_copy(d, sizeof d, NONE) && strcmp(d, "keep") == 0);
    CHECK(!igw_edge_name_copy(d, sizeof d, (igw_str){"a\0b", 3}) && strcmp(d, "keep") == 0);
}

/* One leading '$' of the handle is dropped; a second, or an empty name, is refused. */
static void test_topic(void)
{
    char h[16], t[16];
    igw_edge_refusal r = {0};
    CHECK(!igw_edge_topic_refuses(S("$thing"), S("property"), h, sizeof h, t, sizeof t, &r));
    CHECK(strcmp(h, "thing") == 0 && strcmp(t, "property") == 0, "%s %s", h, t);
    CHECK(!igw_edge_topic_refuses(S("thing"), S("event"), h, sizeof h, t, sizeof t, &r) && strcmp(h, "thing") == 0);
    CHECK(igw_edge_topic_refuses(S("$$thing"), S("property"), h, sizeof h, t, sizeof t, &r));
    CHECK(refusal_is(&r, IGW_ERR_PARAMETER, "unknown handle or message type", ""), "%s", r.reason);
    CHECK(igw_edge_topic_refuses(S("$"), S("property"), h, sizeof h, t, sizeof t, &r));
    CHECK(igw_edge_topic_refuses(S("thing"), S(""), h, sizeof h, t, sizeof t, &r));
    CHECK(igw_edge_topic_refuses(S("thing"), S("a-type-too-long-here"), h, sizeof h, t, sizeof t, &r));
}

/* HTTP without a productID header: the authenticated device's own message. */
static void test_target_http_self(void)
{
    char pid[32], dn[32];
    igw_edge_refusal r = {0};
    CHECK(!igw_edge_target_refuses(NONE, NONE, "gwP", "gw1", pid, dn, sizeof pid, &r));
    CHECK(strcmp(pid, "gwP") == 0 && strcmp(dn, "gw1") == 0, "%s/%s", pid, dn);
}

/* HTTP with both headers: the named device (the gateway rule comes later). */
static void test_target_http_headers(void)
{
    char pid[32], dn[32];
    igw_edge_refusal r = {0};
    CHECK(!igw_edge_target_refuses(S("subP"), S("s7"), "gwP", "gw1", pid, dn, sizeof pid, &r));
    CHECK(strcmp(pid, "subP") == 0 && strcmp(dn, "s7") == 0, "%s/%s", pid, dn);
}

/* HTTP with productID but no usable deviceName: refused; deviceName alone is
 * not read (productID says whether the headers name a device). */
static void test_target_http_half(void)
{
    char pid[32], dn[32];
    igw_edge_refusal r = {0};
    CHECK(igw_edge_target_refuses(S("subP"), NONE, "gwP", "gw1", pid, dn, sizeof pid, &r));
    CHECK(refusal_is(&r, IGW_ERR_PARAMETER, "productID and deviceName go together", ""), "%s", r.reason);
    CHECK(igw_edge_target_refuses(S("subP"), S(""), "gwP", "gw1", pid, dn, sizeof pid, &r));
    CHECK(igw_edge_target_refuses(S(""), S("s7"), "gwP", "gw1", pid, dn, sizeof pid, &r));
    CHECK(!igw_edge_target_refuses(NONE, S("s7"), "gwP", "gw1", pid, dn, sizeof pid, &r));
    CHECK(strcmp(pid, "gwP") == 0 && strcmp(dn, "gw1") == 0, "%s/%s", pid, dn);
}

/* MQTT: the topic's pair, and an unknown device when it names none. */
static void test_target_mqtt(void)
{
    char pid[32], dn[32];
    igw_edge_refusal r = {0};
    CHECK(!igw_edge_target_refuses(S("camP"), S("cam1"), NULL, NULL, pid, dn, sizeof pid, &r));
    CHECK(strcmp(pid, "camP") == 0 && strcmp(dn, "cam1") == 0, "%s/%s", pid, dn);
    CHECK(igw_edge_target_refuses(S("camP"), NONE, NULL, NULL, pid, dn, sizeof pid, &r));
    CHECK(refusal_is(&r, IGW_ERR_PARAMETER, "unknown device", ""), "%s", r.reason);
    CHECK(igw_edge_target_refuses(NONE, NONE, NULL, NULL, pid, dn, sizeof pid, &r));
}

/* Every credential failure gets one class and reason; only the log tells which. */
static void test_credentials(void)
{
    igw_edge_refusal r = {0};
    CHECK(!igw_edge_credentials_refuse(IGW_DEVAUTH_OK, true, 20, &r));
    static const int codes[] = {IGW_DEVAUTH_EUSERNAME, IGW_DEVAUTH_EPASSWORD, IGW_DEVAUTH_ESECRET,
                                IGW_DEVAUTH_EUNKNOWN,  IGW_DEVAUTH_EMISMATCH, IGW_DEVAUTH_EEXPIRED,
                                IGW_DEVAUTH_EINTERNAL};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        CHECK(igw_edge_credentials_refuse(codes[i], true, 20, &r), "code %d", codes[i]);
        CHECK(refusal_is(&r, IGW_ERR_UNAUTHENTICATED, "invalid device credentials", ""), "code %d", codes[i]);
        CHECK(same(r.log, igw_edge_devauth_reason(codes[i])), "code %d: %s", codes[i], r.log);
    }
    /* The record decides first: unknown, then an unusable secret, whatever rc says. */
    CHECK(igw_edge_credentials_refuse(IGW_DEVAUTH_EMISMATCH, false, 0, &r) && same(r.log, "unknown device"));
    CHECK(igw_edge_credentials_refuse(IGW_DEVAUTH_OK, true, 0, &r) && same(r.log, "unusable secret"));
    CHECK(r.cls == IGW_ERR_UNAUTHENTICATED && same(r.reason, "invalid device credentials"));
    CHECK(igw_edge_credentials_refuse(IGW_DEVAUTH_OK, false, 20, &r) && same(r.log, "unknown device"));
}

/* Each devauth code has its own log reason; any other is an internal error. */
static void test_devauth_reasons(void)
{
    CHECK(same(igw_edge_devauth_reason(IGW_DEVAUTH_EEXPIRED), "expired"));
    CHECK(same(igw_edge_devauth_reason(IGW_DEVAUTH_EMISMATCH), "signature does not match"));
    CHECK(same(igw_edge_devauth_reason(IGW_DEVAUTH_EPASSWORD), "malformed password"));
    CHECK(same(igw_edge_devauth_reason(IGW_DEVAUTH_EINTERNAL), "internal error"));
    CHECK(same(igw_edge_devauth_reason(-99), "internal error"));
    static const int codes[] = {IGW_DEVAUTH_EUSERNAME, IGW_DEVAUTH_EPASSWORD, IGW_DEVAUTH_ESECRET,
                                IGW_DEVAUTH_EUNKNOWN,  IGW_DEVAUTH_EMISMATCH, IGW_DEVAUTH_EEXPIRED};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        for (size_t k = 0; k < i; k++)
            CHECK(strcmp(igw_edge_devauth_reason(codes[i]), igw_edge_devauth_reason(codes[k])) != 0, "%d %d",
                  codes[i], codes[k]);
}

/* The gateway rule: one's own message always; another's only for a gateway. */
static void test_actor(void)
{
    igw_edge_refusal r = {0};
    CHECK(igw_edge_decide_actor("P", "d1", "P", "d1", false, &r) == IGW_EDGE_ACTOR_SELF);
    CHECK(igw_edge_decide_actor("P", "d1", "P", "d1", true, &r) == IGW_EDGE_ACTOR_SELF);
    CHECK(igw_edge_decide_actor("P", "d1", "P", "d2", true, &r) == IGW_EDGE_ACTOR_SUBDEVICE);
    CHECK(igw_edge_decide_actor("P", "d1", "Q", "d1", true, &r) == IGW_EDGE_ACTOR_SUBDEVICE);
    CHECK(igw_edge_decide_actor("P", "d1", "P", "d2", false, &r) == IGW_EDGE_ACTOR_REFUSED);
    CHECK(refusal_is(&r, IGW_ERR_PERMISSION, "only a gateway may act for another device", ""), "%s", r.reason);
    CHECK(igw_edge_decide_actor("P", "d1", "P", "d10", false, &r) == IGW_EDGE_ACTOR_REFUSED); /* not a prefix match */
}

/* HTTP: a sub-device bound to this gateway only; unknown looks like bound elsewhere. */
static void test_bound_http(void)
{
    igw_edge_refusal r = {0}, unknown = {0};
    CHECK(!igw_edge_bound_refuses(true, "gwP", "gw1", "gwP", "gw1", &r));
    CHECK(igw_edge_bound_refuses(false, "", "", "gwP", "gw1", &unknown));
    CHECK(refusal_is(&unknown, IGW_ERR_PERMISSION, "not a sub-device bound to this gateway", ""), "%s",
          unknown.reason);
    CHECK(igw_edge_bound_refuses(true, "gwP", "gw2", "gwP", "gw1", &r));
    CHECK(r.cls == unknown.cls && same(r.reason, unknown.reason)); /* no existence leak */
    CHECK(igw_edge_bound_refuses(true, "gwQ", "gw1", "gwP", "gw1", &r));
    CHECK(igw_edge_bound_refuses(true, "", "", "gwP", "gw1", &r)); /* bound to no gateway */
}

/* MQTT: the broker's ACL bound the topic; only an unknown device is refused. */
static void test_bound_mqtt(void)
{
    igw_edge_refusal r = {0};
    CHECK(!igw_edge_bound_refuses(true, "", "", NULL, NULL, &r));
    CHECK(!igw_edge_bound_refuses(true, "gwP", "gw1", NULL, NULL, &r));
    CHECK(igw_edge_bound_refuses(false, "", "", NULL, NULL, &r));
    CHECK(refusal_is(&r, IGW_ERR_NOT_FOUND, "unknown device", ""), "%s", r.reason);
}

/* ---- the message ---- */

/* Only an unknown method points at /method; unknown handle or type at nothing. */
static void test_row_refusal(void)
{
    igw_edge_refusal r = {0};
    CHECK(!igw_edge_row_refuses(IGW_PROTO_FOUND, &r));
    static const igw_proto_status sts[] = {IGW_PROTO_NO_HANDLE, IGW_PROTO_NO_TYPE, IGW_PROTO_NO_METHOD};
    for (size_t i = 0; i < 3; i++) {
        CHECK(igw_edge_row_refuses(sts[i], &r));
        CHECK(refusal_is(&r, IGW_ERR_PARAMETER, igw_proto_status_text(sts[i]),
                         sts[i] == IGW_PROTO_NO_METHOD ? "/method" : ""),
              "%d: %s at %s", sts[i], r.reason, r.path);
    }
}

/* The reply names the row's reply method, else the message's own. */
static void test_reply_method(void)
{
    const igw_proto_row *rep = row_of("thing", "property", "report"), *ext = row_of("ext", "any", "custom"),
                        *ans = row_of("thing", "property", "controlReply");
    igw_str m = igw_edge_reply_method(rep, S("report"));
    CHECK(m.len == 11 && memcmp(m.ptr, "reportReply", 11) == 0, "%.*s", (int)m.len, m.ptr);
    CHECK(igw_edge_reply_topic(rep));
    m = igw_edge_reply_method(ext, S("custom"));
    CHECK(m.len == 6 && memcmp(m.ptr, "custom", 6) == 0 && !igw_edge_reply_topic(ext));
    m = igw_edge_reply_method(ans, S("controlReply")); /* a reply to a command gets no reply message */
    CHECK(m.len == 12 && !igw_edge_reply_topic(ans));
    m = igw_edge_reply_method(NULL, S("whatever")); /* refused before its row was found */
    CHECK(m.len == 8 && memcmp(m.ptr, "whatever", 8) == 0 && !igw_edge_reply_topic(NULL));
}

/* The model is needed by the checks against it, by no other. */
static void test_needs_model(void)
{
    CHECK(igw_edge_needs_model(IGW_PROTO_CHECK_PROPERTIES) && igw_edge_needs_model(IGW_PROTO_CHECK_PACK));
    CHECK(igw_edge_needs_model(IGW_PROTO_CHECK_EVENT) && igw_edge_needs_model(IGW_PROTO_CHECK_ACTION));
    CHECK(!igw_edge_needs_model(IGW_PROTO_CHECK_NONE) && !igw_edge_needs_model(IGW_PROTO_CHECK_SUBDEVICES));
    CHECK(!igw_edge_needs_model(IGW_PROTO_CHECK_SESSION) && !igw_edge_needs_model(IGW_PROTO_CHECK_RECORDINGS));
}

/* Where the schema's rows go: answered from the database, the catalog, the
 * sub-devices' check, or the batch. */
static void test_store_rows(void)
{
    igw_edge_refusal r = {0};
    CHECK(igw_edge_decide_store(row_of("thing", "property", "getStatus"), false, &r) == IGW_EDGE_STORE_PROPERTIES);
    CHECK(igw_edge_decide_store(row_of("thing", "service", "getStatus"), false, &r) == IGW_EDGE_STORE_PROPERTIES);
    CHECK(igw_edge_decide_store(row_of("config", "get", "get"), false, &r) == IGW_EDGE_STORE_CONFIG);
    CHECK(igw_edge_decide_store(row_of("config", "report", "report"), false, &r) == IGW_EDGE_STORE_BATCH);
    CHECK(igw_edge_decide_store(row_of("media", "recording", "report"), false, &r) == IGW_EDGE_STORE_CATALOG);
    CHECK(igw_edge_decide_store(row_of("media", "session", "mediaOffer"), false, &r) == IGW_EDGE_STORE_BATCH);
    CHECK(igw_edge_decide_store(row_of("thing", "property", "report"), true, &r) == IGW_EDGE_STORE_BATCH);
    CHECK(igw_edge_decide_store(row_of("gateway", "operation", "topo"), true, &r) == IGW_EDGE_STORE_SUBDEVICES);
}

/* Sub-devices from a device that is no gateway: refused before any query. */
static void test_store_not_gateway(void)
{
    igw_edge_refusal r = {0};
    static const char *const methods[] = {"topo", "online", "offline"};
    for (int i = 0; i < 3; i++) {
        CHECK(igw_edge_decide_store(row_of("gateway", "operation", methods[i]), false, &r) == IGW_EDGE_STORE_REFUSED);
        CHECK(refusal_is(&r, IGW_ERR_PERMISSION, "only a gateway reports sub-devices", ""), "%s", r.reason);
    }
}

/* Over every row of the protocol: a refusal only for sub-devices of a
 * non-gateway, an answer from the database only for rows that return data. */
static void test_store_every_row(void)
{
    igw_edge_refusal r = {0};
    for (size_t i = 0; i < igw_proto_device.nrows; i++) {
        const igw_proto_row *row = &igw_proto_device.rows[i];
        igw_edge_store gw = igw_edge_decide_store(row, true, &r), dev = igw_edge_decide_store(row, false, &r);
        CHECK(gw != IGW_EDGE_STORE_REFUSED, "%s/%s/%s", row->handle, row->type, row->method);
        CHECK((dev == IGW_EDGE_STORE_REFUSED) == (row->check == IGW_PROTO_CHECK_SUBDEVICES), "%s/%s/%s",
              row->handle, row->type, row->method);
        CHECK((gw == IGW_EDGE_STORE_PROPERTIES || gw == IGW_EDGE_STORE_CONFIG || gw == IGW_EDGE_STORE_MESSAGES) ==
                  (row->returns != IGW_PROTO_RETURNS_NONE),
              "%s/%s/%s", row->handle, row->type, row->method);
        CHECK((gw == IGW_EDGE_STORE_MESSAGES) == (row->returns == IGW_PROTO_RETURNS_MESSAGES), "%s/%s/%s",
              row->handle, row->type, row->method);
    }
}

/* The database's 1-based item names /params/devices/<item - 1>. */
static void test_subdevice_refusal(void)
{
    igw_edge_refusal r = {0};
    igw_edge_subdevice_refusal(1, &r);
    CHECK(refusal_is(&r, IGW_ERR_PERMISSION, "not a sub-device bound to this gateway", "/params/devices/0"), "%s",
          r.path);
    igw_edge_subdevice_refusal(17, &r);
    CHECK(same(r.path, "/params/devices/16"), "%s", r.path);
}

/* The catalog's unknown camera names its entry's cameraId; OK and FAILED are no refusal here. */
static void test_catalog_refusal(void)
{
    igw_edge_refusal r = {0};
    igw_recordings_report_result res = {.status = IGW_RECORDINGS_REPORT_UNKNOWN_CAMERA, .bad = 3};
    CHECK(igw_edge_catalog_refuses(&res, &r));
    CHECK(refusal_is(&r, IGW_ERR_PARAMETER, "not a camera of this device: nothing of the report was stored",
                     "/params/recordings/3/cameraId"),
          "%s at %s", r.reason, r.path);
    res = (igw_recordings_report_result){.status = IGW_RECORDINGS_REPORT_OK, .stored = 2};
    CHECK(!igw_edge_catalog_refuses(&res, &r));
    res = (igw_recordings_report_result){.status = IGW_RECORDINGS_REPORT_FAILED, .err = "08006 gone"};
    CHECK(!igw_edge_catalog_refuses(&res, &r));
}

/* A write's unknown outcome says the message may be stored; the rest says busy. */
static void test_db_reason(void)
{
    CHECK(strstr(igw_edge_db_reason(IGW_ERR_UNKNOWN_OUTCOME), "may or may not be stored") != NULL);
    CHECK(same(igw_edge_db_reason(IGW_ERR_UNAVAILABLE), "busy, retry later"));
}

/* ---- the batch ---- */

/* Closing first, then the pending bound, the bench, a command's reply, the batch. */
static void test_queue(void)
{
    igw_edge_refusal r = {0};
    igw_edge_queue_facts f = {.closing = true, .npending = 100, .pending_max = 100, .dry_run = true,
                              .command_reply = true};
    CHECK(igw_edge_decide_queue(&f, &r) == IGW_EDGE_QUEUE_REFUSED);
    CHECK(refusal_is(&r, IGW_ERR_UNAVAILABLE, "shutting down", ""), "%s", r.reason);
    f.closing = false;
    CHECK(igw_edge_decide_queue(&f, &r) == IGW_EDGE_QUEUE_REFUSED);
    CHECK(refusal_is(&r, IGW_ERR_UNAVAILABLE, "busy, retry later", ""), "%s", r.reason);
    f.npending = 99;
    CHECK(igw_edge_decide_queue(&f, &r) == IGW_EDGE_QUEUE_DRY_RUN);
    f.dry_run = false;
    CHECK(igw_edge_decide_queue(&f, &r) == IGW_EDGE_QUEUE_SETTLE);
    f.command_reply = false;
    CHECK(igw_edge_decide_queue(&f, &r) == IGW_EDGE_QUEUE_BATCH);
}

/* A command's reply settles its command once, and not when it reports properties. */
static void test_queue_settle(void)
{
    igw_edge_refusal r = {0};
    igw_edge_queue_facts f = {.pending_max = 10, .command_reply = true};
    CHECK(igw_edge_decide_queue(&f, &r) == IGW_EDGE_QUEUE_SETTLE);
    f.settling = true; /* results.c gave it back: stored as any uplink */
    CHECK(igw_edge_decide_queue(&f, &r) == IGW_EDGE_QUEUE_BATCH);
    f.settling = false;
    f.props = true;
    CHECK(igw_edge_decide_queue(&f, &r) == IGW_EDGE_QUEUE_BATCH);
}

/* results.c's answer: stored, as any uplink, or failed by its class. */
static void test_settled(void)
{
    CHECK(igw_edge_decide_settled(IGW_RESULTS_STORED, false) == IGW_EDGE_SETTLED_OK);
    CHECK(igw_edge_decide_settled(IGW_RESULTS_NOTHING, false) == IGW_EDGE_SETTLED_UPLINK);
    CHECK(igw_edge_decide_settled(IGW_RESULTS_FAILED, true) == IGW_EDGE_SETTLED_UPLINK);
    CHECK(igw_edge_decide_settled(IGW_RESULTS_FAILED, false) == IGW_EDGE_SETTLED_FAILED);
}

/* A committed batch is stored, whatever else the facts say. */
static void test_batch_committed(void)
{
    igw_edge_batch_facts f = {.committed = true, .value = true, .race = true, .several = true};
    CHECK(igw_edge_decide_batch(&f) == IGW_EDGE_BATCH_STORED);
    f.closing = true;
    CHECK(igw_edge_decide_batch(&f) == IGW_EDGE_BATCH_STORED);
}

/* A bad value: each message alone when several; refused alone or while closing. */
static void test_batch_value(void)
{
    igw_edge_batch_facts f = {.value = true, .several = true, .retries = 9};
    CHECK(igw_edge_decide_batch(&f) == IGW_EDGE_BATCH_RETRY_ALONE);
    f.several = false;
    CHECK(igw_edge_decide_batch(&f) == IGW_EDGE_BATCH_BAD_VALUE);
    f.several = true;
    f.closing = true;
    CHECK(igw_edge_decide_batch(&f) == IGW_EDGE_BATCH_BAD_VALUE);
}

/* A lost race: the batch again, IGW_EDGE_RETRIES_MAX times, never while closing. */
static void test_batch_race(void)
{
    igw_edge_batch_facts f = {.race = true, .several = true};
    for (unsigned i = 0; i < IGW_EDGE_RETRIES_MAX; i++) {
        f.retries = i;
        CHECK(igw_edge_decide_batch(&f) == IGW_EDGE_BATCH_RETRY, "retry %u", i);
    }
    f.retries = IGW_EDGE_RETRIES_MAX;
    CHECK(igw_edge_decide_batch(&f) == IGW_EDGE_BATCH_FAILED);
    f.retries = 0;
    f.closing = true;
    CHECK(igw_edge_decide_batch(&f) == IGW_EDGE_BATCH_FAILED);
    f = (igw_edge_batch_facts){.several = true}; /* any other failure */
    CHECK(igw_edge_decide_batch(&f) == IGW_EDGE_BATCH_FAILED);
}

/* ---- an MQTT uplink the strict decoder refused ---- */

static bool recovered(const char *payload, const char *method, const char *token)
{
    igw_arena a;
    igw_arena_init(&a, 1 << 16);
    igw_str m = {0}, t = {0};
    bool ok = igw_edge_recover_identity(payload, strlen(payload), &a, &m, &t);
    if (ok && method)
        ok = m.len == strlen(method) && memcmp(m.ptr, method, m.len) == 0 && t.len == strlen(token) &&
             memcmp(t.ptr, token, t.len) == 0;
    igw_arena_free(&a);
    return method ? ok : !ok;
}

/* Both names found, in any order, whatever else the object has. */
static void test_recover_identity(void)
{
    CHECK(recovered("{\"method\":\"report\",\"msgToken\":\"t1\",\"params\":{\"x\":1}}", "report", "t1"));
    CHECK(recovered("{\"params\":[1,2],\"msgToken\":\"tok-9\",\"method\":\"eventPost\"}", "eventPost", "tok-9"));
    CHECK(recovered("{\"method\":\"rep\\u006frt\",\"msgToken\":\"t1\"}", "report", "t1")); /* an escape */
    CHECK(recovered("{\"method\":\"report\",\"msgToken\":\"t1\",\"method\":\"other\"}", "report", "t1"));
}

/* Malformed after both names: still answered; before them, or a name that
 * breaks its own rule: not. */
static void test_recover_identity_limits(void)
{
    CHECK(recovered("{\"method\":\"report\",\"msgToken\":\"t1\",\"params\":{\"x\":}", "report", "t1"));
    CHECK(recovered("{\"params\":oops,\"method\":\"report\",\"msgToken\":\"t1\"}", NULL, NULL));
    CHECK(recovered("[\"method\",\"report\"]", NULL, NULL));
    CHECK(recovered("{\"method\":\"report\"}", NULL, NULL));
    CHECK(recovered("{\"method\":7,\"msgToken\":\"t1\"}", NULL, NULL));
    CHECK(recovered("{\"method\":\"re#port\",\"msgToken\":\"t1\"}", NULL, NULL)); /* not an identifier */
    CHECK(recovered("{\"method\":\"report\",\"msgToken\":\" t1\"}", NULL, NULL));
    char big[300];
    snprintf(big, sizeof big, "{\"method\":\"report\",\"msgToken\":\"%0*d\"}", IGW_Token_MAX + 1, 0);
    CHECK(recovered(big, NULL, NULL));
    snprintf(big, sizeof big, "{\"method\":\"report\",\"msgToken\":\"%0*d\"}", IGW_Token_MAX, 0);
    igw_arena a; /* the longest token there may be */
    igw_arena_init(&a, 1 << 16);
    igw_str m, t;
    CHECK(igw_edge_recover_identity(big, strlen(big), &a, &m, &t) && t.len == IGW_Token_MAX);
    igw_arena_free(&a);
}

/* One log line per device per period; a shared slot logs sooner, never later. */
static void test_log_due(void)
{
    igw_edge_logslot slots[4] = {{0}};
    CHECK(igw_edge_log_due(slots, 4, 1, 1000, 60000));
    CHECK(!igw_edge_log_due(slots, 4, 1, 60999, 60000));
    CHECK(igw_edge_log_due(slots, 4, 1, 61000, 60000));
    CHECK(igw_edge_log_due(slots, 4, 2, 61001, 60000)); /* another slot: its own pace */
    CHECK(!igw_edge_log_due(slots, 4, 1, 61002, 60000));
    CHECK(igw_edge_log_due(slots, 4, 5, 61003, 60000)); /* 5 | 1 shares 1's slot: takes it */
    CHECK(igw_edge_log_due(slots, 4, 1, 61004, 60000)); /* and 1 logs again at once */
    igw_edge_logslot fresh[4] = {{0}};
    CHECK(igw_edge_log_due(fresh, 4, 0, 5, 60000) && fresh[1].device == 1); /* 0, the free mark, is never stored */
    CHECK(!igw_edge_log_due(fresh, 4, 0, 6, 60000));
}

/* ---- presence facts ---- */

static int parse(const char *json, igw_presence_fact *f)
{
    return igw_presence_parse(json, strlen(json), f);
}

/* The four members in any order; unknown members skipped. */
static void test_presence_parse(void)
{
    igw_presence_fact f;
    CHECK(parse("{\"state\":\"online\",\"boot\":1700000000000,\"seq\":0,\"at\":1700000000001}", &f) == 0);
    CHECK(f.state == IGW_PRESENCE_ONLINE && f.boot == 1700000000000 && f.seq == 0 && f.at_ms == 1700000000001);
    CHECK(parse("{\"at\":5,\"seq\":9,\"x\":\"new\",\"boot\":1,\"state\":\"offline\",\"y\":[1]}", &f) == 0);
    CHECK(f.state == IGW_PRESENCE_OFFLINE && f.boot == 1 && f.seq == 9 && f.at_ms == 5);
    CHECK(parse("{\"state\":\"boot\",\"boot\":9007199254740991,\"seq\":0,\"at\":0}", &f) == 0);
    CHECK(f.state == IGW_PRESENCE_BOOT && f.boot == 9007199254740991);
}

/* Each member exactly once, in its range; nothing after the object. */
static void test_presence_parse_refused(void)
{
    igw_presence_fact f;
    CHECK(parse("{\"state\":\"online\",\"boot\":1,\"seq\":0}", &f) == -1);                     /* no at */
    CHECK(parse("{\"state\":\"online\",\"boot\":1,\"seq\":0,\"at\":0,\"seq\":1}", &f) == -1);  /* twice */
    CHECK(parse("{\"state\":\"online\",\"boot\":0,\"seq\":0,\"at\":0}", &f) == -1);            /* boot 0 */
    CHECK(parse("{\"state\":\"online\",\"boot\":1,\"seq\":-1,\"at\":0}", &f) == -1);
    CHECK(parse("{\"state\":\"away\",\"boot\":1,\"seq\":0,\"at\":0}", &f) == -1);
    CHECK(parse("{\"state\":\"onlinex\",\"boot\":1,\"seq\":0,\"at\":0}", &f) == -1);
    CHECK(parse("{\"state\":1,\"boot\":1,\"seq\":0,\"at\":0}", &f) == -1);
    CHECK(parse("{\"state\":\"online\",\"boot\":1.5,\"seq\":0,\"at\":0}", &f) == -1);
    CHECK(parse("{\"state\":\"online\",\"boot\":9007199254740992,\"seq\":0,\"at\":0}", &f) == -1);
    CHECK(parse("{\"state\":\"online\",\"boot\":1,\"seq\":0,\"at\":0} x", &f) == -1);
    CHECK(parse("[]", &f) == -1 && igw_presence_parse(NULL, 0, &f) == -1);
    char big[IGW_PRESENCE_PAYLOAD_MAX + 64];
    int n = snprintf(big, sizeof big, "{\"state\":\"online\",\"boot\":1,\"seq\":0,\"at\":0,\"pad\":\"%0*d\"}",
                     IGW_PRESENCE_PAYLOAD_MAX - 50, 0);
    CHECK(n > IGW_PRESENCE_PAYLOAD_MAX && igw_presence_parse(big, (size_t)n, &f) == -1);
}

/* The broker's topic carries boots only, a device's topic states only. */
static void test_presence_plan(void)
{
    igw_presence_plan p;
    igw_presence_fact boot = {.state = IGW_PRESENCE_BOOT, .boot = 2}, on = {.state = IGW_PRESENCE_ONLINE, .boot = 2},
                      off = {.state = IGW_PRESENCE_OFFLINE, .boot = 2};
    CHECK(igw_presence_plan_of("", "", &boot, &p) == 0 && !p.device && !p.end_legs);
    CHECK(igw_presence_plan_of("", "", &on, &p) == -1);
    CHECK(igw_presence_plan_of("P", "d1", &boot, &p) == -1);
    CHECK(igw_presence_plan_of("P", "", &on, &p) == -1 && igw_presence_plan_of("", "d1", &on, &p) == -1);
    CHECK(igw_presence_plan_of("P", "d1", &on, &p) == 0 && p.device && p.online && !p.end_legs);
    CHECK(igw_presence_plan_of("P", "d1", &off, &p) == 0 && p.device && !p.online && p.end_legs);
}

/* A boot is claimed once, by the first that sees it newer. */
static void test_boot_claim(void)
{
    _Atomic int64_t newest = 0;
    CHECK(igw_presence_boot_claim(&newest, 5) && newest == 5);
    CHECK(!igw_presence_boot_claim(&newest, 5) && newest == 5);
    CHECK(!igw_presence_boot_claim(&newest, 4) && newest == 5); /* an older broker process */
    CHECK(igw_presence_boot_claim(&newest, 6) && newest == 6);
}

/* A sweep starts when none runs; a running one takes the newer boot. */
static void test_sweep_begin(void)
{
    int64_t sweep = 0;
    CHECK(igw_presence_sweep_begin(&sweep, 5) && sweep == 5);
    CHECK(!igw_presence_sweep_begin(&sweep, 7) && sweep == 7);
}

/* Another batch at once when this one was full or a newer boot came. */
static void test_sweep_more(void)
{
    CHECK(igw_presence_sweep_more(1000, 1000, 5, 5));
    CHECK(!igw_presence_sweep_more(999, 1000, 5, 5));
    CHECK(!igw_presence_sweep_more(0, 1000, 5, 5));
    CHECK(igw_presence_sweep_more(0, 1000, 7, 5));
}

int main(void)
{
    static const check_case cases[] = {
        CHECK_CASE(test_name_copy),          CHECK_CASE(test_topic),
        CHECK_CASE(test_target_http_self),   CHECK_CASE(test_target_http_headers),
        CHECK_CASE(test_target_http_half),   CHECK_CASE(test_target_mqtt),
        CHECK_CASE(test_credentials),        CHECK_CASE(test_devauth_reasons),
        CHECK_CASE(test_actor),              CHECK_CASE(test_bound_http),
        CHECK_CASE(test_bound_mqtt),         CHECK_CASE(test_row_refusal),
        CHECK_CASE(test_reply_method),       CHECK_CASE(test_needs_model),
        CHECK_CASE(test_store_rows),         CHECK_CASE(test_store_not_gateway),
        CHECK_CASE(test_store_every_row),    CHECK_CASE(test_subdevice_refusal),
        CHECK_CASE(test_catalog_refusal),    CHECK_CASE(test_db_reason),
        CHECK_CASE(test_queue),              CHECK_CASE(test_queue_settle),
        CHECK_CASE(test_settled),            CHECK_CASE(test_batch_committed),
        CHECK_CASE(test_batch_value),        CHECK_CASE(test_batch_race),
        CHECK_CASE(test_recover_identity),   CHECK_CASE(test_recover_identity_limits),
        CHECK_CASE(test_log_due),            CHECK_CASE(test_presence_parse),
        CHECK_CASE(test_presence_parse_refused), CHECK_CASE(test_presence_plan),
        CHECK_CASE(test_boot_claim),         CHECK_CASE(test_sweep_begin),
        CHECK_CASE(test_sweep_more),
    };
    CHECK_RUN_ALL(cases);
    return check_summary("edge_decide_test");
}
