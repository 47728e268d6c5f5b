/* interp_home: the Python environment rat-py itself was installed into, the
 * last place interp_resolve looks (after --python, --venv, $VIRTUAL_ENV and
 * the project's own .venv): a wheel's venv, pipx's or uv tool's, which has
 * ipykernel as a dependency of the wheel (doc/packaging.md). It is as
 * trusted as the program, which runs from inside it: whoever can write there
 * can already replace rat-py. */
#ifndef RAT_INTERP_HOME_H
#define RAT_INTERP_HOME_H

/* The environment's prefix (realpath), when this process is the wheel's
 * rat-py (PREFIX/lib/python3.X/site-packages/rat_py/bin/rat-py) or has the
 * wheel's librat loaded (.../rat_py/librat.so.0, the Python binding), and
 * PREFIX has a bin/python; else NULL. Caller frees. */
char *interp_home_env(void);

#endif
