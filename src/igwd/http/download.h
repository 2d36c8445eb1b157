/* download.h - GET|HEAD of a signed download URL (IGW_SIGNEDURL_PREFIX...),
 * served by the transport before the strict stage: not an API route (the
 * schema has none), the signature and its expiry are the authorization.
 * Part of http/: called by http.c on the worker's thread. */
#ifndef IGW_HTTP_DOWNLOAD_H
#define IGW_HTTP_DOWNLOAD_H

#include <stdbool.h>

#include "http/http.h"

/* True when `path` is under the download prefix (the request is then one). */
bool igw_http_download_match(igw_str path);

/* Answers the exchange: the file under `app->files_fd` named by a valid,
 * unexpired signature, else not_found (the same reply for every reason). */
void igw_http_download(igw_exchange *ex, const igw_http_app *app);

#endif
