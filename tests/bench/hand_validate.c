/* hand_validate.c - see hand_validate.h.
 *
 * Written the way a careful developer would write it against jansson: small
 * getters that look a member up, check its type and bounds, and a function
 * per request type that lists its allowed keys and applies its rules. The
 * rules are those of the schema (schema/ directory); the comments name the schema type. */
#include "hand_validate.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define SAFE_MAX INT64_C(9007199254740991) /* 2^53 - 1 */

typedef struct ctx {
    hv_result *res;
} ctx;

static int fail(ctx *c, const char *key, const char *what)
{
    snprintf(c->res->err, sizeof c->res->err, "%s: %s", key, what);
    return -1;
}

/* ------------------------------------------------------------ formats */

/* Unicode White_Space: ASCII space and \t..\r, U+0085, U+00A0, U+1680,
 * U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF. */
static bool is_space(uint32_t cp)
{
    return cp == ' ' || (cp >= '\t' && cp <= '\r') || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

/* The code point starting at s (jansson has validated the UTF-8). */
static uint32_t utf8_at(const unsigned char *s)
{
    if (s[0] < 0x80)
        return s[0];
    if (s[0] < 0xE0)
        return (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    if (s[0] < 0xF0)
        return (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 | (uint32_t)(s[2] & 0x3F) << 6 |
           (s[3] & 0x3F);
}

/* No control character (C0, DEL, C1), none of * ? % + #, no leading or
 * trailing Unicode whitespace. */
static bool fmt_identifier(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (n == 0)
        return true;
    size_t last = n - 1;
    while (last > 0 && (s[last] & 0xC0) == 0x80)
        last--;
    if (is_space(utf8_at(s)) || is_space(utf8_at(s + last)))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = s[i];
        if (ch < 0x20 || ch == 0x7f || ch == '*' || ch == '?' || ch == '%' || ch == '+' || ch == '#')
            return false;
        if (ch == 0xC2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9F)
            return false;
    }
    return true;
}

/* Decimal 1..9007199254740991 without sign, leading zero or space. */
static bool fmt_canonical_id(const char *s, size_t n)
{
    static const char max[] = "9007199254740991";
    if (n == 0 || n > sizeof max - 1 || s[0] < '1' || s[0] > '9')
        return false;
    for (size_t i = 1; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return n < sizeof max - 1 || memcmp(s, max, n) <= 0;
}

static bool is_alpha(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }
static bool is_alnum(char ch) { return is_alpha(ch) || (ch >= '0' && ch <= '9'); }

/* BCP 47 syntax: ALPHA{2,8} ("-" ALNUM{1,8})*. */
static bool fmt_bcp47(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_alpha(s[i]))
        i++;
    if (i < 2 || i > 8)
        return false;
    while (i < n) {
        if (s[i++] != '-')
            return false;
        size_t run = 0;
        for (; i < n && is_alnum(s[i]); i++)
            run++;
        if (run < 1 || run > 8)
            return false;
    }
    return true;
}

enum fmt { F_NONE, F_IDENT, F_CANON, F_BCP47 };

/* ------------------------------------------------------------ getters
 * Each returns 1 when the member is present and valid, 0 when it is absent
 * and optional, -1 (with the error set) otherwise. */

static bool fmt_ok(const char *s, size_t n, enum fmt f)
{
    switch (f) {
    case F_IDENT: return fmt_identifier(s, n);
    case F_CANON: return fmt_canonical_id(s, n);
    case F_BCP47: return fmt_bcp47(s, n);
    default: return true;
    }
}

static bool check_string(const char *s, size_t n, size_t min, size_t max, enum fmt f)
{
    return n >= min && n <= max && fmt_ok(s, n, f);
}

static int get_string(ctx *c, json_t *obj, const char *key, bool required, size_t min, size_t max,
                      enum fmt f, const char **out, size_t *outlen)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return required ? fail(c, key, "required field is missing") : 0;
    if (!json_is_string(v))
        return fail(c, key, "expected a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n < min || n > max)
        return fail(c, key, "string length out of range");
    if (!fmt_ok(s, n, f))
        return fail(c, key, "string has a bad format");
    if (out != NULL)
        *out = s;
    if (outlen != NULL)
        *outlen = n;
    return 1;
}

/* Ident (1..64 bytes, identifier), the most common field type. */
static int get_ident(ctx *c, json_t *obj, const char *key, bool required)
{
    return get_string(c, obj, key, required, 1, 64, F_IDENT, NULL, NULL);
}

static int get_int(ctx *c, json_t *obj, const char *key, bool required, int64_t min, int64_t max,
                   int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return required ? fail(c, key, "required field is missing") : 0;
    if (!json_is_integer(v)) /* a real (1.0, 1e0) is not an integer */
        return fail(c, key, "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return fail(c, key, "integer out of range");
    if (out != NULL)
        *out = x;
    return 1;
}

static int get_bool(ctx *c, json_t *obj, const char *key, bool required)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return required ? fail(c, key, "required field is missing") : 0;
    if (!json_is_boolean(v))
        return fail(c, key, "expected a boolean");
    return 1;
}

/* *out receives the index of the value in the NULL-terminated `names`. */
static int get_enum(ctx *c, json_t *obj, const char *key, bool required, const char *const *names,
                    int *out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return required ? fail(c, key, "required field is missing") : 0;
    if (!json_is_string(v))
        return fail(c, key, "expected a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    for (int i = 0; names[i] != NULL; i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) {
            *out = i;
            return 1;
        }
    return fail(c, key, "not a value of the enumeration");
}

static int get_object(ctx *c, json_t *obj, const char *key, bool required, json_t **out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return required ? fail(c, key, "required field is missing") : 0;
    if (!json_is_object(v))
        return fail(c, key, "expected an object");
    *out = v;
    return 1;
}

/* Array of strings, `min`..`max` items, each min_len..max_len bytes of
 * format f, no item twice. */
static int get_string_set(ctx *c, json_t *obj, const char *key, bool required, size_t min, size_t max,
                          size_t min_len, size_t max_len, enum fmt f)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return required ? fail(c, key, "required field is missing") : 0;
    if (!json_is_array(v))
        return fail(c, key, "expected an array");
    size_t n = json_array_size(v);
    if (n < min || n > max)
        return fail(c, key, "item count out of range");
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        if (!json_is_string(item))
            return fail(c, key, "item is not a string");
        const char *s = json_string_value(item);
        size_t len = json_string_length(item);
        if (!check_string(s, len, min_len, max_len, f))
            return fail(c, key, "item has a bad length or format");
        for (size_t k = 0; k < i; k++) {
            json_t *prev = json_array_get(v, k);
            if (json_string_length(prev) == len && memcmp(json_string_value(prev), s, len) == 0)
                return fail(c, key, "duplicate item");
        }
    }
    return 1;
}

