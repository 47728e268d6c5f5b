// The notebook: cells, running them through `run`, live output, input()
// answered in place, exec counts. Rendering reads only result.js's model.
import { makeEditor } from './editor.js';
import { parseRun } from './result.js';
import { closeCompletion } from '@codemirror/autocomplete';

let nextId = 1;

export class Notebook {
  constructor(root, mcp, hooks) {
    this.root = root;
    this.mcp = mcp;
    this.hooks = hooks;       // {afterRun(), status(text), assetUrl(url)}
    this.cells = [];
    this.active = null;
  }

  add(source = '', after = null, type = 'code') {
    const cell = { id: `c${nextId++}`, type, running: false, outputs: [], execCount: null };
    const el = document.createElement('section');
    el.className = `cell ${type}`;
    el.dataset.id = cell.id;
    el.innerHTML = '<div class="gutter"><span class="count"></span></div><div class="body"><div class="editor"></div><div class="out" aria-live="polite"></div></div>';
    cell.el = el;
    cell.countEl = el.querySelector('.count');
    cell.outEl = el.querySelector('.out');
    this.setCount(cell, null);
    const keys = {
      run: () => this.run(cell),
      runAndAdvance: () => { this.run(cell); this.focus(this.next(cell) || this.add('', cell)); },
      runAndInsert: () => { this.run(cell); this.focus(this.add('', cell)); },
      focusUp: () => { const i = this.cells.indexOf(cell); if (i > 0) this.focus(this.cells[i - 1], 'end'); },
      focusDown: () => { const n = this.next(cell); if (n) this.focus(n, 'start'); },
    };
    cell.view = makeEditor(el.querySelector('.editor'), source, this.mcp, keys);
    el.addEventListener('focusin', () => this.setActive(cell));
    const i = after ? this.cells.indexOf(after) + 1 : this.cells.length;
    this.cells.splice(i, 0, cell);
    if (after) after.el.after(el); else this.root.append(el);
    return cell;
  }

  next(cell) { return this.cells[this.cells.indexOf(cell) + 1] || null; }

  setActive(cell) {
    if (this.active) this.active.el.classList.remove('active');
    this.active = cell;
    cell.el.classList.add('active');
  }

  focus(cell, where) {
    this.setActive(cell);
    const v = cell.view;
    if (where === 'end') v.dispatch({ selection: { anchor: v.state.doc.length } });
    else if (where === 'start') v.dispatch({ selection: { anchor: 0 } });
    v.focus();
    cell.el.scrollIntoView({ block: 'nearest' });
  }

  remove(cell) {
    if (this.cells.length === 1) return;
    const i = this.cells.indexOf(cell);
    this.cells.splice(i, 1);
    cell.view.destroy();
    cell.el.remove();
    this.focus(this.cells[Math.min(i, this.cells.length - 1)]);
  }

  clear() {
    for (const c of this.cells) { c.view.destroy(); c.el.remove(); }
    this.cells = [];
    this.active = null;
  }

  setCount(cell, n) {
    cell.execCount = n ?? cell.execCount;
    cell.countEl.textContent = cell.running ? '[*]' : `[${n ?? (cell.execCount ?? ' ')}]`;
  }

  // --- output -------------------------------------------------------------

  // Adds an output element, above the footer line (which stays last).
  put(cell, el) {
    const f = cell.outEl.querySelector(':scope > .footer');
    if (f) f.before(el); else cell.outEl.append(el);
  }

  resetOutput(cell) {
    cell.outEl.textContent = '';
    cell.outputs = [];
    cell.stream = null;
    cell.streamed = '';
  }

  appendStream(cell, name, text) {
    cell.streamed += text;
    let pre = cell.stream;
    if (!pre) {
      pre = document.createElement('pre');
      pre.className = 'stream';
      this.put(cell, pre);
      cell.stream = pre;
    }
    const last = pre.lastChild;
    if (last && last.dataset.name === name) last.textContent += text;
    else {
      const span = document.createElement('span');
      span.dataset.name = name;
      span.className = name;
      span.textContent = text;
      pre.append(span);
    }
    const o = cell.outputs[cell.outputs.length - 1];
    if (o && o.output_type === 'stream' && o.name === name) o.text += text;
    else cell.outputs.push({ output_type: 'stream', name, text });
  }

  appendItem(cell, it) {
    cell.stream = null;
    if (it.kind === 'text') {
      const pre = document.createElement('pre');
      pre.className = 'result';
      pre.textContent = it.text;
      this.put(cell, pre);
      cell.outputs.push({ output_type: 'display_data', data: { 'text/plain': it.text }, metadata: {} });
    } else if (it.kind === 'image') {
      const img = document.createElement('img');
      img.className = 'image';
      img.alt = 'image output';
      img.src = this.hooks.assetUrl(it.url);
      this.put(cell, img);
      cell.outputs.push({ output_type: 'display_data', data: { 'text/plain': `<image ${it.url}>` }, metadata: { 'rat/asset': it.url } });
    } else if (it.kind === 'html') {
      const f = document.createElement('iframe');
      f.className = 'html';
      f.setAttribute('sandbox', '');
      f.src = this.hooks.assetUrl(it.url);
      f.title = 'HTML output';
      this.put(cell, f);
      cell.outputs.push({ output_type: 'display_data', data: { 'text/plain': `<html ${it.url}>` }, metadata: { 'rat/asset': it.url } });
    }
  }

