/* storage.c - files under a storage root (see storage.h). */
#include "storage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_MODE 0750
#define FILE_MODE 0640
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

static int einval(void)
{
    errno = EINVAL;
    return -1;
}

/* close() that keeps errno (the error being reported is the earlier one). */
static void close_keep(int fd)
{
    int e = errno;
    (void)close(fd);
    errno = e;
}

static int component_ok(const char *s, size_t n)
{
    if (n == 0 || n > IGW_STORAGE_NAME_MAX || memchr(s, '/', n) || memchr(s, '\0', n))
        return 0;
    return !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

int igw_storage_component_ok(const char *s)
{
    return s && component_ok(s, strnlen(s, IGW_STORAGE_NAME_MAX + 1));
}

/* Three values 0..99 as six digits and a NUL. */
static void put6(char *out, int a, int b, int c)
{
    int v[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        out[2 * i] = (char)('0' + v[i] / 10 % 10);
        out[2 * i + 1] = (char)('0' + v[i] % 10);
    }
    out[6] = '\0';
}

int igw_storage_edge_dirs(igw_storage_edge *e, const char *product, const char *device, time_t t)
{
    memset(e, 0, sizeof *e);
    if (!igw_storage_component_ok(product) || !igw_storage_component_ok(device))
        return einval();
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return -1;
    if (tm.tm_year < -1900 || tm.tm_year > 9999 - 1900)
        return einval();
    strcpy(e->product, product); /* lengths checked above */
    strcpy(e->device, device);
    put6(e->date, (tm.tm_year + 1900) % 100, tm.tm_mon + 1, tm.tm_mday);
    put6(e->time, tm.tm_hour, tm.tm_min, tm.tm_sec);
    e->dirs[0] = "edge";
    e->dirs[1] = e->product;
    e->dirs[2] = e->device;
    e->dirs[3] = e->date;
    e->dirs[4] = e->time;
    return 0;
}

/* Opens (creating it first when create) the directory name below dir, never
 * through a symlink. Returns the descriptor or -1. */
static int step_dir(int dir, const char *name, int create)
{
    if (create && mkdirat(dir, name, DIR_MODE) != 0 && errno != EEXIST)
        return -1;
    /* An existing symlink makes mkdirat say EEXIST; O_NOFOLLOW catches it. */
    return openat(dir, name, DIR_FLAGS);
}

/* Walks the n components below root; returns a new descriptor of the last
 * (a dup of root when n == 0) or -1. */
static int walk(int root, const char *const *comp, size_t n, int create)
{
    int cur = fcntl(root, F_DUPFD_CLOEXEC, 0);
    for (size_t i = 0; i < n && cur >= 0; i++) {
        int next = step_dir(cur, comp[i], create);
        close_keep(cur);
        cur = next;
    }
    return cur;
}

/* "stem-k.ext" from name into out; 0 or -1 (ENAMETOOLONG). */
static int suffixed(const char *name, unsigned k, char *out, size_t cap)
{
    const char *dot = strrchr(name, '.');
    if (dot == name)
        dot = NULL; /* ".profile": all stem */
    size_t stem = dot ? (size_t)(dot - name) : strlen(name);
    int n = snprintf(out, cap, "%.*s-%u%s", (int)stem, name, k, dot ? dot : "");
    if (n < 0 || (size_t)n >= cap || (size_t)n > IGW_STORAGE_NAME_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int igw_storage_open(int root_fd, const char *const *dirs, size_t ndirs, const char *filename,
                     int *fd, char *relpath, size_t cap)
{
    if (fd)
        *fd = -1;
    if (relpath && cap)
        relpath[0] = '\0';
    if (!fd || !relpath || (!dirs && ndirs) || ndirs + 1 > IGW_STORAGE_DEPTH_MAX ||
        !igw_storage_component_ok(filename))
        return einval();
    /* The longest path this can return: dirs, the name and a suffix. */
    size_t plen = 0;
    for (size_t i = 0; i < ndirs; i++) {
        if (!igw_storage_component_ok(dirs[i]))
            return einval();
        plen += strlen(dirs[i]) + 1;
    }
    /* Room for the longest name this can return ("-99" added), checked
     * before anything is created. */
    size_t flen = strlen(filename);
    if (plen + flen + 3 > IGW_STORAGE_PATH_MAX || plen + flen + 3 + 1 > cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int dir = walk(root_fd, dirs, ndirs, 1);
    if (dir < 0)
        return -1;
    char name[IGW_STORAGE_NAME_MAX + 1];
    int f = -1;
    for (unsigned k = 0; k < IGW_STORAGE_TRIES; k++) {
        if (k == 0)
            memcpy(name, filename, flen + 1); /* checked: fits */
        else if (suffixed(filename, k, name, sizeof name))
            break;
        f = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                   FILE_MODE);
        if (f >= 0 || errno != EEXIST)
            break;
    }
    close_keep(dir);
    if (f < 0)
        return -1; /* errno: EEXIST when every name was taken */
    size_t o = 0;
    for (size_t i = 0; i < ndirs; i++) {
        size_t n = strlen(dirs[i]);
        memcpy(relpath + o, dirs[i], n);
        relpath[o + n] = '/';
        o += n + 1;
    }
    memcpy(relpath + o, name, strlen(name) + 1);
    *fd = f;
    return 0;
}

/* Splits relpath into components in buf (each NUL-terminated); returns
 * their number (>= 1) or -1. */
static int split(const char *relpath, char *buf, size_t cap, const char **comp)
{
    size_t len = relpath ? strnlen(relpath, IGW_STORAGE_PATH_MAX + 1) : 0;
    if (len == 0 || len > IGW_STORAGE_PATH_MAX || len + 1 > cap)
        return -1;
    memcpy(buf, relpath, len + 1);
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && buf[i] != '/')
            continue;
        if (n == IGW_STORAGE_DEPTH_MAX || !component_ok(buf + start, i - start))
            return -1;
        buf[i] = '\0';
        comp[n++] = buf + start;
        start = i + 1;
    }
    return n;
}

int igw_storage_open_read(int root_fd, const char *relpath, int *fd)
{
    if (fd)
        *fd = -1;
    char buf[IGW_STORAGE_PATH_MAX + 1];
    const char *comp[IGW_STORAGE_DEPTH_MAX];
    int n = split(relpath, buf, sizeof buf, comp);
    if (!fd || n < 1)
        return einval();
    int dir = walk(root_fd, comp, (size_t)n - 1, 0);
    if (dir < 0)
        return -1;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. It has
     * no effect on the regular files that get through. */
    int f = openat(dir, comp[n - 1], O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    close_keep(dir);
    if (f < 0)
        return -1;
    struct stat st;
    if (fstat(f, &st) != 0) {
        close_keep(f);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
        (void)close(f);
        errno = S_ISDIR(st.st_mode) ? EISDIR : EPERM;
        return -1;
    }
    *fd = f;
    return 0;
}

int igw_storage_remove(int root_fd, const char *relpath)
{
    char buf[IGW_STORAGE_PATH_MAX + 1];
    const char *comp[IGW_STORAGE_DEPTH_MAX];
    int n = split(relpath, buf, sizeof buf, comp);
    if (n < 1)
        return einval();
    int dir = walk(root_fd, comp, (size_t)n - 1, 0);
    if (dir < 0)
        return -1;
    int r = unlinkat(dir, comp[n - 1], 0);
    close_keep(dir);
    return r;
}

int igw_storage_sync_dirs(int root_fd, const char *relpath)
{
    char buf[IGW_STORAGE_PATH_MAX + 1];
    const char *comp[IGW_STORAGE_DEPTH_MAX];
    int n = split(relpath, buf, sizeof buf, comp);
    if (n < 1)
        return einval();
    /* The root's entry for the first directory, then each directory's
     * entry for the next, down to the file's own directory. */
    int cur = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
    for (int i = 0; cur >= 0; i++) {
        if (fsync(cur) != 0) {
            close_keep(cur);
            return -1;
        }
        if (i == n - 1)
            break;
        int next = step_dir(cur, comp[i], 0);
        close_keep(cur);
        cur = next;
    }
    if (cur < 0)
        return -1;
    close_keep(cur);
    return 0;
}
