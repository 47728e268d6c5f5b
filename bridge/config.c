/* config: command line -> an immutable configuration. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

void config_usage(FILE *out)
{
    fputs("Usage: rat-py [OPTIONS]          serve a Jupyter kernel over MCP on stdin/stdout\n"
          "       rat-py --http [OPTIONS]   serve it over Streamable HTTP instead\n"
          "       rat-py kernels            list the kernelspecs rat-py can launch\n"
          "       rat-py install [--name py] [--cwd DIR] [--kernel NAME] [--venv DIR] [--python PATH]\n"
          "                                 register with mcp2cli (then: mcp2cli py up; py run 'x = 1')\n"
          "       rat-py uninstall [--name py]  remove that registration\n"
          "       rat-py doctor [OPTIONS]   check that rat-py works here (exit status 1 if not)\n"
          "       rat-py --help | --version\n"
          "\n"
          "rat-py starts a kernel (python3 by default) and answers MCP requests with three\n"
          "tools: run (execute code, answer input()), look (variables, inspect, complete)\n"
          "and ctl (reset, cancel, restart, status, wait). stdout carries MCP messages\n"
          "only; diagnostics go to stderr.\n"
          "\n"
          "Options:\n"
          "  --cwd DIR            working directory of the kernel (default: the current one)\n"
          "  --kernel NAME        kernelspec to launch (default: python3)\n"
          "  --python PATH        run the Python kernel with this interpreter (it needs ipykernel)\n"
          "  --venv DIR           run the Python kernel in this virtual environment\n"
          "                       (default: $VIRTUAL_ENV, else ./.venv in DIR or a parent, when\n"
          "                       it has ipykernel)\n"
          "  --existing FILE|NAME attach to a running kernel's connection file instead of\n"
          "                       starting one (it keeps running when rat-py exits)\n"
          "  --allow-restart      let ctl restart act on an --existing kernel\n"
          "  --assets-dir DIR     where full outputs are kept (default: <cwd>/.rat-assets)\n"
          "  --boot-timeout SEC   give up on a kernel not ready after SEC seconds (default: 60)\n"
          "  --spare              keep a second, warm kernel so ctl restart (and reset --scope\n"
          "                       all) swaps it in at once; costs a kernel's memory\n"
          "  --assets-max-mb N    keep at most N MB of saved outputs, oldest go first (default: 512)\n"
          "  --log-level LEVEL    stderr diagnostics: debug, info, warn (default), error, off\n"
          "\n"
          "Streamable HTTP (instead of stdio):\n"
          "  --http               serve MCP at http://HOST:PORT/mcp (and /health, /assets/ID)\n"
          "  --host ADDR          address to bind (default: 127.0.0.1)\n"
          "  --port N             port (default: 8000; 0 picks a free one, printed on stderr)\n"
          "  --token SECRET       require \"Authorization: Bearer SECRET\" (default: $RAT_PY_TOKEN)\n"
          "  --allow-origin URL   also accept browser requests from this Origin (repeatable;\n"
          "                       loopback origins are always accepted)\n"
          "  --insecure-no-token  allow a non-loopback --host without a token (anyone who can\n"
          "                       reach it can run code as you)\n"
          "  -h, --help           show this help\n"
          "  -V, --version        show the version\n"
          "\n"
          "Invoked as rat-r, rat-ju, rat-sh or rat-js (symlinks to rat-py), it runs the R,\n"
          "Julia, bash or JavaScript kernel instead, and install registers it as r, ju, sh or js.\n"
          "See rat-py(1).\n",
          out);
}

const char *config_opt_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

int config_parse(config_t *cfg, int argc, char **argv)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->cmd = CONFIG_CMD_SERVE;
    cfg->boot_timeout_s = 60;
    cfg->port = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v;
        bool missing = false;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cfg->cmd = CONFIG_CMD_HELP;
            return 0;
        }
        if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            cfg->cmd = CONFIG_CMD_VERSION;
            return 0;
        }
        if (i == 1 && strcmp(a, "kernels") == 0) {
            cfg->cmd = CONFIG_CMD_KERNELS;
            continue;
        }
        if (strcmp(a, "--allow-restart") == 0) {
            cfg->allow_restart = true;
            continue;
        }
        if (strcmp(a, "--spare") == 0) {
            cfg->spare = true;
            continue;
        }
        if (strcmp(a, "--http") == 0) {
            cfg->http = true;
            continue;
        }
        if (strcmp(a, "--insecure-no-token") == 0) {
            cfg->insecure_no_token = true;
            continue;
        }
        if ((v = config_opt_value(argc, argv, &i, "--allow-origin", &missing)) != NULL) {
            if (cfg->norigins >= CONFIG_MAX_ORIGINS) {
                fprintf(stderr, "rat-py: at most %d --allow-origin options\n", CONFIG_MAX_ORIGINS);
                return -1;
            }
            cfg->allow_origins[cfg->norigins++] = v;
            continue;
        }
        if (missing)
            goto missing;
        if ((v = config_opt_value(argc, argv, &i, "--port", &missing)) != NULL) {
            char *end = NULL;
            long p = strtol(v, &end, 10);
            if (!end || *end || p < 0 || p > 65535) {
                fprintf(stderr, "rat-py: --port needs a port number (0-65535), not '%s'\n", v);
                return -1;
            }
            cfg->port = (int)p;
            continue;
        }
        if (missing)
            goto missing;
        if ((v = config_opt_value(argc, argv, &i, "--assets-max-mb", &missing)) != NULL) {
            char *end = NULL;
            long mb = strtol(v, &end, 10);
            if (!end || *end || mb <= 0 || mb > (1L << 20)) {
                fprintf(stderr, "rat-py: --assets-max-mb needs a positive number of megabytes, not '%s'\n", v);
                return -1;
            }
            cfg->assets_max_mb = mb;
            continue;
        }
        if (missing)
            goto missing;
#define OPT(name, field)                                          \
    if ((v = config_opt_value(argc, argv, &i, name, &missing)) != NULL) { \
        cfg->field = v;                                           \
        continue;                                                 \
    }                                                             \
    if (missing)                                                  \
        goto missing;
        OPT("--cwd", cwd)
        OPT("--kernel", kernel)
        OPT("--python", python)
        OPT("--venv", venv)
        OPT("--existing", existing)
        OPT("--assets-dir", assets_dir)
        OPT("--log-level", log_level)
        OPT("--host", host)
        OPT("--token", token)
#undef OPT
        if ((v = config_opt_value(argc, argv, &i, "--boot-timeout", &missing)) != NULL) {
            char *end = NULL;
            long s = strtol(v, &end, 10);
            if (!end || *end || s <= 0 || s > 3600) {
                fprintf(stderr, "rat-py: --boot-timeout needs a number of seconds (1-3600), not '%s'\n", v);
                return -1;
            }
            cfg->boot_timeout_s = (int)s;
            continue;
        }
        if (missing)
            goto missing;
        fprintf(stderr, "rat-py: unknown option '%s' (see rat-py --help)\n", a);
        return -1;
missing:
        fprintf(stderr, "rat-py: option '%s' needs a value (see rat-py --help)\n", a);
        return -1;
    }
    if (cfg->log_level && log_level_parse(cfg->log_level) < 0) {
        fprintf(stderr, "rat-py: --log-level must be debug, info, warn, error or off, not '%s'\n", cfg->log_level);
        return -1;
    }
    if (cfg->existing && (cfg->kernel || cfg->python || cfg->venv)) {
        fprintf(stderr, "rat-py: --existing attaches to a running kernel; it cannot be combined with "
                        "--kernel, --python or --venv\n");
        return -1;
    }
    if (!cfg->http && (cfg->host || cfg->port >= 0 || cfg->token || cfg->norigins || cfg->insecure_no_token)) {
        fprintf(stderr, "rat-py: --host, --port, --token, --allow-origin and --insecure-no-token need --http\n");
        return -1;
    }
    if (cfg->http && !cfg->token && getenv("RAT_PY_TOKEN") && *getenv("RAT_PY_TOKEN"))
        cfg->token = getenv("RAT_PY_TOKEN");
    if (cfg->python && cfg->venv) {
        fprintf(stderr, "rat-py: give either --python or --venv, not both\n");
        return -1;
    }
    return 0;
}