  appendError(cell, text, cancelled) {
    cell.stream = null;
    const pre = document.createElement('pre');
    pre.className = cancelled ? 'error cancelled' : 'error';
    pre.textContent = text;
    this.put(cell, pre);
    const first = text.split('\n').find((l) => /^\w+(Error|Exception|Interrupt)?:?/.test(l)) || text;
    const i = first.indexOf(':');
    cell.outputs.push({ output_type: 'error', ename: i > 0 ? first.slice(0, i) : 'Error', evalue: i > 0 ? first.slice(i + 1).trim() : first, traceback: text.split('\n') });
  }

  // An output read from a saved notebook (nbformat 4).
  renderSaved(cell, o) {
    const join = (v) => (Array.isArray(v) ? v.join('') : String(v ?? ''));
    if (o.output_type === 'stream') { this.appendStream(cell, o.name === 'stderr' ? 'stderr' : 'stdout', join(o.text)); return; }
    if (o.output_type === 'error') { this.appendError(cell, (o.traceback || []).join('\n').replace(/\x1b\[[0-9;]*m/g, '') || `${o.ename}: ${o.evalue}`, false); return; }
    const d = o.data || {};
    cell.stream = null;
    const png = d['image/png'] || d['image/jpeg'];
    if (png) {
      const img = document.createElement('img');
      img.className = 'image';
      img.alt = 'image output';
      const mime = d['image/png'] ? 'image/png' : 'image/jpeg';
      img.src = `data:${mime};base64,${join(png).replace(/\s/g, '')}`;
      this.put(cell, img);
      cell.outputs.push(o);
      return;
    }
    if (d['text/plain'] !== undefined) {
      const pre = document.createElement('pre');
      pre.className = 'result';
      pre.textContent = join(d['text/plain']);
      this.put(cell, pre);
      cell.outputs.push({ output_type: 'display_data', data: { 'text/plain': join(d['text/plain']) }, metadata: {} });
    }
  }

  footer(cell, text) {
    let f = cell.outEl.querySelector('.footer');
    if (!text) { if (f) f.remove(); return; }
    if (!f) { f = document.createElement('div'); f.className = 'footer'; }
    cell.outEl.append(f);
    f.textContent = text;
  }

  // --- running ------------------------------------------------------------

  async run(cell) {
    closeCompletion(cell.view);
    if (cell.type !== 'code' || cell.running) return;
    const code = cell.view.state.doc.toString();
    if (!code.trim()) return;
    this.resetOutput(cell);
    cell.running = true;
    cell.el.classList.add('running');
    cell.el.classList.remove('failed');
    this.setCount(cell, null);
    this.footer(cell, 'queued…');
    cell.execCount = null;
    let ranCount = null;
    try {
      await this.follow(cell, { code, wait: 3600 });
      ranCount = cell.execCount;
    } catch (e) {
      this.appendError(cell, String(e.message || e), false);
    } finally {
      cell.running = false;
      cell.el.classList.remove('running');
      this.setCount(cell, cell.execCount);
      // The text result has no exec count: the overview's header that
      // follows every run has the last one ("python idle | 2 vars | exec #5").
      const header = await this.hooks.afterRun(cell);
      const m = /^\S+ (\w+)\b.*exec #(\d+)( running)?/.exec(header || '');
      if (m && !ranCount) this.setCount(cell, m[3] ? +m[2] - 1 : +m[2]);
    }
  }

  // One run or ctl-wait call, then whatever it leads to (an input() prompt,
  // a long run followed with ctl wait), until the run has ended.
  async follow(cell, args, tool = 'run') {
    for (;;) {
      const onNote = (n) => {
        if (n.method === 'notifications/message' && (n.params.logger === 'stdout' || n.params.logger === 'stderr')) {
          if (cell.outEl.querySelector('.footer')?.textContent === 'queued…') this.footer(cell, 'running…');
          this.appendStream(cell, n.params.logger, typeof n.params.data === 'string' ? n.params.data : JSON.stringify(n.params.data));
        }
      };
      this.footer(cell, cell.streamed ? 'running…' : 'queued…');
      const res = await this.mcp.call(tool, args, onNote);
      const m = parseRun(res, cell.streamed);
      if (m.execCount) this.setCount(cell, m.execCount);
      for (const it of m.items) this.appendItem(cell, it);
      cell.streamed = '';
      cell.stream = null;
      if (m.state === 'input') {
        this.footer(cell, '');
        const answer = await this.ask(cell, m.prompt, m.password);
        if (answer === null) {
          await this.mcp.call('ctl', { op: 'cancel' });
          tool = 'ctl'; args = { op: 'wait' };
          continue;
        }
        tool = 'run'; args = { code: '', input: answer, wait: 3600 };
        continue;
      }
      if (m.state === 'running' || m.state === 'queued') { tool = 'ctl'; args = { op: 'wait' }; continue; }
      if (m.state === 'refused') {
        this.appendError(cell, m.error, false);
        cell.el.classList.add('failed');
        this.footer(cell, '');
        return;
      }
      if (m.error) {
        this.appendError(cell, m.error, m.state === 'cancelled');
        cell.el.classList.add('failed');
      }
      this.footer(cell, m.footer);
      return;
    }
  }

  // Shows the prompt in the cell's output; resolves with the answer, or
  // null when the user cancels (Escape or the button).
  ask(cell, prompt, password) {
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
        const echo = document.createElement('pre');
        echo.className = 'stream';
        echo.textContent = v === null ? `${prompt}` : `${prompt}${password ? '········' : v}`;
        row.replaceWith(echo);
        cell.outputs.push({ output_type: 'stream', name: 'stdout', text: echo.textContent + '\n' });
        resolve(v);
      };
      row.addEventListener('submit', (e) => { e.preventDefault(); done(inp.value); });
      stop.addEventListener('click', () => done(null));
      inp.addEventListener('keydown', (e) => { if (e.key === 'Escape') done(null); });
      inp.focus();
    });
  }
}
