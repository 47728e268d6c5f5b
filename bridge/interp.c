/* interp: which Python runs the default kernel. */
#include "interp.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "mem.h"

void interp_free(interp_t *it)
{
    free(it->python);
    free(it->venv);
    free(it->note);
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

/* ./.venv in dir or its parents. */
static char *s_find_dotvenv(const char *dir)
{
    char *d = fileio_realpath(dir ? dir : ".");
    while (d) {
        char *cand = xasprintf("%s/.venv", d);
        char *py = s_env_python(cand);
        if (py) {
            free(py);
            free(d);
            return cand;
        }
        free(cand);
        char *slash = strrchr(d, '/');
        if (!slash || slash == d) {
            if (slash == d && d[1]) {
                d[1] = '\0';
                continue;
            }
            break;
        }
        *slash = '\0';
    }
    free(d);
    return NULL;
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
        env = s_find_dotvenv(cwd);
        source = ".venv";
    }
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
    if (interp_env_has_ipykernel(env)) {
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

extern char **environ;

static bool s_can_import_ipykernel(const char *python)
{
    char *const argv[] = {(char *)python, "-c", "import ipykernel", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, python, &fa, NULL, argv, environ);
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
