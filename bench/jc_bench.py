"""What Python bridges pay: jupyter_client's BlockingKernelClient (Debian
python3-jupyter-client) against the same kernelspec.

Usage: jc_bench.py rt N [CONNECTION_FILE] | flood N [CONNECTION_FILE] | rss
       jc_bench.py unhook 0 CONNECTION_FILE | vars N CONNECTION_FILE
       jc_bench.py serve 0 CONNECTION_FILE
(with a connection file, it attaches to that kernel instead of starting one)
unhook removes what rat-py leaves in a kernel it attached to (its helper's
post_run_cell hook, the `_rat` module and its shorter stdout/stderr
flush_interval), so whoever follows does not pay
the snapshot; vars makes N user variables (v0 .. vN-1) and imports json and
os in one silent run;
serve runs blocks on demand for the interleaved bench: each stdin line
"N PREP" runs the Python line PREP (if not "-") and 2 warm-ups untimed,
then prints "go", N round trips (us each) and "end".
"""
import statistics
import sys
import time

from jupyter_client.manager import start_new_kernel


def execute(kc, code, count_stream=False):
    msg_id = kc.execute(code, store_history=True, allow_stdin=False, stop_on_error=False)
    got_reply = got_idle = False
    nbytes = 0
    while not (got_reply and got_idle):
        if not got_idle:
            m = kc.get_iopub_msg(timeout=60)
            if m["parent_header"].get("msg_id") == msg_id:
                if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    got_idle = True
                elif count_stream and m["msg_type"] == "stream":
                    nbytes += len(m["content"]["text"])
        else:
            r = kc.get_shell_msg(timeout=60)
            got_reply = r["parent_header"].get("msg_id") == msg_id
        if got_idle and not got_reply:
            r = kc.get_shell_msg(timeout=60)
            got_reply = r["parent_header"].get("msg_id") == msg_id
    return nbytes


UNHOOK = ("(lambda ip, s: (ip.events.callbacks['post_run_cell'].__setitem__(slice(None), "
          "[cb for cb in ip.events.callbacks['post_run_cell'] if not getattr(cb, '_rat_hook', False)]), "
          "s.modules.pop('_rat', None), "
          "[vars(o).pop('flush_interval', None) for o in (s.stdout, s.stderr) if hasattr(o, '__dict__')]))"
          "(get_ipython(), __import__('sys'))")


def silent(kc, code):
    msg_id = kc.execute(code, silent=True, store_history=False, allow_stdin=False)
    while True:
        r = kc.get_shell_msg(timeout=60)
        if r["parent_header"].get("msg_id") == msg_id:
            if r["content"]["status"] != "ok":
                raise SystemExit("jc_bench: %s failed: %s" % (code[:60], r["content"].get("evalue")))
            return


def main():
    mode = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    if mode == "rss":
        for line in open("/proc/self/status"):
            if line.startswith(("VmRSS:", "VmHWM:")):
                print(line.split()[0].rstrip(":").lower(), line.split()[1])
        return
    if len(sys.argv) > 3:
        from jupyter_client.blocking import BlockingKernelClient
        km, kc = None, BlockingKernelClient(connection_file=sys.argv[3])
        kc.load_connection_file()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
    else:
        km, kc = start_new_kernel(kernel_name="python3")
    try:
        if mode == "rt":
            for _ in range(50):
                execute(kc, "x = 42")
            for _ in range(n):
                t = time.perf_counter()
                execute(kc, "x = 42")
                print(int((time.perf_counter() - t) * 1e6))
        elif mode == "serve":
            for line in sys.stdin:
                blk, _, prep = line.strip().partition(" ")
                if prep and prep != "-":
                    execute(kc, prep)
                for _ in range(2):  # also drains other clients' iopub traffic
                    execute(kc, "x = 42")
                print("go", flush=True)
                out = []
                for _ in range(int(blk)):
                    t = time.perf_counter()
                    execute(kc, "x = 42")
                    out.append(str(int((time.perf_counter() - t) * 1e6)))
                print("\n".join(out + ["end"]), flush=True)
        elif mode == "unhook":
            silent(kc, UNHOOK)
        elif mode == "vars":
            silent(kc, "import json, os\nfor _k in range(%d): globals()['v%%d' %% _k] = _k\ndel _k" % n)
        elif mode == "flood":
            execute(kc, "x = 42")
            t = time.perf_counter()
            nbytes = execute(kc, "for i in range(%d): print(i)" % n, count_stream=True)
            print("flood_ms %.1f" % ((time.perf_counter() - t) * 1000))
            print("stream_bytes %d" % nbytes)
    finally:
        kc.stop_channels()
        if km:
            km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
