// SPDX-License-Identifier: MIT
// The reconnect delays: doubling from the first, capped, spread by the jitter, back to the first on reset.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Backoff } from '../client';

test('backoff doubles up to its cap and resets', () => {
  const exact = new Backoff({ initialMs: 100, maxMs: 1000, factor: 2, jitter: 0 });
  assert.deepEqual([1, 2, 3, 4, 5, 6].map(() => exact.next()), [100, 200, 400, 800, 1000, 1000]);
  exact.reset();
  assert.equal(exact.next(), 100);

  const spread = new Backoff({ initialMs: 1000, maxMs: 1000, jitter: 0.2 });
  for (let i = 0; i < 100; i++) {
    const delay = spread.next();
    assert.ok(delay >= 800 && delay <= 1200, `${delay} within ±20%`);
  }
});
