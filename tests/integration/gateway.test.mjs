// --gateway: kernels on a real Jupyter Server (Debian's python3-jupyter-server)
// started here on loopback with a token and a runtime dir of its own (so
// rat-py cannot find the kernel's connection file locally). The same tools
// and texts as with a local kernel; the REST API starts, interrupts,
// restarts and deletes the kernel; the channels are a WebSocket.
// With RAT_GATEWAY_KIND=eg the same checks run against Jupyter Enterprise
// Gateway instead (ctest integration.gateway_eg; jupyter_server.mjs starts
// it from the pinned venv of tests/peers.txt), plus those of EG's own.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { connect, run, ctl, call, until, scratch, RAT, ms, WRAPPED } from './lib.mjs';
import { freePort, startJupyterServer, tcpProxy, KIND, KIND_NAME } from './jupyter_server.mjs';

// Enterprise Gateway starts a kernel for the user a client names in
// KERNEL_USERNAME (of the request's env, which a client fills from its own
// KERNEL_* variables), and refuses root, whom it takes when none is named.
// Every rat-py here inherits this one; the EG tests below set others.
if (KIND === 'eg') process.env.KERNEL_USERNAME = 'rat-test';
const SERVER = KIND_NAME[KIND];

const TOKEN = 'gw-test-token';
let server;

/** A Jupyter Server on loopback (jupyter_server.mjs); resolves once its REST API answers. */
const startServer = (extra = [], scheme = 'http') => startJupyterServer({
  token: TOKEN, extra, scheme,
  ready: async (url) => (await api(url, 'GET', '/api/kernelspecs').catch(() => ({ status: 0 }))).status === 200,
});

