/* model.h - the schema model: what the parser builds and every emitter reads.
 *
 * One igw_schema holds all declarations of all schema files, in declaration
 * order (emitters rely on that order for byte-identical output). The parser
 * fills it; sema.c resolves references and checks it; after sema every
 * igw_type of kind IGW_T_REF has `target` set, and every name lookup below
 * succeeds. Memory is owned by the schema's arena and never freed singly. */
#ifndef IGW_GEN_MODEL_H
#define IGW_GEN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IGW_SAFE_MAX INT64_C(9007199254740991)

/* Growable array of pointers; `v` holds `n` items. */
typedef struct igw_vec {
    void **v;
    int n, cap;
} igw_vec;
void igw_vec_push(igw_vec *vec, void *item);
#define IGW_VEC_AT(vec, T, i) ((T *)(vec).v[(i)])

typedef struct igw_loc {
    const char *file; /* path as given on the command line (relative) */
    int line, col;    /* 1-based */
} igw_loc;

/* ---- error classes ---------------------------------------------------- */

/* Roles: which built-in situation maps to the class (bit set). */
enum {
    IGW_ROLE_DECODE = 1 << 0,   /* strict decoder refused the body */
    IGW_ROLE_RESERVED = 1 << 1, /* field known but not open in this version */
    IGW_ROLE_BODY_CAP = 1 << 2, /* body larger than the route's cap */
    IGW_ROLE_NO_ROUTE = 1 << 3, /* unknown path */
    IGW_ROLE_METHOD = 1 << 4,   /* known path, wrong HTTP method */
    IGW_ROLE_MEDIA = 1 << 5,    /* wrong Content-Type */
    IGW_ROLE_INTERNAL = 1 << 6, /* unexpected internal failure */
    IGW_ROLE_OK = 1 << 7,       /* success */
    IGW_ROLE_GATE = 1 << 8      /* a gated route while its switch is off (Signaling) */
};

typedef struct igw_error {
    const char *name;   /* e.g. "parameter" */
    int64_t code;       /* envelope code */
    int http;           /* HTTP status */
    const char *reason; /* public reason string */
    unsigned roles;
    const char *doc;
    igw_loc loc;
    int index; /* position in schema->errors */
} igw_error;

/* ---- types -------------------------------------------------------------- */

typedef enum igw_typekind {
    IGW_T_STRING,
    IGW_T_INT,
    IGW_T_BOOL,
    IGW_T_ENUM,
    IGW_T_OBJECT,
    IGW_T_ARRAY,
    IGW_T_JSON, /* free JSON value, bounded */
    IGW_T_REF   /* reference to a named type; see `target` */
} igw_typekind;

typedef enum igw_format {
    IGW_FMT_NONE = 0,
    IGW_FMT_CANONICAL_ID, /* decimal 1..2^53-1: no sign, no leading zero, no space */
    IGW_FMT_BCP47,        /* language tag, RFC 5646 syntax */
    IGW_FMT_IDENTIFIER    /* printable, no wildcard (* ? % + #), no control
                             chars, no leading/trailing whitespace */
} igw_format;

typedef enum igw_jsonkind { IGW_JSON_OBJECT, IGW_JSON_ANY } igw_jsonkind;

typedef struct igw_type igw_type;
typedef struct igw_field igw_field;
typedef struct igw_cond igw_cond;

typedef enum igw_condop {
    IGW_C_EQ,      /* field = value (enum/bool/string literal) */
    IGW_C_NE,      /* field != value */
    IGW_C_IN,      /* field in (v, ...) */
    IGW_C_PRESENT, /* field present */
    IGW_C_AND,
    IGW_C_OR,
    IGW_C_NOT
} igw_condop;

struct igw_cond {
    igw_condop op;
    const char *field;   /* EQ NE IN PRESENT */
    igw_vec values;      /* const char*: EQ NE (1 item), IN */
    igw_cond *a, *b;     /* AND OR (a,b), NOT (a) */
    igw_field *fref;     /* resolved by sema */
    igw_loc loc;
};

