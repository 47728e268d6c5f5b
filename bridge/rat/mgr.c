/* mgr: the `rat` commands (see mgr.h and doc/rat.md). Status lines go to
 * stderr and errors are `rat: ...` with exit status 1, as the Go CLI's. */
#include "mgr.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "buf.h"
#include "config.h"
#include "doctor.h"
#include "family.h"
#include "fileio.h"
#include "interp.h"
#include "mem.h"
#include "mgr_client.h"
#include "mgr_daemon.h"
#include "mgr_names.h"
#include "mgr_repl.h"
#include "mgr_state.h"

#define ERR_MAX 2048

bool mgr_is_manager(const char *argv0)
{
    const char *base = argv0 ? strrchr(argv0, '/') : NULL;
    base = base ? base + 1 : argv0;
    return base && strcmp(base, "rat") == 0;
}

static void s_usage(FILE *out)
{
    fputs("Usage: rat COMMAND [ARGS]         manage named runtimes: each a rat-py --http server\n"
          "                                  with its own kernel on its own port\n"
          "  rat NAME                        a REPL on NAME's kernel (started if needed)\n"
          "  rat start NAME                  start NAME (prints NAME started on http://127.0.0.1:PORT/mcp)\n"
          "  rat stop NAME | --all           stop it (its entry stays, marked stopped)\n"
          "  rat restart NAME                a fresh server and kernel\n"
          "  rat cancel NAME                 interrupt the code NAME is running\n"
          "  rat status | ls [--json]        the runtimes and their state\n"
          "  rat add NAME [DIR] [--lang L] [--cwd DIR] [--venv DIR] [--runtime PYTHON] [--env K=V]\n"
          "                                  save a runtime (the language comes from the name: py-ml is py)\n"
          "  rat remove NAME [--yes] | --all [--yes]\n"
          "                                  stop NAME and delete it from the state (asks first)\n"
          "  rat install LANG                check that `rat start` works for LANG here; say the fix if not\n"
          "  rat resolve X [--json] [--include-env]\n"
          "                                  what X names (without starting anything)\n"
          "  rat doctor [LANG]               rat-py's checks for LANG's kernel in this folder\n"
          "  rat version | --version\n"
          "\n"
          "NAME: a saved or started runtime (py@proj, py-global, py-ml), a language (py, r, jl, js, sh:\n"
          "LANG@<this project>), a unique prefix, or X.2 for a second instance. State:\n"
          "$XDG_CONFIG_HOME/rat/state.yaml (~/.config/rat), shared with the Go rat CLI and\n"
          "vscode-rat; logs in logs/NAME.log beside it. See doc/rat.md.\n",
          out);
}

