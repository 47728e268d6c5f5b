// JSON-RPC and MCP lifecycle over raw NDJSON: every error code, version
// negotiation, what a client may send before initialize, and that stdout
// only ever carries JSON-RPC messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import { rawServer } from './lib.mjs';

async function withServer(fn) {
  const srv = rawServer();
  try {
    await fn(srv);
  } finally {
    await srv.close();
  }
}

test('initialize: our protocol, capabilities, serverInfo, instructions', () => withServer(async (srv) => {
  srv.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
  const r = await srv.reply(1);
  assert.equal(r.result.protocolVersion, '2025-11-25');
  assert.deepEqual(Object.keys(r.result.capabilities).sort(), ['logging', 'resources', 'tools']);
  assert.deepEqual(r.result.capabilities.resources, { subscribe: true, listChanged: false });
  assert.equal(r.result.serverInfo.name, 'rat-py');
  assert.match(r.result.serverInfo.version, /^\d+\.\d+\.\d+$/);
  assert.match(r.result.instructions, /run\(code\)/);
}));

for (const v of ['2025-06-18', '2025-03-26', '2024-11-05']) {
  test(`initialize echoes the supported version ${v}`, () => withServer(async (srv) => {
    const r = await srv.initialize(v);
    assert.equal(r.result.protocolVersion, v);
  }));
}

test('an unknown protocol version gets ours', () => withServer(async (srv) => {
  const r = await srv.initialize('1999-01-01');
  assert.equal(r.result.protocolVersion, '2025-11-25');
}));

test('server/discover before initialize is -32601, so newer clients fall back', () => withServer(async (srv) => {
  srv.send({ jsonrpc: '2.0', id: 'd', method: 'server/discover', params: {} });
  const r = await srv.reply('d');
  assert.equal(r.error.code, -32601);
  const init = await srv.initialize();
  assert.ok(init.result);
}));

test('requests before initialize are refused, ping is allowed', () => withServer(async (srv) => {
  srv.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  assert.equal((await srv.reply(1)).error.code, -32600);
  srv.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
  assert.deepEqual((await srv.reply(2)).result, {});
}));

test('a second initialize is refused', () => withServer(async (srv) => {
  await srv.initialize();
  srv.send({ jsonrpc: '2.0', id: 9, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } });
  assert.equal((await srv.reply(9)).error.code, -32600);
}));

test('malformed JSON is -32700 with id null', () => withServer(async (srv) => {
  srv.send('{"jsonrpc":"2.0","id":1,"method":');
  const r = await srv.next();
  assert.equal(r.error.code, -32700);
  assert.equal(r.id, null);
}));

test('not a request object is -32600', () => withServer(async (srv) => {
  for (const bad of ['[1,2]', '42', '"x"', '{"jsonrpc":"1.0","id":1,"method":"ping"}', '{"jsonrpc":"2.0","id":null,"method":"ping"}',
    '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', '{"jsonrpc":"2.0","id":1,"method":7}', '{"jsonrpc":"2.0","id":3}']) {
    srv.send(bad);
    const r = await srv.next();
    assert.equal(r.error?.code, -32600, `for ${bad}`);
  }
}));

test('an unknown method is -32601; bad params and unknown tools are -32602', () => withServer(async (srv) => {
  await srv.initialize();
  srv.send({ jsonrpc: '2.0', id: 1, method: 'no/such' });
  assert.equal((await srv.reply(1)).error.code, -32601);
  srv.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'nope', arguments: {} } });
  const r2 = await srv.reply(2);
  assert.equal(r2.error.code, -32602);
  assert.match(r2.error.message, /Unknown tool: nope/);
  srv.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { arguments: {} } });
  assert.equal((await srv.reply(3)).error.code, -32602);
  srv.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'run', arguments: 'code' } });
  assert.equal((await srv.reply(4)).error.code, -32602);
  srv.send({ jsonrpc: '2.0', id: 5, method: 'logging/setLevel', params: { level: 'loud' } });
  assert.equal((await srv.reply(5)).error.code, -32602);
}));

test('notifications get no answer', () => withServer(async (srv) => {
  await srv.initialize();
  srv.send({ jsonrpc: '2.0', method: 'notifications/whatever' });
  srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 12345 } });
  srv.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
  const r = await srv.next();
  assert.equal(r.id, 1, 'the ping answer is the next message');
}));

