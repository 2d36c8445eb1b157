/* storage.h - files under a storage root that nothing can lead outside of.
 *
 * igwd opens the root once (O_DIRECTORY) and passes its descriptor. Every
 * path is walked one component at a time with openat(O_NOFOLLOW): a symlink
 * planted anywhere below the root (intermediate directory or final name) is
 * never followed, and "..", ".", empty components and '/' are refused
 * before any system call. New directories get mode 0750, new files 0640
 * (less the umask); an existing file is never opened for writing.
 *
 * Errors are -1 with errno: EINVAL (bad component or path), ELOOP or
 * ENOTDIR (a symlink or non-directory on the way), EEXIST (every suffix
 * taken), ENAMETOOLONG (no room for a suffix), EISDIR / EPERM (read of a
 * directory / of a non-regular or multiply linked file), or what the system
 * call said. */
#ifndef IGW_STORAGE_H
#define IGW_STORAGE_H

#include <stddef.h>
#include <time.h>

#define IGW_STORAGE_NAME_MAX 255  /* bytes of one component */
#define IGW_STORAGE_DEPTH_MAX 16  /* components of a path, file included */
#define IGW_STORAGE_PATH_MAX 1024 /* bytes of a relative path */
#define IGW_STORAGE_TRIES 100     /* name, name-1 ... name-99 */

/* The directories of a device's upload: edge/{productID}/{deviceName}/{yymmdd}/{HHmmss}. */
typedef struct igw_storage_edge {
    char product[IGW_STORAGE_NAME_MAX + 1];
    char device[IGW_STORAGE_NAME_MAX + 1];
    char date[8]; /* yymmdd */
    char time[8]; /* HHmmss */
    const char *dirs[5]; /* "edge", product, device, date, time */
} igw_storage_edge;

/* 1 if s is a usable path component: 1..IGW_STORAGE_NAME_MAX bytes, not
 * "." or "..", no '/'. Callers' own rules (filename.h) come on top. */
int igw_storage_component_ok(const char *s);

/* Fills e for product/device (each must pass igw_storage_component_ok,
 * though they are validated identifiers already) at time t in UTC.
 * Returns 0 or -1 (EINVAL, or what gmtime_r said). */
int igw_storage_edge_dirs(igw_storage_edge *e, const char *product, const char *device, time_t t);

/* Creates dirs[0]/.../dirs[ndirs-1] below root_fd as needed and a new file
 * in it, O_CREAT|O_EXCL|O_NOFOLLOW, opened write-only (O_CLOEXEC). When
 * filename is taken (by anything, a dangling symlink included) tries
 * "stem-1.ext", "stem-2.ext"... where ext follows the last '.' (none if the
 * only '.' leads the name), up to IGW_STORAGE_TRIES names in all. On
 * success sets *fd and writes the final relative path ("a/b/name-1.ext")
 * NUL-terminated to relpath (cap >= IGW_STORAGE_PATH_MAX + 1 suffices).
 * Returns 0, or -1 with errno (*fd = -1, relpath emptied). */
int igw_storage_open(int root_fd, const char *const *dirs, size_t ndirs, const char *filename,
                     int *fd, char *relpath, size_t cap);

/* Opens relpath (components joined by single '/', no leading '/') below
 * root_fd read-only for serving. Refuses symlinks at every step, anything
 * but a regular file, and files with more than one link (a hard link
 * planted in the root may name a file outside it). Never blocks on a FIFO.
 * Returns 0 (*fd set) or -1 with errno (*fd = -1). */
int igw_storage_open_read(int root_fd, const char *relpath, int *fd);

/* Makes the creation of relpath durable: fsyncs the root and every
 * directory down to the file's (walked as above), so that after a crash
 * the new directories and the file's name exist (fsync the file itself
 * first). Returns 0 or -1 with errno. */
int igw_storage_sync_dirs(int root_fd, const char *relpath);

/* Removes the file relpath below root_fd (a failed upload's partial file),
 * walking the directories as above; directories are left. Returns 0 or -1. */
int igw_storage_remove(int root_fd, const char *relpath);

#endif
