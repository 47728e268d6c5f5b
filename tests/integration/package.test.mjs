// The library and the package: `cmake --install` into a scratch prefix, a
// tiny program built against it through pkg-config and driven over stdio;
// then `cpack -G DEB`, its Depends, `dpkg -i`, `rat-py doctor` from the
// installed package, `dpkg -r`. Skipped in the sanitizer build (an
// instrumented library cannot be linked by a plain program).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const BUILD = process.env.RAT_BUILD_DIR;
const SKIP = process.env.RAT_PY_SANITIZED ? 'sanitizer build' : !BUILD ? 'RAT_BUILD_DIR not set' : false;
const SRC = path.resolve(new URL('.', import.meta.url).pathname, '../..');

/** env without what points the tests at the build tree, plus extra. */
function cleanEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  for (const k of ['RAT_PY', 'RAT_LIBRARY', 'LD_LIBRARY_PATH', 'PYTHONPATH']) if (!(k in extra)) delete env[k];
  return env;
}

/**
 * The installed Python package, as Debian's python3 finds it: which librat
 * it loads, `python3 -m rat_py --version`, and the spec's three lines
 * answering a run over stdio (raw NDJSON).
 */
async function checkPythonPackage(env, cwd, wantLib) {
  const py = '/usr/bin/python3';
  const where = spawnSync(py, ['-c', 'import rat_py; print(rat_py.library_version(), rat_py._lib._name)'], { env, cwd, encoding: 'utf8' });
  assert.equal(where.status, 0, where.stderr);
  assert.match(where.stdout, /^\d+\.\d+\.\d+ /);
  assert.equal(path.resolve(where.stdout.trim().split(' ')[1]), wantLib);
  const ver = spawnSync(py, ['-m', 'rat_py', '--version'], { env, cwd, encoding: 'utf8' });
  assert.equal(ver.status, 0, ver.stderr);
  assert.match(ver.stdout, /^rat-py \d+\.\d+\.\d+\n$/);
  const { spawn } = await import('node:child_process');
  const code = 'from rat_py import create_mcp_server\n\nmcp = create_mcp_server()\nmcp.run()  # STDIO\n';
  const child = spawn(py, ['-c', code], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } }) + '\n');
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run', arguments: { code: 'print(6 * 7)' } } }) + '\n');
  const t0 = Date.now();
  while (!/"id":2/.test(out) && Date.now() - t0 < 30000) await new Promise((r) => setTimeout(r, 50));
  child.stdin.end();
  const code2 = await new Promise((r) => child.on('exit', r));
  const reply = out.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((m) => m.id === 2);
  assert.ok(reply, `no reply; stderr: ${err}`);
  assert.match(reply.result.content[0].text, /^42\n/);
  assert.equal(code2, 0, err);
}

