// Rendering outputs: ANSI colours (tracebacks, saved streams) as escaped
// DOM text, carriage returns folded as a terminal does, rich MIME bundles
// (HTML in sandboxed frames whose styles are applied through the CSSOM,
// markdown and LaTeX through the lazily loaded /static/md.js, images).
// Everything here builds DOM nodes; no output's text is ever parsed as the
// page's own HTML (markdown's goes through DOMPurify first).
import Anser from 'anser';

// ---- text ---------------------------------------------------------------

// A line rewritten by carriage returns, as a terminal shows it: each
// segment overwrites the start of the line ("50%\r100%" → "100%"); a final
// "\r" with nothing after it changes nothing (a progress bar between frames).
export function foldLine(line) {
  if (!line.includes('\r')) return line;
  let out = '';
  for (const seg of line.split('\r')) out = seg + out.slice(seg.length);
  return out;
}

export function foldCR(text) {
  if (!text.includes('\r')) return text;
  return text.replace(/\r+\n/g, '\n').split('\n').map(foldLine).join('\n');
}

export const hasAnsi = (s) => s.includes('\x1b');
export const stripAnsi = (s) => s.replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07/g, '');

// Appends text with its ANSI colours to el as spans (textContent: escaped).
export function ansiInto(el, text) {
  if (!hasAnsi(text)) { el.append(document.createTextNode(text)); return; }
  for (const part of Anser.ansiToJson(text, { use_classes: false, remove_empty: true })) {
    const hasStyle = part.fg || part.bg || (part.decorations && part.decorations.length);
    if (!hasStyle) { el.append(document.createTextNode(part.content)); continue; }
    const s = document.createElement('span');
    s.textContent = part.content;
    // CSSOM, not a style attribute: the page's CSP allows it.
    if (part.fg) s.style.color = `rgb(${part.fg})`;
    if (part.bg) s.style.backgroundColor = `rgb(${part.bg})`;
    for (const d of part.decorations || []) {
      if (d === 'bold') s.style.fontWeight = '600';
      else if (d === 'italic') s.style.fontStyle = 'italic';
      else if (d === 'underline') s.style.textDecoration = 'underline';
      else if (d === 'dim') s.style.opacity = '0.7';
    }
    el.append(s);
  }
}

// ---- markdown and LaTeX (/static/md.js, loaded on first use) --------------

let mdPromise = null;
// Where md.js comes from when it is not /static/md.js: the MCP App has no
// origin to load it from and reads it through its host (resources/read):
// () => Promise<script text>, run as an inline script (the app's CSP allows
// inline script and nothing else; no eval).
let mdSource = null;
export function setMdSource(fn) { mdSource = fn; }

export function loadMd() {
  if (window.ratMd) return Promise.resolve(window.ratMd);
  if (!mdPromise) {
    mdPromise = new Promise((resolve, reject) => {
      const s = document.createElement('script');
      const fail = () => { mdPromise = null; reject(new Error('the markdown renderer could not be loaded')); };
      if (mdSource) {
        mdSource().then((text) => {
          s.textContent = text;
          document.head.append(s); // an inline script runs as it is inserted
          if (window.ratMd) resolve(window.ratMd); else fail();
        }, fail);
        return;
      }
      s.src = '/static/md.js';
      s.onload = () => (window.ratMd ? resolve(window.ratMd) : reject(new Error('md.js did not load')));
      s.onerror = fail;
      document.head.append(s);
    });
  }
  return mdPromise;
}

// Fills el with markdown rendered and sanitised. resolveImage(src) →
// Promise<data URL | null> for images that name a file (relative paths).
export async function renderMarkdown(el, src, attachments, resolveImage) {
  try {
    const md = await loadMd();
    el.innerHTML = md.markdown(src, attachments);
    for (const img of el.querySelectorAll('img[data-rat-src]')) {
      const want = img.getAttribute('data-rat-src');
      if (resolveImage) resolveImage(want).then((url) => { if (url) img.src = url; });
    }
  } catch (e) {
    el.textContent = src;
    el.title = String(e.message || e);
  }
}

