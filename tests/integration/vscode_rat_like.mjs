// A client of our own that makes vscode-rat's calls and parses the answers
// the way vscode-rat does (vscode-rat/src/rat.ts, queue.ts, intellisense.ts,
// variablesView.ts in MaximeRivest/rat, read as a reference; nothing copied):
// Node's http only, protocol 2025-03-26, no capabilities, clientInfo
// "rat-vscode", a JSON or SSE answer per POST, live output only from the
// `rat/output {text}` notifications on the run's own stream.
import http from 'node:http';

export class VscodeRatLike {
  constructor(url) {
    this.url = new URL(url);
    this.session = null;
    this.nextId = 1;
  }

  async initialize() {
    await this.rpc('initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'rat-vscode', version: '0.1.0' } });
    await this.post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized', params: {} }));
  }

  /** run {code}; onOutput gets each rat/output text. Resolves to the parsed result. */
  async run(code, onOutput) {
    const r = await this.callTool('run', { code }, onOutput
      ? (n) => { if (n.method === 'rat/output' && typeof n.params.text === 'string' && n.params.text) onOutput(n.params.text); }
      : undefined);
    return parseRunResult(r);
  }

  sendInput(text) { return this.callTool('run', { input: text }, undefined, 5000); }
  async look(at) { return toolText(await this.callTool('look', at ? { at } : {}, undefined, 10000)); }
  async lookFull(at) { return toolText(await this.callTool('look', { at, full: true }, undefined, 10000)); }
  async complete(code, cursor) {
    const text = toolText(await this.callTool('look', { code, cursor }, undefined, 8000));
    return text ? text.split('\n').map((l) => l.trimEnd()).filter((l) => l && l.trim() !== 'No completions.') : [];
  }
  async status() { return toolText(await this.callTool('ctl', { op: 'status' }, undefined, 2000)); }
  async partialOutput() { return toolText(await this.callTool('ctl', { op: 'output' }, undefined, 2000)); }
  async tail(n = 10, format = 'json') { return toolText(await this.callTool('tail', { n, format }, undefined, 5000)); }
  cancel() { this.callTool('ctl', { op: 'cancel' }, undefined, 5000).catch(() => {}); }

  /** What vscode-rat's queue does while a run is open: true once it answered a prompt. */
  async pollInput(answer) {
    const st = await this.status();
    if (st.split('\n', 1)[0].trim() !== 'waiting_for_input') return false;
    await this.sendInput(answer);
    return true;
  }

  callTool(name, args, onNotification, timeoutMs = 0) {
    return this.rpc('tools/call', { name, arguments: args }, onNotification, timeoutMs);
  }

  async rpc(method, params, onNotification, timeoutMs = 0) {
    const id = this.nextId++;
    const res = await this.post(JSON.stringify({ jsonrpc: '2.0', id, method, params }), onNotification, timeoutMs);
    let payload = res.body;
    if (String(res.headers['content-type']).includes('text/event-stream')) {
      for (const line of res.body.split('\n')) {
        if (!line.startsWith('data:')) continue;
        try {
          const o = JSON.parse(line.slice(5).trimStart());
          if (o.id === id) { payload = line.slice(5).trimStart(); break; }
        } catch { /* not ours */ }
      }
    }
    const data = JSON.parse(payload);
    if (data.error) throw new Error(data.error.message ?? JSON.stringify(data.error));
    return data.result;
  }

  post(body, onNotification, timeoutMs = 0) {
    return new Promise((resolve, reject) => {
      const headers = {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Content-Length': String(Buffer.byteLength(body)),
      };
      if (this.session) headers['Mcp-Session-Id'] = this.session;
      const req = http.request({ hostname: this.url.hostname, port: this.url.port, path: this.url.pathname, method: 'POST', headers }, (res) => {
        const sid = res.headers['mcp-session-id'];
        if (sid) this.session = sid;
        let data = '';
        let pending = '';
        const sse = String(res.headers['content-type']).includes('text/event-stream');
        res.on('data', (chunk) => {
          const t = chunk.toString();
          data += t;
          if (sse && onNotification) pending = drainEvents(pending + t, onNotification);
        });
        res.on('end', () => {
          if (sse && onNotification && pending.trim()) drainEvents(pending + '\n\n', onNotification);
          resolve({ status: res.statusCode, headers: res.headers, body: data });
        });
        res.on('error', reject);
      });
      if (timeoutMs > 0) req.setTimeout(timeoutMs, () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}

function drainEvents(buffer, onNotification) {
  for (;;) {
    const m = /\r?\n\r?\n/.exec(buffer);
    if (!m) return buffer;
    const event = buffer.slice(0, m.index);
    buffer = buffer.slice(m.index + m[0].length);
    const data = event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart());
    if (!data.length) continue;
    try {
      const msg = JSON.parse(data.join('\n'));
      if (typeof msg.method === 'string') onNotification({ method: msg.method, params: msg.params ?? {} });
    } catch { /* keep-alives and the like */ }
  }
}

export function toolText(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text ?? '').join('\n');
}

const num = (v, k) => (typeof v[k] === 'number' && Number.isFinite(v[k]) ? v[k] : undefined);

/** A run result as vscode-rat reads it: structuredContent first, else the footer line. */
export function parseRunResult(result) {
  const raw = toolText(result);
  const isError = !!result?.isError;
  const sc = result?.structuredContent;
  if (sc && typeof sc === 'object') {
    const success = typeof sc.success === 'boolean' ? sc.success : !isError;
    const status = typeof sc.status === 'string' ? sc.status : undefined;
    const output = typeof sc.output === 'string' ? sc.output : undefined;
    const error = typeof sc.error === 'string' ? sc.error : undefined;
    if (output !== undefined || error !== undefined || status) {
      return {
        text: success ? (output ?? '') : (error || output || raw),
        isError: isError || !success,
        status,
        durationMs: num(sc, 'durationMs') ?? num(sc, 'duration_ms'),
        vars: num(sc, 'vars'),
        execCount: num(sc, 'execCount') ?? num(sc, 'exec_count'),
        raw,
      };
    }
  }
  const lines = raw.trimEnd().split('\n');
  const last = lines[lines.length - 1]?.trim() ?? '';
  if (/^[✓✗] .+$/.test(last)) return { text: lines.slice(0, -1).join('\n').trimEnd(), isError, status: last, raw };
  return { text: raw.trimEnd(), isError, raw };
}

const KINDS = new Set(['attribute', 'class', 'constant', 'directory', 'file', 'folder', 'function', 'instance', 'keyword',
  'method', 'module', 'package', 'param', 'parameter', 'property', 'statement', 'type', 'value', 'variable']);

/** One completion line: `label<tab or 2+ spaces>kind`, else the whole line is the label. */
export function parseCompletionLine(line) {
  const raw = line.trimEnd();
  if (!raw || raw.trim() === 'No completions.') return null;
  const m = /^(.*?)\t+([A-Za-z][\w-]*)$/.exec(raw) ?? /^(.*?)\s{2,}([A-Za-z][\w-]*)$/.exec(raw) ?? /^(.*\S)\s+([A-Za-z][\w-]*)$/.exec(raw);
  if (m && KINDS.has(m[2].toLowerCase()) && m[1].trimEnd()) return { label: m[1].trimEnd(), kind: m[2].toLowerCase() };
  return { label: raw.trim() };
}

/** The variables panel: the first line is a header; rows `name  type  preview`. */
export function parseOverview(text) {
  const rows = [];
  for (const raw of text.split('\n').slice(1)) {
    const line = raw.trimEnd();
    if (!line.trim() || /^[-=]+$/.test(line.trim()) || /^\S+\s+(?:idle|running|waiting)/.test(line)) continue;
    const m = /^\s*(\S+)\s{2,}(\S+)\s{2,}(.*)$/.exec(line);
    if (m) { rows.push({ name: m[1], kind: m[2], preview: m[3] }); continue; }
    const parts = line.trim().split(/\s+/);
    if (parts.length >= 2 && /^[A-Za-z_]\w*$/.test(parts[0])) rows.push({ name: parts[0], kind: parts[1], preview: parts.slice(2).join(' ') });
  }
  return rows;
}

/** Hover and signature help: a `(...)` line after the name, or `name(...)`. */
export function signatureFromInspection(info, name) {
  for (const line of info.split('\n')) {
    const t = line.trim();
    if (/^\([^)]*\)/.test(t)) return `${name}${t}`;
    if (/^[\w.]+\s*\(.+\)/.test(t)) return t;
  }
  return null;
}

/** Go to definition: `Defined in: path:line`. */
export function definitionFromInspection(info) {
  for (const line of info.split('\n')) {
    const m = /\bDefined in:\s+(.+?)\s*$/.exec(line);
    if (!m) continue;
    const pl = /^(.*):(\d+)$/.exec(m[1].trim());
    return pl ? { path: pl[1], line: Math.max(0, Number(pl[2]) - 1) } : { path: m[1].trim(), line: 0 };
  }
  return null;
}

/** Plots: `__RAT_PLOT__:<file>` lines become images; the rest stays text. */
export function extractPlots(text) {
  const lines = [];
  const images = [];
  for (const line of text.split('\n')) {
    const m = /^__RAT_PLOT__:(.+)$/.exec(line);
    if (m) images.push(m[1]); else lines.push(line);
  }
  return { text: lines.join('\n'), images };
}

/** The .py view's inline error (inlineOutput.ts formatError): the last line
 * that is not a `File …`, `^` or `~` line. */
export function inlineErrorSummary(text) {
  const lines = text.split('\n').filter((l) => l.trim().length > 0);
  let errorLine = lines[lines.length - 1] ?? 'error';
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i].trim();
    if (l && !l.startsWith('File ') && !l.startsWith('^') && !l.startsWith('~')) { errorLine = l; break; }
  }
  return errorLine;
}

