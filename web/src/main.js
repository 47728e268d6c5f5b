// The notebook page: wires the MCP client, the notebook, the files under
// --cwd (open, save, autosave, checkpoints, a file changed on disk), the
// tab's snapshot (a reload restores the notebook and follows a run still
// going), the connection (lost, reconnected), and the panels.
import './style.css';
import { Mcp, takeToken } from './mcp.js';
import { Notebook } from './notebook.js';
import { Vars } from './vars.js';
import { toIpynb, fromIpynb } from './ipynb.js';
import { setEditorLanguage } from './editor.js';
import { Contents, FilesPanel } from './files.js';
import { bindCommands, KEYS } from './commands.js';
import { confirm, ask, toast, banner } from './ui.js';

const $ = (s) => document.querySelector(s);
const token = takeToken();
const mcp = new Mcp(token);
const contents = new Contents(token);

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
  if (!cls && text !== 'connected') statusTimer = setTimeout(() => { if (mcp.state === 'connected') { s.textContent = 'connected'; s.className = ''; } }, 6000);
};
let kernelState = 'starting';
function showKernel(line) {
  // "python idle | exec #5 | rev 17 | up 3600s" or look's "python idle | 3 vars | exec #5"
  // An answer that was on its way when the connection went (a look after a
  // run, a status read) must not paint "idle" over "disconnected".
  if (mcp.state === 'lost') return;
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

// ---- the document: its file, saved or not ------------------------------------

const doc = {
  path: null,          // "dir/name.ipynb" once opened or saved
  hash: null,          // sha256 of the file as last read or written here
  lastModified: null,
  metadata: {},        // the notebook's own metadata, kept as the file had it
  version: 0,          // moves on every change
  savedVersion: 0,     // the version the file holds
  saving: null,        // the save in flight
  conflict: false,     // changed on disk by someone else: autosave waits
  loading: false,
};
const dirty = () => doc.version !== doc.savedVersion;

function showSaveState(text, state) {
  const s = $('#savestate');
  s.textContent = text;
  s.dataset.state = state;
  const name = doc.path || `${$('#name').value || 'Untitled'} (not saved)`;
  document.title = `${dirty() ? '● ' : ''}${name} · rat-py`;
}

function refreshSaveState() {
  if (doc.conflict) showSaveState('changed on disk', 'conflict');
  else if (doc.saving) showSaveState('saving…', 'saving');
  else if (!doc.path) showSaveState(dirty() ? 'not saved yet (Ctrl+S)' : 'not saved yet', 'new');
  else if (dirty()) showSaveState('unsaved changes', 'dirty');
  else showSaveState(`saved ${new Date().toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}`, 'saved');
}

// Outputs as the session snapshot and saving take them: the page's DOM
// handles (_el…) dropped, asset URLs and display ids kept.
const KEEP = new Set(['_urls', '_displayId', '_cancelled']);
function cleanCell(j) {
  return { ...j, outputs: j.outputs.map((o) => Object.fromEntries(Object.entries(o).filter(([k]) => !k.startsWith('_') || KEEP.has(k)))) };
}

let snapTimer = 0, saveTimer = 0;
function changed() {
  if (doc.loading) return;
  doc.version++;
  refreshSaveState();
  clearTimeout(snapTimer);
  snapTimer = setTimeout(snapshot, 300);
  // Autosave a notebook that has a file, 2 s after the last change.
  clearTimeout(saveTimer);
  if (doc.path && !doc.conflict) saveTimer = setTimeout(() => save({ auto: true }), 2000);
}

// The tab's copy of the notebook (sessionStorage: this tab only, gone with
// it): a reload restores the cells, unsaved edits and outputs included,
// and the run in progress.
const SNAP = 'rat-notebook';
function snapshot() {
  clearTimeout(snapTimer);
  const running = nb.cells.findIndex((c) => c.running && nb.mine.has(c) && nb.current === c);
  const runningExec = running >= 0 ? nb.cells[running].runExec || null : null;
  const snap = {
    v: 1, path: doc.path, hash: doc.hash, lastModified: doc.lastModified, dirty: dirty(), metadata: doc.metadata,
    name: $('#name').value, running, runningExec, active: nb.cells.indexOf(nb.active),
    cells: nb.cells.map((c) => cleanCell({ ...nb.toJson(c), rendered: c.type === 'markdown' ? !!c.rendered : undefined })),
  };
  for (const full of [true, false]) {
    if (!full) for (const c of snap.cells) c.outputs = c.outputs.filter((o) => JSON.stringify(o).length < 20000);
    try { sessionStorage.setItem(SNAP, JSON.stringify(snap)); return; } catch { /* too big: without the large outputs */ }
  }
  sessionStorage.removeItem(SNAP);
}

function loadCells(cells, active = 0) {
  doc.loading = true;
  nb.clear();
  for (const c of cells) nb.fromJson(c, null, null, true);
  if (!nb.cells.length) nb.add('');
  doc.loading = false;
  const a = nb.cells[Math.max(0, Math.min(active, nb.cells.length - 1))];
  if (a.type === 'markdown' && a.rendered) nb.command(a); else nb.focus(a);
}

function setDoc(path, model, metadata) {
  doc.path = path;
  doc.hash = model?.hash ?? null;
  doc.lastModified = model?.last_modified ?? null;
  doc.metadata = metadata ?? doc.metadata;
  doc.conflict = false;
  banner('disk', null);
  if (path) $('#name').value = path.replace(/\.ipynb$/i, '');
  files.setCurrent(path);
}

// Opens path from --cwd (asking first when unsaved work would be lost).
async function openPath(path, { force = false } = {}) {
  if (!force && dirty() && path !== doc.path) {
    const ok = await confirm('Open another notebook?', `${doc.path || 'This notebook'} has changes that are not saved; opening ${path} drops them.`, 'Open without saving');
    if (!ok) return false;
  }
  let model;
  try { model = await contents.get(path, { hash: true }); } catch (e) { status(`${path}: ${e.message}`, 'bad'); return false; }
  let parsed;
  try { parsed = fromIpynb(model.content); } catch (e) { status(`${path}: ${e.message}`, 'bad'); return false; }
  loadCells(parsed.cells);
  setDoc(model.path, model, parsed.metadata);
  doc.savedVersion = doc.version;
  refreshSaveState();
  snapshot();
  status(`opened ${model.path}`);
  return true;
}

// Saves to the file. auto: the autosave (quiet; never asks). explicit
// saves make a checkpoint too, as Jupyter's Save does.
async function save({ auto = false, overwrite = false } = {}) {
  clearTimeout(saveTimer);
  if (doc.saving) { await doc.saving.catch(() => {}); if (auto && !dirty()) return; }
  if (auto && (!doc.path || doc.conflict || !dirty())) return;
  let path = doc.path, create = false;
  if (!path) {
    const r = await ask('Save notebook', 'Its name, under the folder rat-py serves (--cwd):', [{ label: 'Save', value: 'save', primary: true }], { input: `${$('#name').value || 'Untitled'}.ipynb` });
    if (!r) return;
    path = r.text.trim().replace(/^\/+/, '');
    if (!path) return;
    if (!/\.ipynb$/i.test(path)) path += '.ipynb';
    create = true;
  }
  const version = doc.version;
  const run = (async () => {
    const nbjson = await toIpynb(nb.cells.map((c) => cleanCell(nb.toJson(c))), fetchAsset, kernelInfo, doc.metadata);
    let model;
    try {
      model = await contents.saveNotebook(path, nbjson, { ifMatch: overwrite || create ? null : doc.hash, create: create && !overwrite });
    } catch (e) {
      if (e.status === 412 && create) {
        const ok = await confirm('Replace the file?', `${path} already exists under --cwd.`, 'Replace it');
        if (!ok) return null;
        model = await contents.saveNotebook(path, nbjson, {});
      } else throw e;
    }
    return model;
  })();
  doc.saving = run;
  refreshSaveState();
  try {
    const model = await run;
    if (!model) return;
    const fresh = path !== doc.path;
    doc.path = path;
    doc.hash = model.hash;
    doc.lastModified = model.last_modified;
    doc.savedVersion = version;
    doc.conflict = false;
    banner('disk', null);
    banner('save', null);
    if (fresh) { setDoc(path, model); files.refresh(); }
    if (!auto) {
      try { await contents.checkpoint(path); } catch (e) { status(`saved, but no checkpoint: ${e.message}`, 'bad'); }
      status(`saved ${path}`);
    }
  } catch (e) {
    if (e.status === 412) conflict();
    else {
      // Nothing was written (a full disk included): say so, and keep the cells.
      status(`not saved: ${e.message}`, 'bad');
      banner('save', `Not saved: ${e.message}`, [{ label: 'Try again', run: () => save() }, { label: 'Download instead', run: download }], 'bad');
    }
  } finally {
    doc.saving = null;
    refreshSaveState();
    snapshot();
  }
}

// The file changed on disk since this page read or wrote it.
function conflict() {
  doc.conflict = true;
  clearTimeout(saveTimer);
  refreshSaveState();
  banner('disk', `${doc.path} changed on disk since it was opened here (another program or person saved it). Autosave is paused.`, [
    { label: 'Reload from disk', run: async () => { await openPath(doc.path, { force: true }); } },
    { label: 'Overwrite with this page', run: () => save({ overwrite: true }) },
  ], 'warn');
}

// Every few seconds, a look at the file: someone else's save shows at once,
// not at the next save.
async function watchDisk() {
  if (doc.path && !doc.saving && !doc.conflict && document.visibilityState === 'visible' && mcp.state === 'connected') {
    try {
      const m = await contents.get(doc.path, { content: false });
      if (!doc.saving && m.last_modified !== doc.lastModified) {
        const h = await contents.get(doc.path, { content: false, hash: true });
        if (!doc.saving && h.hash !== doc.hash) conflict();
        else doc.lastModified = h.last_modified;
      }
    } catch (e) {
      if (e.status === 404 && !doc.conflict) {
        banner('disk', `${doc.path} was deleted or moved on disk. Save to write it again.`, [{ label: 'Save', run: () => save({ overwrite: true }) }], 'warn');
        doc.conflict = true;
        refreshSaveState();
      }
    }
  }
  setTimeout(watchDisk, 3000);
}

async function rename() {
  const want = $('#name').value.trim();
  if (!doc.path) { refreshSaveState(); return; }
  const dir = doc.path.includes('/') ? doc.path.slice(0, doc.path.lastIndexOf('/') + 1) : '';
  let to = want.includes('/') ? want : dir + want;
  if (!/\.ipynb$/i.test(to)) to += '.ipynb';
  if (to === doc.path || !want) { $('#name').value = doc.path.replace(/\.ipynb$/i, ''); return; }
  try {
    const m = await contents.rename(doc.path, to);
    doc.path = m.path;
    doc.lastModified = m.last_modified;
    files.setCurrent(m.path);
    files.refresh();
    status(`renamed to ${m.path}`);
    snapshot();
  } catch (e) {
    status(`not renamed: ${e.message}`, 'bad');
    $('#name').value = doc.path.replace(/\.ipynb$/i, '');
  }
  refreshSaveState();
}

function download() {
  (async () => {
    const name = (doc.path ? doc.path.split('/').pop() : `${$('#name').value.trim() || 'Untitled'}.ipynb`);
    const nbjson = await toIpynb(nb.cells.map((c) => cleanCell(nb.toJson(c))), fetchAsset, kernelInfo, doc.metadata);
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([JSON.stringify(nbjson, null, 1) + '\n'], { type: 'application/x-ipynb+json' }));
    a.download = /\.ipynb$/i.test(name) ? name : `${name}.ipynb`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
    status(`downloaded ${a.download}`);
  })();
}

