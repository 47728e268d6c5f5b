// The markdown bundle (/static/md.js), loaded by the page only when it first
// shows markdown or LaTeX (mdload.js), so the page's own script stays small
// and an idle rat-py never touches these bytes. markdown-it (CommonMark and
// GFM tables), KaTeX math written as MathML (Chromium and Firefox render it
// without KaTeX's stylesheet and fonts), DOMPurify over everything: a
// notebook's markdown may hold any HTML, and it is shown in the page itself.
import MarkdownIt from 'markdown-it';
import katexPlugin from '@vscode/markdown-it-katex';
import katex from './katex.cjs';
import DOMPurify from 'dompurify';

const KATEX = { output: 'mathml', throwOnError: false, strict: false, trust: false, maxSize: 50, maxExpand: 1000 };
const md = new MarkdownIt({ html: true, linkify: true }).use(katexPlugin.default || katexPlugin, KATEX);

// Links open elsewhere; images only from data: URLs the page can show
// (attachments, or files under --cwd the page fetched: data-rat-src) —
// another server's image would break the page's CSP, so it becomes a link.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.getAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
  if (node.tagName === 'IMG') {
    const src = node.getAttribute('src') || '';
    if (/^data:image\/(png|jpe?g|gif|webp|svg\+xml);/i.test(src)) return;
    node.removeAttribute('src');
    if (/^[a-z][a-z0-9+.-]*:/i.test(src) && !/^attachment:/i.test(src)) {
      const a = node.ownerDocument.createElement('a');
      a.href = src;
      a.textContent = `[image: ${node.getAttribute('alt') || src}]`;
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer');
      node.replaceWith(a);
    } else if (src) node.setAttribute('data-rat-src', src);
  }
});

const PURIFY = {
  USE_PROFILES: { html: true, mathMl: true },
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe'],
  FORBID_ATTR: ['style'],
  ADD_ATTR: ['target'],
};

// Event handler attributes go before any parser sees them: Chromium checks
// them against the page's CSP even in DOMPurify's inert document, and logs
// each refusal. DOMPurify then removes whatever else is unsafe.
const ON_ATTR = /(<[a-zA-Z][^<>]*?)\son[a-z]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+)/g;
const stripHandlers = (html) => { let prev; do { prev = html; html = html.replace(ON_ATTR, '$1'); } while (html !== prev); return html; };
const clean = (html) => DOMPurify.sanitize(stripHandlers(html), PURIFY);

// attachments: {name: {mime: base64}} (nbformat's cell attachments).
function markdown(src, attachments) {
  let html = md.render(String(src ?? ''));
  if (attachments) {
    html = html.replace(/src="attachment:([^"]+)"/g, (m, name) => {
      const a = attachments[decodeURIComponent(name)];
      const mime = a && Object.keys(a).find((k) => k.startsWith('image/'));
      return mime ? `src="data:${mime};base64,${String(a[mime]).replace(/\s/g, '')}"` : m;
    });
  }
  return clean(html);
}

// text/latex outputs: display math, with or without its $$ / \[ \] fences.
function latex(src) {
  let s = String(src ?? '').trim();
  const m = /^\$\$([\s\S]*)\$\$$/.exec(s) || /^\\\[([\s\S]*)\\\]$/.exec(s) || /^\$([\s\S]*)\$$/.exec(s);
  if (m) s = m[1];
  return clean(katex.renderToString(s, { ...KATEX, displayMode: true }));
}

window.ratMd = { markdown, latex };
