import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, test } from 'node:test';
import { openDatabase, type Db } from '../src/db/client.ts';
import { AppError } from '../src/lib/errors.ts';
import { OrderService } from '../src/domain/orders.ts';
import { createStores } from '../src/db/stores.ts';
import { getSplitConfig, storeSplitConfig } from '../src/domain/splits.ts';
import { randomWallet, startTestApp, type TestApp, useTestApp } from './helpers/app.ts';
import { setUpMerchant } from './helpers/merchant.ts';
import { staleReceiptViews, unrenderedReceipts } from './helpers/receipt-views.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const menu = [
  { sku: 'coffee', name: 'Coffee', priceUsd: 3.5, stockQty: 10 },
  { sku: 'mug', name: 'Mug', priceUsd: 12.99 },
  { sku: 'gift', name: 'Gift card', priceUsd: 25, taxable: false },
];

async function stockOf(key: string): Promise<Record<string, number>> {
  const res = await t.call(key, 'GET', '/api/inventory');
  return Object.fromEntries(res.body.items.map((i: { sku: string; stockQty: number }) => [i.sku, i.stockQty]));
}

async function receiptCount(key: string): Promise<number> {
  return (await t.call(key, 'GET', '/api/receipts?limit=200')).body.receipts.length;
}

describe('POST /api/orders: pricing', () => {
  test('prices an order from inventory with jurisdiction tax and a processing fee, exactly', async () => {
    const m = await setUpMerchant(t, {
      shop: {
        processingFeePct: 2.5,
        name: 'Corner Café',
        taxJurisdictions: [{ code: 'CA-LA', rate: 0.095, components: ['state', 'county', 'district'] }],
      },
      items: menu,
    });
    const res = await t.call(m.key, 'POST', '/api/orders', {
      items: [
        { sku: 'coffee', qty: 1 },
        { id: m.ids.mug, qty: 1 },
        { sku: 'gift', qty: 1 },
        { id: m.ids.coffee, qty: 1 },
      ],
      jurisdictionCode: 'CA-LA',
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.ok, true);
    const r = res.body.receipt;
    // Subtotal 7.00 + 12.99 + 25.00 = 44.99. Tax 9.5% of the taxable 19.99 = 1.89905 → 1.90.
    // Fee 2.5% of 46.89 = 1.17225 → 1.17. Total 48.06.
    assert.deepEqual(r.lineItems, [
      { label: 'Coffee', priceUsd: 3.5, qty: 2 },
      { label: 'Mug', priceUsd: 12.99, qty: 1 },
      { label: 'Gift card', priceUsd: 25, qty: 1 },
      { label: 'Tax (CA-LA)', priceUsd: 1.9 },
      { label: 'Processing fee', priceUsd: 1.17 },
    ]);
    assert.equal(r.totalUsd, 48.06);
    assert.equal(r.currency, 'USD');
    assert.equal(r.status, 'pending');
    assert.equal(r.brandName, 'Corner Café');
    assert.equal(r.jurisdictionCode, 'CA-LA');
    assert.equal(r.taxRate, 0.095);
    assert.deepEqual(r.taxComponents, ['state', 'county', 'district']);
    assert.match(r.receiptId, /^ord_[A-Za-z0-9_-]{16}$/);
    assert.equal(typeof r.createdAt, 'number');
    assert.ok(r.paymentUrl.startsWith(`http://pay.test/pay/${encodeURIComponent(r.receiptId)}?t=`), r.paymentUrl);

    // The stored receipt agrees, and limited stock went down by the merged quantity only.
    const detail = await t.call(m.key, 'GET', `/api/receipts/${encodeURIComponent(r.receiptId)}`);
    assert.equal(detail.status, 200);
    assert.equal(detail.body.totalUsd, 48.06);
    assert.deepEqual(detail.body.lineItems, r.lineItems);
    assert.equal(detail.body.taxRate, 0.095);
    assert.equal(detail.body.jurisdictionCode, 'CA-LA');
    assert.deepEqual(detail.body.taxComponents, ['state', 'county', 'district']);
    assert.equal(detail.body.statusHistory[0].source, 'order');
    assert.deepEqual(await stockOf(m.key), { coffee: 8, gift: -1, mug: -1 });
  });

  test('an explicit taxRate wins over the jurisdiction; half a cent rounds up', async () => {
    const m = await setUpMerchant(t, {
      shop: { processingFeePct: 0, taxJurisdictions: [{ code: 'TX', rate: 0.0625 }] },
      items: [{ sku: 'pen', name: 'Pen', priceUsd: 2 }],
    });
    const res = await t.call(m.key, 'POST', '/api/orders', {
      items: [{ sku: 'pen', qty: 1 }],
      jurisdictionCode: 'TX',
      taxRate: 0.0825,
      taxComponents: ['state'],
    });
    assert.equal(res.status, 200);
    const r = res.body.receipt;
    assert.deepEqual(r.lineItems, [
      { label: 'Pen', priceUsd: 2, qty: 1 },
      { label: 'Tax (TX)', priceUsd: 0.17 }, // 16.5 cents
    ]);
    assert.equal(r.totalUsd, 2.17);
    assert.equal(r.taxRate, 0.0825);
    assert.deepEqual(r.taxComponents, ['state']);
  });

  test('without tax or shop configuration: item lines only, the deployment brand', async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'pen', name: 'Pen', priceUsd: 1.25 }] });
    const res = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'pen', qty: 3 }] });
    assert.equal(res.status, 200);
    const r = res.body.receipt;
    assert.deepEqual(r.lineItems, [{ label: 'Pen', priceUsd: 1.25, qty: 3 }]);
    assert.equal(r.totalUsd, 3.75);
    assert.equal(r.brandName, 'Splitline');
    assert.equal(r.jurisdictionCode, null);
    assert.equal(r.taxRate, 0);
    assert.deepEqual(r.taxComponents, []);
  });

  test('unlimited stock is never decremented', async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'file', name: 'Download', priceUsd: 5 }] });
    assert.equal((await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'file', qty: 1000 }] })).status, 200);
    assert.deepEqual(await stockOf(m.key), { file: -1 });
  });
});

