/* install: registering rat-py with mcp2cli. */
#include "install.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "fileio.h"
#include "jpaths.h"
#include "mem.h"
#include "yaml_block.h"

#define CONFIG_MAX YAML_BLOCK_MAX_TEXT
#define STDERR_MAX 4096            /* bytes of mcp2cli's stderr kept for messages */
/* Marks the wrapper script we write when mcp2cli is not installed yet, so
 * uninstall removes only what we made. */
#define SHIM_MARK "# mcp2cli command shim written by rat-py install"

extern char **environ;

typedef struct {
    char *name;       /* owned, normalized */
    char *cwd;        /* owned, absolute */
    char *kernel, *venv, *python; /* owned, pass-through server options (paths absolute) */
} s_opts_t;

static void s_opts_free(s_opts_t *o)
{
    free(o->name);
    free(o->cwd);
    free(o->kernel);
    free(o->venv);
    free(o->python);
}

/* ------------------------------------------------------------ paths */

static char *s_xdg(const char *var, const char *fallback)
{
    const char *v = getenv(var);
    if (v && v[0] == '/')
        return xstrdup(v);
    return xasprintf("%s/%s", jpaths_home(), fallback);
}

char *install_mcp2cli_config_path(void)
{
    char *base = s_xdg("XDG_CONFIG_HOME", ".config");
    char *p = xasprintf("%s/mcp2cli/config.yaml", base);
    free(base);
    return p;
}

char *install_mcp2cli_bin_dir(void)
{
    char *base = s_xdg("XDG_DATA_HOME", ".local/share");
    char *p = xasprintf("%s/mcp2cli/bin", base);
    free(base);
    return p;
}

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

/* Whether dir is one of $PATH's entries. */
static bool s_on_path(const char *dir)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char *rdir = fileio_realpath(dir);
    char *copy = xstrdup(path), *save = NULL;
    bool on = false;
    for (char *e = strtok_r(copy, ":", &save); e && !on; e = strtok_r(NULL, ":", &save)) {
        char *re = fileio_realpath(e);
        on = strcmp(e, dir) == 0 || (re && rdir && strcmp(re, rdir) == 0);
        free(re);
    }
    free(copy);
    free(rdir);
    return on;
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

/* Runs argv (found on PATH) and waits. stdout is inherited unless quiet;
 * stderr is captured into err_out when given (bounded), else inherited.
 * Returns the exit status, or -1 when it could not run. */
