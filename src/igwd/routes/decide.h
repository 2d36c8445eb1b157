/* decide.h - the routes' decisions as pure functions: how a request
 * reaches its handler, what a domain's result answers over HTTP (class,
 * reason, path: the status and code are the class's, api.h
 * igw_error_classes), and the translations of a decoded request into a
 * domain's input. No I/O and no exchange: the handlers (routes.c,
 * device.c, interaction.c, standin.c) call them, and
 * tests/igwd/routes_decide_test.c checks them, and that every answer is a
 * class the route's schema declares, without services. Any thread. */
#ifndef IGW_ROUTES_DECIDE_H
#define IGW_ROUTES_DECIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "arena.h"
#include "catalog/recordings.h"
#include "consent/ledger.h"
#include "edge/edge.h"
#include "event/outbox.h"
#include "multipart.h"
#include "request.h"

/* An error reply: its class (igw_err), a reason safe to send and the JSON
 * pointer (or part name) it is about ("" when none). Strings are static,
 * the domain result's, or in path_buf. */
typedef struct igw_routes_error {
    int cls;
    const char *reason, *path;
    char path_buf[48];
} igw_routes_error;

/* ---- dispatch (routes.c) ---- */

typedef enum igw_routes_way {
    IGW_ROUTES_DIRECT,   /* the handler (or not_implemented) at once: no user login */
    IGW_ROUTES_LOGIN,    /* the login first (Authorization), then the handler or not_implemented */
    IGW_ROUTES_LOGIN_WS, /* the same, the token also as the WebSocket subprotocol */
    IGW_ROUTES_NO_LOGIN  /* unavailable: the route needs a login and none is configured */
} igw_routes_way;

/* How a request that passed the strict stage reaches its handler: routes
 * with `auth user` get the login first, bound to a handler or not
 * (auth_subprotocol: the binding's), when login is configured. */
igw_routes_way igw_routes_decide_way(igw_auth_kind auth, bool auth_subprotocol, bool login_configured);

/* ---- results as replies ---- */

/* /endpoints/register's database error (err NULL: registered, false):
 * unavailable or internal by igw_db_error_class (a lost answer is harmless:
 * an endpoint created unseen expires unused). true with *e. */
bool igw_routes_register_error(const char *err, igw_routes_error *e);

/* /events (ack false) and /events/ack (ack true): an unknown or expired
 * endpoint is not_found at /endpointId; an ack refused for one id is
 * not_found at that /deliveryIds/<i>, one reason for every kind (the
 * caller learns nothing of others' deliveries); anything else is
 * unavailable, its cause logged. false when OK. */
bool igw_routes_outbox_error(const igw_outbox_result *r, bool ack, igw_routes_error *e);

/* The answer to a consent ledger's refusal (consent/ledger.h): true with
 * *e when r is one, false for OK. A failed read or revoke is unavailable
 * or internal, never the database's words. */
bool igw_routes_consent_error(const igw_consent_result *r, igw_routes_error *e);

/* /recordings/query: in the statement's order of checks, the endpoint
 * (not_found), the rights (permission at /target; an unknown device looks
 * the same), the camera (not_found at /cameraId), then the database
 * (by igw_db_error_class, never a write). false when OK. */
bool igw_routes_recordings_error(const igw_recordings_result *r, igw_routes_error *e);

/* A device route's uplink answered by the edge: false when r is a
 * success and, with need_reply, has its DeviceReply; else true. *e is
 * filled either way with what to answer when the exchange cannot go on:
 * r's refusal, or internal for a success (its reply missing, or the
 * exchange gone). */
bool igw_routes_uplink_error(const igw_edge_result *r, bool need_reply, igw_routes_error *e);

/* ---- the upload routes' multipart body (upload.c) ---- */

typedef enum igw_routes_part {
    IGW_ROUTES_PART_SKIP,   /* another part: ignored (the schema: others ignored) */
    IGW_ROUTES_PART_FILE,   /* the file: stored */
    IGW_ROUTES_PART_REFUSED /* *e: the file a second time, without a filename, or an unsafe one */
} igw_routes_part;

/* A part's headers, have_file: a part `file` came before. */
igw_routes_part igw_routes_upload_part(const igw_multipart_part *p, bool have_file, igw_routes_error *e);

/* The file's bytes so far against the cap: too_large at `file` beyond it. */
bool igw_routes_upload_too_large(uint64_t size, uint64_t max, igw_routes_error *e);

/* The body parsed (rc the parser's: 0 or not; mp_error its reason or
 * NULL): a body without the file, or one the parser refused, as a
 * parameter error. false when the file is there. Callers keep a refusal
 * their callbacks made before this one. */
bool igw_routes_upload_end_error(int rc, bool have_file, const char *mp_error, igw_routes_error *e);

/* The audio upload's type from the first IGW_ROUTES_AUDIO_HEAD bytes of
 * the file (a shorter file is no audio file): an igw_AudioType
 * (Ogg "OggS"; WAV "RIFF" size "WAVE"; MP3 an ID3v2 tag or an MPEG audio
 * layer III frame header), or -1 with *e (media_type at `file`) for
 * anything else. The name says nothing: it is never trusted. */
#define IGW_ROUTES_AUDIO_HEAD 12
int igw_routes_audio_type(const unsigned char *head, size_t len, igw_routes_error *e);

/* ---- requests into domain inputs ---- */

/* A canonical decimal id (the decoder's canonical_id: 1..2^53-1, digits
 * only) as a number, from its len bytes alone (s needs no NUL). */
int64_t igw_routes_id_of(igw_str s);

/* /recordings/query's body into the catalog's query (strings copied into
 * a, NUL-terminated): 0, or -1 when a is out of memory. */
int igw_routes_recordings_query(const igw_RecordingsQuery *rq, int64_t enterprise_id, int64_t user_id, igw_arena *a,
                                igw_recordings_query *q);

/* A new group's members (the decoder's canonical ids) as numbers into
 * out (IGW_GroupCreate_members_MAX_ITEMS): how many. */
uint32_t igw_routes_group_members(const igw_GroupCreate *rq, int64_t *out);

#endif
