/* assets: the store of rich outputs (images, HTML) and full-output files.
 *
 * Files live in one directory (default <cwd>/.rat-assets) as
 * asset-<32 hex>.<ext>; the id clients see is "<32 hex>.<ext>" (served at
 * /assets/<id> and as the resource rat://assets/<id>). Ids are 128 random
 * bits: unguessable, and strictly validated before any path is built, so no
 * request can reach another file. Bounded: one asset over max_one bytes is
 * refused, and past max_total bytes the oldest of rat-py's files in the
 * directory (assets and output-*.txt) are deleted. */
#ifndef RAT_ASSETS_H
#define RAT_ASSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define ASSETS_ID_MAX 48
#define ASSETS_DEFAULT_MAX_ONE (32u << 20)
#define ASSETS_DEFAULT_MAX_TOTAL (512ull << 20)

typedef struct assets assets_t;

typedef struct {
    char id[ASSETS_ID_MAX];
    const char *mime;   /* static */
    size_t size;
    time_t mtime;
} assets_entry_t;

/* Nothing is created on disk until the first asset. */
assets_t *assets_new(const char *dir, size_t max_one, unsigned long long max_total);
void assets_destroy(assets_t **self_p);
const char *assets_dir(const assets_t *self);
/* Assets are saved in dir from now on (where the kernel works moved): the
 * ones in the old directory stay there and are no longer listed or
 * served. What assets_dir returned before is freed. */
void assets_set_dir(assets_t *self, const char *dir);
/* Whether the clients reach assets over HTTP (rat-py --http): then results
 * name them by their path, /assets/<id>. Otherwise (stdio, the default) an
 * HTTP path means nothing to the client, so they are named by what it can
 * fetch: the MCP resource rat://assets/<id>, and the file. */
void assets_serve_http(assets_t *self, bool on);
bool assets_http(const assets_t *self);
/* How a run's result names asset id: "/assets/<id>" over HTTP, else
 * "rat://assets/<id> (file: <dir>/asset-<id>)". Caller owns it. */
char *assets_link(const assets_t *self, const char *id);
/* The file extension for a MIME type we store ("png", ...), or NULL. */
const char *assets_ext(const char *mime);
/* Saves len bytes of mime under a fresh id (written to id_out). Returns 0,
 * or -1 with a one-line reason in err (too big, disk full, ...). */
int assets_put(assets_t *self, const char *mime, const void *data, size_t len, char id_out[ASSETS_ID_MAX],
               char *err, size_t errlen);
/* Path of an existing asset for a well-formed id; NULL otherwise. Caller
 * owns the result; *mime (may be NULL) gets its MIME type. */
char *assets_path(const assets_t *self, const char *id, const char **mime);
/* Whether name is the name of a full-output file ("output-<16 hex>.txt"). */
bool assets_output_ok(const char *name);
/* Path of an existing full-output file (assets_output_ok names); NULL
 * otherwise. Caller owns the result. */
char *assets_output_path(const assets_t *self, const char *name);
/* Assets (not output files), newest first. Returns the count; *out is an
 * array the caller frees. */
size_t assets_list(const assets_t *self, assets_entry_t **out);
/* Deletes everything rat-py wrote in the directory. */
void assets_clear(assets_t *self);
/* Deletes the oldest files while the directory holds more than max_total. */
void assets_trim(assets_t *self);

#endif
