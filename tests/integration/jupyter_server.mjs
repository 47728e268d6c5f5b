// A Jupyter Server for the --gateway tests (gateway.test.mjs,
// gateway_suites.mjs): Debian's python3-jupyter-server on loopback with a
// token, a root dir and a runtime dir of its own (so rat-py cannot find a
// kernel's connection file locally and must use the gateway).
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { until } from './lib.mjs';

/** A loopback TCP port free at the time of asking. */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

/**
 * Starts a server with the token and extra options; resolves once ready(url)
 * is true (default: GET /api/kernelspecs with the token answers 200; an
 * https caller gives its own), within 60 s. stop() ends it and its kernels.
 */
export async function startJupyterServer({ token, extra = [], scheme = 'http', ready } = {}) {
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
    proc = spawn('/usr/bin/python3', ['-m', 'jupyter_server', '--allow-root', '--no-browser', `--port=${port}`,
      '--ServerApp.port_retries=0', '--ip=127.0.0.1', `--ServerApp.token=${token}`, `--ServerApp.root_dir=${dir}`, ...extra],
    { env: { ...process.env, JUPYTER_RUNTIME_DIR: path.join(dir, 'runtime') }, stdio: ['ignore', 'ignore', openSync(logFile, 'a')], detached: true });
    proc.unref();
    let exited = false;
    proc.on('exit', () => { exited = true; });
    url = `${scheme}://127.0.0.1:${port}`;
    const answers = ready ?? (async (u) => (await fetch(`${u}/api/kernelspecs`, { headers: { Authorization: `token ${token}` } })
      .catch(() => ({ status: 0 }))).status === 200);
    await until(async () => exited || answers(url), 60_000, 'the Jupyter Server');
    if (!exited) break;
    if (attempt === 5) throw new Error(`the Jupyter Server exited 5 times at start; its log:\n${readFileSync(logFile, 'utf8')}`);
  }
  return {
    url, port, dir, proc, log: () => readFileSync(logFile, 'utf8'),
    /** SIGTERM first: Jupyter Server then shuts its kernels down. */
    async stop() {
      const gone = () => { try { process.kill(-this.proc.pid, 0); return false; } catch { return true; } };
      try { process.kill(-this.proc.pid, 'SIGTERM'); } catch { /* gone */ }
      await until(gone, 10_000, 'the server to stop').catch(() => { try { process.kill(-this.proc.pid, 'SIGKILL'); } catch { /* gone */ } });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
