// HTTP load: 100 concurrent sessions each issuing ctl status and look while
// one run streams output; p50/p99 latency and errors. Loopback only, bounded.
// Usage: node http_load.mjs RAT_PY [SESSIONS] [ROUNDS]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const [rat, sessionsArg, roundsArg] = process.argv.slice(2);
const SESSIONS = Number(sessionsArg ?? 100);
const ROUNDS = Number(roundsArg ?? 10);
const HDRS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const dir = mkdtempSync(path.join(tmpdir(), 'rat-httpload-'));
const proc = spawn(rat, ['--http', '--port', '0', '--cwd', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
const url = await new Promise((resolve, reject) => {
  let err = '';
  proc.stderr.on('data', (d) => {
    err += d;
    const m = /serving MCP at (http:\/\/\S+\/mcp)/.exec(err);
    if (m) resolve(m[1]);
  });
  proc.on('exit', () => reject(new Error(err)));
});

let nextId = 1;
async function post(sid, method, params) {
  const headers = sid ? { ...HDRS, 'mcp-session-id': sid } : HDRS;
  const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }) });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${text.slice(0, 200)}`);
  const last = text.trim().split('\n').filter((l) => l.startsWith('data: ') || l.startsWith('{')).pop();
  const msg = JSON.parse(last.startsWith('data: ') ? last.slice(6) : last);
  if (msg.error || msg.result?.isError) throw new Error(JSON.stringify(msg).slice(0, 200));
  return { sid: r.headers.get('mcp-session-id') ?? sid, msg };
}
async function session() {
  const { sid } = await post(null, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'load', version: '1' } });
  return sid;
}

const streamer = await session();
await post(streamer, 'tools/call', { name: 'run', arguments: { code: 'pass' } });
const streaming = post(streamer, 'tools/call', { name: 'run', arguments: {
  code: 'import time\nfor i in range(100000):\n    print("line", i)\n    if i % 1000 == 0: time.sleep(0.01)', wait: 120 } });
const sids = await Promise.all(Array.from({ length: SESSIONS }, session));
const lat = [];
let errors = 0;
// CPU seconds of rat-py (from /proc) and of this load generator over the
// measured phase: which of the two bounds the latency (issue 14 item 5).
const ratCpu = () => { const f = readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; };
const cpu0 = process.cpuUsage(), rat0 = ratCpu();
const t0 = Date.now();
await Promise.all(sids.map(async (sid) => {
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, args] of [['ctl', { op: 'status' }], ['look', {}]]) {
      const a = performance.now();
      try {
        await post(sid, 'tools/call', { name, arguments: args });
        lat.push(performance.now() - a);
      } catch (e) {
        errors++;
        if (errors < 5) console.error(String(e));
      }
    }
  }
}));
const elapsed = Date.now() - t0;
const cpu1 = process.cpuUsage(cpu0), rat1 = ratCpu();
await streaming.catch(() => { errors++; });
lat.sort((a, b) => a - b);
const q = (p) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] ?? NaN;
console.log(`requests ${lat.length + errors}`);
console.log(`errors ${errors}`);
console.log(`p50_ms ${q(0.5).toFixed(1)}`);
console.log(`p99_ms ${q(0.99).toFixed(1)}`);
console.log(`elapsed_ms ${elapsed}`);
console.log(`client_cpu_pct ${((cpu1.user + cpu1.system) / 1000 / elapsed * 100).toFixed(0)}`);
console.log(`ratpy_cpu_pct ${((rat1 - rat0) * 1000 / elapsed * 100).toFixed(0)}`);
console.log(`ratpy_us_per_req ${((rat1 - rat0) * 1e6 / Math.max(1, lat.length)).toFixed(0)}`);
proc.kill('SIGTERM');
await new Promise((r) => proc.on('exit', r));
rmSync(dir, { recursive: true, force: true });
