// The shell watchdog (doc/tools.md#a-kernel-that-stops-answering): a kernel
// that answers its heartbeat but not its shell is said to be "not answering"
// after --shell-timeout instead of being waited on. A real kernel cannot be
// made to stall on cue, so fake_kernel.py --silent plays one: it answers its
// heartbeat and the attach handshake, then holds every shell request from
// the first execute_request on, unacknowledged, until SIGUSR1 (then it
// answers them in order, as a kernel that comes back would). rat-py attaches
// with --existing. No timing luck: the stall lasts until the test ends it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { connect, run, ctl, scratch, ms, until, WRAPPED } from './lib.mjs';

const PYTHON = '/usr/bin/python3'; // Debian's, with jupyter_client and pyzmq
const FAKE = path.join(path.dirname(new URL(import.meta.url).pathname), 'fake_kernel.py');
// Short, so the test is quick, yet long enough that the runs the kernel
// takes at once are never taken for silence on a loaded machine; longer
// under a wrapper (valgrind), where rat-py reads their busy late.
const BOUND_S = WRAPPED ? Math.ceil(ms(3000) / 1000) : 4;

async function startFake(file) {
  const child = spawn(PYTHON, [FAKE, file, '--silent'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`fake kernel did not start: ${err}`)), 20_000);
    child.stdout.on('data', (d) => { if (String(d).includes('ready')) { clearTimeout(t); resolve(); } });
    child.on('exit', (code) => { clearTimeout(t); reject(new Error(`fake kernel exited (${code}): ${err}`)); });
  });
  return { child, stderr: () => err };
}

const readJson = async (h, uri) => JSON.parse((await h.client.readResource({ uri })).contents[0].text);

test('a kernel that answers its heartbeat but not its shell: the waiting calls are told, status and watchers say so, and it clears when the kernel answers', async () => {
  const work = scratch();
  const file = path.join(work.dir, 'kernel-fake.json');
  const fake = await startFake(file);
  const h = await connect({ args: ['--existing', file, '--shell-timeout', String(BOUND_S)] });
  h.events = [];
  h.client.fallbackNotificationHandler = async (n) => { if (n.method === 'rat/event') h.events.push(n.params); };
  await h.client.subscribeResource({ uri: 'rat://events' });
  const late = { timeout: BOUND_S * 1000 + ms(60_000) };
  try {
    // The run waits for an hour at most: only the watchdog ends this call.
    const t0 = Date.now();
    const first = await run(h, 'first', { wait: 3600 }, late);
    const took = Date.now() - t0;
    assert.equal(first.isError, true, first.text);
    assert.match(first.text, /^⚠ not answering \| sent \d+s ago, not acknowledged: the kernel answers its heartbeat but not its shell since \d+ s \(a run sent then was never acknowledged\); runs wait in order and go on if it answers again; ctl restart starts a new one \(variables are lost\)\n↳ ctl\(op="wait"\) follows this run/);
    assert.equal(first.result.structuredContent.status, 'running');
    assert.ok(took >= BOUND_S * 1000 - 250, `the watchdog waited its bound (${took} ms)`);

    // ctl status, rat://status and the watchers say so, with the time.
    const st = await ctl(h, 'status');
    assert.match(st.text, /^fake busy \| exec #0 \| .* \| running exec #0 \d+s \(sent \d+s ago, not acknowledged by the kernel\) \| not answering \d+s\n/);
    assert.match(st.text, /\nnot answering: the kernel answers its heartbeat but not its shell since \d+ s/);
    assert.ok(st.result.structuredContent.not_answering_ms >= BOUND_S * 1000 - 250, JSON.stringify(st.result.structuredContent));
    assert.ok((await readJson(h, 'rat://status')).not_answering_ms >= BOUND_S * 1000 - 250);
    await until(() => h.events.some((e) => e.type === 'kernel_not_answering'), ms(10_000), 'the watchers are told');
    const ev = h.events.find((e) => e.type === 'kernel_not_answering');
    assert.match(ev.why, /^the kernel answers its heartbeat but not its shell since \d+ s/);
    assert.ok(ev.run > 0 && ev.since_ms >= BOUND_S * 1000 - 250, JSON.stringify(ev));

    // A run behind it is answered at once with the same reason, and waits.
    const second = await run(h, 'second', { wait: 3600 }, late);
    assert.equal(second.isError, true, second.text);
    assert.match(second.text, /^⚠ not answering \| queued \(1 ahead\), not started: the kernel answers its heartbeat but not its shell since \d+ s/);
    assert.equal(second.result.structuredContent.status, 'queued');
    assert.match((await ctl(h, 'status')).text, /\| not answering \d+s \| 1 queued\n/);

    // The kernel answers again: the state clears, both runs ran in order.
    fake.child.kill('SIGUSR1');
    await until(async () => !/not answering/.test((await ctl(h, 'status')).text), ms(20_000), 'the state clears');
    await until(() => h.events.some((e) => e.type === 'kernel_answering'), ms(10_000), 'the watchers are told it clears');
    const w1 = await ctl(h, 'wait');
    assert.match(w1.text, /^ran: first\n\n✓ [\d.]+m?s$/);
    const w2 = await ctl(h, 'wait');
    assert.match(w2.text, /^ran: second\n\n✓ [\d.]+m?s$/);
    const third = await run(h, 'third', {}, late);
    assert.match(third.text, /^ran: third\n\n✓ [\d.]+m?s$/);
    assert.equal(third.isError, false);
    // A computation longer than the bound is not silence: the kernel said busy.
    const long = await run(h, `sleep ${BOUND_S + 1}`, { wait: 3600 }, late);
    assert.equal(long.isError, false, long.text);
    assert.match(long.text, /^ran: sleep \d+\n\n✓ [\d.]+m?s$/);
    assert.equal(h.events.filter((e) => e.type === 'kernel_not_answering').length, 1);
    const after = await ctl(h, 'status');
    assert.match(after.text, /^fake idle \| exec #4 \|/);
    assert.doesNotMatch(after.text, /not answering/);
    assert.equal(after.result.structuredContent.not_answering_ms, undefined);
  } finally {
    await h.close();
    fake.child.kill('SIGKILL');
    work.cleanup();
  }
});
