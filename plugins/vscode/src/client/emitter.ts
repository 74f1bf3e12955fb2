// SPDX-License-Identifier: MIT
// A typed event emitter shaped like vscode.EventEmitter (event(listener) returns a disposable), so the
// views subscribe to the client the same way they subscribe to VS Code, without importing it here.

export interface Disposable {
  dispose(): void;
}

export type Event<T> = (listener: (value: T) => void) => Disposable;

export class Emitter<T> {
  private readonly listeners = new Set<(value: T) => void>();

  readonly event: Event<T> = (listener) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };

  fire(value: T): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(value);
      } catch (err) {
        // One faulty listener must not keep the others from seeing the event.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  dispose(): void {
    this.listeners.clear();
  }
}

/** Resolves with the first value the event fires that passes `accept`, or rejects after timeoutMs. */
export function nextEvent<T>(event: Event<T>, accept: (value: T) => boolean, timeoutMs: number, what = 'event'): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
    }, timeoutMs);
    const sub = event((value) => {
      if (!accept(value)) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(value);
    });
  });
}
