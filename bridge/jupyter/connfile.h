/* connfile: Jupyter connection files (ports, key, transport).
 *
 * Files we write hold a fresh 256-bit random key and are created 0600 with a
 * temp file + rename, so no other user ever sees a partial or readable file.
 * Files we read (attach mode) are untrusted input: size-capped, every field
 * checked. */
#ifndef RAT_CONNFILE_H
#define RAT_CONNFILE_H

#include <stddef.h>

enum { CONN_SHELL, CONN_IOPUB, CONN_STDIN, CONN_CONTROL, CONN_HB, CONN_NPORTS };

typedef struct {
    char transport[8];          /* "tcp" or "ipc" */
    char ip[256];               /* address, or ipc path prefix */
    int ports[CONN_NPORTS];     /* indexed by CONN_* */
    char *key;                  /* owned; "" disables signing */
    char signature_scheme[32];  /* "hmac-sha256" */
    char kernel_name[128];
} connfile_t;

/* Fresh info for a local kernel: tcp on 127.0.0.1, random key, and five free
 * ports (bound and released; a clash is caught when the kernel fails to
 * start, and the caller retries). Returns 0, or -1 with err filled. */
int connfile_init_local(connfile_t *c, const char *kernel_name, char *err, size_t errlen);
int connfile_read(const char *path, connfile_t *c, char *err, size_t errlen);
int connfile_write(const char *path, const connfile_t *c, char *err, size_t errlen);
void connfile_free(connfile_t *c);
/* "tcp://ip:port" or "ipc://ip-port" for one channel, into out. */
void connfile_endpoint(const connfile_t *c, int which, char *out, size_t outlen);
/* Finds a connection file the way `jupyter console --existing` does: the
 * path as given, then in the current dir and the runtime dir by exact name,
 * then by "kernel-NAME.json", then by the glob *NAME*; the newest wins.
 * Caller owns the result; NULL with err filled when nothing matches. */
char *connfile_find(const char *name, char *err, size_t errlen);

#endif
