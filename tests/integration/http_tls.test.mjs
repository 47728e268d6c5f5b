// HTTPS for --http (--tls-cert, --tls-key; RAT_PY_TLS_CERT/RAT_PY_TLS_KEY;
// the C API's and the Python binding's tls_cert/tls_key): libmicrohttpd's
// TLS (GnuTLS in Debian's build) serves /mcp, its SSE streams and the
// notebook page. A CA and a server certificate for 127.0.0.1 are made here
// with openssl; curl verifies against that CA, and real Chromium trusts it
// through an NSS database in a HOME of its own (certutil, libnss3-tools).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startHttp, ratCommand, scratch, until, ms, WRAPPED, RAT } from './lib.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const NO_BROWSER = (!existsSync(CHROMIUM) && `no browser at ${CHROMIUM} (apt install chromium)`) ||
  (!existsSync('/usr/bin/certutil') && 'no certutil (apt install libnss3-tools)');
const TOKEN = 'tls-test-token';
let dir, CA, CERT, KEY;

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: dir, encoding: 'utf8', timeout: 60_000, ...opts });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rat-tls-'));
  sh('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=rat-py test CA']);
  sh('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'srv.key', '-out', 'srv.csr', '-subj', '/CN=127.0.0.1']);
  writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  sh('openssl', ['x509', '-req', '-in', 'srv.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'srv.pem', '-days', '2', '-extfile', 'ext.cnf']);
  CA = path.join(dir, 'ca.pem');
  CERT = path.join(dir, 'srv.pem');
  KEY = path.join(dir, 'srv.key');
});
after(() => { rmSync(dir, { recursive: true, force: true }); });

/** curl with the test CA; returns { status, body, code } (code: curl's exit status). */
function curl(args) {
  const r = spawnSync('curl', ['-sS', '--max-time', '30', '-w', '\n%{http_code}', ...args], { encoding: 'utf8', timeout: 40_000 });
  const i = r.stdout.lastIndexOf('\n');
  return { status: Number(r.stdout.slice(i + 1)), body: r.stdout.slice(0, i), code: r.status, err: r.stderr };
}
const mcpHeaders = (extra = []) => ['-H', 'content-type: application/json', '-H', 'accept: application/json, text/event-stream',
  '-H', `authorization: Bearer ${TOKEN}`, ...extra];

test('curl: /mcp, an SSE stream and /health over HTTPS, verified against the test CA; plain HTTP and an unknown CA fail', async () => {
  const s = await startHttp(['--tls-cert', CERT, '--tls-key', KEY], { RAT_PY_TOKEN: TOKEN });
  try {
    await until(() => /notebook at/.test(s.stderr()), ms(5000), 'the lines after the first');
    assert.match(s.stderr(), /rat-py: serving MCP at https:\/\/127\.0\.0\.1:\d+\/mcp \(bearer token required\)\n/);
    assert.match(s.stderr(), /rat-py: notebook at https:\/\/127\.0\.0\.1:\d+\//);
    assert.doesNotMatch(s.stderr(), /warning/);
    const base = `https://127.0.0.1:${s.port}`;
    let r = curl(['--cacert', CA, `${base}/health?token=${TOKEN}`]);
    assert.equal(r.status, 200, r.err);
    assert.match(r.body, /"status":"ok"/);
    r = curl(['--cacert', CA, '-D', '-', ...mcpHeaders(), '--data', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'curl', version: '1' } } }), `${base}/mcp`]);
    assert.equal(r.status, 200);
    const sid = /mcp-session-id: ([0-9a-f]{32})/i.exec(r.body)[1];
    curl(['--cacert', CA, ...mcpHeaders(['-H', `mcp-session-id: ${sid}`]), '--data', '{"jsonrpc":"2.0","method":"notifications/initialized"}', `${base}/mcp`]);
    // A run that prints while it runs: the answer is an event stream (logging
    // notifications, then the result), through TLS.
    r = curl(['--cacert', CA, '-N', ...mcpHeaders(['-H', `mcp-session-id: ${sid}`]), '--data', JSON.stringify({ jsonrpc: '2.0', id: 2,
      method: 'tools/call', params: { name: 'run', arguments: { code: 'import time\nprint("one", flush=True)\ntime.sleep(0.5)\nprint("two")' } } }), `${base}/mcp`]);
    assert.equal(r.status, 200);
    assert.match(r.body, /^data: .*"notifications\/message".*"data":"one\\n"/m);
    assert.match(r.body, /data: .*"id":2,"result".*one\\ntwo\\n/);
    // The token is still required.
    r = curl(['--cacert', CA, `${base}/health`]);
    assert.equal(r.status, 401);
    // Not verified: no CA.
    r = curl([`${base}/health`]);
    assert.equal(r.code, 60, r.err); // SSL certificate problem
    // Plain HTTP on the HTTPS port: a readable 400 that says to use
    // https://, not an empty reply; then the port still serves HTTPS.
    r = curl([`http://127.0.0.1:${s.port}/health?token=${TOKEN}`]);
    assert.equal(r.status, 400, `${r.err} ${r.body}`);
    assert.match(r.body, /^400 Bad Request: this port speaks HTTPS, and the request came in plain HTTP\. Use https:\/\/ in the URL\.\n$/);
    r = curl(['--cacert', CA, `${base}/health?token=${TOKEN}`]);
    assert.equal(r.status, 200);
  } finally {
    await s.stop();
  }
});

