// `pip install rat-py` from the wheel (doc/packaging.md, "The Python
// wheel"): the build tools pinned in tests/wheel/requirements.txt are
// installed from PyPI into a venv under the build tree; the sdist is made
// from a copy of the tree (it carries the built page); the wheel is built
// from the sdist by scikit-build-core (pyproject.toml) without npm, in
// <build>/wheel/cmake; `auditwheel repair` bundles what it links and tags it
// manylinux; the wheel is installed into a fresh venv made by Debian's
// python3 without system site-packages (so neither python3-ipykernel nor
// /usr/local can help it), and there: rat-py doctor (also with the system's
// libmicrohttpd and libcurl hidden), a stdio session (run, look, ctl,
// input()), the family's names, --http with the page and the bundled
// libmicrohttpd, and the Python binding. Prints the sizes, the build and
// install times and spawn -> initialize of the installed rat-py against the
// build's. Nothing outside the build tree changes (HOME is a scratch one).
// About 2-3 minutes on a quiet machine, most of it the wheel's own Release
// build.
// Skipped in the sanitizer build and under RAT_PY_WRAPPER (the wheel is a
// Release build of its own: checked in the plain run).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect, run, ctl, call } from './lib.mjs';

const BUILD = process.env.RAT_BUILD_DIR;
const SKIP = process.env.RAT_PY_SANITIZED ? 'sanitizer build' : process.env.RAT_PY_WRAPPER ? 'RAT_PY_WRAPPER: checked in the plain run'
  : !BUILD ? 'RAT_BUILD_DIR not set' : false;
