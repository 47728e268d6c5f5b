// The page's cells as a Jupyter notebook (nbformat 4.5) and back. What the
// page does not use (cell and notebook metadata, attachments, cell ids,
// outputs' metadata) is kept as it came, so a notebook opened and saved here
// loses nothing Jupyter wrote.

const lines = (s) => (s ? String(s).split(/(?<=\n)/) : []);
const join = (s) => (Array.isArray(s) ? s.join('') : String(s ?? ''));
const TEXT_MIMES = (k) => !(k.startsWith('image/') && k !== 'image/svg+xml');
const isJson = (k) => k === 'application/json' || k.endsWith('+json');

// One output without the page's own fields (_el, _urls, ...), its parts
// held as /assets files fetched and embedded (base64 for images, text for
// the rest). fetchAsset(url) -> {mime, base64, text} or null.
async function outputToNb(o, fetchAsset) {
  if (o.output_type === 'stream') return { output_type: 'stream', name: o.name, text: lines(o.text) };
  if (o.output_type === 'error') return { output_type: 'error', ename: o.ename, evalue: o.evalue, traceback: (o.traceback || []).map(String) };
  const data = {};
  for (const [k, v] of Object.entries(o.data || {})) {
    if (isJson(k)) { try { data[k] = typeof v === 'string' ? JSON.parse(v) : v; } catch { data[k] = v; } continue; }
    data[k] = TEXT_MIMES(k) ? lines(join(v)) : join(v);
  }
  for (const [mime, url] of Object.entries(o._urls || {})) {
    if (data[mime] !== undefined && join(data[mime]) !== '') continue;
    const a = await fetchAsset(url);
    if (a) data[mime] = TEXT_MIMES(mime) ? lines(a.text) : a.base64;
  }
  if (data['text/plain'] === undefined) data['text/plain'] = [''];
  const out = { output_type: o.output_type === 'execute_result' ? 'execute_result' : 'display_data', data, metadata: o.metadata || {} };
  if (out.output_type === 'execute_result') out.execution_count = o.execution_count ?? null;
  return out;
}

// cells: [toJson() of each cell]; kernel: {name, display_name, language}
// from ctl status (the kernelspec Jupyter will start), or null for python3;
// metadata: the notebook's own (kept from the file it came from).
export async function toIpynb(cells, fetchAsset, kernel, metadata = {}) {
  const out = [];
  for (const c of cells) {
    const base = { cell_type: c.type === 'raw' ? 'raw' : c.type === 'markdown' ? 'markdown' : 'code', id: c.nbId, metadata: c.metadata || {}, source: lines(c.source) };
    if (base.cell_type !== 'code') {
      if (c.attachments && base.cell_type !== 'raw') base.attachments = c.attachments;
      out.push(base);
      continue;
    }
    const outputs = [];
    for (const o of c.outputs) outputs.push(await outputToNb(o, fetchAsset));
    out.push({ ...base, execution_count: c.execCount ?? null, outputs });
  }
  const md = { ...metadata };
  md.kernelspec = {
    name: kernel?.name || md.kernelspec?.name || 'python3',
    display_name: kernel?.display_name || kernel?.name || md.kernelspec?.display_name || 'Python 3 (ipykernel)',
    language: kernel?.language || md.kernelspec?.language || 'python',
  };
  md.language_info = { ...(md.language_info || {}), name: kernel?.language || md.language_info?.name || 'python' };
  return { cells: out, metadata: md, nbformat: 4, nbformat_minor: 5 };
}

// A notebook (JSON text or object) -> {cells: [cell json for
// Notebook.fromJson], metadata}. Throws with a reason a person can act on.
export function fromIpynb(nbOrText) {
  const nb = typeof nbOrText === 'string' ? JSON.parse(nbOrText) : nbOrText;
  if (!nb || typeof nb !== 'object' || !Array.isArray(nb.cells)) throw new Error('not a notebook (no cells)');
  if (nb.nbformat !== 4) throw new Error(`nbformat ${nb.nbformat} notebooks are not supported (open and save it in Jupyter to convert it to nbformat 4)`);
  const cells = nb.cells.map((c) => ({
    type: c.cell_type === 'code' ? 'code' : c.cell_type === 'raw' ? 'raw' : 'markdown',
    source: join(c.source),
    execCount: c.execution_count ?? null,
    metadata: c.metadata || {},
    attachments: c.attachments || null,
    nbId: typeof c.id === 'string' ? c.id : undefined,
    outputs: (c.outputs || []).map((o) => {
      if (o.output_type === 'stream') return { output_type: 'stream', name: o.name, text: join(o.text) };
      if (o.output_type === 'error') return { output_type: 'error', ename: o.ename, evalue: o.evalue, traceback: o.traceback || [] };
      const out = { output_type: o.output_type === 'execute_result' ? 'execute_result' : 'display_data', data: {}, metadata: o.metadata || {} };
      for (const [k, v] of Object.entries(o.data || {})) out.data[k] = isJson(k) ? v : join(v);
      if (out.output_type === 'execute_result') out.execution_count = o.execution_count ?? null;
      return out;
    }),
  }));
  return { cells, metadata: nb.metadata || {} };
}
