/**
 * Checks on the receipt views the database keeps on each row (state_json and detail_json,
 * migrations/0010_receipt_views.sql): a stored view must always equal what the database renders
 * from the row, its history and its refunds as they are now.
 */
import { isNull, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../src/db/client.ts';
import type { InsertReceiptParams } from '../../src/db/receipt-store.ts';
import { receipts } from '../../src/db/schema.ts';

/**
 * A receipt to store with insertReceipt, as an order would make it (two lines, one of them tax),
 * unless `p` says otherwise; created now, with an hour to be paid.
 */
export function testReceipt(p: Pick<InsertReceiptParams, 'wallet' | 'id'> & Partial<InsertReceiptParams>): InsertReceiptParams {
  const createdAt = p.createdAt ?? Date.now();
  return {
    source: 'order',
    status: 'pending',
    lineItems: [
      { label: 'Latte', priceCents: '450', qty: 2, sku: 'latte', kind: 'item' },
      { label: 'Tax', priceCents: '74', kind: 'tax' },
    ],
    totalCents: 974n,
    requestHash: `h-${p.id}`,
    payToken: `tok-${p.id}`,
    expiresAt: createdAt + 3_600_000,
    ...p,
    createdAt,
  };
}

async function receiptsWhere(db: Db, where: SQL | undefined): Promise<string[]> {
  const rows = await db.select({ wallet: receipts.wallet, id: receipts.id }).from(receipts).where(where).orderBy(receipts.wallet, receipts.id);
  return rows.map((r) => `${r.wallet} ${r.id}`);
}

/** "wallet id" of every receipt whose stored views differ from their rendering now. Rows stored without views are not counted. */
export function staleReceiptViews(db: Db): Promise<string[]> {
  return receiptsWhere(
    db,
    sql`(${receipts.stateJson} is not null and ${receipts.stateJson} <> receipt_state_json(${receipts}))
      or (${receipts.detailJson} is not null and ${receipts.detailJson} <> receipt_detail_json(${receipts}))`,
  );
}

/** "wallet id" of every receipt stored without its views: none of the service's own writes leaves one. */
export function unrenderedReceipts(db: Db): Promise<string[]> {
  return receiptsWhere(db, or(isNull(receipts.stateJson), isNull(receipts.detailJson)));
}
