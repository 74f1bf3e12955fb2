// SPDX-License-Identifier: MIT
// The bridge protocol's data types (docs/bridge.md, version 1). The interfaces mirror the wire format:
// every data object keeps the snake_case keys the bridge sends (as the run store and the trainer's events
// do), and nothing is renamed on the way in. Only what the extension reads is typed strictly; everything
// else is kept as it arrives.

export const PROTOCOL_VERSION = 1;

/** Close code the bridge uses for a missing or wrong token, or a peer that is not loopback. */
export const CLOSE_UNAUTHORIZED = 4401;

/** Requests larger than this are answered with -32600 (`"id": null`, `data.limit`); the socket stays open. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** Messages larger than this make the bridge close the WebSocket (1009). */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export const ErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  noSuchRun: -32001,
  runNotActive: -32002,
  launchFailed: -32003,
  noSuchRank: -32004,
} as const;

export type RunState = 'launching' | 'running' | 'finished' | 'failed' | 'stopped' | 'lost';
export type RankStateName = 'starting'|'running'|'slow'|'diverged'|'hung'|'failed'|'lost'|'finished'|'stopped';
export type Mode = 'debug' | 'submit';
export type Stream = 'out' | 'err';

/** The trainer writes non-finite numbers as the strings "nan", "inf", "-inf". */
export type TrainerNumber = number | 'nan' | 'inf' | '-inf';

export interface NodeRecord {
  name: string;
  host: string;
  local?: boolean;
  /** The run's folder on the node; "" until the launch made it. */
  run_dir?: string;
  ranks: number[] | number;
}

export interface ExitRecord {
  status: number;
  seen_at: string;
}

/** The stored run.json, as the bridge sends it (snake_case keys, as in the run store). */
export interface RunRecord {
  id: string;
  name: string;
  mode: Mode;
  state: RunState;
  created: string;
  /** "" while the run has not ended. */
  ended: string;
  world_size: number;
  nodes: NodeRecord[];
  /** Exit status per rank ("0", "1", …), once seen. */
  exits?: Record<string, ExitRecord>;
  /** -1: none. */
  first_failed_rank: number;
  /** "" until there is one. */
  summary: string;
  /**
   * Once the run ended, where its findings say more than `summary` (the root cause with the hung rank it waited
   * on, a stopped run's hang); absent otherwise.
   */
  verdict?: string;
  /** The job; run.get, run.subscribe and run.finished carry it, runs.list leaves it out. */
  job?: unknown;
  /** Only in runs.list: followed by this bridge. */
  active?: boolean;
}

export interface RankState {
  rank: number;
  /** "" until the rank has started. */
  host: string;
  state: RankStateName;
  epoch: number;
  step: number;
  loss?: TrainerNumber;
  last_heartbeat?: number | string;
  steps_per_second?: number;
  exit_status?: number;
  reason?: string;
}

export interface Diagnosis {
  kind: string;
  key: string;
  ranks: number[];
  host?: string;
  time: number | string;
  message: string;
  resolved: boolean;
}

export interface TrainerEvent {
  v: string;
  type: string;
  rank: number;
  time: number;
  [field: string]: unknown;
}

export interface HelloResult {
  version: number;
  server: string;
  server_version: string;
}

export interface RunSnapshot {
  run: RunRecord;
  ranks: RankState[];
  diagnoses: Diagnosis[];
  /** While the run is followed and one of its ranks waits under gdbserver (launched with debug_rank). */
  debug?: DebugServerInfo;
}

export interface LogLine {
  line: number;
  text: string;
}

export interface LogsResult {
  lines: LogLine[];
  next: number;
  total: number;
}

export interface LaunchParams {
  /** A job object (the job file's JSON) or the path of a job file on the bridge's machine. */
  job: unknown;
  /** Defaults to the job's own. */
  mode?: Mode;
  /** That rank waits under gdbserver; run.debugReady says where. */
  debug_rank?: number;
}

export interface LogsParams {
  run: string;
  rank: number;
  from?: number;
  count?: number;
  stream?: Stream;
}

export interface JobIssue {
  path: string;
  message: string;
}

// Notifications -----------------------------------------------------------------------------------------

export interface RunEventsParams {
  run: string;
  events: TrainerEvent[];
}

export interface NotifiedLogLine {
  rank: number;
  stream: Stream;
  line: number;
  text: string;
}

export interface RunLogLinesParams {
  run: string;
  lines: NotifiedLogLine[];
}

export interface RunRanksParams {
  run: string;
  ranks: RankState[];
}

export interface RunDiagnosesParams {
  run: string;
  diagnoses: Diagnosis[];
}

export interface RunProgressParams {
  run: string;
  host: string;
  message: string;
}

export interface RunFinishedParams {
  run: string;
  record: RunRecord;
}

/** A rank waiting under gdbserver for one debugger: run.get's and run.subscribe's `debug`. */
export interface DebugServerInfo {
  rank: number;
  /** The rank's node, as the run names it. */
  host: string;
  /** "127.0.0.1:PORT" on this machine (forwarded over SSH for a remote node). */
  address: string;
  /** The trainer, with its symbols, as a file on this machine. */
  program: string;
  /** The trainer's sources on this machine. */
  source_dir: string;
  /** The source folder the program's debug info names, when it is not source_dir: map it to source_dir. */
  build_source_dir?: string;
  /** "/" when this machine's shared libraries stand for the node's: `set sysroot` before connecting. */
  sysroot?: string;
  /** A ready command line: `gdb -q … -ex 'target remote 127.0.0.1:P' PROGRAM`, quoted for a shell. */
  gdb_command: string;
}

/** run.debugReady: a DebugServerInfo and its run. */
export interface DebugReadyParams extends DebugServerInfo {
  run: string;
}

export interface FellBehindParams {
  run: string;
  dropped: number;
}

export interface NotificationMap {
  'run.events': RunEventsParams;
  'run.logLines': RunLogLinesParams;
  'run.ranks': RunRanksParams;
  'run.diagnoses': RunDiagnosesParams;
  'run.progress': RunProgressParams;
  'run.finished': RunFinishedParams;
  'run.debugReady': DebugReadyParams;
  'bridge.fellBehind': FellBehindParams;
}

export type NotificationMethod = keyof NotificationMap;

export type Notification = {
  [M in NotificationMethod]: { method: M; params: NotificationMap[M] };
}[NotificationMethod];

/** Turns a trainer number into a JS number (NaN and the infinities included); undefined when absent. */
export function trainerNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (value === 'nan') return Number.NaN;
  if (value === 'inf') return Number.POSITIVE_INFINITY;
  if (value === '-inf') return Number.NEGATIVE_INFINITY;
  return undefined;
}

export function isTerminal(state: RunState | undefined): boolean {
  return state === 'finished' || state === 'failed' || state === 'stopped' || state === 'lost';
}

/** The run's first failed rank, when there is one (-1, or absent, means none). */
export function firstFailedRank(record: RunRecord | undefined): number | undefined {
  const rank = record?.first_failed_rank;
  return typeof rank === 'number' && rank >= 0 ? rank : undefined;
}

/** What a listing shows of a run: its verdict, or its summary; undefined while it has neither. */
export function headline(record: RunRecord|undefined): string|undefined {
    return known(record?.verdict) ?? known(record?.summary);
}

/** A string field the bridge leaves "" until it is known (`ended`, `summary`, a rank's `host`): undefined then. */
export function known(value: string | undefined | null): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
