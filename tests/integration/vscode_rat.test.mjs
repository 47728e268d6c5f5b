// vscode-rat, the notebook GUI that speaks MCP, served by rat-py --http: a
// client of our own (vscode_rat_like.mjs) makes its calls and parses the
// answers as it does — run with live output, results, input prompts,
// cancel, completions, hover, go to definition, the variables panel and
// plots. What still differs is listed in the README.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { startHttp, ms } from './lib.mjs';
import { VscodeRatLike, parseCompletionLine, parseOverview, signatureFromInspection, definitionFromInspection,
  extractPlots } from './vscode_rat_like.mjs';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const sleep = (n) => new Promise((r) => setTimeout(r, n));

let srv, c;
before(async () => {
  srv = await startHttp();
  c = new VscodeRatLike(srv.url);
  await c.initialize();
});
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
  assert.equal(r.status, 'ok');
  assert.ok(r.durationMs >= 400, `${r.durationMs}`);
  assert.ok(r.vars >= 1);
  assert.ok(r.execCount >= 1);
  const e = await c.run('1/0');
  assert.equal(e.isError, true);
  assert.match(e.text, /^ZeroDivisionError: division by zero/m);
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
  assert.equal(r.status, 'ok');
  assert.doesNotMatch(await c.status(), /^waiting_for_input/);
});

test('cancel: ctl cancel (fire and forget) ends the open run', async () => {
  const seen = [];
  const pending = c.run('import time\nprint("start", flush=True)\ntime.sleep(60)', (t) => seen.push(t));
  for (let i = 0; !seen.length && i < ms(200); i++) await sleep(50);
  assert.deepEqual(seen, ['start\n']);
  c.cancel();
  const r = await pending;
  assert.equal(r.isError, true);
  assert.equal(r.status, 'cancelled');
  assert.match(r.text, /KeyboardInterrupt/);
});

test('completions, hover, go to definition', async () => {
  await c.run('import json, math');
  const mod = (await c.complete('import collec', 13)).map(parseCompletionLine);
  assert.deepEqual(mod[0], { label: 'collections', kind: 'module' });
  // A row with a signature column: vscode-rat takes the whole line as the
  // label (README: what still differs).
  const fn = (await c.complete('math.sq', 7)).map(parseCompletionLine);
  assert.deepEqual(fn[0], { label: 'sqrt  function  sqrt(x, /)' });
  const info = await c.look('json.dumps');
  assert.match(signatureFromInspection(info, 'json.dumps'), /^dumps\(obj, \*, skipkeys=False/);
  const def = definitionFromInspection(info);
  assert.match(def.path, /json\/__init__\.py$/);
  assert.ok(existsSync(def.path));
  assert.ok(def.line > 0);
});

test('variables panel and the inspector', async () => {
  await c.run('data = {"name": "Alice", "scores": [90, 85, 92]}\nx = 42');
  const rows = parseOverview(await c.look());
  assert.deepEqual(rows.find((r) => r.name === 'x'), { name: 'x', kind: 'int', preview: '42' });
  assert.deepEqual(rows.find((r) => r.name === 'data'), { name: 'data', kind: 'dict', preview: "{'name': 'Alice', 'scores': [90, 85, 92]}" });
  const full = await c.lookFull('data');
  assert.match(full, /^data: dict \(2 items\)\n {4}= \{'name': 'Alice'/);
});

test('plots: the image file named by __RAT_PLOT__ holds the figure', async () => {
  const r = await c.run(`import base64\nfrom IPython.display import display, Image\ndisplay(Image(data=base64.b64decode("${PNG}")))`);
  const { text, images } = extractPlots(r.text);
  assert.equal(images.length, 1);
  assert.equal(readFileSync(images[0]).toString('base64'), PNG);
  assert.match(text, /^<IPython\.core\.display\.Image object>\n\[image: \/assets\/[0-9a-f]{32}\.png\]$/);
});
