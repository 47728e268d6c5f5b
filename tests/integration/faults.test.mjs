// Faults around a real ipykernel: a kernel stopped with SIGSTOP, a Jupyter
// runtime dir that cannot be created, an assets dir that is unusable or full.
// Each gives a clear message, rat-py keeps serving, and the next good action
// works. (A kernel SIGKILLed mid-run, kernelspecs that do not start, stdin
// EOF mid-run and rat-py SIGKILLed are in lifecycle.test.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { connect, run, ctl, kernelPid, alive, until, scratch, ms, prompt } from './lib.mjs';

const UNRESPONSIVE = /\nheartbeat: no reply for 3 s — the kernel process is unresponsive/;

test('a SIGSTOPped kernel: the run returns within its wait, status says unresponsive, cancel and restart bring it back', async () => {
  const h = await connect();
  let pid = 0;
  try {
    await run(h, 'keep = 7');
    pid = await kernelPid(h);
    const t0 = Date.now();
    const running = run(h, 'import time\nfor i in range(600):\n    print(i, flush=True)\n    time.sleep(0.1)', { wait: 4 });
    // Stop it once it is visibly running (its output streams as notifications).
    await until(() => h.logs.some((l) => /^1$/m.test(String(l.data))), ms(4000), 'the run to print');
    process.kill(pid, 'SIGSTOP');
    const r = await running;
    const dt = Date.now() - t0;
    assert.ok(dt >= 3900 && dt < 4000 + prompt(1500), `the run returned after ${dt} ms (wait: 4 s)`);
    assert.match(r.text, /^0\n1(\n\d+)*\n\n⏳ running 4\.\ds \| exec #2\n↳ still running/);
    // The heartbeat is answered by a thread of the stopped process: silent.
    await until(async () => UNRESPONSIVE.test((await ctl(h, 'status')).text), ms(8000), 'status to report the kernel unresponsive');

    // cancel continues the stopped kernel so that it takes the interrupt.
    const c = await ctl(h, 'cancel');
    assert.equal(c.text, 'CANCELLED exec #2');
    // The cancel's answer reported the run's end: ctl wait does not hand it out again.
    const w = await ctl(h, 'wait');
    assert.equal(w.text, 'Nothing to wait for: no run is in progress.');
    const after = await run(h, 'print(keep)');
    assert.match(after.text, /^7\n\n✓ /, 'variables survive the cancel');
    await until(async () => !UNRESPONSIVE.test((await ctl(h, 'status')).text), ms(5000), 'the heartbeat to come back');

    // Stopped again, now idle: restart replaces it.
    process.kill(pid, 'SIGSTOP');
    const rs = await ctl(h, 'restart');
    assert.equal(rs.text, 'RESTARTED | interpreter reinitialized | 0 vars');
    await until(() => !alive(pid), ms(2000), 'the stopped kernel to be gone');
    assert.notEqual(await kernelPid(h), pid);
    const fresh = await run(h, 'print("fresh")');
    assert.match(fresh.text, /^fresh\n\n✓ /);
  } finally {
    if (pid && alive(pid)) process.kill(pid, 'SIGCONT');
    await h.close();
  }
});

test('a Jupyter runtime dir that cannot be created: a private temporary one is used, and removed at exit', async () => {
  const s = scratch();
  const file = path.join(s.dir, 'a-file');
  writeFileSync(file, 'not a directory');
  // Tests run as root, which may write anywhere; nobody can create a
  // directory below a regular file.
  const h = await connect({ env: { JUPYTER_RUNTIME_DIR: path.join(file, 'runtime') } });
  let dir = '';
  try {
    const r = await run(h, 'print("ok")');
    assert.match(r.text, /^ok\n\n✓ /);
    const st = await ctl(h, 'status');
    const m = /\nconnection file: (\/tmp\/rat-py-runtime-[^/\n]+)\/kernel-rat\d+-\d+\.json\n/.exec(st.text);
    assert.ok(m, st.text);
    dir = m[1];
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(m[0].trim().slice('connection file: '.length)).mode & 0o777, 0o600);
    assert.match(h.stderr(), /the Jupyter runtime dir \S+\/a-file\/runtime is not writable \(Not a directory\); using \/tmp\/rat-py-runtime-/);
  } finally {
    await h.close();
    s.cleanup();
  }
  await until(() => !existsSync(dir), ms(2000), 'the temporary runtime dir to be removed');
});

