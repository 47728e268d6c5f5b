// The notebook page as a Jupyter user lives in it (issue 33): files under
// --cwd (open, save, autosave, checkpoints, a reload that loses nothing, a
// file changed on disk), markdown and LaTeX, command mode, the completion
// popup and Enter, Run all that stops, confirmations and undo, coloured
// tracebacks, styled DataFrames, live \r progress, a dead server and its
// return, and notebooks that go to Jupyter and back unchanged. Real headless
// Chromium (Debian's) through Playwright, a real rat-py and ipykernel,
// Debian's nbformat, nbclient and Jupyter Server to read and write the
// notebooks on Jupyter's side. Screenshots in $RAT_BUILD_DIR/test-output/notebook/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startHttp, connectHttp, call, ms, until } from './lib.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = path.join(process.env.RAT_BUILD_DIR || tmpdir(), 'test-output', 'notebook');
const GENERATED = path.join(process.env.RAT_BUILD_DIR || '', 'generated', 'page_files.c');
const NO_PAGE = process.env.RAT_BUILD_DIR && existsSync(GENERATED) && /No node\/npm/.test(readFileSync(GENERATED, 'utf8'));
const SKIP = (!existsSync(CHROMIUM) && `no browser at ${CHROMIUM} (apt install chromium)`) ||
  (NO_PAGE && 'rat-py was built without its page (no node/npm, or -DRAT_PAGE=OFF)');
const T = (n) => ms(n);
const PY = '/usr/bin/python3';

let srv, browser, page;
const problems = [];

