"""A room full of watchers (issue 34): rat-py --http with N sessions each
subscribed to rat://events with its GET /mcp stream open, reading it or not
(4 KiB receive buffers, never read), while one more session runs
`for i in range(LINES): print('line', i, 'x' * 60)`.

Prints (key value lines): rat-py's CPU seconds from the run's start until
every reading watcher has its last byte (cpu_s; cpu_user_s and cpu_sys_s its parts), its RSS before the run
(base_kb, after a warm-up run and a quiet spell), its peak during the run
(peak_kb: VmHWM, reset at the start through /proc/PID/clear_refs), its RSS
2 s after the run (after_kb), with stalled watchers also 2 s after they
hung up (closed_kb), how long the run took (run_ms), what the watchers
received (watch_bytes), the rat/event notifications sent to each (events_sent,
from rat://events' seq) and how many the watchers got together (events_got).
Usage: python3 watchers.py RAT_PY N reading|stalled [LINES]"""
import http.client
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

rat, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000_000
work = tempfile.mkdtemp(prefix="rat-watch-")
proc = subprocess.Popen([rat, "--cwd", work, "--http", "--port", "0"], stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
port = None
for line in proc.stderr:
    if "serving MCP at http://" in line:
        port = int(line.split("serving MCP at http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        break
if port is None:
    raise SystemExit("watchers: rat-py did not start")
threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # keep stderr drained

HDRS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
next_id = [1]


def post(sid, method, params=None, notify=False):
    body = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    if not notify:
        body["id"] = next_id[0]
        next_id[0] += 1
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    h = dict(HDRS)
    if sid:
        h["Mcp-Session-Id"] = sid
        h["MCP-Protocol-Version"] = "2025-11-25"
    c.request("POST", "/mcp", json.dumps(body), h)
    r = c.getresponse()
    text = r.read().decode()
    sid = r.getheader("Mcp-Session-Id") or sid
    c.close()
    if notify:
        return sid, None
    last = [ln for ln in text.splitlines() if ln.startswith("data: ") or ln.startswith("{")][-1]
    msg = json.loads(last[6:] if last.startswith("data: ") else last)
    if "error" in msg or msg.get("result", {}).get("isError"):
        raise SystemExit("watchers: %s failed: %s" % (method, text[-500:]))
    return sid, msg


def session(name):
    sid, _ = post(None, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": name, "version": "1"}})
    post(sid, "notifications/initialized", notify=True)
    return sid


def watcher(stalled):
    sid = session("watcher")
    post(sid, "resources/subscribe", {"uri": "rat://events"})
    s = socket.socket()
    if stalled:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n"
               "MCP-Protocol-Version: 2025-11-25\r\n\r\n" % (port, sid)).encode())
    return s


def status():
    return {ln.split(":")[0]: int(ln.split()[1]) for ln in open("/proc/%d/status" % proc.pid) if ln.startswith("Vm")}


def cpu_s():
    """rat-py's (user, system) CPU seconds so far."""
    f = open("/proc/%d/stat" % proc.pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) / os.sysconf("SC_CLK_TCK"), int(f[12]) / os.sysconf("SC_CLK_TCK")


runner = session("runner")
post(runner, "tools/call", {"name": "run", "arguments": {"code": "pass"}})  # the kernel is up
socks = [watcher(mode == "stalled") for _ in range(n)]
got = [0]
events = [0]
last_rx = [time.monotonic()]
stop = threading.Event()


def reader():
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    while not stop.is_set():
        for key, _ in sel.select(0.1):
            try:
                b = key.fileobj.recv(1 << 16)
            except BlockingIOError:
                continue
            if b:
                got[0] += len(b)
                events[0] += b.count(b'"seq":')  # one per rat/event (a count split across reads is rare)
                last_rx[0] = time.monotonic()
            else:
                sel.unregister(key.fileobj)


if mode == "reading" and socks:
    threading.Thread(target=reader, daemon=True).start()
time.sleep(2.5)  # the sessions' setup is over, and its heap trimmed
base = status()["VmRSS"]
try:
    with open("/proc/%d/clear_refs" % proc.pid, "w") as f:
        f.write("5")  # VmHWM := VmRSS
except OSError:
    pass
def seq():
    """rat://events' seq: how many events were sent so far."""
    _, msg = post(runner, "resources/read", {"uri": "rat://events"})
    return json.loads(msg["result"]["contents"][0]["text"])["seq"]


seq0 = seq()
c0, t0 = cpu_s(), time.monotonic()
post(runner, "tools/call", {"name": "run", "arguments": {
    "code": "for i in range(%d): print('line', i, 'x' * 60)" % lines, "wait": 3600}})
run_ms = (time.monotonic() - t0) * 1000
if mode == "reading" and socks:
    while time.monotonic() - last_rx[0] < 0.3:  # until every watcher has its last byte
        time.sleep(0.05)
c1, t1 = cpu_s(), time.monotonic()
peak = status()["VmHWM"]
sent = seq() - seq0
time.sleep(max(0.0, 2.0 - (time.monotonic() - t1)))
after = status()["VmRSS"]
closed = after
if mode == "stalled":
    for s in socks:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
        s.close()
    time.sleep(2.0)
    closed = status()["VmRSS"]
stop.set()
print("cpu_s %.3f" % (c1[0] + c1[1] - c0[0] - c0[1]))
print("cpu_user_s %.3f" % (c1[0] - c0[0]))
print("cpu_sys_s %.3f" % (c1[1] - c0[1]))
print("base_kb %d" % base)
print("peak_kb %d" % peak)
print("after_kb %d" % after)
print("closed_kb %d" % closed)
print("run_ms %.0f" % run_ms)
print("watch_bytes %d" % got[0])
print("events_sent %d" % sent)  # to each watcher
print("events_got %d" % events[0])  # by all the watchers together
proc.terminate()
proc.wait(timeout=30)
shutil.rmtree(work, ignore_errors=True)
