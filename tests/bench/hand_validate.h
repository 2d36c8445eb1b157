/* hand_validate.h - the igw request bodies validated by hand with jansson.
 *
 * The benchmark's third contender: what a developer would write without the
 * generator. json_loadb (JSON_REJECT_DUPLICATES catches duplicate keys at
 * every level), then one hand-written function per request type checking the
 * schema's rules on the DOM: required keys, no unknown keys, JSON types,
 * integer-ness and ranges, string byte lengths and formats, enums, the
 * conditional require/forbid rules, cross-field checks, unique arrays and
 * the depth / size / safe-integer bounds of free JSON fields.
 *
 * It covers every route with a JSON body: events, events/ack, commands (the
 * envelope and each method's params), recordings/query, talk/audio-access,
 * vision-consents create/get-one/revoke, device edge send and the stand-in
 * IM's groups/create and calls/start|join|heartbeat|hangup|roster. It does not
 * need to produce the generated decoder's exact error class or JSON Pointer. */
#ifndef IGW_BENCH_HAND_VALIDATE_H
#define IGW_BENCH_HAND_VALIDATE_H

#include <stddef.h>

typedef struct hv_result {
    int route;      /* index of the matched route, -1 when none */
    long fields;    /* object members checked; a checksum for the benchmark */
    char err[192];  /* why the request was refused */
} hv_result;

/* Routes METHOD PATH, checks the content type (application/json, charset
 * utf-8 when given; refused when ct is NULL: no header) and the body cap,
 * parses the body with jansson and validates it. The parsed document is
 * released before returning. 0 when accepted, -1 with res->err. */
int hv_request(const char *method, size_t mlen, const char *path, size_t plen, const char *ct,
               size_t ctlen, const void *body, size_t len, hv_result *res);

#endif
