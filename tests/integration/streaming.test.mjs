// Output streams to the client while code runs: logging notifications
// (honouring logging/setLevel), progress with a progressToken, coalescing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { WRAPPED, connect, run } from './lib.mjs';

test('stdout arrives as notifications/message during the call, before the result', async () => {
  const h = await connect();
  try {
    await run(h, 'pass');
    h.logs.length = 0;
    const r = await run(h, 'import time\nprint("early", flush=True)\ntime.sleep(1)\nprint("late")');
    const tEnd = Date.now();
    const early = h.logs.find((l) => l.data.includes('early'));
    assert.ok(early, 'a notification carried the first line');
    assert.equal(early.logger, 'stdout');
    assert.equal(early.level, 'info');
    // The code sleeps 1 s after printing "early": a notification that came
    // more than 0.5 s before the result came while it ran, held back 0.5 s at
    // most. (No bound from the call: how soon a loaded machine starts the
    // run is not what this proves.)
    assert.ok(tEnd - early.at > 500, `it came while the code was still running (${tEnd - early.at} ms before the result)`);
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

// Issue 14 item 4: a flood's output arrives whole (the spill file holds every
// line, checked by checksum) and rat-py's memory stays bounded while it
// streams: a stream message is never held whole more than once (wire.h).
// sys.stdout.write makes the biggest messages: ipykernel sends what was
// written in its flush_interval as one message; rat-py's helper shortens it
// from 0.2 to 0.05 s, so one message is ~1.5 MB instead of 5-7 MB.
const RSS_BOUND_KB = 16 * 1024; // the target; measured 9-11 MB (14-17 with 0.2 s; 33-39 MB before wire.h)
const measured = !WRAPPED && !process.env.RAT_PY_SANITIZED;

test('the helper makes ipykernel send stdout and stderr every 50 ms, not 0.2 s (smaller flood messages)', async () => {
  const h = await connect();
  try {
    const r = await run(h, 'import sys\nprint(sys.stdout.flush_interval, sys.stderr.flush_interval)');
    assert.ok(!r.isError, r.text);
    assert.match(r.text, /^0\.05 0\.05$/m);
  } finally {
    await h.close();
  }
});

function peakKb(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

async function floodCase(code, expected) {
  const h = await connect();
  try {
    await run(h, 'pass');
    const r = await run(h, code, { wait: 600 }, { timeout: 600_000 });
    assert.ok(!r.isError, r.text.slice(-300));
    const m = /\[full output: ([^\]]+)\]/.exec(r.text);
    assert.ok(m, `a spill file is named: ${r.text.slice(-300)}`);
    const full = readFileSync(m[1]);
    assert.equal(full.length, expected.length, 'the full output has every byte');
    const digest = (b) => createHash('sha256').update(b).digest('hex');
    assert.equal(digest(full), digest(expected), 'and the same bytes');
    return measured ? peakKb(h.pid()) : 0;
  } finally {
    await h.close();
  }
}

test('a print flood loses nothing', async () => {
  const n = 1_000_000;
  const expected = Buffer.from(Array.from({ length: n }, (_, i) => `${i}\n`).join(''));
  const peak = await floodCase(`for i in range(${n}): print(i)`, expected);
  if (measured) assert.ok(peak <= RSS_BOUND_KB, `peak RSS ${peak} kB`);
});

test('a sys.stdout.write flood (big messages) loses nothing and stays within the memory bound', async () => {
  const n = 2_000_000;
  const expected = Buffer.from(Array.from({ length: n }, (_, i) => `${String(i).padStart(24, '0')}\n`).join(''));
  const peak = await floodCase(`import sys\nw = sys.stdout.write\nfor i in range(${n}): w('%024d\\n' % i)`, expected);
  if (measured) assert.ok(peak <= RSS_BOUND_KB, `peak RSS ${peak} kB (bound ${RSS_BOUND_KB})`);
});
