/* config: command line -> an immutable configuration. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sodium.h>

#include "fileio.h"
#include "mem.h"

#define SECRET_FILE_MAX 4096

void config_usage(FILE *out)
{
    fputs("Usage: rat-py [OPTIONS]          serve a Jupyter kernel over MCP on stdin/stdout\n"
          "       rat-py --http [OPTIONS]   serve it over Streamable HTTP instead\n"
          "       rat-py kernels            list the kernelspecs rat-py can launch\n"
          "       rat-py install [--name py] [--cwd DIR] [--kernel NAME] [--venv DIR] [--python PATH]\n"
          "                      [--kernelspec-dir DIR] [--client mcptocli|mcp2cli]\n"
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
          "  --kernelspec-dir DIR launch that Python with the kernel.json in DIR, a changed copy\n"
          "                       of rat-py's kernelspec (argv, env, interrupt_mode; {python} is\n"
          "                       the interpreter), instead of the built-in one\n"
          "  --existing FILE|NAME attach to a running kernel's connection file instead of\n"
          "                       starting one (it keeps running when rat-py exits)\n"
          "  --allow-restart      let ctl restart act on an --existing kernel\n"
          "  --assets-dir DIR     where full outputs are kept (default: <cwd>/.rat-assets)\n"
          "  --boot-timeout SEC   give up on a kernel not ready after SEC seconds (default: 60)\n"
          "  --shell-timeout SEC  say the kernel is not answering when it has not taken a run\n"
          "                       for SEC seconds while not busy (default: 30)\n"
          "  --spare              keep a second, warm kernel so ctl restart (and reset --scope\n"
          "                       all) swaps it in at once; costs a kernel's memory\n"
          "  --assets-max-mb N    keep at most N MB of saved outputs, oldest go first (default: 512)\n"
          "  --log-level LEVEL    stderr diagnostics: debug, info, warn (default), error, off\n"
          "\n"
          "Kernels on a Jupyter Server or Enterprise Gateway (instead of this machine):\n"
          "  --gateway URL        start the kernel there (default: $JUPYTER_GATEWAY_URL);\n"
          "                       --kernel names its kernelspec there, --existing ID attaches\n"
          "                       to a kernel there and leaves it running\n"
          "  --gateway-token-file FILE  send \"Authorization: token T\", T read from FILE\n"
          "                       (default: $JUPYTER_GATEWAY_AUTH_TOKEN; --gateway-token T\n"
          "                       also works, but other users can read a command line)\n"
          "  --gateway-ca FILE    verify an https gateway with this CA bundle (PEM)\n"
          "  --gateway-insecure   do not verify an https gateway's certificate (testing only)\n"
          "\n"
          "Streamable HTTP (instead of stdio):\n"
          "  --http               serve MCP at http://HOST:PORT/mcp (and /health, /assets/ID, the\n"
          "                       notebook page at /; https:// with --tls-cert and --tls-key)\n"
          "  --host ADDR          address to bind (default: 127.0.0.1)\n"
          "  --port N             port (default: 8000; 0 picks a free one, printed on stderr)\n"
          "  --token-file FILE    require \"Authorization: Bearer SECRET\", SECRET read from FILE\n"
          "                       (default: $RAT_PY_TOKEN; --token SECRET also works, but\n"
          "                       other users can read a command line)\n"
          "  --tls-cert FILE      serve HTTPS with this certificate (PEM, its chain after it;\n"
          "                       default: $RAT_PY_TLS_CERT) ...\n"
          "  --tls-key FILE       ... and its unencrypted private key (PEM; default: $RAT_PY_TLS_KEY)\n"
          "  --unsent-max-mb N    all event streams together keep at most N MB unsent; past it\n"
          "                       the slowest loses its oldest notifications first (default: 64)\n"
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

static void s_wipe(char **p)
{
    if (*p) {
        sodium_memzero(*p, strlen(*p));
        free(*p);
        *p = NULL;
    }
}

void config_free(config_t *cfg)
{
    free(cfg->origins);
    cfg->origins = NULL;
    cfg->opts.allow_origins = NULL;
    s_wipe(&cfg->token);
    s_wipe(&cfg->gateway_token);
    cfg->opts.token = cfg->opts.gateway_token = NULL;
}

char *config_read_secret(const char *option, const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char *text = fileio_read(path, SECRET_FILE_MAX, &len);
    if (!text) {
        snprintf(err, errlen, "%s %s: %s", option, path,
                 errno == EFBIG ? "longer than 4096 bytes: not a token file" : fileio_strerror(errno));
        return NULL;
    }
    char *s = text;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strcspn(s, "\r\n");
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    bool printable = n > 0;
    for (size_t i = 0; i < n && printable; i++)
        printable = (unsigned char)s[i] > 0x20 && (unsigned char)s[i] < 0x7f;
    char *secret = printable ? xstrndup(s, n) : NULL;
    sodium_memzero(text, len);
    free(text);
    if (!secret) {
        snprintf(err, errlen, "%s %s: %s", option, path,
                 n == 0 ? "the file is empty (the token is its first line)"
                        : "the token must be printable ASCII without spaces");
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077))
        fprintf(stderr, "rat-py: warning: %s %s can be read by other users (mode %03o); chmod 600 it\n", option,
                path, (unsigned)(st.st_mode & 0777));
    return secret;
}

/* The secrets given on the command line, overwritten in argv once the
 * parse is complete (config_parse's end): /proc/PID/cmdline (mode 0444)
 * and ps show `--token ********` from then on. Other users could read them
 * between exec and that point, and the shell's history keeps them: hence
 * the warning. Not before the parse is complete: a subcommand given after
 * the options (`rat-py --gateway-token T doctor`) is parsed again from the
 * same strings. */