describe('POST /api/orders: errors', () => {
  test('items missing, empty or null: 400 items_required', async () => {
    const m = await setUpMerchant(t, { items: menu });
    for (const body of [{}, { items: [] }, { items: null }, { jurisdictionCode: 'CA' }]) {
      const res = await t.call(m.key, 'POST', '/api/orders', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error, 'items_required', JSON.stringify(body));
    }
  });

  for (const [name, body] of [
    ['qty 0', { items: [{ sku: 'coffee', qty: 0 }] }],
    ['negative qty', { items: [{ sku: 'coffee', qty: -1 }] }],
    ['fractional qty', { items: [{ sku: 'coffee', qty: 1.5 }] }],
    ['qty as a string', { items: [{ sku: 'coffee', qty: '2' }] }],
    ['missing qty', { items: [{ sku: 'coffee' }] }],
    ['items not an array', { items: 'coffee' }],
    ['an item naming both sku and id', { items: [{ sku: 'coffee', id: 'itm_x', qty: 1 }] }],
    ['an item naming neither sku nor id', { items: [{ qty: 1 }] }],
    ['taxRate above 1', { items: [{ sku: 'coffee', qty: 1 }], taxRate: 8.25 }],
    ['taxRate as a string', { items: [{ sku: 'coffee', qty: 1 }], taxRate: '0.08' }],
    ['taxRate with seven decimals', { items: [{ sku: 'coffee', qty: 1 }], taxRate: 0.0825001 }],
    ['taxComponents not strings', { items: [{ sku: 'coffee', qty: 1 }], taxRate: 0.1, taxComponents: [1] }],
    ['an unknown jurisdiction without taxRate', { items: [{ sku: 'coffee', qty: 1 }], jurisdictionCode: 'ZZ' }],
  ] as const) {
    test(`${name}: 400 invalid_input, nothing reserved`, async () => {
      const m = await setUpMerchant(t, { items: menu });
      const res = await t.call(m.key, 'POST', '/api/orders', body);
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_input');
      assert.equal(typeof res.body.message, 'string');
      assert.equal((await stockOf(m.key)).coffee, 10);
      assert.equal(await receiptCount(m.key), 0);
    });
  }

  test('an order totalling zero is 400 invalid_input', async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'free', name: 'Sticker', priceUsd: 0 }] });
    const res = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'free', qty: 1 }] });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, 'invalid_input');
  });

  test('no split configured: 403 split_required, checked after items and before inventory', async () => {
    const m = await setUpMerchant(t, { split: false, items: menu });
    const res = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'coffee', qty: 1 }] });
    assert.equal(res.status, 403);
    assert.equal(res.body.error, 'split_required');
    const unknown = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'nope', qty: 1 }] });
    assert.equal(unknown.body.error, 'split_required');
    const empty = await t.call(m.key, 'POST', '/api/orders', { items: [] });
    assert.equal(empty.body.error, 'items_required');
    assert.equal((await stockOf(m.key)).coffee, 10);
  });

  test('unknown sku or id: 400 inventory_item_not_found, and nothing is reserved', async () => {
    const m = await setUpMerchant(t, { items: menu });
    for (const items of [
      [{ sku: 'nope', qty: 1 }],
      [{ id: 'itm_doesnotexist0000', qty: 1 }],
      [
        { sku: 'coffee', qty: 1 },
        { sku: 'nope', qty: 1 },
      ],
      // sku and id are different namespaces: an id is not a sku.
      [{ sku: m.ids.coffee!, qty: 1 }],
    ]) {
      const res = await t.call(m.key, 'POST', '/api/orders', { items });
      assert.equal(res.status, 400, JSON.stringify(items));
      assert.equal(res.body.error, 'inventory_item_not_found');
    }
    assert.equal((await stockOf(m.key)).coffee, 10);
    assert.equal(await receiptCount(m.key), 0);
  });

  test("another merchant's items are unusable, by sku or by id", async () => {
    const owner = await setUpMerchant(t, { items: [{ sku: 'secret', name: 'Secret', priceUsd: 1, stockQty: 5 }] });
    const other = await setUpMerchant(t);
    for (const item of [{ sku: 'secret' }, { id: owner.ids.secret }]) {
      const res = await t.call(other.key, 'POST', '/api/orders', { items: [{ ...item, qty: 1 }] });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'inventory_item_not_found');
    }
    assert.deepEqual(await stockOf(owner.key), { secret: 5 });
  });

  test('too little stock: 409 out_of_stock, counting merged duplicates; the whole order rolls back', async () => {
    const m = await setUpMerchant(t, {
      items: [
        { sku: 'a', name: 'A', priceUsd: 1, stockQty: 5 },
        { sku: 'b', name: 'B', priceUsd: 1, stockQty: 2 },
      ],
    });
    for (const items of [
      [{ sku: 'b', qty: 3 }],
      [
        { sku: 'b', qty: 2 },
        { sku: 'b', qty: 1 },
      ],
      [
        { sku: 'a', qty: 1 },
        { sku: 'b', qty: 3 },
      ],
    ]) {
      const res = await t.call(m.key, 'POST', '/api/orders', { items });
      assert.equal(res.status, 409, JSON.stringify(items));
      assert.equal(res.body.error, 'out_of_stock');
    }
    assert.deepEqual(await stockOf(m.key), { a: 5, b: 2 });
    assert.equal(await receiptCount(m.key), 0);
    const exact = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'b', qty: 2 }] });
    assert.equal(exact.status, 200);
    assert.deepEqual(await stockOf(m.key), { a: 5, b: 0 });
  });

  test('needs the orders:create scope (403 forbidden) and a key (401)', async () => {
    const m = await setUpMerchant(t, { items: menu, scopes: ['inventory:read', 'receipts:read'] });
    const res = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'coffee', qty: 1 }] });
    assert.equal(res.status, 403);
    assert.equal(res.body.error, 'forbidden');
    const anonymous = await t.call(null, 'POST', '/api/orders', { items: [{ sku: 'coffee', qty: 1 }] });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error, 'unauthorized');
    assert.equal((await stockOf(m.key)).coffee, 10);
  });
});

