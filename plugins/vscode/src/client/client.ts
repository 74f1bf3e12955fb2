// SPDX-License-Identifier: MIT
// The bridge client the extension holds for its whole life: finds the bridge, connects, reconnects with
// backoff when the connection drops (finding the bridge again, so a restarted bridge's new connection file
// and token are used) and subscribes again to the runs it followed.

import { BridgeConnection, CloseInfo, RawNotification } from './connection';
import { ConnectionInfo } from './connectionFile';
import { Emitter } from './emitter';
import { ConnectionClosedError, RpcError } from './jsonrpc';
import { Logger, redactUrl, silentLogger } from './logger';
import {
  ErrorCode,
  HelloResult,
  LaunchParams,
  LogsParams,
  LogsResult,
  Notification,
  NotificationMethod,
  PROTOCOL_VERSION,
  RunRecord,
  RunSnapshot,
} from './protocol';

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  factor: number;
  /** Each delay is spread by up to ± this fraction, so several clients do not retry in step. */
  jitter: number;
}

export class Backoff {
  private attempt = 0;
  private readonly options: BackoffOptions;

  constructor(options: Partial<BackoffOptions> = {}) {
    this.options = { initialMs: 200, maxMs: 10_000, factor: 2, jitter: 0.2, ...options };
  }

  next(): number {
    const { initialMs, maxMs, factor, jitter } = this.options;
    const base = Math.min(maxMs, initialMs * factor ** this.attempt);
    this.attempt++;
    const spread = base * jitter * (2 * Math.random() - 1);
    return Math.max(0, Math.round(base + spread));
  }

  reset(): void {
    this.attempt = 0;
  }
}

export type ClientState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'disposed';

export interface StateChange {
  state: ClientState;
  /** Why the connection is not up (connecting failed, or closed), when it is not. */
  error?: Error;
  /** The bridge it is connected to, when connected. */
  info?: ConnectionInfo;
  hello?: HelloResult;
}

export interface SubscribeEvent {
  run: string;
  snapshot: RunSnapshot;
  /** True when this is a re-subscription after a reconnect (the snapshot replaces what was known). */
  resubscribed: boolean;
}

export interface BridgeClientOptions {
  /** Finds the bridge to connect to; called before every connection attempt. */
  locate: () => Promise<ConnectionInfo>;
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
  backoff?: Partial<BackoffOptions>;
  logger?: Logger;
}

const NOTIFICATIONS: ReadonlySet<string> = new Set<NotificationMethod>([
  'run.events',
  'run.logLines',
  'run.ranks',
  'run.diagnoses',
  'run.progress',
  'run.finished',
  'run.debugReady',
  'bridge.fellBehind',
]);

export class BridgeClient {
  private connection: BridgeConnection | undefined;
  private connecting: Promise<HelloResult> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private currentState: ClientState = 'idle';
  private info: ConnectionInfo | undefined;
  private hello: HelloResult | undefined;
  private readonly subscriptions = new Set<string>();
  private readonly backoff: Backoff;
  private readonly logger: Logger;

  private readonly stateEmitter = new Emitter<StateChange>();
  private readonly notificationEmitter = new Emitter<Notification>();
  private readonly subscribeEmitter = new Emitter<SubscribeEvent>();

  readonly onDidChangeState = this.stateEmitter.event;
  /** Every notification of the protocol's list, in arrival order; unknown methods are logged and dropped. */
  readonly onNotification = this.notificationEmitter.event;
  /** A run subscribed to, with its snapshot: after subscribe() and after each re-subscription. */
  readonly onDidSubscribe = this.subscribeEmitter.event;

  constructor(private readonly options: BridgeClientOptions) {
    this.backoff = new Backoff(options.backoff);
    this.logger = options.logger ?? silentLogger;
  }

  get state(): ClientState {
    return this.currentState;
  }

  get connectionInfo(): ConnectionInfo | undefined {
    return this.currentState === 'connected' ? this.info : undefined;
  }

