// One cell's code editor: CodeMirror 6 highlighting the kernel's language
// (Python, R, JavaScript/TypeScript, Julia; none for others), the kernel's
// completions (look {code, cursor}) and hover help (look {at}).
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection, hoverTooltip } from '@codemirror/view';
import { EditorState, Prec, Compartment } from '@codemirror/state';
import { defaultKeymap, history, historyKeymap, indentMore, indentLess, insertNewlineAndIndent } from '@codemirror/commands';
import { syntaxHighlighting, defaultHighlightStyle, indentOnInput, bracketMatching, StreamLanguage, indentUnit } from '@codemirror/language';
import { python } from '@codemirror/lang-python';
import { r } from '@codemirror/legacy-modes/mode/r';
import { javascript, typescript } from '@codemirror/legacy-modes/mode/javascript';
import { julia } from '@codemirror/legacy-modes/mode/julia';

// The editor's language follows the kernel's (ctl status `language`, as
// kernel_info's language_info names it: "python", "R", "javascript", …), and
// so does the indentation: 4 spaces (PEP 8, Jupyter's), 2 for R and
// JavaScript (their style guides'). Python until the page has heard from
// the kernel; a language we have no mode for gets none. Markdown and raw
// cells get neither, nor the kernel's completions and hover.
const language = new Compartment();
const kernelHelp = new Compartment();
let currentLanguage = 'python';
function languageExtension(name) {
  switch (String(name || '').toLowerCase()) {
    case 'python': return python();
    case 'r': return StreamLanguage.define(r);
    case 'javascript': case 'node.js': return StreamLanguage.define(javascript);
    case 'typescript': return StreamLanguage.define(typescript);
    case 'julia': return StreamLanguage.define(julia);
    default: return [];
  }
}
function indentFor(name) {
  return ['r', 'javascript', 'node.js', 'typescript'].includes(String(name || '').toLowerCase()) ? '  ' : '    ';
}
const codeLanguage = (name) => [languageExtension(name), indentUnit.of(indentFor(name))];

/** Sets the language of the editors made from now on, and returns the
 * effect that switches an existing code cell's (view.dispatch({effects})),
 * or null when it is already that language. */
export function setEditorLanguage(name) {
  if (!name || String(name).toLowerCase() === currentLanguage) return null;
  currentLanguage = String(name).toLowerCase();
  return language.reconfigure(codeLanguage(currentLanguage));
}
import { autocompletion, closeBrackets, closeBracketsKeymap, closeCompletion, acceptCompletion, startCompletion,
  moveCompletionSelection, completionStatus } from '@codemirror/autocomplete';

// Jupyter counts characters as code points; CodeMirror as UTF-16 units.
const cpLen = (s) => { let n = 0; for (const _ of s) n++; return n; };
function cpToUtf16(s, cp) { let i = 0; for (const ch of s) { if (cp-- <= 0) break; i += ch.length; } return i; }

const KINDS = { function: 'function', method: 'method', class: 'class', module: 'namespace', keyword: 'keyword',
  instance: 'variable', statement: 'variable', param: 'variable', property: 'property', path: 'text', type: 'type' };

function kernelCompletions(mcp) {
  return async (ctx) => {
    const word = ctx.matchBefore(/[\w.]*$/);
    if (!ctx.explicit && (!word || word.from === word.to)) return null;
    const code = ctx.state.doc.toString();
    let r;
    try { r = await mcp.call('look', { code, cursor: cpLen(code.slice(0, ctx.pos)) }); } catch { return null; }
    const s = r.structured;
    if (!s || !Array.isArray(s.items) || !s.items.length) return null;
    // UTF-16 offsets when the server gives them, else convert code points.
    const from = s.replace_start_utf16 ?? cpToUtf16(code, s.replace_start ?? s.cursor_start);
    const to = s.replace_end_utf16 ?? cpToUtf16(code, s.replace_end ?? s.cursor_end);
    return {
      from, to,
      options: s.items.map((it) => ({ label: it.label, type: KINDS[it.kind] || it.kind, detail: it.signature || undefined })),
      validFor: /^[\w]*$/,
    };
  };
}

