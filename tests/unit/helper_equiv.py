"""The helper's incremental variables overview equals the full scan's, step by
step, through random sessions (rows reused from the overview before
included); and its cost does not grow with the session.

A real IPython InteractiveShell (in process: the overview is IPython-side
code; the kernel adds only transport) with rat_helper.py installed as rat-py
installs it (module `_rat` in sys.modules, its post_run_cell hook). Random
cells assign, reassign (to other types, to modules and back), delete,
delete and re-add, hide names (push(interactive=False)) and unhide them,
delete and re-create IPython's own `_iN`/`_N` entries, produce outputs (the
output cache, kept small so it culls), run without history, reset; the test
also changes the namespace from outside cells. After every step the
snapshot the hook sent and a fresh one must equal the full scan's (the
definition rat-py used before the tracker: every entry of user_ns walked).

Usage: helper_equiv.py [STEPS_PER_SEED]
"""
import contextlib
import heapq
import io
import os
import random
import sys
import tracemalloc
import types

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

HELPER = os.environ.get("RAT_HELPER_PY") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernelspec", "rat_helper.py")

cfg = Config()
cfg.HistoryManager.hist_file = ":memory:"
cfg.InteractiveShell.cache_size = 40   # the output cache culls `_N` entries (deletions IPython makes)
cfg.InteractiveShell.colors = "NoColor"
ip = InteractiveShell.instance(config=cfg)
ip.showtraceback = lambda *a, **k: None   # cells that fail on purpose stay quiet

# The request being executed, as ipykernel's shell holds it: the helper's
# hook works for the session that installed it (rat-py's) and no other.
ip.parent_header = {"header": {"session": "rat-py-session", "msg_type": "execute_request"}}

rat = types.ModuleType("_rat")
sys.modules["_rat"] = rat
exec(compile(open(HELPER).read(), HELPER, "exec"), rat.__dict__)


def full_names(ip):
    """The full scan, as rat_helper.py did it before (verbatim)."""
    ns = ip.user_ns
    hidden = ip.user_ns_hidden
    mod = types.ModuleType
    return [k for k, v in list(ns.items())
            if not k.startswith("_") and k not in hidden and not isinstance(v, mod)]


def full_snapshot():
    try:
        names = full_names(ip)
    except Exception as e:
        return ("error", type(e).__name__)
    return rat._rows(ip.user_ns, len(names), heapq.nsmallest(rat.OVERVIEW_ROWS, names))


def tracked_snapshot():
    try:
        return rat._snapshot()
    except Exception as e:
        return ("error", type(e).__name__)


def hook_snapshot():
    """What the post_run_cell hook sent for the last cell (or the error marker
    when it sent nothing: the hook swallows errors)."""
    p = ip.payload_manager.read_payload()
    ip.payload_manager.clear_payload()
    got = [x["snapshot"] for x in p if x.get("source") == "rat_snapshot"]
    return got[-1] if got else None


NAMES = ["a", "b", "c", "x", "y", "z", "df", "zz9", "Abc", "é", "m", "f", "_p", "_q", "data", "v1", "v10", "v2"]
VALUES = ["1", "2.5", "'s'", "[1, 2, 3]", "list(range(30))", "{'k': 1}", "__import__('os')", "__import__('json')",
          "(lambda: 0)", "None", "'x' * 500", "{i: i for i in range(20)}", "type", "set()",
          # immutable values whose rows the overview reuses while the object stays
          "True", "b'xy'", "10 ** 30", "1.5", "-0.0", "2j", "'y' * 5000", "'line\\nbreak'", "a if 'a' in dir() else 7"]


def random_cell(r):
    ops = []
    for _ in range(r.randint(1, 4)):
        n, v = r.choice(NAMES), r.choice(VALUES)
        kind = r.random()
        if kind < 0.36:
            ops.append("%s = %s" % (n, v))
        elif kind < 0.40:
            # changed in place: the same object, another row
            ops.append("(lambda o: o.append(len(o)) if type(o) is list else o.update({len(o): 0}) if type(o) is dict "
                       "else None)(globals().get(%r))" % n)
        elif kind < 0.55:
            ops.append("try:\n    del %s\nexcept NameError:\n    pass" % n)
        elif kind < 0.62:
            ops.append("try:\n    del %s\nexcept NameError:\n    pass\n%s = %s" % (n, n, v))
        elif kind < 0.66:
            ops.append("import json as %s" % n)
        elif kind < 0.70:
            ops.append("get_ipython().push({%r: %s}, interactive=False)" % (n, v))
        elif kind < 0.73:
            ops.append("get_ipython().user_ns_hidden.pop(%r, None)" % n)
        elif kind < 0.77:
            # IPython's own history entries: deleted, and re-made by name (a new key object).
            ops.append("globals().pop('_i%d' % max(1, get_ipython().execution_count - " + str(r.randint(0, 3)) + "), None)")
        elif kind < 0.79:
            ops.append("_i%d = 'mine'" % r.randint(1, 400))
        elif kind < 0.80:
            # The newest history entry before this cell's (where the tracker
            # anchors) deleted and re-made by name later in the cell, with a
            # new name and an old entry's deletion in between.
            ops.append("_h = [k for k in globals() if isinstance(k, str) and k[:1] == '_' and k[1:].lstrip('i').isdigit()"
                       " and k != '_i%d' % get_ipython().execution_count]\n"
                       "if len(_h) > 2:\n"
                       "    _v = globals().pop(_h[-1])\n"
                       "    " + n + " = 1\n"
                       "    globals().pop(_h[0])\n"
                       "    exec('%s = _v' % _h[-1])")
        elif kind < 0.815:
            ops.append("globals().pop('_%d' % max(1, get_ipython().execution_count - " + str(r.randint(1, 5)) + "), None)")
        elif kind < 0.85:
            base = r.choice(["w", "v", "_t"])
            ops.append("for _j in range(%d):\n    globals()['%s%%d' %% _j] = _j" % (r.randint(1, 60), base))
        elif kind < 0.88:
            base = r.choice(["w", "v", "_t"])
            ops.append("for _j in range(%d):\n    globals().pop('%s%%d' %% _j, None)" % (r.randint(1, 60), base))
        elif kind < 0.885:
            ops.append("globals()[7] = 'not a str key'")
        elif kind < 0.91:
            ops.append("globals().pop(7, None)")
        elif kind < 0.92:
            ops.append("%reset -f")
        else:
            ops.append("%s" % n)   # an output: `_N`, `_`, Out[N]
    if r.random() < 0.1:
        ops.append("raise ValueError('a failing cell')")
    return "\n".join(ops)