/** A notebook cell's output block (output.ts upsertOutput/buildBlock with
 * the structured status): `output | <status>` fence, the body, then images;
 * an error is a status starting with ✗. The body keeps its first maxLines
 * lines (the setting rat.maxOutputLines, 100 by default; 0 = all), the rest
 * replaced by `… N more lines`. */
export function outputBlock(text, status, images = [], maxLines = 100) {
  const body = text.trimEnd();
  const isError = (status ?? '').startsWith('✗');
  const hasBody = body.trim().length > 0 || images.length > 0;
  if (!hasBody && !isError && status) return { annotation: ' ✓' };
  let effective = !hasBody && isError ? status : body;
  const lines = effective.split('\n');
  if (maxLines > 0 && lines.length > maxLines)
    effective = [...lines.slice(0, maxLines), `… ${lines.length - maxLines} more lines`].join('\n');
  return { fence: status ? `output | ${status}` : 'output', body: effective, images, isError };
}

// ---------------------------------------------------------------- the CLI
// vscode-rat drives runtimes with the `rat` CLI (rat.ts: execFile, no shell,
// stdin a pipe, its own env; errors swallowed unless it asks to reject) and
// reads their list from state.yaml with a hand-written parser (readState).
// RatCliLike makes the same calls with the same timeouts and parses the
// same way.
import { execFile } from 'node:child_process';
import { existsSync as exists, readFileSync as readFile } from 'node:fs';
import nodePath from 'node:path';
import os from 'node:os';

