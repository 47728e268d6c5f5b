// Streamable HTTP: the SDK's HTTP client against `rat-py --http`, plus raw
// fetch() for the transport's rules (sessions, headers, security, limits).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawnSync } from 'node:child_process';
import { startHttp, connectHttp, call, ratCommand, ms, until } from './lib.mjs';

const JSON_HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const init = (id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

async function rawSession(base) {
  const r = await fetch(`${base}/mcp`, { method: 'POST', headers: JSON_HDRS, body: init() });
  assert.equal(r.status, 200);
  const sid = r.headers.get('mcp-session-id');
  assert.match(sid, /^[\x21-\x7e]{32,}$/, 'visible ASCII, unguessable length');
  await r.text();
  return sid;
}

let srv;
before(async () => { srv = await startHttp(); });
after(async () => { await srv.stop(); });

test('initialize, tools, run over the SDK HTTP client; the URL is printed on stderr', async () => {
  assert.match(srv.stderr(), /^rat-py: serving MCP at http:\/\/127\.0\.0\.1:\d+\/mcp\n/m);
  const h = await connectHttp(srv.url);
  try {
    assert.ok(h.transport.sessionId);
    const { tools } = await h.client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['ctl', 'look', 'run']);
    const r = await call(h, 'run', { code: 'x = 42; print(x)' });
    assert.match(r.text, /^42\n\n✓ \d+ms \| \d+ vars?$/);
  } finally {
    await h.close();
  }
});

test('logging notifications arrive during the call, before the result (SSE)', async () => {
  const h = await connectHttp(srv.url);
  try {
    const t0 = Date.now();
    const r = await call(h, 'run', { code: 'import time\nprint("first", flush=True)\ntime.sleep(0.8)\nprint("second")' });
    const done = Date.now();
    const first = h.logs.find((l) => l.data.includes('first'));
    assert.ok(first, 'notification received');
    assert.ok(done - first.at > 400, 'it came well before the result');
    assert.ok(first.at >= t0);
    assert.match(r.text, /^first\nsecond\n\n✓ /);
  } finally {
    await h.close();
  }
});

// transport_http_session.c gives the pages of a quiet stream's write buffer
// (lent by libmicrohttpd to the content reader) back with MADV_DONTNEED: they
// read as zeros afterwards. Safe only if libmicrohttpd keeps nothing there
// between reads: bursts that fill the buffer, each after a release, must
// arrive byte-exact (a zeroed byte breaks the chunk framing or the JSON).
test('an SSE stream stays byte-exact across the release of its idle write buffer', async () => {
  const s = await startHttp([], { RAT_LOG: 'debug' });
  const h = await connectHttp(s.url);
  try {
    const code = 'import time\nfor b in range(4):\n    for i in range(300): print(f"burst {b} line {i:04d} " + "x" * 80, flush=(i % 50 == 49))\n' +
      '    time.sleep(1.6)\n';
    const r = await call(h, 'run', { code, wait: 60 });
    const text = h.logs.map((l) => l.data).join('');
    for (let b = 0; b < 4; b++) {
      for (let i = 0; i < 300; i++) assert.ok(text.includes(`burst ${b} line ${String(i).padStart(4, '0')} ${'x'.repeat(80)}`), `burst ${b} line ${i}`);
    }
    assert.ok(!text.includes('\u0000'), 'no zero bytes');
    assert.match(r.text, /burst 3 line 0299/);
    const released = s.stderr().split('\n').filter((l) => /of its write buffer given back/.test(l)).length;
    assert.ok(released >= 2, `the write buffer was given back ${released} times (the path under test)`);
  } finally {
    await h.close();
    await s.stop();
  }
});

test('two sessions share one kernel; each caller gets its own output only', async () => {
  const a = await connectHttp(srv.url);
  const b = await connectHttp(srv.url);
  try {
    assert.notEqual(a.transport.sessionId, b.transport.sessionId);
    await call(a, 'run', { code: 'shared_value = "from A"' });
    const rb = await call(b, 'run', { code: 'print(shared_value)' });
    assert.match(rb.text, /^from A\n/);
    a.logs.length = 0;
    b.logs.length = 0;
    const [ra, rb2] = await Promise.all([
      call(a, 'run', { code: 'import time\nfor i in range(3): print("A", i, flush=True); time.sleep(0.1)' }),
      call(b, 'run', { code: 'import time\nfor i in range(3): print("B", i, flush=True); time.sleep(0.1)' }),
    ]);
    assert.match(ra.text, /^A 0\nA 1\nA 2\n/);
    assert.match(rb2.text, /^B 0\nB 1\nB 2\n/);
    assert.ok(a.logs.every((l) => !l.data.includes('B ')), 'A sees none of B\'s output');
    assert.ok(b.logs.every((l) => !l.data.includes('A ')), 'B sees none of A\'s output');
  } finally {
    await a.close();
    await b.close();
  }
});

