// A terminal client that behaves the way the real ones do, for the tests CI
// can run without them: mcptocli (MaximeRivest/mcp2cli @ db32dc4) and
// mcp2cli, its name before (@ e005a6c). Read from their source and checked
// against binaries built from it (doc/mcp2cli.md says which):
//
// - the MCP side (internal/mcp/client): NDJSON over pipes; initialize with
//   2024-11-05 (mcp2cli) or 2025-11-25 (mcptocli, which refuses a server
//   that answers a version outside 2024-11-05 .. 2025-11-25); clientInfo
//   NAME for a command that starts its own server (`py run ...` without
//   `py up`, `py shell`), with {elicitation: {}}, or NAME-daemon from the
//   process `py up` starts, with {} and one server for every command;
//   integer ids; notifications dropped; elicitation asked on the terminal
//   (internal/elicitation/terminal.go), or refused when stdin is not one;
//   on close: stdin closed, SIGKILL 300 ms later.
// - the command line (internal/cli/tools.go, internal/invoke/toolargs.go):
//   the client's own flags first (--input, -o/--output, --timeout, ...),
//   then required string/number parameters as positionals in schema order,
//   --kebab-case flags, --x/--no-x booleans, @file/@- values, schema
//   defaults filled in, the required check; `-o json` as Go prints it; the
//   tool schemas cached on first use and reused without asking again.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { ratCommand, checkSanitizers, ms } from './lib.mjs';

