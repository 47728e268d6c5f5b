// --existing: a kernel someone else started (here `python3 -m
// ipykernel_launcher -f FILE`, driven by jupyter_client as its owner).
// State is shared both ways, restart is refused, rat-py's exit leaves the
// kernel running, and the kernel's death is noticed by heartbeat.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect, run, ctl, until, alive, rawServer } from './lib.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);

/** Starts an ipykernel on a connection file we choose; resolves once it answers. */
async function ownKernel(dir, name = 'kernel-attach.json') {
  const file = path.join(dir, name);
  const proc = spawn('/usr/bin/python3', ['-m', 'ipykernel_launcher', '-f', file], { stdio: 'ignore', detached: true });
  await until(() => existsSync(file) && readFileSync(file, 'utf8').includes('"key"'), 30_000, 'the connection file');
  jc(file, 'pass');
  return { file, proc, kill: () => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } } };
}

/** Runs code through jupyter_client (the owner) and returns its stdout. */
function jc(file, code) {
  const p = spawnSync('/usr/bin/python3', [path.join(here, 'jclient.py'), file, code], { encoding: 'utf8', timeout: 60_000 });
  if (p.status !== 0) throw new Error(`jupyter_client: ${p.stderr}`);
  return p.stdout;
}

test('state is shared with the owner both ways; restart is refused; exit leaves the kernel running', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-attach-'));
  const k = await ownKernel(dir);
  try {
    jc(k.file, 'shared = 41');
    const h = await connect({ args: ['--existing', k.file] });
    let pid;
    try {
      let r = await run(h, 'print(shared)');
      assert.match(r.text, /^41\n\n✓ /);
      r = await run(h, 'shared += 1\nimport os; kernel_pid = os.getpid()');
      assert.equal(r.isError, false);
      assert.equal(jc(k.file, 'print(shared)'), '42\n', 'the owner sees the change');
      pid = Number((await run(h, 'print(kernel_pid)')).text.split('\n')[0]);
      r = await ctl(h, 'restart');
      assert.equal(r.isError, true);
      assert.match(r.text, /refused unless rat-py runs with --allow-restart/);
      r = await ctl(h, 'status');
      assert.match(r.text, new RegExp(`kernel: attached via ${k.file}`));
      // cancel goes by interrupt_request (there is no process of ours to signal)
      r = await run(h, 'import time\nprint("sleeping", flush=True)\ntime.sleep(30)', { wait: 1 });
      assert.match(r.text, /^sleeping\n\n⏳ running/);
      r = await ctl(h, 'cancel');
      assert.match(r.text, /^CANCELLED exec #\d+$/);
      // CANCELLED is said once the run ended on the interrupt; that answer
      // reported its end, so ctl wait has nothing left to give.
      assert.equal((await ctl(h, 'wait')).text, 'Nothing to wait for: no run is in progress.');
    } finally {
      await h.close();
    }
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(alive(pid), 'the kernel outlives rat-py');
    assert.equal(jc(k.file, 'print(shared)'), '42\n');
    assert.ok(existsSync(k.file), 'its connection file is left alone');
  } finally {
    k.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('found by name in the Jupyter runtime dir, like jupyter console --existing', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-attach-'));
  const k = await ownKernel(dir, 'kernel-3f9a-named.json');
  try {
    const h = await connect({ args: ['--existing', '3f9a'], env: { JUPYTER_RUNTIME_DIR: dir } });
    try {
      const r = await ctl(h, 'status');
      assert.match(r.text, new RegExp(`attached via ${k.file}`));
    } finally {
      await h.close();
    }
  } finally {
    k.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a killed attached kernel is detected by heartbeat while idle', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-attach-'));
  const k = await ownKernel(dir);
  const h = await connect({ args: ['--existing', k.file] });
  try {
    await run(h, 'x = 1');
    k.kill();
    const ms = await until(async () => /^python dead/.test((await ctl(h, 'status')).text), 40_000, 'death by heartbeat');
    assert.ok(ms < 40_000);
    const st = await ctl(h, 'status');
    assert.match(st.text, /has not answered its heartbeat for \d+ s while idle/);
    const r = await run(h, 'print(1)');
    assert.equal(r.isError, true);
    assert.match(r.text, /the attached kernel is gone/);
  } finally {
    await h.close();
    k.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--allow-restart: the owner restarts the kernel on the same file; variables are gone', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-attach-'));
  const file = path.join(dir, 'kernel-owned.json');
  const stop = path.join(dir, 'stop');
  // An owner that restarts its kernel whenever it exits (what a Jupyter
  // server's restarter does), bounded to a few restarts.
  // Like a Jupyter server, the owner writes the connection file itself (a
  // kernel removes a file it wrote when it exits).
  const owner = spawn('/bin/bash', ['-c', `/usr/bin/python3 -c 'import sys; from jupyter_client.connect import write_connection_file; write_connection_file(sys.argv[1])' ${file}
    for i in 1 2 3; do [ -e ${stop} ] && break; /usr/bin/python3 -m ipykernel_launcher -f ${file}; done`], { stdio: 'ignore', detached: true });
  try {
    await until(() => existsSync(file) && readFileSync(file, 'utf8').includes('"key"'), 30_000, 'the connection file');
    jc(file, 'before = 1');
    const h = await connect({ args: ['--existing', file, '--allow-restart'] });
    try {
      assert.match((await run(h, 'print(before)')).text, /^1\n/);
      const r = await ctl(h, 'restart');
      assert.equal(r.text, 'RESTARTED | interpreter reinitialized | 0 vars');
      const r2 = await run(h, 'before');
      assert.equal(r2.isError, true);
      assert.match(r2.text, /NameError/);
    } finally {
      await h.close();
    }
  } finally {
    writeFileSync(stop, '');
    try { process.kill(-owner.pid, 'SIGKILL'); } catch { /* gone */ }
    rmSync(dir, { recursive: true, force: true });
  }
});

