/* install: registering rat-py with mcptocli and mcp2cli (install.h). */
#include "install.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clients.h"
#include "config.h"
#include "fileio.h"
#include "mem.h"
#include "procsig.h"
#include "yaml_block.h"

#define CONFIG_MAX YAML_BLOCK_MAX_TEXT
#define STDERR_MAX 4096            /* bytes of a client's stderr kept for messages */
#define DAEMON_STOP_MS 3000        /* how long uninstall waits for a stopped `py up` */
/* Marks the wrapper script we write when the client is not installed yet,
 * so uninstall removes only what we made. */
#define SHIM_MARK "command shim written by rat-py install"
/* The first line of a config file install created (itself, or through the
 * client), so that uninstall removes the file, and the folders made with it,
 * once it lists no server: what install found is what uninstall leaves. */
#define CONFIG_MARK "# Created by rat-py install (rat-py uninstall removes it once it lists no server).\n"
#define FRESH_CONFIG CONFIG_MARK "version: 1\n"

extern char **environ;

typedef struct {
    char *name;       /* owned, normalized */
    char *cwd;        /* owned, absolute */
    char *kernel, *venv, *python, *kspec_dir; /* owned, pass-through server options (paths absolute) */
    bool client[CLIENTS_N]; /* --client: the chosen ones (none chosen: found ones) */
    bool chosen;
} s_opts_t;

static void s_opts_free(s_opts_t *o)
{
    free(o->name);
    free(o->cwd);
    free(o->kernel);
    free(o->venv);
    free(o->python);
    free(o->kspec_dir);
}

/* ------------------------------------------------------------ paths */

char *install_self_path(const char *argv0)
{
    if (!argv0 || !*argv0)
        return NULL;
    char *found = strchr(argv0, '/') ? xstrdup(argv0) : fileio_which(argv0);
    if (!found)
        return fileio_realpath("/proc/self/exe");
    /* Absolute directory, but the last component kept: a family symlink
     * (rat-r -> rat-py) must be registered as rat-r. */
    char *slash = strrchr(found, '/');
    char *dir = slash == found ? xstrdup("/") : xstrndup(found, (size_t)(slash - found));
    char *rdir = fileio_realpath(dir);
    char *out = rdir ? xasprintf("%s/%s", strcmp(rdir, "/") ? rdir : "", slash + 1) : NULL;
    free(rdir);
    free(dir);
    free(found);
    return out;
}

static int s_mkdir_p(const char *path, mode_t mode)
{
    char *p = xstrdup(path);
    int rc = 0;
    for (char *s = p + 1; *s && rc == 0; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, mode) < 0 && errno != EEXIST)
            rc = -1;
        *s = '/';
    }
    if (rc == 0 && mkdir(p, mode) < 0 && errno != EEXIST)
        rc = -1;
    free(p);
    return rc;
}

/* The folder of a path (caller owns it). */
static char *s_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash != path ? xstrndup(path, (size_t)(slash - path)) : xstrdup("/");
}

/* ------------------------------------------------------------ commands */

/* Appends arg quoted for a POSIX shell (mcp2cli splits `command` with
 * go-shellquote). */
