// rat-py's MCP App (doc/apps.md): one document for two tools. For `run` it
// is a notebook cell: the call's code, highlighted, then its result as the
// page renders it (streams, rich outputs in order, the traceback, an input()
// prompt to answer, the status line), with Edit / Run again / Cancel and a
// variable to look at, all through the host's tools/call. For `look` it is
// the variables panel: the overview, each row drilled into with look calls.
// Rendering is the page's own (../render.js, ../result.js, ../vars.js).
import { renderBundle, ansiInto, foldCR, joinText, setMdSource } from '../render.js';
import { fromStructured, fromText } from '../result.js';
import { Vars } from '../vars.js';
import { Host, toResult } from './host.js';
import { highlightInto } from './highlight.js';
import './app.css';

const MD_URI = 'ui://rat-py/md.js';
// What one result may put on the screen: a run that prints a million lines
// or shows ten thousand plots stays responsive (the rest is counted).
const MAX_OUTPUTS = 200;
const MAX_STREAM_CHARS = 200000;

const host = new Host();
const root = document.getElementById('app');
const el = (tag, cls, text) => { const n = document.createElement(tag); if (cls) n.className = cls; if (text !== undefined) n.textContent = text; return n; };

// ---- theme ------------------------------------------------------------------

const VAR_NAME = /^--[a-z0-9-]{1,64}$/;
function applyContext(ctx) {
  if (ctx.theme === 'dark' || ctx.theme === 'light') document.documentElement.dataset.theme = ctx.theme;
  const vars = ctx.styles && ctx.styles.variables;
  if (vars && typeof vars === 'object') {
    for (const [k, v] of Object.entries(vars)) {
      // Colours, sizes and font names; nothing that loads (url()).
      if (VAR_NAME.test(k) && typeof v === 'string' && v.length < 300 && !/url\s*\(/i.test(v)) document.documentElement.style.setProperty(k, v);
    }
  }
}

// ---- assets through the host (resources/read) ----------------------------------

const assetCache = new Map();
function readResource(uri) {
  if (!assetCache.has(uri)) {
    assetCache.set(uri, host.request('resources/read', { uri }).then((r) => (r.contents || [])[0] || null).catch(() => null));
  }
  return assetCache.get(uri);
}
const hooks = {
  // An image: a data: URL (the default CSP allows data: images, not blob:).
  assetUrl: (uri, mime) => readResource(uri).then((c) => {
    if (!c) return null;
    if (c.blob) return `data:${c.mimeType || mime};base64,${c.blob}`;
    if (typeof c.text === 'string') return `data:${c.mimeType || mime};charset=utf-8,${encodeURIComponent(c.text)}`;
    return null;
  }),
  fetchText: (uri) => readResource(uri).then((c) => (c && typeof c.text === 'string' ? c.text : null)),
  resolveImage: () => Promise.resolve(null),
};
setMdSource(() => readResource(MD_URI).then((c) => {
  if (!c || typeof c.text !== 'string') throw new Error('no markdown renderer');
  return c.text;
}));

// ---- the cell (run) ------------------------------------------------------------

class Cell {
  constructor(args) {
    this.code = typeof args.code === 'string' ? args.code : '';
    this.busy = false;
    this.node = el('section', 'cell');
    const head = el('div', 'head');
    this.count = el('span', 'count', 'In [ ]:');
    const tools = el('div', 'tools');
    this.editBtn = el('button', 'edit', 'Edit');
    this.runBtn = el('button', 'rerun', 'Run again');
    this.cancelBtn = el('button', 'cancel', 'Cancel');
    this.cancelBtn.disabled = true;
    tools.append(this.editBtn, this.runBtn, this.cancelBtn);
    head.append(this.count, tools);
    this.codeEl = el('pre', 'code');
    this.editor = el('textarea', 'editor');
    this.editor.spellcheck = false;
    this.editor.hidden = true;
    this.out = el('div', 'out');
    this.status = el('div', 'status');
    // No <form>: a host's sandbox may leave out allow-forms, and then a
    // submit never fires. A button and Enter do the same.
    const lookRow = el('div', 'lookat');
    this.lookInput = el('input');
    this.lookInput.placeholder = 'variable or expression path (df, model.layers[0])';
    this.lookInput.setAttribute('aria-label', 'variable to look at');
    const lookBtn = el('button', 'look', 'Look');
    lookRow.append(this.lookInput, lookBtn);
    this.lookOut = el('div', 'tree-wrap');
    this.node.append(head, this.codeEl, this.editor, this.out, this.status, lookRow, this.lookOut);
    this.showCode(this.code);
    if (args.input !== undefined && !this.code) this.codeEl.textContent = `(answer to input(): ${JSON.stringify(String(args.input))})`;
    this.editBtn.addEventListener('click', () => this.toggleEdit());
    this.runBtn.addEventListener('click', () => this.rerun());
    this.cancelBtn.addEventListener('click', () => this.cancel());
    this.editor.addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.shiftKey || e.ctrlKey)) { e.preventDefault(); this.rerun(); } });
    onSubmit(this.lookInput, lookBtn, () => this.lookAt(this.lookInput.value.trim()));
  }

  showCode(code) {
    this.codeEl.replaceChildren();
    highlightInto(this.codeEl, code);
  }

  toggleEdit() {
    const editing = this.editor.hidden;
    this.editor.hidden = !editing;
    this.codeEl.hidden = editing;
    this.editBtn.textContent = editing ? 'Done' : 'Edit';
    if (editing) {
      this.editor.value = this.code;
      this.editor.rows = Math.min(Math.max(this.code.split('\n').length, 2), 20);
      this.editor.focus();
    } else {
      this.code = this.editor.value;
      this.showCode(this.code);
    }
  }

  setBusy(b, label) {
    this.busy = b;
    this.node.classList.toggle('running', b);
    this.runBtn.disabled = b;
    this.cancelBtn.disabled = !b;
    if (label !== undefined) this.status.textContent = label;
  }

  // The result of a run (or ctl wait) call: the outputs it carries replace
  // what is shown. Returns the parsed model.
  show(res) {
    const m = res.structured && typeof res.structured.status === 'string' && Array.isArray(res.structured.outputs)
      ? fromStructured(res.structured) : fromText(res.text || '', res.isError, '');
    this.out.replaceChildren();
    if (m.execCount) this.count.textContent = `In [${m.execCount}]:`;
    if (m.outputs) renderOutputs(this.out, m.outputs, m.execCount);
    else for (const it of m.items) if (it.kind === 'text') this.out.append(streamEl('stdout', it.text));
    if (m.note) this.out.append(el('div', 'note', m.note));
    if (m.error) this.out.append(errorEl(m.errorObj || m.error, m.state === 'cancelled'));
    this.status.textContent = m.state === 'refused' ? '' : m.footer || (m.state === 'running' || m.state === 'queued' ? `${m.state}…` : '');
    this.node.classList.toggle('failed', !!m.error);
    if (m.state === 'waiting_for_input') this.ask(m.prompt, m.password);
    return m;
  }

  // A run through the host; a long one is followed with ctl wait.
  async call(tool, args) {
    this.setBusy(true, tool === 'run' && args.code ? 'running…' : 'waiting…');
    let res;
    try {
      for (;;) {
        res = await host.callTool(tool, args);
        const m = this.show(res);
        if (m.state === 'running' || m.state === 'queued') { tool = 'ctl'; args = { op: 'wait' }; continue; }
        break;
      }
    } catch (e) {
      this.out.append(errorEl(`The host refused the call: ${e.message || e}`, false));
    } finally {
      this.setBusy(false);
    }
    return res;
  }

  rerun() {
    if (this.busy) return;
    if (!this.editor.hidden) this.toggleEdit();
    this.out.replaceChildren();
    return this.call('run', { code: this.code, wait: 25 });
  }

  async cancel() {
    this.status.textContent = 'cancelling…';
    try {
      const r = await host.callTool('ctl', { op: 'cancel' });
      if (!this.busy) this.status.textContent = r.text.split('\n')[0];
    } catch (e) { this.status.textContent = `cancel failed: ${e.message || e}`; }
  }

  ask(prompt, password) {
    const form = el('div', 'ask');
    const label = el('label', null, prompt || 'input:');
    const inp = el('input');
    inp.type = password ? 'password' : 'text';
    inp.setAttribute('aria-label', 'answer to input()');
    const send = el('button', null, 'Send');
    form.append(label, inp, send);
    this.out.append(form);
    onSubmit(inp, send, () => {
      const answer = inp.value;
      form.remove();
      this.call('run', { code: '', input: answer, wait: 25 });
    });
    inp.focus();
  }

  lookAt(path) {
    if (!path) return;
    const vars = new Vars(this.lookOut, adapter);
    const ul = el('ul', 'tree');
    const li = vars.row(path, { name: path, type: '', preview: '', expandable: true }, 0);
    ul.append(li);
    this.lookOut.replaceChildren(ul);
    vars.expand(li);
  }
}

