// rat-py's results as an MCP App (SEP-1865, 2026-01-26; doc/apps.md; issue
// 45), in real headless Chromium: a web host built on the official host
// side (@modelcontextprotocol/ext-apps's AppBridge and PostMessageTransport,
// pinned in tests/package-lock.json) loads ui://rat-py/app.html as the spec
// requires of web hosts (through a sandbox proxy on another origin, which
// applies the CSP built from the resource's _meta.ui), hands it the agent's
// call and result, and forwards the app's tools/call and resources/read to
// rat-py through the MCP SDK's client, over stdio and over HTTP. What a
// person sees is checked, and left as screenshots in
// $RAT_BUILD_DIR/test-output/mcp_apps/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { connect, startHttp, connectHttp, ms } from './lib.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const BUILD = process.env.RAT_BUILD_DIR || '';
const SHOTS = path.join(BUILD || tmpdir(), 'test-output', 'mcp_apps');
const GENERATED = path.join(BUILD, 'generated', 'page_files.c');
const ESBUILD = path.join(BUILD, 'web', 'node_modules', 'esbuild', 'lib', 'main.js');
const NO_PAGE = BUILD && existsSync(GENERATED) && /No node\/npm/.test(readFileSync(GENERATED, 'utf8'));
const SKIP = (!existsSync(CHROMIUM) && `no browser at ${CHROMIUM} (apt install chromium)`) ||
  (NO_PAGE && 'rat-py was built without its page, hence without its app (no node/npm, or -DRAT_PAGE=OFF)') ||
  (!existsSync(ESBUILD) && `no esbuild at ${ESBUILD} to bundle the host (RAT_BUILD_DIR: a build with the page)`);
const T = (n) => ms(n);
const UI = { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } };
const APP = 'ui://rat-py/app.html';
const TESTS = path.resolve(new URL('.', import.meta.url).pathname, '..');

let stdio, srv, web, browser, page, hostSrv, sandboxSrv;
const conns = {};        // 'stdio' | 'http' → the SDK client's handle
const forwarded = [];    // every request the app made through the host: {server, method, params}
const problems = [];     // console errors, CSP violations, page errors
const requests = [];     // every URL the browser fetched: the two test origins only

// ---- the web host ---------------------------------------------------------

// The sandbox proxy (spec, "Sandbox proxy"): on its own origin; tells the
// host it is ready, loads the View's HTML in an inner frame with the CSP
// built from _meta.ui.csp as the spec's "CSP Construction from Metadata"
// does (a meta element ahead of everything), and passes every other
// message through, both ways.
const SANDBOX_HTML = `<!doctype html><meta charset="utf-8">
<style>html,body{margin:0;height:100%;overflow:hidden}iframe{border:0;width:100%;height:100%;display:block}</style>
<body><script>
const inner = document.createElement('iframe');
inner.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-forms');
document.body.append(inner);
const list = (a) => (Array.isArray(a) ? a.filter((d) => /^https?:\\/\\/[^\\s;'"]+$/.test(d)).join(' ') : '');
function cspOf(c) {
  c = c || {};
  const res = list(c.resourceDomains), conn = list(c.connectDomains), frames = list(c.frameDomains), base = list(c.baseUriDomains);
  return [\`default-src 'none'\`, \`script-src 'self' 'unsafe-inline' \${res}\`, \`style-src 'self' 'unsafe-inline' \${res}\`,
    \`connect-src \${conn || "'none'"}\`, \`img-src 'self' data: \${res}\`, \`font-src 'self' \${res}\`, \`media-src 'self' data: \${res}\`,
    \`frame-src \${frames || "'none'"}\`, \`object-src 'none'\`, \`base-uri \${base || "'self'"}\`].join('; ');
}
const reserved = (m) => m && typeof m.method === 'string' && m.method.startsWith('ui/notifications/sandbox-');
window.addEventListener('message', (ev) => {
  const m = ev.data;
  if (ev.source === window.parent) {
    if (m && m.method === 'ui/notifications/sandbox-resource-ready') {
      const p = m.params || {};
      const meta = '<meta http-equiv="Content-Security-Policy" content="' + cspOf(p.csp).replace(/"/g, '&quot;') + '">';
      window.__csp = cspOf(p.csp);
      inner.srcdoc = String(p.html).replace(/<head[^>]*>/i, (h) => h + meta);
      return;
    }
    if (!reserved(m)) inner.contentWindow.postMessage(m, '*');
  } else if (ev.source === inner.contentWindow) {
    if (!reserved(m)) window.parent.postMessage(m, '*');
  }
});
window.parent.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/sandbox-proxy-ready', params: {} }, '*');
</script>`;

