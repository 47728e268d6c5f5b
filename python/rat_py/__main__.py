"""python3 -m rat_py: the rat-py program itself, with these arguments.

This execs the rat-py binary rather than parsing the command line again in
Python: the subcommands (install, doctor, kernels), the options, the exit
statuses and the signal handling are then exactly the command's, and the
process is rat-py (its pid is the server's). librat has no main of its own
to call. Which binary: $RAT_PY if set, else the one installed beside this
package, else rat-py on PATH.
"""

import os
import shutil
import sys


def _binary():
    explicit = os.environ.get("RAT_PY")
    if explicit:
        return explicit
    try:
        from . import _install
        here = os.path.dirname(os.path.abspath(__file__))
        cand = os.path.normpath(os.path.join(here, _install.BINDIR, "rat-py"))
        if os.access(cand, os.X_OK):
            return cand
    except ImportError:
        pass
    return shutil.which("rat-py")


def main():
    exe = _binary()
    if not exe:
        sys.stderr.write("python3 -m rat_py: the rat-py program is not installed (scripts/install or the .deb), "
                         "nor on PATH; set RAT_PY to its path\n")
        return 127
    sys.stdout.flush()
    try:
        # argv[0] is the path itself: `rat-py install` registers the program
        # it was started as (a bare name would be looked up on PATH again).
        os.execv(exe, [exe, *sys.argv[1:]])
    except OSError as e:
        sys.stderr.write(f"python3 -m rat_py: cannot run {exe}: {e.strerror}\n")
        return 127


if __name__ == "__main__":
    sys.exit(main())
