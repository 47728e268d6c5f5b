// Save and open the page's cells as a Jupyter notebook (nbformat 4.5).

const lines = (s) => (s ? s.split(/(?<=\n)/) : []);

// Images are embedded (base64) so the notebook stands alone in Jupyter;
// fetchAsset(url) -> {mime, base64} or null. kernel: {name, display_name,
// language} from ctl status (the kernelspec Jupyter will start), or null
// for python3.
export async function toIpynb(cells, fetchAsset, kernel) {
  const out = [];
  for (const c of cells) {
    const source = lines(c.view.state.doc.toString());
    if (c.type !== 'code') { out.push({ cell_type: 'markdown', id: c.id, metadata: {}, source }); continue; }
    const outputs = [];
    for (const o of c.outputs) {
      if (o.output_type === 'stream') { outputs.push({ output_type: 'stream', name: o.name, text: lines(o.text) }); continue; }
      if (o.output_type === 'error') { outputs.push({ output_type: 'error', ename: o.ename, evalue: o.evalue, traceback: o.traceback }); continue; }
      const data = {};
      for (const [k, v] of Object.entries(o.data || {})) data[k] = k.startsWith('image/') && k !== 'image/svg+xml' ? v : lines(String(v));
      for (const url of (o.metadata && o.metadata['rat/assets']) || []) {
        const a = await fetchAsset(url);
        if (a) data[a.mime] = a.mime.startsWith('image/') && a.mime !== 'image/svg+xml' ? a.base64 : lines(a.text);
      }
      if (!data['text/plain']) data['text/plain'] = [''];
      outputs.push({ output_type: 'display_data', data, metadata: {} });
    }
    out.push({ cell_type: 'code', id: c.id, execution_count: c.execCount ?? null, metadata: {}, source, outputs });
  }
  return {
    cells: out,
    metadata: {
      kernelspec: {
        name: kernel?.name || 'python3',
        display_name: kernel?.display_name || kernel?.name || 'Python 3 (ipykernel)',
        language: kernel?.language || 'python',
      },
      language_info: { name: kernel?.language || 'python' },
    },
    nbformat: 4,
    nbformat_minor: 5,
  };
}

// -> [{type, source, execCount, outputs}] (outputs in nbformat form)
export function fromIpynb(text) {
  const nb = JSON.parse(text);
  if (!nb || !Array.isArray(nb.cells) || nb.nbformat !== 4) throw new Error('not an nbformat 4 notebook');
  const join = (s) => (Array.isArray(s) ? s.join('') : String(s ?? ''));
  return nb.cells.map((c) => ({
    type: c.cell_type === 'code' ? 'code' : 'markdown',
    source: join(c.source),
    execCount: c.execution_count ?? null,
    outputs: (c.outputs || []).map((o) => ({ ...o, text: o.text !== undefined ? join(o.text) : undefined })),
  }));
}
