/* mgr_names: runtime names and how the `rat` manager resolves them, as the
 * Go `rat` CLI does (so both read one state file the same way):
 *   1. an exact name in kernels (running or stopped; a saved runtime of the
 *      same name adds its runtime_path and env), then in runtimes (an
 *      empty cwd is the caller's);
 *   2. `X.N` (N >= 2): X resolved, then `<that>.N`;
 *   3. a language alias (py python r jl ju julia sh bash js node javascript,
 *      and the Go CLI's pi slack jupyter notebook ipynb) gives
 *      `LANG@<project>`: the project is the nearest ancestor of the cwd with
 *      a marker (.git, pyproject.toml, package.json, Makefile, ...), else
 *      the cwd; its folder name, slugged (`home` for $HOME); when that name
 *      is taken by another folder, `LANG@<parent>-<base>`. New: cwd = the
 *      project root, and for py the .venv/venv found from the cwd up to it;
 *   4. a unique prefix of a known name;
 *   5. else an error naming what to type.
 * Names match ^[A-Za-z0-9][A-Za-z0-9_.@-]*$ (they become file names). */
#ifndef RAT_MGR_NAMES_H
#define RAT_MGR_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "mgr_state.h"

typedef struct {
    char *name, *lang, *cwd, *venv, *runtime_path;  /* venv, runtime_path may be NULL */
    mgr_kv_t *env;                                   /* borrowed from the state (valid while it is) */
    size_t nenv;
    bool is_new;
} mgr_resolved_t;

bool mgr_names_valid(const char *name);
/* The canonical language of an alias (python -> py), or NULL. */
const char *mgr_names_lang(const char *alias);
/* The language a name starts with (py-ml -> py, py@proj -> py), or NULL. */
const char *mgr_names_infer_lang(const char *name);
/* The rat family member that serves a canonical language (py -> rat-py,
 * jl -> rat-ju), or NULL with err saying why (a Go-only runtime). */
const char *mgr_names_prog(const char *lang, char *err, size_t errlen);
/* A label as a name segment: each run of other characters becomes one
 * "-", "." "-" "_" trimmed at the ends; "project" when nothing is left.
 * Caller owns it. */
char *mgr_names_slug(const char *s);
/* The project root of dir (see above) and its python venv. Caller owns. */
char *mgr_names_project_root(const char *dir);
char *mgr_names_find_venv(const char *dir);

/* Resolves input from cwd against state (steps above). Returns 0, or -1
 * with err filled. Free with mgr_resolved_free. */
int mgr_names_resolve(mgr_state_t *state, const char *input, const char *cwd, mgr_resolved_t *out, char *err,
                      size_t errlen);
void mgr_resolved_free(mgr_resolved_t *r);

#endif
