/* lang_python: the IPython adapter; the helper is kernelspec/rat_helper.py,
 * with kernelspec/rat_guard.py (ipykernel 6's interrupt windows). */
#include "lang.h"

#include <string.h>

extern const char rat_helper_py[];
extern const size_t rat_helper_py_len;
extern const char rat_guard_py[];
extern const size_t rat_guard_py_len;

/* Installs kernelspec/rat_helper.py as the module `_rat` in sys.modules,
 * then runs kernelspec/rat_guard.py in that module (it uses the helper's
 * names), without binding any name in the user's namespace: everything
 * happens inside one expression. The sources travel as JSON string
 * literals, which are also valid Python string literals. */
static void s_install(buf_t *b)
{
    buf_puts(b, "(lambda s, t, src, guard: (s.modules.__setitem__('_rat', t.ModuleType('_rat')), "
                "exec(compile(src, '<rat-py helper>', 'exec'), s.modules['_rat'].__dict__), "
                "exec(compile(guard, '<rat-py guard>', 'exec'), s.modules['_rat'].__dict__)))"
                "(__import__('sys'), __import__('types'), ");
    buf_put_json_str(b, rat_helper_py, rat_helper_py_len);
    buf_puts(b, ", ");
    buf_put_json_str(b, rat_guard_py, rat_guard_py_len);
    buf_puts(b, ")");
}

/* An expression: user_expressions return its repr, which the helper makes
 * JSON text. A JSON string literal is a valid Python string literal. */
static void s_call(buf_t *b, const char *fn, const char *json_arg)
{
    buf_printf(b, "__import__('_rat').%s(", fn);
    if (json_arg)
        buf_put_json_str(b, json_arg, strlen(json_arg));
    buf_puts(b, ")");
}

/* One expression, no name bound: the old directory is read before the
 * change; sys.path's entry for it (sys.path[0], which `python -m` sets to
 * the start directory) becomes the new one. When there is none, the new
 * directory goes first, unless '' (the working directory, whatever it is)
 * or the directory itself is already there. */
static void s_chdir(buf_t *b, const char *dir)
{
    buf_puts(b, "(lambda os, sys, d, old: (os.chdir(d), os.environ.__setitem__('PWD', d), "
                "sys.path.__setitem__(sys.path.index(old), d) if old in sys.path "
                "else None if ('' in sys.path or d in sys.path) else sys.path.insert(0, d)))"
                "(__import__('os'), __import__('sys'), ");
    buf_put_json_str(b, dir, strlen(dir));
    buf_puts(b, ", __import__('os').getcwd())");
}

const lang_t lang_python = {
    .name = "python",
    .html_with_plain_is_asset = true,
    .snapshot_in_payload = true,
    .channel = LANG_VIA_USER_EXPRESSIONS,
    .install = s_install,
    .call = s_call,
    .chdir = s_chdir,
    .reset_code = "get_ipython().run_line_magic('reset', '-f')",
    .reset_all_code = "get_ipython().reset(new_session=True)",
    /* No name bound in the user's namespace; nothing if the helper is gone. */
    .detach_code = "(lambda m: m.detach() if hasattr(m, 'detach') else None)(__import__('sys').modules.get('_rat'))",
    .probe_code = "import sys, ipykernel\nprint(sys.executable)\nprint('ipykernel', ipykernel.__version__)",
    .noop_code = "pass",
};