/* Strict free value: nesting at most max_depth levels (the value itself is
 * level 1), integers within the safe range. */
static int free_walk(ctx *c, const char *key, json_t *v, int depth, int max_depth)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (depth >= max_depth)
            return fail(c, key, "nesting too deep");
        const char *k;
        json_t *m;
        json_object_foreach(v, k, m) {
            (void)k;
            if (free_walk(c, key, m, depth + 1, max_depth) < 0)
                return -1;
        }
        return 0;
    }
    case JSON_ARRAY: {
        if (depth >= max_depth)
            return fail(c, key, "nesting too deep");
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) {
            if (free_walk(c, key, m, depth + 1, max_depth) < 0)
                return -1;
        }
        return 0;
    }
    case JSON_INTEGER: {
        json_int_t x = json_integer_value(v);
        if (x > SAFE_MAX || x < -SAFE_MAX)
            return fail(c, key, "integer beyond the safe range");
        return 0;
    }
    default:
        return 0;
    }
}

/* A free JSON field ("json object depth D size S"): an object when `object`
 * is set, else any value. The byte size is measured on the compact
 * re-serialization (jansson keeps no source offsets). */
static int get_free(ctx *c, json_t *obj, const char *key, bool required, bool object, int max_depth,
                    size_t max_bytes)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return required ? fail(c, key, "required field is missing") : 0;
    if (json_is_null(v)) /* the field's own null, even for "json any" */
        return fail(c, key, "null is not accepted");
    if (object && !json_is_object(v))
        return fail(c, key, "expected an object");
    if (free_walk(c, key, v, 0, max_depth) < 0)
        return -1;
    if (json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY) > max_bytes)
        return fail(c, key, "value larger than allowed");
    return 1;
}

/* Refuses any member not in the NULL-terminated `allowed`. */
static int only_keys(ctx *c, json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        (void)v;
        size_t i = 0;
        while (allowed[i] != NULL && strcmp(allowed[i], key) != 0)
            i++;
        if (allowed[i] == NULL)
            return fail(c, key, "unknown field");
        c->res->fields++;
    }
    return 0;
}

#define TRY(e)          \
    do {                \
        if ((e) < 0)    \
            return -1;  \
    } while (0)

/* ------------------------------------------------------- request types */

