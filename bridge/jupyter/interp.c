/* interp: which Python runs the default kernel. */
#include "interp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fileio.h"
#include "interp_home.h"
#include "jpaths.h"
#include "kernel_proc.h"
#include "mem.h"

#define QUERY_TIMEOUT_MS 10000   /* for one `python -c` asking about ipykernel */
#define QUERY_MAX_OUT (64 * 1024)
#define CACHE_MAX (64 * 1024)
#define CACHE_MAGIC "rat-py venv cache 1"

void interp_free(interp_t *it)
{
    free(it->python);
    free(it->venv);
    free(it->note);
    free(it->refused);
    memset(it, 0, sizeof *it);
}

bool interp_env_has_ipykernel(const char *prefix)
{
    static const char *libs[] = {"lib", "lib64"};
    bool found = false;
    for (size_t l = 0; l < 2 && !found; l++) {
        char *libdir = xasprintf("%s/%s", prefix, libs[l]);
        DIR *d = opendir(libdir);
        if (d) {
            struct dirent *e;
            while (!found && (e = readdir(d))) {
                if (strncmp(e->d_name, "python", 6) != 0)
                    continue;
                char *p = xasprintf("%s/%s/site-packages/ipykernel/__init__.py", libdir, e->d_name);
                found = fileio_is_file(p);
                free(p);
            }
            closedir(d);
        }
        free(libdir);
    }
    return found;
}

static char *s_env_python(const char *venv)
{
    static const char *names[] = {"bin/python", "bin/python3"};
    for (size_t i = 0; i < 2; i++) {
        char *p = xasprintf("%s/%s", venv, names[i]);
        if (fileio_is_executable(p))
            return p;
        free(p);
    }
    return NULL;
}

/* ------------------------------------------------------------ trust */

/* Whether gid is the user's private group (a user-private-group system's
 * default, where files are group-writable under umask 002): our primary
 * group, named as we are, with no other members listed, and no other user
 * whose primary group it is (such a user belongs to it without being
 * listed in the group's members). Users are enumerated only when a
 * group-writable entry is met. */
static bool s_private_group(gid_t gid)
{
    if (gid != getegid())
        return false;
    uid_t me = geteuid();
    struct passwd *pw = getpwuid(me);
    char *name = pw && pw->pw_name ? xstrdup(pw->pw_name) : NULL; /* getgrgid may reuse pw's buffer */
    struct group *gr = getgrgid(gid);
    bool alone = gr && (!gr->gr_mem || !gr->gr_mem[0] || (name && !strcmp(gr->gr_mem[0], name) && !gr->gr_mem[1]));
    bool own = name && gr && gr->gr_name && strcmp(gr->gr_name, name) == 0 && alone;
    if (own) {
        setpwent();
        for (struct passwd *p; own && (p = getpwent());)
            own = p->pw_gid != gid || p->pw_uid == me;
        endpwent();
    }
    free(name);
    return own;
}

/* Why st (of path) cannot be trusted as part of a venv found by discovery,
 * or NULL: it belongs to neither us nor root, or group or others may write
 * it. sticky_ok: a directory with the sticky bit (/tmp) passes the second
 * test, since there only an entry's owner may rename or remove it and the
 * entries that matter are checked themselves. A symlink's own mode means
 * nothing; its owner does. */
static char *s_distrust(const char *path, const struct stat *st, bool sticky_ok)
{
    if (st->st_uid != geteuid() && st->st_uid != 0) {
        struct passwd *pw = getpwuid(st->st_uid);
        return pw && pw->pw_name ? xasprintf("%s belongs to %s (uid %u), not to you or root", path, pw->pw_name,
                                             (unsigned)st->st_uid)
                                 : xasprintf("%s belongs to uid %u, not to you or root", path, (unsigned)st->st_uid);
    }
    if (S_ISLNK(st->st_mode) || !(st->st_mode & (S_IWGRP | S_IWOTH)))
        return NULL;
    if (!(st->st_mode & S_IWOTH) && s_private_group(st->st_gid))
        return NULL; /* group-writable, but the group is ours alone (umask 002 systems) */
    if (sticky_ok && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))
        return NULL;
    return xasprintf("%s is writable by %s (mode %04o)", path, st->st_mode & S_IWOTH ? "others" : "its group",
                     (unsigned)(st->st_mode & 07777));
}

