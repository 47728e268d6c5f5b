// The notebook: cells (code, markdown, raw), running them through `run`,
// live output, input() answered in place, exec counts, command mode's
// selection, moving, deleting with undo. Rendering reads only result.js's
// model and render.js's elements; outputs are kept in nbformat's shape.
import { makeEditor, cellTypeEffects } from './editor.js';
import { parseRun } from './result.js';
import { closeCompletion } from '@codemirror/autocomplete';
import { foldLine, foldCR, ansiInto, hasAnsi, renderBundle, renderMarkdown, joinText } from './render.js';

let nextId = 1;
const newNbId = () => (crypto.randomUUID ? crypto.randomUUID().replace(/-/g, '').slice(0, 12) : Math.random().toString(36).slice(2, 14));

// A structured output item of `run` (or of a rat/event) in nbformat's
// shape; _urls: {mime: /assets URL} of the parts held as files (fetched and
// embedded when the notebook is saved), _displayId: display_id.
function itemToOutput(it, execCount) {
  if (it.type === 'stream') return { output_type: 'stream', name: it.name === 'stderr' ? 'stderr' : 'stdout', text: it.text || '' };
  const urls = {};
  for (const a of it.assets || []) if (a.url && a.mime) urls[a.mime] = a.url;
  const o = { output_type: it.type === 'execute_result' ? 'execute_result' : 'display_data', data: { ...(it.data || {}) }, metadata: {}, _urls: urls };
  if (o.output_type === 'execute_result') o.execution_count = it.execution_count ?? execCount ?? null;
  if (it.display_id) o._displayId = it.display_id;
  return o;
}

export class Notebook {
  constructor(root, mcp, hooks) {
    this.root = root;
    this.mcp = mcp;
    // {afterRun(), assetUrl(url), fetchText(url), resolveImage(src),
    //  changed(), toast(text, action)}
    this.hooks = hooks;
    this.cells = [];
    this.active = null;
    this.mode = 'edit';          // 'edit' (typing in a cell) or 'command' (Jupyter's keys)
    this.anchor = null;          // the other end of a Shift+↑/↓ selection
    this.mine = new Set();       // cells whose run this page is following
    this.tail = Promise.resolve(); // the end of this page's run queue
    this.epoch = 0;              // moves on an error or an interrupt: queued runs then do not run
    this.watched = new Map();    // run id -> cell, for other clients' runs
    this.trash = [];             // deleted cells, for undo: [{cells: [json], index}]
  }

  changed() { this.hooks.changed?.(); }

  // --- cells ----------------------------------------------------------------

  // Adds a cell after `after` (null: at the end), or before `before`.
  add(source = '', after = null, type = 'code', before = null) {
    const cell = { id: `c${nextId++}`, nbId: newNbId(), type, running: false, outputs: [], execCount: null, metadata: {}, attachments: null };
    const el = document.createElement('section');
    el.className = `cell ${type}`;
    el.dataset.id = cell.id;
    el.tabIndex = -1;
    el.innerHTML = '<div class="gutter"><span class="count"></span></div><div class="body"><div class="editor"></div><div class="md" hidden></div><div class="out" aria-live="polite"></div></div>';
    cell.el = el;
    cell.countEl = el.querySelector('.count');
    cell.outEl = el.querySelector('.out');
    cell.mdEl = el.querySelector('.md');
    const keys = {
      run: () => this.run(cell),
      runAndAdvance: () => { this.run(cell); this.advance(cell); },
      runAndInsert: () => { this.run(cell); this.focus(this.add('', cell)); },
      focusUp: () => { const i = this.cells.indexOf(cell); if (i > 0) this.focus(this.cells[i - 1], 'end'); },
      focusDown: () => { const n = this.next(cell); if (n) this.focus(n, 'start'); },
      escape: () => this.command(cell),
      changed: () => this.changed(),
    };
    cell.view = makeEditor(el.querySelector('.editor'), source, this.mcp, keys, type);
    this.setCount(cell, null);
    el.addEventListener('focusin', (e) => {
      if (el.querySelector('.editor').contains(e.target) || e.target === el.querySelector('.editor')) { this.mode = 'edit'; document.body.classList.remove('command-mode'); this.select(cell); }
    });
    // A click beside the editor (the prompt, the output, rendered markdown)
    // selects the cell in command mode, as in Jupyter.
    el.addEventListener('mousedown', (e) => {
      if (e.target.closest('.editor, .ask, button, a, input, iframe')) return;
      if (e.shiftKey && this.active && this.active !== cell) { this.extendTo(cell); e.preventDefault(); return; }
      this.command(cell);
    });
    cell.mdEl.addEventListener('dblclick', () => this.edit(cell));
    const i = before ? this.cells.indexOf(before) : after ? this.cells.indexOf(after) + 1 : this.cells.length;
    this.cells.splice(i, 0, cell);
    if (before) before.el.before(el); else if (after) after.el.after(el); else this.root.append(el);
    this.changed();
    return cell;
  }