test('lists for resources, templates and prompts (mcp2cli shell asks for them)', () => withServer(async (srv) => {
  await srv.initialize();
  srv.send({ jsonrpc: '2.0', id: 1, method: 'resources/list' });
  assert.deepEqual((await srv.reply(1)).result.resources.map((r) => r.uri), ['rat://status', 'rat://variables', 'rat://events'],
    'the watch resources, no assets yet');
  srv.send({ jsonrpc: '2.0', id: 2, method: 'resources/templates/list' });
  assert.deepEqual((await srv.reply(2)).result, { resourceTemplates: [] });
  srv.send({ jsonrpc: '2.0', id: 3, method: 'prompts/list' });
  assert.deepEqual((await srv.reply(3)).result, { prompts: [] });
}));

test('tools/list: the schemas mcp2cli needs (code required and a plain string)', () => withServer(async (srv) => {
  await srv.initialize();
  srv.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const { tools } = (await srv.reply(1)).result;
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.deepEqual(Object.keys(byName).sort(), ['ctl', 'look', 'run']);
  const look = byName.look.inputSchema;
  assert.equal(look.required, undefined, 'nothing required: `py look` works bare');
  assert.deepEqual([look.properties.at.type, look.properties.code.type, look.properties.cursor.type], ['string', 'string', 'integer']);
  assert.equal(byName.look.annotations.readOnlyHint, true);
  const run = byName.run.inputSchema;
  assert.equal(run.type, 'object');
  assert.deepEqual(run.required, ['code']);
  assert.equal(run.properties.code.type, 'string');
  assert.equal(run.properties.input.type, 'string');
  assert.deepEqual([run.properties.allow_input.type, run.properties.allow_input.default], ['boolean', true]);
  assert.deepEqual([run.properties.wait.type, run.properties.wait.default], ['number', 25]);
  const ctl = byName.ctl.inputSchema;
  assert.deepEqual(ctl.required, ['op']);
  assert.deepEqual(ctl.properties.op.enum, ['reset', 'cancel', 'restart', 'status', 'wait', 'output']);
  assert.deepEqual(ctl.properties.scope.enum, ['namespace', 'all']);
  assert.equal(ctl.properties.scope.default, 'namespace');
  for (const t of tools) assert.ok(t.description.length > 20, `${t.name} has a description`);
}));

// What a schema-validating client (Ajv, as the SDKs and hosts use) lets
// through must be exactly what the server takes: the server's own checks
// answer "<tool>: missing required argument …", "unknown argument …" or
// "argument '…' must …"; anything else (including a tool's own error, such as
// "no input() is waiting") means the arguments were accepted.
test('each tool accepts exactly the arguments its advertised schema allows (Ajv)', () => withServer(async (srv) => {
  await srv.initialize('2025-06-18');
  srv.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const { tools } = (await srv.reply(1)).result;
  const ajv = new Ajv({ strict: true, allErrors: true });
  const validate = Object.fromEntries(tools.map((t) => [t.name, ajv.compile(t.inputSchema)]));
  const cases = {
    run: [
      { code: 'x = 1' }, { code: 'x = 1', wait: 0.5, allow_input: false },
      { code: '', input: 'a' }, // the answer to input(): what the server asks for
      { input: 'a' }, {}, { code: 1 }, { code: 'x', wait: 5000 }, { code: 'x', wait: -1 },
      { code: 'x', allow_input: 'yes' }, { code: 'x', extra: 1 },
    ],
    look: [{}, { at: 'x' }, { code: 'ma', cursor: 2 }, { cursor: 1.5 }, { at: 5 }, { nope: true }],
    ctl: [{ op: 'status' }, { op: 'status', scope: 'all' }, {}, { op: 'nope' }, { op: 'status', scope: 'x' }],
  };
  let id = 10;
  for (const [tool, list] of Object.entries(cases)) {
    for (const args of list) {
      srv.send({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: tool, arguments: args } });
      const r = await srv.reply(id);
      const text = r.result.content[0].text;
      const refused = r.result.isError === true &&
        new RegExp(`^${tool}: (missing required argument|unknown argument|argument ')`).test(text);
      // The one leniency beyond nulls: run {input} without code counts as
      // code "" (vscode-rat answers input() that way).
      const lenient = tool === 'run' && 'input' in args && !('code' in args) && typeof args.input === 'string';
      assert.equal(!refused, validate[tool](args) || lenient,
        `${tool} ${JSON.stringify(args)}: server ${refused ? 'refuses' : 'accepts'} (${text.split('\n')[0]}), ` +
        `Ajv ${JSON.stringify(validate[tool].errors)}`);
    }
  }
  // The texts that ask for an answer name a call the schema allows.
  srv.send({ jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'run', arguments: { code: 'v = input("V: ")' } } });
  const ask = (await srv.reply(99)).result.content[0].text;
  const m = /answer with run\(code="", input="\.\.\."\)/.exec(ask);
  assert.ok(m, ask);
  assert.ok(validate.run({ code: '', input: '...' }));
}));