function kernelHover(mcp) {
  return hoverTooltip(async (view, pos) => {
    const line = view.state.doc.lineAt(pos);
    const t = line.text;
    let a = pos - line.from, b = a;
    while (a > 0 && /[\w.]/.test(t[a - 1])) a--;
    while (b < t.length && /\w/.test(t[b])) b++;
    const name = t.slice(a, b).replace(/^\.+|\.+$/g, '');
    if (!name || /^\d/.test(name)) return null;
    let r;
    try { r = await mcp.call('look', { at: name }); } catch { return null; }
    if (r.isError || !r.text) return null;
    // The header, signature, value and doc: not a module's or object's
    // list of children, which is the variables panel's job.
    const s = r.structured;
    let text = r.text;
    if (s && s.view === 'inspect' && s.source === 'helper') {
      const head = `${s.path}: ${s.type}${s.kind && s.kind !== s.type ? ` (${s.kind})` : ''}${s.size ? ` ${s.size}` : ''}`;
      text = [head, s.signature, s.value !== undefined && !s.signature ? `= ${s.value}` : '', s.doc, s.defined_in ? `Defined in: ${s.defined_in}` : '']
        .filter(Boolean).join('\n');
    }
    return {
      pos: line.from + a, end: line.from + b, above: true,
      create() {
        const dom = document.createElement('pre');
        dom.className = 'hover';
        dom.textContent = text.length > 2000 ? text.slice(0, 2000) + '\n…' : text;
        return { dom };
      },
    };
  }, { hoverTime: 450 });
}

const theme = EditorView.theme({
  '&': { fontSize: '14px' },
  '.cm-content': { fontFamily: 'var(--mono)', padding: '6px 0' },
  // Opaque: a long line scrolled sideways passes under the line numbers,
  // not through them.
  '.cm-gutters': { background: 'var(--editor-bg, #fff)', border: 'none', color: '#aab' },
  '&.cm-focused': { outline: 'none' },
  '.cm-tooltip.cm-tooltip-autocomplete > ul': { fontFamily: 'var(--mono)' },
  '.cm-tooltip': { borderRadius: '6px', boxShadow: '0 4px 14px rgba(0,0,0,.12)' },
  '.cm-tooltip pre.hover': { margin: 0, padding: '6px 9px', maxWidth: '620px', maxHeight: '260px', overflow: 'auto',
    fontFamily: 'var(--mono)', fontSize: '12.5px', whiteSpace: 'pre-wrap' },
});

// The completion popup's keys. A popup that opened by itself while typing
// never takes Enter: Enter is a new line (it used to accept the first
// option, so `import os`, Enter, `x` gave `import osx`). It takes Enter once
// the person has asked for it (Tab, Ctrl+Space) or moved in it (↑/↓). Tab
// completes: it accepts the selected option, or asks the kernel after a
// name; elsewhere it indents, as in Jupyter.
const asked = new WeakMap(); // view -> the open popup was asked for (or navigated)
const acceptWhenReady = new WeakSet(); // views where Tab came while the kernel was still answering
function completionKeys() {
  const open = (v) => completionStatus(v.state) === 'active';
  // CodeMirror refuses an accept in the first 75 ms of a popup (its
  // interactionDelay); the key must not fall through then (Tab would move
  // the focus out of the editor, Enter add a line): accept a moment later.
  const accept = (v) => {
    if (!acceptCompletion(v)) setTimeout(() => { if (open(v)) acceptCompletion(v); }, 90);
    return true;
  };
  const ask = (v) => { asked.set(v, true); return startCompletion(v); };
  const move = (forward, by) => (v) => { if (!open(v)) return false; asked.set(v, true); return moveCompletionSelection(forward, by)(v); };
  return Prec.highest(keymap.of([
    { key: 'Ctrl-Space', run: ask },
    { key: 'Escape', run: (v) => { if (completionStatus(v.state) === null) return false; closeCompletion(v); return true; } },
    { key: 'ArrowDown', run: move(true) },
    { key: 'ArrowUp', run: move(false) },
    { key: 'PageDown', run: move(true, 'page') },
    { key: 'PageUp', run: move(false, 'page') },
    { key: 'Enter', run: (v) => {
      if (!open(v)) return false;
      if (asked.get(v)) return accept(v);
      closeCompletion(v);
      return insertNewlineAndIndent(v);
    } },
    { key: 'Tab', run: (v) => {
      if (open(v)) return accept(v);
      // The kernel is still answering (a popup on its way): take its first
      // option when it comes, so Tab, Tab completes however fast it is typed.
      if (completionStatus(v.state) === 'pending' && asked.get(v)) { acceptWhenReady.add(v); return true; }
      const s = v.state.selection.main;
      if (!s.empty) return indentMore(v);
      const before = v.state.doc.sliceString(Math.max(0, s.head - 1), s.head);
      if (/[\w.]/.test(before)) return ask(v);
      // Spaces up to the next indentation stop, at the cursor.
      const unit = v.state.facet(indentUnit).length;
      const col = s.head - v.state.doc.lineAt(s.head).from;
      v.dispatch(v.state.update({ changes: { from: s.head, insert: ' '.repeat(unit - (col % unit)) }, selection: { anchor: s.head + unit - (col % unit) }, scrollIntoView: true, userEvent: 'input' }));
      return true;
    } },
    { key: 'Shift-Tab', run: indentLess },
  ]));
}

