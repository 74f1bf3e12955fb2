// SPDX-License-Identifier: MIT
// What the extension knows about each run it follows, folded from run.subscribe/run.get snapshots and
// the bridge's notifications. Memory is bounded: each rank's loss series is thinned when it grows past
// its cap, progress keeps the latest message per host, and log lines are not kept here at all (the
// output channels have them, the run store on the bridge's machine has everything).

import { Emitter } from './emitter';
import {
  Diagnosis,
  isTerminal,
  known,
  Notification,
  RankState,
  RankStateName,
  RunRecord,
  RunSnapshot,
  trainerNumber,
  TrainerEvent,
} from './protocol';

/**
 * What the store knows of a rank: the bridge's RankState (read in mergeRank) and the trainer's events
 * together. The extension's own view model, so its fields are camelCase; the wire types in protocol.ts keep
 * the bridge's snake_case.
 */
export interface RankView {
  rank: number;
  /** Undefined until known (the bridge sends "" before the rank starts). */
  host?: string;
  state?: RankStateName;
  epoch?: number;
  step?: number;
  /** Latest loss (NaN and infinities possible). */
  loss?: number;
  totalSteps?: number;
  phase?: string;
  stepsPerSecond?: number;
  imagesPerSec?: number;
  lastHeartbeat?: number | string;
  exitStatus?: number;
  reason?: string;
  lastError?: { kind: string; message: string; fatal: boolean };
  valAccuracy?: number;
}

/** A rank's loss by global step, oldest first; thinned to at most `cap` points. */
export class LossSeries {
  readonly steps: number[] = [];
  readonly losses: number[] = [];

  constructor(private readonly cap = 10_000) {}

  /** Appends a point when its step is past the last one (repeats after a re-fetch are dropped). */
  push(step: number, loss: number): boolean {
    const last = this.steps[this.steps.length - 1];
    if (last !== undefined && step <= last) return false;
    this.steps.push(step);
    this.losses.push(loss);
    if (this.steps.length > this.cap) this.thin();
    return true;
  }

  get length(): number {
    return this.steps.length;
  }

  /** Drops every second point of the older half: recent steps stay exact, old ones get coarser. */
  private thin(): void {
    const half = Math.floor(this.steps.length / 2);
    const keptSteps: number[] = [];
    const keptLosses: number[] = [];
    for (let i = 0; i < half; i += 2) {
      keptSteps.push(this.steps[i] as number);
      keptLosses.push(this.losses[i] as number);
    }
    this.steps.splice(0, half, ...keptSteps);
    this.losses.splice(0, half, ...keptLosses);
  }
}

export interface RunView {
  id: string;
  record?: RunRecord;
  ranks: Map<number, RankView>;
  diagnoses: Map<string, Diagnosis>;
  /** Latest launch/teardown message per host. */
  progress: Map<string, string>;
  losses: Map<number, LossSeries>;
  /** Set by bridge.fellBehind until the next snapshot: notifications were dropped. */
  stale: boolean;
}

export type ChangeKind = 'record' | 'ranks' | 'losses' | 'diagnoses' | 'progress' | 'finished' | 'stale';

export interface RunChange {
  run: string;
  kinds: Set<ChangeKind>;
  /** Diagnoses seen for the first time, or whose message or resolution changed. */
  changedDiagnoses: Diagnosis[];
  /** Loss points added by this change, per rank. */
  newLoss: Map<number, { steps: number[]; losses: number[] }>;
}

export interface RunProgress {
  step: number;
  totalSteps?: number;
  /** 0..1 when the total is known. */
  fraction?: number;
  epoch?: number;
  /** Mean of the ranks' latest finite losses. */
  meanLoss?: number;
}

export class RunStore {
  private readonly runs = new Map<string, RunView>();
  private readonly changeEmitter = new Emitter<RunChange>();

  /** One change per applied snapshot or notification. */
  readonly onDidChange = this.changeEmitter.event;

