/*
 * flatjson.h - the little JSON igw-vcam's stdio signaling needs: one flat object per
 * line whose values we read are strings (SDP). Both directions are bounded
 * by the caller's buffer; nothing is allocated. (Named apart from src/rt/json.h,
 * the strict scanner the MQTT transport uses, so that both can be included.)
 */
#ifndef IGW_VCAM_FLATJSON_H
#define IGW_VCAM_FLATJSON_H

#include <stddef.h>

/* Appends the JSON string literal (quotes included) for the len bytes at s
 * to out, which holds used bytes of cap; keeps out NUL-terminated. Control
 * characters are escaped, bytes >= 0x80 pass through (UTF-8 stays UTF-8).
 * Returns the new length, or (size_t)-1 if it would not fit (out is then
 * left as it was). */
size_t igw_vcam_json_escape(char *out, size_t cap, size_t used, const char *s, size_t len);

/* Finds key among the members of the one JSON object in json[0..len) and
 * unescapes its string value into out (cap bytes, NUL-terminated). The object
 * must be flat: member values may be strings, numbers, true, false or null.
 * \uXXXX is accepted for U+0001..U+007F only (SDP is ASCII); a NUL or a raw
 * control character in a string is malformed. Returns the value's length,
 * -1 if the key is absent or its value is not a string, -2 if the text is not
 * such an object, the key appears twice, or the value does not fit. */
long igw_vcam_json_get_string(const char *json, size_t len, const char *key, char *out, size_t cap);

#endif
