/**
 * Bulk receipts for the bench: rows built in memory with the receipts module's own checks and
 * hashes, inserted a few thousand at a time with the history entries the service would have
 * written, so reads see realistic rows.
 */
import { randomBytes } from 'node:crypto';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../src/db/client.ts';
import { receipts, receiptStatusHistory } from '../src/db/schema.ts';
import { bulkInsert } from './bulk-insert.ts';
import { newPayToken, prepareReceipt, type LineItemInput } from '../src/domain/receipts.ts';
import type { Rng } from './rng.ts';

const BATCH = 5000;
const PRODUCTS: LineItemInput[] = [
  { label: 'Espresso', priceUsd: 3 },
  { label: 'Flat white', priceUsd: 4.5 },
  { label: 'Bagel', priceUsd: 2.25 },
  { label: 'Croissant', priceUsd: 3.75 },
  { label: 'Sandwich', priceUsd: 8.9 },
  { label: 'Beans 250 g', priceUsd: 14 },
];

export const receiptId = (i: number): string => `r-${String(i).padStart(7, '0')}`;

export interface ReceiptSeed {
  wallet: string;
  count: number;
  /** Newest receipt's creation time; older ones go back one minute each. */
  newestAt: number;
  rng: Rng;
  progress?: (done: number) => void;
}

export async function seedReceipts(db: Db, s: ReceiptSeed): Promise<void> {
  for (let start = 0; start < s.count; start += BATCH) {
    const rows: (typeof receipts.$inferInsert)[] = [];
    const history: (typeof receiptStatusHistory.$inferInsert)[] = [];
    for (let i = start; i < Math.min(start + BATCH, s.count); i++) {
      const id = receiptId(i);
      const lineItems = Array.from({ length: 1 + s.rng.int(3) }, () => ({ ...s.rng.pick(PRODUCTS), qty: 1 + s.rng.int(3) }));
      const totalUsd = lineItems.reduce((sum, li) => sum + Math.round(li.priceUsd * 100) * li.qty, 0) / 100;
      const prepared = prepareReceipt({ wallet: s.wallet, id, lineItems, totalUsd });
      const createdAt = s.newestAt - i * 60_000;
      const expiresAt = createdAt + 3_600_000;
      // Unpaid receipts past their expiry are stored as the chain worker leaves them (failed,
      // expired): left pending, the worker would spend the first minutes of every run expiring
      // tens of thousands of them, in the way of whichever routes are measured first.
      const status = s.rng.int(10) < 7 ? 'completed' : expiresAt <= s.newestAt ? 'failed' : 'pending';
      rows.push({
        wallet: s.wallet,
        id,
        payToken: newPayToken(),
        source: 'api',
        status,
        currency: 'USD',
        totalCents: prepared.totalCents,
        lineItems: prepared.stored,
        requestHash: prepared.requestHash,
        transactionHash: status === 'completed' ? '0x' + randomBytes(32).toString('hex') : null,
        transactionTimestamp: status === 'completed' ? createdAt + 90_000 : null,
        paidUnits: status === 'completed' ? (prepared.totalCents * 10_000n).toString() : '0',
        expiresAt,
        // On every row, null where it does not apply: bulkInsert takes its columns from a batch's
        // first row, and a field only some rows carry would be dropped from all of them.
        exception: status === 'failed' ? ('expired' as const) : null,
        expiredAt: status === 'failed' ? expiresAt : null,
        createdAt,
        updatedAt: status === 'failed' ? expiresAt : createdAt,
      });
      history.push({ wallet: s.wallet, receiptId: id, status: 'pending', source: 'api', note: null, at: createdAt });
      if (status === 'completed') {
        history.push({ wallet: s.wallet, receiptId: id, status: 'completed', source: 'chain', note: null, at: createdAt + 90_000 });
      } else if (status === 'failed') {
        history.push({ wallet: s.wallet, receiptId: id, status: 'failed', source: 'chain', note: 'expired with nothing received', at: expiresAt });
      }
    }
    await db.transaction(async (tx) => {
      await bulkInsert(tx, receipts, rows);
      await bulkInsert(tx, receiptStatusHistory, history);
      // Stored with their views, as the service stores a receipt: rendered by the database's own
      // functions (migrations/0017_receipt_json_one_definition.sql), as a creation renders them.
      await tx
        .update(receipts)
        .set({ summaryJson: sql`receipt_summary_json(${receipts})`, stateJson: null })
        .where(and(eq(receipts.wallet, s.wallet), inArray(receipts.id, rows.map((r) => r.id))));
    });
    s.progress?.(start + rows.length);
  }
}