/* Target */
static int v_target(ctx *c, json_t *o)
{
    static const char *const keys[] = {"productID", "deviceName", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "productID", true));
    TRY(get_ident(c, o, "deviceName", true));
    return 0;
}

/* EventsRequest */
static int v_events(ctx *c, json_t *o)
{
    static const char *const keys[] = {"endpointId", "limit", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "endpointId", true));
    TRY(get_int(c, o, "limit", true, 1, 32, NULL));
    return 0;
}

/* AckRequest */
static int v_ack(ctx *c, json_t *o)
{
    static const char *const keys[] = {"endpointId", "deliveryIds", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "endpointId", true));
    TRY(get_string_set(c, o, "deliveryIds", true, 1, 32, 1, 64, F_IDENT));
    return 0;
}

/* RecordingsQuery */
static int v_recordings(ctx *c, json_t *o)
{
    static const char *const keys[] = {"endpointId", "target",    "cameraId", "startTimeMs",
                                       "endTimeMs",  "limit",     NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "endpointId", true));
    json_t *target;
    TRY(get_object(c, o, "target", true, &target));
    TRY(v_target(c, target));
    TRY(get_ident(c, o, "cameraId", true));
    int64_t start, end;
    TRY(get_int(c, o, "startTimeMs", true, 0, SAFE_MAX, &start));
    TRY(get_int(c, o, "endTimeMs", true, 0, SAFE_MAX, &end));
    TRY(get_int(c, o, "limit", true, 1, 32, NULL));
    if (!(start < end))
        return fail(c, "startTimeMs", "must be before endTimeMs");
    if (end - start > INT64_C(86400000))
        return fail(c, "endTimeMs", "window longer than 24 h");
    return 0;
}

/* AudioAccessRequest */
static int v_audio_access(ctx *c, json_t *o)
{
    static const char *const keys[] = {"operation", "callId", "targetUserID", "allowed",
                                       "expectedRevision", NULL};
    static const char *const ops[] = {"read", "set", NULL};
    TRY(only_keys(c, o, keys));
    int op;
    TRY(get_enum(c, o, "operation", true, ops, &op));
    TRY(get_string(c, o, "callId", true, 1, 96, F_IDENT, NULL, NULL));
    TRY(get_string(c, o, "targetUserID", true, 0, SIZE_MAX, F_CANON, NULL, NULL));
    int has_allowed = get_bool(c, o, "allowed", false);
    TRY(has_allowed);
    int has_rev = get_int(c, o, "expectedRevision", false, 1, SAFE_MAX, NULL);
    TRY(has_rev);
    if (op == 1) { /* set: exactly 5 fields */
        if (!has_allowed)
            return fail(c, "allowed", "required when operation = set");
        if (!has_rev)
            return fail(c, "expectedRevision", "required when operation = set");
    } else { /* read: exactly 3 fields */
        if (has_allowed)
            return fail(c, "allowed", "not allowed when operation = read");
        if (has_rev)
            return fail(c, "expectedRevision", "not allowed when operation = read");
    }
    return 0;
}

/* ConsentCreate */
static int v_consent_create(ctx *c, json_t *o)
{
    static const char *const keys[] = {"msgToken", "sourceSessionId",       "cameraId",
                                       "trackId",  "expectedMediaRevision", "expiresAt", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_string(c, o, "msgToken", true, 1, 128, F_IDENT, NULL, NULL));
    TRY(get_ident(c, o, "sourceSessionId", true));
    TRY(get_ident(c, o, "cameraId", true));
    TRY(get_ident(c, o, "trackId", true));
    TRY(get_int(c, o, "expectedMediaRevision", true, 1, SAFE_MAX, NULL));
    TRY(get_int(c, o, "expiresAt", true, 1, SAFE_MAX, NULL));
    return 0;
}

/* ConsentGetOne */
static int v_consent_get_one(ctx *c, json_t *o)
{
    static const char *const keys[] = {"consentId", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "consentId", true));
    return 0;
}

/* ConsentRevoke */
static int v_consent_revoke(ctx *c, json_t *o)
{
    static const char *const keys[] = {"consentId", "expectedRevision", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "consentId", true));
    TRY(get_int(c, o, "expectedRevision", true, 1, SAFE_MAX - 1, NULL));
    return 0;
}

