"""scripts/bench --only=peer: rat-py beside the peer a user would pick
instead, datalayer's jupyter-mcp-server (issue 43 item 4), one run, same
machine, same MCP client (bench/mcpc.c over stdio for both), same kernel: the
pinned venv's ipykernel (bench/requirements-peers.txt), which rat-py runs
through --python and the peer's Jupyter Server runs as its python3
kernelspec. Prints its own table, the peer's figure over rat-py's.

The peer drives kernels of a Jupyter Server; the bench starts one (the venv's
jupyter_server, with JupyterLab's extensions as `jupyter lab` would load
them) with a token, IOPub rate limits off (by default the server drops a
flood's output past 1 MB/s, and the flood row would measure what it let
through), and deletes the kernels the peer leaves after each of its starts.
Opt-in: it installs about 140 packages from PyPI into build/bench/peers
(pip's cache there too) the first time.
"""
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = os.path.join(ROOT, "build", "bench", "peers")
VENV = os.path.join(PEERS, "venv")
VPY = os.path.join(VENV, "bin", "python")
REQS = os.path.join(HERE, "requirements-peers.txt")
TOKEN = "bench-peer"


def _venv():
    """The pinned venv, made or remade when the pins changed."""
    want = hashlib.sha256(open(REQS, "rb").read()).hexdigest()
    stamp = os.path.join(PEERS, "installed")
    if os.path.exists(stamp) and open(stamp).read().strip() == want and os.access(VPY, os.X_OK):
        return
    subprocess.run(["rm", "-rf", VENV], check=True)
    os.makedirs(PEERS, exist_ok=True)
    subprocess.run(["/usr/bin/python3", "-m", "venv", VENV], check=True)
    subprocess.run([VPY, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--cache-dir",
                    os.path.join(PEERS, "pip-cache"), "-r", REQS], check=True)
    with open(stamp, "w") as f:
        f.write(want + "\n")


def _children():
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return kids


