// Over HTTP: a cancelled call's stream ends, a run whose client went away
// is collected by another session's ctl wait, and input() prompts belong to
// the session whose run asked (issue 19, issue 11 item 5).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHttp, connectHttp, call, ms } from './lib.mjs';

const JSON_HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const sleep = (t) => new Promise((r) => setTimeout(r, t));

let srv;
before(async () => { srv = await startHttp(); });
after(async () => { await srv.stop(); });

async function rawSession() {
  const r = await fetch(`${srv.base}/mcp`, {
    method: 'POST', headers: JSON_HDRS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  assert.equal(r.status, 200);
  const sid = r.headers.get('mcp-session-id');
  await r.text();
  await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  return sid;
}

const post = (sid, msg, signal) => fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: JSON.stringify(msg), signal });
const runMsg = (id, code, extra = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run', arguments: { code, ...extra } } });

test('a POST cancelled with notifications/cancelled ends its event stream', async () => {
  const sid = await rawSession();
  const r = await post(sid, runMsg(7, 'import time; time.sleep(30)'));
  assert.equal(r.headers.get('content-type'), 'text/event-stream');
  const body = r.text();
  await sleep(300);
  const t0 = Date.now();
  const n = await post(sid, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'test' } });
  assert.equal(n.status, 202);
  const text = await Promise.race([body, sleep(ms(5000)).then(() => 'STILL OPEN')]);
  assert.notEqual(text, 'STILL OPEN', 'the stream of the cancelled call stays open');
  assert.ok(Date.now() - t0 < ms(5000));
  assert.doesNotMatch(text, /"id":7/, 'no response for a cancelled call');
  // The run was interrupted: the kernel is free for the next one.
  const h = await connectHttp(srv.url);
  try {
    const next = await call(h, 'run', { code: 'print("free")', wait: 10 });
    assert.match(next.text, /^free\n\n✓ /);
  } finally {
    await h.close();
  }
});

test('a silent run whose client went away is collected by another session\'s ctl wait', async () => {
  const sid = await rawSession();
  const ac = new AbortController();
  const r = await post(sid, runMsg(3, 'import time; time.sleep(6); print("done")', { wait: 30 }), ac.signal);
  assert.equal(r.status, 200);
  r.body.getReader().read().catch(() => {});
  await sleep(1000);
  ac.abort(); // session A disconnects; its run goes on
  await sleep(ms(3000));
  const h = await connectHttp(srv.url);
  try {
    const w = await call(h, 'ctl', { op: 'wait' });
    assert.match(w.text, /^done\n\n✓ /, w.text);
  } finally {
    await h.close();
  }
});

test('only the session whose run asked answers its input(); the other is told so and gets none of its output', async () => {
  const a = await connectHttp(srv.url);
  const b = await connectHttp(srv.url);
  try {
    const r = await call(a, 'run', { code: 'name = input("Name: ")\nprint("hello", name)' });
    assert.match(r.text, /INPUT REQUESTED: "Name: "/);
    const stolen = await call(b, 'run', { code: '', input: 'mallory' });
    assert.equal(stolen.isError, true);
    assert.match(stolen.text, /^run: the input\(\) waiting is exec #\d+'s, a run of another session; only that session can answer it/);
    const w = await call(b, 'ctl', { op: 'wait' });
    assert.equal(w.text, 'Nothing to wait for: the running code waits for input() from the session that started it.');
    const done = await call(a, 'run', { code: '', input: 'alice' });
    assert.match(done.text, /^hello alice\n\n✓ /);
  } finally {
    await a.close();
    await b.close();
  }
});
