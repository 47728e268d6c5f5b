// The notebook page: wires the MCP client, the notebook and the panels.
import './style.css';
import { Mcp, takeToken } from './mcp.js';
import { Notebook } from './notebook.js';
import { Vars } from './vars.js';
import { toIpynb, fromIpynb } from './ipynb.js';
import { setEditorLanguage } from './editor.js';

const $ = (s) => document.querySelector(s);
const token = takeToken();
const mcp = new Mcp(token);

// Assets are plain GETs (an <img> cannot send a header): the token rides in
// the query, as Jupyter does; the page's Referrer-Policy keeps it in.
const assetUrl = (u) => (token ? `${u}?token=${encodeURIComponent(token)}` : u);

// The status line: what the last action said; a passing message fades back
// to the connection state after a few seconds, an error stays.
let statusTimer = 0;
const status = (text, cls = '') => {
  const s = $('#status');
  s.textContent = text;
  s.className = cls;
  clearTimeout(statusTimer);
  if (!cls && text !== 'connected') statusTimer = setTimeout(() => { s.textContent = 'connected'; }, 6000);
};
let kernelState = 'starting';
function showKernel(line) {
  // "python idle | exec #5 | rev 17 | up 3600s" or look's "python idle | 3 vars | exec #5"
  const m = /^(\w+) (\w+)/.exec(line || '');
  if (!m) return;
  kernelState = m[2];
  const k = $('#kernel');
  k.textContent = `${m[1]} · ${m[2]}`;
  k.dataset.state = m[2];
}

const vars = new Vars($('#vars'), mcp);
// One overview at a time; a request while one is out asks for one more.
let varsBusy = null, varsAgain = false;
async function refreshVars() {
  if (varsBusy) { varsAgain = true; return varsBusy; }
  varsBusy = (async () => {
    let h;
    do { varsAgain = false; h = await vars.refresh(); } while (varsAgain);
    return h;
  })();
  const h = await varsBusy;
  varsBusy = null;
  if (h) showKernel(h);
  return h;
}

const nb = new Notebook($('#cells'), mcp, {
  afterRun: () => refreshVars(),
  assetUrl,
  fetchText: async (url) => (await fetchAsset(url))?.text ?? null,
});

// The kernel's state and the variables follow every client's runs through
// MCP resource subscriptions (rat://status, rat://variables) and rat/event
// (rat://events) on the session's GET stream (doc/tools.md#watching). A
// server without them is polled (ctl status's rev moves on every run).
let kernelInfo = null; // {name, display_name, language}: what a saved notebook names
async function readStatus() {
  try {
    const r = await mcp.request('resources/read', { uri: 'rat://status' });
    const st = JSON.parse(r.contents[0].text);
    showKernel(`${st.language} ${st.state}`);
    kernelInfo = { name: st.kernel?.name, display_name: st.kernel?.display_name, language: st.language };
    const effects = setEditorLanguage(st.language);
    if (effects) for (const c of nb.cells) if (c.type === 'code') c.view.dispatch({ effects });
  } catch { /* the next update tries again */ }
}

let lastSeq = null;
mcp.onNotification = (n) => {
  if (n.method === 'notifications/resources/updated') {
    if (n.params.uri === 'rat://variables') refreshVars();
    else if (n.params.uri === 'rat://status') readStatus();
  } else if (n.method === 'rat/event') {
    const ev = n.params;
    // A gap in seq: events were lost (a slow page); re-read the state.
    if (lastSeq !== null && ev.seq !== lastSeq + 1) { refreshVars(); readStatus(); }
    lastSeq = ev.seq;
    nb.onEvent(ev);
  }
};

async function subscribe() {
  try {
    for (const uri of ['rat://status', 'rat://variables', 'rat://events']) await mcp.request('resources/subscribe', { uri });
    return true;
  } catch { return false; }
}

let lastRev = null;
async function poll() {
  if (document.visibilityState === 'visible') {
    try {
      const r = await mcp.call('ctl', { op: 'status' });
      const first = r.text.split('\n')[0];
      showKernel(first);
      const rev = /rev (\d+)/.exec(first)?.[1] ?? null;
      if (rev !== lastRev) { lastRev = rev; refreshVars(); }
      if (!/^connected/.test($('#status').textContent)) status('connected');
    } catch (e) {
      status(String(e.message || e), 'bad');
    }
  }
  setTimeout(poll, 2000);
}

async function ctl(op, label) {
  status(`${label}…`);
  try {
    const r = await mcp.call('ctl', { op });
    status(r.text.split('\n')[0], r.isError ? 'bad' : '');
  } catch (e) { status(String(e.message || e), 'bad'); }
  refreshVars();
}

function download(name, text) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], { type: 'application/x-ipynb+json' }));
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

async function fetchAsset(url) {
  try {
    const res = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
    if (!res.ok) return null;
    const mime = (res.headers.get('Content-Type') || '').split(';')[0];
    const bytes = new Uint8Array(await res.arrayBuffer());
    let bin = '';
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return { mime, base64: btoa(bin), text: new TextDecoder().decode(bytes) };
  } catch { return null; }
}

async function save() {
  const name = ($('#name').value.trim() || 'notebook').replace(/\.ipynb$/, '') + '.ipynb';
  const nbjson = await toIpynb(nb.cells, fetchAsset, kernelInfo);
  download(name, JSON.stringify(nbjson, null, 1) + '\n');
  status(`saved ${name}`);
}

function open(file) {
  const rd = new FileReader();
  rd.onload = () => {
    let cells;
    try { cells = fromIpynb(String(rd.result)); } catch (e) { status(`${file.name}: ${e.message}`, 'bad'); return; }
    nb.clear();
    for (const c of cells) {
      const cell = nb.add(c.source, null, c.type);
      nb.setCount(cell, c.execCount);
      for (const o of c.outputs) nb.renderSaved(cell, o);
    }
    if (!nb.cells.length) nb.add('');
    $('#name').value = file.name.replace(/\.ipynb$/, '');
    nb.focus(nb.cells[0]);
    status(`opened ${file.name}`);
  };
  rd.readAsText(file);
}

function bind() {
  $('#add').addEventListener('click', () => nb.focus(nb.add('', nb.active)));
  $('#run').addEventListener('click', () => nb.active && nb.run(nb.active));
  $('#runall').addEventListener('click', () => nb.cells.forEach((c) => nb.run(c)));
  $('#cancel').addEventListener('click', () => ctl('cancel', 'interrupting'));
  $('#restart').addEventListener('click', () => ctl('restart', 'restarting'));
  $('#reset').addEventListener('click', () => ctl('reset', 'clearing the namespace'));
  $('#save').addEventListener('click', save);
  $('#open').addEventListener('click', () => $('#file').click());
  $('#file').addEventListener('change', (e) => { if (e.target.files[0]) open(e.target.files[0]); e.target.value = ''; });
  $('#delete').addEventListener('click', () => nb.active && nb.remove(nb.active));
  document.addEventListener('keydown', (e) => {
    const mod = e.ctrlKey || e.metaKey;
    if (mod && e.key === 's') { e.preventDefault(); save(); }
    else if (mod && e.key === 'o') { e.preventDefault(); $('#file').click(); }
    else if (mod && e.key === '.') { e.preventDefault(); ctl('cancel', 'interrupting'); }
  });
}

async function start() {
  bind();
  nb.focus(nb.add(''));
  try {
    await mcp.connect();
    status('connected');
    if (await subscribe()) { readStatus(); refreshVars(); } else poll();
  } catch (e) {
    status(String(e.message || e), 'bad');
  }
}

start();
