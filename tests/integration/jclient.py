#!/usr/bin/python3
"""A jupyter_client frontend for the attach tests: runs code on the kernel
of a connection file and prints what it printed (stdout only).

    jclient.py CONNECTION_FILE CODE [--payload]
With --payload, a last line "PAYLOAD <json>" gives the execute_reply's
payload list (what a kernel hook may have added to the reply).
Exit status 1 when the code raised (the error goes to stderr)."""
import json
import sys

from jupyter_client import BlockingKernelClient

def main():
    path, code = sys.argv[1], sys.argv[2]
    show_payload = "--payload" in sys.argv[3:]
    kc = BlockingKernelClient(connection_file=path)
    kc.load_connection_file()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=30)
        out = []
        err = []

        def hook(msg):
            t = msg["header"]["msg_type"]
            if t == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])
            elif t == "error":
                err.append("%s: %s" % (msg["content"]["ename"], msg["content"]["evalue"]))

        reply = kc.execute_interactive(code, timeout=30, output_hook=hook)
        sys.stdout.write("".join(out))
        if show_payload:
            sys.stdout.write("PAYLOAD %s\n" % json.dumps(reply["content"].get("payload", [])))
        if reply["content"]["status"] != "ok":
            sys.stderr.write("\n".join(err) + "\n")
            return 1
        return 0
    finally:
        kc.stop_channels()

sys.exit(main())
