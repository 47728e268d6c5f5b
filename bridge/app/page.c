/* page: serves the embedded notebook page (see page.h). */
#include "page.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

/* The page runs only its own script and style, from this origin; talks only
 * to this origin (/mcp); shows images from /assets (or blob:/data: URLs it
 * made) and HTML outputs only in sandboxed frames from /assets; no forms, no
 * plugins, no <base>, and cannot be framed. CodeMirror's styles go through
 * constructable style sheets, which style-src does not govern. */
#define PAGE_CSP                                                                                        \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "             \
    "connect-src 'self'; frame-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "      \
    "frame-ancestors 'none'; object-src 'none'"

static void s_route(void *ud, const char *path, http_reply_t *out);

const page_file_t *page_file(const char *path)
{
    for (size_t i = 0; i < page_nfiles; i++)
        if (strcmp(page_files[i].path, path) == 0)
            return &page_files[i];
    return NULL;
}

/* Registered for "/" and "/static/": answers the embedded files, and for
 * "/" of a build without the page, says why; anything else is left alone
 * (the transport's 404). */
static void s_route(void *ud, const char *path, http_reply_t *out)
{
    (void)ud;
    const page_file_t *f = page_file(path);
    if (!f) {
        if (strcmp(path, "/") != 0)
            return;
        static const char msg[] = "This rat-py was built without its notebook page (node and npm were missing "
                                  "at build time). MCP is served at /mcp.\n";
        out->status = 404;
        out->content_type = "text/plain; charset=utf-8";
        out->body = xstrdup(msg);
        out->len = sizeof msg - 1;
        return;
    }
    out->status = 200;
    out->content_type = f->content_type;
    out->body = xmalloc(f->len ? f->len : 1);
    memcpy(out->body, f->data, f->len);
    out->len = f->len;
    out->csp = PAGE_CSP;
}

void page_register(transport_http_t *http)
{
    transport_http_route_open(http, "/static/", s_route, NULL);
    transport_http_route(http, "/", s_route, NULL);
}

char *page_url(const char *host, int port, bool https, const char *token)
{
    const char *h = host ? host : "127.0.0.1";
    bool v6 = strchr(h, ':') != NULL;
    /* A wildcard bind is reached through a real address: print loopback. */
    if (strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0) {
        h = v6 ? "::1" : "127.0.0.1";
    }
    /* Percent-encoded: a token may hold any byte but NUL. */
    char *enc = xmalloc(token ? strlen(token) * 3 + 1 : 1);
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)token; p && *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("-._~", *p))
            enc[n++] = (char)*p;
        else
            n += (size_t)sprintf(enc + n, "%%%02X", *p);
    }
    enc[n] = '\0';
    char *url = xasprintf("%s://%s%s%s:%d/%s%s", https ? "https" : "http", v6 ? "[" : "", h, v6 ? "]" : "", port,
                          token ? "?token=" : "", enc);
    free(enc);
    return url;
}
