/* upload.h - a multipart body streamed into one new file below the storage
 * root: both upload routes' (device.c's upload-file, interaction.c's
 * uploads). The body is parsed in slices straight into the file (no
 * second copy of the content), hashed on the way, then fsync'ed with its
 * new directory entries: the file is durable when igw_upload_store
 * returns 0, and removed when it fails. The part rules are the schema's
 * `part file` (decide.h: igw_routes_upload_part); an audio upload's type
 * is told by its first bytes (igw_routes_audio_type), never by its name.
 * On the exchange's worker. */
#ifndef IGW_ROUTES_UPLOAD_H
#define IGW_ROUTES_UPLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "http/http.h"
#include "routes/decide.h"
#include "storage.h"

#define IGW_UPLOAD_DIRS_MAX 6

typedef struct igw_upload {
    /* Set by the caller (igw_upload_init, then dirs and the options). */
    igw_exchange *ex;      /* held: its body is complete */
    int storage_fd;        /* the storage root */
    uint64_t max;          /* bytes of content at most: beyond, too_large */
    const char *dirs[IGW_UPLOAD_DIRS_MAX];
    size_t ndirs;          /* the file's directories below the root */
    const char *name;      /* the stored name; NULL: the part's filename (checked either way) */
    bool audio;            /* the content must be Ogg, WAV or MP3 (decide.h igw_routes_audio_type) */
    /* Results of igw_upload_store. */
    char relpath[IGW_STORAGE_PATH_MAX + 1];
    uint64_t size;
    char sha256_hex[65];
    int audio_type;        /* audio: an igw_AudioType */
    igw_routes_error err;  /* the first refusal or failure (cls IGW_ERR_OK: none) */
    /* Private. */
    int fd;
    bool in_file, have_file, typed;
    void *sha; /* EVP_MD_CTX */
    unsigned char head[IGW_ROUTES_AUDIO_HEAD];
    size_t headlen;
} igw_upload;

void igw_upload_init(igw_upload *u, igw_exchange *ex, int storage_fd, uint64_t max);

/* Parses the body (the content type's boundary) into the file: 0, stored
 * and durable; -1, u->err says why (415 for a body that is no multipart or
 * not the audio asked for, 413, 400, 500), and nothing is left on disk. */
int igw_upload_store(igw_upload *u);

/* Closes the file; removes it when remove_file (a row that could not be
 * written). The struct itself is the caller's. */
void igw_upload_release(igw_upload *u, bool remove_file);

#endif
