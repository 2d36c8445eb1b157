/* thingmodel.h - iThings-compatible thing model: load, look up, validate.
 *
 * A thing model is JSON {"properties":[...],"events":[...],"actions":[...]}
 * (see DESIGN.md, "Device credentials"). igw_thingmodel_load() parses and
 * checks one into arena-allocated structs; the check functions validate a
 * device report, an eventPost, or an action's input/output against it with
 * the strict pull scanner (no DOM). Every refusal records a kind, a specific
 * reason ("above maximum 100", "not a multiple of step 5", "unknown
 * property", "read-only property") and the JSON Pointer of the offending
 * value in the igw_json passed as `err`; values are never clamped.
 *
 * Decisions (where the iThings format leaves things open):
 *  - Model: min/max/step/max are accepted as JSON numbers or as strings
 *    holding a JSON number ("0", "-1.5", "1e3"); for int, an integer.
 *    Unknown keys (desc, required, isUseShadow, version, profile...) are
 *    validated as JSON and ignored. Identifiers are [A-Za-z0-9_]{1,64} and
 *    unique within their list (properties, events, actions, one param list,
 *    one struct's specs). "mode" absent means "r" (read-only); event "type"
 *    absent means "info". Defaults: int min/max = -/+(2^53-1), step 1;
 *    float min/max = -/+DBL_MAX, no step; string max 2048 bytes; array max
 *    1024 items. step <= 0 and min > max are refused. Define nesting
 *    (struct and array levels) is at most IGW_TM_MAX_NEST.
 *  - bool values: true/false and the integers 0/1 (iThings devices send 0/1).
 *  - float values: any finite JSON number; with a step, (v-min)/step must be
 *    within 1e-9 (or 1e-12 relative, for large quotients) of an integer.
 *  - Struct values in reports and events may be partial (missing specs are
 *    allowed); unknown keys are refused. Action input/output are strict:
 *    every declared parameter (and every spec of a struct inside) is required.
 *  - Report params and event params may be partial; action input must carry
 *    every declared input. Duplicate keys are refused everywhere.
 *  - enum values are integers that are mapping keys; timestamps are integer
 *    Unix milliseconds 0..2^53-1. */
#ifndef IGW_THINGMODEL_H
#define IGW_THINGMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "json.h"

#define IGW_TM_MAX_ID 64          /* identifier bytes */
#define IGW_TM_MAX_NEST 8         /* struct/array define nesting */
#define IGW_TM_MAX_PROPERTIES 256
#define IGW_TM_MAX_EVENTS 128
#define IGW_TM_MAX_ACTIONS 128
#define IGW_TM_MAX_PARAMS 64      /* per event/action param list, per struct */
#define IGW_TM_MAX_MAPPING 256    /* enum/bool mapping entries */
#define IGW_TM_MAX_ARRAY 65536    /* largest array "max" a model may declare */
#define IGW_TM_MAX_STRING 1048576 /* largest string "max" a model may declare */

typedef enum igw_tm_type {
    IGW_TM_BOOL,
    IGW_TM_INT,
    IGW_TM_FLOAT,
    IGW_TM_STRING,
    IGW_TM_ENUM,
    IGW_TM_TIMESTAMP,
    IGW_TM_STRUCT,
    IGW_TM_ARRAY
} igw_tm_type;

typedef struct igw_tm_define igw_tm_define;

/* A property, a struct spec, or an event/action parameter. */
typedef struct igw_tm_member {
    igw_str id;           /* NUL-terminated copy in the arena */
    igw_str name;
    bool writable;        /* properties: mode "rw"; false otherwise */
    uint32_t index;       /* position in the model's list (declaration order) */
    igw_tm_define *def;
} igw_tm_member;

/* A list of members sorted by id (binary search). */
typedef struct igw_tm_list {
    igw_tm_member *items;
    uint32_t n;
} igw_tm_list;

