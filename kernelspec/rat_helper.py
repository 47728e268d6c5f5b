# rat-py's helper inside an IPython kernel.
#
# rat-py installs this source as the module `_rat` in sys.modules (never in
# the user's namespace) right after the kernel is ready, and calls it through
# execute_request user_expressions, e.g. `__import__('_rat').snap()`.
# user_expressions return the text/plain repr of the value, so every entry
# point returns a _J, whose repr is JSON text.
#
# Everything here must be cheap and bounded: snap() runs after every
# execution.
import json as _json
import sys as _sys
import types as _types


class _J(object):
    __slots__ = ("s",)

    def __init__(self, obj):
        self.s = _json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)

    def __repr__(self):
        return self.s



def _shell():
    from IPython import get_ipython
    return get_ipython()


def _user_names(ip):
    """Names a user would call their variables: what %who shows, minus modules."""
    ns = ip.user_ns
    hidden = ip.user_ns_hidden
    mod = _types.ModuleType
    return [k for k, v in list(ns.items())
            if not k.startswith("_") and k not in hidden and not isinstance(v, mod)]


def snap():
    """State after an execution: the number of user variables."""
    ip = _shell()
    return _J({"vars": len(_user_names(ip))})
