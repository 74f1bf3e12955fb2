// SPDX-License-Identifier: MIT
// The bridge client: everything the extension needs that does not need VS Code (and is tested without it).

export * from './client';
export * from './connection';
export * from './connectionFile';
export * from './emitter';
export * from './jsonrpc';
export * from './logger';
export * from './protocol';
export * from './runStore';
export * from './runTracker';
export * from './debugConfig';
