// rat-py as the `py` command of mcptocli and mcp2cli: the README's session,
// replayed through TermClient (mcp2cli_like.mjs), a client that does what
// both real ones do, under each name; then what the session does not show.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TermClient, Mcp2cliLike, parseToolArguments, parseInvocation, shellSplit, goJSON } from './mcp2cli_like.mjs';
import { scratch, ms, connect, prompt } from './lib.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);

/** The README's session: [{command, output}], from the block under "With mcptocli". */
function readmeSession() {
  const md = readFileSync(path.join(here, '../../README.md'), 'utf8');
  const at = md.indexOf('### With mcptocli (or mcp2cli)');
  const start = md.indexOf('```\n', at) + 4;
  const lines = md.slice(start, md.indexOf('```\n', start)).split('\n');
  lines.pop();
  const steps = [];
  for (const l of lines) {
    if (l.startsWith('$ ')) steps.push({ command: l.slice(2), output: '' });
    else steps.at(-1).output += l + '\n';
  }
  return steps;
}

/** What differs between two runs of the same session: timings and pids. */
const norm = (t) => t.replace(/([✓✗]) [\d.]+m?s\b/g, '$1 T').replace(/"duration_ms": \d+/g, '"duration_ms": T').replace(/pid \d+/g, 'pid N');

for (const client of ['mcptocli', 'mcp2cli']) {
  test(`the README's session, command by command, through ${client}`, async () => {
    const work = scratch();
    const py = new TermClient(client, ['--cwd', work.dir]);
    const steps = readmeSession();
    assert.ok(steps.length >= 14, 'the README shows the session');
    try {
      for (const { command, output } of steps) {
        const argv = shellSplit(command);
        if (argv[0] !== 'py') continue; // rat-py install: integration.install
        let got;
        if (argv[1] === 'shell') {
          const typed = output.split('\n').filter((l) => l.startsWith('py> ')).map((l) => l.slice(4));
          got = await py.shell(typed.filter((l) => l !== 'exit'));
          got.out += 'py> exit\n';
        } else {
          // An answer typed at the terminal's prompt: the line after "Server asks:".
          const lines = output.split('\n'), asks = lines.findIndex((l) => l.startsWith('Server asks:'));
          const tty = asks >= 0 ? [lines[asks + 1].slice(lines[asks + 1].indexOf(': ') + 2)] : [];
          got = await py.cmd(argv.slice(1), { tty });
        }
        assert.equal(got.code, 0, `${command}: ${got.out}`);
        let want = output;
        if (client === 'mcp2cli' && argv[1] === 'tools') // e005a6c: name and whole description, no header or hint
          want = py.renderTools(py.cache);
        if (client === 'mcp2cli' && argv[1] === 'shell') // e005a6c's shell has no banner
          want = want.slice(want.indexOf('py> '));
        assert.equal(norm(got.out), norm(want), `$ ${command}`);
        if (argv[1] === 'down')
          assert.ok(got.exit.ms < prompt(300) && got.exit.signal === null, `py down: rat-py exited on its own in ${got.exit.ms} ms`);
      }
    } finally {
      await py.close();
      work.cleanup();
    }
  });
}

test('arguments as the clients parse them, from rat-py\'s own schemas', async () => {
  const work = scratch();
  const s = new Mcp2cliLike(['--cwd', work.dir], { client: 'mcptocli' });
  await s.start();
  try {
    const { run, look, ctl } = s.schemas;
    const W = { allow_input: true, wait: 25 };
    assert.deepEqual(parseToolArguments(run, ['x = 42']), { code: 'x = 42', ...W }, 'code is the positional, defaults filled in');
    assert.deepEqual(parseToolArguments(run, ['x', '--wait', '2', '--no-allow-input']), { code: 'x', wait: 2, allow_input: false });
    assert.deepEqual(parseToolArguments(run, ['--code=y', '--allow-input', 'false']), { code: 'y', allow_input: false, wait: 25 });
    assert.throws(() => parseToolArguments(run, []), /missing required argument: code/);
    assert.throws(() => parseToolArguments(run, ['--wait', '2', 'x']), /unexpected positional argument "x" after flags/);
    assert.deepEqual(parseToolArguments(look, []), {});
    assert.deepEqual(parseToolArguments(look, ['--code', 'math.sq', '--cursor', '7']), { code: 'math.sq', cursor: 7 });
    assert.throws(() => parseToolArguments(look, ['x']), /unexpected positional argument "x"/, 'look has no required argument');
    assert.deepEqual(parseToolArguments(ctl, ['reset']), { op: 'reset', scope: 'namespace' });
    // The clients' own flags come out first: --input is the whole arguments, never run's `input`.
    assert.deepEqual(parseInvocation(['Alice', '-o', 'json', '--timeout', '5m']), { output: 'json', input: '', rest: ['Alice'] });
    assert.deepEqual(parseInvocation(['--input', 'Alice']), { output: 'auto', input: 'Alice', rest: [] });
    assert.deepEqual(shellSplit(`py run $'a\\nb' 'c d' "e \\"f\\""`), ['py', 'run', 'a\nb', 'c d', 'e "f"']);
    assert.equal(goJSON({ b: '<&>', a: [1, { d: 1, c: 2 }], e: {} }), '{\n  "a": [\n    1,\n    {\n      "c": 2,\n      "d": 1\n    }\n  ],\n  "b": "\\u003c\\u0026\\u003e",\n  "e": {}\n}');
  } finally {
    await s.stop();
    work.cleanup();
  }
});

