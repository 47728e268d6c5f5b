"""A fake Jupyter kernel that also plays a rogue peer, for rogue_kernel.test.mjs.

A real kernel cannot be made to send badly signed or replayed messages, so
this one, built on Debian's pyzmq and jupyter_client's Session (the reference
signing code), binds the five ports of a connection file it writes (0600,
random key, 127.0.0.1), answers the readiness handshake the way ipykernel
does (kernel_info_reply on shell, busy/idle status on iopub, heartbeat echo),
and answers each execute_request properly, but first sends, for that very
request, messages that would change its outcome if they were acted on:

  iopub  stream "FORGED-BADSIG"      signature of the right length, wrong
  shell  execute_reply status=error  empty signature
  stdin  input_request               empty signature
  iopub  stream "FORGED-SHORTSIG"    signature of the wrong length
  iopub  no delimiter frame          malformed
  iopub  stream "real output"        valid, then the same frames again (replay)

Rejections to expect per request: 6 dropped, 4 for a bad or missing signature,
1 replayed. Usage: fake_kernel.py CONNECTION_FILE; prints "ready" when bound.

With --silent it is an honest kernel whose shell stalls, for watchdog.test.mjs
(a real kernel cannot be made to stall on cue): it answers its heartbeat
always and kernel_info_request until the first execute_request comes; from
then on every shell request is held, unanswered and unacknowledged (no busy
status), as a kernel stuck in its shell handler would leave them. SIGUSR1
ends the stall: the held requests are answered in the order they came, and
every later one at once. An execute_request is answered as ipykernel does:
busy, execute_input, a stream "ran: CODE", execute_reply ok, idle; the code
"sleep N" sleeps N seconds after its busy (a long computation, not silence).
"""
import json
import os
import secrets
import signal
import sys
import threading
import time

import zmq
from jupyter_client.session import Session


def signed_frames(session, msg_type, content, parent, ident=()):
    return session.serialize(session.msg(msg_type, content, parent=parent), ident=list(ident))


def with_signature(frames, sig):
    frames = list(frames)
    frames[frames.index(b"<IDS|MSG>") + 1] = sig
    return frames


def main():
    path = sys.argv[1]
    silent = "--silent" in sys.argv[2:]
    stalled = False  # --silent: shell requests are held (once: from the first execute_request to SIGUSR1)
    stall_over = False
    held = []
    resume = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: resume.set())
    key = secrets.token_hex(32)
    ctx = zmq.Context()
    socks = {
        "shell": ctx.socket(zmq.ROUTER),
        "control": ctx.socket(zmq.ROUTER),
        "stdin": ctx.socket(zmq.ROUTER),
        "iopub": ctx.socket(zmq.PUB),
        "hb": ctx.socket(zmq.REP),
    }
    info = {f"{name}_port": s.bind_to_random_port("tcp://127.0.0.1") for name, s in socks.items()}
    info.update(ip="127.0.0.1", key=key, transport="tcp", signature_scheme="hmac-sha256", kernel_name="fake")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(info, f)

    def heartbeat():
        hb = socks["hb"]
        while True:
            hb.send(hb.recv())

    threading.Thread(target=heartbeat, daemon=True).start()
    session = Session(key=key.encode(), signature_scheme="hmac-sha256", username="fake")
    shell, stdin, iopub = socks["shell"], socks["stdin"], socks["iopub"]
    count = 0

    def status(state, parent):
        iopub.send_multipart(signed_frames(session, "status", {"execution_state": state}, parent, [b"kernel.fake.status"]))

    poller = zmq.Poller()
    poller.register(shell, zmq.POLLIN)
    poller.register(socks["control"], zmq.POLLIN)

    def honest_execute(idents, header, code):
        nonlocal count
        count += 1
        status("busy", header)
        iopub.send_multipart(signed_frames(session, "execute_input", {"code": code, "execution_count": count},
                                           header, [b"kernel.fake.execute_input"]))
        if code.startswith("sleep "):
            time.sleep(float(code.split()[1]))
        iopub.send_multipart(signed_frames(session, "stream", {"name": "stdout", "text": f"ran: {code}\n"}, header,
                                           [b"stream.stdout"]))
        shell.send_multipart(idents + signed_frames(session, "execute_reply", {
            "status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}, header))
        status("idle", header)

    def handle(idents, msg):
        nonlocal count
        header, kind = msg["header"], msg["header"]["msg_type"]
        if kind == "kernel_info_request":
            status("busy", header)
            shell.send_multipart(idents + signed_frames(session, "kernel_info_reply", {
                "status": "ok", "protocol_version": "5.3", "implementation": "fake",
                "implementation_version": "1", "banner": "fake kernel",
                "language_info": {"name": "fake", "version": "1", "file_extension": ".fake"},
            }, header))
            status("idle", header)
        elif kind == "execute_request" and silent:
            honest_execute(idents, header, msg["content"].get("code", ""))
        elif kind == "execute_request":
            count += 1
            status("busy", header)
            stream = lambda text: signed_frames(session, "stream", {"name": "stdout", "text": text}, header,
                                                [b"stream.stdout"])
            iopub.send_multipart(with_signature(stream("FORGED-BADSIG\n"), b"0" * 64))
            shell.send_multipart(idents + with_signature(signed_frames(session, "execute_reply", {
                "status": "error", "ename": "Forged", "evalue": "FORGED-REPLY", "traceback": [],
                "execution_count": 99}, header), b""))
            stdin.send_multipart(idents + with_signature(signed_frames(
                session, "input_request", {"prompt": "FORGED-PROMPT", "password": False}, header), b""))
            iopub.send_multipart(with_signature(stream("FORGED-SHORTSIG\n"), b"abc"))
            iopub.send_multipart([b"stream.stdout", b"no delimiter", b"{}"])
            real = stream("real output\n")
            iopub.send_multipart(real)
            iopub.send_multipart(real)  # the replay
            status("idle", header)
            shell.send_multipart(idents + signed_frames(session, "execute_reply", {
                "status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}, header))

    print("ready", flush=True)
    while True:
        if resume.is_set():
            resume.clear()
            stalled, stall_over = False, True
            for idents, msg in held:
                handle(idents, msg)
            held.clear()
        # A bounded wait: the signal only sets a flag, seen here.
        for sock, _ in poller.poll(50):
            idents, rest = session.feed_identities(sock.recv_multipart())
            msg = session.deserialize(rest)  # verifies rat-py's signature
            if sock is not shell:
                continue
            if silent and not stall_over and msg["header"]["msg_type"] == "execute_request":
                stalled = True
            if stalled:
                held.append((idents, msg))
            else:
                handle(idents, msg)


if __name__ == "__main__":
    main()
