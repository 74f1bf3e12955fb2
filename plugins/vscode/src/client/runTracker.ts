// SPDX-License-Identifier: MIT
// Binds the client to the run store: snapshots and notifications are folded, `bridge.fellBehind` and
// reconnects are repaired (run.get for the state, run.logs for the log lines that were missed), and log
// lines come out per rank and stream in order, each once. A rank waiting under gdbserver is offered once,
// whether run.debugReady says so or a snapshot's `debug` (a run attached to, or followed again).

import { BridgeClient } from './client';
import { Disposable, Emitter } from './emitter';
import { Logger, silentLogger } from './logger';
import { DebugReadyParams, LogLine, Notification, NotifiedLogLine, RunSnapshot, Stream } from './protocol';

/** A rank waiting under gdbserver, and how the tracker learned of it. */
export interface DebugOffer {
  ready: DebugReadyParams;
  /** 'notification': run.debugReady; 'snapshot': the `debug` of run.get or run.subscribe. */
  origin: 'notification' | 'snapshot';
}
import { RunStore } from './runStore';

export interface LogBatch {
  run: string;
  /** In arrival order across ranks; in line order within each rank and stream. */
  lines: NotifiedLogLine[];
  /** Lines of a gap too long to fetch back (older than the backfill limit), per rank and stream. */
  omitted: { rank: number; stream: Stream; count: number }[];
}

/** The source of missing lines: the bridge's run.logs. */
export type FetchLogs = (run: string, rank: number, stream: Stream, from: number, count: number) => Promise<{ lines: LogLine[]; total: number }>;

interface Cursor {
  /** The last line number given out (0: none yet). */
  last: number;
  fetching: boolean;
  /** Lines that came in while a fetch was under way. */
  held: NotifiedLogLine[];
}

/**
 * Keeps each rank's stream in order and without repeats. A line past a gap is held back while the gap
 * is fetched; at most `backfillLimit` lines of a gap are fetched, the rest are counted as omitted.
 */
export class LogFollower {
  private readonly cursors = new Map<string, Cursor>();
  private readonly emitter = new Emitter<LogBatch>();
  readonly onLines = this.emitter.event;

  constructor(
    private readonly fetch: FetchLogs,
    private readonly backfillLimit = 2_000,
    private readonly logger: Logger = silentLogger,
  ) {}

  accept(run: string, lines: NotifiedLogLine[]): void {
    const out: NotifiedLogLine[] = [];
    const gaps = new Map<string, { rank: number; stream: Stream; upTo: number }>();
    for (const line of lines) {
      const key = cursorKey(run, line.rank, line.stream);
      const c = this.cursor(key);
      if (c.fetching || gaps.has(key)) {
        c.held.push(line);
      } else if (line.line <= c.last) {
        continue; // already given out (fetched while this notification was on its way)
      } else if (line.line === c.last + 1) {
        c.last = line.line;
        out.push(line);
      } else {
        c.held.push(line);
        gaps.set(key, { rank: line.rank, stream: line.stream, upTo: line.line - 1 });
      }
    }
    if (out.length > 0) this.emitter.fire({ run, lines: out, omitted: [] });
    for (const gap of gaps.values()) void this.fill(run, gap.rank, gap.stream, gap.upTo);
  }

  /**
   * Fetches what the run's ranks wrote since their last line given out (after bridge.fellBehind or a
   * reconnect); ranks never seen start at line 1.
   */
  async catchUp(run: string, ranks: number[]): Promise<void> {
    const work: Promise<void>[] = [];
    for (const rank of ranks) {
      for (const stream of ['out', 'err'] as const) work.push(this.fill(run, rank, stream, Number.POSITIVE_INFINITY));
    }
    await Promise.all(work);
  }

  forget(run: string): void {
    for (const key of [...this.cursors.keys()]) if (key.startsWith(`${run}\u0000`)) this.cursors.delete(key);
  }

  dispose(): void {
    this.emitter.dispose();
  }

  private cursor(key: string): Cursor {
    let c = this.cursors.get(key);
    if (!c) {
      c = { last: 0, fetching: false, held: [] };
      this.cursors.set(key, c);
    }
    return c;
  }

