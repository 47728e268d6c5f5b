// --existing on a kernel a real JupyterLab 4 server started (issue 43 item
// 3; ctest integration.lab_existing): JupyterLab from the pinned venv of
// tests/peers.txt (jupyter_server.mjs, kind 'lab'), its kernel its own
// ipykernel 7 from PyPI, opened as Lab opens a notebook (POST /api/sessions).
// rat-py borrows it both ways a user can, the connection file in Lab's
// runtime dir and `--gateway LAB --existing ID`, and must leave it exactly
// as found: integration.attach's checks (state shared both ways, restart
// refused, no helper left, other clients never pay for it, even after
// rat-py is killed) plus Lab's view: the same kernel, session and
// connections, idle. The other client is jupyter_client on the connection
// file (jclient.py), as in integration.attach.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { connect, run, ctl, until } from './lib.mjs';
import { startJupyterServer, PEERS } from './jupyter_server.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const TOKEN = 'lab-test-token';
let lab, kernelId, connFile, sessionId;

async function api(method, p, body) {
  const r = await fetch(lab.url + p, { method, headers: { Authorization: `token ${TOKEN}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

/** Runs code through jupyter_client on Lab's connection file; { out, payload } (the reply's payload list). */
function jc(code) {
  const p = spawnSync('/usr/bin/python3', [path.join(here, 'jclient.py'), connFile, code, '--payload'], { encoding: 'utf8', timeout: 60_000 });
  if (p.status !== 0) throw new Error(`jupyter_client: ${p.stderr}`);
  const i = p.stdout.lastIndexOf('PAYLOAD ');
  return { out: p.stdout.slice(0, i), payload: JSON.parse(p.stdout.slice(i + 8)) };
}

/** What Lab says of its kernel and session: compared before and after rat-py. */
async function labView() {
  const k = await api('GET', `/api/kernels/${kernelId}`);
  const s = await api('GET', `/api/sessions/${sessionId}`);
  assert.equal(k.status, 200, 'Lab still has the kernel');
  assert.equal(s.status, 200, 'Lab still has the session');
  return { id: k.json.id, name: k.json.name, state: k.json.execution_state, connections: k.json.connections,
    session: s.json.id, sessionKernel: s.json.kernel.id, path: s.json.path };
}

// As integration.attach: the helper's hooks, the streams' flush interval
// (an instance value shadowing the class's when changed), the module, and
// how often a snapshot called the user's repr.
const PROBE = "import sys\ncbs = get_ipython().events.callbacks\n" +
  "print(sum(getattr(c, '_rat_hook', False) for e in ('pre_run_cell', 'post_run_cell') for c in cbs[e]), " +
  "sys.stdout.flush_interval, 'flush_interval' in vars(sys.stdout), '_rat' in sys.modules, R.n)";
let stock; // the probe's answer on the kernel as Lab made it

before(async () => {
  lab = await startJupyterServer({ token: TOKEN, kind: 'lab' });
  const s = await api('POST', '/api/sessions', { path: 'analysis.ipynb', name: 'analysis.ipynb', type: 'notebook', kernel: { name: 'python3' } });
  assert.equal(s.status, 201, JSON.stringify(s.json));
  kernelId = s.json.kernel.id;
  sessionId = s.json.id;
  connFile = path.join(lab.dir, 'runtime', `kernel-${kernelId}.json`);
  let last;
  await until(async () => { try { jc('pass'); return true; } catch (e) { last = e; return false; } }, 120_000, 'Lab\'s kernel')
    .catch((e) => { throw new Error(`${e.message}: ${last?.message}\nLab's log (tail):\n${lab.log().slice(-3000)}`); });
  jc('class R:\n    n = 0\n    def __repr__(self):\n        R.n += 1\n        return "r"\nr = R()\nshared = 41');
  stock = jc(PROBE).out;
});
after(async () => { await lab?.stop(); });

test('Lab\'s kernel is a stock ipykernel 7 of the venv (the peer is what the pins say)', () => {
  const v = jc('import ipykernel, sys\nprint(ipykernel.__version__, sys.prefix)').out;
  assert.equal(v, `7.4.0 ${path.join(PEERS, 'lab')}\n`, `tests/peers.txt pins ipykernel 7.4.0 in the lab venv; Lab's log:\n${lab.log().slice(-4000)}`);
  assert.match(stock, /^0 0\.2 False False 0\n$/, 'no helper, the stock flush interval, repr never called');
});

const runtimeEnv = () => ({ JUPYTER_RUNTIME_DIR: path.join(lab.dir, 'runtime') });

/** The attach checks of integration.attach, through rat-py started with args. */
async function borrow(args, how, env = {}) {
  const view0 = await labView();
  const h = await connect({ args: [...args, '--log-level', 'info'], env });
  let during;
  try {
    let r = await run(h, 'print(shared)');
    assert.match(r.text, /^41\n\n✓ /, `${how}: Lab's variables`);
    r = await run(h, 'y = 11\nimport sys\nprint(sys.stdout.flush_interval)');
    assert.match(r.text, /^0\.05\n\n✓ \d+ms \| \d+ vars$/, `${how}: rat-py's runs get its shorter streams and the snapshot`);
    const seen = Number(jc('print(R.n)').out);
    assert.ok(seen >= 1, 'rat-py\'s snapshot showed r');
    const other = jc('import sys\nprint(y, sys.stdout.flush_interval)\nq = 1');
    assert.equal(other.out, '11 0.2\n', `${how}: Lab's client sees rat-py's variable, and its streams as they were`);
    assert.deepEqual(other.payload, [], 'no payload in another client\'s reply');
    assert.equal(jc('print(R.n)').out, `${seen}\n`, 'no snapshot for another client\'s runs');
    r = await ctl(h, 'restart');
    assert.equal(r.isError, true);
    assert.match(r.text, /refused unless rat-py runs with --allow-restart/);
    assert.match((await run(h, 'print(q + y)')).text, /^12\n/);
    during = await labView();
  } finally {
    await h.close();
  }
  assert.match(h.stderr(), /left the attached kernel as it was \(the helper took its hooks out\)/, `${how}: the kernel confirmed`);
  // rat-py left: the kernel as Lab had it.
  const after = jc(PROBE);
  assert.equal(after.out.replace(/ \d+\n$/, ''), stock.replace(/ \d+\n$/, ''), `${how}: nothing of rat-py's helper is left`);
  assert.deepEqual(after.payload, []);
  let view1;
  await until(async () => { view1 = await labView(); return view1.state === 'idle' && view1.connections === view0.connections; },
    10_000, 'Lab\'s kernel idle, with the connections it had');
  assert.deepEqual(view1, view0, `${how}: Lab's kernel and session as they were`);
  jc('del y, q');
  return { view0, during };
}

test('--existing kernel-ID.json (Lab\'s runtime dir): borrowed and left exactly as found', async () => {
  // Found the way `jupyter console --existing` finds it: Lab's runtime dir
  // is the user's (JUPYTER_RUNTIME_DIR here).
  const { view0, during } = await borrow(['--existing', `kernel-${kernelId}.json`], 'the connection file', runtimeEnv());
  assert.equal(during.connections, view0.connections, 'over ZeroMQ, not one of Lab\'s WebSockets');
});

test('--gateway LAB --existing ID (Lab\'s REST API and WebSocket): borrowed and left exactly as found', async () => {
  const { view0, during } = await borrow(['--gateway', lab.url, '--gateway-token', TOKEN, '--existing', kernelId], 'the gateway');
  assert.equal(during.connections, view0.connections + 1, 'one more WebSocket on Lab\'s kernel while rat-py is there');
});

test('rat-py killed while attached: Lab\'s client still pays nothing; Lab keeps its kernel', async () => {
  const h = await connect({ args: ['--existing', `kernel-${kernelId}.json`], env: runtimeEnv() });
  let n0;
  try {
    await run(h, 'z = 3');
    n0 = Number(jc('print(R.n)').out);
    process.kill(h.pid(), 'SIGKILL');
  } finally {
    await h.close().catch(() => {});
  }
  for (let i = 0; i < 3; i++) {
    const x = jc(`import sys\nprint(sys.stdout.flush_interval, R.n, z)\nw${i} = ${i}`);
    assert.equal(x.out, `0.2 ${n0} 3\n`, 'no shorter streams, no snapshot');
    assert.deepEqual(x.payload, []);
  }
  const v = await labView();
  assert.equal(v.id, kernelId);
  assert.equal(v.sessionKernel, kernelId);
});