  get helloResult(): HelloResult | undefined {
    return this.hello;
  }

  get subscribedRuns(): string[] {
    return [...this.subscriptions];
  }

  /**
   * Connects now if not connected (a pending retry is brought forward). Rejects when this attempt fails;
   * once a connection has been up, a drop is retried in the background with backoff.
   */
  connect(): Promise<HelloResult> {
    if (this.currentState === 'disposed') return Promise.reject(new Error('the bridge client is disposed'));
    if (this.connection?.isOpen && this.hello) return Promise.resolve(this.hello);
    if (this.connecting) return this.connecting;
    this.clearRetry();
    this.connecting = this.attempt().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  async request<T = unknown>(method: string, params: unknown = {}, timeoutMs?: number): Promise<T> {
    const connection = await this.openConnection(method);
    return connection.request<T>(method, params, timeoutMs);
  }

  // The protocol's methods ------------------------------------------------------------------------------

  listRuns(): Promise<RunRecord[]> {
    return this.request<{ runs: RunRecord[] }>('runs.list').then((r) => r.runs);
  }

  getRun(run: string): Promise<RunSnapshot> {
    return this.request<RunSnapshot>('run.get', { run });
  }

  checkCluster(job: unknown, mode?: string): Promise<{ ok: boolean; nodes: unknown[] }> {
    return this.request('cluster.check', mode ? { job, mode } : { job }, 120_000);
  }

  /**
   * Resolves once the engine has started the launch (the run has its id); the bridge has subscribed this
   * client to the run from that moment, so the run is remembered as subscribed (and subscribed again after a
   * reconnect). Call subscribe() or getRun() for its snapshot.
   */
  async launch(params: LaunchParams, timeoutMs = 600_000): Promise<{ run: string }> {
    const result = await this.request<{ run: string }>('run.launch', params, timeoutMs);
    this.subscriptions.add(result.run);
    return result;
  }

  /** Follows a stored run still on its nodes; like a launch, it subscribes this client to the run. */
  async attach(run: string): Promise<{ run: string; state: string }> {
    const result = await this.request<{ run: string; state: string }>('run.attach', { run }, 120_000);
    this.subscriptions.add(result.run);
    return result;
  }

  stop(run: string): Promise<{ run: string; stopping: boolean }> {
    return this.request('run.stop', { run });
  }

  logs(params: LogsParams): Promise<LogsResult> {
    return this.request<LogsResult>('run.logs', params);
  }

  /** Subscribes and remembers the run, so it is subscribed again after a reconnect. */
  async subscribe(run: string): Promise<RunSnapshot> {
    const snapshot = await this.request<RunSnapshot>('run.subscribe', { run });
    this.subscriptions.add(run);
    this.subscribeEmitter.fire({ run, snapshot, resubscribed: false });
    return snapshot;
  }

  async unsubscribe(run: string): Promise<void> {
    this.subscriptions.delete(run);
    if (this.connection?.isOpen) await this.request('run.unsubscribe', { run });
  }

  dispose(): void {
    this.setState({ state: 'disposed' });
    this.clearRetry();
    this.connection?.dispose();
    this.connection = undefined;
    this.stateEmitter.dispose();
    this.notificationEmitter.dispose();
    this.subscribeEmitter.dispose();
  }

  // Connection management -------------------------------------------------------------------------------

  private async openConnection(method: string): Promise<BridgeConnection> {
    if (this.connection?.isOpen) return this.connection;
    if (this.currentState === 'disposed') throw new ConnectionClosedError(`${method}: the bridge client is disposed`);
    await this.connect();
    if (!this.connection?.isOpen) throw new ConnectionClosedError(`${method}: not connected to the bridge`);
    return this.connection;
  }

  private async attempt(): Promise<HelloResult> {
    const reconnecting = this.currentState === 'reconnecting';
    this.setState({ state: reconnecting ? 'reconnecting' : 'connecting' });
    let info: ConnectionInfo;
    let connection: BridgeConnection;
    let hello: HelloResult;
    try {
      info = await this.options.locate();
      ({ connection, hello } = await BridgeConnection.connect({
        url: info.url,
        token: info.token,
        connectTimeoutMs: this.options.connectTimeoutMs,
        requestTimeoutMs: this.options.requestTimeoutMs,
        logger: this.logger,
      }));
    } catch (err) {
      this.onAttemptFailed(err as Error, reconnecting);
      throw err;
    }
    if (this.currentState === 'disposed') {
      connection.dispose();
      throw new Error('the bridge client is disposed');
    }
    this.connection = connection;
    this.info = info;
    this.hello = hello;
    this.backoff.reset();
    connection.onNotification((n) => this.dispatch(n));
    connection.onClose((close) => this.onClosed(connection, close));
    if (connection.closeInfo) {
      this.onClosed(connection, connection.closeInfo);
      throw new ConnectionClosedError('the bridge closed the connection right after hello');
    }
    if (hello.version !== PROTOCOL_VERSION) {
      this.logger.warn(`the bridge speaks protocol version ${hello.version}; this extension knows ${PROTOCOL_VERSION}`);
    }
    this.logger.info(`connected to ${redactUrl(info.url)} (${hello.server} ${hello.server_version}, protocol ${hello.version})`);
    this.setState({ state: 'connected', info, hello });
    if (reconnecting || this.subscriptions.size > 0) await this.resubscribe(connection);
    return hello;
  }

  private onAttemptFailed(err: Error, reconnecting: boolean): void {
    if (this.currentState === 'disposed') return;
    if (reconnecting || this.subscriptions.size > 0) {
      // Keep trying: the bridge may be restarting.
      this.scheduleRetry(err);
    } else {
      this.setState({ state: 'idle', error: err });
    }
  }

  private onClosed(connection: BridgeConnection, close: CloseInfo): void {
    if (this.connection !== connection) return;
    this.connection = undefined;
    if (close.byClient || this.currentState === 'disposed') return;
    const reason = close.reason ? `, ${close.reason}` : '';
    const error = new ConnectionClosedError(`the bridge closed the connection (code ${close.code}${reason})`, close.code, close.reason);
    this.logger.warn(`${error.message}; reconnecting`);
    this.scheduleRetry(error);
  }

  private scheduleRetry(error: Error): void {
    this.clearRetry();
    const delay = this.backoff.next();
    this.setState({ state: 'reconnecting', error });
    this.logger.info(`reconnecting in ${delay} ms (${error.message})`);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect().catch(() => undefined); // a failure schedules the next try
    }, delay);
  }

  private clearRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private async resubscribe(connection: BridgeConnection): Promise<void> {
    for (const run of [...this.subscriptions]) {
      try {
        const snapshot = await connection.request<RunSnapshot>('run.subscribe', { run });
        this.subscribeEmitter.fire({ run, snapshot, resubscribed: true });
      } catch (err) {
        if (err instanceof RpcError && err.code === ErrorCode.noSuchRun) {
          this.logger.warn(`run ${run} is not known to this bridge any more; unsubscribed`);
          this.subscriptions.delete(run);
        } else {
          this.logger.warn(`could not subscribe again to run ${run}: ${(err as Error).message}`);
        }
      }
    }
  }

  private dispatch(n: RawNotification): void {
    if (!NOTIFICATIONS.has(n.method)) {
      this.logger.warn(`ignoring unknown notification ${n.method}`);
      return;
    }
    const params = n.params as { run?: unknown } | undefined;
    if (typeof params !== 'object' || params === null || typeof params.run !== 'string') {
      this.logger.warn(`ignoring ${n.method} without a run`);
      return;
    }
    this.notificationEmitter.fire({ method: n.method, params } as Notification);
  }

  private setState(change: StateChange): void {
    if (this.currentState === 'disposed' && change.state !== 'disposed') return;
    this.currentState = change.state;
    this.stateEmitter.fire(change);
  }
}