const SRC = path.resolve(new URL('.', import.meta.url).pathname, '../..');
const PY = '/usr/bin/python3';
const W = BUILD ? path.join(path.resolve(BUILD), 'wheel') : '';
const TOOLS = path.join(W, 'tools');
const VENV = path.join(W, 'venv');
const CACHE = path.join(W, 'pip-cache');
const HOUSE = path.join(W, 'house');
// The kernel package the fresh venv gets: the wheel asks for ipykernel>=6;
// the test pins the one it was written against (tests/wheel/requirements.txt).
const IPYKERNEL = readFileSync(path.join(SRC, 'tests/wheel/requirements.txt'), 'utf8').match(/^# test venv: (ipykernel==\S+)/m)[1];

let home;
let wheelFile;
const figures = {};

/** Runs a command, failing with its output; returns stdout. */
function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.error ?? ''}\n${(r.stdout ?? '').slice(-3000)}\n${(r.stderr ?? '').slice(-3000)}`);
  return r.stdout;
}

/** The environment of a user who has only the venv's bin/ and the system's. */
function userEnv(extra = {}) {
  const env = { ...process.env, HOME: home, PATH: `${VENV}/bin:/usr/bin:/bin`, XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_CONFIG_HOME: path.join(home, '.config'), XDG_DATA_HOME: path.join(home, '.local/share'), ...extra };
  for (const k of ['RAT_PY', 'RAT_LIBRARY', 'LD_LIBRARY_PATH', 'PYTHONPATH', 'VIRTUAL_ENV', 'RAT_PY_WRAPPER', 'JUPYTER_PATH'])
    if (!(k in extra)) delete env[k];
  return env;
}

/** ms from spawn to the initialize reply of `command --cwd dir`. */
async function spawnToInitialize(command, env) {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-wheel-init-'));
  const t0 = process.hrtime.bigint();
  const child = spawn(command, ['--cwd', dir], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  const got = new Promise((resolve) => child.stdout.on('data', (d) => {
    out += d;
    if (out.includes('\n')) resolve(Number(process.hrtime.bigint() - t0) / 1e6);
  }));
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) + '\n');
  const t = await got;
  assert.match(out, /"id":1,"result"/);
  const pid = child.pid;
  const exe = existsSync(`/proc/${pid}/exe`) ? realpathSync(`/proc/${pid}/exe`) : '';
  child.stdin.end();
  await new Promise((r) => child.on('exit', r));
  rmSync(dir, { recursive: true, force: true });
  return { t, exe };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

before(async () => {
  if (SKIP) return;
  home = mkdtempSync(path.join(tmpdir(), 'rat-wheel-home-'));
  mkdirSync(W, { recursive: true });
  const pipOpts = ['--cache-dir', CACHE, '--disable-pip-version-check', '-q'];
  // The build tools, at their pinned versions (reused when already there).
  if (!existsSync(path.join(TOOLS, 'bin/auditwheel'))) {
    rmSync(TOOLS, { recursive: true, force: true });
    sh(PY, ['-m', 'venv', TOOLS]);
    sh(path.join(TOOLS, 'bin/pip'), ['install', ...pipOpts, '-r', path.join(SRC, 'tests/wheel/requirements.txt')]);
  }
  const toolEnv = { ...process.env, PATH: `${TOOLS}/bin:${process.env.PATH}`, CMAKE_BUILD_PARALLEL_LEVEL: '2' };
  for (const k of ['VIRTUAL_ENV', 'PYTHONPATH']) delete toolEnv[k];
  // The sdist, made as a release would make it, from a copy of the tree
  // (what git tracks) in the build tree: scikit-build-core configures CMake
  // then, which builds the page into the copy's web/dist/ (npm's cache in
  // <build>/wheel/npm-cache).
  const copy = path.join(W, 'src');
  rmSync(copy, { recursive: true, force: true });
  for (const f of sh('git', ['-C', SRC, 'ls-files', '-z']).split('\0').filter(Boolean)) {
    if (!existsSync(path.join(SRC, f))) continue;
    mkdirSync(path.dirname(path.join(copy, f)), { recursive: true });
    cpSync(path.join(SRC, f), path.join(copy, f));
  }
  for (const d of ['sdist', 'sdist-cmake', 'cmake', 'raw']) rmSync(path.join(W, d), { recursive: true, force: true });
  let t0 = Date.now();
  sh(path.join(TOOLS, 'bin/python'), ['-c', 'import sys; from scikit_build_core.build import build_sdist; '
    + 'print(build_sdist(sys.argv[1], {"build-dir": sys.argv[2]}))', path.join(W, 'sdist'), path.join(W, 'sdist-cmake')],
  { env: { ...toolEnv, npm_config_cache: path.join(W, 'npm-cache') }, cwd: copy });
  const sdist = readdirSync(path.join(W, 'sdist')).find((f) => f.endsWith('.tar.gz'));
  assert.match(sdist, /^rat_py-\d+\.\d+\.\d+\.tar\.gz$/);
  figures.sdist_bytes = statSync(path.join(W, 'sdist', sdist)).size;
  sh('tar', ['xzf', path.join(W, 'sdist', sdist), '-C', path.join(W, 'sdist')]);
  const unpacked = path.join(W, 'sdist', sdist.replace(/\.tar\.gz$/, ''));
  assert.ok(existsSync(path.join(unpacked, 'web/dist/page_files.c')), 'the sdist carries the built page');
  // The wheel, from the sdist, in a fresh build directory: the sdist's page
  // is used, and npm is not run (no <build>/wheel/cmake/web).
  sh(path.join(TOOLS, 'bin/pip'), ['wheel', ...pipOpts, '--no-build-isolation', '--no-deps', '-w', path.join(W, 'raw'),
    '--config-settings', `build-dir=${path.join(W, 'cmake')}`, unpacked], { env: toolEnv });
  figures.build_s = (Date.now() - t0) / 1000;
  assert.ok(!existsSync(path.join(W, 'cmake/web')), 'npm ran in the build from the sdist');
  const raw = readdirSync(path.join(W, 'raw')).find((f) => f.endsWith('.whl'));
  assert.match(raw, /^rat_py-\d+\.\d+\.\d+-py3-none-linux_x86_64\.whl$/);
  sh(path.join(TOOLS, 'bin/auditwheel'), ['repair', '-w', HOUSE, path.join(W, 'raw', raw)], { env: toolEnv });
  wheelFile = path.join(HOUSE, readdirSync(HOUSE).find((f) => f.endsWith('.whl')));
  figures.wheel_bytes = statSync(wheelFile).size;
  // A fresh venv without system site-packages, and the wheel in it.
  rmSync(VENV, { recursive: true, force: true });
  sh(PY, ['-m', 'venv', VENV]);
  t0 = Date.now();
  sh(path.join(VENV, 'bin/pip'), ['install', ...pipOpts, wheelFile, IPYKERNEL], { env: userEnv() });
  figures.install_s = (Date.now() - t0) / 1000;
});

after(() => {
  if (home) rmSync(home, { recursive: true, force: true });
  if (Object.keys(figures).length) console.log(`# wheel figures: ${JSON.stringify(figures)}`);
});

