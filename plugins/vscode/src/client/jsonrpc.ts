// SPDX-License-Identifier: MIT
// JSON-RPC 2.0 as the bridge speaks it: requests with numeric ids, one answer per request (result or
// error), notifications with no id. No batches. Transport-free so it can be tested on its own.

import { ErrorCode, JobIssue } from './protocol';

/** An error object the bridge answered with: `{code, message, data}`. */
export class RpcError extends Error {
  override readonly name = 'RpcError';

  constructor(
    readonly code: number,
    message: string,
    readonly data: Record<string, unknown> | undefined,
    readonly method: string,
  ) {
    super(message);
  }

  /** The job's issues when a launch or check was refused for a bad job (-32602 with `issues`). */
  get issues(): JobIssue[] {
    const issues = this.data?.['issues'];
    if (!Array.isArray(issues)) return [];
    return issues.filter(
      (i): i is JobIssue => typeof i === 'object' && i !== null && typeof i.path === 'string' && typeof i.message === 'string',
    );
  }

  get isInvalidParams(): boolean {
    return this.code === ErrorCode.invalidParams;
  }

  /** One line for a person: the bridge's message plus the facts in `data` that name something. */
  describe(): string {
    const facts: string[] = [];
    for (const key of ['run', 'rank', 'host', 'field', 'method', 'state']) {
      const value = this.data?.[key];
      if (value !== undefined) facts.push(`${key} ${String(value)}`);
    }
    const issues = this.issues.map((i) => `${i.path}: ${i.message}`);
    const details = [...facts, ...issues];
    return details.length > 0 ? `${this.message} (${details.join('; ')})` : this.message;
  }
}

/** A request that got no answer in time. The connection stays usable. */
export class RpcTimeoutError extends Error {
  override readonly name = 'RpcTimeoutError';

  constructor(readonly method: string, readonly timeoutMs: number) {
    super(`${method}: no answer from the bridge within ${timeoutMs} ms`);
  }
}

/** The connection closed before an answer came; `closeCode` is the WebSocket close code when known. */
export class ConnectionClosedError extends Error {
  override readonly name: string = 'ConnectionClosedError';

  constructor(message: string, readonly closeCode?: number, readonly reason?: string) {
    super(message);
  }
}

/** The bridge refused the token (close code 4401: missing token, wrong token, not loopback). */
export class UnauthorizedError extends ConnectionClosedError {
  override readonly name = 'UnauthorizedError';
}

export interface ResponseMessage {
  kind: 'response';
  id: number | string;
  result?: unknown;
  error?: { code: number; message: string; data?: Record<string, unknown> };
}

export interface NotificationMessage {
  kind: 'notification';
  method: string;
  params: unknown;
}

/**
 * An error answered with `"id": null`: about a request the bridge could not read (not JSON, not an object)
 * or would not read (over the size limit: -32600 with `data.limit`).
 */
export interface UnattributedErrorMessage {
  kind: 'unattributed-error';
  error: { code: number; message: string; data?: Record<string, unknown> };
}

export interface InvalidMessage {
  kind: 'invalid';
  reason: string;
}

export type IncomingMessage = ResponseMessage | NotificationMessage | UnattributedErrorMessage | InvalidMessage;

export function encodeRequest(id: number, method: string, params: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params: params ?? {} });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function decodeMessage(text: string): IncomingMessage {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { kind: 'invalid', reason: `not JSON: ${(err as Error).message}` };
  }
  if (!isObject(value)) return { kind: 'invalid', reason: 'not a JSON object' };
  if (value['jsonrpc'] !== '2.0') return { kind: 'invalid', reason: 'jsonrpc is not "2.0"' };
  const id = value['id'];
  if (typeof value['method'] === 'string' && id === undefined) {
    return { kind: 'notification', method: value['method'], params: value['params'] };
  }
  if (typeof id === 'number' || typeof id === 'string') {
    const error = value['error'];
    if (error !== undefined) {
      if (!isObject(error) || typeof error['code'] !== 'number' || typeof error['message'] !== 'string') {
        return { kind: 'invalid', reason: `malformed error object for id ${id}` };
      }
      const data = isObject(error['data']) ? error['data'] : undefined;
      return { kind: 'response', id, error: { code: error['code'], message: error['message'], data } };
    }
    if (!('result' in value)) return { kind: 'invalid', reason: `response ${id} has neither result nor error` };
    return { kind: 'response', id, result: value['result'] };
  }
  if (id === null && isObject(value['error'])) {
    // An error about a request the bridge could not read (parse error, invalid request, too large).
    const error = value['error'];
    if (typeof error['code'] !== 'number' || typeof error['message'] !== 'string') {
      return { kind: 'invalid', reason: 'malformed error object without id' };
    }
    const data = isObject(error['data']) ? error['data'] : undefined;
    return { kind: 'unattributed-error', error: { code: error['code'], message: error['message'], data } };
  }
  return { kind: 'invalid', reason: 'neither a response nor a notification' };
}

interface Pending {
  method: string;
  /** The request's size on the wire (UTF-8 bytes). */
  bytes: number;
  resolve: (result: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** The requests sent and not yet answered, each with its own timeout. */
export class PendingRequests {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  /** Allocates an id and returns it with the promise of the answer. */
  add(method: string, timeoutMs: number): { id: number; answer: Promise<unknown> } {
    const id = this.nextId++;
    const answer = new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new RpcTimeoutError(method, timeoutMs));
      }, timeoutMs);
      this.pending.set(id, { method, bytes: 0, resolve, reject, timer });
    });
    return { id, answer };
  }

  /** Settles the request a response answers; false when no such request is waiting (late or unknown id). */
  settle(response: ResponseMessage): boolean {
    if (typeof response.id !== 'number') return false;
    const p = this.pending.get(response.id);
    if (!p) return false;
    this.pending.delete(response.id);
    clearTimeout(p.timer);
    if (response.error) {
      p.reject(new RpcError(response.error.code, response.error.message, response.error.data, p.method));
    } else {
      p.resolve(response.result);
    }
    return true;
  }

  /** Records a request's size on the wire (UTF-8 bytes of its frame), once it is encoded. */
  setBytes(id: number, bytes: number): void {
    const p = this.pending.get(id);
    if (p) p.bytes = bytes;
  }

  /**
   * Settles the request an error without id is about, when that can be told: a request over the size limit
   * (-32600 with `data.limit`) is the oldest one waiting that was larger than the limit. False otherwise.
   */
  settleUnattributed(message: UnattributedErrorMessage): boolean {
    const limit = message.error.data?.['limit'];
    if (message.error.code !== ErrorCode.invalidRequest || typeof limit !== 'number') return false;
    for (const [id, p] of this.pending) {
      if (p.bytes <= limit) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new RpcError(message.error.code, message.error.message, message.error.data, p.method));
      return true;
    }
    return false;
  }

  /** Fails one request (e.g. its frame could not be sent). */
  fail(id: number, err: Error): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.reject(err);
  }

  rejectAll(err: Error): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.pending.delete(id);
    }
  }

  get size(): number {
    return this.pending.size;
  }
}
