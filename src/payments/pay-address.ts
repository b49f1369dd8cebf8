/**
 * Receipts' payment addresses. An address is derived from the merchant, the receipt id, the
 * merchant's split and the chain's forwarder factory alone (src/chain/payment-address.ts), so it
 * is the same whichever instance or attempt created the receipt, and a replayed journal entry gets
 * the one its payment page already showed.
 *
 * The chain worker stores each receipt's address once the merchant's split is known (receipts of
 * an earlier version, journaled during an outage, or created before the split), before it reads
 * any block: a transfer into an address can only be matched once the address is stored.
 */
import { sql } from 'drizzle-orm';
import type { Address } from 'viem';
import { paymentSalt, predictPaymentAddress } from '../chain/payment-address.ts';
import type { Tx } from '../db/client.ts';
import { receipts, splitConfigs } from '../db/schema.ts';

const BATCH = 2000;

/** The payment address of a merchant's receipt, for a split and factory. */
export function payAddressOf(p: { factory: Address; split: string; wallet: string; receiptId: string }): string {
  return predictPaymentAddress({ factory: p.factory, split: p.split as Address, salt: paymentSalt(p.wallet, p.receiptId) });
}

/** Stores the payment address of every receipt whose merchant has a split. Returns how many. */
export async function fillPayAddresses(db: Tx, factory: Address): Promise<number> {
  let filled = 0;
  for (;;) {
    // Driven from the merchants that have a split, each probing its own unaddressed receipts
    // (receipts_unaddressed_idx): receipts of merchants without a split cost nothing here.
    const rows = (await db.execute(sql`select r.wallet, r.id, s.address as split
      from ${splitConfigs} s
      cross join lateral (
        select ${receipts}.wallet, ${receipts}.id from ${receipts}
        where ${receipts}.wallet = s.wallet and ${receipts}.pay_address is null
        limit ${BATCH}
      ) r
      where s.address is not null
      limit ${BATCH}`).then(rowsOf)) as { wallet: string; id: string; split: string }[];
    if (rows.length === 0) return filled;
    const values = rows.map((r) => ({ w: r.wallet, i: r.id, a: payAddressOf({ factory, split: r.split, wallet: r.wallet, receiptId: r.id }) }));
    await db.execute(sql`update ${receipts} set pay_address = v.a
      from json_to_recordset(${JSON.stringify(values)}::json) as v(w text, i text, a text)
      where ${receipts}.wallet = v.w and ${receipts}.id = v.i`);
    filled += rows.length;
    if (rows.length < BATCH) return filled;
  }
}

/** The rows of db.execute: node-postgres answers {rows}, PGlite's driver too. */
function rowsOf(res: unknown): unknown[] {
  return Array.isArray(res) ? res : ((res as { rows?: unknown[] }).rows ?? []);
}

/** Forgets the addresses of a merchant's receipts that received nothing (its split was replaced). */
export async function forgetUnpaidPayAddresses(db: Tx, wallet: string): Promise<void> {
  await db.execute(sql`update ${receipts} set pay_address = null where wallet = ${wallet} and paid_units = '0'`);
}
