/**
 * Credentialed API answers are never kept by a cache (issue 25): /api/auth/me carries the CSRF
 * token, key routes a merchant's data; every /api/* answer says Cache-Control: no-store.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { randomWallet, type TestApp, useTestApp } from './helpers/app.ts';
import { admin, signIn } from './helpers/session.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

describe('Cache-Control on API answers', () => {
  test('a session\'s /api/auth/me, a key\'s list and receipt, and their errors carry no-store', async () => {
    const s = await signIn(t);
    const me = await admin(t, s, 'GET', '/api/auth/me');
    assert.equal(me.status, 200);
    assert.ok(me.body.csrfToken);
    assert.equal(me.headers['cache-control'], 'no-store');
    const key = await t.key(randomWallet());
    for (const url of ['/api/receipts', '/api/receipts/nope', '/api/split/deploy']) {
      const res = await t.call(key, 'GET', url);
      assert.equal(res.headers['cache-control'], 'no-store', `${url} → ${res.status}`);
    }
    const refused = await t.call(null, 'GET', '/api/receipts');
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['cache-control'], 'no-store');
  });

  test('the sign-in answer that sets the cookie carries no-store', async () => {
    const res = await t.call(null, 'POST', '/api/auth/challenge', { wallet: randomWallet() });
    assert.equal(res.status, 200);
    assert.equal(res.headers['cache-control'], 'no-store');
  });
});