// An .ipynb from this computer: a new, unsaved notebook (Save puts it under --cwd).
function upload(file) {
  const rd = new FileReader();
  rd.onload = async () => {
    let parsed;
    try { parsed = fromIpynb(String(rd.result)); } catch (e) { status(`${file.name}: ${e.message}`, 'bad'); return; }
    if (dirty() && !(await confirm('Open another notebook?', 'This notebook has changes that are not saved; opening the file drops them.', 'Open without saving'))) return;
    loadCells(parsed.cells);
    setDoc(null, null, parsed.metadata);
    $('#name').value = file.name.replace(/\.ipynb$/i, '');
    doc.version++;
    refreshSaveState();
    snapshot();
    status(`opened ${file.name} (not saved under --cwd yet)`);
  };
  rd.readAsText(file);
}

async function newNotebook(dir) {
  if (dirty() && !(await confirm('New notebook?', `${doc.path || 'This notebook'} has changes that are not saved.`, 'Discard them'))) return;
  try {
    const m = await contents.newNotebook(dir);
    await files.refresh(dir);
    await openPath(m.path, { force: true });
  } catch (e) { status(`no new notebook: ${e.message}`, 'bad'); }
}

// Images a markdown cell names by a relative path: the file under the
// notebook's folder, through the file API.
async function resolveImage(src) {
  if (/^[a-z]+:/i.test(src) || src.startsWith('/')) return null;
  const dir = doc.path && doc.path.includes('/') ? doc.path.slice(0, doc.path.lastIndexOf('/') + 1) : '';
  try {
    const m = await contents.req('GET', (dir + src.replace(/^\.\//, '')).split('?')[0], { query: '?type=file&format=base64' });
    const mime = m.mimetype && m.mimetype.startsWith('image/') ? m.mimetype : null;
    return mime ? `data:${mime};base64,${m.content.replace(/\s/g, '')}` : null;
  } catch { return null; }
}

const nb = new Notebook($('#cells'), mcp, {
  afterRun: () => refreshVars(),
  assetUrl,
  fetchText: async (url) => (await fetchAsset(url))?.text ?? null,
  resolveImage,
  changed,
  toast,
});

const files = new FilesPanel($('#files'), contents, {
  onOpen: (p) => openPath(p),
  onNew: (dir) => newNotebook(dir),
  onError: (e) => status(`files: ${e.message}`, 'bad'),
});

// ---- the kernel: status, variables, other clients' runs ---------------------

// The kernel's state and the variables follow every client's runs through
// MCP resource subscriptions (rat://status, rat://variables) and rat/event
// (rat://events) on the session's GET stream (doc/tools.md#watching). A
// server without them is polled (ctl status's rev moves on every run).
let kernelInfo = null; // {name, display_name, language, pid}: what a saved notebook names
async function readStatus() {
  try {
    const r = await mcp.send('resources/read', { uri: 'rat://status' });
    const st = JSON.parse(r.contents[0].text);
    showKernel(`${st.language} ${st.state}`);
    kernelInfo = { name: st.kernel?.name, display_name: st.kernel?.display_name, language: st.language, pid: st.kernel?.pid };
    const effects = setEditorLanguage(st.language);
    if (effects) for (const c of nb.cells) if (c.type === 'code') c.view.dispatch({ effects });
    return st;
  } catch { return null; /* the next update tries again */ }
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
    for (const uri of ['rat://status', 'rat://variables', 'rat://events']) await mcp.send('resources/subscribe', { uri });
    return true;
  } catch { return false; }
}

let lastRev = null, polling = false;
async function poll() {
  if (document.visibilityState === 'visible' && mcp.state === 'connected') {
    try {
      const r = await mcp.call('ctl', { op: 'status' });
      const first = r.text.split('\n')[0];
      showKernel(first);
      const rev = /rev (\d+)/.exec(first)?.[1] ?? null;
      if (rev !== lastRev) { lastRev = rev; refreshVars(); }
    } catch (e) {
      status(String(e.message || e), 'bad');
    }
  }
  setTimeout(poll, 2000);
}

// The connection: lost (the server stopped, the network went) shows at
// once, cells stay; reconnected, the page subscribes again.
mcp.onState = (state, why) => {
  if (state === 'lost') {
    const k = $('#kernel');
    k.textContent = 'disconnected';
    k.dataset.state = 'disconnected';
    banner('conn', `Connection to rat-py lost (${why}). Reconnecting… Your cells stay here; runs resume once it is back.`, [], 'bad');
    status(`connection lost: ${why}`, 'bad');
  } else {
    banner('conn', null);
    if (why) status(why);
  }
};
mcp.onReconnect = async () => {
  lastSeq = null;
  const before = kernelInfo?.pid;
  if (!(await subscribe()) && !polling) { polling = true; poll(); }
  const st = await readStatus();
  refreshVars();
  if (before && st?.kernel?.pid && st.kernel.pid !== before) {
    status('reconnected: rat-py restarted, so this is a new kernel (variables and counts start over)');
    for (const c of nb.cells) if (c.type === 'code' && !c.running) nb.setCount(c, c.execCount);
  }
};

async function ctl(op, label) {
  status(`${label}…`);
  try {
    const r = await mcp.call('ctl', { op });
    status(r.text.split('\n')[0], r.isError ? 'bad' : '');
  } catch (e) { status(String(e.message || e), 'bad'); }
  refreshVars();
}

const interrupt = () => { nb.abortQueued(); return ctl('cancel', 'interrupting'); };
async function restart() {
  if (await confirm('Restart the kernel?', 'A fresh interpreter: every variable is lost (the cells and their outputs stay).', 'Restart')) {
    nb.abortQueued();
    ctl('restart', 'restarting');
  }
}
async function reset() {
  if (await confirm('Clear the namespace?', 'Every variable is deleted; the kernel keeps running.', 'Clear')) ctl('reset', 'clearing the namespace');
}

function showKeys() {
  const dl = $('#keys');
  const sep = document.createElement('dt');
  sep.className = 'keys-head';
  sep.textContent = 'Command mode (Esc)';
  dl.append(sep);
  for (const [k, v] of KEYS.slice(1)) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    dl.append(dt, dd);
  }
}

function bind() {
  $('#add').addEventListener('click', () => { const c = nb.add('', nb.selection().pop() || null); nb.focus(c); });
  $('#run').addEventListener('click', () => nb.active && nb.run(nb.active));
  $('#runall').addEventListener('click', () => nb.cells.forEach((c) => nb.run(c)));
  $('#cancel').addEventListener('click', interrupt);
  $('#restart').addEventListener('click', restart);
  $('#reset').addEventListener('click', reset);
  $('#save').addEventListener('click', () => save());
  $('#download').addEventListener('click', download);
  $('#open').addEventListener('click', () => { files.refresh(); $('#files').scrollIntoView({ block: 'nearest' }); $('#files button')?.focus(); });
  $('#upload').addEventListener('click', () => $('#file').click());
  $('#file').addEventListener('change', (e) => { if (e.target.files[0]) upload(e.target.files[0]); e.target.value = ''; });
  $('#delete').addEventListener('click', () => nb.active && nb.remove(nb.selection()));
  $('#up').addEventListener('click', () => nb.move(-1));
  $('#down').addEventListener('click', () => nb.move(1));
  $('#celltype').addEventListener('change', (e) => { nb.setType(nb.selection(), e.target.value); if (nb.active) nb.command(nb.active); });
  $('#name').addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); e.target.blur(); } });
  $('#name').addEventListener('change', rename);
  document.addEventListener('focusin', () => { if (nb.active) $('#celltype').value = nb.active.type; });
  document.addEventListener('keydown', (e) => {
    const mod = e.ctrlKey || e.metaKey;
    if (mod && e.key === 's') { e.preventDefault(); save(); }
    else if (mod && e.key === 'o') { e.preventDefault(); $('#open').click(); }
    else if (mod && e.key === '.') { e.preventDefault(); interrupt(); }
  });
  bindCommands(nb, { interrupt, restart, save });
  // Leaving with work not in the file: the browser asks first.
  window.addEventListener('beforeunload', (e) => {
    snapshot();
    if (dirty() || doc.saving) { e.preventDefault(); e.returnValue = ''; }
  });
  window.addEventListener('pagehide', snapshot);
  showKeys();
}