/* s_distrust of path itself (lstat: a symlink's owner) and, for a symlink,
 * of what it leads to (stat). NULL when both pass. */
static char *s_distrust_path(const char *path, bool sticky_ok)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return xasprintf("%s cannot be examined (%s)", path, strerror(errno));
    char *why = s_distrust(path, &st, sticky_ok);
    if (why || !S_ISLNK(st.st_mode))
        return why;
    if (stat(path, &st) < 0)
        return xasprintf("%s cannot be examined (%s)", path, strerror(errno));
    char *real = fileio_realpath(path);
    why = s_distrust(real ? real : path, &st, sticky_ok);
    if (!why && real && strrchr(real, '/') != real) {
        /* whoever may write the target's directory may put another there */
        *strrchr(real, '/') = '\0';
        struct stat dst;
        if (stat(real, &dst) < 0)
            why = xasprintf("%s cannot be examined (%s)", real, strerror(errno));
        else
            why = s_distrust(real, &dst, true);
    }
    free(real);
    return why;
}

/* Why the path cannot be trusted as the way to a venv's file, or NULL:
 * resolved component by component as the kernel resolves it, every
 * directory from / down to it and every symbolic link met on the way (each
 * link of a chain, and the directories its target lies in) must pass
 * s_distrust (a sticky directory passes). Whoever may write one of them
 * could change what the path names after the test, and the kernel is
 * started again by the same path at every restart. OpenSSH's safe_path
 * checks a key file's directories up to / the same way. */
static char *s_distrust_walk(const char *path)
{
    char *cwd = path[0] == '/' ? NULL : getcwd(NULL, 0);
    if (path[0] != '/' && !cwd)
        return xasprintf("%s cannot be examined (%s)", path, strerror(errno));
    char *todo = cwd ? xasprintf("%s/%s", cwd, path) : xstrdup(path);
    free(cwd);
    char *done = xstrdup(""); /* resolved so far: "" is / */
    struct stat st;
    char *why = lstat("/", &st) < 0 ? xasprintf("/ cannot be examined (%s)", strerror(errno))
                                    : s_distrust("/", &st, true);
    int links = 0;
    char *rest = todo;
    while (!why && *rest) {
        while (*rest == '/')
            rest++;
        if (!*rest)
            break;
        size_t n = strcspn(rest, "/");
        char *comp = xstrndup(rest, n);
        rest += n;
        if (!strcmp(comp, ".")) {
            free(comp);
            continue;
        }
        if (!strcmp(comp, "..")) {
            char *sl = strrchr(done, '/');
            if (sl)
                *sl = '\0';
            free(comp);
            continue;
        }
        char *cand = xasprintf("%s/%s", done, comp);
        free(comp);
        if (lstat(cand, &st) < 0) {
            why = xasprintf("%s cannot be examined (%s)", cand, strerror(errno));
        } else if (!(why = s_distrust(cand, &st, true)) && S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t tl = readlink(cand, target, sizeof target - 1);
            if (tl <= 0 || ++links > 40) {
                why = xasprintf("%s cannot be examined (%s)", cand, tl <= 0 ? strerror(errno) : "too many links");
            } else {
                target[tl] = '\0';
                char *next = xasprintf("%s/%s", target, rest);
                free(todo);
                todo = rest = next;
                if (target[0] == '/')
                    done[0] = '\0';
            }
        } else if (!why) {
            free(done);
            done = cand;
            cand = NULL;
        }
        free(cand);
    }
    free(todo);
    free(done);
    return why;
}

