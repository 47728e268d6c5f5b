// R through IRkernel (Debian r-cran-irkernel registers the `ir` kernelspec),
// started the way users do: as `rat-r` (a symlink to rat-py).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, symlinkSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { RAT, connect, run, ctl, call, until, rawServer, ms, prompt } from './lib.mjs';

const linkDir = mkdtempSync(path.join(tmpdir(), 'rat-family-'));
const RAT_R = path.join(linkDir, 'rat-r');
symlinkSync(path.resolve(RAT), RAT_R);

let h;
before(async () => {
  h = await connect({ command: RAT_R });
});
after(async () => {
  await h.close();
  rmSync(linkDir, { recursive: true, force: true });
});

test('rat-r runs R: output, the value shown, the footer counts variables, status says r', async () => {
  let r = await run(h, 'x <- 42; print(x)');
  assert.match(r.text, /^\[1\] 42\n\n✓ \d+ms \| 1 var$/);
  r = await run(h, 'cat("x is", x, "\\n"); x + 1');
  assert.match(r.text, /^x is 42 \n\[1\] 43\n\n✓ \d+ms \| 1 var$/);
  r = await ctl(h, 'status');
  assert.match(r.text, /^r idle \| exec #\d+ \| rev \d+ \| up \d+s\n\nkernel: ir \(R\)/);
});

test('errors read as in the R console, with isError', async () => {
  let r = await run(h, 'stop("boom")');
  assert.equal(r.isError, true);
  assert.match(r.text, /^Error: boom\n\n✗ \d+m?s \| 1 var$/);
  r = await run(h, 'f <- function() stop("inner"); f()');
  assert.match(r.text, /^Error in f\(\): inner\n\n✗ .* \| 2 vars$/, 'f was defined before it failed');
  r = await run(h, 'print("after the error")');
  assert.match(r.text, /^\[1\] "after the error"\n\n✓ /);
});

test('look: overview and drill-down through the R helper', async () => {
  await run(h, 'data <- list(name = "Alice", scores = c(90, 85, 92)); df <- data.frame(a = 1:100, b = letters[(0:99 %% 26) + 1]); my.var <- 3');
  let r = await call(h, 'look', {});
  const lines = r.text.split('\n');
  assert.match(lines[0], /^r idle \| 5 vars \| exec #\d+$/);
  assert.match(r.text, /\n  data +list +list\(name = "Alice", scores = c\(90, 85, 92\)\)\n/);
  assert.match(r.text, /\n  df +data\.frame +\(100 rows × 2 cols\) <data\.frame 100 rows × 2 cols: a, b>\n/);
  assert.match(r.text, /\n  my\.var +numeric +3\n/);
  r = await call(h, 'look', { at: 'x' });
  assert.equal(r.text, 'x: numeric = 42');
  r = await call(h, 'look', { at: 'data' });
  assert.match(r.text, /^data: list \(2 items\)\n    = list\(name = "Alice", scores = c\(90, 85, 92\)\)\n\n      \$name +character +"Alice"\n    ▸ \$scores +numeric +c\(90, 85, 92\)$/);
  r = await call(h, 'look', { at: 'data.scores.2' });
  assert.equal(r.text, 'data.scores.2: numeric = 85', 'R indices count from 1');
  r = await call(h, 'look', { at: 'my.var' });
  assert.equal(r.text, 'my.var: numeric = 3', 'a dot inside an R name');
  r = await call(h, 'look', { at: 'df.b' });
  assert.match(r.text, /^df\.b: character \(100 items\)\n    = c\("a", "b", "c"/);
  r = await call(h, 'look', { at: 'data.missing' });
  assert.equal(r.isError, true);
  assert.equal(r.text, "data.missing: not found ('missing' is not an element of data)");
  r = await call(h, 'look', { at: 'sqrt' });
  assert.match(r.text, /^sqrt: function \(function\)\n    sqrt\(x\)\n    Defined in: package:base\n/);
  // The helper is nowhere in the user's namespace.
  r = await run(h, 'print(ls(all.names = TRUE)); print(exists("snap")); print(any(grepl("rat", search())))');
  assert.doesNotMatch(r.text.split('\n')[0], /rat/);
  assert.match(r.text, /\[1\] FALSE\n\[1\] FALSE\n/);
});

test('completion and inspect come from IRkernel', async () => {
  let r = await call(h, 'look', { code: 'data$sc', cursor: 7 });
  assert.match(r.text, /scores/);
  r = await call(h, 'look', { code: 'pri', cursor: 3 });
  assert.match(r.text, /^print/m);
});

test('readline() asks for input; the answer continues the run', async () => {
  let r = await run(h, 'name <- readline("Name: "); cat("hi", name, "\\n")');
  assert.match(r.text, /^INPUT REQUESTED: "Name: "/);
  r = await call(h, 'run', { code: '', input: 'Ada' });
  assert.match(r.text, /^hi Ada \n\n✓ /);
});

test('output streams while R runs; cancel interrupts by signal; variables survive', async () => {
  const r1 = await run(h, 'for (i in 1:3) { cat(i, "\\n"); flush.console(); Sys.sleep(0.3) }; Sys.sleep(30)', { wait: 2 });
  assert.match(r1.text, /^1 \n2 \n3 \n\n⏳ running/);
  assert.ok(h.logs.some((l) => l.logger === 'stdout' && /1/.test(l.data)), 'streamed as notifications');
  const c = await ctl(h, 'cancel');
  assert.match(c.text, /^CANCELLED exec #\d+$/);
  // CANCELLED is said once the run ended on the interrupt (R's "Interrupted");
  // that answer reported its end, so ctl wait has nothing left to give.
  const w = await ctl(h, 'wait');
  assert.equal(w.text, 'Nothing to wait for: no run is in progress.');
  const r = await run(h, 'print(x)');
  assert.match(r.text, /^\[1\] 42\n/);
});

test('reset clears the workspace; scope all is refused with a reason; restart gives a fresh R', async () => {
  let r = await ctl(h, 'reset');
  assert.equal(r.text, 'RESET | namespace cleared | 0 vars');
  r = await call(h, 'look', {});
  assert.match(r.text, /^r idle \| 0 vars \| exec #\d+\n\n\(no variables\)$/);
  r = await ctl(h, 'reset', { scope: 'all' });
  assert.equal(r.isError, true);
  assert.match(r.text, /not available for r kernels/);
  r = await run(h, 'y <- 1; cat(Sys.getpid(), tempdir(), "\\n"); writeLines("x", tempfile())');
  const [, oldPid, oldDir] = /^(\d+) (\S+)/.exec(r.text);
  assert.match(oldDir, /Rtmp/);
  assert.ok(existsSync(oldDir));
  r = await ctl(h, 'restart');
  assert.equal(r.text, 'RESTARTED | interpreter reinitialized | 0 vars');
  r = await run(h, 'exists("y")');
  assert.match(r.text, /^\[1\] FALSE\n/);
  // The replaced R was sent SIGUSR2 (quit without saving), not SIGKILL: it
  // removed its session directory, and it was reaped.
  await until(() => !existsSync(oldDir), ms(3000), `the old R's session directory ${oldDir} to be removed`);
  await until(() => !existsSync(`/proc/${oldPid}`), ms(3000), `the old R (pid ${oldPid}) to be reaped`);
});

test('when rat-py exits, R quits by itself: its session directory is gone, and the exit stays quick', async () => {
  // R removes tempdir() (/tmp/RtmpXXXXXX, where tempfile() writes) only
  // when it quits; a SIGTERM right after the shutdown request left one
  // behind per session.
  const srv = rawServer(['--kernel', 'ir']);
  await srv.initialize();
  srv.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run', arguments: { code: 'cat(tempdir(), "\\n"); writeLines("x", tempfile())' } } });
  const r = await srv.reply(1);
  const dir = /^(\S+)/.exec(r.result.content[0].text)[1];
  assert.match(dir, /Rtmp/);
  assert.ok(existsSync(dir));
  const t0 = Date.now();
  srv.child.stdin.end();
  const ex = await srv.exited;
  assert.ok(ex.at - t0 <= prompt(300), `exited after ${ex.at - t0} ms`);
  assert.equal(ex.code, 0);
  await until(() => !existsSync(dir), prompt(1000), `R's session directory ${dir} to be removed`);
  await srv.close();
});

test('a family name whose kernel is missing says what to install', () => {
  const ju = path.join(linkDir, 'rat-ju');
  symlinkSync(path.resolve(RAT), ju);
  const p = spawnSync(ju, [], { input: '', encoding: 'utf8' });
  assert.equal(p.status, 1);
  assert.equal(p.stdout, '');
  assert.match(p.stderr, /rat-ju needs a Jupyter kernel for Julia and none is installed .*IJulia/);
});
