// ctl: cancel, restart, reset scope, status while busy, wait and the run
// wait window; runs queued behind a running one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, run, ctl, call, prompt } from './lib.mjs';

test('cancel interrupts `while True: pass` and keeps the variables', async () => {
  const h = await connect();
  try {
    await run(h, 'keep = 123');
    const running = run(h, 'while True: pass');
    await new Promise((r) => setTimeout(r, 500));
    const t0 = Date.now();
    const c = await ctl(h, 'cancel');
    assert.equal(c.text, 'CANCELLED exec #2');
    assert.ok(Date.now() - t0 < prompt(5000), `cancel returned after ${Date.now() - t0} ms`);
    const r = await running;
    assert.equal(r.isError, true);
    assert.match(r.text, /KeyboardInterrupt/);
    const after = await run(h, 'print(keep)');
    assert.match(after.text, /^123\n\n✓ \d+ms \| 1 var$/);
  } finally {
    await h.close();
  }
});

test('cancel with nothing running says so', async () => {
  const h = await connect();
  try {
    const c = await ctl(h, 'cancel');
    assert.equal(c.text, 'No active execution.');
    assert.equal(c.isError, false);
  } finally {
    await h.close();
  }
});

test('restart gives a fresh interpreter', async () => {
  const h = await connect();
  try {
    await run(h, 'gone = 1');
    const pid1 = /pid (\d+)/.exec((await ctl(h, 'status')).text)[1];
    const r = await ctl(h, 'restart');
    assert.equal(r.text, 'RESTARTED | interpreter reinitialized | 0 vars');
    const pid2 = /pid (\d+)/.exec((await ctl(h, 'status')).text)[1];
    assert.notEqual(pid1, pid2);
    const r2 = await run(h, 'gone');
    assert.equal(r2.isError, true);
    assert.match(r2.text, /NameError: name 'gone' is not defined/);
    const r3 = await run(h, 'print("works")');
    assert.match(r3.text, /^works\n\n✓ /);
  } finally {
    await h.close();
  }
});

test('restart during a run ends that run with a clear text', async () => {
  const h = await connect();
  try {
    const running = run(h, 'import time; time.sleep(30)');
    await new Promise((r) => setTimeout(r, 300));
    const r = await ctl(h, 'restart');
    assert.equal(r.text, 'RESTARTED | interpreter reinitialized | 0 vars');
    const rr = await running;
    assert.equal(rr.isError, true);
    assert.match(rr.text, /the kernel was restarted/);
  } finally {
    await h.close();
  }
});

