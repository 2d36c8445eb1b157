/* download.h - GET|HEAD of a signed download URL (IGW_SIGNEDURL_PREFIX...):
 * a route of the transport (igw_http_route) outside the schema, answered
 * before the strict stage; the signature and its expiry are the
 * authorization. The file is streamed from the storage root. Any worker
 * thread. */
#ifndef IGW_OPS_DOWNLOAD_H
#define IGW_OPS_DOWNLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "http/http.h"

typedef struct igw_download igw_download;

/* Downloads of files under the directory `dir_fd` (-1: none) whose URLs
 * verify with `key` (NULL: none); neither is owned, both outlive it. NULL
 * when out of memory. */
igw_download *igw_download_create(int dir_fd, const unsigned char *key, size_t keylen);
void igw_download_destroy(igw_download *d);

/* The route (arg: the igw_download): every path under the download prefix
 * is its own. Another method than GET and HEAD is method_not_allowed; a
 * missing, invalid or expired signature, or a missing file, is not_found
 * (the same reply for every reason); else the file, as an attachment. */
bool igw_download_serve(void *d, igw_exchange *ex, unsigned slot);

#endif