// The tab's snapshot, if this is a reload: the cells as they were (unsaved
// edits included), or the file when the snapshot had nothing unsaved and
// the file changed since.
async function restore() {
  let snap = null;
  try { snap = JSON.parse(sessionStorage.getItem(SNAP) || 'null'); } catch { snap = null; }
  if (!snap || snap.v !== 1) return null;
  if (snap.path && !snap.dirty) {
    try {
      const m = await contents.get(snap.path, { content: false, hash: true });
      if (m.hash !== snap.hash) { await openPath(snap.path, { force: true }); return null; }
    } catch { /* gone: the snapshot is all there is */ }
  }
  loadCells(snap.cells, snap.active);
  setDoc(snap.path, { hash: snap.hash, last_modified: snap.lastModified }, snap.metadata || {});
  if (!snap.path) $('#name').value = snap.name || 'Untitled';
  if (!snap.dirty) doc.savedVersion = doc.version;
  else doc.version++;
  refreshSaveState();
  status(`restored ${snap.path || 'the notebook'} after the reload`);
  return snap;
}

async function start() {
  bind();
  const snap = await restore();
  if (!snap && !nb.cells.length) {
    nb.focus(nb.add(''));
    doc.savedVersion = doc.version; // one empty cell: nothing to lose yet
    refreshSaveState();
  }
  files.refresh();
  watchDisk();
  try {
    await mcp.connect();
    status('connected');
  } catch (e) {
    status(String(e.message || e), 'bad');
    await mcp.connected;
  }
  if (await subscribe()) { readStatus(); refreshVars(); } else { polling = true; poll(); }
  // A run this page started before the reload: follow it in its cell.
  if (snap && snap.running >= 0 && nb.cells[snap.running]) nb.resume(nb.cells[snap.running], snap.runningExec);
}

start();