  next(cell) { return this.cells[this.cells.indexOf(cell) + 1] || null; }

  // Shift+Enter's "next": the cell below, or a new one at the end (edit
  // mode), or the next cell selected (command mode).
  advance(cell) {
    const n = this.next(cell);
    if (this.mode === 'command') this.command(n || this.add('', cell));
    else this.focus(n || this.add('', cell));
  }

  // The active cell, and the selection (one cell, or a Shift range).
  select(cell, keepRange = false) {
    if (!keepRange) this.anchor = null;
    this.active = cell;
    this.paintSelection();
  }

  selection() {
    if (!this.active) return [];
    if (!this.anchor || !this.cells.includes(this.anchor)) return [this.active];
    const a = this.cells.indexOf(this.anchor), b = this.cells.indexOf(this.active);
    return this.cells.slice(Math.min(a, b), Math.max(a, b) + 1);
  }

  paintSelection() {
    const sel = new Set(this.selection());
    for (const c of this.cells) {
      c.el.classList.toggle('active', c === this.active);
      c.el.classList.toggle('selected', sel.has(c) && this.mode === 'command');
    }
  }

  extendTo(cell) {
    if (!this.anchor) this.anchor = this.active;
    this.active = cell;
    this.mode = 'command';
    document.body.classList.add('command-mode');
    cell.el.focus({ preventScroll: true });
    cell.el.scrollIntoView({ block: 'nearest' });
    this.paintSelection();
  }

  // Command mode on cell: the editor lets go of the keys, the cell takes them.
  command(cell, keepRange = false) {
    if (!cell) return;
    this.mode = 'command';
    document.body.classList.add('command-mode');
    closeCompletion(cell.view);
    this.select(cell, keepRange);
    cell.el.focus({ preventScroll: true });
    cell.el.scrollIntoView({ block: 'nearest' });
  }

  // Edit mode in cell (a rendered markdown cell shows its source again).
  edit(cell) {
    if (cell.type === 'markdown' && cell.rendered) this.unrender(cell);
    this.focus(cell);
  }

  focus(cell, where) {
    if (!cell) return;
    this.mode = 'edit';
    document.body.classList.remove('command-mode');
    if (cell.type === 'markdown' && cell.rendered) this.unrender(cell);
    this.select(cell);
    const v = cell.view;
    if (where === 'end') v.dispatch({ selection: { anchor: v.state.doc.length } });
    else if (where === 'start') v.dispatch({ selection: { anchor: 0 } });
    v.focus();
    cell.el.scrollIntoView({ block: 'nearest' });
  }

  source(cell) { return cell.view.state.doc.toString(); }

  // A cell as data (for undo, copy and paste, the session snapshot, saving).
  toJson(cell) {
    return {
      type: cell.type, source: this.source(cell), execCount: cell.execCount, metadata: cell.metadata || {},
      attachments: cell.attachments || null, nbId: cell.nbId, outputs: cell.outputs.map((o) => ({ ...o })),
    };
  }

