// Hostile MCP input over stdio: 10 000 generated malformed messages (wrong
// types everywhere, huge and negative ids, 10 000-level nesting, a 100 MB
// line, invalid UTF-8, NUL bytes, unknown methods, calls before initialize, a
// second initialize, responses to requests never sent), in batches. Every
// request must get the right JSON-RPC error (or tool error, or nothing for
// notifications and responses), in order, as valid UTF-8 JSON on one line;
// between batches a ping is answered within 100 ms; peak RSS (VmHWM) stays
// bounded. The generator is seeded: a failure names the message and is
// reproducible.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { ratCommand, scratch, checkSanitizers, ms } from './lib.mjs';

const TOTAL = 10_000;
const BATCH = 100;
const MAX_LINE = 16 * 1024 * 1024; // TRANSPORT_STDIO_MAX_LINE, documented in the README
// Peak RSS bound: the discarded 100 MB line may cost one 16 MiB line buffer
// (allocated as 32 MiB, touched up to 16); a sanitizer build has shadow
// memory and a quarantine on top.
const RSS_LIMIT_MB = process.env.RAT_PY_SANITIZED ? 512 : 64;

/** mulberry32: a small seeded PRNG, so every run sends the same messages. */
function prng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = prng(20261129);
const pick = (a) => a[Math.floor(rand() * a.length)];
const int = (n) => Math.floor(rand() * n);
let seq = 0;

// Ids rat-py must echo byte for byte: integers as written (also beyond
// JavaScript's safe range, also negative) and strings.
function anId() {
  seq++;
  return pick([
    () => String(seq),
    () => String(-seq),
    () => '9223372036854775807',
    () => '-9223372036854775807',
    () => '9007199254740993',
    () => '0',
    () => JSON.stringify(`s-${seq}`),
    () => JSON.stringify(`é日-${seq}`),
    () => JSON.stringify('x'.repeat(10_000 + int(1000)) + seq),
  ])();
}

const req = (id, method, params) =>
  `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)}${params === undefined ? '' : `,"params":${params}`}}`;
const err = (code, id = 'null') => ({ kind: 'error', code, id });

