// SPDX-License-Identifier: MIT
// run.debugReady → the cppdbg configuration handed to vscode.debug.startDebugging.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cppdbgConfiguration, gdbCommands, shellWords } from '../client';

describe('shell words', () => {
  const cases: [string, string[]][] = [
    ["gdb -ex 'target remote 127.0.0.1:5000' /tmp/t", ['gdb', '-ex', 'target remote 127.0.0.1:5000', '/tmp/t']],
    ['a "b c" d\\ e', ['a', 'b c', 'd e']],
    ["'it'\\''s'", ["it's"]],
    ['"say \\"hi\\""', ['say "hi"']],
    ["''", ['']],
    ['  ', []],
  ];
  for (const [line, words] of cases) test(line, () => assert.deepEqual(shellWords(line), words));
});

describe('cppdbg configuration', () => {
  // As the bridge sends it (DebugServer::toJson): the trainer built elsewhere, this machine's libraries.
  const ready = {
    run: '20261122-090102-3fa1',
    rank: 1,
    host: 'local',
    address: '127.0.0.1:41000',
    program: '/home/u/.local/share/rankscope/runs/x/rankscope-trainer',
    source_dir: '/home/u/src/rankscope/trainer',
    build_source_dir: '/node/work/src',
    sysroot: '/',
    gdb_command:
      "gdb -q -ex 'set sysroot /' -ex 'set substitute-path /node/work/src /home/u/src/rankscope/trainer' -ex 'target remote 127.0.0.1:41000' /home/u/.local/share/rankscope/runs/x/rankscope-trainer",
  };

  test('connects to the address, maps build_source_dir to source_dir, sets the sysroot before connecting', () => {
    assert.deepEqual(gdbCommands(ready.gdb_command), [
      'set sysroot /',
      'set substitute-path /node/work/src /home/u/src/rankscope/trainer',
      'target remote 127.0.0.1:41000',
    ]);
    const c = cppdbgConfiguration(ready, { miDebuggerPath: '/usr/bin/gdb', sourceFileMap: { '/build': '/src' } });
    assert.equal(c.type, 'cppdbg');
    assert.equal(c.request, 'launch');
    assert.equal(c.MIMode, 'gdb');
    assert.equal(c.miDebuggerServerAddress, '127.0.0.1:41000');
    assert.equal(c.miDebuggerPath, '/usr/bin/gdb');
    assert.equal(c.program, ready.program);
    assert.equal(c.cwd, ready.source_dir);
    assert.deepEqual(c.sourceFileMap, {
      '/node/work/src': '/home/u/src/rankscope/trainer',
      '/build': '/src',
    });
    assert.deepEqual(
      c.setupCommands.map((s) => s.text),
      ['-enable-pretty-printing', 'set sysroot /'],
      'the sysroot once, from the field; target remote is cppdbg\'s own',
    );
    assert.equal(c.setupCommands[1]?.ignoreFailures, false);
    assert.match(c.name, /rank 1/);
  });

  test('without build_source_dir, source_dir (the compiled-in folder) maps to itself; no sysroot, none set', () => {
    const { build_source_dir: _b, sysroot: _s, ...plain } = ready;
    const c = cppdbgConfiguration({ ...plain, gdb_command: "gdb -q -ex 'target remote 127.0.0.1:41000' /tmp/t" });
    assert.deepEqual(c.sourceFileMap, { '/home/u/src/rankscope/trainer': '/home/u/src/rankscope/trainer' });
    assert.deepEqual(c.setupCommands.map((s) => s.text), ['-enable-pretty-printing']);
    assert.equal(c.cwd, '/home/u/src/rankscope/trainer');
    assert.equal(c.miDebuggerPath, 'gdb');
  });

  test('other commands of gdb_command are kept; the fields win over its substitutions', () => {
    const c = cppdbgConfiguration({
      ...ready,
      sysroot: '/srv/node root',
      gdb_command:
        "gdb -ex 'set sysroot /elsewhere' -ex 'set substitute-path /node/work/src /wrong' -ex 'set substitute-path /other /here' -ex 'set pagination off' -ex 'target remote 127.0.0.1:41000' /tmp/t",
    });
    assert.deepEqual(c.sourceFileMap, { '/node/work/src': '/home/u/src/rankscope/trainer', '/other': '/here' });
    assert.deepEqual(c.setupCommands.map((s) => s.text), ['-enable-pretty-printing', 'set sysroot /srv/node root', 'set pagination off']);
  });

  test("the user's sourceFileMap setting wins, for build_source_dir and source_dir too", () => {
    const c = cppdbgConfiguration(ready, { sourceFileMap: { '/node/work/src': '/mnt/checkout/trainer' } });
    assert.deepEqual(c.sourceFileMap, { '/node/work/src': '/mnt/checkout/trainer' });
    const { build_source_dir: _b, ...plain } = ready;
    const own = cppdbgConfiguration({ ...plain, gdb_command: "gdb -q -ex 'target remote 127.0.0.1:41000' /tmp/t" }, { sourceFileMap: { '/home/u/src/rankscope/trainer': '/mnt/checkout/trainer' } });
    assert.deepEqual(own.sourceFileMap, { '/home/u/src/rankscope/trainer': '/mnt/checkout/trainer' });
  });

  test("an empty source_dir maps nothing; cwd is the program's folder", () => {
    const { build_source_dir: _b, ...plain } = ready;
    const c = cppdbgConfiguration({ ...plain, source_dir: '', gdb_command: 'gdb /tmp/x/t' });
    assert.deepEqual(c.sourceFileMap, {});
    assert.equal(c.cwd, '/home/u/.local/share/rankscope/runs/x');
  });
});
