/* proto.h - the walker of the generated device protocol tables
 * (generated/protocol.c holds only the rows): which method a device may
 * send on which handle and message type, the method of its reply, and what
 * the handler checks the message against.
 *
 * Pure functions over constant tables: any thread. `check`, `returns` and
 * the `*_id` members are values of the generated igw_proto_check,
 * igw_proto_returns, igw_proto_method and igw_proto_type
 * (generated/protocol.h), carried as int so the runtime needs no generated
 * header. */
#ifndef IGW_PROTO_H
#define IGW_PROTO_H

#include <stddef.h>

struct igw_json;
struct igw_jw;

/* The shape of a row's params: its type's strict decoder into a struct of
 * `size` bytes (generated/api.h); decode NULL: free parameters. */
typedef struct igw_proto_params {
    int (*decode)(struct igw_json *j, void *out);
    size_t size;
    const char *type; /* the schema's name of the type */
} igw_proto_params;

typedef struct igw_proto_row {
    const char *handle, *type, *method; /* "*": any identifier */
    int method_id, type_id;             /* igw_proto_method, igw_proto_type (__NONE for "*") */
    int reply_id;                       /* igw_proto_method of reply; __NONE: none */
    const char *reply;                  /* NULL: the device gets no reply message */
    const char *answers;                /* the downlink method (a command's) this uplink answers; NULL: none */
    int check;                          /* igw_proto_check */
    int returns;                        /* igw_proto_returns */
    igw_proto_params params;
} igw_proto_row;

/* A downlink the platform publishes on $<handle>/down/<type>/{productID}/
 * {deviceName}: its message a struct of the schema type `message`, whose
 * `method` field is `method`, written by `encode` (the type's generated
 * encoder). */
typedef struct igw_proto_down {
    const char *handle, *type, *method;
    int method_id, type_id; /* igw_proto_method, igw_proto_type */
    void (*encode)(struct igw_jw *w, const void *in);
    size_t size;         /* sizeof the message struct */
    const char *message; /* the schema's name of its type */
} igw_proto_down;

typedef struct igw_protocol {
    const char *name;
    const igw_proto_row *rows;
    size_t nrows;
    const igw_proto_down *downs;
    size_t ndowns;
} igw_protocol;

typedef enum igw_proto_status {
    IGW_PROTO_FOUND,
    IGW_PROTO_NO_HANDLE, /* no row has this handle */
    IGW_PROTO_NO_TYPE,   /* the handle has no row for this type */
    IGW_PROTO_NO_METHOD, /* the handle and type have no row for this method */
} igw_proto_status;

/* The row for (handle, type, method), lengths in bytes; one leading '$'
 * on the handle is ignored (MQTT topics carry it, HTTP paths may). A `*`
 * row matches any non-empty name. *row is set when FOUND. */
igw_proto_status igw_proto_find(const igw_protocol *p, const char *handle, size_t hlen, const char *type,
                                size_t tlen, const char *method, size_t mlen, const igw_proto_row **row);

/* A short reason for a status other than FOUND ("unknown handle", ...). */
const char *igw_proto_status_text(igw_proto_status st);

#endif
