// rat-py's secret (RAT_PY_TOKEN) is read by rat-py and passed on to no one:
// not to the kernel, nor to what the kernel starts; and `rat`, whose client
// sends no token, starts its runtimes without it, so they answer it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, mkdtempSync, symlinkSync, realpathSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RAT, connect, run, kernelPid, ms, checkSanitizers } from './lib.mjs';

const SECRET = 'rat-secret-3f9c1d7e5a';

const environOf = (pid) => readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');

test('RAT_PY_TOKEN reaches neither the kernel nor what it starts', async () => {
  const h = await connect({ env: { RAT_PY_TOKEN: SECRET } });
  try {
    const r = await run(h, "import os, subprocess\nprint(os.environ.get('RAT_PY_TOKEN'))\nprint(subprocess.run(['env'], capture_output=True, text=True).stdout.count('RAT_PY_TOKEN'))");
    assert.deepEqual(r.text.split('\n').slice(0, 2), ['None', '0']);
    const pid = await kernelPid(h);
    assert.ok(!environOf(pid).some((e) => e.startsWith('RAT_PY_TOKEN=')), `/proc/${pid}/environ has it`);
    // The rest of the environment still is the kernel's.
    const home = await run(h, "import os; print(os.environ.get('HOME'))");
    assert.equal(home.text.split('\n')[0], process.env.HOME);
  } finally {
    await h.close();
  }
});

// `rat` unwrapped (as vscode_rat_cli runs it): it starts its servers by
// exec'ing /proc/self/exe, which under a wrapper is the wrapper.
function ratRun(bin, args, env, cwd) {
  return new Promise((resolve) => {
    const p = spawn(bin, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => p.kill('SIGKILL'), ms(120000));
    p.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout: out, stderr: err }); });
  });
}

test('rat start with RAT_PY_TOKEN set: the runtime starts without it and answers rat\'s client', async () => {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'rat-secret-')));
  for (const d of ['home', 'cfg', 'bin', 'proj/.git', 'ipy', 'jrt']) mkdirSync(path.join(root, d), { recursive: true });
  const bin = path.join(root, 'bin', 'rat');
  symlinkSync(RAT, bin);
  const proj = path.join(root, 'proj');
  const base = 20000 + Math.floor(Math.random() * 400) * 100;
  const env = {
    ...process.env, HOME: path.join(root, 'home'), XDG_CONFIG_HOME: path.join(root, 'cfg'), IPYTHONDIR: path.join(root, 'ipy'),
    JUPYTER_RUNTIME_DIR: path.join(root, 'jrt'), RAT_PORTS: `${base}-${base + 99}`, RAT_PY_TOKEN: SECRET, VIRTUAL_ENV: '',
  };
  try {
    const start = await ratRun(bin, ['start', 'py'], env, proj);
    assert.equal(start.code, 0, start.stderr);
    const m = /started on http:\/\/127\.0\.0\.1:(\d+)\/mcp \(PID (\d+)\)/.exec(start.stderr);
    assert.ok(m, start.stderr);
    const pid = Number(m[2]);
    assert.ok(!environOf(pid).some((e) => e.startsWith('RAT_PY_TOKEN=')), 'the runtime got RAT_PY_TOKEN');
    // rat's client (no token) is answered: cancel and reset go through it.
    const cancel = await ratRun(bin, ['cancel', 'py'], env, proj);
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.match(cancel.stdout + cancel.stderr, /No active execution\./);
    const reset = await ratRun(bin, ['reset', 'py'], env, proj);
    assert.equal(reset.code, 0, reset.stderr);
    for (const r of [start, cancel, reset]) checkSanitizers(r.stderr, 'rat');
  } finally {
    await ratRun(bin, ['stop', '--all'], env, proj);
    rmSync(root, { recursive: true, force: true });
  }
});
