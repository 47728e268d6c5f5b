// The command line around the server: doctor, --help and the man page,
// kernelspec env/argv templating, rat-py kernels.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RAT, connect, run, checkSanitizers } from './lib.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
function rat(args, env = {}) {
  const p = spawnSync(RAT, args, { encoding: 'utf8', input: '', env: { ...process.env, ...env }, timeout: 120_000 });
  checkSanitizers(p.stderr);
  return p;
}

test('doctor: every check passes here, one line each, exit 0', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-doctor-'));
  try {
    const p = rat(['doctor', '--cwd', dir], { HOME: dir, PATH: '/usr/bin:/bin' });
    assert.equal(p.status, 0, p.stdout + p.stderr);
    assert.match(p.stdout, /^✓ kernelspec: python3 .* in \/usr\/share\/jupyter\/kernels\/python3$/m);
    assert.match(p.stdout, /^✓ kernel boots: ready in \d+ms/m);
    assert.match(p.stdout, /^✓ runs: \/usr\/bin\/python3, ipykernel \d+\.\d+/m);
    assert.match(p.stdout, /^✓ run round trip: \d+ ms/m);
    assert.match(p.stdout, new RegExp(`^✓ assets dir: ${dir}/\\.rat-assets is writable$`, 'm'));
    assert.match(p.stdout, /^✓ HTTP transport \(--http\): libmicrohttpd\.so\.\d+ \d+\.\d+\.\d+$/m);
    assert.match(p.stdout, /^– mcptocli, mcp2cli: not installed \(optional/m);
    assert.doesNotMatch(p.stdout, /✗/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('doctor: a Python without ipykernel is a ✗ naming the package, exit 1', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-doctor-'));
  try {
    const v = spawnSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', path.join(dir, 'venv')], { encoding: 'utf8' });
    assert.equal(v.status, 0, v.stderr);
    const py = path.join(dir, 'venv', 'bin', 'python');
    const p = rat(['doctor', '--cwd', dir, '--python', py]);
    assert.equal(p.status, 1);
    assert.match(p.stdout, new RegExp(`^✗ kernel boots: .*${py} lacks the ipykernel package: install it .*apt install python3-ipykernel.*pip install ipykernel`, 'm'));
    const k = rat(['doctor', '--kernel', 'no-such-kernel']);
    assert.equal(k.status, 1);
    assert.match(k.stdout, /^✗ kernelspec: no kernelspec named 'no-such-kernel'/m);
    assert.match(k.stdout, /^    fix: /m);
    // A subcommand after options, as in `git -C dir status`: the same doctor.
    const after = rat(['--kernel', 'no-such-kernel', 'doctor']);
    assert.equal(after.status, 1, after.stderr);
    assert.match(after.stdout, /^✗ kernelspec: no kernelspec named 'no-such-kernel'/m);
    // ... but an option's value is never taken for one.
    const value = rat(['--cwd', 'doctor']);
    assert.equal(value.status, 2);
    assert.match(value.stderr, /--cwd doctor: not a directory/);
    const extra = rat(['doctor', 'install']);
    assert.equal(extra.status, 2);
    assert.match(extra.stderr, /doctor: unexpected 'install'/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--help names every option and subcommand; the man page and doc/cli.md document each', () => {
  const help = rat(['--help']);
  assert.equal(help.status, 0);
  const man = readFileSync(path.join(here, '../../doc/rat-py.1'), 'utf8').replaceAll('\\-', '-');
  const readme = readFileSync(path.join(here, '../../README.md'), 'utf8');
  const cli = readFileSync(path.join(here, '../../doc/cli.md'), 'utf8');
  const opts = [...new Set(help.stdout.match(/--[a-z][a-z-]+/g))];
  assert.ok(opts.length >= 12, opts.join(' '));
  for (const o of opts) {
    assert.ok(man.includes(o), `man page lacks ${o}`);
    assert.ok(cli.includes(o), `doc/cli.md lacks ${o}`);
  }
  for (const c of ['kernels', 'install', 'uninstall', 'doctor']) {
    assert.match(help.stdout, new RegExp(`rat-py ${c}`));
    assert.match(man, new RegExp(`^\\.B ${c}$`, 'm'));
    assert.ok(readme.includes(`rat-py ${c}`), `README lacks rat-py ${c}`);
    assert.ok(cli.includes(`rat-py ${c}`), `doc/cli.md lacks rat-py ${c}`);
  }
  const v = rat(['--version']);
  assert.match(v.stdout, /^rat-py \d+\.\d+\.\d+\n$/);
});

test('a kernelspec\'s env (${VAR} expanded) and {resource_dir} reach the kernel; kernels lists it', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'rat-spec-'));
  const kdir = path.join(root, 'kernels', 'envtest');
  mkdirSync(kdir, { recursive: true });
  writeFileSync(path.join(kdir, 'start.py'), 'import sys\nfrom ipykernel import kernelapp\nkernelapp.launch_new_instance(argv=["-f", sys.argv[1]])\n');
  writeFileSync(path.join(kdir, 'kernel.json'), JSON.stringify({
    argv: ['/usr/bin/python3', '{resource_dir}/start.py', '{connection_file}'],
    display_name: 'Env test', language: 'python',
    env: { RAT_SPEC_VAR: '${RAT_OUTER}/inner', RAT_SPEC_UNKNOWN: '${NO_SUCH_VAR_HERE}' },
  }));
  const env = { JUPYTER_PATH: root, RAT_OUTER: '/outer' };
  try {
    const k = rat(['kernels'], env);
    assert.match(k.stdout, new RegExp(`^envtest +python +Env test +${kdir}$`, 'm'));
    const h = await connect({ args: ['--kernel', 'envtest'], env });
    try {
      const r = await run(h, 'import os; print(os.environ["RAT_SPEC_VAR"]); print(os.environ["RAT_SPEC_UNKNOWN"])');
      assert.match(r.text, /^\/outer\/inner\n\$\{NO_SUCH_VAR_HERE\}\n\n✓ /);
    } finally {
      await h.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('option ranges: the command line says what the library (rat_options_check) says, before any kernel starts', () => {
  // The same texts as tests/unit/test_api.c gets from the library.
  const origins = Array.from({ length: 17 }, (_, i) => ['--allow-origin', `http://o${i}.example`]).flat();
  const cases = [
    [['--boot-timeout', '2147484'], 'rat-py: --boot-timeout (boot_timeout_s) must be 1-3600 seconds (or 0 for the default, 60), not 2147484'],
    [['--boot-timeout', '3601'], 'rat-py: --boot-timeout (boot_timeout_s) must be 1-3600 seconds (or 0 for the default, 60), not 3601'],
    [['--boot-timeout', '99999999999999999999'], "rat-py: --boot-timeout needs a positive number of seconds, not '99999999999999999999'"],
    [['--http', '--port', '65536'], 'rat-py: --port (port) must be 0-65535 (or -1 for the default, 8000), not 65536'],
    [['--assets-max-mb', '1048577'], 'rat-py: --assets-max-mb (assets_max_mb) must be 1-1048576 megabytes (or 0 for the default, 512), not 1048577'],
    [['--http', ...origins], 'rat-py: --allow-origin (allow_origins) may be given at most 16 times'],
    [['--log-level', 'loud'], "rat-py: --log-level (log_level) must be debug, info, warn, error or off, not 'loud'"],
    [['--python', '/usr/bin/python3', '--venv', '/tmp'], 'rat-py: give either --python or --venv (python, venv), not both'],
  ];
  for (const [args, message] of cases) {
    const p = rat(args);
    assert.equal(p.status, 2, `${args.join(' ')}: ${p.stderr}`);
    assert.equal(p.stderr, `${message}\n`);
    assert.equal(p.stdout, '');
  }
});

test('no usable runtime dir and no private temporary one: a clear error, never /tmp itself', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-rtdir-'));
  try {
    const file = path.join(dir, 'a-file');
    writeFileSync(file, 'not a directory');
    // Nobody, root included, can create a directory below a regular file.
    const p = rat([], { JUPYTER_RUNTIME_DIR: path.join(file, 'runtime'), TMPDIR: path.join(file, 'tmp') });
    assert.equal(p.status, 1, p.stderr);
    assert.match(p.stderr, /^rat-py: the Jupyter runtime dir \S+\/a-file\/runtime is not writable \(Not a directory\), and no private directory could be made in its place \(Not a directory\); set JUPYTER_RUNTIME_DIR to a writable directory\n$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
