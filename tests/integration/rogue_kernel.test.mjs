// A rogue peer on the kernel side: messages with bad, empty, short and
// replayed signatures, and malformed frames, arriving for the very request
// rat-py is waiting on. They must be dropped before their JSON is read,
// counted in ctl status, and never acted on. A real kernel cannot send such
// messages, so fake_kernel.py (pyzmq + jupyter_client's Session) plays the
// kernel, bound to the ports of its own connection file, and rat-py attaches
// with --existing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { connect, run, ctl, scratch, ms, until } from './lib.mjs';

const PYTHON = '/usr/bin/python3'; // Debian's, with jupyter_client and pyzmq
const FAKE = path.join(path.dirname(new URL(import.meta.url).pathname), 'fake_kernel.py');

async function startFake(file) {
  const child = spawn(PYTHON, [FAKE, file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`fake kernel did not start: ${err}`)), 20_000);
    child.stdout.on('data', (d) => { if (String(d).includes('ready')) { clearTimeout(t); resolve(); } });
    child.on('exit', (code) => { clearTimeout(t); reject(new Error(`fake kernel exited (${code}): ${err}`)); });
  });
  return { child, stderr: () => err };
}

test('badly signed, unsigned, replayed and malformed kernel messages are dropped, counted and never acted on', async () => {
  const work = scratch();
  const file = path.join(work.dir, 'kernel-fake.json');
  const fake = await startFake(file);
  const h = await connect({ args: ['--existing', file] });
  try {
    for (let i = 1; i <= 2; i++) {
      const r = await run(h, 'anything', {}, { timeout: ms(30_000) });
      // Only the validly signed output, once; no forged error, prompt or text.
      assert.equal(r.isError, false, r.text);
      assert.match(r.text, /^real output\n\n✓ \d+ms$/);
      // The rogue messages come on shell, stdin and iopub, separate sockets
      // with no order between them: the run can end before the last forged
      // one is read, so wait (bounded) for the count to be complete.
      const want = new RegExp(`\\nrejected kernel messages: ${6 * i} \\(bad signature ${4 * i}, replayed ${i}\\)`);
      let st;
      await until(async () => want.test((st = await ctl(h, 'status')).text), ms(10_000), 'every rogue message counted');
      assert.match(st.text, new RegExp(`^fake idle \\| exec #${i} \\|`), 'the forged execute_reply (exec #99) was ignored');
      assert.match(st.text, /\nkernel: attached via /);
      assert.match(st.text, want);
    }
    assert.doesNotMatch(h.stderr(), /FORGED/);
  } finally {
    await h.close();
    fake.child.kill('SIGKILL');
    work.cleanup();
  }
});
