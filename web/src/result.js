// What a `run` (or `ctl wait`) call returned, as one model the notebook
// renders. rat-py sends structuredContent (doc/tools.md#structured-results)
// next to the text; the text is read only from a server without it. This
// file is the only place that knows either form.
//
// model: { state: 'ok'|'error'|'cancelled'|'running'|'queued'|'waiting_for_input'|'refused',
//          outputs: [structured output items] | null (null: keep the streamed text),
//          items: [{kind:'text'|'image'|'html', text?, url?}] (text results only),
//          error: string|null, footer: string, execCount: number|null,
//          prompt: string|null, password: bool, note: string|null,
//          errorObj: {ename, evalue, traceback}|undefined (structured results),
//          fullUrl: /assets URL of the full output of a cut run|undefined }

const ASSET = /^\[(image|html): (\/assets\/[0-9a-f]+\.[a-z]+)\]$/;

export function parseRun(res, streamed) {
  const s = res.structured;
  if (s && typeof s.status === 'string' && Array.isArray(s.outputs)) return fromStructured(s);
  return fromText(res.text, res.isError, streamed);
}

export function fromStructured(s) {
  const state = s.status;
  const m = { state, outputs: s.outputs, items: [], error: null, footer: s.footer || '', execCount: s.exec_count || null,
    prompt: null, password: false, note: null };
  if (s.input) { m.prompt = s.input.prompt; m.password = !!s.input.password; }
  if (s.error) {
    m.error = (s.error.traceback && s.error.traceback.length ? s.error.traceback.join('\n') : `${s.error.ename}: ${s.error.evalue}`);
    m.errorObj = { ename: s.error.ename, evalue: s.error.evalue, traceback: s.error.traceback || [] };
  }
  else if (s.failure) m.error = s.failure;
  if (state === 'error' && !m.error) m.error = s.output || 'error';
  if (state === 'waiting_for_input' || state === 'running' || state === 'queued') m.footer = '';
  const t = s.truncated;
  if (t && (t.outputs_dropped || t.bytes_dropped))
    m.note = `… ${t.outputs_dropped ? `${t.outputs_dropped} outputs ` : ''}${t.bytes_dropped ? `${t.bytes_dropped} bytes ` : ''}not shown` +
      (t.full_output && !t.full_output_url ? ` (full text: ${t.full_output})` : '');
  if (t && t.full_output_url) m.fullUrl = t.full_output_url;
  return m;
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
// the asset lines are new.
function unseen(body, streamed) {
  if (!streamed) return body;
  if (body.startsWith(streamed)) return body.slice(streamed.length).replace(/^\n/, '');
  return body.split('\n').filter((l) => ASSET.test(l)).join('\n');
}

// The text result (doc/tools.md#run): output, a blank line, the footer.
export function fromText(text, isError, streamed) {
  const m = { state: isError ? 'error' : 'ok', outputs: null, items: [], error: null, footer: '', execCount: null,
    prompt: null, password: false, note: null };
  if (text.startsWith('INPUT PENDING') || text.startsWith('BUSY')) { m.state = 'refused'; m.error = text; return m; }
  const lines = text.split('\n');
  let end = lines.length;
  const inputAt = lines.findIndex((l) => l.startsWith('INPUT REQUESTED'));
  const waitAt = lines.findIndex((l) => /^⏳ (running|queued)/.test(l));
  if (inputAt >= 0) {
    m.state = 'waiting_for_input';
    const pl = lines[inputAt];
    m.password = /\(password/.test(pl);
    try { m.prompt = JSON.parse(pl.slice(pl.indexOf(': ') + 2)); } catch { m.prompt = ''; }
    end = inputAt;
  } else if (waitAt >= 0) {
    m.state = /^⏳ queued/.test(lines[waitAt]) ? 'queued' : 'running';
    end = waitAt;
  } else {
    for (let i = lines.length - 1; i >= 0; i--) if (/^[✓✗] /.test(lines[i])) { m.footer = lines.slice(i).join('\n'); end = i; break; }
  }
  const body = lines.slice(0, end).join('\n').replace(/\n+$/, '');
  const items = splitItems(unseen(body, streamed));
  if (m.state === 'error') {
    m.items = items.filter((i) => i.kind !== 'text');
    m.error = items.filter((i) => i.kind === 'text').map((i) => i.text).join('\n').trim() || 'error';
    if (/KeyboardInterrupt|CANCELLED|interrupted/.test(m.error)) m.state = 'cancelled';
  } else m.items = items;
  return m;
}
