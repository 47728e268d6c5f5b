/* server: wires the loop, the runtime, the MCP server and a transport into
 * the rat-py process, and owns the orderly shutdown (stdin EOF or SIGTERM:
 * exit within 300 ms, kernel included). */
#ifndef RAT_SERVER_H
#define RAT_SERVER_H

#include <stdbool.h>

#include "rat/rat.h"

/* What the public API (rat_api.c) hands a run besides its options. */
typedef struct {
    int stop_fd;     /* once readable, the run ends as on SIGTERM; -1: none. Watched, never read here */
    char *why;       /* NULL, or receives why the run failed (what is also printed on stderr) */
    size_t whylen;
} server_ctl_t;

/* Runs the MCP server over stdio (until EOF) or Streamable HTTP (http),
 * until a termination signal or ctl->stop_fd. opts were checked by
 * rat_options_check and have their defaults filled in (rat_server_new).
 * Returns the process exit status. */
int server_run(const rat_options_t *cfg, bool http, const server_ctl_t *ctl);

#endif
