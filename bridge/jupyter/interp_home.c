/* interp_home: the environment rat-py was installed into (interp_home.h). */
#include "interp_home.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "mem.h"

/* An object in this file, for dladdr: which file (rat-py, or librat) holds it. */
static const char s_anchor = 0;

static bool s_ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* The directory of the rat_py package this code runs from (site-packages), or NULL. */
static char *s_site_dir(void)
{
    char *path = fileio_realpath("/proc/self/exe");
    if (path && s_ends_with(path, "/rat_py/bin/rat-py")) {
        path[strlen(path) - strlen("/rat_py/bin/rat-py")] = '\0';
        return path;
    }
    free(path);
    Dl_info di;
    if (dladdr(&s_anchor, &di) == 0 || !di.dli_fname || !*di.dli_fname)
        return NULL;
    path = fileio_realpath(di.dli_fname);
    if (path && s_ends_with(path, "/rat_py/librat.so.0")) {
        path[strlen(path) - strlen("/rat_py/librat.so.0")] = '\0';
        return path;
    }
    free(path);
    return NULL;
}

char *interp_home_env(void)
{
    char *dir = s_site_dir();
    if (!dir)
        return NULL;
    /* PREFIX/lib/python3.X/site-packages (dist-packages under Debian's
     * /usr/local; lib64 on some distributions). */
    char *site = strrchr(dir, '/');
    if (site)
        *site = '\0';
    char *ver = site ? strrchr(dir, '/') : NULL;
    bool ok = ver && (strcmp(site + 1, "site-packages") == 0 || strcmp(site + 1, "dist-packages") == 0) &&
              strncmp(ver + 1, "python3", 7) == 0;
    char *prefix = NULL;
    if (ok) {
        *ver = '\0';
        char *lib = strrchr(dir, '/');
        if (lib && strncmp(lib + 1, "lib", 3) == 0) {
            *lib = '\0';
            char *py = xasprintf("%s/bin/python", dir);
            char *py3 = xasprintf("%s/bin/python3", dir);
            if (*dir && (fileio_is_executable(py) || fileio_is_executable(py3)))
                prefix = xstrdup(dir);
            free(py);
            free(py3);
        }
    }
    free(dir);
    return prefix;
}