  constructor(private readonly lossCap = 10_000) {}

  get(run: string): RunView | undefined {
    return this.runs.get(run);
  }

  all(): RunView[] {
    return [...this.runs.values()];
  }

  forget(run: string): void {
    this.runs.delete(run);
  }

  /** Records a run as runs.list saw it (no ranks yet unless known). */
  applyRecord(record: RunRecord): void {
    const view = this.ensure(record.id);
    view.record = { ...view.record, ...record };
    this.emit(view.id, new Set(['record']));
  }

  /** A run.get / run.subscribe answer: record, ranks and diagnoses replace what was known. */
  applySnapshot(snapshot: RunSnapshot): void {
    const view = this.ensure(snapshot.run.id);
    const change = this.newChange(view.id);
    view.record = snapshot.run;
    view.stale = false;
    change.kinds.add('record').add('ranks').add('stale');
    for (const rank of snapshot.ranks) this.mergeRank(view, rank);
    for (const d of snapshot.diagnoses) this.mergeDiagnosis(view, d, change);
    if (isTerminal(snapshot.run.state)) change.kinds.add('finished');
    this.changeEmitter.fire(change);
  }

  /** Folds one notification; returns what changed (undefined for notifications the store does not keep). */
  apply(n: Notification): RunChange | undefined {
    const view = this.ensure(n.params.run);
    const change = this.newChange(view.id);
    switch (n.method) {
      case 'run.events':
        for (const e of n.params.events) this.applyEvent(view, e, change);
        break;
      case 'run.ranks':
        for (const r of n.params.ranks) this.mergeRank(view, r);
        change.kinds.add('ranks');
        break;
      case 'run.diagnoses':
        for (const d of n.params.diagnoses) this.mergeDiagnosis(view, d, change);
        break;
      case 'run.progress':
        view.progress.set(n.params.host, n.params.message);
        change.kinds.add('progress');
        break;
      case 'run.finished':
        view.record = n.params.record;
        change.kinds.add('record').add('finished');
        break;
      case 'bridge.fellBehind':
        view.stale = true;
        change.kinds.add('stale');
        break;
      case 'run.logLines':
      case 'run.debugReady':
        return undefined;
    }
    if (change.kinds.size === 0) return undefined;
    this.changeEmitter.fire(change);
    return change;
  }

  progress(run: string): RunProgress | undefined {
    const view = this.runs.get(run);
    if (!view || view.ranks.size === 0) return undefined;
    let step = 0;
    let totalSteps: number | undefined;
    let epoch: number | undefined;
    let sum = 0;
    let finite = 0;
    for (const r of view.ranks.values()) {
      step = Math.max(step, r.step ?? 0);
      if (r.totalSteps !== undefined) totalSteps = Math.max(totalSteps ?? 0, r.totalSteps);
      if (r.epoch !== undefined) epoch = Math.max(epoch ?? 0, r.epoch);
      if (r.loss !== undefined && Number.isFinite(r.loss)) {
        sum += r.loss;
        finite++;
      }
    }
    const result: RunProgress = { step };
    if (totalSteps !== undefined && totalSteps > 0) {
      result.totalSteps = totalSteps;
      result.fraction = Math.min(1, step / totalSteps);
    }
    if (epoch !== undefined) result.epoch = epoch;
    if (finite > 0) result.meanLoss = sum / finite;
    return result;
  }

  dispose(): void {
    this.changeEmitter.dispose();
  }

  private ensure(run: string): RunView {
    let view = this.runs.get(run);
    if (!view) {
      view = { id: run, ranks: new Map(), diagnoses: new Map(), progress: new Map(), losses: new Map(), stale: false };
      this.runs.set(run, view);
    }
    return view;
  }

  private rank(view: RunView, rank: number): RankView {
    let r = view.ranks.get(rank);
    if (!r) {
      r = { rank };
      view.ranks.set(rank, r);
    }
    return r;
  }

