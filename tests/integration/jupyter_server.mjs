// A Jupyter server for the --gateway tests (gateway.test.mjs,
// gateway_suites.mjs, lab.peer.mjs) on loopback with a token, a root dir and
// a runtime dir of its own (so rat-py cannot find a kernel's connection file
// locally and must use the gateway). Which server is a parameter, `kind`
// (default: $RAT_GATEWAY_KIND, else 'server'):
//  - 'server': Debian's python3-jupyter-server;
//  - 'eg': Jupyter Enterprise Gateway, from the venv tests/peers/setup.sh
//    makes (tests/peers.txt pins it) in $RAT_PEERS_DIR/eg;
//  - 'lab': JupyterLab 4's server, from $RAT_PEERS_DIR/lab.
// RAT_PEERS_DIR defaults to build/peers of the source tree.
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { until } from './lib.mjs';

const SRC = path.resolve(new URL('.', import.meta.url).pathname, '../..');
export const PEERS = process.env.RAT_PEERS_DIR || path.join(SRC, 'build/peers');
export const KIND = process.env.RAT_GATEWAY_KIND || 'server';
export const KIND_NAME = { server: 'Jupyter Server', eg: 'Enterprise Gateway', lab: 'JupyterLab' };

/**
 * The command, argv and environment that start a server of this kind on
 * port with token (Enterprise Gateway takes it from EG_AUTH_TOKEN, not the
 * command line), root dir dir and the runtime dir runtime.
 */
function serverCommand(kind, { port, token, dir, runtime, extra }) {
  const env = { ...process.env, JUPYTER_RUNTIME_DIR: runtime };
  if (kind === 'eg') {
    // EG's kernels are processes of its own here (its default process
    // proxy), of the kernelspec it finds: Debian's python3. Its own
    // environment has no KERNEL_USERNAME: the user must come from the
    // client's request, as with a gateway on another machine. list_kernels:
    // the tests look at what the gateway has (EG hides GET /api/kernels by
    // default; rat-py never asks for it).
    const own = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('KERNEL_')));
    return { command: path.join(PEERS, 'eg/bin/jupyter-enterprisegateway'),
      args: [`--port=${port}`, '--port_retries=0', '--ip=127.0.0.1', '--EnterpriseGatewayApp.list_kernels=True', ...extra],
      env: { ...own, EG_AUTH_TOKEN: token } };
  }
  const common = ['--allow-root', '--no-browser', `--port=${port}`, '--ServerApp.port_retries=0', '--ip=127.0.0.1',
    `--ServerApp.token=${token}`, `--ServerApp.root_dir=${dir}`, ...extra];
  if (kind === 'lab') {
    // Lab's kernel is its venv's ipykernel, as a Lab user's is: the tests'
    // JUPYTER_PATH (tests/isolation: /usr/share/jupyter, Debian's python3
    // first) is not Lab's.
    const { JUPYTER_PATH, ...own } = env;
    return { command: path.join(PEERS, 'lab/bin/jupyter-lab'), args: common, env: own };
  }
  if (kind === 'server') return { command: '/usr/bin/python3', args: ['-m', 'jupyter_server', ...common], env };
  throw new Error(`no such server kind '${kind}' (server, eg, lab)`);
}

/** A loopback TCP port free at the time of asking. */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

/**
 * A TCP proxy in front of a loopback port, for the tests that cut a
 * client's connections to a server (the gateway tests, the soak): url is
 * its address, count() the connections open through it, cut() drops them
 * all (new ones still pass), close() stops it.
 */
export async function tcpProxy(port) {
  const socks = new Set();
  const srv = net.createServer((c) => {
    const u = net.connect(port, '127.0.0.1');
    socks.add(c); socks.add(u);
    c.pipe(u); u.pipe(c);
    const end = () => { c.destroy(); u.destroy(); socks.delete(c); socks.delete(u); };
    c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    count: () => socks.size,
    cut() { for (const s of socks) s.destroy(); socks.clear(); },
    close() { this.cut(); srv.close(); },
  };
}

/**
 * Starts a server of kind with the token and extra options; resolves once
 * ready(url) is true (default: GET /api/kernelspecs with the token answers
 * 200; an https caller gives its own), within 60 s. stop() ends it and its
 * kernels; restart() kills it (SIGKILL: its kernels die with it) and starts
 * a new one on the same port, with no kernels.
 */
export async function startJupyterServer({ token, extra = [], scheme = 'http', ready, kind = KIND } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'rat-gw-'));
  // Its log goes to a file: a pipe would be inherited by its kernels and
  // keep this process waiting for them.
  const logFile = path.join(dir, 'server.log');
  // A free port can be taken by another process before the server binds it;
  // Jupyter would then move to the next port and we would wait on the wrong
  // one. With port_retries=0 it exits instead, and we start it again on a
  // port asked for anew.
  let proc, port, url;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    const c = serverCommand(kind, { port, token, dir, runtime: path.join(dir, 'runtime'), extra });
    proc = spawn(c.command, c.args, { env: c.env, stdio: ['ignore', 'ignore', openSync(logFile, 'a')], detached: true });
    proc.unref();
    let exited = false;
    proc.on('exit', () => { exited = true; });
    url = `${scheme}://127.0.0.1:${port}`;
    const answers = ready ?? (async (u) => (await fetch(`${u}/api/kernelspecs`, { headers: { Authorization: `token ${token}` } })
      .catch(() => ({ status: 0 }))).status === 200);
    await until(async () => exited || answers(url), 60_000, `the ${KIND_NAME[kind]}`);
    if (!exited) break;
    if (attempt === 5) throw new Error(`the ${KIND_NAME[kind]} exited 5 times at start; its log:\n${readFileSync(logFile, 'utf8')}`);
  }
  const gone = (pid) => { try { process.kill(-pid, 0); return false; } catch { return true; } };
  return {
    url, port, dir, proc, kind, log: () => readFileSync(logFile, 'utf8'),
    /** SIGKILL (kernels die too), then a new server on the same port, with no kernels; resolves once it answers. */
    async restart() {
      try { process.kill(-this.proc.pid, 'SIGKILL'); } catch { /* gone */ }
      await until(() => gone(this.proc.pid), 10_000, 'the server gone');
      const c = serverCommand(kind, { port, token, dir, runtime: path.join(dir, 'runtime2'), extra });
      this.proc = spawn(c.command, c.args, { env: c.env, stdio: ['ignore', 'ignore', openSync(logFile, 'a')], detached: true });
      this.proc.unref();
      const answers = ready ?? (async (u) => (await fetch(`${u}/api/kernelspecs`, { headers: { Authorization: `token ${token}` } })
        .catch(() => ({ status: 0 }))).status === 200);
      await until(() => answers(url), 60_000, 'the server back');
    },
    /** SIGTERM first: Jupyter Server then shuts its kernels down. */
    async stop() {
      try { process.kill(-this.proc.pid, 'SIGTERM'); } catch { /* gone */ }
      await until(() => gone(this.proc.pid), 10_000, 'the server to stop').catch(() => { try { process.kill(-this.proc.pid, 'SIGKILL'); } catch { /* gone */ } });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
