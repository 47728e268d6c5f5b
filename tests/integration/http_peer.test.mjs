// Who may connect to a server without a token (issue 41, item 2;
// doc/security.md "Who may connect"): on a loopback address only processes
// of the user who started rat-py. Another local user — here a real one: a
// child that drops from root to nobody before it opens a socket — gets 403
// with a reason on /mcp (initialize, and a session-less 2026-07-28 run),
// the page, /api/contents, /assets and /health, and nothing it asked is done;
// the server's own user is served as before. With a token the token decides,
// whoever the user. CI runs as root; without root there is no second user
// to be, and the tests say so and skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { startHttp, connectHttp, call, until, ms } from './lib.mjs';

const PY = '/usr/bin/python3';
const NOT_ROOT = process.getuid() !== 0 ? 'not root: these tests need a second local user (a child dropped to nobody)' : false;
const SKIP = NOT_ROOT || (!existsSync(PY) && `no ${PY}`);
// ::1 where the loopback interface has it.
const HAS_V6 = Object.values(networkInterfaces()).flat().some((a) => a && a.internal && a.family === 'IPv6' && a.address === '::1');

// Runs as nobody (setgroups, setgid, setuid before any socket exists), asks
// each of the requests and prints [{what, status, body}] as JSON. A refused
// connection is a status 0 with the error.
const AS_NOBODY = `
import json, os, pwd, sys, urllib.request, urllib.error
pw = pwd.getpwnam('nobody')
os.setgroups([]); os.setgid(pw.pw_gid); os.setuid(pw.pw_uid)
assert os.getuid() == pw.pw_uid and os.geteuid() == pw.pw_uid
base, token, marker = sys.argv[1], sys.argv[2], sys.argv[3]
MODERN = '2026-07-28'
init = {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {'protocolVersion': '2025-11-25', 'capabilities': {}, 'clientInfo': {'name': 'nobody', 'version': '1'}}}
run = {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call', 'params': {'name': 'run', 'arguments': {'code': 'import os\\nopen(%r, "w").write(str(os.getuid()))' % marker},
       '_meta': {'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}}}}
J = {'content-type': 'application/json', 'accept': 'application/json, text/event-stream'}
if token: J['authorization'] = 'Bearer ' + token
asks = [
  ('initialize', 'POST', '/mcp', init, J),
  ('run (2026-07-28, no session)', 'POST', '/mcp', run, {**J, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'run'}),
  ('page', 'GET', '/', None, {}),
  ('static', 'GET', '/static/app.css', None, {}),
  ('contents', 'GET', '/api/contents/', None, {}),
  ('contents PUT', 'PUT', '/api/contents/from-nobody.txt', {'type': 'file', 'format': 'text', 'content': 'x'}, {'content-type': 'application/json'}),
  ('asset', 'GET', '/assets/0123456789abcdef0123456789abcdef.png', None, {}),
  ('health', 'GET', '/health', None, {}),
  ('preflight', 'OPTIONS', '/mcp', None, {'origin': 'http://localhost:1', 'access-control-request-method': 'POST'}),
]
out = []
for what, method, p, body, headers in asks:
    data = json.dumps(body).encode() if body is not None else None
    rq = urllib.request.Request(base + p, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(rq, timeout=60) as r:
            out.append({'what': what, 'status': r.status, 'body': r.read().decode('utf-8', 'replace')})
    except urllib.error.HTTPError as e:
        out.append({'what': what, 'status': e.code, 'body': e.read().decode('utf-8', 'replace')})
    except Exception as e:
        out.append({'what': what, 'status': 0, 'body': repr(e)})
print(json.dumps(out))
`;

function asNobody(base, token = '', marker = '/nonexistent/marker') {
  const r = spawnSync(PY, ['-c', AS_NOBODY, base, token, marker], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, `the nobody child failed: ${r.stderr}`);
  return Object.fromEntries(JSON.parse(r.stdout).map((x) => [x.what, x]));
}

const OTHER_USER = /Forbidden: this rat-py serves only the user who started it \(uid 0\), and this connection comes from another user's process \(uid 65534\)\. A server that other users may reach needs a token \(--token-file FILE\)/;

async function refusesNobody(host) {
  const s = await startHttp(host ? ['--host', host] : []);
  try {
    const marker = path.join(s.dir, 'ran-as');
    const r = asNobody(s.base, '', marker);
    for (const what of ['initialize', 'run (2026-07-28, no session)', 'page', 'static', 'contents', 'contents PUT', 'asset', 'health', 'preflight']) {
      assert.equal(r[what].status, 403, `${what}: ${JSON.stringify(r[what])}`);
      assert.match(r[what].body, OTHER_USER, what);
    }
    // /mcp answers in JSON-RPC, the rest in a line of text; /health tells
    // nothing of the kernel.
    assert.equal(JSON.parse(r.initialize.body).error.code, -32000);
    assert.match(r.page.body, /^403 Forbidden: /);
    assert.doesNotMatch(r.health.body, /kernel|exec_count|sessions/);
    // Nothing was done: no run, no file.
    assert.ok(!existsSync(marker), 'the run of the other user did not execute');
    assert.ok(!existsSync(path.join(s.dir, 'from-nobody.txt')), 'nor did its PUT write');
    // Logged once, as a warning.
    await until(() => /refused a connection from another user's process/.test(s.stderr()), ms(5000), 'the warning');
    assert.equal(s.stderr().match(/refused a connection/g).length, 1, s.stderr());
    // The server's own user: served as before, on a new connection and after.
    const c = await connectHttp(s.url);
    try {
      const { text, isError } = await call(c, 'run', { code: 'import os\nprint(os.getuid())' });
      assert.equal(isError, false, text);
      assert.match(text, /^0\n/);
    } finally {
      await c.close();
    }
    const h = await fetch(`${s.base}/health`);
    assert.equal(h.status, 200);
    assert.match(await h.text(), /"kernel":/);
  } finally {
    await s.stop();
  }
}

test('no token, 127.0.0.1: another local user (nobody) gets 403 everywhere and runs nothing; the own user is served', { skip: SKIP }, async () => {
  await refusesNobody();
});

test('no token, ::1: the same', { skip: SKIP || (!HAS_V6 && 'no ::1 on this machine') }, async () => {
  await refusesNobody('::1');
});

test('with a token the token decides: another user with it is served, without it 401', { skip: SKIP }, async () => {
  const token = 'peer-test-token-0123456789';
  const s = await startHttp([], { RAT_PY_TOKEN: token });
  try {
    const without = asNobody(s.base);
    assert.equal(without.initialize.status, 401);
    assert.equal(without.page.status, 401);
    const marker = path.join(s.dir, 'ran-as');
    const withIt = asNobody(s.base, token, marker);
    assert.equal(withIt.initialize.status, 200, JSON.stringify(withIt.initialize));
    assert.equal(withIt['run (2026-07-28, no session)'].status, 200);
    assert.doesNotMatch(s.stderr(), /refused a connection/);
  } finally {
    await s.stop();
  }
});