static int s_run(char *const argv[], bool quiet, buf_t *err_out)
{
    int pipefd[2] = {-1, -1};
    if (err_out && pipe2(pipefd, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (quiet)
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (err_out)
        posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err_out)
        close(pipefd[1]);
    if (rc != 0) {
        if (err_out)
            close(pipefd[0]);
        errno = rc;
        return -1;
    }
    if (err_out) {
        char chunk[1024];
        ssize_t n;
        while ((n = read(pipefd[0], chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR)) {
            if (n > 0 && err_out->len + (size_t)n <= STDERR_MAX)
                buf_append(err_out, chunk, (size_t)n);
        }
        close(pipefd[0]);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* ------------------------------------------------------------ options */

/* mcp2cli's NormalizeCommandName: lowercase, `_` and spaces become `-`,
 * dashes trimmed and collapsed; then ^[a-z0-9][a-z0-9-]*$, not "mcp2cli". */
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
    if (!ok || strcmp(buf_str(&b), "mcp2cli") == 0) {
        snprintf(err, errlen, "--name '%s': use lowercase letters, digits and dashes (at most 63), not 'mcp2cli'",
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
                "Registers %s with mcp2cli as NAME (default: %s), so that `mcp2cli %s up` starts it and\n"
                "`%s run 'CODE'` runs code. The kernel runs in DIR (default: the current directory);\n"
                "--kernel, --venv and --python are passed on to the registered command.\n",
                fam->prog, fam->prog, fam->short_name, fam->short_name, fam->short_name);
    else
        fprintf(out,
                "Usage: %s uninstall [--name NAME]\n"
                "Removes the mcp2cli registration NAME (default: %s) and its command.\n",
                fam->prog, fam->short_name);
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
        } else if (install && (v = config_opt_value(argc, argv, &i, "--cwd", &missing))) {
            cwd = v;
        } else if (install && (v = config_opt_value(argc, argv, &i, "--kernel", &missing))) {
            free(o->kernel);
            o->kernel = xstrdup(v);
        } else if (install && (v = config_opt_value(argc, argv, &i, "--venv", &missing))) {
            free(o->venv);
            o->venv = fileio_realpath(v);
            if (!o->venv || !fileio_is_dir(o->venv)) {
                fprintf(stderr, "%s install: --venv %s: no such directory\n", fam->prog, v);
                return 2;
            }
        } else if (install && (v = config_opt_value(argc, argv, &i, "--python", &missing))) {
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
                          o->venv ? "--venv" : NULL, o->venv, o->python ? "--python" : NULL, o->python};
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

/* mcp2cli, when installed somewhere that is not on PATH. */
static char *s_find_mcp2cli_offpath(void)
{
    const char *home = jpaths_home();
    char *cands[4];
    size_t n = 0;
    if (getenv("GOBIN") && *getenv("GOBIN"))
        cands[n++] = xasprintf("%s/mcp2cli", getenv("GOBIN"));
    if (getenv("GOPATH") && *getenv("GOPATH")) {
        const char *gp = getenv("GOPATH");
        const char *colon = strchr(gp, ':');
        cands[n++] = xasprintf("%.*s/bin/mcp2cli", (int)(colon ? colon - gp : (long)strlen(gp)), gp);
    }
    cands[n++] = xasprintf("%s/go/bin/mcp2cli", home);
    cands[n++] = xasprintf("%s/.local/bin/mcp2cli", home);
    char *found = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!found && fileio_is_executable(cands[i]))
            found = xstrdup(cands[i]);
        free(cands[i]);
    }
    return found;
}

/* Whether path is a shim we may replace or remove: a symlink (what mcp2cli
 * makes) or our own wrapper script. */
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

/* Creates bin/NAME: a symlink to mcp2cli when we know where it is (exactly
 * what `mcp2cli add --as NAME` makes; mcp2cli reads its argv[0] to know it
 * runs as NAME), otherwise a bash wrapper that finds mcp2cli on PATH at run
 * time and passes NAME as argv[0]. */
static int s_write_shim(const char *bindir, const char *name, const char *target, char *err, size_t errlen)
{
    char *path = xasprintf("%s/%s", bindir, name);
    char *tmp = xasprintf("%s/.%s.rat-tmp", bindir, name);
    int rc = -1;
    struct stat st;
    if (lstat(path, &st) == 0 && !s_is_shim(path)) {
        snprintf(err, errlen, "%s exists and is not an mcp2cli command; remove it or choose another --name", path);
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
        char *script = xasprintf("#!/bin/bash\n" SHIM_MARK "\n"
                                 "# mcp2cli runs as `%s` when its argv[0] says so.\n"
                                 "exec -a %s mcp2cli \"$@\"\n",
                                 name, name);
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
        snprintf(err, errlen, "cannot read %s: %s", path, errno == EFBIG ? "larger than 1 MiB" : strerror(errno));
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
    /* A new file starts the way mcp2cli writes one. */
    bool empty = true;
    for (size_t i = 0; text && i < len && empty; i++)
        empty = text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t';
    static const char fresh[] = "version: 1\n";
    char perr[256];
    yaml_block_t *y = empty ? yaml_block_parse(fresh, strlen(fresh), perr, sizeof perr)
                            : yaml_block_parse(text, len, perr, sizeof perr);
    if (!y)
        snprintf(err, errlen, "cannot edit %s safely: %s", path, perr);
    free(text);
    return y;
}

static int s_save_config(yaml_block_t *y, const char *path, mode_t mode, char *err, size_t errlen)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
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

static void s_path_hint(const char *bindir, const char *name)
{
    if (s_on_path(bindir))
        return;
    printf("\n%s is not on your PATH, so `%s` is not found yet. Add it, e.g.:\n"
           "    echo 'export PATH=\"%s:$PATH\"' >> ~/.bashrc && . ~/.bashrc\n",
           bindir, name, bindir);
}

/* ------------------------------------------------------------ install */

static int s_install_yaml(const family_t *fam, const s_opts_t *o, const char *command)
{
    char err[1024];
    char *cfg = install_mcp2cli_config_path(), *bindir = install_mcp2cli_bin_dir(), *write_path = NULL;
    int status = 1;
    mode_t mode;
    yaml_block_t *y = s_load_config(cfg, &write_path, &mode, err, sizeof err);
    if (!y)
        goto fail;
    char *owner = s_exposed_by(y, o->name, o->name);
    if (owner) {
        snprintf(err, sizeof err, "the command `%s` is already exposed by the mcp2cli server `%s` (%s); choose "
                                  "another --name",
                 o->name, owner, cfg);
        free(owner);
        goto fail;
    }
    const char *const expose[] = {o->name};
    const yaml_block_field_t fields[] = {{"command", command, NULL, 0}, {"expose", NULL, expose, 1}};
    char serr[512];
    int rc = yaml_block_set(y, "servers", o->name, fields, 2, serr, sizeof serr);
    if (rc < 0)
        snprintf(err, sizeof err, "cannot edit %s safely: %s", cfg, serr);
    if (rc < 0 || s_save_config(y, write_path, mode, err, sizeof err) < 0)
        goto fail;
    char *target = s_find_mcp2cli_offpath();
    if (s_write_shim(bindir, o->name, target, err, sizeof err) < 0) {
        free(target);
        goto fail;
    }
    printf("Registered %s with mcp2cli as `%s` in %s:\n    %s\n", fam->prog, o->name, cfg, command);
    if (target)
        printf("Command: %s/%s -> %s\n", bindir, o->name, target);
    else
        printf("Command: %s/%s (runs mcp2cli from PATH; mcp2cli is not installed yet: install it, then `%s` "
               "works)\n",
               bindir, o->name, o->name);
    printf("Start it with `mcp2cli %s up`, then: %s run 'x = 42; print(x)'\n", o->name, o->name);
    s_path_hint(bindir, o->name);
    free(target);
    status = 0;
    goto out;
fail:
    fprintf(stderr, "%s install: %s\n", fam->prog, err);
out:
    yaml_block_destroy(&y);
    free(write_path);
    free(bindir);
    free(cfg);
    return status;
}

static int s_install_mcp2cli(const family_t *fam, const s_opts_t *o, const char *mcp2cli, const char *command)
{
    /* Exactly mcp2cli's documented sequence; `rm` fails when NAME is not
     * registered, which is fine. */
    char *rm[] = {(char *)mcp2cli, "rm", o->name, NULL};
    (void)s_run(rm, true, NULL);
    char *add[] = {(char *)mcp2cli, "add", o->name, (char *)command, "--as", o->name, NULL};
    int rc = s_run(add, false, NULL);
    if (rc != 0) {
        if (rc < 0)
            fprintf(stderr, "%s install: cannot run %s: %s\n", fam->prog, mcp2cli, strerror(errno));
        else
            fprintf(stderr, "%s install: `mcp2cli add %s ...` failed (exit status %d)\n", fam->prog, o->name, rc);
        return 1;
    }
    printf("Registered %s with mcp2cli as `%s`:\n    %s\n", fam->prog, o->name, command);
    printf("Start it with `mcp2cli %s up`, then: %s run 'x = 42; print(x)'\n", o->name, o->name);
    char *bindir = install_mcp2cli_bin_dir();
    s_path_hint(bindir, o->name);
    free(bindir);
    return 0;
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
        fprintf(stderr, "%s install: warning: a path contains a space; mcp2cli's `up` daemon may split the "
                        "command there (keep rat-py and the project on paths without spaces)\n",
                fam->prog);
    char *mcp2cli = fileio_which("mcp2cli");
    rc = mcp2cli ? s_install_mcp2cli(fam, &o, mcp2cli, command) : s_install_yaml(fam, &o, command);
    free(mcp2cli);
    free(command);
    free(self);
    s_opts_free(&o);
    return rc;
}

/* ------------------------------------------------------------ uninstall */

static int s_uninstall_yaml(const family_t *fam, const s_opts_t *o)
{
    char err[1024];
    char *cfg = install_mcp2cli_config_path(), *bindir = install_mcp2cli_bin_dir(), *write_path = NULL;
    int status = 1;
    mode_t mode;
    char **exposed = NULL;
    yaml_block_t *y = NULL;
    if (!fileio_is_file(cfg)) {
        printf("`%s` is not registered with mcp2cli (%s does not exist); nothing to do\n", o->name, cfg);
        status = 0;
        goto out;
    }
    y = s_load_config(cfg, &write_path, &mode, err, sizeof err);
    if (!y)
        goto fail;
    size_t ne = yaml_block_list(y, "servers", o->name, "expose", &exposed);
    char serr[512];
    int rc = yaml_block_remove(y, "servers", o->name, serr, sizeof serr);
    if (rc < 0) {
        snprintf(err, sizeof err, "cannot edit %s safely: %s", cfg, serr);
        goto fail;
    }
    if (rc == 1 && s_save_config(y, write_path, mode, err, sizeof err) < 0)
        goto fail;
    /* Like `mcp2cli rm`: the server's commands go with it; our own default
     * command name too, when it is a shim (an earlier install made it). */
    bool removed_shim = false;
    for (size_t i = 0; i <= ne; i++) {
        const char *cmd = i < ne ? exposed[i] : o->name;
        if (strchr(cmd, '/') || cmd[0] == '.')
            continue;
        char *path = xasprintf("%s/%s", bindir, cmd);
        if (s_is_shim(path) && unlink(path) == 0)
            removed_shim = true;
        free(path);
    }
    if (rc == 1)
        printf("Removed `%s` from %s%s\n", o->name, cfg, removed_shim ? " and its command" : "");
    else if (removed_shim)
        printf("`%s` was not in %s; removed its leftover command from %s\n", o->name, cfg, bindir);
    else
        printf("`%s` is not registered with mcp2cli (%s); nothing to do\n", o->name, cfg);
    status = 0;
    goto out;
fail:
    fprintf(stderr, "%s uninstall: %s\n", fam->prog, err);
out:
    strv_free(exposed);
    yaml_block_destroy(&y);
    free(write_path);
    free(bindir);
    free(cfg);
    return status;
}

static int s_uninstall_mcp2cli(const family_t *fam, const s_opts_t *o, const char *mcp2cli)
{
    char *rm[] = {(char *)mcp2cli, "rm", o->name, NULL};
    buf_t err;
    buf_init(&err, 0);
    int rc = s_run(rm, true, &err);
    int status = 0;
    if (rc == 0) {
        printf("Removed `%s` from mcp2cli\n", o->name);
    } else if (rc > 0 && strstr(buf_str(&err), "not found")) {
        printf("`%s` is not registered with mcp2cli; nothing to do\n", o->name);
    } else {
        fprintf(stderr, "%s uninstall: `mcp2cli rm %s` failed (%s): %s\n", fam->prog, o->name,
                rc < 0 ? strerror(errno) : "non-zero exit status", buf_str(&err));
        status = 1;
    }
    buf_free(&err);
    return status;
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
    char *mcp2cli = fileio_which("mcp2cli");
    rc = mcp2cli ? s_uninstall_mcp2cli(fam, &o, mcp2cli) : s_uninstall_yaml(fam, &o);
    free(mcp2cli);
    s_opts_free(&o);
    return rc;
}
