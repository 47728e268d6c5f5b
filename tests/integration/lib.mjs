// Shared helpers for the integration tests: a real MCP client (the official
// TypeScript SDK) driving the real rat-py binary, which drives a real
// ipykernel. Nothing here fakes either side.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ListRootsRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

/** Throws when a sanitizer (ASan, LSan, UBSan) reported on rat-py's stderr. */
export function checkSanitizers(stderr, who = 'rat-py') {
  const m = /(ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:)[^\n]*/.exec(stderr);
  if (m) throw new Error(`${who}: sanitizer report: ${m[0]}\n${stderr.slice(0, 4000)}`);
}

export const RAT = process.env.RAT_PY || path.resolve(new URL('.', import.meta.url).pathname, '../../build/rat-py');

/**
 * RAT_PY_WRAPPER runs rat-py under another program, e.g. valgrind: a command
 * and its options, split on spaces, put in front of rat-py's own argv (the
 * process keeps rat-py's pid: valgrind runs it in place). A wrapped rat-py is
 * slower, not different, so the timing bounds of the tests that run wrapped
 * are multiplied by RAT_PY_SLOWDOWN (default 10) through ms(); unwrapped,
 * ms(n) is n and every bound stays as tight as written.
 */
const WRAPPER = (process.env.RAT_PY_WRAPPER ?? '').split(/\s+/).filter(Boolean);
export const WRAPPED = WRAPPER.length > 0;
export const SLOWDOWN = WRAPPED ? Number(process.env.RAT_PY_SLOWDOWN || 10) : 1;
export const ms = (n) => n * SLOWDOWN;

/**
 * A bound for "promptly": n ms (what a quiet machine meets; scaled by ms()
 * like every bound) plus room for a loaded one (doc/tests.md "Under load").
 * On a 2-core machine shared with other builds, with and without a busy
 * loop on each core, a stdin-EOF or SIGTERM exit (about 100-200 ms when
 * quiet) took 70-870 ms, and PID 1 reaped an orphaned kernel 1.1-2.0 s
 * after its death: scheduling delays add up across the processes a step
 * wakes. 1.5 s of room still fails what such a bound is there to catch (a
 * hang, a step waiting out the running code, a timeout taken instead of the
 * prompt path: each several seconds or more).
 */
export const LOAD_ROOM_MS = 1500;
export const prompt = (n) => ms(n) + ms(LOAD_ROOM_MS);

/**
 * The command and argv that start rat-py (or bin, e.g. one of its family
 * names) with these arguments, wrapped or not.
 */
export function ratCommand(args, bin = RAT) {
  return WRAPPED ? { command: WRAPPER[0], args: [...WRAPPER.slice(1), bin, ...args] } : { command: bin, args };
}

/** A fresh scratch directory used as the kernel's cwd (assets land there). */
export function scratch() {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-test-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The client capabilities and request handlers of opts: opts.elicit, a
 * handler for elicitation/create; opts.roots, a function returning the
 * roots ([{uri, name?}]) each time the server asks roots/list (declares
 * roots with listChanged; opts.rootsAsked counts the questions).
 */
function clientOf(name, opts) {
  const capabilities = {};
  if (opts.elicit) capabilities.elicitation = {};
  if (opts.roots) capabilities.roots = { listChanged: true };
  if (opts.capabilities) Object.assign(capabilities, opts.capabilities);
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  if (opts.elicit) client.setRequestHandler(ElicitRequestSchema, opts.elicit);
  if (opts.roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      opts.rootsAsked = (opts.rootsAsked ?? 0) + 1;
      return { roots: await opts.roots() };
    });
  }
  return client;
}

/**
 * Starts rat-py through the SDK's stdio transport and completes initialize.
 * opts.elicit, opts.roots: see clientOf. opts.cwd: the directory rat-py is
 * started in, with no --cwd (as hosts start it); otherwise --cwd is a
 * fresh scratch directory. opts.capabilities: more client capabilities
 * (e.g. extensions).
 */
export async function connect(opts = {}) {
  const work = scratch();
  const where = opts.cwd ? [] : ['--cwd', work.dir];
  const { command, args } = ratCommand([...where, ...(opts.args ?? [])], opts.command ?? RAT);
  const transport = new StdioClientTransport({
    command,
    args,
    env: { ...process.env, ...(opts.env ?? {}) },
    stderr: 'pipe',
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
  });
  const client = clientOf('rat-py-tests', opts);
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push({ ...n.params, at: Date.now() }));
  let stderr = '';
  transport.stderr.on('data', (d) => { stderr += d; if (process.env.RAT_TEST_STDERR) process.stderr.write(d); });
  await client.connect(transport);
  const h = {
    client, transport, logs, dir: work.dir,
    stderr: () => stderr,
    pid: () => transport.pid,
    async close() {
      await client.close().catch(() => {});
      work.cleanup();
      checkSanitizers(stderr);
    },
  };
  return h;
}

/** Calls a tool and returns { text, isError, result }. */
export async function call(h, name, args, options = {}) {
  const result = await h.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000, ...options });
  if (result.content.length !== 1 || result.content[0].type !== 'text')
    throw new Error(`expected one text item, got ${JSON.stringify(result.content)}`);
  return { text: result.content[0].text, isError: result.isError === true, result };
}

export const run = (h, code, extra = {}, options = {}) => call(h, 'run', { code, ...extra }, options);
export const ctl = (h, op, extra = {}) => call(h, 'ctl', { op, ...extra });

