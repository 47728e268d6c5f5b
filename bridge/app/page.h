/* page: the notebook page rat-py --http serves at `/` (web/, bundled with
 * esbuild at build time and embedded in the binary as C arrays by
 * web/embed.mjs, so the page needs no files at run time and no network).
 * The page talks to rat-py only through /mcp and /assets. */
#ifndef RAT_PAGE_H
#define RAT_PAGE_H

#include <stddef.h>

#include "transport_http.h"

/* One embedded file (generated: build/generated/page_files.c). */
typedef struct {
    const char *path;            /* URL path: "/" or "/static/NAME" */
    const char *content_type;
    const unsigned char *data;
    size_t len;
} page_file_t;

extern const page_file_t page_files[];
extern const size_t page_nfiles;  /* 0 when the build had no node/npm */

/* The embedded file at path, or NULL (a build without the page has none).
 * Paths without a leading '/' (the MCP App's, mcp_app.h) are never served
 * over HTTP. */
const page_file_t *page_file(const char *path);

/* Adds the page's routes: `/` (the HTML, which needs the token when one is
 * set) and `/static/` (its script and style, public). Call after the other
 * routes: `/` answers only the exact path and passes on the rest. */
void page_register(transport_http_t *http);

/* The URL to print at start: http(s)://HOST:PORT/ with ?token=TOKEN when a
 * token is given (malloc'd). */
char *page_url(const char *host, int port, bool https, const char *token);

#endif