describe('POST /api/orders: concurrency', () => {
  test('many concurrent orders never oversell: exactly the stock count succeed', async () => {
    const stock = 5;
    const m = await setUpMerchant(t, { items: [{ sku: 'limited', name: 'Limited print', priceUsd: 40, stockQty: stock }] });
    const results = await Promise.all(
      Array.from({ length: 30 }, () => t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'limited', qty: 1 }] })),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 409);
    assert.equal(ok.length, stock);
    assert.equal(refused.length, 30 - stock);
    assert.ok(refused.every((r) => r.body.error === 'out_of_stock'));
    assert.equal(new Set(ok.map((r) => r.body.receipt.receiptId)).size, stock);
    assert.deepEqual(await stockOf(m.key), { limited: 0 });
    assert.equal(await receiptCount(m.key), stock);
  });

  test('orders naming the same items in opposite orders all complete (no deadlock)', async () => {
    const m = await setUpMerchant(t, {
      items: [
        { sku: 'x', name: 'X', priceUsd: 1, stockQty: 20 },
        { sku: 'y', name: 'Y', priceUsd: 1, stockQty: 20 },
      ],
    });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        t.call(m.key, 'POST', '/api/orders', {
          items: i % 2 === 0 ? [{ sku: 'x', qty: 1 }, { sku: 'y', qty: 1 }] : [{ sku: 'y', qty: 1 }, { sku: 'x', qty: 1 }],
        }),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array(20).fill(200),
    );
    assert.deepEqual(await stockOf(m.key), { x: 0, y: 0 });
  });
});