  fromJson(j, after = null, before = null, keepId = false) {
    const cell = this.add(j.source || '', after, j.type || 'code', before);
    if (keepId && j.nbId) cell.nbId = j.nbId;
    cell.metadata = j.metadata || {};
    cell.attachments = j.attachments || null;
    for (const o of j.outputs || []) this.addOutput(cell, o);
    this.setCount(cell, j.execCount ?? null);
    if (cell.type === 'markdown' && j.rendered !== false) this.renderMd(cell);
    return cell;
  }

  // Removes cells (a selection); they can come back with undo().
  remove(cells) {
    cells = cells.filter((c) => this.cells.includes(c) && !c.running);
    if (!cells.length) return;
    const index = this.cells.indexOf(cells[0]);
    this.trash.push({ index, cells: cells.map((c) => this.toJson(c)) });
    if (this.trash.length > 50) this.trash.shift();
    for (const c of cells) { this.cells.splice(this.cells.indexOf(c), 1); c.view.destroy(); c.el.remove(); }
    if (!this.cells.length) this.add('');
    this.anchor = null;
    this.command(this.cells[Math.min(index, this.cells.length - 1)]);
    this.changed();
    this.hooks.toast?.(cells.length === 1 ? 'Cell deleted.' : `${cells.length} cells deleted.`, { label: 'Undo', run: () => this.undo() });
  }

  undo() {
    const t = this.trash.pop();
    if (!t) return false;
    const at = this.cells[t.index] || null;
    let first = null;
    for (const j of t.cells) {
      const c = this.fromJson(j, null, at, true);
      first = first || c;
    }
    this.command(first);
    this.changed();
    return true;
  }

  // Moves the selection one place up (-1) or down (+1).
  move(delta) {
    const sel = this.selection();
    if (!sel.length) return;
    const a = this.cells.indexOf(sel[0]), b = this.cells.indexOf(sel[sel.length - 1]);
    if ((delta < 0 && a === 0) || (delta > 0 && b === this.cells.length - 1)) return;
    if (delta < 0) {
      const prev = this.cells[a - 1];
      this.cells.splice(a - 1, 1);
      this.cells.splice(b, 0, prev);
      sel[sel.length - 1].el.after(prev.el);
    } else {
      const nx = this.cells[b + 1];
      this.cells.splice(b + 1, 1);
      this.cells.splice(a, 0, nx);
      sel[0].el.before(nx.el);
    }
    this.active.el.scrollIntoView({ block: 'nearest' });
    if (this.mode === 'edit') this.active.view.focus(); else this.active.el.focus({ preventScroll: true });
    this.changed();
  }

  // Code, markdown or raw. A code cell that becomes text loses its outputs
  // (nbformat: only code cells have them).
  setType(cells, type) {
    for (const c of cells) {
      if (c.type === type || c.running) continue;
      if (c.type === 'markdown' && c.rendered) this.unrender(c);
      c.type = type;
      c.el.className = c.el.className.replace(/\b(code|markdown|raw)\b/, type);
      c.view.dispatch({ effects: cellTypeEffects(type, this.mcp) });
      if (type !== 'code') { this.resetOutput(c); c.execCount = null; }
      this.setCount(c, null);
    }
    this.paintSelection();
    this.changed();
  }

  clear() {
    for (const c of this.cells) { c.view.destroy(); c.el.remove(); }
    this.cells = [];
    this.active = null;
    this.anchor = null;
    this.trash = [];
  }

  setCount(cell, n) {
    if (n !== undefined && n !== null) cell.execCount = n;
    if (cell.type !== 'code') { cell.countEl.textContent = ''; return; }
    cell.countEl.textContent = cell.running ? '[*]' : `[${cell.execCount ?? ' '}]`;
  }

  // --- markdown ---------------------------------------------------------------

  renderMd(cell) {
    if (cell.type !== 'markdown') return;
    const src = this.source(cell);
    cell.rendered = true;
    cell.el.classList.add('rendered');
    cell.mdEl.hidden = false;
    if (!src.trim()) { cell.mdEl.textContent = 'Type Markdown and LaTeX: $\\alpha^2$'; cell.mdEl.classList.add('placeholder'); return; }
    cell.mdEl.classList.remove('placeholder');
    renderMarkdown(cell.mdEl, src, cell.attachments, this.hooks.resolveImage);
  }

