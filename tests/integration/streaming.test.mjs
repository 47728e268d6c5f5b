// Output streams to the client while code runs: logging notifications
// (honouring logging/setLevel), progress with a progressToken, coalescing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, run } from './lib.mjs';

test('stdout arrives as notifications/message during the call, before the result', async () => {
  const h = await connect();
  try {
    await run(h, 'pass');
    h.logs.length = 0;
    const t0 = Date.now();
    const r = await run(h, 'import time\nprint("early", flush=True)\ntime.sleep(1)\nprint("late")');
    const tEnd = Date.now();
    const early = h.logs.find((l) => l.data.includes('early'));
    assert.ok(early, 'a notification carried the first line');
    assert.equal(early.logger, 'stdout');
    assert.equal(early.level, 'info');
    assert.ok(early.at - t0 < 800 && tEnd - early.at > 500, 'it came while the code was still running');
    assert.match(r.text, /^early\nlate\n\n✓ /, 'the result still holds all the output');
  } finally {
    await h.close();
  }
});

test('stderr is logged at warning level with logger stderr', async () => {
  const h = await connect();
  try {
    await run(h, 'import sys; print("oops", file=sys.stderr)');
    const l = h.logs.find((x) => x.data.includes('oops'));
    assert.ok(l);
    assert.equal(l.logger, 'stderr');
    assert.equal(l.level, 'warning');
  } finally {
    await h.close();
  }
});

test('logging/setLevel filters: at error, no output notifications', async () => {
  const h = await connect();
  try {
    await h.client.setLoggingLevel('error');
    await run(h, 'print("quiet")');
    assert.equal(h.logs.filter((l) => l.data.includes('quiet')).length, 0);
    await h.client.setLoggingLevel('warning');
    await run(h, 'import sys; print("out"); print("err", file=sys.stderr)');
    assert.equal(h.logs.filter((l) => l.logger === 'stdout').length, 0);
    assert.ok(h.logs.some((l) => l.logger === 'stderr'));
  } finally {
    await h.close();
  }
});

test('with a progressToken, progress notifications increase and keep the request alive', async () => {
  const h = await connect();
  try {
    await run(h, 'pass');
    const seen = [];
    const r = await h.client.callTool(
      { name: 'run', arguments: { code: 'import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.3)' } },
      undefined,
      { onprogress: (p) => seen.push(p.progress), resetTimeoutOnProgress: true, timeout: 60_000 },
    );
    assert.match(r.content[0].text, /^0\n1\n2\n\n✓ /);
    assert.ok(seen.length >= 2, `got ${seen.length} progress notifications`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], 'progress increases');
  } finally {
    await h.close();
  }
});

test('a print flood is coalesced: far fewer notifications than prints, and nothing lost in the result', async () => {
  const h = await connect();
  try {
    await run(h, 'pass');
    h.logs.length = 0;
    const r = await run(h, 'for i in range(200000): print(i)');
    const n = h.logs.length;
    assert.ok(n > 0 && n < 2000, `${n} notifications for 200000 lines`);
    assert.match(r.text, /^0\n1\n/);
    assert.match(r.text, /… \[199900 lines truncated\] …/);
    assert.match(r.text, /199999\n\[full output: /);
  } finally {
    await h.close();
  }
});
