"""A user's own SIGALRM timer (signal.alarm / setitimer(ITIMER_REAL)) fires
as the user set it, although the helper's post-run snapshot and inspect()
borrow the same timer for their time limits.

A real IPython InteractiveShell in process with rat_helper.py installed as
rat-py installs it (module `_rat`, its post_run_cell hook). Every cell leaves
a list in the namespace, so the snapshot arms its time limit (it skips the
timer when every value is a plain scalar). The only time bounds are generous
ones that catch a hang or a timer fired too early.
"""
import contextlib
import io
import os
import signal
import sys
import time
import types

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

HELPER = os.environ.get("RAT_HELPER_PY") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernelspec", "rat_helper.py")

cfg = Config()
cfg.HistoryManager.hist_file = ":memory:"
ip = InteractiveShell.instance(config=cfg)
rat = types.ModuleType("_rat")
sys.modules["_rat"] = rat
exec(compile(open(HELPER).read(), HELPER, "exec"), rat.__dict__)


def cell(code):
    with contextlib.redirect_stdout(io.StringIO()):
        r = ip.run_cell(code)
    assert r.success, (code, r.error_before_exec, r.error_in_exec)
    ip.payload_manager.clear_payload()


def wait_for(pred, bound):
    end = time.monotonic() + bound
    while not pred() and time.monotonic() < end:
        time.sleep(0.01)
    return pred()


def test_alarm_set_in_a_cell_fires():
    cell("import signal, time\n"
         "fired = []\n"
         "handler = lambda s, f: fired.append(time.monotonic())\n"
         "signal.signal(signal.SIGALRM, handler)\n"
         "data = [1, 2, 3]\n"
         "t0 = time.monotonic()\n"
         "signal.setitimer(signal.ITIMER_REAL, 0.5)")
    ns = ip.user_ns
    cell("more = [4, 5]")  # another snapshot while the user's timer runs
    assert wait_for(lambda: ns["fired"], 30), "the user's timer never fired (the snapshot cancelled it)"
    assert ns["fired"][0] >= ns["t0"] + 0.5 - 0.01, "fired before its time: %r" % (ns["fired"][0] - ns["t0"])
    assert signal.getsignal(signal.SIGALRM) is ns["handler"], "the user's handler was not put back"
    cell("signal.signal(signal.SIGALRM, signal.SIG_DFL)")


def test_signal_alarm_fires():
    cell("import signal, time\n"
         "fired = []\n"
         "signal.signal(signal.SIGALRM, lambda s, f: fired.append(time.monotonic()))\n"
         "t0 = time.monotonic()\n"
         "signal.alarm(1)\n"
         "data = [1, 2, 3]")
    ns = ip.user_ns
    assert wait_for(lambda: ns["fired"], 30), "signal.alarm(1) never fired"
    assert ns["fired"][0] >= ns["t0"] + 1 - 0.01
    cell("signal.signal(signal.SIGALRM, signal.SIG_DFL)")


def test_interval_timer_keeps_its_interval():
    cell("import signal, time\n"
         "ticks = []\n"
         "signal.signal(signal.SIGALRM, lambda s, f: ticks.append(time.monotonic()))\n"
         "signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)\n"
         "data = [1, 2, 3]")
    ns = ip.user_ns
    for i in range(5):
        cell("data.append(%d)" % i)
    assert wait_for(lambda: len(ns["ticks"]) >= 5, 30), "the interval timer stopped: %d ticks" % len(ns["ticks"])
    cell("signal.setitimer(signal.ITIMER_REAL, 0)\nsignal.signal(signal.SIGALRM, signal.SIG_DFL)")


def test_due_during_a_slow_repr_fires_after_it():
    """The user's timer comes due while the snapshot waits on a slow
    __repr__ (the snapshot's own limit cuts it): the user's handler runs
    once, after the snapshot, and the snapshot still marks the slow value."""
    cell("import signal, time\n"
         "fired = []\n"
         "signal.signal(signal.SIGALRM, lambda s, f: fired.append(time.monotonic()))\n"
         "class Slow:\n"
         "    def __repr__(self):\n"
         "        time.sleep(2)\n"
         "        return 'slow'\n"
         "slow = Slow()\n"
         "signal.setitimer(signal.ITIMER_REAL, 0.05)")
    ns = ip.user_ns
    snap = rat._snapshot()
    rows = {r[0]: r for r in snap["rows"]}
    assert "slow repr" in rows["slow"][2], rows["slow"]
    assert wait_for(lambda: ns["fired"], 30), "the user's timer, due during the snapshot, never fired"
    time.sleep(0.3)
    assert len(ns["fired"]) == 1, ns["fired"]
    cell("del slow\nsignal.signal(signal.SIGALRM, signal.SIG_DFL)")


def test_inspect_leaves_the_users_timer():
    cell("import signal, time\n"
         "fired = []\n"
         "signal.signal(signal.SIGALRM, lambda s, f: fired.append(time.monotonic()))\n"
         "signal.setitimer(signal.ITIMER_REAL, 0.5)")
    ns = ip.user_ns
    assert '"ok":true' in repr(rat.inspect('[{"t": "name", "v": "fired"}]'))
    assert wait_for(lambda: ns["fired"], 30), "the user's timer never fired after inspect()"
    cell("signal.signal(signal.SIGALRM, signal.SIG_DFL)")


def main():
    for t in (test_alarm_set_in_a_cell_fires, test_signal_alarm_fires, test_interval_timer_keeps_its_interval,
              test_due_during_a_slow_repr_fires_after_it, test_inspect_leaves_the_users_timer):
        t()
        print("ok: %s" % t.__name__)


if __name__ == "__main__":
    main()