static void s_shell_quote(buf_t *b, const char *arg)
{
    bool plain = *arg != '\0';
    for (const char *p = arg; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-", *p) != NULL;
    if (plain) {
        buf_puts(b, arg);
        return;
    }
    buf_putc(b, '\'');
    for (const char *p = arg; *p; p++) {
        if (*p == '\'')
            buf_puts(b, "'\\''");
        else
            buf_putc(b, *p);
    }
    buf_putc(b, '\'');
}

/* Runs argv (argv[0] a path) and waits, stdin from /dev/null and stdout
 * discarded; its stderr is captured into err_out (bounded). Returns the exit
 * status, or -1 when it could not run. */
static int s_run(char *const argv[], buf_t *err_out)
{
    int pipefd[2] = {-1, -1};
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (rc != 0) {
        close(pipefd[0]);
        errno = rc;
        return -1;
    }
    char chunk[1024];
    ssize_t n;
    while ((n = read(pipefd[0], chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0 && err_out->len + (size_t)n <= STDERR_MAX)
            buf_append(err_out, chunk, (size_t)n);
    }
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* ------------------------------------------------------------ options */

/* The clients' NormalizeCommandName: lowercase, `_` and spaces become `-`,
 * dashes trimmed and collapsed; then ^[a-z0-9][a-z0-9-]*$, and not a name
 * the clients keep for themselves. */
static char *s_normalize_name(const char *raw, char *err, size_t errlen)
{
    buf_t b;
    buf_init(&b, 256);
    for (const char *p = raw; *p; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c == '_' || c == ' ')
            c = '-';
        if (c == '-' && (b.len == 0 || b.data[b.len - 1] == '-'))
            continue;
        if (buf_putc(&b, c) < 0)
            break;
    }
    while (b.len && b.data[b.len - 1] == '-')
        b.data[--b.len] = '\0';
    bool ok = b.len > 0 && b.len < 64;
    for (size_t i = 0; ok && i < b.len; i++)
        ok = (b.data[i] >= 'a' && b.data[i] <= 'z') || (b.data[i] >= '0' && b.data[i] <= '9') ||
             (i > 0 && b.data[i] == '-');
    const char *s = buf_str(&b);
    if (!ok || !strcmp(s, "mcp2cli") || !strcmp(s, "mcptocli") || !strcmp(s, "mcp")) {
        snprintf(err, errlen,
                 "--name '%s': use lowercase letters, digits and dashes (at most 63), not mcptocli, mcp2cli or mcp",
                 raw);
        buf_free(&b);
        return NULL;
    }
    return buf_take(&b);
}

static void s_usage(FILE *out, const family_t *fam, bool install)
{
    if (install)
        fprintf(out,
                "Usage: %s install [--name NAME] [--cwd DIR] [--kernel NAME] [--venv DIR] [--python PATH]\n"
                "                  [--kernelspec-dir DIR] [--client mcptocli|mcp2cli]...\n"
                "Registers %s as NAME (default: %s) with mcptocli or mcp2cli (its name before), so that\n"
                "`%s up` starts it and `%s run 'CODE'` runs code. Without --client: with each of them\n"
                "that is installed or configured here, else with mcptocli. The kernel runs in DIR\n"
                "(default: the current directory); --kernel, --venv, --python and --kernelspec-dir\n"
                "are passed on to the registered command.\n",
                fam->prog, fam->prog, fam->short_name, fam->short_name, fam->short_name);
    else
        fprintf(out,
                "Usage: %s uninstall [--name NAME] [--client mcptocli|mcp2cli]...\n"
                "Removes NAME (default: %s) from mcptocli and mcp2cli (or the clients named) where it\n"
                "runs %s, with its command, its cached tool schemas and a running `%s up`.\n",
                fam->prog, fam->short_name, fam->prog, fam->short_name);
}

/* Returns 0, 1 for --help, or 2 after a message on stderr. */
static int s_parse(int argc, char **argv, const family_t *fam, bool install, s_opts_t *o)
{
    memset(o, 0, sizeof *o);
    const char *name = fam->short_name, *cwd = ".";
    for (int i = 1; i < argc; i++) {
        const char *v;
        bool missing = false;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            s_usage(stdout, fam, install);
            return 1;
        }
        if ((v = config_opt_value(argc, argv, &i, "--name", &missing))) {
            name = v;
        } else if (!missing && (v = config_opt_value(argc, argv, &i, "--client", &missing))) {
            size_t c = 0;
            while (c < CLIENTS_N && strcmp(v, clients_names[c]) != 0)
                c++;
            if (c == CLIENTS_N) {
                fprintf(stderr, "%s %s: --client %s: the clients are mcptocli and mcp2cli\n", fam->prog, argv[0], v);
                return 2;
            }
            o->client[c] = o->chosen = true;
        } else if (!missing && install && (v = config_opt_value(argc, argv, &i, "--cwd", &missing))) {
            cwd = v;
        } else if (!missing && install && (v = config_opt_value(argc, argv, &i, "--kernel", &missing))) {
            free(o->kernel);
            o->kernel = xstrdup(v);
        } else if (!missing && install && (v = config_opt_value(argc, argv, &i, "--venv", &missing))) {
            free(o->venv);
            o->venv = fileio_realpath(v);
            if (!o->venv || !fileio_is_dir(o->venv)) {
                fprintf(stderr, "%s install: --venv %s: no such directory\n", fam->prog, v);
                return 2;
            }
        } else if (!missing && install && (v = config_opt_value(argc, argv, &i, "--kernelspec-dir", &missing))) {
            free(o->kspec_dir);
            o->kspec_dir = fileio_realpath(v);
            char *json = o->kspec_dir ? xasprintf("%s/kernel.json", o->kspec_dir) : NULL;
            bool ok = json && fileio_is_file(json);
            free(json);
            if (!ok) {
                fprintf(stderr, "%s install: --kernelspec-dir %s: no kernel.json there (copy the directory "
                        "share/rat-py/kernelspec/ of the install, then change it: doc/kernels.md)\n", fam->prog, v);
                return 2;
            }
        } else if (!missing && install && (v = config_opt_value(argc, argv, &i, "--python", &missing))) {
            free(o->python);
            o->python = fileio_which(v);
            if (!o->python) {
                fprintf(stderr, "%s install: --python %s: no such executable\n", fam->prog, v);
                return 2;
            }
            if (o->python[0] != '/') {
                char *abs = fileio_realpath(o->python);
                free(o->python);
                o->python = abs;
            }
        } else {
            if (missing)
                fprintf(stderr, "%s %s: option '%s' needs a value\n", fam->prog, argv[0], argv[i]);
            else
                fprintf(stderr, "%s %s: unknown argument '%s' (see %s %s --help)\n", fam->prog, argv[0], argv[i],
                        fam->prog, argv[0]);
            return 2;
        }
    }
    char err[512];
    o->name = s_normalize_name(name, err, sizeof err);
    if (!o->name) {
        fprintf(stderr, "%s %s: %s\n", fam->prog, argv[0], err);
        return 2;
    }
    if (install && o->kernel && o->kspec_dir) {
        fprintf(stderr, "%s install: --kernel and --kernelspec-dir both choose the kernel: give one\n", fam->prog);
        return 2;
    }
    if (install) {
        o->cwd = fileio_realpath(cwd);
        if (!o->cwd || !fileio_is_dir(o->cwd)) {
            fprintf(stderr, "%s install: --cwd %s: not a directory\n", fam->prog, cwd);
            return 2;
        }
    }
    return 0;
}

/* The registered command line: '<self> --cwd DIR [pass-through options]'. */
static char *s_command(const char *self, const s_opts_t *o, bool *has_space)
{
    const char *args[] = {self, "--cwd", o->cwd, o->kernel ? "--kernel" : NULL, o->kernel,
                          o->venv ? "--venv" : NULL, o->venv, o->python ? "--python" : NULL, o->python,
                          o->kspec_dir ? "--kernelspec-dir" : NULL, o->kspec_dir};
    buf_t b;
    buf_init(&b, 0);
    *has_space = false;
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        if (!args[i]) {
            i++; /* option absent: skip its value too */
            continue;
        }
        if (b.len)
            buf_putc(&b, ' ');
        s_shell_quote(&b, args[i]);
        if (strpbrk(args[i], " \t"))
            *has_space = true;
    }
    return buf_take(&b);
}