test('input() from the terminal: --input fails as in the clients, py run @- for a password, no terminal without up', async () => {
  const work = scratch();
  // The seed's `py run --input Alice` cannot work: --input is the client's (refused before any call).
  for (const client of ['mcptocli', 'mcp2cli']) {
    const py = new TermClient(client, ['--cwd', work.dir]);
    const r = await py.cmd(['run', '--input', 'Alice']);
    assert.equal(r.code, 2);
    assert.equal(r.out, `${client === 'mcptocli' ? 'Error' : 'error'}: parse --input as JSON object: invalid character 'A' looking for beginning of value\nhint: run \`py tools run\`\n`);
  }
  {
    const py = new TermClient('mcptocli', ['--cwd', work.dir]);
    let r;
    try {
      // Without `py up` and without a terminal: said why the answer cannot follow.
      r = await py.cmd(['run', 'name = input("Name: ")']);
      assert.match(r.out, /^INPUT REQUESTED: "Name: "\n⏳ exec #1 waits, but without `py up` each py command starts its own rat-py, which ends with it: run this in a terminal to answer at the prompt, or start `py up` first\nthe elicitation failed: "server requested user input, but stdin is not interactive"\n$/);
      await py.cmd(['up']);
      r = await py.cmd(['run', 'import getpass\np = getpass.getpass("Secret: ")']);
      assert.match(r.out, /^INPUT REQUESTED \(password; the answer is not echoed\): "Secret: "\n⏳ exec #1 waits for a password: answer with py run @- \(type it, Enter, then Ctrl-D: it stays out of your shell history\) or stop it with py ctl cancel\n$/);
      const file = path.join(work.dir, 'typed');
      writeFileSync(file, 's3cret\n'); // what `py run @-` reads after Enter and Ctrl-D
      r = await py.cmd(['run', `@${file}`]);
      assert.match(r.out, /^✓ \d+ms \| 1 var\n$/);
      r = await py.cmd(['run', 'print(repr(p))']);
      assert.match(r.out, /^'s3cret'\n/, 'one trailing line break dropped');
      // The MCP form still works from the terminal, and an empty answer is `py run ''`.
      await py.cmd(['run', 'a = input("A: ")']);
      r = await py.cmd(['run', '--input', '{"input":"x"}']);
      assert.match(r.out, /^✓ /);
      await py.cmd(['run', 'b = input("B: ")']);
      r = await py.cmd(['run', '']);
      assert.match(r.out, /^✓ /);
      r = await py.cmd(['run', 'print([a, b])']);
      assert.match(r.out, /^\['x', ''\]\n/);
      // No prompt waiting: the code runs as code.
      r = await py.cmd(['run', 'Alice']);
      assert.match(r.out, /^NameError: name 'Alice' is not defined/);
      const d = await py.cmd(['down']);
      assert.equal(d.exit.signal, null);
    } finally {
      await py.close();
    }
  }
  work.cleanup();
});

test('one state word while input() waits; other clients keep the MCP contract', async () => {
  const work = scratch();
  const s = new Mcp2cliLike(['--cwd', work.dir], { client: 'mcptocli' }); // mcptocli-daemon
  await s.start();
  try {
    const m = await s.call('run', { code: 'name = input("Name: ")' });
    assert.equal(m.result.structuredContent.status, 'waiting_for_input');
    assert.match(m.result.content[0].text, /answer with py run '\.\.\.'/);
    const st = await s.call('ctl', { op: 'status' });
    assert.equal(st.result.structuredContent.state, 'waiting_for_input');
    assert.match(st.result.content[0].text, /^python waiting_for_input \| exec #0 \| /);
    const look = await s.call('look', {});
    assert.match(look.result.content[0].text, /^python waiting_for_input \| exec #1 running \d+s\n/, 'look says the same word');
    const res = await s.request('resources/read', { uri: 'rat://status' });
    assert.equal(JSON.parse(res.result.contents[0].text).state, 'waiting_for_input');
  } finally {
    await s.stop();
  }
  // Any other client: the MCP texts, and code sent while a prompt waits is refused, not taken as the answer.
  const h = await connect({ args: ['--cwd', work.dir] });
  try {
    const ask = await h.client.callTool({ name: 'run', arguments: { code: 'name = input("Name: ")' } });
    assert.match(ask.content[0].text, /answer with run\(code="", input="\.\.\."\)/);
    const again = await h.client.callTool({ name: 'run', arguments: { code: 'Alice' } });
    assert.match(again.content[0].text, /^INPUT PENDING: exec #1 is waiting for input "Name: "/);
  } finally {
    await h.close();
    work.cleanup();
  }
});