  /** A RankState from the bridge (snake_case, as sent) into the store's view of the rank. */
  private mergeRank(view: RunView, state: RankState): void {
    const r = this.rank(view, state.rank);
    // "" until the rank has started: keep what is known (from a start event, or an earlier state).
    const host = known(state.host);
    if (host !== undefined) r.host = host;
    r.state = state.state;
    r.epoch = state.epoch;
    // The bridge's step may lag the events already folded; never go back.
    r.step = Math.max(r.step ?? 0, state.step ?? 0);
    const loss = trainerNumber(state.loss);
    if (loss !== undefined) r.loss = loss;
    if (state.last_heartbeat !== undefined) r.lastHeartbeat = state.last_heartbeat;
    if (state.steps_per_second !== undefined) r.stepsPerSecond = state.steps_per_second;
    if (state.exit_status !== undefined) r.exitStatus = state.exit_status;
    if (known(state.reason) !== undefined) r.reason = state.reason;
  }

  private mergeDiagnosis(view: RunView, d: Diagnosis, change: RunChange): void {
    const before = view.diagnoses.get(d.key);
    view.diagnoses.set(d.key, d);
    if (!before || before.message !== d.message || before.resolved !== d.resolved) {
      change.changedDiagnoses.push(d);
      change.kinds.add('diagnoses');
    }
  }

  private applyEvent(view: RunView, e: TrainerEvent, change: RunChange): void {
    if (typeof e.rank !== 'number') return;
    const r = this.rank(view, e.rank);
    switch (e.type) {
      case 'start':
        if (typeof e['host'] === 'string' && e['host'] !== '') r.host = e['host'];
        if (typeof e['total_steps'] === 'number') r.totalSteps = e['total_steps'];
        if (r.state === undefined) r.state = 'running';
        change.kinds.add('ranks');
        break;
      case 'step': {
        const step = typeof e['step'] === 'number' ? e['step'] : undefined;
        const loss = trainerNumber(e['loss']);
        if (typeof e['epoch'] === 'number') r.epoch = e['epoch'];
        if (typeof e['images_per_sec'] === 'number') r.imagesPerSec = e['images_per_sec'];
        if (step !== undefined) r.step = Math.max(r.step ?? 0, step);
        if (step !== undefined && loss !== undefined) {
          r.loss = loss;
          this.addLoss(view, e.rank, step, loss, change);
        }
        change.kinds.add('ranks');
        break;
      }
      case 'heartbeat':
        if (typeof e['phase'] === 'string') r.phase = e['phase'];
        r.lastHeartbeat = e.time;
        break;
      case 'eval':
        if (typeof e['val_accuracy'] === 'number') r.valAccuracy = e['val_accuracy'];
        change.kinds.add('ranks');
        break;
      case 'error':
        r.lastError = {
          kind: String(e['kind'] ?? 'error'),
          message: String(e['message'] ?? ''),
          fatal: e['fatal'] !== false,
        };
        change.kinds.add('ranks');
        break;
      case 'end':
        r.phase = 'done';
        change.kinds.add('ranks');
        break;
    }
  }

  private addLoss(view: RunView, rank: number, step: number, loss: number, change: RunChange): void {
    let series = view.losses.get(rank);
    if (!series) {
      series = new LossSeries(this.lossCap);
      view.losses.set(rank, series);
    }
    if (!series.push(step, loss)) return;
    let added = change.newLoss.get(rank);
    if (!added) {
      added = { steps: [], losses: [] };
      change.newLoss.set(rank, added);
    }
    added.steps.push(step);
    added.losses.push(loss);
    change.kinds.add('losses');
  }

  private newChange(run: string): RunChange {
    return { run, kinds: new Set(), changedDiagnoses: [], newLoss: new Map() };
  }

  private emit(run: string, kinds: Set<ChangeKind>): void {
    this.changeEmitter.fire({ ...this.newChange(run), kinds });
  }
}
