/* fileio: small, bounded file-system helpers. */
#ifndef RAT_FILEIO_H
#define RAT_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

struct stat;

/* Opens path (flags as open(2), plus O_CLOEXEC and O_NOCTTY) only when it
 * is a regular file: the type is checked on the open descriptor before
 * anything can block, so a FIFO, a device or a socket named where a file
 * is expected is refused at once (EINVAL; fileio_strerror says "not a
 * regular file") instead of hanging the caller. The descriptor is left
 * blocking, as open(2) gives it. Fills *st_out when not NULL. Returns the
 * descriptor or -1 with errno set. Every file rat-py and rat read or append
 * to by name (configs, state, TLS files, tokens, connection files,
 * kernelspecs, logs, assets) is opened through here. */
int fileio_open_regular(const char *path, int flags, int mode, struct stat *st_out);
/* strerror(e), except EINVAL from the functions here: "not a regular file". */
const char *fileio_strerror(int e);
/* Reads a whole regular file of at most max bytes (fileio_open_regular).
 * Returns a NUL-terminated copy (caller owns it) and its length in *len, or
 * NULL with errno set (EFBIG when the file is larger than max, EINVAL when
 * it is not a regular file). */
char *fileio_read(const char *path, size_t max, size_t *len);
/* Writes data to path atomically with the given mode: a temporary file with
 * an unpredictable name in the same directory, created exclusively (never
 * through an existing file or symlink) with mode 0600, then renamed over
 * path. Returns 0 or -1 with errno set (no temporary file left). */
/* The rest of an open descriptor (not closed), as fileio_read: at most max
 * bytes (EFBIG past that), NUL-terminated; size_hint: the expected size. */
char *fileio_read_fd(int fd, size_t size_hint, size_t max, size_t *len);
int fileio_write_atomic(const char *path, const void *data, size_t len, int mode);
bool fileio_is_file(const char *path);
bool fileio_is_dir(const char *path);
bool fileio_is_executable(const char *path);
/* Finds an executable on $PATH (or returns a copy of name when it contains a
 * slash and is executable). Caller owns the result; NULL when not found. */
char *fileio_which(const char *name);
/* Absolute, symlink-free form of path; caller owns it; NULL on error. */
char *fileio_realpath(const char *path);

#endif