test('input() is elicited from the session that made the call', async () => {
  const asked = [];
  const a = await connectHttp(srv.url, { elicit: async (req) => { asked.push(req.params.message); return { action: 'accept', content: { value: 'Zed' } }; } });
  const other = [];
  const b = await connectHttp(srv.url, { elicit: async (req) => { other.push(req.params.message); return { action: 'decline' }; } });
  try {
    const r = await call(a, 'run', { code: 'who = input("Who? ")\nprint("hello", who)' });
    assert.match(r.text, /^hello Zed\n/);
    assert.equal(asked.length, 1);
    assert.equal(other.length, 0);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a matplotlib figure becomes an asset served as a real PNG; resources list and read it', async () => {
  const h = await connectHttp(srv.url);
  try {
    const r = await call(h, 'run', { code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()' });
    assert.equal(r.isError, false);
    const m = /\[image: \/assets\/([0-9a-f]{32}\.png)\]/.exec(r.text);
    assert.ok(m, r.text);
    assert.match(r.text, /<Figure size \d+x\d+ with 1 Axes>/, 'text/plain still shows');
    assert.match(r.text, /\| 1 asset$/);
    const res = await fetch(`${srv.base}/assets/${m[1]}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const { resources } = await h.client.listResources();
    const entry = resources.find((x) => x.uri === `rat://assets/${m[1]}`);
    assert.ok(entry);
    assert.equal(entry.mimeType, 'image/png');
    const read = await h.client.readResource({ uri: entry.uri });
    assert.deepEqual(Buffer.from(read.contents[0].blob, 'base64'), bytes);
    await assert.rejects(h.client.readResource({ uri: 'rat://assets/00000000000000000000000000000000.png' }), /-32002/);
  } finally {
    await h.close();
  }
});

test('an HTML repr (DataFrame) becomes an HTML asset, served sandboxed', async () => {
  const h = await connectHttp(srv.url);
  try {
    const r = await call(h, 'run', { code: 'import pandas as pd\npd.DataFrame({"a": [1, 2]})' });
    const m = /\[html: \/assets\/([0-9a-f]{32}\.html)\]/.exec(r.text);
    assert.ok(m, r.text);
    assert.match(r.text, /^   a\n0  1\n1  2\n/, 'the text/plain form is in the result too');
    const res = await fetch(`${srv.base}/assets/${m[1]}`);
    assert.equal(res.headers.get('content-type'), 'text/html');
    assert.equal(res.headers.get('content-security-policy'), 'sandbox');
    assert.match(await res.text(), /<table/);
  } finally {
    await h.close();
  }
});

test('asset paths: traversal and unknown ids are 404', async () => {
  for (const p of ['/assets/../README.md', '/assets/%2e%2e/%2e%2e/etc/passwd', '/assets/..%2fkernel.json',
    '/assets/00000000000000000000000000000000.png', '/assets/not-an-id.png', '/assets/', '/nothing']) {
    const res = await fetch(`${srv.base}${p}`);
    assert.equal(res.status, 404, p);
  }
});

test('GET /health', async () => {
  const res = await fetch(`${srv.base}/health`);
  assert.equal(res.status, 200);
  const j = await res.json();
  assert.equal(j.status, 'ok');
  assert.match(j.kernel, /^(idle|busy|starting)$/);
  assert.equal(typeof j.exec_count, 'number');
  assert.equal(typeof j.uptime_s, 'number');
});

test('session rules: required header 400, unknown 404, DELETE then 404', async () => {
  const noSid = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: JSON_HDRS, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
  assert.equal(noSid.status, 400);
  const unknown = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': 'f'.repeat(32) }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
  assert.equal(unknown.status, 404);
  const sid = await rawSession(srv.base);
  const ok = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }) });
  assert.equal(ok.status, 200);
  assert.deepEqual((await ok.json()).result, {});
  const note = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  assert.equal(note.status, 202);
  const del = await fetch(`${srv.base}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  assert.equal(del.status, 200);
  const after = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }) });
  assert.equal(after.status, 404);
});

test('header rules: 406 Accept, 415 Content-Type, 413 size, 400 protocol version, 405 method', async () => {
  const sid = await rawSession(srv.base);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' });
  let r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': sid }, body });
  assert.equal(r.status, 406);
  r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'content-type': 'text/plain', 'mcp-session-id': sid }, body });
  assert.equal(r.status, 415);
  r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: '{"x":"' + 'a'.repeat(5 << 20) + '"}' });
  assert.equal(r.status, 413);
  r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid, 'mcp-protocol-version': '1999-01-01' }, body });
  assert.equal(r.status, 400);
  r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-03-26' }, body });
  assert.equal(r.status, 200, 'any supported version is fine');
  r = await fetch(`${srv.base}/mcp`, { method: 'PUT', headers: JSON_HDRS, body });
  assert.equal(r.status, 405);
  assert.match(r.headers.get('allow'), /GET, POST, DELETE/);
  r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: '{nope' });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32700);
});

test('DNS rebinding: a foreign Origin or Host is 403; loopback origins get CORS', async () => {
  let r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, origin: 'http://evil.example.com' }, body: init() });
  assert.equal(r.status, 403);
  // fetch() sets Host itself; use a raw socket for a foreign Host.
  const res = await new Promise((resolve) => {
    const s = net.connect(srv.port, '127.0.0.1', () => {
      s.write('GET /health HTTP/1.1\r\nHost: evil.example.com\r\nConnection: close\r\n\r\n');
    });
    let d = '';
    s.on('data', (x) => { d += x; });
    s.on('end', () => resolve(d));
  });
  assert.match(res, /^HTTP\/1\.1 403/);
  r = await fetch(`${srv.base}/mcp`, { method: 'OPTIONS', headers: { origin: 'http://localhost:6274', 'access-control-request-method': 'POST' } });
  assert.equal(r.status, 204);
  assert.equal(r.headers.get('access-control-allow-origin'), 'http://localhost:6274');
  r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, origin: 'http://localhost:6274' }, body: init() });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('access-control-expose-headers'), /mcp-session-id/);
});

test('a GET stream opens once per session (409 for a second) and needs Accept text/event-stream', async () => {
  const sid = await rawSession(srv.base);
  const ac = new AbortController();
  const g1 = await fetch(`${srv.base}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid }, signal: ac.signal });
  assert.equal(g1.status, 200);
  assert.equal(g1.headers.get('content-type'), 'text/event-stream');
  const g2 = await fetch(`${srv.base}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
  assert.equal(g2.status, 409);
  const g3 = await fetch(`${srv.base}/mcp`, { headers: { accept: 'application/json', 'mcp-session-id': sid } });
  assert.equal(g3.status, 406);
  ac.abort();
});

test('200 open connections and a half-sent request do not stop a status call', async () => {
  // This run's idle figure, before the connections pile up (the slowest of
  // three status calls): a loaded machine raises the bound with it.
  const h0 = await connectHttp(srv.url);
  let idle = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = Date.now();
    await call(h0, 'ctl', { op: 'status' });
    idle = Math.max(idle, Date.now() - t0);
  }
  await h0.close();
  const socks = [];
  for (let i = 0; i < 200; i++) {
    socks.push(await new Promise((resolve) => { const s = net.connect(srv.port, '127.0.0.1', () => resolve(s)); s.on('error', () => {}); }));
  }
  const slow = net.connect(srv.port, '127.0.0.1');
  slow.on('error', () => {});
  slow.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc":`);
  try {
    const h = await connectHttp(srv.url);
    const t0 = Date.now();
    const r = await call(h, 'ctl', { op: 'status' });
    const dt = Date.now() - t0;
    assert.ok(dt < Math.max(ms(2000), 20 * idle), `status answered in ${dt} ms (idle: ${idle} ms)`);
    assert.match(r.text, /^python /);
    await h.close();
  } finally {
    socks.forEach((s) => s.destroy());
    slow.destroy();
  }
});

