// Hostile MCP input over Streamable HTTP: the messages of hostile.test.mjs
// (the same seeded generator, hostile_gen.mjs), each POSTed to /mcp of
// `rat-py --http`: first without a session (before initialize), then with an
// ended session, then inside an initialized session; plus bodies of 100 MB
// (with Content-Length and chunked) and bodies at the 4 MiB limit. Each POST
// must get the HTTP status and JSON-RPC answer doc/http.md documents:
//   - not one valid JSON-RPC message (parse errors, wrong member types): 400
//     with its JSON-RPC error (the id echoed when readable), before any
//     session is looked at;
//   - anything else without Mcp-Session-Id: 400, -32000; a failed initialize:
//     400 with its error and no session; an unknown or ended session: 404,
//     -32001;
//   - in a session: a notification or response 202 with no body, a second
//     initialize 400 with -32600 and its id, every other request 200 with one
//     JSON message (its result, error or tool error), as in hostile.test.mjs;
//   - a body over 4 MiB: 413, -32600, read to its end and discarded.
// Every body is strict UTF-8; no response but initialize's carries a session
// id; the hostile session's GET stream receives nothing. After each batch a
// ping on a separate session is answered promptly, judged against the same
// run's idle and control pings (hostile_gen.mjs, checkPingLatencies), not a
// wall-clock constant; peak RSS (VmHWM) stays bounded. A second test holds 40
// bodies of 4 MiB open at once: rat-py keeps at most 64 MiB of them and
// answers the others 503.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import net from 'node:net';
import { once } from 'node:events';
import { startHttp, ms, WRAPPED, SLOWDOWN } from './lib.mjs';
import { hostileGenerator, req, decodeMessage, checkResponse, vmHWM, checkPingLatencies } from './hostile_gen.mjs';

// All of them under valgrind too: rat-py's share of each POST is small next
// to the client's, and the run takes under twice as long (19 s, not 12).
const TOTAL = 10_000;
const BATCH = 100;
const PARALLEL = 8; // POSTs in flight at once, each on its own connection
const MAX_BODY = 4 << 20; // the documented body limit
// Peak RSS bound: rat-py holds at most a few bodies of up to 4 MiB (a buffer
// grows to 8 MiB for one at the limit) and their parsed JSON; a sanitizer
// build has shadow memory and a quarantine on top. Not checked under
// valgrind, whose own memory is what /proc shows.
const RSS_LIMIT_MB = process.env.RAT_PY_SANITIZED ? 512 : 64;

const HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const NO_SESSION = { kind: 'error', code: -32000, id: 'null' };
const NO_SUCH_SESSION = { kind: 'error', code: -32001, id: 'null' };
const TOO_LARGE = { kind: 'error', code: -32600, id: 'null', message: /too large/ };
const INIT = req(1, 'initialize', '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile-http","version":"1"}}');

const gen = hostileGenerator(20261130);

/**
 * A pinger in a worker thread: the batches leave this thread tens of MB of
 * garbage (10 000-character ids, 100 MB bodies), and its collections pause
 * it for 15-60 ms on a 2-core machine, right while a ping would be timed. A
 * worker has its own heap and collector, so what it times is rat-py and the
 * loopback, not this thread's garbage. ping(url, sid, id) resolves to
 * { dt, status, ctype, sid, bytes } like post().
 */
function pinger() {
  const w = new Worker(`
    const { parentPort } = require('node:worker_threads');
    parentPort.on('message', async ({ url, sid, id }) => {
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid };
      const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });
      try {
        const t0 = process.hrtime.bigint();
        const r = await fetch(url, { method: 'POST', headers, body });
        const bytes = new Uint8Array(await r.arrayBuffer());
        const dt = Number(process.hrtime.bigint() - t0) / 1e6;
        parentPort.postMessage({ dt, status: r.status, ctype: r.headers.get('content-type'), sid: r.headers.get('mcp-session-id'), bytes });
      } catch (e) {
        parentPort.postMessage({ error: String(e) });
      }
    });`, { eval: true });
  return {
    ping: (url, sid, id) => new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`ping ${id}: no answer within ${ms(10_000)} ms`)), ms(10_000));
      w.once('message', (m) => {
        clearTimeout(t);
        if (m.error) reject(new Error(`ping ${id}: ${m.error}`));
        else resolve({ ...m, bytes: Buffer.from(m.bytes) });
      });
      w.postMessage({ url, sid, id });
    }),
    close: () => w.terminate(),
  };
}

