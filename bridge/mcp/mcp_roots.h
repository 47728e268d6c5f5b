/* mcp_roots: the client's workspace roots (MCP client/roots: the answer to
 * roots/list) made into a local directory.
 *
 * Every root is client input. A URI is used only when it is a file: URI
 * (RFC 8089) with no host or "localhost", no query or fragment, whose
 * percent-decoded path is absolute, bounded (PATH_MAX), valid UTF-8 and free
 * of control characters (NUL among them); and that path must be an existing directory on this machine. A
 * list is read up to MCP_ROOTS_MAX_CHECKED entries; problems are said in one
 * line each, with the URI cut short and its control characters replaced. */
#ifndef RAT_MCP_ROOTS_H
#define RAT_MCP_ROOTS_H

#include <stddef.h>
#include <json-c/json.h>

#define MCP_ROOTS_MAX_CHECKED 64    /* roots examined in one list; the rest are counted, not read */
#define MCP_ROOTS_URI_MAX 16384     /* bytes of one URI (a PATH_MAX path, percent-encoded) */

/* The path a file: URI names, percent-decoded (not resolved), or NULL with
 * err ("not a file: URI", "names host 'x': only local roots can be used",
 * ...). Caller frees. */
char *mcp_roots_file_path(const char *uri, size_t len, char *err, size_t errlen);

typedef struct {
    char *dir;        /* the first usable root's real path (symlinks resolved); owned */
    char *uri;        /* its URI, shown safely (cut, control characters replaced); owned */
    size_t count;     /* roots the client listed */
    char *problems;   /* why the roots before it were not used ("; " between them), or NULL; owned */
} mcp_roots_pick_t;

/* Picks the first root of a roots/list result that is a local directory.
 * Returns 0 with out filled, or -1 with err saying why none could be used
 * (a malformed result, an empty list, or each root's problem); out is then
 * empty. Free out with mcp_roots_pick_free either way. */
int mcp_roots_pick(json_object *result, mcp_roots_pick_t *out, char *err, size_t errlen);
void mcp_roots_pick_free(mcp_roots_pick_t *p);
/* uri (client input) as it may be shown in a log line or a result: at most
 * 160 bytes cut at a character, control characters and invalid UTF-8
 * replaced by '?', "…" when cut. Caller frees. */
char *mcp_roots_show(const char *uri, size_t len);

#endif
