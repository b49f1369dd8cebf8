/**
 * What a stream of writes was told, and the proof afterwards that the database agrees: every
 * acknowledged receipt and order stored exactly once (receipts with the paymentUrl handed out),
 * nothing stored that was not sent, and stock decremented by exactly the orders that exist.
 */
import assert from 'node:assert/strict';
import { and, eq } from 'drizzle-orm';
import type { Db } from '../../src/db/client.ts';
import { inventoryItems, receipts, receiptStatusHistory } from '../../src/db/schema.ts';

export const BULK = { sku: 'bulk', name: 'Bulk', priceUsd: 1.25, stockQty: 1_000_000 };
export const SCARCE = { sku: 'scarce', name: 'Scarce', priceUsd: 4, stockQty: 20 };

export const receiptBody = (id: string, cents = 250) => ({
  id,
  lineItems: [{ label: `Item ${id}`, priceUsd: cents / 100, qty: 2 }],
  totalUsd: (cents * 2) / 100,
});

/** The n-th order of a stream: some bulk, and now and then one of the scarce item. */
export function orderBody(n: number): { items: { sku: string; qty: number }[] } {
  const items = [{ sku: BULK.sku, qty: 1 + (n % 3) }];
  if (n % 4 === 0) items.push({ sku: SCARCE.sku, qty: 1 });
  return { items };
}

export interface Answer {
  status: number;
  body: any;
}

export class WriteLedger {
  /** Acknowledged receipts: id → paymentUrl. */
  readonly receipts = new Map<string, string>();
  /** Acknowledged orders: receipt id → quantities. */
  readonly orders = new Map<string, { bulk: number; scarce: number }>();
  /** Tracking statuses acknowledged, per "receiptId status". */
  readonly statuses = new Map<string, number>();
  /** Writes sent whose answer never came (the process died, the connection broke). */
  readonly unacked = { receipts: new Set<string>(), orders: 0, statuses: new Map<string, number>() };
  /** Answers no client should ever see: 5xx other than 503 database_unavailable and 500 failed for a commit of unknown outcome, bodies not {error, message}. */
  readonly failures: string[] = [];
  degraded = { receipts: 0, statuses: 0, lists: 0, orders503: 0, statuses503: 0 };
  outOfStock = 0;
  direct = 0;
  /** Orders answered 500 failed because their commit's outcome was unknown. */
  unknownOutcome = 0;

  receipt(id: string, res: Answer): void {
    if (res.status !== 201) return void this.failures.push(`POST /api/receipts ${id}: ${res.status} ${JSON.stringify(res.body)}`);
    this.receipts.set(id, res.body.paymentUrl);
    if (res.body.degraded === true) this.degraded.receipts++;
    else this.direct++;
  }

  order(n: number, res: Answer): void {
    if (res.status === 200 && res.body.ok === true) {
      const body = orderBody(n);
      this.orders.set(res.body.receipt.receiptId, {
        bulk: body.items[0]!.qty,
        scarce: body.items[1]?.qty ?? 0,
      });
      this.direct++;
      return;
    }
    if (res.status === 409 && res.body.error === 'out_of_stock') {
      this.outOfStock++;
      return;
    }
    // Orders are never queued while the database is away: 503, and nothing was acknowledged.
    if (res.status === 503 && res.body.error === 'database_unavailable') {
      this.degraded.orders503++;
      return;
    }
    // The connection broke after COMMIT was sent: the service says it cannot know (500 failed,
    // never a 503). Stored or not, it was not acknowledged; a client retries with its key to learn.
    if (res.status === 500 && res.body.error === 'failed' && /may or may not be stored/.test(res.body.message)) {
      this.unknownOutcome++;
      this.unacked.orders++;
      return;
    }
    this.failures.push(`POST /api/orders #${n}: ${res.status} ${JSON.stringify(res.body)}`);
  }

  status(receiptId: string, status: string, res: Answer): void {
    const k = `${receiptId} ${status}`;
    // A tracking status for a receipt this instance's journal does not hold is not journaled
    // while the database is away (nobody may plant alerts): 503, and nothing was acknowledged.
    if (res.status === 503 && res.body.error === 'database_unavailable') {
      this.degraded.statuses503++;
      return;
    }
    if (res.status !== 200 || res.body.ok !== true) {
      this.failures.push(`POST /api/receipts/status ${k}: ${res.status} ${JSON.stringify(res.body)}`);
      return;
    }
    this.statuses.set(k, (this.statuses.get(k) ?? 0) + 1);
    if (res.body.degraded === true) this.degraded.statuses++;
    else this.direct++;
  }

  list(res: Answer): void {
    if (res.status !== 200 || !Array.isArray(res.body.receipts)) {
      this.failures.push(`GET /api/receipts: ${res.status} ${JSON.stringify(res.body)}`);
      return;
    }
    if (res.body.degraded === true) {
      assert.equal(res.body.reason, 'database_unavailable');
      assert.deepEqual(res.body.receipts, []);
      this.degraded.lists++;
    }
  }

