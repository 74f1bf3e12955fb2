// SPDX-License-Identifier: MIT
// One WebSocket to the bridge: JSON-RPC requests with timeouts, notifications dispatched to listeners.
// The token is presented in the Authorization header, never in the URL, and never logged.

import WebSocket from 'ws';
import { Emitter } from './emitter';
import {
  ConnectionClosedError,
  decodeMessage,
  encodeRequest,
  PendingRequests,
  RpcError,
  RpcTimeoutError,
  UnauthorizedError,
} from './jsonrpc';
import { Logger, redactUrl, silentLogger } from './logger';
import { CLOSE_UNAUTHORIZED, ErrorCode, HelloResult, MAX_MESSAGE_BYTES } from './protocol';

export interface ConnectOptions {
  url: string;
  token: string;
  /** Opening the socket and the bridge.hello answer, together. */
  connectTimeoutMs?: number;
  /** Default for every request; a request may give its own. */
  requestTimeoutMs?: number;
  logger?: Logger;
}

export interface CloseInfo {
  code: number;
  reason: string;
  /** True when this side closed it (dispose), false when the bridge or the network did. */
  byClient: boolean;
}

export interface RawNotification {
  method: string;
  params: unknown;
}

export class BridgeConnection {
  private readonly pending = new PendingRequests();
  private readonly notificationEmitter = new Emitter<RawNotification>();
  private readonly closeEmitter = new Emitter<CloseInfo>();
  private closed: CloseInfo | undefined;
  private closingByClient = false;

  /** Fires for every notification, in arrival order. */
  readonly onNotification = this.notificationEmitter.event;
  /** Fires once, when the socket is closed for whatever reason. */
  readonly onClose = this.closeEmitter.event;

  private readonly opened: Promise<void>;

  private constructor(
    readonly url: string,
    token: string,
    connectTimeoutMs: number,
    private readonly requestTimeoutMs: number,
    private readonly logger: Logger,
  ) {
    // Listeners go on at once: a bridge that refuses the token closes right after the handshake, and a
    // frame in the same packet as the handshake's answer must not be missed.
    this.socket = new WebSocket(url, {
      headers: { Authorization: `Bearer ${token}` },
      handshakeTimeout: connectTimeoutMs,
      maxPayload: 64 * 1024 * 1024,
      perMessageDeflate: false,
    });
    this.opened = new Promise<void>((resolve, reject) => {
      this.socket.once('open', () => resolve());
      this.socket.once('error', (err) =>
        reject(new ConnectionClosedError(`cannot connect to the bridge at ${redactUrl(url)}: ${err.message}`)),
      );
      this.openFailed = reject;
    });
    this.opened.catch(() => undefined);
    this.socket.on('message', (data, isBinary) => this.handleFrame(data, isBinary));
    this.socket.on('close', (code, reason) => this.handleClose(code, reason.toString('utf8')));
    this.socket.on('error', (err) => this.logger.warn(`bridge socket error: ${err.message}`));
  }

  private readonly socket: WebSocket;
  private openFailed: (err: Error) => void = () => undefined;

  /**
   * Opens the socket and says hello. Rejects with UnauthorizedError when the bridge refuses the token
   * (it accepts the handshake, then closes with 4401), with ConnectionClosedError when it cannot be reached.
   */
  static async connect(options: ConnectOptions): Promise<{ connection: BridgeConnection; hello: HelloResult }> {
    const logger = options.logger ?? silentLogger;
    const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    const deadline = Date.now() + connectTimeoutMs;
    const connection = new BridgeConnection(options.url, options.token, connectTimeoutMs, options.requestTimeoutMs ?? 30_000, logger);
    try {
      await connection.opened;
      const hello = (await connection.request('bridge.hello', {}, Math.max(1, deadline - Date.now()))) as HelloResult;
      return { connection, hello };
    } catch (err) {
      connection.dispose();
      if (err instanceof RpcTimeoutError) {
        throw new ConnectionClosedError(`the bridge at ${redactUrl(options.url)} did not answer bridge.hello`);
      }
      throw err;
    }
  }

