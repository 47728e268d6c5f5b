// The MCP App's side of SEP-1865 (MCP Apps, 2026-01-26): JSON-RPC 2.0 over
// postMessage with the host (window.parent; on a web host, its sandbox
// proxy, which forwards). The official App class (@modelcontextprotocol/
// ext-apps) brings the MCP SDK and zod, half a megabyte; this is the part
// the app uses: ui/initialize, notifications both ways, requests to the host
// (tools/call, resources/read), answers to the host's requests.

export const PROTOCOL = '2026-01-26';

export class Host {
  constructor(win = window, parent = window.parent) {
    this.parent = parent;
    this.nextId = 1;
    this.pending = new Map();
    this.handlers = new Map();   // notification method → fn(params)
    this.context = {};           // hostContext, merged with host-context-changed
    this.capabilities = {};
    win.addEventListener('message', (ev) => this.receive(ev));
  }

  on(method, fn) { this.handlers.set(method, fn); }

  receive(ev) {
    // Only the frame that holds this one speaks for the host.
    if (ev.source !== this.parent) return;
    const m = ev.data;
    if (!m || typeof m !== 'object' || m.jsonrpc !== '2.0') return;
    if (m.method === undefined && m.id !== undefined) {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.error) p.reject(Object.assign(new Error(String(m.error.message ?? 'error')), { code: m.error.code }));
      else p.resolve(m.result ?? {});
      return;
    }
    if (typeof m.method !== 'string') return;
    if (m.id !== undefined) {
      // The host's requests: teardown (nothing to save) and ping.
      if (m.method === 'ui/resource-teardown' || m.method === 'ping') this.post({ jsonrpc: '2.0', id: m.id, result: {} });
      else this.post({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `Method not found: ${m.method}` } });
      return;
    }
    if (m.method === 'ui/notifications/host-context-changed') Object.assign(this.context, m.params || {});
    const fn = this.handlers.get(m.method);
    if (fn) {
      try { fn(m.params || {}); } catch (e) { this.log('error', String(e && e.stack || e)); }
    }
  }

  post(msg) { this.parent.postMessage(msg, '*'); }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.post({ jsonrpc: '2.0', id, method, params });
    });
  }

  notify(method, params) { this.post({ jsonrpc: '2.0', method, params }); }

  log(level, data) { this.notify('notifications/message', { level, logger: 'rat-py-app', data }); }

  async connect(appInfo) {
    const r = await this.request('ui/initialize', {
      protocolVersion: PROTOCOL,
      appInfo,
      appCapabilities: { availableDisplayModes: ['inline'] },
    });
    this.context = r.hostContext || {};
    this.capabilities = r.hostCapabilities || {};
    this.notify('ui/notifications/initialized', {});
    return r;
  }

  // Tells the host the document's size whenever it changes (a flexible
  // container follows it).
  autoResize(el = document.documentElement) {
    let last = '';
    const send = () => {
      const w = Math.ceil(el.scrollWidth), h = Math.ceil(el.getBoundingClientRect().height);
      const key = `${w}x${h}`;
      if (key === last) return;
      last = key;
      this.notify('ui/notifications/size-changed', { width: w, height: h });
    };
    new ResizeObserver(send).observe(document.body);
    send();
  }

  // tools/call through the host, as the page's mcp.call answers: {text,
  // structured, isError}.
  async callTool(name, args) {
    const r = await this.request('tools/call', { name, arguments: args });
    return toResult(r);
  }
}

export function toResult(r) {
  const text = (r.content || []).filter((c) => c && c.type === 'text').map((c) => c.text).join('\n');
  return { text, structured: r.structuredContent || null, isError: !!r.isError };
}
