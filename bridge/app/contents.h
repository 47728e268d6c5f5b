/* contents: the files under --cwd over HTTP, in the shape of Jupyter
 * Server's Contents API (doc/contents.md): GET/PUT/POST/PATCH/DELETE
 * /api/contents/<path>, and checkpoints (.ipynb_checkpoints) at
 * /api/contents/<path>/checkpoints. The notebook page lists, opens and
 * saves notebooks through it.
 *
 * Behind the transport's token, Host and Origin checks like every route;
 * paths are confined to the root by fsroot (no "..", no absolute path, no
 * symbolic link followed, no hidden name), writes are atomic (a full disk
 * leaves the file as it was and says so: 507), sizes are bounded
 * (CONTENTS_FILE_MAX per file, read or saved, in every format;
 * CONTENTS_LIST_MAX entries per listing), and a save is read without a
 * JSON tree (nbjson.h: memory a small multiple of the body). A
 * PUT with If-Match: "<sha256>" saves only over the content the client
 * last saw (412 otherwise), and If-None-Match: * only where no file is. */
#ifndef RAT_CONTENTS_H
#define RAT_CONTENTS_H

#include "transport_http.h"

#define CONTENTS_FILE_MAX (32u << 20)   /* bytes of one file read or written */
#define CONTENTS_BODY_MAX (48u << 20)   /* bytes of one request (JSON escapes, base64) */
#define CONTENTS_LIST_MAX 10000         /* entries of one directory listing */

typedef struct contents contents_t;

/* Serves the tree under root (an absolute directory) at /api/contents on
 * http. NULL (with a warning logged) when root cannot be opened: the rest
 * of the server works without it. */
contents_t *contents_new(transport_http_t *http, const char *root);
/* Call after the transport is gone (it calls into this object). */
void contents_destroy(contents_t **self_p);

#endif
