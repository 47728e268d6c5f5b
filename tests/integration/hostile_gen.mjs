// The hostile MCP message generator shared by hostile.test.mjs (stdio) and
// hostile_http.test.mjs (Streamable HTTP): seeded, so a failure names the
// message and is reproducible, and transport-neutral: each message says what
// the MCP layer must answer, and each test maps that onto its transport
// (a line on stdout; an HTTP status and body).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

/** mulberry32: a small seeded PRNG, so every run sends the same messages. */
function prng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One request line (no newline); id is raw JSON text, params raw JSON or absent. */
export const req = (id, method, params) =>
  `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(method)}${params === undefined ? '' : `,"params":${params}`}}`;

/**
 * Expected answers. `err` is a JSON-RPC error from the MCP layer (a method
 * that is unknown, refused or given wrong params); `bad` is one the JSON-RPC
 * classification gives to a message that is not a valid JSON-RPC message at
 * all (parse errors, wrong member types), which HTTP answers before any
 * session or method is looked at. id is the raw JSON text to echo.
 */
const err = (code, id = 'null') => ({ kind: 'error', code, id });
const bad = (code, id = 'null') => ({ kind: 'error', code, id, framing: true });

/**
 * A seeded stream of malformed messages. next(initialized) returns
 * { line (string or Buffer, no newline), expect, what }; expect.kind is
 * 'error' (code, id, framing), 'result' (a ping: {} with the id), 'toolError'
 * (a tools/call result with isError) or 'none' (notifications and responses:
 * nothing is answered).
 */
export function hostileGenerator(seed = 20261129) {
  const rand = prng(seed);
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

  function next(initialized) {
    const id = anId();
    const cases = [
      // Not JSON at all: -32700, id null.
      () => { const full = req(id, 'ping'); return { line: full.slice(0, 1 + int(full.length - 2)), expect: bad(-32700), what: 'truncated' }; },
      () => ({ line: req(id, 'ping') + pick([' x', '}', ',', ' ' + req(id, 'ping')]), expect: bad(-32700), what: 'trailing data' }),
      () => ({ line: pick(['hello', 'undefined', '{"jsonrpc":"2.0",}', '{,}', '{"a" 1}', '01', '[1,]', 'nul']), expect: bad(-32700), what: 'garbage' }),
      () => ({ line: '['.repeat(10_000) + ']'.repeat(10_000), expect: bad(-32700), what: '10 000-level array' }),
      () => ({ line: '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000), expect: bad(-32700), what: '10 000-level object' }),
      () => {
        const b = pick([[0xff], [0xc0, 0x80], [0x80], [0xe6, 0x97], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]]);
        const line = Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"x":"a`), Buffer.from(b), Buffer.from('"}}')]);
        return { line, expect: bad(-32700), what: 'invalid UTF-8' };
      },
      () => {
        const s = req(id, 'ping');
        const at = 1 + int(s.length - 1);
        return { line: Buffer.concat([Buffer.from(s.slice(0, at)), Buffer.from([0]), Buffer.from(s.slice(at))]), expect: bad(-32700), what: 'NUL byte' };
      },
      () => ({ line: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(req(id, 'ping'))]), expect: bad(-32700), what: 'BOM' }),
      // JSON, not a request: -32600 (id echoed only when it is usable).
      () => ({ line: pick(['42', '"str"', 'true', 'null', '[]', `[${req(id, 'ping')}]`, '{}']), expect: bad(-32600), what: 'not an object / batch' }),
      () => ({ line: `{"jsonrpc":${pick(['"1.0"', '2.0', 'null', '"2.0 "'])},"id":${id},"method":"ping"}`, expect: bad(-32600, id), what: 'bad jsonrpc' }),
      () => ({ line: `{"id":${id},"method":"ping"}`, expect: bad(-32600, id), what: 'no jsonrpc' }),
      () => ({ line: `{"jsonrpc":"2.0","id":${pick(['null', 'true', '1.5', '{}', '[]', '1e400', '-0.5', '[1]', 'false'])},"method":"ping"}`, expect: bad(-32600), what: 'bad id type' }),
      () => ({ line: `{"jsonrpc":"2.0","id":${pick(['18446744073709551616', '-9223372036854775809', '99999999999999999999999'])},"method":"ping"}`, expect: bad(-32600), what: 'id beyond 64 bits' }),
      () => ({ line: `{"jsonrpc":"2.0","id":${id},"method":${pick(['7', 'null', '{}', '[]', 'true'])}}`, expect: bad(-32600, id), what: 'bad method type' }),
      () => ({ line: req(id, 'ping', pick(['"x"', '5', 'true'])), expect: bad(-32600, id), what: 'bad params type' }),
      () => ({ line: `{"jsonrpc":"2.0","id":${id}}`, expect: bad(-32600, id), what: 'no method, no result' }),
      () => ({ line: `{"jsonrpc":"2.0","id":${id},"result":{},"error":{"code":1,"message":"x"}}`, expect: bad(-32600, id), what: 'result and error' }),
      () => ({ line: '{"jsonrpc":"2.0","result":{}}', expect: bad(-32600), what: 'response without id' }),
      () => ({ line: '{"jsonrpc":"2.0","method":"notifications/x","params":"str"}', expect: bad(-32600), what: 'notification with bad params' }),
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

  return { next };
}