static int s_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int s_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("rat: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* A server rat may not signal (mgr_daemon_stop refused): why, and what
 * the user can do. Returns 1. */
static int s_not_stopped(const mgr_kernel_t *k, const char *why)
{
    return s_fail("not stopping %s: %s. If `ps -o pid,lstart,args -p %ld` shows its server, stop it yourself "
                  "(kill %ld); rat then marks it stopped. A server rat-py starts records its identity, so this "
                  "happens only to entries rat-py did not write.",
                  k->name, why, k->pid, k->pid);
}

static char *s_cwd(void)
{
    char buf[PATH_MAX];
    if (getcwd(buf, sizeof buf))
        return xstrdup(buf);
    const char *pwd = getenv("PWD");
    return xstrdup(pwd && *pwd == '/' ? pwd : "/");
}

/* "~/x" for paths under $HOME (messages only). Caller owns. */
static char *s_short(const char *p)
{
    const char *home = getenv("HOME");
    size_t hl = home ? strlen(home) : 0;
    if (p && hl > 1 && strncmp(p, home, hl) == 0 && (p[hl] == '/' || !p[hl]))
        return xasprintf("~%s", p + hl);
    return xstrdup(p ? p : "");
}

/* Opens the state and resolves input; NULL on error (reported). */
static mgr_state_t *s_resolve(const char *input, mgr_resolved_t *r)
{
    char err[ERR_MAX];
    mgr_state_t *st = mgr_state_open(err, sizeof err);
    if (!st) {
        s_fail("%s", err);
        return NULL;
    }
    char *cwd = s_cwd();
    int rc = mgr_names_resolve(st, input, cwd, r, err, sizeof err);
    free(cwd);
    if (rc < 0) {
        s_fail("%s", err);
        mgr_state_close(&st);
        return NULL;
    }
    return st;
}

/* Starts r's server; prints the Go CLI's line unless quiet_when_running
 * and it was running. Returns the exit status; *port_out may be NULL. */
static int s_ensure(mgr_state_t **st, const mgr_resolved_t *r, const char *verb, bool quiet_when_running,
                    long *port_out)
{
    char err[ERR_MAX];
    long port = 0, pid = 0;
    mgr_start_t how;
    bool starting = false;
    if (mgr_daemon_start(st, r, &port, &pid, &how, &starting, err, sizeof err) < 0)
        return s_fail("%s", err);
    const char *note = starting ? " (its kernel is still starting)" : "";
    if (how == MGR_ALREADY) {
        if (!quiet_when_running)
            fprintf(stderr, "%s already running on http://127.0.0.1:%ld/mcp (PID %ld)%s\n", r->name, port, pid, note);
    } else {
        char *venv = r->venv && !strcmp(r->lang, "py") ? s_short(r->venv) : NULL;
        fprintf(stderr, "%s %s on http://127.0.0.1:%ld/mcp (PID %ld)%s%s%s\n", r->name,
                how == MGR_REPLACED ? "restarted" : verb, port, pid, venv ? " venv=" : "", venv ? venv : "", note);
        free(venv);
    }
    if (port_out)
        *port_out = port;
    return 0;
}

static int s_start(int argc, char **argv)
{
    if (argc != 2)
        return s_fail("usage: rat start NAME");
    mgr_resolved_t r;
    mgr_state_t *st = s_resolve(argv[1], &r);
    if (!st)
        return 1;
    int rc = s_ensure(&st, &r, "started", false, NULL);
    mgr_state_close(&st);
    mgr_resolved_free(&r);
    return rc;
}

static int s_stop(int argc, char **argv)
{
    char err[ERR_MAX];
    if (argc == 2 && !strcmp(argv[1], "--all")) {
        mgr_state_t *st = mgr_state_open(err, sizeof err);
        if (!st)
            return s_fail("%s", err);
        int n = 0, refused = 0;
        for (size_t i = 0; i < st->nkernels; i++)
            if (mgr_state_alive(&st->kernels[i])) {
                if (mgr_daemon_stop(&st->kernels[i], err, sizeof err) < 0) {
                    s_not_stopped(&st->kernels[i], err);
                    refused++;
                } else {
                    n++;
                }
            }
        int rc = mgr_state_save(st, err, sizeof err) < 0 ? s_fail("%s", err) : refused ? 1 : 0;
        mgr_state_close(&st);
        if (!refused && !rc)
            fprintf(stderr, n ? "Stopped %d kernel(s).\n" : "No kernels running.\n", n);
        else if (refused)
            fprintf(stderr, "Stopped %d kernel(s); %d not stopped.\n", n, refused);
        return rc;
    }
    if (argc != 2)
        return s_fail("usage: rat stop NAME | --all");
    mgr_resolved_t r;
    mgr_state_t *st = s_resolve(argv[1], &r);
    if (!st)
        return 1;
    mgr_kernel_t *k = mgr_state_kernel(st, r.name);
    int rc = 0;
    if (!k || !mgr_state_alive(k)) {
        rc = s_fail("kernel \"%s\" is not running", r.name);
    } else if (mgr_daemon_stop(k, err, sizeof err) < 0) {
        rc = s_not_stopped(k, err);
    } else {
        if (mgr_state_save(st, err, sizeof err) < 0)
            rc = s_fail("%s", err);
        else
            fprintf(stderr, "%s stopped.\n", r.name);
    }
    mgr_state_close(&st);
    mgr_resolved_free(&r);
    return rc;
}

static int s_restart(int argc, char **argv)
{
    if (argc != 2)
        return s_fail("usage: rat restart NAME");
    char err[ERR_MAX];
    mgr_resolved_t r;
    mgr_state_t *st = s_resolve(argv[1], &r);
    if (!st)
        return 1;
    mgr_kernel_t *k = mgr_state_kernel(st, r.name);
    if (k && mgr_state_alive(k)) {
        if (mgr_daemon_stop(k, err, sizeof err) < 0) {
            int rc = s_not_stopped(k, err);
            mgr_state_close(&st);
            mgr_resolved_free(&r);
            return rc;
        }
        if (mgr_state_save(st, err, sizeof err) < 0) {
            mgr_state_close(&st);
            mgr_resolved_free(&r);
            return s_fail("%s", err);
        }
    }
    int rc = s_ensure(&st, &r, "restarted", false, NULL);
    mgr_state_close(&st);
    mgr_resolved_free(&r);
    return rc;
}

/* A running runtime's port, by resolution; 0 (reported) when not running. */
static long s_running_port(const char *input, char **name_out)
{
    mgr_resolved_t r;
    mgr_state_t *st = s_resolve(input, &r);
    if (!st)
        return 0;
    mgr_kernel_t *k = mgr_state_kernel(st, r.name);
    long port = k && mgr_state_alive(k) ? k->port : 0;
    if (!port)
        s_fail("kernel \"%s\" is not running (start it: rat start %s)", r.name, r.name);
    if (name_out)
        *name_out = xstrdup(r.name);
    mgr_state_close(&st);
    mgr_resolved_free(&r);
    return port;
}

static int s_ctl(int argc, char **argv, const char *op)
{
    if (argc != 2)
        return s_fail("usage: rat %s NAME", argv[0]);
    long port = s_running_port(argv[1], NULL);
    if (!port)
        return 1;
    char err[ERR_MAX];
    mgr_client_t *c = mgr_client_new(port, "rat", 5000, err, sizeof err);
    if (!c)
        return s_fail("cannot reach %s on port %ld: %s", argv[1], port, err);
    json_object *args = json_object_new_object();
    json_object_object_add(args, "op", json_object_new_string(op));
    json_object *res = mgr_client_call(c, "ctl", args, 30000, NULL, NULL, NULL, err, sizeof err);
    json_object_put(args);
    mgr_client_destroy(&c);
    if (!res)
        return s_fail("%s", err);
    char *text = mgr_client_text(res);
    printf("%s\n", text);
    int rc = mgr_client_is_error(res) ? 1 : 0;
    free(text);
    json_object_put(res);
    return rc;
}

static bool s_kv(const char *a, mgr_kv_t *out)
{
    const char *eq = strchr(a, '=');
    if (!eq || eq == a)
        return false;
    out->key = xstrndup(a, (size_t)(eq - a));
    out->value = xstrdup(eq + 1);
    return true;
}

static char *s_abspath(const char *p)
{
    if (p[0] == '/')
        return xstrdup(p);
    char *cwd = s_cwd();
    char *r = xasprintf("%s/%s", cwd, p);
    free(cwd);
    char *real = fileio_realpath(r);
    if (real) {
        free(r);
        return real;
    }
    return r;
}

static int s_add(int argc, char **argv)
{
    const char *name = NULL, *dir = NULL, *lang = NULL, *venv = NULL, *runtime = NULL;
    mgr_kv_t *env = NULL;
    size_t nenv = 0;
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        bool missing = false;
        const char *v;
        if ((v = config_opt_value(argc, argv, &i, "--lang", &missing)))
            lang = v;
        else if ((v = config_opt_value(argc, argv, &i, "--cwd", &missing)))
            dir = v;
        else if ((v = config_opt_value(argc, argv, &i, "--venv", &missing)))
            venv = v;
        else if ((v = config_opt_value(argc, argv, &i, "--runtime", &missing)))
            runtime = v;
        else if ((v = config_opt_value(argc, argv, &i, "--env", &missing))) {
            env = xrealloc(env, (nenv + 1) * sizeof *env);
            if (!s_kv(v, &env[nenv]))
                rc = s_fail("--env takes KEY=VALUE, not %s", v);
            else
                nenv++;
        } else if (missing)
            rc = s_fail("%s needs a value", argv[i]);
        else if (argv[i][0] == '-')
            rc = s_fail("add: unknown option %s (see rat --help)", argv[i]);
        else if (!name)
            name = argv[i];
        else if (!dir)
            dir = argv[i];
        else
            rc = s_fail("add: one NAME and at most one DIR");
    }
    if (!rc && !name)
        rc = s_fail("usage: rat add NAME [DIR] [--lang L] [--cwd DIR] [--venv DIR] [--runtime PYTHON] [--env K=V]");
    if (!rc && !mgr_names_valid(name))
        rc = s_fail("invalid runtime name \"%s\": use letters, digits, '.', '_', '-' and '@' (starting with a "
                    "letter or digit)", name);
    const char *canon = NULL;
    if (!rc) {
        canon = lang ? mgr_names_lang(lang) : mgr_names_infer_lang(name);
        if (!canon)
            rc = lang ? s_fail("unknown language \"%s\" (py, r, jl, sh, js)", lang)
                      : s_fail("cannot tell the language of \"%s\"; say it with --lang (py, r, jl, sh, js)", name);
    }
    char err[ERR_MAX];
    if (!rc && !mgr_names_prog(canon, err, sizeof err))
        rc = s_fail("%s", err);
    if (!rc && runtime && strcmp(canon, "py"))
        rc = s_fail("--runtime names a Python interpreter; %s runtimes have none", canon);
    char *cwd = NULL, *venvabs = NULL, *rtabs = NULL;
    if (!rc) {
        cwd = dir ? s_abspath(dir) : s_cwd();
        if (!fileio_is_dir(cwd))
            rc = s_fail("%s is not a directory", cwd);
    }
    if (!rc) {
        venvabs = venv ? s_abspath(venv) : (!strcmp(canon, "py") ? mgr_names_find_venv(cwd) : NULL);
        rtabs = runtime ? s_abspath(runtime) : NULL;
        mgr_state_t *st = mgr_state_open(err, sizeof err);
        if (!st) {
            rc = s_fail("%s", err);
        } else {
            mgr_runtime_t *r = mgr_state_put_runtime(st, name);
            r->lang = xstrdup(canon);
            r->cwd = xstrdup(cwd);
            r->venv = venvabs ? xstrdup(venvabs) : NULL;
            r->runtime_path = rtabs ? xstrdup(rtabs) : NULL;
            r->env = env;
            r->nenv = nenv;
            env = NULL;
            nenv = 0;
            if (mgr_state_save(st, err, sizeof err) < 0) {
                rc = s_fail("%s", err);
            } else {
                char *sc = s_short(cwd), *sv = venvabs ? s_short(venvabs) : NULL;
                fprintf(stderr, "Added %s (lang=%s cwd=%s%s%s%s%s)\nStart it: rat start %s\n", name, canon, sc,
                        sv ? " venv=" : "", sv ? sv : "", rtabs ? " runtime=" : "", rtabs ? rtabs : "", name);
                free(sc);
                free(sv);
            }
            mgr_state_close(&st);
        }
    }
    for (size_t i = 0; i < nenv; i++) {
        free(env[i].key);
        free(env[i].value);
    }
    free(env);
    free(cwd);
    free(venvabs);
    free(rtabs);
    return rc;
}

