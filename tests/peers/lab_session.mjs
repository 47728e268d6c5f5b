#!/usr/bin/env node
// A real JupyterLab 4 session in headless Chromium, for doc/page.md's
// "Beside Jupyter" table (issue 43 item 3): JupyterLab from the pinned venv
// (tests/peers.txt; run tests/peers/setup.sh first), Debian's chromium
// through playwright-core. It does what the table compares and prints what
// Lab did, one line each; screenshots go to build/peers/lab-session/. Not a
// ctest: it observes, it does not judge. A run by another client (rat-py,
// `--gateway LAB --existing ID`) on the notebook's kernel is included.
//   node tests/peers/lab_session.mjs        (RAT_PY: the rat-py to use)
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startJupyterServer } from '../integration/jupyter_server.mjs';
import { connect, run } from '../integration/lib.mjs';

const SRC = path.resolve(new URL('.', import.meta.url).pathname, '../..');
const OUT = path.join(SRC, 'build/peers/lab-session');
mkdirSync(OUT, { recursive: true });
const TOKEN = 'lab-session-token';
const lab = await startJupyterServer({ token: TOKEN, kind: 'lab' });
const api = async (method, p, body) => {
  const r = await fetch(lab.url + p, { method, headers: { Authorization: `token ${TOKEN}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined });
  const t = await r.text();
  return t ? JSON.parse(t) : null;
};
const seen = [];
const note = (what, value) => { seen.push([what, value]); console.log(`${what}: ${value}`); };
let browser;
try {
  await api('PUT', '/api/contents/s.ipynb', { type: 'notebook', content: { cells: [], metadata: { kernelspec: { name: 'python3', display_name: 'Python 3 (ipykernel)', language: 'python' } }, nbformat: 4, nbformat_minor: 5 } });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${lab.url}/lab/tree/s.ipynb?token=${TOKEN}`);
  await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: 120_000 });
  await page.waitForFunction(() => document.querySelector('.jp-Notebook-ExecutionIndicator')?.getAttribute('data-status') === 'idle', null, { timeout: 120_000 }).catch(() => {});
  const shot = (name) => page.screenshot({ path: path.join(OUT, `${name}.png`) });
  // A first-run dialog (news, kernel choice): named, then accepted.
  await page.waitForTimeout(2000);
  for (let i = 0; i < 3 && await page.locator('.jp-Dialog').isVisible(); i++) {
    await shot(`0-dialog-${i}`);
    note('a dialog at start', JSON.stringify((await page.locator('.jp-Dialog-header').innerText().catch(() => '')).trim()));
    await page.locator('.jp-Dialog .jp-mod-accept').first().click();
    await page.waitForTimeout(1000);
  }
  const cells = () => page.locator('.jp-Notebook .jp-Cell').count();
  const lastOutput = () => page.locator('.jp-Notebook .jp-Cell').last().locator('.jp-OutputArea-output').allInnerTexts();
  // Types code into the last cell and runs it with Shift+Enter (a new cell follows).
  async function runCode(code, wait = 'idle') {
    const editor = page.locator('.jp-Notebook .jp-Cell').last().locator('.cm-content');
    await editor.click();
    await page.keyboard.insertText(code);
    await page.keyboard.press('Shift+Enter');
    if (wait === 'idle') await page.waitForTimeout(300);
    if (wait === 'idle') {
      await page.waitForFunction(() => document.querySelector('.jp-Notebook-ExecutionIndicator')?.getAttribute('data-status') === 'idle', null, { timeout: 30_000 }).catch(() => {});
      await page.waitForTimeout(300);
    }
    return page.locator('.jp-Notebook .jp-Cell').nth((await cells()) - 2).locator('.jp-OutputArea-output').allInnerTexts();
  }
  note('a run', JSON.stringify(await runCode('print(6*7)')));
  await shot('1-run');
  // input()
  await runCode('name = input("Name: ")', 'no');
  const stdin = page.locator('.jp-Stdin-input');
  await stdin.waitFor({ timeout: 30_000 });
  await shot('2-input');
  await stdin.fill('Bob');
  await stdin.press('Enter');
  await page.waitForTimeout(1000);
  note('input()', JSON.stringify(await runCode('print("hi", name)')));
  // \r progress, a traceback
  note('\\r progress', JSON.stringify(await runCode('import time\nfor i in range(3):\n    print(f"\\r{i}", end="", flush=True)\n    time.sleep(0.2)')));
  const tb = await runCode('1/0');
  note('traceback', `${JSON.stringify(tb.join('').split('\n').slice(-2))}, coloured: ${await page.locator('.jp-OutputArea-output .ansi-red-fg, .jp-OutputArea-output [class*="ansi-"]').count() > 0}`);
  await shot('3-traceback');
  // help on a name: Shift+Tab in the editor
  const editor = page.locator('.jp-Notebook .jp-Cell').last().locator('.cm-content');
  await editor.click();
  await page.keyboard.insertText('print(');
  await page.keyboard.press('Shift+Tab');
  note('Shift+Tab', `tooltip shown: ${await page.locator('.jp-Tooltip').waitFor({ timeout: 5000 }).then(() => true, () => false)}`);
  await shot('4-tooltip');
  // completion, in a new cell: as you type (no), then Tab
  const commandMode = async () => { for (let i = 0; i < 3; i++) { await page.keyboard.press('Escape'); await page.waitForTimeout(200); } };
  await commandMode();
  await page.keyboard.press('b');
  await page.keyboard.press('Enter');
  await page.keyboard.insertText('import math; math.sq');
  await page.waitForTimeout(1500);
  const asYouType = await page.locator('.jp-Completer').isVisible().catch(() => false);
  await page.keyboard.press('Tab');
  const onTab = await page.locator('.jp-Completer').waitFor({ timeout: 5000 }).then(() => true, () => false);
  note('completion', `as you type: ${asYouType}, Tab: ${onTab}, offered: ${JSON.stringify((await page.locator('.jp-Completer-item').allInnerTexts().catch(() => [])).slice(0, 3))}`);
  await shot('5-completion');
  // command mode: a inserts, d d deletes, z undoes
  await commandMode();
  const n0 = await cells();
  const key = async (k, pause = 1000) => { await page.keyboard.press(k); await page.waitForTimeout(pause); };
  await key('a');
  const n1 = await cells();
  await key('d', 100);
  await key('d');
  const n2 = await cells();
  await shot('6a-before-z');
  await key('z');
  await page.waitForTimeout(500);
  await shot('6b-after-z');
  const n3 = await cells();
  note('command mode a, d d, z', `${n0} → ${n1} → ${n2} → ${n3} cells`);
  // Run all after an error
  await commandMode();
  await page.keyboard.press('b');
  await page.keyboard.press('Enter');
  await page.keyboard.insertText('print("after the error")');
  await page.keyboard.press('Escape');
  await page.evaluate(() => window.jupyterapp?.commands.execute('notebook:run-all-cells'));
  await page.waitForTimeout(3000);
  note('Run all after an error', `later cell ran: ${(await page.locator('.jp-OutputArea-output').allInnerTexts()).some((t) => t.includes('after the error'))}`);
  await shot('6-run-all');
  // Another client's run on the same kernel: rat-py borrowing it.
  const sessions = await api('GET', '/api/sessions');
  const kid = sessions[0].kernel.id;
  const h = await connect({ args: ['--gateway', lab.url, '--gateway-token', TOKEN, '--existing', kid] });
  try {
    await run(h, 'print("from rat-py")');
  } finally {
    await h.close();
  }
  await page.waitForTimeout(1500);
  note('another client\'s run', `shown in the notebook: ${(await page.content()).includes('from rat-py')}`);
  // settings, as the live server gives them
  const dm = await api('GET', '/lab/api/settings/@jupyterlab/docmanager-extension:plugin');
  note('autosave', `${dm.settings?.autosave ?? dm.schema.properties.autosave.default}, every ${dm.settings?.autosaveInterval ?? dm.schema.properties.autosaveInterval.default} s`);
  const cm = await api('GET', '/lab/api/settings/@jupyterlab/completer-extension:manager');
  note('completer autoCompletion default', String(cm.schema.properties.autoCompletion.default));
  await shot('7-end');
} finally {
  await browser?.close();
  await lab.stop();
}
