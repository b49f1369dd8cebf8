/**
 * One security matrix for every developer route the app registers (a route with a scope or
 * `auth: 'key'`), generated from the registration, so a new route is in it: no key, an unknown key, a malformed key, a
 * revoked key and a rotated-away key are 401; a key holding every scope but the route's is 403;
 * the route's scope alone is enough. Then "other merchant's data": another merchant's rows are
 * never visible or usable. Each (route, case) is its own test. How to call a route is the one thing
 * kept by hand (DEVELOPER_CALLS); a registered route without it fails the first test.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { recordSplitTransaction } from '../src/domain/split-transactions.ts';
import { saveShopConfig } from '../src/domain/shop.ts';
import { storeSplitConfig } from '../src/domain/splits.ts';
import { webhookEvents } from '../src/db/schema.ts';
import { SCOPES, type Scope } from '../src/gateway/scopes.ts';
import { createSubscription, revokeSubscription, rotateKey } from '../src/gateway/subscriptions.ts';
import { randomWallet, startTestApp, type Res } from './helpers/app.ts';
import { DEVELOPER_CALLS, EVENT_ID, RECEIPT_ID, SKU, developerOperations, developerRoutes, type Route } from './helpers/developer-routes.ts';
import { registeredRoutes } from './helpers/routes.ts';

const uniq = () => randomBytes(6).toString('hex');
/** The matrix gives one merchant a key per (route, case): far more than a merchant may hold. */
const MATRIX_KEYS = 10_000;


// Built while the file loads: the matrix's tests are made from the routes it registered.
const t = await startTestApp();
const registered = registeredRoutes(t.app);
/** The merchant every matrix call acts for: split configured, one receipt, one inventory item. */
let merchant: string;

before(async () => {
  merchant = randomWallet();
  await storeSplitConfig(t.deps.database.db, merchant, {
    address: null,
    recipients: [
      { address: merchant, sharesBps: 9950 },
      { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 },
    ],
  });
  const full = await t.key(merchant);
  const setup = [
    await t.call(full, 'POST', '/api/receipts', { id: RECEIPT_ID, lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 }),
    await t.call(full, 'POST', '/api/inventory', { sku: SKU, name: 'Coffee', priceUsd: 3, stockQty: -1 }),
  ];
  for (const res of setup) assert.ok(res.status === 200 || res.status === 201, `set-up: ${res.status} ${JSON.stringify(res.body)}`);
  await t.deps.database.db.insert(webhookEvents).values({
    wallet: merchant,
    id: EVENT_ID,
    type: 'receipt.expired',
    payload: { type: 'receipt.expired', timestamp: new Date().toISOString(), data: { receiptId: RECEIPT_ID } },
    dedupeKey: `receipt.expired:${RECEIPT_ID}`,
    createdAt: Date.now(),
  });
});
after(async () => {
  await t.close();
});

function send(route: Route, key: string | null): Promise<Res> {
  return t.call(key, route.method, route.url, route.body?.());
}

