// Structured results (doc/tools.md#structured-results): every tool advertises
// an outputSchema, and every kind of result carries a structuredContent that
// validates against it (Ajv, strict, as the SDKs and hosts compile schemas),
// beside the unchanged text. The official SDK client validates it too: a
// result that did not conform would make callTool throw.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import Ajv from 'ajv';
import { connect } from './lib.mjs';

// A 1×1 PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

async function setup(opts = {}) {
  const h = await connect(opts);
  const { tools } = await h.client.listTools();
  const ajv = new Ajv({ strict: true, allErrors: true });
  const validate = {};
  for (const t of tools) {
    assert.ok(t.outputSchema, `${t.name} has an outputSchema`);
    assert.equal(t.outputSchema.type, 'object');
    validate[t.name] = ajv.compile(t.outputSchema);
  }
  // Calls a tool; checks the structuredContent against the schema and
  // returns { text, texts, isError, sc }.
  h.call = async (name, args) => {
    const r = await h.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
    const texts = r.content.map((c) => c.text);
    if (!r.isError || r.structuredContent) {
      assert.ok(r.structuredContent, `${name} ${JSON.stringify(args)}: structuredContent`);
      assert.ok(validate[name](r.structuredContent),
        `${name} ${JSON.stringify(args)}: ${JSON.stringify(validate[name].errors)}\n${JSON.stringify(r.structuredContent)}`);
    }
    return { text: texts[texts.length - 1], texts, isError: r.isError === true, sc: r.structuredContent };
  };
  return h;
}

test('run: stream, display, execute_result, assets, display updates and clear_output, in order', async () => {
  const h = await setup();
  try {
    const r = await h.call('run', { code: [
      'import sys, base64',
      'from IPython.display import display, HTML, Image, Markdown, clear_output',
      'print("gone")',
      'clear_output()',
      'print("out 1", flush=True)',
      'print("err 1", file=sys.stderr, flush=True)',
      'print("out 2", flush=True)',
      `display(Image(data=base64.b64decode("${PNG}")))`,
      'display(HTML("<b>hi</b>"))',
      'h = display(Markdown("*v1*"), display_id=True)',
      'h.update(Markdown("*v2*"))',
      'print("\\x1b[31mred\\x1b[0m")',
      'x = 41',
      'x + 1',
    ].join('\n') });
    assert.equal(r.isError, false);
    const sc = r.sc;
    assert.equal(sc.status, 'ok');
    assert.equal(sc.success, true);
    assert.ok(sc.exec_count >= 1);
    assert.ok(sc.duration_ms >= 0);
    assert.ok(sc.vars >= 1);
    assert.equal(sc.assets, 2);
    // The text stays the seed's; output + footer are its two parts.
    // output ends with vscode-rat's plot line for the image (its convention).
    assert.equal(r.text, `${sc.output.replace(/\n__RAT_PLOT__:.*$/, '')}\n\n${sc.footer}`);
    assert.match(sc.output, /\n__RAT_PLOT__:\/.*\/asset-[0-9a-f]{32}\.png$/);
    assert.match(sc.footer, /^✓ \d+ms \| \d+ vars? \| 2 assets$/);
    const kinds = sc.outputs.map((o) => o.type + (o.name ? `:${o.name}` : ''));
    assert.deepEqual(kinds, ['clear_output', 'stream:stdout', 'stream:stderr', 'stream:stdout', 'display_data',
      'display_data', 'display_data', 'update_display_data', 'stream:stdout', 'execute_result']);
    assert.equal(sc.outputs[1].text, 'out 1\n');
    assert.equal(sc.outputs[3].text, 'out 2\n');
    const img = sc.outputs[4];
    assert.equal(img.assets.length, 1);
    assert.equal(img.assets[0].mime, 'image/png');
    assert.match(img.assets[0].uri, /^rat:\/\/assets\/[0-9a-f]{32}\.png$/);
    assert.ok(existsSync(img.assets[0].file), 'stdio: the file is named');
    assert.equal(img.assets[0].url, undefined, 'stdio: no HTTP path');
    assert.match(img.data['text/plain'], /Image/);
    const read = await h.client.readResource({ uri: img.assets[0].uri });
    assert.equal(read.contents[0].blob, PNG);
    assert.equal(sc.outputs[5].assets[0].mime, 'text/html');
    assert.equal(sc.outputs[6].data['text/markdown'], '*v1*');
    assert.ok(sc.outputs[6].display_id);
    assert.equal(sc.outputs[7].display_id, sc.outputs[6].display_id);
    assert.equal(sc.outputs[7].data['text/markdown'], '*v2*');
    assert.equal(sc.outputs[8].text, 'red\n', 'ANSI removed');
    assert.equal(sc.outputs[9].data['text/plain'], '42');
    assert.equal(sc.outputs[9].execution_count, sc.exec_count);
    assert.equal(sc.truncated, undefined);
  } finally {
    await h.close();
  }
});

