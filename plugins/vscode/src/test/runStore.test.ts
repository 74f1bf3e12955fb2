// SPDX-License-Identifier: MIT
// The run-state store folding notifications, and the log follower's ordering and gap filling, on
// recorded-shape inputs (the same shapes the real bridge sends; bridge.test.ts checks them live).

import assert from 'node:assert/strict';
import {describe, test} from 'node:test';

import {
    firstFailedRank,
    headline,
    known,
    LogBatch,
    LogFollower,
    LogLine,
    LossSeries,
    NotifiedLogLine,
    RunChange,
    RunStore,
    Stream
} from '../client';

const record = (state: string) => ({
  id: 'r1',
  name: 'job',
  mode: 'debug' as const,
  state: state as 'running',
  created: '2026-11-22T09:00:00Z',
  ended: state === 'running' ? '' : '2026-11-22T09:01:00Z',
  world_size: 2,
  nodes: [{ name: 'local', host: 'localhost', local: true, run_dir: '', ranks: [0, 1] }],
  exits: {},
  first_failed_rank: -1,
  summary: '',
});
const step = (rank: number, s: number, loss: number | string) => ({ v: '1.0', type: 'step', rank, time: 1, epoch: 1, step: s, loss });

describe('run store', () => {
  test('folds a snapshot, events, ranks, diagnoses, progress and the end', () => {
    const store = new RunStore();
    const changes: RunChange[] = [];
    store.onDidChange((c) => changes.push(c));
    store.applySnapshot({ run: record('running'), ranks: [{ rank: 0, host: 'local', state: 'starting', epoch: 0, step: 0 }], diagnoses: [] });
    store.apply({ method: 'run.events', params: { run: 'r1', events: [{ v: '1.0', type: 'start', rank: 1, time: 1, total_steps: 8, host: 'h' }] } });
    store.apply({ method: 'run.events', params: { run: 'r1', events: [step(0, 1, 2.5), step(1, 1, 2.3), step(0, 2, 'nan'), step(1, 2, 2.0)] } });
    const view = store.get('r1');
    assert.ok(view);
    assert.deepEqual([...view.ranks.keys()].sort(), [0, 1]);
    assert.equal(view.ranks.get(1)?.totalSteps, 8);
    assert.equal(view.ranks.get(1)?.loss, 2.0);
    assert.ok(Number.isNaN(view.ranks.get(0)?.loss));
    assert.deepEqual(view.losses.get(1)?.steps, [1, 2]);
    const last = changes.at(-1);
    assert.ok(last?.kinds.has('losses'));
    assert.deepEqual(last?.newLoss.get(0)?.steps, [1, 2]);

    const progress = store.progress('r1');
    assert.deepEqual(progress, { step: 2, totalSteps: 8, fraction: 0.25, epoch: 1, meanLoss: 2.0 }, 'NaN losses are left out of the mean');

    store.apply({ method: 'run.ranks', params: { run: 'r1', ranks: [{ rank: 1, host: 'local', state: 'slow', epoch: 1, step: 1, steps_per_second: 3, last_heartbeat: 1795338679.8 }] } });
    assert.equal(view.ranks.get(1)?.state, 'slow');
    assert.equal(view.ranks.get(1)?.stepsPerSecond, 3);
    assert.equal(view.ranks.get(1)?.lastHeartbeat, 1795338679.8);
    assert.equal(view.ranks.get(1)?.step, 2, 'a lagging step from run.ranks does not go back');

    const d = { kind: 'straggler', key: 'straggler:1', ranks: [1], time: 2, message: 'rank 1 is slow', resolved: false };
    const c1 = store.apply({ method: 'run.diagnoses', params: { run: 'r1', diagnoses: [d] } });
    assert.deepEqual(c1?.changedDiagnoses, [d]);
    const c2 = store.apply({ method: 'run.diagnoses', params: { run: 'r1', diagnoses: [d] } });
    assert.equal(c2, undefined, 'the same finding again changes nothing');
    const c3 = store.apply({ method: 'run.diagnoses', params: { run: 'r1', diagnoses: [{ ...d, resolved: true }] } });
    assert.equal(c3?.changedDiagnoses[0]?.resolved, true);

    store.apply({ method: 'run.progress', params: { run: 'r1', host: 'local', message: 'stopping' } });
    assert.equal(view.progress.get('local'), 'stopping');
    store.apply({ method: 'bridge.fellBehind', params: { run: 'r1', dropped: 3 } });
    assert.equal(view.stale, true);
    const end = store.apply({ method: 'run.finished', params: { run: 'r1', record: record('finished') } });
    assert.ok(end?.kinds.has('finished'));
    assert.equal(view.record?.state, 'finished');
    store.applySnapshot({ run: record('finished'), ranks: [], diagnoses: [] });
    assert.equal(view.stale, false, 'a snapshot repairs a run that fell behind');
  });

  test('a rank\'s host is "" until it starts; "" never hides a host already known', () => {
    const store = new RunStore();
    const starting = (rank: number, host: string) => ({ rank, host, state: 'starting' as const, epoch: 0, step: 0, last_heartbeat: 1 });
    store.applySnapshot({ run: record('running'), ranks: [starting(0, ''), starting(1, '')], diagnoses: [] });
    const view = store.get('r1');
    assert.equal(view?.ranks.get(0)?.host, undefined, 'no host yet');
    store.apply({ method: 'run.events', params: { run: 'r1', events: [{ v: '1.0', type: 'start', rank: 0, time: 1, host: 'node-a' }] } });
    assert.equal(view?.ranks.get(0)?.host, 'node-a');
    store.apply({ method: 'run.ranks', params: { run: 'r1', ranks: [starting(0, ''), { ...starting(1, 'node-b'), state: 'running' }] } });
    assert.equal(view?.ranks.get(0)?.host, 'node-a');
    assert.equal(view?.ranks.get(1)?.host, 'node-b');
    store.apply({ method: 'run.ranks', params: { run: 'r1', ranks: [{ ...starting(1, ''), state: 'finished', exit_status: 0, reason: '' }] } });
    assert.equal(view?.ranks.get(1)?.host, 'node-b');
    assert.equal(view?.ranks.get(1)?.exitStatus, 0);
    assert.equal(view?.ranks.get(1)?.reason, undefined, 'an empty reason is no reason');
  });

  test('empty ended and summary, and first_failed_rank -1, read as "not yet" and "none"', () => {
    const running = record('running');
    assert.equal(running.ended, '');
    assert.equal(known(running.ended), undefined);
    assert.equal(known(running.summary), undefined);
    assert.equal(known('2026-11-22T09:01:00Z'), '2026-11-22T09:01:00Z');
    assert.equal(firstFailedRank(running), undefined);
    assert.equal(firstFailedRank({ ...running, state: 'failed', first_failed_rank: 1 }), 1);
    assert.equal(firstFailedRank({ ...running, first_failed_rank: 0 }), 0);
  });

  test("a run's headline is its verdict where it has one, else its summary", () => {
      const stopped = {...record('stopped'), summary : 'stopped by the user'};
      assert.equal(headline(stopped), 'stopped by the user');
      const verdict = 'stopped by the user; hang: rank 1 on node-b stuck at step 5 in phase forward (collective #12)';
      assert.equal(headline({...stopped, verdict}), verdict);
      assert.equal(headline({...stopped, verdict : ''}), 'stopped by the user');
      assert.equal(headline(record('running')), undefined);
      assert.equal(headline(undefined), undefined);
  });

  test('loss series are bounded and keep recent steps exact', () => {
    const s = new LossSeries(100);
    for (let i = 1; i <= 1000; i++) s.push(i, 1 / i);
    assert.ok(s.length <= 100);
    assert.equal(s.steps.at(-1), 1000);
    assert.deepEqual(s.steps.slice(-10), [991, 992, 993, 994, 995, 996, 997, 998, 999, 1000]);
    assert.ok(s.steps.every((v, i) => i === 0 || v > (s.steps[i - 1] as number)), 'steps stay increasing');
    assert.equal(s.push(500, 0), false, 'an old step is not added again');
  });
});

