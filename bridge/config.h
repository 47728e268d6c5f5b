/* config: command line -> an immutable configuration. */
#ifndef RAT_CONFIG_H
#define RAT_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#define CONFIG_MAX_ORIGINS 16

typedef enum {
    CONFIG_CMD_SERVE,     /* the MCP server (default) */
    CONFIG_CMD_KERNELS,   /* list kernelspecs */
    CONFIG_CMD_HELP,
    CONFIG_CMD_VERSION,
} config_cmd_t;

typedef struct {
    config_cmd_t cmd;
    const char *cwd;          /* --cwd (borrowed from argv) */
    const char *kernel;       /* --kernel; NULL = python3 */
    const char *python;       /* --python */
    const char *venv;         /* --venv */
    const char *existing;     /* --existing */
    bool allow_restart;       /* --allow-restart */
    bool spare;               /* --spare */
    const char *assets_dir;   /* --assets-dir */
    int boot_timeout_s;       /* --boot-timeout */
    const char *log_level;    /* --log-level */
    long assets_max_mb;       /* --assets-max-mb; 0 = default */
    /* HTTP (--http) */
    bool http;
    const char *host;         /* --host */
    int port;                 /* --port (-1: default 8000) */
    const char *token;        /* --token, else $RAT_PY_TOKEN */
    bool insecure_no_token;   /* --insecure-no-token */
    const char *allow_origins[CONFIG_MAX_ORIGINS + 1]; /* --allow-origin, NULL-terminated */
    int norigins;
} config_t;

/* Parses argv. Returns 0, or -1 after writing a message to stderr
 * (exit status 2: usage error). */
int config_parse(config_t *cfg, int argc, char **argv);
void config_usage(FILE *out);
/* The value of option `name` at argv[*i] ("--name VALUE" or "--name=VALUE"),
 * advancing *i past it; NULL when argv[*i] is another option, or when the
 * value is missing (then *missing is set). Shared by every subcommand. */
const char *config_opt_value(int argc, char **argv, int *i, const char *name, bool *missing);

#endif