typedef enum igw_rulekind {
    IGW_R_REQUIRE, /* fields must be present when cond holds */
    IGW_R_FORBID,  /* fields must be absent when cond holds */
    IGW_R_CHECK    /* lhs op rhs over integer fields, when all present */
} igw_rulekind;

typedef enum igw_cmp { IGW_CMP_LT, IGW_CMP_LE, IGW_CMP_GT, IGW_CMP_GE } igw_cmp;

/* An integer operand of a check: `a`, `a - b` (b non-NULL) or a constant. */
typedef struct igw_operand {
    const char *a, *b;
    igw_field *fa, *fb; /* resolved */
    bool is_const;
    bool time_unit;     /* the constant carried a time unit (parsed as ms) */
    int64_t value;      /* constant; sema converts it to the fields' unit */
} igw_operand;

typedef struct igw_rule {
    igw_rulekind kind;
    igw_vec fields;     /* const char*: REQUIRE/FORBID targets */
    igw_vec frefs;      /* igw_field*: resolved targets */
    igw_cond *when;     /* NULL: always */
    igw_operand lhs, rhs;
    igw_cmp cmp;
    const char *origin; /* "switch" when desugared from a switch case, else NULL */
    igw_loc loc;
} igw_rule;

/* One case of a discriminated field: `value: Type require x forbid y`. */
typedef struct igw_case {
    const char *value;
    igw_type *type;
    igw_vec require, forbid; /* const char* field names of the same object */
    igw_loc loc;
} igw_case;

typedef struct igw_switch {
    const char *on;        /* discriminator field name (an enum field) */
    igw_field *on_field;   /* resolved */
    igw_vec cases;         /* igw_case* */
} igw_switch;

struct igw_field {
    const char *name;
    igw_type *type;     /* NULL when sw is set */
    igw_switch *sw;     /* discriminated value */
    bool optional;
    bool reserved;      /* known, refused with the RESERVED role's class */
    const char *doc;
    igw_loc loc;
    int index;          /* position in its object */
};

struct igw_type {
    igw_typekind kind;
    const char *name; /* named types only; inline types have NULL */
    const char *doc;
    igw_loc loc;
    /* string */
    int64_t min_len, max_len; /* bytes */
    igw_format format;
    /* int */
    int64_t min, max;
    const char *unit; /* "ms", "s", "bytes" or NULL */
    /* enum */
    igw_vec values; /* const char* */
    /* array */
    igw_type *item;
    int64_t min_items, max_items;
    bool unique;
    /* json */
    igw_jsonkind json_kind;
    int64_t max_depth, max_bytes;
    /* object */
    igw_vec fields; /* igw_field* */
    igw_vec rules;  /* igw_rule*  (switch cases are desugared into rules) */
    /* ref */
    const char *ref;
    igw_type *target;
    /* analysis */
    bool synthesized; /* inline object given a name by the parser */
    bool used;
    int index; /* position among named types, -1 for inline */
};

/* Follows references to the defining type. */
igw_type *igw_type_resolve(igw_type *t);

/* ---- routes -------------------------------------------------------------- */

typedef enum igw_auth { IGW_AUTH_NONE, IGW_AUTH_DEVICE, IGW_AUTH_USER } igw_auth;
typedef enum igw_bodykind { IGW_BODY_NONE, IGW_BODY_JSON, IGW_BODY_MULTIPART } igw_bodykind;

typedef struct igw_part {
    const char *name;
    bool required;
    const char *doc;
} igw_part;

