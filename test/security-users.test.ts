/**
 * The user directory, as an attacker tried it (issue 25): a throw-away wallet's session, or a key
 * it issues itself, reads nothing (users:read is granted by a superadmin only); and a user whose
 * space is not public shows when it was last seen only to the UTC day, so polling the directory
 * does not tell when it is online.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { randomWallet, type TestApp, useTestApp } from './helpers/app.ts';
import { admin, newAccount, signIn } from './helpers/session.ts';

const DAY = 86_400_000;
let t: TestApp;
const superAccount = newAccount();
useTestApp({ SUPERADMIN_WALLETS: superAccount.address }, (app) => (t = app));

describe('users:read', () => {
  test('a throw-away wallet: its session and every key it issues itself are refused the directory', async () => {
    const s = await signIn(t);
    for (const url of ['/api/users/search?q=a', '/api/users/live']) {
      const res = await admin(t, s, 'GET', url);
      assert.equal(res.status, 403, `${url}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'forbidden');
    }
    for (const product of ['full', 'readonly']) {
      const created = await admin(t, s, 'POST', '/api/admin/subscriptions', { product });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.ok(!created.body.scopes.includes('users:read'), `${product}: ${created.body.scopes.join(',')}`);
      assert.equal((await t.call(created.body.primaryKey, 'GET', '/api/users/search?q=a')).status, 403);
      assert.equal((await t.call(created.body.primaryKey, 'GET', '/api/users/live')).status, 403);
      // The rest of the product still works.
      assert.equal((await t.call(created.body.primaryKey, 'GET', '/api/receipts')).status, 200);
    }
    const asked = await admin(t, s, 'POST', '/api/admin/subscriptions', { product: 'full', scopes: ['receipts:read', 'users:read'] });
    assert.equal(asked.status, 403);
    assert.match(asked.body.message, /Only a superadmin grants users:read/);
  });

  test('a superadmin grants it: the key it creates for a merchant reads the directory, and so does its own session', async () => {
    const sup = await signIn(t, superAccount);
    const merchant = randomWallet();
    const created = await admin(t, sup, 'POST', '/api/admin/subscriptions', { wallet: merchant, product: 'readonly' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.ok(created.body.scopes.includes('users:read'));
    assert.equal((await t.call(created.body.primaryKey, 'GET', '/api/users/search?q=a')).status, 200);
    assert.equal((await admin(t, sup, 'GET', '/api/users/live')).status, 200);
  });
});

describe('presence of users whose space is not public', () => {
  test('lastSeen and lastHeartbeat are the start of their UTC day, integers; a public user keeps the millisecond', async () => {
    const now = Date.now();
    const seen = now - 1234;
    const tag = `presence${now}`;
    const hidden = randomWallet();
    const shown = randomWallet();
    await t.deps.users.upsert(
      [
        { wallet: hidden, displayName: `${tag} hidden`, xp: 5, live: true, spacePublic: false, lastSeen: seen, lastHeartbeat: seen },
        { wallet: shown, displayName: `${tag} shown`, xp: 4, live: true, spacePublic: true, lastSeen: seen, lastHeartbeat: seen },
      ],
      now,
    );
    const key = await t.key(randomWallet(), { scopes: ['users:read'] });
    const res = await t.call(key, 'GET', `/api/users/search?q=${tag}`);
    assert.equal(res.status, 200);
    const byWallet = new Map(res.body.users.map((u: { wallet: string }) => [u.wallet, u]));
    const h = byWallet.get(hidden) as { live: boolean; lastSeen: number; lastHeartbeat: number };
    const p = byWallet.get(shown) as { live: boolean; lastSeen: number; lastHeartbeat: number };
    const day = seen - (seen % DAY);
    assert.deepEqual([h.live, h.lastSeen, h.lastHeartbeat], [false, day, day]);
    assert.ok(Number.isInteger(h.lastSeen) && Number.isInteger(h.lastHeartbeat));
    assert.deepEqual([p.live, p.lastSeen, p.lastHeartbeat], [true, seen, seen]);
    // A heartbeat a minute later is not visible either.
    await t.deps.users.upsert([{ wallet: hidden, displayName: `${tag} hidden`, xp: 5, live: true, spacePublic: false, lastSeen: seen + 60_000, lastHeartbeat: seen + 60_000 }], now);
    const again = await t.call(key, 'GET', `/api/users/search?q=${tag}`);
    const h2 = again.body.users.find((u: { wallet: string }) => u.wallet === hidden);
    assert.equal(h2.lastHeartbeat, (seen + 60_000) - ((seen + 60_000) % DAY));
  });
});