// The host page: the official AppBridge, one per View. mountApp(o) shows a
// tool call's View; the app's requests go to window.ratForward (the test's
// node side, below), which sends them to rat-py.
const HOST_JS = `
window.bridges = {};
window.mountApp = async (o) => {
  const box = document.createElement('section');
  box.id = o.id;
  const h = document.createElement('h3');
  h.textContent = o.title;
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts allow-same-origin');
  iframe.style.cssText = 'width:100%;height:120px;border:1px solid #bbb;display:block';
  box.append(h, iframe);
  document.body.append(box);
  const bridge = new ExtApps.AppBridge(null, { name: 'rat-py-test-host', version: '1.0.0' },
    { serverTools: {}, serverResources: {}, logging: {} },
    { hostContext: { theme: o.theme, styles: o.styles, platform: 'web', displayMode: 'inline', availableDisplayModes: ['inline'],
        toolInfo: { tool: o.tool }, containerDimensions: { maxHeight: 3000 } } });
  bridge.oncalltool = (p) => window.ratForward(o.server, 'tools/call', p);
  bridge.onreadresource = (p) => window.ratForward(o.server, 'resources/read', p);
  bridge.onloggingmessage = (p) => console.log('app log: ' + JSON.stringify(p));
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = Math.min(height, 3000) + 2 + 'px'; };
  bridge.onsandboxready = () => bridge.sendSandboxResourceReady({ html: o.html, csp: o.meta.csp, permissions: o.meta.permissions });
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({ arguments: o.args });
    await bridge.sendToolResult(o.result);
  };
  window.bridges[o.id] = bridge;
  await bridge.connect(new ExtApps.PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
};`;