  unrender(cell) {
    cell.rendered = false;
    cell.el.classList.remove('rendered');
    cell.mdEl.hidden = true;
  }

  // --- output -------------------------------------------------------------
  // cell.outputs holds what the cell shows, in nbformat's shape (see
  // itemToOutput); each output's element is o._el (not saved).

  // Adds an output element, above the footer line and a pending prompt
  // (which stay last).
  put(cell, el) {
    const f = cell.outEl.querySelector(':scope > .footer, :scope > .ask');
    if (f) f.before(el); else cell.outEl.append(el);
  }

  resetOutput(cell) {
    cell.outEl.textContent = '';
    cell.outputs = [];
    cell.streamed = '';
  }

  // Everything but the footer and a pending prompt.
  clearOutputs(cell) {
    for (const o of cell.outputs) o._el?.remove();
    for (const el of [...cell.outEl.children]) if (!el.matches('.footer, .ask') && el.nodeType === 1 && !el.matches('.keep')) el.remove();
    cell.outputs = [];
  }

  // A stream output's element: done lines (folded, appended to) and the
  // last line (raw until its newline: a carriage return may rewrite it).
  streamEl(o) {
    const pre = document.createElement('pre');
    pre.className = 'stream';
    const span = document.createElement('span');
    span.className = o.name;
    pre.append(span);
    o._el = pre;
    o._span = span;
    this.setStreamText(o, o.text);
    return pre;
  }

  setStreamText(o, text) {
    const span = o._span;
    span.textContent = '';
    if (hasAnsi(text)) { ansiInto(span, foldCR(text)); o._ansi = true; return; }
    const nl = text.lastIndexOf('\n');
    o._done = document.createTextNode(foldCR(text.slice(0, nl + 1)));
    o._tail = text.slice(nl + 1);
    o._tailNode = document.createTextNode(foldLine(o._tail));
    span.append(o._done, o._tailNode);
  }

  appendStream(cell, name, text) {
    if (!text) return;
    cell.streamed = (cell.streamed || '') + text;
    // A call's stream never joins an output from before the call: the
    // call's result replaces exactly what it streamed (follow()).
    const last = cell.outputs.length > (cell.floor || 0) ? cell.outputs[cell.outputs.length - 1] : null;
    if (last && last.output_type === 'stream' && last.name === name && last._el?.isConnected && !last._ansi && !hasAnsi(text)) {
      last.text += text;
      const s = last._tail + text;
      const nl = s.lastIndexOf('\n');
      if (nl >= 0) {
        last._done.appendData(foldCR(s.slice(0, nl + 1)));
        last._tail = s.slice(nl + 1);
      } else last._tail = s;
      last._tailNode.data = foldLine(last._tail);
      return;
    }
    if (last && last.output_type === 'stream' && last.name === name && last._el?.isConnected) {
      last.text += text;
      this.setStreamText(last, last.text);
      return;
    }
    this.addOutput(cell, { output_type: 'stream', name, text });
  }

  // The element of one output (nbformat's shape).
  outputEl(cell, o) {
    if (o.output_type === 'stream') return this.streamEl(o);
    if (o.output_type === 'error') {
      const pre = document.createElement('pre');
      pre.className = o._cancelled ? 'error cancelled' : 'error';
      const tb = Array.isArray(o.traceback) && o.traceback.length ? o.traceback.join('\n') : `${o.ename}: ${o.evalue}`;
      ansiInto(pre, tb);
      o._el = pre;
      return pre;
    }
    const el = renderBundle(o.data || {}, o._urls || {}, this.hooks);
    let wrap = el;
    if (o.output_type === 'execute_result') {
      wrap = document.createElement('div');
      wrap.className = 'result-wrap';
      const label = document.createElement('span');
      label.className = 'out-prompt';
      label.textContent = `Out[${o.execution_count ?? ' '}]:`;
      wrap.append(label, el);
    }
    if (o._displayId) wrap.dataset.displayId = o._displayId;
    o._el = wrap;
    return wrap;
  }