test('reset --scope all also resets the execution counter', async () => {
  const h = await connect();
  try {
    await run(h, 'a = 1');
    await run(h, 'b = 2');
    const r = await ctl(h, 'reset', { scope: 'all' });
    assert.match(r.text, /^RESET \| namespace, history and saved outputs cleared \| 0 vars$/);
    const r2 = await run(h, 'c = 3');
    assert.match(r2.text, /1 var$/);
    const st = await ctl(h, 'status');
    assert.match(st.text, /exec #1 /);
  } finally {
    await h.close();
  }
});

test('reset while code runs is refused', async () => {
  const h = await connect();
  try {
    // While the kernel boots, a run sent first is queued: a reset after it waits its turn.
    const queued = run(h, 'import time; time.sleep(2)');
    const r0 = await ctl(h, 'reset');
    assert.equal(r0.isError, true);
    assert.match(r0.text, /^BUSY: exec #1 is (queued|running)/);
    await queued;
    const running = run(h, 'time.sleep(2)');
    await new Promise((r) => setTimeout(r, 300));
    const r = await ctl(h, 'reset');
    assert.equal(r.isError, true);
    assert.match(r.text, /^BUSY: exec #2 is running/);
    await running;
  } finally {
    await h.close();
  }
});

test('status while busy shows the running exec', async () => {
  const h = await connect();
  try {
    await run(h, 'pass'); // the kernel is booted and exec #1 is done
    const running = run(h, 'import time; time.sleep(1.5)');
    await new Promise((r) => setTimeout(r, 1100));
    const st = await ctl(h, 'status');
    assert.match(st.text.split('\n')[0], /^python busy \| exec #1 \| rev \d+ \| up \d+s \| running exec #2 1s$/);
    await running;
  } finally {
    await h.close();
  }
});

test('a long run returns after `wait` with the output so far; ctl wait continues where it stopped', async () => {
  const h = await connect();
  try {
    await run(h, 'pass'); // boot first: the wait window counts from the call
    const code = 'import time\nfor i in range(8):\n    print("tick", i, flush=True)\n    time.sleep(0.5)\nprint("end")';
    const r1 = await run(h, code, { wait: 1.2 });
    assert.equal(r1.isError, false);
    assert.match(r1.text, /^tick 0\ntick 1\ntick 2\n\n⏳ running 1\.\ds \| exec #2\n↳ still running: ctl\(op="wait"\) follows it, ctl\(op="cancel"\) stops it$/);
    const r2 = await ctl(h, 'wait');
    assert.match(r2.text, /^tick 3\ntick 4\ntick 5\ntick 6\ntick 7\nend\n\n✓ \d\.\ds \| 1 var$/, 'only the new output');
    const r3 = await ctl(h, 'wait');
    assert.match(r3.text, /Nothing to wait for/);
  } finally {
    await h.close();
  }
});

test('the default wait returns a 40 s loop after 25 s; ctl wait collects the end', async () => {
  const h = await connect();
  try {
    const t0 = Date.now();
    const r1 = await run(h, 'import time\nfor i in range(40):\n    time.sleep(1)\nprint("finished")');
    const dt = Date.now() - t0;
    assert.ok(dt >= 24_500 && dt < 25_000 + prompt(2500), `returned after ${dt} ms`);
    assert.match(r1.text, /^⏳ running 2\d\.\ds \| exec #1\n/);
    const r2 = await ctl(h, 'wait');
    assert.match(r2.text, /^finished\n\n✓ (3\d|4\d)\.\ds \| 1 var$/);
  } finally {
    await h.close();
  }
});

test('a run sent while another runs is queued and runs next, in order', async () => {
  const h = await connect();
  try {
    const first = run(h, 'import time; time.sleep(1); order = ["first"]');
    await new Promise((r) => setTimeout(r, 100));
    const second = run(h, 'order.append("second"); print(order)');
    const [a, b] = await Promise.all([first, second]);
    assert.match(a.text, /^✓ /);
    assert.match(b.text, /^\['first', 'second'\]\n\n✓ /);
  } finally {
    await h.close();
  }
});

test('a queued run that outlives its wait says it is queued, and still runs', async () => {
  const h = await connect();
  try {
    const first = run(h, 'import time; time.sleep(2)');
    await new Promise((r) => setTimeout(r, 100));
    const second = await run(h, 'print("later")', { wait: 0.5 });
    assert.match(second.text, /^⏳ queued \(1 ahead\) \| not started yet\n/);
    await first;
    const w = await ctl(h, 'wait');
    assert.match(w.text, /^later\n\n✓ /);
  } finally {
    await h.close();
  }
});

test('an MCP cancellation interrupts the run and sends no response', async () => {
  const h = await connect();
  try {
    await run(h, 'keep = 5');
    const ac = new AbortController();
    const p = h.client.callTool({ name: 'run', arguments: { code: 'while True: pass' } }, undefined, { signal: ac.signal });
    await new Promise((r) => setTimeout(r, 400));
    ac.abort('test cancels');
    await assert.rejects(p);
    // The kernel was interrupted: the next run works at once and state survived.
    const t0 = Date.now();
    const r = await run(h, 'print(keep)');
    assert.match(r.text, /^5\n\n✓ /);
    assert.ok(Date.now() - t0 < prompt(5000), `the next run took ${Date.now() - t0} ms`);
  } finally {
    await h.close();
  }
});
