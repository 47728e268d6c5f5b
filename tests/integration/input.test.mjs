// input(): answered with run(code="", input=...), through elicitation, refused when
// allow_input is false; password prompts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, run, ctl, call, rawServer, ms } from './lib.mjs';

test('input() ends the call with INPUT REQUESTED, run(input) continues it', async () => {
  const h = await connect();
  try {
    const r1 = await run(h, 'print("hello")\nname = input("Name: ")\nprint("hi", name)');
    assert.equal(r1.isError, false);
    assert.match(r1.text, /^hello\n\nINPUT REQUESTED: "Name: "\n⏳ exec #1 waits: answer with run\(code="", input="\.\.\."\)/);
    const r2 = await call(h, 'run', { code: '', input: 'Alice' });
    assert.equal(r2.isError, false);
    assert.match(r2.text, /^hi Alice\n\n✓ \d+ms \| 1 var$/, 'only the rest of the output, and the time spent waiting is not counted');
    const r3 = await run(h, 'name');
    assert.match(r3.text, /^'Alice'\n/);
  } finally {
    await h.close();
  }
});

test('the spec example: a bare input() then --input', async () => {
  const h = await connect();
  try {
    const r1 = await run(h, 'name = input("Name: ")');
    assert.match(r1.text, /^INPUT REQUESTED: "Name: "\n/);
    const r2 = await call(h, 'run', { code: '', input: 'Alice' });
    assert.match(r2.text, /^✓ \d+ms \| 1 var$/);
  } finally {
    await h.close();
  }
});

test('several input() calls in one run, answered one by one', async () => {
  const h = await connect();
  try {
    let r = await run(h, 'a = input("a? ")\nb = input("b? ")\nprint(int(a) + int(b))');
    assert.match(r.text, /INPUT REQUESTED: "a\? "/);
    r = await call(h, 'run', { code: '', input: '2' });
    assert.match(r.text, /INPUT REQUESTED: "b\? "/);
    r = await call(h, 'run', { code: '', input: '3' });
    assert.match(r.text, /^5\n\n✓ /);
  } finally {
    await h.close();
  }
});

test('new code while input is pending is refused with a clear hint', async () => {
  const h = await connect();
  try {
    await run(h, 'v = input("Value: ")');
    const r = await run(h, 'print(1)');
    assert.equal(r.isError, true);
    assert.match(r.text, /^INPUT PENDING: exec #1 is waiting for input "Value: "/);
    const c = await ctl(h, 'cancel');
    assert.equal(c.text, 'CANCELLED exec #1');
    const r2 = await run(h, 'print("after")');
    assert.match(r2.text, /^after\n\n✓ /);
  } finally {
    await h.close();
  }
});

test('input with nothing pending is a clear error', async () => {
  const h = await connect();
  try {
    const r = await call(h, 'run', { code: '', input: 'x' });
    assert.equal(r.isError, true);
    assert.match(r.text, /no input\(\) is waiting/);
  } finally {
    await h.close();
  }
});

test('code and input together are refused', async () => {
  const h = await connect();
  try {
    const r = await call(h, 'run', { code: 'print(1)', input: 'x' });
    assert.equal(r.isError, true);
    assert.match(r.text, /either code .* or input/);
  } finally {
    await h.close();
  }
});

test('allow_input=false makes input() raise in the kernel', async () => {
  const h = await connect();
  try {
    const r = await run(h, 'input("x? ")', { allow_input: false });
    assert.equal(r.isError, true);
    assert.match(r.text, /StdinNotImplementedError/);
  } finally {
    await h.close();
  }
});

test('a password prompt says it is not echoed, and the answer never appears', async () => {
  const h = await connect({ elicit: async () => { throw new Error('password prompts must not be elicited'); } });
  try {
    const r1 = await run(h, 'import getpass\npw = getpass.getpass("Password: ")\nprint(len(pw))');
    assert.match(r1.text, /INPUT REQUESTED \(password; the answer is not echoed\): "Password: "/);
    const r2 = await call(h, 'run', { code: '', input: 's3cret' });
    assert.match(r2.text, /^6\n\n✓ /);
    assert.doesNotMatch(r2.text, /s3cret/);
  } finally {
    await h.close();
  }
});

test('with elicitation, input() is asked inside the same call', async () => {
  const asked = [];
  const h = await connect({
    elicit: async (req) => {
      asked.push(req.params);
      return { action: 'accept', content: { value: 'Bob' } };
    },
  });
  try {
    const r = await run(h, 'name = input("Name: ")\nprint("hi", name)');
    assert.match(r.text, /^hi Bob\n\n✓ \d+ms \| 1 var$/);
    assert.equal(asked.length, 1);
    assert.match(asked[0].message, /Name: /);
    assert.equal(asked[0].requestedSchema.type, 'object');
    assert.deepEqual(asked[0].requestedSchema.required, ['value']);
    // mcp2cli and mcptocli print a field as `<description>: `: the prompt's own colon is left out.
    assert.equal(asked[0].requestedSchema.properties.value.description, 'Name');
  } finally {
    await h.close();
  }
});

test('a declined elicitation falls back to INPUT REQUESTED', async () => {
  const h = await connect({ elicit: async () => ({ action: 'decline' }) });
  try {
    const r = await run(h, 'name = input("Name: ")');
    assert.match(r.text, /^INPUT REQUESTED: "Name: "/);
    const r2 = await call(h, 'run', { code: '', input: 'Carol' });
    assert.match(r2.text, /^✓ /);
  } finally {
    await h.close();
  }
});

// Elicitation replies come from the client and are untrusted: a reply that is
// not a valid ElicitResult (action null or missing, content not an object, a
// result that is null) must end the call with INPUT REQUESTED and a note,
// never crash rat-py and never leave the call unanswered.
test('an invalid elicitation reply falls back to INPUT REQUESTED, with a note', async () => {
  const srv = rawServer();
  try {
    await srv.initialize('2025-06-18', { elicitation: {} });
    const bad = [
      { action: null },
      null,
      { action: 'accept', content: null },
      { action: 'accept', content: { value: 7 } },
      'accept',
      { action: 'maybe' },
    ];
    let id = 10;
    for (const result of bad) {
      id++;
      srv.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run', arguments: { code: 'v = input("V: ")' } } });
      let ask;
      for (;;) {
        ask = await srv.next(ms(30_000));
        if (ask.method === 'elicitation/create') break;
        assert.ok(ask.method, `no result before the elicitation: ${JSON.stringify(ask)}`);
      }
      srv.send({ jsonrpc: '2.0', id: ask.id, result });
      const r = await srv.reply(id, ms(30_000));
      const text = r.result.content[0].text;
      assert.match(text, /^INPUT REQUESTED: "V: "\n⏳ exec #\d+ waits/, `reply ${JSON.stringify(result)}`);
      assert.match(text, (result === null || typeof result !== "object") ? /\nthe elicitation failed: "invalid response: \\"result\\" must be an object"$/ : /\nthe client.s elicitation reply was not valid \(.+\)$/, `reply ${JSON.stringify(result)}`);
      // The prompt is still open: answering it the text way finishes the run.
      srv.send({ jsonrpc: '2.0', id: 100 + id, method: 'tools/call', params: { name: 'run', arguments: { code: '', input: 'ok' } } });
      const r2 = await srv.reply(100 + id, ms(30_000));
      assert.match(r2.result.content[0].text, /^✓ /);
    }
    // An error reply: the client's message is quoted; a malformed one is named.
    srv.send({ jsonrpc: '2.0', id: 50, method: 'tools/call', params: { name: 'run', arguments: { code: 'v = input("W: ")' } } });
    let ask;
    do { ask = await srv.next(ms(30_000)); } while (ask.method !== 'elicitation/create');
    srv.send({ jsonrpc: '2.0', id: ask.id, error: null });
    const r = await srv.reply(50, ms(30_000));
    assert.match(r.result.content[0].text, /^INPUT REQUESTED: "W: "[^]*\nthe elicitation failed: "invalid response: \\"error\\" must be/);
  } finally {
    await srv.close();
  }
});