// The first look {at} right after attaching, before the kernel has answered
// kernel_info, must go through rat-py's helper like every later one, not fall
// back to IPython's raw inspector text (`Type: int / String form: 99`). A
// client that starts rat-py per call (mcp2cli without a daemon) sends it at once.
test('the first look {at} after attaching is answered by the helper', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-attach-'));
  const k = await ownKernel(dir);
  try {
    jc(k.file, 'x = 99');
    const srv = rawServer(['--existing', k.file]);
    try {
      srv.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
      srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      srv.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'look', arguments: { at: 'x' } } });
      const first = (await srv.reply(1)).result;
      srv.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'look', arguments: { at: 'x' } } });
      const second = (await srv.reply(2)).result;
      assert.equal(first.isError, false, first.content[0].text);
      assert.doesNotMatch(first.content[0].text, /String form|Type:/, 'not the raw inspector text');
      assert.equal(first.content[0].text, second.content[0].text);
      assert.match(first.content[0].text, /^x: int = 99$/m);
    } finally {
      await srv.close();
    }
  } finally {
    k.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--allow-restart: a restart nothing carries out fails and says so, even as the first call', async () => {
  // A kernel with no owner to start it again (python -m ipykernel_launcher).
  // ctl restart as the very first call used to answer RESTARTED at once
  // while the kernel was still being attached: its own last answers passed
  // for the restarted kernel (issue 11 item 7).
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-attach-'));
  const k = await ownKernel(dir);
  const h = await connect({ args: ['--existing', k.file, '--allow-restart'] });
  try {
    const r = await ctl(h, 'restart');
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /the attached kernel shut down for the restart and nothing started it again/);
    const st = await ctl(h, 'status');
    assert.match(st.text, /^python dead|^kernel dead/);
  } finally {
    await h.close();
    k.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs code through jupyter_client and returns { out, payload } (the reply's payload list). */
function jcReply(file, code) {
  const p = spawnSync('/usr/bin/python3', [path.join(here, 'jclient.py'), file, code, '--payload'], { encoding: 'utf8', timeout: 60_000 });
  if (p.status !== 0) throw new Error(`jupyter_client: ${p.stderr}`);
  const i = p.stdout.lastIndexOf('PAYLOAD ');
  return { out: p.stdout.slice(0, i), payload: JSON.parse(p.stdout.slice(i + 8)) };
}

// What the kernel shows its other clients about rat-py's helper: its hooks,
// the streams' flush interval (an instance value shadowing the class's 0.2 s
// when changed), the module, and how often a snapshot touched the user's
// objects (R's repr counts its calls).
const PROBE = "import sys\ncbs = get_ipython().events.callbacks\n" +
  "print(sum(getattr(c, '_rat_hook', False) for e in ('pre_run_cell', 'post_run_cell') for c in cbs[e]), " +
  "sys.stdout.flush_interval, 'flush_interval' in vars(sys.stdout), '_rat' in sys.modules, R.n)";

test('a kernel rat-py attached to: other clients never pay for its helper, and after rat-py leaves (even killed) it is as it was', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-attach-'));
  const k = await ownKernel(dir);
  try {
    jc(k.file, 'class R:\n    n = 0\n    def __repr__(self):\n        R.n += 1\n        return "r"\nr = R()');
    const before = jc(k.file, PROBE);
    assert.equal(before, '0 0.2 False False 0\n', 'a stock kernel');
    let h = await connect({ args: ['--existing', k.file] });
    try {
      let r = await run(h, 'y = 11\nimport sys\nprint(sys.stdout.flush_interval)');
      assert.match(r.text, /^0\.05\n\n✓ \d+ms \| \d+ vars$/, 'rat-py\'s runs: shorter stream messages and the snapshot');
      const seenByRat = Number(jc(k.file, 'print(R.n)'));
      assert.ok(seenByRat >= 1, 'rat-py\'s snapshot showed r');
      // Another client's runs, while rat-py is attached: no payload in its
      // replies, its streams as they were, no snapshot taken.
      const other = jcReply(k.file, 'import sys\nprint(sys.stdout.flush_interval)\nq = 1');
      assert.equal(other.out, '0.2\n');
      assert.deepEqual(other.payload, []);
      assert.equal(jc(k.file, 'print(R.n)'), `${seenByRat}\n`);
      assert.match(jc(k.file, PROBE), /^2 0\.2 False True \d+\n$/, 'hooked, but not for this client');
      r = await run(h, 'print(q + y)');
      assert.match(r.text, /^12\n/);
    } finally {
      await h.close();
    }
    // rat-py left: nothing of it remains.
    const after = jcReply(k.file, PROBE);
    assert.equal(after.out.replace(/ \d+\n$/, ''), '0 0.2 False False');
    assert.deepEqual(after.payload, []);
    // Killed while attached: its hooks stay, and cost other clients nothing.
    h = await connect({ args: ['--existing', k.file] });
    let n0;
    try {
      await run(h, 'z = 3');
      n0 = Number(jc(k.file, 'print(R.n)'));
      process.kill(h.pid(), 'SIGKILL');
    } finally {
      await h.close().catch(() => {});
    }
    for (let i = 0; i < 3; i++) {
      const x = jcReply(k.file, `import sys\nprint(sys.stdout.flush_interval, R.n)\nw${i} = ${i}`);
      assert.equal(x.out, `0.2 ${n0}\n`, 'no shorter streams, no snapshot');
      assert.deepEqual(x.payload, []);
    }
  } finally {
    k.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
