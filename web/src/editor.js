// One cell's code editor: CodeMirror 6 highlighting the kernel's language
// (Python, R, JavaScript/TypeScript, Julia; none for others), the kernel's
// completions (look {code, cursor}) and hover help (look {at}).
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection, hoverTooltip } from '@codemirror/view';
import { EditorState, Prec, Compartment } from '@codemirror/state';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { syntaxHighlighting, defaultHighlightStyle, indentOnInput, bracketMatching, StreamLanguage } from '@codemirror/language';
import { python } from '@codemirror/lang-python';
import { r } from '@codemirror/legacy-modes/mode/r';
import { javascript, typescript } from '@codemirror/legacy-modes/mode/javascript';
import { julia } from '@codemirror/legacy-modes/mode/julia';

// The editor's language follows the kernel's (ctl status `language`, as
// kernel_info names it: "python", "R", "javascript", …). Python until the
// page has heard from the kernel; a language we have no mode for gets none.
const language = new Compartment();
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

/** Sets the language of the editors made from now on, and returns the
 * effect that switches an existing one (view.dispatch({effects})), or null
 * when it is already that language. */
export function setEditorLanguage(name) {
  if (!name || String(name).toLowerCase() === currentLanguage) return null;
  currentLanguage = String(name).toLowerCase();
  return language.reconfigure(languageExtension(currentLanguage));
}
import { autocompletion, completionKeymap, closeBrackets, closeBracketsKeymap, closeCompletion } from '@codemirror/autocomplete';

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
  '.cm-gutters': { background: 'transparent', border: 'none', color: '#aab' },
  '&.cm-focused': { outline: 'none' },
  '.cm-tooltip.cm-tooltip-autocomplete > ul': { fontFamily: 'var(--mono)' },
  '.cm-tooltip': { borderRadius: '6px', boxShadow: '0 4px 14px rgba(0,0,0,.12)' },
  '.cm-tooltip pre.hover': { margin: 0, padding: '6px 9px', maxWidth: '620px', maxHeight: '260px', overflow: 'auto',
    fontFamily: 'var(--mono)', fontSize: '12.5px', whiteSpace: 'pre-wrap' },
});

// keys: {run(), runAndAdvance(), runAndInsert(), focusUp(), focusDown()}
export function makeEditor(parent, doc, mcp, keys) {
  const runKeys = Prec.highest(keymap.of([
    { key: 'Shift-Enter', run: () => { keys.runAndAdvance(); return true; } },
    { key: 'Mod-Enter', run: () => { keys.run(); return true; } },
    { key: 'Alt-Enter', run: () => { keys.runAndInsert(); return true; } },
    { key: 'ArrowUp', run: (v) => { const s = v.state.selection.main; if (s.empty && v.state.doc.lineAt(s.head).number === 1) { keys.focusUp(); return true; } return false; } },
    { key: 'ArrowDown', run: (v) => { const s = v.state.selection.main; if (s.empty && v.state.doc.lineAt(s.head).number === v.state.doc.lines) { keys.focusDown(); return true; } return false; } },
  ]));
  // In a shadow root: CodeMirror then styles itself through constructable
  // style sheets, which the page's CSP (style-src 'self', no inline
  // <style>) allows; on the document it would insert a <style> element.
  const root = parent.attachShadow({ mode: 'open' });
  return new EditorView({
    parent: root,
    root,
    state: EditorState.create({
      doc,
      extensions: [
        runKeys, lineNumbers(), history(), drawSelection(), highlightActiveLine(), indentOnInput(), bracketMatching(),
        closeBrackets(), language.of(languageExtension(currentLanguage)), syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        autocompletion({ override: [kernelCompletions(mcp)], activateOnTyping: true, activateOnTypingDelay: 250 }),
        kernelHover(mcp),
        // A popup left open in a cell you left is noise: close it.
        EditorView.domEventHandlers({ blur: (e, view) => { closeCompletion(view); return false; } }),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, indentWithTab]),
        EditorState.tabSize.of(4), theme,
      ],
    }),
  });
}
