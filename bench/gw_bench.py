"""The gateway row's Python contender: a WebSocket client of a Jupyter
Server's kernel channels (tornado's, the library Jupyter Server and its own
gateway client are built on), speaking the same JSON form as rat-py.

    gw_bench.py rt N URL TOKEN
Starts a kernel there (POST /api/kernels), runs 50 warm-up executions, then
prints N round trips of `x = 42` (execute_request -> execute_reply and the
idle status), in µs, one per line, and deletes the kernel."""
import asyncio
import json
import sys
import time
import urllib.request
import uuid

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect


def rest(url, token, method, path, body=None):
    req = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": "token " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        t = r.read()
        return json.loads(t) if t else None


async def main(n, url, token):
    kid = rest(url, token, "POST", "/api/kernels", {"name": "python3"})["id"]
    session = uuid.uuid4().hex
    try:
        ws = await websocket_connect(HTTPRequest(
            url.replace("http", "ws", 1) + "/api/kernels/%s/channels?session_id=%s" % (kid, session),
            headers={"Authorization": "token " + token}))

        async def execute(code):
            mid = uuid.uuid4().hex
            await ws.write_message(json.dumps({
                "header": {"msg_id": mid, "session": session, "username": "bench", "msg_type": "execute_request",
                           "version": "5.3", "date": ""},
                "parent_header": {}, "metadata": {}, "buffers": [], "channel": "shell",
                "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                            "allow_stdin": False}}))
            reply = idle = False
            while not (reply and idle):
                m = json.loads(await ws.read_message())
                if m["parent_header"].get("msg_id") != mid:
                    continue
                reply = reply or m["msg_type"] == "execute_reply"
                idle = idle or (m["msg_type"] == "status" and m["content"]["execution_state"] == "idle")

        for _ in range(50):
            await execute("x = 42")
        for _ in range(n):
            t = time.perf_counter()
            await execute("x = 42")
            print("%.1f" % ((time.perf_counter() - t) * 1e6), flush=True)
        ws.close()
    finally:
        rest(url, token, "DELETE", "/api/kernels/" + kid)


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "rt":
        raise SystemExit("usage: gw_bench.py rt N URL TOKEN")
    asyncio.run(main(int(sys.argv[2]), sys.argv[3], sys.argv[4]))