export async function renderLatex(el, src) {
  try { el.innerHTML = (await loadMd()).latex(src); } catch { el.textContent = src; }
}

// ---- HTML outputs in sandboxed frames -------------------------------------

// What an HTML output may keep in a frame that inherits the page's CSP: no
// script (the sandbox would refuse it, and log), no stylesheet link or
// external image (the CSP would refuse them, and log); its <style> text and
// style attributes are taken out and applied through the CSSOM after load
// (constructable sheets and element.style are not governed by style-src).
// They come out as text, before any parser sees them: Chromium checks
// inline styles against the page's CSP even in a DOMParser document.
const decoder = document.createElement('textarea');
const decodeEntities = (v) => { decoder.innerHTML = v; return decoder.value; };

export function prepareHtml(text) {
  const css = [];
  const styles = [];
  let prev;
  text = String(text);
  do { prev = text; text = text.replace(/(<[a-zA-Z][^<>]*?)\son[a-z]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+)/g, '$1'); } while (text !== prev);
  text = text
    .replace(/<style\b[^>]*>([\s\S]*?)<\/style\s*>/gi, (m, body) => { css.push(body); return ''; })
    .replace(/(<[a-zA-Z][^<>]*?)\sstyle\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g, (m, tag, a, b, c) => {
      styles.push(decodeEntities(a ?? b ?? c ?? ''));
      return `${tag} data-rat-style="${styles.length - 1}"`;
    });
  const doc = new DOMParser().parseFromString(text, 'text/html');
  for (const n of doc.querySelectorAll('script, link, meta, base, iframe, object, embed, noscript, style')) n.remove();
  for (const n of doc.querySelectorAll('*')) {
    for (const a of [...n.attributes]) if (/^on/i.test(a.name) || (a.name === 'style')) n.removeAttribute(a.name);
    if (n.tagName === 'IMG' || n.tagName === 'image') {
      const src = n.getAttribute('src') || n.getAttribute('href') || '';
      if (src && !/^data:/i.test(src)) { n.removeAttribute('src'); n.setAttribute('alt', n.getAttribute('alt') || `[image: ${src}]`); }
    }
  }
  return { html: `<!doctype html><meta charset="utf-8">${doc.head.innerHTML}${doc.body.innerHTML}`, css: css.join('\n'), styles };
}

// Jupyter Notebook's look for tables (pandas DataFrames) and text.
const BASE_CSS = `
body { margin: 4px 2px; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1d2330; }
table { border-collapse: collapse; border-spacing: 0; border: none; font-size: 12px; table-layout: auto; margin: 0; }
thead { border-bottom: 1px solid #000; vertical-align: bottom; }
td, th, tr { text-align: right; vertical-align: middle; padding: 0.4em 0.6em; line-height: normal; white-space: normal; max-width: none; border: none; }
th { font-weight: bold; }
tbody tr:nth-child(odd) { background: #f5f5f5; }
tbody tr:hover { background: rgba(66, 165, 245, 0.2); }
pre, code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
`;

