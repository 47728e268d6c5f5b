/* family: which kernel each name of the rat family launches. */
#include "family.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernelspec.h"
#include "mem.h"

static const family_t s_family[] = {
    {"rat-py", "py", "Python", NULL, NULL,
     "apt install python3-ipykernel (Debian/Ubuntu), or pip install ipykernel"},
    {"rat-r", "r", "R", "R", "ir",
     "apt install r-cran-irkernel (Debian/Ubuntu; it registers the `ir` kernelspec), or in R: "
     "install.packages('IRkernel'); IRkernel::installspec()"},
    {"rat-ju", "ju", "Julia", "julia", NULL,
     "in Julia: using Pkg; Pkg.add(\"IJulia\") (it registers a `julia-X.Y` kernelspec)"},
    {"rat-sh", "sh", "bash", "bash", "bash",
     "pip install bash_kernel && python3 -m bash_kernel.install"},
    {"rat-js", "js", "JavaScript", "javascript", "javascript",
     "npm install -g ijavascript && ijsinstall"},
};

bool family_is_prog(const char *base)
{
    for (size_t i = 0; i < sizeof s_family / sizeof s_family[0]; i++)
        if (strcmp(base, s_family[i].prog) == 0)
            return true;
    return false;
}

const family_t *family_from_argv0(const char *argv0)
{
    const char *base = argv0 ? strrchr(argv0, '/') : NULL;
    base = base ? base + 1 : (argv0 ? argv0 : "");
    for (size_t i = 0; i < sizeof s_family / sizeof s_family[0]; i++)
        if (strcmp(base, s_family[i].prog) == 0)
            return &s_family[i];
    return &s_family[0];
}

char *family_kernel(const family_t *fam, char *err, size_t errlen)
{
    if (fam->kernel) {
        kernelspec_t *ks = kernelspec_find(fam->kernel, err, errlen);
        if (ks) {
            char *name = xstrdup(ks->name);
            kernelspec_destroy(&ks);
            return name;
        }
    }
    kernelspec_t **list = NULL;
    size_t n = kernelspec_list(&list);
    char *name = NULL;
    for (size_t i = 0; i < n && !name; i++)
        if (strcasecmp(list[i]->language, fam->language) == 0)
            name = xstrdup(list[i]->name);
    kernelspec_free_list(list, n);
    if (!name)
        snprintf(err, errlen,
                 "%s needs a Jupyter kernel for %s and none is installed (`rat-py kernels` lists what is); "
                 "install one: %s",
                 fam->prog, fam->what, fam->install_hint);
    return name;
}