/** One malformed message: { line (string or Buffer), expect, what }. */
function hostile(initialized) {
  const id = anId();
  const cases = [
    // Not JSON at all: -32700, id null.
    () => { const full = req(id, 'ping'); return { line: full.slice(0, 1 + int(full.length - 2)), expect: err(-32700), what: 'truncated' }; },
    () => ({ line: req(id, 'ping') + pick([' x', '}', ',', ' ' + req(id, 'ping')]), expect: err(-32700), what: 'trailing data' }),
    () => ({ line: pick(['hello', 'undefined', '{"jsonrpc":"2.0",}', '{,}', '{"a" 1}', '01', '[1,]', 'nul']), expect: err(-32700), what: 'garbage' }),
    () => ({ line: '['.repeat(10_000) + ']'.repeat(10_000), expect: err(-32700), what: '10 000-level array' }),
    () => ({ line: '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000), expect: err(-32700), what: '10 000-level object' }),
    () => {
      const bad = pick([[0xff], [0xc0, 0x80], [0x80], [0xe6, 0x97], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]]);
      const line = Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"x":"a`), Buffer.from(bad), Buffer.from('"}}')]);
      return { line, expect: err(-32700), what: 'invalid UTF-8' };
    },
    () => {
      const s = req(id, 'ping');
      const at = 1 + int(s.length - 1);
      return { line: Buffer.concat([Buffer.from(s.slice(0, at)), Buffer.from([0]), Buffer.from(s.slice(at))]), expect: err(-32700), what: 'NUL byte' };
    },
    () => ({ line: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(req(id, 'ping'))]), expect: err(-32700), what: 'BOM' }),
    // JSON, not a request: -32600 (id echoed only when it is usable).
    () => ({ line: pick(['42', '"str"', 'true', 'null', '[]', `[${req(id, 'ping')}]`, '{}']), expect: err(-32600), what: 'not an object / batch' }),
    () => ({ line: `{"jsonrpc":${pick(['"1.0"', '2.0', 'null', '"2.0 "'])},"id":${id},"method":"ping"}`, expect: err(-32600, id), what: 'bad jsonrpc' }),
    () => ({ line: `{"id":${id},"method":"ping"}`, expect: err(-32600, id), what: 'no jsonrpc' }),
    () => ({ line: `{"jsonrpc":"2.0","id":${pick(['null', 'true', '1.5', '{}', '[]', '1e400', '-0.5', '[1]', 'false'])},"method":"ping"}`, expect: err(-32600), what: 'bad id type' }),
    () => ({ line: `{"jsonrpc":"2.0","id":${pick(['18446744073709551616', '-9223372036854775809', '99999999999999999999999'])},"method":"ping"}`, expect: err(-32600), what: 'id beyond 64 bits' }),
    () => ({ line: `{"jsonrpc":"2.0","id":${id},"method":${pick(['7', 'null', '{}', '[]', 'true'])}}`, expect: err(-32600, id), what: 'bad method type' }),
    () => ({ line: req(id, 'ping', pick(['"x"', '5', 'true'])), expect: err(-32600, id), what: 'bad params type' }),
    () => ({ line: `{"jsonrpc":"2.0","id":${id}}`, expect: err(-32600, id), what: 'no method, no result' }),
    () => ({ line: `{"jsonrpc":"2.0","id":${id},"result":{},"error":{"code":1,"message":"x"}}`, expect: err(-32600, id), what: 'result and error' }),
    () => ({ line: '{"jsonrpc":"2.0","result":{}}', expect: err(-32600), what: 'response without id' }),
    () => ({ line: '{"jsonrpc":"2.0","method":"notifications/x","params":"str"}', expect: err(-32600), what: 'notification with bad params' }),
    // Unknown methods: -32601 whether initialized or not.
    () => ({ line: req(id, pick(['', 'Ping', 'rpc.discover', 'tools/call ', 'tools/', 'ping\\u0000', 'x'.repeat(10_000), 'résumé/日本', `no/such/${seq}`]).replace('\\u0000', '\u0000')), expect: err(-32601, id), what: 'unknown method' }),
    // Responses to requests never sent and notifications: no answer.
    () => ({ line: `{"jsonrpc":"2.0","id":${id},"result":${pick(['{}', '1', 'null', '"x"', '[]'])}}`, expect: { kind: 'none' }, what: 'response to nothing' }),
    () => ({ line: `{"jsonrpc":"2.0","id":${id},"error":{"code":${int(99999) - 50000},"message":"m"}}`, expect: { kind: 'none' }, what: 'error response to nothing' }),
    () => ({ line: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":${pick(['{"requestId":{}}', '{"requestId":1e999}', '{}', '[]', `{"requestId":${id}}`, '{"requestId":null,"reason":7}'])}}`, expect: { kind: 'none' }, what: 'cancel of nothing' }),
    () => ({ line: `{"jsonrpc":"2.0","method":${JSON.stringify(pick(['notifications/initialized', 'notifications/progress', 'notifications/roots/list_changed', 'x', '']))},"params":{"progress":"x"}}`, expect: { kind: 'none' }, what: 'notification' }),
    // Valid pings with odd ids: answered, id echoed.
    () => ({ line: req(id, 'ping', pick([undefined, '{}', '[]', 'null', '{"_meta":{"progressToken":[]}}'])), expect: { kind: 'result', id }, what: 'ping' }),
  ];
  const known = initialized
    ? [
      // Known methods, wrong params: -32602.
      () => ({ line: req(id, 'tools/call', pick(['{}', '{"name":5}', '{"name":null}', '{"name":["run"]}', '{"name":{}}', '{"name":"nope"}', '{"name":"run\\u0000"}', '{"name":"run","arguments":"code"}', '{"name":"ctl","arguments":[1]}', '{"name":"look","arguments":5}', '[]'])), expect: err(-32602, id), what: 'tools/call params' }),
      () => ({ line: req(id, 'tools/list', pick(['{"cursor":"abc"}', '{"cursor":5}', '[]'])), expect: err(-32602, id), what: 'tools/list params' }),
      () => ({ line: req(id, 'logging/setLevel', pick(['{}', '{"level":5}', '{"level":"loud"}', '{"level":null}', '[]'])), expect: err(-32602, id), what: 'setLevel params' }),
      // Arguments that break the tool's schema: a tool error the model can fix.
      () => ({
        line: req(id, 'tools/call', JSON.stringify(pick([
          { name: 'run', arguments: { code: 5 } },
          { name: 'run', arguments: { code: 'x', wait: -1 } },
          { name: 'run', arguments: { code: 'x', wait: 1e9 } },
          { name: 'run', arguments: { code: 'x', allow_input: 'yes' } },
          { name: 'run', arguments: { code: 'print(1)\u0000import os' } },
          { name: 'run', arguments: { code: 'x', nope: 1 } },
          { name: 'look', arguments: { cursor: -1 } },
          { name: 'look', arguments: { at: 5 } },
          { name: 'look', arguments: { code: 'x', cursor: 1.5 } },
          { name: 'look', arguments: { zzz: 1 } },
          { name: 'ctl', arguments: {} },
          { name: 'ctl', arguments: { op: 'bogus' } },
          { name: 'ctl', arguments: { op: 'reset', scope: 'x'.repeat(5000) } },
          { name: 'ctl', arguments: { op: ['status'] } },
        ]))),
        expect: { kind: 'toolError', id }, what: 'schema violation',
      }),
      () => ({ line: req(id, 'initialize', '{"protocolVersion":"2025-11-25","capabilities":{}}'), expect: err(-32600, id), what: 'second initialize' }),
    ]
    : [
      // Before initialize: known methods are refused, whatever their params.
      () => ({ line: req(id, pick(['tools/list', 'tools/call', 'logging/setLevel', 'resources/list', 'prompts/list']), pick([undefined, '{}', '{"name":"run","arguments":{"code":"1"}}'])), expect: err(-32600, id), what: 'call before initialize' }),
      () => ({ line: req(id, 'initialize', pick(['{}', '{"protocolVersion":7}', '[]', '{"protocolVersion":null}'])), expect: err(-32602, id), what: 'initialize without a version' }),
    ];
  const all = [...cases, ...known, ...known]; // known-method cases twice as often
  return pick(all)();
}

