// Where the kernel works when a host starts rat-py with no --cwd, from `/`
// (as Claude Desktop does on macOS): the client's MCP roots decide (issue
// 35). The official SDK client declares roots and answers roots/list; the
// kernel is a real ipykernel; a .venv is a real venv.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, readdirSync, existsSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect, connectHttp, startHttp, rawServer, run, ctl, until, ms } from './lib.mjs';

const env = { ...process.env };
delete env.VIRTUAL_ENV;

function workspace() {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'rat-roots-')));
  const dirs = ['proj', 'other', 'spaced name é'].map((d) => path.join(root, d));
  dirs.forEach((d) => mkdirSync(d));
  return { root, dirs, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

const uri = (dir) => 'file://' + dir.split('/').map(encodeURIComponent).join('/');

/** ctl status: { text, wd: structuredContent.workdir } (the SDK checked it against ctl's outputSchema). */
async function status(h) {
  const r = await ctl(h, 'status');
  return { text: r.text, wd: r.result.structuredContent.workdir };
}

async function cwdOf(h) {
  const r = await run(h, 'import os, sys\nprint(os.getcwd())\nprint(sys.path[0])');
  return { text: r.text, cwd: r.text.split('\n').filter((l) => !l.startsWith('[rat-py'))[0], path0: r.text.split('\n').filter((l) => !l.startsWith('[rat-py'))[1] };
}

test('stdio, started from /: the kernel works in the client\'s first file:// root (cwd, sys.path[0], assets), and status says why', async () => {
  const ws = workspace();
  const opts = { cwd: '/', env, roots: () => [{ uri: 'https://example.com/repo' }, { uri: uri(ws.dirs[2]), name: 'p' }] };
  const h = await connect(opts);
  try {
    const first = await cwdOf(h);
    assert.equal(first.cwd, ws.dirs[2], first.text);
    assert.equal(first.path0, ws.dirs[2]);
    assert.doesNotMatch(first.text, /\[rat-py/); // the first choice is no news
    assert.equal(opts.rootsAsked, 1);
    const st = await status(h);
    assert.match(st.text, new RegExp(`working directory: ${ws.dirs[2]} \\(the client's root file://`));
    assert.equal(st.wd.source, 'client_root');
    assert.equal(st.wd.path, ws.dirs[2]);
    assert.equal(st.wd.waiting_for_roots, false);
    assert.match(st.wd.roots_problem, /https:\/\/example\.com\/repo is not a file: URI/);
    // Rich outputs land in the root's .rat-assets.
    await run(h, 'from IPython.display import display, HTML\ndisplay(HTML("<b>x</b>"))');
    assert.equal(readdirSync(path.join(ws.dirs[2], '.rat-assets')).filter((f) => f.endsWith('.html')).length, 1);
  } finally {
    await h.close();
    ws.cleanup();
  }
});

test('a .venv in the root is the kernel\'s interpreter from the first run', async () => {
  const ws = workspace();
  const venv = path.join(ws.dirs[0], '.venv');
  const v = spawnSync('/usr/bin/python3', ['-m', 'venv', '--system-site-packages', '--without-pip', venv], { encoding: 'utf8' });
  assert.equal(v.status, 0, v.stderr);
  const h = await connect({ cwd: '/', env: { ...env, XDG_CACHE_HOME: path.join(ws.root, 'cache') }, roots: () => [{ uri: uri(ws.dirs[0]) }] });
  try {
    const r = await run(h, 'import sys, os\nprint(sys.prefix)\nprint(os.getcwd())');
    assert.deepEqual(r.text.split('\n').slice(0, 2), [venv, ws.dirs[0]], r.text);
    const st = await status(h);
    assert.match(st.text, new RegExp(`environment: venv ${venv} \\(\\.venv\\)`));
    assert.match(st.text, new RegExp(`interpreter: ${venv}/bin/python`));
  } finally {
    await h.close();
    ws.cleanup();
  }
});

test('a root change while idle moves the kernel, keeps its variables, and the next result says so', async () => {
  const ws = workspace();
  let roots = [{ uri: uri(ws.dirs[0]) }];
  const opts = { cwd: '/', env, roots: () => roots };
  const h = await connect(opts);
  try {
    assert.equal((await cwdOf(h)).cwd, ws.dirs[0]);
    await run(h, 'x = 41');
    roots = [{ uri: uri(ws.dirs[1]) }, { uri: uri(ws.dirs[0]) }];
    await h.client.sendRootsListChanged();
    await until(async () => (await status(h)).wd.path === ws.dirs[1], ms(10000), 'the kernel to move');
    const r = await run(h, 'import os, sys\nprint(os.getcwd(), sys.path[0], x + 1)');
    assert.match(r.text, new RegExp(`^\\[rat-py: the kernel now works in ${ws.dirs[1]}, the client's root \\(it worked in ${ws.dirs[0]}\\); variables are kept\\]\\n`));
    assert.match(r.text, new RegExp(`\\n${ws.dirs[1]} ${ws.dirs[1]} 42\\n`));
    const again = await run(h, 'print(1)');
    assert.doesNotMatch(again.text, /rat-py/); // said once
    assert.equal(opts.rootsAsked, 2);
  } finally {
    await h.close();
    ws.cleanup();
  }
});

test('a root change during a run waits for the run to end', async () => {
  const ws = workspace();
  let roots = [{ uri: uri(ws.dirs[0]) }];
  const h = await connect({ cwd: '/', env, roots: () => roots });
  try {
    assert.equal((await cwdOf(h)).cwd, ws.dirs[0]);
    const long = run(h, 'import os, time\nfor _ in range(30):\n    time.sleep(0.05)\n    assert os.getcwd() == ' + JSON.stringify(ws.dirs[0]) + '\nprint(os.getcwd())');
    await until(async () => (await status(h)).text.startsWith('python busy'), ms(10000), 'the run to start');
    roots = [{ uri: uri(ws.dirs[1]) }];
    await h.client.sendRootsListChanged();
    await until(async () => (await status(h)).wd.moving_to === ws.dirs[1], ms(10000), 'the move to wait');
    const st = await status(h);
    assert.equal(st.wd.path, ws.dirs[0]);
    assert.match(st.text, /moving to .* when the kernel is idle/);
    const r = await long;
    assert.equal(r.isError, false, r.text);
    assert.equal(r.text.split('\n')[0], ws.dirs[0]);
    const next = await run(h, 'import os; print(os.getcwd())');
    assert.match(next.text, /^\[rat-py: the kernel now works in /);
    assert.match(next.text, new RegExp(`\\n${ws.dirs[1]}\\n`));
  } finally {
    await h.close();
    ws.cleanup();
  }
});

test('without roots nothing changes; from /, the first result says where the kernel works and how to choose, once', async () => {
  const h = await connect({ cwd: '/', env });
  try {
    const r = await run(h, 'import os; print(os.getcwd())');
    assert.match(r.text, /^\[rat-py: the kernel works in \/, the directory rat-py was started in, because the client shares no workspace root; to choose where, start rat-py with --cwd DIR/);
    assert.match(r.text, /\n\/\n/);
    assert.doesNotMatch((await run(h, 'print(2)')).text, /rat-py/);
    const st = await status(h);
    assert.equal(st.wd.source, 'start_dir');
    assert.match(st.text, /working directory: \/ \(the directory rat-py was started in\)/);
  } finally {
    await h.close();
  }
  // --cwd wins: the roots are never asked for.
  const ws = workspace();
  const opts = { env, roots: () => [{ uri: uri(ws.dirs[1]) }], args: ['--cwd', ws.dirs[0]] };
  const h2 = await connect(opts);
  try {
    const r = await run(h2, 'import os; print(os.getcwd())');
    assert.equal(r.text.split('\n')[0], ws.dirs[0]);
    await h2.client.sendRootsListChanged();
    const st = await status(h2);
    assert.equal(st.wd.source, 'cwd_option');
    assert.match(st.text, new RegExp(`working directory: ${ws.dirs[0]} \\(--cwd\\)`));
    assert.equal(opts.rootsAsked, undefined);
  } finally {
    await h2.close();
    ws.cleanup();
  }
});

test('roots are untrusted: remote hosts, bad encodings, files, missing directories and a huge list are refused, and said', async () => {
  const ws = workspace();
  const file = path.join(ws.root, 'a-file');
  writeFileSync(file, '');
  const junk = Array.from({ length: 3000 }, (_, i) => ({ uri: `file://server${i}/share` }));
  const roots = [{ uri: 'file://server/share' }, { uri: 'file:///x%00y' }, { uri: uri(file) }, { uri: 'file:///nonexistent-rat-root' },
    { nope: 1 }, { uri: 'file:///tmp%2' }, ...junk, { uri: uri(ws.dirs[0]) }];
  const h = await connect({ cwd: '/', env, roots: () => roots });
  try {
    const r = await run(h, 'import os; print(os.getcwd())');
    assert.match(r.text, /^\[rat-py: the kernel works in \/,/); // nothing usable among the first 64
    const st = await status(h);
    assert.equal(st.wd.source, 'start_dir');
    const p = st.wd.roots_problem;
    assert.match(p, /^none of the client's 3007 roots is a directory on this machine: /);
    assert.match(p, /file:\/\/server\/share names the host 'server'/);
    assert.match(p, /%00/);
    assert.match(p, /a-file is not a directory/);
    assert.match(p, /nonexistent-rat-root is not a directory here \(No such file or directory\)/);
    assert.match(p, /root 5 is not an object with a string "uri"/);
    assert.match(p, /two hex digits/);
    assert.ok(p.length < 2600, p.length);
  } finally {
    await h.close();
    ws.cleanup();
  }
});

test('HTTP, started from /: the first session that offers roots decides; another session\'s roots never move the kernel', async () => {
  const ws = workspace();
  const srv = await startHttp([], env, { cwd: '/' });
  let rootsA = [{ uri: uri(ws.dirs[0]) }];
  const optsB = { roots: () => [{ uri: uri(ws.dirs[1]) }] };
  const a = await connectHttp(srv.url, { roots: () => rootsA });
  let b;
  try {
    assert.equal((await cwdOf(a)).cwd, ws.dirs[0]);
    b = await connectHttp(srv.url, optsB);
    assert.equal((await cwdOf(b)).cwd, ws.dirs[0]);
    await b.client.sendRootsListChanged();
    assert.equal(optsB.rootsAsked ?? 0, 0);
    assert.equal((await status(b)).wd.path, ws.dirs[0]);
    // The deciding session's change moves it, for everyone.
    rootsA = [{ uri: uri(ws.dirs[2]) }];
    await a.client.sendRootsListChanged();
    await until(async () => (await status(b)).wd.path === ws.dirs[2], ms(10000), 'the kernel to move');
    const r = await run(b, 'import os; print(os.getcwd())');
    assert.match(r.text, new RegExp(`\\n${ws.dirs[2]}\\n`));
  } finally {
    await b?.close();
    await a.close();
    await srv.stop();
    ws.cleanup();
  }
});

test('a client that declares roots and does not answer holds runs 2 s at most; its late answer moves the kernel at the next idle moment', async () => {
  const ws = workspace();
  const srv = rawServer([], env, { cwd: '/' });
  try {
    await srv.initialize('2025-11-25', { roots: {} });
    const ask = await srv.next();
    assert.equal(ask.method, 'roots/list');
    assert.equal(typeof ask.id, 'number');
    const t0 = Date.now();
    srv.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run', arguments: { code: 'import os; print(os.getcwd())' } } });
    const r = await srv.reply(1);
    const waited = Date.now() - t0;
    assert.ok(waited >= 1900, `the run waited ${waited} ms`);
    const text = r.result.content[0].text;
    assert.match(text, /^\[rat-py: the kernel works in \/,/);
    assert.match(text, /\n\/\n/);
    srv.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'ctl', arguments: { op: 'status' } } });
    const st = (await srv.reply(2)).result.structuredContent.workdir;
    assert.match(st.roots_problem, /did not answer roots\/list within 2000 ms/);
    // The answer, late: the kernel has run code, so it moves now (idle) and says so.
    srv.send({ jsonrpc: '2.0', id: ask.id, result: { roots: [{ uri: uri(ws.dirs[0]) }] } });
    srv.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'run', arguments: { code: 'print(os.getcwd())' } } });
    const moved = (await srv.reply(3)).result.content[0].text;
    assert.match(moved, new RegExp(`^\\[rat-py: the kernel now works in ${ws.dirs[0]}, the client's root \\(it worked in /\\); variables are kept\\]\\n${ws.dirs[0]}\\n`));
  } finally {
    await srv.close();
    ws.cleanup();
  }
});

test('3000 roots/list_changed to a client that never answers roots/list: one WARN line, not one each', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-roots-'));
  const srv = rawServer([], { RAT_LOG: 'info' }, { cwd: dir }); // no --cwd: roots may move the kernel
  try {
    await srv.initialize('2025-06-18', { roots: { listChanged: true } });
    for (let i = 0; i < 3000; i++) srv.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    srv.send({ jsonrpc: '2.0', id: 7, method: 'ping' });
    const r = await srv.reply(7);
    assert.deepEqual(r.result, {});
    // stderr is a pipe of its own: read to its end (rat-py leaves when its
    // stdin closes) before counting, not only as far as the ping's reply.
    const drained = new Promise((done) => srv.child.stderr.on('end', done));
    srv.child.stdin.end();
    await drained;
    const warns = srv.stderr().split('\n').filter((l) => /roots\/list requests are unanswered/.test(l));
    assert.equal(warns.length, 1, `${warns.length} WARN lines`);
  } finally {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