const helpFor = (type, mcp) => (type === 'code'
  ? [autocompletion({ override: [kernelCompletions(mcp)], activateOnTyping: true, activateOnTypingDelay: 250, defaultKeymap: false }), kernelHover(mcp)]
  : []);

/** The effects that make a cell's editor a code, markdown or raw one. */
export function cellTypeEffects(type, mcp) {
  return [language.reconfigure(type === 'code' ? codeLanguage(currentLanguage) : [indentUnit.of('    ')]), kernelHelp.reconfigure(helpFor(type, mcp))];
}

// keys: {run(), runAndAdvance(), runAndInsert(), focusUp(), focusDown(),
// escape() (to command mode), changed() (the text changed)}; type: the
// cell's type ('code', 'markdown', 'raw').
export function makeEditor(parent, doc, mcp, keys, type = 'code') {
  const runKeys = Prec.highest(keymap.of([
    { key: 'Shift-Enter', run: () => { keys.runAndAdvance(); return true; } },
    { key: 'Mod-Enter', run: () => { keys.run(); return true; } },
    { key: 'Alt-Enter', run: () => { keys.runAndInsert(); return true; } },
    { key: 'ArrowUp', run: (v) => { const s = v.state.selection.main; if (s.empty && v.state.doc.lineAt(s.head).number === 1) { keys.focusUp(); return true; } return false; } },
    { key: 'ArrowDown', run: (v) => { const s = v.state.selection.main; if (s.empty && v.state.doc.lineAt(s.head).number === v.state.doc.lines) { keys.focusDown(); return true; } return false; } },
    // Escape closes a popup on screen first (a query still pending is
    // dropped: the person never saw it), then goes to command mode.
    { key: 'Escape', run: (v) => { if (completionStatus(v.state) === 'active') return false; closeCompletion(v); keys.escape(); return true; } },
  ]));
  // In a shadow root: CodeMirror then styles itself through constructable
  // style sheets, which the page's CSP (style-src 'self', no inline
  // <style>) allows; on the document it would insert a <style> element.
  const root = parent.attachShadow({ mode: 'open' });
  const view = new EditorView({
    parent: root,
    root,
    state: EditorState.create({
      doc,
      extensions: [
        runKeys, completionKeys(), lineNumbers(), history(), drawSelection(), highlightActiveLine(), indentOnInput(), bracketMatching(),
        closeBrackets(), language.of(type === 'code' ? codeLanguage(currentLanguage) : [indentUnit.of('    ')]),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        kernelHelp.of(helpFor(type, mcp)),
        // A popup left open in a cell you left is noise: close it.
        EditorView.domEventHandlers({ blur: (e, v) => { closeCompletion(v); return false; } }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) { keys.changed(); acceptWhenReady.delete(u.view); }
          const st = completionStatus(u.state);
          if (st === null) { asked.delete(u.view); acceptWhenReady.delete(u.view); }
          else if (st === 'active' && acceptWhenReady.has(u.view)) {
            acceptWhenReady.delete(u.view);
            queueMicrotask(() => acceptCompletion(u.view));
          }
        }),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap]),
        EditorState.tabSize.of(4), theme,
      ],
    }),
  });
  return view;
}
