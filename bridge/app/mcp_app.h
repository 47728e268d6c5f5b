/* mcp_app: rat-py's results as an MCP App (SEP-1865, doc/apps.md). To a
 * client that declares the io.modelcontextprotocol/ui extension, `run` and
 * `look` name ui://rat-py/app.html, a self-contained page (web/src/app/,
 * built into the binary with the notebook page) that renders a call's input
 * and result in the host's sandboxed frame, and ui://rat-py/md.js, the
 * page's markdown and LaTeX renderer, which the app reads on first use.
 * Any other client sees neither. */
#ifndef RAT_MCP_APP_H
#define RAT_MCP_APP_H

#include <stdbool.h>

#include "mcp.h"

#define MCP_APP_URI "ui://rat-py/app.html"
#define MCP_APP_MD_URI "ui://rat-py/md.js"

/* Registers the resources and links run and look to them (call after the
 * tools are registered). False, and nothing registered, when this build has
 * no page (no node/npm at build time). */
bool mcp_app_register(mcp_server_t *srv);

#endif
