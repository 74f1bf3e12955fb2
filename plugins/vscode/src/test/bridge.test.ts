// SPDX-License-Identifier: MIT
// The client against the real bridge (`rankscope-cli bridge --port 0`, a private run store and runtime
// directory): discovery, the token, every error object, a real 2-rank debug run followed live to its end,
// log paging, the documented snake_case data objects, the automatic subscription of a launching or attaching
// client, a rank launched under gdbserver (debug_rank) that a real gdb breaks in and detaches from, and
// reconnecting to a bridge that was killed and started again.

import assert from 'node:assert/strict';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import {
  BridgeClient,
  BridgeConnection,
  ConnectionClosedError,
  ConnectionFileError,
  ConnectionInfo,
  cppdbgConfiguration,
  DebugOffer,
  findBridge,
  firstFailedRank,
  gdbCommands,
  LogBatch,
  MAX_MESSAGE_BYTES,
  MAX_REQUEST_BYTES,
  Notification,
  RpcError,
  RunStore,
  RunTracker,
  StartedBridge,
  StateChange,
  SubscribeEvent,
  UnauthorizedError,
} from '../client';
import { debugJob, PrivateEnv, runSkipReason, skipReason, startTestBridge, stopProcess, waitFor } from '../testing/harness';

const skip = skipReason();

function gdbSkipReason(): string | undefined {
  for (const tool of ['gdb', 'gdbserver']) {
    if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).error) return `${tool} is not installed`;
  }
  return undefined;
}

/** Opens a raw socket (no client logic) and collects what the bridge sends until it closes. */
function rawSocket(url: string, headers: Record<string, string> = {}) {
  const socket = new WebSocket(url, { headers });
  const messages: unknown[] = [];
  socket.on('message', (data) => messages.push(JSON.parse(String(data))));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return { socket, messages, closed, opened };
}

/** Every key of a data object is snake_case, as docs/bridge.md says (the run store's and the trainer's style). */
function assertSnakeCase(what: string, object: unknown): void {
  assert.ok(typeof object === 'object' && object !== null, `${what} is an object`);
  const keys = Object.keys(object);
  assert.deepEqual(keys.filter((k) => !/^[a-z][a-z0-9_]*$/.test(k)), [], `${what} keys are snake_case: ${keys.join(', ')}`);
}

