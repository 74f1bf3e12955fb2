// SPDX-License-Identifier: MIT
// JSON-RPC framing without a socket: decoding, typed errors, request timeouts.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeMessage, encodeRequest, PendingRequests, RpcError, RpcTimeoutError } from '../client';

describe('decoding', () => {
  test('a result', () => {
    assert.deepEqual(decodeMessage('{"jsonrpc":"2.0","id":3,"result":{"runs":[]}}'), { kind: 'response', id: 3, result: { runs: [] } });
  });
  test('an error with data', () => {
    const m = decodeMessage('{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"unknown method x","data":{"method":"x"}}}');
    assert.deepEqual(m, { kind: 'response', id: 4, error: { code: -32601, message: 'unknown method x', data: { method: 'x' } } });
  });
  test('a notification', () => {
    const m = decodeMessage('{"jsonrpc":"2.0","method":"run.events","params":{"run":"r","events":[]}}');
    assert.deepEqual(m, { kind: 'notification', method: 'run.events', params: { run: 'r', events: [] } });
  });
  const invalid: [string, string][] = [
    ['not JSON', '{'],
    ['an array (no batches)', '[]'],
    ['wrong version', '{"jsonrpc":"1.0","id":1,"result":1}'],
    ['neither result nor error', '{"jsonrpc":"2.0","id":1}'],
    ['a malformed error', '{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}'],
    ['a malformed error without id', '{"jsonrpc":"2.0","id":null,"error":{"message":"x"}}'],
  ];
  for (const [name, text] of invalid) test(`invalid: ${name}`, () => assert.equal(decodeMessage(text).kind, 'invalid'));
  test('requests always carry params', () => {
    assert.deepEqual(JSON.parse(encodeRequest(7, 'runs.list', undefined)), { jsonrpc: '2.0', id: 7, method: 'runs.list', params: {} });
  });
});

describe('pending requests', () => {
  test('ids increase; answers settle their own request', async () => {
    const p = new PendingRequests();
    const a = p.add('a', 1000);
    const b = p.add('b', 1000);
    assert.equal(b.id, a.id + 1);
    assert.equal(p.settle({ kind: 'response', id: b.id, result: 'B' }), true);
    assert.equal(p.settle({ kind: 'response', id: a.id, error: { code: -32001, message: 'no such run', data: { run: 'x' } } }), true);
    assert.equal(await b.answer, 'B');
    await assert.rejects(a.answer, (err: unknown) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.code, -32001);
      assert.equal(err.method, 'a');
      assert.deepEqual(err.data, { run: 'x' });
      assert.equal(err.describe(), 'no such run (run x)');
      return true;
    });
    assert.equal(p.settle({ kind: 'response', id: a.id, result: 1 }), false, 'a late answer settles nothing');
    assert.equal(p.size, 0);
  });

  test('a request without an answer times out', async () => {
    const p = new PendingRequests();
    const { answer } = p.add('run.get', 30);
    await assert.rejects(answer, (err: unknown) => err instanceof RpcTimeoutError && err.method === 'run.get' && err.timeoutMs === 30);
    assert.equal(p.size, 0);
  });

  test('a job refused lists its issues', () => {
    const err = new RpcError(-32602, 'invalid job', { field: 'job', issues: [{ path: 'nodes[0].port', message: 'must be 1-65535' }, 'junk'] }, 'run.launch');
    assert.deepEqual(err.issues, [{ path: 'nodes[0].port', message: 'must be 1-65535' }]);
    assert.equal(err.isInvalidParams, true);
    assert.match(err.describe(), /nodes\[0\]\.port: must be 1-65535/);
  });
});

describe('errors without id', () => {
  test('are decoded with their code, message and data', () => {
    const m = decodeMessage('{"error":{"code":-32600,"data":{"limit":4194304},"message":"request too large"},"id":null,"jsonrpc":"2.0"}');
    assert.deepEqual(m, { kind: 'unattributed-error', error: { code: -32600, message: 'request too large', data: { limit: 4194304 } } });
    const parse = decodeMessage('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":{"offset":3}}}');
    assert.deepEqual(parse, { kind: 'unattributed-error', error: { code: -32700, message: 'x', data: { offset: 3 } } });
  });

  test('a request over the limit is failed by the -32600 naming the limit; others wait on', async () => {
    const p = new PendingRequests();
    const small = p.add('bridge.hello', 1000);
    const big = p.add('run.launch', 1000);
    const bigger = p.add('run.launch', 1000);
    p.setBytes(small.id, 100);
    p.setBytes(big.id, 5 * 1024 * 1024);
    p.setBytes(bigger.id, 6 * 1024 * 1024);
    const error = { code: -32600, message: 'request too large', data: { limit: 4 * 1024 * 1024 } };
    assert.equal(p.settleUnattributed({ kind: 'unattributed-error', error }), true);
    await assert.rejects(big.answer, (err: unknown) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.code, -32600);
      assert.equal(err.method, 'run.launch');
      assert.deepEqual(err.data, { limit: 4 * 1024 * 1024 });
      return true;
    });
    assert.equal(p.size, 2, 'the oldest request over the limit, only');
    assert.equal(p.settleUnattributed({ kind: 'unattributed-error', error: { code: -32700, message: 'x', data: { offset: 1 } } }), false);
    assert.equal(p.settleUnattributed({ kind: 'unattributed-error', error }), true);
    await assert.rejects(bigger.answer, RpcError);
    assert.equal(p.settleUnattributed({ kind: 'unattributed-error', error }), false, 'no request over the limit is left');
    assert.equal(p.settle({ kind: 'response', id: small.id, result: 'ok' }), true);
    assert.equal(await small.answer, 'ok');
  });
});
