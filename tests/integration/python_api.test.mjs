// The Python binding (python/rat_py, issue 18): the spec's "Programmatic"
// lines, run by Debian's /usr/bin/python3 against the librat of this build
// (PYTHONPATH at python/, LD_LIBRARY_PATH at the build), serve the official
// SDK client over stdio and Streamable HTTP; stop() from another thread,
// SIGINT and SIGTERM end the run cleanly with the kernel gone; bad options
// are a TypeError or the library's message; `python3 -m rat_py` is rat-py.
// Skipped in the sanitizer build (an instrumented librat cannot be loaded
// by a plain python3) and under RAT_PY_WRAPPER (it wraps rat-py, not python3).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { RAT, WRAPPED, alive, call, connectHttp, ctl, kernelPid, run, scratch, until } from './lib.mjs';

const PY = '/usr/bin/python3';
const BUILD = process.env.RAT_BUILD_DIR;
const SRC = path.resolve(new URL('.', import.meta.url).pathname, '../..');
const SKIP = process.env.RAT_PY_SANITIZED ? 'sanitizer build' : WRAPPED ? 'RAT_PY_WRAPPER wraps rat-py only'
  : !BUILD ? 'RAT_BUILD_DIR not set' : false;
// No bytecode written into the source tree.
const ENV = { ...process.env, PYTHONPATH: path.join(SRC, 'python'), LD_LIBRARY_PATH: BUILD ?? '', RAT_PY: RAT, PYTHONDONTWRITEBYTECODE: '1' };

const SPEC = 'from rat_py import create_mcp_server\n\nmcp = create_mcp_server()\nmcp.run()  # STDIO\n';