async function shot(name, p = page) {
  mkdirSync(SHOTS, { recursive: true });
  await p.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

// quiet: the page's network errors are expected (the dead-server test).
async function openPage(url = `${srv.base}/`, quiet = false) {
  const p = await browser.newPage({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  if (!quiet) {
    p.on('console', (m) => { if (m.type() === 'error') problems.push(`${m.text()} (${m.location()?.url})`); });
    p.on('response', (r) => { if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`); });
  }
  p.on('pageerror', (e) => problems.push(String(e)));
  await p.goto(url);
  await p.locator('#kernel[data-state="idle"]').waitFor({ timeout: T(30000) });
  return p;
}

const cells = (p = page) => p.locator('.cell');
const lastCell = (p = page) => p.locator('.cell').last();
// A cell's source, line by line as CodeMirror shows it.
const doc = async (c) => (await c.locator('.cm-line').allTextContents()).join('\n');

// A new code cell at the end, in edit mode (whatever the last cell is).
async function freshCell(p = page) {
  const n = await p.locator('.cell').count();
  const last = p.locator('.cell').nth(n - 1);
  if (await last.evaluate((el) => el.classList.contains('code') && !el.querySelector('.out').children.length) && (await doc(last)) === '') {
    await last.locator('.cm-content').click();
    return last;
  }
  await last.locator('.gutter').click();
  await p.waitForFunction(() => document.body.classList.contains('command-mode'));
  await p.keyboard.press('b');
  await p.keyboard.press('Enter');
  return p.locator('.cell').nth(n);
}

// Types code into a new cell at the end as one insertion, Shift+Enter, and
// waits for its footer.
async function run(code, p = page, done = true) {
  const c = await freshCell(p);
  await p.keyboard.insertText(code);
  await p.keyboard.press('Shift+Enter');
  if (done) await c.locator('.out .footer', { hasText: /✓|✗/ }).waitFor({ timeout: T(30000) });
  return c;
}

// Jupyter's own reading of a notebook file: Jupyter Server's contents
// manager (what JupyterLab and Notebook 7 open it with) and nbformat's
// validator. Returns [{type, source, outputs: [{output_type, ...}]}].
function jupyterRead(root, rel) {
  const r = spawnSync(PY, ['-c', `
import json, sys, nbformat
from jupyter_server.services.contents.filemanager import FileContentsManager
cm = FileContentsManager(root_dir=sys.argv[1])
model = cm.get(sys.argv[2])
nb = nbformat.from_dict(model["content"])
nbformat.validate(nb)
out = []
for c in nb.cells:
    outs = []
    for o in c.get("outputs", []):
        d = {"output_type": o.output_type}
        if o.output_type == "stream": d["name"] = o.name; d["text"] = o.text
        elif o.output_type == "error": d["ename"] = o.ename; d["evalue"] = o.evalue; d["colour"] = any("\\x1b[" in t for t in o.traceback)
        else:
            d["mimes"] = sorted(o.data.keys())
            if o.output_type == "execute_result": d["execution_count"] = o.execution_count
        outs.append(d)
    out.append({"type": c.cell_type, "source": c.source, "outputs": outs})
print(json.dumps({"cells": out, "kernelspec": nb.metadata.get("kernelspec", {}).get("name")}))
`, root, rel], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

before(async () => {
  if (SKIP) return;
  rmSync(SHOTS, { recursive: true, force: true });
  srv = await startHttp();
  mkdirSync(path.join(srv.dir, 'work'));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await openPage();
});
after(async () => {
  if (browser) await browser.close();
  if (srv) await srv.stop();
});

test('Enter after a popup that opened while typing makes a new line; Tab completes; 4-space indentation', { skip: SKIP }, async () => {
  await run('import math');
  const c = await freshCell();
  await page.keyboard.type('import os', { delay: 20 });
  // The as-you-type popup opens (the kernel's completions of "os")...
  await page.locator('.cm-tooltip-autocomplete').waitFor({ timeout: T(10000) });
  await shot('01-popup-while-typing');
  // ...and Enter is still a new line: it used to accept "os" and join the lines.
  await page.keyboard.press('Enter');
  await page.keyboard.type('x');
  assert.equal(await doc(c), 'import os\nx');
  await page.keyboard.press('Control+a');
  await page.keyboard.press('Delete');
  await page.keyboard.type('total = a + a', { delay: 20 });
  await page.waitForTimeout(700);
  await page.keyboard.press('Enter');
  await page.keyboard.type('print(total)');
  assert.equal(await doc(c), 'total = a + a\nprint(total)');
  // Tab after a name asks the kernel; Tab again takes the option.
  await page.keyboard.press('Control+a');
  await page.keyboard.press('Delete');
  await page.keyboard.type('math.sq');
  await page.keyboard.press('Tab');
  await page.locator('.cm-tooltip-autocomplete li', { hasText: 'sqrt' }).first().waitFor({ timeout: T(10000) });
  await page.keyboard.press('Tab');
  await until(async () => (await doc(c)) === 'math.sqrt', T(3000), 'Tab, Tab completes math.sq to math.sqrt');
  // The kernel's language decides the indentation: 4 spaces for Python
  // (it was 2), and Tab at the start of a line indents.
  await page.keyboard.press('Control+a');
  await page.keyboard.press('Delete');
  await page.keyboard.type('for i in range(3):');
  await page.keyboard.press('Enter');
  await page.keyboard.type('pass');
  assert.equal(await doc(c), 'for i in range(3):\n    pass');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Tab');
  await page.keyboard.type('y');
  assert.equal(await doc(c), 'for i in range(3):\n    pass\n    y');
  await page.keyboard.press('Control+a');
  await page.keyboard.press('Delete');
});

test('markdown cells: made with m, rendered with KaTeX math, sanitised; display(Markdown/Latex) rendered', { skip: SKIP }, async () => {
  const c = await freshCell();
  await page.keyboard.press('Escape');
  await page.keyboard.press('m');
  await page.keyboard.press('Enter');
  await page.keyboard.insertText('# A heading\n\nSome *emphasis*, math $e^{i\\pi} + 1 = 0$ and\n\n$$\\sum_{k=1}^n k = \\frac{n(n+1)}{2}$$\n\n<img src="http://elsewhere.invalid/x.png" onerror="window.pwned=1"><script>window.pwned=2</script><b onclick="window.pwned=3">bold</b>');
  await page.keyboard.press('Shift+Enter');
  const md = c.locator('.md');
  await md.locator('h1', { hasText: 'A heading' }).waitFor({ timeout: T(10000) });
  assert.equal(await md.locator('em').innerText(), 'emphasis');
  assert.ok(await md.locator('math').count() >= 2, 'KaTeX math as MathML');
  assert.ok(await md.locator('math mfrac').count() >= 1);
  assert.equal(await md.locator('script, [onerror], [onclick], img').count(), 0, 'sanitised');
  // Another server's image would break the CSP: it is shown as a link.
  assert.equal(await md.locator('a', { hasText: '[image:' }).getAttribute('href'), 'http://elsewhere.invalid/x.png');
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.ok(await c.evaluate((el) => el.classList.contains('rendered')), 'the source is hidden once rendered');
  await shot('02-markdown');
  // Double-click: the source again; a code cell made with y.
  await md.dblclick();
  assert.ok(!(await c.evaluate((el) => el.classList.contains('rendered'))));
  await page.keyboard.press('Shift+Enter');
  const out = await run("from IPython.display import Markdown, Latex, display\ndisplay(Markdown('**bold** and `code`'))\ndisplay(Latex(r'$\\frac{a}{b}$'))");
  await out.locator('.out .md strong', { hasText: 'bold' }).waitFor({ timeout: T(10000) });
  await out.locator('.out .latex math mfrac').waitFor({ timeout: T(10000) });
  assert.doesNotMatch(await out.locator('.out').innerText(), /IPython\.core\.display\.Markdown object/);
  await shot('03-display-markdown-latex');
});

test('command mode: Esc then a b dd z m y, Shift+↓ selects, Ctrl+Shift+↑ moves; dd does not type "dd"', { skip: SKIP }, async () => {
  await freshCell();
  const start = await cells().count();
  await page.keyboard.insertText('first = 1');
  await page.keyboard.press('Escape');
  assert.ok(await page.evaluate(() => document.body.classList.contains('command-mode')));
  await page.keyboard.press('b');
  await page.keyboard.press('Enter');
  await page.keyboard.insertText('second = 2');
  await page.keyboard.press('Escape');
  await page.keyboard.press('a');
  assert.equal(await cells().count(), start + 2);
  // The new cell above "second" is selected; dd deletes it (not typed).
  await page.keyboard.press('d');
  await page.keyboard.press('d');
  assert.equal(await cells().count(), start + 1);
  assert.equal(await doc(lastCell()), 'second = 2');
  assert.doesNotMatch(await page.locator('#cells').innerText(), /dd/);
  // Select both with Shift+↑ and move them up.
  await page.keyboard.press('Shift+ArrowUp');
  assert.equal(await page.locator('.cell.selected').count(), 2);
  await page.keyboard.press('Control+Shift+ArrowUp');
  const texts = await page.locator('.cell .cm-content').allInnerTexts();
  assert.deepEqual(texts.slice(-3, -1).map((t) => t.trim()), ['first = 1', 'second = 2'], JSON.stringify(texts));
  await page.keyboard.press('ArrowDown');
  // y/m switch the type; dd then z brings a deleted cell back, outputs and all.
  await page.keyboard.press('m');
  assert.ok(await page.locator('.cell.active').evaluate((el) => el.classList.contains('markdown')));
  await page.keyboard.press('y');
  assert.ok(await page.locator('.cell.active').evaluate((el) => el.classList.contains('code')));
  const n = await cells().count();
  await page.keyboard.press('d');
  await page.keyboard.press('d');
  assert.equal(await cells().count(), n - 1);
  await page.locator('.toast', { hasText: 'deleted' }).waitFor({ timeout: T(5000) });
  await shot('04-deleted-undo-toast');
  await page.keyboard.press('z');
  assert.equal(await cells().count(), n);
  // ✕ Cell, then the toast's Undo.
  await page.click('#delete');
  assert.equal(await cells().count(), n - 1);
  await page.locator('.toast button', { hasText: 'Undo' }).click();
  assert.equal(await cells().count(), n);
  await page.keyboard.press('Escape');
});

test('Run all stops at an error, as Jupyter does', { skip: SKIP }, async () => {
  const p = await openPage();
  try {
    await p.locator('.cell').first().locator('.cm-content').click();
    await p.keyboard.insertText("ra = 'ran'");
    await p.keyboard.press('Escape');
    for (const code of ['1 / 0', "print('after the error')"]) {
      await p.keyboard.press('b');
      await p.keyboard.press('Enter');
      await p.keyboard.insertText(code);
      await p.keyboard.press('Escape');
    }
    await p.click('#runall');
    const third = cells(p).nth(2);
    await third.locator('.footer', { hasText: 'not run' }).waitFor({ timeout: T(30000) });
    assert.match(await cells(p).nth(1).locator('.out pre.error').innerText(), /ZeroDivisionError/);
    assert.match(await cells(p).nth(0).locator('.footer').innerText(), /✓/);
    assert.doesNotMatch(await third.locator('.out').innerText(), /after the error/);
    await shot('05-run-all-stopped-at-error', p);
  } finally {
    await p.close();
  }
});

test('Restart and Reset ask first (Cancel changes nothing); coloured tracebacks show their last line', { skip: SKIP }, async () => {
  await run('kept_var = 41');
  try {
    await page.locator('#vars li[data-path="kept_var"]').waitFor({ timeout: T(20000) });
  } catch (e) {
    await shot('fail-kept-var');
    throw e;
  }
  await page.click('#restart');
  await page.locator('dialog.modal', { hasText: 'Restart the kernel?' }).waitFor();
  await shot('06-confirm-restart');
  await page.locator('dialog.modal button', { hasText: 'Cancel' }).click();
  await page.click('#reset');
  await page.locator('dialog.modal', { hasText: 'Clear the namespace?' }).waitFor();
  await page.keyboard.press('Escape');
  const c = await run('print(kept_var + 1)');
  assert.match(await c.locator('.out').innerText(), /42/);
  // A deep traceback: coloured (ANSI as spans), nothing hidden below.
  const e = await run('def down(n):\n    return 1 / 0 if n == 0 else down(n - 1)\ndown(30)');
  const pre = e.locator('.out pre.error');
  assert.ok(await pre.locator('span').count() > 10, 'coloured frames');
  const colour = await pre.locator('span').first().evaluate((s) => s.style.color);
  assert.match(colour, /^rgb/);
  assert.ok(await pre.evaluate((el) => el.scrollHeight <= el.clientHeight + 1), 'the whole traceback is shown');
  assert.match(await pre.innerText(), /ZeroDivisionError: division by zero\s*$/);
  assert.doesNotMatch(await pre.innerText(), /\x1b/);
  await e.locator('pre.error').evaluate((el) => el.scrollIntoView({ block: 'end' }));
  await shot('07-coloured-traceback');
});

test('\\r progress shows live; DataFrames are styled (no CSP error); a cut output links to the full one', { skip: SKIP }, async () => {
  const c = await run("import time\nfor i in range(1, 9):\n    print(f'\\rprogress {i * 12}%', end='', flush=True)\n    time.sleep(0.3)\nprint()", page, false);
  await c.locator('.out .stream', { hasText: /progress \d+%/ }).waitFor({ timeout: T(20000) });
  assert.ok(await c.evaluate((el) => el.classList.contains('running')), 'shown while it runs');
  await c.locator('.out .footer', { hasText: '✓' }).waitFor({ timeout: T(20000) });
  assert.equal((await c.locator('.out .stream').innerText()).trim(), 'progress 96%');
  const before = problems.length;
  const df = await run("import pandas as pd, numpy as np\ndf = pd.DataFrame(np.arange(42).reshape(3, 14) / 7, columns=[f'col{i}' for i in range(14)])\ndf");
  const frame = page.frameLocator('.cell iframe.html').last();
  await frame.locator('table.dataframe th', { hasText: 'col13' }).waitFor({ timeout: T(10000) });
  await page.waitForTimeout(300);
  const th = frame.locator('table.dataframe th').nth(1);
  assert.equal(await th.evaluate((el) => getComputedStyle(el).fontSize), '12px');
  assert.equal(await frame.locator('table.dataframe').evaluate((el) => getComputedStyle(el).borderCollapse), 'collapse');
  assert.equal(await frame.locator('thead tr').evaluate((el) => getComputedStyle(el).textAlign), 'right', 'the style attribute pandas writes');
  const visible = await frame.locator('body').evaluate((b) => [...b.querySelectorAll('thead th')].filter((t) => t.getBoundingClientRect().right <= b.ownerDocument.documentElement.clientWidth).length);
  assert.ok(visible >= 13, `columns in view: ${visible - 1}`);
  assert.match(await df.locator('.out-prompt').innerText(), /^Out\[\d+\]:$/);
  assert.deepEqual(problems.slice(before), [], 'no CSP errors for the DataFrame');
  await shot('08-dataframe');
  const big = await run("print('x' * 100 + '\\n', end='')\nfor i in range(4000): print(f'line {i:05d} ' + 'y' * 60)");
  const link = big.locator('.out .note a', { hasText: 'the full output' });
  await link.waitFor({ timeout: T(20000) });
  const href = await link.getAttribute('href');
  assert.match(href, /^\/assets\/output-[0-9a-f]{16}\.txt$/);
  const full = await page.evaluate(async (u) => (await fetch(u)).text(), href);
  assert.match(full, /line 03999/);
  await shot('09-output-cut-link');
});

test('a cancelled input() says so and shows no other run; answering one gives the focus back', { skip: SKIP }, async () => {
  // Another client's run that returned early (detached, as a reload leaves
  // the page's runs): the page's ctl wait used to pick it up.
  const h = await connectHttp(srv.url);
  try {
    await call(h, 'run', { code: "import time\nfor i in range(3): print('other tick', i, flush=True); time.sleep(0.2)\n'other done'", wait: 0.05 });
    const c = await run("v = input('value: ')", page, false);
    await c.locator('.ask input').waitFor({ timeout: T(20000) });
    await c.locator('.ask input').press('Escape');
    await c.locator('.footer', { hasText: /cancelled/ }).waitFor({ timeout: T(20000) });
    assert.match(await c.locator('.out pre.error').innerText(), /KeyboardInterrupt/);
    await page.waitForTimeout(800);
    assert.doesNotMatch(await c.locator('.out').innerText(), /other tick|other done/);
    await shot('10-input-cancelled');
  } finally {
    await h.close();
  }
  // Answered: the keys go back to the cell Shift+Enter moved to.
  const c = await run("w = input('w: ')", page, false);
  await c.locator('.ask input').fill('ok');
  await c.locator('.ask input').press('Enter');
  await c.locator('.footer', { hasText: '✓' }).waitFor({ timeout: T(20000) });
  await page.keyboard.type('typed_after = 1');
  assert.equal(await doc(lastCell()), 'typed_after = 1');
});

test('nested variables stay open after a run; a long line does not slide under the line numbers', { skip: SKIP }, async () => {
  await run("data = {'name': 'Alice', 'scores': [90, 85, 92]}");
  const row = page.locator('#vars li[data-path="data"]');
  await row.waitFor({ timeout: T(20000) });
  await row.locator('.twisty').first().click();
  const scores = row.locator('li', { hasText: 'scores' }).first();
  await scores.waitFor({ timeout: T(20000) });
  await scores.locator('.twisty').first().click();
  await row.locator('li', { hasText: '92' }).first().waitFor({ timeout: T(20000) });
  await run('other_var = 2');
  await page.locator('#vars li[data-path="other_var"]').waitFor({ timeout: T(20000) });
  await page.waitForTimeout(300);
  // The second level is still open: "scores" expanded, its items listed
  // (its own preview also reads "[90, 85, 92]": look for the rows under it).
  const open = row.locator('li.expanded', { hasText: 'scores' }).first();
  await open.waitFor({ timeout: T(5000) });
  assert.ok(await open.locator(':scope > ul > li').count() >= 3, 'the list\'s items are shown');
  const gutter = await lastCell().locator('.cm-gutters').evaluate((g) => getComputedStyle(g).backgroundColor);
  assert.notEqual(gutter, 'rgba(0, 0, 0, 0)', 'an opaque gutter');
  await shot('11-nested-vars-open');
});

test('files: the page lists, opens, saves (with a checkpoint) and autosaves notebooks under --cwd', { skip: SKIP }, async () => {
  const p = await openPage();
  try {
    await run("print('saved output')\n6 * 7", p);
    await p.keyboard.press('Control+s');
    const name = p.locator('dialog.modal input');
    await name.waitFor();
    await name.fill('work/analysis.ipynb');
    await shot('12-save-as', p);
    await p.keyboard.press('Enter');
    await p.locator('#savestate', { hasText: /^saved/ }).waitFor({ timeout: T(10000) });
    const file = path.join(srv.dir, 'work', 'analysis.ipynb');
    const nb = JSON.parse(readFileSync(file, 'utf8'));
    const code = nb.cells.find((c) => c.cell_type === 'code');
    assert.deepEqual(code.outputs.map((o) => o.output_type), ['stream', 'execute_result'], 'a value is saved as execute_result, Out[n]');
    assert.equal(code.outputs[1].execution_count, code.execution_count);
    assert.ok(existsSync(path.join(srv.dir, 'work', '.ipynb_checkpoints', 'analysis-checkpoint.ipynb')), 'Save makes a checkpoint');
    // Autosave: an edit reaches the file by itself.
    await lastCell(p).locator('.cm-content').click();
    await p.keyboard.insertText('autosaved_edit = 1');
    await p.locator('#savestate', { hasText: 'unsaved' }).waitFor({ timeout: T(5000) });
    await p.locator('#savestate', { hasText: /^saved/ }).waitFor({ timeout: T(10000) });
    assert.match(readFileSync(file, 'utf8'), /autosaved_edit = 1/);
    // The Files panel lists it; another notebook opens from there, asking
    // first when there is unsaved work.
    writeFileSync(path.join(srv.dir, 'work', 'other.ipynb'), JSON.stringify({ cells: [{ cell_type: 'markdown', metadata: {}, source: ['# Other notebook'] }], metadata: {}, nbformat: 4, nbformat_minor: 5 }));
    await p.click('#open');
    await p.locator('#files li.dir button', { hasText: 'work/' }).click();
    await p.locator('#files li.nb.current button', { hasText: 'analysis.ipynb' }).waitFor({ timeout: T(5000) });
    await shot('13-files-panel', p);
    await p.locator('#files li.nb button', { hasText: 'other.ipynb' }).click();
    await p.locator('.cell .md h1', { hasText: 'Other notebook' }).waitFor({ timeout: T(10000) });
    assert.equal(await p.locator('#name').inputValue(), 'work/other');
  } finally {
    await p.close();
  }
});

test('a reload restores the notebook and follows the run still going; leaving with unsaved work asks', { skip: SKIP }, async () => {
  const p = await openPage();
  try {
    await run('unsaved_cell = 1', p);
    const c = await run("import time\nfor i in range(8): print('step', i, flush=True); time.sleep(0.4)", p, false);
    await c.locator('.out .stream', { hasText: 'step 1' }).waitFor({ timeout: T(20000) });
    let asked = null;
    p.once('dialog', (d) => { asked = d.type(); d.accept(); });
    await p.reload();
    assert.equal(asked, 'beforeunload', 'the browser asked before leaving unsaved work');
    await p.locator('#status', { hasText: /restored/ }).or(p.locator('#kernel[data-state="busy"]')).first().waitFor({ timeout: T(20000) });
    const again = p.locator('.cell', { hasText: "print('step', i" });
    await again.waitFor({ timeout: T(10000) });
    assert.equal(await p.locator('.cell', { hasText: 'unsaved_cell = 1' }).count(), 1, 'the cells are back');
    await again.locator('.out .stream', { hasText: 'step 7' }).waitFor({ timeout: T(20000) });
    await again.locator('.footer', { hasText: '✓' }).waitFor({ timeout: T(20000) });
    await shot('14-reload-restored-run', p);
  } finally {
    p.on('dialog', (d) => d.accept());
    await p.close({ runBeforeUnload: false });
  }
});

test('a file changed on disk by someone else is detected; Open over unsaved work asks first', { skip: SKIP }, async () => {
  const file = path.join(srv.dir, 'work', 'shared.ipynb');
  writeFileSync(file, JSON.stringify({ cells: [{ cell_type: 'code', metadata: {}, source: ['mine = 1'], outputs: [], execution_count: null }], metadata: {}, nbformat: 4, nbformat_minor: 5 }));
  const p = await openPage();
  try {
    await p.click('#open');
    await p.locator('#files li.dir button', { hasText: 'work/' }).click();
    await p.locator('#files li.nb button', { hasText: 'shared.ipynb' }).click();
    await p.locator('.cell', { hasText: 'mine = 1' }).waitFor({ timeout: T(10000) });
    // Someone else saves it.
    writeFileSync(file, JSON.stringify({ cells: [{ cell_type: 'code', metadata: {}, source: ['theirs = 2'], outputs: [], execution_count: null }], metadata: {}, nbformat: 4, nbformat_minor: 5 }));
    const b = p.locator('.banner', { hasText: 'changed on disk' });
    await b.waitFor({ timeout: T(10000) });
    await shot('15-changed-on-disk', p);
    // This page's edit is not written over theirs by the autosave.
    await lastCell(p).locator('.cm-content').click();
    await p.keyboard.insertText('# my edit');
    await p.waitForTimeout(2600);
    assert.match(readFileSync(file, 'utf8'), /theirs = 2/);
    await b.locator('button', { hasText: 'Reload from disk' }).click();
    await p.locator('.cell', { hasText: 'theirs = 2' }).waitFor({ timeout: T(10000) });
    // Unsaved work, then Open another: it asks, and Cancel keeps it.
    await p.click('#add');
    await p.keyboard.insertText('unsaved = 3');
    await p.locator('#files li.nb button', { hasText: 'other.ipynb' }).click();
    await p.locator('dialog.modal', { hasText: 'Open another notebook?' }).waitFor({ timeout: T(5000) });
    await p.locator('dialog.modal button', { hasText: 'Cancel' }).click();
    assert.equal(await p.locator('.cell', { hasText: 'unsaved = 3' }).count(), 1);
  } finally {
    await p.close();
  }
});

test('a dead server shows at once; the page reconnects by itself when it is back, cells kept', { skip: SKIP }, async () => {
  const s = await startHttp();
  const p = await openPage(`${s.base}/`, true);
  let s2 = null;
  try {
    // An answer on its way when the server dies (a look after a run, a
    // status read) must not paint "idle" over "disconnected": the first one
    // after this run is held until the page has shown the loss.
    let release, caught;
    const held = new Promise((r) => { release = r; });
    const got = new Promise((r) => { caught = r; });
    let holding = false;
    await p.route('**/mcp', async (route) => {
      const req = route.request();
      if (!holding && req.method() === 'POST' && /"name":"look"|"resources\/read"/.test(req.postData() || '')) {
        holding = true;
        const res = await route.fetch();
        caught();
        await held;
        await route.fulfill({ response: res }).catch(() => {});
      } else await route.continue().catch(() => {});
    });
    await run('before_death = 1', p);
    const n = await p.locator('.cell').count();
    let timer;
    await Promise.race([got, new Promise((_, no) => { timer = setTimeout(() => no(new Error('no look or status read after a run')), T(10000)); })]);
    clearTimeout(timer);
    await s.stop();
    await p.locator('#kernel[data-state="disconnected"]').waitFor({ timeout: T(10000) });
    release();
    await p.waitForTimeout(500);
    assert.equal(await p.locator('#kernel').getAttribute('data-state'), 'disconnected', 'a late answer left the dead server showing as alive');
    await p.unroute('**/mcp');
    await p.locator('.banner', { hasText: 'Connection to rat-py lost' }).waitFor({ timeout: T(10000) });
    await shot('16-connection-lost', p);
    s2 = await startHttp(['--port', String(s.port)]);
    await p.locator('#kernel[data-state="idle"]').waitFor({ timeout: T(30000) });
    assert.equal(await p.locator('.banner', { hasText: 'Connection to rat-py lost' }).count(), 0);
    assert.equal(await p.locator('.cell').count(), n, 'the cells are kept');
    const c = await run('print("after the restart")', p);
    assert.match(await c.locator('.out').innerText(), /after the restart/);
    await shot('17-reconnected', p);
  } finally {
    await p.close();
    if (s2) await s2.stop();
  }
});

test('round trip with Jupyter: the page\'s notebook reads the same in Jupyter, and Jupyter\'s in the page', { skip: SKIP }, async () => {
  // Jupyter's side: a notebook executed by nbclient (what nbconvert and
  // Jupyter's own tools run), with every kind of output.
  const jfile = path.join(srv.dir, 'work', 'from_jupyter.ipynb');
  const mk = spawnSync(PY, ['-c', `
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.v4.new_notebook()
nb.cells = [
  nbformat.v4.new_markdown_cell("# From Jupyter\\nWith $x^2$ math."),
  nbformat.v4.new_code_cell("print('streamed')\\n21 * 2"),
  nbformat.v4.new_code_cell("from IPython.display import HTML, display\\ndisplay(HTML('<b>html out</b>'))"),
  nbformat.v4.new_code_cell("import pandas as pd\\npd.DataFrame({'a': [1, 2]})"),
  nbformat.v4.new_code_cell("1/0"),
  nbformat.v4.new_raw_cell("raw text"),
]
NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=60).execute()
nbformat.write(nb, sys.argv[1])
`, jfile], { encoding: 'utf8', env: { ...process.env, JUPYTER_PLATFORM_DIRS: '1' } });
  assert.equal(mk.status, 0, mk.stderr);
  const jupyterSide = jupyterRead(srv.dir, 'work/from_jupyter.ipynb');
  const p = await openPage();
  try {
    await p.click('#open');
    await p.locator('#files li.dir button', { hasText: 'work/' }).click();
    await p.locator('#files li.nb button', { hasText: 'from_jupyter.ipynb' }).click();
    await p.locator('.cell .md h1', { hasText: 'From Jupyter' }).waitFor({ timeout: T(10000) });
    // Rich outputs on reopen: Out[n], HTML in a frame, a styled DataFrame,
    // a coloured traceback; the raw cell as it is.
    await p.locator('.out-prompt', { hasText: 'Out[1]:' }).waitFor();
    await p.frameLocator('iframe.html').first().locator('b', { hasText: 'html out' }).waitFor({ timeout: T(10000) });
    await p.frameLocator('iframe.html').nth(1).locator('table.dataframe').waitFor({ timeout: T(10000) });
    assert.ok(await p.locator('pre.error span').count() > 0, 'the saved traceback keeps its colours');
    assert.equal(await p.locator('.cell.raw').count(), 1);
    await shot('18-opened-from-jupyter', p);
    // Saved by the page, it reads the same in Jupyter.
    await p.click('#save');
    await p.locator('#status', { hasText: 'saved work/from_jupyter.ipynb' }).waitFor({ timeout: T(10000) });
    // (The page adds the kernelspec it ran with, which nbclient's notebook lacked.)
    assert.deepEqual(jupyterRead(srv.dir, 'work/from_jupyter.ipynb').cells, jupyterSide.cells);
    // The page's own notebook: made here, read by Jupyter.
    await p.locator('#files li.nb button', { hasText: 'analysis.ipynb' }).click();
    await p.locator('.cell', { hasText: 'saved output' }).waitFor({ timeout: T(10000) });
    await p.locator('.cell').last().locator('.cm-content').click();
    await p.keyboard.press('Escape');
    await p.keyboard.press('b');
    await p.keyboard.press('m');
    await p.keyboard.press('Enter');
    await p.keyboard.insertText('## Notes\nmade in the page');
    await p.keyboard.press('Shift+Enter');
    await run("from IPython.display import HTML, display\ndisplay(HTML('<i>page html</i>'))\nraise ValueError('page error')", p);
    await p.click('#save');
    await p.locator('#status', { hasText: 'saved work/analysis.ipynb' }).waitFor({ timeout: T(10000) });
    const pageSide = jupyterRead(srv.dir, 'work/analysis.ipynb');
    const types = pageSide.cells.map((c) => c.type);
    assert.ok(types.includes('markdown') && types.includes('code'), JSON.stringify(types));
    const md = pageSide.cells.find((c) => c.type === 'markdown');
    assert.equal(md.source, '## Notes\nmade in the page');
    const first = pageSide.cells.find((c) => c.source.includes('saved output'));
    assert.deepEqual(first.outputs.map((o) => o.output_type), ['stream', 'execute_result']);
    assert.deepEqual(first.outputs[1].mimes, ['text/plain']);
    const rich = pageSide.cells.find((c) => c.source.includes('page html'));
    assert.deepEqual(rich.outputs.map((o) => o.output_type), ['display_data', 'error']);
    assert.ok(rich.outputs[0].mimes.includes('text/html'), JSON.stringify(rich.outputs[0]));
    assert.equal(rich.outputs[1].ename, 'ValueError');
    assert.ok(rich.outputs[1].colour, 'the traceback keeps the kernel\'s colours for Jupyter');
    assert.equal(pageSide.kernelspec, 'python3');
  } finally {
    await p.close();
  }
});

test('the page logged no errors and no CSP violations', { skip: SKIP }, () => {
  assert.deepEqual(problems, []);
});