test('--token: missing or wrong token is 401, the right one works, assets too', async () => {
  const t = await startHttp(['--token', 's3cret-token']);
  try {
    let r = await fetch(`${t.base}/mcp`, { method: 'POST', headers: JSON_HDRS, body: init() });
    assert.equal(r.status, 401);
    r = await fetch(`${t.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, authorization: 'Bearer wrong' }, body: init() });
    assert.equal(r.status, 401);
    r = await fetch(`${t.base}/health`);
    assert.equal(r.status, 401);
    const h = await connectHttp(t.url, { headers: { authorization: 'Bearer s3cret-token' } });
    const run = await call(h, 'run', { code: 'print(1)' });
    assert.match(run.text, /^1\n/);
    await h.close();
    r = await fetch(`${t.base}/assets/00000000000000000000000000000000.png`);
    assert.equal(r.status, 401);
  } finally {
    await t.stop();
  }
});

test('--token: a CORS preflight is answered after the Host and Origin checks, before the token (browsers send none)', async () => {
  const origin = 'http://app.example:8080';
  const t = await startHttp(['--token', 's3cret-token', '--allow-origin', origin]);
  try {
    const pre = (o) => fetch(`${t.base}/mcp`, { method: 'OPTIONS', headers: { origin: o, 'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type, mcp-protocol-version' } });
    let r = await pre(origin);
    assert.equal(r.status, 204);
    assert.equal(r.headers.get('access-control-allow-origin'), origin);
    assert.match(r.headers.get('access-control-allow-headers'), /\bauthorization\b/);
    assert.match(r.headers.get('access-control-allow-methods'), /\bPOST\b/);
    assert.equal(r.headers.get('www-authenticate'), null);
    r = await pre('http://localhost:6274'); // loopback origins are always allowed
    assert.equal(r.status, 204);
    // Origin still checked first: an origin not allowed gets 403, token or not.
    r = await pre('http://evil.example');
    assert.equal(r.status, 403);
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    // The preflight opens nothing: the request itself needs the token.
    r = await fetch(`${t.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, origin }, body: init() });
    assert.equal(r.status, 401);
    r = await fetch(`${t.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, origin, authorization: 'Bearer s3cret-token' }, body: init() });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), origin);
    assert.match(r.headers.get('access-control-expose-headers'), /mcp-session-id/);
    // Without a token, the same preflight is answered as before.
    r = await fetch(`${srv.base}/mcp`, { method: 'OPTIONS', headers: { origin: 'http://localhost:6274', 'access-control-request-method': 'POST' } });
    assert.equal(r.status, 204);
  } finally {
    await t.stop();
  }
});

test('a non-loopback address without a token refuses to start, with a clear message', async () => {
  const { command, args } = ratCommand(['--http', '--host', '0.0.0.0', '--port', '0']);
  const p = spawnSync(command, args, { encoding: 'utf8', timeout: ms(10000) });
  assert.equal(p.status, 2);
  assert.match(p.stderr, /refusing to serve on 0\.0\.0\.0 without --token/);
  assert.equal(p.stdout, '');
});

test('a client that disconnects mid-run: the run goes on and ctl wait collects it from another session', async () => {
  const warm = await connectHttp(srv.url);
  await call(warm, 'run', { code: 'pass' }); // the kernel is up before the timed part
  await warm.close();
  const sid = await rawSession(srv.base);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'run', arguments: {
    code: 'import time\nfor i in range(10):\n    print("tick", i, flush=True)\n    time.sleep(0.2)\nprint("done")' } } });
  // A raw socket, so that "disconnect" means the TCP connection really closes.
  const sock = net.connect(srv.port, '127.0.0.1');
  sock.on('error', () => {});
  let got = '';
  sock.on('data', (d) => { got += d; });
  await new Promise((r) => sock.on('connect', r));
  sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: ${sid}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  await until(() => /tick 0/.test(got), ms(5000), 'the first tick on the stream');
  assert.match(got, /text\/event-stream[\s\S]*tick 0/);
  sock.destroy();
  await new Promise((r) => setTimeout(r, 600)); // the next output chunk shows the stream is gone
  const h = await connectHttp(srv.url);
  try {
    const w = await call(h, 'ctl', { op: 'wait' });
    assert.match(w.text, /^tick 0\ntick 1\n[\s\S]*tick 9\ndone\n\n✓ \d\.\ds/);
  } finally {
    await h.close();
  }
});

test('ctl reset --scope all clears the assets', async () => {
  const h = await connectHttp(srv.url);
  try {
    await call(h, 'run', { code: 'from IPython.display import display, HTML\ndisplay(HTML("<b>x</b>"))' });
    const assets = async () => (await h.client.listResources()).resources.filter((x) => x.uri.startsWith('rat://assets/'));
    assert.ok((await assets()).length > 0);
    const r = await call(h, 'ctl', { op: 'reset', scope: 'all' });
    assert.match(r.text, /^RESET \| namespace, history and saved outputs cleared/);
    assert.equal((await assets()).length, 0);
  } finally {
    await h.close();
  }
});