/* Asks on the terminal; false without one (then the caller says why). */
static bool s_confirm(const char *question)
{
    if (!isatty(0))
        return false;
    fprintf(stderr, "%s [y/N] ", question);
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

static int s_remove(int argc, char **argv)
{
    bool yes = false, all = false;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--yes") || !strcmp(argv[i], "-y"))
            yes = true;
        else if (!strcmp(argv[i], "--all"))
            all = true;
        else if (argv[i][0] == '-')
            return s_fail("remove: unknown option %s", argv[i]);
        else if (!name)
            name = argv[i];
        else
            return s_fail("usage: rat remove NAME [--yes] | --all [--yes]");
    }
    if (all == (name != NULL))
        return s_fail("usage: rat remove NAME [--yes] | --all [--yes]");
    char err[ERR_MAX];
    mgr_resolved_t r = {0};
    mgr_state_t *st = NULL;
    if (name) {
        if (!(st = s_resolve(name, &r)))
            return 1;
        if (r.is_new) {
            mgr_state_close(&st);
            int rc = s_fail("runtime \"%s\" not found (`rat status` lists them)", r.name);
            mgr_resolved_free(&r);
            return rc;
        }
    } else if (!(st = mgr_state_open(err, sizeof err))) {
        return s_fail("%s", err);
    }
    char *question = name ? xasprintf("Remove runtime %s (stop it, delete its entry)?", r.name)
                          : xasprintf("Remove all %zu runtimes?", st->nkernels + st->nruntimes);
    if (!yes) {
        /* The lock is not held across a question. */
        mgr_state_unlock(st);
        bool ok = s_confirm(question);
        free(question);
        mgr_state_close(&st);
        if (!ok) {
            mgr_resolved_free(&r);
            if (!isatty(0))
                return s_fail("not removed: there is no terminal to confirm on; rerun with --yes");
            fprintf(stderr, "Cancelled.\n");
            return 0;
        }
        if (!(st = mgr_state_open(err, sizeof err))) {
            mgr_resolved_free(&r);
            return s_fail("%s", err);
        }
    } else {
        free(question);
    }
    size_t removed = 0;
    int refused = 0;
    for (size_t i = 0; i < st->nkernels;) {
        mgr_kernel_t *k = &st->kernels[i];
        if (name && strcmp(k->name, r.name)) {
            i++;
            continue;
        }
        if (mgr_state_alive(k)) {
            if (mgr_daemon_stop(k, err, sizeof err) < 0) {
                /* Its entry stays: removing it would lose the process. */
                s_not_stopped(k, err);
                refused++;
                i++;
                continue;
            }
            fprintf(stderr, "%s stopped.\n", k->name);
        }
        char *n = xstrdup(k->name);
        mgr_state_remove_kernel(st, n);
        mgr_state_remove_runtime(st, n);
        removed++;
        if (name)
            fprintf(stderr, "%s removed.\n", n);
        free(n);
    }
    for (size_t i = 0; i < st->nruntimes;) {
        if (name && strcmp(st->runtimes[i].name, r.name)) {
            i++;
            continue;
        }
        if (refused && mgr_state_kernel(st, st->runtimes[i].name)) {
            i++; /* kept with its kernel entry, which could not be stopped */
            continue;
        }
        char *n = xstrdup(st->runtimes[i].name);
        mgr_state_remove_runtime(st, n);
        removed++;
        if (name)
            fprintf(stderr, "%s removed.\n", n);
        free(n);
    }
    int rc = mgr_state_save(st, err, sizeof err) < 0 ? s_fail("%s", err) : refused ? 1 : 0;
    if (!refused && !rc && !name)
        fprintf(stderr, "Removed %zu runtime(s).\n", removed);
    mgr_state_close(&st);
    mgr_resolved_free(&r);
    return rc;
}