describe('platform recipient', () => {
  test('unset on the deployment: 400 platform_recipient_not_configured naming the variable, after split_required', async () => {
    // On the dev chain the ninth test account is the default (test/unit/dev-accounts.test.ts);
    // elsewhere nothing is.
    const bare = await startTestApp({ PLATFORM_RECIPIENT_ADDRESS: '', CHAIN: 'base-sepolia', RPC_URL: 'http://127.0.0.1:9' });
    try {
      assert.equal(bare.config.platformRecipientAddress, undefined);
      const m = await setUpMerchant(bare, { items: menu });
      const res = await bare.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'coffee', qty: 1 }] });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'platform_recipient_not_configured');
      assert.match(res.body.message, /PLATFORM_RECIPIENT_ADDRESS/);
      const noSplit = await setUpMerchant(bare, { split: false, items: menu });
      const first = await bare.call(noSplit.key, 'POST', '/api/orders', { items: [{ sku: 'coffee', qty: 1 }] });
      assert.equal(first.body.error, 'split_required');
    } finally {
      await bare.close();
    }
  });
});

describe('storeSplitConfig', () => {
  const a = '0x' + 'a'.repeat(40);
  const b = '0x' + 'b'.repeat(40);
  const cases: [string, unknown][] = [
    ['shares not summing to 10000', [{ address: a, sharesBps: 5000 }, { address: b, sharesBps: 4999 }]],
    ['a zero share', [{ address: a, sharesBps: 10000 }, { address: b, sharesBps: 0 }]],
    ['a fractional share', [{ address: a, sharesBps: 5000.5 }, { address: b, sharesBps: 4999.5 }]],
    ['a share above 10000', [{ address: a, sharesBps: 10001 }]],
    ['a duplicate address (any case)', [{ address: a, sharesBps: 5000 }, { address: a.toUpperCase().replace('0X', '0x'), sharesBps: 5000 }]],
    ['a malformed address', [{ address: '0x1234', sharesBps: 10000 }]],
    ['no recipients', []],
  ];
  for (const [name, recipients] of cases) {
    test(`refuses ${name} with invalid_input`, async () => {
      const wallet = randomWallet();
      await assert.rejects(
        storeSplitConfig(t.deps.database.db, wallet, { address: null, recipients: recipients as never }),
        (err: unknown) => err instanceof AppError && err.status === 400 && err.code === 'invalid_input',
      );
      assert.deepEqual(await getSplitConfig(t.deps.database.db, wallet), { address: null, recipients: [], version: null });
    });
  }

  test('stores addresses lower-cased and replaces an earlier configuration', async () => {
    const wallet = randomWallet();
    const db = t.deps.database.db;
    await storeSplitConfig(db, wallet, { address: null, recipients: [{ address: a, sharesBps: 10000 }] });
    const split = '0x' + 'C'.repeat(40);
    await storeSplitConfig(db, wallet, {
      address: split,
      recipients: [
        { address: '0x' + 'B'.repeat(40), sharesBps: 9950 },
        { address: a, sharesBps: 50 },
      ],
    });
    assert.deepEqual(await getSplitConfig(db, wallet), {
      address: split.toLowerCase(),
      recipients: [
        { address: b, sharesBps: 9950 },
        { address: a, sharesBps: 50 },
      ],
      version: 1,
    });
    await assert.rejects(storeSplitConfig(db, wallet, { address: '0xnope', recipients: [{ address: a, sharesBps: 10000 }] }), AppError);
  });
});