// Enter in the field or a click on the button.
function onSubmit(input, button, fn) {
  button.addEventListener('click', fn);
  input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && !e.isComposing) { e.preventDefault(); fn(); } });
}

function streamEl(name, text) {
  const pre = el('pre', `stream ${name}`);
  let t = String(text);
  if (t.length > MAX_STREAM_CHARS) t = `… ${t.length - MAX_STREAM_CHARS} characters not shown …\n${t.slice(-MAX_STREAM_CHARS)}`;
  ansiInto(pre, foldCR(t));
  return pre;
}

function errorEl(err, cancelled) {
  const pre = el('pre', `error${cancelled ? ' cancelled' : ''}`);
  if (err && typeof err === 'object') {
    const tb = err.traceback && err.traceback.length ? err.traceback.join('\n') : `${err.ename}: ${err.evalue}`;
    ansiInto(pre, tb);
  } else ansiInto(pre, String(err));
  return pre;
}

// Structured outputs (doc/tools.md#structured-results), in order; streams
// of one name that follow each other are one block, as in a notebook.
// Gathered first, drawn once: each output is looked at once, whatever the
// result holds.
function renderOutputs(box, outputs, execCount) {
  const blocks = [];
  for (const it of outputs) {
    if (!it || typeof it !== 'object') continue;
    if (it.type === 'clear_output') { blocks.length = 0; continue; }
    if (it.type === 'stream') {
      const last = blocks[blocks.length - 1];
      if (last && last.name === it.name) last.parts.push(String(it.text ?? ''));
      else blocks.push({ name: it.name, parts: [String(it.text ?? '')] });
      continue;
    }
    if (it.type === 'update_display_data') {
      for (const b of blocks) if (b.it && it.display_id && b.it.display_id === it.display_id) b.it = { ...b.it, data: it.data, assets: it.assets };
      continue;
    }
    blocks.push({ it });
  }
  for (const b of blocks.slice(0, MAX_OUTPUTS)) {
    if (!b.it) { box.append(streamEl(b.name, b.parts.join(''))); continue; }
    const urls = {};
    for (const a of b.it.assets || []) if (a && a.uri && a.mime) urls[a.mime] = a.uri;
    box.append(outputEl({ ...(b.it.data || {}) }, urls, b.it.type === 'execute_result' ? (b.it.execution_count ?? execCount) : null));
  }
  if (blocks.length > MAX_OUTPUTS) box.append(el('div', 'note', `… ${blocks.length - MAX_OUTPUTS} more outputs not shown`));
}

