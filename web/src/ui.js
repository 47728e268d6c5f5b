// Small pieces of page UI: a modal confirmation (or a name to type), a toast
// with an action (Undo), and banners (connection lost, file changed on
// disk). Built with DOM calls only: no inline style, no HTML strings.

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

// Asks a question in a modal <dialog>. buttons: [{label, value, primary?,
// danger?}]; resolves with the chosen value, or null (Escape, Cancel).
// opts.input: a default text for a field whose value then comes back as
// {value, text}.
export function ask(title, message, buttons, opts = {}) {
  return new Promise((resolve) => {
    const d = el('dialog', 'modal');
    d.setAttribute('aria-label', title);
    const form = el('form');
    form.method = 'dialog';
    form.append(el('h3', '', title));
    if (message) form.append(el('p', '', message));
    let field = null;
    if (opts.input !== undefined) {
      field = el('input');
      field.value = opts.input;
      field.spellcheck = false;
      field.setAttribute('aria-label', title);
      form.append(field);
    }
    const row = el('div', 'buttons');
    let chosen = null;
    const all = [...buttons, { label: 'Cancel', value: null }];
    for (const b of all) {
      const btn = el('button', `${b.primary ? 'primary' : ''} ${b.danger ? 'danger' : ''}`.trim(), b.label);
      btn.type = b.primary ? 'submit' : 'button';
      btn.dataset.value = b.value ?? '';
      btn.addEventListener('click', (e) => { e.preventDefault(); chosen = b.value; d.close(); });
      row.append(btn);
    }
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      chosen = (buttons.find((b) => b.primary) || buttons[0]).value;
      d.close();
    });
    form.append(row);
    d.append(form);
    d.addEventListener('close', () => {
      d.remove();
      resolve(chosen === null ? null : field ? { value: chosen, text: field.value } : chosen);
    });
    document.body.append(d);
    d.showModal();
    (field || row.querySelector('.primary') || row.firstChild).focus();
    if (field) field.select();
  });
}

export const confirm = (title, message, label, danger = true) =>
  ask(title, message, [{ label, value: true, primary: true, danger }]).then((v) => v === true);

// A toast at the bottom of the page for a few seconds; action: {label, run}.
let toastEl = null, toastTimer = 0;
export function toast(text, action, ms = 8000) {
  if (toastEl) toastEl.remove();
  clearTimeout(toastTimer);
  const t = el('div', 'toast');
  t.setAttribute('role', 'status');
  t.append(el('span', '', text));
  if (action) {
    const b = el('button', '', action.label);
    b.addEventListener('click', () => { t.remove(); action.run(); });
    t.append(b);
  }
  document.body.append(t);
  toastEl = t;
  toastTimer = setTimeout(() => t.remove(), ms);
  return t;
}

// One banner per kind under the header; actions: [{label, run}]. null text
// removes it.
export function banner(kind, text, actions = [], cls = '') {
  const host = document.querySelector('#banners');
  let b = host.querySelector(`[data-kind="${kind}"]`);
  if (text === null) { if (b) b.remove(); return null; }
  if (!b) { b = el('div', 'banner'); b.dataset.kind = kind; host.append(b); }
  b.className = `banner ${cls}`.trim();
  b.replaceChildren(el('span', '', text));
  for (const a of actions) {
    const btn = el('button', '', a.label);
    btn.addEventListener('click', a.run);
    b.append(btn);
  }
  return b;
}
