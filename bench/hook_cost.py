"""What rat-py's post-run hook costs a round trip, paired on one kernel: the
floor (bench/floor.c, no rat-py in the path) drives `x = 42` in blocks of 10
calls, alternating blocks with the helper's hook taken out and put back (the
helper installed as rat-py installs it: module `_rat`). The difference of
the block medians, median over all block pairs, is the hook's share of
rat-py's round trip; the kernel's own noise cancels in the pairing.

Usage: hook_cost.py [--helper PATH] [--blocks N] [--runs-before N]
Output: "key value" lines (us). Needs build/bench/floor (scripts/bench builds it).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOOR = os.path.join(ROOT, "build", "bench", "floor")
UNHOOK = ("(lambda cbs: cbs.__setitem__(slice(None), [cb for cb in cbs if not getattr(cb, '_rat_hook', False)]))"
          "(get_ipython().events.callbacks['post_run_cell'])")
REHOOK = "__import__('_rat')._register()"   # UNHOOK and REHOOK: bench.py's interleaved blocks use them too


def load_line(helper):
    """One line of code that installs the helper from its file as rat-py
    installs it (module `_rat`, which hooks itself in as it loads)."""
    return ("(lambda s, t, src: (s.modules.__setitem__('_rat', t.ModuleType('_rat')), "
            "exec(compile(src, '<rat-py helper>', 'exec'), s.modules['_rat'].__dict__)))"
            "(__import__('sys'), __import__('types'), open(%r).read())" % os.path.abspath(helper))


def load_hook_line(helper):
    """The helper's hook in, loading the helper first when no rat-py has."""
    return ("(__import__('sys').modules.get('_rat') or (%s, __import__('sys').modules['_rat'])[1])._register()"
            % load_line(helper))


def main():
    from jupyter_client.manager import KernelManager
    ap = argparse.ArgumentParser()
    ap.add_argument("--helper", default=os.path.join(ROOT, "kernelspec", "rat_helper.py"))
    ap.add_argument("--blocks", type=int, default=300)
    ap.add_argument("--runs-before", type=int, default=0)
    a = ap.parse_args()
    # The floor reads one line per block: load the helper from its file.
    load = load_line(a.helper)
    ipdir = tempfile.mkdtemp(prefix="hook-cost-ipython-")
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=dict(os.environ, IPYTHONDIR=ipdir))
    try:
        cf = km.connection_file
        if a.runs_before:
            subprocess.run([FLOOR, "rt", str(a.runs_before), cf], stdout=subprocess.DEVNULL, check=True)
        p = subprocess.Popen([FLOOR, "serve", "0", cf], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             bufsize=1)

        def block(prep, n=10):
            p.stdin.write("%d %s\n" % (n, prep))
            p.stdin.flush()
            while p.stdout.readline().strip() != "go":
                pass
            times = []
            for line in p.stdout:
                if line.strip() == "end":
                    break
                times.append(float(line))
            if len(times) != n:
                raise SystemExit("hook_cost: the floor ended early")
            return statistics.median(times)

        block(load, 2)
        # The hook must be in (the helper registers it when loaded): a
        # helper that failed to load would measure nothing.
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            r = kc.execute_interactive("", user_expressions={"n": "sum(getattr(cb, '_rat_hook', False) for cb in "
                                                               "get_ipython().events.callbacks['post_run_cell'])"},
                                       timeout=60, output_hook=lambda m: None)
            n = r["content"]["user_expressions"]["n"]["data"]["text/plain"]
        finally:
            kc.stop_channels()
        if n != "1":
            raise SystemExit("hook_cost: the helper's hook is not in the kernel (%s hooks)" % n)
        off, on = [], []
        for b in range(a.blocks):
            for hooked in ((False, True) if b % 2 == 0 else (True, False)):
                (on if hooked else off).append(block(REHOOK if hooked else UNHOOK))
        p.stdin.close()
        p.wait(timeout=60)
        print("unhooked_us %.1f" % statistics.median(off))
        print("hooked_us %.1f" % statistics.median(on))
        print("hook_us %.1f" % statistics.median(b - a_ for a_, b in zip(off, on)))
    finally:
        km.shutdown_kernel(now=True)
        shutil.rmtree(ipdir, ignore_errors=True)


if __name__ == "__main__":
    main()