function assertRefused(res: Res, status: 401 | 403, code: string): void {
  assert.equal(res.status, status, `expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  assert.equal(typeof res.body, 'object');
  assert.equal(res.body.error, code);
  assert.equal(typeof res.body.message, 'string');
  assert.ok(res.body.message.length > 0, 'the message says what went wrong');
  assert.ok(res.headers['x-correlation-id'], 'refusals carry a correlation id');
}

async function keyWith(scopes: Scope[]): Promise<string> {
  return (await createSubscription(t.deps.database.db, { wallet: merchant, scopes, rateLimitPerMinute: 100_000, maxActive: MATRIX_KEYS, grantedBySuperadmin: true })).primaryKey;
}

interface Case {
  name: (r: Route) => string;
  applies: (r: Route) => boolean;
  run: (r: Route) => Promise<void>;
}

const CASES: Case[] = [
  {
    name: () => 'no key is 401 unauthorized',
    applies: () => true,
    run: async (r) => assertRefused(await send(r, null), 401, 'unauthorized'),
  },
  {
    name: () => 'an empty key header is 401 unauthorized',
    applies: () => true,
    run: async (r) => assertRefused(await send(r, ''), 401, 'unauthorized'),
  },
  {
    name: () => 'an unknown well-formed key is 401 unauthorized',
    applies: () => true,
    run: async (r) => assertRefused(await send(r, `spl_${randomBytes(32).toString('base64url')}`), 401, 'unauthorized'),
  },
  {
    name: () => 'a malformed key is 401 unauthorized',
    applies: () => true,
    run: async (r) => assertRefused(await send(r, 'not-a-key'), 401, 'unauthorized'),
  },
  {
    name: () => 'a forged admin session cookie instead of a key is 401 unauthorized',
    applies: () => true,
    run: async (r) => {
      const res = await t.call(null, r.method, r.url, r.body?.(), { cookie: 'cb_auth_token=forged.session.token' });
      assertRefused(res, 401, 'unauthorized');
    },
  },
  {
    name: () => 'HEAD without a key is 401',
    applies: (r) => r.method === 'GET',
    run: async (r) => {
      const res = await t.app.inject({ method: 'HEAD', url: r.url });
      assert.equal(res.statusCode, 401);
    },
  },
  {
    name: () => 'a revoked key is 401 unauthorized',
    applies: () => true,
    run: async (r) => {
      const sub = await createSubscription(t.deps.database.db, { wallet: merchant, maxActive: MATRIX_KEYS });
      await revokeSubscription(t.deps.database.db, sub.id);
      assertRefused(await send(r, sub.primaryKey), 401, 'unauthorized');
      assertRefused(await send(r, sub.secondaryKey), 401, 'unauthorized');
    },
  },
  {
    name: () => 'a rotated-away key is 401 unauthorized',
    applies: () => true,
    run: async (r) => {
      const sub = await createSubscription(t.deps.database.db, { wallet: merchant, maxActive: MATRIX_KEYS });
      await rotateKey(t.deps.database.db, sub.id, 'primary');
      assertRefused(await send(r, sub.primaryKey), 401, 'unauthorized');
    },
  },
  {
    name: (r) => `every scope but ${r.scope} is 403 forbidden`,
    applies: (r) => r.scope !== undefined,
    run: async (r) => {
      const key = await keyWith(SCOPES.filter((s) => s !== r.scope));
      const res = await send(r, key);
      assertRefused(res, 403, 'forbidden');
      assert.match(res.body.message, new RegExp(String(r.scope)), 'the message names the missing scope');
    },
  },
  {
    name: (r) => (r.scope === undefined ? 'a key with no scopes at all is let through' : `${r.scope} alone is let through`),
    applies: () => true,
    run: async (r) => {
      const res = await send(r, await keyWith(r.scope === undefined ? [] : [r.scope]));
      assert.ok(![401, 403, 404].includes(res.status), `got ${res.status} ${JSON.stringify(res.body)}`);
      // The matrix's app has no chain: a route that reads it answers from its handler, past auth.
      if (r.readsChain === true && res.status === 503 && res.body.error === 'chain_unavailable') return;
      assert.ok(res.status < 500, `got ${res.status} ${JSON.stringify(res.body)}`);
    },
  },
];

test('every registered developer route has a call in DEVELOPER_CALLS, and every call a route', () => {
  const operations = developerOperations(registered).map((r) => `${r.method} ${r.path}`);
  assert.ok(operations.length >= 14, `only ${operations.length} developer routes registered`);
  assert.deepEqual(operations.filter((o) => DEVELOPER_CALLS[o] === undefined), [], 'registered developer routes the matrix cannot call');
  assert.deepEqual(Object.keys(DEVELOPER_CALLS).filter((o) => !operations.includes(o)), [], 'calls for routes that are not registered with a key');
});

for (const route of developerRoutes(registered)) {
  describe(`${route.method} ${route.path}`, () => {
    for (const c of CASES) {
      if (c.applies(route)) test(c.name(route), () => c.run(route));
    }
  });
}

describe("other merchant's data", () => {
  /** Merchant O, with data carrying markers that must never reach merchant M. */
  let other: { wallet: string; key: string; receiptId: string; sku: string; splitAddress: string; txHash: string; shopName: string };
  let mine: string;

  before(async () => {
    const db = t.deps.database.db;
    const wallet = randomWallet();
    other = {
      wallet,
      key: await t.key(wallet),
      receiptId: `other-${uniq()}`,
      sku: `other-sku-${uniq()}`,
      splitAddress: randomWallet(),
      txHash: '0x' + randomBytes(32).toString('hex'),
      shopName: `Other Shop ${uniq()}`,
    };
    await storeSplitConfig(db, wallet, {
      address: other.splitAddress,
      recipients: [
        { address: wallet, sharesBps: 9950 },
        { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 },
      ],
    });
    await saveShopConfig(db, wallet, { processingFeePct: 1.5, name: other.shopName });
    await recordSplitTransaction(db, {
      wallet,
      kind: 'payment',
      splitAddress: other.splitAddress,
      counterparty: randomWallet(),
      receiptId: other.receiptId,
      amountUnits: '2000000',
      feeUnits: '10000',
      currency: 'USDC',
      status: 'received',
      transactionHash: other.txHash,
      logIndex: 0,
      blockNumber: 1n,
      timestamp: Date.now(),
    });
    const setup = [
      await t.call(other.key, 'POST', '/api/receipts', { id: other.receiptId, lineItems: [{ label: 'Secret', priceUsd: 5 }], totalUsd: 5 }),
      await t.call(other.key, 'POST', '/api/inventory', { sku: other.sku, name: 'Secret item', priceUsd: 7, stockQty: 3 }),
    ];
    for (const res of setup) assert.ok(res.status === 200 || res.status === 201, `set-up: ${res.status} ${JSON.stringify(res.body)}`);
    mine = await t.key(merchant);
  });

  test("GET /api/receipts/{id}: another merchant's receipt is 404 not_found", async () => {
    assert.equal((await t.call(other.key, 'GET', `/api/receipts/${other.receiptId}`)).status, 200, 'control: the owner sees it');
    const res = await t.call(mine, 'GET', `/api/receipts/${other.receiptId}`);
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'not_found');
    assert.equal(typeof res.body.message, 'string');
  });

  test("GET /api/receipts/status: another merchant's receipt is 404 not_found", async () => {
    const url = `/api/receipts/status?receiptId=${other.receiptId}`;
    assert.equal((await t.call(other.key, 'GET', url)).status, 200, 'control: the owner sees it');
    const res = await t.call(mine, 'GET', url);
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'not_found');
    assert.equal(typeof res.body.message, 'string');
  });

  /** Lists: the owner's answer carries the marker (so the check is not vacuous); M's never does. */
  const LISTS: { name: string; url: () => string; marker: () => string }[] = [
    { name: 'GET /api/receipts', url: () => '/api/receipts?limit=200', marker: () => other.receiptId },
    { name: 'GET /api/inventory', url: () => '/api/inventory', marker: () => other.sku },
    { name: 'GET /api/split/transactions', url: () => '/api/split/transactions', marker: () => other.txHash },
    {
      name: "GET /api/split/transactions?address=<the other merchant's split>",
      url: () => `/api/split/transactions?address=${other.splitAddress}`,
      marker: () => other.txHash,
    },
    { name: 'GET /api/split/deploy', url: () => '/api/split/deploy', marker: () => other.splitAddress.toLowerCase() },
    { name: 'GET /api/split/settlements', url: () => '/api/split/settlements', marker: () => other.txHash },
    { name: 'GET /api/split/settlements?format=csv', url: () => '/api/split/settlements?format=csv', marker: () => other.receiptId },
    { name: 'GET /api/shop/config', url: () => '/api/shop/config', marker: () => other.shopName },
  ];
  for (const list of LISTS) {
    test(`${list.name} never includes the other merchant's rows`, async () => {
      const theirs = await t.call(other.key, 'GET', list.url());
      assert.equal(theirs.status, 200);
      assert.ok(JSON.stringify(theirs.body).toLowerCase().includes(list.marker().toLowerCase()), 'control: the owner sees it');
      const res = await t.call(mine, 'GET', list.url());
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok(!JSON.stringify(res.body).toLowerCase().includes(list.marker().toLowerCase()), JSON.stringify(res.body));
    });
  }

  test("POST /api/orders: another merchant's sku is not for sale to this merchant", async () => {
    const res = await t.call(mine, 'POST', '/api/orders', { items: [{ sku: other.sku, qty: 1 }] });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error, 'inventory_item_not_found');
    const stock = await t.call(other.key, 'GET', '/api/inventory');
    const item = stock.body.items.find((i: { sku: string }) => i.sku === other.sku);
    assert.equal(item.stockQty, 3, "the other merchant's stock is untouched");
  });

  test("POST /api/inventory: the same sku creates this merchant's own item and leaves the other's alone", async () => {
    const res = await t.call(mine, 'POST', '/api/inventory', { sku: other.sku, name: 'Mine now?', priceUsd: 1 });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const stock = await t.call(other.key, 'GET', '/api/inventory');
    const item = stock.body.items.find((i: { sku: string }) => i.sku === other.sku);
    assert.equal(item.name, 'Secret item');
    assert.equal(item.priceUsd, 7);
  });

  test("POST /api/receipts: another merchant's receipt id is a separate receipt, not a conflict", async () => {
    const res = await t.call(mine, 'POST', '/api/receipts', { id: other.receiptId, lineItems: [{ label: 'Mine', priceUsd: 1 }], totalUsd: 1 });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const theirs = await t.call(other.key, 'GET', `/api/receipts/${other.receiptId}`);
    assert.equal(theirs.body.totalUsd, 5, "the other merchant's receipt is unchanged");
  });
});
