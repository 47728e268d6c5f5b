// HTTP abuse, loopback only, every loop bounded: many idle connections,
// slowloris, oversized headers and bodies, session churn, sessions never
// deleted, malformed bodies. Throughout, a status call answers promptly and
// rat-py's memory stays bounded.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { startHttp, connectHttp, call, ms } from './lib.mjs';

const JSON_HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const initBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } });

let srv;
let status; // a long-lived SDK client used to check the server still answers
// The slowest of five status calls on the idle server, in this run: a
// loaded machine (or a sanitizer build) raises the bound with it.
let idleStatusMs = 0;
before(async () => {
  srv = await startHttp();
  status = await connectHttp(srv.url);
  await call(status, 'run', { code: 'pass' }); // kernel up
  for (let i = 0; i < 5; i++) {
    const t0 = Date.now();
    await call(status, 'ctl', { op: 'status' });
    idleStatusMs = Math.max(idleStatusMs, Date.now() - t0);
  }
});
after(async () => {
  await status.close();
  await srv.stop();
});

function rssKb() {
  const s = readFileSync(`/proc/${srv.proc.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(s)[1]);
}

async function promptStatus(limitMs = Math.max(ms(2000), 20 * idleStatusMs)) {
  const t0 = Date.now();
  const r = await call(status, 'ctl', { op: 'status' });
  const dt = Date.now() - t0;
  assert.match(r.text, /^python idle/);
  assert.ok(dt < limitMs, `status answered in ${dt} ms`);
  return dt;
}

// Opened from 127.0.0.1 unless localAddress says another loopback address:
// one address holds at most 1/8 of the connection table (256 of 2048).
function connect(localAddress = '127.0.0.1', port = srv.port) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress }, () => resolve(s));
    s.on('error', () => {});
  });
}

async function sessions() {
  return (await (await fetch(`${srv.base}/health`)).json()).sessions;
}

test('1000 connections held open: status still answers promptly, memory bounded', async () => {
  const before = rssKb();
  const socks = [];
  for (let i = 0; i < 1000; i++) socks.push(await connect(`127.0.0.${2 + (i % 5)}`));
  try {
    await promptStatus();
    const grown = rssKb() - before;
    assert.ok(grown < 64 * 1024, `RSS grew by ${grown} kB for 1000 idle connections`);
  } finally {
    socks.forEach((s) => s.destroy());
  }
});

test('slowloris: headers trickling in on 100 connections do not block anyone', async () => {
  const socks = [];
  for (let i = 0; i < 100; i++) {
    const s = await connect();
    s.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    socks.push(s);
  }
  const drip = setInterval(() => socks.forEach((s) => s.write('X-Slow: a\r\n')), 200);
  try {
    for (let i = 0; i < 5; i++) {
      await promptStatus();
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    clearInterval(drip);
    socks.forEach((s) => s.destroy());
  }
});

test('slowloris past the connection table: a fresh client is served, a trickler is cut after the head timeout', async () => {
  // A table of 344 connections (descriptor limit 600 less 256 spare): 400
  // tricklers from 127.0.0.2 would fill it, if one address could.
  const small = await startHttp([], {}, { nofile: 600 });
  const socks = [];
  let closed = 0;
  try {
    const t0 = Date.now();
    for (let i = 0; i < 400; i++) {
      const s = await connect('127.0.0.2', small.port);
      s.on('close', () => { closed++; });
      s.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      socks.push(s);
    }
    const first = socks[0];
    const firstClosed = new Promise((r) => first.on('close', () => r(Date.now())));
    // A header line every second: never idle for the 30 s idle timeout.
    const drip = setInterval(() => socks.forEach((s) => { if (!s.destroyed) s.write('X-Slow: a\r\n'); }), 1000);
    try {
      for (let t = 0; t < ms(5000) && closed < 400 - 256; t += 100) await new Promise((r) => setTimeout(r, 100));
      assert.ok(closed >= 400 - 256, `only ${closed} of 400 connections from one address were refused`);
      const f0 = Date.now();
      const r = await fetch(`${small.base}/health`, { signal: AbortSignal.timeout(ms(10000)) });
      assert.equal(r.status, 200);
      await r.text();
      const fresh = Date.now() - f0;
      // Closed 15 s after accept; under a wrapper the connect loop itself
      // may take seconds, hence the generous upper bound.
      // The timer is cleared (a pending one would hold the test process open
      // its full 40 s, 400 s under valgrind, after every test had passed).
      let late;
      const cut = await Promise.race([firstClosed, new Promise((r) => { late = setTimeout(() => r(0), ms(40000)); })]);
      clearTimeout(late);
      assert.ok(cut, 'a trickling connection was still open 40 s later');
      assert.ok(cut - t0 >= 14000, `cut after ${cut - t0} ms, before the 15 s head timeout`);
      assert.ok(fresh < ms(5000), `fresh /health answered in ${fresh} ms`);
    } finally {
      clearInterval(drip);
    }
  } finally {
    socks.forEach((s) => s.destroy());
    await small.stop();
  }
});

test('oversized headers are refused; oversized bodies get 413; the server keeps serving', async () => {
  const big = await new Promise((resolve) => {
    const s = net.connect(srv.port, '127.0.0.1', () => {
      s.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(100 * 1024)}\r\n\r\n`);
    });
    let d = '';
    s.on('data', (x) => { d += x; });
    s.on('error', () => resolve(d));
    s.on('close', () => resolve(d));
  });
  assert.doesNotMatch(big, /^HTTP\/1\.1 200/, 'a 100 KB header is not served');
  const before = rssKb();
  const r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: JSON_HDRS, body: '{"a":"' + 'b'.repeat(100 << 20) + '"}' });
  assert.equal(r.status, 413);
  assert.ok(rssKb() - before < 16 * 1024, 'a 100 MB body is discarded, not buffered');
  await promptStatus();
});

