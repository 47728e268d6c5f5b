// Soak: rat-py driven the way real use drives it, over HTTP (several
// sessions) and stdio at once, checking invariants, not texts (issue 19):
// every call is answered within its wait plus a bound, the queue always
// drains, a final run works, RSS and descriptors stay flat, no kernel is
// left behind.
//
// The load: runs with output, looks (overview, at, completion), input()
// answered and abandoned, run-then-cancel at random offsets (0 ms, while
// queued, by ctl cancel and by notifications/cancelled), restarts, ctl wait
// and status, and HTTP clients that disconnect mid-run. A fixed seed makes
// the sequence of actions repeatable (the timing never is).
//
// RAT_SOAK_SECONDS sets the load's duration (default 45: the short version
// ctest runs); `scripts/soak` runs the long one (60 min). RAT_SOAK_SEED
// changes the seed. RAT_SOAK_FAULTS=1 (scripts/soak's default) adds the
// faults of issue 44: kernels killed with SIGKILL mid-run, and a fifth
// worker on a Jupyter Server kernel (--gateway, through a TCP proxy) whose
// connections are cut and whose server is killed and started again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { connect, connectHttp, startHttp, call, ms, WRAPPED } from './lib.mjs';
import { startJupyterServer, tcpProxy } from './jupyter_server.mjs';

const SECONDS = Number(process.env.RAT_SOAK_SECONDS || 45);
const SEED = Number(process.env.RAT_SOAK_SEED || 19);
const BOUND_MS = ms(20_000); // beyond a call's own wait: cancel (5 s), a restart's boot, a loaded machine
const HTTP_WORKERS = 3;
const FAULTS = process.env.RAT_SOAK_FAULTS === '1';
const GW_TOKEN = 'soak-gateway-token';

// mulberry32: a small seeded PRNG, one per worker.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (t) => new Promise((r) => setTimeout(r, t));

/**
 * A process's identity: its pid and its start time (field 22 of
 * /proc/PID/stat), so that a pid taken again by another process (an hour of
 * soak starts thousands of kernels: pids wrap) is not taken for a kernel
 * left behind. null when it is gone.
 */
function identity(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return `${pid}:${stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]}`;
  } catch { return null; }
}
const stillThere = (id) => identity(Number(id.split(':')[0])) === id;
const addKernel = (kernels, pid) => { const id = identity(pid); if (id) kernels.add(id); };

/** Adds to kernels every process whose parent is one of pids. */
function children(pids, kernels) {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (pids.includes(ppid)) addKernel(kernels, Number(d));
    } catch { /* gone meanwhile */ }
  }
}

function procStats(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  const fds = readdirSync(`/proc/${pid}/fd`).length;
  return { rss, fds };
}

/**
 * Every failed invariant, with enough context to understand it; each is
 * also printed when it happens (a long soak is watched as it runs).
 */
const problems = [];
function problem(x) {
  console.error(`soak problem at ${new Date().toISOString()}: ${x}`);
  problems.push(x);
}
const counts = {};

/**
 * One worker: a client (stdio or an HTTP session) and its own sequence of
 * actions until the deadline. h is what lib's call() takes; kernels collects
 * every kernel pid seen.
 */
