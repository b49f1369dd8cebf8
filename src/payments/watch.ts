/**
 * The chain worker's watch list (receipt_watch): receipts whose money it still follows. A receipt
 * is due at the next pass, or from a block on when only depth is awaited (settle.ts says which).
 */
import { and, eq, isNotNull, isNull, ne, or, sql } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.ts';
import { rowsOf, text } from '../db/rows.ts';
import { receiptTransfers, receiptWatch } from '../db/schema.ts';
import type { ReceiptKey } from './scanner.ts';

/**
 * Puts receipts on the worker's watch list, to be settled at the next pass: new money, money
 * withdrawn by a reorganisation, a balance that grew. A receipt already there is due again at once.
 */
export async function watch(tx: Tx, keys: readonly ReceiptKey[], now: number): Promise<void> {
  if (keys.length === 0) return;
  await tx
    .insert(receiptWatch)
    .values(keys.map((k) => ({ wallet: k.wallet, receiptId: k.receiptId, since: now })))
    .onConflictDoUpdate({ target: [receiptWatch.wallet, receiptWatch.receiptId], set: { dueBlock: null } });
}

/** When a watched receipt is next settled: at `block` (null: the next pass). */
export async function watchFrom(tx: Tx, key: ReceiptKey, block: bigint | null): Promise<void> {
  const changes = block === null ? isNotNull(receiptWatch.dueBlock) : or(isNull(receiptWatch.dueBlock), ne(receiptWatch.dueBlock, block));
  await tx
    .update(receiptWatch)
    .set({ dueBlock: block })
    .where(and(eq(receiptWatch.wallet, key.wallet), eq(receiptWatch.receiptId, key.receiptId), changes));
}

/**
 * Receipt keys as one JSON parameter, joined with json_to_recordset as k(w, i). Not a list of
 * `(wallet, id) in ((…), …)` with two parameters per key: PGlite answers such a list of a few
 * hundred keys wrongly (no row) or stalls the process in its COMMIT, and dust to hundreds of
 * payment addresses brings hundreds of keys.
 */
export function keysJson(keys: readonly ReceiptKey[]): string {
  return JSON.stringify(keys.map((k) => ({ w: k.wallet, i: k.receiptId })));
}

/**
 * The receipts to settle, most money of the token first, each with that money (base units): a
 * payment that covers its receipt is settled before hundreds of 1-unit dust transfers, which a
 * stranger sends for the price of one transaction. Moving a receipt ahead costs as much of the
 * token as it holds. A row that is not a number counts as nothing: that receipt's own settle fails
 * and is logged, the others go on.
 */
export async function mostMoneyFirst(db: Db, keys: readonly ReceiptKey[], token: string): Promise<{ key: ReceiptKey; units: bigint }[]> {
  if (keys.length === 0) return [];
  const answer = await db.execute(sql`
    select k.w, k.i, coalesce(sum(case when t.amount_units ~ '^[0-9]{1,78}$' then t.amount_units::numeric end), 0)::text as units
      from json_to_recordset(${keysJson(keys)}::json) as k(w text, i text)
      left join ${receiptTransfers} t
        on t.wallet = k.w and t.receipt_id = k.i and t.kind = 'in' and t.token = ${token}
     group by k.w, k.i
     order by coalesce(sum(case when t.amount_units ~ '^[0-9]{1,78}$' then t.amount_units::numeric end), 0) desc`);
  return rowsOf(answer).map((r) => ({ key: { wallet: text(r.w), receiptId: text(r.i) }, units: BigInt(text(r.units)) }));
}