test('a program built against the installed library (pkg-config rat) serves MCP', { skip: SKIP }, async () => {
  const prefix = mkdtempSync(path.join(tmpdir(), 'rat-prefix-'));
  try {
    execFileSync('cmake', ['--install', BUILD, '--prefix', prefix], { stdio: 'pipe' });
    const libdir = readdirSync(path.join(prefix, 'lib')).includes('pkgconfig') ? path.join(prefix, 'lib')
      : path.join(prefix, 'lib', readdirSync(path.join(prefix, 'lib'))[0]);
    const env = { ...process.env, PKG_CONFIG_PATH: path.join(libdir, 'pkgconfig') };
    const flags = execFileSync('pkg-config', ['--cflags', '--libs', 'rat'], { env, encoding: 'utf8' }).trim().split(/\s+/);
    assert.ok(flags.includes('-lrat'));
    const exe = path.join(prefix, 'example');
    execFileSync('cc', ['-std=c11', '-Wall', '-Werror', '-o', exe, path.join(SRC, 'tests/capi/example.c'), ...flags], { env, stdio: 'pipe' });
    const ldd = execFileSync('ldd', [exe], { env: { ...env, LD_LIBRARY_PATH: libdir }, encoding: 'utf8' });
    assert.match(ldd, /librat\.so\.0 => .*librat\.so\.0/, 'linked to the installed shared library');
    const work = mkdtempSync(path.join(tmpdir(), 'rat-example-'));
    const { spawn } = await import('node:child_process');
    const child = spawn(exe, [work], { env: { ...process.env, LD_LIBRARY_PATH: libdir }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } }) + '\n');
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run', arguments: { code: 'print(6 * 7)' } } }) + '\n');
    const t0 = Date.now();
    while (!/"id":2/.test(out) && Date.now() - t0 < 30000) await new Promise((r) => setTimeout(r, 50));
    child.stdin.end();
    await new Promise((r) => child.on('exit', r));
    const reply = out.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((m) => m.id === 2);
    assert.ok(reply, `no reply; stderr: ${err}`);
    assert.match(reply.result.content[0].text, /^42\n\n✓ \d+ms$/);
    assert.match(err, /example: librat \d+\.\d+\.\d+/);
    // The Python package, from the prefix, with no LD_LIBRARY_PATH: it finds
    // the prefix's librat and rat-py itself (rat_py/_install.py).
    const pydir = path.join(prefix, 'lib', readdirSync(path.join(prefix, 'lib')).find((d) => /^python3/.test(d)), 'dist-packages');
    await checkPythonPackage(cleanEnv({ PYTHONPATH: pydir }), work, path.join(libdir, 'librat.so.0'));
    rmSync(work, { recursive: true, force: true });
  } finally {
    rmSync(prefix, { recursive: true, force: true });
  }
});

test('cpack -G DEB: Depends name the runtime libraries and ipykernel; installed, doctor passes', { skip: SKIP || (process.getuid() !== 0 && 'needs root for dpkg -i') }, async () => {
  const out = mkdtempSync(path.join(tmpdir(), 'rat-deb-'));
  try {
    execFileSync('cpack', ['--config', path.join(BUILD, 'CPackConfig.cmake'), '-G', 'DEB', '-B', out], { stdio: 'pipe' });
    const deb = readdirSync(out).find((f) => f.endsWith('.deb'));
    assert.ok(deb, 'a .deb was built');
    const pkg = path.join(out, deb);
    const depends = execFileSync('dpkg-deb', ['-f', pkg, 'Depends'], { encoding: 'utf8' });
    for (const lib of ['libzmq5', 'libjson-c5', 'libsodium23', 'libyaml-0-2', 'libmicrohttpd12', 'python3-ipykernel'])
      assert.match(depends, new RegExp(`\\b${lib}\\b`), `Depends: ${depends}`);
    const files = execFileSync('dpkg-deb', ['-c', pkg], { encoding: 'utf8' });
    for (const f of ['./usr/bin/rat-py', './usr/include/rat/rat.h', 'librat.so', 'rat.pc', 'rat-py.1',
      './usr/lib/python3/dist-packages/rat_py/__init__.py', './usr/lib/python3/dist-packages/rat_py/_install.py'])
      assert.ok(files.includes(f), `${f} in the package`);
    execFileSync('dpkg', ['-i', pkg], { stdio: 'pipe' });
    try {
      const doc = spawnSync('/usr/bin/rat-py', ['doctor'], { encoding: 'utf8', timeout: 60000, cwd: out });
      assert.equal(doc.status, 0, doc.stdout + doc.stderr);
      assert.match(doc.stdout, /✓/);
      assert.doesNotMatch(doc.stdout, /✗/);
      // Debian's python3 finds the package and its library with nothing set.
      const lib = execFileSync('dpkg', ['-L', 'rat-py'], { encoding: 'utf8' }).split('\n').find((f) => /librat\.so\.0$/.test(f));
      await checkPythonPackage(cleanEnv(), out, lib);
    } finally {
      execFileSync('dpkg', ['-r', 'rat-py'], { stdio: 'pipe' });
    }
    assert.ok(!existsSync('/usr/bin/rat-py'), 'removed again');
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
