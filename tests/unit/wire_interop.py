"""Wire interop test: jupyter_client's Session (Debian python3-jupyter-client)
makes signed messages that the C decoder must accept byte for byte, and
verifies the messages the C encoder signs.

Usage: wire_interop.py [WRAPPER...] PATH/TO/test_wire   (e.g. valgrind ... test_wire)
"""
import base64
import json
import os
import secrets
import subprocess
import sys
import tempfile

from jupyter_client.session import Session


def b64(frames):
    return [base64.b64encode(f).decode() for f in frames]


def vectors(key):
    s = Session(key=key.encode(), signature_scheme="hmac-sha256", username="t")
    out = []
    parent = s.msg("execute_request", {"code": "x"})
    cases = [
        ("execute_request", {"code": "print('hi')", "silent": False}, None, [], None),
        ("stream", {"name": "stdout", "text": "héllo → wörld ✓\n"}, parent, [b"stream.stdout"], None),
        ("status", {"execution_state": "idle"}, parent, [b"kernel.1234.status"], None),
        ("iopub_welcome", {"subscription": ""}, None, [], None),  # no topic frame at all
        ("execute_reply", {"status": "ok", "execution_count": 3}, parent, [b"id1", b"id2"], None),
        ("display_data", {"data": {"text/plain": "x"}, "metadata": {}}, parent, [], [b"\x00\x01binary"]),
        ("stream", {"name": "stdout", "text": "x" * 200000}, parent, [], None),
    ]
    for msg_type, content, par, idents, buffers in cases:
        m = s.msg(msg_type, content, parent=par)
        if buffers:
            m["buffers"] = buffers
        frames = s.serialize(m, ident=idents)
        v = {
            "frames": b64(frames),
            "msg_type": msg_type,
            "msg_id": m["header"]["msg_id"],
            "parent_id": par["header"]["msg_id"] if par else None,
        }
        if msg_type == "stream":
            v["text"] = content["text"]
        out.append(v)
    return {"key": key, "messages": out}


def main():
    command = sys.argv[1:]
    with tempfile.TemporaryDirectory() as d:
        vec_path = os.path.join(d, "vectors.json")
        out_path = os.path.join(d, "ours.json")
        our_key = secrets.token_hex(32)
        doc = {
            "sets": [vectors(secrets.token_hex(32)), vectors("short"), vectors("ünïcode-kéy"), vectors("")],
            "our_key": our_key,
        }
        with open(vec_path, "w") as f:
            json.dump(doc, f)
        rc = subprocess.call(command + [vec_path, out_path])
        if rc != 0:
            print("test_wire failed", file=sys.stderr)
            return rc
        with open(out_path) as f:
            ours = json.load(f)
        s = Session(key=our_key.encode(), signature_scheme="hmac-sha256")
        bad = Session(key=b"wrong", signature_scheme="hmac-sha256")
        failures = 0
        for e in ours:
            frames = [base64.b64decode(x) for x in e["frames"]]
            idents, msg_list = s.feed_identities(frames, copy=True)
            msg = s.deserialize(msg_list, content=True)  # raises on a bad signature
            if msg["header"]["msg_type"] != e["msg_type"] or msg["header"]["msg_id"] != e["msg_id"]:
                print("mismatch:", msg["header"], e, file=sys.stderr)
                failures += 1
            if msg["header"]["version"] != "5.3" or not msg["header"]["date"]:
                print("header fields:", msg["header"], file=sys.stderr)
                failures += 1
            try:
                bad.deserialize(msg_list, content=True)
                print("a wrong key verified our message", file=sys.stderr)
                failures += 1
            except ValueError:
                pass
        print(f"wire_interop: {len(ours)} messages signed by rat-py verified by jupyter_client, {failures} failures")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