typedef struct igw_route {
    const char *name;   /* C identifier, e.g. "interaction_commands" */
    const char *method; /* "POST", "GET" */
    const char *path;   /* "/api/v1/things/device/edge/send/{handle}/{type}" */
    igw_vec params;     /* igw_field*: path parameters, in path order */
    igw_vec headers;    /* igw_field*: request headers the route reads (optional flag honoured) */
    igw_vec rules;      /* igw_rule*: require/forbid among the optional headers, on their presence */
    igw_auth auth;
    bool gate_signaling;
    igw_bodykind body;
    igw_type *body_type; /* JSON body */
    int64_t body_limit;  /* bytes */
    igw_vec parts;       /* igw_part*: multipart */
    const char *extra_parts; /* "ignore" or "reject" */
    igw_type *reply;     /* success data type, NULL = empty object */
    igw_vec errors;      /* const char* names, then resolved below */
    igw_vec error_refs;  /* igw_error* */
    const char *doc;
    igw_loc loc;
    int index;
    bool has_auth, has_reply, has_errors; /* each route states these explicitly */
    bool auth_subprotocol; /* `auth user subprotocol`: the token may also come as a WebSocket subprotocol */
    const char *handler;   /* `handler NAME`: the C function igwd binds it to; NULL: not implemented */
} igw_route;

/* ---- state machines ------------------------------------------------------ */

typedef struct igw_state {
    const char *name;
    bool terminal;
    igw_vec requires; /* const char*: data that must accompany entering it */
    const char *doc;
    igw_loc loc;
    int index;
} igw_state;

typedef struct igw_guard {
    const char *name;
    const char *doc;
    igw_loc loc;
    int index;
    bool used;
} igw_guard;

/* `on trigger: from, ... -> to [when guard] [also "..."];` or
 * `reject trigger: from, ... error class "reason";`. from index -1 = none. */
typedef struct igw_transition {
    const char *trigger;
    igw_vec from;        /* const char* names ("none" = creation, "*" = any non-terminal) */
    igw_vec from_idx;    /* resolved: (intptr_t) state index, -1 = none */
    const char *to;
    int to_idx;
    const char *guard;   /* NULL = unconditional */
    int guard_idx;       /* -1 */
    bool reject;
    const char *error;   /* reject: class name */
    igw_error *error_ref;
    const char *reason;  /* reject: reason; on: effect text ("also") */
    igw_loc loc;
} igw_transition;

typedef struct igw_machine {
    const char *name;
    const char *doc;
    igw_vec states;      /* igw_state* */
    igw_vec guards;      /* igw_guard* */
    igw_vec transitions; /* igw_transition* */
    igw_vec triggers;    /* const char*, derived in first-use order */
    const char *illegal; /* error class for an illegal trigger */
    igw_error *illegal_ref;
    igw_loc loc;
} igw_machine;

/* ---- tables -------------------------------------------------------------- */

typedef struct igw_column {
    const char *name;
    const char *sqltype;  /* text bigint integer boolean bytea jsonb timestamptz */
    bool nullable;
    const char *deflt;    /* raw SQL default or NULL; "now" means now() */
    bool identity;        /* `default identity`: GENERATED ALWAYS AS IDENTITY */
    const char *from_type, *from_field; /* derive CHECK from a field rule */
    igw_type *from;       /* resolved field type */
    const char *machine;  /* state column of a machine: CHECK IN (states) */
    igw_machine *machine_ref;
    const char *ref_table, *ref_column; /* foreign key */
    const char *doc;
    igw_loc loc;
} igw_column;

typedef struct igw_index {
    bool unique;
    bool primary;
    igw_vec columns; /* const char* */
    /* A partial index: only rows where column `where` IS NULL (IS NOT NULL
     * when where_not_null), or, with where_not_state, where the machine
     * column `where` is not in that state (`where state not ended`: the live
     * rows), or, with where_state, where it is in that state (`where state
     * = ringing`; a unique index may be partial this way only); NULL when
     * the index covers every row. */
    const char *where;
    bool where_not_null;
    const char *where_not_state;
    const char *where_state;
    igw_loc loc;
} igw_index;

