/* console.h - the browser console (console/README.md): setting
 * console_dir's files served read-only under /console/ as the transport's
 * directory of files (igw_http_files): GET|HEAD /console/ (index.html) and
 * /console/NAME, NAME a plain file name directly in the directory ([A-Za-z0-9_-]
 * then [A-Za-z0-9._-], no "..", at most 128 bytes: no dotfile, no
 * subdirectory, no escape, nothing percent-encoded), with the console's
 * media types, no-store and a same-origin Content-Security-Policy; every
 * answer counted and logged under the route "console" (docs/configuration.md,
 * "The browser console"). */
#ifndef IGW_OPS_CONSOLE_H
#define IGW_OPS_CONSOLE_H

#include <stddef.h>

#include "http/http.h"

typedef struct igw_console igw_console;

/* The console of the directory `dir` (console_dir): NULL with err when it
 * is not a directory, or out of memory. */
igw_console *igw_console_create(const char *dir, char *err, size_t errlen);
void igw_console_destroy(igw_console *c);

/* Its directory of files for igw_http_app.files; valid while c is. */
const igw_http_files *igw_console_files(const igw_console *c);

#endif
