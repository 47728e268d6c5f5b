"""rat_py: rat-py from Python -- a live Jupyter kernel behind MCP.

    from rat_py import create_mcp_server
    mcp = create_mcp_server()
    mcp.run()  # STDIO

A thin binding, through ctypes, of the C library rat-py is built on (librat,
include/rat/rat.h): the server that runs is the rat-py program's own, in
this process. Nothing here reimplements it.

create_mcp_server(**options) takes the command line's options, spelled with
underscores (see OPTIONS); a misspelt one is a TypeError, a value of the
wrong type a TypeError, a value the library refuses a ValueError carrying
the library's message. Server.run() serves MCP on stdin/stdout until EOF;
run(transport="http", host=..., port=..., token=...) serves Streamable HTTP
at http://HOST:PORT/mcp (https:// with tls_cert and tls_key; the URL is
printed on stderr) until stopped.
Server.stop() ends a run from any thread. Called from the main thread,
run() also ends cleanly on SIGINT (Ctrl-C), SIGTERM or SIGHUP, and then
returns normally: the kernel is stopped either way. A run that fails raises
RatError with the library's message.
"""

import ctypes
import os
import signal
import sys
import threading

__all__ = ["create_mcp_server", "Server", "RatError", "OPTIONS", "library_version"]

# Option name -> its kind. The names are the command line's long options
# (rat-py --help) with "-" as "_"; the C field is named where it differs.
OPTIONS = {
    "cwd": "path",            # --cwd DIR
    "kernel": "str",          # --kernel NAME
    "python": "path",         # --python PATH
    "venv": "path",           # --venv DIR
    "kernelspec_dir": "path",  # --kernelspec-dir DIR
    "existing": "path",       # --existing FILE|NAME
    "allow_restart": "bool",  # --allow-restart
    "spare": "bool",          # --spare
    "assets_dir": "path",     # --assets-dir DIR
    "assets_max_mb": "int",   # --assets-max-mb N
    "boot_timeout": "int",    # --boot-timeout SEC (C: boot_timeout_s)
    "log_level": "str",       # --log-level LEVEL (default: $RAT_LOG, as on the command line)
    "host": "str",            # --host ADDR
    "port": "int",            # --port N (0: any free port)
    "token": "str",           # --token SECRET (default: $RAT_PY_TOKEN, as on the command line)
    "allow_origins": "strs",  # --allow-origin URL, repeated
    "insecure_no_token": "bool",  # --insecure-no-token
    "gateway": "str",         # --gateway URL
    "gateway_token": "str",   # --gateway-token T
    "gateway_ca": "path",     # --gateway-ca FILE
    "gateway_insecure": "bool",  # --gateway-insecure
    "tls_cert": "path",       # --tls-cert FILE (default: $RAT_PY_TLS_CERT, as on the command line)
    "tls_key": "path",        # --tls-key FILE (default: $RAT_PY_TLS_KEY)
    "unsent_max_mb": "int",   # --unsent-max-mb N
    "shell_timeout": "int",   # --shell-timeout SEC (C: shell_timeout_s)
}
_HTTP_ONLY = ("host", "port", "token", "allow_origins", "insecure_no_token", "tls_cert", "tls_key", "unsent_max_mb")
_SONAME = "librat.so.0"
_ERRLEN = 1024


