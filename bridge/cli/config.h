/* config: command line -> an immutable configuration. */
#ifndef RAT_CONFIG_H
#define RAT_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "rat/rat.h"


typedef enum {
    CONFIG_CMD_SERVE,     /* the MCP server (default) */
    CONFIG_CMD_KERNELS,   /* list kernelspecs */
    CONFIG_CMD_HELP,
    CONFIG_CMD_VERSION,
} config_cmd_t;

/* The command line: what to do, and for serving, the library's own options
 * (include/rat/rat.h) with strings borrowed from argv, checked by the same
 * rat_options_check a library caller gets. */
typedef struct {
    config_cmd_t cmd;
    bool http;                /* --http: Streamable HTTP instead of stdio */
    rat_options_t opts;
    const char **origins;     /* owned array (strings borrowed): --allow-origin, NULL-terminated;
                               * opts.allow_origins points here */
    int sub_at;               /* argv index of a subcommand (config_is_subcommand) given after
                               * options, e.g. `rat-py --gateway URL doctor`; 0: none. Parsing
                               * stopped there and nothing was checked. */
    /* Secrets never stay borrowed from argv: --token and --gateway-token
     * are copied here and their text in argv overwritten (so that
     * /proc/PID/cmdline and ps no longer show it); --token-file and
     * --gateway-token-file are read here, once. opts.token and
     * opts.gateway_token point here; config_free wipes them. */
    char *token, *gateway_token;
    char *scrub[2];           /* their text in argv, overwritten when the parse is complete */
    const char *scrub_opt[2];
    int nscrub;
} config_t;

/* Whether word is one of rat-py's subcommands: install, uninstall, doctor, kernels. */
bool config_is_subcommand(const char *word);

/* Parses argv (the syntax: known options, values, numbers; options that
 * need --http), then checks the options with rat_options_check. A bare word
 * that names a subcommand stops the parse (cfg->sub_at; an option's value
 * is never taken for one). Returns 0,
 * or -1 after writing a message to stderr (exit status 2: usage error).
 * Free with config_free either way. */
int config_parse(config_t *cfg, int argc, char **argv);
/* Reads a secret from a file (a token): the first line, without its line
 * break and surrounding blanks; at most 4 KiB; empty, unreadable or binary
 * is an error. Returns it (caller frees, after wiping), or NULL with a
 * sentence in err naming the option. */
char *config_read_secret(const char *option, const char *path, char *err, size_t errlen);
void config_free(config_t *cfg);
void config_usage(FILE *out);
/* The value of option `name` at argv[*i] ("--name VALUE" or "--name=VALUE"),
 * advancing *i past it; NULL when argv[*i] is another option, or when the
 * value is missing (then *missing is set). Shared by every subcommand. */
const char *config_opt_value(int argc, char **argv, int *i, const char *name, bool *missing);

#endif
