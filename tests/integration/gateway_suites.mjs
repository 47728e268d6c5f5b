#!/usr/bin/env node
// Issue 17's "the same conformance and hostile-input suites pass with
// --gateway", as one ctest (integration.gateway_suites): starts a Jupyter
// Server with a token on loopback (jupyter_server.mjs, iopub rate limits as
// shipped) and runs the existing suites unchanged with JUPYTER_GATEWAY_URL
// and JUPYTER_GATEWAY_AUTH_TOKEN set, which make every rat-py they start use
// that server as --gateway would:
//  1. integration/hostile.test.mjs (stdio) and hostile_http.test.mjs (--http);
//  2. conformance/run.mjs with CONFORMANCE_RAT_ONLY=1: its scenarios against
//     rat-py --http (the conformance_server runs have no rat-py in them).
// The suites need no kernel output, but each rat-py starts its kernel at
// once; so that a rat-py which quietly ran a local kernel cannot pass, each
// step must also have started a kernel on this server (its log says
// "Kernel started"). Exits 0 when every step passed. Env: as for the
// integration tests (RAT_PY, RAT_PY_WRAPPER, ...) and run.mjs.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { startJupyterServer, KIND } from './jupyter_server.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const tests = path.join(here, '..');
const TOKEN = 'gw-suites-token';

const server = await startJupyterServer({ token: TOKEN });
const stopOnSignal = async () => { await server.stop(); process.exit(1); };
process.on('SIGTERM', stopOnSignal);
process.on('SIGINT', stopOnSignal);
// With RAT_GATEWAY_KIND=eg the server is Enterprise Gateway, which starts a
// kernel only for a user named in KERNEL_USERNAME (rat-py sends its own) and
// refuses root (gateway.test.mjs says more).
const env = { ...process.env, JUPYTER_GATEWAY_URL: server.url, JUPYTER_GATEWAY_AUTH_TOKEN: TOKEN,
  ...(KIND === 'eg' && !process.env.KERNEL_USERNAME ? { KERNEL_USERNAME: 'rat-test' } : {}) };
const started = () => (server.log().match(/Kernel started/g) ?? []).length;

/** Runs node with args in tests/ (output through); true when it exits 0 and started a kernel here. */
function step(label, args, extraEnv = {}) {
  const before = started();
  const t0 = Date.now();
  return new Promise((resolve) => {
    const p = spawn(process.execPath, args, { cwd: tests, env: { ...env, ...extraEnv }, stdio: ['ignore', 'inherit', 'inherit'] });
    p.on('exit', (code, signal) => {
      const kernels = started() - before;
      const ok = code === 0 && kernels > 0;
      console.log(`${ok ? 'PASS' : 'FAIL'} ${label} with --gateway ${server.url}: exit ${code ?? signal}, ` +
        `${kernels} kernel(s) started on the server, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      resolve(ok);
    });
  });
}

let ok = true;
try {
  ok = await step('hostile (stdio)', ['--test', '--test-reporter=spec', 'integration/hostile.test.mjs']) && ok;
  ok = await step('hostile (HTTP)', ['--test', '--test-reporter=spec', 'integration/hostile_http.test.mjs']) && ok;
  ok = await step('conformance vs rat-py --http', ['conformance/run.mjs'], { CONFORMANCE_RAT_ONLY: '1' }) && ok;
} finally {
  if (!ok) console.log(`the Jupyter Server's log (tail):\n${server.log().slice(-3000)}`);
  await server.stop();
}
console.log(ok ? 'gateway suites: all passed' : 'gateway suites: FAILURES');
process.exit(ok ? 0 : 1);
