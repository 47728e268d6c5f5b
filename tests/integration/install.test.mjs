// `rat-py install` / `uninstall` against a temporary HOME: the YAML written
// for mcp2cli (read back with Debian's python3-yaml), the command shim, the
// real-mcp2cli path (a fake mcp2cli on PATH records its argv), idempotence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { realpathSync, mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, lstatSync, symlinkSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RAT as RAT_GIVEN, checkSanitizers } from './lib.mjs';

// What install registers: the absolute path, directories resolved.
const RAT = path.join(realpathSync(path.dirname(path.resolve(RAT_GIVEN))), path.basename(RAT_GIVEN));

function home() {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'rat-home-')));
  const project = path.join(dir, 'project');
  mkdirSync(project);
  return { dir, project, cfg: path.join(dir, '.config/mcp2cli/config.yaml'), bin: path.join(dir, '.local/share/mcp2cli/bin'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function rat(h, args, { prog = RAT, path: PATH = '/usr/bin:/bin' } = {}) {
  // Sanitizer settings pass through; nothing else of ours does.
  const env = { HOME: h.dir, PATH, LANG: 'C.UTF-8', ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? '', UBSAN_OPTIONS: process.env.UBSAN_OPTIONS ?? '' };
  const p = spawnSync(prog, args, { cwd: h.project, env, encoding: 'utf8' });
  checkSanitizers(p.stderr);
  return { code: p.status, out: p.stdout, err: p.stderr };
}

// Read back as strictly as mcp2cli's parser (Go yaml.v3): a key twice in
// one mapping is an error (PyYAML alone keeps the last one silently).
const STRICT_LOADER = `
import sys, json, yaml
class Strict(yaml.SafeLoader):
    pass
def mapping(loader, node, deep=False):
    seen = {}
    for k, _ in node.value:
        if k.tag == 'tag:yaml.org,2002:merge':
            continue
        key = loader.construct_object(k, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, 'mapping key %r already defined at line %d' % (key, seen[key]), k.start_mark)
        seen[key] = k.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep)
Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
print(json.dumps(yaml.load(open(sys.argv[1], encoding='utf-8'), Loader=Strict)))
`;

function yaml(file) {
  const p = spawnSync('/usr/bin/python3', ['-c', STRICT_LOADER, file], { encoding: 'utf8' });
  assert.equal(p.status, 0, `not valid YAML for a strict reader: ${p.stderr}\n${readFileSync(file, 'utf8')}`);
  return JSON.parse(p.stdout);
}

test('without mcp2cli: writes config.yaml and the bin/py command, says how to fix PATH; idempotent', () => {
  const h = home();
  try {
    const r = rat(h, ['install']);
    assert.equal(r.code, 0, r.err);
    const c = yaml(h.cfg);
    assert.equal(c.version, 1);
    assert.deepEqual(c.servers.py, { command: `${RAT} --cwd ${h.project}`, expose: ['py'] });
    const shim = path.join(h.bin, 'py');
    assert.ok(lstatSync(shim).isFile());
    assert.match(readFileSync(shim, 'utf8'), /exec -a py mcp2cli "\$@"/);
    assert.match(r.out, /is not on your PATH/);
    assert.match(r.out, new RegExp(`export PATH="${h.bin}:\\$PATH"`));
    const before = readFileSync(h.cfg, 'utf8');
    assert.equal(rat(h, ['install']).code, 0);
    assert.equal(readFileSync(h.cfg, 'utf8'), before, 'a second install changes nothing');
    const onPath = rat(h, ['install'], { path: `${h.bin}:/usr/bin:/bin` });
    assert.doesNotMatch(onPath.out, /not on your PATH/);
  } finally {
    h.cleanup();
  }
});

test('merges with an existing config: other servers, comments and defaults are kept', () => {
  const h = home();
  try {
    mkdirSync(path.dirname(h.cfg), { recursive: true });
    const original = [
      '# my servers',
      'version: 1',
      'servers:',
      '  weather:   # the weather one',
      '    command: weather-server --units metric',
      '    env:',
      '      TOKEN: "abc: def"',
      '    expose:',
      '    - wea',
      '  py:',
      '    command: /old/rat-py',
      '    cwd: /old',
      'defaults:',
      '  output: auto',
      '',
    ].join('\n');
    writeFileSync(h.cfg, original, { mode: 0o600 });
    const r = rat(h, ['install', '--cwd', h.dir, '--name', 'py']);
    assert.equal(r.code, 0, r.err);
    const c = yaml(h.cfg);
    assert.deepEqual(c.servers.weather, { command: 'weather-server --units metric', env: { TOKEN: 'abc: def' }, expose: ['wea'] });
    assert.deepEqual(c.servers.py, { command: `${RAT} --cwd ${h.dir}`, expose: ['py'] });
    assert.deepEqual(c.defaults, { output: 'auto' });
    const text = readFileSync(h.cfg, 'utf8');
    assert.match(text, /^# my servers\n/);
    assert.match(text, /  weather:   # the weather one\n/);
    assert.equal(lstatSync(h.cfg).mode & 0o777, 0o600, 'the file mode is kept (it may hold tokens)');

    const u = rat(h, ['uninstall']);
    assert.equal(u.code, 0, u.err);
    const c2 = yaml(h.cfg);
    assert.equal(c2.servers.py, undefined);
    assert.ok(c2.servers.weather);
    assert.ok(!existsSync(path.join(h.bin, 'py')), 'the command is removed');
    const again = rat(h, ['uninstall']);
    assert.equal(again.code, 0);
    assert.match(again.out, /not registered/);
  } finally {
    h.cleanup();
  }
});

test('refuses what it cannot edit safely, and names already used by another server', () => {
  const h = home();
  try {
    mkdirSync(path.dirname(h.cfg), { recursive: true });
    const dup = 'version: 1\nservers:\n    weather:\n        command: w\n    "weather":\n        command: v\n';
    writeFileSync(h.cfg, dup);
    let r = rat(h, ['install']);
    assert.equal(r.code, 1);
    assert.match(r.err, /cannot edit .*config\.yaml safely: line 5: the key weather appears twice in one mapping \(also on line 3\)/);
    assert.equal(readFileSync(h.cfg, 'utf8'), dup, 'untouched');
    writeFileSync(h.cfg, 'servers:\n    weather:\n        command: w\n        expose: [wea, py]\n');
    r = rat(h, ['install']);
    assert.equal(r.code, 1);
    assert.match(r.err, /`py` is already exposed by the mcp2cli server `weather`/);
    r = rat(h, ['install', '--name', 'Bad/Name']);
    assert.equal(r.code, 2);
    assert.match(r.err, /--name 'Bad\/Name': use lowercase letters, digits and dashes/);
    r = rat(h, ['install', '--name', 'My_Py']);
    assert.equal(r.code, 0, r.err);
    assert.ok(yaml(h.cfg).servers['my-py'], 'normalized the way mcp2cli does');
  } finally {
    h.cleanup();
  }
});

test('with mcp2cli on PATH: runs `mcp2cli rm NAME` then `mcp2cli add NAME CMD --as NAME`', () => {
  const h = home();
  try {
    const fake = path.join(h.dir, 'fakebin');
    mkdirSync(fake);
    const log = path.join(h.dir, 'argv.log');
    writeFileSync(path.join(fake, 'mcp2cli'), `#!/usr/bin/python3
import json, sys
open(${JSON.stringify(log)}, "a").write(json.dumps(sys.argv[1:]) + "\\n")
`);
    chmodSync(path.join(fake, 'mcp2cli'), 0o755);
    const r = rat(h, ['install', '--kernel', 'python3'], { path: `${fake}:/usr/bin:/bin` });
    assert.equal(r.code, 0, r.err);
    const calls = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(calls, [
      ['rm', 'py'],
      ['add', 'py', `${RAT} --cwd ${h.project} --kernel python3`, '--as', 'py'],
    ]);
    assert.ok(!existsSync(h.cfg), 'mcp2cli itself writes its config');
    const u = rat(h, ['uninstall'], { path: `${fake}:/usr/bin:/bin` });
    assert.equal(u.code, 0, u.err);
    assert.deepEqual(JSON.parse(readFileSync(log, 'utf8').trim().split('\n').pop()), ['rm', 'py']);
  } finally {
    h.cleanup();
  }
});

test('a family name registers itself: rat-r install is `r`, with the rat-r path', () => {
  const h = home();
  try {
    const link = path.join(h.dir, 'rat-r');
    symlinkSync(RAT, link);
    const r = rat(h, ['install'], { prog: link });
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(yaml(h.cfg).servers.r, { command: `${link} --cwd ${h.project}`, expose: ['r'] });
  } finally {
    h.cleanup();
  }
});

// Each case: the file before, what install must leave (exact bytes: every
// other byte of the user's file kept), and uninstall must give the original
// back. The strict reader checks every result.
const CMD = (h) => `${RAT} --cwd ${h.project}`;
const EDITS = [
  {
    name: 'a key written with an escape ("p\\x79" is py) is replaced, not duplicated',
    before: 'version: 1\nservers:\n    "p\\x79":\n        command: /old/rat-py\n',
    after: (h) => `version: 1\nservers:\n    py:\n        command: "${CMD(h)}"\n        expose:\n            - py\n`,
    roundtrip: false,
  },
  {
    name: 'a single-quoted key is the same key too',
    before: "servers:\n  'py':   # mine\n    command: /old\n  other: {command: o}\n",
    after: (h) => `servers:\n  py:\n    command: "${CMD(h)}"\n    expose:\n      - py\n  other: {command: o}\n`,
    roundtrip: false,
  },
  {
    name: 'a flow mapping gets a flow entry',
    before: 'version: 1\nservers: {weather: {command: w, expose: [wea]}}  # flow\ndefaults: {output: auto}\n',
    after: (h) => `version: 1\nservers: {weather: {command: w, expose: [wea]}, py: {command: "${CMD(h)}", expose: [py]}}  # flow\ndefaults: {output: auto}\n`,
    roundtrip: true,
  },
  {
    name: 'a whole document in flow style',
    before: '{version: 1}\n',
    after: (h) => `{version: 1, servers: {py: {command: "${CMD(h)}", expose: [py]}}}\n`,
    roundtrip: false,
  },
  {
    name: 'an entry replaced inside a multi-line flow mapping',
    before: 'servers: {\n  py: {command: /old, expose: [py]},\n  b: {command: b}\n}\n',
    after: (h) => `servers: {\n  py: {command: "${CMD(h)}", expose: [py]},\n  b: {command: b}\n}\n`,
    roundtrip: false,
  },
  {
    name: 'comments around the entry, a block scalar and CRLF line ends are kept',
    before: '# top\r\nservers:\r\n  # about a\r\n  a:\r\n    command: |\r\n      a-server\r\n\r\n  # about py\r\n  py:   # old\r\n    command: /old\r\n  # after py\r\n  z: {command: z}\r\n# end\r\n',
    after: (h) => `# top\r\nservers:\r\n  # about a\r\n  a:\r\n    command: |\r\n      a-server\r\n\r\n  # about py\r\n  py:\r\n    command: "${CMD(h)}"\r\n    expose:\r\n      - py\r\n  # after py\r\n  z: {command: z}\r\n# end\r\n`,
    roundtrip: false,
  },
  {
    name: 'anchors and aliases elsewhere are kept; an empty `servers: ~` is filled in',
    before: 'base: &base {env: {A: "1"}}\nservers: ~   # none yet\nother: *base\n',
    after: (h) => `base: &base {env: {A: "1"}}\nservers:    # none yet\n    py:\n        command: "${CMD(h)}"\n        expose:\n            - py\nother: *base\n`,
    roundtrip: false,
  },
  {
    name: 'a byte order mark and characters of several bytes before the entry (marks count characters)',
    before: '\ufeff# café ☕ 🐍\nservers:\n  "été": {command: "☕"}\n  py:\n    command: old   # 🐍\n  z: 1\n',
    after: (h) => `\ufeff# café ☕ 🐍\nservers:\n  "été": {command: "☕"}\n  py:\n    command: "${CMD(h)}"\n    expose:\n      - py\n  z: 1\n`,
    roundtrip: false,
  },
  {
    name: 'a last line without a line break',
    before: 'version: 1\nservers:\n  a:\n    command: "a"',
    after: (h) => `version: 1\nservers:\n  a:\n    command: "a"\n  py:\n    command: "${CMD(h)}"\n    expose:\n      - py\n`,
    roundtrip: false,
  },
];

for (const c of EDITS) {
  test(`install edits in place: ${c.name}`, () => {
    const h = home();
    try {
      mkdirSync(path.dirname(h.cfg), { recursive: true });
      writeFileSync(h.cfg, c.before);
      yaml(h.cfg); // the case itself is a valid file
      const r = rat(h, ['install']);
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(yaml(h.cfg).servers.py, { command: CMD(h), expose: ['py'] });
      assert.equal(readFileSync(h.cfg, 'utf8'), c.after(h));
      const again = rat(h, ['install']);
      assert.equal(again.code, 0, again.err);
      assert.equal(readFileSync(h.cfg, 'utf8'), c.after(h), 'a second install changes nothing');
      const u = rat(h, ['uninstall']);
      assert.equal(u.code, 0, u.err);
      const left = yaml(h.cfg);
      assert.equal(left.servers?.py, undefined);
      if (c.roundtrip)
        assert.equal(readFileSync(h.cfg, 'utf8'), c.before, 'uninstall gives the original back');
    } finally {
      h.cleanup();
    }
  });
}

test('install refuses, with the line, what it cannot edit safely, and leaves the file as it was', () => {
  const cases = [
    ['servers:\n  py: &p\n    command: /old\n  other:\n    <<: *p\n', /line 2: `servers\.py` defines the anchor &p that an alias elsewhere uses/],
    ['defaults: &d {a: 1}\nservers:\n  <<: *d\n  a: {command: a}\n', /line 3: `servers` uses a merge key \(<<\)/],
    ['servers:\n  a: {command: a}\n---\nservers: {}\n', /line 3: a second YAML document/],
    ['servers:\n  a: [unclosed\n', /line \d+, column \d+: .*not valid YAML/],
    ['servers:\n\tpy: {}\n', /not valid YAML/],
    ['servers: [a, b]\n', /line 1: `servers` is not a mapping of its own/],
    ['- a\n- b\n', /line 1: the document is not a mapping/],
    ['servers:\r  a: 1\r', /line 1: a line break other than/],
  ];
  for (const [text, re] of cases) {
    const h = home();
    try {
      mkdirSync(path.dirname(h.cfg), { recursive: true });
      writeFileSync(h.cfg, text);
      const r = rat(h, ['install']);
      assert.equal(r.code, 1, `${JSON.stringify(text)}: ${r.out}`);
      assert.match(r.err, /cannot edit .*config\.yaml safely: /, text);
      assert.match(r.err, re, text);
      assert.equal(readFileSync(h.cfg, 'utf8'), text, 'untouched');
      const u = rat(h, ['uninstall']);
      assert.equal(readFileSync(h.cfg, 'utf8'), text, 'uninstall leaves it untouched too');
      assert.ok(u.code === 0 || u.code === 1, u.err);
    } finally {
      h.cleanup();
    }
  }
});

test('uninstall removes a flow entry with its comma, and leaves `servers: {}` when it was the last', () => {
  const cases = [
    ['servers: {py: {command: x}, b: {command: b}}\n', 'servers: {b: {command: b}}\n'],
    ['servers: {b: {command: b}, py: {command: x}}\n', 'servers: {b: {command: b}}\n'],
    ['servers: {py: {command: x}}\n', 'servers: {}\n'],
    ['version: 1\nservers:   # mine\n    py:\n        command: x\n# end\n', 'version: 1\nservers: {}   # mine\n# end\n'],
  ];
  for (const [before, after] of cases) {
    const h = home();
    try {
      mkdirSync(path.dirname(h.cfg), { recursive: true });
      writeFileSync(h.cfg, before);
      const u = rat(h, ['uninstall']);
      assert.equal(u.code, 0, u.err);
      assert.equal(readFileSync(h.cfg, 'utf8'), after);
      yaml(h.cfg);
    } finally {
      h.cleanup();
    }
  }
});
