/* fsroot: file operations confined to one directory tree (see fsroot.h). */
#include "fsroot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "fileio.h"
#include "mem.h"

#define MAX_COMPONENTS (FSROOT_PATH_MAX / 2 + 1)

struct fsroot {
    int fd; /* O_PATH descriptor of the root directory */
};

/* A path split into its components (pointers into buf). */
typedef struct {
    char buf[FSROOT_PATH_MAX + 1];
    char *comp[MAX_COMPONENTS];
    int n;
} s_path_t;

static int s_fail(int err)
{
    errno = err;
    return -1;
}

static int s_parse(const char *path, int flags, s_path_t *p)
{
    size_t len = strlen(path);
    if (len > FSROOT_PATH_MAX)
        return s_fail(ENAMETOOLONG);
    memcpy(p->buf, path, len + 1);
    p->n = 0;
    char *save = NULL;
    for (char *c = strtok_r(p->buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strlen(c) > FSROOT_NAME_MAX)
            return s_fail(ENAMETOOLONG);
        if (strcmp(c, ".") == 0 || strcmp(c, "..") == 0)
            return s_fail(EINVAL);
        if (c[0] == '.' && !(flags & FSROOT_HIDDEN))
            return s_fail(EPERM);
        p->comp[p->n++] = c;
    }
    return 0;
}

fsroot_t *fsroot_new(const char *dir)
{
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    fsroot_t *self = xcalloc(1, sizeof *self);
    self->fd = fd;
    return self;
}

void fsroot_destroy(fsroot_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    close((*self_p)->fd);
    free(*self_p);
    *self_p = NULL;
}

int fsroot_check(const char *path, int flags)
{
    s_path_t p;
    return s_parse(path, flags, &p);
}

/* Opens the directory named by the first n components (O_PATH), one
 * component at a time, never through a link. -1 with errno: ELOOP for a
 * link on the way, ENOTDIR for a file, ENOENT, EACCES. */
