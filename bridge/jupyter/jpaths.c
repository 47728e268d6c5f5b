/* jpaths: Jupyter's directories. */
#include "jpaths.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"

const char *jpaths_home(void)
{
    const char *h = getenv("HOME");
    if (h && *h)
        return h;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir ? pw->pw_dir : "/";
}

char *jpaths_data_dir(void)
{
    const char *d = getenv("JUPYTER_DATA_DIR");
    if (d && *d)
        return xstrdup(d);
    const char *x = getenv("XDG_DATA_HOME");
    if (x && *x)
        return xasprintf("%s/jupyter", x);
    return xasprintf("%s/.local/share/jupyter", jpaths_home());
}

char *jpaths_runtime_dir(void)
{
    const char *r = getenv("JUPYTER_RUNTIME_DIR");
    if (r && *r)
        return xstrdup(r);
    char *data = jpaths_data_dir();
    char *rt = xasprintf("%s/runtime", data);
    free(data);
    return rt;
}

int jpaths_ensure_dir(const char *path)
{
    char *p = xstrdup(path);
    int rc = 0;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
            rc = -1;
            break;
        }
        *s = '/';
    }
    if (rc == 0 && mkdir(p, 0700) < 0 && errno != EEXIST)
        rc = -1;
    free(p);
    return rc;
}

static void s_push(char ***list, size_t *n, char *dir)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*list)[i], dir) == 0) {
            free(dir); /* keep the first occurrence: it wins anyway */
            return;
        }
    }
    *list = xrealloc(*list, (*n + 1) * sizeof **list);
    (*list)[(*n)++] = dir;
}

char **jpaths_kernel_dirs(size_t *n)
{
    char **list = NULL;
    *n = 0;
    const char *jp = getenv("JUPYTER_PATH");
    if (jp && *jp) {
        char *copy = xstrdup(jp);
        char *save = NULL;
        for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
            if (*tok)
                s_push(&list, n, xasprintf("%s/kernels", tok));
        free(copy);
    }
    char *data = jpaths_data_dir();
    s_push(&list, n, xasprintf("%s/kernels", data));
    free(data);
    const char *envs[] = {"VIRTUAL_ENV", "CONDA_PREFIX"};
    for (size_t i = 0; i < 2; i++) {
        const char *e = getenv(envs[i]);
        if (e && *e)
            s_push(&list, n, xasprintf("%s/share/jupyter/kernels", e));
    }
    s_push(&list, n, xstrdup("/usr/local/share/jupyter/kernels"));
    s_push(&list, n, xstrdup("/usr/share/jupyter/kernels"));
    s_push(&list, n, xasprintf("%s/.ipython/kernels", jpaths_home()));
    return list;
}

void jpaths_free_list(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}
