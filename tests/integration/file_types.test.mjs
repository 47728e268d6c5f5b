// A FIFO (or any non-regular file) where rat-py or rat expects a file is
// refused at once, never waited on; and a termination signal ends rat-py
// from its first instruction, even while its start-up is blocked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, existsSync, rmSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RAT, ratCommand, until, ms, alive, checkSanitizers } from './lib.mjs';

function tree() {
  const root = mkdtempSync(path.join(tmpdir(), 'rat-ftype-'));
  return { root, done: () => rmSync(root, { recursive: true, force: true }) };
}

function mkfifo(p) {
  const r = spawnSync('mkfifo', ['-m', '600', p]);
  assert.equal(r.status, 0, 'mkfifo');
}

// Runs a command to its end; fails (instead of hanging the suite) when it
// has not ended within a bound no healthy run comes near.
function runToEnd(command, args, env) {
  return new Promise((resolve) => {
    const p = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => p.kill('SIGKILL'), ms(60000));
    p.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout: out, stderr: err }); });
  });
}

test('rat status with a FIFO for state.yaml fails at once with a clear error, and leaves the lock free', async () => {
  const t = tree();
  try {
    const cfg = path.join(t.root, 'cfg');
    mkdirSync(path.join(cfg, 'rat'), { recursive: true });
    mkfifo(path.join(cfg, 'rat', 'state.yaml'));
    const bin = path.join(t.root, 'rat');
    symlinkSync(RAT, bin);
    const env = { ...process.env, HOME: t.root, XDG_CONFIG_HOME: cfg };
    const { command, args } = ratCommand(['status'], bin);
    for (let i = 0; i < 2; i++) { // twice: the first left no lock behind
      const r = await runToEnd(command, args, env);
      assert.equal(r.signal, null, `rat status hung (killed): ${r.stderr}`);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /state\.yaml: not a regular file/);
      checkSanitizers(r.stderr, 'rat');
    }
  } finally {
    t.done();
  }
});

test('rat-py --tls-cert FIFO (or --tls-key FIFO) fails at once with a clear error', async () => {
  const t = tree();
  try {
    const fifo = path.join(t.root, 'cert.pem');
    mkfifo(fifo);
    const key = path.join(t.root, 'key.pem');
    writeFileSync(key, 'not a key\n', { mode: 0o600 });
    const cert = path.join(t.root, 'real.pem');
    writeFileSync(cert, 'not a cert\n', { mode: 0o600 });
    const env = { ...process.env, HOME: t.root };
    for (const [opt, tls] of [['--tls-cert', ['--tls-cert', fifo, '--tls-key', key]], ['--tls-key', ['--tls-cert', cert, '--tls-key', fifo]]]) {
      const { command, args } = ratCommand(['--http', '--port', '0', '--cwd', t.root, ...tls]);
      const r = await runToEnd(command, args, env);
      assert.equal(r.signal, null, `rat-py hung (killed): ${r.stderr}`);
      assert.notEqual(r.code, 0);
      assert.ok(r.stderr.includes(`${opt} ${fifo}: not a regular file`), r.stderr);
      checkSanitizers(r.stderr);
    }
  } finally {
    t.done();
  }
});

test('rat-py --gateway-ca FIFO fails at once with a clear error (curl would open it for each TLS handshake and wait)', async () => {
  const t = tree();
  // A listener that accepts and says nothing: curl reaches the point where
  // it loads the CA bundle.
  const { createServer } = await import('node:net');
  const srv = createServer(() => {});
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  try {
    const fifo = path.join(t.root, 'ca.pem');
    mkfifo(fifo);
    const url = `https://127.0.0.1:${srv.address().port}`;
    const env = { ...process.env, HOME: t.root };
    for (const extra of [['kernels'], ['--cwd', t.root]]) {
      const { command, args } = ratCommand([...extra, '--gateway', url, '--gateway-ca', fifo]);
      const r = await runToEnd(command, args, env);
      assert.equal(r.signal, null, `rat-py hung (killed): ${r.stderr}`);
      assert.notEqual(r.code, 0);
      assert.ok(r.stderr.includes(`--gateway-ca ${fifo}: not a regular file`), r.stderr);
      checkSanitizers(r.stderr);
    }
  } finally {
    srv.close();
    t.done();
  }
});

test('SIGTERM while start-up is blocked (a venv\'s python that does not answer) ends rat-py at once', async () => {
  const t = tree();
  let probe = 0;
  try {
    // --venv with the system site-packages and no ipykernel of its own:
    // rat-py asks its python, which never answers (rat-py would give up
    // after 10 s and kill it).
    const venv = path.join(t.root, 'venv');
    mkdirSync(path.join(venv, 'bin'), { recursive: true });
    writeFileSync(path.join(venv, 'pyvenv.cfg'), 'home = /usr/bin\ninclude-system-site-packages = true\n');
    const started = path.join(t.root, 'started');
    writeFileSync(path.join(venv, 'bin', 'python'), `#!/bin/sh\necho "$$" > ${started}.tmp\nmv ${started}.tmp ${started}\nexec sleep 120\n`, { mode: 0o755 });
    const env = { ...process.env, HOME: t.root, XDG_CACHE_HOME: path.join(t.root, 'cache'), VIRTUAL_ENV: '' };
    const { command, args } = ratCommand(['--cwd', t.root, '--venv', venv]);
    const p = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d) => { stderr += d; });
    const ended = new Promise((resolve) => p.on('close', (code, signal) => resolve({ code, signal, probeAlive: alive(probe) })));
    await until(() => existsSync(started), ms(30000), 'rat-py to ask the venv\'s python');
    probe = Number(readFileSync(started, 'utf8').trim());
    assert.ok(alive(probe));
    p.kill('SIGTERM');
    const r = await ended;
    // It ended by the signal while the python it waits for was still
    // running: not after giving up on it.
    assert.equal(r.signal, 'SIGTERM', `code ${r.code}: ${stderr}`);
    assert.equal(r.probeAlive, true, 'rat-py ended only after its wait for the python was over');
    checkSanitizers(stderr);
  } finally {
    if (probe && alive(probe)) process.kill(probe, 'SIGKILL');
    t.done();
  }
});