def _status_kb(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree_rss_kb(pids):
    """VmRSS of these processes and all their descendants, summed."""
    kids = _children()
    seen, todo, total = set(), list(pids), 0
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _status_kb(p, "VmRSS")
        todo.extend(kids.get(p, []))
    return total


class _Jupyter:
    """The venv's Jupyter Server on a free loopback port."""

    def __init__(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.url = "http://127.0.0.1:%d" % self.port
        self.root = tempfile.mkdtemp(prefix="rat-bench-peer-")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [VPY, "-m", "jupyter_server", "--allow-root", "--no-browser", "--ip=127.0.0.1", "--port=%d" % self.port,
             "--IdentityProvider.token=" + TOKEN, "--ServerApp.root_dir=" + self.root,
             "--ServerApp.iopub_data_rate_limit=0", "--ServerApp.iopub_msg_rate_limit=0"],
            env=dict(os.environ, JUPYTER_RUNTIME_DIR=os.path.join(self.root, "runtime")),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(1200):
            try:
                self.api("GET", "/api/kernelspecs")
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit("bench: the peer's Jupyter Server did not answer in 120 s")
        self.start_s = time.monotonic() - t0

    def api(self, method, path):
        req = urllib.request.Request(self.url + path, method=method, headers={"Authorization": "token " + TOKEN})
        body = urllib.request.urlopen(req, timeout=10).read()
        return json.loads(body) if body else None

    def clear_kernels(self):
        for k in self.api("GET", "/api/kernels") or []:
            self.api("DELETE", "/api/kernels/" + k["id"])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        subprocess.run(["rm", "-rf", self.root])


def _mcpc(mcpc, mode, args, cmd, env, timeout=3600):
    p = subprocess.run([mcpc, mode] + args + ["--"] + cmd, capture_output=True, text=True,
                       env=dict(os.environ, **env), timeout=timeout)
    if p.returncode != 0:
        raise SystemExit("bench: mcpc %s %s failed (%d): %s" % (mode, " ".join(cmd[:1]), p.returncode,
                                                                p.stderr[-1500:]))
    return p.stdout


def _kv(text):
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not parts[0][0].isdigit():
            try:
                out[parts[0]] = [float(x) for x in parts[1:]]
            except ValueError:
                pass
    return out


def _rt(text):
    return [float(x) for x in text.split() if x.isdigit()]


def bench_peer(mcpc, rat_cmd, quick):
    """One run of each row; prints the table."""
    _venv()
    jp = _Jupyter()
    rat = rat_cmd("--python", VPY)
    peer = [os.path.join(VENV, "bin", "jupyter-mcp-server"), "start", "--transport", "stdio"]
    penv = {"JUPYTER_URL": jp.url, "JUPYTER_TOKEN": TOKEN, "MCPC_TOOL": "execute_code", "MCPC_WAIT": "timeout"}
    renv = {}
    rows = []

    def add(what, r, p, ratio, note=""):
        rows.append((what, r, p, ratio, note))

    try:
        # Warm both once (rat-py's interpreter probe is cached after its first
        # ask; the peer's imports are in the page cache after its first start).
        _mcpc(mcpc, "first", [], rat, renv)
        _mcpc(mcpc, "first", [], peer, penv)
        jp.clear_kernels()

        # spawn -> first result, cold (a new kernel each time), alternating.
        n = 2 if quick else 3
        rf, pf, ri, pi = [], [], [], []
        for k in range(n):
            for who in (("r", "p") if k % 2 == 0 else ("p", "r")):
                if who == "r":
                    x = _kv(_mcpc(mcpc, "first", [], rat, renv))
                    rf.append(x["first_result_ms"][0])
                    ri.append(x["init_ms"][0])
                else:
                    x = _kv(_mcpc(mcpc, "first", [], peer, penv))
                    pf.append(x["first_result_ms"][0])
                    pi.append(x["init_ms"][0])
                    jp.clear_kernels()
        r, p = statistics.median(ri), statistics.median(pi)
        add("spawn → `initialize` answered (median of %d)" % n, "%.1f ms" % r, "%.0f ms" % p, "%.0f×" % (p / r))
        r, p = statistics.median(rf), statistics.median(pf)
        add("spawn → first result, cold (`x = 42`; median of %d)" % n, "%.0f ms" % r, "%.0f ms" % p, "%.1f×" % (p / r),
            "the peer's Jupyter Server already running (its own start: %.1f s)" % jp.start_s)

        # x = 42 round trip, warm.
        nr, npr = (100, 10) if quick else (300, 30)
        r = statistics.median(_rt(_mcpc(mcpc, "rt", [str(nr)], rat, renv)))
        p = statistics.median(_rt(_mcpc(mcpc, "rt", [str(npr)], peer, penv)))
        jp.clear_kernels()
        p1 = statistics.median(_rt(_mcpc(mcpc, "rt", [str(max(5, npr // 3))], peer,
                                         dict(penv, MCPC_EXTRA='"progress_interval":1'))))
        jp.clear_kernels()
        add("`x = 42` round trip (median; rat-py %d, peer %d runs)" % (nr, npr), "%.2f ms" % (r / 1000),
            "%.0f ms" % (p / 1000), "%.0f×" % (p / r),
            "execute_code sleeps min(1 s, progress_interval/5) between looks at its execution (progress_interval: "
            "an integer, default 5)")
        add("↳ the peer asked with progress_interval=1 (its fastest poll, 0.2 s)", "", "%.0f ms" % (p1 / 1000),
            "%.0f×" % (p1 / r))

        # A 1,000,000-line print flood: wall time, peak RSS of the server side.
        lines = 200_000 if quick else 1_000_000
        fr = _kv(_mcpc(mcpc, "flood", [str(lines)], rat, renv))
        try:
            with open("/proc/%d/clear_refs" % jp.proc.pid, "w") as f:
                f.write("5")  # resets the Jupyter Server's VmHWM: its peak from here on
        except OSError:
            pass
        try:
            fp = _kv(_mcpc(mcpc, "flood", [str(lines)], peer, penv, timeout=1200))
            jhwm = _status_kb(jp.proc.pid, "VmHWM")
            add("`print` ×%s: wall time" % "{:,}".format(lines), "%.1f s" % (fr["flood_ms"][0] / 1000),
                "%.1f s" % (fp["flood_ms"][0] / 1000), "%.1f×" % (fp["flood_ms"][0] / fr["flood_ms"][0]),
                "rat-py streams the lines as notifications and returns a bounded result; the peer returns all "
                "outputs in one result")
            add("↳ peak RSS of the server side", "%.1f MB" % (fr["hwm_kb"][0] / 1024),
                "%.1f MB (MCP server) + %.1f MB (Jupyter Server)" % (fp["hwm_kb"][0] / 1024, jhwm / 1024),
                "%.1f×" % ((fp["hwm_kb"][0] + jhwm) / fr["hwm_kb"][0]))
        except subprocess.TimeoutExpired:
            add("`print` ×%s: wall time" % "{:,}".format(lines), "%.1f s" % (fr["flood_ms"][0] / 1000),
                "did not finish in 1200 s", "", "")
        jp.clear_kernels()

        # Idle RSS of everything each needs running, after one run.
        def idle(cmd, env, extra_pids):
            p = subprocess.Popen([mcpc, "rss", "1", "--"] + cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, env=dict(os.environ, MCPC_HOLD="1", **env))
            got = {}
            for line in p.stdout:
                k, v = line.split()
                got[k] = int(v)
                if k == "pid":
                    break
            total = _tree_rss_kb([got["pid"]] + extra_pids)
            server = _tree_rss_kb(extra_pids) if extra_pids else 0
            p.stdin.write("\n")
            p.stdin.close()
            p.wait(30)
            return got["rss_idle_kb"], total, server
        jp.clear_kernels()
        r_self, r_all, _ = idle(rat, renv, [])
        jp.clear_kernels()
        jbase = _tree_rss_kb([jp.proc.pid])
        p_self, p_all, p_jup = idle(peer, penv, [jp.proc.pid])
        jp.clear_kernels()
        add("idle RSS of everything running, after one run", "%.1f MB (rat-py %.1f + kernel)" % (r_all / 1024, r_self / 1024),
            "%.1f MB (MCP server %.1f, Jupyter Server + kernel %.1f; the server alone %.1f)" % (
                p_all / 1024, p_self / 1024, p_jup / 1024, jbase / 1024),
            "%.1f×" % (p_all / r_all), "RSS summed over the processes (shared pages counted in each)")

        # Runs in a row: growth.
        nr = 2000 if quick else 10000
        npr = 30 if quick else 100

        def growth(cmd, env, n):
            out = _mcpc(mcpc, "rt", [str(n)], cmd, dict(env, MCPC_RSS="1"), timeout=7200)
            xs = _rt(out)
            rss = _kv(out)["rss_kb"]
            tenth = max(1, len(xs) // 10)
            return statistics.median(xs[:tenth]), statistics.median(xs[-tenth:]), rss[0], rss[1]
        a, b, m0, m1 = growth(rat, renv, nr)
        # The Jupyter Server's own process (its kernels are the same
        # ipykernel as rat-py's and are left out): before the peer's start
        # and after its runs.
        j0 = _status_kb(jp.proc.pid, "VmRSS")
        pa, pb, pm0, pm1 = growth(peer, penv, npr)
        j1 = _status_kb(jp.proc.pid, "VmRSS")
        jp.clear_kernels()
        add("runs in a row (rat-py {:,}, the peer {:,}: about 1 s each): round trip, first tenth → last tenth".format(nr, npr),
            "%.2f → %.2f ms" % (a / 1000, b / 1000), "%.0f → %.0f ms" % (pa / 1000, pb / 1000),
            "%.0f× at the end" % (pb / b), "the peer's row scaled down: {:,} runs would take about 3 hours".format(nr))
        add("↳ server RSS growth over those runs, per 1,000 runs", "%+.2f MB (%.1f → %.1f)" % (
            (m1 - m0) / 1024 * 1000 / nr, m0 / 1024, m1 / 1024),
            "%+.1f MB MCP server (%.1f → %.1f); the Jupyter Server %.1f → %.1f MB over the peer's start and runs" % (
                (pm1 - pm0) / 1024 * 1000 / npr, pm0 / 1024, pm1 / 1024, j0 / 1024, j1 / 1024), "", "")
    finally:
        jp.stop()

    ver = subprocess.run([VPY, "-c", "from importlib.metadata import version as v; print(v('jupyter-mcp-server'), "
                          "v('jupyter_server'), v('ipykernel'))"], capture_output=True, text=True).stdout.split()
    print("#### rat-py beside jupyter-mcp-server %s (Jupyter Server %s, ipykernel %s for both)\n" % tuple(ver[:3]))
    print("| measurement | rat-py | jupyter-mcp-server | peer / rat-py | note |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| %s |" % " | ".join(r))
    print()
    sys.stdout.flush()
