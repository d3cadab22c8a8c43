/*
 * A test-only LD_PRELOAD library: keeps, in the directory LOST_PAGE_CACHE_IMAGE, what a
 * machine crash would leave of the files under LOST_PAGE_CACHE_DATA, which is their
 * content as of their last fsync or fdatasync, nothing written after it. A SIGKILL
 * keeps the OS page cache, so only this image can show a missing sync: the test kills
 * the process, puts the image in the data directory's place and starts again on it.
 *
 * How: every write to a regular file under the data directory (write, pwrite, writev,
 * pwritev, ftruncate, fallocate) notes the range it touched against the file's inode.
 * An fsync or fdatasync of the file copies those ranges (the whole file the first time
 * this process syncs it) from the file into the image and gives the image file the
 * file's length. Creating files (empty) and directories, truncating at open, renaming
 * and removing go to the image at once, as a journaling file system's metadata would (a
 * rename made by a raw system call, unseen here, reaches the image at the file's next
 * sync).
 *
 * Without both variables set, every call passes straight through.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static char data_root[PATH_MAX];
static size_t data_len;
static char image_root[PATH_MAX];
static int enabled;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev64)(int, const struct iovec *, int, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_fallocate64)(int, int, off_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_rmdir)(const char *);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);

static void *must(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "lost_page_cache: no %s\n", name);
        abort();
    }
    return f;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
    real_write = must("write");
    real_pwrite64 = must("pwrite64");
    real_writev = must("writev");
    real_pwritev64 = must("pwritev64");
    real_ftruncate64 = must("ftruncate64");
    real_fallocate64 = must("fallocate64");
    real_fsync = must("fsync");
    real_fdatasync = must("fdatasync");
    real_open64 = must("open64");
    real_openat64 = must("openat64");
    real_mkdir = must("mkdir");
    real_unlink = must("unlink");
    real_unlinkat = must("unlinkat");
    real_rmdir = must("rmdir");
    real_rename = must("rename");
    real_renameat = must("renameat");
    real_renameat2 = must("renameat2");
    const char *data = getenv("LOST_PAGE_CACHE_DATA");
    const char *image = getenv("LOST_PAGE_CACHE_IMAGE");
    if (!data || !image || !realpath(data, data_root) || !realpath(image, image_root)) {
        if (data || image)
            fprintf(stderr, "lost_page_cache: LOST_PAGE_CACHE_DATA and _IMAGE must both "
                            "name existing directories; passing through\n");
        return;
    }
    data_len = strlen(data_root);
    enabled = 1;
}

#define READY() pthread_once(&once, init)

/* ------------------------------------------------------------------ paths */

/* The part of absolute path `path` under the data directory ("/..."), or NULL. */
static const char *under_data(const char *path) {
    if (strncmp(path, data_root, data_len) != 0)
        return NULL;
    if (path[data_len] == '/')
        return path + data_len;
    return path[data_len] == '\0' ? "" : NULL;
}

/* `path` as given to a *at call (relative to `dirfd`, or to the working directory),
 * made absolute with its parent's real path (the entry itself may be gone by now). */
static int resolve(int dirfd, const char *path, char out[PATH_MAX]) {
    char joined[PATH_MAX * 2], parent[PATH_MAX];
    if (path[0] == '/') {
        snprintf(joined, sizeof joined, "%s", path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(base, sizeof base))
                return -1;
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t n = readlink(link, base, sizeof base - 1);
            if (n < 0)
                return -1;
            base[n] = '\0';
        }
        snprintf(joined, sizeof joined, "%s/%s", base, path);
    }
    char *slash = strrchr(joined, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    if (!realpath(joined[0] ? joined : "/", parent))
        return -1;
    snprintf(out, PATH_MAX, "%s/%s", parent, slash + 1);
    return 0;
}

static void image_path(const char *rel, char out[PATH_MAX]) {
    snprintf(out, PATH_MAX, "%s%s", image_root, rel);
}

/* Makes the image's directories down to the parent of `path`. */
static void make_parents(const char *path) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + strlen(image_root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        real_mkdir(dir, 0755);
        *p = '/';
    }
}

static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        real_unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char child[PATH_MAX];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        remove_tree(child);
    }
    closedir(d);
    real_rmdir(path);
}

