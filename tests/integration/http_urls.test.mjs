// What a request's URL may carry (issue 41, items 10 and 11; doc/http.md
// "Security"): the `token` query argument opens only a GET (or HEAD) of the
// page, /assets and /health — never /mcp, never the file API, never a
// request that changes something — and a %00 in a path or query, which
// would cut the path short where C strings end ("zz.txt%00/../../x" named
// zz.txt), is refused with 400 before anything is done.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startHttp } from './lib.mjs';

/** A request with this exact path (fetch would resolve its dot segments). */
function raw(base, method, p, { headers = {}, body } = {}) {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const rq = http.request({ host: u.hostname, port: u.port, method, path: p, headers: {
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: text }));
    });
    rq.on('error', reject);
    rq.end(body !== undefined ? JSON.stringify(body) : undefined);
  });
}

const SAVE = { type: 'file', format: 'text', content: 'hello' };

test('?token= opens GET and HEAD of the page, /assets and /health only: not the file API, not a write, not /mcp', async () => {
  const token = 'url-test-token-0123456789';
  const s = await startHttp([], { RAT_PY_TOKEN: token });
  try {
    writeFileSync(path.join(s.dir, 'there.txt'), 'x');
    const q = `?token=${token}`;
    // Taken: a browser's link or <img> can carry nothing else.
    assert.equal((await raw(s.base, 'GET', `/health${q}`)).status, 200);
    assert.equal((await raw(s.base, 'HEAD', `/health${q}`)).status, 200);
    assert.equal((await raw(s.base, 'GET', `/assets/0123456789abcdef0123456789abcdef.png${q}`)).status, 404, 'let in, then not found');
    assert.notEqual((await raw(s.base, 'GET', `/${q}`)).status, 401);
    // Not taken: every method of the file API, and a write anywhere.
    for (const [method, p, body] of [
      ['PUT', '/api/contents/new.txt', SAVE],
      ['GET', '/api/contents/there.txt', undefined],
      ['GET', '/api/contents/', undefined],
      ['POST', '/api/contents/', { type: 'file' }],
      ['PATCH', '/api/contents/there.txt', { path: 'moved.txt' }],
      ['DELETE', '/api/contents/there.txt', undefined],
      ['POST', '/health', {}],
    ]) {
      const r = await raw(s.base, method, `${p}${q}`, { body });
      assert.equal(r.status, 401, `${method} ${p}?token=: ${r.status} ${r.body}`);
    }
    assert.ok(!existsSync(path.join(s.dir, 'new.txt')), 'the PUT wrote nothing');
    assert.ok(existsSync(path.join(s.dir, 'there.txt')), 'the DELETE removed nothing');
    assert.ok(!existsSync(path.join(s.dir, 'moved.txt')));
    // The header opens them.
    const auth = { authorization: `Bearer ${token}` };
    assert.equal((await raw(s.base, 'PUT', '/api/contents/new.txt', { body: SAVE, headers: auth })).status, 201);
    assert.equal((await raw(s.base, 'GET', '/api/contents/there.txt', { headers: auth })).status, 200);
  } finally {
    await s.stop();
  }
});

test('%00 in a path or a query: 400, and nothing written or read', async () => {
  const s = await startHttp();
  try {
    writeFileSync(path.join(s.dir, 'a.txt'), 'secret');
    for (const [method, p, body] of [
      ['PUT', '/api/contents/zz.txt%00/../../x', SAVE],
      ['PUT', '/api/contents/zz.txt%00', SAVE],
      ['GET', '/api/contents/a.txt%00.ipynb', undefined],
      ['DELETE', '/api/contents/a.txt%00/x', undefined],
      ['GET', '/health%00x', undefined],
      ['GET', '/health?x=%00', undefined],
      ['GET', '/assets/0123456789abcdef0123456789abcdef.png%00', undefined],
    ]) {
      const r = await raw(s.base, method, p, { body });
      assert.equal(r.status, 400, `${method} ${p}: ${r.status} ${r.body}`);
      assert.match(r.body, /NUL byte \(%00\)/);
    }
    assert.deepEqual(readdirSync(s.dir).filter((f) => f.startsWith('zz')), [], 'zz.txt was not written');
    assert.ok(existsSync(path.join(s.dir, 'a.txt')), 'a.txt was not deleted');
    // The same connection's next request is judged on its own.
    assert.equal((await raw(s.base, 'GET', '/health')).status, 200);
    assert.equal((await raw(s.base, 'PUT', '/api/contents/zz.txt', { body: SAVE })).status, 201);
  } finally {
    await s.stop();
  }
});
