/**
 * Sensitive receipt statuses (checkout_success, refund_*) set from the admin app by the receipt's
 * own merchant. They never mark a receipt paid: only the chain does that.
 */
import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { receipts, receiptStatusHistory } from '../db/schema.ts';
import { Forbidden, InvalidInput, NotFound } from './errors.ts';

const SENSITIVE = /^(checkout_success|refund_[a-z0-9_]{1,40})$/;

export async function setSensitiveStatus(
  db: Db,
  p: { wallet: string; receiptId: string; status: string; by: string },
  now = Date.now(),
): Promise<void> {
  if (!SENSITIVE.test(p.status)) throw new InvalidInput('status must be checkout_success or refund_<reason>');
  if (p.by !== p.wallet) throw new Forbidden("Only the receipt's merchant can set this status");
  await db.transaction(async (tx) => {
    const updated = await tx
      .update(receipts)
      .set({ status: p.status, updatedAt: now })
      .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId)))
      .returning({ id: receipts.id });
    if (updated.length === 0) throw new NotFound(`Receipt ${p.receiptId} not found`);
    await tx.insert(receiptStatusHistory).values({
      wallet: p.wallet,
      receiptId: p.receiptId,
      status: p.status,
      source: 'admin',
      note: `set by ${p.by}`,
      at: now,
    });
  });
}
