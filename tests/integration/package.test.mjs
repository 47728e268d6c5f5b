// The library and the Debian packages, without touching the system:
// `cmake --install` into a scratch prefix and a tiny program built against
// it through pkg-config; then the README's `dpkg-buildpackage -us -uc` on a
// copy of the source tree in the build directory, the packages read
// (dpkg-deb -f/-c, lintian) and unpacked (dpkg-deb -x) into a root where
// rat-py, its doctor, the Python binding and a program built with librat-dev
// run with the paths set for that root; `apt-get install --simulate` of the
// packages; `--http` with libmicrohttpd hidden in a private mount namespace.
// Nothing is installed: no dpkg -i, no apt install (doc/packaging.md#tests).
// Skipped in the sanitizer build (an instrumented library cannot be linked
// by a plain program) and under RAT_PY_WRAPPER (valgrind: nothing here runs
// the build's rat-py; the packages are built and checked in the plain run).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';

const BUILD = process.env.RAT_BUILD_DIR;
const SKIP = process.env.RAT_PY_SANITIZED ? 'sanitizer build' : process.env.RAT_PY_WRAPPER ? 'RAT_PY_WRAPPER: checked in the plain run'
  : !BUILD ? 'RAT_BUILD_DIR not set' : false;
const SRC = path.resolve(new URL('.', import.meta.url).pathname, '../..');
const PY = '/usr/bin/python3';

/** env without what points the tests at the build tree, plus extra. */
function cleanEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  for (const k of ['RAT_PY', 'RAT_LIBRARY', 'LD_LIBRARY_PATH', 'PYTHONPATH']) if (!(k in extra)) delete env[k];
  return env;
}

/** Writes NDJSON requests to a child's stdin; resolves the reply with id 2. */
async function serveOneRun(command, args, { env, cwd }) {
  const child = spawn(command, args, { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } }) + '\n');
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run', arguments: { code: 'print(6 * 7)' } } }) + '\n');
  const t0 = Date.now();
  while (!/"id":2/.test(out) && Date.now() - t0 < 30000) await new Promise((r) => setTimeout(r, 50));
  child.stdin.end();
  const status = await new Promise((r) => child.on('exit', r));
  const reply = out.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((m) => m.id === 2);
  assert.ok(reply, `no reply; stderr: ${err}`);
  assert.match(reply.result.content[0].text, /^42\n/);
  return { status, err };
}

/**
 * An installed Python package, as Debian's python3 finds it with env: which
 * librat it loads (must be wantLib), `python3 -m rat_py --version`, and the
 * spec's three lines answering a run over stdio.
 */
async function checkPythonPackage(env, cwd, wantLib) {
  const where = spawnSync(PY, ['-c', 'import rat_py; print(rat_py.library_version(), rat_py._lib._name)'], { env, cwd, encoding: 'utf8' });
  assert.equal(where.status, 0, where.stderr);
  assert.match(where.stdout, /^\d+\.\d+\.\d+ /);
  assert.equal(path.resolve(where.stdout.trim().split(' ')[1]), wantLib);
  const ver = spawnSync(PY, ['-m', 'rat_py', '--version'], { env, cwd, encoding: 'utf8' });
  assert.equal(ver.status, 0, ver.stderr);
  assert.match(ver.stdout, /^rat-py \d+\.\d+\.\d+\n$/);
  const code = 'from rat_py import create_mcp_server\n\nmcp = create_mcp_server()\nmcp.run()  # STDIO\n';
  const { status, err } = await serveOneRun(PY, ['-c', code], { env, cwd });
  assert.equal(status, 0, err);
}

/**
 * tests/capi/example.c compiled with `pkg-config --cflags --libs rat` (env
 * says where rat.pc is) into dir, run with LD_LIBRARY_PATH=libdir: it must
 * link libdir's librat.so.0 and serve a run.
 */
