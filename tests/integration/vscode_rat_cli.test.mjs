// `rat`, the runtime manager, driven as vscode-rat drives it: our client
// (vscode_rat_like.mjs RatCliLike) makes the extension's `rat` calls with its
// execFile options and timeouts, parses `rat start` with its regex and
// state.yaml with its parser, and talks MCP to the server as it does. Also:
// the REPL on the same kernel, concurrent starts, and a state.yaml in the Go
// CLI's layout. Temp HOME and XDG_CONFIG_HOME, a port range of its own
// (RAT_PORTS), and every server it starts is stopped at the end.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RAT, ms } from './lib.mjs';
import { RatCliLike, readState, stateFilePath, parseOverview, VscodeRatLike } from './vscode_rat_like.mjs';

const sleep = (n) => new Promise((r) => setTimeout(r, n));
let root, env, cli, proj, bin;

/** The pids of the processes serving on port (their argv has --port PORT). */
function serversOn(port) {
  const pids = [];
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let argv;
    try { argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0'); } catch { continue; }
    const i = argv.indexOf('--port');
    if (i >= 0 && argv[i + 1] === String(port) && argv.includes('--http')) pids.push(Number(p));
  }
  return pids;
}

const listening = (port) => new Promise((resolve) => {
  const s = net.connect(port, '127.0.0.1');
  s.on('connect', () => { s.destroy(); resolve(true); });
  s.on('error', () => resolve(false));
});

before(() => {
  root = mkdtempSync(path.join(tmpdir(), 'rat-cli-test-'));
  for (const d of ['home', 'cfg', 'bin', 'proj/.git', 'ipy', 'jrt']) mkdirSync(path.join(root, d), { recursive: true });
  proj = path.join(root, 'proj');
  writeFileSync(path.join(proj, 'notes.md'), '# notes\n\n```python\nx = 1\n```\n');
  bin = path.join(root, 'bin', 'rat');
  symlinkSync(RAT, bin);
  const base = 20000 + Math.floor(Math.random() * 400) * 100;
  env = {
    ...process.env, HOME: path.join(root, 'home'), XDG_CONFIG_HOME: path.join(root, 'cfg'),
    IPYTHONDIR: path.join(root, 'ipy'), JUPYTER_RUNTIME_DIR: path.join(root, 'jrt'), RAT_PORTS: `${base}-${base + 99}`,
  };
  cli = new RatCliLike(bin, env);
});

after(async () => {
  for (const e of [env, { ...env, XDG_CONFIG_HOME: path.join(root, 'gocfg') }]) {
    await new RatCliLike(bin, e).exec(['stop', '--all']);
    // Whatever state says, nothing of ours keeps running.
    for (const k of readState(e).kernels) if (k.pid > 0) { try { process.kill(k.pid, 'SIGKILL'); } catch { /* gone */ } }
  }
  rmSync(root, { recursive: true, force: true });
});

test('getClient as the extension does: add, start (returns at once, no pipe held), its state parser reads it', async () => {
  const t0 = Date.now();
  const c = await cli.getClient('py@proj', proj, 'py');
  assert.ok(Date.now() - t0 < ms(25000), `${Date.now() - t0} ms`);
  const st = readState(env);
  const k = st.kernels.find((x) => x.name === 'py@proj');
  assert.equal(k.status, 'running');
  assert.equal(k.lang, 'py');
  assert.equal(k.cwd, proj);
  assert.ok(k.pid > 0 && k.port > 0);
  assert.deepEqual(st.runtimes.find((x) => x.name === 'py@proj'), { name: 'py@proj', lang: 'py', cwd: proj, venv: '' });
  // The server outlived the `rat start` that made it, and answers.
  assert.deepEqual(serversOn(k.port), [k.pid]);
  const r = await c.run('x = 41\nprint(x + 1)');
  assert.equal(r.text, '42');
  // Items begin with "- name:" and continuation lines are indented 6: its
  // regexes need both.
  const text = readFileSync(stateFilePath(env), 'utf8');
  assert.match(text, /^kernels:\n {4}- name: py@proj\n {6}lang: py\n {6}port: \d+\n {6}pid: \d+\n/);
  // rat-py's own keys, the server's identity (its signals need it), last in the item.
  assert.match(text, /\n {6}started: \S+\n {6}proc_start: \d+\n {6}proc_dev: \d+\n {6}proc_ino: \d+\n/);
  // Again: already running, same port.
  const again = await cli.start('py@proj', '/');
  assert.equal(again.code, 0);
  assert.match(again.stderr, /^py@proj already running on http:\/\/127\.0\.0\.1:\d+\/mcp \(PID \d+\)$/m);
  assert.equal(again.parsed.port, k.port);
});

