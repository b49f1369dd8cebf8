/**
 * Receipt status changes made by the chain, each with its history entry, applied only from the
 * states they may follow. Returns false when the receipt had already moved elsewhere.
 */
import { and, eq, inArray } from 'drizzle-orm';
import type { Tx } from '../db/client.ts';
import { receipts, receiptStatusHistory } from '../db/schema.ts';
import { UNPAID } from '../domain/receipts.ts';

const FROM: Record<string, readonly string[]> = {
  tx_mined: [...UNPAID, 'tx_mismatch', 'failed'],
  recipient_validated: [...UNPAID, 'tx_mined', 'tx_mismatch', 'failed'],
  completed: ['recipient_validated', 'tx_mined', ...UNPAID],
  tx_mismatch: [...UNPAID, 'tx_mined'],
  failed: [...UNPAID, 'tx_mined'],
  // A payment reorganised away: back to waiting.
  pending: ['tx_mined', 'recipient_validated'],
  generated: ['tx_mined', 'recipient_validated'],
};

export async function moveReceipt(
  tx: Tx,
  p: { wallet: string; receiptId: string; to: string; note?: string; at: number; set?: Partial<typeof receipts.$inferInsert> },
): Promise<boolean> {
  const from = FROM[p.to];
  if (from === undefined) throw new RangeError(`no chain transition to ${p.to}`);
  const moved = await tx
    .update(receipts)
    .set({ ...p.set, status: p.to, updatedAt: p.at })
    .where(and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId), inArray(receipts.status, [...from])))
    .returning({ id: receipts.id });
  if (moved.length === 0) return false;
  await tx.insert(receiptStatusHistory).values({
    wallet: p.wallet,
    receiptId: p.receiptId,
    status: p.to,
    source: 'chain',
    note: p.note ?? null,
    at: p.at,
  });
  return true;
}