/* ------------------------------------------------------------ the shim */

/* Whether path is a command we may replace or remove: a symlink (what the
 * clients make) or our own wrapper script. */
static bool s_is_shim(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return false;
    if (S_ISLNK(st.st_mode))
        return true;
    size_t len = 0;
    char *text = S_ISREG(st.st_mode) ? fileio_read(path, 4096, &len) : NULL;
    bool ours = text && strstr(text, SHIM_MARK);
    free(text);
    return ours;
}

/* Creates bin/NAME: a symlink to the client when we know where it is
 * (exactly what `CLIENT add --as NAME` makes; the client reads its argv[0]
 * to know it runs as NAME), otherwise a bash wrapper that finds the client
 * on PATH at run time and passes NAME as argv[0]. */
static int s_write_shim(const char *client, const char *bindir, const char *name, const char *target, char *err,
                        size_t errlen)
{
    char *path = xasprintf("%s/%s", bindir, name);
    char *tmp = xasprintf("%s/.%s.rat-tmp", bindir, name);
    int rc = -1;
    struct stat st;
    if (lstat(path, &st) == 0 && !s_is_shim(path)) {
        snprintf(err, errlen, "%s exists and is not a %s command; remove it or choose another --name", path, client);
        goto out;
    }
    if (s_mkdir_p(bindir, 0755) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", bindir, strerror(errno));
        goto out;
    }
    unlink(tmp);
    if (target) {
        if (symlink(target, tmp) < 0) {
            snprintf(err, errlen, "cannot create the link %s: %s", path, strerror(errno));
            goto out;
        }
    } else {
        char *script = xasprintf("#!/bin/bash\n# %s %s\n"
                                 "# %s runs as `%s` when its argv[0] says so.\n"
                                 "exec -a %s %s \"$@\"\n",
                                 client, SHIM_MARK, client, name, name, client);
        int w = fileio_write_atomic(tmp, script, strlen(script), 0755);
        free(script);
        if (w < 0) {
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            goto out;
        }
    }
    if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    rc = 0;
out:
    free(tmp);
    free(path);
    return rc;
}

