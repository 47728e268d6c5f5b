"""rat-py whose MCP client reads nothing from stdout while a 3,000,000-line flood runs, then
everything: prints rat-py's peak RSS and its idle RSS after (issue 14 item 4, "whatever the
client's reading speed"). Usage: python3 slow_reader.py RAT_PY p|w [SECONDS_NOT_READING]"""
import json, shutil, subprocess, sys, tempfile, time
rat, mode = sys.argv[1], sys.argv[2]
code = ("import sys\nw = sys.stdout.write\nfor i in range(3000000): w('%024d\\n' % i)" if mode == "w"
        else "for i in range(3000000): print(i)")
work = tempfile.mkdtemp(prefix="rat-slow-")
p = subprocess.Popen([rat, "--cwd", work], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def send(o): p.stdin.write((json.dumps(o) + "\n").encode()); p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
p.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run", "arguments": {"code": code, "wait": 3600}}})
time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 12)
def hwm():
    return {l.split(":")[0]: l.split()[1] for l in open("/proc/%d/status" % p.pid) if l.startswith("Vm")}
v = hwm(); print("hwm_kb", v["VmHWM"], "rss_kb", v["VmRSS"])
n = 0
for line in p.stdout:
    n += 1
    if b'"id":2' in line: break
time.sleep(1); v = hwm(); print("lines", n, "idle_rss_kb", v["VmRSS"])
p.stdin.close(); p.wait()
shutil.rmtree(work, ignore_errors=True)
