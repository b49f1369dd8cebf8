/**
 * Caps the database enforces, under concurrent requests (a pool of real connections on
 * PostgreSQL with DATABASE_URL set; PGlite otherwise): exactly the cap succeeds, however many
 * requests race for it. Subscriptions per merchant, webhook endpoints per merchant, server-side
 * split deployments per wallet and per day.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { slotsTaken, takeSlot } from '../src/db/counters.ts';
import { RateLimited } from '../src/lib/errors.ts';
import { MAX_SPLIT_DEPLOYS_PER_WALLET_PER_DAY, PLATFORM_COUNTER_WALLET, setUpSplit, type SplitChain } from '../src/domain/split-setup.ts';
import { MAX_SUBSCRIPTIONS_PER_MERCHANT } from '../src/gateway/subscriptions.ts';
import { MAX_ENDPOINTS } from '../src/webhooks/endpoints.ts';
import { randomWallet, type Res, type TestApp, useTestApp } from './helpers/app.ts';
import { admin, signIn } from './helpers/session.ts';
import { until } from './helpers/wait.ts';

const PLATFORM = '0x000000000000000000000000000000000000beef';
let t: TestApp;
useTestApp({}, (app) => (t = app));

const statuses = (all: Res[]) => all.map((r) => r.status).sort().join(',');
const count = (all: Res[], status: number) => all.filter((r) => r.status === status).length;

describe('the counter primitive', () => {
  test('50 concurrent transactions racing for 7 slots: exactly 7 get one', async () => {
    const db = t.deps.database.db;
    const wallet = randomWallet();
    const taken = await Promise.all(Array.from({ length: 50 }, () => db.transaction((tx) => takeSlot(tx, wallet, 'race', 7))));
    assert.equal(taken.filter(Boolean).length, 7);
    assert.equal(await slotsTaken(db, wallet, 'race'), 7);
  });

  test('a slot taken in a transaction that rolls back is given back', async () => {
    const db = t.deps.database.db;
    const wallet = randomWallet();
    await assert.rejects(
      db.transaction(async (tx) => {
        assert.equal(await takeSlot(tx, wallet, 'rolled', 1), true);
        throw new Error('the write failed');
      }),
      /the write failed/,
    );
    assert.equal(await slotsTaken(db, wallet, 'rolled'), 0);
    assert.equal(await db.transaction((tx) => takeSlot(tx, wallet, 'rolled', 1)), true);
  });
});

describe(`subscriptions: at most ${MAX_SUBSCRIPTIONS_PER_MERCHANT} active per merchant`, () => {
  test('30 concurrent creations: exactly the cap succeeds; a revocation frees one slot', async () => {
    const s = await signIn(t);
    // maxActive in the body is not the caller's to set: it must not lift the cap.
    const created = await Promise.all(
      Array.from({ length: 30 }, (_, i) => admin(t, s, 'POST', '/api/admin/subscriptions', { name: `k${i}`, maxActive: 1000 })),
    );
    assert.equal(count(created, 201), MAX_SUBSCRIPTIONS_PER_MERCHANT, statuses(created));
    assert.equal(count(created, 400), 30 - MAX_SUBSCRIPTIONS_PER_MERCHANT, statuses(created));
    const refused = created.find((r) => r.status === 400)!;
    assert.equal(refused.body.error, 'invalid_input');
    assert.match(refused.body.message, new RegExp(`At most ${MAX_SUBSCRIPTIONS_PER_MERCHANT} active subscriptions`));
    const listed = await admin(t, s, 'GET', '/api/admin/subscriptions');
    assert.equal(listed.body.subscriptions.length, MAX_SUBSCRIPTIONS_PER_MERCHANT);

    const one = created.find((r) => r.status === 201)!.body.id as string;
    assert.equal((await admin(t, s, 'DELETE', `/api/admin/subscriptions/${one}`)).status, 200);
    const again = await Promise.all(Array.from({ length: 5 }, () => admin(t, s, 'POST', '/api/admin/subscriptions', {})));
    assert.equal(count(again, 201), 1, statuses(again));
    // Revoking twice frees nothing more.
    assert.equal((await admin(t, s, 'DELETE', `/api/admin/subscriptions/${one}`)).status, 200);
    assert.equal((await admin(t, s, 'POST', '/api/admin/subscriptions', {})).status, 400);
  });
});

describe(`webhook endpoints: at most ${MAX_ENDPOINTS} per merchant`, () => {
  test('25 concurrent registrations: exactly the cap succeeds; a deletion frees one slot', async () => {
    const s = await signIn(t);
    const url = (i: number) => `https://93.184.215.14/hooks/${i}`;
    const created = await Promise.all(Array.from({ length: 25 }, (_, i) => admin(t, s, 'POST', '/api/admin/webhooks', { url: url(i) })));
    assert.equal(count(created, 201), MAX_ENDPOINTS, statuses(created));
    assert.equal(count(created, 400), 25 - MAX_ENDPOINTS, statuses(created));
    assert.match(created.find((r) => r.status === 400)!.body.message, /At most 10 webhook endpoints per merchant/);
    const listed = await admin(t, s, 'GET', '/api/admin/webhooks');
    assert.equal(listed.body.webhooks.length, MAX_ENDPOINTS);

    const one = created.find((r) => r.status === 201)!.body.id as string;
    assert.equal((await admin(t, s, 'DELETE', `/api/admin/webhooks/${one}`)).status, 200);
    const again = await Promise.all(Array.from({ length: 5 }, (_, i) => admin(t, s, 'POST', '/api/admin/webhooks', { url: url(100 + i) })));
    assert.equal(count(again, 201), 1, statuses(again));
  });
});

describe('server-side split deployments', () => {
  /**
   * A deployer that counts its deployments. With `gate`, each deployment waits for it to open, so
   * no configuration is stored before every racing call has asked for its slot.
   */
  function countingChain(deploysPerDay?: number, gate?: Promise<void>): SplitChain & { deployed: number } {
    const chain = {
      deployed: 0,
      ...(deploysPerDay === undefined ? {} : { deploysPerDay }),
      verify: async () => ({ ok: true }) as const,
      deploy: async () => {
        chain.deployed++;
        await gate;
        return randomWallet();
      },
    };
    return chain;
  }
  const recipientsOf = (wallet: string) => [
    { address: wallet, sharesBps: 9950 },
    { address: PLATFORM, sharesBps: 50 },
  ];
  const platform = { address: PLATFORM, feeBps: 50 };
  const settle = <T>(all: Promise<T>[]) => Promise.allSettled(all);

  test(`10 concurrent first set-ups of one wallet deploy at most ${MAX_SPLIT_DEPLOYS_PER_WALLET_PER_DAY} contracts; the rest are 429 until tomorrow`, async () => {
    const db = t.deps.database.db;
    const wallet = randomWallet();
    let open!: () => void;
    const chain = countingChain(undefined, new Promise<void>((r) => (open = r)));
    const now = Date.now();
    let settled = 0;
    const calls = Array.from({ length: 10 }, () => setUpSplit(db, wallet, { recipients: recipientsOf(wallet) }, platform, now, chain));
    for (const call of calls) call.then(() => settled++, () => settled++);
    await until(() => chain.deployed + settled === 10, 10_000, 'every call to deploy or be refused', 5);
    open();
    const results = await settle(calls);
    assert.equal(chain.deployed, MAX_SPLIT_DEPLOYS_PER_WALLET_PER_DAY);
    const refused = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
    assert.equal(refused.length, 10 - MAX_SPLIT_DEPLOYS_PER_WALLET_PER_DAY);
    for (const err of refused) {
      assert.ok(err instanceof RateLimited, String(err));
      assert.equal(err.extra.resetAt, Date.parse(new Date(now).toISOString().slice(0, 10)) + 86_400_000);
      assert.match(err.message, /deployed for it today/);
    }
    // One configuration was stored; every later call answers it without deploying.
    const stored = results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
    assert.equal(new Set(stored.map((v) => v.split.address)).size, 1);
    const later = await setUpSplit(db, wallet, { recipients: recipientsOf(wallet) }, platform, now, chain);
    assert.equal(later.idempotent, true);
    assert.equal(chain.deployed, MAX_SPLIT_DEPLOYS_PER_WALLET_PER_DAY);
  });

  test('the platform-wide daily budget holds across wallets, and gives a refused wallet its slot back', async () => {
    const db = t.deps.database.db;
    const chain = countingChain(2);
    const day = Date.parse('2031-03-04T10:00:00Z');
    const wallets = Array.from({ length: 6 }, () => randomWallet());
    const results = await settle(wallets.map((w) => setUpSplit(db, w, { recipients: recipientsOf(w) }, platform, day, chain)));
    assert.equal(chain.deployed, 2);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 2);
    const refused = results.filter((r) => r.status === 'rejected').map((r) => r.reason as RateLimited);
    assert.equal(refused.length, 4);
    for (const err of refused) assert.match(err.message, /platform has spent its budget/);
    assert.equal(await slotsTaken(db, PLATFORM_COUNTER_WALLET, 'split_deploys:2031-03-04'), 2);
    const perWallet = await Promise.all(wallets.map((w) => slotsTaken(db, w, 'split_deploys:2031-03-04')));
    assert.deepEqual(perWallet.sort(), [0, 0, 0, 0, 1, 1], 'the refused wallets hold no slot');

    // The next UTC day has a new budget.
    const waiting = wallets[results.findIndex((r) => r.status === 'rejected')]!;
    const tomorrow = await setUpSplit(db, waiting, { recipients: recipientsOf(waiting) }, platform, day + 86_400_000, chain);
    assert.equal(tomorrow.idempotent, false);
    assert.equal(chain.deployed, 3);
  });

  test('SPLIT_DEPLOYS_PER_DAY: 100 off the dev chain, 0 turns server-side deployments off', async () => {
    const db = t.deps.database.db;
    const wallet = randomWallet();
    const off = countingChain(0);
    await assert.rejects(setUpSplit(db, wallet, { recipients: recipientsOf(wallet) }, platform, Date.now(), off), RateLimited);
    assert.equal(off.deployed, 0);
  });
});
