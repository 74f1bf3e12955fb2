// SPDX-License-Identifier: MIT
// Finding the bridge (docs/bridge.md, "Finding the bridge"): the newest connection file in the runtime
// directory whose pid is alive, else a `rankscope-cli bridge` started here, once its file is written.

import { ChildProcess, spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Logger, silentLogger } from './logger';

export interface ConnectionInfo {
  version: number;
  url: string;
  host: string;
  port: number;
  token: string;
  pid: number;
  started: string;
  server: string;
  /** The file it was read from. */
  file: string;
}

/** The runtime directory: $RANKSCOPE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/rankscope, else ~/.local/share/rankscope/runtime. */
export function runtimeDir(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string {
  if (env['RANKSCOPE_RUNTIME_DIR']) return env['RANKSCOPE_RUNTIME_DIR'];
  if (env['XDG_RUNTIME_DIR']) return path.join(env['XDG_RUNTIME_DIR'], 'rankscope');
  return path.join(home, '.local', 'share', 'rankscope', 'runtime');
}

const FILE_NAME = /^bridge-(\d+)\.json$/;

export class ConnectionFileError extends Error {
  override readonly name = 'ConnectionFileError';
}

/** Reads and checks one connection file; throws ConnectionFileError naming the file and the field. */
export async function readConnectionFile(file: string): Promise<ConnectionInfo> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new ConnectionFileError(`${file}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConnectionFileError(`${file}: not JSON (${(err as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConnectionFileError(`${file}: not a JSON object`);
  }
  const o = value as Record<string, unknown>;
  const need = (key: string, type: 'string' | 'number'): void => {
    if (typeof o[key] !== type) throw new ConnectionFileError(`${file}: ${key} must be a ${type}`);
  };
  need('version', 'number');
  need('url', 'string');
  need('token', 'string');
  need('pid', 'number');
  if (o['version'] !== 1) throw new ConnectionFileError(`${file}: version ${String(o['version'])} is not supported (1 is)`);
  return {
    version: 1,
    url: o['url'] as string,
    host: typeof o['host'] === 'string' ? o['host'] : '127.0.0.1',
    port: typeof o['port'] === 'number' ? o['port'] : 0,
    token: o['token'] as string,
    pid: o['pid'] as number,
    started: typeof o['started'] === 'string' ? o['started'] : '',
    server: typeof o['server'] === 'string' ? o['server'] : '',
    file,
  };
}

/** kill(pid, 0): alive when it succeeds, or fails with EPERM (a process of another user). */
export function isPidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The newest connection file in `dir` whose bridge is alive, or undefined. "Newest" is by the file's
 * modification time; unreadable files and files of dead bridges are skipped (and reported to the logger).
 */
export async function findBridge(dir: string, logger: Logger = silentLogger): Promise<ConnectionInfo | undefined> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return undefined;
  }
  const candidates: { file: string; mtimeMs: number }[] = [];
  for (const name of names) {
    if (!FILE_NAME.test(name)) continue;
    const file = path.join(dir, name);
    try {
      candidates.push({ file, mtimeMs: (await fs.stat(file)).mtimeMs });
    } catch {
      // Removed between readdir and stat: the bridge stopped.
    }
  }
  candidates.sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const { file } of candidates) {
    let info: ConnectionInfo;
    try {
      info = await readConnectionFile(file);
    } catch (err) {
      logger.warn((err as Error).message);
      continue;
    }
    if (isPidAlive(info.pid)) return info;
    logger.info(`skipping ${file}: bridge pid ${info.pid} is not running`);
  }
  return undefined;
}

export interface StartBridgeOptions {
  /** The rankscope-cli binary (a path, or a name looked up in PATH). */
  cliPath: string;
  /** Extra arguments after `bridge`, e.g. ['--port', '0']. */
  args?: string[];
  /** The environment of the bridge; its RANKSCOPE_RUNTIME_DIR (or XDG_RUNTIME_DIR, HOME) decides where the file goes. */
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** Sees each line the bridge prints (stdout and stderr), e.g. for an output channel. */
  onOutput?: (line: string, stream: 'out' | 'err') => void;
  /** Start it in its own process group so it outlives the caller (default false: it is our child). */
  detached?: boolean;
  logger?: Logger;
}