const MANY_LINES = 'for i in range(150): print("line", i)';

test('an assets dir that cannot be created: the result says the full output was not saved, and serving goes on', async () => {
  const s = scratch();
  const file = path.join(s.dir, 'a-file');
  writeFileSync(file, 'not a directory');
  const h = await connect({ args: ['--assets-dir', path.join(file, 'assets')] });
  try {
    const r = await run(h, MANY_LINES);
    assert.equal(r.isError, false);
    assert.match(r.text, /\nline 49\n… \[50 lines truncated\] …\nline 100\n/);
    assert.match(r.text, /\nline 149\n\[full output not saved: cannot create \S+\/a-file\/assets: Not a directory\]\n\n✓ /);
    const again = await run(h, 'print("next")');
    assert.match(again.text, /^next\n\n✓ /);
  } finally {
    await h.close();
    s.cleanup();
  }
});

test('a full assets dir (a 64 KiB tmpfs): the partial file is removed, the result says why, the next run saves', async (t) => {
  const s = scratch();
  const assets = path.join(s.dir, 'assets');
  mkdirSync(assets);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'tmpfs', assets], { stdio: 'pipe' });
  } catch (e) {
    s.cleanup();
    t.skip(`cannot mount a tmpfs here (${String(e.stderr ?? e.message).trim()}); the unwritable-dir test covers the message`);
    return;
  }
  const h = await connect({ args: ['--assets-dir', assets] });
  try {
    // About 150 KB of output: more than the file system holds.
    const r = await run(h, 'for i in range(1500): print(f"{i:5d}", "x" * 94)');
    assert.equal(r.isError, false);
    assert.match(r.text, /… \[1400 lines truncated\] …/);
    assert.match(r.text, /\n\[full output not saved: \S+\/assets\/output-[0-9a-f]{16}\.txt: No space left on device\]\n\n✓ /);
    assert.deepEqual(readdirSync(assets), [], 'the partial file is gone');
    const st = await ctl(h, 'status');
    assert.match(st.text, /^python idle \|/);
    // Space is free again: a smaller cut output is saved whole.
    const ok = await run(h, MANY_LINES);
    const m = /\n\[full output: (\S+\/assets\/output-[0-9a-f]{16}\.txt)\]\n\n✓ /.exec(ok.text);
    assert.ok(m, ok.text);
    const whole = Array.from({ length: 150 }, (_, i) => `line ${i}\n`).join('');
    assert.equal(statSync(m[1]).size, whole.length, 'the whole output, every line');
    assert.equal(statSync(m[1]).mode & 0o777, 0o600, 'readable by its owner only');
  } finally {
    await h.close();
    try { execFileSync('umount', ['-l', assets], { stdio: 'pipe' }); } catch { /* already gone */ }
    s.cleanup();
  }
});

test('a kernel that dies on an interrupt (as xeus-python does) is restarted, and the next result says so', async () => {
  // The real ipykernel, made to exit on SIGINT the way xeus-python does:
  // ctl cancel then kills it while nobody follows the run (its caller
  // returned after `wait`). The automatic restart used to go unsaid, and
  // the next run was a bare NameError (issue 11 item 11).
  const h = await connect();
  try {
    await run(h, 'x = 1');
    const pid = await kernelPid(h);
    const r = await run(h, 'import os, signal, time\nsignal.signal(signal.SIGINT, lambda *a: os._exit(0))\ntime.sleep(60)', { wait: 1 });
    assert.match(r.text, /⏳ running/);
    await ctl(h, 'cancel');
    await until(async () => !alive(pid), ms(10_000), 'the kernel to exit on the interrupt');
    const next = await run(h, 'print(x)', { wait: 60 });
    assert.match(next.text, /^\[kernel died \(exit code 0\); a new kernel was started, variables are lost\]\n/);
    assert.match(next.text, /NameError/);
    const after = await run(h, 'print(2)');
    assert.match(after.text, /^2\n/, 'said once');
    assert.match((await ctl(h, 'status')).text, /automatic restarts: 1/);
  } finally {
    await h.close();
  }
});
