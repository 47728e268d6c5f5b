/* config: command line -> an immutable configuration. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

void config_usage(FILE *out)
{
    fputs("Usage: rat-py [OPTIONS]          serve a Jupyter kernel over MCP on stdin/stdout\n"
          "       rat-py --http [OPTIONS]   serve it over Streamable HTTP instead\n"
          "       rat-py kernels            list the kernelspecs rat-py can launch\n"
          "       rat-py install [--name py] [--cwd DIR] [--kernel NAME] [--venv DIR] [--python PATH]\n"
          "                      [--client mcptocli|mcp2cli]\n"
          "                                 register with mcptocli / mcp2cli (then: py up; py run 'x = 1')\n"
          "       rat-py uninstall [--name py] [--client C]  remove that registration\n"
          "       rat-py doctor [OPTIONS]   check that rat-py works here (exit status 1 if not)\n"
          "       rat-py --help | --version\n"
          "\n"
          "rat-py starts a kernel (python3 by default) and answers MCP requests with three\n"
          "tools: run (execute code, answer input()), look (variables, inspect, complete)\n"
          "and ctl (reset, cancel, restart, status, wait). stdout carries MCP messages\n"
          "only; diagnostics go to stderr.\n"
          "\n"
          "Options:\n"
          "  --cwd DIR            working directory of the kernel (default: the MCP client's first\n"
          "                       root, else the current one)\n"
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
          "Kernels on a Jupyter Server or Enterprise Gateway (instead of this machine):\n"
          "  --gateway URL        start the kernel there (default: $JUPYTER_GATEWAY_URL);\n"
          "                       --kernel names its kernelspec there, --existing ID attaches\n"
          "                       to a kernel there and leaves it running\n"
          "  --gateway-token T    send \"Authorization: token T\" (default:\n"
          "                       $JUPYTER_GATEWAY_AUTH_TOKEN)\n"
          "  --gateway-ca FILE    verify an https gateway with this CA bundle (PEM)\n"
          "  --gateway-insecure   do not verify an https gateway's certificate (testing only)\n"
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

/* A whole decimal number in [lo, hi]. */
static bool s_number(const char *v, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || !end || *end || errno == ERANGE || n < lo || n > hi)
        return false;
    *out = n;
    return true;
}

bool config_is_subcommand(const char *word)
{
    static const char *const subs[] = {"install", "uninstall", "doctor", "kernels"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(word, subs[i]) == 0)
            return true;
    return false;
}

void config_free(config_t *cfg)
{
    free(cfg->origins);
    cfg->origins = NULL;
    cfg->opts.allow_origins = NULL;
}

int config_parse(config_t *cfg, int argc, char **argv)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->cmd = CONFIG_CMD_SERVE;
    rat_options_t *o = &cfg->opts;
    rat_options_init(o);
    cfg->origins = xcalloc((size_t)argc + 1, sizeof *cfg->origins);
    size_t norigins = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v;
        bool missing = false;
        long n;
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
            o->allow_restart = true;
            continue;
        }
        if (strcmp(a, "--spare") == 0) {
            o->spare = true;
            continue;
        }
        if (strcmp(a, "--http") == 0) {
            cfg->http = true;
            continue;
        }
        if (strcmp(a, "--gateway-insecure") == 0) {
            o->gateway_insecure = true;
            continue;
        }
        if (strcmp(a, "--insecure-no-token") == 0) {
            o->insecure_no_token = true;
            continue;
        }
        if ((v = config_opt_value(argc, argv, &i, "--allow-origin", &missing)) != NULL) {
            cfg->origins[norigins++] = v; /* how many is rat_options_check's to say */
            continue;
        }
        if (missing)
            goto missing;
        /* Numbers: only their syntax here (and that they fit the field);
         * their ranges are rat_options_check's, as for a library caller. */
        if ((v = config_opt_value(argc, argv, &i, "--port", &missing)) != NULL) {
            if (!s_number(v, 0, INT_MAX, &n)) {
                fprintf(stderr, "rat-py: --port needs a port number, not '%s'\n", v);
                return -1;
            }
            o->port = (int)n;
            continue;
        }
        if (missing)
            goto missing;
        if ((v = config_opt_value(argc, argv, &i, "--assets-max-mb", &missing)) != NULL) {
            if (!s_number(v, 1, LONG_MAX, &n)) {
                fprintf(stderr, "rat-py: --assets-max-mb needs a positive number of megabytes, not '%s'\n", v);
                return -1;
            }
            o->assets_max_mb = n;
            continue;
        }
        if (missing)
            goto missing;
        if ((v = config_opt_value(argc, argv, &i, "--boot-timeout", &missing)) != NULL) {
            if (!s_number(v, 1, INT_MAX, &n)) {
                fprintf(stderr, "rat-py: --boot-timeout needs a positive number of seconds, not '%s'\n", v);
                return -1;
            }
            o->boot_timeout_s = (int)n;
            continue;
        }
        if (missing)
            goto missing;
#define OPT(name, field)                                          \
    if ((v = config_opt_value(argc, argv, &i, name, &missing)) != NULL) { \
        o->field = v;                                             \
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
        OPT("--gateway-token", gateway_token)
        OPT("--gateway-ca", gateway_ca)
        OPT("--gateway", gateway)
#undef OPT
        if (config_is_subcommand(a)) {
            /* `rat-py --gateway URL doctor`: the caller moves it first. */
            cfg->sub_at = i;
            return 0;
        }
        fprintf(stderr, "rat-py: unknown option '%s' (see rat-py --help)\n", a);
        return -1;
missing:
        fprintf(stderr, "rat-py: option '%s' needs a value (see rat-py --help)\n", a);
        return -1;
    }
    o->allow_origins = norigins ? cfg->origins : NULL;
    if (!cfg->http && (o->host || o->port >= 0 || o->token || norigins || o->insecure_no_token)) {
        fprintf(stderr, "rat-py: --host, --port, --token, --allow-origin and --insecure-no-token need --http\n");
        return -1;
    }
    if (cfg->http && !o->token && getenv("RAT_PY_TOKEN") && *getenv("RAT_PY_TOKEN"))
        o->token = getenv("RAT_PY_TOKEN");
    /* Jupyter's own gateway client's variables, unless a local kernel was asked for. */
    const char *gu = getenv("JUPYTER_GATEWAY_URL");
    if (!o->gateway && gu && *gu && !o->python && !o->venv && !o->spare)
        o->gateway = gu;
    const char *gt = getenv("JUPYTER_GATEWAY_AUTH_TOKEN");
    if (o->gateway && !o->gateway_token && gt && *gt)
        o->gateway_token = gt;
    char err[512];
    if (rat_options_check(o, err, sizeof err) < 0) {
        fprintf(stderr, "rat-py: %s\n", err);
        return -1;
    }
    return 0;
}