async function worker(name, h, rand, deadline, kernels, extra = {}) {
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  // call() with the invariant: answered within its wait plus the bound.
  async function timed(tool, args, wait, opts = {}) {
    // A gateway kernel's restart is the server's to do: rat-py waits for it
    // up to its boot timeout (60 s), then says so.
    const limit = (wait ?? 25) * 1000 + BOUND_MS + (extra.gateway && tool === 'ctl' && args.op === 'restart' ? 60_000 : 0);
    const t0 = Date.now();
    let timer;
    const r = await Promise.race([
      call(h, tool, args, { timeout: limit + 5000, ...opts }),
      new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`${name}: ${tool} ${JSON.stringify(args)} not answered within ${limit} ms` +
        ((h.stderr ?? extra.stderr) ? `; rat-py's stderr (end):\n${(h.stderr ?? extra.stderr)().slice(-2000)}` : ''))), limit); }),
    ]).finally(() => clearTimeout(timer));
    counts[tool] = (counts[tool] || 0) + 1;
    if (Date.now() - t0 > limit) problem(`${name}: ${tool} took ${Date.now() - t0} ms`);
    return r;
  }
  async function runCode(code, wait) {
    const r = await timed('run', { code, wait }, wait);
    if (/^INPUT PENDING/.test(r.text) || /INPUT REQUESTED/.test(r.text)) {
      // Someone's prompt blocks the kernel (maybe one abandoned): stop it.
      await timed('ctl', { op: 'cancel' }, 0);
    }
    return r;
  }
  const actions = [
    async function output() {
      const n = 1 + Math.floor(rand() * 30);
      const r = await runCode(`import time\nfor i in range(${n}):\n    print('${name}', i, flush=True)\n    time.sleep(${(rand() * 0.02).toFixed(3)})\nv_${name} = ${n}`, pick([0, 0.2, 1, 5]));
      // A true result: a run that says it finished (✓) printed every line,
      // in order, once.
      // IPython's own "ERROR! Session/line number was not unique in
      // database. History logging moved to new session N", printed by its
      // history thread when the kernels that share a history file (all of
      // the soak's, SIGKILLed by the hundred) collide, is true output too;
      // its pieces land between the words of the run's own prints, so such
      // a run is counted, not compared.
      if (/History logging moved to new session/.test(r.text)) {
        counts.ipythonHistory = (counts.ipythonHistory || 0) + 1;
        return;
      }
      if (/^✓ /m.test(r.text)) {
        // Lines the kernel itself prints meanwhile stay (rat-py's "[kernel
        // died ...]"): the workers' lines are compared.
        const lines = r.text.split('\n').filter((l) => /^(stdio|http\d|gateway) \d+$/.test(l));
        const want = Array.from({ length: n }, (_, i) => `${name} ${i}`);
        if (lines.join('\n') !== want.join('\n'))
          problem(`${name} output: finished, but not the ${n} lines printed: ${JSON.stringify(r.text.slice(0, 600))}`);
      }
    },
    async function error() { await runCode('1/0', 5); },
    async function lookOverview() { await timed('look', {}, 0); },
    async function lookAt() { await timed('look', { at: pick([`v_${name}`, 'math.sqrt', 'nothing_here', 'd.k.0']) }, 0); },
    async function complete() { await timed('look', { code: pick(['pri', 'import ma', 'v_']), cursor: 3 }, 0); },
    async function runThenCancel() {
      await timed('run', { code: `import time; time.sleep(${pick([0.001, 0.5, 3])})`, wait: 0 }, 0);
      const offset = pick([0, 0, 1, 5, 20, 50]);
      if (offset) await sleep(offset);
      await timed('ctl', { op: 'cancel' }, 0);
    },
    // A cancel that lands as a short run ends: where ipykernel used to drop
    // the request (issue 19's wedge), so it is tried often.
    async function cancelAtTheEnd() {
      for (let i = 0; i < 4; i++) {
        await timed('run', { code: 'import time; time.sleep(0.02)', wait: 0 }, 0);
        await sleep(Math.floor(rand() * 40));
        await timed('ctl', { op: 'cancel' }, 0);
      }
    },
    async function cancelWhileQueued() {
      // Aborting the SDK call sends notifications/cancelled for it.
      const first = timed('run', { code: 'import time; time.sleep(0.3)', wait: 2 }, 2);
      const ac = new AbortController();
      const second = call(h, 'run', { code: 'print("queued")', wait: 2 }, { signal: ac.signal }).catch(() => null);
      await sleep(pick([0, 5, 50]));
      ac.abort('soak cancels a queued run');
      await Promise.all([first, second]);
    },
    async function inputAnswered() {
      const r = await timed('run', { code: 'x = input("soak? ")\nprint("got", x)', wait: 5 }, 5);
      if (/INPUT REQUESTED/.test(r.text)) await timed('run', { code: '', input: 'yes', wait: 5 }, 5);
      else if (/^INPUT PENDING/.test(r.text)) await timed('ctl', { op: 'cancel' }, 0);
    },
    async function inputAbandoned() {
      await timed('run', { code: 'y = input("left alone: ")', wait: 0.5 }, 0.5);
      // Nobody answers: a later run or cancel of someone ends it.
    },
    async function wait() { await timed('ctl', { op: 'wait' }, 25); },
    async function status() {
      const s = await timed('ctl', { op: 'status' }, 0);
      const m = /pid (\d+)/.exec(s.text);
      if (m) addKernel(kernels, Number(m[1]));
    },
    async function restart() {
      if (rand() < 0.3) await timed('ctl', { op: 'restart' }, 0);
    },
    ...(FAULTS && !extra.gateway ? [async function killKernel() {
      // The kernel dies under the user's feet (the OOM killer, say): every
      // call still gets a true answer, and the next run a new kernel.
      if (rand() >= 0.3) return;
      const s = await timed('ctl', { op: 'status' }, 0);
      const m = /pid (\d+)/.exec(s.text);
      if (!m) return;
      if (rand() < 0.5) await timed('run', { code: 'import time; time.sleep(2)', wait: 0 }, 0);
      await sleep(Math.floor(rand() * 300));
      try { process.kill(Number(m[1]), 'SIGKILL'); counts.kill = (counts.kill || 0) + 1; } catch { /* gone meanwhile */ }
    }] : []),
    ...(extra.actions ?? []),
  ];
  while (Date.now() < deadline) {
    const a = pick(actions);
    try {
      await a();
    } catch (e) {
      let why = '';
      if (/not answered within/.test(e.message)) {
        // What rat-py says now, and the end of the kernel's own log: a
        // kernel that does not come up or answer says why only there.
        try {
          const s = await call(h, 'ctl', { op: 'status' }, { timeout: 5000 });
          const log = /kernel log: (\S+)/.exec(s.text)?.[1];
          let tail = '';
          try { tail = log ? readFileSync(log, 'utf8').slice(-2000) : ''; } catch { /* gone */ }
          why = `\n--- ctl status:\n${s.text}\n--- kernel log (end):\n${tail}\n--- kernel threads:\n${threads(/pid (\d+)/.exec(s.text)?.[1])}`;
        } catch (e2) { why = `\n--- ctl status: ${e2.message}`; }
      }
      problem(`${name} ${a.name}: ${e.message}${why}`);
      if (problems.length > 20) return;
    }
  }
}

