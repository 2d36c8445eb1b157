/* multipart.h - streaming multipart/form-data parser (RFC 7578, RFC 2046).
 *
 * A push parser: the server feeds the body as it arrives, in chunks of any
 * size (one byte at a time gives the same callbacks, the data merely split
 * differently), and the parser calls back per part. It never allocates.
 *
 *   const char *why;
 *   char b[IGW_MULTIPART_BOUNDARY_MAX + 1];
 *   int blen = igw_multipart_boundary(ct, ctlen, b, sizeof b, &why);
 *   igw_multipart p;
 *   igw_multipart_init(&p, b, (size_t)blen, &callbacks, ctx);
 *   for each chunk: if (igw_multipart_feed(&p, buf, n)) -> 400, igw_multipart_error(&p)
 *   at the end:     if (igw_multipart_finish(&p))      -> 400, igw_multipart_error(&p)
 *
 * What is accepted (anything else is an error naming the reason):
 * - CRLF line endings only (a bare CR or LF in a header section is refused);
 * - preamble before the first delimiter and epilogue after the close
 *   delimiter are ignored; the first delimiter may open the body;
 * - after a delimiter, optional spaces/tabs (RFC 2046 transport padding),
 *   then CRLF or "--";
 * - "CRLF--boundary" followed by anything else inside a part is an error,
 *   not data: RFC 2046 forbids the delimiter inside the content, and a
 *   sender whose boundary collides must pick another;
 * - part headers: at most IGW_MULTIPART_HEADERS_MAX lines of at most
 *   IGW_MULTIPART_LINE_MAX bytes, "token: value", no obs-fold, no control
 *   bytes but HTAB (UTF-8 is allowed: browsers send raw UTF-8 filenames);
 * - exactly one Content-Disposition, type form-data, with a name parameter
 *   and optionally filename (token or quoted-string; quoted-pairs are
 *   unescaped). Other headers and parameters are ignored;
 * - filename* is refused: RFC 7578 4.2 says senders MUST NOT use it, and
 *   ignoring it would store the file under a name the sender did not mean;
 * - at most IGW_MULTIPART_PARTS_MAX parts. Zero parts is not an error here:
 *   the handler reports its missing required part, which says more. */
#ifndef IGW_MULTIPART_H
#define IGW_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#define IGW_MULTIPART_BOUNDARY_MAX 70 /* RFC 2046 */
#define IGW_MULTIPART_LINE_MAX 1024   /* bytes of one part header line, CRLF excluded */
#define IGW_MULTIPART_HEADERS_MAX 16  /* header lines per part */
#define IGW_MULTIPART_PARTS_MAX 64
#define IGW_MULTIPART_NAME_MAX 255    /* bytes of a decoded name or filename */

/* One part's Content-Disposition; NUL-terminated copies (a NUL inside is
 * impossible: control bytes are refused). */
typedef struct igw_multipart_part {
    char name[IGW_MULTIPART_NAME_MAX + 1];
    char filename[IGW_MULTIPART_NAME_MAX + 1];
    size_t name_len, filename_len;
    int has_filename; /* filename="" gives 1 with filename_len 0 */
    unsigned index;   /* 0-based position of the part in the body */
} igw_multipart_part;

/* Callbacks return 0 to go on, anything else to stop the parse: feed then
 * fails with "multipart: stopped by the handler" (the handler keeps its own
 * reason). Any callback may be NULL. */
typedef struct igw_multipart_callbacks {
    /* After a part's headers. *part is valid until part_end. */
    int (*part_begin)(void *ctx, const igw_multipart_part *part);
    /* A slice of the part's content, len > 0. Usually points into the fed
     * buffer (zero-copy); bytes that looked like the start of a delimiter
     * across a chunk edge come from the parser. Valid during the call. */
    int (*part_data)(void *ctx, const char *data, size_t len);
    /* The part's content is complete (its delimiter was seen and is valid). */
    int (*part_end)(void *ctx);
    /* The close delimiter was seen; the body is complete. Called once. */
    int (*done)(void *ctx);
} igw_multipart_callbacks;

/* The parser state. Plain data (no allocation); fields are private. */
typedef struct igw_multipart {
    const igw_multipart_callbacks *cb;
    void *ctx;
    char delim[4 + IGW_MULTIPART_BOUNDARY_MAX]; /* CRLF "--" boundary */
    size_t dlen;     /* bytes in delim */
    size_t matched;  /* bytes of delim matched at the end of the last chunk */
    int state;
    int in_part;     /* part_begin called, part_end not yet */
    int seen_delim;  /* a first delimiter was found */
    unsigned parts, headers;
    size_t pad;      /* transport padding bytes after the current delimiter */
    size_t line_len;
    char line[IGW_MULTIPART_LINE_MAX];
    int have_disp;
    igw_multipart_part part;
    const char *err;
    uint64_t offset; /* bytes consumed so far; at an error, where it was found */
} igw_multipart;

/* Extracts the boundary from a Content-Type value: media type
 * multipart/form-data (case-insensitive), parameters separated by ';' with
 * optional whitespace, exactly one boundary parameter (name
 * case-insensitive; token or quoted-string) of 1..70 RFC 2046 bchars not
 * ending in a space. Writes it NUL-terminated to out (cap >= 71 suffices).
 * Returns its length, or -1 with *err set to a reason. */
int igw_multipart_boundary(const char *ct, size_t len, char *out, size_t cap, const char **err);

/* Prepares p for a body with this boundary (1..70 bytes, as returned by
 * igw_multipart_boundary). cb must outlive p. Returns 0, or -1 (bad
 * boundary; p is then in the error state). */
int igw_multipart_init(igw_multipart *p, const char *boundary, size_t blen,
                       const igw_multipart_callbacks *cb, void *ctx);

/* Feeds the next len bytes of the body. Returns 0, or -1 once an error is
 * found (then and on every later call; see igw_multipart_error). Bytes
 * after the close delimiter are ignored. */
int igw_multipart_feed(igw_multipart *p, const void *buf, size_t len);

/* Ends the body. Returns 0 if the close delimiter was seen (done was
 * called), else -1 with the reason. */
int igw_multipart_finish(igw_multipart *p);

/* The reason of the first error ("multipart: ..."), or NULL if none. */
const char *igw_multipart_error(const igw_multipart *p);

#endif