function listen(handler) {
  const s = http.createServer(handler);
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

async function hostBundle() {
  const esbuild = createRequire(import.meta.url)(ESBUILD);
  const r = await esbuild.build({
    stdin: { contents: "export { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';", resolveDir: TESTS, loader: 'js' },
    bundle: true, format: 'iife', globalName: 'ExtApps', platform: 'browser', write: false, logLevel: 'error',
  });
  return r.outputFiles[0].text;
}

// ---- the host's node side: the MCP clients ------------------------------------

const tools = {};        // server → tools/list's tools by name (for visibility)

// The host forwards the app's tools/call and resources/read (spec, "Sandbox
// proxy" 8), refusing a tool whose visibility leaves out "app".
async function forward(server, method, params) {
  forwarded.push({ server, method, params });
  const h = conns[server];
  if (method === 'tools/call') {
    const vis = tools[server][params.name]?._meta?.ui?.visibility ?? ['model', 'app'];
    if (!vis.includes('app')) throw new Error(`${params.name} is not callable by the app`);
    return h.client.callTool(params, undefined, { timeout: T(120000) });
  }
  if (method === 'resources/read') return h.client.readResource(params);
  throw new Error(`not forwarded: ${method}`);
}

// The agent's call, then the View the host shows for it.
let shown = 0;
async function agentCall(server, name, args, theme = 'light', styles = undefined) {
  const h = conns[server];
  const tool = tools[server][name];
  const uri = tool?._meta?.ui?.resourceUri;
  assert.equal(uri, APP, `${name} names the app`);
  const result = await h.client.callTool({ name, arguments: args }, undefined, { timeout: T(120000) });
  const res = await h.client.readResource({ uri });
  const c = res.contents[0];
  const id = `view${++shown}`;
  await page.evaluate((o) => window.mountApp(o), {
    id, title: `${server}: ${name} ${JSON.stringify(args)}`, server, theme, styles, tool: { name, inputSchema: tool.inputSchema },
    html: c.text, meta: c._meta.ui, args, result,
  });
  return { id, result, frame: viewFrame(id) };
}

// The View's frame: host page > sandbox proxy (other origin) > View.
const viewFrame = (id) => page.frameLocator(`#${id} iframe`).frameLocator('iframe');

// The View's box, once painted (a full-page capture resizes the page, and
// the frames of other origins then repaint blank).
async function shot(name, id = `view${shown}`) {
  mkdirSync(SHOTS, { recursive: true });
  const box = page.locator(`#${id}`);
  await box.scrollIntoViewIfNeeded();
  await page.waitForTimeout(200);
  await box.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

// A test whose View is left as a screenshot when it fails (fail-N.png).
const shown_test = (name, fn) => test(name, { skip: SKIP }, async () => {
  try { await fn(); } catch (e) {
    await shot(`fail-${shown}`).catch(() => {});
    throw e;
  }
});

before(async () => {
  if (SKIP) return;
  rmSync(SHOTS, { recursive: true, force: true });
  const bundle = await hostBundle();
  sandboxSrv = await listen((req, res) => {
    res.writeHead(req.url === '/sandbox.html' ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
    res.end(req.url === '/sandbox.html' ? SANDBOX_HTML : 'not found');
  });
  const sandboxUrl = `http://127.0.0.1:${sandboxSrv.address().port}/sandbox.html`;
  const hostHtml = `<!doctype html><meta charset="utf-8"><title>MCP Apps test host</title>
<style>body{font:14px system-ui,sans-serif;margin:12px;max-width:900px}h3{font-size:13px;margin:14px 0 4px;color:#555}</style>
<body><h2>rat-py in an MCP Apps host</h2><script>${bundle}</script><script>const SANDBOX=${JSON.stringify(sandboxUrl)};${HOST_JS.replace('iframe.setAttribute(\'sandbox\'', 'iframe.src = SANDBOX; iframe.setAttribute(\'sandbox\'')}</script>`;
  hostSrv = await listen((req, res) => {
    if (req.url === '/favicon.ico') { res.writeHead(204); res.end(); return; }
    res.writeHead(req.url === '/' ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
    res.end(req.url === '/' ? hostHtml : 'not found');
  });
  stdio = await connect({ capabilities: UI });
  conns.stdio = stdio;
  srv = await startHttp();
  web = await connectHttp(srv.url, { capabilities: UI });
  conns.http = web;
  for (const s of ['stdio', 'http']) {
    tools[s] = Object.fromEntries((await conns[s].client.listTools()).tools.map((t) => [t.name, t]));
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1000, height: 1600 } });
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('request', (r) => requests.push(r.url()));
  await page.exposeFunction('ratForward', forward);
  await page.goto(`http://localhost:${hostSrv.address().port}/`);
});

after(async () => {
  if (browser) await browser.close();
  if (web) await web.close();
  if (stdio) await stdio.close();
  if (srv) await srv.stop();
  hostSrv?.close();
  sandboxSrv?.close();
});

shown_test('run and look name ui://rat-py/app.html; the resource is one self-contained document', async () => {
  for (const s of ['stdio', 'http']) {
    assert.deepEqual(tools[s].run._meta, { ui: { resourceUri: APP } }, s);
    assert.deepEqual(tools[s].look._meta, { ui: { resourceUri: APP } }, s);
    assert.equal(tools[s].ctl._meta, undefined, s);
    assert.deepEqual(conns[s].client.getServerCapabilities().extensions,
      { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } }, s);
  }
  const list = (await stdio.client.listResources()).resources;
  const app = list.find((r) => r.uri === APP);
  assert.equal(app.mimeType, 'text/html;profile=mcp-app');
  const c = (await stdio.client.readResource({ uri: APP })).contents[0];
  assert.equal(c.mimeType, 'text/html;profile=mcp-app');
  assert.match(c.text, /^<!doctype html>/i);
  assert.deepEqual(c._meta.ui.csp, { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] });
  assert.deepEqual(c._meta.ui.permissions, {});
  // Inline only: nothing loaded from anywhere (no src=, href= to a URL, @import, url()).
  assert.doesNotMatch(c.text, /<script[^>]*\ssrc=|<link\b|@import\s*(url|['"])|url\(\s*['"]?https?:/i);
  const bytes = Buffer.byteLength(c.text);
  console.log(`# ui://rat-py/app.html: ${bytes} bytes`);
  assert.ok(bytes < 100_000, `the app is ${bytes} bytes`);
});

shown_test('a run shows as a cell: code, hello, 42, the plot, a DataFrame, markdown', async () => {
  const code = [
    "print('hello')",
    'import matplotlib',
    "matplotlib.use('module://matplotlib_inline.backend_inline')",
    'import matplotlib.pyplot as plt',
    "plt.plot([1, 4, 9, 16]); plt.title('squares'); plt.show()",
    'import pandas as pd',
    "from IPython.display import display, Markdown",
    "display(pd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3, 19]}))",
    "display(Markdown('**bold** and $x^2$'))",
    '6 * 7',
  ].join('\n');
  const { frame, result } = await agentCall('stdio', 'run', { code, wait: 60 });
  assert.equal(result.structuredContent.status, 'ok', JSON.stringify(result.structuredContent));
  await frame.locator('pre.code .tok-keyword').first().waitFor({ timeout: T(20000) });
  await frame.locator('pre.stream', { hasText: 'hello' }).waitFor({ timeout: T(20000) });
  await frame.locator('.output', { hasText: '42' }).waitFor({ timeout: T(20000) });
  const img = frame.locator('img.image');
  await img.waitFor({ timeout: T(20000) });
  await frame.locator('img.image[src^="data:image/png;base64,"]').waitFor({ timeout: T(20000) });
  const size = await img.evaluate((i) => new Promise((r) => (i.complete && i.naturalWidth ? r([i.naturalWidth, i.clientHeight]) : i.addEventListener('load', () => r([i.naturalWidth, i.clientHeight])))));
  assert.ok(size[0] > 100 && size[1] > 50, `plot size ${size}`);
  await frame.frameLocator('iframe.html').locator('td', { hasText: 'Oslo' }).waitFor({ timeout: T(20000) });
  await frame.locator('.md strong', { hasText: 'bold' }).waitFor({ timeout: T(20000) });
  await frame.locator('.md math').first().waitFor({ timeout: T(20000) });
  await frame.locator('.status', { hasText: '✓' }).waitFor({ timeout: T(20000) });
  await page.waitForTimeout(300); // the iframe height follows size-changed
  await shot('1-run-cell');
});

shown_test('an error shows its ZeroDivisionError traceback, in the dark theme', async () => {
  const { frame } = await agentCall('stdio', 'run', { code: 'def f(x):\n    return 1 / x\nf(0)' }, 'dark');
  const err = frame.locator('pre.error');
  await err.waitFor({ timeout: T(20000) });
  assert.match(await err.textContent(), /ZeroDivisionError/);
  assert.match(await err.textContent(), /Traceback|----> |f\(0\)/);
  assert.equal(await frame.locator('html').getAttribute('data-theme'), 'dark');
  await shot('2-error-dark');
  // The host switches to light (ui/notifications/host-context-changed).
  await page.evaluate((v) => window.bridges[v].sendHostContextChange({ theme: 'light' }), `view${shown}`);
  await frame.locator('html[data-theme="light"]').waitFor({ timeout: T(10000) });
});

shown_test('run again, edited, from the app reaches the kernel (HTTP)', async () => {
  // The host's style variables (SEP-1865's names) colour the View; one
  // that would load something (url()) is ignored.
  const { frame } = await agentCall('http', 'run', { code: 'n = 1\nn' }, 'light',
    { variables: { '--color-background-primary': 'rgb(255, 250, 230)', '--color-background-secondary': 'url(https://example.com/x.png)' } });
  await frame.locator('.output', { hasText: '1' }).waitFor({ timeout: T(20000) });
  assert.equal(await frame.locator('body').evaluate((b) => getComputedStyle(b).backgroundColor), 'rgb(255, 250, 230)');
  assert.equal(await frame.locator('html').evaluate((h) => h.style.getPropertyValue('--color-background-secondary')), '');
  const before = forwarded.length;
  await frame.locator('button.edit').click();
  await frame.locator('textarea.editor').fill("n = 41 + 1\nprint('edited', n)");
  await frame.locator('button.rerun').click();
  await frame.locator('pre.stream', { hasText: 'edited 42' }).waitFor({ timeout: T(30000) });
  const calls = forwarded.slice(before).filter((f) => f.method === 'tools/call');
  assert.equal(calls.length, 1, JSON.stringify(calls));
  assert.equal(calls[0].server, 'http');
  assert.equal(calls[0].params.name, 'run');
  assert.match(calls[0].params.arguments.code, /41 \+ 1/);
  // The kernel has it: the agent's own look sees n = 42.
  const r = await web.client.callTool({ name: 'look', arguments: { at: 'n' } });
  assert.match(r.content[0].text, /42/);
  await shot('3-rerun-http');
});

shown_test('input(): the app answers the prompt through the host', async () => {
  const { frame } = await agentCall('stdio', 'run', { code: "name = input('your name? ')\nprint('hi', name)", wait: 5 });
  const ask = frame.locator('.ask');
  await ask.waitFor({ timeout: T(30000) });
  assert.match(await ask.textContent(), /your name\?/);
  await ask.locator('input').fill('Ada');
  await ask.locator('button').click();
  await frame.locator('pre.stream', { hasText: 'hi Ada' }).waitFor({ timeout: T(30000) });
  await shot('4-input');
});

shown_test('a run still going when the call returns is followed, and Cancel interrupts it', async () => {
  const { frame, result } = await agentCall('stdio', 'run', { code: 'import time\nfor i in range(600):\n    time.sleep(0.1)', wait: 0.5 });
  assert.equal(result.structuredContent.status, 'running', JSON.stringify(result.structuredContent));
  const cancel = frame.locator('button.cancel');
  await frame.locator('button.cancel:not([disabled])').waitFor({ timeout: T(20000) });
  await cancel.click();
  const err = frame.locator('pre.error');
  await err.waitFor({ timeout: T(30000) });
  assert.match(await err.textContent(), /KeyboardInterrupt/);
  const sent = forwarded.filter((f) => f.method === 'tools/call' && f.params.name === 'ctl').map((f) => f.params.arguments.op);
  assert.ok(sent.includes('wait') && sent.includes('cancel'), sent.join(' '));
  await frame.locator('button.rerun:not([disabled])').waitFor({ timeout: T(20000) });
  await shot('5-cancelled');
});

shown_test('look: the variables app drills into a variable; the cell looks one up inline', async () => {
  await stdio.client.callTool({ name: 'run', arguments: { code: "cfg = {'model': {'layers': [64, 32]}, 'lr': 0.01}" } });
  const { frame } = await agentCall('stdio', 'look', {});
  const row = frame.locator('.tree li[data-path="cfg"]');
  await row.waitFor({ timeout: T(20000) });
  await row.locator('.twisty').first().click();
  await frame.locator('li[data-path="cfg[\'model\']"], li[data-path=\'cfg["model"]\'], li[data-path="cfg.model"]').first().waitFor({ timeout: T(20000) });
  const lookCalls = forwarded.filter((f) => f.method === 'tools/call' && f.params.name === 'look' && f.params.arguments.at === 'cfg');
  assert.equal(lookCalls.length, 1);
  await shot('6-look-vars');
  // From a cell: look at a variable without leaving it.
  const cell = await agentCall('stdio', 'run', { code: 'total = sum(cfg["model"]["layers"])\ntotal' });
  await cell.frame.locator('.output', { hasText: '96' }).waitFor({ timeout: T(20000) });
  await cell.frame.locator('.lookat input').fill('cfg');
  await cell.frame.locator('.lookat button').click();
  await cell.frame.locator('.tree-wrap li[data-path="cfg"] .row').first().waitFor({ timeout: T(20000) });
  await cell.frame.locator('.tree-wrap .tree ul li').first().waitFor({ timeout: T(20000) });
  await shot('7-cell-lookat');
});

shown_test('a large output stays bounded; nothing broke the CSP or left the two origins', async () => {
  const { frame } = await agentCall('stdio', 'run', { code: 'for i in range(300):\n    print(i, flush=True)\n    display(i)' });
  await frame.locator('.out .note', { hasText: 'not shown' }).first().waitFor({ timeout: T(30000) });
  const n = await frame.locator('.out > *').count();
  assert.ok(n <= 205, `${n} nodes`);
  // The outputs scroll inside the cell: the View stays a bounded height.
  const h = await page.locator(`#view${shown} iframe`).evaluate((f) => f.getBoundingClientRect().height);
  assert.ok(h < 2200, `the View is ${h}px tall`);
  const cspErrors = problems.filter((p) => /Content Security Policy|Refused to/i.test(p));
  assert.deepEqual(cspErrors, []);
  assert.deepEqual(problems, []);
  const hosts = new Set(requests.map((u) => new URL(u).host));
  for (const h of hosts) assert.ok(h.startsWith('localhost:') || h.startsWith('127.0.0.1:'), [...hosts].join(' '));
  await shot('8-bounded');
});
