/**
 * The receipt views the database keeps on each row (migrations/0010_receipt_views.sql): what a new
 * receipt stores is what the database would render, every kind of change renders them again, a
 * row stored without them reads the same, and concurrent changes leave none stale.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { receipts, receiptStatusHistory, refunds } from '../src/db/schema.ts';
import type { InsertReceiptParams } from '../src/db/receipt-store.ts';
import { recordTrackingStatus } from '../src/domain/receipts.ts';
import { parseRefund, refundReceipt } from '../src/domain/refunds.ts';
import { setSensitiveStatus } from '../src/domain/sensitive-status.ts';
import { randomWallet, type TestApp, useTestApp } from './helpers/app.ts';
import { staleReceiptViews, testReceipt, unrenderedReceipts } from './helpers/receipt-views.ts';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const db = () => t.deps.database.db;
const BUYER = '0x' + 'b1'.repeat(20);

/** A receipt as the service stores one, with tax and text that JSON must escape. */
function storeReceipt(wallet: string, id: string, extra: Partial<InsertReceiptParams> = {}) {
  return t.deps.stores.receipts.insertOne(
    db(),
    testReceipt({
      wallet,
      id,
      lineItems: [
        { label: 'Latte "oat" \\ ü 🍩 \u0001', priceCents: '450', qty: 2, sku: 'latte', kind: 'item' },
        { label: 'Tax', priceCents: '74', kind: 'tax' },
      ],
      createdAt: Date.now() - 10_000,
      jurisdictionCode: 'US-"CA"',
      taxRatePpm: 82_500,
      taxComponents: ['state', 'county "x" \n'],
      ...extra,
    }),
  );
}

const detail = async (wallet: string, id: string) => JSON.parse(await t.deps.stores.receipts.detailJson(wallet, id, 'Splitline')) as Record<string, unknown>;

