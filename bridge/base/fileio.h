/* fileio: small, bounded file-system helpers. */
#ifndef RAT_FILEIO_H
#define RAT_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

/* Reads a whole regular file of at most max bytes. Returns a NUL-terminated
 * copy (caller owns it) and its length in *len, or NULL with errno set
 * (EFBIG when the file is larger than max). */
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
