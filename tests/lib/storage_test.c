/* storage_test.c - unit tests of storage under a root (storage.c).
 *
 * Works in a fresh mkdtemp directory: root/ is the storage root, outside/
 * a sibling that symlinks planted in the root point at; nothing may ever
 * appear in or change under outside/. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage.h"

#include "../check.h"

static char base[64], rootp[128], outp[128];
static int root;

static void die(const char *what)
{
    perror(what);
    exit(2);
}

static void sh(const char *fmt, const char *arg)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, fmt, arg);
    if (system(cmd) != 0)
        die(cmd);
}

/* Number of entries in outside/ (recursively), to prove nothing landed there. */
static int outside_entries(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "find %s -mindepth 1 | wc -l", outp);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (!f || fscanf(f, "%d", &n) != 1)
        die("find");
    pclose(f);
    return n;
}

static int write_all(int fd, const char *s)
{
    size_t n = strlen(s);
    return write(fd, s, n) == (ssize_t)n ? 0 : -1;
}

/* Contents of root/rel (plain path, for checking only). */
static int file_is(const char *rel, const char *want)
{
    char p[512], buf[256];
    snprintf(p, sizeof p, "%s/%s", rootp, rel);
    FILE *f = fopen(p, "rb");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, want) == 0;
}

static int mode_of(const char *rel)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", rootp, rel);
    if (lstat(p, &st) != 0)
        return -1;
    return (int)(st.st_mode & 07777);
}

/* Opens a new file and writes s into it; returns the relative path's errno-ish verdict. */
static int store(const char *const *dirs, size_t n, const char *name, const char *s, char *rel, size_t cap)
{
    int fd;
    if (igw_storage_open(root, dirs, n, name, &fd, rel, cap) != 0) {
        if (fd != -1 || rel[0] != '\0')
            return -1000;
        return -errno;
    }
    int r = write_all(fd, s);
    if (close(fd) != 0 || r != 0)
        return -1001;
    return 0;
}

static void test_edge_dirs(void)
{
    igw_storage_edge e;
    CHECK(igw_storage_edge_dirs(&e, "prod1", "cam-01", 1767225600) == 0); /* 2026-01-01T00:00:00Z */
    CHECK(strcmp(e.dirs[0], "edge") == 0 && strcmp(e.dirs[1], "prod1") == 0 &&
          strcmp(e.dirs[2], "cam-01") == 0 && strcmp(e.dirs[3], "260101") == 0 &&
          strcmp(e.dirs[4], "000000") == 0);
    CHECK(igw_storage_edge_dirs(&e, "p", "d", 1735689599) == 0); /* 2024-12-31T23:59:59Z */
    CHECK(strcmp(e.dirs[3], "241231") == 0 && strcmp(e.dirs[4], "235959") == 0);
    CHECK(igw_storage_edge_dirs(&e, "p", "d", 0) == 0);
    CHECK(strcmp(e.dirs[3], "700101") == 0 && strcmp(e.dirs[4], "000000") == 0);
    CHECK(igw_storage_edge_dirs(&e, "p", "d", 951827696) == 0); /* 2000-02-29T12:34:56Z */
    CHECK(strcmp(e.dirs[3], "000229") == 0 && strcmp(e.dirs[4], "123456") == 0);
    /* UTC whatever TZ says */
    setenv("TZ", "Asia/Tokyo", 1);
    CHECK(igw_storage_edge_dirs(&e, "p", "d", 1767225600) == 0 && strcmp(e.dirs[3], "260101") == 0 &&
          strcmp(e.dirs[4], "000000") == 0);
    unsetenv("TZ");
    /* defence in depth on the identifiers */
    static const char *bad[] = {"", ".", "..", "a/b", "/", "../x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        CHECK(igw_storage_edge_dirs(&e, bad[i], "d", 0) == -1 && errno == EINVAL && e.dirs[0] == NULL);
        CHECK(igw_storage_edge_dirs(&e, "p", bad[i], 0) == -1 && errno == EINVAL);
    }
    CHECK(igw_storage_edge_dirs(&e, NULL, "d", 0) == -1);
    char big[300];
    memset(big, 'a', sizeof big);
    big[255] = '\0';
    CHECK(igw_storage_edge_dirs(&e, big, "d", 0) == 0);
    big[255] = 'a';
    big[256] = '\0';
    CHECK(igw_storage_edge_dirs(&e, big, "d", 0) == -1 && errno == EINVAL);
    CHECK(igw_storage_edge_dirs(&e, "..a", "a..", 0) == 0);
    /* years past 9999 */
    if (sizeof(time_t) == 8)
        CHECK(igw_storage_edge_dirs(&e, "p", "d", (time_t)253402300800LL) == -1); /* 10000-01-01 */
}

