// A client that behaves the way mcp2cli (MaximeRivest/mcp2cli @ e005a6c)
// was observed to behave (shared/research/mcp2cli.md): NDJSON over pipes,
// protocol 2024-11-05, integer ids, `arguments` left out when empty, schema
// defaults filled in client-side, only text content printed (joined by "\n"),
// notifications ignored, and on close: stdin closed, SIGKILL 300 ms later.
import { spawn } from 'node:child_process';
import { ratCommand, checkSanitizers, ms } from './lib.mjs';

export class Mcp2cliLike {
  constructor(args = [], { daemon = true, env = {} } = {}) {
    this.args = args;
    this.env = env;
    this.daemon = daemon; // like `mcp2cli py up`: capabilities {} and one long-lived server
    this.schemas = null;
    this.nextId = 1;
  }

  async start() {
    const { command, args } = ratCommand(this.args);
    this.child = spawn(command, args, { env: { ...process.env, ...this.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    this.buf = '';
    this.pending = new Map();
    this.stderr = '';
    this.child.stderr.on('data', (d) => { this.stderr += d; });
    this.child.stdout.on('data', (d) => {
      this.buf += d;
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        const msg = JSON.parse(line); // a non-JSON line would throw: stdout purity
        if (msg.id !== undefined && !msg.method && this.pending.has(msg.id)) {
          this.pending.get(msg.id)(msg);
          this.pending.delete(msg.id);
        }
        // notifications and server requests: dropped, as mcp2cli does
      }
    });
    this.exited = new Promise((r) => this.child.on('exit', (code, signal) => r({ code, signal })));
    await this.request('initialize', {
      protocolVersion: '2024-11-05',
      capabilities: this.daemon ? {} : { elicitation: {} },
      clientInfo: { name: this.daemon ? 'mcp2cli-daemon' : 'mcp2cli', version: 'dev' },
    });
    this.notify('notifications/initialized');
    if (!this.schemas) {
      const { result } = await this.request('tools/list');
      this.schemas = Object.fromEntries(result.tools.map((t) => [t.name, t.inputSchema]));
    }
  }

  request(method, params) {
    const id = this.nextId++;
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    this.child.stdin.write(JSON.stringify(msg) + '\n');
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`mcp2cli-like: no answer to ${method} within 30 s`)), ms(30_000));
      this.pending.set(id, (m) => { clearTimeout(t); resolve(m); });
    });
  }

  notify(method, params) {
    const msg = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    this.child.stdin.write(JSON.stringify(msg) + '\n');
  }

  /** `py TOOL ...`: fills defaults, drops empty arguments, prints text. */
  async tool(name, args = {}) {
    const schema = this.schemas[name];
    const filled = { ...args };
    for (const [k, p] of Object.entries(schema.properties ?? {}))
      if (!(k in filled) && 'default' in p) filled[k] = p.default;
    const params = { name };
    if (Object.keys(filled).length) params.arguments = filled;
    const m = await this.request('tools/call', params);
    if (m.error) return { text: `error: ${m.error.message}`, error: m.error };
    const items = m.result.content;
    const text = items.every((c) => c.type === 'text') ? items.map((c) => c.text).join('\n') : JSON.stringify(m.result);
    return { text, isError: m.result.isError === true };
  }

  /** What mcp2cli does after a call (and `mcp2cli py down`): close stdin, SIGKILL after 300 ms
   * (scaled when rat-py runs wrapped, so valgrind gets to finish its report). */
  async stop() {
    const t0 = Date.now();
    this.child.stdin.end();
    const killer = setTimeout(() => this.child.kill('SIGKILL'), ms(300));
    const ex = await this.exited;
    clearTimeout(killer);
    checkSanitizers(this.stderr);
    return { ...ex, ms: Date.now() - t0 };
  }
}