describe('log follower', () => {
  /** A fake run.logs over `n` stored lines per rank and stream. */
  const stored = (n: number) => {
    const calls: [number, Stream, number, number][] = [];
    const fetch = async (_run: string, rank: number, stream: Stream, from: number, count: number) => {
      calls.push([rank, stream, from, count]);
      const lines: LogLine[] = [];
      for (let l = from; l < from + count && l <= n; l++) lines.push({ line: l, text: `${rank}${stream}${l}` });
      return { lines, total: n };
    };
    return { fetch, calls };
  };
  const line = (rank: number, l: number, stream: Stream = 'out'): NotifiedLogLine => ({ rank, stream, line: l, text: `${rank}${stream}${l}` });
  const collect = (f: LogFollower) => {
    const batches: LogBatch[] = [];
    f.onLines((b) => batches.push(b));
    const numbers = (rank: number, stream: Stream = 'out') =>
      batches.flatMap((b) => b.lines.filter((l) => l.rank === rank && l.stream === stream).map((l) => l.line));
    return { batches, numbers };
  };
  const settle = () => new Promise((r) => setTimeout(r, 10));

  test('in-order lines pass through at once, repeats are dropped', () => {
    const { fetch, calls } = stored(10);
    const f = new LogFollower(fetch);
    const { numbers } = collect(f);
    f.accept('r', [line(0, 1), line(1, 1), line(0, 2), line(1, 1, 'err')]);
    f.accept('r', [line(0, 2), line(0, 3)]);
    assert.deepEqual(numbers(0), [1, 2, 3]);
    assert.deepEqual(numbers(1), [1]);
    assert.deepEqual(numbers(1, 'err'), [1]);
    assert.equal(calls.length, 0);
  });

  test('a gap is fetched, lines behind it are held and released in order', async () => {
    const { fetch, calls } = stored(20);
    const f = new LogFollower(fetch);
    const { numbers } = collect(f);
    f.accept('r', [line(0, 1)]);
    f.accept('r', [line(0, 6), line(0, 7)]); // 2-5 dropped by the bridge
    f.accept('r', [line(0, 8)]); // arrives while the gap is fetched
    await settle();
    assert.deepEqual(numbers(0), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(calls, [[0, 'out', 2, 4]]);
  });

  test('a long gap is fetched only up to the backfill limit, the rest counted', async () => {
    const { fetch } = stored(1000);
    const f = new LogFollower(fetch, 100);
    const { numbers, batches } = collect(f);
    f.accept('r', [line(1, 901)]);
    await settle();
    assert.deepEqual(numbers(1), Array.from({ length: 101 }, (_, i) => 801 + i));
    assert.deepEqual(batches.at(-1)?.omitted, [{ rank: 1, stream: 'out', count: 800 }]);
  });

  test('catching up fetches what was written since the last line given out', async () => {
    const { fetch } = stored(30);
    const f = new LogFollower(fetch, 1000);
    const { numbers } = collect(f);
    f.accept('r', [line(0, 1), line(0, 2)]);
    await f.catchUp('r', [0]);
    assert.deepEqual(numbers(0), Array.from({ length: 30 }, (_, i) => i + 1));
    assert.deepEqual(numbers(0, 'err'), Array.from({ length: 30 }, (_, i) => i + 1));
    f.accept('r', [line(0, 30), line(0, 31)]);
    assert.deepEqual(numbers(0).slice(-2), [30, 31]);
  });
});
