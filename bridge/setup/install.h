/* install: `rat-py install` / `rat-py uninstall`: registers rat-py with the
 * terminal clients that turn it into the `py` command: mcptocli and mcp2cli,
 * its name before (github.com/MaximeRivest/mcp2cli), so that `py up` starts
 * it and `py run 'x = 42'` runs code.
 *
 * Where: the clients named with --client, else every client that is there
 * (its program on PATH or in the usual install folders, or its config
 * folder), else mcptocli. For each:
 *   - with its program on PATH, exactly what its own docs say:
 *         CLIENT rm NAME             (when NAME is registered)
 *         CLIENT add NAME '<absolute path of rat-py> --cwd DIR' --as NAME
 *   - without, what those commands would do: the entry merged into
 *     ${XDG_CONFIG_HOME:-~/.config}/CLIENT/config.yaml (other servers,
 *     comments and formatting kept; see yaml_block.h) and the command
 *     ${XDG_DATA_HOME:-~/.local/share}/CLIENT/bin/NAME (a symlink to the
 *     program, or a wrapper that runs it from PATH once it is installed);
 *   - then the client's cached tool schemas for NAME are dropped (both
 *     clients call tools with the cached schema, never asking again).
 * A NAME registered for another program is never replaced. Uninstall
 * removes NAME from every client (or those named) where it runs a rat-py
 * program, with its commands, cache and a `py up` process still running,
 * and leaves other programs' entries alone. Both are idempotent. Output
 * goes to stdout (this is not the MCP server path). */
#ifndef RAT_INSTALL_H
#define RAT_INSTALL_H

#include "family.h"

/* argv[0] is the subcommand ("install" or "uninstall"); self is the path
 * rat-py was invoked as (main's argv[0]). Returns the exit status. */
int install_main(int argc, char **argv, const char *self, const family_t *fam);
int install_uninstall_main(int argc, char **argv, const char *self, const family_t *fam);

/* The absolute path of the running program as invoked (a family symlink such
 * as rat-r stays rat-r: it is not resolved). Caller owns it; NULL if unknown. */
char *install_self_path(const char *argv0);
#endif
