/* field.h - the grammar of HTTP field values that more than one parser
 * reads (RFC 9110 §5.6): tokens, optional whitespace, and `; name=value`
 * parameters whose value is a token or a quoted-string. Used by the strict
 * stage (a media type's charset) and the multipart parser (Content-Type's
 * boundary, Content-Disposition's name and filename).
 *
 * Pure functions over [s, end): any thread, nothing allocated. */
#ifndef IGW_FIELD_H
#define IGW_FIELD_H

#include <stdbool.h>
#include <stddef.h>

/* tchar (RFC 9110 §5.6.2) and OWS's SP / HTAB. */
bool igw_field_tchar(unsigned char c);
bool igw_field_ows(char c);

/* The first byte at or after s that is not OWS / not a tchar (end if none). */
const char *igw_field_skip_ows(const char *s, const char *end);
const char *igw_field_skip_token(const char *s, const char *end);

/* s[0..n) equals the lower-case word w, ignoring ASCII case. */
bool igw_field_ieq(const char *s, size_t n, const char *w);

/* One parameter OWS ";" OWS name "=" value at *s. The value (token or
 * quoted-string, quoted-pairs unescaped) goes to val when it fits in vcap - 1
 * bytes (NUL added), else *vlen is set past vcap - 1 and val holds a prefix;
 * val may be NULL (vcap 0) to skip it. Returns 1 with a parameter (*s moved
 * past it), 0 at the end of the field value, -1 on malformed syntax (*s not
 * moved). */
int igw_field_param_next(const char **s, const char *end, const char **name, size_t *nlen, char *val, size_t vcap,
                         size_t *vlen);

#endif