  addOutput(cell, o) {
    if (o.output_type === 'stream') {
      o = { output_type: 'stream', name: o.name === 'stderr' ? 'stderr' : 'stdout', text: joinText(o.text) };
      const last = cell.outputs.length > (cell.floor || 0) ? cell.outputs[cell.outputs.length - 1] : null;
      if (last && last.output_type === 'stream' && last.name === o.name && last._el?.isConnected) { this.appendStream(cell, o.name, o.text); return; }
    }
    this.put(cell, this.outputEl(cell, o));
    cell.outputs.push(o);
  }

  // One output item of run's structuredContent (or of a rat/event).
  renderItem(cell, it) {
    if (it.type === 'stream') { this.appendStream(cell, it.name, it.text); return; }
    if (it.type === 'clear_output') { this.clearOutputs(cell); return; }
    const o = itemToOutput(it, cell.execCount);
    if (it.type === 'update_display_data') {
      if (!it.display_id) return;
      for (const old of cell.outputs) {
        if (old._displayId !== it.display_id) continue;
        old.data = o.data;
        old._urls = o._urls;
        const prev = old._el;
        const el = this.outputEl(cell, old);
        prev?.replaceWith(el);
      }
      return;
    }
    this.addOutput(cell, o);
  }

  // A text result's extra parts (a server without structuredContent).
  appendItem(cell, it) {
    if (it.kind === 'text') this.renderItem(cell, { type: 'display_data', data: { 'text/plain': it.text }, assets: [] });
    else this.renderItem(cell, { type: 'display_data', data: {}, assets: [{ mime: it.kind === 'image' ? 'image/png' : 'text/html', url: it.url }] });
  }

  // An error: the kernel's (ename, evalue, traceback with its colours), or
  // a failure of the run (text).
  appendError(cell, err, cancelled) {
    let o;
    if (err && typeof err === 'object') o = { output_type: 'error', ename: err.ename || 'Error', evalue: err.evalue || '', traceback: err.traceback && err.traceback.length ? err.traceback : [`${err.ename}: ${err.evalue}`] };
    else {
      const text = String(err);
      const last = text.trim().split('\n').pop() || text;
      const i = last.indexOf(':');
      o = { output_type: 'error', ename: i > 0 && !/\s/.test(last.slice(0, i)) ? last.slice(0, i) : 'Error', evalue: i > 0 ? last.slice(i + 1).trim() : last, traceback: text.split('\n') };
    }
    if (cancelled) o._cancelled = true;
    this.addOutput(cell, o);
  }

  footer(cell, text) {
    let f = cell.outEl.querySelector(':scope > .footer');
    if (!text) { if (f) f.remove(); return; }
    if (!f) { f = document.createElement('div'); f.className = 'footer'; }
    cell.outEl.append(f);
    f.textContent = text;
  }

  // A note under the outputs that links to a file (the full output of a cut run).
  link(cell, text, href, label) {
    const d = document.createElement('div');
    d.className = 'note keep';
    d.append(document.createTextNode(text));
    if (href) {
      const a = document.createElement('a');
      a.href = href;
      a.target = '_blank';
      a.rel = 'noopener';
      a.textContent = label;
      d.append(a);
    }
    this.put(cell, d);
  }

  // --- running ------------------------------------------------------------

  // Stops what this page has queued (an error or an interrupt, as Jupyter
  // aborts its queue): those runs end as "not run".
  abortQueued() { this.epoch++; }

