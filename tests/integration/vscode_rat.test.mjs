// vscode-rat, the notebook GUI that speaks MCP, served by rat-py --http: a
// client of our own (vscode_rat_like.mjs) makes its calls and parses the
// answers as it does — run with live output, results and their trailer,
// errors as its notebook and .py views show them, input prompts, cancel,
// completions and their details, hover, go to definition, the variables
// panel, plots, ctl output and tail. (The `rat` CLI it drives:
// vscode_rat_cli.test.mjs.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import { existsSync, readFileSync } from 'node:fs';
import { startHttp, connectHttp, call, ms } from './lib.mjs';
import { VscodeRatLike, parseCompletionLine, parseOverview, signatureFromInspection, definitionFromInspection,
  extractPlots, inlineErrorSummary, outputBlock } from './vscode_rat_like.mjs';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const sleep = (n) => new Promise((r) => setTimeout(r, n));

let srv, c, checked = 0;
before(async () => {
  srv = await startHttp();
  c = new VscodeRatLike(srv.url);
  await c.initialize();
  // Every structuredContent its session gets (reshaped for it) still
  // validates against the tool's outputSchema (Ajv, strict).
  const ajv = new Ajv({ strict: true, allErrors: true });
  const validate = {};
  for (const t of (await c.rpc('tools/list', {})).tools) if (t.outputSchema) validate[t.name] = ajv.compile(t.outputSchema);
  const callTool = c.callTool.bind(c);
  c.callTool = async (name, args, ...rest) => {
    const r = await callTool(name, args, ...rest);
    if (validate[name] && r.structuredContent !== undefined) {
      assert.ok(validate[name](r.structuredContent), `${name}: ${JSON.stringify(validate[name].errors)}`);
      checked++;
    }
    return r;
  };
});
after(() => { assert.ok(checked > 20, `${checked} results validated`); });
after(async () => { await srv.stop(); });

test('run: live output through rat/output, then the structured result', async () => {
  const chunks = [];
  let ended = false;
  const r = await c.run('import time\nprint("a", flush=True)\ntime.sleep(0.5)\nprint("b")\nx = 42', (t) => chunks.push({ t, ended }))
    .then((v) => { ended = true; return v; });
  assert.equal(chunks.map((x) => x.t).join(''), 'a\nb\n');
  assert.equal(chunks[0].t, 'a\n');
  assert.equal(chunks[0].ended, false, 'the first line came while the run went on');
  assert.equal(r.text, 'a\nb');
  assert.equal(r.isError, false);
  // The trailer it prints on the output fence.
  assert.match(r.status, /^✓ \d+(ms|\.\ds) \| \d+ vars?$/);
  assert.deepEqual(outputBlock(r.text, r.status), { fence: `output | ${r.status}`, body: 'a\nb', images: [], isError: false });
  assert.ok(r.durationMs >= 400, `${r.durationMs}`);
  assert.ok(r.vars >= 1);
  assert.ok(r.execCount >= 1);
  // No output: the fence is annotated ✓.
  const q = await c.run('y = 1');
  assert.deepEqual(outputBlock(q.text, q.status), { annotation: ' ✓' });
});

test('errors: the output, the whole traceback, the exception last; ✗ trailer', async () => {
  await c.run('def inner():\n    return 1/0\ndef outer():\n    return inner()');
  const e = await c.run('print("before")\nouter()');
  assert.equal(e.isError, true);
  assert.match(e.status, /^✗ \d+/);
  const lines = e.text.split('\n');
  assert.equal(lines[0], 'before');
  // The call chain (the Go server's traceback) is there, not just the line.
  assert.match(e.text, /outer\(\)/);
  assert.match(e.text, /return inner\(\)/);
  assert.match(e.text, /return 1\/0/);
  assert.equal(lines.at(-1), 'ZeroDivisionError: division by zero');
  // The notebook's block is an error block; the .py view's inline summary
  // names the exception.
  assert.equal(outputBlock(e.text, e.status).isError, true);
  assert.equal(inlineErrorSummary(e.text), 'ZeroDivisionError: division by zero');
  const n = await c.run('undefined_name');
  assert.equal(inlineErrorSummary(n.text), "NameError: name 'undefined_name' is not defined");
});

test('input(): the run\'s call stays open, ctl status says waiting_for_input, run {input} answers', async () => {
  const pending = c.run('name = input("Name: ")\nprint("hi", name)');
  let answered = false;
  for (let i = 0; !answered && i < ms(100); i++) {
    answered = await c.pollInput('Ada');
    if (!answered) await sleep(300);
  }
  assert.ok(answered, 'the prompt was seen');
  const r = await pending;
  assert.equal(r.text, 'hi Ada');
  assert.match(r.status, /^✓ /);
  assert.doesNotMatch(await c.status(), /^waiting_for_input/);
});

