// look: the variables overview, inspect with drill-down, completions —
// the spec's examples, pandas/numpy, hidden names, big and hostile objects,
// and look while code runs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, run, call, ms, prompt } from './lib.mjs';

const look = (h, args = {}) => call(h, 'look', args);

let h;
before(async () => {
  h = await connect();
  const r = await run(h, [
    'import math',
    "data = {'name': 'Alice', 'scores': [90, 85, 92], 'info': {'age': 30}}",
    'x = 42',
    'class Model:',
    '    def __init__(self):',
    '        self.lr = 0.01',
    "        self.layers = [{'type': 'dense', 'units': 10}, {'type': 'relu'}]",
    'model = Model()',
  ].join('\n'));
  assert.match(r.text, /✓ .* \| 4 vars$/);
});
after(async () => { await h.close(); });

test('overview: header, aligned rows sorted by name, modules and internals hidden', async () => {
  const r = await look(h);
  assert.equal(r.isError, false);
  const lines = r.text.split('\n');
  assert.match(lines[0], /^python idle \| 4 vars \| exec #1$/);
  assert.equal(lines[1], '');
  assert.equal(lines[2], "  Model  type   <class '__main__.Model'>");
  assert.equal(lines[3], "  data   dict   {'name': 'Alice', 'scores': [90, 85, 92], 'info': {'age': 30}}");
  assert.match(lines[4], /^  model  Model  <__main__\.Model object at 0x[0-9a-f]+>$/);
  assert.equal(lines[5], '  x      int    42');
  assert.equal(lines.length, 6);
  assert.doesNotMatch(r.text, /\b(math|In|Out|get_ipython|exit|quit|_rat)\b/);
});

test('a scalar reads as one line: the spec example `x: int = 42`', async () => {
  assert.equal((await look(h, { at: 'x' })).text, 'x: int = 42');
});

test('inspect a dict: the spec text', async () => {
  const r = await look(h, { at: 'data' });
  assert.equal(r.text, [
    'data: dict (3 items)',
    "    = {'name': 'Alice', 'scores': [90, 85, 92], 'info': {'age': 30}}",
    '',
    "      'name'    str   'Alice'",
    "    ▸ 'scores'  list  [90, 85, 92]",
    "    ▸ 'info'    dict  {'age': 30}",
  ].join('\n'));
});

test('drill into a list: the spec text', async () => {
  const r = await look(h, { at: 'data.scores' });
  assert.equal(r.text, [
    'data.scores: list (3 items)',
    '    = [90, 85, 92]',
    '',
    '      [0]  int  90',
    '      [1]  int  85',
    '      [2]  int  92',
  ].join('\n'));
});

test('inspect an object: attributes, ▸ on what expands', async () => {
  const r = await look(h, { at: 'model' });
  const lines = r.text.split('\n');
  assert.equal(lines[0], 'model: Model');
  assert.match(lines[1], /^    = <__main__\.Model object at 0x[0-9a-f]+>$/);
  assert.equal(lines[3], '      lr      float  0.01');
  assert.equal(lines[4], "    ▸ layers  list   [{'type': 'dense', 'units': 10}, {'type': 'relu'}]");
});

test('deep path through list index and dict key', async () => {
  const r = await look(h, { at: 'model.layers.0.type' });
  assert.equal(r.text, "model.layers.0.type: str (5 chars) = 'dense'");
  const r2 = await look(h, { at: "model.layers[1]['type']" });
  assert.equal(r2.text, "model.layers[1]['type']: str (4 chars) = 'relu'");
});

test('quoted keys and numeric keys', async () => {
  await run(h, "odd = {'two words': 1, 3: 'three', '3': 'str three'}");
  assert.equal((await look(h, { at: "odd.'two words'" })).text, "odd['two words']: int = 1");
  assert.match((await look(h, { at: 'odd["two words"]' })).text, /= 1$/);
  assert.match((await look(h, { at: 'odd.3' })).text, /= 'str three'$/, 'a string key wins over an int key');
  assert.match((await look(h, { at: 'odd[3]' })).text, /= 'three'$/);
  await run(h, 'del odd');
});

test('functions: type, kind, signature, docstring (math.sqrt)', async () => {
  const r = await look(h, { at: 'math.sqrt' });
  assert.equal(r.text, 'math.sqrt: builtin_function_or_method (function)\n    sqrt(x, /)\n    Return the square root of x.');
});

test('a function defined in a run says where', async () => {
  await run(h, 'def add(a, b=2):\n    """Adds two numbers."""\n    return a + b');
  const r = await look(h, { at: 'add' });
  assert.match(r.text, /^add: function \(function\)\n    add\(a, b=2\)\n    Defined in exec #\d+, line 1\n    Adds two numbers\.$/);
  await run(h, 'del add');
});

test('not found names the part that failed, with isError', async () => {
  const r = await look(h, { at: 'nope' });
  assert.equal(r.isError, true);
  assert.equal(r.text, 'nope: not found');
  const r2 = await look(h, { at: 'data.missing' });
  assert.equal(r2.isError, true);
  assert.equal(r2.text, "data.missing: not found ('missing' is not a key of data)");
  const r3 = await look(h, { at: 'data.scores.7' });
  assert.match(r3.text, /^data\.scores\.7: not found \(data\.scores has no index 7\)$/);
});

test('a malformed path is a clear error', async () => {
  for (const bad of ['data..x', "data['x", 'data[zz]', '[0]', '   ']) {
    const r = await look(h, { at: bad });
    assert.equal(r.isError, true, bad);
    assert.match(r.text, /^look: /, bad);
  }
});

test('completions: the spec example', async () => {
  const r = await look(h, { code: 'math.sq', cursor: 7 });
  assert.equal(r.text, 'sqrt  function  sqrt(x, /)');
  assert.equal(r.result.structuredContent.cursor_start, 5);
  assert.equal(r.result.structuredContent.cursor_end, 7);
});

test('completions count characters, not bytes, before the cursor', async () => {
  const r = await look(h, { code: "'é' + ma", cursor: 8 });
  assert.match(r.text, /^map  /m);
  assert.match(r.text, /^math/m);
  assert.equal(r.result.structuredContent.cursor_start, 6);
  const r2 = await look(h, { code: "'é' + ma" }); // cursor defaults to the end
  // The same completions at the same place. (Not the same text: how many
  // rows get a type and signature depends on how fast Jedi answers.)
  const names = (x) => x.result.structuredContent.items.map((i) => i.label);
  assert.deepEqual(names(r2), names(r));
  assert.equal(r2.result.structuredContent.cursor_start, 6);
});

test('no completions, and more than 20 are capped', async () => {
  assert.equal((await look(h, { code: 'zzqqxx' })).text, 'No completions.');
  const r = await look(h, { code: 'math.' });
  const lines = r.text.split('\n');
  assert.equal(lines.length, 21);
  assert.match(lines[20], /^… \d+ more$/);
});

test('look arguments: at and code together, cursor past the end, cursor without code', async () => {
  assert.equal((await look(h, { at: 'x', code: 'x' })).isError, true);
  assert.match((await look(h, { code: 'ab', cursor: 5 })).text, /past the end/);
  assert.match((await look(h, { cursor: 1 })).text, /cursor needs code/);
});

test('pandas DataFrame and numpy array: sizes and bounded values', async () => {
  await run(h, 'import numpy as np, pandas as pd\ndf = pd.DataFrame({"a": range(1000), "b": [1.5] * 1000, "c": ["s"] * 1000, "d": 0, "e": 1})\narr = np.zeros((1000, 3))');
  try {
  const o = await look(h);
  assert.match(o.text, /^  arr +ndarray +float64 \(1000, 3\) array\(\[\[0\., 0\., 0\.\], /m);
  assert.match(o.text, /^  df +DataFrame  \(1000 rows × 5 cols\) <DataFrame 1000 rows × 5 cols: a, b, c, d, e>$/m);
  const d = await look(h, { at: 'df' });
  assert.match(d.text, /^df: DataFrame \(1000 rows × 5 cols\)\n/);
  assert.match(d.text, /▸ 'a'  int64 +\[0, 1, 2, 3, \.\.\.\]/);
  const a = await look(h, { at: 'arr' });
  assert.match(a.text, /^arr: ndarray float64 \(1000, 3\)\n/);
  assert.match(a.text, /      … 980 more$/);
  const col = await look(h, { at: 'df.b' });
  assert.match(col.text, /^df\.b: Series \(1000 rows, float64\)/);
  } finally {
    await run(h, 'del df, arr');
  }
});

test('hidden names stay hidden: _private, IPython internals, imported modules', async () => {
  await run(h, '_private = 1\nimport os, sys as system');
  const r = await look(h);
  assert.doesNotMatch(r.text, /_private|\bos\b|system/);
  await run(h, 'del _private');
});

test('10 000 variables: the overview shows 25 rows and counts the rest', async () => {
  await run(h, 'for _i in range(10000): globals()[f"v{_i:05d}"] = _i');
  const r = await look(h);
  const lines = r.text.split('\n');
  assert.match(lines[0], /^python idle \| 100\d\d vars \| exec #\d+$/);
  assert.equal(lines.length, 2 + 25 + 1);
  assert.match(lines.at(-1), /^  … +more +99\d\d variables not listed: look\(at="name"\) inspects any$/);
  await run(h, 'for _i in range(10000): del globals()[f"v{_i:05d}"]');
});

test('hostile objects answer promptly with bounded text', async () => {
  await run(h, [
    'import numpy as np',
    'huge_list = [0] * 10**8',
    'gig = np.zeros(125_000_000)',
    'million = {i: i for i in range(10**6)}',
    'class Evil:',
    '    def __repr__(self): raise ValueError("no repr")',
    '    def __len__(self): raise TypeError("no len")',
    '    def __getattr__(self, name): return Evil()',
    '    @property',
    '    def boom(self): raise RuntimeError("property ran")',
    'evil = Evil()',
    'loop = []; loop.append(loop)',
    'd = {}; d["self"] = d',
    'class Slow:',
    '    def __repr__(self):',
    '        while True: pass',
    'slow = Slow()',
    'class Stuck:',
    '    @property',
    '    def value(self):',
    '        while True: pass',
    'stuck = Stuck()',
  ].join('\n'));
  try {
  const t0 = Date.now();
  const o = await look(h);
  assert.ok(o.text.length < 6000, 'overview bounded');
  assert.match(o.text, /^  huge_list +list +\(100000000 items\) \[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \.\.\.\]$/m);
  assert.match(o.text, /^  evil +Evil +<Evil object; repr failed: ValueError>$/m);
  assert.match(o.text, /^  slow +Slow +<Slow object; slow repr>$/m);
  assert.match(o.text, /^  x +int +42$/m, 'values after a slow one still show');
  for (const [at, expect] of [
    ['huge_list', /^huge_list: list \(100000000 items\)\n    = \[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \.\.\.\]/],
    ['gig', /^gig: ndarray float64 \(125000000,\)\n    = array\(\[0\., 0\., 0\., \.\.\., 0\., 0\., 0\.\]\)/],
    ['million', /^million: dict \(1000000 items\)\n[\s\S]*      … 999980 more$/],
    ['evil', /^evil: Evil\n    = <Evil object; repr failed: ValueError>\n\n      boom  property  \(not evaluated\)$/],
    ['loop', /^loop: list \(1 item\)\n    = \[\[\[\[\.\.\.\]\]\]\]/],
    ['d', /^d: dict \(1 item\)\n    = \{'self': \{'self': \{'self': \{\.\.\.\}\}\}\}/],
    ['slow', /^slow: Slow = <Slow object; slow repr>$/],
    ['stuck', /^stuck: Stuck\n    = <__main__\.Stuck object at 0x[0-9a-f]+>\n\n      value  property  \(not evaluated\)$/],
    ['stuck.value', /^stuck\.value: inspecting took longer than 1s \(a slow __repr__ or property\?\)$/],
  ]) {
    const t = Date.now();
    const r = await look(h, { at });
    assert.match(r.text, expect, at);
    assert.ok(r.text.length < 5000, `${at} bounded`);
    assert.ok(Date.now() - t < prompt(3000), `${at} answered in ${Date.now() - t} ms`);
  }
  assert.ok(Date.now() - t0 < prompt(15000));
  const t1 = Date.now();
  const after = await run(h, '1 + 1');
  assert.match(after.text, /^2\n/);
  assert.ok(Date.now() - t1 < prompt(1000), 'a known slow repr no longer slows every run down');
  } finally {
    await run(h, 'del huge_list, gig, million, evil, loop, d, slow, Evil, Slow, stuck, Stuck');
  }
});

test('while code runs, look answers at once: overview from the snapshot, inspect and complete on control', async () => {
  const running = run(h, 'import time; time.sleep(10)');
  await new Promise((r) => setTimeout(r, 500));
  let t = Date.now();
  const o = await look(h);
  assert.ok(Date.now() - t < prompt(1000), `overview in ${Date.now() - t} ms`);
  assert.match(o.text, /^python busy \| exec #\d+ running \ds\n\n\(variables as of exec #\d+, before the running code\)\n  Model /);
  t = Date.now();
  const i = await look(h, { at: 'data' });
  assert.ok(Date.now() - t < prompt(1000), `inspect in ${Date.now() - t} ms`);
  assert.match(i.text, /^\(python busy: the kernel's own inspector answers while code runs; drill-down works when it is idle\)\nType: +dict/);
  t = Date.now();
  const c = await look(h, { code: 'math.sq', cursor: 7 });
  assert.ok(Date.now() - t < prompt(1000), `complete in ${Date.now() - t} ms`);
  assert.equal(c.text, 'sqrt  function  sqrt(x, /)');
  await call(h, 'ctl', { op: 'cancel' });
  await running;
});

test('the run footer and the overview count the same variables', async () => {
  const r = await run(h, 'y_extra = 1');
  const n = /\| (\d+) vars?$/.exec(r.text)[1];
  const o = await look(h);
  assert.match(o.text.split('\n')[0], new RegExp(`\\| ${n} vars? \\|`));
  await run(h, 'del y_extra');
});
