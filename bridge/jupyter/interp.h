/* interp: which Python runs the default kernel.
 *
 * Order: --python PATH, then --venv DIR, then an active or nearby virtual
 * environment ($VIRTUAL_ENV, else ./.venv in the working directory or one of
 * its parents, else ./venv in the working directory when it is a venv), then the
 * environment rat-py itself was installed into (interp_home.h). A venv found
 * by searching (not one named by --venv or $VIRTUAL_ENV) is used only when
 * it, its bin/python, and every directory from the working directory up to
 * it belong to the user or root and are writable by no one else (git's
 * safe.directory rule); the search stops after the home directory and at a
 * file-system boundary; a venv refused is named in interp_t.refused. An
 * environment is used only when it has ipykernel; otherwise
 * rat-py falls back to the python3 kernelspec and says why. Checking for
 * ipykernel looks at the environment's site-packages on disk first (no
 * Python is started just to ask). A venv made with --system-site-packages
 * (pyvenv.cfg: include-system-site-packages = true) may get ipykernel from
 * its base interpreter: then its interpreter is asked once (find_spec), and
 * the answer is cached in $XDG_CACHE_HOME/rat-py (~/.cache/rat-py) with the
 * times of pyvenv.cfg, the interpreter and every sys.path directory, so it
 * is asked again only when one of them changes (a package installed or
 * removed). */
#ifndef RAT_INTERP_H
#define RAT_INTERP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *python;     /* interpreter to launch with -m ipykernel_launcher, or NULL: use the kernelspec */
    char *venv;       /* the environment considered, or NULL */
    char *note;       /* one line for ctl status, or NULL */
    char *refused;    /* a venv found but not trusted: its path, why, and the flag that chooses it; or NULL */
} interp_t;

/* Fills *out (free with interp_free). Returns -1 with err filled only when
 * an explicit --python/--venv cannot be used. */
int interp_resolve(const char *cwd, const char *python, const char *venv, interp_t *out, char *err, size_t errlen);
void interp_free(interp_t *it);
/* The same test for a venv env found by searching up from dir by someone
 * else (rat's `.venv` from the folder up to its project root): why it is
 * not to be run (one phrase, caller frees), or NULL when it may. */
char *interp_venv_distrust(const char *dir, const char *env);
/* Whether a venv/prefix directory has ipykernel installed. */
bool interp_env_has_ipykernel(const char *prefix);
/* A Python on this machine that can import ipykernel (python3 on PATH,
 * then /usr/bin/python3), for when no python3 kernelspec exists. Runs each
 * candidate once with a short timeout. Caller owns the result; NULL if none. */
char *interp_find_python_with_ipykernel(void);

#endif
