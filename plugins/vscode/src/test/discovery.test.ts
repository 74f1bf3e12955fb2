// SPDX-License-Identifier: MIT
// Finding the bridge: the runtime directory's rules, and picking the newest connection file whose pid lives.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConnectionFileError, findBridge, isPidAlive, readConnectionFile, runtimeDir } from '../client';

describe('runtime directory', () => {
  const cases: [string, NodeJS.ProcessEnv, string][] = [
    ['RANKSCOPE_RUNTIME_DIR wins', { RANKSCOPE_RUNTIME_DIR: '/r', XDG_RUNTIME_DIR: '/x' }, '/r'],
    ['else XDG_RUNTIME_DIR/rankscope', { XDG_RUNTIME_DIR: '/run/user/1000' }, '/run/user/1000/rankscope'],
    ['else ~/.local/share/rankscope/runtime', {}, '/home/u/.local/share/rankscope/runtime'],
    ['empty values do not count', { RANKSCOPE_RUNTIME_DIR: '', XDG_RUNTIME_DIR: '' }, '/home/u/.local/share/rankscope/runtime'],
  ];
  for (const [name, env, expected] of cases) test(name, () => assert.equal(runtimeDir(env, '/home/u'), expected));
});

describe('connection files', () => {
  let dir: string;
  let dead: number;

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'rankscope-discovery-'));
    const child = spawn(process.execPath, ['-e', '']);
    dead = child.pid as number;
    await new Promise((r) => child.once('exit', r));
  });
  after(() => fs.rm(dir, { recursive: true, force: true }));

  const write = async (name: string, content: unknown, mtime: number): Promise<string> => {
    const file = path.join(dir, name);
    await fs.writeFile(file, typeof content === 'string' ? content : JSON.stringify(content), { mode: 0o600 });
    await fs.utimes(file, mtime, mtime);
    return file;
  };
  const info = (pid: number, port: number) => ({
    version: 1,
    url: `ws://127.0.0.1:${port}/`,
    host: '127.0.0.1',
    port,
    token: 'a'.repeat(64),
    pid,
    started: '2026-11-22T09:00:00Z',
    server: 'rankscope-cli',
  });

  test('pids: this process lives, an exited child does not', () => {
    assert.equal(isPidAlive(process.pid), true);
    assert.equal(isPidAlive(dead), false);
    assert.equal(isPidAlive(0), false);
    assert.equal(isPidAlive(-1), false);
  });

  test('no directory: no bridge', async () => {
    assert.equal(await findBridge(path.join(dir, 'missing')), undefined);
  });

  test('the newest live file wins; dead, malformed and foreign files are skipped', async () => {
    const now = Date.now() / 1000;
    await write(`bridge-${process.pid}.json`, info(process.pid, 1001), now - 100);
    await write(`bridge-${dead}.json`, info(dead, 1002), now - 10); // newest, but dead
    await write('bridge-1.json', '{"version": 1, "url": ', now - 5); // half written
    await write('notes.json', info(process.pid, 1003), now); // not a connection file name
    const found = await findBridge(dir);
    assert.ok(found);
    assert.equal(found.port, 1001);
    assert.equal(found.pid, process.pid);
    assert.equal(found.file, path.join(dir, `bridge-${process.pid}.json`));
  });

  test('a file is checked field by field', async () => {
    const file = await write('bridge-2.json', { ...info(2, 1), version: 2 }, Date.now() / 1000);
    await assert.rejects(readConnectionFile(file), (err: Error) => err instanceof ConnectionFileError && /version 2/.test(err.message));
    const noToken = await write('bridge-3.json', { ...info(3, 1), token: undefined }, Date.now() / 1000);
    await assert.rejects(readConnectionFile(noToken), /token must be a string/);
  });
});
