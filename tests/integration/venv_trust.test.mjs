// A venv found by discovery (a .venv in the working directory or a parent)
// is trusted the way git trusts a repository found in a parent
// (safe.directory, CVE-2022-24765): only when it and every directory on the
// way belong to the user or root and no one else may write them. A refused
// venv's python never runs; the first result and ctl status say why and
// which flag chooses it anyway.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, existsSync, rmSync, mkdtempSync, realpathSync, chmodSync, chownSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { RAT, ratCommand, connect, run, ctl, checkSanitizers } from './lib.mjs';

const ROOT = process.getuid() === 0;
const NOBODY = ROOT ? Number(spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).stdout.trim()) : -1;
const NOGROUP = ROOT ? Number(spawnSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).stdout.trim()) : -1;

// A tree: top/.venv (a venv whose python leaves a marker, then is the
// system python, which has ipykernel: pyvenv.cfg includes the system
// site-packages) and top/proj (where the kernel works).
function plant() {
  const top = realpathSync(mkdtempSync(path.join(tmpdir(), 'rat-vtrust-')));
  chmodSync(top, 0o755);
  const venv = path.join(top, '.venv');
  const marker = path.join(top, 'ran');
  mkdirSync(path.join(venv, 'bin'), { recursive: true, mode: 0o755 });
  writeFileSync(path.join(venv, 'pyvenv.cfg'), 'home = /usr/bin\ninclude-system-site-packages = true\n');
  writeFileSync(path.join(venv, 'bin', 'python'), `#!/bin/sh\necho "$$" >> ${marker}\nexec /usr/bin/python3 "$@"\n`, { mode: 0o755 });
  const proj = path.join(top, 'proj');
  mkdirSync(proj, { mode: 0o755 });
  const home = path.join(top, 'home');
  mkdirSync(home, { mode: 0o700 });
  const env = { HOME: home, XDG_CACHE_HOME: path.join(home, '.cache'), VIRTUAL_ENV: '' };
  return { top, venv, proj, marker, env, done: () => rmSync(top, { recursive: true, force: true }) };
}

function chownTree(p, uid) {
  chownSync(p, uid, uid);
  if (statSync(p).isDirectory())
    for (const e of readdirSync(p)) chownTree(path.join(p, e), uid);
}

async function refused(t, why, opts = {}) {
  const h = await connect({ cwd: t.proj, env: t.env, ...opts });
  try {
    const first = await run(h, 'import sys; print(sys.executable)');
    assert.equal(first.isError, false, first.text);
    assert.match(first.text, /\/usr\/bin\/python3/);
    const said = `the venv ${t.venv} was found but not used: ${why}; to use it anyway, start rat-py with --venv ${t.venv}`;
    assert.ok(first.text.includes(`[rat-py: ${said}]`), first.text);
    const again = await run(h, 'print(1)');
    assert.ok(!again.text.includes('not used'), `said once, not twice: ${again.text}`);
    const st = await ctl(h, 'status');
    assert.ok(st.text.includes(`environment: ${said}`), st.text);
    assert.ok(!/interpreter: .*\.venv/.test(st.text), st.text);
    assert.equal(existsSync(t.marker), false, "the refused venv's python ran");
  } finally {
    await h.close();
  }
}

test('a .venv in a parent that belongs to another user is not run; the first result and status say so; --venv still chooses it', { skip: !ROOT && 'needs root to give the .venv to nobody' }, async () => {
  const t = plant();
  try {
    chownTree(t.venv, NOBODY);
    await refused(t, `${t.venv} belongs to nobody (uid ${NOBODY}), not to you or root`);
    const h = await connect({ cwd: t.proj, args: ['--venv', t.venv], env: t.env });
    try {
      const r = await run(h, 'print(2)');
      assert.equal(r.text.split('\n')[0], '2');
      assert.ok(!r.text.includes('not used'), r.text);
      assert.equal(existsSync(t.marker), true, 'an explicit --venv is honoured');
    } finally {
      await h.close();
    }
  } finally {
    t.done();
  }
});

test('a .venv writable by others, or one above a directory others may write, is not run', async () => {
  let t = plant();
  try {
    chmodSync(t.venv, 0o777);
    await refused(t, `${t.venv} is writable by others (mode 0777)`);
  } finally {
    t.done();
  }
  if (ROOT) { // a group other than ours (a group of our own alone, umask 002's, may write)
    t = plant();
    try {
      const py = path.join(t.venv, 'bin', 'python');
      chownSync(py, 0, NOGROUP);
      chmodSync(py, 0o775);
      await refused(t, `${py} is writable by its group (mode 0775)`);
    } finally {
      t.done();
    }
  }
  t = plant();
  try {
    chmodSync(t.proj, 0o777); // the working directory itself: anyone could have put it under the .venv
    await refused(t, `${t.proj} is writable by others (mode 0777)`);
  } finally {
    t.done();
  }
});

test('a client root under a refused .venv: the kernel moves there with the default python, and the result says why', async () => {
  const t = plant();
  try {
    chmodSync(t.venv, 0o777);
    await refused(t, `${t.venv} is writable by others (mode 0777)`, {
      cwd: t.env.HOME, roots: () => [{ uri: pathToFileURL(t.proj).href }],
    });
  } finally {
    t.done();
  }
});

test('a .venv that is yours (or root\'s) and writable by no one else is still used', async () => {
  const t = plant();
  try {
    const h = await connect({ cwd: t.proj, env: t.env });
    try {
      const r = await run(h, 'import os; print(os.getcwd())');
      assert.equal(r.text.split('\n')[0], t.proj);
      const st = await ctl(h, 'status');
      assert.match(st.text, new RegExp(`environment: venv ${t.venv} \\(\\.venv\\)`));
      assert.match(st.text, new RegExp(`interpreter: ${t.venv}/bin/python`));
      assert.equal(existsSync(t.marker), true);
    } finally {
      await h.close();
    }
  } finally {
    t.done();
  }
});

test('rat: a .venv found up to the project root is passed to the runtime only when it passes the same test', async () => {
  const t = plant();
  try {
    mkdirSync(path.join(t.top, '.git')); // the project root is top: rat looks for a venv from proj up to it
    const bin = path.join(t.top, 'rat');
    symlinkSync(RAT, bin);
    const env = { ...process.env, ...t.env, XDG_CONFIG_HOME: path.join(t.top, 'cfg') };
    const resolve = () => {
      const { command, args } = ratCommand(['resolve', 'py', '--json'], bin);
      return spawnSync(command, args, { cwd: t.proj, env, encoding: 'utf8' });
    };
    let r = resolve();
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).venv, t.venv);
    checkSanitizers(r.stderr, 'rat');
    assert.ok(!r.stderr.includes('not used'), r.stderr);
    chmodSync(t.venv, 0o777);
    r = resolve();
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).venv, undefined);
    assert.ok(r.stderr.includes(`rat: the venv ${t.venv} was found but not used: ${t.venv} is writable by others (mode 0777); to use it anyway: rat add NAME --venv ${t.venv}`), r.stderr);
    assert.equal(existsSync(t.marker), false);
  } finally {
    t.done();
  }
});