test('RAT_PY_TLS_CERT and RAT_PY_TLS_KEY stand for the options (the pair)', async () => {
  const s = await startHttp([], { RAT_PY_TLS_CERT: CERT, RAT_PY_TLS_KEY: KEY });
  try {
    assert.match(s.stderr(), /serving MCP at https:/);
    assert.equal(curl(['--cacert', CA, `https://127.0.0.1:${s.port}/health`]).status, 200);
  } finally {
    await s.stop();
  }
});

test('a non-loopback --host without TLS warns that the token crosses the network in clear; with TLS it does not', async () => {
  const s = await startHttp(['--host', '0.0.0.0'], { RAT_PY_TOKEN: TOKEN });
  try {
    await until(() => /notebook at/.test(s.stderr()), ms(5000), 'the lines after the first');
    assert.match(s.stderr(), /rat-py: warning: plain HTTP on 0\.0\.0\.0: the token crosses the network in clear, for anyone on the way to read \(and then to run code as you\); give --tls-cert and --tls-key, or put a TLS proxy in front\n/);
  } finally {
    await s.stop();
  }
  const t = await startHttp(['--host', '0.0.0.0', '--tls-cert', CERT, '--tls-key', KEY], { RAT_PY_TOKEN: TOKEN });
  try {
    await until(() => /notebook at/.test(t.stderr()), ms(5000), 'the lines after the first');
    assert.doesNotMatch(t.stderr(), /warning/);
    assert.equal(curl(['--cacert', CA, `https://127.0.0.1:${t.port}/health?token=${TOKEN}`]).status, 200);
  } finally {
    await t.stop();
  }
});

/** openssl s_client's handshake with these options: the protocol and cipher agreed, or null when refused. */
function handshake(port, args) {
  const r = spawnSync('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', ...args],
    { input: '', encoding: 'utf8', timeout: 30_000 });
  const m = /New, (\S+), Cipher is (\S+)/.exec(r.stdout);
  return m && m[2] !== '(NONE)' ? `${m[1]} ${m[2]}` : null;
}

test('TLS 1.2 and 1.3 with AEAD suites only: TLS 1.0, 1.1 and CBC suites are refused (Mozilla "intermediate")', async () => {
  const s = await startHttp(['--tls-cert', CERT, '--tls-key', KEY], { RAT_PY_TOKEN: TOKEN });
  try {
    // The client offers old protocols only when its own security level allows them.
    const old = ['-cipher', 'DEFAULT:@SECLEVEL=0'];
    assert.equal(handshake(s.port, ['-tls1', ...old]), null, 'TLS 1.0');
    assert.equal(handshake(s.port, ['-tls1_1', ...old]), null, 'TLS 1.1');
    for (const cbc of ['ECDHE-RSA-AES128-SHA', 'ECDHE-RSA-AES256-SHA', 'AES128-SHA', 'AES128-SHA256', 'ECDHE-RSA-AES128-SHA256'])
      assert.equal(handshake(s.port, ['-tls1_2', '-cipher', `${cbc}:@SECLEVEL=0`]), null, cbc);
    assert.equal(handshake(s.port, ['-tls1_2', '-cipher', 'AES128-GCM-SHA256']), null, 'RSA key exchange');
    assert.equal(handshake(s.port, ['-tls1_2']), 'TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384');
    assert.equal(handshake(s.port, ['-tls1_2', '-cipher', 'ECDHE-RSA-CHACHA20-POLY1305']), 'TLSv1.2 ECDHE-RSA-CHACHA20-POLY1305');
    assert.match(handshake(s.port, ['-tls1_3']) ?? '', /^TLSv1\.3 TLS_(AES_(128|256)_GCM_SHA(256|384)|CHACHA20_POLY1305_SHA256)$/);
    assert.equal(curl(['--cacert', CA, `https://127.0.0.1:${s.port}/health?token=${TOKEN}`]).status, 200);
  } finally {
    await s.stop();
  }
});

