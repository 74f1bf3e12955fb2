// SPDX-License-Identifier: MIT
// Where the client says what it does. The extension writes to an output channel, tests to nowhere or stderr.
// Nothing logged here ever contains the bridge's token: URLs are logged without query strings and the
// token only travels in the Authorization header.

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined };

export const stderrLogger: Logger = {
  info: (message) => process.stderr.write(`[rankscope] ${message}\n`),
  warn: (message) => process.stderr.write(`[rankscope] warning: ${message}\n`),
};

/** A URL safe to log: any query string (which may hold ?token=) is cut off. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : `${url.slice(0, q)}?…`;
}