/* ------------------------------------------------------------ config file */

/* Reads the config (a missing file is an empty document). The path written
 * back is the symlink's target when the config is a symlink (dotfile
 * managers), and the file's mode is kept (it may hold tokens). */
static yaml_block_t *s_load_config(const char *path, char **write_path, mode_t *mode, char *err, size_t errlen)
{
    size_t len = 0;
    char *text = fileio_read(path, CONFIG_MAX, &len);
    *mode = 0644;
    *write_path = xstrdup(path);
    if (!text && errno != ENOENT) {
        snprintf(err, errlen, "cannot read %s: %s", path,
                 errno == EFBIG ? "larger than 1 MiB" : fileio_strerror(errno));
        return NULL;
    }
    struct stat st;
    if (text && stat(path, &st) == 0) {
        *mode = st.st_mode & 0777;
        char *real = fileio_realpath(path);
        if (real) {
            free(*write_path);
            *write_path = real;
        }
    }
    /* A new file starts the way the clients write one. */
    bool empty = true;
    for (size_t i = 0; text && i < len && empty; i++)
        empty = text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t';
    char perr[256];
    yaml_block_t *y = empty ? yaml_block_parse(FRESH_CONFIG, strlen(FRESH_CONFIG), perr, sizeof perr)
                            : yaml_block_parse(text, len, perr, sizeof perr);
    if (!y)
        snprintf(err, errlen, "cannot edit %s safely: %s", path, perr);
    free(text);
    return y;
}

static int s_save_config(yaml_block_t *y, const char *path, mode_t mode, char *err, size_t errlen)
{
    char *dir = s_dirname(path);
    if (s_mkdir_p(dir, 0755) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        free(dir);
        return -1;
    }
    free(dir);
    char *text = yaml_block_text(y);
    int rc = fileio_write_atomic(path, text, strlen(text), (int)mode);
    if (rc < 0)
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    free(text);
    return rc;
}

/* The server (other than `self_name`) that already exposes command `name`. */
static char *s_exposed_by(const yaml_block_t *y, const char *name, const char *self_name)
{
    char **keys = NULL;
    size_t n = yaml_block_keys(y, "servers", &keys);
    char *owner = NULL;
    for (size_t i = 0; i < n && !owner; i++) {
        if (strcmp(keys[i], self_name) == 0)
            continue;
        char **ex = NULL;
        size_t ne = yaml_block_list(y, "servers", keys[i], "expose", &ex);
        for (size_t j = 0; j < ne && !owner; j++)
            if (strcmp(ex[j], name) == 0)
                owner = xstrdup(keys[i]);
        strv_free(ex);
    }
    strv_free(keys);
    return owner;
}

/* Whether the client's config file starts with CONFIG_MARK. */
static bool s_config_marked(const char *client)
{
    char *cfg = clients_path(client, CLIENTS_CONFIG);
    size_t len = 0;
    char *text = fileio_read(cfg, CONFIG_MAX, &len);
    bool marked = text && strncmp(text, CONFIG_MARK, strlen(CONFIG_MARK)) == 0;
    free(text);
    free(cfg);
    return marked;
}

/* Marks a config file the client itself just created (keeping its mode). */
static void s_mark_config(const char *client)
{
    char *cfg = clients_path(client, CLIENTS_CONFIG);
    size_t len = 0;
    char *text = fileio_read(cfg, CONFIG_MAX, &len);
    struct stat st;
    if (text && stat(cfg, &st) == 0) {
        char *marked = xasprintf("%s%s", CONFIG_MARK, text);
        (void)fileio_write_atomic(cfg, marked, strlen(marked), (int)(st.st_mode & 0777));
        free(marked);
    }
    free(text);
    free(cfg);
}