export const CLIENTS = {
  mcptocli: { protocol: '2025-11-25', accepts: ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'], emptyArgs: true, banner: true, inputError: 'Error' },
  mcp2cli: { protocol: '2024-11-05', accepts: null, emptyArgs: false, banner: false, inputError: 'error' },
};

/** One rat-py process, spoken to the way the clients' MCP layer does. */
export class Mcp2cliLike {
  /**
   * args: rat-py's arguments. daemon: as under `py up` (clientInfo NAME-daemon,
   * no elicitation). client: 'mcp2cli' or 'mcptocli'. onElicit(params) answers
   * elicitation/create in direct mode: a result, or a thrown Error (its message
   * goes back as the JSON-RPC error, as the clients' handler errors do).
   */
  constructor(args = [], { daemon = true, env = {}, client = 'mcp2cli', onElicit = null } = {}) {
    this.args = args;
    this.env = env;
    this.daemon = daemon;
    this.client = client;
    this.onElicit = onElicit;
    this.schemas = null;
    this.tools = null;
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
        } else if (msg.id !== undefined && msg.method) {
          this.serverRequest(msg);
        }
        // notifications: dropped, as both clients do
      }
    });
    this.exited = new Promise((r) => this.child.on('exit', (code, signal) => r({ code, signal })));
    const c = CLIENTS[this.client];
    const init = await this.request('initialize', {
      protocolVersion: c.protocol,
      capabilities: this.daemon ? {} : { elicitation: {} },
      clientInfo: { name: this.daemon ? `${this.client}-daemon` : this.client, version: 'dev' },
    });
    if (c.accepts && !c.accepts.includes(init.result?.protocolVersion))
      throw new Error(`unsupported protocol version: ${init.result?.protocolVersion}`);
    this.notify('notifications/initialized');
    if (!this.schemas) {
      const { result } = await this.request('tools/list');
      this.tools = result.tools;
      this.schemas = Object.fromEntries(result.tools.map((t) => [t.name, t.inputSchema]));
    }
  }

  async serverRequest(msg) {
    const reply = (body) => this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...body }) + '\n');
    if (msg.method !== 'elicitation/create' || this.daemon || !this.onElicit)
      return reply({ error: { code: -32601, message: `method ${msg.method} not supported` } });
    try {
      reply({ result: await this.onElicit(msg.params) });
    } catch (e) {
      reply({ error: { code: -32603, message: e.message } });
    }
  }

  request(method, params) {
    const id = this.nextId++;
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    this.child.stdin.write(JSON.stringify(msg) + '\n');
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${this.client}-like: no answer to ${method} within 30 s`)), ms(30_000));
      this.pending.set(id, (m) => { clearTimeout(t); resolve(m); });
    });
  }

  notify(method, params) {
    const msg = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    this.child.stdin.write(JSON.stringify(msg) + '\n');
  }

  /** tools/call with already-parsed arguments (mcp2cli leaves an empty object out, mcptocli sends it). */
  async call(name, args) {
    const params = { name };
    if (Object.keys(args).length || CLIENTS[this.client].emptyArgs) params.arguments = args;
    return this.request('tools/call', params);
  }

  /** `py TOOL ...` from an object: fills defaults, prints text. */
  async tool(name, args = {}) {
    const schema = this.schemas[name];
    const filled = { ...args };
    for (const [k, p] of Object.entries(schema.properties ?? {}))
      if (!(k in filled) && 'default' in p) filled[k] = p.default;
    const m = await this.call(name, filled);
    if (m.error) return { text: `error: ${m.error.message}`, error: m.error };
    const items = m.result.content;
    const text = items.every((c) => c.type === 'text') ? items.map((c) => c.text).join('\n') : JSON.stringify(m.result);
    return { text, isError: m.result.isError === true };
  }

  /** What the clients do after a call (and `py down`): close stdin, SIGKILL after 300 ms
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

// ---------------------------------------------------------------- the command line

class Usage extends Error {}

/** kebab-case as internal/naming/kebab.go (the cases rat-py's names need). */
export function kebab(s) {
  return s.trim().replace(/[_ /.]+/g, '-').replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

/** The client's own flags (tools.go, isKnownToolFlag), taken out first. */
const KNOWN = new Set(['command', 'url', 'cwd', 'env', 'header', 'auth', 'bearer-env', 'oauth-authorize-url', 'oauth-token-url', 'oauth-client-id', 'oauth-scope', 'input', 'output', 'timeout']);

export function parseInvocation(tokens) {
  const out = { output: 'auto', input: '', rest: [] };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    let name = null, value;
    if (t === '-o') {
      if (i + 1 >= tokens.length) throw new Usage('missing value for -o');
      name = 'output'; value = tokens[++i];
    } else if (t.startsWith('--')) {
      const f = t.slice(2), eq = f.indexOf('=');
      if (eq >= 0 && KNOWN.has(f.slice(0, eq))) { name = f.slice(0, eq); value = f.slice(eq + 1); }
      else if (eq < 0 && KNOWN.has(f)) {
        if (i + 1 >= tokens.length) throw new Usage(`missing value for --${f}`);
        name = f; value = tokens[++i];
      }
    }
    if (!name) { out.rest.push(t); continue; }
    if (name === 'input' || name === 'output') out[name] = value;
  }
  return out;
}

/** inspect.InspectTool: the arguments in schema order (a missing or non-string type is "object"). */
function specOf(schema) {
  const req = new Set(schema?.required ?? []);
  return Object.entries(schema?.properties ?? {}).map(([name, p]) => ({
    name, cli: kebab(name), type: typeof p.type === 'string' ? p.type : 'object', required: req.has(name),
    hasDefault: 'default' in p, default: p.default, itemType: p.items?.type,
  }));
}

function parseValue(arg, text) {
  const at = (t) => readFileSync(t.slice(1) === '-' ? 0 : t.slice(1), 'utf8');
  switch (arg.type) {
    case 'string': return text.startsWith('@') ? at(text) : text;
    case 'integer': { if (!/^[+-]?\d+$/.test(text)) throw new Usage(`strconv.Atoi: parsing "${text}": invalid syntax`); return Number(text); }
    case 'number': { const n = Number(text); if (text.trim() === '' || Number.isNaN(n)) throw new Usage(`strconv.ParseFloat: parsing "${text}": invalid syntax`); return n; }
    case 'boolean': {
      const v = { 1: true, t: true, T: true, TRUE: true, true: true, True: true, 0: false, f: false, F: false, FALSE: false, false: false, False: false }[text];
      if (v === undefined) throw new Usage(`strconv.ParseBool: parsing "${text}": invalid syntax`);
      return v;
    }
    case 'array': return parseValue({ type: arg.itemType }, text);
    default: { const raw = text.startsWith('@') ? at(text) : text; try { return JSON.parse(raw); } catch { return raw; } }
  }
}

/** invoke.ParseToolArguments. */
export function parseToolArguments(schema, tokens) {
  const spec = specOf(schema);
  const positional = spec.filter((a) => a.required && ['string', 'number', 'integer'].includes(a.type));
  const find = (n) => spec.find((a) => a.cli === n || a.name === n);
  const result = {};
  let pi = 0, seenFlag = false;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t === '--') {
      for (i++; i < tokens.length; i++) {
        if (pi >= positional.length) throw new Usage(`unexpected positional argument "${tokens[i]}"`);
        result[positional[pi].name] = parseValue(positional[pi], tokens[i]);
        pi++;
      }
      break;
    }
    if (t.startsWith('--')) {
      seenFlag = true;
      let name = t.slice(2), value = null;
      if (name.startsWith('no-')) {
        const a = find(name.slice(3));
        if (!a || a.type !== 'boolean') throw new Usage(`unknown flag --${name}`);
        result[a.name] = false;
        continue;
      }
      const eq = name.indexOf('=');
      if (eq >= 0) { value = name.slice(eq + 1); name = name.slice(0, eq); }
      const a = find(name);
      if (!a) throw new Usage(`unknown flag --${name}`);
      if (a.type === 'boolean' && value === null) {
        if (i + 1 < tokens.length && !tokens[i + 1].startsWith('-')) result[a.name] = parseValue(a, tokens[++i]);
        else result[a.name] = true;
        continue;
      }
      if (value === null) {
        if (++i >= tokens.length) throw new Usage(`missing value for --${name}`);
        value = tokens[i];
      }
      const v = parseValue(a, value);
      result[a.name] = a.type === 'array' ? [...(result[a.name] ?? []), v] : v;
      continue;
    }
    if (seenFlag) throw new Usage(`unexpected positional argument "${t}" after flags`);
    if (pi >= positional.length) throw new Usage(`unexpected positional argument "${t}"`);
    result[positional[pi].name] = parseValue(positional[pi], t);
    pi++;
  }
  for (const a of spec) if (!(a.name in result) && a.hasDefault) result[a.name] = a.default;
  for (const a of spec) if (a.required && !(a.name in result)) throw new Usage(`missing required argument: ${a.cli}`);
  return result;
}

/** Go's json.MarshalIndent: map keys sorted, <, >, & escaped, 2-space indent. */
export function goJSON(v, indent = '') {
  const str = (s) => JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (v === null || typeof v !== 'object') return typeof v === 'string' ? str(v) : JSON.stringify(v);
  const inner = indent + '  ';
  if (Array.isArray(v)) return v.length ? `[\n${v.map((x) => inner + goJSON(x, inner)).join(',\n')}\n${indent}]` : '[]';
  const keys = v[ORDERED] ? Object.keys(v) : Object.keys(v).sort();
  return keys.length ? `{\n${keys.map((k) => `${inner}${str(k)}: ${goJSON(v[k], inner)}`).join(',\n')}\n${indent}}` : '{}';
}
const ORDERED = Symbol('struct'); // a Go struct: fields in declaration order

/** types.CallToolResult as the clients keep it (content keeps only type and text). */
function resultStruct(r) {
  const s = { [ORDERED]: true };
  if (r.content?.length) s.content = r.content.map((c) => Object.assign({ [ORDERED]: true, type: c.type }, c.text ? { text: c.text } : {}));
  if (r.structuredContent && Object.keys(r.structuredContent).length) s.structuredContent = r.structuredContent;
  if (r.isError) s.isError = true;
  if (r._meta && Object.keys(r._meta).length) s._meta = r._meta;
  return s;
}

/** renderToolResult, modes auto, raw and json. */
export function renderResult(r, output) {
  const texts = r.content?.length && r.content.every((c) => c.type === 'text') ? r.content.map((c) => c.text).join('\n') : null;
  const nl = (t) => (t.endsWith('\n') ? t : t + '\n');
  if (output === 'json') return goJSON(resultStruct(r)) + '\n';
  if (output === 'raw') { if (texts === null) throw new Usage('-o raw is only supported for text tool results'); return nl(texts); }
  if (texts !== null) return nl(texts);
  return goJSON(r.structuredContent && Object.keys(r.structuredContent).length ? r.structuredContent : resultStruct(r)) + '\n';
}

function firstSentence(desc) {
  let d = (desc.split('\n').map((l) => l.trim()).find((l) => l && !l.startsWith('#')) ?? '').trim();
  const dot = d.indexOf('. ');
  if (dot >= 0 && dot < 80) d = d.slice(0, dot + 1);
  return d.length > 70 ? d.slice(0, 67) + '...' : d;
}

/** text/tabwriter with padding 2, as both clients use it. */
function columns(rows, lead = '') {
  const w = rows.reduce((m, r) => Math.max(m, r[0].length), 0);
  return rows.map(([a, b]) => `${lead}${b ? a.padEnd(w + 2) + b : a}`.trimEnd() + '\n').join('');
}

/**
 * `py ...` as a person types it, through one of the clients, against rat-py
 * started with `args` (what `rat-py install` registers). cmd() returns what
 * the terminal shows and the exit status. tty: the lines a person would type
 * at an elicitation prompt (none: stdin is not a terminal).
 */
export class TermClient {
  constructor(client, args, { name = 'py', env = {} } = {}) {
    this.client = client;
    this.args = args;
    this.name = name;
    this.env = env;
    this.up = null;
    this.cache = null; // the cached tool schemas: taken once, never asked again
  }

  async server(daemon, tty = []) {
    const s = new Mcp2cliLike(this.args, { daemon, env: this.env, client: this.client });
    s.shown = '';
    s.onElicit = async (p) => {
      if (!tty.length) throw new Error('server requested user input, but stdin is not interactive');
      s.shown += `\nServer asks: ${p.message.trim()}\n`;
      const content = {};
      for (const a of specOf(p.requestedSchema)) {
        const answer = tty.shift() ?? '';
        s.shown += `${a.description ?? (p.requestedSchema.properties[a.name].description || a.cli)}${a.required ? '' : ' (optional)'}: ${answer}\n`;
        content[a.name] = answer.trim();
      }
      return { action: 'accept', content };
    };
    if (this.cache) s.schemas = Object.fromEntries(this.cache.map((t) => [t.name, t.inputSchema]));
    await s.start();
    if (!this.cache) { this.cache = s.tools; } else { s.tools = this.cache; }
    return s;
  }

  /** argv: what the shell hands `py` (see shellSplit). */
  async cmd(argv, { tty = [] } = {}) {
    const [sub, ...rest] = argv;
    if (sub === 'up') {
      if (this.up) return { out: `${this.name} is already running\n`, code: 0 };
      this.up = await this.server(true);
      return { out: `${this.name} is running (pid ${this.up.child.pid})\n`, code: 0 };
    }
    if (sub === 'down') {
      if (!this.up) return { out: `error: server "${this.name}" is not running\n`, code: 1 };
      const ex = await this.up.stop();
      this.up = null;
      return { out: `${this.name} stopped\n`, code: 0, exit: ex };
    }
    const s = this.up ?? await this.server(false, tty);
    try {
      if (sub === 'tools') {
        const { result } = await s.request('tools/list');
        this.cache = s.tools = result.tools; // `tools` refreshes the cache
        return { out: this.renderTools(result.tools), code: 0 };
      }
      const tool = sub === 'tool' ? rest.shift() : sub;
      let inv, args;
      try {
        inv = parseInvocation(rest);
        const schema = s.schemas[tool];
        if (!schema) throw new Usage(`tool "${tool}" not found`);
        if (inv.input) {
          if (inv.rest.length) throw new Usage('cannot combine --input with schema-derived tool arguments');
          try { args = JSON.parse(inv.input.startsWith('@') ? readFileSync(inv.input.slice(1), 'utf8') : inv.input); } catch (e) {
            throw new Usage(`parse --input as JSON object: ${goJSONError(inv.input)}`, { cause: e });
          }
        } else {
          args = parseToolArguments(schema, inv.rest);
        }
      } catch (e) {
        if (!(e instanceof Usage)) throw e;
        const head = /^parse --input/.test(e.message) ? CLIENTS[this.client].inputError : 'error';
        return { out: `${head}: ${e.message}\nhint: run \`${this.name} tools ${kebab(tool)}\`\n`, code: 2 };
      }
      const m = await s.call(tool, args);
      if (m.error) return { out: `error: call tool "${tool}": ${m.error.message}\n`, code: 7 };
      return { out: (s.shown ?? '') + renderResult(m.result, inv.output), code: 0, result: m.result, args };
    } finally {
      if (!this.up) await s.stop();
    }
  }

  /** `py shell`: one direct server for the session; lines typed at its prompt. */
  async shell(lines, { tty = [] } = {}) {
    const s = await this.server(false, tty);
    let out = '';
    if (CLIENTS[this.client].banner) {
      const { result: res } = await s.request('resources/list');
      out += `Connected to ${this.name}\n\nTools (${s.tools.length}):\n`;
      out += columns(s.tools.map((t) => [kebab(t.name), firstSentence(t.description ?? '')]), '  ');
      if (res.resources.length)
        out += `\nResources (${res.resources.length}):\n` + columns(res.resources.map((r) => [r.uri, firstSentence(r.description || r.name)]), '  ');
      out += '\nType help for commands, exit to quit.\n\n';
    }
    try {
      for (const line of lines) {
        out += `${this.name}> ${line}\n`;
        const [tool, ...rest] = shellSplit(line);
        if (tool === 'exit' || tool === 'quit') break;
        try {
          const m = await s.call(tool, parseToolArguments(s.schemas[tool], rest));
          out += m.error ? `error: call tool "${tool}": ${m.error.message}\n` : s.shown + renderResult(m.result, 'auto');
          s.shown = '';
        } catch (e) {
          if (!(e instanceof Usage)) throw e;
          out += `error: ${e.message}\n`;
        }
      }
    } finally {
      await s.stop();
    }
    return { out, code: 0 };
  }

  renderTools(tools) {
    const sorted = [...tools].sort((a, b) => (kebab(a.name) < kebab(b.name) ? -1 : 1));
    if (!CLIENTS[this.client].banner) // e005a6c: name and whole description
      return columns(sorted.map((t) => [kebab(t.name), (t.description ?? '').trim()]));
    return `Tools (${sorted.length}):\n\n` + columns(sorted.map((t) => [kebab(t.name), firstSentence(t.description ?? '')]), '  ') +
      `\nInspect:  ${this.name} tools <tool>\nInvoke:   ${this.name} <tool> [args...]\n`;
  }

  async close() {
    if (this.up) await this.up.stop();
    this.up = null;
  }
}

