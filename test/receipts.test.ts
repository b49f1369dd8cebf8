import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { saveShopConfig } from '../src/domain/shop.ts';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => {
  await t.close();
});

const body = (id: string) => ({
  id,
  lineItems: [
    { label: 'Coffee', priceUsd: 3.5, qty: 2 },
    { label: 'Bagel', priceUsd: 2.25 },
  ],
  totalUsd: 9.25,
});

describe('POST /api/receipts', () => {
  test('creates a pending receipt with an unguessable payment URL', async () => {
    const key = await t.key(randomWallet());
    const res = await t.call(key, 'POST', '/api/receipts', body('1001'));
    assert.equal(res.status, 201);
    assert.equal(res.body.id, '1001');
    assert.equal(res.body.status, 'pending');
    assert.match(res.body.paymentUrl, /^http:\/\/pay\.test\/pay\/1001\?t=[A-Za-z0-9_-]{22}$/);
    assert.ok(res.headers['x-correlation-id']);
  });

  test('the same id and body answers as the first call; a different body is 409 conflict', async () => {
    const key = await t.key(randomWallet());
    const first = await t.call(key, 'POST', '/api/receipts', body('r-1'));
    const again = await t.call(key, 'POST', '/api/receipts', body('r-1'));
    assert.equal(again.status, 201);
    assert.deepEqual(again.body, first.body);
    const changed = await t.call(key, 'POST', '/api/receipts', { ...body('r-1'), totalUsd: 9.26 });
    assert.equal(changed.status, 400);
    const other = await t.call(key, 'POST', '/api/receipts', {
      id: 'r-1',
      lineItems: [{ label: 'Tea', priceUsd: 1 }],
      totalUsd: 1,
    });
    assert.equal(other.status, 409);
    assert.equal(other.body.error, 'conflict');
  });

  test('two merchants may use the same id', async () => {
    const a = await t.key(randomWallet());
    const b = await t.key(randomWallet());
    assert.equal((await t.call(a, 'POST', '/api/receipts', body('shared'))).status, 201);
    assert.equal((await t.call(b, 'POST', '/api/receipts', body('shared'))).status, 201);
  });

  for (const [name, bad] of [
    ['missing id', { lineItems: [{ label: 'A', priceUsd: 1 }], totalUsd: 1 }],
    ['missing lineItems', { id: 'x', totalUsd: 1 }],
    ['empty lineItems', { id: 'x', lineItems: [], totalUsd: 0 }],
    ['price as a string', { id: 'x', lineItems: [{ label: 'A', priceUsd: '1' }], totalUsd: 1 }],
    ['negative price', { id: 'x', lineItems: [{ label: 'A', priceUsd: -1 }], totalUsd: -1 }],
    ['three decimals', { id: 'x', lineItems: [{ label: 'A', priceUsd: 1.005 }], totalUsd: 1.005 }],
    ['total that does not add up', { id: 'x', lineItems: [{ label: 'A', priceUsd: 1 }], totalUsd: 2 }],
    ['id with a slash', { id: 'a/b', lineItems: [{ label: 'A', priceUsd: 1 }], totalUsd: 1 }],
  ] as const) {
    test(`refuses ${name} with 400 invalid_input`, async () => {
      const key = await t.key(randomWallet());
      const res = await t.call(key, 'POST', '/api/receipts', bad);
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_input');
      assert.equal(typeof res.body.message, 'string');
    });
  }
});

describe('GET /api/receipts', () => {
  test('lists only the caller merchant receipts, newest first, with the spec fields', async () => {
    const mine = await t.key(randomWallet());
    const theirs = await t.key(randomWallet());
    await t.call(mine, 'POST', '/api/receipts', body('a'));
    await t.call(mine, 'POST', '/api/receipts', body('b'));
    await t.call(theirs, 'POST', '/api/receipts', body('c'));
    const res = await t.call(mine, 'GET', '/api/receipts');
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.receipts.map((r: { receiptId: string }) => r.receiptId).sort(),
      ['a', 'b'],
    );
    const r = res.body.receipts[0];
    for (const f of ['receiptId', 'totalUsd', 'currency', 'lineItems', 'createdAt', 'brandName', 'status']) {
      assert.ok(f in r, `list item has ${f}`);
    }
    assert.equal(r.totalUsd, 9.25);
    assert.equal(r.currency, 'USD');
  });

  test('limit defaults to 100 and must lie in 1..200', async () => {
    const key = await t.key(randomWallet());
    for (let i = 0; i < 3; i++) await t.call(key, 'POST', '/api/receipts', body(`l${i}`));
    assert.equal((await t.call(key, 'GET', '/api/receipts?limit=2')).body.receipts.length, 2);
    for (const bad of ['0', '201', 'abc', '1.5']) {
      const res = await t.call(key, 'GET', `/api/receipts?limit=${bad}`);
      assert.equal(res.status, 400, `limit=${bad}`);
      assert.equal(res.body.error, 'invalid_input');
    }
    assert.equal((await t.call(key, 'GET', '/api/receipts?limit=200')).status, 200);
  });
});