async function api(url, method, p, body, token = TOKEN) {
  if (url.startsWith('https:')) return { status: await curlStatus(url + p, token) };
  const r = await fetch(url + p, { method, headers: { Authorization: `token ${token}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

/** https: Node's fetch would need the CA in its own store; curl takes --cacert. */
async function curlStatus(u, token) {
  const r = spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', tlsCA, '-H', `Authorization: token ${token}`, u], { encoding: 'utf8', timeout: 10_000 });
  return Number(r.stdout || 0);
}
let tlsCA = '';

const kernels = async (url = server.url) => (await api(url, 'GET', '/api/kernels')).json;

before(async () => { server = await startServer(); });
after(async () => { await server?.stop(); });

const gw = (extra = []) => ['--gateway', server.url, '--gateway-token', TOKEN, ...extra];

test('run, look, input(), a plot, completions, a 200k-line flood; the kernel is deleted on exit', async () => {
  const h = await connect({ args: gw() });
  let id;
  try {
    let r = await run(h, 'x = 42\nprint(x)');
    assert.match(r.text, /^42\n\n✓ \d+ms \| 1 var$/);
    const ks = await kernels();
    assert.equal(ks.length, 1, 'one kernel on the server');
    id = ks[0].id;
    r = await ctl(h, 'status');
    assert.match(r.text, new RegExp(`connection file: ${server.url}/api/kernels/${id}`));
    r = await call(h, 'look', {});
    assert.match(r.text, /^python idle \| 1 var \| exec #1\n\n {2}x {2}int {2}42$/);
    r = await call(h, 'look', { code: 'import math; math.sq', cursor: 20 });
    assert.equal(r.text, 'sqrt  function  sqrt(x, /)');
    r = await call(h, 'look', { at: 'x' });
    assert.match(r.text, /^x: int/);
    r = await run(h, 'name = input("Name: ")\nprint("hi", name)');
    assert.match(r.text, /^INPUT REQUESTED: "Name: "/);
    r = await call(h, 'run', { code: '', input: 'Alice' });
    assert.match(r.text, /^hi Alice\n\n✓ /);
    r = await run(h, 'from IPython.display import display, SVG\ndisplay(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>\'))');
    assert.match(r.text, /\[image: rat:\/\/assets\/[0-9a-f]{32}\.svg \(file: .*\)\]\n\n✓ .*1 asset$/);
    r = await run(h, 'for i in range(200000): print(i)');
    assert.match(r.text, /^0\n1\n2\n/);
    assert.match(r.text, /… \[199900 lines truncated\] …/);
    assert.match(r.text, /\n199999\n\[full output: .*\.txt\]\n\n✓ /);
  } finally {
    await h.close();
  }
  await until(async () => (await kernels()).length === 0, 10_000, 'the kernel deleted on the server');
});

test('ctl cancel interrupts through REST; ctl restart restarts there (variables lost)', async () => {
  const h = await connect({ args: gw() });
  try {
    await run(h, 'keep = 1');
    let r = await run(h, 'import time\nprint("sleeping", flush=True)\ntime.sleep(60)', { wait: 1 });
    assert.match(r.text, /^sleeping\n\n⏳ running/);
    const t0 = Date.now();
    r = await ctl(h, 'cancel');
    assert.match(r.text, /^CANCELLED exec #\d+$/);
    assert.ok(Date.now() - t0 < ms(10_000));
    assert.match((await run(h, 'print(keep)')).text, /^1\n/, 'an interrupt keeps the state');
    const id = (await kernels())[0].id;
    r = await ctl(h, 'restart');
    assert.match(r.text, /^RESTARTED/);
    assert.match((await run(h, 'print(globals().get("keep", "gone"))')).text, /^gone\n/);
    assert.equal((await kernels())[0].id, id, 'the same kernel id: the server restarted it');
  } finally {
    await h.close();
  }
});

test('a wrong token is named as such (HTTP 401), at once', async () => {
  const h = await connect({ args: ['--gateway', server.url, '--gateway-token', 'wrong'] });
  try {
    const t0 = Date.now();
    const r = await run(h, 'print(1)');
    assert.equal(r.isError, true);
    assert.match(r.text, /refused the token \(HTTP 40[13] (Unauthorized|Forbidden)\): give the right one with --gateway-token/);
    assert.ok(Date.now() - t0 < ms(10_000));
  } finally {
    await h.close();
  }
});

test('a gateway that refuses connections: a clear error, bounded', async () => {
  const port = await freePort();
  const h = await connect({ args: ['--gateway', `http://127.0.0.1:${port}`] });
  try {
    const r = await run(h, 'print(1)');
    assert.equal(r.isError, true);
    assert.match(r.text, new RegExp(`the gateway at http://127\\.0\\.0\\.1:${port} refused the connection \\(is it running\\?\\)`));
  } finally {
    await h.close();
  }
});

test('JUPYTER_GATEWAY_URL and JUPYTER_GATEWAY_AUTH_TOKEN stand for the options', async () => {
  const h = await connect({ env: { JUPYTER_GATEWAY_URL: server.url, JUPYTER_GATEWAY_AUTH_TOKEN: TOKEN } });
  try {
    assert.match((await run(h, 'print(6*7)')).text, /^42\n/);
    assert.equal((await kernels()).length, 1);
  } finally {
    await h.close();
  }
});

test('--existing ID attaches to a kernel there and leaves it running', async () => {
  const k = await api(server.url, 'POST', '/api/kernels', { name: 'python3', env: { KERNEL_USERNAME: 'rat-test' } });
  assert.equal(k.status, 201);
  const id = k.json.id;
  try {
    const h = await connect({ args: gw(['--existing', id, '--log-level', 'info']) });
    try {
      await run(h, 'left = "here"');
      const r = await ctl(h, 'restart');
      assert.match(r.text, /refused unless rat-py runs with --allow-restart/);
    } finally {
      await h.close();
    }
    // Its helper's request to take the hooks out left the WebSocket and was
    // answered (within rat-py's 2 s, which valgrind's slowdown may exceed).
    if (!WRAPPED) assert.match(h.stderr(), /left the attached kernel as it was \(the helper took its hooks out\)/);
    assert.ok((await kernels()).some((x) => x.id === id), 'the kernel outlives rat-py');
    const h2 = await connect({ args: gw(['--existing', id]) });
    try {
      assert.match((await run(h2, 'print(left)')).text, /^here\n/);
    } finally {
      await h2.close();
    }
  } finally {
    await api(server.url, 'DELETE', `/api/kernels/${id}`);
  }
});

test('--existing ID: what is not a kernel id never reaches a URL; `_` is one (Jupyter Server\'s routes take it)', async () => {
  const h = await connect({ args: gw(['--existing', '../../api/kernelspecs']) });
  try {
    const r = await run(h, 'print(1)');
    assert.match(r.text, /--existing with --gateway takes a kernel id \(at most 64 letters, digits, '-' or '_'\), not '\.\.\/\.\.\/api\/kernelspecs'/);
  } finally {
    await h.close();
  }
  const h2 = await connect({ args: gw(['--existing', 'no_such-kernel-0-0']) });
  try {
    const r = await run(h2, 'print(1)');
    assert.doesNotMatch(r.text, /takes a kernel id/);
    assert.match(r.text, /no_such-kernel-0-0/, 'asked the server, which has no such kernel');
  } finally {
    await h2.close();
  }
});

test('a kernel deleted behind rat-py\'s back is reported like a death; the next run gets a new one', async () => {
  const h = await connect({ args: gw() });
  try {
    await run(h, 'v = 1');
    const id = (await kernels())[0].id;
    assert.equal((await api(server.url, 'DELETE', `/api/kernels/${id}`)).status, 204);
    let r;
    await until(async () => {
      r = await ctl(h, 'status');
      return !/idle \|/.test(r.text.split('\n')[0]) || /gone from the gateway/.test(r.text);
    }, 30_000, 'the death noticed');
    // The new kernel's start on the server, not its speed, is the point: the
    // clean-clone run beside two soaks (load 7-8) saw one take over the
    // default 25 s wait on Enterprise Gateway. Likewise below.
    r = await run(h, 'print(globals().get("v", "new kernel"))', { wait: 90 });
    assert.match(r.text, /new kernel/);
    assert.match(r.text, /is gone from the gateway/);
    const ks = await kernels();
    assert.equal(ks.length, 1);
    assert.notEqual(ks[0].id, id);
  } finally {
    await h.close();
  }
});

/**
 * An HTTP proxy to the server that holds every POST .../interrupt for
 * delayMs before passing it on (a slow gateway, or one far away); the
 * kernel's WebSocket goes straight through.
 */
async function delayingProxy(port, delayMs) {
  const socks = new Set();
  const srv = http.createServer((req, res) => {
    const fwd = () => {
      const u = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      u.on('error', () => res.destroy());
      req.pipe(u);
    };
    if (req.method === 'POST' && /\/interrupt$/.test(req.url)) {
      p.interrupts.push(Date.now());
      setTimeout(fwd, delayMs);
    } else {
      fwd();
    }
  });
  srv.on('connection', (c) => { socks.add(c); c.on('close', () => socks.delete(c)); });
  srv.on('upgrade', (req, sock, head) => {
    const u = net.connect(port, '127.0.0.1', () => {
      let text = `${req.method} ${req.url} HTTP/1.1\r\n`;
      for (let i = 0; i < req.rawHeaders.length; i += 2) text += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
      u.write(text + '\r\n');
      u.write(head);
      u.pipe(sock);
      sock.pipe(u);
    });
    socks.add(u);
    const end = () => { u.destroy(); sock.destroy(); };
    u.on('error', end); sock.on('error', end); u.on('close', end); sock.on('close', end);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const p = {
    url: `http://127.0.0.1:${srv.address().port}`,
    interrupts: [],
    close() { for (const c of socks) c.destroy(); srv.close(); },
  };
  return p;
}

test('an interrupt the gateway answers late never lands in the next run (it waits for the interrupt, then the barrier)', async () => {
  // The gateway's delay, not rat-py's speed: not scaled under valgrind
  // (ms(3000) there is 30 s, past the 10 s rat-py gives a gateway to answer
  // an interrupt, and then the next run rightly goes on without it).
  const HOLD = 3000;
  const p = await delayingProxy(server.port, HOLD);
  const h = await connect({ args: ['--gateway', p.url, '--gateway-token', TOKEN] });
  try {
    await run(h, 'pass');
    // A sleeps 2 s; cancelled at 0.5 s, its interrupt reaches the kernel
    // only at ~3.5 s: A ends on its own first.
    let r = await run(h, 'import time\ntime.sleep(2)\nprint("a done")', { wait: 0.5 });
    assert.match(r.text, /⏳ running/);
    r = await ctl(h, 'cancel');
    assert.match(r.text, /^NOT CANCELLED: exec #\d+ ended on its own/);
    assert.equal(p.interrupts.length, 1, 'the interrupt went to the gateway');
    // B, right after: it must not start before the interrupt has landed.
    const t0 = Date.now();
    r = await run(h, 'import time\ntime.sleep(3)\nprint("b ok")');
    assert.equal(r.isError, false, r.text);
    assert.match(r.text, /^b ok\n\n✓ /);
    assert.ok(Date.now() - p.interrupts[0] >= HOLD + 3000, 'B ran after the interrupt was delivered');
    assert.match((await run(h, 'print("after")')).text, /^after\n/);
    console.log(`# B waited ${Date.now() - t0 - 3000} ms for the interrupt and the barrier`);
  } finally {
    await h.close();
    p.close();
  }
});

test('the WebSocket dropped mid-run: rat-py reconnects and the result is not lost', async () => {
  const p = await tcpProxy(server.port);
  const h = await connect({ args: ['--gateway', p.url, '--gateway-token', TOKEN, '--log-level', 'info'] });
  try {
    await run(h, 'pass');
    const pending = run(h, 'import time\nfor i in range(6):\n    print("tick", i, flush=True)\n    time.sleep(0.5)\nprint("done")');
    await new Promise((r) => setTimeout(r, 1200));
    assert.ok(p.count() > 0);
    p.cut();
    const r = await pending;
    assert.equal(r.isError, false, r.text);
    assert.match(r.text, /^tick 0\ntick 1\ntick 2\ntick 3\ntick 4\ntick 5\ndone\n\n✓ /);
    assert.match((await run(h, 'print("after")')).text, /^after\n/);
    assert.match(h.stderr(), /kernel WebSocket lost: .*reconnecting/);
    assert.match(h.stderr(), /kernel WebSocket reconnected/);
  } finally {
    await h.close();
    p.close();
  }
});

test('rat-py kernels --gateway lists the server\'s kernelspecs', () => {
  const r = spawnSync(RAT, ['kernels', ...gw()], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^python3\\s+python\\s+Python 3 \\(ipykernel\\)\\s+${server.url} \\(default\\)$`, 'm'));
  const bad = spawnSync(RAT, ['kernels', '--gateway', server.url, '--gateway-token', 'nope'], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /refused the token \(HTTP 40[13]/);
});

test('rat-py doctor --gateway checks the server, the token and the kernelspec there', () => {
  const r = spawnSync(RAT, ['doctor', ...gw()], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`^✓ gateway: ${server.url} answers with the token, kernelspec python3 there \\(\\d+ kernelspecs, \\d+ ms\\)$`, 'm'));
  assert.match(r.stdout, /^✓ run round trip: \d+ ms/m);
  const bad = spawnSync(RAT, ['doctor', '--gateway', server.url, '--gateway-token', 'nope'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(bad.status, 1);
  assert.match(bad.stdout, /^✗ gateway: GET \/api\/kernelspecs: the gateway at .* refused the token \(HTTP 40[13]/m);
  const missing = spawnSync(RAT, ['doctor', ...gw(['--kernel', 'nosuch'])], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(missing.status, 1);
  assert.match(missing.stdout, /^✗ gateway: .* has no kernelspec nosuch/m);
});

test('libcurl and libwslay are loaded only by a gateway kernel (stdio users with local kernels pay nothing)', async () => {
  const maps = (pid) => readFileSync(`/proc/${pid}/maps`, 'utf8');
  const local = await connect();
  try {
    await run(local, 'pass');
    assert.doesNotMatch(maps(local.pid()), /libcurl|libwslay/);
  } finally {
    await local.close();
  }
  const remote = await connect({ args: gw() });
  try {
    await run(remote, 'pass');
    assert.match(maps(remote.pid()), /libcurl\.so/);
    assert.match(maps(remote.pid()), /libwslay\.so/);
  } finally {
    await remote.close();
  }
});

test('https/wss: verified with --gateway-ca; refused without it (named); --gateway-insecure for testing', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-gw-tls-'));
  const ossl = (...a) => {
    const r = spawnSync('openssl', a, { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  };
  ossl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=rat-py test CA');
  ossl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'srv.key', '-out', 'srv.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  ossl('x509', '-req', '-in', 'srv.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'srv.pem', '-days', '2', '-extfile', 'ext.cnf');
  tlsCA = path.join(dir, 'ca.pem');
  const tls = await startServer([`--certfile=${path.join(dir, 'srv.pem')}`, `--keyfile=${path.join(dir, 'srv.key')}`], 'https');
  try {
    assert.match(tls.url, /^https:/);
    let h = await connect({ args: ['--gateway', tls.url, '--gateway-token', TOKEN, '--gateway-ca', tlsCA] });
    try {
      assert.match((await run(h, 'print(6*7)')).text, /^42\n\n✓ /);
      const r = await run(h, 'import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.2)');
      assert.match(r.text, /^0\n1\n2\n\n✓ /);
    } finally {
      await h.close();
    }
    h = await connect({ args: ['--gateway', tls.url, '--gateway-token', TOKEN] });
    try {
      const r = await run(h, 'print(1)');
      assert.equal(r.isError, true);
      assert.match(r.text, /failed TLS verification \(give its CA with --gateway-ca\): SSL certificate problem/);
    } finally {
      await h.close();
    }
    h = await connect({ args: ['--gateway', tls.url, '--gateway-token', TOKEN, '--gateway-insecure'] });
    try {
      assert.match((await run(h, 'print(7)')).text, /^7\n\n✓ /);
    } finally {
      await h.close();
    }
  } finally {
    await tls.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a gateway that accepts and never answers: a timeout that says so, within --boot-timeout', async () => {
  const held = [];
  const mute = net.createServer((c) => { held.push(c); c.on('error', () => {}); });
  await new Promise((r) => mute.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${mute.address().port}`;
  const h = await connect({ args: ['--gateway', url, '--boot-timeout', '3'] });
  try {
    const t0 = Date.now();
    const r = await run(h, 'print(1)');
    assert.equal(r.isError, true);
    assert.match(r.text, new RegExp(`cannot start a kernel: the gateway at ${url} timed out: Operation timed out after 2\\d{3} milliseconds`));
    assert.ok(Date.now() - t0 < ms(10_000), `${Date.now() - t0} ms`);
  } finally {
    await h.close();
    for (const c of held) c.destroy();
    mute.close();
  }
});

test('the gateway restarts (its kernels die with it): reported, and the next run gets a new kernel there', async () => {
  const s2 = await startServer();
  const h = await connect({ args: ['--gateway', s2.url, '--gateway-token', TOKEN] });
  try {
    await run(h, 'v = 1');
    // killed (its kernels die with it), then the same port, a new server (no kernels)
    await s2.restart();
    let r;
    await until(async () => {
      r = await ctl(h, 'status');
      return /gone from the gateway|WebSocket has been down/.test(r.text);
    }, 40_000, 'the death noticed');
    r = await run(h, 'print(globals().get("v", "new kernel"))', { wait: 90 });
    assert.match(r.text, /new kernel/);
    assert.equal((await kernels(s2.url)).length, 1);
  } finally {
    await h.close();
    await s2.stop();
  }
});

test('a restart the gateway cannot do fails at once with its reason; the next run starts a new kernel', async () => {
  const h = await connect({ args: gw() });
  try {
    await run(h, 'v = 1');
    const id = (await kernels())[0].id;
    assert.equal((await api(server.url, 'DELETE', `/api/kernels/${id}`)).status, 204);
    const t0 = Date.now();
    let r = await ctl(h, 'restart');
    assert.ok(Date.now() - t0 < ms(10_000), `${Date.now() - t0} ms`);
    assert.equal(r.isError, true, r.text);
    // Jupyter Server answers 500 for a kernel it no longer has
    assert.match(r.text, /^restart failed: POST \/api\/kernels\/[0-9a-f-]+\/restart: the gateway at http:\/\/127\.0\.0\.1:\d+ answered HTTP (404|500)/);
    r = await run(h, 'print(globals().get("v", "new kernel"))', { wait: 90 });
    assert.match(r.text, /new kernel/);
  } finally {
    await h.close();
  }
});

test('the Python API takes the gateway options (rat_options_t and its ctypes mirror agree)', {
  skip: process.env.RAT_PY_SANITIZED ? 'sanitizer build' : WRAPPED ? 'RAT_PY_WRAPPER wraps rat-py only'
    : !process.env.RAT_BUILD_DIR ? 'RAT_BUILD_DIR not set' : false,
}, async () => {
  const src = path.resolve(new URL('.', import.meta.url).pathname, '../..');
  const env = { ...process.env, PYTHONPATH: path.join(src, 'python'), LD_LIBRARY_PATH: process.env.RAT_BUILD_DIR, PYTHONDONTWRITEBYTECODE: '1' };
  const code = `from rat_py import create_mcp_server\ncreate_mcp_server(gateway=${JSON.stringify(server.url)}, gateway_token=${JSON.stringify(TOKEN)}).run()\n`;
  const work = scratch();
  const transport = new StdioClientTransport({ command: '/usr/bin/python3', args: ['-c', code], cwd: work.dir, env, stderr: 'pipe' });
  const client = new Client({ name: 'rat-py-gateway-tests', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    const r = await run({ client }, 'print(6 * 7)');
    assert.match(r.text, /^42\n\n✓ /);
    assert.equal((await kernels()).length, 1);
  } finally {
    await client.close();
    work.cleanup();
  }
  await until(async () => (await kernels()).length === 0, 10_000, 'the kernel deleted');
});

test('a kernel culled by the server\'s idle culler is reported; the next run gets a new one', async () => {
  const s3 = await startServer(['--MappingKernelManager.cull_idle_timeout=4', '--MappingKernelManager.cull_interval=1',
    '--MappingKernelManager.cull_connected=True']);
  const h = await connect({ args: ['--gateway', s3.url, '--gateway-token', TOKEN] });
  try {
    await run(h, 'v = 1');
    let r;
    await until(async () => {
      r = await ctl(h, 'status');
      return /is gone from the gateway \(deleted, culled by the gateway's idle culler, or the gateway restarted\)/.test(r.text);
    }, 40_000, 'the culling noticed');
    r = await run(h, 'print(globals().get("v", "new kernel"))', { wait: 90 });
    assert.match(r.text, /new kernel/);
  } finally {
    await h.close();
    await s3.stop();
  }
});

test('Enterprise Gateway: the user comes from KERNEL_USERNAME; one it refuses is named with its reason, not as a token', { skip: KIND !== 'eg' && 'Enterprise Gateway only' }, async () => {
  // As root (CI) without KERNEL_USERNAME, or anyone naming root: EG refuses
  // to start the kernel (403 with its reason), and rat-py used to blame the token.
  const h = await connect({ args: gw(), env: { KERNEL_USERNAME: 'root' } });
  try {
    const r = await run(h, 'print(1)');
    assert.equal(r.isError, true);
    assert.match(r.text, /the gateway at http:\/\/127\.0\.0\.1:\d+ refused \(HTTP 403 Forbidden\): User 'root' is not authorized to start kernel '.*'\. Ensure KERNEL_USERNAME is set/);
    assert.doesNotMatch(r.text, /token/);
  } finally {
    await h.close();
  }
  // KERNEL_* variables of rat-py's environment go with the start request and
  // reach the kernel (what Jupyter Server's own gateway client sends).
  const h2 = await connect({ args: gw(), env: { KERNEL_USERNAME: 'alice', KERNEL_RAT_PROBE: 'é 1', NOT_SENT: 'x' } });
  try {
    const r = await run(h2, 'import os\nprint(os.environ.get("KERNEL_USERNAME"), os.environ.get("KERNEL_RAT_PROBE"), os.environ.get("NOT_SENT"))');
    assert.match(r.text, /^alice é 1 None\n\n✓ /);
  } finally {
    await h2.close();
  }
});
