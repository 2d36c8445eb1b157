/* filename.h - acceptance rules for the names of uploaded files.
 *
 * A name is refused, never rewritten: the device learns why its upload
 * failed instead of finding its file under a name it did not choose, and
 * the stored name (and so filePath) is exactly the one sent.
 *
 * Refused (the reason says which rule):
 * - empty, longer than IGW_FILENAME_MAX bytes, not valid UTF-8 (overlong
 *   forms, surrogates, above U+10FFFF, truncated sequences);
 * - "." and "..";
 * - path separators '/' and '\';
 * - control characters: C0, DEL, C1 (U+0080..U+009F); and the invisible
 *   direction/format marks U+061C, U+200E, U+200F, U+202A..U+202E and
 *   U+2066..U+2069, which make "evil\u202Egpj.exe" display as "evilexe.jpg";
 * - the characters , ? * | { } $ ' " `;
 * - leading or trailing whitespace (ASCII space and the Unicode spaces
 *   U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F,
 *   U+3000, U+FEFF) or dot (".profile", "a.php." - Windows drops a trailing
 *   dot, which would turn the latter into a.php);
 * - a forbidden type: the last extension (after the last '.') compared
 *   ASCII case-insensitively with IGW_FILENAME_FORBIDDEN; a name that is
 *   only an extension (".htaccess") counts as that extension.
 * Not done: Unicode normalization, Windows device names (CON, NUL...);
 * files are stored on a POSIX file system and served by igwd only. */
#ifndef IGW_FILENAME_H
#define IGW_FILENAME_H

#include <stddef.h>

#define IGW_FILENAME_MAX 255 /* bytes; NAME_MAX of common file systems */

/* The forbidden extensions, lower case, NULL-terminated. */
extern const char *const IGW_FILENAME_FORBIDDEN[];

/* Checks name[0..len) (need not be NUL-terminated; a NUL inside is a
 * control character). Returns 0 if acceptable, else -1 with *err set to a
 * short reason ("filename: ..."); err may be NULL. */
int igw_filename_check(const char *name, size_t len, const char **err);

#endif