/** The method a well-formed message names (framing errors are not parsed). */
function methodOf(m) {
  if (m.expect.framing) return undefined;
  return JSON.parse(Buffer.isBuffer(m.line) ? m.line.toString('utf8') : m.line).method;
}

/**
 * What HTTP must answer to a generated message posted with no session
 * ('none'), an ended one ('ended') or a live, initialized one ('live').
 */
function httpExpect(m, where) {
  const e = m.expect;
  if (e.framing) return { status: 400, body: e };
  const isInit = methodOf(m) === 'initialize';
  if (where === 'ended') return { status: 404, body: NO_SUCH_SESSION };
  if (where === 'none') return isInit ? { status: 400, body: e } : { status: 400, body: NO_SESSION };
  if (isInit) return { status: 400, body: e }; // a second initialize
  if (e.kind === 'none') return { status: 202 };
  return { status: 200, body: e };
}

async function post(base, body, sid, extra = {}) {
  const headers = { ...HDRS, ...(sid ? { 'mcp-session-id': sid } : {}) };
  const r = await fetch(`${base}/mcp`, { method: 'POST', headers, body, signal: AbortSignal.timeout(ms(30_000)), ...extra });
  const bytes = Buffer.from(await r.arrayBuffer());
  return { status: r.status, ctype: r.headers.get('content-type'), sid: r.headers.get('mcp-session-id'), bytes };
}

/** Checks one HTTP answer against httpExpect's verdict. */
function checkHttp(got, want, what) {
  const ctx = `${what}: HTTP ${got.status} ${got.bytes.subarray(0, 300).toString()}`;
  assert.equal(got.status, want.status, ctx);
  assert.equal(got.sid, null, `${ctx}: no session id outside initialize`);
  if (want.status === 202) {
    assert.equal(got.bytes.length, 0, ctx);
    return;
  }
  assert.equal(got.ctype, 'application/json', ctx); // one message, never an SSE stream here
  checkResponse(decodeMessage(got.bytes), want.body, what);
}

/** A session made by a raw initialize; returns its id. */
async function session(base) {
  const r = await post(base, INIT);
  assert.equal(r.status, 200);
  assert.ok(decodeMessage(r.bytes).msg.result.serverInfo);
  assert.match(r.sid, /^[0-9a-f]{32}$/);
  const n = await post(base, '{"jsonrpc":"2.0","method":"notifications/initialized"}', r.sid);
  assert.equal(n.status, 202);
  return r.sid;
}

async function sessions(base) {
  return (await (await fetch(`${base}/health`)).json()).sessions;
}

