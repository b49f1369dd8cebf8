/**
 * metadata on receipts and orders (DESIGN.md "Integrator API"): its limits, each refused with a
 * message naming the problem; kept and echoed by the detail, the list, the status answer, the
 * order's answer and the webhook events about the receipt; part of what makes a retry the same
 * request; carried through the journal.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import pino from 'pino';
import { receipts, webhookEvents } from '../src/db/schema.ts';
import { refundReceipt } from '../src/domain/refunds.ts';
import { Journal } from '../src/journal/journal.ts';
import { expireReceipt } from '../src/payments/settle.ts';
import { randomWallet, startTestApp, type TestApp } from './helpers/app.ts';
import { assertRefusedOnReceiptsAndOrders, setUpMerchant } from './helpers/merchant.ts';
import { staleReceiptViews } from './helpers/receipt-views.ts';

let t: TestApp;
const dirs: string[] = [];
before(async () => {
  t = await startTestApp();
});
after(async () => {
  await t.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const META = { shopOrder: 'SO-20417', note: 'Gift wrap, card says “Happy birthday”', 'x.y:z': '' };
const receiptBody = (id: string, metadata?: unknown) => ({
  id,
  lineItems: [{ label: 'Coffee', priceUsd: 3.5, qty: 2 }],
  totalUsd: 7,
  ...(metadata === undefined ? {} : { metadata }),
});

const keys = (n: number, length = 8) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${String(i).padStart(length - 1, '0')}`, 'v']));

async function eventsOf(wallet: string, id: string) {
  const rows = await t.deps.database.db.select().from(webhookEvents).where(eq(webhookEvents.wallet, wallet));
  return rows
    .map((r) => ({ type: r.type, data: (r.payload as { data: Record<string, unknown> }).data }))
    .filter((e) => e.data.receiptId === id);
}

describe('metadata: limits', () => {
  for (const [name, metadata, says] of [
    ['51 keys', keys(51), /metadata may hold at most 50 keys; it has 51/],
    ['a key of 41 characters', { ['k'.repeat(41)]: 'v' }, /metadata key "k{41}" must be 1-40 characters; it has 41/],
    ['an empty key', { '': 'v' }, /metadata key "" must be 1-40 characters/],
    ['a value of 501 characters', { ref: 'v'.repeat(501) }, /metadata\.ref must be at most 500 characters; it has 501/],
    ['a number value', { count: 3 }, /metadata\/count must be string/],
    ['a nested object', { deep: { a: 'b' } }, /metadata\/deep must be string/],
    ['an array', ['a'], /metadata must be object/],
    ['a string', 'SO-1', /metadata must be object/],
  ] as const) {
    test(`refuses ${name} with 400 invalid_input naming it, on receipts and orders`, async () => {
      const m = await setUpMerchant(t, { items: [{ sku: 'tea', name: 'Tea', priceUsd: 2 }] });
      await assertRefusedOnReceiptsAndOrders(t, m, receiptBody('bad-meta', metadata), { items: [{ sku: 'tea', qty: 1 }], metadata }, says);
    });
  }

  test('takes exactly the limits: 50 keys, keys of 40 characters, values of 500 (characters, not bytes)', async () => {
    const key = await t.key(randomWallet());
    const full = { ...keys(49, 40), ['é'.repeat(40)]: '€'.repeat(500) };
    const res = await t.call(key, 'POST', '/api/receipts', receiptBody('full-meta', full));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const detail = await t.call(key, 'GET', '/api/receipts/full-meta');
    assert.deepEqual(detail.body.metadata, full);
  });
});

describe('metadata: echoed', () => {
  test('by the receipt detail, the list and the status answer; {} when none was sent', async () => {
    const key = await t.key(randomWallet());
    assert.equal((await t.call(key, 'POST', '/api/receipts', receiptBody('with-meta', META))).status, 201);
    assert.equal((await t.call(key, 'POST', '/api/receipts', receiptBody('no-meta'))).status, 201);
    const detail = await t.call(key, 'GET', '/api/receipts/with-meta');
    assert.deepEqual(detail.body.metadata, META);
    // In the list's order of fields: right after createdAt, before returnUrl and the brand.
    assert.deepEqual(Object.keys(detail.body).slice(4, 8), ['createdAt', 'metadata', 'returnUrl', 'brandName']);
    assert.deepEqual((await t.call(key, 'GET', '/api/receipts/no-meta')).body.metadata, {});
    const list = await t.call(key, 'GET', '/api/receipts');
    const byId = Object.fromEntries(list.body.receipts.map((r: { receiptId: string; metadata: unknown }) => [r.receiptId, r.metadata]));
    assert.deepEqual(byId, { 'with-meta': META, 'no-meta': {} });
    const status = await t.call(key, 'GET', '/api/receipts/status?receiptId=with-meta');
    assert.equal(status.status, 200);
    assert.deepEqual(status.body.metadata, META);
    assert.deepEqual(await staleReceiptViews(t.deps.database.db), []);
  });

  test("by the order's answer and the order's receipt", async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'tea', name: 'Tea', priceUsd: 2 }] });
    const res = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'tea', qty: 2 }], metadata: META });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.receipt.metadata, META);
    const id = res.body.receipt.receiptId as string;
    assert.deepEqual((await t.call(m.key, 'GET', `/api/receipts/${id}`)).body.metadata, META);
    assert.deepEqual((await t.call(m.key, 'GET', `/api/receipts/status?receiptId=${id}`)).body.metadata, META);
    const plain = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'tea', qty: 1 }] });
    assert.deepEqual(plain.body.receipt.metadata, {});
  });

  test('by the webhook events about the receipt: expired, refund_recorded, refunded', async () => {
    const wallet = randomWallet();
    const key = await t.key(wallet);
    const db = t.deps.database.db;
    assert.equal((await t.call(key, 'POST', '/api/receipts', { ...receiptBody('ev-1', META), expiresInMinutes: 1 })).status, 201);
    const [row] = await db.select().from(receipts).where(and(eq(receipts.wallet, wallet), eq(receipts.id, 'ev-1')));
    const expired = await db.transaction((tx) => expireReceipt(tx, { wallet, receiptId: 'ev-1' }, row!.expiresAt + 1, '0x0000000000000000000000000000000000000001'));
    assert.equal(expired, true);
    await refundReceipt(db, { receiptId: 'ev-1', wallet, buyer: '0x00000000000000000000000000000000000000b1', cents: 700n, items: [], txHash: null, by: wallet });
    const events = await eventsOf(wallet, 'ev-1');
    assert.deepEqual(events.map((e) => e.type).sort(), ['receipt.expired', 'receipt.refund_recorded', 'receipt.refunded']);
    for (const e of events) assert.deepEqual(e.data.metadata, META, e.type);
  });
});

describe('metadata: retries', () => {
  test('the same id and metadata (in any key order) answers as the first call; other metadata is 409 conflict', async () => {
    const key = await t.key(randomWallet());
    const first = await t.call(key, 'POST', '/api/receipts', receiptBody('retry-1', { a: '1', b: '2' }));
    assert.equal(first.status, 201);
    const again = await t.call(key, 'POST', '/api/receipts', receiptBody('retry-1', { b: '2', a: '1' }));
    assert.equal(again.status, 201);
    assert.deepEqual(again.body, first.body);
    for (const other of [{ a: '1', b: '3' }, { a: '1' }, undefined]) {
      const res = await t.call(key, 'POST', '/api/receipts', receiptBody('retry-1', other));
      assert.equal(res.status, 409, JSON.stringify(other));
      assert.equal(res.body.error, 'conflict');
    }
    // A receipt created without metadata is the same request as one sent with {}.
    assert.equal((await t.call(key, 'POST', '/api/receipts', receiptBody('retry-2'))).status, 201);
    assert.equal((await t.call(key, 'POST', '/api/receipts', receiptBody('retry-2', {}))).status, 201);
    assert.equal((await t.call(key, 'POST', '/api/receipts', receiptBody('retry-2', { a: '1' }))).status, 409);
  });

  test('an Idempotency-Key repeats its answer for the same metadata and is 409 for other metadata, on receipts and orders', async () => {
    const m = await setUpMerchant(t, { items: [{ sku: 'tea', name: 'Tea', priceUsd: 2 }] });
    const headers = { 'idempotency-key': `k-${Math.random()}` };
    const first = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'tea', qty: 1 }], metadata: META }, headers);
    assert.equal(first.status, 200);
    const again = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'tea', qty: 1 }], metadata: META }, headers);
    assert.deepEqual(again.body, first.body);
    const other = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'tea', qty: 1 }], metadata: { ...META, shopOrder: 'SO-2' } }, headers);
    assert.equal(other.status, 409);
    assert.equal(other.body.error, 'conflict');
    const receiptHeaders = { 'idempotency-key': `r-${Math.random()}` };
    assert.equal((await t.call(m.key, 'POST', '/api/receipts', receiptBody('idem-1', META), receiptHeaders)).status, 201);
    const changed = await t.call(m.key, 'POST', '/api/receipts', receiptBody('idem-1', { shopOrder: 'other' }), receiptHeaders);
    assert.equal(changed.status, 409);
    assert.equal((await t.call(m.key, 'GET', '/api/receipts')).body.receipts.length, 2, 'one order, one receipt');
  });
});

describe('metadata: journal', () => {
  test('a journaled creation keeps its metadata: answered from the journal, stored by the replay, a conflict for other metadata', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'splitline-meta-'));
    dirs.push(dir);
    const logger = pino({ level: 'silent' });
    const journal = await Journal.open(dir, { database: t.deps.database, receipts: t.deps.stores.receipts, logger, siteUrl: 'http://pay.test', brandName: 'Shop' });
    const wallet = randomWallet();
    await journal.recordReceipt({ wallet, ...receiptBody('j-meta', META) });
    await assert.rejects(journal.recordReceipt({ wallet, ...receiptBody('j-meta', { shopOrder: 'other' }) }), /different body/);
    assert.deepEqual(journal.findReceipt(wallet, 'j-meta')?.metadata, META);
    await journal.replayNow();
    const key = await t.key(wallet);
    assert.deepEqual((await t.call(key, 'GET', '/api/receipts/j-meta')).body.metadata, META);
    // The database path judges a retry by the same fingerprint the journal stored.
    assert.equal((await t.call(key, 'POST', '/api/receipts', receiptBody('j-meta', META))).status, 201);
    assert.equal((await t.call(key, 'POST', '/api/receipts', receiptBody('j-meta', { shopOrder: 'other' }))).status, 409);
    await journal.close();
  });
});
