// The variables panel: look {} rows, each expandable with ▸ through
// look {at: path}. Parses look's text today (doc/tools.md); structured rows
// (issue 15) are used when the result carries them.

// Rows "  name  type  preview" (columns separated by 2+ spaces).
function parseRows(lines) {
  const rows = [];
  for (const raw of lines) {
    if (!raw.trim() || /^…(\s|$)/.test(raw.trim())) continue; // the "…  more  N variables not listed" row
    const m = /^(\s*)(▸ )?(.*)$/.exec(raw);
    const cols = m[3].split(/ {2,}/);
    if (cols.length < 2) continue;
    rows.push({ name: cols[0], type: cols[1], preview: cols.slice(2).join('  '), expandable: !!m[2] });
  }
  return rows;
}

export function childPath(path, label) {
  if (label.startsWith('[')) return path + label;
  if (/^['"\d-]/.test(label)) return `${path}[${label}]`;
  return `${path}.${label}`;
}

export class Vars {
  constructor(root, mcp) {
    this.root = root;
    this.mcp = mcp;
    this.open = new Set();     // expanded paths survive a refresh
    this.seq = 0;
  }

  async refresh() {
    const seq = ++this.seq;
    let r;
    try { r = await this.mcp.call('look', {}); } catch { return null; }
    if (seq !== this.seq) return null;
    let rows, header;
    if (r.structured && Array.isArray(r.structured.rows)) {
      rows = r.structured.rows.map((x) => ({ name: x.name, type: x.type, preview: x.preview ?? '', expandable: !!x.expandable }));
      header = r.text.split('\n')[0];
    } else {
      const lines = r.text.split('\n');
      header = lines[0];
      rows = parseRows(lines.slice(1)).map((x) => ({ ...x, expandable: true }));
      if (/not available/.test(r.text)) rows = [];
    }
    const list = document.createElement('ul');
    list.className = 'tree';
    if (!rows.length) {
      const li = document.createElement('li');
      li.className = 'empty';
      li.textContent = /not available/.test(r.text) ? r.text.split('\n').slice(1).join(' ').trim() : 'No variables.';
      list.append(li);
    }
    for (const row of rows) list.append(this.row(row.name, row, 0));
    // Opened paths open again, at every depth, before the new tree replaces
    // the old one: nothing collapses or flickers after a run.
    await Promise.all([...list.querySelectorAll(':scope > li[data-path]')].filter((li) => this.open.has(li.dataset.path)).map((li) => this.expand(li)));
    if (seq !== this.seq) return null;
    this.root.replaceChildren(list);
    return header;
  }

  row(path, row, depth) {
    const li = document.createElement('li');
    li.dataset.path = path;
    const line = document.createElement('div');
    line.className = 'row';
    line.style.setProperty('--depth', depth);
    const tw = document.createElement('button');
    tw.className = 'twisty';
    tw.textContent = row.expandable ? '▸' : '';
    tw.disabled = !row.expandable;
    tw.setAttribute('aria-label', `expand ${path}`);
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = row.name;
    const type = document.createElement('span');
    type.className = 'type';
    type.textContent = row.type;
    const prev = document.createElement('span');
    prev.className = 'preview';
    prev.textContent = row.preview;
    prev.title = row.preview;
    line.append(tw, name, type, prev);
    li.append(line);
    if (row.expandable) {
      tw.addEventListener('click', () => (li.classList.contains('expanded') ? this.collapse(li) : this.expand(li)));
      name.addEventListener('click', () => tw.click());
    }
    li.depth = depth;
    return li;
  }

  collapse(li) {
    li.classList.remove('expanded');
    li.querySelector(':scope > .row > .twisty').textContent = '▸';
    li.querySelector(':scope > ul')?.remove();
    this.open.delete(li.dataset.path);
  }

  async expand(li) {
    const path = li.dataset.path;
    li.classList.add('expanded');
    li.querySelector(':scope > .row > .twisty').textContent = '▾';
    this.open.add(path);
    let r;
    try { r = await this.mcp.call('look', { at: path }); } catch { return; }
    li.querySelector(':scope > ul')?.remove();
    const ul = document.createElement('ul');
    const s = r.structured;
    let kids, detail;
    if (s && Array.isArray(s.children)) {
      kids = s.children.map((c) => ({ name: c.name, type: c.type, preview: c.value ?? '', expandable: !!c.expandable, path: c.path }));
      detail = s.source === 'kernel' ? (s.text || '') : [s.signature, s.doc].filter(Boolean).join('\n');
      if (!kids.length && !detail && s.value !== undefined) detail = `= ${s.value}`;
    } else {
      const lines = r.text.split('\n');
      const start = lines.findIndex((l, i) => i > 0 && l.trim() === '');
      kids = start > 0 ? parseRows(lines.slice(start + 1)) : [];
      detail = kids.length ? '' : lines.slice(1).join('\n').replace(/^\s+/gm, '').trim();
      if (!kids.length && !detail) detail = lines[0];
    }
    for (const k of kids) ul.append(this.row(k.path || childPath(path, k.name), k, li.depth + 1));
    const again = [...ul.querySelectorAll(':scope > li[data-path]')].filter((c) => this.open.has(c.dataset.path));
    if (detail) {
      const d = document.createElement('li');
      d.className = 'detail';
      d.style.setProperty('--depth', li.depth + 1);
      d.textContent = detail;
      ul.append(d);
    }
    li.append(ul);
    await Promise.all(again.map((c) => this.expand(c)));
  }
}
