/* fsroot: file operations confined to one directory tree (the contents
 * API's --cwd, bridge/app/contents.c).
 *
 * A path is relative to the root, '/'-separated, and every component is
 * looked up from the directory descriptor of the one before it with
 * O_NOFOLLOW: a symbolic link anywhere on the way is refused (ELOOP), never
 * followed, so no path reaches outside the root however it is spelled and
 * whatever the links on disk point to. The lookups hold descriptors, not
 * names, so a component cannot be swapped for a link between a check and
 * its use (the only rename that could move a directory out from under a
 * lookup is one by another process with write access to the tree, which can
 * write there itself anyway). "." and ".." components are refused (EINVAL),
 * empty ones ("a//b", a leading or trailing "/") are skipped, and names
 * starting with "." (hidden files, .ipynb_checkpoints) are refused (EPERM)
 * unless the call passes FSROOT_HIDDEN.
 *
 * Writes are atomic: the data goes to a new hidden file in the same
 * directory (created exclusively), is flushed to disk (fsync), then renamed
 * over the target; a failure at any step (a full disk: ENOSPC, EDQUOT,
 * EFBIG) removes the new file and leaves the target as it was. Reads and
 * listings are bounded. Single-threaded: one caller at a time. */
#ifndef RAT_FSROOT_H
#define RAT_FSROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

typedef struct fsroot fsroot_t;

#define FSROOT_HIDDEN 1 /* allow components that start with "." */
#define FSROOT_EXCL 2   /* fsroot_write: never replace an existing name (EEXIST) */
#define FSROOT_NAME_MAX 255
#define FSROOT_PATH_MAX 1024

typedef struct {
    char *name;          /* owned */
    struct stat st;      /* lstat of the entry */
} fsroot_entry_t;

/* Opens the root directory (dir is resolved once, now). NULL with errno. */
fsroot_t *fsroot_new(const char *dir);
void fsroot_destroy(fsroot_t **self_p);

/* Checks a path's spelling (components, length, hidden names) without
 * touching the disk: 0, or -1 with errno EINVAL, ENAMETOOLONG or EPERM. */
int fsroot_check(const char *path, int flags);

/* lstat of path ("" is the root). A symbolic link is reported as one
 * (S_ISLNK), not followed. 0 or -1 with errno. */
int fsroot_stat(fsroot_t *self, const char *path, int flags, struct stat *st);

/* Reads a regular file of at most max bytes: a NUL-terminated copy (caller
 * frees), its length in *len and its lstat in *st (may be NULL). NULL with
 * errno: ELOOP (a link), EISDIR, EINVAL (not a regular file: a FIFO, a
 * device), EFBIG (larger than max), or the system's. */
char *fsroot_read(fsroot_t *self, const char *path, int flags, size_t max, size_t *len, struct stat *st);

/* Replaces (or creates) the regular file path with data, atomically; an
 * existing file keeps its permission bits, a new one gets 0666 less the
 * umask. Refuses a link (ELOOP) or a directory (EISDIR) at path. With
 * FSROOT_EXCL the file must not exist: the final rename is
 * RENAME_NOREPLACE, so a name taken meanwhile fails with EEXIST, never
 * replaced. *st (may be NULL) gets the new file's stat. 0 or -1 with errno. */
int fsroot_write(fsroot_t *self, const char *path, int flags, const void *data, size_t len, struct stat *st);

/* Creates a directory (0777 less the umask). 0 or -1 with errno (EEXIST). */
int fsroot_mkdir(fsroot_t *self, const char *path, int flags);

/* Renames from to to, never over an existing name (EEXIST); a link is not
 * moved (ELOOP). 0 or -1 with errno. */
int fsroot_rename(fsroot_t *self, const char *from, const char *to, int flags);

/* Removes a regular file (not a directory, not a link: EISDIR, ELOOP).
 * 0 or -1 with errno. */
int fsroot_unlink(fsroot_t *self, const char *path, int flags);

/* The entries of directory path, sorted by name, without "." and "..",
 * without hidden names unless flags has FSROOT_HIDDEN, at most max of them
 * (*more says whether some were left out). Returns the count (*out: an
 * array to free with fsroot_entries_free) or -1 with errno. */
long fsroot_list(fsroot_t *self, const char *path, int flags, size_t max, fsroot_entry_t **out, bool *more);
void fsroot_entries_free(fsroot_entry_t *entries, long n);

#endif