  // Runs a cell (a markdown cell renders). Resolves with how it ended: ok,
  // error, cancelled, aborted (not run: an earlier run failed), skipped.
  async run(cell) {
    closeCompletion(cell.view);
    if (cell.type === 'markdown') { this.renderMd(cell); this.changed(); return 'ok'; }
    if (cell.type !== 'code' || cell.running) return 'skipped';
    const code = this.source(cell);
    if (!code.trim()) return 'skipped';
    const epoch = this.epoch;
    this.resetOutput(cell);
    cell.running = true;
    cell.execCount = null;
    cell.el.classList.add('running');
    cell.el.classList.remove('failed');
    this.setCount(cell, null);
    this.footer(cell, 'queued…');
    cell.runExec = null;
    this.mine.add(cell);
    this.changed();
    // One run call at a time from this page: each holds a connection while
    // it runs, and a browser opens only six per server, so queued calls
    // could starve the Interrupt button's. rat-py runs them in this order
    // anyway.
    const { prev, release } = this.enqueue();
    let outcome = 'ok';
    try {
      await prev;
      if (epoch !== this.epoch) {
        outcome = 'aborted';
        this.footer(cell, 'not run: a cell above failed or was interrupted');
      } else {
        outcome = await this.follow(cell, { code, wait: 3600 });
      }
    } catch (e) {
      outcome = 'error';
      this.appendError(cell, String(e.message || e), false);
      cell.el.classList.add('failed');
      if (!cell.outEl.querySelector(':scope > .footer')?.textContent.startsWith('✗')) this.footer(cell, '✗ the run\'s result was lost (see above)');
    } finally {
      if (outcome === 'error' || outcome === 'cancelled') this.epoch++;
      release();
      this.settle(cell);
      if (outcome !== 'aborted') {
        const header = await this.hooks.afterRun(cell);
        // A server without structured results: the overview's header that
        // follows the run has the last count ("python idle | 2 vars | exec #5").
        const hm = /exec #(\d+)( running)?/.exec(header || '');
        if (cell.execCount == null && hm) this.setCount(cell, hm[2] ? +hm[1] - 1 : +hm[1]);
      }
    }
    return outcome;
  }

  // After a reload: the run this page had started is still going (or its
  // result waits): follow it in its cell with ctl wait.
  async resume(cell, exec) {
    if (cell.running) return;
    cell.running = true;
    cell.el.classList.add('running');
    this.setCount(cell, null);
    this.mine.add(cell);
    const { prev, release } = this.enqueue();
    try {
      await prev;
      this.clearOutputs(cell);
      const outcome = await this.follow(cell, exec ? { op: 'wait', exec } : { op: 'wait' }, 'ctl', true);
      if (outcome === 'nothing') this.footer(cell, 'the run ended while the page was away: its output was not kept');
    } catch (e) {
      this.appendError(cell, String(e.message || e), false);
    } finally {
      release();
      this.settle(cell);
      this.hooks.afterRun(cell);
    }
  }

  // A place in this page's run queue: prev settles when it is this one's
  // turn; release() lets the next one go.
  enqueue() {
    const prev = this.tail;
    let release;
    this.tail = new Promise((r) => { release = r; });
    return { prev, release };
  }

  // A run of this page's is over (ended, failed, or not run).
  settle(cell) {
    this.mine.delete(cell);
    cell.running = false;
    cell.el.classList.remove('running');
    this.setCount(cell, cell.execCount);
    this.changed();
  }

  // --- other clients' runs (rat/event, doc/tools.md#watching) ----------------

