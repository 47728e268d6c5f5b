/* mcp_app: the MCP App's resources (see mcp_app.h). */
#include "mcp_app.h"

#include <string.h>

#include "page.h"

/* The embedded files (web/embed.mjs; no leading '/': never served over HTTP
 * by page.c). The markdown bundle is the page's own /static/md.js. */
#define APP_FILE "mcp-app/app.html"
#define MD_FILE "/static/md.js"

static void s_reply(mcp_call_t *call, const char *uri, const char *mime, const page_file_t *f, bool ui_meta)
{
    json_object *item = json_object_new_object();
    json_object_object_add(item, "uri", json_object_new_string(uri));
    json_object_object_add(item, "mimeType", json_object_new_string(mime));
    json_object_object_add(item, "text", json_object_new_string_len((const char *)f->data, (int)f->len));
    if (ui_meta) {
        /* Everything is inline: no origin to reach, load from, frame or use
         * as a base, and no device to use. The empty lists say so in the
         * terms a host audits (the spec's strict default CSP applies). */
        json_object *csp = json_object_new_object();
        static const char *const keys[] = {"connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            json_object_object_add(csp, keys[i], json_object_new_array());
        json_object *ui = json_object_new_object();
        json_object_object_add(ui, "csp", csp);
        json_object_object_add(ui, "permissions", json_object_new_object());
        json_object_object_add(ui, "prefersBorder", json_object_new_boolean(true));
        json_object *meta = json_object_new_object();
        json_object_object_add(meta, "ui", ui);
        json_object_object_add(item, "_meta", meta);
    }
    json_object *contents = json_object_new_array();
    json_object_array_add(contents, item);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "contents", contents);
    mcp_call_reply(call, res);
}

static void s_read_app(mcp_call_t *call, const char *uri, json_object *vars, void *ud)
{
    (void)vars;
    s_reply(call, uri, MCP_UI_MIME, ud, true);
}

static void s_read_md(mcp_call_t *call, const char *uri, json_object *vars, void *ud)
{
    (void)vars;
    s_reply(call, uri, "text/javascript", ud, false);
}

bool mcp_app_register(mcp_server_t *srv)
{
    const page_file_t *app = page_file(APP_FILE), *md = page_file(MD_FILE);
    if (!app || !md)
        return false;
    mcp_server_add_ui_resource(srv, MCP_APP_URI, "rat-py-cell", "rat-py cell",
                               "A run as a notebook cell (its code, outputs, plots, tables, traceback; re-run, "
                               "cancel, answer input()), and the kernel's variables with drill-down",
                               MCP_UI_MIME, s_read_app, (void *)app);
    mcp_server_add_ui_resource(srv, MCP_APP_MD_URI, "rat-py-markdown", "rat-py markdown renderer",
                               "The app's markdown and LaTeX renderer (markdown-it, KaTeX, DOMPurify), read on first use",
                               "text/javascript", s_read_md, (void *)md);
    mcp_server_set_tool_ui(srv, "run", MCP_APP_URI);
    mcp_server_set_tool_ui(srv, "look", MCP_APP_URI);
    return true;
}
