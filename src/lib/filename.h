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
 * - control characters: C0, DEL, C1 (U+0080..U+009F);
 * - the invisible direction marks U+061C, U+200E, U+200F, U+202A..U+202E
 *   and U+2066..U+2069, which make "evil\u202Egpj.exe" display as
 *   "evilexe.jpg" ("invisible direction mark");
 * - the other characters that render as nothing ("invisible character"):
 *   Unicode's Default_Ignorable_Code_Point (zero-width space, joiner and
 *   non-joiner, word joiner, BOM, soft hyphen, Hangul fillers, tags...)
 *   and U+FFF9..U+FFFB, so "x.PHP\u200B" cannot pass for x.PHP. Variation
 *   selectors (U+FE00..U+FE0F...) stay allowed for emoji, and are skipped
 *   by the edge and extension rules below; a name of only those is refused;
 * - the characters , ? * | { } $ ' " `;
 * - leading or trailing whitespace (ASCII space and the Unicode spaces
 *   U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F,
 *   U+3000) or dot (".profile", "a.php." - Windows drops trailing dots and
 *   spaces, which would turn "a.php." and "a.php " into a.php; refused
 *   rather than stripped, like every rule here);
 * - a forbidden type: the last extension (after the last '.'), variation
 *   selectors skipped, compared ASCII case-insensitively with
 *   IGW_FILENAME_FORBIDDEN (server-executable, browser-active and web
 *   server configuration types; docs/decisions.md, issue 14); a name that
 *   is only an extension (".htaccess") counts as that extension. Only the
 *   last: "x.php.jpg" is a .jpg (igwd serves every file as an attachment,
 *   and no stock server runs it as PHP).
 * Not done: Unicode normalization, Windows device names (CON, NUL...),
 * whole names such as web.config or .user.ini; files are stored on a POSIX
 * file system and served by igwd only. */
#ifndef IGW_FILENAME_H
#define IGW_FILENAME_H

#include <stddef.h>

#define IGW_FILENAME_MAX 255 /* bytes; NAME_MAX of common file systems */

/* The forbidden extensions, lower case ASCII, NULL-terminated: the one
 * list (filename.c). */
extern const char *const IGW_FILENAME_FORBIDDEN[];

/* Checks name[0..len) (need not be NUL-terminated; a NUL inside is a
 * control character). Returns 0 if acceptable, else -1 with *err set to a
 * short reason ("filename: ..."); err may be NULL. */
int igw_filename_check(const char *name, size_t len, const char **err);

#endif
