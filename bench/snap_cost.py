"""The kernel-side cost of rat-py's post-run snapshot, per run, as a session
grows: a real ipykernel (jupyter_client's KernelManager, the python3
kernelspec), the helper installed as rat-py installs it (module `_rat`, its
post_run_cell hook), and N runs of `x = 42`. The hook is wrapped in a timer
(perf_counter around the helper's own hook), so what is measured is the
snapshot alone, not the round trip's noise.

Usage: snap_cost.py [--helper PATH] [--vars N] CHECKPOINT...
  e.g. snap_cost.py 100 10000   -> "snap_us_at_100 ..." (wall) and
  "snap_cpu_us_at_100 ..." (CPU) lines: the median hook time over the 100
  runs before each checkpoint, in microseconds.
  --vars N first makes N user variables (v0 .. vN-1) in one silent run.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

from jupyter_client.manager import start_new_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TIMER = r"""
def _rat_bench_wrap():
    import sys, time
    ip = get_ipython()
    cbs = ip.events.callbacks['post_run_cell']
    hook = [cb for cb in cbs if getattr(cb, '_rat_hook', False)][0]
    times = []
    def timed(result, hook=hook, times=times, pc=time.perf_counter, tt=time.thread_time):
        t, c = pc(), tt()
        hook(result)
        times.append((pc() - t, tt() - c))
    timed._rat_hook = True
    cbs[cbs.index(hook)] = timed
    sys.modules['_rat_bench_times'] = times
_rat_bench_wrap()
del _rat_bench_wrap
"""


def execute(kc, code, silent=False, user_expressions=None):
    msg_id = kc.execute(code, silent=silent, store_history=not silent, allow_stdin=False,
                        user_expressions=user_expressions or {})
    while True:
        r = kc.get_shell_msg(timeout=120)
        if r["parent_header"].get("msg_id") == msg_id:
            break
    while True:
        m = kc.get_iopub_msg(timeout=120)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):
            break
    if r["content"]["status"] != "ok":
        raise SystemExit("snap_cost: %r failed: %s" % (code[:60], r["content"]))
    return r["content"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helper", default=os.path.join(ROOT, "kernelspec", "rat_helper.py"))
    ap.add_argument("--vars", type=int, default=0)
    ap.add_argument("checkpoints", nargs="+", type=int)
    a = ap.parse_args()
    src = open(a.helper).read()
    # A profile of its own: no history database shared (and locked) with other kernels.
    ipdir = tempfile.mkdtemp(prefix="snap-cost-ipython-")
    km, kc = start_new_kernel(kernel_name="python3", env=dict(os.environ, IPYTHONDIR=ipdir))
    try:
        # As lang_python.c installs it: a module in sys.modules, nothing in the user's namespace.
        execute(kc, "(lambda s, t, src: (s.modules.__setitem__('_rat', t.ModuleType('_rat')), "
                    "exec(compile(src, '<rat-py helper>', 'exec'), s.modules['_rat'].__dict__)))"
                    "(__import__('sys'), __import__('types'), %r)" % src, silent=True)
        if a.vars:
            execute(kc, "for _k in range(%d): globals()['v%%d' %% _k] = _k\ndel _k" % a.vars, silent=True)
        execute(kc, TIMER, silent=True)
        done = 0
        for cp in sorted(a.checkpoints):
            while done < cp:
                execute(kc, "x = 42")
                done += 1
            c = execute(kc, "pass", silent=True,
                        user_expressions={"t": "__import__('_rat_bench_times')[-100:]",
                                          "n": "len(get_ipython().user_ns)"})
            ue = c["user_expressions"]
            times = eval(ue["t"]["data"]["text/plain"])  # a list of floats, from our own kernel
            print("snap_us_at_%d %.1f" % (cp, statistics.median(t for t, c in times) * 1e6))
            print("snap_cpu_us_at_%d %.1f" % (cp, statistics.median(c for t, c in times) * 1e6))
            print("ns_len_at_%d %s" % (cp, ue["n"]["data"]["text/plain"]))
            sys.stdout.flush()
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        shutil.rmtree(ipdir, ignore_errors=True)


if __name__ == "__main__":
    main()