export interface StartedBridge {
  info: ConnectionInfo;
  process: ChildProcess;
}

const LISTENING = /bridge listening on (\S+) \(connection file (.+)\)\s*$/;

/**
 * Starts `rankscope-cli bridge` and resolves once its connection file is written: when it prints its
 * "bridge listening on URL (connection file PATH)" line, or when `bridge-<pid>.json` appears in the runtime
 * directory, whichever comes first. Rejects (and kills it) when it exits first or the time is up.
 */
export function startBridge(options: StartBridgeOptions): Promise<StartedBridge> {
  const env = options.env ?? process.env;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const logger = options.logger ?? silentLogger;
  const child = spawn(options.cliPath, ['bridge', ...(options.args ?? [])], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  const expectedFile = (): string => path.join(runtimeDir(env, env['HOME'] ?? os.homedir()), `bridge-${child.pid ?? 0}.json`);
  const stderrTail: string[] = [];

  return new Promise<StartedBridge>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | undefined, info?: ConnectionInfo): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(poll);
      if (err) {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        reject(err);
      } else if (info) {
        logger.info(`started ${options.cliPath} bridge (pid ${child.pid ?? '?'}), connection file ${info.file}`);
        resolve({ info, process: child });
      }
    };
    const tryFile = (file: string): void => {
      readConnectionFile(file).then(
        (info) => finish(undefined, info),
        () => undefined, // not written yet (or half written): the next poll or line retries
      );
    };
    const timer = setTimeout(
      () => finish(new Error(`${options.cliPath} bridge wrote no connection file within ${timeoutMs} ms${tail(stderrTail)}`)),
      timeoutMs,
    );
    const poll = setInterval(() => tryFile(expectedFile()), 100);

    forEachLine(child.stdout, (line) => {
      options.onOutput?.(line, 'out');
      const m = LISTENING.exec(line);
      if (m && m[2]) tryFile(m[2]);
    });
    forEachLine(child.stderr, (line) => {
      options.onOutput?.(line, 'err');
      stderrTail.push(line);
      if (stderrTail.length > 5) stderrTail.shift();
    });
    child.once('error', (err) => finish(new Error(`cannot start ${options.cliPath}: ${err.message}`)));
    child.once('exit', (code, signal) =>
      finish(new Error(`${options.cliPath} bridge exited (${signal ?? `status ${code}`}) before writing its connection file${tail(stderrTail)}`)),
    );
  });
}

function tail(lines: string[]): string {
  return lines.length > 0 ? `: ${lines.join(' / ')}` : '';
}

function forEachLine(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (!stream) return;
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      onLine(buffered.slice(0, nl).replace(/\r$/, ''));
      buffered = buffered.slice(nl + 1);
    }
  });
  stream.on('end', () => {
    if (buffered) onLine(buffered);
  });
}

export interface LocateOptions extends Omit<StartBridgeOptions, 'cliPath'> {
  /** Where to look; default runtimeDir(env). */
  dir?: string;
  /** When no live bridge is found: start one with this binary; undefined: do not start one. */
  cliPath?: string;
}

export interface LocatedBridge {
  info: ConnectionInfo;
  /** Set when this call started the bridge. */
  process?: ChildProcess;
}

/** A running bridge's connection file, else (with cliPath) a bridge started here. */
export async function locateBridge(options: LocateOptions = {}): Promise<LocatedBridge> {
  const env = options.env ?? process.env;
  const dir = options.dir ?? runtimeDir(env, env['HOME'] ?? os.homedir());
  const found = await findBridge(dir, options.logger);
  if (found) return { info: found };
  if (!options.cliPath) throw new ConnectionFileError(`no running RankScope bridge (no live connection file in ${dir})`);
  const started = await startBridge({ ...options, cliPath: options.cliPath, env });
  return started;
}