/* Why the venv env, found by discovery, is not to be run, or NULL: the
 * environment directory, its bin, and its interpreter (the link and the
 * file it leads to) must each be ours or root's and not writable by group
 * or others, and so must everything on the interpreter's path from /
 * (s_distrust_walk). */
static char *s_distrust_venv(const char *env, const char *python)
{
    char *bin = xasprintf("%s/bin", env);
    char *why = s_distrust_path(env, false);
    if (!why)
        why = s_distrust_path(bin, false);
    if (!why)
        why = s_distrust_path(python, false);
    if (!why)
        why = s_distrust_walk(python);
    free(bin);
    return why;
}

char *interp_venv_distrust(const char *dir, const char *env)
{
    char *d = fileio_realpath(dir ? dir : ".");
    char *holder = xstrdup(env);
    char *slash = strrchr(holder, '/');
    if (slash && slash != holder)
        *slash = '\0';
    else if (slash)
        holder[1] = '\0';
    char *up = fileio_realpath(holder);
    free(holder);
    char *why = NULL;
    if (!d || !up) {
        why = xasprintf("%s cannot be examined (%s)", d ? env : dir, strerror(errno));
    } else {
        /* dir and each parent up to the venv's directory; that one alone
         * when it is not above dir */
        size_t ul = strlen(up);
        bool above = strncmp(d, up, ul) == 0 && (d[ul] == '/' || d[ul] == '\0' || ul == 1);
        char *cur = above ? d : up;
        while (!why) {
            why = s_distrust_path(cur, true);
            if (why || strcmp(cur, up) == 0)
                break;
            char *sl = strrchr(cur, '/');
            if (!sl || !cur[1])
                break;
            if (sl == cur)
                cur[1] = '\0';
            else
                *sl = '\0';
        }
        if (!why) {
            char *py = s_env_python(env);
            if (py)
                why = s_distrust_venv(env, py);
            else
                why = s_distrust_path(env, false);
            if (!why && !py)
                why = s_distrust_walk(env);
            free(py);
        }
    }
    free(d);
    free(up);
    return why;
}

/* A venv found by discovery: ./.venv in dir or its parents, else ./venv in
 * dir itself when it is a venv (pyvenv.cfg): a directory named venv higher
 * up (~/venv) may be anyone's, a .venv is by convention the project's.
 *
 * It is trusted the way git trusts a repository found in a parent
 * (safe.directory, CVE-2022-24765): the venv and every directory from dir
 * up to the one holding it must belong to us or root and be writable by
 * no one else (s_distrust). The walk stops after the home directory and
 * before a parent on another file system. Returns the venv (owned) or
 * NULL; a venv found but not trusted is returned NULL with *refused set
 * to its path and *why to the reason (both owned). */
