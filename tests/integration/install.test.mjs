// `rat-py install` / `uninstall` against a temporary HOME: which of mcptocli
// and mcp2cli (its name before) they register with, the YAML written (read
// back with Debian's python3-yaml), the command shim, the path through a
// client on PATH (a fake one records its argv and edits its config the way
// the real ones do), idempotence, uninstall undoing exactly what install did,
// and doctor's report of the clients and of a stale tool-schema cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, realpathSync, mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, lstatSync, symlinkSync, chmodSync, rmSync, readdirSync, readlinkSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RAT as RAT_GIVEN, checkSanitizers } from './lib.mjs';

// What install registers: the absolute path, directories resolved.
const RAT = path.join(realpathSync(path.dirname(path.resolve(RAT_GIVEN))), path.basename(RAT_GIVEN));

function home() {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'rat-home-')));
  const project = path.join(dir, 'project');
  mkdirSync(project);
  // A HOME has these; the clients' own folders inside them are what install makes.
  mkdirSync(path.join(dir, '.config'));
  mkdirSync(path.join(dir, '.local/share'), { recursive: true });
  const cfgOf = (client) => path.join(dir, `.config/${client}/config.yaml`);
  const binOf = (client) => path.join(dir, `.local/share/${client}/bin`);
  // cfg and bin: mcp2cli's, which the YAML tests below create first (so mcp2cli is the client found).
  return { dir, project, cfg: cfgOf('mcp2cli'), bin: binOf('mcp2cli'), cfgOf, binOf, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
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

test('with no client here: registers for mcptocli, writes config.yaml and bin/py, says how to fix PATH; idempotent', () => {
  const h = home();
  try {
    const r = rat(h, ['install']);
    assert.equal(r.code, 0, r.err);
    const cfg = h.cfgOf('mcptocli'), bin = h.binOf('mcptocli');
    const c = yaml(cfg);
    assert.equal(c.version, 1);
    assert.deepEqual(c.servers.py, { command: `${RAT} --cwd ${h.project}`, expose: ['py'] });
    assert.ok(!existsSync(path.dirname(h.cfgOf('mcp2cli'))), 'the other client is not touched');
    const shim = path.join(bin, 'py');
    assert.ok(lstatSync(shim).isFile());
    assert.match(readFileSync(shim, 'utf8'), /exec -a py mcptocli "\$@"/);
    assert.match(r.out, /neither mcptocli nor mcp2cli is here: registered for mcptocli/);
    assert.match(r.out, /is not on your PATH/);
    assert.match(r.out, new RegExp(`export PATH="${bin}:\\$PATH"`));
    const before = readFileSync(cfg, 'utf8');
    assert.equal(rat(h, ['install']).code, 0);
    assert.equal(readFileSync(cfg, 'utf8'), before, 'a second install changes nothing');
    const onPath = rat(h, ['install'], { path: `${bin}:/usr/bin:/bin` });
    assert.doesNotMatch(onPath.out, /not on your PATH/);
    const m = rat(h, ['install', '--client', 'mcp2cli']);
    assert.equal(m.code, 0, m.err);
    assert.deepEqual(yaml(h.cfgOf('mcp2cli')).servers.py, { command: `${RAT} --cwd ${h.project}`, expose: ['py'] });
    assert.match(readFileSync(path.join(h.binOf('mcp2cli'), 'py'), 'utf8'), /exec -a py mcp2cli "\$@"/);
    assert.equal(rat(h, ['install', '--client', 'mcp3cli']).code, 2);
  } finally {
    h.cleanup();
  }
});

test('--kernelspec-dir is checked and passed on to the registered command, absolute', () => {
  const h = home();
  try {
    const ks = path.join(h.dir, 'my kernelspec');
    mkdirSync(ks);
    const none = rat(h, ['install', '--kernelspec-dir', ks]);
    assert.equal(none.code, 2);
    assert.match(none.err, /--kernelspec-dir .*: no kernel\.json there \(copy the directory share\/rat-py\/kernelspec\//);
    assert.ok(!existsSync(h.cfgOf('mcptocli')), 'nothing registered');
    writeFileSync(path.join(ks, 'kernel.json'), JSON.stringify({ argv: ['{python}', '-m', 'ipykernel_launcher', '-f', '{connection_file}'], display_name: 'mine', language: 'python' }));
    const both = rat(h, ['install', '--kernel', 'python3', '--kernelspec-dir', ks]);
    assert.equal(both.code, 2);
    assert.match(both.err, /--kernel and --kernelspec-dir both choose the kernel/);
    const r = rat(h, ['install', '--kernelspec-dir', path.relative(h.project, ks)]);
    assert.equal(r.code, 0, r.err);
    assert.equal(yaml(h.cfgOf('mcptocli')).servers.py.command, `${RAT} --cwd ${h.project} --kernelspec-dir '${ks}'`);
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

// A stand-in for mcptocli / mcp2cli (named by its file): records its argv,
// and edits its config and commands the way `add NAME CMD --as X` and
// `rm NAME` do (internal/cli/manage.go), or prints `version: fake`.
function fakeClient(h, client) {
  const fake = path.join(h.dir, 'fakebin');
  mkdirSync(fake, { recursive: true });
  const log = path.join(h.dir, `${client}.log`);
  writeFileSync(path.join(fake, client), `#!/usr/bin/python3
import json, os, sys, yaml
a = sys.argv[1:]
open(${JSON.stringify(log)}, "a").write(json.dumps(a) + "\\n")
home = os.environ["HOME"]
cfg = os.path.join(home, ".config", ${JSON.stringify(client)}, "config.yaml")
bindir = os.path.join(home, ".local/share", ${JSON.stringify(client)}, "bin")
doc = yaml.safe_load(open(cfg)) if os.path.exists(cfg) else None
doc = doc or {"version": 1}
servers = doc.get("servers") or {}
if a[0] == "version":
    print("version: fake")
    sys.exit(0)
if a[0] == "add":
    servers[a[1]] = {"command": a[2], "expose": [a[4]]}
    os.makedirs(bindir, exist_ok=True)
    os.symlink(os.path.realpath(sys.argv[0]), os.path.join(bindir, a[4]))
elif a[0] == "rm":
    if a[1] not in servers:
        sys.stderr.write('Error: server "%s" not found\\n' % a[1])
        sys.exit(3)
    for x in servers.pop(a[1]).get("expose", []):
        os.unlink(os.path.join(bindir, x))
doc["servers"] = servers
os.makedirs(os.path.dirname(cfg), exist_ok=True)
open(cfg, "w").write(yaml.safe_dump(doc, default_flow_style=False, sort_keys=False).replace("servers: {}", "servers: {}"))
`);
  chmodSync(path.join(fake, client), 0o755);
  return { dir: fake, calls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : []) };
}

// Every file and link under dir, with its content or target: what "nothing
// else changed" compares.
function tree(dir) {
  const out = {};
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) { out[p + '/'] = ''; walk(p); }
      else if (e.isSymbolicLink()) out[p] = `-> ${readlinkSync(p)}`;
      else out[p] = readFileSync(p, 'utf8');
    }
  };
  walk(dir);
  return out;
}

for (const client of ['mcptocli', 'mcp2cli']) {
  test(`only ${client}, on PATH: runs \`${client} add NAME CMD --as NAME\` (after \`rm NAME\` when registered), uninstall \`rm NAME\``, () => {
    const h = home();
    try {
      const f = fakeClient(h, client);
      const PATH = `${h.binOf(client)}:${f.dir}:/usr/bin:/bin`;
      const before = tree(h.dir);
      const cmd = `${RAT} --cwd ${h.project} --kernel python3`;
      let r = rat(h, ['install', '--kernel', 'python3'], { path: PATH });
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(f.calls(), [['add', 'py', cmd, '--as', 'py']]);
      assert.match(r.out, new RegExp(`^Registered rat-py as \`py\` with ${client}, in ${h.cfgOf(client)}:\\n    ${cmd}\\nCommand: ${h.binOf(client)}/py -> ${f.dir}/${client}\\n`));
      assert.doesNotMatch(r.out, /not on your PATH/);
      const other = client === 'mcptocli' ? 'mcp2cli' : 'mcptocli';
      assert.ok(!existsSync(path.join(h.dir, '.config', other)), `${other} is not touched`);
      // The client's cached tool schemas for py go: both call tools with them without asking again.
      const cache = path.join(h.dir, '.cache', client, 'metadata', `${createHash('sha256').update('py').digest('hex').slice(0, 24)}.json`);
      mkdirSync(path.dirname(cache), { recursive: true });
      writeFileSync(cache, '{"tools":[]}');
      r = rat(h, ['install', '--kernel', 'python3'], { path: PATH });
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(f.calls().slice(1), [['rm', 'py'], ['add', 'py', cmd, '--as', 'py']]);
      assert.ok(!existsSync(cache), 'the cached schemas were dropped');
      const u = rat(h, ['uninstall'], { path: PATH });
      assert.equal(u.code, 0, u.err);
      assert.deepEqual(f.calls().slice(3), [['rm', 'py']]);
      assert.match(u.out, new RegExp(`^Removed \`py\` from ${client} \\(${h.cfgOf(client)}\\), with its command\\n$`));
      rmSync(path.join(h.dir, '.cache'), { recursive: true });
      assert.deepEqual(tree(h.dir), { ...before, [`${h.dir}/${client}.log`]: readFileSync(path.join(h.dir, `${client}.log`), 'utf8') }, 'uninstall undid exactly what install did');
      const again = rat(h, ['uninstall'], { path: PATH });
      assert.match(again.out, /not registered/);
    } finally {
      h.cleanup();
    }
  });
}

test('both clients here: registered with both; uninstall removes both and leaves HOME as it was', () => {
  const h = home();
  try {
    const f = fakeClient(h, 'mcptocli'); // on PATH; mcp2cli is there by its config (and command folder) only
    mkdirSync(path.dirname(h.cfgOf('mcp2cli')), { recursive: true });
    mkdirSync(h.binOf('mcp2cli'), { recursive: true });
    writeFileSync(h.cfgOf('mcp2cli'), '# mine\nversion: 1\nservers:\n  weather: {command: w}\n');
    const before = tree(h.dir);
    const PATH = `${h.binOf('mcptocli')}:${h.binOf('mcp2cli')}:${f.dir}:/usr/bin:/bin`;
    const r = rat(h, ['install'], { path: PATH });
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(f.calls(), [['add', 'py', `${RAT} --cwd ${h.project}`, '--as', 'py']]);
    assert.deepEqual(yaml(h.cfgOf('mcp2cli')).servers.py, { command: `${RAT} --cwd ${h.project}`, expose: ['py'] });
    assert.match(readFileSync(path.join(h.binOf('mcp2cli'), 'py'), 'utf8'), /exec -a py mcp2cli/, 'mcp2cli is not installed: a wrapper');
    assert.match(r.out, /`py` on your PATH runs mcptocli/);
    const u = rat(h, ['uninstall'], { path: PATH });
    assert.equal(u.code, 0, u.err);
    assert.match(u.out, /Removed `py` from mcptocli .*\nRemoved `py` from mcp2cli .*, with its command\n$/);
    assert.deepEqual(tree(h.dir), { ...before, [`${h.dir}/mcptocli.log`]: readFileSync(path.join(h.dir, 'mcptocli.log'), 'utf8') }, 'uninstall undid exactly what install did');
  } finally {
    h.cleanup();
  }
});

test('a name registered for another program is never replaced, and uninstall leaves it', () => {
  const h = home();
  try {
    mkdirSync(path.dirname(h.cfg), { recursive: true });
    const text = 'servers:\n  py: {command: uvx some-server}\n';
    writeFileSync(h.cfg, text);
    const r = rat(h, ['install']);
    assert.equal(r.code, 1);
    assert.match(r.err, /`py` is already registered with mcp2cli \(.*\) for another program: uvx some-server\n    choose another --name, or remove it first: mcp2cli rm py/);
    assert.ok(!existsSync(path.join(h.dir, '.config/mcptocli')), 'nothing done anywhere');
    const u = rat(h, ['uninstall']);
    assert.equal(u.code, 0, u.err);
    assert.match(u.out, /`py` in .* runs another program \(uvx some-server\): left alone/);
    assert.equal(readFileSync(h.cfg, 'utf8'), text);
    const other = rat(h, ['install', '--name', 'python']);
    assert.equal(other.code, 0, other.err);
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
    assert.deepEqual(yaml(h.cfgOf('mcptocli')).servers.r, { command: `${link} --cwd ${h.project}`, expose: ['r'] });
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
    before: "servers:\n  'py':   # mine\n    command: /old/rat-py\n  other: {command: o}\n",
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
    before: 'servers: {\n  py: {command: /old/rat-py, expose: [py]},\n  b: {command: b}\n}\n',
    after: (h) => `servers: {\n  py: {command: "${CMD(h)}", expose: [py]},\n  b: {command: b}\n}\n`,
    roundtrip: false,
  },
  {
    name: 'comments around the entry, a block scalar and CRLF line ends are kept',
    before: '# top\r\nservers:\r\n  # about a\r\n  a:\r\n    command: |\r\n      a-server\r\n\r\n  # about py\r\n  py:   # old\r\n    command: /old/rat-py\r\n  # after py\r\n  z: {command: z}\r\n# end\r\n',
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
    before: '\ufeff# café ☕ 🐍\nservers:\n  "été": {command: "☕"}\n  py:\n    command: rat-py   # 🐍\n  z: 1\n',
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
    ['servers:\n  py: &p\n    command: /old/rat-py\n  other:\n    <<: *p\n', /line 2: `servers\.py` defines the anchor &p that an alias elsewhere uses/],
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
    ['servers: {py: {command: rat-py}, b: {command: b}}\n', 'servers: {b: {command: b}}\n'],
    ['servers: {b: {command: b}, py: {command: /x/rat-py}}\n', 'servers: {b: {command: b}}\n'],
    ['servers: {py: {command: "\'/a b/rat-py\' --cwd /"}}\n', 'servers: {}\n'],
    ['version: 1\nservers:   # mine\n    py:\n        command: rat-r\n# end\n', 'version: 1\nservers: {}   # mine\n# end\n'],
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

// rat-py's tools/list, over stdio (what it answers before it exits on EOF).
function liveTools(h) {
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  ].map((m) => JSON.stringify(m)).join('\n') + '\n';
  const p = spawnSync(RAT, ['--cwd', h.project], { input: lines, encoding: 'utf8', env: { ...process.env, HOME: h.dir } });
  return p.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((m) => m.id === 2).result.tools;
}

// A value re-encoded the way mcptocli caches it (mcp-go: map keys sorted).
const sorted = (v) => (Array.isArray(v) ? v.map(sorted) : v && typeof v === 'object'
  ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])])) : v);