test('rat cancel NAME from any folder interrupts a run started by another client', async () => {
  const c = await cli.getClient('py@proj', proj, 'py');
  const seen = [];
  const pending = c.run('import time\nprint("start", flush=True)\ntime.sleep(60)', (t) => seen.push(t));
  for (let i = 0; !seen.length && i < ms(200); i++) await sleep(50);
  const r = await cli.cancel('py@proj');
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^CANCELLED exec #\d+/);
  const res = await pending;
  assert.equal(res.isError, true);
  assert.match(res.status, /^✗ /);
  assert.match(res.text, /KeyboardInterrupt/);
});

test('rat NAME: a REPL on the same kernel; what it makes is in the Variables view, and the other way round', async () => {
  const c = await cli.getClient('py@proj', proj, 'py');
  await c.run('gui_var = "made in the GUI"');
  const repl = spawn(bin, ['py@proj'], { cwd: proj, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '', err = '';
  repl.stdout.on('data', (d) => { out += d; });
  repl.stderr.on('data', (d) => { err += d; });
  repl.stdin.write('made_in_repl = 6 * 7\nprint(gui_var)\nname = input("Who? ")\nAda\nprint("hi", name)\n');
  repl.stdin.write('for i in range(2):\n    print("line", i)\n\n');
  repl.stdin.end();
  const code = await new Promise((resolve) => repl.on('exit', resolve));
  assert.equal(code, 0, err);
  assert.match(out, /^made in the GUI$/m);
  assert.match(out, /Who\? hi Ada$/m);
  assert.match(out, /^line 0\nline 1$/m);
  const rows = parseOverview(await c.look());
  assert.deepEqual(rows.find((r) => r.name === 'made_in_repl'), { name: 'made_in_repl', kind: 'int', preview: '42' });
});

/**
 * Runs `rat py@proj` on a terminal (a pty) and the Python steps given, which
 * have wait_for(pattern, n=1) (until the output holds pattern n times) and
 * finish(nudge) (until the REPL exits; with nudge, a Ctrl-D every 2 s, as
 * one typed as the prompt appears can be lost on a slow build). Returns
 * {status, stdout, stderr}: status 0 when the REPL exited with 0, stdout
 * what it wrote.
 */
function onPty(steps) {
  const prelude = `
import os, pty, select, sys, time
limit = float(sys.argv[2])
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], 'py@proj'])
out = b''
def pump():
    global out
    if select.select([fd], [], [], 0.2)[0]:
        try:
            out += os.read(fd, 4096)
        except OSError:
            return False
    return True
def wait_for(pat, n=1):
    end = time.time() + limit
    while out.count(pat) < n and time.time() < end and pump():
        pass
def finish(nudge=False):
    end = time.time() + limit
    again = time.time() + 2
    status = -1
    while time.time() < end:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        if nudge and time.time() > again:
            os.write(fd, b'\\x04')
            again = time.time() + 2
        pump()
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    sys.stdout.write(out.decode('utf-8', 'replace'))
    sys.exit(0 if status == 0 else 1)
`;
  // Not spawnSync: that would hold the test runner's report of the tests
  // before (a CI log of a hang then showed the wrong test). The REPL is not
  // under RAT_PY_WRAPPER: its bound stays under ctest's 300 s.
  const limit = Math.min(ms(60000), 120000) / 1000;
  return new Promise((resolve) => {
    const p = spawn('python3', ['-c', prelude + steps, bin, String(limit)], { cwd: proj, env });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

// libedit opens the history file with a blocking fopen, to load it and
// again to save it: a FIFO there would hang the REPL before its first
// prompt. On a terminal (a pty: the editor runs only there).
test('rat NAME on a terminal with a FIFO where its history file goes: the REPL runs, without history', async () => {
  const hist = path.join(path.dirname(stateFilePath(env)), 'history');
  mkdirSync(hist, { recursive: true, mode: 0o700 });
  const fifo = path.join(hist, 'py@proj');
  assert.equal(spawnSync('mkfifo', ['-m', '600', fifo]).status, 0);
  const drive = `
wait_for(b'py@proj> ')
os.write(fd, b'print(6 * 7)\\n')
wait_for(b'\\n42')
wait_for(b'py@proj> ', 2)  # a key typed before the prompt may be flushed
os.write(fd, b'\\x04')
finish(nudge=True)
`;
  try {
    const r = await onPty(drive);
    assert.equal(r.status, 0, `the REPL hung or failed:\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /\r?\n42\r?\n/);
    assert.ok(r.stdout.includes(`${fifo} is not a regular file: no history`), r.stdout);
  } finally {
    rmSync(fifo, { force: true });
  }
});

// The terminal is cooked while a run goes on (and as libedit writes its
// prompt, before it makes the terminal raw): a Ctrl-D typed then is the
// tty's end-of-file, which reaches libedit as a NUL. Once, the REPL then
// kept an unseen NUL in its line and beeped at every later Ctrl-D.
test('rat NAME on a terminal: a Ctrl-D typed while a run goes on leaves the REPL at the next prompt', async () => {
  const r = await onPty(`
wait_for(b'py@proj> ')
os.write(fd, b'import time; print("sta" + "rted", flush=True); time.sleep(1); print("e" + "nd")\\n')
wait_for(b'started')  # the output, not the echo of the line
os.write(fd, b'\\x04')
finish()
`);
  assert.equal(r.status, 0, `the REPL did not leave:\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /\r?\nend\r?\n/);
  assert.doesNotMatch(r.stdout, /\x07/); // no beep
});

// What a NUL typed at the prompt is otherwise: Ctrl-Space (libedit's
// em-set-mark), which must not leave the REPL.
test('rat NAME on a terminal: Ctrl-Space (a NUL) at an empty prompt does not leave the REPL', async () => {
  const r = await onPty(`
wait_for(b'py@proj> ')
time.sleep(0.3)
os.write(fd, b'\\x00')
time.sleep(0.3)
os.write(fd, b'print(6 * 7)\\n')
wait_for(b'\\n42')
finish(nudge=True)
`);
  assert.equal(r.status, 0, `the REPL did not leave:\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /\r?\n42\r?\n/, r.stdout);
});

test('Ctrl-C in the REPL interrupts the running code (ctl cancel), and the REPL goes on', async () => {
  const repl = spawn(bin, ['py@proj'], { cwd: proj, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '', err = '';
  repl.stdout.on('data', (d) => { out += d; });
  repl.stderr.on('data', (d) => { err += d; });
  repl.stdin.write('import time\nprint("sleeping", flush=True); time.sleep(60)\n');
  for (let i = 0; !/sleeping/.test(out) && i < ms(200); i++) await sleep(50);
  repl.kill('SIGINT');
  for (let i = 0; !/KeyboardInterrupt/.test(err) && i < ms(200); i++) await sleep(50);
  assert.match(err, /KeyboardInterrupt/);
  repl.stdin.end('print("after")\n');
  assert.equal(await new Promise((resolve) => repl.on('exit', resolve)), 0);
  assert.match(out, /^after$/m);
});

test('restart: a fresh kernel (variables gone), and a later start says already running', async () => {
  const before = readState(env).kernels.find((k) => k.name === 'py@proj');
  const r = await cli.restart('py@proj', proj);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /^py@proj restarted on http:\/\/127\.0\.0\.1:\d+\/mcp \(PID \d+\)/m);
  assert.deepEqual(serversOn(before.port).filter((p) => p === before.pid), [], 'the old server is gone');
  cli.pool.clear(); // the extension disposes its clients on restart
  const c = await cli.getClient('py@proj', proj, 'py');
  assert.deepEqual(parseOverview(await c.look()), []);
  const again = await cli.start('py@proj', proj);
  assert.match(again.stderr, /already running/);
});

test('concurrent starts of one name make one server', async () => {
  const name = 'py-nb-notes-1a2b3c';
  await cli.add(name, 'py', proj);
  const rs = await Promise.all([1, 2, 3].map(() => cli.start(name, proj)));
  const ports = new Set(rs.map((r) => r.parsed?.port));
  assert.equal(ports.size, 1, rs.map((r) => r.stderr).join('\n'));
  const port = [...ports][0];
  assert.equal(serversOn(port).length, 1);
  assert.equal(rs.filter((r) => /started on/.test(r.stderr)).length, 1);
  // stop: its server goes; the entry stays, stopped (port 0).
  const s = await cli.stop(name);
  assert.equal(s.code, 0);
  assert.match(s.stderr, new RegExp(`^${name} stopped\\.$`, 'm'));
  assert.equal(await listening(port), false);
  assert.deepEqual(serversOn(port), []);
  const k = readState(env).kernels.find((x) => x.name === name);
  assert.equal(k.status, 'stopped');
  assert.equal(k.port, 0);
  // remove: no terminal, no --yes: refused, saying what to do; --yes removes.
  const no = await cli.remove(name);
  assert.equal(no.code, 1);
  assert.match(no.stderr, /rerun with --yes/);
  assert.ok(readState(env).runtimes.some((x) => x.name === name));
  const yes = await cli.exec(['remove', name, '--yes']);
  assert.equal(yes.code, 0, yes.stderr);
  const st = readState(env);
  assert.ok(!st.kernels.some((x) => x.name === name) && !st.runtimes.some((x) => x.name === name));
});

test('resolve --json, install, version and --version', async () => {
  const r = await cli.resolve('py', path.join(proj, '.git'), true);
  assert.deepEqual(r, { name: 'py@proj', lang: 'py', cwd: proj, is_new: false });
  const fresh = await cli.resolve('py', path.join(root, 'home'));
  assert.equal(fresh.name, 'py@home');
  assert.equal(fresh.is_new, true);
  const inst = await cli.install('py', proj);
  assert.equal(inst.code, 0);
  assert.match(inst.stdout, /^py@proj is ready: rat py ready$/m);
  for (const args of [['version'], ['--version']]) {
    const v = await cli.exec(args);
    assert.equal(v.code, 0);
    assert.match(v.stdout, /^rat \(rat-py \d+\.\d+\.\d+\)$/m);
  }
  const bad = await cli.start('pi', proj);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /^rat: rat-py serves Jupyter kernels for py, r, jl, sh and js; `pi` is a runtime of the Go rat CLI/m);
});

test('a state.yaml the Go CLI wrote is read and kept: its runtimes start, its entries stay', async () => {
  const cfg = path.join(root, 'gocfg');
  mkdirSync(path.join(cfg, 'rat'), { recursive: true });
  const goEnv = { ...env, XDG_CONFIG_HOME: cfg };
  // go-yaml's layout (tests/unit/fixtures/state_go.yaml has its bytes).
  writeFileSync(path.join(cfg, 'rat', 'state.yaml'), [
    'kernels:',
    '    - name: sh@old',
    '      lang: sh',
    '      port: 0',
    '      pid: 0',
    `      cwd: ${proj}`,
    '      status: stopped',
    '      started: 2026-01-01T09:00:00Z',
    '      stopped: 2026-01-01T09:30:00Z',
    '    - name: py@dead',
    '      lang: py',
    '      port: 8799',
    '      pid: 999999',
    `      cwd: ${proj}`,
    '      status: running',
    '      started: 2026-01-01T10:00:00.123456789+01:00',
    'runtimes:',
    '    - name: py-go',
    '      lang: py',
    `      cwd: '${proj}'`,
    '      options:',
    '        model: claude',
    '      env:',
    '        TOKEN: \'a #b\'',
    '',
  ].join('\n'), { mode: 0o600 });
  const goCli = new RatCliLike(bin, goEnv);
  const s = await goCli.start('py-go', '/');
  assert.ok(s.parsed, s.stderr);
  const c = await goCli.getClient('py-go', proj, 'py');
  assert.equal((await c.run('import os\nprint(os.environ["TOKEN"], os.getcwd())')).text, `a #b ${proj}`);
  const st = readState(goEnv);
  assert.deepEqual(st.kernels.map((k) => [k.name, k.status]), [['sh@old', 'stopped'], ['py@dead', 'stopped'], ['py-go', 'running']]);
  assert.equal(st.kernels.find((k) => k.name === 'py@dead').port, 0, 'a dead pid is marked stopped');
  const text = readFileSync(path.join(cfg, 'rat', 'state.yaml'), 'utf8');
  assert.match(text, /\n {6}options:\n {8}model: claude\n {6}env:\n {8}TOKEN: 'a #b'\n/, 'the Go CLI\'s fields are kept');
  assert.match(text, /\n {6}started: 2026-01-01T09:00:00Z\n {6}stopped: 2026-01-01T09:30:00Z\n/);
  assert.equal((await goCli.stop('py-go')).code, 0);
});

test('rat stop signals only a server it started: a pid that is another process is left alone, and says why', async () => {
  const cfg = path.join(root, 'killcfg');
  mkdirSync(path.join(cfg, 'rat'), { recursive: true });
  const kEnv = { ...env, XDG_CONFIG_HOME: cfg };
  // Not runtimes: a sleep, and shells whose argv has `--port N` as a
  // server's has. Each leads a group of its own (detached), so the test
  // also sees a group kill.
  const spawnAlive = (args) => spawn(args[0], args.slice(1), { detached: true, stdio: 'ignore' });
  const bystanders = {
    port0: spawnAlive(['sleep', '600']),
    noid: spawnAlive(['/bin/sh', '-c', 'sleep 600; :', 'sh', '--http', '--port', '8790']),
    forged: spawnAlive(['/bin/sh', '-c', 'sleep 600; :', 'sh', '--http', '--port', '8791']),
  };
  try {
    const entry = (name, port, pid, extra = []) => [
      `    - name: ${name}`, '      lang: py', `      port: ${port}`, `      pid: ${pid}`, `      cwd: ${proj}`,
      '      status: running', '      started: 2026-01-01T10:00:00Z', ...extra];
    const write = () => writeFileSync(path.join(cfg, 'rat', 'state.yaml'), ['kernels:',
      ...entry('port0', 0, bystanders.port0.pid),
      ...entry('noid', 8790, bystanders.noid.pid),
      // An identity that is not this process's (another start time).
      ...entry('forged', 8791, bystanders.forged.pid, ['      proc_start: 12345', '      proc_dev: 1', '      proc_ino: 1']),
      ''].join('\n'), { mode: 0o600 });
    const kcli = new RatCliLike(bin, kEnv);
    write();
    // Port 0, no identity: nothing shows it is a server; marked stopped, not signalled.
    const a = await kcli.stop('port0');
    assert.equal(a.code, 1);
    assert.match(a.stderr, new RegExp(`port0: PID ${bystanders.port0.pid} is named with no port and no identity`));
    assert.match(a.stderr, /kernel "port0" is not running/);
    // Argv like a server's, no identity recorded: listed, never signalled; the message says what to do.
    write();
    const b = await kcli.stop('noid');
    assert.equal(b.code, 1);
    assert.match(b.stderr, new RegExp(`not stopping noid: its entry records no identity for PID ${bystanders.noid.pid}`));
    assert.match(b.stderr, new RegExp(`kill ${bystanders.noid.pid}`));
    assert.equal(readState(kEnv).kernels.find((k) => k.name === 'noid').status, 'running', 'its entry is kept');
    // An identity recorded that is not this process's: the pid is another process now.
    write();
    const c = await kcli.stop('forged');
    assert.equal(c.code, 1);
    assert.match(c.stderr, new RegExp(`forged: PID ${bystanders.forged.pid} is another process now \\(its start time differs`));
    // --all and remove leave them too.
    write();
    const all = await kcli.exec(['stop', '--all']);
    assert.equal(all.code, 1);
    assert.match(all.stderr, /not stopping noid/);
    const rm = await kcli.exec(['remove', 'noid', '--yes']);
    assert.equal(rm.code, 1);
    assert.ok(readState(kEnv).kernels.some((k) => k.name === 'noid'), 'an entry whose process cannot be stopped stays');
    await sleep(200);
    for (const [name, p] of Object.entries(bystanders)) {
      assert.equal(p.exitCode, null, `${name}: exited ${p.exitCode}`);
      assert.equal(p.signalCode, null, `${name}: killed by ${p.signalCode}`);
    }
  } finally {
    for (const p of Object.values(bystanders)) { try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ } }
  }
});

test('a folder whose name holds YAML line breaks (LS, PS, NEL) or controls comes back from state.yaml as it went in', async () => {
  const cfg = path.join(root, 'yamlcfg');
  const yEnv = { ...env, XDG_CONFIG_HOME: cfg };
  const ycli = new RatCliLike(bin, yEnv);
  const dirs = ['a\u2028b', 'c\u2029d', 'e\u0085f', 'g\u0001h', ' lead: #x '].map((n, i) => {
    const d = path.join(root, `y${i}`, n);
    mkdirSync(d, { recursive: true });
    return d;
  });
  for (const [i, d] of dirs.entries()) {
    const r = await ycli.add(`y${i}`, 'sh', d);
    assert.equal(r.code, 0, r.stderr);
  }
  const st = await ycli.exec(['status', '--json']);
  assert.equal(st.code, 0, st.stderr);
  assert.doesNotMatch(st.stderr, /not a state file/);
  const rows = JSON.parse(st.stdout);
  assert.deepEqual(dirs.map((_, i) => rows.find((x) => x.name === `y${i}`)?.cwd), dirs);
  // vscode-rat's own parser reads them too (a double-quoted value is JSON).
  assert.deepEqual(dirs.map((_, i) => readState(yEnv).runtimes.find((x) => x.name === `y${i}`)?.cwd), dirs);
});