static char *s_find_venv(const char *dir, char **refused, char **why)
{
    *refused = *why = NULL;
    char *d = fileio_realpath(dir ? dir : ".");
    if (!d)
        return NULL;
    struct stat st0;
    if (stat(d, &st0) < 0) {
        free(d);
        return NULL;
    }
    char *home = fileio_realpath(jpaths_home());
    char *way = NULL; /* the first directory on the way that is not trusted */
    char *found = NULL;
    {
        char *dot = xasprintf("%s/.venv", d), *plain = xasprintf("%s/venv", d), *cfg = xasprintf("%s/venv/pyvenv.cfg", d);
        char *py = fileio_is_dir(dot) ? NULL : s_env_python(plain);
        if (py && fileio_is_file(cfg)) {
            way = s_distrust_path(d, true);
            char *bad = way ? way : s_distrust_venv(plain, py);
            way = NULL;
            if (bad) {
                *refused = plain;
                *why = bad;
                plain = NULL;
            } else {
                found = plain;
                plain = NULL;
            }
        }
        free(py);
        free(dot);
        free(cfg);
        free(plain);
        if (found || *refused) {
            free(home);
            free(d);
            return found;
        }
    }
    while (d) {
        if (!way)
            way = s_distrust_path(d, true);
        char *cand = xasprintf("%s/.venv", d);
        char *py = s_env_python(cand);
        if (py) {
            char *bad = way ? way : s_distrust_venv(cand, py);
            way = NULL;
            free(py);
            if (bad) {
                *refused = cand;
                *why = bad;
                cand = NULL;
            } else {
                found = cand;
                cand = NULL;
            }
            break;
        }
        free(cand);
        if (home && strcmp(d, home) == 0)
            break; /* above home is not the project's */
        char *slash = strrchr(d, '/');
        if (!slash || !d[1])
            break; /* at / */
        if (slash == d)
            d[1] = '\0';
        else
            *slash = '\0';
        struct stat st;
        if (stat(d, &st) < 0 || st.st_dev != st0.st_dev)
            break; /* another file system: git's GIT_DISCOVERY_ACROSS_FILESYSTEM default */
    }
    free(way);
    free(home);
    free(d);
    return found;
}

/* ------------------------------------------------------------ system site-packages */

/* Whether env's pyvenv.cfg says include-system-site-packages = true (read
 * the way site.py reads it: keys case-insensitive, value "true" in any case). */
static bool s_system_site(const char *env)
{
    char *path = xasprintf("%s/pyvenv.cfg", env);
    size_t len = 0;
    char *text = fileio_read(path, CACHE_MAX, &len);
    free(path);
    bool on = false;
    char *save = NULL;
    for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(l, '=');
        if (!eq)
            continue;
        char *k = l, *v = eq + 1, *ke = eq;
        while (*k == ' ' || *k == '\t')
            k++;
        while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
            ke--;
        *ke = '\0';
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vl = strlen(v);
        while (vl && strchr(" \t\r", v[vl - 1]))
            v[--vl] = '\0';
        if (strcasecmp(k, "include-system-site-packages") == 0)
            on = strcasecmp(v, "true") == 0;
    }
    free(text);
    return on;
}

/* Runs `python -c code` with stdin and stderr on /dev/null and collects at
 * most QUERY_MAX_OUT bytes of stdout within QUERY_TIMEOUT_MS (then the
 * process is killed). Returns the exit status, or -1. */