describe('receipt views stored with the row', () => {
  test('a new receipt stores exactly what the database renders, whatever its tax and text', async () => {
    const wallet = randomWallet().toLowerCase();
    await storeReceipt(wallet, 'new-order');
    await storeReceipt(wallet, 'new-plain', { source: 'api', status: 'generated', jurisdictionCode: null, taxRatePpm: null, taxComponents: [], totalCents: 1n });
    await storeReceipt(wallet, 'new-rate', { source: 'terminal', taxRatePpm: 1, totalCents: 123_456_789_012n });
    const key = await t.key(wallet);
    assert.equal((await t.call(key, 'POST', '/api/receipts', { id: 'new-api', lineItems: [{ label: 'Tea', priceUsd: 1.1 }], totalUsd: 1.1 })).status, 201);
    const rows = await db().select().from(receipts).where(eq(receipts.wallet, wallet));
    assert.equal(rows.length, 4);
    for (const row of rows) {
      assert.ok(row.stateJson?.startsWith(',"status":'), row.id);
      assert.ok(row.detailJson?.includes('"statusHistory":[{'), row.id);
    }
    assert.deepEqual(await staleReceiptViews(db()), []);
    assert.deepEqual(
      (await unrenderedReceipts(db())).filter((k) => k.startsWith(wallet)),
      [],
    );
    const plain = await detail(wallet, 'new-plain');
    assert.equal(plain.taxRate, 0);
    assert.deepEqual(plain.statusHistory, [{ status: 'generated', at: rows.find((r) => r.id === 'new-plain')!.createdAt, source: 'api' }]);
    assert.equal((await detail(wallet, 'new-rate')).taxRate, 0.000001);
    assert.equal((await detail(wallet, 'new-rate')).amountDue, '1234567890120000');
  });

  test('every kind of change renders them again: statuses, repeats, refunds, payment, history and refund edits', async () => {
    const wallet = randomWallet().toLowerCase();
    await storeReceipt(wallet, 'life');
    const fresh = async (step: string) => assert.deepEqual(await staleReceiptViews(db()), [], step);

    await recordTrackingStatus(db(), { wallet, receiptId: 'life', status: 'link_opened' });
    await recordTrackingStatus(db(), { wallet, receiptId: 'life', status: 'link_opened' });
    await fresh('tracking status, then its repeat');
    const tracked = await detail(wallet, 'life');
    assert.equal(tracked.status, 'link_opened');
    assert.deepEqual((tracked.statusHistory as { count?: number }[]).map((h) => h.count), [undefined, 2]);

    await setSensitiveStatus(db(), { wallet, receiptId: 'life', status: 'checkout_success', by: wallet });
    await fresh('sensitive status');
    assert.equal((await detail(wallet, 'life')).status, 'checkout_success');

    // What the chain worker writes: payment, transaction and its history entry.
    const hash = '0x' + 'ab'.repeat(32);
    await db().update(receipts).set({ status: 'completed', paidUnits: '9740000', transactionHash: hash, transactionTimestamp: 1_000 }).where(and(eq(receipts.wallet, wallet), eq(receipts.id, 'life')));
    await db().insert(receiptStatusHistory).values({ wallet, receiptId: 'life', status: 'completed', source: 'chain', at: 1_000 });
    await fresh('payment');
    const paid = await detail(wallet, 'life');
    assert.deepEqual([paid.status, paid.amountPaid, paid.amountDue, paid.transactionHash], ['completed', '9740000', '0', hash]);
    assert.equal((paid.statusHistory as unknown[]).length, 4);

    await refundReceipt(db(), { ...parseRefund({ receiptId: 'life', wallet, buyer: BUYER, usd: 1.5 }), by: wallet });
    await fresh('partial refund');
    const partly = await detail(wallet, 'life');
    assert.equal(partly.refundedUsd, 1.5);
    assert.equal((partly.refunds as unknown[]).length, 1);

    await refundReceipt(db(), { ...parseRefund({ receiptId: 'life', wallet, buyer: BUYER, usd: 8.24 }), by: wallet });
    await fresh('full refund');
    const refunded = await detail(wallet, 'life');
    assert.deepEqual([refunded.status, refunded.refundedUsd, (refunded.refunds as unknown[]).length], ['refunded', 9.74, 2]);

    // Edits no route makes today, which the views must follow all the same.
    await db().update(refunds).set({ verifiedAt: 2_000 }).where(eq(refunds.receiptId, 'life'));
    await fresh('refund verified');
    assert.ok(((await detail(wallet, 'life')).refunds as { verified: boolean }[]).every((r) => r.verified));
    await db().delete(refunds).where(and(eq(refunds.wallet, wallet), eq(refunds.receiptId, 'life')));
    await fresh('refunds deleted');
    assert.equal((await detail(wallet, 'life')).refundedUsd, 0);
    await db().delete(receiptStatusHistory).where(and(eq(receiptStatusHistory.wallet, wallet), eq(receiptStatusHistory.source, 'tracking')));
    await fresh('history entry deleted');
    assert.deepEqual(((await detail(wallet, 'life')).statusHistory as { status: string }[]).map((h) => h.status), ['pending', 'checkout_success', 'completed', 'refund_partial', 'refunded']);
  });

  test('a row stored without its views reads exactly as one stored with them', async () => {
    const wallet = randomWallet().toLowerCase();
    const stored = await storeReceipt(wallet, 'with');
    await recordTrackingStatus(db(), { wallet, receiptId: 'with', status: 'link_opened' });
    const [row] = await db().select().from(receipts).where(and(eq(receipts.wallet, wallet), eq(receipts.id, 'with')));
    // Inserted as an older instance or a direct load would: no views (an insert renders nothing).
    await db().insert(receipts).values({ ...row!, id: 'without', payToken: 'tok-without', summaryJson: null, stateJson: null, detailJson: null });
    const history = await db().select().from(receiptStatusHistory).where(and(eq(receiptStatusHistory.wallet, wallet), eq(receiptStatusHistory.receiptId, 'with')));
    // As sources the creation uses, so no trigger renders the copy's views.
    await db().insert(receiptStatusHistory).values(history.map(({ seq: _, ...h }) => ({ ...h, receiptId: 'without', source: 'api' as const })));
    await db().update(receiptStatusHistory).set({ source: 'api' }).where(and(eq(receiptStatusHistory.wallet, wallet), eq(receiptStatusHistory.receiptId, 'with')));
    assert.deepEqual(await unrenderedReceipts(db()).then((keys) => keys.filter((k) => k.startsWith(wallet))), [`${wallet} without`]);
    const withText = await t.deps.stores.receipts.detailJson(wallet, 'with', 'Splitline');
    const withoutText = await t.deps.stores.receipts.detailJson(wallet, 'without', 'Splitline');
    assert.equal(withoutText, withText.replace('"receiptId":"with"', '"receiptId":"without"'));
    const key = await t.key(wallet);
    const list = await t.call(key, 'GET', '/api/receipts');
    const [a, b] = ['without', 'with'].map((id) => list.body.receipts.find((r: { receiptId: string }) => r.receiptId === id));
    assert.deepEqual({ ...a, receiptId: 'with' }, b);
    assert.equal(stored.id, 'with');
  });

  test('concurrent statuses and refunds on one receipt leave its views matching the rows', async () => {
    const wallet = randomWallet().toLowerCase();
    await storeReceipt(wallet, 'busy', { totalCents: 100_000n });
    const writes = [
      ...(['link_opened', 'buyer_logged_in', 'checkout_initialized', 'link_opened', 'buyer_logged_in'] as const).map((status) =>
        recordTrackingStatus(db(), { wallet, receiptId: 'busy', status }),
      ),
      ...Array.from({ length: 6 }, (_, i) => refundReceipt(db(), { ...parseRefund({ receiptId: 'busy', wallet, buyer: BUYER, usd: i + 1 }), by: wallet })),
      setSensitiveStatus(db(), { wallet, receiptId: 'busy', status: 'refund_requested', by: wallet }),
    ];
    await Promise.all(writes);
    assert.deepEqual(await staleReceiptViews(db()), []);
    const busy = await detail(wallet, 'busy');
    assert.equal(busy.refundedUsd, 21);
    assert.equal((busy.refunds as unknown[]).length, 6);
    // Two repeats counted on their entries: five tracking writes, three entries.
    const tracking = (busy.statusHistory as { source: string; count?: number }[]).filter((h) => h.source === 'tracking');
    assert.deepEqual(tracking.map((h) => h.count ?? 1).reduce((a, b) => a + b, 0), 5);
  });
});