test('a --tls-key other users can read is warned about, as a token file is', async () => {
  const loose = path.join(dir, 'loose.key');
  writeFileSync(loose, readFileSync(KEY), { mode: 0o644 });
  chmodSync(loose, 0o644);
  const s = await startHttp(['--tls-cert', CERT, '--tls-key', loose], { RAT_PY_TOKEN: TOKEN });
  try {
    await until(() => /notebook at/.test(s.stderr()), ms(5000), 'the lines after the first');
    assert.match(s.stderr(), /rat-py: warning: --tls-key \S*loose\.key can be read by other users \(mode 644\); chmod 600 it\n/);
  } finally {
    await s.stop();
  }
});

test('bad TLS options: clear errors, exit status 2', () => {
  const run = (args) => spawnSync(RAT, ['--http', '--port', '0', ...args], { encoding: 'utf8', timeout: ms(20000) });
  let r = run(['--tls-cert', CERT]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--tls-cert and --tls-key \(tls_cert, tls_key\) go together: give both, or neither/);
  r = run(['--tls-cert', path.join(dir, 'ext.cnf'), '--tls-key', KEY]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--tls-cert .*ext\.cnf: no PEM certificate in it/);
  r = run(['--tls-cert', CERT, '--tls-key', CERT]);
  assert.match(r.stderr, /--tls-key .*srv\.pem: no PEM private key in it/);
  r = run(['--tls-cert', CERT, '--tls-key', path.join(dir, 'ca.key')]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /cannot serve HTTPS with this certificate and key \(libmicrohttpd: .*\): is the key the certificate's own/);
  r = run(['--tls-cert', path.join(dir, 'missing.pem'), '--tls-key', KEY]);
  assert.match(r.stderr, /--tls-cert .*missing\.pem: No such file or directory/);
  r = spawnSync(RAT, ['--tls-cert', CERT, '--tls-key', KEY], { encoding: 'utf8', timeout: ms(20000) });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--tls-cert and --tls-key need --http/);
});

test('Chromium: the notebook page over HTTPS with a CA it trusts; refused with one it does not', { skip: NO_BROWSER }, async () => {
  const home = path.join(dir, 'home');
  const db = path.join(home, '.pki', 'nssdb');
  mkdirSync(db, { recursive: true });
  sh('certutil', ['-d', `sql:${db}`, '-N', '--empty-password']);
  sh('certutil', ['-d', `sql:${db}`, '-A', '-t', 'C,,', '-n', 'rat-py test CA', '-i', CA]);
  const s = await startHttp(['--tls-cert', CERT, '--tls-key', KEY], { RAT_PY_TOKEN: TOKEN });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], env: { ...process.env, HOME: home } });
  const bare = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], env: { ...process.env, HOME: path.join(dir, 'empty-home') } });
  try {
    const url = `https://127.0.0.1:${s.port}/?token=${TOKEN}`;
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(url);
    await page.locator('#status', { hasText: 'connected' }).waitFor({ timeout: ms(30000) });
    const cell = page.locator('.cell').first();
    await cell.locator('.cm-content').click();
    await page.keyboard.insertText('import time\nprint("tick", flush=True)\ntime.sleep(0.3)\nprint(6 * 7)');
    await page.keyboard.press('Shift+Enter');
    await cell.locator('.out', { hasText: '42' }).waitFor({ timeout: ms(30000) });
    assert.deepEqual(problems, []);
    const p2 = await bare.newPage();
    await assert.rejects(p2.goto(url), /ERR_CERT_AUTHORITY_INVALID/);
  } finally {
    await browser.close();
    await bare.close();
    await s.stop();
  }
});

test('the Python binding takes tls_cert and tls_key', {
  skip: process.env.RAT_PY_SANITIZED ? 'sanitizer build' : WRAPPED ? 'RAT_PY_WRAPPER wraps rat-py only'
    : !process.env.RAT_BUILD_DIR ? 'RAT_BUILD_DIR not set' : false,
}, async () => {
  const src = path.resolve(new URL('.', import.meta.url).pathname, '../..');
  const env = { ...process.env, PYTHONPATH: path.join(src, 'python'), LD_LIBRARY_PATH: process.env.RAT_BUILD_DIR, PYTHONDONTWRITEBYTECODE: '1' };
  const code = `from rat_py import create_mcp_server\ncreate_mcp_server(tls_cert=${JSON.stringify(CERT)}, tls_key=${JSON.stringify(KEY)}).run(transport="http", port=0)\n`;
  const work = scratch();
  const p = spawn('/usr/bin/python3', ['-c', code], { cwd: work.dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  try {
    await until(() => /serving MCP at https:\/\/127\.0\.0\.1:(\d+)\/mcp/.test(err), 30000, `the https URL: ${err}`);
    const port = /serving MCP at https:\/\/127\.0\.0\.1:(\d+)/.exec(err)[1];
    assert.equal(curl(['--cacert', CA, `https://127.0.0.1:${port}/health`]).status, 200);
  } finally {
    p.kill('SIGTERM');
    await new Promise((r) => p.on('exit', r));
    work.cleanup();
  }
});