/** The kernel's pid, read from ctl status. */
export async function kernelPid(h) {
  const { text } = await ctl(h, 'status');
  const m = /pid (\d+)/.exec(text);
  if (!m) throw new Error(`no pid in status: ${text}`);
  return Number(m[1]);
}

export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether pid runs no more: gone, or a zombie (dead, waiting to be reaped
 * by its parent, or by PID 1 once its parent is gone; a slow init takes
 * seconds under load, and that is not the process running on).
 */
export function dead(pid) {
  if (!alive(pid)) return true;
  try {
    return /^[ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, ''));
  } catch {
    return true;
  }
}

/** Polls until fn() is truthy or ms elapse; returns the elapsed ms or throws. */
export async function until(fn, ms, what) {
  const t0 = Date.now();
  for (;;) {
    if (await fn()) return Date.now() - t0;
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A raw NDJSON client over pipes, for what the SDK hides: exact bytes,
 * protocol errors, exit timing. Every stdout line must be one JSON-RPC
 * message; anything else fails the test that reads it. opts.cwd: started
 * there with no --cwd.
 */
export function rawServer(args = [], env = {}, opts = {}) {
  const work = scratch();
  const cmd = ratCommand([...(opts.cwd ? [] : ['--cwd', work.dir]), ...args]);
  const child = spawn(cmd.command, cmd.args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'],
    ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  let buf = '';
  const lines = [];
  const waiters = [];
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      waiters.splice(0).forEach((w) => w());
    }
  });
  const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal, at: Date.now() })));
  const srv = {
    child, dir: work.dir, lines, exited,
    stderr: () => stderr,
    send(obj) { child.stdin.write((typeof obj === 'string' ? obj : JSON.stringify(obj)) + '\n'); },
    /** Next stdout line parsed as JSON (throws if it is not JSON). */
    async next(ms = 60_000) {
      const t0 = Date.now();
      while (lines.length === 0) {
        if (Date.now() - t0 > ms) throw new Error('no message from rat-py');
        await new Promise((r) => { waiters.push(r); setTimeout(r, 50); });
      }
      const line = lines.shift();
      return JSON.parse(line);
    },
    /** Next message with this id (notifications before it are returned in .before). */
    async reply(id, ms = 60_000) {
      const before = [];
      for (;;) {
        const m = await srv.next(ms);
        if (m.id === id && !m.method) return Object.assign(m, { before });
        before.push(m);
      }
    },
    async initialize(version = '2024-11-05', capabilities = {}) {
      srv.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: version, capabilities, clientInfo: { name: 'raw', version: '1' } } });
      const r = await srv.reply(0);
      srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return r;
    },
    kill(sig = 'SIGKILL') { try { child.kill(sig); } catch { /* gone */ } },
    async close() {
      try { child.stdin.end(); } catch { /* gone */ }
      const t = setTimeout(() => srv.kill(), ms(2000));
      await exited;
      clearTimeout(t);
      work.cleanup();
      checkSanitizers(stderr);
    },
  };
  return srv;
}

/**
 * Starts `rat-py --http --port 0` (through RAT_PY_WRAPPER when set, like every
 * other rat-py the tests start) and waits for the URL it prints on stderr.
 * Returns { url, base, port, dir, proc, stderr(), stop() }; stop() sends
 * SIGTERM and fails unless rat-py exits with status 0 (under valgrind, 99
 * means it found errors or leaks). opts.cwd: started there with no --cwd.
 */
export async function startHttp(args = [], env = {}, opts = {}) {
  const work = scratch();
  let cmd = ratCommand(['--http', '--port', '0', ...(opts.cwd ? [] : ['--cwd', work.dir]), ...args]);
  // opts.nofile: the server's descriptor limit (soft and hard), which sizes
  // its connection table (server.c: the limit less 256 spare).
  if (opts.nofile) cmd = { command: '/bin/sh', args: ['-c', `ulimit -n ${opts.nofile} && exec "$0" "$@"`, cmd.command, ...cmd.args] };
  const proc = spawn(cmd.command, cmd.args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  let stderr = '';
  let stdout = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  const url = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`rat-py --http did not print its URL: ${stderr}`)), ms(15000));
    proc.stderr.on('data', (d) => {
      stderr += d;
      if (process.env.RAT_TEST_STDERR) process.stderr.write(d);
      const m = /serving MCP at (https?:\/\/\S+\/mcp)/.exec(stderr);
      if (m) { clearTimeout(t); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(t); reject(new Error(`rat-py --http exited (${code}): ${stderr}`)); });
  });
  const exited = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
  const base = url.replace(/\/mcp$/, '');
  return {
    url, base, port: Number(/:(\d+)\/mcp$/.exec(url)[1]), dir: work.dir, proc, exited,
    stderr: () => stderr,
    stdout: () => stdout,
    async stop() {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), ms(3000));
      const ex = await exited;
      clearTimeout(t);
      work.cleanup();
      checkSanitizers(stderr);
      if (ex.code !== 0) throw new Error(`rat-py --http exit: ${JSON.stringify(ex)}\n${stderr.slice(-4000)}`);
      return ex;
    },
  };
}

/** An SDK client over Streamable HTTP. opts: headers; elicit, roots (see clientOf). */
export async function connectHttp(url, opts = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: opts.headers ?? {} } });
  const client = clientOf('rat-py-http-tests', opts);
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push({ ...n.params, at: Date.now() }));
  await client.connect(transport);
  return { client, transport, logs, async close() { await client.close().catch(() => {}); } };
}