/** What Go's encoding/json says about text that is not a JSON object's start. */
function goJSONError(text) {
  const c = text.trimStart()[0];
  return c === undefined ? 'unexpected end of JSON input' : `invalid character '${c}' looking for beginning of value`;
}

/** A command line split as bash does for the README's commands: '...', "..." (\" \\ \$ \`), $'...' (\n \t \\ \'), \x. */
export function shellSplit(line) {
  const out = [];
  let cur = null, i = 0;
  const esc = { n: '\n', t: '\t', '\\': '\\', "'": "'", '"': '"' };
  while (i < line.length) {
    const c = line[i];
    if (c === ' ' || c === '\t') { if (cur !== null) out.push(cur); cur = null; i++; continue; }
    cur ??= '';
    if (c === "'") { const j = line.indexOf("'", i + 1); cur += line.slice(i + 1, j); i = j + 1; }
    else if (c === '$' && line[i + 1] === "'") {
      i += 2;
      while (line[i] !== "'") { if (line[i] === '\\') { cur += esc[line[i + 1]] ?? '\\' + line[i + 1]; i += 2; } else cur += line[i++]; }
      i++;
    } else if (c === '"') {
      i++;
      while (line[i] !== '"') { if (line[i] === '\\' && '"\\$`'.includes(line[i + 1])) { cur += line[i + 1]; i += 2; } else cur += line[i++]; }
      i++;
    } else if (c === '\\') { cur += line[i + 1]; i += 2; }
    else { cur += c; i++; }
  }
  if (cur !== null) out.push(cur);
  return out;
}