test('string ids and large integer ids are echoed exactly', () => withServer(async (srv) => {
  srv.send({ jsonrpc: '2.0', id: 'abc', method: 'ping' });
  assert.equal((await srv.reply('abc')).id, 'abc');
  srv.send('{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}');
  const line = await new Promise((r) => { const t = setInterval(() => { if (srv.lines.length) { clearInterval(t); r(srv.lines.shift()); } }, 5); });
  assert.match(line, /"id":9007199254740991/);
}));

test('an over-long line is answered with an error and the server keeps serving', () => withServer(async (srv) => {
  await srv.initialize();
  const big = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + 'a'.repeat(17 * 1024 * 1024) + '"}}';
  srv.send(big);
  const r = await srv.next();
  assert.equal(r.error.code, -32600);
  assert.match(r.error.message, /longer than/);
  srv.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
  assert.deepEqual((await srv.reply(2)).result, {});
}));

/** Throws unless m is one JSON-RPC 2.0 message from a server: a response
 * (id, exactly one of an object result or an error {code: integer, message:
 * string}), a notification (method, params an object, no id) or a request. */
function checkJsonRpc(m) {
  assert.equal(typeof m, 'object');
  assert.ok(m && !Array.isArray(m), 'an object, not a batch');
  assert.equal(m.jsonrpc, '2.0');
  const keys = Object.keys(m);
  if ('method' in m) {
    assert.equal(typeof m.method, 'string');
    if ('params' in m) assert.ok(m.params && typeof m.params === 'object' && !Array.isArray(m.params), 'params is an object');
    if ('id' in m) assert.ok(typeof m.id === 'string' || Number.isInteger(m.id), 'a request id is a string or an integer');
    for (const k of keys) assert.ok(['jsonrpc', 'id', 'method', 'params'].includes(k), `unexpected key ${k}`);
    return m.id === undefined ? 'notification' : 'request';
  }
  assert.ok('id' in m, 'a response has an id');
  assert.ok(('result' in m) !== ('error' in m), 'exactly one of result and error');
  for (const k of keys) assert.ok(['jsonrpc', 'id', 'result', 'error'].includes(k), `unexpected key ${k}`);
  if ('result' in m) {
    assert.ok(typeof m.id === 'string' || Number.isInteger(m.id));
    assert.ok(m.result && typeof m.result === 'object' && !Array.isArray(m.result), 'result is an object');
  } else {
    assert.ok(m.id === null || typeof m.id === 'string' || Number.isInteger(m.id));
    assert.ok(Number.isInteger(m.error.code), 'error.code is an integer');
    assert.equal(typeof m.error.message, 'string');
  }
  return 'response';
}

test('every stdout line is one JSON-RPC 2.0 message, even with noisy kernel output', () => withServer(async (srv) => {
  await srv.initialize('2025-06-18');
  srv.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run', _meta: { progressToken: 'p' }, arguments: { code: 'import os, sys\nos.write(1, b"raw fd1\\n"); os.write(2, b"raw fd2\\n")\nprint("x"); print("y", file=sys.stderr)' } } });
  srv.send('not json');
  srv.send({ jsonrpc: '2.0', id: 2, method: 'nope' });
  srv.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
  const kinds = { response: [], notification: [], request: [] };
  const seen = new Set();
  // srv.next() fails on a line that is not JSON; each message is checked.
  while (!(seen.has(1) && seen.has(2) && seen.has(3) && seen.has(null))) {
    const m = await srv.next();
    const kind = checkJsonRpc(m);
    kinds[kind].push(m);
    if (kind === 'response') seen.add(m.id);
  }
  const byId = Object.fromEntries(kinds.response.map((m) => [m.id, m]));
  // ipykernel captures its fds too: the raw writes come back as output
  // (interleaved with x and y in any order), inside messages.
  assert.match(byId[1].result.content[0].text, /^[^]*x[^]*\n\n✓ \d+ms$/);
  assert.equal(byId[null].error.code, -32700);
  assert.equal(byId[2].error.code, -32601);
  assert.deepEqual(byId[3].result, {});
  assert.equal(kinds.request.length, 0);
  // rat/output is vscode-rat's alone (clientInfo.name rat-vscode): a generic
  // client gets each batch once, as notifications/message.
  for (const n of kinds.notification) assert.ok(['notifications/message', 'notifications/progress'].includes(n.method), n.method);
  assert.ok(kinds.notification.some((n) => n.method === 'notifications/message' && /x/.test(n.params.data)), 'stdout streamed');
  assert.ok(kinds.notification.some((n) => n.method === 'notifications/progress' && n.params.progressToken === 'p'), 'progress');
  assert.equal(srv.lines.length, 0);
}));
