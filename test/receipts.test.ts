import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { receipts, receiptStatusHistory, receiptTransfers, refunds } from '../src/db/schema.ts';
import { createReceipt } from '../src/domain/receipts.ts';
import { saveShopConfig } from '../src/domain/shop.ts';
import { randomWallet, type Res, type TestApp, useTestApp } from './helpers/app.ts';
import { testReceipt } from './helpers/receipt-views.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

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

describe('receipts created together', () => {
  // Creations of one event-loop turn share a transaction (src/domain/receipts.ts).
  const create = (wallet: string, b: ReturnType<typeof body>, payToken?: string) =>
    createReceipt(t.deps.stores.receipts, 'http://pay.test', { wallet, ...b }, payToken === undefined ? {} : { payToken });

  test('each is stored once with its history, as if made one by one', async () => {
    const wallet = randomWallet().toLowerCase();
    const key = await t.key(wallet);
    const made = await Promise.all(Array.from({ length: 20 }, (_, i) => create(wallet, body(`together-${i}`))));
    assert.deepEqual(
      made.map((m) => m.id),
      Array.from({ length: 20 }, (_, i) => `together-${i}`),
    );
    const list = await t.call(key, 'GET', '/api/receipts');
    assert.equal(list.body.receipts.length, 20);
    for (const m of made) {
      const detail = await t.call(key, 'GET', `/api/receipts/${m.id}`);
      assert.deepEqual(detail.body.statusHistory.map((h: { status: string }) => h.status), ['pending']);
    }
  });

  test('the same id twice in one turn: the same body answers alike, a different body is a conflict', async () => {
    const wallet = randomWallet().toLowerCase();
    const key = await t.key(wallet);
    const [first, retry, other] = await Promise.allSettled([
      create(wallet, body('twice'), 'token-a'),
      create(wallet, body('twice'), 'token-b'),
      create(wallet, { ...body('twice'), totalUsd: 9.26, lineItems: [{ label: 'Coffee', priceUsd: 9.26 }] }),
    ]);
    assert.equal(first.status, 'fulfilled');
    assert.deepEqual(retry, first);
    assert.match((first as PromiseFulfilledResult<{ paymentUrl: string }>).value.paymentUrl, /\?t=token-a$/);
    assert.equal(other.status, 'rejected');
    assert.equal(other.reason.code, 'conflict');
    const detail = await t.call(key, 'GET', '/api/receipts/twice');
    assert.deepEqual(detail.body.statusHistory.map((h: { status: string }) => h.status), ['pending']);
  });

  test('a receipt the database refuses fails alone; the others of its turn are stored', async () => {
    const wallet = randomWallet().toLowerCase();
    const key = await t.key(wallet);
    // The HTTP boundary refuses NUL; below it, PostgreSQL refuses it in jsonb, failing the batch's statement.
    const refused = { ...body('refused'), lineItems: [{ label: 'bad \u0000 label', priceUsd: 9.25 }] };
    const outcomes = await Promise.allSettled([create(wallet, body('kept-1')), create(wallet, refused), create(wallet, body('kept-2'))]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal((await t.call(key, 'GET', '/api/receipts/kept-1')).status, 200);
    assert.equal((await t.call(key, 'GET', '/api/receipts/kept-2')).status, 200);
    assert.equal((await t.call(key, 'GET', '/api/receipts/refused')).status, 404);
  });
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

  test('each summary in the list is the detail route\'s view of that receipt, field for field and in order', async () => {
    // Both join JSON text stored with each row (or rendered in SQL for rows stored without it):
    // the detail's own text is held to the service's serializer in the next describe.
    const wallet = randomWallet();
    const key = await t.key(wallet);
    const bodies = [
      { id: 'cent', lineItems: [{ label: 'Gum', priceUsd: 0.01 }], totalUsd: 0.01 },
      { id: 'dime', lineItems: [{ label: 'Mint', priceUsd: 0.1, qty: 3 }], totalUsd: 0.3 },
      { id: 'whole', lineItems: [{ label: 'Book', priceUsd: 12 }], totalUsd: 12 },
      { id: 'large', lineItems: [{ label: 'Car', priceUsd: 1234567.89, qty: 1 }, { label: 'Mat', priceUsd: 10.5 }], totalUsd: 1234578.39 },
      { id: 'text', lineItems: [{ label: 'Say "hi" \\ back\u2028slash ünïcode 🍩 \u0001', priceUsd: 2.25, qty: 1000 }], totalUsd: 2250 },
    ];
    for (const b of bodies) assert.equal((await t.call(key, 'POST', '/api/receipts', b)).status, 201);
    // Stored line items may carry more than a view shows (an order's sku and kind).
    await t.deps.stores.receipts.insertOne(t.deps.database.db, testReceipt({ wallet: wallet.toLowerCase(), id: 'order', status: 'generated' }));
    // Rows stored without their summary text (older rows) are rendered by the list's SQL.
    await t.deps.stores.receipts.insertOne(t.deps.database.db, {
      wallet: wallet.toLowerCase(),
      id: 'legacy',
      source: 'api',
      status: 'pending',
      lineItems: [
        { label: 'Old "quoted" \\ ünïcode 🍩 \u0001', priceCents: '123456789', qty: 7 },
        { label: 'Dime', priceCents: '10' },
        { label: 'Whole', priceCents: '500', qty: 1 },
      ],
      totalCents: 864197533n,
      requestHash: 'h2',
      payToken: 'tok2',
      createdAt: Date.now() - 60_000,
      expiresAt: Date.now() + 3_600_000,
    });
    await t.deps.database.db.update(receipts).set({ summaryJson: null }).where(eq(receipts.id, 'legacy'));
    // Refunds are summed into refundedUsd on both (two refunds of 'large', one of 'legacy').
    const refund = (receiptId: string, id: string, amountCents: bigint) => ({
      wallet: wallet.toLowerCase(), id, receiptId, buyer: '0x' + '11'.repeat(20), amountCents, items: [], createdBy: wallet.toLowerCase(), createdAt: Date.now(),
    });
    await t.deps.database.db.insert(refunds).values([refund('large', 'rfd-l1', 1050n), refund('large', 'rfd-l2', 1n), refund('legacy', 'rfd-g1', 864197533n)]);
    const list = await t.call(key, 'GET', '/api/receipts');
    assert.equal(list.status, 200);
    assert.equal(list.body.receipts.length, bodies.length + 2);
    for (const summary of list.body.receipts) {
      const detail = await t.call(key, 'GET', `/api/receipts/${summary.receiptId}`);
      assert.equal(detail.status, 200);
      const view = Object.fromEntries(Object.entries(detail.body).slice(0, Object.keys(summary).length));
      assert.equal(JSON.stringify(summary), JSON.stringify(view), summary.receiptId);
    }
    const order = list.body.receipts.find((r: { receiptId: string }) => r.receiptId === 'order');
    assert.deepEqual(order.lineItems, [{ label: 'Latte', priceUsd: 4.5, qty: 2 }, { label: 'Tax', priceUsd: 0.74 }]);
    const refunded = Object.fromEntries(list.body.receipts.map((r: { receiptId: string; refundedUsd: number }) => [r.receiptId, r.refundedUsd]));
    assert.deepEqual(refunded, { cent: 0, dime: 0, whole: 0, large: 10.51, text: 0, order: 0, legacy: 8641975.33 });
  });

  test('concurrent lists share queries by merchant and limit, and each sees its own receipts and every acknowledged one', async () => {
    const a = await t.key(randomWallet());
    const b = await t.key(randomWallet());
    for (let i = 0; i < 3; i++) assert.equal((await t.call(a, 'POST', '/api/receipts', body(`a${i}`))).status, 201);
    assert.equal((await t.call(b, 'POST', '/api/receipts', body('b0'))).status, 201);
    const ids = (res: Res) => res.body.receipts.map((r: { receiptId: string }) => r.receiptId);
    const lists = await Promise.all([
      ...Array.from({ length: 6 }, () => t.call(a, 'GET', '/api/receipts')),
      ...Array.from({ length: 6 }, () => t.call(b, 'GET', '/api/receipts')),
      t.call(a, 'GET', '/api/receipts?limit=2'),
    ]);
    for (const res of lists.slice(0, 6)) assert.deepEqual(ids(res), ['a2', 'a1', 'a0']);
    for (const res of lists.slice(6, 12)) assert.deepEqual(ids(res), ['b0']);
    assert.deepEqual(ids(lists[12]!), ['a2', 'a1']);
    // A creation acknowledged before a list was asked for is in it, however many lists run together.
    assert.equal((await t.call(a, 'POST', '/api/receipts', body('a3'))).status, 201);
    const after = await Promise.all(Array.from({ length: 4 }, () => t.call(a, 'GET', '/api/receipts')));
    for (const res of after) assert.deepEqual(ids(res), ['a3', 'a2', 'a1', 'a0']);
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
  /** The body of GET /api/receipts/{id} as sent, before parsing. */
  async function detailText(key: string, id: string): Promise<string> {
    const res = await t.app.inject({ method: 'GET', url: `/api/receipts/${id}`, headers: { 'ocp-apim-subscription-key': key } });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    return res.body;
  }

  test('the detail is the text JSON.stringify writes for the schema\'s fields in the schema\'s order', async () => {
    // PostgreSQL writes the text (getReceiptJson): every field, escape and number must come out
    // as the service's own serializer would write them.
    const wallet = randomWallet().toLowerCase();
    const key = await t.key(wallet);
    await saveShopConfig(t.deps.database.db, wallet, { name: 'Café "Ünïcode" 🍩', processingFeePct: 0 });
    // Labels are trimmed when stored: the tab sits inside.
    const label = 'Say "hi" \\ back\u2028slash\tünïcode 🍩 \u0001';
    assert.equal((await t.call(key, 'POST', '/api/receipts', { id: 'plain', lineItems: [{ label, priceUsd: 0.1, qty: 3 }], totalUsd: 0.3 })).status, 201);
    const plain = await t.call(key, 'GET', '/api/receipts/plain');
    const expected = {
      receiptId: 'plain',
      totalUsd: 0.3,
      currency: 'USD',
      lineItems: [{ label, priceUsd: 0.1, qty: 3 }],
      createdAt: plain.body.createdAt,
      metadata: {},
      returnUrl: null,
      brandName: 'Café "Ünïcode" 🍩',
      status: 'pending',
      exception: null,
      expiresAt: plain.body.createdAt + 3_600_000,
      amountPaid: '0',
      amountDue: '300000',
      refundedUsd: 0,
      totalBaseUnits: '300000',
      amountPaidBaseUnits: '0',
      amountDueBaseUnits: '300000',
      decimals: 6,
      token: null,
      payTo: null,
      payer: null,
      jurisdictionCode: null,
      taxRate: 0,
      taxComponents: [],
      statusHistory: [{ status: 'pending', at: plain.body.createdAt, source: 'api' }],
      refunds: [],
    };
    assert.equal(await detailText(key, 'plain'), JSON.stringify(expected));

    // Every optional part present, on a row stored without its summary text.
    const createdAt = Date.now() - 5_000;
    const lineItems = [
      { label: 'Latte "oat"', priceCents: '450', qty: 2, sku: 'latte', kind: 'item' as const },
      { label: 'Tax', priceCents: '1', kind: 'tax' as const },
    ];
    const tax = { jurisdictionCode: 'US-"CA"', taxRatePpm: 82_500, taxComponents: ['state', 'county "x"'] };
    // Keys in the order jsonb keeps them (shorter first), which the answer follows.
    const metadata = { a: '', 'k"q': label, 'é 🍩\\': '42' };
    await t.deps.stores.receipts.insertOne(t.deps.database.db, testReceipt({ wallet, id: 'full', status: 'generated', lineItems, totalCents: 901n, createdAt, metadata, returnUrl: 'https://shop.example/o?a="1"&b=\\', ...tax }));
    const hash = '0x' + 'ab'.repeat(32);
    await t.deps.database.db
      .update(receipts)
      .set({ summaryJson: null, status: 'completed', transactionHash: hash, transactionTimestamp: createdAt + 3_000, paidUnits: '9020000', exception: 'overpaid', payAddress: '0x' + 'cd'.repeat(20) })
      .where(eq(receipts.id, 'full'));
    await t.deps.database.db.insert(receiptStatusHistory).values([
      { wallet, receiptId: 'full', status: 'tx_mined', source: 'chain', at: createdAt + 2_000 },
      { wallet, receiptId: 'full', status: 'completed', source: 'chain', at: createdAt + 3_000 },
    ]);
    // The payer is the sender of the first transfer of the receipt's token: not another token's
    // earlier one, not a sweep, and by block then log index, not by insertion.
    const token = '0x' + 'ee'.repeat(20);
    const payTo = '0x' + 'cd'.repeat(20);
    const transfer = (n: number, logIndex: number, kind: 'in' | 'sweep', tok: string, from: string) => ({
      transactionHash: '0x' + n.toString(16).padStart(64, '0'), logIndex, wallet, receiptId: 'full', kind, token: tok, fromAddress: from,
      amountUnits: '4510000', blockNumber: BigInt(n), blockHash: '0x' + 'bb'.repeat(32), timestamp: createdAt + 1_000,
    });
    await t.deps.database.db.insert(receiptTransfers).values([
      transfer(9, 2, 'in', token, '0x' + 'b2'.repeat(20)),
      transfer(3, 0, 'sweep', token, payTo),
      transfer(4, 5, 'in', '0x' + 'ff'.repeat(20), '0x' + 'a0'.repeat(20)),
      transfer(9, 1, 'in', token, '0x' + 'b1'.repeat(20)),
    ]);
    // One refund verified on the chain, one recorded without a transaction; both count, oldest first.
    const buyer = '0x' + 'b1'.repeat(20);
    const refundTx = '0x' + 'fe'.repeat(32);
    await t.deps.database.db.insert(refunds).values([
      { wallet, id: 'rfd-2', receiptId: 'full', buyer, amountCents: 25n, items: [], createdBy: wallet, createdAt: createdAt + 5_000 },
      {
        wallet, id: 'rfd-1', receiptId: 'full', buyer, amountCents: 150n, items: [], txHash: refundTx, logIndex: 3,
        amountUnits: '1500000', verifiedAt: createdAt + 4_000, createdBy: wallet, createdAt: createdAt + 4_000,
      },
    ]);
    const full = (payer: string | null, chainToken: string | null = null) =>
      JSON.stringify({
        receiptId: 'full',
        totalUsd: 9.01,
        currency: 'USD',
        lineItems: [
          { label: 'Latte "oat"', priceUsd: 4.5, qty: 2 },
          { label: 'Tax', priceUsd: 0.01 },
        ],
        createdAt,
        metadata,
        returnUrl: 'https://shop.example/o?a="1"&b=\\',
        brandName: 'Café "Ünïcode" 🍩',
        status: 'completed',
        exception: 'overpaid',
        expiresAt: createdAt + 3_600_000,
        amountPaid: '9020000',
        amountDue: '0',
        refundedUsd: 1.75,
        totalBaseUnits: '9010000',
        amountPaidBaseUnits: '9020000',
        amountDueBaseUnits: '0',
        decimals: 6,
        token: chainToken,
        payTo,
        payer,
        jurisdictionCode: 'US-"CA"',
        taxRate: 0.0825,
        taxComponents: ['state', 'county "x"'],
        transactionHash: hash,
        transactionTimestamp: createdAt + 3_000,
        statusHistory: [
          { status: 'generated', at: createdAt, source: 'order' },
          { status: 'tx_mined', at: createdAt + 2_000, source: 'chain' },
          { status: 'completed', at: createdAt + 3_000, source: 'chain' },
        ],
        refunds: [
          { id: 'rfd-1', usd: 1.5, amountUsd: 1.5, buyer, txHash: refundTx, verified: true, verification: 'verified', createdAt: createdAt + 4_000 },
          { id: 'rfd-2', usd: 0.25, amountUsd: 0.25, buyer, txHash: null, verified: false, verification: 'none', createdAt: createdAt + 5_000 },
        ],
      });
    // This app has no chain, so no token to count: no payer.
    assert.equal(await detailText(key, 'full'), full(null));
    // With the chain's token (in any letter case), the first counted transfer's sender; the token
    // as the chain configures it.
    const store = t.deps.stores.receipts;
    const upper = token.toUpperCase().replace('0X', '0x');
    assert.equal(await store.detailJson(wallet, 'full', t.config.brandName, upper), full('0x' + 'b1'.repeat(20), upper));
    assert.equal(JSON.parse(await store.detailJson(wallet, 'full', t.config.brandName, '0x' + 'ff'.repeat(20))).payer, '0x' + 'a0'.repeat(20));
    assert.equal(JSON.parse(await store.detailJson(wallet, 'full', t.config.brandName, '0x' + 'ab'.repeat(20))).payer, null);
  });

  test('without a shop name, the detail shows the service\'s brand name', async () => {
    const key = await t.key(randomWallet());
    await t.call(key, 'POST', '/api/receipts', body('unbranded'));
    assert.equal(JSON.parse(await detailText(key, 'unbranded')).brandName, t.config.brandName);
  });

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
    assert.deepEqual(res.body, {
      id: 's1',
      status: 'pending',
      transactionHash: null,
      currency: 'USDC',
      amount: 9.25,
      amountUsd: 9.25,
      exception: null,
      expiresAt: res.body.expiresAt,
      amountPaid: '0',
      amountDue: '9250000',
      totalBaseUnits: '9250000',
      amountPaidBaseUnits: '0',
      amountDueBaseUnits: '9250000',
      decimals: 6,
      token: null,
      metadata: {},
      returnUrl: null,
    });
    // Measured from the receipt's own creation time, not from the clock of this test.
    const { createdAt } = (await t.call(key, 'GET', '/api/receipts/s1')).body;
    assert.equal(res.body.expiresAt, createdAt + 3_600_000, 'the default time to live is an hour');
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
    ];
    for (const [payload, status, code] of cases) {
      const res = await t.call(null, 'POST', '/api/receipts/status', payload);
      assert.equal(res.status, status, JSON.stringify(payload));
      assert.equal(res.body.error, code, JSON.stringify(payload));
    }
    // No credential is needed, so a receipt nobody has is not an error: the route is no existence oracle.
    const missing = await t.call(null, 'POST', '/api/receipts/status', { receiptId: 'nope', wallet, status: 'link_opened' });
    assert.equal(missing.status, 200);
    assert.deepEqual(missing.body, { ok: true });
  });
});
