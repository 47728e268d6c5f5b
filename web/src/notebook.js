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
    this.mine = new Set();    // cells whose run this page is following
    this.tail = Promise.resolve(); // the end of this page's run queue
    this.watched = new Map(); // run id -> cell, for other clients' runs
  }

  // Adds a cell after `after` (null: at the end), or before `before`.
  add(source = '', after = null, type = 'code', before = null) {
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
    const i = before ? this.cells.indexOf(before) : after ? this.cells.indexOf(after) + 1 : this.cells.length;
    this.cells.splice(i, 0, cell);
    if (before) before.el.before(el); else if (after) after.el.after(el); else this.root.append(el);
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
  // cell.outputs holds what the cell shows, in nbformat's shape, for saving:
  // {output_type: 'stream', name, text} | {output_type: 'error', ename,
  // evalue, traceback} | {output_type: 'display_data', data, metadata}
  // (metadata['rat/assets']: the asset URLs behind its rich parts).

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

  // Everything but the footer and a pending prompt.
  clearOutputs(cell) {
    for (const el of [...cell.outEl.children]) if (!el.matches('.footer, .ask')) el.remove();
    cell.outputs = [];
    cell.stream = null;
  }

  appendStream(cell, name, text) {
    if (!text) return;
    cell.streamed += text;
    let pre = cell.stream;
    if (!pre) {
      pre = document.createElement('pre');
      pre.className = 'stream';
      this.put(cell, pre);
      cell.stream = pre;
    }
    let span = pre.lastChild;
    if (!span || span.dataset.name !== name) {
      span = document.createElement('span');
      span.dataset.name = name;
      span.className = name;
      pre.append(span);
    }
    // A carriage return rewrites its line (progress bars): keep the last frame.
    const all = span.textContent + text;
    span.textContent = all.includes('\r') ? all.replace(/[^\n]*\r(?!\n)/g, '') : all;
    const o = cell.outputs[cell.outputs.length - 1];
    if (o && o.output_type === 'stream' && o.name === name) o.text += text;
    else cell.outputs.push({ output_type: 'stream', name, text });
  }

  // One output item of run's structuredContent (or of a rat/event).
  renderItem(cell, it) {
    if (it.type === 'stream') { this.appendStream(cell, it.name, it.text); return; }
    if (it.type === 'clear_output') { this.clearOutputs(cell); return; }
    const data = it.data || {};
    const assets = (it.assets || []).filter((a) => a.url);
    const img = assets.find((a) => a.mime.startsWith('image/'));
    const html = assets.find((a) => a.mime === 'text/html');
    let el;
    if (img) {
      el = document.createElement('img');
      el.className = 'image';
      el.alt = data['text/plain'] || 'image output';
      el.src = this.hooks.assetUrl(img.url);
    } else if (html) {
      el = this.htmlFrame(html.url);
    } else {
      el = document.createElement('pre');
      el.className = 'result';
      el.textContent = data['text/plain'] ?? data['text/markdown'] ?? data['application/json'] ?? '';
    }
    const saved = { output_type: 'display_data', data: { ...data }, metadata: { 'rat/assets': assets.map((a) => a.url) } };
    if (it.display_id) {
      el.dataset.displayId = it.display_id;
      saved.displayId = it.display_id;
      const old = [...cell.outEl.querySelectorAll('[data-display-id]')].filter((e) => e.dataset.displayId === it.display_id);
      if (it.type === 'update_display_data') {
        for (const e of old) e.replaceWith(el.cloneNode(true));
        cell.outputs = cell.outputs.map((o) => (o.displayId === it.display_id ? saved : o));
        return;
      }
    } else if (it.type === 'update_display_data') return;
    cell.stream = null;
    this.put(cell, el);
    cell.outputs.push(saved);
  }

  // An HTML output: its text in a frame whose sandbox allows no script, no
  // form, no navigation of the page (only `allow-same-origin`, so the page
  // can size the frame to its content). It inherits the page's CSP: nothing
  // is loaded from elsewhere.
  htmlFrame(url) {
    const f = document.createElement('iframe');
    f.className = 'html';
    f.setAttribute('sandbox', 'allow-same-origin');
    f.title = 'HTML output';
    const fit = () => {
      try {
        const d = f.contentDocument;
        const h = Math.max(d.documentElement.getBoundingClientRect().height, d.body ? d.body.getBoundingClientRect().height + 16 : 0);
        f.style.height = `${Math.min(Math.max(Math.ceil(h) + 4, 24), 600)}px`;
      } catch { /* not readable: keep the default height */ }
    };
    f.addEventListener('load', fit);
    // Standards mode: a fragment alone is quirks mode, where the body fills
    // the frame and the content's height cannot be read.
    this.hooks.fetchText(url).then((t) => {
      const html = t ?? '<p>(this HTML output could not be read)</p>';
      f.srcdoc = /^\s*<!doctype/i.test(html) ? html : `<!doctype html><meta charset="utf-8">${html}`;
    });
    return f;
  }

  // A text result's extra parts (a server without structuredContent).
  appendItem(cell, it) {
    if (it.kind === 'text') this.renderItem(cell, { type: 'display_data', data: { 'text/plain': it.text }, assets: [] });
    else this.renderItem(cell, { type: 'display_data', data: {}, assets: [{ mime: it.kind === 'image' ? 'image/png' : 'text/html', url: it.url }] });
  }

  appendError(cell, text, cancelled) {
    cell.stream = null;
    const pre = document.createElement('pre');
    pre.className = cancelled ? 'error cancelled' : 'error';
    pre.textContent = text;
    this.put(cell, pre);
    const last = text.trim().split('\n').pop() || text;
    const i = last.indexOf(':');
    cell.outputs.push({ output_type: 'error', ename: i > 0 ? last.slice(0, i) : 'Error', evalue: i > 0 ? last.slice(i + 1).trim() : last, traceback: text.split('\n') });
  }

  // An output read from a saved notebook (nbformat 4).
  renderSaved(cell, o) {
    const join = (v) => (Array.isArray(v) ? v.join('') : String(v ?? ''));
    if (o.output_type === 'stream') { this.appendStream(cell, o.name === 'stderr' ? 'stderr' : 'stdout', join(o.text)); return; }
    if (o.output_type === 'error') { this.appendError(cell, (o.traceback || []).join('\n').replace(/\x1b\[[0-9;]*m/g, '') || `${o.ename}: ${o.evalue}`, false); return; }
    const d = o.data || {};
    cell.stream = null;
    const mime = ['image/png', 'image/jpeg'].find((k) => d[k]);
    if (mime) {
      const img = document.createElement('img');
      img.className = 'image';
      img.alt = join(d['text/plain']) || 'image output';
      img.src = `data:${mime};base64,${join(d[mime]).replace(/\s/g, '')}`;
      this.put(cell, img);
      cell.outputs.push({ output_type: 'display_data', data: { ...d }, metadata: {} });
      return;
    }
    if (d['text/plain'] !== undefined) this.renderItem(cell, { type: 'display_data', data: { 'text/plain': join(d['text/plain']) }, assets: [] });
  }

  footer(cell, text) {
    let f = cell.outEl.querySelector(':scope > .footer');
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
    cell.execCount = null;
    cell.el.classList.add('running');
    cell.el.classList.remove('failed');
    this.setCount(cell, null);
    this.footer(cell, 'queued…');
    this.mine.add(cell);
    // One run call at a time from this page: each holds a connection while
    // it runs, and a browser opens only six per server, so queued calls
    // could starve the Interrupt button's. rat-py runs them in this order
    // anyway.
    const prev = this.tail;
    let release;
    this.tail = new Promise((r) => { release = r; });
    try {
      await prev;
      await this.follow(cell, { code, wait: 3600 });
    } catch (e) {
      this.appendError(cell, String(e.message || e), false);
    } finally {
      release();
      this.mine.delete(cell);
      cell.running = false;
      cell.el.classList.remove('running');
      this.setCount(cell, cell.execCount);
      const header = await this.hooks.afterRun(cell);
      // A server without structured results: the overview's header that
      // follows the run has the last count ("python idle | 2 vars | exec #5").
      const hm = /exec #(\d+)( running)?/.exec(header || '');
      if (cell.execCount == null && hm) this.setCount(cell, hm[2] ? +hm[1] - 1 : +hm[1]);
    }
  }

  // --- other clients' runs (rat/event, doc/tools.md#watching) ----------------

  onEvent(ev) {
    if (ev.mine) {
      // This page's own run: the kernel took it.
      const c = this.current;
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
      if (ev.error) { this.appendError(cell, `${ev.error.ename}: ${ev.error.evalue}`, ev.status === 'cancelled'); cell.el.classList.add('failed'); }
      else if (ev.failure) { this.appendError(cell, ev.failure, ev.status === 'cancelled'); cell.el.classList.add('failed'); }
      const ms = ev.duration_ms ?? 0;
      const d = ms < 1000 ? `${ms}ms` : ms < 60000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.floor(ms / 60000)}m ${Math.round((ms % 60000) / 1000)}s`;
      this.footer(cell, `${ev.success ? '✓' : '✗'} ${d}${ev.vars !== undefined ? ` | ${ev.vars} var${ev.vars === 1 ? '' : 's'}` : ''}`);
      this.setCount(cell, ev.exec_count || cell.execCount);
    }
  }

  // One run or ctl-wait call, then whatever it leads to (an input() prompt,
  // a long run followed with ctl wait), until the run has ended. Output
  // streams in live (notifications/message); the call's structured result
  // then replaces what this call streamed with the complete, ordered
  // outputs (images, displays, clear_output applied).
  async follow(cell, args, tool = 'run') {
    for (;;) {
      const mark = document.createComment('call');
      this.put(cell, mark);
      const before = cell.outputs.length;
      cell.streamed = '';
      const onNote = (n) => {
        if (n.method === 'notifications/message' && (n.params.logger === 'stdout' || n.params.logger === 'stderr')) {
          if (cell.outEl.querySelector(':scope > .footer')?.textContent === 'waiting for the kernel…') this.footer(cell, 'running…');
          this.appendStream(cell, n.params.logger, typeof n.params.data === 'string' ? n.params.data : JSON.stringify(n.params.data));
        }
      };
      this.footer(cell, tool === 'run' && args.code ? 'waiting for the kernel…' : 'running…');
      this.current = cell;
      const res = await this.mcp.call(tool, args, onNote).finally(() => { this.current = null; });
      const m = parseRun(res, cell.streamed);
      if (m.outputs) {
        // Drop what this call streamed; show the call's outputs instead.
        while (mark.nextSibling && !mark.nextSibling.matches?.('.footer')) mark.nextSibling.remove();
        cell.outputs.length = before;
        cell.stream = null;
        for (const it of m.outputs) this.renderItem(cell, it);
      } else {
        for (const it of m.items) this.appendItem(cell, it);
      }
      mark.remove();
      if (m.note) this.appendStream(cell, 'stderr', `\n${m.note}\n`);
      if (m.execCount) this.setCount(cell, m.execCount);
      cell.stream = null;
      if (m.state === 'waiting_for_input') {
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
      if (m.error) {
        this.appendError(cell, m.error, m.state === 'cancelled');
        cell.el.classList.add('failed');
      }
      this.footer(cell, m.state === 'refused' ? '' : m.footer);
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
