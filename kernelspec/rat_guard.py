# rat-py's interrupt guard inside an ipykernel 6 or 7 kernel.
#
# rat-py runs this source in the module `_rat` right after rat_helper.py
# (same namespace: it reads the helper's _ran, _shell, _request_id and
# _owners), and the helper's detach() takes it out with the last rat-py.
# Why it exists and what it changes: doc/kernels.md, "An interrupt as a run
# ends".
import signal as _signal
import sys as _sys


def _entry(k):
    """The name of the coroutine method through which ipykernel dispatches
    each shell request, where the guard catches a KeyboardInterrupt that
    would leave it; None on a kernel whose dispatch was not measured.
    - 6.x (6.17 measured): process_one, looked up on the instance by
      dispatch_queue; dispatch_shell was bound into the queue's entries when
      the stream started, so wrapping it would change nothing.
    - 7.x (7.4.0 measured): shell_main awaits self.dispatch_shell(msg,
      subshell_id=..., concurrent=...) looked up at each call, so an
      instance attribute takes effect; process_one is gone. The shape is
      checked (a coroutine with a keyword-only `concurrent`) and the major
      version too: an 8.x may change what the hooks and the loop do."""
    import inspect
    f = getattr(k, "process_one", None)
    if f is not None:
        return "process_one" if inspect.iscoroutinefunction(f) else None
    f = getattr(k, "dispatch_shell", None)
    try:
        import ipykernel
        if ipykernel.version_info[0] != 7 or not inspect.iscoroutinefunction(f):
            return None
        p = inspect.signature(f).parameters.get("concurrent")
    except Exception:
        return None
    return "dispatch_shell" if p is not None and p.kind == p.KEYWORD_ONLY else None