static void s_json_add_str(json_object *o, const char *k, const char *v)
{
    if (v && *v)
        json_object_object_add(o, k, json_object_new_string(v));
}

static int s_resolve_cmd(int argc, char **argv)
{
    bool json = false, env = false;
    const char *input = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!strcmp(argv[i], "--include-env"))
            env = true;
        else if (argv[i][0] == '-')
            return s_fail("resolve: unknown option %s", argv[i]);
        else if (!input)
            input = argv[i];
        else
            return s_fail("usage: rat resolve X [--json] [--include-env]");
    }
    if (!input)
        return s_fail("usage: rat resolve X [--json] [--include-env]");
    mgr_resolved_t r;
    mgr_state_t *st = s_resolve(input, &r);
    if (!st)
        return 1;
    if (json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(r.name));
        json_object_object_add(o, "lang", json_object_new_string(r.lang));
        json_object_object_add(o, "cwd", json_object_new_string(r.cwd));
        s_json_add_str(o, "venv", r.venv);
        s_json_add_str(o, "runtime_path", r.runtime_path);
        if (env && r.nenv) {
            json_object *e = json_object_new_object();
            for (size_t i = 0; i < r.nenv; i++)
                json_object_object_add(e, r.env[i].key, json_object_new_string(r.env[i].value));
            json_object_object_add(o, "env", e);
        }
        json_object_object_add(o, "is_new", json_object_new_boolean(r.is_new));
        printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
    } else {
        printf("name: %s\nlang: %s\ncwd: %s\n", r.name, r.lang, r.cwd);
        if (r.venv)
            printf("venv: %s\n", r.venv);
        if (r.runtime_path)
            printf("runtime: %s\n", r.runtime_path);
        if (r.nenv) {
            printf("env:\n");
            for (size_t i = 0; i < r.nenv; i++)
                printf("  %s: %s\n", r.env[i].key, env ? r.env[i].value : "(set; --include-env shows it)");
        }
        if (r.is_new)
            printf("new: true\n");
    }
    mgr_state_close(&st);
    mgr_resolved_free(&r);
    return 0;
}

