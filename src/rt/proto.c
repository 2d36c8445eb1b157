/* proto.c - see proto.h. */
#include "proto.h"

#include <stdbool.h>
#include <string.h>

static bool name_is(const char *want, const char *p, size_t n)
{
    if (want[0] == '*' && want[1] == '\0')
        return n > 0;
    return strlen(want) == n && memcmp(want, p, n) == 0;
}

igw_proto_status igw_proto_find(const igw_protocol *p, const char *handle, size_t hlen, const char *type,
                                size_t tlen, const char *method, size_t mlen, const igw_proto_row **row)
{
    if (hlen && handle[0] == '$') {
        handle++;
        hlen--;
    }
    igw_proto_status best = IGW_PROTO_NO_HANDLE;
    for (size_t i = 0; i < p->nrows; i++) {
        const igw_proto_row *r = &p->rows[i];
        if (!hlen || !name_is(r->handle, handle, hlen))
            continue;
        if (!name_is(r->type, type, tlen)) {
            if (best < IGW_PROTO_NO_TYPE)
                best = IGW_PROTO_NO_TYPE;
            continue;
        }
        if (!name_is(r->method, method, mlen)) {
            best = IGW_PROTO_NO_METHOD;
            continue;
        }
        *row = r;
        return IGW_PROTO_FOUND;
    }
    return best;
}

const char *igw_proto_status_text(igw_proto_status st)
{
    switch (st) {
    case IGW_PROTO_FOUND:
        return "found";
    case IGW_PROTO_NO_HANDLE:
        return "unknown handle";
    case IGW_PROTO_NO_TYPE:
        return "unknown message type for this handle";
    case IGW_PROTO_NO_METHOD:
        return "unknown method for this handle and type";
    }
    return "unknown";
}
