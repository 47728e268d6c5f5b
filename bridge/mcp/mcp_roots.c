/* mcp_roots: roots/list answers made into a local directory. See mcp_roots.h. */
#include "mcp_roots.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "fileio.h"
#include "mem.h"
#include "utf8.h"

#define SHOW_MAX 160          /* bytes of a URI shown */
#define PROBLEMS_MAX 2048     /* bytes of the problems text */

char *mcp_roots_show(const char *uri, size_t len)
{
    buf_t b;
    buf_init(&b, 0);
    size_t i = 0;
    while (i < len && b.len < SHOW_MAX) {
        size_t n = utf8_valid_char(uri + i, len - i);
        if (n == 0 || (n == 1 && ((unsigned char)uri[i] < 0x20 || uri[i] == 0x7f))) {
            buf_putc(&b, '?');
            i++;
            continue;
        }
        buf_append(&b, uri + i, n);
        i += n;
    }
    if (i < len)
        buf_puts(&b, "\xe2\x80\xa6"); /* … */
    return buf_take(&b);
}

static int s_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *mcp_roots_file_path(const char *uri, size_t len, char *err, size_t errlen)
{
    if (len > MCP_ROOTS_URI_MAX) {
        snprintf(err, errlen, "is longer than %d bytes", MCP_ROOTS_URI_MAX);
        return NULL;
    }
    if (memchr(uri, '\0', len)) {
        snprintf(err, errlen, "contains a NUL character");
        return NULL;
    }
    if (len < 5 || strncasecmp(uri, "file:", 5) != 0) {
        snprintf(err, errlen, "is not a file: URI (only a directory on this machine can be used)");
        return NULL;
    }
    const char *p = uri + 5, *end = uri + len;
    if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
        const char *host = p + 2, *slash = memchr(host, '/', (size_t)(end - host));
        const char *host_end = slash ? slash : end;
        size_t hl = (size_t)(host_end - host);
        if (hl && !(hl == 9 && strncasecmp(host, "localhost", 9) == 0)) {
            char *shown = mcp_roots_show(host, hl);
            snprintf(err, errlen, "names the host '%s': only a directory on this machine can be used", shown);
            free(shown);
            return NULL;
        }
        p = host_end;
    }
    if (p == end || *p != '/') {
        snprintf(err, errlen, "has no absolute path");
        return NULL;
    }
    if (memchr(p, '?', (size_t)(end - p)) || memchr(p, '#', (size_t)(end - p))) {
        snprintf(err, errlen, "has a query or a fragment (a root names a directory, nothing more)");
        return NULL;
    }
    buf_t b;
    buf_init(&b, 0);
    for (; p < end; p++) {
        char c = *p;
        if (c == '%') {
            int hi = -1;
            if (end - p >= 3) {
                hi = s_hex(p[1]);
                int lo = s_hex(p[2]);
                hi = hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
            }
            if (hi < 0) {
                snprintf(err, errlen, "has a '%%' that is not followed by two hex digits");
                buf_free(&b);
                return NULL;
            }
            if (hi == 0) {
                snprintf(err, errlen, "encodes a NUL character (%%00)");
                buf_free(&b);
                return NULL;
            }
            c = (char)hi;
            p += 2;
        }
        buf_putc(&b, c);
        if (b.len >= PATH_MAX) {
            snprintf(err, errlen, "names a path longer than %d bytes", PATH_MAX - 1);
            buf_free(&b);
            return NULL;
        }
    }
    if (utf8_valid_prefix(b.data, b.len) != b.len) {
        snprintf(err, errlen, "names a path that is not valid UTF-8");
        buf_free(&b);
        return NULL;
    }
    for (size_t i = 0; i < b.len; i++) {
        if ((unsigned char)b.data[i] < 0x20 || b.data[i] == 0x7f) {
            snprintf(err, errlen, "names a path with a control character");
            buf_free(&b);
            return NULL;
        }
    }
    return buf_take(&b);
}

void mcp_roots_pick_free(mcp_roots_pick_t *p)
{
    free(p->dir);
    free(p->uri);
    free(p->problems);
    memset(p, 0, sizeof *p);
}

static void s_problem(buf_t *b, const char *fmt, const char *shown, const char *why)
{
    if (b->len >= PROBLEMS_MAX)
        return;
    if (b->len)
        buf_puts(b, "; ");
    buf_printf(b, fmt, shown, why);
    if (b->len >= PROBLEMS_MAX)
        buf_puts(b, "; \xe2\x80\xa6");
}

int mcp_roots_pick(json_object *result, mcp_roots_pick_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_object *roots = NULL;
    if (!json_object_is_type(result, json_type_object) || !json_object_object_get_ex(result, "roots", &roots) ||
        !json_object_is_type(roots, json_type_array)) {
        snprintf(err, errlen, "the client's answer to roots/list has no \"roots\" array");
        return -1;
    }
    size_t n = json_object_array_length(roots);
    out->count = n;
    if (n == 0) {
        snprintf(err, errlen, "the client shares no roots");
        return -1;
    }
    buf_t problems;
    buf_init(&problems, 0);
    for (size_t i = 0; i < n && i < MCP_ROOTS_MAX_CHECKED; i++) {
        json_object *r = json_object_array_get_idx(roots, i), *u = NULL;
        if (!json_object_is_type(r, json_type_object) || !json_object_object_get_ex(r, "uri", &u) ||
            !json_object_is_type(u, json_type_string)) {
            char idx[32];
            snprintf(idx, sizeof idx, "%zu", i + 1);
            s_problem(&problems, "root %s %s", idx, "is not an object with a string \"uri\"");
            continue;
        }
        const char *uri = json_object_get_string(u);
        size_t ulen = (size_t)json_object_get_string_len(u);
        char why[300];
        char *shown = mcp_roots_show(uri, ulen);
        char *path = mcp_roots_file_path(uri, ulen, why, sizeof why);
        char *real = path ? fileio_realpath(path) : NULL;
        if (path && !real)
            snprintf(why, sizeof why, "is not a directory here (%s)", strerror(errno));
        else if (real && !fileio_is_dir(real))
            snprintf(why, sizeof why, "is not a directory");
        if (real && fileio_is_dir(real)) {
            out->dir = real;
            out->uri = shown;
            out->problems = problems.len ? buf_take(&problems) : NULL;
            buf_free(&problems);
            free(path);
            return 0;
        }
        s_problem(&problems, "%s %s", shown, why);
        free(real);
        free(path);
        free(shown);
    }
    if (n > MCP_ROOTS_MAX_CHECKED) {
        char more[64];
        snprintf(more, sizeof more, "%zu", n - MCP_ROOTS_MAX_CHECKED);
        s_problem(&problems, "and %s more roots not read (%s)", more, "only the first 64 are");
    }
    snprintf(err, errlen, "none of the client's %zu root%s is a directory on this machine: %s", n, n == 1 ? "" : "s",
             buf_str(&problems));
    buf_free(&problems);
    return -1;
}