typedef struct igw_tm_mapping {
    int64_t key;          /* enum value / bool 0 or 1 */
    igw_str label;
} igw_tm_mapping;

struct igw_tm_define {
    igw_tm_type type;
    igw_str unit;
    /* int, timestamp */
    int64_t imin, imax, istep;
    /* float */
    double fmin, fmax, fstep; /* fstep 0: no step */
    /* bounds as written in the model, for messages (empty when defaulted) */
    igw_str min_text, max_text, step_text;
    /* string: byte length; array: item count */
    uint32_t max;
    /* enum, bool: sorted by key */
    igw_tm_mapping *mapping;
    uint32_t nmapping;
    /* struct */
    igw_tm_list specs;
    /* array */
    igw_tm_define *item;
};

typedef enum igw_tm_event_type { IGW_TM_EV_INFO, IGW_TM_EV_ALERT, IGW_TM_EV_FAULT } igw_tm_event_type;

typedef struct igw_tm_event {
    igw_str id, name;
    igw_tm_event_type type;
    uint32_t index;
    igw_tm_list params;
} igw_tm_event;

typedef struct igw_tm_action {
    igw_str id, name;
    uint32_t index;
    igw_tm_list input, output;
} igw_tm_action;

typedef struct igw_thingmodel {
    igw_tm_list properties;
    igw_tm_event *events;   /* sorted by id */
    uint32_t nevents;
    igw_tm_action *actions; /* sorted by id */
    uint32_t nactions;
} igw_thingmodel;

/* Parses and checks a model; everything lives in `a` (keep it as long as the
 * model). 0 with *out set, or -1 with err describing the first problem
 * (path into the model, e.g. "/properties/2/define/min"). */
int igw_thingmodel_load(const char *json, size_t len, igw_arena *a, igw_thingmodel **out,
                        igw_json *err);

/* Lookups by identifier; NULL when absent. */
const igw_tm_member *igw_thingmodel_property(const igw_thingmodel *m, const char *id, size_t len);
const igw_tm_event *igw_thingmodel_event(const igw_thingmodel *m, const char *id, size_t len);
const igw_tm_action *igw_thingmodel_action(const igw_thingmodel *m, const char *id, size_t len);
const igw_tm_member *igw_tm_list_find(const igw_tm_list *l, const char *id, size_t len);

/* Short name of a type ("int", "struct", ...). */
const char *igw_tm_type_name(igw_tm_type t);

#define IGW_TM_WRITABLE_ONLY 1 /* property control: every key must be mode "rw" */

/* The check functions validate one JSON object document (`json`, `len`).
 * `prefix` (may be NULL or "") is an already escaped JSON Pointer put in
 * front of every error path, e.g. "/params" gives "/params/brightness".
 * Dynamic reasons are allocated in `a`. 0 when valid, -1 with err set. */

/* A property report (or, with IGW_TM_WRITABLE_ONLY, a property control). */
int igw_thingmodel_check_properties(const igw_thingmodel *m, const char *json, size_t len,
                                    int flags, const char *prefix, igw_arena *a, igw_json *err);

/* eventPost: the event must exist; params by its param list (partial allowed).
 * An unknown event fails with kind IGW_JERR_UNKNOWN and the bare prefix path. */
int igw_thingmodel_check_event(const igw_thingmodel *m, const char *event_id, size_t id_len,
                               const char *json, size_t len, const char *prefix,
                               igw_arena *a, igw_json *err);

/* Action input (every declared input required) and output (likewise). */
int igw_thingmodel_check_action_input(const igw_thingmodel *m, const char *action_id,
                                      size_t id_len, const char *json, size_t len,
                                      const char *prefix, igw_arena *a, igw_json *err);
int igw_thingmodel_check_action_output(const igw_thingmodel *m, const char *action_id,
                                       size_t id_len, const char *json, size_t len,
                                       const char *prefix, igw_arena *a, igw_json *err);

#endif