  onEvent(ev) {
    if (ev.mine) {
      // This page's own run: the kernel took it.
      const c = this.current;
      if (ev.type === 'run_started' && c && ev.exec_count) { c.runExec = ev.exec_count; this.changed(); }
      if (ev.type === 'run_started' && c && c.outEl.querySelector(':scope > .footer')?.textContent === 'waiting for the kernel…') this.footer(c, 'running…');
      return;
    }
    let cell = this.watched.get(ev.run);
    if (ev.type === 'run_started') {
      const last = this.cells[this.cells.length - 1];
      const blank = last && !last.running && !last.view.state.doc.length && !last.outputs.length;
      // Above a blank last cell (where the person types next), else at the end.
      cell = this.add(ev.code || '', null, 'code', blank ? last : null);
      cell.el.classList.add('watched', 'running');
      cell.running = true;
      cell.watchedRun = ev.run;
      const who = document.createElement('div');
      who.className = 'origin';
      who.textContent = `run by another client (session ${ev.session ?? '?'})${ev.code_truncated ? ' · code cut to 16 KiB' : ''}`;
      cell.el.querySelector('.body').prepend(who);
      this.setCount(cell, ev.exec_count || null);
      this.footer(cell, 'running…');
      this.watched.set(ev.run, cell);
      if (blank) cell.el.scrollIntoView({ block: 'nearest' });
      return;
    }
    if (!cell) return;
    if (ev.type === 'run_output') {
      for (const it of ev.outputs || []) this.renderItem(cell, it);
      if (ev.dropped && (ev.dropped.outputs || ev.dropped.bytes)) this.appendStream(cell, 'stderr', `\n… ${ev.dropped.bytes || 0} bytes not shown live\n`);
    } else if (ev.type === 'run_input') {
      this.footer(cell, `waiting for input: ${JSON.stringify(ev.input?.prompt ?? '')} (the client that started the run answers it)`);
    } else if (ev.type === 'run_ended') {
      this.watched.delete(ev.run);
      cell.running = false;
      cell.el.classList.remove('running');
      if (ev.error) { this.appendError(cell, { ename: ev.error.ename, evalue: ev.error.evalue }, ev.status === 'cancelled'); cell.el.classList.add('failed'); }
      else if (ev.failure) { this.appendError(cell, ev.failure, ev.status === 'cancelled'); cell.el.classList.add('failed'); }
      const ms = ev.duration_ms ?? 0;
      const d = ms < 1000 ? `${ms}ms` : ms < 60000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.floor(ms / 60000)}m ${Math.round((ms % 60000) / 1000)}s`;
      this.footer(cell, `${ev.success ? '✓' : '✗'} ${d}${ev.vars !== undefined ? ` | ${ev.vars} var${ev.vars === 1 ? '' : 's'}` : ''}`);
      this.setCount(cell, ev.exec_count || cell.execCount);
      this.changed();
    }
  }

  // One run or ctl-wait call, then whatever it leads to (an input() prompt,
  // a long run followed with ctl wait), until the run has ended. Output
  // streams in live (notifications/message); the call's structured result
  // then replaces what this call streamed with the complete, ordered
  // outputs (images, displays, clear_output applied). Resolves with ok,
  // error, cancelled, or (resuming: nothing to wait for) nothing.
  async follow(cell, args, tool = 'run', resuming = false) {
    for (;;) {
      const mark = document.createComment('call');
      this.put(cell, mark);
      const before = cell.outputs.length;
      cell.floor = before;
      cell.streamed = '';
      const onNote = (n) => {
        if (n.method === 'notifications/message' && (n.params.logger === 'stdout' || n.params.logger === 'stderr')) {
          if (cell.outEl.querySelector(':scope > .footer')?.textContent === 'waiting for the kernel…') this.footer(cell, 'running…');
          this.appendStream(cell, n.params.logger, typeof n.params.data === 'string' ? n.params.data : JSON.stringify(n.params.data));
        }
      };
      this.footer(cell, tool === 'run' && args.code ? 'waiting for the kernel…' : 'running…');
      this.current = cell;
      // _meta "rat/ansi": tracebacks keep the kernel's colours.
      const res = await this.mcp.call(tool, args, onNote, { 'rat/ansi': true }).finally(() => { this.current = null; });
      if (resuming && tool === 'ctl' && res.structured && res.structured.op === 'wait' && res.structured.ok === false) {
        mark.remove();
        // The page before the reload still holds the run for a moment
        // (rat-py notices a closed connection at its next keepalive): ask again.
        if (/already being followed/.test(res.text) && (cell.resumeTries = (cell.resumeTries || 0) + 1) <= 30) {
          await new Promise((r) => setTimeout(r, 500));
          continue;
        }
        this.footer(cell, '');
        return 'nothing';
      }
      resuming = false;
      const m = parseRun(res, cell.streamed);
      if (m.outputs) {
        // Drop what this call streamed; show the call's outputs instead.
        for (const o of cell.outputs.slice(before)) o._el?.remove();
        while (mark.nextSibling && !mark.nextSibling.matches?.('.footer, .ask')) mark.nextSibling.remove();
        cell.outputs.length = before;
        for (const it of m.outputs) this.renderItem(cell, it);
      } else {
        for (const it of m.items) this.appendItem(cell, it);
      }
      mark.remove();
      cell.floor = 0;
      if (m.note) this.link(cell, m.fullUrl ? `${m.note} here: ` : m.note, m.fullUrl ? this.hooks.assetUrl(m.fullUrl) : null, 'open the full output');
      if (m.execCount) { this.setCount(cell, m.execCount); cell.runExec = m.execCount; }
      for (const o of cell.outputs) if (o.output_type === 'execute_result' && o.execution_count == null && m.execCount) {
        o.execution_count = m.execCount;
        const l = o._el?.querySelector('.out-prompt');
        if (l) l.textContent = `Out[${m.execCount}]:`;
      }
      if (m.state === 'waiting_for_input') {
        this.footer(cell, '');
        const answer = await this.ask(cell, m.prompt, m.password);
        if (answer === null) return this.cancelInput(cell);
        tool = 'run'; args = { code: '', input: answer, wait: 3600 };
        continue;
      }
      if (m.state === 'running' || m.state === 'queued') { tool = 'ctl'; args = { op: 'wait' }; continue; }
      if (m.error) {
        this.appendError(cell, m.errorObj || m.error, m.state === 'cancelled');
        cell.el.classList.add('failed');
      }
      this.footer(cell, m.state === 'refused' ? '' : m.footer);
      return m.state === 'error' || m.state === 'refused' ? 'error' : m.state === 'cancelled' ? 'cancelled' : 'ok';
    }
  }

  // Escape at an input() prompt: interrupt that run. Its end is the cancel's
  // answer (ctl wait would hand out whatever other run is waiting, and the
  // interrupted one is not handed out again); only a run that ended on its
  // own before the interrupt arrived is collected with ctl wait.
  async cancelInput(cell) {
    this.footer(cell, 'cancelling…');
    let r;
    try { r = await this.mcp.call('ctl', { op: 'cancel' }); } catch (e) { r = { text: String(e.message || e), structured: null }; }
    const verdict = r.structured?.verdict;
    if (verdict === 'ended') {
      const outcome = await this.follow(cell, { op: 'wait' }, 'ctl', true);
      return outcome === 'nothing' ? 'ok' : outcome;
    }
    this.appendError(cell, { ename: 'KeyboardInterrupt', evalue: 'input() was cancelled', traceback: ['KeyboardInterrupt: input() was cancelled'] }, true);
    cell.el.classList.add('failed');
    this.footer(cell, `✗ cancelled · ${r.text.split('\n')[0]}`);
    return 'cancelled';
  }

  // Shows the prompt in the cell's output; resolves with the answer, or
  // null when the user cancels (Escape or the button). Focus goes back to
  // where it was (the cell Shift+Enter moved to) once answered.
  ask(cell, prompt, password) {
    const back = this.mode === 'edit' ? this.active : null;
    return new Promise((resolve) => {
      const row = document.createElement('form');
      row.className = 'ask';
      const label = document.createElement('label');
      label.textContent = prompt || 'input:';
      const inp = document.createElement('input');
      inp.type = password ? 'password' : 'text';
      inp.autocomplete = 'off';
      inp.spellcheck = false;
      inp.setAttribute('aria-label', prompt || 'input');
      const stop = document.createElement('button');
      stop.type = 'button';
      stop.textContent = 'Cancel';
      row.append(label, inp, stop);
      this.put(cell, row);
      const done = (v) => {
        // The prompt and the answer, as Jupyter keeps them: stdout.
        const o = { output_type: 'stream', name: 'stdout', text: `${v === null ? prompt : `${prompt}${password ? '········' : v}`}\n` };
        const hadFocus = row.contains(document.activeElement);
        row.replaceWith(this.streamEl(o));
        cell.outputs.push(o);
        if (hadFocus && back && this.cells.includes(back)) this.focus(back);
        resolve(v);
      };
      row.addEventListener('submit', (e) => { e.preventDefault(); done(inp.value); });
      stop.addEventListener('click', () => done(null));
      inp.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.stopPropagation(); done(null); } });
      inp.focus();
    });
  }
}
