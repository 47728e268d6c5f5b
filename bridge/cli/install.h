/* install: `rat-py install` / `rat-py uninstall`: registers rat-py with
 * mcp2cli (github.com/MaximeRivest/mcp2cli) so that `mcp2cli py up` and
 * `py run 'x = 42'` work.
 *
 * With `mcp2cli` on PATH it runs exactly what mcp2cli's own docs say:
 *     mcp2cli rm NAME            (failure ignored: it may not be registered)
 *     mcp2cli add NAME '<absolute path of rat-py> --cwd DIR' --as NAME
 * Without it, it does what those commands would: merges the entry into
 * ${XDG_CONFIG_HOME:-~/.config}/mcp2cli/config.yaml (other servers,
 * comments and formatting kept; see yaml_block.h) and creates the command
 * ${XDG_DATA_HOME:-~/.local/share}/mcp2cli/bin/NAME, then says how to put
 * that folder on PATH when it is not. Both commands are idempotent. Output
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
/* mcp2cli's global config file and shim folder. Caller owns them. */
char *install_mcp2cli_config_path(void);
char *install_mcp2cli_bin_dir(void);

#endif
