// rat-py under mcp2cli's real habits, reproduced by Mcp2cliLike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Mcp2cliLike } from './mcp2cli_like.mjs';
import { scratch, ms } from './lib.mjs';

test('`mcp2cli py up` then the spec transcript (run and ctl) on one long-lived server', async () => {
  const work = scratch();
  const py = new Mcp2cliLike(['--cwd', work.dir]);
  await py.start();
  try {
    let r = await py.tool('run', { code: 'x = 42; print(x)' });
    assert.match(r.text, /^42\n\n✓ \d+ms \| 1 var$/);
    r = await py.tool('run', { code: 'print(f"x is {x}")' });
    assert.match(r.text, /^x is 42\n\n✓ \d+ms \| 1 var$/);
    r = await py.tool('look'); // no arguments at all: mcp2cli leaves `arguments` out
    assert.equal(r.text, 'python idle | 1 var | exec #2\n\n  x  int  42');
    r = await py.tool('look', { at: 'x' });
    assert.equal(r.text, 'x: int = 42');
    r = await py.tool('look', { code: 'import math; math.sq', cursor: 20 });
    assert.equal(r.text, 'sqrt  function  sqrt(x, /)');
    r = await py.tool('ctl', { op: 'reset' });
    assert.equal(r.text, 'RESET | namespace cleared | 0 vars');
    r = await py.tool('run', { code: 'for i in range(3): print(i)' });
    assert.match(r.text, /^0\n1\n2\n\n✓ \d+ms \| 1 var$/);
    r = await py.tool('run', { code: 'name = input("Name: ")' });
    assert.match(r.text, /^INPUT REQUESTED: "Name: "/, 'no elicitation from the daemon: the text route');
    // `py run --input '{"code":"","input":"Alice"}'`: mcp2cli sends the object as the arguments, no defaults.
    const m = await py.request('tools/call', { name: 'run', arguments: { code: '', input: 'Alice' } });
    assert.match(m.result.content[0].text, /^✓ \d+ms \| 2 vars$/);
    r = await py.tool('ctl', { op: 'status' });
    assert.match(r.text, /^python idle \| exec #\d+ \| rev \d+ \| up \d+s\n/);
    r = await py.tool('ctl', { op: 'cancel' });
    assert.equal(r.text, 'No active execution.');
  } finally {
    const ex = await py.stop();
    assert.ok(ex.ms < ms(300), `py down: exited after ${ex.ms} ms, before mcp2cli's SIGKILL`);
    assert.equal(ex.signal, null);
    work.cleanup();
  }
});

test('without `up`, every call is a fresh server: initialize, one call, stdin closed; each exits on its own', async () => {
  const work = scratch();
  for (const code of ['print(1 + 1)', 'print("again")']) {
    const py = new Mcp2cliLike(['--cwd', work.dir], { daemon: false });
    await py.start();
    const r = await py.tool('run', { code });
    assert.match(r.text, /\n\n✓ \d+ms/);
    const ex = await py.stop();
    assert.ok(ex.ms < ms(300), `exited after ${ex.ms} ms`);
    assert.equal(ex.code, 0);
  }
  work.cleanup();
});

test('a tool call without `arguments` (mcp2cli leaves it out when empty) works', async () => {
  const work = scratch();
  const py = new Mcp2cliLike(['--cwd', work.dir]);
  await py.start();
  try {
    const m = await py.request('tools/call', { name: 'ctl' });
    assert.equal(m.result.isError, true);
    assert.match(m.result.content[0].text, /missing required argument 'op'/);
  } finally {
    await py.stop();
    work.cleanup();
  }
});
