// One kernel, many watchers (doc/tools.md#watching): a session that
// subscribes to rat://events sees every session's runs live (start, output
// as it streams, input prompts, end), and one subscribed to rat://variables
// or rat://status is told when they change (notifications/resources/updated).
// Real rat-py --http, real ipykernel, two official SDK clients.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startHttp, connectHttp, connect, call, until, ms, WRAPPED } from './lib.mjs';

let srv;
before(async () => { srv = await startHttp(); });
after(async () => { await srv.stop(); });

/** A watcher: an SDK client subscribed to the events and both resources. */
async function watcher() {
  const h = await connectHttp(srv.url);
  h.events = [];
  h.updated = [];
  h.client.fallbackNotificationHandler = async (n) => {
    if (n.method === 'rat/event') h.events.push({ ...n.params, at: Date.now() });
  };
  h.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { h.updated.push(n.params.uri); });
  for (const uri of ['rat://events', 'rat://variables', 'rat://status'])
    await h.client.subscribeResource({ uri });
  return h;
}

const readJson = async (h, uri) => JSON.parse((await h.client.readResource({ uri })).contents[0].text);

test('session B sees session A\'s run start, its output live, its end, and the variables update', async () => {
  const b = await watcher();
  const a = await connectHttp(srv.url);
  try {
    const me = await readJson(a, 'rat://events');
    let aDone = false;
    const pending = call(a, 'run', { code: 'import time\nprint("one", flush=True)\ntime.sleep(1)\nprint("two")\nwatched = 7' })
      .then((r) => { aDone = true; return r; });
    // "one" reaches B while A's run is still sleeping: it is live.
    await until(() => b.events.some((e) => e.type === 'run_output' && e.outputs.some((o) => o.text === 'one\n')),
      ms(10000), 'B gets A\'s first line');
    assert.equal(aDone, false, 'B saw the output before A\'s run ended');
    const r = await pending;
    assert.equal(r.isError, false);
    await until(() => b.events.some((e) => e.type === 'run_ended'), ms(10000), 'B gets the end');
    const mine = b.events.filter((e) => e.run === b.events[0].run);
    const types = mine.map((e) => e.type);
    assert.equal(types[0], 'run_started');
    assert.equal(types[types.length - 1], 'run_ended');
    const start = mine[0];
    assert.match(start.code, /print\("one"/);
    assert.equal(start.session, me.session, 'which session ran it');
    assert.equal(start.mine, false);
    assert.ok(start.exec_count >= 1);
    const text = mine.filter((e) => e.type === 'run_output').flatMap((e) => e.outputs).map((o) => o.text).join('');
    assert.equal(text, 'one\ntwo\n');
    const end = mine[mine.length - 1];
    assert.equal(end.status, 'ok');
    assert.equal(end.exec_count, start.exec_count);
    assert.ok(end.duration_ms >= 900, `${end.duration_ms}`);
    assert.ok(end.vars >= 1);
    // seq counts every event: no gap for a watcher that reads.
    const seqs = b.events.map((e) => e.seq);
    assert.deepEqual(seqs, seqs.map((_, i) => seqs[0] + i));
    // The variables resource changed, and says so.
    await until(() => b.updated.includes('rat://variables'), ms(5000), 'variables updated');
    assert.ok(b.updated.includes('rat://status'));
    const vars = await readJson(b, 'rat://variables');
    assert.deepEqual(vars.rows.find((x) => x.name === 'watched'), { name: 'watched', type: 'int', type_name: 'int', preview: '7', expandable: false });
    // An error, an input prompt and its answer, seen from B.
    b.events.length = 0;
    const e = await call(a, 'run', { code: '1/0' });
    assert.equal(e.isError, true);
    await until(() => b.events.some((x) => x.type === 'run_ended'), ms(10000), 'error end');
    const ended = b.events.find((x) => x.type === 'run_ended');
    assert.equal(ended.status, 'error');
    assert.deepEqual(ended.error, { ename: 'ZeroDivisionError', evalue: 'division by zero' });
    b.events.length = 0;
    const ask = await call(a, 'run', { code: 'answer = input("Q? ")' });
    assert.match(ask.text, /INPUT REQUESTED/);
    await until(() => b.events.some((x) => x.type === 'run_input'), ms(5000), 'input seen');
    assert.deepEqual(b.events.find((x) => x.type === 'run_input').input, { prompt: 'Q? ', password: false });
    const st = await readJson(b, 'rat://status');
    assert.equal(st.waiting_for_input, true);
    assert.equal(st.running.mine, false);
    await call(a, 'run', { code: '', input: '42' });
    await until(() => b.events.some((x) => x.type === 'run_ended'), ms(5000), 'input run end');
    // B's own runs are marked as its own.
    b.events.length = 0;
    await call(b, 'run', { code: 'print("mine")' });
    await until(() => b.events.some((x) => x.type === 'run_ended'), ms(5000), 'own end');
    assert.ok(b.events.every((x) => x.mine === true));
  } finally {
    await a.close();
    await b.close();
  }
});

test('a flood reaches a watcher in bounded batches; what does not fit is counted', async () => {
  const b = await watcher();
  const a = await connectHttp(srv.url);
  try {
    b.events.length = 0;
    // 2 MB in one go: more than a batch (64 KiB) can carry per 50 ms.
    const r = await call(a, 'run', { code: 'import sys\nfor i in range(20): sys.stdout.write("x" * 100_000)\nsys.stdout.flush()' });
    assert.equal(r.isError, false);
    await until(() => b.events.some((x) => x.type === 'run_ended'), ms(10000), 'flood end');
    const outs = b.events.filter((x) => x.type === 'run_output');
    let got = 0, dropped = 0;
    for (const o of outs) {
      const n = o.outputs.reduce((k, it) => k + (it.text?.length ?? 0), 0);
      assert.ok(n <= 64 * 1024, `a batch carries at most 64 KiB (${n})`);
      got += n;
      dropped += o.dropped?.bytes ?? 0;
    }
    assert.equal(got + dropped, 2_000_000, 'every byte is either sent or counted');
    assert.ok(dropped > 0, 'the marker says what was left out');
  } finally {
    await a.close();
    await b.close();
  }
});

test('with many watchers a batch carries their share of 1 MiB, every byte still sent or counted', async () => {
  // 32 watchers: 1 MiB / 32 = 32 KiB per batch, where one watcher gets up to 64 KiB.
  const ws = [];
  for (let i = 0; i < 32; i++) ws.push(await watcher());
  const a = await connectHttp(srv.url);
  try {
    const r = await call(a, 'run', { code: 'import sys\nfor i in range(20): sys.stdout.write("y" * 100_000)\nsys.stdout.flush()' });
    assert.equal(r.isError, false);
    for (const b of ws) {
      await until(() => b.events.some((x) => x.type === 'run_ended'), ms(10000), 'flood end');
      const outs = b.events.filter((x) => x.type === 'run_output' && x.outputs.some((it) => it.text?.startsWith('y')));
      let got = 0, dropped = 0, biggest = 0;
      for (const o of outs) {
        const n = o.outputs.reduce((k, it) => k + (it.text?.length ?? 0), 0);
        biggest = Math.max(biggest, n);
        got += n;
        dropped += o.dropped?.bytes ?? 0;
      }
      assert.ok(biggest <= 32 * 1024, `a batch for one of 32 watchers carries at most 32 KiB (${biggest})`);
      assert.ok(biggest > 4 * 1024, `batches are not cut below their share (${biggest})`);
      assert.equal(got + dropped, 2_000_000, 'every byte is either sent or counted');
    }
  } finally {
    await a.close();
    // Their sessions end (DELETE), so the tests after this one are watched by as few as before.
    for (const b of ws) { await b.transport.terminateSession().catch(() => {}); await b.close(); }
  }
});

test('a session that did not subscribe gets no rat/event', async () => {
  const quiet = await connectHttp(srv.url);
  const seen = [];
  quiet.client.fallbackNotificationHandler = async (n) => { seen.push(n.method); };
  try {
    await call(quiet, 'run', { code: 'print("hello")' });
    assert.ok(!seen.includes('rat/event'), seen.join(','));
  } finally {
    await quiet.close();
  }
});

// Under valgrind rat-py is too slow to make 4 MiB of events in the flood's 8 s.
test('a watcher that stops reading loses events, never server memory; the seq gap marks the loss',
  { skip: WRAPPED ? 'valgrind cannot produce the flood in time' : false }, async () => {
  const http = await import('node:http');
  const { readFileSync } = await import('node:fs');
  const u = new URL(srv.url);
  const post = (body, sid) => new Promise((resolve, reject) => {
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    if (sid) headers['Mcp-Session-Id'] = sid;
    const req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers }, (res) => {
      let d = '';
      res.on('data', (c) => { d += c; });
      res.on('end', () => resolve({ sid: res.headers['mcp-session-id'], body: d }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
  const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'slow', version: '1' } } });
  const sid = init.sid;
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sid);
  await post({ jsonrpc: '2.0', id: 2, method: 'resources/subscribe', params: { uri: 'rat://events' } }, sid);
  // The watcher's stream, paused: nothing is read from it.
  let got = '';
  const stream = await new Promise((resolve, reject) => {
    const req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'GET',
      headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sid } }, (res) => { res.pause(); resolve(res); });
    req.on('error', reject);
    req.end();
  });
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${srv.proc.pid}/status`, 'utf8'))[1]) * 1024;
  const a = await connectHttp(srv.url);
  try {
    const before = rss();
    // About 10 MB of run_output events (64 KiB per 50 ms for 8 s, from 64 KiB written every 40 ms):
    // more than the 4 MiB the transport keeps.
    await call(a, 'run', { code: 'import sys, time\nt = time.time()\nwhile time.time() - t < 8:\n    sys.stdout.write("z" * 65536)\n    sys.stdout.flush()\n    time.sleep(0.04)' });
    const grew = rss() - before;
    // Sanitizers keep freed memory in quarantine: a looser bound there.
    const limit = (process.env.RAT_PY_SANITIZED ? 512 : 64) << 20;
    assert.ok(grew < limit, `rat-py grew ${grew} bytes`);
    assert.match(srv.stderr(), /client is not reading; dropping notifications/, 'the transport dropped');
    stream.on('data', (c) => { got += c; });
    stream.resume();
    const seqs = () => got.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)))
      .filter((m) => m.method === 'rat/event').map((m) => m.params.seq);
    // The backlog (up to 4 MiB) drains first, and what rat-py sends while it
    // is still full is dropped too, by design: on a loaded machine a run right
    // after resume() came before the backlog was read (a CI failure). So run
    // again until one whole run reaches the watcher.
    let runs = 0;
    await until(async () => {
      runs++;
      await call(a, 'run', { code: `print("after${runs}")` });
      await new Promise((r) => setTimeout(r, 300));
      return got.includes('"type":"run_ended"') && got.includes(`after${runs}`);
    }, ms(20000), 'the watcher reads again');
    const s = seqs();
    const gaps = s.slice(1).filter((v, i) => v !== s[i] + 1).length;
    assert.ok(gaps >= 1, `a gap in seq marks the loss (${s.length} events read)`);
    console.log(`# slow watcher: rat-py RSS +${(grew / 1048576).toFixed(1)} MiB, ${s.length} events read, first gap after seq ${s.find((v, i) => s[i + 1] !== undefined && s[i + 1] !== v + 1)}`);
  } finally {
    stream.destroy();
    await a.close();
  }
});

test('rat://events with nobody subscribed: a finished run is not "running" (status says idle)', async () => {
  const h = await connect();
  try {
    const read = async (uri) => JSON.parse((await h.client.readResource({ uri })).contents[0].text);
    const r = await call(h, 'run', { code: 'x = 1' });
    assert.equal(r.isError, false);
    const ev = await read('rat://events');
    assert.equal(ev.running, undefined, JSON.stringify(ev));
    assert.equal((await read('rat://status')).state, 'idle');
    // While a run is in progress it is named, and forgotten once it ends.
    const pending = call(h, 'run', { code: 'import time\ntime.sleep(1)' });
    await until(async () => (await read('rat://events')).running !== undefined, ms(10000), 'the run named');
    await pending;
    assert.equal((await read('rat://events')).running, undefined);
  } finally {
    await h.close();
  }
});
