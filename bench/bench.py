"""scripts/bench's body: runs every measurement and prints a Markdown table.

Each row compares rat-py with the floor (a raw ZMQ client in C talking to the
same kernelspec, bench/floor.c) and, where it applies, with jupyter_client's
BlockingKernelClient (bench/jc_bench.py). Round trips are repeated in rounds
that alternate between the contenders, and the median of the round medians is
reported, so a noisy moment hurts all of them alike.

With --baseline=BIN (scripts/bench --baseline-ref=REF builds BIN from a git
ref), a second rat-py binary joins as one more contender wherever rat-py
runs against a kernel (round trips, flood, flood peaks, instruction
counts): same kernels, same blocks, so a change's cost is read as the ratio
of the two in one run, not across runs on a noisy machine.

Every kernel is started with PYTHONHASHSEED=0: with per-process hash
randomization, two fresh ipykernels differ by up to 10-20 % in round-trip
time (dict layouts differ), which swamps the 0.1-0.2 ms rat-py adds. Fixing
the seed makes every contender's kernel the same program.
"""
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile

# Prep lines for the interleaved blocks (run untimed before each block):
# rat-py's helper hook serves rat-py's runs only, so it is taken out before
# the floor's and jupyter_client's blocks and put back before rat-py's (the
# same lines hook_cost.py alternates).
from hook_cost import REHOOK, UNHOOK as UNHOOK_ONLY, load_hook_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOAD_HOOK = load_hook_line(os.path.join(ROOT, "kernelspec", "rat_helper.py"))
B = os.path.join(ROOT, "build", "bench")
RAT = os.path.join(B, "rat-py")
FLOOR = os.path.join(B, "floor")
MCPC = os.path.join(B, "mcpc")
PY = "/usr/bin/python3"
QUICK = "--quick" in sys.argv
ONLY = next((a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--only=")), None)
BASE = next((os.path.abspath(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--baseline=")), None)
BASE_NAME = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--baseline-ref=")), BASE)
WORK = tempfile.mkdtemp(prefix="rat-bench-")
os.environ["PYTHONHASHSEED"] = "0"
os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # quiets KernelManager's kernels


def run(cmd, env=None, timeout=1800):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout)
    if p.returncode != 0:
        raise SystemExit("bench: %s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p.stdout


def kv(text):
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


def nums(text):
    return [float(x) for x in text.split()]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def rat(*args):
    return [RAT, "--cwd", WORK] + list(args)


def base(*args):
    """The baseline rat-py's command (--baseline), like rat()."""
    return [BASE, "--cwd", WORK] + list(args)


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ipk = run([PY, "-c", "import ipykernel, IPython; print(ipykernel.__version__, IPython.__version__)"]).split()
    return "%s, %d cores, %s %s, Python %s, ipykernel %s (IPython %s)" % (
        cpu, os.cpu_count(), platform.system(), platform.release(), platform.python_version(), ipk[0], ipk[1])


rows = []


def row(what, ratpy, floor, jc, target, ok):
    rows.append((what, ratpy, floor, jc, target, "✓" if ok else ("✗" if ok is False else "")))


def kernel_cpu_ns(pid):
    """CPU time the kernel process has used so far (all its threads), in ns."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that ended meanwhile
    return total


def ready_kernel():
    """A fresh kernel (jupyter_client's KernelManager, the python3
    kernelspec), returned once it has answered kernel_info. The contenders
    connect to it at once, and a client of its own (jc_bench.py, a
    BlockingKernelClient) gives up when a kernel still booting misses the
    first second of its wait_for_ready and no heartbeat has come back yet
    ("Kernel died before replying to kernel_info"), which a loaded machine
    makes common. The manager's own client judges by the process instead.
    A kernel that dies at start (a port KernelManager picked was taken by
    another process before the kernel bound it: "Address already in use")
    is started again, twice at most."""
    from jupyter_client.manager import KernelManager
    for attempt in range(3):
        km = KernelManager(kernel_name="python3")
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=120)
            return km
        except RuntimeError:
            if attempt == 2:
                raise
            km.shutdown_kernel(now=True)
        finally:
            kc.stop_channels()


def paired(rounds, args, parse, prep=None):
    """Runs the floor, jupyter_client and rat-py (attached with --existing)
    against one kernel per round (jupyter_client's KernelManager, the python3
    kernelspec), one after the other, the order rotated, and returns
    {contender: [parse(output) per round]} (the flood row; round trips are
    interleaved more finely, see interleaved()). Two fresh kernels differ by
    5-20 % (memory layout, which core they land on), far more than a bridge
    adds; on one kernel the contenders differ by what they add. A kernel
    also slows a little with every client that has come and gone, hence the
    rotation: each contender goes first, second and third equally often.
    rat-py leaves its helper's post-run hook (and a shorter stdout flush
    interval) in a kernel it attached to; they are removed after rat-py's
    turn (jc_bench.py unhook), so the others never pay for them. prep(
    connection_file) readies each kernel first. With --baseline, the
    baseline rat-py ("b") takes its turn too."""
    order = "fjrb" if BASE else "fjr"
    got = {c: [] for c in order}
    jc = [PY, os.path.join(ROOT, "bench", "jc_bench.py")]
    for k in range(rounds):
        km = ready_kernel()
        try:
            cf = km.connection_file
            if prep:
                prep(cf)
            cmds = {"f": [FLOOR] + args + [cf],
                    "j": [PY, "-u", os.path.join(ROOT, "bench", "jc_bench.py")] + args + [cf],
                    "r": [MCPC] + args + ["--"] + rat("--existing", cf)}
            if BASE:
                cmds["b"] = [MCPC] + args + ["--"] + base("--existing", cf)
            n = len(order)
            for c in order[k % n:] + order[:k % n]:
                got[c].append(parse(run(cmds[c])))
                if c in "rb":
                    run(jc + ["unhook", "0", cf])
        finally:
            km.shutdown_kernel(now=True)
    return got


def proc_cpu_ns(pids):
    return sum(kernel_cpu_ns(p) for p in pids)


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def interleaved(rounds, blocks, per_block, prep=None, generations=1):
    """Round trips of `x = 42` with the floor, jupyter_client, rat-py
    (mcpc driving `rat-py --existing`) and the floor behind a pipe (floor
    relay: a second process asks for each round trip over a pipe and waits
    for the answer on another, the process and wake-up structure of any
    stdio bridge with none of its work) attached to one kernel per round at
    the same time, taking turns in blocks of per_block calls (order rotated
    block by block), so that what the shared machine does to one contender
    it does to the others within a second. Between its blocks a contender
    is stopped (SIGSTOP, all its processes): otherwise it would handle the
    others' iopub traffic (every client subscribes to all of it) while they
    are timed, and rat-py, which decodes it at once, would slow them more
    than they slow it. Two fresh kernels differ by
    5-20 %, and a busy neighbour by more, far more than the 0.1-0.3 ms a
    bridge adds. Each block starts with untimed runs: the prep line (the
    helper hook in for rat-py, out for the others: they never pay rat-py's
    snapshot) and two warm-ups, which also drain what the other clients'
    runs left on iopub. Around each block's timed calls, the CPU time of the
    kernel and of each contender's processes is sampled (all threads,
    schedstat).
    The fifth contender is the floor relay again with rat-py's hook in for
    its blocks (prep: load the helper if no rat-py has yet, then hook): the
    least any stdio bridge that reports the variable count after every run,
    as rat-py's footer does, can cost on this kernel.
    A process is also a sample: two identical floor processes on one kernel
    differ by -44..+72 us (2026-12-01, eight pairs of 60 blocks), where it
    lands and how its memory falls, for as long as it lives. So each
    contender's processes are started again `generations` times per kernel
    (blocks split evenly), and the round's figure spans them. Returns, per
    contender, a list per round of (block times [[us]], kernel CPU ns, own
    CPU ns {name: ns}, calls).
    With --baseline, the baseline rat-py ("b") is a sixth contender, run
    like rat-py (its hook in for its blocks)."""
    names = "fjrpqb" if BASE else "fjrpq"
    got = {c: [] for c in names}
    preps = {"f": UNHOOK_ONLY, "j": UNHOOK_ONLY, "r": REHOOK, "p": UNHOOK_ONLY, "q": LOAD_HOOK, "b": REHOOK}
    timers = {}   # the relay's timing process, stopped and continued with it

    def stop(procs):
        for p in procs.values():
            for pid in [p.pid] + children(p.pid) + timers.get(p.pid, []):
                os.kill(pid, signal.SIGCONT)
            p.stdin.close()
            p.wait(timeout=60)
        procs.clear()

    for k in range(rounds):
        km = ready_kernel()
        procs = {}
        try:
            cf = km.connection_file
            kpid = km.provisioner.pid
            if prep:
                prep(cf)
            cmds = {"f": [FLOOR, "serve", "0", cf],
                    "j": [PY, "-u", os.path.join(ROOT, "bench", "jc_bench.py"), "serve", "0", cf],
                    "r": [MCPC, "serve", "--"] + rat("--existing", cf),
                    "p": [FLOOR, "relay", "0", cf],
                    "q": [FLOOR, "relay", "0", cf]}
            if BASE:
                cmds["b"] = [MCPC, "serve", "--"] + base("--existing", cf)
            acc = {c: ([], 0, {}, 0) for c in names}
            for b in range(blocks):
                if b * generations % blocks < generations:   # the first block of a generation
                    stop(procs)
                    timers.clear()
                    for c in names:
                        procs[c] = subprocess.Popen(cmds[c], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                    text=True, bufsize=1)
                    for c in "pq":
                        timers[procs[c].pid] = [int(procs[c].stdout.readline().split()[1])]   # "pid N"
                for c in names[(k + b) % len(names):] + names[:(k + b) % len(names)]:
                    p = procs[c]
                    relay = {"floor": [p.pid], "timer": timers.get(p.pid, [])}
                    pids = {"f": {"floor": [p.pid]}, "j": {"python": [p.pid]},
                            "r": {"rat-py": children(p.pid), "mcpc": [p.pid]}, "p": relay, "q": relay,
                            "b": {"rat-py": children(p.pid), "mcpc": [p.pid]}}.get(c)
                    for pid in (q for ps in pids.values() for q in ps):
                        os.kill(pid, signal.SIGCONT)
                    p.stdin.write("%d %s\n" % (per_block, preps[c]))
                    p.stdin.flush()
                    line = p.stdout.readline()
                    while line and line.strip() != "go":
                        line = p.stdout.readline()
                    k0, o0 = kernel_cpu_ns(kpid), {n: proc_cpu_ns(ps) for n, ps in pids.items()}
                    times = []
                    for line in p.stdout:
                        if line.strip() == "end":
                            break
                        times.append(float(line))
                    k1, o1 = kernel_cpu_ns(kpid), {n: proc_cpu_ns(ps) for n, ps in pids.items()}
                    if len(times) != per_block:
                        raise SystemExit("bench: %s ended early: %s" % (" ".join(cmds[c]), p.stderr))
                    for pid in (q for ps in pids.values() for q in ps):
                        os.kill(pid, signal.SIGSTOP)
                    bt, kc, own, calls = acc[c]
                    bt.append(times)
                    own = {n: own.get(n, 0) + o1[n] - o0[n] for n in o1}
                    acc[c] = (bt, kc + k1 - k0, own, calls + per_block)
            for c in names:
                got[c].append(acc[c])
        finally:
            stop(procs)
            km.shutdown_kernel(now=True)
    return got


def rt_rows(what, got, target_ratio, jc_ratio=None):
    """The round-trip row and the CPU row for `got` from interleaved().
    The targets are judged per kernel (round): the ratio of rat-py's median
    to the floor's on that kernel, then the median over rounds. The spread
    of the ratio between adjacent blocks shows how much noise was left."""
    def med(xs):
        return statistics.median(xs)
    flat = {c: [[t for bt in rnd[0] for t in bt] for rnd in got[c]] for c in "rfj"}
    r_med, f_med, j_med = ([med(ts) for ts in flat[c]] for c in "rfj")
    r_all, f_all, j_all = ([t for ts in flat[c] for t in ts] for c in "rfj")
    r, f, j = med(r_med) / 1000, med(f_med) / 1000, med(j_med) / 1000
    added = med([a - b for a, b in zip(r_med, f_med)])
    ratios = [a / b for a, b in zip(r_med, f_med)]
    rf = med(ratios)
    rj = med([a / b for a, b in zip(r_med, j_med)])
    blk = sorted(med(a) / med(b) for rr, ff in zip(got["r"], got["f"]) for a, b in zip(rr[0], ff[0]))
    # No target (None): the ratio is shown, nothing is judged.
    target = ("≤ %.2f× floor" % target_ratio if target_ratio else "ratio to the floor, not a target") + (
        ", ≤ %.1f× jc" % jc_ratio if jc_ratio else "")
    row(what + ", median (p99)",
        "%.2f ms (%.2f), %+.0f µs" % (r, pct(r_all, 0.99) / 1000, added),
        "%.2f ms (%.2f)" % (f, pct(f_all, 0.99) / 1000),
        "%.2f ms (%.2f)" % (j, pct(j_all, 0.99) / 1000),
        "%s: %.3f×%s (per round: %s; per block p10/p50/p90: %.2f/%.2f/%.2f, %d blocks)" % (
            target, rf, ", %.2f× jc" % rj if jc_ratio else "", " ".join("%.3f" % x for x in ratios),
            pct(blk, 0.1), pct(blk, 0.5), pct(blk, 0.9), len(blk)),
        (rf <= target_ratio and (jc_ratio is None or rj <= jc_ratio)) if target_ratio else None)

    def cpu(c):
        kern = med([rnd[1] / rnd[3] / 1000 for rnd in got[c]])
        own = {n: med([rnd[2][n] / rnd[3] / 1000 for rnd in got[c]]) for n in got[c][0][2]}
        return kern, own
    (rk, ro), (fk, fo), (jk, jo), (qk, _) = cpu("r"), cpu("f"), cpu("j"), cpu("q")
    row("↳ CPU per round trip (same runs): kernel; the client's own processes",
        "kernel %.0f µs (%+.0f; the hooked relay's runs: %+.0f); rat-py %.0f µs, mcpc %.0f µs" % (
            rk, rk - fk, qk - fk, ro["rat-py"], ro["mcpc"]),
        "kernel %.0f µs; floor %.0f µs" % (fk, fo["floor"]), "kernel %.0f µs; python %.0f µs" % (jk, jo["python"]),
        "", None)

    def relay_row(c, what):
        m = [med([t for bt in rnd[0] for t in bt]) for rnd in got[c]]
        row(what,
            "rat-py over it: %+.0f µs, %.3f×" % (med([a - b for a, b in zip(r_med, m)]),
                                                med([a / b for a, b in zip(r_med, m)])),
            "%.2f ms, %+.0f µs, %.3f×" % (med(m) / 1000, med([a - b for a, b in zip(m, f_med)]),
                                          med([a / b for a, b in zip(m, f_med)])),
            "", "", None)
    # What the stdio structure alone costs (two pipe hops, two processes
    # woken after sleeping through the kernel's run): the floor relayed
    # over pipes, same kernels, same blocks.
    relay_row("p", "↳ the floor behind a pipe each way (floor relay: any stdio bridge's hops, none of its work)")
    # The same relay with rat-py's hook in: what the variable count in the
    # footer costs any stdio bridge at the least. rat-py's own work is what
    # it adds over this.
    relay_row("q", "↳ the floor relay with rat-py's post-run hook in (the least any stdio bridge that counts the "
                   "variables after every run can cost)")
    if "b" in got:
        b_med = [med([t for bt in rnd[0] for t in bt]) for rnd in got["b"]]
        b_all = [t for rnd in got["b"] for bt in rnd[0] for t in bt]
        rb = [a / b for a, b in zip(r_med, b_med)]
        bf = med([a / b for a, b in zip(b_med, f_med)])
        bblk = sorted(med(a) / med(b) for rr, bb in zip(got["r"], got["b"]) for a, b in zip(rr[0], bb[0]))
        (bk, bo) = cpu("b")
        row("↳ the baseline rat-py (%s), same kernels and blocks, median (p99)" % BASE_NAME,
            "this build / baseline: %.3f× (per round: %s; per block p10/p50/p90: %.2f/%.2f/%.2f), %+.0f µs" % (
                med(rb), " ".join("%.3f" % x for x in rb), pct(bblk, 0.1), pct(bblk, 0.5), pct(bblk, 0.9),
                med([a - b for a, b in zip(r_med, b_med)])),
            "%.2f ms (%.2f), %+.0f µs, %.3f× floor" % (med(b_med) / 1000, pct(b_all, 0.99) / 1000,
                                                        med([a - b for a, b in zip(b_med, f_med)]), bf),
            "", "CPU: kernel %.0f µs, rat-py %.0f µs (this build: kernel %.0f µs, rat-py %.0f µs)" % (
                bk, bo["rat-py"], rk, ro["rat-py"]), None)
    return f


# Round trips per contender per kernel: BLOCKS × PER_BLOCK. Short blocks
# pair the contenders more closely (each block also pays three untimed runs).
# Kernels (rounds): one kernel's ratio spreads about ±0.025 around the
# median (2026-12-01: 0.986-1.057 in one run), so the median of five moved
# by ~0.01 between identical runs, a third of what the target allows; nine
# make it steadier for a few more minutes.
ROUNDS = 3 if QUICK else 9
BLOCKS = 20 if QUICK else 30
PER_BLOCK = 10
# Fresh contender processes per kernel (see interleaved()): 27 samples of
# where a process lands, not 9.
GENERATIONS = 1 if QUICK else 3


def bench_roundtrip():
    return rt_rows("run `x = 42` round trip, interleaved on one fresh kernel",
                   interleaved(ROUNDS, BLOCKS, PER_BLOCK, generations=GENERATIONS), 1.03, 0.9)


def bench_long_session():
    """The same after 10 000 runs in the session: IPython's namespace then
    holds 10 000 more `_iN` entries (what used to make the snapshot grow)."""
    runs = 10000
    got = interleaved(ROUNDS, BLOCKS, PER_BLOCK, generations=GENERATIONS,
                      prep=lambda cf: run([FLOOR, "rt", str(runs - 50), cf], timeout=3600))
    rt_rows("run `x = 42` after %s runs in the session" % "{:,}".format(runs), got, 1.03)


def bench_many_vars():
    """The same with 10 000 user variables (and two modules, as a session
    that imported what it uses has): there the snapshot's cost is the user's
    names, counted exactly (modules and hidden names left out) after every
    run. Issue 34's target: ≤ 1.10× the floor on the same kernel."""
    nvars = 10000
    jc = [PY, os.path.join(ROOT, "bench", "jc_bench.py")]
    got = interleaved(ROUNDS, BLOCKS, PER_BLOCK, generations=GENERATIONS,
                      prep=lambda cf: run(jc + ["vars", str(nvars), cf]))
    rt_rows("run `x = 42` with %s variables" % "{:,}".format(nvars), got, 1.10)


def bench_hook():
    """The helper's post-run hook alone, paired on one kernel with the floor
    driving it (bench/hook_cost.py): its share of rat-py's added time."""
    blocks = "100" if QUICK else "300"
    k = kv(run([PY, os.path.join(ROOT, "bench", "hook_cost.py"), "--blocks", blocks], timeout=3600))
    row("the helper's post-run hook, paired on the floor (blocks with and without it), median",
        "%+.0f µs" % k["hook_us"], "%.2f ms without, %.2f ms with" % (k["unhooked_us"] / 1000, k["hooked_us"] / 1000),
        "", "", None)


def bench_cold():
    # A kernel's boot varies by ±100 ms from one start to the next, so the
    # two contenders alternate, start by start, and many starts are taken.
    n = 7 if QUICK else 15
    init = [kv(run([MCPC, "init", "--"] + rat()))["init_ms"] for _ in range(n)]
    first, fboot = [], []
    for k in range(n):
        pair = [lambda: first.append(kv(run([MCPC, "first", "--"] + rat()))["first_result_ms"]),
                lambda: fboot.append(kv(run([FLOOR, "boot"])))]
        for f in (pair if k % 2 else pair[::-1]):
            f()
    fready = statistics.median([x["ready_ms"] for x in fboot])
    ffirst = statistics.median([x["first_result_ms"] for x in fboot])
    i = statistics.median(init)
    row("spawn → `initialize` answered", "%.1f ms" % i, "", "", "≤ 10 ms", i <= 10)
    fr = statistics.median(first)
    row("spawn → first `run` result", "%.0f ms" % fr, "%.0f ms (ready %.0f)" % (ffirst, fready), "",
        "≤ floor + 50 ms (%.0f)" % (ffirst + 50), fr <= ffirst + 50)
    bench_roots(n)


def bench_init():
    """Spawn -> `initialize` answered (issue 43 item 5): what a host waits
    for before anything else. This build, the baseline (--baseline-ref) and
    the floor (`cat`, which echoes the request: mcpc takes the echo, whose
    start is the answer's, for the answer) take turns, order rotated, many
    starts; the median of each."""
    n = 15 if QUICK else 31
    cmds = {"r": [MCPC, "init", "--"] + rat(), "f": [MCPC, "init", "--", "cat"]}
    if BASE:
        cmds["b"] = [MCPC, "init", "--"] + base()
    got = {c: [] for c in cmds}
    order = "".join(cmds)
    for k in range(n):
        for c in order[k % len(order):] + order[:k % len(order)]:
            got[c].append(kv(run(cmds[c]))["init_ms"])
    r, f = statistics.median(got["r"]), statistics.median(got["f"])
    row("spawn → `initialize` answered (median of %d, turns with the floor%s)" % (n, " and the baseline" if BASE else ""),
        "%.1f ms" % r, "%.1f ms (`cat` echoing it)" % f, "", "≤ 10 ms", r <= 10)
    if BASE:
        b = statistics.median(got["b"])
        row("↳ the baseline rat-py (%s), same turns" % BASE_NAME, "this build / baseline: %.2f×" % (r / b),
            "%.1f ms" % b, "", "", None)


def bench_roots(n):
    # Issue 35: a client that declares roots, rat-py started from / with no
    # --cwd (as hosts start it): roots/list is asked after `initialized`
    # and the kernel moves to the root before the first run, in place
    # (os.chdir), or, when a .venv there is another interpreter, by
    # starting again there. Each start alternates with one of a client
    # without roots (--cwd, as today), so the added time is a paired
    # difference.
    plain, proj = os.path.join(WORK, "roots-plain"), os.path.join(WORK, "roots-venv")
    for d in (plain, proj):
        os.makedirs(d, exist_ok=True)
    venv = os.path.join(proj, ".venv")
    if not os.path.isdir(venv):
        run([PY, "-m", "venv", "--system-site-packages", "--without-pip", venv])
    env_root = {"MCPC_CWD": "/", "MCPC_ROOT": plain}
    env_venv = {"MCPC_CWD": "/", "MCPC_ROOT": proj}
    # The venv's ipykernel answer is cached after the first ask (interp.h);
    # a user's second start is the common case: warm it once.
    run([MCPC, "first", "--", RAT], env=env_venv)
    none, root, venvd = [], [], []
    for k in range(n):
        trio = [lambda: none.append(kv(run([MCPC, "first", "--"] + rat()))["first_result_ms"]),
                lambda: root.append(kv(run([MCPC, "first", "--", RAT], env=env_root))["first_result_ms"]),
                lambda: venvd.append(kv(run([MCPC, "first", "--", RAT], env=env_venv))["first_result_ms"])]
        for f in trio[k % 3:] + trio[:k % 3]:
            f()
    m0 = statistics.median(none)
    d_root = statistics.median([b - a for a, b in zip(none, root)])
    d_venv = statistics.median([b - a for a, b in zip(none, venvd)])
    row("spawn → first `run` result, client with roots, from / (kernel moved in place to the root)",
        "%.0f ms (%+.0f ms paired)" % (statistics.median(root), d_root), "", "", "≤ no-roots + 10 ms (%.0f)" % m0,
        d_root <= 10)
    row("the same, the root holds a .venv (the kernel starts again in it)",
        "%.0f ms (%+.0f ms paired)" % (statistics.median(venvd), d_venv), "", "", "", None)


def bench_memory():
    # Idle RSS moves by +-0.1 MB from run to run: the shared libraries land at
    # random addresses (ASLR), and which of their pages Linux maps around
    # each fault (64 KiB blocks) moves with them. Median of three starts.
    def idle_rss(runs):
        got = sorted((kv(run([MCPC, "rss", str(runs), "--"] + rat())) for _ in range(3)),
                     key=lambda r: r["rss_idle_kb"])
        return got[1]
    idle = idle_rss(1)
    floor_rss = statistics.median([kv(run([FLOOR, "boot"]))["rss_kb"] for _ in range(3)])
    jc = kv(run([PY, os.path.join(ROOT, "bench", "jc_bench.py"), "rss"]))
    lines = 2_000_000 if QUICK else 10_000_000
    fl = kv(run([MCPC, "flood", str(lines), "--"] + rat(), timeout=3600))
    idle3k = idle_rss(3000)
    row("RSS idle (after one run; median of 3)", "%.1f MB" % (idle["rss_idle_kb"] / 1024), "%.1f MB" % (floor_rss / 1024),
        "%.1f MB (import only)" % (jc["vmrss"] / 1024), "≤ 6 MB", idle["rss_idle_kb"] <= 6 * 1024)
    row("RSS idle after 3,000 runs (median of 3)", "%.2f MB" % (idle3k["rss_idle_kb"] / 1024), "", "", "≤ 7 MB",
        idle3k["rss_idle_kb"] <= 7 * 1024)
    row("peak RSS streaming %s lines" % "{:,}".format(lines), "%.1f MB" % (fl["hwm_kb"] / 1024), "", "",
        "≤ 16 MB", fl["hwm_kb"] <= 16 * 1024)
    # Issue 14 item 4: 3,000,000 lines by print and by sys.stdout.write (the
    # kernel then sends fewer, bigger messages: 5-7 MB each); peak, and idle
    # RSS 1.5 s after the flood (past the runtime's malloc_trim).
    for mode, what in (("flood", "print(i)"), ("floodw", "sys.stdout.write 25-byte lines")):
        f = kv(run([MCPC, mode, "3000000", "--"] + rat(), timeout=3600))
        row("flood of 3,000,000 × %s: peak / idle after" % what,
            "%.1f / %.1f MB" % (f["hwm_kb"] / 1024, f["rss_idle_kb"] / 1024), "", "", "≤ 16 / ≤ 7 MB",
            f["hwm_kb"] <= 16 * 1024 and f["rss_idle_kb"] <= 7 * 1024)
    # The same floods with a client that reads nothing until the run is over
    # (notifications past 4 MiB unread are dropped; the result keeps all).
    for mode, what in (("p", "print(i)"), ("w", "sys.stdout.write")):
        words = run([PY, os.path.join(ROOT, "bench", "slow_reader.py"), RAT, mode], timeout=3600).split()
        f = {k: float(v) for k, v in zip(words[::2], words[1::2])}  # "key value key value ..."
        row("the same × %s, client reading nothing until the end: peak / idle after" % what,
            "%.1f / %.1f MB" % (f["hwm_kb"] / 1024, f["idle_rss_kb"] / 1024), "", "", "≤ 16 / ≤ 7 MB",
            f["hwm_kb"] <= 16 * 1024 and f["idle_rss_kb"] <= 7 * 1024)
    row("notifications for %s lines (coalesced)" % "{:,}".format(lines), "%d in %.1f s" % (fl["notifications"], fl["flood_ms"] / 1000),
        "", "", "bounded", None)


def bench_flood():
    n = 200_000
    got = paired(3 if QUICK else 6, ["flood", str(n)], lambda out: kv(out)["flood_ms"])
    r, f, j = (statistics.median(got[c]) for c in "rfj")
    rf = statistics.median([a / b for a, b in zip(got["r"], got["f"])])
    row("`print` ×200,000 end to end, on one kernel", "%.0f ms" % r, "%.0f ms" % f, "%.0f ms" % j,
        "≤ 1.1× floor (paired median): %.2f×" % rf, rf <= 1.1)
    if BASE:
        b = statistics.median(got["b"])
        rb = statistics.median([a / b for a, b in zip(got["r"], got["b"])])
        row("↳ the baseline rat-py (%s), same kernels" % BASE_NAME,
            "this build / baseline (paired median): %.3f× (per kernel: %s)" % (
                rb, " ".join("%.3f" % (a / b) for a, b in zip(got["r"], got["b"]))),
            "%.0f ms, %.2f× floor" % (b, statistics.median([a / b for a, b in zip(got["b"], got["f"])])), "", "",
            None)


def bench_peak():
    """Issue 14 item 4's floods of 3,000,000 lines (print, and
    sys.stdout.write: fewer, bigger messages), rat-py's peak RSS and its RSS
    1.5 s after (past the runtime's malloc_trim); with --baseline, the
    baseline takes turns with this build, flood by flood, order rotated."""
    n = 1 if QUICK else 3
    who = [("r", rat)] + ([("b", base)] if BASE else [])
    for mode, what in (("flood", "print(i)"), ("floodw", "sys.stdout.write 25-byte lines")):
        got = {c: [] for c, _ in who}
        for k in range(n):
            for c, cmd in (who if k % 2 == 0 else who[::-1]):
                got[c].append(kv(run([MCPC, mode, "3000000", "--"] + cmd(), timeout=3600)))
        med = {c: (statistics.median(x["hwm_kb"] for x in v) / 1024, statistics.median(x["rss_idle_kb"] for x in v) / 1024)
               for c, v in got.items()}
        each = {c: ", ".join("%.1f/%.1f" % (x["hwm_kb"] / 1024, x["rss_idle_kb"] / 1024) for x in v) for c, v in got.items()}
        hwm, idle = med["r"]
        if BASE:
            bh, bi = med["b"]
            row("flood of 3,000,000 × %s: peak / idle after (median of %d; each: %s)" % (what, n, each["r"]),
                "%.1f / %.1f MB" % (hwm, idle), "", "",
                "peak within 1 MB of the baseline (%s: %.1f / %.1f MB; each: %s)" % (BASE_NAME, bh, bi, each["b"]),
                hwm <= bh + 1)
        else:
            row("flood of 3,000,000 × %s: peak / idle after (median of %d; each: %s)" % (what, n, each["r"]),
                "%.1f / %.1f MB" % (hwm, idle), "", "", "≤ 16 / ≤ 7 MB", hwm <= 16 and idle <= 7)


def bench_restart():
    n = 3 if QUICK else 5
    cold = nums(run([MCPC, "restart", str(n), "--"] + rat()))
    row("`ctl restart` → next run result (cold)", "%.0f ms" % statistics.median(cold), "", "", "", None)
    help_text = run([RAT, "--help"])
    if "--spare" in help_text:
        spare = nums(run([MCPC, "restart", str(n), "--"] + rat("--spare")))
        s = statistics.median(spare)
        row("`ctl restart` → next run result (`--spare`)", "%.0f ms" % s, "", "", "≤ 150 ms", s <= 150)


def bench_look():
    r = kv(run([MCPC, "look", "--"] + rat()))
    row("`look` overview, 10,000 variables", "%.1f ms" % r["overview_ms"], "", "", "", None)
    row("`look --at` a 10^6-key dict", "%.1f ms" % r["drill_ms"], "", "", "", None)
    row("`look --code math.sq` (first / warm)", "%.0f / %.1f ms" % (r["complete_first_ms"], r["complete_ms"]), "", "",
        "", None)
    row("`run x = 42` with 10,000 variables", "%.1f ms" % r["run_10k_vars_ms"], "", "", "", None)


def bench_http():
    node = "node"
    out = kv(run([node, os.path.join(ROOT, "bench", "http_load.mjs"), RAT, "100", "5" if QUICK else "10"]))
    row("HTTP (Node fetch client): 100 sessions × status+look during a streaming run, p50 / p99",
        "%.1f / %.1f ms, %d errors; CPU: client %d %%, rat-py %d %% (%d µs/req)" % (
            out["p50_ms"], out["p99_ms"], out["errors"], out["client_cpu_pct"], out["ratpy_cpu_pct"],
            out["ratpy_us_per_req"]), "", "", "0 errors (latency bound by the client, see wrk)", out["errors"] == 0)
    # The same load from wrk (C): what rat-py itself costs, beside a trivial
    # libmicrohttpd responder in rat-py's threading mode (issue 14 item 5).
    if subprocess.run(["which", "wrk"], capture_output=True).returncode != 0:
        return
    w = kv(run([PY, os.path.join(ROOT, "bench", "http_wrk.py"), RAT, os.path.join(B, "mhd_floor"), "100",
                "3" if QUICK else "10"]))
    row("HTTP (wrk, 100 connections): 100 sessions × status+look during a streaming run, p50 / p99",
        "%.1f / %.1f ms at %.0f req/s (%.0f µs CPU/req)" % (w["mcp_p50_ms"], w["mcp_p99_ms"], w["mcp_rps"],
                                                           w["mcp_us_per_req"]),
        "mhd_floor: %.1f / %.1f ms at %.0f req/s" % (w["mhd_p50_ms"], w["mhd_p99_ms"], w["mhd_rps"]), "",
        "p99 ≤ 20 ms", w["mcp_p99_ms"] <= 20 and w["mcp_bad"] == 0)
    row("HTTP (wrk, 100 connections): GET /health, p50 / p99", "%.1f / %.1f ms at %.0f req/s" % (
        w["health_p50_ms"], w["health_p99_ms"], w["health_rps"]), "", "", "", None)


def bench_watchers():
    """Issue 34: N sessions subscribed to rat://events with their GET /mcp
    stream open, reading it (200) or not (100, 4 KiB receive buffers), while
    one more session prints 1,000,000 lines of 70 bytes (bench/watchers.py):
    rat-py's CPU from the run's start until the watchers have it all, and its
    RSS before → at the peak → 2 s after, and what an idle session costs
    (the base RSS with 200 watchers less that with none, per watcher). The
    targets are judged against the 0-watcher row of the same run."""
    lines = 300_000 if QUICK else 1_000_000
    script = os.path.join(ROOT, "bench", "watchers.py")
    got, bgot = {}, {}
    for key, n, mode in (("0", 0, "reading"), ("200r", 200, "reading"), ("100s", 100, "stalled")):
        got[key] = kv(run([PY, script, RAT, str(n), mode, str(lines)], timeout=3600))
        if BASE:
            bgot[key] = kv(run([PY, script, BASE, str(n), mode, str(lines)], timeout=3600))
    zero = got["0"]

    def mb(x):
        return x / 1024

    def rss(g):
        return "%.1f → %.1f → %.1f MB" % (mb(g["base_kb"]), mb(g["peak_kb"]), mb(g["after_kb"]))
    def cpu(g):  # user + system: the system part is mostly loopback TCP, both ends charged to the sender
        return "%.2f s (user %.2f + sys %.2f)" % (g["cpu_s"], g["cpu_user_s"], g["cpu_sys_s"])
    def got_all(g, n):
        return "%.0f MB, %.1f %% of %d events to each watcher" % (
            g["watch_bytes"] / 1e6, 100 * g["events_got"] / max(1, n * g["events_sent"]), g["events_sent"])
    row("%s lines printed, 0 watchers: CPU; RSS base → peak → 2 s after" % "{:,}".format(lines),
        "%s; %s (run %.1f s)" % (cpu(zero), rss(zero), zero["run_ms"] / 1000), "", "",
        "after within 2 MB of base", zero["after_kb"] <= zero["base_kb"] + 2048)
    r = got["200r"]
    ratio = r["cpu_s"] / max(zero["cpu_s"], 1e-3)
    row("the same, 200 watchers reading rat://events (GET /mcp)",
        "%s, %.1f× 0 watchers; %s; %s" % (cpu(r), ratio, rss(r), got_all(r, 200)),
        "", "", "CPU ≤ 2× 0 watchers; after within 2 MB of base",
        ratio <= 2 and r["after_kb"] <= r["base_kb"] + 2048)
    s = got["100s"]
    row("the same, 100 watchers not reading (4 KiB receive buffers)",
        "%s; %s; %.1f MB 2 s after they hang up" % (cpu(s), rss(s), mb(s["closed_kb"])), "", "",
        "peak ≤ base + 80 MB; after hanging up within 2 MB of base",
        s["peak_kb"] <= s["base_kb"] + 80 * 1024 and s["closed_kb"] <= s["base_kb"] + 2048)
    # What one more idle session costs (issue 34: ≤ 16 KB): the base RSS
    # (setup over, heap trimmed, before the run) of the 200-watcher process
    # less the 0-watcher one's, per watcher; each watcher is a session,
    # initialized and subscribed, with its GET /mcp stream open and idle.
    def per_session(g, z, n):
        return (g["base_kb"] - z["base_kb"]) / n  # kB as /proc counts them (KiB)
    kb = per_session(r, zero, 200)
    row("RSS per idle session (subscribed, GET /mcp open): base of 200 watchers − base of 0, / 200",
        "%.1f KB (100 not reading: %.1f KB)" % (kb, per_session(s, zero, 100)),
        "baseline: %.1f KB" % per_session(bgot["200r"], bgot["0"], 200) if BASE else "", "",
        "≤ 16 KB per session", kb <= 16)
    if BASE:
        row("↳ the baseline rat-py (%s): 0 / 200 reading / 100 not reading" % BASE_NAME,
            "%s, %s; %s, %s, %s; %s, %s" % (cpu(bgot["0"]), rss(bgot["0"]), cpu(bgot["200r"]), rss(bgot["200r"]),
                                            got_all(bgot["200r"], 200), cpu(bgot["100s"]), rss(bgot["100s"])),
            "", "", "", None)


def bench_callgrind():
    """Instructions the client executes per run round trip (the kernel is not
    under valgrind): the difference between 300 and 100 round trips / 200,
    for rat-py and for the floor (the least any client can do: the HMAC and
    the ZMQ calls)."""
    if subprocess.run(["which", "valgrind"], capture_output=True).returncode != 0:
        return

    def total(out):
        for line in open(out):
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
        return 0
    counts = {}
    for n in (100, 300):
        vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + os.path.join(WORK, "cg.r.%d" % n)]
        run([MCPC, "rt", str(n), "--"] + vg + rat())
        counts["r", n] = total(vg[-1].split("=", 1)[1])
        if BASE:
            vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + os.path.join(WORK, "cg.b.%d" % n)]
            run([MCPC, "rt", str(n), "--"] + vg + base())
            counts["b", n] = total(vg[-1].split("=", 1)[1])
        vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + os.path.join(WORK, "cg.f.%d" % n)]
        run(vg + [FLOOR, "rt", str(n)])
        counts["f", n] = total(vg[-1].split("=", 1)[1])
    r, f = ((counts[c, 300] - counts[c, 100]) / 200 for c in "rf")
    row("client instructions per run round trip (callgrind)", "%.0f k (%.2f×)" % (r / 1000, r / f),
        "%.0f k" % (f / 1000), "", "", None)
    if BASE:
        b = (counts["b", 300] - counts["b", 100]) / 200
        row("↳ the baseline rat-py (%s)" % BASE_NAME, "this build: %+.1f k (%.3f×)" % ((r - b) / 1000, r / b),
            "%.0f k (%.2f× floor)" % (b / 1000, b / f), "", "", None)


