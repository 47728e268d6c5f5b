/* lang: per-language helper code (Python/IPython for now). */
#include "lang.h"

#include <string.h>
#include <strings.h>

extern const char rat_helper_py[];
extern const size_t rat_helper_py_len;

/* Installs kernelspec/rat_helper.py as the module `_rat` in sys.modules,
 * without binding any name in the user's namespace: everything happens
 * inside one expression. The source travels as a JSON string literal, which
 * is also a valid Python string literal. */
static void s_py_install(buf_t *b)
{
    buf_puts(b, "(lambda s, t, src: (s.modules.__setitem__('_rat', t.ModuleType('_rat')), "
                "exec(compile(src, '<rat-py helper>', 'exec'), s.modules['_rat'].__dict__)))"
                "(__import__('sys'), __import__('types'), ");
    buf_put_json_str(b, rat_helper_py, rat_helper_py_len);
    buf_puts(b, ")");
}

static const lang_t s_python = {
    .name = "python",
    .install = s_py_install,
    .snapshot_expr = "__import__('_rat').snap()",
    .reset_code = "get_ipython().run_line_magic('reset', '-f')",
    .reset_all_code = "get_ipython().reset(new_session=True)",
};

const lang_t *lang_find(const char *language)
{
    if (language && strcasecmp(language, "python") == 0)
        return &s_python;
    return NULL;
}