test('run: error with an ANSI-free traceback; cut output says so; early return and ctl wait', async () => {
  const h = await setup();
  try {
    const e = await h.call('run', { code: 'def f():\n    return y\nf()' });
    assert.equal(e.isError, true);
    assert.equal(e.sc.status, 'error');
    assert.equal(e.sc.success, false);
    assert.equal(e.sc.error.ename, 'NameError');
    assert.match(e.sc.error.evalue, /'y' is not defined/);
    assert.ok(e.sc.error.traceback.length > 0);
    assert.ok(e.sc.error.traceback.every((l) => !l.includes('\x1b')), 'ANSI stripped');
    assert.equal(e.sc.error.line, 2, 'the last frame in this cell');
    assert.equal(e.sc.error.source, 'return y');
    assert.match(e.sc.output, /NameError: name 'y' is not defined/);

    const bold = await h.call('run', { code: 'class B:\n    def __repr__(self): return "\\x1b[1mbold\\x1b[0m"\nB()' });
    assert.equal(bold.sc.outputs[0].data['text/plain'], 'bold', 'ANSI removed from a value too');

    const big = await h.call('run', { code: 'for i in range(300): print(i)' });
    assert.equal(big.sc.truncated.text_cut, true);
    assert.equal(big.sc.truncated.lines, 300);
    assert.ok(existsSync(big.sc.truncated.full_output));
    assert.equal(big.sc.outputs.map((o) => o.text).join(''), Array.from({ length: 300 }, (_, i) => `${i}\n`).join(''),
      'the items keep what the text cut (within their own bound)');

    // The items' own bound (256 KiB of text per result): the rest is counted.
    const flood = await h.call('run', { code: 'print("y" * 300_000)' });
    const kept = flood.sc.outputs.map((o) => o.text).join('').length;
    assert.equal(kept, 256 * 1024);
    assert.equal(flood.sc.truncated.bytes_dropped, 300_001 - kept);
    assert.equal(flood.sc.truncated.text_cut, true);

    const early = await h.call('run', { code: 'import time\nprint("a", flush=True)\ntime.sleep(1.5)\nprint("b")', wait: 0.5 });
    assert.equal(early.sc.status, 'running');
    assert.equal(early.sc.success, true);
    assert.match(early.sc.footer, /^⏳ running/);
    assert.deepEqual(early.sc.outputs, [{ type: 'stream', name: 'stdout', text: 'a\n' }]);
    const rest = await h.call('ctl', { op: 'wait' });
    assert.equal(rest.sc.status, 'ok');
    assert.deepEqual(rest.sc.outputs, [{ type: 'stream', name: 'stdout', text: 'b\n' }], 'continues where it stopped');
    const none = await h.call('ctl', { op: 'wait' });
    assert.deepEqual(none.sc, { op: 'wait', ok: false });
  } finally {
    await h.close();
  }
});