/* After uninstall: a config file install created (marked before the
 * removal) that lists no
 * server any more goes away, with the client's folders when they are empty
 * (they were made with it); an unmarked one is the user's and stays. */
static void s_tidy(const char *client, bool marked)
{
    if (!marked)
        return;
    char *cfg = clients_path(client, CLIENTS_CONFIG);
    size_t len = 0;
    char *text = fileio_read(cfg, 4096, &len);
    /* (The clients' own `rm` rewrites the file without the mark.) */
    const char *rest = !text ? NULL
                       : strncmp(text, CONFIG_MARK, strlen(CONFIG_MARK)) == 0 ? text + strlen(CONFIG_MARK)
                                                                              : text;
    /* What is left once the last entry went: ours, or the clients' own `rm`. */
    if (rest && (!strcmp(rest, "version: 1\nservers: {}\n") || !strcmp(rest, "version: 1\n")) &&
        unlink(cfg) == 0) {
        char *dir = s_dirname(cfg);
        rmdir(dir);
        free(dir);
        char *bin = clients_path(client, CLIENTS_BIN);
        if (rmdir(bin) == 0) {
            char *data = s_dirname(bin);
            rmdir(data);
            free(data);
        }
        free(bin);
    }
    free(text);
    free(cfg);
}

/* ------------------------------------------------------------ one client */

typedef struct {
    const char *client;
    char *cfg;        /* its config file */
    char *bindir;     /* its commands */
    char *prog;       /* its program, or NULL */
    bool on_path;     /* prog was found on PATH */
    char *registered; /* servers.NAME.command in its config, or NULL */
    char *exposer;    /* another server that exposes NAME, or NULL */
    bool cfg_error;   /* its config could not be read safely (err says why) */
    char err[1024];
} s_client_t;

static void s_client_init(s_client_t *c, const char *client, const char *name)
{
    memset(c, 0, sizeof *c);
    c->client = client;
    c->cfg = clients_path(client, CLIENTS_CONFIG);
    c->bindir = clients_path(client, CLIENTS_BIN);
    c->prog = clients_find(client, &c->on_path);
    if (!fileio_is_file(c->cfg))
        return;
    char *wp = NULL;
    mode_t mode;
    yaml_block_t *y = s_load_config(c->cfg, &wp, &mode, c->err, sizeof c->err);
    free(wp);
    if (!y) {
        c->cfg_error = true;
        return;
    }
    c->registered = yaml_block_scalar(y, "servers", name, "command");
    c->exposer = s_exposed_by(y, name, name);
    yaml_block_destroy(&y);
}

static void s_client_free(s_client_t *c)
{
    free(c->cfg);
    free(c->bindir);
    free(c->prog);
    free(c->registered);
    free(c->exposer);
}

/* Whether the client is there: its program, or its config folder. */
static bool s_client_present(const s_client_t *c)
{
    char *dir = s_dirname(c->cfg);
    bool there = c->prog || fileio_is_dir(dir);
    free(dir);
    return there;
}

/* Drops the client's cached tool schemas for name: both clients call a
 * tool with its cached schema and never ask again, so a schema from another
 * rat-py would be used silently. */
static void s_drop_cache(const char *client, const char *name)
{
    char *f = clients_cache_file(client, name);
    unlink(f);
    free(f);
}

/* Whether the process pidfd holds (or pid) is still there. */
static bool s_running(int pidfd, long pid)
{
    if (pidfd >= 0) {
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        return poll(&p, 1, 0) == 0; /* readable once it has exited */
    }
    return kill((pid_t)pid, 0) == 0;
}

/* Stops the client's `name up` process (what `CLIENT NAME down` does: a
 * SIGTERM, after which it closes rat-py's stdin and rat-py exits). The pid
 * comes from the client's pid file, which anything running as the user can
 * write and whose pid the kernel reuses: only a process proven to be the
 * client's own daemon (clients_daemon_is) is signalled, through a pidfd
 * opened before the proof, so the process proven is the process signalled
 * (doc/security.md "What `rat-py uninstall` may signal"). *pid_out is the
 * pid file's pid (0: none, or gone); why says why it was left running. */