def _guard_interrupts(ip):
    """ipykernel 6 and 7 (6.17 and 7.4.0 measured; doc/kernels.md "An
    interrupt as a run ends") install default_int_handler for SIGINT in
    pre_handler_hook and put SIG_IGN back in post_handler_hook; the hooks'
    calls catch Exception only, and so does 6.x's dispatch loop (7.x's
    shell_main catches nothing), so a client that cancels a run as it ends
    sends its SIGINT into these windows:
    - after the code, before execute_request sends the reply (its stdout
      flush, _execute_sleep): "KeyboardInterrupt caught in kernel", the
      reply is never sent, though the code ran to its end;
    - between the hooks and the handler: KeyboardInterrupt leaves
      dispatch_shell, the event loop, and the kernel exits (its exit, with
      IPython's history writes, can take seconds while its heartbeat still
      answers and its shell does not; 7.4 exits with status 0). 6.x flushes
      the execute_reply only after the second hook, so a run's own cancel
      can land there; 7.x sends it before (through the shell channel
      thread), and only a signal meant for a request queued behind does.
    The guard answers the first with the reply the kernel lost (built from
    the run's result, for rat-py's runs) and, around the dispatch (_entry),
    catches the second: the handler the hook saved goes back,
    dispatch_shell's tail (idle, the reply flushed) is done. A third
    window, where SIG_IGN drops the signal, is below (deferred). Nothing
    else changes; installed once per kernel (a later install replaces it),
    taken out with the last rat-py (detach)."""
    _unguard(ip)  # an earlier install's: its wrapper reads that install's _ran
    k = getattr(ip, "kernel", None)
    entry = _entry(k)
    orig = getattr(k, entry, None) if entry else None
    handlers = getattr(k, "shell_handlers", None)
    if orig is None or getattr(orig, "_rat_guard", False) or not hasattr(k, "pre_handler_hook") \
            or not hasattr(k, "post_handler_hook") \
            or not isinstance(handlers, dict) or "execute_request" not in handlers:
        return
    import inspect
    import zmq
    execute = handlers["execute_request"]
    if not inspect.iscoroutinefunction(orig) or not inspect.iscoroutinefunction(execute):
        return

    def ign():
        for _ in range(64):  # each raises if another SIGINT is pending
            try:
                _signal.signal(_signal.SIGINT, getattr(k, "saved_sigint_handler", _signal.SIG_IGN))
                return
            except KeyboardInterrupt:
                continue

    async def dispatch(*args, **kwargs):
        if kwargs.get("concurrent"):
            # 7.x: a comm message dispatched while a cell runs (no hooks, no
            # busy/idle of its own; the signal is the cell's): as it was.
            return await orig(*args, **kwargs)
        try:
            return await orig(*args, **kwargs)
        except KeyboardInterrupt:
            ign()
            try:
                k.log.warning("rat-py: a SIGINT between ipykernel's pre/post_handler_hook and the handler "
                              "was caught (the kernel would have exited)")
                _sys.stdout.flush()
                _sys.stderr.flush()
                k._publish_status("idle", "shell")
                # 7.x with subshells sends replies through the shell channel
                # thread, which owns shell_stream: not flushed from here (as
                # its own _publish_status_and_flush does).
                if not getattr(k, "_supports_kernel_subshells", False):
                    k.shell_stream.flush(zmq.POLLOUT)
            except BaseException:  # a further SIGINT here too: the loop must go on
                pass

    # Between requests ipykernel ignores SIGINT (SIG_IGN), and also after a
    # request's busy status until pre_handler_hook: a cancel of a run sent
    # before the kernel took it is signalled on that busy, so it landed
    # there and was lost (the run went on). In place of SIG_IGN, deferred
    # notes the request the kernel is dispatching; the handler of that same
    # request is interrupted as it starts. Noted between requests, or after
    # a request's post_handler_hook, it names a request that is over: no
    # later request is interrupted by it. (7.x keeps the parent in a
    # context variable: the handler runs in the context of the code it
    # interrupts, dispatch_shell's between busy and the hook; between
    # requests it finds no header and notes nothing.)
    noted = [None]

    def deferred(signum, frame):
        try:
            noted[0] = k.get_parent("shell")["header"]["msg_id"]
        except Exception:
            noted[0] = None

    class Sent:
        """The shell stream, noting whether a message went out through it
        (Session.send calls send_multipart on anything not a zmq.Socket)."""

        def __init__(self, stream):
            self._stream = stream
            self.sent = False

        def send_multipart(self, *args, **kwargs):
            self.sent = True
            return self._stream.send_multipart(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(self._stream, name)

    async def execute_request(stream, ident, parent):
        global _ran
        _ran = (None, None, None)
        header = parent.get("header", {})
        mine = header.get("msg_id")
        if mine is not None and noted[0] == mine:
            noted[0] = None
            # Only a request of a rat-py this helper serves: another
            # client's keeps ipykernel's own behaviour (the signal ignored).
            if header.get("session") in _owners:
                k.log.warning("rat-py: a SIGINT between the request's busy and its handler interrupts it now")
                raise KeyboardInterrupt  # dispatch_shell: no reply, idle; the code never ran
        out = Sent(stream)
        try:
            return await execute(out, ident, parent)
        except KeyboardInterrupt:
            msg_id, result, snapshot = _ran
            if out.sent or msg_id is None or msg_id != mine or result is None:
                raise  # the reply went, or the code did not end (or not rat-py's): nothing to give
            k.log.warning("rat-py: a SIGINT after the code ended, before its execute_reply, was caught; "
                          "the reply is sent")
            err = result.error_before_exec or result.error_in_exec
            content = {"status": "ok" if err is None else "error", "execution_count": result.execution_count,
                       "user_expressions": {}, "payload": []}
            if err is not None:
                content.update(ename=type(err).__name__, evalue=str(err), traceback=[])
            if snapshot is not None:
                content["payload"].append({"source": "rat_snapshot", "snapshot": snapshot})
            md = k.finish_metadata(parent, k.init_metadata(parent), content)
            k.session.send(stream, "execute_reply", content, parent, metadata=md, ident=ident)

    dispatch._rat_guard = True
    execute_request._rat_guard = True
    deferred._rat_guard = True
    setattr(k, entry, dispatch)
    handlers["execute_request"] = execute_request
    k._rat_execute_request = execute
    # Installed from inside a request's handler: post_handler_hook restores
    # the disposition pre_handler_hook saved; only ipykernel's own SIG_IGN
    # is replaced (a handler someone else set stays theirs).
    if getattr(k, "saved_sigint_handler", None) == _signal.SIG_IGN:
        k.saved_sigint_handler = deferred
    elif _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, deferred)


def _unguard(ip):
    k = getattr(ip, "kernel", None)
    for entry in ("process_one", "dispatch_shell"):  # 6.x's, 7.x's (_entry)
        f = getattr(k, "__dict__", {}).get(entry)
        if f is not None and getattr(f, "_rat_guard", False):
            delattr(k, entry)
    handlers = getattr(k, "shell_handlers", None)
    if isinstance(handlers, dict) and getattr(handlers.get("execute_request"), "_rat_guard", False):
        handlers["execute_request"] = k.__dict__.pop("_rat_execute_request", None) or k.execute_request
    if getattr(getattr(k, "saved_sigint_handler", None), "_rat_guard", False):
        k.saved_sigint_handler = _signal.SIG_IGN
    if getattr(_signal.getsignal(_signal.SIGINT), "_rat_guard", False):
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)


_guard_interrupts(_shell())
