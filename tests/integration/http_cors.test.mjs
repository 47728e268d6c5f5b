// A web page on another origin, allowed with --allow-origin, calls rat-py's
// /mcp with its token, in real headless Chromium (Debian's, through
// playwright-core as page.test.mjs drives it). The page is served here by a
// small Node server on 127.0.0.1 under a name Chromium maps there
// (--host-resolver-rules), so its origin is http://app.example:PORT: a
// cross-origin request with Authorization, which Chromium preflights with an
// OPTIONS that carries no token. The preflight must pass on the Origin
// check alone (issue 30, item 3: it used to get 401, so no such page, the
// MCP Inspector's included, could connect once a token was set).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { startHttp, ms } from './lib.mjs';
import { freePort } from './jupyter_server.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SKIP = !existsSync(CHROMIUM) && `no browser at ${CHROMIUM} (apt install chromium)`;
const TOKEN = 'cors-test-token';

let rat, site, browser, sitePort;

before(async () => {
  if (SKIP) return;
  sitePort = await freePort();
  site = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>another origin</title><p>an MCP client page</p>');
  });
  await new Promise((r) => site.listen(sitePort, '127.0.0.1', r));
  rat = await startHttp(['--token', TOKEN, '--allow-origin', `http://app.example:${sitePort}`]);
  browser = await chromium.launch({ executablePath: CHROMIUM,
    args: ['--no-sandbox', '--host-resolver-rules=MAP app.example 127.0.0.1, MAP other.example 127.0.0.1'] });
});
after(async () => {
  if (browser) await browser.close();
  if (rat) await rat.stop();
  if (site) site.close();
});

/** In the page: initialize, then a run, over fetch() with the bearer token. */
async function mcpFromPage(page, mcpUrl, token) {
  return page.evaluate(async ({ mcpUrl, token }) => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}` };
    const post = async (body, sid) => {
      const r = await fetch(mcpUrl, { method: 'POST', headers: { ...headers, ...(sid ? { 'mcp-session-id': sid } : {}) },
        body: JSON.stringify(body) });
      return { status: r.status, sid: r.headers.get('mcp-session-id'), text: await r.text() };
    };
    try {
      const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'page', version: '1' } } });
      if (init.status !== 200) return { error: `initialize: HTTP ${init.status}` };
      await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, init.sid);
      const run = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run', arguments: { code: 'print(6 * 7)' } } }, init.sid);
      return { sid: init.sid, init: init.text, run: run.text, status: run.status };
    } catch (e) {
      return { error: String(e) };
    }
  }, { mcpUrl, token });
}

test('a page on an allowed origin connects to /mcp with a token: initialize and a run', { skip: SKIP }, async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`http://app.example:${sitePort}/`);
    const r = await mcpFromPage(page, rat.url, TOKEN);
    assert.equal(r.error, undefined, r.error);
    assert.match(r.sid, /^[0-9a-f]{32}$/, 'the session id is readable (exposed to the page)');
    assert.match(r.init, /"serverInfo"/);
    assert.equal(r.status, 200);
    assert.match(r.run, /42\\n/);
  } finally {
    await page.close();
  }
});

test('the same page without the token, or on an origin not allowed, cannot connect', { skip: SKIP }, async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`http://app.example:${sitePort}/`);
    let r = await mcpFromPage(page, rat.url, 'wrong');
    assert.equal(r.error, 'initialize: HTTP 401');
    await page.goto(`http://other.example:${sitePort}/`);
    r = await mcpFromPage(page, rat.url, TOKEN);
    assert.match(r.error, /TypeError: Failed to fetch/, 'the preflight is refused (403): the browser blocks the request');
  } finally {
    await page.close();
  }
});

// The file API (bridge/app/contents.c) from the same page: a save is a PUT
// with If-Match, a rename a PATCH, so the preflight must allow those
// methods and headers, not only /mcp's.
test('a page on an allowed origin saves, saves again with If-Match and renames through /api/contents', { skip: SKIP }, async () => {
  const page = await browser.newPage();
  try {
    await page.goto(`http://app.example:${sitePort}/`);
    const base = rat.url.replace(/\/mcp$/, '/api/contents');
    const r = await page.evaluate(async ({ base, token }) => {
      const auth = { authorization: `Bearer ${token}` };
      const json = { ...auth, 'content-type': 'application/json' };
      const body = (text) => JSON.stringify({ type: 'file', format: 'text', content: text });
      try {
        const put = await fetch(`${base}/cors.txt`, { method: 'PUT', headers: json, body: body('one') });
        const got = await (await fetch(`${base}/cors.txt?hash=1`, { headers: auth })).json();
        const stale = await fetch(`${base}/cors.txt`, { method: 'PUT', headers: { ...json, 'if-match': '0'.repeat(64) }, body: body('two') });
        const fresh = await fetch(`${base}/cors.txt`, { method: 'PUT', headers: { ...json, 'if-match': got.hash }, body: body('two') });
        const moved = await fetch(`${base}/cors.txt`, { method: 'PATCH', headers: json, body: JSON.stringify({ path: 'renamed.txt' }) });
        const after = await (await fetch(`${base}/renamed.txt`, { headers: auth })).json();
        return { put: put.status, stale: stale.status, fresh: fresh.status, moved: moved.status, content: after.content };
      } catch (e) {
        return { error: String(e) };
      }
    }, { base, token: TOKEN });
    assert.equal(r.error, undefined, r.error);
    assert.ok([200, 201].includes(r.put), `PUT answered ${r.put}`);
    assert.equal(r.stale, 412, 'a save over a changed file is refused');
    assert.equal(r.fresh, 200);
    assert.equal(r.moved, 200);
    assert.equal(r.content, 'two');
  } finally {
    await page.close();
  }
});
