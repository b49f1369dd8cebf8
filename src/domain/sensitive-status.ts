/**
 * Sensitive receipt statuses (checkout_success, refund_*) set from the admin app by the receipt's
 * own merchant. They never mark a receipt paid: only the chain does that.
 */
import type { Db } from '../db/client.ts';
import { applyReceiptEvent } from '../db/receipt-events.ts';
import { Forbidden, InvalidInput, NotFound } from '../lib/errors.ts';
import { claimWrite, type Write } from '../db/write-claims.ts';
import { setsStatus, transition, type SensitiveStatus } from './receipt-states.ts';

const SENSITIVE = /^(checkout_success|refund_[a-z0-9_]{1,40})$/;

export async function setSensitiveStatus(
  db: Db,
  p: { wallet: string; receiptId: string; status: string; by: string },
  now = Date.now(),
  write?: Write,
): Promise<void> {
  if (!SENSITIVE.test(p.status)) throw new InvalidInput('status must be checkout_success or refund_<reason>');
  if (p.by !== p.wallet) throw new Forbidden("Only the receipt's merchant can set this status");
  const status = p.status as SensitiveStatus;
  await db.transaction(async (tx) => {
    // The same write again (a retry after an answer that never came) adds no second history entry.
    if (write !== undefined && !(await claimWrite(tx, write, { wallet: p.wallet, kind: 'status', ref: p.receiptId }, now)).fresh) return;
    await applyReceiptEvent(tx, {
      wallet: p.wallet,
      receiptId: p.receiptId,
      source: 'admin',
      at: now,
      columns: 'status',
      decide(row) {
        if (row === undefined) throw new NotFound(`Receipt ${p.receiptId} not found`);
        // Once money has arrived, only the chain moves the receipt: the status is kept in the history.
        const t = transition(row.status, { type: 'sensitive', status });
        return { transition: t, note: setsStatus(t) ? `set by ${p.by}` : `set by ${p.by}; recorded only, the receipt is ${row.status}` };
      },
    });
  });
}