/* Whether S (N bytes) is one of the NULL-terminated `names`. */
static bool one_of(const char *s, size_t n, const char *const *names)
{
    for (int i = 0; names[i] != NULL; i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
            return true;
    return false;
}

/* DeviceMessage */
static int v_device_message(ctx *c, json_t *o)
{
    static const char *const keys[] = {"method",   "msgToken", "timestamp", "params",
                                       "eventID",  "type",     "actionID",  "code",
                                       "msg",      "response", "data",      "sessionId", NULL};
    TRY(only_keys(c, o, keys));
    const char *method;
    size_t mlen;
    TRY(get_string(c, o, "method", true, 1, 64, F_IDENT, &method, &mlen));
    TRY(get_string(c, o, "msgToken", true, 1, 128, F_IDENT, NULL, NULL));
    TRY(get_int(c, o, "timestamp", false, 0, SAFE_MAX, NULL));
    TRY(get_free(c, o, "params", false, true, 8, 48 * 1024));
    int has_event = get_ident(c, o, "eventID", false);
    TRY(has_event);
    int has_type = get_ident(c, o, "type", false);
    TRY(has_type);
    int has_action = get_ident(c, o, "actionID", false);
    TRY(has_action);
    int has_code = get_int(c, o, "code", false, -SAFE_MAX, SAFE_MAX, NULL);
    TRY(has_code);
    TRY(get_string(c, o, "msg", false, 0, 1024, F_NONE, NULL, NULL));
    int has_response = get_free(c, o, "response", false, true, 8, 16 * 1024);
    TRY(has_response);
    TRY(get_free(c, o, "data", false, false, 8, 48 * 1024));
    int has_session = get_ident(c, o, "sessionId", false);
    TRY(has_session);
    bool event_post = mlen == 9 && memcmp(method, "eventPost", 9) == 0;
    if (event_post && !has_event)
        return fail(c, "eventID", "required when method = eventPost");
    if (event_post && !has_type)
        return fail(c, "type", "required when method = eventPost");
    if (!event_post && has_event)
        return fail(c, "eventID", "not allowed when method != eventPost");
    /* the media methods that name the platform's leg */
    static const char *const leg_methods[] = {"mediaOffer", "mediaState", "bye", "trackControlReply",
                                              "byeReply", "playbackControlReply", NULL};
    if (!has_session && one_of(method, mlen, leg_methods))
        return fail(c, "sessionId", "required for this method");
    static const char *const coded[] = {"actionReply", "controlReply", "getReportReply",
                                        "playbackControlReply", NULL};
    if (!has_code && one_of(method, mlen, coded))
        return fail(c, "code", "required for replies");
    bool action_reply = mlen == 11 && memcmp(method, "actionReply", 11) == 0;
    if (action_reply && !has_action)
        return fail(c, "actionID", "required when method = actionReply");
    if (!action_reply && has_response)
        return fail(c, "response", "not allowed when method != actionReply");
    return 0;
}

/* ---- command params, one function per method ---- */

/* OpenParams */
static int p_open(ctx *c, json_t *o)
{
    static const char *const keys[] = {"purpose", "cameraId", "callId",   "listenAudio",
                                       "recordingId", "clip", "callType", "sourceLanguage",
                                       "targetLanguage", NULL};
    static const char *const purposes[] = {"ipcLiveView", "ipcTalk", "recordPlayback", "doorbell", "aiVision", NULL};
    TRY(only_keys(c, o, keys));
    /* listed by the spec but not open in this version */
    if (json_object_get(o, "callType") != NULL)
        return fail(c, "callType", "not implemented");
    if (json_object_get(o, "sourceLanguage") != NULL)
        return fail(c, "sourceLanguage", "not implemented");
    if (json_object_get(o, "targetLanguage") != NULL)
        return fail(c, "targetLanguage", "not implemented");
    int purpose;
    TRY(get_enum(c, o, "purpose", true, purposes, &purpose));
    TRY(get_ident(c, o, "cameraId", true));
    int has_call = get_string(c, o, "callId", false, 1, 96, F_IDENT, NULL, NULL);
    TRY(has_call);
    int has_listen = get_bool(c, o, "listenAudio", false);
    TRY(has_listen);
    int has_rec = get_ident(c, o, "recordingId", false);
    TRY(has_rec);
    json_t *clip;
    int has_clip = get_object(c, o, "clip", false, &clip);
    TRY(has_clip);
    if (has_clip) {
        static const char *const clip_keys[] = {"startMs", "endMs", NULL};
        int64_t start, end;
        TRY(only_keys(c, clip, clip_keys));
        TRY(get_int(c, clip, "startMs", true, 0, SAFE_MAX, &start));
        TRY(get_int(c, clip, "endMs", true, 0, SAFE_MAX, &end));
        if (!(start < end))
            return fail(c, "startMs", "must be before endMs");
    }
    if (purpose == 1 && !has_call)
        return fail(c, "callId", "required when purpose = ipcTalk");
    if (purpose != 1 && has_call)
        return fail(c, "callId", "not allowed when purpose != ipcTalk");
    if (purpose != 0 && has_listen)
        return fail(c, "listenAudio", "not allowed when purpose != ipcLiveView");
    if (purpose == 2 && !has_rec)
        return fail(c, "recordingId", "required when purpose = recordPlayback");
    if (purpose != 2 && has_rec)
        return fail(c, "recordingId", "not allowed when purpose != recordPlayback");
    if (purpose != 2 && has_clip)
        return fail(c, "clip", "not allowed when purpose != recordPlayback");
    return 0;
}

/* EndParams */
static int p_end(ctx *c, json_t *o)
{
    static const char *const keys[] = {"reason", NULL};
    static const char *const reasons[] = {"userHangup", "userStopped", NULL};
    int r;
    TRY(only_keys(c, o, keys));
    TRY(get_enum(c, o, "reason", true, reasons, &r));
    return 0;
}

/* JoinParams */
static int p_join(ctx *c, json_t *o)
{
    static const char *const keys[] = {"participantId", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_string(c, o, "participantId", true, 0, SIZE_MAX, F_CANON, NULL, NULL));
    return 0;
}

/* LeaveParams */
static int p_leave(ctx *c, json_t *o)
{
    static const char *const keys[] = {"callId", "participantId", "expectedMemberEpoch", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_string(c, o, "callId", true, 1, 96, F_IDENT, NULL, NULL));
    TRY(get_string(c, o, "participantId", true, 0, SIZE_MAX, F_CANON, NULL, NULL));
    TRY(get_int(c, o, "expectedMemberEpoch", true, 1, SAFE_MAX, NULL));
    return 0;
}

/* SubscribeParams */
static int p_subscribe(ctx *c, json_t *o)
{
    static const char *const keys[] = {"trackId", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "trackId", true));
    return 0;
}

