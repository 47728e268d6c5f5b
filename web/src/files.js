// The files under --cwd: a client of rat-py's Contents API (/api/contents,
// Jupyter's shape: doc/contents.md) and the Files panel that lists
// notebooks and folders to open.

export class ContentsError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

const enc = (path) => path.split('/').map(encodeURIComponent).join('/');

export class Contents {
  constructor(token) { this.token = token; }

  async req(method, path, { query = '', body, headers = {} } = {}) {
    const h = { ...headers };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) h['Content-Type'] = 'application/json';
    let res;
    try {
      res = await fetch(`/api/contents/${enc(path)}${query}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    } catch (e) {
      throw new ContentsError(`the server cannot be reached (${e.message})`, 0);
    }
    if (res.status === 204) return null;
    const text = await res.text();
    let data = null;
    try { data = JSON.parse(text); } catch { /* below */ }
    if (!res.ok) {
      const msg = data?.message || data?.error?.message || text.slice(0, 200) || `HTTP ${res.status}`;
      throw new ContentsError(res.status === 401 ? '401 Unauthorized: open the URL rat-py printed (with ?token=…)' : msg, res.status);
    }
    return data;
  }

  get(path, { content = true, hash = false, type } = {}) {
    const q = [`content=${content ? 1 : 0}`];
    if (hash) q.push('hash=1');
    if (type) q.push(`type=${type}`);
    return this.req('GET', path, { query: `?${q.join('&')}` });
  }

  // Saves a notebook. ifMatch: the hash the page last read or wrote (412
  // when the file changed since); create: only where no file is (412 if one is).
  saveNotebook(path, nb, { ifMatch, create } = {}) {
    const headers = {};
    if (ifMatch) headers['If-Match'] = `"${ifMatch}"`;
    if (create) headers['If-None-Match'] = '*';
    return this.req('PUT', path, { body: { type: 'notebook', format: 'json', content: nb }, headers });
  }

  checkpoint(path) { return this.req('POST', `${path}/checkpoints`); }
  rename(path, to) { return this.req('PATCH', path, { body: { path: to } }); }
  newNotebook(dir) { return this.req('POST', dir, { body: { type: 'notebook' } }); }
}

// The Files panel: one directory at a time, folders then notebooks (other
// files are listed dimmed: the page opens notebooks). onOpen(path).
export class FilesPanel {
  constructor(root, contents, { onOpen, onNew, onError }) {
    Object.assign(this, { root, contents, onOpen, onNew, onError });
    this.dir = '';
    this.current = null;
  }

  setCurrent(path) {
    this.current = path;
    for (const li of this.root.querySelectorAll('li[data-path]')) li.classList.toggle('current', li.dataset.path === path);
  }

  async refresh(dir = this.dir) {
    let m;
    try { m = await this.contents.get(dir, { type: 'directory' }); } catch (e) { this.onError(e); return; }
    this.dir = dir;
    const ul = document.createElement('ul');
    ul.className = 'files';
    const row = (name, path, kind, title) => {
      const li = document.createElement('li');
      li.dataset.path = path;
      li.className = kind;
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = name;
      b.title = title || path;
      li.append(b);
      ul.append(li);
      return b;
    };
    if (dir) {
      const up = dir.includes('/') ? dir.slice(0, dir.lastIndexOf('/')) : '';
      row('..', up, 'dir up', 'the folder above').addEventListener('click', () => this.refresh(up));
    }
    const isDir = (x) => x.type === 'directory';
    const items = (m.content || []).slice().sort((a, b) => (isDir(a) !== isDir(b) ? (isDir(a) ? -1 : 1) : a.name.localeCompare(b.name)));
    for (const it of items) {
      if (it.type === 'directory') row(`${it.name}/`, it.path, 'dir').addEventListener('click', () => this.refresh(it.path));
      else if (it.type === 'notebook') row(it.name, it.path, 'nb', `${it.path} · saved ${new Date(it.last_modified).toLocaleString()}`).addEventListener('click', () => this.onOpen(it.path));
    }
    if (!items.some((i) => i.type === 'notebook')) {
      const li = document.createElement('li');
      li.className = 'empty';
      li.textContent = 'No notebooks here yet.';
      ul.append(li);
    }
    const head = document.createElement('div');
    head.className = 'files-head';
    const where = document.createElement('span');
    where.className = 'where';
    where.textContent = dir ? `${dir}/` : '--cwd';
    const nb = document.createElement('button');
    nb.type = 'button';
    nb.id = 'new-notebook';
    nb.textContent = '+ Notebook';
    nb.title = 'A new notebook in this folder';
    nb.addEventListener('click', () => this.onNew(this.dir));
    head.append(where, nb);
    this.root.replaceChildren(head, ul);
    this.setCurrent(this.current);
  }
}
