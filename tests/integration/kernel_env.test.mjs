// How the kernel is started: working directory, process group, parent pid,
// connection file permissions, and which Python (venv detection).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync, statSync, existsSync, rmSync, mkdtempSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect, run, ctl, until, ms } from './lib.mjs';

test('the kernel runs in --cwd, leads its own process group, and knows its parent', async () => {
  const h = await connect();
  try {
    const r = await run(h, 'import os\nprint(os.getcwd())\nprint(os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid())\nprint(os.environ.get("JPY_PARENT_PID"))');
    const [cwd, group, parent] = r.text.split('\n');
    assert.equal(cwd, h.dir);
    assert.equal(group, 'True True');
    assert.equal(Number(parent), h.pid());
  } finally {
    await h.close();
  }
});

test('the connection file is 0600 while the kernel runs and removed at exit', async () => {
  const h = await connect();
  let file;
  try {
    await run(h, 'pass');
    const st = await ctl(h, 'status');
    file = /connection file: (.+)/.exec(st.text)[1];
    assert.equal(statSync(file).mode & 0o777, 0o600);
  } finally {
    await h.close();
  }
  await until(() => !existsSync(file), ms(1000), 'the connection file to be removed');
});

function fakeVenv(root, withIpykernel) {
  // A venv-shaped directory whose python is the system one (which has
  // ipykernel); the site-packages marker is what rat-py looks for.
  const venv = path.join(root, '.venv');
  mkdirSync(path.join(venv, 'bin'), { recursive: true });
  symlinkSync('/usr/bin/python3', path.join(venv, 'bin', 'python'));
  const sp = path.join(venv, 'lib', 'python3.11', 'site-packages');
  mkdirSync(sp, { recursive: true });
  if (withIpykernel) {
    mkdirSync(path.join(sp, 'ipykernel'));
    writeFileSync(path.join(sp, 'ipykernel', '__init__.py'), '');
  }
  return venv;
}