/* MediaOfferParams with its WebrtcOffer */
static int p_media_offer(ctx *c, json_t *o)
{
    static const char *const keys[] = {"mediaRevision", "webrtc", NULL};
    static const char *const offer_keys[] = {"iceMode", "sdp", NULL};
    static const char *const modes[] = {"full", "lite", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_int(c, o, "mediaRevision", true, 1, SAFE_MAX, NULL));
    json_t *offer;
    int mode;
    TRY(get_object(c, o, "webrtc", true, &offer));
    TRY(only_keys(c, offer, offer_keys));
    TRY(get_enum(c, offer, "iceMode", true, modes, &mode));
    TRY(get_string(c, offer, "sdp", true, 1, 49152, F_NONE, NULL, NULL));
    return 0;
}

/* MediaStateParams */
static int p_media_state(ctx *c, json_t *o)
{
    static const char *const keys[] = {"mediaRevision", "state", NULL};
    static const char *const states[] = {"connecting", "connected", "disconnected", "failed", "closed",
                                         NULL};
    int s;
    TRY(only_keys(c, o, keys));
    TRY(get_int(c, o, "mediaRevision", true, 1, SAFE_MAX, NULL));
    TRY(get_enum(c, o, "state", true, states, &s));
    return 0;
}

/* TrackControlParams */
static int p_track_control(ctx *c, json_t *o)
{
    static const char *const keys[] = {"trackId", "operation", "mediaRevision", NULL};
    static const char *const ops[] = {"subscribe", "unsubscribe", "pause", "resume", "publish", "stop",
                                      NULL};
    int op;
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "trackId", true));
    TRY(get_enum(c, o, "operation", true, ops, &op));
    TRY(get_int(c, o, "mediaRevision", true, 1, SAFE_MAX, NULL));
    return 0;
}

/* PlaybackControlParams */
static int p_playback_control(ctx *c, json_t *o)
{
    static const char *const keys[] = {"operation", "positionMs", "mediaRevision", NULL};
    static const char *const ops[] = {"play", "pause", "seek", NULL};
    int op;
    TRY(only_keys(c, o, keys));
    TRY(get_enum(c, o, "operation", true, ops, &op));
    int has_pos = get_int(c, o, "positionMs", false, 0, SAFE_MAX, NULL);
    TRY(has_pos);
    TRY(get_int(c, o, "mediaRevision", true, 1, SAFE_MAX, NULL));
    if (op == 2 && !has_pos)
        return fail(c, "positionMs", "required when operation = seek");
    if (op != 2 && has_pos)
        return fail(c, "positionMs", "not allowed when operation != seek");
    return 0;
}

