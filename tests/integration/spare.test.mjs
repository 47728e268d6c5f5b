// --spare: a warm second kernel is swapped in on restart and reset --scope
// all, then replaced; it dies with rat-py like the main one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, run, ctl, until, alive, rawServer, kernelPid, ms, prompt } from './lib.mjs';

async function spareState(h) {
  const { text } = await ctl(h, 'status');
  const m = /spare kernel: (\w+)(?:, pid (\d+))?/.exec(text);
  return m ? { state: m[1], pid: Number(m[2] ?? 0) } : null;
}

test('restart swaps the warm spare in at once, then a new spare boots', async () => {
  const tBoot = Date.now();
  const h = await connect({ args: ['--spare'] });
  try {
    await run(h, 'before = 1');
    const boot = Date.now() - tBoot; // this run's cold start: what a restart without a spare costs
    await until(async () => (await spareState(h)).state === 'ready', 30000, 'the spare to be ready');
    const spare = await spareState(h);
    const t0 = Date.now();
    const r = await ctl(h, 'restart');
    const dt = Date.now() - t0;
    assert.equal(r.text, 'RESTARTED | interpreter reinitialized | 0 vars');
    // 1 s on a quiet machine; on a loaded one, half of this run's cold start
    // (a restart that booted a kernel would take about all of it).
    assert.ok(dt < Math.max(ms(1000), boot / 2), `restart with a warm spare took ${dt} ms (a cold start: ${boot} ms)`);
    const st = await ctl(h, 'status');
    assert.match(st.text, new RegExp(`pid ${spare.pid}\\b`), 'the spare is now the kernel');
    const gone = await run(h, 'before');
    assert.match(gone.text, /NameError: name 'before' is not defined/);
    const look = await run(h, 'x = 1; x');
    assert.match(look.text, /^1\n\n✓ \d+ms \| 1 var$/, 'the helper was installed on the spare');
    await until(async () => (await spareState(h)).state === 'ready', 30000, 'a new spare');
    assert.notEqual((await spareState(h)).pid, spare.pid);
  } finally {
    await h.close();
  }
});

test('reset --scope all uses the spare too: a fresh kernel, counter back to 1', async () => {
  const h = await connect({ args: ['--spare'] });
  try {
    await run(h, 'a = 1');
    await run(h, 'b = 2');
    await until(async () => (await spareState(h)).state === 'ready', 30000, 'the spare to be ready');
    const r = await ctl(h, 'reset', { scope: 'all' });
    assert.match(r.text, /^RESET \| namespace, history and saved outputs cleared \| 0 vars$/);
    const r2 = await run(h, 'c = 3');
    assert.match(r2.text, /1 var$/);
    assert.match((await ctl(h, 'status')).text, /exec #1 /);
  } finally {
    await h.close();
  }
});

test('both kernels die with rat-py', async () => {
  const srv = rawServer(['--spare']);
  await srv.initialize();
  let pids = null;
  for (let i = 0; i < 300 && !pids; i++) {
    srv.send({ jsonrpc: '2.0', id: 100 + i, method: 'tools/call', params: { name: 'ctl', arguments: { op: 'status' } } });
    const t = (await srv.reply(100 + i)).result.content[0].text;
    const m = /pid (\d+)[\s\S]*spare kernel: ready, pid (\d+)/.exec(t);
    if (m) pids = [Number(m[1]), Number(m[2])];
    else await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(pids, 'both kernels up');
  srv.child.stdin.end();
  await srv.exited;
  await until(() => !alive(pids[0]) && !alive(pids[1]), prompt(1000), 'both kernels gone');
  await srv.close();
});

test('the kernel dies while the spare boots, reset --scope all during the automatic restart: the spare is swapped in', async () => {
  // Issue 11 crash 1: the restarted kernel became ready inside its own
  // receive loop, the waiting reset swapped the (now ready) spare in and
  // destroyed that kernel there, and the loop read freed memory (ASan
  // reports it through h.close()). The kill lands halfway through the
  // spare's boot so the spare is ready before the restarted kernel.
  const h = await connect({ args: ['--spare', ...(process.env.RAT_TEST_STDERR ? ['--log-level', 'info'] : [])] });
  try {
    await run(h, 'a = 1');
    const st0 = (await ctl(h, 'status')).text;
    const boot = Number(/ready in (\d+)ms/.exec(st0)?.[1] ?? 1000);
    await until(async () => (await spareState(h))?.state === 'starting', 30000, 'the spare to start booting');
    await new Promise((r) => setTimeout(r, boot / 2));
    const pid = await kernelPid(h);
    const spare = await spareState(h);
    process.kill(pid, 'SIGKILL');
    await until(async () => /^python restarting/.test((await ctl(h, 'status')).text), 10000, 'the automatic restart');
    const r = await ctl(h, 'reset', { scope: 'all' });
    assert.match(r.text, /^RESET \| namespace, history and saved outputs cleared \| 0 vars$/);
    const st = (await ctl(h, 'status')).text;
    assert.match(st, /^python idle/);
    assert.match(st, new RegExp(`pid ${spare.pid}\\b`), 'the spare is the kernel now');
    const r2 = await run(h, 'b = 2; print(b)');
    // The death may be announced here too (no result told of it; in some
    // orderings the swap does not clear the note): true, if redundant
    // after the reset's answer. What this test is about is the crash.
    assert.match(r2.text, /^(\[kernel died [^\n]*\]\n)?2\n/);
  } finally {
    await h.close();
  }
});