test('the repaired wheel is manylinux, a few MB, and carries the program, the library, the page and the man pages', { skip: SKIP }, () => {
  assert.match(path.basename(wheelFile), /^rat_py-\d+\.\d+\.\d+-py3-none-manylinux_2_\d+_x86_64\.whl$/);
  assert.ok(figures.wheel_bytes < 12 << 20, `wheel is ${figures.wheel_bytes} bytes`);
  const venvCfg = readFileSync(path.join(VENV, 'pyvenv.cfg'), 'utf8');
  assert.match(venvCfg, /include-system-site-packages = false/);
  const site = sh(path.join(VENV, 'bin/python'), ['-c', 'import sysconfig; print(sysconfig.get_path("platlib"))'], { env: userEnv() }).trim();
  for (const f of ['rat_py/bin/rat-py', 'rat_py/librat.so.0', 'rat_py.libs/libmicrohttpd.so.12', 'rat_py.libs/libwslay.so.1'])
    assert.ok(existsSync(path.join(site, f)), f);
  for (const f of ['share/man/man1/rat-py.1', 'share/man/man1/rat.1', 'share/man/man1/rat-r.1', 'share/rat-py/kernelspec/kernel.json'])
    assert.ok(existsSync(path.join(VENV, f)), f);
  // Every library the program links resolves, and from the wheel, not the system's.
  const ldd = sh('ldd', [path.join(site, 'rat_py/bin/rat-py')]);
  assert.doesNotMatch(ldd, /not found/);
  assert.match(ldd, /libzmq-[0-9a-f]+\.so[^\n]*=> [^\n]*rat_py\.libs/);
  // bin/rat-py is no Python script: a launcher that needs only libc.
  const launcher = readFileSync(path.join(VENV, 'bin/rat-py'));
  assert.equal(launcher.subarray(0, 4).toString('latin1'), '\x7fELF');
  assert.doesNotMatch(sh('ldd', [path.join(VENV, 'bin/rat-py')]), /rat_py\.libs|libzmq/);
});