/* ConfigureParams */
static int p_configure(ctx *c, json_t *o)
{
    static const char *const keys[] = {"sourceLanguage", "targetLanguage", "speakerId",
                                       "configRevision", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_string(c, o, "sourceLanguage", true, 2, 35, F_BCP47, NULL, NULL));
    TRY(get_string(c, o, "targetLanguage", true, 2, 35, F_BCP47, NULL, NULL));
    TRY(get_ident(c, o, "speakerId", true));
    TRY(get_int(c, o, "configRevision", true, 1, SAFE_MAX, NULL));
    return 0;
}

/* ProcessorControlParams */
static int p_processor_control(ctx *c, json_t *o)
{
    static const char *const keys[] = {"processorId", "processor",  "operation",
                                       "sourceTrackIds", "consentIds", "targetLanguage", NULL};
    static const char *const processors[] = {"translation", "aiAssist", NULL};
    static const char *const ops[] = {"attach", "detach", NULL};
    int processor, op;
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "processorId", true));
    TRY(get_enum(c, o, "processor", true, processors, &processor));
    TRY(get_enum(c, o, "operation", true, ops, &op));
    TRY(get_string_set(c, o, "sourceTrackIds", true, 1, 8, 1, 64, F_IDENT));
    int has_consents = get_string_set(c, o, "consentIds", false, 1, 8, 1, 64, F_IDENT);
    TRY(has_consents);
    int has_lang = get_string(c, o, "targetLanguage", false, 2, 35, F_BCP47, NULL, NULL);
    TRY(has_lang);
    bool attach = op == 0, translation = processor == 0;
    if (attach && !has_consents)
        return fail(c, "consentIds", "required when operation = attach");
    if (!attach && has_consents)
        return fail(c, "consentIds", "not allowed when operation = detach");
    if (attach && translation && !has_lang)
        return fail(c, "targetLanguage", "required for a translation attach");
    if ((!attach || !translation) && has_lang)
        return fail(c, "targetLanguage", "only for a translation attach");
    return 0;
}

/* ControlParams: args by operation (DecisionArgs, HandoverArgs, EndpointControlArgs) */
static int p_control(ctx *c, json_t *o)
{
    static const char *const keys[] = {"operation", "args", NULL};
    static const char *const ops[] = {"accept", "decline", "handover", "endpointControl", NULL};
    static const char *const decision[] = {"inviteToken", NULL};
    static const char *const handover[] = {"userId", "endpointId", NULL};
    static const char *const endpoint[] = {"transferFrom", NULL};
    int op;
    json_t *a = NULL;
    TRY(only_keys(c, o, keys));
    TRY(get_enum(c, o, "operation", true, ops, &op));
    int have = get_object(c, o, "args", true, &a);
    if (have < 0)
        return -1;
    if (!have)
        return 0;
    if (op <= 1) {
        TRY(only_keys(c, a, decision));
        TRY(get_ident(c, a, "inviteToken", true));
    } else if (op == 2) {
        TRY(only_keys(c, a, handover));
        int u = get_string(c, a, "userId", false, 0, SIZE_MAX, F_CANON, NULL, NULL);
        if (u < 0)
            return -1;
        int e = get_ident(c, a, "endpointId", false);
        if (e < 0)
            return -1;
        if (!u && !e)
            return fail(c, "userId", "required when endpointId is absent");
    } else {
        TRY(only_keys(c, a, endpoint));
        TRY(get_ident(c, a, "transferFrom", true));
    }
    return 0;
}

/* MessageSendParams */
static int p_message_send(ctx *c, json_t *o)
{
    static const char *const keys[] = {"deliveryId", "kind", "expiresAt", "contentRef", NULL};
    static const char *const kinds[] = {"broadcast", "voiceMessage", NULL};
    int kind;
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "deliveryId", true));
    TRY(get_enum(c, o, "kind", true, kinds, &kind));
    TRY(get_int(c, o, "expiresAt", true, 0, SAFE_MAX, NULL));
    TRY(get_ident(c, o, "contentRef", true));
    return 0;
}

/* DeviceActionParams */
static int p_device_action(ctx *c, json_t *o)
{
    static const char *const keys[] = {"actionID", "input", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "actionID", true));
    TRY(get_free(c, o, "input", true, true, 8, 16 * 1024));
    return 0;
}

/* PropertyControlParams */
static int p_property_control(ctx *c, json_t *o)
{
    static const char *const keys[] = {"properties", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_free(c, o, "properties", true, true, 8, 16 * 1024));
    return 0;
}

/* The command envelope: method selects the params and whether the command
 * addresses a device (target required, sessionId forbidden) or an existing
 * session (the reverse). */