class Raw {
  constructor() {
    this.work = scratch();
    const { command, args } = ratCommand(['--cwd', this.work.dir]);
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.chunks = [];
    this.lines = [];
    this.waiters = [];
    this.stderr = '';
    this.child.stderr.on('data', (d) => { this.stderr += d; if (this.stderr.length > 1e6) this.stderr = this.stderr.slice(-5e5); });
    this.child.stdout.on('data', (d) => {
      let start = 0;
      for (let i = d.indexOf(10); i >= 0; i = d.indexOf(10, start)) {
        this.chunks.push(d.subarray(start, i));
        this.lines.push(Buffer.concat(this.chunks));
        this.chunks = [];
        start = i + 1;
      }
      if (start < d.length) this.chunks.push(d.subarray(start));
      this.waiters.splice(0).forEach((w) => w());
    });
    this.exited = new Promise((r) => this.child.on('exit', (code, signal) => r({ code, signal })));
  }

  async write(data) {
    if (!this.child.stdin.write(data)) await new Promise((r) => this.child.stdin.once('drain', r));
  }

  /** The next stdout line: strict UTF-8, one JSON-RPC 2.0 message. */
  async next(timeoutMs) {
    const t0 = Date.now();
    while (!this.lines.length) {
      if (Date.now() - t0 > timeoutMs) throw new Error(`no message from rat-py within ${timeoutMs} ms`);
      await new Promise((r) => { this.waiters.push(r); setTimeout(r, 20); });
    }
    const raw = this.lines.shift();
    const text = new TextDecoder('utf-8', { fatal: true }).decode(raw); // throws on invalid UTF-8
    const msg = JSON.parse(text);
    assert.equal(msg.jsonrpc, '2.0');
    return { text, msg };
  }

  vmHWM() {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
    return Number(m[1]) / 1024;
  }
}