test('cancel: ctl cancel (fire and forget) ends the open run', async () => {
  const seen = [];
  const pending = c.run('import time\nprint("start", flush=True)\ntime.sleep(60)', (t) => seen.push(t));
  // print() may reach the kernel's stream in two writes ("start", "\n").
  for (let i = 0; !seen.join('').includes('start\n') && i < ms(200); i++) await sleep(50);
  c.cancel();
  assert.equal(seen.join(''), 'start\n');
  const r = await pending;
  assert.equal(r.isError, true);
  assert.match(r.status, /^✗ /);
  assert.equal(r.text.split('\n')[0], 'start');
  assert.match(r.text.split('\n').at(-1), /^KeyboardInterrupt/);
});

test('ctl output while a run is open: what it printed so far; "" when idle', async () => {
  const seen = [];
  const pending = c.run('import time\nprint("one", flush=True)\ntime.sleep(1.5)\nprint("two")', (t) => seen.push(t));
  for (let i = 0; !seen.join('').includes('one\n') && i < ms(200); i++) await sleep(50);
  assert.equal(await c.partialOutput(), 'one');
  const r = await pending;
  assert.equal(r.text, 'one\ntwo', 'the run\'s own result still has all of it');
  assert.equal(await c.partialOutput(), '');
});

test('tail: the recent runs as the Go server\'s activity entries', async () => {
  await c.run('tail_probe = 7\nprint(tail_probe)');
  const entries = JSON.parse(await c.tail(2, 'json'));
  assert.equal(entries.length, 2);
  const last = entries.at(-1);
  assert.equal(last.code, 'tail_probe = 7\nprint(tail_probe)');
  assert.equal(last.output, '7\n');
  assert.equal(last.ok, true);
  assert.ok(Number.isInteger(last.n) && last.n >= 1);
  assert.ok(Math.abs(last.t - Date.now() / 1000) < 60);
  assert.match(await c.tail(1, 'text'), /^exec #\d+ ✓\n  tail_probe = 7\n  print\(tail_probe\)\n  7$/);
  // Not one of the listed tools: rat-py's surface stays run, look, ctl.
  const list = await c.rpc('tools/list', {});
  assert.deepEqual(list.tools.map((t) => t.name).sort(), ['ctl', 'look', 'run']);
});

test('completions, hover, go to definition', async () => {
  await c.run('import json, math');
  const mod = (await c.complete('import collec', 13)).map(parseCompletionLine);
  assert.deepEqual(mod[0], { label: 'collections', kind: 'module' });
  // Its sessions get `label  kind` rows (the seed's signature column would
  // make the whole row the label), every item, no "… N more" line.
  const fn = (await c.complete('math.sq', 7)).map(parseCompletionLine);
  assert.deepEqual(fn, [{ label: 'sqrt', kind: 'function' }]);
  const many = (await c.complete('math.', 5)).map(parseCompletionLine);
  assert.ok(many.length > 20, `${many.length}`);
  assert.ok(many.every((x) => x.kind && /^\w+$/.test(x.label)), JSON.stringify(many.filter((x) => !x.kind)));
  // Completion details: look(at) of the label; a signature line.
  const detail = await c.look('math.sqrt');
  assert.ok(!detail.endsWith(': not found'));
  assert.match(signatureFromInspection(detail, 'math.sqrt'), /^sqrt\(x, \/\)$/);
  const info = await c.look('json.dumps');
  assert.match(signatureFromInspection(info, 'json.dumps'), /^dumps\(obj, \*, skipkeys=False/);
  const def = definitionFromInspection(info);
  assert.match(def.path, /json\/__init__\.py$/);
  assert.ok(existsSync(def.path));
  assert.ok(def.line > 0);
  // A function made by a run has no file: no "Defined in:" line for a GUI
  // to open (vscode-rat then finds the def in the notebook itself).
  await c.run('def cell_fn(a):\n    return a');
  const cell = await c.look('cell_fn');
  assert.match(cell, /Defined in exec #\d+, line 1/);
  assert.equal(definitionFromInspection(cell), null);
});

test('variables panel and the inspector', async () => {
  await c.run('data = {"name": "Alice", "scores": [90, 85, 92]}\nx = 42');
  const rows = parseOverview(await c.look());
  assert.deepEqual(rows.find((r) => r.name === 'x'), { name: 'x', kind: 'int', preview: '42' });
  assert.deepEqual(rows.find((r) => r.name === 'data'), { name: 'data', kind: 'dict', preview: "{'name': 'Alice', 'scores': [90, 85, 92]}" });
  const full = await c.lookFull('data');
  assert.match(full, /^data: dict \(2 items\)\n {4}= \{'name': 'Alice'/);
  // A sized type: the type column stays one word, the size opens the preview.
  await c.run('big = list(range(100))');
  assert.deepEqual(parseOverview(await c.look()).find((r) => r.name === 'big'),
    { name: 'big', kind: 'list', preview: '(100 items) [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...]' });
});

test('variables panel: more than 25 names says some are hidden; an empty namespace has no rows', async () => {
  await c.run('for _i in range(40): globals()[f"w{_i:02d}"] = _i');
  const text = await c.look();
  const rows = parseOverview(text);
  assert.equal(rows.length, 26);
  assert.deepEqual(rows.at(-1).name, '…');
  assert.equal(rows.at(-1).kind, 'more');
  assert.match(rows.at(-1).preview, /^\d+ variables not listed: look\(at="name"\) inspects any$/);
  await c.callTool('ctl', { op: 'reset' }, undefined, 5000);
  const empty = await c.look();
  assert.match(empty, /^python idle \| 0 vars \| exec #\d+\n\n\(no variables\)$/);
  assert.deepEqual(parseOverview(empty), []);
});

test('plots: the image file named by __RAT_PLOT__ holds the figure', async () => {
  const r = await c.run(`import base64\nfrom IPython.display import display, Image\ndisplay(Image(data=base64.b64decode("${PNG}")))`);
  const { text, images } = extractPlots(r.text);
  assert.equal(images.length, 1);
  assert.equal(readFileSync(images[0]).toString('base64'), PNG);
  // The picture alone: no [image: …] line, no text/plain stand-in.
  assert.equal(text, '');
  const m = await c.run(`print("above")\ndisplay(Image(data=base64.b64decode("${PNG}")))\nprint("below")`);
  const mixed = extractPlots(m.text);
  assert.equal(mixed.images.length, 1);
  assert.deepEqual(m.text.split('\n').map((l) => l.replace(/:.*/, '')), ['above', '__RAT_PLOT__', 'below'], 'in place');
  assert.equal(mixed.text, 'above\nbelow');
});

// vscode-rat's notebook shows the first rat.maxOutputLines (100) lines of a
// result and replaces the rest by "… N more lines": a long output reaches
// it within that, the full-output line last and seen; other clients keep
// 50 + 50.
test('a long output fits vscode-rat\'s 100 lines, the full-output file named in them', async () => {
  const want = Array.from({ length: 1000 }, (_, i) => `line ${i + 1}`);
  const code = 'for i in range(1, 1001): print(f"line {i}")';
  const r = await c.run(code);
  const lines = r.text.split('\n');
  assert.ok(lines.length <= 100, `${lines.length} lines`);
  assert.deepEqual(lines.slice(0, 49), want.slice(0, 49));
  assert.equal(lines[49], '… [902 lines truncated] …');
  assert.deepEqual(lines.slice(50, 99), want.slice(951));
  const path = /^\[full output: (.+)\]$/.exec(lines.at(-1))?.[1];
  assert.ok(path, lines.at(-1));
  assert.equal(readFileSync(path, 'utf8'), want.join('\n') + '\n');
  // The extension cuts nothing: its block is the whole text.
  assert.equal(outputBlock(r.text, r.status).body, r.text);

  // 100 whole lines and an unfinished one: all were in memory, none cut
  // before; the file that names them is made for this text.
  const u = await c.run('import sys\nfor i in range(1, 101): print(f"row {i}")\n_ = sys.stdout.write("row 101")');
  const ul = u.text.split('\n');
  assert.ok(ul.length <= 100, `${ul.length} lines`);
  assert.equal(ul[49], '… [3 lines truncated] …');
  assert.equal(ul[98], 'row 101');
  const upath = /^\[full output: (.+)\]$/.exec(ul.at(-1))?.[1];
  assert.ok(upath, ul.at(-1));
  assert.equal(readFileSync(upath, 'utf8'), Array.from({ length: 101 }, (_, i) => `row ${i + 1}`).join('\n'));

  // Another client on the same server: the usual 50 + marker + 50 + path.
  const other = await connectHttp(srv.url);
  try {
    const o = (await call(other, 'run', { code })).result.structuredContent;
    const ol = o.output.split('\n');
    assert.equal(ol.length, 102);
    assert.deepEqual(ol.slice(0, 50), want.slice(0, 50));
    assert.equal(ol[50], '… [900 lines truncated] …');
    assert.deepEqual(ol.slice(51, 101), want.slice(950));
    assert.match(ol[101], /^\[full output: .+\]$/);
  } finally {
    await other.close();
  }
});
