/* accesslog.h - one JSON line per answered request, on stderr.
 *
 * {"ts","id","method","path","route","status","code","bytes_in",
 *  "bytes_out","duration_us"}; ts is RFC 3339 UTC with milliseconds.
 * Client-supplied text (method, path) is bounded to 1024 bytes and bytes
 * outside printable ASCII are percent-encoded, so a line is always valid
 * JSON. Each line is written with one write(2). */
#ifndef IGW_ACCESSLOG_H
#define IGW_ACCESSLOG_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "jw.h"

typedef struct igw_accesslog_entry {
    const char *id; /* request id, NUL-terminated */
    igw_str method, path;
    const char *route; /* route name, or "none" */
    int status;        /* HTTP status */
    int64_t code;      /* envelope code */
    size_t bytes_in, bytes_out;
    uint64_t duration_us;
} igw_accesslog_entry;

/* Writes the entry's line to the log's fd (core/log.h; fd 2), using `scratch` (reset first) as the
 * buffer. 0, or -1 when out of memory or the write failed. */
int igw_accesslog_write(igw_jw *scratch, const igw_accesslog_entry *e);

#endif