test('rapid session create/delete leaves no sessions behind', async () => {
  const base = await sessions();
  for (let i = 0; i < 300; i++) {
    const r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: JSON_HDRS, body: initBody });
    const sid = r.headers.get('mcp-session-id');
    await r.text();
    const d = await fetch(`${srv.base}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
    assert.equal(d.status, 200);
  }
  assert.equal(await sessions(), base);
  await promptStatus();
});

test('sessions never deleted: the table stays bounded (idle ones are evicted)', async () => {
  const before = rssKb();
  const ids = [];
  for (let i = 0; i < 400; i++) {
    const r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: JSON_HDRS, body: initBody });
    assert.equal(r.status, 200);
    ids.push(r.headers.get('mcp-session-id'));
    await r.text();
  }
  const n = await sessions();
  assert.ok(n <= 256, `${n} sessions kept`);
  const oldest = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': ids[0] }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }) });
  assert.equal(oldest.status, 404, 'the oldest idle session was evicted');
  const newest = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': ids.at(-1) }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }) });
  assert.equal(newest.status, 200);
  assert.ok(rssKb() - before < 32 * 1024);
  await promptStatus();
});

test('malformed bodies get JSON-RPC errors with 4xx, never a crash', async () => {
  const r0 = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: JSON_HDRS, body: initBody });
  const sid = r0.headers.get('mcp-session-id');
  await r0.text();
  const bodies = ['', '{', '[]', '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 'null', '"x"', '{"jsonrpc":"2.0"}',
    '{"jsonrpc":"2.0","id":{},"method":"ping"}', '\u0000\u0001', '{"jsonrpc":"2.0","id":1,"method":"ping","params":[' + '['.repeat(10000) + ']'.repeat(10000) + ']}',
    Buffer.from([0x7b, 0xff, 0xfe, 0x7d])];
  for (let round = 0; round < 50; round++) {
    for (const b of bodies) {
      const r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: b });
      assert.ok(r.status === 200 || (r.status >= 400 && r.status < 500), `status ${r.status}`);
      const t = await r.text();
      if (r.status !== 202 && t) assert.ok(JSON.parse(t.startsWith('event:') ? t.split('data: ')[1] : t).error, t);
    }
  }
  const ping = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...JSON_HDRS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }) });
  assert.deepEqual((await ping.json()).result, {});
  await promptStatus();
});