  lostStatus(receiptId: string, status: string): void {
    const k = `${receiptId} ${status}`;
    this.unacked.statuses.set(k, (this.unacked.statuses.get(k) ?? 0) + 1);
  }

  /** A receipt id already acknowledged, picked deterministically. */
  pick(n: number): string | undefined {
    const ids = [...this.receipts.keys()];
    return ids.length === 0 ? undefined : ids[(n * 7919) % ids.length];
  }
}

export interface LandedReport {
  receipts: number;
  orders: number;
  /** Orders stored whose answer was lost in flight (allowed: they were sent, and stock agrees). */
  unacknowledgedOrdersStored: number;
  bulkSold: number;
  scarceSold: number;
}

/** Proves the database holds exactly what the ledger was told (see the file comment). */
export async function assertLanded(db: Db, wallet: string, ledger: WriteLedger, siteUrl: string): Promise<LandedReport> {
  const rows = await db.select().from(receipts).where(eq(receipts.wallet, wallet));
  const byId = new Map(rows.map((r) => [r.id, r]));
  assert.equal(byId.size, rows.length, 'receipt ids are unique');

  const apiRows = rows.filter((r) => r.source === 'api');
  for (const [id, url] of ledger.receipts) {
    const row = byId.get(id);
    assert.ok(row, `acknowledged receipt ${id} is missing`);
    assert.equal(url, `${siteUrl}/pay/${id}?t=${row.payToken}`, `receipt ${id} keeps the paymentUrl handed out`);
  }
  for (const r of apiRows) {
    assert.ok(ledger.receipts.has(r.id) || ledger.unacked.receipts.has(r.id), `receipt ${r.id} was stored but never sent`);
  }

  const orderRows = rows.filter((r) => r.source === 'order');
  for (const id of ledger.orders.keys()) assert.ok(byId.get(id)?.source === 'order', `acknowledged order ${id} is missing`);
  const extra = orderRows.filter((r) => !ledger.orders.has(r.id)).length;
  assert.ok(extra <= ledger.unacked.orders, `${extra} orders stored without an answer, but only ${ledger.unacked.orders} were in flight`);

  // Stock: decremented by exactly the quantities of the orders that exist.
  const qtyOf = (label: string) =>
    orderRows.reduce((sum, r) => sum + r.lineItems.filter((l) => l.label === label).reduce((s, l) => s + (l.qty ?? 1), 0), 0);
  const stock = async (sku: string) => {
    const [item] = await db
      .select({ stockQty: inventoryItems.stockQty })
      .from(inventoryItems)
      .where(and(eq(inventoryItems.wallet, wallet), eq(inventoryItems.sku, sku)));
    assert.ok(item, `inventory item ${sku}`);
    return Number(item.stockQty);
  };
  const bulkSold = qtyOf(BULK.name);
  const scarceSold = qtyOf(SCARCE.name);
  assert.equal(await stock(BULK.sku), BULK.stockQty - bulkSold, 'bulk stock went down by exactly the stored orders');
  assert.equal(await stock(SCARCE.sku), SCARCE.stockQty - scarceSold, 'scarce stock went down by exactly the stored orders');
  assert.ok(scarceSold <= SCARCE.stockQty, 'never oversold');
  const ackedBulk = [...ledger.orders.values()].reduce((s, o) => s + o.bulk, 0);
  assert.ok(bulkSold >= ackedBulk, 'every acknowledged order took its stock');

  // Every acknowledged tracking status is in the history once per acknowledgement (plus, at most,
  // the ones whose answer was lost in flight).
  if (ledger.statuses.size > 0 || ledger.unacked.statuses.size > 0) {
    const history = await db.select().from(receiptStatusHistory).where(eq(receiptStatusHistory.wallet, wallet));
    const seen = new Map<string, number>();
    for (const h of history) {
      if (h.source !== 'tracking') continue;
      const k = `${h.receiptId} ${h.status}`;
      // A repeated tracking status is one row that counts its repeats.
      seen.set(k, (seen.get(k) ?? 0) + h.count);
    }
    for (const [k, n] of ledger.statuses) {
      const got = seen.get(k) ?? 0;
      const lost = ledger.unacked.statuses.get(k) ?? 0;
      assert.ok(got >= n && got <= n + lost, `tracking status ${k}: ${got} stored for ${n} acknowledged (${lost} unanswered)`);
    }
    for (const [k, got] of seen) {
      if (!ledger.statuses.has(k)) assert.ok(got <= (ledger.unacked.statuses.get(k) ?? 0), `tracking status ${k} stored but never acknowledged`);
    }
  }
  return { receipts: apiRows.length, orders: orderRows.length, unacknowledgedOrdersStored: extra, bulkSold, scarceSold };
}