test('doctor: each client, its version, the registration, `py` on PATH, and a schema cache from another rat-py', () => {
  const h = home();
  try {
    const a = fakeClient(h, 'mcptocli'), b = fakeClient(h, 'mcp2cli');
    const PATH = `${h.binOf('mcptocli')}:${h.binOf('mcp2cli')}:${a.dir}:/usr/bin:/bin`;
    assert.equal(rat(h, ['install'], { path: PATH }).code, 0);
    const tools = liveTools(h);
    const cacheOf = (client) => path.join(h.dir, '.cache', client, 'metadata', `${createHash('sha256').update('py').digest('hex').slice(0, 24)}.json`);
    // mcptocli's cache: this rat-py's schemas as mcp-go re-encodes them (sorted, an empty `required` added).
    mkdirSync(path.dirname(cacheOf('mcptocli')), { recursive: true });
    writeFileSync(cacheOf('mcptocli'), JSON.stringify({ savedAt: '2026-03-30T10:00:00Z', tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: sorted({ required: [], ...t.inputSchema }) })) }, null, 2));
    // mcp2cli's: from a rat-py whose run had no `wait`.
    const old = structuredClone(tools);
    delete old.find((t) => t.name === 'run').inputSchema.properties.wait;
    mkdirSync(path.dirname(cacheOf('mcp2cli')), { recursive: true });
    writeFileSync(cacheOf('mcp2cli'), JSON.stringify({ savedAt: '2026-03-29T10:00:00Z', tools: old }));
    const d = rat(h, ['doctor', '--cwd', h.project], { path: PATH });
    assert.equal(d.code, 1, d.out);
    const cmd = `${RAT} --cwd ${h.project}`;
    assert.match(d.out, new RegExp(`^– mcptocli: ${a.dir}/mcptocli, version fake\\n– mcptocli: \`py\` is registered: ${cmd}\\n✓ mcptocli: the tool schemas it cached for \`py\` are this rat-py's\\n`, 'm'));
    assert.match(d.out, new RegExp(`^– mcp2cli: ${b.dir}/mcp2cli, version fake\\n– mcp2cli: \`py\` is registered: ${cmd}\\n✗ mcp2cli: the tool schemas it cached for \`py\` on 2026-03-29 are not this rat-py's \\(run differ\\): its calls use them without asking rat-py\\n    fix: mcp2cli py tools \\(it asks rat-py again\\), or delete ${cacheOf('mcp2cli')}\\n`, 'm'));
    assert.match(d.out, new RegExp(`^✓ \`py\` on PATH: ${h.binOf('mcptocli')}/py -> ${a.dir}/mcptocli$`, 'm'));
    // Registered, but PATH does not find it: a failure with the line to add (a kernel doctor
    // cannot find stops it before it starts a server: the caches are not compared then).
    const off = rat(h, ['doctor', '--kernel', 'no-such-kernel'], { path: `${a.dir}:/usr/bin:/bin` });
    assert.match(off.out, /^– mcptocli: the tool schemas it cached for `py` are not compared: the server did not answer$/m);
    assert.match(off.out, new RegExp(`^✗ \`py\` is registered but not on PATH\\n    fix: echo 'export PATH="${h.binOf('mcptocli')}:\\$PATH"' >> ~/.bashrc`, 'm'));
  } finally {
    h.cleanup();
  }
});