function outputEl(data, urls, count) {
  const wrap = el('div', 'output');
  if (count) wrap.append(el('span', 'out-prompt', `Out[${count}]:`));
  let node;
  try { node = renderBundle(data, urls, hooks); } catch (e) { node = el('pre', 'result', joinText(data['text/plain'] ?? String(e))); }
  wrap.append(node);
  return wrap;
}

// ---- the variables (look) ---------------------------------------------------------

// The page's Vars calls look through an mcp.call(name, args); the first
// answer is the one the host already gave this view.
const primed = new Map();
const adapter = {
  async call(name, args) {
    const key = `${name} ${JSON.stringify(args)}`;
    if (primed.has(key)) { const r = primed.get(key); primed.delete(key); return r; }
    return host.callTool(name, args);
  },
};

async function showVars(args, res) {
  const s = res.structured;
  const box = el('section', 'vars');
  const head = el('div', 'head');
  const title = el('span', 'title', 'Variables');
  const refresh = el('button', 'refresh', 'Refresh');
  head.append(title, refresh);
  const tree = el('div', 'tree-wrap');
  box.append(head, tree);
  root.replaceChildren(box);
  const vars = new Vars(tree, adapter);
  if (typeof args.at === 'string' && args.at) {
    title.textContent = args.at;
    primed.set(`look ${JSON.stringify({ at: args.at })}`, res);
    const ul = el('ul', 'tree');
    const li = vars.row(args.at, { name: args.at, type: (s && s.type) || '', preview: (s && s.value) || '', expandable: true }, 0);
    ul.append(li);
    tree.replaceChildren(ul);
    await vars.expand(li);
    refresh.addEventListener('click', () => vars.expand(li));
    return;
  }
  primed.set(`look ${JSON.stringify({})}`, res);
  const header = await vars.refresh();
  if (header) title.textContent = header;
  refresh.addEventListener('click', async () => { const h = await vars.refresh(); if (h) title.textContent = h; });
}