export class RatCliLike {
  /** bin: the `rat` to run (rat.path); env: the extension host's env. */
  constructor(bin, env) {
    this.bin = bin;
    this.env = env;
    this.pool = new Map();
  }

  exec(args, cwd, timeout = 30000, rejectOnError = false) {
    return new Promise((resolve, reject) => {
      const t0 = Date.now();
      execFile(this.bin, args, { cwd, timeout, env: { ...this.env } }, (err, stdout, stderr) => {
        const ms = Date.now() - t0;
        if (err && rejectOnError) { reject(new Error(stderr?.trim() || stdout?.trim() || err.message)); return; }
        resolve({ stdout: stdout ?? '', stderr: stderr ?? '', code: err ? (err.code ?? 1) : 0, killed: !!err?.killed, ms });
      });
    });
  }

  /** `rat start NAME` and the extension's regex on stdout + stderr. */
  async start(name, cwd) {
    const r = await this.exec(['start', name], cwd);
    const m = (r.stdout + '\n' + r.stderr).match(/(\S+)\s+(?:started|already running)\s+on\s+http:\/\/[^:]+:(\d+)/);
    return { ...r, parsed: m ? { resolvedName: m[1], port: parseInt(m[2], 10) } : null };
  }

  stop(name) { return this.exec(['stop', name], undefined, 10000); }
  restart(name, cwd) { return this.exec(['restart', name], cwd); }
  remove(name) { return this.exec(['remove', name]); }
  cancel(name) { return this.exec(['cancel', name], undefined, 10000); }
  add(name, lang, cwd, venv) {
    const args = ['add', name, '--lang', lang, '--cwd', cwd];
    if (venv) args.push('--venv', venv);
    return this.exec(args, cwd);
  }
  install(lang, cwd) { return this.exec(['install', lang], cwd, 120000, true); }
  async resolve(input, cwd, includeEnv = false) {
    const args = ['resolve', input, '--json'];
    if (includeEnv) args.push('--include-env');
    const { stdout } = await this.exec(args, cwd, 10000, true);
    return JSON.parse(stdout);
  }