// Builds a stylesheet in the frame's realm from untrusted CSS: @import and
// url() are dropped (they would load from elsewhere, which the CSP refuses).
function sheetIn(win, css) {
  const sheet = new win.CSSStyleSheet();
  try { sheet.replaceSync(css.replace(/@import[^;]*;?/gi, '')); } catch { return sheet; }
  const scrub = (rules) => {
    for (let i = rules.length - 1; i >= 0; i--) {
      const r = rules[i];
      if (r.type === 5 /* @font-face */) { (r.parentRule || r.parentStyleSheet).deleteRule(i); continue; }
      if (r.style) for (const p of [...r.style]) if (/url\(/i.test(r.style.getPropertyValue(p))) r.style.removeProperty(p);
      if (r.cssRules) scrub(r.cssRules);
    }
  };
  scrub(sheet.cssRules);
  return sheet;
}

// An HTML output: a frame whose sandbox allows no script, no form, no
// navigation of the page (only allow-same-origin, so the page can size it
// and style it). source: Promise<string|null> of the HTML.
export function htmlFrame(source) {
  const f = document.createElement('iframe');
  f.className = 'html';
  f.setAttribute('sandbox', 'allow-same-origin');
  f.title = 'HTML output';
  let prep = null;
  const fit = () => {
    try {
      const d = f.contentDocument;
      // Standards mode (prepareHtml's doctype): the root's box is the
      // content's height, not the frame's; a horizontal scrollbar adds its own.
      const root = d.documentElement;
      let h = Math.max(root.getBoundingClientRect().height, d.body ? d.body.getBoundingClientRect().height + 8 : 0);
      if (root.scrollWidth > root.clientWidth) h += 16;
      f.style.height = `${Math.min(Math.max(Math.ceil(h) + 4, 24), 600)}px`;
    } catch { /* not readable: keep the default height */ }
  };
  f.addEventListener('load', () => {
    try {
      const w = f.contentWindow, d = f.contentDocument;
      if (prep) {
        d.adoptedStyleSheets = [sheetIn(w, BASE_CSS), sheetIn(w, prep.css)];
        for (const n of d.querySelectorAll('[data-rat-style]')) {
          const css = prep.styles[Number(n.getAttribute('data-rat-style'))];
          if (css) n.style.cssText = css.replace(/url\([^)]*\)/gi, 'none');
        }
      }
    } catch { /* shown unstyled */ }
    fit();
  });
  source.then((t) => {
    prep = prepareHtml(t ?? '<p>(this HTML output could not be read)</p>');
    f.srcdoc = prep.html;
  });
  return f;
}

// ---- MIME bundles -----------------------------------------------------------

export const joinText = (v) => (Array.isArray(v) ? v.join('') : String(v ?? ''));

// The element for one display_data / execute_result. data: the bundle
// (inline values); urls: {mime: url} of parts held as /assets files.
// hooks: {assetUrl(url), fetchText(url), resolveImage(src)}.
export function renderBundle(data, urls, hooks) {
  const has = (m) => data[m] !== undefined || urls[m] !== undefined;
  if (has('text/html')) {
    return htmlFrame(urls['text/html'] ? hooks.fetchText(urls['text/html']) : Promise.resolve(joinText(data['text/html'])));
  }
  if (has('text/markdown')) {
    const d = document.createElement('div');
    d.className = 'md rendered-md';
    renderMarkdown(d, joinText(data['text/markdown']), null, hooks.resolveImage);
    return d;
  }
  if (has('text/latex')) {
    const d = document.createElement('div');
    d.className = 'latex';
    renderLatex(d, joinText(data['text/latex']));
    return d;
  }
  for (const m of ['image/png', 'image/jpeg', 'image/gif', 'image/svg+xml']) {
    if (!has(m)) continue;
    const img = document.createElement('img');
    img.className = 'image';
    img.alt = data['text/plain'] !== undefined ? joinText(data['text/plain']) : 'image output';
    if (urls[m]) {
      // A URL, or (the MCP App, which reads assets through its host) a
      // Promise of a data: URL.
      const src = hooks.assetUrl(urls[m], m);
      if (typeof src === 'string') img.src = src; else src.then((u) => { if (u) img.src = u; });
    }
    else if (m === 'image/svg+xml') img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(joinText(data[m]))}`;
    else img.src = `data:${m};base64,${joinText(data[m]).replace(/\s/g, '')}`;
    return img;
  }
  const pre = document.createElement('pre');
  pre.className = 'result';
  if (data['text/plain'] !== undefined) ansiInto(pre, joinText(data['text/plain']));
  else if (data['application/json'] !== undefined) pre.textContent = typeof data['application/json'] === 'string' ? data['application/json'] : JSON.stringify(data['application/json'], null, 1);
  return pre;
}