/** A body of exactly n bytes: a ping whose params pad it out. */
function paddedPing(id, n) {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"ping","params":{"pad":"`;
  const tail = '"}}';
  const b = Buffer.alloc(n, 'a');
  Buffer.from(head).copy(b);
  Buffer.from(tail).copy(b, n - tail.length);
  return b;
}

/** 100 MB sent chunked (no Content-Length), 1 MiB at a time. */
function chunkedBody(total) {
  const chunk = Buffer.alloc(1 << 20, 'a');
  let sent = 0;
  return new ReadableStream({
    pull(ctl) {
      if (sent === 0) ctl.enqueue(Buffer.from('{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"'));
      if (sent >= total) {
        ctl.enqueue(Buffer.from('"}}'));
        ctl.close();
        return;
      }
      ctl.enqueue(chunk);
      sent += chunk.length;
    },
  });
}

test(`${TOTAL} hostile messages over HTTP: the documented status and error for each, prompt pings, bounded memory`, async (t) => {
  const srv = await startHttp();
  const base = srv.base;
  const latencies = { idle: [], after: [], control: [] };
  const counts = {};
  let sent = 0;
  let getStream = '';
  const getAbort = new AbortController();
  const pings = pinger();
  try {
    const pingSid = await session(base);
    const ping = async (label) => {
      const id = `ping-${label}`;
      const r = await pings.ping(srv.url, pingSid, id);
      checkHttp(r, { status: 200, body: { kind: 'result', id: JSON.stringify(id) } }, `ping after ${label}`);
      latencies.after.push({ dt: r.dt, label });
      // The control: nothing of the batch is left once the first was answered.
      const c = await pings.ping(srv.url, pingSid, `${id}-control`);
      assert.equal(c.status, 200);
      latencies.control.push({ dt: c.dt, label });
    };
    // The worker's first fetch loads undici and opens the connection (tens of ms): not timed.
    for (let i = 0; i < 3; i++) assert.equal((await pings.ping(srv.url, pingSid, `warm-up-${i}`)).status, 200);
    // The idle figure of this run.
    for (let i = 0; i < 15; i++) latencies.idle.push((await pings.ping(srv.url, pingSid, `idle-${i}`)).dt);
    const batch = async (label, msgs, sid, where) => {
      let next = 0;
      const worker = async () => {
        while (next < msgs.length) {
          const m = msgs[next++];
          const got = await post(base, m.line, sid);
          counts[m.what] = (counts[m.what] ?? 0) + 1;
          checkHttp(got, httpExpect(m, where), `${label}: ${m.what}: ${String(m.line).slice(0, 120)}`);
        }
      };
      await Promise.all(Array.from({ length: PARALLEL }, worker));
      sent += msgs.length;
      await ping(label);
    };

    // Before initialize: no session at all. A failed initialize leaves none behind.
    for (let i = 0; i < 3; i++)
      await batch(`no session ${i}`, Array.from({ length: BATCH }, () => gen.next(false)), null, 'none');
    assert.equal(await sessions(base), 1, 'only the ping session exists');

    // An ended session: 404 for everything that parses.
    const gone = await session(base);
    assert.equal((await fetch(`${base}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': gone } })).status, 200);
    await batch('ended session', Array.from({ length: BATCH }, () => gen.next(true)), gone, 'ended');

    // The hostile session, with its GET stream open: nothing may arrive there.
    const sid = await session(base);
    const g = await fetch(`${base}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid }, signal: getAbort.signal });
    assert.equal(g.status, 200);
    const reading = (async () => {
      const dec = new TextDecoder('utf-8', { fatal: true });
      try {
        for await (const chunk of g.body) getStream += dec.decode(chunk, { stream: true });
      } catch { /* aborted at the end */ }
    })();

    // What only HTTP has: the method decides whether a POST may create a
    // session, and some answers come from the transport, not the session.
    const specials = [
      // "initialize\u0000x" is no initialize: it needs a session, and in one it is unknown.
      [req('"nul-init"', 'initialize\u0000x', '{"protocolVersion":"2025-11-25","capabilities":{}}'), null, { status: 400, body: NO_SESSION }],
      [req('"nul-init"', 'initialize\u0000x', '{"protocolVersion":"2025-11-25","capabilities":{}}'), sid, { status: 200, body: { kind: 'error', code: -32601, id: '"nul-init"' } }],
      // Newer clients probe with server/discover: -32601 with its id, so they fall back.
      [req('"disc"', 'server/discover', '{}'), null, { status: 400, body: { kind: 'error', code: -32601, id: '"disc"' } }],
      // Session ids that name nothing.
      [req(8, 'ping'), 'f'.repeat(32), { status: 404, body: NO_SUCH_SESSION }],
      [req(9, 'ping'), 'x'.repeat(8000), { status: 404, body: NO_SUCH_SESSION }],
      [req(10, 'ping'), sid.toUpperCase(), { status: 404, body: NO_SUCH_SESSION }],
    ];
    for (const [body, s, want] of specials) checkHttp(await post(base, body, s), want, `special: ${body.slice(0, 80)} (session ${String(s).slice(0, 40)})`);
    assert.equal(await sessions(base), 2);

    // Bodies: 100 MB with Content-Length and chunked are read and discarded
    // (413); exactly 4 MiB is served, one byte more is 413.
    const rssBefore = vmHWM(srv.proc.pid);
    const big = paddedPing('big', 100 * 1024 * 1024);
    checkHttp(await post(base, big, sid), { status: 413, body: TOO_LARGE }, '100 MB body');
    checkHttp(await post(base, chunkedBody(100 * 1024 * 1024), sid, { duplex: 'half' }), { status: 413, body: TOO_LARGE }, '100 MB chunked body');
    checkHttp(await post(base, paddedPing('at-limit', MAX_BODY), sid), { status: 200, body: { kind: 'result', id: '"at-limit"' } }, '4 MiB body');
    checkHttp(await post(base, paddedPing('over-limit', MAX_BODY + 1), sid), { status: 413, body: TOO_LARGE }, '4 MiB + 1 body');
    await ping('large bodies');
    const rssAfterBig = vmHWM(srv.proc.pid);

    while (sent < TOTAL) {
      const n = Math.min(BATCH, TOTAL - sent);
      await batch(`batch ${Math.ceil(sent / BATCH)}`, Array.from({ length: n }, () => gen.next(true)), sid, 'live');
    }
    const peak = vmHWM(srv.proc.pid);
    assert.equal(await sessions(base), 2, 'the ping and hostile sessions, nothing else');
    getAbort.abort();
    await reading;
    assert.doesNotMatch(getStream, /^(data|event|id):/m, 'no message on the GET stream');

    t.diagnostic(`${sent} hostile messages (+4 large bodies)${WRAPPED ? ' under a wrapper' : ''}; ` +
      `${checkPingLatencies(latencies, SLOWDOWN)}; VmHWM ${rssBefore.toFixed(1)} MB before the large bodies, ${rssAfterBig.toFixed(1)} MB after them, ` +
      `${peak.toFixed(1)} MB at the end (limit ${WRAPPED ? 'not checked' : `${RSS_LIMIT_MB} MB`})`);
    t.diagnostic(`kinds: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    assert.equal(sent, TOTAL);
    if (!WRAPPED) assert.ok(peak < RSS_LIMIT_MB, `peak RSS ${peak.toFixed(1)} MB`);
  } finally {
    getAbort.abort();
    await pings.close();
    await srv.stop();
  }
});

/** A raw POST whose body stops `held` bytes short; finish() sends the rest and resolves to the response. */
async function heldPost(port, sid, body, held) {
  const sock = net.connect(port, '127.0.0.1');
  sock.on('error', () => {});
  await once(sock, 'connect');
  const chunks = [];
  sock.on('data', (d) => chunks.push(d));
  const closed = once(sock, 'close');
  const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nMcp-Session-Id: ${sid}\r\nConnection: close\r\n` +
    `Content-Length: ${body.length}\r\n\r\n`;
  sock.write(head);
  if (!sock.write(body.subarray(0, body.length - held))) await once(sock, 'drain');
  return {
    async finish() {
      sock.write(body.subarray(body.length - held));
      await closed;
      const raw = Buffer.concat(chunks);
      const split = raw.indexOf('\r\n\r\n');
      const headers = raw.subarray(0, split).toString();
      return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(headers)?.[1]), headers, bytes: raw.subarray(split + 4) };
    },
  };
}

test('40 bodies of 4 MiB arriving at once: at most 64 MiB of them held, the others 503, the budget comes back', async (t) => {
  const N = 40;
  const srv = await startHttp();
  try {
    const sid = await session(srv.base);
    const before = vmHWM(srv.proc.pid);
    const posts = [];
    for (let i = 0; i < N; i++) posts.push(await heldPost(srv.port, sid, paddedPing(`held-${i}`, MAX_BODY), 10));
    await new Promise((r) => setTimeout(r, ms(500))); // rat-py reads what the sockets still buffer
    const held = vmHWM(srv.proc.pid);
    const answers = [];
    for (const p of posts) answers.push(await p.finish());
    const peak = vmHWM(srv.proc.pid);
    const served = answers.filter((a) => a.status === 200);
    const busy = answers.filter((a) => a.status === 503);
    t.diagnostic(`${served.length} served, ${busy.length} refused with 503; VmHWM ${before.toFixed(1)} MB before, ` +
      `${held.toFixed(1)} MB with the bodies held, ${peak.toFixed(1)} MB after answering them`);
    assert.equal(served.length + busy.length, N, `statuses: ${answers.map((a) => a.status)}`);
    assert.ok(served.length >= 1 && served.length <= 16, `${served.length} bodies of 4 MiB held at once`);
    for (const a of served) {
      const got = decodeMessage(a.bytes);
      assert.match(String(got.msg.id), /^held-\d+$/);
      checkResponse(got, { kind: 'result', id: JSON.stringify(got.msg.id) }, 'held body');
    }
    for (const a of busy) {
      assert.match(a.headers, /^Retry-After: 1$/mi);
      checkResponse(decodeMessage(a.bytes), { kind: 'error', code: -32000, id: 'null', message: /busy/ }, '503');
    }
    // Without the shared budget, 40 held bodies would cost 160 MiB and more.
    if (!WRAPPED && !process.env.RAT_PY_SANITIZED) assert.ok(peak - before < 96, `VmHWM grew by ${(peak - before).toFixed(1)} MB`);
    // Every byte went back to the budget: 20 bodies of 4 MiB one after the other are all served.
    for (let i = 0; i < 20; i++)
      checkHttp(await post(srv.base, paddedPing(`again-${i}`, MAX_BODY), sid), { status: 200, body: { kind: 'result', id: `"again-${i}"` } }, `4 MiB body ${i} after`);
  } finally {
    await srv.stop();
  }
});