test('a .venv with ipykernel in a parent of --cwd runs the kernel, and status says so', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'rat-venv-'));
  const venv = fakeVenv(root, true);
  const sub = path.join(root, 'project', 'src');
  mkdirSync(sub, { recursive: true });
  const env = { ...process.env };
  delete env.VIRTUAL_ENV;
  const h = await connect({ args: ['--cwd', sub], env });
  try {
    const r = await run(h, 'import sys; print(sys.executable)');
    assert.equal(r.text.split('\n')[0], path.join(venv, 'bin', 'python'));
    const st = await ctl(h, 'status');
    assert.match(st.text, new RegExp(`environment: venv ${venv} \\(\\.venv\\)`));
    assert.match(st.text, new RegExp(`interpreter: ${venv}/bin/python`));
  } finally {
    await h.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a venv without ipykernel is skipped, and status says why and how to fix it', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'rat-venv-'));
  const venv = fakeVenv(root, false);
  const h = await connect({ env: { VIRTUAL_ENV: venv } });
  try {
    const r = await run(h, 'import sys; print(sys.executable)');
    assert.equal(r.text.split('\n')[0], '/usr/bin/python3');
    const st = await ctl(h, 'status');
    assert.match(st.text, /lacks ipykernel, so the python3 kernelspec is used; to run in the venv: .*python -m pip install ipykernel/);
  } finally {
    await h.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('--python picks the interpreter; a missing one is a clear start-up error', async () => {
  const h = await connect({ args: ['--python', '/usr/bin/python3'] });
  try {
    const r = await run(h, 'import sys; print(sys.executable)');
    assert.equal(r.text.split('\n')[0], '/usr/bin/python3');
  } finally {
    await h.close();
  }
  const { spawnSync } = await import('node:child_process');
  const { RAT } = await import('./lib.mjs');
  const p = spawnSync(RAT, ['--python', '/no/such/python'], { input: '', encoding: 'utf8' });
  assert.equal(p.status, 2);
  assert.equal(p.stdout, '');
  assert.match(p.stderr, /--python \/no\/such\/python: no such executable/);
});

test('a real venv made with --system-site-packages (ipykernel from the base) is used: VIRTUAL_ENV, --venv, .venv; the answer is cached', async () => {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'rat-venv-')));
  const venv = path.join(root, '.venv');
  const v = spawnSync('/usr/bin/python3', ['-m', 'venv', '--system-site-packages', '--without-pip', venv], { encoding: 'utf8' });
  assert.equal(v.status, 0, v.stderr);
  const cache = path.join(root, 'cache');
  const env = { XDG_CACHE_HOME: cache, VIRTUAL_ENV: '' };
  const ways = [
    ['VIRTUAL_ENV', { env: { ...env, VIRTUAL_ENV: venv } }],
    ['--venv', { args: ['--venv', venv], env }],
    ['\\.venv', { args: ['--cwd', root], env }],
  ];
  try {
    for (const [label, opts] of ways) {
      const h = await connect(opts);
      try {
        const r = await run(h, 'import sys, ipykernel; print(sys.prefix)');
        assert.equal(r.text.split('\n')[0], venv, label);
        const st = await ctl(h, 'status');
        assert.match(st.text, new RegExp(`environment: venv ${venv} \\(${label}\\)\\n`));
        assert.match(st.text, new RegExp(`interpreter: ${venv}/bin/python`));
      } finally {
        await h.close();
      }
    }
    // One answer, cached with the directories it depends on.
    const dir = path.join(cache, 'rat-py');
    const files = readdirSync(dir);
    assert.equal(files.length, 1, files.join(' '));
    const file = path.join(dir, files[0]);
    const text = readFileSync(file, 'utf8');
    assert.match(text, /\nipykernel yes\n$/);
    assert.match(text, new RegExp(`\\nstamp \\S+ ${venv}/lib/python3\\.\\d+/site-packages\\n`));
    // The cache is what answers while those directories are unchanged...
    writeFileSync(file, text.replace('ipykernel yes', 'ipykernel no'));
    let h = await connect({ env: { ...env, VIRTUAL_ENV: venv } });
    try {
      const st = await ctl(h, 'status');
      assert.match(st.text, /lacks ipykernel, so the python3 kernelspec is used/);
    } finally {
      await h.close();
    }
    // ...and a change in one of them (a package installed) asks again.
    const sp = /\nstamp \S+ (\S+\/site-packages)\n/.exec(text)[1];
    writeFileSync(path.join(sp, 'newly_installed.py'), '');
    h = await connect({ env: { ...env, VIRTUAL_ENV: venv } });
    try {
      const r = await run(h, 'import sys; print(sys.prefix)');
      assert.equal(r.text.split('\n')[0], venv);
    } finally {
      await h.close();
    }
    assert.match(readFileSync(file, 'utf8'), /\nipykernel yes\n$/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('--kernelspec-dir: a changed copy of rat-py\'s kernel.json launches the venv\'s kernel (its env, argv and name take effect); a missing one is a clear error', async () => {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'rat-spec-')));
  const venv = path.join(root, 'venv');
  const v = spawnSync('/usr/bin/python3', ['-m', 'venv', '--system-site-packages', '--without-pip', venv], { encoding: 'utf8' });
  assert.equal(v.status, 0, v.stderr);
  // The kernelspec rat-py ships (built in, and installed under
  // share/rat-py/kernelspec), copied and changed as a user would.
  const spec = JSON.parse(readFileSync(new URL('../../kernelspec/kernel.json', import.meta.url), 'utf8'));
  assert.equal(spec.argv[0], '{python}');
  spec.argv.push('--HistoryManager.hist_file=:memory:');
  spec.env = { ...spec.env, RAT_SPEC_MARK: 'changed copy' };
  spec.display_name = 'Python 3 (my copy)';
  const dir = path.join(root, 'spec');
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'kernel.json'), JSON.stringify(spec));
  const env = { XDG_CACHE_HOME: path.join(root, 'cache'), VIRTUAL_ENV: '' };
  try {
    const h = await connect({ args: ['--venv', venv, '--kernelspec-dir', dir], env });
    try {
      const r = await run(h, 'import os, sys\nprint(sys.executable)\nprint(os.environ.get("RAT_SPEC_MARK"))\nprint(get_ipython().history_manager.hist_file)');
      assert.deepEqual(r.text.split('\n').slice(0, 3), [path.join(venv, 'bin', 'python'), 'changed copy', ':memory:']);
      const st = await ctl(h, 'status');
      assert.match(st.text, /\nkernel: rat-py \(Python 3 \(my copy\)\), pid \d+/);
      assert.match(st.text, new RegExp(`interpreter: ${venv}/bin/python\\n`));
    } finally {
      await h.close();
    }
    const { RAT } = await import('./lib.mjs');
    const p = spawnSync(RAT, ['--venv', venv, '--kernelspec-dir', root], { input: '', encoding: 'utf8', env: { ...process.env, ...env } });
    assert.equal(p.status, 1);
    assert.equal(p.stdout, '');
    assert.equal(p.stderr, `rat-py: cannot use the kernelspec in ${root}: cannot read ${root}/kernel.json: No such file or directory\n`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