  get isOpen(): boolean {
    return this.closed === undefined && this.socket.readyState === WebSocket.OPEN;
  }

  get closeInfo(): CloseInfo | undefined {
    return this.closed;
  }

  /**
   * Sends a request and resolves with its result; rejects with RpcError, RpcTimeoutError or
   * ConnectionClosedError. A request over 4 MiB is answered by the bridge with -32600 (`data.limit`); one over
   * 64 MiB, which would make the bridge close the socket, is refused here, unsent, with -32600 as well.
   */
  request<T = unknown>(method: string, params: unknown = {}, timeoutMs = this.requestTimeoutMs): Promise<T> {
    if (!this.closed && this.socket.readyState === WebSocket.CLOSING) {
      // The bridge's close frame is in (a refused token closes right after the handshake): wait for the
      // close code, so the caller learns why.
      return new Promise<T>((_, reject) => {
        this.onClose(() => reject(this.closedError(`${method}: not connected to the bridge`)));
      });
    }
    if (this.closed || this.socket.readyState !== WebSocket.OPEN) {
      return Promise.reject(this.closedError(`${method}: not connected to the bridge`));
    }
    const { id, answer } = this.pending.add(method, timeoutMs);
    const text = encodeRequest(id, method, params);
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > MAX_MESSAGE_BYTES) {
      this.pending.fail(
        id,
        new RpcError(ErrorCode.invalidRequest, `request too large (${bytes} bytes)`, { limit: MAX_MESSAGE_BYTES }, method),
      );
      return answer as Promise<T>;
    }
    this.pending.setBytes(id, bytes);
    this.socket.send(text, (err) => {
      if (err) this.pending.fail(id, new ConnectionClosedError(`${method}: could not send: ${err.message}`));
    });
    return answer as Promise<T>;
  }

  /** Sends raw text (tests use it to check how the bridge answers malformed requests). */
  sendRaw(text: string): void {
    this.socket.send(text);
  }

  dispose(): void {
    if (this.closed) return;
    this.closingByClient = true;
    if (this.socket.readyState === WebSocket.CONNECTING) {
      this.socket.terminate();
    } else {
      this.socket.close(1000, 'client closing');
      // A bridge that does not answer the close frame must not keep the process alive.
      setTimeout(() => this.socket.terminate(), 2_000).unref();
    }
  }

  private handleFrame(data: WebSocket.RawData, isBinary: boolean): void {
    if (isBinary) {
      this.logger.warn('ignoring a binary frame from the bridge');
      return;
    }
    const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : data.toString();
    const message = decodeMessage(text);
    switch (message.kind) {
      case 'response':
        if (!this.pending.settle(message)) this.logger.warn(`answer to unknown or timed-out request ${String(message.id)}`);
        break;
      case 'notification':
        this.notificationEmitter.fire({ method: message.method, params: message.params });
        break;
      case 'unattributed-error':
        if (!this.pending.settleUnattributed(message)) {
          this.logger.warn(`the bridge answered an unreadable request: ${message.error.code} ${message.error.message}`);
        }
        break;
      case 'invalid':
        this.logger.warn(`unreadable message from the bridge: ${message.reason}`);
        break;
    }
  }

  private handleClose(code: number, reason: string): void {
    this.closed = { code, reason, byClient: this.closingByClient };
    this.openFailed(this.closedError('the bridge closed the connection during the handshake'));
    this.pending.rejectAll(this.closedError('the connection to the bridge closed'));
    this.closeEmitter.fire(this.closed);
    this.notificationEmitter.dispose();
    this.closeEmitter.dispose();
  }

  private closedError(prefix: string): ConnectionClosedError {
    const info = this.closed;
    if (info?.code === CLOSE_UNAUTHORIZED) {
      return new UnauthorizedError(`the bridge refused the connection: ${info.reason || 'unauthorized'}`, info.code, info.reason);
    }
    const detail = info ? ` (close code ${info.code}${info.reason ? `, ${info.reason}` : ''})` : '';
    return new ConnectionClosedError(`${prefix}${detail}`, info?.code, info?.reason);
  }
}