  /** Fetches lines last+1..upTo (all there are when upTo is infinite), then releases the held ones. */
  private async fill(run: string, rank: number, stream: Stream, upTo: number): Promise<void> {
    const c = this.cursor(cursorKey(run, rank, stream));
    if (c.fetching) return;
    c.fetching = true;
    const fetched: NotifiedLogLine[] = [];
    let omitted = 0;
    try {
      let from = c.last + 1;
      if (Number.isFinite(upTo) && upTo - from + 1 > this.backfillLimit) {
        omitted = upTo - from + 1 - this.backfillLimit;
        from = upTo - this.backfillLimit + 1;
      }
      let firstPage = true;
      while (from <= upTo) {
        const count = Math.min(10_000, Number.isFinite(upTo) ? upTo - from + 1 : this.backfillLimit);
        const page = await this.fetch(run, rank, stream, from, count);
        if (firstPage && !Number.isFinite(upTo) && page.total - c.last > this.backfillLimit) {
          // Catching up on a long stretch: keep only its tail.
          omitted = page.total - c.last - this.backfillLimit;
          from = page.total - this.backfillLimit + 1;
          firstPage = false;
          continue;
        }
        firstPage = false;
        for (const l of page.lines) fetched.push({ rank, stream, line: l.line, text: l.text });
        if (page.lines.length === 0) break;
        from = (page.lines[page.lines.length - 1] as LogLine).line + 1;
        if (from > page.total) break;
      }
    } catch (err) {
      this.logger.warn(`could not fetch rank ${rank} ${stream} lines of run ${run}: ${(err as Error).message}`);
    }
    c.fetching = false;
    const held = c.held.splice(0).sort((a, b) => a.line - b.line);
    const lines: NotifiedLogLine[] = [];
    for (const l of [...fetched, ...held]) {
      if (l.line <= c.last) continue;
      lines.push(l);
      c.last = l.line;
    }
    if (lines.length > 0 || omitted > 0) {
      this.emitter.fire({ run, lines, omitted: omitted > 0 ? [{ rank, stream, count: omitted }] : [] });
    }
  }
}

function cursorKey(run: string, rank: number, stream: Stream): string {
  return `${run}\u0000${rank}\u0000${stream}`;
}

/** Client + store + log follower: what the extension (and the tests) use to follow runs. */
export class RunTracker implements Disposable {
  readonly logs: LogFollower;
  private readonly debugEmitter = new Emitter<DebugOffer>();
  /** The debug servers offered (run, rank, address): each is offered once. */
  private readonly offered = new Set<string>();
  private readonly subs: Disposable[] = [];

  /**
   * A rank launched with debug_rank waits under gdbserver: said by run.debugReady, or found in a snapshot
   * (run.get, run.subscribe), once per run, rank and address.
   */
  readonly onDebugReady = this.debugEmitter.event;

  constructor(
    readonly client: BridgeClient,
    readonly store: RunStore,
    private readonly logger: Logger = silentLogger,
    backfillLimit = 2_000,
  ) {
    this.logs = new LogFollower(
      (run, rank, stream, from, count) => client.logs({ run, rank, stream, from, count }),
      backfillLimit,
      logger,
    );
    this.subs.push(client.onNotification((n) => this.handle(n)));
    this.subs.push(client.onDidSubscribe((s) => this.onSubscribed(s.snapshot, s.resubscribed)));
  }

  /** Subscribes to a run (the snapshot is folded through onDidSubscribe). */
  follow(run: string): Promise<RunSnapshot> {
    return this.client.subscribe(run);
  }

  async unfollow(run: string): Promise<void> {
    await this.client.unsubscribe(run);
  }

  /** Re-fetches a run's state and the log lines missed. */
  async refresh(run: string): Promise<void> {
    const snapshot = await this.client.getRun(run);
    this.store.applySnapshot(snapshot);
    this.offerSnapshotDebug(snapshot);
    await this.logs.catchUp(run, snapshot.ranks.map((r) => r.rank));
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.logs.dispose();
    this.debugEmitter.dispose();
  }

  /** Folds one notification (the client's are fed here; public so a test can play one the bridge rarely sends). */
  handle(n: Notification): void {
    switch (n.method) {
      case 'run.logLines':
        this.logs.accept(n.params.run, n.params.lines);
        return;
      case 'run.debugReady':
        this.offerDebug(n.params, 'notification');
        return;
      case 'run.finished':
        this.store.apply(n);
        this.forgetDebug(n.params.run);
        return;
      case 'bridge.fellBehind':
        this.store.apply(n);
        this.logger.warn(`fell behind on run ${n.params.run} (${n.params.dropped} notifications dropped); fetching again`);
        this.refresh(n.params.run).catch((err: Error) => this.logger.warn(`could not re-fetch run ${n.params.run}: ${err.message}`));
        return;
      default:
        this.store.apply(n);
    }
  }

  private onSubscribed(snapshot: RunSnapshot, resubscribed: boolean): void {
    this.store.applySnapshot(snapshot);
    this.offerSnapshotDebug(snapshot);
    if (resubscribed) {
      const run = snapshot.run.id;
      this.logs
        .catchUp(run, snapshot.ranks.map((r) => r.rank))
        .catch((err: Error) => this.logger.warn(`could not catch up on run ${run}'s logs: ${err.message}`));
    }
  }

  private offerSnapshotDebug(snapshot: RunSnapshot): void {
    if (snapshot.debug && snapshot.run?.id) this.offerDebug({ ...snapshot.debug, run: snapshot.run.id }, 'snapshot');
  }

  private offerDebug(ready: DebugReadyParams, origin: DebugOffer['origin']): void {
    const key = `${ready.run}\u0000${ready.rank}\u0000${ready.address}`;
    if (this.offered.has(key)) return;
    this.offered.add(key);
    this.debugEmitter.fire({ ready, origin });
  }

  private forgetDebug(run: string): void {
    for (const key of [...this.offered]) if (key.startsWith(`${run}\u0000`)) this.offered.delete(key);
  }
}