/* `notify CHANNEL on (cols) ["doc"];`: every row inserted, deleted, or
 * updated in one of cols or the primary key sends pg_notify(CHANNEL, its
 * primary key values joined by '&'), for the old row and the new one. A
 * listener keeping a copy of the rows (a cache) learns which one to drop. */
typedef struct igw_notify {
    const char *channel;
    igw_vec columns; /* const char*: the watched columns besides the primary key */
    const char *doc;
    igw_loc loc;
} igw_notify;

typedef struct igw_table {
    const char *name;
    const char *doc;
    igw_vec columns; /* igw_column* */
    igw_vec indexes; /* igw_index*: primary key first if present */
    igw_vec notifies; /* igw_notify* */
    igw_loc loc;
} igw_table;

/* ---- events -------------------------------------------------------------- */

/* `event "interaction.result" ResultEvent "doc";`: an envelope the platform emits. */
typedef struct igw_event {
    const char *name; /* the envelope's method value */
    igw_type *type;
    const char *doc;
    igw_loc loc;
} igw_event;

/* ---- device protocols ----------------------------------------------------- */

/* The checks and returns a protocol row may name: a closed set, because the
 * handler implements each one (an enum in generated/api.h). */
#define IGW_PROTO_CHECKS "properties", "pack", "event", "action", "subdevices", "session", "recordings", "ring"
#define IGW_PROTO_RETURNS "properties", "config", "messages"

/* `HANDLE TYPE METHOD [-> REPLY] [check KIND] [returns WHAT] ["doc"];`
 * TYPE and METHOD may be `*` (any identifier). */
typedef struct igw_proto_row {
    const char *handle, *type, *method; /* "*" = any */
    const char *reply;                  /* NULL: no reply message */
    const char *check, *returns;        /* NULL: none */
    const char *answers;                /* the downlink method this uplink answers (a command's); NULL: none */
    igw_type *params;                   /* the shape of the message's params (an object type); NULL: free */
    igw_type *data;                     /* the reply's data (an object type its handler writes); NULL: none */
    const char *doc;
    igw_loc loc;
} igw_proto_row;

/* `down HANDLE TYPE METHOD message TYPE;`: a downlink the platform
 * publishes on $HANDLE/down/TYPE/{productID}/{deviceName}, its message an
 * object whose `method` is METHOD and whose `msgToken` the platform makes. */
typedef struct igw_proto_down {
    const char *handle, *type, *method;
    igw_type *message;
    const char *doc;
    igw_loc loc;
    int index; /* in its protocol's downs */
} igw_proto_down;

typedef struct igw_protocol {
    const char *name;
    const char *doc;
    igw_vec rows;  /* igw_proto_row* in declaration order */
    igw_vec downs; /* igw_proto_down* in declaration order */
    igw_loc loc;
} igw_protocol;

/* ---- method bindings ----------------------------------------------------- */

/* The traits a method binding may carry: a closed set, because the room
 * that walks the table implements each one (flags in generated/igwd/methods.h). */
#define IGW_METHOD_TRAITS "device", "session", "receipt", "reads", "retained"

/* `VALUE: handler NAME [TRAIT ...] ["doc"];` */
typedef struct igw_method_bind {
    const char *value;   /* a value of the block's enum */
    const char *handler; /* the C function that carries it out */
    igw_vec traits;      /* const char*: of IGW_METHOD_TRAITS */
    const char *downlink;             /* `downlink TYPE`: the message type of a protocol's downlink */
    const igw_proto_down *down;       /* resolved by sema */
    const struct igw_protocol *down_in; /* the protocol that declares it */
    const char *doc;
    igw_loc loc;
} igw_method_bind;

/* `methods ENUM ["doc"] { binding ... }`: who carries out each value of ENUM;
 * a value without a binding has none (its caller answers not_implemented). */
typedef struct igw_methods {
    const char *on;   /* the enum type's name */
    igw_type *enum_t; /* resolved by sema */
    const char *doc;
    igw_vec binds;    /* igw_method_bind* in declaration order */
    igw_loc loc;
} igw_methods;