/* ------------------------------------------------------------------ dirty ranges */

struct range {
    off_t start, end;
};

/* A file written since this process last synced it. */
struct inode {
    dev_t dev;
    ino_t ino;
    int used;
    /* Copied whole into the image once by this process: from then on the image differs
     * from the file only in `ranges`. */
    int imaged;
    /* Where the image holds it, under the image root (a rename moves it). */
    char *rel;
    struct range *ranges;
    size_t count, cap;
};

#define INODES 16384
static struct inode inodes[INODES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct inode *inode_of(dev_t dev, ino_t ino) {
    size_t h = (size_t)(ino * 0x9E3779B97F4A7C15ull ^ dev) % INODES;
    for (size_t i = 0; i < INODES; i++) {
        struct inode *n = &inodes[(h + i) % INODES];
        if (!n->used) {
            n->used = 1;
            n->dev = dev;
            n->ino = ino;
            return n;
        }
        if (n->dev == dev && n->ino == ino)
            return n;
    }
    fprintf(stderr, "lost_page_cache: more than %d files written\n", INODES);
    abort();
}

/* Forgets what is known of an inode: its next sync copies it whole, to wherever it is
 * then. For a file gone from its name (removed, or replaced by a rename), whose inode
 * number a new file may take. */
static void forget(struct inode *n) {
    free(n->rel);
    n->rel = NULL;
    n->imaged = 0;
    n->count = 0;
}

/* Forgets every inode last seen at `rel` or under it. */
static void forget_under(const char *rel) {
    size_t len = strlen(rel);
    for (size_t i = 0; i < INODES; i++) {
        struct inode *n = &inodes[i];
        if (n->rel && !strncmp(n->rel, rel, len) && (!n->rel[len] || n->rel[len] == '/'))
            forget(n);
    }
}

/* The file `fd` is open on, if it is a regular file under the data directory: its
 * stat and its path under the data directory. */
static int tracked(int fd, struct stat *st, char rel[PATH_MAX]) {
    if (!enabled || fstat(fd, st) != 0 || !S_ISREG(st->st_mode))
        return 0;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return 0;
    path[n] = '\0';
    const char *r = under_data(path);
    if (!r || strstr(path, " (deleted)"))
        return 0;
    snprintf(rel, PATH_MAX, "%s", r);
    return 1;
}

/* Notes that [start, start + len) of the file `fd` is open on changed. */
static void note(int fd, off_t start, off_t len) {
    struct stat st;
    char rel[PATH_MAX];
    if (!tracked(fd, &st, rel))
        return;
    pthread_mutex_lock(&lock);
    struct inode *n = inode_of(st.st_dev, st.st_ino);
    struct range *last = n->count ? &n->ranges[n->count - 1] : NULL;
    if (last && start <= last->end && start + len >= last->start) {
        if (start < last->start)
            last->start = start;
        if (start + len > last->end)
            last->end = start + len;
    } else {
        if (n->count == n->cap) {
            n->cap = n->cap ? n->cap * 2 : 16;
            n->ranges = realloc(n->ranges, n->cap * sizeof *n->ranges);
        }
        n->ranges[n->count++] = (struct range){start, start + len};
    }
    pthread_mutex_unlock(&lock);
}

/* After a write that left `fd`'s position just past the `written` bytes it wrote. */
static void note_at_position(int fd, ssize_t written) {
    if (written <= 0 || !enabled)
        return;
    int saved = errno;
    off_t end = lseek(fd, 0, SEEK_CUR);
    if (end >= written)
        note(fd, end - written, written);
    errno = saved;
}

static int copy(int from, int to, off_t start, off_t end) {
    static char buf[1 << 20]; /* under `lock` */
    while (start < end) {
        size_t want = end - start < (off_t)sizeof buf ? (size_t)(end - start) : sizeof buf;
        ssize_t n = pread(from, buf, want, start);
        if (n <= 0)
            return n == 0 ? 0 : -1;
        if (real_pwrite64(to, buf, n, start) != n)
            return -1;
        start += n;
    }
    return 0;
}

/* The file `fd` is open on was synced: its changed ranges go to the image. */
static void imaged(int fd) {
    struct stat st;
    char rel[PATH_MAX], link[64], target[PATH_MAX];
    if (!tracked(fd, &st, rel))
        return;
    int saved = errno;
    pthread_mutex_lock(&lock);
    struct inode *n = inode_of(st.st_dev, st.st_ino);
    image_path(rel, target);
    if (n->rel && strcmp(n->rel, rel) != 0) {
        char before[PATH_MAX];
        image_path(n->rel, before);
        make_parents(target);
        real_rename(before, target);
    }
    free(n->rel);
    n->rel = strdup(rel);
    /* Read through /proc: `fd` may be open for writing only. */
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    int from = real_open64(link, O_RDONLY | O_CLOEXEC);
    make_parents(target);
    int to = real_open64(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    int failed = from < 0 || to < 0;
    if (!failed && !n->imaged) {
        failed = copy(from, to, 0, st.st_size) != 0;
    } else if (!failed) {
        for (size_t i = 0; i < n->count && !failed; i++) {
            off_t end = n->ranges[i].end < st.st_size ? n->ranges[i].end : st.st_size;
            failed = copy(from, to, n->ranges[i].start, end) != 0;
        }
    }
    failed = failed || real_ftruncate64(to, st.st_size) != 0;
    if (failed) {
        fprintf(stderr, "lost_page_cache: imaging %s failed: %s\n", rel, strerror(errno));
        abort();
    }
    n->imaged = 1;
    n->count = 0;
    close(from);
    close(to);
    pthread_mutex_unlock(&lock);
    errno = saved;
}

/* ------------------------------------------------------------------ names */

/* A rename under the data directory, done: the image follows when it has the source. */
static void renamed(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    char from[PATH_MAX], to[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
    const char *ra, *rb;
    if (!enabled || resolve(olddirfd, oldpath, from) || resolve(newdirfd, newpath, to))
        return;
    if (!(ra = under_data(from)) || !(rb = under_data(to)))
        return;
    int saved = errno;
    pthread_mutex_lock(&lock);
    image_path(ra, a);
    image_path(rb, b);
    forget_under(rb);
    if (access(a, F_OK) == 0) {
        make_parents(b);
        real_rename(a, b);
    }
    size_t len = strlen(ra);
    for (size_t i = 0; i < INODES; i++) {
        struct inode *n = &inodes[i];
        if (!n->rel || strncmp(n->rel, ra, len) != 0 || (n->rel[len] && n->rel[len] != '/'))
            continue;
        char moved[PATH_MAX];
        snprintf(moved, sizeof moved, "%s%s", rb, n->rel + len);
        free(n->rel);
        n->rel = strdup(moved);
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
}

/* A file or directory under the data directory removed: from the image too. */
static void removed(int dirfd, const char *path) {
    char full[PATH_MAX], target[PATH_MAX];
    const char *rel;
    if (!enabled || resolve(dirfd, path, full) || !(rel = under_data(full)))
        return;
    int saved = errno;
    pthread_mutex_lock(&lock);
    image_path(rel, target);
    remove_tree(target);
    forget_under(rel);
    pthread_mutex_unlock(&lock);
    errno = saved;
}

/* A file opened under the data directory: made (empty) or truncated in the image too. */
static void opened(int fd, int dirfd, const char *path, int flags) {
    char full[PATH_MAX], target[PATH_MAX];
    const char *rel;
    struct stat st;
    if (!enabled || !(flags & (O_CREAT | O_TRUNC)) || resolve(dirfd, path, full) ||
        !(rel = under_data(full)))
        return;
    int saved = errno;
    pthread_mutex_lock(&lock);
    /* A new file may have the inode number of one removed by a call not seen here. */
    if (fstat(fd, &st) == 0) {
        struct inode *n = inode_of(st.st_dev, st.st_ino);
        if (n->rel && strcmp(n->rel, rel) != 0)
            forget(n);
    }
    image_path(rel, target);
    make_parents(target);
    int made = real_open64(target, O_WRONLY | O_CLOEXEC | (flags & (O_CREAT | O_TRUNC)), 0644);
    if (made >= 0)
        close(made);
    pthread_mutex_unlock(&lock);
    errno = saved;
}

/* ------------------------------------------------------------------ the wrappers */

static mode_t mode_of(int flags, va_list args) {
    return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0;
}

int open64(const char *path, int flags, ...) {
    READY();
    va_list args;
    va_start(args, flags);
    mode_t mode = mode_of(flags, args);
    va_end(args);
    int fd = real_open64(path, flags, mode);
    if (fd >= 0)
        opened(fd, AT_FDCWD, path, flags);
    return fd;
}

int open(const char *path, int flags, ...) {
    va_list args;
    va_start(args, flags);
    mode_t mode = mode_of(flags, args);
    va_end(args);
    return open64(path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    READY();
    va_list args;
    va_start(args, flags);
    mode_t mode = mode_of(flags, args);
    va_end(args);
    int fd = real_openat64(dirfd, path, flags, mode);
    if (fd >= 0)
        opened(fd, dirfd, path, flags);
    return fd;
}

int openat(int dirfd, const char *path, int flags, ...) {
    va_list args;
    va_start(args, flags);
    mode_t mode = mode_of(flags, args);
    va_end(args);
    return openat64(dirfd, path, flags, mode);
}

ssize_t write(int fd, const void *buf, size_t count) {
    READY();
    ssize_t r = real_write(fd, buf, count);
    note_at_position(fd, r);
    return r;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    READY();
    ssize_t r = real_writev(fd, iov, iovcnt);
    note_at_position(fd, r);
    return r;
}

static ssize_t positioned(ssize_t r, int fd, off_t offset) {
    if (r > 0 && enabled) {
        int saved = errno;
        note(fd, offset, r);
        errno = saved;
    }
    return r;
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    READY();
    return positioned(real_pwrite64(fd, buf, count, offset), fd, offset);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    return pwrite64(fd, buf, count, offset);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    READY();
    return positioned(real_pwritev64(fd, iov, iovcnt, offset), fd, offset);
}

ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    return pwritev64(fd, iov, iovcnt, offset);
}

static int resized(int r, int fd, off_t start, off_t len) {
    if (r == 0 && enabled) {
        int saved = errno;
        note(fd, start, len);
        errno = saved;
    }
    return r;
}

int ftruncate64(int fd, off_t length) {
    READY();
    return resized(real_ftruncate64(fd, length), fd, length, 0);
}

int ftruncate(int fd, off_t length) {
    return ftruncate64(fd, length);
}

int fallocate64(int fd, int mode, off_t offset, off_t len) {
    READY();
    return resized(real_fallocate64(fd, mode, offset, len), fd, offset, len);
}

int fallocate(int fd, int mode, off_t offset, off_t len) {
    return fallocate64(fd, mode, offset, len);
}

int fsync(int fd) {
    READY();
    int r = real_fsync(fd);
    if (r == 0 && enabled)
        imaged(fd);
    return r;
}

int fdatasync(int fd) {
    READY();
    int r = real_fdatasync(fd);
    if (r == 0 && enabled)
        imaged(fd);
    return r;
}

int mkdir(const char *path, mode_t mode) {
    READY();
    int r = real_mkdir(path, mode);
    char full[PATH_MAX], target[PATH_MAX];
    const char *rel;
    if (r == 0 && enabled && !resolve(AT_FDCWD, path, full) && (rel = under_data(full))) {
        int saved = errno;
        image_path(rel, target);
        make_parents(target);
        real_mkdir(target, mode);
        errno = saved;
    }
    return r;
}

int unlink(const char *path) {
    READY();
    int r = real_unlink(path);
    if (r == 0)
        removed(AT_FDCWD, path);
    return r;
}

int unlinkat(int dirfd, const char *path, int flags) {
    READY();
    int r = real_unlinkat(dirfd, path, flags);
    if (r == 0)
        removed(dirfd, path);
    return r;
}

int rmdir(const char *path) {
    READY();
    int r = real_rmdir(path);
    if (r == 0)
        removed(AT_FDCWD, path);
    return r;
}

int rename(const char *oldpath, const char *newpath) {
    READY();
    int r = real_rename(oldpath, newpath);
    if (r == 0)
        renamed(AT_FDCWD, oldpath, AT_FDCWD, newpath);
    return r;
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    READY();
    int r = real_renameat(olddirfd, oldpath, newdirfd, newpath);
    if (r == 0)
        renamed(olddirfd, oldpath, newdirfd, newpath);
    return r;
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
              unsigned int flags) {
    READY();
    int r = real_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
    if (r == 0)
        renamed(olddirfd, oldpath, newdirfd, newpath);
    return r;
}
