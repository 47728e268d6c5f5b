// Assets over stdio: resources/list and resources/read, the 32 MB limit per
// asset, eviction past --assets-max-mb, and a store that cannot be written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { connect, run } from './lib.mjs';

// The resources that are assets (rat://status, rat://variables and rat://events are listed too).
const assetResources = async (h) => (await h.client.listResources()).resources.filter((r) => r.uri.startsWith('rat://assets/'));

test('stdio clients list and read assets as resources', async () => {
  const h = await connect();
  try {
    const r = await run(h, 'from IPython.display import display, HTML, SVG\ndisplay(HTML("<i>hi</i>"))\ndisplay(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>\'))');
    // Over stdio an HTTP path means nothing: the result names the resource
    // and the file, both of which this client can read.
    const esc = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const dir = esc(path.join(h.dir, '.rat-assets'));
    const re = new RegExp('^<IPython\\.core\\.display\\.HTML object>\\n' +
      `\\[html: (rat://assets/([0-9a-f]{32}\\.html)) \\(file: (${dir}/asset-\\2)\\)\\]\\n` +
      '<IPython\\.core\\.display\\.SVG object>\\n' +
      `\\[image: (rat://assets/([0-9a-f]{32}\\.svg)) \\(file: (${dir}/asset-\\5)\\)\\]\\n` +
      '\\n✓ \\d+ms \\| \\d+ vars? \\| 2 assets$');
    const m = re.exec(r.text);
    assert.ok(m, r.text);
    assert.doesNotMatch(r.text, /\[(html|image): \/assets\//);
    const resources = await assetResources(h);
    assert.equal(resources.length, 2);
    assert.deepEqual(resources.map((x) => x.uri).sort(), [m[1], m[4]].sort());
    const read = await h.client.readResource({ uri: m[1] });
    assert.equal(read.contents[0].text, '<i>hi</i>');
    assert.equal(readFileSync(m[3], 'utf8'), '<i>hi</i>');
    assert.match(readFileSync(m[6], 'utf8'), /^<svg/);
    await assert.rejects(h.client.readResource({ uri: 'rat://assets/../../etc/passwd' }), /-32002/);
    await assert.rejects(h.client.readResource({ uri: 'file:///etc/passwd' }), /-32002/);
  } finally {
    await h.close();
  }
});

test('an asset over 32 MB is refused with a clear line; the run still succeeds', async () => {
  const h = await connect();
  try {
    const r = await run(h, 'from IPython.display import display, HTML\ndisplay(HTML("x" * (33 * 2**20)))\nprint("after")');
    assert.equal(r.isError, false);
    assert.match(r.text, /\[text\/html of 33\.0 MB not saved: over the 32\.0 MB limit for one asset\]\nafter\n/);
    assert.equal((await assetResources(h)).length, 0);
  } finally {
    await h.close();
  }
});

test('past --assets-max-mb the oldest files are evicted', async () => {
  const h = await connect({ args: ['--assets-max-mb', '1'] });
  try {
    for (let i = 0; i < 6; i++)
      await run(h, `from IPython.display import display, HTML\ndisplay(HTML("<p>${i}</p>" + "y" * 300_000))`);
    const dir = path.join(h.dir, '.rat-assets');
    const files = readdirSync(dir);
    const total = files.reduce((n, f) => n + statSync(path.join(dir, f)).size, 0);
    assert.ok(total <= 1 << 20, `${total} bytes kept`);
    assert.ok(files.length >= 2 && files.length < 6, `${files.length} files kept`);
    const resources = await assetResources(h);
    const newest = await h.client.readResource({ uri: resources[0].uri });
    assert.match(newest.contents[0].text, /^<p>5<\/p>/, 'the newest survives');
  } finally {
    await h.close();
  }
});

test('an assets dir that cannot be created: the line says why and rat-py keeps serving', async () => {
  const h2 = await connect({ args: ['--assets-dir', '/proc/rat-py-cannot-create-here'] });
  try {
    const r = await run(h2, 'from IPython.display import display, HTML\ndisplay(HTML("<b>x</b>"))\nfor i in range(150): print(i)');
    assert.equal(r.isError, false);
    assert.match(r.text, /\[text\/html not saved: cannot create \/proc\/rat-py-cannot-create-here/);
    assert.match(r.text, /… \[52 lines truncated\] …/);
    assert.match(r.text, /\[full output not saved: cannot create \/proc\/rat-py-cannot-create-here: No such file or directory\]/);
    const again = await run(h2, 'print("still serving")');
    assert.match(again.text, /^still serving\n/);
  } finally {
    await h2.close();
  }
});