  /** rat.ts getClient: pool, then add (unknown names), start, else install and start again. */
  async getClient(name, cwd, lang) {
    const existing = this.pool.get(name);
    if (existing) {
      try { await existing.status(); return existing; } catch { this.pool.delete(name); }
    }
    const state = readState(this.env);
    const known = state.kernels.some((k) => k.name === name) || state.runtimes.some((r) => r.name === name);
    if (!known && lang && name !== lang) await this.add(name, lang, cwd, lang === 'py' ? detectVenv(cwd) : undefined);
    let started = await this.start(name, cwd);
    if (!started.parsed) {
      await this.install(lang ?? name, cwd);
      started = await this.start(name, cwd);
      if (!started.parsed) throw new Error(`Kernel "${name}" failed to start. Run: rat doctor ${lang ?? name}`);
    }
    const client = new VscodeRatLike(`http://127.0.0.1:${started.parsed.port}/mcp`);
    await client.initialize();
    this.pool.set(started.parsed.resolvedName, client);
    if (started.parsed.resolvedName !== name) this.pool.set(name, client);
    return client;
  }
}

function detectVenv(cwd) {
  for (const dir of ['.venv', 'venv']) {
    if (exists(nodePath.join(cwd, dir, 'bin', 'python'))) return nodePath.join(cwd, dir);
  }
  return undefined;
}

/** rat.ts stateFilePath (Linux). */
export function stateFilePath(env) {
  const dir = env.XDG_CONFIG_HOME || nodePath.join(env.HOME || os.homedir(), '.config');
  return nodePath.join(dir, 'rat', 'state.yaml');
}

/** rat.ts readState: its section regex, item split, field regex, scalars. */
export function readState(env) {
  let content;
  try { content = readFile(stateFilePath(env), 'utf-8'); } catch { return { kernels: [], runtimes: [] }; }
  return {
    kernels: parseSection(content, 'kernels', (entry) => {
      const name = yamlField(entry, 'name');
      const port = Number(yamlField(entry, 'port'));
      if (!name || !Number.isFinite(port)) return null;
      const pid = Number(yamlField(entry, 'pid'));
      return { name, lang: yamlField(entry, 'lang'), port, pid: Number.isFinite(pid) ? pid : 0, cwd: yamlField(entry, 'cwd'),
        venv: yamlField(entry, 'venv'), status: yamlField(entry, 'status') || 'running', started: yamlField(entry, 'started') };
    }),
    runtimes: parseSection(content, 'runtimes', (entry) => {
      const name = yamlField(entry, 'name');
      if (!name) return null;
      return { name, lang: yamlField(entry, 'lang'), cwd: yamlField(entry, 'cwd'), venv: yamlField(entry, 'venv') };
    }),
  };
}

function parseSection(yaml, section, parse) {
  const block = yaml.match(new RegExp(`${section}:\\s*\\n([\\s\\S]*?)(?:\\n[a-z]|$)`));
  if (!block) return [];
  const results = [];
  for (const raw of block[1].split(/(?=^\s*- name:)/m).filter((s) => s.trim())) {
    const item = parse(raw.replace(/^\s*- /, '').replace(/^\s{4,}/gm, ''));
    if (item) results.push(item);
  }
  return results;
}

function yamlField(entry, key) {
  const m = entry.match(new RegExp(`^${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\s*(.*)$`, 'm'));
  return m ? parseYamlScalar(m[1]) : '';
}

function parseYamlScalar(raw) {
  const t = raw.trim();
  if (!t || t === 'null' || t === '~') return '';
  if (t.startsWith("'") && t.endsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
  if (t.startsWith('"') && t.endsWith('"')) { try { return JSON.parse(t); } catch { return t.slice(1, -1); } }
  return t.replace(/\s+#.*$/, '');
}