/**
 * Decodes one message as rat-py wrote it: strict UTF-8 (throws otherwise),
 * one JSON-RPC 2.0 message. Returns { text, msg }.
 */
export function decodeMessage(raw) {
  const text = typeof raw === 'string' ? raw : new TextDecoder('utf-8', { fatal: true }).decode(raw);
  const msg = JSON.parse(text);
  assert.equal(msg.jsonrpc, '2.0');
  return { text, msg };
}

/**
 * Checks one response ({ text, msg } from decodeMessage) against what its
 * message called for; the id is compared as written, byte for byte.
 */
export function checkResponse(got, want, what) {
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

/** Peak RSS (VmHWM) of a process, in MB. */
export function vmHWM(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]) / 1024;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * Pings judged against figures taken in the same run, not against a
 * wall-clock constant: a loaded machine (CI, a user's laptop, the 2-core
 * machine the suite is developed on) slows every ping, and a fixed 100 ms
 * once failed at 104 ms with nothing wrong. idle: pings on the idle server
 * before any batch; after: the ping right after each batch; control: a
 * second ping right after that one, when nothing of the batch can be left,
 * so that it carries the machine's load of that moment and nothing else.
 * Work a batch leaves behind shows up as after ≫ control, batch after
 * batch: the median ping after a batch may be at most 4× the median control
 * plus the idle figure. A batch that blocks the loop shows up in one ping:
 * none may take more than one second (×SLOWDOWN under valgrind: slow) plus
 * 10× its own control. Returns a one-line summary for t.diagnostic.
 */
export function checkPingLatencies({ idle, after, control }, slow = 1) {
  assert.equal(after.length, control.length);
  const idleMs = median(idle);
  const bound = 4 * median(control.map((c) => c.dt)) + idleMs;
  const med = median(after.map((a) => a.dt));
  after.forEach((a, i) => {
    const limit = 1000 * slow + 10 * control[i].dt;
    assert.ok(a.dt < limit, `ping after ${a.label} answered in ${a.dt.toFixed(1)} ms (its control ping: ` +
      `${control[i].dt.toFixed(1)} ms; at most ${limit.toFixed(0)} ms)`);
  });
  assert.ok(med <= bound, `the median ping after a batch took ${med.toFixed(2)} ms, more than 4× the median control ` +
    `ping + the idle figure (${bound.toFixed(2)} ms): the batches leave work behind`);
  const worst = after.reduce((w, a) => (a.dt > w.dt ? a : w));
  return `ping after each batch: median ${med.toFixed(2)} ms (bound ${bound.toFixed(2)}: 4× the median control ` +
    `${median(control.map((c) => c.dt)).toFixed(2)} ms + idle ${idleMs.toFixed(2)} ms), max ${worst.dt.toFixed(2)} ms (after ${worst.label})`;
}