static bool s_stop_daemon(const char *client, const char *name, long *pid_out, char *why, size_t whylen)
{
    why[0] = '\0';
    long pid = *pid_out = clients_daemon_pidfile(client, name);
    if (!pid)
        return false;
    int pidfd = procsig_open((pid_t)pid);
    if (pidfd < 0 && errno == ESRCH) {
        *pid_out = 0;
        return false;
    }
    bool ok = clients_daemon_is(client, name, pid, why, whylen);
    if (ok)
        ok = procsig_send(pidfd, (pid_t)pid, SIGTERM);
    for (int waited = 0; ok && waited < DAEMON_STOP_MS && s_running(pidfd, pid); waited += 20) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (pidfd >= 0)
        close(pidfd);
    if (!ok && !why[0])
        *pid_out = 0; /* gone before it could be signalled */
    return ok;
}

/* What the client on PATH does itself. */
static int s_client_cmd(s_client_t *c, char *const argv[])
{
    buf_t err;
    buf_init(&err, 0);
    int rc = s_run(argv, &err);
    if (rc != 0) {
        char *e = buf_str(&err)[0] ? xstrdup(buf_str(&err)) : xstrdup(rc < 0 ? strerror(errno) : "no message");
        size_t n = strlen(e);
        while (n && e[n - 1] == '\n')
            e[--n] = '\0';
        snprintf(c->err, sizeof c->err, "`%s %s %s` failed (exit status %d): %s", c->client, argv[1], argv[2], rc, e);
        free(e);
    }
    buf_free(&err);
    return rc == 0 ? 0 : -1;
}

/* Registers NAME with one client. */
static int s_register(s_client_t *c, const s_opts_t *o, const char *command)
{
    if (c->on_path) {
        /* The client rewrites its file, without our mark: marked again. */
        bool mark = !fileio_is_file(c->cfg) || s_config_marked(c->client);
        if (c->registered) {
            char *rm[] = {c->prog, "rm", o->name, NULL};
            if (s_client_cmd(c, rm) < 0)
                return -1;
        }
        char *add[] = {c->prog, "add", o->name, (char *)command, "--as", o->name, NULL};
        if (s_client_cmd(c, add) < 0)
            return -1;
        if (mark)
            s_mark_config(c->client);
    } else {
        char *write_path = NULL;
        mode_t mode;
        yaml_block_t *y = s_load_config(c->cfg, &write_path, &mode, c->err, sizeof c->err);
        const char *const expose[] = {o->name};
        const yaml_block_field_t fields[] = {{"command", command, NULL, 0}, {"expose", NULL, expose, 1}};
        char serr[512];
        int rc = y ? yaml_block_set(y, "servers", o->name, fields, 2, serr, sizeof serr) : -1;
        if (y && rc < 0)
            snprintf(c->err, sizeof c->err, "cannot edit %s safely: %s", c->cfg, serr);
        if (rc == 0)
            rc = s_save_config(y, write_path, mode, c->err, sizeof c->err);
        yaml_block_destroy(&y);
        free(write_path);
        if (rc < 0 || s_write_shim(c->client, c->bindir, o->name, c->prog, c->err, sizeof c->err) < 0)
            return -1;
    }
    s_drop_cache(c->client, o->name);
    return 0;
}

/* ------------------------------------------------------------ install */

/* Which `name` runs on PATH, and whether it is one of the commands just made. */
static void s_path_report(s_client_t *cs, const bool *done, const char *name)
{
    char *found = fileio_which(name);
    char *dir = found ? s_dirname(found) : NULL;
    char *rdir = dir ? fileio_realpath(dir) : NULL;
    const s_client_t *first = NULL, *runs = NULL;
    int ndone = 0;
    for (size_t i = 0; i < CLIENTS_N; i++) {
        if (!done[i])
            continue;
        ndone++;
        if (!first)
            first = &cs[i];
        char *rbin = fileio_realpath(cs[i].bindir);
        if (rdir && rbin && strcmp(rdir, rbin) == 0 && !runs)
            runs = &cs[i];
        free(rbin);
    }
    free(rdir);
    free(dir);
    if (runs && ndone > 1)
        printf("`%s` on your PATH runs %s (%s is first in PATH)\n", name, runs->client, runs->bindir);
    else if (!runs && found)
        printf("\n`%s` on your PATH is %s, not this command: put %s before it in PATH, or choose another "
               "--name\n",
               name, found, first->bindir);
    else if (!found)
        printf("\n%s is not on your PATH, so `%s` is not found yet. Add it, e.g.:\n"
               "    echo 'export PATH=\"%s:$PATH\"' >> ~/.bashrc && . ~/.bashrc\n",
               first->bindir, name, first->bindir);
    free(found);
}