async function checkExample(pcEnv, libdir, dir) {
  const flags = execFileSync('pkg-config', ['--cflags', '--libs', 'rat'], { env: pcEnv, encoding: 'utf8' }).trim().split(/\s+/);
  assert.ok(flags.includes('-lrat'), flags.join(' '));
  const exe = path.join(dir, 'example');
  execFileSync('cc', ['-std=c11', '-Wall', '-Werror', '-o', exe, path.join(SRC, 'tests/capi/example.c'), ...flags], { env: pcEnv, stdio: 'pipe' });
  const env = { ...process.env, LD_LIBRARY_PATH: libdir };
  const ldd = execFileSync('ldd', [exe], { env, encoding: 'utf8' });
  assert.match(ldd, new RegExp(`librat\\.so\\.0 => ${libdir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/librat\\.so\\.0 `), ldd);
  const work = mkdtempSync(path.join(tmpdir(), 'rat-example-'));
  try {
    const { err } = await serveOneRun(exe, [work], { env, cwd: work });
    assert.match(err, /example: librat \d+\.\d+\.\d+/);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

test('a program built against the installed library (pkg-config rat) serves MCP', { skip: SKIP }, async () => {
  const prefix = mkdtempSync(path.join(tmpdir(), 'rat-prefix-'));
  try {
    execFileSync('cmake', ['--install', BUILD, '--prefix', prefix], { stdio: 'pipe' });
    // install_manifest.txt lists every file and link installed (the rat-*
    // links too), so that it can undo an install.
    const installed = execFileSync('find', [prefix, '!', '-type', 'd'], { encoding: 'utf8' }).split('\n').filter(Boolean).sort();
    const manifest = readFileSync(path.join(BUILD, 'install_manifest.txt'), 'utf8').split('\n').filter(Boolean).sort();
    assert.deepEqual(manifest, installed);
    for (const f of ['bin/rat-r', 'bin/rat', 'share/man/man1/rat-r.1']) assert.ok(installed.includes(path.join(prefix, f)), f);
    // rat-py's kernelspec, as built in: the copy to change for --kernelspec-dir.
    assert.equal(readFileSync(path.join(prefix, 'share/rat-py/kernelspec/kernel.json'), 'utf8'),
      readFileSync(path.join(SRC, 'kernelspec/kernel.json'), 'utf8'));
    const libdir = path.join(prefix, 'lib');
    assert.ok(existsSync(path.join(libdir, 'pkgconfig/rat.pc')), 'rat.pc under the prefix');
    assert.match(execFileSync('pkg-config', ['--print-requires-private', 'rat'],
      { env: { ...process.env, PKG_CONFIG_PATH: path.join(libdir, 'pkgconfig') }, encoding: 'utf8' }), /^libczmq$/m);
    await checkExample({ ...process.env, PKG_CONFIG_PATH: path.join(libdir, 'pkgconfig') }, libdir, prefix);
    // The Python package, from the prefix, with no LD_LIBRARY_PATH: it finds
    // the prefix's librat and rat-py itself (rat_py/_install.py).
    const pydir = path.join(libdir, readdirSync(libdir).find((d) => /^python3/.test(d)), 'dist-packages');
    const work = mkdtempSync(path.join(tmpdir(), 'rat-example-'));
    try {
      await checkPythonPackage(cleanEnv({ PYTHONPATH: pydir, PYTHONDONTWRITEBYTECODE: '1' }), work, path.join(libdir, 'librat.so.0'));
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  } finally {
    rmSync(prefix, { recursive: true, force: true });
  }
});

/**
 * Copies the source tree as git sees it (tracked files and new ones not
 * ignored; build trees and node_modules are ignored) into dir; without git,
 * everything but build*, node_modules and .git.
 */
function copySource(dir) {
  const git = spawnSync('git', ['-C', SRC, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' });
  if (git.status === 0) {
    for (const f of git.stdout.split('\0').filter(Boolean)) {
      const from = path.join(SRC, f);
      let st;
      try { st = statSync(from); } catch { continue; } // deleted, not yet committed
      if (!st.isFile()) continue;
      mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      copyFileSync(from, path.join(dir, f));
      if (st.mode & 0o111) execFileSync('chmod', ['+x', path.join(dir, f)]);
    }
    return;
  }
  execFileSync('cp', ['-a', SRC + '/.', dir]);
  for (const d of readdirSync(dir)) if (/^build|^\.git$/.test(d)) rmSync(path.join(dir, d), { recursive: true, force: true });
  execFileSync('find', [dir, '-name', 'node_modules', '-prune', '-exec', 'rm', '-rf', '{}', '+']);
}

const fields = (deb, ...names) => Object.fromEntries(names.map((n) => [n, execFileSync('dpkg-deb', ['-f', deb, n], { encoding: 'utf8' }).trim()]));
const contents = (deb) => execFileSync('dpkg-deb', ['-c', deb], { encoding: 'utf8' }).split('\n').filter(Boolean)
  .map((l) => l.split(/\s+/).slice(5).join(' ').replace(/^\.\//, '/'));

test('dpkg-buildpackage -us -uc: four packages, lintian-clean, that work unpacked, without installing anything', { skip: SKIP }, async (t) => {
  const version = /^rat-py (\S+)\n$/.exec(execFileSync(path.join(BUILD, 'rat-py'), ['--version'], { encoding: 'utf8' }))[1];
  const changelog = /^rat-py \(([^)]+)\)/.exec(readFileSync(path.join(SRC, 'debian/changelog'), 'utf8'))[1];
  assert.equal(changelog, version, 'debian/changelog names the version CMakeLists.txt builds');
  const arch = execFileSync('dpkg-architecture', ['-qDEB_HOST_ARCH'], { encoding: 'utf8' }).trim();
  const triplet = execFileSync('dpkg-architecture', ['-qDEB_HOST_MULTIARCH'], { encoding: 'utf8' }).trim();

  // Built in the build tree, from a copy: dpkg-buildpackage writes into
  // the source tree (debian/) and its parent (the packages).
  const out = path.join(BUILD, 'package');
  rmSync(out, { recursive: true, force: true });
  const src = path.join(out, `rat-py-${version}`);
  mkdirSync(src, { recursive: true });
  copySource(src);
  const env = {
    ...cleanEnv(), DEB_BUILD_OPTIONS: `parallel=${cpus().length}`,
    // The page's npm packages, fetched once per build tree.
    npm_config_cache: path.join(BUILD, 'package-npm-cache'),
  };
  const build = spawnSync('dpkg-buildpackage', ['-us', '-uc'], { cwd: src, env, encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(build.status, 0, `dpkg-buildpackage failed (scripts/deps.sh installs its tools):\n${(build.stdout + build.stderr).slice(-6000)}`);
  const deb = (name, a = arch) => {
    const f = path.join(out, `${name}_${version}_${a}.deb`);
    assert.ok(existsSync(f), `${f} was built; there are ${readdirSync(out).join(' ')}`);
    return f;
  };
  const debs = { 'rat-py': deb('rat-py'), librat0: deb('librat0'), 'librat-dev': deb('librat-dev'), 'python3-rat-py': deb('python3-rat-py', 'all') };
  const dlopen = readFileSync(path.join(src, 'debian/build/dlopen-packages'), 'utf8').trim().split(/,\s*/);
  const dlopenCli = readFileSync(path.join(src, 'debian/build/dlopen-packages-cli'), 'utf8').trim().split(/,\s*/);
  assert.ok(dlopenCli.some((p) => /^libedit/.test(p)), dlopenCli.join());
  const devPkgs = readFileSync(path.join(src, 'debian/build/dev-packages'), 'utf8').trim().split(/,\s*/);
  assert.ok(dlopen.some((p) => /^libmicrohttpd/.test(p)), dlopen.join());

  await t.test('what each package holds and depends on', () => {
    const word = (list, p) => new RegExp(`(^|, )${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}( |,|$)`).test(list);
    let f = fields(debs['rat-py'], 'Depends', 'Recommends', 'Suggests');
    for (const p of ['python3-ipykernel', 'libzmq5', 'libczmq4', 'libjson-c5', 'libsodium23', 'libyaml-0-2', 'libc6'])
      assert.ok(word(f.Depends, p), `rat-py Depends ${p}: ${f.Depends}`);
    for (const p of [...dlopen, ...dlopenCli]) {
      assert.ok(word(f.Recommends, p), `rat-py Recommends ${p} (loaded with dlopen): ${f.Recommends}`);
      assert.ok(!word(f.Depends, p), `rat-py does not Depend on ${p}: ${f.Depends}`);
    }
    assert.ok(word(f.Suggests, 'r-cran-irkernel'));
    assert.deepEqual(contents(debs['rat-py']).filter((p) => !p.endsWith('/')).sort(), [
      '/usr/bin/rat -> rat-py', '/usr/bin/rat-js -> rat-py', '/usr/bin/rat-ju -> rat-py', '/usr/bin/rat-py', '/usr/bin/rat-r -> rat-py',
      '/usr/bin/rat-sh -> rat-py',
      '/usr/share/doc/rat-py/changelog.gz', '/usr/share/doc/rat-py/copyright',
      '/usr/share/man/man1/rat-js.1.gz -> rat-py.1.gz', '/usr/share/man/man1/rat-ju.1.gz -> rat-py.1.gz', '/usr/share/man/man1/rat-py.1.gz',
      '/usr/share/man/man1/rat-r.1.gz -> rat-py.1.gz', '/usr/share/man/man1/rat-sh.1.gz -> rat-py.1.gz',
      '/usr/share/man/man1/rat.1.gz', '/usr/share/rat-py/kernelspec/kernel.json']);

    f = fields(debs.librat0, 'Depends', 'Recommends', 'Multi-Arch', 'Section');
    assert.equal(f['Multi-Arch'], 'same');
    assert.equal(f.Section, 'libs');
    for (const p of dlopen) assert.ok(word(f.Recommends, p), `librat0 Recommends ${p}: ${f.Recommends}`);
    for (const p of dlopenCli) assert.ok(!word(f.Recommends, p), `librat0 does not load ${p}: ${f.Recommends}`);
    assert.deepEqual(contents(debs.librat0).filter((p) => /\/lib\//.test(p) && !p.endsWith('/')).sort(), [
      `/usr/lib/${triplet}/librat.so.0 -> librat.so.${version}`, `/usr/lib/${triplet}/librat.so.${version}`]);
    const control = execFileSync('dpkg-deb', ['-I', debs.librat0], { encoding: 'utf8' });
    assert.match(control, /\bshlibs\b/);
    assert.match(control, /\bsymbols\b/);
    const symbols = execFileSync('dpkg-deb', ['--info', debs.librat0, 'symbols'], { encoding: 'utf8' });
    assert.match(symbols, /^librat\.so\.0 librat0 #MINVER#$/m);
    assert.match(symbols, /^ rat_server_run_stdio@Base /m);

    f = fields(debs['librat-dev'], 'Depends', 'Section');
    assert.equal(f.Section, 'libdevel');
    assert.ok(word(f.Depends, `librat0 (= ${version})`), f.Depends);
    for (const p of devPkgs) assert.ok(word(f.Depends, p), `librat-dev Depends ${p} (rat.pc requires it): ${f.Depends}`);
    assert.deepEqual(contents(debs['librat-dev']).filter((p) => /^\/usr\/(include|lib)\/.*[^/]$/.test(p)).sort(), [
      '/usr/include/rat/rat.h', `/usr/lib/${triplet}/librat.a`, `/usr/lib/${triplet}/librat.so -> librat.so.0`,
      `/usr/lib/${triplet}/pkgconfig/rat.pc`]);

    f = fields(debs['python3-rat-py'], 'Depends', 'Recommends', 'Architecture', 'Section');
    assert.equal(f.Architecture, 'all');
    assert.equal(f.Section, 'python');
    for (const p of ['librat0', 'python3-ipykernel', 'python3:any']) assert.ok(word(f.Depends, p) || f.Depends.includes(`${p} (`), `python3-rat-py Depends ${p}: ${f.Depends}`);
    assert.ok(word(f.Recommends, 'rat-py'));
    assert.deepEqual(contents(debs['python3-rat-py']).filter((p) => p.includes('dist-packages') && !p.endsWith('/')).sort(), [
      '/usr/lib/python3/dist-packages/rat_py/__init__.py', '/usr/lib/python3/dist-packages/rat_py/__main__.py',
      '/usr/lib/python3/dist-packages/rat_py/_install.py']);
  });

  await t.test('lintian: no errors, no warnings', () => {
    const changes = path.join(out, `rat-py_${version}_${arch}.changes`);
    const l = spawnSync('lintian', ['--fail-on', 'error,warning', '--display-level', '>=warning', changes], { encoding: 'utf8' });
    assert.equal(l.status, 0, `lintian:\n${l.stdout}${l.stderr}`);
    assert.doesNotMatch(l.stdout, /^[EW]: /m, l.stdout);
  });

  // The four packages unpacked side by side: a root of their own.
  const root = path.join(out, 'root');
  for (const d of Object.values(debs)) execFileSync('dpkg-deb', ['-x', d, root]);
  const rootLib = path.join(root, 'usr/lib', triplet);
  const rootEnv = cleanEnv({ PATH: `${path.join(root, 'usr/bin')}:${process.env.PATH}` });

  await t.test('the unpacked rat-py: version, doctor passes, the rat family', () => {
    const rat = path.join(root, 'usr/bin/rat-py');
    assert.equal(execFileSync(rat, ['--version'], { env: rootEnv, encoding: 'utf8' }), `rat-py ${version}\n`);
    const work = mkdtempSync(path.join(tmpdir(), 'rat-doctor-'));
    try {
      const doc = spawnSync(rat, ['doctor'], { env: rootEnv, cwd: work, encoding: 'utf8', timeout: 60000 });
      assert.equal(doc.status, 0, doc.stdout + doc.stderr);
      assert.match(doc.stdout, /^✓ kernelspec: python3 /m);
      assert.match(doc.stdout, /^✓ run round trip: /m);
      assert.match(doc.stdout, /^✓ HTTP transport \(--http\): libmicrohttpd\.so\.\d+ /m);
      assert.doesNotMatch(doc.stdout, /✗/);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    assert.equal(readlinkSync(path.join(root, 'usr/bin/rat-r')), 'rat-py');
    const r = spawnSync(path.join(root, 'usr/bin/rat-r'), ['--help'], { env: rootEnv, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /rat-r/);
  });

  await t.test('the unpacked python3-rat-py loads the unpacked librat0, whatever is under /usr/local', async () => {
    const work = mkdtempSync(path.join(tmpdir(), 'rat-py-'));
    try {
      await checkPythonPackage(cleanEnv({ PYTHONPATH: path.join(root, 'usr/lib/python3/dist-packages'), PYTHONDONTWRITEBYTECODE: '1' }),
        work, path.join(rootLib, 'librat.so.0'));
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  await t.test('a program built with the unpacked librat-dev (pkg-config, PKG_CONFIG_SYSROOT_DIR) serves MCP', async () => {
    const pc = `/usr/lib/${triplet}/pkgconfig`;
    assert.match(readFileSync(path.join(root, pc, 'rat.pc'), 'utf8'), /^prefix=\/usr$/m);
    const pcEnv = { ...process.env, PKG_CONFIG_SYSROOT_DIR: root, PKG_CONFIG_PATH: path.join(root, pc) };
    const dir = mkdtempSync(path.join(tmpdir(), 'rat-dev-'));
    try {
      // pkg-config prefixes the sysroot to -I/-L; the system's own .pc files
      // (Requires.private) are read where they are.
      const cflags = execFileSync('pkg-config', ['--cflags', 'rat'], { env: pcEnv, encoding: 'utf8' });
      assert.match(cflags, new RegExp(`-I${root}/usr/include`));
      await checkExample(pcEnv, rootLib, dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  await t.test('apt-get install --simulate: the packages install on this system as they are', () => {
    const s = spawnSync('apt-get', ['install', '--simulate', '--no-install-recommends', ...Object.values(debs)], { env: { ...process.env, LC_ALL: 'C' }, encoding: 'utf8' });
    assert.equal(s.status, 0, s.stdout + s.stderr);
    for (const p of Object.keys(debs)) assert.match(s.stdout, new RegExp(`^(Inst|Conf) ${p} `, 'm'), s.stdout);
  });

  await t.test('--http without libmicrohttpd says what to install; doctor still passes', (tt) => {
    // libmicrohttpd hidden by /dev/null bound over it, in a mount namespace
    // of this process's own: the system does not see it.
    // The file rat-py's dlopen() of the soname ends at: the one CMake built
    // against (libmicrohttpd-dev's link, resolved).
    const real = realpathSync(path.join('/usr/lib', triplet, 'libmicrohttpd.so'));
    const ns = process.getuid() === 0 ? ['unshare', '--mount'] : ['unshare', '--user', '--map-root-user', '--mount'];
    const probe = spawnSync(ns[0], [...ns.slice(1), 'sh', '-c', `mount --bind /dev/null '${real}'`], { encoding: 'utf8' });
    if (probe.status !== 0) {
      tt.skip(`no private mount namespace here (${probe.stderr.trim()})`);
      return;
    }
    const rat = path.join(root, 'usr/bin/rat-py');
    const work = mkdtempSync(path.join(tmpdir(), 'rat-nomhd-'));
    try {
      const inNs = (args) => spawnSync(ns[0], [...ns.slice(1), 'sh', '-c', `mount --bind /dev/null '${real}' && exec "$@"`, 'sh', rat, ...args],
        { env: rootEnv, cwd: work, encoding: 'utf8', timeout: 60000 });
      const http = inNs(['--http', '--port', '0']);
      assert.ok(http.status > 0, `exit status ${http.status}: ${http.stdout}${http.stderr}`);
      assert.match(http.stderr, new RegExp(`the HTTP transport needs libmicrohttpd, which cannot be loaded \\(.*\\); install it \\(Debian/Ubuntu: apt install ${dlopen[0]}\\)`));
      const doc = inNs(['doctor']);
      assert.equal(doc.status, 0, doc.stdout + doc.stderr);
      assert.match(doc.stdout, new RegExp(`^– HTTP transport \\(--http\\): unavailable: .*apt install ${dlopen[0]}\\)$`, 'm'));
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