static void test_create(void)
{
    igw_storage_edge e;
    char rel[IGW_STORAGE_PATH_MAX + 1];
    CHECK(igw_storage_edge_dirs(&e, "prod1", "cam-01", 1767225600) == 0);
    CHECK(store(e.dirs, 5, "a.txt", "first", rel, sizeof rel) == 0);
    CHECK(strcmp(rel, "edge/prod1/cam-01/260101/000000/a.txt") == 0);
    CHECK(file_is(rel, "first"));
    CHECK(mode_of("edge") == 0750 && mode_of("edge/prod1/cam-01/260101/000000") == 0750);
    CHECK(mode_of(rel) == 0640);

    /* never overwriting: suffixes before the extension */
    CHECK(store(e.dirs, 5, "a.txt", "second", rel, sizeof rel) == 0);
    CHECK(strcmp(rel, "edge/prod1/cam-01/260101/000000/a-1.txt") == 0 && file_is(rel, "second"));
    CHECK(store(e.dirs, 5, "a.txt", "third", rel, sizeof rel) == 0);
    CHECK(strcmp(rel, "edge/prod1/cam-01/260101/000000/a-2.txt") == 0 && file_is(rel, "third"));
    CHECK(file_is("edge/prod1/cam-01/260101/000000/a.txt", "first"));
    CHECK(file_is("edge/prod1/cam-01/260101/000000/a-1.txt", "second"));
    /* a name that is taken by a directory also moves on */
    static const char *d1[] = {"d1"};
    CHECK(store(d1, 1, "sub", "x", rel, sizeof rel) == 0 && strcmp(rel, "d1/sub") == 0);
    CHECK(mkdirat(root, "d1/taken.dat", 0700) == 0);
    CHECK(store(d1, 1, "taken.dat", "x", rel, sizeof rel) == 0 && strcmp(rel, "d1/taken-1.dat") == 0);
    /* names without extension, several dots, a leading dot */
    CHECK(store(d1, 1, "README", "1", rel, sizeof rel) == 0 && strcmp(rel, "d1/README") == 0);
    CHECK(store(d1, 1, "README", "2", rel, sizeof rel) == 0 && strcmp(rel, "d1/README-1") == 0);
    CHECK(store(d1, 1, "a.tar.gz", "1", rel, sizeof rel) == 0 && strcmp(rel, "d1/a.tar.gz") == 0);
    CHECK(store(d1, 1, "a.tar.gz", "2", rel, sizeof rel) == 0 && strcmp(rel, "d1/a.tar-1.gz") == 0);
    CHECK(store(d1, 1, ".cfg", "1", rel, sizeof rel) == 0 && strcmp(rel, "d1/.cfg") == 0);
    CHECK(store(d1, 1, ".cfg", "2", rel, sizeof rel) == 0 && strcmp(rel, "d1/.cfg-1") == 0);
    /* no directories at all */
    CHECK(store(NULL, 0, "top.txt", "t", rel, sizeof rel) == 0 && strcmp(rel, "top.txt") == 0);

    /* bounded: the name and 99 suffixes, then EEXIST */
    static const char *d2[] = {"d2"};
    int ok = 1;
    for (int i = 0; i < IGW_STORAGE_TRIES; i++) {
        char want[32];
        snprintf(want, sizeof want, i ? "d2/x-%d.bin" : "d2/x.bin", i);
        ok &= store(d2, 1, "x.bin", "x", rel, sizeof rel) == 0 && strcmp(rel, want) == 0;
    }
    CHECK(ok);
    CHECK(store(d2, 1, "x.bin", "x", rel, sizeof rel) == -EEXIST);
    /* no room for a suffix in a 255-byte name */
    char longn[256];
    memset(longn, 'n', 255);
    longn[255] = '\0';
    CHECK(store(d2, 1, longn, "x", rel, sizeof rel) == 0);
    CHECK(store(d2, 1, longn, "x", rel, sizeof rel) == -ENAMETOOLONG);
    /* a relpath buffer too small: refused before anything is created */
    CHECK(store(d2, 1, "small.txt", "x", rel, 14) == -ENAMETOOLONG);
    CHECK(faccessat(root, "d2/small.txt", F_OK, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT);
    CHECK(store(d2, 1, "small.txt", "x", rel, 16) == 0 && strcmp(rel, "d2/small.txt") == 0);

    /* refused components, before any system call */
    static const char *bad[] = {"", ".", "..", "a/b", "/", "../x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *dirs[] = {"d3", bad[i], "x"};
        CHECK(store(dirs, 3, "f", "x", rel, sizeof rel) == -EINVAL);
        CHECK(store(d1, 1, bad[i], "x", rel, sizeof rel) == -EINVAL);
    }
    CHECK(faccessat(root, "d3", F_OK, AT_SYMLINK_NOFOLLOW) != 0); /* "d3" was never made */
    CHECK(store(d1, 1, NULL, "x", rel, sizeof rel) == -EINVAL);
    const char *deep[IGW_STORAGE_DEPTH_MAX] = {0};
    for (int i = 0; i < IGW_STORAGE_DEPTH_MAX; i++)
        deep[i] = "z";
    CHECK(store(deep, IGW_STORAGE_DEPTH_MAX, "f", "x", rel, sizeof rel) == -EINVAL);
    CHECK(store(deep, IGW_STORAGE_DEPTH_MAX - 1, "f", "x", rel, sizeof rel) == 0);
    /* a regular file where a directory should be */
    const char *through_file[] = {"d1", "README", "x"};
    CHECK(store(through_file, 3, "f", "x", rel, sizeof rel) == -ENOTDIR);
    int fd = 7;
    CHECK(igw_storage_open(root, d1, 1, "f", NULL, rel, sizeof rel) == -1 && errno == EINVAL);
    CHECK(igw_storage_open(root, d1, 1, "f", &fd, NULL, 0) == -1 && fd == -1);
}

static void test_symlinks(void)
{
    char rel[IGW_STORAGE_PATH_MAX + 1], target[256];
    int before = outside_entries();

    /* at an intermediate directory (made before us, or between mkdirat and openat) */
    CHECK(mkdirat(root, "s", 0750) == 0);
    CHECK(symlinkat(outp, root, "s/evil") == 0);
    const char *via_link[] = {"s", "evil", "x"};
    int r = store(via_link, 3, "f.txt", "pwned", rel, sizeof rel);
    CHECK(r == -ELOOP || r == -ENOTDIR);
    const char *via_link2[] = {"s", "evil"};
    r = store(via_link2, 2, "f.txt", "pwned", rel, sizeof rel);
    CHECK(r == -ELOOP || r == -ENOTDIR);
    /* at the top level, and a relative link climbing out */
    CHECK(symlinkat("../outside", root, "top") == 0);
    const char *top[] = {"top"};
    r = store(top, 1, "f.txt", "pwned", rel, sizeof rel);
    CHECK(r == -ELOOP || r == -ENOTDIR);
    /* a link to a directory inside the root is not followed either */
    CHECK(symlinkat("s", root, "alias") == 0);
    const char *alias[] = {"alias"};
    r = store(alias, 1, "f.txt", "x", rel, sizeof rel);
    CHECK(r == -ELOOP || r == -ENOTDIR);

    /* at the final name: an existing target is not written, the name moves on */
    snprintf(target, sizeof target, "%s/victim", outp);
    sh("printf original > %s", target);
    before = outside_entries();
    CHECK(symlinkat(target, root, "s/f.txt") == 0);
    const char *s[] = {"s"};
    CHECK(store(s, 1, "f.txt", "new", rel, sizeof rel) == 0 && strcmp(rel, "s/f-1.txt") == 0);
    FILE *f = fopen(target, "rb");
    char buf[32] = "";
    CHECK(f && fread(buf, 1, sizeof buf - 1, f) == 8 && strcmp(buf, "original") == 0);
    if (f)
        fclose(f);
    /* a dangling link at the final name: its target is not created */
    snprintf(target, sizeof target, "%s/created", outp);
    CHECK(symlinkat(target, root, "s/g.txt") == 0);
    CHECK(store(s, 1, "g.txt", "new", rel, sizeof rel) == 0 && strcmp(rel, "s/g-1.txt") == 0);
    CHECK(access(target, F_OK) != 0);
    CHECK(outside_entries() == before);
}

static int read_rel(const char *rel, char *buf, size_t cap)
{
    int fd;
    if (igw_storage_open_read(root, rel, &fd) != 0)
        return fd == -1 ? -errno : -1000;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1001;
    buf[n] = '\0';
    return 0;
}

static void test_read(void)
{
    char buf[64];
    CHECK(read_rel("edge/prod1/cam-01/260101/000000/a.txt", buf, sizeof buf) == 0 &&
          strcmp(buf, "first") == 0);
    CHECK(read_rel("edge/prod1/cam-01/260101/000000/a-1.txt", buf, sizeof buf) == 0 &&
          strcmp(buf, "second") == 0);
    CHECK(read_rel("top.txt", buf, sizeof buf) == 0 && strcmp(buf, "t") == 0);
    /* the descriptor is read-only */
    int fd;
    CHECK(igw_storage_open_read(root, "top.txt", &fd) == 0 && write(fd, "x", 1) == -1);
    close(fd);

    /* symlinks: final, intermediate, top level, inside-the-root aliases */
    int r = read_rel("s/f.txt", buf, sizeof buf);
    CHECK(r == -ELOOP);
    r = read_rel("s/evil/victim", buf, sizeof buf);
    CHECK(r == -ELOOP || r == -ENOTDIR);
    r = read_rel("top/victim", buf, sizeof buf);
    CHECK(r == -ELOOP || r == -ENOTDIR);
    r = read_rel("alias/f-1.txt", buf, sizeof buf);
    CHECK(r == -ELOOP || r == -ENOTDIR);
    CHECK(symlinkat("../top.txt", root, "s/up") == 0);
    CHECK(read_rel("s/up", buf, sizeof buf) == -ELOOP);
    /* directories, missing files, files as directories */
    CHECK(read_rel("edge", buf, sizeof buf) == -EISDIR);
    CHECK(read_rel("edge/prod1/cam-01/260101/000000", buf, sizeof buf) == -EISDIR);
    CHECK(read_rel("edge/none.txt", buf, sizeof buf) == -ENOENT);
    CHECK(read_rel("nodir/none.txt", buf, sizeof buf) == -ENOENT);
    CHECK(read_rel("top.txt/x", buf, sizeof buf) == -ENOTDIR);
    /* a FIFO: refused at once, no wait for a writer */
    CHECK(mkfifoat(root, "s/fifo", 0640) == 0);
    CHECK(read_rel("s/fifo", buf, sizeof buf) == -EPERM);
    /* a hard link (here to a file of the root; it could name one outside) */
    CHECK(linkat(root, "d1/README", root, "s/hard", 0) == 0);
    CHECK(read_rel("s/hard", buf, sizeof buf) == -EPERM);
    CHECK(read_rel("d1/README", buf, sizeof buf) == -EPERM); /* both names have two links now */
    CHECK(unlinkat(root, "s/hard", 0) == 0);
    CHECK(read_rel("d1/README", buf, sizeof buf) == 0 && strcmp(buf, "1") == 0);

    /* malformed paths: refused before any system call */
    static const char *bad[] = {"",       "/top.txt", "..",         "../outside/victim", ".",
                                "./top.txt", "a/../top.txt", "edge//prod1", "edge/", "s/./f-1.txt",
                                "s/..",   "//",       "/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = read_rel(bad[i], buf, sizeof buf);
        if (r != -EINVAL)
            printf("  read \"%s\": %d\n", bad[i], r);
        CHECK(r == -EINVAL);
    }
    CHECK(igw_storage_open_read(root, NULL, &fd) == -1 && errno == EINVAL && fd == -1);
    CHECK(igw_storage_open_read(root, "top.txt", NULL) == -1 && errno == EINVAL);
    char deep[IGW_STORAGE_PATH_MAX + 8];
    size_t o = 0;
    for (int i = 0; i < IGW_STORAGE_DEPTH_MAX; i++)
        o += (size_t)snprintf(deep + o, sizeof deep - o, "z/");
    deep[o - 2] = 'f'; /* "z/z/.../f": DEPTH_MAX components */
    deep[o - 1] = '\0';
    CHECK(read_rel(deep, buf, sizeof buf) == 0 && strcmp(buf, "x") == 0);
    snprintf(deep + o - 1, sizeof deep - o + 1, "/g");
    CHECK(read_rel(deep, buf, sizeof buf) == -EINVAL);
    char longp[IGW_STORAGE_PATH_MAX + 2];
    memset(longp, 'a', sizeof longp);
    longp[IGW_STORAGE_PATH_MAX + 1] = '\0';
    CHECK(read_rel(longp, buf, sizeof buf) == -EINVAL);
}

static void test_remove(void)
{
    char buf[8];
    CHECK(igw_storage_remove(root, "edge/prod1/cam-01/260101/000000/a-2.txt") == 0);
    CHECK(read_rel("edge/prod1/cam-01/260101/000000/a-2.txt", buf, sizeof buf) == -ENOENT);
    CHECK(igw_storage_remove(root, "edge/prod1/cam-01/260101/000000/a-2.txt") == -1 && errno == ENOENT);
    /* not through a planted link; a link itself is removed, not its target */
    int before = outside_entries();
    CHECK(igw_storage_remove(root, "s/evil/victim") == -1 && (errno == ELOOP || errno == ENOTDIR));
    CHECK(igw_storage_remove(root, "s/f.txt") == 0);
    CHECK(outside_entries() == before);
    CHECK(igw_storage_remove(root, "../outside/victim") == -1 && errno == EINVAL);
    CHECK(igw_storage_remove(root, "edge") == -1); /* a directory */
}

int main(void)
{
    umask(022);
    snprintf(base, sizeof base, "%s/igw-storage-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (strlen(base) > 40 || !mkdtemp(base))
        die("mkdtemp");
    snprintf(rootp, sizeof rootp, "%s/root", base);
    snprintf(outp, sizeof outp, "%s/outside", base);
    if (mkdir(rootp, 0700) != 0 || mkdir(outp, 0700) != 0)
        die("mkdir");
    root = open(rootp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        die(rootp);
    test_edge_dirs();
    test_create();
    test_symlinks();
    test_read();
    test_remove();
    CHECK(outside_entries() == 1); /* only the victim file put there by the test */
    close(root);
    sh("rm -rf '%s'", base);
    return check_summary("storage_test");
}
