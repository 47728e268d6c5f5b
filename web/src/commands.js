// Command mode: Jupyter's keys on the selected cells (Escape enters it,
// Enter leaves it). The list is also shown in the Keys panel (KEYS).
//   a / b       insert a cell above / below      dd        delete (z: undo)
//   m / y / r   markdown / code / raw            c x v     copy, cut, paste below
//   ↑ ↓ (k j)   select the cell above / below    Shift+↑↓  extend the selection
//   Ctrl+Shift+↑ / ↓  move the selection up / down
//   Shift+Enter run and select the next        Ctrl+Enter  run
//   Enter       edit                           i i        interrupt    0 0  restart

export const KEYS = [
  ['Esc / Enter', 'command mode / edit'],
  ['a / b', 'insert above / below'],
  ['d d / z', 'delete / undo delete'],
  ['m / y / r', 'markdown / code / raw'],
  ['c / x / v', 'copy / cut / paste'],
  ['↑ ↓ Shift+↑ ↓', 'select / extend'],
  ['Ctrl+Shift+↑ ↓', 'move cells'],
  ['i i / 0 0', 'interrupt / restart'],
];

// nb: the Notebook; actions: {interrupt(), restart(), save()}.
export function bindCommands(nb, actions) {
  let last = '', lastAt = 0, clipboard = null;
  const twice = (k) => {
    const now = Date.now();
    const hit = last === k && now - lastAt < 800;
    last = hit ? '' : k;
    lastAt = now;
    return hit;
  };
  document.addEventListener('keydown', (e) => {
    if (nb.mode !== 'command' || e.defaultPrevented) return;
    const t = e.target;
    if (t && (t.matches?.('input, textarea, select, button, dialog *') || t.isContentEditable)) return;
    if (t && t.closest?.('.cm-editor, .editor')) return;
    const cell = nb.active;
    if (!cell) return;
    const sel = nb.selection();
    const mod = e.ctrlKey || e.metaKey;
    const k = e.key;
    let handled = true;
    if (k === 'Enter' && e.shiftKey) { nb.run(cell); nb.advance(cell); }
    else if (k === 'Enter' && mod) { for (const c of sel) nb.run(c); }
    else if (k === 'Enter' && e.altKey) { nb.run(cell); nb.command(nb.add('', cell)); }
    else if (k === 'Enter') nb.edit(cell);
    else if (mod && e.shiftKey && k === 'ArrowUp') nb.move(-1);
    else if (mod && e.shiftKey && k === 'ArrowDown') nb.move(1);
    else if (mod && (k === 'z' || k === 'Z') && !e.shiftKey) nb.undo();
    else if (mod) handled = false;
    else if (e.shiftKey && (k === 'ArrowUp' || k === 'K')) { const i = nb.cells.indexOf(cell); if (i > 0) nb.extendTo(nb.cells[i - 1]); }
    else if (e.shiftKey && (k === 'ArrowDown' || k === 'J')) { const n = nb.next(cell); if (n) nb.extendTo(n); }
    else if (k === 'ArrowUp' || k === 'k') { const i = nb.cells.indexOf(cell); if (i > 0) nb.command(nb.cells[i - 1]); }
    else if (k === 'ArrowDown' || k === 'j') { const n = nb.next(cell); if (n) nb.command(n); }
    else if (k === 'a') nb.command(nb.add('', null, 'code', sel[0]));
    else if (k === 'b') nb.command(nb.add('', sel[sel.length - 1]));
    else if (k === 'd') { if (twice('d')) nb.remove(sel); }
    else if (k === 'z') nb.undo();
    else if (k === 'm') nb.setType(sel, 'markdown');
    else if (k === 'y') nb.setType(sel, 'code');
    else if (k === 'r') nb.setType(sel, 'raw');
    else if (k === 'c') clipboard = sel.map((c) => nb.toJson(c));
    else if (k === 'x') { clipboard = sel.map((c) => nb.toJson(c)); nb.remove(sel); }
    else if (k === 'v' && clipboard) {
      let at = nb.active;
      for (const j of clipboard) at = nb.fromJson(j, at);
      nb.command(at);
    } else if (k === 'i') { if (twice('i')) actions.interrupt(); }
    else if (k === '0') { if (twice('0')) actions.restart(); }
    else if (k === 'Escape') nb.command(cell);
    else handled = false;
    if (handled) e.preventDefault();
  });
}