static int v_command(ctx *c, json_t *o)
{
    static const char *const keys[] = {"msgToken", "method", "sessionId", "target", "params", NULL};
    static const char *const methods[] = {
        "interaction.open",        "interaction.end",          "interaction.join",
        "interaction.leave",       "interaction.subscribe",    "interaction.mediaOffer",
        "interaction.mediaState",  "interaction.trackControl", "interaction.configure",
        "interaction.processorControl", "interaction.control", "messageSend",
        "device.action",           "device.propertyControl",   "interaction.playbackControl",
        NULL};
    static int (*const params_of[])(ctx *, json_t *) = {
        p_open,        p_end,           p_join,      p_leave,        p_subscribe,
        p_media_offer, p_media_state,   p_track_control, p_configure, p_processor_control,
        p_control,     p_message_send,  p_device_action, p_property_control, p_playback_control};
    /* the methods that address a device: open, messageSend, device.action, device.propertyControl */
    static const bool device_directed[] = {true,  false, false, false, false, false, false, false,
                                           false, false, false, true,  true,  true,  false};
    _Static_assert(sizeof params_of / sizeof params_of[0] == sizeof methods / sizeof methods[0] - 1 &&
                       sizeof device_directed == sizeof methods / sizeof methods[0] - 1,
                   "one params function and one direction per method");
    TRY(only_keys(c, o, keys));
    TRY(get_string(c, o, "msgToken", true, 1, 128, F_IDENT, NULL, NULL));
    int method;
    TRY(get_enum(c, o, "method", true, methods, &method));
    int has_session = get_ident(c, o, "sessionId", false);
    TRY(has_session);
    json_t *target, *params;
    int has_target = get_object(c, o, "target", false, &target);
    TRY(has_target);
    if (has_target)
        TRY(v_target(c, target));
    TRY(get_object(c, o, "params", true, &params));
    bool to_device = device_directed[method];
    if (to_device && !has_target)
        return fail(c, "target", "required for this method");
    if (to_device && has_session)
        return fail(c, "sessionId", "not allowed for this method");
    if (!to_device && !has_session)
        return fail(c, "sessionId", "required for this method");
    if (!to_device && has_target)
        return fail(c, "target", "not allowed for this method");
    return params_of[method](c, params);
}

/* CommandsRequest */
static int v_commands(ctx *c, json_t *o)
{
    static const char *const keys[] = {"endpointId", "command", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "endpointId", true));
    json_t *command;
    TRY(get_object(c, o, "command", true, &command));
    return v_command(c, command);
}

/* ---- the stand-in IM's own routes (schema/standin.igw) ---- */

/* GroupCreate */
static int v_group_create(ctx *c, json_t *o)
{
    static const char *const keys[] = {"name", "members", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_string(c, o, "name", true, 1, 64, F_NONE, NULL, NULL));
    TRY(get_string_set(c, o, "members", true, 1, 255, 0, SIZE_MAX, F_CANON));
    return 0;
}

/* CallStart */
static int v_call_start(ctx *c, json_t *o)
{
    static const char *const keys[] = {"groupId", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_ident(c, o, "groupId", true));
    return 0;
}

/* CallRef (join, heartbeat, hangup, roster) */
static int v_call_ref(ctx *c, json_t *o)
{
    static const char *const keys[] = {"callId", NULL};
    TRY(only_keys(c, o, keys));
    TRY(get_string(c, o, "callId", true, 1, 96, F_IDENT, NULL, NULL));
    return 0;
}

/* ------------------------------------------------------------- routing */

typedef int (*validator)(ctx *, json_t *);

static const struct route {
    const char *path;
    size_t cap;
    validator fn;
} routes[] = {
    {"/api/v1/im/vision-consents/create", 4096, v_consent_create},
    {"/api/v1/im/vision-consents/get-one", 4096, v_consent_get_one},
    {"/api/v1/im/vision-consents/revoke", 4096, v_consent_revoke},
    {"/api/v1/im/interaction/events", 4096, v_events},
    {"/api/v1/im/interaction/events/ack", 8192, v_ack},
    {"/api/v1/im/interaction/commands", 65536, v_commands},
    {"/api/v1/im/interaction/recordings/query", 4096, v_recordings},
    {"/api/v1/im/interaction/talk/audio-access", 4096, v_audio_access},
    {"/api/v1/im-standin/groups/create", 8192, v_group_create},
    {"/api/v1/im-standin/calls/start", 1024, v_call_start},
    {"/api/v1/im-standin/calls/join", 1024, v_call_ref},
    {"/api/v1/im-standin/calls/heartbeat", 1024, v_call_ref},
    {"/api/v1/im-standin/calls/hangup", 1024, v_call_ref},
    {"/api/v1/im-standin/calls/roster", 1024, v_call_ref},
};
#define NROUTES (int)(sizeof routes / sizeof routes[0])
#define DEVICE_SEND NROUTES /* /api/v1/things/device/edge/send/{handle}/{type} */