/** Checks one response against what its message called for. */
function check(got, want, what) {
  const m = /^\{"jsonrpc":"2\.0","id":(.*?),"(?:result|error)":/s.exec(got.text);
  assert.ok(m, `${what}: not a response: ${got.text.slice(0, 200)}`);
  const ctx = `${what}: got ${got.text.slice(0, 300)}`;
  if (want.kind === 'error') {
    assert.equal(got.msg.error?.code, want.code, ctx);
    assert.equal(m[1], want.id, ctx);
    if (want.message) assert.match(got.msg.error.message, want.message, ctx);
  } else if (want.kind === 'result') {
    assert.deepEqual(got.msg.result, {}, ctx);
    assert.equal(m[1], want.id, ctx);
  } else {
    assert.equal(got.msg.result?.isError, true, ctx);
    assert.equal(got.msg.result.content[0].type, 'text', ctx);
    assert.equal(m[1], want.id, ctx);
  }
}

test('10 000 hostile messages: the right error for each, pings answered within 100 ms, bounded memory', async (t) => {
  const srv = new Raw();
  let sent = 0;
  let initialized = false;
  const latencies = [];
  const counts = {};
  const ping = async (label) => {
    const id = JSON.stringify(`ping-${label}`);
    const t0 = process.hrtime.bigint();
    await srv.write(req(id, 'ping') + '\n');
    const got = await srv.next(ms(10_000));
    const dt = Number(process.hrtime.bigint() - t0) / 1e6;
    check(got, { kind: 'result', id }, `ping after ${label}`);
    latencies.push(dt);
    assert.ok(dt < ms(100), `ping after ${label} answered in ${dt.toFixed(1)} ms`);
  };
  const batch = async (label, msgs) => {
    for (const m of msgs) await srv.write(typeof m.line === 'string' ? m.line + '\n' : Buffer.concat([m.line, Buffer.from('\n')]));
    for (const m of msgs) {
      counts[m.what] = (counts[m.what] ?? 0) + 1;
      if (m.expect.kind !== 'none') check(await srv.next(ms(20_000)), m.expect, `${label}: ${m.what}: ${String(m.line).slice(0, 120)}`);
    }
    sent += msgs.length;
    await ping(label); // also proves nothing answered the messages that must get no answer
  };
  try {
    // Before initialize.
    await batch('before initialize', Array.from({ length: BATCH }, () => hostile(false)));
    await srv.write(req(0, 'initialize', '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}') + '\n');
    assert.ok((await srv.next(ms(10_000))).msg.result.serverInfo);
    await srv.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    initialized = true;

    // A 100 MB line: discarded while it streams in, answered with the documented error.
    const rssBefore = srv.vmHWM();
    const big = Buffer.alloc(100 * 1024 * 1024, 'a');
    Buffer.from('{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"').copy(big);
    Buffer.from('"}}').copy(big, big.length - 3);
    await batch('a 100 MB line', [{
      line: big, what: '100 MB line',
      expect: { kind: 'error', code: -32600, id: 'null', message: new RegExp(`longer than ${MAX_LINE} bytes was discarded`) },
    }]);
    const tail = srv.lines.length; // nothing else came
    assert.equal(tail, 0);
    const rssAfterBig = srv.vmHWM();

    while (sent < TOTAL) {
      const n = Math.min(BATCH, TOTAL - sent);
      await batch(`batch ${Math.ceil(sent / BATCH)}`, Array.from({ length: n }, () => hostile(initialized)));
    }
    const peak = srv.vmHWM();
    latencies.sort((a, b) => a - b);
    t.diagnostic(`${sent} hostile messages; ping after each batch: median ${latencies[latencies.length >> 1].toFixed(2)} ms, ` +
      `max ${latencies[latencies.length - 1].toFixed(2)} ms; VmHWM ${rssBefore.toFixed(1)} MB after start, ` +
      `${rssAfterBig.toFixed(1)} MB after the 100 MB line, ${peak.toFixed(1)} MB at the end (limit ${RSS_LIMIT_MB} MB)`);
    t.diagnostic(`kinds: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    assert.equal(sent, TOTAL);
    assert.ok(peak < RSS_LIMIT_MB, `peak RSS ${peak.toFixed(1)} MB`);
  } finally {
    srv.child.stdin.end();
    const timer = setTimeout(() => srv.child.kill('SIGKILL'), ms(2000));
    const ex = await srv.exited;
    clearTimeout(timer);
    srv.work.cleanup();
    checkSanitizers(srv.stderr);
    assert.equal(ex.code, 0, `rat-py exit: ${JSON.stringify(ex)}`);
  }
});