static int s_status(int argc, char **argv)
{
    bool json = argc == 2 && !strcmp(argv[1], "--json");
    if (argc > 2 || (argc == 2 && !json))
        return s_fail("usage: rat status [--json]");
    char err[ERR_MAX];
    mgr_state_t *st = mgr_state_open(err, sizeof err);
    if (!st)
        return s_fail("%s", err);
    mgr_state_unlock(st);
    /* Rows: every kernel, then saved runtimes not started, by name. */
    size_t n = st->nkernels + st->nruntimes;
    const char **names = xcalloc(n ? n : 1, sizeof *names);
    size_t k = 0;
    for (size_t i = 0; i < st->nkernels; i++)
        names[k++] = st->kernels[i].name;
    for (size_t i = 0; i < st->nruntimes; i++)
        if (!mgr_state_kernel(st, st->runtimes[i].name))
            names[k++] = st->runtimes[i].name;
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    json_object *arr = json ? json_object_new_array() : NULL;
    buf_t out;
    buf_init(&out, 0);
    size_t wn = 4, running = 0;
    for (size_t i = 0; i < k; i++)
        wn = strlen(names[i]) > wn ? strlen(names[i]) : wn;
    if (!json && k)
        buf_printf(&out, "%-*s  %-7s  %-27s  %s\n", (int)wn, "NAME", "STATUS", "URL", "CWD");
    for (size_t i = 0; i < k; i++) {
        mgr_kernel_t *kk = mgr_state_kernel(st, names[i]);
        mgr_runtime_t *rr = mgr_state_runtime(st, names[i]);
        bool run = kk && mgr_state_alive(kk);
        running += run;
        const char *cwd = kk ? kk->cwd : rr->cwd;
        const char *venv = kk ? kk->venv : rr->venv;
        const char *lang = kk ? kk->lang : rr->lang;
        if (json) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "name", json_object_new_string(names[i]));
            json_object_object_add(o, "lang", json_object_new_string(lang ? lang : ""));
            json_object_object_add(o, "status", json_object_new_string(run ? "running" : "stopped"));
            json_object_object_add(o, "cwd", json_object_new_string(cwd ? cwd : ""));
            s_json_add_str(o, "venv", venv);
            if (run) {
                json_object_object_add(o, "port", json_object_new_int64(kk->port));
                json_object_object_add(o, "pid", json_object_new_int64(kk->pid));
            }
            json_object_array_add(arr, o);
        } else {
            char url[64] = "—";
            if (run)
                snprintf(url, sizeof url, "http://127.0.0.1:%ld/mcp", kk->port);
            char *sc = s_short(cwd);
            buf_printf(&out, "%-*s  %-7s  %-27s  %s\n", (int)wn, names[i], run ? "running" : "stopped", url, sc);
            free(sc);
        }
    }
    if (json) {
        printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(arr);
    } else if (!k) {
        printf("No runtimes.\nStart one: rat start py (or open a REPL: rat py)\n");
    } else {
        fputs(buf_str(&out), stdout);
        if (running)
            printf("\n%zu kernel%s running.\n", running, running == 1 ? "" : "s");
    }
    buf_free(&out);
    free(names);
    mgr_state_close(&st);
    return 0;
}

