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

export class Mcp {
  constructor(token) {
    this.token = token;
    this.session = null;
    this.nextId = 1;
    this.onNotification = () => {};   // server-wide notifications (GET stream)
    this.serverInfo = null;
    // Settles when connect() has: a call made before (Shift+Enter while the
    // page loads) waits for the session instead of going without one.
    this.connected = new Promise((resolve, reject) => { this.settle = { resolve, reject }; });
    this.connected.catch(() => {});
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

  // Sends one request; notifications that come on its stream go to onNote.
  // Resolves with the result, rejects with McpError (JSON-RPC error or HTTP).
  async request(method, params, onNote) {
    const id = this.nextId++;
    const res = await fetch('/mcp', {
      method: 'POST', headers: this.headers(), body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
    });
    if (res.status === 401) throw new McpError('401 Unauthorized: open the URL rat-py printed at start (with ?token=…)');
    if (res.status === 404 && this.session) throw new McpError('session expired: reload the page');
    const sid = res.headers.get('Mcp-Session-Id');
    if (sid) this.session = sid;
    let reply = null;
    const handle = (msg) => {
      if (msg.id === id && (msg.result !== undefined || msg.error)) reply = msg;
      else if (msg.method && onNote) onNote(msg);
    };
    const ct = res.headers.get('Content-Type') || '';
    if (ct.startsWith('text/event-stream')) {
      await readSse(res.body, (d) => { try { handle(JSON.parse(d)); } catch { /* not JSON: ignore */ } });
    } else {
      const text = await res.text();
      try { handle(JSON.parse(text)); } catch { throw new McpError(`HTTP ${res.status}: ${text.slice(0, 200)}`); }
    }
    if (!reply) throw new McpError(`no answer to ${method} (HTTP ${res.status})`);
    if (reply.error) throw new McpError(reply.error.message || 'error');
    return reply.result;
  }

  async notify(method, params) {
    await fetch('/mcp', { method: 'POST', headers: this.headers(), body: JSON.stringify({ jsonrpc: '2.0', method, params }) });
  }

  async connect() {
    let r;
    try {
      r = await this.request('initialize', {
        protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'rat-py-page', version: '1' },
      });
      this.serverInfo = r.serverInfo;
      this.instructions = r.instructions || '';
      await this.notify('notifications/initialized');
    } catch (e) {
      this.settle.reject(e);
      throw e;
    }
    this.settle.resolve();
    this.listen();
    return r;
  }

  // The session's GET stream: server-initiated notifications (other
  // clients' runs, resources updated). Reconnects after a pause.
  async listen() {
    for (;;) {
      try {
        const h = this.headers();
        h.Accept = 'text/event-stream';
        delete h['Content-Type'];
        const res = await fetch('/mcp', { method: 'GET', headers: h });
        if (res.ok && res.body) await readSse(res.body, (d) => { try { this.onNotification(JSON.parse(d)); } catch { /* ignore */ } });
        if (res.status === 404 || res.status === 401 || res.status === 405) return;
      } catch { /* network: retry */ }
      await new Promise((r) => setTimeout(r, 2000));
    }
  }

  // tools/call; returns {text, isError, structured} (text: the text items joined).
  async call(name, args, onNote) {
    await this.connected;
    const r = await this.request('tools/call', { name, arguments: args }, onNote);
    const text = (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    return { text, isError: !!r.isError, structured: r.structuredContent || null };
  }
}
