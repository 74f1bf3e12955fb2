// SPDX-License-Identifier: MIT
// What the tests against the real bridge share: the CLI under test, a private run store and runtime
// directory, a bridge started and stopped in them, and a quick 2-rank local debug job.

import { ChildProcess, spawnSync } from 'node:child_process';
import { accessSync, constants, promises as fs } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { startBridge, StartedBridge } from '../client';

const DEFAULT_CLI = path.resolve(__dirname, '..', '..', '..', '..', 'build', 'bin', 'rankscope-cli');

/** $RANKSCOPE_CLI (ctest passes the built target), else build/bin/rankscope-cli of this checkout. */
export function cliUnderTest(): string {
  return process.env['RANKSCOPE_CLI'] || DEFAULT_CLI;
}

/**
 * Why the bridge cannot be tested here, or undefined. With RANKSCOPE_CLI set (as ctest sets it) nothing is
 * skipped: a missing bridge is then a failure, not a skip.
 */
export function skipReason(): string | undefined {
  if (process.env['RANKSCOPE_CLI']) return undefined;
  const cli = cliUnderTest();
  const probe = spawnSync(cli, ['--help'], { encoding: 'utf8', timeout: 30_000 });
  if (probe.error) return `${cli} is not built (set RANKSCOPE_CLI)`;
  if (!/bridge \[--port/.test(probe.stdout)) return `${cli} has no bridge command yet`;
  return undefined;
}

/** Why runs cannot be launched here (no rankscope-trainer beside the CLI), or undefined. */
export function runSkipReason(): string | undefined {
  const trainer = path.join(path.dirname(cliUnderTest()), 'rankscope-trainer');
  try {
    accessSync(trainer, constants.X_OK);
    return undefined;
  } catch {
    return `${trainer} is not built`;
  }
}

/** Temporary RANKSCOPE_HOME and RANKSCOPE_RUNTIME_DIR for the bridges a test starts. */
export class PrivateEnv {
  private constructor(
    readonly root: string,
    readonly home: string,
    readonly runtimeDir: string,
  ) {}

  static async create(): Promise<PrivateEnv> {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), 'rankscope-vscode-test-'));
    return new PrivateEnv(root, path.join(root, 'home'), path.join(root, 'runtime'));
  }

  env(): NodeJS.ProcessEnv {
    // HOME too: the local node's work directory ("rankscope" by default) is relative to it.
    return { ...process.env, HOME: this.home, RANKSCOPE_HOME: path.join(this.home, 'store'), RANKSCOPE_RUNTIME_DIR: this.runtimeDir };
  }

  async cleanup(): Promise<void> {
    await fs.rm(this.root, { recursive: true, force: true });
  }
}

/** Starts `rankscope-cli bridge --port 0` in the private environment and waits for its connection file. */
export function startTestBridge(env: PrivateEnv): Promise<StartedBridge> {
  return startBridge({
    cliPath: cliUnderTest(),
    args: ['--port', '0'],
    env: env.env(),
    timeoutMs: 20_000,
    onOutput: process.env['RANKSCOPE_TEST_VERBOSE'] ? (line, s) => process.stderr.write(`[bridge ${s}] ${line}\n`) : undefined,
  });
}

/** Sends `signal` and waits for the process to be gone (SIGKILL after 10 s). */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** A TCP port free on 127.0.0.1 right now (for the job's rendezvous). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Two ranks on this machine, synthetic data, the MLP. Rank 0 sleeps `slowMs` per step so that the run
 * lasts long enough to see steps stream in.
 */
export async function debugJob(name: string, steps = 8, slowMs = 50): Promise<Record<string, unknown>> {
  const extra = ['--synthetic-samples', '512', '--log-every', '1', '--threads', '1'];
  if (slowMs > 0) extra.push('--slow-rank', '0', '--slow-ms', String(slowMs));
  return {
    version: 1,
    name,
    mode: 'debug',
    master_port: await freePort(),
    trainer: {
      dataset: 'synthetic',
      model: 'mlp',
      epochs: Math.ceil(steps / 16), // 512 samples, 2 ranks × 16 a batch: 16 steps an epoch
      max_steps: steps,
      batch_size: 16,
      backend: 'gloo',
      device: 'cpu',
      extra_args: extra,
    },
    debug: { node: 'local', procs: 2, max_steps: steps, verbose: true },
  };
}

/** Polls `check` every 50 ms until it returns a value other than undefined, or fails after timeoutMs. */
export async function waitFor<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