// uninstall stops the client's `py up` process, found by the pid file the
// client keeps (~/.local/share/CLIENT/daemons/py.pid): a file anything
// running as the user can write, naming a pid the kernel reuses. Only the
// client's own `__daemon py` process, running as this user, is signalled.
// The client here is a copy of /bin/sh (its own executable, as a Go client
// is), and the daemon a shell reading a script named `__daemon`.
test('uninstall signals only the client\'s own `py up` process, never what its pid file names otherwise', async () => {
  const h = home();
  const kids = [];
  try {
    const gobin = path.join(h.dir, 'go/bin');
    mkdirSync(gobin, { recursive: true });
    const client = path.join(gobin, 'mcptocli'); // found off PATH: uninstall edits the YAML itself
    copyFileSync(realpathSync('/bin/sh'), client);
    chmodSync(client, 0o755);
    const work = path.join(h.dir, 'work');
    mkdirSync(work);
    writeFileSync(path.join(work, '__daemon'), 'read line\n'); // blocks on its stdin pipe until signalled
    const pidfile = path.join(h.dir, '.local/share/mcptocli/daemons/py.pid');
    const daemon = (prog, ids = {}) => {
      const p = spawn(prog, ['__daemon', 'py'], { cwd: work, stdio: ['pipe', 'ignore', 'ignore'], ...ids });
      const exited = new Promise((resolve) => p.on('exit', (code, signal) => resolve(signal ?? code)));
      kids.push(p);
      mkdirSync(path.dirname(pidfile), { recursive: true });
      writeFileSync(pidfile, `${p.pid}\n`);
      return { p, exited, started: once(p, 'spawn') }; // 'spawn': it has exec'd
    };
    const alive = (p) => p.exitCode === null && p.signalCode === null;

    // argv `__daemon py` as the client's, but another program: left running, said.
    assert.equal(rat(h, ['install']).code, 0);
    const impostor = daemon('/bin/sh');
    await impostor.started;
    const u = rat(h, ['uninstall']);
    assert.equal(u.code, 0, u.err);
    assert.doesNotMatch(u.out, /stopped its `up` process/);
    assert.match(u.out, new RegExp(`\`py up\` \\(pid ${impostor.p.pid}\\) left running: it runs .*sh, not mcptocli \\(${client}\\)`));
    // Read at once: this process reaps nothing during spawnSync, so a signalled impostor is a
    // zombie (state Z) here, not yet an 'exit' event.
    const state = readFileSync(`/proc/${impostor.p.pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
    assert.notEqual(state, 'Z', 'a process that is not the client\'s is not signalled');
    assert.ok(alive(impostor.p));
    impostor.p.kill('SIGKILL');
    await impostor.exited;

    // The client's own program, but another user's process (root runs uninstall; the test
    // drops the daemon to nobody): left running.
    if (process.getuid() === 0) {
      for (const d of [h.dir, path.join(h.dir, 'go'), gobin, work])
        chmodSync(d, 0o755);
      chmodSync(path.join(work, '__daemon'), 0o644);
      assert.equal(rat(h, ['install']).code, 0);
      const theirs = daemon(client, { uid: 65534, gid: 65534 });
      await theirs.started;
      const t = rat(h, ['uninstall']);
      assert.equal(t.code, 0, t.err);
      assert.match(t.out, new RegExp(`\`py up\` \\(pid ${theirs.p.pid}\\) left running: it runs as uid 65534, not as you`));
      const st = readFileSync(`/proc/${theirs.p.pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
      assert.notEqual(st, 'Z', 'another user\'s process is not signalled');
      theirs.p.kill('SIGKILL');
      await theirs.exited;
    } else {
      console.log('# not root: the check of another user\'s `py up` is skipped');
    }

    // The client's own: stopped.
    assert.equal(rat(h, ['install']).code, 0);
    const own = daemon(client);
    await own.started;
    const v = rat(h, ['uninstall']);
    assert.equal(v.code, 0, v.err);
    assert.match(v.out, /Removed `py` from mcptocli .*; stopped its `up` process\n/);
    assert.equal(await own.exited, 'SIGTERM');
  } finally {
    for (const k of kids)
      if (k.exitCode === null && k.signalCode === null)
        k.kill('SIGKILL');
    h.cleanup();
  }
});