test('run: input prompts (plain and password), ctl status while waiting, cancel', async () => {
  const h = await setup();
  try {
    const ask = await h.call('run', { code: 'name = input("Name: ")\nprint("hi", name)' });
    assert.equal(ask.sc.status, 'waiting_for_input');
    assert.deepEqual(ask.sc.input, { prompt: 'Name: ', password: false });
    const st = await h.call('ctl', { op: 'status' });
    assert.equal(st.texts.length, 1, 'only vscode-rat (clientInfo rat-vscode) gets a first waiting_for_input item');
    assert.match(st.texts[0], /^python waiting_for_input \| exec #\d+ \| rev \d+ \| up \d+s/, 'the seed text, with the one state word');
    assert.equal(st.sc.state, 'waiting_for_input');
    assert.equal(st.sc.waiting_for_input, true);
    assert.deepEqual(st.sc.input, { prompt: 'Name: ', password: false });
    assert.equal(st.sc.running.mine, true);
    const ans = await h.call('run', { code: '', input: 'Ada' });
    assert.equal(ans.sc.status, 'ok');
    assert.deepEqual(ans.sc.outputs, [{ type: 'stream', name: 'stdout', text: 'hi Ada\n' }]);

    const pw = await h.call('run', { code: 'import getpass\np = getpass.getpass("Secret: ")' });
    assert.deepEqual(pw.sc.input, { prompt: 'Secret: ', password: true });
    const c = await h.call('ctl', { op: 'cancel' });
    assert.equal(c.sc.op, 'cancel');
    assert.equal(c.sc.verdict, 'interrupted');
    assert.equal(c.sc.ok, true);
    const idle = await h.call('ctl', { op: 'status' });
    assert.equal(idle.texts.length, 1);
    assert.equal(idle.sc.state, 'idle');
    assert.equal(idle.sc.waiting_for_input, false);
    assert.equal(idle.sc.language, 'python');
    assert.ok(idle.sc.kernel.pid > 0);
    assert.equal(idle.sc.restarts, 0);
    const nothing = await h.call('ctl', { op: 'cancel' });
    assert.deepEqual(nothing.sc, { op: 'cancel', ok: false, verdict: 'none' });

    // A run interrupted by ctl cancel ends as cancelled.
    const long = h.call('run', { code: 'import time\nprint("go", flush=True)\ntime.sleep(30)' });
    for (;;) {
      const s = await h.call('ctl', { op: 'status' });
      if (s.sc.running?.acknowledged) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const c2 = await h.call('ctl', { op: 'cancel' });
    assert.equal(c2.sc.verdict, 'interrupted');
    const w = await long;
    assert.equal(w.sc.status, 'cancelled');
    assert.equal(w.sc.success, false);
    assert.equal(w.sc.error.ename, 'KeyboardInterrupt');
  } finally {
    await h.close();
  }
});

test('look: overview rows, inspect with children, completions in code points and UTF-16', async () => {
  const h = await setup();
  try {
    const empty = await h.call('look', {});
    assert.equal(empty.sc.view, 'overview');
    await h.call('run', { code: 'data = {"name": "Alice", "scores": [90, 85, 92]}\nbig = list(range(100))\nx = 42' });
    const ov = await h.call('look', {});
    assert.equal(ov.sc.view, 'overview');
    assert.equal(ov.sc.available, true);
    assert.equal(ov.sc.vars, 3);
    assert.equal(ov.sc.more, 0);
    const rows = Object.fromEntries(ov.sc.rows.map((r) => [r.name, r]));
    assert.deepEqual(rows.x, { name: 'x', type: 'int', type_name: 'int', preview: '42', expandable: false });
    assert.equal(rows.big.type, 'list (100 items)');
    assert.equal(rows.big.type_name, 'list');
    assert.equal(rows.big.size, '(100 items)');
    assert.equal(rows.big.expandable, true);
    assert.equal(rows.data.expandable, true);

    const ins = await h.call('look', { at: 'data' });
    assert.equal(ins.sc.view, 'inspect');
    assert.equal(ins.sc.source, 'helper');
    assert.equal(ins.sc.path, 'data');
    assert.equal(ins.sc.type, 'dict');
    assert.equal(ins.sc.size, '(2 items)');
    assert.match(ins.sc.value, /^\{'name': 'Alice'/);
    const scores = ins.sc.children.find((c) => c.name === "'scores'");
    assert.deepEqual(scores, { name: "'scores'", type: 'list', value: '[90, 85, 92]', expandable: true, path: "data['scores']" });
    const deeper = await h.call('look', { at: scores.path });
    assert.deepEqual(deeper.sc.children.map((c) => c.path), ['data[\'scores\'][0]', 'data[\'scores\'][1]', 'data[\'scores\'][2]']);
    const fn = await h.call('look', { at: 'len' });
    assert.equal(fn.sc.kind, 'function');
    assert.match(fn.sc.signature, /^len\(/);
    assert.ok(fn.sc.doc);

    await h.call('run', { code: 'import math' });
    const comp = await h.call('look', { code: 'import math\nmath.sq', cursor: 19 });
    assert.equal(comp.sc.view, 'completions');
    assert.deepEqual(comp.sc.items[0], { label: 'sqrt', kind: 'function', signature: 'sqrt(x, /)' });
    assert.equal(comp.sc.replace_start, 17);
    assert.equal(comp.sc.replace_end, 19);
    // Past U+FFFF a code point is two UTF-16 units: JavaScript's indices differ.
    const code = 's = "😀"; math.sq';
    const cp = [...code].length;
    const emoji = await h.call('look', { code, cursor: cp });
    assert.equal(emoji.sc.replace_end, cp);
    assert.equal(emoji.sc.replace_end_utf16, code.length);
    assert.equal(code.slice(emoji.sc.replace_start_utf16, emoji.sc.replace_end_utf16), 'sq');
    const no = await h.call('look', { code: 'zzzqqq', cursor: 6 });
    assert.deepEqual(no.sc.items, []);
  } finally {
    await h.close();
  }
});

test('ctl: reset and restart carry their structured outcome', async () => {
  const h = await setup();
  try {
    await h.call('run', { code: 'a = 1' });
    const r = await h.call('ctl', { op: 'reset' });
    assert.deepEqual(r.sc, { op: 'reset', ok: true, vars: 0 });
    const rs = await h.call('ctl', { op: 'restart' });
    assert.deepEqual(rs.sc, { op: 'restart', ok: true, vars: 0 });
  } finally {
    await h.close();
  }
});
