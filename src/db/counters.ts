/**
 * Caps the database enforces: a per-merchant counter row (usage_counters) taken by one conditional
 * increment. Concurrent requests queue on the row's lock, and each sees the count the previous one
 * committed, so exactly `cap` of them get a slot; a transaction that rolls back gives its slot
 * back with everything else. Counting rows first and inserting after (read, then write) let
 * concurrent requests all see room and all insert.
 */
import { and, eq, like, lt, sql } from 'drizzle-orm';
import type { Tx } from './client.ts';
import { usageCounters } from './schema.ts';

/**
 * Takes one of `cap` slots of the merchant's counter `name`, inside the caller's transaction
 * (so the slot is returned if the caller's write fails). False when all are taken.
 */
export async function takeSlot(tx: Tx, wallet: string, name: string, cap: number): Promise<boolean> {
  if (cap < 1) return false;
  // The column is an integer: a larger cap is no cap at all.
  const bound = Math.min(cap, 2_147_483_647);
  const c = usageCounters;
  const rows = await tx
    .insert(c)
    .values({ wallet, name, n: 1 })
    .onConflictDoUpdate({ target: [c.wallet, c.name], set: { n: sql`${c.n} + 1` }, setWhere: lt(c.n, bound) })
    .returning({ n: c.n });
  return rows.length > 0;
}

/** Gives a slot back (a subscription revoked, an endpoint deleted). */
export async function releaseSlot(tx: Tx, wallet: string, name: string): Promise<void> {
  const c = usageCounters;
  await tx
    .update(c)
    .set({ n: sql`greatest(${c.n} - 1, 0)` })
    .where(and(eq(c.wallet, wallet), eq(c.name, name)));
}

/** The slots taken of the merchant's counter `name` (0 when it was never used). */
export async function slotsTaken(tx: Tx, wallet: string, name: string): Promise<number> {
  const [row] = await tx
    .select({ n: usageCounters.n })
    .from(usageCounters)
    .where(and(eq(usageCounters.wallet, wallet), eq(usageCounters.name, name)));
  return row?.n ?? 0;
}

/** Deletes the counters of past days named `<prefix><YYYY-MM-DD>` (older than `today`); how many went. */
export async function purgeDailyCounters(tx: Tx, prefix: string, today: string): Promise<number> {
  const c = usageCounters;
  const gone = await tx
    .delete(c)
    .where(and(like(c.name, `${prefix}%`), lt(c.name, `${prefix}${today}`)))
    .returning({ wallet: c.wallet });
  return gone.length;
}