int install_main(int argc, char **argv, const char *self_argv0, const family_t *fam)
{
    s_opts_t o;
    int rc = s_parse(argc, argv, fam, true, &o);
    if (rc) {
        s_opts_free(&o);
        return rc == 1 ? 0 : rc;
    }
    char *self = install_self_path(self_argv0);
    if (!self) {
        fprintf(stderr, "%s install: cannot tell where this program is; run it by its path\n", fam->prog);
        s_opts_free(&o);
        return 1;
    }
    bool has_space = false;
    char *command = s_command(self, &o, &has_space);
    if (has_space)
        fprintf(stderr, "%s install: warning: a path contains a space; the `up` process of mcptocli splits the "
                        "command there (keep rat-py and the project on paths without spaces)\n",
                fam->prog);
    s_client_t cs[CLIENTS_N];
    bool want[CLIENTS_N] = {false}, done[CLIENTS_N] = {false}, any = false;
    for (size_t i = 0; i < CLIENTS_N; i++) {
        s_client_init(&cs[i], clients_names[i], o.name);
        want[i] = o.chosen ? o.client[i] : s_client_present(&cs[i]);
        any |= want[i];
    }
    bool none_found = !any;
    if (none_found)
        want[0] = true; /* neither is here yet: the current name */
    /* Every target is checked before any is changed: never half done. */
    int status = 0;
    for (size_t i = 0; i < CLIENTS_N && status == 0; i++) {
        s_client_t *c = &cs[i];
        if (!want[i])
            continue;
        if (c->cfg_error && !c->on_path) {
            /* (With its program on PATH, the client reads its own file.) */
            fprintf(stderr, "%s install: %s\n", fam->prog, c->err);
            status = 1;
        } else if (c->registered && !clients_command_is_rat(c->registered)) {
            fprintf(stderr,
                    "%s install: `%s` is already registered with %s (%s) for another program: %s\n"
                    "    choose another --name, or remove it first: %s rm %s\n",
                    fam->prog, o.name, c->client, c->cfg, c->registered, c->client, o.name);
            status = 1;
        } else if (c->exposer) {
            fprintf(stderr, "%s install: the command `%s` is already exposed by the %s server `%s` (%s); choose "
                            "another --name\n",
                    fam->prog, o.name, c->client, c->exposer, c->cfg);
            status = 1;
        }
    }
    for (size_t i = 0; i < CLIENTS_N && status == 0; i++) {
        s_client_t *c = &cs[i];
        if (!want[i])
            continue;
        if (s_register(c, &o, command) < 0) {
            fprintf(stderr, "%s install: %s\n", fam->prog, c->err);
            status = 1;
            break;
        }
        done[i] = true;
        printf("Registered %s as `%s` with %s, in %s:\n    %s\n", fam->prog, o.name, c->client, c->cfg, command);
        char *shim = xasprintf("%s/%s", c->bindir, o.name);
        char target[4096];
        ssize_t tl = readlink(shim, target, sizeof target - 1);
        if (tl > 0) {
            target[tl] = '\0';
            printf("Command: %s -> %s\n", shim, target);
        } else {
            printf("Command: %s (runs %s from PATH; %s is not installed yet: install it from "
                   "github.com/MaximeRivest/mcp2cli, then `%s` works)\n",
                   shim, c->client, c->client, o.name);
        }
        free(shim);
        long pid = clients_daemon_pid(c->client, o.name);
        if (pid)
            printf("`%s up` is running (pid %ld) with what was registered before: restart it: %s down; %s up\n",
                   o.name, pid, o.name, o.name);
    }
    if (status == 0) {
        if (none_found)
            printf("(neither mcptocli nor mcp2cli is here: registered for mcptocli, its current name; "
                   "--client mcp2cli registers for the older one)\n");
        printf("Start it with `%s up`, then: %s run 'x = 42; print(x)'\n", o.name, o.name);
        s_path_report(cs, done, o.name);
    }
    for (size_t i = 0; i < CLIENTS_N; i++)
        s_client_free(&cs[i]);
    free(command);
    free(self);
    s_opts_free(&o);
    return status;
}

/* ------------------------------------------------------------ uninstall */

