// The spec's "Use" and "run" examples, through the official MCP SDK client.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { connect, run, ctl } from './lib.mjs';

let h;
before(async () => { h = await connect(); });
after(async () => { await h.close(); });

test('run prints, and the footer counts one variable', async () => {
  const r = await run(h, 'x = 42; print(x)');
  assert.equal(r.isError, false);
  assert.match(r.text, /^42\n\n✓ \d+ms \| 1 var$/);
});

test('state persists between calls', async () => {
  const r = await run(h, 'print(f"x is {x}")');
  assert.match(r.text, /^x is 42\n\n✓ \d+ms \| 1 var$/);
});

test('an expression value is shown once, without Out[n]', async () => {
  const r = await run(h, 'x + 1');
  assert.match(r.text, /^43\n\n✓ \d+ms \| 1 var$/);
});

test('printed value and expression value both appear, in order', async () => {
  const r = await run(h, 'print("first")\nx * 2');
  assert.match(r.text, /^first\n84\n\n✓ /);
});

test('a loop streams every line into the result', async () => {
  const r = await run(h, 'for i in range(3): print(i)');
  assert.match(r.text, /^0\n1\n2\n\n✓ \d+ms \| 2 vars$/);
});

test('ctl reset clears the namespace', async () => {
  const r = await ctl(h, 'reset');
  assert.equal(r.text, 'RESET | namespace cleared | 0 vars');
  const r2 = await run(h, 'for i in range(3): print(i)');
  assert.match(r2.text, /^0\n1\n2\n\n✓ \d+ms \| 1 var$/, 'the spec example: only i is left');
});

test('an error names the exception, the line and the source, with isError', async () => {
  const r = await run(h, 'a = 1\nb = y + a');
  assert.equal(r.isError, true);
  assert.match(r.text, /^NameError: name 'y' is not defined\n  line 2: b = y \+ a\n\n✗ \d+ms \| \d+ vars?$/);
});

test('an error inside a function points at the failing line of this cell', async () => {
  const r = await run(h, 'def f():\n    return 1/0\n\nf()');
  assert.equal(r.isError, true);
  assert.match(r.text, /^ZeroDivisionError: division by zero\n  line 2: return 1\/0\n\n✗ /);
});

test('output printed before an error is kept', async () => {
  const r = await run(h, 'print("before")\nraise ValueError("bad")');
  assert.match(r.text, /^before\nValueError: bad\n  line 2: raise ValueError\("bad"\)\n\n✗ /);
});

test('a syntax error is reported with its line', async () => {
  const r = await run(h, 'if True\n  pass');
  assert.equal(r.isError, true);
  assert.match(r.text, /^SyntaxError: .*\n  line 1: if True\n\n✗ /);
});

test('runs of a second and more show seconds with one decimal', async () => {
  const r = await run(h, 'import time; time.sleep(1.1)');
  assert.match(r.text, /^✓ 1\.\ds \| \d+ vars?$/);
});

test('stderr is part of the output, interleaved in order', async () => {
  const r = await run(h, 'import sys\nprint("out"); sys.stdout.flush()\nprint("err", file=sys.stderr); sys.stderr.flush()\nprint("out2")');
  assert.match(r.text, /^out\nerr\nout2\n\n✓ /);
});

test('ANSI colours are stripped and \\r progress frames fold to the last one', async () => {
  const r = await run(h, 'import sys\nfor i in range(5):\n    sys.stdout.write(f"\\r\\x1b[32m{i*25}%\\x1b[0m")\n    sys.stdout.flush()\nprint()\nprint("done")');
  assert.match(r.text, /^100%\ndone\n\n✓ /);
});

test('more than 100 lines keep the first 50 and the last 50 and name the full-output file', async () => {
  const r = await run(h, 'for i in range(1000): print(f"line {i}")');
  const lines = r.text.split('\n');
  assert.equal(lines[0], 'line 0');
  assert.equal(lines[49], 'line 49');
  assert.equal(lines[50], '… [900 lines truncated] …');
  assert.equal(lines[51], 'line 950');
  assert.equal(lines[100], 'line 999');
  const m = /\[full output: (.+)\]/.exec(r.text);
  assert.ok(m, 'the result names the full-output file');
  const { readFileSync } = await import('node:fs');
  const full = readFileSync(m[1], 'utf8').split('\n');
  assert.equal(full[0], 'line 0');
  assert.equal(full[500], 'line 500');
  assert.equal(full[999], 'line 999');
  assert.ok(m[1].startsWith(h.dir + '/.rat-assets/'), 'kept under <cwd>/.rat-assets');
});

test('a very long line is cut on a character boundary', async () => {
  const r = await run(h, 'print("é" * 5000)');
  const first = r.text.split('\n')[0];
  assert.match(first, /^é+ … \[\d+ bytes cut\]$/);
  assert.ok(Buffer.byteLength(first) < 2100);
  assert.doesNotMatch(first, /\uFFFD/, 'no broken character');
});

test('empty code is a clear error', async () => {
  const r = await run(h, '   ');
  assert.equal(r.isError, true);
  assert.match(r.text, /code is empty/);
});

test('null arguments count as absent (mcp2py sends them)', async () => {
  const r = await h.client.callTool({ name: 'run', arguments: { code: '7 * 6', input: null, allow_input: null, wait: null } });
  assert.match(r.content[0].text, /^42\n\n✓ /);
});

test('a wrong argument type is a tool error the model can correct', async () => {
  const r = await h.client.callTool({ name: 'run', arguments: { code: 5 } });
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /argument 'code' must be a string/);
});

test('an unknown ctl op lists the valid ones', async () => {
  const r = await h.client.callTool({ name: 'ctl', arguments: { op: 'explode' } });
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /reset, cancel, restart, status, wait/);
});

test('ctl status has the spec form', async () => {
  const r = await ctl(h, 'status');
  assert.match(r.text.split('\n')[0], /^python idle \| exec #\d+ \| rev \d+ \| up \d+s$/);
});