static int s_run_python(const char *python, const char *code, buf_t *out)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -1;
    char *const argv[] = {(char *)python, "-c", (char *)code, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    char **env = kernel_proc_environ(); /* without rat-py's secrets */
    int rc = posix_spawn(&pid, python, &fa, NULL, argv, env);
    strv_free(env);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    if (rc != 0) {
        close(pfd[0]);
        return -1;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool timed_out = false;
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = QUERY_TIMEOUT_MS - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {pfd[0], POLLIN, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break; /* not a wait that more polling would end: do not spin */
        if (r == 0)
            continue;
        char chunk[4096];
        ssize_t n = read(pfd[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (out->len + (size_t)n <= QUERY_MAX_OUT)
            buf_append(out, chunk, (size_t)n);
    }
    close(pfd[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (timed_out)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A directory's modification time as text ("-" when it does not exist):
 * installing or removing a package changes its site directory's. */
static char *s_stamp(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return xstrdup("-");
    return xasprintf("%lld.%09ld", (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

static char *s_cache_path(const char *env)
{
    const char *x = getenv("XDG_CACHE_HOME");
    char *dir = x && x[0] == '/' ? xasprintf("%s/rat-py", x) : xasprintf("%s/.cache/rat-py", jpaths_home());
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)env; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    char *path = xasprintf("%s/venv-%016llx", dir, (unsigned long long)h);
    free(dir);
    return path;
}

/* The cached answer for env, or -1 when there is none or it is stale. The
 * cache names the files whose times decide the answer: pyvenv.cfg, the
 * interpreter, and every directory on the interpreter's sys.path. */
static int s_cache_get(const char *cache, const char *env, const char *python)
{
    size_t len = 0;
    char *text = fileio_read(cache, CACHE_MAX, &len);
    if (!text)
        return -1;
    int answer = -1;
    bool valid = false;
    char *save = NULL;
    size_t i = 0;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save), i++) {
        if (i == 0) {
            valid = strcmp(l, CACHE_MAGIC) == 0;
        } else if (i == 1) {
            valid = strncmp(l, "env ", 4) == 0 && strcmp(l + 4, env) == 0;
        } else if (i == 2) {
            valid = strncmp(l, "python ", 7) == 0 && strcmp(l + 7, python) == 0;
        } else if (strncmp(l, "stamp ", 6) == 0) {
            char *sp = strchr(l + 6, ' ');
            if (!sp) {
                valid = false;
            } else {
                *sp = '\0';
                char *now = s_stamp(sp + 1);
                valid = strcmp(now, l + 6) == 0;
                free(now);
            }
        } else if (strncmp(l, "ipykernel ", 10) == 0) {
            answer = strcmp(l + 10, "yes") == 0 ? 1 : 0;
        } else {
            valid = false;
        }
        if (!valid)
            break;
    }
    free(text);
    return valid ? answer : -1;
}

/* Asks env's interpreter whether it can import ipykernel (with the base
 * interpreter's site-packages a --system-site-packages venv sees), and
 * which directories its answer depends on; caches both. Returns 1, 0, or
 * -1 when the interpreter could not answer. */
static int s_ask_python(const char *cache, const char *env, const char *python)
{
    static const char code[] =
        "import sys, importlib.util\n"
        "sys.path[:] = [p for p in sys.path if p]\n"
        "ok = importlib.util.find_spec('ipykernel') is not None\n"
        "sys.stdout.write('\\0'.join(['yes' if ok else 'no'] + sys.path))\n";
    buf_t out;
    buf_init(&out, 0);
    int rc = s_run_python(python, code, &out);
    int answer = -1;
    const char *o = buf_str(&out);
    if (rc == 0 && out.len >= 2) {
        size_t first = strnlen(o, out.len);
        if ((first == 3 && !memcmp(o, "yes", 3)) || (first == 2 && !memcmp(o, "no", 2)))
            answer = o[0] == 'y';
    }
    if (answer >= 0) {
        buf_t c;
        buf_init(&c, 0);
        char *cfg = xasprintf("%s/pyvenv.cfg", env);
        char *st_cfg = s_stamp(cfg), *st_py = s_stamp(python);
        buf_printf(&c, CACHE_MAGIC "\nenv %s\npython %s\nstamp %s %s\nstamp %s %s\n", env, python, st_cfg, cfg,
                   st_py, python);
        free(st_cfg);
        free(st_py);
        free(cfg);
        bool ok = true;
        for (size_t at = strnlen(o, out.len) + 1; at < out.len;) {
            size_t n = strnlen(o + at, out.len - at);
            char *dir = xstrndup(o + at, n);
            if (strchr(dir, '\n') || dir[0] != '/')
                ok = false; /* not a path this cache can name; do not cache */
            char *st = s_stamp(dir);
            buf_printf(&c, "stamp %s %s\n", st, dir);
            free(st);
            free(dir);
            at += n + 1;
        }
        buf_printf(&c, "ipykernel %s\n", answer ? "yes" : "no");
        char *dir = xstrdup(cache);
        *strrchr(dir, '/') = '\0';
        char *parent = xstrdup(dir);
        *strrchr(parent, '/') = '\0';
        (void)mkdir(parent, 0700);
        if (ok && (mkdir(dir, 0700) == 0 || errno == EEXIST))
            (void)fileio_write_atomic(cache, c.data, c.len, 0600); /* a cache: failing to write it is fine */
        free(parent);
        free(dir);
        buf_free(&c);
    }
    buf_free(&out);
    return answer;
}

/* Whether env's interpreter finds ipykernel: in the venv's own
 * site-packages (looked up on disk, no Python started), or, when pyvenv.cfg
 * includes the system site-packages, anywhere on its sys.path (asked of the
 * interpreter once, then cached until one of those directories changes). */
static bool s_venv_has_ipykernel(const char *env, const char *python)
{
    if (interp_env_has_ipykernel(env))
        return true;
    if (!s_system_site(env))
        return false;
    char *cache = s_cache_path(env);
    int answer = s_cache_get(cache, env, python);
    if (answer < 0)
        answer = s_ask_python(cache, env, python);
    free(cache);
    return answer == 1;
}

int interp_resolve(const char *cwd, const char *python, const char *venv, interp_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (python) {
        char *p = fileio_which(python);
        if (!p) {
            snprintf(err, errlen, "--python %s: no such executable", python);
            return -1;
        }
        out->python = p;
        out->note = xasprintf("interpreter %s (from --python)", p);
        return 0;
    }
    char *env = NULL;
    const char *source = NULL;
    if (venv) {
        env = fileio_realpath(venv);
        if (!env || !fileio_is_dir(env)) {
            snprintf(err, errlen, "--venv %s: no such directory", venv);
            free(env);
            return -1;
        }
        source = "--venv";
    } else if (getenv("VIRTUAL_ENV") && *getenv("VIRTUAL_ENV")) {
        env = xstrdup(getenv("VIRTUAL_ENV"));
        source = "VIRTUAL_ENV";
    } else {
        char *refused = NULL, *why = NULL;
        env = s_find_venv(cwd, &refused, &why);
        source = env && strcmp(strrchr(env, '/'), "/venv") == 0 ? "venv" : ".venv";
        if (refused) {
            out->refused = xasprintf("the venv %s was found but not used: %s; to use it anyway, start rat-py with "
                                     "--venv %s",
                                     refused, why, refused);
            out->note = xstrdup(out->refused);
            free(refused);
            free(why);
        }
    }
    if (!env && (env = interp_home_env()) != NULL)
        source = "the environment rat-py is installed in";
    if (!env)
        return 0;
    out->venv = env;
    char *py = s_env_python(env);
    if (!py) {
        out->note = xasprintf("venv %s (%s) has no bin/python; using the python3 kernelspec", env, source);
        if (venv) {
            snprintf(err, errlen, "--venv %s: no bin/python in it", venv);
            interp_free(out);
            return -1;
        }
        return 0;
    }
    if (s_venv_has_ipykernel(env, py)) {
        out->python = py;
        out->note = xasprintf("venv %s (%s)", env, source);
        return 0;
    }
    out->note = xasprintf("venv %s (%s) lacks ipykernel, so the python3 kernelspec is used; "
                          "to run in the venv: %s -m pip install ipykernel",
                          env, source, py);
    free(py);
    if (venv) {
        snprintf(err, errlen, "--venv %s has no ipykernel; install it with: %s/bin/python -m pip install ipykernel",
                 venv, env);
        interp_free(out);
        return -1;
    }
    return 0;
}

static bool s_can_import_ipykernel(const char *python)
{
    char *const argv[] = {(char *)python, "-c", "import ipykernel", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    char **env = kernel_proc_environ(); /* without rat-py's secrets */
    int rc = posix_spawn(&pid, python, &fa, NULL, argv, env);
    strv_free(env);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return false;
    int status = 0;
    for (int waited = 0; waited < 10000; waited += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (r < 0)
            return false;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return false;
}

char *interp_find_python_with_ipykernel(void)
{
    const char *cands[] = {"python3", "/usr/bin/python3", "python"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        char *p = fileio_which(cands[i]);
        if (p && s_can_import_ipykernel(p))
            return p;
        free(p);
    }
    return NULL;
}