/* `rat install LANG`: exits 0 only when `rat start` will work for LANG in
 * this folder: the runtime LANG names here is started (or found running)
 * and runs code. When it cannot, says the fix (and on a terminal offers
 * to run the one for a venv without ipykernel). */
static int s_install_one(const char *lang_in)
{
    const char *lang = mgr_names_lang(lang_in);
    if (!lang)
        return s_fail("unknown language \"%s\" (py, r, jl, sh, js)", lang_in);
    char err[ERR_MAX];
    if (!mgr_names_prog(lang, err, sizeof err))
        return s_fail("%s", err);
    mgr_resolved_t r;
    mgr_state_t *st = s_resolve(lang, &r);
    if (!st)
        return 1;
    if (!strcmp(lang, "py") && r.venv && !r.runtime_path && !interp_env_has_ipykernel(r.venv)) {
        /* start would fall back to the system's python3 kernelspec; say so,
         * and offer the fix that makes the venv's own Python the kernel. */
        char *fix = xasprintf("%s/bin/python -m pip install ipykernel", r.venv);
        fprintf(stderr, "%s: the virtual environment %s has no ipykernel\n  fix: %s\n", r.name, r.venv, fix);
        if (isatty(0) && s_confirm("Run it now?")) {
            mgr_state_unlock(st);
            int sr = system(fix);
            if (sr != 0)
                fprintf(stderr, "rat: `%s` failed (status %d)\n", fix, sr);
        } else {
            fprintf(stderr, "  (rat-py uses the python3 kernelspec meanwhile)\n");
        }
        free(fix);
    }
    long port = 0;
    int rc = s_ensure(&st, &r, "started", false, &port);
    mgr_state_close(&st);
    if (rc) {
        const family_t *fam = NULL;
        char prog[32];
        snprintf(prog, sizeof prog, "%s", mgr_names_prog(lang, err, sizeof err));
        fam = family_from_argv0(prog);
        if (!strcmp(lang, "py"))
            fprintf(stderr, "  fix: %s%s%s\n", fam->install_hint,
                    r.venv ? "; in the project's venv: " : "", r.venv ? r.venv : "");
        else
            fprintf(stderr, "  fix: %s\n", fam->install_hint);
        mgr_resolved_free(&r);
        return 1;
    }
    /* A run, end to end. */
    mgr_client_t *c = mgr_client_new(port, "rat", 5000, err, sizeof err);
    json_object *res = NULL;
    if (c) {
        static const char *const probe[][2] = {{"py", "print('rat py ready')"}, {"r", "cat('rat r ready\\n')"},
                                               {"sh", "echo rat sh ready"},      {"js", "console.log('rat js ready')"},
                                               {"jl", "println(\"rat jl ready\")"}};
        const char *code = NULL;
        for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++)
            if (!strcmp(probe[i][0], lang))
                code = probe[i][1];
        json_object *args = json_object_new_object();
        json_object_object_add(args, "code", json_object_new_string(code));
        res = mgr_client_call(c, "run", args, 60000, NULL, NULL, NULL, err, sizeof err);
        json_object_put(args);
        mgr_client_destroy(&c);
    }
    char *text = res ? mgr_client_text(res) : NULL;
    if (!res || mgr_client_is_error(res) || !strstr(text, "ready")) {
        rc = s_fail("%s runs no code: %s", r.name, text ? text : err);
    } else {
        printf("%s is ready: %s\n", r.name, strtok(text, "\n"));
    }
    free(text);
    json_object_put(res);
    mgr_resolved_free(&r);
    return rc;
}

