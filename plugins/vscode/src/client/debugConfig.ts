// SPDX-License-Identifier: MIT
// Turns run.debugReady (a rank waiting under gdbserver) into a C/C++ extension (cppdbg) configuration:
// gdb connects to `address` (miDebuggerServerAddress), loads symbols from `program`, reads the shared
// libraries from `sysroot` when the bridge gives one (`set sysroot`, a setup command, so before connecting),
// and finds the trainer's sources through sourceFileMap: `build_source_dir` (the folder the program's debug
// info names) → `source_dir` (the sources on this machine), or `source_dir` to itself when the bridge gives
// no build_source_dir (the trainer was compiled from that very folder). Other commands of the bridge's
// `gdb_command` line are kept as setup commands. The user's `rankscope.debug.sourceFileMap` is applied last
// and wins.

import * as path from 'node:path';
import { DebugReadyParams, known } from './protocol';

export interface CppdbgConfiguration {
  type: 'cppdbg';
  request: 'launch';
  name: string;
  program: string;
  cwd: string;
  MIMode: 'gdb';
  miDebuggerPath: string;
  miDebuggerServerAddress: string;
  sourceFileMap: Record<string, string>;
  setupCommands: { description?: string; text: string; ignoreFailures: boolean }[];
  stopAtEntry: boolean;
  externalConsole: boolean;
  [key: string]: unknown;
}

export interface DebugConfigOptions {
  miDebuggerPath?: string;
  /** More mappings (compiled-in path → local path), e.g. from the user's settings; they win. */
  sourceFileMap?: Record<string, string>;
}

/** Splits a POSIX shell command line into words ('…', "…", backslash escapes); no expansion. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string;
    if (quote === "'") {
      if (ch === "'") quote = undefined;
      else word += ch;
    } else if (quote === '"') {
      if (ch === '"') quote = undefined;
      else if (ch === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1] as string)) word += line[++i];
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** The `-ex`/`--eval-command` commands of a gdb command line, in order. */
export function gdbCommands(commandLine: string): string[] {
  const words = shellWords(commandLine);
  const commands: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    if ((w === '-ex' || w === '--ex' || w === '-eval-command' || w === '--eval-command') && i + 1 < words.length) {
      commands.push(words[++i] as string);
    } else if (w.startsWith('--eval-command=')) {
      commands.push(w.slice('--eval-command='.length));
    }
  }
  return commands;
}

export function cppdbgConfiguration(ready: DebugReadyParams, options: DebugConfigOptions = {}): CppdbgConfiguration {
  const sourceFileMap: Record<string, string> = {};
  const sourceDir = known(ready.source_dir);
  const buildSourceDir = known(ready.build_source_dir);
  if (sourceDir !== undefined) sourceFileMap[buildSourceDir ?? sourceDir] = sourceDir;
  let sysroot = known(ready.sysroot);
  const others: string[] = [];
  for (const command of gdbCommands(ready.gdb_command ?? '')) {
    const words = shellWords(command);
    if (words[0] === 'set' && words[1] === 'substitute-path' && words.length === 4) {
      // The bridge's fields say it already; a substitution they do not is kept.
      sourceFileMap[words[2] as string] ??= words[3] as string;
    } else if (words[0] === 'set' && words[1] === 'sysroot') {
      sysroot ??= known(command.replace(/^\s*set\s+sysroot\s+/, '').trim());
    } else if (words[0] === 'target' || words[0] === 'file') {
      // cppdbg connects to miDebuggerServerAddress and loads `program` itself.
    } else {
      others.push(command);
    }
  }
  const setupCommands: CppdbgConfiguration['setupCommands'] = [
    { description: 'Pretty printing', text: '-enable-pretty-printing', ignoreFailures: true },
  ];
  // Setup commands run before gdb connects: that is when it loads the shared libraries, from the sysroot.
  if (sysroot !== undefined) {
    setupCommands.push({ description: "The node's shared libraries, from this machine", text: `set sysroot ${sysroot}`, ignoreFailures: false });
  }
  for (const command of others) setupCommands.push({ text: command, ignoreFailures: true });
  Object.assign(sourceFileMap, options.sourceFileMap ?? {});
  return {
    type: 'cppdbg',
    request: 'launch',
    name: `RankScope: rank ${ready.rank} of ${ready.run} (${ready.host})`,
    program: ready.program,
    cwd: sourceDir ?? path.dirname(ready.program),
    MIMode: 'gdb',
    miDebuggerPath: options.miDebuggerPath ?? 'gdb',
    miDebuggerServerAddress: ready.address,
    sourceFileMap,
    setupCommands,
    stopAtEntry: false,
    externalConsole: false,
  };
}