/**
 * What each thread of process pid is doing (name, state, kernel wait
 * channel, CPU ticks): a kernel that never comes up logs nothing, and
 * whether it waits on a lock (futex, flock), a socket, or computes is told
 * only here.
 */
function threads(pid) {
  if (!pid) return '(no pid)';
  try {
    return readdirSync(`/proc/${pid}/task`).map((t) => {
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const f = stat.replace(/^.*\) /s, '').split(' ');
      let wchan = '';
      try { wchan = readFileSync(`/proc/${pid}/task/${t}/wchan`, 'utf8'); } catch { /* none */ }
      return `${t} ${/\((.*)\)/s.exec(stat)?.[1]} ${f[0]} ${wchan} utime=${f[11]} stime=${f[12]}`;
    }).join('\n');
  } catch (e) {
    return `(${e.code ?? e.message})`;
  }
}

/** Waits until rat-py says idle with nothing queued, cancelling prompts left waiting. */
async function drained(h, what, stderrOf) {
  const t0 = Date.now();
  for (;;) {
    const s = await call(h, 'ctl', { op: 'status' });
    const head = s.text.split('\n')[0];
    if (/^python idle /.test(head) && !/queued/.test(head)) return;
    if (/^python waiting_for_input /.test(head)) await call(h, 'ctl', { op: 'cancel' });
    if (Date.now() - t0 > ms(30_000)) {
      // What the kernel printed (a traceback from its own loop, say) and
      // rat-py's warnings: the run that never drains is rare, keep the why.
      const log = /kernel log: (\S+)/.exec(s.text)?.[1];
      let tail = '';
      try { tail = log ? readFileSync(log, 'utf8').slice(-3000) : ''; } catch { /* gone */ }
      throw new Error(`${what}: the queue did not drain: ${s.text}\n--- kernel log (end):\n${tail}\n--- rat-py stderr (end):\n${(stderrOf?.() ?? '').slice(-3000)}`);
    }
    await sleep(200);
  }
}

/**
 * The gateway worker: a stdio rat-py on a Jupyter Server kernel through a
 * proxy, and its fault: the connections cut (the kernel lives on, rat-py
 * reconnects) or the server killed and started again on the same port (the
 * kernel is gone: the next run gets a new one).
 */
async function gatewayWorker(rand) {
  const server = await startJupyterServer({ token: GW_TOKEN, kind: 'server' });
  const p = await tcpProxy(server.port);
  const h = await connect({ args: ['--gateway', p.url, '--log-level', 'info'], env: { JUPYTER_GATEWAY_AUTH_TOKEN: GW_TOKEN } });
  await call(h, 'run', { code: 'import math; d = {"k": [1, 2]}' });
  return {
    h,
    async drop() {
      if (rand() >= 0.3) return;
      if (rand() < 0.5) { p.cut(); counts.cut = (counts.cut || 0) + 1; return; }
      await server.restart();
      counts.gatewayRestart = (counts.gatewayRestart || 0) + 1;
    },
    async stop() { p.close(); await server.stop(); },
  };
}

