// What a `run` (or `ctl wait`) call returned, as one model the notebook
// renders. Today it is read from the result's text (doc/tools.md: output,
// blank line, footer); when the server sends structuredContent (issue 15)
// fromStructured takes over: this file is the only place that knows either.
//
// model: { state: 'ok'|'error'|'running'|'queued'|'input'|'refused',
//          items: [{kind:'text'|'image'|'html', text?, url?}],  // after the streamed text
//          error: string|null, footer: string, execCount: number|null,
//          prompt: string|null, password: bool }

const ASSET = /^\[(image|html): (\/assets\/[0-9a-f]+\.[a-z]+)\]$/;

export function parseRun(res, streamed) {
  if (res.structured && res.structured.status) return fromStructured(res.structured, streamed);
  return fromText(res.text, res.isError, streamed);
}

function splitItems(body) {
  const items = [];
  let text = [];
  const flush = () => { if (text.length) items.push({ kind: 'text', text: text.join('\n') }); text = []; };
  for (const line of body.split('\n')) {
    const m = ASSET.exec(line);
    if (m) { flush(); items.push({ kind: m[1], url: m[2] }); } else text.push(line);
  }
  flush();
  return items.filter((i) => i.kind !== 'text' || i.text.trim() !== '');
}

// The part of body the stream has not shown: body starts with what was
// streamed unless the result cut it (over 100 lines), in which case only
// the asset lines and what follows the streamed text are new.
function unseen(body, streamed) {
  if (!streamed) return body;
  if (body.startsWith(streamed)) return body.slice(streamed.length).replace(/^\n/, '');
  return body.split('\n').filter((l) => ASSET.test(l)).join('\n');
}

export function fromText(text, isError, streamed) {
  const m = { state: isError ? 'error' : 'ok', items: [], error: null, footer: '', execCount: null, prompt: null, password: false };
  const lines = text.split('\n');
  let end = lines.length;
  const inputAt = lines.findIndex((l) => l.startsWith('INPUT REQUESTED'));
  const waitAt = lines.findIndex((l) => /^⏳ (running|queued)/.test(l));
  if (text.startsWith('INPUT PENDING') || text.startsWith('BUSY')) {
    m.state = 'refused'; m.error = text; return m;
  }
  if (inputAt >= 0) {
    m.state = 'input';
    const pl = lines[inputAt];
    m.password = /\(password/.test(pl);
    try { m.prompt = JSON.parse(pl.slice(pl.indexOf(': ') + 2)); } catch { m.prompt = ''; }
    const ex = /exec #(\d+)/.exec(lines[inputAt + 1] || '');
    if (ex) m.execCount = +ex[1];
    end = inputAt;
  } else if (waitAt >= 0) {
    m.state = /^⏳ queued/.test(lines[waitAt]) ? 'queued' : 'running';
    const ex = /exec #(\d+)/.exec(lines[waitAt]);
    if (ex) m.execCount = +ex[1];
    m.footer = lines[waitAt];
    end = waitAt;
  } else {
    let f = -1;
    for (let i = lines.length - 1; i >= 0; i--) if (/^[✓✗] /.test(lines[i])) { f = i; break; }
    if (f >= 0) {
      m.footer = lines.slice(f).join('\n');
      end = f;
    }
  }
  let body = lines.slice(0, end).join('\n').replace(/\n+$/, '');
  if (m.state === 'error') {
    // The error lines follow the output: what the stream did not show and
    // is not an asset is the error.
    const rest = unseen(body, streamed);
    const items = splitItems(rest);
    m.items = items.filter((i) => i.kind !== 'text');
    m.error = items.filter((i) => i.kind === 'text').map((i) => i.text).join('\n').trim() || 'error';
    if (/KeyboardInterrupt|CANCELLED|interrupted/.test(m.error)) m.state = 'cancelled';
    return m;
  }
  m.items = splitItems(unseen(body, streamed));
  return m;
}

// structuredContent of run (issue 15): status, exec_count, duration_ms,
// outputs as MIME bundles, error {ename, evalue, traceback}, input prompt.
export function fromStructured(s, streamed) {
  const m = { state: s.status === 'input_requested' ? 'input' : s.status, items: [], error: null, footer: '',
    execCount: s.exec_count ?? null, prompt: null, password: false };
  if (s.input) { m.prompt = s.input.prompt ?? ''; m.password = !!s.input.password; }
  const streamedLen = streamed ? streamed.length : 0;
  let seen = 0;
  for (const o of s.outputs || []) {
    if (o.type === 'stream' || o.output_type === 'stream') {
      // Streamed live already, unless the stream showed less.
      const t = o.text || '';
      if (seen + t.length > streamedLen) m.items.push({ kind: 'text', text: t.slice(Math.max(0, streamedLen - seen)) });
      seen += t.length;
      continue;
    }
    const d = o.data || o.bundle || {};
    const url = (k) => (typeof d[k] === 'object' && d[k] ? d[k].url : d[k]);
    if (d['image/png'] || d['image/jpeg'] || d['image/svg+xml']) m.items.push({ kind: 'image', url: url('image/png') || url('image/jpeg') || url('image/svg+xml') });
    else if (d['text/html']) m.items.push({ kind: 'html', url: url('text/html') });
    else if (d['text/plain'] !== undefined) m.items.push({ kind: 'text', text: String(d['text/plain']) });
  }
  if (s.error) {
    const tb = (s.error.traceback || []).join('\n');
    m.error = tb || `${s.error.ename}: ${s.error.evalue}`;
    if (s.status === 'cancelled' || s.error.ename === 'KeyboardInterrupt') m.state = 'cancelled';
  }
  if (s.duration_ms !== undefined) m.footer = `${s.status === 'ok' ? '✓' : '✗'} ${fmtMs(s.duration_ms)}`;
  return m;
}

function fmtMs(ms) {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60000)}m ${Math.round((ms % 60000) / 1000)}s`;
}