test('rat-py doctor in the fresh venv: the kernel runs the venv\'s own python and says why', { skip: SKIP }, () => {
  const r = spawnSync(path.join(VENV, 'bin/rat-py'), ['doctor'], { env: userEnv(), cwd: home, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const out = r.stdout + r.stderr;
  assert.match(out, new RegExp(`interpreter: ${VENV}/bin/python3? \\(venv ${VENV} \\(the environment rat-py is installed in\\)\\)`));
  assert.match(out, new RegExp(`runs: ${VENV}/bin/python3?, ipykernel \\d`));
  assert.match(out, /HTTP transport \(--http\): libmicrohttpd/);
  assert.match(out, /gateway kernels \(--gateway\), `rat` runtimes: libcurl and libwslay load/);
});

test('with the system\'s libmicrohttpd and libcurl hidden: --http runs on the bundled copy; doctor says what libcurl\'s absence costs', { skip: SKIP }, (t) => {
  // Each hidden by /dev/null bound over the file its soname resolves to, in
  // a mount namespace of the child's own: the system does not see it.
  const ldconfig = sh('/sbin/ldconfig', ['-p']);
  const real = (soname) => realpathSync(new RegExp(`^\\s*${soname.replace(/\./g, '\\.')} \\(libc6,x86-64\\) => (\\S+)$`, 'm').exec(ldconfig)[1]);
  const hide = [real('libmicrohttpd.so.12'), real('libcurl.so.4')];
  const ns = process.getuid() === 0 ? ['unshare', '--mount'] : ['unshare', '--user', '--map-root-user', '--mount'];
  const mounts = hide.map((f) => `mount --bind /dev/null '${f}'`).join(' && ');
  const probe = spawnSync(ns[0], [...ns.slice(1), 'sh', '-c', mounts], { encoding: 'utf8' });
  if (probe.status !== 0) {
    t.skip(`no private mount namespace here (${probe.stderr.trim()})`);
    return;
  }
  const doc = spawnSync(ns[0], [...ns.slice(1), 'sh', '-c', `${mounts} && exec "$@"`, 'sh', path.join(VENV, 'bin/rat-py'), 'doctor'],
    { env: userEnv(), cwd: home, encoding: 'utf8', timeout: 120000 });
  assert.equal(doc.status, 0, doc.stdout + doc.stderr);
  assert.match(doc.stdout, /^✓ HTTP transport \(--http\): libmicrohttpd\.so\.\d+ /m);
  assert.match(doc.stdout, /^– gateway kernels \(--gateway\), `rat` runtimes: unavailable: .*libcurl.*install it/m);
});

test('a stdio session through bin/rat-py: run, look, ctl status, input()', { skip: SKIP }, async () => {
  const h = await connect({ command: path.join(VENV, 'bin/rat-py'), env: userEnv() });
  try {
    // The process the host spawned is rat-py itself: the launcher exec'd in place.
    assert.equal(realpathSync(`/proc/${h.pid()}/exe`).endsWith('/rat_py/bin/rat-py'), true);
    const r = await run(h, 'import sys, ipykernel; x = 6 * 7; print(sys.prefix, x)');
    assert.equal(r.isError, false, r.text);
    assert.match(r.text, new RegExp(`^${VENV} 42\\n`));
    const l = await call(h, 'look', { at: 'x' });
    assert.equal(l.isError, false, l.text);
    assert.match(l.text, /42/);
    const s = await ctl(h, 'status');
    assert.match(s.text, new RegExp(`interpreter: ${VENV}/bin/python3?\\nenvironment: venv ${VENV} \\(the environment rat-py is installed in\\)`));
    const i1 = await run(h, 'name = input("Name: ")');
    assert.match(i1.text, /^INPUT REQUESTED: "Name: "/);
    const i2 = await call(h, 'run', { code: '', input: 'Alice' });
    assert.equal(i2.isError, false, i2.text);
    assert.match((await run(h, 'name')).text, /^'Alice'\n/);
  } finally {
    await h.close();
  }
});

test('the family\'s names reach rat-py with their own name', { skip: SKIP }, () => {
  const r = spawnSync(path.join(VENV, 'bin/rat-r'), ['--python', 'x'], { env: userEnv(), encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^rat-r: --python, --venv and --kernelspec-dir choose the Python kernel; rat-r runs R/);
  const m = spawnSync(path.join(VENV, 'bin/rat'), ['--help'], { env: userEnv(), encoding: 'utf8' });
  assert.match(m.stdout + m.stderr, /Usage: rat COMMAND/);
});

test('rat-py install registers the venv\'s bin/rat-py, the name the user ran, not the program inside the package', { skip: SKIP }, () => {
  const project = mkdtempSync(path.join(home, 'project-'));
  const r = spawnSync('rat-py', ['install'], { env: userEnv(), cwd: project, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const cfg = readFileSync(path.join(home, '.config/mcptocli/config.yaml'), 'utf8');
  assert.match(cfg, new RegExp(`command: ['"]?${VENV}/bin/rat-py --cwd `), cfg);
  assert.doesNotMatch(cfg, /rat_py\/bin/);
});

test('--http: the page, and the bundled libmicrohttpd', { skip: SKIP }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-wheel-http-'));
  const proc = spawn(path.join(VENV, 'bin/rat-py'), ['--http', '--port', '0', '--cwd', dir], { env: userEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  try {
    const url = await new Promise((resolve, reject) => {
      proc.stderr.on('data', (d) => { err += d; const m = /serving MCP at (http:\/\/\S+)\/mcp/.exec(err); if (m) resolve(m[1]); });
      proc.on('exit', (c) => reject(new Error(`exited ${c}: ${err}`)));
    });
    const maps = readFileSync(`/proc/${proc.pid}/maps`, 'utf8');
    const mhd = maps.split('\n').find((l) => l.includes('libmicrohttpd'));
    assert.ok(mhd && mhd.includes(`${VENV}/lib/`), `libmicrohttpd mapped from ${mhd}`);
    const page = await fetch(`${url}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);
    const app = await fetch(`${url}/static/app.js`);
    assert.equal(app.status, 200, 'the page is built into the wheel');
    assert.ok((await app.text()).length > 10000);
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.on('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the Python binding: from rat_py import create_mcp_server, serving a run over stdio', { skip: SKIP }, async () => {
  const env = userEnv();
  const py = path.join(VENV, 'bin/python');
  const lib = sh(py, ['-c', 'import rat_py; from rat_py import create_mcp_server; print(rat_py.library_version(), rat_py._lib._name)'], { env, cwd: home }).trim().split(' ')[1];
  assert.ok(realpathSync(lib).startsWith(`${VENV}/lib/`), lib);
  assert.match(sh(py, ['-m', 'rat_py', '--version'], { env, cwd: home }), /^rat-py \d/);
  const child = spawn(py, ['-c', 'from rat_py import create_mcp_server\ncreate_mcp_server().run()'], { env, cwd: home, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) + '\n');
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run', arguments: { code: 'import sys; print(sys.prefix)' } } }) + '\n');
  const t0 = Date.now();
  while (!/"id":2/.test(out) && Date.now() - t0 < 120000) await new Promise((r) => setTimeout(r, 50));
  child.stdin.end();
  await new Promise((r) => child.on('exit', r));
  const reply = out.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((m) => m.id === 2);
  assert.ok(reply, `no reply; stderr: ${err}`);
  assert.match(reply.result.content[0].text, new RegExp(`^${VENV}\\n`));
});

test('spawn -> initialize: the installed rat-py against the build\'s (figures)', { skip: SKIP || !process.env.RAT_PY }, async () => {
  const installed = [];
  const built = [];
  for (let i = 0; i < 7; i++) {
    const a = await spawnToInitialize(path.join(VENV, 'bin/rat-py'), userEnv());
    assert.ok(a.exe === '' || a.exe.endsWith('/rat_py/bin/rat-py'), a.exe);
    installed.push(a.t);
    built.push((await spawnToInitialize(process.env.RAT_PY, userEnv())).t);
  }
  figures.init_installed_ms = Number(median(installed).toFixed(2));
  figures.init_build_ms = Number(median(built).toFixed(2));
});
