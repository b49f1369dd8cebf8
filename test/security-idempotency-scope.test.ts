/**
 * A sensitive status's Idempotency-Key belongs to the signed-in wallet (issue 25): two merchants
 * behind one address, each sending checkout_success with the same key, each get their own answer
 * and their own receipt moved, never the other's 409 or replay.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type TestApp, useTestApp } from './helpers/app.ts';
import { admin, signIn, type Session } from './helpers/session.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

async function receiptOf(s: Session, id: string): Promise<void> {
  const key = await t.key(s.wallet);
  const res = await t.call(key, 'POST', '/api/receipts', { id, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 });
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

describe('Idempotency-Key of sensitive statuses', () => {
  test('two merchants at one address with the same key: both succeed, each on its own receipt', async () => {
    const a = await signIn(t);
    const b = await signIn(t);
    await receiptOf(a, 'idem-a');
    await receiptOf(b, 'idem-b');
    const headers = { 'idempotency-key': 'checkout-1' };
    const first = await admin(t, a, 'POST', '/api/receipts/status', { receiptId: 'idem-a', wallet: a.wallet, status: 'checkout_success' }, headers);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const second = await admin(t, b, 'POST', '/api/receipts/status', { receiptId: 'idem-b', wallet: b.wallet, status: 'checkout_success' }, headers);
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.equal(second.headers['idempotent-replayed'], undefined);
    for (const [s, id] of [[a, 'idem-a'], [b, 'idem-b']] as const) {
      const detail = await t.call(await t.key(s.wallet), 'GET', `/api/receipts/${id}`);
      assert.equal(detail.body.status, 'checkout_success', id);
    }
    // The same merchant retrying with the key is answered as the first time (replayed).
    const retry = await admin(t, a, 'POST', '/api/receipts/status', { receiptId: 'idem-a', wallet: a.wallet, status: 'checkout_success' }, headers);
    assert.equal(retry.status, 200);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    // And a wrong CSRF token is still 403, never a replay of another's answer.
    const forged = await t.call(null, 'POST', '/api/receipts/status', { receiptId: 'idem-a', wallet: a.wallet, status: 'checkout_success' }, {
      ...headers,
      cookie: a.cookie,
      'x-csrf-token': 'wrong',
      origin: 'http://pay.test',
    });
    assert.equal(forged.status, 403);
  });
});
