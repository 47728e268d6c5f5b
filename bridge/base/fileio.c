/* fileio: small, bounded file-system helpers. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"

int fileio_open_regular(const char *path, int flags, int mode, struct stat *st_out)
{
    /* O_NONBLOCK: opening a FIFO for reading waits for a writer (and for
     * writing, for a reader) forever; with it the open returns at once
     * (ENXIO for a FIFO opened to write with no reader), and the file's
     * type is checked before anything waits on it. O_NOCTTY: a terminal
     * named here never becomes ours. */
    int fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, (mode_t)mode);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        /* st says nothing after a failure: fstat's own error is the answer. */
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (st_out)
        *st_out = st;
    return fd;
}

const char *fileio_strerror(int e)
{
    return e == EINVAL ? "not a regular file" : strerror(e);
}

char *fileio_read(const char *path, size_t max, size_t *len)
{
    struct stat st;
    int fd = fileio_open_regular(path, O_RDONLY, 0, &st);
    if (fd < 0)
        return NULL;
    if ((size_t)st.st_size > max) {
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    char *data = fileio_read_fd(fd, (size_t)st.st_size, max, len);
    int e = errno;
    close(fd);
    errno = e;
    return data;
}

char *fileio_read_fd(int fd, size_t size_hint, size_t max, size_t *len)
{
    /* Room for max bytes, one more (a file that grew past max shows), and
     * the NUL: a file of exactly max bytes is read whole. */
    size_t cap = (size_hint < max ? size_hint : max) + 2, got = 0;
    char *data = xmalloc(cap);
    for (;;) {
        if (got + 1 == cap) {
            cap = cap * 2 < max + 2 ? cap * 2 : max + 2;
            data = xrealloc(data, cap);
        }
        ssize_t n = read(fd, data + got, cap - got - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(data);
            errno = e;
            return NULL;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (got > max) {
            free(data);
            errno = EFBIG;
            return NULL;
        }
    }
    data[got] = '\0';
    if (len)
        *len = got;
    return data;
}

int fileio_write_atomic(const char *path, const void *data, size_t len, int mode)
{
    /* The temporary file gets an unpredictable name in path's own directory
     * (rename is atomic only within one file system) and is created by
     * mkostemp: O_CREAT|O_EXCL, so nothing already there — a symlink planted
     * by another user of a shared directory included — is followed or
     * reused, and mode 0600 from the first byte (a connection file holds the
     * kernel's key). */
    const char *slash = strrchr(path, '/');
    char *tmp = slash ? xasprintf("%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1)
                      : xasprintf(".%s.XXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    if (fchmod(fd, (mode_t)mode) < 0) { /* the umask must not widen or narrow it */
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        errno = e;
        return -1;
    }
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            free(tmp);
            errno = e;
            return -1;
        }
        p += n;
        left -= (size_t)n;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        errno = e;
        return -1;
    }
    free(tmp);
    return 0;
}

bool fileio_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool fileio_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool fileio_is_executable(const char *path)
{
    return fileio_is_file(path) && access(path, X_OK) == 0;
}

char *fileio_which(const char *name)
{
    if (!name || !*name)
        return NULL;
    if (strchr(name, '/'))
        return fileio_is_executable(name) ? xstrdup(name) : NULL;
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = xstrdup(path);
    char *save = NULL, *found = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *cand = xasprintf("%s/%s", *dir ? dir : ".", name);
        if (fileio_is_executable(cand))
            found = cand;
        else
            free(cand);
    }
    free(copy);
    return found;
}

char *fileio_realpath(const char *path)
{
    char *r = realpath(path, NULL);
    if (!r)
        return NULL;
    char *copy = xstrdup(r);
    free(r);
    return copy;
}