/* Removes NAME from one client's config without its program: the entry,
 * the commands it exposed (and our own default one), its cache. */
static int s_unregister_yaml(s_client_t *c, const char *name, bool *removed_cmd)
{
    char *write_path = NULL;
    mode_t mode;
    char **exposed = NULL;
    int status = -1;
    yaml_block_t *y = s_load_config(c->cfg, &write_path, &mode, c->err, sizeof c->err);
    if (!y)
        goto out;
    size_t ne = yaml_block_list(y, "servers", name, "expose", &exposed);
    char serr[512];
    int rc = yaml_block_remove(y, "servers", name, serr, sizeof serr);
    if (rc < 0) {
        snprintf(c->err, sizeof c->err, "cannot edit %s safely: %s", c->cfg, serr);
        goto out;
    }
    if (rc == 1 && s_save_config(y, write_path, mode, c->err, sizeof c->err) < 0)
        goto out;
    /* Like `CLIENT rm`: the server's commands go with it. */
    for (size_t i = 0; i < ne; i++) {
        if (strchr(exposed[i], '/') || exposed[i][0] == '.')
            continue;
        char *path = xasprintf("%s/%s", c->bindir, exposed[i]);
        if (s_is_shim(path) && unlink(path) == 0)
            *removed_cmd = true;
        free(path);
    }
    status = 0;
out:
    strv_free(exposed);
    yaml_block_destroy(&y);
    free(write_path);
    return status;
}

/* Removes a leftover command of ours, bin/NAME, whose entry is gone. */
static bool s_remove_leftover(const s_client_t *c, const char *name)
{
    char *path = xasprintf("%s/%s", c->bindir, name);
    bool removed = s_is_shim(path) && unlink(path) == 0;
    free(path);
    return removed;
}

int install_uninstall_main(int argc, char **argv, const char *self_argv0, const family_t *fam)
{
    (void)self_argv0;
    s_opts_t o;
    int rc = s_parse(argc, argv, fam, false, &o);
    if (rc) {
        s_opts_free(&o);
        return rc == 1 ? 0 : rc;
    }
    int status = 0;
    bool said = false;
    for (size_t i = 0; i < CLIENTS_N; i++) {
        if (o.chosen && !o.client[i])
            continue;
        s_client_t c;
        s_client_init(&c, clients_names[i], o.name);
        if (c.cfg_error) {
            fprintf(stderr, "%s uninstall: %s\n", fam->prog, c.err);
            status = 1;
        } else if (c.registered && !clients_command_is_rat(c.registered)) {
            printf("`%s` in %s runs another program (%s): left alone\n", o.name, c.cfg, c.registered);
            said = true;
        } else if (c.registered) {
            bool marked = s_config_marked(c.client);
            long up_pid = 0;
            char up_why[4200];
            bool stopped = s_stop_daemon(c.client, o.name, &up_pid, up_why, sizeof up_why), removed_cmd = false;
            int r;
            if (c.on_path) {
                char *rm[] = {c.prog, "rm", o.name, NULL};
                r = s_client_cmd(&c, rm);
                removed_cmd = true;
            } else {
                r = s_unregister_yaml(&c, o.name, &removed_cmd);
            }
            if (r < 0) {
                fprintf(stderr, "%s uninstall: %s\n", fam->prog, c.err);
                status = 1;
            } else {
                s_drop_cache(c.client, o.name);
                s_tidy(c.client, marked);
                printf("Removed `%s` from %s (%s)%s%s\n", o.name, c.client, c.cfg,
                       removed_cmd ? ", with its command" : "", stopped ? "; stopped its `up` process" : "");
                if (!stopped && up_why[0])
                    printf("`%s up` (pid %ld) left running: %s; if it is yours, stop it: %s down (or kill %ld)\n",
                           o.name, up_pid, up_why, o.name, up_pid);
                said = true;
            }
        } else if (s_remove_leftover(&c, o.name)) {
            printf("`%s` was not registered with %s; removed its leftover command from %s\n", o.name, c.client,
                   c.bindir);
            said = true;
        }
        s_client_free(&c);
    }
    if (!said && status == 0)
        printf("`%s` is not registered with %s; nothing to do\n", o.name,
               o.chosen && o.client[0] != o.client[1] ? clients_names[o.client[0] ? 0 : 1]
                                                      : "mcptocli or mcp2cli");
    s_opts_free(&o);
    return status;
}
