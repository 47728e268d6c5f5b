"""rat-py's interrupt guard (kernelspec/rat_guard.py) on a kernel it shares
with another client, and the reply it must not send twice.

A real ipykernel (the interpreter running this test: Debian's, 6.17, for
unit.guard_clients; the peers' lab venv's, 7.4.0, for
unit.guard_clients_ipykernel7), with
the helper and the guard installed exactly as rat-py installs them (the
expression of bridge/runtime/lang_python.c) by client A, which makes A's
session the one the guard serves. Each case holds the kernel in one window
(a hook or a send replaced by one that sleeps once, on cue) and sends the
SIGINT inside it, so nothing depends on timing luck; the time bounds only
catch a hang.

1. Client B's request, signalled between its busy status and
   pre_handler_hook (ipykernel ignores SIGINT there): B's code runs and B
   gets its reply, as without rat-py (the guard interrupts only the
   requests of the rat-py it serves).
2. A's request, signalled after its execute_reply went out: exactly one
   reply (the guard re-sends only a reply the kernel lost).
"""
import json
import os
import queue
import signal
import sys
import tempfile
import time

from jupyter_client import BlockingKernelClient, KernelManager

HERE = os.path.dirname(os.path.abspath(__file__))
KSPEC = os.path.join(HERE, "..", "..", "kernelspec")
HELPER = open(os.environ.get("RAT_HELPER_PY") or os.path.join(KSPEC, "rat_helper.py")).read()
GUARD = open(os.environ.get("RAT_GUARD_PY") or os.path.join(KSPEC, "rat_guard.py")).read()
INSTALL = ("(lambda s, t, src, guard: (s.modules.__setitem__('_rat', t.ModuleType('_rat')), "
           "exec(compile(src, '<rat-py helper>', 'exec'), s.modules['_rat'].__dict__), "
           "exec(compile(guard, '<rat-py guard>', 'exec'), s.modules['_rat'].__dict__)))"
           "(__import__('sys'), __import__('types'), %s, %s)") % (json.dumps(HELPER), json.dumps(GUARD))

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def client(km):
    # A session of its own (km.client() would share the manager's, and
    # with it the socket identity and the "session" the guard looks at).
    # The manager as parent: wait_for_ready then asks it whether the kernel
    # lives; without one it asks the heartbeat, which reads a kernel still
    # starting after 1 s on a loaded machine as dead ("Kernel died before
    # replying to kernel_info", 1 run in 2 while two soaks ran).
    c = BlockingKernelClient(connection_file=km.connection_file, parent=km)
    c.load_connection_file()
    c.start_channels()
    c.wait_for_ready(timeout=60)
    return c


def execute(c, code, timeout=60):
    mid = c.execute(code)
    while True:
        m = c.get_shell_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") == mid:
            return m


def replies_to(c, mid, first=60, more=2):
    """Every shell message for mid: the first within `first` seconds, and
    any other within `more` seconds of it (a second reply comes right after
    the first)."""
    out = []
    end = time.monotonic() + first
    while time.monotonic() < end:
        try:
            m = c.get_shell_msg(timeout=max(0.05, end - time.monotonic()))
        except queue.Empty:
            break
        if m["parent_header"].get("msg_id") == mid:
            out.append(m)
            end = min(end, time.monotonic() + more)
    return out


def wait_iopub(c, mid, what, seconds=60):
    """Whether an iopub message of request mid for which what(m) holds came
    within seconds (the others are read and dropped)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            m = c.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if m["parent_header"].get("msg_id") == mid and what(m):
            return True
    return False


def wait_status(c, mid, state):
    return wait_iopub(c, mid, lambda m: m["msg_type"] == "status" and m["content"]["execution_state"] == state)


def wait_marker(c, mid, marker):
    return wait_iopub(c, mid, lambda m: m["msg_type"] == "stream" and marker in m["content"]["text"])


def main():
    work = tempfile.mkdtemp(prefix="rat-guard-")
    km = KernelManager(kernel_name="python3", connection_file=os.path.join(work, "k.json"))
    km.start_kernel(cwd=work, stdout=open(os.path.join(work, "kernel.log"), "w"), stderr=None)
    try:
        a = client(km)
        b = client(km)
        r = execute(a, INSTALL)
        check(r["content"]["status"] == "ok", "the helper and the guard install (%s)" % r["content"].get("evalue", "ok"))
        # The guard is in place on this kernel (it returns early on an
        # ipykernel it was not measured on; the cases would prove nothing).
        r = execute(a, "import ipykernel\nk = get_ipython().kernel\n"
                       "assert any(getattr(v, '_rat_guard', False) for v in k.__dict__.values()), ipykernel.__version__")
        check(r["content"]["status"] == "ok", "the guard is installed (%s)" % r["content"].get("evalue", "ok"))
        pid = km.provisioner.process.pid

        # 1. B's request held between busy and pre_handler_hook.
        hold = ("import sys, time\n"
                "_k = get_ipython().kernel\n"
                "_o = type(_k).pre_handler_hook\n"
                "def _held(self=_k):\n"
                "    if self.__dict__.pop('_armed', False):\n"
                "        sys.__stderr__.write('held\\n'); sys.__stderr__.flush()\n"
                "        time.sleep(5)\n"
                "    _o(self)\n"
                "_k.pre_handler_hook = _held\n"
                "del _held")
        check(execute(a, hold)["content"]["status"] == "ok", "the pre_handler_hook window is held on cue")
        check(execute(b, "get_ipython().kernel._armed = True")["content"]["status"] == "ok", "B arms it")
        mid = b.execute("print('B ran')")
        # Its busy status is published right before the hold: once B sees
        # it, the kernel is in the 5 s hold.
        check(wait_status(b, mid, "busy"), "the kernel took B's request")
        os.kill(pid, signal.SIGINT)
        got = replies_to(b, mid)
        check(len(got) == 1 and got[0]["content"]["status"] == "ok",
              "B's request gets its one ok reply (got %s)" % [(m["msg_type"], m["content"].get("status")) for m in got])
        check(km.is_alive(), "the kernel lives")

        # 2. A's request, the SIGINT after its execute_reply went out.
        after = ("import time\n"
                 "_k = get_ipython().kernel\n"
                 "_s = _k.session\n"
                 "_send = type(_s).send\n"
                 "def _late(stream, msg_or_type, *a, **kw):\n"
                 "    m = _send(_s, stream, msg_or_type, *a, **kw)\n"
                 "    if msg_or_type == 'execute_reply' and _k.__dict__.pop('_armed', False):\n"
                 "        print('replied', flush=True); time.sleep(2)\n"
                 "    return m\n"
                 "_s.send = _late\n"
                 "del _late")
        check(execute(a, after)["content"]["status"] == "ok", "the window after the reply is held on cue")
        mid = a.execute("get_ipython().kernel._armed = True\nx = 41")
        check(wait_marker(a, mid, "replied"), "the kernel is in the window")
        os.kill(pid, signal.SIGINT)
        got = replies_to(a, mid)
        check(len(got) == 1, "exactly one execute_reply (got %d)" % len(got))
        check(km.is_alive(), "the kernel lives")
        r = execute(b, "print(x)")
        check(r["content"]["status"] == "ok", "the next request runs")
    finally:
        km.shutdown_kernel(now=True)
    if failures:
        print("%d failed; the kernel's log: %s" % (len(failures), os.path.join(work, "kernel.log")))
        sys.exit(1)


if __name__ == "__main__":
    main()