def outside_change(r):
    """The namespace changed between cells by something other than a cell."""
    ns = ip.user_ns
    n = r.choice(NAMES)
    kind = r.random()
    if kind < 0.4:
        ns[n] = r.choice([1, "s", types, [1, 2], None])
    elif kind < 0.7:
        ns.pop(n, None)
    elif kind < 0.85:
        ip.push({n: 3}, interactive=False)
    else:
        ip.user_ns_hidden.pop(n, None)


def check(step, what, got, want, code):
    if got != want:
        print("step %d (%s): snapshot differs from the full scan's" % (step, what))
        print("cell:\n%s" % code)
        print("got:  %r" % (got,))
        print("want: %r" % (want,))
        sys.exit(1)


rescans, updates = [0], [0]


def random_session(seed, steps):
    r = random.Random(seed)
    ip.reset(new_session=True)
    ip.payload_manager.clear_payload()
    for step in range(steps):
        if r.random() < 0.15:
            outside_change(r)
            code = "(outside change)"
        else:
            code = random_cell(r)
            with contextlib.redirect_stdout(io.StringIO()):
                ip.run_cell(code, store_history=r.random() < 0.9)
            hook = hook_snapshot()
            want = full_snapshot()
            check(step, "post_run_cell hook", hook, None if isinstance(want, tuple) else want, code)
        check(step, "snap()", tracked_snapshot(), full_snapshot(), code)


def test_cost_does_not_grow():
    """After 20 000 entries of IPython history, one overview allocates
    nothing proportional to them (the full scan copied every entry: over a
    megabyte) and walks only what the last cell added."""
    ip.reset(new_session=True)
    ip.run_cell("a = 1; b = [1, 2]")
    ns = ip.user_ns
    for i in range(20000):   # what 10 000 runs with outputs leave behind
        ns["_i%d" % (i + 100)] = "x = 42"
        ns["_%d" % (i + 100)] = 42
    ip.run_cell("c = 3")      # the tracker catches up (a rescan may be needed here)
    ip.run_cell("d = 4")
    ip.payload_manager.clear_payload()
    walked, peak = [], []
    real_snapshot = rat._snapshot

    def measured_snapshot():
        real = reversed
        rat.reversed = lambda d: (walked.append(k) or k for k in real(d))
        tracemalloc.start()
        try:
            return real_snapshot()
        finally:
            peak.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
            del rat.reversed
    rat._snapshot = measured_snapshot
    try:
        ip.run_cell("e = 5")
        snap = hook_snapshot()
    finally:
        rat._snapshot = real_snapshot
    peak = peak[0]
    assert snap == full_snapshot(), (snap, full_snapshot())
    assert snap["vars"] == 5, snap
    # The full scan's list of 40 000 tuples alone was > 2 MB.
    assert peak < 64 * 1024, "one overview allocated %d bytes with 40 000 history entries" % peak
    assert len(walked) < 20, "the overview walked %d keys after one cell" % len(walked)


def test_reused_rows():
    """Values equal to the one before but not the same (1, True, 1.0; 0.0
    and -0.0; a str and an equal bytes' neighbour) get their own rows."""
    ip.reset(new_session=True)
    for v in ["1", "True", "1.0", "1", "0.0", "-0.0", "0", "False", "'1'", "b'1'", "'1'", "1j", "1"]:
        ip.run_cell("x = %s" % v)
        snap = hook_snapshot()
        assert snap == full_snapshot(), (v, snap, full_snapshot())
    ip.run_cell("x = 'q' * 5000\ny = x")   # too long to keep: rows made again
    assert hook_snapshot() == full_snapshot()
    assert all(len(k) < 5000 for k, c in rat._row_cache.items() if type(c[0]) is str)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    test_cost_does_not_grow()
    print("ok: cost does not grow with the session")
    test_reused_rows()
    print("ok: rows reused only for the same immutable object")
    real_rescan, real_update = rat._Tracker._rescan, rat._Tracker._update

    def counted_rescan(self, ns):
        rescans[0] += 1
        return real_rescan(self, ns)

    def counted_update(self, ns):
        updates[0] += 1
        return real_update(self, ns)
    rat._Tracker._rescan, rat._Tracker._update = counted_rescan, counted_update
    for seed in (1, 2, 3, 4):
        rescans[0] = updates[0] = 0
        random_session(seed, steps)
        print("ok: seed %d, %d steps equal to the full scan (%d overviews, %d full rescans)"
              % (seed, steps, updates[0], rescans[0]))
        # The sessions must mostly take the incremental path, not only rescans.
        assert rescans[0] * 2 < updates[0], (rescans[0], updates[0])


if __name__ == "__main__":
    main()
