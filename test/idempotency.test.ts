/**
 * Idempotency-Key on every POST and the write ids behind it (DESIGN.md "Writes, retries and
 * instances"): the same key and request answers as the first call did, another request 409, a
 * retry whose first answer was lost finds its write, concurrent retries make one write, keys are
 * scoped to their caller, secrets are never stored, and answers are kept more than 24 hours.
 * Each test counts what the database holds afterwards.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { Purger } from '../src/auth/purge.ts';
import { idempotencyKeys, inventoryItems, receipts, receiptStatusHistory, refunds, subscriptions, writeIds } from '../src/db/schema.ts';
import { IDEMPOTENCY_RETENTION_MS, WRITE_ID_RETENTION_MS } from '../src/db/write-claims.ts';
import { type TestApp, useTestApp } from './helpers/app.ts';
import { setUpMerchant } from './helpers/merchant.ts';
import { admin, signIn } from './helpers/session.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const ORDER = { items: [{ sku: 'tea', qty: 2 }] };
const TEA = { sku: 'tea', name: 'Tea', priceUsd: 3, stockQty: 50 };
const key = (name: string) => ({ 'idempotency-key': `${name}-${Math.random().toString(36).slice(2)}` });

async function ordersOf(wallet: string): Promise<number> {
  const rows = await t.deps.database.db.select().from(receipts).where(and(eq(receipts.wallet, wallet), eq(receipts.source, 'order')));
  return rows.length;
}
async function stockOf(wallet: string): Promise<number | undefined> {
  const [row] = await t.deps.database.db.select().from(inventoryItems).where(and(eq(inventoryItems.wallet, wallet), eq(inventoryItems.sku, 'tea')));
  return row?.stockQty;
}

describe('Idempotency-Key', () => {
  test('an order retried with its key answers the first order again and makes no second one', async () => {
    const m = await setUpMerchant(t, { items: [TEA] });
    const h = key('order');
    const first = await t.call(m.key, 'POST', '/api/orders', ORDER, h);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const again = await t.call(m.key, 'POST', '/api/orders', ORDER, h);
    assert.equal(again.status, 200);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, first.body);
    assert.equal(await ordersOf(m.wallet), 1);
    assert.equal(await stockOf(m.wallet), 48);
    // Without a key, each request is a new order.
    await t.call(m.key, 'POST', '/api/orders', ORDER);
    assert.equal(await ordersOf(m.wallet), 2);
  });

  test('the same key with another body is 409 conflict and changes nothing', async () => {
    const m = await setUpMerchant(t, { items: [TEA] });
    const h = key('conflict');
    assert.equal((await t.call(m.key, 'POST', '/api/orders', ORDER, h)).status, 200);
    const other = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'tea', qty: 3 }] }, h);
    assert.equal(other.status, 409);
    assert.equal(other.body.error, 'conflict');
    assert.match(other.body.message, /Idempotency-Key/);
    assert.equal(await ordersOf(m.wallet), 1);
    assert.equal(await stockOf(m.wallet), 48);
  });

  test('a retry whose first answer was never stored finds its write by write id', async () => {
    const m = await setUpMerchant(t, { items: [TEA] });
    const h = key('lost');
    const first = await t.call(m.key, 'POST', '/api/orders', ORDER, h);
    assert.equal(first.status, 200);
    // The answer was lost with the instance (a crash, an ambiguous commit): only the write remains.
    await t.deps.database.db.delete(idempotencyKeys).where(eq(idempotencyKeys.key, h['idempotency-key']));
    const retry = await t.call(m.key, 'POST', '/api/orders', ORDER, h);
    assert.equal(retry.status, 200);
    assert.equal(retry.headers['idempotent-replayed'], undefined, 'answered by the route, from the stored write');
    assert.equal(retry.body.receipt.receiptId, first.body.receipt.receiptId);
    assert.equal(retry.body.receipt.paymentUrl, first.body.receipt.paymentUrl);
    assert.deepEqual(retry.body.receipt.lineItems, first.body.receipt.lineItems);
    assert.equal(await ordersOf(m.wallet), 1);
    assert.equal(await stockOf(m.wallet), 48);
    const [stored] = await t.deps.database.db.select().from(receipts).where(eq(receipts.id, first.body.receipt.receiptId));
    assert.ok(stored?.writeId?.startsWith('idem:'), 'the write id is stored with the order');
  });

  test('ten concurrent requests with one key make one order, and all answer it', async () => {
    const m = await setUpMerchant(t, { items: [TEA] });
    const h = key('race');
    const answers = await Promise.all(Array.from({ length: 10 }, () => t.call(m.key, 'POST', '/api/orders', ORDER, h)));
    assert.deepEqual(
      answers.map((a) => a.status),
      Array(10).fill(200),
    );
    assert.equal(new Set(answers.map((a) => a.body.receipt.receiptId)).size, 1);
    assert.equal(await ordersOf(m.wallet), 1);
    assert.equal(await stockOf(m.wallet), 48);
  });

  test('keys are scoped to their caller: two merchants may use the same key', async () => {
    const a = await setUpMerchant(t, { items: [TEA] });
    const b = await setUpMerchant(t, { items: [TEA] });
    const h = key('shared');
    const ra = await t.call(a.key, 'POST', '/api/orders', ORDER, h);
    const rb = await t.call(b.key, 'POST', '/api/orders', ORDER, h);
    assert.equal(ra.status, 200);
    assert.equal(rb.status, 200);
    assert.notEqual(ra.body.receipt.receiptId, rb.body.receipt.receiptId);
    assert.equal(rb.headers['idempotent-replayed'], undefined);
    assert.equal(await ordersOf(a.wallet), 1);
    assert.equal(await ordersOf(b.wallet), 1);
  });

  test('a key that is empty, too long or not printable is 400 invalid_input', async () => {
    const m = await setUpMerchant(t, { items: [TEA] });
    for (const bad of ['', 'x'.repeat(256), 'tab\there', 'é']) {
      const res = await t.call(m.key, 'POST', '/api/orders', ORDER, { 'idempotency-key': bad });
      assert.equal(res.status, 400, `${JSON.stringify(bad)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'invalid_input');
      assert.match(res.body.message, /idempotency-key/i);
    }
    assert.equal((await t.call(m.key, 'POST', '/api/orders', ORDER, { 'idempotency-key': 'x'.repeat(255) })).status, 200);
    assert.equal(await ordersOf(m.wallet), 1);
  });

  test('4xx answers are kept too: a retry of a refused order is refused the same way', async () => {
    const m = await setUpMerchant(t, { items: [TEA] });
    const h = key('short');
    const refused = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'tea', qty: 51 }] }, h);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error, 'out_of_stock');
    const again = await t.call(m.key, 'POST', '/api/orders', { items: [{ sku: 'tea', qty: 51 }] }, h);
    assert.equal(again.status, 409);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, refused.body);
  });

  test('receipt creations, tracking statuses and inventory changes retried with their keys are stored once', async () => {
    const m = await setUpMerchant(t);
    const db = t.deps.database.db;
    const hr = key('receipt');
    const body = { id: 'idem-r1', lineItems: [{ label: 'Tea', priceUsd: 2 }], totalUsd: 2 };
    const r1 = await t.call(m.key, 'POST', '/api/receipts', body, hr);
    const r2 = await t.call(m.key, 'POST', '/api/receipts', body, hr);
    assert.equal(r1.status, 201);
    assert.deepEqual(r2.body, r1.body);
    const [row] = await db.select().from(receipts).where(and(eq(receipts.wallet, m.wallet), eq(receipts.id, 'idem-r1')));
    assert.ok(row?.writeId?.startsWith('idem:'));

    const hs = key('status');
    const status = { receiptId: 'idem-r1', wallet: m.wallet, status: 'link_opened' };
    for (let i = 0; i < 3; i++) assert.equal((await t.call(null, 'POST', '/api/receipts/status', status, hs)).status, 200);
    // The store answered the repeats; with the store emptied, the write id still holds.
    await db.delete(idempotencyKeys).where(eq(idempotencyKeys.key, hs['idempotency-key']));
    assert.equal((await t.call(null, 'POST', '/api/receipts/status', status, hs)).status, 200);
    const [tracked] = await db
      .select()
      .from(receiptStatusHistory)
      .where(and(eq(receiptStatusHistory.wallet, m.wallet), eq(receiptStatusHistory.receiptId, 'idem-r1'), eq(receiptStatusHistory.status, 'link_opened')));
    assert.equal(tracked?.count, 1);
    // A status sent again without a key is a new event, counted.
    await t.call(null, 'POST', '/api/receipts/status', status);
    const [counted] = await db
      .select()
      .from(receiptStatusHistory)
      .where(and(eq(receiptStatusHistory.wallet, m.wallet), eq(receiptStatusHistory.receiptId, 'idem-r1'), eq(receiptStatusHistory.status, 'link_opened')));
    assert.equal(counted?.count, 2);

    const hi = key('item');
    const created = await t.call(m.key, 'POST', '/api/inventory', TEA, hi);
    assert.equal(created.status, 201);
    await db.delete(idempotencyKeys).where(eq(idempotencyKeys.key, hi['idempotency-key']));
    const retried = await t.call(m.key, 'POST', '/api/inventory', TEA, hi);
    assert.equal(retried.status, 201, 'a retry of the write that created the item answers as it did: created');
    assert.equal(retried.body.item.id, created.body.item.id);
    // A write that updated an existing item answers 200, and so does its retry.
    const hu = key('item-update');
    const updated = await t.call(m.key, 'POST', '/api/inventory', { ...TEA, priceUsd: 4 }, hu);
    assert.equal(updated.status, 200);
    await db.delete(idempotencyKeys).where(eq(idempotencyKeys.key, hu['idempotency-key']));
    assert.equal((await t.call(m.key, 'POST', '/api/inventory', { ...TEA, priceUsd: 4 }, hu)).status, 200);
    const claims = await db.select().from(writeIds).where(and(eq(writeIds.wallet, m.wallet), eq(writeIds.kind, 'inventory')));
    assert.deepEqual(claims.map((c) => c.ref), ['tea', 'tea'], 'one claim per write');
  });

  test('admin app writes: a refund retried with its key is made once; a secret shown once is never stored', async () => {
    const s = await signIn(t);
    const m = await setUpMerchant(t);
    await t.call(await t.key(s.wallet), 'POST', '/api/receipts', { id: 'refund-me', lineItems: [{ label: 'Tea', priceUsd: 5 }], totalUsd: 5 });
    const h = key('refund');
    const refund = { wallet: s.wallet, receiptId: 'refund-me', buyer: m.wallet, usd: 2 };
    const first = await admin(t, s, 'POST', '/api/receipts/refund', refund, h);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    await t.deps.database.db.delete(idempotencyKeys).where(eq(idempotencyKeys.key, h['idempotency-key']));
    const retry = await admin(t, s, 'POST', '/api/receipts/refund', refund, h);
    assert.equal(retry.status, 200);
    assert.equal(retry.body.refundId, first.body.refundId);
    const made = await t.deps.database.db.select().from(refunds).where(eq(refunds.wallet, s.wallet));
    assert.equal(made.length, 1);

    const hk = key('subscription');
    const sub = await admin(t, s, 'POST', '/api/admin/subscriptions', { name: 'till' }, hk);
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const [stored] = await t.deps.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, hk['idempotency-key']));
    assert.ok(stored !== undefined);
    assert.equal(stored.body.includes(sub.body.primaryKey), false, 'the key shown once is not in the store');
    const again = await admin(t, s, 'POST', '/api/admin/subscriptions', { name: 'till' }, hk);
    assert.equal(again.status, 409);
    assert.match(again.body.message, /shown only once/);
    const subs = await t.deps.database.db.select().from(subscriptions).where(eq(subscriptions.wallet, s.wallet));
    assert.equal(subs.length, 2, 'the test key and the one subscription made here');
  });

  test('answers are kept more than 24 hours; the purge drops them after their retention', async () => {
    const m = await setUpMerchant(t, { items: [TEA] });
    const h = key('kept');
    const first = await t.call(m.key, 'POST', '/api/orders', ORDER, h);
    const now = Date.now();
    const purge = (at: number) => new Purger({ db: t.deps.database.db, auth: t.deps.auth, claims: t.deps.stores.claims, logger: t.deps.logger, now: () => at }).runOnce();
    await purge(now + 25 * 3600_000);
    const later = await t.call(m.key, 'POST', '/api/orders', ORDER, h);
    assert.equal(later.headers['idempotent-replayed'], 'true');
    assert.equal(later.body.receipt.receiptId, first.body.receipt.receiptId);
    const purged = await purge(now + Math.max(IDEMPOTENCY_RETENTION_MS, WRITE_ID_RETENTION_MS) + 60_000);
    assert.ok(purged.idempotencyKeys >= 1 && purged.writeIds >= 1, JSON.stringify(purged));
    const [gone] = await t.deps.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, h['idempotency-key']));
    assert.equal(gone, undefined);
  });
});