static int s_install(int argc, char **argv)
{
    if (argc < 2)
        return s_fail("usage: rat install LANG...  (py, r, jl, sh, js)");
    int rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= s_install_one(argv[i]);
    return rc;
}

static int s_doctor(int argc, char **argv)
{
    const char *lang = argc > 1 ? mgr_names_lang(argv[1]) : "py";
    char err[ERR_MAX];
    const char *prog = lang ? mgr_names_prog(lang, err, sizeof err) : NULL;
    if (!prog)
        return lang ? s_fail("%s", err) : s_fail("unknown language \"%s\" (py, r, jl, sh, js)", argv[1]);
    char *cwd = s_cwd();
    char *dargv[] = {"doctor", "--cwd", cwd, NULL};
    int rc = doctor_main(3, dargv, prog, family_from_argv0(prog));
    free(cwd);
    return rc;
}

int mgr_main(int argc, char **argv)
{
    /* vscode-rat's execFile and a dead terminal must not kill us mid-write. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        s_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    int sub = argc - 1;
    char **sargv = argv + 1;
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        s_usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("rat (rat-py %s)\n", RAT_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "start"))
        return s_start(sub, sargv);
    if (!strcmp(cmd, "stop"))
        return s_stop(sub, sargv);
    if (!strcmp(cmd, "restart"))
        return s_restart(sub, sargv);
    if (!strcmp(cmd, "cancel"))
        return s_ctl(sub, sargv, "cancel");
    if (!strcmp(cmd, "reset"))
        return s_ctl(sub, sargv, "reset");
    if (!strcmp(cmd, "add"))
        return s_add(sub, sargv);
    if (!strcmp(cmd, "remove") || !strcmp(cmd, "rm"))
        return s_remove(sub, sargv);
    if (!strcmp(cmd, "resolve"))
        return s_resolve_cmd(sub, sargv);
    if (!strcmp(cmd, "status") || !strcmp(cmd, "ls"))
        return s_status(sub, sargv);
    if (!strcmp(cmd, "install"))
        return s_install(sub, sargv);
    if (!strcmp(cmd, "doctor"))
        return s_doctor(sub, sargv);
    if (cmd[0] == '-')
        return s_fail("unknown option %s (see rat --help)", cmd);
    if (argc > 2)
        return s_fail("unknown command \"%s\" (see rat --help)", cmd);
    /* rat NAME: a REPL on NAME's kernel, started if needed. */
    mgr_resolved_t r;
    mgr_state_t *st = s_resolve(cmd, &r);
    if (!st)
        return 1;
    long port = 0;
    int rc = s_ensure(&st, &r, "started", true, &port);
    mgr_state_close(&st);
    if (!rc)
        rc = mgr_repl_main(r.name, port);
    mgr_resolved_free(&r);
    return rc;
}
