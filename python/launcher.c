/* launcher: the wheel's bin/rat-py (and bin/rat, bin/rat-r, ... : copies of
 * this one small program). It execs the real rat-py, which the wheel keeps
 * in site-packages/rat_py/bin, with argv unchanged: argv[0] is still the name
 * the user ran, so the name picks the family member (bridge/cli/family.c) or
 * the manager, and `install` registers the bin/ path, as it would a symlink
 * of a `cmake --install`.
 *
 * Why not the program itself in bin/: its libraries (auditwheel's
 * rat_py.libs) sit at a path relative to site-packages, and bin/ is at no
 * fixed place relative to that (lib/python3.X/site-packages, X unknown to a
 * py3 wheel; dist-packages under Debian's /usr/local). auditwheel's answer,
 * a Python shim, puts Python's start-up (tens of ms) in front of every
 * spawn; this costs one exec of a program that needs only libc
 * (doc/packaging.md has the figures). */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    (void)argc;
    char bin[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", bin, sizeof bin - 1);
    if (n <= 0) {
        fprintf(stderr, "rat-py: cannot read /proc/self/exe: %s\n", strerror(errno));
        return 127;
    }
    bin[n] = '\0';
    char *slash = strrchr(bin, '/');
    if (slash)
        *slash = '\0';
    /* The environment's prefix is bin/..: a venv, pipx's and uv tool's
     * venvs, ~/.local for --user, /usr/local for Debian's pip. lib* takes
     * lib64 where a distribution's platlib is there. */
    static const char *const where[] = {"site-packages", "dist-packages"};
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
        char pat[PATH_MAX + 64];
        snprintf(pat, sizeof pat, "%s/../lib*/python3*/%s/rat_py/bin/rat-py", bin, where[i]);
        glob_t g;
        if (glob(pat, GLOB_NOSORT, NULL, &g) == 0) {
            for (size_t k = 0; k < g.gl_pathc; k++)
                if (access(g.gl_pathv[k], X_OK) == 0)
                    execv(g.gl_pathv[k], argv);
            globfree(&g);
        }
    }
    fprintf(stderr,
            "rat-py: the rat-py program is not where the rat-py wheel puts it (%s/../lib/python3.*/site-packages/"
            "rat_py/bin/rat-py); reinstall it: pip install --force-reinstall rat-py\n",
            bin);
    return 127;
}
