// MCP Apps (SEP-1865; doc/apps.md) at the protocol level, no browser: only a
// client that declares io.modelcontextprotocol/ui with text/html;profile=
// mcp-app is told of ui://rat-py/app.html (tools' _meta.ui, the resources,
// the extension in initialize); any other client gets exactly what it got
// before, over stdio (2025-11-25 and 2026-07-28) and HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { rawServer, startHttp, connectHttp } from './lib.mjs';

const BUILD = process.env.RAT_BUILD_DIR || '';
const GENERATED = path.join(BUILD, 'generated', 'page_files.c');
// A build without node/npm has no page and so no app: then nobody sees one.
const HAS_APP = !(BUILD && existsSync(GENERATED) && /No node\/npm/.test(readFileSync(GENERATED, 'utf8')));
const EXT = 'io.modelcontextprotocol/ui';
const MIME = 'text/html;profile=mcp-app';
const UI = { extensions: { [EXT]: { mimeTypes: [MIME] } } };
const APP = 'ui://rat-py/app.html';
const MODERN = '2026-07-28';

// initialize, tools/list, resources/list, resources/read of the app, over
// raw stdio (the bytes rat-py sends, no SDK in between).
async function legacy(capabilities) {
  const srv = rawServer();
  try {
    const init = await srv.initialize('2025-11-25', capabilities);
    srv.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const tools = (await srv.reply(1)).result.tools;
    srv.send({ jsonrpc: '2.0', id: 2, method: 'resources/list' });
    const resources = (await srv.reply(2)).result.resources;
    srv.send({ jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: APP } });
    const read = await srv.reply(3);
    return { caps: init.result.capabilities, tools, resources, read };
  } finally {
    await srv.close();
  }
}

const strip = (tools) => tools.map(({ _meta, ...t }) => t);

test('a client without the extension sees no _meta.ui, no ui:// resource, no extension', async () => {
  for (const caps of [{}, { extensions: { [EXT]: { mimeTypes: ['text/html'] } } }, { extensions: { [EXT]: {} } },
    { extensions: { 'io.example/other': { mimeTypes: [MIME] } } }, { extensions: { [EXT]: { mimeTypes: MIME } } }]) {
    const r = await legacy(caps);
    const what = JSON.stringify(caps);
    for (const t of r.tools) assert.equal(t._meta, undefined, `${what}: ${t.name}`);
    assert.equal(r.caps.extensions, undefined, what);
    assert.deepEqual(r.resources.filter((x) => x.uri.startsWith('ui://')), [], what);
    assert.equal(r.read.error.code, -32002, what);
    assert.match(r.read.error.message, /Resource not found: ui:\/\/rat-py\/app\.html/, what);
  }
});

test('a client with the extension: run and look name the app; the tools are otherwise the same', async () => {
  const plain = await legacy({});
  const ui = await legacy(UI);
  assert.deepEqual(strip(ui.tools), plain.tools);
  const meta = Object.fromEntries(ui.tools.map((t) => [t.name, t._meta]));
  if (!HAS_APP) {
    assert.deepEqual(meta, { run: undefined, look: undefined, ctl: undefined });
    return;
  }
  assert.deepEqual(meta, { run: { ui: { resourceUri: APP } }, look: { ui: { resourceUri: APP } }, ctl: undefined });
  assert.deepEqual(ui.caps.extensions, { [EXT]: { mimeTypes: [MIME] } });
  assert.deepEqual(ui.resources.filter((x) => x.uri.startsWith('ui://')).map((x) => [x.uri, x.mimeType]),
    [[APP, MIME], ['ui://rat-py/md.js', 'text/javascript']]);
  // The other resources are the same, in the same order.
  assert.deepEqual(ui.resources.filter((x) => !x.uri.startsWith('ui://')), plain.resources);
  const c = ui.read.result.contents[0];
  assert.equal(c.uri, APP);
  assert.equal(c.mimeType, MIME);
  assert.match(c.text, /^<!doctype html>/i);
  assert.deepEqual(c._meta, { ui: { csp: { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] },
    permissions: {}, prefersBorder: true } });
});

test('2026-07-28 (per-request capabilities): the same, request by request', { skip: !HAS_APP && 'no app in this build' }, async () => {
  const srv = rawServer();
  const meta = (caps) => ({ 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': caps });
  try {
    let id = 0;
    const ask = async (method, params, caps) => {
      srv.send({ jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta: meta(caps) } });
      return srv.reply(id);
    };
    assert.equal((await ask('server/discover', {}, {})).result.capabilities.extensions?.[EXT], undefined);
    assert.deepEqual((await ask('server/discover', {}, UI)).result.capabilities.extensions[EXT], { mimeTypes: [MIME] });
    const plain = (await ask('tools/list', {}, {})).result.tools;
    const ui = (await ask('tools/list', {}, UI)).result.tools;
    for (const t of plain) assert.equal(t._meta, undefined, t.name);
    assert.deepEqual(strip(ui), plain);
    assert.deepEqual(ui.find((t) => t.name === 'run')._meta, { ui: { resourceUri: APP } });
    assert.equal((await ask('resources/read', { uri: APP }, {})).error.code, -32602);
    const read = await ask('resources/read', { uri: APP }, UI);
    assert.equal(read.result.contents[0].mimeType, MIME);
    const listed = (await ask('resources/list', {}, {})).result.resources.map((r) => r.uri);
    assert.ok(!listed.some((u) => u.startsWith('ui://')), listed.join(' '));
  } finally {
    await srv.close();
  }
});

test('HTTP: an SDK client without the extension sees nothing of it; with it, the app', async () => {
  const srv = await startHttp();
  try {
    const plain = await connectHttp(srv.url);
    const ui = await connectHttp(srv.url, { capabilities: UI });
    try {
      for (const t of (await plain.client.listTools()).tools) assert.equal(t._meta, undefined, t.name);
      assert.ok(!(await plain.client.listResources()).resources.some((r) => r.uri.startsWith('ui://')));
      await assert.rejects(plain.client.readResource({ uri: APP }), /Resource not found/);
      const run = (await ui.client.listTools()).tools.find((t) => t.name === 'run');
      assert.deepEqual(run._meta, HAS_APP ? { ui: { resourceUri: APP } } : undefined);
    } finally {
      await plain.close();
      await ui.close();
    }
  } finally {
    await srv.stop();
  }
});
