// A small Python highlighter for the cell's code: comments, strings,
// numbers, keywords, builtins and decorators as spans (textContent only:
// the code is never parsed as HTML). The page's CodeMirror is ten times the
// app's size; a cell shown beside a chat message needs colour, not editing.
const KW = new Set(('False None True and as assert async await break class continue def del elif else except finally for ' +
  'from global if import in is lambda nonlocal not or pass raise return try while with yield match case').split(' '));
const BUILTIN = new Set('print len range int str float list dict set tuple open isinstance type super enumerate zip map filter sum min max abs sorted'.split(' '));
const TOKEN = /(#[^\n]*)|("""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|[rbfuRBFU]{0,2}"(?:\\.|[^"\\\n])*"?|[rbfuRBFU]{0,2}'(?:\\.|[^'\\\n])*'?)|(\b\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?j?\b)|(@[A-Za-z_][\w.]*)|([A-Za-z_]\w*)/g;

export function highlightInto(el, code) {
  let at = 0;
  const text = (s) => { if (s) el.append(document.createTextNode(s)); };
  const span = (cls, s) => { const n = document.createElement('span'); n.className = cls; n.textContent = s; el.append(n); };
  for (const m of code.matchAll(TOKEN)) {
    text(code.slice(at, m.index));
    at = m.index + m[0].length;
    if (m[1]) span('tok-comment', m[0]);
    else if (m[2]) span('tok-string', m[0]);
    else if (m[3]) span('tok-number', m[0]);
    else if (m[4]) span('tok-meta', m[0]);
    else if (KW.has(m[0])) span('tok-keyword', m[0]);
    else if (BUILTIN.has(m[0])) span('tok-builtin', m[0]);
    else text(m[0]);
  }
  text(code.slice(at));
}
