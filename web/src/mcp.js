// A small MCP client over Streamable HTTP (POST /mcp; JSON or SSE replies),
// for this page only. The token, when the page was opened with ?token=, is
// sent as `Authorization: Bearer` and kept in sessionStorage (never in
// localStorage, never in the URL once read).

const PROTOCOL = '2025-11-25';

export function takeToken() {
  const url = new URL(location.href);
  const t = url.searchParams.get('token');
  if (t !== null) {
    sessionStorage.setItem('rat-token', t);
    url.searchParams.delete('token');
    history.replaceState(null, '', url.pathname + url.search + url.hash);
  }
  return sessionStorage.getItem('rat-token');
}

// Reads an SSE body: calls onEvent(dataString) for each event.
async function readSse(body, onEvent) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i).replace(/^\r?\n\r?\n/, '');
      const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (data) onEvent(data);
    }
  }
}

export class McpError extends Error {}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The connection: a session (initialize), its GET stream, and, when the
// server goes away (a network error, or 404 for the session: the server
// restarted), a new session as soon as the server answers again: state
// 'lost' → 'connected' through onState(state, why), then onReconnect()
// (the page subscribes again). Calls made meanwhile wait for it.
export class Mcp {
  constructor(token) {
    this.token = token;
    this.session = null;
    this.nextId = 1;
    this.onNotification = () => {};   // server-wide notifications (GET stream)
    this.onState = () => {};          // (state: 'connected'|'lost', why)
    this.onReconnect = async () => {};
    this.serverInfo = null;
    this.state = 'connecting';
    this.attempts = 0;
    this.newReady();
  }

  // Settles when connected: a call made before (Shift+Enter while the page
  // loads, or while the server is away) waits for the session instead of
  // going without one.
  newReady() {
    this.connected = new Promise((resolve) => { this.settle = resolve; });
  }

  headers() {
    const h = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    if (this.session) {
      h['Mcp-Session-Id'] = this.session;
      h['MCP-Protocol-Version'] = PROTOCOL;
    }
    return h;
  }

  // The server cannot be reached, or forgot the session.
  lost(why) {
    if (this.state === 'lost') return;
    this.state = 'lost';
    this.newReady();
    this.onState('lost', why);
    this.reconnect();
  }

  async reconnect() {
    const old = this.session;
    for (this.attempts = 1; ; this.attempts++) {
      await sleep(Math.min(500 * this.attempts, 3000));
      this.session = null;
      try {
        await this.handshake();
      } catch (e) {
        if (e.status === 401) { this.onState('lost', e.message); return; }
        continue;
      }
      if (old) fetch('/mcp', { method: 'DELETE', headers: { ...this.headers(), 'Mcp-Session-Id': old } }).catch(() => {});
      this.state = 'connected';
      this.settle();
      this.listen();
      try { await this.onReconnect(); } catch { /* the page's own business */ }
      this.onState('connected', `reconnected after ${this.attempts} attempt${this.attempts === 1 ? '' : 's'}`);
      return;
    }
  }

  // Sends one request; notifications that come on its stream go to onNote.
  // Resolves with the result, rejects with McpError (JSON-RPC error, HTTP,
  // or the connection lost).
  async request(method, params, onNote) {
    const id = this.nextId++;
    let res;
    try {
      res = await fetch('/mcp', {
        method: 'POST', headers: this.headers(), body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      });
    } catch {
      const e = new McpError('connection lost: the server cannot be reached');
      e.network = true;
      throw e;
    }
    if (res.status === 401) { const e = new McpError('401 Unauthorized: open the URL rat-py printed at start (with ?token=…)'); e.status = 401; throw e; }
    if (res.status === 404 && this.session) { const e = new McpError('connection lost: the server no longer knows this session (it restarted)'); e.network = true; throw e; }
    const sid = res.headers.get('Mcp-Session-Id');
    if (sid) this.session = sid;
    let reply = null;
    const handle = (msg) => {
      if (msg.id === id && (msg.result !== undefined || msg.error)) reply = msg;
      else if (msg.method && onNote) onNote(msg);
    };
    const ct = res.headers.get('Content-Type') || '';
    try {
      if (ct.startsWith('text/event-stream')) {
        await readSse(res.body, (d) => { try { handle(JSON.parse(d)); } catch { /* not JSON: ignore */ } });
      } else {
        const text = await res.text();
        try { handle(JSON.parse(text)); } catch { throw new McpError(`HTTP ${res.status}: ${text.slice(0, 200)}`); }
      }
    } catch (e) {
      if (e instanceof McpError) throw e;
      const err = new McpError(`connection lost while waiting for ${method}'s answer`);
      err.network = true;
      throw err;
    }
    if (!reply) { const e = new McpError(`connection lost: no answer to ${method} (HTTP ${res.status})`); e.network = true; throw e; }
    if (reply.error) throw new McpError(reply.error.message || 'error');
    return reply.result;
  }

  // request() for the page: a lost connection starts the reconnection.
  async send(method, params, onNote) {
    try {
      return await this.request(method, params, onNote);
    } catch (e) {
      if (e.network) this.lost(e.message);
      throw e;
    }
  }

  async notify(method, params) {
    await fetch('/mcp', { method: 'POST', headers: this.headers(), body: JSON.stringify({ jsonrpc: '2.0', method, params }) });
  }

  async handshake() {
    const r = await this.request('initialize', {
      protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'rat-py-page', version: '1' },
    });
    this.serverInfo = r.serverInfo;
    this.instructions = r.instructions || '';
    await this.notify('notifications/initialized');
    return r;
  }

  // The first session. A server that is not there yet is retried.
  async connect() {
    let r;
    try {
      r = await this.handshake();
    } catch (e) {
      if (e.network) this.lost(e.message);
      throw e;
    }
    this.state = 'connected';
    this.settle();
    this.listen();
    this.onState('connected', '');
    return r;
  }

  // The session's GET stream: server-initiated notifications (other
  // clients' runs, resources updated). When it ends, it is opened again at
  // once; when that fails, the connection is lost.
  async listen() {
    const session = this.session;
    while (this.state === 'connected' && this.session === session) {
      let res;
      try {
        const h = this.headers();
        h.Accept = 'text/event-stream';
        delete h['Content-Type'];
        res = await fetch('/mcp', { method: 'GET', headers: h });
        if (res.ok && res.body) await readSse(res.body, (d) => { try { this.onNotification(JSON.parse(d)); } catch { /* ignore */ } });
      } catch {
        if (this.session === session) this.lost('the server cannot be reached');
        return;
      }
      if (res.status === 404 && this.session === session) { this.lost('the server no longer knows this session (it restarted)'); return; }
      if (res.status === 401 || res.status === 405) return;
      await sleep(res.ok ? 200 : 2000);
    }
  }

  // tools/call; returns {text, isError, structured} (text: the text items
  // joined). meta: the request's _meta (extension flags such as rat/ansi).
  async call(name, args, onNote, meta) {
    await this.connected;
    const params = { name, arguments: args };
    if (meta) params._meta = meta;
    const r = await this.send('tools/call', params, onNote);
    const text = (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    return { text, isError: !!r.isError, structured: r.structuredContent || null };
  }
}