/* ---- purposes ------------------------------------------------------------- */

/* Who may open a purpose, and how its camera leg is held: closed sets, the
 * session engine implements each (generated/igwd/purposes.h). */
#define IGW_PURPOSE_ACCESS "owner", "grant", "callMember"
#define IGW_PURPOSE_LEGS "shared", "own"
#define IGW_PURPOSE_DIRECTIONS "sendonly", "recvonly"

/* `track ID KIND DIRECTION CODEC [when GUARD]` */
typedef struct igw_purpose_track {
    const char *id, *kind, *direction, *codec;
    const char *when; /* a guard of the block, or NULL: always */
    igw_loc loc;
} igw_purpose_track;

/* `preflight FIELD [when GUARD]`: a bool field of the capability object. */
typedef struct igw_purpose_preflight {
    const char *field;
    const char *when;
    igw_field *fref; /* resolved by sema */
    igw_loc loc;
} igw_purpose_preflight;

/* `VALUE: hooks NAME leg shared|own access A... [machine M...] track... preflight...;` */
typedef struct igw_purpose_row {
    const char *value;
    const char *hooks;   /* the C object of its behaviour (struct igw_purpose_hooks) */
    const char *leg;     /* of IGW_PURPOSE_LEGS */
    const char *viewers; /* `viewers VALUE`: the purpose a subscribe's viewer of it has, or NULL */
    igw_vec access;      /* const char*: of IGW_PURPOSE_ACCESS */
    igw_vec machines;    /* const char*: machines it runs besides the session's */
    igw_vec tracks;      /* igw_purpose_track* */
    igw_vec preflights;  /* igw_purpose_preflight* */
    bool vision;         /* `vision`: its camera video is an AI's vision source (starts paused) */
    bool side;           /* `side`: the application's audio is a side conversation with a processor */
    igw_vec processors;  /* const char*: `processors P...`: values of the block's processor enum a session runs */
    const char *doc;
    igw_loc loc;
} igw_purpose_row;

/* `purposes ENUM capability TYPE ["doc"] { guard ...; row ... }`: each value
 * of ENUM once, as data the session engine walks. */
typedef struct igw_purposes {
    const char *on;          /* the enum type's name */
    igw_type *enum_t;        /* resolved */
    const char *capability;  /* the object whose bool fields preflights name */
    igw_type *cap_t;         /* resolved */
    const char *processor;   /* `processors ENUM`: the enum rows' `processors` name values of, or NULL */
    igw_type *proc_t;        /* resolved */
    const char *doc;
    igw_vec guards;          /* igw_guard* */
    igw_vec rows;            /* igw_purpose_row* */
    igw_loc loc;
} igw_purposes;

/* ---- the whole schema ---------------------------------------------------- */

typedef struct igw_schema {
    igw_vec files;    /* const char* input paths in order */
    igw_vec errors;   /* igw_error* */
    igw_vec types;    /* igw_type*: named types in declaration order */
    igw_vec routes;   /* igw_route* */
    igw_vec machines; /* igw_machine* */
    igw_vec tables;   /* igw_table* */
    igw_vec events;   /* igw_event* */
    igw_vec protocols; /* igw_protocol* */
    igw_vec methods;   /* igw_methods* */
    igw_vec purposes;  /* igw_purposes* (at most one block) */
} igw_schema;

igw_type *igw_schema_type(const igw_schema *s, const char *name);
igw_error *igw_schema_error(const igw_schema *s, const char *name);
/* The class carrying `role` (exactly one per role after sema). */
igw_error *igw_schema_error_role(const igw_schema *s, unsigned role);
igw_machine *igw_schema_machine(const igw_schema *s, const char *name);
igw_table *igw_schema_table(const igw_schema *s, const char *name);
igw_field *igw_object_field(const igw_type *obj, const char *name);

#endif
