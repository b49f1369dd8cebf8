/**
 * How a receipt meets an event, for every caller that moves one (tracking and sensitive statuses,
 * the chain's settlement and expiry): lock the row, let the caller's rules decide, store the
 * status, append the history. The rules are the receipt state machine (src/domain/receipt-states.ts
 * `transition`), applied by the caller's `decide`; this module decides nothing.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { HistorySource, ReceiptStatus } from '../contract/receipts.ts';
import type { Transition } from '../domain/receipt-states.ts';
import type { Tx } from './client.ts';
import type { ReceiptRow } from './receipt-store.ts';
import { receipts, receiptStatusHistory } from './schema.ts';

/** The columns an event may store beside the status. */
export type ReceiptUpdate = Omit<Partial<typeof receipts.$inferInsert>, 'wallet' | 'id' | 'status' | 'updatedAt'>;

/** What the rules decided for the receipt as locked. */
export interface ReceiptChange {
  /** The state machine's transition; null when the event moves nothing (then only `set` is stored). */
  transition: Transition | null;
  /** Columns stored with the status: the chain's payment facts, an expiry. */
  set?: ReceiptUpdate;
  /** The note of each history entry the transition appends. */
  note: string | null;
}

/** How much of the row `decide` reads: its status alone, or all of it (the chain's facts). */
export type LockedColumns = 'status' | 'all';
export type LockedReceipt<C extends LockedColumns> = C extends 'all' ? ReceiptRow : Pick<ReceiptRow, 'status'>;

export interface ReceiptEventParams<C extends LockedColumns, D extends ReceiptChange> {
  wallet: string;
  receiptId: string;
  /** Who moved it, as its history entries name it. */
  source: HistorySource;
  at: number;
  columns: C;
  /**
   * The rules, run on the row under its lock (undefined when there is no such receipt): the change
   * to store, or null to store nothing. It may throw (NotFound), and may carry what else its
   * caller needs back.
   */
  decide(row: LockedReceipt<C> | undefined): Promise<D | null> | D | null;
}

/**
 * Locks the receipt, decides with the caller's rules, stores the status and the columns decided,
 * and appends a history entry for each step of the transition, all in the caller's transaction.
 *
 * A change runs the same statements whether the receipt exists and whether the status moves: the
 * update carries its condition in SQL, and each history entry is inserted from the receipt's row.
 * A tracking status for an unknown receipt (which decides as an unpaid one would) so costs what a
 * known one's does, and changes nothing. A tracking entry already in the history counts the repeat
 * instead of adding a row (its index covers tracking entries only), so strangers sending statuses
 * cannot grow a history without bound.
 */
export async function applyReceiptEvent<C extends LockedColumns, D extends ReceiptChange>(
  tx: Tx,
  p: ReceiptEventParams<C, D>,
): Promise<{ row: LockedReceipt<C> | undefined; change: D | null }> {
  const key = and(eq(receipts.wallet, p.wallet), eq(receipts.id, p.receiptId));
  const [row] = (p.columns === 'all'
    ? await tx.select().from(receipts).where(key).for('update')
    : await tx.select({ status: receipts.status }).from(receipts).where(key).for('update')) as LockedReceipt<C>[];
  const change = await p.decide(row);
  if (change === null || (change.transition === null && change.set === undefined)) return { row, change };
  const { transition } = change;
  const stores = change.set !== undefined || (transition !== null && transition.steps.some((step) => !step.recordedOnly));
  const status = transition?.to ?? row?.status;
  await tx
    .update(receipts)
    .set({ ...change.set, ...(status === undefined ? {} : { status }), updatedAt: p.at })
    .where(and(key, sql`${stores}::boolean`));
  for (const step of transition?.steps ?? []) await appendHistory(tx, p, step.status, change.note);
  return { row, change };
}

/**
 * One history entry of a receipt, inserted from its row (nothing when there is none); a tracking
 * status already recorded counts the repeat. Also for entries that are no transition (a warning,
 * a reversal, stock taken again).
 */
export async function appendHistory(
  tx: Tx,
  p: { wallet: string; receiptId: string; source: HistorySource; at: number },
  status: ReceiptStatus,
  note: string | null,
): Promise<void> {
  await tx.execute(sql`
    insert into ${receiptStatusHistory} as h (wallet, receipt_id, status, source, note, at)
    select r.wallet, r.id, ${status}::text, ${p.source}::text, ${note}::text, ${p.at}::bigint
    from ${receipts} r where r.wallet = ${p.wallet} and r.id = ${p.receiptId}
    on conflict (wallet, receipt_id, status) where source = 'tracking'
    do update set count = h.count + 1`);
}
