// Cancel is aimed at a run, and no run waits forever on the kernel (issue 19):
// a cancel that lands while ipykernel dispatches, a run cancelled before it
// started, a stopped kernel, ctl wait after a cancel.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, run, ctl, call, kernelPid, until, ms, WRAPPED } from './lib.mjs';

const sleep = (t) => new Promise((r) => setTimeout(r, t));
// Every answer a cancel may give, each saying what really happened.
const VERDICT = /^(CANCELLED exec #\d+(: lost by the kernel after an interrupt .*)?|CANCELLED before it started|NOT CANCELLED: exec #\d+ ended on its own .*|No active execution\.)$/;
// Under valgrind rat-py's own 5 s wait for an interrupted run to end is not
// scaled as the tests' bounds are (ms()): the clean-clone run beside two
// soaks (load 7) once saw it pass, truly said. The next run must still work.
const verdict = (t) => VERDICT.test(t) || (WRAPPED && /^exec #\d+ did not stop within 5 s of the interrupt /.test(t));

test('run, cancel at once, run: the queue never wedges (ipykernel drops a request interrupted while it dispatches)', async () => {
  const h = await connect();
  try {
    await run(h, 'pass');
    // The SIGINT must land in the few ms between the end of the sleep and the
    // reply: sweep the offset so some rounds hit that window (before the fix
    // about one round in 20 left the next run queued forever).
    for (let i = 0; i < 80; i++) {
      await run(h, 'import time; time.sleep(0.02)', { wait: 0 });
      await sleep(i % 40);
      const c = await ctl(h, 'cancel');
      assert.ok(verdict(c.text), c.text);
      const t0 = Date.now();
      const r = await run(h, `print('alive${i}')`, { wait: 10 });
      assert.match(r.text, new RegExp(`^alive${i}\\n(.*\\n)*\\n✓ `), `round ${i} (cancel said ${c.text}): ${r.text}\n${(await ctl(h, 'status')).text}`);
      assert.ok(Date.now() - t0 < ms(5000), `round ${i}: the next run took ${Date.now() - t0} ms`);
    }
    const s = await ctl(h, 'status');
    assert.match(s.text, /^python idle /);
  } finally {
    await h.close();
  }
});

test('cancels in quick succession of a run waiting for input() never wedge the queue', async () => {
  const h = await connect();
  try {
    await run(h, 'pass');
    for (let i = 0; i < 40; i++) {
      const r = await run(h, 'y = input("q: ")', { wait: 10 });
      assert.match(r.text, /INPUT REQUESTED/);
      const cs = [];
      for (let k = 0; k < 3; k++) {
        cs.push(ctl(h, 'cancel'));
        await sleep((i % 8) * 3);
      }
      for (const c of await Promise.all(cs)) assert.match(c.text, VERDICT);
      const next = await run(h, `print('alive${i}')`, { wait: 10 });
      assert.match(next.text, new RegExp(`^alive${i}\\n(.*\\n)*\\n✓ `), `round ${i}: ${next.text}`);
    }
  } finally {
    await h.close();
  }
});

test('a cancel while the kernel starts drops the queued run, it never runs', async () => {
  const h = await connect();
  try {
    const r = await run(h, 'print("should not run")', { wait: 0 });
    assert.match(r.text, /^⏳ queued/);
    const c = await ctl(h, 'cancel');
    assert.equal(c.text, 'CANCELLED before it started');
    const w = await ctl(h, 'wait');
    assert.equal(w.text, 'Nothing to wait for: no run is in progress.');
    const after = await run(h, 'print("next")');
    assert.match(after.text, /^next\n(.*\n)*\n✓ /);
    assert.match((await ctl(h, 'status')).text, /^python idle \| exec #1 /);
  } finally {
    await h.close();
  }
});

test('a cancel of a SIGSTOPped kernel says what really happened', async () => {
  const h = await connect();
  let pid = 0;
  try {
    await run(h, 'pass'); // the kernel is up: the run below starts at once
    pid = await kernelPid(h);
    const r = await run(h, "import time; time.sleep(2); print('ran to end')", { wait: 1 });
    assert.match(r.text, /^⏳ running/);
    process.kill(pid, 'SIGSTOP');
    await sleep(1500); // the sleep is over while the kernel is stopped
    const c = await ctl(h, 'cancel');
    const w = await ctl(h, 'wait');
    // SIGINT is pending when SIGCONT wakes the kernel, and which of its
    // threads takes it decides where KeyboardInterrupt lands: in the sleep
    // (CANCELLED), after the cell in ipykernel's dispatch code, which then
    // never replies (lost by the kernel: the shell probe is answered first),
    // or nowhere once the cell had already ended (NOT CANCELLED).
    if (/^CANCELLED exec #\d+(: lost by the kernel after an interrupt \(it never finished it; the queue moves on\))?$/.test(c.text)) {
      // Interrupted or lost: the cancel reported the end; ctl wait has nothing left.
      assert.equal(w.text, 'Nothing to wait for: no run is in progress.');
    } else {
      assert.match(c.text, /^NOT CANCELLED: exec #2 ended on its own \(✓\)/);
      assert.match(w.text, /^ran to end\n(.*\n)*\n✓ /);
    }
    const after = await run(h, 'print("next")');
    assert.match(after.text, /^next\n(.*\n)*\n✓ /);
  } finally {
    if (pid) try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ }
    await h.close();
  }
});

test('code that survives the interrupt: the cancel says it was not cancelled, and the result is still there', async () => {
  const h = await connect();
  try {
    const code = "import time\ntry:\n    print('inside', flush=True)\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    pass\nprint('ran to end')";
    const running = run(h, code, { wait: 60 });
    // Cancel once the code is inside the try (its output streams as notifications).
    await until(() => h.logs.some((l) => /inside/.test(String(l.data))), ms(20000), 'the run to start');
    const c = await ctl(h, 'cancel');
    assert.equal(c.text, 'NOT CANCELLED: exec #1 ended on its own (✓): it finished before the interrupt arrived, or caught it; ctl(op="wait") or its run call has its result');
    const r = await running;
    assert.match(r.text, /^inside\nran to end\n(.*\n)*\n✓ /);
    const after = await run(h, 'print("next")');
    assert.match(after.text, /^next\n(.*\n)*\n✓ /);
  } finally {
    await h.close();
  }
});

test('ctl wait after a cancel follows the run that is going, not the cancelled one (issue 11 item 6)', async () => {
  const h = await connect();
  try {
    await run(h, 'pass');
    const r1 = await run(h, 'import time; time.sleep(60)', { wait: 1 });
    assert.match(r1.text, /^⏳ running/);
    const c = await ctl(h, 'cancel');
    assert.match(c.text, /^CANCELLED exec #\d+$/);
    const r2 = await run(h, "import time\nfor i in range(3):\n    print('loop', i, flush=True)\n    time.sleep(1)", { wait: 0.5 });
    assert.match(r2.text, /^(loop 0\n\n)?⏳ running/);
    const w = await ctl(h, 'wait');
    assert.match(w.text, /loop 2\n(.*\n)*\n✓ /);
    assert.doesNotMatch(w.text, /KeyboardInterrupt/);
  } finally {
    await h.close();
  }
});

test('a stopped kernel: reset, look and completion answer within a bound, and status shows the reset', async () => {
  const h = await connect();
  let pid = 0;
  try {
    await run(h, 'x = 5');
    pid = await kernelPid(h);
    process.kill(pid, 'SIGSTOP');
    let t0 = Date.now();
    const reset = ctl(h, 'reset');
    await sleep(300);
    assert.match((await ctl(h, 'status')).text, /^python idle \| exec #1 \| .* \| reset pending \ds/);
    const rs = await reset;
    assert.ok(Date.now() - t0 < ms(8000), `reset answered after ${Date.now() - t0} ms`);
    assert.equal(rs.isError, true);
    assert.match(rs.text, /^reset not confirmed: the kernel did not answer within 5 s \(.*\); the reset is still queued in the kernel and happens when it resumes$/);
    t0 = Date.now();
    const [at, comp] = await Promise.all([call(h, 'look', { at: 'x' }), call(h, 'look', { code: 'pri', cursor: 3 })]);
    assert.ok(Date.now() - t0 < ms(6000), `look answered after ${Date.now() - t0} ms`);
    assert.equal(at.isError, true);
    assert.match(at.text, /^x: the kernel did not answer within \d+ s/);
    assert.match(comp.text, /^look: completion failed: the kernel did not answer within 3 s/);
    process.kill(pid, 'SIGCONT');
    // The reset was queued in the kernel: it happens once the kernel resumes.
    const r = await run(h, 'print("x" in globals())');
    assert.match(r.text, /^False\n(.*\n)*\n✓ /);
    assert.doesNotMatch((await ctl(h, 'status')).text, /reset pending/);
  } finally {
    if (pid) try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ }
    await h.close();
  }
});

for (const spare of [false, true]) {
  test(`the execution counter starts again after a restart${spare ? ' (spare swap)' : ''}`, async () => {
    const h = await connect({ args: spare ? ['--spare'] : [] });
    try {
      for (let i = 0; i < 3; i++) await run(h, `v${i} = ${i}`);
      if (spare) await until(async () => /spare kernel: ready/.test((await ctl(h, 'status')).text), ms(30000), 'the spare');
      assert.match((await ctl(h, 'restart')).text, /^RESTARTED/);
      assert.match((await ctl(h, 'status')).text, /^python idle \| exec #0 /);
      assert.match((await call(h, 'look', {})).text, /^python idle \| 0 vars \| exec #0\n/);
      const r = await run(h, '1 + 1');
      assert.match(r.text, /^2\n\n✓ /);
      assert.match((await ctl(h, 'status')).text, /^python idle \| exec #1 /);
    } finally {
      await h.close();
    }
  });
}

test('ctl status shows a run the kernel has not acknowledged, and one that was interrupted', async () => {
  const h = await connect();
  let pid = 0;
  try {
    await run(h, 'pass');
    pid = await kernelPid(h);
    process.kill(pid, 'SIGSTOP');
    const r = await run(h, 'print("late")', { wait: 1 });
    assert.match(r.text, /^⏳ running/);
    assert.match((await ctl(h, 'status')).text, /^python busy \| exec #1 \| .* \| running exec #0 \d+s \(sent \ds ago, not acknowledged by the kernel\)\n/);
    process.kill(pid, 'SIGCONT');
    const w = await ctl(h, 'wait');
    assert.match(w.text, /^late\n(.*\n)*\n✓ /);
    const running = run(h, 'import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    time.sleep(30)', { wait: 0.5 });
    await running;
    const c = ctl(h, 'cancel');
    await until(async () => /^python busy .* \| running exec #3 \d+s \(interrupted \ds ago\)\n/.test((await ctl(h, 'status')).text), ms(4000), 'status to show the interrupt');
    assert.match((await c).text, /^exec #3 did not stop within 5 s of the interrupt/);
    await ctl(h, 'restart');
  } finally {
    if (pid) try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ }
    await h.close();
  }
});

test('look does not wait behind a C call that holds the interpreter', async () => {
  const h = await connect();
  try {
    await run(h, 'x = 99');
    const r = await run(h, "import re; re.match(r'(a*)*b', 'a' * 29)", { wait: 0.5 });
    assert.match(r.text, /^⏳ running/);
    const t0 = Date.now();
    const at = await call(h, 'look', { at: 'x' });
    assert.ok(Date.now() - t0 < ms(6000), `look answered after ${Date.now() - t0} ms`);
    assert.match(at.text, /^x: the kernel did not answer within 3 s \(busy: the running code holds the interpreter/);
    assert.match((await ctl(h, 'restart')).text, /^RESTARTED/);
  } finally {
    await h.close();
  }
});

test('the queue of runs is bounded: past 256 waiting runs, run says so and nothing is queued', async () => {
  const h = await connect();
  try {
    await run(h, 'pass'); // the kernel is up: the sleep below runs, it does not wait in the queue
    let r = await run(h, 'import time\ntime.sleep(60)', { wait: 0 });
    assert.match(r.text, /⏳ running/);
    for (let i = 0; i < 256; i++) {
      r = await run(h, `q${i} = ${i}`, { wait: 0 });
      assert.match(r.text, /⏳ queued/, `run ${i}`);
    }
    r = await run(h, 'one_too_many = 1', { wait: 0 });
    assert.equal(r.isError, true);
    assert.equal(r.text, 'run: 256 runs are already waiting in the queue (at most 256): wait for them (ctl(op="wait")), then run again');
    assert.match((await ctl(h, 'status')).text, /\| 256 queued/);
  } finally {
    await h.close();
  }
});
