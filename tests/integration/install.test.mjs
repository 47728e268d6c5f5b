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

function yaml(file) {
  const p = spawnSync('/usr/bin/python3', ['-c', 'import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))', file], { encoding: 'utf8' });
  assert.equal(p.status, 0, `not valid YAML: ${p.stderr}\n${readFileSync(file, 'utf8')}`);
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
    writeFileSync(h.cfg, 'version: 1\nservers: {weather: {command: w}}\n');
    let r = rat(h, ['install']);
    assert.equal(r.code, 1);
    assert.match(r.err, /cannot edit .*config\.yaml safely: line 2: `servers` is not written as a block mapping/);
    assert.equal(readFileSync(h.cfg, 'utf8'), 'version: 1\nservers: {weather: {command: w}}\n', 'untouched');
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