// Generous limits: the machine may be busy building while this runs. A suite's limit bounds all its tests
// together (node cancels what is left), so it is about the sum of theirs.
describe('the real bridge', { skip, timeout: 900_000 }, () => {
  let env: PrivateEnv;
  let bridge: StartedBridge;
  let info: ConnectionInfo;

  before(async () => {
    env = await PrivateEnv.create();
    bridge = await startTestBridge(env);
    info = bridge.info;
  });

  after(async () => {
    if (bridge) await stopProcess(bridge.process);
    if (env) await env.cleanup();
  });

  const connect = () => BridgeConnection.connect({ url: info.url, token: info.token, connectTimeoutMs: 5_000 });

  test('is found through its connection file, readable by the user only', async () => {
    const found = await findBridge(env.runtimeDir);
    assert.ok(found, 'a live connection file');
    assert.equal(found.pid, bridge.process.pid);
    assert.equal(found.file, path.join(env.runtimeDir, `bridge-${bridge.process.pid}.json`));
    assert.equal((await fs.stat(found.file)).mode & 0o777, 0o600);
    assert.equal((await fs.stat(env.runtimeDir)).mode & 0o777, 0o700);
    assert.match(found.token, /^[0-9a-f]{64}$/);
    assert.equal(found.url, `ws://127.0.0.1:${found.port}/`);
    assert.equal(found.host, '127.0.0.1');
    assert.equal(found.server, 'rankscope-cli');
    assert.match(found.started, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  test('says hello', async () => {
    const { connection, hello } = await connect();
    try {
      assert.equal(hello.version, 1);
      assert.equal(hello.server, 'rankscope-cli');
      assert.equal(typeof hello.server_version, 'string', `hello has server_version: ${JSON.stringify(hello)}`);
      assert.match(hello.server_version, /^\d+\.\d+/);
      assertSnakeCase('hello', hello);
    } finally {
      connection.dispose();
    }
  });

  test('refuses a wrong or missing token with close code 4401 and sends nothing else', async () => {
    await assert.rejects(
      BridgeConnection.connect({ url: info.url, token: 'f'.repeat(64), connectTimeoutMs: 5_000 }),
      (err: unknown) => err instanceof UnauthorizedError && err.closeCode === 4401 && err.reason === 'wrong token',
    );
    const missing = rawSocket(info.url);
    await missing.opened;
    missing.socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'bridge.hello', params: {} }));
    assert.deepEqual(await missing.closed, { code: 4401, reason: 'missing token' });
    assert.deepEqual(missing.messages, []);
  });

  test('takes the token in the query too (for webviews)', async () => {
    const query = rawSocket(`${info.url}?token=${info.token}`);
    await query.opened;
    query.socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'bridge.hello', params: {} }));
    await waitFor('the hello answer', () => (query.messages.length > 0 ? true : undefined), 5_000);
    assert.deepEqual((query.messages[0] as { id: number }).id, 1);
    query.socket.close();
  });

  test('answers errors with code, message and data', async () => {
    const { connection } = await connect();
    const expectError = async (method: string, params: unknown, code: number, data: Record<string, unknown>) => {
      await assert.rejects(connection.request(method, params), (err: unknown) => {
        assert.ok(err instanceof RpcError, `${method}: ${String(err)}`);
        assert.equal(err.code, code, `${method}: ${err.message}`);
        assert.equal(err.method, method);
        assert.ok(err.message.length > 0);
        for (const [key, value] of Object.entries(data)) assert.deepEqual(err.data?.[key], value, `${method}: data.${key}`);
        return true;
      });
    };
    try {
      await expectError('no.such.method', {}, -32601, { method: 'no.such.method' });
      await expectError('run.get', {}, -32602, { field: 'run' });
      await expectError('run.get', { run: 'no-such-run' }, -32001, { run: 'no-such-run' });
      await expectError('run.logs', { run: 'no-such-run', rank: 0 }, -32001, { run: 'no-such-run' });
      await expectError('run.launch', { job: 42, mode: 'debug' }, -32602, { field: 'job' });
      // A bad job: every issue with its JSON path.
      const bad = { version: 1, modee: 'debug', trainer: { epochs: 0 }, debug: { node: 'local' } };
      await assert.rejects(connection.request('run.launch', { job: bad, mode: 'debug' }), (err: unknown) => {
        assert.ok(err instanceof RpcError);
        assert.equal(err.code, -32602);
        const paths = err.issues.map((i) => i.path);
        assert.ok(paths.includes('modee'), `issues: ${JSON.stringify(err.issues)}`);
        assert.ok(paths.includes('trainer.epochs'), `issues: ${JSON.stringify(err.issues)}`);
        return true;
      });
    } finally {
      connection.dispose();
    }
    // What the client itself never sends: not JSON, a batch, no method.
    const raw = rawSocket(info.url, { Authorization: `Bearer ${info.token}` });
    await raw.opened;
    raw.socket.send('{"jsonrpc": "2.0", "id": 1, "method": ');
    raw.socket.send('[{"jsonrpc": "2.0", "id": 2, "method": "bridge.hello"}]');
    raw.socket.send('{"jsonrpc": "2.0", "id": 3}');
    await waitFor('three error answers', () => (raw.messages.length >= 3 ? true : undefined), 5_000);
    const [parse, batch, noMethod] = raw.messages as { id: unknown; error: { code: number; data?: { offset?: number } } }[];
    assert.equal(parse?.id, null);
    assert.equal(parse?.error.code, -32700);
    assert.equal(typeof parse?.error.data?.offset, 'number');
    assert.equal(batch?.error.code, -32600);
    assert.equal(noMethod?.error.code, -32600);
    raw.socket.close();
  });

  test('answers a request over 4 MiB with -32600 and "id": null; the socket stays open', { timeout: 60_000 }, async () => {
    const limit = MAX_REQUEST_BYTES;
    const padding = 'x'.repeat(limit + 1024);
    // As sent, on a raw socket.
    const raw = rawSocket(info.url, { Authorization: `Bearer ${info.token}` });
    await raw.opened;
    raw.socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'bridge.hello', params: { padding } }));
    raw.socket.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'bridge.hello', params: {} }));
    await waitFor('two answers', () => (raw.messages.length >= 2 ? true : undefined), 30_000);
    const [tooLarge, hello] = raw.messages as { id: unknown; error?: { code: number; data?: { limit?: number } }; result?: unknown }[];
    assert.equal(tooLarge?.id, null);
    assert.equal(tooLarge?.error?.code, -32600);
    assert.equal(tooLarge?.error?.data?.limit, limit);
    assert.equal(hello?.id, 2);
    assert.ok(hello?.result, 'the socket stays open and answers the next request');
    raw.socket.close();
    // Through the client: the answer without id fails the request it is about, and nothing else.
    const { connection } = await connect();
    try {
      const pendingHello = connection.request<{ version: number }>('bridge.hello');
      await assert.rejects(connection.request('run.launch', { job: { version: 1, name: padding }, mode: 'debug' }, 30_000), (err: unknown) => {
        assert.ok(err instanceof RpcError, String(err));
        assert.equal(err.code, -32600);
        assert.equal(err.method, 'run.launch');
        assert.equal(err.data?.['limit'], limit);
        return true;
      });
      assert.equal((await pendingHello).version, 1);
      // Over 64 MiB the bridge would close the socket: the client refuses such a request without sending it.
      await assert.rejects(connection.request('run.launch', { job: { name: 'y'.repeat(MAX_MESSAGE_BYTES) } }), (err: unknown) => {
        assert.ok(err instanceof RpcError, String(err));
        assert.equal(err.code, -32600);
        assert.equal(err.data?.['limit'], MAX_MESSAGE_BYTES);
        return true;
      });
      assert.equal((await connection.request<{ version: number }>('bridge.hello')).version, 1);
      assert.equal(connection.isOpen, true);
    } finally {
      connection.dispose();
    }
  });

  test('lists no runs in an empty store', async () => {
    const { connection } = await connect();
    try {
      assert.deepEqual(await connection.request('runs.list'), { runs: [] });
    } finally {
      connection.dispose();
    }
  });

  describe('a 2-rank debug run followed live, then a bridge restart', { skip: runSkipReason() }, () => {
    let client: BridgeClient;
    let tracker: RunTracker;
    let run: string;
    const store = new RunStore();
    const notifications: Notification[] = [];
    const batches: LogBatch[] = [];
    const states: StateChange[] = [];
    const subscribed: SubscribeEvent[] = [];
    const debugOffers: DebugOffer[] = [];

    before(() => {
      client = new BridgeClient({
        locate: async () => {
          const found = await findBridge(env.runtimeDir);
          if (!found) throw new ConnectionFileError('no bridge yet');
          return found;
        },
        connectTimeoutMs: 5_000,
        requestTimeoutMs: 15_000,
        backoff: { initialMs: 100, maxMs: 1_000 },
      });
      tracker = new RunTracker(client, store);
      client.onNotification((n) => notifications.push(n));
      client.onDidChangeState((s) => states.push(s));
      client.onDidSubscribe((s) => subscribed.push(s));
      tracker.logs.onLines((b) => batches.push(b));
      tracker.onDebugReady((o) => debugOffers.push(o));
    });

    after(() => {
      tracker?.dispose();
      client?.dispose();
    });

    test('launches (subscribed from the launch on), sees both ranks step and the run finish', { timeout: 150_000 }, async () => {
      const hello = await client.connect();
      assert.equal(hello.version, 1);
      assert.equal(client.state, 'connected');
      const job = await debugJob('vscode-client-test', 8, 50);
      ({ run } = await client.launch({ job, mode: 'debug' }));
      assert.match(run, /\S/);
      // The launching client is subscribed by the launch itself: notifications come without run.subscribe.
      assert.deepEqual(client.subscribedRuns, [run], 'the launch subscribed this client');
      await waitFor('a notification before any run.subscribe', () => notifications.find((n) => n.params.run === run), 60_000);
      const snapshot = await tracker.follow(run);
      assert.equal(snapshot.run.id, run);
      assert.equal(snapshot.run.mode, 'debug');
      assert.ok(['launching', 'running', 'finished'].includes(snapshot.run.state), snapshot.run.state);
      if (snapshot.run.state !== 'finished') {
        assert.equal(snapshot.run.ended, '', 'ended is "" while the run goes on');
        assert.equal(firstFailedRank(snapshot.run), undefined);
      }
      assert.deepEqual(client.subscribedRuns, [run]);

      const finished = await waitFor(
        'run.finished',
        () => notifications.find((n) => n.method === 'run.finished' && n.params.run === run),
        120_000,
      );
      assert.equal(finished.method, 'run.finished');
      if (finished.method === 'run.finished') assert.equal(finished.params.record.state, 'finished');

      const events = notifications.flatMap((n) => (n.method === 'run.events' && n.params.run === run ? n.params.events : []));
      for (const rank of [0, 1]) {
        const steps = events.filter((e) => e.type === 'step' && e.rank === rank);
        assert.ok(steps.length >= 1, `rank ${rank} has step events`);
        assert.ok(steps.every((e) => typeof e['loss'] === 'number' || typeof e['loss'] === 'string'), 'each step has a loss');
        assert.ok(events.some((e) => e.type === 'end' && e.rank === rank), `rank ${rank} ended`);
        const losses = store.get(run)?.losses.get(rank);
        assert.ok(losses && losses.length >= 1, `the store has rank ${rank}'s losses`);
      }
      const view = store.get(run);
      assert.equal(view?.record?.state, 'finished');
      assert.equal(store.progress(run)?.step, 8);
      assert.equal(store.progress(run)?.totalSteps, 8);
      // Coalescing: events come in batches, not one notification per event.
      const batched = notifications.some((n) => n.method === 'run.events' && n.params.run === run && n.params.events.length > 1);
      assert.ok(batched, 'some run.events notification carries several events');
    });

    test('lists the run; pages its logs; the live log lines match the stored ones', async () => {
      const runs = await client.listRuns();
      assert.equal(runs[0]?.id, run);
      assert.equal(runs[0]?.state, 'finished');
      assert.equal(typeof runs[0]?.active, 'boolean');

      // The trainer's progress lines (one per step with --log-every 1) go to stderr.
      const first = await client.logs({ run, rank: 0, stream: 'err', from: 1, count: 2 });
      assert.deepEqual(first.lines.map((l) => l.line), [1, 2]);
      assert.equal(first.next, 3);
      assert.ok(first.total >= 8, `rank 0 wrote ${first.total} lines`);
      const rest = await client.logs({ run, rank: 0, stream: 'err', from: first.next, count: 10_000 });
      assert.equal(rest.lines[0]?.line, 3);
      assert.equal(rest.next, first.total + 1);
      const stored = [...first.lines, ...rest.lines];
      assert.equal(stored.length, first.total);
      assert.ok(stored.some((l) => /step 8\b/.test(l.text)), 'the last step is in the log');
      const out = await client.logs({ run, rank: 0, stream: 'out', count: 10_000 });
      const defaults = await client.logs({ run, rank: 0 });
      assert.deepEqual(defaults.lines, out.lines.slice(0, 1000), 'run.logs defaults: out, from line 1');
      assert.equal(defaults.total, out.total);

      // Everything the follower gave out for rank 0's stderr: every stored line, in order, once.
      const live = await waitFor('all of rank 0 stderr', () => {
        const got = batches.flatMap((b) => b.lines.filter((l) => l.rank === 0 && l.stream === 'err'));
        return got.length >= stored.length ? got : undefined;
      }, 10_000);
      assert.deepEqual(live.map((l) => ({ line: l.line, text: l.text })), stored);
    });

    test('run records and rank states have the documented snake_case fields', async () => {
      const snapshot = await client.getRun(run);
      const record = snapshot.run;
      assertSnakeCase('RunRecord', record);
      assert.equal(record.id, run);
      assert.equal(record.name, 'vscode-client-test');
      assert.equal(record.state, 'finished');
      assert.equal(record.world_size, 2);
      assert.equal(record.first_failed_rank, -1, 'first_failed_rank -1: none');
      assert.equal(firstFailedRank(record), undefined);
      assert.equal(typeof record.created, 'string');
      assert.match(record.ended, /^\d{4}-\d\d-\d\dT/, 'a finished run has ended');
      assert.equal(typeof record.summary, 'string', 'summary is a string ("" when there is none)');
      assert.ok(record.job && typeof record.job === 'object', 'run.get carries the job');
      assert.equal(record.nodes.length, 1);
      for (const node of record.nodes) {
        assertSnakeCase('node', node);
        assert.deepEqual(node.ranks, [0, 1]);
        assert.equal(typeof node.host, 'string');
        assert.equal(typeof node.run_dir, 'string');
        assert.equal(node.local, true);
      }
      for (const rank of ['0', '1']) {
        const exit = record.exits?.[rank];
        assertSnakeCase(`exits[${rank}]`, exit);
        assert.equal(exit?.status, 0);
        assert.equal(typeof exit?.seen_at, 'string');
      }
      assert.deepEqual(snapshot.ranks.map((r) => r.rank).sort(), [0, 1]);
      for (const rank of snapshot.ranks) {
        assertSnakeCase('RankState', rank);
        assert.equal(rank.state, 'finished');
        assert.equal(rank.step, 8);
        assert.equal(typeof rank.loss, 'number');
        assert.equal(rank.exit_status, 0);
        assert.equal(typeof rank.host, 'string');
        if (rank.last_heartbeat !== undefined) assert.ok(['number', 'string'].includes(typeof rank.last_heartbeat));
        if (rank.steps_per_second !== undefined) assert.equal(typeof rank.steps_per_second, 'number');
      }
      const listed = (await client.listRuns()).find((r) => r.id === run);
      assert.ok(listed);
      assertSnakeCase('runs.list entry', listed);
      assert.equal(listed.world_size, 2);
      assert.ok(!('job' in listed), 'runs.list leaves the job out');
      // The store read the bridge's snake_case fields into its view of the ranks.
      assert.equal(store.get(run)?.ranks.get(0)?.exitStatus, 0);
    });

    test('answers no-such-rank and run-not-active for this run', async () => {
      await assert.rejects(client.logs({ run, rank: 5 }), (err: unknown) => {
        assert.ok(err instanceof RpcError);
        assert.equal(err.code, -32004);
        assert.deepEqual([err.data?.['run'], err.data?.['rank']], [run, 5]);
        return true;
      });
      await assert.rejects(client.stop(run), (err: unknown) => {
        assert.ok(err instanceof RpcError);
        assert.equal(err.code, -32002);
        assert.equal(err.data?.['run'], run);
        assert.equal(err.data?.['state'], 'finished');
        return true;
      });
    });

    test('bridge.fellBehind makes the tracker fetch the run again', async () => {
      const view = store.get(run);
      assert.ok(view);
      tracker.handle({ method: 'bridge.fellBehind', params: { run, dropped: 5 } });
      assert.equal(view.stale, true);
      await waitFor('the run fetched again', () => (view.stale ? undefined : true), 10_000);
      assert.equal(view.record?.state, 'finished');
    });

    test('stops a running run; another client attaches (subscribed by run.attach); a straggler is diagnosed', { timeout: 150_000 }, async () => {
      const job = await debugJob('vscode-stop-test', 400, 60);
      const { run: slow } = await client.launch({ job, mode: 'debug' });
      await tracker.follow(slow);
      // A second client follows the same run with run.attach alone: the attach subscribes it.
      const watcher = new BridgeClient({
        locate: async () => bridge.info,
        connectTimeoutMs: 5_000,
        requestTimeoutMs: 15_000,
      });
      const watched: Notification[] = [];
      watcher.onNotification((n) => watched.push(n));
      try {
        const attached = await watcher.attach(slow);
        assert.equal(attached.run, slow);
        assert.ok(['launching', 'running'].includes(attached.state), attached.state);
        assert.deepEqual(watcher.subscribedRuns, [slow], 'run.attach subscribed the client');
        await waitFor(
          'notifications on the attached client',
          () => watched.find((n) => n.params.run === slow && (n.method === 'run.events' || n.method === 'run.ranks')),
          60_000,
        );

        const diagnosed = await waitFor(
          'a straggler diagnosis',
          () => [...(store.get(slow)?.diagnoses.values() ?? [])].find((d) => d.kind === 'straggler'),
          90_000,
        );
        assert.deepEqual(diagnosed.ranks, [0]);
        assert.equal(diagnosed.resolved, false);
        assert.match(diagnosed.message, /rank 0/);
        const progress = store.progress(slow);
        assert.ok(progress && progress.step >= 1 && progress.step < 400, `stopped mid-run at step ${progress?.step}`);
        assert.deepEqual(await client.stop(slow), { run: slow, stopping: true });
        const finished = await waitFor(
          'run.finished after stop',
          () => notifications.find((n) => n.method === 'run.finished' && n.params.run === slow),
          60_000,
        );
        if (finished.method === 'run.finished') assert.equal(finished.params.record.state, 'stopped');
        assert.equal(store.get(slow)?.record?.state, 'stopped');
        await waitFor('run.finished on the attached client too', () => watched.find((n) => n.method === 'run.finished' && n.params.run === slow), 30_000);
      } finally {
        watcher.dispose();
        if (!notifications.some((n) => n.method === 'run.finished' && n.params.run === slow)) {
          await client.stop(slow).catch(() => undefined);
        }
      }
      await tracker.unfollow(slow);
      assert.deepEqual(client.subscribedRuns, [run]);
    });

    test("launch with debug_rank: run.debugReady and run.get's debug; gdb on the cppdbg configuration breaks in trainStep, detaches, and the run finishes", { timeout: 420_000, skip: gdbSkipReason() }, async () => {
      const job = await debugJob('vscode-debug-rank', 4, 0);
      const { run: debugged } = await client.launch({ job, mode: 'debug', debug_rank: 1 });
      assert.ok(client.subscribedRuns.includes(debugged), 'the launch subscribed this client');
      const finishedNote = () => notifications.find((n) => n.method === 'run.finished' && n.params.run === debugged);
      let gdb: ChildProcess | undefined;
      let gdbOutput = '';
      try {
        const ready = await waitFor('run.debugReady', () => {
          const n = notifications.find((x) => x.method === 'run.debugReady' && x.params.run === debugged);
          if (n?.method === 'run.debugReady') return n.params;
          if (finishedNote()) throw new Error('the run finished without run.debugReady: debug_rank was not honoured');
          return undefined;
        }, 120_000);
        assertSnakeCase('run.debugReady', ready);
        assert.equal(ready.run, debugged);
        assert.equal(ready.rank, 1);
        assert.equal(typeof ready.host, 'string');
        assert.match(ready.address, /^127\.0\.0\.1:\d+$/);
        await fs.access(ready.program);
        assert.ok(!('gdb' in ready), 'the command line is gdb_command');
        assert.match(ready.gdb_command, /^gdb /);
        assert.ok(gdbCommands(ready.gdb_command).includes(`target remote ${ready.address}`), ready.gdb_command);
        assert.ok(ready.source_dir.length > 0, 'source_dir is given');
        if (ready.build_source_dir !== undefined) assert.equal(typeof ready.build_source_dir, 'string');
        if (ready.sysroot !== undefined) {
          assert.equal(ready.sysroot, '/', 'this machine stands for the local node');
          assert.ok(gdbCommands(ready.gdb_command).includes('set sysroot /'), ready.gdb_command);
        }

        // run.get and run.subscribe repeat it as `debug` while the run is followed; the tracker offered it once.
        const { run: _run, ...server } = ready;
        assert.deepEqual((await client.getRun(debugged)).debug, server, 'run.get carries it');
        await tracker.refresh(debugged);
        const offered = debugOffers.filter((o) => o.ready.run === debugged);
        assert.equal(offered.length, 1, 'offered once, not again for the snapshot');
        assert.equal(offered[0]?.origin, 'notification');
        assert.deepEqual(offered[0]?.ready, ready);

        // What the cppdbg session does, by hand: the setup commands (the sysroot) before connecting, the source
        // mapping, gdb on the program connected to the address. Then break in the step, read it, detach.
        const config = cppdbgConfiguration(ready);
        assert.equal(config.MIMode, 'gdb');
        assert.equal(config.program, ready.program);
        assert.equal(config.miDebuggerServerAddress, ready.address);
        assert.equal(config.sourceFileMap[ready.build_source_dir ?? ready.source_dir], ready.source_dir, 'the compiled-in folder maps to source_dir');
        if (ready.sysroot) assert.ok(config.setupCommands.some((c) => c.text === `set sysroot ${ready.sysroot}`));
        const args = ['-q', '-batch', '-nx', '-ex', 'set pagination off', '-ex', 'set confirm off'];
        for (const c of config.setupCommands) if (!c.text.startsWith('-')) args.push('-ex', c.text);
        for (const [from, to] of Object.entries(config.sourceFileMap)) if (from !== to) args.push('-ex', `set substitute-path ${from} ${to}`);
        args.push('-ex', `target remote ${config.miDebuggerServerAddress}`);
        for (const c of ['break Trainer::trainStep', 'continue', 'print m_state.globalStep', 'info source', 'delete', 'detach']) args.push('-ex', c);
        args.push(config.program);
        gdb = spawn('gdb', args, { stdio: ['ignore', 'pipe', 'pipe'] });
        gdb.stdout?.on('data', (d: Buffer) => (gdbOutput += d.toString()));
        gdb.stderr?.on('data', (d: Buffer) => (gdbOutput += d.toString()));
        const child = gdb;
        const exited = await waitFor('gdb to detach and exit', () => (child.exitCode !== null || child.signalCode !== null ? true : undefined), 120_000).catch(
          (err: Error) => {
            throw new Error(`${err.message}; gdb said:\n${gdbOutput}`);
          },
        );
        assert.ok(exited);
        assert.match(gdbOutput, /Breakpoint 1, .*Trainer::trainStep/, gdbOutput);
        assert.match(gdbOutput, /^\$1 = 0$/m, `the first step is step 0:\n${gdbOutput}`);
        assert.match(gdbOutput, /Located in \S*\/src\/training\.cpp/, gdbOutput);
        if (await fs.access(ready.source_dir).then(() => true, () => false)) {
          assert.ok(gdbOutput.includes(`Located in ${ready.source_dir}/`), `the sources found in source_dir:\n${gdbOutput}`);
        }
        assert.match(gdbOutput, /\[Inferior 1 \(.*\) detached\]/, gdbOutput);

        const finished = await waitFor('the debugged run to finish', finishedNote, 120_000);
        if (finished.method === 'run.finished') assert.equal(finished.params.record.state, 'finished', gdbOutput);
        const after = await client.getRun(debugged);
        assert.equal(after.run.state, 'finished');
        assert.equal(after.debug, undefined, 'no debug once the run has ended');
        assert.deepEqual(after.run.exits?.['1']?.status, 0, 'the debugged rank exited 0');
      } finally {
        if (gdb && gdb.exitCode === null && gdb.signalCode === null) gdb.kill('SIGKILL');
        // A rank left waiting under gdbserver would keep its peers in the rendezvous: tear the run down.
        if (!finishedNote()) {
          await client.stop(debugged).catch(() => undefined);
          await waitFor('the debugged run to stop', () => (finishedNote() ? true : undefined), 60_000).catch(() => undefined);
        }
      }
      await tracker.unfollow(debugged).catch(() => undefined);
    });

    test('reconnects to a bridge started after the first was killed, and subscribes again', { timeout: 60_000 }, async () => {
      const oldPid = bridge.process.pid;
      const oldToken = info.token;
      const subscribedBefore = subscribed.length;
      await stopProcess(bridge.process, 'SIGKILL'); // its connection file stays behind, with a dead pid
      await waitFor('the client to notice', () => (client.state === 'reconnecting' ? true : undefined), 10_000);
      await assert.rejects(client.request('runs.list'), (err: unknown) => err instanceof Error);

      bridge = await startTestBridge(env);
      info = bridge.info;
      assert.notEqual(info.token, oldToken);
      await waitFor('the client to reconnect', () => (client.state === 'connected' ? true : undefined), 20_000);
      assert.equal(client.connectionInfo?.pid, bridge.process.pid);
      assert.notEqual(client.connectionInfo?.pid, oldPid);
      const again = await waitFor('the re-subscription', () => subscribed.slice(subscribedBefore).find((s) => s.run === run), 10_000);
      assert.equal(again.resubscribed, true);
      assert.equal(again.snapshot.run.id, run);
      assert.ok(states.some((s) => s.state === 'reconnecting' && s.error instanceof ConnectionClosedError));
      const runs = await client.listRuns();
      assert.ok(runs.some((r) => r.id === run), 'the new bridge serves the same run store');
    });

    test('a stopped bridge removes its connection file', async () => {
      const file = info.file;
      await stopProcess(bridge.process, 'SIGTERM');
      await assert.rejects(fs.stat(file), /ENOENT/);
      bridge = await startTestBridge(env); // for the suite's after()
    });
  });
});