class RatError(RuntimeError):
    """A run failed. str(e) is the library's message; e.status its exit status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class _Options(ctypes.Structure):
    # Mirrors rat_options_t in include/rat/rat.h, field for field.
    _fields_ = [
        ("cwd", ctypes.c_char_p),
        ("kernel", ctypes.c_char_p),
        ("python", ctypes.c_char_p),
        ("venv", ctypes.c_char_p),
        ("kernelspec_dir", ctypes.c_char_p),
        ("existing", ctypes.c_char_p),
        ("allow_restart", ctypes.c_bool),
        ("spare", ctypes.c_bool),
        ("assets_dir", ctypes.c_char_p),
        ("assets_max_mb", ctypes.c_long),
        ("boot_timeout_s", ctypes.c_int),
        ("log_level", ctypes.c_char_p),
        ("host", ctypes.c_char_p),
        ("port", ctypes.c_int),
        ("token", ctypes.c_char_p),
        ("allow_origins", ctypes.POINTER(ctypes.c_char_p)),
        ("insecure_no_token", ctypes.c_bool),
        ("gateway", ctypes.c_char_p),
        ("gateway_token", ctypes.c_char_p),
        ("gateway_ca", ctypes.c_char_p),
        ("gateway_insecure", ctypes.c_bool),
        ("tls_cert", ctypes.c_char_p),
        ("tls_key", ctypes.c_char_p),
        ("unsent_max_mb", ctypes.c_long),
        ("shell_timeout_s", ctypes.c_int),
    ]


_lib = None
_lib_lock = threading.Lock()


def _library_candidates():
    explicit = os.environ.get("RAT_LIBRARY")
    if explicit:
        return [explicit]
    found = []
    try:  # written by `cmake --install` (cmake/install_python.cmake.in)
        from . import _install
        here = os.path.dirname(os.path.abspath(__file__))
        found.append(os.path.normpath(os.path.join(here, _install.LIBDIR, _install.SONAME)))
    except ImportError:
        pass
    found.append(_SONAME)  # the dynamic linker's search: LD_LIBRARY_PATH, ld.so.cache
    return found


def _load():
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        errors = []
        for cand in _library_candidates():
            try:
                lib = ctypes.CDLL(cand)
                break
            except OSError as e:
                errors.append(str(e))
        else:
            raise ImportError("rat_py cannot load librat (" + "; ".join(errors) + "); install rat-py "
                              "(scripts/install or the .deb), or set LD_LIBRARY_PATH or RAT_LIBRARY")
        p, o = ctypes.c_void_p, ctypes.POINTER(_Options)
        lib.rat_version.restype = ctypes.c_char_p
        lib.rat_version.argtypes = []
        lib.rat_options_init.restype = None
        lib.rat_options_init.argtypes = [o]
        lib.rat_options_check.restype = ctypes.c_int
        lib.rat_options_check.argtypes = [o, ctypes.c_char_p, ctypes.c_size_t]
        lib.rat_server_new.restype = p
        lib.rat_server_new.argtypes = [o, ctypes.c_char_p, ctypes.c_size_t]
        for name in ("rat_server_run_stdio", "rat_server_run_http", "rat_server_stop"):
            getattr(lib, name).restype = ctypes.c_int
            getattr(lib, name).argtypes = [p]
        lib.rat_server_stop_fd.restype = ctypes.c_int
        lib.rat_server_stop_fd.argtypes = [p]
        lib.rat_server_error.restype = ctypes.c_char_p
        lib.rat_server_error.argtypes = [p]
        lib.rat_server_destroy.restype = None
        lib.rat_server_destroy.argtypes = [ctypes.POINTER(p)]
        # A cheap guard against a library whose rat_options_t differs from
        # _Options: the defaults must land where they are expected.
        probe = _Options()
        lib.rat_options_init(ctypes.byref(probe))
        if probe.port != -1 or probe.boot_timeout_s != 0 or probe.cwd is not None:
            raise ImportError("librat's rat_options_t does not match this rat_py; reinstall rat-py")
        _lib = lib
        return lib


def library_version():
    """The version of the librat in use, e.g. "0.1.0"."""
    return _load().rat_version().decode()


def _encode(name, kind, value):
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, not {type(value).__name__}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        return value
    if kind == "strs":
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise TypeError(f"{name} must be a list of strings, not {type(value).__name__}")
        return [_encode(name, "str", v) for v in value]
    if kind == "path" and isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        want = "a str or a path" if kind == "path" else "a str"
        raise TypeError(f"{name} must be {want}, not {type(value).__name__}")
    b = os.fsencode(value)
    if b"\0" in b:
        raise ValueError(f"{name} cannot contain a NUL character")
    return b


class _Built:
    """A rat_options_t and the Python objects its pointers borrow."""

    def __init__(self, options):
        lib = _load()
        self.c = _Options()
        lib.rat_options_init(ctypes.byref(self.c))
        self.keep = []
        clamped = {}
        for name, value in options.items():
            if value is None:
                continue
            v = _encode(name, OPTIONS[name], value)
            if name == "allow_origins":
                arr = (ctypes.c_char_p * (len(v) + 1))(*v, None)
                self.keep.append(arr)
                self.c.allow_origins = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
                continue
            field = name + "_s" if name in ("boot_timeout", "shell_timeout") else name
            if OPTIONS[name] == "int":
                # Past the C type's range: the library checks the nearest
                # value it can hold, and its message names the one given.
                limit = 2 ** (8 * ctypes.sizeof(ctypes.c_long if name in ("assets_max_mb", "unsent_max_mb") else ctypes.c_int) - 1) - 1
                if not -limit <= v <= limit:
                    clamped[limit if v > 0 else -limit] = v
                    v = limit if v > 0 else -limit
            setattr(self.c, field, v)
        err = ctypes.create_string_buffer(_ERRLEN)
        if lib.rat_options_check(ctypes.byref(self.c), err, _ERRLEN) != 0:
            msg = err.value.decode(errors="replace")
            for c, given in clamped.items():
                msg = msg.replace(f"not {c}", f"not {given}")
            raise ValueError(msg)


def _check_names(options):
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError("create_mcp_server() got unknown option(s) " + ", ".join(repr(u) for u in unknown)
                        + "; the options are " + ", ".join(OPTIONS))


def create_mcp_server(**options):
    """A Server for these options (rat-py's command-line options, with "_"
    for "-"; None means the default). Checks them now: TypeError for an
    unknown option or a wrong type, ValueError with the library's message
    for a value it refuses. Nothing starts until run()."""
    return Server(**options)


def _pending_signal_handlers():
    # A Python-level call: the interpreter runs the handlers of signals
    # caught meanwhile before this function's first instruction, while the
    # run's own handlers are still installed.
    return None


class Server:
    """rat-py's MCP server; see create_mcp_server."""

    def __init__(self, **options):
        _check_names(options)
        # The command line's environment defaults, read the same way.
        if options.get("token") is None and os.environ.get("RAT_PY_TOKEN"):
            options["token"] = os.environ["RAT_PY_TOKEN"]
        if (options.get("tls_cert") is None and options.get("tls_key") is None
                and os.environ.get("RAT_PY_TLS_CERT") and os.environ.get("RAT_PY_TLS_KEY")):
            options["tls_cert"] = os.environ["RAT_PY_TLS_CERT"]
            options["tls_key"] = os.environ["RAT_PY_TLS_KEY"]
        # Jupyter's own gateway client's variables, unless a local kernel was asked for.
        if (options.get("gateway") is None and os.environ.get("JUPYTER_GATEWAY_URL")
                and not any(options.get(k) for k in ("python", "venv", "kernelspec_dir", "spare"))):
            options["gateway"] = os.environ["JUPYTER_GATEWAY_URL"]
        if options.get("gateway") and options.get("gateway_token") is None and os.environ.get("JUPYTER_GATEWAY_AUTH_TOKEN"):
            options["gateway_token"] = os.environ["JUPYTER_GATEWAY_AUTH_TOKEN"]
        if options.get("log_level") is None and os.environ.get("RAT_LOG") in ("debug", "info", "warn", "error", "off"):
            options["log_level"] = os.environ["RAT_LOG"]
        origins = options.get("allow_origins")
        if origins is not None and not isinstance(origins, (str, bytes)) and hasattr(origins, "__iter__"):
            options["allow_origins"] = list(origins)  # read once: each run() builds the options again
        _Built(options)  # checks now
        self._options = options
        self._lock = threading.RLock()
        self._c = None          # the rat_server_t of the run in progress
        self._stop_early = False  # stop() came while no run was in progress
        self._signalled = None

    @property
    def running(self):
        with self._lock:
            return self._c is not None

    def stop(self):
        """Ends the run in progress (from any thread), as SIGTERM would: the
        kernel is stopped and run() returns. A stop while no run is in
        progress ends the next run as soon as it starts (so a stop that races
        run() is never lost)."""
        with self._lock:
            if self._c is not None:
                _load().rat_server_stop(self._c)
            else:
                self._stop_early = True

    def run(self, transport="stdio", *, host=None, port=None, token=None):
        """Serves MCP until the transport ends, stop() or a termination
        signal; returns None then. transport="stdio" (stdin/stdout: nothing
        else may write to stdout meanwhile) or "http" (Streamable HTTP; host,
        port and token override the server's options). Raises RatError when
        the run fails (e.g. no kernel can be started), with the library's
        message."""
        if transport in ("http", "streamable-http"):
            http = True
        elif transport == "stdio":
            http = False
            given = [n for n, v in (("host", host), ("port", port), ("token", token)) if v is not None]
            if given:
                raise TypeError(", ".join(given) + " only apply to run(transport=\"http\")")
        else:
            raise ValueError(f"transport must be \"stdio\" or \"http\", not {transport!r}")
        opts = dict(self._options)
        for name, value in (("host", host), ("port", port), ("token", token)):
            if value is not None:
                opts[name] = value
        built = _Built(opts)
        lib = _load()
        err = ctypes.create_string_buffer(_ERRLEN)
        with self._lock:
            if self._c is not None:
                raise RuntimeError("this server is already running (one run at a time)")
            c = lib.rat_server_new(ctypes.byref(built.c), err, _ERRLEN)
            if not c:
                raise ValueError(err.value.decode(errors="replace"))
            self._c = c
            if self._stop_early:
                self._stop_early = False
                lib.rat_server_stop(c)
        restore = None
        try:
            restore = self._catch_signals(lib.rat_server_stop_fd(c))
            for f in (sys.stdout, sys.stderr):
                try:
                    f.flush()
                except (AttributeError, ValueError, OSError):
                    pass
            status = (lib.rat_server_run_http if http else lib.rat_server_run_stdio)(c)
            message = (lib.rat_server_error(c) or b"").decode(errors="replace")
            _pending_signal_handlers()
        finally:
            if restore:
                restore()
            with self._lock:
                self._c = None
                handle = ctypes.c_void_p(c)
                lib.rat_server_destroy(ctypes.byref(handle))
        if status != 0:
            raise RatError(message or f"the server ended with exit status {status}", status)

    def _catch_signals(self, stop_fd):
        """In the main thread: SIGINT, SIGTERM and SIGHUP end the run. The
        library reads them itself (signalfd) in the thread that runs it; one
        that another thread catches instead reaches the run through Python's
        wakeup descriptor, set to the run's stop descriptor. The handlers
        installed meanwhile only note the signal, so Ctrl-C ends the run
        without a KeyboardInterrupt. Returns what undoes it."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        saved = {}

        def noted(signo, frame):
            self._signalled = signo

        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            signo = getattr(signal, name, None)
            if signo is not None:
                saved[signo] = signal.signal(signo, noted)
        old_fd = signal.set_wakeup_fd(stop_fd, warn_on_full_buffer=False)

        def restore():
            signal.set_wakeup_fd(old_fd)
            for signo, handler in saved.items():
                signal.signal(signo, handler if handler is not None else signal.SIG_DFL)

        return restore