static const char device_send_prefix[] = "/api/v1/things/device/edge/send/";

/* Route index of PATH, or -1; checks the device route's path parameters. */
static int route_of(ctx *c, const char *path, size_t plen)
{
    for (int i = 0; i < NROUTES; i++)
        if (strlen(routes[i].path) == plen && memcmp(routes[i].path, path, plen) == 0)
            return i;
    size_t pre = sizeof device_send_prefix - 1;
    if (plen > pre && memcmp(path, device_send_prefix, pre) == 0) {
        const char *handle = path + pre, *end = path + plen;
        const char *slash = memchr(handle, '/', (size_t)(end - handle));
        if (slash == NULL || slash == handle || slash + 1 == end ||
            memchr(slash + 1, '/', (size_t)(end - slash - 1)) != NULL)
            return fail(c, "path", "no such route");
        if (!check_string(handle, (size_t)(slash - handle), 1, 16, F_IDENT) ||
            !check_string(slash + 1, (size_t)(end - slash - 1), 1, 32, F_IDENT))
            return fail(c, "path", "invalid path parameter");
        return DEVICE_SEND;
    }
    return fail(c, "path", "no such route");
}

static const char *skip_ows(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    return s;
}

/* Content-Type application/json (any case), optional whitespace, then the
 * end or ';' parameters; a charset parameter, quoted or not, must be utf-8
 * (JSON is UTF-8 and is read as such: a client that says otherwise is
 * refused). A missing header is refused. */
static bool content_type_json(const char *ct, size_t ctlen)
{
    static const char json_type[] = "application/json";
    size_t jt = sizeof json_type - 1;
    if (ct == NULL || ctlen < jt || strncasecmp(ct, json_type, jt) != 0)
        return false;
    const char *s = skip_ows(ct + jt, ct + ctlen), *end = ct + ctlen;
    while (s < end) {
        if (*s != ';')
            return false;
        s = skip_ows(s + 1, end);
        const char *name = s;
        while (s < end && *s != '=' && *s != ';')
            s++;
        size_t nlen = (size_t)(s - name);
        while (nlen > 0 && (name[nlen - 1] == ' ' || name[nlen - 1] == '\t'))
            nlen--;
        if (s == end || *s == ';') /* a parameter without a value */
            continue;
        const char *val = ++s, *vend;
        if (s < end && *s == '"') {
            val = ++s;
            while (s < end && *s != '"')
                s++;
            vend = s;
            if (s < end)
                s++;
        } else {
            while (s < end && *s != ';' && *s != ' ' && *s != '\t')
                s++;
            vend = s;
        }
        s = skip_ows(s, end);
        if (nlen == 7 && strncasecmp(name, "charset", 7) == 0 &&
            !(vend - val == 5 && strncasecmp(val, "utf-8", 5) == 0))
            return false;
    }
    return true;
}

int hv_request(const char *method, size_t mlen, const char *path, size_t plen, const char *ct,
               size_t ctlen, const void *body, size_t len, hv_result *res)
{
    ctx c = {res};
    res->route = -1;
    res->fields = 0;
    res->err[0] = '\0';
    int r = route_of(&c, path, plen);
    if (r < 0)
        return -1;
    res->route = r;
    if (mlen != 4 || memcmp(method, "POST", 4) != 0)
        return fail(&c, "method", "method not allowed");
    size_t cap = r == DEVICE_SEND ? 65536 : routes[r].cap;
    if (len > cap)
        return fail(&c, "body", "body too large");
    if (!content_type_json(ct, ctlen))
        return fail(&c, "content-type", "expected application/json, UTF-8");

    /* without JSON_ALLOW_NUL jansson refuses "\u0000" in any string, as the
     * generated decoders do (nothing downstream can hold a NUL) */
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        snprintf(res->err, sizeof res->err, "body: %s", jerr.text);
        return -1;
    }
    int rc;
    if (!json_is_object(root))
        rc = fail(&c, "body", "expected an object");
    else if (r == DEVICE_SEND)
        rc = v_device_message(&c, root);
    else
        rc = routes[r].fn(&c, root);
    json_decref(root);
    return rc < 0 ? -1 : 0;
}