// ---- lifecycle -----------------------------------------------------------------------

let args = null, cell = null, mode = null;

function toolName() {
  const t = host.context.toolInfo && host.context.toolInfo.tool;
  return t && typeof t.name === 'string' ? t.name : null;
}

host.on('ui/notifications/tool-input', (p) => {
  args = p.arguments && typeof p.arguments === 'object' ? p.arguments : {};
  mode = toolName() === 'look' || (toolName() !== 'run' && typeof args.code !== 'string') ? 'look' : 'run';
  if (mode === 'run') {
    cell = new Cell(args);
    cell.setBusy(true, 'running…');
    root.replaceChildren(cell.node);
  } else {
    root.replaceChildren(el('p', 'wait', 'Looking…'));
  }
});

host.on('ui/notifications/tool-result', (p) => {
  const res = toResult(p);
  if (!args) args = {};
  if (res.structured && typeof res.structured.view === 'string') mode = 'look';
  if (mode === 'look') { showVars(args, res); return; }
  if (!cell) { cell = new Cell(args); root.replaceChildren(cell.node); }
  cell.setBusy(false);
  const m = cell.show(res);
  // The agent's call came back before its run ended: follow it here.
  if (m.state === 'running' || m.state === 'queued') cell.call('ctl', { op: 'wait' });
});

host.on('ui/notifications/tool-cancelled', (p) => {
  if (cell) { cell.setBusy(false, `cancelled${p.reason ? `: ${p.reason}` : ''}`); }
  else root.replaceChildren(el('p', 'wait', `The call was cancelled${p.reason ? `: ${p.reason}` : ''}.`));
});

host.on('ui/notifications/host-context-changed', () => applyContext(host.context));

host.connect({ name: 'rat-py', version: '1' }).then(() => {
  applyContext(host.context);
  host.autoResize();
}, (e) => { root.replaceChildren(el('p', 'wait', `The host did not answer ui/initialize: ${e.message || e}`)); });