describe('GET /api/receipts/:id and /api/receipts/status', () => {
  test('detail carries every field and the status history', async () => {
    const key = await t.key(randomWallet());
    await t.call(key, 'POST', '/api/receipts', body('d1'));
    const res = await t.call(key, 'GET', '/api/receipts/d1');
    assert.equal(res.status, 200);
    assert.equal(res.body.receiptId, 'd1');
    assert.deepEqual(res.body.lineItems, [
      { label: 'Coffee', priceUsd: 3.5, qty: 2 },
      { label: 'Bagel', priceUsd: 2.25 },
    ]);
    assert.equal(res.body.jurisdictionCode, null);
    assert.equal(res.body.taxRate, 0);
    assert.deepEqual(res.body.taxComponents, []);
    assert.equal(res.body.statusHistory[0].status, 'pending');
  });

  test("another merchant's receipt is 404", async () => {
    const a = await t.key(randomWallet());
    const b = await t.key(randomWallet());
    await t.call(a, 'POST', '/api/receipts', body('private'));
    const res = await t.call(b, 'GET', '/api/receipts/private');
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'not_found');
    assert.equal((await t.call(b, 'GET', '/api/receipts/status?receiptId=private')).status, 404);
  });

  test("each merchant sees its own shop name and history, never another's under the same id", async () => {
    const walletA = randomWallet();
    const walletB = randomWallet();
    const a = await t.key(walletA);
    const b = await t.key(walletB);
    const c = await t.key(randomWallet());
    await saveShopConfig(t.deps.database.db, walletA, { name: 'Shop A', processingFeePct: 0 });
    await saveShopConfig(t.deps.database.db, walletB, { name: 'Shop B', processingFeePct: 0 });
    for (const key of [a, b, c]) assert.equal((await t.call(key, 'POST', '/api/receipts', body('shared-id'))).status, 201);
    const tracked = await t.call(null, 'POST', '/api/receipts/status', { receiptId: 'shared-id', wallet: walletB, status: 'link_opened' });
    assert.equal(tracked.status, 200);

    for (const [key, brand, history] of [
      [a, 'Shop A', ['pending']],
      [b, 'Shop B', ['pending', 'link_opened']],
      [c, t.config.brandName, ['pending']],
    ] as const) {
      const detail = await t.call(key, 'GET', '/api/receipts/shared-id');
      assert.equal(detail.status, 200);
      assert.equal(detail.body.brandName, brand);
      assert.deepEqual(detail.body.statusHistory.map((e: { status: string }) => e.status), history);
      const list = await t.call(key, 'GET', '/api/receipts');
      assert.equal(list.status, 200);
      assert.deepEqual(list.body.receipts.map((r: { brandName: string }) => r.brandName), [brand]);
    }
  });

  test('status result', async () => {
    const key = await t.key(randomWallet());
    await t.call(key, 'POST', '/api/receipts', body('s1'));
    const res = await t.call(key, 'GET', '/api/receipts/status?receiptId=s1');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { id: 's1', status: 'pending', transactionHash: null, currency: 'USDC', amount: 9.25 });
    const missing = await t.call(key, 'GET', '/api/receipts/status');
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error, 'invalid_input');
  });
});

describe('POST /api/receipts/status', () => {
  test('tracking statuses need no credential and move an unpaid receipt', async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    await t.call(key, 'POST', '/api/receipts', body('t1'));
    const res = await t.call(null, 'POST', '/api/receipts/status', { receiptId: 't1', wallet, status: 'link_opened' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { ok: true });
    assert.ok(res.headers['x-correlation-id']);
    const detail = await t.call(key, 'GET', '/api/receipts/t1');
    assert.equal(detail.body.status, 'link_opened');
    assert.deepEqual(
      detail.body.statusHistory.map((h: { status: string }) => h.status),
      ['pending', 'link_opened'],
    );
  });

  test('each error code', async () => {
    const wallet = randomWallet();
    const cases: [unknown, number, string][] = [
      [{ wallet, status: 'link_opened' }, 400, 'missing_receipt_id'],
      [{ receiptId: 'x', wallet: '0x123', status: 'link_opened' }, 400, 'invalid_wallet'],
      [{ receiptId: 'x', status: 'link_opened' }, 400, 'invalid_wallet'],
      [{ receiptId: 'x', wallet }, 400, 'missing_status'],
      [{ receiptId: 'x', wallet, status: 'checkout_success' }, 403, 'forbidden'],
      [{ receiptId: 'x', wallet, status: 'refund_full' }, 403, 'forbidden'],
      [{ receiptId: 'x', wallet, status: 'completed' }, 400, 'invalid_input'],
      [{ receiptId: 'nope', wallet, status: 'link_opened' }, 404, 'not_found'],
    ];
    for (const [payload, status, code] of cases) {
      const res = await t.call(null, 'POST', '/api/receipts/status', payload);
      assert.equal(res.status, status, JSON.stringify(payload));
      assert.equal(res.body.error, code, JSON.stringify(payload));
    }
  });
});