static int s_open_dir(fsroot_t *self, const s_path_t *p, int n)
{
    int fd = openat(self->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; fd >= 0 && i < n; i++) {
        int next = openat(fd, p->comp[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        if (next < 0 && (e == ENOTDIR || e == ELOOP)) {
            /* Say which: a link (refused) or a file in the way. */
            struct stat st;
            if (fstatat(fd, p->comp[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                e = ELOOP;
            else
                e = ENOTDIR;
        }
        close(fd);
        fd = next;
        errno = e;
    }
    return fd;
}

/* The directory holding path's last component, and that component (NULL
 * for the root itself). -1 with errno. */
static int s_parent(fsroot_t *self, const char *path, int flags, s_path_t *p, const char **leaf)
{
    if (s_parse(path, flags, p) < 0)
        return -1;
    *leaf = p->n ? p->comp[p->n - 1] : NULL;
    return s_open_dir(self, p, p->n ? p->n - 1 : 0);
}

int fsroot_stat(fsroot_t *self, const char *path, int flags, struct stat *st)
{
    s_path_t p;
    const char *leaf;
    int dfd = s_parent(self, path, flags, &p, &leaf);
    if (dfd < 0)
        return -1;
    int rc = leaf ? fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW) : fstat(dfd, st);
    int e = errno;
    close(dfd);
    errno = e;
    return rc;
}

/* Opens path's last component for reading with O_NOFOLLOW; a link gives
 * ELOOP. O_NONBLOCK: a FIFO must not hang the server (it is refused after
 * the fstat anyway). */
static int s_open_leaf(int dfd, const char *leaf, int oflags)
{
    return openat(dfd, leaf, oflags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

char *fsroot_read(fsroot_t *self, const char *path, int flags, size_t max, size_t *len, struct stat *st)
{
    s_path_t p;
    const char *leaf;
    struct stat sb;
    int dfd = s_parent(self, path, flags, &p, &leaf);
    if (dfd < 0)
        return NULL;
    if (!leaf) {
        close(dfd);
        errno = EISDIR;
        return NULL;
    }
    int fd = s_open_leaf(dfd, leaf, O_RDONLY);
    int e = errno;
    close(dfd);
    if (fd < 0) {
        errno = e;
        return NULL;
    }
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (size_t)sb.st_size > max) {
        e = errno;
        if (fstat(fd, &sb) == 0)
            e = S_ISDIR(sb.st_mode) ? EISDIR : !S_ISREG(sb.st_mode) ? EINVAL : EFBIG;
        close(fd);
        errno = e;
        return NULL;
    }
    /* The file may grow while it is read: never past max. */
    char *data = fileio_read_fd(fd, (size_t)sb.st_size, max, len);
    e = errno;
    close(fd);
    errno = e;
    if (data && st)
        *st = sb;
    return data;
}

static int s_write_all(int fd, const char *p, size_t left)
{
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return s_fail(EIO);
        p += n;
        left -= (size_t)n;
    }
    return 0;
}

int fsroot_write(fsroot_t *self, const char *path, int flags, const void *data, size_t len, struct stat *st)
{
    s_path_t p;
    const char *leaf;
    int dfd = s_parent(self, path, flags, &p, &leaf);
    if (dfd < 0)
        return -1;
    if (!leaf) {
        close(dfd);
        return s_fail(EISDIR);
    }
    struct stat old;
    bool exists = fstatat(dfd, leaf, &old, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && (flags & FSROOT_EXCL)) {
        close(dfd);
        return s_fail(EEXIST);
    }
    if (exists && !S_ISREG(old.st_mode)) {
        close(dfd);
        return s_fail(S_ISLNK(old.st_mode) ? ELOOP : S_ISDIR(old.st_mode) ? EISDIR : EINVAL);
    }
    /* A new hidden name in the same directory (rename is atomic within one
     * file system), created exclusively: nothing already there is reused. */
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        int e = errno;
        close(dfd);
        return s_fail(e ? e : EIO);
    }
    char tmp[40];
    snprintf(tmp, sizeof tmp, ".~rat-%02x%02x%02x%02x%02x%02x%02x%02x.tmp", r[0], r[1], r[2], r[3], r[4], r[5], r[6],
             r[7]);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        close(dfd);
        return s_fail(e);
    }
    int rc = 0;
    if (exists && fchmod(fd, old.st_mode & 07777) < 0)
        rc = -1;
    /* fsync before the rename: a full disk may only show there (delayed
     * allocation), and a crash must not leave the new name on empty data. */
    if (rc == 0)
        rc = s_write_all(fd, data, len);
    if (rc == 0)
        rc = fsync(fd);
    if (rc == 0 && st)
        rc = fstat(fd, st);
    int e = errno;
    if (close(fd) < 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc == 0 && ((flags & FSROOT_EXCL) ? renameat2(dfd, tmp, dfd, leaf, RENAME_NOREPLACE)
                                          : renameat(dfd, tmp, dfd, leaf)) < 0) {
        rc = -1;
        e = errno;
    }
    if (rc < 0)
        unlinkat(dfd, tmp, 0);
    else {
        /* The rename itself reaches the disk with its directory (best
         * effort: an O_PATH descriptor cannot be synced, so open one). */
        int sd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sd >= 0) {
            fsync(sd);
            close(sd);
        }
    }
    close(dfd);
    errno = e;
    return rc;
}

int fsroot_mkdir(fsroot_t *self, const char *path, int flags)
{
    s_path_t p;
    const char *leaf;
    int dfd = s_parent(self, path, flags, &p, &leaf);
    if (dfd < 0)
        return -1;
    int rc = leaf ? mkdirat(dfd, leaf, 0777) : s_fail(EEXIST);
    int e = errno;
    close(dfd);
    errno = e;
    return rc;
}

int fsroot_rename(fsroot_t *self, const char *from, const char *to, int flags)
{
    s_path_t pf, pt;
    const char *lf, *lt;
    int df = s_parent(self, from, flags, &pf, &lf);
    if (df < 0)
        return -1;
    int dt = s_parent(self, to, flags, &pt, &lt);
    if (dt < 0 || !lf || !lt) {
        int e = dt < 0 ? errno : EINVAL;
        close(df);
        if (dt >= 0)
            close(dt);
        return s_fail(e);
    }
    struct stat st;
    int rc = fstatat(df, lf, &st, AT_SYMLINK_NOFOLLOW);
    if (rc == 0 && S_ISLNK(st.st_mode))
        rc = s_fail(ELOOP);
    if (rc == 0)
        rc = renameat2(df, lf, dt, lt, RENAME_NOREPLACE);
    int e = errno;
    close(df);
    close(dt);
    errno = e;
    return rc;
}

int fsroot_unlink(fsroot_t *self, const char *path, int flags)
{
    s_path_t p;
    const char *leaf;
    int dfd = s_parent(self, path, flags, &p, &leaf);
    if (dfd < 0)
        return -1;
    struct stat st;
    int rc = leaf ? fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) : s_fail(EISDIR);
    if (rc == 0 && !S_ISREG(st.st_mode))
        rc = s_fail(S_ISLNK(st.st_mode) ? ELOOP : S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
    if (rc == 0)
        rc = unlinkat(dfd, leaf, 0);
    int e = errno;
    close(dfd);
    errno = e;
    return rc;
}

static int s_by_name(const void *a, const void *b)
{
    return strcmp(((const fsroot_entry_t *)a)->name, ((const fsroot_entry_t *)b)->name);
}

long fsroot_list(fsroot_t *self, const char *path, int flags, size_t max, fsroot_entry_t **out, bool *more)
{
    s_path_t p;
    const char *leaf;
    *out = NULL;
    *more = false;
    int dfd = s_parent(self, path, flags, &p, &leaf);
    if (dfd < 0)
        return -1;
    /* A readable descriptor of the directory itself (O_PATH cannot list). */
    int fd = openat(dfd, leaf ? leaf : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    if (fd < 0 && (e == ENOTDIR || e == ELOOP) && leaf) {
        struct stat st;
        e = fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
    }
    close(dfd);
    if (fd < 0)
        return s_fail(e);
    DIR *d = fdopendir(fd);
    if (!d) {
        e = errno;
        close(fd);
        return s_fail(e);
    }
    size_t n = 0, cap = 0;
    fsroot_entry_t *v = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        if (name[0] == '.' && !(flags & FSROOT_HIDDEN))
            continue;
        if (n == max) {
            *more = true;
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone since readdir */
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[n].name = xstrdup(name);
        v[n].st = st;
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof *v, s_by_name);
    *out = v;
    return (long)n;
}

void fsroot_entries_free(fsroot_entry_t *entries, long n)
{
    for (long i = 0; i < n; i++)
        free(entries[i].name);
    free(entries);
}