describe('POST /api/orders: orders placed together', () => {
  const ctx = () => ({
    siteUrl: 'http://pay.test',
    fallbackBrand: 'Splitline',
    platformRecipientAddress: t.config.platformRecipientAddress,
    receiptTtlMinutes: 60,
  });
  /** The orders of another instance on `db`: its own stores and batches, as another process's are. */
  const ordersOn = (db: Db) => new OrderService({ ...createStores(db), ...ctx() });
  let orderService: OrderService;
  before(() => {
    orderService = ordersOn(t.deps.database.db);
  });
  const write = (hash = 'h') => ({ id: `test:${randomUUID()}`, hash });
  const codeOf = (err: unknown) => (err instanceof AppError ? err.code : String(err));
  const settle = <T>(p: Promise<T>) => p.then((value) => ({ ok: true as const, value }), (err: unknown) => ({ ok: false as const, code: codeOf(err) }));
  /** Submits `count` orders in waves of `wave`, a turn of the event loop apart, so several batches are under way at once. */
  async function inWaves<T>(count: number, wave: number, place: (i: number) => Promise<T>) {
    const all: Promise<{ ok: true; value: T } | { ok: false; code: string }>[] = [];
    for (let i = 0; i < count; i++) {
      if (i > 0 && i % wave === 0) await new Promise((r) => setImmediate(r));
      all.push(settle(place(i)));
    }
    return Promise.all(all);
  }

  test('each order is judged on its own: refusals of every kind next to orders that succeed', async () => {
    const m = await setUpMerchant(t, {
      items: [
        { sku: 'few', name: 'Few', priceUsd: 2, stockQty: 3 },
        { sku: 'free', name: 'Free', priceUsd: 0 },
      ],
    });
    const noSplit = await setUpMerchant(t, { split: false, items: [{ sku: 'few', name: 'Few', priceUsd: 2, stockQty: 3 }] });
    const calls: [string, unknown, number, string | undefined][] = [
      ...Array.from({ length: 5 }, (): [string, unknown, number, string | undefined] => [m.key, { items: [{ sku: 'few', qty: 1 }] }, 0, undefined]),
      [noSplit.key, { items: [{ sku: 'few', qty: 1 }] }, 403, 'split_required'],
      [m.key, { items: [{ sku: 'nope', qty: 1 }] }, 400, 'inventory_item_not_found'],
      [m.key, { items: [{ sku: 'free', qty: 1 }] }, 400, 'invalid_input'],
      [m.key, { items: [{ sku: 'few', qty: 1 }], jurisdictionCode: 'ZZ' }, 400, 'invalid_input'],
    ];
    const results = await Promise.all(calls.map(([key, body]) => t.call(key, 'POST', '/api/orders', body)));
    calls.forEach(([, body, status, error], i) => {
      if (status === 0) return;
      assert.equal(results[i]!.status, status, JSON.stringify(body));
      assert.equal(results[i]!.body.error, error, JSON.stringify(body));
    });
    const stocked = results.slice(0, 5);
    assert.equal(stocked.filter((r) => r.status === 200).length, 3);
    assert.ok(stocked.filter((r) => r.status !== 200).every((r) => r.status === 409 && r.body.error === 'out_of_stock'));
    assert.deepEqual(await stockOf(m.key), { few: 0, free: -1 });
    assert.deepEqual(await stockOf(noSplit.key), { few: 3 });
    assert.equal(await receiptCount(m.key), 3);
    assert.equal(await receiptCount(noSplit.key), 0);
  });

  test('a write id retried, together or later, answers the first order and takes no stock', async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'tea', name: 'Tea', priceUsd: 3, stockQty: 10 }] });
    const w = write();
    const order = { items: [{ sku: 'tea', qty: 2 }] };
    const together = await Promise.all([1, 2, 3].map(() => orderService.create({ wallet: m.wallet, input: order, write: w })));
    assert.equal(new Set(together.map((r) => r.receiptId)).size, 1);
    const later = await orderService.create({ wallet: m.wallet, input: order, write: w });
    assert.equal(later.receiptId, together[0]!.receiptId);
    assert.equal(later.paymentUrl, together[0]!.paymentUrl);
    assert.deepEqual(await stockOf(m.key), { tea: 8 });
    assert.equal(await receiptCount(m.key), 1);
    // The same id with another request is a conflict, and changes nothing either.
    const other = await settle(orderService.create({ wallet: m.wallet, input: order, write: { id: w.id, hash: 'another request' } }));
    assert.deepEqual(other, { ok: false, code: 'conflict' });
    assert.deepEqual(await stockOf(m.key), { tea: 8 });
  });

  test('orders of unlimited items, placed without a transaction: a write id retried together, in the next batch or later, answers the first order', async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'cake', name: 'Cake', priceUsd: 4, stockQty: -1 }] });
    const w = write();
    const order = { items: [{ sku: 'cake', qty: 1 }] };
    // One batch holding the write twice, and another batch a turn later while the first may still
    // be writing: its claim then waits for the first one's and finds it taken.
    const together = [1, 2].map(() => orderService.create({ wallet: m.wallet, input: order, write: w }));
    await new Promise((resolve) => setImmediate(resolve));
    const next = orderService.create({ wallet: m.wallet, input: order, write: w });
    const placed = await Promise.all([...together, next]);
    assert.equal(new Set(placed.map((r) => r.receiptId)).size, 1);
    const later = await orderService.create({ wallet: m.wallet, input: order, write: w });
    assert.equal(later.receiptId, placed[0].receiptId);
    assert.equal(later.paymentUrl, placed[0].paymentUrl);
    assert.equal(await receiptCount(m.key), 1);
    assert.deepEqual(await stockOf(m.key), { cake: -1 });
    const other = await settle(orderService.create({ wallet: m.wallet, input: order, write: { id: w.id, hash: 'another request' } }));
    assert.deepEqual(other, { ok: false, code: 'conflict' });
    // Different writes are different orders.
    const two = await Promise.all([write(), write()].map((x) => orderService.create({ wallet: m.wallet, input: order, write: x })));
    assert.notEqual(two[0]!.receiptId, two[1]!.receiptId);
    assert.equal(await receiptCount(m.key), 3);
  });

  test('a refused order leaves its write id unclaimed: the same write succeeds once it can', async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'tea', name: 'Tea', priceUsd: 3, stockQty: 1 }] });
    const short = write();
    const order = { items: [{ sku: 'tea', qty: 2 }] };
    assert.deepEqual(await settle(orderService.create({ wallet: m.wallet, input: order, write: short })), { ok: false, code: 'out_of_stock' });
    await t.call(m.key, 'POST', '/api/inventory', { sku: 'tea', name: 'Tea', priceUsd: 3, stockQty: 5 });
    const placed = await orderService.create({ wallet: m.wallet, input: order, write: short });
    assert.equal(placed.totalUsd, 6);
    assert.deepEqual(await stockOf(m.key), { tea: 3 });

    const wallet = randomWallet();
    const noSplit = write();
    assert.deepEqual(await settle(orderService.create({ wallet, input: order, write: noSplit })), { ok: false, code: 'split_required' });
    await storeSplitConfig(t.deps.database.db, wallet, { address: null, recipients: [{ address: wallet, sharesBps: 9950 }, { address: '0x000000000000000000000000000000000000beef', sharesBps: 50 }] });
    // Judged afresh: a claim left behind would have answered with the first attempt's (missing) receipt.
    assert.deepEqual(await settle(orderService.create({ wallet, input: order, write: noSplit })), { ok: false, code: 'inventory_item_not_found' });
  });

  test('an item switched between limited and unlimited stock: orders take stock exactly while it is limited', async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'bun', name: 'Bun', priceUsd: 2, stockQty: 2 }] });
    const bySku = { items: [{ sku: 'bun', qty: 1 }] };
    await orderService.create({ wallet: m.wallet, input: bySku });
    assert.deepEqual(await stockOf(m.key), { bun: 1 });
    // Last read as limited, now unlimited: the orders go as they must for an unlimited item, taking nothing.
    await t.call(m.key, 'POST', '/api/inventory', { sku: 'bun', name: 'Bun', priceUsd: 2, stockQty: -1 });
    await Promise.all([1, 2, 3].map(() => orderService.create({ wallet: m.wallet, input: bySku })));
    assert.deepEqual(await stockOf(m.key), { bun: -1 });
    // Last read as unlimited, now limited again, named by id: the stock is taken and never oversold.
    await t.call(m.key, 'POST', '/api/inventory', { sku: 'bun', name: 'Bun', priceUsd: 2, stockQty: 2 });
    const id = (await t.call(m.key, 'GET', '/api/inventory')).body.items[0].id as string;
    const results = await Promise.all([1, 2, 3].map(() => settle(orderService.create({ wallet: m.wallet, input: { items: [{ id, qty: 1 }] } }))));
    assert.equal(results.filter((r) => r.ok).length, 2);
    assert.deepEqual(results.filter((r) => !r.ok), [{ ok: false, code: 'out_of_stock' }]);
    assert.deepEqual(await stockOf(m.key), { bun: 0 });
    assert.equal(await receiptCount(m.key), 6);
  });

  test('batches under way together never oversell, and orders naming items in any order all settle', async () => {
    const m = await setUpMerchant(t, {
      items: [
        { sku: 'p', name: 'P', priceUsd: 1, stockQty: 7 },
        { sku: 'q', name: 'Q', priceUsd: 1, stockQty: 100 },
      ],
    });
    const results = await inWaves(40, 5, (i) =>
      orderService.create({ wallet: m.wallet, input: { items: i % 2 === 0 ? [{ sku: 'p', qty: 1 }, { sku: 'q', qty: 1 }] : [{ sku: 'q', qty: 1 }, { sku: 'p', qty: 1 }] } }),
    );
    assert.equal(results.filter((r) => r.ok).length, 7);
    assert.ok(results.every((r) => r.ok || r.code === 'out_of_stock'), JSON.stringify(results.filter((r) => !r.ok)));
    assert.deepEqual(await stockOf(m.key), { p: 0, q: 93 });
    assert.equal(await receiptCount(m.key), 7);
  });

  test('two instances ordering from one database never oversell', { skip: process.env.DATABASE_URL ? false : 'needs PostgreSQL (DATABASE_URL)' }, async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'rare', name: 'Rare', priceUsd: 5, stockQty: 9 }] });
    // A second pool on the same database: its orders are batched apart, as another instance's are.
    const other = await openDatabase({ databaseUrl: t.config.databaseUrl, poolSize: 5 });
    try {
      const services = [orderService, ordersOn(other.db)];
      const results = await inWaves(40, 4, (i) => services[i % 2]!.create({ wallet: m.wallet, input: { items: [{ sku: 'rare', qty: 1 }] } }));
      assert.equal(results.filter((r) => r.ok).length, 9);
      assert.ok(results.every((r) => r.ok || r.code === 'out_of_stock'), JSON.stringify(results.filter((r) => !r.ok)));
      assert.deepEqual(await stockOf(m.key), { rare: 0 });
      assert.equal(await receiptCount(m.key), 9);
    } finally {
      await other.close();
    }
  });
});

test('every receipt these tests wrote stores the views the database renders from its rows', async () => {
  assert.deepEqual(await staleReceiptViews(t.deps.database.db), []);
  assert.deepEqual(await unrenderedReceipts(t.deps.database.db), []);
});
