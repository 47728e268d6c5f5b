"""What Python bridges pay: jupyter_client's BlockingKernelClient (Debian
python3-jupyter-client) against the same kernelspec.

Usage: jc_bench.py rt N [CONNECTION_FILE] | flood N [CONNECTION_FILE] | rss
(with a connection file, it attaches to that kernel instead of starting one)
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
