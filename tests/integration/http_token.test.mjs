// Tokens and who can read them (issue 30, item 2; doc/security.md "Secrets").
// A token given on the command line is overwritten in rat-py's argv, so
// /proc/PID/cmdline (readable by every local user) and ps no longer show
// it, with a warning that says the safe ways: RAT_PY_TOKEN /
// JUPYTER_GATEWAY_AUTH_TOKEN, or --token-file / --gateway-token-file (read
// once). The notebook URL with ?token= goes only to a terminal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startHttp, connectHttp, call, ratCommand, scratch, until, ms, WRAPPED, RAT } from './lib.mjs';

const JSON_HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
const status = async (base, token) => (await fetch(`${base}/mcp`, { method: 'POST',
  headers: { ...JSON_HDRS, ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: init })).status;
const cmdline = (pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8');
// Under valgrind /proc shows valgrind's own copy of the command line, which
// rat-py cannot reach.
const NOT_WRAPPED = WRAPPED ? 'RAT_PY_WRAPPER: /proc/PID/cmdline is the wrapper\'s' : false;

function tempDir() {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-token-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

test('--token SECRET: gone from /proc/PID/cmdline once rat-py runs, with a warning naming the safe ways; it still works', { skip: NOT_WRAPPED }, async () => {
  const secret = 'argv-secret-0123456789abcdef';
  const s = await startHttp(['--token', secret]);
  try {
    const cl = cmdline(s.proc.pid);
    assert.ok(!cl.includes(secret), cl);
    assert.match(cl, /--token\0\*{28}\0/);
    assert.match(s.stderr(), /warning: --token on the command line can be read by other users of this machine \(ps, \/proc\/PID\/cmdline\) until rat-py has started, and stays in your shell history; give it in RAT_PY_TOKEN or with --token-file FILE instead/);
    assert.ok(!s.stderr().includes(secret), 'nor on stderr (a pipe: the notebook URL goes without it)');
    assert.equal(await status(s.base), 401);
    assert.equal(await status(s.base, secret), 200);
  } finally {
    await s.stop();
  }
  // --token=SECRET too.
  const s2 = await startHttp([`--token=${secret}`]);
  try {
    assert.ok(!cmdline(s2.proc.pid).includes(secret));
    assert.equal(await status(s2.base, secret), 200);
  } finally {
    await s2.stop();
  }
});

test('--gateway-token T: gone from /proc/PID/cmdline too', { skip: NOT_WRAPPED }, async () => {
  const secret = 'gw-argv-secret-42';
  const work = scratch();
  const { command, args } = ratCommand(['--cwd', work.dir, '--gateway', 'http://127.0.0.1:9', '--gateway-token', secret]);
  const p = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  try {
    await until(() => /--gateway-token on the command line/.test(err), ms(10000), 'the warning');
    const cl = cmdline(p.pid);
    assert.ok(!cl.includes(secret), cl);
    assert.match(err, /give it in JUPYTER_GATEWAY_AUTH_TOKEN or with --gateway-token-file FILE instead/);
  } finally {
    p.kill('SIGTERM');
    work.cleanup();
  }
});

test('--token-file FILE: read once (first line, trimmed); only the path is on the command line; errors are clear', async () => {
  const t = tempDir();
  try {
    const file = path.join(t.dir, 'token');
    writeFileSync(file, '  file-token-xyz  \nsecond line ignored\n', { mode: 0o600 });
    const s = await startHttp(['--token-file', file]);
    try {
      assert.equal(await status(s.base), 401);
      assert.equal(await status(s.base, 'file-token-xyz'), 200);
      if (!WRAPPED) assert.ok(!cmdline(s.proc.pid).includes('file-token-xyz'));
      assert.doesNotMatch(s.stderr(), /warning/);
      // Read once: changing the file changes nothing.
      writeFileSync(file, 'another\n');
      assert.equal(await status(s.base, 'file-token-xyz'), 200);
    } finally {
      await s.stop();
    }
    const fail = (args) => spawnSync(RAT, ['--http', '--port', '0', ...args], { encoding: 'utf8', timeout: ms(10000) });
    writeFileSync(file, '\n\n');
    let r = fail(['--token-file', file]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, new RegExp(`rat-py: --token-file ${file}: the file is empty \\(the token is its first line\\)`));
    r = fail(['--token-file', path.join(t.dir, 'missing')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--token-file .*missing: No such file or directory/);
    writeFileSync(file, 'two words\n');
    r = fail(['--token-file', file]);
    assert.match(r.stderr, /the token must be printable ASCII without spaces/);
    writeFileSync(file, 'ok\n');
    r = fail(['--token-file', file, '--token', 'x']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /give one of --token and --token-file, once/);
    // A token file others can read: it works, with a warning.
    chmodSync(file, 0o644);
    const s2 = await startHttp(['--token-file', file]);
    try {
      assert.match(s2.stderr(), /warning: --token-file .* can be read by other users \(mode 644\); chmod 600 it/);
    } finally {
      await s2.stop();
    }
  } finally {
    t.cleanup();
  }
});

test('RAT_PY_TOKEN: the documented way; nothing on the command line', async () => {
  const s = await startHttp([], { RAT_PY_TOKEN: 'env-token-777' });
  try {
    assert.equal(await status(s.base), 401);
    const h = await connectHttp(s.url, { headers: { authorization: 'Bearer env-token-777' } });
    assert.match((await call(h, 'run', { code: 'print(5)' })).text, /^5\n/);
    await h.close();
    assert.doesNotMatch(s.stderr(), /warning/);
  } finally {
    await s.stop();
  }
});

test('the notebook URL carries ?token= only to a terminal; to a pipe or a log, never the token', async () => {
  const token = 'url-tok/+=';
  const s = await startHttp([], { RAT_PY_TOKEN: token });
  try {
    await until(() => /notebook at/.test(s.stderr()), ms(5000), 'the notebook line');
    assert.match(s.stderr(), /rat-py: notebook at http:\/\/127\.0\.0\.1:\d+\/ \(add \?token= and the token: it is printed only to a terminal, never to a log\)\n/);
    assert.ok(!s.stderr().includes('url-tok'));
  } finally {
    await s.stop();
  }
  // On a terminal (script(1) gives rat-py one), the whole URL, percent-encoded.
  const work = scratch();
  try {
    const { command, args } = ratCommand(['--http', '--port', '0', '--cwd', work.dir]);
    const line = [command, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
    const p = spawn('script', ['-qfec', line, '/dev/null'], { env: { ...process.env, RAT_PY_TOKEN: token }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    try {
      await until(() => /notebook at \S+/.test(out), ms(15000), 'the URL on the terminal');
      assert.match(out, /notebook at http:\/\/127\.0\.0\.1:\d+\/\?token=url-tok%2F%2B%3D\r?\n/);
    } finally {
      p.kill('SIGTERM');
      await new Promise((r) => p.on('exit', r));
    }
  } finally {
    work.cleanup();
  }
});