static void s_scrub(config_t *cfg)
{
    for (int k = 0; k < cfg->nscrub; k++) {
        memset(cfg->scrub[k], '*', strlen(cfg->scrub[k]));
        bool http = strcmp(cfg->scrub_opt[k], "--token") == 0;
        fprintf(stderr, "rat-py: warning: %s on the command line can be read by other users of this machine (ps, "
                        "/proc/PID/cmdline) until rat-py has started, and stays in your shell history; give it in "
                        "%s or with %s-file FILE instead\n",
                cfg->scrub_opt[k], http ? "RAT_PY_TOKEN" : "JUPYTER_GATEWAY_AUTH_TOKEN", cfg->scrub_opt[k]);
    }
    cfg->nscrub = 0;
}

/* base ("--token") or base-file at argv[*i]: the secret into *slot (at most
 * one of the two, once). Returns 1 when taken, 0 when argv[*i] is neither
 * (or its value is missing: *missing), -1 after an error on stderr. */
static int s_secret(config_t *cfg, int argc, char **argv, int *i, const char *base, char **slot, bool *missing)
{
    char file_opt[64];
    snprintf(file_opt, sizeof file_opt, "%s-file", base);
    const char *v = config_opt_value(argc, argv, i, file_opt, missing);
    bool from_file = v != NULL;
    if (!v && !*missing)
        v = config_opt_value(argc, argv, i, base, missing);
    if (!v)
        return 0;
    if (*slot) {
        fprintf(stderr, "rat-py: give one of %s and %s, once\n", base, file_opt);
        return -1;
    }
    char err[512];
    *slot = from_file ? config_read_secret(file_opt, v, err, sizeof err) : xstrdup(v);
    if (!from_file && cfg->nscrub < 2) {
        cfg->scrub[cfg->nscrub] = (char *)v; /* overwritten at the end of the parse */
        cfg->scrub_opt[cfg->nscrub++] = base;
    }
    if (!*slot) {
        fprintf(stderr, "rat-py: %s\n", err);
        return -1;
    }
    return 1;
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
        if ((v = config_opt_value(argc, argv, &i, "--unsent-max-mb", &missing)) != NULL) {
            if (!s_number(v, 1, LONG_MAX, &n)) {
                fprintf(stderr, "rat-py: --unsent-max-mb needs a positive number of megabytes, not '%s'\n", v);
                return -1;
            }
            o->unsent_max_mb = n;
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
        if ((v = config_opt_value(argc, argv, &i, "--shell-timeout", &missing)) != NULL) {
            if (!s_number(v, 1, RAT_MAX_SHELL_TIMEOUT_S, &n)) {
                fprintf(stderr, "rat-py: --shell-timeout needs 1-%d seconds, not '%s'\n", RAT_MAX_SHELL_TIMEOUT_S, v);
                return -1;
            }
            o->shell_timeout_s = (int)n;
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
        OPT("--kernelspec-dir", kernelspec_dir)
        OPT("--existing", existing)
        OPT("--assets-dir", assets_dir)
        OPT("--log-level", log_level)
        OPT("--host", host)
        OPT("--gateway-ca", gateway_ca)
        OPT("--gateway", gateway)
        OPT("--tls-cert", tls_cert)
        OPT("--tls-key", tls_key)
#undef OPT
        int r;
        if ((r = s_secret(cfg, argc, argv, &i, "--token", &cfg->token, &missing)) != 0 ||
            (r = s_secret(cfg, argc, argv, &i, "--gateway-token", &cfg->gateway_token, &missing)) != 0) {
            if (r < 0)
                return -1;
            o->token = cfg->token;
            o->gateway_token = cfg->gateway_token;
            continue;
        }
        if (missing)
            goto missing;
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
    if (!cfg->http && (o->host || o->port >= 0 || o->token || norigins || o->insecure_no_token || o->tls_cert ||
                       o->tls_key)) {
        fprintf(stderr, "rat-py: --host, --port, --token, --allow-origin, --insecure-no-token, --tls-cert and "
                        "--tls-key need --http\n");
        return -1;
    }
    if (cfg->http && !o->token && getenv("RAT_PY_TOKEN") && *getenv("RAT_PY_TOKEN"))
        o->token = getenv("RAT_PY_TOKEN");
    /* The pair from the environment only when neither was given. */
    const char *ec = getenv("RAT_PY_TLS_CERT"), *ek = getenv("RAT_PY_TLS_KEY");
    if (cfg->http && !o->tls_cert && !o->tls_key && ec && *ec && ek && *ek) {
        o->tls_cert = ec;
        o->tls_key = ek;
    }
    /* Jupyter's own gateway client's variables, unless a local kernel was asked for. */
    const char *gu = getenv("JUPYTER_GATEWAY_URL");
    if (!o->gateway && gu && *gu && !o->python && !o->venv && !o->kernelspec_dir && !o->spare)
        o->gateway = gu;
    const char *gt = getenv("JUPYTER_GATEWAY_AUTH_TOKEN");
    if (o->gateway && !o->gateway_token && gt && *gt)
        o->gateway_token = gt;
    char err[512];
    if (rat_options_check(o, err, sizeof err) < 0) {
        fprintf(stderr, "rat-py: %s\n", err);
        return -1;
    }
    s_scrub(cfg);
    return 0;
}
