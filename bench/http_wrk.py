"""HTTP floors for scripts/bench (issue 14 item 5): wrk, a C load generator,
against rat-py --http with 100 MCP sessions issuing ctl status / look (no
kernel round trip) while one run streams output, against rat-py's GET
/health, and against a trivial libmicrohttpd responder (bench/mhd_floor.c) in
rat-py's threading mode. Prints "key value" lines: p50/p99 in ms, req/s.

Usage: python3 http_wrk.py RAT_PY MHD_FLOOR [SESSIONS] [SECONDS]"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import urllib.request

rat, floor = sys.argv[1], sys.argv[2]
SESSIONS = int(sys.argv[3]) if len(sys.argv) > 3 else 100
SECS = int(sys.argv[4]) if len(sys.argv) > 4 else 5
work = tempfile.mkdtemp(prefix="rat-wrk-")
HDRS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def post(url, body, sid=None, timeout=30):
    h = dict(HDRS)
    if sid:
        h["mcp-session-id"] = sid
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=h, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.headers.get("mcp-session-id"), r.read()


def session(url):
    sid, _ = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "wrk", "version": "1"}}})
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return sid


def wrk(url, script=None):
    cmd = ["wrk", "-t2", "-c%d" % SESSIONS, "-d%ds" % SECS, "--latency"] + (["-s", script] if script else []) + [url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=SECS + 60).stdout
    unit = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    lat = {p: float(v) * unit[u] for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)}
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errs = re.search(r"Socket errors: (.*)", out)
    return lat.get("50", float("nan")), lat.get("99", float("nan")), rps, int(bad.group(1)) if bad else 0, errs


def cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


p = subprocess.Popen([rat, "--http", "--port", "0", "--cwd", work], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                     text=True)
url = None
for line in p.stderr:
    m = re.search(r"serving MCP at (http://\S+/mcp)", line)
    if m:
        url = m.group(1)
        break
threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
streamer = session(url)
post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run", "arguments": {"code": "x = 1"}}},
     streamer)
code = "import time\nfor i in range(10**7):\n    print('line', i)\n    if i % 1000 == 0: time.sleep(0.01)"
threading.Thread(target=lambda: post(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
    "name": "run", "arguments": {"code": code, "wait": SECS * 3 + 30}}}, streamer, timeout=SECS * 3 + 60),
    daemon=True).start()
sids = [session(url) for _ in range(SESSIONS)]
with open(os.path.join(work, "sids"), "w") as f:
    f.write("\n".join(sids) + "\n")
lua = os.path.join(work, "mcp.lua")
with open(lua, "w") as f:
    f.write("""
local sids = {}
for l in io.lines("%s") do sids[#sids + 1] = l end
local bodies = {
  '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ctl","arguments":{"op":"status"}}}',
  '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"look","arguments":{}}}' }
local n = 0
request = function()
  n = n + 1
  local h = { ["content-type"] = "application/json", ["accept"] = "application/json, text/event-stream",
              ["mcp-session-id"] = sids[(n %% #sids) + 1] }
  return wrk.format("POST", nil, h, bodies[(n %% 2) + 1])
end
""" % os.path.join(work, "sids"))
c0 = cpu(p.pid)
p50, p99, rps, bad, errs = wrk(url, lua)
c1 = cpu(p.pid)
print("mcp_p50_ms %.2f\nmcp_p99_ms %.2f\nmcp_rps %.0f\nmcp_bad %d" % (p50, p99, rps, bad))
print("mcp_us_per_req %.1f" % ((c1 - c0) * 1e6 / max(1, rps * SECS)))
h50, h99, hrps, hbad, _ = wrk(url.rsplit("/", 1)[0] + "/health")
print("health_p50_ms %.2f\nhealth_p99_ms %.2f\nhealth_rps %.0f\nhealth_bad %d" % (h50, h99, hrps, hbad))
p.terminate()
p.wait()
fp = subprocess.Popen([floor, "0"], stdout=subprocess.PIPE, text=True)
port = int(fp.stdout.readline().split()[1])
f50, f99, frps, fbad, _ = wrk("http://127.0.0.1:%d/health" % port)
print("mhd_p50_ms %.2f\nmhd_p99_ms %.2f\nmhd_rps %.0f" % (f50, f99, frps))
fp.terminate()
fp.wait()
subprocess.run(["rm", "-rf", work])
