// Every test runs in a home of its own under the build tree
// (tests/isolation/CMakeLists.txt): this test checks that it got one, empty,
// and that a kernel rat-py starts keeps its IPython history and connection
// file there, not in the user's ~/.ipython and ~/.local/share/jupyter, while
// Debian's system-wide kernelspecs are still found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { RAT, connect, run, ctl, ms } from './lib.mjs';

const BUILD = process.env.RAT_BUILD_DIR;
const HOME = BUILD && path.join(BUILD, 'test-homes', 'integration.isolation', 'home');

test('HOME, IPYTHONDIR, JUPYTER_* and XDG_* point into the test\'s own empty directory', { skip: !BUILD && 'RAT_BUILD_DIR not set' }, () => {
  const e = process.env;
  assert.equal(e.HOME, HOME);
  assert.equal(e.IPYTHONDIR, path.join(HOME, '.ipython'));
  assert.equal(e.JUPYTER_CONFIG_DIR, path.join(HOME, '.jupyter'));
  assert.equal(e.JUPYTER_DATA_DIR, path.join(HOME, '.local/share/jupyter'));
  assert.equal(e.JUPYTER_RUNTIME_DIR, path.join(HOME, '.local/share/jupyter/runtime'));
  assert.equal(e.JUPYTER_PATH, '/usr/share/jupyter');
  for (const [k, v] of [['XDG_CONFIG_HOME', '.config'], ['XDG_CACHE_HOME', '.cache'], ['XDG_DATA_HOME', '.local/share'], ['XDG_STATE_HOME', '.local/state']])
    assert.equal(e[k], path.join(HOME, v), k);
  assert.equal(e.XDG_RUNTIME_DIR, path.join(path.dirname(HOME), 'run'));
  assert.equal(statSync(e.XDG_RUNTIME_DIR).mode & 0o777, 0o700);
  for (const k of ['PYTHONPATH', 'LD_LIBRARY_PATH', 'VIRTUAL_ENV', 'JUPYTER_GATEWAY_URL', 'RAT_PY_TOKEN', 'RAT_LIBRARY'])
    assert.equal(e[k], undefined, `${k} is unset`);
  // Made empty at the start of this ctest run: only the skeleton is there.
  assert.deepEqual(readdirSync(HOME).sort(), ['.cache', '.config', '.local']);
  assert.deepEqual(readdirSync(path.join(HOME, '.config')), []);
});

test('a kernel writes its history and connection file into the test\'s home; Debian\'s kernelspecs are found', { skip: !BUILD && 'RAT_BUILD_DIR not set' }, async () => {
  const marker = `isolation_marker_${process.pid}_${Date.now()}`;
  const h = await connect();
  let kpid = 0;
  try {
    assert.match((await run(h, `${marker} = 1`)).text, /✓/);
    const { text } = await ctl(h, 'status');
    assert.match(text, /kernel: python3 .*\n/);
    kpid = Number(/pid (\d+)/.exec(text)[1]);
    const conn = /connection file: (\S+)/.exec(text)[1];
    assert.equal(path.dirname(conn), process.env.JUPYTER_RUNTIME_DIR);
  } finally {
    await h.close();
  }
  // The kernel may still be closing its history (a transaction in its
  // journal, which a reader would have to roll back): read once it is gone.
  for (let t0 = Date.now(); Date.now() - t0 < ms(10_000);) {
    try { process.kill(kpid, 0); } catch { break; }
    await new Promise((r) => setTimeout(r, 50));
  }
  // IPython's history database, in the test's IPYTHONDIR, holds the run.
  const hist = path.join(HOME, '.ipython/profile_default/history.sqlite');
  // The test's own history is opened read-write: a kernel ended during a
  // transaction leaves a hot journal, which only a writer may roll back (a
  // read-only open then fails: "attempt to write a readonly database", seen
  // in a clean-clone run). The user's is only ever read.
  const q = (db, mode) => spawnSync('/usr/bin/python3', ['-c',
    'import sqlite3, sys; c = sqlite3.connect("file:" + sys.argv[1] + "?mode=" + sys.argv[3], uri=True, timeout=10); '
    + 'print(c.execute("select count(*) from history where source like ?", ("%" + sys.argv[2] + "%",)).fetchone()[0])', db, marker, mode],
  { encoding: 'utf8' });
  const mine = q(hist, 'rw');
  assert.equal(mine.status, 0, mine.stderr);
  assert.equal(mine.stdout.trim(), '1', 'the run is in the test\'s own history');
  // ... and not in the user's (read only, if there is one).
  const real = path.join(userInfo().homedir, '.ipython/profile_default/history.sqlite');
  if (existsSync(real)) {
    const theirs = q(real, 'ro');
    if (theirs.status === 0) assert.equal(theirs.stdout.trim(), '0', 'the user\'s history is untouched');
  }
  const k = spawnSync(RAT, ['kernels'], { encoding: 'utf8' });
  assert.equal(k.status, 0, k.stderr);
  assert.match(k.stdout, /^python3 .*\/usr\/share\/jupyter\/kernels\/python3$/m);
});