test(`soak: ${SECONDS} s of mixed load over HTTP (${HTTP_WORKERS} sessions and disconnecting clients) and stdio`, { timeout: (SECONDS + 120) * 1000 * (WRAPPED ? 10 : 1) }, async () => {
  // The long soak keeps rat-py's info log: a problem carries its end.
  const logArgs = FAULTS ? ['--log-level', 'info'] : [];
  const srv = await startHttp(logArgs);
  const stdio = await connect({ args: logArgs });
  const kernels = new Set();
  const clients = [];
  const gw = FAULTS ? await gatewayWorker(prng(SEED + 100)) : null;
  if (gw) clients.push(gw.h);
  try {
    const deadline = Date.now() + SECONDS * 1000;
    const http = [];
    for (let i = 0; i < HTTP_WORKERS; i++) http.push(await connectHttp(srv.url));
    clients.push(...http);
    // A client that disconnects mid-run: a raw session whose POST is aborted.
    const disconnect = async function disconnect() {
      const hdrs = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const init = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: hdrs, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak-raw', version: '1' } } }) });
      const sid = init.headers.get('mcp-session-id');
      await init.text();
      const ac = new AbortController();
      const r = await fetch(`${srv.base}/mcp`, { method: 'POST', headers: { ...hdrs, 'mcp-session-id': sid }, signal: ac.signal, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run', arguments: { code: 'import time\nfor i in range(5):\n    time.sleep(0.1)\nprint("orphan")', wait: 10 } } }) }).catch(() => null);
      r?.body?.getReader().read().catch(() => {});
      await sleep(Math.floor(Math.random() * 300));
      ac.abort();
      counts.disconnect = (counts.disconnect || 0) + 1;
    };
    // Warm-up, then the baseline for RSS and descriptors.
    await call(stdio, 'run', { code: 'import math; d = {"k": [1, 2]}' });
    await call(http[0], 'run', { code: 'import math; d = {"k": [1, 2]}' });
    const pids = { http: srv.proc.pid, stdio: stdio.pid() };
    const sampler = setInterval(() => children([pids.http, pids.stdio], kernels), 250);
    const jobs = [worker('stdio', stdio, prng(SEED), deadline, kernels)];
    http.forEach((h, i) => jobs.push(worker(`http${i}`, h, prng(SEED + 1 + i), deadline, kernels, { stderr: srv.stderr, ...(i === 0 ? { actions: [disconnect] } : {}) })));
    if (gw) {
      pids.gateway = gw.h.pid();
      jobs.push(worker('gateway', gw.h, prng(SEED + 1 + HTTP_WORKERS), deadline, kernels, { gateway: true, actions: [gw.drop] }));
    }
    // Baseline a quarter in (sessions, buffers and caches have grown to
    // their working size), then sample until the end.
    await sleep(Math.min(SECONDS * 250, 60_000));
    const base = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, procStats(pid)]));
    await Promise.all(jobs);
    clearInterval(sampler);
    children([pids.http, pids.stdio], kernels);

    // The queue drains, and a final run works, on both.
    for (const [what, h, stderrOf] of [['stdio', stdio, stdio.stderr], ['http', http[1], srv.stderr], ...(gw ? [['gateway', gw.h, gw.h.stderr]] : [])]) {
      await drained(h, what, stderrOf);
      const r = await call(h, 'run', { code: 'print("final")', wait: 10 });
      // rat-py's own notice may come first (a gateway's kernel that a
      // server restart just took: "[the kernel … is gone …]"): true, not a fault.
      assert.match(r.text, /^(\[[^\n]*\]\n)*final\n(.*\n)*\n✓ /, `${what}: the final run: ${r.text}`);
      const s = await call(h, 'ctl', { op: 'status' });
      const m = /pid (\d+)/.exec(s.text);
      if (m) addKernel(kernels, Number(m[1]));
    }
    const end = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, procStats(pid)]));
    console.log(`soak: ${SECONDS} s, seed ${SEED}; calls ${JSON.stringify(counts)}; kernels ${kernels.size}; ` +
                `rss kB ${JSON.stringify(base)} -> ${JSON.stringify(end)}; problems ${problems.length}`);
    // After the figures: a long soak's are kept even when it fails.
    assert.deepEqual(problems, [], `invariants broken:\n${problems.join('\n')}`);
    for (const k of Object.keys(pids)) {
      // Under valgrind /proc shows valgrind's memory, and ASan keeps freed
      // memory in its quarantine (up to 256 MB): RSS says nothing there.
      if (!WRAPPED && !process.env.RAT_PY_SANITIZED)
        assert.ok(end[k].rss <= base[k].rss * 1.5 + 8192, `${k}: RSS grew from ${base[k].rss} to ${end[k].rss} kB`);
      assert.ok(end[k].fds <= base[k].fds + 8, `${k}: descriptors grew from ${base[k].fds} to ${end[k].fds}`);
    }
  } finally {
    for (const c of clients) await c.close();
    await stdio.close();
    await srv.stop();
    await gw?.stop();
  }
  // No kernel left behind.
  const t0 = Date.now();
  while ([...kernels].some(stillThere) && Date.now() - t0 < ms(5000)) await sleep(100);
  assert.deepEqual([...kernels].filter(stillThere), [], 'kernels left running (pid:start time)');
});
