// The MCP Inspector CLI (@modelcontextprotocol/inspector@1.0.3, pinned) lists
// tools and calls `run` over stdio and over Streamable HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { ratCommand, scratch, startHttp, ms } from './lib.mjs';

const INSPECTOR = path.resolve(new URL('.', import.meta.url).pathname, '../node_modules/.bin/mcp-inspector');

function inspector(args) {
  return new Promise((resolve, reject) => {
    execFile(INSPECTOR, ['--cli', ...args], { timeout: ms(90_000), env: process.env }, (err, stdout, stderr) => {
      if (err) reject(new Error(`inspector failed: ${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

test('inspector over stdio: tools/list and tools/call run', async () => {
  const work = scratch();
  // The server's command line comes first: the inspector passes options it
  // does not know (rat-py's, a wrapper's such as valgrind's) through to it in
  // order. (Not after `--`: the CLI drops the `--` when it re-executes
  // itself, and --tool-arg would take the server's argv as its values.)
  const { command, args } = ratCommand(['--cwd', work.dir]);
  const server = [command, ...args];
  try {
    const list = await inspector([...server, '--method', 'tools/list']);
    assert.deepEqual(list.tools.map((t) => t.name).sort(), ['ctl', 'look', 'run']);
    const r = await inspector([...server, '--method', 'tools/call', '--tool-name', 'run', '--tool-arg', 'code=print(6*7)']);
    assert.equal(r.isError, false);
    assert.match(r.content[0].text, /^42\n\n✓ \d+ms$/);
  } finally {
    work.cleanup();
  }
});

test('inspector over Streamable HTTP: tools/list and tools/call run', async () => {
  const srv = await startHttp();
  try {
    const list = await inspector([srv.url, '--transport', 'http', '--method', 'tools/list']);
    assert.deepEqual(list.tools.map((t) => t.name).sort(), ['ctl', 'look', 'run']);
    const r = await inspector([srv.url, '--transport', 'http', '--method', 'tools/call', '--tool-name', 'run', '--tool-arg', 'code=y = 2 ** 10; print(y)']);
    assert.match(r.content[0].text, /^1024\n\n✓ \d+ms \| 1 var$/);
  } finally {
    await srv.stop();
  }
});