def bench_gateway():
    """`run x = 42` through a Jupyter Server on loopback (Debian's
    jupyter_server, started here with a token): rat-py --gateway against a
    Python WebSocket client of the same server (bench/gw_bench.py, tornado),
    and rat-py on a local kernel (ZMQ) for scale. Each round starts the
    server's kernels afresh; the order rotates. Then rat-py --gateway's idle
    RSS and its peak in a 2,000,000-line flood (issue 34 item 5). Opt-in (--only=gw): it needs
    python3-jupyter-server."""
    import socket
    import time
    import urllib.request
    rounds = 3 if QUICK else 5
    n = 100 if QUICK else 200
    token = "bench-gw"
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    url = "http://127.0.0.1:%d" % port
    root = tempfile.mkdtemp(prefix="rat-bench-gw-")
    # No IOPub rate limits: by default the server drops a flood's output past
    # 1 MB/s, and the flood row would measure what it let through.
    srv = subprocess.Popen([PY, "-m", "jupyter_server", "--allow-root", "--no-browser", "--ip=127.0.0.1",
                            "--port=%d" % port, "--ServerApp.token=" + token, "--ServerApp.root_dir=" + root,
                            "--ServerApp.iopub_data_rate_limit=0", "--ServerApp.iopub_msg_rate_limit=0"],
                           env=dict(os.environ, JUPYTER_RUNTIME_DIR=os.path.join(root, "runtime")),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(600):
            try:
                req = urllib.request.Request(url + "/api/kernelspecs", headers={"Authorization": "token " + token})
                urllib.request.urlopen(req, timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        cmds = {"r": [MCPC, "rt", str(n), "--"] + rat("--gateway", url, "--gateway-token", token),
                "p": [PY, "-u", os.path.join(ROOT, "bench", "gw_bench.py"), "rt", str(n), url, token],
                "l": [MCPC, "rt", str(n), "--"] + rat()}
        got = {c: [] for c in cmds}
        for k in range(rounds):
            order = "rpl"[k % 3:] + "rpl"[:k % 3]
            for c in order:
                got[c].append(statistics.median(nums(run(cmds[c]))))
        # Issue 34 item 5: RSS idle after one run (median of 3 starts, as
        # bench_memory's, the stdio rat-py's beside it), and the peak of a
        # 2,000,000-line sys.stdout.write flood, through the gateway.
        gw = rat("--gateway", url, "--gateway-token", token)
        idle = sorted(kv(run([MCPC, "rss", "1", "--"] + gw))["rss_idle_kb"] for _ in range(3))[1]
        idle_local = sorted(kv(run([MCPC, "rss", "1", "--"] + rat()))["rss_idle_kb"] for _ in range(3))[1]
        fl = kv(run([MCPC, "floodw", "2000000", "--"] + gw, timeout=3600))
    finally:
        os.killpg(srv.pid, 9)
        srv.wait()
        subprocess.run(["rm", "-rf", root])
    r, p, loc = (statistics.median(got[c]) / 1000 for c in "rpl")
    ratio = statistics.median([a / b for a, b in zip(got["r"], got["p"])])
    row("run `x = 42` through Jupyter Server (WebSocket, loopback), median of round medians",
        "%.2f ms (%.0f runs/s; local ZMQ %.2f ms)" % (r, 1000 / r, loc), "", "Python WS client %.2f ms" % p,
        "≤ 1.05× the Python client: %.3f×" % ratio, ratio <= 1.05)
    row("`--gateway http://…` RSS idle after one run (median of 3)",
        "%.1f MB (a local kernel: %.1f MB)" % (idle / 1024, idle_local / 1024), "", "", "≤ 8 MB", idle <= 8 * 1024)
    row("`--gateway http://…` 2,000,000 × sys.stdout.write 25-byte lines: peak / idle after",
        "%.1f / %.1f MB" % (fl["hwm_kb"] / 1024, fl["rss_idle_kb"] / 1024), "", "", "≤ 16 MB peak",
        fl["hwm_kb"] <= 16 * 1024)


BENCHES = {"rt": bench_roundtrip, "long": bench_long_session, "vars": bench_many_vars, "cold": bench_cold,
           "flood": bench_flood, "memory": bench_memory, "restart": bench_restart, "look": bench_look,
           "http": bench_http, "watch": bench_watchers, "callgrind": bench_callgrind, "hook": bench_hook}
BENCHES["peak"] = bench_peak  # opt-in (--only=peak): the memory row's 3,000,000-line floods alone
BENCHES["gw"] = bench_gateway  # opt-in (--only=gw): starts a Jupyter Server
BENCHES["init"] = bench_init
# opt-in (--only=peer): jupyter-mcp-server beside rat-py; installs its pinned
# venv from PyPI (bench/requirements-peers.txt) into build/bench/peers
BENCHES["peer"] = lambda: __import__("peers").bench_peer(MCPC, rat, QUICK)


def main():
    for name in ONLY or []:
        if name not in BENCHES:
            raise SystemExit("bench: --only takes some of %s" % ",".join(BENCHES))
    if BASE and not os.access(BASE, os.X_OK):
        raise SystemExit("bench: --baseline=%s is not an executable" % BASE)
    print("### rat-py benchmark\n")
    print("Machine: %s  " % machine())
    print("Command: `scripts/bench%s`\n" % "".join(" " + a for a in sys.argv[1:] if not a.startswith("--baseline=")))
    only = ONLY or ["rt", "long", "vars", "hook", "init", "cold", "flood", "memory", "restart", "look", "http", "watch", "callgrind"]
    for name in only:
        BENCHES[name]()
    print("| measurement | rat-py | floor (raw ZMQ, C) | jupyter_client | target | met |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s |" % " | ".join(r))
    subprocess.run(["rm", "-rf", WORK])


if __name__ == "__main__":
    main()