/** The SDK's stdio client on `python3 -c code`, in a scratch directory. */
async function connectPython(code) {
  const work = scratch();
  const transport = new StdioClientTransport({ command: PY, args: ['-c', code], cwd: work.dir, env: ENV, stderr: 'pipe' });
  let stderr = '';
  transport.stderr.on('data', (d) => { stderr += d; });
  const client = new Client({ name: 'rat-py-python-tests', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return { client, transport, work, dir: work.dir, stderr: () => stderr };
}

/** python3 -c code with pipes; resolves the URL rat-py prints on stderr. */
function spawnPython(code, cwd) {
  const proc = spawn(PY, ['-c', code], { cwd, env: ENV, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
  const url = until(() => /serving MCP at (http:\/\/\S+\/mcp)/.exec(stderr), 30000, `the URL; stderr: ${stderr}`)
    .then(() => /serving MCP at (http:\/\/\S+\/mcp)/.exec(stderr)[1]);
  return { proc, exited, url, stderr: () => stderr, stdout: () => stdout };
}

async function gone(pid, what) {
  await until(() => !alive(pid), 10000, `${what}: kernel ${pid} to exit`);
}

test('the spec\'s three lines serve run/look/ctl over stdio; EOF ends it with the kernel gone', { skip: SKIP }, async () => {
  const h = await connectPython(SPEC);
  try {
    assert.equal(h.client.getServerVersion().name, 'rat-py');
    const r = await run(h, 'x = 6 * 7\nprint(x)');
    assert.match(r.text, /^42\n/);
    const l = await call(h, 'look', { at: 'x' });
    assert.match(l.text, /x: int = 42/);
    const st = await ctl(h, 'status');
    assert.match(st.text, /idle|busy/);
    const pid = await kernelPid(h);
    assert.ok(alive(pid));
    const proc = h.transport._process;
    const exited = new Promise((res) => proc.on('exit', (code, signal) => res({ code, signal })));
    await h.client.close();
    const ex = await exited;
    assert.equal(ex.code, 0, h.stderr());
    await gone(pid, 'after EOF');
  } finally {
    h.work.cleanup();
  }
});

for (const [sig, withThread] of [['SIGINT', false], ['SIGTERM', false], ['SIGINT', true], ['SIGTERM', true]]) {
  // A signal sent to the process is read by the run (signalfd) or, when
  // another thread does not block it, may be caught by that thread instead;
  // the second form makes that certain (the thread signals itself when the
  // test creates the file "poke"): it must still reach the run, through
  // Python's wakeup descriptor.
  test(`${sig}${withThread ? ' (caught by another thread)' : ''}: run() returns, clean exit, no kernel left`, { skip: SKIP }, async () => {
    const poke = `import os, signal, threading, time
def poke():
    while not os.path.exists("poke"):
        time.sleep(0.02)
    signal.pthread_kill(threading.get_ident(), signal.${sig})
threading.Thread(target=poke, daemon=True).start()
`;
    const code = (withThread ? poke : '')
      + 'from rat_py import create_mcp_server\nmcp = create_mcp_server()\nmcp.run()\nprint("run returned", file=__import__("sys").stderr)\n';
    const h = await connectPython(code);
    try {
      await run(h, 'y = 1');
      const pid = await kernelPid(h);
      const proc = h.transport._process;
      const exited = new Promise((res) => proc.on('exit', (c, s) => res({ code: c, signal: s })));
      if (withThread) writeFileSync(path.join(h.dir, 'poke'), '');
      else proc.kill(sig);
      const ex = await Promise.race([exited, new Promise((res) => setTimeout(() => res('hang'), 15000))]);
      assert.notEqual(ex, 'hang', `python did not exit on ${sig}; stderr: ${h.stderr()}`);
      assert.deepEqual(ex, { code: 0, signal: null }, h.stderr());
      assert.match(h.stderr(), /run returned/);
      assert.doesNotMatch(h.stderr(), /Traceback|KeyboardInterrupt/);
      await gone(pid, sig);
    } finally {
      await h.client.close().catch(() => {});
      h.work.cleanup();
    }
  });
}

test('run(transport="http") serves the SDK\'s Streamable HTTP client; stop() from another thread ends it', { skip: SKIP }, async () => {
  const work = scratch();
  // The second thread calls stop() when the test writes a line to stdin.
  const code = [
    'import sys, threading',
    'from rat_py import create_mcp_server',
    `mcp = create_mcp_server(cwd=${JSON.stringify(work.dir)}, token="not-this-one")`,
    'threading.Thread(target=lambda: (sys.stdin.readline(), mcp.stop()), daemon=True).start()',
    'mcp.run(transport="http", host="127.0.0.1", port=0, token="s3cret")',
    'print("stopped", mcp.running)',
  ].join('\n');
  const p = spawnPython(code, work.dir);
  try {
    const url = await p.url;
    assert.match(p.stderr(), /bearer token required/);
    const h = await connectHttp(url, { headers: { Authorization: 'Bearer s3cret' } });
    const r = await run(h, 'import os\nz = 5\nprint(os.getcwd())');
    assert.equal(r.text.split('\n')[0], work.dir);
    assert.match((await call(h, 'look', {})).text, /\bz\b.*5/);
    const pid = await kernelPid(h);
    await h.close();
    p.proc.stdin.write('stop\n');
    const ex = await Promise.race([p.exited, new Promise((res) => setTimeout(() => res('hang'), 15000))]);
    assert.deepEqual(ex, { code: 0, signal: null }, p.stderr());
    assert.equal(p.stdout(), 'stopped False\n');
    await gone(pid, 'stop()');
  } finally {
    p.proc.kill('SIGKILL');
    work.cleanup();
  }
});

test('bad options: TypeError for unknown names and types, ValueError/RatError with the library\'s message', { skip: SKIP }, () => {
  const work = scratch();
  const code = `
import rat_py
def show(f):
    try:
        f()
        print("no error")
    except Exception as e:
        print(type(e).__name__ + ": " + str(e))
show(lambda: rat_py.create_mcp_server(kernal="python3"))
show(lambda: rat_py.create_mcp_server(port="8000"))
show(lambda: rat_py.create_mcp_server(spare="yes"))
show(lambda: rat_py.create_mcp_server(port=70000))
show(lambda: rat_py.create_mcp_server(python="/usr/bin/python3", venv="/tmp"))
show(lambda: rat_py.create_mcp_server(kernel="python3", kernelspec_dir="/tmp"))
show(lambda: rat_py.create_mcp_server(boot_timeout=10**12))
show(lambda: rat_py.create_mcp_server().run(transport="websocket"))
show(lambda: rat_py.create_mcp_server().run(port=1))
show(lambda: rat_py.create_mcp_server(cwd="/nonexistent/dir").run())
import socket
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen()
show(lambda: rat_py.create_mcp_server().run(transport="http", port=busy.getsockname()[1]))
# A stop() before run() is kept: the run ends as soon as it starts.
mcp = rat_py.create_mcp_server()
mcp.stop()
show(lambda: mcp.run(transport="http", port=0))
print("running:", mcp.running)
`;
  const r = spawnSync(PY, ['-c', code], { env: ENV, cwd: work.dir, encoding: 'utf8', timeout: 30000 });
  work.cleanup();
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().replace(/port \d+:/, 'port PORT:').split('\n'), [
    "TypeError: create_mcp_server() got unknown option(s) 'kernal'; the options are cwd, kernel, python, venv, kernelspec_dir, existing, "
      + 'allow_restart, spare, assets_dir, assets_max_mb, boot_timeout, log_level, host, port, token, allow_origins, insecure_no_token, '
      + 'gateway, gateway_token, gateway_ca, gateway_insecure, tls_cert, tls_key, unsent_max_mb, shell_timeout',
    'TypeError: port must be an int, not str',
    'TypeError: spare must be True or False, not str',
    'ValueError: --port (port) must be 0-65535 (or -1 for the default, 8000), not 70000',
    'ValueError: give either --python or --venv (python, venv), not both',
    'ValueError: --kernel (kernel) names an installed kernelspec, --kernelspec-dir (kernelspec_dir) gives rat-py\'s own; give one of them',
    'ValueError: --boot-timeout (boot_timeout_s) must be 1-3600 seconds (or 0 for the default, 60), not 1000000000000',
    'ValueError: transport must be "stdio" or "http", not \'websocket\'',
    'TypeError: port only apply to run(transport="http")',
    'RatError: --cwd /nonexistent/dir: not a directory',
    'RatError: cannot listen on 127.0.0.1 port PORT: Address already in use',
    'no error',
    'running: False',
  ]);
});

test('python3 -m rat_py is rat-py: --help, --version, exit statuses', { skip: SKIP }, () => {
  const help = spawnSync(PY, ['-m', 'rat_py', '--help'], { env: ENV, encoding: 'utf8' });
  const native = spawnSync(RAT, ['--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  assert.equal(help.stdout, native.stdout);
  assert.match(help.stdout, /^Usage: rat-py /);
  const ver = spawnSync(PY, ['-m', 'rat_py', '--version'], { env: ENV, encoding: 'utf8' });
  assert.equal(ver.stdout, spawnSync(RAT, ['--version'], { encoding: 'utf8' }).stdout);
  const bad = spawnSync(PY, ['-m', 'rat_py', '--bogus'], { env: ENV, encoding: 'utf8' });
  assert.equal(bad.status, 2);
});
